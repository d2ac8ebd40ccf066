//! QEMU test of the stack tracer and the `/proc/sys/kernel` files, in one
//! boot with the boot options `stacktrace` and `stacktrace_filter=`:
//! - `work stack N` recurses N levels below its first call, each frame the
//!   same size (the workload measures it from its own locals); the deepest
//!   chain `stack_trace` shows holds exactly N + 1 calls of it in a row,
//!   each of that size, with the depths falling by it; the sizes add up to
//!   the depth of the first row, which is `stack_max_size`;
//! - the filter is honoured: with only the recursion traced, nothing else
//!   records a maximum; emptied, every function is traced and the deepest
//!   chain still holds the recursion;
//! - `echo 0 > stack_max_size` starts over (a shallower recursion becomes
//!   the new maximum), and disabling stops recording, leaving the last
//!   table under Linux's "Stack tracer disabled" note;
//! - `ftrace_enabled` 0 stops every function callback (no events, no site
//!   enabled) even for a tracer started meanwhile, and 1 brings them back;
//! - bad writes to every new file give Linux 6.1's errno and change
//!   nothing.
//!
//! In the fentry build (a second boot) the traced function's frame is not
//! set up yet when the callback runs, so the deepest call's row is only its
//! return address (8 bytes, as Linux's with -mfentry), and the chain must
//! still hold every call: the walk gets the traced function's return
//! address from the trampoline's parent slot.

use std::time::Duration;

use tests::Kernel;

const RECURSE: &str = "kernel::shell::work::work_stack_recurse";
const EINVAL: &str = "sh: write error: Invalid argument\n";
const ENODEV: &str = "sh: write error: No such device\n";
const ERANGE: &str = "sh: write error: Numerical result out of range\n";

fn run(k: &mut Kernel, cmd: &str) -> String {
    k.run(cmd).replace('\r', "")
}

/// One row of `stack_trace`: depth, size, location.
#[derive(Debug)]
struct Row {
    depth: u64,
    size: u64,
    location: String,
}

/// The rows of a `stack_trace` text, after checking its header and that
/// the entry count it gives is the number of rows.
fn rows(text: &str) -> Vec<Row> {
    let mut lines = text.lines();
    let head = lines.next().unwrap_or("");
    let n: usize = head
        .strip_prefix("        Depth    Size   Location    (")
        .and_then(|r| r.strip_suffix(" entries)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("bad header in:\n{text}"));
    assert_eq!(
        lines.next(),
        Some("        -----    ----   --------"),
        "{text}"
    );
    let rows: Vec<Row> = lines
        .filter(|l| !l.starts_with('#'))
        .enumerate()
        .map(|(i, l)| {
            // "%3ld) %8d   %5d   %pS"
            let (idx, rest) = l.split_once(')').unwrap_or_else(|| panic!("{l:?}"));
            assert_eq!(idx.trim().parse::<usize>().unwrap(), i, "{text}");
            assert_eq!(&l[..4], &format!("{i:3})"), "{l:?}");
            let depth = rest[..9].trim().parse().unwrap_or_else(|_| panic!("{l:?}"));
            assert_eq!(&rest[9..12], "   ", "{l:?}");
            let size = rest[12..17]
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("{l:?}"));
            assert_eq!(&rest[17..20], "   ", "{l:?}");
            Row {
                depth,
                size,
                location: rest[20..].to_string(),
            }
        })
        .collect();
    assert_eq!(rows.len(), n, "{text}");
    rows
}

/// `work stack N`'s frame size, after checking its report.
fn work_stack(k: &mut Kernel, n: usize) -> u64 {
    let out = run(k, &format!("work stack {n}"));
    let rest = out
        .strip_prefix(&format!("work stack: {} calls, frame ", n + 1))
        .unwrap_or_else(|| panic!("{out}"));
    let (frame, rest) = rest.split_once(" bytes, ").unwrap();
    assert!(rest.starts_with("0 errors, "), "{out}");
    let frame: u64 = frame.parse().unwrap();
    // The local array is 480 bytes; the frame holds it and more.
    assert!((480..2048).contains(&frame), "{out}");
    frame
}

/// Checks the invariants of a table and that it holds the recursion:
/// exactly `calls` rows of it in a row, each `frame` bytes (the innermost
/// one too when `innermost_exact`: it is not when an interrupt came on top
/// of it), and returns the table's deepest depth.
fn check_chain(text: &str, calls: usize, frame: u64, innermost_exact: bool) -> u64 {
    let rows = rows(text);
    assert!(!rows.is_empty(), "{text}");
    // The sizes add up to the depth, from row to row and in total.
    for w in rows.windows(2) {
        assert_eq!(w[0].size, w[0].depth - w[1].depth, "{text}");
    }
    let last = rows.last().unwrap();
    assert_eq!(last.size, last.depth, "{text}");
    assert_eq!(rows.iter().map(|r| r.size).sum::<u64>(), rows[0].depth);
    let first = rows
        .iter()
        .position(|r| r.location.starts_with(&format!("{RECURSE}+")))
        .unwrap_or_else(|| panic!("no {RECURSE} in:\n{text}"));
    let run_len = rows[first..]
        .iter()
        .take_while(|r| r.location.starts_with(&format!("{RECURSE}+")))
        .count();
    assert_eq!(run_len, calls, "{text}");
    assert!(
        rows[first + run_len..]
            .iter()
            .all(|r| !r.location.starts_with(RECURSE)),
        "{text}"
    );
    let skip = usize::from(!innermost_exact);
    for r in &rows[first + skip..first + run_len] {
        assert_eq!(r.size, frame, "row {r:?} in:\n{text}");
    }
    // The caller of the outermost call is the `work` command.
    assert!(
        rows[first + run_len]
            .location
            .starts_with("kernel::shell::work::run+"),
        "{text}"
    );
    rows[0].depth
}

fn max_size(k: &mut Kernel) -> u64 {
    let out = run(k, "cat /tracing/stack_max_size");
    out.trim().parse().unwrap_or_else(|_| panic!("{out}"))
}

/// Events in the top-level buffer.
fn events(k: &mut Kernel) -> usize {
    let out = run(k, "grep -v '^#' /tracing/trace | wc -l");
    out.trim().parse().unwrap_or_else(|_| panic!("{out}"))
}

fn enabled_functions(k: &mut Kernel) -> usize {
    let out = run(k, "cat /tracing/enabled_functions | wc -l");
    out.trim().parse().unwrap_or_else(|_| panic!("{out}"))
}

/// Each write must fail with `errno` and leave `file` reading `before`.
fn bad_writes(k: &mut Kernel, file: &str, cases: &[(&str, &str)]) {
    let before = run(k, &format!("cat {file}"));
    for (input, errno) in cases {
        let out = run(k, &format!("echo '{input}' > {file}"));
        assert_eq!(out, *errno, "echo '{input}' > {file}");
        assert_eq!(run(k, &format!("cat {file}")), before, "after '{input}'");
    }
}

#[test]
fn stack_tracer_and_proc_sys() {
    let mut k = Kernel::boot(&[
        "--cmdline",
        "stacktrace stacktrace_filter=*work_stack_recurse*,no_such_function",
    ]);
    let proc = "/proc/sys/kernel";
    assert_eq!(
        run(&mut k, &format!("ls -l {proc}")),
        "-rw-r--r--    1 root     root             0 ftrace_dump_on_oops\n\
         -rw-r--r--    1 root     root             0 ftrace_enabled\n\
         -rw-r--r--    1 root     root             0 stack_tracer_enabled\n"
    );
    assert_eq!(
        run(
            &mut k,
            "ls -l /tracing/stack_max_size /tracing/stack_trace /tracing/stack_trace_filter"
        ),
        "-rw-r-----    1 root     root             0 /tracing/stack_max_size\n\
         -r--r-----    1 root     root             0 /tracing/stack_trace\n\
         -rw-r-----    1 root     root             0 /tracing/stack_trace_filter\n"
    );
    // The boot options: on, with the entry that matches (the other is
    // ignored, as Linux's early filter ignores it).
    assert_eq!(
        run(&mut k, &format!("cat {proc}/stack_tracer_enabled")),
        "1\n"
    );
    assert_eq!(run(&mut k, &format!("cat {proc}/ftrace_enabled")), "1\n");
    // The test harness boots every kernel with ftrace_dump_on_oops.
    assert_eq!(
        run(&mut k, &format!("cat {proc}/ftrace_dump_on_oops")),
        "1\n"
    );
    assert_eq!(
        run(&mut k, "cat /tracing/stack_trace_filter"),
        format!("{RECURSE}\n")
    );

    // Only the recursion is traced: its deepest call is the maximum.
    let frame = work_stack(&mut k, 12);
    let text = run(&mut k, "cat /tracing/stack_trace");
    let depth = check_chain(&text, 13, frame, true);
    assert!(rows(&text)[0].location.starts_with(RECURSE), "{text}");
    assert_eq!(max_size(&mut k), depth);
    assert!(depth > 13 * frame, "{text}");

    // Reset: nothing else is traced, so nothing records a new maximum...
    assert_eq!(run(&mut k, "echo 0 > /tracing/stack_max_size"), "");
    assert_eq!(max_size(&mut k), 0);
    let out = run(&mut k, "work compute 2");
    assert!(out.starts_with("work compute: "), "{out}");
    assert_eq!(max_size(&mut k), 0);
    // ...until the recursion runs again, shallower than before.
    let frame4 = work_stack(&mut k, 4);
    assert_eq!(frame4, frame);
    let text = run(&mut k, "cat /tracing/stack_trace");
    let depth4 = check_chain(&text, 5, frame, true);
    assert_eq!(depth - depth4, 8 * frame, "{text}");
    assert_eq!(max_size(&mut k), depth4);
    // A shallower one now is not a maximum.
    work_stack(&mut k, 2);
    assert_eq!(max_size(&mut k), depth4);

    // Bad writes to every new file: Linux 6.1's errno, nothing changed.
    bad_writes(
        &mut k,
        "/tracing/stack_max_size",
        &[
            ("abc", EINVAL),
            ("-1", EINVAL),
            (" 5", EINVAL),
            ("99999999999999999999999", ERANGE),
        ],
    );
    assert_eq!(run(&mut k, "echo hello > /tracing/stack_trace"), EINVAL);
    assert_eq!(run(&mut k, "cat /tracing/stack_trace"), text);
    bad_writes(
        &mut k,
        "/tracing/stack_trace_filter",
        &[
            ("no_such_function", EINVAL),
            ("*work_stack_recurse*:traceoff", ENODEV),
            ("*work_stack_recurse*:mod:foo", ENODEV),
            ("*work_stack_recurse*:stacktrace", ENODEV),
            ("*work_stack_recurse*:bogus", EINVAL),
            ("*compute* no_such_function", EINVAL),
        ],
    );
    for file in [
        "stack_tracer_enabled",
        "ftrace_enabled",
        "ftrace_dump_on_oops",
    ] {
        bad_writes(
            &mut k,
            &format!("{proc}/{file}"),
            &[
                ("abc", EINVAL),
                ("3x", EINVAL),
                ("+5", EINVAL),
                ("", EINVAL),
                ("2147483648", EINVAL),
                ("orig_cpu", EINVAL),
            ],
        );
    }
    // What proc_dointvec takes: the value kept as written, in C notation;
    // after the first number the rest of the line is ignored.
    for (input, shown) in [("-3", "-3"), ("0x10", "16"), (" 2 7", "2"), ("0", "0")] {
        assert_eq!(
            run(
                &mut k,
                &format!("echo '{input}' > {proc}/ftrace_dump_on_oops")
            ),
            ""
        );
        assert_eq!(
            run(&mut k, &format!("cat {proc}/ftrace_dump_on_oops")),
            format!("{shown}\n")
        );
    }

    // An empty filter traces every function; the deepest chain still holds
    // the whole recursion (an interrupt may have come on top of it).
    assert_eq!(run(&mut k, "echo > /tracing/stack_trace_filter"), "");
    assert_eq!(
        run(&mut k, "cat /tracing/stack_trace_filter"),
        "#### all functions enabled ####\n"
    );
    run(&mut k, "echo 0 > /tracing/stack_max_size");
    work_stack(&mut k, 40);
    let text = run(&mut k, "cat /tracing/stack_trace");
    let depth40 = check_chain(&text, 41, frame, false);
    assert!(depth40 > 41 * frame, "{text}");
    assert_eq!(max_size(&mut k), depth40);

    // Disabled: nothing is recorded; the last table stays, under the note.
    assert_eq!(
        run(&mut k, &format!("echo 0 > {proc}/stack_tracer_enabled")),
        ""
    );
    assert_eq!(run(&mut k, "echo 0 > /tracing/stack_max_size"), "");
    work_stack(&mut k, 20);
    assert_eq!(max_size(&mut k), 0);
    let off = run(&mut k, "cat /tracing/stack_trace");
    let note = "#\n\
                #  Stack tracer disabled\n\
                #\n\
                # To enable the stack tracer, either add 'stacktrace' to the\n\
                # kernel command line\n\
                # or 'echo 1 > /proc/sys/kernel/stack_tracer_enabled'\n\
                #\n";
    let (head, rest) = text.split_once('\n').unwrap();
    let (dashes, table) = rest.split_once('\n').unwrap();
    assert_eq!(off, format!("{head}\n{dashes}\n{note}{table}"));

    // ftrace_enabled: 0 stops every callback, also of a tracer started
    // while it is 0; 1 brings them back; the value is kept as written.
    assert_eq!(run(&mut k, &format!("echo 0 > {proc}/ftrace_enabled")), "");
    assert_eq!(run(&mut k, "echo function > /tracing/current_tracer"), "");
    run(&mut k, "echo > /tracing/trace");
    run(&mut k, "work compute 1");
    assert_eq!(events(&mut k), 0);
    assert_eq!(enabled_functions(&mut k), 0);
    assert_eq!(run(&mut k, &format!("echo 2 > {proc}/ftrace_enabled")), "");
    assert_eq!(run(&mut k, &format!("cat {proc}/ftrace_enabled")), "2\n");
    run(&mut k, "work compute 1");
    assert!(events(&mut k) > 100);
    assert!(enabled_functions(&mut k) > 100);
    assert_eq!(run(&mut k, &format!("echo 0 > {proc}/ftrace_enabled")), "");
    run(&mut k, "echo > /tracing/trace");
    run(&mut k, "work compute 1");
    assert_eq!(events(&mut k), 0);
    assert_eq!(enabled_functions(&mut k), 0);
    assert_eq!(run(&mut k, "echo nop > /tracing/current_tracer"), "");
    assert_eq!(run(&mut k, &format!("echo 1 > {proc}/ftrace_enabled")), "");
    assert_eq!(enabled_functions(&mut k), 0);
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}

#[test]
fn fentry_chain_holds_every_call() {
    let mut k = Kernel::boot_mode(
        "fentry",
        &[
            "--cmdline",
            "stacktrace stacktrace_filter=*work_stack_recurse*",
        ],
    );
    let frame = work_stack(&mut k, 6);
    let text = run(&mut k, "cat /tracing/stack_trace");
    let depth = check_chain(&text, 7, frame, false);
    let rows = rows(&text);
    assert!(rows[0].location.starts_with(RECURSE), "{text}");
    assert_eq!(rows[0].size, 8, "{text}");
    assert_eq!(max_size(&mut k), depth);
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}
