//! Kernel threads and a preemptive priority scheduler (Linux: kernel/sched/).
//!
//! - Each CPU has a run queue of tasks ready to run and an idle task (pid 0,
//!   shown as `<idle>-0` in traces) that runs when the queue is empty.
//! - Two policies ([`SchedPolicy`]): SCHED_FIFO real-time tasks (Linux:
//!   kernel/sched/rt.c, much reduced) always run before normal ones, the
//!   most urgent first (lowest `prio`), each running until it blocks or
//!   yields; normal tasks share the CPU round robin. The run queue is kept
//!   in `prio` order, a task joining the tail of its priority level
//!   (a preempted real-time task its head, as Linux's `enqueue_task_rt`
//!   does for a task that did not give the CPU up).
//! - The timer tick sets `need_resched` when a normal task has used its
//!   time slice; the interrupt exit path then calls [`schedule`]
//!   (preemption). A wake-up sets it on the wakee's CPU when the wakee is
//!   more urgent than the task running there (Linux: `wakeup_preempt`),
//!   with an IPI if that CPU is another one.
//! - A task blocks on a [`WaitQueue`] or in [`sleep_ns`]; a waker makes it
//!   runnable again and queues it on a CPU.
//! - An idle CPU steals a task from the busiest other CPU, and every few
//!   ticks a CPU pulls one from a CPU whose run queue is at least two tasks
//!   longer (Linux: load_balance). A task that runs on a different CPU than
//!   the time before counts a migration.
//!
//! - Ctrl-C is a signal ([`signal`]); [`wait_event_interruptible`] is the
//!   wait that it interrupts.
//! - Other subsystems (tracing) see scheduler events through the sched
//!   tracepoints (`crate::events::sched`: `trace_sched_switch`,
//!   `trace_sched_wakeup`, `trace_sched_process_fork`, ...) and the
//!   [`SCHED_TICK`] hook, on which they register probes: the scheduler
//!   never imports them.
//!
//! Locking: all scheduler state is touched with interrupts off. A task's
//! `pi_lock` orders "block" against "wake" (Linux uses p->pi_lock the same way)
//! and `on_cpu` stops a CPU from running a task that another CPU is still
//! switching away from.
pub mod signal;
mod task;
mod wait;

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicUsize, Ordering};

use spin::Mutex;

use crate::arch::{self, percpu};
use crate::events::sched as events;
use crate::hook::Hook;
pub use signal::{clear_signal, signal_pending};
pub use task::{Pid, SchedPolicy, Task, TaskState, DEFAULT_PRIO, MAX_RT_PRIO, MAX_USER_RT_PRIO};
pub use wait::{wait_event_interruptible, WaitQueue};

/// Called by the timer interrupt on every CPU (Linux: scheduler_tick; what
/// tracing does here, Linux defers to irq_work). A hook, not a tracepoint:
/// Linux has no such event, and its one user (the wake-up of trace
/// readers) is registered for good at boot, so a static key would never
/// be off.
pub static SCHED_TICK: Hook<fn()> = Hook::new();

/// Ticks a task may run before it is preempted.
const TIME_SLICE_TICKS: u32 = 2;
/// Ticks between two load-balancing passes of a CPU (Linux: the sched
/// domain's balance_interval).
const BALANCE_TICKS: u32 = 4;

struct RunQueue {
    tasks: VecDeque<Arc<Task>>,
}

impl RunQueue {
    /// Queues `task` in `prio` order: at the tail of its priority level, or
    /// at its head for a real-time task that was preempted (Linux:
    /// `enqueue_task_rt` with ENQUEUE_HEAD). Normal tasks all have one
    /// priority, so among them the queue is round robin.
    fn enqueue(&mut self, task: Arc<Task>, head: bool) {
        let prio = task.prio();
        let pos = if head {
            self.tasks.iter().position(|t| t.prio() >= prio)
        } else {
            self.tasks.iter().position(|t| t.prio() > prio)
        };
        match pos {
            Some(i) => self.tasks.insert(i, task),
            None => self.tasks.push_back(task),
        }
    }
}

static RUNQUEUES: [Mutex<RunQueue>; percpu::MAX_CPUS] = [const {
    Mutex::new(RunQueue {
        tasks: VecDeque::new(),
    })
}; percpu::MAX_CPUS];
/// The `prio` a wake-up must beat to preempt each CPU (Linux reads
/// `rq->curr` under the run queue lock): the running task's, or
/// [`IDLE_PRIO`] while the CPU is idle or choosing its next task, when any
/// wake-up preempts. A waker reads it under the run queue lock.
static CURR_PRIO: [AtomicI32; percpu::MAX_CPUS] =
    [const { AtomicI32::new(IDLE_PRIO) }; percpu::MAX_CPUS];
/// The idle class, below every task (Linux: `MAX_PRIO`, 140). Only the
/// preemption check uses it: the idle tasks report 120 to the sched
/// events, as Linux's do.
const IDLE_PRIO: i32 = 140;
static IDLE: [AtomicUsize; percpu::MAX_CPUS] = [const { AtomicUsize::new(0) }; percpu::MAX_CPUS];
/// The task switched away from, for `finish_task_switch` on this CPU.
static PREV: [AtomicUsize; percpu::MAX_CPUS] = [const { AtomicUsize::new(0) }; percpu::MAX_CPUS];
static TICKS: [AtomicU32; percpu::MAX_CPUS] = [const { AtomicU32::new(0) }; percpu::MAX_CPUS];
/// Ticks since this CPU's last load-balancing pass.
static BALANCE: [AtomicU32; percpu::MAX_CPUS] = [const { AtomicU32::new(0) }; percpu::MAX_CPUS];
/// Every task but the idle tasks, by pid.
static TASKS: Mutex<BTreeMap<Pid, Arc<Task>>> = Mutex::new(BTreeMap::new());
static NEXT_PID: AtomicU32 = AtomicU32::new(1);
static SLEEPERS: Mutex<Vec<(u64, Arc<Task>)>> = Mutex::new(Vec::new());
/// Woken whenever a task exits; joiners check whether theirs did (Linux's
/// wait_chldexit, here one queue for the few joiners there are).
static EXIT_WAIT: WaitQueue = WaitQueue::new();

/// A handle to wait for a spawned task.
pub struct JoinHandle {
    task: Arc<Task>,
}

impl JoinHandle {
    /// The task's pid.
    pub fn pid(&self) -> Pid {
        self.task.pid
    }

    /// True once the task is blocked and no CPU is still switching away
    /// from it: a wake-up now is a real one (it queues the task).
    pub fn is_blocked(&self) -> bool {
        self.task.state() == TaskState::Blocked && !self.task.on_cpu.load(Ordering::Acquire)
    }

    /// Blocks until the task has exited.
    pub fn join(self) {
        EXIT_WAIT.wait_until(|| self.task.state() == TaskState::Dead);
    }
}

/// What `ps` shows for one task.
pub struct TaskInfo {
    pub pid: Pid,
    pub comm: String,
    pub cpu: usize,
    pub state: &'static str,
}

#[inline(always)]
fn current_ptr() -> *const Task {
    percpu::this_cpu_current() as *const Task
}

/// The running task, as code running on it sees it (Linux: `current`).
/// It derefs to the [`Task`]. It cannot be sent to, or shared with,
/// another task, and the task it names cannot end while code running on
/// that task (or an interrupt nested on it) holds it: that is what makes
/// [`current`] safe.
pub struct Current {
    task: &'static Task,
    _not_send: PhantomData<*const ()>,
}

impl core::ops::Deref for Current {
    type Target = Task;
    #[inline(always)]
    fn deref(&self) -> &Task {
        self.task
    }
}

impl Current {
    /// A counted reference to the running task (to queue it somewhere).
    pub fn arc(&self) -> Arc<Task> {
        // SAFETY: TASKS holds an Arc to every task but the idle ones, and
        // the idle tasks' Arcs are never released (IDLE keeps them).
        unsafe { clone_arc(self.task) }
    }
}

/// The running task, or None on a CPU where the scheduler has not started.
#[inline(always)]
pub fn current() -> Option<Current> {
    let p = current_ptr();
    // SAFETY: `current` is null or the running task, whose Task stays alive
    // while it runs: TASKS or IDLE holds a reference until
    // finish_task_switch after its final switch. The guard is !Send, so
    // the reference never leaves this task (see Current).
    let task = unsafe { p.as_ref() }?;
    Some(Current {
        task,
        _not_send: PhantomData,
    })
}

/// The running task's pid (0 for the idle tasks and before the scheduler runs).
#[inline(always)]
pub fn current_pid() -> Pid {
    current().map_or(0, |t| t.pid)
}

/// Creates the boot CPU's idle task around the code running now.
pub fn init() {
    adopt_idle(0);
}

fn adopt_idle(cpu: usize) {
    let mut name = String::from("swapper/");
    push_num(&mut name, cpu);
    let idle = Arc::new(Task::new(0, &name, None, true, SchedPolicy::Normal));
    idle.cpu.store(cpu, Ordering::Relaxed);
    idle.on_cpu.store(true, Ordering::Relaxed);
    let ptr = Arc::into_raw(idle);
    IDLE[cpu].store(ptr as usize, Ordering::Relaxed);
    // SAFETY: `ptr` came from Arc::into_raw just above and IDLE keeps it.
    let pid = unsafe { (*ptr).pid };
    percpu::this_cpu_set_current(ptr as usize, pid);
}

fn push_num(s: &mut String, n: usize) {
    use core::fmt::Write;
    let _ = write!(s, "{n}");
}

/// Becomes this CPU's idle loop: run queued tasks, otherwise halt.
pub fn run_idle(cpu: usize) -> ! {
    if IDLE[cpu].load(Ordering::Relaxed) == 0 {
        adopt_idle(cpu);
    }
    loop {
        crate::irqflags::without_interrupts(schedule_locked_irqs);
        crate::irqflags::safe_halt();
    }
}

fn spawn_inner<F: FnOnce() + Send + 'static>(
    cpu: Option<usize>,
    name: &str,
    policy: SchedPolicy,
    f: F,
) -> JoinHandle {
    let pid = NEXT_PID.fetch_add(1, Ordering::Relaxed);
    let task = Arc::new(Task::new(
        pid,
        name,
        Some(alloc::boxed::Box::new(f)),
        cpu.is_some(),
        policy,
    ));
    let target = cpu
        .filter(|&c| c < arch::nr_cpus())
        .unwrap_or_else(least_loaded_cpu);
    task.cpu.store(target, Ordering::Relaxed);
    crate::irqflags::without_interrupts(|| TASKS.lock().insert(pid, task.clone()));
    // Before the scheduler runs there is no parent task to report.
    if let Some(parent) = current() {
        events::trace_sched_process_fork(parent.trace_info(), task.trace_info());
    }
    if try_to_wake_up(&task, true) {
        preempt_check_resched();
    }
    JoinHandle { task }
}

/// Starts a kernel thread on the least loaded CPU; it may migrate. `name`
/// becomes its comm (at most 15 bytes).
pub fn spawn<F: FnOnce() + Send + 'static>(name: &str, f: F) -> JoinHandle {
    spawn_inner(None, name, SchedPolicy::Normal, f)
}

/// Starts a kernel thread bound to `cpu`.
pub fn spawn_on<F: FnOnce() + Send + 'static>(cpu: usize, name: &str, f: F) -> JoinHandle {
    spawn_inner(Some(cpu), name, SchedPolicy::Normal, f)
}

/// Runs `f` as a new task called `name` with policy `policy` and waits
/// for it to end (what a shell does for `chrt -f PRIO COMMAND`: fork, set
/// the policy, exec, wait). Unlike [`spawn`], `f` may borrow from the
/// caller, which is blocked until `f` has returned.
pub fn run_as<'a, F: FnOnce() + Send + 'a>(name: &str, policy: SchedPolicy, f: F) {
    let f: alloc::boxed::Box<dyn FnOnce() + Send + 'a> = alloc::boxed::Box::new(f);
    // SAFETY: only the lifetime is changed. The task runs `f` and exits;
    // this function does not return before `join` has seen it exit, so
    // everything `f` borrows outlives its use (and a panic stops the
    // kernel: no unwinding can return early).
    let f: alloc::boxed::Box<dyn FnOnce() + Send + 'static> = unsafe { core::mem::transmute(f) };
    spawn_inner(None, name, policy, f).join();
}

/// Starts a kernel thread with scheduling policy `policy`, bound to `cpu`
/// if given (Linux: a kthread made real-time with `sched_setscheduler`
/// before its first wake-up).
pub fn spawn_policy<F: FnOnce() + Send + 'static>(
    cpu: Option<usize>,
    name: &str,
    policy: SchedPolicy,
    f: F,
) -> JoinHandle {
    spawn_inner(cpu, name, policy, f)
}

fn least_loaded_cpu() -> usize {
    (0..arch::nr_cpus())
        .min_by_key(|&c| crate::irqflags::without_interrupts(|| RUNQUEUES[c].lock().tasks.len()))
        .unwrap_or(0)
}

/// Makes a blocked task runnable and queues it (Linux: try_to_wake_up).
pub fn wake_up(task: &Arc<Task>) {
    if try_to_wake_up(task, false) {
        preempt_check_resched();
    }
}

/// Switches now if a wake-up on this CPU asked for it and this context
/// may be preempted (Linux: `preempt_enable()` after the wake-up, with
/// CONFIG_PREEMPT): interrupts on, preemption on, not in an interrupt.
/// Any such point is one where a timer interrupt could preempt anyway.
fn preempt_check_resched() {
    let this = percpu::this_cpu();
    if percpu::this_cpu_need_resched()
        && !crate::irqflags::irqs_disabled()
        && percpu::this_cpu_preempt_count() == 0
        && this.irq_depth.load(Ordering::Relaxed) == 0
        && this.exception_depth.load(Ordering::Relaxed) == 0
        && !current_ptr().is_null()
    {
        crate::irqflags::without_interrupts(|| __schedule(true));
    }
}

/// Wakes `task`; `new` for its first wakeup (Linux: wake_up_new_task).
/// Linux reports sched_waking and sched_wakeup only for a task that was
/// sleeping, sched_wakeup_new for a new one. Returns true if a real-time
/// task now preempts the one running on this CPU, which the caller
/// switches to as soon as it may ([`preempt_check_resched`]); other
/// wake-ups on this CPU take effect at the next interrupt's exit, as
/// before priorities.
fn try_to_wake_up(task: &Arc<Task>, new: bool) -> bool {
    crate::irqflags::without_interrupts(|| {
        let _g = task.pi_lock.lock();
        let state = task.state();
        if state == TaskState::Dead {
            return false;
        }
        let was_blocked = state == TaskState::Blocked;
        if was_blocked {
            let cpu = task.cpu.load(Ordering::Relaxed);
            events::trace_sched_waking(task.trace_info(), cpu as i32);
        }
        task.set_state(TaskState::Runnable);
        let cpu = task.cpu.load(Ordering::Relaxed);
        // Still running (not yet switched out) or already queued: only
        // the state changes (Linux: ttwu_runnable).
        let queue = !task.queued.swap(true, Ordering::AcqRel);
        let mut preempt = false;
        // The events fire under the run queue lock (Linux: ttwu_do_wakeup
        // under rq->lock), so no CPU switches to the task before the
        // probes have seen it woken (the wakeup tracers time from here).
        let report = || {
            if new {
                events::trace_sched_wakeup_new(task.trace_info(), cpu as i32);
            } else if was_blocked {
                events::trace_sched_wakeup(task.trace_info(), cpu as i32);
            }
        };
        if queue {
            let mut rq = RUNQUEUES[cpu].lock();
            rq.enqueue(task.clone(), false);
            preempt = wakeup_preempt(task.prio(), CURR_PRIO[cpu].load(Ordering::Relaxed));
            report();
        } else {
            report();
        }
        if !preempt {
            return false;
        }
        if cpu != arch::cpu_id() {
            arch::apic::send_ipi(arch::apic_id(cpu), arch::apic::RESCHEDULE_VECTOR);
            false
        } else {
            percpu::this_cpu_set_need_resched();
            task.policy.is_rt()
        }
    })
}

/// Whether a task of `prio` waking on a CPU that runs a task of
/// `curr_prio` preempts it (Linux: `wakeup_preempt`): a more urgent task
/// does; among normal tasks every wake-up does (this scheduler's stand-in
/// for CFS's wake-up preemption, and how it behaved before priorities); a
/// normal task never preempts a real-time one, nor a real-time task one
/// of its own priority. The idle class ([`IDLE_PRIO`]) is always preempted.
fn wakeup_preempt(prio: i32, curr_prio: i32) -> bool {
    prio < curr_prio || (prio >= MAX_RT_PRIO && curr_prio >= MAX_RT_PRIO)
}

/// Gives the CPU to another runnable task, if there is one.
pub fn yield_now() {
    crate::irqflags::without_interrupts(schedule_locked_irqs);
}

/// Picks the next task and switches to it. Interrupts must be off.
fn schedule_locked_irqs() {
    __schedule(false);
}

/// The `prev_state` sched_switch reports (Linux:
/// `__trace_sched_switch_state`): 0 (`R`) for a runnable task, the bit of
/// TASK_INTERRUPTIBLE (`S`) for a blocked one, of EXIT_DEAD (`X`) for one
/// that exited.
fn sched_switch_state(t: &Task) -> u32 {
    match t.state() {
        TaskState::Runnable => 0,
        TaskState::Blocked => 0x01,
        TaskState::Dead => 0x10,
    }
}

/// The scheduler proper (Linux: `__schedule(sched_mode)`); `preempt` is
/// true when the interrupt exit path preempts the running task.
fn __schedule(preempt: bool) {
    let cpu = arch::cpu_id();
    percpu::this_cpu_clear_need_resched();
    TICKS[cpu].store(0, Ordering::Relaxed);
    let prev = current().expect("schedule() before the scheduler started on this CPU");
    let prev_ptr: *const Task = &*prev;
    let idle_ptr = IDLE[cpu].load(Ordering::Relaxed) as *const Task;

    // Lock order everywhere: a task's pi_lock, then a run queue lock.
    if !prev.is_idle {
        let _g = prev.pi_lock.lock();
        if prev.state() == TaskState::Runnable {
            // Still runnable: back in the queue, at the tail of its level;
            // a preempted real-time task at the head, to run again first.
            let head = preempt && prev.policy.is_rt();
            RUNQUEUES[cpu].lock().enqueue(prev.arc(), head);
        } else {
            prev.queued.store(false, Ordering::Release);
        }
    }
    let queued = {
        let mut rq = RUNQUEUES[cpu].lock();
        // Until the next task is chosen, any wake-up here preempts (a
        // waker queuing after this pop must not count on `prev`).
        CURR_PRIO[cpu].store(IDLE_PRIO, Ordering::Relaxed);
        rq.tasks.pop_front()
    };
    let next: *const Task = match queued.or_else(|| steal(cpu)) {
        // The Arc is dropped here, but TASKS still holds the task.
        Some(t) => Arc::as_ptr(&t),
        None => idle_ptr,
    };
    // SAFETY: `next` came from a run queue (TASKS keeps it alive) or is idle.
    let next_task = unsafe { &*next };
    let next_prio = if next_task.is_idle {
        IDLE_PRIO
    } else {
        next_task.prio()
    };
    CURR_PRIO[cpu].store(next_prio, Ordering::Relaxed);
    if next == prev_ptr {
        return;
    }
    // Wait until the CPU that last ran `next` has fully switched away from it.
    while next_task.on_cpu.load(Ordering::Acquire) {
        core::hint::spin_loop();
    }
    next_task.on_cpu.store(true, Ordering::Relaxed);
    let orig_cpu = next_task.cpu.swap(cpu, Ordering::Relaxed);
    if orig_cpu != cpu {
        // Linux: set_task_cpu.
        events::trace_sched_migrate_task(next_task.trace_info(), orig_cpu as i32, cpu as i32);
        next_task.nr_migrations.fetch_add(1, Ordering::Relaxed);
    }
    // The idle task gives the CPU up on its own (Linux: schedule_idle).
    events::trace_sched_switch(
        preempt && !prev.is_idle,
        prev.trace_info(),
        next_task.trace_info(),
        sched_switch_state(&prev),
    );
    percpu::this_cpu_set_current(next as usize, next_task.pid);
    PREV[cpu].store(prev_ptr as usize, Ordering::Relaxed);
    // SAFETY: interrupts are off; both stacks are alive; saved_sp is only
    // written here, by the CPU that runs the task.
    unsafe { arch::switch::switch(prev.saved_sp.get(), *next_task.saved_sp.get()) };
    finish_task_switch();
}

/// Clones an Arc from a raw pointer whose Arc is held elsewhere.
///
/// # Safety
/// `ptr` must come from `Arc::as_ptr`/`into_raw` of a live Arc<Task>.
unsafe fn clone_arc(ptr: *const Task) -> Arc<Task> {
    // SAFETY: per the contract, bump the count then take a new Arc.
    unsafe {
        Arc::increment_strong_count(ptr);
        Arc::from_raw(ptr)
    }
}

/// Runs on the new task right after a switch: releases the previous one.
fn finish_task_switch() {
    let cpu = arch::cpu_id();
    let prev = PREV[cpu].swap(0, Ordering::Relaxed) as *const Task;
    if prev.is_null() {
        return;
    }
    // SAFETY: the previous task is alive until released here.
    let prev_task = unsafe { &*prev };
    let dead = prev_task.state() == TaskState::Dead;
    prev_task.on_cpu.store(false, Ordering::Release);
    if dead {
        // Drop the scheduler's reference; the stack is freed with the last Arc.
        let removed = TASKS.lock().remove(&prev_task.pid);
        drop(removed);
    }
}

/// Takes a migratable task from the busiest other CPU.
fn steal(cpu: usize) -> Option<Arc<Task>> {
    let (victim, _) = busiest_other(cpu)?;
    detach_task(victim)
}

/// The other CPU with the longest run queue, and that length.
fn busiest_other(cpu: usize) -> Option<(usize, usize)> {
    (0..arch::nr_cpus())
        .filter(|&c| c != cpu)
        .map(|c| (c, RUNQUEUES[c].lock().tasks.len()))
        .max_by_key(|&(_, n)| n)
}

/// Removes the most recently queued task of `cpu`'s run queue that may move
/// (Linux: can_migrate_task): not pinned, and not still being switched away
/// from; two CPUs taking each other's outgoing task would otherwise wait for
/// each other forever in `schedule_locked_irqs`.
fn detach_task(cpu: usize) -> Option<Arc<Task>> {
    let mut rq = RUNQUEUES[cpu].lock();
    let pos = rq
        .tasks
        .iter()
        .rposition(|t| !t.pinned && !t.on_cpu.load(Ordering::Acquire))?;
    rq.tasks.remove(pos)
}

/// Pulls one task to `cpu` from the busiest other CPU when that CPU's run
/// queue is at least two tasks longer (Linux: load_balance, much reduced).
/// The task's `cpu` changes when it is switched in here.
fn load_balance(cpu: usize) {
    let mine = RUNQUEUES[cpu].lock().tasks.len();
    let Some((victim, theirs)) = busiest_other(cpu) else {
        return;
    };
    if theirs < mine + 2 {
        return;
    }
    if let Some(task) = detach_task(victim) {
        RUNQUEUES[cpu].lock().enqueue(task, false);
    }
}

/// Where a new task starts (called from `task_entry` in arch::switch).
#[no_mangle]
extern "C" fn task_start(_arg: u64) -> ! {
    finish_task_switch();
    // Interrupts were off across the switch; the task runs with them on.
    crate::irqflags::local_irq_enable();
    let entry = current().and_then(|t| t.entry.lock().take());
    if let Some(f) = entry {
        f();
    }
    exit_current()
}

/// Ends the running task.
pub fn exit_current() -> ! {
    // LAB 5 BEGIN: exit_current (the sched_process_exit call site)
    // LAB 5 STUB: if events::trace_sched_process_exit_enabled() {
    // LAB 5 STUB:     unimplemented!("lab 5: exit_current: fire the sched_process_exit tracepoint for the exiting task");
    // LAB 5 STUB: }
    if let Some(t) = current() {
        events::trace_sched_process_exit(t.trace_info());
    }
    // LAB 5 END
    crate::irqflags::without_interrupts(|| {
        if let Some(t) = current() {
            let _g = t.pi_lock.lock();
            t.set_state(TaskState::Dead);
        }
        EXIT_WAIT.wake_all();
        schedule_locked_irqs();
    });
    unreachable!("a dead task was scheduled again");
}

/// Called by the timer interrupt on every CPU.
pub fn timer_tick() {
    let cpu = arch::cpu_id();
    if cpu == 0 {
        wake_sleepers();
    }
    for probe in SCHED_TICK.probes() {
        probe();
    }
    if BALANCE[cpu].fetch_add(1, Ordering::Relaxed) + 1 >= BALANCE_TICKS {
        BALANCE[cpu].store(0, Ordering::Relaxed);
        load_balance(cpu);
    }
    let ticks = TICKS[cpu].fetch_add(1, Ordering::Relaxed) + 1;
    let idle =
        IDLE[cpu].load(Ordering::Relaxed) == percpu::this_cpu().current.load(Ordering::Relaxed);
    // SCHED_FIFO has no time slice (Linux: task_tick_rt).
    let fifo = current().is_some_and(|t| t.policy.is_rt());
    if (ticks >= TIME_SLICE_TICKS && !fifo) || idle {
        percpu::this_cpu_set_need_resched();
    }
}

/// The interrupt exit path: switch if a reschedule is due and allowed.
pub fn preempt_on_irq_exit() {
    let this = percpu::this_cpu();
    if percpu::this_cpu_need_resched()
        && percpu::this_cpu_preempt_count() == 0
        && this.irq_depth.load(Ordering::Relaxed) == 0
        && this.exception_depth.load(Ordering::Relaxed) == 0
        && !current_ptr().is_null()
    {
        __schedule(true);
    }
}

/// Disables preemption on this CPU (nests; Linux: preempt_disable, with
/// `preempt_count_add`'s report to the latency tracers: a static branch,
/// a NOP while nothing listens to `preemptirq:preempt_disable`).
#[inline(always)]
pub fn preempt_disable() {
    percpu::this_cpu_preempt_inc();
    if crate::static_branch_unlikely!(crate::events::preemptirq::__TRACEPOINT_KEY_preempt_disable) {
        crate::irqflags::trace_preempt_off();
    }
}

/// Re-enables preemption (Linux: preempt_enable_no_resched, with
/// `preempt_count_sub`'s report).
#[inline(always)]
pub fn preempt_enable() {
    if crate::static_branch_unlikely!(crate::events::preemptirq::__TRACEPOINT_KEY_preempt_enable) {
        crate::irqflags::trace_preempt_on();
    }
    percpu::this_cpu_preempt_dec();
}

/// [`preempt_disable`] without the report (Linux:
/// `preempt_disable_notrace`), for tracing's own short sections.
#[inline(always)]
pub fn preempt_disable_notrace() {
    percpu::this_cpu_preempt_inc();
}

/// [`preempt_enable`] without the report (Linux: `preempt_enable_notrace`).
#[inline(always)]
pub fn preempt_enable_notrace() {
    percpu::this_cpu_preempt_dec();
}

fn wake_sleepers() {
    let now = crate::time::now_ns();
    let mut due = Vec::new();
    {
        let mut sleepers = SLEEPERS.lock();
        sleepers.retain(|(at, t)| {
            if *at <= now {
                due.push(t.clone());
                false
            } else {
                true
            }
        });
    }
    for t in due {
        wake_up(&t);
    }
}

/// Sleeps for at least `ns` nanoseconds (tick granularity). Ctrl-C does
/// not cut it short: callers that sleep in a loop check `signal_pending`.
pub fn sleep_ns(ns: u64) {
    let wake_at = crate::time::now_ns() + ns;
    while crate::time::now_ns() < wake_at {
        crate::irqflags::without_interrupts(|| {
            let Some(me) = current() else { return };
            me.set_state(TaskState::Blocked);
            SLEEPERS.lock().push((wake_at, me.arc()));
            schedule_locked_irqs();
        });
    }
}

/// Ctrl-C: makes SIGINT pending and wakes the tasks in
/// [`wait_event_interruptible`] so that they see it (Linux: the tty's
/// `isig` sending SIGINT, then `signal_wake_up`). Safe in an interrupt.
pub fn send_sigint() {
    signal::raise_sigint();
    wait::wake_interruptible();
}

/// The scheduling policy of the task `pid` (the idle tasks' for 0), or
/// None if there is no such task (Linux: `sched_getscheduler`).
pub fn task_policy(pid: Pid) -> Option<SchedPolicy> {
    if pid == 0 {
        return Some(SchedPolicy::Normal);
    }
    crate::irqflags::without_interrupts(|| TASKS.lock().get(&pid).map(|t| t.policy))
}

/// Every task, for `ps` (idle tasks first).
pub fn tasks() -> Vec<TaskInfo> {
    let mut out = Vec::new();
    for idle in IDLE.iter().take(arch::nr_cpus()) {
        let p = idle.load(Ordering::Relaxed) as *const Task;
        if !p.is_null() {
            // SAFETY: idle tasks are never freed.
            out.push(info(unsafe { &*p }));
        }
    }
    crate::irqflags::without_interrupts(|| {
        for t in TASKS.lock().values() {
            out.push(info(t));
        }
    });
    out
}

fn info(t: &Task) -> TaskInfo {
    TaskInfo {
        pid: t.pid,
        comm: String::from(t.comm()),
        cpu: t.cpu.load(Ordering::Relaxed),
        state: match t.state() {
            TaskState::Runnable if t.on_cpu.load(Ordering::Relaxed) => "R (running)",
            TaskState::Runnable => "R",
            TaskState::Blocked => "S",
            TaskState::Dead => "X",
        },
    }
}
