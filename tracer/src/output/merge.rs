//! Merging the per-CPU buffers into one time-ordered stream, as Linux's
//! trace iterator does (`__find_next_entry()` in kernel/trace/trace.c): look
//! at the next event of every CPU and take the one with the smallest
//! timestamp; on a tie the lowest CPU number wins (Linux compares with a
//! strict `<` while walking CPUs in order).
//!
//! The merger also lets a printer look at, or take, the next event of one
//! CPU: function_graph needs that to fold an entry and its return into one
//! `func();` line.

use alloc::vec::Vec;
use core::iter::Peekable;

/// Anything with a timestamp in ns (or clock ticks).
pub trait Timestamped {
    fn ts(&self) -> u64;
}

/// One event as the ring buffer hands it out: timestamp, payload (starting
/// with `struct trace_entry`) and the number of events lost just before it
/// (0 none, [`LOST_EVENTS_UNKNOWN`] lost but not counted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    pub ts: u64,
    pub payload: Vec<u8>,
    pub lost_events: u64,
}

/// Linux's `(unsigned long)-1` lost-events value: prints `[LOST EVENTS]`.
pub const LOST_EVENTS_UNKNOWN: u64 = u64::MAX;

impl TraceRecord {
    pub fn new(ts: u64, payload: Vec<u8>) -> Self {
        TraceRecord {
            ts,
            payload,
            lost_events: 0,
        }
    }
}

impl Timestamped for TraceRecord {
    fn ts(&self) -> u64 {
        self.ts
    }
}

/// Per-CPU streams merged by timestamp. Stream `i` is CPU `i`.
pub struct Merger<S: Iterator>
where
    S::Item: Timestamped,
{
    streams: Vec<Peekable<S>>,
}

impl<S: Iterator> Merger<S>
where
    S::Item: Timestamped,
{
    /// `streams[cpu]` yields that CPU's events in time order.
    pub fn new(streams: Vec<S>) -> Self {
        Merger {
            streams: streams.into_iter().map(Iterator::peekable).collect(),
        }
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.streams.len()
    }

    fn next_cpu_index(&mut self) -> Option<usize> {
        let mut best: Option<(usize, u64)> = None;
        for (cpu, s) in self.streams.iter_mut().enumerate() {
            if let Some(item) = s.peek() {
                let ts = item.ts();
                if best.is_none_or(|(_, b)| ts < b) {
                    best = Some((cpu, ts));
                }
            }
        }
        best.map(|(cpu, _)| cpu)
    }

    /// The next event overall, without taking it.
    pub fn peek(&mut self) -> Option<(usize, &S::Item)> {
        let cpu = self.next_cpu_index()?;
        self.streams[cpu].peek().map(|e| (cpu, e))
    }

    /// The next event of one CPU, without taking it.
    pub fn peek_cpu(&mut self, cpu: usize) -> Option<&S::Item> {
        self.streams.get_mut(cpu)?.peek()
    }

    /// Takes the next event of one CPU.
    pub fn next_cpu(&mut self, cpu: usize) -> Option<S::Item> {
        self.streams.get_mut(cpu)?.next()
    }

    /// True when every CPU is exhausted.
    pub fn is_empty(&mut self) -> bool {
        self.streams.iter_mut().all(|s| s.peek().is_none())
    }
}

impl<S: Iterator> Iterator for Merger<S>
where
    S::Item: Timestamped,
{
    type Item = (usize, S::Item);

    /// Takes the event with the smallest timestamp across CPUs.
    fn next(&mut self) -> Option<(usize, S::Item)> {
        let cpu = self.next_cpu_index()?;
        self.streams[cpu].next().map(|e| (cpu, e))
    }
}
