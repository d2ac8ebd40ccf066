//! The worst latency a trace array has seen and what is saved with it
//! (Linux: kernel/trace/trace.c, `tr->max_latency`, `tracing_thresh`,
//! `__update_max_tr`, `tracing_nsecs_read`/`tracing_nsecs_write`;
//! `report_latency` of trace_irqsoff.c and trace_sched_wakeup.c).
//!
//! A latency tracer measures a stretch of time (interrupts off, a task
//! waiting to run). When [`report_latency`] says the stretch is worth
//! keeping, the tracer stores it as the array's `max_latency` and the
//! kernel swaps the live ring buffer with the spare one (`update_max_tr`),
//! so the trace of that stretch is kept while tracing goes on; the
//! [`MaxData`] saved with it heads the `trace` file (the latency header's
//! `latency:`, `task:`, `started at:` and `ended at:` lines).
//!
//! Both `tracing_max_latency` and `tracing_thresh` hold nanoseconds and
//! show and take microseconds ([`nsecs_show`], [`nsecs_write`]).

use alloc::format;
use alloc::string::String;

use crate::errno::Errno;
use crate::options::kstrtoul_from_user;
use crate::output::header::LatencyInfo;

/// `TASK_COMM_LEN`.
pub const TASK_COMM_LEN: usize = 16;

/// What `__update_max_tr` copies from the task that had the latency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaxTask {
    /// The task's name, NUL-padded.
    pub comm: [u8; TASK_COMM_LEN],
    pub pid: i32,
    pub uid: u32,
    /// `static_prio - 20 - MAX_RT_PRIO`: 0 for a nice-0 task.
    pub nice: i64,
    /// `SCHED_NORMAL` (0), `SCHED_FIFO` (1), `SCHED_RR` (2)...
    pub policy: i64,
    pub rt_priority: i64,
}

impl MaxTask {
    /// A task of the normal class with nice 0 and uid 0 (the only user of
    /// this kernel).
    pub fn new(comm: &[u8], pid: i32) -> MaxTask {
        let mut c = [0u8; TASK_COMM_LEN];
        let n = comm
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(comm.len())
            .min(TASK_COMM_LEN - 1);
        c[..n].copy_from_slice(&comm[..n]);
        MaxTask {
            comm: c,
            pid,
            ..MaxTask::default()
        }
    }

    /// The name as text (up to the first NUL).
    pub fn comm_str(&self) -> &str {
        let n = self
            .comm
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(TASK_COMM_LEN);
        core::str::from_utf8(&self.comm[..n]).unwrap_or("?")
    }
}

/// What a latency tracer passes with a new maximum: the task, and for the
/// irqsoff family the addresses that turned interrupts or preemption off
/// and on again (0 for the wake-up tracers, whose header has no
/// `started at:` lines).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaxCause {
    pub task: MaxTask,
    /// Linux: `data->critical_start`.
    pub critical_start: u64,
    /// Linux: `data->critical_end`.
    pub critical_end: u64,
    /// When the stretch began, in the trace clock (Linux:
    /// `data->preempt_timestamp`): the saved trace is shown from there.
    pub time_start: u64,
}

/// The saved data of the worst case (Linux: the max buffer's
/// `trace_array_cpu` of `max_buf->cpu`, and `max_buf->time_start`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaxData {
    /// `saved_latency`, in ns: the array's `max_latency` when it was saved.
    pub saved_latency_ns: u64,
    /// `max_buf->cpu`: the CPU that had the latency.
    pub cpu: u32,
    pub cause: MaxCause,
}

impl MaxData {
    /// `__update_max_tr`: the data saved with a swap.
    pub fn new(max_latency_ns: u64, cpu: usize, cause: MaxCause) -> MaxData {
        MaxData {
            saved_latency_ns: max_latency_ns,
            cpu: cpu as u32,
            cause,
        }
    }

    /// The latency header's fields for this data (`print_trace_header`),
    /// on a kernel called `release` with preemption model `model`.
    pub fn latency_info(&self, release: &str, model: &'static str) -> LatencyInfo {
        let t = &self.cause.task;
        LatencyInfo {
            release: String::from(release),
            saved_latency_ns: self.saved_latency_ns,
            cpu: self.cpu,
            preempt_model: model,
            comm: String::from(t.comm_str()),
            pid: t.pid,
            uid: t.uid,
            nice: t.nice,
            policy: t.policy,
            rt_priority: t.rt_priority,
            critical_start: self.cause.critical_start,
            critical_end: self.cause.critical_end,
        }
    }
}

/// Should a latency of `delta` ns be recorded (Linux: `report_latency`)?
/// With a threshold (`tracing_thresh`, ns) every latency at or above it
/// is, even one below the current maximum; without one only a new
/// maximum is.
pub fn report_latency(tracing_thresh_ns: u64, max_latency_ns: u64, delta: u64) -> bool {
    if tracing_thresh_ns != 0 {
        delta >= tracing_thresh_ns
    } else {
        delta > max_latency_ns
    }
}

/// The text of `tracing_max_latency` or `tracing_thresh` holding `ns`
/// (Linux: `tracing_nsecs_read`: `"%ld\n"` of the microseconds, or `-1`
/// for `ULONG_MAX`).
pub fn nsecs_show(ns: u64) -> String {
    if ns == u64::MAX {
        String::from("-1\n")
    } else {
        format!("{}\n", ns / 1000)
    }
}

/// A write to `tracing_max_latency` or `tracing_thresh` (Linux:
/// `tracing_nsecs_write`): microseconds as `kstrtoul_from_user(.., 10)`
/// reads them, times 1000 in 64 bits (it wraps, as Linux's does).
pub fn nsecs_write(input: &[u8]) -> Result<u64, Errno> {
    Ok(kstrtoul_from_user(input, 10)?.wrapping_mul(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_latency_without_threshold_wants_a_new_maximum() {
        assert!(report_latency(0, 0, 1));
        assert!(!report_latency(0, 0, 0));
        assert!(report_latency(0, 500, 501));
        assert!(!report_latency(0, 500, 500));
        assert!(!report_latency(0, 500, 20));
    }

    #[test]
    fn report_latency_with_threshold_takes_everything_above_it() {
        // Below the current maximum, but above the threshold: recorded.
        assert!(report_latency(100, 5000, 100));
        assert!(report_latency(100, 5000, 150));
        assert!(!report_latency(100, 5000, 99));
        assert!(!report_latency(100, 0, 99));
    }

    #[test]
    fn nsecs_files_show_microseconds_and_minus_one() {
        assert_eq!(nsecs_show(0), "0\n");
        assert_eq!(nsecs_show(1999), "1\n");
        assert_eq!(nsecs_show(250_000), "250\n");
        assert_eq!(nsecs_show(u64::MAX), "-1\n");
        assert_eq!(nsecs_write(b"250\n"), Ok(250_000));
        assert_eq!(nsecs_write(b"0"), Ok(0));
        assert_eq!(nsecs_write(b"-1"), Err(Errno::EINVAL));
        assert_eq!(nsecs_write(b"abc"), Err(Errno::EINVAL));
        assert_eq!(nsecs_write(b""), Err(Errno::EINVAL));
        assert_eq!(nsecs_write(b"18446744073709551616"), Err(Errno::ERANGE));
        // Linux multiplies in 64 bits: ULONG_MAX µs wraps.
        assert_eq!(
            nsecs_show(nsecs_write(b"18446744073709551615").unwrap()),
            "18446744073709550\n"
        );
    }

    #[test]
    fn saved_data_fills_the_latency_header() {
        let task = MaxTask::new(b"spin\0\0", 7);
        assert_eq!(task.comm_str(), "spin");
        let cause = MaxCause {
            task,
            critical_start: 0x1000,
            critical_end: 0x2000,
            time_start: 55,
        };
        let d = MaxData::new(123_456, 2, cause);
        let lat = d.latency_info("0.1.0", "preempt");
        assert_eq!(lat.saved_latency_ns, 123_456);
        assert_eq!(lat.cpu, 2);
        assert_eq!(lat.comm, "spin");
        assert_eq!(lat.pid, 7);
        assert_eq!(lat.critical_start, 0x1000);
        assert_eq!(lat.critical_end, 0x2000);
        // A name longer than TASK_COMM_LEN - 1 is cut as Linux's comm.
        let long = MaxTask::new(b"abcdefghijklmnopqrstuvwxyz", 1);
        assert_eq!(long.comm_str(), "abcdefghijklmno");
    }
}
