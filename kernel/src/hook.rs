//! Hooks: a fixed set of function pointers that a subsystem registers on
//! another's events, so that the code raising the event never imports the
//! code that listens (Linux: the probes of a tracepoint,
//! kernel/tracepoint.c, `register_trace_sched_switch` and friends).
//!
//! The scheduler and the interrupt path call `hook.call(..)`-style loops
//! over [`Hook::probes`]; tracing registers its functions at boot. A probe is
//! a plain `fn` pointer: registering one stores its address in a free slot,
//! unregistering clears the slot. A CPU that loaded the pointer just before
//! it was cleared may still call it once; since probes are functions (code
//! that is never freed), that is harmless.
use core::marker::PhantomData;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::fs::Errno;

/// Probes one hook can hold (the option-change hook has the function,
/// function_graph, event-pid, snapshot and latency tracers' probes).
pub const MAX_PROBES: usize = 8;

/// The registered probes of one event. `F` is the probe's `fn` type, e.g.
/// `fn(&Task, &Task)`.
pub struct Hook<F: Copy> {
    probes: [AtomicUsize; MAX_PROBES],
    _f: PhantomData<F>,
}

impl<F: Copy> Default for Hook<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: Copy> Hook<F> {
    /// A hook with no probes. `F` must be a `fn` pointer type.
    pub const fn new() -> Hook<F> {
        assert!(core::mem::size_of::<F>() == core::mem::size_of::<usize>());
        Hook {
            probes: [const { AtomicUsize::new(0) }; MAX_PROBES],
            _f: PhantomData,
        }
    }

    fn addr(f: F) -> usize {
        // SAFETY: F is a fn pointer type of the size of usize (checked in
        // `new`); its bits are the function's address.
        unsafe { core::mem::transmute_copy::<F, usize>(&f) }
    }

    /// Adds `f` (Linux: tracepoint_probe_register). EEXIST if it is already
    /// registered, ENOMEM if every slot is taken.
    pub fn register(&self, f: F) -> Result<(), Errno> {
        let addr = Self::addr(f);
        if self
            .probes
            .iter()
            .any(|p| p.load(Ordering::Acquire) == addr)
        {
            return Err(Errno::EEXIST);
        }
        for p in &self.probes {
            if p.compare_exchange(0, addr, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Ok(());
            }
        }
        Err(Errno::ENOMEM)
    }

    /// Removes `f` (Linux: tracepoint_probe_unregister). ENOENT if it was
    /// not registered.
    pub fn unregister(&self, f: F) -> Result<(), Errno> {
        let addr = Self::addr(f);
        for p in &self.probes {
            if p.compare_exchange(addr, 0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Ok(());
            }
        }
        Err(Errno::ENOENT)
    }

    /// The registered probes, for the event's caller to call in turn.
    #[inline(always)]
    pub fn probes(&self) -> impl Iterator<Item = F> + '_ {
        self.probes.iter().filter_map(|p| {
            let addr = p.load(Ordering::Acquire);
            // SAFETY: a non-zero slot holds the bits of an `F` stored by
            // `register` (same size, see `new`).
            (addr != 0).then(|| unsafe { core::mem::transmute_copy::<usize, F>(&addr) })
        })
    }
}
