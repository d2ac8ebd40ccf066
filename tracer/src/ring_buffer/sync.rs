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
