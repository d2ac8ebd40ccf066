//! Tracepoints: static hooks in the scheduler, the interrupt path and the
//! allocator that cost one static branch while nobody listens (Linux:
//! kernel/tracepoint.c, include/linux/tracepoint.h).
//!
//! A [`Tracepoint`] is a static key plus a pointer to an immutable array of
//! probes, (function, data) pairs. The call site `trace_NAME(args)` (made by
//! `define_tracepoints!` in `events`) is `if static_branch_unlikely!(KEY)
//! { call every probe }`; the key is on exactly while the array is not
//! empty (on at the first probe, off after the last).
//!
//! Registering or unregistering never edits the array a CPU may be walking
//! (the list logic is `tracer::tracepoint`, host-tested). It builds a new
//! array, publishes it with one pointer store, waits until no CPU can still
//! be walking the old one, then frees it. Linux waits for an RCU grace
//! period: a tracepoint call runs with preemption off, so once every CPU
//! has been through a point outside such a section, nobody holds the old
//! pointer. Here each CPU keeps one word: its nesting depth in tracepoint
//! calls (an interrupt can fire a tracepoint inside a probe) and, above it,
//! how many times the depth went back to 0. A call adds 1 with a locked
//! instruction (a full barrier: the store is visible before the pointer is
//! read) and, at its end, subtracts 1 and moves the count on if it reached
//! 0. The writer reads every CPU's word after publishing and waits, per CPU,
//! until the depth is 0 or the count has moved ([`tracepoint_synchronize_unregister`]).
//! Probes run with preemption off and must not sleep; registering from a
//! probe is not allowed (the writer would wait for itself).
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use spin::Mutex;
use tracer::tracepoint::TracepointFunc;
pub use tracer::tracepoint::TRACEPOINT_DEFAULT_PRIO;
use tracer::tracepoint::{func_add, func_remove, key_change, quiescent, KeyChange, TpSeq};

use crate::arch::percpu;
use crate::fs::Errno;
use crate::jump_label::{static_key_disable, static_key_enable, StaticKey};

/// Serializes every probe-list change (Linux: `tracepoints_mutex`).
static TRACEPOINTS_MUTEX: Mutex<()> = Mutex::new(());

/// Each CPU's tracepoint word (see the module doc and `tracer::tracepoint::TpSeq`).
static TP_SEQ: [AtomicU64; percpu::MAX_CPUS] = [const { AtomicU64::new(0) }; percpu::MAX_CPUS];

/// The published probes of one tracepoint.
struct Funcs<F> {
    list: Vec<TracepointFunc<F>>,
}

/// One tracepoint (Linux: `struct tracepoint`). `F` is the probe's function
/// type, `fn(*mut (), args..)`: the first argument is the probe's data.
pub struct Tracepoint<F: Copy + PartialEq + 'static> {
    pub name: &'static str,
    key: &'static StaticKey,
    funcs: AtomicPtr<Funcs<F>>,
}

impl<F: Copy + PartialEq + 'static> Tracepoint<F> {
    /// A tracepoint with no probes whose call sites test `key`.
    pub const fn new(name: &'static str, key: &'static StaticKey) -> Tracepoint<F> {
        Tracepoint {
            name,
            key,
            funcs: AtomicPtr::new(core::ptr::null_mut()),
        }
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
        let new = if list.is_empty() {
            core::ptr::null_mut()
        } else {
            Box::into_raw(Box::new(Funcs { list }))
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

    /// Calls every probe through `call(func, data)` (Linux: `__DO_TRACE`
    /// and `__traceiter_NAME`), with preemption off and this CPU counted as
    /// inside a tracepoint call. The call site tests the key first.
    #[inline(always)]
    pub fn do_trace(&self, mut call: impl FnMut(F, *mut ())) {
        let cpu = tp_enter();
        let p = self.funcs.load(Ordering::Acquire);
        // SAFETY: the list at `p` is freed only after every CPU has left
        // the tracepoint call it was in when `p` was replaced, and this CPU
        // is counted as inside one (tp_enter) until tp_exit.
        if let Some(funcs) = unsafe { p.as_ref() } {
            for f in &funcs.list {
                call(f.func, f.data as *mut ());
            }
        }
        tp_exit(cpu);
    }
}

fn free<F>(p: *mut Funcs<F>) {
    if !p.is_null() {
        // SAFETY: `p` came from Box::into_raw in `update` and, unpublished
        // and past quiescence, nobody else refers to it.
        drop(unsafe { Box::from_raw(p) });
    }
}

/// Enters a tracepoint call: preemption off, this CPU's depth + 1 with a
/// full barrier (before the probe list is read). Returns the CPU.
#[inline(always)]
fn tp_enter() -> usize {
    percpu::this_cpu_preempt_inc();
    let cpu = percpu::cpu_id();
    TP_SEQ[cpu].fetch_add(1, Ordering::SeqCst);
    cpu
}

/// Leaves a tracepoint call: depth - 1 (after the list was last read), and
/// the count of returns to 0 moves on when the depth reaches 0.
#[inline(always)]
fn tp_exit(cpu: usize) {
    let old = TP_SEQ[cpu].fetch_sub(1, Ordering::Release);
    if TpSeq::depth(old) == 1 {
        TP_SEQ[cpu].fetch_add(TpSeq::GEN_ONE, Ordering::Release);
    }
    percpu::this_cpu_preempt_dec();
}

/// Waits until every CPU has left the tracepoint calls it was in (Linux:
/// `tracepoint_synchronize_unregister`): after it, no probe runs with a
/// list or data that was replaced before the call.
pub fn tracepoint_synchronize_unregister() {
    core::sync::atomic::fence(Ordering::SeqCst);
    let n = percpu::nr_cpus();
    let mut then = [0u64; percpu::MAX_CPUS];
    for (cpu, t) in then.iter_mut().enumerate().take(n) {
        *t = TP_SEQ[cpu].load(Ordering::SeqCst);
    }
    for (cpu, &t) in then.iter().enumerate().take(n) {
        while !quiescent(t, TP_SEQ[cpu].load(Ordering::Acquire)) {
            core::hint::spin_loop();
        }
    }
}
