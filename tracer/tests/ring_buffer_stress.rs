//! Multi-threaded stress test of the ring buffer: one writer thread per
//! simulated CPU (with simulated interrupt nesting), concurrent readers on
//! other threads. Every committed event must be read exactly once or be
//! counted in `overrun`; nothing may be garbled.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use tracer::ring_buffer::{decode_page, Cpus, EventKind, RingBuffer, PAGE_SIZE};

const NR_CPUS: usize = 2;

fn checksum(b: &[u8]) -> u32 {
    b.iter().fold(0x811c9dc5u32, |h, &x| {
        (h ^ x as u32).wrapping_mul(0x01000193)
    })
}

/// Payload: cpu u32, seq u64, len u32, checksum u32 (of the filler), filler.
fn fill(buf: &mut [u8], cpu: usize, seq: u64) {
    let len = buf.len();
    for (i, b) in buf[20..].iter_mut().enumerate() {
        *b = (seq as u8).wrapping_mul(31).wrapping_add(i as u8);
    }
    let sum = checksum(&buf[20..]);
    buf[0..4].copy_from_slice(&(cpu as u32).to_le_bytes());
    buf[4..12].copy_from_slice(&seq.to_le_bytes());
    buf[12..16].copy_from_slice(&(len as u32).to_le_bytes());
    buf[16..20].copy_from_slice(&sum.to_le_bytes());
}

/// Check a payload; returns (cpu, seq).
fn check(data: &[u8]) -> (usize, u64) {
    assert!(data.len() >= 20, "short event {}", data.len());
    let cpu = u32::from_le_bytes(data[0..4].try_into().unwrap()) as usize;
    let seq = u64::from_le_bytes(data[4..12].try_into().unwrap());
    let len = u32::from_le_bytes(data[12..16].try_into().unwrap()) as usize;
    assert!(
        len <= data.len() && data.len() < len + 4 + 4,
        "bad length {len} vs {}",
        data.len()
    );
    let sum = u32::from_le_bytes(data[16..20].try_into().unwrap());
    assert_eq!(
        checksum(&data[20..len]),
        sum,
        "garbled event cpu {cpu} seq {seq}"
    );
    assert!(data[len..].iter().all(|&b| b == 0), "padding not zero");
    (cpu, seq)
}

#[derive(Default)]
struct WriterResult {
    committed: Vec<u64>,
    failed: u64,
}

/// Writer for `cpu`: sequence numbers in reservation order; every 7th
/// event is "interrupted" by a nested whole write before its commit.
fn writer(rb: &RingBuffer, cpu: usize, stop: &AtomicBool, clock: &AtomicU64) -> WriterResult {
    let mut res = WriterResult::default();
    let mut seq = 0u64;
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let len = 20 + ((i * 37) % 180) as usize;
        let ts = clock.fetch_add(1 + (i % 5) * 1000, Ordering::Relaxed);
        let my = seq;
        seq += 1;
        // SAFETY: this thread is the only writer of `cpu`.
        match unsafe { rb.lock_reserve(cpu, len, ts) } {
            Some(mut r) => {
                if i.is_multiple_of(7) {
                    // Nested event (an "interrupt"): reserved after us, so it
                    // comes after us in the buffer.
                    let nlen = 20 + (i % 100) as usize;
                    let mut nb = vec![0u8; nlen];
                    let nseq = seq;
                    seq += 1;
                    fill(&mut nb, cpu, nseq);
                    // SAFETY: nested write on the same thread.
                    if unsafe { rb.write(cpu, ts + 1, &nb) } {
                        res.committed.push(nseq);
                    } else {
                        res.failed += 1;
                    }
                }
                fill(r.data_mut(), cpu, my);
                rb.unlock_commit(r);
                res.committed.push(my);
            }
            None => res.failed += 1,
        }
        if i.is_multiple_of(64) {
            thread::yield_now();
        }
    }
    res.committed.sort_unstable();
    res
}

/// Reader state per CPU.
#[derive(Default, Clone)]
struct Seen {
    seqs: Vec<u64>,
    last_ts: u64,
    lost_reported: u64,
    lost_unknown: bool,
}

fn record(seen: &mut Seen, cpu: usize, ts: u64, data: &[u8], lost: u64) {
    let (c, seq) = check(data);
    assert_eq!(c, cpu, "event of cpu {c} read from cpu {cpu}");
    if let Some(&last) = seen.seqs.last() {
        assert!(seq > last, "cpu {cpu}: seq {seq} after {last}");
    }
    assert!(
        ts >= seen.last_ts,
        "cpu {cpu}: time went backwards {ts} < {}",
        seen.last_ts
    );
    seen.last_ts = ts;
    seen.seqs.push(seq);
    seen.lost_reported += lost;
}

#[derive(Clone, Copy, PartialEq)]
enum ReadMode {
    Consume,
    Pages,
}

fn read_one(
    rb: &RingBuffer,
    cpu: usize,
    mode: ReadMode,
    seen: &mut Seen,
    page: &mut [u8; PAGE_SIZE],
) -> bool {
    match mode {
        ReadMode::Consume => rb
            .consume_with(cpu, |ts, d, lost| record(seen, cpu, ts, d, lost))
            .is_some(),
        ReadMode::Pages => {
            if rb.read_page(cpu, page).is_none() {
                return false;
            }
            let hdr = tracer::ring_buffer::decode_page_header(page).unwrap();
            let mut lost = hdr.missed_stored.unwrap_or(0);
            if hdr.missed_events && hdr.missed_stored.is_none() {
                // A full page has no room for the count (Linux prints
                // "[LOST EVENTS]" without a number then).
                seen.lost_unknown = true;
            }
            assert!(hdr.missed_stored.is_none() || hdr.missed_events);
            for ev in decode_page(page).unwrap() {
                let ev = ev.expect("well-formed page");
                if ev.kind == EventKind::Data {
                    record(seen, cpu, ev.ts, ev.payload, lost);
                    lost = 0;
                }
            }
            true
        }
    }
}

/// One [`writer`] thread per CPU.
fn spawn_writers(
    rb: &Arc<RingBuffer>,
    stop: &Arc<AtomicBool>,
    clock: &Arc<AtomicU64>,
) -> Vec<thread::JoinHandle<WriterResult>> {
    (0..NR_CPUS)
        .map(|cpu| {
            let (rb, stop, clock) = (rb.clone(), stop.clone(), clock.clone());
            thread::spawn(move || writer(&rb, cpu, &stop, &clock))
        })
        .collect()
}

/// A reader thread taking up to 50 events of each CPU in turn until
/// `rstop`; it returns what it saw.
fn spawn_reader(
    rb: &Arc<RingBuffer>,
    mode: ReadMode,
    rstop: &Arc<AtomicBool>,
) -> thread::JoinHandle<Vec<Seen>> {
    let (rb, rstop) = (rb.clone(), rstop.clone());
    thread::spawn(move || {
        let mut seen = vec![Seen::default(); NR_CPUS];
        let mut page = Box::new([0u8; PAGE_SIZE]);
        let mut n = 0u64;
        while !rstop.load(Ordering::Relaxed) {
            for (cpu, s) in seen.iter_mut().enumerate() {
                for _ in 0..50 {
                    if !read_one(&rb, cpu, mode, s, &mut page) {
                        break;
                    }
                }
            }
            n += 1;
            if n.is_multiple_of(16) {
                thread::yield_now();
            }
        }
        seen
    })
}

fn run(overwrite: bool, mode: ReadMode, resize: bool, millis: u64) {
    // Small buffer (4 pages) so that it wraps often.
    let rb = Arc::new(RingBuffer::new(NR_CPUS, 4 * 4080).unwrap());
    rb.set_overwrite(overwrite);
    let stop = Arc::new(AtomicBool::new(false));
    let clock = Arc::new(AtomicU64::new(1_000_000_000));

    let writers = spawn_writers(&rb, &stop, &clock);
    let rstop = Arc::new(AtomicBool::new(false));
    let reader = spawn_reader(&rb, mode, &rstop);
    let resizer = resize.then(|| {
        let (rb, stop) = (rb.clone(), stop.clone());
        thread::spawn(move || {
            let mut k = 0usize;
            while !stop.load(Ordering::Relaxed) {
                k += 1;
                let pages = 2 + k % 5;
                rb.resize(Cpus::All, pages * 4080).unwrap();
                // A non-consuming pass too (stops recording briefly).
                if let Some(it) = rb.iter(k % NR_CPUS) {
                    for (_, d) in it.take(20) {
                        check(&d);
                    }
                }
                thread::sleep(Duration::from_millis(2));
            }
        })
    });

    let t0 = Instant::now();
    thread::sleep(Duration::from_millis(millis));
    stop.store(true, Ordering::Relaxed);
    let results: Vec<WriterResult> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    if let Some(r) = resizer {
        r.join().unwrap();
    }
    rstop.store(true, Ordering::Relaxed);
    let mut seen = reader.join().unwrap();
    // Drain what is left.
    let mut page = Box::new([0u8; PAGE_SIZE]);
    for (cpu, s) in seen.iter_mut().enumerate() {
        while read_one(&rb, cpu, mode, s, &mut page) {}
        assert!(
            rb.empty_cpu(cpu),
            "not empty after drain:\n{}",
            rb.debug_dump(cpu)
        );
    }
    assert!(t0.elapsed() < Duration::from_secs(20));

    for cpu in 0..NR_CPUS {
        let st = rb.stats(cpu).unwrap();
        let committed = &results[cpu].committed;
        let read = &seen[cpu].seqs;
        // Every read event was committed, exactly once.
        let mut c = committed.iter().peekable();
        for s in read {
            while c.peek().is_some_and(|&&x| x < *s) {
                c.next();
            }
            assert_eq!(c.next(), Some(s), "cpu {cpu}: read seq {s} never committed");
        }
        let missing = committed.len() as u64 - read.len() as u64;
        if missing != st.overrun {
            let rs: std::collections::HashSet<u64> = read.iter().copied().collect();
            let miss: Vec<u64> = committed
                .iter()
                .copied()
                .filter(|x| !rs.contains(x))
                .collect();
            let mut ranges = vec![];
            for &m in &miss {
                match ranges.last_mut() {
                    Some((_, e)) if *e + 1 == m => *e = m,
                    _ => ranges.push((m, m)),
                }
            }
            eprintln!(
                "cpu {cpu} missing ranges {:?} last read {:?}\n{}",
                ranges,
                read.last(),
                rb.debug_dump(cpu)
            );
        }
        eprintln!(
            "cpu {cpu}: committed {} read {} missing {missing} failed {} stats {st:?} lost reported {}",
            committed.len(),
            read.len(),
            results[cpu].failed,
            seen[cpu].lost_reported
        );
        assert!(read.len() > 100, "cpu {cpu}: too few events read");
        assert_eq!(
            st.overrun, missing,
            "cpu {cpu}: missing events must be the overrun"
        );
        assert_eq!(st.entries, 0);
        assert_eq!(st.bytes, 0, "no bytes left after draining");
        assert_eq!(st.commit_overrun, 0);
        if mode == ReadMode::Consume {
            assert_eq!(st.read_events, read.len() as u64);
        }
        if overwrite {
            assert_eq!(st.dropped_events, 0);
        } else {
            if !resize {
                // (Shrinking drops the oldest pages into overrun, in any mode.)
                assert_eq!(st.overrun, 0, "producer/consumer mode never overwrites");
                assert_eq!(
                    st.dropped_events, results[cpu].failed,
                    "every failed write is a dropped event"
                );
            }
        }
        if seen[cpu].lost_unknown {
            assert!(seen[cpu].lost_reported <= st.overrun);
        } else if !resize {
            // Lost events are reported to the reader as they are found.
            assert_eq!(
                seen[cpu].lost_reported, st.overrun,
                "cpu {cpu}: reported lost events"
            );
        }
    }
}

#[test]
fn stress_overwrite_consume() {
    run(true, ReadMode::Consume, false, 1500);
}

#[test]
fn stress_producer_consumer_consume() {
    run(false, ReadMode::Consume, false, 1500);
}

#[test]
fn stress_overwrite_read_page() {
    run(true, ReadMode::Pages, false, 1000);
}

#[test]
fn stress_overwrite_with_resize_and_iter() {
    run(true, ReadMode::Consume, true, 1000);
}

#[test]
fn stress_producer_consumer_with_resize() {
    run(false, ReadMode::Pages, true, 1000);
}

/// `reset_cpu` while writers (with nested events) and a reader run: a
/// reset moves the tail and commit page, which the writers hold by
/// address, back to slot 1 of the table after swapping the reader page
/// into slot 0. Whatever is read is intact and in order; after the last
/// reset and the drain, every CPU writes and reads again.
/// Ends the test process if the test holding it has not finished within
/// `secs`: a ring buffer that loses its tail (a lab starter, a bug) can
/// leave a writer, the reader or the drain spinning for ever, and a test
/// that never ends fails nothing (the lab grader and CI would wait).
struct Watchdog(Arc<AtomicBool>);

impl Watchdog {
    fn new(name: &'static str, secs: u64) -> Watchdog {
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        thread::spawn(move || {
            let t0 = Instant::now();
            while !d.load(Ordering::Relaxed) {
                if t0.elapsed() > Duration::from_secs(secs) {
                    eprintln!("{name}: not finished after {secs} s: stuck");
                    std::process::exit(101);
                }
                thread::park_timeout(Duration::from_millis(100));
            }
        });
        Watchdog(done)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[test]
fn stress_reset_with_writers() {
    let _watchdog = Watchdog::new("stress_reset_with_writers", 60);
    let rb = Arc::new(RingBuffer::new(NR_CPUS, 4 * 4080).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let clock = Arc::new(AtomicU64::new(1_000_000_000));
    let writers = spawn_writers(&rb, &stop, &clock);
    // Every writer has written before the first reset: a writer that dies
    // inside a write (a lab starter's stub panics there) would leave the
    // reset waiting for it for ever. A writer that ended did so by
    // panicking: its panic is the test's failure.
    let t = Instant::now();
    while (0..NR_CPUS).any(|cpu| rb.entries_cpu(cpu) == 0) {
        if let Some(w) = writers.iter().position(|w| w.is_finished()) {
            let w = writers.into_iter().nth(w).unwrap();
            match w.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(_) => panic!("a writer ended before it was told to stop"),
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "a writer wrote nothing in 30 s"
        );
        thread::yield_now();
    }
    let rstop = Arc::new(AtomicBool::new(false));
    let reader = spawn_reader(&rb, ReadMode::Consume, &rstop);
    let t0 = Instant::now();
    let mut resets = 0;
    while t0.elapsed() < Duration::from_millis(800) {
        for cpu in 0..NR_CPUS {
            rb.reset_cpu(cpu).unwrap();
            resets += 1;
        }
        thread::sleep(Duration::from_millis(1));
    }
    stop.store(true, Ordering::Relaxed);
    let results: Vec<WriterResult> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    rstop.store(true, Ordering::Relaxed);
    let mut seen = reader.join().unwrap();
    let mut page = Box::new([0u8; PAGE_SIZE]);
    for (cpu, s) in seen.iter_mut().enumerate() {
        while read_one(&rb, cpu, ReadMode::Consume, s, &mut page) {}
        assert!(
            rb.empty_cpu(cpu),
            "not empty after drain:\n{}",
            rb.debug_dump(cpu)
        );
        eprintln!(
            "cpu {cpu}: committed {} read {} after {resets} resets",
            results[cpu].committed.len(),
            s.seqs.len()
        );
        assert!(s.seqs.len() > 100, "cpu {cpu}: too few events read");
        // Every event read was committed (`record` checked the order).
        let committed: std::collections::HashSet<u64> =
            results[cpu].committed.iter().copied().collect();
        assert!(s.seqs.iter().all(|q| committed.contains(q)));
        // The tail is a page of the table: a new event is written and read.
        let mut b = vec![0u8; 64];
        fill(&mut b, cpu, u64::MAX / 2);
        // SAFETY: the writers are joined; this thread is the only writer.
        assert!(unsafe { rb.write(cpu, u64::MAX / 4, &b) });
        let got = rb.consume_with(cpu, |_, d, _| check(d)).unwrap();
        assert_eq!(got, (cpu, u64::MAX / 2));
    }
    assert!(resets > 20, "only {resets} resets");
}

/// One writer's side of the test's grace-period scheme: `gp` is odd while
/// the writer is inside a write (between loading a per-CPU pointer and its
/// commit), even outside. A fence after entering orders the pointer load
/// after it, so a swapper that saw `gp` even (or changed) after its swap
/// knows that any later write loads the new pointer.
fn rcu_write(gp: &AtomicU64, f: impl FnOnce() -> bool) -> bool {
    gp.fetch_add(1, Ordering::SeqCst);
    std::sync::atomic::fence(Ordering::SeqCst);
    let ok = f();
    gp.fetch_add(1, Ordering::Release);
    ok
}

/// `synchronize_rcu` for [`rcu_write`]: wait until every writer that was
/// inside a write has left it.
fn rcu_synchronize(gps: &[AtomicU64]) {
    std::sync::atomic::fence(Ordering::SeqCst);
    for gp in gps {
        let v = gp.load(Ordering::SeqCst);
        if v % 2 == 1 {
            let t0 = Instant::now();
            while gp.load(Ordering::SeqCst) == v {
                assert!(t0.elapsed() < Duration::from_secs(20), "writer stuck");
                std::hint::spin_loop();
            }
        }
    }
}

/// The numbers seen per CPU, each at most once.
struct Numbers {
    seen: Vec<Vec<bool>>,
    /// Per CPU: every number below it was seen.
    upto: Vec<u64>,
}

impl Numbers {
    fn new(n: u64) -> Numbers {
        Numbers {
            seen: vec![vec![false; n as usize]; NR_CPUS],
            upto: vec![0; NR_CPUS],
        }
    }

    fn see(&mut self, cpu: usize, d: &[u8]) {
        let (c, s) = check(d);
        assert_eq!(c, cpu);
        let seen = &mut self.seen[cpu];
        assert!(!seen[s as usize], "cpu {cpu}: {s} seen twice");
        seen[s as usize] = true;
        while self.upto[cpu] < seen.len() as u64 && seen[self.upto[cpu] as usize] {
            self.upto[cpu] += 1;
        }
    }
}

/// The snapshot under load: a writer thread per CPU writes numbered events
/// (every 7th reservation "interrupted" by a nested write, every 16th held
/// across a yield before its commit) into `live`; another thread swaps every
/// CPU's buffer with `spare`, waits for writers in flight (the grace
/// period), then reads the spare to the end, either consuming it or with a
/// non-consuming iterator followed by a reset (`cat snapshot; echo 2 >
/// snapshot`). Checked:
/// - every event reserved before a swap is in the spare read after it (the
///   grace period: without it, a reservation held across the swap is
///   missed, or reset away);
/// - every number is seen exactly once, across the spares read and what is
///   left in both buffers at the end, and no write fails.
#[test]
fn stress_swap_cpu_with_writers() {
    const N: u64 = 100_000;
    // 100 000 events of 24..=40 bytes fit without wrapping even if no swap
    // happened: producer/consumer mode then counts any overflow as dropped.
    let live = Arc::new(RingBuffer::new(NR_CPUS, 6 << 20).unwrap());
    let spare = Arc::new(RingBuffer::new(NR_CPUS, 6 << 20).unwrap());
    live.set_overwrite(false);
    spare.set_overwrite(false);
    let new_counters =
        || -> Arc<Vec<AtomicU64>> { Arc::new((0..NR_CPUS).map(|_| AtomicU64::new(0)).collect()) };
    let gps = new_counters();
    // Per CPU: every number below it has been reserved.
    let reserved = new_counters();
    let clock = Arc::new(AtomicU64::new(1_000));
    let done = Arc::new(AtomicU64::new(0));
    // Swaps made so far: each writer waits half-way for MIN_SWAPS of them,
    // so that however the host schedules the threads, the swaps come while
    // every writer is in the middle of its stream.
    const MIN_SWAPS: u64 = 10;
    let swaps_made = Arc::new(AtomicU64::new(0));

    let writers: Vec<_> = (0..NR_CPUS)
        .map(|cpu| {
            let (rb, gps, reserved) = (live.clone(), gps.clone(), reserved.clone());
            let (clock, done, swaps_made) = (clock.clone(), done.clone(), swaps_made.clone());
            thread::spawn(move || {
                let mut seq = 0u64;
                let mut failed = 0u64;
                let mut i = 0u64;
                let mut waited = false;
                while seq < N {
                    if !waited && seq >= N / 2 {
                        waited = true;
                        while swaps_made.load(Ordering::SeqCst) < MIN_SWAPS {
                            thread::yield_now();
                        }
                    }
                    i += 1;
                    let ts = clock.fetch_add(1, Ordering::Relaxed);
                    let len = 24 + (i % 5) as usize * 4;
                    let my = seq;
                    seq += 1;
                    let nested = i.is_multiple_of(7) && seq < N;
                    let nseq = seq;
                    if nested {
                        seq += 1;
                    }
                    let ok = rcu_write(&gps[cpu], || {
                        // SAFETY: the only writer of `cpu`; the nested write
                        // commits before the outer one.
                        let Some(mut r) = (unsafe { rb.lock_reserve(cpu, len, ts) }) else {
                            return false;
                        };
                        reserved[cpu].store(my + 1, Ordering::SeqCst);
                        let mut ok = true;
                        if nested {
                            let mut nb = [0u8; 28];
                            fill(&mut nb, cpu, nseq);
                            // SAFETY: as above. It loads the per-CPU pointer
                            // again, and may get the other buffer than the
                            // outer event's if a swap came in between.
                            ok = unsafe { rb.write(cpu, ts, &nb) };
                        }
                        if i.is_multiple_of(16) {
                            // A long write: a swap is likely to come while
                            // this event is reserved and not committed.
                            thread::yield_now();
                        }
                        fill(r.data_mut(), cpu, my);
                        rb.unlock_commit(r);
                        ok
                    });
                    failed += u64::from(!ok);
                }
                done.fetch_add(1, Ordering::SeqCst);
                failed
            })
        })
        .collect();

    let t0 = Instant::now();
    let mut seen = Numbers::new(N);
    let mut swaps = 0u64;
    while done.load(Ordering::SeqCst) < NR_CPUS as u64 {
        assert!(t0.elapsed() < Duration::from_secs(60), "writers too slow");
        let before: Vec<u64> = reserved.iter().map(|r| r.load(Ordering::SeqCst)).collect();
        for cpu in 0..NR_CPUS {
            // SAFETY: both buffers live until the end of the test, after
            // every writer, reader and iterator; the spare is read or reset
            // only after `rcu_synchronize`.
            unsafe { live.swap_cpu(&spare, cpu) }.unwrap();
        }
        swaps += 1;
        swaps_made.store(swaps, Ordering::SeqCst);
        rcu_synchronize(&gps);
        for (cpu, &b) in before.iter().enumerate() {
            if swaps.is_multiple_of(2) {
                while spare
                    .consume_with(cpu, |_, d, lost| {
                        assert_eq!(lost, 0);
                        seen.see(cpu, d)
                    })
                    .is_some()
                {}
            } else {
                for (_, d) in spare.iter(cpu).unwrap() {
                    seen.see(cpu, &d);
                }
            }
            let all = seen.upto[cpu];
            assert!(
                all >= b,
                "cpu {cpu}: {all}, reserved before swap {swaps}, is not in its snapshot (all below {b} were)"
            );
        }
        if !swaps.is_multiple_of(2) {
            spare.reset();
        }
        thread::yield_now();
    }
    let failed: Vec<u64> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    for rb in [&spare, &live] {
        for cpu in 0..NR_CPUS {
            while rb.consume_with(cpu, |_, d, _| seen.see(cpu, d)).is_some() {}
        }
    }
    eprintln!("swaps {swaps}, failed writes {failed:?}");
    assert!(
        swaps >= MIN_SWAPS,
        "too few swaps to mean anything: {swaps}"
    );
    for (cpu, &f) in failed.iter().enumerate() {
        assert_eq!(f, 0, "cpu {cpu}: a write failed");
        assert_eq!(live.stats(cpu).unwrap().dropped_events, 0);
        assert_eq!(spare.stats(cpu).unwrap().dropped_events, 0);
        assert_eq!(seen.upto[cpu], N, "cpu {cpu}: events lost");
    }
}
