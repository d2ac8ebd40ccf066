//! loom model checking of the tracing_map insert protocol:
//! `RUSTFLAGS="--cfg loom" cargo test --release -p tracer --test tracing_map_loom`
//! (`LOOM_MAX_PREEMPTIONS=4` for a deeper search).
//!
//! Tiny maps (2 elements, 4 slots) so that two inserters race for the same
//! slot, the same element pool and the same key. In every interleaving:
//! every insert either counts exactly once in its key's element or is
//! counted as a drop, no key appears twice, and nothing half-published is
//! ever read.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use tracer::tracing_map::TracingMap;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

/// Inserts `keys` on one thread; returns how many succeeded per key.
fn inserter(m: Arc<TracingMap>, keys: Vec<u64>) -> thread::JoinHandle<Vec<(u64, bool)>> {
    thread::spawn(move || {
        keys.into_iter()
            .map(|k| {
                let ok = match m.insert(&[k, !k]) {
                    Some(e) => {
                        // The key read back through the element is whole.
                        assert_eq!((e.key(0), e.key(1)), (k, !k));
                        e.add(0, 1);
                        true
                    }
                    None => false,
                };
                (k, ok)
            })
            .collect()
    })
}

/// Checks the map against what the inserters saw.
fn check(m: &TracingMap, results: Vec<(u64, bool)>) {
    let ok: Vec<u64> = results.iter().filter(|r| r.1).map(|r| r.0).collect();
    let failed = results.len() - ok.len();
    assert_eq!(m.hits(), ok.len() as u64);
    assert_eq!(m.drops(), failed as u64);
    let entries = m.entries();
    let mut keys: Vec<u64> = entries.iter().map(|e| e.key(0)).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), entries.len(), "a key appears twice");
    for e in &entries {
        let k = e.key(0);
        assert_eq!(e.key(1), !k);
        assert_eq!(e.sum(0), ok.iter().filter(|&&x| x == k).count() as u64);
    }
    for k in ok {
        assert!(m.lookup(&[k, !k]).is_some());
    }
}

#[test]
fn same_key_two_inserters() {
    model(|| {
        let m = Arc::new(TracingMap::new(1, 2, 1, 0).unwrap());
        let a = inserter(m.clone(), vec![7]);
        let b = inserter(m.clone(), vec![7]);
        let mut r = a.join().unwrap();
        r.extend(b.join().unwrap());
        check(&m, r);
    });
}

#[test]
fn different_keys_two_inserters() {
    model(|| {
        let m = Arc::new(TracingMap::new(1, 2, 1, 0).unwrap());
        let a = inserter(m.clone(), vec![1]);
        let b = inserter(m.clone(), vec![2]);
        let mut r = a.join().unwrap();
        r.extend(b.join().unwrap());
        // Two free elements: nobody is dropped.
        assert!(r.iter().all(|x| x.1));
        check(&m, r);
        assert_eq!(m.entries().len(), 2);
    });
}

#[test]
fn full_map_two_inserters() {
    model(|| {
        // Two elements, three distinct keys: at least one is dropped,
        // and the slot given back is usable again.
        let m = Arc::new(TracingMap::new(1, 2, 1, 0).unwrap());
        let a = inserter(m.clone(), vec![1, 3]);
        let b = inserter(m.clone(), vec![2]);
        let mut r = a.join().unwrap();
        r.extend(b.join().unwrap());
        assert!(r.iter().filter(|x| !x.1).count() >= 1);
        check(&m, r);
        assert_eq!(m.entries().len(), 2);
    });
}

#[test]
fn one_word_keys_inline_path() {
    // `insert_word`, the probe's path for a single numeric key: its inline
    // hit test reads a slot another thread may be claiming or publishing.
    // Each thread inserts its key twice (the second normally a hit on the
    // inline path); every insert is counted once or dropped.
    model(|| {
        let m = Arc::new(TracingMap::new(1, 1, 1, 0).unwrap());
        let spawn = |k: u64| {
            let m = m.clone();
            thread::spawn(move || {
                (0..2)
                    .map(|_| match m.insert_word(k) {
                        Some(e) => {
                            assert_eq!(e.key(0), k);
                            e.add(0, 1);
                            true
                        }
                        None => false,
                    })
                    .filter(|&ok| ok)
                    .count() as u64
            })
        };
        let (a, b) = (spawn(5), spawn(5));
        let n = a.join().unwrap() + b.join().unwrap();
        assert_eq!(m.hits(), n);
        assert_eq!(m.drops(), 4 - n);
        let entries = m.entries();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].sum(0), n);
    });
}
