//! Event triggers: what a write to `events/SYSTEM/EVENT/trigger` asks for,
//! what `cat trigger` prints, the rules that decide whether a trigger may
//! be added, and the counts (Linux: kernel/trace/trace_events_trigger.c).
//!
//! A write names a command and its arguments:
//!
//! ```text
//! [!]traceon|traceoff|snapshot|stacktrace[:N] [if FILTER]
//! [!]enable_event|disable_event:SYSTEM:EVENT[:N] [if FILTER]
//! ```
//!
//! Linux splits it in two steps, and so does this module. First
//! [`split_trigger_write`] (Linux: `trigger_process_regex`) trims the text
//! and cuts the command name off at the first `:`, space or tab; a leading
//! `!` asks for removal. The kernel looks the name up in its registry of
//! commands (Linux: `struct event_command`), where an unknown name is
//! `EINVAL`. Then the command parses the rest: [`parse_simple`] for the
//! four commands without a target (Linux: `event_trigger_parse`),
//! [`parse_enable`] for `enable_event`/`disable_event` (Linux:
//! `event_enable_trigger_parse`). The filter after `if` is kept as text
//! here: the kernel compiles it against the event that triggers.
//!
//! Rules (Linux's): one trigger per [`TriggerType`] on an event, so
//! `traceon` and `traceoff` exclude each other; for enable/disable_event
//! one per type *and target*. A duplicate is `EEXIST`. A removal (`!`)
//! matches by the same key and ignores the count and filter; removing
//! what is not there succeeds and changes nothing.
//!
//! Counts are Linux's `unsigned long count`, where all ones (`-1`) means
//! unlimited. [`TriggerCount`] decrements them with compare-and-swap, so
//! that `traceoff:3` fires exactly three times even when several CPUs hit
//! the event at once (Linux decrements without atomics and can miss or
//! add a firing under such a race).

use alloc::string::String;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::errno::Errno;
use crate::options::parse_kstrtoul;

/// Linux rejects a trigger write of `PAGE_SIZE` bytes or more.
pub const TRIGGER_WRITE_MAX: usize = 4096;

/// What kind of action a trigger is; two triggers of one type may not sit
/// on the same event (same target, for the enable types). Linux's `enum
/// event_trigger_type`, with its bit values (they are OR-ed into the set of
/// triggers deferred until after the record is written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum TriggerType {
    /// `traceon` and `traceoff` (Linux: `ETT_TRACE_ONOFF`).
    TraceOnOff = 1 << 0,
    /// `snapshot` (`ETT_SNAPSHOT`).
    Snapshot = 1 << 1,
    /// `stacktrace` (`ETT_STACKTRACE`).
    Stacktrace = 1 << 2,
    /// `enable_event` and `disable_event` (`ETT_EVENT_ENABLE`).
    EventEnable = 1 << 3,
    /// `hist` (`ETT_EVENT_HIST`).
    Hist = 1 << 4,
    /// `enable_hist` and `disable_hist` (`ETT_HIST_ENABLE`).
    HistEnable = 1 << 5,
}

/// The commands this module parses, in Linux's registration order (the
/// order of the `# Available triggers:` line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimpleCommand {
    TraceOn,
    TraceOff,
    Snapshot,
    Stacktrace,
    EnableEvent,
    DisableEvent,
}

impl SimpleCommand {
    /// Every command, in registration order.
    pub const ALL: [SimpleCommand; 6] = [
        SimpleCommand::TraceOn,
        SimpleCommand::TraceOff,
        SimpleCommand::Snapshot,
        SimpleCommand::Stacktrace,
        SimpleCommand::EnableEvent,
        SimpleCommand::DisableEvent,
    ];

    /// The name written to and printed from `trigger`.
    pub const fn name(self) -> &'static str {
        match self {
            SimpleCommand::TraceOn => "traceon",
            SimpleCommand::TraceOff => "traceoff",
            SimpleCommand::Snapshot => "snapshot",
            SimpleCommand::Stacktrace => "stacktrace",
            SimpleCommand::EnableEvent => "enable_event",
            SimpleCommand::DisableEvent => "disable_event",
        }
    }

    /// The command with this name.
    pub fn from_name(name: &str) -> Option<SimpleCommand> {
        SimpleCommand::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Its [`TriggerType`].
    pub const fn trigger_type(self) -> TriggerType {
        match self {
            SimpleCommand::TraceOn | SimpleCommand::TraceOff => TriggerType::TraceOnOff,
            SimpleCommand::Snapshot => TriggerType::Snapshot,
            SimpleCommand::Stacktrace => TriggerType::Stacktrace,
            SimpleCommand::EnableEvent | SimpleCommand::DisableEvent => TriggerType::EventEnable,
        }
    }

    /// Whether the action waits until the event's own record is written
    /// (Linux: `EVENT_CMD_FL_POST_TRIGGER`): `traceoff`, so that the event
    /// that stops tracing is still in the trace, and `stacktrace`, so that
    /// the stack follows the event.
    pub const fn post_trigger(self) -> bool {
        matches!(self, SimpleCommand::TraceOff | SimpleCommand::Stacktrace)
    }

    /// Whether the command names a target event (`SYS:EVENT`).
    pub const fn has_target(self) -> bool {
        matches!(
            self,
            SimpleCommand::EnableEvent | SimpleCommand::DisableEvent
        )
    }

    /// The key a trigger of this command has, with `target` identifying its
    /// target event file (enable types only).
    pub const fn key(self, target: Option<usize>) -> TriggerKey {
        TriggerKey {
            ty: self.trigger_type(),
            target,
        }
    }
}

/// A trigger write cut into command and arguments (Linux:
/// `trigger_process_regex`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TriggerWrite<'a> {
    /// The command as written, with its `!` if any (Linux: `glob`).
    pub glob: &'a str,
    /// The command name without the `!`.
    pub cmd: &'a str,
    /// A leading `!`: remove.
    pub remove: bool,
    /// The text after the separator with leading blanks skipped, `None` if
    /// nothing is left (Linux: `param_and_filter`).
    pub param_and_filter: Option<&'a str>,
}

/// Linux's `isspace()` (the C locale).
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// Cuts `s` at the first of `delims` (Linux: `strsep`): the part before,
/// and the part after the delimiter if there was one.
fn strsep<'a>(s: &'a str, delims: &[char]) -> (&'a str, Option<&'a str>) {
    match s.find(delims) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    }
}

/// Splits a write to `trigger`. `Ok(None)` for an empty write (Linux returns
/// 0 without looking). `EINVAL` if it is `TRIGGER_WRITE_MAX` bytes or longer,
/// or not UTF-8 (this kernel's text files are UTF-8; Linux would compare the
/// bytes and fail on the name or the filter). Like Linux's C string, the
/// text ends at a NUL byte.
pub fn split_trigger_write(input: &[u8]) -> Result<Option<TriggerWrite<'_>>, Errno> {
    if input.is_empty() {
        return Ok(None);
    }
    if input.len() >= TRIGGER_WRITE_MAX {
        return Err(Errno::EINVAL);
    }
    let input = match input.iter().position(|&b| b == 0) {
        Some(n) => &input[..n],
        None => input,
    };
    let text = core::str::from_utf8(input).map_err(|_| Errno::EINVAL)?;
    let text = text.trim_matches(is_space);
    let (glob, next) = strsep(text, &[':', ' ', '\t']);
    let param_and_filter = next
        .map(|n| n.trim_start_matches(is_space))
        .filter(|n| !n.is_empty());
    let (cmd, remove) = match glob.strip_prefix('!') {
        Some(c) => (c, true),
        None => (glob, false),
    };
    Ok(Some(TriggerWrite {
        glob,
        cmd,
        remove,
        param_and_filter,
    }))
}

/// Separates `param [if filter]` (Linux: `event_trigger_separate_filter`).
/// Without `param_required`, a text that does not start with a digit is
/// all filter. The returned filter still starts with its `if`.
pub fn separate_filter(
    param_and_filter: Option<&str>,
    param_required: bool,
) -> Result<(Option<&str>, Option<&str>), Errno> {
    let Some(pf) = param_and_filter else {
        return if param_required {
            Err(Errno::EINVAL)
        } else {
            Ok((None, None))
        };
    };
    if !param_required && !pf.starts_with(|c: char| c.is_ascii_digit()) {
        return Ok((None, Some(pf)));
    }
    let (param, rest) = strsep(pf, &[' ', '\t']);
    let filter = rest
        .map(|r| r.trim_start_matches(is_space))
        .filter(|r| !r.is_empty());
    Ok((Some(param), filter))
}

/// The count in `param`, up to its first `:` (Linux:
/// `event_trigger_parse_num`, `kstrtoul` with base 0: `0x` hex, leading `0`
/// octal). No param is unlimited; an empty number `EINVAL`, overflow
/// `ERANGE`.
pub fn parse_count(param: Option<&str>) -> Result<u64, Errno> {
    match param {
        None => Ok(TriggerCount::UNLIMITED),
        Some(p) => {
            let (number, _) = strsep(p, &[':']);
            if number.is_empty() {
                return Err(Errno::EINVAL);
            }
            parse_kstrtoul(number.as_bytes(), 0)
        }
    }
}

/// The filter text after `if` (Linux: the start of `set_trigger_filter`):
/// the first word must be exactly `if` and something must follow it. What
/// follows the one separator is kept as written (Linux prints it back
/// verbatim, extra blanks included).
pub fn trigger_filter_text(filter: &str) -> Result<&str, Errno> {
    match strsep(filter, &[' ', '\t']) {
        ("if", Some(rest)) => Ok(rest),
        _ => Err(Errno::EINVAL),
    }
}

/// A parsed trigger. For a removal only the command (and the target) is
/// meaningful: Linux ignores the count and the filter then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriggerSpec<T> {
    pub cmd: SimpleCommand,
    pub remove: bool,
    /// [`TriggerCount::UNLIMITED`] when none was given.
    pub count: u64,
    /// The filter text after `if`, for the kernel to compile against the
    /// triggering event.
    pub filter: Option<String>,
    /// The target of enable_event/disable_event, as `parse_enable`'s
    /// `find` resolved it.
    pub target: Option<T>,
}

/// Parses the arguments of `traceon`, `traceoff`, `snapshot` or `stacktrace`
/// (Linux: `event_trigger_parse`).
pub fn parse_simple(cmd: SimpleCommand, w: &TriggerWrite<'_>) -> Result<TriggerSpec<()>, Errno> {
    debug_assert!(!cmd.has_target());
    let (param, filter) = separate_filter(w.param_and_filter, false)?;
    trigger_spec(cmd, w.remove, param, filter, None)
}

/// Parses the arguments of `enable_event` or `disable_event` (Linux:
/// `event_enable_trigger_parse`): `SYSTEM:EVENT[:N] [if FILTER]`. `find`
/// looks the target up in the trace array of the triggering event; a
/// missing target is `EINVAL`, for a removal too.
pub fn parse_enable<T>(
    cmd: SimpleCommand,
    w: &TriggerWrite<'_>,
    find: impl FnOnce(&str, &str) -> Option<T>,
) -> Result<TriggerSpec<T>, Errno> {
    debug_assert!(cmd.has_target());
    let (param, filter) = separate_filter(w.param_and_filter, true)?;
    let param = param.unwrap_or("");
    let (system, rest) = strsep(param, &[':']);
    let rest = rest.ok_or(Errno::EINVAL)?;
    let (event, count_param) = strsep(rest, &[':']);
    let target = find(system, event).ok_or(Errno::EINVAL)?;
    trigger_spec(cmd, w.remove, count_param, filter, Some(target))
}

/// The spec both parsers end with: a removal ignores the count and the
/// filter; otherwise the count (`:N`, kstrtoul base 0) and the filter text
/// after `if` are checked.
fn trigger_spec<T>(
    cmd: SimpleCommand,
    remove: bool,
    count_param: Option<&str>,
    filter: Option<&str>,
    target: Option<T>,
) -> Result<TriggerSpec<T>, Errno> {
    if remove {
        return Ok(TriggerSpec {
            cmd,
            remove: true,
            count: TriggerCount::UNLIMITED,
            filter: None,
            target,
        });
    }
    let count = parse_count(count_param)?;
    let filter = filter
        .map(trigger_filter_text)
        .transpose()?
        .map(String::from);
    Ok(TriggerSpec {
        cmd,
        remove: false,
        count,
        filter,
        target,
    })
}

/// What makes two triggers "the same" for `EEXIST` and for `!` removal:
/// the type, and for the enable types the target (Linux: `register_trigger`
/// compares `trigger_type`; `event_enable_register_trigger` also the
/// target file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TriggerKey {
    pub ty: TriggerType,
    /// An identifier of the target event file, for the enable types.
    pub target: Option<usize>,
}

/// Whether a trigger with `new` may not be added to an event whose triggers
/// have `existing` keys (then the write is `EEXIST`).
pub fn is_duplicate(mut existing: impl Iterator<Item = TriggerKey>, new: TriggerKey) -> bool {
    existing.any(|k| k == new)
}

/// A trigger's remaining count (Linux: `data->count`): all ones is
/// unlimited, 0 means it never fires again.
#[derive(Debug)]
pub struct TriggerCount(AtomicU64);

impl TriggerCount {
    /// Linux's `-1`.
    pub const UNLIMITED: u64 = u64::MAX;

    pub const fn new(count: u64) -> TriggerCount {
        TriggerCount(AtomicU64::new(count))
    }

    /// What remains (what `cat trigger` shows).
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Takes one firing: false if none is left. Unlimited counts are not
    /// decremented.
    #[inline]
    pub fn take(&self) -> bool {
        let mut v = self.0.load(Ordering::Relaxed);
        loop {
            if v == Self::UNLIMITED {
                return true;
            }
            if v == 0 {
                return false;
            }
            match self
                .0
                .compare_exchange_weak(v, v - 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => v = now,
            }
        }
    }

    /// Gives back a firing taken by [`take`](Self::take) whose action
    /// turned out to be unneeded (another CPU got there first).
    pub fn give_back(&self) {
        let mut v = self.0.load(Ordering::Relaxed);
        while v != Self::UNLIMITED {
            match self
                .0
                .compare_exchange_weak(v, v + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => v = now,
            }
        }
    }

    /// A counted action that does not count when its effect is already
    /// there (traceon/traceoff when tracing is already in the wanted state,
    /// enable/disable_event when the target is): `already` is the cheap
    /// test Linux does first; `act` does the change atomically and says
    /// whether it was this call that made it. A firing is counted exactly
    /// when `act` made the change, so on several CPUs the number of changes
    /// never exceeds the count.
    #[inline]
    pub fn fire_if_changes(
        &self,
        already: impl FnOnce() -> bool,
        act: impl FnOnce() -> bool,
    ) -> bool {
        if already() || !self.take() {
            return false;
        }
        if act() {
            true
        } else {
            self.give_back();
            false
        }
    }
}

/// Writes one trigger's `cat trigger` line (Linux: `event_trigger_print`
/// and `event_enable_trigger_print`): `NAME[:SYS:EVENT]`, `:unlimited` or
/// `:count=N` (the count as a signed long, as Linux prints it), then
/// ` if FILTER`, then a newline.
pub fn print_trigger(
    out: &mut String,
    name: &str,
    target: Option<(&str, &str)>,
    count: u64,
    filter: Option<&str>,
) {
    out.push_str(name);
    if let Some((system, event)) = target {
        let _ = write!(out, ":{system}:{event}");
    }
    if count == TriggerCount::UNLIMITED {
        out.push_str(":unlimited");
    } else {
        let _ = write!(out, ":count={}", count as i64);
    }
    if let Some(f) = filter {
        let _ = write!(out, " if {f}");
    }
    out.push('\n');
}

/// What `cat trigger` shows when the event has no trigger: the registered
/// commands, in registration order (Linux: `trigger_show` with
/// `SHOW_AVAILABLE_TRIGGERS`).
pub fn print_available<'a>(out: &mut String, names: impl Iterator<Item = &'a str>) {
    out.push_str("# Available triggers:\n#");
    for n in names {
        out.push(' ');
        out.push_str(n);
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn split(s: &str) -> TriggerWrite<'_> {
        split_trigger_write(s.as_bytes()).unwrap().unwrap()
    }

    /// Parses like the kernel does, with `sched:sched_*` events known.
    fn parse_bytes(input: &[u8]) -> Result<Option<TriggerSpec<String>>, Errno> {
        let Some(w) = split_trigger_write(input)? else {
            return Ok(None);
        };
        let cmd = SimpleCommand::from_name(w.cmd).ok_or(Errno::EINVAL)?;
        if cmd.has_target() {
            parse_enable(cmd, &w, |sys, ev| {
                (sys == "sched" && ev.starts_with("sched_")).then(|| alloc::format!("{sys}:{ev}"))
            })
            .map(Some)
        } else {
            let s = parse_simple(cmd, &w)?;
            Ok(Some(TriggerSpec {
                cmd: s.cmd,
                remove: s.remove,
                count: s.count,
                filter: s.filter,
                target: None,
            }))
        }
    }

    fn parse(s: &str) -> Result<TriggerSpec<String>, Errno> {
        parse_bytes(s.as_bytes())?.ok_or(Errno::EINVAL)
    }

    fn line(s: &TriggerSpec<String>) -> String {
        let mut out = String::new();
        let t = s.target.as_deref().map(|t| t.split_once(':').unwrap());
        print_trigger(&mut out, s.cmd.name(), t, s.count, s.filter.as_deref());
        out
    }

    #[test]
    fn split_as_trigger_process_regex() {
        let w = split("  !traceoff:3 if a == 1 \n");
        assert_eq!(w.glob, "!traceoff");
        assert_eq!(w.cmd, "traceoff");
        assert!(w.remove);
        assert_eq!(w.param_and_filter, Some("3 if a == 1"));
        assert_eq!(split("traceoff").param_and_filter, None);
        assert_eq!(split("traceoff:").param_and_filter, None);
        assert_eq!(split("traceoff:   ").param_and_filter, None);
        assert_eq!(split("traceoff   5").param_and_filter, Some("5"));
        assert_eq!(split("traceoff\t5").param_and_filter, Some("5"));
        assert_eq!(split(" ").cmd, "");
        assert_eq!(split_trigger_write(b""), Ok(None));
        assert_eq!(split("a\0b").cmd, "a");
        assert_eq!(split_trigger_write(&[b'a'; 4096]), Err(Errno::EINVAL));
        assert!(split_trigger_write(&[b'a'; 4095]).is_ok());
        assert_eq!(split_trigger_write(b"\xff"), Err(Errno::EINVAL));
    }

    /// The lines Linux 6.1 printed for the same writes.
    #[test]
    fn texts_as_linux() {
        let cases = [
            ("traceoff", "traceoff:unlimited\n"),
            ("traceoff:", "traceoff:unlimited\n"),
            (
                "traceoff:3 if prev_pid == 1",
                "traceoff:count=3 if prev_pid == 1\n",
            ),
            ("traceoff:0x10", "traceoff:count=16\n"),
            ("snapshot:010", "snapshot:count=8\n"),
            ("snapshot:0", "snapshot:count=0\n"),
            ("traceoff:18446744073709551615", "traceoff:unlimited\n"),
            ("traceoff:18446744073709551614", "traceoff:count=-2\n"),
            (
                "traceoff   5    if    prev_pid==1  ",
                "traceoff:count=5 if    prev_pid==1\n",
            ),
            (
                "traceoff if   prev_pid==1",
                "traceoff:unlimited if   prev_pid==1\n",
            ),
            (
                "snapshot:2\tif prev_pid==1",
                "snapshot:count=2 if prev_pid==1\n",
            ),
            ("   traceon  ", "traceon:unlimited\n"),
            ("stacktrace", "stacktrace:unlimited\n"),
            (
                "enable_event:sched:sched_wakeup:3 if prev_pid == 1",
                "enable_event:sched:sched_wakeup:count=3 if prev_pid == 1\n",
            ),
            (
                "disable_event:sched:sched_waking",
                "disable_event:sched:sched_waking:unlimited\n",
            ),
            (
                "enable_event:sched:sched_process_fork:+4",
                "enable_event:sched:sched_process_fork:count=4\n",
            ),
            (
                "enable_event:sched:sched_process_exit:4:zz",
                "enable_event:sched:sched_process_exit:count=4\n",
            ),
            (
                "enable_event:sched:sched_switch if a",
                "enable_event:sched:sched_switch:unlimited if a\n",
            ),
        ];
        for (input, want) in cases {
            let s = parse(input).unwrap_or_else(|e| panic!("{input:?}: {e:?}"));
            assert!(!s.remove);
            assert_eq!(line(&s), want, "{input:?}");
        }
    }

    /// The errors Linux 6.1 gave for the same writes.
    #[test]
    fn errors_as_linux() {
        let cases = [
            ("traceoff:badparam", Errno::EINVAL),
            ("traceoff+0", Errno::EINVAL),
            ("stacktrace:foo", Errno::EINVAL),
            ("bogus", Errno::EINVAL),
            ("", Errno::EINVAL),
            ("  ", Errno::EINVAL),
            ("\n", Errno::EINVAL),
            ("traceoff if", Errno::EINVAL),
            ("traceoff:3 if", Errno::EINVAL),
            ("traceoff ifx a", Errno::EINVAL),
            ("traceoff::3", Errno::EINVAL),
            ("traceoff:18446744073709551616", Errno::ERANGE),
            ("snapshot:2 if", Errno::EINVAL),
            ("traceon:-1", Errno::EINVAL),
            ("traceon:3x", Errno::EINVAL),
            ("traceon:0x", Errno::EINVAL),
            ("!", Errno::EINVAL),
            ("!!traceoff", Errno::EINVAL),
            ("enable_event:sched", Errno::EINVAL),
            ("enable_event", Errno::EINVAL),
            ("enable_event:", Errno::EINVAL),
            ("enable_event:sched:nosuch", Errno::EINVAL),
            ("!enable_event:sched:nosuch", Errno::EINVAL),
            ("!enable_event:sched", Errno::EINVAL),
            ("enable_event:sched:sched_process_fork:", Errno::EINVAL),
            ("enable_event:sched:sched_wakeup:x", Errno::EINVAL),
            ("enable_event:sched:sched_wakeup:3 if", Errno::EINVAL),
            ("enable_event:sched:sched_wakeup:3 when a", Errno::EINVAL),
        ];
        for (input, want) in cases {
            assert_eq!(parse(input).err(), Some(want), "{input:?}");
        }
    }

    #[test]
    fn removal_ignores_count_and_filter() {
        for input in [
            "!traceoff",
            "!traceoff:junk",
            "!traceoff:3 if",
            "!traceon:x if y",
        ] {
            let s = parse(input).unwrap();
            assert!(s.remove);
            assert_eq!(s.cmd.trigger_type(), TriggerType::TraceOnOff);
        }
        let s = parse("!enable_event:sched:sched_wakeup:junk if junk").unwrap();
        assert!(s.remove);
        assert_eq!(s.target.as_deref(), Some("sched:sched_wakeup"));
    }

    #[test]
    fn duplicates_by_type_and_target() {
        let onoff = TriggerKey {
            ty: TriggerType::TraceOnOff,
            target: None,
        };
        let snap = TriggerKey {
            ty: TriggerType::Snapshot,
            target: None,
        };
        let en = |t| TriggerKey {
            ty: TriggerType::EventEnable,
            target: Some(t),
        };
        // traceon after traceoff: the same type.
        assert!(is_duplicate(
            [onoff].into_iter(),
            SimpleCommand::TraceOn.key(None)
        ));
        assert!(!is_duplicate([snap].into_iter(), onoff));
        // enable and disable of one target conflict, other targets do not.
        assert!(is_duplicate(
            [en(1)].into_iter(),
            SimpleCommand::DisableEvent.key(Some(1))
        ));
        assert!(!is_duplicate([en(1), onoff].into_iter(), en(2)));
        assert!(!is_duplicate(core::iter::empty(), onoff));
    }

    #[test]
    fn cat_trigger_help() {
        let mut out = String::new();
        print_available(
            &mut out,
            SimpleCommand::ALL.iter().map(|c| c.name()).chain(["hist"]),
        );
        assert_eq!(
            out,
            "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event hist\n"
        );
    }

    #[test]
    fn counts() {
        let c = TriggerCount::new(2);
        assert!(c.take());
        assert!(c.take());
        assert!(!c.take());
        assert_eq!(c.get(), 0);
        c.give_back();
        assert_eq!(c.get(), 1);
        let u = TriggerCount::new(TriggerCount::UNLIMITED);
        for _ in 0..10 {
            assert!(u.take());
        }
        u.give_back();
        assert_eq!(u.get(), TriggerCount::UNLIMITED);
        // Already in the wanted state: not counted.
        let c = TriggerCount::new(1);
        assert!(!c.fire_if_changes(|| true, || unreachable!()));
        assert!(!c.fire_if_changes(|| false, || false));
        assert_eq!(c.get(), 1);
        assert!(c.fire_if_changes(|| false, || true));
        assert!(!c.fire_if_changes(|| false, || true));
    }

    /// Four threads hit a `traceoff:N` while a fifth keeps turning tracing
    /// back on: tracing is turned off exactly N times, and the count ends
    /// at zero.
    #[test]
    fn traceoff_count_exact_on_many_threads() {
        for n in [1u64, 3, 50] {
            let count = Arc::new(TriggerCount::new(n));
            let on = Arc::new(AtomicBool::new(true));
            let stop = Arc::new(AtomicBool::new(false));
            let fired = Arc::new(AtomicU64::new(0));
            let hitters: Vec<_> = (0..4)
                .map(|_| {
                    let (count, on, fired, stop) =
                        (count.clone(), on.clone(), fired.clone(), stop.clone());
                    std::thread::spawn(move || {
                        while !stop.load(Ordering::Relaxed) {
                            if count.fire_if_changes(
                                || !on.load(Ordering::Relaxed),
                                || on.swap(false, Ordering::AcqRel),
                            ) {
                                fired.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    })
                })
                .collect();
            let mut turned_on = 0;
            while count.get() > 0 {
                if !on.swap(true, Ordering::AcqRel) {
                    turned_on += 1;
                }
                std::thread::yield_now();
            }
            stop.store(true, Ordering::Relaxed);
            for h in hitters {
                h.join().unwrap();
            }
            assert_eq!(fired.load(Ordering::Relaxed), n);
            assert_eq!(count.get(), 0);
            assert!(turned_on >= n - 1);
        }
    }

    proptest::proptest! {
        /// Any bytes: never a panic.
        #[test]
        fn fuzz_never_panics(input in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let _ = parse_bytes(&input);
        }

        /// Mutations of valid writes: never a panic, and what is accepted
        /// prints a line naming the command, its target and its filter as
        /// written.
        #[test]
        fn fuzz_mutated(
            base in proptest::sample::select(&[
                "traceoff:3 if prev_pid == 1", "enable_event:sched:sched_wakeup:2 if a",
                "!snapshot", "stacktrace:0x10", "disable_event:sched:sched_waking",
                "traceon  07\tif  x",
            ][..]),
            edits in proptest::collection::vec((0usize..40, proptest::sample::select(&[
                b':', b' ', b'\t', b'!', b'0', b'9', b'x', b'i', b'f', b'\n', 0u8, b'-', b'+',
            ][..])), 0..4),
        ) {
            let mut s = base.as_bytes().to_vec();
            for (at, b) in edits {
                let at = at.min(s.len());
                s.insert(at, b);
            }
            if let Ok(Some(spec)) = parse_bytes(&s) {
                let l = line(&spec);
                proptest::prop_assert!(l.starts_with(spec.cmd.name()));
                proptest::prop_assert!(l.ends_with('\n'));
                if let Some(t) = &spec.target {
                    let want = alloc::format!("{}:{}:", spec.cmd.name(), t);
                    proptest::prop_assert!(l.starts_with(&want));
                }
                if let Some(f) = &spec.filter {
                    let want = alloc::format!(" if {}\n", f);
                    proptest::prop_assert!(l.ends_with(&want));
                    proptest::prop_assert!(!f.is_empty());
                }
            }
        }
    }
}
