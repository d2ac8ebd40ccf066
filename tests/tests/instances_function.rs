//! QEMU tests of the function tracer in instances: each trace array has
//! its own ftrace_ops, set_ftrace_filter/notrace, set_ftrace_pid and
//! function probes, and removing an instance that is tracing leaves the
//! top level tracing.

use std::collections::BTreeSet;

use tests::Kernel;

const T: &str = "/tracing";
const W: &str = "kernel::shell::work::";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

/// The traced function of each event line of a `trace` file (the text
/// between the time stamp's `: ` and ` <-`).
fn functions(trace: &str) -> Vec<String> {
    clean(trace)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let after_cpu = &l[l.find("] ").unwrap_or_else(|| panic!("{l:?}")) + 2..];
            let body = &after_cpu[after_cpu.find(": ").unwrap_or_else(|| panic!("{l:?}")) + 2..];
            body.split(" <-").next().unwrap().to_string()
        })
        .collect()
}

fn trace_functions(k: &mut Kernel, dir: &str) -> Vec<String> {
    functions(&k.run(&format!("cat {dir}/trace")))
}

fn run_ok(k: &mut Kernel, cmd: &str) {
    assert_eq!(clean(&k.run(cmd)), "", "{cmd}");
}

fn cat(k: &mut Kernel, path: &str) -> String {
    clean(&k.run(&format!("cat {path}")))
}

/// Every event of `dir`'s trace is a call of `func`, and there is one.
fn only(k: &mut Kernel, dir: &str, func: &str) {
    let got = trace_functions(k, dir);
    assert!(!got.is_empty(), "{dir}: no event");
    assert!(
        got.iter().all(|f| f == func),
        "{dir}: events other than {func}: {got:?}"
    );
}

/// enabled_functions as a set of `name (refs)` lines.
fn enabled(k: &mut Kernel) -> BTreeSet<String> {
    cat(k, &format!("{T}/enabled_functions"))
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect()
}

fn set(lines: &[String]) -> BTreeSet<String> {
    lines.iter().cloned().collect()
}

#[test]
fn two_instances_with_their_own_filters_pids_and_probes() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    let (a, b) = (format!("{T}/instances/a"), format!("{T}/instances/b"));
    let (leaf, node, iter) = (
        format!("{W}compute_leaf"),
        format!("{W}compute_node"),
        format!("{W}compute_iteration"),
    );
    run_ok(&mut k, &format!("mkdir {a}"));
    run_ok(&mut k, &format!("mkdir {b}"));
    assert_eq!(
        cat(&mut k, &format!("{a}/available_tracers")),
        // Every tracer but function_graph allows instances (Linux 6.1's
        // `allow_instances`).
        "wakeup_rt wakeup preemptirqsoff preemptoff irqsoff function nop\n"
    );
    run_ok(&mut k, &format!("echo {leaf} > {a}/set_ftrace_filter"));
    run_ok(&mut k, &format!("echo {node} > {b}/set_ftrace_filter"));
    run_ok(&mut k, &format!("echo {iter} > {T}/set_ftrace_filter"));
    // Each file shows its own array's filter.
    assert_eq!(
        cat(&mut k, &format!("{a}/set_ftrace_filter")),
        format!("{leaf}\n")
    );
    assert_eq!(
        cat(&mut k, &format!("{b}/set_ftrace_filter")),
        format!("{node}\n")
    );
    assert_eq!(
        cat(&mut k, &format!("{T}/set_ftrace_filter")),
        format!("{iter}\n")
    );
    assert_eq!(
        cat(&mut k, &format!("{a}/set_ftrace_notrace")),
        cat(&mut k, &format!("{T}/set_ftrace_notrace"))
    );
    // A filter alone enables nothing; each array's tracer its own sites.
    assert_eq!(enabled(&mut k), BTreeSet::new());
    for dir in [a.as_str(), b.as_str(), T] {
        run_ok(&mut k, &format!("echo function > {dir}/current_tracer"));
    }
    assert_eq!(
        enabled(&mut k),
        set(&[
            format!("{leaf} (1)"),
            format!("{node} (1)"),
            format!("{iter} (1)")
        ])
    );
    k.run("work compute 3");
    only(&mut k, &a, &leaf);
    only(&mut k, &b, &node);
    only(&mut k, T, &iter);

    // tracing_on of one array stops only that array.
    run_ok(&mut k, &format!("echo 0 > {a}/tracing_on"));
    for dir in [a.as_str(), b.as_str(), T] {
        run_ok(&mut k, &format!("echo > {dir}/trace"));
    }
    k.run("work compute 2");
    assert_eq!(trace_functions(&mut k, &a), Vec::<String>::new());
    only(&mut k, &b, &node);
    only(&mut k, T, &iter);
    run_ok(&mut k, &format!("echo 1 > {a}/tracing_on"));

    // set_ftrace_pid of an instance: a pid no worker has empties its
    // trace, not the others'.
    run_ok(&mut k, &format!("echo 999 > {a}/set_ftrace_pid"));
    assert_eq!(cat(&mut k, &format!("{a}/set_ftrace_pid")), "999\n");
    assert_eq!(cat(&mut k, &format!("{T}/set_ftrace_pid")), "no pid\n");
    for dir in [a.as_str(), b.as_str(), T] {
        run_ok(&mut k, &format!("echo > {dir}/trace"));
    }
    k.run("work compute 2");
    assert_eq!(trace_functions(&mut k, &a), Vec::<String>::new());
    only(&mut k, &b, &node);
    only(&mut k, T, &iter);
    run_ok(&mut k, &format!("echo > {a}/set_ftrace_pid"));
    assert_eq!(cat(&mut k, &format!("{a}/set_ftrace_pid")), "no pid\n");

    // notrace of an instance.
    run_ok(&mut k, &format!("echo {leaf} > {a}/set_ftrace_notrace"));
    assert_eq!(
        cat(&mut k, &format!("{a}/set_ftrace_notrace")),
        format!("{leaf}\n")
    );
    assert_eq!(
        cat(&mut k, &format!("{T}/set_ftrace_notrace")),
        "#### no functions disabled ####\n"
    );
    assert!(!enabled(&mut k).contains(&format!("{leaf} (1)")));
    run_ok(&mut k, &format!("echo > {a}/set_ftrace_notrace"));
    assert!(enabled(&mut k).contains(&format!("{leaf} (1)")));

    // A traceoff probe in b turns off b's tracing_on only.
    run_ok(
        &mut k,
        &format!("echo '{node}:traceoff' >> {b}/set_ftrace_filter"),
    );
    assert_eq!(
        cat(&mut k, &format!("{b}/set_ftrace_filter")),
        format!("{node}\n{node}:traceoff:unlimited\n")
    );
    assert_eq!(
        cat(&mut k, &format!("{T}/set_ftrace_filter")),
        format!("{iter}\n")
    );
    // b's function ops and its probe ops both want compute_node.
    assert!(enabled(&mut k).contains(&format!("{node} (2)")));
    k.run("work compute 1");
    assert_eq!(cat(&mut k, &format!("{b}/tracing_on")), "0\n");
    assert_eq!(cat(&mut k, &format!("{a}/tracing_on")), "1\n");
    assert_eq!(cat(&mut k, &format!("{T}/tracing_on")), "1\n");

    // Removing b (tracer and probe running) lets go of its ops; a and the
    // top level go on.
    run_ok(&mut k, &format!("rmdir {b}"));
    assert_eq!(
        enabled(&mut k),
        set(&[format!("{leaf} (1)"), format!("{iter} (1)")])
    );
    for dir in [a.as_str(), T] {
        run_ok(&mut k, &format!("echo > {dir}/trace"));
    }
    k.run("work compute 2");
    only(&mut k, &a, &leaf);
    only(&mut k, T, &iter);
    // nop in an instance unregisters its ops.
    run_ok(&mut k, &format!("echo nop > {a}/current_tracer"));
    assert_eq!(enabled(&mut k), set(&[format!("{iter} (1)")]));
}

#[test]
fn rmdir_while_tracing_leaves_the_top_level_tracing_and_ops_pool_of_16() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    let leaf = format!("{W}compute_leaf");
    run_ok(&mut k, &format!("echo {leaf} > {T}/set_ftrace_filter"));
    run_ok(&mut k, &format!("echo function > {T}/current_tracer"));
    for round in 0..3 {
        let x = format!("{T}/instances/x{round}");
        run_ok(&mut k, &format!("mkdir {x}"));
        // No filter: the instance traces every function, on every CPU,
        // while the workers run and when it is removed.
        run_ok(&mut k, &format!("echo function > {x}/current_tracer"));
        k.run("work compute 2");
        let got = trace_functions(&mut k, &x);
        let distinct: BTreeSet<&String> = got.iter().collect();
        assert!(distinct.len() > 10, "{x}: {distinct:?}");
        run_ok(&mut k, &format!("rmdir {x}"));
        assert_eq!(enabled(&mut k), set(&[format!("{leaf} (1)")]));
        run_ok(&mut k, &format!("echo > {T}/trace"));
        k.run("work compute 1");
        only(&mut k, T, &leaf);
    }
    assert_eq!(cat(&mut k, &format!("{T}/current_tracer")), "function\n");

    // Instances take their function tracer's ops from a pool of 16: the
    // 17th gets ENOSPC and keeps nop, until another one lets go of its.
    for i in 0..17 {
        let x = format!("{T}/instances/i{i}");
        run_ok(&mut k, &format!("mkdir {x}"));
        run_ok(&mut k, &format!("echo 4 > {x}/buffer_size_kb"));
        run_ok(&mut k, &format!("echo {leaf} > {x}/set_ftrace_filter"));
        let r = clean(&k.run(&format!("echo function > {x}/current_tracer")));
        if i < 16 {
            assert_eq!(r, "", "{x}");
        } else {
            assert_eq!(r, "sh: write error: No space left on device\n");
            assert_eq!(cat(&mut k, &format!("{x}/current_tracer")), "nop\n");
        }
    }
    assert_eq!(enabled(&mut k), set(&[format!("{leaf} (17)")]));
    run_ok(
        &mut k,
        &format!("echo nop > {T}/instances/i3/current_tracer"),
    );
    run_ok(
        &mut k,
        &format!("echo function > {T}/instances/i16/current_tracer"),
    );
    run_ok(&mut k, &format!("echo > {T}/instances/i16/trace"));
    k.run("work compute 1");
    only(&mut k, &format!("{T}/instances/i16"), &leaf);
    for i in 0..17 {
        run_ok(&mut k, &format!("rmdir {T}/instances/i{i}"));
    }
    assert_eq!(enabled(&mut k), set(&[format!("{leaf} (1)")]));
}
