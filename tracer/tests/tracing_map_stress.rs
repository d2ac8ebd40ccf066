//! Stress test of tracing_map on host threads: several threads insert and
//! count overlapping keys; every successful insert must be in its key's
//! sum exactly once, every failed one in `drops`, and no key may appear
//! twice. (A host thread can be preempted between claiming a slot and
//! publishing its element, so an inserter of the same hash may give up
//! and count a drop: the test counts per key what each thread saw.)
#![cfg(not(loom))]

use std::collections::HashMap;
use std::sync::Arc;
use std::thread;

use tracer::tracing_map::TracingMap;

fn run(bits: u32, threads: u64, per_thread: u64, keys: u64) {
    let m = Arc::new(TracingMap::new(bits, 2, 2, 0).unwrap());
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let m = m.clone();
            thread::spawn(move || {
                let mut x = 0x9e3779b97f4a7c15u64 ^ (t + 1);
                let mut ok: HashMap<u64, (u64, u64)> = HashMap::new();
                let mut failed = 0u64;
                for _ in 0..per_thread {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let k = x % keys;
                    match m.insert(&[k, k * 3]) {
                        Some(e) => {
                            e.add(0, 1);
                            e.add(1, k + t);
                            let c = ok.entry(k).or_default();
                            c.0 += 1;
                            c.1 += k + t;
                        }
                        None => failed += 1,
                    }
                }
                (ok, failed)
            })
        })
        .collect();
    let mut want: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut failed = 0;
    for h in hs {
        let (ok, f) = h.join().unwrap();
        failed += f;
        for (k, (n, s)) in ok {
            let w = want.entry(k).or_default();
            w.0 += n;
            w.1 += s;
        }
    }
    let total: u64 = want.values().map(|w| w.0).sum();
    assert_eq!(total + failed, threads * per_thread);
    assert_eq!(m.hits(), total);
    assert_eq!(m.drops(), failed);
    let entries = m.entries();
    assert_eq!(entries.len(), want.len());
    assert!(entries.len() <= m.max_elts() as usize);
    let mut seen = std::collections::HashSet::new();
    for e in entries {
        let k = e.key(0);
        assert_eq!(e.key(1), k * 3, "torn key");
        assert!(seen.insert(k), "key {k} twice");
        assert_eq!((e.sum(0), e.sum(1)), want[&k], "key {k}");
    }
}

#[test]
fn threads_count_exactly_with_room() {
    run(11, 4, 200_000, 1500);
}

#[test]
fn threads_count_exactly_when_full() {
    // 128 elements, 1000 keys: most new keys are dropped, the 128 that
    // made it keep counting exactly.
    run(7, 4, 100_000, 1000);
}
