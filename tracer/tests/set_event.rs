//! The event switches' logic: `set_event` parsing and matching, the
//! `enable` aggregation, the filter/trigger files while empty and the
//! event pid lists, each against what Linux 6.1 does (checked on the real
//! VM, `/work/shared/linux/qemu.sh`).

use tracer::errno::Errno;
use tracer::filter::{user_tokens, PidFilter};
use tracer::trace_events::set_event::*;

/// A slice of Linux's event list: several systems, and an event named
/// like a system (`irq` is a system; `sched` appears as both).
const EVENTS: &[(&str, &str)] = &[
    ("sched", "sched_switch"),
    ("sched", "sched_wakeup"),
    ("sched", "sched_waking"),
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("kmem", "kmalloc"),
    ("kmem", "kfree"),
    ("other", "sched"),
];

fn names(w: &SetEventWrite) -> Vec<(String, bool)> {
    w.changes
        .iter()
        .map(|&(i, on)| (format!("{}:{}", EVENTS[i].0, EVENTS[i].1), on))
        .collect()
}

fn enabled_by(input: &str) -> Vec<String> {
    let w = set_event_write(input.as_bytes(), EVENTS);
    assert_eq!(w.error, None, "{input:?}");
    names(&w)
        .into_iter()
        .filter(|(_, on)| *on)
        .map(|(n, _)| n)
        .collect()
}

#[test]
fn one_event_by_system_and_name() {
    assert_eq!(enabled_by("sched:sched_switch\n"), ["sched:sched_switch"]);
    // Any name in a system: `*`, or nothing after the colon.
    let sched = [
        "sched:sched_switch",
        "sched:sched_wakeup",
        "sched:sched_waking",
    ];
    assert_eq!(enabled_by("sched:*"), sched);
    assert_eq!(enabled_by("sched:"), sched);
    // Any system: `*:name` and `:name`.
    assert_eq!(enabled_by("*:kfree"), ["kmem:kfree"]);
    assert_eq!(enabled_by(":kfree"), ["kmem:kfree"]);
    // Everything: `*:*` and a lone `:` (Linux enabled all 1372 events).
    assert_eq!(enabled_by("*:*").len(), EVENTS.len());
    assert_eq!(enabled_by(":").len(), EVENTS.len());
    assert_eq!(enabled_by(":*").len(), EVENTS.len());
}

#[test]
fn a_token_without_colon_is_a_name_or_a_system() {
    // `sched` is the sched system and the event other:sched.
    assert_eq!(
        enabled_by("sched"),
        [
            "sched:sched_switch",
            "sched:sched_wakeup",
            "sched:sched_waking",
            "other:sched"
        ]
    );
    // An event's own name, whatever its system.
    assert_eq!(enabled_by("kmalloc"), ["kmem:kmalloc"]);
    assert_eq!(enabled_by("irq").len(), 2);
}

#[test]
fn bang_disables() {
    let w = set_event_write(b"!sched:sched_switch", EVENTS);
    assert_eq!(w.error, None);
    assert_eq!(names(&w), [("sched:sched_switch".to_string(), false)]);
    let w = set_event_write(b"!irq", EVENTS);
    assert_eq!(w.changes, [(3, false), (4, false)]);
    // `!` names nothing (an empty name), and `!bogus` nothing either.
    assert_eq!(set_event_write(b"!", EVENTS).error, Some(Errno::EINVAL));
    assert_eq!(
        set_event_write(b"!bogus", EVENTS).error,
        Some(Errno::EINVAL)
    );
    // A `!` inside a token is part of the name.
    assert_eq!(
        set_event_write(b"sched:!sched_switch", EVENTS).error,
        Some(Errno::EINVAL)
    );
}

#[test]
fn matching_is_by_whole_names_without_globs() {
    for bad in [
        "sched:sched_*",
        "sched*",
        "*",
        "sched_sw",
        "SCHED",
        "sched:kfree",
        "a:b:c",
        "sched:sched_switch:x",
        "bogus",
        "bogus:",
        ":bogus",
    ] {
        let w = set_event_write(bad.as_bytes(), EVENTS);
        assert_eq!(w.error, Some(Errno::EINVAL), "{bad}");
        assert!(w.changes.is_empty(), "{bad}");
    }
}

#[test]
fn tokens_apply_in_order_until_the_first_bad_one() {
    // Linux 6.1: `echo 'sched:sched_wakeup bogus' > set_event` enables
    // sched_wakeup, then fails; `echo 'bogus sched:sched_waking'` enables
    // nothing.
    let w = set_event_write(b"sched:sched_wakeup bogus\n", EVENTS);
    assert_eq!(w.error, Some(Errno::EINVAL));
    assert_eq!(names(&w), [("sched:sched_wakeup".to_string(), true)]);
    let w = set_event_write(b"bogus sched:sched_waking\n", EVENTS);
    assert_eq!(w.error, Some(Errno::EINVAL));
    assert!(w.changes.is_empty());
    // Several good tokens, any whitespace between them; a later token wins
    // because the changes are applied in order.
    let w = set_event_write(b"sched\t!sched:sched_wakeup \n  kfree", EVENTS);
    assert_eq!(w.error, None);
    assert_eq!(
        w.changes,
        [
            (0, true),
            (1, true),
            (2, true),
            (7, true),
            (1, false),
            (6, true)
        ]
    );
}

#[test]
fn empty_and_space_only_writes_change_nothing() {
    for input in ["", "\n", "   ", " \t\r\n"] {
        let w = set_event_write(input.as_bytes(), EVENTS);
        assert_eq!(w, SetEventWrite::default(), "{input:?}");
    }
    // The last token needs no newline.
    assert_eq!(enabled_by("sched:sched_wakeup"), ["sched:sched_wakeup"]);
}

#[test]
fn tokens_are_at_most_127_bytes() {
    // 127 bytes is a token (naming nothing here); 128 is too long.
    let t127 = format!("sched:{}", "a".repeat(121));
    let t128 = format!("sched:{}", "a".repeat(122));
    assert_eq!(t127.len(), 127);
    let mut toks = user_tokens(t127.as_bytes(), EVENT_BUF_SIZE);
    assert_eq!(toks.next(), Some(Ok(t127.as_bytes())));
    assert_eq!(toks.next(), None);
    let mut toks = user_tokens(t128.as_bytes(), EVENT_BUF_SIZE);
    assert_eq!(toks.next(), Some(Err(Errno::EINVAL)));
    assert_eq!(toks.next(), None);
    // A long run of spaces between tokens is not a token.
    let spaced = format!("sched:sched_switch{}sched:sched_wakeup\n", " ".repeat(300));
    assert_eq!(
        enabled_by(&spaced),
        ["sched:sched_switch", "sched:sched_wakeup"]
    );
    // A good token then a too-long one: the first applies, then EINVAL.
    let w = set_event_write(format!("kfree {t128} kmalloc").as_bytes(), EVENTS);
    assert_eq!(w.error, Some(Errno::EINVAL));
    assert_eq!(names(&w), [("kmem:kfree".to_string(), true)]);
}

#[test]
fn nul_and_non_ascii_bytes() {
    // A NUL ends a token like a space.
    assert_eq!(enabled_by("kfree\0kmalloc"), ["kmem:kfree", "kmem:kmalloc"]);
    // 0xA0 is a space for the kernel's isspace().
    let w = set_event_write(b"kfree\xa0kmalloc", EVENTS);
    assert_eq!(w.changes, [(6, true), (5, true)]);
    // Other bytes are part of the name, which then matches nothing.
    assert_eq!(
        set_event_write(b"kfree\xff", EVENTS).error,
        Some(Errno::EINVAL)
    );
}

#[test]
fn selector_parse() {
    let s = EventSelector::parse(b"sched:*");
    assert_eq!(
        (s.name_or_system, s.system, s.event),
        (None, Some(&b"sched"[..]), None)
    );
    let s = EventSelector::parse(b"*:sched_switch");
    assert_eq!(
        (s.name_or_system, s.system, s.event),
        (None, None, Some(&b"sched_switch"[..]))
    );
    let s = EventSelector::parse(b"irq");
    assert_eq!(s.name_or_system, Some(&b"irq"[..]));
    let c = SetClr::parse(b"!irq:irq_handler_exit");
    assert!(!c.enable);
    assert!(c.selector.matches("irq", "irq_handler_exit"));
    assert!(!c.selector.matches("irq", "irq_handler_entry"));
    assert_eq!(c.select(EVENTS), Ok(vec![4]));
    assert_eq!(SetClr::parse(b"nothing").select(EVENTS), Err(Errno::EINVAL));
}

#[test]
fn set_event_reads_enabled_events_in_list_order() {
    let on = [true, false, true, false, false, false, true, false];
    assert_eq!(
        set_event_text(EVENTS, |i| on[i]),
        "sched:sched_switch\nsched:sched_waking\nkmem:kfree\n"
    );
    assert_eq!(set_event_text(EVENTS, |_| false), "");
}

#[test]
fn enable_aggregation() {
    assert_eq!(system_enable_text([]), "?\n");
    assert_eq!(system_enable_text([false, false]), "0\n");
    assert_eq!(system_enable_text([true, true, true]), "1\n");
    assert_eq!(system_enable_text([true, false]), "X\n");
    assert_eq!(system_enable_text([false, false, true]), "X\n");
    // Stops looking once mixed: works on an endless iterator.
    assert_eq!(
        system_enable_text([false, true].into_iter().chain(std::iter::repeat(true))),
        "X\n"
    );
}

#[test]
fn enable_writes_as_kstrtoul_from_user() {
    // Linux 6.1: 0, 1, 01 and +1 are accepted; 2, x, " 1", "1 ", 0x1, -0
    // and an empty line are EINVAL.
    assert_eq!(parse_enable(b"0\n"), Ok(false));
    assert_eq!(parse_enable(b"1\n"), Ok(true));
    assert_eq!(parse_enable(b"1"), Ok(true));
    assert_eq!(parse_enable(b"01\n"), Ok(true));
    assert_eq!(parse_enable(b"+1\n"), Ok(true));
    for bad in [
        &b"2\n"[..],
        b"x\n",
        b" 1\n",
        b"1 \n",
        b"0x1\n",
        b"-0\n",
        b"\n",
        b"",
        b"1\n\n",
    ] {
        assert_eq!(parse_enable(bad), Err(Errno::EINVAL), "{bad:?}");
    }
    assert_eq!(
        parse_enable(b"99999999999999999999999\n"),
        Err(Errno::ERANGE)
    );
}

#[test]
fn filter_and_trigger_files_while_empty() {
    assert_eq!(EVENT_FILTER_NONE, "none\n");
    assert_eq!(
        SYSTEM_FILTER_DEFAULT,
        "### global filter ###\n\
         # Use this to set filters for multiple events.\n\
         # Only events with the given fields will be affected.\n\
         # If no events are modified, an error message will be displayed here\n"
    );
    assert_eq!(
        trigger_text_empty(),
        "# Available triggers:\n\
         # traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist\n"
    );
    // `0` clears, with spaces around it too; anything else is compiled
    // (tracer::event_filter); PAGE_SIZE bytes or more is EINVAL.
    use tracer::event_filter::{parse_filter_write, FilterWrite};
    assert_eq!(parse_filter_write(b"0\n"), Ok(FilterWrite::Clear));
    assert_eq!(parse_filter_write(b" 0 \n"), Ok(FilterWrite::Clear));
    assert_eq!(
        parse_filter_write(b"00\n"),
        Ok(FilterWrite::Set("00".into()))
    );
    let mut big = vec![b' '; PAGE_SIZE - 2];
    big.push(b'0');
    assert_eq!(parse_filter_write(&big), Ok(FilterWrite::Clear));
    big.push(b' ');
    assert_eq!(parse_filter_write(&big), Err(Errno::EINVAL));
    // Triggers: removing a simple one that is not set succeeds (Linux:
    // `echo '!traceon' > trigger` is fine); anything else is EINVAL, as
    // Linux gives for an empty write, `0` or an unknown command.
    assert_eq!(trigger_write(b"!traceon\n"), Ok(()));
    assert_eq!(trigger_write(b"  !stacktrace  \n"), Ok(()));
    assert_eq!(trigger_write(b"!traceon:5\n"), Ok(()));
    assert_eq!(trigger_write(b"!traceon if prev_pid == 1\n"), Ok(()));
    assert_eq!(trigger_write(b"!snapshot\n"), Ok(()));
    assert_eq!(trigger_write(b""), Ok(()));
    for bad in [
        &b"\n"[..],
        b"0\n",
        b"bogus\n",
        b"!bogus\n",
        b"traceon\n",
        b"hist:keys=pid\n",
        b"!enable_event\n",
        b"!hist\n",
        b"!traceonx\n",
    ] {
        assert_eq!(trigger_write(bad), Err(Errno::EINVAL), "{bad:?}");
    }
}

#[test]
fn strstrip_strips_kernel_spaces() {
    assert_eq!(strstrip(b"  a b \n"), b"a b");
    assert_eq!(strstrip(b" \n "), b"");
    assert_eq!(strstrip(b""), b"");
    assert_eq!(strstrip(b"\xa0x\xa0"), b"x");
}

/// set_event_pid as Linux 6.1 did it: `echo 1 2 >`, `echo 3 >>`, bad
/// numbers keep the old list, `0x10 010` are 16 and 8, 2^30 is EPERM,
/// 2^32 is pid 0, an empty append keeps the list and `echo >` clears it.
#[test]
fn event_pid_writes() {
    let mut p = PidFilter::new();
    assert_eq!(event_pid_text(&p), "");
    p.write(true, b"1 2\n").unwrap();
    p.write(false, b"3\n").unwrap();
    assert_eq!(event_pid_text(&p), "1\n2\n3\n");
    let before = p.clone();
    assert_eq!(p.write(false, b"abc\n"), Err(Errno::EINVAL));
    assert_eq!(p.write(false, b"5 abc\n"), Err(Errno::EINVAL));
    assert_eq!(p.write(false, b"-1\n"), Err(Errno::EINVAL));
    assert_eq!(p.write(false, b"1073741824\n"), Err(Errno::EPERM));
    assert_eq!(p, before);
    p.write(false, b"0x10 010\n").unwrap();
    assert_eq!(event_pid_text(&p), "1\n2\n3\n8\n16\n");
    p.write(false, b"4294967296\n").unwrap();
    assert_eq!(event_pid_text(&p), "0\n1\n2\n3\n8\n16\n");
    // `echo >> set_event_pid` and `echo '  ' >>` keep the list.
    p.write(false, b"\n").unwrap();
    p.write(false, b"  \n").unwrap();
    assert_eq!(event_pid_text(&p), "0\n1\n2\n3\n8\n16\n");
    assert!(!p.is_empty());
    // `echo > set_event_pid`: truncated at open, then no pid: no list.
    p.write(true, b"\n").unwrap();
    assert_eq!(event_pid_text(&p), "");
    assert!(p.is_empty());
    // A number longer than 127 characters is EINVAL, even one that would
    // be small (leading zeros).
    let long = format!("{}1", "0".repeat(127));
    assert_eq!(p.write(false, long.as_bytes()), Err(Errno::EINVAL));
    let ok = format!("{}1", "0".repeat(126));
    p.write(false, ok.as_bytes()).unwrap();
    assert_eq!(event_pid_text(&p), "1\n");
}

fn lists(pids: &str, no_pids: &str) -> EventPidLists {
    let mut l = EventPidLists::default();
    if !pids.is_empty() {
        l.pids.write(true, pids.as_bytes()).unwrap();
    }
    if !no_pids.is_empty() {
        l.no_pids.write(true, no_pids.as_bytes()).unwrap();
    }
    l
}

#[test]
fn ignore_task_with_both_lists() {
    let none = lists("", "");
    assert!(!none.filtering());
    assert!(!none.ignore_task(5));
    let only = lists("5 6", "");
    assert!(only.filtering());
    assert!(!only.ignore_task(5) && only.ignore_task(7));
    let not = lists("", "5");
    assert!(not.filtering());
    assert!(not.ignore_task(5) && !not.ignore_task(7));
    // Listed in both: the notrace list wins.
    let both = lists("5 6", "6");
    assert!(!both.ignore_task(5) && both.ignore_task(6) && both.ignore_task(7));
}

#[test]
fn sched_switch_is_recorded_if_prev_or_next_is_traced() {
    let l = lists("5", "");
    assert!(!l.switch_pre(5, 0));
    assert!(!l.switch_pre(0, 5));
    assert!(l.switch_pre(1, 2));
    // After the switch the CPU follows next.
    assert!(!l.switch_post(5) && l.switch_post(0));
    // notrace: ignored only when both are on the list.
    let n = lists("", "5 6");
    assert!(n.switch_pre(5, 6));
    assert!(!n.switch_pre(5, 7));
    assert!(!n.switch_pre(7, 5));
    assert!(n.switch_post(6) && !n.switch_post(7));
    // No list: nothing ignored.
    assert!(!lists("", "").switch_pre(1, 2));
}

#[test]
fn wakeups_of_traced_tasks_are_recorded() {
    let l = lists("5", "");
    // The current task (say pid 9) is ignored: a wakeup of 5 is recorded,
    // one of 7 not; afterwards the flag is the current task's again.
    assert!(!l.wakeup_pre(true, 5));
    assert!(l.wakeup_pre(true, 7));
    assert!(l.wakeup_post(false, 9));
    assert!(l.wakeup_post(true, 9));
    // The current task is traced: every wakeup it makes is recorded.
    assert!(!l.wakeup_pre(false, 7));
    assert!(!l.wakeup_post(false, 5));
}

#[test]
fn event_fork_follows_children_on_both_lists() {
    let mut l = lists("1", "2");
    assert!(l.follow_task(Some(1), 10));
    assert!(l.follow_task(Some(2), 20));
    assert!(!l.follow_task(Some(3), 30));
    assert!(l.pids.contains(10) && !l.pids.contains(20));
    assert!(l.no_pids.contains(20) && !l.no_pids.contains(10));
    assert!(!l.ignore_task(10) && l.ignore_task(20) && l.ignore_task(30));
    assert!(l.follow_task(None, 10));
    assert!(l.follow_task(None, 20));
    assert!(!l.pids.contains(10) && !l.no_pids.contains(20));
    // Without lists there is nothing to follow.
    let mut e = EventPidLists::default();
    assert!(!e.follow_task(Some(1), 2));
}

fn filter(pids: &str) -> PidFilter {
    let mut f = PidFilter::new();
    f.write(true, pids.as_bytes()).unwrap();
    f
}

#[test]
fn pid_slots_publish() {
    let s: PidSlots<4> = PidSlots::new();
    assert_eq!(s.listed(1), None);
    s.publish(&filter("1 2")).unwrap();
    assert_eq!(
        (s.listed(1), s.listed(2), s.listed(3)),
        (Some(true), Some(true), Some(false))
    );
    // Full to full with a different set: the new pids go in once the old
    // ones have left.
    s.publish(&filter("1 2 3 4")).unwrap();
    s.publish(&filter("5 6 7 8")).unwrap();
    for p in 1..=4 {
        assert_eq!(s.listed(p), Some(false), "{p}");
    }
    for p in 5..=8 {
        assert_eq!(s.listed(p), Some(true), "{p}");
    }
    // Too many: ENOSPC, nothing changed.
    assert_eq!(s.publish(&filter("1 2 3 4 5")), Err(Errno::ENOSPC));
    assert_eq!((s.listed(5), s.listed(1)), (Some(true), Some(false)));
    // No list; then a list that exists but is empty (event-fork removed
    // its last task): it lists nobody.
    s.publish(&PidFilter::new()).unwrap();
    assert_eq!(s.listed(5), None);
    let mut emptied = filter("9");
    assert!(emptied.follow_task(None, 9));
    s.publish(&emptied).unwrap();
    assert_eq!(s.listed(9), Some(false));
}

/// Readers on other threads while one writer switches between two lists
/// over and over: a pid on both lists is always listed, a pid on neither
/// never, and the list always exists.
#[test]
fn pid_slots_readers_never_see_a_common_pid_missing() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let slots: Arc<PidSlots<8>> = Arc::new(PidSlots::new());
    let a = filter("1 2 3 10 11");
    let b = filter("1 2 3 20 21 22 23 24");
    slots.publish(&a).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (slots, stop) = (slots.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut passes = 0u64;
                while !stop.load(Ordering::Relaxed) || passes < 1000 {
                    for common in [1, 2, 3] {
                        assert_eq!(slots.listed(common), Some(true));
                    }
                    for neither in [4, 12, 30] {
                        assert_eq!(slots.listed(neither), Some(false));
                    }
                    passes += 1;
                }
            })
        })
        .collect();
    for i in 0..20_000 {
        slots.publish(if i % 2 == 0 { &b } else { &a }).unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
}
