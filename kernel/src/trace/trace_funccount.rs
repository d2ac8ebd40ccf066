//! The `funccount` tracer: how many times each traced function was called
//! since the tracer was selected. Linux has no tracer of this name: it is
//! this kernel's smallest complete tracer, the one the course's tracer lab
//! builds, written with Linux's interfaces (`struct tracer` and
//! `register_tracer` from kernel/trace/trace.c, an `ftrace_ops` on the
//! global filter as kernel/trace/trace_functions.c registers one, the
//! counting of kernel/trace/ftrace.c's function profiler).
//!
//! Selecting it (`echo funccount > current_tracer`) zeroes one counter per
//! call site and registers [`FUNCCOUNT_OPS`] on the global filter, so
//! `set_ftrace_filter` and `set_ftrace_notrace` choose the functions, as
//! for the function tracer; `tracing_on` 0 pauses the counting. The
//! callback finds the record of the call site and adds one to its counter.
//! Selecting another tracer unregisters the ops; the counts stay readable
//! until the tracer is selected again.
//!
//! `funccount` (the file) lists the functions called at least once, one
//! `COUNT NAME` line each (the count right-aligned in 10 columns), most
//! called first, then by name.
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use spin::Once;

use super::control::{self, Tracer, TRACING_ON};
use super::ftrace::{self, recursion, FtraceOps};
use super::global_ops;
use super::trace::TraceArray;
use crate::fs::tracefs::{self, Dentry, TRACE_MODE_READ};
use crate::fs::Errno;

/// The tracer (Linux: a `struct tracer`): only the top level has one.
static FUNCCOUNT_TRACER: Tracer = Tracer {
    name: "funccount",
    init: Some(funccount_init),
    reset: Some(funccount_reset),
    ..Tracer::EMPTY
};

/// The tracer's ops: every record the global filter selects, skipped while
/// `tracing_on` is 0.
static FUNCCOUNT_OPS: FtraceOps = FtraceOps::new("funccount", funccount_call)
    .gated(&TRACING_ON)
    .with_hash(&global_ops::GLOBAL_HASH);

/// One counter per record (per call site, in `ftrace::records()` order),
/// made when the tracer is first selected.
static COUNTS: Once<Vec<AtomicU64>> = Once::new();

/// The counters, made at the first use (ENOMEM if they cannot be).
fn counts() -> Result<&'static [AtomicU64], Errno> {
    if let Some(c) = COUNTS.get() {
        return Ok(c);
    }
    let n = ftrace::records().len();
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    v.resize_with(n, || AtomicU64::new(0));
    Ok(COUNTS.call_once(|| v))
}

/// The ftrace_ops callback: runs at every call of a selected function,
/// from `ftrace_caller`, with `ip` the address of the function's call site.
extern "C" fn funccount_call(ip: u64, _parent_slot: *mut u64, _op: &FtraceOps) {
    // LAB 2 BEGIN: funccount_call (count one call of the function at `ip`)
    // LAB 2 STUB: let _ = ip;
    // LAB 2 STUB: // The panic's own calls to traced functions return here.
    // LAB 2 STUB: let Some(_bit) = recursion::trylock(recursion::FTRACE_START) else {
    // LAB 2 STUB:     return;
    // LAB 2 STUB: };
    // LAB 2 STUB: unimplemented!("lab 2: funccount_call: count one call of the function at ip");
    let Some(bit) = recursion::trylock(recursion::FTRACE_START) else {
        return;
    };
    if let (Some(c), Some(i)) = (COUNTS.get(), ftrace::record_index(ip)) {
        if let Some(n) = c.get(i) {
            n.fetch_add(1, Ordering::Relaxed);
        }
    }
    recursion::unlock(bit);
    // LAB 2 END
}

/// `echo funccount > current_tracer`: zero the counters and start counting.
fn funccount_init(_tr: &TraceArray) -> Result<(), Errno> {
    // LAB 2 BEGIN: funccount_init (zero the counters, register the ops)
    // LAB 2 STUB: let _ = (counts, &FUNCCOUNT_OPS, Ordering::Relaxed); // what you will use
    // LAB 2 STUB: unimplemented!("lab 2: funccount_init: zero the counters and register FUNCCOUNT_OPS")
    let c = counts()?;
    for n in c {
        n.store(0, Ordering::Relaxed);
    }
    global_ops::ftrace_update_global_hash();
    ftrace::register_ftrace_function(&FUNCCOUNT_OPS)
    // LAB 2 END
}

/// Another tracer is selected: stop counting (the counts stay).
fn funccount_reset(_tr: &TraceArray) {
    // LAB 2 BEGIN: funccount_reset (unregister the ops)
    // LAB 2 STUB: unimplemented!("lab 2: funccount_reset: unregister FUNCCOUNT_OPS")
    // As Linux's tracers, ignore the result: the ops is off the list either way.
    let _ = ftrace::unregister_ftrace_function(&FUNCCOUNT_OPS);
    // LAB 2 END
}

/// The `funccount` file: `COUNT NAME` per function called, most called
/// first, ties by name.
fn funccount_show() -> String {
    // LAB 2 BEGIN: funccount_show (the file's text)
    // LAB 2 STUB: unimplemented!("lab 2: funccount_show: one line `COUNT NAME` per function called")
    use core::fmt::Write;
    let Some(c) = COUNTS.get() else {
        return String::new();
    };
    let mut rows: Vec<(u64, &str)> = c
        .iter()
        .enumerate()
        .map(|(i, n)| (n.load(Ordering::Relaxed), ftrace::record_name(i)))
        .filter(|&(n, _)| n != 0)
        .collect();
    rows.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let mut out = String::new();
    for (n, name) in rows {
        let _ = writeln!(out, "{n:>10} {name}");
    }
    out
    // LAB 2 END
}

/// Registers the tracer and makes its file (Linux: an `__init` function
/// calling `register_tracer`, and `trace_create_file`).
pub fn init(root: &Dentry) -> Result<(), Errno> {
    control::register_tracer(&FUNCCOUNT_TRACER)?;
    tracefs::create_show_store(
        root,
        "funccount",
        TRACE_MODE_READ,
        funccount_show,
        None::<fn(&str) -> Result<(), Errno>>,
    )?;
    Ok(())
}
