//! The function tracer and the files that choose what it traces
//! (Linux: kernel/trace/trace_functions.c, and ftrace.c's set_ftrace_* files).
//!
//! `echo function > current_tracer` registers [`FUNCTION_OPS`]; from then on
//! every enabled call site calls [`function_trace_call`], which records a
//! TRACE_FN event `{ip, parent_ip}` in this CPU's ring buffer.
//! `set_ftrace_filter` and `set_ftrace_notrace` decide which sites are enabled
//! (globs, `!`, `>`/`>>`, probes such as `func:traceoff`), and
//! `set_ftrace_pid` which tasks are recorded. A write is parsed into a copy of
//! the filter; the copy replaces the filter when the file is closed, and only
//! if every write succeeded: a bad write changes nothing.
use alloc::boxed::Box;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};

use spin::{Lazy, Mutex};
use tracer::entry::{
    FtraceEntry, FuncRepeatsEntry, StackEntry, TRACE_FN, TRACE_FUNC_REPEATS, TRACE_STACK,
};
use tracer::filter::{FtraceFilter, PidFilter, RegexFile};
use tracer::options::func_flags;
use tracer::options::Tracer as TracerKind;
use tracer::repeats::FuncRepeats;
use tracer::trace_events::TaskInfo;

use super::control::{self, Tracer};
use super::ftrace::{self, recursion, FtraceOps};
use super::global_ops::{self, RecordNames, FILTER, GLOBAL_HASH};
use super::trace::{
    global_trace, trace_buffer_write, trace_buffer_write_at, trace_buffer_write_full, trace_clock,
    trace_entry, trace_entry_word, tracing_gen_ctx_dec,
};
use crate::arch::percpu;
use crate::fs::tracefs::{self, Dentry, EditFile, TRACE_MODE_WRITE};
use crate::fs::{Errno, OpenFile, OpenFlags};

/// The function tracer's ops (Linux: tr->ops, which is global_ops, with
/// function_trace_call): it wants the records of the global filter.
pub static FUNCTION_OPS: FtraceOps = FtraceOps::new("function", function_trace_call)
    .gated(&control::TRACING_ON)
    .with_hash(&GLOBAL_HASH);
/// The probes of set_ftrace_filter (`func:traceoff` ...), active whatever
/// the current tracer (Linux: the probe ops of register_ftrace_function_probe).
static PROBE_OPS: FtraceOps = FtraceOps::new("probes", function_probe_call);

static PID_FILTER: Lazy<Mutex<PidFilter>> = Lazy::new(|| Mutex::new(PidFilter::new()));
/// The pids of set_ftrace_pid, read without a lock by the callback.
const MAX_PIDS: usize = 32;
static PIDS: [AtomicU32; MAX_PIDS] = [const { AtomicU32::new(u32::MAX) }; MAX_PIDS];
/// What makes the callback leave its fast path, mirrored for it in one
/// byte so that the fast path tests them all with one load: `set_ftrace_pid`
/// holds pids ([`FUNC_PID_FILTER`]), the func_stack_trace option is set
/// ([`FUNC_STACK_TRACE`]), the func-no-repeats option is set
/// ([`FUNC_NO_REPEATS`]).
static FUNC_SLOW: AtomicU8 = AtomicU8::new(0);
const FUNC_PID_FILTER: u8 = 1;
const FUNC_STACK_TRACE: u8 = 2;
const FUNC_NO_REPEATS: u8 = 4;
/// Each CPU's last recorded call, for func-no-repeats (Linux:
/// `tr->last_func_repeats`).
static LAST_FUNC_REPEATS: [FuncRepeats; percpu::MAX_CPUS] =
    [const { FuncRepeats::new() }; percpu::MAX_CPUS];

fn set_func_slow(bit: u8, on: bool) {
    if on {
        FUNC_SLOW.fetch_or(bit, Ordering::SeqCst);
    } else {
        FUNC_SLOW.fetch_and(!bit, Ordering::SeqCst);
    }
}

#[inline(always)]
pub(crate) fn pid_allowed() -> bool {
    if FUNC_SLOW.load(Ordering::Relaxed) & FUNC_PID_FILTER == 0 {
        return true;
    }
    let pid = crate::sched::current_pid();
    PIDS.iter().any(|p| p.load(Ordering::Relaxed) == pid)
}

/// The callback of every traced function (Linux: function_trace_call).
///
/// This is the hot path the `bench` command measures (BENCHMARKS.md): the
/// cheap checks come first, the event is written straight into the
/// reserved bytes (no intermediate copy, no clearing), and the graph
/// tracer's return-address translation is only called when needed.
///
/// Split in two so that with `tracing_on` 0 the call costs three
/// instructions. This first part is a naked function: the kernel crate is
/// compiled with the mcount call in every function (a notrace function
/// keeps it as a NOP, and the compiler still saves the arguments around
/// it), and a naked function is the one kind that gets no instrumentation,
/// like Linux's kernel/trace built without -pg. It tests `tracing_on` and
/// tail-jumps, with the arguments untouched, to the recording part.
#[unsafe(naked)]
extern "C" fn function_trace_call(ip: u64, parent_slot: *mut u64, op: &FtraceOps) {
    core::arch::naked_asm!(
        "cmp byte ptr [rip + {tracing_on}], 0",
        "jne {record}",
        "ret",
        tracing_on = sym control::TRACING_ON,
        record = sym function_trace_record,
    )
}

/// The recording part of [`function_trace_call`] (same arguments).
///
/// The fast path is the common case: no pid filter, no func_stack_trace,
/// and a caller not hijacked by function_graph. It reserves, fills with
/// three stores (the header word from [`trace_entry_word`]) and commits. Anything else goes to
/// [`function_trace_record_slow`], out of line, so that its registers and
/// code do not weigh on the fast path.
extern "C" fn function_trace_record(ip: u64, parent_slot: *mut u64, _op: &FtraceOps) {
    let Some(tr) = global_trace() else { return };
    let Some(bit) = recursion::trylock(recursion::FTRACE_START) else {
        return;
    };
    // SAFETY: ftrace_caller passes the address of the stack slot holding
    // the traced function's return address.
    let parent_ip = unsafe { *parent_slot };
    if FUNC_SLOW.load(Ordering::Relaxed) == 0
        && parent_ip != crate::arch::fgraph::return_to_handler_addr()
    {
        // The header word is sampled inside `fill`, after the reservation:
        // the context it reads (irqs, depths, preempt_count, current) is
        // this context's own, which an interrupt in between leaves as it
        // found it, and this way no part of it is live across the
        // reservation (one callee-saved register less).
        trace_buffer_write_full(tr, FtraceEntry::SIZE, |buf| {
            FtraceEntry::encode_raw(buf, trace_entry_word(TRACE_FN), ip, parent_ip)
        });
    } else {
        function_trace_record_slow(tr, ip, parent_slot);
    }
    recursion::unlock(bit);
}

/// [`function_trace_record`] with a pid filter, func_stack_trace,
/// func-no-repeats, or a caller hijacked by function_graph (recursion bit
/// already held). With func-no-repeats, a call identical to this CPU's
/// last recorded one is only counted (no stack trace either), and the
/// first different one records the count first (Linux:
/// function_no_repeats_trace_call and function_stack_no_repeats_trace_call).
#[cold]
#[inline(never)]
fn function_trace_record_slow(tr: &super::trace::TraceArray, ip: u64, parent_slot: *mut u64) {
    if !pid_allowed() {
        return;
    }
    // SAFETY: as in function_trace_record.
    let mut parent_ip = unsafe { *parent_slot };
    // A caller hijacked by function_graph returns to return_to_handler:
    // report the real caller (Linux: ftrace_graph_ret_addr in
    // function_trace_call).
    if parent_ip == crate::arch::fgraph::return_to_handler_addr() {
        parent_ip = super::fgraph::ftrace_graph_ret_addr(&mut 0, parent_ip, parent_slot as u64);
    }
    let slow = FUNC_SLOW.load(Ordering::Relaxed);
    if slow & FUNC_NO_REPEATS != 0 {
        let last = &LAST_FUNC_REPEATS[crate::arch::cpu_id()];
        if last.is_repeat(ip, parent_ip, trace_clock()) {
            return;
        }
        if let Some(repeats) = last.process(ip, parent_ip) {
            // Linux: trace_last_func_repeats(), stamped when it is written.
            let ts = trace_clock();
            let ent = trace_entry(TRACE_FUNC_REPEATS, tracing_gen_ctx_dec());
            trace_buffer_write_at(tr, ts, FuncRepeatsEntry::SIZE, |buf| {
                let _ = repeats.entry(ent, ts).encode(buf);
            });
        }
    }
    let header = trace_entry_word(TRACE_FN);
    trace_buffer_write_full(tr, FtraceEntry::SIZE, |buf| {
        FtraceEntry::encode_raw(buf, header, ip, parent_ip)
    });
    if slow & FUNC_STACK_TRACE != 0 {
        trace_stack(2);
    }
}

/// Records a TRACE_STACK event of the current call chain, skipping `skip`
/// frames (Linux: __trace_stack).
pub fn trace_stack(skip: usize) {
    let Some(tr) = global_trace() else { return };
    let mut frames = [0u64; 16];
    let mut n = 0;
    let mut depth = 0;
    // Skip the tracer's own frames, then keep as many as fit.
    crate::arch::traps::walk_frames(
        crate::arch::frame_pointer(),
        skip + frames.len(),
        |_, real| {
            if depth >= skip {
                frames[n] = real;
                n += 1;
            }
            depth += 1;
        },
    );
    let ent = trace_entry(TRACE_STACK, tracing_gen_ctx_dec());
    let stack = StackEntry {
        ent,
        callers: frames[..n].to_vec(),
    };
    trace_buffer_write(tr, stack.encoded_len(), |buf| {
        let _ = stack.encode(buf);
    });
}

/// Runs the probes attached to a function (traceon/traceoff/stacktrace).
extern "C" fn function_probe_call(ip: u64, _parent_slot: *mut u64, _op: &FtraceOps) {
    let Some(bit) = recursion::trylock(recursion::FTRACE_START) else {
        return;
    };
    if let Some(i) = ftrace::record_index(ip) {
        let actions = crate::arch::without_interrupts(|| {
            FILTER
                .try_lock()
                .map(|mut f| f.probe_hit(i, control::tracing_is_on()))
        });
        if let Some(a) = actions {
            if a.stacktrace {
                trace_stack(2);
            }
            if a.tracing_off {
                control::tracing_off();
            }
            if a.tracing_on {
                control::tracing_on();
            }
        }
    }
    recursion::unlock(bit);
}

/// Applies the filter to the registered ops and re-patches the code.
pub(crate) fn apply_filter() -> Result<(), Errno> {
    // The function tracer and function_graph share the global filter's set
    // (Linux: graph_ops uses global_ops' hashes).
    global_ops::ftrace_update_global_hash();
    let probes = FILTER.lock().probed_functions();
    PROBE_OPS
        .func_hash()
        .get_or_init()
        .store(|i| probes.contains(i));
    let any_probe = !PROBE_OPS.func_hash().is_empty();
    let registered = PROBE_ACTIVE.load(Ordering::Relaxed);
    if any_probe && !registered {
        ftrace::register_ftrace_function(&PROBE_OPS)?;
        PROBE_ACTIVE.store(true, Ordering::Relaxed);
    } else if !any_probe && registered {
        ftrace::unregister_ftrace_function(&PROBE_OPS)?;
        PROBE_ACTIVE.store(false, Ordering::Relaxed);
    }
    ftrace::ftrace_update()
}

static PROBE_ACTIVE: AtomicBool = AtomicBool::new(false);

fn function_trace_init(_tr: &super::trace::TraceArray) -> Result<(), Errno> {
    global_ops::ftrace_update_global_hash();
    set_func_options();
    ftrace::register_ftrace_function(&FUNCTION_OPS)?;
    Ok(())
}

fn function_trace_reset(_tr: &super::trace::TraceArray) {
    let _ = ftrace::unregister_ftrace_function(&FUNCTION_OPS);
}

/// Copies the function tracer's options into [`FUNC_SLOW`].
fn set_func_options() {
    let flags = global_trace().map_or(0, |tr| tr.options.lock().tracer_flags(TracerKind::Function));
    set_func_slow(FUNC_STACK_TRACE, flags & func_flags::STACK != 0);
    set_func_slow(FUNC_NO_REPEATS, flags & func_flags::NO_REPEATS != 0);
}

/// The trace array's option hook: function-fork starts or stops following
/// forks, and the callback's copies of the options are refreshed.
fn option_changed(tr: &super::trace::TraceArray, change: &tracer::options::OptionChange) {
    if !tr.is_global() {
        return;
    }
    use tracer::options::{OptionId, TraceOption};
    if let OptionId::Core(TraceOption::FuncFork) = change.id {
        if change.changed {
            ftrace_pid_follow_fork(change.enabled);
        }
    }
    options_changed();
}

/// Called when an option changes: keeps the callback's copy current.
pub fn options_changed() {
    set_func_options();
}

/// The function tracer (Linux: function_trace in trace_functions.c).
pub static FUNCTION_TRACE: Tracer = Tracer {
    name: "function",
    init: Some(function_trace_init),
    reset: Some(function_trace_reset),
    start: None,
    stop: None,
    output: None,
    allow_instances: false,
};

fn regex_open(file: RegexFile, flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno> {
    let current = FILTER.lock().clone();
    let text = current.read(file, &RecordNames);
    let copy = flags.writable().then(|| {
        let mut c = current.clone();
        if flags.truncate() {
            // `>`: start from an empty list (probes stay, as in Linux).
            let _ = c.write(file, true, b"", &RecordNames);
        }
        c
    });
    let edit = move |f: &mut FtraceFilter, buf: &[u8]| f.write(file, false, buf, &RecordNames);
    let commit = install_filter;
    Ok(Box::new(EditFile::new(text, copy, edit, commit)))
}

/// Installs an edited copy of the filter (when a filter file is closed).
/// The probes it kept keep the counts that hits used up while it was being
/// edited. If the code cannot be patched to match, the previous filter
/// goes back, with its probes' current counts, and the error is returned:
/// `close()` reports it.
fn install_filter(mut new: FtraceFilter) -> Result<(), Errno> {
    let old = {
        let mut live = FILTER.lock();
        new.keep_live_counts(&live);
        core::mem::replace(&mut *live, new)
    };
    let Err(e) = apply_filter() else {
        return Ok(());
    };
    {
        let mut live = FILTER.lock();
        let mut old = old;
        old.keep_live_counts(&live);
        *live = old;
    }
    if let Err(e2) = apply_filter() {
        println!("ftrace: cannot restore the previous filter: {e2}");
    }
    Err(e)
}

/// Copies the pid list into [`PIDS`] for the callbacks; with a list (even
/// an empty one) only the listed tasks are traced.
fn pid_store_all(f: &PidFilter) {
    for (slot, pid) in PIDS
        .iter()
        .zip(f.pids().chain(core::iter::repeat(u32::MAX)))
    {
        slot.store(pid, Ordering::Relaxed);
    }
    set_func_slow(FUNC_PID_FILTER, !f.is_empty());
}

/// The `function-fork` rule for a fork (`parent` Some) or an exit (Linux:
/// ftrace_pid_follow_sched_process_fork/_exit): the list follows the
/// children of listed tasks and drops the tasks that exit. A child that
/// does not fit the [`MAX_PIDS`] slots is not added (Linux's list can
/// fail to grow the same way, on ENOMEM).
fn ftrace_pid_follow(parent: Option<i32>, task: i32) {
    let mut live = PID_FILTER.lock();
    let mut new = live.clone();
    if new.follow_task(parent, task) && new.pids().count() <= MAX_PIDS {
        pid_store_all(&new);
        *live = new;
    }
}

fn ftrace_pid_follow_sched_process_fork(_data: *mut (), parent: &TaskInfo, child: &TaskInfo) {
    ftrace_pid_follow(Some(parent.pid), child.pid);
}

fn ftrace_pid_follow_sched_process_exit(_data: *mut (), task: &TaskInfo) {
    ftrace_pid_follow(None, task.pid);
}

/// The `function-fork` option changed (Linux: ftrace_pid_follow_fork):
/// the fork and exit probes are registered while it is set.
pub fn ftrace_pid_follow_fork(enable: bool) {
    use crate::events::sched::{
        register_trace_sched_process_exit, register_trace_sched_process_fork,
        unregister_trace_sched_process_exit, unregister_trace_sched_process_fork,
    };
    let data = core::ptr::null_mut();
    let result = if enable {
        register_trace_sched_process_fork(ftrace_pid_follow_sched_process_fork, data).and_then(
            |_| register_trace_sched_process_exit(ftrace_pid_follow_sched_process_exit, data),
        )
    } else {
        let fork = unregister_trace_sched_process_fork(ftrace_pid_follow_sched_process_fork, data);
        let exit = unregister_trace_sched_process_exit(ftrace_pid_follow_sched_process_exit, data);
        fork.and(exit)
    };
    if let Err(e) = result {
        println!("ftrace: function-fork: cannot update the scheduler probes: {e:?}");
    }
}

fn pid_open(flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno> {
    let current = PID_FILTER.lock().clone();
    let text = current.read();
    let copy = flags.writable().then(|| {
        let mut c = current.clone();
        if flags.truncate() {
            let _ = c.write(true, b"");
        }
        c
    });
    let edit = |f: &mut PidFilter, buf: &[u8]| {
        f.write(false, buf)?;
        if f.pids().count() > MAX_PIDS {
            return Err(Errno::ENOSPC);
        }
        Ok(())
    };
    let commit = |f: PidFilter| {
        // Under the lock, so that a fork or exit followed meanwhile is not
        // lost between the copy for the callbacks and the list.
        let mut live = PID_FILTER.lock();
        pid_store_all(&f);
        *live = f;
        Ok(())
    };
    Ok(Box::new(EditFile::new(text, copy, edit, commit)))
}

/// Registers the tracer and creates its files.
pub fn init(root: &Dentry) -> Result<(), Errno> {
    control::register_tracer(&FUNCTION_TRACE)?;
    super::trace::OPTIONS_CHANGED.register(option_changed)?;
    tracefs::create_file(root, "set_ftrace_filter", TRACE_MODE_WRITE, |f| {
        regex_open(RegexFile::Filter, f)
    })?;
    tracefs::create_file(root, "set_ftrace_notrace", TRACE_MODE_WRITE, |f| {
        regex_open(RegexFile::Notrace, f)
    })?;
    tracefs::create_file(root, "set_ftrace_pid", TRACE_MODE_WRITE, pid_open)?;
    Ok(())
}
