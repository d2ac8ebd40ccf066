//! Per-CPU data reached through the GS base register (Linux:
//! arch/x86/kernel/setup_percpu.c). Each CPU points GS at its own [`PerCpu`],
//! so `gs:[8]` is "my CPU number" in a single instruction, with no lock.
use core::arch::asm;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// The most CPUs the kernel supports.
pub const MAX_CPUS: usize = 64;

const IA32_GS_BASE: u32 = 0xc000_0101;

#[repr(C)]
pub struct PerCpu {
    /// `gs:[0]`: the address of this structure.
    self_addr: AtomicUsize,
    /// `gs:[8]`: this CPU's number, 0 for the boot CPU.
    cpu: AtomicUsize,
    /// Nesting depth of hardware interrupts (0: task context).
    pub irq_depth: AtomicU32,
    /// Nesting depth of exceptions (int3, faults); NMI-like context for the
    /// tracer's recursion guard.
    pub exception_depth: AtomicU32,
    /// Preemption is off while this is non-zero (Linux: preempt_count).
    pub preempt_count: AtomicU32,
    /// The running task (owned by the scheduler; a `*const Task`).
    pub current: AtomicUsize,
    /// The ftrace recursion bits (Linux: current->trace_recursion, per context).
    pub trace_recursion: AtomicU32,
    /// Set when the running task should give up the CPU at the next chance.
    pub need_resched: AtomicU32,
}

impl PerCpu {
    const fn new() -> Self {
        PerCpu {
            self_addr: AtomicUsize::new(0),
            cpu: AtomicUsize::new(0),
            irq_depth: AtomicU32::new(0),
            exception_depth: AtomicU32::new(0),
            preempt_count: AtomicU32::new(0),
            current: AtomicUsize::new(0),
            trace_recursion: AtomicU32::new(0),
            need_resched: AtomicU32::new(0),
        }
    }
}

static PERCPU: [PerCpu; MAX_CPUS] = [const { PerCpu::new() }; MAX_CPUS];

/// The number of CPUs that are online.
static NR_CPUS: AtomicUsize = AtomicUsize::new(1);

/// Points this CPU's GS base at its per-CPU area. Called first thing on each CPU.
pub fn init(cpu: usize) {
    let area = &PERCPU[cpu];
    area.self_addr
        .store(area as *const PerCpu as usize, Ordering::Relaxed);
    area.cpu.store(cpu, Ordering::Relaxed);
    // SAFETY: GS is only used for per-CPU data in this kernel (no user mode,
    // no swapgs), and the area is a static that lives forever.
    unsafe { super::wrmsr(IA32_GS_BASE, area as *const PerCpu as u64) };
}

/// This CPU's number.
#[inline(always)]
pub fn cpu_id() -> usize {
    let cpu: usize;
    // SAFETY: GS points at this CPU's PerCpu (set by `init`); offset 8 is `cpu`.
    unsafe { asm!("mov {}, gs:[8]", out(reg) cpu, options(nostack, preserves_flags, readonly)) };
    cpu
}

/// This CPU's per-CPU area: one load through GS (`gs:[0]` holds its address).
#[inline(always)]
pub fn this_cpu() -> &'static PerCpu {
    let addr: usize;
    // SAFETY: GS points at this CPU's PerCpu (set by `init` before any use);
    // offset 0 is `self_addr`, the address of that static.
    unsafe { asm!("mov {}, gs:[0]", out(reg) addr, options(nostack, preserves_flags, readonly)) };
    // SAFETY: `addr` is the address of an element of the static PERCPU array.
    unsafe { &*(addr as *const PerCpu) }
}

/// One gs-relative instruction on a field of this CPU's [`PerCpu`], with no
/// load of the area's address first (Linux: `this_cpu_read`,
/// `__this_cpu_add`/`raw_cpu_add`, which are `mov`/`add` on `%gs:field`).
/// A read-modify-write here has no `lock` prefix: only this CPU writes its
/// own area, and one instruction is atomic with respect to its interrupts.
macro_rules! gs_field_ops {
    ($(#[$m:meta])* read $name:ident: $field:ident, $ty:ty, $w:literal) => {
        $(#[$m])*
        #[inline(always)]
        pub fn $name() -> $ty {
            let v: $ty;
            // SAFETY: GS points at this CPU's PerCpu (set by `init` before
            // any use) and the offset is that of the field, of this size.
            unsafe {
                asm!(concat!("mov {v", $w, "}, ", "gs:[{off}]"), v = out(reg) v,
                     off = const core::mem::offset_of!(PerCpu, $field),
                     options(nostack, preserves_flags, readonly))
            };
            v
        }
    };
    ($(#[$m:meta])* $insn:literal $name:ident: $field:ident, $ty:ty, $w:literal) => {
        $(#[$m])*
        #[inline(always)]
        pub fn $name(v: $ty) {
            // SAFETY: as for the reads; the instruction writes only the
            // field, which no other CPU writes.
            unsafe {
                asm!(concat!($insn, " gs:[{off}], {v", $w, "}"), v = in(reg) v,
                     off = const core::mem::offset_of!(PerCpu, $field),
                     options(nostack))
            };
        }
    };
}

gs_field_ops!(
    /// This CPU's `preempt_count`.
    read this_cpu_preempt_count: preempt_count, u32, ":e");
gs_field_ops!(
    /// `irq_depth` (low half) and `exception_depth` (high half) in one
    /// load: 0 means task context.
    read this_cpu_irq_exception_depth: irq_depth, u64, "");
gs_field_ops!(
    /// The running task (a `*const Task`, 0 before the scheduler runs).
    read this_cpu_current: current, usize, "");
gs_field_ops!(
    /// This CPU's ftrace recursion bits.
    read this_cpu_trace_recursion: trace_recursion, u32, ":e");
gs_field_ops!(
    /// This CPU's need_resched flag.
    read this_cpu_need_resched: need_resched, u32, ":e");
/// `preempt_count += 1` in one instruction (Linux: `__preempt_count_add`,
/// `addl $1, %gs:__preempt_count`), for the tracer's
/// `preempt_disable_notrace`.
#[inline(always)]
pub fn this_cpu_preempt_inc() {
    // SAFETY: GS points at this CPU's PerCpu; the instruction writes only
    // `preempt_count`, which no other CPU writes, and one instruction is
    // atomic with respect to this CPU's interrupts.
    unsafe {
        asm!("add dword ptr gs:[{off}], 1", off = const core::mem::offset_of!(PerCpu, preempt_count),
             options(nostack))
    };
}

/// `preempt_count -= 1` in one instruction (see [`this_cpu_preempt_inc`]).
#[inline(always)]
pub fn this_cpu_preempt_dec() {
    // SAFETY: as in `this_cpu_preempt_inc`.
    unsafe {
        asm!("sub dword ptr gs:[{off}], 1", off = const core::mem::offset_of!(PerCpu, preempt_count),
             options(nostack))
    };
}

gs_field_ops!(
    /// Sets the ftrace recursion bits.
    "mov" this_cpu_set_trace_recursion: trace_recursion, u32, ":e");
gs_field_ops!(
    /// Clears recursion bits: `trace_recursion &= v`.
    "and" this_cpu_and_trace_recursion: trace_recursion, u32, ":e");

// `this_cpu_irq_exception_depth` reads both depths as one u64.
const _: () = assert!(
    core::mem::offset_of!(PerCpu, exception_depth) == core::mem::offset_of!(PerCpu, irq_depth) + 4
);

/// The number of online CPUs.
#[inline(always)]
pub fn nr_cpus() -> usize {
    NR_CPUS.load(Ordering::Acquire)
}

pub(super) fn set_nr_cpus(n: usize) {
    NR_CPUS.store(n, Ordering::Release);
}

/// True while this CPU is handling a hardware interrupt.
#[inline(always)]
pub fn in_irq() -> bool {
    this_cpu().irq_depth.load(Ordering::Relaxed) != 0
}
