//! The kernel side of ftrace (Linux: kernel/trace/): the call-site records
//! and code patching (`ftrace`), the trace array and its ring buffer
//! (`trace`), the tracers, the tracefs files, and the glue between the
//! tracer logic in the `tracer` crate and this kernel.
pub mod bench;
pub mod buffer_files;
pub mod control;
pub mod error_log;
pub mod event_files;
pub mod event_filter;
pub mod event_pid;
pub mod events;
pub mod export;
pub mod fgraph;
pub mod ftrace;
pub mod ftrace_dump;
pub mod ftrace_profile;
pub mod functions;
pub mod global_ops;
pub mod graph;
pub mod hist;
pub mod instances;
pub mod max_trace;
pub mod printk;
pub mod selftest;
pub mod snapshot;
#[allow(clippy::module_inception)] // trace::trace mirrors Linux's kernel/trace/trace.c
pub mod trace;
pub mod trace_funccount;
pub mod trace_irqsoff;
pub mod trace_kprobe;
pub mod trace_sched_wakeup;
pub mod trace_stack;
pub mod tracepoint_stress;
pub mod trigger;

use core::sync::atomic::{AtomicI32, Ordering};

use tracer::trace_events::TaskInfo;

/// Creates the top-level trace array and the tracefs files (Linux:
/// tracer_init_tracefs). Runs once at boot, after ftrace_init and SMP
/// start-up, before the shell.
pub fn init() {
    control::init();
    trace::init();
    trigger::register_trigger_cmds();
    hist::register_trigger_hist_cmd();
    register_sched_hooks();
    tracer::trace_events::preemptirq::set_stext(crate::arch::stext());
    let root = crate::fs::tracefs::root();
    let Some(tr) = trace::global_trace_arc() else {
        return;
    };
    let result = instances::init_tracer_tracefs(&tr, &root)
        .and_then(|_| ftrace::init_tracefs(&root))
        .and_then(|_| buffer_files::init(&root))
        .and_then(|_| snapshot::init())
        .and_then(|_| max_trace::init(&root))
        .and_then(|_| functions::init())
        .and_then(|_| trace_irqsoff::init())
        .and_then(|_| trace_sched_wakeup::init())
        .and_then(|_| graph::init(&root))
        .and_then(|_| export::init_tracefs(&root))
        .and_then(|_| printk::init())
        .and_then(|_| instances::init(&root))
        .and_then(|_| trace_stack::init(&root))
        .and_then(|_| ftrace_profile::init(&root))
        .and_then(|_| trace_funccount::init(&root))
        .and_then(|_| ftrace_dump::init())
        .and_then(|_| trace_kprobe::init(&root))
        .and_then(|_| register_sysctls());
    if let Err(e) = result {
        println!("tracefs: cannot create the ftrace files: {e:?}");
    }
}

/// `/proc/sys/kernel/ftrace_dump_on_oops` as written (Linux:
/// ftrace_dump_on_oops): 0 no dump when the kernel dies, 1 every CPU's
/// events, 2 the dying CPU's (see `ftrace_dump`).
pub static FTRACE_DUMP_ON_OOPS: AtomicI32 = AtomicI32::new(0);

/// The tracing entries of `/proc/sys/kernel` (Linux: kernel/sysctl.c's
/// kern_table): `ftrace_enabled`, `stack_tracer_enabled` and
/// `ftrace_dump_on_oops`, each an `int` as `proc_dointvec` reads and
/// writes it.
fn register_sysctls() -> Result<(), crate::fs::Errno> {
    use crate::fs::procfs::register_sysctl_int;
    register_sysctl_int(
        "kernel",
        "ftrace_enabled",
        ftrace::ftrace_enabled,
        ftrace::ftrace_enable_sysctl,
    )?;
    register_sysctl_int(
        "kernel",
        "stack_tracer_enabled",
        trace_stack::stack_tracer_enabled,
        trace_stack::stack_trace_sysctl,
    )?;
    register_sysctl_int(
        "kernel",
        "ftrace_dump_on_oops",
        || FTRACE_DUMP_ON_OOPS.load(Ordering::Relaxed),
        |v| {
            FTRACE_DUMP_ON_OOPS.store(v, Ordering::Relaxed);
            Ok(())
        },
    )
}

/// Saves a new task's name for the output (Linux records comms from its
/// sched probes the same way): a probe on sched_process_fork.
fn save_cmdline_on_fork(_data: *mut (), _parent: &TaskInfo, child: &TaskInfo) {
    trace::trace_save_cmdline(
        child.pid as u32,
        tracer::trace_events::comm_str(&child.comm),
    );
}

/// Plugs tracing into the scheduler: the scheduler fires these
/// tracepoints and hooks and never imports tracing.
fn register_sched_hooks() {
    let fork = crate::events::sched::register_trace_sched_process_fork(
        save_cmdline_on_fork,
        core::ptr::null_mut(),
    );
    let tick = crate::sched::SCHED_TICK.register(trace::trace_wakeup_tick);
    // A latency section's caller hijacked by a function-graph user.
    crate::irqflags::set_graph_ret_addr(fgraph::ftrace_ret_addr_of);
    if let Err(e) = fork.and(tick) {
        println!("trace: cannot register the scheduler hooks: {e:?}");
    }
    // Tasks spawned before the hook was there.
    for t in crate::sched::tasks().iter().filter(|t| t.pid != 0) {
        trace::trace_save_cmdline(t.pid, &t.comm);
    }
}
