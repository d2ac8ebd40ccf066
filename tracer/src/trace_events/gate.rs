//! A probe's gate: a one-field test in front of an event's probe, run
//! straight from the tracepoint's arguments (no Linux counterpart: Linux
//! builds the record, then tests it).
//!
//! When an event's only action is decided by one test of one of its fields
//! (a filter of one predicate; or, for an event whose records are dropped,
//! the filter of its one trigger), the kernel registers on the tracepoint
//! the event's `gate` (made per event by
//! [`define_event_records!`](crate::define_event_records)) in place of its
//! probe, with a [`ProbeGate`] as the data. The gate computes that one
//! field from the arguments (`field_bits`), tests it
//! ([`FieldTest::keep`]: a shift, a mask, a subtraction and a compare) and
//! returns when the test fails; a hit that passes goes on to the probe,
//! which decides everything again. The gate is compiled in this crate,
//! which the kernel's build does not instrument, so it has no ftrace site:
//! the reject path is a leaf that needs no stack frame, and the pass path
//! is a tail call.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::event_filter::FieldTest;

/// The data of an event's `gate` (`P`: the probe's function type).
#[derive(Debug)]
pub struct ProbeGate<P> {
    /// The test of the field at `test.offset`.
    pub test: FieldTest,
    /// The probe a hit that passes goes on to, and its data.
    pub probe: P,
    pub data: *mut (),
    /// A hit the test rejects is dropped only while all the bits of
    /// `need` are set in `*flags` (0: always); otherwise it goes on to the
    /// probe too. (For a trigger's gate: the event's soft-disable bit,
    /// which a trigger of another event may clear at any time.)
    flags: *const AtomicU32,
    need: u32,
}

impl<P> ProbeGate<P> {
    /// A gate that sends the hits `test` keeps, and all of them while
    /// `flags` lacks a bit of `need`, to `probe` with `data`.
    ///
    /// # Safety
    /// `flags` must stay valid for as long as the gate is.
    pub unsafe fn new(
        test: FieldTest,
        probe: P,
        data: *mut (),
        flags: *const AtomicU32,
        need: u32,
    ) -> ProbeGate<P> {
        ProbeGate {
            test,
            probe,
            data,
            flags,
            need,
        }
    }

    /// Whether a hit whose field has `bits` goes on to the probe.
    #[inline(always)]
    pub fn pass(&self, bits: u64) -> bool {
        if self.test.keep(bits) {
            return true;
        }
        // SAFETY: `flags` outlives the gate (`new`'s contract).
        let f = unsafe { &*self.flags }.load(Ordering::Relaxed);
        f & self.need != self.need
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_filter::Filter;
    use crate::trace_events::sched::sched_switch;
    use crate::trace_events::{comm_bytes, TaskInfo};
    use core::sync::atomic::AtomicUsize;

    static PASSED: AtomicUsize = AtomicUsize::new(0);

    fn probe(data: *mut (), _p: bool, _prev: &TaskInfo, next: &TaskInfo, _s: u32) {
        assert_eq!(data as usize, 0x1234);
        PASSED.fetch_add(next.pid as usize, Ordering::Relaxed);
    }

    /// The gate calls the probe exactly for the hits the filter keeps, and
    /// for all of them while a `need` bit is clear.
    #[test]
    fn gate_passes_what_the_filter_keeps() {
        let f = Filter::compile("next_pid == 7", sched_switch::FIELDS).unwrap();
        let flags = AtomicU32::new(0);
        for need in [0, 0x40] {
            // SAFETY: `flags` outlives the gate.
            let g = unsafe {
                ProbeGate::<sched_switch::Probe>::new(
                    *f.field_test().unwrap(),
                    probe,
                    0x1234 as *mut (),
                    &flags,
                    need,
                )
            };
            let data = &g as *const ProbeGate<sched_switch::Probe> as *mut ();
            let p = TaskInfo {
                comm: comm_bytes("a"),
                pid: 1,
                prio: 120,
            };
            for (set, pid, expect) in [(0x40, 7, 7), (0x40, 8, 0), (0, 7, 7), (0, 8, 8)] {
                flags.store(set, Ordering::Relaxed);
                let n = TaskInfo {
                    comm: comm_bytes("b"),
                    pid,
                    prio: 120,
                };
                PASSED.store(0, Ordering::Relaxed);
                sched_switch::gate(data, false, &p, &n, 0);
                let expect = if need == 0 && pid == 8 { 0 } else { expect };
                assert_eq!(
                    PASSED.load(Ordering::Relaxed),
                    expect,
                    "need {need} flags {set} pid {pid}"
                );
            }
        }
    }
}
