//! The binary format of a ring-buffer page and of the events inside it,
//! exactly as Linux lays them out (include/linux/ring_buffer.h and
//! kernel/trace/ring_buffer.c), plus a pure decoder for such pages.
//!
//! A page (`struct buffer_data_page`) is 4096 bytes: a `u64 time_stamp`
//! (absolute time of the page), a `local_t commit` (8 bytes on x86_64: the
//! number of bytes of events, with two flag bits used only on pages handed
//! to user space), then 4080 bytes of events. Each event starts with a
//! little-endian `u32` header `type_len:5, time_delta:27`:
//!
//! | type_len | meaning                                                        |
//! |----------|----------------------------------------------------------------|
//! | 1..=28   | data, payload of `type_len * 4` bytes right after the header   |
//! | 0        | data, `array[0]` = payload length + 4, payload after `array[0]`|
//! | 29       | padding (`time_delta == 0`: rest of the page; else `array[0]` = length − 4) |
//! | 30       | TIME_EXTEND: `delta = (array[0] << 27) + time_delta` added to time |
//! | 31       | TIME_STAMP: absolute time, same encoding (59 bits)             |
//!
//! An event's time is the page's `time_stamp` plus every delta before it on
//! the page, including its own `time_delta`.

use core::fmt;

/// Size of a ring-buffer page (a sub-buffer of order 0).
pub const PAGE_SIZE: usize = 4096;
/// `offsetof(struct buffer_data_page, data)`: `u64 time_stamp` + 8-byte `local_t commit`.
pub const BUF_PAGE_HDR_SIZE: usize = 16;
/// Bytes of events per page.
pub const BUF_PAGE_SIZE: usize = PAGE_SIZE - BUF_PAGE_HDR_SIZE;
/// Largest payload `lock_reserve` accepts (`BUF_PAGE_SIZE - sizeof(u32) * 2`).
pub const BUF_MAX_DATA_SIZE: usize = BUF_PAGE_SIZE - 8;

/// `RB_EVNT_HDR_SIZE`: the `u32` event header.
pub const RB_EVNT_HDR_SIZE: usize = 4;
/// `RB_ALIGNMENT`: events are 4-byte aligned.
pub const RB_ALIGNMENT: usize = 4;
/// `RB_ARCH_ALIGNMENT` on x86 (no `CONFIG_HAVE_64BIT_ALIGNED_ACCESS`).
pub const RB_ARCH_ALIGNMENT: usize = 4;
/// Largest type_len of a data event.
pub const RINGBUF_TYPE_DATA_TYPE_LEN_MAX: u32 = 28;
/// Largest payload that fits the compressed form (`28 * 4`).
pub const RB_MAX_SMALL_DATA: usize = RB_ALIGNMENT * RINGBUF_TYPE_DATA_TYPE_LEN_MAX as usize;
/// Smallest event (header + `array[0]`): anything shorter can only be null padding.
pub const RB_EVNT_MIN_SIZE: usize = 8;
/// Length of a TIME_EXTEND event.
pub const RB_LEN_TIME_EXTEND: usize = 8;
/// Length of a TIME_STAMP event.
pub const RB_LEN_TIME_STAMP: usize = 8;

/// `RINGBUF_TYPE_PADDING`.
pub const RINGBUF_TYPE_PADDING: u32 = 29;
/// `RINGBUF_TYPE_TIME_EXTEND`.
pub const RINGBUF_TYPE_TIME_EXTEND: u32 = 30;
/// `RINGBUF_TYPE_TIME_STAMP`.
pub const RINGBUF_TYPE_TIME_STAMP: u32 = 31;

/// Bits of `time_delta`.
pub const TS_SHIFT: u32 = 27;
/// Mask of what fits in `time_delta`.
pub const TS_MASK: u64 = (1 << TS_SHIFT) - 1;
/// Bits of a TIME_STAMP that are not stored (taken from the reader's clock).
pub const TS_MSB: u64 = !((1u64 << 59) - 1);

/// Flag in `commit` of a page handed out by `read_page`: events were lost before it.
pub const RB_MISSED_EVENTS: u64 = 1 << 31;
/// Flag in `commit`: the number of lost events is stored (as a `long`) after the data.
pub const RB_MISSED_STORED: u64 = 1 << 30;
/// Both flags.
pub const RB_MISSED_FLAGS: u64 = RB_MISSED_EVENTS | RB_MISSED_STORED;

/// `rb_calculate_event_length`: bytes taken on the page by a data event with a
/// `len`-byte payload (without any TIME_EXTEND in front of it).
#[inline]
pub const fn rb_calculate_event_length(len: usize) -> usize {
    // A zero length would confuse readers.
    let mut length = if len == 0 { 1 } else { len };
    if length > RB_MAX_SMALL_DATA {
        length += 4; // array[0]
    }
    length += RB_EVNT_HDR_SIZE;
    length = (length + RB_ARCH_ALIGNMENT - 1) & !(RB_ARCH_ALIGNMENT - 1);
    // A 12-byte event could be neither turned into a TIME_EXTEND (8) nor
    // padded with an 8-byte minimum event: make it 16.
    if length == RB_LEN_TIME_EXTEND + RB_ALIGNMENT {
        length += RB_ALIGNMENT;
    }
    length
}

/// Build an event header word.
#[inline]
pub const fn event_header(type_len: u32, time_delta: u32) -> u32 {
    (type_len & 0x1f) | (time_delta << 5)
}

/// The header of a data event occupying `length` bytes (from
/// [`rb_calculate_event_length`]) as `rb_update_event` writes it: returns the
/// header word and, for the long form, `array[0]`.
#[inline]
pub const fn data_event_header(length: usize, time_delta: u32) -> (u32, Option<u32>) {
    let body = length - RB_EVNT_HDR_SIZE;
    if body > RB_MAX_SMALL_DATA {
        (event_header(0, time_delta), Some(body as u32))
    } else {
        (event_header((body / RB_ALIGNMENT) as u32, time_delta), None)
    }
}

/// Offset of the payload from the start of a data event of `length` bytes.
#[inline]
pub const fn data_offset(length: usize) -> usize {
    if length - RB_EVNT_HDR_SIZE > RB_MAX_SMALL_DATA {
        8
    } else {
        4
    }
}

/// `rb_fix_abs_ts`: restore the top bits of a 59-bit absolute TIME_STAMP
/// from the time of the previous event.
pub const fn rb_fix_abs_ts(abs: u64, save_ts: u64) -> u64 {
    if save_ts & TS_MSB != 0 {
        let fixed = abs | (save_ts & TS_MSB);
        if fixed < save_ts {
            return fixed.wrapping_add(1 << 59);
        }
        return fixed;
    }
    abs
}

/// What a decoded entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A data event; `payload` is its data (a multiple of 4 bytes, as Linux reports it).
    Data,
    /// Padding (`payload` is the padded area after the header).
    Padding,
    /// TIME_EXTEND; `ts` is the running time after adding it.
    TimeExtend,
    /// TIME_STAMP; `ts` is the absolute time it sets.
    TimeStamp,
}

/// One entry of a page, as [`decode_page`] yields it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageEvent<'a> {
    /// Offset of the event header from the start of the data area.
    pub offset: usize,
    /// The raw `type_len` field.
    pub type_len: u32,
    /// The raw `time_delta` field.
    pub time_delta: u32,
    /// What it is.
    pub kind: EventKind,
    /// Time of the event (page time_stamp + deltas so far).
    pub ts: u64,
    /// Payload for data events, the padded area for padding, empty otherwise.
    pub payload: &'a [u8],
}

/// Why a page could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer bytes than the 16-byte page header.
    ShortPage,
    /// `commit` says there are more bytes of events than the page holds.
    CommitTooLarge(u64),
    /// The event at this data offset runs past `commit`.
    Truncated(usize),
    /// The event at this data offset has an impossible length field.
    BadLength(usize),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::ShortPage => write!(f, "page shorter than its header"),
            DecodeError::CommitTooLarge(c) => write!(f, "commit {c} larger than the page"),
            DecodeError::Truncated(o) => write!(f, "event at {o} runs past commit"),
            DecodeError::BadLength(o) => write!(f, "event at {o} has a bad length"),
        }
    }
}

/// The page header, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageHeader {
    /// `time_stamp`.
    pub time_stamp: u64,
    /// Bytes of events (the commit field without its flags).
    pub commit: usize,
    /// `RB_MISSED_EVENTS` was set.
    pub missed_events: bool,
    /// The stored number of missed events, if `RB_MISSED_STORED` was set.
    pub missed_stored: Option<u64>,
}

fn read_u32(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn read_u64(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// Decode the `buffer_data_page` header of `page`.
pub fn decode_page_header(page: &[u8]) -> Result<PageHeader, DecodeError> {
    let time_stamp = read_u64(page, 0).ok_or(DecodeError::ShortPage)?;
    let raw = read_u64(page, 8).ok_or(DecodeError::ShortPage)?;
    let commit = raw & !RB_MISSED_FLAGS;
    let room = (page.len() - BUF_PAGE_HDR_SIZE) as u64;
    if commit > room {
        return Err(DecodeError::CommitTooLarge(commit));
    }
    let commit = commit as usize;
    let missed_stored = if raw & RB_MISSED_STORED != 0 {
        read_u64(page, BUF_PAGE_HDR_SIZE + commit)
    } else {
        None
    };
    Ok(PageHeader {
        time_stamp,
        commit,
        missed_events: raw & RB_MISSED_EVENTS != 0,
        missed_stored,
    })
}

/// Iterator over the entries of a page; see [`decode_page`].
#[derive(Clone, Debug)]
pub struct PageIter<'a> {
    data: &'a [u8],
    pos: usize,
    ts: u64,
    failed: bool,
}

/// Decode a page in `buffer_data_page` format (any length ≥ 16; normally
/// 4096 bytes). Yields every entry up to `commit`, including padding and
/// time entries, each with its time computed by Linux's rules. A malformed
/// page yields one `Err` and then stops; nothing here can panic.
pub fn decode_page(page: &[u8]) -> Result<PageIter<'_>, DecodeError> {
    let hdr = decode_page_header(page)?;
    Ok(PageIter {
        data: &page[BUF_PAGE_HDR_SIZE..BUF_PAGE_HDR_SIZE + hdr.commit],
        pos: 0,
        ts: hdr.time_stamp,
        failed: false,
    })
}

/// Decode one event at `pos` of `data` (the events area up to commit),
/// starting from running time `ts`. Returns the event and its length.
pub(crate) fn decode_event(
    data: &[u8],
    pos: usize,
    ts: u64,
) -> Result<(PageEvent<'_>, usize), DecodeError> {
    let hdr = read_u32(data, pos).ok_or(DecodeError::Truncated(pos))?;
    let type_len = hdr & 0x1f;
    let time_delta = hdr >> 5;
    let ev = |kind, ts, payload| PageEvent {
        offset: pos,
        type_len,
        time_delta,
        kind,
        ts,
        payload,
    };
    match type_len {
        RINGBUF_TYPE_PADDING => {
            if time_delta == 0 {
                // Null padding: the rest of the page is unused.
                let len = data.len() - pos;
                return Ok((ev(EventKind::Padding, ts, &data[pos + 4..]), len));
            }
            let a = read_u32(data, pos + 4).ok_or(DecodeError::Truncated(pos))? as usize;
            let len = a
                .checked_add(RB_EVNT_HDR_SIZE)
                .ok_or(DecodeError::BadLength(pos))?;
            let end = pos.checked_add(len).ok_or(DecodeError::BadLength(pos))?;
            let payload = data.get(pos + 4..end).ok_or(DecodeError::Truncated(pos))?;
            Ok((ev(EventKind::Padding, ts, payload), len))
        }
        RINGBUF_TYPE_TIME_EXTEND | RINGBUF_TYPE_TIME_STAMP => {
            let a = read_u32(data, pos + 4).ok_or(DecodeError::Truncated(pos))? as u64;
            let val = (a << TS_SHIFT) | time_delta as u64;
            if type_len == RINGBUF_TYPE_TIME_EXTEND {
                Ok((
                    ev(EventKind::TimeExtend, ts.wrapping_add(val), &[]),
                    RB_LEN_TIME_EXTEND,
                ))
            } else {
                Ok((
                    ev(EventKind::TimeStamp, rb_fix_abs_ts(val, ts), &[]),
                    RB_LEN_TIME_STAMP,
                ))
            }
        }
        0 => {
            let a = read_u32(data, pos + 4).ok_or(DecodeError::Truncated(pos))? as usize;
            if a < 4 {
                return Err(DecodeError::BadLength(pos));
            }
            let len = a + RB_EVNT_HDR_SIZE;
            let end = pos.checked_add(len).ok_or(DecodeError::BadLength(pos))?;
            let payload = data.get(pos + 8..end).ok_or(DecodeError::Truncated(pos))?;
            Ok((
                ev(EventKind::Data, ts.wrapping_add(time_delta as u64), payload),
                len,
            ))
        }
        _ => {
            let len = RB_EVNT_HDR_SIZE + type_len as usize * RB_ALIGNMENT;
            let payload = data
                .get(pos + 4..pos + len)
                .ok_or(DecodeError::Truncated(pos))?;
            Ok((
                ev(EventKind::Data, ts.wrapping_add(time_delta as u64), payload),
                len,
            ))
        }
    }
}

impl<'a> Iterator for PageIter<'a> {
    type Item = Result<PageEvent<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.data.len() {
            return None;
        }
        match decode_event(self.data, self.pos, self.ts) {
            Ok((ev, len)) => {
                self.pos += len;
                // Padding does not move time (rb_update_read_stamp ignores it).
                if ev.kind != EventKind::Padding {
                    self.ts = ev.ts;
                }
                Some(Ok(ev))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Encode a TIME_EXTEND (`stamp == false`) or TIME_STAMP event for `val`.
pub const fn time_event(stamp: bool, val: u64) -> [u32; 2] {
    let t = if stamp {
        RINGBUF_TYPE_TIME_STAMP
    } else {
        RINGBUF_TYPE_TIME_EXTEND
    };
    [
        event_header(t, (val & TS_MASK) as u32),
        (val >> TS_SHIFT) as u32,
    ]
}
