//! QEMU test of trace events in the text files: the scheduler's
//! sched_switch and sched_wakeup records print, after the context columns,
//! `NAME: ` and Linux's text (whose fields agree with the context), in
//! `trace` and `per_cpu/cpuN/trace`; the raw and hex options print
//! `type: ID` with the event's id (Linux's `trace_nop_print`: trace events
//! have no raw printers); function_graph prints them as
//! `/* sched_switch: ... */` comment lines in its columns.

use tests::Kernel;

const T: &str = "/tracing";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

/// `comm-pid [cpu] flags time: ` split off a default-format line: the
/// comm, pid, cpu and the rest after `: `.
fn context(line: &str) -> Option<(String, i32, u32, String)> {
    let (ctx, rest) = line.split_once(": ")?;
    let mut words = ctx.split_whitespace();
    let task = words.next()?;
    let (comm, pid) = task.rsplit_once('-')?;
    let cpu = words.next()?.trim_start_matches('[').trim_end_matches(']');
    let flags = words.next()?;
    let time = words.next()?;
    assert_eq!(flags.len(), 5, "{line}");
    assert!(time.contains('.'), "{line}");
    Some((
        comm.to_string(),
        pid.parse().ok()?,
        cpu.parse().ok()?,
        rest.to_string(),
    ))
}

/// The value of `key=` in an event's text.
fn field<'a>(text: &'a str, key: &str) -> &'a str {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key} in {text}"))
}

/// Checks the sched_switch and sched_wakeup lines of a `trace` text and
/// returns how many of each it holds.
fn check_event_lines(trace: &str, only_cpu: Option<u32>) -> (usize, usize) {
    let (mut switches, mut wakeups) = (0, 0);
    for line in trace.lines().filter(|l| !l.starts_with('#')) {
        let Some((comm, pid, cpu, rest)) = context(line) else {
            continue;
        };
        if let Some(c) = only_cpu {
            assert_eq!(cpu, c, "{line}");
        }
        if let Some(text) = rest.strip_prefix("sched_switch: ") {
            // prev_comm=sh prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=...
            let (prev, next) = text.split_once(" ==> ").expect(line);
            assert_eq!(
                field(prev, "prev_pid").parse::<i32>().unwrap(),
                pid,
                "{line}"
            );
            let prev_comm = field(prev, "prev_comm");
            if pid == 0 {
                assert_eq!(comm, "<idle>", "{line}");
                assert!(prev_comm.starts_with("swapper/"), "{line}");
            } else {
                assert_eq!(comm, prev_comm, "{line}");
            }
            field(prev, "prev_prio").parse::<i32>().expect(line);
            let state = field(prev, "prev_state");
            assert!(
                state
                    .trim_end_matches('+')
                    .split('|')
                    .all(|s| "RSDTtXZPI".contains(s)),
                "{line}"
            );
            field(next, "next_comm");
            field(next, "next_pid").parse::<i32>().expect(line);
            field(next, "next_prio").parse::<i32>().expect(line);
            switches += 1;
        } else if let Some(text) = rest.strip_prefix("sched_wakeup: ") {
            // comm=sh pid=1 prio=120 target_cpu=000
            field(text, "comm");
            field(text, "pid").parse::<i32>().expect(line);
            let target = field(text, "target_cpu");
            assert_eq!(target.len(), 3, "{line}");
            target.parse::<u32>().expect(line);
            wakeups += 1;
        } else {
            panic!("unexpected line {line}");
        }
    }
    (switches, wakeups)
}

#[test]
fn events_in_trace_raw_hex_and_function_graph() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    for e in ["sched_switch", "sched_wakeup"] {
        assert_eq!(k.run(&format!("echo 1 > {T}/events/sched/{e}/enable")), "");
    }
    // The shell sleeps for its next line after each command (a switch to
    // the idle task, a wakeup by the console interrupt, a switch back) when
    // it gets there before the line does; `sleep` always sleeps, and the
    // timer wakes it, so at least one wakeup is certain.
    k.run("ls /");
    k.run("sleep 0.01");
    k.run("ls /tmp");
    assert_eq!(k.run(&format!("echo 0 > {T}/tracing_on")), "");

    let trace = clean(&k.run(&format!("cat {T}/trace")));
    let (switches, wakeups) = check_event_lines(&trace, None);
    assert!(switches >= 2 && wakeups >= 1, "{trace}");

    for cpu in 0..2 {
        let per_cpu = clean(&k.run(&format!("cat {T}/per_cpu/cpu{cpu}/trace")));
        check_event_lines(&per_cpu, Some(cpu));
    }

    let switch_id = clean(&k.run(&format!("cat {T}/events/sched/sched_switch/id")));
    let wakeup_id = clean(&k.run(&format!("cat {T}/events/sched/sched_wakeup/id")));
    let ids = [switch_id.trim(), wakeup_id.trim()];

    // raw: "pid cpu ts type: ID" for every event.
    assert_eq!(k.run(&format!("echo 1 > {T}/options/raw")), "");
    let raw = clean(&k.run(&format!("cat {T}/trace")));
    let mut n = 0;
    for line in raw.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (ctx, id) = line.split_once(" type: ").expect(line);
        assert!(ids.contains(&id), "{line}");
        let nums: Vec<&str> = ctx.split(' ').collect();
        assert_eq!(nums.len(), 3, "{line}");
        assert!(nums.iter().all(|w| w.parse::<u64>().is_ok()), "{line}");
        n += 1;
    }
    assert_eq!(n, switches + wakeups, "{raw}");
    assert_eq!(k.run(&format!("echo 0 > {T}/options/raw")), "");

    // hex: the context in hex fields, `type: ID`, and hex's own newline.
    assert_eq!(k.run(&format!("echo 1 > {T}/options/hex")), "");
    let hex = clean(&k.run(&format!("cat {T}/trace")));
    let typed = hex.lines().filter(|l| l.contains(" type: ")).count();
    assert_eq!(typed, switches + wakeups, "{hex}");
    assert!(hex.contains(&format!(" type: {}\n\n", ids[0])), "{hex}");
    assert_eq!(k.run(&format!("echo 0 > {T}/options/hex")), "");

    // function_graph: events are comments in the graph's columns.
    assert_eq!(
        k.run(&format!(
            "echo kernel::shell::commands::run_command > {T}/set_ftrace_filter"
        )),
        ""
    );
    assert_eq!(
        k.run(&format!("echo function_graph > {T}/current_tracer")),
        ""
    );
    assert_eq!(k.run(&format!("echo 1 > {T}/tracing_on")), "");
    k.run("ls /");
    assert_eq!(k.run(&format!("echo 0 > {T}/tracing_on")), "");
    let graph = clean(&k.run(&format!("cat {T}/trace")));
    let comments: Vec<&str> = graph.lines().filter(|l| l.contains("/* sched_")).collect();
    assert!(!comments.is_empty(), "{graph}");
    for line in &comments {
        // " 0)               |  /* sched_switch: prev_comm=... */"
        let (cols, comment) = line.split_once('|').expect(line);
        let cpu = cols.trim_start().split(')').next().expect(line);
        cpu.parse::<u32>().expect(line);
        assert_eq!(
            cols.trim_start_matches(|c: char| c != ')'),
            ")               ",
            "{line}"
        );
        let indent = comment.len() - comment.trim_start().len();
        assert!(indent >= 2 && indent % 2 == 0, "{line}");
        let text = comment.trim_start();
        assert!(text.ends_with(" */"), "{line}");
        let text = &text["/* ".len()..text.len() - " */".len()];
        assert!(
            text.starts_with("sched_switch: prev_comm=") || text.starts_with("sched_wakeup: comm="),
            "{line}"
        );
    }
    assert!(
        graph.contains("kernel::shell::commands::run_command() {"),
        "{graph}"
    );
}
