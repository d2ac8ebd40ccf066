//! The atomics used by the ring buffer, behind one name so that
//! `RUSTFLAGS="--cfg loom"` can swap in loom's model-checked versions.
//!
//! Only the atomics that carry the lock-free protocol (list pointers with
//! their HEAD/UPDATE flags, page `write`/`commit` indexes, the tail, commit,
//! head and reader page indexes, the counters) go through this shim. The
//! event bytes themselves live in a plain `UnsafeCell` page whose ownership
//! is handed over by those atomics.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Tell the CPU (or loom's scheduler) that we are spinning.
#[inline]
pub(crate) fn spin_loop() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// Linux's `local_add` on a counter that only its own CPU writes (the
/// writer-side counters of a `ring_buffer_per_cpu`: `committing`, `commits`,
/// `entries`, `entries_bytes`, a page's `entries`).
///
/// On x86_64 this is one `add` instruction **without** the `lock` prefix,
/// exactly as Linux's `local_t`: an instruction is never split by an
/// interrupt, so it is atomic with respect to the nested writers (interrupts)
/// of this CPU, which are the only other writers; other CPUs only read the
/// counter, and to them the add is the same as a load and a store by the
/// one writer, ordered as x86 orders plain loads (Acquire) and stores
/// (Release). It is a compiler barrier (no `nomem`), like the locked form.
/// Under loom (and on other architectures) it is an AcqRel `fetch_add`,
/// the same ordering, in a form the model checker can reason about.
#[inline(always)]
pub(crate) fn local_add(a: &AtomicUsize, v: usize) {
    #[cfg(all(not(loom), target_arch = "x86_64"))]
    // SAFETY: `a.as_ptr()` is a valid, aligned usize for the lifetime of
    // `a`; the instruction reads and writes only that word. Writers of the
    // word are this CPU and its interrupts (see above), so no write from
    // another CPU can be lost.
    unsafe {
        core::arch::asm!("add qword ptr [{p}], {v}", p = in(reg) a.as_ptr(), v = in(reg) v,
                         options(nostack))
    };
    #[cfg(any(loom, not(target_arch = "x86_64")))]
    a.fetch_add(v, Ordering::AcqRel);
}

/// Linux's `local_sub` (see [`local_add`]).
#[inline(always)]
pub(crate) fn local_sub(a: &AtomicUsize, v: usize) {
    local_add(a, v.wrapping_neg())
}
