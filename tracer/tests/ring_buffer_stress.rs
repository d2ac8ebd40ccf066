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

fn run(overwrite: bool, mode: ReadMode, resize: bool, millis: u64) {
    // Small buffer (4 pages) so that it wraps often.
    let rb = Arc::new(RingBuffer::new(NR_CPUS, 4 * 4080).unwrap());
    rb.set_overwrite(overwrite);
    let stop = Arc::new(AtomicBool::new(false));
    let clock = Arc::new(AtomicU64::new(1_000_000_000));

    let writers: Vec<_> = (0..NR_CPUS)
        .map(|cpu| {
            let (rb, stop, clock) = (rb.clone(), stop.clone(), clock.clone());
            thread::spawn(move || writer(&rb, cpu, &stop, &clock))
        })
        .collect();
    let rstop = Arc::new(AtomicBool::new(false));
    let reader = {
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
    };
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
