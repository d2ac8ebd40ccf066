//! The files that switch trace events on and off as a group, and the
//! filter and trigger files (Linux: kernel/trace/trace_events.c,
//! `ftrace_set_event_fops`, `ftrace_set_event_pid_fops`,
//! `ftrace_set_event_notrace_pid_fops`, `ftrace_system_enable_fops`,
//! `ftrace_tr_enable_fops`, `ftrace_subsystem_filter_fops`,
//! `ftrace_event_filter_fops`; trace_events_trigger.c's `event_trigger_fops`).
//!
//! What a write means is decided by `tracer::trace_events::set_event`
//! (host-tested); this file applies it to the events of
//! one trace array ([`super::events::TrEvents`]) and creates its files:
//! - `set_event`: reads the enabled events as `system:event`; a write
//!   enables (or with `!` disables) the events its tokens name, in order,
//!   and stops with `EINVAL` at the first token that names none, the
//!   tokens before it staying applied, as a Linux shell sees it. Opening
//!   with `O_TRUNC` (`>`) first disables every event, even if the write
//!   then fails (Linux does it at open too).
//! - `events/enable` and `events/SYSTEM/enable`: `0`, `1`, `X` (mixed) or
//!   `?`; writing `0` or `1` switches every event under it.
//! - `set_event_pid`, `set_event_notrace_pid`: one pid per line; a write
//!   adds its pids (`>` empties the list at open first), a bad number is
//!   `EINVAL` and keeps the list; how the lists filter is
//!   [`super::event_pid`].
//! - `filter` (events/SYSTEM/ and each event): [`super::event_filter`].
//! - each event's `trigger` is [`super::trigger`]'s. The `ftrace` system
//!   has no `filter` and no `enable`, and only `ftrace/print` has a
//!   `trigger`, as on Linux; that one lists the commands, and setting a
//!   trigger there is `EINVAL` (trace_marker writes do not run triggers
//!   here).
use alloc::boxed::Box;
use alloc::collections::BTreeSet;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use tracer::filter::PidFilter;
use tracer::trace_events::set_event::{
    event_pid_text, parse_enable, set_event_text, set_event_write, system_enable_text,
    trigger_write,
};

use super::event_filter;
use super::event_pid::{self, Which};
use super::events::{event_mutex, ftrace_event_enable_disable_locked, TraceEventFile};
use super::trace::TraceArray;
use crate::fs::tracefs::{self, Dentry, SeqFile, TRACE_MODE_WRITE};
use crate::fs::{Errno, OpenFile, OpenFlags};

/// The events of `tr` that `set_event` and the `enable` files act on,
/// with their `(system, name)` in the same order (Linux: `tr->events`,
/// leaving out the `ftrace` system's internal events, which cannot be
/// enabled).
fn enableable(tr: &TraceArray) -> (Vec<&TraceEventFile>, Vec<(&'static str, &'static str)>) {
    let files: Vec<_> = tr
        .events
        .all_files()
        .into_iter()
        .filter(|f| f.call.system != "ftrace")
        .collect();
    let names = files.iter().map(|f| (f.call.system, f.call.name)).collect();
    (files, names)
}

/// Switches `files[i]` for each `(i, enable)` in order, under the event
/// mutex. Stops at the first event that cannot be switched and returns
/// its error (the changes before it stay, as for a bad token).
fn apply(files: &[&TraceEventFile], changes: &[(usize, bool)]) -> Result<(), Errno> {
    let guard = event_mutex();
    for &(i, enable) in changes {
        ftrace_event_enable_disable_locked(&guard, files[i], enable)?;
    }
    Ok(())
}

/// Switches every event of `tr` that `pick` selects; tries them all and
/// returns the first error (Linux: `__ftrace_set_clr_event_nolock`).
fn set_clr_all(
    tr: &TraceArray,
    pick: impl Fn(&TraceEventFile) -> bool,
    enable: bool,
) -> Result<(), Errno> {
    let (files, _) = enableable(tr);
    let guard = event_mutex();
    let mut first = Ok(());
    for f in files.into_iter().filter(|f| pick(f)) {
        let r = ftrace_event_enable_disable_locked(&guard, f, enable);
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// A write to `set_event` of `tr`.
fn set_event_store(tr: &TraceArray, buf: &[u8]) -> Result<usize, Errno> {
    let (files, names) = enableable(tr);
    let w = set_event_write(buf, &names);
    apply(&files, &w.changes)?;
    match w.error {
        Some(e) => Err(e),
        None => Ok(buf.len()),
    }
}

fn set_event_open(tr: &Arc<TraceArray>, flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno> {
    if flags.writable() && flags.truncate() {
        // `>`: every event off first (Linux: ftrace_clear_events at open).
        let _ = set_clr_all(tr, |_| true, false);
    }
    let (files, names) = enableable(tr);
    let text = set_event_text(&names, |i| files[i].is_enabled());
    let tr = tr.clone();
    Ok(Box::new(
        SeqFile::new(text).with_write(move |buf| set_event_store(&tr, buf)),
    ))
}

/// `events/enable` (`system` None) or `events/SYSTEM/enable` of `tr`.
fn system_enable_open(
    tr: &Arc<TraceArray>,
    system: Option<&'static str>,
) -> Result<Box<dyn OpenFile>, Errno> {
    let in_system = move |f: &TraceEventFile| system.is_none_or(|s| f.call.system == s);
    let (files, _) = enableable(tr);
    let text = system_enable_text(
        files
            .iter()
            .filter(|f| in_system(f))
            .map(|f| f.is_enabled()),
    );
    let tr = tr.clone();
    let file = SeqFile::new(text).with_write(move |buf| {
        let enable = parse_enable(buf)?;
        set_clr_all(&tr, in_system, enable)?;
        Ok(buf.len())
    });
    Ok(Box::new(file))
}

/// A write to a pid file of `tr` (Linux: `event_pid_write`): the list so
/// far plus the pids written, installed at once; a bad write changes
/// nothing.
fn pid_store(tr: &TraceArray, which: Which, buf: &[u8]) -> Result<usize, Errno> {
    let mut list = event_pid::pid_list(tr, which);
    list.write(false, buf)?;
    event_pid::install(tr, which, list)?;
    Ok(buf.len())
}

/// `set_event_pid` or `set_event_notrace_pid` of `tr`.
fn pid_file_open(
    tr: &Arc<TraceArray>,
    which: Which,
    flags: OpenFlags,
) -> Result<Box<dyn OpenFile>, Errno> {
    if flags.writable() && flags.truncate() {
        // `>`: the list goes at open (Linux: ftrace_clear_event_pids).
        event_pid::install(tr, which, PidFilter::new())?;
    }
    let text = event_pid_text(&event_pid::pid_list(tr, which));
    let tr = tr.clone();
    let file = SeqFile::new(text).with_write(move |buf| pid_store(&tr, which, buf));
    Ok(Box::new(file))
}

/// A file showing `text` whose writes `store` judges (the filter and
/// trigger files while there are no filters or triggers).
fn fixed_file(
    dir: &Dentry,
    name: &str,
    text: fn() -> String,
    store: fn(&[u8]) -> Result<(), Errno>,
) -> Result<Dentry, Errno> {
    tracefs::create_file(dir, name, TRACE_MODE_WRITE, move |_flags: OpenFlags| {
        let file = SeqFile::new(text()).with_write(move |buf| store(buf).map(|()| buf.len()));
        Ok(Box::new(file) as Box<dyn OpenFile>)
    })
}

/// Creates `enable` and `filter` in the directory `sys` of `tr`'s event
/// system `system` (for a system of events made at run time too: a probe
/// event's group).
pub fn create_system_files(
    tr: &Arc<TraceArray>,
    sys: &Dentry,
    system: &'static str,
) -> Result<(), Errno> {
    let t = tr.clone();
    tracefs::create_file(sys, "enable", TRACE_MODE_WRITE, move |_| {
        system_enable_open(&t, Some(system))
    })?;
    event_filter::create_system_filter_file(tr, sys, system)?;
    Ok(())
}

/// Creates, in `tr`'s directory `dir`, `set_event`, the pid files, the
/// `enable` files of `events/` and its systems, and the `filter` and
/// `trigger` files. Run by [`super::events::init_tr`] after it made
/// `events/SYSTEM/EVENT/`.
pub fn init_tr(tr: &Arc<TraceArray>, dir: &Dentry) -> Result<(), Errno> {
    let t = tr.clone();
    tracefs::create_file(dir, "set_event", TRACE_MODE_WRITE, move |f| {
        set_event_open(&t, f)
    })?;
    let t = tr.clone();
    tracefs::create_file(dir, "set_event_pid", TRACE_MODE_WRITE, move |f| {
        pid_file_open(&t, Which::Pids, f)
    })?;
    let t = tr.clone();
    tracefs::create_file(dir, "set_event_notrace_pid", TRACE_MODE_WRITE, move |f| {
        pid_file_open(&t, Which::NoPids, f)
    })?;
    let events = tracefs::get_or_create_dir(dir, "events")?;
    let t = tr.clone();
    tracefs::create_file(&events, "enable", TRACE_MODE_WRITE, move |_| {
        system_enable_open(&t, None)
    })?;
    let mut systems = BTreeSet::new();
    for (index, file) in tr.events.files().iter().enumerate() {
        let (system, name) = (file.call.system, file.call.name);
        let sys = tracefs::get_or_create_dir(&events, system)?;
        let d = tracefs::get_or_create_dir(&sys, name)?;
        if system == "ftrace" {
            continue;
        }
        event_filter::create_event_filter_file(tr, &d, index)?;
        super::trigger::create_trigger_file(&d, tr, index)?;
        super::hist::create_hist_file(&d, tr, index)?;
        if systems.insert(system) {
            create_system_files(tr, &sys, system)?;
        }
    }
    // ftrace/print (made with the other internal formats) fires on
    // trace_marker writes, so Linux gives it a trigger file, and it alone
    // of the ftrace system.
    if let Some(print) =
        tracefs::lookup(&events, "ftrace").and_then(|d| tracefs::lookup(&d, "print"))
    {
        fixed_file(
            &print,
            "trigger",
            super::trigger::available_triggers_text,
            trigger_write,
        )?;
    }
    Ok(())
}
