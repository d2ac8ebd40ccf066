//! QEMU tests of the behavioural trace options: each listed option does what
//! Linux 6.1's does, and Linux options with nothing to act on in this kernel
//! are unknown names (not listed, no file, EINVAL when written).

use tests::Kernel;

const T: &str = "/tracing";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

const EINVAL: &str = "sh: echo: write error: Invalid argument\n";

/// Options for user space, trace events, poll(), the latency tracers and the
/// function profiler are absent, under every tracer, and writing them fails.
#[test]
fn options_without_meaning_are_unknown() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let gone = [
        "block",
        "userstacktrace",
        "sym-userobj",
        "record-cmd",
        "event-fork",
        "function-trace",
        "display-graph",
        "stacktrace",
        "graph-time",
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
