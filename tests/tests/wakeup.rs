//! QEMU tests of real-time scheduling and the wake-up latency workload:
//! `chrt` makes SCHED_FIFO tasks, the sched events report their `prio` as
//! Linux does (`99 - rt_priority`; 120 for normal tasks and idle), and in
//! `wakeup_busy` the woken task runs only once the busy task of its own
//! priority on its CPU has finished, on that CPU, right after it.

use std::time::Duration;

use tests::Kernel;

fn run(k: &mut Kernel, cmd: &str) -> String {
    k.run(cmd).replace('\r', "")
}

const T: &str = "/tracing";

/// The µs `wakeup_busy` reports the wakee waited.
fn waited_us(out: &str) -> u64 {
    out.lines()
        .find_map(|l| l.split("it ran ").nth(1))
        .and_then(|r| r.split(" us after").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no wait in {out:?}"))
}

/// The sched_switch and sched_wakeup lines of `trace` naming `comm`.
fn sched_lines(text: &str, comm: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.contains(&format!("comm={comm} ")))
        .map(str::to_string)
        .collect()
}

#[test]
fn fifo_tasks_and_the_wakeup_workload() {
    let mut k = Kernel::boot(&[]);
    // chrt: a command run as a SCHED_FIFO task; errors as busybox prints them.
    let out = run(&mut k, "chrt -f 50 ps");
    assert!(out.lines().any(|l| l.ends_with(" ps")), "{out}");
    assert_eq!(
        run(&mut k, "chrt -p 1"),
        "pid 1's current scheduling policy: SCHED_OTHER\n\
         pid 1's current scheduling priority: 0\n"
    );
    assert_eq!(
        run(&mut k, "chrt -f 100 ps"),
        "chrt: failed to set pid 0's policy: Invalid argument\n"
    );
    assert_eq!(
        run(&mut k, "chrt -p 4242"),
        "chrt: failed to get pid 4242's policy: No such process\n"
    );
    assert_eq!(run(&mut k, "chrt -o 0 echo hi | cat"), "hi\n");

    // The sched events report the real prio: 99 - 50 for the wakee and the
    // busy task, 120 for the waker and idle.
    run(
        &mut k,
        &format!("echo 1 > {T}/events/sched/sched_switch/enable"),
    );
    run(
        &mut k,
        &format!("echo 1 > {T}/events/sched/sched_wakeup/enable"),
    );
    let busy_us = 20_000;
    let out = run(&mut k, &format!("wakeup_busy -f 50 {busy_us}"));
    run(&mut k, &format!("echo 0 > {T}/tracing_on"));
    let waited = waited_us(&out);
    assert!(
        (busy_us..busy_us + 200_000).contains(&waited),
        "waited {waited} us for a {busy_us} us busy CPU: {out}"
    );
    let trace = run(&mut k, &format!("cat {T}/trace"));
    let wakee = sched_lines(&trace, "wakee");
    let woken = wakee
        .iter()
        .position(|l| l.contains("sched_wakeup: comm=wakee ") && l.contains(" prio=49 "))
        .unwrap_or_else(|| panic!("no wake-up of the wakee at prio 49:\n{trace}"));
    assert!(
        wakee[woken].starts_with("           waker-"),
        "{}",
        wakee[woken]
    );
    // The switch after the wake-up: from the busy task, which had finished
    // (X), to the wakee, both at prio 49, on the last CPU.
    let switch = wakee[woken..]
        .iter()
        .find(|l| l.contains("next_comm=wakee"))
        .unwrap_or_else(|| panic!("no switch to the wakee:\n{trace}"));
    assert!(
        switch.contains("[003]")
            && switch.contains("prev_comm=busy ")
            && switch.contains("prev_prio=49 prev_state=X ==> next_comm=wakee")
            && switch.contains("next_prio=49"),
        "{switch}"
    );
    // Idle reports 120, as Linux's swapper does.
    let idle: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("prev_comm=swapper/"))
        .collect();
    assert!(!idle.is_empty(), "{trace}");
    assert!(idle.iter().all(|l| l.contains("prev_prio=120 ")), "{trace}");
    assert!(
        trace
            .lines()
            .filter(|l| l.contains("prev_comm=waker "))
            .all(|l| l.contains("prev_prio=120")),
        "{trace}"
    );

    // A normal wakee against a FIFO busy task waits as long.
    run(&mut k, &format!("echo > {T}/trace"));
    let out = run(&mut k, &format!("wakeup_busy {busy_us}"));
    assert!(out.contains("(prio 120)"), "{out}");
    assert!(waited_us(&out) >= busy_us, "{out}");
    // Bad arguments change nothing and say why.
    assert_eq!(
        run(&mut k, "wakeup_busy -f 0 10"),
        "wakeup_busy: invalid priority '0' (1-99)\n"
    );
    assert_eq!(
        run(&mut k, "wakeup_busy 2000000"),
        "wakeup_busy: invalid time '2000000' (0-1000000 us)\n"
    );
    assert_eq!(
        run(&mut k, "wakeup_busy"),
        "Usage: wakeup_busy [-f PRIO] US\n"
    );
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(30)), 0);
}

/// The first event line of a `trace` file whose text contains `pat`.
fn line_with<'a>(trace: &'a str, pat: &str) -> &'a str {
    trace
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| l.contains(pat))
        .unwrap_or_else(|| panic!("no line with {pat:?} in\n{trace}"))
}

/// The µs of a latency-format event line (`comm-pid  CPUflags  TIMEus`).
fn lat_time_us(line: &str) -> u64 {
    // `%8.8s-%-7d %3d` + flags, then `%4lldus%c: `.
    line.split_whitespace()
        .nth(2)
        .and_then(|t| t.split("us").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no time in {line:?}"))
}

/// The function lines (`ip <- parent`) on `cpu` between the wake-up line
/// (`+ [003]`) and the switch line (`==> [003]`) of a saved wakeup trace
/// of a task woken onto CPU 3.
fn functions_between<'a>(trace: &'a str, cpu: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = trace.lines().filter(|l| !l.starts_with('#')).collect();
    let wake = lines
        .iter()
        .position(|l| l.contains("   + [003]"))
        .unwrap_or_else(|| panic!("no wake-up line in\n{trace}"));
    let switch = lines
        .iter()
        .position(|l| l.contains(" ==> [003]"))
        .unwrap_or_else(|| panic!("no switch line in\n{trace}"));
    assert!(wake < switch, "{trace}");
    lines[wake + 1..switch]
        .iter()
        .copied()
        .filter(|l| l.contains(" <-"))
        .filter(|l| {
            l.split_whitespace().nth(1).is_some_and(|f| {
                f.strip_prefix(cpu)
                    .is_some_and(|r| r.starts_with(['d', '.']))
            })
        })
        .collect()
}

fn max_latency(k: &mut Kernel) -> u64 {
    let v = run(k, &format!("cat {T}/tracing_max_latency"));
    v.trim()
        .parse()
        .unwrap_or_else(|_| panic!("tracing_max_latency: {v:?}"))
}

/// The wakeup_rt and wakeup tracers on the workload: the saved trace is
/// the wakee's wait, at least the busy time and not wildly more, with the
/// wake-up (`+ [003]`) and the switch (`==> [003]`) lines and the latency
/// header of the woken task; normal tasks are ignored; tracing_thresh
/// records every latency above it; writing 0 resets the maximum.
#[test]
fn wakeup_tracers_measure_the_woken_task() {
    let mut k = Kernel::boot(&[]);
    let tracers = run(&mut k, &format!("cat {T}/available_tracers"));
    assert!(tracers.contains("wakeup_rt wakeup "), "{tracers}");
    run(&mut k, &format!("echo wakeup_rt > {T}/current_tracer"));
    let opts = run(&mut k, &format!("cat {T}/trace_options"));
    assert!(
        opts.lines().any(|l| l == "overwrite") && opts.lines().any(|l| l == "latency-format"),
        "{opts}"
    );
    assert_eq!(max_latency(&mut k), 0);

    // Normal tasks waking each other: nothing to measure.
    let out = run(&mut k, "work sleep 10");
    assert!(out.contains(" 0 errors"), "{out}");
    assert_eq!(max_latency(&mut k), 0);

    // With a threshold every wait above it is kept, the last one wins:
    // the wakee's, woken last.
    let busy_us: u64 = 20_000;
    let slack_us: u64 = 1_000_000;
    run(&mut k, &format!("echo {busy_us} > {T}/tracing_thresh"));
    let out = run(&mut k, &format!("wakeup_busy -f 50 {busy_us}"));
    let wakee_pid = out
        .split("wakee-")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("{out}"))
        .to_string();
    let lat = max_latency(&mut k);
    assert!(
        (busy_us..busy_us + slack_us).contains(&lat),
        "latency {lat} us for a {busy_us} us busy CPU"
    );
    let trace = run(&mut k, &format!("cat {T}/trace"));
    assert!(
        trace.starts_with("# tracer: wakeup_rt\n#\n# wakeup_rt latency trace v1.1.5 on "),
        "{trace}"
    );
    assert!(
        trace.contains(&format!("\n# latency: {lat} us, #")),
        "{trace}"
    );
    assert!(
        trace.contains(&format!(
            "#    | task: wakee-{wakee_pid} (uid:0 nice:0 policy:1 rt_prio:50)\n"
        )),
        "{trace}"
    );
    assert!(!trace.contains("started at"), "{trace}");
    // The wake-up, on the waker's CPU 0, of the wakee (prio 49) queued on
    // CPU 3; the switch to it there from the busy task, which exited.
    let wake = line_with(&trace, "   + [003]");
    assert!(wake.starts_with("   waker-"), "{wake}");
    assert!(wake.contains(" 0d"), "{wake}");
    assert!(
        wake.ends_with(&format!(" {wakee_pid}: 49:R wakee")),
        "{wake}"
    );
    let switch = line_with(&trace, " ==> [003]");
    assert!(switch.starts_with("    busy-"), "{switch}");
    assert!(switch.contains(" 3d"), "{switch}");
    assert!(switch.contains(": 49:X ==> [003] "), "{switch}");
    assert!(
        switch.ends_with(&format!(" {wakee_pid}: 49:R wakee")),
        "{switch}"
    );
    assert!(lat_time_us(wake) < 1000, "{wake}");
    assert!(lat_time_us(switch) >= busy_us, "{switch}");
    // The scheduler functions that fired the tracepoints, and the stacks.
    assert!(line_with(&trace, "try_to_wake_up <-").contains("waker-"));
    assert!(line_with(&trace, "__schedule <-").contains("busy-"));
    assert_eq!(trace.matches("<stack trace>").count(), 2, "{trace}");
    // With function-trace (on by default) the functions the wakee's CPU
    // ran between the wake-up and the switch: the busy task's exit, and
    // the scheduler function the switch probe names last.
    let on_cpu3 = functions_between(&trace, "3");
    assert!(
        on_cpu3.iter().any(|l| l.contains("exit_current <-")),
        "{on_cpu3:#?}\n{trace}"
    );
    assert!(
        on_cpu3.last().is_some_and(|l| l.contains("__schedule <-")),
        "{trace}"
    );
    // None on CPU 0 after the wake-up's own records: only the wakee's
    // CPU is traced.
    assert!(
        functions_between(&trace, "0")
            .iter()
            .all(|l| l.contains("try_to_wake_up <-")),
        "{trace}"
    );
    run(&mut k, &format!("echo 0 > {T}/tracing_thresh"));

    // Writing 0 resets the maximum; without a threshold only a new
    // maximum is kept.
    run(&mut k, &format!("echo 0 > {T}/tracing_max_latency"));
    assert_eq!(max_latency(&mut k), 0);
    run(&mut k, &format!("wakeup_busy -f 50 {busy_us}"));
    let lat = max_latency(&mut k);
    assert!((busy_us..busy_us + slack_us).contains(&lat), "{lat}");
    let trace = run(&mut k, &format!("cat {T}/trace"));
    assert!(
        trace.contains(&format!("\n# latency: {lat} us, #")),
        "{trace}"
    );
    // The maximum never goes down.
    run(&mut k, "wakeup_busy -f 50 0");
    assert!(max_latency(&mut k) >= lat);

    // Without function-trace only the probes' own records: on the wakee's
    // CPU, the function that fired the switch.
    assert_eq!(
        run(&mut k, &format!("echo 0 > {T}/options/function-trace")),
        ""
    );
    run(&mut k, &format!("echo 0 > {T}/tracing_max_latency"));
    run(&mut k, &format!("wakeup_busy -f 50 {busy_us}"));
    assert!(max_latency(&mut k) >= busy_us);
    let trace = run(&mut k, &format!("cat {T}/trace"));
    let on_cpu3 = functions_between(&trace, "3");
    assert!(
        on_cpu3.len() == 1 && on_cpu3[0].contains("__schedule <-"),
        "{trace}"
    );
    assert!(!trace.contains("exit_current <-"), "{trace}");
    assert_eq!(
        run(&mut k, &format!("echo 1 > {T}/options/function-trace")),
        ""
    );

    // Linux's selftest (ftrace/test.d/tracer/wakeup_rt.tc): a real-time
    // `sleep` shows its wake-up and its switch-in. The shell's wake-up of
    // the new task preempts the shell at once.
    run(&mut k, &format!("echo 0 > {T}/tracing_max_latency"));
    run(&mut k, "chrt -f 5 sleep 0.1");
    let trace = run(&mut k, &format!("cat {T}/trace"));
    assert!(trace.contains("#    | task: sleep-"), "{trace}");
    assert!(trace.contains(" policy:1 rt_prio:5)\n"), "{trace}");
    line_with(&trace, ": 94:R sleep");
    assert!(
        line_with(&trace, "   + [").ends_with(": 94:R sleep"),
        "{trace}"
    );
    assert!(
        line_with(&trace, " ==> [").ends_with(": 94:R sleep"),
        "{trace}"
    );

    // One array at a time (Linux: wakeup_busy).
    run(&mut k, &format!("mkdir {T}/instances/w"));
    assert_eq!(
        run(
            &mut k,
            &format!("echo wakeup > {T}/instances/w/current_tracer")
        ),
        "sh: write error: Device or resource busy\n"
    );
    assert_eq!(
        run(&mut k, &format!("cat {T}/instances/w/current_tracer")),
        "nop\n"
    );
    // Nothing half-applied: the spare it would have needed is not kept.
    let snap = run(&mut k, &format!("cat {T}/instances/w/snapshot"));
    assert!(snap.contains("# * Snapshot is freed *"), "{snap}");
    run(&mut k, &format!("rmdir {T}/instances/w"));

    // wakeup: every task more urgent than its waker, so normal ones are
    // ignored here too, and a real-time wakee is measured.
    run(&mut k, &format!("echo wakeup > {T}/current_tracer"));
    assert_eq!(max_latency(&mut k), 0);
    run(&mut k, "work sleep 10");
    assert_eq!(max_latency(&mut k), 0);
    run(&mut k, &format!("wakeup_busy -f 10 {busy_us}"));
    assert!(max_latency(&mut k) >= busy_us);
    assert!(run(&mut k, &format!("cat {T}/trace"))
        .starts_with("# tracer: wakeup\n#\n# wakeup latency trace"));

    // display-graph: the wakee's CPU's functions as a call graph (Linux:
    // wakeup_print_line with PROC, CPU, REL_TIME, DURATION, OVERHEAD and
    // IRQS), the wake-up and switch records as comments; setting it
    // restarts the tracer (the maximum starts over).
    run(&mut k, &format!("echo wakeup_rt > {T}/current_tracer"));
    run(&mut k, &format!("wakeup_busy -f 50 {busy_us}"));
    assert!(max_latency(&mut k) >= busy_us);
    assert_eq!(
        run(&mut k, &format!("echo 1 > {T}/options/display-graph")),
        ""
    );
    assert_eq!(max_latency(&mut k), 0);
    run(&mut k, &format!("wakeup_busy -f 50 {busy_us}"));
    let lat = max_latency(&mut k);
    assert!((busy_us..busy_us + slack_us).contains(&lat), "{lat}");
    let trace = run(&mut k, &format!("cat {T}/trace"));
    assert!(
        trace.contains(
            "\n#   REL TIME      CPU  TASK/PID       ||||     DURATION                  FUNCTION CALLS\n"
        ),
        "{trace}"
    );
    let wake = line_with(&trace, "   + [003]");
    assert!(
        wake.contains(" |  /* ") && wake.ends_with(": 49:R wakee */"),
        "{wake}"
    );
    let switch = line_with(&trace, " ==> [003]");
    assert!(switch.contains(" 3)    busy-"), "{switch}");
    assert!(switch.ends_with(": 49:R wakee */"), "{switch}");
    // Between them, on CPU 3: the busy task's exit as a graph, with
    // durations, and the scheduler function the switch probe names.
    let on_cpu3: Vec<&str> = trace
        .lines()
        .skip_while(|l| !l.contains("   + [003]"))
        .take_while(|l| !l.contains(" ==> [003]"))
        .filter(|l| l.contains(" 3)    busy-"))
        .collect();
    assert!(
        on_cpu3.iter().any(|l| l.ends_with("exit_current() {")),
        "{trace}"
    );
    assert!(
        on_cpu3.iter().any(|l| l.contains(" us ")
            && (l.ends_with('}') || l.ends_with(");"))
            && !l.ends_with("__schedule();")),
        "{trace}"
    );
    assert!(
        on_cpu3
            .last()
            .is_some_and(|l| l.ends_with("::__schedule();")),
        "{trace}"
    );
    assert!(!trace.contains(" <-"), "{trace}");
    assert_eq!(
        run(&mut k, &format!("echo 0 > {T}/options/display-graph")),
        ""
    );

    // Leaving the tracer restores the options.
    run(&mut k, &format!("echo nop > {T}/current_tracer"));
    let opts = run(&mut k, &format!("cat {T}/trace_options"));
    assert!(opts.lines().any(|l| l == "nolatency-format"), "{opts}");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(30)), 0);
}
