//! QEMU tests of the function_graph tracer: the exact nesting of a known
//! call tree (durations masked), the graph filters and options, return
//! values with tracing on and off, a stress run over every traced function
//! on 4 CPUs with a per-task nesting check, and a panic backtrace through
//! hijacked return addresses. One boot per instrumentation mode, and a
//! short one for set_graph_function set before the tracer starts.

use std::collections::HashMap;
use std::time::Duration;

use tests::Kernel;

const W: &str = "kernel::shell::work::";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

/// The text after the `|  ` separator of each line of one `calltree`
/// iteration (see kernel/src/shell/work.rs), and whether the line carries a
/// duration (leaves and closing braces do, entries do not).
fn calltree_golden() -> Vec<(bool, String)> {
    let lines: [(bool, usize, &str); 15] = [
        (false, 0, "calltree_root() {"),
        (true, 1, "calltree_leaf();"),
        (false, 1, "calltree_pair() {"),
        (true, 2, "calltree_leaf();"),
        (true, 2, "calltree_leaf();"),
        (true, 1, "}"),
        (false, 1, "calltree_chain() {"),
        (false, 2, "calltree_chain() {"),
        (false, 3, "calltree_chain() {"),
        (true, 4, "calltree_leaf();"),
        (true, 3, "}"),
        (true, 2, "}"),
        (true, 1, "}"),
        (true, 1, "calltree_wide();"),
        (true, 0, "}"),
    ];
    lines
        .iter()
        .map(|&(d, depth, t)| (d, golden_text(depth, t)))
        .collect()
}

fn golden_text(depth: usize, t: &str) -> String {
    let name = if t.starts_with('}') {
        t.to_string()
    } else {
        format!("{W}{t}")
    };
    format!("{}{}", "  ".repeat(depth), name)
}

/// Linux's duration mark for `us` microseconds (strictly greater than).
fn mark_for(ns: f64) -> char {
    let us = ns / 1000.0;
    if us > 1_000_000.0 {
        '$'
    } else if us > 100_000.0 {
        '@'
    } else if us > 10_000.0 {
        '*'
    } else if us > 1000.0 {
        '#'
    } else if us > 100.0 {
        '!'
    } else if us > 10.0 {
        '+'
    } else {
        ' '
    }
}

/// Checks a 14-character duration field such as `"+ 14.237 us   "`.
fn check_duration(field: &str, overhead: bool) {
    assert_eq!(field.len(), 14, "duration field {field:?}");
    let mark = field.chars().next().unwrap();
    assert_eq!(&field[1..2], " ", "{field:?}");
    let body = field[2..].trim_end();
    let num = body
        .strip_suffix(" us")
        .unwrap_or_else(|| panic!("no ' us' in {field:?}"));
    let digits = num.replace('.', "");
    assert!(
        digits.chars().all(|c| c.is_ascii_digit()) && digits.len() <= 7,
        "{field:?}"
    );
    let us: f64 = num.parse().unwrap();
    let expected = if overhead { mark_for(us * 1000.0) } else { ' ' };
    // The printed value is truncated, so a value just above a threshold
    // may print as the threshold itself.
    if mark != expected {
        assert_eq!(mark_for(us * 1000.0 + 1.0), mark, "{field:?}");
    }
}

/// Splits a default-format line ` C) <duration:14>|  text` into
/// (cpu, duration field, text).
fn split_default(line: &str) -> (String, String, String) {
    let (cpu, rest) = line
        .split_once(") ")
        .unwrap_or_else(|| panic!("no CPU column in {line:?}"));
    assert!(
        rest.len() >= 17 && &rest[14..17] == "|  ",
        "bad line {line:?}"
    );
    (
        cpu.trim().to_string(),
        rest[..14].to_string(),
        rest[17..].to_string(),
    )
}

/// The event lines of a `trace` read (after the header) or a `trace_pipe` read.
fn body(out: &str) -> Vec<String> {
    clean(out)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Checks `iterations` copies of the calltree in default format.
fn check_calltree(out: &str, iterations: usize) {
    let lines = body(out);
    let golden = calltree_golden();
    assert_eq!(lines.len(), golden.len() * iterations, "{out}");
    let mut cpus = Vec::new();
    for (line, (has_dur, text)) in lines.iter().zip(golden.iter().cycle()) {
        let (cpu, dur, t) = split_default(line);
        assert_eq!(&t, text, "{out}");
        if *has_dur {
            check_duration(&dur, true);
        } else {
            assert_eq!(dur, " ".repeat(14), "{line:?}");
        }
        cpus.push(cpu);
    }
    assert!(
        cpus.iter().all(|c| c == &cpus[0]),
        "the shell moved CPUs mid-tree:\n{out}"
    );
}

const HEADER: &str = "\
# tracer: function_graph
#
# CPU  DURATION                  FUNCTION CALLS
# |     |   |                     |   |   |   |
";

fn result_of(out: &str) -> String {
    clean(out).trim().to_string()
}

/// Parsed line of the `funcgraph-abstime` + `funcgraph-proc` +
/// `funcgraph-tail` format: `TIME |  C)  comm-pid   | DURATION |  text`.
struct ProcLine {
    ts_us: u64,
    cpu: u32,
    pid: String,
    depth: usize,
    kind: Kind,
}

#[derive(Debug, PartialEq)]
enum Kind {
    Enter(String),
    Leaf(String),
    Return(String),
}

fn parse_proc_line(line: &str) -> Option<ProcLine> {
    let mut parts = line.splitn(4, '|');
    let ts = parts.next()?.trim();
    let (secs, usecs) = ts.split_once('.')?;
    let ts_us = secs.parse::<u64>().ok()? * 1_000_000 + usecs.parse::<u64>().ok()?;
    let cpu_proc = parts.next()?;
    let (cpu, proc_) = cpu_proc.split_once(')')?;
    let cpu = cpu.trim().parse().ok()?;
    let pid = proc_.trim().rsplit_once('-')?.1.to_string();
    // The idle tasks all have pid 0, one per CPU (Linux's swapper/N).
    let pid = if pid == "0" { format!("0/{cpu}") } else { pid };
    let _dur = parts.next()?;
    let text = parts.next()?.strip_prefix("  ")?;
    let indent = text.len() - text.trim_start().len();
    let t = text.trim_start();
    let kind = if let Some(n) = t.strip_suffix("() {") {
        Kind::Enter(n.to_string())
    } else if let Some(n) = t.strip_suffix("();") {
        Kind::Leaf(n.to_string())
    } else if let Some(n) = t.strip_prefix("} /* ").and_then(|r| r.strip_suffix(" */")) {
        Kind::Return(n.to_string())
    } else if t == "}" {
        Kind::Return(String::new())
    } else {
        panic!("unexpected graph line {line:?}");
    };
    Some(ProcLine {
        ts_us,
        cpu,
        pid,
        depth: indent / 2,
        kind,
    })
}

/// What [`check_nesting`] saw.
#[derive(Debug)]
struct Nesting {
    /// Lines checked (inside the window where every CPU is complete).
    checked: usize,
    /// Entry and leaf lines: function calls seen.
    calls: usize,
    tasks: usize,
    /// Deepest open-call stack of one task.
    max_nest: usize,
    /// Tasks seen on more than one CPU.
    migrated: usize,
    /// Times a CPU went from a task with open calls to another task.
    preempted: usize,
}

/// The per-task nesting check of the stress test: each task's events must
/// nest exactly: an entry one level below the open call, a return closing
/// the open call (same function, same depth). Returns of calls opened
/// before the trace starts (empty stack) are allowed. With `window`, only
/// the time where every CPU's buffer is complete is checked (each CPU keeps
/// a contiguous window of its events; from the latest window start on, all
/// are there).
fn check_nesting(text: &str, window: bool) -> Nesting {
    let lines: Vec<ProcLine> = clean(text).lines().filter_map(parse_proc_line).collect();
    assert!(lines.len() > 100, "too few graph lines:\n{text}");
    let mut first: HashMap<u32, u64> = HashMap::new();
    for l in &lines {
        first.entry(l.cpu).or_insert(l.ts_us);
    }
    let t0 = if window {
        *first.values().max().unwrap()
    } else {
        0
    };
    let mut stacks: HashMap<String, Vec<(String, usize)>> = HashMap::new();
    let mut cpus_of: HashMap<String, Vec<u32>> = HashMap::new();
    let mut last_pid: HashMap<u32, String> = HashMap::new();
    let mut n = Nesting {
        checked: 0,
        calls: 0,
        tasks: 0,
        max_nest: 0,
        migrated: 0,
        preempted: 0,
    };
    for l in lines.iter().filter(|l| l.ts_us >= t0) {
        if let Some(prev) = last_pid.insert(l.cpu, l.pid.clone()) {
            if prev != l.pid && stacks.get(&prev).is_some_and(|s| !s.is_empty()) {
                n.preempted += 1;
            }
        }
        let cpus = cpus_of.entry(l.pid.clone()).or_default();
        if !cpus.contains(&l.cpu) {
            cpus.push(l.cpu);
        }
        let stack = stacks.entry(l.pid.clone()).or_default();
        match &l.kind {
            Kind::Enter(name) | Kind::Leaf(name) => {
                n.calls += 1;
                if let Some((_, d)) = stack.last() {
                    assert_eq!(
                        l.depth,
                        d + 1,
                        "pid {} enters {name} at depth {} under {:?}",
                        l.pid,
                        l.depth,
                        stack.last()
                    );
                }
                if matches!(l.kind, Kind::Enter(_)) {
                    stack.push((name.clone(), l.depth));
                    n.max_nest = n.max_nest.max(stack.len());
                }
            }
            Kind::Return(name) => {
                if let Some(top) = stack.pop() {
                    assert_eq!(
                        top.1, l.depth,
                        "pid {}: return of {name} at the wrong depth, open: {top:?}",
                        l.pid
                    );
                    if !name.is_empty() {
                        assert_eq!(&top.0, name, "pid {}: unbalanced return", l.pid);
                    }
                }
            }
        }
        n.checked += 1;
    }
    n.tasks = stacks.len();
    n.migrated = cpus_of.values().filter(|c| c.len() > 1).count();
    n
}

/// The panic report of `crash` with graph tracing on: every
/// `return_to_handler` hint is followed by the real caller.
fn check_backtrace(k: &mut Kernel) {
    k.send(b"crash\n");
    let out = clean(&k.expect("end Kernel panic", Duration::from_secs(120)));
    let trace: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("Call Trace:"))
        .collect();
    assert!(
        trace.iter().any(|l| l.contains("? return_to_handler+0x0/")),
        "{out}"
    );
    for (i, l) in trace.iter().enumerate() {
        if l.contains("return_to_handler") {
            assert!(l.contains(" ? "), "{out}");
            assert!(!trace[i + 1].contains("return_to_handler"), "{out}");
        }
    }
    // The real callers are there, in order.
    let run_command = trace
        .iter()
        .position(|l| l.contains("kernel::shell::commands::run_command+"));
    let shell_run = trace.iter().position(|l| l.contains("kernel::shell::run+"));
    assert!(
        matches!((run_command, shell_run), (Some(a), Some(b)) if a < b),
        "{out}"
    );
}

/// Golden tree, return values, trace_pipe with nesting kept across reads.
fn golden_and_results(k: &mut Kernel) -> (String, String) {
    let tree = result_of(&k.run("calltree 1"));
    let compute = result_of(&k.run("work compute 10"));
    assert!(compute.ends_with("result 162379"), "{compute}");
    assert_eq!(k.run("cd /tracing"), "");
    assert_eq!(k.run("echo '*calltree_*' > set_ftrace_filter"), "");
    assert_eq!(k.run("echo function_graph > current_tracer"), "");
    assert_eq!(result_of(&k.run("calltree 1")), tree);
    assert_eq!(k.run("echo 0 > tracing_on"), "");
    let out = clean(&k.run("cat trace"));
    assert!(out.starts_with(HEADER), "{out}");
    check_calltree(&out, 1);
    (tree, compute)
}

/// Every function traced on 4 CPUs: the workloads' results do not change
/// and nothing faults; then a nesting check of the calltree functions run
/// by more threads than CPUs (preemption in the middle of the tree, and
/// migration when a CPU runs out of work), with interrupts and everything
/// else they call traced in between.
fn stress(k: &mut Kernel, compute: &str, seconds: u32) {
    let long = Duration::from_secs(600);
    let expected = result_of(&k.run_with_timeout("calltree 40", long));
    let expected = expected
        .rsplit_once(" result ")
        .expect("calltree result")
        .1
        .to_string();
    assert_eq!(k.run("echo > set_ftrace_filter"), "");
    for o in ["funcgraph-proc", "funcgraph-abstime", "funcgraph-tail"] {
        assert_eq!(k.run(&format!("echo 1 > options/{o}")), "");
    }
    assert_eq!(k.run("echo 1 > tracing_on"), "");
    assert_eq!(
        result_of(&k.run_with_timeout("work compute 10", long)),
        compute
    );
    let all = clean(&k.run_with_timeout(&format!("work all {seconds}"), long));
    assert!(
        all.contains(" 0 errors") && all.contains("on 4 cpus"),
        "{all}"
    );

    assert_eq!(k.run("echo 0 > tracing_on"), "");
    let text = k.run_with_timeout("cat trace | tail -n 3000", long);
    let n = check_nesting(&text, true);
    assert!(n.checked > 100 && n.max_nest >= 3, "{n:?}");

    // Interrupts: the irq-entry function is framed by Linux's arrows.
    for o in ["funcgraph-proc", "funcgraph-abstime", "funcgraph-tail"] {
        assert_eq!(k.run(&format!("echo 0 > options/{o}")), "");
    }
    let irq_run = |k: &mut Kernel| {
        assert_eq!(k.run("echo > trace"), "");
        assert_eq!(k.run("echo 1 > tracing_on"), "");
        assert_eq!(k.run("sleep 0.2"), "");
        assert_eq!(k.run("echo 0 > tracing_on"), "");
        body(&k.run_with_timeout("cat trace", long))
    };
    let lines = irq_run(k);
    let handler = "kernel::arch::x86_64::irq::handle_irq()";
    let mut arrows = 0;
    for (i, l) in lines.iter().enumerate() {
        if l.contains("==>") {
            let cpu = l.split_once(')').unwrap().0;
            assert_eq!(l, &format!("{cpu})   ==========> |"));
            assert!(
                lines[i + 1].starts_with(&format!("{cpu})")) && lines[i + 1].contains(handler),
                "{l}\n{}",
                lines[i + 1]
            );
            arrows += 1;
        }
        if l.contains("<==") && i > 0 {
            let cpu = l.split_once(')').unwrap().0;
            assert_eq!(l, &format!("{cpu})   <========== |"));
            let prev = &lines[i - 1];
            assert!(
                prev.contains(&format!("{handler};")) || prev.trim_end().ends_with('}'),
                "{prev}\n{l}"
            );
        }
    }
    assert!(
        arrows > 0,
        "no interrupt seen in 0.2 s:\n{}",
        lines.join("\n")
    );
    // Task switches: Linux's banner, centred comm-pid columns, blank line.
    let dashes = format!(" {}", "-".repeat(42));
    let mut banners = 0;
    for (i, l) in lines.iter().enumerate() {
        if *l == dashes && i + 3 < lines.len() && lines[i + 2] == dashes {
            let b = &lines[i + 1];
            let (cpu, rest) = b.split_once(") ").expect("banner CPU column");
            assert!(
                cpu.trim().parse::<u32>().is_ok() && cpu.starts_with(' '),
                "{b:?}"
            );
            let (prev, next) = rest.split_once(" => ").expect("banner arrow");
            assert!(prev.len() == 14 && next.len() == 14, "{b:?}");
            assert!(
                prev.trim().contains('-') && next.trim().contains('-'),
                "{b:?}"
            );
            assert_eq!(lines[i + 3], "", "{b:?}");
            banners += 1;
        }
    }
    assert!(banners > 0, "no task switch seen:\n{}", lines.join("\n"));
    assert_eq!(k.run("echo 0 > options/funcgraph-irqs"), "");
    let lines = irq_run(k);
    assert!(
        !lines.is_empty()
            && lines
                .iter()
                .all(|l| !l.contains("==") && !l.contains("handle_irq")),
        "{lines:?}"
    );
    assert_eq!(k.run("echo 1 > options/funcgraph-irqs"), "");
    for o in ["funcgraph-proc", "funcgraph-abstime", "funcgraph-tail"] {
        assert_eq!(k.run(&format!("echo 1 > options/{o}")), "");
    }

    // 13 threads on 4 CPUs: three per CPU and one more, so they are
    // preempted in the middle of the tree, and the CPUs that finish first
    // take waiting threads from the busy one.
    assert_eq!(k.run("echo > trace"), "");
    assert_eq!(k.run("echo 1 > tracing_on"), "");
    let tasks = result_of(&k.run_with_timeout("calltree 40 13", long));
    assert_eq!(
        tasks,
        format!("calltree: 13 tasks x 40 iterations, result {expected}")
    );
    assert_eq!(k.run("echo 0 > tracing_on"), "");
    let text = k.run_with_timeout("cat trace | grep calltree_", long);
    let n = check_nesting(&text, false);
    eprintln!("calltree threads: {n:?}");
    // Every call is there (nothing lost), every task nests exactly.
    assert_eq!(n.calls, 13 * 40 * 10, "{n:?}");
    assert!(n.tasks == 13 && n.max_nest >= 4, "{n:?}");
    assert!(
        n.preempted > 0 && n.migrated > 0,
        "no preemption or migration seen: {n:?}"
    );
}

#[test]
fn function_graph_mcount() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    let (tree, compute) = golden_and_results(&mut k);

    // trace_pipe: the same text without the header, nesting and leaves
    // kept from one event to the next.
    assert_eq!(k.run("echo > trace"), "");
    assert_eq!(k.run("echo 1 > tracing_on"), "");
    assert_eq!(
        result_of(&k.run("calltree 2")),
        result_of(&k.run("calltree 2"))
    );
    assert_eq!(k.run("echo 0 > tracing_on"), "");
    check_calltree(&k.run("cat trace_pipe"), 4);

    // Options: columns and their headers.
    let tree_run = |k: &mut Kernel| {
        assert_eq!(k.run("echo > trace"), "");
        assert_eq!(k.run("echo 1 > tracing_on"), "");
        assert_eq!(result_of(&k.run("calltree 1")), tree);
        assert_eq!(k.run("echo 0 > tracing_on"), "");
        clean(&k.run("cat trace"))
    };
    assert_eq!(k.run("echo 0 > options/funcgraph-cpu"), "");
    assert_eq!(k.run("echo 0 > options/funcgraph-duration"), "");
    let out = tree_run(&mut k);
    assert!(
        out.starts_with("# tracer: function_graph\n#\n#               FUNCTION CALLS\n#               |   |   |   |\n"),
        "{out}"
    );
    let golden: Vec<String> = calltree_golden().into_iter().map(|(_, t)| t).collect();
    assert_eq!(body(&out), golden);
    assert_eq!(k.run("echo 1 > options/funcgraph-cpu"), "");
    assert_eq!(k.run("echo 1 > options/funcgraph-duration"), "");
    assert_eq!(k.run("echo 0 > options/funcgraph-overhead"), "");
    assert_eq!(k.run("echo 1 > options/funcgraph-tail"), "");
    let out = tree_run(&mut k);
    let lines = body(&out);
    assert_eq!(lines.len(), 15, "{out}");
    for (line, (has_dur, text)) in lines.iter().zip(calltree_golden()) {
        let (_, dur, t) = split_default(line);
        if has_dur {
            check_duration(&dur, false);
        }
        if text.trim() == "}" {
            assert!(
                t.starts_with(&format!("{}}} /* {W}calltree_", text.trim_end_matches('}'))),
                "{line:?}"
            );
        } else {
            assert_eq!(t, text);
        }
    }
    assert_eq!(k.run("echo 1 > options/funcgraph-overhead"), "");
    assert_eq!(k.run("echo 0 > options/funcgraph-tail"), "");
    assert_eq!(k.run("echo 1 > options/funcgraph-proc"), "");
    assert_eq!(k.run("echo 1 > options/funcgraph-abstime"), "");
    let out = tree_run(&mut k);
    assert!(
        out.starts_with(
            "# tracer: function_graph\n#\n#     TIME        CPU  TASK/PID         DURATION                  FUNCTION CALLS\n\
             #      |          |     |    |           |   |                     |   |   |   |\n"
        ),
        "{out}"
    );
    for line in body(&out) {
        let p = parse_proc_line(&line).unwrap_or_else(|| panic!("{line:?}"));
        assert_eq!(p.pid, "1", "the shell is pid 1: {line:?}");
        assert!(line.contains("      sh-1      | "), "{line:?}");
    }
    assert_eq!(k.run("echo 0 > options/funcgraph-proc"), "");
    assert_eq!(k.run("echo 0 > options/funcgraph-abstime"), "");

    // The graph filters.
    let filtered = |k: &mut Kernel, setup: &str, undo: &str| {
        assert_eq!(k.run(setup), "");
        let out = tree_run(k);
        assert_eq!(k.run(undo), "");
        body(&out)
            .iter()
            .map(|l| split_default(l).2)
            .collect::<Vec<_>>()
    };
    let g = |d: usize, t: &str| golden_text(d, t);
    assert_eq!(
        filtered(
            &mut k,
            "echo '*calltree_pair' > set_graph_function",
            "echo > set_graph_function"
        ),
        [
            g(0, "calltree_pair() {"),
            g(1, "calltree_leaf();"),
            g(1, "calltree_leaf();"),
            g(0, "}")
        ]
    );
    assert_eq!(
        clean(&k.run("cat set_graph_function")),
        "#### all functions enabled ####\n"
    );
    assert_eq!(
        filtered(
            &mut k,
            "echo '*calltree_chain' > set_graph_notrace",
            "echo > set_graph_notrace"
        ),
        [
            g(0, "calltree_root() {"),
            g(1, "calltree_leaf();"),
            g(1, "calltree_pair() {"),
            g(2, "calltree_leaf();"),
            g(2, "calltree_leaf();"),
            g(1, "}"),
            g(1, "calltree_wide();"),
            g(0, "}")
        ]
    );
    assert_eq!(
        filtered(
            &mut k,
            "echo 1 > max_graph_depth",
            "echo 0 > max_graph_depth"
        ),
        [g(0, "calltree_root();")]
    );
    assert_eq!(
        filtered(
            &mut k,
            "echo 2 > max_graph_depth",
            "echo 0 > max_graph_depth"
        ),
        [
            g(0, "calltree_root() {"),
            g(1, "calltree_leaf();"),
            g(1, "calltree_pair();"),
            g(1, "calltree_chain();"),
            g(1, "calltree_wide();"),
            g(0, "}")
        ]
    );
    assert_eq!(clean(&k.run("cat max_graph_depth")), "0\n");
    // tracing_thresh (µs): only returns, of calls at least that long.
    assert_eq!(k.run("echo 5000000 > tracing_thresh"), "");
    assert_eq!(clean(&k.run("cat tracing_thresh")), "5000000\n");
    assert_eq!(body(&tree_run(&mut k)), Vec::<String>::new());
    assert_eq!(k.run("echo 1 > tracing_thresh"), "");
    let out = tree_run(&mut k);
    let lines = body(&out);
    assert!(!lines.is_empty(), "{out}");
    assert!(
        lines
            .iter()
            .all(|l| split_default(l).2.trim_start().starts_with("} /* ")),
        "{out}"
    );
    assert!(
        lines
            .last()
            .unwrap()
            .ends_with(&format!("}} /* {W}calltree_root */")),
        "{out}"
    );
    assert_eq!(k.run("echo 0 > tracing_thresh"), "");

    stress(&mut k, &compute, 3);
    assert_eq!(k.run("echo 1 > tracing_on"), "");
    check_backtrace(&mut k);
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 101);
}

#[test]
fn function_graph_fentry() {
    let mut k = Kernel::boot_mode("fentry", &["--smp", "4"]);
    let (_tree, compute) = golden_and_results(&mut k);
    stress(&mut k, &compute, 2);
    assert_eq!(k.run("echo 1 > tracing_on"), "");
    check_backtrace(&mut k);
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 101);
}

/// set_graph_function written first on a fresh boot, every function
/// traced (the allocator's too), set_graph_notrace never touched: the
/// tracer starts and records the selected function's call tree, as
/// Linux's does. The entry callback used to make the empty
/// set_graph_notrace set on its first call, allocating in traced code; the
/// allocator's traced functions entered the callback again, which then
/// waited forever for the set its own CPU was making (the kernel hung at
/// `echo function_graph > current_tracer`).
#[test]
fn set_graph_function_before_the_tracer() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    assert_eq!(k.run("cd /tracing"), "");
    assert_eq!(k.run("echo '*calltree_pair' > set_graph_function"), "");
    assert_eq!(k.run("echo function_graph > current_tracer"), "");
    // Interrupts arriving in the middle of the tree are not part of it.
    assert_eq!(k.run("echo 0 > options/funcgraph-irqs"), "");
    assert_eq!(k.run("echo > trace"), "");
    assert!(k.run("calltree 1").contains("calltree: 1 iterations"));
    assert_eq!(k.run("echo 0 > tracing_on"), "");
    let out = clean(&k.run("cat trace"));
    assert!(out.starts_with(HEADER), "{out}");
    let g = |d: usize, t: &str| golden_text(d, t);
    assert_eq!(
        body(&out)
            .iter()
            .map(|l| split_default(l).2)
            .collect::<Vec<_>>(),
        [
            g(0, "calltree_pair() {"),
            g(1, "calltree_leaf();"),
            g(1, "calltree_leaf();"),
            g(0, "}")
        ],
        "{out}"
    );
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}
