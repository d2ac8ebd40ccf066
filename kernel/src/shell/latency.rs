//! Workloads that make a known latency, for the latency tracers:
//!
//! - `latency irqsoff US`: spins US microseconds with interrupts off;
//! - `latency preemptoff US`: spins US microseconds with preemption off
//!   (interrupts on).
//!
//! The section is opened and closed in [`irqsoff_section`] /
//! [`preemptoff_section`], called from the named functions
//! [`latency_spin_irqsoff`] / [`latency_spin_preemptoff`]: the tracers
//! report the caller of the function that turned interrupts or
//! preemption off, so those are what `=> started at:` and `=> ended at:`
//! name (as Linux names the caller of `_raw_spin_lock_irqsave`). Inside,
//! the spin calls [`latency_spin_step`], a traced function, so that
//! `function-trace` has something to list.
use alloc::string::String;
use core::hint::black_box;

use super::Output;

/// One step of the spin: a traced function inside the section.
#[inline(never)]
pub fn latency_spin_step(n: u64) -> u64 {
    black_box(n.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(7))
}

/// Microseconds between two calls of [`latency_spin_step`]: a 20 ms
/// section lists 400 of them, which the ring buffer keeps whole.
const STEP_US: u64 = 50;

/// Spins until `us` microseconds have passed, calling
/// [`latency_spin_step`] every [`STEP_US`], and at least `us / STEP_US`
/// times: a virtual CPU the host deschedules mid-spin sees time jump, and
/// the section still lists its steps (it only gets longer). Returns a
/// value made from the steps.
#[inline(always)]
fn spin_us(us: u64) -> u64 {
    let now = crate::time::now_ns;
    let end = now().saturating_add(us.saturating_mul(1000));
    let (mut steps, mut taken) = (0, 0);
    loop {
        steps = latency_spin_step(steps) | 1;
        taken += 1;
        let next = now().saturating_add(STEP_US * 1000).min(end);
        while now() < next {
            core::hint::spin_loop();
        }
        if now() >= end && taken >= us / STEP_US {
            return steps;
        }
    }
}

/// Interrupts off for `us` microseconds.
#[inline(never)]
pub fn irqsoff_section(us: u64) -> u64 {
    let flags = crate::irqflags::local_irq_save();
    let steps = spin_us(us);
    crate::irqflags::local_irq_restore(flags);
    steps
}

/// Preemption off for `us` microseconds.
#[inline(never)]
pub fn preemptoff_section(us: u64) -> u64 {
    crate::sched::preempt_disable();
    let steps = spin_us(us);
    crate::sched::preempt_enable();
    steps
}

/// The function a trace names for `latency irqsoff`.
#[inline(never)]
pub fn latency_spin_irqsoff(us: u64) -> u64 {
    // Used after the call, so the call is not a tail call: the section's
    // caller is this function.
    black_box(irqsoff_section(us)) + 1
}

/// The function a trace names for `latency preemptoff`.
#[inline(never)]
pub fn latency_spin_preemptoff(us: u64) -> u64 {
    black_box(preemptoff_section(us)) + 1
}

/// The `latency` command.
pub fn command(args: &[String], out: &mut Output) {
    let _ = out;
    let usage = "usage: latency irqsoff|preemptoff MICROSECONDS";
    let (Some(kind), Some(n)) = (args.first(), args.get(1)) else {
        println!("{usage}");
        return;
    };
    let Ok(us) = n.parse::<u64>() else {
        println!("latency: invalid number '{n}'");
        return;
    };
    // At most a second: the console and the other CPUs wait meanwhile.
    if us > 1_000_000 {
        println!("latency: at most 1000000 microseconds");
        return;
    }
    match kind.as_str() {
        "irqsoff" => {
            black_box(latency_spin_irqsoff(us));
        }
        "preemptoff" => {
            black_box(latency_spin_preemptoff(us));
        }
        _ => println!("{usage}"),
    }
}
