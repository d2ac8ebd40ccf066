//! QEMU tests of the function tracer: Linux's `trace` format line
//! by line, the output options, `tracing_on` versus `nop`, and the filter
//! files with Linux's semantics, all in the booted kernel.

use std::collections::BTreeSet;

use tests::Kernel;

const T: &str = "/tracing";

/// The header of `trace` for the function tracer on 4 CPUs, after the
/// entries line (Linux 6.x, irq-info on, record-tgid off).
const LEGEND: &str = "\
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

fn lines(s: &str) -> Vec<String> {
    clean(s).lines().map(str::to_string).collect()
}

/// One event line, split by Linux's fixed-width format:
/// `^\s{0,16}\S+-\d+\s+\[\d{3}\] [.dNnphHsz0-9]{5} +\d+\.\d{6}: BODY$`
/// (need-resched is `N`, `n` or `p` in Linux: an event recorded while a
/// reschedule is pending, which a tick during a preempt-disabled stretch
/// leaves set until the next interrupt exit, shows `n` here).
/// Returns (cpu, body) or why the line does not match.
fn parse_line(l: &str) -> Result<(u32, String), String> {
    let open = l.find(" [").ok_or("no ' ['")?;
    let task = &l[..open];
    let lead = task.len() - task.trim_start().len();
    if lead > 16 {
        return Err(format!("{lead} leading spaces"));
    }
    let task = task.trim();
    let dash = task.rfind('-').ok_or("no '-' before the pid")?;
    if dash == 0 || !task[dash + 1..].chars().all(|c| c.is_ascii_digit()) || task.len() == dash + 1
    {
        return Err(format!("bad TASK-PID {task:?}"));
    }
    let rest = &l[open + 2..];
    let cpu = rest.get(..3).ok_or("short")?;
    if !cpu.chars().all(|c| c.is_ascii_digit()) || rest.get(3..5) != Some("] ") {
        return Err("bad [CPU]".into());
    }
    let flags = rest.get(5..10).ok_or("short flags")?;
    if !flags
        .chars()
        .all(|c| ".dNnphHsz0123456789abcdef".contains(c))
        || flags.len() != 5
    {
        return Err(format!("bad flags {flags:?}"));
    }
    let after = rest.get(10..).ok_or("short")?;
    if !after.starts_with(' ') {
        return Err("no space after flags".into());
    }
    let after = after.trim_start();
    let colon = after.find(": ").ok_or("no ': '")?;
    let ts = &after[..colon];
    let (secs, usecs) = ts.split_once('.').ok_or("timestamp without '.'")?;
    if secs.is_empty()
        || !secs.chars().all(|c| c.is_ascii_digit())
        || usecs.len() != 6
        || !usecs.chars().all(|c| c.is_ascii_digit())
    {
        return Err(format!("bad timestamp {ts:?}"));
    }
    Ok((cpu.parse().unwrap(), after[colon + 2..].to_string()))
}

/// `\S+ <-\S+`: the function and its parent.
fn func_parent(body: &str) -> Option<(&str, &str)> {
    let (f, p) = body.split_once(" <-")?;
    (!f.is_empty() && !p.is_empty() && !f.contains(' ') && !p.contains(' ')).then_some((f, p))
}

/// The header's `entries-in-buffer/entries-written: X/Y   #P:4` numbers.
fn entries(trace: &[String]) -> (u64, u64) {
    let l = &trace[2];
    let rest = l
        .strip_prefix("# entries-in-buffer/entries-written: ")
        .unwrap_or_else(|| panic!("{l}"));
    let (nums, cpus) = rest.split_once("   ").unwrap();
    assert_eq!(cpus, "#P:4", "{l}");
    let (a, b) = nums.split_once('/').unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

fn events(trace: &[String]) -> Vec<String> {
    trace
        .iter()
        .filter(|l| !l.starts_with('#'))
        .cloned()
        .collect()
}

/// Checks the header byte for byte and returns the event lines.
fn check_header(trace: &[String]) -> Vec<String> {
    assert_eq!(trace[0], "# tracer: function", "{trace:?}");
    assert_eq!(trace[1], "#");
    entries(trace);
    assert_eq!(trace[3..12].join("\n") + "\n", LEGEND);
    events(trace)
}

fn setup_filter(k: &mut Kernel, filter: &str) {
    let r = k.run(&format!("echo '{filter}' > {T}/set_ftrace_filter"));
    assert_eq!(r, "", "{filter}");
}

#[test]
fn function_trace_format_every_cpu_and_options() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    // A filter that keeps the trace small: one line per iteration per CPU,
    // plus the worker bodies.
    setup_filter(
        &mut k,
        "kernel::shell::work::compute_iteration kernel::shell::work::compute_leaf",
    );
    assert_eq!(k.run(&format!("echo function > {T}/current_tracer")), "");
    let w = k.run("work compute 5");
    assert!(w.starts_with("work compute: 4 cpus x 5 iterations"), "{w}");
    k.run(&format!("echo 0 > {T}/tracing_on"));
    let trace = lines(&k.run(&format!("cat {T}/trace")));
    let ev = check_header(&trace);
    let (in_buf, written) = entries(&trace);
    assert_eq!(in_buf as usize, ev.len(), "entries-in-buffer vs lines");
    assert_eq!(in_buf, written, "nothing was overwritten");
    let mut cpus = BTreeSet::new();
    let mut funcs = BTreeSet::new();
    for l in &ev {
        let (cpu, body) = parse_line(l).unwrap_or_else(|e| panic!("{e}: {l:?}"));
        cpus.insert(cpu);
        let (f, _parent) =
            func_parent(&body).unwrap_or_else(|| panic!("no 'func <-parent' in {l:?}"));
        funcs.insert(f.to_string());
        assert_eq!(l.trim_end(), l, "trailing spaces in {l:?}");
    }
    assert_eq!(cpus, (0..4).collect(), "lines from every CPU");
    let expect: BTreeSet<String> = [
        "kernel::shell::work::compute_iteration",
        "kernel::shell::work::compute_leaf",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(funcs, expect, "only the selected functions appear");
    // 5 iterations on each of 4 CPUs.
    let iters = ev
        .iter()
        .filter(|l| l.contains(": kernel::shell::work::compute_iteration <-"))
        .count();
    assert_eq!(iters, 20);
    // The same ring buffer through the per-line format: the comm of the
    // worker threads is known.
    assert!(
        ev.iter().all(|l| !l.trim_start().starts_with("<...>")),
        "unknown comm in {ev:?}"
    );

    // sym-offset (options file) and sym-addr (trace_options).
    k.run(&format!("echo 1 > {T}/options/sym-offset"));
    assert_eq!(k.run(&format!("cat {T}/options/sym-offset")), "1\n");
    let ev = events(&lines(&k.run(&format!("cat {T}/trace"))));
    for l in &ev {
        let (_, body) = parse_line(l).unwrap();
        let (f, p) = func_parent(&body).unwrap();
        for sym in [f, p] {
            let (_, off) = sym
                .rsplit_once('+')
                .unwrap_or_else(|| panic!("no +off in {l:?}"));
            let (a, b) = off
                .split_once('/')
                .unwrap_or_else(|| panic!("no /size in {l:?}"));
            assert!(a.starts_with("0x") && b.starts_with("0x"), "{l:?}");
        }
    }
    k.run(&format!("echo nosym-offset > {T}/trace_options"));
    k.run(&format!("echo sym-addr > {T}/trace_options"));
    let opts = lines(&k.run(&format!("cat {T}/trace_options")));
    assert!(
        opts.contains(&"sym-addr".to_string()) && opts.contains(&"nosym-offset".to_string()),
        "{opts:?}"
    );
    let ev = events(&lines(&k.run(&format!("cat {T}/trace"))));
    for l in &ev {
        assert!(l.contains(" <ffffffff8"), "no address with sym-addr: {l:?}");
    }
    k.run(&format!("echo nosym-addr > {T}/trace_options"));
    // print-parent off: only the function.
    k.run(&format!("echo 0 > {T}/options/print-parent"));
    let ev = events(&lines(&k.run(&format!("cat {T}/trace"))));
    for l in &ev {
        let (_, body) = parse_line(l).unwrap();
        assert!(
            !body.contains(" <-") && !body.contains(' '),
            "parent printed: {l:?}"
        );
    }
    k.run(&format!("echo 1 > {T}/options/print-parent"));

    // func_stack_trace: each event followed by a stack trace event.
    k.run(&format!("echo > {T}/trace"));
    setup_filter(&mut k, "kernel::shell::work::compute_iteration");
    k.run(&format!("echo 1 > {T}/options/func_stack_trace"));
    k.run(&format!("echo 1 > {T}/tracing_on"));
    k.run("work compute 1");
    k.run(&format!("echo 0 > {T}/tracing_on"));
    k.run(&format!("echo 0 > {T}/options/func_stack_trace"));
    let ev = events(&lines(&k.run(&format!("cat {T}/trace"))));
    let stacks = ev.iter().filter(|l| l.ends_with(": <stack trace>")).count();
    assert_eq!(stacks, 4, "one stack per compute_iteration call: {ev:#?}");
    let frames: Vec<&String> = ev.iter().filter(|l| l.starts_with(" => ")).collect();
    assert!(frames.len() >= 4, "{ev:#?}");
    assert!(
        frames.iter().any(|l| l.contains("kernel::shell::work::")),
        "the callers are listed: {frames:#?}"
    );
}

#[test]
fn tracing_on_stops_recording_nop_unpatches() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    let total: usize = lines(&k.run(&format!("cat {T}/available_filter_functions"))).len();
    k.run(&format!("echo function > {T}/current_tracer"));
    let enabled = lines(&k.run(&format!("cat {T}/enabled_functions")));
    assert_eq!(enabled.len(), total, "every site enabled with no filter");
    assert!(enabled.iter().all(|l| l.contains(" (1)")), "{enabled:?}");
    k.run(&format!("echo 0 > {T}/tracing_on"));
    let t1 = lines(&k.run(&format!("cat {T}/trace")));
    k.run("work compute 2");
    let t2 = lines(&k.run(&format!("cat {T}/trace")));
    assert_eq!(
        entries(&t1),
        entries(&t2),
        "recording went on with tracing_on 0"
    );
    // Still patched: the sites call ftrace_caller.
    assert_eq!(
        lines(&k.run(&format!("cat {T}/enabled_functions"))),
        enabled
    );
    let check = k.run("ftrace_check");
    assert!(
        check.contains(&format!(
            "{total} sites, 0 bad, {total} call ftrace_caller, 0 nop"
        )),
        "{check}"
    );
    k.run(&format!("echo 1 > {T}/tracing_on"));
    k.run("work compute 1");
    let t3 = lines(&k.run(&format!("cat {T}/trace")));
    assert!(entries(&t3).1 > entries(&t2).1, "recording resumes");
    k.run(&format!("echo nop > {T}/current_tracer"));
    assert_eq!(k.run(&format!("cat {T}/enabled_functions")), "");
    let check = k.run("ftrace_check");
    assert!(
        check.contains(&format!(
            "{total} sites, 0 bad, 0 call ftrace_caller, {total} nop"
        )),
        "{check}"
    );
}

/// The lines of available_filter_functions that `pred` accepts.
fn matching(all: &[String], pred: impl Fn(&str) -> bool) -> Vec<String> {
    all.iter().filter(|l| pred(l)).cloned().collect()
}

fn filter(k: &mut Kernel) -> Vec<String> {
    lines(&k.run(&format!("cat {T}/set_ftrace_filter")))
}

#[test]
fn filter_semantics() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    let all = lines(&k.run(&format!("cat {T}/available_filter_functions")));
    let all_set: BTreeSet<&String> = all.iter().collect();
    assert!(all.len() >= 300);
    assert_eq!(filter(&mut k), ["#### all functions enabled ####"]);
    let w = "kernel::shell::work::";

    // foo
    setup_filter(&mut k, &format!("{w}compute_leaf"));
    assert_eq!(filter(&mut k), [format!("{w}compute_leaf")]);
    // foo*
    setup_filter(&mut k, &format!("{w}compute_*"));
    let want = matching(&all, |l| l.starts_with(&format!("{w}compute_")));
    assert!(want.len() >= 4, "{want:?}");
    assert_eq!(filter(&mut k), want);
    // *foo
    setup_filter(&mut k, "*_leaf");
    assert_eq!(filter(&mut k), matching(&all, |l| l.ends_with("_leaf")));
    // *foo*
    setup_filter(&mut k, "*work::compute_l*");
    assert_eq!(
        filter(&mut k),
        matching(&all, |l| l.contains("work::compute_l"))
    );
    // [..] and ? globs
    setup_filter(&mut k, &format!("{w}compute_[lr]*"));
    assert_eq!(
        filter(&mut k),
        matching(&all, |l| l.starts_with(&format!("{w}compute_l"))
            || l.starts_with(&format!("{w}compute_r")))
    );
    setup_filter(&mut k, &format!("{w}compute_l?af"));
    assert_eq!(filter(&mut k), [format!("{w}compute_leaf")]);

    // Several names per write, `>>` appends, `!` removes.
    setup_filter(&mut k, &format!("{w}compute_leaf {w}compute_node"));
    let mut both = vec![format!("{w}compute_leaf"), format!("{w}compute_node")];
    both.sort_by_key(|n| all.iter().position(|a| a == n));
    assert_eq!(filter(&mut k), both);
    assert_eq!(
        k.run(&format!("echo {w}compute_left >> {T}/set_ftrace_filter")),
        ""
    );
    assert_eq!(filter(&mut k).len(), 3);
    assert_eq!(
        k.run(&format!("echo '!{w}compute_node' >> {T}/set_ftrace_filter")),
        ""
    );
    let now = filter(&mut k);
    assert_eq!(now.len(), 2);
    assert!(!now.contains(&format!("{w}compute_node")), "{now:?}");
    // `>` replaces.
    setup_filter(&mut k, &format!("{w}compute_right"));
    assert_eq!(filter(&mut k), [format!("{w}compute_right")]);

    // A name that matches nothing: EINVAL, and the filter is unchanged.
    let r = k.run(&format!(
        "echo no_such_function_anywhere > {T}/set_ftrace_filter"
    ));
    assert_eq!(clean(&r), "sh: write error: Invalid argument\n");
    assert_eq!(filter(&mut k), [format!("{w}compute_right")]);
    let r = k.run(&format!(
        "echo 'no_such_function_anywhere' >> {T}/set_ftrace_filter"
    ));
    assert_eq!(clean(&r), "sh: write error: Invalid argument\n");
    assert_eq!(filter(&mut k), [format!("{w}compute_right")]);

    // Empty: all functions again.
    assert_eq!(k.run(&format!("echo > {T}/set_ftrace_filter")), "");
    assert_eq!(filter(&mut k), ["#### all functions enabled ####"]);

    // Module form: every function of the crate module kernel::shell::work.
    setup_filter(&mut k, "*:mod:kernel::shell::work");
    // A plain module name selects the module and its submodules; for a
    // generic instance the module is the path before its last `::`.
    let want = matching(&all, |l| l.starts_with(w));
    let got = filter(&mut k);
    assert_eq!(got, want, "module form");
    assert!(got.iter().all(|l| all_set.contains(l)));

    // Only the selected functions are enabled and traced.
    setup_filter(&mut k, &format!("{w}compute_leaf {w}compute_iteration"));
    k.run(&format!("echo function > {T}/current_tracer"));
    let enabled = lines(&k.run(&format!("cat {T}/enabled_functions")));
    let names: Vec<&str> = enabled
        .iter()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{enabled:?}");
    assert!(
        names.contains(&&*format!("{w}compute_leaf"))
            && names.contains(&&*format!("{w}compute_iteration"))
    );
    let check = k.run("ftrace_check");
    assert!(check.contains(", 0 bad, 2 call ftrace_caller, "), "{check}");
    k.run("work compute 1");
    let ev = events(&lines(&k.run(&format!("cat {T}/trace"))));
    assert!(!ev.is_empty());
    for l in &ev {
        let (_, body) = parse_line(l).unwrap();
        let (f, _) = func_parent(&body).unwrap();
        assert!(
            f == format!("{w}compute_leaf") || f == format!("{w}compute_iteration"),
            "{l}"
        );
    }

    // set_ftrace_pid: only the shell (pid 1) is traced.
    setup_filter(&mut k, "");
    assert_eq!(
        lines(&k.run(&format!("cat {T}/set_ftrace_pid"))),
        ["no pid"]
    );
    assert_eq!(k.run(&format!("echo 1 > {T}/set_ftrace_pid")), "");
    assert_eq!(lines(&k.run(&format!("cat {T}/set_ftrace_pid"))), ["1"]);
    k.run(&format!("echo > {T}/trace"));
    k.run("work compute 1");
    k.run(&format!("echo 0 > {T}/tracing_on"));
    let ev = events(&lines(&k.run(&format!("cat {T}/trace"))));
    assert!(!ev.is_empty());
    for l in &ev {
        assert!(
            l.trim_start().starts_with("sh-1 "),
            "another task traced: {l}"
        );
    }
    k.run(&format!("echo > {T}/set_ftrace_pid"));
    assert_eq!(
        lines(&k.run(&format!("cat {T}/set_ftrace_pid"))),
        ["no pid"]
    );
    k.run(&format!("echo nop > {T}/current_tracer"));
    k.run(&format!("echo 1 > {T}/tracing_on"));

    // Probe commands and how they read back.
    let it = format!("{w}compute_iteration");
    setup_filter(&mut k, &format!("{it}:traceoff"));
    assert_eq!(
        filter(&mut k),
        [
            "#### all functions enabled ####".to_string(),
            format!("{it}:traceoff:unlimited")
        ]
    );
    assert_eq!(
        k.run(&format!("echo '!{it}:traceoff' >> {T}/set_ftrace_filter")),
        ""
    );
    assert_eq!(filter(&mut k), ["#### all functions enabled ####"]);
    setup_filter(&mut k, &format!("{it}:traceoff:3"));
    assert_eq!(filter(&mut k)[1], format!("{it}:traceoff:count=3"));
    // A counted probe is another probe than the unlimited one (Linux's
    // traceoff_count_probe_ops): `!func:cmd` does not remove it, `!func:cmd:0` does.
    let r = k.run(&format!("echo '!{it}:traceoff' >> {T}/set_ftrace_filter"));
    assert_eq!(r.replace('\r', ""), "sh: write error: Invalid argument\n");
    assert_eq!(
        k.run(&format!("echo '!{it}:traceoff:0' >> {T}/set_ftrace_filter")),
        ""
    );
    setup_filter(&mut k, &format!("{it}:traceon:2"));
    assert_eq!(filter(&mut k)[1], format!("{it}:traceon:count=2"));
    assert_eq!(
        k.run(&format!("echo '!{it}:traceon:0' >> {T}/set_ftrace_filter")),
        ""
    );
    setup_filter(&mut k, &format!("{it}:stacktrace"));
    assert_eq!(filter(&mut k)[1], format!("{it}:stacktrace:unlimited"));
    assert_eq!(
        k.run(&format!("echo '!{it}:stacktrace' >> {T}/set_ftrace_filter")),
        ""
    );
    assert_eq!(filter(&mut k), ["#### all functions enabled ####"]);

    // traceoff fires: tracing_on goes to 0 when the function runs (probes
    // work whatever the current tracer).
    setup_filter(&mut k, &format!("{it}:traceoff"));
    assert_eq!(k.run(&format!("cat {T}/tracing_on")), "1\n");
    k.run("work compute 1");
    assert_eq!(k.run(&format!("cat {T}/tracing_on")), "0\n");
    // traceon:1 turns it back on once.
    assert_eq!(
        k.run(&format!("echo '!{it}:traceoff' >> {T}/set_ftrace_filter")),
        ""
    );
    setup_filter(&mut k, &format!("{it}:traceon:1"));
    k.run("work compute 1");
    assert_eq!(k.run(&format!("cat {T}/tracing_on")), "1\n");
    assert_eq!(filter(&mut k)[1], format!("{it}:traceon:count=0"));
    assert_eq!(
        k.run(&format!("echo '!{it}:traceon:0' >> {T}/set_ftrace_filter")),
        ""
    );
    // A probe that matches nothing is an error too.
    let r = k.run(&format!(
        "echo 'no_such_function_anywhere:traceoff' > {T}/set_ftrace_filter"
    ));
    assert_eq!(clean(&r), "sh: write error: Invalid argument\n");
    // Probes gone: no site left patched.
    let check = k.run("ftrace_check");
    assert!(check.contains(", 0 bad, 0 call ftrace_caller, "), "{check}");
}
