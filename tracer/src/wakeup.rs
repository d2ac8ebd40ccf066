//! The wakeup latency tracers' bookkeeping (Linux:
//! kernel/trace/trace_sched_wakeup.c): which woken task is being timed,
//! and when its wait is a latency worth keeping.
//!
//! - On a wake-up (`probe_wakeup`), a task becomes *the* tracked one if it
//!   is more urgent (a lower `prio`) than the task that wakes it and than
//!   the one tracked already; `wakeup_rt` considers real-time tasks only.
//!   Its wake-up time is stamped ([`WakeupTracker::start`]).
//! - When a CPU switches to the tracked task (`probe_wakeup_sched_switch`),
//!   the time since the stamp is the wake-up latency, kept if
//!   `report_latency` says so; either way tracking starts over.
//! - A migration of the tracked task moves the CPU whose functions the
//!   tracer records (`wakeup_current_cpu`).
//!
//! The kernel side (kernel/src/trace/trace_sched_wakeup.rs) holds a
//! tracker under a lock with interrupts off, as Linux holds `wakeup_lock`,
//! and writes the records; this module only decides.

/// What the tracer knows of a task: its identity (any value unique while
/// the task lives, the kernel uses its address), its `prio` (lower is more
/// urgent) and whether it is a real-time task (Linux: `rt_task()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeTask {
    pub id: usize,
    pub prio: i32,
    pub rt: bool,
}

/// The state of one wakeup tracer (Linux's `wakeup_task`, `wakeup_cpu`,
/// `wakeup_current_cpu`, `wakeup_prio` and the wakee CPU's
/// `preempt_timestamp`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeupTracker {
    /// `wakeup_rt`: only real-time tasks are tracked.
    rt_only: bool,
    /// The tracked task's identity, if any.
    task: Option<usize>,
    /// The CPU the task was woken on (`wakeup_cpu`).
    cpu: Option<usize>,
    /// The CPU it is queued on now (`wakeup_current_cpu`).
    current_cpu: Option<usize>,
    /// Its `prio` (`wakeup_prio`; none tracked: the largest value, as
    /// Linux's `(unsigned)-1`).
    prio: u32,
    /// When it was woken (`data->preempt_timestamp`), in trace clock units.
    timestamp: u64,
}

impl WakeupTracker {
    /// A tracker for `wakeup` (`rt_only` false) or `wakeup_rt` (true),
    /// tracking nothing.
    pub const fn new(rt_only: bool) -> WakeupTracker {
        WakeupTracker {
            rt_only,
            task: None,
            cpu: None,
            current_cpu: None,
            prio: u32::MAX,
            timestamp: 0,
        }
    }

    /// True for the `wakeup_rt` tracker.
    pub fn rt_only(&self) -> bool {
        self.rt_only
    }

    /// Forgets the tracked task (`__wakeup_reset`).
    pub fn reset(&mut self) {
        let rt_only = self.rt_only;
        *self = WakeupTracker::new(rt_only);
    }

    /// Whether waking `p` while `curr_prio` is the waker's `prio` starts a
    /// new measurement (`probe_wakeup`'s test): not for a normal task under
    /// `wakeup_rt`, nor for a task no more urgent than the tracked one or
    /// than the waker. A `prio` below 0 is never valid and never tracked.
    pub fn wants(&self, p: &WakeTask, curr_prio: i32) -> bool {
        if self.rt_only && !p.rt {
            return false;
        }
        let Ok(prio) = u32::try_from(p.prio) else {
            return false;
        };
        prio < self.prio && p.prio < curr_prio
    }

    /// Tracks `p`, woken now (`now`) to run on `cpu`, replacing any task
    /// tracked so far (`probe_wakeup` once it holds the lock; the caller
    /// tested [`WakeupTracker::wants`] under the same lock). Returns false,
    /// changing nothing, if `p` no longer qualifies.
    pub fn start(&mut self, p: &WakeTask, curr_prio: i32, cpu: usize, now: u64) -> bool {
        if !self.wants(p, curr_prio) {
            return false;
        }
        self.task = Some(p.id);
        self.cpu = Some(cpu);
        self.current_cpu = Some(cpu);
        self.prio = p.prio as u32;
        self.timestamp = now;
        true
    }

    /// The tracked task, if any.
    pub fn task(&self) -> Option<usize> {
        self.task
    }

    /// The CPU the tracked task was woken on (`wakeup_cpu`).
    pub fn wakeup_cpu(&self) -> Option<usize> {
        self.cpu
    }

    /// The CPU whose functions are recorded (`wakeup_current_cpu`).
    pub fn current_cpu(&self) -> Option<usize> {
        self.current_cpu
    }

    /// The wake-up time stamp.
    pub fn timestamp(&self) -> u64 {
        self.timestamp
    }

    /// `probe_wakeup_migrate_task`: the tracked task moves to `cpu`.
    pub fn migrate(&mut self, id: usize, cpu: usize) {
        if self.task == Some(id) {
            self.current_cpu = Some(cpu);
        }
    }

    /// A switch to task `next` at `now`: if it is the tracked task, its
    /// wake-up latency (`T1 - T0`, 0 if the clock went backwards), and the
    /// tracking ends (`probe_wakeup_sched_switch` resets in every case
    /// once it holds the lock). None for any other task.
    pub fn switch_to(&mut self, next: usize, now: u64) -> Option<u64> {
        if self.task != Some(next) {
            return None;
        }
        let delta = now.saturating_sub(self.timestamp);
        self.reset();
        Some(delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(id: usize, rt_priority: i32) -> WakeTask {
        WakeTask {
            id,
            prio: 99 - rt_priority,
            rt: true,
        }
    }
    fn normal(id: usize) -> WakeTask {
        WakeTask {
            id,
            prio: 120,
            rt: false,
        }
    }

    #[test]
    fn wakeup_tracks_a_task_more_urgent_than_its_waker() {
        let mut t = WakeupTracker::new(false);
        // A normal task woken by a normal task: not more urgent.
        assert!(!t.wants(&normal(1), 120));
        assert!(!t.start(&normal(1), 120, 0, 5));
        assert_eq!(t.task(), None);
        // An RT task woken by a normal one is tracked.
        assert!(t.start(&rt(2, 50), 120, 3, 1000));
        assert_eq!(t.task(), Some(2));
        assert_eq!(t.wakeup_cpu(), Some(3));
        assert_eq!(t.current_cpu(), Some(3));
        assert_eq!(t.timestamp(), 1000);
        // Woken by a more urgent RT task: not tracked.
        assert!(!t.wants(&rt(3, 60), 10));
        // Less urgent than the tracked one: not tracked.
        assert!(!t.start(&rt(4, 40), 120, 1, 1100));
        assert!(!t.start(&rt(4, 50), 120, 1, 1100));
        assert_eq!(t.task(), Some(2));
        // More urgent: replaces it.
        assert!(t.start(&rt(5, 70), 120, 1, 1200));
        assert_eq!(
            (t.task(), t.wakeup_cpu(), t.timestamp()),
            (Some(5), Some(1), 1200)
        );
    }

    #[test]
    fn wakeup_tracks_a_normal_task_woken_by_a_less_urgent_one() {
        let mut t = WakeupTracker::new(false);
        let p = WakeTask {
            id: 7,
            prio: 115,
            rt: false,
        };
        assert!(t.start(&p, 120, 0, 1));
    }

    #[test]
    fn wakeup_rt_ignores_normal_tasks() {
        let mut t = WakeupTracker::new(true);
        assert!(t.rt_only());
        let p = WakeTask {
            id: 7,
            prio: 115,
            rt: false,
        };
        assert!(!t.start(&p, 120, 0, 1));
        assert!(!t.start(&normal(8), 140, 0, 1));
        assert!(t.start(&rt(9, 1), 120, 0, 1));
        // Reset keeps the kind.
        t.reset();
        assert_eq!(t, WakeupTracker::new(true));
    }

    #[test]
    fn switch_measures_and_ends_the_tracking() {
        let mut t = WakeupTracker::new(true);
        assert!(t.start(&rt(2, 50), 120, 1, 1000));
        // Another task switched in: nothing.
        assert_eq!(t.switch_to(3, 1500), None);
        assert_eq!(t.task(), Some(2));
        t.migrate(3, 0);
        assert_eq!(t.current_cpu(), Some(1));
        t.migrate(2, 0);
        assert_eq!((t.wakeup_cpu(), t.current_cpu()), (Some(1), Some(0)));
        assert_eq!(t.switch_to(2, 4000), Some(3000));
        assert_eq!(t.task(), None);
        // Tracking ended: the next less urgent task can be tracked again.
        assert!(t.start(&rt(4, 10), 120, 0, 5000));
        // A clock behind the stamp gives 0, not a wrapped value.
        assert_eq!(t.switch_to(4, 4000), Some(0));
    }

    #[test]
    fn negative_prio_is_never_tracked() {
        let t = WakeupTracker::new(false);
        let p = WakeTask {
            id: 1,
            prio: -1,
            rt: true,
        };
        assert!(!t.wants(&p, 120));
    }
}
