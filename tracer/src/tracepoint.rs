//! The probe list of a tracepoint and the quiescence rule that makes
//! replacing it safe (Linux: kernel/tracepoint.c, `func_add`,
//! `func_remove`; the grace period of RCU).
//!
//! A tracepoint holds a pointer to an immutable array of probes, each a
//! (function, data) pair with a priority. Registering or unregistering never
//! edits the array a CPU may be walking: it builds a new array
//! ([`func_add`], [`func_remove`]), publishes it with one pointer store, and
//! frees the old one only after every CPU has left any tracepoint call it
//! was in when the new pointer became visible.
//!
//! That "has left" is decided from one per-CPU word ([`TpSeq`]): its low
//! bits count the tracepoint calls the CPU is nested in (an interrupt can
//! fire a tracepoint inside a probe), the high bits count how many times
//! that depth went back to 0. A writer that sees depth 0, or sees the count
//! of returns to 0 move on, knows that the call that might hold the old
//! array has ended: any call that starts later reads the new pointer.
//! [`quiescent`] is that test; the kernel's `tracepoint.rs` does the
//! per-CPU stores and the waiting.

use alloc::vec::Vec;

use crate::errno::Errno;

/// Priority of a probe registered without one (Linux:
/// `TRACEPOINT_DEFAULT_PRIO`). Higher runs first.
pub const TRACEPOINT_DEFAULT_PRIO: i32 = 10;

/// One probe of a tracepoint (Linux: `struct tracepoint_func`). `F` is the
/// probe's function type; `data` is passed to it as its first argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracepointFunc<F> {
    pub func: F,
    pub data: usize,
    pub prio: i32,
}

/// The list with `new` added (Linux: `func_add`): before the first probe of
/// lower priority, so equal priorities keep their registration order.
/// EEXIST if the same (function, data) pair is already there; `old` is
/// never changed.
pub fn func_add<F: Copy + PartialEq>(
    old: &[TracepointFunc<F>],
    new: TracepointFunc<F>,
) -> Result<Vec<TracepointFunc<F>>, Errno> {
    if old.iter().any(|f| f.func == new.func && f.data == new.data) {
        return Err(Errno::EEXIST);
    }
    let at = old
        .iter()
        .position(|f| f.prio < new.prio)
        .unwrap_or(old.len());
    let mut list = Vec::with_capacity(old.len() + 1);
    list.extend_from_slice(&old[..at]);
    list.push(new);
    list.extend_from_slice(&old[at..]);
    Ok(list)
}

/// The list without the probe (`func`, `data`) (Linux: `func_remove`).
/// ENOENT if it is not there; `old` is never changed.
pub fn func_remove<F: Copy + PartialEq>(
    old: &[TracepointFunc<F>],
    func: F,
    data: usize,
) -> Result<Vec<TracepointFunc<F>>, Errno> {
    let at = old
        .iter()
        .position(|f| f.func == func && f.data == data)
        .ok_or(Errno::ENOENT)?;
    let mut list = Vec::with_capacity(old.len() - 1);
    list.extend_from_slice(&old[..at]);
    list.extend_from_slice(&old[at + 1..]);
    Ok(list)
}

/// What a change of the probe list does to the tracepoint's static key
/// (Linux turns the key on at the first probe and off after the last).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyChange {
    /// 0 -> 1 probes: publish the list, then enable the key.
    Enable,
    /// 1 -> 0 probes: disable the key, then publish the empty list.
    Disable,
    /// Any other count: the key stays as it is.
    Keep,
}

/// The key change for a list going from `old` to `new` probes.
pub fn key_change(old: usize, new: usize) -> KeyChange {
    match (old, new) {
        (0, n) if n > 0 => KeyChange::Enable,
        (o, 0) if o > 0 => KeyChange::Disable,
        _ => KeyChange::Keep,
    }
}

/// The per-CPU word of the quiescence rule: `depth` in the low
/// [`TpSeq::DEPTH_BITS`] bits, the number of returns to depth 0 above.
pub struct TpSeq;

impl TpSeq {
    /// Bits of the nesting depth (task, softirq, hardirq, NMI-like nesting
    /// is far below 256).
    pub const DEPTH_BITS: u32 = 8;
    pub const DEPTH_MASK: u64 = (1 << Self::DEPTH_BITS) - 1;
    /// Added when the depth returns to 0.
    pub const GEN_ONE: u64 = 1 << Self::DEPTH_BITS;

    /// The nesting depth in a word.
    pub const fn depth(v: u64) -> u64 {
        v & Self::DEPTH_MASK
    }

    /// The number of returns to depth 0 in a word.
    pub const fn generation(v: u64) -> u64 {
        v >> Self::DEPTH_BITS
    }

    /// The word after a call starts (the CPU adds 1).
    pub const fn enter(v: u64) -> u64 {
        v + 1
    }

    /// The word after a call ends: the depth drops by one and, if it
    /// reaches 0, the generation moves on. The kernel does this in two
    /// steps (subtract, then add [`TpSeq::GEN_ONE`] if the old depth was
    /// 1); a writer that reads between them sees depth 0, which is also
    /// quiescent.
    pub const fn exit(v: u64) -> u64 {
        if Self::depth(v) == 1 {
            v - 1 + Self::GEN_ONE
        } else {
            v - 1
        }
    }
}

/// Whether a CPU whose word was `then` when the new list was published,
/// and is `now`, has left every tracepoint call that could hold the old
/// list: it was in none, it is in none now, or it has been back at depth 0
/// since.
pub const fn quiescent(then: u64, now: u64) -> bool {
    TpSeq::depth(then) == 0
        || TpSeq::depth(now) == 0
        || TpSeq::generation(now) != TpSeq::generation(then)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn p(func: u32, data: usize, prio: i32) -> TracepointFunc<u32> {
        TracepointFunc { func, data, prio }
    }

    #[test]
    fn add_keeps_priority_order_and_rejects_duplicates() {
        let l = func_add(&[], p(1, 0, 10)).unwrap();
        let l = func_add(&l, p(2, 0, 10)).unwrap();
        // Higher priority runs first; equal keeps insertion order.
        let l = func_add(&l, p(3, 0, i32::MAX)).unwrap();
        let l = func_add(&l, p(4, 0, 0)).unwrap();
        let l = func_add(&l, p(5, 0, 10)).unwrap();
        let order: Vec<u32> = l.iter().map(|f| f.func).collect();
        assert_eq!(order, vec![3, 1, 2, 5, 4]);
        // The same function with other data is another probe.
        let l2 = func_add(&l, p(1, 7, 10)).unwrap();
        assert_eq!(l2.len(), 6);
        assert_eq!(func_add(&l2, p(1, 7, 3)), Err(Errno::EEXIST));
        assert_eq!(func_add(&l2, p(1, 0, 10)), Err(Errno::EEXIST));
    }

    #[test]
    fn remove_takes_exactly_the_pair() {
        let l = vec![p(1, 0, 10), p(1, 5, 10), p(2, 0, 10)];
        let r = func_remove(&l, 1, 5).unwrap();
        assert_eq!(r, vec![p(1, 0, 10), p(2, 0, 10)]);
        assert_eq!(func_remove(&r, 1, 5), Err(Errno::ENOENT));
        assert_eq!(func_remove(&r, 3, 0), Err(Errno::ENOENT));
        let r = func_remove(&r, 1, 0).unwrap();
        let r = func_remove(&r, 2, 0).unwrap();
        assert!(r.is_empty());
        assert_eq!(func_remove(&r, 2, 0), Err(Errno::ENOENT));
    }

    #[test]
    fn key_follows_zero_and_one() {
        assert_eq!(key_change(0, 1), KeyChange::Enable);
        assert_eq!(key_change(1, 2), KeyChange::Keep);
        assert_eq!(key_change(2, 1), KeyChange::Keep);
        assert_eq!(key_change(1, 0), KeyChange::Disable);
        assert_eq!(key_change(0, 0), KeyChange::Keep);
    }

    #[test]
    fn quiescence_across_nesting() {
        let idle = 0u64;
        assert!(quiescent(idle, idle));
        // A call in progress when the list was published.
        let in1 = TpSeq::enter(idle);
        assert!(!quiescent(in1, in1));
        // An interrupt's tracepoint nests and ends: the outer call still
        // holds its pointer.
        let in2 = TpSeq::enter(in1);
        assert!(!quiescent(in1, in2));
        let back1 = TpSeq::exit(in2);
        assert_eq!(back1, in1);
        assert!(!quiescent(in1, back1));
        // The outer call ends: quiescent, and stays so when a new call
        // (which reads the new pointer) starts.
        let done = TpSeq::exit(back1);
        assert!(quiescent(in1, done));
        let again = TpSeq::enter(done);
        assert!(quiescent(in1, again));
        assert_eq!(TpSeq::generation(again), 1);
        // The kernel's two-step exit: after the subtraction the depth reads
        // 0, which is quiescent too.
        assert!(quiescent(in1, in1 - 1));
    }

    /// Readers walk the published list under the per-CPU word while a
    /// writer replaces it and "frees" the old one (poisons it) once every
    /// reader is quiescent: no reader ever sees a poisoned list.
    #[test]
    fn replaced_lists_are_never_seen_after_free() {
        use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering::*};
        use std::sync::Arc;
        const READERS: usize = 3;
        struct List {
            poisoned: AtomicBool,
            items: Vec<u32>,
        }
        let words: Arc<Vec<AtomicU64>> =
            Arc::new((0..READERS).map(|_| AtomicU64::new(0)).collect());
        let first = Box::into_raw(Box::new(List {
            poisoned: AtomicBool::new(false),
            items: vec![1],
        }));
        let head = Arc::new(AtomicPtr::new(first));
        let stop = Arc::new(AtomicBool::new(false));
        let walked: Arc<Vec<AtomicU64>> =
            Arc::new((0..READERS).map(|_| AtomicU64::new(0)).collect());
        let mut threads = Vec::new();
        for r in 0..READERS {
            let (words, head, stop, walked) =
                (words.clone(), head.clone(), stop.clone(), walked.clone());
            threads.push(std::thread::spawn(move || {
                let mut walks = 0u64;
                while !stop.load(Relaxed) {
                    let w = &words[r];
                    w.fetch_add(1, SeqCst);
                    // Nest once in a while, as an interrupt would.
                    let nest = walks.is_multiple_of(3);
                    if nest {
                        w.fetch_add(1, SeqCst);
                    }
                    let l = unsafe { &*head.load(Acquire) };
                    for _ in &l.items {
                        assert!(!l.poisoned.load(Relaxed), "walked a freed list");
                    }
                    if nest {
                        w.fetch_sub(1, Release);
                    }
                    let old = w.fetch_sub(1, Release);
                    if TpSeq::depth(old) == 1 {
                        w.fetch_add(TpSeq::GEN_ONE, Release);
                    }
                    walks += 1;
                    walked[r].store(walks, Relaxed);
                }
            }));
        }
        let mut retired = Vec::new();
        // Keep replacing until every reader has walked many times.
        let mut i = 0u32;
        // (A reader that panicked has finished: stop and report it.)
        while (i < 2000 || walked.iter().any(|w| w.load(Relaxed) < 2000))
            && !threads.iter().any(|t| t.is_finished())
        {
            i += 1;
            let new = Box::into_raw(Box::new(List {
                poisoned: AtomicBool::new(false),
                items: (0..(i % 5) + 1).collect(),
            }));
            let old = head.swap(new, SeqCst);
            let then: Vec<u64> = words.iter().map(|w| w.load(SeqCst)).collect();
            for (w, t) in words.iter().zip(&then) {
                while !quiescent(*t, w.load(SeqCst)) {
                    std::hint::spin_loop();
                }
            }
            unsafe { &*old }.poisoned.store(true, Relaxed);
            retired.push(old);
        }
        stop.store(true, Relaxed);
        for t in threads {
            t.join().unwrap();
        }
        for p in retired {
            drop(unsafe { Box::from_raw(p) });
        }
        drop(unsafe { Box::from_raw(head.load(SeqCst)) });
    }
}
