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
const TOUCH: &str = "kernel::shell::commands::touch";
const ENOMEM: &str = "sh: write error: Cannot allocate memory\n";

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

/// Numbers out of range in the tracing files, answered as Linux 6.1 does
/// (checked with /work/shared/linux/qemu.sh): `max_graph_depth` keeps the
/// low 32 bits and shows them as an `int`, `tracing_thresh` multiplies by
/// 1000 in 64 bits, a probe count lives in a `long`; above ULONG_MAX is
/// ERANGE, a sign or a space EINVAL, and only the first 66 bytes of a write
/// are read. Then command lines: a 20 KB `echo` reaches its file whole, a
/// line over the 64 KiB limit is refused with an error, not cut.
#[test]
fn numbers_out_of_range_and_long_lines() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    quiet(&mut k, "cd /tracing");
    let erange = "sh: write error: Numerical result out of range\n";
    let einval = "sh: write error: Invalid argument\n";
    for (input, err, shown) in [
        ("4294967295", "", "-1"),
        ("4294967296", "", "0"),
        ("4294967297", "", "1"),
        ("2147483648", "", "-2147483648"),
        ("18446744073709551615", "", "-1"),
        ("18446744073709551616", erange, "-1"),
        ("-1", einval, "-1"),
        ("' 7'", einval, "-1"),
        ("0x10", einval, "-1"),
        // The 7 is the 67th byte: never read, so this is 0.
        (&format!("{}7", "0".repeat(66)), "", "0"),
        (&format!("{}7", "0".repeat(65)), "", "7"),
    ] {
        assert_eq!(
            run(&mut k, &format!("echo {input} > max_graph_depth")),
            err,
            "{input}"
        );
        assert_eq!(
            run(&mut k, "cat max_graph_depth"),
            format!("{shown}\n"),
            "{input}"
        );
    }
    quiet(&mut k, "echo 0 > max_graph_depth");
    for (input, err, shown) in [
        ("18446744073709551615", "", "18446744073709550"),
        ("18446744073709552", "", "0"),
        ("18446744073709551616", erange, "0"),
        ("9223372036854776", "", "9223372036854776"),
        ("-5", einval, "9223372036854776"),
    ] {
        assert_eq!(
            run(&mut k, &format!("echo {input} > tracing_thresh")),
            err,
            "{input}"
        );
        assert_eq!(
            run(&mut k, "cat tracing_thresh"),
            format!("{shown}\n"),
            "{input}"
        );
    }
    quiet(&mut k, "echo 0 > tracing_thresh");

    let touch = "kernel::shell::commands::touch";
    quiet(
        &mut k,
        &format!("echo {touch}:traceoff:18446744073709551615 > set_ftrace_filter"),
    );
    let listed = format!("#### all functions enabled ####\n{touch}:traceoff:count=-1\n");
    assert_eq!(run(&mut k, "cat set_ftrace_filter"), listed);
    for (count, err) in [
        ("18446744073709551616", erange),
        ("-3", einval),
        ("08", einval),
        // Every function has this probe already: nothing added.
        ("5", einval),
    ] {
        let cmd = format!("echo {touch}:traceoff:{count} >> set_ftrace_filter");
        assert_eq!(run(&mut k, &cmd), err, "{count}");
        assert_eq!(run(&mut k, "cat set_ftrace_filter"), listed, "{count}");
    }
    // A count of -1 never turns tracing off.
    quiet(&mut k, "touch /tmp/t");
    assert_eq!(run(&mut k, "cat tracing_on"), "1\n");
    quiet(
        &mut k,
        &format!("echo '!{touch}:traceoff:0' >> set_ftrace_filter"),
    );
    quiet(&mut k, "cd /");

    // A 20 KB line: the redirection is kept and every byte arrives.
    let payload: String = (0..20_000)
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    quiet(&mut k, &format!("echo {payload} > /tmp/long"));
    assert_eq!(run(&mut k, "wc -c /tmp/long"), "20001 /tmp/long\n");
    assert_eq!(run(&mut k, "cat /tmp/long"), format!("{payload}\n"));
    // Over the limit: refused whole, with an error, and nothing runs.
    let over = format!("echo {} > /tmp/over", "x".repeat(70_000));
    k.send(format!("{over}\n").as_bytes());
    let out = clean(&k.wait_prompt(Duration::from_secs(120)));
    let error = format!(
        "sh: line too long: {} bytes (at most 65536), not run\n/ # ",
        over.len()
    );
    assert!(
        out.ends_with(&error),
        "{}",
        &out[out.len().saturating_sub(200)..]
    );
    assert_eq!(
        run(&mut k, "cat /tmp/over"),
        "cat: /tmp/over: No such file or directory\n"
    );
    assert_eq!(run(&mut k, "echo still here"), "still here\n");

    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}

/// Malformed writes to the control files, each answered as Linux 6.1 answers
/// it (checked with /work/shared/linux/qemu.sh), with the file read back
/// after it: an error changes nothing (`>>` where Linux's `>` would empty
/// the file at open). `current_tracer` strips spaces on
/// both sides (`strim()`); `buffer_size_kb` turns KiB into bytes and bytes
/// into pages in 64 bits that wrap, so 18446744073709551615 KiB is the
/// 2-page minimum while a little less is ENOMEM; pid 4194304
/// (PID_MAX_LIMIT) in `set_ftrace_pid` reads back as `no pid`; a Rust path
/// is a function in `stack_trace_filter`, as in `set_ftrace_filter`; an
/// instance has no `options/trace_printk` (TOP_LEVEL_TRACE_FLAGS) nor
/// function_graph's options (it cannot run there). The rest
/// are the numbers, names and busy files whose answers already matched.
#[test]
fn bad_writes_answer_as_linux() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let einval = "sh: write error: Invalid argument\n";
    let enomem = ENOMEM;
    let ebusy = "sh: write error: Device or resource busy\n";
    let enodev = "sh: write error: No such device\n";
    quiet(&mut k, "cd /tracing");
    // Each (file, write, error printed, file read back after it).
    let cases: &[(&str, &str, &str, &str)] = &[
        ("current_tracer", "'  nop  '", "", "nop\n"),
        ("current_tracer", "' function '", "", "function\n"),
        ("current_tracer", "'function_graph x'", einval, "function\n"),
        ("current_tracer", "''", einval, "function\n"),
        ("current_tracer", "-n ''", "", "function\n"),
        ("current_tracer", "nop", "", "nop\n"),
        ("tracing_on", "2", "", "1\n"),
        ("tracing_on", "-1", einval, "1\n"),
        ("tracing_on", "abc", einval, "1\n"),
        ("tracing_on", "'1 2'", einval, "1\n"),
        ("tracing_on", "0x1", einval, "1\n"),
        ("tracing_on", "''", einval, "1\n"),
        ("tracing_on", "-n ''", "", "1\n"),
        ("buffer_size_kb", "100", "", "103\n"),
        ("buffer_size_kb", "18446744073709551611", enomem, "103\n"),
        ("buffer_size_kb", "18446744073709551615", "", "7\n"),
        ("buffer_size_kb", "100", "", "103\n"),
        ("buffer_size_kb", "18014398509481984", "", "7\n"),
        ("buffer_size_kb", "100", "", "103\n"),
        ("buffer_size_kb", "'100 x'", einval, "103\n"),
        ("buffer_size_kb", "-n ''", "", "103\n"),
        (
            "per_cpu/cpu1/buffer_size_kb",
            "18446744073709551615",
            "",
            "7\n",
        ),
        ("buffer_size_kb", "-n ''", "", "X\n"),
        ("buffer_total_size_kb", "5", einval, "110\n"),
        ("buffer_size_kb", "1408", "", "1410\n"),
        ("options/print-parent", "2", einval, "1\n"),
        ("options/print-parent", "'1 0'", einval, "1\n"),
        ("options/print-parent", "0x1", einval, "1\n"),
        ("options/print-parent", "01", "", "1\n"),
        ("trace_options", "'print-parent x'", einval, ""),
        ("trace_options", "'noprint-parent print-parent'", einval, ""),
        ("trace_options", "no", einval, ""),
        ("trace_options", "' noprint-parent '", "", ""),
        ("options/print-parent", "-n ''", "", "0\n"),
        ("options/print-parent", "1", "", "1\n"),
        ("set_ftrace_pid", "4194304", "", "no pid\n"),
        (
            "set_ftrace_pid",
            "'3 4194305 4194304 4194303'",
            "",
            "3\n4194303\nno pid\n",
        ),
        (">>set_ftrace_pid", "'1,2'", einval, "3\n4194303\nno pid\n"),
        ("set_ftrace_pid", "''", "", "no pid\n"),
        ("set_event_pid", "99999999", "", "99999999\n"),
        (">>set_event_pid", "-1", einval, "99999999\n"),
        (">>set_event_pid", "'6 x'", einval, "99999999\n"),
        ("set_event_pid", "''", "", ""),
        // A Rust path is a function name here too, not `func:command`.
        (
            "stack_trace_filter",
            TOUCH,
            "",
            "kernel::shell::commands::touch\n",
        ),
        (
            ">>stack_trace_filter",
            "kernel::shell::commands::touch:traceoff",
            enodev,
            "kernel::shell::commands::touch\n",
        ),
        (
            "stack_trace_filter",
            "''",
            "",
            "#### all functions enabled ####\n",
        ),
        ("README", "x", einval, ""),
        ("available_tracers", "x", einval, ""),
        ("per_cpu/cpu0/stats", "x", einval, ""),
        ("events/sched/sched_switch/format", "x", einval, ""),
    ];
    for &(file, write, err, after) in cases {
        let (redirect, file) = file.strip_prefix(">>").map_or((">", file), |f| (">>", f));
        let what = format!("echo {write} {redirect} {file}");
        assert_eq!(run(&mut k, &what), err, "{what}");
        if !after.is_empty() {
            assert_eq!(run(&mut k, &format!("cat {file}")), after, "{what}");
        }
    }
    // While trace_pipe is open the tracer cannot change; the buffer can be
    // resized.
    quiet(&mut k, "exec 3<trace_pipe");
    assert_eq!(run(&mut k, "echo function > current_tracer"), ebusy);
    assert_eq!(run(&mut k, "cat current_tracer"), "nop\n");
    quiet(&mut k, "echo 50 > buffer_size_kb");
    assert_eq!(run(&mut k, "cat buffer_size_kb"), "51\n");
    quiet(&mut k, "exec 3<&-");
    quiet(&mut k, "echo function > current_tracer");
    quiet(&mut k, "echo nop > current_tracer");
    quiet(&mut k, "echo 1408 > buffer_size_kb");

    // An instance's options/ has no file for the top-level-only options nor
    // for tracers that cannot run there; trace_options still takes them.
    quiet(&mut k, "mkdir instances/b");
    assert_eq!(
        run(&mut k, "echo 0 > instances/b/options/trace_printk"),
        "sh: can't create instances/b/options/trace_printk: Permission denied\n"
    );
    quiet(&mut k, "echo notrace_printk > instances/b/trace_options");
    let files = run(&mut k, "ls instances/b/options");
    assert!(files.contains("func_stack_trace\n"), "{files}");
    assert!(
        !files.contains("funcgraph") && !files.contains("printk"),
        "{files}"
    );
    quiet(&mut k, "rmdir instances/b");

    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}
