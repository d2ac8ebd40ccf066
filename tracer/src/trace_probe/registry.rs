//! The events that probe definitions make, by type id, so that the one
//! printer (`crate::output`) and `ktrace report` find them as they find
//! the declared events (Linux: `register_trace_event` giving a dynamic
//! event its type and `ftrace_find_event`).
//!
//! Each new event takes the next id from [`FIRST_ID`]; its
//! [`ProbeEvent`] (the event's `TraceEventCall` and the probe whose
//! arguments its records hold) is published in a slot and never freed or
//! reused: records of a removed event may still sit in a buffer, and a
//! reader must still be able to print them. That costs a few hundred bytes
//! per definition ever made; after [`MAX_PROBE_EVENTS`] of them new
//! definitions are refused with `ENODEV` (what Linux returns when it runs
//! out of event types).

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use super::TraceProbe;
use crate::errno::Errno;
use crate::event_field::EventField;
use crate::output::config::SymbolResolver;
use crate::output::seq::TraceSeq;
use crate::trace_events::TraceEventCall;

/// The first id a probe event gets (above every declared event's).
pub const FIRST_ID: u16 = crate::trace_events::FIRST_DYNAMIC_ID;
/// How many probe events can ever be made.
pub const MAX_PROBE_EVENTS: usize = crate::trace_events::MAX_DYNAMIC_EVENTS;

/// A probe event: its description and the probe its records follow.
#[derive(Debug)]
pub struct ProbeEvent {
    pub call: TraceEventCall,
    pub probe: TraceProbe,
}

static SLOTS: [AtomicPtr<ProbeEvent>; MAX_PROBE_EVENTS] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_PROBE_EVENTS];
static NEXT: AtomicU32 = AtomicU32::new(0);

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The printer of every probe event: finds the event by the record's type.
fn print_probe_record(rec: &[u8], out: &mut TraceSeq, syms: &dyn SymbolResolver) {
    let Some(id) = rec.get(0..2).map(|b| u16::from_le_bytes([b[0], b[1]])) else {
        return;
    };
    if let Some(e) = find(id) {
        super::print::print_event(out, &e.probe, rec, syms);
    }
}

/// Makes the event for `probe` (its group, name, fields and print fmt)
/// with a new id, and publishes it.
pub fn register(probe: TraceProbe) -> Result<&'static ProbeEvent, Errno> {
    let n = NEXT.fetch_add(1, Ordering::Relaxed) as usize;
    if n >= MAX_PROBE_EVENTS {
        NEXT.store(MAX_PROBE_EVENTS as u32, Ordering::Relaxed);
        return Err(Errno::ENODEV);
    }
    // An array's C type `u8[3]` is shown as `u8 name[3]` (Linux's
    // `f_show` splits the type at its `[`).
    let fields: Vec<EventField> = super::print::fields(&probe)
        .into_iter()
        .map(|(ty, name, offset, size, signed)| {
            // (`__data_loc char[]` keeps its `[]`.)
            let split = ty
                .split_once('[')
                .and_then(|(b, n)| Some((b, n.trim_end_matches(']').parse::<u32>().ok()?)));
            let (ty, array) = match split {
                Some((base, n)) => (String::from(base), Some(n)),
                None => (ty, None),
            };
            EventField {
                ty: leak(ty),
                name: leak(name),
                offset,
                size,
                signed,
                array,
            }
        })
        .collect();
    let call = TraceEventCall {
        system: leak(probe.group.clone()),
        name: leak(probe.event.clone()),
        id: FIRST_ID + n as u16,
        fields: Box::leak(fields.into_boxed_slice()),
        size: (probe.args_offset() + probe.size) as usize,
        print_fmt: leak(super::print::print_fmt(&probe)),
        print: print_probe_record,
    };
    let ev: &'static ProbeEvent = Box::leak(Box::new(ProbeEvent { call, probe }));
    SLOTS[n].store(
        ev as *const ProbeEvent as *mut ProbeEvent,
        Ordering::Release,
    );
    crate::trace_events::publish_dynamic_event(&ev.call);
    Ok(ev)
}

/// The probe event of type `id`.
pub fn find(id: u16) -> Option<&'static ProbeEvent> {
    let n = id.checked_sub(FIRST_ID)? as usize;
    let p = SLOTS.get(n)?.load(Ordering::Acquire);
    // SAFETY: a published pointer comes from Box::leak in `register` and is
    // never freed or changed.
    (!p.is_null()).then(|| unsafe { &*p })
}
