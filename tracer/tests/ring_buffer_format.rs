//! The page format: decode a page written by hand from Linux's documented
//! layout, check that the ring buffer writes the very same bytes, and check
//! the reader-facing details (lost-event flags, stats text, iterator).
#![cfg(not(loom))]

use tracer::ring_buffer::event::{rb_calculate_event_length, RB_MISSED_EVENTS, RB_MISSED_STORED};
use tracer::ring_buffer::{
    decode_page, decode_page_header, CpuStats, DecodeError, EventKind, RingBuffer, PAGE_SIZE,
};

fn le32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}

fn pat(seed: u8, n: usize) -> Vec<u8> {
    (0..n).map(|i| seed.wrapping_add(i as u8)).collect()
}

/// A page as Linux would write it, byte by byte from the layout in
/// include/linux/ring_buffer.h (type_len:5 | time_delta:27, little endian).
fn hand_page() -> (Vec<u8>, usize) {
    let mut d = Vec::new();
    // 1: type_len 6 (24-byte payload), delta 0.
    le32(&mut d, 6);
    d.extend(pat(0x10, 24));
    // 2: type_len 5 (20 bytes), delta 1000 -> 0x7d05.
    le32(&mut d, 0x7d05);
    d.extend(pat(0x20, 20));
    // 3: TIME_EXTEND of 3_000_000_000 ns: low 27 bits in time_delta, rest in array[0].
    let ext: u64 = 3_000_000_000;
    le32(&mut d, 30 | (((ext & 0x7ff_ffff) as u32) << 5));
    le32(&mut d, (ext >> 27) as u32);
    // 4: an 8-byte payload takes 16 bytes (12 is bumped): type_len 3, delta 0,
    //    8 bytes of data and 4 bytes of zero padding.
    le32(&mut d, 3);
    d.extend(pat(0x30, 8));
    d.extend([0; 4]);
    // 5: a 120-byte payload (> 112): type_len 0, delta 5, array[0] = 124.
    le32(&mut d, 5 << 5);
    le32(&mut d, 124);
    d.extend(pat(0x40, 120));
    let written_by_rb = d.len();
    // 6: TIME_STAMP (absolute) 9_000_000_000.
    let abs: u64 = 9_000_000_000;
    le32(&mut d, 31 | (((abs & 0x7ff_ffff) as u32) << 5));
    le32(&mut d, (abs >> 27) as u32);
    // 7: type_len 1, delta 7.
    le32(&mut d, 1 | (7 << 5));
    d.extend(pat(0x50, 4));
    // 8: a discarded event (padding, delta 1, array[0] = 8 -> 12 bytes).
    le32(&mut d, 29 | (1 << 5));
    le32(&mut d, 8);
    d.extend([0xee; 4]);

    let mut page = Vec::new();
    page.extend_from_slice(&5_000_000_000u64.to_le_bytes());
    page.extend_from_slice(&(d.len() as u64).to_le_bytes());
    page.extend(d);
    page.resize(PAGE_SIZE, 0);
    (page, written_by_rb)
}

#[test]
fn event_lengths_follow_linux() {
    assert_eq!(rb_calculate_event_length(0), 8); // zero counts as 1
    assert_eq!(rb_calculate_event_length(1), 8);
    assert_eq!(rb_calculate_event_length(4), 8);
    assert_eq!(rb_calculate_event_length(5), 16); // 12 is bumped to 16
    assert_eq!(rb_calculate_event_length(8), 16);
    assert_eq!(rb_calculate_event_length(9), 16);
    assert_eq!(rb_calculate_event_length(24), 28);
    assert_eq!(rb_calculate_event_length(112), 116);
    assert_eq!(rb_calculate_event_length(113), 124); // + array[0]
    assert_eq!(rb_calculate_event_length(4072), 4080);
}

#[test]
fn decode_hand_made_page() {
    let (page, _) = hand_page();
    let hdr = decode_page_header(&page).unwrap();
    assert_eq!(hdr.time_stamp, 5_000_000_000);
    assert!(!hdr.missed_events);
    let evs: Vec<_> = decode_page(&page).unwrap().map(|e| e.unwrap()).collect();
    let got: Vec<(EventKind, u64, usize)> = evs
        .iter()
        .map(|e| (e.kind, e.ts, e.payload.len()))
        .collect();
    assert_eq!(
        got,
        vec![
            (EventKind::Data, 5_000_000_000, 24),
            (EventKind::Data, 5_000_001_000, 20),
            (EventKind::TimeExtend, 8_000_001_000, 0),
            (EventKind::Data, 8_000_001_000, 12),
            (EventKind::Data, 8_000_001_005, 120),
            (EventKind::TimeStamp, 9_000_000_000, 0),
            (EventKind::Data, 9_000_000_007, 4),
            (EventKind::Padding, 9_000_000_007, 8),
        ]
    );
    assert_eq!(evs[0].payload, &pat(0x10, 24)[..]);
    assert_eq!(evs[4].payload, &pat(0x40, 120)[..]);
    assert_eq!(evs[4].type_len, 0);
    assert_eq!(evs[2].type_len, 30);
}

#[test]
fn ring_buffer_writes_linux_bytes() {
    let (hand, n) = hand_page();
    let rb = RingBuffer::new(1, 8 * 4080).unwrap();
    // SAFETY (all writes): single-threaded test.
    unsafe {
        assert!(rb.write(0, 5_000_000_000, &pat(0x10, 24)));
        assert!(rb.write(0, 5_000_001_000, &pat(0x20, 20)));
        assert!(rb.write(0, 8_000_001_000, &pat(0x30, 8)));
        assert!(rb.write(0, 8_000_001_005, &pat(0x40, 120)));
    }
    let mut page = Box::new([0u8; PAGE_SIZE]);
    assert_eq!(rb.read_page(0, &mut page), Some(n));
    assert_eq!(&page[..8], &hand[..8], "time_stamp");
    assert_eq!(&page[8..16], &(n as u64).to_le_bytes(), "commit");
    assert_eq!(&page[16..16 + n], &hand[16..16 + n], "events");
    assert!(page[16 + n..].iter().all(|&b| b == 0), "rest zeroed");
    assert_eq!(rb.read_page(0, &mut page), None);
}

#[test]
fn decode_rejects_bad_pages() {
    assert_eq!(decode_page(&[0u8; 10]).err(), Some(DecodeError::ShortPage));
    let mut p = vec![0u8; PAGE_SIZE];
    p[8..16].copy_from_slice(&5000u64.to_le_bytes());
    assert_eq!(
        decode_page(&p).err(),
        Some(DecodeError::CommitTooLarge(5000))
    );
    // An event whose length runs past commit.
    p[8..16].copy_from_slice(&8u64.to_le_bytes());
    p[16..20].copy_from_slice(&0u32.to_le_bytes());
    p[20..24].copy_from_slice(&1000u32.to_le_bytes());
    let r: Vec<_> = decode_page(&p).unwrap().collect();
    assert_eq!(r, vec![Err(DecodeError::Truncated(0))]);
    // Random garbage never panics.
    let mut x = 12345u64;
    for _ in 0..2000 {
        for b in p.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        let c = x % 5000;
        p[8..16].copy_from_slice(&c.to_le_bytes());
        if let Ok(it) = decode_page(&p) {
            for _ in it {}
        }
    }
}

#[test]
fn padding_and_lost_events_in_read_page() {
    // 2 pages; 100-byte events are 104 bytes: 39 per page, 96 bytes of padding.
    let rb = RingBuffer::new(1, 2 * 4080).unwrap();
    let mut ts = 1000;
    for i in 0..200u32 {
        ts += 10;
        let mut p = vec![0u8; 100];
        p[..4].copy_from_slice(&i.to_le_bytes());
        // SAFETY: single-threaded test.
        assert!(unsafe { rb.write(0, ts, &p) });
    }
    let st = rb.stats(0).unwrap();
    assert!(st.overrun > 0);
    assert_eq!(st.entries + st.overrun, 200);
    assert_eq!(rb.entries_written(), 200);
    assert_eq!(rb.entries(), st.entries);

    let mut page = Box::new([0u8; PAGE_SIZE]);
    let n = rb.read_page(0, &mut page).unwrap();
    let hdr = decode_page_header(&page[..]).unwrap();
    // A whole page the writer has left: commit is real_end (padding cut off).
    assert_eq!(n, 39 * 104);
    assert_eq!(hdr.commit, n);
    let raw = u64::from_le_bytes(page[8..16].try_into().unwrap());
    assert_eq!(
        raw & (RB_MISSED_EVENTS | RB_MISSED_STORED),
        RB_MISSED_EVENTS | RB_MISSED_STORED
    );
    assert_eq!(hdr.missed_stored, Some(st.overrun));
    let evs: Vec<_> = decode_page(&page[..])
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    assert_eq!(evs.len(), 39);
    let first = u32::from_le_bytes(evs[0].payload[..4].try_into().unwrap());
    assert_eq!(
        first as u64, st.overrun,
        "oldest surviving event follows the lost ones"
    );
    // Consecutive and correctly timed.
    for (k, e) in evs.iter().enumerate() {
        let i = u32::from_le_bytes(e.payload[..4].try_into().unwrap());
        assert_eq!(i, first + k as u32);
        assert_eq!(e.ts, 1000 + 10 * (i as u64 + 1));
    }
    // Next read: no more lost events flagged.
    rb.read_page(0, &mut page).unwrap();
    assert!(!decode_page_header(&page[..]).unwrap().missed_events);
}

#[test]
fn consume_reports_lost_events_and_padding_is_skipped() {
    let rb = RingBuffer::new(1, 2 * 4080).unwrap();
    for i in 0..200u64 {
        // SAFETY: single-threaded test.
        assert!(unsafe { rb.write(0, 1000 + i, &i.to_le_bytes().repeat(12)) });
    }
    let overrun = rb.overrun_cpu(0);
    let e = rb.consume(0).unwrap();
    assert_eq!(e.lost_events, overrun);
    assert_eq!(u64::from_le_bytes(e.data[..8].try_into().unwrap()), overrun);
    assert_eq!(e.ts, 1000 + overrun);
    let mut n = 1;
    let mut last = e.ts;
    while let Some(e) = rb.consume(0) {
        assert_eq!(e.lost_events, 0);
        assert_eq!(e.ts, last + 1);
        last = e.ts;
        n += 1;
    }
    assert_eq!(n + overrun, 200);
    let st = rb.stats(0).unwrap();
    assert_eq!((st.entries, st.read_events), (0, n));
    assert!(rb.empty_cpu(0));
}

#[test]
fn producer_consumer_mode_drops_new_events() {
    let rb = RingBuffer::new(1, 2 * 4080).unwrap();
    rb.set_overwrite(false);
    let mut ok = 0;
    for i in 0..200u64 {
        // SAFETY: single-threaded test.
        if unsafe { rb.write(0, 1000 + i, &[1; 100]) } {
            ok += 1;
        }
    }
    let st = rb.stats(0).unwrap();
    assert_eq!(st.overrun, 0);
    assert_eq!(st.dropped_events, 200 - ok);
    assert_eq!(st.entries, ok);
    assert_eq!(
        rb.entries_written(),
        ok,
        "dropped events are not in entries-written"
    );
    // The oldest are kept.
    assert_eq!(rb.consume(0).unwrap().ts, 1000);
    assert_eq!(rb.entries_written(), ok - 1);
}

#[test]
fn time_extend_for_long_gaps() {
    let rb = RingBuffer::new(1, 4080).unwrap();
    let times = [
        5u64,
        6,
        6 + (1 << 27),
        7 + (1 << 27),
        1 << 40,
        (1 << 40) + 1,
    ];
    for &t in &times {
        // SAFETY: single-threaded test.
        assert!(unsafe { rb.write(0, t, b"abcd") });
    }
    let got: Vec<u64> = std::iter::from_fn(|| rb.consume(0)).map(|e| e.ts).collect();
    assert_eq!(got, times);
}

#[test]
fn nested_write_is_kept_and_ordered() {
    let rb = RingBuffer::new(1, 4 * 4080).unwrap();
    // SAFETY: single-threaded test, innermost committed first.
    unsafe {
        let mut outer = rb.lock_reserve(0, 16, 100).unwrap();
        // Nothing is visible until the outermost commit.
        assert!(rb.write(0, 150, b"inner event!"));
        assert!(rb.peek(0).is_none());
        outer.data_mut().copy_from_slice(b"outer event 16 b");
        rb.unlock_commit(outer);
    }
    let a = rb.consume(0).unwrap();
    let b = rb.consume(0).unwrap();
    assert_eq!((a.ts, &a.data[..]), (100, &b"outer event 16 b"[..]));
    assert_eq!((b.ts, &b.data[..]), (150, &b"inner event!"[..]));
}

#[test]
fn iterator_does_not_consume_and_pauses_recording() {
    let rb = RingBuffer::new(1, 4 * 4080).unwrap();
    for i in 0..300u64 {
        // SAFETY: single-threaded test.
        unsafe { rb.write(0, i, &i.to_le_bytes()) };
    }
    assert_eq!(rb.consume(0).unwrap().ts, 0);
    let a: Vec<u64> = rb.iter(0).unwrap().map(|(ts, _)| ts).collect();
    assert_eq!(a, (1..300).collect::<Vec<_>>());
    {
        let mut it = rb.iter(0).unwrap();
        assert_eq!(it.peek_ts(), Some(1));
        // No resizing under an open iterator (Linux: -EBUSY).
        assert_eq!(
            rb.resize(tracer::ring_buffer::Cpus::All, 8 * 4080),
            Err(tracer::ring_buffer::RingBufferError::Busy)
        );
        // Recording is stopped while iterating (as Linux's `trace` file).
        // SAFETY: single-threaded test.
        assert!(!unsafe { rb.write(0, 1000, b"x") });
        assert_eq!(it.next().map(|e| e.0), Some(1));
        // A consuming read resets the iterator to the reader's position.
        rb.consume(0).unwrap();
        rb.consume(0).unwrap();
        assert_eq!(it.next().map(|e| e.0), Some(3));
    }
    // SAFETY: single-threaded test.
    assert!(unsafe { rb.write(0, 1000, b"x") });
    assert_eq!(rb.entries_cpu(0), 298);
}

#[test]
fn record_switches_and_reset() {
    let rb = RingBuffer::new(2, 4080).unwrap();
    assert!(rb.record_is_on());
    rb.record_off();
    assert!(!rb.record_is_on());
    // SAFETY (all writes): single-threaded test.
    assert!(!unsafe { rb.write(0, 1, b"x") });
    rb.record_on();
    assert!(rb.record_is_on());
    rb.record_disable();
    assert!(!rb.record_is_on());
    assert!(!unsafe { rb.write(0, 1, b"x") });
    rb.record_enable();
    assert!(rb.record_is_on());
    assert!(unsafe { rb.write(0, 1, b"x") });
    assert!(unsafe { rb.write(1, 2, b"y") });
    rb.record_disable_cpu(1);
    assert!(!unsafe { rb.write(1, 3, b"z") });
    rb.record_enable_cpu(1);
    assert!(!unsafe { rb.write(7, 3, b"z") }, "bad cpu");
    assert!(!unsafe { rb.write(0, 3, &vec![0; 4073]) }, "too big");
    assert!(unsafe { rb.write(0, 3, &vec![0; 4072]) }, "largest event");
    assert_eq!(rb.entries(), 3);
    rb.reset_cpu(0).unwrap();
    assert_eq!(rb.entries(), 1);
    rb.reset();
    assert_eq!(rb.entries(), 0);
    assert!(rb.is_empty());
    assert_eq!(rb.stats(0).unwrap(), CpuStats::default());
    assert!(rb.reset_cpu(9).is_err());
}

#[test]
fn resize_keeps_events() {
    let rb = RingBuffer::new(1, 2 * 4080).unwrap();
    assert_eq!(rb.size_per_cpu(0), 2 * 4080);
    for i in 0..50u64 {
        // SAFETY: single-threaded test.
        unsafe { rb.write(0, i, &[7; 100]) };
    }
    rb.resize(tracer::ring_buffer::Cpus::All, 10 * 4080)
        .unwrap();
    assert_eq!(rb.size_per_cpu(0), 10 * 4080);
    assert_eq!(rb.nr_pages(0), 10);
    for i in 50..300u64 {
        // SAFETY: single-threaded test.
        unsafe { rb.write(0, i, &[7; 100]) };
    }
    assert_eq!(rb.overrun_cpu(0), 0);
    let ts: Vec<u64> = std::iter::from_fn(|| rb.consume(0)).map(|e| e.ts).collect();
    assert_eq!(ts, (0..300).collect::<Vec<_>>());
    // Shrinking a full buffer drops the oldest pages into overrun.
    for i in 0..300u64 {
        // SAFETY: single-threaded test.
        unsafe { rb.write(0, 1000 + i, &[7; 100]) };
    }
    rb.resize(tracer::ring_buffer::Cpus::One(0), 3 * 4080)
        .unwrap();
    let st = rb.stats(0).unwrap();
    let left: Vec<u64> = std::iter::from_fn(|| rb.consume(0)).map(|e| e.ts).collect();
    assert_eq!(left.len() as u64 + st.overrun, 300);
    assert_eq!(*left.last().unwrap(), 1299);
    assert!(rb.resize(tracer::ring_buffer::Cpus::One(3), 4080).is_err());
}

#[test]
fn stats_text_is_linux_format() {
    let s = CpuStats {
        entries: 3,
        overrun: 4,
        commit_overrun: 0,
        bytes: 84,
        oldest_event_ts: 5_000_000_499,
        dropped_events: 2,
        read_events: 9,
    };
    let mut out = String::new();
    s.write_to(6_123_456_789, true, &mut out).unwrap();
    assert_eq!(
        out,
        "entries: 3\noverrun: 4\ncommit overrun: 0\nbytes: 84\noldest event ts:     5.000000\nnow ts:     6.123457\ndropped events: 2\nread events: 9\n"
    );
    let mut out = String::new();
    s.write_to(77, false, &mut out).unwrap();
    assert!(out.contains("oldest event ts: 5000000499\nnow ts: 77\n"));
}

#[test]
fn bytes_stat_counts_unconsumed_bytes() {
    let rb = RingBuffer::new(1, 4 * 4080).unwrap();
    for i in 0..3u64 {
        // SAFETY: single-threaded test.
        assert!(unsafe { rb.write(0, 10 + i, &[1; 24]) });
    }
    assert_eq!(rb.stats(0).unwrap().bytes, 3 * 28);
    rb.consume(0).unwrap();
    assert_eq!(rb.stats(0).unwrap().bytes, 2 * 28);
    let st = rb.stats(0).unwrap();
    assert_eq!((st.entries, st.read_events, st.oldest_event_ts), (2, 1, 10));
}
