//! `error_log` of every trace array: the last 8 errors of tracing commands
//! with a caret under the bad spot (Linux: `tracing_log_err()` and
//! `tracing_err_log_fops` in kernel/trace/trace.c). The text and the ring
//! of entries are `tracer::error_log`; this file keeps one per trace array
//! (in [`TraceArray::err_log`]) and makes the file.
//!
//! Anything that parses a user's command calls [`tracing_log_err`] with
//! its location, the command, its table of error texts, the error's index
//! and the caret position, as Linux's callers do:
//!
//! ```text
//! tracing_log_err(tr, "event filter parse error", "foo == 1",
//!                 &tracer::event_filter::ERR_TEXT, 9, 4);
//! ```
use alloc::boxed::Box;
use alloc::sync::Arc;

use super::trace::TraceArray;
use crate::fs::tracefs::{self, Dentry, SeqFile, TRACE_MODE_WRITE};
use crate::fs::{Errno, OpenFile, OpenFlags};

/// Logs an error in `tr`'s `error_log`: `loc` says where (`event filter
/// parse error`, `hist:sched:sched_switch`...), `cmd` is the command as
/// the user wrote it, `errs[ty]` the error's text and `pos` the caret's
/// position in `cmd`. The time stamp is the `local` clock's, as Linux's
/// `local_clock()`. An index outside `errs` logs `Error`.
pub fn tracing_log_err(
    tr: &TraceArray,
    loc: &str,
    cmd: &str,
    errs: &[&'static str],
    ty: usize,
    pos: usize,
) {
    let text = errs.get(ty).copied().unwrap_or("Error");
    let ts = crate::time::now_ns();
    tr.err_log.lock().log(ts, loc, cmd, text, pos);
}

/// Creates `error_log` in `tr`'s directory `dir`: reading shows the
/// entries, opening for writing with `O_TRUNC` (`echo > error_log`)
/// clears them, and writes are accepted and ignored, as on Linux.
pub fn init_tr(tr: &Arc<TraceArray>, dir: &Dentry) -> Result<(), Errno> {
    let tr = tr.clone();
    tracefs::create_file(dir, "error_log", TRACE_MODE_WRITE, move |f: OpenFlags| {
        if f.writable() && f.truncate() {
            tr.err_log.lock().clear();
        }
        let text = tr.err_log.lock().text();
        Ok(Box::new(SeqFile::new(text).with_write(|buf| Ok(buf.len()))) as Box<dyn OpenFile>)
    })?;
    Ok(())
}
