//! The function tracer's `func-no-repeats` option (Linux 6.1,
//! kernel/trace/trace_functions.c: `is_repeat_check()`, `process_repeats()`;
//! trace.c: `trace_last_func_repeats()`).
//!
//! A function called again and again from the same place (a loop calling
//! `next_zone`) fills the buffer with identical lines. With the option set,
//! each CPU remembers the last `ip`/`parent_ip` it recorded. A call with the
//! same pair is not recorded: it only bumps a counter and remembers when it
//! happened. The next call with a different pair first writes one
//! `func_repeats` record (`struct func_repeats_entry`: the pair, the count,
//! and how long before this record the last repeat happened) and then its
//! own function event. `trace` prints the record as
//! `func <-parent (repeats: N, last_ts: T)`.
//!
//! The state is per CPU and used with preemption off, but an interrupt
//! that traces can arrive in the middle of a check: as Linux says, the
//! worst it does is spoil the count. The fields are atomics so that such a
//! nested use is well defined; each one is a plain load or store.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::entry::{FuncRepeatsEntry, TraceEntry};

/// The most repeats one record counts (`u16` in the record): the next
/// identical call after that is recorded as a new function event.
pub const MAX_REPEATS: u64 = u16::MAX as u64;

/// One CPU's last recorded call (Linux: `struct trace_func_repeats`).
#[derive(Debug, Default)]
pub struct FuncRepeats {
    ip: AtomicU64,
    parent_ip: AtomicU64,
    count: AtomicU64,
    ts_last_call: AtomicU64,
}

/// The repeats to report before the next function event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repeats {
    pub ip: u64,
    pub parent_ip: u64,
    pub count: u16,
    /// Trace clock of the last repeat.
    pub ts_last_call: u64,
}

impl Repeats {
    /// The `func_repeats` record for these repeats, written at time `ts`
    /// (Linux: `trace_last_func_repeats()`): the delta to the last repeat
    /// is kept in 48 bits, split into `top_delta_ts` and `bottom_delta_ts`.
    pub fn entry(&self, ent: TraceEntry, ts: u64) -> FuncRepeatsEntry {
        let delta = ts.wrapping_sub(self.ts_last_call);
        FuncRepeatsEntry {
            ent,
            ip: self.ip,
            parent_ip: self.parent_ip,
            count: self.count,
            top_delta_ts: (delta >> 32) as u16,
            bottom_delta_ts: delta as u32,
        }
    }
}

impl FuncRepeats {
    pub const fn new() -> FuncRepeats {
        FuncRepeats {
            ip: AtomicU64::new(0),
            parent_ip: AtomicU64::new(0),
            count: AtomicU64::new(0),
            ts_last_call: AtomicU64::new(0),
        }
    }

    /// `is_repeat_check()`: true if (`ip`, `parent_ip`) is the last recorded
    /// call and the count has room; the call is then counted (at time
    /// `now`) and must not be recorded.
    pub fn is_repeat(&self, ip: u64, parent_ip: u64, now: u64) -> bool {
        let count = self.count.load(Ordering::Relaxed);
        if self.ip.load(Ordering::Relaxed) == ip
            && self.parent_ip.load(Ordering::Relaxed) == parent_ip
            && count < MAX_REPEATS
        {
            self.ts_last_call.store(now, Ordering::Relaxed);
            self.count.store(count + 1, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// `process_repeats()`: (`ip`, `parent_ip`) is about to be recorded.
    /// Returns the repeats of the previous call, if any, which the caller
    /// records first; the count restarts at 0 for the new pair.
    pub fn process(&self, ip: u64, parent_ip: u64) -> Option<Repeats> {
        let count = self.count.load(Ordering::Relaxed);
        let pending = (count != 0).then(|| Repeats {
            ip: self.ip.load(Ordering::Relaxed),
            parent_ip: self.parent_ip.load(Ordering::Relaxed),
            count: count.min(MAX_REPEATS) as u16,
            ts_last_call: self.ts_last_call.load(Ordering::Relaxed),
        });
        if pending.is_some() {
            self.count.store(0, Ordering::Relaxed);
        }
        self.ip.store(ip, Ordering::Relaxed);
        self.parent_ip.store(parent_ip, Ordering::Relaxed);
        pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{TraceCtx, TRACE_FUNC_REPEATS};

    /// Feeds calls (ip, parent, time) through the option's logic and returns
    /// what would be recorded: `F(ip, parent, ts)` or `R(ip, parent, count, delta, ts)`.
    #[derive(Debug, PartialEq)]
    enum Rec {
        F(u64, u64, u64),
        R(u64, u64, u16, u64, u64),
    }

    fn run(calls: &[(u64, u64, u64)]) -> Vec<Rec> {
        let st = FuncRepeats::new();
        let mut out = Vec::new();
        for &(ip, parent, ts) in calls {
            if st.is_repeat(ip, parent, ts) {
                continue;
            }
            if let Some(r) = st.process(ip, parent) {
                let e = r.entry(
                    TraceEntry::new(TRACE_FUNC_REPEATS, TraceCtx::default(), 1),
                    ts,
                );
                out.push(Rec::R(e.ip, e.parent_ip, e.count, e.delta_ts(), ts));
            }
            out.push(Rec::F(ip, parent, ts));
        }
        out
    }

    #[test]
    fn identical_calls_fold_into_one_record() {
        let recs = run(&[
            (0xa, 0x1, 10),
            (0xa, 0x1, 20),
            (0xa, 0x1, 30),
            (0xa, 0x1, 45),
            (0xb, 0x1, 100),
        ]);
        assert_eq!(
            recs,
            [
                Rec::F(0xa, 0x1, 10),
                // Three repeats, the last 55 before the record.
                Rec::R(0xa, 0x1, 3, 55, 100),
                Rec::F(0xb, 0x1, 100),
            ]
        );
    }

    #[test]
    fn same_function_other_parent_is_not_a_repeat() {
        let recs = run(&[(0xa, 0x1, 1), (0xa, 0x2, 2), (0xa, 0x2, 3), (0xa, 0x1, 4)]);
        assert_eq!(
            recs,
            [
                Rec::F(0xa, 0x1, 1),
                Rec::F(0xa, 0x2, 2),
                Rec::R(0xa, 0x2, 1, 1, 4),
                Rec::F(0xa, 0x1, 4),
            ]
        );
    }

    #[test]
    fn no_record_without_repeats_and_pending_ones_wait() {
        // Alternating calls never repeat; trailing repeats stay pending
        // until a different call comes (Linux never flushes them).
        let recs = run(&[(1, 0, 1), (2, 0, 2), (1, 0, 3), (1, 0, 4)]);
        assert_eq!(recs, [Rec::F(1, 0, 1), Rec::F(2, 0, 2), Rec::F(1, 0, 3)]);
    }

    #[test]
    fn count_saturates_at_u16_max() {
        let st = FuncRepeats::new();
        assert_eq!(st.process(7, 8), None);
        for i in 0..MAX_REPEATS {
            assert!(st.is_repeat(7, 8, i), "{i}");
        }
        // The 65536th identical call is recorded as a new event, after
        // a record of 65535 repeats.
        assert!(!st.is_repeat(7, 8, MAX_REPEATS));
        let r = st.process(7, 8).unwrap();
        assert_eq!((r.count, r.ts_last_call), (u16::MAX, MAX_REPEATS - 1));
        assert!(st.is_repeat(7, 8, 0));
    }

    #[test]
    fn delta_is_split_in_48_bits() {
        let r = Repeats {
            ip: 1,
            parent_ip: 2,
            count: 9,
            ts_last_call: 1000,
        };
        let e = r.entry(TraceEntry::default(), 1000 + 0x1234_5678_9abc);
        assert_eq!((e.top_delta_ts, e.bottom_delta_ts), (0x1234, 0x5678_9abc));
        assert_eq!(e.delta_ts(), 0x1234_5678_9abc);
        // The record encodes to Linux's 32-byte layout and back.
        let mut buf = [0u8; FuncRepeatsEntry::SIZE];
        assert_eq!(e.encode(&mut buf), Ok(FuncRepeatsEntry::SIZE));
        assert_eq!(buf[24..26], 9u16.to_le_bytes());
        assert_eq!(buf[26..28], 0x1234u16.to_le_bytes());
        assert_eq!(buf[28..32], 0x5678_9abcu32.to_le_bytes());
        assert_eq!(FuncRepeatsEntry::decode(&buf).unwrap().count, 9);
    }
}
