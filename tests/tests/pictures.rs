//! ktrace's pictures of real recordings: `ktrace record ... --folded
//! --flamegraph --chrome` of the `calltree` workload under function_graph,
//! checked against the workload's call tree (kernel/src/shell/work.rs,
//! `calltree`) and against `trace-cmd report` of the same trace.dat (the
//! durations it prints, to the ns); the SVG rendered by headless Chromium;
//! the Chrome JSON parsed back (calls, and sched_switch as instant events);
//! a function tracer recording; interrupts; the progress bars on a pty.
//! Needs trace-cmd and chromium (tests/run.sh installs them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tests::{ktrace_bin, root};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pictures-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn ktrace(args: &[&str]) -> String {
    let out = Command::new(ktrace_bin())
        .env("KTRACE_KERNEL", tests::kernel_elf("mcount"))
        .env("KTRACE_ROOT", root())
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "ktrace {args:?} failed: {stderr}");
    stderr
}

fn trace_cmd_report(dat: &Path) -> String {
    let out = Command::new("trace-cmd")
        .arg("report")
        .arg(dat)
        .output()
        .expect("trace-cmd is not installed (tests/run.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Folded text -> stack -> weight.
fn folded(path: &Path) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| {
            let (s, w) = l.rsplit_once(' ').unwrap();
            (s.to_string(), w.parse().unwrap())
        })
        .collect()
}

const W: &str = "kernel::shell::work::";

/// The call tree of one `calltree` iteration, from its definition:
/// (stack below the task, calls of that stack per iteration).
fn calltree_stacks() -> Vec<(String, u64)> {
    let [root, leaf, pair, chain, wide] =
        ["root", "leaf", "pair", "chain", "wide"].map(|f| format!("{W}calltree_{f}"));
    vec![
        (root.clone(), 1),
        (format!("{root};{leaf}"), 1),
        (format!("{root};{pair}"), 1),
        (format!("{root};{pair};{leaf}"), 2),
        (format!("{root};{chain}"), 1),
        (format!("{root};{chain};{chain}"), 1),
        (format!("{root};{chain};{chain};{chain}"), 1),
        (format!("{root};{chain};{chain};{chain};{leaf}"), 1),
        (format!("{root};{wide}"), 1),
    ]
}

/// One call read from `trace-cmd report`: its task, its stack (outermost
/// first, itself last) and its duration in ns.
#[derive(Debug, Clone, PartialEq)]
struct ReportCall {
    task: String,
    stack: Vec<String>,
    dur: u64,
}

/// "  126.032 us   " (with an overhead mark or not) -> 126032 ns.
fn report_ns(d: &str) -> u64 {
    let n = d
        .trim()
        .trim_start_matches(['+', '!', '#', '*', '@', '$'])
        .trim()
        .trim_end_matches("us")
        .trim();
    let (us, frac) = n.split_once('.').unwrap_or((n, "000"));
    assert_eq!(frac.len(), 3, "{d:?}");
    us.parse::<u64>().unwrap() * 1000 + frac.parse::<u64>().unwrap()
}

/// The function_graph calls of a `trace-cmd report`, in the order they
/// were entered, with the self time of each stack (task first).
fn report_calls(report: &str) -> (Vec<ReportCall>, BTreeMap<String, u64>) {
    // Per task: open calls (index in `calls`, children's time).
    let mut open: BTreeMap<String, Vec<(usize, u64)>> = BTreeMap::new();
    let mut calls: Vec<ReportCall> = Vec::new();
    let mut selfs: BTreeMap<String, u64> = BTreeMap::new();
    let mut done =
        |calls: &mut Vec<ReportCall>, open: &mut Vec<(usize, u64)>, i: usize, child: u64| {
            let c = &calls[i];
            let key = format!("{};{}", c.task, c.stack.join(";"));
            *selfs.entry(key).or_insert(0) += c.dur - child;
            if let Some(p) = open.last_mut() {
                p.1 += c.dur;
            }
        };
    for line in report.lines().skip(1) {
        let Some(lb) = line.find(" [") else { continue };
        let task = line[..lb].trim().to_string();
        let Some((_, rest)) = line.split_once(": funcgraph_") else {
            continue;
        };
        let (_, rest) = rest.split_once(':').unwrap();
        let (dur, body) = rest.split_once('|').unwrap();
        let text = body.trim();
        let stack = open.entry(task.clone()).or_default();
        let path = |stack: &[(usize, u64)], calls: &[ReportCall], f: &str| {
            let mut s: Vec<String> = stack
                .last()
                .map(|(i, _)| calls[*i].stack.clone())
                .unwrap_or_default();
            s.push(f.to_string());
            s
        };
        if let Some(f) = text.strip_suffix("();") {
            let c = ReportCall {
                task: task.clone(),
                stack: path(stack, &calls, f),
                dur: report_ns(dur),
            };
            calls.push(c);
            let i = calls.len() - 1;
            done(&mut calls, stack, i, 0);
        } else if let Some(f) = text.strip_suffix("() {") {
            let c = ReportCall {
                task: task.clone(),
                stack: path(stack, &calls, f),
                dur: 0,
            };
            calls.push(c);
            stack.push((calls.len() - 1, 0));
        } else if text == "}" {
            let (i, child) = stack.pop().expect("an exit with its entry");
            calls[i].dur = report_ns(dur);
            done(&mut calls, stack, i, child);
        } else {
            panic!("unexpected graph line: {line:?}");
        }
    }
    assert!(
        open.values().all(Vec::is_empty),
        "calls left open: {open:?}"
    );
    (calls, selfs)
}

/// The complete events of `tid` in the tasks process, in the order they
/// began, each with its duration in ns and its parent (the innermost
/// event of the same track that contains it), found by ts/dur only.
fn json_calls(evs: &[Value], tid: u64) -> Vec<(String, u64, Option<String>)> {
    let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
    let mut xs: Vec<(u64, u64, String)> = evs
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == 2 && e["tid"] == tid)
        .map(|e| {
            (
                ns(&e["ts"]),
                ns(&e["dur"]),
                e["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // Outer before inner when two begin together.
    xs.sort_by_key(|(ts, dur, _)| (*ts, std::cmp::Reverse(*dur)));
    let mut stack: Vec<(u64, String)> = Vec::new(); // (end, name)
    let mut out = Vec::new();
    for (ts, dur, name) in xs {
        while stack.last().is_some_and(|(end, _)| *end < ts + dur) {
            stack.pop();
        }
        out.push((name.clone(), dur, stack.last().map(|s| s.1.clone())));
        stack.push((ts + dur, name));
    }
    out
}

/// Runs `chromium --headless` with a bound; it can be slow to start.
fn chromium(args: &[&str]) {
    let profile = scratch("chromium-profile");
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            // As root in a container Chromium refuses its sandbox.
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium is not installed (tests/run.sh installs it)");
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium {args:?}: {status}");
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium {args:?} did not finish in 300 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Opens the SVG in headless Chromium, takes a screenshot and checks the
/// page rendered: a good share of the pixels has the flame palette's
/// colours (red to yellow: much red, little blue), with many distinct
/// colours.
fn check_rendered(svg: &Path) {
    let shot = scratch("flamegraph.png");
    let _ = std::fs::remove_file(&shot);
    chromium(&[
        "--window-size=1200,700",
        &format!("--screenshot={}", shot.display()),
        &format!("file://{}", svg.display()),
    ]);
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        c => panic!("unexpected screenshot colour type {c:?}"),
    };
    assert_eq!((info.width, info.height), (1200, 700));
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(px).collect();
    let flame = pixels
        .iter()
        .filter(|p| p[0] >= 180 && p[2] <= 90 && p[0] as i32 - p[2] as i32 > 120)
        .count();
    let colours: std::collections::BTreeSet<&[u8]> = pixels.iter().copied().collect();
    assert!(
        flame * 100 > pixels.len(),
        "blank screenshot? {flame} flame-coloured pixels of {}",
        pixels.len()
    );
    assert!(colours.len() > 20, "{} colours", colours.len());
}

#[test]
fn flame_graph_and_timeline_of_calltree() {
    let (dat, fold, count, svg, json) = (
        scratch("graph.dat"),
        scratch("graph.txt"),
        scratch("graph-count.txt"),
        scratch("graph.svg"),
        scratch("graph.json"),
    );
    let [d, f, c, s, j] = [&dat, &fold, &count, &svg, &json].map(|p| p.to_str().unwrap());
    let iterations = 3;
    let err = ktrace(&[
        "record",
        "-p",
        "function_graph",
        "-l",
        "*calltree_*",
        "-e",
        "sched:sched_switch",
        "-o",
        d,
        "--folded",
        f,
        "--flamegraph",
        s,
        "--chrome",
        j,
        "--",
        &format!("calltree {iterations}"),
        // calltree runs without blocking: the shell sleeping afterwards
        // makes sure the recording holds a sched_switch (one of its own
        // waits for input may or may not fall inside it).
        "sleep 0.01",
    ]);
    for p in [d, f, s, j] {
        assert!(err.contains(&format!("ktrace: wrote {p}")), "{err}");
    }
    // stderr is not a terminal: no progress bars.
    assert!(!err.contains("pages received"), "{err}");
    let weights = folded(&fold);
    // One task (the shell) ran the tree: its frame heads every stack.
    let task = weights
        .keys()
        .next()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert!(task.starts_with("sh-"), "{weights:?}");
    // The stacks are the workload's tree.
    let stacks: Vec<String> = weights
        .keys()
        .map(|k| {
            k.strip_prefix(&format!("{task};"))
                .unwrap_or_else(|| panic!("{k}"))
                .to_string()
        })
        .collect();
    let mut want: Vec<String> = calltree_stacks().into_iter().map(|s| s.0).collect();
    want.sort();
    assert_eq!(stacks, want);
    // --count from the same file: each stack's calls.
    ktrace(&["report", "-i", d, "--count", "--folded", c]);
    let counts = folded(&count);
    for (stack, n) in calltree_stacks() {
        assert_eq!(
            counts[&format!("{task};{stack}")],
            n * iterations,
            "{stack}"
        );
    }
    // The weights are the self times trace-cmd's report gives, to the ns,
    // and they add up to the roots' durations.
    let report = trace_cmd_report(&dat);
    let (calls, selfs) = report_calls(&report);
    assert_eq!(weights, selfs);
    let roots: u64 = calls
        .iter()
        .filter(|c| c.stack.len() == 1)
        .map(|c| c.dur)
        .sum();
    assert_eq!(weights.values().sum::<u64>(), roots);
    assert_eq!(calls.len(), 10 * iterations as usize);

    // The timeline: every call one complete event on the task's track,
    // with its duration and its parent, in the order they ran.
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let evs = v["traceEvents"].as_array().unwrap();
    let thread = |name: &str| {
        evs.iter()
            .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == name)
            .unwrap_or_else(|| panic!("no track named {name}"))
            .clone()
    };
    for cpu in 0..4 {
        let t = thread(&format!("CPU {cpu}"));
        assert_eq!((t["pid"].as_u64(), t["tid"].as_u64()), (Some(1), Some(cpu)));
    }
    let t = thread(&task);
    assert_eq!(t["pid"], 2);
    let got = json_calls(evs, t["tid"].as_u64().unwrap());
    let want: Vec<(String, u64, Option<String>)> = calls
        .iter()
        .map(|c| {
            let n = c.stack.len();
            (
                c.stack[n - 1].clone(),
                c.dur,
                (n > 1).then(|| c.stack[n - 2].clone()),
            )
        })
        .collect();
    assert_eq!(got, want);
    // Every sched_switch is an instant event on its CPU's track, in order,
    // with its fields.
    let switches: Vec<(u64, u64)> = report
        .lines()
        .filter(|l| l.contains(" sched_switch: "))
        .map(|l| {
            let cpu = l.split_once(" [").unwrap().1[..3].parse().unwrap();
            let next = l.rsplit_once("==> ").unwrap().1;
            let pid = next.split(' ').next().unwrap().rsplit_once(':').unwrap().1;
            (cpu, pid.parse().unwrap())
        })
        .collect();
    assert!(!switches.is_empty(), "no sched_switch recorded");
    let mut instants: Vec<&Value> = evs
        .iter()
        .filter(|e| e["ph"] == "i" && e["name"] == "sched_switch")
        .collect();
    instants.sort_by(|a, b| a["ts"].as_f64().partial_cmp(&b["ts"].as_f64()).unwrap());
    assert!(instants.iter().all(|e| e["s"] == "t" && e["pid"] == 1));
    let got: Vec<(u64, u64)> = instants
        .iter()
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["next_pid"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, switches);
    // What ran on the CPUs: the shell's records make slices on a CPU track.
    assert!(evs
        .iter()
        .any(|e| e["ph"] == "X" && e["pid"] == 1 && e["name"] == task.as_str()));

    // The SVG, rendered by a browser; the root frame's name is in its text.
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.contains(&format!(">{W}calltree_root</text>")),
        "root frame text"
    );
    assert!(text.contains("function_graph: self time per call stack"));
    check_rendered(&svg);
}

/// The function tracer records no returns: call counts on stacks rebuilt
/// from `func <-parent`, which for the whole calltree traced are its tree.
#[test]
fn function_tracer_call_counts() {
    let (dat, fold, svg) = (
        scratch("function.dat"),
        scratch("function.txt"),
        scratch("function.svg"),
    );
    let [d, f, s] = [&dat, &fold, &svg].map(|p| p.to_str().unwrap());
    ktrace(&[
        "record",
        "-p",
        "function",
        "-l",
        "*calltree_*",
        "-e",
        "sched:sched_switch",
        "-o",
        d,
        "--folded",
        f,
        "--flamegraph",
        s,
        "--",
        "calltree 2",
    ]);
    let weights = folded(&fold);
    let mut got: BTreeMap<String, u64> = BTreeMap::new();
    for (stack, n) in &weights {
        // task;caller of calltree_root;calltree_root;...
        let i = stack
            .find(&format!("{W}calltree_root"))
            .unwrap_or_else(|| panic!("{stack}"));
        *got.entry(stack[i..].to_string()).or_insert(0) += n;
    }
    let want: BTreeMap<String, u64> = calltree_stacks()
        .into_iter()
        .map(|(s, n)| (s, 2 * n))
        .collect();
    assert_eq!(got, want);
    let functions = trace_cmd_report(&dat)
        .lines()
        .filter(|l| l.contains(" function: "))
        .count();
    assert_eq!(weights.values().sum::<u64>() as usize, functions);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("function tracer: call counts"), "title");
}

/// Everything traced for a moment: interrupts come in as `[irq]` frames
/// right under the irq-entry function (where the graph prints
/// `==========>`), whatever they interrupted.
#[test]
fn interrupts_are_frames_of_their_own() {
    let (dat, fold) = (scratch("irq.dat"), scratch("irq.txt"));
    let [d, f] = [&dat, &fold].map(|p| p.to_str().unwrap());
    ktrace(&[
        "record",
        "-p",
        "function_graph",
        "-b",
        "64",
        "-o",
        d,
        "--count",
        "--folded",
        f,
        "--",
        "sleep 0.2",
    ]);
    let weights = folded(&fold);
    let handler = "kernel::arch::x86_64::irq::handle_irq";
    let mut irqs = 0;
    for (stack, n) in &weights {
        let frames: Vec<&str> = stack.split(';').collect();
        for (i, fr) in frames.iter().enumerate() {
            if *fr == handler {
                assert_eq!(frames[i - 1], "[irq]", "{stack}");
                irqs += n;
            }
        }
    }
    assert!(irqs > 0, "no interrupt in 0.2 s: {weights:?}");
}

/// On a terminal (`script` gives ktrace a pty), `record` shows one bar per
/// CPU counting the pages as they arrive, ending at the totals the file
/// got (with stderr not a terminal, none: see the calltree test).
#[test]
fn progress_bars_on_a_terminal_only() {
    let (dat, log) = (scratch("progress.dat"), scratch("progress.log"));
    let cmd = format!(
        "{} record -p function_graph -l '*calltree_*' -o {} -- 'calltree 1'",
        ktrace_bin().display(),
        dat.display()
    );
    let out = Command::new("script")
        .args(["-qfec", &cmd])
        .arg(&log)
        .env("KTRACE_KERNEL", tests::kernel_elf("mcount"))
        .env("KTRACE_ROOT", root())
        .stdin(Stdio::null())
        .output()
        .expect("script (util-linux) runs a command on a pty");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(out.status.success(), "{text}");
    // "ktrace: wrote DAT (cpu0: 5 pages, cpu1: 1 pages, ...)"
    let wrote = text
        .lines()
        .find(|l| l.contains("ktrace: wrote"))
        .unwrap_or_else(|| panic!("{text}"));
    for cpu in 0..4 {
        let total = wrote
            .split(&format!("cpu{cpu}: "))
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .unwrap_or_else(|| panic!("{wrote}"));
        // The bar's last state: "cpuN <spinner> K pages received".
        let last = text
            .rsplit(&format!("cpu{cpu} "))
            .find_map(|s| {
                let (before, _) = s.split_once(" pages received")?;
                before.split_whitespace().last().map(str::to_string)
            })
            .unwrap_or_else(|| panic!("no bar for cpu{cpu}: {text}"));
        assert_eq!(last, total, "cpu{cpu}");
    }
}
