//! Merging the per-CPU buffers into one time-ordered stream, as Linux's
//! trace iterator does (`__find_next_entry()` in kernel/trace/trace.c): look
//! at the next event of every CPU and take the one with the smallest
//! timestamp; on a tie the lowest CPU number wins (Linux compares with a
//! strict `<` while walking CPUs in order).
//!
//! Each CPU is read through a [`CpuReader`]: the kernel supplies one over its
//! ring buffer (a non-consuming iterator for `trace`, a consuming reader for
//! `trace_pipe`); tests and tools use any iterator of [`TraceRecord`]s.
//! The merger also lets a printer look at, or take, the next event of one
//! CPU ([`EventSource`]): function_graph needs that to fold an entry and its
//! return into one `func();` line.

use alloc::vec::Vec;
use core::iter::Peekable;

/// One event as the ring buffer hands it out: timestamp, payload (starting
/// with `struct trace_entry`) and the number of events lost just before it
/// (0 none, [`LOST_EVENTS_UNKNOWN`] lost but not counted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    pub ts: u64,
    pub payload: Payload,
    pub lost_events: u64,
}

/// Linux's `(unsigned long)-1` lost-events value: prints `[LOST EVENTS]`.
pub const LOST_EVENTS_UNKNOWN: u64 = u64::MAX;

impl TraceRecord {
    pub fn new(ts: u64, payload: impl Into<Payload>) -> Self {
        TraceRecord {
            ts,
            payload: payload.into(),
            lost_events: 0,
        }
    }

    /// A record holding a copy of `payload` (no allocation for the common
    /// sizes, see [`Payload`]).
    #[inline]
    pub fn from_slice(ts: u64, payload: &[u8], lost_events: u64) -> Self {
        TraceRecord {
            ts,
            payload: Payload::from_slice(payload),
            lost_events,
        }
    }
}

/// The bytes of one record, copied out of the ring buffer for the printer.
/// Records of up to [`Payload::INLINE`] bytes (a function event is 24, a
/// function_graph return 40, a sched_switch 64) are held inline, so taking
/// an event from the buffer does not go to the heap (the heap's first-fit
/// walk was the largest part of printing one line); longer ones
/// (`trace_printk`, stack traces) are held in a `Vec`.
#[derive(Clone)]
pub struct Payload(Repr);

#[derive(Clone)]
enum Repr {
    Inline(u8, [u8; Payload::INLINE]),
    Heap(Vec<u8>),
}

impl Payload {
    /// The longest payload held without an allocation.
    pub const INLINE: usize = 64;

    /// A copy of `b`.
    #[inline]
    pub fn from_slice(b: &[u8]) -> Self {
        if b.len() <= Self::INLINE {
            let mut buf = [0u8; Self::INLINE];
            buf[..b.len()].copy_from_slice(b);
            Payload(Repr::Inline(b.len() as u8, buf))
        } else {
            Payload(Repr::Heap(b.to_vec()))
        }
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline(len, buf) => &buf[..*len as usize],
            Repr::Heap(v) => v,
        }
    }

    /// The bytes as a vector.
    pub fn to_vec(&self) -> Vec<u8> {
        self.as_slice().to_vec()
    }
}

impl From<Vec<u8>> for Payload {
    fn from(v: Vec<u8>) -> Self {
        if v.len() <= Self::INLINE {
            Self::from_slice(&v)
        } else {
            Payload(Repr::Heap(v))
        }
    }
}

impl From<&[u8]> for Payload {
    fn from(b: &[u8]) -> Self {
        Self::from_slice(b)
    }
}

impl core::ops::Deref for Payload {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for Payload {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl core::fmt::Debug for Payload {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Payload {}

impl PartialEq<[u8]> for Payload {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<Vec<u8>> for Payload {
    fn eq(&self, other: &Vec<u8>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl PartialEq<Payload> for Vec<u8> {
    fn eq(&self, other: &Payload) -> bool {
        self.as_slice() == other.as_slice()
    }
}

/// The events of one CPU in time order (Linux: a `ring_buffer_iter` for
/// `trace`, `ring_buffer_peek`/`ring_buffer_consume` for `trace_pipe`).
pub trait CpuReader {
    /// The next event, not taken.
    fn peek(&mut self) -> Option<&TraceRecord>;
    /// Takes the next event.
    fn next(&mut self) -> Option<TraceRecord>;
    /// Timestamp of the next event (a reader may answer without copying it).
    fn peek_ts(&mut self) -> Option<u64> {
        self.peek().map(|r| r.ts)
    }
}

impl<I: Iterator<Item = TraceRecord>> CpuReader for Peekable<I> {
    fn peek(&mut self) -> Option<&TraceRecord> {
        Peekable::peek(self)
    }
    fn next(&mut self) -> Option<TraceRecord> {
        Iterator::next(self)
    }
}

/// Where the printer gets events: the merged stream plus per-CPU look-ahead.
/// Implemented by [`Merger`].
pub trait EventSource {
    /// Takes the next event in time order: `(cpu, record)`.
    fn next_event(&mut self) -> Option<(usize, TraceRecord)>;
    /// Timestamp of the event that would come next overall.
    fn peek_next_ts(&mut self) -> Option<u64>;
    /// The next event of `cpu`, not taken.
    fn peek_cpu(&mut self, cpu: usize) -> Option<&TraceRecord>;
    /// Takes the next event of `cpu`.
    fn next_cpu(&mut self, cpu: usize) -> Option<TraceRecord>;
}

/// Per-CPU readers merged by timestamp. Reader `i` is CPU `i`; a CPU that is
/// not shown (`per_cpu/cpuN/trace`) gets a reader with no events, so that
/// the CPU numbers stay right.
pub struct Merger<R: CpuReader> {
    readers: Vec<R>,
}

impl<I: Iterator<Item = TraceRecord>> Merger<Peekable<I>> {
    /// `streams[cpu]` yields that CPU's events in time order.
    pub fn new(streams: Vec<I>) -> Self {
        Merger {
            readers: streams.into_iter().map(Iterator::peekable).collect(),
        }
    }
}

impl<R: CpuReader> Merger<R> {
    /// `readers[cpu]` reads that CPU.
    pub fn from_readers(readers: Vec<R>) -> Self {
        Merger { readers }
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.readers.len()
    }

    /// `__find_next_entry()`: the CPU whose next event is the oldest, and
    /// that event's timestamp.
    fn find_next(&mut self) -> Option<(usize, u64)> {
        let mut best: Option<(usize, u64)> = None;
        for (cpu, r) in self.readers.iter_mut().enumerate() {
            if let Some(ts) = r.peek_ts() {
                if best.is_none_or(|(_, b)| ts < b) {
                    best = Some((cpu, ts));
                }
            }
        }
        best
    }

    /// The next event overall, without taking it.
    pub fn peek(&mut self) -> Option<(usize, &TraceRecord)> {
        let (cpu, _) = self.find_next()?;
        self.readers[cpu].peek().map(|e| (cpu, e))
    }

    /// The next event of one CPU, without taking it.
    pub fn peek_cpu(&mut self, cpu: usize) -> Option<&TraceRecord> {
        self.readers.get_mut(cpu)?.peek()
    }

    /// Takes the next event of one CPU.
    pub fn next_cpu(&mut self, cpu: usize) -> Option<TraceRecord> {
        self.readers.get_mut(cpu)?.next()
    }

    /// True when every CPU is exhausted.
    pub fn is_empty(&mut self) -> bool {
        self.readers.iter_mut().all(|r| r.peek_ts().is_none())
    }
}

impl<R: CpuReader> Iterator for Merger<R> {
    type Item = (usize, TraceRecord);

    /// Takes the event with the smallest timestamp across CPUs.
    fn next(&mut self) -> Option<(usize, TraceRecord)> {
        let (cpu, _) = self.find_next()?;
        self.readers[cpu].next().map(|e| (cpu, e))
    }
}

impl<R: CpuReader> EventSource for Merger<R> {
    fn next_event(&mut self) -> Option<(usize, TraceRecord)> {
        Iterator::next(self)
    }
    fn peek_next_ts(&mut self) -> Option<u64> {
        self.find_next().map(|(_, ts)| ts)
    }
    fn peek_cpu(&mut self, cpu: usize) -> Option<&TraceRecord> {
        Merger::peek_cpu(self, cpu)
    }
    fn next_cpu(&mut self, cpu: usize) -> Option<TraceRecord> {
        Merger::next_cpu(self, cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn r(ts: u64) -> TraceRecord {
        TraceRecord::new(ts, vec![ts as u8])
    }

    /// A reader that counts how often it is asked, and can gain events
    /// between calls (a consuming reader over a live buffer).
    struct Live {
        events: Vec<TraceRecord>,
        peeked: Option<TraceRecord>,
        peeks: usize,
    }

    impl CpuReader for Live {
        fn peek(&mut self) -> Option<&TraceRecord> {
            self.peeks += 1;
            if self.peeked.is_none() && !self.events.is_empty() {
                self.peeked = Some(self.events.remove(0));
            }
            self.peeked.as_ref()
        }
        fn next(&mut self) -> Option<TraceRecord> {
            self.peek();
            self.peeked.take()
        }
    }

    fn live(ts: &[u64]) -> Live {
        Live {
            events: ts.iter().map(|&t| r(t)).collect(),
            peeked: None,
            peeks: 0,
        }
    }

    #[test]
    fn merges_readers_by_time_lowest_cpu_on_tie() {
        let mut m = Merger::from_readers(vec![
            live(&[5, 9]),
            live(&[1, 5, 20]),
            live(&[]),
            live(&[7]),
        ]);
        let mut order = Vec::new();
        while let Some((cpu, e)) = m.next_event() {
            order.push((cpu, e.ts));
        }
        assert_eq!(order, vec![(1, 1), (0, 5), (1, 5), (3, 7), (0, 9), (1, 20)]);
        assert!(m.is_empty());
        assert_eq!(m.peek_next_ts(), None);
    }

    #[test]
    fn equal_stamps_on_one_cpu_keep_their_order() {
        let mut m = Merger::from_readers(vec![live(&[3, 3, 3]), live(&[3])]);
        let got: Vec<(usize, u64)> = core::iter::from_fn(|| m.next_event())
            .map(|(c, e)| (c, e.ts))
            .collect();
        assert_eq!(got, vec![(0, 3), (0, 3), (0, 3), (1, 3)]);
    }

    #[test]
    fn events_that_arrive_later_are_merged() {
        let mut m = Merger::from_readers(vec![live(&[10]), live(&[])]);
        assert_eq!(m.next_event().map(|(c, e)| (c, e.ts)), Some((0, 10)));
        assert!(m.next_event().is_none());
        // A writer adds events on both CPUs after the source ran dry.
        m.readers[0].events.push(r(30));
        m.readers[1].events.push(r(20));
        assert_eq!(m.peek_next_ts(), Some(20));
        assert_eq!(m.next_event().map(|(c, e)| (c, e.ts)), Some((1, 20)));
        assert_eq!(m.next_event().map(|(c, e)| (c, e.ts)), Some((0, 30)));
    }

    #[test]
    fn per_cpu_look_ahead_does_not_disturb_the_merge() {
        let mut m = Merger::from_readers(vec![live(&[4, 8]), live(&[6])]);
        assert_eq!(m.peek_cpu(1).map(|e| e.ts), Some(6));
        assert_eq!(m.peek().map(|(c, e)| (c, e.ts)), Some((0, 4)));
        // function_graph takes a leaf's return from its CPU.
        assert_eq!(m.next_cpu(0).map(|e| e.ts), Some(4));
        assert_eq!(m.next_event().map(|(c, e)| (c, e.ts)), Some((1, 6)));
        assert_eq!(m.next_event().map(|(c, e)| (c, e.ts)), Some((0, 8)));
        assert!(m.peek_cpu(7).is_none() && m.next_cpu(7).is_none());
    }

    #[test]
    fn a_peeked_event_is_read_once() {
        // The merger asks every CPU for its next stamp before each event;
        // a reader must not lose or duplicate events across those peeks.
        let mut m = Merger::from_readers(vec![live(&[1, 2, 3]), live(&[])]);
        let n = core::iter::from_fn(|| m.next_event()).count();
        assert_eq!(n, 3);
        assert!(m.readers[0].peeks >= 3);
    }

    #[test]
    fn payloads_inline_and_on_the_heap_read_the_same() {
        for n in [0, 1, 24, Payload::INLINE, Payload::INLINE + 1, 300] {
            let bytes: Vec<u8> = (0..n).map(|i| i as u8 ^ 0x5a).collect();
            let a = Payload::from_slice(&bytes);
            let b = Payload::from(bytes.clone());
            assert_eq!(&a[..], &bytes[..]);
            assert_eq!(a, b);
            assert_eq!(a, bytes);
            assert_eq!(a.to_vec(), bytes);
            assert_eq!(TraceRecord::from_slice(7, &bytes, 2).payload.len(), n);
        }
        assert_ne!(Payload::from_slice(&[1]), Payload::from_slice(&[1, 0]));
    }

    #[test]
    fn iterator_streams_are_readers() {
        let m = Merger::new(vec![vec![r(2), r(4)].into_iter(), vec![r(3)].into_iter()]);
        assert_eq!(m.nr_cpus(), 2);
        let order: Vec<u64> = m.map(|(_, e)| e.ts).collect();
        assert_eq!(order, vec![2, 3, 4]);
    }
}
