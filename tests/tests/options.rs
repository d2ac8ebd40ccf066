//! QEMU tests of the behavioural trace options: each listed option does what
//! Linux 6.1's does, and Linux options with nothing to act on in this kernel
//! are unknown names (not listed, no file, EINVAL when written).

use tests::Kernel;

const T: &str = "/tracing";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

const EINVAL: &str = "sh: write error: Invalid argument\n";

/// Options for user space, record-cmd and poll() are absent, under every
/// tracer, and writing them fails; display-graph is a core option and the
/// function profiler's graph-time is function_graph's.
#[test]
fn options_without_meaning_are_unknown() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let gone = [
        "block",
        "userstacktrace",
        "sym-userobj",
        "record-cmd",
        "stacktrace",
    ];
    let files = clean(&k.run(&format!("ls {T}/options")));
    let files: Vec<&str> = files.split_whitespace().collect();
    assert!(files.contains(&"pause-on-trace"), "{files:?}");
    for tracer in ["nop", "function", "function_graph"] {
        assert_eq!(k.run(&format!("echo {tracer} > {T}/current_tracer")), "");
        let listed = clean(&k.run(&format!("cat {T}/trace_options")));
        for name in gone {
            assert!(!files.contains(&name), "options/{name} exists");
            let no = format!("no{name}");
            assert!(
                !listed.lines().any(|l| l == name || l == no),
                "{name} listed under {tracer}:\n{listed}"
            );
            for w in [name, no.as_str()] {
                let r = k.run(&format!("echo {w} > {T}/trace_options"));
                assert_eq!(clean(&r), EINVAL, "echo {w} > trace_options");
            }
        }
        assert_eq!(clean(&k.run(&format!("cat {T}/trace_options"))), listed);
        // display-graph is a core option (Linux 6.1's TRACE_ITER_DISPLAY_GRAPH,
        // listed under every tracer, after function-fork); graph-time is
        // function_graph's, after sleep-time.
        let lines: Vec<&str> = listed.lines().collect();
        let at = lines.iter().position(|l| *l == "nofunction-fork").unwrap();
        assert_eq!(lines[at + 1], "nodisplay-graph", "{listed}");
        let graph_time = lines.iter().position(|l| *l == "graph-time");
        if tracer == "function_graph" {
            assert_eq!(lines[graph_time.unwrap() - 1], "sleep-time", "{listed}");
        } else {
            assert_eq!(graph_time, None, "{listed}");
        }
    }
    for name in ["display-graph", "graph-time"] {
        assert!(files.contains(&name), "options/{name} missing");
    }
    assert_eq!(k.run(&format!("echo nop > {T}/current_tracer")), "");
}

/// The number of `trace_marker` events in `trace`.
fn markers(k: &mut Kernel) -> usize {
    let n = clean(&k.run(&format!("grep -c tracing_mark_write {T}/trace")));
    n.trim()
        .parse()
        .unwrap_or_else(|_| panic!("grep -c printed {n:?}"))
}

/// pause-on-trace: while `trace` (or `per_cpu/cpuN/trace`) is open for
/// reading, nothing is recorded; closing it resumes recording, and
/// `tracing_on` reads 1 throughout (Linux: `__tracing_open` stops the trace
/// array, `tracing_release` starts it). `cat trace > trace_marker` writes
/// while `trace` is open, as on Linux 6.1, where it prints the same error.
#[test]
fn pause_on_trace() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    assert_eq!(k.run(&format!("echo hello > {T}/trace_marker")), "");
    assert_eq!(markers(&mut k), 1);
    // Off (the default): the copy of `trace` is recorded line by line.
    assert_eq!(
        clean(&k.run(&format!("cat {T}/options/pause-on-trace"))),
        "0\n"
    );
    assert_eq!(k.run(&format!("cat {T}/trace > {T}/trace_marker")), "");
    let after_copy = markers(&mut k);
    assert!(after_copy > 1, "nothing recorded while trace was read");
    // On: writes fail while `trace` is open, and nothing is recorded.
    assert_eq!(
        k.run(&format!("echo pause-on-trace > {T}/trace_options")),
        ""
    );
    assert_eq!(
        clean(&k.run(&format!("cat {T}/options/pause-on-trace"))),
        "1\n"
    );
    for file in ["trace", "per_cpu/cpu0/trace", "per_cpu/cpu1/trace"] {
        let r = k.run(&format!("cat {T}/{file} > {T}/trace_marker"));
        assert_eq!(
            clean(&r),
            "cat: write error: Bad file descriptor\n",
            "{file}"
        );
        assert_eq!(markers(&mut k), after_copy, "{file}");
    }
    // Closed: recording resumed, and tracing_on never changed.
    assert_eq!(clean(&k.run(&format!("cat {T}/tracing_on"))), "1\n");
    assert_eq!(k.run(&format!("echo after > {T}/trace_marker")), "");
    assert_eq!(markers(&mut k), after_copy + 1);
    // Opening `trace` only for writing does not pause.
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    assert_eq!(k.run(&format!("echo again > {T}/trace_marker")), "");
    assert_eq!(markers(&mut k), 1);
    // Off again: reading `trace` no longer pauses.
    assert_eq!(k.run(&format!("echo 0 > {T}/options/pause-on-trace")), "");
    assert_eq!(k.run(&format!("cat {T}/trace > {T}/trace_marker")), "");
    assert!(markers(&mut k) > 1);
}

/// The timestamp (in µs) and body of an event line of `trace`.
fn ts_body(line: &str) -> (u64, &str) {
    let (head, body) = line.split_once(": ").unwrap_or_else(|| panic!("{line:?}"));
    let ts = head.rsplit(' ').next().unwrap();
    (micros(ts), body)
}

/// `S.UUUUUU` as microseconds.
fn micros(ts: &str) -> u64 {
    let (s, us) = ts
        .trim()
        .split_once('.')
        .unwrap_or_else(|| panic!("{ts:?}"));
    s.parse::<u64>().unwrap() * 1_000_000 + us.parse::<u64>().unwrap()
}

/// The event lines of `trace` (no header).
fn events(k: &mut Kernel) -> Vec<String> {
    clean(&k.run(&format!("cat {T}/trace")))
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

const ROOT: &str = "kernel::shell::work::calltree_root";
const CALLTREE: &str = "kernel::shell::work::calltree";

/// The function events of `trace` (stack traces left out) as (time in µs,
/// body).
fn fn_events(k: &mut Kernel) -> Vec<(u64, String)> {
    events(k)
        .iter()
        .filter(|l| !l.starts_with(" => ") && !l.ends_with("<stack trace>"))
        .map(|l| {
            let (t, b) = ts_body(l);
            (t, b.to_string())
        })
        .collect()
}

/// func-no-repeats: `calltree 10` calls calltree_root ten times from one
/// call site. Without the option that is ten function events; with it, one
/// event, then, when the next different call (the next `calltree`
/// command) comes on that CPU, a `func_repeats` record printed as
/// `calltree_root <-calltree (repeats: 9, last_ts: T)` before that call's
/// own event (Linux: function_no_repeats_trace_call). With func_stack_trace
/// too, a folded call records no stack trace.
#[test]
fn func_no_repeats() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    assert_eq!(k.run(&format!("echo {ROOT} > {T}/set_ftrace_filter")), "");
    assert_eq!(
        k.run(&format!("echo {CALLTREE} >> {T}/set_ftrace_filter")),
        ""
    );
    assert_eq!(k.run(&format!("echo function > {T}/current_tracer")), "");
    let listed = clean(&k.run(&format!("cat {T}/trace_options")));
    assert!(
        listed.ends_with("nofunc_stack_trace\nnofunc-no-repeats\n"),
        "{listed}"
    );
    let root = format!("{ROOT} <-{CALLTREE}");
    let calltree = |b: &str| b.starts_with(&format!("{CALLTREE} <-"));

    // Off: every call is an event.
    for n in [10, 1] {
        let r = k.run(&format!("calltree {n}"));
        assert!(r.contains(&format!("calltree: {n} iterations")), "{r}");
    }
    assert_eq!(k.run(&format!("echo 0 > {T}/tracing_on")), "");
    let evs = fn_events(&mut k);
    assert_eq!(evs.iter().filter(|e| e.1 == root).count(), 11, "{evs:#?}");
    assert_eq!(evs.iter().filter(|e| calltree(&e.1)).count(), 2, "{evs:#?}");
    assert!(!evs.iter().any(|e| e.1.contains("repeats")), "{evs:#?}");

    // On: calltree, calltree_root, then (9 repeats pending) the next
    // calltree writes the record first.
    assert_eq!(
        k.run(&format!("echo func-no-repeats > {T}/trace_options")),
        ""
    );
    assert_eq!(
        clean(&k.run(&format!("cat {T}/options/func-no-repeats"))),
        "1\n"
    );
    let runs = |k: &mut Kernel| {
        assert_eq!(k.run(&format!("echo > {T}/trace")), "");
        assert_eq!(k.run(&format!("echo 1 > {T}/tracing_on")), "");
        for n in [10, 1] {
            let r = k.run(&format!("calltree {n}"));
            assert!(r.contains(&format!("calltree: {n} iterations")), "{r}");
        }
        assert_eq!(k.run(&format!("echo 0 > {T}/tracing_on")), "");
    };
    runs(&mut k);
    let evs = fn_events(&mut k);
    assert_eq!(evs.len(), 5, "{evs:#?}");
    assert!(calltree(&evs[0].1) && calltree(&evs[3].1), "{evs:#?}");
    assert_eq!((&evs[1].1, &evs[4].1), (&root, &root), "{evs:#?}");
    let (t_first, _) = evs[1];
    let (t_rec, rec) = &evs[2];
    let last = rec
        .strip_prefix(&format!("{root} (repeats: 9, last_ts:"))
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{rec}"));
    assert!(last.starts_with(' '), "{rec}");
    let last = micros(last);
    // The last repeat came after the first call, and the record is written
    // when the next different call comes.
    assert!(
        t_first < last && last <= *t_rec && *t_rec <= evs[3].0,
        "{evs:#?}"
    );

    // With func_stack_trace: a stack trace follows each recorded call, none
    // follows the repeats record.
    assert_eq!(
        k.run(&format!("echo func_stack_trace > {T}/trace_options")),
        ""
    );
    runs(&mut k);
    let evs = events(&mut k);
    let at: Vec<usize> = (0..evs.len())
        .filter(|&i| !evs[i].starts_with(" => ") && !evs[i].ends_with("<stack trace>"))
        .collect();
    assert_eq!(at.len(), 5, "{evs:#?}");
    for (n, &i) in at.iter().enumerate() {
        let stack = evs.get(i + 1).is_some_and(|l| l.ends_with("<stack trace>"));
        assert_eq!(stack, n != 2, "event {n}: {evs:#?}");
    }
    assert!(evs[at[2]].contains("(repeats: 9, "), "{evs:#?}");
}

/// The duration of the one `kernel::shell::commands::sleep();` line of a
/// function_graph `trace`, in µs.
fn sleep_duration(k: &mut Kernel) -> f64 {
    let evs = events(k);
    let lines: Vec<&String> = evs
        .iter()
        .filter(|l| l.ends_with("|  kernel::shell::commands::sleep();"))
        .collect();
    assert_eq!(lines.len(), 1, "{evs:#?}");
    let (head, _) = lines[0]
        .split_once(" us ")
        .unwrap_or_else(|| panic!("{}", lines[0]));
    let num = head.rsplit(' ').next().unwrap();
    num.parse().unwrap_or_else(|_| panic!("{}", lines[0]))
}

/// sleep-time: with it on (the default) a function_graph duration counts the
/// time the task was switched out; with it off only the time the task ran
/// (Linux: ftrace_graph_probe_sched_switch moves the calltimes of the task
/// switched in). `sleep 0.2` blocks for 200 ms in the shell's sleep command.
#[test]
fn sleep_time() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let f = "kernel::shell::commands::sleep";
    assert_eq!(k.run(&format!("echo {f} > {T}/set_ftrace_filter")), "");
    assert_eq!(
        k.run(&format!("echo function_graph > {T}/current_tracer")),
        ""
    );
    assert_eq!(clean(&k.run(&format!("cat {T}/options/sleep-time"))), "1\n");
    assert_eq!(k.run("sleep 0.2"), "");
    let with_sleep = sleep_duration(&mut k);
    assert!(with_sleep >= 200_000.0, "{with_sleep} us");

    assert_eq!(k.run(&format!("echo nosleep-time > {T}/trace_options")), "");
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    assert_eq!(k.run("sleep 0.2"), "");
    let ran = sleep_duration(&mut k);
    assert!(ran < 50_000.0, "{ran} us: the 200 ms asleep were counted");

    // On again: the sleep counts again.
    assert_eq!(k.run(&format!("echo 1 > {T}/options/sleep-time")), "");
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    assert_eq!(k.run("sleep 0.2"), "");
    assert!(sleep_duration(&mut k) >= 200_000.0);
}

/// The tasks (comm-pid) of the function events in `trace`.
fn tasks(k: &mut Kernel) -> Vec<String> {
    let mut t: Vec<String> = events(k)
        .iter()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    t.sort();
    t.dedup();
    t
}

/// function-fork: with the option set, tasks created by a task in
/// `set_ftrace_pid` join the list (and are traced), and a task leaves the
/// list when it exits (Linux: ftrace_pid_follow_fork's sched_process_fork
/// and sched_process_free probes). The shell is pid 1; `calltree 1 2`
/// runs the tree on two new tasks.
#[test]
fn function_fork() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    assert_eq!(k.run(&format!("echo {ROOT} > {T}/set_ftrace_filter")), "");
    assert_eq!(k.run(&format!("echo 1 > {T}/set_ftrace_pid")), "");
    assert_eq!(k.run(&format!("echo function > {T}/current_tracer")), "");
    let run = |k: &mut Kernel, n: u32| {
        assert_eq!(k.run(&format!("echo > {T}/trace")), "");
        let r = k.run(&format!("calltree 1 {n}"));
        assert!(r.contains(&format!("calltree: {n} tasks")), "{r}");
    };

    // Off: the shell's children are not in the list, nothing is traced.
    assert_eq!(
        clean(&k.run(&format!("cat {T}/options/function-fork"))),
        "0\n"
    );
    run(&mut k, 2);
    assert_eq!(tasks(&mut k), Vec::<String>::new());

    // On: both children are traced, and leave the list when they exit.
    assert_eq!(
        k.run(&format!("echo function-fork > {T}/trace_options")),
        ""
    );
    run(&mut k, 2);
    let t = tasks(&mut k);
    assert_eq!(t.len(), 2, "{t:?}");
    assert!(t.iter().all(|c| c.starts_with("calltree/")), "{t:?}");
    assert_eq!(clean(&k.run(&format!("cat {T}/set_ftrace_pid"))), "1\n");

    // Only children of listed tasks follow.
    assert_eq!(k.run(&format!("echo 99999 > {T}/set_ftrace_pid")), "");
    run(&mut k, 2);
    assert_eq!(tasks(&mut k), Vec::<String>::new());

    // A listed task that exits leaves the list; the list stays, empty,
    // and traces no task, as Linux's allocated list does.
    let last: u32 = t
        .iter()
        .map(|c| c.rsplit('-').next().unwrap().parse::<u32>().unwrap())
        .max()
        .unwrap();
    // Pids are not reused: the previous run took last+1 and last+2.
    let next = last + 3;
    assert_eq!(k.run(&format!("echo {next} > {T}/set_ftrace_pid")), "");
    run(&mut k, 1);
    assert_eq!(tasks(&mut k), vec![format!("calltree/0-{next}")]);
    assert_eq!(clean(&k.run(&format!("cat {T}/set_ftrace_pid"))), "");
    run(&mut k, 1);
    assert_eq!(tasks(&mut k), Vec::<String>::new());
    // An empty write removes the list: everyone is traced again.
    assert_eq!(k.run(&format!("echo > {T}/set_ftrace_pid")), "");
    assert_eq!(
        clean(&k.run(&format!("cat {T}/set_ftrace_pid"))),
        "no pid\n"
    );

    // Off again: no more following.
    assert_eq!(
        k.run(&format!("echo nofunction-fork > {T}/trace_options")),
        ""
    );
    assert_eq!(k.run(&format!("echo 1 > {T}/set_ftrace_pid")), "");
    run(&mut k, 2);
    assert_eq!(tasks(&mut k), Vec::<String>::new());
    assert_eq!(clean(&k.run(&format!("cat {T}/set_ftrace_pid"))), "1\n");
}
