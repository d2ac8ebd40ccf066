//! Architecture-specific code behind one module, as in Hermit's `arch/mod.rs`:
//! the rest of the kernel calls `crate::arch::…` and never names x86_64
//! directly (the module is private). The list below is the arch contract on
//! one screen: everything generic code may use, by what it is for. Another
//! architecture would provide the same names.
mod x86_64;

// Boot and set-up, run once by `kernel_main`: firmware tables, descriptor
// tables, memory, interrupt controllers, the other CPUs, the clock.
pub use self::x86_64::{acpi, apic, boot, gdt, idt, paging, smp, tsc};
// Which CPU this is, how many there are, per-CPU data, and cross-CPU calls.
pub use self::x86_64::{apic_id, cpu_id, nr_cpus, percpu, smp_call_function};
// The interrupt flag's raw operations (generic code uses crate::irqflags,
// which reports them to tracing), time stamps, frame pointer and
// instruction pointer, stopping the machine.
pub use self::x86_64::irqflags;
pub use self::x86_64::{
    core_kernel_text, exit_qemu, frame_pointer, irqs_enabled, rdtsc, return_address, stext,
    this_ip, PANIC_EXIT,
};
// Device interrupts, exceptions (int3 hook, backtraces) and the console's
// UART.
pub use self::x86_64::{irq, serial, traps};
// The context switch.
pub use self::x86_64::switch;
// Tracing's hardware side: call-site bytes and `ftrace_caller`, the
// function_graph return trampoline, and live code patching.
pub use self::x86_64::{fgraph, ftrace, text_poke};
// Static keys' sites: the asm goto, their bytes, patching them.
pub use self::x86_64::jump_label;
// Kprobes' hardware side: the saved registers, decoding, out-of-line
// slots, the breakpoint's bytes, emulation and single-stepping.
pub use self::x86_64::{entry, kprobes};
