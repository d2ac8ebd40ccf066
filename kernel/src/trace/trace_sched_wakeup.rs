//! The `wakeup` and `wakeup_rt` latency tracers (Linux:
//! kernel/trace/trace_sched_wakeup.c): how long a woken task waits
//! before it runs.
//!
//! Probes on the sched tracepoints do the work; the scheduler knows
//! nothing of them:
//! - `sched_wakeup` / `sched_wakeup_new` (`probe_wakeup`): if the woken
//!   task is more urgent than the waker and than the task tracked so far
//!   (`wakeup_rt`: and is a real-time task; the choice is
//!   `tracer::wakeup::WakeupTracker`'s), it becomes the tracked task, its
//!   wake-up time is stamped, and a TRACE_WAKE record (`+ [CPU]`), a stack
//!   trace and a function record are written on the waker's CPU.
//! - `sched_switch` (`probe_wakeup_sched_switch`): when a CPU switches to
//!   the tracked task, a function record, a TRACE_CTX record (`==> [CPU]`)
//!   and a stack trace are written; the time since the wake-up is the
//!   latency. If `report_latency` keeps it (above `tracing_max_latency`,
//!   or at least `tracing_thresh` when that is set), it becomes the
//!   array's `max_latency` and `update_max_tr` swaps every CPU's pages
//!   with the spare buffer, so `trace` shows this worst case from its
//!   wake-up on while tracing goes on. Either way tracking starts over.
//! - `sched_migrate_task`: the tracked task moved CPU.
//! - With the `function-trace` option (on by default), every traced
//!   function called on the tracked task's CPU (`wakeup_cpu`) while a
//!   wake-up is tracked is recorded too (`wakeup_tracer_call`, an
//!   ftrace_ops on the `set_ftrace_filter` of the array it runs in,
//!   registered as the irqsoff tracers register theirs), so the saved
//!   worst case shows what that CPU ran between the wake-up and the
//!   switch. With `display-graph`, they come through the function-graph
//!   core instead (`wakeup_graph_entry`/`wakeup_graph_return`) and print
//!   as function_graph prints them (`tracer::graph::LatencyGraphOutput`,
//!   the wake-up and switch records as comments); setting or clearing it
//!   while the tracer runs restarts it (the tracked task and the maximum
//!   forgotten, the live buffer emptied).
//!
//! One trace array at a time may run one of these tracers (Linux's
//! `wakeup_busy`: another gets EBUSY). Selecting one turns the `overwrite`
//! and `latency-format` options on, as Linux does; leaving it puts them
//! back as they were. The tracker lives under one lock, taken with
//! interrupts off (the sched tracepoints fire with interrupts off), as
//! Linux's `wakeup_lock`.

use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};

use crate::arch::{self, percpu};

use spin::Mutex;
use tracer::entry::{
    task_state_index, CtxSwitchEntry, FtraceEntry, TRACE_CTX, TRACE_FN, TRACE_WAKE,
};
use tracer::max_latency::{report_latency, MaxCause, MaxTask};
use tracer::options::TraceOption;
use tracer::trace_events::TaskInfo;
use tracer::wakeup::{WakeTask, WakeupTracker};

use super::control::{self, register_tracer, Tracer};
use super::fgraph::{self, FgraphOps, FtraceGraphEnt, FtraceGraphRet, ShadowStack};
use super::ftrace::{recursion, FtraceOps};
use super::global_ops;
use super::max_trace::{max_latency, set_max_latency, tracing_thresh, update_max_tr};
use super::trace::{self, trace_buffer_write, trace_entry, tracing_gen_ctx_dec, TraceArray};
use super::trace_irqsoff::{trace_function, LatencyFunction};
use crate::events::sched as sched_tp;
use crate::fs::Errno;
use crate::sched::{self, Task, TaskState};

/// The tracked task and where it was woken (Linux's `wakeup_task`,
/// `wakeup_cpu`, `wakeup_prio` ... under `wakeup_lock`).
static WAKEUP_LOCK: Mutex<WakeupTracker> = Mutex::new(WakeupTracker::new(false));
/// The probes record (Linux: `tracer_enabled`): set while the tracer is
/// current and `tracing_on` is 1.
static TRACER_ENABLED: AtomicBool = AtomicBool::new(false);
/// The trace array of the running wakeup tracer (null: none; Linux's
/// `wakeup_busy` and `wakeup_trace`).
static WAKEUP_TRACE: AtomicPtr<TraceArray> = AtomicPtr::new(core::ptr::null_mut());
/// The tracked task's address, 0 for none: read without the lock by the
/// switch probe, as Linux reads `wakeup_task`, to leave at once on every
/// other switch.
static WAKEUP_TASK: AtomicUsize = AtomicUsize::new(0);
/// The tracked task's prio (`u32::MAX`: none), for the wake-up probe's
/// test before it takes the lock (Linux reads `wakeup_prio` the same way).
static WAKEUP_PRIO: AtomicU32 = AtomicU32::new(u32::MAX);
/// The CPU the tracked task will run on (`usize::MAX`: none; Linux's
/// `wakeup_cpu`), read without the lock by the function callback.
static WAKEUP_CPU: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Per CPU: this CPU is writing the tracer's records (Linux: the
/// `data->disabled` of `func_prolog_preempt_disable` and the probes); the
/// function callback records nothing meanwhile.
static DISABLED: [AtomicU32; percpu::MAX_CPUS] = [const { AtomicU32::new(0) }; percpu::MAX_CPUS];
/// The functions called on `wakeup_cpu` while a wake-up is tracked
/// (Linux: `tr->ops` with `wakeup_tracer_call`), on the top level's filter.
static WAKEUP_OPS: FtraceOps = FtraceOps::new("wakeup", wakeup_tracer_call)
    .gated(&control::TRACING_ON)
    .with_hash(&global_ops::GLOBAL_HASH);
/// The same in an instance, on the instance's own filter.
static WAKEUP_INSTANCE_OPS: FtraceOps = FtraceOps::new("wakeup", wakeup_tracer_call);
/// The functions with `display-graph` (Linux: fgraph_wakeup_ops).
static WAKEUP_FGRAPH_OPS: FgraphOps = FgraphOps {
    entryfunc: wakeup_graph_entry,
    retfunc: wakeup_graph_return,
    ops: &fgraph::GRAPH_OPS,
    return_handler: None,
};
static WAKEUP_FUNCTION: LatencyFunction =
    LatencyFunction::new(&WAKEUP_OPS, &WAKEUP_INSTANCE_OPS, &WAKEUP_FGRAPH_OPS, false);
/// `overwrite` and `latency-format` as they were before the tracer was
/// selected (Linux: `save_flags`), restored on reset.
static SAVED_FLAGS: Mutex<(bool, bool)> = Mutex::new((false, false));

/// `wakeup`: every task more urgent than its waker.
pub static WAKEUP_TRACER: Tracer = Tracer {
    name: "wakeup",
    init: Some(wakeup_tracer_init),
    reset: Some(wakeup_tracer_reset),
    start: Some(wakeup_tracer_start),
    stop: Some(wakeup_tracer_stop),
    output: Some(wakeup_output),
    allow_instances: true,
    use_max_tr: true,
    print_max: true,
};

/// `wakeup_rt`: real-time tasks only.
pub static WAKEUP_RT_TRACER: Tracer = Tracer {
    name: "wakeup_rt",
    init: Some(wakeup_rt_tracer_init),
    reset: Some(wakeup_tracer_reset),
    start: Some(wakeup_tracer_start),
    stop: Some(wakeup_tracer_stop),
    output: Some(wakeup_output),
    allow_instances: true,
    use_max_tr: true,
    print_max: true,
};

/// The printer of an open `trace` (Linux: `wakeup_trace_open`,
/// `wakeup_print_header`, `wakeup_print_line`).
fn wakeup_output(nr_cpus: usize) -> alloc::boxed::Box<dyn tracer::output::TracerOutput> {
    alloc::boxed::Box::new(tracer::graph::LatencyGraphOutput::new(
        nr_cpus,
        tracer::graph::WAKEUP_GRAPH_FLAGS,
    ))
}

/// Registers both tracers (Linux: `init_wakeup_tracer`).
pub fn init() -> Result<(), Errno> {
    register_tracer(&WAKEUP_TRACER)?;
    register_tracer(&WAKEUP_RT_TRACER)?;
    trace::OPTIONS_CHANGED.register(option_changed)?;
    trace::FLAG_CHANGED.register(flag_changed)
}

/// `display-graph` set or cleared while a wakeup tracer runs on `tr`
/// (Linux: `wakeup_flag_changed` and `wakeup_display_graph`).
fn flag_changed(tr: &TraceArray, change: &tracer::options::OptionChange) -> Result<(), Errno> {
    use tracer::options::OptionId;
    if change.id != OptionId::Core(TraceOption::DisplayGraph)
        || !core::ptr::eq(WAKEUP_TRACE.load(Ordering::Acquire), tr)
    {
        return Ok(());
    }
    WAKEUP_FUNCTION
        .display_graph(
            tr,
            change.enabled,
            || {
                TRACER_ENABLED.store(false, Ordering::SeqCst);
                wakeup_reset(tr);
                set_max_latency(tr, 0);
            },
            || TRACER_ENABLED.store(control::tracer_tracing_is_on(tr), Ordering::SeqCst),
        )
        .map_err(|_| Errno::EINVAL)
}

/// Linux: `func_prolog_preempt_disable` for the graph hooks: a wake-up is
/// tracked, this is its CPU, and the CPU's records are not in use.
#[inline(always)]
fn func_prolog() -> Option<(&'static TraceArray, usize)> {
    let tr = wakeup_trace()?;
    let cpu = arch::cpu_id();
    if cpu != WAKEUP_CPU.load(Ordering::Relaxed) {
        return None;
    }
    if DISABLED[cpu].fetch_add(1, Ordering::Relaxed) == 0 {
        return Some((tr, cpu));
    }
    DISABLED[cpu].fetch_sub(1, Ordering::Relaxed);
    None
}

/// A traced function entered with `display-graph` (Linux:
/// `wakeup_graph_entry`): recorded on the tracked task's CPU.
fn wakeup_graph_entry(trace: &FtraceGraphEnt, rs: &ShadowStack) -> bool {
    if let Some(hijack) = super::graph::graph_user_entry_filter(trace, rs) {
        return hijack;
    }
    let Some((tr, cpu)) = func_prolog() else {
        return false;
    };
    let ret = super::graph::trace_graph_entry_tr(tr, trace);
    DISABLED[cpu].fetch_sub(1, Ordering::Relaxed);
    ret
}

/// Linux: `wakeup_graph_return`.
fn wakeup_graph_return(trace: &FtraceGraphRet, rs: &ShadowStack) {
    super::graph::graph_user_return_finish(trace, rs);
    let Some((tr, cpu)) = func_prolog() else {
        return;
    };
    super::graph::trace_graph_return_tr(tr, trace);
    DISABLED[cpu].fetch_sub(1, Ordering::Relaxed);
}

/// `function-trace` set or cleared while a wakeup tracer runs on `tr`
/// (Linux: `wakeup_function_set`).
fn option_changed(tr: &TraceArray, change: &tracer::options::OptionChange) {
    let running = WAKEUP_TRACE.load(Ordering::Acquire);
    if core::ptr::eq(running, tr) {
        WAKEUP_FUNCTION.option_changed(tr, change);
    }
}

/// A traced function called on this CPU (Linux: `wakeup_tracer_call` and
/// `func_prolog_preempt_disable`): recorded if it is the CPU of the
/// tracked task.
extern "C" fn wakeup_tracer_call(ip: u64, parent_slot: *mut u64, _op: &FtraceOps) {
    if !TRACER_ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let cpu = arch::cpu_id();
    if cpu != WAKEUP_CPU.load(Ordering::Relaxed) {
        return;
    }
    let Some(bit) = recursion::trylock(recursion::FTRACE_START) else {
        return;
    };
    if let Some(tr) = wakeup_trace() {
        if DISABLED[cpu].fetch_add(1, Ordering::Relaxed) == 0 {
            // SAFETY: ftrace_caller passes the slot of the traced
            // function's return address.
            let parent_ip = unsafe { *parent_slot };
            trace_function(tr, ip, parent_ip);
        }
        DISABLED[cpu].fetch_sub(1, Ordering::Relaxed);
    }
    recursion::unlock(bit);
}

fn wakeup_tracer_init(tr: &TraceArray) -> Result<(), Errno> {
    tracer_init(tr, false)
}

fn wakeup_rt_tracer_init(tr: &TraceArray) -> Result<(), Errno> {
    tracer_init(tr, true)
}

/// `__wakeup_tracer_init`: force the options, reset the maximum, hook
/// the probes.
fn tracer_init(tr: &TraceArray, rt_only: bool) -> Result<(), Errno> {
    let tr_ptr = tr as *const TraceArray as *mut TraceArray;
    if WAKEUP_TRACE
        .compare_exchange(
            core::ptr::null_mut(),
            tr_ptr,
            Ordering::SeqCst,
            Ordering::SeqCst,
        )
        .is_err()
    {
        return Err(Errno::EBUSY);
    }
    TRACEITER.call_once(traceiter_ranges);
    {
        let o = tr.options.lock();
        *SAVED_FLAGS.lock() = (
            o.has(TraceOption::Overwrite),
            o.has(TraceOption::LatencyFmt),
        );
    }
    // Non-overwrite mode would keep the oldest events, not the latest.
    trace::set_tracer_flag(tr, TraceOption::Overwrite, true);
    trace::set_tracer_flag(tr, TraceOption::LatencyFmt, true);
    set_max_latency(tr, 0);
    crate::irqflags::without_interrupts(|| *WAKEUP_LOCK.lock() = WakeupTracker::new(rt_only));
    if let Err(e) = register_probes() {
        unregister_probes();
        restore_flags(tr);
        WAKEUP_TRACE.store(core::ptr::null_mut(), Ordering::SeqCst);
        return Err(e);
    }
    wakeup_reset(tr);
    WAKEUP_FUNCTION.set_graph(tr.options.lock().has(TraceOption::DisplayGraph));
    if WAKEUP_FUNCTION.register(tr).is_err() {
        crate::println!("failed to start wakeup tracer");
    }
    TRACER_ENABLED.store(super::control::tracer_tracing_is_on(tr), Ordering::SeqCst);
    Ok(())
}

fn register_probes() -> Result<(), Errno> {
    let data = core::ptr::null_mut();
    sched_tp::register_trace_sched_wakeup(probe_wakeup, data)?;
    sched_tp::register_trace_sched_wakeup_new(probe_wakeup, data)?;
    sched_tp::register_trace_sched_switch(probe_wakeup_sched_switch, data)?;
    sched_tp::register_trace_sched_migrate_task(probe_wakeup_migrate_task, data)
}

/// Removes whichever probes are registered (ENOENT for the others).
fn unregister_probes() {
    let data = core::ptr::null_mut();
    let _ = sched_tp::unregister_trace_sched_wakeup(probe_wakeup, data);
    let _ = sched_tp::unregister_trace_sched_wakeup_new(probe_wakeup, data);
    let _ = sched_tp::unregister_trace_sched_switch(probe_wakeup_sched_switch, data);
    let _ = sched_tp::unregister_trace_sched_migrate_task(probe_wakeup_migrate_task, data);
}

fn restore_flags(tr: &TraceArray) {
    let (overwrite, lat) = *SAVED_FLAGS.lock();
    trace::set_tracer_flag(tr, TraceOption::LatencyFmt, lat);
    trace::set_tracer_flag(tr, TraceOption::Overwrite, overwrite);
}

/// `wakeup_tracer_reset`: unhook, forget the task, restore the options.
fn wakeup_tracer_reset(tr: &TraceArray) {
    TRACER_ENABLED.store(false, Ordering::SeqCst);
    WAKEUP_FUNCTION.unregister(tr);
    unregister_probes();
    // The probes may still run on other CPUs until every CPU has left
    // its tracepoint calls.
    crate::tracepoint::tracepoint_synchronize_unregister();
    wakeup_reset(tr);
    restore_flags(tr);
    WAKEUP_TRACE.store(core::ptr::null_mut(), Ordering::SeqCst);
}

/// `tracing_on` 1: start over (Linux: `wakeup_tracer_start`).
fn wakeup_tracer_start(tr: &TraceArray) {
    wakeup_reset(tr);
    TRACER_ENABLED.store(true, Ordering::SeqCst);
}

/// `tracing_on` 0.
fn wakeup_tracer_stop(_tr: &TraceArray) {
    TRACER_ENABLED.store(false, Ordering::SeqCst);
}

/// `wakeup_reset`: empties the live buffer and forgets the task.
fn wakeup_reset(tr: &TraceArray) {
    tr.buffer.reset();
    crate::irqflags::without_interrupts(|| __wakeup_reset(&mut WAKEUP_LOCK.lock()));
}

/// `__wakeup_reset`, under the lock.
fn __wakeup_reset(t: &mut WakeupTracker) {
    t.reset();
    WAKEUP_TASK.store(0, Ordering::Relaxed);
    WAKEUP_PRIO.store(u32::MAX, Ordering::Relaxed);
    WAKEUP_CPU.store(usize::MAX, Ordering::Relaxed);
}

/// The running trace array, if the probes are to record.
fn wakeup_trace() -> Option<&'static TraceArray> {
    if !TRACER_ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: the pointer is set while the tracer is the array's current
    // tracer; its reset clears TRACER_ENABLED, unregisters the probes and
    // waits for the running ones before the array can go, and the probes
    // run with preemption off (inside the tracepoint call).
    unsafe { WAKEUP_TRACE.load(Ordering::Acquire).as_ref() }
}

fn wake_task(t: &Task) -> WakeTask {
    WakeTask {
        id: t as *const Task as usize,
        prio: t.prio(),
        rt: t.policy.is_rt(),
    }
}

/// The `prev_state` sched_switch reports for `t`, as a
/// `task_state_index()` (Linux: `task_state_index(p)`).
fn state_index(t: &Task) -> u8 {
    task_state_index(match t.state() {
        TaskState::Runnable => 0,
        TaskState::Blocked => 0x01,
        TaskState::Dead => 0x10,
    })
}

/// Writes a TRACE_WAKE or TRACE_CTX record (Linux:
/// `tracing_sched_wakeup_trace` / `tracing_sched_switch_trace`): `prev`
/// is the waker or the task switched from, `next` the woken task.
fn trace_ctxwake(tr: &TraceArray, type_: u16, prev: &Task, next: &Task) {
    let e = CtxSwitchEntry {
        ent: trace_entry(type_, tracing_gen_ctx_dec()),
        prev_pid: prev.pid,
        prev_prio: prev.prio() as u8,
        prev_state: state_index(prev),
        next_pid: next.pid,
        next_prio: next.prio() as u8,
        next_state: state_index(next),
        next_cpu: next.cpu.load(Ordering::Relaxed) as u32,
    };
    trace_buffer_write(tr, CtxSwitchEntry::SIZE, |buf| {
        let _ = e.encode(buf);
    });
}

/// Where the sched tracepoints' probe loops (`__traceiter_sched_*`) are,
/// as (start, end): their frames are skipped when naming the probe's
/// caller. Found in kallsyms once, when a tracer is first selected, so
/// that the probes only compare addresses.
static TRACEITER: spin::Once<alloc::vec::Vec<(u64, u64)>> = spin::Once::new();

fn traceiter_ranges() -> alloc::vec::Vec<(u64, u64)> {
    crate::kallsyms::table().map_or_else(alloc::vec::Vec::new, |t| {
        t.iter()
            .filter(|s| s.name.contains("__traceiter_sched_"))
            .map(|s| (s.addr, s.addr + u64::from(s.size)))
            .collect()
    })
}

/// The probe's caller and the caller's caller, as return addresses, and
/// how many frames of the tracepoint's probe loop (several probes
/// registered) lie between them and the probe. `#[inline(always)]`: the
/// walk starts at the probe's own frame.
#[inline(always)]
fn probe_callers() -> (usize, u64, u64) {
    let mut frames = [0u64; 4];
    let mut n = 0;
    crate::arch::traps::walk_frames(crate::arch::frame_pointer(), frames.len(), |_, ret| {
        frames[n] = ret;
        n += 1;
    });
    let skip = TRACEITER.get().map_or(&[][..], |v| v.as_slice());
    let in_traceiter = |a: u64| {
        skip.iter()
            .any(|&(lo, hi)| (lo..hi).contains(&a.wrapping_sub(1)))
    };
    let i = frames[..n].iter().take_while(|&&a| in_traceiter(a)).count();
    let at = |k: usize| if k < n { frames[k] } else { 0 };
    (i, at(i), at(i + 1))
}

/// A function record of the scheduler function that fired the
/// tracepoint and its parent (Linux: `__trace_function(tr,
/// CALLER_ADDR0/1, CALLER_ADDR1/2)`).
fn trace_caller(tr: &TraceArray, ip: u64, parent_ip: u64) {
    if ip == 0 {
        return;
    }
    if WAKEUP_FUNCTION.is_graph() {
        super::graph::trace_graph_function(tr, ip);
        return;
    }
    let e = FtraceEntry {
        ent: trace_entry(TRACE_FN, tracing_gen_ctx_dec()),
        ip,
        parent_ip,
    };
    trace_buffer_write(tr, FtraceEntry::SIZE, |buf| {
        let _ = e.encode(buf);
    });
}

/// `probe_wakeup` on sched_wakeup and sched_wakeup_new (interrupts off).
fn probe_wakeup(_data: *mut (), p: &TaskInfo, _target_cpu: i32) {
    let Some(tr) = wakeup_trace() else {
        return;
    };
    let Some(curr) = sched::current() else {
        return;
    };
    // SAFETY: the sched tracepoints pass the `trace_info()` of a live task.
    let wakee = unsafe { Task::from_trace_info(p) };
    let w = wake_task(wakee);
    // Before the lock, as Linux: most wake-ups are not more urgent.
    let curr_prio = curr.trace_info().prio;
    let tracked = WAKEUP_PRIO.load(Ordering::Relaxed);
    if u32::try_from(w.prio).is_ok_and(|p| p >= tracked) || w.prio >= curr_prio {
        return;
    }
    let mut t = WAKEUP_LOCK.lock();
    let now = tr.trace_clock();
    let cpu = wakee.cpu.load(Ordering::Relaxed);
    if !TRACER_ENABLED.load(Ordering::Relaxed) || !t.start(&w, curr_prio, cpu, now) {
        return;
    }
    let this_cpu = arch::cpu_id();
    DISABLED[this_cpu].fetch_add(1, Ordering::Relaxed);
    WAKEUP_TASK.store(w.id, Ordering::Relaxed);
    WAKEUP_PRIO.store(w.prio as u32, Ordering::Relaxed);
    WAKEUP_CPU.store(cpu, Ordering::Relaxed);
    let (skip, ip, parent_ip) = probe_callers();
    trace_ctxwake(tr, TRACE_WAKE, &curr, wakee);
    // The stack from the scheduler's frame on (Linux: `__trace_stack`).
    super::functions::trace_stack_tr(tr, 1 + skip);
    trace_caller(tr, ip, parent_ip);
    DISABLED[this_cpu].fetch_sub(1, Ordering::Relaxed);
}

/// `probe_wakeup_sched_switch` (interrupts off).
fn probe_wakeup_sched_switch(
    _data: *mut (),
    _preempt: bool,
    prev: &TaskInfo,
    next: &TaskInfo,
    _prev_state: u32,
) {
    // SAFETY: as in probe_wakeup.
    let next_task = unsafe { Task::from_trace_info(next) };
    if WAKEUP_TASK.load(Ordering::Relaxed) != next_task as *const Task as usize {
        return;
    }
    let Some(tr) = wakeup_trace() else {
        return;
    };
    // SAFETY: as in probe_wakeup.
    let prev_task = unsafe { Task::from_trace_info(prev) };
    let mut t = WAKEUP_LOCK.lock();
    // The task we are waiting for is being switched in (and we may have
    // raced with a new wake-up for the lock).
    if !TRACER_ENABLED.load(Ordering::Relaxed)
        || t.task() != Some(next_task as *const Task as usize)
    {
        return;
    }
    let wakeup_cpu = t.wakeup_cpu().unwrap_or(0);
    let t0 = t.timestamp();
    let this_cpu = arch::cpu_id();
    DISABLED[this_cpu].fetch_add(1, Ordering::Relaxed);
    let (skip, ip, parent_ip) = probe_callers();
    trace_caller(tr, ip, parent_ip);
    trace_ctxwake(tr, TRACE_CTX, prev_task, next_task);
    super::functions::trace_stack_tr(tr, 1 + skip);
    let now = tr.trace_clock();
    let delta = t
        .switch_to(next_task as *const Task as usize, now)
        .unwrap_or(0);
    __wakeup_reset(&mut t);
    DISABLED[this_cpu].fetch_sub(1, Ordering::Relaxed);
    if !report_latency(tracing_thresh(), max_latency(tr), delta) || trace::tracing_is_stopped(tr) {
        return;
    }
    set_max_latency(tr, delta);
    let mut task = MaxTask::new(&next.comm, next.pid);
    task.policy = i64::from(next_task.policy.number());
    task.rt_priority = i64::from(next_task.policy.rt_priority());
    let cause = MaxCause {
        task,
        critical_start: 0,
        critical_end: 0,
        time_start: t0,
    };
    // A reader or a resize of the spare in progress: this maximum's trace
    // is not kept (the swap never waits in a probe).
    let _ = update_max_tr(tr, wakeup_cpu, &cause);
}

/// `probe_wakeup_migrate_task`.
fn probe_wakeup_migrate_task(_data: *mut (), p: &TaskInfo, _orig_cpu: i32, dest_cpu: i32) {
    // SAFETY: as in probe_wakeup.
    let task = unsafe { Task::from_trace_info(p) };
    let id = task as *const Task as usize;
    if WAKEUP_TASK.load(Ordering::Relaxed) != id {
        return;
    }
    let mut t = WAKEUP_LOCK.lock();
    t.migrate(id, dest_cpu as usize);
    if WAKEUP_TASK.load(Ordering::Relaxed) == id {
        WAKEUP_CPU.store(dest_cpu as usize, Ordering::Relaxed);
    }
}
