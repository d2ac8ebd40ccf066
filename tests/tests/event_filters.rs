//! QEMU test of event filters (`events/SYSTEM/EVENT/filter`,
//! `events/SYSTEM/filter`) and `error_log`: only matching records reach
//! `trace` (a number, a comm glob, a `__data_loc` path glob), `cat filter`
//! reads back what was written, a bad filter shows Linux's error report
//! in the file and in `error_log` and leaves the event unfiltered, the
//! subsystem filter reaches the events that have the field, and filters
//! belong to their trace array. Texts and errnos as Linux 6.1 shows them
//! (/work/shared/linux/qemu.sh).

use tests::Kernel;

const T: &str = "/tracing";
const SW: &str = "events/sched/sched_switch";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

fn cat(k: &mut Kernel, file: &str) -> String {
    clean(&k.run(&format!("cat {T}/{file}")))
}

/// `echo 'TEXT' > FILE`, and what the shell printed.
fn write(k: &mut Kernel, text: &str, file: &str) -> String {
    clean(&k.run(&format!("echo '{text}' > {T}/{file}")))
}

/// The `trace` lines of event `name`.
fn events(k: &mut Kernel, name: &str) -> Vec<String> {
    let tag = format!(" {name}: ");
    cat(k, "trace")
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(&tag))
        .map(String::from)
        .collect()
}

/// Empties `trace`, enables `event` (SYS/NAME), runs `cmd`, disables it.
fn record(k: &mut Kernel, event: &str, cmd: &str) {
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    assert_eq!(write(k, "1", &format!("events/{event}/enable")), "");
    let out = clean(&k.run(cmd));
    assert_eq!(write(k, "0", &format!("events/{event}/enable")), "");
    if cmd.starts_with("work ") {
        assert!(out.contains(" 0 errors"), "{cmd}: {out}");
    }
}

/// The text after `name` up to the next space.
fn value<'a>(line: &'a str, name: &str) -> &'a str {
    let at = line
        .find(name)
        .unwrap_or_else(|| panic!("{name} in {line}"))
        + name.len();
    line[at..].split(' ').next().unwrap()
}

#[test]
fn filters_keep_only_matching_records() {
    let mut k = Kernel::boot(&["--smp", "2"]);

    // A number: only switches to the idle task.
    assert_eq!(write(&mut k, "next_pid == 0", &format!("{SW}/filter")), "");
    assert_eq!(cat(&mut k, &format!("{SW}/filter")), "next_pid == 0\n");
    record(&mut k, "sched/sched_switch", "work sleep 1");
    let lines = events(&mut k, "sched_switch");
    assert!(!lines.is_empty(), "no switch to idle recorded");
    for l in &lines {
        assert_eq!(value(l, " next_pid="), "0", "{l}");
    }

    // A glob on a char[16] comm, with && and a negation.
    let f = "next_comm ~ \"swapper*\" && !(prev_pid == 0)";
    assert_eq!(write(&mut k, f, &format!("{SW}/filter")), "");
    assert_eq!(cat(&mut k, &format!("{SW}/filter")), format!("{f}\n"));
    record(&mut k, "sched/sched_switch", "work sleep 1");
    let lines = events(&mut k, "sched_switch");
    assert!(!lines.is_empty());
    for l in &lines {
        assert!(value(l, " next_comm=").starts_with("swapper/"), "{l}");
        assert_ne!(value(l, " prev_pid="), "0", "{l}");
    }

    // A glob on a __data_loc string: only the opens of format files.
    let f = "filename ~ \"*/format\" || ret < 0";
    assert_eq!(write(&mut k, f, "events/vfs/vfs_open/filter"), "");
    record(
        &mut k,
        "vfs/vfs_open",
        &format!("cat {T}/{SW}/format {T}/{SW}/id /nonexistent"),
    );
    let opens: Vec<String> = events(&mut k, "vfs_open")
        .iter()
        .map(|l| value(l, " filename=").to_string())
        .collect();
    assert_eq!(
        opens,
        [format!("{T}/{SW}/format"), String::from("/nonexistent")]
    );
    assert_eq!(write(&mut k, "0", "events/vfs/vfs_open/filter"), "");
    assert_eq!(cat(&mut k, "events/vfs/vfs_open/filter"), "none\n");

    // A bad filter: Linux's report in the file and in error_log, EINVAL
    // (ENOENT for a missing ')', as Linux returns), and the event is left
    // unfiltered: switches away from idle are recorded again.
    assert_eq!(write(&mut k, "", "error_log"), "");
    assert_eq!(
        write(&mut k, "next_pid == 0 && foo == 1", &format!("{SW}/filter")),
        "sh: write error: Invalid argument\n"
    );
    assert_eq!(
        cat(&mut k, &format!("{SW}/filter")),
        "next_pid == 0 && foo == 1\n                     ^\nparse_error: Field not found\n\n"
    );
    assert_eq!(
        write(&mut k, "(prev_pid == 1", &format!("{SW}/filter")),
        "sh: write error: No such file or directory\n"
    );
    let log = cat(&mut k, "error_log");
    let log: Vec<&str> = log.lines().collect();
    assert_eq!(log.len(), 6, "{log:?}");
    for (entry, (text, cmd, caret)) in log.chunks(3).zip([
        ("Field not found", "next_pid == 0 && foo == 1", 21),
        ("Too many '('", "(prev_pid == 1", 0),
    ]) {
        let (stamp, rest) = entry[0].split_once("] ").unwrap();
        assert!(stamp.starts_with('[') && stamp.contains('.'), "{entry:?}");
        assert_eq!(rest, format!("event filter parse error: error: {text}"));
        assert_eq!(entry[1], format!("  Command: {cmd}"));
        assert_eq!(entry[2], format!("{}^", " ".repeat(11 + caret)));
    }
    record(&mut k, "sched/sched_switch", "work sleep 1");
    assert!(
        events(&mut k, "sched_switch")
            .iter()
            .any(|l| value(l, " next_pid=") != "0"),
        "the event stayed filtered after a bad filter"
    );
    assert_eq!(write(&mut k, "", "error_log"), "");
    assert_eq!(cat(&mut k, "error_log"), "");

    // The subsystem filter: set where the field exists, an error (caret
    // at 0, logged) where it does not; the system file keeps its help.
    assert_eq!(write(&mut k, "prev_pid == 1", "events/sched/filter"), "");
    assert!(cat(&mut k, "events/sched/filter").starts_with("### global filter ###\n"));
    assert_eq!(cat(&mut k, &format!("{SW}/filter")), "prev_pid == 1\n");
    assert_eq!(
        cat(&mut k, "events/sched/sched_wakeup/filter"),
        "prev_pid == 1\n^\nparse_error: Couldn't find or set field in one of a subsystem's events\n\n"
    );
    let log = cat(&mut k, "error_log");
    assert!(
        log.contains("event filter parse error: error: Couldn't find or set field in one of a subsystem's events\n  Command: prev_pid == 1\n           ^\n"),
        "{log}"
    );
    assert_eq!(write(&mut k, "0", "events/sched/filter"), "");
    assert_eq!(cat(&mut k, &format!("{SW}/filter")), "none\n");
    assert_eq!(cat(&mut k, "events/sched/sched_wakeup/filter"), "none\n");

    // Filters and error logs belong to their trace array.
    assert_eq!(write(&mut k, "", "error_log"), "");
    assert_eq!(k.run(&format!("mkdir {T}/instances/foo")), "");
    assert_eq!(
        write(
            &mut k,
            "next_pid == 0",
            &format!("instances/foo/{SW}/filter")
        ),
        ""
    );
    assert_eq!(
        cat(&mut k, &format!("instances/foo/{SW}/filter")),
        "next_pid == 0\n"
    );
    assert_eq!(cat(&mut k, &format!("{SW}/filter")), "none\n");
    assert_eq!(
        write(&mut k, "bad", &format!("instances/foo/{SW}/filter")),
        "sh: write error: Invalid argument\n"
    );
    assert!(cat(&mut k, "instances/foo/error_log").contains("  Command: bad\n"));
    assert_eq!(cat(&mut k, "error_log"), "");
    assert_eq!(k.run(&format!("rmdir {T}/instances/foo")), "");

    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(std::time::Duration::from_secs(60)), 0);
}
