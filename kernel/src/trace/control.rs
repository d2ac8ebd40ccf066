//! The control files of a trace array and the tracer registry
//! (Linux: kernel/trace/trace.c: `register_tracer`, `tracing_set_tracer`,
//! `tracing_on`, `tracing_read_pipe`, `readme_msg`).
//!
//! A tracer is a [`Tracer`]: a name plus hooks that run when it becomes the
//! current tracer (`init`), stops being it (`reset`), and when `tracing_on`
//! flips (`start`/`stop`), and optionally its own printer (`output`).
//! [`register_tracer`] adds one to the list shown by
//! `available_tracers`; like Linux it is pushed at the front, so the newest
//! tracer is listed first and `nop` (registered at boot) last.
//!
//! The files made here, for the top level and for each instance
//! ([`init_tr`]; each file acts on its own trace array):
//! - `available_tracers`: registered tracer names, space-separated, `\n`
//!   (in an instance, those that can run in one).
//! - `current_tracer`: reads `"<name>\n"`; a write selects a tracer by name,
//!   leading and trailing whitespace (echo's newline) removed, as Linux's
//!   `strim()`; unknown name: EINVAL.
//! - `tracing_on`: `0`/`1`; a write is a decimal number (kstrtoul), zero turns
//!   recording off, anything else on, as Linux's `rb_simple_write`.
//! - `trace`: the header, then the events, as `tracer::output` prints them
//!   from the trace array's ring buffer. Opening `trace` for writing with `O_TRUNC`
//!   (`echo > trace`) clears the buffer.
//! - `trace_pipe`: the same lines without a header, consumed as they are
//!   read; a reader blocks while the buffer is empty (Ctrl-C: EINTR),
//!   O_NONBLOCK gives EAGAIN, and once something was read, an empty buffer
//!   with tracing off is the end of file (Linux's `tracing_wait_pipe`).
//! - `README` (top level only): the mini-HOWTO; tracer code adds its lines
//!   with [`readme_add`].

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use spin::{Mutex, Once};
use tracer::output::{IterState, TraceSeq, TracerOutput};

use super::trace::{self, global_trace, TraceArray};
use crate::fs::tracefs::{self, Dentry, SeqFile, TRACE_MODE_READ, TRACE_MODE_WRITE};
use crate::fs::{Errno, OpenFile, OpenFlags};
use crate::sched::WaitQueue;

/// Longest tracer name (Linux's `MAX_TRACER_SIZE`); a longer write to
/// `current_tracer` is cut to this length first.
pub const MAX_TRACER_SIZE: usize = 100;

/// A tracer's `init` hook.
pub type TracerInit = fn(&TraceArray) -> Result<(), Errno>;

/// A tracer (Linux's `struct tracer`). Hooks are optional.
pub struct Tracer {
    pub name: &'static str,
    /// Runs when the tracer is selected in `current_tracer`. On error it
    /// must leave nothing behind: the previous tracer is started again and
    /// stays current, and the buffer keeps its events (Linux leaves `nop`
    /// with an emptied buffer).
    pub init: Option<TracerInit>,
    /// Runs when another tracer is selected.
    pub reset: Option<fn(&TraceArray)>,
    /// Run when `tracing_on` is set to 1 / 0 while this tracer is current.
    pub start: Option<fn(&TraceArray)>,
    pub stop: Option<fn(&TraceArray)>,
    /// The tracer's own printer for one open `trace`/`trace_pipe` file,
    /// made for the given number of CPUs (Linux's `open`, `print_header`
    /// and `print_line` hooks); None prints with the default printer only.
    pub output: Option<fn(usize) -> Box<dyn TracerOutput>>,
    /// Can be the current tracer of an instance (Linux: `allow_instances`).
    pub allow_instances: bool,
    /// Keeps its worst case in the spare buffer (Linux: `use_max_tr`):
    /// selecting it allocates the spare, leaving it frees it, and the
    /// `snapshot` files are EBUSY meanwhile (see `max_trace`).
    pub use_max_tr: bool,
    /// `trace` shows the spare buffer, the worst case, rather than the
    /// live one (Linux: `print_max`).
    pub print_max: bool,
}

impl Tracer {
    /// A tracer with no hooks, for `..Tracer::EMPTY` in a tracer's
    /// definition.
    pub const EMPTY: Tracer = Tracer {
        name: "",
        init: None,
        reset: None,
        start: None,
        stop: None,
        output: None,
        allow_instances: false,
        use_max_tr: false,
        print_max: false,
    };
}

/// The tracer that traces nothing (Linux: kernel/trace/trace_nop.c).
pub static NOP_TRACE: Tracer = Tracer {
    name: "nop",
    allow_instances: true,
    ..Tracer::EMPTY
};

/// Registered tracers, newest first (Linux's `trace_types` list).
static TRACE_TYPES: Mutex<Vec<&'static Tracer>> = Mutex::new(Vec::new());
/// Serializes tracer switches and `tracing_on` writes with the hooks they
/// run (Linux's `trace_types_lock`). Hooks must not write these files.
pub(crate) static TRACE_TYPES_LOCK: Mutex<()> = Mutex::new(());
/// The top-level array's `tracing_on` as the tracers' callbacks see it
/// (Linux: `ring_buffer_record_is_on` of the global buffer). On at boot.
pub(crate) static TRACING_ON: AtomicBool = AtomicBool::new(true);

/// Readers of `trace_pipe` sleep here (every trace array's); the ring
/// buffer wakes them with [`wake_pipe_readers`] when it commits events.
static TRACE_PIPE_WAIT: WaitQueue = WaitQueue::new();

/// Wakes `trace_pipe` readers (Linux: the ring buffer's `rb_wake_up_waiters`).
pub fn wake_pipe_readers() {
    TRACE_PIPE_WAIT.wake_all();
}

/// Adds a tracer (Linux: `register_tracer`). EINVAL for an empty or too
/// long name, EBUSY if the name is taken (Linux logs "already registered"
/// and fails). Runs [`init`] first, so `nop` is always the first
/// registered (and last listed) tracer whatever the boot order.
pub fn register_tracer(tracer: &'static Tracer) -> Result<(), Errno> {
    init();
    add_tracer(tracer)
}

fn add_tracer(tracer: &'static Tracer) -> Result<(), Errno> {
    if tracer.name.is_empty() || tracer.name.len() >= MAX_TRACER_SIZE {
        return Err(Errno::EINVAL);
    }
    let mut types = TRACE_TYPES.lock();
    if types.iter().any(|t| t.name == tracer.name) {
        return Err(Errno::EBUSY);
    }
    types.insert(0, tracer);
    Ok(())
}

/// The top level's current tracer.
pub fn current_tracer() -> &'static Tracer {
    global_trace().map_or(&NOP_TRACE, |tr| tr.current_tracer())
}

/// Selects the top level's tracer called `name` (see [`tracing_set_tracer_tr`]).
pub fn tracing_set_tracer(name: &str) -> Result<(), Errno> {
    tracing_set_tracer_tr(global_trace().ok_or(Errno::ENODEV)?, name)
}

/// Whether the registered tracer `name` can be an instance's current
/// tracer (Linux: `trace_ok_for_array()`); an instance's `options/` has
/// only such tracers' option files.
pub fn runs_in_instances(name: &str) -> bool {
    TRACE_TYPES
        .lock()
        .iter()
        .any(|t| t.name == name && t.allow_instances)
}

/// Selects the tracer called `name` for `tr` (Linux: `tracing_set_tracer`).
/// EINVAL if there is none, or if `tr` is an instance and the tracer
/// cannot run in one; selecting the current one does nothing; EBUSY while
/// `trace_pipe` is open. If the new tracer's `init` fails, its error is
/// returned and the previous tracer is started again, with the buffer as
/// it was: the buffer is only emptied once the new tracer runs.
pub fn tracing_set_tracer_tr(tr: &TraceArray, name: &str) -> Result<(), Errno> {
    let new = TRACE_TYPES
        .lock()
        .iter()
        .copied()
        .find(|t| t.name == name && (t.allow_instances || tr.is_global()))
        .ok_or(Errno::EINVAL)?;
    let _guard = TRACE_TYPES_LOCK.lock();
    let old = tr.current_tracer();
    if core::ptr::eq(old, new) {
        return Ok(());
    }
    if tr.trace_ref.load(Ordering::SeqCst) > 0 {
        return Err(Errno::EBUSY);
    }
    // A latency tracer needs the spare buffer (Linux: the snapshot is
    // armed before the old tracer goes): without memory for it, nothing
    // changes.
    let had_spare = tr.snapshot.allocated();
    if new.use_max_tr && !old.use_max_tr {
        super::snapshot::tracing_alloc_snapshot_instance(tr)?;
    }
    // A spare allocated here for `new` goes if `new` cannot start (one
    // allocated before, by `echo 1 > snapshot`, stays with its events).
    let armed_here = new.use_max_tr && !old.use_max_tr && !had_spare;
    if let Some(reset) = old.reset {
        reset(tr);
    }
    *tr.current_trace.lock() = &NOP_TRACE;
    if old.use_max_tr && !new.use_max_tr {
        // The old tracer's probes may still be swapping: wait for them
        // (they run with interrupts off), then give the spare back.
        crate::rcu::synchronize_sched();
        let _ = super::snapshot::tracing_free_snapshot_instance(tr);
    }
    if let Some(Err(e)) = new.init.map(|init| init(tr)) {
        // The previous tracer started once already; if it cannot start
        // again, `nop` is current, as in Linux.
        if old.init.is_none_or(|init| init(tr).is_ok()) {
            *tr.current_trace.lock() = old;
        }
        if armed_here {
            let _ = super::snapshot::tracing_free_snapshot_instance(tr);
        }
        return Err(e);
    }
    // Linux resets the buffer when the tracer changes.
    tr.buffer.reset();
    *tr.current_trace.lock() = new;
    Ok(())
}

/// Makes `nop` the tracer of `tr` (Linux: `tracing_set_nop`, on instance
/// removal), whatever readers are open.
pub fn tracing_set_nop(tr: &TraceArray) {
    let _guard = TRACE_TYPES_LOCK.lock();
    let old = tr.current_tracer();
    if let Some(reset) = old.reset {
        reset(tr);
    }
    *tr.current_trace.lock() = &NOP_TRACE;
    if old.use_max_tr {
        crate::rcu::synchronize_sched();
        let _ = super::snapshot::tracing_free_snapshot_instance(tr);
    }
}

/// True while the top level's ring buffer records (`tracing_on` reads 1).
pub fn tracing_is_on() -> bool {
    TRACING_ON.load(Ordering::Relaxed)
}

/// True while `tr`'s ring buffer records.
pub fn tracer_tracing_is_on(tr: &TraceArray) -> bool {
    tr.tracing_on_flag().load(Ordering::Relaxed)
}

/// Turns the top level's recording on (Linux: `tracing_on()`).
pub fn tracing_on() {
    if let Some(tr) = global_trace() {
        tracer_tracing_on(tr);
    }
}

/// Turns the top level's recording off (Linux: `tracing_off()`).
pub fn tracing_off() {
    if let Some(tr) = global_trace() {
        tracer_tracing_off(tr);
    }
}

/// Turns `tr`'s recording on (Linux: `tracer_tracing_on`): the ring
/// buffer's `ring_buffer_record_on`, and the flag tracer callbacks check
/// to skip work early. Takes no lock: callable from anywhere, including a
/// tracer's hooks and probes.
pub fn tracer_tracing_on(tr: &TraceArray) {
    trace::set_recording(tr, true);
    tr.tracing_on_flag().store(true, Ordering::SeqCst);
}

/// Turns `tr`'s recording off (Linux: `tracer_tracing_off`, used by the
/// `traceoff` trigger): `ring_buffer_record_off`, so every writer
/// (tracers, `trace_marker`) fails. Tracer callbacks still run.
pub fn tracer_tracing_off(tr: &TraceArray) {
    tr.tracing_on_flag().store(false, Ordering::SeqCst);
    trace::set_recording(tr, false);
}

/// The text of `trace`: header, then the events.
fn trace_show(tr: &TraceArray) -> Vec<u8> {
    let mut out = TraceSeq::new();
    trace::print_trace(tr, tr.current_tracer(), None, &mut out);
    out.into_bytes()
}

fn available_tracers_show(tr: &TraceArray) -> String {
    let types = TRACE_TYPES.lock();
    let names: Vec<&str> = types
        .iter()
        .filter(|t| t.allow_instances || tr.is_global())
        .map(|t| t.name)
        .collect();
    let mut out = names.join(" ");
    out.push('\n');
    out
}

/// A write to `current_tracer` (Linux: `tracing_set_trace_write`): at most
/// MAX_TRACER_SIZE bytes are looked at, and `strim()` removes leading and
/// trailing whitespace, so `echo '  nop  '` selects nop.
fn current_tracer_store(tr: &TraceArray, text: &str) -> Result<(), Errno> {
    let mut end = text.len().min(MAX_TRACER_SIZE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let name =
        text[..end].trim_matches(|c: char| c.is_ascii() && tracer::filter::is_space(c as u8));
    tracing_set_tracer_tr(tr, name)
}

/// A write to `tracing_on` (Linux: `rb_simple_write`): a kstrtoul number,
/// non-zero turns recording on and runs the tracer's start hook, zero turns
/// it off and runs the stop hook. Writing the current state does nothing.
fn tracing_on_store(tr: &TraceArray, text: &str) -> Result<(), Errno> {
    let val = tracefs::parse_ulong(text)?;
    let _guard = TRACE_TYPES_LOCK.lock();
    let tracer = tr.current_tracer();
    if (val != 0) == tracer_tracing_is_on(tr) {
        return Ok(());
    }
    if val != 0 {
        tracer_tracing_on(tr);
        if let Some(start) = tracer.start {
            start(tr);
        }
    } else {
        tracer_tracing_off(tr);
        if let Some(stop) = tracer.stop {
            stop(tr);
        }
    }
    // A trace_pipe reader that has read something ends at an empty buffer
    // once tracing is off: let it re-check.
    wake_pipe_readers();
    Ok(())
}

const README_HEAD: &str = "tracing mini-HOWTO:\n\n\
# echo 0 > tracing_on : quick way to disable tracing\n\
# echo 1 > tracing_on : quick way to re-enable tracing\n\n \
Important files:\n  \
trace\t\t\t- The static contents of the buffer\n\
\t\t\t  To clear the buffer write into this file: echo > trace\n  \
trace_pipe\t\t- A consuming read to see the contents of the buffer\n  \
current_tracer\t- function and latency tracers\n  \
available_tracers\t- list of configured tracers for current_tracer\n  \
tracing_on\t\t- 0 stops recording into the buffer, 1 resumes it\n  \
README\t\t- this text\n";

/// Lines added to README by tracer code, in order.
static README_EXTRA: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// Adds lines to README when a feature's files are created, e.g.
/// `"  set_ftrace_filter\t- echo function name in here to only trace these\n"`.
pub fn readme_add(text: &'static str) {
    README_EXTRA.lock().push(text);
}

fn readme_show() -> String {
    let mut out = String::from(README_HEAD);
    for extra in README_EXTRA.lock().iter() {
        out.push_str(extra);
    }
    out
}

/// Opening `trace`: a snapshot of header and events; with write access and
/// `O_TRUNC` the buffer is cleared first. Writes are accepted and ignored
/// (Linux's `tracing_write_stub`), so `echo > trace` succeeds.
fn trace_open(tr: &Arc<TraceArray>, flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno> {
    if flags.writable() && flags.truncate() {
        // Under a latency tracer `trace` shows the spare buffer: that is
        // the one cleared (Linux: `print_max` in `tracing_open`).
        if tr.current_tracer().print_max {
            super::snapshot::with_spare(tr, |_| tr.max_buffer.reset());
        } else {
            tr.buffer.reset();
        }
    }
    let file = if flags.readable() {
        trace::trace_iter_open(tr);
        let held = tr.clone();
        SeqFile::new(trace_show(tr)).with_release(move || trace::trace_iter_release(&held))
    } else {
        SeqFile::new(String::new())
    };
    Ok(Box::new(file.with_write(|buf| Ok(buf.len()))))
}

/// An open `trace_pipe` (Linux: `tracing_read_pipe`).
struct TracePipe {
    tr: Arc<TraceArray>,
    /// Text of consumed events not yet returned to the reader.
    pending: Vec<u8>,
    pos: usize,
    /// Something has been returned (Linux's `iter->pos != 0`).
    has_read: bool,
    nonblock: bool,
    /// The printer's state, kept from one read to the next (the tracer
    /// cannot change while the pipe is open).
    iter: IterState,
    /// `Some(n)` for `per_cpu/cpuN/trace_pipe` (Linux's `iter->cpu_file`).
    cpu: Option<usize>,
}

fn pipe_has_data(tr: &TraceArray, cpu: Option<usize>) -> bool {
    match cpu {
        Some(c) => !tr.buffer.empty_cpu(c),
        None => !tr.buffer.is_empty(),
    }
}

impl OpenFile for TracePipe {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.pos < self.pending.len() {
                let n = buf.len().min(self.pending.len() - self.pos);
                buf[..n].copy_from_slice(&self.pending[self.pos..self.pos + n]);
                self.pos += n;
                self.has_read = true;
                return Ok(n);
            }
            // Consume events until the reader's buffer is full.
            let mut text = TraceSeq::new();
            trace::read_pipe(&self.tr, &mut self.iter, self.cpu, &mut text, buf.len());
            if !text.is_empty() {
                self.pending = text.into_bytes();
                self.pos = 0;
                continue;
            }
            if self.nonblock {
                return Err(Errno::EAGAIN);
            }
            if self.has_read && !tracer_tracing_is_on(&self.tr) {
                return Ok(0);
            }
            let (has_read, cpu, tr) = (self.has_read, self.cpu, &self.tr);
            crate::sched::wait_event_interruptible(&TRACE_PIPE_WAIT, || {
                pipe_has_data(tr, cpu) || (has_read && !tracer_tracing_is_on(tr))
            })?;
        }
    }

    fn release(&mut self) -> Result<(), Errno> {
        self.tr.trace_ref.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Opens `trace_pipe` (`cpu` None) or `per_cpu/cpuN/trace_pipe` of `tr`
/// (Linux: `tracing_open_pipe`), printed by the current tracer's printer.
pub fn trace_pipe_open_cpu(
    tr: &Arc<TraceArray>,
    cpu: Option<usize>,
    flags: OpenFlags,
) -> Result<Box<dyn OpenFile>, Errno> {
    let _guard = TRACE_TYPES_LOCK.lock();
    tr.trace_ref.fetch_add(1, Ordering::SeqCst);
    let iter = trace::open_iter(tr, tr.current_tracer(), false);
    Ok(Box::new(TracePipe {
        tr: tr.clone(),
        pending: Vec::new(),
        pos: 0,
        has_read: false,
        nonblock: flags.nonblock(),
        iter,
        cpu,
    }))
}

static INIT: Once<()> = Once::new();

/// Registers `nop` and creates the top-level-only `README`. Idempotent; run
/// at boot before other tracers register.
pub fn init() {
    INIT.call_once(|| {
        add_tracer(&NOP_TRACE).expect("register nop");
        tracefs::create_show(&tracefs::root(), "README", readme_show).expect("create README");
    });
}

/// Creates the control files of `tr` in `dir` (Linux: part of
/// `init_tracer_tracefs`).
pub fn init_tr(tr: &Arc<TraceArray>, dir: &Dentry) -> Result<(), Errno> {
    let t = tr.clone();
    tracefs::create_show(dir, "available_tracers", move || available_tracers_show(&t))?;
    let (t1, t2) = (tr.clone(), tr.clone());
    tracefs::create_show_store(
        dir,
        "current_tracer",
        TRACE_MODE_WRITE,
        move || format!("{}\n", t1.current_tracer().name),
        Some(move |text: &str| current_tracer_store(&t2, text)),
    )?;
    let (t1, t2) = (tr.clone(), tr.clone());
    tracefs::create_show_store(
        dir,
        "tracing_on",
        TRACE_MODE_WRITE,
        move || {
            String::from(if tracer_tracing_is_on(&t1) {
                "1\n"
            } else {
                "0\n"
            })
        },
        Some(move |text: &str| tracing_on_store(&t2, text)),
    )?;
    let t = tr.clone();
    tracefs::create_file(dir, "trace", TRACE_MODE_WRITE, move |f: OpenFlags| {
        trace_open(&t, f)
    })?;
    let t = tr.clone();
    tracefs::create_file(dir, "trace_pipe", TRACE_MODE_READ, move |f: OpenFlags| {
        trace_pipe_open_cpu(&t, None, f)
    })?;
    Ok(())
}
