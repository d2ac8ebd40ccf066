//! Tracepoints: static hooks in the scheduler, the interrupt path and the
//! allocator that cost one static branch while nobody listens (Linux:
//! kernel/tracepoint.c, include/linux/tracepoint.h).
//!
//! A [`Tracepoint`] is a static key plus a pointer to an immutable array of
//! probes, (function, data) pairs. The call site `trace_NAME(args)` (made by
//! `define_tracepoints!` in `events`) is `if static_branch_unlikely!(KEY)
//! { call every probe }`; the key is on exactly while the array is not
//! empty (on at the first probe, off after the last). As Linux's static
//! call, the array carries the one function the site calls: the only
//! probe with its data, or the tracepoint's iterator (`__traceiter_NAME`)
//! with the array as its data.
//!
//! Registering or unregistering never edits the array a CPU may be walking
//! (the list logic is `tracer::tracepoint`, host-tested). It builds a new
//! array, publishes it with one pointer store, waits until no CPU can still
//! be walking the old one, then frees it. Linux waits for an RCU grace
//! period; this is the same idea in its simplest form ("RCU-sched"): a
//! tracepoint call runs with preemption off, and costs nothing more than
//! that (one `add` and one `sub` of this CPU's preempt count). A CPU seen
//! with a preempt count of 0 is outside every tracepoint call, so it cannot
//! hold a pointer it read before the new one was published. The writer's
//! wait ([`tracepoint_synchronize_unregister`]) is `crate::rcu`'s grace
//! period.
//! Probes run with preemption off and must not sleep; registering from a
//! probe is not allowed (the writer would wait for itself).
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicPtr, Ordering};

use spin::Mutex;
pub use tracer::tracepoint::TracepointFunc;
pub use tracer::tracepoint::TRACEPOINT_DEFAULT_PRIO;
use tracer::tracepoint::{func_add, func_remove, func_replace, key_change, KeyChange};

use crate::arch::percpu;
use crate::fs::Errno;
use crate::jump_label::{static_key_disable, static_key_enable, StaticKey};

/// Serializes every probe-list change (Linux: `tracepoints_mutex`).
static TRACEPOINTS_MUTEX: Mutex<()> = Mutex::new(());

/// The published probes of one tracepoint, and what its call site calls
/// (Linux: the static call `tp_func_NAME`): the only probe with its data,
/// or, when there are several, the tracepoint's iterator with this very
/// array as its data. One load of each, and no test of the count, at every
/// call.
#[repr(C)]
struct Funcs<F> {
    func: F,
    data: *mut (),
    list: Vec<TracepointFunc<F>>,
}

/// One tracepoint (Linux: `struct tracepoint`). `F` is the probe's function
/// type, `fn(*mut (), args..)`: the first argument is the probe's data.
pub struct Tracepoint<F: Copy + PartialEq + 'static> {
    pub name: &'static str,
    key: &'static StaticKey,
    funcs: AtomicPtr<Funcs<F>>,
    /// Calls every probe in turn (Linux: `__traceiter_NAME`), given the
    /// published array's `data` ([`Tracepoint::iter_list`] reads it).
    iter: F,
}

impl<F: Copy + PartialEq + 'static> Tracepoint<F> {
    /// A tracepoint with no probes whose call sites test `key`; `iter`
    /// calls the probes of the array [`Tracepoint::iter_list`] reads
    /// from its data argument, in order.
    pub const fn new(name: &'static str, key: &'static StaticKey, iter: F) -> Tracepoint<F> {
        Tracepoint {
            name,
            key,
            funcs: AtomicPtr::new(core::ptr::null_mut()),
            iter,
        }
    }

    /// The probes of the published array whose call goes through the
    /// iterator: `data` is the iterator's data argument.
    ///
    /// # Safety
    /// `data` is what [`Tracepoint::do_trace`] passed to `iter`, and
    /// the call is still running (preemption off keeps the array alive).
    #[inline(always)]
    pub unsafe fn iter_list<'a>(data: *mut ()) -> &'a [TracepointFunc<F>] {
        // SAFETY: `data` is the address of a published `Funcs<F>` (set
        // in `update` for a list of several), alive by the contract.
        unsafe { &(*(data as *const Funcs<F>)).list }
    }

    /// Whether any probe is registered (Linux: `trace_NAME_enabled()`).
    pub fn is_enabled(&self) -> bool {
        self.key.is_enabled()
    }

    /// Adds a probe at the default priority (Linux:
    /// `tracepoint_probe_register`). EEXIST if this (func, data) is there.
    pub fn register(&'static self, func: F, data: *mut ()) -> Result<(), Errno> {
        self.register_prio(func, data, TRACEPOINT_DEFAULT_PRIO)
    }

    /// Adds a probe; higher `prio` runs first (Linux:
    /// `tracepoint_probe_register_prio`).
    pub fn register_prio(&'static self, func: F, data: *mut (), prio: i32) -> Result<(), Errno> {
        let new = TracepointFunc {
            func,
            data: data as usize,
            prio,
        };
        self.update(|old| func_add(old, new))
    }

    /// Removes a probe (Linux: `tracepoint_probe_unregister`). ENOENT if
    /// this (func, data) is not registered.
    pub fn unregister(&'static self, func: F, data: *mut ()) -> Result<(), Errno> {
        self.update(|old| func_remove(old, func, data as usize))
    }

    /// Replaces the probe (`func`, `data`) by (`new_func`, `new_data`) in
    /// one published list, so that every call runs exactly one of them;
    /// the old one is done when this returns (a grace period has passed).
    /// ENOENT if the old probe is not registered.
    pub fn replace(
        &'static self,
        func: F,
        data: *mut (),
        new_func: F,
        new_data: *mut (),
    ) -> Result<(), Errno> {
        let new = TracepointFunc {
            func: new_func,
            data: new_data as usize,
            prio: TRACEPOINT_DEFAULT_PRIO,
        };
        self.update(|old| func_replace(old, func, data as usize, new))
    }

    /// Replaces the probe list by `edit(old)`: publish, switch the key at
    /// 0 <-> 1, wait for quiescence, free the old list.
    fn update(
        &'static self,
        edit: impl FnOnce(&[TracepointFunc<F>]) -> Result<Vec<TracepointFunc<F>>, Errno>,
    ) -> Result<(), Errno> {
        let _g = TRACEPOINTS_MUTEX.lock();
        let old = self.funcs.load(Ordering::Acquire);
        // SAFETY: only this function (under the mutex) replaces and frees
        // the list, so `old` is alive while we hold the mutex.
        let old_list: &[TracepointFunc<F>] = unsafe { old.as_ref() }.map_or(&[], |f| &f.list);
        let list = edit(old_list)?;
        let change = key_change(old_list.len(), list.len());
        let new = match list.len() {
            0 => core::ptr::null_mut(),
            1 => Box::into_raw(Box::new(Funcs {
                func: list[0].func,
                data: list[0].data as *mut (),
                list,
            })),
            _ => {
                let p = Box::into_raw(Box::new(Funcs {
                    func: self.iter,
                    data: core::ptr::null_mut(),
                    list,
                }));
                // SAFETY: `p` was just allocated, unpublished: ours alone.
                unsafe { (*p).data = p as *mut () };
                p
            }
        };
        match change {
            KeyChange::Enable => {
                self.funcs.store(new, Ordering::Release);
                if let Err(e) = static_key_enable(self.key) {
                    // Nothing was on: put the empty list back.
                    self.funcs.store(old, Ordering::Release);
                    tracepoint_synchronize_unregister();
                    free(new);
                    return Err(e);
                }
            }
            KeyChange::Disable => {
                // A failed disable leaves the site on: it then finds no
                // probes and does nothing, so go on.
                let _ = static_key_disable(self.key);
                self.funcs.store(new, Ordering::Release);
            }
            KeyChange::Keep => self.funcs.store(new, Ordering::Release),
        }
        tracepoint_synchronize_unregister();
        free(old);
        Ok(())
    }

    /// Runs `call(func, data)` with the published function and data (Linux:
    /// `__DO_TRACE` and its static call): the only probe, or the iterator
    /// over several. With preemption off: the read side of the grace
    /// period (see the module doc). The call site tests the key first.
    #[inline(always)]
    pub fn do_trace(&self, call: impl FnOnce(F, *mut ())) {
        percpu::this_cpu_preempt_inc();
        let p = self.funcs.load(Ordering::Acquire);
        // SAFETY: the array at `p` is freed only after every other CPU has
        // been seen with preemption on after `p` was replaced, and this CPU
        // keeps preemption off until the call returns.
        if let Some(funcs) = unsafe { p.as_ref() } {
            call(funcs.func, funcs.data);
        }
        percpu::this_cpu_preempt_dec();
    }
}

fn free<F>(p: *mut Funcs<F>) {
    if !p.is_null() {
        // SAFETY: `p` came from Box::into_raw in `update` and, unpublished
        // and past quiescence, nobody else refers to it.
        drop(unsafe { Box::from_raw(p) });
    }
}

/// Run by the IPI on every other CPU: note this CPU as quiescent if the
/// code the IPI interrupted had preemption on (so it was in no tracepoint
/// call). Interrupt entry does not touch the preempt count.
/// Waits until every CPU has left the tracepoint calls it was in (Linux:
/// `tracepoint_synchronize_unregister`, `synchronize_rcu`): after it, no
/// probe runs with a list or data that was replaced before the call. The
/// caller is not in a tracepoint call, so its own CPU counts as quiescent.
pub fn tracepoint_synchronize_unregister() {
    crate::rcu::synchronize_sched();
}
