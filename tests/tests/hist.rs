//! QEMU tests of hist triggers (`events/SYSTEM/EVENT/trigger` with
//! `hist:...` and the `hist` file): on 4 CPUs a hist trigger counts exactly
//! the records the same event writes, a table too small for its keys
//! reports `Dropped`, and the text has Linux 6.1's layout (checked on
//! /work/shared/linux/qemu.sh); pause, cont, clear, several triggers on
//! one event, removal, soft mode and Linux's errnos. One boot.

use std::collections::BTreeMap;

use tests::Kernel;

const EV: &str = "/tracing/events/vfs/vfs_open";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

fn run(k: &mut Kernel, cmd: &str) -> String {
    clean(&k.run(cmd))
}

/// `{ common_pid: NAME  [  PID] } hitcount:  N` lines: (name, pid) -> N.
fn execname_counts(hist: &str) -> BTreeMap<(String, u64), u64> {
    hist.lines()
        .filter(|l| l.starts_with("{ common_pid: "))
        .map(|l| {
            let name = l["{ common_pid: ".len()..]
                .split_whitespace()
                .next()
                .unwrap();
            let pid = l[l.find('[').unwrap() + 1..l.find(']').unwrap()].trim();
            let n = l.rsplit(' ').next().unwrap();
            ((name.to_string(), pid.parse().unwrap()), n.parse().unwrap())
        })
        .collect()
}

/// The `Totals:` numbers of one block: (Hits, Entries, Dropped).
fn totals(block: &str) -> (u64, u64, u64) {
    let get = |what: &str| -> u64 {
        block
            .lines()
            .find_map(|l| l.strip_prefix(&format!("    {what}: ")))
            .unwrap_or_else(|| panic!("no {what} in {block}"))
            .parse()
            .unwrap()
    };
    (get("Hits"), get("Entries"), get("Dropped"))
}

#[test]
fn hist_counts_layout_drops_and_commands() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    assert_eq!(run(&mut k, "echo 4096 > /tracing/buffer_size_kb"), "");

    // No hist trigger: the hist file is empty.
    assert_eq!(run(&mut k, &format!("cat {EV}/hist")), "");

    // --- Counts equal records on 4 CPUs ---------------------------------
    // The same event is recorded and counted per task; the workers (one per
    // CPU) only run between the enable and the disable, so for each of
    // them the hitcount must equal its records in the trace.
    assert_eq!(
        run(
            &mut k,
            &format!("echo 'hist:keys=common_pid.execname' > {EV}/trigger")
        ),
        ""
    );
    // A trigger alone puts the event in soft mode.
    assert_eq!(run(&mut k, &format!("cat {EV}/enable")), "0*\n");
    assert_eq!(run(&mut k, &format!("echo 1 > {EV}/enable")), "");
    let out = run(&mut k, "work files 40");
    assert!(out.contains(", 0 errors"), "{out}");
    assert_eq!(run(&mut k, &format!("echo 0 > {EV}/enable")), "");
    assert_eq!(run(&mut k, &format!("cat {EV}/enable")), "0*\n");
    let trace = run(&mut k, "cat /tracing/trace");
    let hist = run(&mut k, &format!("cat {EV}/hist"));
    let mut records: BTreeMap<(String, u64), u64> = BTreeMap::new();
    let mut cpus = std::collections::BTreeSet::new();
    for l in trace.lines().filter(|l| l.contains("vfs_open:")) {
        let task = l.split_whitespace().next().unwrap();
        if let Some((name, pid)) = task.rsplit_once('-') {
            if name.starts_with("work-files/") {
                *records
                    .entry((name.to_string(), pid.parse().unwrap()))
                    .or_default() += 1;
                cpus.insert(l[l.find('[').unwrap()..l.find(']').unwrap()].to_string());
            }
        }
    }
    assert!(
        trace.contains("# entries-in-buffer/entries-written: ") && !trace.contains("overrun"),
        "{}",
        &trace[..trace.len().min(2000)]
    );
    assert_eq!(records.len(), 4, "one worker per CPU: {records:?}");
    assert_eq!(cpus.len(), 4, "records from 4 CPUs: {cpus:?}");
    let counted: BTreeMap<_, _> = execname_counts(&hist)
        .into_iter()
        .filter(|((name, _), _)| name.starts_with("work-files/"))
        .collect();
    assert_eq!(counted, records, "hist counts vs trace records:\n{hist}");
    assert!(records.values().all(|&n| n == 120), "{records:?}");
    // The layout: Linux's header, entry lines and totals.
    assert!(
        hist.starts_with(
            "# event histogram\n#\n# trigger info: hist:keys=common_pid.execname:vals=hitcount:sort=hitcount:size=2048 [active]\n#\n\n{ common_pid: "
        ),
        "{hist}"
    );
    let line = hist.lines().find(|l| l.contains("work-files/0")).unwrap();
    let pid = records.keys().find(|(n, _)| n == "work-files/0").unwrap().1;
    assert_eq!(
        line,
        format!(
            "{{ common_pid: work-files/0    [{pid:>10}] }} hitcount: {:>10}",
            120
        )
    );
    let (hits, entries, dropped) = totals(&hist);
    assert_eq!(dropped, 0);
    assert_eq!(entries as usize, execname_counts(&hist).len());
    assert_eq!(hits, execname_counts(&hist).values().sum::<u64>());
    assert!(hist.ends_with(&format!(
        "\nTotals:\n    Hits: {hits}\n    Entries: {entries}\n    Dropped: 0\n"
    )));

    // --- A second trigger, a table too small, pause/cont/clear -----------
    // `>>` adds: 160 distinct file names into 128 elements.
    assert_eq!(
        run(
            &mut k,
            &format!("echo 'hist:keys=filename:size=100' >> {EV}/trigger")
        ),
        ""
    );
    assert_eq!(
        run(&mut k, &format!("cat {EV}/trigger")),
        "hist:keys=common_pid.execname:vals=hitcount:sort=hitcount:size=2048 [active]\n\
         hist:keys=filename:vals=hitcount:sort=hitcount:size=128 [active]\n"
    );
    let out = run(&mut k, "work files 40");
    assert!(out.contains(", 0 errors"), "{out}");
    let hist = run(&mut k, &format!("cat {EV}/hist"));
    let blocks: Vec<&str> = hist.split("\n\n# event histogram\n").collect();
    assert_eq!(blocks.len(), 2, "{hist}");
    let (hits, entries, dropped) = totals(blocks[1]);
    assert_eq!(entries, 128, "{}", blocks[1]);
    assert!(dropped > 0, "{}", blocks[1]);
    assert!(hits >= 128, "{}", blocks[1]);
    // A string key: `%-50s`.
    assert!(
        blocks[1]
            .lines()
            .any(|l| l.starts_with("{ filename: /tmp/work-")
                && l.find(" } hitcount:") == Some("{ filename: ".len() + 50)),
        "{}",
        blocks[1]
    );

    // pause: the spec with :pause changes the existing trigger.
    assert_eq!(
        run(
            &mut k,
            &format!("echo 'hist:keys=common_pid.execname:pause' >> {EV}/trigger")
        ),
        ""
    );
    assert!(run(&mut k, &format!("cat {EV}/trigger")).starts_with(
        "hist:keys=common_pid.execname:vals=hitcount:sort=hitcount:size=2048 [paused]\n"
    ));
    let before = totals(&run(&mut k, &format!("cat {EV}/hist")));
    run(&mut k, "work files 5");
    assert_eq!(totals(&run(&mut k, &format!("cat {EV}/hist"))), before);
    // cont, then clear.
    assert_eq!(
        run(
            &mut k,
            &format!("echo 'hist:keys=common_pid.execname:cont' >> {EV}/trigger")
        ),
        ""
    );
    run(&mut k, "work files 5");
    assert!(totals(&run(&mut k, &format!("cat {EV}/hist"))).0 > before.0);
    assert_eq!(
        run(
            &mut k,
            &format!("echo 'hist:keys=filename:size=128:clear' >> {EV}/trigger")
        ),
        ""
    );
    let hist = run(&mut k, &format!("cat {EV}/hist"));
    let blocks: Vec<&str> = hist.split("\n\n# event histogram\n").collect();
    // Only the shell's own opens since the clear (cat's) are left.
    let (hits, entries, dropped) = totals(blocks[1]);
    assert!(hits <= 3 && entries <= 3 && dropped == 0, "{hist}");

    // Errors, as on Linux 6.1; nothing changes.
    assert_eq!(run(&mut k, "echo > /tracing/error_log"), "");
    let trig = run(&mut k, &format!("cat {EV}/trigger"));
    for (write, err) in [
        ("hist:keys=bogus", "Invalid argument"),
        ("hist:keys=ret.bogus", "Invalid argument"),
        ("hist:keys=ret:vals=ret.log2", "Invalid argument"),
        ("hist:keys=ret:sort=foo", "Invalid argument"),
        ("hist:vals=ret", "Invalid argument"),
        ("hist:keys=ret:size=5", "Invalid argument"),
        ("hist:keys=ret:cont", "No such file or directory"),
        ("hist:keys=filename:size=128", "File exists"),
        ("hist:keys=ret if bogus == 1", "Invalid argument"),
    ] {
        assert_eq!(
            run(&mut k, &format!("echo '{write}' >> {EV}/trigger")),
            format!("sh: write error: {err}\n"),
            "{write}"
        );
    }
    assert_eq!(run(&mut k, &format!("cat {EV}/trigger")), trig);
    // The ones Linux logs, with its texts and carets (checked on Linux
    // 6.1 with sched_switch's fields in place of vfs_open's): under
    // `hist:SYSTEM:EVENT`, the command as `hist:` + the written text.
    let log = run(&mut k, "cat /tracing/error_log");
    let log: Vec<&str> = log
        .lines()
        .map(|l| match l.strip_prefix('[') {
            Some(rest) => &rest[rest.find("] ").unwrap() + 2..],
            None => l,
        })
        .collect();
    let entry = |text: &str, cmd: &str, pos: usize| {
        vec![
            format!("hist:vfs:vfs_open: error: {text}"),
            format!("  Command: {cmd}"),
            format!("{}^", " ".repeat(11 + pos)),
        ]
    };
    let want: Vec<String> = [
        entry("Couldn't find field", "hist:keys=bogus", 10),
        entry("Invalid field modifier", "hist:keys=ret.bogus", 14),
        entry("Invalid field modifier", "hist:keys=ret:vals=ret.log2", 19),
        entry(
            "Sort field must be a key or a val",
            "hist:keys=ret:sort=foo",
            19,
        ),
        entry(
            "Can't clear or continue a nonexistent hist trigger",
            "hist:keys=ret:cont",
            0,
        ),
        entry(
            "Hist trigger already exists",
            "hist:keys=filename:size=128",
            0,
        ),
    ]
    .concat();
    assert_eq!(log, want);

    // `!` removes the matching one; `>` removes every hist trigger first.
    assert_eq!(
        run(
            &mut k,
            &format!("echo '!hist:keys=filename' >> {EV}/trigger")
        ),
        ""
    );
    assert_eq!(
        run(&mut k, &format!("cat {EV}/trigger")),
        "hist:keys=common_pid.execname:vals=hitcount:sort=hitcount:size=2048 [active]\n"
    );
    assert_eq!(
        run(
            &mut k,
            &format!("echo 'hist:keys=ret.hex:sort=hitcount.descending' > {EV}/trigger")
        ),
        ""
    );
    assert_eq!(
        run(&mut k, &format!("cat {EV}/trigger")),
        "hist:keys=ret.hex:vals=hitcount:sort=hitcount.descending:size=2048 [active]\n"
    );
    assert_eq!(
        run(
            &mut k,
            &format!("echo '!hist:keys=ret.hex:sort=hitcount.descending' >> {EV}/trigger")
        ),
        ""
    );
    assert_eq!(run(&mut k, &format!("cat {EV}/hist")), "");
    // No trigger left: the event leaves soft mode.
    assert_eq!(run(&mut k, &format!("cat {EV}/enable")), "0\n");

    fields_hist_counts_records(&mut k);
    named_hist_shares_one_table(&mut k);
}

/// `name=`: hist triggers of one name on two events count into one table
/// (sched_wakeup and sched_wakeup_new, one event class): on 4 CPUs the
/// table's count per worker equals its records of both events; both
/// events' `hist` show that table; a spec that does not match the name's
/// table is refused with Linux's error_log entry; pausing one event's
/// trigger leaves the other counting; the table outlives one removal.
fn named_hist_shares_one_table(k: &mut Kernel) {
    const WK: &str = "/tracing/events/sched/sched_wakeup";
    const WN: &str = "/tracing/events/sched/sched_wakeup_new";
    const SPEC: &str = "hist:keys=pid:name=wk";
    assert_eq!(run(k, "echo > /tracing/trace"), "");
    assert_eq!(run(k, "echo > /tracing/error_log"), "");
    for ev in [WK, WN] {
        assert_eq!(run(k, &format!("echo '{SPEC}' > {ev}/trigger")), "");
        assert_eq!(run(k, &format!("echo 1 > {ev}/enable")), "");
    }
    let out = run(k, "work sleep 20");
    assert!(out.contains(", 0 errors"), "{out}");
    for ev in [WK, WN] {
        assert_eq!(run(k, &format!("echo 0 > {ev}/enable")), "");
    }
    let trace = run(k, "cat /tracing/trace");
    let mut records: BTreeMap<u64, u64> = BTreeMap::new();
    let (mut wakeups, mut news) = (0, 0);
    for l in trace.lines() {
        let Some((ev, rest)) = l
            .split_once(" sched_wakeup: ")
            .map(|(_, r)| (0, r))
            .or_else(|| l.split_once(" sched_wakeup_new: ").map(|(_, r)| (1, r)))
        else {
            continue;
        };
        if !rest.starts_with("comm=work-p") {
            continue;
        }
        let pid = rest
            .split_whitespace()
            .find_map(|w| w.strip_prefix("pid="))
            .unwrap()
            .parse()
            .unwrap();
        *records.entry(pid).or_default() += 1;
        if ev == 0 {
            wakeups += 1;
        } else {
            news += 1;
        }
    }
    assert!(!trace.contains("overrun"));
    assert!(wakeups > 0 && news >= 8, "{wakeups} {news}");
    let counts = |hist: &str| -> BTreeMap<u64, u64> {
        hist.lines()
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                (w.first() == Some(&"{") && w.get(1) == Some(&"pid:"))
                    .then(|| (w[2].parse().unwrap(), w[5].parse().unwrap()))
            })
            .filter(|(pid, _)| records.contains_key(pid))
            .collect()
    };
    let (h1, h2) = (
        run(k, &format!("cat {WK}/hist")),
        run(k, &format!("cat {WN}/hist")),
    );
    assert_eq!(counts(&h1), records, "one table for both events:\n{h1}");
    assert_eq!(counts(&h2), records, "{h2}");
    assert!(
        h1.starts_with(
            "# event histogram\n#\n# trigger info: hist:name=wk:keys=pid:vals=hitcount:sort=hitcount:size=2048 [active]\n"
        ),
        "{h1}"
    );

    // Another spec under that name: refused, logged as Linux does.
    assert_eq!(
        run(
            k,
            "echo 'hist:keys=prio:name=wk' >> /tracing/events/sched/sched_waking/trigger"
        ),
        "sh: write error: Invalid argument\n"
    );
    let log: Vec<String> = run(k, "cat /tracing/error_log")
        .lines()
        .map(|l| match l.strip_prefix('[') {
            Some(rest) => rest[rest.find("] ").unwrap() + 2..].to_string(),
            None => l.to_string(),
        })
        .collect();
    assert_eq!(
        log,
        [
            "hist:sched:sched_waking: error: Named hist trigger doesn't match existing named trigger (includes variables)".to_string(),
            "  Command: hist:keys=prio:name=wk".to_string(),
            format!("{}^", " ".repeat(11 + 15)),
        ]
    );
    // The same spec twice on one event: EEXIST.
    assert_eq!(
        run(k, &format!("echo '{SPEC}' >> {WK}/trigger")),
        "sh: write error: File exists\n"
    );

    // Pausing one event's trigger: that one only.
    assert_eq!(run(k, &format!("echo '{SPEC}:pause' >> {WN}/trigger")), "");
    assert_eq!(
        run(k, &format!("cat {WN}/trigger")),
        "hist:name=wk:keys=pid:vals=hitcount:sort=hitcount:size=2048 [paused]\n"
    );
    assert_eq!(
        run(k, &format!("cat {WK}/trigger")),
        "hist:name=wk:keys=pid:vals=hitcount:sort=hitcount:size=2048 [active]\n"
    );
    // Removed from one event, the table stays with the other.
    assert_eq!(run(k, &format!("echo '!{SPEC}' >> {WK}/trigger")), "");
    assert_eq!(run(k, &format!("cat {WK}/hist")), "");
    assert_eq!(counts(&run(k, &format!("cat {WN}/hist"))), records);
    assert_eq!(run(k, &format!("echo '!{SPEC}' >> {WN}/trigger")), "");
    assert_eq!(run(k, &format!("cat {WN}/hist")), "");
    // The name is free again: a new spec under it is a new table.
    assert_eq!(
        run(
            k,
            "echo 'hist:keys=prio:name=wk' > /tracing/events/sched/sched_waking/trigger"
        ),
        ""
    );
    assert_eq!(
        run(
            k,
            "echo '!hist:keys=prio:name=wk' >> /tracing/events/sched/sched_waking/trigger"
        ),
        ""
    );
}

/// A lone hist trigger whose key and values are fields of the event's own
/// is counted from the tracepoint's arguments, without the record (the
/// probe's fields hist): its counts and sums still equal the records the
/// same event writes, on 4 CPUs, both while the event is enabled (counted,
/// then written) and soft-disabled (counted only); pause stops it.
fn fields_hist_counts_records(k: &mut Kernel) {
    const SS: &str = "/tracing/events/sched/sched_switch";
    assert_eq!(run(k, "echo > /tracing/trace"), "");
    assert_eq!(
        run(
            k,
            &format!("echo 'hist:keys=next_pid:vals=next_prio' > {SS}/trigger")
        ),
        ""
    );
    assert_eq!(run(k, &format!("echo 1 > {SS}/enable")), "");
    let out = run(k, "work sleep 30");
    assert!(out.contains(", 0 errors"), "{out}");
    assert_eq!(run(k, &format!("echo 0 > {SS}/enable")), "");
    // Soft-disabled again: counted, not written.
    assert_eq!(run(k, &format!("cat {SS}/enable")), "0*\n");
    let trace = run(k, "cat /tracing/trace");
    // The workers only ran between the enable and the disable: per worker
    // pid, the switches to it and the sum of their next_prio.
    let mut records: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut cpus = std::collections::BTreeSet::new();
    for l in trace.lines().filter(|l| l.contains(" sched_switch: ")) {
        let Some(next) = l.split(" ==> ").nth(1) else {
            continue;
        };
        if !next.starts_with("next_comm=work-p") {
            continue;
        }
        let field = |name: &str| -> u64 {
            next.split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .unwrap()
                .parse()
                .unwrap()
        };
        let e = records.entry(field("next_pid=")).or_default();
        e.0 += 1;
        e.1 += field("next_prio=");
        cpus.insert(l[l.find('[').unwrap()..l.find(']').unwrap()].to_string());
    }
    assert!(
        !trace.contains("overrun"),
        "{}",
        &trace[..trace.len().min(2000)]
    );
    assert!(
        records.len() >= 8,
        "two tasks per pair, 4 pairs: {records:?}"
    );
    assert!(cpus.len() >= 2, "records from several CPUs: {cpus:?}");
    let hist = run(k, &format!("cat {SS}/hist"));
    let counted: BTreeMap<u64, (u64, u64)> = hist
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            // { next_pid: N } hitcount: H next_prio: P
            (w.first() == Some(&"{") && w.get(1) == Some(&"next_pid:")).then(|| {
                (
                    w[2].parse().unwrap(),
                    (w[5].parse().unwrap(), w[7].parse().unwrap()),
                )
            })
        })
        .filter(|(pid, _)| records.contains_key(pid))
        .collect();
    assert_eq!(counted, records, "hist vs trace records:\n{hist}");
    assert!(
        hist.starts_with(
            "# event histogram\n#\n# trigger info: hist:keys=next_pid:vals=hitcount,next_prio:sort=hitcount:size=2048 [active]\n"
        ),
        "{hist}"
    );
    // Soft-disabled, the shell's own switches go on being counted.
    let (hits, _, _) = totals(&hist);
    run(k, "work sleep 2");
    let (hits2, _, _) = totals(&run(k, &format!("cat {SS}/hist")));
    assert!(hits2 > hits, "{hits} -> {hits2}");
    // Paused: nothing is counted.
    assert_eq!(
        run(
            k,
            &format!("echo 'hist:keys=next_pid:vals=next_prio:pause' >> {SS}/trigger")
        ),
        ""
    );
    let before = totals(&run(k, &format!("cat {SS}/hist")));
    run(k, "work sleep 2");
    assert_eq!(totals(&run(k, &format!("cat {SS}/hist"))), before);
    assert_eq!(
        run(
            k,
            &format!("echo '!hist:keys=next_pid:vals=next_prio' >> {SS}/trigger")
        ),
        ""
    );
    assert_eq!(run(k, &format!("cat {SS}/enable")), "0\n");
}
