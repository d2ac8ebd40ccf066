//! The ring buffer's tracefs files (Linux: kernel/trace/trace.c,
//! `tracing_entries_fops`, `tracing_total_entries_fops`,
//! `tracing_free_buffer_fops`, `trace_clock_fops`, `tracing_mark_fops`,
//! `tracing_saved_cmdlines_size_fops`, and the `per_cpu/cpuN/` files of
//! `tracing_init_tracefs_percpu`).
//!
//! - `buffer_size_kb`: the size of *each* CPU's buffer in KiB, read back as
//!   Linux does from `ring_buffer_size` (pages × 4080 bytes, so the default
//!   1408 KiB reads `1410`; `X` if CPUs differ). A write (kstrtoul KiB)
//!   resizes every CPU while tracing goes on: 0 or junk is EINVAL, a size the
//!   heap cannot hold is ENOMEM and nothing changes. The KiB to bytes and
//!   bytes to pages sums wrap in 64 bits as Linux's do, so a number near
//!   2^54 KiB or above asks for the 2-page minimum (7 KiB). The boot buffer is
//!   allocated at full size, so the `(expanded: N)` form never shows.
//! - `buffer_total_size_kb`: the sum over CPUs.
//! - `free_buffer`: closing it shrinks the buffer to its minimum (2 pages per
//!   CPU), turning tracing off first if `disable_on_free` is set.
//! - `trace_clock`: the clocks, current one in brackets; a write selects one
//!   (EINVAL if unknown) and clears the buffer.
//! - `trace_marker`: each write becomes a TRACE_PRINT event
//!   `tracing_mark_write: <text>` (see [`tracing_mark_write`]).
//! - `saved_cmdlines_size`: how many pid -> comm pairs are kept.
//! - `per_cpu/cpuN/{trace, trace_pipe, stats, buffer_size_kb}`: the same for
//!   one CPU (`trace_pipe_raw` is made by `export`).
//!
//! The `ringbuf` shell command (kernel/src/shell/ringbuf.rs) drives these
//! files from several CPUs for the QEMU tests.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;

use spin::{Mutex, MutexGuard};
use tracer::entry::{PrintEntry, TRACE_PRINT};
use tracer::options::TraceOption;
use tracer::ring_buffer::{
    nr_pages_for, Cpus, RingBuffer, RingBufferError, BUF_MAX_DATA_SIZE, PAGE_SIZE,
};

use super::control;
use super::trace::{self, TraceArray};
use crate::fs::tracefs::{self, Dentry, SeqFile, TRACE_MODE_READ, TRACE_MODE_WRITE};
use crate::fs::{Errno, OpenFile, OpenFlags};

/// Heap kept free by a resize, so the rest of the kernel can still allocate.
const RESIZE_HEAP_RESERVE: usize = 4 << 20;
/// Linux's `trace_clock` write buffer (`char buf[64]`).
const CLOCK_NAME_MAX: usize = 64;

/// Serialises resizes, so that a failed one can put back the sizes it saw
/// (Linux's `trace_types_lock` around `tracing_resize_ring_buffer`).
static RESIZE_LOCK: Mutex<()> = Mutex::new(());

/// Holds off every other resize while the guard lives (the snapshot keeps
/// the sizes it matched until it has swapped the buffers).
pub(crate) fn lock_resizes() -> MutexGuard<'static, ()> {
    RESIZE_LOCK.lock()
}

/// [`lock_resizes`] for a probe, which cannot wait: None if a resize (or a
/// snapshot) holds the lock.
pub(crate) fn try_lock_resizes() -> Option<MutexGuard<'static, ()>> {
    RESIZE_LOCK.try_lock()
}

/// Whether `pages` new ring-buffer pages fit in the free heap with
/// [`RESIZE_HEAP_RESERVE`] to spare (ENOMEM if not): the check Linux makes
/// with `si_mem_available()` before it allocates a buffer.
pub(crate) fn heap_fits_pages(pages: usize) -> Result<(), Errno> {
    // Each page is a 4 KiB data page plus its bookkeeping.
    let need = pages.saturating_mul(PAGE_SIZE + 128);
    let (_, free) = crate::mm::heap::usage();
    if need.saturating_add(RESIZE_HEAP_RESERVE) > free {
        return Err(Errno::ENOMEM);
    }
    Ok(())
}

/// Resizes the buffer of `cpus` to `size` bytes per CPU (Linux:
/// `tracing_resize_ring_buffer` -> `ring_buffer_resize`). As Linux checks
/// `si_mem_available()` before allocating, a size whose new pages do not fit
/// in the free heap is ENOMEM before anything changes. If one CPU still
/// fails (fragmented heap, or `Busy` while `trace` is being read), the CPUs
/// already resized get their old size back.
pub fn tracing_resize_ring_buffer(tr: &TraceArray, size: usize, cpus: Cpus) -> Result<(), Errno> {
    let locked = lock_resizes();
    resize_ring_buffer(&locked, &tr.buffer, tr.nr_cpus, size, cpus)
}

/// [`tracing_resize_ring_buffer`] of any buffer of a trace array with
/// `nr_cpus` CPUs (the live one, or the snapshot's spare), under
/// [`lock_resizes`].
pub(crate) fn resize_ring_buffer(
    _locked: &MutexGuard<'static, ()>,
    buffer: &RingBuffer,
    nr_cpus: usize,
    size: usize,
    cpus: Cpus,
) -> Result<(), Errno> {
    let targets: Vec<usize> = match cpus {
        Cpus::All => (0..nr_cpus).collect(),
        Cpus::One(c) if c < nr_cpus => alloc::vec![c],
        Cpus::One(_) => return Err(Errno::EINVAL),
    };
    let new_pages = nr_pages_for(size);
    heap_fits_pages(
        targets
            .iter()
            .map(|&c| new_pages.saturating_sub(buffer.nr_pages(c)))
            .fold(0usize, |a, n| a.saturating_add(n)),
    )?;
    let old: Vec<usize> = targets.iter().map(|&c| buffer.size_per_cpu(c)).collect();
    for (i, &c) in targets.iter().enumerate() {
        if let Err(e) = buffer.resize(Cpus::One(c), size) {
            for (&d, &was) in targets[..i].iter().zip(&old) {
                let _ = buffer.resize(Cpus::One(d), was);
            }
            return Err(match e {
                RingBufferError::Alloc => Errno::ENOMEM,
                RingBufferError::Busy => Errno::EBUSY,
                RingBufferError::InvalidCpu | RingBufferError::SizeMismatch => Errno::EINVAL,
            });
        }
    }
    Ok(())
}

/// `buffer_size_kb` (Linux: `tracing_entries_read`).
fn buffer_size_show(tr: &TraceArray, cpu: Option<usize>) -> String {
    match cpu {
        Some(c) => format!("{}\n", tr.buffer.size_per_cpu(c) >> 10),
        None => {
            let size = tr.buffer.size_per_cpu(0);
            if (1..tr.nr_cpus).all(|c| tr.buffer.size_per_cpu(c) == size) {
                format!("{}\n", size >> 10)
            } else {
                String::from("X\n")
            }
        }
    }
}

/// A write to `buffer_size_kb` (Linux: `tracing_entries_write`).
fn buffer_size_store(tr: &TraceArray, cpu: Option<usize>, text: &str) -> Result<(), Errno> {
    let kb = tracefs::parse_ulong(text)?;
    // Linux: "must have at least 1 entry".
    if kb == 0 {
        return Err(Errno::EINVAL);
    }
    // "value is in KB": `val <<= 10` in an unsigned long, whose top bits
    // are lost. Linux 6.1 takes 18446744073709551615 (KiB) as a byte count
    // of 2^64 - 1024, which `DIV_ROUND_UP` wraps to the 2-page minimum.
    let size = (kb << 10) as usize;
    let cpus = cpu.map_or(Cpus::All, Cpus::One);
    tracing_resize_ring_buffer(tr, size, cpus)
}

/// `buffer_total_size_kb` (Linux: `tracing_total_entries_read`).
fn buffer_total_show(tr: &TraceArray) -> String {
    let total: usize = (0..tr.nr_cpus)
        .map(|c| tr.buffer.size_per_cpu(c) >> 10)
        .sum();
    format!("{total}\n")
}

/// `trace_clock` (Linux: `tracing_clock_show`).
fn trace_clock_show(tr: &TraceArray) -> String {
    let cur = tr.trace_clock_index();
    let mut out = String::new();
    for (i, name) in trace::TRACE_CLOCKS.iter().enumerate() {
        if i != 0 {
            out.push(' ');
        }
        if i == cur {
            let _ = write!(out, "[{name}]");
        } else {
            out.push_str(name);
        }
    }
    out.push('\n');
    out
}

/// A write to `trace_clock` (Linux: `tracing_clock_write`): at most 63
/// bytes, surrounding whitespace stripped.
fn trace_clock_store(tr: &TraceArray, text: &str) -> Result<(), Errno> {
    if text.len() >= CLOCK_NAME_MAX {
        return Err(Errno::EINVAL);
    }
    tr.set_trace_clock(text.trim_matches(|c: char| c.is_ascii_whitespace()))
}

/// Writes one `trace_marker` event (Linux: `tracing_mark_write` and
/// `write_marker_to_buffer`, v6.9+) and returns how many bytes of `text`
/// it took. The event is a `struct print_entry` whose `ip` is this
/// function, so it prints as `tracing_mark_write: <text>`; a `'\n'` is
/// added if the text does not end with one. At most 4096 bytes are taken,
/// and fewer if the event would not fit in a sub-buffer: the caller gets a
/// short count and writes the rest as the next event, which is how a long
/// string ends up split over several events. EINVAL with the `markers`
/// option off; EBADF if nothing could be recorded (tracing off, buffer
/// being resized, or full in producer/consumer mode), as Linux.
#[no_mangle]
#[inline(never)]
pub fn tracing_mark_write(tr: &TraceArray, text: &[u8]) -> Result<usize, Errno> {
    if !tr.options.lock().has(TraceOption::Markers) {
        return Err(Errno::EINVAL);
    }
    let (cnt, size) = PrintEntry::marker_size(text.len(), BUF_MAX_DATA_SIZE);
    if cnt == 0 {
        return Ok(0);
    }
    let ip = tracing_mark_write as fn(&TraceArray, &[u8]) -> Result<usize, Errno> as usize as u64;
    crate::sched::preempt_disable();
    let ctx = trace::tracing_gen_ctx_dec();
    let ent = trace::trace_entry(TRACE_PRINT, ctx);
    let written = trace::trace_buffer_write(tr, size, |buf| {
        // PrintEntry::marker adds the '\n'; encode writes header, ip, text
        // and the NUL. The rest of the reservation stays zero.
        let _ = PrintEntry::marker(ent, ip, &text[..cnt]).encode(buf);
    });
    crate::sched::preempt_enable();
    if written {
        Ok(cnt)
    } else {
        Err(Errno::EBADF)
    }
}

/// An open `trace_marker`: write-only (Linux mode 0220).
struct TraceMarker(Arc<TraceArray>);

impl OpenFile for TraceMarker {
    fn read(&mut self, _buf: &mut [u8]) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    fn write(&mut self, buf: &[u8]) -> Result<usize, Errno> {
        tracing_mark_write(&self.0, buf)
    }
}

/// `per_cpu/cpuN/stats` (Linux: `tracing_stats_read`).
fn stats_show(tr: &TraceArray, cpu: usize) -> String {
    let mut out = String::new();
    if let Some(stats) = tr.buffer.stats(cpu) {
        let _ = stats.write_to(tr.trace_clock(), tr.trace_clock_in_ns(), &mut out);
    }
    out
}

/// `per_cpu/cpuN/trace`: the `trace` header (whose counts, as in Linux,
/// are those of every CPU) and this CPU's events. `echo > per_cpu/cpuN/trace`
/// clears only this CPU (Linux: `tracing_reset_cpu`).
fn per_cpu_trace_open(
    tr: &Arc<TraceArray>,
    cpu: usize,
    flags: OpenFlags,
) -> Result<Box<dyn OpenFile>, Errno> {
    if flags.writable() && flags.truncate() {
        tr.buffer.reset_cpu(cpu).map_err(|_| Errno::EINVAL)?;
    }
    let mut text = tracer::output::TraceSeq::new();
    if flags.readable() {
        trace::trace_iter_open(tr);
        trace::print_trace(tr, tr.current_tracer(), Some(cpu), &mut text);
    }
    let mut file = SeqFile::new(text.into_bytes());
    if flags.readable() {
        let held = tr.clone();
        file = file.with_release(move || trace::trace_iter_release(&held));
    }
    Ok(Box::new(file.with_write(|buf| Ok(buf.len()))))
}

/// An open `free_buffer`: writes are accepted; closing shrinks the buffer
/// (Linux: `tracing_free_buffer_write` / `tracing_free_buffer_release`).
struct FreeBuffer(Arc<TraceArray>);

impl OpenFile for FreeBuffer {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Errno> {
        Ok(buf.len())
    }

    fn release(&mut self) -> Result<(), Errno> {
        let tr = &self.0;
        if tr.options.lock().has(TraceOption::StopOnFree) {
            control::tracer_tracing_off(tr);
        }
        // Size 0 gives the minimum of 2 pages per CPU.
        let _ = tracing_resize_ring_buffer(tr, 0, Cpus::All);
        Ok(())
    }
}

/// Creates the top-level-only files: `saved_cmdlines_size` and the
/// README lines.
pub fn init(root: &Dentry) -> Result<(), Errno> {
    tracefs::create_show_store(
        root,
        "saved_cmdlines_size",
        TRACE_MODE_WRITE,
        || format!("{}\n", trace::saved_cmdlines_size()),
        Some(|t: &str| {
            let n = tracefs::parse_ulong(t)?;
            trace::set_saved_cmdlines_size(usize::try_from(n).map_err(|_| Errno::EINVAL)?)
        }),
    )?;
    control::readme_add(
        "  trace_clock\t\t- change the clock used to order events\n  \
         trace_marker\t\t- Writes into this file writes into the kernel buffer\n  \
         buffer_size_kb\t- view and modify size of per cpu buffer\n  \
         buffer_total_size_kb  - view total size of all cpu buffers\n",
    );
    Ok(())
}

/// Creates the buffer files of `tr` in `dir` (the top level's or an
/// instance's), described in the module documentation. Existing files
/// (e.g. `per_cpu/cpuN/trace_pipe_raw`) are left alone.
pub fn init_tr(tr: &Arc<TraceArray>, dir: &Dentry) -> Result<(), Errno> {
    let (t1, t2) = (tr.clone(), tr.clone());
    tracefs::create_show_store(
        dir,
        "buffer_size_kb",
        TRACE_MODE_WRITE,
        move || buffer_size_show(&t1, None),
        Some(move |t: &str| buffer_size_store(&t2, None, t)),
    )?;
    let t = tr.clone();
    tracefs::create_show(dir, "buffer_total_size_kb", move || buffer_total_show(&t))?;
    let t = tr.clone();
    tracefs::create_file(dir, "free_buffer", 0o200, move |_flags: OpenFlags| {
        Ok(Box::new(FreeBuffer(t.clone())) as Box<dyn OpenFile>)
    })?;
    let (t1, t2) = (tr.clone(), tr.clone());
    tracefs::create_show_store(
        dir,
        "trace_clock",
        TRACE_MODE_WRITE,
        move || trace_clock_show(&t1),
        Some(move |t: &str| trace_clock_store(&t2, t)),
    )?;
    let t = tr.clone();
    tracefs::create_file(dir, "trace_marker", 0o220, move |_flags: OpenFlags| {
        Ok(Box::new(TraceMarker(t.clone())) as Box<dyn OpenFile>)
    })?;

    let per_cpu = tracefs::get_or_create_dir(dir, "per_cpu")?;
    for cpu in 0..tr.nr_cpus {
        let d = tracefs::get_or_create_dir(&per_cpu, &format!("cpu{cpu}"))?;
        let absent = |name: &str| tracefs::lookup(&d, name).is_none();
        if absent("trace") {
            let t = tr.clone();
            tracefs::create_file(&d, "trace", TRACE_MODE_WRITE, move |f: OpenFlags| {
                per_cpu_trace_open(&t, cpu, f)
            })?;
        }
        if absent("trace_pipe") {
            let t = tr.clone();
            tracefs::create_file(&d, "trace_pipe", TRACE_MODE_READ, move |f: OpenFlags| {
                control::trace_pipe_open_cpu(&t, Some(cpu), f)
            })?;
        }
        if absent("stats") {
            let t = tr.clone();
            tracefs::create_show(&d, "stats", move || stats_show(&t, cpu))?;
        }
        if absent("buffer_size_kb") {
            let (t1, t2) = (tr.clone(), tr.clone());
            tracefs::create_show_store(
                &d,
                "buffer_size_kb",
                TRACE_MODE_WRITE,
                move || buffer_size_show(&t1, Some(cpu)),
                Some(move |t: &str| buffer_size_store(&t2, Some(cpu), t)),
            )?;
        }
    }
    Ok(())
}
