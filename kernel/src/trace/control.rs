//! The top-level tracefs control files and the tracer registry
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
//! The files made here:
//! - `available_tracers`: registered tracer names, space-separated, `\n`.
//! - `current_tracer`: reads `"<name>\n"`; a write selects a tracer by name,
//!   trailing whitespace (echo's newline) removed; unknown name: EINVAL.
//! - `tracing_on`: `0`/`1`; a write is a decimal number (kstrtoul), zero turns
//!   recording off, anything else on, as Linux's `rb_simple_write`.
//! - `trace`: the header, then the events, as `tracer::output` prints them
//!   from the ring buffer installed with [`set_trace_buffer`] (until then
//!   the file is empty). Opening `trace` for writing with `O_TRUNC`
//!   (`echo > trace`) clears the buffer.
//! - `trace_pipe`: the same lines without a header, consumed as they are
//!   read; a reader blocks while the buffer is empty (Ctrl-C: EINTR),
//!   O_NONBLOCK gives EAGAIN, and once something was read, an empty buffer
//!   with tracing off is the end of file (Linux's `tracing_wait_pipe`).
//! - `README`: the mini-HOWTO; tracer code adds its lines with
//!   [`readme_add`].

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use spin::{Mutex, Once};
use tracer::output::{IterState, TraceSeq, TracerOutput};

use crate::fs::tracefs::{self, Dentry, SeqFile, TRACE_MODE_READ, TRACE_MODE_WRITE};
use crate::fs::{Errno, OpenFile, OpenFlags};
use crate::sched::WaitQueue;

/// Longest tracer name (Linux's `MAX_TRACER_SIZE`); a longer write to
/// `current_tracer` is cut to this length first.
pub const MAX_TRACER_SIZE: usize = 100;

/// A tracer (Linux's `struct tracer`). Hooks are optional.
pub struct Tracer {
    pub name: &'static str,
    /// Runs when the tracer is selected in `current_tracer`. On error it
    /// must leave nothing behind: the previous tracer is started again and
    /// stays current, and the buffer keeps its events (Linux leaves `nop`
    /// with an emptied buffer).
    pub init: Option<fn() -> Result<(), Errno>>,
    /// Runs when another tracer is selected.
    pub reset: Option<fn()>,
    /// Run when `tracing_on` is set to 1 / 0 while this tracer is current.
    pub start: Option<fn()>,
    pub stop: Option<fn()>,
    /// The tracer's own printer for one open `trace`/`trace_pipe` file,
    /// made for the given number of CPUs (Linux's `open`, `print_header`
    /// and `print_line` hooks); None prints with the default printer only.
    pub output: Option<fn(usize) -> Box<dyn TracerOutput>>,
}

/// The tracer that traces nothing (Linux: kernel/trace/trace_nop.c).
pub static NOP_TRACE: Tracer = Tracer {
    name: "nop",
    init: None,
    reset: None,
    start: None,
    stop: None,
    output: None,
};

/// Registered tracers, newest first (Linux's `trace_types` list).
static TRACE_TYPES: Mutex<Vec<&'static Tracer>> = Mutex::new(Vec::new());
/// The current tracer (Linux's `tr->current_trace`). Held only to read or
/// replace the pointer.
static CURRENT: Mutex<&'static Tracer> = Mutex::new(&NOP_TRACE);
/// Serializes tracer switches and `tracing_on` writes with the hooks they
/// run (Linux's `trace_types_lock`). Hooks must not write these files.
static TRACE_TYPES_LOCK: Mutex<()> = Mutex::new(());
/// Linux's `ring_buffer_record_on/off` state as seen by `tracing_on`. On at boot.
pub(crate) static TRACING_ON: AtomicBool = AtomicBool::new(true);

/// What the `trace` and `trace_pipe` files need from the ring buffer.
pub trait TraceBuffer: Send + Sync {
    /// Empties every CPU's buffer (`echo > trace`).
    fn reset(&self);
    /// Appends the text of `trace` (header and events) as `tracer` prints it.
    fn print_trace(&self, tracer: &Tracer, out: &mut TraceSeq);
    /// True if no event is waiting to be consumed.
    fn is_empty(&self) -> bool;
    /// As [`is_empty`](Self::is_empty) for one CPU (`per_cpu/cpuN/trace_pipe`).
    fn is_empty_cpu(&self, cpu: usize) -> bool;
    /// `trace` was opened for reading (pauses recording with the
    /// `pause-on-trace` option).
    fn iter_open(&self);
    /// That reader closed it.
    fn iter_release(&self);
    /// The state of a `trace_pipe` opened while `tracer` is current.
    fn open_pipe(&self, tracer: &Tracer) -> IterState;
    /// Consumes the oldest events of `cpu` (all if None) and appends their
    /// `trace_pipe` lines, until `out` holds `limit` bytes or none is left.
    fn read_pipe(
        &self,
        state: &mut IterState,
        cpu: Option<usize>,
        out: &mut TraceSeq,
        limit: usize,
    );
}

/// Readers of `trace_pipe` sleep here; the ring buffer wakes them with
/// [`wake_pipe_readers`] when it commits events.
static TRACE_PIPE_WAIT: WaitQueue = WaitQueue::new();

/// Wakes `trace_pipe` readers (Linux: the ring buffer's `rb_wake_up_waiters`).
pub fn wake_pipe_readers() {
    TRACE_PIPE_WAIT.wake_all();
}

static TRACE_BUFFER: Mutex<Option<&'static dyn TraceBuffer>> = Mutex::new(None);

/// Installs the ring buffer that `trace` shows.
pub fn set_trace_buffer(buffer: &'static dyn TraceBuffer) {
    *TRACE_BUFFER.lock() = Some(buffer);
}

/// The trace array's `ring_buffer_record_on`/`off` (argument true/false),
/// installed with [`set_record_switch`]: this module sits above the trace
/// array and does not import it. A `Once`, not a lock, since
/// [`tracing_on`] and [`tracing_off`] run from probes too.
static RECORD_SWITCH: Once<fn(bool)> = Once::new();

/// Installs what [`tracing_on`]/[`tracing_off`] call to start or stop the
/// ring buffer's recording.
pub fn set_record_switch(switch: fn(bool)) {
    RECORD_SWITCH.call_once(|| switch);
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

/// The current tracer.
pub fn current_tracer() -> &'static Tracer {
    *CURRENT.lock()
}

/// Open `trace_pipe` files (Linux's `tr->trace_ref`): the tracer cannot be
/// changed while someone reads the pipe.
static TRACE_REF: AtomicUsize = AtomicUsize::new(0);

/// Selects the tracer called `name` (Linux: `tracing_set_tracer`).
/// EINVAL if there is none; selecting the current one does nothing;
/// EBUSY while `trace_pipe` is open. If the new tracer's `init` fails,
/// its error is returned and the previous tracer is started again, with
/// the buffer as it was: the buffer is only emptied once the new tracer
/// runs.
pub fn tracing_set_tracer(name: &str) -> Result<(), Errno> {
    let new = TRACE_TYPES
        .lock()
        .iter()
        .copied()
        .find(|t| t.name == name)
        .ok_or(Errno::EINVAL)?;
    let _guard = TRACE_TYPES_LOCK.lock();
    let old = current_tracer();
    if core::ptr::eq(old, new) {
        return Ok(());
    }
    if TRACE_REF.load(Ordering::SeqCst) > 0 {
        return Err(Errno::EBUSY);
    }
    if let Some(reset) = old.reset {
        reset();
    }
    *CURRENT.lock() = &NOP_TRACE;
    if let Some(Err(e)) = new.init.map(|init| init()) {
        // The previous tracer started once already; if it cannot start
        // again, `nop` is current, as in Linux.
        if old.init.is_none_or(|init| init().is_ok()) {
            *CURRENT.lock() = old;
        }
        return Err(e);
    }
    // Linux resets the buffer when the tracer changes.
    let buffer = *TRACE_BUFFER.lock();
    if let Some(buffer) = buffer {
        buffer.reset();
    }
    *CURRENT.lock() = new;
    Ok(())
}

/// True while the ring buffer records (`tracing_on` reads 1).
pub fn tracing_is_on() -> bool {
    TRACING_ON.load(Ordering::Relaxed)
}

/// Turns recording on (Linux: `tracing_on()`, `tracer_tracing_on`): the
/// ring buffer's `ring_buffer_record_on`, and the flag tracer callbacks
/// check to skip work early. Takes no lock: callable from anywhere,
/// including a tracer's hooks and probes.
pub fn tracing_on() {
    if let Some(switch) = RECORD_SWITCH.get() {
        switch(true);
    }
    TRACING_ON.store(true, Ordering::SeqCst);
}

/// Turns recording off (Linux: `tracing_off()`, used by the `traceoff`
/// trigger): `ring_buffer_record_off`, so every writer (tracers,
/// `trace_marker`) fails. Tracer callbacks still run.
pub fn tracing_off() {
    TRACING_ON.store(false, Ordering::SeqCst);
    if let Some(switch) = RECORD_SWITCH.get() {
        switch(false);
    }
}

/// The text of `trace`: header, then the events.
fn trace_show() -> Vec<u8> {
    let mut out = TraceSeq::new();
    if let Some(buffer) = trace_buffer() {
        buffer.print_trace(current_tracer(), &mut out);
    }
    out.into_bytes()
}

fn available_tracers_show() -> String {
    let types = TRACE_TYPES.lock();
    let names: Vec<&str> = types.iter().map(|t| t.name).collect();
    let mut out = names.join(" ");
    out.push('\n');
    out
}

/// A write to `current_tracer` (Linux: `tracing_set_trace_write`): at most
/// MAX_TRACER_SIZE bytes are looked at, trailing whitespace is removed.
fn current_tracer_store(text: &str) -> Result<(), Errno> {
    let mut end = text.len().min(MAX_TRACER_SIZE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let name = text[..end].trim_end_matches(|c: char| c.is_ascii_whitespace());
    tracing_set_tracer(name)
}

/// A write to `tracing_on` (Linux: `rb_simple_write`): a kstrtoul number,
/// non-zero turns recording on and runs the tracer's start hook, zero turns
/// it off and runs the stop hook. Writing the current state does nothing.
fn tracing_on_store(text: &str) -> Result<(), Errno> {
    let val = tracefs::parse_ulong(text)?;
    let _guard = TRACE_TYPES_LOCK.lock();
    let tracer = current_tracer();
    if (val != 0) == tracing_is_on() {
        return Ok(());
    }
    if val != 0 {
        tracing_on();
        if let Some(start) = tracer.start {
            start();
        }
    } else {
        tracing_off();
        if let Some(stop) = tracer.stop {
            stop();
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
fn trace_open(flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno> {
    if flags.writable() && flags.truncate() {
        if let Some(buffer) = *TRACE_BUFFER.lock() {
            buffer.reset();
        }
    }
    let file = if flags.readable() {
        let buffer = *TRACE_BUFFER.lock();
        if let Some(buffer) = buffer {
            buffer.iter_open();
        }
        SeqFile::new(trace_show()).with_release(move || {
            if let Some(buffer) = buffer {
                buffer.iter_release();
            }
        })
    } else {
        SeqFile::new(String::new())
    };
    Ok(Box::new(file.with_write(|buf| Ok(buf.len()))))
}

/// An open `trace_pipe` (Linux: `tracing_read_pipe`).
struct TracePipe {
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

fn trace_buffer() -> Option<&'static dyn TraceBuffer> {
    *TRACE_BUFFER.lock()
}

fn pipe_has_data(cpu: Option<usize>) -> bool {
    trace_buffer().is_some_and(|b| match cpu {
        Some(c) => !b.is_empty_cpu(c),
        None => !b.is_empty(),
    })
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
            if let Some(buffer) = trace_buffer() {
                // Consume events until the reader's buffer is full.
                let mut text = TraceSeq::new();
                buffer.read_pipe(&mut self.iter, self.cpu, &mut text, buf.len());
                if !text.is_empty() {
                    self.pending = text.into_bytes();
                    self.pos = 0;
                    continue;
                }
            }
            if self.nonblock {
                return Err(Errno::EAGAIN);
            }
            if self.has_read && !tracing_is_on() {
                return Ok(0);
            }
            let (has_read, cpu) = (self.has_read, self.cpu);
            crate::sched::wait_event_interruptible(&TRACE_PIPE_WAIT, || {
                pipe_has_data(cpu) || (has_read && !tracing_is_on())
            })?;
        }
    }

    fn release(&mut self) -> Result<(), Errno> {
        TRACE_REF.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}

fn trace_pipe_open(flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno> {
    trace_pipe_open_cpu(None, flags)
}

/// Opens `trace_pipe` (`cpu` None) or `per_cpu/cpuN/trace_pipe` (Linux:
/// `tracing_open_pipe`), printed by the current tracer's printer.
pub fn trace_pipe_open_cpu(
    cpu: Option<usize>,
    flags: OpenFlags,
) -> Result<Box<dyn OpenFile>, Errno> {
    let _guard = TRACE_TYPES_LOCK.lock();
    TRACE_REF.fetch_add(1, Ordering::SeqCst);
    let iter = match trace_buffer() {
        Some(b) => b.open_pipe(current_tracer()),
        None => IterState::new(0, false, None),
    };
    Ok(Box::new(TracePipe {
        pending: Vec::new(),
        pos: 0,
        has_read: false,
        nonblock: flags.nonblock(),
        iter,
        cpu,
    }))
}

static INIT: Once<()> = Once::new();

/// Registers `nop` and creates the control files in the tracefs root.
/// Idempotent; run at boot before other tracers register.
pub fn init() {
    INIT.call_once(|| {
        add_tracer(&NOP_TRACE).expect("register nop");
        let root = tracefs::root();
        create_control_files(&root).expect("create tracefs control files");
    });
}

fn create_control_files(root: &Dentry) -> Result<(), Errno> {
    tracefs::create_show(root, "available_tracers", available_tracers_show)?;
    tracefs::create_show_store(
        root,
        "current_tracer",
        TRACE_MODE_WRITE,
        || format!("{}\n", current_tracer().name),
        Some(current_tracer_store),
    )?;
    tracefs::create_show_store(
        root,
        "tracing_on",
        TRACE_MODE_WRITE,
        || String::from(if tracing_is_on() { "1\n" } else { "0\n" }),
        Some(tracing_on_store),
    )?;
    tracefs::create_file(root, "trace", TRACE_MODE_WRITE, trace_open)?;
    tracefs::create_file(root, "trace_pipe", TRACE_MODE_READ, trace_pipe_open)?;
    tracefs::create_show(root, "README", readme_show)?;
    Ok(())
}
