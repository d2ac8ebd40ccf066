//! The decisions of the irqsoff family of latency tracers (Linux:
//! kernel/trace/trace_irqsoff.c): which of the `preemptirq` reports
//! starts or stops a critical section for each tracer, and the per-CPU
//! section state. The kernel side (kernel/src/trace/trace_irqsoff.rs) reads
//! the clock and the buffers; what it decides with is here.
//!
//! - `irqsoff` times stretches with interrupts off, `preemptoff` stretches
//!   with preemption off, `preemptirqsoff` stretches with either off.
//! - A section starts when the first of the traced conditions becomes
//!   true and stops when the last becomes false: with both traced, turning
//!   interrupts on while preemption stays off does not stop it (Linux's
//!   `!preempt_trace(pc) && irq_trace()` tests).

/// `TRACER_IRQS_OFF`: the tracer times interrupts off.
pub const TRACER_IRQS_OFF: u32 = 1 << 1;
/// `TRACER_PREEMPT_OFF`: the tracer times preemption off.
pub const TRACER_PREEMPT_OFF: u32 = 1 << 2;

/// The trace type of each tracer of the family, by name.
pub fn trace_type(tracer: &str) -> Option<u32> {
    match tracer {
        "irqsoff" => Some(TRACER_IRQS_OFF),
        "preemptoff" => Some(TRACER_PREEMPT_OFF),
        "preemptirqsoff" => Some(TRACER_IRQS_OFF | TRACER_PREEMPT_OFF),
        _ => None,
    }
}

/// `preempt_trace(pc)`: the tracer times preemption and it is off
/// (`preempt_count` is the count of the code that reported, not counting
/// the report's own).
#[inline(always)]
pub fn preempt_trace(trace_type: u32, preempt_count: u32) -> bool {
    trace_type & TRACER_PREEMPT_OFF != 0 && preempt_count != 0
}

/// `irq_trace()`: the tracer times interrupts and they are off.
#[inline(always)]
pub fn irq_trace(trace_type: u32, irqs_disabled: bool) -> bool {
    trace_type & TRACER_IRQS_OFF != 0 && irqs_disabled
}

/// What a report asks of the tracer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Start,
    Stop,
    None,
}

/// What `irq_disable` (`irqs_on` false) or `irq_enable` (true) asks
/// (Linux: `tracer_hardirqs_off` / `tracer_hardirqs_on`). Interrupts are
/// off at both reports.
pub fn on_irq_report(trace_type: u32, preempt_count: u32, irqs_on: bool) -> Action {
    if !preempt_trace(trace_type, preempt_count) && irq_trace(trace_type, true) {
        if irqs_on {
            Action::Stop
        } else {
            Action::Start
        }
    } else {
        Action::None
    }
}

/// What `preempt_disable` (`preempt_on` false) or `preempt_enable` (true)
/// asks (Linux: `tracer_preempt_off` / `tracer_preempt_on`); the count is
/// 1 at both reports.
pub fn on_preempt_report(
    trace_type: u32,
    preempt_count: u32,
    irqs_disabled: bool,
    preempt_on: bool,
) -> Action {
    if preempt_trace(trace_type, preempt_count) && !irq_trace(trace_type, irqs_disabled) {
        if preempt_on {
            Action::Stop
        } else {
            Action::Start
        }
    } else {
        Action::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tracer_times_its_own_condition() {
        let irq = trace_type("irqsoff").unwrap();
        let pre = trace_type("preemptoff").unwrap();
        assert_eq!(
            trace_type("preemptirqsoff"),
            Some(TRACER_IRQS_OFF | TRACER_PREEMPT_OFF)
        );
        assert_eq!(trace_type("wakeup"), None);
        // irqsoff: interrupts, whatever preemption does.
        assert_eq!(on_irq_report(irq, 0, false), Action::Start);
        assert_eq!(on_irq_report(irq, 1, false), Action::Start);
        assert_eq!(on_irq_report(irq, 0, true), Action::Stop);
        assert_eq!(on_preempt_report(irq, 1, false, false), Action::None);
        // preemptoff: preemption only.
        assert_eq!(on_irq_report(pre, 0, false), Action::None);
        assert_eq!(on_preempt_report(pre, 1, false, false), Action::Start);
        assert_eq!(on_preempt_report(pre, 1, true, false), Action::Start);
        assert_eq!(on_preempt_report(pre, 1, false, true), Action::Stop);
        assert_eq!(on_preempt_report(pre, 0, false, true), Action::None);
    }

    #[test]
    fn preemptirqsoff_spans_both() {
        let both = TRACER_IRQS_OFF | TRACER_PREEMPT_OFF;
        // Interrupts off first: the irq report starts the section...
        assert_eq!(on_irq_report(both, 0, false), Action::Start);
        // ...preemption off inside it changes nothing...
        assert_eq!(on_preempt_report(both, 1, true, false), Action::None);
        // ...interrupts on while preemption stays off does not stop it...
        assert_eq!(on_irq_report(both, 1, true), Action::None);
        // ...preemption on, interrupts on: the end.
        assert_eq!(on_preempt_report(both, 1, false, true), Action::Stop);
        // Preemption off first, then interrupts off and on inside it.
        assert_eq!(on_preempt_report(both, 1, false, false), Action::Start);
        assert_eq!(on_irq_report(both, 1, false), Action::None);
        assert_eq!(on_irq_report(both, 1, true), Action::None);
        assert_eq!(on_preempt_report(both, 1, false, true), Action::Stop);
    }
}
