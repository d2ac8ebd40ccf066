//! The task structure (Linux: struct task_struct, much reduced).
use alloc::boxed::Box;
use alloc::vec;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use spin::Mutex;
use tracer::fgraph::ShadowStack;
use tracer::rethook::RethookStack;
use tracer::trace_events::TaskInfo;

pub type Pid = u32;

const STACK_SIZE: usize = 64 * 1024;

/// The priority of a normal task (Linux: `DEFAULT_PRIO`, the `prio` of a
/// nice-0 SCHED_NORMAL task, 120). The idle tasks report it too, as
/// Linux's swapper tasks do.
pub const DEFAULT_PRIO: i32 = 120;
/// `MAX_RT_PRIO`: real-time tasks have `prio` 0..=98, below every normal
/// task (a lower `prio` is a more urgent task).
pub const MAX_RT_PRIO: i32 = 100;
/// The highest `rt_priority` a SCHED_FIFO task may have (Linux:
/// `MAX_RT_PRIO - 1`; the lowest is 1).
pub const MAX_USER_RT_PRIO: u32 = 99;

/// A task's scheduling policy (Linux: `SCHED_NORMAL` 0, `SCHED_FIFO` 1,
/// include/uapi/linux/sched.h; the value is what the latency header's
/// `policy:` shows).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SchedPolicy {
    /// Time-shared: round robin among the normal tasks, after every
    /// runnable real-time task.
    Normal,
    /// Real time, first in first out, with an `rt_priority` of 1..=99
    /// (higher is more urgent): runs until it blocks, yields, or a task
    /// of a higher priority wakes; never time-sliced.
    Fifo(u32),
}

impl SchedPolicy {
    /// SCHED_FIFO at `rt_priority`, or None outside 1..=99 (Linux's
    /// sched_setscheduler fails with EINVAL).
    pub fn fifo(rt_priority: u32) -> Option<SchedPolicy> {
        (1..=MAX_USER_RT_PRIO)
            .contains(&rt_priority)
            .then_some(SchedPolicy::Fifo(rt_priority))
    }

    /// The kernel-internal priority (Linux: `p->prio` from
    /// `normal_prio()`): `99 - rt_priority` for SCHED_FIFO, 120 for a
    /// normal task. The sched events report it.
    pub fn prio(self) -> i32 {
        match self {
            SchedPolicy::Normal => DEFAULT_PRIO,
            SchedPolicy::Fifo(rt) => MAX_RT_PRIO - 1 - rt as i32,
        }
    }

    /// The policy number (`SCHED_NORMAL` 0, `SCHED_FIFO` 1).
    pub fn number(self) -> u32 {
        match self {
            SchedPolicy::Normal => 0,
            SchedPolicy::Fifo(_) => 1,
        }
    }

    /// `rt_priority` (0 for a normal task).
    pub fn rt_priority(self) -> u32 {
        match self {
            SchedPolicy::Normal => 0,
            SchedPolicy::Fifo(rt) => rt,
        }
    }

    /// True for a real-time policy (Linux: `rt_task()`).
    pub fn is_rt(self) -> bool {
        matches!(self, SchedPolicy::Fifo(_))
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum TaskState {
    /// Running or waiting in a run queue (Linux: TASK_RUNNING).
    Runnable = 0,
    /// Waiting for a wake-up (TASK_INTERRUPTIBLE).
    Blocked = 1,
    /// Finished (TASK_DEAD).
    Dead = 2,
}

pub struct Task {
    pub pid: Pid,
    comm: [u8; 16],
    /// What the sched tracepoints pass for this task (comm, pid, prio):
    /// a probe that needs the task itself gets it back with
    /// [`Task::from_trace_info`], as Linux's probes get a `task_struct *`.
    info: TaskInfo,
    state: AtomicU8,
    /// The scheduling policy, set when the task is created (it fixes the
    /// `prio` in `info`, which probes read without a lock).
    pub policy: SchedPolicy,
    /// The CPU the task runs on or is queued on.
    pub cpu: AtomicUsize,
    /// True while a CPU is running the task or still switching away from it.
    pub on_cpu: AtomicBool,
    /// True while the task is running or in a run queue.
    pub queued: AtomicBool,
    /// Bound to its CPU: never migrated.
    pub pinned: bool,
    /// How many times the task ran on a different CPU than the time before
    /// (Linux: se.nr_migrations).
    pub nr_migrations: AtomicU64,
    pub is_idle: bool,
    /// Set while the task runs the kmem tracepoints' probes: an allocation
    /// they make fires no event (the heap's recursion guard).
    pub in_kmem_event: AtomicBool,
    /// Orders blocking against waking (Linux: p->pi_lock).
    pub pi_lock: Mutex<()>,
    /// The stack pointer saved by the context switch.
    pub saved_sp: UnsafeCell<u64>,
    _stack: Option<Box<[u8]>>,
    pub entry: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// Per-task state that tracing owns: function_graph's shadow return
    /// stack, the real return addresses of the traced calls in progress on
    /// this task's stack (Linux: task_struct's ret_stack, curr_ret_stack and
    /// trace_recursion). It travels with the task across preemption and
    /// migration. The scheduler only stores it: its type and logic are the
    /// `tracer` library's (tracer/src/fgraph.rs), and kernel/src/trace/fgraph.rs
    /// and the unwinder use it.
    pub ret_stack: ShadowStack,
    /// The kretprobes' hijacked returns in progress on this task's stack
    /// (Linux: task_struct's `rethooks`), apart from `ret_stack` so that a
    /// graph frame's index stays its depth: tracer/src/rethook.rs, used by
    /// kernel/src/trace/fgraph.rs's rethook part and the unwinder.
    pub rethooks: RethookStack,
}

// SAFETY: `saved_sp` is only accessed by the CPU that switches the task in or
// out, with interrupts off; everything else is atomic or locked.
unsafe impl Sync for Task {}
// SAFETY: as above.
unsafe impl Send for Task {}

impl Task {
    /// A task; `entry` None makes a task that adopts the current stack (idle).
    pub fn new(
        pid: Pid,
        name: &str,
        entry: Option<Box<dyn FnOnce() + Send>>,
        pinned: bool,
        policy: SchedPolicy,
    ) -> Task {
        let mut comm = [0u8; 16];
        let n = name.len().min(15);
        comm[..n].copy_from_slice(&name.as_bytes()[..n]);
        let is_idle = entry.is_none();
        let (stack, sp) = if is_idle {
            (None, 0)
        } else {
            let stack = vec![0u8; STACK_SIZE].into_boxed_slice();
            let top = stack.as_ptr() as u64 + STACK_SIZE as u64;
            let sp = crate::arch::switch::initial_stack(top, 0);
            (Some(stack), sp)
        };
        Task {
            pid,
            comm,
            info: TaskInfo {
                comm,
                pid: pid as i32,
                prio: policy.prio(),
            },
            policy,
            state: AtomicU8::new(TaskState::Runnable as u8),
            cpu: AtomicUsize::new(0),
            on_cpu: AtomicBool::new(false),
            queued: AtomicBool::new(is_idle),
            pinned: pinned || is_idle,
            nr_migrations: AtomicU64::new(0),
            is_idle,
            in_kmem_event: AtomicBool::new(false),
            pi_lock: Mutex::new(()),
            saved_sp: UnsafeCell::new(sp),
            _stack: stack,
            entry: Mutex::new(entry),
            ret_stack: ShadowStack::new(),
            rethooks: RethookStack::new(),
        }
    }

    /// The bounds `[bottom, top)` of the task's own stack; None for an
    /// idle task, which runs on its CPU's boot stack.
    pub fn stack_range(&self) -> Option<(u64, u64)> {
        self._stack.as_ref().map(|s| {
            let bottom = s.as_ptr() as u64;
            (bottom, bottom + s.len() as u64)
        })
    }

    /// `p->prio`: lower is more urgent (see [`SchedPolicy::prio`]).
    #[inline(always)]
    pub fn prio(&self) -> i32 {
        self.info.prio
    }

    /// The task's name (Linux: comm), at most 15 bytes.
    pub fn comm(&self) -> &str {
        let len = self.comm.iter().position(|&b| b == 0).unwrap_or(16);
        core::str::from_utf8(&self.comm[..len]).unwrap_or("?")
    }

    /// The task as the sched tracepoints describe it.
    #[inline(always)]
    pub fn trace_info(&self) -> &TaskInfo {
        &self.info
    }

    /// The task whose [`Task::trace_info`] is `info` (Linux's probes read
    /// the `task_struct` they are passed).
    ///
    /// # Safety
    /// `info` must be the `trace_info()` of a live task: the sched
    /// tracepoints are only fired by the scheduler, with its tasks' own
    /// `info`, and a probe may rely on that while it runs.
    pub unsafe fn from_trace_info(info: &TaskInfo) -> &Task {
        let off = core::mem::offset_of!(Task, info);
        // SAFETY: per the contract, `info` is the `info` field of a Task,
        // which starts `off` bytes before it.
        unsafe { &*((info as *const TaskInfo as *const u8).sub(off) as *const Task) }
    }

    pub fn state(&self) -> TaskState {
        match self.state.load(Ordering::Acquire) {
            0 => TaskState::Runnable,
            1 => TaskState::Blocked,
            _ => TaskState::Dead,
        }
    }

    pub fn set_state(&self, s: TaskState) {
        self.state.store(s as u8, Ordering::Release);
    }
}
