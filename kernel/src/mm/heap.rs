//! The kernel heap: one large block of RAM managed by linked_list_allocator
//! (Linux has slab allocators; a first-fit list is enough to read and to test).
//! The lock is taken with interrupts off so an interrupt on the same CPU can
//! never find it held by the code it interrupted.
//!
//! Every allocation and free fires `kmem:kmalloc` / `kmem:kfree` (Linux's
//! slab allocators fire them the same way), after the lock is released. A
//! probe that allocated would fire kmalloc again from inside itself: a
//! per-task flag drops the events of allocations made by kmem probes (and
//! by an interrupt that arrives on the task while one runs) instead of
//! recursing.
use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use core::sync::atomic::Ordering;

use linked_list_allocator::hole::HoleList;
use linked_list_allocator::Heap;
use spin::Mutex;
use tracer::trace_events::kmem::{GFP_ATOMIC, GFP_KERNEL};

use crate::arch::{self, percpu};
use crate::events::kmem::{__TRACEPOINT_KEY_kfree, __TRACEPOINT_KEY_kmalloc};
use crate::events::kmem::{trace_kfree, trace_kmalloc};

/// Runs `fire` (a kmem tracepoint) unless the running task is already
/// inside one (the recursion guard).
#[inline(never)]
#[cold]
fn kmem_event(fire: impl FnOnce()) {
    let Some(task) = crate::sched::current() else {
        // Before the scheduler: no probe is registered yet.
        return fire();
    };
    if !task.in_kmem_event.swap(true, Ordering::Relaxed) {
        fire();
        task.in_kmem_event.store(false, Ordering::Relaxed);
    }
}

/// The GFP flags an allocation here stands for: the heap never sleeps, but
/// Linux code allocating in an interrupt must pass GFP_ATOMIC, elsewhere
/// GFP_KERNEL.
fn gfp_flags() -> u32 {
    if percpu::in_irq() {
        GFP_ATOMIC
    } else {
        GFP_KERNEL
    }
}

struct KernelHeap(Mutex<Heap>);

#[global_allocator]
static HEAP: KernelHeap = KernelHeap(Mutex::new(Heap::empty()));

// SAFETY: every access to the Heap goes through the mutex with interrupts off.
// Always inlined into the allocator shims (`__rust_alloc`), so that the
// return address read in them is the allocating code's (`call_site`).
unsafe impl GlobalAlloc for KernelHeap {
    #[inline(always)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = crate::irqflags::without_interrupts(|| {
            self.0
                .lock()
                .allocate_first_fit(layout)
                .map_or(core::ptr::null_mut(), |p| p.as_ptr())
        });
        if crate::static_branch_unlikely!(__TRACEPOINT_KEY_kmalloc) {
            let call_site = arch::return_address();
            kmem_event(|| {
                // What the heap really set aside (it rounds small sizes up).
                let bytes_alloc =
                    HoleList::align_layout(layout).map_or(layout.size(), |l| l.size());
                trace_kmalloc(
                    call_site,
                    ptr as u64,
                    layout.size() as u64,
                    bytes_alloc as u64,
                    gfp_flags(),
                    -1,
                )
            });
        }
        ptr
    }

    #[inline(always)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: `ptr` came from `alloc` with the same layout (GlobalAlloc contract).
            crate::irqflags::without_interrupts(|| unsafe { self.0.lock().deallocate(p, layout) });
            if crate::static_branch_unlikely!(__TRACEPOINT_KEY_kfree) {
                let call_site = arch::return_address();
                kmem_event(|| trace_kfree(call_site, ptr as u64));
            }
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
    crate::irqflags::without_interrupts(|| {
        let h = HEAP.0.lock();
        (h.used(), h.free())
    })
}

/// Whether the heap's lock is held right now (by any CPU): code that runs
/// when the kernel dies checks it before allocating, since the dying CPU
/// may hold it.
pub fn heap_locked() -> bool {
    HEAP.0.is_locked()
}
