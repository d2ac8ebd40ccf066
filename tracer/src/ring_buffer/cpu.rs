//! `struct ring_buffer_per_cpu`: one CPU's ring of pages, its lock-free
//! writer (reserve/commit, moving the tail and, in overwrite mode, the head)
//! and its reader (swapping the reader page with the head page).

use alloc::vec::Vec;
use core::cell::UnsafeCell;

use super::event::*;
use super::page::{BufferPage, RB_WRITE_INTCNT, RB_WRITE_MASK};
use super::sync::{spin_loop, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use super::{AllocError, RingBufferError};

use Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};

/// Flags in the low bits of `next` (the page index is shifted left by 2).
pub(crate) const RB_PAGE_NORMAL: usize = 0;
pub(crate) const RB_PAGE_HEAD: usize = 1;
pub(crate) const RB_PAGE_UPDATE: usize = 2;
pub(crate) const RB_FLAG_MASK: usize = 3;
/// Not a flag: returned when a reader swapped the page under us.
pub(crate) const RB_PAGE_MOVED: usize = 4;

/// Index of the reader page in a freshly linked page table.
const READER: usize = 0;

/// Bit of `record_disabled` set by `record_off` (Linux's RB_BUFFER_OFF).
pub(crate) const RB_BUFFER_OFF: usize = 1 << 20;

/// Writers in flight are counted in the low bits of `state`...
pub(crate) const WRITERS_MASK: usize = DISABLE_UNIT - 1;
/// ...and each `record_disable_cpu` adds this.
pub(crate) const DISABLE_UNIT: usize = 1 << 16;

/// Where a reservation lives.
pub(crate) struct Reserved {
    /// The time stamp the event got (the caller's, unless clamped).
    pub(crate) ts: u64,
    /// The payload's first byte, inside the page's `data` (computed once at
    /// reserve time so that filling the event needs no page look-up).
    pub(crate) data: *mut u8,
    pub(crate) len: usize,
}

/// One step of the reserve loop.
enum Step {
    Done(Reserved),
    Again,
    Fail,
}

/// What a peek found on the reader page.
pub(crate) struct Found {
    pub(crate) page: usize,
    pub(crate) pos: usize,
    pub(crate) len: usize,
    pub(crate) ts: u64,
    pub(crate) data_start: usize,
    pub(crate) data_len: usize,
}

/// Cache-line aligned, as Linux allocates it (`kzalloc_node(ALIGN(sizeof,
/// cache_line_size()))`): each CPU's writer updates its own `state`,
/// `committing`, `commits` and stamps on every event, which must not share a
/// line with another CPU's or anything else (`bench allcpu` measures it);
/// each one is a separate allocation of this aligned type.
#[repr(align(64))]
pub(crate) struct RingBufferPerCpu {
    /// Page table: index 0 at creation is the reader page, the others form
    /// the ring. Replaced or relinked only with recording stopped on this CPU,
    /// no writer in flight and the reader lock held.
    pages: UnsafeCell<Vec<BufferPage>>,
    pub(crate) nr_pages: AtomicUsize,
    head_page: AtomicUsize,
    /// The tail page by *address* (an element of the page table), as
    /// Linux's `struct buffer_page *tail_page`: the writer's fast path
    /// reaches it with one load, without the table's bounds test and the
    /// index-times-size multiply. See [`page_at`](Self::page_at).
    tail_page: AtomicUsize,
    /// The commit page by address, as `tail_page`.
    commit_page: AtomicUsize,
    reader_page: AtomicUsize,

    entries: AtomicUsize,
    entries_bytes: AtomicUsize,
    overrun: AtomicUsize,
    commit_overrun: AtomicUsize,
    dropped_events: AtomicUsize,
    committing: AtomicUsize,
    commits: AtomicUsize,

    // Reader side (under reader_lock).
    read: AtomicUsize,
    read_bytes: AtomicUsize,
    lost_events: AtomicUsize,
    last_overrun: AtomicUsize,
    read_stamp: AtomicU64,

    // Writer-side time stamps (see the module doc of `ring_buffer`).
    write_stamp: AtomicU64,
    before_stamp: AtomicU64,

    /// Per-CPU `record_disabled` (upper bits, in `DISABLE_UNIT`s) and the
    /// number of writers between `lock_reserve` and `unlock_commit` (low
    /// bits). One word, so that "a writer entered" and "recording was
    /// disabled" are totally ordered: a writer increments and sees any
    /// earlier disable; a disabler sees every writer that got in before it.
    state: AtomicUsize,
    /// Non-consuming iterators alive (Linux's `resize_disabled`): resizing
    /// would invalidate their page indexes, so it fails with `Busy`.
    pub(crate) resize_disabled: AtomicUsize,
    reader_lock: AtomicBool,
}

// SAFETY: all shared state is atomic except the page table and the page
// bytes. The page table is only mutated while no writer is in flight and the
// reader lock is held (see `with_quiesced`); page bytes are handed from writer to
// reader through the Release/Acquire `commit` protocol described in the
// module doc, so no byte is ever accessed by two threads without
// synchronisation.
unsafe impl Sync for RingBufferPerCpu {}
// SAFETY: the structure owns its pages; nothing is tied to a thread.
unsafe impl Send for RingBufferPerCpu {}

/// Holds the per-CPU reader lock (Linux's `reader_lock`).
pub(crate) struct ReaderGuard<'a>(&'a AtomicBool);

impl Drop for ReaderGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Release);
    }
}

/// Allocate `nr` pages plus the reader page.
pub(crate) fn alloc_pages(nr: usize) -> Result<Vec<BufferPage>, AllocError> {
    let mut v = Vec::new();
    v.try_reserve_exact(nr + 1).map_err(|_| AllocError)?;
    for _ in 0..nr + 1 {
        v.push(BufferPage::new()?);
    }
    Ok(v)
}

/// The search of `rb_set_head_page`: starting at `start`, find the page
/// whose predecessor's `next` carries HEAD (three passes round the ring).
/// `None` while a writer holds the flag in UPDATE.
fn find_head(pages: &[BufferPage], start: usize) -> Option<usize> {
    let mut page = start;
    for _ in 0..3 {
        loop {
            let prev = pages[page].prev.load(SeqCst);
            if pages[prev].next.load(SeqCst) == (page << 2 | RB_PAGE_HEAD) {
                return Some(page);
            }
            page = pages[page].next.load(SeqCst) >> 2;
            if page == start {
                break;
            }
        }
    }
    None
}

/// The address of `pages[idx]`, as `tail_page` and `commit_page` hold it.
#[inline]
fn page_addr(pages: &[BufferPage], idx: usize) -> usize {
    &pages[idx] as *const BufferPage as usize
}

/// Link `pages[1..]` into a ring with `pages[1]` as head (HEAD flag in
/// `pages[n].next`) and `pages[0]` as the reader page pointing at the head.
fn link_ring(pages: &[BufferPage]) {
    let n = pages.len() - 1;
    for (i, page) in pages.iter().enumerate().skip(1) {
        let next = if i == n { 1 } else { i + 1 };
        let prev = if i == 1 { n } else { i - 1 };
        let flag = if next == 1 {
            RB_PAGE_HEAD
        } else {
            RB_PAGE_NORMAL
        };
        page.next.store(next << 2 | flag, Relaxed);
        page.prev.store(prev, Relaxed);
    }
    pages[READER].next.store(1 << 2, Relaxed);
    pages[READER].prev.store(n, Relaxed);
}

impl RingBufferPerCpu {
    pub(crate) fn new(nr_pages: usize) -> Result<Self, AllocError> {
        let pages = alloc_pages(nr_pages)?;
        link_ring(&pages);
        // The table's storage does not move when the Vec is moved below.
        let first = page_addr(&pages, 1);
        Ok(RingBufferPerCpu {
            pages: UnsafeCell::new(pages),
            nr_pages: AtomicUsize::new(nr_pages),
            head_page: AtomicUsize::new(1),
            tail_page: AtomicUsize::new(first),
            commit_page: AtomicUsize::new(first),
            reader_page: AtomicUsize::new(READER),
            entries: AtomicUsize::new(0),
            entries_bytes: AtomicUsize::new(0),
            overrun: AtomicUsize::new(0),
            commit_overrun: AtomicUsize::new(0),
            dropped_events: AtomicUsize::new(0),
            committing: AtomicUsize::new(0),
            commits: AtomicUsize::new(0),
            read: AtomicUsize::new(0),
            read_bytes: AtomicUsize::new(0),
            lost_events: AtomicUsize::new(0),
            last_overrun: AtomicUsize::new(0),
            read_stamp: AtomicU64::new(0),
            write_stamp: AtomicU64::new(0),
            before_stamp: AtomicU64::new(0),
            state: AtomicUsize::new(0),
            resize_disabled: AtomicUsize::new(0),
            reader_lock: AtomicBool::new(false),
        })
    }

    /// The page table.
    #[inline]
    fn pages(&self) -> &[BufferPage] {
        // SAFETY: the Vec is only mutated by `with_quiesced`, which first
        // waits until no writer is in flight (writers enter only after
        // checking record_disabled) and holds the reader lock (every reader
        // path calls this only under that lock). So no `&` obtained here is
        // alive while it is mutated.
        unsafe { &*self.pages.get() }
    }

    /// The page at `addr`, a value of `tail_page` or `commit_page`.
    ///
    /// # Safety
    /// `addr` was loaded from `tail_page` or `commit_page` by a writer in
    /// flight (between its `state` enter and leave) or under the reader
    /// lock. Those two always hold the address of an element of the
    /// current page table: they are only ever set to one (`new`, `reset`,
    /// `resize`, and the moves along the ring, which store an element's
    /// address), and the table's storage is replaced only by
    /// `with_quiesced` (`resize`), which sets both anew before it lets
    /// writers and readers in again; `reset` swaps elements in place, so
    /// an address then names whatever page sits in that slot, as an index
    /// did.
    #[inline(always)]
    unsafe fn page_at(&self, addr: usize) -> &BufferPage {
        debug_assert!(self
            .pages()
            .as_ptr_range()
            .contains(&(addr as *const BufferPage)));
        // SAFETY: per the contract, `addr` points at a live element of the
        // table, which no one mutates through `&mut` while we hold it.
        unsafe { &*(addr as *const BufferPage) }
    }

    /// The table index of a page address held by `tail_page` or
    /// `commit_page` (the slow paths and the reader work with indexes, as
    /// the `next` links hold them).
    #[inline]
    fn page_index(&self, addr: usize) -> usize {
        let idx = (addr - self.pages().as_ptr() as usize) / core::mem::size_of::<BufferPage>();
        debug_assert!(idx < self.pages().len());
        idx
    }

    /// The address of page `idx`, to store in `tail_page`/`commit_page`.
    #[inline]
    fn page_addr(&self, idx: usize) -> usize {
        page_addr(self.pages(), idx)
    }

    /// `tail_page` as an index.
    #[inline]
    fn tail_idx(&self, order: Ordering) -> usize {
        self.page_index(self.tail_page.load(order))
    }

    /// `commit_page` as an index.
    #[inline]
    fn commit_idx(&self, order: Ordering) -> usize {
        self.page_index(self.commit_page.load(order))
    }

    // ---------------------------------------------------------------
    // Small list helpers (Linux's rb_list_head / rb_inc_page / rb_is_*).
    // ---------------------------------------------------------------

    fn rb_inc_page(&self, idx: usize) -> usize {
        self.pages()[idx].next.load(SeqCst) >> 2
    }

    /// `rb_is_head_page`: the flag of `prev.next` if it points at `page`,
    /// else `RB_PAGE_MOVED` (a reader swapped `page` out meanwhile).
    fn rb_is_head_page(&self, page: usize, prev: usize) -> usize {
        let val = self.pages()[prev].next.load(SeqCst);
        if val & !RB_FLAG_MASK != page << 2 {
            return RB_PAGE_MOVED;
        }
        val & RB_FLAG_MASK
    }

    /// `rb_is_reader_page`: the reader page is the one its `prev` does not point back to.
    fn rb_is_reader_page(&self, page: usize) -> bool {
        let p = self.pages();
        let prev = p[page].prev.load(SeqCst);
        p[prev].next.load(SeqCst) >> 2 != page
    }

    /// `rb_head_page_set`: cmpxchg the flag of `prev.next` (which should point
    /// at `head`) from `old` to `new`. Returns the flag found, or MOVED.
    fn rb_head_page_set(&self, head: usize, prev: usize, old: usize, new: usize) -> usize {
        let val = head << 2;
        let ret =
            match self.pages()[prev]
                .next
                .compare_exchange(val | old, val | new, SeqCst, SeqCst)
            {
                Ok(v) | Err(v) => v,
            };
        if ret & !RB_FLAG_MASK != val {
            return RB_PAGE_MOVED;
        }
        ret & RB_FLAG_MASK
    }

    /// The number of entries still in the buffer (`rb_num_of_entries`).
    fn rb_num_of_entries(&self) -> isize {
        let e = self.entries.load(Acquire);
        let gone = self
            .overrun
            .load(Acquire)
            .wrapping_add(self.read.load(Relaxed));
        e.wrapping_sub(gone) as isize
    }

    // ---------------------------------------------------------------
    // Writer side.
    // ---------------------------------------------------------------

    /// `ring_buffer_lock_reserve` for this CPU. `buffer_disabled` is the
    /// buffer-wide record_disabled, `overwrite` the buffer's mode (only read
    /// on the slow path).
    ///
    /// Inlined into the caller so that, for a fixed-size event, the event
    /// length and the fast-path test below are computed at compile time.
    #[inline(always)]
    pub(crate) fn lock_reserve(
        &self,
        len: usize,
        ts: u64,
        overwrite: &AtomicBool,
        buffer_disabled: &AtomicUsize,
    ) -> Option<Reserved> {
        if len > BUF_MAX_DATA_SIZE {
            return None;
        }
        if buffer_disabled.load(Relaxed) != 0 {
            return None;
        }
        // Enter, and back out if recording is disabled on this CPU.
        if self.state.fetch_add(1, Acquire) >= DISABLE_UNIT {
            self.state.fetch_sub(1, Release);
            return None;
        }
        // rb_start_commit
        local_inc!(self, RingBufferPerCpu, committing);
        local_inc!(self, RingBufferPerCpu, commits);
        let length = rb_calculate_event_length(len);
        if let Some(r) = self.rb_reserve_fast(len, length, ts) {
            return Some(r);
        }
        // The slow path reserves exactly `len` bytes too; rebuilding the
        // reservation here with the caller's `len` keeps the length a
        // compile-time constant for the caller's fill (no bounds check
        // where the two paths merge), and returning two words (in
        // registers) instead of a `Reserved` (through memory) spares the
        // caller a stack slot.
        let (data, ts) = self.rb_reserve_slow(len, length, ts, overwrite)?;
        Some(Reserved {
            ts,
            data: data.as_ptr(),
            len,
        })
    }

    /// The common case of `__rb_reserve_next` in one pass, with no loop and
    /// one bounds check: an event whose payload needs no padding (length a
    /// multiple of 4, not 8), not the first on its page, no TIME_EXTEND/TIME_STAMP needed (the stamps
    /// agree, so we interrupted nobody, and the delta fits 27 bits), and it
    /// fits in the tail page. It changes nothing unless it succeeds, so
    /// `None` simply hands over to the general path.
    #[inline(always)]
    fn rb_reserve_fast(&self, len: usize, length: usize, ts: u64) -> Option<Reserved> {
        // LAB 3 BEGIN: rb_reserve_fast (optional: the common case in one pass; None hands over to rb_reserve_next)
        // LAB 3 STUB: let _ = (len, length, ts);
        // LAB 3 STUB: None
        // Known at compile time for fixed-size events: no padding after
        // the payload (small form: type_len = len / 4; long form: array[0]).
        let data_off = data_offset(length);
        if length != len + data_off {
            return None;
        }
        // SAFETY: loaded by a writer in flight.
        let tail_page = unsafe { self.page_at(self.tail_page.load(Acquire)) };
        let wv = tail_page.write.load(Acquire);
        let w = wv & RB_WRITE_MASK;
        let before = self.before_stamp.load(Relaxed);
        let after = self.write_stamp.load(Relaxed);
        // A time older than the previous event's wraps to a huge delta and
        // goes to the general path, which clamps it.
        let delta = ts.wrapping_sub(after);
        // `w == 0 || w + length > BUF_PAGE_SIZE` as one unsigned compare.
        let not_first_and_fits = w.wrapping_sub(1) < BUF_PAGE_SIZE - length;
        if !not_first_and_fits || before != after || delta > TS_MASK {
            return None;
        }
        self.before_stamp.store(ts, Relaxed);
        #[cfg(all(test, not(loom)))]
        test_hook::fire("before_cas");
        tail_page
            .write
            .compare_exchange(wv, wv + length, SeqCst, Relaxed)
            .ok()?;
        // The event's address, taken once here: the `local_*` counters
        // below are asm statements, after which the compiler would load the
        // page's data pointer again for each use.
        let event = tail_page.data_ptr(w);
        local_inc!(tail_page, BufferPage, entries);
        local_add!(self, RingBufferPerCpu, entries_bytes, length);
        let (h, a) = data_event_header(length, delta as u32);
        // SAFETY: [w, w + length) was reserved by our cmpxchg and
        // w + length <= BUF_PAGE_SIZE, so `event` points at `length` bytes
        // that only this writer touches until it commits (the words are
        // 4-byte aligned in the page; written unaligned all the same).
        unsafe {
            event.cast::<u32>().write_unaligned(h.to_le());
            if let Some(a) = a {
                event.add(4).cast::<u32>().write_unaligned(a.to_le());
            }
        }
        #[cfg(all(test, not(loom)))]
        test_hook::fire("before_write_stamp");
        self.write_stamp.store(ts, Relaxed);
        Some(Reserved {
            ts,
            // SAFETY: data_off < length, inside the reserved range.
            data: unsafe { event.add(data_off) },
            len,
        })
        // LAB 3 END
    }

    /// Everything else (Linux's reserve loop with rb_move_tail): not inlined,
    /// so that the fast path stays small.
    #[cold]
    #[inline(never)]
    fn rb_reserve_slow(
        &self,
        len: usize,
        length: usize,
        ts: u64,
        overwrite: &AtomicBool,
    ) -> Option<(core::ptr::NonNull<u8>, u64)> {
        match self.rb_reserve_next_event(len, length, ts, overwrite.load(Relaxed)) {
            Some(r) => {
                debug_assert_eq!(r.len, len);
                debug_assert!(!r.data.is_null());
                // SAFETY: `r.data` comes from `BufferPage::data_ptr`, an
                // address inside a live page, so it is not null. (Returning
                // None here instead would leave a reserved, never committed
                // event behind: not an option.)
                let data = unsafe { core::ptr::NonNull::new_unchecked(r.data) };
                Some((data, r.ts))
            }
            None => {
                self.state.fetch_sub(1, Release);
                None
            }
        }
    }

    /// `ring_buffer_unlock_commit` for this CPU.
    #[inline(always)]
    pub(crate) fn unlock_commit(&self) {
        // rb_commit
        local_inc!(self, RingBufferPerCpu, entries);
        self.rb_end_commit();
        self.state.fetch_sub(1, Release);
    }

    /// Mutable bytes of a reservation.
    ///
    /// # Safety
    /// `r` came from `lock_reserve` on this CPU and is not committed yet, and
    /// no other view of it exists.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn reserved_mut(&self, r: &Reserved) -> &mut [u8] {
        // SAFETY: `r.data` points at `r.len` bytes inside a page of this
        // CPU, reserved by the CAS on `write` for this writer alone; readers
        // only look below `commit`, which cannot pass it before
        // `unlock_commit`, and the page table cannot change while a writer
        // is in flight (see `pages`).
        unsafe { core::slice::from_raw_parts_mut(r.data, r.len) }
    }

    /// The reserve loop of `rb_reserve_next_event` (after rb_start_commit).
    fn rb_reserve_next_event(
        &self,
        len: usize,
        length: usize,
        ts: u64,
        overwrite: bool,
    ) -> Option<Reserved> {
        for _ in 0..1000 {
            match self.rb_reserve_next(len, length, ts, overwrite) {
                Step::Done(r) => return Some(r),
                Step::Again => continue,
                Step::Fail => break,
            }
        }
        self.rb_end_commit();
        None
    }

    /// `__rb_reserve_next`, with the time stamp chosen as described in the
    /// module doc (before_stamp/write_stamp).
    fn rb_reserve_next(&self, len: usize, length: usize, ts: u64, overwrite: bool) -> Step {
        // LAB 3 BEGIN: rb_reserve_next (reserve one event on the tail page, with the time stamp rules)
        // LAB 3 STUB: let _ = (len, length, ts, overwrite);
        // LAB 3 STUB: unimplemented!("lab 3: rb_reserve_next: reserve `length` bytes on the tail page (ring_buffer.c __rb_reserve_next)")
        let tail_idx = self.tail_idx(Acquire);
        let tail_page = &self.pages()[tail_idx];
        let wv = tail_page.write.load(Acquire);
        let w = wv & RB_WRITE_MASK;
        let before = self.before_stamp.load(Relaxed);
        let after = self.write_stamp.load(Relaxed);

        // A clock that goes backwards (or an interrupt that reserved before
        // us with a later time) is clamped, so that times on a CPU never
        // decrease: `ts` becomes the time the event really gets.
        let ts = if before == after { ts.max(after) } else { ts };
        // (is TIME_STAMP, value) of a time event to put in front, if any.
        let mut time: Option<(bool, u64)> = None;
        let mut delta = 0u64;
        if w != 0 {
            if before != after {
                // We interrupted a writer between its steps: we cannot know
                // the time of the event before ours, so write an absolute one.
                time = Some((true, ts));
            } else {
                delta = ts - after;
                if delta > TS_MASK {
                    time = Some((false, delta));
                    delta = 0;
                }
            }
        }
        let total = length
            + if time.is_some() {
                RB_LEN_TIME_EXTEND
            } else {
                0
            };

        if w + total > BUF_PAGE_SIZE {
            // Reserve past the end anyway, so nested writers see the page is
            // full, then move to the next page.
            if tail_page
                .write
                .compare_exchange(wv, wv + total, SeqCst, Relaxed)
                .is_err()
            {
                return Step::Again;
            }
            return self.rb_move_tail(w, total, tail_idx, overwrite);
        }

        self.before_stamp.store(ts, Relaxed);
        #[cfg(all(test, not(loom)))]
        test_hook::fire("before_cas");
        if tail_page
            .write
            .compare_exchange(wv, wv + total, SeqCst, Relaxed)
            .is_err()
        {
            // An interrupt reserved meanwhile: start again.
            return Step::Again;
        }
        local_inc!(tail_page, BufferPage, entries);
        local_add!(self, RingBufferPerCpu, entries_bytes, total);
        if w == 0 {
            tail_page.page.time_stamp.store(ts, Relaxed);
        }

        let mut off = w;
        // SAFETY (all writes below): [w, w + total) was reserved by our CAS.
        if let Some((stamp, val)) = time {
            let [h, a] = time_event(stamp, val);
            unsafe {
                tail_page.write_u32(off, h);
                tail_page.write_u32(off + 4, a);
            }
            off += RB_LEN_TIME_EXTEND;
        }
        let (h, a) = data_event_header(length, delta as u32);
        let data_start = off + data_offset(length);
        unsafe {
            tail_page.write_u32(off, h);
            if let Some(a) = a {
                tail_page.write_u32(off + 4, a);
            }
            // Only the padding after the payload is cleared (readers see
            // it); the writer fills the payload itself, as in Linux. A
            // memset of the whole payload was a third of an event's cost.
            let pad = off + length - data_start - len;
            if pad != 0 {
                tail_page.zero(data_start + len, pad);
            }
        }
        #[cfg(all(test, not(loom)))]
        test_hook::fire("before_write_stamp");
        self.write_stamp.store(ts, Relaxed);
        Step::Done(Reserved {
            ts,
            data: tail_page.data_ptr(data_start),
            len,
        })
        // LAB 3 END
    }

    /// `rb_move_tail`: the event did not fit on the tail page.
    fn rb_move_tail(&self, tail: usize, length: usize, tail_idx: usize, overwrite: bool) -> Step {
        let commit_idx = self.commit_idx(Acquire);
        let next_idx = self.rb_inc_page(tail_idx);

        // An interrupt storm went all the way around the buffer.
        if next_idx == commit_idx {
            self.commit_overrun.fetch_add(1, Relaxed);
            self.rb_reset_tail(tail_idx, tail, length);
            return Step::Fail;
        }

        let mut update_tail = true;
        // Note: MOVED counts as "head" here, as in Linux: the reader has just
        // taken `next_idx` as its page, so we must not move onto it.
        if self.rb_is_head_page(next_idx, tail_idx) != RB_PAGE_NORMAL {
            if !self.rb_is_reader_page(commit_idx) {
                if !overwrite {
                    self.dropped_events.fetch_add(1, Relaxed);
                    self.rb_reset_tail(tail_idx, tail, length);
                    return Step::Fail;
                }
                match self.rb_handle_head_page(tail_idx, next_idx) {
                    Err(()) => {
                        self.rb_reset_tail(tail_idx, tail, length);
                        return Step::Fail;
                    }
                    Ok(true) => update_tail = false, // out_again
                    Ok(false) => {}
                }
            } else if commit_idx != self.tail_idx(Acquire)
                && commit_idx == self.reader_page.load(Acquire)
            {
                // The commit is still on the reader page and nested writers
                // filled the whole ring.
                self.commit_overrun.fetch_add(1, Relaxed);
                self.rb_reset_tail(tail_idx, tail, length);
                return Step::Fail;
            }
        }
        if update_tail {
            self.rb_tail_page_update(tail_idx, next_idx);
        }
        // out_again: pad the old page, commit what we have, retry.
        self.rb_reset_tail(tail_idx, tail, length);
        self.rb_end_commit();
        local_inc!(self, RingBufferPerCpu, committing);
        Step::Again
    }

    /// `rb_handle_head_page`: push the head forward (overwrite mode).
    /// Ok(false): done, move the tail; Ok(true): try again; Err: give up.
    fn rb_handle_head_page(&self, tail_idx: usize, next_idx: usize) -> Result<bool, ()> {
        let pages = self.pages();
        let entries = pages[next_idx].nr_entries();
        let ty = self.rb_head_page_set(next_idx, tail_idx, RB_PAGE_HEAD, RB_PAGE_UPDATE);
        match ty {
            RB_PAGE_HEAD => {
                // We own the move: account for the lost page.
                self.overrun.fetch_add(entries, SeqCst);
                self.entries_bytes
                    .fetch_sub(pages[next_idx].commit(), Relaxed);
            }
            RB_PAGE_UPDATE => {} // we interrupted a writer doing this
            RB_PAGE_NORMAL | RB_PAGE_MOVED => return Ok(true),
            _ => return Err(()),
        }

        let new_head = self.rb_inc_page(next_idx);
        let ret = self.rb_head_page_set(new_head, next_idx, RB_PAGE_NORMAL, RB_PAGE_HEAD);
        match ret {
            RB_PAGE_HEAD | RB_PAGE_NORMAL => {}
            _ => return Err(()),
        }
        // Interrupts may have moved the head further and reset this flag;
        // then the tail moved past next_page and we must undo our HEAD.
        if ret == RB_PAGE_NORMAL {
            let t = self.tail_idx(Acquire);
            if t != tail_idx && t != next_idx {
                self.rb_head_page_set(new_head, next_idx, RB_PAGE_HEAD, RB_PAGE_NORMAL);
            }
        }
        // Only the outermost writer (who set UPDATE) clears it.
        if ty == RB_PAGE_HEAD {
            let r = self.rb_head_page_set(next_idx, tail_idx, RB_PAGE_UPDATE, RB_PAGE_NORMAL);
            if r != RB_PAGE_UPDATE {
                return Err(());
            }
        }
        Ok(false)
    }

    /// `rb_tail_page_update`: move the tail to `next_idx`, resetting it.
    fn rb_tail_page_update(&self, tail_idx: usize, next_idx: usize) {
        let next = &self.pages()[next_idx];
        // Bump the update counters first: a writer we interrupted that still
        // holds an old `write` value will then fail its cmpxchg.
        let old_write = next.write.fetch_add(RB_WRITE_INTCNT, SeqCst) + RB_WRITE_INTCNT;
        let old_entries = next.entries.fetch_add(RB_WRITE_INTCNT, SeqCst) + RB_WRITE_INTCNT;
        if tail_idx == self.tail_idx(Acquire) {
            let _ =
                next.write
                    .compare_exchange(old_write, old_write & !RB_WRITE_MASK, SeqCst, Relaxed);
            let _ = next.entries.compare_exchange(
                old_entries,
                old_entries & !RB_WRITE_MASK,
                SeqCst,
                Relaxed,
            );
            next.page.commit.store(0, Release);
            // Either we move the tail or an interrupt already did.
            let _ = self.tail_page.compare_exchange(
                self.page_addr(tail_idx),
                self.page_addr(next_idx),
                SeqCst,
                Relaxed,
            );
        }
    }

    /// `rb_reset_tail`: fill the rest of the old tail page after `tail` with
    /// padding and give back what was over-reserved.
    fn rb_reset_tail(&self, tail_idx: usize, tail: usize, length: usize) {
        let page = &self.pages()[tail_idx];
        if tail >= BUF_PAGE_SIZE {
            // Someone before us already padded the page.
            if tail == BUF_PAGE_SIZE {
                page.real_end.store(0, Relaxed);
            }
            page.write.fetch_sub(length, SeqCst);
            return;
        }
        page.real_end.store(tail, Relaxed);
        if tail > BUF_PAGE_SIZE - RB_EVNT_MIN_SIZE {
            // No room for an event: null padding (time_delta 0) and give the
            // space back; readers stop at commit, which will be `tail`.
            // SAFETY: [tail, BUF_PAGE_SIZE) is inside our over-reservation.
            unsafe { page.write_u32(tail, event_header(RINGBUF_TYPE_PADDING, 0)) };
            page.write.fetch_sub(length, SeqCst);
            return;
        }
        // A discarded event covering the rest of the page (delta must be
        // non-zero). Unlike the null padding above, readers see it, so it
        // counts in the bytes statistic (Linux commit 45d99ea451d0, 2023).
        local_add!(self, RingBufferPerCpu, entries_bytes, BUF_PAGE_SIZE - tail);
        // SAFETY: [tail, BUF_PAGE_SIZE) is inside our over-reservation.
        unsafe {
            page.write_u32(tail, event_header(RINGBUF_TYPE_PADDING, 1));
            page.write_u32(tail + 4, (BUF_PAGE_SIZE - tail - RB_EVNT_HDR_SIZE) as u32);
        }
        page.write.fetch_sub(tail + length - BUF_PAGE_SIZE, SeqCst);
    }

    /// `rb_end_commit`: the outermost writer publishes everything reserved.
    #[inline(always)]
    fn rb_end_commit(&self) {
        // LAB 3 BEGIN: rb_end_commit (the outermost writer publishes what every nested writer reserved)
        // LAB 3 STUB: unimplemented!("lab 3: rb_end_commit: publish the commit if this is the outermost writer (ring_buffer.c rb_end_commit)")
        // Every caller did rb_start_commit (Linux: RB_WARN_ON).
        debug_assert!(self.committing.load(Relaxed) != 0);
        loop {
            let commits = self.commits.load(Relaxed);
            if self.committing.load(Relaxed) == 1 {
                self.rb_set_commit_to_write();
            }
            local_dec!(self, RingBufferPerCpu, committing);
            // An interrupt may have reserved (and committed) between our
            // load of `commits` and the decrement: then what it wrote may not
            // be published yet. Redo.
            if self.commits.load(Relaxed) != commits && self.committing.load(Relaxed) == 0 {
                local_inc!(self, RingBufferPerCpu, committing);
                continue;
            }
            break;
        }
        // LAB 3 END
    }

    /// `rb_set_commit_to_write`, the common case first: the commit page is
    /// the tail page, so publishing is one store of `write` into the page's
    /// `commit`. Linux then checks again ("just in case") that no
    /// interrupt reserved or moved the tail meanwhile; here that check is
    /// the `commits` test of `rb_end_commit`, which redoes this when an
    /// interrupt reserved anything after `commits` was read, which is before
    /// `write` is read here.
    #[inline(always)]
    fn rb_set_commit_to_write(&self) {
        let cp = self.commit_page.load(Relaxed);
        if cp == self.tail_page.load(Acquire) {
            // SAFETY: loaded by a writer in flight.
            let p = unsafe { self.page_at(cp) };
            let w = p.write_index();
            #[cfg(all(test, not(loom)))]
            test_hook::fire("commit_before_store");
            p.page.commit.store(w as u64, Release);
            return;
        }
        self.rb_set_commit_to_write_slow();
    }

    /// The general `rb_set_commit_to_write`: walk the commit page up to the
    /// tail page, setting each page's `commit` to its `write`.
    #[cold]
    #[inline(never)]
    fn rb_set_commit_to_write_slow(&self) {
        let pages = self.pages();
        loop {
            let mut max_count = self.nr_pages.load(Relaxed) * 100;
            loop {
                let cp = self.commit_idx(Relaxed);
                let tp = self.tail_idx(Acquire);
                if cp == tp {
                    break;
                }
                max_count -= 1;
                if max_count == 0 || self.rb_is_reader_page(tp) {
                    return; // RB_WARN_ON in Linux
                }
                let p = &pages[cp];
                p.page.commit.store(p.write_index() as u64, Release);
                self.commit_page
                    .store(self.page_addr(self.rb_inc_page(cp)), Release);
            }
            let cp = self.commit_idx(Relaxed);
            let p = &pages[cp];
            while p.commit() != p.write_index() {
                p.page.commit.store(p.write_index() as u64, Release);
            }
            if cp == self.tail_idx(Acquire) {
                break;
            }
        }
    }

    // ---------------------------------------------------------------
    // Reader side (all under the reader lock).
    // ---------------------------------------------------------------

    pub(crate) fn lock_reader(&self) -> ReaderGuard<'_> {
        while self
            .reader_lock
            .compare_exchange_weak(false, true, Acquire, Relaxed)
            .is_err()
        {
            spin_loop();
        }
        ReaderGuard(&self.reader_lock)
    }

    /// `rb_set_head_page`: find the page whose predecessor carries HEAD.
    fn rb_set_head_page(&self) -> Option<usize> {
        let page = find_head(self.pages(), self.head_page.load(Relaxed))?;
        self.head_page.store(page, Relaxed);
        Some(page)
    }

    /// `rb_head_page_replace`: swap `new` in place of the head page `old`.
    fn rb_head_page_replace(&self, old: usize, new: usize) -> bool {
        let pages = self.pages();
        let prev = pages[old].prev.load(SeqCst);
        pages[prev]
            .next
            .compare_exchange(old << 2 | RB_PAGE_HEAD, new << 2, SeqCst, SeqCst)
            .is_ok()
    }

    /// `rb_get_reader_page`: return the reader page if it has unread data,
    /// else swap it with the head page. Caller holds the reader lock.
    pub(crate) fn rb_get_reader_page(&self) -> Option<usize> {
        let pages = self.pages();
        let mut result = None;
        'again: for _ in 0..3 {
            let reader = self.reader_page.load(Relaxed);
            let rp = &pages[reader];
            let read = rp.read.load(Relaxed);
            // Load the commit page *before* the reader page's commit: the
            // writer sets a page's final commit before moving commit_page
            // off it, so if commit_page is elsewhere, `size` is final.
            // (Loading them in the other order loses the end of a page that
            // the writer finishes between the two loads.)
            let commit_page = self.commit_idx(Acquire);
            let size = rp.commit();
            if read < size {
                result = Some(reader);
                break;
            }
            if read > size {
                break; // RB_WARN_ON
            }
            // Caught up with the writer?
            if commit_page == reader {
                break;
            }
            if self.rb_num_of_entries() <= 0 {
                break;
            }
            // Reset the reader page before it goes into the ring.
            rp.write.store(0, Relaxed);
            rp.entries.store(0, Relaxed);
            rp.page.commit.store(0, Relaxed);
            rp.real_end.store(0, Relaxed);
            // (Not in Linux: if the swap below gives up, the page stays
            // consistent, empty and fully read.)
            rp.read.store(0, Relaxed);

            for _ in 0..1000 {
                // spin:
                let Some(head) = self.rb_set_head_page() else {
                    // A writer is moving the head (UPDATE): wait for it.
                    spin_loop();
                    continue;
                };
                let hp = &pages[head];
                rp.next.store(hp.next.load(SeqCst) & !RB_FLAG_MASK, SeqCst);
                rp.prev.store(hp.prev.load(SeqCst), SeqCst);
                // The reader page will point to the new head.
                rp.next.fetch_or(RB_PAGE_HEAD, SeqCst);
                // Read overrun after setting up the pointers; pairs with the
                // writer's cmpxchg in rb_handle_head_page.
                let overwrite = self.overrun.load(SeqCst);
                if !self.rb_head_page_replace(head, reader) {
                    spin_loop();
                    continue;
                }
                // Success: the old head is ours; fix the new head's prev.
                let new_head = hp.next.load(SeqCst) >> 2;
                pages[new_head].prev.store(reader, SeqCst);
                self.head_page.store(new_head, Relaxed);
                self.reader_page.store(head, Release);
                hp.read.store(0, Relaxed);
                let last = self.last_overrun.load(Relaxed);
                if overwrite != last {
                    self.lost_events
                        .store(overwrite.wrapping_sub(last), Relaxed);
                    self.last_overrun.store(overwrite, Relaxed);
                }
                continue 'again;
            }
            break;
        }
        if let Some(r) = result {
            if pages[r].read.load(Relaxed) == 0 {
                self.read_stamp
                    .store(pages[r].page.time_stamp.load(Relaxed), Relaxed);
            }
        }
        result
    }

    /// `rb_buffer_peek`: the next data event, skipping padding and time
    /// events (which update the read stamp). Caller holds the reader lock.
    pub(crate) fn peek_locked(&self) -> Option<Found> {
        let pages = self.pages();
        // Each round consumes at least 4 bytes or swaps a page.
        for _ in 0..BUF_PAGE_SIZE {
            let reader = self.rb_get_reader_page()?;
            let rp = &pages[reader];
            let read = rp.read.load(Relaxed);
            let commit = rp.commit();
            // SAFETY: commit was loaded with Acquire; the reader page is out
            // of the ring, so writers only write beyond its commit.
            let data = unsafe { rp.committed(commit) };
            match decode_event(data, read, self.read_stamp.load(Relaxed)) {
                Err(_) => {
                    // Corrupt page: skip the rest of it.
                    rp.read.store(commit, Relaxed);
                    self.read_bytes
                        .fetch_add(commit.saturating_sub(read), Relaxed);
                }
                Ok((ev, len)) => match ev.kind {
                    EventKind::Padding => {
                        rp.read.store(read + len, Relaxed);
                        self.read_bytes.fetch_add(len, Relaxed);
                    }
                    EventKind::TimeExtend | EventKind::TimeStamp => {
                        self.read_stamp.store(ev.ts, Relaxed);
                        rp.read.store(read + len, Relaxed);
                        self.read_bytes.fetch_add(len, Relaxed);
                    }
                    EventKind::Data => {
                        let data_start = ev.payload.as_ptr() as usize - data.as_ptr() as usize;
                        return Some(Found {
                            page: reader,
                            pos: read,
                            len,
                            ts: ev.ts,
                            data_start,
                            data_len: ev.payload.len(),
                        });
                    }
                },
            }
        }
        None
    }

    /// The payload of a found event. Caller holds the reader lock.
    pub(crate) fn found_data(&self, f: &Found) -> &[u8] {
        let p = &self.pages()[f.page];
        // SAFETY: `f` was found below the Acquire-loaded commit of the reader
        // page, which writers no longer touch below commit.
        let data = unsafe { p.committed(f.data_start + f.data_len) };
        &data[f.data_start..]
    }

    /// `rb_advance_reader` past a found data event (and `lost_events = 0`).
    pub(crate) fn advance_found(&self, f: &Found) {
        let p = &self.pages()[f.page];
        p.read.store(f.pos + f.len, Relaxed);
        self.read_bytes.fetch_add(f.len, Relaxed);
        self.read.fetch_add(1, Relaxed);
        self.read_stamp.store(f.ts, Relaxed);
        self.lost_events.store(0, Relaxed);
    }

    pub(crate) fn lost_events(&self) -> usize {
        self.lost_events.load(Relaxed)
    }

    /// `ring_buffer_read_page` (with `full == 0`) into `out`. Returns the
    /// number of event bytes in the page (commit without flags).
    pub(crate) fn read_page(&self, out: &mut [u8; PAGE_SIZE]) -> Option<usize> {
        let _g = self.lock_reader();
        let pages = self.pages();
        let reader = self.rb_get_reader_page()?;
        let rp = &pages[reader];
        let read = rp.read.load(Relaxed);
        // Commit page first, then commit (see rb_get_reader_page).
        let writer_on_page = reader == self.commit_idx(Acquire);
        let commit = rp.commit();
        let missed_events = self.lost_events.load(Relaxed);
        out.fill(0);
        let mut data_len;
        if read != 0 || writer_on_page {
            // Copy event by event from the read position.
            let save_timestamp = self.read_stamp.load(Relaxed);
            // SAFETY: below the Acquire-loaded commit of the reader page.
            let data = unsafe { rp.committed(commit) };
            let mut rpos = read;
            let mut pos = 0;
            while rpos < commit {
                let (ev, len) = match decode_event(data, rpos, self.read_stamp.load(Relaxed)) {
                    Ok(x) => x,
                    Err(_) => break,
                };
                let len = len.min(commit - rpos);
                out[BUF_PAGE_HDR_SIZE + pos..BUF_PAGE_HDR_SIZE + pos + len]
                    .copy_from_slice(&data[rpos..rpos + len]);
                // rb_advance_reader
                match ev.kind {
                    EventKind::Data => {
                        self.read.fetch_add(1, Relaxed);
                        self.read_stamp.store(ev.ts, Relaxed);
                    }
                    EventKind::TimeExtend | EventKind::TimeStamp => {
                        self.read_stamp.store(ev.ts, Relaxed)
                    }
                    EventKind::Padding => {}
                }
                self.read_bytes.fetch_add(len, Relaxed);
                rpos += len;
                pos += len;
            }
            rp.read.store(rpos.max(read), Relaxed);
            out[0..8].copy_from_slice(&save_timestamp.to_le_bytes());
            data_len = pos;
        } else {
            // The whole page, which the writer has left: hand it out.
            self.read.fetch_add(rp.nr_entries(), Relaxed);
            self.read_bytes.fetch_add(commit, Relaxed);
            // SAFETY: as above.
            let data = unsafe { rp.committed(commit) };
            let real_end = rp.real_end.load(Relaxed);
            data_len = if real_end != 0 && real_end <= commit {
                real_end
            } else {
                commit
            };
            out[BUF_PAGE_HDR_SIZE..BUF_PAGE_HDR_SIZE + data_len].copy_from_slice(&data[..data_len]);
            out[0..8].copy_from_slice(&rp.page.time_stamp.load(Relaxed).to_le_bytes());
            // Linux swaps in the caller's empty page; we empty ours instead.
            rp.page.commit.store(0, Relaxed);
            rp.write.store(0, Relaxed);
            rp.entries.store(0, Relaxed);
            rp.read.store(0, Relaxed);
            rp.real_end.store(0, Relaxed);
        }
        self.lost_events.store(0, Relaxed);
        let mut commit_field = data_len as u64;
        if missed_events != 0 {
            if BUF_PAGE_SIZE - data_len >= 8 {
                let at = BUF_PAGE_HDR_SIZE + data_len;
                out[at..at + 8].copy_from_slice(&(missed_events as u64).to_le_bytes());
                commit_field |= RB_MISSED_STORED;
                data_len += 0; // the stored count is not event data
            }
            commit_field |= RB_MISSED_EVENTS;
        }
        out[8..16].copy_from_slice(&commit_field.to_le_bytes());
        Some(data_len)
    }

    // ---------------------------------------------------------------
    // Non-consuming iteration support (recording stopped on this CPU).
    // ---------------------------------------------------------------

    /// Snapshot for an iterator: (reader page, its read index, read stamp, cpu.read).
    pub(crate) fn iter_start(&self) -> (usize, usize, u64, usize) {
        let reader = self.reader_page.load(Relaxed);
        let p = &self.pages()[reader];
        let read = p.read.load(Relaxed);
        let stamp = if read != 0 {
            self.read_stamp.load(Relaxed)
        } else {
            p.page.time_stamp.load(Relaxed)
        };
        (reader, read, stamp, self.read.load(Relaxed))
    }

    pub(crate) fn reader_page_index(&self) -> usize {
        self.reader_page.load(Relaxed)
    }

    pub(crate) fn read_count(&self) -> usize {
        self.read.load(Relaxed)
    }

    pub(crate) fn commit_page_index(&self) -> usize {
        self.commit_idx(Acquire)
    }

    /// The page after `page` for an iterator (`rb_inc_iter`).
    pub(crate) fn iter_next_page(&self, page: usize) -> Option<usize> {
        if page == self.reader_page.load(Relaxed) {
            self.rb_set_head_page()
        } else {
            Some(self.rb_inc_page(page))
        }
    }

    /// Committed bytes and time stamp of `page`.
    ///
    /// # Safety
    /// Recording is stopped on this CPU with no writer in flight (so no
    /// page in the ring changes) and the reader lock is held.
    pub(crate) unsafe fn page_committed(&self, page: usize) -> (&[u8], u64) {
        let p = &self.pages()[page];
        let c = p.commit();
        // SAFETY: forwarded contract: nobody writes the page.
        (unsafe { p.committed(c) }, p.page.time_stamp.load(Relaxed))
    }

    // ---------------------------------------------------------------
    // Control: stop writers, reset, resize.
    // ---------------------------------------------------------------

    /// Stop recording on this CPU and wait until writers in flight are gone
    /// (Linux: record_disabled++ then synchronize_rcu()).
    pub(crate) fn disable_and_drain(&self) {
        self.state.fetch_add(DISABLE_UNIT, AcqRel);
        while self.state.load(Acquire) & WRITERS_MASK != 0 {
            spin_loop();
        }
    }

    /// `record_disable_cpu` without waiting.
    pub(crate) fn disable(&self) {
        self.state.fetch_add(DISABLE_UNIT, AcqRel);
    }

    pub(crate) fn enable(&self) {
        self.state.fetch_sub(DISABLE_UNIT, Release);
    }

    /// `record_enable_cpu`: undo one `disable`, if any.
    pub(crate) fn enable_checked(&self) {
        let _ = self
            .state
            .fetch_update(AcqRel, Acquire, |v| v.checked_sub(DISABLE_UNIT));
    }

    /// Run `f` on the page table with writers drained and the reader lock held.
    fn with_quiesced<R>(&self, f: impl FnOnce(&Self, &mut Vec<BufferPage>) -> R) -> R {
        self.disable_and_drain();
        let g = self.lock_reader();
        // SAFETY: no writer is in flight and new ones fail at the
        // record_disabled check before touching the table; every reader
        // path holds the reader lock, which we hold. So this is the only
        // reference to the table.
        let pages = unsafe { &mut *self.pages.get() };
        let r = f(self, pages);
        drop(g);
        self.enable();
        r
    }

    /// Counters and stamps to zero; head, tail and commit on page 1 of
    /// `pages` (the table being installed), the reader page 0.
    fn reset_state(&self, pages: &[BufferPage]) {
        let nr_pages = pages.len() - 1;
        self.nr_pages.store(nr_pages, Relaxed);
        for a in [
            &self.entries,
            &self.entries_bytes,
            &self.overrun,
            &self.commit_overrun,
            &self.dropped_events,
            &self.committing,
            &self.commits,
            &self.read,
            &self.read_bytes,
            &self.lost_events,
            &self.last_overrun,
        ] {
            a.store(0, Relaxed);
        }
        for a in [&self.read_stamp, &self.write_stamp, &self.before_stamp] {
            a.store(0, Relaxed);
        }
        self.head_page.store(1, Relaxed);
        self.tail_page.store(page_addr(pages, 1), Relaxed);
        self.commit_page.store(page_addr(pages, 1), Relaxed);
        self.reader_page.store(READER, Relaxed);
    }

    /// `rb_reset_cpu`.
    pub(crate) fn reset(&self) {
        self.with_quiesced(|s, pages| {
            // Put the reader page back at index 0 so link_ring applies.
            let r = s.reader_page.load(Relaxed);
            pages.swap(READER, r);
            for p in pages.iter() {
                p.reset();
            }
            link_ring(pages);
            s.reset_state(pages);
        })
    }

    /// Change the number of pages to `nr` (≥ 2). New pages are allocated
    /// before writers are stopped. Committed events are kept as long as they
    /// fit; when shrinking a buffer with more data pages than `nr`, the
    /// oldest pages go and their events are counted in `overrun` (as Linux's
    /// rb_remove_pages does).
    /// The caller serialises resizes (`RingBuffer::resize` holds a lock).
    pub(crate) fn resize(&self, nr: usize) -> Result<(), RingBufferError> {
        let cur = self.nr_pages.load(Relaxed);
        if nr == cur {
            return Ok(());
        }
        let mut fresh = alloc_pages(nr.saturating_sub(cur).saturating_sub(1))?;
        if nr <= cur {
            fresh.clear();
        }
        let mut table: Vec<BufferPage> = Vec::new();
        table.try_reserve_exact(nr + 1).map_err(|_| AllocError)?;
        let mut order: Vec<usize> = Vec::new();
        order.try_reserve_exact(cur).map_err(|_| AllocError)?;

        self.with_quiesced(move |s, pages| {
            if s.resize_disabled.load(Relaxed) != 0 {
                return Err(RingBufferError::Busy);
            }
            let reader = s.reader_page.load(Relaxed);
            // (The index from the address by hand: `s.tail_idx` would go
            // through `s.pages()`.)
            let tail = (s.tail_page.load(Relaxed) - pages.as_ptr() as usize)
                / core::mem::size_of::<BufferPage>();
            // Ring order from the head.
            // (Only `pages` is used to reach the table here: no `s.pages()`
            // while this `&mut` is alive.)
            let head = find_head(pages, s.head_page.load(Relaxed)).unwrap_or(1);
            let mut p = head;
            for _ in 0..cur {
                order.push(p);
                p = pages[p].next.load(Relaxed) >> 2;
            }
            // Pages holding data: head ..= tail (none if the tail is on the reader page).
            let data_pages = if tail == reader {
                0
            } else {
                order.iter().position(|&x| x == tail).map_or(0, |i| i + 1)
            };
            let drop_data = data_pages.saturating_sub(nr);
            for &d in &order[..drop_data] {
                s.overrun.fetch_add(pages[d].nr_entries(), Relaxed);
                s.entries_bytes.fetch_sub(pages[d].commit(), Relaxed);
            }
            let keep_data = &order[drop_data..data_pages];
            let free = &order[data_pages..];
            // Move pages out of the old table by index.
            // (Each index appears once in `order`, and the reader page is not
            // in it, so every `take` finds its page.)
            let mut slots: Vec<Option<BufferPage>> =
                core::mem::take(pages).into_iter().map(Some).collect();
            table.extend(slots[reader].take());
            for &d in keep_data {
                table.extend(slots[d].take());
            }
            for &f in free {
                if table.len() == nr + 1 {
                    break;
                }
                if let Some(pg) = slots[f].take() {
                    pg.reset();
                    table.push(pg);
                }
            }
            for pg in fresh {
                if table.len() == nr + 1 {
                    break;
                }
                table.push(pg);
            }
            // Link: reader = 0, ring = 1..=nr, head = 1 unless there is no data
            // (then the head is the page after the tail, as after a reset).
            link_ring(&table);
            let nd = keep_data.len();
            s.nr_pages.store(table.len() - 1, Relaxed);
            s.reader_page.store(READER, Relaxed);
            // The addresses are the new table's elements: its storage
            // stays where it is when the Vec moves into `*pages`.
            if nd == 0 {
                // Tail (and commit) stay on the reader page; head = 1.
                s.head_page.store(1, Relaxed);
                s.tail_page.store(page_addr(&table, READER), Relaxed);
                s.commit_page.store(page_addr(&table, READER), Relaxed);
            } else {
                s.head_page.store(1, Relaxed);
                s.tail_page.store(page_addr(&table, nd), Relaxed);
                s.commit_page.store(page_addr(&table, nd), Relaxed);
            }
            *pages = table;
            drop(slots);
            Ok(())
        })
    }

    // ---------------------------------------------------------------
    // Statistics.
    // ---------------------------------------------------------------

    pub(crate) fn entries_cpu(&self) -> usize {
        self.rb_num_of_entries().max(0) as usize
    }
    pub(crate) fn overrun(&self) -> usize {
        self.overrun.load(Relaxed)
    }
    pub(crate) fn commit_overrun(&self) -> usize {
        self.commit_overrun.load(Relaxed)
    }
    pub(crate) fn bytes(&self) -> usize {
        (self.entries_bytes.load(Relaxed) as isize)
            .wrapping_sub(self.read_bytes.load(Relaxed) as isize)
            .max(0) as usize
    }
    pub(crate) fn dropped_events(&self) -> usize {
        self.dropped_events.load(Relaxed)
    }
    pub(crate) fn read_events(&self) -> usize {
        self.read.load(Relaxed)
    }

    /// `ring_buffer_oldest_event_ts`.
    pub(crate) fn oldest_event_ts(&self) -> u64 {
        let _g = self.lock_reader();
        let pages = self.pages();
        let page = if self.tail_idx(Acquire) == self.reader_page.load(Relaxed) {
            Some(self.reader_page.load(Relaxed))
        } else {
            self.rb_set_head_page()
        };
        page.map_or(0, |p| pages[p].page.time_stamp.load(Relaxed))
    }

    /// `rb_per_cpu_empty`.
    pub(crate) fn is_empty(&self) -> bool {
        let _g = self.lock_reader();
        let pages = self.pages();
        let reader = self.reader_page.load(Relaxed);
        let rp = &pages[reader];
        let commit = self.commit_idx(Acquire);
        if rp.read.load(Relaxed) < rp.commit() {
            return false;
        }
        if commit == reader {
            return true;
        }
        match self.rb_set_head_page() {
            Some(h) if h == commit => pages[h].commit() == pages[h].read.load(Relaxed),
            _ => self.rb_num_of_entries() <= 0,
        }
    }
}

impl RingBufferPerCpu {
    /// A description of the page ring, for debugging.
    pub(crate) fn debug_dump(&self) -> alloc::string::String {
        use core::fmt::Write;
        let _g = self.lock_reader();
        let pages = self.pages();
        let mut s = alloc::string::String::new();
        let _ = writeln!(
            s,
            "head {} tail {} commit {} reader {} entries {} overrun {} read {} committing {} writers {} disabled {}",
            self.head_page.load(Relaxed),
            self.tail_idx(Relaxed),
            self.commit_idx(Relaxed),
            self.reader_page.load(Relaxed),
            self.entries.load(Relaxed),
            self.overrun.load(Relaxed),
            self.read.load(Relaxed),
            self.committing.load(Relaxed),
            self.state.load(Relaxed) & WRITERS_MASK,
            self.state.load(Relaxed) / DISABLE_UNIT,
        );
        for (i, p) in pages.iter().enumerate() {
            let n = p.next.load(Relaxed);
            let _ = writeln!(
                s,
                "page {i}: next {}{} prev {} write {:#x} entries {:#x} commit {} read {} real_end {} ts {}",
                n >> 2,
                ["", "|HEAD", "|UPDATE", "|?"][n & 3],
                p.prev.load(Relaxed),
                p.write.load(Relaxed),
                p.entries.load(Relaxed),
                p.commit(),
                p.read.load(Relaxed),
                p.real_end.load(Relaxed),
                p.page.time_stamp.load(Relaxed)
            );
        }
        s
    }
}

/// Unit tests can run an "interrupt" (a nested write on the same thread) at
/// named points inside `lock_reserve`.
#[cfg(all(test, not(loom)))]
pub(crate) mod test_hook {
    use std::boxed::Box;
    use std::cell::RefCell;

    type Hook = Box<dyn FnMut(&str)>;

    std::thread_local! {
        pub(crate) static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
    }

    /// Run the hook (not re-entrantly: it is taken out while it runs).
    pub(crate) fn fire(point: &str) {
        if let Some(mut f) = HOOK.with(|h| h.borrow_mut().take()) {
            f(point);
            HOOK.with(|h| {
                let mut h = h.borrow_mut();
                if h.is_none() {
                    *h = Some(f);
                }
            });
        }
    }

    pub(crate) fn set(f: impl FnMut(&str) + 'static) {
        HOOK.with(|h| *h.borrow_mut() = Some(Box::new(f)));
    }

    pub(crate) fn clear() {
        HOOK.with(|h| *h.borrow_mut() = None);
    }
}
