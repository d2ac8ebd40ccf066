//! QEMU test of the function profiler (`function_profile_enabled` and
//! `trace_stat/functionN`), on 4 CPUs, with `calltree N 4`: four tasks
//! each run the call tree N times, and one tree is 1 calltree_root, 4
//! calltree_leaf, 1 calltree_pair, 3 calltree_chain and 1 calltree_wide
//! calls. Linux's `%-30.30s` cuts all five names to the same 30
//! characters, `kernel::shell::work::calltree_`, so the test sums the rows
//! with that name over the four per-CPU files:
//! - before the first enable every file is the header alone;
//! - enabled with no filter: 10 hits per tree, and other functions too;
//! - disabled: the files no longer change while the workload runs;
//! - bad writes give Linux's errno and change nothing;
//! - with `set_ftrace_filter` set to one function, re-enabling resets the
//!   counters (header only), then only that function is counted (4 per
//!   tree); a new filter applies at once (3 more per tree for the chain).

use std::time::Duration;

use tests::Kernel;

const CALLTREE: &str = "kernel::shell::work::calltree_";
const HEADER: [&str; 2] = [
    "  Function                               Hit",
    "  --------                               ---",
];
const EINVAL: &str = "sh: echo: write error: Invalid argument\n";
const ERANGE: &str = "sh: echo: write error: Numerical result out of range\n";
const CPUS: usize = 4;
const N: u64 = 20;
const TASKS: u64 = 4;

fn run(k: &mut Kernel, cmd: &str) -> String {
    k.run(cmd).replace('\r', "")
}

fn calltree(k: &mut Kernel) {
    let out = k
        .run_with_timeout(&format!("calltree {N} {TASKS}"), Duration::from_secs(600))
        .replace('\r', "");
    assert!(
        out.starts_with(&format!(
            "calltree: {TASKS} tasks x {N} iterations, result "
        )),
        "{out}"
    );
}

/// The text of every CPU's file.
fn files(k: &mut Kernel) -> Vec<String> {
    (0..CPUS)
        .map(|cpu| run(k, &format!("cat /tracing/trace_stat/function{cpu}")))
        .collect()
}

/// The rows of one file as (name, hits), after checking the header, the
/// row format (`"  %-30.30s  %10lu"`) and the descending order.
fn rows(text: &str) -> Vec<(String, u64)> {
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2 && lines[..2] == HEADER, "{text}");
    let rows: Vec<(String, u64)> = lines[2..]
        .iter()
        .map(|l| {
            assert_eq!(l.len(), 44, "{l:?} in\n{text}");
            assert!(l.starts_with("  ") && &l[32..34] == "  ", "{l:?}");
            let hits: u64 = l[34..]
                .trim_start()
                .parse()
                .unwrap_or_else(|_| panic!("{l:?}"));
            assert!(hits > 0, "{l:?}");
            (l[2..32].trim_end().to_string(), hits)
        })
        .collect();
    assert!(rows.windows(2).all(|w| w[0].1 >= w[1].1), "{text}");
    rows
}

/// The calltree hits summed over the CPUs, and how many CPUs had some.
fn calltree_hits(files: &[String]) -> (u64, usize) {
    let per_cpu: Vec<u64> = files
        .iter()
        .map(|f| {
            rows(f)
                .iter()
                .filter(|(n, _)| n == CALLTREE)
                .map(|(_, h)| h)
                .sum()
        })
        .collect();
    (
        per_cpu.iter().sum(),
        per_cpu.iter().filter(|&&h| h > 0).count(),
    )
}

#[test]
fn function_profiler() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    assert_eq!(run(&mut k, "cat /tracing/function_profile_enabled"), "0\n");
    assert_eq!(
        run(&mut k, "ls /tracing/trace_stat"),
        "function0\nfunction1\nfunction2\nfunction3\n"
    );
    for f in files(&mut k) {
        assert_eq!(f, format!("{}\n{}\n", HEADER[0], HEADER[1]));
    }

    // Enabled, every function counted.
    assert_eq!(
        run(&mut k, "echo 1 > /tracing/function_profile_enabled"),
        ""
    );
    assert_eq!(run(&mut k, "cat /tracing/function_profile_enabled"), "1\n");
    calltree(&mut k);
    let all = files(&mut k);
    let (hits, cpus) = calltree_hits(&all);
    assert_eq!(hits, 10 * N * TASKS, "{all:#?}");
    assert!(cpus >= 2, "the tasks ran on {cpus} CPU(s): {all:#?}");
    assert!(
        all.iter()
            .flat_map(|f| rows(f))
            .any(|(n, _)| n.starts_with("kernel::sched::")),
        "{all:#?}"
    );

    // Disabled: frozen.
    assert_eq!(
        run(&mut k, "echo 0 > /tracing/function_profile_enabled"),
        ""
    );
    assert_eq!(run(&mut k, "cat /tracing/function_profile_enabled"), "0\n");
    let frozen = files(&mut k);
    calltree(&mut k);
    assert_eq!(files(&mut k), frozen);
    assert_eq!(calltree_hits(&frozen).0, 10 * N * TASKS);

    // Bad writes: Linux's kstrtoul errno, nothing changed.
    for (arg, err) in [
        ("x", EINVAL),
        ("-1", EINVAL),
        ("1x", EINVAL),
        ("99999999999999999999999", ERANGE),
    ] {
        assert_eq!(
            run(
                &mut k,
                &format!("echo {arg} > /tracing/function_profile_enabled")
            ),
            err,
            "{arg}"
        );
        assert_eq!(run(&mut k, "cat /tracing/function_profile_enabled"), "0\n");
    }
    assert_eq!(files(&mut k), frozen);

    // Re-enabled with a filter: reset, then only calltree_leaf counted.
    assert_eq!(
        run(&mut k, "echo '*calltree_leaf' > /tracing/set_ftrace_filter"),
        ""
    );
    assert_eq!(
        run(&mut k, "echo 7 > /tracing/function_profile_enabled"),
        ""
    );
    assert_eq!(run(&mut k, "cat /tracing/function_profile_enabled"), "1\n");
    for f in files(&mut k) {
        assert_eq!(f, format!("{}\n{}\n", HEADER[0], HEADER[1]));
    }
    calltree(&mut k);
    let leaf = files(&mut k);
    assert!(
        leaf.iter()
            .flat_map(|f| rows(f))
            .all(|(n, _)| n == CALLTREE),
        "{leaf:#?}"
    );
    assert_eq!(calltree_hits(&leaf).0, 4 * N * TASKS, "{leaf:#?}");
    // Writing 1 while enabled changes nothing (no reset).
    assert_eq!(
        run(&mut k, "echo 1 > /tracing/function_profile_enabled"),
        ""
    );
    assert_eq!(files(&mut k), leaf);

    // A new filter applies to the running profiler.
    assert_eq!(
        run(
            &mut k,
            "echo '*calltree_chain' > /tracing/set_ftrace_filter"
        ),
        ""
    );
    calltree(&mut k);
    let both = files(&mut k);
    assert_eq!(calltree_hits(&both).0, (4 + 3) * N * TASKS, "{both:#?}");
    assert_eq!(
        run(&mut k, "echo 0 > /tracing/function_profile_enabled"),
        ""
    );
}
