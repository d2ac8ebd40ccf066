//! Real-time tasks from the shell, and a wake-up latency to measure.
//!
//! - `chrt -f PRIO COMMAND [ARG...]` runs a shell command as a SCHED_FIFO
//!   task of priority PRIO (1-99) and waits for it; `chrt -o 0 COMMAND`
//!   as a normal one (util-linux's and busybox's `chrt`, which exec the
//!   command with that policy). `chrt -p PID` prints a task's policy and
//!   priority as they do. A task's policy is fixed when it is created
//!   here, so `chrt -p PRIO PID` (changing it) is not offered.
//! - `wakeup_busy [-f PRIO] US`: the wake-up latency workload. A task (the
//!   *wakee*, SCHED_FIFO at PRIO, or normal without `-f`) sleeps on the
//!   last CPU; a SCHED_FIFO task of at least its priority keeps that CPU
//!   busy; a task on CPU 0 wakes the wakee, and the busy task spins on for
//!   US microseconds after that before it exits. The wakee cannot preempt
//!   it (a real-time task does not preempt one of its own priority, a
//!   normal task never preempts a real-time one), so it waits at least US
//!   microseconds between its wake-up and its switch-in: what the `wakeup`
//!   and `wakeup_rt` tracers measure. The command prints the wait the
//!   wakee saw.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::Output;
use crate::sched::{self, SchedPolicy, WaitQueue};

/// The longest busy time `wakeup_busy` accepts (one second): the busy
/// task holds a CPU against every normal task for that long.
const MAX_BUSY_US: u64 = 1_000_000;

fn chrt_usage() {
    println!("Usage: chrt -f PRIO COMMAND [ARG...] | chrt -o 0 COMMAND [ARG...] | chrt -p PID");
}

/// A shell command runner (`commands::run_command`, passed in by it).
pub type RunCommand = fn(&[String], &mut Output);

/// `chrt` (see the module doc); `run` runs the command.
pub fn chrt(args: &[String], out: &mut Output, run: RunCommand) {
    match args {
        [p, pid] if p == "-p" => chrt_show(pid, out),
        [flag, prio, cmd @ ..] if !cmd.is_empty() && (flag == "-f" || flag == "-o") => {
            let Ok(n) = prio.parse::<u32>() else {
                println!("chrt: invalid number '{prio}'");
                return;
            };
            let policy = if flag == "-f" {
                SchedPolicy::fifo(n)
            } else {
                (n == 0).then_some(SchedPolicy::Normal)
            };
            let Some(policy) = policy else {
                // What sched_setscheduler returns for a priority out of range.
                println!(
                    "chrt: failed to set pid 0's policy: {}",
                    crate::fs::Errno::EINVAL
                );
                return;
            };
            run_as(policy, cmd, out, run);
        }
        _ => chrt_usage(),
    }
}

/// Runs `argv` in a new task of `policy` and waits for it to end.
fn run_as(policy: SchedPolicy, argv: &[String], out: &mut Output, run: RunCommand) {
    sched::run_as(&argv[0], policy, || run(argv, out));
}

/// `chrt -p PID`: busybox's two lines.
fn chrt_show(pid: &str, out: &mut Output) {
    let Ok(pid) = pid.parse::<u32>() else {
        println!("chrt: invalid number '{pid}'");
        return;
    };
    let Some(policy) = sched::task_policy(pid) else {
        println!(
            "chrt: failed to get pid {pid}'s policy: {}",
            crate::fs::Errno::ESRCH
        );
        return;
    };
    let name = match policy {
        SchedPolicy::Normal => "SCHED_OTHER",
        SchedPolicy::Fifo(_) => "SCHED_FIFO",
    };
    out.emit_str(
        "chrt",
        &format!(
            "pid {pid}'s current scheduling policy: {name}\n\
             pid {pid}'s current scheduling priority: {}\n",
            policy.rt_priority()
        ),
    );
}

/// What the three tasks of `wakeup_busy` share.
#[derive(Default)]
struct WakeupBusy {
    /// The waker has woken the wakee (its wait condition).
    go: AtomicBool,
    /// The busy task runs on the target CPU.
    started: AtomicBool,
    /// When the waker's wake-up returned (ns, 0 before).
    woken_at: AtomicU64,
    /// When the wakee ran after its wake-up (ns).
    ran_at: AtomicU64,
    wq: WaitQueue,
}

/// `wakeup_busy [-f PRIO] US` (see the module doc).
pub fn wakeup_busy(args: &[String], out: &mut Output) {
    let usage = "Usage: wakeup_busy [-f PRIO] US";
    let (policy, us) = match args {
        [us] => (SchedPolicy::Normal, us),
        [f, prio, us] if f == "-f" => match prio.parse::<u32>().ok().and_then(SchedPolicy::fifo) {
            Some(p) => (p, us),
            None => {
                println!("wakeup_busy: invalid priority '{prio}' (1-99)");
                return;
            }
        },
        _ => {
            println!("{usage}");
            return;
        }
    };
    let Some(us) = us.parse::<u64>().ok().filter(|&n| n <= MAX_BUSY_US) else {
        println!("wakeup_busy: invalid time '{us}' (0-{MAX_BUSY_US} us)");
        return;
    };
    let cpus = crate::arch::nr_cpus();
    if cpus < 2 {
        println!("wakeup_busy: needs two CPUs");
        return;
    }
    let (target, waker_cpu) = (cpus - 1, 0);
    let st = Arc::new(WakeupBusy::default());

    let s = st.clone();
    let wakee = sched::spawn_policy(Some(target), "wakee", policy, move || wakee_main(&s));
    // The wake-up must find it asleep (a real one, which the tracers see).
    if !wait_for(|| wakee.is_blocked()) {
        st.go.store(true, Ordering::SeqCst);
        st.wq.wake_all();
        wakee.join();
        println!("wakeup_busy: interrupted");
        return;
    }
    let busy_policy = SchedPolicy::Fifo(policy.rt_priority().max(1));
    let s = st.clone();
    let busy = sched::spawn_policy(Some(target), "busy", busy_policy, move || {
        wakeup_busy_spin(&s, us * 1000)
    });
    let s = st.clone();
    let waker = sched::spawn_on(waker_cpu, "waker", move || waker_main(&s));
    let (wakee_pid, busy_pid) = (wakee.pid(), busy.pid());
    waker.join();
    busy.join();
    // After a Ctrl-C the waker may have stopped before waking it.
    if !st.go.swap(true, Ordering::SeqCst) {
        st.wq.wake_all();
    }
    wakee.join();
    let woken = st.woken_at.load(Ordering::SeqCst);
    let ran = st.ran_at.load(Ordering::SeqCst);
    if woken == 0 || crate::sched::signal_pending() {
        println!("wakeup_busy: interrupted");
        return;
    }
    out.emit_str(
        "wakeup_busy",
        &format!(
            "wakeup_busy: wakee-{} (prio {}) woken from CPU {} while busy-{} held CPU {} for {} us: \
             it ran {} us after its wake-up\n",
            wakee_pid,
            policy.prio(),
            waker_cpu,
            busy_pid,
            target,
            us,
            ran.saturating_sub(woken) / 1000
        ),
    );
}

/// Polls `cond`, giving the CPU away in between, until it holds (true) or
/// Ctrl-C (false).
fn wait_for(cond: impl Fn() -> bool) -> bool {
    while !cond() {
        if sched::signal_pending() {
            return false;
        }
        sched::sleep_ns(1_000_000);
    }
    true
}

/// The wakee: sleeps until woken, then notes when it ran.
#[inline(never)]
fn wakee_main(st: &WakeupBusy) {
    st.wq.wait_until(|| st.go.load(Ordering::SeqCst));
    st.ran_at.store(crate::time::now_ns(), Ordering::SeqCst);
}

/// The waker: once the busy task holds the target CPU, wakes the wakee.
#[inline(never)]
fn waker_main(st: &WakeupBusy) {
    while !st.started.load(Ordering::SeqCst) {
        if sched::signal_pending() {
            return;
        }
        core::hint::spin_loop();
    }
    st.go.store(true, Ordering::SeqCst);
    st.wq.wake_all();
    // Stamped after the wake-up: the busy time counts from a moment
    // after the tracer's stamp, so the latency is at least `us`.
    st.woken_at.store(crate::time::now_ns(), Ordering::SeqCst);
}

/// The busy task: holds its CPU until the wake-up, then `ns` more.
#[inline(never)]
fn wakeup_busy_spin(st: &WakeupBusy, ns: u64) {
    st.started.store(true, Ordering::SeqCst);
    let woken = loop {
        let t = st.woken_at.load(Ordering::SeqCst);
        if t != 0 {
            break t;
        }
        if sched::signal_pending() {
            return;
        }
        core::hint::spin_loop();
    };
    while crate::time::now_ns() < woken + ns && !sched::signal_pending() {
        core::hint::spin_loop();
    }
}
