//! Writes events into `buffer_data_page` pages, the layout of Linux's ring
//! buffer (kernel/trace/ring_buffer.c), without the ring: for tests and for
//! making sample trace.dat files by hand. The kernel's own pages come from
//! `tracer::ring_buffer`; this is the same encoding, written the simple way.
//!
//! A page is `u64 time_stamp`, `u64 commit` (bytes of events), then events:
//! a u32 header `type_len:5 | time_delta:27` and the payload. The first event
//! of a page has delta 0 (the page's time_stamp is its time); a later delta
//! that does not fit in 27 bits gets a TIME_EXTEND event in front.

use tracer::ring_buffer::event::{
    data_event_header, data_offset, rb_calculate_event_length, time_event, RB_LEN_TIME_EXTEND,
    TS_MASK,
};
use tracer::ring_buffer::BUF_PAGE_HDR_SIZE;

/// Accumulates one CPU's events into pages of `page_size` bytes.
pub struct PageWriter {
    page_size: usize,
    pages: Vec<Vec<u8>>,
    /// Write position in the last page (from the page start).
    pos: usize,
    last_ts: u64,
}

impl PageWriter {
    pub fn new(page_size: usize) -> PageWriter {
        PageWriter {
            page_size,
            pages: Vec::new(),
            pos: 0,
            last_ts: 0,
        }
    }

    fn new_page(&mut self, ts: u64) {
        let mut p = vec![0u8; self.page_size];
        p[0..8].copy_from_slice(&ts.to_le_bytes());
        self.pages.push(p);
        self.pos = BUF_PAGE_HDR_SIZE;
        self.last_ts = ts;
    }

    /// Appends an event with payload `data` (common header included) at
    /// time `ts` (which must not go backwards). The length and header follow
    /// `rb_calculate_event_length` / `rb_update_event`.
    pub fn push(&mut self, ts: u64, data: &[u8]) {
        assert!(
            self.pages.is_empty() || ts >= self.last_ts,
            "events must be in time order"
        );
        let length = rb_calculate_event_length(data.len());
        let delta = ts.wrapping_sub(self.last_ts);
        let extend = delta > TS_MASK;
        let total = length + if extend { RB_LEN_TIME_EXTEND } else { 0 };
        let mut delta = if self.pages.is_empty() || self.pos + total > self.page_size {
            self.new_page(ts);
            0
        } else {
            delta
        };
        let page = self.pages.last_mut().expect("a page exists");
        let mut pos = self.pos;
        let mut put = |word: u32, pos: &mut usize| {
            page[*pos..*pos + 4].copy_from_slice(&word.to_le_bytes());
            *pos += 4;
        };
        if delta > TS_MASK {
            for word in time_event(false, delta) {
                put(word, &mut pos);
            }
            delta = 0;
        }
        let (hdr, array0) = data_event_header(length, delta as u32);
        put(hdr, &mut pos);
        if let Some(a) = array0 {
            put(a, &mut pos);
        }
        let start = pos;
        page[start..start + data.len()].copy_from_slice(data);
        pos = start + length - data_offset(length);
        self.pos = pos;
        self.last_ts = ts;
        let commit = (self.pos - BUF_PAGE_HDR_SIZE) as u64;
        page[8..16].copy_from_slice(&commit.to_le_bytes());
    }

    /// The pages written so far.
    pub fn pages(&self) -> &[Vec<u8>] {
        &self.pages
    }

    /// The pages, concatenated.
    pub fn into_bytes(self) -> Vec<u8> {
        self.pages.concat()
    }
}
