//! set_ftrace_filter / set_ftrace_notrace / set_graph_function /
//! set_ftrace_pid semantics.

use tracer::errno::Errno;
use tracer::filter::*;

const FUNCS: &[&str] = &[
    "schedule",                  // 1
    "schedule_idle",             // 2
    "sched_fork",                // 3
    "do_sys_open",               // 4
    "sys_open",                  // 5
    "vfs_read",                  // 6
    "vfs_write",                 // 7
    "ksys_read",                 // 8
    "kernel::fs::vfs::read",     // 9
    "kernel::fs::vfs::write",    // 10
    "kernel::fs::ramfs::lookup", // 11
    "kernel::sched::schedule",   // 12
    "kernel::sched::tick",       // 13
    "kernel_main",               // 14
];

fn f() -> &'static dyn FuncNames {
    &FUNCS
}

fn filter_with(writes: &[&str]) -> FtraceFilter {
    let mut fl = FtraceFilter::new();
    for w in writes {
        fl.write(RegexFile::Filter, false, w.as_bytes(), f())
            .unwrap();
    }
    fl
}

fn listed(fl: &FtraceFilter) -> String {
    fl.read(RegexFile::Filter, f())
}

#[test]
fn empty_files_read_back_linux_text() {
    let fl = FtraceFilter::new();
    assert_eq!(
        fl.read(RegexFile::Filter, f()),
        "#### all functions enabled ####\n"
    );
    assert_eq!(
        fl.read(RegexFile::Notrace, f()),
        "#### no functions disabled ####\n"
    );
    assert!((0..FUNCS.len()).all(|i| fl.traces(i)));
}

#[test]
fn each_glob_form() {
    let cases: &[(&str, &str)] = &[
        ("schedule", "schedule\n"),
        ("sched*", "schedule\nschedule_idle\nsched_fork\n"),
        ("*_open", "do_sys_open\nsys_open\n"),
        ("*sys*", "do_sys_open\nsys_open\nksys_read\n"),
        ("vfs_[rw]*", "vfs_read\nvfs_write\n"),
        ("sch?dule", "schedule\n"),
        ("k*read", "ksys_read\nkernel::fs::vfs::read\n"),
        ("*[!_]read", "kernel::fs::vfs::read\n"),
        (
            "*",
            FUNCS
                .iter()
                .map(|s| format!("{s}\n"))
                .collect::<String>()
                .leak(),
        ),
        (
            "**",
            FUNCS
                .iter()
                .map(|s| format!("{s}\n"))
                .collect::<String>()
                .leak(),
        ),
        (
            "kernel::fs::*",
            "kernel::fs::vfs::read\nkernel::fs::vfs::write\nkernel::fs::ramfs::lookup\n",
        ),
        ("kernel::fs::vfs::read", "kernel::fs::vfs::read\n"),
        ("*::schedule", "kernel::sched::schedule\n"),
    ];
    for (pat, want) in cases {
        let fl = filter_with(&[pat]);
        assert_eq!(listed(&fl), *want, "pattern {pat}");
    }
}

#[test]
fn parse_regex_types() {
    let t = |s| filter_parse_regex(s);
    assert_eq!(
        t("foo"),
        FtraceGlob {
            ty: MatchType::Full,
            search: "foo",
            not: false
        }
    );
    assert_eq!(
        t("foo*"),
        FtraceGlob {
            ty: MatchType::FrontOnly,
            search: "foo",
            not: false
        }
    );
    assert_eq!(
        t("*foo"),
        FtraceGlob {
            ty: MatchType::EndOnly,
            search: "foo",
            not: false
        }
    );
    assert_eq!(
        t("*foo*"),
        FtraceGlob {
            ty: MatchType::MiddleOnly,
            search: "foo",
            not: false
        }
    );
    assert_eq!(t("f*o").ty, MatchType::Glob);
    assert_eq!(t("f?o").ty, MatchType::Glob);
    assert_eq!(t("[fg]oo").ty, MatchType::Glob);
    assert_eq!(
        t("!foo"),
        FtraceGlob {
            ty: MatchType::Full,
            search: "foo",
            not: true
        }
    );
    assert_eq!(
        t("12"),
        FtraceGlob {
            ty: MatchType::Index,
            search: "12",
            not: false
        }
    );
    assert_eq!(
        t("*"),
        FtraceGlob {
            ty: MatchType::EndOnly,
            search: "",
            not: false
        }
    );
}

#[test]
fn negation_append_truncate_and_several_names() {
    let mut fl = filter_with(&["sched*"]);
    fl.write(RegexFile::Filter, false, b"!schedule_idle", f())
        .unwrap();
    assert_eq!(listed(&fl), "schedule\nsched_fork\n");
    fl.write(RegexFile::Filter, false, b"vfs_read vfs_write\n", f())
        .unwrap();
    assert_eq!(listed(&fl), "schedule\nsched_fork\nvfs_read\nvfs_write\n");
    fl.write(RegexFile::Filter, true, b"sys_open\n", f())
        .unwrap();
    assert_eq!(listed(&fl), "sys_open\n");
    // `!name` on a function that exists but is not in the set is fine.
    fl.write(RegexFile::Filter, false, b"!vfs_read", f())
        .unwrap();
    assert_eq!(listed(&fl), "sys_open\n");
    // Removing the last one: back to all functions.
    fl.write(RegexFile::Filter, false, b"!sys_open", f())
        .unwrap();
    assert_eq!(listed(&fl), "#### all functions enabled ####\n");
    // `echo > set_ftrace_filter`: truncation with nothing written.
    let mut fl = filter_with(&["vfs_*"]);
    fl.write(RegexFile::Filter, true, b"\n", f()).unwrap();
    assert!(fl.filter.is_empty());
}

#[test]
fn index_form() {
    let mut fl = filter_with(&["1"]);
    assert_eq!(listed(&fl), "schedule\n");
    fl.write(RegexFile::Filter, false, b"0x2 14", f()).unwrap();
    assert_eq!(listed(&fl), "schedule\nschedule_idle\nkernel_main\n");
    fl.write(RegexFile::Filter, false, b"!1", f()).unwrap();
    assert_eq!(listed(&fl), "schedule_idle\nkernel_main\n");
    let before = fl.clone();
    assert_eq!(
        fl.write(RegexFile::Filter, false, b"0", f()),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        fl.write(RegexFile::Filter, false, b"15", f()),
        Err(Errno::EINVAL)
    );
    assert_eq!(fl, before);
}

#[test]
fn bad_writes_change_nothing() {
    let mut fl = filter_with(&["vfs_read"]);
    fl.write(RegexFile::Filter, false, b"schedule:traceoff", f())
        .unwrap();
    let before = fl.clone();
    for (trunc, w) in [
        (false, &b"no_such_function"[..]),
        (true, b"no_such_function"),
        (false, b"vfs_write no_such_function"),
        (true, b"sched* nope*"),
        (false, b"!"),
        (false, b"schedule:nosuchcmd"),
        (false, b"schedule:traceoff:xyz"),
        (false, b"nosuch:traceoff"),
        (false, b"!schedule:traceon"),
        (false, b"!nosuch:traceoff"),
        (false, b"vfs_*:mod:nosuchmod"),
        (false, &[0xff, 0xfe]),
    ] {
        assert_eq!(
            fl.write(RegexFile::Filter, trunc, w, f()),
            Err(Errno::EINVAL),
            "{:?}",
            String::from_utf8_lossy(w)
        );
        assert_eq!(
            fl,
            before,
            "{:?} changed the filter",
            String::from_utf8_lossy(w)
        );
    }
}

#[test]
fn commands_listing_and_removal() {
    // The selftest case: a command alone keeps "all functions enabled".
    let mut fl = FtraceFilter::new();
    fl.write(RegexFile::Filter, true, b"schedule:traceoff\n", f())
        .unwrap();
    assert_eq!(
        listed(&fl),
        "#### all functions enabled ####\nschedule:traceoff:unlimited\n"
    );
    assert!(fl.filter.is_empty());

    fl.write(RegexFile::Filter, false, b"sched*:traceon:5", f())
        .unwrap();
    fl.write(
        RegexFile::Filter,
        false,
        b"vfs_read:stacktrace:3 vfs_write:stacktrace",
        f(),
    )
    .unwrap();
    assert_eq!(
        listed(&fl),
        "#### all functions enabled ####\n\
         vfs_write:stacktrace:unlimited\n\
         vfs_read:stacktrace:count=3\n\
         schedule:traceon:count=5\n\
         schedule_idle:traceon:count=5\n\
         sched_fork:traceon:count=5\n\
         schedule:traceoff:unlimited\n"
    );
    // Truncation does not touch commands; the filter list comes first.
    fl.write(RegexFile::Filter, true, b"ksys_read", f())
        .unwrap();
    assert!(listed(&fl).starts_with("ksys_read\nvfs_write:stacktrace:unlimited\n"));
    // Removing: the unlimited and counted forms are separate probes.
    assert_eq!(
        fl.write(RegexFile::Filter, false, b"!vfs_read:stacktrace", f()),
        Err(Errno::EINVAL)
    );
    fl.write(RegexFile::Filter, false, b"!vfs_read:stacktrace:0", f())
        .unwrap();
    fl.write(RegexFile::Filter, false, b"!sched_*:traceon:0", f())
        .unwrap();
    fl.write(RegexFile::Filter, false, b"!schedule:traceoff", f())
        .unwrap();
    assert_eq!(
        listed(&fl),
        "ksys_read\nvfs_write:stacktrace:unlimited\nschedule:traceon:count=5\nschedule_idle:traceon:count=5\n"
    );
    fl.write(RegexFile::Filter, false, b"!*:traceon:0", f())
        .unwrap();
    assert_eq!(listed(&fl), "ksys_read\nvfs_write:stacktrace:unlimited\n");
    // An empty count: Linux registers the counted probe with count -1.
    fl.write(RegexFile::Filter, false, b"kernel_main:traceoff:", f())
        .unwrap();
    assert_eq!(
        listed(&fl),
        "ksys_read\nkernel_main:traceoff:count=-1\nvfs_write:stacktrace:unlimited\n"
    );
    // ...and such a probe never fires (Linux checks count <= 0).
    assert_eq!(fl.probe_hit(13, true), ProbeActions::default());
    // Commands only exist for set_ftrace_filter.
    let mut nt = FtraceFilter::new();
    assert_eq!(
        nt.write(RegexFile::Notrace, false, b"schedule:traceoff", f()),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        nt.read(RegexFile::Notrace, f()),
        "#### no functions disabled ####\n"
    );
}

/// A copy edited while the filter is in use (a filter file open for
/// writing) must not give back the counts that hits used up meanwhile,
/// but an entry the edits removed and registered again starts afresh.
#[test]
fn an_edited_copy_keeps_the_live_counts() {
    let mut live = filter_with(&["schedule:traceoff:3", "vfs_read:stacktrace:2"]);
    let mut copy = live.clone();
    // Meanwhile the live filter's probes fire.
    assert!(live.probe_hit(0, true).tracing_off);
    assert!(live.probe_hit(5, true).stacktrace);
    // The copy gets a new entry, and vfs_read's probe registered again.
    copy.write(RegexFile::Filter, false, b"sched_fork:traceoff:3", f())
        .unwrap();
    copy.write(RegexFile::Filter, false, b"!vfs_read:stacktrace:0", f())
        .unwrap();
    copy.write(RegexFile::Filter, false, b"vfs_read:stacktrace:5", f())
        .unwrap();
    copy.keep_live_counts(&live);
    assert_eq!(
        listed(&copy),
        "#### all functions enabled ####\n\
         vfs_read:stacktrace:count=5\n\
         schedule:traceoff:count=2\n\
         sched_fork:traceoff:count=3\n"
    );
    // Without the live filter's entries, a copy keeps its own counts.
    let mut other = copy.clone();
    other.keep_live_counts(&FtraceFilter::new());
    assert_eq!(other, copy);
}

/// Probe counts out of range, as Linux 6.1 answers them: kstrtoul base 0,
/// ERANGE above ULONG_MAX, the value kept in a `long` (so above LONG_MAX it
/// is negative, and a traceoff with it never fires), and registering a
/// probe on functions that all have it already adds nothing: EINVAL.
#[test]
fn probe_counts_out_of_range() {
    let mut fl = filter_with(&["schedule:traceoff:18446744073709551615"]);
    assert_eq!(
        listed(&fl),
        "#### all functions enabled ####\nschedule:traceoff:count=-1\n"
    );
    assert_eq!(fl.probe_hit(0, true), ProbeActions::default());
    let before = fl.clone();
    for w in [
        &b"schedule:traceoff:18446744073709551616"[..],
        b"schedule:traceoff:-3",
        b"schedule:traceoff:3x",
        b"schedule:traceoff:08",
    ] {
        let e = fl.write(RegexFile::Filter, false, w, f());
        assert!(e.is_err(), "{w:?}");
        assert_eq!(fl, before);
    }
    assert_eq!(
        fl.write(
            RegexFile::Filter,
            false,
            b"schedule:traceoff:18446744073709551616",
            f()
        ),
        Err(Errno::ERANGE)
    );
    // Already there: nothing added.
    assert_eq!(
        fl.write(RegexFile::Filter, false, b"schedule:traceoff:5", f()),
        Err(Errno::EINVAL)
    );
    assert_eq!(fl, before);
    // Above LONG_MAX: negative; a stacktrace still fires and the count
    // wraps as a `long` does.
    fl.write(
        RegexFile::Filter,
        false,
        b"schedule:stacktrace:0x8000000000000000",
        f(),
    )
    .unwrap();
    assert!(listed(&fl).contains("schedule:stacktrace:count=-9223372036854775808\n"));
    assert!(fl.probe_hit(0, true).stacktrace);
    assert!(listed(&fl).contains("schedule:stacktrace:count=9223372036854775807\n"));
}

#[test]
fn registering_again_keeps_counts() {
    let mut fl = filter_with(&["schedule:traceoff:2"]);
    assert!(fl.probe_hit(0, true).tracing_off);
    assert_eq!(
        listed(&fl),
        "#### all functions enabled ####\nschedule:traceoff:count=1\n"
    );
    fl.write(RegexFile::Filter, false, b"sched*:traceoff:7", f())
        .unwrap();
    assert_eq!(
        listed(&fl),
        "#### all functions enabled ####\nschedule:traceoff:count=1\nschedule_idle:traceoff:count=7\nsched_fork:traceoff:count=7\n"
    );
}

#[test]
fn probe_actions_and_counts() {
    let mut fl = filter_with(&[
        "schedule:traceoff",
        "vfs_read:traceon:1",
        "vfs_write:stacktrace:2",
        "sys_open:stacktrace",
    ]);
    let sched = 0;
    let (vr, vw, so) = (5, 6, 4);
    assert_eq!(
        fl.probe_hit(sched, true),
        ProbeActions {
            tracing_off: true,
            ..Default::default()
        }
    );
    assert_eq!(fl.probe_hit(sched, false), ProbeActions::default());
    // A counted traceon only counts real state changes.
    assert_eq!(fl.probe_hit(vr, true), ProbeActions::default());
    assert!(listed(&fl).contains("vfs_read:traceon:count=1\n"));
    assert!(fl.probe_hit(vr, false).tracing_on);
    assert!(listed(&fl).contains("vfs_read:traceon:count=0\n"));
    assert_eq!(fl.probe_hit(vr, false), ProbeActions::default());
    // Stack traces only while tracing is on; the count runs down.
    assert!(!fl.probe_hit(vw, false).stacktrace);
    assert!(fl.probe_hit(vw, true).stacktrace);
    assert!(fl.probe_hit(vw, true).stacktrace);
    assert!(!fl.probe_hit(vw, true).stacktrace);
    assert!(fl.probe_hit(so, true).stacktrace);
    assert!(fl.probe_hit(so, true).stacktrace);
    assert_eq!(fl.probe_hit(1, true), ProbeActions::default());
    assert_eq!(
        fl.probed_functions().iter().collect::<Vec<_>>(),
        vec![0, 4, 5, 6]
    );
}

#[test]
fn rust_paths_and_commands() {
    let fl = filter_with(&["kernel::sched::*:traceoff:2"]);
    assert_eq!(listed(&fl), "#### all functions enabled ####\nkernel::sched::schedule:traceoff:count=2\nkernel::sched::tick:traceoff:count=2\n");
    let (func, cmd) = split_command("kernel::fs::*:mod:kernel::fs");
    assert_eq!(
        (func, cmd),
        ("kernel::fs::*", Some(("mod", Some("kernel::fs"))))
    );
    assert_eq!(
        split_command("kernel::fs::vfs::read"),
        ("kernel::fs::vfs::read", None)
    );
    assert_eq!(split_command("f:traceon"), ("f", Some(("traceon", None))));
    assert_eq!(
        split_module("kernel::fs::vfs::read"),
        ("kernel::fs::vfs", "read")
    );
    assert_eq!(split_module("schedule"), ("", "schedule"));
}

#[test]
fn module_form() {
    let cases: &[(&str, &str)] = &[
        ("*:mod:kernel::fs", "kernel::fs::vfs::read\nkernel::fs::vfs::write\nkernel::fs::ramfs::lookup\n"),
        ("read:mod:kernel::fs", "kernel::fs::vfs::read\n"),
        ("*:mod:kernel::fs::vfs", "kernel::fs::vfs::read\nkernel::fs::vfs::write\n"),
        ("*:mod:kernel::*", "kernel::fs::vfs::read\nkernel::fs::vfs::write\nkernel::fs::ramfs::lookup\nkernel::sched::schedule\nkernel::sched::tick\n"),
        ("sch*:mod:kernel::sched", "kernel::sched::schedule\n"),
        ("*:mod:*", "kernel::fs::vfs::read\nkernel::fs::vfs::write\nkernel::fs::ramfs::lookup\nkernel::sched::schedule\nkernel::sched::tick\n"),
        ("*:mod:!*", "schedule\nschedule_idle\nsched_fork\ndo_sys_open\nsys_open\nvfs_read\nvfs_write\nksys_read\nkernel_main\n"),
        ("*:mod:!kernel", "schedule\nschedule_idle\nsched_fork\ndo_sys_open\nsys_open\nvfs_read\nvfs_write\nksys_read\nkernel_main\n"),
    ];
    for (w, want) in cases {
        assert_eq!(listed(&filter_with(&[w])), *want, "{w}");
    }
    let mut fl = filter_with(&["*:mod:kernel::fs"]);
    fl.write(RegexFile::Filter, false, b"!write:mod:kernel::fs", f())
        .unwrap();
    assert_eq!(
        listed(&fl),
        "kernel::fs::vfs::read\nkernel::fs::ramfs::lookup\n"
    );
    // The module form works in set_ftrace_notrace too.
    fl.write(RegexFile::Notrace, false, b"*:mod:kernel::fs::ramfs", f())
        .unwrap();
    assert_eq!(
        fl.read(RegexFile::Notrace, f()),
        "kernel::fs::ramfs::lookup\n"
    );
}

#[test]
fn filter_and_notrace_decide_traced() {
    let mut fl = FtraceFilter::new();
    fl.write(RegexFile::Notrace, true, b"vfs_*", f()).unwrap();
    assert!(fl.traces(0) && !fl.traces(5) && !fl.traces(6));
    fl.write(RegexFile::Filter, true, b"vfs_read schedule", f())
        .unwrap();
    assert!(fl.traces(0) && !fl.traces(5) && !fl.traces(1));
    assert_eq!(fl.read(RegexFile::Notrace, f()), "vfs_read\nvfs_write\n");
}

#[test]
fn graph_filters() {
    let mut g = GraphFilter::new(GraphFile::Function);
    assert_eq!(g.read(f()), "#### all functions enabled ####\n");
    assert_eq!(
        GraphFilter::new(GraphFile::Notrace).read(f()),
        "#### no functions disabled ####\n"
    );
    g.write(false, b"sched*", f()).unwrap();
    assert_eq!(g.read(f()), "schedule\nschedule_idle\nsched_fork\n");
    g.write(false, b"!schedule_idle", f()).unwrap();
    assert_eq!(g.read(f()), "schedule\nsched_fork\n");
    let before = g.clone();
    // Removing something not in the set, an unknown name, or the index
    // form (not supported by set_graph_function) is EINVAL.
    for bad in [
        &b"!vfs_read"[..],
        b"nosuch",
        b"1",
        b"vfs_read nosuch",
        b"schedule:traceoff",
    ] {
        assert_eq!(
            g.write(false, bad, f()),
            Err(Errno::EINVAL),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
        assert_eq!(g, before);
    }
    g.write(true, b"kernel::fs::vfs::*", f()).unwrap();
    assert_eq!(
        g.read(f()),
        "kernel::fs::vfs::read\nkernel::fs::vfs::write\n"
    );
    assert!(g.contains(8) && !g.contains(0));
}

#[test]
fn pid_filter() {
    let mut p = PidFilter::new();
    assert_eq!(p.read(), "no pid\n");
    assert!(p.allows(5));
    p.write(true, b"123 45\n").unwrap();
    assert_eq!(p.read(), "45\n123\n");
    assert!(p.allows(45) && !p.allows(5));
    p.write(false, b"0x10").unwrap();
    assert_eq!(p.read(), "16\n45\n123\n");
    p.write(true, b"7").unwrap();
    assert_eq!(p.read(), "7\n");
    let before = p.clone();
    assert_eq!(p.write(false, b"8 12x"), Err(Errno::EINVAL));
    assert_eq!(p.write(false, b"-3"), Err(Errno::EINVAL));
    assert_eq!(p.write(true, b"1073741824"), Err(Errno::EPERM));
    assert_eq!(
        p.write(false, b"99999999999999999999999"),
        Err(Errno::EINVAL)
    );
    assert_eq!(p, before);
    // An append of no pid keeps the list (Linux 6.1: `echo >>
    // set_ftrace_pid` changes nothing); `>` of no pid removes it.
    p.write(false, b"\n").unwrap();
    assert_eq!(p.read(), "7\n");
    p.write(true, b"\n").unwrap();
    assert_eq!(p.read(), "no pid\n");
    // The number is cast to pid_t: 2^32 + 5 is pid 5, as on Linux.
    p.write(false, b"4294967301").unwrap();
    assert_eq!(p.read(), "5\n");
    // PID_MAX_LIMIT is listed but its seq_file cursor is FTRACE_NO_PIDS:
    // it reads as `no pid` and hides the pids above it (Linux 6.1).
    p.write(true, b"4194304").unwrap();
    assert_eq!(p.read(), "no pid\n");
    assert!(p.allows(4194304) && !p.allows(5));
    p.write(false, b"3 4194303 4194305").unwrap();
    assert_eq!(p.read(), "3\n4194303\nno pid\n");
}

/// function-fork: children of listed tasks join the list, exiting tasks
/// leave it (trace_filter_add_remove_task).
#[test]
fn pid_filter_follows_forks_and_exits() {
    let mut p = PidFilter::new();
    // No list: nothing to follow.
    assert!(!p.follow_task(Some(1), 2));
    assert_eq!(p.read(), "no pid\n");
    p.write(true, b"1").unwrap();
    // A child of a listed task is added, a child of another is not.
    assert!(p.follow_task(Some(1), 5));
    assert!(!p.follow_task(Some(9), 6));
    // Grandchildren follow too.
    assert!(p.follow_task(Some(5), 7));
    assert_eq!(p.read(), "1\n5\n7\n");
    // Exits remove, whoever the task is; an unlisted one changes nothing.
    assert!(p.follow_task(None, 5));
    assert!(!p.follow_task(None, 6));
    assert_eq!(p.read(), "1\n7\n");
    assert!(p.follow_task(None, 7));
    assert!(p.follow_task(None, 1));
    // The last one gone: the list stays, empty, and traces no task (Linux
    // keeps the list; `set_ftrace_pid` then reads empty).
    assert_eq!(p.read(), "");
    assert!(!p.is_empty());
    assert!(!p.allows(1) && !p.allows(8));
    assert!(!p.follow_task(Some(1), 8));
    // Writing no pid to the empty list removes it (Linux counts no pid,
    // kept or new, and frees the list).
    p.write(false, b"").unwrap();
    assert_eq!(p.read(), "no pid\n");
    assert!(p.allows(8));
}

/// The cases of Linux's lib/globtest.c.
#[test]
fn glob_match_linux_selftest_cases() {
    let cases: &[(bool, &str, &str)] = &[
        (true, "a", "a"),
        (false, "a", "b"),
        (false, "a", "aa"),
        (false, "a", ""),
        (true, "", ""),
        (false, "", "a"),
        (true, "[a]", "a"),
        (false, "[a]", "b"),
        (false, "[!a]", "a"),
        (true, "[!a]", "b"),
        (true, "[ab]", "a"),
        (true, "[ab]", "b"),
        (false, "[ab]", "c"),
        (true, "[!ab]", "c"),
        (true, "[a-c]", "b"),
        (false, "[a-c]", "d"),
        (true, "[a-c-e-g]", "-"),
        (false, "[a-c-e-g]", "d"),
        (true, "[a-c-e-g]", "f"),
        (true, "[]a-ceg-ik[]", "a"),
        (true, "[]a-ceg-ik[]", "]"),
        (true, "[]a-ceg-ik[]", "["),
        (true, "[]a-ceg-ik[]", "h"),
        (false, "[]a-ceg-ik[]", "f"),
        (false, "[!]a-ceg-ik[]", "h"),
        (false, "[!]a-ceg-ik[]", "]"),
        (true, "[!]a-ceg-ik[]", "f"),
        (true, "?", "a"),
        (false, "?", "aa"),
        (false, "??", "a"),
        (true, "?x?", "axb"),
        (false, "?x?", "abx"),
        (false, "?x?", "xab"),
        (false, "*??", "a"),
        (true, "*??", "ab"),
        (true, "*??", "abc"),
        (true, "*??", "abcd"),
        (false, "??*", "a"),
        (true, "??*", "ab"),
        (true, "??*", "abc"),
        (true, "??*", "abcd"),
        (false, "?*?", "a"),
        (true, "?*?", "ab"),
        (true, "?*?", "abc"),
        (true, "?*?", "abcd"),
        (true, "*b", "b"),
        (true, "*b", "ab"),
        (false, "*b", "ba"),
        (true, "*b", "bb"),
        (true, "*b", "abb"),
        (true, "*b", "bab"),
        (true, "*bc", "abbc"),
        (true, "*bc", "bc"),
        (true, "*bc", "bbc"),
        (true, "*bc", "bcbc"),
        (true, "*ac*", "abacadaeafag"),
        (true, "*ac*ae*ag*", "abacadaeafag"),
        (true, "*a*b*[bc]*[ef]*g*", "abacadaeafag"),
        (false, "*a*b*[ef]*[cd]*g*", "abacadaeafag"),
        (true, "*abcd*", "abcabcabcabcdefg"),
        (true, "*ab*cd*", "abcabcabcabcdefg"),
        (true, "*abcd*abcdef*", "abcabcdabcdeabcdefg"),
        (false, "*abcd*", "abcabcabcabcefg"),
        (false, "*ab*cd*", "abcabcabcabcefg"),
    ];
    for &(want, pat, s) in cases {
        assert_eq!(
            glob_match(pat.as_bytes(), s.as_bytes()),
            want,
            "glob_match({pat:?}, {s:?})"
        );
    }
    // Escapes and malformed classes.
    assert!(glob_match(b"a\\*b", b"a*b"));
    assert!(!glob_match(b"a\\*b", b"axb"));
    assert!(glob_match(b"[ab", b"[ab"));
}

#[test]
fn recset_basics() {
    let mut r = RecSet::new();
    assert!(r.is_empty());
    for i in [0, 63, 64, 200] {
        r.insert(i);
    }
    assert_eq!(r.len(), 4);
    assert_eq!(r.iter().collect::<Vec<_>>(), vec![0, 63, 64, 200]);
    r.remove(64);
    r.remove(10_000);
    assert!(!r.contains(64) && r.contains(200));
}

#[test]
fn contains_bytes_edges() {
    assert!(contains_bytes(b"anything", b""));
    assert!(contains_bytes(b"", b""));
    assert!(!contains_bytes(b"", b"a"));
    assert!(!contains_bytes(b"bench_lea", b"bench_leaf"));
    assert!(contains_bytes(b"bench_leaf", b"bench_leaf"));
    // Every position, across and at the ends of the 8-byte words.
    let hay = b"0123456789abcdefghijklmnopqrstuvwxyz";
    for i in 0..hay.len() {
        for j in i..=hay.len() {
            assert!(contains_bytes(hay, &hay[i..j]), "{i}..{j}");
        }
    }
    // A first byte that repeats, and bytes that borrow in the word trick.
    assert!(contains_bytes(b"\x01\x00bbbbbbbbbbbbbbbbbc", b"bc"));
    assert!(!contains_bytes(b"\x01\x00bbbbbbbbbbbbbbbbbb", b"bc"));
    assert!(contains_bytes(
        b"ktrace::shell::latency::scale_fn_17042::bench_leaf",
        b"bench_leaf"
    ));
}

proptest::proptest! {
    #[test]
    fn contains_bytes_agrees_with_std(
        hay in proptest::collection::vec(proptest::sample::select(b"ab_\x00\x01\x80\xff".to_vec()), 0..40),
        needle in proptest::collection::vec(proptest::sample::select(b"ab_\x00\x01\x80\xff".to_vec()), 0..5),
    ) {
        let want = hay.windows(needle.len().max(1)).any(|w| w == needle.as_slice())
            || needle.is_empty();
        proptest::prop_assert_eq!(contains_bytes(&hay, &needle), want);
    }
}
