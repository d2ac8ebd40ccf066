//! QEMU tests of the files that switch trace events as a group: `set_event`
//! (syntax, `>` and `>>`, errors), the `enable` files of `events/` and its
//! systems (0/1/X), the empty `filter` and `trigger` files (filters
//! themselves: event_filters.rs), and
//! `set_event_pid` with `event-fork`, whose filtering shows in `trace`.
//! Expected behaviour and errnos were checked on Linux 6.1
//! (/work/shared/linux/qemu.sh).

use tests::Kernel;

const T: &str = "/tracing";
const EINVAL: &str = "sh: write error: Invalid argument\n";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

fn cat(k: &mut Kernel, file: &str) -> String {
    clean(&k.run(&format!("cat {T}/{file}")))
}

/// Runs `echo WORDS > FILE` (or `>>`) and returns what the shell printed.
fn echo(k: &mut Kernel, words: &str, redir: &str, file: &str) -> String {
    clean(&k.run(&format!("echo {words} {redir} {T}/{file}")))
}

fn lines(s: &str) -> Vec<String> {
    s.lines().map(String::from).collect()
}

/// `set_event` syntax, `>` vs `>>`, the enable files, errors that change
/// nothing (or, as on Linux, keep the tokens before the bad one), and the
/// filter and trigger files as Linux shows them empty. One boot.
#[test]
fn set_event_syntax_enable_files_and_errors() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let available = lines(&cat(&mut k, "available_events"));
    let sched: Vec<String> = available
        .iter()
        .filter(|e| e.starts_with("sched:"))
        .cloned()
        .collect();
    assert!(sched.len() >= 2, "{available:?}");
    // Another system, if the kernel has one yet.
    let other_system = available
        .iter()
        .find(|e| !e.starts_with("sched:"))
        .map(|e| e.split(':').next().unwrap().to_string());

    assert_eq!(cat(&mut k, "set_event"), "");
    assert_eq!(cat(&mut k, "events/enable"), "0\n");
    assert_eq!(cat(&mut k, "events/sched/enable"), "0\n");

    // One event: the system is mixed, so is everything.
    assert_eq!(echo(&mut k, "sched:sched_switch", ">", "set_event"), "");
    assert_eq!(cat(&mut k, "set_event"), "sched:sched_switch\n");
    assert_eq!(cat(&mut k, "events/sched/sched_switch/enable"), "1\n");
    assert_eq!(cat(&mut k, "events/sched/enable"), "X\n");
    assert_eq!(cat(&mut k, "events/enable"), "X\n");
    if let Some(other) = &other_system {
        assert_eq!(cat(&mut k, &format!("events/{other}/enable")), "0\n");
    }

    // `>>` adds; `>` replaces.
    assert_eq!(echo(&mut k, "sched:sched_wakeup", ">>", "set_event"), "");
    let mut two = lines(&cat(&mut k, "set_event"));
    two.sort();
    assert_eq!(two, ["sched:sched_switch", "sched:sched_wakeup"]);
    assert_eq!(echo(&mut k, "sched:sched_wakeup", ">", "set_event"), "");
    assert_eq!(cat(&mut k, "set_event"), "sched:sched_wakeup\n");

    // A whole system, three ways; the listing follows available_events.
    for all_sched in ["'sched:*'", "sched:", "sched"] {
        assert_eq!(echo(&mut k, all_sched, ">", "set_event"), "");
        assert_eq!(lines(&cat(&mut k, "set_event")), sched, "{all_sched}");
        assert_eq!(cat(&mut k, "events/sched/enable"), "1\n");
    }
    // `!` disables one.
    assert_eq!(echo(&mut k, "'!sched:sched_switch'", ">>", "set_event"), "");
    let rest: Vec<String> = sched
        .iter()
        .filter(|e| *e != "sched:sched_switch")
        .cloned()
        .collect();
    assert_eq!(lines(&cat(&mut k, "set_event")), rest);
    assert_eq!(cat(&mut k, "events/sched/sched_switch/enable"), "0\n");
    assert_eq!(cat(&mut k, "events/sched/enable"), "X\n");

    // Everything, then nothing.
    assert_eq!(echo(&mut k, "'*:*'", ">", "set_event"), "");
    assert_eq!(lines(&cat(&mut k, "set_event")), available);
    assert_eq!(cat(&mut k, "events/enable"), "1\n");
    assert_eq!(k.run(&format!("echo > {T}/set_event")), "");
    assert_eq!(cat(&mut k, "set_event"), "");
    assert_eq!(cat(&mut k, "events/enable"), "0\n");

    // Bad tokens: EINVAL, nothing changed.
    assert_eq!(echo(&mut k, "sched:sched_switch", ">", "set_event"), "");
    for bad in [
        "bogus",
        "'sched:sched_*'",
        "'*'",
        "sched:sched_switch:x",
        "'!bogus'",
        "'!'",
    ] {
        assert_eq!(echo(&mut k, bad, ">>", "set_event"), EINVAL, "{bad}");
        assert_eq!(cat(&mut k, "set_event"), "sched:sched_switch\n", "{bad}");
    }
    // As on Linux, the tokens before a bad one stay applied, and `>`
    // cleared everything at open.
    assert_eq!(
        echo(
            &mut k,
            "'sched:sched_wakeup bogus sched:sched_switch'",
            ">",
            "set_event"
        ),
        EINVAL
    );
    assert_eq!(cat(&mut k, "set_event"), "sched:sched_wakeup\n");
    assert_eq!(echo(&mut k, "bogus", ">", "set_event"), EINVAL);
    assert_eq!(cat(&mut k, "set_event"), "");

    // enable files: 0 or 1, else EINVAL and nothing changes.
    assert_eq!(echo(&mut k, "1", ">", "events/sched/enable"), "");
    assert_eq!(lines(&cat(&mut k, "set_event")), sched);
    let all = if other_system.is_some() { "X\n" } else { "1\n" };
    for bad in ["2", "x", "' 1'", "0x1", "-0", "''"] {
        assert_eq!(
            echo(&mut k, bad, ">", "events/sched/enable"),
            EINVAL,
            "{bad}"
        );
        assert_eq!(echo(&mut k, bad, ">", "events/enable"), EINVAL, "{bad}");
        assert_eq!(cat(&mut k, "events/sched/enable"), "1\n", "{bad}");
        assert_eq!(cat(&mut k, "events/enable"), all, "{bad}");
    }
    assert_eq!(echo(&mut k, "0", ">", "events/enable"), "");
    assert_eq!(echo(&mut k, "+1", ">", "events/enable"), "");
    assert_eq!(cat(&mut k, "events/enable"), "1\n");
    assert_eq!(echo(&mut k, "0", ">", "events/enable"), "");
    assert_eq!(cat(&mut k, "set_event"), "");

    // filter and trigger files, as Linux shows them with none set.
    let ev = "events/sched/sched_switch";
    assert_eq!(cat(&mut k, &format!("{ev}/filter")), "none\n");
    assert_eq!(
        cat(&mut k, "events/sched/filter"),
        "### global filter ###\n\
         # Use this to set filters for multiple events.\n\
         # Only events with the given fields will be affected.\n\
         # If no events are modified, an error message will be displayed here\n"
    );
    assert_eq!(
        cat(&mut k, &format!("{ev}/trigger")),
        "# Available triggers:\n\
         # traceon traceoff snapshot stacktrace enable_event disable_event hist\n"
    );
    assert_eq!(echo(&mut k, "0", ">", &format!("{ev}/filter")), "");
    assert_eq!(echo(&mut k, "0", ">", "events/sched/filter"), "");
    assert_eq!(
        echo(&mut k, "'!traceon'", ">", &format!("{ev}/trigger")),
        ""
    );
    let file = format!("{ev}/trigger");
    assert_eq!(echo(&mut k, "bogus", ">", &file), EINVAL, "bogus > {file}");
    assert_eq!(cat(&mut k, &format!("{ev}/filter")), "none\n");
    // The ftrace system: no enable or filter; only print has a trigger.
    assert_eq!(
        lines(&cat(&mut k, "events/ftrace/print/trigger")),
        lines(&cat(&mut k, &format!("{ev}/trigger")))
    );
    let ftrace = clean(&k.run(&format!("ls {T}/events/ftrace {T}/events/ftrace/function")));
    for absent in ["enable", "filter", "trigger"] {
        assert!(!ftrace.lines().any(|l| l == absent), "{ftrace}");
    }

    // set_event_pid: `>` replaces, `>>` adds, a bad number keeps the list.
    assert_eq!(cat(&mut k, "set_event_pid"), "");
    assert_eq!(echo(&mut k, "1 2", ">", "set_event_pid"), "");
    assert_eq!(echo(&mut k, "3", ">>", "set_event_pid"), "");
    assert_eq!(cat(&mut k, "set_event_pid"), "1\n2\n3\n");
    for bad in ["abc", "'5 abc'", "-1"] {
        assert_eq!(echo(&mut k, bad, ">>", "set_event_pid"), EINVAL, "{bad}");
    }
    assert_eq!(
        clean(&k.run(&format!("echo 1073741824 >> {T}/set_event_pid"))),
        "sh: write error: Operation not permitted\n"
    );
    assert_eq!(k.run(&format!("echo >> {T}/set_event_pid")), "");
    assert_eq!(cat(&mut k, "set_event_pid"), "1\n2\n3\n");
    assert_eq!(k.run(&format!("echo > {T}/set_event_pid")), "");
    assert_eq!(cat(&mut k, "set_event_pid"), "");
    assert_eq!(echo(&mut k, "7", ">", "set_event_notrace_pid"), "");
    assert_eq!(cat(&mut k, "set_event_notrace_pid"), "7\n");
    assert_eq!(k.run(&format!("echo > {T}/set_event_notrace_pid")), "");
}
/// `prev_pid=` and `next_pid=` of a sched_switch line of `trace`.
fn switch_pids(line: &str) -> (u32, u32) {
    (field(line, " prev_pid="), field(line, " next_pid="))
}

/// The number after `name` in a line of `trace`.
fn field(line: &str, name: &str) -> u32 {
    let at = line.find(name).unwrap_or_else(|| panic!("{line}")) + name.len();
    let digits: String = line[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().unwrap_or_else(|_| panic!("{line}"))
}

/// The sched_switch lines of `trace`, as (prev_pid, next_pid).
fn switches(k: &mut Kernel) -> Vec<(u32, u32)> {
    cat(k, "trace")
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(" sched_switch: "))
        .map(switch_pids)
        .collect()
}

/// The wakeup lines (sched_waking, sched_wakeup, sched_wakeup_new) of
/// `trace`, as (pid of the task that woke, pid of the woken task).
fn wakeups(k: &mut Kernel) -> Vec<(u32, u32)> {
    cat(k, "trace")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            [" sched_waking: ", " sched_wakeup: ", " sched_wakeup_new: "]
                .iter()
                .any(|e| l.contains(e))
        })
        .map(|l| {
            let task = l.split_whitespace().next().unwrap();
            let waker = task.rsplit_once('-').unwrap().1.parse().unwrap();
            (waker, field(l, " pid="))
        })
        .collect()
}

/// `work sleep 3` (on each CPU, two new tasks that hand a token back and
/// forth, sleeping in between, so each switches to and from the idle task)
/// with tracing on, and the switches it recorded.
fn run_work(k: &mut Kernel) -> Vec<(u32, u32)> {
    assert_eq!(k.run(&format!("echo 0 > {T}/tracing_on")), "");
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    assert_eq!(k.run(&format!("echo 1 > {T}/tracing_on")), "");
    let r = clean(&k.run("work sleep 3"));
    assert!(r.contains(" 0 errors"), "{r}");
    assert_eq!(k.run(&format!("echo 0 > {T}/tracing_on")), "");
    switches(k)
}

/// set_event_pid keeps the events of other tasks out of `trace`: a
/// sched_switch is recorded when prev or next is listed. With event-fork
/// the tasks a listed task creates are listed too, and leave when they
/// exit. The shell is pid 1; `work sleep` runs on tasks it creates.
#[test]
fn set_event_pid_filters_trace() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    assert_eq!(echo(&mut k, "sched:sched_switch", ">", "set_event"), "");
    let without_sh = |s: &[(u32, u32)]| s.iter().any(|&(p, n)| p != 1 && n != 1);

    // No list: switches between other tasks (work's and idle) show.
    let all = run_work(&mut k);
    assert!(without_sh(&all), "no switch without the shell: {all:?}");

    // Only the shell: every switch has it on one side.
    assert_eq!(echo(&mut k, "1", ">", "set_event_pid"), "");
    let only_sh = run_work(&mut k);
    assert!(!only_sh.is_empty());
    assert!(!without_sh(&only_sh), "{only_sh:?}");

    // Wakeups: recorded when the waker or the woken task is listed; the
    // shell, asleep waiting for work or for the console, is woken by
    // others (work's tasks, the console interrupt on the idle task), and
    // those wakeups show. Without a list, work's tasks waking each other
    // show too.
    let wake = "'sched:sched_waking sched:sched_wakeup sched:sched_wakeup_new'";
    assert_eq!(echo(&mut k, wake, ">>", "set_event"), "");
    run_work(&mut k);
    let w = wakeups(&mut k);
    assert!(w.iter().all(|&(by, woken)| by == 1 || woken == 1), "{w:?}");
    assert!(w.iter().any(|&(by, woken)| by != 1 && woken == 1), "{w:?}");
    assert_eq!(k.run(&format!("echo > {T}/set_event_pid")), "");
    run_work(&mut k);
    let w = wakeups(&mut k);
    assert!(w.iter().any(|&(by, woken)| by != 1 && woken != 1), "{w:?}");
    assert_eq!(echo(&mut k, "sched:sched_switch", ">", "set_event"), "");
    assert_eq!(echo(&mut k, "1", ">", "set_event_pid"), "");

    // event-fork (off by default): work's tasks join the list while they
    // live, so their switches to and from idle show.
    assert_eq!(cat(&mut k, "options/event-fork"), "0\n");
    assert_eq!(echo(&mut k, "event-fork", ">", "trace_options"), "");
    assert!(cat(&mut k, "trace_options")
        .lines()
        .any(|l| l == "event-fork"));
    let forked = run_work(&mut k);
    assert!(without_sh(&forked), "children not followed: {forked:?}");
    // They left the list when they exited.
    assert_eq!(cat(&mut k, "set_event_pid"), "1\n");

    // Off again: not followed any more; then no list: everything shows.
    assert_eq!(echo(&mut k, "0", ">", "options/event-fork"), "");
    let not_followed = run_work(&mut k);
    assert!(!without_sh(&not_followed), "{not_followed:?}");
    assert_eq!(k.run(&format!("echo > {T}/set_event_pid")), "");
    let again = run_work(&mut k);
    assert!(without_sh(&again), "{again:?}");

    // set_event_notrace_pid: a switch is dropped when both sides are
    // listed. Pids are not reused, so the next run's four tasks (a pair
    // per CPU) take the four pids after the last one seen; with them and
    // idle listed, only the switches with the shell remain.
    let last = again.iter().map(|&(p, n)| p.max(n)).max().unwrap();
    let next: Vec<String> = (last + 1..=last + 4).map(|p| p.to_string()).collect();
    let words = format!("'0 {}'", next.join(" "));
    assert_eq!(echo(&mut k, &words, ">", "set_event_notrace_pid"), "");
    let notrace = run_work(&mut k);
    assert!(!notrace.is_empty());
    assert!(!without_sh(&notrace), "{notrace:?}");
    assert_eq!(k.run(&format!("echo > {T}/set_event_notrace_pid")), "");
}

/// The `jmp` sites `jump_label_check` counts (every other site is its NOP).
fn jmp_sites(k: &mut Kernel) -> usize {
    let check = clean(&k.run("jump_label_check"));
    assert!(check.contains(" 0 bad,"), "{check}");
    let before = check.split(" jmp,").next().unwrap();
    before
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{check}"))
}

/// The event lines of `DIR/trace` (DIR "" for the top level), as the event
/// names they record.
fn event_names(k: &mut Kernel, dir: &str) -> Vec<String> {
    cat(k, &format!("{dir}trace"))
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            // `TASK-PID [CPU] FLAGS TIME: NAME: ARGS`
            let (_, rest) = l.split_once(": ")?;
            rest.split_once(':').map(|(name, _)| String::from(name))
        })
        .collect()
}

/// The sched_switch lines of `DIR/trace`, as (prev_pid, next_pid).
fn switches_in(k: &mut Kernel, dir: &str) -> Vec<(u32, u32)> {
    cat(k, &format!("{dir}trace"))
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(" sched_switch: "))
        .map(switch_pids)
        .collect()
}

/// Empties the three traces, runs `work sleep 2` (tasks that switch to and
/// from idle) with tracing on everywhere.
fn clear_and_work(k: &mut Kernel) {
    for dir in ["", "instances/foo/", "instances/bar/"] {
        assert_eq!(k.run(&format!("echo > {T}/{dir}trace")), "", "{dir}");
    }
    let r = clean(&k.run("work sleep 2"));
    assert!(r.contains(" 0 errors"), "{r}");
}

/// Each trace array has its own events: enabling one in an instance
/// records it in that instance's buffer only, with its own pid filter; the
/// same event in two arrays is two probes on one tracepoint (its sites
/// stay `jmp` until the last goes); `event-fork` follows children for its
/// own array's list; `rmdir` of an instance with events, a pid list and
/// `event-fork` on takes its probes away. The shell is
/// pid 1; `work sleep` runs on tasks it creates.
#[test]
fn instances_have_their_own_events() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let base = jmp_sites(&mut k);
    for name in ["foo", "bar"] {
        assert_eq!(k.run(&format!("mkdir {T}/instances/{name}")), "");
    }
    // The event files of an instance (available_events is top level only),
    // and the same events/ tree as the top level.
    let files = lines(&clean(&k.run(&format!("ls -1 {T}/instances/foo"))));
    for f in [
        "events",
        "set_event",
        "set_event_pid",
        "set_event_notrace_pid",
    ] {
        assert!(files.iter().any(|l| l == f), "{f}: {files:?}");
    }
    assert!(!files.iter().any(|l| l == "available_events"), "{files:?}");
    let top_events = clean(&k.run(&format!("ls -1 {T}/events")));
    assert_eq!(
        clean(&k.run(&format!("ls -1 {T}/instances/foo/events"))),
        top_events
    );
    assert_eq!(
        clean(&k.run(&format!("ls -1 {T}/instances/foo/events/ftrace/print"))),
        "format\nid\ntrigger\n"
    );
    assert_eq!(
        cat(&mut k, "instances/foo/events/sched/sched_switch/format"),
        cat(&mut k, "events/sched/sched_switch/format")
    );

    // Top level: the shell's events; foo: sched_switch; bar: sched_switch
    // of the shell only.
    assert_eq!(echo(&mut k, "1", ">", "events/shell/enable"), "");
    let with_shell = jmp_sites(&mut k);
    assert!(with_shell > base);
    assert_eq!(
        echo(&mut k, "sched:sched_switch", ">", "instances/foo/set_event"),
        ""
    );
    let with_switch = jmp_sites(&mut k);
    assert!(with_switch > with_shell);
    assert_eq!(
        echo(
            &mut k,
            "1",
            ">",
            "instances/bar/events/sched/sched_switch/enable"
        ),
        ""
    );
    // One key, two probes: no more sites.
    assert_eq!(jmp_sites(&mut k), with_switch);
    // bar's pid list adds its probes on the switch and the wakeups.
    assert_eq!(echo(&mut k, "1", ">", "instances/bar/set_event_pid"), "");
    let with_pid = jmp_sites(&mut k);

    // What each array's files read.
    assert_eq!(
        cat(&mut k, "set_event"),
        "shell:shell_command_entry\nshell:shell_command_exit\n"
    );
    assert_eq!(
        cat(&mut k, "instances/foo/set_event"),
        "sched:sched_switch\n"
    );
    assert_eq!(
        cat(&mut k, "instances/bar/set_event"),
        "sched:sched_switch\n"
    );
    assert_eq!(cat(&mut k, "events/sched/sched_switch/enable"), "0\n");
    assert_eq!(cat(&mut k, "events/sched/enable"), "0\n");
    assert_eq!(cat(&mut k, "instances/foo/events/sched/enable"), "X\n");
    assert_eq!(cat(&mut k, "instances/foo/events/shell/enable"), "0\n");
    assert_eq!(cat(&mut k, "instances/foo/events/enable"), "X\n");
    assert_eq!(cat(&mut k, "set_event_pid"), "");
    assert_eq!(cat(&mut k, "instances/foo/set_event_pid"), "");
    assert_eq!(cat(&mut k, "instances/bar/set_event_pid"), "1\n");

    // Each trace has its own events only.
    clear_and_work(&mut k);
    let top = event_names(&mut k, "");
    assert!(top.iter().any(|e| e == "shell_command_entry"), "{top:?}");
    assert!(
        top.iter().all(|e| e.starts_with("shell_command_")),
        "{top:?}"
    );
    let foo = event_names(&mut k, "instances/foo/");
    assert!(
        !foo.is_empty() && foo.iter().all(|e| e == "sched_switch"),
        "{foo:?}"
    );
    let bar = event_names(&mut k, "instances/bar/");
    assert!(
        !bar.is_empty() && bar.iter().all(|e| e == "sched_switch"),
        "{bar:?}"
    );
    // foo has no pid list: work's tasks switch to and from idle there;
    // bar's list is the shell: every switch has it on one side.
    let without_sh = |s: &[(u32, u32)]| s.iter().any(|&(p, n)| p != 1 && n != 1);
    let foo_sw = switches_in(&mut k, "instances/foo/");
    assert!(without_sh(&foo_sw), "{foo_sw:?}");
    let bar_sw = switches_in(&mut k, "instances/bar/");
    assert!(!bar_sw.is_empty() && !without_sh(&bar_sw), "{bar_sw:?}");

    // Off in foo: foo records nothing more, bar still does, and the sites
    // stay on for bar's probe.
    assert_eq!(echo(&mut k, "0", ">", "instances/foo/events/enable"), "");
    assert_eq!(jmp_sites(&mut k), with_pid);
    assert_eq!(cat(&mut k, "instances/foo/set_event"), "");
    clear_and_work(&mut k);
    assert_eq!(event_names(&mut k, "instances/foo/"), Vec::<String>::new());
    assert!(!switches_in(&mut k, "instances/bar/").is_empty());

    // event-fork is per array: foo lists the shell and follows the tasks
    // it makes (work's switch with idle), bar lists the shell only.
    assert_eq!(
        echo(
            &mut k,
            "1",
            ">",
            "instances/foo/events/sched/sched_switch/enable"
        ),
        ""
    );
    assert_eq!(echo(&mut k, "1", ">", "instances/foo/set_event_pid"), "");
    assert_eq!(
        echo(&mut k, "1", ">", "instances/foo/options/event-fork"),
        ""
    );
    assert_eq!(cat(&mut k, "instances/bar/options/event-fork"), "0\n");
    clear_and_work(&mut k);
    let foo_sw = switches_in(&mut k, "instances/foo/");
    assert!(without_sh(&foo_sw), "children not followed: {foo_sw:?}");
    let bar_sw = switches_in(&mut k, "instances/bar/");
    assert!(!bar_sw.is_empty() && !without_sh(&bar_sw), "{bar_sw:?}");
    // They left foo's list when they exited.
    assert_eq!(cat(&mut k, "instances/foo/set_event_pid"), "1\n");

    // rmdir takes the instances' probes (events, pid filters, event-fork)
    // away; the top level keeps its events.
    assert_eq!(
        echo(&mut k, "1", ">", "instances/bar/options/event-fork"),
        ""
    );
    assert_eq!(cat(&mut k, "options/event-fork"), "0\n");
    for name in ["foo", "bar"] {
        assert_eq!(k.run(&format!("rmdir {T}/instances/{name}")), "");
    }
    assert_eq!(jmp_sites(&mut k), with_shell);
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    let r = clean(&k.run("work sleep 1"));
    assert!(r.contains(" 0 errors"), "{r}");
    let top = event_names(&mut k, "");
    assert!(top.iter().any(|e| e == "shell_command_entry"), "{top:?}");
    assert_eq!(
        cat(&mut k, "set_event"),
        "shell:shell_command_entry\nshell:shell_command_exit\n"
    );
    assert_eq!(echo(&mut k, "0", ">", "events/enable"), "");
    assert_eq!(jmp_sites(&mut k), base);
}
