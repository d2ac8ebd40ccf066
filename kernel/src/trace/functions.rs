//! The function tracer and the files that choose what it traces
//! (Linux: kernel/trace/trace_functions.c, and ftrace.c's set_ftrace_* files).
//!
//! Every trace array (the top level and each instance) has its own function
//! tracer state, a [`TrFunction`] in `tr.function` (Linux keeps it in the
//! trace_array: `tr->ops`, its hashes, `tr->function_pids`...):
//! `echo function > current_tracer` registers the tr's ftrace_ops, whose
//! callback, [`function_trace_call`], finds the tr through the ops' private
//! pointer and records a TRACE_FN event `{ip, parent_ip}` in that tr's ring
//! buffer on this CPU. `set_ftrace_filter` and `set_ftrace_notrace` decide
//! which sites the tr's ops wants (globs, `!`, `>`/`>>`, probes such as
//! `func:traceoff`, which act on that tr's `tracing_on`), and
//! `set_ftrace_pid` which tasks it records. A write is parsed into a copy of
//! the filter; the copy replaces the filter when the file is closed, and
//! only if every write succeeded: a bad write changes nothing.
//!
//! The top level uses [`FUNCTION_OPS`], whose set is the global filter's
//! (`global_ops`, shared with function_graph) and whose gate is the
//! top-level `tracing_on`, tested by `ftrace_caller` before it saves any
//! register. An instance takes an ops from a static pool of
//! [`INSTANCE_OPS_MAX`] slots when its function tracer starts (and one from
//! a second pool when it gets probes), with a set of its own and no gate:
//! the trampoline runs with preemption on, so its gate must not point into
//! an instance that may be freed; the instance's `tracing_on` stops its
//! ring buffer instead (as in Linux, whose function_trace_call tests no
//! flag). More instances than slots running the function tracer at once
//! get ENOSPC. The pools are never freed, so a task preempted inside the
//! trampoline with a stale ops calls a live ops (see `ftrace`'s module
//! docs for the grace period that lets an instance go).
use alloc::boxed::Box;
use core::ops::Deref;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};

use spin::Mutex;
use tracer::entry::{
    FtraceEntry, FuncRepeatsEntry, StackEntry, TRACE_FN, TRACE_FUNC_REPEATS, TRACE_STACK,
};
use tracer::filter::{FtraceFilter, PidFilter, RegexFile};
use tracer::ftrace::OpsPool;
use tracer::options::func_flags;
use tracer::options::Tracer as TracerKind;
use tracer::repeats::FuncRepeats;
use tracer::trace_events::TaskInfo;

use super::control::{self, Tracer};
use super::ftrace::{self, recursion, FtraceOps};
use super::global_ops::{self, RecordNames, FILTER, GLOBAL_HASH};
use super::trace::{
    global_trace, trace_buffer_write, trace_buffer_write_at, trace_buffer_write_full, trace_entry,
    trace_entry_word, tracing_gen_ctx_dec, TraceArray,
};
use crate::arch::percpu;
use crate::fs::tracefs::{self, Dentry, EditFile, TRACE_MODE_WRITE};
use crate::fs::{Errno, OpenFile, OpenFlags};

/// The top level's function tracer ops (Linux: the top trace_array's
/// tr->ops, which is global_ops): it wants the records of the global filter
/// and is skipped by the trampoline while the top-level `tracing_on` is 0.
pub static FUNCTION_OPS: FtraceOps = FtraceOps::new("function", function_trace_call)
    .gated(&control::TRACING_ON)
    .with_hash(&GLOBAL_HASH);
/// The probes of the top level's set_ftrace_filter (`func:traceoff` ...),
/// active whatever the current tracer (Linux: the probe ops of
/// register_ftrace_function_probe).
static PROBE_OPS: FtraceOps = FtraceOps::new("probes", function_probe_call);

/// How many instances can run the function tracer (and have probes) at once.
pub const INSTANCE_OPS_MAX: usize = 16;
/// The instances' function tracer ops, each with its own set (Linux:
/// allocate_ftrace_ops), and which of them are taken.
static INSTANCE_OPS: [FtraceOps; INSTANCE_OPS_MAX] =
    [const { FtraceOps::new("function", function_trace_call) }; INSTANCE_OPS_MAX];
static INSTANCE_OPS_POOL: OpsPool = OpsPool::new(INSTANCE_OPS_MAX);
/// The instances' probe ops.
static INSTANCE_PROBE_OPS: [FtraceOps; INSTANCE_OPS_MAX] =
    [const { FtraceOps::new("probes", function_probe_call) }; INSTANCE_OPS_MAX];
static INSTANCE_PROBE_POOL: OpsPool = OpsPool::new(INSTANCE_OPS_MAX);

/// The pids of set_ftrace_pid a tr holds, read without a lock by the callback.
const MAX_PIDS: usize = 32;
/// The bits of [`TrFunction`]'s fast-path byte: what makes the callback
/// leave its fast path, mirrored in one byte so that the fast path tests
/// them all with one load: `set_ftrace_pid` holds pids, the
/// func_stack_trace option is set, the func-no-repeats option is set, a
/// return hijacker is registered ([`FUNC_HIJACKERS`]).
const FUNC_PID_FILTER: u8 = 1;
const FUNC_STACK_TRACE: u8 = 2;
const FUNC_NO_REPEATS: u8 = 4;
/// A function_graph user or a kretprobe is registered, so a caller's
/// return address may read `return_to_handler` or `rethook_trampoline`,
/// which the slow path translates back. Set in every trace array while
/// one is (the graph core counts them: [`super::fgraph::RETURN_HIJACKERS`]), so
/// that the fast path, with no hijacker registered, needs no compare with
/// the trampolines' addresses.
const FUNC_HIJACKERS: u8 = 8;

/// Sets or clears `tr`'s [`FUNC_HIJACKERS`] bit (the instances' probe on
/// [`super::fgraph::RETURN_HIJACKERS`] walks every trace array with it).
pub(crate) fn set_tr_hijackers(tr: &TraceArray, on: bool) {
    tr.function.set_slow(FUNC_HIJACKERS, on);
}

/// Gives a new instance's array the [`FUNC_HIJACKERS`] bit of the moment;
/// called with the instance list's lock held, before the array goes on
/// the list (a walk waits for that lock).
pub(crate) fn init_tr_hijackers(tr: &TraceArray) {
    tr.function
        .set_slow(FUNC_HIJACKERS, super::fgraph::return_hijackers());
}

/// One trace array's function tracer state (Linux: the function-tracing
/// fields of struct trace_array: `ops`, `function_pids`, the func flags,
/// `last_func_repeats`, and the filter hashes of its ops).
pub struct TrFunction {
    /// The fast-path byte ([`FUNC_PID_FILTER`] | [`FUNC_STACK_TRACE`] |
    /// [`FUNC_NO_REPEATS`]).
    slow: AtomicU8,
    /// set_ftrace_pid as the callback reads it (u32::MAX: empty slot).
    pids: [AtomicU32; MAX_PIDS],
    /// set_ftrace_pid as the file edits it.
    pid_filter: Mutex<PidFilter>,
    /// An instance's set_ftrace_filter and set_ftrace_notrace (the top
    /// level's are global_ops' [`FILTER`]).
    filter: Mutex<FtraceFilter>,
    /// Each CPU's last recorded call, for func-no-repeats.
    last_func_repeats: [FuncRepeats; percpu::MAX_CPUS],
    /// The function tracer's ops while it is this tr's tracer.
    ops: Mutex<Option<&'static FtraceOps>>,
    /// The probe ops while the filter has probes.
    probe_ops: Mutex<Option<&'static FtraceOps>>,
    /// The function-fork probes are registered for this tr.
    follow_fork: AtomicBool,
}

impl Default for TrFunction {
    fn default() -> Self {
        Self::new()
    }
}

impl TrFunction {
    pub fn new() -> TrFunction {
        TrFunction {
            slow: AtomicU8::new(0),
            pids: [const { AtomicU32::new(u32::MAX) }; MAX_PIDS],
            pid_filter: Mutex::new(PidFilter::new()),
            filter: Mutex::new(FtraceFilter::new()),
            last_func_repeats: [const { FuncRepeats::new() }; percpu::MAX_CPUS],
            ops: Mutex::new(None),
            probe_ops: Mutex::new(None),
            follow_fork: AtomicBool::new(false),
        }
    }

    fn set_slow(&self, bit: u8, on: bool) {
        if on {
            self.slow.fetch_or(bit, Ordering::SeqCst);
        } else {
            self.slow.fetch_and(!bit, Ordering::SeqCst);
        }
    }

    /// True if the running task may be recorded (set_ftrace_pid).
    #[inline(always)]
    pub fn pid_allowed(&self) -> bool {
        if self.slow.load(Ordering::Relaxed) & FUNC_PID_FILTER == 0 {
            return true;
        }
        let pid = crate::sched::current_pid();
        self.pids.iter().any(|p| p.load(Ordering::Relaxed) == pid)
    }

    /// The number of ops this tr has registered (function tracer, probes).
    pub fn ops_registered(&self) -> usize {
        self.ops.lock().is_some() as usize + self.probe_ops.lock().is_some() as usize
    }
}

/// The filter `tr`'s set_ftrace_filter and set_ftrace_notrace edit: the
/// global one for the top level, its own for an instance.
fn filter_of(tr: &TraceArray) -> &Mutex<FtraceFilter> {
    if tr.is_global() {
        &FILTER
    } else {
        &tr.function.filter
    }
}

/// The top level's set_ftrace_pid test, for function_graph (which runs at
/// the top level only).
#[inline(always)]
pub(crate) fn pid_allowed() -> bool {
    global_trace().is_none_or(|tr| tr.function.pid_allowed())
}

/// The callback of every traced function (Linux: function_trace_call).
///
/// This is the hot path the `bench` command measures (BENCHMARKS.md): the
/// cheap checks come first, the event is written straight into the
/// reserved bytes (no intermediate copy, no clearing), and the graph
/// tracer's return-address translation is only called when needed. The
/// gate (the top level's `tracing_on`) was tested by `ftrace_caller`, or
/// by the list function when several ops are registered.
///
/// The fast path is the common case: no pid filter, no func_stack_trace,
/// and no return hijacker (function_graph user, kretprobe) registered, so
/// the caller's return address is the real one. It reserves, fills with
/// three stores (the header word from [`trace_entry_word`]) and commits.
/// Anything else goes to [`function_trace_record_slow`], out of line, so
/// that its registers and code do not weigh on the fast path.
extern "C" fn function_trace_call(ip: u64, parent_slot: *mut u64, op: &FtraceOps) {
    // Task context (the common case) with its constant recursion bit, so
    // that no register holds the bit across the event; interrupts,
    // exceptions and recursion go through the general guard, out of line.
    if recursion::trylock_task(recursion::FTRACE_START) {
        function_trace_body(ip, parent_slot, op);
        recursion::unlock_task(recursion::FTRACE_START);
    } else {
        function_trace_call_nested(ip, parent_slot, op);
    }
}

/// [`function_trace_call`] in an interrupt or exception, or when the
/// task context's recursion bit is taken.
#[inline(never)]
fn function_trace_call_nested(ip: u64, parent_slot: *mut u64, op: &FtraceOps) {
    let Some(bit) = recursion::trylock(recursion::FTRACE_START) else {
        return;
    };
    function_trace_body(ip, parent_slot, op);
    recursion::unlock(bit);
}

/// The function tracer's work once the recursion bit is held.
#[inline(always)]
fn function_trace_body(ip: u64, parent_slot: *mut u64, op: &FtraceOps) {
    // SAFETY: the private pointer of a function tracer ops is null or its
    // trace array, which is freed only a grace period after the pointer
    // was cleared; it is read with preemption off (trylock), so the tr
    // outlives this call.
    if let Some(tr) = unsafe { (op.private() as *const TraceArray).as_ref() } {
        // SAFETY: ftrace_caller passes the address of the stack slot
        // holding the traced function's return address.
        let parent_ip = unsafe { *parent_slot };
        if tr.function.slow.load(Ordering::Relaxed) == 0 {
            // The header word is sampled inside `fill`, after the
            // reservation: the context it reads (irqs, depths,
            // preempt_count, current) is this context's own, which an
            // interrupt in between leaves as it found it, and this way no
            // part of it is live across the reservation (one callee-saved
            // register less).
            trace_buffer_write_full(tr, FtraceEntry::SIZE, |buf| {
                FtraceEntry::encode_raw(buf, trace_entry_word(TRACE_FN), ip, parent_ip)
            });
        } else {
            function_trace_record_slow(tr, ip, parent_slot);
        }
    }
}

/// [`function_trace_call`] with a pid filter, func_stack_trace,
/// func-no-repeats, or a caller hijacked by function_graph (recursion bit
/// already held). With func-no-repeats, a call identical to this CPU's
/// last recorded one is only counted (no stack trace either), and the
/// first different one records the count first (Linux:
/// function_no_repeats_trace_call and function_stack_no_repeats_trace_call).
#[cold]
#[inline(never)]
fn function_trace_record_slow(tr: &TraceArray, ip: u64, parent_slot: *mut u64) {
    let f = &tr.function;
    if !f.pid_allowed() {
        return;
    }
    // SAFETY: as in function_trace_call.
    let mut parent_ip = unsafe { *parent_slot };
    // A caller hijacked by function_graph returns to return_to_handler,
    // one hijacked by a kretprobe to rethook_trampoline: report the real
    // caller (Linux: ftrace_graph_ret_addr in function_trace_call).
    if crate::arch::fgraph::is_return_trampoline(parent_ip) {
        parent_ip = super::fgraph::ftrace_ret_addr_of(parent_ip, parent_slot as u64);
    }
    let slow = f.slow.load(Ordering::Relaxed);
    if slow & FUNC_NO_REPEATS != 0 {
        let last = &f.last_func_repeats[crate::arch::cpu_id()];
        if last.is_repeat(ip, parent_ip, tr.trace_clock()) {
            return;
        }
        if let Some(repeats) = last.process(ip, parent_ip) {
            // Linux: trace_last_func_repeats(), stamped when it is written.
            let ts = tr.trace_clock();
            let ent = trace_entry(TRACE_FUNC_REPEATS, tracing_gen_ctx_dec());
            trace_buffer_write_at(tr, ts, FuncRepeatsEntry::SIZE, |buf| {
                let _ = repeats.entry(ent, ts).encode(buf);
            });
        }
    }
    let header = trace_entry_word(TRACE_FN);
    trace_buffer_write_full(tr, FtraceEntry::SIZE, |buf| {
        FtraceEntry::encode_raw(buf, header, ip, parent_ip)
    });
    if slow & FUNC_STACK_TRACE != 0 {
        trace_stack_tr(tr, 2);
    }
}

/// Records a TRACE_STACK event of the current call chain in `tr`'s
/// buffer, skipping `skip` frames (Linux: __trace_stack).
pub fn trace_stack_tr(tr: &TraceArray, skip: usize) {
    let mut frames = [0u64; 16];
    let mut n = 0;
    let mut depth = 0;
    // Skip the tracer's own frames, then keep as many as fit.
    crate::arch::traps::walk_frames(
        crate::arch::frame_pointer(),
        skip + frames.len(),
        |_, real| {
            if depth >= skip {
                frames[n] = real;
                n += 1;
            }
            depth += 1;
        },
    );
    let ent = trace_entry(TRACE_STACK, tracing_gen_ctx_dec());
    let stack = StackEntry {
        ent,
        callers: frames[..n].to_vec(),
    };
    trace_buffer_write(tr, stack.encoded_len(), |buf| {
        let _ = stack.encode(buf);
    });
}

/// Runs the probes attached to a function (traceon/traceoff/stacktrace),
/// acting on the tr of the probe ops.
extern "C" fn function_probe_call(ip: u64, _parent_slot: *mut u64, op: &FtraceOps) {
    let Some(bit) = recursion::trylock(recursion::FTRACE_START) else {
        return;
    };
    // SAFETY: as in function_trace_call: null or a live trace array, read
    // with preemption off.
    let tr = unsafe { (op.private() as *const TraceArray).as_ref() };
    if let (Some(tr), Some(i)) = (tr, ftrace::record_index(ip)) {
        let on = control::tracer_tracing_is_on(tr);
        let actions = crate::irqflags::without_interrupts(|| {
            filter_of(tr).try_lock().map(|mut f| f.probe_hit(i, on))
        });
        if let Some(a) = actions {
            if a.stacktrace {
                trace_stack_tr(tr, 2);
            }
            if a.tracing_off {
                control::tracer_tracing_off(tr);
            }
            if a.tracing_on {
                control::tracer_tracing_on(tr);
            }
        }
    }
    recursion::unlock(bit);
}

/// The index of `ops` in `pool`, if it is one of its slots.
fn pool_index(pool: &'static [FtraceOps], ops: &'static FtraceOps) -> Option<usize> {
    pool.iter().position(|o| core::ptr::eq(o, ops))
}

/// Takes an ops of `pool` for `tr` (ENOSPC if all are taken), with its
/// set emptied and its private pointer set to `tr`.
fn claim_ops(
    pool: &'static [FtraceOps],
    used: &OpsPool,
    tr: &TraceArray,
) -> Result<&'static FtraceOps, Errno> {
    let i = used.claim().ok_or(Errno::ENOSPC)?;
    let ops = &pool[i];
    ops.func_hash().get_or_init().store(|_| false);
    ops.set_private(tr as *const TraceArray as *const ());
    Ok(ops)
}

/// Gives an instance's ops back to its pool (it is unregistered). Its
/// private pointer is cleared first: a task that was preempted in the
/// trampoline with this ops and calls it later finds no tr, or the tr of
/// the instance that took the slot since (one stray event at worst).
fn release_ops(ops: &'static FtraceOps) {
    ops.set_private(core::ptr::null());
    if let Some(i) = pool_index(&INSTANCE_OPS, ops) {
        INSTANCE_OPS_POOL.release(i);
    } else if let Some(i) = pool_index(&INSTANCE_PROBE_OPS, ops) {
        INSTANCE_PROBE_POOL.release(i);
    }
}

/// Applies the top level's filter to the registered ops and re-patches
/// the code.
pub(crate) fn apply_filter() -> Result<(), Errno> {
    match global_trace() {
        Some(tr) => apply_filter_tr(tr),
        None => Ok(()),
    }
}

/// Applies `tr`'s filter to its ops (registering or unregistering its
/// probe ops as probes come and go) and re-patches the code.
fn apply_filter_tr(tr: &TraceArray) -> Result<(), Errno> {
    let f = &tr.function;
    if tr.is_global() {
        // The function tracer and function_graph share the global filter's
        // set (Linux: graph_ops uses global_ops' hashes).
        global_ops::ftrace_update_global_hash();
    } else if let Some(ops) = *f.ops.lock() {
        let filter = f.filter.lock();
        ops.func_hash().get_or_init().store(|i| filter.traces(i));
    }
    let probes = filter_of(tr).lock().probed_functions();
    let mut probe_ops = f.probe_ops.lock();
    if !probes.is_empty() {
        let ops = match *probe_ops {
            Some(ops) => ops,
            None if tr.is_global() => &PROBE_OPS,
            None => claim_ops(&INSTANCE_PROBE_OPS, &INSTANCE_PROBE_POOL, tr)?,
        };
        ops.func_hash().get_or_init().store(|i| probes.contains(i));
        if probe_ops.is_none() {
            if let Err(e) = ftrace::register_ftrace_function(ops) {
                if !tr.is_global() {
                    release_ops(ops);
                }
                return Err(e);
            }
            *probe_ops = Some(ops);
        }
    } else if let Some(ops) = probe_ops.take() {
        let r = ftrace::unregister_ftrace_function(ops);
        ops.func_hash().get_or_init().store(|_| false);
        if !tr.is_global() {
            release_ops(ops);
        }
        r?;
    }
    drop(probe_ops);
    ftrace::ftrace_update()
}

/// Starts the function tracer in `tr` (Linux: function_trace_init): the
/// top level registers [`FUNCTION_OPS`], an instance an ops of the pool
/// with its filter's set (ENOSPC if none is free).
pub fn function_trace_init_tr(tr: &TraceArray) -> Result<(), Errno> {
    let f = &tr.function;
    let mut slot = f.ops.lock();
    if slot.is_some() {
        return Err(Errno::EBUSY);
    }
    set_func_options(tr);
    let ops = if tr.is_global() {
        global_ops::ftrace_update_global_hash();
        &FUNCTION_OPS
    } else {
        let ops = claim_ops(&INSTANCE_OPS, &INSTANCE_OPS_POOL, tr)?;
        let filter = f.filter.lock();
        ops.func_hash().get_or_init().store(|i| filter.traces(i));
        ops
    };
    if let Err(e) = ftrace::register_ftrace_function(ops) {
        if !tr.is_global() {
            release_ops(ops);
        }
        return Err(e);
    }
    *slot = Some(ops);
    Ok(())
}

/// Stops the function tracer in `tr` (Linux: function_trace_reset).
pub fn function_trace_reset_tr(tr: &TraceArray) {
    let Some(ops) = tr.function.ops.lock().take() else {
        return;
    };
    let _ = ftrace::unregister_ftrace_function(ops);
    if !tr.is_global() {
        release_ops(ops);
    }
}

/// Registers a latency tracer's function ops for the instance `tr`, on
/// the instance's own set_ftrace_filter/notrace (Linux: the tracer's
/// callback in `tr->ops`). It takes the function tracer's slot, so a
/// filter change updates its set; `ops` has a set of its own.
pub(super) fn register_latency_ops(tr: &TraceArray, ops: &'static FtraceOps) -> Result<(), Errno> {
    let f = &tr.function;
    let mut slot = f.ops.lock();
    if slot.is_some() {
        return Err(Errno::EBUSY);
    }
    {
        let filter = f.filter.lock();
        ops.func_hash().get_or_init().store(|i| filter.traces(i));
    }
    ftrace::register_ftrace_function(ops)?;
    *slot = Some(ops);
    Ok(())
}

/// Unregisters what [`register_latency_ops`] registered.
pub(super) fn unregister_latency_ops(tr: &TraceArray, ops: &'static FtraceOps) {
    let mut slot = tr.function.ops.lock();
    if slot.is_some_and(|o| core::ptr::eq(o, ops)) {
        *slot = None;
        let _ = ftrace::unregister_ftrace_function(ops);
    }
}

/// Copies `tr`'s function tracer options into its fast-path byte.
fn set_func_options(tr: &TraceArray) {
    let flags = tr.options.lock().tracer_flags(TracerKind::Function);
    let f = &tr.function;
    f.set_slow(FUNC_STACK_TRACE, flags & func_flags::STACK != 0);
    f.set_slow(FUNC_NO_REPEATS, flags & func_flags::NO_REPEATS != 0);
}

/// An option of `tr` changed: function-fork starts or stops following
/// forks, and the callback's copies of the options are refreshed.
pub fn option_changed_tr(tr: &TraceArray, change: &tracer::options::OptionChange) {
    use tracer::options::{OptionId, TraceOption};
    if let OptionId::Core(TraceOption::FuncFork) = change.id {
        if change.changed {
            ftrace_pid_follow_fork(tr, change.enabled);
        }
    }
    set_func_options(tr);
}

/// The function tracer (Linux: function_trace in trace_functions.c).
pub static FUNCTION_TRACE: Tracer = Tracer {
    name: "function",
    init: Some(function_trace_init_tr),
    reset: Some(function_trace_reset_tr),
    start: None,
    stop: None,
    output: None,
    allow_instances: true,
    use_max_tr: false,
    print_max: false,
};

/// A handle on a trace array that a file keeps (an `Arc<TraceArray>`, or
/// the top level's `&'static`).
trait TrHandle: Deref<Target = TraceArray> + Clone + Send + Sync + 'static {}
impl<T: Deref<Target = TraceArray> + Clone + Send + Sync + 'static> TrHandle for T {}

fn regex_open<T: TrHandle>(
    tr: T,
    file: RegexFile,
    flags: OpenFlags,
) -> Result<Box<dyn OpenFile>, Errno> {
    let edit = move |f: &mut FtraceFilter, buf: &[u8]| f.write(file, false, buf, &RecordNames);
    let t = tr.clone();
    let commit = move |new: FtraceFilter| install_filter(&t, new);
    ftrace_regex_open(filter_of(&tr), file, flags, edit, commit)
}

/// Opens a filter file on `filter` (Linux: ftrace_regex_open): reads show
/// it; writes go through `edit` into a copy (emptied first with `O_TRUNC`;
/// probes stay, as in Linux), which `commit` installs when the file is
/// closed, if every write succeeded. `stack_trace_filter` uses it too.
pub(crate) fn ftrace_regex_open(
    filter: &Mutex<FtraceFilter>,
    file: RegexFile,
    flags: OpenFlags,
    edit: impl FnMut(&mut FtraceFilter, &[u8]) -> Result<(), Errno> + Send + 'static,
    commit: impl FnOnce(FtraceFilter) -> Result<(), Errno> + Send + 'static,
) -> Result<Box<dyn OpenFile>, Errno> {
    let current = filter.lock().clone();
    let text = current.read(file, &RecordNames);
    let copy = flags.writable().then(|| {
        let mut c = current.clone();
        if flags.truncate() {
            // `>`: start from an empty list.
            let _ = c.write(file, true, b"", &RecordNames);
        }
        c
    });
    Ok(Box::new(EditFile::new(text, copy, edit, commit)))
}

/// Installs an edited copy of `tr`'s filter (when a filter file is closed).
/// The probes it kept keep the counts that hits used up while it was being
/// edited. If the code cannot be patched to match, the previous filter
/// goes back, with its probes' current counts, and the error is returned:
/// `close()` reports it.
fn install_filter(tr: &TraceArray, mut new: FtraceFilter) -> Result<(), Errno> {
    let filter = filter_of(tr);
    let old = {
        let mut live = filter.lock();
        new.keep_live_counts(&live);
        core::mem::replace(&mut *live, new)
    };
    let Err(e) = apply_filter_tr(tr) else {
        return Ok(());
    };
    {
        let mut live = filter.lock();
        let mut old = old;
        old.keep_live_counts(&live);
        *live = old;
    }
    if let Err(e2) = apply_filter_tr(tr) {
        println!("ftrace: cannot restore the previous filter: {e2}");
    }
    Err(e)
}

/// Copies the pid list into `f.pids` for the callbacks; with a list (even
/// an empty one) only the listed tasks are traced.
fn pid_store_all(f: &TrFunction, list: &PidFilter) {
    for (slot, pid) in f
        .pids
        .iter()
        .zip(list.pids().chain(core::iter::repeat(u32::MAX)))
    {
        slot.store(pid, Ordering::Relaxed);
    }
    f.set_slow(FUNC_PID_FILTER, !list.is_empty());
}

/// The `function-fork` rule for a fork (`parent` Some) or an exit (Linux:
/// ftrace_pid_follow_sched_process_fork/_exit): the list follows the
/// children of listed tasks and drops the tasks that exit. A child that
/// does not fit the [`MAX_PIDS`] slots is not added (Linux's list can
/// fail to grow the same way, on ENOMEM).
fn ftrace_pid_follow(data: *mut (), parent: Option<i32>, task: i32) {
    // SAFETY: the probes are registered with a live trace array as data
    // and unregistered (followed by a grace period) before it is freed;
    // tracepoint probes run with preemption off.
    let Some(tr) = (unsafe { (data as *const TraceArray).as_ref() }) else {
        return;
    };
    let f = &tr.function;
    let mut live = f.pid_filter.lock();
    let mut new = live.clone();
    if new.follow_task(parent, task) && new.pids().count() <= MAX_PIDS {
        pid_store_all(f, &new);
        *live = new;
    }
}

fn ftrace_pid_follow_sched_process_fork(data: *mut (), parent: &TaskInfo, child: &TaskInfo) {
    ftrace_pid_follow(data, Some(parent.pid), child.pid);
}

fn ftrace_pid_follow_sched_process_exit(data: *mut (), task: &TaskInfo) {
    ftrace_pid_follow(data, None, task.pid);
}

/// The `function-fork` option of `tr` changed (Linux:
/// ftrace_pid_follow_fork): the fork and exit probes, with `tr` as their
/// data, are registered while it is set.
pub fn ftrace_pid_follow_fork(tr: &TraceArray, enable: bool) {
    use crate::events::sched::{
        register_trace_sched_process_exit, register_trace_sched_process_fork,
        unregister_trace_sched_process_exit, unregister_trace_sched_process_fork,
    };
    if tr.function.follow_fork.swap(enable, Ordering::SeqCst) == enable {
        return;
    }
    let data = tr as *const TraceArray as *mut ();
    let result = if enable {
        register_trace_sched_process_fork(ftrace_pid_follow_sched_process_fork, data).and_then(
            |_| register_trace_sched_process_exit(ftrace_pid_follow_sched_process_exit, data),
        )
    } else {
        let fork = unregister_trace_sched_process_fork(ftrace_pid_follow_sched_process_fork, data);
        let exit = unregister_trace_sched_process_exit(ftrace_pid_follow_sched_process_exit, data);
        fork.and(exit)
    };
    if let Err(e) = result {
        println!("ftrace: function-fork: cannot update the scheduler probes: {e:?}");
    }
}

fn pid_open<T: TrHandle>(tr: T, flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno> {
    let current = tr.function.pid_filter.lock().clone();
    let text = current.read();
    let copy = flags.writable().then(|| {
        let mut c = current.clone();
        if flags.truncate() {
            let _ = c.write(true, b"");
        }
        c
    });
    let edit = |f: &mut PidFilter, buf: &[u8]| {
        f.write(false, buf)?;
        if f.pids().count() > MAX_PIDS {
            return Err(Errno::ENOSPC);
        }
        Ok(())
    };
    let commit = move |list: PidFilter| {
        // Under the lock, so that a fork or exit followed meanwhile is not
        // lost between the copy for the callbacks and the list.
        let f = &tr.function;
        let mut live = f.pid_filter.lock();
        pid_store_all(f, &list);
        *live = list;
        Ok(())
    };
    Ok(Box::new(EditFile::new(text, copy, edit, commit)))
}

/// Creates `tr`'s set_ftrace_filter, set_ftrace_notrace and
/// set_ftrace_pid in `dir` (Linux: ftrace_create_function_files and
/// ftrace_init_tracefs), bound to `tr`.
fn create_function_files<T: TrHandle>(tr: T, dir: &Dentry) -> Result<(), Errno> {
    let t = tr.clone();
    tracefs::create_file(dir, "set_ftrace_filter", TRACE_MODE_WRITE, move |f| {
        regex_open(t.clone(), RegexFile::Filter, f)
    })?;
    let t = tr.clone();
    tracefs::create_file(dir, "set_ftrace_notrace", TRACE_MODE_WRITE, move |f| {
        regex_open(t.clone(), RegexFile::Notrace, f)
    })?;
    tracefs::create_file(dir, "set_ftrace_pid", TRACE_MODE_WRITE, move |f| {
        pid_open(tr.clone(), f)
    })?;
    Ok(())
}

/// Binds `tr`'s ops to it and creates its function tracer files in `dir`
/// (Linux: ftrace_init_array_ops and ftrace_create_function_files). The
/// top level (`global_trace()`) uses [`FUNCTION_OPS`] and the global
/// filter, shared with function_graph; an instance gets its own.
pub fn init_tr(tr: &alloc::sync::Arc<TraceArray>, dir: &Dentry) -> Result<(), Errno> {
    bind_tr(tr);
    create_function_files(tr.clone(), dir)
}

fn bind_tr(tr: &TraceArray) {
    if tr.is_global() {
        let p = tr as *const TraceArray as *const ();
        FUNCTION_OPS.set_private(p);
        PROBE_OPS.set_private(p);
    }
}

/// Unregisters everything of `tr`'s function tracing (its function tracer
/// ops, its probe ops, its function-fork probes) and empties its filter
/// and pid list (Linux: ftrace_destroy_function_files,
/// clear_ftrace_function_probes). The caller waits for a grace period
/// before it frees `tr`: the ops' private pointers are already cleared,
/// and the callbacks read them with preemption off.
pub fn del_tr(tr: &TraceArray) {
    function_trace_reset_tr(tr);
    let f = &tr.function;
    if let Some(ops) = f.probe_ops.lock().take() {
        let _ = ftrace::unregister_ftrace_function(ops);
        if !tr.is_global() {
            release_ops(ops);
        }
    }
    ftrace_pid_follow_fork(tr, false);
    *f.filter.lock() = FtraceFilter::new();
    let empty = PidFilter::new();
    let mut live = f.pid_filter.lock();
    pid_store_all(f, &empty);
    *live = empty;
}

/// Registers the tracer (the top level's files are made by [`init_tr`],
/// as every trace array's).
pub fn init() -> Result<(), Errno> {
    control::register_tracer(&FUNCTION_TRACE)?;
    super::trace::OPTIONS_CHANGED.register(option_changed_tr)?;
    Ok(())
}
