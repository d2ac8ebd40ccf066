//! The kernel heap: one large block of RAM managed by linked_list_allocator
//! (Linux has slab allocators; a first-fit list is enough to read and to test).
//! The lock is taken with interrupts off so an interrupt on the same CPU can
//! never find it held by the code it interrupted.
use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;

use linked_list_allocator::Heap;
use spin::Mutex;

use crate::arch;

struct KernelHeap(Mutex<Heap>);

#[global_allocator]
static HEAP: KernelHeap = KernelHeap(Mutex::new(Heap::empty()));

// SAFETY: every access to the Heap goes through the mutex with interrupts off.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        arch::without_interrupts(|| {
            self.0
                .lock()
                .allocate_first_fit(layout)
                .map_or(core::ptr::null_mut(), |p| p.as_ptr())
        })
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: `ptr` came from `alloc` with the same layout (GlobalAlloc contract).
            arch::without_interrupts(|| unsafe { self.0.lock().deallocate(p, layout) });
        }
    }
}

/// Hands the heap its memory: `size` bytes at virtual address `start`.
pub fn init(start: u64, size: u64) {
    // SAFETY: the block is unused RAM reserved for the heap, mapped writable.
    unsafe { HEAP.0.lock().init(start as *mut u8, size as usize) };
}

/// (used, free) bytes.
pub fn usage() -> (usize, usize) {
    arch::without_interrupts(|| {
        let h = HEAP.0.lock();
        (h.used(), h.free())
    })
}
