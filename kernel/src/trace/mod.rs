//! The kernel side of ftrace (Linux: kernel/trace/): tracefs files, the glue
//! between the tracer logic in the `tracer` crate and this kernel.
pub mod ksyms;
pub mod control;
