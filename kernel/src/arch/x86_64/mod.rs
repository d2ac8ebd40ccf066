//! x86_64 support (Linux: arch/x86/). Boot, descriptor tables, interrupts,
//! paging, the local and I/O APICs, SMP start-up, the TSC clock and the
//! context switch.
pub mod acpi;
pub mod apic;
pub mod boot;
pub mod entry;
pub mod fgraph;
pub mod ftrace;
pub mod gdt;
pub mod idt;
pub mod irq;
pub mod irqflags;
pub mod jump_label;
pub mod kprobes;
pub mod paging;
pub mod percpu;
pub mod serial;
pub mod smp;
pub mod switch;
pub mod text_poke;
pub mod traps;
pub mod tsc;

use core::arch::asm;

pub use percpu::{cpu_id, nr_cpus};
pub use smp::{apic_id, smp_call_function};

/// The exit status QEMU reports (through qemu.sh) when the kernel panics.
pub const PANIC_EXIT: u32 = 101;

extern "C" {
    static __text_start: u8;
    static __text_end: u8;
}

/// The start of the kernel's text (Linux: `_stext`).
pub fn stext() -> u64 {
    // Taking the address of an extern static reads nothing.
    (&raw const __text_start) as u64
}

/// The end of the kernel's text (Linux: `_etext`).
pub fn etext() -> u64 {
    // Taking the address of an extern static reads nothing.
    (&raw const __text_end) as u64
}

/// True if `addr` is in the kernel's text (Linux: core_kernel_text).
pub fn core_kernel_text(addr: u64) -> bool {
    addr >= stext() && addr < etext()
}

/// True if interrupts are enabled on this CPU.
#[inline(always)]
pub fn irqs_enabled() -> bool {
    !irqflags::arch_irqs_disabled()
}

/// Ends QEMU through the isa-debug-exit device; qemu.sh turns this into its
/// own exit status `code`.
pub fn exit_qemu(code: u32) -> ! {
    // SAFETY: port 0xf4 is QEMU's isa-debug-exit device (see qemu.sh).
    unsafe {
        ::x86_64::instructions::port::Port::<u32>::new(0xf4).write(code);
    }
    // Not under QEMU with that device: stop here.
    loop {
        // SAFETY: interrupts off and halt forever.
        unsafe { asm!("cli; hlt", options(nomem, nostack)) };
    }
}

/// An address inside the function this is inlined into (Linux:
/// `_THIS_IP_`): `trace_printk!` records it so that the message prints with
/// its caller's name. Always inlined, so the address is the caller's.
#[inline(always)]
pub fn this_ip() -> u64 {
    let ip: u64;
    // SAFETY: reads the instruction pointer only.
    unsafe { asm!("lea {}, [rip]", out(reg) ip, options(nomem, nostack, preserves_flags)) };
    ip
}

/// The return address of the function this is inlined into (Linux:
/// `_RET_IP_`, `__builtin_return_address(0)`), read from its frame: the
/// kernel is built with frame pointers, so `[rbp + 8]` holds it.
#[inline(always)]
pub fn return_address() -> u64 {
    let ip: u64;
    // SAFETY: with frame pointers every function's rbp points at its saved
    // rbp, and the return address is the word above; reading it changes
    // nothing.
    unsafe { asm!("mov {}, [rbp + 8]", out(reg) ip, options(nostack, preserves_flags, readonly)) };
    ip
}

/// Reads the time-stamp counter.
#[inline(always)]
pub fn rdtsc() -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: rdtsc has no side effects.
    unsafe {
        asm!("rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags))
    };
    ((hi as u64) << 32) | lo as u64
}

/// Writes a model-specific register.
///
/// # Safety
/// The MSR and value must be valid; MSRs change how the CPU behaves.
pub unsafe fn wrmsr(msr: u32, value: u64) {
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!("wrmsr", in("ecx") msr, in("eax") value as u32, in("edx") (value >> 32) as u32,
             options(nostack))
    };
}

/// Reads the frame pointer of the calling function.
#[inline(always)]
pub fn frame_pointer() -> u64 {
    let rbp: u64;
    // SAFETY: reads a register.
    unsafe { asm!("mov {}, rbp", out(reg) rbp, options(nomem, nostack, preserves_flags)) };
    rbp
}
