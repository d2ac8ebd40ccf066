//! The function_graph tracer (Linux: kernel/trace/trace_functions_graph.c,
//! and the set_graph_* files of kernel/trace/ftrace.c).
//!
//! `echo function_graph > current_tracer` registers this tracer's hooks with
//! the graph core (`fgraph`): every call site enabled by `set_ftrace_filter`
//! / `set_ftrace_notrace` reaches [`trace_graph_entry`]. If the call is
//! wanted it records a TRACE_GRAPH_ENT event `{func, depth}` and returns
//! true, so the core hijacks the return address; when the function returns,
//! [`trace_graph_return`] records TRACE_GRAPH_RET `{func, depth, overrun,
//! calltime, rettime}`. The `tracer` crate turns those pairs back into
//! Linux's nested text (`func() {`, `func();` for a leaf, `}`): this tracer
//! hands its printer, `tracer::graph::GraphOutput`, to the generic one.
//!
//! What decides whether a call is wanted, in Linux's order:
//! 1. inside a `set_graph_notrace` function: nothing below it is traced;
//!    a `set_graph_notrace` function itself is hijacked but not recorded,
//!    so its return clears that state;
//! 2. `set_ftrace_pid`;
//! 3. `set_graph_function`: if set, only those functions and everything
//!    they call (a per-task flag remembers the depth of the selected call);
//! 4. `max_graph_depth`: depth 0 is the outermost traced call;
//! 5. `funcgraph-irqs` off: nothing in hardirq context, unless the
//!    interrupt itself entered a set_graph_function function;
//! 6. `tracing_thresh` (µs): record no entries, and only the returns of
//!    calls that lasted at least that long.
use alloc::boxed::Box;
use alloc::format;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use spin::{Lazy, Mutex};
use tracer::entry::{GraphEntEntry, GraphRetEntry, TRACE_GRAPH_ENT, TRACE_GRAPH_RET};
use tracer::filter::{GraphFile, GraphFilter};
use tracer::graph::GraphOutput;
use tracer::options::{graph_flags, Tracer as TracerKind};
use tracer::output::TracerOutput;

use super::control::{self, Tracer};
use super::fgraph::{self, task_bits, FgraphOps, FtraceGraphEnt, FtraceGraphRet, ShadowStack};
use super::ftrace::{FtraceHash, FtraceOps};
use super::global_ops::{self, RecordNames};
use super::trace::{global_trace, trace_buffer_write_at, trace_entry_word};
use crate::fs::tracefs::{self, parse_ulong, Dentry, EditFile, TRACE_MODE_WRITE};
use crate::fs::{Errno, OpenFile, OpenFlags};

/// `max_graph_depth` (Linux: fgraph_max_depth), 0 = no limit.
static MAX_DEPTH: AtomicU32 = AtomicU32::new(0);
/// `funcgraph-irqs` is off (Linux: ftrace_graph_skip_irqs).
static SKIP_IRQS: AtomicBool = AtomicBool::new(false);

/// True while any of the entry filters above, `set_graph_function` or
/// `set_graph_notrace` is in force: the entry hook then runs every test in
/// Linux's order; otherwise (the common case) one load says none applies.
/// Recomputed from the sources by [`update_graph_slow`] after each change.
static GRAPH_SLOW: AtomicBool = AtomicBool::new(false);
/// Serialises [`update_graph_slow`].
static GRAPH_SLOW_LOCK: Mutex<()> = Mutex::new(());

/// Recomputes [`GRAPH_SLOW`]; called after storing a new value in one of
/// its sources. Under a lock, so that the last recomputation, which sees
/// every store made before it, is the one that stays.
fn update_graph_slow() {
    let _g = GRAPH_SLOW_LOCK.lock();
    let slow = !GRAPH_HASH.is_empty()
        || !NOTRACE_HASH.is_empty()
        || MAX_DEPTH.load(Ordering::SeqCst) != 0
        || SKIP_IRQS.load(Ordering::SeqCst)
        || super::max_trace::tracing_thresh() != 0;
    GRAPH_SLOW.store(slow, Ordering::SeqCst);
}

/// The records of `set_graph_function` / `set_graph_notrace`, readable
/// without a lock by the entry callback (Linux: ftrace_graph_hash /
/// ftrace_graph_notrace_hash, under RCU).
static GRAPH_HASH: FtraceHash = FtraceHash::new();
static NOTRACE_HASH: FtraceHash = FtraceHash::new();
static GRAPH_FILTER: Lazy<Mutex<GraphFilter>> =
    Lazy::new(|| Mutex::new(GraphFilter::new(GraphFile::Function)));
static NOTRACE_FILTER: Lazy<Mutex<GraphFilter>> =
    Lazy::new(|| Mutex::new(GraphFilter::new(GraphFile::Notrace)));

#[inline(always)]
fn in_hardirq() -> bool {
    crate::arch::percpu::in_irq()
}

/// Linux: ftrace_graph_ignore_func (with ftrace_graph_addr inlined).
#[inline(always)]
fn ftrace_graph_ignore_func(trace: &FtraceGraphEnt, rs: &ShadowStack) -> bool {
    if rs.bits.load(Ordering::Relaxed) & task_bits::GRAPH == 0 && !GRAPH_HASH.is_empty() {
        if !GRAPH_HASH.contains_ip(trace.func) {
            return true;
        }
        // Everything this call makes is traced, until it returns.
        rs.graph_depth.store(trace.depth, Ordering::Relaxed);
        if in_hardirq() {
            rs.bits
                .fetch_or(task_bits::GRAPH | task_bits::IRQ, Ordering::Relaxed);
        } else {
            rs.bits.fetch_and(!task_bits::IRQ, Ordering::Relaxed);
            rs.bits.fetch_or(task_bits::GRAPH, Ordering::Relaxed);
        }
    }
    let max = MAX_DEPTH.load(Ordering::Relaxed);
    trace.depth < 0 || (max != 0 && trace.depth as u32 >= max)
}

/// What another graph user (a latency tracer with `display-graph`) does
/// first with a call, in Linux's irqsoff_graph_entry order:
/// `set_graph_function` and `max_graph_depth` may refuse it (Some(false));
/// a `set_graph_notrace` function is hijacked but not recorded
/// (Some(true)); None: the user decides.
pub(super) fn graph_user_entry_filter(trace: &FtraceGraphEnt, rs: &ShadowStack) -> Option<bool> {
    if !GRAPH_SLOW.load(Ordering::Relaxed) && rs.bits.load(Ordering::Relaxed) == 0 {
        return None;
    }
    if ftrace_graph_ignore_func(trace, rs) {
        return Some(false);
    }
    if !NOTRACE_HASH.is_empty() && NOTRACE_HASH.contains_ip(trace.func) {
        return Some(true);
    }
    None
}

/// Another graph user's return: ends a `set_graph_function` call's state
/// (Linux: ftrace_graph_addr_finish).
pub(super) fn graph_user_return_finish(trace: &FtraceGraphRet, rs: &ShadowStack) {
    let bits = rs.bits.load(Ordering::Relaxed);
    if bits & task_bits::GRAPH != 0 && trace.depth == rs.graph_depth.load(Ordering::Relaxed) {
        rs.bits.fetch_and(!task_bits::GRAPH, Ordering::Relaxed);
    }
}

/// The entry hook (Linux: trace_graph_entry). True: hijack the return.
///
/// Fast path: with no filter in force ([`GRAPH_SLOW`] clear, no pid
/// filter) and this task inside neither a set_graph_function nor a
/// set_graph_notrace call (no task bit set), every test of
/// [`trace_graph_entry_filtered`] passes (a depth is never negative), so
/// the event is recorded straight away.
#[inline(always)]
fn trace_graph_entry(trace: &FtraceGraphEnt, rs: &ShadowStack) -> bool {
    if !GRAPH_SLOW.load(Ordering::Relaxed)
        && rs.bits.load(Ordering::Relaxed) == 0
        && trace.depth >= 0
    {
        // The pid filter and the recording read the same trace array.
        let Some(tr) = global_trace() else {
            return false;
        };
        if tr.function.pid_allowed() {
            return trace_graph_record_entry_tr(tr, trace);
        }
    }
    trace_graph_entry_filtered(trace.func, trace.depth, trace.calltime, rs)
}

/// [`trace_graph_entry`] with its tests, in Linux's order. It takes the
/// entry's fields as values, in registers: given the `FtraceGraphEnt` by
/// reference, the fast path stored them to the stack on every call for
/// this path's sake.
#[cold]
#[inline(never)]
fn trace_graph_entry_filtered(func: u64, depth: i32, calltime: u64, rs: &ShadowStack) -> bool {
    let trace = &FtraceGraphEnt {
        func,
        depth,
        calltime,
    };
    if rs.bits.load(Ordering::Relaxed) & task_bits::NOTRACE != 0 {
        return false;
    }
    if !NOTRACE_HASH.is_empty() && NOTRACE_HASH.contains_ip(trace.func) {
        // Hijacked so that its return clears the bit; nothing recorded.
        rs.bits.fetch_or(task_bits::NOTRACE, Ordering::Relaxed);
        return true;
    }
    if !super::functions::pid_allowed() {
        return false;
    }
    if ftrace_graph_ignore_func(trace, rs) {
        return false;
    }
    // Linux: ftrace_graph_ignore_irqs.
    if SKIP_IRQS.load(Ordering::Relaxed)
        && rs.bits.load(Ordering::Relaxed) & task_bits::IRQ == 0
        && in_hardirq()
    {
        return false;
    }
    if !tracer::graph::thresh_records_entry(super::max_trace::tracing_thresh()) {
        return true;
    }
    trace_graph_record_entry(trace)
}

/// Records the entry event (the end of Linux's trace_graph_entry).
#[inline(always)]
fn trace_graph_record_entry(trace: &FtraceGraphEnt) -> bool {
    let Some(tr) = global_trace() else {
        return false;
    };
    trace_graph_record_entry_tr(tr, trace)
}

/// [`trace_graph_record_entry`] in `tr`, the top level's trace array.
#[inline(always)]
fn trace_graph_record_entry_tr(tr: &super::trace::TraceArray, trace: &FtraceGraphEnt) -> bool {
    // Linux returns 0 when the ring buffer refuses the event (recording off).
    if !control::tracing_is_on() {
        return false;
    }
    // Recorded at the call time already read; the encoder writes every
    // byte, so the payload needs no clearing first. The header word is
    // sampled after the reservation (see function_trace_record).
    trace_buffer_write_at(tr, trace.calltime, GraphEntEntry::SIZE, |buf| {
        GraphEntEntry::encode_raw(
            buf,
            trace_entry_word(TRACE_GRAPH_ENT),
            trace.func,
            trace.depth,
        )
    })
}

/// Records a TRACE_GRAPH_ENT event in `tr`'s buffer for another graph
/// user (Linux: __trace_graph_entry); true if it was recorded.
pub(super) fn trace_graph_entry_tr(tr: &super::trace::TraceArray, trace: &FtraceGraphEnt) -> bool {
    trace_buffer_write_at(tr, trace.calltime, GraphEntEntry::SIZE, |buf| {
        GraphEntEntry::encode_raw(
            buf,
            trace_entry_word(TRACE_GRAPH_ENT),
            trace.func,
            trace.depth,
        )
    })
}

/// Records a TRACE_GRAPH_RET event in `tr`'s buffer for another graph
/// user (Linux: __trace_graph_return).
pub(super) fn trace_graph_return_tr(tr: &super::trace::TraceArray, trace: &FtraceGraphRet) {
    trace_buffer_write_at(tr, trace.rettime, GraphRetEntry::SIZE, |buf| {
        GraphRetEntry::encode_raw(
            buf,
            trace_entry_word(TRACE_GRAPH_RET),
            trace.func,
            trace.depth,
            trace.overrun,
            trace.calltime,
            trace.rettime,
        )
    });
}

/// A function as a graph entry and return of zero length at depth 0
/// (Linux: trace_graph_function, used by the latency tracers with
/// `display-graph` for the records they write themselves).
pub(super) fn trace_graph_function(tr: &super::trace::TraceArray, ip: u64) {
    let time = tr.trace_clock();
    trace_graph_entry_tr(
        tr,
        &FtraceGraphEnt {
            func: ip,
            depth: 0,
            calltime: time,
        },
    );
    trace_graph_return_tr(
        tr,
        &FtraceGraphRet {
            func: ip,
            depth: 0,
            overrun: 0,
            calltime: time,
            rettime: time,
        },
    );
}

/// The return hook (Linux: trace_graph_return / trace_graph_thresh_return).
#[inline(always)]
fn trace_graph_return(trace: &FtraceGraphRet, rs: &ShadowStack) {
    let bits = rs.bits.load(Ordering::Relaxed);
    // Fast path as at entry: no task bit and no filter (so no
    // tracing_thresh either) leaves nothing to test.
    if bits != 0 || GRAPH_SLOW.load(Ordering::Relaxed) {
        // Linux: ftrace_graph_addr_finish.
        if bits & task_bits::GRAPH != 0 && trace.depth == rs.graph_depth.load(Ordering::Relaxed) {
            rs.bits.fetch_and(!task_bits::GRAPH, Ordering::Relaxed);
        }
        if bits & task_bits::NOTRACE != 0 {
            rs.bits.fetch_and(!task_bits::NOTRACE, Ordering::Relaxed);
            return;
        }
        let thresh = super::max_trace::tracing_thresh();
        if !tracer::graph::thresh_records_return(thresh, trace.calltime, trace.rettime) {
            return;
        }
    }
    if !control::tracing_is_on() {
        return;
    }
    let Some(tr) = global_trace() else { return };
    // Recorded at the return time already read; the encoder writes every
    // byte, so the payload needs no clearing first. `overrun` is read from
    // the task inside the fill, after the reservation (the task is still
    // in a register there), rather than taken from `trace`: the value read
    // before the reservation was spilled across it and reloaded (the
    // core's own read for `trace` stays: 1 a pair less). Only an interrupt in between whose traced calls overflow
    // this task's shadow stack could make the two differ, and the count
    // it then shows is the one a return just after it would record: the
    // same window as Linux's read in ftrace_pop_return_trace, a few
    // instructions later.
    trace_buffer_write_at(tr, trace.rettime, GraphRetEntry::SIZE, |buf| {
        GraphRetEntry::encode_raw(
            buf,
            trace_entry_word(TRACE_GRAPH_RET),
            trace.func,
            trace.depth,
            rs.overrun(),
            trace.calltime,
            trace.rettime,
        )
    });
}

/// This tracer's hooks in the graph core (Linux: funcgraph_ops). Its own
/// ftrace_ops callback and return handler name this static, so the core
/// calls the two hooks directly (inlined) rather than through it.
static FUNCGRAPH_OPS: FgraphOps = FgraphOps {
    entryfunc: trace_graph_entry,
    retfunc: trace_graph_return,
    ops: &FUNCGRAPH_FTRACE_OPS,
    return_handler: Some(funcgraph_return_to_handler),
};

/// The ftrace_ops through which this tracer gets every function entry:
/// as the core's `GRAPH_OPS` (the global filter, skipped while
/// `tracing_on` is 0), with this tracer's own callback.
static FUNCGRAPH_FTRACE_OPS: FtraceOps = FtraceOps::new("function_graph", funcgraph_entry)
    .gated(&control::TRACING_ON)
    .with_hash(&global_ops::GLOBAL_HASH);

/// [`FUNCGRAPH_FTRACE_OPS`]' callback: the graph core's entry with
/// [`trace_graph_entry`] called directly.
extern "C" fn funcgraph_entry(ip: u64, parent_slot: *mut u64, _op: &FtraceOps) {
    fgraph::ftrace_graph_enter_user(ip, parent_slot, &FUNCGRAPH_OPS);
}

/// `return_to_handler`'s handler while this tracer is registered: the
/// graph core's with [`trace_graph_return`] called directly.
extern "C" fn funcgraph_return_to_handler(retp: u64) -> u64 {
    fgraph::ftrace_return_to_handler_user(retp, &FUNCGRAPH_OPS)
}

fn graph_trace_init(_tr: &super::trace::TraceArray) -> Result<(), Errno> {
    // graph_ops wants what set_ftrace_filter/notrace select (Linux's
    // graph_ops uses global_ops' hashes).
    global_ops::ftrace_update_global_hash();
    options_changed();
    fgraph::register_ftrace_graph(&FUNCGRAPH_OPS)
}

fn graph_trace_reset(_tr: &super::trace::TraceArray) {
    fgraph::unregister_ftrace_graph(&FUNCGRAPH_OPS);
}

/// The printer of one open `trace`/`trace_pipe` file (Linux:
/// `graph_trace_open` and `print_graph_function`/`print_graph_headers`).
fn graph_output(nr_cpus: usize) -> Box<dyn TracerOutput> {
    Box::new(GraphOutput::new(nr_cpus))
}

/// The function_graph tracer (Linux: graph_trace).
pub static GRAPH_TRACE: Tracer = Tracer {
    name: "function_graph",
    init: Some(graph_trace_init),
    reset: Some(graph_trace_reset),
    start: None,
    stop: None,
    output: Some(graph_output),
    allow_instances: false,
    use_max_tr: false,
    print_max: false,
};

/// Keeps the callbacks' copies of the graph options current (called when
/// an option file changes).
pub fn options_changed() {
    if let Some(tr) = global_trace() {
        let flags = tr.options.lock().tracer_flags(TracerKind::FunctionGraph);
        SKIP_IRQS.store(flags & graph_flags::PRINT_IRQS == 0, Ordering::Relaxed);
        // Linux: func_graph_set_flag.
        super::fgraph::ftrace_graph_sleep_time_control(flags & graph_flags::SLEEP_TIME != 0);
        super::fgraph::ftrace_graph_graph_time_control(flags & graph_flags::GRAPH_TIME != 0);
        update_graph_slow();
    }
}

// ---------------------------------------------------------------------------
// Files

fn graph_filter(kind: GraphFile) -> (&'static Mutex<GraphFilter>, &'static FtraceHash) {
    match kind {
        GraphFile::Function => (&GRAPH_FILTER, &GRAPH_HASH),
        GraphFile::Notrace => (&NOTRACE_FILTER, &NOTRACE_HASH),
    }
}

/// An open set_graph_function / set_graph_notrace: edits a copy, installed
/// on close if every write succeeded (Linux: ftrace_graph_open/write/release).
fn graph_file_open(kind: GraphFile, flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno> {
    let current = graph_filter(kind).0.lock().clone();
    let text = current.read(&RecordNames);
    let copy = flags.writable().then(|| {
        let mut c = current.clone();
        if flags.truncate() {
            let _ = c.write(true, b"", &RecordNames);
        }
        c
    });
    let edit = |f: &mut GraphFilter, buf: &[u8]| f.write(false, buf, &RecordNames);
    let commit = move |f: GraphFilter| {
        let (filter, hash) = graph_filter(kind);
        hash.get_or_init().store(|i| f.contains(i));
        update_graph_slow();
        *filter.lock() = f;
        Ok(())
    };
    Ok(Box::new(EditFile::new(text, copy, edit, commit)))
}

/// Registers the tracer and creates its files.
pub fn init(root: &Dentry) -> Result<(), Errno> {
    control::register_tracer(&GRAPH_TRACE)?;
    super::trace::OPTIONS_CHANGED.register(|tr, _| {
        if tr.is_global() {
            options_changed()
        }
    })?;
    tracefs::create_file(root, "set_graph_function", TRACE_MODE_WRITE, |f| {
        graph_file_open(GraphFile::Function, f)
    })?;
    tracefs::create_file(root, "set_graph_notrace", TRACE_MODE_WRITE, |f| {
        graph_file_open(GraphFile::Notrace, f)
    })?;
    tracefs::create_show_store(
        root,
        "max_graph_depth",
        TRACE_MODE_WRITE,
        || format!("{}\n", MAX_DEPTH.load(Ordering::Relaxed) as i32),
        Some(|text: &str| {
            MAX_DEPTH.store(parse_ulong(text)? as u32, Ordering::Relaxed);
            update_graph_slow();
            Ok(())
        }),
    )?;
    // tracing_thresh is the trace array's (max_trace.rs); a new value
    // changes which path the entry hook takes.
    super::max_trace::THRESH_UPDATED.register(update_graph_slow)?;
    control::readme_add(
        "  set_graph_function\t- Trace the nested calls of a function (function_graph)\n  \
         set_graph_notrace\t- Do not trace the nested calls of a function (function_graph)\n  \
         max_graph_depth\t- Trace a limited depth of nested calls (0 is unlimited)\n  \
         tracing_thresh\t- Any delay that exceeds this time (usecs) is recorded (function_graph: returns only)\n",
    );
    Ok(())
}
