//! Kernel threads and a preemptive round-robin scheduler (Linux: kernel/sched/).
//!
//! - Each CPU has a run queue of tasks ready to run and an idle task (pid 0,
//!   shown as `<idle>-0` in traces) that runs when the queue is empty.
//! - The timer tick sets `need_resched` when a task has used its time slice;
//!   the interrupt exit path then calls [`schedule`] (preemption).
//! - A task blocks on a [`WaitQueue`] or in [`sleep_ns`]; a waker makes it
//!   runnable again and queues it on a CPU.
//! - An idle CPU steals a task from the busiest other CPU, and every few
//!   ticks a CPU pulls one from a CPU whose run queue is at least two tasks
//!   longer (Linux: load_balance). A task that runs on a different CPU than
//!   the time before counts a migration.
//!
//! Locking: all scheduler state is touched with interrupts off. A task's
//! `pi_lock` orders "block" against "wake" (Linux uses p->pi_lock the same way)
//! and `on_cpu` stops a CPU from running a task that another CPU is still
//! switching away from.
mod task;
mod wait;

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use spin::Mutex;

use crate::arch::{self, percpu};
pub use task::{Pid, Task, TaskState};
pub use wait::WaitQueue;

/// Ticks a task may run before it is preempted.
const TIME_SLICE_TICKS: u32 = 2;
/// Ticks between two load-balancing passes of a CPU (Linux: the sched
/// domain's balance_interval).
const BALANCE_TICKS: u32 = 4;

struct RunQueue {
    tasks: VecDeque<Arc<Task>>,
}

static RUNQUEUES: [Mutex<RunQueue>; percpu::MAX_CPUS] = [const {
    Mutex::new(RunQueue {
        tasks: VecDeque::new(),
    })
}; percpu::MAX_CPUS];
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

/// A handle to wait for a spawned task.
pub struct JoinHandle {
    task: Arc<Task>,
}

impl JoinHandle {
    /// Blocks until the task has exited.
    pub fn join(self) {
        let task = self.task.clone();
        // wait_until returns early on Ctrl-C; a join waits for the exit anyway.
        while !self
            .task
            .exit_wait
            .wait_until(|| task.state() == TaskState::Dead)
        {}
    }
}

/// What `ps` shows for one task.
pub struct TaskInfo {
    pub pid: Pid,
    pub comm: String,
    pub cpu: usize,
    pub state: &'static str,
}

fn current_ptr() -> *const Task {
    percpu::this_cpu().current.load(Ordering::Relaxed) as *const Task
}

/// Calls `f` with the running task.
pub fn with_current<R>(f: impl FnOnce(&Task) -> R) -> R {
    // SAFETY: the running task's Task stays alive while it runs: TASKS or IDLE
    // holds a reference until finish_task_switch after its final switch.
    f(unsafe { &*current_ptr() })
}

/// The running task's pid (0 for the idle tasks and before the scheduler runs).
#[inline]
pub fn current_pid() -> Pid {
    let p = current_ptr();
    if p.is_null() {
        return 0;
    }
    // SAFETY: as in with_current.
    unsafe { (*p).pid }
}

/// Creates the boot CPU's idle task around the code running now.
pub fn init() {
    adopt_idle(0);
}

fn adopt_idle(cpu: usize) {
    let mut name = String::from("swapper/");
    push_num(&mut name, cpu);
    let idle = Arc::new(Task::new(0, &name, None, true));
    idle.cpu.store(cpu, Ordering::Relaxed);
    idle.on_cpu.store(true, Ordering::Relaxed);
    let ptr = Arc::into_raw(idle);
    IDLE[cpu].store(ptr as usize, Ordering::Relaxed);
    percpu::this_cpu()
        .current
        .store(ptr as usize, Ordering::Relaxed);
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
        arch::without_interrupts(schedule_locked_irqs);
        arch::enable_and_halt();
    }
}

fn spawn_inner<F: FnOnce() + Send + 'static>(cpu: Option<usize>, name: &str, f: F) -> JoinHandle {
    let pid = NEXT_PID.fetch_add(1, Ordering::Relaxed);
    let task = Arc::new(Task::new(
        pid,
        name,
        Some(alloc::boxed::Box::new(f)),
        cpu.is_some(),
    ));
    let target = cpu
        .filter(|&c| c < arch::nr_cpus())
        .unwrap_or_else(least_loaded_cpu);
    task.cpu.store(target, Ordering::Relaxed);
    crate::trace::trace::trace_save_cmdline(pid, task.comm());
    arch::without_interrupts(|| TASKS.lock().insert(pid, task.clone()));
    wake_up(&task);
    JoinHandle { task }
}

/// Starts a kernel thread on the least loaded CPU; it may migrate. `name`
/// becomes its comm (at most 15 bytes).
pub fn spawn<F: FnOnce() + Send + 'static>(name: &str, f: F) -> JoinHandle {
    spawn_inner(None, name, f)
}

/// Starts a kernel thread bound to `cpu`.
pub fn spawn_on<F: FnOnce() + Send + 'static>(cpu: usize, name: &str, f: F) -> JoinHandle {
    spawn_inner(Some(cpu), name, f)
}

fn least_loaded_cpu() -> usize {
    (0..arch::nr_cpus())
        .min_by_key(|&c| arch::without_interrupts(|| RUNQUEUES[c].lock().tasks.len()))
        .unwrap_or(0)
}

/// Makes a blocked task runnable and queues it (Linux: try_to_wake_up).
pub fn wake_up(task: &Arc<Task>) {
    arch::without_interrupts(|| {
        let _g = task.pi_lock.lock();
        if task.state() == TaskState::Dead {
            return;
        }
        task.set_state(TaskState::Runnable);
        if task.queued.swap(true, Ordering::AcqRel) {
            return; // still running or already queued
        }
        let cpu = task.cpu.load(Ordering::Relaxed);
        RUNQUEUES[cpu].lock().tasks.push_back(task.clone());
        if cpu != arch::cpu_id() {
            arch::apic::send_ipi(arch::apic_id(cpu), arch::apic::RESCHEDULE_VECTOR);
        } else {
            percpu::this_cpu().need_resched.store(1, Ordering::Relaxed);
        }
    });
}

/// Gives the CPU to another runnable task, if there is one.
pub fn yield_now() {
    arch::without_interrupts(schedule_locked_irqs);
}

/// Picks the next task and switches to it. Interrupts must be off.
fn schedule_locked_irqs() {
    let cpu = arch::cpu_id();
    let this = percpu::this_cpu();
    this.need_resched.store(0, Ordering::Relaxed);
    TICKS[cpu].store(0, Ordering::Relaxed);
    let prev_ptr = current_ptr();
    // SAFETY: the running task is alive (see with_current).
    let prev = unsafe { &*prev_ptr };
    let idle_ptr = IDLE[cpu].load(Ordering::Relaxed) as *const Task;

    // Lock order everywhere: a task's pi_lock, then a run queue lock.
    if !prev.is_idle {
        let _g = prev.pi_lock.lock();
        if prev.state() == TaskState::Runnable {
            // Still runnable: back to the end of the queue.
            // SAFETY: prev is alive and TASKS holds an Arc to it.
            RUNQUEUES[cpu]
                .lock()
                .tasks
                .push_back(unsafe { clone_arc(prev_ptr) });
        } else {
            prev.queued.store(false, Ordering::Release);
        }
    }
    let queued = RUNQUEUES[cpu].lock().tasks.pop_front();
    let next: *const Task = match queued.or_else(|| steal(cpu)) {
        // The Arc is dropped here, but TASKS still holds the task.
        Some(t) => Arc::as_ptr(&t),
        None => idle_ptr,
    };
    if next == prev_ptr {
        return;
    }
    // SAFETY: `next` came from a run queue (TASKS keeps it alive) or is idle.
    let next_task = unsafe { &*next };
    // Wait until the CPU that last ran `next` has fully switched away from it.
    while next_task.on_cpu.load(Ordering::Acquire) {
        core::hint::spin_loop();
    }
    next_task.on_cpu.store(true, Ordering::Relaxed);
    if next_task.cpu.swap(cpu, Ordering::Relaxed) != cpu {
        next_task.nr_migrations.fetch_add(1, Ordering::Relaxed);
    }
    this.current.store(next as usize, Ordering::Relaxed);
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
        RUNQUEUES[cpu].lock().tasks.push_back(task);
    }
}

/// Where a new task starts (called from `task_entry` in arch::switch).
#[no_mangle]
extern "C" fn task_start(_arg: u64) -> ! {
    finish_task_switch();
    // SAFETY: interrupts were off across the switch; the task runs with them on.
    arch::local_irq_restore(1 << 9);
    let entry = with_current(|t| t.entry.lock().take());
    if let Some(f) = entry {
        f();
    }
    exit_current()
}

/// Ends the running task.
pub fn exit_current() -> ! {
    arch::without_interrupts(|| {
        with_current(|t| {
            let _g = t.pi_lock.lock();
            t.set_state(TaskState::Dead);
        });
        with_current(|t| t.exit_wait.wake_all());
        schedule_locked_irqs();
    });
    unreachable!("a dead task was scheduled again");
}

/// Called by the timer interrupt on every CPU.
pub fn timer_tick() {
    let cpu = arch::cpu_id();
    if cpu == 0 {
        wake_sleepers();
        crate::trace::trace::trace_wakeup_tick();
    }
    if BALANCE[cpu].fetch_add(1, Ordering::Relaxed) + 1 >= BALANCE_TICKS {
        BALANCE[cpu].store(0, Ordering::Relaxed);
        load_balance(cpu);
    }
    let ticks = TICKS[cpu].fetch_add(1, Ordering::Relaxed) + 1;
    let idle =
        IDLE[cpu].load(Ordering::Relaxed) == percpu::this_cpu().current.load(Ordering::Relaxed);
    if ticks >= TIME_SLICE_TICKS || idle {
        percpu::this_cpu().need_resched.store(1, Ordering::Relaxed);
    }
}

/// The interrupt exit path: switch if a reschedule is due and allowed.
pub fn preempt_on_irq_exit() {
    let this = percpu::this_cpu();
    if this.need_resched.load(Ordering::Relaxed) != 0
        && this.preempt_count.load(Ordering::Relaxed) == 0
        && this.irq_depth.load(Ordering::Relaxed) == 0
        && this.exception_depth.load(Ordering::Relaxed) == 0
        && !current_ptr().is_null()
    {
        schedule_locked_irqs();
    }
}

/// Disables preemption on this CPU (nests; Linux: preempt_disable).
#[inline]
pub fn preempt_disable() {
    percpu::this_cpu()
        .preempt_count
        .fetch_add(1, Ordering::Relaxed);
}

/// Re-enables preemption.
#[inline]
pub fn preempt_enable() {
    percpu::this_cpu()
        .preempt_count
        .fetch_sub(1, Ordering::Relaxed);
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

/// Sleeps for at least `ns` nanoseconds (tick granularity).
pub fn sleep_ns(ns: u64) {
    let wake_at = crate::time::now_ns() + ns;
    while crate::time::now_ns() < wake_at {
        arch::without_interrupts(|| {
            with_current(|t| t.set_state(TaskState::Blocked));
            // SAFETY: the running task is alive and in TASKS.
            let me = unsafe { clone_arc(current_ptr()) };
            SLEEPERS.lock().push((wake_at, me));
            schedule_locked_irqs();
        });
        if crate::console::interrupt_pending() {
            break;
        }
    }
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
    arch::without_interrupts(|| {
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

static CONSOLE_WAIT: WaitQueue = WaitQueue::new();

/// Wakes tasks waiting for console input (called from the serial interrupt).
pub fn wake_console_readers() {
    CONSOLE_WAIT.wake_all();
}

/// Blocks until console input may be available.
pub fn wait_console_input() {
    CONSOLE_WAIT.wait_until(crate::console::input_available);
}
