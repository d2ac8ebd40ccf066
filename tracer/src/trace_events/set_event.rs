//! The user's switches for trace events: what a write to `set_event`,
//! `events/enable`, `events/SYSTEM/enable`, the `filter` and `trigger`
//! files and `set_event_pid` means (Linux: kernel/trace/trace_events.c,
//! `ftrace_event_write()`, `ftrace_set_clr_event()`,
//! `__ftrace_set_clr_event_nolock()`, `system_enable_read/write()`,
//! `event_pid_write()` and the pid-filter probes; trace.c's
//! `trace_get_user()`).
//!
//! This is the decision half, independent of the kernel: it turns the text
//! written into the list of (event, enable) changes to make, and computes
//! what the files show. The kernel (`kernel/src/trace/event_files.rs`)
//! applies the changes to its events and creates the files.
//!
//! - `set_event` takes whitespace-separated tokens of at most 127 bytes.
//!   A leading `!` disables. `SYS:EVENT` names events by system and name;
//!   an empty side or `*` means any (`*:*`, `:name`, `sched:`). A token
//!   without `:` matches every event whose name *or* system is the token,
//!   so `sched` is the whole system. Names are compared whole (`strcmp`):
//!   `sched:sched_*` matches nothing. A token that matches nothing is
//!   `EINVAL`.
//! - Linux handles one token per `write()` call and returns how much of the
//!   buffer it used, so a shell's `echo` (which writes until everything is
//!   taken or a call fails) applies the tokens one after the other and
//!   stops at the first bad one: `echo 'sched:sched_wakeup bogus' >
//!   set_event` enables sched_wakeup and prints `Invalid argument`
//!   (checked on Linux 6.1). [`set_event_write`] gives exactly that: the
//!   changes of the tokens before the first bad one, and its error.
//! - `enable` of a system or of `events/` reads `0`, `1`, `X` (some on,
//!   some off) or `?` (no event), and takes `0` or `1` as
//!   `kstrtoul_from_user` parses them (so `+1` and `01` work, ` 1` does
//!   not).
//! - `set_event_pid` is a [`PidFilter`] (`trace_pid_write()`, shared with
//!   `set_ftrace_pid`); [`EventPidLists`] holds it with
//!   `set_event_notrace_pid` and answers what Linux's probes on
//!   sched_switch and the wakeups compute for the per-CPU `ignore_pid` flag.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::errno::Errno;
use crate::filter::{is_space, user_tokens, PidFilter};

/// Longest `set_event` token (Linux: `EVENT_BUF_SIZE`, the parser's buffer
/// of 128 bytes with its NUL).
pub const EVENT_BUF_SIZE: usize = 127;

/// Writes of this size or more to `filter` and `trigger` are `EINVAL`
/// (Linux compares with `PAGE_SIZE`).
pub const PAGE_SIZE: usize = 4096;

/// Which events a `set_event` token names (the three strings of
/// `__ftrace_set_clr_event_nolock()`; `None` = any).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventSelector<'a> {
    /// A token without `:`: the event's name or its system.
    pub name_or_system: Option<&'a [u8]>,
    pub system: Option<&'a [u8]>,
    pub event: Option<&'a [u8]>,
}

impl<'a> EventSelector<'a> {
    /// Parses the token after its `!` (Linux: `ftrace_set_clr_event()`).
    /// The first `:` splits system from event; an empty side or `*` is
    /// "any". Whatever follows (another `:` included) is the event name,
    /// which then matches nothing.
    pub fn parse(token: &'a [u8]) -> EventSelector<'a> {
        let any = |s: &'a [u8]| (!s.is_empty() && s != b"*").then_some(s);
        match token.iter().position(|&c| c == b':') {
            Some(i) => EventSelector {
                name_or_system: None,
                system: any(&token[..i]),
                event: any(&token[i + 1..]),
            },
            None => EventSelector {
                name_or_system: Some(token),
                system: None,
                event: None,
            },
        }
    }

    /// Does the event `system:name` match?
    pub fn matches(&self, system: &str, name: &str) -> bool {
        let (system, name) = (system.as_bytes(), name.as_bytes());
        if let Some(m) = self.name_or_system {
            if m != name && m != system {
                return false;
            }
        }
        self.system.is_none_or(|s| s == system) && self.event.is_none_or(|e| e == name)
    }
}

/// One `set_event` token: enable or disable (`!`), and which events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetClr<'a> {
    pub enable: bool,
    pub selector: EventSelector<'a>,
}

impl<'a> SetClr<'a> {
    /// Parses a token (Linux: `ftrace_event_write()` then
    /// `ftrace_set_clr_event()`).
    pub fn parse(token: &'a [u8]) -> SetClr<'a> {
        let (enable, rest) = match token.first() {
            Some(b'!') => (false, &token[1..]),
            _ => (true, token),
        };
        SetClr {
            enable,
            selector: EventSelector::parse(rest),
        }
    }

    /// The indices in `events` (`(system, name)` pairs, the events that
    /// can be enabled) of every event this token names; `EINVAL` if none.
    pub fn select(&self, events: &[(&str, &str)]) -> Result<Vec<usize>, Errno> {
        let hits: Vec<usize> = events
            .iter()
            .enumerate()
            .filter(|(_, (sys, name))| self.selector.matches(sys, name))
            .map(|(i, _)| i)
            .collect();
        if hits.is_empty() {
            return Err(Errno::EINVAL);
        }
        Ok(hits)
    }
}

/// What a write to `set_event` does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetEventWrite {
    /// `(index in the event list, enable)`, in the order the tokens gave
    /// them; to be applied in this order (a later token wins).
    pub changes: Vec<(usize, bool)>,
    /// The error of the first bad token, which `write()` returns after the
    /// changes of the tokens before it were applied.
    pub error: Option<Errno>,
}

/// A write to `set_event` against the events that can be enabled, as a
/// shell's `echo` sees Linux handle it: the tokens are applied in order
/// and the first bad one (too long, or naming no event) stops the write
/// with `EINVAL`; the tokens before it stay applied. A write of only
/// spaces changes nothing and succeeds.
pub fn set_event_write(input: &[u8], events: &[(&str, &str)]) -> SetEventWrite {
    let mut out = SetEventWrite::default();
    for tok in user_tokens(input, EVENT_BUF_SIZE) {
        let result = tok.and_then(|t| {
            let cmd = SetClr::parse(t);
            cmd.select(events).map(|hits| (cmd.enable, hits))
        });
        match result {
            Ok((enable, hits)) => out.changes.extend(hits.into_iter().map(|i| (i, enable))),
            Err(e) => {
                out.error = Some(e);
                break;
            }
        }
    }
    out
}

/// What reading `set_event` shows: `system:event` of every enabled event,
/// one per line, in the order of the event list.
pub fn set_event_text(events: &[(&str, &str)], enabled: impl Fn(usize) -> bool) -> String {
    let mut s = String::new();
    for (i, (sys, name)) in events.iter().enumerate() {
        if enabled(i) {
            s.push_str(sys);
            s.push(':');
            s.push_str(name);
            s.push('\n');
        }
    }
    s
}

/// What `events/enable` or `events/SYSTEM/enable` reads, given whether
/// each of its events is enabled (Linux: `system_enable_read()`): `0\n`
/// all off, `1\n` all on, `X\n` mixed, `?\n` no event.
pub fn system_enable_text(enabled: impl IntoIterator<Item = bool>) -> &'static str {
    let mut set = 0u8;
    for on in enabled {
        set |= 1 << on as u8;
        if set == 3 {
            break;
        }
    }
    ["?\n", "0\n", "1\n", "X\n"][set as usize]
}

/// A write to an `enable` file: `kstrtoul_from_user(.., 10)`, then only 0
/// or 1 (else `EINVAL`; a number too large for 64 bits is `ERANGE`).
pub fn parse_enable(input: &[u8]) -> Result<bool, Errno> {
    match crate::options::kstrtoul_from_user(input, 10)? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Errno::EINVAL),
    }
}

// ---------------------------------------------------------------------------
// filter and trigger files, while this kernel has no filters or triggers

/// `events/SYSTEM/EVENT/filter` without a filter.
pub const EVENT_FILTER_NONE: &str = "none\n";

/// `events/SYSTEM/filter` without a filter (Linux:
/// `DEFAULT_SYS_FILTER_MESSAGE`).
pub const SYSTEM_FILTER_DEFAULT: &str = "### global filter ###\n\
# Use this to set filters for multiple events.\n\
# Only events with the given fields will be affected.\n\
# If no events are modified, an error message will be displayed here\n";

/// The commands a trigger can name, in Linux's order (a 6.1 kernel with
/// snapshot, stack traces and hist triggers configured).
pub const TRIGGER_COMMANDS: &[&str] = &[
    "traceon",
    "traceoff",
    "snapshot",
    "stacktrace",
    "enable_event",
    "disable_event",
    "enable_hist",
    "disable_hist",
    "hist",
];

/// `events/SYSTEM/EVENT/trigger` without a trigger.
pub fn trigger_text_empty() -> String {
    let mut s = String::from("# Available triggers:\n#");
    for c in TRIGGER_COMMANDS {
        s.push(' ');
        s.push_str(c);
    }
    s.push('\n');
    s
}

/// Linux's `strstrip()`: without leading and trailing spaces.
pub fn strstrip(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&c| !is_space(c)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&c| !is_space(c))
        .map_or(start, |e| e + 1);
    &s[start..end]
}

/// A write to a `trigger` file while triggers are not built (Linux:
/// `event_trigger_regex_write()`, `trigger_process_regex()`). The text is
/// stripped; the command is what comes before the first `:`, space or tab,
/// less a leading `!`; an unknown command is `EINVAL`. Removing (`!`) one
/// of the simple commands (traceon, traceoff, snapshot, stacktrace)
/// succeeds whatever follows, as on Linux when that trigger is not set,
/// and none is. Setting a trigger, or removing one of the commands that
/// need an argument, is `EINVAL`: this kernel cannot run triggers yet.
pub fn trigger_write(input: &[u8]) -> Result<(), Errno> {
    if input.is_empty() {
        return Ok(());
    }
    if input.len() >= PAGE_SIZE {
        return Err(Errno::EINVAL);
    }
    let text = strstrip(input);
    let end = text
        .iter()
        .position(|&c| matches!(c, b':' | b' ' | b'\t'))
        .unwrap_or(text.len());
    match &text[..end] {
        b"!traceon" | b"!traceoff" | b"!snapshot" | b"!stacktrace" => Ok(()),
        _ => Err(Errno::EINVAL),
    }
}

// ---------------------------------------------------------------------------
// set_event_pid and set_event_notrace_pid

/// What reading `set_event_pid` or `set_event_notrace_pid` shows: one pid
/// per line, ascending; nothing without a list (unlike `set_ftrace_pid`,
/// which says `no pid`).
pub fn event_pid_text(list: &PidFilter) -> String {
    let mut s = String::new();
    for p in list.pids() {
        let _ = writeln!(s, "{}", p);
    }
    s
}

/// The two pid lists of the event layer, as the probes consult them.
pub trait PidLists {
    /// `Some(listed)` when `set_event_pid` has a list, `None` without one.
    fn pid_listed(&self, pid: i32) -> Option<bool>;
    /// The same for `set_event_notrace_pid`.
    fn no_pid_listed(&self, pid: i32) -> Option<bool>;

    /// `trace_ignore_this_task()` with both lists: a task is ignored when
    /// there is a pid list without it, or a notrace list with it.
    fn ignore_task(&self, pid: i32) -> bool {
        self.pid_listed(pid) == Some(false) || self.no_pid_listed(pid) == Some(true)
    }

    /// Is either list set? Without one no event is filtered by pid
    /// (Linux: `trace_event_ignore_this_pid()` returns false at once).
    /// Whether a list exists does not depend on the pid asked about.
    fn filtering(&self) -> bool {
        self.pid_listed(0).is_some() || self.no_pid_listed(0).is_some()
    }

    /// `ignore_pid` from the probe that runs *before* the events of a
    /// sched_switch: the switch is recorded when prev or next is traced
    /// (and ignored when both are on the notrace list).
    fn switch_pre(&self, prev: i32, next: i32) -> bool {
        let both_notrace =
            self.no_pid_listed(prev) == Some(true) && self.no_pid_listed(next) == Some(true);
        let neither_listed =
            self.pid_listed(prev) == Some(false) && self.pid_listed(next) == Some(false);
        both_notrace || neither_listed
    }

    /// `ignore_pid` from the probe that runs *after* the events of a
    /// sched_switch: from now on the CPU runs `next`.
    fn switch_post(&self, next: i32) -> bool {
        self.ignore_task(next)
    }

    /// `ignore_pid` from the probe before the events of a wakeup (waking,
    /// wakeup, wakeup_new) of `task`: a wakeup of a traced task is
    /// recorded even when the waker is not traced.
    fn wakeup_pre(&self, ignore: bool, task: i32) -> bool {
        if !ignore {
            return false;
        }
        self.ignore_task(task)
    }

    /// `ignore_pid` from the probe after the events of a wakeup: back to
    /// what the current task gives.
    fn wakeup_post(&self, ignore: bool, current: i32) -> bool {
        if ignore {
            return true;
        }
        self.ignore_task(current)
    }
}

/// `set_event_pid` and `set_event_notrace_pid` (Linux: `tr->filtered_pids`,
/// `tr->filtered_no_pids`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventPidLists {
    pub pids: PidFilter,
    pub no_pids: PidFilter,
}

impl PidLists for EventPidLists {
    fn pid_listed(&self, pid: i32) -> Option<bool> {
        (!self.pids.is_empty()).then(|| self.pids.contains(pid))
    }
    fn no_pid_listed(&self, pid: i32) -> Option<bool> {
        (!self.no_pids.is_empty()).then(|| self.no_pids.contains(pid))
    }
}

impl EventPidLists {
    /// No list: every task is traced.
    pub const fn new() -> EventPidLists {
        EventPidLists {
            pids: PidFilter::new(),
            no_pids: PidFilter::new(),
        }
    }

    /// The `event-fork` rule (Linux: `event_filter_pid_sched_process_fork`
    /// and `_exit`, through `trace_filter_add_remove_task()` on both
    /// lists): a child of a listed task joins each list its parent is on;
    /// a task that goes (`parent` None) leaves both. True if a list
    /// changed.
    pub fn follow_task(&mut self, parent: Option<i32>, task: i32) -> bool {
        let a = self.pids.follow_task(parent, task);
        let b = self.no_pids.follow_task(parent, task);
        a || b
    }
}

/// A pid list as probes read it without a lock: `N` atomic slots and
/// whether the list exists. One writer at a time publishes a new list into
/// it ([`PidSlots::publish`]); it stores the pids it adds before it clears
/// the ones it removes, so a reader sees every pid either listed or not,
/// never a torn value, and a pid that is in the old and the new list is
/// listed throughout.
pub struct PidSlots<const N: usize> {
    /// The list exists (Linux: the `trace_pid_list` pointer is not NULL).
    on: AtomicBool,
    slots: [AtomicU32; N],
}

const EMPTY_SLOT: u32 = u32::MAX;

impl<const N: usize> PidSlots<N> {
    /// No list.
    pub const fn new() -> Self {
        PidSlots {
            on: AtomicBool::new(false),
            slots: [const { AtomicU32::new(EMPTY_SLOT) }; N],
        }
    }

    /// `None` without a list, else whether `pid` is on it.
    #[inline(always)]
    pub fn listed(&self, pid: i32) -> Option<bool> {
        if !self.on.load(Ordering::Acquire) {
            return None;
        }
        let pid = pid as u32;
        Some(self.slots.iter().any(|s| s.load(Ordering::Acquire) == pid))
    }

    fn has(&self, pid: u32) -> bool {
        self.slots.iter().any(|s| s.load(Ordering::Relaxed) == pid)
    }

    /// Adds the pids of `list` that are missing, as far as free slots go.
    fn add(&self, list: &PidFilter) {
        for pid in list.pids() {
            if self.has(pid) {
                continue;
            }
            let free = self
                .slots
                .iter()
                .find(|s| s.load(Ordering::Relaxed) == EMPTY_SLOT);
            if let Some(free) = free {
                free.store(pid, Ordering::Release);
            }
        }
    }

    /// Makes the slots hold `list`, which has at most `N` pids (`ENOSPC`
    /// otherwise, and nothing changes): the new pids first, as far as free
    /// slots go, then the old ones leave, then the rest of the new ones.
    /// Only one caller at a time (the caller holds the lists' lock).
    pub fn publish(&self, list: &PidFilter) -> Result<(), Errno> {
        if list.pids().count() > N {
            return Err(Errno::ENOSPC);
        }
        if list.is_empty() {
            self.on.store(false, Ordering::Release);
        }
        self.add(list);
        for s in &self.slots {
            let pid = s.load(Ordering::Relaxed);
            if pid != EMPTY_SLOT && !list.contains(pid as i32) {
                s.store(EMPTY_SLOT, Ordering::Release);
            }
        }
        self.add(list);
        if !list.is_empty() {
            self.on.store(true, Ordering::Release);
        }
        Ok(())
    }
}

impl<const N: usize> Default for PidSlots<N> {
    fn default() -> Self {
        Self::new()
    }
}
