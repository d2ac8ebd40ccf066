//! The worst-case trace of the latency tracers (Linux: kernel/trace/trace.c
//! under `CONFIG_TRACER_MAX_TRACE`: `tr->max_latency`, `tracing_thresh`,
//! `update_max_tr`, `update_max_tr_single`, `__update_max_tr`, the
//! `tracing_max_latency` and `tracing_thresh` files).
//!
//! A latency tracer (irqsoff, wakeup...) is a tracer with `use_max_tr`:
//! selecting it gives the trace array its spare buffer at the live size
//! (`snapshot::tracing_alloc_snapshot_instance`), leaving it frees the
//! spare. When the tracer measures a latency that
//! `tracer::max_latency::report_latency` accepts, it stores it with
//! [`set_max_latency`] and calls [`update_max_tr`] (every CPU's pages
//! swapped with the spare's) or [`update_max_tr_single`] (one CPU's): the
//! events that led to the latency go to the spare buffer, where they stay
//! until a worse one comes, and tracing goes on in the pages swapped in.
//! The [`MaxData`] saved with the swap (latency, CPU, task, where the
//! section began and ended, when it began) heads the `trace` file.
//!
//! The tracers also have `print_max`: `trace` then shows the spare buffer
//! from the section's start on (`trace::print_trace`), not the live one.
//!
//! The swap runs in the tracer's probe, with interrupts off: it takes no
//! lock that it would wait for (the snapshot and resize locks are tried;
//! when a reader or a resize holds them, this maximum's trace is not
//! kept, as Linux keeps none while `pause-on-trace` stops tracing), and
//! the writers still in the swapped-out pages are waited for by the next
//! reader of the spare (`snapshot::settle`).
//!
//! Files: `tracing_max_latency` in every trace array (µs; writing a number
//! sets the maximum, so `echo 0` resets it) and `tracing_thresh` at the top
//! (µs; with a threshold, every latency above it is recorded instead of
//! only a new maximum; function_graph also uses it as its duration
//! threshold).

use core::sync::atomic::{AtomicU64, Ordering};

use alloc::sync::Arc;
use tracer::max_latency::{nsecs_show, nsecs_write, MaxCause, MaxData};

use super::trace::TraceArray;
use super::{control, snapshot};
use crate::fs::tracefs::{self, Dentry, TRACE_MODE_WRITE};
use crate::fs::Errno;
use crate::hook::Hook;

/// `tracing_thresh` in ns (Linux keeps it in ns and shows µs). Global,
/// as in Linux.
static TRACING_THRESH: AtomicU64 = AtomicU64::new(0);

/// Called after `tracing_thresh` is written (Linux: the current tracer's
/// `update_thresh`): function_graph registers here to re-check its
/// filters.
pub static THRESH_UPDATED: Hook<fn()> = Hook::new();

/// `tracing_thresh` in ns (0: none).
#[inline]
pub fn tracing_thresh() -> u64 {
    TRACING_THRESH.load(Ordering::Relaxed)
}

/// The array's worst latency so far, in ns (`tr->max_latency`).
#[inline]
pub fn max_latency(tr: &TraceArray) -> u64 {
    tr.snapshot.max_latency.load(Ordering::Relaxed)
}

/// Stores a new worst latency (ns): a tracer calls it before
/// [`update_max_tr`], and when it starts (Linux sets `tr->max_latency = 0`
/// in the tracers' init).
#[inline]
pub fn set_max_latency(tr: &TraceArray, ns: u64) {
    tr.snapshot.max_latency.store(ns, Ordering::Relaxed);
}

/// Why [`update_max_tr`] kept no trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxTrFail {
    /// Tracing is stopped (Linux: `tr->stop_count`), e.g. while `trace`
    /// is open with `pause-on-trace`.
    Stopped,
    /// No spare buffer: the current tracer does not use one.
    NotAllocated,
    /// A reader of the spare, a resize or another swap is in progress, or
    /// the buffers' sizes differ.
    Busy,
}

/// Swaps the live buffer of `cpus` with the spare, with the snapshot and
/// resize locks tried, and saves the data of this maximum.
fn swap_max(
    tr: &TraceArray,
    cpus: core::ops::Range<usize>,
    cpu: usize,
    cause: &MaxCause,
) -> Result<(), MaxTrFail> {
    if super::trace::tracing_is_stopped(tr) {
        return Err(MaxTrFail::Stopped);
    }
    if !tr.snapshot.allocated() {
        return Err(MaxTrFail::NotAllocated);
    }
    let guard = snapshot::try_lock_swap(tr).ok_or(MaxTrFail::Busy)?;
    let swapped = cpus.clone().all(|c| {
        // SAFETY: as for the snapshot trigger (snapshot::swap_in_probe):
        // both buffers live as long as `tr`, and the swapped-out pages are
        // read, cleared or resized only under the snapshot lock, after the
        // grace period that `guard` arranges when it is dropped.
        unsafe { guard.swap_cpu(c) }
    });
    // The CPUs that swapped did; the data goes with them even if one
    // failed (Linux saves it whatever `ring_buffer_swap_cpu` returned).
    guard.save_max_data(MaxData::new(max_latency(tr), cpu, *cause));
    drop(guard);
    if swapped {
        Ok(())
    } else {
        Err(MaxTrFail::Busy)
    }
}

/// Keeps the trace of a new worst case (Linux: `update_max_tr`): every
/// CPU's live pages are swapped with the spare's, and `cause` (the task,
/// where and when the latency began and ended) is saved with
/// [`max_latency`] for the header. Called by a latency tracer with
/// interrupts off, after [`set_max_latency`]; `cpu` is the CPU that had
/// the latency. Never waits.
pub fn update_max_tr(tr: &TraceArray, cpu: usize, cause: &MaxCause) -> Result<(), MaxTrFail> {
    swap_max(tr, 0..tr.nr_cpus, cpu, cause)
}

/// As [`update_max_tr`] for `cpu`'s pages only (Linux:
/// `update_max_tr_single`, the irqsoff family's: the latency was on one
/// CPU). The other CPUs' pages in the spare keep older events, which the
/// printer skips (they are older than the section's start).
pub fn update_max_tr_single(
    tr: &TraceArray,
    cpu: usize,
    cause: &MaxCause,
) -> Result<(), MaxTrFail> {
    swap_max(tr, cpu..cpu + 1, cpu, cause)
}

/// `tracing_max_latency` of `tr` in `dir` (Linux: `trace_create_maxlat_file`).
pub fn init_tr(tr: &Arc<TraceArray>, dir: &Dentry) -> Result<(), Errno> {
    let (t1, t2) = (tr.clone(), tr.clone());
    tracefs::create_show_store(
        dir,
        "tracing_max_latency",
        TRACE_MODE_WRITE,
        move || nsecs_show(max_latency(&t1)),
        Some(move |text: &str| {
            set_max_latency(&t2, nsecs_write(text.as_bytes())?);
            Ok(())
        }),
    )?;
    Ok(())
}

/// `tracing_thresh` (top level only, as in Linux).
pub fn init(root: &Dentry) -> Result<(), Errno> {
    tracefs::create_show_store(
        root,
        "tracing_thresh",
        TRACE_MODE_WRITE,
        || nsecs_show(tracing_thresh()),
        Some(|text: &str| {
            let ns = nsecs_write(text.as_bytes())?;
            let _guard = control::TRACE_TYPES_LOCK.lock();
            TRACING_THRESH.store(ns, Ordering::SeqCst);
            for probe in THRESH_UPDATED.probes() {
                probe();
            }
            Ok(())
        }),
    )?;
    Ok(())
}
