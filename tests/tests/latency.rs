//! QEMU tests of the latency tracers (Linux: trace_irqsoff.c, and trace.c
//! under CONFIG_TRACER_MAX_TRACE):
//! - `tracing_max_latency` in every trace array and `tracing_thresh` at the
//!   top, both in µs, with Linux's errors (a sign or text: EINVAL, more
//!   than 64 bits: ERANGE, nothing changed);
//! - irqsoff, preemptoff and preemptirqsoff on the shell's `latency`
//!   workloads: after a spin of N µs the maximum is at least N (and not
//!   wildly more: the host may deschedule a virtual CPU, so the bound is
//!   generous), `trace` shows the spare buffer with the latency header
//!   naming the spinning function at `started at:` / `ended at:`, the
//!   functions called inside the section (`function-trace`) and a stack
//!   trace; a shorter section does not replace it, writing 0 resets it,
//!   `tracing_thresh` keeps every section above it even when shorter than
//!   the maximum; the forced options and their restoration, EBUSY for the
//!   snapshot files and a second array, EINVAL for clearing `overwrite`;
//!   in an instance, the functions of the instance's own filter;
//! - `display-graph`: the functions inside the section as a call graph
//!   with Linux's columns, the switch restarting the tracer, and the
//!   function-graph core's one user at a time (the profiler: EINVAL/EBUSY).

use std::time::Duration;

use tests::Kernel;

const T: &str = "/tracing";
const EINVAL: &str = "sh: write error: Invalid argument\n";
const ERANGE: &str = "sh: write error: Numerical result out of range\n";

fn run(k: &mut Kernel, cmd: &str) -> String {
    k.run(cmd).replace('\r', "")
}

#[test]
fn max_latency_and_thresh_files() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    for dir in [T.to_string(), format!("{T}/instances/foo")] {
        if dir.contains("instances") {
            assert_eq!(run(&mut k, &format!("mkdir {dir}")), "");
        }
        let f = format!("{dir}/tracing_max_latency");
        assert_eq!(run(&mut k, &format!("cat {f}")), "0\n", "{f}");
        assert_eq!(run(&mut k, &format!("echo 250 > {f}")), "");
        assert_eq!(run(&mut k, &format!("cat {f}")), "250\n");
        for (bad, err) in [
            ("-1", EINVAL),
            ("abc", EINVAL),
            ("' 5'", EINVAL),
            ("18446744073709551616", ERANGE),
        ] {
            assert_eq!(run(&mut k, &format!("echo {bad} > {f}")), err, "{bad}");
            assert_eq!(run(&mut k, &format!("cat {f}")), "250\n", "{bad}");
        }
        // µs are multiplied by 1000 in 64 bits, as Linux does.
        assert_eq!(run(&mut k, &format!("echo 18446744073709551615 > {f}")), "");
        assert_eq!(run(&mut k, &format!("cat {f}")), "18446744073709550\n");
        // Writing 0 resets the maximum.
        assert_eq!(run(&mut k, &format!("echo 0 > {f}")), "");
        assert_eq!(run(&mut k, &format!("cat {f}")), "0\n");
    }
    // The two arrays' maxima are their own.
    assert_eq!(
        run(&mut k, &format!("echo 7 > {T}/tracing_max_latency")),
        ""
    );
    assert_eq!(
        run(
            &mut k,
            &format!("cat {T}/instances/foo/tracing_max_latency")
        ),
        "0\n"
    );
    // tracing_thresh is global: the top level only.
    assert_eq!(run(&mut k, &format!("cat {T}/tracing_thresh")), "0\n");
    assert_eq!(run(&mut k, &format!("echo 100 > {T}/tracing_thresh")), "");
    assert_eq!(run(&mut k, &format!("cat {T}/tracing_thresh")), "100\n");
    assert_eq!(run(&mut k, &format!("echo x > {T}/tracing_thresh")), EINVAL);
    assert_eq!(run(&mut k, &format!("cat {T}/tracing_thresh")), "100\n");
    assert_eq!(run(&mut k, &format!("echo 0 > {T}/tracing_thresh")), "");
    assert!(run(&mut k, &format!("ls {T}/instances/foo/tracing_thresh")).contains("No such file"));

    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}

/// The number after `# latency: ` in the latency header.
fn header_latency(trace: &str) -> u64 {
    let l = trace
        .lines()
        .find(|l| l.starts_with("# latency: "))
        .unwrap_or_else(|| panic!("no latency line in\n{trace}"));
    l["# latency: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn max_latency(k: &mut Kernel) -> u64 {
    run(k, &format!("cat {T}/tracing_max_latency"))
        .trim()
        .parse()
        .unwrap()
}

/// A spin of `us` µs gave a maximum of at least `us` and at most what a
/// busy host can add to it.
fn assert_near(got: u64, us: u64) {
    assert!(
        got >= us && got < us * 5 + 100_000,
        "a spin of {us} us gave {got}"
    );
}

const SHELL: &str = "kernel::shell::latency";

#[test]
fn irqsoff_and_preemptoff_keep_the_longest_section() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    assert_eq!(run(&mut k, &format!("cd {T}")), "");
    let tracers = run(&mut k, "cat available_tracers");
    for t in ["irqsoff", "preemptoff", "preemptirqsoff"] {
        assert!(tracers.split_whitespace().any(|w| w == t), "{tracers}");
    }
    for (opt, v) in [
        ("latency-format", "0"),
        ("pause-on-trace", "0"),
        ("overwrite", "1"),
        ("function-trace", "1"),
    ] {
        assert_eq!(run(&mut k, &format!("cat options/{opt}")), format!("{v}\n"));
    }
    assert_eq!(run(&mut k, "echo 123 > tracing_max_latency"), "");
    // (Made first: allocating its buffers keeps interrupts off for long.)
    assert_eq!(run(&mut k, "mkdir instances/foo"), "");

    // irqsoff forces its options (and resets the maximum, which the
    // interrupts' own short sections then raise at once).
    assert_eq!(run(&mut k, "echo irqsoff > current_tracer"), "");
    for opt in ["latency-format", "pause-on-trace", "overwrite"] {
        assert_eq!(run(&mut k, &format!("cat options/{opt}")), "1\n", "{opt}");
    }
    // overwrite cannot be cleared meanwhile, and the spare buffer is the
    // tracer's.
    assert_eq!(run(&mut k, "echo 0 > options/overwrite"), EINVAL);
    assert_eq!(run(&mut k, "echo nooverwrite > trace_options"), EINVAL);
    assert_eq!(run(&mut k, "cat options/overwrite"), "1\n");
    let ebusy = "sh: write error: Device or resource busy\n";
    assert_eq!(run(&mut k, "echo 1 > snapshot"), ebusy);
    assert!(run(&mut k, "cat snapshot").contains("Device or resource busy"));
    assert_eq!(
        run(&mut k, "echo preemptoff > instances/foo/current_tracer"),
        ebusy
    );
    assert_eq!(run(&mut k, "cat instances/foo/current_tracer"), "nop\n");

    // A spin of 20 ms with interrupts off.
    let us = 20_000;
    let trace = latency_section(&mut k, "irqsoff", us);
    let max = max_latency(&mut k);
    assert_near(max, us);
    let lines: Vec<&str> = trace.lines().collect();
    assert_eq!(lines[0], "# tracer: irqsoff", "{trace}");
    assert!(
        lines[2].starts_with("# irqsoff latency trace v1.1.5 on "),
        "{trace}"
    );
    assert_eq!(header_latency(&trace), max, "{trace}");
    assert!(lines[6].starts_with("#    | task: sh-"), "{trace}");
    assert_eq!(
        lines[8],
        format!("#  => started at: {SHELL}::latency_spin_irqsoff")
    );
    assert_eq!(
        lines[9],
        format!("#  => ended at:   {SHELL}::latency_spin_irqsoff")
    );
    // The events: the start at 0 µs (time is counted from the start), the
    // functions inside, the stop, the stack trace.
    let events: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.starts_with('#'))
        .collect();
    let start = " 0d....    0us".to_string();
    assert!(events[0].contains(&start), "{trace}");
    assert!(
        events[0].ends_with(&format!(
            ": {SHELL}::irqsoff_section <-{SHELL}::latency_spin_irqsoff"
        )),
        "{trace}"
    );
    assert!(
        events.iter().any(|l| l.ends_with(&format!(
            ": {SHELL}::latency_spin_step <-{SHELL}::irqsoff_section"
        ))),
        "{trace}"
    );
    assert!(
        events.iter().any(|l| l.ends_with(&format!(
            "tracer_hardirqs_on <-{SHELL}::latency_spin_irqsoff"
        ))),
        "{trace}"
    );
    let stack = events
        .iter()
        .position(|l| l.ends_with(": <stack trace>"))
        .unwrap();
    assert_eq!(events[stack + 1], format!(" => {SHELL}::irqsoff_section"));
    assert_eq!(
        events[stack + 2],
        format!(" => {SHELL}::latency_spin_irqsoff")
    );

    // A shorter section is not a new maximum: the trace stays.
    assert_eq!(run(&mut k, "latency irqsoff 1000"), "");
    assert_eq!(max_latency(&mut k), max);
    assert_eq!(header_latency(&run(&mut k, "cat trace")), max);

    // Without function-trace only the start, the stop and the stack.
    assert_eq!(run(&mut k, "echo 0 > options/function-trace"), "");
    let trace = latency_section(&mut k, "irqsoff", us);
    assert!(!trace.contains("latency_spin_step"), "{trace}");
    assert!(trace.contains("#4/4, CPU#"), "{trace}");
    assert_eq!(run(&mut k, "echo 1 > options/function-trace"), "");

    // preemptoff: the tracer switch keeps the forced options on and
    // starts from 0; interrupts are on in the section (the `d` column).
    assert_eq!(run(&mut k, "echo preemptoff > current_tracer"), "");
    assert_eq!(run(&mut k, "cat tracing_max_latency"), "0\n");
    let trace = latency_section(&mut k, "preemptoff", us);
    let max = max_latency(&mut k);
    assert_near(max, us);
    assert!(
        trace.contains("# preemptoff latency trace v1.1.5"),
        "{trace}"
    );
    assert!(
        trace.contains(&format!(
            "#  => started at: {SHELL}::latency_spin_preemptoff\n"
        )),
        "{trace}"
    );
    assert!(
        trace.contains(&format!(
            "#  => ended at:   {SHELL}::latency_spin_preemptoff\n"
        )),
        "{trace}"
    );
    let first = trace.lines().find(|l| !l.starts_with('#')).unwrap();
    assert!(
        first.contains(&format!(
            ": {SHELL}::preemptoff_section <-{SHELL}::latency_spin_preemptoff"
        )),
        "{trace}"
    );
    assert_eq!(&first[20..21], ".", "interrupts were on: {first}");
    assert_eq!(&first[23..24], "1", "preempt depth 1: {first}");

    // tracing_thresh: every section above it is kept, even one shorter
    // than the maximum (no other code here keeps preemption off that long).
    assert_eq!(run(&mut k, "echo 10000 > tracing_thresh"), "");
    assert_eq!(run(&mut k, "latency preemptoff 40000"), "");
    assert_near(max_latency(&mut k), 40_000);
    assert_eq!(run(&mut k, "latency preemptoff 15000"), "");
    let shorter = max_latency(&mut k);
    assert!((15_000..40_000).contains(&shorter), "{shorter}");
    assert_eq!(header_latency(&run(&mut k, "cat trace")), shorter);
    // Below the threshold: nothing kept.
    assert_eq!(run(&mut k, "latency preemptoff 2000"), "");
    assert_eq!(max_latency(&mut k), shorter);
    assert_eq!(run(&mut k, "echo 0 > tracing_thresh"), "");

    // preemptirqsoff: a preemption-off section counts.
    assert_eq!(run(&mut k, "echo preemptirqsoff > current_tracer"), "");
    let trace = latency_section(&mut k, "preemptoff", us);
    assert!(
        trace.contains("# preemptirqsoff latency trace v1.1.5"),
        "{trace}"
    );
    assert!(max_latency(&mut k) >= us);

    // Back to nop: the options as they were, the spare given back, the
    // snapshot file usable again, the instance free to use the tracer.
    assert_eq!(run(&mut k, "echo nop > current_tracer"), "");
    for (opt, v) in [
        ("latency-format", "0"),
        ("pause-on-trace", "0"),
        ("overwrite", "1"),
    ] {
        assert_eq!(
            run(&mut k, &format!("cat options/{opt}")),
            format!("{v}\n"),
            "{opt}"
        );
    }
    assert!(run(&mut k, "cat snapshot").contains("# * Snapshot is freed *"));
    assert_eq!(
        run(&mut k, "echo irqsoff > instances/foo/current_tracer"),
        ""
    );
    let trace = latency_section_in(&mut k, "instances/foo/", "irqsoff", 5000);
    assert!(max_latency_of(&mut k, "instances/foo") >= 5000);
    // The functions inside, as at the top level (Linux: the instance's
    // tr->ops), on the instance's own filter.
    assert!(
        trace.contains(&format!(
            ": {SHELL}::latency_spin_step <-{SHELL}::irqsoff_section"
        )),
        "{trace}"
    );
    assert_eq!(
        run(
            &mut k,
            "echo '*calltree_leaf' > instances/foo/set_ftrace_filter"
        ),
        ""
    );
    let trace = latency_section_in(&mut k, "instances/foo/", "irqsoff", 20000);
    assert!(max_latency_of(&mut k, "instances/foo") >= 20000);
    assert!(trace.contains("# irqsoff latency trace"), "{trace}");
    assert!(!trace.contains("latency_spin_step"), "{trace}");
    assert_eq!(run(&mut k, "echo nop > instances/foo/current_tracer"), "");
    assert_eq!(run(&mut k, "rmdir instances/foo"), "");

    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}

/// A return probe on the function that turns interrupts off: its return
/// address is `rethook_trampoline` during the section, and the section
/// still starts and ends at the real caller (irqflags' caller look-up
/// goes through the task's rethook stack as through the shadow stack), as
/// do the traced functions' parents.
#[test]
fn a_return_probe_on_the_section_function() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    assert_eq!(run(&mut k, &format!("cd {T}")), "");
    assert_eq!(
        run(
            &mut k,
            &format!("echo 'r:lat {SHELL}::irqsoff_section $retval' > kprobe_events")
        ),
        ""
    );
    assert_eq!(run(&mut k, "echo 1 > events/kprobes/lat/enable"), "");
    assert_eq!(run(&mut k, "echo irqsoff > current_tracer"), "");
    // latency_section checks `=> started at:` (the caller of the section).
    let trace = latency_section(&mut k, "irqsoff", 5_000);
    assert!(
        trace.contains(&format!(
            "#  => ended at:   {SHELL}::latency_spin_irqsoff\n"
        )),
        "{trace}"
    );
    assert!(
        trace.contains(&format!(
            ": {SHELL}::irqsoff_section <-{SHELL}::latency_spin_irqsoff\n"
        )),
        "{trace}"
    );
    assert!(!trace.contains("rethook_trampoline"), "{trace}");
    assert_eq!(run(&mut k, "echo nop > current_tracer"), "");
    assert_eq!(run(&mut k, "echo 0 > events/kprobes/lat/enable"), "");
    // The probe saw the returns.
    let prof = run(&mut k, "cat kprobe_profile");
    let hits: u64 = prof
        .split_whitespace()
        .nth(1)
        .and_then(|h| h.parse().ok())
        .unwrap_or_else(|| panic!("{prof}"));
    assert!(hits >= 1, "{prof}");
    assert_eq!(run(&mut k, "echo > kprobe_events"), "");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}

fn max_latency_of(k: &mut Kernel, dir: &str) -> u64 {
    run(k, &format!("cat {dir}/tracing_max_latency"))
        .trim()
        .parse()
        .unwrap()
}

/// `N jmp` of a `jump_label_check` line: the static-key sites turned on.
fn jmp_sites(k: &mut Kernel) -> String {
    let l = run(k, "jump_label_check");
    assert!(l.contains(" 0 bad,"), "{l}");
    l.split(", ")
        .find(|p| p.ends_with(" jmp"))
        .unwrap()
        .to_string()
}

/// The latency tracers, `function` and `nop` switched over and over while
/// every CPU of 4 runs the compute load and the spins: no fault, the
/// results right, and back at `nop` every static key and every ftrace site
/// as at boot (no probe left on a preemptirq tracepoint, no ops left).
#[test]
fn switching_tracers_under_load_leaves_nothing_behind() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    assert_eq!(run(&mut k, &format!("cd {T}")), "");
    let keys = jmp_sites(&mut k);
    let reference = run(&mut k, "work compute 20");
    assert!(
        reference.starts_with("work compute: 4 cpus x 20 iterations, result "),
        "{reference}"
    );
    for round in 0..3 {
        for t in [
            "irqsoff",
            "function",
            "preemptirqsoff",
            "preemptoff",
            "nop",
            "irqsoff",
        ] {
            assert_eq!(
                run(&mut k, &format!("echo {t} > current_tracer")),
                "",
                "{t}"
            );
            assert_eq!(
                run(&mut k, "work compute 20"),
                reference,
                "{t}, round {round}"
            );
            assert_eq!(run(&mut k, "latency irqsoff 300"), "");
            assert_eq!(run(&mut k, "latency preemptoff 300"), "");
        }
    }
    assert_eq!(run(&mut k, "echo nop > current_tracer"), "");
    assert_eq!(jmp_sites(&mut k), keys);
    let fc = run(&mut k, "ftrace_check");
    assert!(fc.contains(" 0 bad, 0 call ftrace_caller,"), "{fc}");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}

/// Runs `latency KIND us` until the recorded section is the command's own
/// (`started at:` its spinning function), at most 5 times, each time from a
/// maximum of 0, and returns `cat trace`. On a loaded host a vCPU can be
/// descheduled inside some other short section (an interrupt, a text
/// patch's IPI wait) for longer than the spin; that section is then the
/// longest, as it should be, but not the one the test looks at. A
/// function-graph user hijacking the spinning function's return (the
/// profiler) must not change the name: the start is the real caller.
fn latency_section(k: &mut Kernel, kind: &str, us: u64) -> String {
    latency_section_in(k, "", kind, us)
}

/// [`latency_section`] in the trace array of directory `dir` ("" for the
/// top level, or `instances/NAME/`). Besides a stretched section, a
/// section is also dropped, as on Linux, when another CPU recorded a new
/// maximum while it ran (`critical_sequence` no longer `max_sequence`):
/// right after the maximum is set to 0, other CPUs' short interrupt
/// sections do that.
fn latency_section_in(k: &mut Kernel, dir: &str, kind: &str, us: u64) -> String {
    let mut trace = String::new();
    for _ in 0..5 {
        assert_eq!(run(k, &format!("echo 0 > {dir}tracing_max_latency")), "");
        assert_eq!(run(k, &format!("latency {kind} {us}")), "");
        trace = run(k, &format!("cat {dir}trace"));
        if trace.contains(&format!("=> started at: {SHELL}::latency_spin_{kind}\n")) {
            return trace;
        }
    }
    panic!(
        "5 runs of latency {kind} {us} and the section recorded is never the command's:\n{trace}"
    );
}

/// The graph lines of `trace` (after the column titles) that call `func`
/// as a leaf: (REL TIME µs, duration µs).
fn graph_leaves(trace: &str, func: &str) -> Vec<(u64, f64)> {
    trace
        .lines()
        .filter(|l| !l.starts_with('#') && l.ends_with(&format!("  {func}();")))
        .map(|l| {
            // `%9llu us |  ` ` %d) ` `comm-pid` ` | ` ` flags | ` `  D us    |  `
            let rel: u64 = l[..9].trim().parse().unwrap_or_else(|_| panic!("{l:?}"));
            assert_eq!(&l[9..15], " us | ", "{l:?}");
            let cols: Vec<&str> = l.split(" | ").collect();
            let dur = cols[3]
                .trim()
                .strip_suffix(" us")
                .and_then(|d| d.trim().parse().ok())
                .unwrap_or_else(|| panic!("{l:?}"));
            (rel, dur)
        })
        .collect()
}

/// display-graph: the section's functions printed as function_graph
/// prints them, with Linux's latency columns (Linux: irqsoff_print_line,
/// print_graph_function_flags with CPU, PROC, REL_TIME and DURATION);
/// switching it restarts the tracer; one user of the function-graph core
/// at a time.
#[test]
fn irqsoff_display_graph() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    assert_eq!(run(&mut k, &format!("cd {T}")), "");
    assert_eq!(run(&mut k, "cat options/display-graph"), "0\n");
    assert_eq!(run(&mut k, "echo irqsoff > current_tracer"), "");
    let us = 20_000;
    latency_section(&mut k, "irqsoff", us);
    assert_near(max_latency(&mut k), us);

    // Setting it restarts the tracer: the maximum starts over (the
    // interrupts' own short sections raise it again at once).
    assert_eq!(run(&mut k, "echo display-graph > trace_options"), "");
    assert_eq!(run(&mut k, "cat options/display-graph"), "1\n");
    assert!(max_latency(&mut k) < us);
    let trace = latency_section(&mut k, "irqsoff", us);
    let max = max_latency(&mut k);
    assert_near(max, us);
    let lines: Vec<&str> = trace.lines().collect();
    assert_eq!(lines[0], "# tracer: irqsoff", "{trace}");
    assert!(
        lines[2].starts_with("# irqsoff latency trace v1.1.5 on "),
        "{trace}"
    );
    assert_eq!(header_latency(&trace), max, "{trace}");
    assert_eq!(
        lines[8],
        format!("#  => started at: {SHELL}::latency_spin_irqsoff")
    );
    let sp = " ".repeat(37);
    for (i, want) in [
        format!("#{sp}  _-----=> irqs-off        "),
        format!("#{sp} / _----=> need-resched    "),
        format!("#{sp}| / _---=> hardirq/softirq "),
        format!("#{sp}|| / _--=> preempt-depth   "),
        format!("#{sp}||| /                      "),
        "#   REL TIME      CPU  TASK/PID       ||||     DURATION                  FUNCTION CALLS"
            .to_string(),
        "#      |          |     |    |        ||||      |   |                     |   |   |   |"
            .to_string(),
    ]
    .iter()
    .enumerate()
    {
        // After print_trace_header's two closing `#` lines.
        assert_eq!(lines[12 + i], want, "{trace}");
    }
    // The start: a zero-length call at 0 µs, interrupts off.
    let first = lines[19];
    assert!(first.starts_with("        0 us |  "), "{trace}");
    assert!(
        first.ends_with(&format!("  0.000 us    |  {SHELL}::irqsoff_section();")),
        "{trace}"
    );
    assert!(first.contains(" |  d"), "interrupts off: {first}");
    // The spinning function, once per 50 µs step, each with its duration,
    // inside the section.
    let steps = graph_leaves(&trace, &format!("{SHELL}::latency_spin_step"));
    assert!(steps.len() >= 100, "{} steps in\n{trace}", steps.len());
    assert!(steps.windows(2).all(|w| w[0].0 <= w[1].0), "{trace}");
    assert!(steps.iter().all(|&(rel, _)| rel <= max), "{trace}");
    let total: f64 = steps.iter().map(|s| s.1).sum();
    assert!(total > 0.0 && total < max as f64, "{total} of {max} us");
    // No function line of the plain format, and the stack trace as usual.
    assert!(!trace.contains("latency_spin_step <-"), "{trace}");
    assert!(trace.contains(": <stack trace>"), "{trace}");
    assert!(
        trace.contains(&format!("\n => {SHELL}::latency_spin_irqsoff\n")),
        "{trace}"
    );

    // One user of the function-graph core at a time (Linux 6.1): the
    // profiler cannot start meanwhile...
    let ebusy = "sh: write error: Device or resource busy\n";
    assert_eq!(run(&mut k, "echo 1 > function_profile_enabled"), ebusy);
    assert_eq!(run(&mut k, "cat function_profile_enabled"), "0\n");
    // ...and, cleared, the tracer goes back to function records.
    assert_eq!(run(&mut k, "echo 0 > options/display-graph"), "");
    let trace = latency_section(&mut k, "irqsoff", us);
    assert!(!trace.contains("FUNCTION CALLS"), "{trace}");
    assert!(
        trace.contains(&format!(
            ": {SHELL}::latency_spin_step <-{SHELL}::irqsoff_section"
        )),
        "{trace}"
    );
    // With the profiler holding the core, setting display-graph is
    // refused (Linux: the tracer's flag_changed fails, EINVAL) and the
    // tracer keeps recording functions.
    assert_eq!(run(&mut k, "echo 1 > function_profile_enabled"), "");
    assert_eq!(run(&mut k, "echo 1 > options/display-graph"), EINVAL);
    assert_eq!(run(&mut k, "cat options/display-graph"), "0\n");
    let trace = latency_section(&mut k, "irqsoff", us);
    assert!(trace.contains("latency_spin_step <-"), "{trace}");
    assert_eq!(run(&mut k, "echo 0 > function_profile_enabled"), "");

    // Selected with display-graph already set, it starts in graph mode.
    assert_eq!(run(&mut k, "echo nop > current_tracer"), "");
    assert_eq!(run(&mut k, "echo 1 > options/display-graph"), "");
    assert_eq!(run(&mut k, "echo preemptoff > current_tracer"), "");
    let trace = latency_section(&mut k, "preemptoff", us);
    assert!(trace.contains("# preemptoff latency trace"), "{trace}");
    assert!(
        graph_leaves(&trace, &format!("{SHELL}::latency_spin_step")).len() >= 100,
        "{trace}"
    );
    assert_eq!(run(&mut k, "echo nop > current_tracer"), "");
    assert_eq!(run(&mut k, "echo 0 > options/display-graph"), "");

    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}
