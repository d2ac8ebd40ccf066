//! Event filters in the kernel: the `events/SYSTEM/EVENT/filter` and
//! `events/SYSTEM/filter` files of each trace array, the filter each
//! event's probe tests, and its replacement (Linux:
//! kernel/trace/trace_events_filter.c, `apply_event_filter()`,
//! `apply_subsystem_event_filter()`). The grammar, the compiler, the
//! evaluator and the texts are `tracer::event_filter`.
//!
//! Each [`TraceEventFile`] has a [`FilterSlot`]: the compiled filter the
//! probe reads (a pointer, published with a store and freed after a grace
//! period, as Linux's RCU-protected `file->filter`) and the text `cat
//! filter` shows. The FILTERED flag in the file's flags word is set while
//! a compiled filter is in place; the probe's first test looks at that
//! word anyway (soft-disable, pid filter), so an unfiltered event pays
//! nothing more. A filter of one numeric test of one of the event's fields
//! is decided before the probe runs, by the gate registered in its place
//! (`events::event_probe_update`, `tracer::trace_events::gate`). Any other
//! filter: with FILTERED set the probe goes out of line, builds the
//! record on its stack (not in the ring buffer: Linux reserves and then
//! discards; here nothing is reserved for a rejected record), fills the
//! common header only if the filter reads its flags, preempt count or
//! pid, and tests it; only a record that passes is written.
//!
//! A bad filter is Linux's defined behaviour: it replaces the old one, the
//! event becomes unfiltered, `cat filter` shows the text with a caret and
//! `parse_error: ...`, `error_log` gets an entry, and the write fails
//! (EINVAL, or EPERM/ENOENT/ESRCH where Linux returns them).
//!
//! For other users of filters (a trigger's `if FILTER`): compile with
//! `tracer::event_filter::Filter::compile(text, file.call.fields)` and
//! test a record with `filter.matches(rec, &CurrentEnv)`.
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

use spin::Mutex;
use tracer::event_filter::{
    filter_file_text, log_err_kind, parse_filter_write, EventFilter, Filter, FilterEnv,
    FilterWrite, ERR_LOC, ERR_TEXT,
};
use tracer::trace_events::set_event::SYSTEM_FILTER_DEFAULT;

use super::error_log::tracing_log_err;
use super::events::{event_mutex, event_probe_update, flags, TraceEventFile};
use super::trace::TraceArray;
use crate::fs::tracefs::{self, Dentry, SeqFile, TRACE_MODE_WRITE};
use crate::fs::{Errno, OpenFile, OpenFlags};

/// The context a filter's generic fields read: the current CPU and task.
pub struct CurrentEnv;

impl FilterEnv for CurrentEnv {
    #[inline]
    fn cpu(&self) -> u32 {
        crate::arch::cpu_id() as u32
    }

    fn comm(&self) -> [u8; 16] {
        crate::sched::current().map_or([0; 16], |t| t.trace_info().comm)
    }
}

/// One event's filter in one trace array (Linux: `file->filter`).
pub struct FilterSlot {
    /// The compiled filter, or null. Written only under the event mutex;
    /// a replaced one is freed after `synchronize_sched()`, so a probe
    /// (preemption off) that loaded it can finish with it.
    prog: AtomicPtr<Filter>,
    /// What `cat filter` shows, without its last newline; `None`: `none`.
    text: Mutex<Option<String>>,
}

impl Default for FilterSlot {
    fn default() -> Self {
        Self::new()
    }
}

impl FilterSlot {
    pub const fn new() -> FilterSlot {
        FilterSlot {
            prog: AtomicPtr::new(ptr::null_mut()),
            text: Mutex::new(None),
        }
    }

    /// The compiled filter, for a caller with preemption off (a probe).
    #[inline(always)]
    pub fn prog(&self) -> Option<&Filter> {
        let p = self.prog.load(Ordering::Acquire);
        // SAFETY: a non-null pointer came from Box::into_raw in `publish`
        // and is freed only after it was replaced and a grace period
        // passed; the caller runs with preemption off, so it cannot span
        // that grace period.
        unsafe { p.as_ref() }
    }

    /// Installs `new` and returns the filter it replaces, which the caller
    /// frees with [`free_after_grace_period`].
    fn publish(&self, new: Option<Filter>) -> Option<Box<Filter>> {
        let p = new.map_or(ptr::null_mut(), |f| Box::into_raw(Box::new(f)));
        let old = self.prog.swap(p, Ordering::AcqRel);
        // SAFETY: `old` came from Box::into_raw and is now unreachable for
        // new readers; the caller waits for the old ones.
        (!old.is_null()).then(|| unsafe { Box::from_raw(old) })
    }

    /// `cat filter`.
    pub fn text(&self) -> String {
        let text = self.text.lock();
        let state = text.as_ref().map(|t| EventFilter {
            text: t.clone(),
            prog: None,
        });
        filter_file_text(state.as_ref())
    }
}

impl Drop for FilterSlot {
    fn drop(&mut self) {
        let p = *self.prog.get_mut();
        if !p.is_null() {
            // SAFETY: from Box::into_raw; the file is being dropped, after
            // its probe was unregistered and a grace period passed (the
            // trace array's teardown).
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// Whether the record `rec` of `file` passes its filter (true without
/// one). For a caller with preemption off (a probe).
#[inline]
pub fn filter_match(file: &TraceEventFile, rec: &[u8]) -> bool {
    if file.flags() & flags::FILTERED == 0 {
        return true;
    }
    file.filter
        .prog()
        .is_none_or(|f| f.matches(rec, &CurrentEnv))
}

/// Frees replaced filters once no probe can be using them (each was
/// published by its box's address, so they stay boxed until then).
#[allow(clippy::vec_box)]
fn free_after_grace_period(old: Vec<Box<Filter>>) {
    if !old.is_empty() {
        crate::rcu::synchronize_sched();
        drop(old);
    }
}

/// Sets `file`'s filter to `f` (compiled from `text`) or, with `f` None,
/// to the error text `text` (the event becomes unfiltered). Returns the
/// replaced filter.
fn set_filter(file: &TraceEventFile, text: String, f: Option<Filter>) -> Option<Box<Filter>> {
    let ok = f.is_some();
    if !ok {
        file.clear_flags(flags::FILTERED);
    }
    let old = file.filter.publish(f);
    if ok {
        file.set_flags(flags::FILTERED);
    }
    *file.filter.text.lock() = Some(text);
    old
}

/// Removes `file`'s filter (`echo 0 > filter`). Returns the old one.
fn clear_filter(file: &TraceEventFile) -> Option<Box<Filter>> {
    file.clear_flags(flags::FILTERED);
    *file.filter.text.lock() = None;
    file.filter.publish(None)
}

/// A write to `events/SYSTEM/EVENT/filter` (Linux: `event_filter_write`,
/// `apply_event_filter`).
pub fn apply_event_filter(file: &TraceEventFile, buf: &[u8]) -> Result<(), Errno> {
    let w = parse_filter_write(buf)?;
    let guard = event_mutex();
    let (old, r) = match w {
        FilterWrite::Clear => (clear_filter(file), Ok(())),
        FilterWrite::Set(text) => {
            let (state, r) = EventFilter::create(&text, file.call.fields);
            if let Err(e) = r {
                let (kind, pos) = log_err_kind(&e);
                tracing_log_err(file.tr(), ERR_LOC, &text, &ERR_TEXT, kind as usize, pos);
            }
            (
                set_filter(file, state.text, state.prog),
                r.map_err(|e| e.errno),
            )
        }
    };
    event_probe_update(&guard, file);
    drop(guard);
    free_after_grace_period(old.into_iter().collect());
    r
}

/// A write to `events/SYSTEM/filter` (Linux:
/// `apply_subsystem_event_filter`): `0` removes every event's filter; an
/// expression is compiled for each event of the system, and an event it
/// does not compile for gets the error text (caret at 0, `Couldn't find
/// or set field in one of a subsystem's events`), is left unfiltered and
/// is logged. The write succeeds (every system here has events).
pub fn apply_subsystem_event_filter(
    tr: &TraceArray,
    system: &str,
    buf: &[u8],
) -> Result<(), Errno> {
    let w = parse_filter_write(buf)?;
    let guard = event_mutex();
    let mut old = Vec::new();
    let all = tr.events.all_files();
    let files = || all.iter().copied().filter(|f| f.call.system == system);
    match w {
        FilterWrite::Clear => old.extend(files().filter_map(clear_filter)),
        FilterWrite::Set(text) => {
            for file in files() {
                let replaced = match Filter::compile(&text, file.call.fields) {
                    Ok(f) => set_filter(file, text.clone(), Some(f)),
                    Err(_) => {
                        let state = EventFilter::subsystem_error(&text);
                        let kind = tracer::event_filter::FiltErr::BadSubsysFilter;
                        tracing_log_err(tr, ERR_LOC, &text, &ERR_TEXT, kind as usize, 0);
                        set_filter(file, state.text, None)
                    }
                };
                old.extend(replaced);
            }
        }
    }
    for file in files() {
        event_probe_update(&guard, file);
    }
    drop(guard);
    free_after_grace_period(old);
    Ok(())
}

/// Creates `filter` in the directory `dir` of `tr`'s event number `i`
/// (in `tr.events.files()` order).
pub fn create_event_filter_file(
    tr: &Arc<TraceArray>,
    dir: &Dentry,
    i: usize,
) -> Result<Dentry, Errno> {
    let tr = tr.clone();
    tracefs::create_file(dir, "filter", TRACE_MODE_WRITE, move |_: OpenFlags| {
        let t = tr.clone();
        let text = tr.events.files()[i].filter.text();
        let file = SeqFile::new(text).with_write(move |buf| {
            apply_event_filter(&t.events.files()[i], buf).map(|()| buf.len())
        });
        Ok(Box::new(file) as Box<dyn OpenFile>)
    })
}

/// Creates `filter` in `dir` for the file of an event made at run time (a
/// probe event's, see `trace_kprobe`).
pub fn create_event_filter_file_dyn(
    dir: &Dentry,
    file: super::events::DynFileRef,
) -> Result<Dentry, Errno> {
    tracefs::create_file(dir, "filter", TRACE_MODE_WRITE, move |_: OpenFlags| {
        let file = file.clone();
        let f = SeqFile::new(file.filter.text())
            .with_write(move |buf| apply_event_filter(&file, buf).map(|()| buf.len()));
        Ok(Box::new(f) as Box<dyn OpenFile>)
    })
}

/// Creates `filter` in the directory `dir` of `tr`'s event system
/// `system`. It reads Linux's help text: a subsystem filter that reached
/// at least one event leaves no text of its own.
pub fn create_system_filter_file(
    tr: &Arc<TraceArray>,
    dir: &Dentry,
    system: &'static str,
) -> Result<Dentry, Errno> {
    let tr = tr.clone();
    tracefs::create_file(dir, "filter", TRACE_MODE_WRITE, move |_: OpenFlags| {
        let t = tr.clone();
        let file = SeqFile::new(SYSTEM_FILTER_DEFAULT).with_write(move |buf| {
            apply_subsystem_event_filter(&t, system, buf).map(|()| buf.len())
        });
        Ok(Box::new(file) as Box<dyn OpenFile>)
    })
}
