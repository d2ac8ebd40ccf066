//! The pid filter of trace events: `set_event_pid`, `set_event_notrace_pid`
//! and the `event-fork` option (Linux: kernel/trace/trace_events.c,
//! `event_pid_write()`, `trace_event_ignore_this_pid()`, the
//! `event_filter_pid_sched_*_probe_pre/post` probes, `ignore_task_cpu()`,
//! `trace_event_follow_fork()`).
//!
//! An event probe must decide in a few instructions whether the current
//! task is filtered out, so the decision is made ahead of time, per CPU:
//! [`IGNORE_PID`] says whether the task running on a CPU is to be ignored.
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

use crate::arch::{self, percpu};
use crate::events::sched;
use crate::fs::Errno;

/// Pids each list can hold.
pub const MAX_EVENT_PIDS: usize = 64;

/// The lists as edited by the files and by `event-fork` (the probes read
/// [`PIDS`] and [`NO_PIDS`]). Taken with interrupts off, so that the fork
/// probe cannot spin on it while the holder is preempted on its CPU.
static LISTS: Mutex<EventPidLists> = Mutex::new(EventPidLists::new());
static PIDS: PidSlots<MAX_EVENT_PIDS> = PidSlots::new();
static NO_PIDS: PidSlots<MAX_EVENT_PIDS> = PidSlots::new();

/// Whether the task running on each CPU is filtered out (Linux:
/// `tr->array_buffer.data->ignore_pid`, a per-CPU bool).
static IGNORE_PID: [AtomicBool; percpu::MAX_CPUS] =
    [const { AtomicBool::new(false) }; percpu::MAX_CPUS];

/// Serializes writers of the lists with the probe registration.
static PID_WRITE: Mutex<()> = Mutex::new(());

/// The published lists, as the rules want them.
struct Published;

impl PidLists for Published {
    #[inline(always)]
    fn pid_listed(&self, pid: i32) -> Option<bool> {
        PIDS.listed(pid)
    }
    #[inline(always)]
    fn no_pid_listed(&self, pid: i32) -> Option<bool> {
        NO_PIDS.listed(pid)
    }
}

#[inline(always)]
fn ignore_pid() -> &'static AtomicBool {
    &IGNORE_PID[percpu::cpu_id()]
}

/// Whether the event probe running now must drop its record because the
/// current task is filtered out (Linux: `trace_event_ignore_this_pid`,
/// which takes the event file to reach its trace array; there is one
/// trace array here). Asked only for events whose `PID_FILTER` flag is set.
#[inline(always)]
pub fn trace_event_ignore_this_pid() -> bool {
    ignore_pid().load(Ordering::Relaxed)
}

fn sched_switch_pre(_data: *mut (), _preempt: bool, prev: &TaskInfo, next: &TaskInfo, _s: u32) {
    ignore_pid().store(Published.switch_pre(prev.pid, next.pid), Ordering::Relaxed);
}

fn sched_switch_post(_data: *mut (), _preempt: bool, _prev: &TaskInfo, next: &TaskInfo, _s: u32) {
    ignore_pid().store(Published.switch_post(next.pid), Ordering::Relaxed);
}

fn sched_wakeup_pre(_data: *mut (), p: &TaskInfo, _target_cpu: i32) {
    let flag = ignore_pid();
    flag.store(
        Published.wakeup_pre(flag.load(Ordering::Relaxed), p.pid),
        Ordering::Relaxed,
    );
}

fn sched_wakeup_post(_data: *mut (), _p: &TaskInfo, _target_cpu: i32) {
    let flag = ignore_pid();
    let current = crate::sched::current_pid() as i32;
    flag.store(
        Published.wakeup_post(flag.load(Ordering::Relaxed), current),
        Ordering::Relaxed,
    );
}

/// Registers (or unregisters) the probes that keep [`IGNORE_PID`] current
/// (Linux: `register_pid_events` / `unregister_pid_events`), on the
/// scheduler's switch and wakeup tracepoints.
fn pid_events(on: bool) -> Result<(), Errno> {
    let d = core::ptr::null_mut();
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

/// Sets this CPU's flag for the task running on it (Linux: `ignore_task_cpu`).
fn ignore_task_cpu(_arg: usize) {
    let pid = crate::sched::current_pid() as i32;
    ignore_pid().store(Published.ignore_task(pid), Ordering::Relaxed);
}

/// Which list: `set_event_pid` or `set_event_notrace_pid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Pids,
    NoPids,
}

/// A copy of one list.
pub fn pid_list(which: Which) -> PidFilter {
    arch::without_interrupts(|| {
        let lists = LISTS.lock();
        match which {
            Which::Pids => lists.pids.clone(),
            Which::NoPids => lists.no_pids.clone(),
        }
    })
}

/// Installs a list (Linux: the end of `event_pid_write`, and
/// `ftrace_clear_event_pids`): publishes it for the probes; when the first
/// list appears, registers the probes and calls `pid_filter(true)` (which
/// sets the events' PID_FILTER flag); when the last goes, calls
/// `pid_filter(false)` first and then unregisters them; recomputes every
/// CPU's flag. A list that does not fit is `ENOSPC`, and nothing changes.
pub fn install(which: Which, list: PidFilter, pid_filter: impl Fn(bool)) -> Result<(), Errno> {
    let _w = PID_WRITE.lock();
    let (was, now) = arch::without_interrupts(|| {
        let mut lists = LISTS.lock();
        let was = lists.filtering();
        // ENOSPC before anything changed if the list does not fit.
        match which {
            Which::Pids => {
                PIDS.publish(&list)?;
                lists.pids = list;
            }
            Which::NoPids => {
                NO_PIDS.publish(&list)?;
                lists.no_pids = list;
            }
        }
        Ok::<_, Errno>((was, lists.filtering()))
    })?;
    if now && !was {
        if let Err(e) = pid_events(true) {
            // Back to no list (there was none): nothing is filtered.
            let _ = pid_events(false);
            arch::without_interrupts(|| {
                let mut lists = LISTS.lock();
                *lists = EventPidLists::new();
                // Empty lists always fit.
                let _ = PIDS.publish(&lists.pids);
                let _ = NO_PIDS.publish(&lists.no_pids);
            });
            return Err(e);
        }
        pid_filter(true);
    }
    if was && !now {
        pid_filter(false);
        let _ = pid_events(false);
        IGNORE_PID
            .iter()
            .for_each(|f| f.store(false, Ordering::Relaxed));
        return Ok(());
    }
    if now {
        arch::smp_call_function(ignore_task_cpu, 0);
        arch::without_interrupts(|| ignore_task_cpu(0));
    }
    Ok(())
}

/// The `event-fork` rule for a fork (`parent` Some) or an exit.
fn follow(parent: Option<i32>, task: i32) {
    arch::without_interrupts(|| {
        let mut lists = LISTS.lock();
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
        let _ = PIDS.publish(&new.pids);
        let _ = NO_PIDS.publish(&new.no_pids);
        *lists = new;
    });
}

fn follow_fork(_data: *mut (), parent: &TaskInfo, child: &TaskInfo) {
    follow(Some(parent.pid), child.pid);
}

fn follow_exit(_data: *mut (), task: &TaskInfo) {
    follow(None, task.pid);
}

/// The `event-fork` option changed (Linux: `trace_event_follow_fork`):
/// probes on the sched_process_fork and sched_process_exit tracepoints
/// follow the tasks while it is set.
pub fn trace_event_follow_fork(enable: bool) {
    let d = core::ptr::null_mut();
    let r = if enable {
        // Linux's priorities: the fork probe after every other probe, the
        // one that drops a task before them.
        sched::register_trace_prio_sched_process_fork(follow_fork, d, i32::MIN)
            .and_then(|_| sched::register_trace_prio_sched_process_exit(follow_exit, d, i32::MAX))
    } else {
        let a = sched::unregister_trace_sched_process_fork(follow_fork, d);
        let b = sched::unregister_trace_sched_process_exit(follow_exit, d);
        a.and(b)
    };
    if let Err(e) = r {
        println!("trace: event-fork: cannot update the scheduler probes: {e:?}");
    }
}

fn option_changed(tr: &super::trace::TraceArray, change: &tracer::options::OptionChange) {
    if !tr.is_global() {
        return;
    }
    use tracer::options::{OptionId, TraceOption};
    if change.id == OptionId::Core(TraceOption::EventFork) && change.changed {
        trace_event_follow_fork(change.enabled);
    }
}

/// Follows the `event-fork` option.
pub fn init() -> Result<(), Errno> {
    super::trace::OPTIONS_CHANGED.register(option_changed)
}
