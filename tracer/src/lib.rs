//! The tracer's logic, independent of the hardware: the ring buffer, the
//! tracers, the filters and the text output. It is `no_std` so the kernel can
//! use it, and it is tested on the host through a small platform trait.
#![cfg_attr(not(test), no_std)]

extern crate alloc;
pub mod bench;
#[forbid(unsafe_code)]
pub mod cmdlines;
pub mod crc32;
#[forbid(unsafe_code)]
pub mod entry;
pub mod errno;
#[forbid(unsafe_code)]
pub mod error_log;
#[forbid(unsafe_code)]
pub mod event_field;
#[forbid(unsafe_code)]
pub mod event_filter;
pub mod events;
pub mod fgraph;
#[forbid(unsafe_code)]
pub mod filter;
#[forbid(unsafe_code)]
pub mod ftrace;
#[forbid(unsafe_code)]
pub mod ftrace_dump;
#[forbid(unsafe_code)]
pub mod function_profile;
#[forbid(unsafe_code)]
pub mod graph;
#[forbid(unsafe_code)]
pub mod hist;
#[forbid(unsafe_code)]
pub mod irqsoff;
#[forbid(unsafe_code)]
pub mod jump_label;
pub mod kallsyms;
#[forbid(unsafe_code)]
pub mod kprobe_insn;
#[forbid(unsafe_code)]
pub mod max_latency;
#[forbid(unsafe_code)]
pub mod options;
#[forbid(unsafe_code)]
pub mod output;
#[forbid(unsafe_code)]
pub mod printk;
pub mod repeats;
pub mod rethook;
pub mod ring_buffer;
#[forbid(unsafe_code)]
pub mod snapshot;
#[forbid(unsafe_code)]
pub mod stack_trace;
#[forbid(unsafe_code)]
pub mod sysctl;
pub mod trace_events;
pub mod trace_probe;
pub mod tracepoint;
#[forbid(unsafe_code)]
pub mod tracing_map;
#[forbid(unsafe_code)]
pub mod trigger;
#[forbid(unsafe_code)]
pub mod wakeup;
