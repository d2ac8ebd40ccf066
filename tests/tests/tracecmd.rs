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

use tests::{root, Kernel};

/// Builds the ktrace binary (release, in the repository's target dir,
/// serialised with the kernel builds) and returns its path.
fn ktrace_bin() -> PathBuf {
    let root = root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new("flock")
        .arg(root.join("target/build.lock"))
        .arg(cargo)
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "build-tools",
            "--bin",
            "ktrace",
            "--target-dir",
        ])
        .arg(root.join("target"))
        .current_dir(&root)
        .status()
        .expect("cannot run cargo");
    assert!(status.success(), "building ktrace failed");
    root.join("target/release/ktrace")
}

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

/// Parses a line of the kernel's `trace`:
/// `  work-compute/3-5       [003] .n...     0.137877: f <-p`.
fn parse_kernel_line(line: &str) -> Option<Ev> {
    let open = line.find("] ")?;
    let lb = line[..open].rfind(" [")?;
    let task = line[..lb].trim().to_string();
    let cpu = line[lb + 2..open].parse().ok()?;
    let rest = &line[open + 2..];
    let colon = rest.find(": ")?;
    let ts = rest[..colon].split_whitespace().last()?.to_string();
    let (func, parent) = rest[colon + 2..].split_once(" <-")?;
    Some((task, cpu, ts, func.to_string(), parent.to_string()))
}

/// Parses a `trace-cmd report -O parent=1` function line:
/// `  work-compute/3-5     [003]     0.137877: function:    f <-- p`.
fn parse_report_line(line: &str) -> Option<Ev> {
    let open = line.find("] ")?;
    let lb = line[..open].rfind(" [")?;
    let task = line[..lb].trim().to_string();
    let cpu = line[lb + 2..open].parse().ok()?;
    let rest = &line[open + 2..];
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
    k.run("echo 0 > /tracing/tracing_on");
    let trace = k.run_with_timeout("cat /tracing/trace", Duration::from_secs(300));
    let summary = k.run_with_timeout("trace-export", Duration::from_secs(300));
    assert!(
        summary.contains("trace-export:") && summary.contains("cpu3:"),
        "{summary}"
    );
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
    trace
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

/// The same for function_graph, once the kernel has it.
#[test]
fn ktrace_record_function_graph() {
    let com2 = scratch("probe.com2");
    let com2_arg = format!("file:{}", com2.display());
    let mut k = Kernel::boot(&["--smp", "2", "--", "-serial", &com2_arg]);
    let tracers = k.run("cat /tracing/available_tracers");
    k.send(b"poweroff\n");
    k.wait_exit(Duration::from_secs(60));
    if !tracers.split_whitespace().any(|t| t == "function_graph") {
        eprintln!(
            "SKIPPED: the kernel has no function_graph tracer yet (available_tracers: {})",
            tracers.trim()
        );
        return;
    }
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
        .args(["--", "work compute 1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ktrace record failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = trace_cmd(&["report", dat.to_str().unwrap()]);
    assert!(!report.contains("FAILED TO PARSE"));
    assert!(report.contains("funcgraph_entry:"), "{report}");
    assert!(report.contains("kernel::shell::work::compute"), "{report}");
    assert!(report.contains(" us "), "durations: {report}");
}
