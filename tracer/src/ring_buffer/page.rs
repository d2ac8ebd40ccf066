//! Pages: `struct buffer_data_page` (the 4096 bytes readers see) and
//! `struct buffer_page` (the bookkeeping around it, one per page).

use alloc::boxed::Box;
use core::cell::UnsafeCell;

use super::event::BUF_PAGE_SIZE;
use super::sync::{AtomicU64, AtomicUsize, Ordering};
use super::AllocError;

/// `RB_WRITE_MASK`: the low 20 bits of `write` and `entries` are the index or
/// count; the upper bits count updates (`RB_WRITE_INTCNT`) so that a writer
/// that was interrupted can tell its page was reset under it.
pub(crate) const RB_WRITE_MASK: usize = 0xfffff;
/// `RB_WRITE_INTCNT`.
pub(crate) const RB_WRITE_INTCNT: usize = 1 << 20;

/// `struct buffer_data_page` in Linux's layout: `u64 time_stamp`, `local_t
/// commit` (8 bytes), `data[4080]`, 4096-byte aligned. (Under `cfg(loom)`
/// the two header fields are loom atomics and the layout differs; only the
/// normal build is used as raw pages.)
#[repr(C, align(4096))]
pub(crate) struct DataPage {
    pub(crate) time_stamp: AtomicU64,
    pub(crate) commit: AtomicU64,
    data: UnsafeCell<[u8; BUF_PAGE_SIZE]>,
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<DataPage>() == super::event::PAGE_SIZE);
#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<BufferPage>() == 64);

impl DataPage {
    /// Allocate a zeroed page without going through the stack.
    #[cfg(not(loom))]
    fn alloc() -> Result<Box<DataPage>, AllocError> {
        let layout = core::alloc::Layout::new::<DataPage>();
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { alloc::alloc::alloc_zeroed(layout) } as *mut DataPage;
        if p.is_null() {
            return Err(AllocError);
        }
        // SAFETY: `p` was allocated by the global allocator with DataPage's
        // layout, and all-zero bytes are a valid DataPage (atomics and u8s).
        Ok(unsafe { Box::from_raw(p) })
    }

    #[cfg(loom)]
    fn alloc() -> Result<Box<DataPage>, AllocError> {
        Ok(Box::new(DataPage {
            time_stamp: AtomicU64::new(0),
            commit: AtomicU64::new(0),
            data: UnsafeCell::new([0; BUF_PAGE_SIZE]),
        }))
    }

    /// Pointer to `data[off]`.
    #[inline(always)]
    fn ptr(&self, off: usize) -> *mut u8 {
        debug_assert!(off <= BUF_PAGE_SIZE);
        // SAFETY: `off <= BUF_PAGE_SIZE`, so the result stays inside the array
        // (or one past its end).
        unsafe { (self.data.get() as *mut u8).add(off) }
    }
}

/// `struct buffer_page`. The `next` field is Linux's `list.next` with the
/// page *index* in place of the pointer: `next = index << 2 | flags`, where
/// the flags are `RB_PAGE_HEAD` or `RB_PAGE_UPDATE`.
///
/// 64 bytes, aligned: the per-CPU buffer's `tail_page` and `commit_page`
/// hold a page's address in the table, and the reader turns one back into
/// an index with a shift rather than a division by 56 (and the writer's
/// `write`/`entries` of the tail page share no cache line with another
/// page's).
#[repr(align(64))]
pub(crate) struct BufferPage {
    pub(crate) next: AtomicUsize,
    pub(crate) prev: AtomicUsize,
    /// Reserve index (low 20 bits) + update counter.
    pub(crate) write: AtomicUsize,
    /// Events reserved on this page (low 20 bits) + update counter.
    pub(crate) entries: AtomicUsize,
    /// Reader's index (only touched under the reader lock).
    pub(crate) read: AtomicUsize,
    /// Where the data really ended before the padding.
    pub(crate) real_end: AtomicUsize,
    pub(crate) page: Box<DataPage>,
}

impl BufferPage {
    pub(crate) fn new() -> Result<BufferPage, AllocError> {
        Ok(BufferPage {
            next: AtomicUsize::new(0),
            prev: AtomicUsize::new(0),
            write: AtomicUsize::new(0),
            entries: AtomicUsize::new(0),
            read: AtomicUsize::new(0),
            real_end: AtomicUsize::new(0),
            page: DataPage::alloc()?,
        })
    }

    /// Pointer to `data[off]`, for `off <= BUF_PAGE_SIZE`.
    #[inline(always)]
    pub(crate) fn data_ptr(&self, off: usize) -> *mut u8 {
        self.page.ptr(off)
    }

    /// `rb_page_write`.
    #[inline]
    pub(crate) fn write_index(&self) -> usize {
        self.write.load(Ordering::Acquire) & RB_WRITE_MASK
    }

    /// `rb_page_entries`.
    pub(crate) fn nr_entries(&self) -> usize {
        self.entries.load(Ordering::Acquire) & RB_WRITE_MASK
    }

    /// `rb_page_commit`.
    #[inline]
    pub(crate) fn commit(&self) -> usize {
        self.page.commit.load(Ordering::Acquire) as usize
    }

    /// `rb_init_page` plus the bookkeeping reset the reader does.
    pub(crate) fn reset(&self) {
        self.write.store(0, Ordering::Relaxed);
        self.entries.store(0, Ordering::Relaxed);
        self.read.store(0, Ordering::Relaxed);
        self.real_end.store(0, Ordering::Relaxed);
        self.page.commit.store(0, Ordering::Release);
        self.page.time_stamp.store(0, Ordering::Relaxed);
    }

    /// Copy `src` to `data[off..]`.
    ///
    /// # Safety
    /// The caller owns `data[off..off + src.len()]`: it reserved that range
    /// and has not committed it yet (or it is the page's owner while
    /// recording is stopped). `off + src.len() <= BUF_PAGE_SIZE`.
    #[inline]
    pub(crate) unsafe fn write_bytes(&self, off: usize, src: &[u8]) {
        debug_assert!(off + src.len() <= BUF_PAGE_SIZE);
        // SAFETY: per this function's contract, nobody else reads or writes
        // the range, and it lies inside the page.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), self.page.ptr(off), src.len()) }
    }

    /// Write a little-endian u32 at `data[off]`. Same contract as `write_bytes`.
    #[inline]
    pub(crate) unsafe fn write_u32(&self, off: usize, v: u32) {
        // SAFETY: forwarded contract.
        unsafe { self.write_bytes(off, &v.to_le_bytes()) }
    }

    /// Zero `data[off..off + len]`. Same contract as `write_bytes`.
    pub(crate) unsafe fn zero(&self, off: usize, len: usize) {
        debug_assert!(off + len <= BUF_PAGE_SIZE);
        // SAFETY: forwarded contract.
        unsafe { core::ptr::write_bytes(self.page.ptr(off), 0, len) }
    }

    /// A view of the committed data `data[..len]`.
    ///
    /// # Safety
    /// `len <= commit()` as observed with Acquire ordering (so the bytes were
    /// published by the writers' commit), and no writer can write inside
    /// `data[..len]` while the view lives: the page is the reader page, or
    /// recording on this CPU is stopped.
    pub(crate) unsafe fn committed(&self, len: usize) -> &[u8] {
        debug_assert!(len <= BUF_PAGE_SIZE);
        // SAFETY: forwarded contract.
        unsafe { core::slice::from_raw_parts(self.page.ptr(0), len) }
    }
}
