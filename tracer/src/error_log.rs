//! The `error_log` file of a trace array: the last few errors of tracing
//! commands, each with the command and a caret under the bad spot (Linux:
//! `tracing_log_err()` and the `tracing_err_log_*` seq_file in
//! kernel/trace/trace.c).
//!
//! ```text
//! [   12.345678] event filter parse error: error: Field not found
//!   Command: foo == 1
//!                ^
//! ```
//!
//! At most [`TRACING_LOG_ERRS_MAX`] entries are kept; a new one recycles
//! the oldest. Opening the file for writing with `O_TRUNC`
//! (`echo > error_log`) clears it; writes are accepted and ignored.

use alloc::collections::VecDeque;
use alloc::string::String;
use core::fmt::Write;

/// Entries kept (Linux: `TRACING_LOG_ERRS_MAX`).
pub const TRACING_LOG_ERRS_MAX: usize = 8;

/// `"  Command: "`, which the caret line's indent matches.
const CMD_PREFIX: &str = "  Command: ";

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    ts_ns: u64,
    loc: String,
    cmd: String,
    text: &'static str,
    pos: u16,
}

/// The error log of one trace array.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorLog {
    entries: VecDeque<Entry>,
}

impl ErrorLog {
    pub const fn new() -> ErrorLog {
        ErrorLog {
            entries: VecDeque::new(),
        }
    }

    /// Records an error (Linux: `tracing_log_err(tr, loc, cmd, errs,
    /// type, pos)` with `errs[type]` = `text`), at time `ts_ns`
    /// (`local_clock()`). Linux keeps the position as a u16.
    pub fn log(&mut self, ts_ns: u64, loc: &str, cmd: &str, text: &'static str, pos: usize) {
        if self.entries.len() >= TRACING_LOG_ERRS_MAX {
            self.entries.pop_front();
        }
        // Linux: snprintf into 128 bytes with ": error: " appended.
        let mut loc = String::from(loc);
        truncate_at_char(&mut loc, 128 - ": error: ".len() - 1);
        self.entries.push_back(Entry {
            ts_ns,
            loc,
            cmd: String::from(cmd),
            text,
            pos: pos as u16,
        });
    }

    /// `echo > error_log`.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The file's text, oldest entry first (`tracing_err_log_seq_show`).
    pub fn text(&self) -> String {
        let mut s = String::new();
        for e in &self.entries {
            let sec = e.ts_ns / 1_000_000_000;
            let usec = (e.ts_ns % 1_000_000_000) / 1000;
            let _ = write!(
                s,
                "[{:5}.{:06}] {}: error: {}\n{}{}\n",
                sec, usec, e.loc, e.text, CMD_PREFIX, e.cmd
            );
            for _ in 0..CMD_PREFIX.len() + e.pos as usize {
                s.push(' ');
            }
            s.push_str("^\n");
        }
        s
    }
}

fn truncate_at_char(s: &mut String, max: usize) {
    if s.len() > max {
        let mut n = max;
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        s.truncate(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_format_is_linuxs() {
        let mut log = ErrorLog::new();
        log.log(
            6_674_958_123,
            "event filter parse error",
            "prev_pid == 1 prev_pid == 2",
            "Too many terms in predicate expression",
            14,
        );
        assert_eq!(
            log.text(),
            "[    6.674958] event filter parse error: error: Too many terms in predicate expression\n\
             \x20 Command: prev_pid == 1 prev_pid == 2\n\
             \x20                        ^\n"
        );
    }

    #[test]
    fn keeps_the_last_eight_and_clears() {
        let mut log = ErrorLog::new();
        for i in 0..10u64 {
            log.log(
                i * 1_000_000_000,
                "loc",
                &alloc::format!("cmd{}", i),
                "Error",
                0,
            );
        }
        assert_eq!(log.len(), TRACING_LOG_ERRS_MAX);
        let t = log.text();
        assert!(t.starts_with("[    2.000000] loc: error: Error\n  Command: cmd2\n"));
        assert!(t.ends_with("  Command: cmd9\n           ^\n"));
        assert!(!t.contains("cmd1\n"));
        log.clear();
        assert_eq!(log.text(), "");
    }
}
