//! The trace array: the ring buffer every tracer writes to, its options, and
//! the text of `trace` / `trace_pipe` (Linux: kernel/trace/trace.c).
//!
//! Writers (the tracers' callbacks) run with preemption off on the CPU they
//! write for: [`trace_buffer_write`] reserves an event in this CPU's ring
//! buffer, fills it and commits it. Readers turn events back into Linux's
//! text with the `tracer` crate's printer (`tracer::output`), which merges
//! the CPUs by time stamp: this file only hands it one reader per CPU (a
//! non-consuming iterator for `trace`, a consuming reader for `trace_pipe`)
//! and the current tracer's printer.
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use spin::{Mutex, Once};
use tracer::entry::{IrqContext, TraceCtx, TraceEntry};
use tracer::options::{TraceOptions, Tracer as TracerKind};
use tracer::output::header::{BufferStats, LatencyInfo};
use tracer::output::merge::{CpuReader, Merger, TraceRecord};
use tracer::output::{
    write_trace_file, IterState, OutputConfig, SymbolResolver, TaskNames, TraceIter, TraceSeq,
};
use tracer::ring_buffer::RingBuffer;

use super::control;
use crate::arch::{self, percpu};

/// Default per-CPU buffer size, as Linux's `trace_buf_size` (1408 KiB).
pub const TRACE_BUF_SIZE_DEFAULT: usize = 1_441_792;

/// One tracing set-up (Linux: struct trace_array): the top level, or an
/// instance made by `mkdir instances/NAME`. Every tracefs file is bound to
/// one; its closures hold an `Arc` of it.
pub struct TraceArray {
    /// The instance's name, empty for the top level.
    pub name: String,
    pub buffer: RingBuffer,
    /// The snapshot's spare buffer (Linux: `tr->max_buffer`): minimal until
    /// `echo 1 > snapshot` grows it to the live buffer's size and swaps the
    /// two, CPU by CPU (`RingBuffer::swap_cpu`). Freed with the array, never
    /// before: a writer may still finish an event in pages swapped into it.
    pub max_buffer: RingBuffer,
    /// The state of the `snapshot` files (see `super::snapshot`).
    pub snapshot: super::snapshot::TrSnapshot,
    pub options: Mutex<TraceOptions>,
    /// CPUs the buffer was created for.
    pub nr_cpus: usize,
    /// Nested [`tracing_stop_tr`] calls not yet undone (Linux:
    /// `tr->stop_count`, under `tr->start_lock`).
    stop_count: Mutex<i32>,
    /// The index of this array's clock in [`TRACE_CLOCKS`] (Linux:
    /// `tr->clock_id`). The top level's is mirrored in a static for the
    /// tracers that only write there (function_graph).
    clock: AtomicU8,
    /// `tracing_on` of an instance (the top level's is
    /// [`control::TRACING_ON`], which the function tracer's trampoline
    /// tests directly).
    tracing_on: AtomicBool,
    /// The current tracer (Linux: `tr->current_trace`). Held only to read
    /// or replace the pointer.
    pub current_trace: Mutex<&'static control::Tracer>,
    /// Open `trace_pipe` files (Linux: `tr->trace_ref`): the tracer cannot
    /// change while one is open.
    pub trace_ref: AtomicUsize,
    /// Open files of this array (Linux: `tr->ref`), counted by tracefs for
    /// an instance's directory: `rmdir` is EBUSY while it is not 0.
    pub open_files: alloc::sync::Arc<AtomicUsize>,
    /// The trace events of this array (its event files, pid lists).
    pub events: super::events::TrEvents,
    /// The function tracer's state for this trace array.
    pub function: super::functions::TrFunction,
    /// The last errors of tracing commands (`error_log`, Linux:
    /// `tr->err_log`); see [`super::error_log`].
    pub err_log: Mutex<tracer::error_log::ErrorLog>,
}

impl TraceArray {
    /// A trace array with a buffer of `size` bytes per CPU, no tracer and
    /// default options.
    pub fn new(name: &str, size: usize) -> Result<TraceArray, crate::fs::Errno> {
        let nr = arch::nr_cpus();
        Ok(TraceArray {
            name: String::from(name),
            buffer: RingBuffer::new(nr, size).map_err(|_| crate::fs::Errno::ENOMEM)?,
            // Size 0: the minimum (2 pages per CPU).
            max_buffer: RingBuffer::new(nr, 0).map_err(|_| crate::fs::Errno::ENOMEM)?,
            snapshot: super::snapshot::TrSnapshot::default(),
            options: Mutex::new(TraceOptions::new()),
            nr_cpus: nr,
            stop_count: Mutex::new(0),
            clock: AtomicU8::new(0),
            tracing_on: AtomicBool::new(true),
            current_trace: Mutex::new(&control::NOP_TRACE),
            trace_ref: AtomicUsize::new(0),
            open_files: alloc::sync::Arc::new(AtomicUsize::new(0)),
            events: super::events::TrEvents::new(),
            function: super::functions::TrFunction::new(),
            err_log: Mutex::new(tracer::error_log::ErrorLog::new()),
        })
    }

    /// True for the top-level array.
    pub fn is_global(&self) -> bool {
        global_trace().is_some_and(|g| core::ptr::eq(g, self))
    }

    /// The flag that mirrors this array's `tracing_on`.
    pub fn tracing_on_flag(&self) -> &AtomicBool {
        if self.is_global() {
            &control::TRACING_ON
        } else {
            &self.tracing_on
        }
    }

    /// This array's clock (see [`trace_clock`]).
    #[inline(always)]
    pub fn trace_clock(&self) -> u64 {
        clock_read(self.clock.load(Ordering::Relaxed))
    }

    /// True if this array's clock counts nanoseconds.
    pub fn trace_clock_in_ns(&self) -> bool {
        clock_in_ns(self.clock.load(Ordering::Relaxed))
    }

    /// The index of this array's clock in [`TRACE_CLOCKS`].
    pub fn trace_clock_index(&self) -> usize {
        self.clock.load(Ordering::Relaxed) as usize
    }

    /// Selects a clock by name (Linux: `tracing_set_clock`): EINVAL for
    /// an unknown name; the buffer is cleared, even when the clock stays
    /// the same, because old and new time stamps cannot be compared.
    pub fn set_trace_clock(&self, name: &str) -> Result<(), crate::fs::Errno> {
        let i = TRACE_CLOCKS
            .iter()
            .position(|c| *c == name)
            .ok_or(crate::fs::Errno::EINVAL)?;
        {
            let _g = EVENT_CLOCK_LOCK.lock();
            self.clock.store(i as u8, Ordering::SeqCst);
            if self.is_global() {
                TRACE_CLOCK.store(i as u8, Ordering::SeqCst);
            }
            for f in self.events.all_files() {
                f.sync_clock_flag();
            }
        }
        self.buffer.reset();
        Ok(())
    }

    /// The current tracer.
    pub fn current_tracer(&self) -> &'static control::Tracer {
        *self.current_trace.lock()
    }
}

/// Held while a trace array's clock and its event files' `CLOCK_OTHER`
/// bits change together (`set_trace_clock`), and while a new file takes
/// its bit from the clock.
pub(crate) static EVENT_CLOCK_LOCK: spin::Mutex<()> = spin::Mutex::new(());

/// The top-level trace array, made at boot; [`GLOBAL_TRACE_PTR`] caches
/// its address for the hot paths (one load and a test, as a `Once`).
static GLOBAL_TRACE: Once<alloc::sync::Arc<TraceArray>> = Once::new();
static GLOBAL_TRACE_PTR: core::sync::atomic::AtomicPtr<TraceArray> =
    core::sync::atomic::AtomicPtr::new(core::ptr::null_mut());

/// The top-level trace array (None before boot creates it).
#[inline(always)]
pub fn global_trace() -> Option<&'static TraceArray> {
    let p = GLOBAL_TRACE_PTR.load(Ordering::Acquire);
    // SAFETY: set once at boot to the Arc kept in GLOBAL_TRACE forever.
    unsafe { p.as_ref() }
}

/// The top-level trace array as the `Arc` its files hold.
pub fn global_trace_arc() -> Option<alloc::sync::Arc<TraceArray>> {
    GLOBAL_TRACE.get().cloned()
}

/// The clocks of `trace_clock`, in the order of Linux's `trace_clocks[]`
/// table (the generic ones, then x86's `x86-tsc`).
pub const TRACE_CLOCKS: [&str; 10] = [
    "local", "global", "counter", "uptime", "perf", "mono", "mono_raw", "boot", "tai", "x86-tsc",
];
const CLOCK_COUNTER: u8 = 2;
const CLOCK_UPTIME: u8 = 3;
const CLOCK_X86_TSC: u8 = 9;
static TRACE_CLOCK: AtomicU8 = AtomicU8::new(0);
static TRACE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The top level's trace clock (Linux: tr->clock). `counter` is a global
/// atomic counter, `uptime` counts timer ticks (jiffies), `x86-tsc` is the
/// raw TSC; every other clock is the TSC in nanoseconds here: the TSCs of
/// QEMU's CPUs are synchronised, so `local` and `global` agree, and with no
/// wall-clock time `tai` and `boot` equal `mono`.
///
/// The default clock, `local` (index 0), is tested first and the others
/// are out of line: one compare on the hot path.
#[inline(always)]
pub fn trace_clock() -> u64 {
    clock_read(TRACE_CLOCK.load(Ordering::Relaxed))
}

#[inline(always)]
fn clock_read(clock: u8) -> u64 {
    if clock != 0 {
        return trace_clock_other(clock);
    }
    crate::time::now_ns()
}

#[cold]
#[inline(never)]
fn trace_clock_other(clock: u8) -> u64 {
    match clock {
        CLOCK_COUNTER => TRACE_COUNTER.fetch_add(1, Ordering::Relaxed),
        CLOCK_UPTIME => crate::time::now_ns() / (1_000_000_000 / crate::arch::apic::HZ),
        CLOCK_X86_TSC => crate::arch::rdtsc(),
        _ => crate::time::now_ns(),
    }
}

/// True if a clock counts nanoseconds (timestamps print as s.us; Linux's
/// `trace_clocks[].in_ns`).
fn clock_in_ns(clock: u8) -> bool {
    !matches!(clock, CLOCK_COUNTER | CLOCK_UPTIME | CLOCK_X86_TSC)
}

/// True if the top level's clock counts nanoseconds.
pub fn trace_clock_in_ns() -> bool {
    clock_in_ns(TRACE_CLOCK.load(Ordering::Relaxed))
}

/// Samples the context of the event being recorded (Linux:
/// tracing_gen_ctx_dec: the tracer's own preempt_disable is not counted),
/// each part from its source: the interrupt flag, the interrupt depth
/// counter, the need-resched flag and the preempt count. The writers'
/// [`trace_entry_word`] reads the same from the per-CPU context word;
/// `check_trace_entry_word` compares the two.
#[inline(always)]
pub fn tracing_gen_ctx_dec() -> TraceCtx {
    let irq = IrqContext {
        irqs_off: !arch::irqs_enabled(),
        hardirq: percpu::this_cpu_irq_exception_depth() as u32 != 0,
        need_resched: percpu::this_cpu_need_resched(),
        ..IrqContext::default()
    };
    let depth = percpu::this_cpu_preempt_count().saturating_sub(1);
    TraceCtx::new(irq.flags(), depth, 0)
}

/// The common header for an event of `type_` by the running task.
#[inline(always)]
pub fn trace_entry(type_: u16, ctx: TraceCtx) -> TraceEntry {
    let pid = crate::sched::current_pid();
    TraceEntry::new(type_, ctx, pid as i32)
}

// The context word's flag byte holds Linux's TRACE_FLAG_* values, at the
// place of `struct trace_entry`'s `flags`; its preempt count and pid are at
// the places of `preempt_count` and `pid`.
const _: () = {
    use tracer::entry::trace_flag::{TRACE_FLAG_HARDIRQ, TRACE_FLAG_NEED_RESCHED};
    assert!(percpu::CTX_HARDIRQ == TRACE_FLAG_HARDIRQ);
    assert!(percpu::CTX_NEED_RESCHED == TRACE_FLAG_NEED_RESCHED);
    assert!(percpu::CTX_FLAGS_SHIFT == 16);
    assert!(percpu::CTX_PREEMPT_SHIFT == 24);
    assert!(percpu::CTX_PID_SHIFT == 32);
};

/// The 8-byte `struct trace_entry` of an event of `type_` by the running
/// task in this context, as the little-endian word the ring buffer stores:
/// `type | flags << 16 | preempt_count << 24 | pid << 32`. The same bits as
/// `trace_entry(type_, tracing_gen_ctx_dec())` encoded (checked at boot by
/// `check_trace_entry_word`).
///
/// The per-CPU context word (`percpu`'s `PerCpu::context`) already holds
/// the flags, the preempt count and the pid at their places, kept up to
/// date by the code that changes them, so the header is one gs-relative
/// load, the interrupt flag from RFLAGS, the type added and the tracer's
/// own preempt_disable taken off: Linux's `tracing_gen_ctx_dec`, whose
/// `min(pc, 15)` is the one test (a count outside 1..=16 goes out of line).
///
/// The writers call it inside their `fill`, after the reservation, so that
/// nothing of it is live (or spilled) across the reservation. Sampling
/// after the reservation instead of before (Linux) changes nothing: an
/// interrupt in between returns with the hardirq flag, the preempt count
/// and the pid as it found them (a task switch cannot happen: preemption is
/// off); a `need_resched` set by it reads as if sampled just after, which
/// one sample could equally have seen.
#[inline(always)]
pub fn trace_entry_word(type_: u16) -> u64 {
    entry_word::<false>(type_)
}

/// [`trace_entry_word`] with its clamp inline, for the generated event
/// probes: a call there would keep the record's pointer and the
/// tracepoint's arguments in saved registers across it (the probe's
/// mcount call already takes five of them for its arguments), so that one
/// argument went to the stack.
#[inline(always)]
pub fn trace_entry_word_inline(type_: u16) -> u64 {
    entry_word::<true>(type_)
}

#[inline(always)]
fn entry_word<const INLINE_CLAMP: bool>(type_: u16) -> u64 {
    let ctx = percpu::this_cpu_context();
    // The preempt count less the tracer's own is 0..=15: no clamping.
    if (ctx as u32).wrapping_sub(1 << 24) >= 16 << 24 {
        return if INLINE_CLAMP {
            trace_entry_word_clamp(type_)
        } else {
            trace_entry_word_clamped(type_)
        };
    }
    let rflags: u64;
    // SAFETY: reads RFLAGS only (as arch::irqs_enabled).
    unsafe { core::arch::asm!("pushfq; pop {}", out(reg) rflags, options(nomem, preserves_flags)) };
    // RFLAGS.IF is bit 9; TRACE_FLAG_IRQS_OFF (bit 0 of the flag byte,
    // bit 16 of the word) is its complement.
    let irqs_off = (!rflags & (1 << 9)) << 7;
    (ctx - (1 << 24) + u64::from(type_)) | irqs_off
}

/// [`trace_entry_word`] when the preempt count is 0 (a writer that did
/// not disable preemption) or above 16: Linux's `min(pc, 15)`.
#[cold]
#[inline(never)]
fn trace_entry_word_clamped(type_: u16) -> u64 {
    trace_entry_word_clamp(type_)
}

/// The clamped header word (see [`trace_entry_word_clamped`]), inline.
#[inline(always)]
fn trace_entry_word_clamp(type_: u16) -> u64 {
    let ctx = percpu::this_cpu_context();
    let irqs_off = u64::from(!arch::irqs_enabled()) << 16;
    let depth = u64::from(percpu::this_cpu_preempt_count().saturating_sub(1).min(15));
    (ctx & !0xff00_0000) | (depth << 24) | u64::from(type_) | irqs_off
}

/// Check that [`trace_entry_word`] and the `tracer` crate's encoding of
/// `trace_entry(type_, tracing_gen_ctx_dec())` agree, in the context it
/// runs in (returns the two words if they differ).
pub fn check_trace_entry_word() -> Result<(), (u64, u64)> {
    let word = trace_entry_word(tracer::entry::TRACE_FN);
    let ent = trace_entry(tracer::entry::TRACE_FN, tracing_gen_ctx_dec());
    let mut b = [0u8; 8];
    let _ = ent.encode(&mut b);
    let want = u64::from_le_bytes(b);
    if word == want {
        Ok(())
    } else {
        Err((word, want))
    }
}

/// [`check_trace_entry_word`] at every preempt count from 0 to 18 (both
/// sides of the clamp at 15 and the out-of-line counts), with interrupts
/// on and off: run at boot. With interrupts on, one may set need_resched
/// between the two samples, so a mismatch is retried twice.
fn check_trace_entry_word_counts() -> Result<(), (u64, u64)> {
    let mut result = Ok(());
    for irqs_off in [false, true] {
        let flags = irqs_off.then(arch::irqflags::arch_local_irq_save);
        for _ in 0..=18 {
            let r = check_trace_entry_word()
                .or_else(|_| check_trace_entry_word())
                .or_else(|_| check_trace_entry_word());
            result = result.and(r);
            percpu::this_cpu_preempt_inc();
        }
        for _ in 0..=18 {
            percpu::this_cpu_preempt_dec();
        }
        if let Some(flags) = flags {
            arch::irqflags::arch_local_irq_restore(flags);
        }
    }
    result
}

/// How many timer ticks each CPU has checked the header word in.
static TICK_CHECKS: [AtomicU8; percpu::MAX_CPUS] = [const { AtomicU8::new(0) }; percpu::MAX_CPUS];

/// The timer tick's check of the context word (the first 16 ticks of each
/// CPU): in a hardware interrupt, over whichever task it interrupted, as
/// a writer calls it (preemption off).
fn tick_check_trace_entry_word() {
    let n = &TICK_CHECKS[arch::cpu_id()];
    if n.load(Ordering::Relaxed) < 16 {
        n.fetch_add(1, Ordering::Relaxed);
        percpu::this_cpu_preempt_inc();
        let r = check_trace_entry_word();
        percpu::this_cpu_preempt_dec();
        if let Err((word, want)) = r {
            panic!("trace_entry_word {word:#x} differs from trace_entry {want:#x} in the tick");
        }
    }
}

/// Set by writers, cleared by the timer tick, which wakes `trace_pipe`
/// readers (Linux defers the wake-up to irq_work the same way: a writer must
/// not take the wait queue's lock).
static WAKEUP_PENDING: AtomicBool = AtomicBool::new(false);

/// Reserves `len` bytes on this CPU, clears them, lets `fill` write the
/// event, commits. The caller has preemption off. Returns false if nothing
/// was recorded.
#[inline(always)]
pub fn trace_buffer_write(tr: &TraceArray, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
    trace_buffer_write_full(tr, len, |buf| {
        buf.fill(0);
        fill(buf)
    })
}

/// As [`trace_buffer_write`] for a `fill` that writes every byte of the
/// payload (fixed-size events): the ring buffer does not clear it first,
/// which saves a memset per event on the function tracer's hot path.
#[inline(always)]
pub fn trace_buffer_write_full(tr: &TraceArray, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
    trace_buffer_write_at(tr, tr.trace_clock(), len, fill)
}

/// As [`trace_buffer_write_full`], with a time stamp `ts` the caller has
/// just read from [`trace_clock`]: function_graph records its entry event
/// at the call time and its return event at the return time it already
/// took for the durations, instead of reading the clock twice per event.
#[inline(always)]
pub fn trace_buffer_write_at(
    tr: &TraceArray,
    ts: u64,
    len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> bool {
    let cpu = arch::cpu_id();
    // SAFETY: preemption is off, so this CPU is the only non-nested writer
    // of its buffer; interrupts that trace nest and commit before returning.
    // `cpu < tr.buffer.nr_cpus()`: every trace array's buffers are made
    // for `arch::nr_cpus()` CPUs (`TraceArray::new`), after every CPU that
    // runs came online (`trace::init` follows `start_aps`), and CPU ids are
    // below that number.
    let Some(mut res) = (unsafe { tr.buffer.lock_reserve_cpu_unchecked(cpu, len, ts) }) else {
        return false;
    };
    fill(res.data_mut());
    tr.buffer.unlock_commit(res);
    if !WAKEUP_PENDING.load(Ordering::Relaxed) {
        WAKEUP_PENDING.store(true, Ordering::Relaxed);
    }
    true
}

/// Stops recording until the matching [`tracing_start_tr`] (Linux:
/// `tracing_stop_tr`): the first stop disables the ring buffer
/// (`ring_buffer_record_disable`, a count apart from `tracing_on`, which
/// still reads 1); the calls nest.
pub fn tracing_stop_tr(tr: &TraceArray) {
    crate::irqflags::without_interrupts(|| {
        let mut count = tr.stop_count.lock();
        *count += 1;
        if *count == 1 {
            tr.buffer.record_disable();
        }
    });
}

/// True while a [`tracing_stop_tr`] is not undone (Linux:
/// `tr->stop_count`). Callable from a probe: if another CPU is changing
/// the count this very moment, it reads as stopped.
pub fn tracing_is_stopped(tr: &TraceArray) -> bool {
    tr.stop_count.try_lock().is_none_or(|c| *c != 0)
}

/// Undoes one [`tracing_stop_tr`] (Linux: `tracing_start_tr`); the last one
/// enables the ring buffer again.
pub fn tracing_start_tr(tr: &TraceArray) {
    crate::irqflags::without_interrupts(|| {
        let mut count = tr.stop_count.lock();
        if *count <= 0 {
            // Linux warns once and resets the count.
            *count = 0;
            return;
        }
        *count -= 1;
        if *count == 0 {
            tr.buffer.record_enable();
        }
    });
}

/// A reader opened `trace` or `per_cpu/cpuN/trace` (Linux: `__tracing_open`):
/// with the `pause-on-trace` option set, recording stops while it is open.
pub fn trace_iter_open(tr: &TraceArray) {
    if tr
        .options
        .lock()
        .has(tracer::options::TraceOption::PauseOnTrace)
    {
        tracing_stop_tr(tr);
    }
}

/// That reader closed the file (Linux: `tracing_release`): recording
/// resumes if it was stopped. As in Linux, this looks at the stop count,
/// not at whether this open stopped it.
pub fn trace_iter_release(tr: &TraceArray) {
    let stopped = crate::irqflags::without_interrupts(|| *tr.stop_count.lock() != 0);
    if stopped {
        tracing_start_tr(tr);
    }
}

/// Called from the timer tick: wakes trace_pipe readers if events arrived.
pub fn trace_wakeup_tick() {
    tick_check_trace_entry_word();
    if WAKEUP_PENDING.load(Ordering::Relaxed) && WAKEUP_PENDING.swap(false, Ordering::Relaxed) {
        control::wake_pipe_readers();
    }
}

/// pid -> comm of tasks seen, kept after they exit (Linux: saved_cmdlines;
/// the eviction rule is `tracer::cmdlines`, host-tested).
static SAVED_CMDLINES: Mutex<BTreeMap<u32, String>> = Mutex::new(BTreeMap::new());
pub use tracer::cmdlines::SAVED_CMDLINES_SIZE;
/// The current `saved_cmdlines_size` (Linux: `savedcmd->cmdline_num`).
static SAVED_CMDLINES_NUM: AtomicUsize = AtomicUsize::new(SAVED_CMDLINES_SIZE);

/// How many pid -> comm pairs are kept.
pub fn saved_cmdlines_size() -> usize {
    SAVED_CMDLINES_NUM.load(Ordering::Relaxed)
}

/// Sets `saved_cmdlines_size` (Linux: `tracing_resize_saved_cmdlines`):
/// 0 or more than PID_MAX_DEFAULT is EINVAL. Linux starts a new, empty
/// table; the saved names are dropped here too.
pub fn set_saved_cmdlines_size(n: usize) -> Result<(), crate::fs::Errno> {
    tracer::cmdlines::check_size(n)?;
    crate::irqflags::without_interrupts(|| {
        let mut map = SAVED_CMDLINES.lock();
        SAVED_CMDLINES_NUM.store(n, Ordering::Relaxed);
        map.clear();
    });
    Ok(())
}

/// Remembers a task's name for the trace output (Linux: trace_save_cmdline).
pub fn trace_save_cmdline(pid: u32, comm: &str) {
    crate::irqflags::without_interrupts(|| {
        let mut map = SAVED_CMDLINES.lock();
        tracer::cmdlines::save_cmdline(&mut map, saved_cmdlines_size(), pid, comm);
    });
}

/// The saved pid -> comm pairs.
pub fn saved_cmdlines() -> Vec<(u32, String)> {
    crate::irqflags::without_interrupts(|| {
        SAVED_CMDLINES
            .lock()
            .iter()
            .map(|(p, c)| (*p, c.clone()))
            .collect()
    })
}

/// kallsyms for the printer.
pub struct KernelSymbols;

impl SymbolResolver for KernelSymbols {
    fn lookup(&self, addr: u64) -> Option<(&str, u64, u64)> {
        let s = crate::kallsyms::table()?.lookup(addr)?;
        Some((s.name, s.offset, s.size as u64))
    }
}

/// A snapshot of task names for one read of `trace`.
pub struct TaskTable(BTreeMap<i32, String>);

impl TaskTable {
    pub fn snapshot() -> TaskTable {
        TaskTable(
            saved_cmdlines()
                .into_iter()
                .map(|(p, c)| (p as i32, c))
                .collect(),
        )
    }
}

impl TaskNames for TaskTable {
    fn comm(&self, pid: i32) -> Option<&str> {
        if pid == 0 {
            return Some("<idle>");
        }
        self.0.get(&pid).map(|s| s.as_str())
    }
}

/// Which printer the current tracer of `tr` uses.
pub fn current_tracer_kind(tr: &TraceArray) -> TracerKind {
    TracerKind::from_name(tr.current_tracer().name).unwrap_or(TracerKind::Nop)
}

/// The records of one CPU of the ring buffer for `trace` (Linux: a
/// `ring_buffer_iter`): not consumed, and recording on that CPU pauses
/// while the reader lives. `cpu` None, or a CPU that is not shown, gives an
/// empty reader.
fn iter_reader(
    buffer: &RingBuffer,
    cpu: Option<usize>,
) -> core::iter::Peekable<impl Iterator<Item = TraceRecord> + '_> {
    let mut it = cpu.and_then(|c| buffer.iter(c));
    core::iter::from_fn(move || {
        it.as_mut()?
            .next_with(|ts, p| TraceRecord::from_slice(ts, p, 0))
    })
    .peekable()
}

/// The records of one CPU for `trace_pipe` (Linux: `ring_buffer_peek` and
/// `ring_buffer_consume`): taking one consumes it. A CPU that is not shown
/// (`shown` false) reads as empty.
struct ConsumingReader<'a> {
    buffer: &'a RingBuffer,
    cpu: usize,
    shown: bool,
    peeked: Option<TraceRecord>,
}

fn record(ts: u64, payload: &[u8], lost: u64) -> TraceRecord {
    TraceRecord::from_slice(ts, payload, lost)
}

impl CpuReader for ConsumingReader<'_> {
    fn peek(&mut self) -> Option<&TraceRecord> {
        if self.peeked.is_none() && self.shown {
            self.peeked = self.buffer.peek_with(self.cpu, record);
        }
        self.peeked.as_ref()
    }
    fn peek_ts(&mut self) -> Option<u64> {
        match &self.peeked {
            Some(r) => Some(r.ts),
            None if self.shown => self.buffer.peek_with(self.cpu, |ts, _, _| ts),
            None => None,
        }
    }
    fn next(&mut self) -> Option<TraceRecord> {
        self.peeked = None;
        if !self.shown {
            return None;
        }
        self.buffer.consume_with(self.cpu, record)
    }
}

/// The printer's configuration for this trace array and tracer `kind`:
/// clock, symbols, task names and the irq-entry range.
fn output_config<'a>(
    tr: &TraceArray,
    kind: TracerKind,
    options: &'a TraceOptions,
    tasks: &'a TaskTable,
) -> OutputConfig<'a> {
    let mut cfg = OutputConfig::new(options, kind, &KernelSymbols, tasks, tr.nr_cpus as u32);
    cfg.irqentry = crate::arch::irq::irqentry_text();
    cfg.time_in_ns = tr.trace_clock_in_ns();
    cfg
}

/// The state of a `trace` or `trace_pipe` file opened while `tracer` is
/// current: its printer (Linux's `tracer->open`), if it has one.
pub fn open_iter(tr: &TraceArray, tracer: &control::Tracer, overruns: bool) -> IterState {
    let output = tracer.output.map(|open| open(tr.nr_cpus));
    IterState::new(tr.nr_cpus, overruns, output)
}

/// What the latency-format header shows: for the live buffer the
/// latency and the task are zero, as Linux prints them for the function
/// tracers; for the spare buffer under a latency tracer, the data saved
/// with the worst case (`max`).
fn latency_info(max: Option<&tracer::max_latency::MaxData>) -> LatencyInfo {
    // Tasks are preempted on interrupt exit whenever preempt_count is 0.
    let model = "preempt";
    let release = env!("CARGO_PKG_VERSION");
    match max {
        Some(d) => d.latency_info(release, model),
        None => LatencyInfo {
            release: String::from(release),
            preempt_model: model,
            ..LatencyInfo::default()
        },
    }
}

/// The text of `trace` (`cpu` None) or of `per_cpu/cpuN/trace`: the header
/// and the events, printed by `tracer` and the default printer. Under a
/// `print_max` tracer (the latency tracers) it is the spare buffer's, the
/// worst case's trace, from the start of that latency on (Linux:
/// `tracing_iter_reset` skips the older events), headed by the data saved
/// with it.
pub fn print_trace(
    tr: &TraceArray,
    tracer: &control::Tracer,
    cpu: Option<usize>,
    out: &mut TraceSeq,
) {
    if tracer.print_max {
        super::snapshot::with_spare(tr, |max| {
            print_buffer(tr, &tr.max_buffer, tracer, cpu, None, Some(max), out);
        });
    } else {
        print_buffer(tr, &tr.buffer, tracer, cpu, None, None, out);
    }
}

/// The text of `snapshot` (`cpu` None) or of `per_cpu/cpuN/snapshot`: as
/// [`print_trace`] for the spare buffer, with Linux's help text when it is
/// empty. The caller holds the snapshot lock (no swap meanwhile).
pub fn print_snapshot(
    tr: &TraceArray,
    tracer: &control::Tracer,
    cpu: Option<usize>,
    help: tracer::output::header::SnapshotHelp,
    out: &mut TraceSeq,
) {
    print_buffer(tr, &tr.max_buffer, tracer, cpu, Some(help), None, out);
}

/// [`print_trace`] of `buffer` (the live one or the spare), with the
/// snapshot file's help text when `snapshot` is given and nothing shows;
/// `max` is the data saved with a latency tracer's worst case, when the
/// spare holds it: the events before it began are skipped.
fn print_buffer(
    tr: &TraceArray,
    buffer: &RingBuffer,
    tracer: &control::Tracer,
    cpu: Option<usize>,
    snapshot: Option<tracer::output::header::SnapshotHelp>,
    max: Option<&tracer::max_latency::MaxData>,
    out: &mut TraceSeq,
) {
    let time_start = max.map_or(0, |m| m.cause.time_start);
    let shown = |c: usize| cpu.is_none_or(|x| x == c);
    let mut readers: Vec<_> = (0..tr.nr_cpus)
        .map(|c| iter_reader(buffer, shown(c).then_some(c)))
        .collect();
    // Linux: `tracing_iter_reset` skips what is older than `time_start`
    // and the header's counts leave it out (`skipped_entries`).
    let mut stats = BufferStats {
        entries: 0,
        written: 0,
        online_cpus: arch::nr_cpus() as u32,
    };
    for c in 0..tr.nr_cpus {
        let mut skipped = 0;
        if time_start != 0 {
            if let Some(r) = readers.get_mut(c).filter(|_| shown(c)) {
                while r.next_if(|rec| rec.ts < time_start).is_some() {
                    skipped += 1;
                }
            } else {
                skipped = buffer.iter(c).map_or(0, |mut it| {
                    let mut n = 0;
                    while it.next_with(|ts, _| ts < time_start) == Some(true) {
                        n += 1;
                    }
                    n
                });
            }
        }
        let entries = buffer.entries_cpu(c);
        if skipped != 0 {
            stats.entries += entries.saturating_sub(skipped);
            stats.written += entries.saturating_sub(skipped);
        } else {
            stats.entries += entries;
            stats.written += entries + buffer.overrun_cpu(c);
        }
    }
    let overruns = (0..tr.nr_cpus)
        .filter(|c| shown(*c))
        .any(|c| buffer.overrun_cpu(c) != 0);
    let options = tr.options.lock().clone();
    let tasks = TaskTable::snapshot();
    let kind = TracerKind::from_name(tracer.name).unwrap_or(TracerKind::Nop);
    let mut cfg = output_config(tr, kind, &options, &tasks);
    cfg.time_start = time_start;
    let output = tracer.output.map(|open| open(tr.nr_cpus));
    let mut src = Merger::from_readers(readers);
    let lat = latency_info(max);
    match snapshot {
        None => write_trace_file(
            out, cfg, output, &stats, &lat, &mut src, tr.nr_cpus, overruns,
        ),
        Some(help) => tracer::output::write_snapshot_file(
            out, cfg, output, &stats, &lat, &mut src, tr.nr_cpus, overruns, help,
        ),
    }
}

/// The event lines of `trace` for the current tracer, without the header.
pub fn print_trace_events(tr: &TraceArray, out: &mut TraceSeq) {
    let options = tr.options.lock().clone();
    let tasks = TaskTable::snapshot();
    let cfg = output_config(tr, current_tracer_kind(tr), &options, &tasks);
    let overruns = (0..tr.nr_cpus).any(|c| tr.buffer.overrun_cpu(c) != 0);
    let state = open_iter(tr, tr.current_tracer(), overruns);
    let mut src = Merger::from_readers(
        (0..tr.nr_cpus)
            .map(|c| iter_reader(&tr.buffer, Some(c)))
            .collect(),
    );
    TraceIter::resume(cfg, state).print_all(&mut src, out);
}

/// Consumes events of `cpu` (all if None) in time order and prints their
/// `trace_pipe` lines (each after `CPU:N [LOST M EVENTS]` if events were
/// lost) until `out` holds at least `limit` bytes or none is left. `state`
/// is the open pipe's, kept from one read to the next.
pub fn read_pipe(
    tr: &TraceArray,
    state: &mut IterState,
    cpu: Option<usize>,
    out: &mut TraceSeq,
    limit: usize,
) {
    let options = tr.options.lock().clone();
    let tasks = TaskTable::snapshot();
    let cfg = output_config(tr, current_tracer_kind(tr), &options, &tasks);
    let mut src = consuming_merger(tr, cpu);
    let held = core::mem::replace(state, IterState::new(0, false, None));
    let mut it = TraceIter::resume(cfg, held);
    while out.len() < limit && it.print_line(&mut src, out) {}
    *state = it.into_state();
}

/// The events of `cpu` (all if None) of `tr`'s live buffer in time order,
/// each consumed as it is taken (what `trace_pipe` and the dump read).
fn consuming_merger(tr: &TraceArray, cpu: Option<usize>) -> Merger<ConsumingReader<'_>> {
    Merger::from_readers(
        (0..tr.nr_cpus)
            .map(|c| ConsumingReader {
                buffer: &tr.buffer,
                cpu: c,
                shown: cpu.is_none_or(|x| x == c),
                peeked: None,
            })
            .collect(),
    )
}

/// Consumes every event of `cpu` (all if None) in time order and hands
/// each printed line to `emit` as soon as it is made, with the latency
/// context columns (Linux: `ftrace_dump`'s loop, whose iterator has
/// `TRACE_FILE_LAT_FMT`). Returns how many events were printed.
pub fn dump_lines(tr: &TraceArray, cpu: Option<usize>, emit: &mut dyn FnMut(&str)) -> usize {
    let options = tr.options.lock().clone();
    let tasks = TaskTable::snapshot();
    let mut cfg = output_config(tr, current_tracer_kind(tr), &options, &tasks);
    cfg.file_lat_fmt = true;
    let mut src = consuming_merger(tr, cpu);
    let mut it = TraceIter::resume(cfg, open_iter(tr, tr.current_tracer(), false));
    let mut n = 0;
    loop {
        let mut line = TraceSeq::new();
        if !it.print_line(&mut src, &mut line) {
            return n;
        }
        n += 1;
        emit(&String::from_utf8_lossy(line.as_bytes()));
    }
}

/// Creates the top-level trace array (Linux: `global_trace`, set up by
/// `tracer_alloc_buffers`).
pub fn init() {
    let tr = GLOBAL_TRACE.call_once(|| {
        alloc::sync::Arc::new(
            TraceArray::new("", TRACE_BUF_SIZE_DEFAULT).expect("no memory for the trace buffer"),
        )
    });
    GLOBAL_TRACE_PTR.store(
        alloc::sync::Arc::as_ptr(tr) as *mut TraceArray,
        Ordering::Release,
    );
    // The hot paths' header word must be the one the printer decodes.
    if let Err((word, want)) = check_trace_entry_word_counts() {
        panic!("trace_entry_word {word:#x} differs from trace_entry {want:#x}");
    }
}

/// `ring_buffer_record_on`/`off` of `tr`'s buffer, for `tracing_on`.
pub fn set_recording(tr: &TraceArray, on: bool) {
    if on {
        tr.buffer.record_on();
    } else {
        tr.buffer.record_off();
    }
}

/// Called after an option changed, with the change, for the tracers to act
/// on it and refresh their copies of their options (the function and
/// function_graph tracers register here; the trace array does not import
/// them).
pub static OPTIONS_CHANGED: crate::hook::Hook<fn(&TraceArray, &tracer::options::OptionChange)> =
    crate::hook::Hook::new();

/// Asked before an option written to `trace_options` or `options/` takes
/// effect, once the new value is stored: an error undoes the write, which
/// fails with it (Linux: the current tracer's `flag_changed`, whose
/// refusal makes `set_tracer_flag` fail; the latency tracers restart for
/// `display-graph` here).
pub static FLAG_CHANGED: crate::hook::Hook<FlagChangedFn> = crate::hook::Hook::new();

/// The signature of a [`FLAG_CHANGED`] hook.
pub type FlagChangedFn =
    fn(&TraceArray, &tracer::options::OptionChange) -> Result<(), crate::fs::Errno>;

/// Runs [`FLAG_CHANGED`]; on a refusal, puts the option back as it was.
fn flag_changed(
    tr: &TraceArray,
    change: &tracer::options::OptionChange,
) -> Result<(), crate::fs::Errno> {
    use tracer::options::OptionId;
    if !change.changed {
        return Ok(());
    }
    for probe in FLAG_CHANGED.probes() {
        if let Err(e) = probe(tr, change) {
            let mut o = tr.options.lock();
            match change.id {
                OptionId::Core(opt) => o.set(opt, !change.enabled),
                OptionId::Tracer(t, bit) => {
                    let f = o.tracer_flags(t);
                    o.set_tracer_flags(t, if change.enabled { f & !bit } else { f | bit });
                }
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Sets a core option of `tr` from the kernel and applies its side
/// effects, as a write to `trace_options` would (Linux: `set_tracer_flag`;
/// the latency tracers force `overwrite` and `latency-format`).
pub fn set_tracer_flag(tr: &TraceArray, opt: tracer::options::TraceOption, on: bool) {
    let change = {
        let mut o = tr.options.lock();
        let changed = o.has(opt) != on;
        o.set(opt, on);
        tracer::options::OptionChange {
            id: tracer::options::OptionId::Core(opt),
            enabled: on,
            changed,
        }
    };
    if change.changed {
        option_changed(tr, &change);
    }
}

/// A tracer that keeps its worst case in the spare buffer refuses to have
/// `overwrite` cleared (Linux: `trace_keep_overwrite`, EINVAL).
fn option_refused(tr: &TraceArray, change: &tracer::options::OptionChange) -> bool {
    use tracer::options::{OptionId, TraceOption};
    change.id == OptionId::Core(TraceOption::Overwrite)
        && !change.enabled
        && tr.current_tracer().use_max_tr
}

/// Applies side effects of an option change (Linux: set_tracer_flag).
fn option_changed(tr: &TraceArray, change: &tracer::options::OptionChange) {
    use tracer::options::{OptionId, TraceOption};
    if let OptionId::Core(TraceOption::Overwrite) = change.id {
        tr.buffer.set_overwrite(change.enabled);
    }
    super::event_pid::option_changed(tr, change);
    for probe in OPTIONS_CHANGED.probes() {
        probe(tr, change);
    }
}

/// `trace_options` and the `options/` directory of `tr` (Linux:
/// trace_options_fops, create_trace_options_dir).
pub fn init_options_files(
    tr: &alloc::sync::Arc<TraceArray>,
    dir: &crate::fs::tracefs::Dentry,
) -> Result<(), crate::fs::Errno> {
    use crate::fs::tracefs::{self, TRACE_MODE_WRITE};
    let (t1, t2) = (tr.clone(), tr.clone());
    tracefs::create_show_store(
        dir,
        "trace_options",
        TRACE_MODE_WRITE,
        move || {
            t1.options
                .lock()
                .trace_options_text(current_tracer_kind(&t1))
        },
        Some(move |text: &str| {
            let kind = current_tracer_kind(&t2);
            let change = {
                let mut o = t2.options.lock();
                let before = o.clone();
                let change = o.write_trace_options(kind, text.as_bytes())?;
                if option_refused(&t2, &change) {
                    *o = before;
                    return Err(crate::fs::Errno::EINVAL);
                }
                change
            };
            flag_changed(&t2, &change)?;
            option_changed(&t2, &change);
            Ok(())
        }),
    )?;
    let options = tracefs::create_dir(dir, "options")?;
    let names: Vec<&'static str> =
        TraceOptions::option_files_in(tr.is_global(), |t| control::runs_in_instances(t.name()))
            .collect();
    for name in names {
        let (t1, t2) = (tr.clone(), tr.clone());
        tracefs::create_show_store(
            &options,
            name,
            TRACE_MODE_WRITE,
            move || {
                t1.options
                    .lock()
                    .read_option_file(name)
                    .map(String::from)
                    .unwrap_or_default()
            },
            Some(move |text: &str| {
                let change = {
                    let mut o = t2.options.lock();
                    let before = o.clone();
                    let change = o.write_option_file(name, text.as_bytes())?;
                    if option_refused(&t2, &change) {
                        *o = before;
                        return Err(crate::fs::Errno::EINVAL);
                    }
                    change
                };
                flag_changed(&t2, &change)?;
                option_changed(&t2, &change);
                Ok(())
            }),
        )?;
    }
    Ok(())
}
