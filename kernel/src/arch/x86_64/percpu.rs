//! Per-CPU data reached through the GS base register (Linux:
//! arch/x86/kernel/setup_percpu.c). Each CPU points GS at its own [`PerCpu`],
//! so `gs:[8]` is "my CPU number" in a single instruction, with no lock.
//!
//! The context word ([`PerCpu::context`]) is kept up to date by the code
//! that changes the context, as Linux keeps its per-CPU `preempt_count`
//! and `current_task`: `preempt_disable`/`preempt_enable` change its
//! preempt count, the interrupt entry and exit its hardirq flag, the
//! scheduler its need-resched flag and, at each task switch, its pid.
//! Readers (the tracer's event header, the scheduler's "may I preempt?")
//! then read the context with one gs-relative load instead of sampling
//! several fields. It is laid out as bytes 2-7 of Linux's 8-byte
//! `struct trace_entry` (flags, preempt_count, pid), so that the tracer
//! turns it into an event header with an add and an or; this module does
//! not know about tracing, only the bit values, which are Linux's.
use core::arch::asm;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

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
    /// The context word, written only by this CPU, one instruction at a
    /// time (see the module docs), little-endian:
    /// - bits 0-15: zero;
    /// - bits 16-23: the context flags [`CTX_NEED_RESCHED`] (the running
    ///   task should give up the CPU at the next chance; Linux:
    ///   TIF_NEED_RESCHED) and [`CTX_HARDIRQ`] (a hardware interrupt is
    ///   being handled; Linux: `preempt_count() & HARDIRQ_MASK`);
    /// - bits 24-31: the preempt count: preemption is off while it is
    ///   non-zero (Linux: the `PREEMPT_MASK` byte of `preempt_count`);
    /// - bits 32-63: the pid of the running task (Linux: `current->pid`).
    ///
    /// The kernel has no softirqs and no NMI handler of its own, so
    /// Linux's SOFTIRQ and NMI fields have no counterpart here.
    context: AtomicU64,
    /// The running task (owned by the scheduler; a `*const Task`).
    pub current: AtomicUsize,
    /// The ftrace recursion bits (Linux: current->trace_recursion, per context).
    pub trace_recursion: AtomicU32,
}

/// [`PerCpu::context`]'s flag: the running task should be rescheduled
/// (the value of Linux's `TRACE_FLAG_NEED_RESCHED`, as the flag byte is
/// bits 16-23 of the word).
pub const CTX_NEED_RESCHED: u8 = 0x04;
/// [`PerCpu::context`]'s flag: in a hardware interrupt (the value of
/// Linux's `TRACE_FLAG_HARDIRQ`).
pub const CTX_HARDIRQ: u8 = 0x08;
/// Where the flag byte, the preempt count and the pid sit in the word.
pub const CTX_FLAGS_SHIFT: u32 = 16;
pub const CTX_PREEMPT_SHIFT: u32 = 24;
pub const CTX_PID_SHIFT: u32 = 32;
const CTX_FLAGS_BYTE: usize = core::mem::offset_of!(PerCpu, context) + 2;
const CTX_PREEMPT_BYTE: usize = core::mem::offset_of!(PerCpu, context) + 3;
const CTX_PID_DWORD: usize = core::mem::offset_of!(PerCpu, context) + 4;

impl PerCpu {
    const fn new() -> Self {
        PerCpu {
            self_addr: AtomicUsize::new(0),
            cpu: AtomicUsize::new(0),
            irq_depth: AtomicU32::new(0),
            exception_depth: AtomicU32::new(0),
            context: AtomicU64::new(0),
            current: AtomicUsize::new(0),
            trace_recursion: AtomicU32::new(0),
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

/// This CPU's preempt count (the count byte of the context word).
#[inline(always)]
pub fn this_cpu_preempt_count() -> u32 {
    let v: u32;
    // SAFETY: GS points at this CPU's PerCpu (set by `init` before any
    // use); the offset is the preempt count's byte of `context`.
    unsafe {
        asm!("movzx {v:e}, byte ptr gs:[{off}]", v = out(reg) v, off = const CTX_PREEMPT_BYTE,
             options(nostack, preserves_flags, readonly))
    };
    v
}

/// This CPU's context word (see [`PerCpu::context`]) in one load.
#[inline(always)]
pub fn this_cpu_context() -> u64 {
    let v: u64;
    // SAFETY: GS points at this CPU's PerCpu; the offset is `context`'s.
    unsafe {
        asm!("mov {v}, gs:[{off}]", v = out(reg) v, off = const core::mem::offset_of!(PerCpu, context),
             options(nostack, preserves_flags, readonly))
    };
    v
}

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

/// True if the running task should give up the CPU (Linux:
/// `need_resched()`).
#[inline(always)]
pub fn this_cpu_need_resched() -> bool {
    let flags: u8;
    // SAFETY: GS points at this CPU's PerCpu; the offset is the flag
    // byte of `context`.
    unsafe {
        asm!("mov {v}, byte ptr gs:[{off}]", v = out(reg_byte) flags, off = const CTX_FLAGS_BYTE,
             options(nostack, preserves_flags, readonly))
    };
    flags & CTX_NEED_RESCHED != 0
}

/// Sets context flags in one instruction (`or byte ptr gs:[..]`): one
/// instruction cannot be split by this CPU's interrupts, and no other
/// CPU writes this CPU's area.
#[inline(always)]
fn this_cpu_ctx_flags_set(bits: u8) {
    // SAFETY: GS points at this CPU's PerCpu; the instruction writes only
    // the flag byte of `context`.
    unsafe {
        asm!("or byte ptr gs:[{off}], {v}", v = in(reg_byte) bits, off = const CTX_FLAGS_BYTE,
             options(nostack))
    };
}

/// Clears context flags in one instruction (see [`this_cpu_ctx_flags_set`]).
#[inline(always)]
fn this_cpu_ctx_flags_clear(bits: u8) {
    // SAFETY: as in `this_cpu_ctx_flags_set`.
    unsafe {
        asm!("and byte ptr gs:[{off}], {v}", v = in(reg_byte) !bits, off = const CTX_FLAGS_BYTE,
             options(nostack))
    };
}

/// Asks for a reschedule of this CPU's running task (Linux:
/// `set_tsk_need_resched` + `set_preempt_need_resched`).
#[inline(always)]
pub fn this_cpu_set_need_resched() {
    this_cpu_ctx_flags_set(CTX_NEED_RESCHED);
}

/// The reschedule is being done (Linux: `clear_tsk_need_resched` +
/// `clear_preempt_need_resched` in `__schedule`).
#[inline(always)]
pub fn this_cpu_clear_need_resched() {
    this_cpu_ctx_flags_clear(CTX_NEED_RESCHED);
}

/// Interrupt entry: one more level of hardware interrupt (Linux:
/// `irq_enter_rcu`'s `preempt_count_add(HARDIRQ_OFFSET)`). The depth is
/// counted in `irq_depth`; the context word carries whether it is
/// non-zero. Set after the count goes up, so an interrupt nested in
/// between sets and clears it for itself and this one sets it again.
#[inline(always)]
pub fn this_cpu_hardirq_enter() {
    this_cpu().irq_depth.fetch_add(1, Ordering::Relaxed);
    this_cpu_ctx_flags_set(CTX_HARDIRQ);
}

/// Interrupt exit: cleared only when the outermost interrupt leaves, and
/// after the count went down, so an interrupt nested in between leaves the
/// flag clear as this one does.
#[inline(always)]
pub fn this_cpu_hardirq_exit() {
    if this_cpu().irq_depth.fetch_sub(1, Ordering::Relaxed) == 1 {
        this_cpu_ctx_flags_clear(CTX_HARDIRQ);
    }
}

/// The task switch: `task` (a `*const Task`) with pid `pid` runs now on
/// this CPU (Linux: `raw_cpu_write(current_task, next)`). Interrupts are
/// off, so the two stores are seen together by this CPU's code.
#[inline(always)]
pub fn this_cpu_set_current(task: usize, pid: u32) {
    this_cpu().current.store(task, Ordering::Relaxed);
    // SAFETY: GS points at this CPU's PerCpu; the instruction writes only
    // the pid half of `context`.
    unsafe {
        asm!("mov dword ptr gs:[{off}], {v:e}", v = in(reg) pid, off = const CTX_PID_DWORD,
             options(nostack, preserves_flags))
    };
}

/// `preempt_count += 1` in one instruction (Linux: `__preempt_count_add`,
/// `addl $1, %gs:__preempt_count`), for the tracer's
/// `preempt_disable_notrace`.
#[inline(always)]
pub fn this_cpu_preempt_inc() {
    // SAFETY: GS points at this CPU's PerCpu; the instruction writes only
    // the preempt count's byte, which no other CPU writes, and one
    // instruction is atomic with respect to this CPU's interrupts.
    unsafe { asm!("add byte ptr gs:[{off}], 1", off = const CTX_PREEMPT_BYTE, options(nostack)) };
}

/// `preempt_count -= 1` in one instruction (see [`this_cpu_preempt_inc`]).
#[inline(always)]
pub fn this_cpu_preempt_dec() {
    // SAFETY: as in `this_cpu_preempt_inc`.
    unsafe { asm!("sub byte ptr gs:[{off}], 1", off = const CTX_PREEMPT_BYTE, options(nostack)) };
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
