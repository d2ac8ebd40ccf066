//! The `irqsoff`, `preemptoff` and `preemptirqsoff` latency tracers
//! (Linux: kernel/trace/trace_irqsoff.c).
//!
//! Each times the stretches of code that run with interrupts off
//! (`irqsoff`), preemption off (`preemptoff`) or either (`preemptirqsoff`),
//! and keeps the trace of the longest one. They are probes on the
//! `preemptirq` tracepoints that `crate::irqflags` fires
//! (`irq_disable`/`irq_enable`, `preempt_disable`/`preempt_enable`);
//! which report starts or stops a section is `tracer::irqsoff`.
//!
//! - Start (`start_critical_timing`): note the time, where the section
//!   began (the caller of the function that turned interrupts off) and
//!   the current `max_sequence`; record a function entry (`ip <- parent`).
//! - While the section is open, with the `function-trace` option (on by
//!   default), every traced function this CPU calls is recorded too (an
//!   ftrace_ops of our own, on the top level's `set_ftrace_filter`).
//! - Stop (`stop_critical_timing`): record a function entry, then
//!   `check_critical_timing`: if `report_latency` accepts the length
//!   (above `tracing_thresh` if set, else above `tracing_max_latency`),
//!   record the stopping function and a stack trace, store the length as
//!   the array's `max_latency` and swap this CPU's pages with the spare
//!   buffer (`update_max_tr_single`), with where the section began and
//!   ended and the task for the header. A section that began before
//!   another CPU's new maximum (`max_sequence` moved) is not kept.
//!
//! `trace` then shows the spare buffer (`print_max`): the latency header
//! with `=> started at:` / `=> ended at:`, and the section's events in the
//! latency format. Selecting a tracer forces `overwrite`, `latency-format`
//! and `pause-on-trace` on (and `overwrite` cannot be cleared meanwhile),
//! sets `tracing_max_latency` to 0, and restores the options when another
//! tracer is selected. One trace array at a time can run one of them
//! (EBUSY for a second), an instance included; in an instance the
//! functions inside a section are those of the instance's own
//! `set_ftrace_filter`.
//!
//! With the `display-graph` option (top level only, as Linux), the
//! functions inside a section come through the function-graph core
//! instead (`irqsoff_graph_entry`/`irqsoff_graph_return`, a user of its
//! own, so EBUSY while the function profiler holds it): each is recorded
//! with its return and printed as function_graph prints it, with the
//! relative-time, CPU, task and latency columns
//! (`tracer::graph::LatencyGraphOutput`); the start and the stop become
//! zero-length graph calls. Setting or clearing it while a tracer runs
//! restarts the tracer: the sections in progress and the maximum are
//! forgotten and the live buffer emptied.
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use spin::Mutex;
use tracer::entry::{FtraceEntry, TRACE_FN};
use tracer::irqsoff::{on_irq_report, on_preempt_report, trace_type, Action};
use tracer::max_latency::{report_latency, MaxCause, MaxTask};
use tracer::options::TraceOption;

use super::control::{self, Tracer};
use super::fgraph::{self, FgraphOps, FtraceGraphEnt, FtraceGraphRet, ShadowStack};
use super::ftrace::{self, recursion, FtraceOps};
use super::trace::{self, trace_buffer_write_full, trace_entry_word, TraceArray};
use super::{global_ops, max_trace};
use crate::arch::{self, percpu};
use crate::events::preemptirq as tp;
use crate::fs::Errno;

/// The array the running tracer records into (Linux: `irqsoff_trace`);
/// null when none runs.
static IRQSOFF_TRACE: AtomicPtr<TraceArray> = AtomicPtr::new(core::ptr::null_mut());
/// `TRACER_IRQS_OFF` and/or `TRACER_PREEMPT_OFF` (Linux: `trace_type`).
static TRACE_TYPE: AtomicU32 = AtomicU32::new(0);
/// The tracer runs and `tracing_on` is 1 (Linux: `tracer_enabled`).
static TRACER_ENABLED: AtomicBool = AtomicBool::new(false);
/// One of the three is current somewhere (Linux: `irqsoff_busy`).
static IRQSOFF_BUSY: AtomicBool = AtomicBool::new(false);
/// Bumped by each new maximum (Linux: `max_sequence`).
static MAX_SEQUENCE: AtomicU64 = AtomicU64::new(0);
/// Serialises the maxima of all CPUs (Linux: `max_trace_lock`).
static MAX_TRACE_LOCK: Mutex<()> = Mutex::new(());
/// The options the tracer forced, as they were (Linux: `save_flags`).
static SAVED_FLAGS: Mutex<[bool; 3]> = Mutex::new([false; 3]);
const FORCED: [TraceOption; 3] = [
    TraceOption::Overwrite,
    TraceOption::LatencyFmt,
    TraceOption::PauseOnTrace,
];

/// One CPU's section (Linux: the fields of `trace_array_cpu` it uses, and
/// the per-CPU `tracing_cpu`). Written by its own CPU with interrupts or
/// preemption off.
struct CpuSection {
    /// A section is open (Linux: `tracing_cpu`).
    tracing_cpu: AtomicBool,
    /// Nested use of this state (Linux: `data->disabled`).
    disabled: AtomicU32,
    critical_start: AtomicU64,
    critical_end: AtomicU64,
    /// When the section began, in the trace clock.
    preempt_timestamp: AtomicU64,
    critical_sequence: AtomicU64,
}

static CPUS: [CpuSection; percpu::MAX_CPUS] = [const {
    CpuSection {
        tracing_cpu: AtomicBool::new(false),
        disabled: AtomicU32::new(0),
        critical_start: AtomicU64::new(0),
        critical_end: AtomicU64::new(0),
        preempt_timestamp: AtomicU64::new(0),
        critical_sequence: AtomicU64::new(0),
    }
}; percpu::MAX_CPUS];

/// The functions called inside a section (Linux: `tr->ops` with
/// `irqsoff_tracer_call`), on the top level's filter.
static IRQSOFF_OPS: FtraceOps = FtraceOps::new("irqsoff", irqsoff_tracer_call)
    .gated(&control::TRACING_ON)
    .with_hash(&global_ops::GLOBAL_HASH);
/// The same in an instance, on the instance's own filter.
static IRQSOFF_INSTANCE_OPS: FtraceOps = FtraceOps::new("irqsoff", irqsoff_tracer_call);
/// The functions inside a section with `display-graph` (Linux: fgraph_ops
/// of trace_irqsoff.c).
static IRQSOFF_FGRAPH_OPS: FgraphOps = FgraphOps {
    entryfunc: irqsoff_graph_entry,
    retfunc: irqsoff_graph_return,
    ops: &fgraph::GRAPH_OPS,
    return_handler: None,
};
static IRQSOFF_FUNCTION: LatencyFunction = LatencyFunction::new(
    &IRQSOFF_OPS,
    &IRQSOFF_INSTANCE_OPS,
    &IRQSOFF_FGRAPH_OPS,
    true,
);

#[inline(always)]
fn irqsoff_trace() -> Option<&'static TraceArray> {
    // SAFETY: set by init to an array that stays alive while the tracer
    // is current (an instance is removed only after `tracing_set_nop`,
    // which resets the tracer and clears this), and read only by probes,
    // which run with preemption off and are waited for (the tracepoint's
    // grace period) before the array can go.
    unsafe { IRQSOFF_TRACE.load(Ordering::Acquire).as_ref() }
}

/// The preempt count of the code that reported: the tracepoint's own
/// preempt_disable (around every probe) is not counted.
#[inline(always)]
fn reporter_preempt_count() -> u32 {
    percpu::this_cpu_preempt_count().saturating_sub(1)
}

/// Records a function entry `ip <- parent_ip` (Linux: `trace_function`).
#[inline(always)]
pub(super) fn trace_function(tr: &TraceArray, ip: u64, parent_ip: u64) {
    trace_buffer_write_full(tr, FtraceEntry::SIZE, |buf| {
        FtraceEntry::encode_raw(buf, trace_entry_word(TRACE_FN), ip, parent_ip)
    });
}

/// A record the tracer writes itself: a function entry, or with
/// `display-graph` a zero-length graph call (Linux: `__trace_function`).
#[inline(always)]
fn latency_function(tr: &TraceArray, ip: u64, parent_ip: u64) {
    if IRQSOFF_FUNCTION.is_graph() {
        super::graph::trace_graph_function(tr, ip);
    } else {
        trace_function(tr, ip, parent_ip);
    }
}

/// The running task, for the saved data.
fn current_task() -> MaxTask {
    crate::sched::current().map_or_else(
        || MaxTask::new(b"swapper", 0),
        |t| MaxTask::new(t.comm().as_bytes(), t.pid as i32),
    )
}

/// Linux: `start_critical_timing` (inlined into the probes, as Linux's
/// `nokprobe_inline`: the stop's own line names the probe).
#[inline(always)]
fn start_critical_timing(ip: u64, parent_ip: u64) {
    let Some(tr) = irqsoff_trace() else { return };
    if !TRACER_ENABLED.load(Ordering::Relaxed) || !control::tracer_tracing_is_on(tr) {
        return;
    }
    let cpu = arch::cpu_id();
    let data = &CPUS[cpu];
    if data.tracing_cpu.load(Ordering::Relaxed) || data.disabled.load(Ordering::Relaxed) != 0 {
        return;
    }
    data.disabled.fetch_add(1, Ordering::Relaxed);
    data.critical_sequence
        .store(MAX_SEQUENCE.load(Ordering::Relaxed), Ordering::Relaxed);
    data.preempt_timestamp
        .store(tr.trace_clock(), Ordering::Relaxed);
    data.critical_start.store(
        if parent_ip != 0 { parent_ip } else { ip },
        Ordering::Relaxed,
    );
    latency_function(tr, ip, parent_ip);
    data.tracing_cpu.store(true, Ordering::Relaxed);
    data.disabled.fetch_sub(1, Ordering::Relaxed);
}

/// Linux: `stop_critical_timing`.
#[inline(always)]
fn stop_critical_timing(ip: u64, parent_ip: u64) {
    let cpu = arch::cpu_id();
    let data = &CPUS[cpu];
    // Always clear this CPU's section on a stop.
    if !data.tracing_cpu.swap(false, Ordering::Relaxed) {
        return;
    }
    let Some(tr) = irqsoff_trace() else { return };
    if !TRACER_ENABLED.load(Ordering::Relaxed) || !control::tracer_tracing_is_on(tr) {
        return;
    }
    if data.critical_start.load(Ordering::Relaxed) == 0
        || data.disabled.load(Ordering::Relaxed) != 0
    {
        return;
    }
    data.disabled.fetch_add(1, Ordering::Relaxed);
    latency_function(tr, ip, parent_ip);
    check_critical_timing(tr, data, if parent_ip != 0 { parent_ip } else { ip }, cpu);
    data.critical_start.store(0, Ordering::Relaxed);
    data.disabled.fetch_sub(1, Ordering::Relaxed);
}

/// Frames of the stack trace that are the report's own (this function,
/// the probe, the report, its thunk): the trace starts at the function
/// that turned interrupts or preemption on (Linux skips 5).
const STACK_SKIP: usize = 4;

/// Linux: `check_critical_timing`: keeps the section if it is a new
/// maximum (or above `tracing_thresh`), then starts timing afresh.
#[inline(never)]
fn check_critical_timing(tr: &TraceArray, data: &CpuSection, parent_ip: u64, cpu: usize) {
    // Linux's CALLER_ADDR0: where this was called from, in the stop.
    let this_ip = arch::return_address();
    let t0 = data.preempt_timestamp.load(Ordering::Relaxed);
    let delta = tr.trace_clock().wrapping_sub(t0);
    let thresh = max_trace::tracing_thresh();
    if report_latency(thresh, max_trace::max_latency(tr), delta) {
        let flags = arch::irqflags::arch_local_irq_save();
        {
            let _guard = MAX_TRACE_LOCK.lock();
            // Still the maximum?
            if report_latency(thresh, max_trace::max_latency(tr), delta) {
                latency_function(tr, this_ip, parent_ip);
                super::functions::trace_stack_tr(tr, STACK_SKIP);
                if data.critical_sequence.load(Ordering::Relaxed)
                    == MAX_SEQUENCE.load(Ordering::Relaxed)
                {
                    data.critical_end.store(parent_ip, Ordering::Relaxed);
                    if !trace::tracing_is_stopped(tr) {
                        max_trace::set_max_latency(tr, delta);
                        let cause = MaxCause {
                            task: current_task(),
                            critical_start: data.critical_start.load(Ordering::Relaxed),
                            critical_end: parent_ip,
                            time_start: t0,
                        };
                        let _ = max_trace::update_max_tr_single(tr, cpu, &cause);
                    }
                    MAX_SEQUENCE.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        arch::irqflags::arch_local_irq_restore(flags);
    }
    data.critical_sequence
        .store(MAX_SEQUENCE.load(Ordering::Relaxed), Ordering::Relaxed);
    data.preempt_timestamp
        .store(tr.trace_clock(), Ordering::Relaxed);
    latency_function(tr, this_ip, parent_ip);
}

/// `irq_disable` (Linux: `tracer_hardirqs_off`).
fn tracer_hardirqs_off(_data: *mut (), ip: u64, parent_ip: u64) {
    let ty = TRACE_TYPE.load(Ordering::Relaxed);
    if on_irq_report(ty, reporter_preempt_count(), false) == Action::Start {
        start_critical_timing(ip, parent_ip);
    }
}

/// `irq_enable` (Linux: `tracer_hardirqs_on`).
fn tracer_hardirqs_on(_data: *mut (), ip: u64, parent_ip: u64) {
    let ty = TRACE_TYPE.load(Ordering::Relaxed);
    if on_irq_report(ty, reporter_preempt_count(), true) == Action::Stop {
        stop_critical_timing(ip, parent_ip);
    }
}

/// `preempt_disable` (Linux: `tracer_preempt_off`).
fn tracer_preempt_off(_data: *mut (), ip: u64, parent_ip: u64) {
    let ty = TRACE_TYPE.load(Ordering::Relaxed);
    let irqs_off = crate::irqflags::irqs_disabled();
    if on_preempt_report(ty, reporter_preempt_count(), irqs_off, false) == Action::Start {
        start_critical_timing(ip, parent_ip);
    }
}

/// `preempt_enable` (Linux: `tracer_preempt_on`).
fn tracer_preempt_on(_data: *mut (), ip: u64, parent_ip: u64) {
    let ty = TRACE_TYPE.load(Ordering::Relaxed);
    let irqs_off = crate::irqflags::irqs_disabled();
    if on_preempt_report(ty, reporter_preempt_count(), irqs_off, true) == Action::Stop {
        stop_critical_timing(ip, parent_ip);
    }
}

/// A traced function called on this CPU (Linux: `irqsoff_tracer_call`):
/// recorded if a section is open here.
extern "C" fn irqsoff_tracer_call(ip: u64, parent_slot: *mut u64, _op: &FtraceOps) {
    let data = &CPUS[arch::cpu_id()];
    if !data.tracing_cpu.load(Ordering::Relaxed) {
        return;
    }
    let Some(bit) = recursion::trylock(recursion::FTRACE_START) else {
        return;
    };
    // The callback's own preempt_disable (trylock) is not the section's.
    let preempted = percpu::this_cpu_preempt_count() > 1;
    if let Some(tr) = irqsoff_trace() {
        if crate::irqflags::irqs_disabled() || preempted {
            if data.disabled.fetch_add(1, Ordering::Relaxed) == 0 {
                // SAFETY: ftrace_caller passes the slot of the traced
                // function's return address.
                let parent_ip = unsafe { *parent_slot };
                trace_function(tr, ip, parent_ip);
            }
            data.disabled.fetch_sub(1, Ordering::Relaxed);
        }
    }
    recursion::unlock(bit);
}

/// Linux: `func_prolog_dec` for the graph hooks: a section is open on
/// this CPU, with interrupts or preemption off (the graph core's own
/// preempt_disable not counted), and the CPU's records are not in use.
#[inline(always)]
fn func_prolog_dec() -> Option<&'static CpuSection> {
    let data = &CPUS[arch::cpu_id()];
    if !data.tracing_cpu.load(Ordering::Relaxed) {
        return None;
    }
    if !crate::irqflags::irqs_disabled() && percpu::this_cpu_preempt_count() <= 1 {
        return None;
    }
    if data.disabled.fetch_add(1, Ordering::Relaxed) == 0 {
        return Some(data);
    }
    data.disabled.fetch_sub(1, Ordering::Relaxed);
    None
}

/// A traced function entered on this CPU with `display-graph` (Linux:
/// `irqsoff_graph_entry`): recorded, and its return asked for, if a
/// section is open here.
fn irqsoff_graph_entry(trace: &FtraceGraphEnt, rs: &ShadowStack) -> bool {
    if let Some(hijack) = super::graph::graph_user_entry_filter(trace, rs) {
        return hijack;
    }
    let Some(tr) = irqsoff_trace() else {
        return false;
    };
    let Some(data) = func_prolog_dec() else {
        return false;
    };
    let ret = super::graph::trace_graph_entry_tr(tr, trace);
    data.disabled.fetch_sub(1, Ordering::Relaxed);
    ret
}

/// Linux: `irqsoff_graph_return`: recorded if the section is still open.
fn irqsoff_graph_return(trace: &FtraceGraphRet, rs: &ShadowStack) {
    super::graph::graph_user_return_finish(trace, rs);
    let Some(tr) = irqsoff_trace() else {
        return;
    };
    let Some(data) = func_prolog_dec() else {
        return;
    };
    super::graph::trace_graph_return_tr(tr, trace);
    data.disabled.fetch_sub(1, Ordering::Relaxed);
}

/// A latency tracer's function callback, registered while the tracer
/// runs with `function-trace` set (Linux: `register_irqsoff_function` /
/// `register_wakeup_function` and their `function_enabled`); the wakeup
/// tracers use one too. At the top level it is an ftrace_ops on the
/// global filter, in an instance one on the instance's filter; with
/// `display-graph`, a user of the function-graph core (the irqsoff
/// tracers: at the top level only).
pub(super) struct LatencyFunction {
    ops: &'static FtraceOps,
    instance_ops: &'static FtraceOps,
    fgraph: &'static FgraphOps,
    /// Graph only at the top level (Linux's irqsoff; wakeup has no limit).
    graph_top_only: bool,
    /// Something is registered (Linux: `function_enabled`).
    enabled: AtomicBool,
    /// What is registered is the graph user.
    using_graph: AtomicBool,
    /// `display-graph` as the tracer was (re)started (Linux: `is_graph(tr)`,
    /// read by the records the tracer writes itself).
    display_graph: AtomicBool,
}

impl LatencyFunction {
    pub(super) const fn new(
        ops: &'static FtraceOps,
        instance_ops: &'static FtraceOps,
        fgraph: &'static FgraphOps,
        graph_top_only: bool,
    ) -> Self {
        Self {
            ops,
            instance_ops,
            fgraph,
            graph_top_only,
            enabled: AtomicBool::new(false),
            using_graph: AtomicBool::new(false),
            display_graph: AtomicBool::new(false),
        }
    }

    /// `display-graph` as the tracer was started.
    #[inline(always)]
    pub(super) fn is_graph(&self) -> bool {
        self.display_graph.load(Ordering::Relaxed)
    }

    /// Notes `display-graph`'s value for the next [`LatencyFunction::register`].
    pub(super) fn set_graph(&self, on: bool) {
        self.display_graph.store(on, Ordering::Relaxed);
    }

    /// Registers the callback if `function-trace` is set on `tr`.
    pub(super) fn register(&self, tr: &TraceArray) -> Result<(), Errno> {
        if self.enabled.load(Ordering::Relaxed)
            || !tr.options.lock().has(TraceOption::FunctionTrace)
        {
            return Ok(());
        }
        let graph = self.is_graph() && (tr.is_global() || !self.graph_top_only);
        if graph {
            fgraph::register_ftrace_graph(self.fgraph)?;
        } else if tr.is_global() {
            global_ops::ftrace_update_global_hash();
            ftrace::register_ftrace_function(self.ops)?;
        } else {
            super::functions::register_latency_ops(tr, self.instance_ops)?;
        }
        self.using_graph.store(graph, Ordering::Relaxed);
        self.enabled.store(true, Ordering::Relaxed);
        Ok(())
    }

    pub(super) fn unregister(&self, tr: &TraceArray) {
        if !self.enabled.swap(false, Ordering::Relaxed) {
            return;
        }
        if self.using_graph.swap(false, Ordering::Relaxed) {
            fgraph::unregister_ftrace_graph(self.fgraph);
        } else if tr.is_global() {
            let _ = ftrace::unregister_ftrace_function(self.ops);
        } else {
            super::functions::unregister_latency_ops(tr, self.instance_ops);
        }
    }

    /// `function-trace` set or cleared on `tr`, which runs the tracer
    /// (Linux: `irqsoff_function_set` / `wakeup_function_set`).
    pub(super) fn option_changed(&self, tr: &TraceArray, change: &tracer::options::OptionChange) {
        use tracer::options::OptionId;
        if change.id != OptionId::Core(TraceOption::FunctionTrace) || !change.changed {
            return;
        }
        if change.enabled {
            let _ = self.register(tr);
        } else {
            self.unregister(tr);
        }
    }

    /// Restarts the callback in the other `display-graph` mode (Linux:
    /// `irqsoff_display_graph` / `wakeup_display_graph`): `stop` runs with
    /// the old one unregistered, `start` after the new one is registered.
    /// If the new one cannot be (the function-graph core is busy), the old
    /// one comes back and the error is returned.
    pub(super) fn display_graph(
        &self,
        tr: &TraceArray,
        on: bool,
        stop: impl Fn(),
        start: impl Fn(),
    ) -> Result<(), Errno> {
        if self.is_graph() == on {
            return Ok(());
        }
        stop();
        self.unregister(tr);
        self.set_graph(on);
        let r = self.register(tr);
        if r.is_err() {
            self.set_graph(!on);
            let _ = self.register(tr);
        }
        start();
        r
    }
}

type Probe = fn(*mut (), u64, u64);

/// The probes of a trace type, with their tracepoints' register and
/// unregister functions.
fn probes(ty: u32) -> impl Iterator<Item = (Probe, RegFn, RegFn)> {
    use tracer::irqsoff::{TRACER_IRQS_OFF, TRACER_PREEMPT_OFF};
    let irq: [(Probe, RegFn, RegFn); 2] = [
        (
            tracer_hardirqs_off,
            tp::register_trace_irq_disable,
            tp::unregister_trace_irq_disable,
        ),
        (
            tracer_hardirqs_on,
            tp::register_trace_irq_enable,
            tp::unregister_trace_irq_enable,
        ),
    ];
    let preempt: [(Probe, RegFn, RegFn); 2] = [
        (
            tracer_preempt_off,
            tp::register_trace_preempt_disable,
            tp::unregister_trace_preempt_disable,
        ),
        (
            tracer_preempt_on,
            tp::register_trace_preempt_enable,
            tp::unregister_trace_preempt_enable,
        ),
    ];
    let i = if ty & TRACER_IRQS_OFF != 0 { 2 } else { 0 };
    let p = if ty & TRACER_PREEMPT_OFF != 0 { 2 } else { 0 };
    irq.into_iter().take(i).chain(preempt.into_iter().take(p))
}
type RegFn = fn(Probe, *mut ()) -> Result<(), Errno>;

fn unregister_probes(ty: u32) {
    for (probe, _, unreg) in probes(ty) {
        let _ = unreg(probe, core::ptr::null_mut());
    }
}

/// Linux: `__irqsoff_tracer_init`.
fn irqsoff_tracer_init(tr: &TraceArray, ty: u32) -> Result<(), Errno> {
    if IRQSOFF_BUSY.swap(true, Ordering::AcqRel) {
        return Err(Errno::EBUSY);
    }
    // The probes first: if one cannot be registered, nothing changed.
    for (probe, reg, _) in probes(ty) {
        if let Err(e) = reg(probe, core::ptr::null_mut()) {
            unregister_probes(ty);
            IRQSOFF_BUSY.store(false, Ordering::Release);
            return Err(e);
        }
    }
    {
        let o = tr.options.lock();
        *SAVED_FLAGS.lock() = FORCED.map(|f| o.has(f));
    }
    // Non-overwrite would lose the section's start; without pause the
    // reader would see a later section swapped in halfway.
    for opt in FORCED {
        trace::set_tracer_flag(tr, opt, true);
    }
    max_trace::set_max_latency(tr, 0);
    TRACE_TYPE.store(ty, Ordering::Relaxed);
    IRQSOFF_TRACE.store(
        tr as *const TraceArray as *mut TraceArray,
        Ordering::Release,
    );
    IRQSOFF_FUNCTION.set_graph(tr.options.lock().has(TraceOption::DisplayGraph));
    if IRQSOFF_FUNCTION.register(tr).is_err() {
        crate::println!("failed to start irqsoff tracer");
    }
    TRACER_ENABLED.store(control::tracer_tracing_is_on(tr), Ordering::Release);
    Ok(())
}

/// Linux: `__irqsoff_tracer_reset`.
fn irqsoff_tracer_reset(tr: &TraceArray) {
    TRACER_ENABLED.store(false, Ordering::Release);
    IRQSOFF_FUNCTION.unregister(tr);
    unregister_probes(TRACE_TYPE.load(Ordering::Relaxed));
    let saved = *SAVED_FLAGS.lock();
    for (opt, on) in FORCED.into_iter().zip(saved) {
        trace::set_tracer_flag(tr, opt, on);
    }
    IRQSOFF_TRACE.store(core::ptr::null_mut(), Ordering::Release);
    // The probes are gone (their grace period was waited for); sections
    // left open are forgotten.
    for c in CPUS.iter() {
        c.tracing_cpu.store(false, Ordering::Relaxed);
        c.critical_start.store(0, Ordering::Relaxed);
    }
    IRQSOFF_BUSY.store(false, Ordering::Release);
}

fn irqsoff_tracer_start(_tr: &TraceArray) {
    TRACER_ENABLED.store(true, Ordering::Release);
}

fn irqsoff_tracer_stop(_tr: &TraceArray) {
    TRACER_ENABLED.store(false, Ordering::Release);
}

fn init_irqsoff(tr: &TraceArray) -> Result<(), Errno> {
    irqsoff_tracer_init(tr, trace_type("irqsoff").unwrap_or(0))
}
fn init_preemptoff(tr: &TraceArray) -> Result<(), Errno> {
    irqsoff_tracer_init(tr, trace_type("preemptoff").unwrap_or(0))
}
fn init_preemptirqsoff(tr: &TraceArray) -> Result<(), Errno> {
    irqsoff_tracer_init(tr, trace_type("preemptirqsoff").unwrap_or(0))
}

/// The hooks the three share (Linux: the `irqsoff_tracer` struct and its
/// two siblings).
const IRQSOFF_BASE: Tracer = Tracer {
    reset: Some(irqsoff_tracer_reset),
    start: Some(irqsoff_tracer_start),
    stop: Some(irqsoff_tracer_stop),
    output: Some(irqsoff_output),
    allow_instances: true,
    use_max_tr: true,
    print_max: true,
    ..Tracer::EMPTY
};

/// The printer of an open `trace` (Linux: `irqsoff_trace_open`,
/// `irqsoff_print_header`, `irqsoff_print_line`).
fn irqsoff_output(nr_cpus: usize) -> alloc::boxed::Box<dyn tracer::output::TracerOutput> {
    alloc::boxed::Box::new(tracer::graph::LatencyGraphOutput::new(
        nr_cpus,
        tracer::graph::IRQSOFF_GRAPH_FLAGS,
    ))
}

pub static IRQSOFF_TRACER: Tracer = Tracer {
    name: "irqsoff",
    init: Some(init_irqsoff),
    ..IRQSOFF_BASE
};

pub static PREEMPTOFF_TRACER: Tracer = Tracer {
    name: "preemptoff",
    init: Some(init_preemptoff),
    ..IRQSOFF_BASE
};

pub static PREEMPTIRQSOFF_TRACER: Tracer = Tracer {
    name: "preemptirqsoff",
    init: Some(init_preemptirqsoff),
    ..IRQSOFF_BASE
};

/// `function-trace` set or cleared while one of the three runs (Linux:
/// `irqsoff_function_set`).
fn option_changed(tr: &TraceArray, change: &tracer::options::OptionChange) {
    if irqsoff_trace().is_some_and(|t| core::ptr::eq(t, tr)) {
        IRQSOFF_FUNCTION.option_changed(tr, change);
    }
}

/// `display-graph` set or cleared while one of the three runs on `tr`
/// (Linux: `irqsoff_flag_changed` and `irqsoff_display_graph`): the tracer
/// restarts in the new mode, the sections in progress and the maximum
/// forgotten and the live buffer emptied.
fn flag_changed(tr: &TraceArray, change: &tracer::options::OptionChange) -> Result<(), Errno> {
    use tracer::options::OptionId;
    if change.id != OptionId::Core(TraceOption::DisplayGraph)
        || !irqsoff_trace().is_some_and(|t| core::ptr::eq(t, tr))
    {
        return Ok(());
    }
    IRQSOFF_FUNCTION
        .display_graph(
            tr,
            change.enabled,
            || {
                TRACER_ENABLED.store(false, Ordering::Release);
                for c in CPUS.iter() {
                    c.tracing_cpu.store(false, Ordering::Relaxed);
                }
                max_trace::set_max_latency(tr, 0);
                tr.buffer.reset();
            },
            || TRACER_ENABLED.store(control::tracer_tracing_is_on(tr), Ordering::Release),
        )
        // Linux: a refused flag_changed makes the write EINVAL.
        .map_err(|_| Errno::EINVAL)
}

/// Registers the three tracers (Linux: `init_irqsoff_tracer`).
pub fn init() -> Result<(), Errno> {
    control::register_tracer(&IRQSOFF_TRACER)?;
    control::register_tracer(&PREEMPTOFF_TRACER)?;
    control::register_tracer(&PREEMPTIRQSOFF_TRACER)?;
    trace::OPTIONS_CHANGED.register(option_changed)?;
    trace::FLAG_CHANGED.register(flag_changed)?;
    Ok(())
}
