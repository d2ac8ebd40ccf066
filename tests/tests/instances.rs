//! QEMU tests of `instances/`: an instance's files and the top-level-only
//! ones it lacks, isolation of buffers, markers, `tracing_on`, clock,
//! options and buffer size between an instance and the top level, `rmdir`
//! refused while a file of the instance is open, Linux's errors for bad
//! names, and the heap given back by `rmdir` (16 instances, twice).

use tests::Kernel;

const T: &str = "/tracing";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

fn run(k: &mut Kernel, cmd: &str) -> String {
    clean(&k.run(cmd))
}

/// The `tracing_mark_write: TEXT` texts of a `trace` file.
fn markers(k: &mut Kernel, trace: &str) -> Vec<String> {
    run(k, &format!("cat {trace}"))
        .lines()
        .filter_map(|l| {
            l.split_once(": tracing_mark_write: ")
                .map(|(_, t)| t.to_string())
        })
        .collect()
}

/// `HeapUsedBytes` of `meminfo`.
fn heap_used(k: &mut Kernel) -> u64 {
    let out = run(k, "meminfo");
    out.lines()
        .find_map(|l| l.strip_prefix("HeapUsedBytes:"))
        .unwrap_or_else(|| panic!("no HeapUsedBytes in {out}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn instance_files_isolation_and_errors() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let foo = format!("{T}/instances/foo");
    assert_eq!(run(&mut k, &format!("mkdir {foo}")), "");
    let ls = run(&mut k, &format!("ls {foo}"));
    for f in [
        "available_tracers",
        "buffer_size_kb",
        "buffer_total_size_kb",
        "current_tracer",
        "free_buffer",
        "options",
        "per_cpu",
        "trace",
        "trace_clock",
        "trace_marker",
        "trace_options",
        "trace_pipe",
        "tracing_on",
    ] {
        assert!(ls.lines().any(|l| l == f), "{f} missing from {ls}");
    }
    for f in [
        "README",
        "instances",
        "saved_cmdlines",
        "saved_cmdlines_size",
        "available_filter_functions",
        "set_graph_function",
    ] {
        assert!(!ls.lines().any(|l| l == f), "{f} in an instance: {ls}");
    }
    let cpu0 = run(&mut k, &format!("ls {foo}/per_cpu/cpu0"));
    for f in [
        "trace",
        "trace_pipe",
        "trace_pipe_raw",
        "stats",
        "buffer_size_kb",
    ] {
        assert!(cpu0.lines().any(|l| l == f), "{f} missing from {cpu0}");
    }
    assert!(run(&mut k, &format!("cat {foo}/available_tracers")).contains("nop"));
    assert_eq!(run(&mut k, &format!("cat {foo}/current_tracer")), "nop\n");
    // function_graph runs at the top level only.
    assert_eq!(
        run(
            &mut k,
            &format!("echo function_graph > {foo}/current_tracer")
        ),
        "sh: write error: Invalid argument\n"
    );

    // Markers go to the buffer of the file written.
    assert_eq!(
        run(&mut k, &format!("echo in-foo > {foo}/trace_marker")),
        ""
    );
    assert_eq!(run(&mut k, &format!("echo in-top > {T}/trace_marker")), "");
    assert_eq!(markers(&mut k, &format!("{foo}/trace")), ["in-foo"]);
    assert_eq!(markers(&mut k, &format!("{T}/trace")), ["in-top"]);
    let pipe = run(
        &mut k,
        &format!("cat {foo}/per_cpu/cpu0/trace {foo}/per_cpu/cpu1/trace"),
    );
    assert_eq!(pipe.matches("tracing_mark_write: in-foo").count(), 1);
    assert!(!pipe.contains("in-top"), "{pipe}");

    // tracing_on, the clock, an option and the size are the instance's own.
    assert_eq!(run(&mut k, &format!("echo 0 > {foo}/tracing_on")), "");
    assert_eq!(run(&mut k, &format!("cat {T}/tracing_on")), "1\n");
    assert_eq!(
        run(&mut k, &format!("echo dropped > {foo}/trace_marker")),
        "sh: write error: Bad file descriptor\n"
    );
    assert_eq!(run(&mut k, &format!("echo second > {T}/trace_marker")), "");
    assert_eq!(markers(&mut k, &format!("{T}/trace")), ["in-top", "second"]);
    assert_eq!(run(&mut k, &format!("echo 1 > {foo}/tracing_on")), "");

    assert_eq!(
        run(&mut k, &format!("echo counter > {foo}/trace_clock")),
        ""
    );
    assert!(run(&mut k, &format!("cat {foo}/trace_clock")).contains("[counter]"));
    assert!(run(&mut k, &format!("cat {T}/trace_clock")).starts_with("[local]"));
    // Changing the clock cleared the instance's buffer only.
    assert_eq!(
        markers(&mut k, &format!("{foo}/trace")),
        Vec::<String>::new()
    );
    assert_eq!(markers(&mut k, &format!("{T}/trace")), ["in-top", "second"]);

    assert_eq!(run(&mut k, &format!("echo 0 > {foo}/options/markers")), "");
    assert_eq!(
        run(&mut k, &format!("echo no > {foo}/trace_marker")),
        "sh: write error: Invalid argument\n"
    );
    assert_eq!(run(&mut k, &format!("cat {T}/options/markers")), "1\n");
    assert_eq!(run(&mut k, &format!("echo 1 > {foo}/options/markers")), "");

    let top_size = run(&mut k, &format!("cat {T}/buffer_size_kb"));
    assert_eq!(run(&mut k, &format!("echo 64 > {foo}/buffer_size_kb")), "");
    assert_eq!(run(&mut k, &format!("cat {foo}/buffer_size_kb")), "67\n");
    assert_eq!(
        run(&mut k, &format!("cat {foo}/buffer_total_size_kb")),
        "134\n"
    );
    assert_eq!(run(&mut k, &format!("cat {T}/buffer_size_kb")), top_size);

    // rmdir while a file of the instance is open: EBUSY, nothing changes.
    assert_eq!(run(&mut k, &format!("exec 3<{foo}/trace_pipe")), "");
    assert_eq!(
        run(&mut k, &format!("rmdir {foo}")),
        format!("rmdir: '{foo}': Device or resource busy\n")
    );
    assert_eq!(run(&mut k, &format!("cat {foo}/buffer_size_kb")), "67\n");
    assert_eq!(run(&mut k, "exec 3<&-"), "");
    assert_eq!(run(&mut k, &format!("exec 4<{foo}/options/markers")), "");
    assert_eq!(
        run(&mut k, &format!("rmdir {foo}")),
        format!("rmdir: '{foo}': Device or resource busy\n")
    );
    assert_eq!(run(&mut k, "exec 4<&-"), "");

    // Bad names, Linux's errors, and nothing made.
    let before = run(&mut k, &format!("ls {T}/instances"));
    assert_eq!(
        run(&mut k, &format!("mkdir {foo}")),
        format!("mkdir: can't create directory '{foo}': File exists\n")
    );
    assert_eq!(
        run(&mut k, &format!("mkdir {foo}/bar")),
        format!("mkdir: can't create directory '{foo}/bar': Operation not permitted\n")
    );
    assert_eq!(
        run(&mut k, &format!("mkdir {T}/instances/a/b")),
        format!("mkdir: can't create directory '{T}/instances/a/b': No such file or directory\n")
    );
    let long = format!("{T}/instances/{}", "a".repeat(256));
    assert_eq!(
        run(&mut k, &format!("mkdir {long}")),
        format!("mkdir: can't create directory '{long}': File name too long\n")
    );
    assert_eq!(
        run(&mut k, &format!("rmdir {T}/instances/nothere")),
        format!("rmdir: '{T}/instances/nothere': No such file or directory\n")
    );
    assert_eq!(run(&mut k, &format!("ls {T}/instances")), before);

    assert_eq!(run(&mut k, &format!("rmdir {foo}")), "");
    assert_eq!(run(&mut k, &format!("ls {T}/instances")), "");
    assert_eq!(
        run(&mut k, &format!("cat {foo}/trace")),
        format!("cat: {foo}/trace: No such file or directory\n")
    );
    // The top level goes on.
    assert_eq!(run(&mut k, &format!("echo third > {T}/trace_marker")), "");
    assert_eq!(
        markers(&mut k, &format!("{T}/trace")),
        ["in-top", "second", "third"]
    );
}

#[test]
fn sixteen_instances_give_their_memory_back() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    let start = heap_used(&mut k);
    let mut after = Vec::new();
    for round in 0..2 {
        for i in 0..16 {
            let d = format!("{T}/instances/i{i}");
            assert_eq!(run(&mut k, &format!("mkdir {d}")), "");
            assert_eq!(
                run(&mut k, &format!("echo r{round}i{i} > {d}/trace_marker")),
                ""
            );
        }
        // Each has its own buffer (Linux's default size) holding its marker.
        let during = heap_used(&mut k);
        assert!(during > start + 16 * 4 * 1024 * 1024, "{start} -> {during}");
        for i in 0..16 {
            let d = format!("{T}/instances/i{i}");
            assert_eq!(
                markers(&mut k, &format!("{d}/trace")),
                [format!("r{round}i{i}")]
            );
            assert_eq!(run(&mut k, &format!("rmdir {d}")), "");
        }
        after.push(heap_used(&mut k));
    }
    // The first round may leave the list of instances its capacity; from
    // then on, every byte comes back.
    assert!(after[0] <= start + 4096, "{start} -> {after:?}");
    assert_eq!(after[1], after[0], "{start} -> {after:?}");
    assert_eq!(run(&mut k, &format!("ls {T}/instances")), "");
}
