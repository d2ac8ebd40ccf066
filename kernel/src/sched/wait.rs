//! Wait queues (Linux: kernel/sched/wait.c, include/linux/wait.h): a task
//! that must wait for a condition adds itself to the queue and blocks;
//! whoever makes the condition true calls `wake_all`.
//!
//! [`WaitQueue::wait_until`] waits for its condition only (Linux:
//! `wait_event`). [`wait_event_interruptible`] also returns, with EINTR,
//! when Ctrl-C is pending (see `sched::signal`): while it sleeps its queue
//! is listed, so that `sched::send_sigint` can wake it (Linux:
//! `signal_wake_up`).
use alloc::sync::Arc;
use alloc::vec::Vec;

use spin::Mutex;

use super::signal::signal_pending;
use super::task::{Task, TaskState};
use super::{current, schedule_locked_irqs, wake_up};
use crate::fs::Errno;

pub struct WaitQueue {
    waiters: Mutex<Vec<Arc<Task>>>,
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitQueue {
    pub const fn new() -> Self {
        WaitQueue {
            waiters: Mutex::new(Vec::new()),
        }
    }

    /// Blocks until `cond()` is true. `cond` is checked under the queue's lock,
    /// so a `wake_all` after the condition became true is never missed.
    /// The idle task never blocks: it spins on `cond` instead.
    pub fn wait_until(&self, mut cond: impl FnMut() -> bool) {
        loop {
            let done = crate::irqflags::without_interrupts(|| {
                let mut w = self.waiters.lock();
                if cond() {
                    return true;
                }
                let Some(me) = current() else { return false };
                if me.is_idle {
                    return false;
                }
                me.set_state(TaskState::Blocked);
                w.push(me.arc());
                drop(w);
                schedule_locked_irqs();
                false
            });
            if done {
                return;
            }
        }
    }

    /// Wakes every waiting task.
    pub fn wake_all(&self) {
        let waiters =
            crate::irqflags::without_interrupts(|| core::mem::take(&mut *self.waiters.lock()));
        for t in waiters {
            wake_up(&t);
        }
    }
}

/// Wait queues that currently have a sleeper in [`wait_event_interruptible`],
/// as addresses, so that [`wake_interruptible`] can wake them.
static INTERRUPTIBLE_QUEUES: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Wakes every task sleeping in [`wait_event_interruptible`] so that it sees
/// the pending signal (Linux: `signal_wake_up`). Safe to call from an
/// interrupt handler.
pub(super) fn wake_interruptible() {
    crate::irqflags::without_interrupts(|| {
        for &addr in INTERRUPTIBLE_QUEUES.lock().iter() {
            // SAFETY: an address is in the list only while the task that put
            // it there is inside `wait_event_interruptible`, holding the
            // `&WaitQueue` it came from, and it removes it (under this lock)
            // before returning; so the queue is alive here.
            let wq = unsafe { &*(addr as *const WaitQueue) };
            wq.wake_all();
        }
    });
}

/// Sleeps until `cond()` is true, or returns EINTR if Ctrl-C is pending
/// first (Linux: `wait_event_interruptible`). Data producers wake the
/// sleeper with `wq.wake_all()`; Ctrl-C wakes it through `send_sigint`.
pub fn wait_event_interruptible(wq: &WaitQueue, cond: impl Fn() -> bool) -> Result<(), Errno> {
    let addr = wq as *const WaitQueue as usize;
    loop {
        if cond() {
            return Ok(());
        }
        if signal_pending() {
            return Err(Errno::EINTR);
        }
        crate::irqflags::without_interrupts(|| INTERRUPTIBLE_QUEUES.lock().push(addr));
        wq.wait_until(|| cond() || signal_pending());
        crate::irqflags::without_interrupts(|| {
            let mut queues = INTERRUPTIBLE_QUEUES.lock();
            if let Some(i) = queues.iter().position(|&a| a == addr) {
                queues.swap_remove(i);
            }
        });
    }
}
