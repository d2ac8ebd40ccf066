//! The `snapshot` files of a trace array (Linux: kernel/trace/trace.c,
//! `tracing_snapshot_write`, `tracing_alloc_snapshot_instance`,
//! `free_snapshot`, `update_max_tr`, `update_max_tr_single`).
//!
//! Every trace array has a spare buffer, `tr.max_buffer`, kept at the
//! minimum (2 pages per CPU) until it is used. `echo 1 > snapshot` grows it
//! to the live buffer's size and swaps the two, CPU by CPU
//! (`RingBuffer::swap_cpu`: two pointer stores; no event is copied), so the
//! events so far become the snapshot and tracing goes on in the spare's
//! empty pages. A writer that found a CPU's pages just before the swap
//! finishes its event there, in what is now the snapshot: writers run with
//! preemption off, so after an RCU-sched grace period
//! (`crate::rcu::synchronize_sched`) none is left, and only then is the
//! snapshot read, cleared or shrunk. Every event is thus in exactly one of
//! the two buffers. `tracing_on` and the overwrite mode belong to a buffer,
//! not to its CPUs' pages, so they stay as they were.
//!
//! - `snapshot`: reads as `trace` does, for the spare buffer; when it holds
//!   nothing, the `# tracer:` lines are followed by Linux's help text. A
//!   write is parsed by `tracer::snapshot::parse_snapshot_write`: `0`
//!   clears the spare and shrinks it back to the minimum, `1` allocates it
//!   if needed and swaps, any other number clears it (if allocated); `-1`
//!   or text is EINVAL and nothing changes.
//! - `per_cpu/cpuN/snapshot`: the same for one CPU (`1` swaps that CPU's
//!   pages only, as Linux with `CONFIG_RING_BUFFER_ALLOW_SWAP`; `0` is
//!   EINVAL).
//!
//! Snapshot writes and reads of one trace array are serialised by its
//! snapshot lock, so a reader never sees a swap half done. The spare is
//! grown with the same heap check as `buffer_size_kb` (ENOMEM, nothing
//! changed, when the heap cannot hold it).

use alloc::boxed::Box;
use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use spin::Mutex;
use tracer::max_latency::MaxData;
use tracer::output::header::SnapshotHelp;
use tracer::output::TraceSeq;
use tracer::ring_buffer::{Cpus, RingBufferError};
use tracer::snapshot::{parse_snapshot_write, SnapshotCmd};

use super::trace::{self, TraceArray};
use super::{buffer_files, control};
use crate::fs::tracefs::{self, Dentry, SeqFile, TRACE_MODE_WRITE};
use crate::fs::{Errno, OpenFile, OpenFlags};

/// The snapshot state of a trace array (`tr.snapshot`).
#[derive(Default)]
pub struct TrSnapshot {
    /// The spare buffer has the live buffer's size (Linux:
    /// `tr->allocated_snapshot`).
    allocated: AtomicBool,
    /// Serialises the snapshot files' writes and reads.
    lock: Mutex<()>,
    /// A `snapshot` trigger swapped the buffers from a probe, which cannot
    /// wait for the writers still in the swapped-out pages: the next user
    /// of the spare waits a grace period first ([`settle`]).
    swapped_in_probe: AtomicBool,
    /// The worst latency of the array's latency tracer, in ns (Linux:
    /// `tr->max_latency`; see `super::max_trace`).
    pub max_latency: AtomicU64,
    /// What was saved with the worst case's swap (Linux: the max
    /// buffer's `trace_array_cpu`): written under the snapshot lock by the
    /// swap ([`SwapGuard::save_max_data`]), read under it by the printer
    /// ([`with_spare`]).
    max_data: Mutex<MaxData>,
}

impl TrSnapshot {
    /// True once `echo 1 > snapshot` allocated the spare, until `echo 0`.
    pub fn allocated(&self) -> bool {
        self.allocated.load(Ordering::Acquire)
    }
}

/// Grows the spare buffer of the CPUs in `cpus` to the live buffer's sizes
/// (Linux: `resize_buffer_duplicate_size`), under the resize lock the
/// caller holds until it has swapped.
fn match_sizes(
    tr: &TraceArray,
    locked: &spin::MutexGuard<'static, ()>,
    cpus: &[usize],
) -> Result<(), Errno> {
    let live = |c: usize| tr.buffer.size_per_cpu(c);
    let differ: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|&c| tr.max_buffer.nr_pages(c) != tr.buffer.nr_pages(c))
        .collect();
    if differ.is_empty() {
        return Ok(());
    }
    // The usual case, every CPU to one size: one resize, whose heap check
    // covers all the CPUs at once.
    if cpus.len() == tr.nr_cpus && (0..tr.nr_cpus).all(|c| live(c) == live(0)) {
        return buffer_files::resize_ring_buffer(
            locked,
            &tr.max_buffer,
            tr.nr_cpus,
            live(0),
            Cpus::All,
        );
    }
    for c in differ {
        buffer_files::resize_ring_buffer(
            locked,
            &tr.max_buffer,
            tr.nr_cpus,
            live(c),
            Cpus::One(c),
        )?;
    }
    Ok(())
}

/// `echo 1 > snapshot` (`cpu` None) or `> per_cpu/cpuN/snapshot`: allocate
/// the spare if needed, swap, wait for the writers that may still be in the
/// swapped-out pages. The caller holds the snapshot lock.
fn take_snapshot(tr: &TraceArray, cpu: Option<usize>) -> Result<(), Errno> {
    let all: Vec<usize> = (0..tr.nr_cpus).collect();
    let cpus: Vec<usize> = cpu.map_or_else(|| all.clone(), |c| alloc::vec![c]);
    let locked = buffer_files::lock_resizes();
    if tr.snapshot.allocated() {
        match_sizes(tr, &locked, &cpus)?;
    } else {
        // Linux allocates every CPU's spare, even from a per-CPU file.
        if let Err(e) = match_sizes(tr, &locked, &all) {
            // Give back what a partial allocation took.
            let _ =
                buffer_files::resize_ring_buffer(&locked, &tr.max_buffer, tr.nr_cpus, 0, Cpus::All);
            return Err(e);
        }
        tr.snapshot.allocated.store(true, Ordering::Release);
    }
    // The sizes were matched under the resize lock we hold, so no CPU can
    // fail (a bad CPU or a size mismatch); were one to, the error is
    // reported rather than swallowed, after the grace period.
    let result = cpus.iter().try_for_each(|&c| {
        // SAFETY: both buffers are fields of `tr`, freed together when the
        // array goes, after a grace period and after every file (reader)
        // of it is closed, so every reference into them obtained before
        // the swap is gone by then. The swapped-out pages are read,
        // cleared or resized only under the snapshot lock, which we hold
        // until the grace period below has passed.
        unsafe { tr.buffer.swap_cpu(&tr.max_buffer, c) }.map_err(|e| match e {
            RingBufferError::Alloc => Errno::ENOMEM,
            RingBufferError::Busy => Errno::EBUSY,
            RingBufferError::InvalidCpu | RingBufferError::SizeMismatch => Errno::EINVAL,
        })
    });
    drop(locked);
    crate::rcu::synchronize_sched();
    result
}

/// `echo 0 > snapshot` (Linux: `free_snapshot`): clear the spare and shrink
/// it to the minimum. The caller holds the snapshot lock.
fn free_snapshot(tr: &TraceArray) -> Result<(), Errno> {
    if !tr.snapshot.allocated() {
        return Ok(());
    }
    let locked = buffer_files::lock_resizes();
    tr.max_buffer.reset();
    // Size 0 gives the minimum, 2 pages per CPU.
    buffer_files::resize_ring_buffer(&locked, &tr.max_buffer, tr.nr_cpus, 0, Cpus::All)?;
    tr.snapshot.allocated.store(false, Ordering::Release);
    Ok(())
}

/// After a swap by a trigger, waits for the writers that may still be in
/// the swapped-out pages. The caller holds the snapshot lock.
fn settle(tr: &TraceArray) {
    if tr.snapshot.swapped_in_probe.swap(false, Ordering::AcqRel) {
        crate::rcu::synchronize_sched();
    }
}

/// Gives `tr` its spare buffer at the live buffer's size, if it has none
/// (Linux: `tracing_alloc_snapshot_instance`, run when a `snapshot`
/// trigger is set).
pub fn tracing_alloc_snapshot_instance(tr: &TraceArray) -> Result<(), Errno> {
    let _guard = tr.snapshot.lock.lock();
    if tr.snapshot.allocated() {
        return Ok(());
    }
    let all: Vec<usize> = (0..tr.nr_cpus).collect();
    let locked = buffer_files::lock_resizes();
    if let Err(e) = match_sizes(tr, &locked, &all) {
        let _ = buffer_files::resize_ring_buffer(&locked, &tr.max_buffer, tr.nr_cpus, 0, Cpus::All);
        return Err(e);
    }
    tr.snapshot.allocated.store(true, Ordering::Release);
    Ok(())
}

/// Frees `tr`'s spare buffer when a tracer that used it (`use_max_tr`)
/// is replaced by one that does not (Linux: `free_snapshot` in
/// `tracing_set_tracer`). The tracer's probes are gone and the caller
/// waited for a grace period, so no swap is in flight.
pub fn tracing_free_snapshot_instance(tr: &TraceArray) -> Result<(), Errno> {
    let _guard = tr.snapshot.lock.lock();
    settle(tr);
    free_snapshot(tr)
}

/// Why [`tracing_snapshot_instance`] did not swap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotFail {
    /// No spare buffer (`echo 0 > snapshot` freed it).
    NotAllocated,
    /// A latency tracer (`use_max_tr`) owns the spare buffer.
    LatencyTracer,
    /// A snapshot file, a resize or another swap is in progress, or the
    /// live buffer was resized since the spare was allocated.
    Busy,
}

/// The locks held by a swap made from a probe ([`try_lock_swap`]): the
/// array's snapshot lock and the resize lock. Dropping it tells the next
/// user of the spare to wait for a grace period first ([`settle`]).
pub(crate) struct SwapGuard<'a> {
    tr: &'a TraceArray,
    _snapshot: spin::MutexGuard<'a, ()>,
    _resize: spin::MutexGuard<'static, ()>,
}

impl SwapGuard<'_> {
    /// Swaps `cpu`'s pages of the live and spare buffers; false if that
    /// failed (nothing changed).
    ///
    /// # Safety
    /// As `RingBuffer::swap_cpu`: both buffers are fields of the array,
    /// freed together with it; the swapped-out pages are read, cleared or
    /// resized only under the snapshot lock, after `settle` has waited for
    /// the grace period this guard asks for when dropped.
    pub(crate) unsafe fn swap_cpu(&self, cpu: usize) -> bool {
        // SAFETY: the caller's contract, above.
        unsafe { self.tr.buffer.swap_cpu(&self.tr.max_buffer, cpu) }.is_ok()
    }

    /// Saves the data of the worst case that was just swapped in (Linux:
    /// `__update_max_tr`).
    pub(crate) fn save_max_data(&self, data: MaxData) {
        // Only ever locked under the snapshot lock, which we hold.
        if let Some(mut d) = self.tr.snapshot.max_data.try_lock() {
            *d = data;
        }
    }
}

impl Drop for SwapGuard<'_> {
    fn drop(&mut self) {
        self.tr
            .snapshot
            .swapped_in_probe
            .store(true, Ordering::Release);
    }
}

/// Takes the locks a swap from a probe needs without waiting (a probe
/// cannot wait): None if the snapshot files, a resize or another swap hold
/// them, or if the live buffer was resized since the spare was allocated.
pub(crate) fn try_lock_swap(tr: &TraceArray) -> Option<SwapGuard<'_>> {
    let snapshot = tr.snapshot.lock.try_lock()?;
    let resize = buffer_files::try_lock_resizes()?;
    if (0..tr.nr_cpus).any(|c| tr.max_buffer.nr_pages(c) != tr.buffer.nr_pages(c)) {
        return None;
    }
    Some(SwapGuard {
        tr,
        _snapshot: snapshot,
        _resize: resize,
    })
}

/// Runs `f` under the snapshot lock, after the grace period a swap from a
/// probe may have left to wait for, with the data saved with the last
/// worst case: what reads or clears the spare buffer outside this file
/// (`trace` under a `print_max` tracer) goes through it.
pub(crate) fn with_spare<R>(tr: &TraceArray, f: impl FnOnce(&MaxData) -> R) -> R {
    let _guard = tr.snapshot.lock.lock();
    settle(tr);
    let data = *tr.snapshot.max_data.lock();
    f(&data)
}

/// Swaps `tr`'s live and spare buffers from a probe (Linux:
/// `tracing_snapshot_instance`, for the `snapshot` trigger): no lock is
/// waited for and nothing is allocated; if the snapshot files or a resize
/// hold their locks, or the sizes no longer match, nothing happens. The
/// grace period the swap needs is left to the next reader ([`settle`]).
pub fn tracing_snapshot_instance(tr: &TraceArray) -> Result<(), SnapshotFail> {
    if !tr.snapshot.allocated() {
        return Err(SnapshotFail::NotAllocated);
    }
    if tr.current_tracer().use_max_tr {
        return Err(SnapshotFail::LatencyTracer);
    }
    let guard = try_lock_swap(tr).ok_or(SnapshotFail::Busy)?;
    for c in 0..tr.nr_cpus {
        // SAFETY: see SwapGuard::swap_cpu; the sizes were checked under
        // the resize lock the guard holds.
        let _ = unsafe { guard.swap_cpu(c) };
    }
    Ok(())
}

/// A write to `snapshot` (`cpu` None) or `per_cpu/cpuN/snapshot` (Linux:
/// `tracing_snapshot_write`).
fn snapshot_write(tr: &TraceArray, cpu: Option<usize>, text: &[u8]) -> Result<(), Errno> {
    let cmd = parse_snapshot_write(text, cpu.is_some())?;
    // A latency tracer owns the spare buffer (Linux: EBUSY with
    // `use_max_tr`).
    if tr.current_tracer().use_max_tr {
        return Err(Errno::EBUSY);
    }
    let _guard = tr.snapshot.lock.lock();
    settle(tr);
    match cmd {
        SnapshotCmd::Free => free_snapshot(tr),
        SnapshotCmd::Swap => take_snapshot(tr, cpu),
        SnapshotCmd::Clear => {
            if tr.snapshot.allocated() {
                match cpu {
                    None => tr.max_buffer.reset(),
                    Some(c) => tr.max_buffer.reset_cpu(c).map_err(|_| Errno::EINVAL)?,
                }
            }
            Ok(())
        }
    }
}

/// The text of `snapshot` or `per_cpu/cpuN/snapshot`.
fn snapshot_show(tr: &TraceArray, cpu: Option<usize>) -> Vec<u8> {
    let _guard = tr.snapshot.lock.lock();
    settle(tr);
    let help = SnapshotHelp {
        allocated: tr.snapshot.allocated(),
        per_cpu: cpu.is_some(),
    };
    let mut text = TraceSeq::new();
    trace::print_snapshot(tr, tr.current_tracer(), cpu, help, &mut text);
    text.into_bytes()
}

/// A `snapshot` file opened while a latency tracer (`use_max_tr`) owns
/// the spare buffer: reads are EBUSY, as Linux's `s_start`, and so are
/// writes.
struct SnapshotBusy;

impl OpenFile for SnapshotBusy {
    fn read(&mut self, _buf: &mut [u8]) -> Result<usize, Errno> {
        Err(Errno::EBUSY)
    }
    fn write(&mut self, _buf: &[u8]) -> Result<usize, Errno> {
        Err(Errno::EBUSY)
    }
}

/// Opening a `snapshot` file: the text when opened for reading, and
/// writes carried out as they come. `O_TRUNC` clears nothing (Linux).
fn snapshot_open(
    tr: &Arc<TraceArray>,
    cpu: Option<usize>,
    flags: OpenFlags,
) -> Result<Box<dyn OpenFile>, Errno> {
    if flags.readable() && tr.current_tracer().use_max_tr {
        return Ok(Box::new(SnapshotBusy));
    }
    let text = if flags.readable() {
        snapshot_show(tr, cpu)
    } else {
        Vec::new()
    };
    let t = tr.clone();
    Ok(Box::new(SeqFile::new(text).with_write(move |buf| {
        snapshot_write(&t, cpu, buf)?;
        Ok(buf.len())
    })))
}

/// Creates `snapshot` and `per_cpu/cpuN/snapshot` of `tr` in `dir`.
pub fn init_tr(tr: &Arc<TraceArray>, dir: &Dentry) -> Result<(), Errno> {
    let t = tr.clone();
    tracefs::create_file(dir, "snapshot", TRACE_MODE_WRITE, move |f: OpenFlags| {
        snapshot_open(&t, None, f)
    })?;
    let per_cpu = tracefs::get_or_create_dir(dir, "per_cpu")?;
    for cpu in 0..tr.nr_cpus {
        let d = tracefs::get_or_create_dir(&per_cpu, &format!("cpu{cpu}"))?;
        let t = tr.clone();
        tracefs::create_file(&d, "snapshot", TRACE_MODE_WRITE, move |f: OpenFlags| {
            snapshot_open(&t, Some(cpu), f)
        })?;
    }
    Ok(())
}

/// The README lines (top level).
pub fn init() -> Result<(), Errno> {
    control::readme_add(
        "\n  snapshot\t\t- Like 'trace' but shows the content of the static\n\
         \t\t\t  snapshot buffer. Read the contents for more\n\
         \t\t\t  information\n",
    );
    Ok(())
}
