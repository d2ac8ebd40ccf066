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
