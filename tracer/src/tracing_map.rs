//! A preallocated, lock-free hash map from a key to a few 64-bit sums: the
//! table behind hist triggers (Linux: kernel/trace/tracing_map.c).
//!
//! `TracingMap::new(bits, ..)` allocates everything up front: `2^bits`
//! elements (each with a key, its sums and some private words) and a table
//! of `2^(bits+1)` slots `{ key hash, element }`, twice as many slots as
//! elements so that probe sequences stay short. Inserting never allocates,
//! takes no lock and may run on any CPU and in any context, including an
//! interrupt that arrives in the middle of another insertion on the same
//! CPU:
//!
//! 1. `h = jhash(key)` (0 becomes 1, since 0 marks a free slot); the probe
//!    starts at the top bits of `h` and goes on linearly.
//! 2. A slot holding `h` whose element is published and whose key is equal:
//!    that is our element (`hits++`).
//! 3. A slot holding `h` whose element is not yet published: another
//!    inserter is between steps 4 and 5 (perhaps the code this interrupt
//!    interrupted, which cannot finish until we return). Look again, at
//!    most `map_size` times, then give up and count a drop.
//! 4. A free slot: the key is not in the map. If every element is used,
//!    count a drop. Otherwise claim the slot with a compare-and-swap
//!    `0 -> h`. The winner takes the next unused element (`next_elt`,
//!    never past `max_elts`); a loser looks at the same slot again (the
//!    winner may have the same key).
//! 5. The winner copies the key into the element, then publishes it with a
//!    release store; readers load it with acquire, so they never see a
//!    half-copied key.
//!
//! One change from Linux: when the winner of a slot finds no element left
//! (another CPU took the last one meanwhile), Linux gives the slot back
//! (key 0). That reopens a hole in probe sequences: a key stored after it
//! is then not found, and its next hit claims the hole and is dropped, so
//! an existing key stops counting (the loom model finds this). Here the
//! slot keeps its hash and is marked [`TOMBSTONE`], which probes step
//! over, so a claimed slot never becomes free again before a clear; and a
//! full map drops a new key before claiming anything, so tombstones only
//! come from that race.
//!
//! The sums are atomic adds, so counts are exact however many CPUs update
//! one element. Once every element is used, new keys are dropped but
//! existing ones keep counting. [`TracingMap::clear`] resets the map; its
//! caller makes sure no insertion runs meanwhile (the hist trigger pauses
//! and waits a grace period first, as Linux's `hist_clear()` does).
//!
//! Everything, keys included, is stored in atomics, so the map is safe code
//! throughout; `RUSTFLAGS="--cfg loom"` swaps in loom's atomics to model
//! check the protocol (tests/tracing_map_loom.rs).

use alloc::boxed::Box;
use alloc::vec::Vec;

#[cfg(loom)]
use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};

#[cfg(not(loom))]
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

#[inline]
fn spin_loop() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// Smallest and largest `bits` a hist trigger may ask for (`size=` 128 to
/// 131072; Linux's `TRACING_MAP_BITS_MIN/MAX`). The map itself accepts any
/// `bits` from 1 to `MAP_BITS_MAX`, which small tests and models use.
pub const MAP_BITS_MIN: u32 = 7;
pub const MAP_BITS_MAX: u32 = 17;
/// `TRACING_MAP_BITS_DEFAULT`: 2048 elements.
pub const MAP_BITS_DEFAULT: u32 = 11;

/// Bob Jenkins' lookup3 hash as Linux's `jhash(key, length, initval)`
/// (include/linux/jhash.h) over the little-endian bytes of `key`.
pub fn jhash(key: &[u64], initval: u32) -> u32 {
    #[inline(always)]
    fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
        *a = a.wrapping_sub(*c);
        *a ^= c.rotate_left(4);
        *c = c.wrapping_add(*b);
        *b = b.wrapping_sub(*a);
        *b ^= a.rotate_left(6);
        *a = a.wrapping_add(*c);
        *c = c.wrapping_sub(*b);
        *c ^= b.rotate_left(8);
        *b = b.wrapping_add(*a);
        *a = a.wrapping_sub(*c);
        *a ^= c.rotate_left(16);
        *c = c.wrapping_add(*b);
        *b = b.wrapping_sub(*a);
        *b ^= a.rotate_left(19);
        *a = a.wrapping_add(*c);
        *c = c.wrapping_sub(*b);
        *c ^= b.rotate_left(4);
        *b = b.wrapping_add(*a);
    }
    #[inline(always)]
    fn fin(a: &mut u32, b: &mut u32, c: &mut u32) {
        *c ^= *b;
        *c = c.wrapping_sub(b.rotate_left(14));
        *a ^= *c;
        *a = a.wrapping_sub(c.rotate_left(11));
        *b ^= *a;
        *b = b.wrapping_sub(a.rotate_left(25));
        *c ^= *b;
        *c = c.wrapping_sub(b.rotate_left(16));
        *a ^= *c;
        *a = a.wrapping_sub(c.rotate_left(4));
        *b ^= *a;
        *b = b.wrapping_sub(a.rotate_left(14));
        *c ^= *b;
        *c = c.wrapping_sub(b.rotate_left(24));
    }
    let len = key.len() * 8;
    let word = |i: usize| -> u32 { (key[i / 2] >> (32 * (i % 2))) as u32 };
    let init = 0xdead_beefu32
        .wrapping_add(len as u32)
        .wrapping_add(initval);
    let (mut a, mut b, mut c) = (init, init, init);
    let n = len / 4;
    let mut i = 0;
    // Whole 12-byte blocks while more than 12 bytes remain.
    while n - i > 3 {
        a = a.wrapping_add(word(i));
        b = b.wrapping_add(word(i + 1));
        c = c.wrapping_add(word(i + 2));
        mix(&mut a, &mut b, &mut c);
        i += 3;
    }
    // The last 1..=12 bytes (whole 32-bit words here), then the final mix.
    let rest = n - i;
    if rest == 0 {
        return c;
    }
    if rest >= 3 {
        c = c.wrapping_add(word(i + 2));
    }
    if rest >= 2 {
        b = b.wrapping_add(word(i + 1));
    }
    a = a.wrapping_add(word(i));
    fin(&mut a, &mut b, &mut c);
    c
}

/// A slot whose claimer found no free element: skipped by every probe.
const TOMBSTONE: u32 = u32::MAX;

/// [`jhash`] of a one-word key, unrolled: the hash of the common single
/// numeric key in a few dozen instructions.
#[inline(always)]
pub fn jhash_word(k: u64) -> u32 {
    let init = 0xdead_beefu32.wrapping_add(8);
    let mut a = init.wrapping_add(k as u32);
    let mut b = init.wrapping_add((k >> 32) as u32);
    let mut c = init;
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(14));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(11));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(25));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(16));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(4));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(14));
    c ^= b;
    c.wrapping_sub(b.rotate_left(24))
}

/// One slot of the table (`struct tracing_map_entry`): the key's hash (0:
/// free) and the element, as its index + 1 (0: not yet published,
/// [`TOMBSTONE`]: never will be).
struct Slot {
    key: AtomicU32,
    val: AtomicU32,
}

/// The map (`struct tracing_map`).
pub struct TracingMap {
    map_bits: u32,
    /// Number of slots, `2^(map_bits+1)`.
    map_size: u32,
    /// Number of elements, `2^map_bits`.
    max_elts: u32,
    key_words: usize,
    n_sums: usize,
    n_priv: usize,
    slots: Box<[Slot]>,
    /// `max_elts * key_words` words: element `e`'s key is at `e * key_words`.
    keys: Box<[AtomicU64]>,
    /// `max_elts * n_sums` sums.
    sums: Box<[AtomicU64]>,
    /// `max_elts * n_priv` words of the user's per-element data.
    private: Box<[AtomicU64]>,
    next_elt: AtomicU32,
    hits: AtomicU64,
    drops: AtomicU64,
}

/// An element of the map, as insert and the readers hand it out
/// (`struct tracing_map_elt`).
#[derive(Clone, Copy)]
pub struct Elt<'a> {
    map: &'a TracingMap,
    idx: usize,
}

impl<'a> Elt<'a> {
    /// Adds `v` to sum `i` (`tracing_map_update_sum()`, an atomic add).
    #[inline(always)]
    pub fn add(&self, i: usize, v: u64) {
        let m = self.map;
        if i < m.n_sums {
            m.sums[self.idx * m.n_sums + i].fetch_add(v, Ordering::Relaxed);
        }
    }

    /// Sum `i` (`tracing_map_read_sum()`).
    pub fn sum(&self, i: usize) -> u64 {
        let m = self.map;
        if i < m.n_sums {
            m.sums[self.idx * m.n_sums + i].load(Ordering::Relaxed)
        } else {
            0
        }
    }

    /// Key word `i`.
    pub fn key(&self, i: usize) -> u64 {
        let m = self.map;
        if i < m.key_words {
            m.keys[self.idx * m.key_words + i].load(Ordering::Relaxed)
        } else {
            0
        }
    }

    /// The whole key.
    pub fn key_words(&self) -> Vec<u64> {
        (0..self.map.key_words).map(|i| self.key(i)).collect()
    }

    /// Private word `i` (set by the `init` of [`TracingMap::insert_with`]).
    pub fn private(&self, i: usize) -> u64 {
        let m = self.map;
        if i < m.n_priv {
            m.private[self.idx * m.n_priv + i].load(Ordering::Relaxed)
        } else {
            0
        }
    }

    /// Sets private word `i`.
    pub fn set_private(&self, i: usize, v: u64) {
        let m = self.map;
        if i < m.n_priv {
            m.private[self.idx * m.n_priv + i].store(v, Ordering::Relaxed);
        }
    }

    /// The element's number in the pool.
    pub fn index(&self) -> usize {
        self.idx
    }
}

impl TracingMap {
    /// A map of `2^bits` elements, each with a key of `key_words` 64-bit
    /// words, `n_sums` sums and `n_priv` private words, all allocated now
    /// (`tracing_map_create()` + `tracing_map_init()`). `None` if `bits`
    /// is not in 1..=[`MAP_BITS_MAX`], the key is empty or memory runs out.
    pub fn new(bits: u32, key_words: usize, n_sums: usize, n_priv: usize) -> Option<TracingMap> {
        if !(1..=MAP_BITS_MAX).contains(&bits) || key_words == 0 {
            return None;
        }
        let max_elts = 1u32 << bits;
        let map_size = max_elts * 2;
        let n = max_elts as usize;
        let words = |per: usize| -> Option<Box<[AtomicU64]>> {
            let len = n.checked_mul(per)?;
            let mut v = Vec::new();
            v.try_reserve_exact(len).ok()?;
            v.extend((0..len).map(|_| AtomicU64::new(0)));
            Some(v.into_boxed_slice())
        };
        let mut slots = Vec::new();
        slots.try_reserve_exact(map_size as usize).ok()?;
        slots.extend((0..map_size).map(|_| Slot {
            key: AtomicU32::new(0),
            val: AtomicU32::new(0),
        }));
        Some(TracingMap {
            map_bits: bits,
            map_size,
            max_elts,
            key_words,
            n_sums,
            n_priv,
            slots: slots.into_boxed_slice(),
            keys: words(key_words)?,
            sums: words(n_sums)?,
            private: words(n_priv)?,
            next_elt: AtomicU32::new(0),
            hits: AtomicU64::new(0),
            drops: AtomicU64::new(0),
        })
    }

    /// `log2` of the number of elements.
    pub fn bits(&self) -> u32 {
        self.map_bits
    }

    /// Number of elements (`max_elts`), the most distinct keys it holds.
    pub fn max_elts(&self) -> u32 {
        self.max_elts
    }

    /// Key length in 64-bit words.
    pub fn key_len(&self) -> usize {
        self.key_words
    }

    /// Successful inserts and lookups since creation or the last clear.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Inserts that found no room (or gave up waiting for a concurrent
    /// insert of the same hash).
    pub fn drops(&self) -> u64 {
        self.drops.load(Ordering::Relaxed)
    }

    /// `tracing_map_insert()`: the element for `key`, made if new. `None`
    /// (and a drop counted) when the map is full. `key` must have
    /// [`key_len`](Self::key_len) words.
    #[inline]
    pub fn insert(&self, key: &[u64]) -> Option<Elt<'_>> {
        self.insert_with(key, |_| {})
    }

    /// [`insert`](Self::insert) of a one-word key (the common single
    /// numeric key), with the usual case inline: the key is already in the
    /// map, in the first slot its hash probes. Anything else (a new key, a
    /// collision, a claim not yet published, another key length) goes to
    /// the general insert, out of line.
    #[inline(always)]
    pub fn insert_word(&self, k: u64) -> Option<Elt<'_>> {
        if self.key_words == 1 {
            let h = jhash_word(k).max(1);
            // The probe's first slot, as in insert_with: the top
            // `map_bits + 1` bits of the hash.
            let idx = (h >> (31 - self.map_bits)) as usize;
            if let Some(slot) = self.slots.get(idx) {
                if slot.key.load(Ordering::Acquire) == h {
                    let val = slot.val.load(Ordering::Acquire);
                    if val != 0 && val != TOMBSTONE {
                        let e = val as usize - 1;
                        if self.keys.get(e).map(|w| w.load(Ordering::Relaxed)) == Some(k) {
                            self.hits.fetch_add(1, Ordering::Relaxed);
                            return Some(Elt { map: self, idx: e });
                        }
                    }
                }
            }
        }
        self.insert_cold(&[k])
    }

    #[cold]
    #[inline(never)]
    fn insert_cold(&self, key: &[u64]) -> Option<Elt<'_>> {
        self.insert_with(key, |_| {})
    }

    /// [`insert`](Self::insert), calling `init` on a new element before it
    /// is published (Linux's `elt_init` op: the hist trigger saves the
    /// current task's name there for `.execname`).
    #[inline]
    pub fn insert_with(&self, key: &[u64], init: impl FnOnce(&Elt<'_>)) -> Option<Elt<'_>> {
        if key.len() != self.key_words {
            self.drops.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let mut h = if key.len() == 1 {
            jhash_word(key[0])
        } else {
            jhash(key, 0)
        };
        if h == 0 {
            h = 1;
        }
        let mask = self.map_size - 1;
        let mut idx = h >> (32 - (self.map_bits + 1));
        let mut dup_try = 0u32;
        loop {
            idx &= mask;
            let slot = &self.slots[idx as usize];
            let test_key = slot.key.load(Ordering::Acquire);
            if test_key != 0 && test_key == h {
                let val = slot.val.load(Ordering::Acquire);
                if val != 0 && val != TOMBSTONE {
                    let elt = Elt {
                        map: self,
                        idx: val as usize - 1,
                    };
                    if self.keys_match(&elt, key) {
                        self.hits.fetch_add(1, Ordering::Relaxed);
                        return Some(elt);
                    }
                } else if val == 0 {
                    // Claimed but not yet published: look again, boundedly
                    // (an interrupted inserter on this CPU cannot finish
                    // before we return).
                    dup_try += 1;
                    if dup_try > self.map_size {
                        self.drops.fetch_add(1, Ordering::Relaxed);
                        return None;
                    }
                    spin_loop();
                    continue;
                }
            }
            if test_key == 0 {
                if self.next_elt.load(Ordering::Relaxed) >= self.max_elts {
                    // Full: a new key is dropped without taking a slot.
                    self.drops.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
                if slot
                    .key
                    .compare_exchange(0, h, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    let Some(e) = self.get_free_elt() else {
                        // Another CPU took the last element: keep the slot
                        // claimed (see the module doc) and drop.
                        slot.val.store(TOMBSTONE, Ordering::Release);
                        self.drops.fetch_add(1, Ordering::Relaxed);
                        return None;
                    };
                    let elt = Elt { map: self, idx: e };
                    let base = e * self.key_words;
                    for (i, &w) in key.iter().enumerate() {
                        self.keys[base + i].store(w, Ordering::Relaxed);
                    }
                    init(&elt);
                    // Publish: the key (and init's words) before the index.
                    slot.val.store(e as u32 + 1, Ordering::Release);
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    return Some(elt);
                }
                // Lost the race for this slot: look at it again, the
                // winner may hold our key.
                dup_try += 1;
                continue;
            }
            idx += 1;
        }
    }

    #[inline(always)]
    fn keys_match(&self, elt: &Elt<'_>, key: &[u64]) -> bool {
        let base = elt.idx * self.key_words;
        match self.keys.get(base..base + key.len()) {
            Some(stored) => stored
                .iter()
                .zip(key)
                .all(|(s, &w)| s.load(Ordering::Relaxed) == w),
            None => false,
        }
    }

    /// `atomic_fetch_add_unless(&next_elt, 1, max_elts)`.
    #[inline(always)]
    fn get_free_elt(&self) -> Option<usize> {
        let mut cur = self.next_elt.load(Ordering::Relaxed);
        loop {
            if cur >= self.max_elts {
                return None;
            }
            match self.next_elt.compare_exchange_weak(
                cur,
                cur + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(cur as usize),
                Err(now) => cur = now,
            }
        }
    }

    /// The element of `key` if it is in the map (`tracing_map_lookup()`),
    /// without inserting or counting a hit.
    pub fn lookup(&self, key: &[u64]) -> Option<Elt<'_>> {
        if key.len() != self.key_words {
            return None;
        }
        let mut h = jhash(key, 0);
        if h == 0 {
            h = 1;
        }
        let mask = self.map_size - 1;
        let mut idx = h >> (32 - (self.map_bits + 1));
        for _ in 0..self.map_size {
            idx &= mask;
            let slot = &self.slots[idx as usize];
            let k = slot.key.load(Ordering::Acquire);
            if k == 0 {
                return None;
            }
            if k == h {
                let val = slot.val.load(Ordering::Acquire);
                if val != 0 && val != TOMBSTONE {
                    let elt = Elt {
                        map: self,
                        idx: val as usize - 1,
                    };
                    if self.keys_match(&elt, key) {
                        return Some(elt);
                    }
                }
            }
            idx += 1;
        }
        None
    }

    /// The published elements in slot order, as Linux's
    /// `tracing_map_sort_entries()` collects them before sorting.
    pub fn entries(&self) -> Vec<Elt<'_>> {
        self.slots
            .iter()
            .filter_map(|s| {
                if s.key.load(Ordering::Acquire) == 0 {
                    return None;
                }
                match s.val.load(Ordering::Acquire) {
                    0 | TOMBSTONE => None,
                    v => Some(Elt {
                        map: self,
                        idx: v as usize - 1,
                    }),
                }
            })
            .collect()
    }

    /// `tracing_map_clear()`: no elements, hits and drops back to 0. The
    /// caller makes sure no insert runs at the same time (an insert racing
    /// with it could leave a wrong count, never memory unsafety).
    pub fn clear(&self) {
        for s in self.slots.iter() {
            s.val.store(0, Ordering::Relaxed);
            s.key.store(0, Ordering::Relaxed);
        }
        for w in self
            .keys
            .iter()
            .chain(self.sums.iter())
            .chain(self.private.iter())
        {
            w.store(0, Ordering::Relaxed);
        }
        self.hits.store(0, Ordering::Relaxed);
        self.drops.store(0, Ordering::Relaxed);
        self.next_elt.store(0, Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn jhash_matches_linux() {
        // Values of Linux's include/linux/jhash.h compiled with gcc.
        assert_eq!(jhash(&[0], 0), 0x58c184bf);
        assert_eq!(jhash(&[1], 0), 0x5543253f);
        let k = [0x123456789abcdef0, 0xdc0, 7, u64::MAX];
        assert_eq!(jhash(&k[..1], 0), 0x123116fe);
        assert_eq!(jhash_word(k[0]), 0x123116fe);
        assert_eq!(jhash_word(0), 0x58c184bf);
        assert_eq!(jhash(&k[..2], 0), 0xaac5969d);
        assert_eq!(jhash(&k[..3], 0), 0x746a2493);
        assert_eq!(jhash(&k, 0), 0x47ed852c);
        assert_eq!(jhash(&k, 5), 0xde63f502);
    }

    #[test]
    fn insert_counts_and_lookup() {
        let m = TracingMap::new(7, 1, 2, 0).unwrap();
        for k in 0..100u64 {
            for _ in 0..=k % 5 {
                let e = m.insert(&[k]).unwrap();
                e.add(0, 1);
                e.add(1, k);
            }
        }
        assert_eq!(m.drops(), 0);
        let es = m.entries();
        assert_eq!(es.len(), 100);
        for e in es {
            let k = e.key(0);
            assert_eq!(e.sum(0), k % 5 + 1);
            assert_eq!(e.sum(1), k * (k % 5 + 1));
        }
        assert_eq!(m.lookup(&[7]).unwrap().sum(0), 3);
        assert!(m.lookup(&[1000]).is_none());
        assert_eq!(m.hits(), (0..100u64).map(|k| k % 5 + 1).sum::<u64>());
    }

    #[test]
    fn full_map_drops_new_keys_and_counts_old_ones() {
        let m = TracingMap::new(2, 2, 1, 0).unwrap();
        for k in 0..4u64 {
            m.insert(&[k, !k]).unwrap().add(0, 1);
        }
        assert!(m.insert(&[9, 9]).is_none());
        assert!(m.insert(&[10, 9]).is_none());
        assert_eq!(m.drops(), 2);
        m.insert(&[3, !3]).unwrap().add(0, 1);
        assert_eq!(m.lookup(&[3, !3]).unwrap().sum(0), 2);
        assert_eq!(m.entries().len(), 4);
        assert!(m.insert(&[1]).is_none(), "wrong key length is a drop");
        m.clear();
        assert_eq!((m.hits(), m.drops(), m.entries().len()), (0, 0, 0));
        m.insert_with(&[5, 5], |e| e.set_private(0, 42)).unwrap();
        assert_eq!(m.entries()[0].key_words(), [5, 5]);
    }

    #[test]
    fn nested_insert_inside_an_insert() {
        // `init` runs between claiming the slot and publishing the
        // element, like an interrupt arriving there on the same CPU.
        let m = TracingMap::new(3, 1, 1, 0).unwrap();
        let mut nested = (None, None);
        let outer = m
            .insert_with(&[5], |_| {
                // Same key: the claim is not published and cannot be
                // waited for: bounded retries, then a drop.
                nested.0 = Some(m.insert(&[5]).is_none());
                // Another key goes in normally.
                nested.1 = m.insert(&[6]).map(|e| e.add(0, 1));
            })
            .unwrap();
        outer.add(0, 1);
        assert_eq!(nested, (Some(true), Some(())));
        assert_eq!((m.hits(), m.drops()), (2, 1));
        assert_eq!(m.lookup(&[5]).unwrap().sum(0), 1);
        assert_eq!(m.lookup(&[6]).unwrap().sum(0), 1);
    }

    #[test]
    fn insert_word_is_insert() {
        // Same elements, hits and drops as insert, including keys whose
        // hashes collide in a tiny map (8 slots) and a full map.
        let (a, b) = (
            TracingMap::new(2, 1, 1, 0).unwrap(),
            TracingMap::new(2, 1, 1, 0).unwrap(),
        );
        for i in 0..200u64 {
            let k = (i * 7919) % 11;
            let ea = a.insert(&[k]).map(|e| (e.index(), e.key(0)));
            let eb = b.insert_word(k).map(|e| (e.index(), e.key(0)));
            assert_eq!(ea, eb, "key {k}");
            if let Some(e) = b.insert_word(k) {
                e.add(0, 1);
            }
        }
        assert_eq!((a.hits() * 2, a.drops() * 2), (b.hits(), b.drops()));
        assert_eq!(b.entries().len(), 4);
        // A key of another length always takes the general path.
        let m = TracingMap::new(3, 2, 1, 0).unwrap();
        assert!(m.insert_word(5).is_none());
        assert_eq!(m.drops(), 1);
    }

    #[test]
    fn bad_sizes() {
        assert!(TracingMap::new(0, 1, 1, 0).is_none());
        assert!(TracingMap::new(18, 1, 1, 0).is_none());
        assert!(TracingMap::new(7, 0, 1, 0).is_none());
    }
}
