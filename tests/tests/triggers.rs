//! QEMU tests of event triggers (`events/SYSTEM/EVENT/trigger`): a
//! counted `traceoff` fires exactly its count, `enable_event` and
//! `disable_event` switch another event at the command that hits the
//! trigger, `stacktrace` records the caller, `snapshot` keeps the trace
//! as it was at the firing, a count and an `if` filter combine, triggers are per trace array,
//! and bad writes give Linux's errno and install nothing. The shell's own
//! `shell_command_entry` event fires once at the start of every command
//! line, which makes the firings deterministic. Texts and errnos were
//! checked on Linux 6.1 (/work/shared/linux/qemu.sh).

use tests::Kernel;

const T: &str = "/tracing";
const ENTRY: &str = "/tracing/events/shell/shell_command_entry";
const EINVAL: &str = "sh: write error: Invalid argument\n";
const EEXIST: &str = "sh: write error: File exists\n";

fn run(k: &mut Kernel, cmd: &str) -> String {
    k.run(cmd).replace('\r', "")
}

/// The `line=` texts of the shell_command_entry records in `trace`, and
/// every event name in order (`shell_command_entry`, `vfs_open`, ...).
fn events(k: &mut Kernel, trace: &str) -> Vec<String> {
    run(k, &format!("cat {trace}"))
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            if let Some((_, line)) = l.split_once(": shell_command_entry: line=") {
                format!("entry {line}")
            } else if let Some((_, rest)) = l.split_once(": vfs_open: filename=") {
                format!("open {}", rest.split(' ').next().unwrap())
            } else {
                l.trim().to_string()
            }
        })
        .collect()
}

#[test]
fn counts_enable_event_stacktrace_instances_and_errors() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let help = "# Available triggers:\n\
                # traceon traceoff snapshot stacktrace enable_event disable_event hist\n";
    assert_eq!(run(&mut k, &format!("cat {ENTRY}/trigger")), help);

    // Bad writes: Linux's errno, nothing installed, no soft mode left.
    for bad in [
        "bogus",
        "traceoff:x",
        "traceoff+0",
        "traceoff:3 if",
        "enable_event:vfs",
        "enable_event:vfs:nosuch",
        "enable_event:nosuch:vfs_open",
        "enable_event:vfs:vfs_open:",
        "'!enable_event:vfs:nosuch'",
    ] {
        assert_eq!(
            run(&mut k, &format!("echo {bad} > {ENTRY}/trigger")),
            EINVAL,
            "{bad}"
        );
        assert_eq!(run(&mut k, &format!("cat {ENTRY}/trigger")), help, "{bad}");
    }
    assert_eq!(run(&mut k, &format!("cat {ENTRY}/enable")), "0\n");
    assert_eq!(
        run(&mut k, &format!("cat {T}/events/vfs/vfs_open/enable")),
        "0\n"
    );
    assert_eq!(
        run(
            &mut k,
            &format!("echo traceoff:18446744073709551616 > {ENTRY}/trigger")
        ),
        "sh: write error: Numerical result out of range\n"
    );
    // Removing what is not there succeeds, as on Linux.
    assert_eq!(
        run(&mut k, &format!("echo '!traceoff' > {ENTRY}/trigger")),
        ""
    );

    // A trigger puts its own event in soft mode: `0*` while it is off.
    assert_eq!(run(&mut k, &format!("echo traceoff > {ENTRY}/trigger")), "");
    assert_eq!(run(&mut k, &format!("cat {ENTRY}/enable")), "0*\n");
    assert_eq!(
        run(&mut k, &format!("cat {ENTRY}/trigger")),
        "traceoff:unlimited\n"
    );
    // One trigger per type: traceon and traceoff share theirs.
    assert_eq!(
        run(&mut k, &format!("echo traceoff:2 > {ENTRY}/trigger")),
        EEXIST
    );
    assert_eq!(
        run(&mut k, &format!("echo traceon > {ENTRY}/trigger")),
        EEXIST
    );
    assert_eq!(
        run(&mut k, &format!("cat {ENTRY}/trigger")),
        "traceoff:unlimited\n"
    );
    // `!traceon` removes it: removal is by type.
    assert_eq!(
        run(&mut k, &format!("echo '!traceon' > {ENTRY}/trigger")),
        ""
    );
    assert_eq!(run(&mut k, &format!("cat {ENTRY}/trigger")), help);
    assert_eq!(run(&mut k, &format!("cat {ENTRY}/enable")), "0\n");
    // It fired on the commands after it was set, with the event off.
    assert_eq!(run(&mut k, &format!("cat {T}/tracing_on")), "0\n");
    assert_eq!(run(&mut k, &format!("echo 1 > {T}/tracing_on")), "");

    // traceoff:3 with the event on: each `cat tracing_on` hits the trigger
    // with tracing on, so it reads 0 three times; after that the count is
    // 0 and tracing stays on. The event that turns tracing off is still in
    // the trace (traceoff runs after the record), and the `echo 1` lines,
    // which start with tracing off, are not there while the count lasts.
    assert_eq!(run(&mut k, &format!("echo 1 > {ENTRY}/enable")), "");
    assert_eq!(run(&mut k, &format!("echo > {T}/trace")), "");
    assert_eq!(
        run(&mut k, &format!("echo traceoff:3 > {ENTRY}/trigger")),
        ""
    );
    let mut seen = Vec::new();
    for _ in 0..5 {
        seen.push(run(&mut k, &format!("cat {T}/tracing_on")));
        run(&mut k, &format!("echo 1 > {T}/tracing_on"));
    }
    assert_eq!(seen, ["0\n", "0\n", "0\n", "1\n", "1\n"]);
    assert_eq!(
        run(&mut k, &format!("cat {ENTRY}/trigger")),
        "traceoff:count=0\n"
    );
    let cat_on = format!("entry cat {T}/tracing_on");
    let echo_on = format!("entry echo 1 > {T}/tracing_on");
    assert_eq!(
        events(&mut k, &format!("{T}/trace")),
        [
            format!("entry echo traceoff:3 > {ENTRY}/trigger"),
            cat_on.clone(),
            cat_on.clone(),
            cat_on.clone(),
            cat_on.clone(),
            echo_on.clone(),
            cat_on.clone(),
            echo_on.clone(),
            format!("entry cat {ENTRY}/trigger"),
            format!("entry cat {T}/trace"),
        ]
    );
    assert_eq!(
        run(&mut k, &format!("echo '!traceoff' > {ENTRY}/trigger")),
        ""
    );
    assert_eq!(run(&mut k, &format!("cat {ENTRY}/enable")), "1\n");

    // enable_event: vfs_open is registered soft-disabled (`0*`); the first
    // command after the trigger is set turns it on as it starts, so its
    // own open is the first vfs_open in the trace (that `cat` shows the
    // count already used). Removing the trigger leaves the event as it is,
    // out of soft mode.
    let open_enable = format!("{T}/events/vfs/vfs_open/enable");
    assert_eq!(run(&mut k, &format!("echo > {T}/trace")), "");
    assert_eq!(
        run(
            &mut k,
            &format!("echo enable_event:vfs:vfs_open:1 > {ENTRY}/trigger")
        ),
        ""
    );
    assert_eq!(
        run(&mut k, &format!("cat {ENTRY}/trigger")),
        "enable_event:vfs:vfs_open:count=0\n"
    );
    assert_eq!(run(&mut k, &format!("cat {open_enable}")), "1*\n");
    assert_eq!(
        events(&mut k, &format!("{T}/trace")),
        [
            format!("entry echo enable_event:vfs:vfs_open:1 > {ENTRY}/trigger"),
            format!("entry cat {ENTRY}/trigger"),
            format!("open {ENTRY}/trigger"),
            format!("entry cat {open_enable}"),
            format!("open {open_enable}"),
            // (Opening `trace` stops recording before its vfs_open.)
            format!("entry cat {T}/trace"),
        ]
    );
    assert_eq!(
        run(
            &mut k,
            &format!("echo disable_event:vfs:vfs_open > {ENTRY}/trigger")
        ),
        EEXIST
    );
    assert_eq!(
        run(
            &mut k,
            &format!("echo '!enable_event:vfs:vfs_open' > {ENTRY}/trigger")
        ),
        ""
    );
    assert_eq!(run(&mut k, &format!("cat {open_enable}")), "1\n");

    // disable_event: the next command's start turns vfs_open off.
    assert_eq!(
        run(
            &mut k,
            &format!("echo disable_event:vfs:vfs_open > {ENTRY}/trigger")
        ),
        ""
    );
    assert_eq!(run(&mut k, &format!("cat {open_enable}")), "0*\n");
    assert_eq!(
        run(
            &mut k,
            &format!("echo '!disable_event:vfs:vfs_open' > {ENTRY}/trigger")
        ),
        ""
    );
    assert_eq!(run(&mut k, &format!("cat {open_enable}")), "0\n");

    // stacktrace: the stack starts at the shell, not in tracing.
    assert_eq!(run(&mut k, &format!("echo > {T}/trace")), "");
    assert_eq!(
        run(&mut k, &format!("echo stacktrace:1 > {ENTRY}/trigger")),
        ""
    );
    run(&mut k, "echo hello");
    let trace = run(&mut k, &format!("cat {T}/trace"));
    let stacks: Vec<&str> = trace
        .lines()
        .filter(|l| l.ends_with(": <stack trace>"))
        .collect();
    assert_eq!(stacks.len(), 1, "{trace}");
    let after: Vec<&str> = trace
        .lines()
        .skip_while(|l| !l.ends_with(": <stack trace>"))
        .skip(1)
        .take_while(|l| l.starts_with(" => "))
        .collect();
    assert_eq!(after.first(), Some(&" => kernel::shell::run"), "{trace}");
    assert!(trace.contains("line=echo hello\n"), "{trace}");
    assert_eq!(
        run(&mut k, &format!("cat {ENTRY}/trigger")),
        "stacktrace:count=0\n"
    );
    assert_eq!(
        run(&mut k, &format!("echo '!stacktrace' > {ENTRY}/trigger")),
        ""
    );
    assert_eq!(run(&mut k, &format!("echo 0 > {ENTRY}/enable")), "");

    // A count and a filter: `traceoff:2 if ret == -22` on the command's
    // exit fires only after a command that failed with EINVAL, twice.
    let exit = format!("{T}/events/shell/shell_command_exit");
    assert_eq!(
        run(
            &mut k,
            &format!("echo 'traceoff if nosuch == 1' > {exit}/trigger")
        ),
        EINVAL
    );
    assert_eq!(
        run(
            &mut k,
            &format!("echo 'traceoff if ret == \"x\"' > {exit}/trigger")
        ),
        EINVAL
    );
    assert_eq!(run(&mut k, &format!("cat {exit}/trigger")), help);
    assert_eq!(
        run(
            &mut k,
            &format!("echo 'traceoff:2 if ret == -22' > {exit}/trigger")
        ),
        ""
    );
    assert_eq!(
        run(&mut k, &format!("cat {exit}/trigger")),
        "traceoff:count=2 if ret == -22\n"
    );
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(run(&mut k, &format!("cat {T}/tracing_on")));
        assert_eq!(run(&mut k, &format!("echo bogus > {exit}/trigger")), EINVAL);
        seen.push(run(&mut k, &format!("cat {T}/tracing_on")));
        run(&mut k, &format!("echo 1 > {T}/tracing_on"));
    }
    assert_eq!(seen, ["1\n", "0\n", "1\n", "0\n", "1\n", "1\n"]);
    assert_eq!(
        run(&mut k, &format!("cat {exit}/trigger")),
        "traceoff:count=0 if ret == -22\n"
    );
    assert_eq!(
        run(&mut k, &format!("echo '!traceoff' > {exit}/trigger")),
        ""
    );

    // snapshot: setting it allocates the spare buffer; the next command's
    // start swaps the buffers before its own record, so the snapshot holds
    // the trace as it was then and the live buffer goes on from there.
    assert_eq!(run(&mut k, &format!("echo 1 > {ENTRY}/enable")), "");
    assert_eq!(run(&mut k, &format!("echo > {T}/trace")), "");
    assert_eq!(run(&mut k, &format!("echo one > {T}/trace_marker")), "");
    assert_eq!(
        run(&mut k, &format!("echo snapshot:1 > {ENTRY}/trigger")),
        ""
    );
    assert_eq!(run(&mut k, &format!("echo two > {T}/trace_marker")), "");
    let marker_or_entry = |k: &mut Kernel, file: &str| -> Vec<String> {
        events(k, file)
            .into_iter()
            .map(|e| match e.split_once(": tracing_mark_write: ") {
                Some((_, m)) => format!("marker {m}"),
                None => e,
            })
            .collect()
    };
    assert_eq!(
        marker_or_entry(&mut k, &format!("{T}/snapshot")),
        [
            format!("entry echo one > {T}/trace_marker"),
            "marker one".to_string(),
            format!("entry echo snapshot:1 > {ENTRY}/trigger"),
        ]
    );
    assert_eq!(
        marker_or_entry(&mut k, &format!("{T}/trace")),
        [
            format!("entry echo two > {T}/trace_marker"),
            "marker two".to_string(),
            format!("entry cat {T}/snapshot"),
            format!("entry cat {T}/trace"),
        ]
    );
    assert_eq!(
        run(&mut k, &format!("cat {ENTRY}/trigger")),
        "snapshot:count=0\n"
    );
    // A spare freed under the trigger: Linux's message, and tracing stops.
    assert_eq!(
        run(&mut k, &format!("echo '!snapshot' > {ENTRY}/trigger")),
        ""
    );
    assert_eq!(run(&mut k, &format!("echo snapshot > {ENTRY}/trigger")), "");
    assert_eq!(run(&mut k, &format!("echo 0 > {T}/snapshot")), "");
    assert_eq!(run(&mut k, &format!("cat {T}/tracing_on")), "0\n");
    let trace = run(&mut k, &format!("cat {T}/trace"));
    assert!(
        trace.contains(": *** SNAPSHOT NOT ALLOCATED ***\n")
            && trace.contains(": *** stopping trace here!   ***\n"),
        "{trace}"
    );
    assert_eq!(
        run(&mut k, &format!("echo '!snapshot' > {ENTRY}/trigger")),
        ""
    );
    assert_eq!(run(&mut k, &format!("echo 1 > {T}/tracing_on")), "");
    assert_eq!(run(&mut k, &format!("echo 0 > {ENTRY}/enable")), "");

    // Triggers are per trace array: foo's traceoff stops foo only, and its
    // enable_event switches foo's vfs_open, not the top level's.
    assert_eq!(run(&mut k, &format!("mkdir {T}/instances/foo")), "");
    let foo = format!("{T}/instances/foo");
    let foo_entry = format!("{foo}/events/shell/shell_command_entry");
    assert_eq!(run(&mut k, &format!("cat {foo_entry}/trigger")), help);
    assert_eq!(
        run(&mut k, &format!("echo traceoff > {foo_entry}/trigger")),
        ""
    );
    assert_eq!(
        run(
            &mut k,
            &format!("echo enable_event:vfs:vfs_open > {foo_entry}/trigger")
        ),
        ""
    );
    assert_eq!(
        run(&mut k, &format!("cat {foo_entry}/trigger")),
        "enable_event:vfs:vfs_open:unlimited\ntraceoff:unlimited\n"
    );
    assert_eq!(run(&mut k, &format!("cat {foo}/tracing_on")), "0\n");
    assert_eq!(run(&mut k, &format!("cat {T}/tracing_on")), "1\n");
    assert_eq!(
        run(&mut k, &format!("cat {foo}/events/vfs/vfs_open/enable")),
        "1*\n"
    );
    assert_eq!(run(&mut k, &format!("cat {open_enable}")), "0\n");
    assert_eq!(run(&mut k, &format!("cat {ENTRY}/trigger")), help);
    // rmdir takes the triggers and their soft modes down.
    assert_eq!(run(&mut k, &format!("rmdir {foo}")), "");
    assert_eq!(run(&mut k, "echo still alive"), "still alive\n");

    // The probe's gate: a filter of one test, or the one-test filter of
    // a soft-disabled event's only trigger, is decided from the
    // tracepoint's arguments before the probe runs. A filter changed while
    // the event is on swaps the gate in one step.
    let rets = |k: &mut Kernel| -> Vec<String> {
        run(k, &format!("cat {T}/trace"))
            .lines()
            .filter_map(|l| {
                l.split_once(": shell_command_exit: ret=")
                    .map(|x| x.1.to_string())
            })
            .collect()
    };
    assert_eq!(run(&mut k, &format!("echo > {T}/trace")), "");
    assert_eq!(run(&mut k, &format!("echo 1 > {exit}/enable")), "");
    assert_eq!(
        run(&mut k, &format!("echo 'ret == -22' > {exit}/filter")),
        ""
    );
    assert_eq!(run(&mut k, &format!("echo bogus > {exit}/trigger")), EINVAL);
    run(&mut k, "echo kept out");
    assert_eq!(
        run(&mut k, &format!("echo 'ret != -22' > {exit}/filter")),
        ""
    );
    assert_eq!(run(&mut k, &format!("echo bogus > {exit}/trigger")), EINVAL);
    assert_eq!(run(&mut k, &format!("echo 0 > {exit}/enable")), "");
    assert_eq!(run(&mut k, &format!("echo 0 > {exit}/filter")), "");
    // The enable write (no filter yet), the EINVAL, the second filter
    // write (its own exit passes the filter it set).
    assert_eq!(rets(&mut k), ["0", "-22", "0"]);
    // A trigger's gate drops a hit only while its event is soft-disabled:
    // enable_event on the entry turns the exit event on from a probe, and
    // from then on its records are written though the trigger's test
    // fails.
    assert_eq!(
        run(
            &mut k,
            &format!("echo 'traceoff if ret == 12345' > {exit}/trigger")
        ),
        ""
    );
    assert_eq!(run(&mut k, &format!("cat {exit}/enable")), "0*\n");
    assert_eq!(run(&mut k, &format!("echo > {T}/trace")), "");
    run(&mut k, "echo not recorded");
    assert_eq!(
        run(
            &mut k,
            &format!("echo enable_event:shell:shell_command_exit:1 > {ENTRY}/trigger")
        ),
        ""
    );
    run(&mut k, "echo recorded");
    assert_eq!(run(&mut k, &format!("cat {exit}/enable")), "1*\n");
    assert_eq!(run(&mut k, &format!("cat {T}/tracing_on")), "1\n");
    // Recorded from the command after the enable_event write on: that
    // `echo recorded`, the `cat enable` and the `cat tracing_on`.
    assert_eq!(rets(&mut k), ["0", "0", "0"]);
    assert_eq!(
        run(
            &mut k,
            &format!("echo '!enable_event:shell:shell_command_exit' > {ENTRY}/trigger")
        ),
        ""
    );
    assert_eq!(
        run(&mut k, &format!("echo '!traceoff' > {exit}/trigger")),
        ""
    );
    assert_eq!(run(&mut k, &format!("echo 0 > {exit}/enable")), "");
    assert_eq!(run(&mut k, &format!("cat {exit}/enable")), "0\n");
}
