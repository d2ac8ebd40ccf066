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
