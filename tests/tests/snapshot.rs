//! QEMU tests of the `snapshot` files: Linux 6.1's texts (the help of an
//! empty snapshot, freed or allocated, top-level and per-CPU), its errors
//! (`-1`, junk, a per-CPU `0`: EINVAL, nothing changed; `3` clears), what
//! a swap does (the events move to the snapshot, `tracing_on` stays, a
//! second swap brings them back, a per-CPU swap moves one CPU), the
//! memory the spare takes and gives back, instances, and the snapshot
//! under load: writers on 4 CPUs write numbered markers while snapshots
//! are taken, read and cleared over and over, and every number is seen
//! exactly once across the snapshots and the live buffer.

use std::collections::BTreeMap;
use std::time::Duration;

use tests::Kernel;

const EINVAL: &str = "sh: write error: Invalid argument\n";

fn run(k: &mut Kernel, cmd: &str) -> String {
    k.run(cmd).replace('\r', "")
}

/// The text of an empty `snapshot` (Linux's `print_snapshot_help` after
/// the `# tracer:` lines), as Linux 6.1 prints it; the per-CPU `echo 1`
/// lines are those of a kernel whose ring buffer can swap one CPU
/// (CONFIG_RING_BUFFER_ALLOW_SWAP).
fn help(tracer: &str, allocated: bool, per_cpu: bool) -> String {
    let state = if allocated { "allocated" } else { "freed" };
    let cmds = if per_cpu {
        "# echo 0 > snapshot : Invalid for per_cpu snapshot file.\n\
         # echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n\
         #                      Takes a snapshot of the main buffer for this cpu.\n\
         # echo 2 > snapshot : Clears this cpu's snapshot buffer (but does not allocate)\n"
    } else {
        "# echo 0 > snapshot : Clears and frees snapshot buffer\n\
         # echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n\
         #                      Takes a snapshot of the main buffer.\n\
         # echo 2 > snapshot : Clears snapshot buffer (but does not allocate or free)\n"
    };
    format!(
        "# tracer: {tracer}\n#\n#\n# * Snapshot is {state} *\n#\n# Snapshot commands:\n{cmds}\
         #                      (Doesn't have to be '2' works with any number that\n\
         #                       is not a '0' or '1')\n"
    )
}

/// The texts after `tracing_mark_write: ` in a `trace`-format file, with
/// the CPU column.
fn markers(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (head, msg) = l.split_once(": tracing_mark_write: ")?;
            let cpu = head.split('[').nth(1)?.split(']').next()?.parse().ok()?;
            Some((cpu, msg.to_string()))
        })
        .collect()
}

/// `entries-in-buffer/entries-written` of a `trace`-format header.
fn entries(text: &str) -> (u64, u64) {
    let l = text
        .lines()
        .find(|l| l.starts_with("# entries-in-buffer/entries-written: "))
        .unwrap_or_else(|| panic!("no entries line in {text}"));
    let f = l.split_whitespace().nth(2).unwrap();
    let (a, b) = f.split_once('/').unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

fn heap_used(k: &mut Kernel) -> i64 {
    let out = run(k, "meminfo");
    out.lines()
        .find_map(|l| l.strip_prefix("HeapUsedBytes:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no HeapUsedBytes in {out}"))
}

fn m(cpu: usize, s: &str) -> (usize, String) {
    (cpu, s.to_string())
}

#[test]
fn snapshot_files_texts_swaps_and_errors() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    assert_eq!(run(&mut k, "cd /tracing"), "");
    for dir in [".", "per_cpu/cpu0", "per_cpu/cpu1"] {
        let ls = run(&mut k, &format!("ls {dir}"));
        assert!(ls.lines().any(|l| l == "snapshot"), "{dir}: {ls}");
    }
    let readme = run(&mut k, "cat README");
    assert!(
        readme.contains(
            "\n\n  snapshot\t\t- Like 'trace' but shows the content of the static\n\
             \t\t\t  snapshot buffer. Read the contents for more\n\
             \t\t\t  information\n"
        ),
        "{readme}"
    );

    // Freed: the help; bad writes change nothing; a clear does not allocate.
    assert_eq!(run(&mut k, "cat snapshot"), help("nop", false, false));
    assert_eq!(
        run(&mut k, "cat per_cpu/cpu1/snapshot"),
        help("nop", false, true)
    );
    for bad in ["-1", "abc", "1x", "''"] {
        assert_eq!(
            run(&mut k, &format!("echo {bad} > snapshot")),
            EINVAL,
            "{bad}"
        );
    }
    assert_eq!(run(&mut k, "echo 0 > per_cpu/cpu0/snapshot"), EINVAL);
    assert_eq!(run(&mut k, "echo 3 > snapshot"), "");
    assert_eq!(run(&mut k, "echo 0 > snapshot"), "");
    assert_eq!(run(&mut k, "cat snapshot"), help("nop", false, false));

    // A swap: the events go to the snapshot, the live buffer is empty; the
    // spare takes about the live buffer's memory.
    let before = heap_used(&mut k);
    assert_eq!(run(&mut k, "echo one > trace_marker"), "");
    assert_eq!(run(&mut k, "echo 1 > snapshot"), "");
    let allocated = heap_used(&mut k) - before;
    let live_kb: i64 = run(&mut k, "cat buffer_total_size_kb")
        .trim()
        .parse()
        .unwrap();
    assert!(
        allocated > live_kb * 1024 * 9 / 10 && allocated < live_kb * 1024 * 2,
        "spare {allocated} bytes for a {live_kb} KiB buffer"
    );
    let snap = run(&mut k, "cat snapshot");
    assert_eq!(markers(&snap), [m(0, "one")], "{snap}");
    assert_eq!(entries(&snap), (1, 1));
    assert!(
        snap.starts_with("# tracer: nop\n#\n# entries-in-buffer"),
        "{snap}"
    );
    let trace = run(&mut k, "cat trace");
    assert_eq!((markers(&trace), entries(&trace)), (vec![], (0, 0)));
    // Bad writes leave the snapshot as it is.
    assert_eq!(run(&mut k, "echo -1 > snapshot"), EINVAL);
    assert_eq!(run(&mut k, "echo 0 > per_cpu/cpu0/snapshot"), EINVAL);
    assert_eq!(run(&mut k, "cat snapshot"), snap);

    // A second swap brings the events back; tracing_on stays as it was.
    assert_eq!(run(&mut k, "echo two > trace_marker"), "");
    assert_eq!(run(&mut k, "echo 0 > tracing_on"), "");
    assert_eq!(run(&mut k, "echo 1 > snapshot"), "");
    assert_eq!(run(&mut k, "cat tracing_on"), "0\n");
    // Not recorded: Linux's EBADF for a marker while tracing is off.
    assert_eq!(
        run(&mut k, "echo lost > trace_marker"),
        "sh: write error: Bad file descriptor\n"
    );
    assert_eq!(markers(&run(&mut k, "cat snapshot")), [m(0, "two")]);
    assert_eq!(markers(&run(&mut k, "cat trace")), [m(0, "one")]);
    assert_eq!(run(&mut k, "echo 1 > tracing_on"), "");

    // Any number but 0 and 1 clears the snapshot, which stays allocated.
    assert_eq!(run(&mut k, "echo 3 > snapshot"), "");
    assert_eq!(run(&mut k, "cat snapshot"), help("nop", true, false));
    assert_eq!(
        run(&mut k, "cat per_cpu/cpu0/snapshot"),
        help("nop", true, true)
    );

    // Per CPU: only that CPU's events move, and only it is cleared.
    assert_eq!(run(&mut k, "echo > trace"), "");
    assert_eq!(
        run(&mut k, "ringbuf markers 2 0"),
        "ringbuf markers: 2 written, 0 failed, 0 off-cpu\n"
    );
    assert_eq!(
        run(&mut k, "ringbuf markers 1 1"),
        "ringbuf markers: 1 written, 0 failed, 0 off-cpu\n"
    );
    assert_eq!(run(&mut k, "echo 1 > per_cpu/cpu1/snapshot"), "");
    assert_eq!(
        markers(&run(&mut k, "cat per_cpu/cpu1/snapshot")),
        [m(1, "seq=0")]
    );
    assert_eq!(markers(&run(&mut k, "cat snapshot")), [m(1, "seq=0")]);
    assert_eq!(
        run(&mut k, "cat per_cpu/cpu0/snapshot"),
        help("nop", true, true)
    );
    assert_eq!(
        markers(&run(&mut k, "cat trace")),
        [m(0, "seq=0"), m(0, "seq=1")]
    );
    assert_eq!(run(&mut k, "echo 1 > per_cpu/cpu0/snapshot"), "");
    assert_eq!(
        markers(&run(&mut k, "cat snapshot")),
        [m(0, "seq=0"), m(0, "seq=1"), m(1, "seq=0")]
    );
    assert_eq!(run(&mut k, "echo 2 > per_cpu/cpu1/snapshot"), "");
    assert_eq!(
        markers(&run(&mut k, "cat snapshot")),
        [m(0, "seq=0"), m(0, "seq=1")]
    );

    // 0 clears and shrinks the spare: the memory comes back.
    assert_eq!(run(&mut k, "echo 0 > snapshot"), "");
    assert_eq!(run(&mut k, "cat snapshot"), help("nop", false, false));
    let left = heap_used(&mut k) - before;
    assert!(
        left.abs() < 64 * 1024,
        "{left} bytes still used after echo 0"
    );

    // The header names the current tracer.
    assert_eq!(run(&mut k, "echo function > current_tracer"), "");
    assert_eq!(run(&mut k, "cat snapshot"), help("function", false, false));
    assert_eq!(run(&mut k, "echo nop > current_tracer"), "");

    // An instance has its own snapshot.
    assert_eq!(run(&mut k, "mkdir instances/foo"), "");
    for dir in ["instances/foo", "instances/foo/per_cpu/cpu1"] {
        let ls = run(&mut k, &format!("ls {dir}"));
        assert!(ls.lines().any(|l| l == "snapshot"), "{dir}: {ls}");
    }
    assert_eq!(run(&mut k, "echo inst > instances/foo/trace_marker"), "");
    assert_eq!(run(&mut k, "echo top > trace_marker"), "");
    assert_eq!(run(&mut k, "echo 1 > instances/foo/snapshot"), "");
    assert_eq!(
        markers(&run(&mut k, "cat instances/foo/snapshot")),
        [m(0, "inst")]
    );
    assert_eq!(markers(&run(&mut k, "cat instances/foo/trace")), []);
    assert_eq!(run(&mut k, "cat snapshot"), help("nop", false, false));
    assert!(markers(&run(&mut k, "cat trace")).contains(&m(0, "top")));
    assert_eq!(run(&mut k, "echo -1 > instances/foo/snapshot"), EINVAL);
    assert_eq!(run(&mut k, "rmdir instances/foo"), "");

    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}

/// The ranges of `ringbuf snapshot` lines (`ringbuf snapshot WHAT: cpu0=A-B,C-D ...`),
/// added to `seen` (CPU -> every number, with repeats).
fn add_ranges(line: &str, seen: &mut BTreeMap<usize, Vec<u64>>) {
    let (_, rest) = line.split_once(": ").unwrap();
    for f in rest.split_whitespace() {
        let (cpu, ranges) = f.split_once('=').unwrap();
        let cpu: usize = cpu.strip_prefix("cpu").unwrap().parse().unwrap();
        let v = seen.entry(cpu).or_default();
        for r in ranges.split(',').filter(|r| !r.is_empty()) {
            let (a, b) = r.split_once('-').unwrap();
            let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
            v.extend(a..=b);
        }
    }
}

/// `ringbuf snapshot N DIR` on 4 CPUs: checks the summary and that every
/// number 0..N of every CPU is in exactly one of the snapshots read and the
/// final live buffer. Returns the number of snapshots with markers.
fn under_load(k: &mut Kernel, n: u64, dir: &str) -> usize {
    let out = k
        .run_with_timeout(
            &format!("ringbuf snapshot {n} {dir}"),
            Duration::from_secs(300),
        )
        .replace('\r', "");
    let summary = out
        .lines()
        .find(|l| l.starts_with("ringbuf snapshot: "))
        .unwrap_or_else(|| panic!("no summary: {out}"));
    assert!(
        summary.ends_with(" 0 errors, 0 retried writes"),
        "{summary}"
    );
    let mut seen = BTreeMap::new();
    let mut rounds = 0;
    for l in out.lines() {
        if l.starts_with("ringbuf snapshot round ") {
            rounds += 1;
            add_ranges(l, &mut seen);
        } else if l.starts_with("ringbuf snapshot live: ") {
            add_ranges(l, &mut seen);
        }
    }
    assert_eq!(seen.len(), 4, "{out}");
    for (cpu, v) in &mut seen {
        v.sort_unstable();
        let dup = v.windows(2).find(|w| w[0] == w[1]);
        assert!(dup.is_none(), "cpu {cpu}: seen twice: {dup:?}\n{out}");
        assert!(
            v.iter().copied().eq(0..n),
            "cpu {cpu}: missing numbers\n{out}"
        );
    }
    rounds
}

#[test]
fn snapshot_under_load() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    assert_eq!(run(&mut k, "cd /tracing"), "");
    // 256 KiB per CPU holds far more than the 300 markers a CPU writes (no
    // wrapping); the spare is allocated before the writers start.
    assert_eq!(run(&mut k, "echo 256 > buffer_size_kb"), "");
    assert_eq!(run(&mut k, "echo 1 > snapshot"), "");
    assert_eq!(run(&mut k, "echo 2 > snapshot"), "");
    let rounds = under_load(&mut k, 300, "/tracing");
    assert!(rounds >= 20, "only {rounds} snapshots had markers");
    // Nothing was overwritten or lost in the live buffer.
    for cpu in 0..4 {
        let stats = run(&mut k, &format!("cat per_cpu/cpu{cpu}/stats"));
        assert!(stats.contains("overrun: 0\n"), "{stats}");
    }

    // The same in an instance, the top level untouched.
    assert_eq!(run(&mut k, "echo > trace"), "");
    assert_eq!(run(&mut k, "mkdir instances/load"), "");
    assert_eq!(run(&mut k, "echo 256 > instances/load/buffer_size_kb"), "");
    let rounds = under_load(&mut k, 100, "/tracing/instances/load");
    assert!(rounds >= 5, "only {rounds} snapshots had markers");
    assert_eq!(entries(&run(&mut k, "cat trace")), (0, 0));
    assert_eq!(run(&mut k, "rmdir instances/load"), "");

    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}
