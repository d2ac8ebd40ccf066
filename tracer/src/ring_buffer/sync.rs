//! The atomics used by the ring buffer, behind one name so that
//! `RUSTFLAGS="--cfg loom"` can swap in loom's model-checked versions.
//!
//! Only the atomics that carry the lock-free protocol (list pointers with
//! their HEAD/UPDATE flags, page `write`/`commit` indexes, the tail, commit,
//! head and reader page indexes, the counters, the buffer's per-CPU
//! pointers) go through this shim. The
//! event bytes themselves live in a plain `UnsafeCell` page whose ownership
//! is handed over by those atomics.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// Tell the CPU (or loom's scheduler) that we are spinning.
#[inline]
pub(crate) fn spin_loop() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// Linux's `local_add` / `local_inc` / `local_dec` on a counter that only
/// its own CPU writes (the writer-side counters of a `ring_buffer_per_cpu`:
/// `committing`, `commits`, `entries`, `entries_bytes`, a page's
/// `entries`): `local_add!(obj: Type, field, value)`, `local_inc!(...)`,
/// `local_dec!(...)`, where `obj.field` is an `AtomicUsize`.
///
/// On x86_64 this is one `add`/`sub` instruction on `[obj + offset]`,
/// **without** the `lock` prefix, exactly as Linux's `local_t`: an
/// instruction is never split by an interrupt, so it is atomic with respect
/// to the nested writers (interrupts) of this CPU, which are the only other
/// writers; other CPUs only read the counter, and to them the add is a load
/// and a store by the one writer, ordered as x86 orders plain loads
/// (Acquire) and stores (Release). The asm is a compiler barrier (no
/// `nomem`), like the locked form. Under loom (and on other architectures)
/// it is an AcqRel `fetch_add`/`fetch_sub`: the same ordering, in a form the
/// model checker understands.
macro_rules! local_op {
    ($insn:literal, $fallback:ident, $obj:expr, $ty:ty, $field:ident, $v:expr) => {{
        let obj: &$ty = $obj;
        let v: usize = $v;
        #[cfg(all(not(loom), target_arch = "x86_64"))]
        // SAFETY: `obj.$field` is an AtomicUsize (8 bytes, aligned) at
        // `offset_of!` inside `*obj`, valid for the borrow; the instruction
        // touches only that word, and its only other writers are this CPU's
        // interrupts (see the macro doc), against which one instruction is
        // atomic.
        unsafe {
            core::arch::asm!(
                concat!($insn, " qword ptr [{b} + {o}], {v}"),
                b = in(reg) obj as *const $ty,
                o = const core::mem::offset_of!($ty, $field),
                v = in(reg) v,
                options(nostack)
            )
        };
        #[cfg(any(loom, not(target_arch = "x86_64")))]
        obj.$field.$fallback(v, $crate::ring_buffer::sync::Ordering::AcqRel);
    }};
}

macro_rules! local_add {
    ($obj:expr, $ty:ty, $field:ident, $v:expr) => {
        local_op!("add", fetch_add, $obj, $ty, $field, $v)
    };
}

macro_rules! local_inc_dec {
    ($insn:literal, $fallback:ident, $obj:expr, $ty:ty, $field:ident) => {{
        let obj: &$ty = $obj;
        #[cfg(all(not(loom), target_arch = "x86_64"))]
        // SAFETY: as in `local_op`.
        unsafe {
            core::arch::asm!(
                concat!($insn, " qword ptr [{b} + {o}], 1"),
                b = in(reg) obj as *const $ty,
                o = const core::mem::offset_of!($ty, $field),
                options(nostack)
            )
        };
        #[cfg(any(loom, not(target_arch = "x86_64")))]
        obj.$field.$fallback(1, $crate::ring_buffer::sync::Ordering::AcqRel);
    }};
}

macro_rules! local_inc {
    ($obj:expr, $ty:ty, $field:ident) => {
        local_inc_dec!("add", fetch_add, $obj, $ty, $field)
    };
}

macro_rules! local_dec {
    ($obj:expr, $ty:ty, $field:ident) => {
        local_inc_dec!("sub", fetch_sub, $obj, $ty, $field)
    };
}
