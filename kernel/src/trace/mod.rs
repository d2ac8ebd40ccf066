//! The kernel side of ftrace (Linux: kernel/trace/): the call-site records
//! and code patching (`ftrace`), the trace array and its ring buffer
//! (`trace`), the tracers, the tracefs files, and the glue between the
//! tracer logic in the `tracer` crate and this kernel.
pub mod bench;
pub mod buffer_files;
pub mod control;
pub mod export;
pub mod fgraph;
pub mod ftrace;
pub mod functions;
pub mod graph;
pub mod ksyms;
pub mod selftest;
#[allow(clippy::module_inception)] // trace::trace mirrors Linux's kernel/trace/trace.c
pub mod trace;

/// Creates the trace array and the tracefs files (Linux: tracer_init_tracefs).
/// Runs once at boot, after ftrace_init and SMP start-up, before the shell.
pub fn init() {
    control::init();
    trace::init();
    let root = crate::fs::tracefs::root();
    let result = ftrace::init_tracefs(&root)
        .and_then(|_| trace::init_options_files(&root))
        .and_then(|_| buffer_files::init(&root))
        .and_then(|_| functions::init(&root))
        .and_then(|_| graph::init(&root))
        .and_then(|_| export::init_tracefs(&root));
    if let Err(e) = result {
        println!("tracefs: cannot create the ftrace files: {e:?}");
    }
}
