//! The `preemptirq` system (Linux: include/trace/events/preemptirq.h):
//! interrupts turned off and on, preemption turned off and on. The
//! kernel's irq-flag wrappers and `preempt_disable`/`preempt_enable` fire
//! them (Linux: kernel/trace/trace_preemptirq.c) with the address they
//! were called from and that function's caller; the latency tracers
//! register their probes on them.
//!
//! A record keeps both addresses as 32-bit offsets from the start of the
//! kernel's text (`_stext`), which the kernel sets with [`set_stext`] at
//! boot.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::output::config::SymbolResolver;
use crate::output::format::write_sym;
use crate::output::seq::TraceSeq;

/// `_stext`: the start of the kernel's text.
static STEXT: AtomicU64 = AtomicU64::new(0);

/// Sets `_stext` (the kernel at boot; host tests).
pub fn set_stext(addr: u64) {
    STEXT.store(addr, Ordering::Relaxed);
}

/// `_stext`.
#[inline(always)]
pub fn stext() -> u64 {
    STEXT.load(Ordering::Relaxed)
}

/// `(s32)(ip - (unsigned long)_stext)`.
#[inline(always)]
pub fn text_offset(ip: u64) -> i32 {
    ip.wrapping_sub(stext()) as i32
}

/// `caller=%pS parent=%pS` of `_stext + caller_offs`, `_stext + parent_offs`.
pub fn write_caller_parent(
    out: &mut TraceSeq,
    syms: &dyn SymbolResolver,
    caller_offs: i32,
    parent_offs: i32,
) {
    let at = |offs: i32| stext().wrapping_add(offs as i64 as u64);
    out.push_str("caller=");
    write_sym(out, syms, at(caller_offs), true);
    out.push_str(" parent=");
    write_sym(out, syms, at(parent_offs), true);
}

/// The declarations of the `preemptirq` system, handed to `$stage`.
#[macro_export]
macro_rules! preemptirq_events {
    ($stage:ident) => {
        $crate::__event_classes! {
            $stage;
            system: preemptirq;

            // Every event records where it happened (Linux:
            // `DECLARE_EVENT_CLASS(preemptirq_template, ...)`).
            class preemptirq_template,
            (ip: u64, parent_ip: u64) {
                struct {
                    caller_offs: i32 = "s32",
                    parent_offs: i32 = "s32",
                }
                assign {
                    caller_offs: $crate::trace_events::preemptirq::text_offset(ip),
                    parent_offs: $crate::trace_events::preemptirq::text_offset(parent_ip),
                }
                print_fmt: "\"caller=%pS parent=%pS\", (void *)((unsigned long)(_stext) + REC->caller_offs), (void *)((unsigned long)(_stext) + REC->parent_offs)";
                print(e, out, syms) {
                    $crate::trace_events::preemptirq::write_caller_parent(
                        out,
                        syms,
                        e.caller_offs,
                        e.parent_offs,
                    );
                }
            }
            events {
                /// Interrupts were turned off (`trace_hardirqs_off`).
                event irq_disable, id 380;

                /// Interrupts are about to be turned on (`trace_hardirqs_on`).
                event irq_enable, id 381;

                /// Preemption was turned off (`trace_preempt_off`).
                event preempt_disable, id 382;

                /// Preemption is about to be turned on (`trace_preempt_on`).
                event preempt_enable, id 383;
            }
        }
    };
}

use crate::define_event_records;
preemptirq_events!(define_event_records);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_from_stext() {
        // One test sets STEXT (a global), so everything about it is here.
        set_stext(0xffff_ffff_8020_0000);
        assert_eq!(text_offset(0xffff_ffff_8020_1234), 0x1234);
        let rec = irq_disable::assign(0, 0xffff_ffff_8020_0010, 0xffff_ffff_8021_0000);
        assert_eq!(rec.caller_offs, 0x10);
        assert_eq!(rec.parent_offs, 0x1_0000);
        let f = irq_disable::FIELDS;
        assert_eq!(
            (f[0].name, f[0].ty, f[0].offset, f[0].size, f[0].signed),
            ("caller_offs", "s32", 8, 4, true)
        );
        assert_eq!(
            (f[1].name, f[1].ty, f[1].offset, f[1].size, f[1].signed),
            ("parent_offs", "s32", 12, 4, true)
        );
        let mut out = TraceSeq::new();
        write_caller_parent(&mut out, &crate::output::config::NoSymbols, 0x10, -16);
        assert_eq!(
            out.as_str(),
            Some("caller=0xffffffff80200010 parent=0xffffffff801ffff0")
        );
    }
}
