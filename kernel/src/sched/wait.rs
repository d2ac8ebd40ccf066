//! Wait queues (Linux: kernel/sched/wait.c): a task that must wait for a
//! condition adds itself to the queue and blocks; whoever makes the condition
//! true calls `wake_all`.
use alloc::sync::Arc;
use alloc::vec::Vec;

use spin::Mutex;

use super::{clone_arc, current_ptr, schedule_locked_irqs, wake_up, Task, TaskState};
use crate::arch;

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
    /// Returns early (false) if the user typed Ctrl-C.
    pub fn wait_until(&self, mut cond: impl FnMut() -> bool) -> bool {
        loop {
            let done = arch::without_interrupts(|| {
                let me = current_ptr();
                let mut w = self.waiters.lock();
                if cond() {
                    return true;
                }
                // SAFETY: the running task is alive.
                let task = unsafe { &*me };
                if task.is_idle {
                    // The idle task must never block: spin instead.
                    return false;
                }
                task.set_state(TaskState::Blocked);
                // SAFETY: the running task is held by TASKS.
                w.push(unsafe { clone_arc(me) });
                drop(w);
                schedule_locked_irqs();
                false
            });
            if done {
                return true;
            }
            if crate::console::interrupt_pending() {
                return false;
            }
        }
    }

    /// Wakes every waiting task.
    pub fn wake_all(&self) {
        let waiters = arch::without_interrupts(|| core::mem::take(&mut *self.waiters.lock()));
        for t in waiters {
            wake_up(&t);
        }
    }
}
