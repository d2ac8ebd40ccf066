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
//!
//! `profiler_times` checks the Time, Avg and s^2 columns with `profnest`,
//! whose functions have known relative lengths, with the `graph-time`
//! option on and off, and the one-user rule of the function-graph core
//! (EBUSY both ways with function_graph).

use std::time::Duration;

use tests::Kernel;

const CALLTREE: &str = "kernel::shell::work::calltree_";
const HEADER: [&str; 2] = [
    "  Function                               Hit    Time            Avg             s^2",
    "  --------                               ---    ----            ---             ---",
];
const EBUSY: &str = "sh: write error: Device or resource busy\n";
const EINVAL: &str = "sh: write error: Invalid argument\n";
const ERANGE: &str = "sh: write error: Numerical result out of range\n";
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

/// One row: the name (cut to 30), the hits, and Time, Avg and s^2 as
/// printed (µs).
#[derive(Clone, Debug)]
struct Row {
    name: String,
    hits: u64,
    time: f64,
    avg: f64,
    s2: f64,
}

/// The three duration columns after the hits: each `"    "`, then the
/// µs (with as many of 3 decimals as fit in 7 digits), `" us "`, and
/// spaces up to 8 characters for the number (Linux:
/// trace_print_graph_duration).
fn durations(rest: &str, line: &str) -> [f64; 3] {
    let mut cols = [0.0; 3];
    let mut r = rest;
    for c in cols.iter_mut() {
        r = r.strip_prefix("    ").unwrap_or_else(|| panic!("{line:?}"));
        let (num, tail) = r.split_once(" us ").unwrap_or_else(|| panic!("{line:?}"));
        let (pad, after) = tail.split_at(8usize.saturating_sub(num.len()));
        assert!(pad.chars().all(|c| c == ' '), "{line:?}");
        *c = num.parse().unwrap_or_else(|_| panic!("{line:?}"));
        r = after;
    }
    assert!(r.is_empty(), "{line:?}");
    cols
}

/// The rows of one file, after checking the header, the row format
/// (`"  %-30.30s  %10lu"` and three durations) and the order (by time).
fn rows(text: &str) -> Vec<Row> {
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2 && lines[..2] == HEADER, "{text}");
    let rows: Vec<Row> = lines[2..]
        .iter()
        .map(|l| {
            assert!(l.len() >= 44 + 3 * 16, "{l:?} in\n{text}");
            assert!(l.starts_with("  ") && &l[32..34] == "  ", "{l:?}");
            let hits: u64 = l[34..44]
                .trim_start()
                .parse()
                .unwrap_or_else(|_| panic!("{l:?}"));
            assert!(hits > 0, "{l:?}");
            let [time, avg, s2] = durations(&l[44..], l);
            Row {
                name: l[2..32].trim_end().to_string(),
                hits,
                time,
                avg,
                s2,
            }
        })
        .collect();
    assert!(rows.windows(2).all(|w| w[0].time >= w[1].time), "{text}");
    rows
}

/// The calltree hits summed over the CPUs, and how many CPUs had some.
fn calltree_hits(files: &[String]) -> (u64, usize) {
    let per_cpu: Vec<u64> = files
        .iter()
        .map(|f| {
            rows(f)
                .iter()
                .filter(|r| r.name == CALLTREE)
                .map(|r| r.hits)
                .sum::<u64>()
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
            .any(|r| r.name.starts_with("kernel::sched::")),
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
            .all(|r| r.name == CALLTREE),
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

const OUTER: &str = "kernel::shell::work::pf_outer";
const INNER: &str = "kernel::shell::work::pf_inner";
const NEST: u64 = 30;

/// `name`'s rows summed over the CPUs: (hits, time, sum of avg*hits), and
/// its largest s^2 and that row's avg.
fn nest_rows(k: &mut Kernel, name: &str) -> (u64, f64, f64, Vec<Row>) {
    let rs: Vec<Row> = files(k)
        .iter()
        .flat_map(|f| rows(f))
        .filter(|r| r.name == name)
        .collect();
    let hits = rs.iter().map(|r| r.hits).sum();
    let time = rs.iter().map(|r| r.time).sum();
    let avg_hits = rs.iter().map(|r| r.avg * r.hits as f64).sum();
    (hits, time, avg_hits, rs)
}

fn profnest(k: &mut Kernel) {
    let out = k
        .run_with_timeout(&format!("profnest {NEST}"), Duration::from_secs(600))
        .replace('\r', "");
    assert!(
        out.starts_with(&format!("profnest: {NEST} iterations, result ")),
        "{out}"
    );
}

/// Profiles `profnest` from a fresh enable; returns the outer and inner
/// (hits, time) after checking avg*hits against the time and the inner
/// calls' s^2 against their known spread (1 and 2 units: about avg^2 / 9).
fn profile_nest(k: &mut Kernel) -> ((u64, f64), (u64, f64)) {
    assert_eq!(run(k, "echo 1 > /tracing/function_profile_enabled"), "");
    profnest(k);
    assert_eq!(run(k, "echo 0 > /tracing/function_profile_enabled"), "");
    let (oh, ot, oah, _) = nest_rows(k, OUTER);
    let (ih, it, iah, irows) = nest_rows(k, INNER);
    assert_eq!((oh, ih), (NEST, 2 * NEST));
    for (t, ah) in [(ot, oah), (it, iah)] {
        // Avg is time / hits, cut to ns: avg * hits is at most the time,
        // and short of it by less than a µs per row.
        assert!(ah <= t + 0.01 && t - ah < 4.0, "avg*hits {ah} time {t}");
    }
    // pf_inner's calls last 1 or 2 units, half of each: mean 1.5 units,
    // sample variance 0.25 units^2 * n / (n - 1), i.e. avg^2 / 9 * n / (n - 1).
    for r in irows.iter().filter(|r| r.hits >= 10) {
        let n = r.hits as f64;
        let known = r.avg * r.avg / 9.0 * n / (n - 1.0);
        assert!(
            r.s2 > known * 0.8 && r.s2 < known * 1.25,
            "s^2 {} against avg^2/9 = {known}: {r:?}",
            r.s2
        );
    }
    ((oh, ot), (ih, it))
}

/// With `--icount` the guest clock counts instructions, so the spins'
/// durations are exact multiples of one unit.
#[test]
fn profiler_times() {
    let mut k = Kernel::boot(&["--smp", "4", "--icount"]);
    assert_eq!(
        run(
            &mut k,
            "echo '*pf_outer *pf_inner' > /tracing/set_ftrace_filter"
        ),
        ""
    );
    assert_eq!(run(&mut k, "cat /tracing/options/graph-time"), "1\n");
    // graph-time on: pf_outer's time holds its callees' (4 units against 3).
    let ((_, outer_on), (_, inner_on)) = profile_nest(&mut k);
    assert!(outer_on >= inner_on, "outer {outer_on} inner {inner_on}");
    let r = outer_on / inner_on;
    assert!((1.2..1.5).contains(&r), "outer {outer_on} inner {inner_on}");

    // graph-time off: pf_outer keeps its own unit only.
    assert_eq!(run(&mut k, "echo 0 > /tracing/options/graph-time"), "");
    let ((_, outer_off), (_, inner_off)) = profile_nest(&mut k);
    assert!(outer_off < inner_off, "outer {outer_off} inner {inner_off}");
    // 1 unit against 4 with its callees, and a third of the callees' 3.
    let ratio = outer_off / outer_on;
    assert!(
        (0.2..0.3).contains(&ratio),
        "outer alone {outer_off} against {outer_on} with its callees"
    );
    let own = outer_off / inner_off;
    assert!(
        (0.28..0.4).contains(&own),
        "outer {outer_off} inner {inner_off}"
    );
    // Whole or not, pf_inner (a leaf) takes the same time.
    assert!(
        (inner_off / inner_on - 1.0).abs() < 0.05,
        "{inner_off} {inner_on}"
    );
    assert_eq!(run(&mut k, "echo 1 > /tracing/options/graph-time"), "");

    // One user of the function-graph core at a time, as Linux 6.1.
    assert_eq!(
        run(&mut k, "echo 1 > /tracing/function_profile_enabled"),
        ""
    );
    assert_eq!(
        run(&mut k, "echo function_graph > /tracing/current_tracer"),
        EBUSY
    );
    assert_eq!(run(&mut k, "cat /tracing/current_tracer"), "nop\n");
    assert_eq!(
        run(&mut k, "echo 0 > /tracing/function_profile_enabled"),
        ""
    );
    assert_eq!(
        run(&mut k, "echo function_graph > /tracing/current_tracer"),
        ""
    );
    assert_eq!(
        run(&mut k, "echo 1 > /tracing/function_profile_enabled"),
        EBUSY
    );
    assert_eq!(run(&mut k, "cat /tracing/function_profile_enabled"), "0\n");
    // Free again: one call, whose s^2 is 0.
    assert_eq!(run(&mut k, "echo nop > /tracing/current_tracer"), "");
    assert_eq!(
        run(&mut k, "echo 1 > /tracing/function_profile_enabled"),
        ""
    );
    assert!(run(&mut k, "profnest 1").starts_with("profnest: 1 iterations"));
    let (hits, time, _, rs) = nest_rows(&mut k, OUTER);
    assert_eq!((hits, rs.len()), (1, 1), "{rs:?}");
    assert_eq!((rs[0].avg, rs[0].s2), (time, 0.0), "{rs:?}");
    assert_eq!(
        run(&mut k, "echo 0 > /tracing/function_profile_enabled"),
        ""
    );
}
