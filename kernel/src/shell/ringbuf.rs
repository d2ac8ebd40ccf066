//! The `ringbuf` shell command: a workload for the ring buffer's QEMU
//! tests. It writes `trace_marker` events from chosen CPUs, resizes the
//! buffer (`buffer_size_kb`) while every CPU writes, dumps
//! `per_cpu/cpuN/trace_pipe_raw` pages, writes one long marker and takes
//! snapshots while every CPU writes, all through the VFS as a user program
//! would (the files are kernel/src/trace/buffer_files.rs's, export.rs's and
//! snapshot.rs's).
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use tracer::ring_buffer::PAGE_SIZE;

use super::Output;
use crate::fs::{vfs, Errno, OpenFlags};

const MARKER_PATH: &str = "/tracing/trace_marker";

/// Writes `text` to `trace_marker` through the VFS, as `echo` would.
fn write_marker(text: &str) -> Result<(), Errno> {
    let mut f = vfs::open(MARKER_PATH, OpenFlags::O_WRONLY)?;
    f.write_all(text.as_bytes())
}

/// `ringbuf markers N [CPU]`: with a CPU, one thread pinned there writes
/// markers `seq=0` .. `seq=N-1`. Without, one thread per CPU writes
/// `seq=K` for K = 0 .. N×CPUs-1 in turn: K on CPU K mod CPUs, each after
/// the previous one returned, so their order in `trace` is known.
fn markers(args: &[String], out: &mut Output) {
    let usage = "usage: ringbuf markers N [CPU]";
    let Some(n) = args.first().and_then(|a| a.parse::<usize>().ok()) else {
        println!("{usage}");
        return;
    };
    let nr = crate::arch::nr_cpus();
    let (cpus, total): (Vec<usize>, usize) = match args.get(1) {
        None => ((0..nr).collect(), n.saturating_mul(nr)),
        Some(c) => match c.parse::<usize>() {
            Ok(c) if c < nr => (alloc::vec![c], n),
            _ => {
                println!("ringbuf: no CPU '{c}'");
                return;
            }
        },
    };
    let turn = Arc::new(AtomicUsize::new(0));
    let written = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let misplaced = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let ncpus = cpus.len();
    let handles: Vec<_> = cpus
        .iter()
        .enumerate()
        .map(|(slot, &cpu)| {
            let (turn, written, failed, misplaced, stop) = (
                turn.clone(),
                written.clone(),
                failed.clone(),
                misplaced.clone(),
                stop.clone(),
            );
            crate::sched::spawn_on(cpu, &format!("marker/{cpu}"), move || loop {
                let k = turn.load(Ordering::Acquire);
                if k >= total || stop.load(Ordering::Relaxed) {
                    return;
                }
                if k % ncpus != slot {
                    crate::sched::yield_now();
                    continue;
                }
                if crate::arch::cpu_id() != cpu {
                    misplaced.fetch_add(1, Ordering::Relaxed);
                }
                match write_marker(&format!("seq={k}")) {
                    Ok(()) => written.fetch_add(1, Ordering::Relaxed),
                    Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                };
                turn.store(k + 1, Ordering::Release);
            })
        })
        .collect();
    while turn.load(Ordering::Acquire) < total && !crate::sched::signal_pending() {
        crate::sched::sleep_ns(1_000_000);
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join();
    }
    let text = format!(
        "ringbuf markers: {} written, {} failed, {} off-cpu\n",
        written.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        misplaced.load(Ordering::Relaxed)
    );
    out.emit_str("ringbuf", &text);
}

/// Most markers one `ringbuf resize` writer writes (well below what the
/// default buffer holds, so a run that never shrinks loses nothing).
const RESIZE_MAX_MARKERS: u64 = 20_000;

/// `ringbuf resize ROUNDS KB[,KB...]`: one thread per CPU writes markers
/// `cpu=C seq=0`, `seq=1`, ... (a write that fails while its CPU is being
/// resized is retried, so every seq is committed once; each write goes
/// through traceable VFS functions) for as long as this shell thread
/// writes the sizes to `buffer_size_kb`, ROUNDS times over. Prints the
/// number of markers each CPU committed.
fn resize(args: &[String], out: &mut Output) {
    let usage = "usage: ringbuf resize ROUNDS KB[,KB...]";
    let (Some(rounds), Some(sizes)) = (
        args.first().and_then(|a| a.parse::<usize>().ok()),
        args.get(1)
            .map(|s| s.split(',').map(String::from).collect::<Vec<_>>()),
    ) else {
        println!("{usage}");
        return;
    };
    let nr = crate::arch::nr_cpus();
    let stop = Arc::new(AtomicBool::new(false));
    let retries = Arc::new(AtomicU64::new(0));
    let counts: Arc<Vec<AtomicU64>> = Arc::new((0..nr).map(|_| AtomicU64::new(0)).collect());
    let started = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..nr)
        .map(|cpu| {
            let (stop, retries, counts, started) = (
                stop.clone(),
                retries.clone(),
                counts.clone(),
                started.clone(),
            );
            crate::sched::spawn_on(cpu, &format!("rbresize/{cpu}"), move || {
                started.fetch_add(1, Ordering::AcqRel);
                let mut seq = 0;
                while !stop.load(Ordering::Acquire) && seq < RESIZE_MAX_MARKERS {
                    match write_marker(&format!("cpu={cpu} seq={seq}")) {
                        Ok(()) => seq += 1,
                        Err(Errno::EBADF) => {
                            retries.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(_) => break,
                    }
                    counts[cpu].store(seq, Ordering::Relaxed);
                    crate::sched::yield_now();
                }
            })
        })
        .collect();
    // Let every writer start before the first resize.
    while started.load(Ordering::Acquire) < nr && !crate::sched::signal_pending() {
        crate::sched::yield_now();
    }
    let (mut resizes, mut errors) = (0u64, 0u64);
    'rounds: for _ in 0..rounds {
        for kb in &sizes {
            if crate::sched::signal_pending() {
                break 'rounds;
            }
            match vfs::write_file("/tracing/buffer_size_kb", format!("{kb}\n").as_bytes()) {
                Ok(()) => resizes += 1,
                Err(e) => {
                    errors += 1;
                    println!("ringbuf: buffer_size_kb {kb}: {e}");
                }
            }
            crate::sched::yield_now();
        }
    }
    stop.store(true, Ordering::Release);
    for h in handles {
        h.join();
    }
    let mut text = format!(
        "ringbuf resize: {resizes} resizes, {errors} errors, {} retried writes,",
        retries.load(Ordering::Relaxed)
    );
    for (cpu, c) in counts.iter().enumerate() {
        let _ = write!(text, " cpu{cpu}={}", c.load(Ordering::Relaxed));
    }
    text.push('\n');
    out.emit_str("ringbuf", &text);
}

/// `ringbuf rawdump CPU`: reads `per_cpu/cpuN/trace_pipe_raw` until it is
/// empty and prints each page as `page K` then 64 lines of 64 bytes in hex.
fn rawdump(args: &[String], out: &mut Output) {
    let Some(cpu) = args.first().and_then(|a| a.parse::<usize>().ok()) else {
        println!("usage: ringbuf rawdump CPU");
        return;
    };
    let path = format!("/tracing/per_cpu/cpu{cpu}/trace_pipe_raw");
    let mut f = match vfs::open(&path, OpenFlags::O_RDONLY | OpenFlags::O_NONBLOCK) {
        Ok(f) => f,
        Err(e) => {
            println!("ringbuf: {path}: {e}");
            return;
        }
    };
    let mut page = alloc::vec![0u8; PAGE_SIZE];
    let mut k = 0;
    loop {
        let mut got = 0;
        while got < PAGE_SIZE {
            match f.read(&mut page[got..]) {
                Ok(0) | Err(Errno::EAGAIN) => break,
                Ok(m) => got += m,
                Err(e) => {
                    println!("ringbuf: {path}: {e}");
                    return;
                }
            }
        }
        if got < PAGE_SIZE {
            break;
        }
        let mut text = format!("page {k}\n");
        for line in page.chunks(64) {
            for b in line {
                let _ = write!(text, "{b:02x}");
            }
            text.push('\n');
        }
        if !out.emit_str("ringbuf", &text) {
            return;
        }
        k += 1;
    }
    out.emit_str("ringbuf", &format!("ringbuf rawdump: {k} pages\n"));
}

/// `ringbuf bigmarker LEN`: writes a LEN-byte text (`a`..`z` repeated)
/// to `trace_marker` with one `write_all`, as a user program would: each
/// short count makes the rest go into a new event.
fn bigmarker(args: &[String], out: &mut Output) {
    let Some(len) = args.first().and_then(|a| a.parse::<usize>().ok()) else {
        println!("usage: ringbuf bigmarker LEN");
        return;
    };
    let text: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
    let mut f = match vfs::open(MARKER_PATH, OpenFlags::O_WRONLY) {
        Ok(f) => f,
        Err(e) => {
            println!("ringbuf: {MARKER_PATH}: {e}");
            return;
        }
    };
    let mut rest = &text[..];
    let mut writes = Vec::new();
    while !rest.is_empty() {
        match f.write(rest) {
            Ok(n) if n > 0 => {
                writes.push(format!("{n}"));
                rest = &rest[n..];
            }
            Ok(_) => break,
            Err(e) => {
                println!("ringbuf: {MARKER_PATH}: {e}");
                return;
            }
        }
    }
    out.emit_str(
        "ringbuf",
        &format!("ringbuf bigmarker: writes {}\n", writes.join(" ")),
    );
}

/// The `cpu=C seq=K` markers of a `trace`-format text, as sorted ranges of
/// K per CPU (`nr` CPUs; other lines are skipped).
fn marker_ranges(text: &str, nr: usize) -> Vec<Vec<(u64, u64)>> {
    let mut seqs: Vec<Vec<u64>> = alloc::vec![Vec::new(); nr];
    for line in text.lines() {
        let Some(i) = line.find("tracing_mark_write: cpu=") else {
            continue;
        };
        let mut f = line[i + "tracing_mark_write: ".len()..].split_whitespace();
        let cpu = f
            .next()
            .and_then(|c| c.strip_prefix("cpu=")?.parse::<usize>().ok());
        let seq = f
            .next()
            .and_then(|k| k.strip_prefix("seq=")?.parse::<u64>().ok());
        if let (Some(c), Some(k)) = (cpu, seq) {
            if c < nr {
                seqs[c].push(k);
            }
        }
    }
    seqs.into_iter()
        .map(|mut v| {
            v.sort_unstable();
            let mut r: Vec<(u64, u64)> = Vec::new();
            for k in v {
                match r.last_mut() {
                    // A repeated number starts a range of its own, so that
                    // the reader sees it twice.
                    Some((_, e)) if *e + 1 == k => *e = k,
                    _ => r.push((k, k)),
                }
            }
            r
        })
        .collect()
}

/// One line of `ringbuf snapshot`: `ringbuf snapshot WHAT: cpu0=A-B,C-D cpu1=...`.
fn ranges_line(what: &str, ranges: &[Vec<(u64, u64)>]) -> String {
    let mut line = format!("ringbuf snapshot {what}:");
    for (cpu, r) in ranges.iter().enumerate() {
        let _ = write!(line, " cpu{cpu}=");
        for (i, (a, b)) in r.iter().enumerate() {
            let _ = write!(line, "{}{a}-{b}", if i == 0 { "" } else { "," });
        }
    }
    line.push('\n');
    line
}

/// `ringbuf snapshot N [DIR]`: one thread per CPU writes markers
/// `cpu=C seq=0` .. `seq=N-1` to `DIR/trace_marker` (DIR defaults to
/// `/tracing`; a failed write is retried and counted), while this shell
/// thread, until the first of them is done, takes a snapshot (`echo 1 >
/// DIR/snapshot`), reads it (`cat DIR/snapshot`) and clears it (`echo 2 >
/// DIR/snapshot`). Every thread sleeps a little (a timer tick) after each
/// step, so that a snapshot catches every writer part-way. For each
/// snapshot read that has markers, and for `DIR/trace` at the end, it
/// prints them as ranges per CPU, for the test to check that each number
/// was seen exactly once; then a summary.
fn snapshot(args: &[String], out: &mut Output) {
    let Some(n) = args.first().and_then(|a| a.parse::<u64>().ok()) else {
        println!("usage: ringbuf snapshot N [DIR]");
        return;
    };
    let dir = args.get(1).map_or("/tracing", String::as_str);
    let (marker, snap, trace) = (
        format!("{dir}/trace_marker"),
        format!("{dir}/snapshot"),
        format!("{dir}/trace"),
    );
    let nr = crate::arch::nr_cpus();
    let retries = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..nr)
        .map(|cpu| {
            let (retries, done, marker) = (retries.clone(), done.clone(), marker.clone());
            crate::sched::spawn_on(cpu, &format!("rbsnap/{cpu}"), move || {
                let mut seq = 0;
                while seq < n && !crate::sched::signal_pending() {
                    let w = vfs::open(&marker, OpenFlags::O_WRONLY)
                        .and_then(|mut f| f.write_all(format!("cpu={cpu} seq={seq}").as_bytes()));
                    match w {
                        Ok(()) => seq += 1,
                        Err(Errno::EBADF) => {
                            retries.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            println!("ringbuf: {marker}: {e}");
                            break;
                        }
                    }
                    // A pause, so that each snapshot catches every writer
                    // part-way rather than one CPU's markers all at once.
                    crate::sched::sleep_ns(100_000);
                }
                done.fetch_add(1, Ordering::AcqRel);
            })
        })
        .collect();
    let (mut rounds, mut found, mut errors) = (0u64, 0u64, 0u64);
    // Until the first writer is done: the others' last markers stay in the
    // live buffer.
    while done.load(Ordering::Acquire) == 0 && !crate::sched::signal_pending() {
        let r = vfs::write_file(&snap, b"1\n")
            .and_then(|_| vfs::read_file(&snap))
            .and_then(|text| {
                let text = String::from_utf8_lossy(&text);
                let ranges = marker_ranges(&text, nr);
                // Rounds that found nothing are only counted.
                if ranges.iter().any(|r| !r.is_empty()) {
                    found += 1;
                    out.emit_str("ringbuf", &ranges_line(&format!("round {rounds}"), &ranges));
                }
                vfs::write_file(&snap, b"2\n")
            });
        match r {
            Ok(()) => rounds += 1,
            Err(e) => {
                errors += 1;
                println!("ringbuf: {snap}: {e}");
                break;
            }
        }
        // As the writers: a pause lets this CPU's writer run too.
        crate::sched::sleep_ns(100_000);
    }
    for h in handles {
        h.join();
    }
    match vfs::read_file(&trace) {
        Ok(text) => {
            let text = String::from_utf8_lossy(&text);
            out.emit_str("ringbuf", &ranges_line("live", &marker_ranges(&text, nr)));
        }
        Err(e) => {
            errors += 1;
            println!("ringbuf: {trace}: {e}");
        }
    }
    out.emit_str(
        "ringbuf",
        &format!(
            "ringbuf snapshot: {rounds} rounds, {found} with markers, {errors} errors, {} retried writes\n",
            retries.load(Ordering::Relaxed)
        ),
    );
}

/// The `ringbuf` shell command.
pub fn command(args: &[String], out: &mut Output) {
    match args.first().map(String::as_str) {
        Some("markers") => markers(&args[1..], out),
        Some("resize") => resize(&args[1..], out),
        Some("rawdump") => rawdump(&args[1..], out),
        Some("bigmarker") => bigmarker(&args[1..], out),
        Some("snapshot") => snapshot(&args[1..], out),
        _ => println!(
            "usage: ringbuf markers N [CPU] | resize ROUNDS KB[,KB...] | rawdump CPU | bigmarker LEN | snapshot N [DIR]"
        ),
    }
}
