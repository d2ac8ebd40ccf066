//! Device interrupts: the first traceable code an interrupt runs (Linux:
//! arch/x86/kernel/irq.c, whose entry functions are marked `__irq_entry`).
//!
//! `interrupt_dispatch` (traps.rs, never traced) counts the interrupt as
//! hardirq context and calls [`handle_irq`]. That function lives in its own
//! section, `.text.irqentry`, which the linker script brackets with
//! `__irqentry_text_start` / `__irqentry_text_end` as Linux's IRQENTRY_TEXT.
//! function_graph prints `==========>` before a call into that range and
//! `<==========` after its return, so an interrupt stands out in the graph
//! of the task it interrupted.
//!
//! Each kind of interrupt fires its tracepoints around its handler as
//! Linux's do: `irq_vectors:local_timer_entry/exit` (the APIC timer),
//! `call_function_entry/exit` and `reschedule_entry/exit` (the IPIs),
//! `irq:irq_handler_entry/exit` (device interrupts: the serial port).
use core::ops::Range;

use super::apic;
use crate::events::{irq, irq_vectors};

/// COM1's ISA interrupt line and its handler's name (Linux's 8250 driver
/// registers its handler as `ttyS0`).
const SERIAL_IRQ: i32 = 4;
const SERIAL_IRQ_NAME: &str = "ttyS0";
/// `irqreturn_t`'s IRQ_HANDLED, what irq_handler_exit reports.
const IRQ_HANDLED: i32 = 1;

/// Handles device interrupt `vector` (Linux: common_interrupt / the
/// sysvec handlers).
#[link_section = ".text.irqentry"]
#[inline(never)]
pub fn handle_irq(vector: u8) {
    match vector {
        apic::TIMER_VECTOR => {
            apic::eoi();
            irq_vectors::trace_local_timer_entry(vector as i32);
            crate::sched::timer_tick();
            irq_vectors::trace_local_timer_exit(vector as i32);
        }
        apic::SERIAL_VECTOR => {
            apic::eoi();
            irq::trace_irq_handler_entry(SERIAL_IRQ, SERIAL_IRQ_NAME);
            crate::console::serial_interrupt();
            irq::trace_irq_handler_exit(SERIAL_IRQ, IRQ_HANDLED);
        }
        apic::CALL_FUNCTION_VECTOR => {
            apic::eoi();
            irq_vectors::trace_call_function_entry(vector as i32);
            super::smp::call_function_interrupt();
            irq_vectors::trace_call_function_exit(vector as i32);
        }
        apic::RESCHEDULE_VECTOR => {
            apic::eoi();
            irq_vectors::trace_reschedule_entry(vector as i32);
            super::percpu::this_cpu_set_need_resched();
            irq_vectors::trace_reschedule_exit(vector as i32);
        }
        _ => {
            apic::eoi();
            crate::println!(
                "unexpected interrupt vector {vector} on cpu{}",
                super::cpu_id()
            );
        }
    }
}

extern "C" {
    static __irqentry_text_start: u8;
    static __irqentry_text_end: u8;
}

/// `[__irqentry_text_start, __irqentry_text_end)`: the addresses of the
/// interrupt entry functions.
pub fn irqentry_text() -> Range<u64> {
    // Taking the address of an extern static reads nothing: no unsafe.
    (&raw const __irqentry_text_start) as u64..(&raw const __irqentry_text_end) as u64
}
