//! trace-cmd compatibility under QEMU: a trace exported over COM2
//! (`trace-export`), turned into trace.dat by `ktrace`, must read in
//! `trace-cmd report` exactly as the kernel's own `cat /tracing/trace`
//! shows it: the same events, tasks, CPUs, time stamps and symbol names,
//! with no `[FAILED TO PARSE]`; `--cpu` and `-F` filters must work.
//! Needs trace-cmd (tests/run.sh and CI install it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tests::{ktrace_bin, root, Kernel};

fn trace_cmd(args: &[&str]) -> String {
    let out = Command::new("trace-cmd").args(args).output().expect(
        "trace-cmd is not installed (sudo apt-get install -y trace-cmd; tests/run.sh installs it)",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "trace-cmd {args:?} failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracecmd-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// One function event: (comm-pid, cpu, time, function, parent).
type Ev = (String, usize, String, String, String);

/// The context of a `trace` or `trace-cmd report` line: (task, cpu, the
/// rest after `] `).
fn split_context(line: &str) -> Option<(String, usize, &str)> {
    let open = line.find("] ")?;
    let lb = line[..open].rfind(" [")?;
    let task = line[..lb].trim().to_string();
    let cpu = line[lb + 2..open].parse().ok()?;
    Some((task, cpu, &line[open + 2..]))
}

/// The time stamp and body of what follows the context (`flags ts: body`).
fn split_time(rest: &str) -> Option<(String, &str)> {
    let colon = rest.find(": ")?;
    let ts = rest[..colon].split_whitespace().last()?.to_string();
    Some((ts, &rest[colon + 2..]))
}

/// Parses a line of the kernel's `trace`:
/// `  work-compute/3-5       [003] .n...     0.137877: f <-p`.
fn parse_kernel_line(line: &str) -> Option<Ev> {
    let (task, cpu, rest) = split_context(line)?;
    let (ts, body) = split_time(rest)?;
    let (func, parent) = body.split_once(" <-")?;
    Some((task, cpu, ts, func.to_string(), parent.to_string()))
}

/// Parses a `trace-cmd report -O parent=1` function line:
/// `  work-compute/3-5     [003]     0.137877: function:    f <-- p`.
fn parse_report_line(line: &str) -> Option<Ev> {
    let (task, cpu, rest) = split_context(line)?;
    let (ts, body) = rest.split_once(": function: ")?;
    let (func, parent) = body.trim_start().split_once(" <-- ")?;
    Some((
        task,
        cpu,
        ts.trim().to_string(),
        func.to_string(),
        parent.to_string(),
    ))
}

fn per_cpu(evs: &[Ev]) -> BTreeMap<usize, Vec<Ev>> {
    let mut m: BTreeMap<usize, Vec<Ev>> = BTreeMap::new();
    for e in evs {
        m.entry(e.1).or_default().push(e.clone());
    }
    m
}

/// Boots with COM2 on a file, traces `work compute` with the function
/// tracer, reads the kernel's `trace`, exports, and converts the capture.
fn record_in_kernel(com2: &Path, dat: &Path) -> String {
    let com2_arg = format!("file:{}", com2.display());
    let mut k = Kernel::boot(&["--smp", "4", "--", "-serial", &com2_arg]);
    let tracers = k.run("cat /tracing/available_tracers");
    assert!(
        tracers.contains("function"),
        "no function tracer: {tracers}"
    );
    k.run("echo 'kernel::shell::work::*' > /tracing/set_ftrace_filter");
    k.run("echo function > /tracing/current_tracer");
    let out = k.run("work compute 2");
    assert!(out.contains("result"), "{out}");
    let (trace, summary) = export_and_extract(k, com2, dat);
    assert!(
        summary.contains("trace-export:") && summary.contains("cpu3:"),
        "{summary}"
    );
    trace
}

/// Stops recording, reads the kernel's `trace`, sends the buffers to the
/// host (`trace-export`, on the COM2 file `com2`), powers off and converts
/// the capture into `dat` with `ktrace extract`. Returns the `trace` text and
/// trace-export's summary.
fn export_and_extract(mut k: Kernel, com2: &Path, dat: &Path) -> (String, String) {
    k.run("echo 0 > /tracing/tracing_on");
    let trace = k.run_with_timeout("cat /tracing/trace", Duration::from_secs(300));
    let summary = k.run_with_timeout("trace-export", Duration::from_secs(300));
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
    let r = Command::new(ktrace_bin())
        .args(["extract", "-i"])
        .arg(com2)
        .arg("-o")
        .arg(dat)
        .output()
        .unwrap();
    assert!(
        r.status.success(),
        "ktrace extract: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    (trace, summary)
}

#[test]
fn trace_cmd_report_matches_the_kernel_trace() {
    let com2 = scratch("function.com2");
    let dat = scratch("function.dat");
    let trace = record_in_kernel(&com2, &dat);
    let d = dat.to_str().unwrap();

    let kernel: Vec<Ev> = trace
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(parse_kernel_line)
        .collect();
    assert!(
        kernel.len() > 100,
        "too few events in the kernel trace:\n{trace}"
    );
    assert!(!trace.contains("LOST"), "the test expects no lost events");

    let report = trace_cmd(&["report", "-O", "parent=1", d]);
    assert!(!report.contains("FAILED TO PARSE"), "{report}");
    assert!(
        report.starts_with("cpus=4\n"),
        "{}",
        &report[..report.len().min(200)]
    );
    let ours: Vec<Ev> = report.lines().filter_map(parse_report_line).collect();
    assert_eq!(ours.len(), kernel.len(), "event counts differ");
    // Same events per CPU, in the same order, with the same task, time,
    // function and parent names.
    let (a, b) = (per_cpu(&kernel), per_cpu(&ours));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (cpu, evs) in &a {
        for (i, (x, y)) in evs.iter().zip(&b[cpu]).enumerate() {
            assert_eq!(x, y, "CPU {cpu} event {i} differs");
        }
    }
    assert!(kernel
        .iter()
        .any(|e| e.3.starts_with("kernel::shell::work::compute")));
    assert!(kernel.iter().any(|e| e.0.starts_with("work-compute/")));

    // --cpu N keeps exactly that CPU's events.
    for cpu in 0..4 {
        let only = trace_cmd(&["report", "--cpu", &cpu.to_string(), "-O", "parent=1", d]);
        let evs: Vec<Ev> = only.lines().filter_map(parse_report_line).collect();
        assert_eq!(evs, a.get(&cpu).cloned().unwrap_or_default(), "--cpu {cpu}");
    }
    // -F with a field filter: one task's events (the filter goes before the file).
    let (task, ..) = kernel
        .iter()
        .find(|e| e.0.starts_with("work-compute/"))
        .unwrap()
        .clone();
    let pid = task.rsplit('-').next().unwrap();
    let filter = format!("function: common_pid == {pid}");
    let only = trace_cmd(&["report", "-F", &filter, "-O", "parent=1", d]);
    let evs: Vec<Ev> = only.lines().filter_map(parse_report_line).collect();
    let want: Vec<&Ev> = kernel.iter().filter(|e| e.0 == task).collect();
    assert_eq!(evs.len(), want.len(), "-F {filter}");
    assert!(evs.iter().all(|e| e.0 == task));

    // `ktrace report` prints what trace-cmd prints.
    let ours = Command::new(ktrace_bin())
        .args(["report", "-O", "parent=1", "-i", d])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ours.stdout), report);
    let dump = Command::new("trace-cmd")
        .args(["dump", "--summary", "-i", d])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&dump.stdout).contains("4 [CPUs with tracing data]"));
}

/// `ktrace record` end to end: boots, sets the tracer and a filter, runs
/// the command, exports and writes trace.dat.
#[test]
fn ktrace_record_function() {
    let dat = scratch("record.dat");
    let elf = tests::kernel_elf("mcount");
    let out = Command::new(ktrace_bin())
        .env("KTRACE_KERNEL", &elf)
        .env("KTRACE_ROOT", root())
        .args([
            "record",
            "-p",
            "function",
            "-l",
            "kernel::shell::work::compute_leaf",
            "-o",
        ])
        .arg(&dat)
        .args(["--", "work compute 1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ktrace record failed: {stderr}");
    assert!(stderr.contains("ktrace: wrote"), "{stderr}");
    let report = trace_cmd(&["report", dat.to_str().unwrap()]);
    assert!(report.starts_with("cpus=4\n"));
    let lines: Vec<&str> = report.lines().skip(1).collect();
    assert!(!lines.is_empty(), "no events");
    assert!(
        lines
            .iter()
            .all(|l| l.ends_with("kernel::shell::work::compute_leaf")),
        "{report}"
    );
    let cpus: std::collections::BTreeSet<&str> = lines
        .iter()
        .filter_map(|l| l.split('[').nth(1))
        .map(|s| &s[..3])
        .collect();
    assert!(cpus.len() >= 2, "work compute runs on every CPU: {cpus:?}");
    assert!(lines
        .iter()
        .any(|l| l.trim_start().starts_with("work-compute/")));
}

/// One function_graph event, from either output: a leaf line
/// (`f();`) counts as an entry followed by an exit, so that the kernel's
/// folding (next event on the same CPU, Linux's `get_return_for_leaf`) and
/// trace-cmd's (next event over all CPUs) compare equal.
#[derive(Debug, Clone, PartialEq)]
enum G {
    /// (task, time in µs, depth, function)
    Entry(String, u64, usize, String),
    /// (task, time in µs when printed on a `}` line, depth, duration text)
    Exit(String, Option<u64>, usize, String),
}

/// "2.619331" -> 2619331 (µs).
fn micros(ts: &str) -> Option<u64> {
    let (s, us) = ts.trim().split_once('.')?;
    (us.len() == 6).then_some(())?;
    Some(s.parse::<u64>().ok()? * 1_000_000 + us.parse::<u64>().ok()?)
}

/// "# 3243.735 us" -> "3243.735"; "" -> "".
fn duration_number(d: &str) -> String {
    d.trim()
        .trim_end_matches("us")
        .trim()
        .trim_start_matches(['+', '!', '#', '*', '@', '$'])
        .trim()
        .to_string()
}

/// Expands the body of a graph line (after the duration's `|`) into events.
fn graph_events(task: &str, ts: u64, dur: &str, body: &str, out: &mut Vec<G>) -> Option<()> {
    let text = body.trim_start();
    let spaces = body.len() - text.len();
    let depth = spaces.checked_sub(2)? / 2;
    let text = text.trim_end();
    let t = task.to_string();
    if let Some(f) = text.strip_suffix("();") {
        out.push(G::Entry(t.clone(), ts, depth, f.to_string()));
        out.push(G::Exit(t, None, depth, duration_number(dur)));
    } else if let Some(f) = text.strip_suffix("() {") {
        out.push(G::Entry(t, ts, depth, f.to_string()));
    } else if text.starts_with('}') {
        out.push(G::Exit(t, Some(ts), depth, duration_number(dur)));
    } else {
        return None;
    }
    Some(())
}

/// The kernel's function_graph `trace` with funcgraph-abstime and
/// funcgraph-proc, per CPU:
/// `    2.619331 |   1)   work-co-3    |   0.379 us    |      f();`.
/// Banners and irq arrows are skipped (trace-cmd does not print them).
fn parse_kernel_graph(trace: &str) -> BTreeMap<usize, Vec<G>> {
    let mut m: BTreeMap<usize, Vec<G>> = BTreeMap::new();
    for line in trace.lines().filter(|l| !l.starts_with('#')) {
        let parts: Vec<&str> = line.splitn(4, '|').collect();
        let [ts, cpu_task, dur, body] = parts[..] else {
            continue;
        };
        if dur.contains("==========") || body.contains("==========") {
            continue;
        }
        let (Some(ts), Some((cpu, task))) = (micros(ts), cpu_task.split_once(')')) else {
            continue;
        };
        let Ok(cpu) = cpu.trim().parse() else {
            continue;
        };
        let evs = m.entry(cpu).or_default();
        graph_events(task.trim(), ts, dur, body, evs)
            .unwrap_or_else(|| panic!("unexpected kernel line: {line:?}"));
    }
    m
}

/// `trace-cmd report` of a function_graph run, per CPU:
/// `  work-compute/1-3     [001]     2.619332: funcgraph_entry:   |  f() {`.
/// The task is turned into the kernel's `comm[..7]-pid`.
fn parse_report_graph(report: &str) -> BTreeMap<usize, Vec<G>> {
    let mut m: BTreeMap<usize, Vec<G>> = BTreeMap::new();
    for line in report.lines().skip(1) {
        let (Some(open), Some(lb)) = (line.find("] "), line.find(" [")) else {
            panic!("unexpected report line: {line:?}");
        };
        let task = line[..lb].trim();
        let cpu: usize = line[lb + 2..open].parse().unwrap();
        let (ts, rest) = line[open + 2..].split_once(": ").unwrap();
        let rest = rest
            .strip_prefix("funcgraph_entry:")
            .or_else(|| rest.strip_prefix("funcgraph_exit:"))
            .unwrap_or_else(|| panic!("not a graph event: {line:?}"));
        let (dur, body) = rest.split_once('|').unwrap();
        let (comm, pid) = task.rsplit_once('-').unwrap();
        let short: String = comm.chars().take(7).collect();
        let evs = m.entry(cpu).or_default();
        graph_events(
            &format!("{short}-{pid}"),
            micros(ts).unwrap(),
            dur,
            body,
            evs,
        )
        .unwrap_or_else(|| panic!("unexpected report line: {line:?}"));
    }
    m
}

/// Compares one CPU's events: same tasks, functions, depths and kinds;
/// times equal up to the rounding (the kernel truncates the graph's
/// absolute time to µs, as Linux's `print_graph_abs_time` does, trace-cmd
/// rounds); durations equal up to the decimals Linux drops to keep 7
/// digits (`14985.12` in the kernel is `14985.121` in trace-cmd).
fn same_graph_event(k: &G, t: &G) -> bool {
    let close = |a: u64, b: u64| b == a || b == a + 1;
    match (k, t) {
        (G::Entry(kt, ks, kd, kf), G::Entry(tt, ts, td, tf)) => {
            kt == tt && kd == td && kf == tf && close(*ks, *ts)
        }
        (G::Exit(kt, ks, kd, kdur), G::Exit(tt, ts, td, tdur)) => {
            let times = match (ks, ts) {
                (Some(a), Some(b)) => close(*a, *b),
                _ => true,
            };
            kt == tt
                && kd == td
                && times
                && !kdur.is_empty()
                && tdur.starts_with(kdur.as_str())
                && (kdur == tdur || kdur.len() == 8)
        }
        _ => false,
    }
}

/// function_graph, the kernel's own `trace` against `trace-cmd report` of
/// the exported pages, event for event on each of the 4 CPUs.
#[test]
fn trace_cmd_report_matches_the_kernel_graph_trace() {
    let com2 = scratch("graph-kernel.com2");
    let dat = scratch("graph-kernel.dat");
    let com2_arg = format!("file:{}", com2.display());
    let mut k = Kernel::boot(&["--smp", "4", "--", "-serial", &com2_arg]);
    k.run("echo 'kernel::shell::work::*' > /tracing/set_ftrace_filter");
    k.run("echo function_graph > /tracing/current_tracer");
    // The tracer's options exist once it is the current tracer.
    for opt in ["funcgraph-proc", "funcgraph-abstime"] {
        let out = k.run(&format!("echo {opt} > /tracing/trace_options"));
        assert!(!out.contains("error"), "{opt}: {out}");
    }
    let out = k.run("work compute 1");
    assert!(out.contains("4 cpus"), "{out}");
    let (trace, summary) = export_and_extract(k, &com2, &dat);
    assert!(summary.contains("cpu3:"), "{summary}");
    assert!(
        trace.contains("TIME        CPU  TASK/PID"),
        "abstime/proc columns missing:\n{}",
        &trace[..trace.len().min(500)]
    );

    let d = dat.to_str().unwrap();
    let report = trace_cmd(&["report", d]);
    assert!(!report.contains("FAILED TO PARSE"), "{report}");
    assert!(report.starts_with("cpus=4\n"));
    let kernel = parse_kernel_graph(&trace);
    let ours = parse_report_graph(&report);
    assert_eq!(
        kernel.keys().collect::<Vec<_>>(),
        [0, 1, 2, 3].iter().collect::<Vec<_>>(),
        "work compute runs on every CPU"
    );
    assert_eq!(
        kernel.keys().collect::<Vec<_>>(),
        ours.keys().collect::<Vec<_>>()
    );
    let mut total = 0;
    for (cpu, evs) in &kernel {
        let theirs = &ours[cpu];
        assert_eq!(evs.len(), theirs.len(), "CPU {cpu}: event counts differ");
        for (i, (a, b)) in evs.iter().zip(theirs).enumerate() {
            assert!(
                same_graph_event(a, b),
                "CPU {cpu} event {i} differs:\n kernel:    {a:?}\n trace-cmd: {b:?}"
            );
        }
        total += evs.len();
    }
    assert!(total > 1000, "too few events: {total}");
    let entries = |m: &BTreeMap<usize, Vec<G>>, f: &str| {
        m.values()
            .flatten()
            .filter(|e| matches!(e, G::Entry(_, _, _, n) if n == f))
            .count()
    };
    assert!(entries(&kernel, "kernel::shell::work::compute_leaf") > 100);
    assert!(entries(&kernel, "kernel::shell::work::compute_iteration") >= 4);
    // `ktrace report` prints what trace-cmd prints.
    let ours = Command::new(ktrace_bin())
        .args(["report", "-i", d])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ours.stdout), report);
}

/// One record of `trace-cmd report -R` for function_graph:
/// `  sh-1  [000]  0.243764: funcgraph_entry:  func=f depth=0` (an exit
/// has `funcgraph_exit:` and more fields after the depth).
#[derive(Debug, Clone, PartialEq)]
struct RawGraph {
    task: String,
    cpu: usize,
    entry: bool,
    func: String,
    depth: i64,
}

fn parse_raw_graph(line: &str) -> Option<RawGraph> {
    let (lb, open) = (line.find(" [")?, line.find("] ")?);
    let task = line[..lb].trim().to_string();
    let cpu = line[lb + 2..open].parse().ok()?;
    let rest = &line[open + 2..];
    let entry = if rest.contains(": funcgraph_entry: ") {
        true
    } else if rest.contains(": funcgraph_exit: ") {
        false
    } else {
        return None;
    };
    let fields = rest.split_once(" func=")?.1;
    let (func, fields) = fields.split_once(" depth=")?;
    let depth = fields.split(' ').next()?.parse().ok()?;
    Some(RawGraph {
        task,
        cpu,
        entry,
        func: func.to_string(),
        depth,
    })
}

/// What [`check_graph_depths`] saw.
#[derive(Debug, Default, PartialEq)]
struct DepthCheck {
    /// Exits whose entry is not in the trace (entered before it began).
    exits_without_entry: usize,
    /// Entries whose exit is not in the trace, per task.
    open_at_end: BTreeMap<String, usize>,
    /// Times a task's events were followed, on its CPU, by another
    /// task's while it had a call open (switched out mid-call).
    interleaved: usize,
}

/// Checks function_graph depths as Linux defines them: the depth is the
/// task's, not the CPU's (`current->curr_ret_depth`: an entry records
/// `++curr_ret_depth`, an exit the depth of the frame it pops, then
/// `curr_ret_depth--`). So, task by task in time order, each entry is one
/// deeper than the calls the task has open and each exit closes the
/// task's last open call: same depth, same function. On one CPU the
/// tasks' events interleave wherever a task is switched out mid-call, so
/// a per-CPU stack proves nothing. A trace may begin in the middle of
/// calls (their exits come without entries, each one level shallower)
/// and end in the middle of others; events lost inside a task's stretch
/// are a mismatch.
fn check_graph_depths(events: &[RawGraph]) -> Result<DepthCheck, String> {
    /// A task's open calls (depth, func) and the depth its next entry must
    /// have, once known from its first event.
    type TaskState<'a> = (Vec<(i64, &'a str)>, Option<i64>);
    let mut tasks: BTreeMap<&str, TaskState> = BTreeMap::new();
    let mut last_on_cpu: BTreeMap<usize, &str> = BTreeMap::new();
    let mut out = DepthCheck::default();
    for (i, e) in events.iter().enumerate() {
        if let Some(prev) = last_on_cpu.insert(e.cpu, &e.task) {
            if prev != e.task && tasks.get(prev).is_some_and(|t| !t.0.is_empty()) {
                out.interleaved += 1;
            }
        }
        let (open, next) = tasks.entry(&e.task).or_default();
        let here = format!("event {i}: {e:?}, open calls of the task: {open:?}");
        if e.depth < 0 {
            return Err(format!("negative depth at {here}"));
        }
        if e.entry {
            if next.is_some_and(|n| n != e.depth) {
                return Err(format!("entry depth, expected {next:?}, at {here}"));
            }
            open.push((e.depth, &e.func));
            *next = Some(e.depth + 1);
        } else {
            if next.is_some_and(|n| n != e.depth + 1) {
                let want = next.map(|n| n - 1);
                return Err(format!("exit depth, expected {want:?}, at {here}"));
            }
            match open.pop() {
                Some((d, f)) if d == e.depth && f == e.func => {}
                Some(top) => return Err(format!("exit does not close {top:?}: {here}")),
                None => out.exits_without_entry += 1,
            }
            *next = Some(e.depth);
        }
    }
    for (task, (open, _)) in tasks {
        if !open.is_empty() {
            out.open_at_end.insert(task.to_string(), open.len());
        }
    }
    Ok(out)
}

/// The depth check itself, on made-up events: tasks switched out
/// mid-call and a trace that begins and ends inside calls pass; every
/// kind of mismatch fails.
#[test]
fn graph_depths_are_checked_per_task() {
    let ev = |task: &str, cpu, entry, func: &str, depth| RawGraph {
        task: task.into(),
        cpu,
        entry,
        func: func.into(),
        depth,
    };
    // `a` is switched out in g, `b` runs on the same CPU, `a` goes on on
    // another CPU: fine, though a per-CPU stack would pair a's exit of g
    // (depth 1) with b's entry of h (depth 0).
    let good = [
        ev("a", 0, true, "f", 0),
        ev("a", 0, true, "g", 1),
        ev("b", 0, true, "h", 0),
        ev("a", 1, false, "g", 1),
        ev("b", 0, false, "h", 0),
        ev("a", 1, false, "f", 0),
    ];
    let r = check_graph_depths(&good).unwrap();
    assert_eq!((r.exits_without_entry, r.interleaved), (0, 1));
    assert!(r.open_at_end.is_empty());
    // The trace begins inside two calls and ends inside one.
    let partial = [
        ev("a", 0, false, "g", 1),
        ev("a", 0, true, "k", 1),
        ev("a", 0, false, "k", 1),
        ev("a", 0, false, "f", 0),
        ev("a", 0, true, "f", 0),
    ];
    let r = check_graph_depths(&partial).unwrap();
    assert_eq!(r.exits_without_entry, 2);
    assert_eq!(r.open_at_end, BTreeMap::from([("a".to_string(), 1)]));
    // What must fail: an exit at another depth, an exit of another
    // function, an entry at the wrong depth, a lost exit, a lost entry.
    let mut bad_exit = good.to_vec();
    bad_exit[3].depth = 2;
    let mut wrong_func = good.to_vec();
    wrong_func[3].func = "f".into();
    let mut bad_entry = good.to_vec();
    bad_entry[1].depth = 2;
    let lost_exit = [&good[..3], &good[4..]].concat();
    let lost_entry = [&good[..1], &good[2..]].concat();
    for (what, evs) in [
        ("exit depth", bad_exit),
        ("exit function", wrong_func),
        ("entry depth", bad_entry),
        ("lost exit", lost_exit),
        ("lost entry", lost_entry),
    ] {
        assert!(check_graph_depths(&evs).is_err(), "{what} not caught");
    }
}

/// `ktrace record -p function_graph` end to end on 4 CPUs: every event
/// decodes in trace-cmd, with symbol names, on every CPU, and the raw
/// fields are the ones written: depths nest task by task, as Linux
/// defines them ([`check_graph_depths`]).
#[test]
fn ktrace_record_function_graph() {
    let dat = scratch("graph.dat");
    let out = Command::new(ktrace_bin())
        .env("KTRACE_KERNEL", tests::kernel_elf("mcount"))
        .env("KTRACE_ROOT", root())
        .args([
            "record",
            "-p",
            "function_graph",
            "-l",
            "kernel::shell::work::*",
            "-o",
        ])
        .arg(&dat)
        .args(["--", "work compute 2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ktrace record failed: {stderr}");
    assert!(stderr.contains("4 cpus x 2 iterations"), "{stderr}");
    let d = dat.to_str().unwrap();
    let report = trace_cmd(&["report", d]);
    assert!(!report.contains("FAILED TO PARSE"), "{report}");
    assert!(report.starts_with("cpus=4\n"));
    assert!(report.contains("funcgraph_entry:"), "{report}");
    assert!(report.contains("funcgraph_exit:"), "{report}");
    assert!(report.contains(" us "), "durations: {report}");
    let graph = parse_report_graph(&report);
    assert_eq!(graph.len(), 4, "events on every CPU");
    for (cpu, evs) in &graph {
        // Every function is a symbol (no raw address), every exit has a
        // duration.
        for e in evs {
            match e {
                G::Entry(_, _, _, f) => {
                    assert!(f.starts_with("kernel::shell::work::"), "CPU {cpu}: {f}")
                }
                G::Exit(_, _, _, dur) => assert!(!dur.is_empty(), "CPU {cpu}: {e:?}"),
            }
        }
    }
    // The raw fields: func is a symbol and depth a small number; exits
    // close the entries of their task at the same depth.
    let raw = trace_cmd(&["report", "-R", d]);
    let events: Vec<RawGraph> = raw
        .lines()
        .skip(1)
        .map(|line| parse_raw_graph(line).unwrap_or_else(|| panic!("{line}")))
        .collect();
    for e in &events {
        assert!(e.func.starts_with("kernel::shell::work::"), "{e:?}");
        assert!(e.depth < 64, "{e:?}");
    }
    assert!(events.len() > 1000, "{} events", events.len());
    let checked = check_graph_depths(&events).unwrap_or_else(|e| {
        let keep = std::env::temp_dir().join(format!("graph-depth-{}.dat", std::process::id()));
        let _ = std::fs::copy(&dat, &keep);
        panic!("{e}\n(the trace is kept in {})", keep.display())
    });
    // Tracing is on before the command starts and off after it returns,
    // and the run fits in the buffer: every call is there whole.
    assert_eq!(checked.exits_without_entry, 0, "{checked:?}");
    assert!(checked.open_at_end.is_empty(), "{checked:?}");
    let dump = Command::new("trace-cmd")
        .args(["dump", "--summary", "-i", d])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&dump.stdout).contains("4 [CPUs with tracing data]"));
}

/// func-no-repeats: the kernel's `func_repeats` records read in trace-cmd
/// with the same count and last time stamp the kernel's `trace` shows, and
/// `ktrace report` prints what trace-cmd prints.
#[test]
fn trace_cmd_reads_func_repeats() {
    let com2 = scratch("repeats.com2");
    let dat = scratch("repeats.dat");
    let com2_arg = format!("file:{}", com2.display());
    let mut k = Kernel::boot(&["--smp", "2", "--", "-serial", &com2_arg]);
    k.run("echo kernel::shell::work::calltree_root > /tracing/set_ftrace_filter");
    k.run("echo kernel::shell::work::calltree >> /tracing/set_ftrace_filter");
    k.run("echo function > /tracing/current_tracer");
    k.run("echo func-no-repeats > /tracing/trace_options");
    // The second command's first call writes the first one's repeats.
    for n in [10, 1] {
        let out = k.run(&format!("calltree {n}"));
        assert!(out.contains(&format!("calltree: {n} iterations")), "{out}");
    }
    let (trace, summary) = export_and_extract(k, &com2, &dat);
    assert!(summary.contains("trace-export:"), "{summary}");

    // The kernel's line: `... calltree_root <-parent (repeats: 9, last_ts: T)`.
    let kline = trace
        .lines()
        .find(|l| l.contains("(repeats: "))
        .unwrap_or_else(|| panic!("no repeats record:\n{trace}"));
    let (head, tail) = kline
        .split_once(": kernel::shell::work::calltree_root <-")
        .unwrap();
    let ts = head.rsplit(' ').next().unwrap();
    let (_, rest) = tail.split_once(" (repeats: 9, last_ts:").unwrap();
    let last_ts = rest.trim().trim_end_matches(')');

    let d = dat.to_str().unwrap();
    let report = trace_cmd(&["report", "-O", "parent=1", d]);
    assert!(!report.contains("FAILED TO PARSE"), "{report}");
    let tline = report
        .lines()
        .find(|l| l.contains(" func_repeats: "))
        .unwrap_or_else(|| panic!("no func_repeats in trace-cmd's report:\n{report}"));
    assert!(
        tline.contains(&format!(" {ts}: func_repeats: ")),
        "{tline}\n{kline}"
    );
    assert!(
        tline.contains(&format!(
            "kernel::shell::work::calltree_root <-- kernel::shell::work::calltree (count: 9  last_ts: {last_ts:>12})"
        )),
        "{tline}\n{kline}"
    );
    let ours = Command::new(ktrace_bin())
        .args(["report", "-O", "parent=1", "-i", d])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ours.stdout), report);
}

/// `trace_printk!` (the `trace_printk` shell command calls it from
/// `trace_printk_demo`): its messages are `print` events named after the
/// calling function, in `trace` and in trace-cmd's report alike; without a
/// trailing newline the next event continues the line in `trace`, as in
/// Linux; with the `trace_printk` option off, or tracing off, nothing is
/// recorded.
#[test]
fn trace_printk_in_trace_and_trace_cmd() {
    let com2 = scratch("printk.com2");
    let dat = scratch("printk.dat");
    let com2_arg = format!("file:{}", com2.display());
    let mut k = Kernel::boot(&["--smp", "2", "--", "-serial", &com2_arg]);
    for (cmd, want) in [
        ("trace_printk 3", "trace_printk: 3 messages"),
        ("trace_printk -n 2", "trace_printk: 2 messages"),
        ("echo mark > /tracing/trace_marker", ""),
        // Not recorded: the option off (the static key), then tracing off.
        ("echo notrace_printk > /tracing/trace_options", ""),
        ("trace_printk 7", "trace_printk: 7 messages"),
        ("echo trace_printk > /tracing/trace_options", ""),
        ("echo 0 > /tracing/tracing_on", ""),
        ("trace_printk 8", "trace_printk: 8 messages"),
        ("echo 1 > /tracing/tracing_on", ""),
        ("trace_printk 1", "trace_printk: 1 messages"),
        ("trace_printk x", "trace_printk: invalid number 'x'"),
    ] {
        let out = k.run(cmd);
        assert!(out.contains(want), "{cmd}: {out}");
    }
    let opts = k.run("cat /tracing/options/trace_printk");
    assert!(opts.contains('1'), "{opts}");
    let (trace, _) = export_and_extract(k, &com2, &dat);

    let caller = "kernel::shell::printk::trace_printk_demo: trace_printk demo: ";
    assert_eq!(trace.matches(caller).count(), 6, "{trace}");
    for i in 0..3 {
        let sq = i * i;
        let want = format!("{caller}i={i} of 3 square={sq:#x}\n");
        assert!(trace.contains(&want), "no {want:?} in\n{trace}");
    }
    assert!(trace.contains(&format!("{caller}i=0 of 1 square=0x0\n")));
    assert!(
        !trace.contains(" of 7") && !trace.contains(" of 8"),
        "{trace}"
    );
    // No newline: the next record starts on the same line.
    let joined = trace
        .lines()
        .find(|l| l.contains("i=0 of 2 (no newline)"))
        .unwrap_or_else(|| panic!("{trace}"));
    assert!(
        joined.contains("i=1 of 2 (no newline)") && joined.ends_with("tracing_mark_write: mark"),
        "{joined}"
    );

    // trace-cmd: one line per record, each one found in the kernel's text
    // with the same time stamp and text.
    let report = trace_cmd(&["report", dat.to_str().unwrap()]);
    assert!(!report.contains("FAILED TO PARSE"), "{report}");
    let prints: Vec<&str> = report.lines().filter(|l| l.contains(" print: ")).collect();
    assert_eq!(prints.len(), 7, "{report}");
    for line in &prints {
        let (head, body) = line.split_once(" print: ").unwrap();
        let ts = head.rsplit(' ').next().unwrap().trim_end_matches(':');
        let want = format!("{ts}: {}", body.trim_start());
        assert!(trace.contains(&want), "{want:?} not in\n{trace}");
        assert!(head.trim_start().starts_with("sh-1 "), "{line}");
    }
    assert_eq!(
        prints.iter().filter(|l| l.contains(caller)).count(),
        6,
        "{report}"
    );
}

/// One event line of the kernel's `trace` or of `trace-cmd report`:
/// (task, cpu, time, event, text), for lines whose body is `event: text`.
type EvLine = (String, usize, String, String, String);

fn parse_event_line(line: &str) -> Option<EvLine> {
    let (task, cpu, rest) = split_context(line)?;
    let (ts, body) = split_time(rest)?;
    let (event, text) = body.split_once(": ")?;
    Some((
        task,
        cpu,
        ts,
        event.trim().to_string(),
        text.trim().to_string(),
    ))
}

/// The `event` lines of `text` per CPU, in order.
fn events_per_cpu(text: &str, events: &[&str]) -> BTreeMap<usize, Vec<EvLine>> {
    let mut m: BTreeMap<usize, Vec<EvLine>> = BTreeMap::new();
    for e in text.lines().filter_map(parse_event_line) {
        if events.contains(&e.3.as_str()) {
            m.entry(e.1).or_default().push(e);
        }
    }
    m
}

/// `key=value` pairs of an event's text, in order.
fn fields(text: &str) -> BTreeMap<String, String> {
    text.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// What libtraceevent's sched plugin prints for a record the kernel
/// printed as `text` (Linux's TP_printk): `prev_comm:prev_pid [prio] STATE
/// ==> next_comm:next_pid [prio]`, the state in the plugin's letters
/// (`SDTtZXxW` for bits 0..7, `R` for none: the `+` of a preempted task is
/// bit 8, which it does not show); `comm:pid [prio] CPU:NNN` for wake-ups.
fn plugin_text(event: &str, text: &str) -> String {
    let f = fields(text);
    match event {
        "sched_switch" => {
            let kernel_bits = "SDTtXZPI";
            let plugin = "SDTtZXxW";
            let letters: Vec<String> = f["prev_state"]
                .trim_end_matches('+')
                .split('|')
                .filter_map(|l| kernel_bits.find(l))
                .map(|bit| plugin[bit..bit + 1].to_string())
                .collect();
            let state = if letters.is_empty() {
                "R".to_string()
            } else {
                letters.join("|")
            };
            format!(
                "{}:{} [{}] {} ==> {}:{} [{}]",
                f["prev_comm"],
                f["prev_pid"],
                f["prev_prio"],
                state,
                f["next_comm"],
                f["next_pid"],
                f["next_prio"]
            )
        }
        _ => format!(
            "{}:{} [{}] CPU:{}",
            f["comm"], f["pid"], f["prio"], f["target_cpu"]
        ),
    }
}

/// `ktrace record ARGS -o DAT -- LINES...`, then tracing off and `cat
/// /tracing/trace`; returns what ktrace printed (the shell lines' output,
/// so the kernel's `trace` text), which must show no lost events.
fn record_then_cat_trace(args: &[&str], dat: &Path, lines: &[&str]) -> String {
    let r = Command::new(ktrace_bin())
        .current_dir(root())
        .arg("record")
        .args(args)
        .arg("-o")
        .arg(dat)
        .arg("--")
        .args(lines)
        .args(["echo 0 > /tracing/tracing_on", "cat /tracing/trace"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr).into_owned();
    assert!(r.status.success(), "ktrace record: {stderr}");
    assert!(!stderr.contains("LOST"), "the test expects no lost events");
    stderr
}

/// `ktrace record -p function -e sched:sched_switch -e sched_wakeup`: the
/// events `trace-cmd report` shows are the kernel's own, event for event
/// per CPU: without plugins (`-N`, libtraceevent evaluates our `print fmt`)
/// with the kernel's exact text, and by default in trace-cmd's sched
/// plugin format, which `ktrace report` mirrors; the function events are
/// all there too.
#[test]
fn ktrace_record_events_match_the_kernel_trace() {
    let dat = scratch("events.dat");
    let stderr = record_then_cat_trace(
        &[
            "--smp",
            "4",
            "-p",
            "function",
            "-l",
            "kernel::shell::work::*",
            "-e",
            "sched:sched_switch",
            "-e",
            "sched_wakeup",
        ],
        &dat,
        &["work sleep 2"],
    );
    let d = dat.to_str().unwrap();
    let sched = ["sched_switch", "sched_wakeup"];
    let kernel = events_per_cpu(&stderr, &sched);
    let n_kernel: usize = kernel.values().map(Vec::len).sum();
    assert!(
        kernel
            .values()
            .flatten()
            .filter(|e| e.3 == "sched_switch")
            .count()
            >= 8,
        "too few sched_switch events:\n{stderr}"
    );
    assert!(kernel.values().flatten().any(|e| e.3 == "sched_wakeup"));

    // -N: no plugins, the print fmt line of our format files.
    let plain = trace_cmd(&["report", "-N", d]);
    assert!(!plain.contains("FAILED TO PARSE"), "{plain}");
    assert_eq!(events_per_cpu(&plain, &sched), kernel, "report -N differs");

    // Default: the sched plugin.
    let report = trace_cmd(&["report", d]);
    assert!(!report.contains("FAILED TO PARSE"), "{report}");
    let plugin = events_per_cpu(&report, &sched);
    let want: BTreeMap<usize, Vec<EvLine>> = kernel
        .iter()
        .map(|(cpu, evs)| {
            let evs = evs
                .iter()
                .map(|(task, cpu, ts, ev, text)| {
                    (
                        task.clone(),
                        *cpu,
                        ts.clone(),
                        ev.clone(),
                        plugin_text(ev, text),
                    )
                })
                .collect();
            (*cpu, evs)
        })
        .collect();
    assert_eq!(plugin, want, "the sched plugin's report differs");
    assert_eq!(plugin.values().map(Vec::len).sum::<usize>(), n_kernel);

    // The function events recorded alongside.
    let kernel_functions = stderr
        .lines()
        .filter_map(parse_kernel_line)
        .filter(|e| e.3.starts_with("kernel::shell::work::"))
        .count();
    let report_functions = report.lines().filter(|l| l.contains(" function: ")).count();
    assert!(kernel_functions > 0, "{stderr}");
    assert_eq!(report_functions, kernel_functions);

    // ktrace report prints what trace-cmd prints.
    let ours = Command::new(ktrace_bin())
        .args(["report", "-i", d])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ours.stdout), report);

    // A pattern that selects nothing: trace-cmd's message, exit status 1,
    // no file, and the QEMU it booted to read available_events is gone.
    let bad = scratch("bad.dat");
    let child = Command::new(ktrace_bin())
        .current_dir(root())
        .args(["record", "--smp", "1", "-e", "sched", "-e", "nosuch", "-o"])
        .arg(&bad)
        .args(["--", "sleep 0.1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let com2 = format!("ktrace-com2-{}.bin", child.id());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("ktrace: No events enabled with nosuch"),
        "{err}"
    );
    assert!(!bad.exists());
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&com2))
        .collect();
    assert!(left.is_empty(), "QEMU left running: {left:?}");

    // KernelShark's library and its sched_events plugin on the same file:
    // the plugin initialises, its sched_switch handler gives every switch
    // to the task switched in (what colours the CPU plots and starts a
    // task's lane), and each task the kernel switched has a lane with its
    // name.
    let ks = kshark_check(&dat);
    assert!(ks.contains("plugin sched_events: loaded\n"), "{ks}");
    let mut ks_switches: BTreeMap<usize, Vec<(i64, i64)>> = BTreeMap::new();
    for l in ks.lines().filter_map(|l| l.strip_prefix("switch ")) {
        let v: Vec<i64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
        let [cpu, _ts, prev, next, entry_pid] = v[..] else {
            panic!("{l}")
        };
        assert_eq!(
            entry_pid, next,
            "the plugin did not move the switch to the next task: {l}"
        );
        ks_switches
            .entry(cpu as usize)
            .or_default()
            .push((prev, next));
    }
    let kernel_switches: BTreeMap<usize, Vec<(i64, i64)>> = kernel
        .iter()
        .map(|(cpu, evs)| {
            let v = evs
                .iter()
                .filter(|e| e.3 == "sched_switch")
                .map(|e| {
                    let f = fields(&e.4);
                    (
                        f["prev_pid"].parse().unwrap(),
                        f["next_pid"].parse().unwrap(),
                    )
                })
                .collect();
            (*cpu, v)
        })
        .collect();
    assert_eq!(ks_switches, kernel_switches);
    let lanes: BTreeMap<i64, (String, usize)> = ks
        .lines()
        .filter_map(|l| l.strip_prefix("task "))
        .map(|l| {
            let v: Vec<&str> = l.split(' ').collect();
            (
                v[0].parse().unwrap(),
                (v[1].to_string(), v[2].parse().unwrap()),
            )
        })
        .collect();
    for e in kernel.values().flatten().filter(|e| e.3 == "sched_switch") {
        let f = fields(&e.4);
        let pid: i64 = f["next_pid"].parse().unwrap();
        let name = if pid == 0 {
            "<idle>"
        } else {
            f["next_comm"].as_str()
        };
        let lane = lanes
            .get(&pid)
            .unwrap_or_else(|| panic!("no lane for {pid}:\n{ks}"));
        assert_eq!(lane.0, name);
        assert!(lane.1 > 0, "{ks}");
    }
}

/// Builds tests/kshark/kshark_check.c against libkshark (KernelShark's
/// library; tests/install-deps.sh installs it) and runs it on `dat` with
/// KernelShark's own sched_events plugin.
fn kshark_check(dat: &Path) -> String {
    let pkg = |arg: &str| -> String {
        let out = Command::new("pkg-config")
            .args([arg, "libkshark"])
            .output()
            .expect("pkg-config is not installed (tests/install-deps.sh installs it)");
        assert!(
            out.status.success(),
            "pkg-config {arg} libkshark failed (tests/install-deps.sh installs libkshark-dev): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let flags = pkg("--cflags") + " " + &pkg("--libs");
    let bin = scratch("kshark_check");
    let cc = Command::new("cc")
        .arg(root().join("tests/kshark/kshark_check.c"))
        .arg("-o")
        .arg(&bin)
        .args(flags.split_whitespace())
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "cc kshark_check.c: {}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let plugin =
        PathBuf::from(pkg("--variable=libdir")).join("kernelshark/plugins/plugin-sched_events.so");
    assert!(
        plugin.is_file(),
        "{} missing (the kernelshark package has it)",
        plugin.display()
    );
    let out = Command::new(&bin).arg(dat).arg(&plugin).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "kshark_check: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// `ktrace record -e all` (no tracer): every event that fired reads in
/// trace-cmd with no `[FAILED TO PARSE]`; without plugins its text is the
/// kernel's, event for event per CPU (up to how libtraceevent prints `%p`
/// and `%pS`, as with real Linux); `ktrace report` equals `trace-cmd
/// report`, plugins (sched, kmem) included.
#[test]
fn ktrace_record_all_events_read_in_trace_cmd() {
    use build_tools::tracedat::report::{no_symbol_sizes, plain_pointers};
    let dat = scratch("all-events.dat");
    let stderr = record_then_cat_trace(
        &["--smp", "2", "-e", "all"],
        &dat,
        &["work files 1", "ls /"],
    );
    let d = dat.to_str().unwrap();
    let names: Vec<&str> = tracer::trace_events::all_events().map(|e| e.name).collect();
    let kernel: BTreeMap<usize, Vec<EvLine>> = events_per_cpu(&stderr, &names)
        .into_iter()
        .map(|(cpu, evs)| {
            let evs = evs
                .into_iter()
                .map(|(t, c, ts, ev, text)| (t, c, ts, ev, plain_pointers(&no_symbol_sizes(&text))))
                .collect();
            (cpu, evs)
        })
        .collect();
    let seen: std::collections::BTreeSet<&str> =
        kernel.values().flatten().map(|e| e.3.as_str()).collect();
    for want in [
        "sched_switch",
        "sched_wakeup",
        "irq_handler_entry",
        "local_timer_entry",
        "kmalloc",
        "kfree",
        "vfs_open",
        "shell_command_entry",
    ] {
        assert!(
            seen.contains(want),
            "no {want} in the kernel's trace: {seen:?}"
        );
    }

    let plain = trace_cmd(&["report", "-N", d]);
    assert!(!plain.contains("FAILED TO PARSE"), "{plain}");
    let theirs = events_per_cpu(&plain, &names);
    // The preemptirq events print `(void *)((unsigned long)(_stext) +
    // REC->caller_offs)` with %pS: `_stext` is not a field, libtraceevent
    // takes it as 0, so trace-cmd shows the bare offsets (`caller=0x9e080`)
    // where the kernel shows the symbols. Their text is compared as the
    // presence of both fields only.
    let preemptirq = |ev: &EvLine| {
        let mut ev = ev.clone();
        if [
            "irq_disable",
            "irq_enable",
            "preempt_disable",
            "preempt_enable",
        ]
        .contains(&ev.3.as_str())
        {
            assert!(
                ev.4.starts_with("caller=") && ev.4.contains(" parent="),
                "{ev:?}"
            );
            ev.4 = String::new();
        }
        ev
    };
    for (cpu, evs) in &kernel {
        for (i, (k, t)) in evs.iter().zip(&theirs[cpu]).enumerate() {
            assert_eq!(preemptirq(k), preemptirq(t), "CPU {cpu} event {i}");
        }
        assert_eq!(evs.len(), theirs[cpu].len(), "CPU {cpu}");
    }

    let report = trace_cmd(&["report", d]);
    assert!(!report.contains("FAILED TO PARSE"), "{report}");
    let ours = Command::new(ktrace_bin())
        .args(["report", "-i", d])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ours.stdout), report);
}

/// `ktrace record --kprobe DEF -e kprobes`: the probe event's format goes
/// into trace.dat, so that trace-cmd prints its records by their print fmt
/// (the arguments' values, `%pS`, a string, an array), and `ktrace report`
/// prints them the same.
#[test]
fn ktrace_record_kprobe_events() {
    let dat = scratch("kprobes.dat");
    let elf = tests::kernel_elf("mcount");
    let def = "p:myprobe kernel::shell::work::work_stack_recurse left=$arg1 level=$arg2:s32 \
               r=$stack0:symbol c=$comm";
    let ret_def = "r:myret kernel::shell::work::work_stack_recurse $retval:u64";
    let out = Command::new(ktrace_bin())
        .env("KTRACE_KERNEL", &elf)
        .env("KTRACE_ROOT", root())
        .args(["record", "--kprobe", def])
        .args(["--kprobe", ret_def, "-e", "kprobes", "-o"])
        .arg(&dat)
        .args(["--", "work stack 3"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ktrace record failed: {stderr}");
    let report = trace_cmd(&["report", dat.to_str().unwrap()]);
    assert!(!report.contains("FAILED TO PARSE"), "{report}");
    let lines: Vec<&str> = report
        .lines()
        .filter(|l| l.contains(" myprobe: "))
        .collect();
    assert_eq!(lines.len(), 4, "{report}");
    for (i, l) in lines.iter().enumerate() {
        let body = l.split(" myprobe: ").nth(1).unwrap().trim_start();
        let (ip, args) = body.split_once(") ").unwrap();
        assert!(ip.starts_with("(ffffffff"), "{l}");
        let caller = if i == 0 {
            "kernel::shell::work::"
        } else {
            "kernel::shell::work::work_stack_recurse+0x"
        };
        assert!(
            args.starts_with(&format!("left=0x{:x} level={} r={caller}", 3 - i, i)),
            "{l}"
        );
        assert!(args.ends_with(" c=\"sh\""), "{l}");
    }
    // The return probe: trace-cmd prints its print fmt, `(%lx <- %lx)`
    // with the addresses, then $retval; the innermost call returns first,
    // each level's sum of its 480-byte array (i + level) as u8 added.
    let rets: Vec<&str> = report.lines().filter(|l| l.contains(" myret: ")).collect();
    assert_eq!(rets.len(), 4, "{report}");
    let mut sum = 0;
    for (i, l) in rets.iter().enumerate() {
        let level = 3 - i as u64;
        sum += (0..480u64).map(|b| (b + level) & 0xff).sum::<u64>();
        let body = l.split(" myret: ").nth(1).unwrap().trim_start();
        let (ips, arg) = body.split_once(") ").unwrap();
        let (ret_ip, func) = ips.trim_start_matches('(').split_once(" <- ").unwrap();
        assert!(
            ret_ip.starts_with("ffffffff") && func.starts_with("ffffffff"),
            "{l}"
        );
        assert_eq!(arg, format!("arg1={sum}"), "{l}");
    }
    let ours = Command::new(ktrace_bin())
        .args(["report", "-i"])
        .arg(&dat)
        .output()
        .unwrap();
    assert!(ours.status.success());
    assert_eq!(String::from_utf8_lossy(&ours.stdout), report);
}
