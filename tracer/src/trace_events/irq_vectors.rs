//! The `irq_vectors` system (Linux: arch/x86/include/asm/trace/irq_vectors.h):
//! the local APIC's own interrupts, each an `_entry`/`_exit` pair around
//! its handler with the vector number (`DEFINE_IRQ_VECTOR_EVENT`):
//! `local_timer` the APIC timer, `call_function` the IPI that runs a
//! function on other CPUs (`smp_call_function`), `reschedule` the IPI that
//! asks another CPU to schedule.

/// The declarations of the `irq_vectors` system, handed to `$stage`.
#[macro_export]
macro_rules! irq_vectors_events {
    ($stage:ident) => {
        $crate::__event_classes! {
            $stage;
            system: irq_vectors;

            // Every vector event records only the vector (Linux:
            // `DECLARE_EVENT_CLASS(x86_irq_vector, ...)`, and
            // `DEFINE_IRQ_VECTOR_EVENT` makes each `_entry`/`_exit` pair).
            class x86_irq_vector,
            (vector: i32) {
                struct {
                    vector: i32 = "int",
                }
                assign {
                    vector: vector,
                }
                print_fmt: "\"vector=%d\", REC->vector";
                print(e, out, syms) {
                    let _ = write!(out, "vector={}", e.vector);
                }
            }
            events {
                /// The local APIC timer interrupt starts (`sysvec_apic_timer_interrupt`).
                event local_timer_entry, id 330;

                /// The local APIC timer interrupt ends.
                event local_timer_exit, id 331;

                /// A function-call IPI starts (`sysvec_call_function`).
                event call_function_entry, id 332;

                /// A function-call IPI ends.
                event call_function_exit, id 333;

                /// A reschedule IPI starts (`sysvec_reschedule_ipi`).
                event reschedule_entry, id 334;

                /// A reschedule IPI ends.
                event reschedule_exit, id 335;
            }
        }
    };
}

use crate::define_event_records;
irq_vectors_events!(define_event_records);
