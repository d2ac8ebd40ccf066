//! The trace buffer printed to the console when the kernel dies (Linux:
//! kernel/trace/trace.c, `ftrace_dump` and `trace_die_panic_handler`).
//!
//! With `ftrace_dump_on_oops` set (the boot option or
//! `/proc/sys/kernel/ftrace_dump_on_oops`), the panic handler and the
//! fatal-exception path run [`ftrace_dump_on_panic`] through
//! `crate::panic::PANIC_NOTIFIER`. It turns the top-level buffer off, so
//! that what happens during the dump does not bury what led to the crash,
//! then consumes every event in time order and prints each line in the
//! latency format (`comm-pid CPU flags time: ...`) between two lines of
//! dashes, as Linux does. The last lines before the closing dashes are
//! the last things the kernel traced.

use core::sync::atomic::Ordering;

use tracer::ftrace_dump::{
    parse_boot_option, DumpMode, DUMP_BAD_MODE, DUMP_DASHES, DUMP_EMPTY, DUMP_HEADING,
};

use super::trace::{dump_lines, global_trace, TraceArray};
use super::FTRACE_DUMP_ON_OOPS;
use crate::fs::Errno;

/// Reads the boot option and registers the dump on the panic notifier.
pub fn init() -> Result<(), Errno> {
    if let Some(v) = parse_boot_option(crate::cmdline()) {
        FTRACE_DUMP_ON_OOPS.store(v, Ordering::Relaxed);
    }
    crate::panic::PANIC_NOTIFIER.register(ftrace_dump_on_panic)
}

/// The panic notifier: dumps the top-level buffer if the setting asks.
fn ftrace_dump_on_panic() {
    let (mode, bad) = DumpMode::of_setting(FTRACE_DUMP_ON_OOPS.load(Ordering::Relaxed));
    if mode == DumpMode::None {
        return;
    }
    if bad {
        crate::println!("{DUMP_BAD_MODE}");
    }
    if let Some(tr) = global_trace() {
        ftrace_dump(tr, mode);
    }
}

/// Prints and consumes `tr`'s events, every CPU's or (`Orig`) only this
/// CPU's (Linux: `ftrace_dump_one`).
pub fn ftrace_dump(tr: &TraceArray, mode: DumpMode) {
    super::control::tracer_tracing_off(tr);
    crate::println!("{DUMP_HEADING}");
    // The printer allocates. The dying CPU may have died holding the heap
    // lock (another CPU only holds it for a moment): then nothing can be
    // printed.
    if !heap_free_soon() {
        crate::println!("   (ftrace buffer not dumped: the heap is locked)");
        return;
    }
    let cpu = (mode == DumpMode::Orig).then(crate::arch::cpu_id);
    let mut first = true;
    let n = dump_lines(tr, cpu, &mut |line| {
        if first {
            crate::println!("{DUMP_DASHES}");
            first = false;
        }
        crate::print!("{line}");
    });
    if n == 0 {
        crate::println!("{DUMP_EMPTY}");
    } else {
        crate::println!("{DUMP_DASHES}");
    }
}

/// Whether the heap lock is free, or becomes free within a bounded wait.
fn heap_free_soon() -> bool {
    for _ in 0..10_000_000u32 {
        if !crate::mm::heap::heap_locked() {
            return true;
        }
        core::hint::spin_loop();
    }
    false
}
