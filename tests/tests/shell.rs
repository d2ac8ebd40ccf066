//! QEMU tests of the shell, the VFS (ramfs + mounts), the tracefs control
//! files and the workloads. Each test boots once and runs many commands.

use std::time::{Duration, Instant};

use tests::Kernel;

/// `work compute` computed on the host with the same algorithm as
/// kernel/src/shell/work.rs (depth-10 tree, left = 3x+1, right = x^0x5a5a,
/// leaf = top 5 bits of x * golden ratio), so the kernel's result is checked
/// against an independent computation.
fn compute_expected(iterations: u64) -> u64 {
    fn node(depth: u32, x: u64) -> u64 {
        if depth == 0 {
            x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59
        } else {
            node(depth - 1, x.wrapping_mul(3).wrapping_add(1))
                .wrapping_add(node(depth - 1, x ^ 0x5a5a))
        }
    }
    (0..iterations).fold(0u64, |sum, i| sum.wrapping_add(node(10, i)))
}

const NOP_TRACE_4CPU: &str = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 0/0   #P:4
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
";

/// Output lines, without the `\r` the serial console adds.
fn lines(s: &str) -> Vec<String> {
    s.replace('\r', "").lines().map(str::to_string).collect()
}

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

#[test]
fn files_directories_and_errors() {
    let mut k = Kernel::boot(&["--smp", "4"]);

    let root = lines(&k.run("ls /"));
    for name in ["sys", "tmp", "tracing"] {
        assert!(root.iter().any(|l| l == name), "ls / gave {root:?}");
    }
    assert_eq!(
        clean(&k.run("cpus")),
        "cpu0 apic 0 online\ncpu1 apic 1 online\ncpu2 apic 2 online\ncpu3 apic 3 online\n"
    );

    // echo, >, >>, cat
    assert_eq!(k.run("mkdir /tmp/d"), "");
    assert_eq!(k.run("echo hello > /tmp/d/f"), "");
    assert_eq!(clean(&k.run("cat /tmp/d/f")), "hello\n");
    assert_eq!(k.run("echo world >>/tmp/d/f"), "");
    assert_eq!(clean(&k.run("cat /tmp/d/f")), "hello\nworld\n");
    assert_eq!(k.run("echo 'a  b' \"c|d\" >/tmp/d/q"), "");
    assert_eq!(clean(&k.run("cat /tmp/d/q")), "a  b c|d\n");
    assert_eq!(clean(&k.run("echo -n x>/tmp/d/q")), "");
    assert_eq!(clean(&k.run("cat /tmp/d/q /tmp/d/q | wc -c")), "2\n");
    let long = lines(&k.run("ls -l /tmp/d"));
    assert_eq!(long.len(), 2, "{long:?}");
    assert!(
        long[0].starts_with("-rw-r--r--") && long[0].ends_with(" 12 f"),
        "{long:?}"
    );

    // Line editing: backspace and DEL remove the previous character (the
    // shell echoes BS, space, BS), CR ends a line like LF.
    k.send(b"echo abX\x7fc\x08d\r");
    let out = k.wait_prompt(Duration::from_secs(10));
    assert!(
        out.ends_with("echo abX\x08 \x08c\x08 \x08d\nabd\n/ # "),
        "{out:?}"
    );

    // relative paths, cd, pwd, . and ..
    assert_eq!(k.run("cd /tmp/d"), "");
    assert_eq!(clean(&k.run("pwd")), "/tmp/d\n");
    assert_eq!(clean(&k.run("cat ./f")), "hello\nworld\n");
    assert_eq!(clean(&k.run("cat ..//d/../d/f")), "hello\nworld\n");
    assert_eq!(k.run("cd ../.."), "");
    assert_eq!(clean(&k.run("pwd")), "/\n");
    assert_eq!(
        clean(&k.run("cd /nope")),
        "sh: cd: can't cd to /nope: No such file or directory\n"
    );

    // errors
    assert_eq!(
        clean(&k.run("cat /nope")),
        "cat: /nope: No such file or directory\n"
    );
    assert_eq!(clean(&k.run("cat /tmp")), "cat: /tmp: Is a directory\n");
    assert_eq!(clean(&k.run("foo")), "sh: foo: not found\n");
    assert_eq!(
        clean(&k.run("rmdir /tmp/d")),
        "rmdir: '/tmp/d': Directory not empty\n"
    );
    assert_eq!(
        clean(&k.run("mkdir /tmp/d")),
        "mkdir: can't create directory '/tmp/d': File exists\n"
    );
    assert_eq!(
        clean(&k.run("rm /tmp/d")),
        "rm: can't remove '/tmp/d': Is a directory\n"
    );
    assert_eq!(
        clean(&k.run("echo x > /nope/f")),
        "sh: can't create /nope/f: No such file or directory\n"
    );
    assert_eq!(
        clean(&k.run("rmdir /tracing")),
        "rmdir: '/tracing': Device or resource busy\n"
    );
    assert_eq!(k.run("rm /tmp/d/f /tmp/d/q"), "");
    assert_eq!(k.run("rmdir /tmp/d"), "");
    assert_eq!(
        clean(&k.run("ls /tmp/d")),
        "ls: /tmp/d: No such file or directory\n"
    );
    assert_eq!(k.run("touch /tmp/t"), "");
    assert_eq!(clean(&k.run("wc -c /tmp/t")), "0 /tmp/t\n");

    // pipes with head, tail, grep and wc
    for i in 1..=12 {
        assert_eq!(k.run(&format!("echo {i} >> /tmp/n")), "");
    }
    assert_eq!(clean(&k.run("head -n 3 /tmp/n")), "1\n2\n3\n");
    assert_eq!(clean(&k.run("cat /tmp/n | tail -n 2")), "11\n12\n");
    assert_eq!(clean(&k.run("cat /tmp/n | grep 1 | wc -l")), "4\n");
    assert_eq!(clean(&k.run("grep -v 1 /tmp/n | wc -l")), "8\n");
    assert_eq!(clean(&k.run("grep -c ^1 /tmp/n")), "4\n");
    assert_eq!(clean(&k.run("cat /tmp/n|head -n 5|tail -n 1")), "5\n");
    assert_eq!(clean(&k.run("wc -l /tmp/n")), "12 /tmp/n\n");
    assert_eq!(k.run("cat /tmp/n | grep 2 > /tmp/m"), "");
    assert_eq!(clean(&k.run("cat /tmp/m")), "2\n12\n");
    assert_eq!(clean(&k.run("help | grep -c poweroff")), "1\n");

    k.send(b"exit 3\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 3);
}

#[test]
fn tracefs_control_files_and_workloads() {
    let mut k = Kernel::boot(&["--smp", "4"]);

    let top = lines(&k.run("ls /tracing"));
    for name in [
        "README",
        "available_tracers",
        "current_tracer",
        "dynamic_events",
        "kprobe_events",
        "kprobe_profile",
        "trace",
        "tracing_on",
    ] {
        assert!(top.iter().any(|l| l == name), "ls /tracing gave {top:?}");
    }
    // Both mount points show the same tracefs.
    assert_eq!(k.run("ls /sys/kernel/tracing"), k.run("ls /tracing"));

    // Newest tracer first, nop last, as Linux lists them.
    assert_eq!(
        clean(&k.run("cat /tracing/available_tracers")),
        "funccount function_graph wakeup_rt wakeup preemptirqsoff preemptoff irqsoff function nop\n"
    );
    assert_eq!(clean(&k.run("cat /tracing/current_tracer")), "nop\n");
    assert_eq!(
        clean(&k.run("echo foo > /tracing/current_tracer")),
        "sh: write error: Invalid argument\n"
    );
    assert_eq!(
        clean(&k.run("cat /sys/kernel/tracing/current_tracer")),
        "nop\n"
    );
    assert_eq!(k.run("echo nop > /sys/kernel/tracing/current_tracer"), "");
    assert_eq!(k.run("echo -n nop > /tracing/current_tracer"), "");
    assert_eq!(
        clean(&k.run("echo > /tracing/current_tracer")),
        "sh: write error: Invalid argument\n"
    );

    assert_eq!(clean(&k.run("cat /tracing/tracing_on")), "1\n");
    assert_eq!(k.run("echo 0 > /tracing/tracing_on"), "");
    assert_eq!(clean(&k.run("cat /tracing/tracing_on")), "0\n");
    assert_eq!(
        clean(&k.run("echo on > /tracing/tracing_on")),
        "sh: write error: Invalid argument\n"
    );
    assert_eq!(clean(&k.run("cat /tracing/tracing_on")), "0\n");
    assert_eq!(k.run("cd /tracing"), "");
    assert_eq!(k.run("echo 1 > tracing_on"), "");
    assert_eq!(clean(&k.run("cat tracing_on")), "1\n");

    assert_eq!(clean(&k.run("cat trace")), NOP_TRACE_4CPU);
    assert_eq!(k.run("echo > trace"), "");
    assert_eq!(clean(&k.run("cat trace | head -n 1")), "# tracer: nop\n");
    assert!(clean(&k.run("cat README")).starts_with("tracing mini-HOWTO:\n\n"));
    assert_eq!(clean(&k.run("grep -c tracing_on README")), "3\n");

    assert_eq!(
        clean(&k.run("echo 1 > available_tracers")),
        "sh: write error: Invalid argument\n"
    );
    assert_eq!(
        clean(&k.run("echo x > newfile")),
        "sh: can't create newfile: Permission denied\n"
    );
    assert_eq!(
        clean(&k.run("mkdir foo")),
        "mkdir: can't create directory 'foo': Operation not permitted\n"
    );
    assert_eq!(
        clean(&k.run("rm trace")),
        "rm: can't remove 'trace': Operation not permitted\n"
    );
    assert_eq!(k.run("cd /"), "");

    // Workloads on every CPU, with deterministic summaries.
    assert_eq!(
        clean(&k.run("work compute 40")),
        format!(
            "work compute: 4 cpus x 40 iterations, result {}\n",
            compute_expected(40)
        )
    );
    assert_eq!(
        clean(&k.run("work files 25")),
        "work files: 4 cpus x 25 files, 100 verified, 0 errors\n"
    );
    assert_eq!(
        clean(&k.run("work sleep 20")),
        "work sleep: 4 pairs x 20 round trips, 80 done, 160 wake-ups, 0 errors\n"
    );
    let all = clean(&k.run("work all 1"));
    assert!(
        all.starts_with("work all: 1.") && all.ends_with(" 0 errors\n"),
        "{all}"
    );
    // The workers are gone afterwards.
    assert!(!k.run("ps").contains("work-"));

    // sleep really sleeps.
    let t = Instant::now();
    assert_eq!(k.run("sleep 1.5"), "");
    assert!(t.elapsed() >= Duration::from_millis(1500));

    // Ctrl-C stops a blocking read of trace_pipe (the buffer is empty, so
    // the read blocks, as on Linux), a sleep and a long workload.
    assert_blocks_until_ctrl_c(&mut k, "cat /tracing/trace_pipe");
    assert_eq!(k.run("cd /tracing"), "");
    assert_blocks_until_ctrl_c(&mut k, "cat trace_pipe | head -n 1");
    assert_eq!(k.run("cd /"), "");
    assert_blocks_until_ctrl_c(&mut k, "sleep 100");
    k.send(b"work all 1000\n");
    // A Ctrl-C typed once the line is echoed reaches the command, even if
    // the command has not started yet.
    k.expect("work all 1000\n", Duration::from_secs(10));
    k.send(b"\x03");
    let out = k.wait_prompt(Duration::from_secs(30));
    assert!(out.contains("(interrupted)\n^C\n"), "{out}");
    assert_eq!(clean(&k.run("echo still alive")), "still alive\n");
    // A Ctrl-C at the prompt discards the line being typed.
    k.send(b"echo never\x03");
    let out = k.wait_prompt(Duration::from_secs(10));
    assert!(out.ends_with("echo never^C\n/ # "), "{out}");

    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}

/// Runs `cmd`, checks that it prints nothing and gives no prompt for a
/// second (it blocks), then types Ctrl-C and expects `^C` and the prompt back.
fn assert_blocks_until_ctrl_c(k: &mut Kernel, cmd: &str) {
    k.send(format!("{cmd}\n").as_bytes());
    k.expect(&format!("{cmd}\n"), Duration::from_secs(10));
    k.expect_silence(Duration::from_secs(1));
    k.send(b"\x03");
    let out = k.wait_prompt(Duration::from_secs(10));
    assert!(
        out.ends_with("^C\n/ # ") || out.ends_with("^C\n/tracing # "),
        "{out}"
    );
}
