//! The interrupt flag (Linux: arch/x86/include/asm/irqflags.h): `cli`,
//! `sti`, reading RFLAGS, and the idle `sti; hlt`. These are the raw
//! operations; generic code uses `crate::irqflags`, which reports every
//! change to the latency tracers and the `preemptirq` events.
//!
//! `cli` and `sti` are compiler barriers (no `nomem`, as Linux's
//! `"memory"` clobber): what a critical section reads and writes stays
//! inside it.
use core::arch::asm;

/// RFLAGS.IF, set while interrupts are enabled (Linux: `X86_EFLAGS_IF`).
pub const X86_EFLAGS_IF: u64 = 1 << 9;

/// RFLAGS (Linux: `native_save_fl`).
#[inline(always)]
pub fn arch_local_save_flags() -> u64 {
    let flags: u64;
    // SAFETY: reads RFLAGS only.
    unsafe { asm!("pushfq; pop {}", out(reg) flags, options(nomem, preserves_flags)) };
    flags
}

/// `cli` (Linux: `native_irq_disable`).
#[inline(always)]
pub fn arch_local_irq_disable() {
    // SAFETY: clears IF; a compiler barrier.
    unsafe { asm!("cli", options(nostack)) };
}

/// `sti` (Linux: `native_irq_enable`).
#[inline(always)]
pub fn arch_local_irq_enable() {
    // SAFETY: sets IF; a compiler barrier.
    unsafe { asm!("sti", options(nostack)) };
}

/// Reads RFLAGS and disables interrupts (Linux: `arch_local_irq_save`).
#[inline(always)]
pub fn arch_local_irq_save() -> u64 {
    let flags: u64;
    // SAFETY: reads RFLAGS and clears IF; a compiler barrier.
    unsafe { asm!("pushfq; pop {}; cli", out(reg) flags, options(preserves_flags)) };
    flags
}

/// Enables interrupts if `flags` had them enabled (Linux:
/// `arch_local_irq_restore`).
#[inline(always)]
pub fn arch_local_irq_restore(flags: u64) {
    if !arch_irqs_disabled_flags(flags) {
        arch_local_irq_enable();
    }
}

/// True if `flags` has interrupts disabled (Linux: `arch_irqs_disabled_flags`).
#[inline(always)]
pub fn arch_irqs_disabled_flags(flags: u64) -> bool {
    flags & X86_EFLAGS_IF == 0
}

/// True if interrupts are disabled on this CPU (Linux: `arch_irqs_disabled`).
#[inline(always)]
pub fn arch_irqs_disabled() -> bool {
    arch_irqs_disabled_flags(arch_local_save_flags())
}

/// Enables interrupts and halts until the next one (Linux:
/// `native_safe_halt`): `sti` takes effect after the next instruction, so
/// no interrupt is lost between the two.
#[inline(always)]
pub fn arch_safe_halt() {
    // SAFETY: `sti; hlt` is the standard race-free idle sequence.
    unsafe { asm!("sti; hlt", options(nostack)) };
}

/// Defines the assembly entry `$thunk`, which calls the Rust function
/// `$target(rdi, ip, fp)` and preserves every register (Linux:
/// arch/x86/entry/thunk_64.S, `THUNK trace_hardirqs_on_thunk, ...`): `rdi`
/// as the caller left it, `ip` the thunk's return address (where it was
/// called from) and `fp` the caller's frame pointer. A call site of a
/// thunk ([`call_thunk!`]) clobbers no register, so the code around it is
/// compiled as if the call were not there: the static branch in front of
/// it costs its NOP and nothing else.
#[macro_export]
macro_rules! irqflags_thunk {
    ($thunk:literal, $target:path) => {
        core::arch::global_asm!(
            concat!(".pushsection .text.", $thunk, ", \"ax\""),
            concat!(".globl ", $thunk),
            concat!($thunk, ":"),
            "push rbp",
            "mov rbp, rsp",
            "push rax",
            "push rcx",
            "push rdx",
            "push rsi",
            "push rdi",
            "push r8",
            "push r9",
            "push r10",
            "push r11",
            "and rsp, -16",
            "mov rsi, [rbp + 8]",
            "mov rdx, [rbp]",
            "call {target}",
            "lea rsp, [rbp - 72]",
            "pop r11",
            "pop r10",
            "pop r9",
            "pop r8",
            "pop rdi",
            "pop rsi",
            "pop rdx",
            "pop rcx",
            "pop rax",
            "pop rbp",
            "ret",
            ".popsection",
            target = sym $target,
        );
    };
}

/// Calls a thunk made by [`irqflags_thunk!`] with `$arg` in `rdi` (or
/// whatever `rdi` holds, without one); no register is clobbered (the
/// arithmetic flags are).
#[macro_export]
macro_rules! call_thunk {
    ($thunk:path) => {
        // SAFETY: as below.
        unsafe { core::arch::asm!("call {t}", t = sym $thunk) }
    };
    ($thunk:path, $arg:expr) => {{
        // The argument is evaluated outside the unsafe block, so a caller
        // cannot slip unsafe code into it.
        let arg: u64 = $arg;
        // SAFETY: the thunk preserves every general register and the
        // stack (it aligns its own); it may read and write memory, as
        // this asm block is allowed to.
        unsafe { core::arch::asm!("call {t}", t = sym $thunk, in("rdi") arg) }
    }};
}
