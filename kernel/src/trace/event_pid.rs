//! The pid filter of trace events: `set_event_pid`, `set_event_notrace_pid`
//! and the `event-fork` option (Linux: kernel/trace/trace_events.c,
//! `event_pid_write()`, `trace_event_ignore_this_pid()`, the
//! `event_filter_pid_sched_*_probe_pre/post` probes, `ignore_task_cpu()`,
//! `trace_event_follow_fork()`).
//!
//! Every trace array has its own lists and flags ([`TrEventPid`], in its
//! `events`), and its own scheduler probes, whose data is that state.
//!
//! An event probe must decide in a few instructions whether the current
//! task is filtered out, so the decision is made ahead of time, per CPU:
//! the array's `ignore_pid` says whether the task running on a CPU is to be ignored.
//! The probe reads it ([`trace_event_ignore_this_pid`], only for events
//! whose `PID_FILTER` flag is set, which every event has while a list is
//! set). It is kept current by probes on the scheduler's tracepoints,
//! registered while a list is set, as in Linux:
//! - on sched_switch one probe runs before the events (highest priority):
//!   the switch is recorded if prev *or* next is traced; one runs after
//!   them (priority 0): from then on the CPU runs next;
//! - on the wakeups (waking, wakeup, wakeup_new) the probe before the
//!   events lets a wakeup of a traced task be recorded even when the waker
//!   is not traced, and the one after puts the current task's value back;
//! - every write recomputes the flag on each CPU for the task running
//!   there (Linux: `on_each_cpu(ignore_task_cpu)`).
//!
//! The rules are `tracer::trace_events::set_event::PidLists` (host-tested).
//!
//! The probes read the lists without a lock: each list is published as a
//! fixed array of atomic slots (`tracer`'s `PidSlots`, host-tested with
//! concurrent readers; [`MAX_EVENT_PIDS`] pids, a write that would list
//! more is `ENOSPC`, where Linux's sparse bitmap has no such limit). A
//! write stores the pids it adds before it clears the ones it removes, so
//! a probe sees every pid either listed or not, and a pid on the old and
//! the new list throughout.
//!
//! `event-fork` (off by default, as in Linux): while set, a task forked
//! by a task on a list joins that list, and a task that exits leaves the
//! lists (Linux removes it when the task is freed; here at its exit).
use core::sync::atomic::{AtomicBool, Ordering};

use spin::Mutex;
use tracer::filter::PidFilter;
use tracer::trace_events::set_event::{EventPidLists, PidLists, PidSlots};
use tracer::trace_events::TaskInfo;

use super::events::{flags, TraceEventFile};
use super::trace::TraceArray;
use crate::arch::{self, percpu};
use crate::events::sched;
use crate::fs::Errno;

/// Pids each list can hold.
pub const MAX_EVENT_PIDS: usize = 64;

/// The pid filter of one trace array (Linux: `tr->filtered_pids`,
/// `tr->filtered_no_pids` and the per-CPU `ignore_pid`). Its address is
/// the data of the array's scheduler probes.
pub struct TrEventPid {
    /// The lists as edited by the files and by `event-fork` (the probes
    /// read `pids` and `no_pids`). Taken with interrupts off, so that the
    /// fork probe cannot spin on it while the holder is preempted on its
    /// CPU.
    lists: Mutex<EventPidLists>,
    pids: PidSlots<MAX_EVENT_PIDS>,
    no_pids: PidSlots<MAX_EVENT_PIDS>,
    /// Whether the task running on each CPU is filtered out (Linux:
    /// `tr->array_buffer.data->ignore_pid`, a per-CPU bool).
    ignore_pid: [AtomicBool; percpu::MAX_CPUS],
    /// Serializes writers of the lists with the probe registration; holds
    /// whether the `event-fork` probes are registered.
    write: Mutex<bool>,
}

impl Default for TrEventPid {
    fn default() -> Self {
        Self::new()
    }
}

impl TrEventPid {
    /// No lists, `event-fork` off.
    pub const fn new() -> TrEventPid {
        TrEventPid {
            lists: Mutex::new(EventPidLists::new()),
            pids: PidSlots::new(),
            no_pids: PidSlots::new(),
            ignore_pid: [const { AtomicBool::new(false) }; percpu::MAX_CPUS],
            write: Mutex::new(false),
        }
    }

    /// Whether a pid list is set: an event made now starts with its
    /// PID_FILTER flag (Linux: trace_create_new_event).
    pub fn filtering(&self) -> bool {
        crate::irqflags::without_interrupts(|| self.lists.lock().filtering())
    }

    /// This CPU's flag.
    #[inline(always)]
    fn ignore_pid(&self) -> &AtomicBool {
        &self.ignore_pid[percpu::cpu_id()]
    }

    /// The probes' data: this filter's address.
    fn data(&self) -> *mut () {
        self as *const TrEventPid as *mut ()
    }
}

/// The published lists of one array, as the rules want them.
impl PidLists for TrEventPid {
    #[inline(always)]
    fn pid_listed(&self, pid: i32) -> Option<bool> {
        self.pids.listed(pid)
    }
    #[inline(always)]
    fn no_pid_listed(&self, pid: i32) -> Option<bool> {
        self.no_pids.listed(pid)
    }
}

/// Whether the event probe of `file` running now must drop its record
/// because the current task is filtered out in `file`'s trace array
/// (Linux: `trace_event_ignore_this_pid`). Asked only for events whose
/// `PID_FILTER` flag is set.
#[inline(always)]
pub fn trace_event_ignore_this_pid(file: &TraceEventFile) -> bool {
    file.tr().events.pid.ignore_pid().load(Ordering::Relaxed)
}

/// The filter a scheduler probe was registered with.
///
/// # Safety
/// `data` is the `data()` of a live [`TrEventPid`]: its probes are
/// unregistered (with a grace period) before its trace array is dropped.
unsafe fn from_data<'a>(data: *mut ()) -> &'a TrEventPid {
    // SAFETY: see the function's contract.
    unsafe { &*(data as *const TrEventPid) }
}

fn sched_switch_pre(data: *mut (), _preempt: bool, prev: &TaskInfo, next: &TaskInfo, _s: u32) {
    // SAFETY: registered by `pid_events` with a TrEventPid as data.
    let p = unsafe { from_data(data) };
    p.ignore_pid()
        .store(p.switch_pre(prev.pid, next.pid), Ordering::Relaxed);
}

fn sched_switch_post(data: *mut (), _preempt: bool, _prev: &TaskInfo, next: &TaskInfo, _s: u32) {
    // SAFETY: registered by `pid_events` with a TrEventPid as data.
    let p = unsafe { from_data(data) };
    p.ignore_pid()
        .store(p.switch_post(next.pid), Ordering::Relaxed);
}

fn sched_wakeup_pre(data: *mut (), task: &TaskInfo, _target_cpu: i32) {
    // SAFETY: registered by `pid_events` with a TrEventPid as data.
    let p = unsafe { from_data(data) };
    let flag = p.ignore_pid();
    flag.store(
        p.wakeup_pre(flag.load(Ordering::Relaxed), task.pid),
        Ordering::Relaxed,
    );
}

fn sched_wakeup_post(data: *mut (), _task: &TaskInfo, _target_cpu: i32) {
    // SAFETY: registered by `pid_events` with a TrEventPid as data.
    let p = unsafe { from_data(data) };
    let flag = p.ignore_pid();
    let current = crate::sched::current_pid() as i32;
    flag.store(
        p.wakeup_post(flag.load(Ordering::Relaxed), current),
        Ordering::Relaxed,
    );
}

/// Registers (or unregisters) the probes that keep `p`'s `ignore_pid`
/// current (Linux: `register_pid_events` / `unregister_pid_events`), on
/// the scheduler's switch and wakeup tracepoints, with `p` as their data.
fn pid_events(p: &TrEventPid, on: bool) -> Result<(), Errno> {
    let d = p.data();
    if on {
        sched::register_trace_prio_sched_switch(sched_switch_pre, d, i32::MAX)?;
        sched::register_trace_prio_sched_switch(sched_switch_post, d, 0)?;
        sched::register_trace_prio_sched_wakeup(sched_wakeup_pre, d, i32::MAX)?;
        sched::register_trace_prio_sched_wakeup(sched_wakeup_post, d, 0)?;
        sched::register_trace_prio_sched_wakeup_new(sched_wakeup_pre, d, i32::MAX)?;
        sched::register_trace_prio_sched_wakeup_new(sched_wakeup_post, d, 0)?;
        sched::register_trace_prio_sched_waking(sched_wakeup_pre, d, i32::MAX)?;
        sched::register_trace_prio_sched_waking(sched_wakeup_post, d, 0)?;
        Ok(())
    } else {
        // Remove all (some may not be there after a failed register);
        // report the first failure.
        [
            sched::unregister_trace_sched_switch(sched_switch_pre, d),
            sched::unregister_trace_sched_switch(sched_switch_post, d),
            sched::unregister_trace_sched_wakeup(sched_wakeup_pre, d),
            sched::unregister_trace_sched_wakeup(sched_wakeup_post, d),
            sched::unregister_trace_sched_wakeup_new(sched_wakeup_pre, d),
            sched::unregister_trace_sched_wakeup_new(sched_wakeup_post, d),
            sched::unregister_trace_sched_waking(sched_wakeup_pre, d),
            sched::unregister_trace_sched_waking(sched_wakeup_post, d),
        ]
        .into_iter()
        .collect()
    }
}

/// Sets this CPU's flag of the filter at `arg` for the task running on it
/// (Linux: `ignore_task_cpu`).
fn ignore_task_cpu(arg: usize) {
    // SAFETY: `install` passes the address of a TrEventPid it borrows
    // until every CPU has run this.
    let p = unsafe { from_data(arg as *mut ()) };
    let pid = crate::sched::current_pid() as i32;
    p.ignore_pid().store(p.ignore_task(pid), Ordering::Relaxed);
}

/// Which list: `set_event_pid` or `set_event_notrace_pid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Pids,
    NoPids,
}

/// A copy of one list of `tr`.
pub fn pid_list(tr: &TraceArray, which: Which) -> PidFilter {
    let p = &tr.events.pid;
    crate::irqflags::without_interrupts(|| {
        let lists = p.lists.lock();
        match which {
            Which::Pids => lists.pids.clone(),
            Which::NoPids => lists.no_pids.clone(),
        }
    })
}

/// Sets or clears the PID_FILTER flag of every event of `tr`, the probe
/// events' included (Linux sets it on every write to a pid file and
/// clears it when no list is left).
fn pid_filter_flags(tr: &TraceArray, on: bool) {
    for f in tr.events.all_files() {
        if on {
            f.set_flags(flags::PID_FILTER);
        } else {
            f.clear_flags(flags::PID_FILTER);
        }
    }
}

/// Installs a list of `tr` (Linux: the end of `event_pid_write`, and
/// `ftrace_clear_event_pids`): publishes it for the probes; when the
/// array's first list appears, registers its probes and sets its events'
/// PID_FILTER flag; when the last goes, clears the flags first and then
/// unregisters them; recomputes every CPU's flag. A list that does not fit
/// is `ENOSPC`, and nothing changes.
pub fn install(tr: &TraceArray, which: Which, list: PidFilter) -> Result<(), Errno> {
    let p = &tr.events.pid;
    let _w = p.write.lock();
    let (was, now) = crate::irqflags::without_interrupts(|| {
        let mut lists = p.lists.lock();
        let was = lists.filtering();
        // ENOSPC before anything changed if the list does not fit.
        match which {
            Which::Pids => {
                p.pids.publish(&list)?;
                lists.pids = list;
            }
            Which::NoPids => {
                p.no_pids.publish(&list)?;
                lists.no_pids = list;
            }
        }
        Ok::<_, Errno>((was, lists.filtering()))
    })?;
    if now && !was {
        if let Err(e) = pid_events(p, true) {
            // Back to no list (there was none): nothing is filtered.
            let _ = pid_events(p, false);
            crate::irqflags::without_interrupts(|| {
                let mut lists = p.lists.lock();
                *lists = EventPidLists::new();
                // Empty lists always fit.
                let _ = p.pids.publish(&lists.pids);
                let _ = p.no_pids.publish(&lists.no_pids);
            });
            return Err(e);
        }
        pid_filter_flags(tr, true);
    }
    if was && !now {
        pid_filter_flags(tr, false);
        let _ = pid_events(p, false);
        p.ignore_pid
            .iter()
            .for_each(|f| f.store(false, Ordering::Relaxed));
        return Ok(());
    }
    if now {
        arch::smp_call_function(ignore_task_cpu, p.data() as usize);
        crate::irqflags::without_interrupts(|| ignore_task_cpu(p.data() as usize));
    }
    Ok(())
}

/// The `event-fork` rule for a fork (`parent` Some) or an exit.
fn follow(p: &TrEventPid, parent: Option<i32>, task: i32) {
    crate::irqflags::without_interrupts(|| {
        let mut lists = p.lists.lock();
        let mut new = lists.clone();
        if !new.follow_task(parent, task) {
            return;
        }
        // A child that does not fit is not followed (Linux's list can fail
        // to grow the same way, on ENOMEM); the checks come first so that
        // both lists stay as published.
        if new.pids.pids().count() > MAX_EVENT_PIDS || new.no_pids.pids().count() > MAX_EVENT_PIDS {
            return;
        }
        let _ = p.pids.publish(&new.pids);
        let _ = p.no_pids.publish(&new.no_pids);
        *lists = new;
    });
}

fn follow_fork(data: *mut (), parent: &TaskInfo, child: &TaskInfo) {
    // SAFETY: registered by `follow_probes` with a TrEventPid as data.
    follow(unsafe { from_data(data) }, Some(parent.pid), child.pid);
}

fn follow_exit(data: *mut (), task: &TaskInfo) {
    // SAFETY: registered by `follow_probes` with a TrEventPid as data.
    follow(unsafe { from_data(data) }, None, task.pid);
}

/// Registers or unregisters `p`'s probes on sched_process_fork and
/// sched_process_exit, if not already so; `registered` is the state.
fn follow_probes(p: &TrEventPid, registered: &mut bool, enable: bool) {
    if *registered == enable {
        return;
    }
    let d = p.data();
    let r = if enable {
        // Linux's priorities: the fork probe after every other probe, the
        // one that drops a task before them.
        sched::register_trace_prio_sched_process_fork(follow_fork, d, i32::MIN).and_then(|_| {
            sched::register_trace_prio_sched_process_exit(follow_exit, d, i32::MAX).inspect_err(
                |_| {
                    let _ = sched::unregister_trace_sched_process_fork(follow_fork, d);
                },
            )
        })
    } else {
        let a = sched::unregister_trace_sched_process_fork(follow_fork, d);
        let b = sched::unregister_trace_sched_process_exit(follow_exit, d);
        a.and(b)
    };
    match r {
        Ok(()) => *registered = enable,
        Err(e) => println!("trace: event-fork: cannot update the scheduler probes: {e:?}"),
    }
}

/// The `event-fork` option of `tr` changed (Linux:
/// `trace_event_follow_fork`): probes on the sched_process_fork and
/// sched_process_exit tracepoints follow the tasks for `tr`'s lists while
/// it is set.
pub fn trace_event_follow_fork(tr: &TraceArray, enable: bool) {
    let p = &tr.events.pid;
    let mut registered = p.write.lock();
    follow_probes(p, &mut registered, enable);
}

/// Called by the trace array after one of its options changed (Linux:
/// `set_tracer_flag`'s `TRACE_ITER_EVENT_FORK` case).
pub fn option_changed(tr: &TraceArray, change: &tracer::options::OptionChange) {
    use tracer::options::{OptionId, TraceOption};
    if change.id == OptionId::Core(TraceOption::EventFork) && change.changed {
        trace_event_follow_fork(tr, change.enabled);
    }
}

/// Takes `tr`'s pid filter down (Linux: `__ftrace_clear_event_pids` and
/// clearing `event-fork` in `__remove_instance`): no probe keeps its
/// address as data.
pub fn del_tr(tr: &TraceArray) {
    trace_event_follow_fork(tr, false);
    for which in [Which::Pids, Which::NoPids] {
        // Empty lists always fit.
        let _ = install(tr, which, PidFilter::new());
    }
}
