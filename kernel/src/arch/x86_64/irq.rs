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
use core::ops::Range;
use core::sync::atomic::Ordering;

use super::apic;
use super::percpu::this_cpu;

/// Handles device interrupt `vector` (Linux: common_interrupt / the
/// sysvec handlers).
#[link_section = ".text.irqentry"]
#[inline(never)]
pub fn handle_irq(vector: u8) {
    match vector {
        apic::TIMER_VECTOR => {
            apic::eoi();
            crate::sched::timer_tick();
        }
        apic::SERIAL_VECTOR => {
            apic::eoi();
            crate::console::serial_interrupt();
        }
        apic::CALL_FUNCTION_VECTOR => {
            apic::eoi();
            super::smp::call_function_interrupt();
        }
        apic::RESCHEDULE_VECTOR => {
            apic::eoi();
            this_cpu().need_resched.store(1, Ordering::Relaxed);
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
