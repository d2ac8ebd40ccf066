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
    area.self_addr.store(area as *const PerCpu as usize, Ordering::Relaxed);
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

/// Another CPU's per-CPU area.
pub fn per_cpu(cpu: usize) -> &'static PerCpu {
    &PERCPU[cpu]
}

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
