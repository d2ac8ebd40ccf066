//! The decisions of dynamic ftrace, apart from any instruction set
//! (Linux: the record logic of kernel/trace/ftrace.c).
//!
//! The kernel keeps one record per call site (`struct dyn_ftrace`: the
//! site's address and a word of flags). The low bits of the flags count the
//! users of function tracing (`ftrace_ops`) that want the site; one bit says
//! whether the site calls the trampoline now. When the users change, the
//! kernel recounts each record and asks [`ftrace_test_record`] what its site
//! must become: nothing, a call where the NOP is, the NOP where the call is,
//! or a call to another trampoline. The arch code turns that into bytes;
//! once they are written, [`ftrace_update_record`] gives the record's new
//! flags.
//!
//! Which records a user wants is a [`RecordSet`]: one bit per record, read
//! without a lock by the code that runs in traced functions. The same type
//! holds an ftrace_ops' wanted sites and function_graph's
//! `set_graph_function` / `set_graph_notrace` sets.

use alloc::boxed::Box;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The site calls a trampoline now (Linux: FTRACE_FL_ENABLED).
pub const FTRACE_FL_ENABLED: u32 = 1 << 31;
/// Some ops wanted the site since boot (Linux: FTRACE_FL_TOUCHED).
pub const FTRACE_FL_TOUCHED: u32 = 1 << 20;
/// The site calls the registers-saving trampoline (Linux: FTRACE_FL_REGS_EN;
/// kept by the kernel, the decisions here leave it alone).
pub const FTRACE_FL_REGS_EN: u32 = 1 << 29;
/// Low bits: how many ops want the site (Linux: FTRACE_REF_MAX).
pub const FTRACE_REF_MASK: u32 = (1 << 19) - 1;

/// What one site must become (Linux: the FTRACE_UPDATE_* values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FtraceUpdate {
    /// Leave the site as it is.
    Ignore,
    /// The NOP becomes a call to the trampoline.
    MakeCall,
    /// The call becomes the NOP.
    MakeNop,
    /// The call stays a call, to another trampoline.
    ModifyCall,
}

/// How many ops want the site (Linux: ftrace_rec_count).
#[inline]
pub fn ftrace_rec_count(flags: u32) -> u32 {
    flags & FTRACE_REF_MASK
}

/// The record's flags with `refs` ops wanting it, saturated at
/// [`FTRACE_REF_MASK`]; a wanted record is touched for good (Linux counts
/// the ops one by one in __ftrace_hash_rec_update; the kernel recounts).
#[inline]
pub fn ftrace_rec_set_count(flags: u32, refs: u32) -> u32 {
    let refs = refs.min(FTRACE_REF_MASK);
    let mut f = (flags & !FTRACE_REF_MASK) | refs;
    if refs > 0 {
        f |= FTRACE_FL_TOUCHED;
    }
    f
}

/// The decision and the flags after it (Linux: ftrace_check_record).
/// `addr_curr` is the trampoline an enabled site calls now, `addr_new` the
/// one a wanted site must call.
#[inline]
pub fn ftrace_check_record(flags: u32, addr_curr: u64, addr_new: u64) -> (FtraceUpdate, u32) {
    let enabled = flags & FTRACE_FL_ENABLED != 0;
    let wanted = ftrace_rec_count(flags) > 0;
    match (enabled, wanted) {
        (false, false) => (FtraceUpdate::Ignore, flags),
        (false, true) => (FtraceUpdate::MakeCall, flags | FTRACE_FL_ENABLED),
        (true, false) => (FtraceUpdate::MakeNop, flags & !FTRACE_FL_ENABLED),
        (true, true) if addr_curr != addr_new => (FtraceUpdate::ModifyCall, flags),
        (true, true) => (FtraceUpdate::Ignore, flags),
    }
}

/// What the record's site must become, flags unchanged (Linux: ftrace_test_record).
#[inline]
pub fn ftrace_test_record(flags: u32, addr_curr: u64, addr_new: u64) -> FtraceUpdate {
    ftrace_check_record(flags, addr_curr, addr_new).0
}

/// The record's flags once its site was updated (Linux: ftrace_update_record).
#[inline]
pub fn ftrace_update_record(flags: u32, addr_curr: u64, addr_new: u64) -> u32 {
    ftrace_check_record(flags, addr_curr, addr_new).1
}

/// A set of records, one bit each, that traced code reads without a lock
/// while a writer replaces it (Linux: the `ftrace_hash` of an ftrace_ops,
/// and `ftrace_graph_hash`, read under RCU). A reader sees each 64-record
/// word either before or after a [`RecordSet::store`]; a writer makes sure
/// that a mixture of the two is harmless (the sites a store adds are
/// patched only after it, the sites it removes before it).
pub struct RecordSet {
    words: Box<[AtomicU64]>,
    /// Records covered (indexes at or past it are never in the set).
    records: usize,
    /// Some bit is set (one load for "is the set empty?").
    nonempty: AtomicBool,
}

impl RecordSet {
    /// An empty set of `records` records.
    pub fn new(records: usize) -> RecordSet {
        RecordSet {
            words: (0..records.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            records,
            nonempty: AtomicBool::new(false),
        }
    }

    /// How many records the set covers.
    pub fn records(&self) -> usize {
        self.records
    }

    /// True if record `i` is in the set.
    #[inline(always)]
    pub fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (i % 64)) != 0)
    }

    /// True if no record is in the set.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        !self.nonempty.load(Ordering::Relaxed)
    }

    /// Replaces the set with the records `i` for which `pick(i)` is true.
    pub fn store(&self, pick: impl Fn(usize) -> bool) {
        let mut any = false;
        for (w, word) in self.words.iter().enumerate() {
            let bits = (0..64)
                .filter(|&b| w * 64 + b < self.records && pick(w * 64 + b))
                .fold(0u64, |a, b| a | (1 << b));
            any |= bits != 0;
            word.store(bits, Ordering::Relaxed);
        }
        self.nonempty.store(any, Ordering::SeqCst);
    }

    /// How many records are in the set.
    pub fn count(&self) -> usize {
        self.words
            .iter()
            .map(|w| w.load(Ordering::Relaxed).count_ones() as usize)
            .sum()
    }
}

/// Which of a fixed pool of `ftrace_ops` slots are taken (at most 64).
///
/// The kernel keeps the ops of the tracing instances in a static pool
/// rather than on the heap: a task preempted inside the trampoline, after
/// it loaded an ops and before the callback disabled preemption, may still
/// call that ops long after it was unregistered. Linux waits for such tasks
/// with `synchronize_rcu_tasks` before freeing a dynamic ops; an ops that
/// is never freed needs no such wait, only a callback that finds its
/// owner through a pointer it reads with preemption off. A slot is taken
/// with [`OpsPool::claim`] and given back with [`OpsPool::release`].
pub struct OpsPool {
    used: AtomicU64,
    slots: usize,
}

impl OpsPool {
    /// A pool of `slots` free slots (`slots` at most 64).
    pub const fn new(slots: usize) -> OpsPool {
        assert!(slots <= 64);
        OpsPool {
            used: AtomicU64::new(0),
            slots,
        }
    }

    /// Takes the lowest free slot; None if all are taken.
    pub fn claim(&self) -> Option<usize> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let i = (!used).trailing_zeros() as usize;
            if i >= self.slots {
                return None;
            }
            match self.used.compare_exchange_weak(
                used,
                used | (1 << i),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(i),
                Err(now) => used = now,
            }
        }
    }

    /// Gives slot `i` back (nothing if it is not taken).
    pub fn release(&self, i: usize) {
        if i < self.slots {
            self.used.fetch_and(!(1 << i), Ordering::AcqRel);
        }
    }

    /// How many slots are taken.
    pub fn in_use(&self) -> usize {
        self.used.load(Ordering::Relaxed).count_ones() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CALLER: u64 = 0x1000;
    const OTHER: u64 = 0x2000;

    #[test]
    fn ops_pool_claims_each_slot_once() {
        let pool = OpsPool::new(16);
        let got: Vec<usize> = (0..16).map(|_| pool.claim().unwrap()).collect();
        assert_eq!(got, (0..16).collect::<Vec<_>>());
        assert_eq!(pool.claim(), None);
        assert_eq!(pool.in_use(), 16);
        pool.release(5);
        pool.release(5);
        pool.release(99);
        assert_eq!(pool.in_use(), 15);
        assert_eq!(pool.claim(), Some(5));
        assert_eq!(pool.claim(), None);
    }

    #[test]
    fn ops_pool_full_size_and_empty() {
        let pool = OpsPool::new(64);
        for i in 0..64 {
            assert_eq!(pool.claim(), Some(i));
        }
        assert_eq!(pool.claim(), None);
        assert_eq!(OpsPool::new(0).claim(), None);
    }

    #[test]
    fn ops_pool_concurrent_claims_are_unique() {
        use std::sync::Arc;
        let pool = Arc::new(OpsPool::new(64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let pool = pool.clone();
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for round in 0..2000 {
                        if let Some(i) = pool.claim() {
                            mine.push(i);
                        }
                        if round % 3 == 0 {
                            if let Some(i) = mine.pop() {
                                pool.release(i);
                            }
                        }
                    }
                    mine
                })
            })
            .collect();
        let mut all: Vec<usize> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        let held = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), held, "a slot was handed out twice");
        assert_eq!(pool.in_use(), held);
    }

    #[test]
    fn the_four_decisions() {
        let off = 0;
        let on = FTRACE_FL_ENABLED;
        // Nobody wants it, it is a NOP: nothing to do.
        assert_eq!(
            ftrace_test_record(off, CALLER, CALLER),
            FtraceUpdate::Ignore
        );
        // Wanted, still a NOP: make the call.
        let f = ftrace_rec_set_count(off, 1);
        assert_eq!(
            ftrace_test_record(f, CALLER, CALLER),
            FtraceUpdate::MakeCall
        );
        assert_eq!(
            ftrace_update_record(f, CALLER, CALLER) & FTRACE_FL_ENABLED,
            on
        );
        // Wanted and calling the right trampoline: nothing.
        let f = ftrace_rec_set_count(on, 2);
        assert_eq!(ftrace_test_record(f, CALLER, CALLER), FtraceUpdate::Ignore);
        // Wanted, calling another trampoline: modify the call, stay enabled.
        assert_eq!(
            ftrace_test_record(f, OTHER, CALLER),
            FtraceUpdate::ModifyCall
        );
        assert_eq!(ftrace_update_record(f, OTHER, CALLER), f);
        // Enabled, nobody wants it any more: back to the NOP.
        let f = ftrace_rec_set_count(on | FTRACE_FL_TOUCHED, 0);
        assert_eq!(ftrace_test_record(f, CALLER, CALLER), FtraceUpdate::MakeNop);
        assert_eq!(
            ftrace_update_record(f, CALLER, CALLER) & FTRACE_FL_ENABLED,
            0
        );
    }

    #[test]
    fn counts_and_touched() {
        assert_eq!(ftrace_rec_count(ftrace_rec_set_count(0, 3)), 3);
        assert_eq!(ftrace_rec_set_count(0, 0), 0, "never wanted: not touched");
        let f = ftrace_rec_set_count(0, 1);
        assert_ne!(f & FTRACE_FL_TOUCHED, 0);
        let f = ftrace_rec_set_count(f, 0);
        assert_eq!(ftrace_rec_count(f), 0);
        assert_ne!(f & FTRACE_FL_TOUCHED, 0, "touched stays");
        // The count saturates and never spills into the flag bits.
        let f = ftrace_rec_set_count(FTRACE_FL_ENABLED, u32::MAX);
        assert_eq!(ftrace_rec_count(f), FTRACE_REF_MASK);
        assert_eq!(f & !FTRACE_REF_MASK, FTRACE_FL_ENABLED | FTRACE_FL_TOUCHED);
    }

    #[test]
    fn record_set_basics() {
        let s = RecordSet::new(130);
        assert_eq!(s.records(), 130);
        assert!(s.is_empty());
        assert!(!s.contains(0) && !s.contains(129) && !s.contains(10_000));
        s.store(|i| i % 64 == 0 || i == 129);
        assert!(!s.is_empty());
        assert_eq!(s.count(), 4);
        assert!(s.contains(0) && s.contains(64) && s.contains(128) && s.contains(129));
        assert!(
            !s.contains(1) && !s.contains(130),
            "nothing past the records"
        );
        s.store(|_| true);
        assert_eq!(s.count(), 130, "all: only the records covered");
        s.store(|_| false);
        assert!(s.is_empty());
        assert_eq!(s.count(), 0);
        let none = RecordSet::new(0);
        none.store(|_| true);
        assert!(none.is_empty() && !none.contains(0));
    }

    /// While one thread stores two sets in turn, readers on other threads
    /// always find the records of both sets in it and never a record of
    /// neither: a store never passes through an empty or mixed-up word.
    #[test]
    fn record_set_store_keeps_common_records_visible() {
        use std::sync::atomic::AtomicBool as Stop;
        use std::sync::atomic::AtomicUsize;
        use std::sync::Arc;
        let in_a = |i: usize| i < 128 || i.is_multiple_of(2);
        let in_b = |i: usize| i < 128 || i.is_multiple_of(3);
        let s = Arc::new(RecordSet::new(256));
        s.store(in_a);
        let stop = Arc::new(Stop::new(false));
        // Passes each reader has completed: the writer keeps storing until
        // every reader has read the set many times while it changed.
        let passes: Arc<[AtomicUsize; 2]> = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let (s, stop, passes) = (s.clone(), stop.clone(), passes.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        for i in 0..256 {
                            if in_a(i) && in_b(i) {
                                assert!(s.contains(i), "record {i} of both sets missing");
                            } else if !in_a(i) && !in_b(i) {
                                assert!(!s.contains(i), "record {i} of neither set present");
                            }
                        }
                        assert!(!s.is_empty());
                        passes[r].fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        let mut round = 0u64;
        while round < 2000 || passes.iter().any(|p| p.load(Ordering::Relaxed) < 200) {
            if round.is_multiple_of(2) {
                s.store(in_b);
            } else {
                s.store(in_a);
            }
            round += 1;
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
    }

    /// A site's instruction, as the arch code would hold it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Site {
        Nop,
        Call(u64),
    }

    proptest! {
        /// Any sequence of reference counts and trampolines: applying each
        /// decision to a model site keeps the site what the flags say (a
        /// call to the wanted trampoline exactly when some ops wants it),
        /// every decision starts from the instruction the site holds, and a
        /// second look right after an update finds nothing to do.
        #[test]
        fn record_set_is_the_set_stored(
            n in 0usize..300,
            picks in proptest::collection::vec(0usize..400, 0..50)
        ) {
            let s = RecordSet::new(n);
            s.store(|i| picks.contains(&i));
            for i in 0..400 {
                prop_assert_eq!(s.contains(i), i < n && picks.contains(&i));
            }
            prop_assert_eq!(s.is_empty(), !picks.iter().any(|&i| i < n));
        }

        #[test]
        fn decisions_keep_site_and_flags_in_step(
            steps in proptest::collection::vec((0u32..4, prop::bool::ANY), 1..40)
        ) {
            let mut flags = 0u32;
            let mut site = Site::Nop;
            let mut curr = CALLER;
            for (refs, other) in steps {
                let new = if other { OTHER } else { CALLER };
                flags = ftrace_rec_set_count(flags, refs);
                let (update, after) = ftrace_check_record(flags, curr, new);
                site = match (update, site) {
                    (FtraceUpdate::Ignore, s) => s,
                    (FtraceUpdate::MakeCall, Site::Nop) => Site::Call(new),
                    (FtraceUpdate::MakeNop, Site::Call(a)) if a == curr => Site::Nop,
                    (FtraceUpdate::ModifyCall, Site::Call(a)) if a == curr => Site::Call(new),
                    (u, s) => panic!("{u:?} on a site holding {s:?}"),
                };
                flags = after;
                if let Site::Call(a) = site {
                    curr = a;
                }
                prop_assert_eq!(flags & FTRACE_FL_ENABLED != 0, refs > 0);
                prop_assert_eq!(site, if refs > 0 { Site::Call(new) } else { Site::Nop });
                prop_assert_eq!(ftrace_test_record(flags, curr, new), FtraceUpdate::Ignore);
            }
        }
    }
}
