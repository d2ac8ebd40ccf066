//! Turning interrupts and preemption off and on, and telling the latency
//! tracers about it (Linux: include/linux/irqflags.h over
//! arch/x86/include/asm/irqflags.h, and kernel/trace/trace_preemptirq.c).
//!
//! Every place in the kernel that disables or enables interrupts goes
//! through [`local_irq_disable`], [`local_irq_enable`], [`local_irq_save`],
//! [`local_irq_restore`] (or [`without_interrupts`], a save/restore pair
//! around a closure) and [`safe_halt`]; `sched::preempt_disable` and
//! `preempt_enable` call [`trace_preempt_off`] / [`trace_preempt_on`]; the
//! interrupt path reports that an interrupt turned interrupts off and
//! that its return turns them on again ([`irqentry_hardirqs_off`],
//! [`irqentry_hardirqs_on`]).
//!
//! Each report is a tracepoint of the `preemptirq` system: `irq_disable`,
//! `irq_enable`, `preempt_disable`, `preempt_enable`, with the address
//! the wrapper was called from and that function's caller (Linux's
//! `CALLER_ADDR0`, `CALLER_ADDR1`). The wrappers are inlined; each holds
//! one static branch on its tracepoint's key, a 5-byte NOP while nothing
//! listens (no event enabled, no latency tracer), so they cost what the
//! bare `cli`/`sti` or count update costs (the `irq_pair` and
//! `preempt_pair` figures of the benchmark). When the key is on, the
//! branch calls the out-of-line part (`trace_hardirqs_off` ...), which
//! works out the addresses and fires the tracepoint. The latency tracers
//! (kernel/src/trace/trace_irqsoff.rs) are probes on these tracepoints:
//! this module never imports tracing.
//!
//! As in Linux, only transitions are reported: `local_irq_save` with
//! interrupts already off, or a nested `preempt_disable`, says nothing;
//! `irq_enable` is reported only on a CPU that reported the matching
//! `irq_disable` (Linux's per-CPU `tracing_irq_cpu`), so that a tracer
//! switched on in the middle of a section does not see half of it. A
//! preemption change is reported only in task context (Linux's
//! `preempt_count() == val`: in an interrupt the count holds the hardirq
//! bits as well).
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::arch::irqflags as arch_irq;
use crate::arch::percpu;
use crate::events::preemptirq as tp;

pub use arch_irq::X86_EFLAGS_IF;

/// The key of the `irq_disable` tracepoint: on while a probe listens.
macro_rules! irq_off_key_on {
    () => {
        $crate::static_branch_unlikely!($crate::events::preemptirq::__TRACEPOINT_KEY_irq_disable)
    };
}

/// The key of the `irq_enable` tracepoint.
macro_rules! irq_on_key_on {
    () => {
        $crate::static_branch_unlikely!($crate::events::preemptirq::__TRACEPOINT_KEY_irq_enable)
    };
}

/// Disables interrupts on this CPU (Linux: `local_irq_disable`).
#[inline(always)]
pub fn local_irq_disable() {
    arch_irq::arch_local_irq_disable();
    if irq_off_key_on!() {
        crate::call_thunk!(trace_hardirqs_off_thunk, X86_EFLAGS_IF);
    }
}

/// Enables interrupts on this CPU (Linux: `local_irq_enable`).
#[inline(always)]
pub fn local_irq_enable() {
    if irq_on_key_on!() {
        crate::call_thunk!(trace_hardirqs_on_thunk, X86_EFLAGS_IF);
    }
    arch_irq::arch_local_irq_enable();
}

/// Disables interrupts and returns the previous flags, for
/// [`local_irq_restore`] (Linux: `local_irq_save`).
#[inline(always)]
pub fn local_irq_save() -> u64 {
    let flags = arch_irq::arch_local_irq_save();
    if irq_off_key_on!() {
        crate::call_thunk!(trace_hardirqs_off_thunk, flags);
    }
    flags
}

/// Puts back the interrupt flag [`local_irq_save`] returned (Linux:
/// `local_irq_restore`): enabled if it was, else left disabled.
#[inline(always)]
pub fn local_irq_restore(flags: u64) {
    if irq_on_key_on!() {
        crate::call_thunk!(trace_hardirqs_on_thunk, flags);
    }
    arch_irq::arch_local_irq_restore(flags);
}

/// Runs `f` with interrupts disabled on this CPU, restoring the previous
/// state after it.
#[inline(always)]
pub fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
    let flags = local_irq_save();
    let r = f();
    local_irq_restore(flags);
    r
}

/// True if interrupts are disabled on this CPU (Linux: `irqs_disabled`).
#[inline(always)]
pub fn irqs_disabled() -> bool {
    arch_irq::arch_irqs_disabled()
}

/// Enables interrupts and halts until the next one, the idle loop's body
/// (Linux: `safe_halt`): interrupts are reported on first, so the halt is
/// not a stretch with interrupts off.
#[inline(always)]
pub fn safe_halt() {
    if irq_on_key_on!() {
        crate::call_thunk!(trace_hardirqs_on_thunk, X86_EFLAGS_IF);
    }
    arch_irq::arch_safe_halt();
}

// ---------------------------------------------------------------------------
// The out-of-line part (Linux: kernel/trace/trace_preemptirq.c)

/// This CPU reported `irq_disable` and not yet `irq_enable` (Linux:
/// `tracing_irq_cpu`). Written by its CPU with interrupts off.
static TRACING_IRQ_CPU: [AtomicBool; percpu::MAX_CPUS] =
    [const { AtomicBool::new(false) }; percpu::MAX_CPUS];
/// This CPU is inside a report: a wrapper used by a probe reports nothing
/// (the probe would otherwise run inside itself).
static IN_REPORT: [AtomicBool; percpu::MAX_CPUS] =
    [const { AtomicBool::new(false) }; percpu::MAX_CPUS];

/// The function-graph core's look-up of a hijacked return's real address
/// (`fn(ret, retp) -> real`, Linux: ftrace_graph_ret_addr and
/// rethook_find_ret_addr), registered
/// by tracing at boot ([`set_graph_ret_addr`]): 0 until then. A hook, so
/// that this module, which the scheduler uses, never imports it.
static GRAPH_RET_ADDR: AtomicUsize = AtomicUsize::new(0);

/// Registers the function-graph core's look-up of real return addresses.
pub fn set_graph_ret_addr(f: fn(u64, u64) -> u64) {
    GRAPH_RET_ADDR.store(f as usize, Ordering::Release);
}

/// The return address of the function whose frame pointer is `fp`
/// (Linux: `CALLER_ADDR1` seen from the reporting function), 0 if there
/// is none. If a function-graph user (function_graph, the profiler,
/// display-graph) hijacked that return, the slot holds
/// `return_to_handler`, if a kretprobe did, `rethook_trampoline`: the real
/// caller comes from the task's shadow stack or rethook stack, as the
/// unwinder and the function tracer find it, so a section never "starts
/// at" a trampoline.
#[inline(always)]
fn return_address_of(fp: u64) -> u64 {
    if fp == 0 || !fp.is_multiple_of(8) {
        return 0;
    }
    // SAFETY: the kernel is built with frame pointers: `fp` is the frame
    // of the function that called the wrapper, live below us on this
    // stack; its second word is that function's return address. A task's
    // first frame has a zero rbp, checked above.
    let ret = unsafe { core::ptr::read_volatile((fp + 8) as *const u64) };
    if !crate::arch::fgraph::is_return_trampoline(ret) {
        return ret;
    }
    match GRAPH_RET_ADDR.load(Ordering::Acquire) {
        0 => ret,
        f => {
            // SAFETY: only set_graph_ret_addr stores here, always a valid
            // fn of this type.
            let f = unsafe { core::mem::transmute::<usize, fn(u64, u64) -> u64>(f) };
            f(ret, fp + 8)
        }
    }
}

/// Runs `f` unless this CPU is already reporting, with interrupts as
/// they are: a preemption report, whose probes look at the interrupt flag
/// (an interrupt arriving meanwhile reports nothing).
#[inline(always)]
fn report_preempt(f: impl FnOnce()) {
    let cpu = crate::arch::cpu_id();
    if !IN_REPORT[cpu].swap(true, Ordering::Relaxed) {
        f();
        IN_REPORT[cpu].store(false, Ordering::Relaxed);
    }
}

/// Runs `f` with interrupts off unless this CPU is already reporting.
#[inline(always)]
fn report(f: impl FnOnce(usize)) {
    let flags = arch_irq::arch_local_irq_save();
    let cpu = crate::arch::cpu_id();
    if !IN_REPORT[cpu].swap(true, Ordering::Relaxed) {
        f(cpu);
        IN_REPORT[cpu].store(false, Ordering::Relaxed);
    }
    arch_irq::arch_local_irq_restore(flags);
}

extern "C" {
    fn trace_hardirqs_off_thunk();
    fn trace_hardirqs_on_thunk();
    fn trace_preempt_off_thunk();
    fn trace_preempt_on_thunk();
}
crate::irqflags_thunk!("trace_hardirqs_off_thunk", trace_hardirqs_off_caller);
crate::irqflags_thunk!("trace_hardirqs_on_thunk", trace_hardirqs_on_caller);
crate::irqflags_thunk!("trace_preempt_off_thunk", trace_preempt_off_caller);
crate::irqflags_thunk!("trace_preempt_on_thunk", trace_preempt_on_caller);

/// Interrupts went off, having been on if `flags` says so (Linux:
/// `trace_hardirqs_off`): fires `irq_disable` with the address the
/// wrapper was called from (`ip`) and that function's caller (read from
/// its frame `fp`), unless this CPU already reported them off.
extern "C" fn trace_hardirqs_off_caller(flags: u64, ip: u64, fp: u64) {
    if !arch_irq::arch_irqs_disabled_flags(flags) {
        let parent = return_address_of(fp);
        report(|cpu| {
            if !TRACING_IRQ_CPU[cpu].swap(true, Ordering::Relaxed) {
                tp::trace_irq_disable(ip, parent);
            }
        });
    }
}

/// Interrupts are about to go on if `flags` says so (Linux:
/// `trace_hardirqs_on`): fires `irq_enable` if this CPU reported them
/// off (or nobody listens to `irq_disable`, so there is no pairing to
/// keep).
extern "C" fn trace_hardirqs_on_caller(flags: u64, ip: u64, fp: u64) {
    if !arch_irq::arch_irqs_disabled_flags(flags) {
        let parent = return_address_of(fp);
        report(|cpu| {
            let paired = TRACING_IRQ_CPU[cpu].swap(false, Ordering::Relaxed);
            if paired || !tp::trace_irq_disable_enabled() {
                tp::trace_irq_enable(ip, parent);
            }
        });
    }
}

/// An interrupt arrived while interrupts were on: the CPU turned them off
/// (Linux: `irqentry_enter` -> `trace_hardirqs_off_finish`). Called by the
/// interrupt path, interrupts off.
#[inline(always)]
pub fn irqentry_hardirqs_off() {
    if irq_off_key_on!() {
        crate::call_thunk!(trace_hardirqs_off_thunk, X86_EFLAGS_IF);
    }
}

/// The interrupt is about to return to code that had interrupts on
/// (Linux: `irqentry_exit` -> `trace_hardirqs_on_prepare`).
#[inline(always)]
pub fn irqentry_hardirqs_on() {
    if irq_on_key_on!() {
        crate::call_thunk!(trace_hardirqs_on_thunk, X86_EFLAGS_IF);
    }
}

/// Preemption was just turned off (Linux: `preempt_count_add` ->
/// `preempt_latency_start`): `sched::preempt_disable` calls it when the
/// `preempt_disable` tracepoint is on.
#[inline(always)]
pub fn trace_preempt_off() {
    crate::call_thunk!(trace_preempt_off_thunk);
}

/// Preemption is about to be turned on (Linux: `preempt_count_sub` ->
/// `preempt_latency_stop`).
#[inline(always)]
pub fn trace_preempt_on() {
    crate::call_thunk!(trace_preempt_on_thunk);
}

/// Fires `preempt_disable` if the count just went from 0 to 1 in task
/// context (Linux: `preempt_count() == val`).
extern "C" fn trace_preempt_off_caller(_: u64, ip: u64, fp: u64) {
    if percpu::this_cpu_preempt_count() == 1 && percpu::this_cpu_irq_exception_depth() == 0 {
        let parent = return_address_of(fp);
        report_preempt(|| tp::trace_preempt_disable(ip, parent));
    }
}

/// Fires `preempt_enable` if the count is about to go from 1 to 0 in task
/// context.
extern "C" fn trace_preempt_on_caller(_: u64, ip: u64, fp: u64) {
    if percpu::this_cpu_preempt_count() == 1 && percpu::this_cpu_irq_exception_depth() == 0 {
        let parent = return_address_of(fp);
        report_preempt(|| tp::trace_preempt_enable(ip, parent));
    }
}
