//! QEMU tests of the error paths of the tracing files: a filter that cannot
//! be installed when its file is closed, a tracer that cannot start, probe
//! counts used up while a filter file is open. The failures are injected
//! with the shell's `fail_function` (the next N calls of a function of the
//! code patcher fail with ENOMEM), as Linux's fail_function fault injection
//! does for its own tests.

use std::time::Duration;

use tests::Kernel;

const LEAF: &str = "kernel::shell::work::calltree_leaf";
const PAIR: &str = "kernel::shell::work::calltree_pair";
const ENOMEM: &str = "sh: echo: write error: Cannot allocate memory\n";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

fn run(k: &mut Kernel, cmd: &str) -> String {
    clean(&k.run(cmd))
}

/// Runs `cmd` and expects it to print nothing.
fn quiet(k: &mut Kernel, cmd: &str) {
    assert_eq!(run(k, cmd), "", "{cmd}");
}

/// How many events of `trace` are calls of `func` (`: func <-parent`).
fn count_in_trace(k: &mut Kernel, func: &str) -> usize {
    run(
        k,
        &format!("grep -c ': kernel::shell::work::{func} <-' trace"),
    )
    .trim()
    .parse()
    .unwrap()
}

#[test]
fn failed_installs_change_nothing() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    quiet(&mut k, "cd /tracing");
    quiet(&mut k, &format!("echo {LEAF} > set_ftrace_filter"));
    quiet(&mut k, "echo function > current_tracer");
    let out = run(&mut k, "calltree 1");
    assert!(out.starts_with("calltree: 1 iterations, result "), "{out}");
    // calltree_root calls calltree_leaf 4 times.
    assert_eq!(count_in_trace(&mut k, "calltree_leaf"), 4);

    // A filter whose code update fails: close() reports it, like a write
    // error, and the previous filter stays, whole and in effect.
    quiet(&mut k, "fail_function ftrace_update 1");
    assert_eq!(
        run(&mut k, &format!("echo {PAIR} > set_ftrace_filter")),
        ENOMEM
    );
    assert_eq!(run(&mut k, "cat set_ftrace_filter"), format!("{LEAF}\n"));
    let enabled = run(&mut k, "cat enabled_functions");
    assert!(enabled.starts_with(&format!("{LEAF} (1)")), "{enabled}");
    assert_eq!(enabled.lines().count(), 1, "{enabled}");
    quiet(&mut k, "echo > trace");
    run(&mut k, "calltree 1");
    assert_eq!(count_in_trace(&mut k, "calltree_leaf"), 4);
    assert_eq!(count_in_trace(&mut k, "calltree_pair"), 0);

    // A probe whose registration fails: no probe, the filter as it was.
    quiet(&mut k, "fail_function register_ftrace_function 1");
    assert_eq!(
        run(
            &mut k,
            "echo kernel::shell::work::calltree_root:traceoff >> set_ftrace_filter"
        ),
        ENOMEM
    );
    assert_eq!(run(&mut k, "cat set_ftrace_filter"), format!("{LEAF}\n"));
    quiet(&mut k, "echo > trace");
    run(&mut k, "calltree 1");
    assert_eq!(run(&mut k, "cat tracing_on"), "1\n");
    assert_eq!(count_in_trace(&mut k, "calltree_leaf"), 4);

    // A tracer that cannot start: the previous one stays current and keeps
    // tracing, and the buffer keeps its events.
    quiet(&mut k, "fail_function register_ftrace_function 1");
    assert_eq!(run(&mut k, "echo function_graph > current_tracer"), ENOMEM);
    assert_eq!(run(&mut k, "cat current_tracer"), "function\n");
    assert_eq!(count_in_trace(&mut k, "calltree_leaf"), 4);
    run(&mut k, "calltree 1");
    assert_eq!(count_in_trace(&mut k, "calltree_leaf"), 8);
    // The injected failures are used up: the switch works now.
    quiet(&mut k, "echo function_graph > current_tracer");
    assert_eq!(run(&mut k, "cat current_tracer"), "function_graph\n");
    quiet(&mut k, "echo nop > current_tracer");

    // A probe count used up while a filter file is open for writing is not
    // given back when the file is closed: `touch` hits the probe (and
    // writes nothing into the file held open by `>>`).
    quiet(
        &mut k,
        "echo kernel::shell::commands::touch:traceoff:3 > set_ftrace_filter",
    );
    quiet(&mut k, "touch /tmp/a >> set_ftrace_filter");
    assert_eq!(run(&mut k, "cat tracing_on"), "0\n");
    assert_eq!(
        run(&mut k, "cat set_ftrace_filter"),
        "#### all functions enabled ####\nkernel::shell::commands::touch:traceoff:count=2\n"
    );
    quiet(&mut k, "echo 1 > tracing_on");
    quiet(&mut k, "touch /tmp/b");
    assert_eq!(run(&mut k, "cat tracing_on"), "0\n");
    assert_eq!(
        run(&mut k, "cat set_ftrace_filter"),
        "#### all functions enabled ####\nkernel::shell::commands::touch:traceoff:count=1\n"
    );

    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}
