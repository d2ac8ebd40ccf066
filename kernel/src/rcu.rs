//! The simplest RCU: "RCU-sched" grace periods (Linux: kernel/rcu/, the
//! `synchronize_rcu` that, since 4.20, also waits for preempt-off sections).
//!
//! A reader is any code that runs with preemption off: a tracepoint's
//! probes, an ftrace callback writing to a ring buffer. A writer that
//! replaced a pointer such readers follow (a probe list, a ring buffer's
//! pages, a trace array about to be freed) calls [`synchronize_sched`]: it
//! returns once every CPU has been seen with a preempt count of 0, that is,
//! outside every reader section that could still hold the old pointer.
//! The writer asks the other CPUs by an IPI to look at the count of the code
//! they interrupted, and repeats until each has answered 0 once. The IPI
//! also orders each reader's view: whatever a CPU does after taking it, it
//! sees what the writer stored before. A CPU running with interrupts off
//! takes the IPI only after that section. Readers must not sleep, and a
//! reader must not wait for a grace period (it would wait for itself).
use core::sync::atomic::{AtomicU64, Ordering};

use spin::Mutex;

use crate::arch::{self, percpu};

/// The CPUs that have answered "preempt count 0" in the current grace
/// period (one bit per CPU).
static QUIESCENT: AtomicU64 = AtomicU64::new(0);

/// One grace period at a time: two writers sharing [`QUIESCENT`] would
/// reset it under each other.
static GP_MUTEX: Mutex<()> = Mutex::new(());

fn note_quiescent(_: usize) {
    if percpu::this_cpu_preempt_count() == 0 {
        QUIESCENT.fetch_or(1 << percpu::cpu_id(), Ordering::SeqCst);
    }
}

/// Waits until every CPU has left the preempt-off sections it was in
/// (Linux: `synchronize_rcu`). The caller is not in one, so its own CPU
/// counts as quiescent.
pub fn synchronize_sched() {
    let _gp = GP_MUTEX.lock();
    core::sync::atomic::fence(Ordering::SeqCst);
    // Not migrated while this CPU's own bit is set.
    percpu::this_cpu_preempt_inc();
    let all = (1u64 << percpu::nr_cpus()) - 1;
    QUIESCENT.store(1 << percpu::cpu_id(), Ordering::SeqCst);
    while QUIESCENT.load(Ordering::SeqCst) != all {
        arch::smp_call_function(note_quiescent, 0);
        if QUIESCENT.load(Ordering::SeqCst) != all {
            // A CPU was in a preempt-off section: let it run a little
            // before asking again.
            for _ in 0..1000 {
                core::hint::spin_loop();
            }
        }
    }
    percpu::this_cpu_preempt_dec();
}
