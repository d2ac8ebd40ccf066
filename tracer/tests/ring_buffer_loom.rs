//! loom model checking of the lock-free protocol:
//! `RUSTFLAGS="--cfg loom" cargo test --release --test ring_buffer_loom`
//! (`LOOM_MAX_PREEMPTIONS=4` for a deeper search).
//!
//! A tiny buffer (2 ring pages + reader page) and events big enough that a
//! few of them fill a page, so the writer moves the tail (and, in overwrite
//! mode, the head) while a reader on another thread swaps the reader page.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use tracer::ring_buffer::RingBuffer;

/// 1800-byte events: two fit in a page (2 × 1808 = 3616 ≤ 4080), the third
/// moves to the next page.
const LEN: usize = 1800;

fn ev(i: u8) -> Vec<u8> {
    let mut v = vec![i; LEN];
    v[LEN - 1] = i ^ 0x5a;
    v
}

fn check(data: &[u8]) -> u8 {
    let i = data[0];
    assert!(data[..LEN - 1].iter().all(|&b| b == i), "garbled");
    assert_eq!(data[LEN - 1], i ^ 0x5a, "garbled tail");
    i
}

/// A thread that writes events `ids` on CPU 0 (time stamp 100 + id) and
/// returns the ids whose write succeeded.
fn spawn_writer(rb: &Arc<RingBuffer>, ids: core::ops::Range<u8>) -> thread::JoinHandle<Vec<u8>> {
    let rb = rb.clone();
    thread::spawn(move || {
        let mut ok = Vec::new();
        for i in ids {
            // SAFETY: the only writer of CPU 0.
            if unsafe { rb.write(0, 100 + i as u64, &ev(i)) } {
                ok.push(i);
            }
        }
        ok
    })
}

/// The ids of the events left on CPU 0, consumed (each checked intact).
fn drain(rb: &RingBuffer) -> Vec<u8> {
    core::iter::from_fn(|| rb.consume_with(0, |_, d, _| check(d))).collect()
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    // LOOM_MAX_PREEMPTIONS (read by Builder::new) overrides this default;
    // 3 takes seconds, 4 under a minute.
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.max_branches = 100_000;
    b.check(f);
}

/// Writer writes `n` events while a reader consumes; afterwards everything
/// is read once or counted as overrun (overwrite) / dropped (producer/consumer).
fn writer_vs_reader(n: u8, overwrite: bool) {
    model(move || {
        let rb = Arc::new(RingBuffer::new(1, 2 * 4080).unwrap());
        rb.set_overwrite(overwrite);
        let w = spawn_writer(&rb, 0..n);
        let mut seen = Vec::new();
        let mut lost = 0;
        for _ in 0..2 {
            if let Some(e) = rb.consume_with(0, |ts, d, l| (ts, check(d), l)) {
                assert_eq!(e.0, 100 + e.1 as u64);
                lost += e.2;
                seen.push(e.1);
            }
        }
        let ok = w.join().unwrap();
        while let Some(e) = rb.consume_with(0, |ts, d, l| (ts, check(d), l)) {
            assert_eq!(e.0, 100 + e.1 as u64);
            lost += e.2;
            seen.push(e.1);
        }
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "out of order {seen:?}"
        );
        let st = rb.stats(0).unwrap();
        assert!(seen.iter().all(|s| ok.contains(s)));
        assert_eq!(
            seen.len() as u64 + st.overrun,
            ok.len() as u64,
            "seen {seen:?} ok {ok:?} {st:?}"
        );
        assert_eq!(lost, st.overrun);
        if !overwrite {
            assert_eq!(st.overrun, 0);
            assert_eq!(st.dropped_events, (n as usize - ok.len()) as u64);
        } else {
            assert_eq!(ok.len(), n as usize);
        }
    });
}

#[test]
fn loom_overwrite_writer_vs_reader() {
    // 5 events, 2 per page, 2 ring pages: wraps and overwrites.
    writer_vs_reader(5, true);
}

#[test]
fn loom_producer_consumer_writer_vs_reader() {
    writer_vs_reader(5, false);
}

/// A nested ("interrupt") write between reserve and commit of another
/// event, racing with a reader: the inner event becomes visible only with
/// the outer commit, both are intact and in reservation order.
#[test]
fn loom_nested_writer_vs_reader() {
    model(|| {
        let rb = Arc::new(RingBuffer::new(1, 2 * 4080).unwrap());
        let w = {
            let rb = rb.clone();
            thread::spawn(move || {
                // SAFETY: the only writer of CPU 0; inner commits first.
                unsafe {
                    assert!(rb.write(0, 100, &ev(0)));
                    let mut outer = rb.lock_reserve(0, LEN, 101).unwrap();
                    // The inner event does not fit on the page: it moves the
                    // tail while the outer one is uncommitted.
                    assert!(rb.write(0, 102, &ev(2)));
                    outer.data_mut().copy_from_slice(&ev(1));
                    rb.unlock_commit(outer);
                }
            })
        };
        let mut seen = Vec::new();
        for _ in 0..2 {
            if let Some(i) = rb.consume_with(0, |_, d, _| check(d)) {
                seen.push(i);
            }
        }
        w.join().unwrap();
        while let Some(i) = rb.consume_with(0, |_, d, _| check(d)) {
            seen.push(i);
        }
        assert_eq!(seen, vec![0, 1, 2]);
    });
}

/// Resize while a writer runs: nothing committed is lost or garbled.
#[test]
fn loom_resize_vs_writer() {
    model(|| {
        let rb = Arc::new(RingBuffer::new(1, 2 * 4080).unwrap());
        let w = spawn_writer(&rb, 0..3);
        rb.resize(tracer::ring_buffer::Cpus::All, 3 * 4080).unwrap();
        let ok = w.join().unwrap();
        let seen = drain(&rb);
        assert_eq!(seen, ok);
        assert_eq!(rb.nr_pages(0), 3);
    });
}

/// `swap_cpu` while a writer writes: the spare is read while the writer may
/// still be in it, then after the writer is done (the grace period). Each
/// event is in exactly one of the two buffers: the ones whose writer loaded
/// the pointer before the swap in the spare, the later ones in the live
/// buffer, so the spare holds a prefix and the live buffer the rest.
#[test]
fn loom_swap_cpu_vs_writer() {
    model(|| {
        let live = Arc::new(RingBuffer::new(1, 2 * 4080).unwrap());
        let spare = Arc::new(RingBuffer::new(1, 2 * 4080).unwrap());
        let w = {
            let live = live.clone();
            thread::spawn(move || {
                for i in 0..3u8 {
                    // SAFETY: the only writer of CPU 0.
                    assert!(unsafe { live.write(0, 100 + i as u64, &ev(i)) });
                }
            })
        };
        // SAFETY: both buffers outlive the writer (joined below) and every
        // reader; the spare is read to the end only after the join.
        unsafe { live.swap_cpu(&spare, 0) }.unwrap();
        let mut seen = Vec::new();
        if let Some(i) = spare.consume_with(0, |_, d, _| check(d)) {
            seen.push(i);
        }
        w.join().unwrap();
        while let Some(i) = spare.consume_with(0, |_, d, _| check(d)) {
            seen.push(i);
        }
        while let Some(i) = live.consume_with(0, |_, d, _| check(d)) {
            seen.push(i);
        }
        assert_eq!(seen, vec![0, 1, 2]);
    });
}

/// Reset while a writer runs. `reset` puts the reader page back in slot 0
/// (swapping pages inside the table) and points the tail and commit page,
/// which the writer holds by address, at slot 1 again; the writer's events
/// after the reset land on the new tail page and are read intact, in order.
#[test]
fn loom_reset_vs_writer() {
    model(|| {
        let rb = Arc::new(RingBuffer::new(1, 2 * 4080).unwrap());
        // Read one page away first, so that the reader page is not in slot
        // 0 when the reset comes and the reset has pages to swap.
        // SAFETY: the only writer of CPU 0 until the thread below starts.
        unsafe {
            for i in 0..3u8 {
                assert!(rb.write(0, 90 + i as u64, &ev(i)));
            }
        }
        assert_eq!(rb.consume_with(0, |_, d, _| check(d)), Some(0));
        let w = spawn_writer(&rb, 3..6);
        rb.reset();
        let ok = w.join().unwrap();
        let seen = drain(&rb);
        // What the reset did not clear is a suffix of what was written;
        // unless the reset came after the writer's last event, that event
        // is in it.
        let all: Vec<u8> = (1..3).chain(ok.iter().copied()).collect();
        assert!(all.ends_with(&seen), "seen {seen:?} of {all:?}");
        assert!(
            seen.is_empty() || seen.last() == ok.last(),
            "seen {seen:?} ok {ok:?}"
        );
        // The tail (by address) is a page of the table: writing goes on.
        // SAFETY: the writer thread is joined.
        assert!(unsafe { rb.write(0, 200, &ev(9)) });
        let mut last = None;
        while let Some(i) = rb.consume_with(0, |_, d, _| check(d)) {
            last = Some(i);
        }
        assert_eq!(last, Some(9));
    });
}

/// Shrinking while a writer runs: the resize builds a new page table (the
/// tail and commit page move to addresses in it) and drops the oldest
/// pages; what is read is intact and in order, and writing goes on in the
/// new table.
#[test]
fn loom_shrink_vs_writer() {
    model(|| {
        let rb = Arc::new(RingBuffer::new(1, 3 * 4080).unwrap());
        let w = spawn_writer(&rb, 0..5);
        rb.resize(tracer::ring_buffer::Cpus::All, 2 * 4080).unwrap();
        let ok = w.join().unwrap();
        assert_eq!(rb.nr_pages(0), 2);
        let seen = drain(&rb);
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "out of order {seen:?}"
        );
        assert!(
            seen.iter().all(|s| ok.contains(s)),
            "seen {seen:?} ok {ok:?}"
        );
        assert_eq!(seen.last(), ok.last(), "seen {seen:?} ok {ok:?}");
        // SAFETY: the writer thread is joined.
        assert!(unsafe { rb.write(0, 300, &ev(9)) });
        let mut last = None;
        while let Some(i) = rb.consume_with(0, |_, d, _| check(d)) {
            last = Some(i);
        }
        assert_eq!(last, Some(9));
    });
}
