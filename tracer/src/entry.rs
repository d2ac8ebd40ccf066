//! The binary records the tracers write into the ring buffer, byte for byte
//! as Linux lays them out on x86_64 (kernel/trace/trace_entries.h, trace.h and
//! include/linux/trace_events.h, checked against Linux 6.6).
//!
//! Every record starts with the 8-byte `struct trace_entry` (type, flags,
//! preempt_count, pid). The type is a value of Linux's `enum trace_type`, so
//! `trace-cmd` and libtraceevent can decode our `trace_pipe_raw` pages with the
//! format files from [`crate::events`]. Each record has an encoder (into a
//! caller-provided slice, so a writer can fill a reserved ring-buffer slot
//! without allocating) and a safe decoder that rejects short input.
//!
//! Layout of the records (offsets in bytes, little endian, `long` = 8):
//!
//! | record | fields |
//! |---|---|
//! | `ftrace_entry` (TRACE_FN) | ip @8, parent_ip @16; 24 bytes |
//! | `ftrace_graph_ent_entry` (TRACE_GRAPH_ENT, packed) | func @8, depth (int) @16; 20 bytes |
//! | `ftrace_graph_ret_entry` (TRACE_GRAPH_RET, packed) | func @8, depth (int) @16, overrun (u32) @20, calltime @24, rettime @32; 40 bytes |
//! | `print_entry` (TRACE_PRINT) | ip @8, buf[] @16 (NUL-terminated) |
//! | `stack_entry` (TRACE_STACK) | size (int) @8, caller[] @16 (one `long` per frame) |
//! | `ctx_switch_entry` (TRACE_CTX, TRACE_WAKE) | prev_pid @8, next_pid @12, next_cpu @16 (u32), prev_prio @20, prev_state @21, next_prio @22, next_state @23 (u8); 24 bytes |
//!
//! The graph return layout is Linux 6.6's without `CONFIG_FUNCTION_GRAPH_RETVAL`
//! (v5.x before the packing change had `func, calltime, rettime, overrun(long),
//! depth`; 6.5+ with RETVAL inserts `retval` after `func`).

use alloc::vec::Vec;

use crate::errno::Errno;

/// Values of Linux's `enum trace_type` (kernel/trace/trace.h). The number is
/// the `common_type` of a record and the `ID:` of its format file.
pub mod trace_type {
    pub const TRACE_FN: u16 = 1;
    pub const TRACE_CTX: u16 = 2;
    pub const TRACE_WAKE: u16 = 3;
    pub const TRACE_STACK: u16 = 4;
    pub const TRACE_PRINT: u16 = 5;
    pub const TRACE_BPRINT: u16 = 6;
    pub const TRACE_MMIO_RW: u16 = 7;
    pub const TRACE_MMIO_MAP: u16 = 8;
    pub const TRACE_BRANCH: u16 = 9;
    pub const TRACE_GRAPH_RET: u16 = 10;
    pub const TRACE_GRAPH_ENT: u16 = 11;
    pub const TRACE_USER_STACK: u16 = 12;
    pub const TRACE_BLK: u16 = 13;
    pub const TRACE_BPUTS: u16 = 14;
    pub const TRACE_HWLAT: u16 = 15;
    pub const TRACE_OSNOISE: u16 = 16;
    pub const TRACE_TIMERLAT: u16 = 17;
    pub const TRACE_RAW_DATA: u16 = 18;
    pub const TRACE_FUNC_REPEATS: u16 = 19;
    /// `__TRACE_LAST_TYPE`: dynamic event ids start above this.
    pub const TRACE_LAST_TYPE: u16 = 20;
}

pub use trace_type::*;

/// Bits of `trace_entry.flags` (`enum trace_flag_type`,
/// include/linux/trace_events.h, Linux 6.6).
pub mod trace_flag {
    /// Interrupts were disabled.
    pub const TRACE_FLAG_IRQS_OFF: u8 = 0x01;
    /// The architecture cannot tell whether interrupts are off (prints `X`).
    pub const TRACE_FLAG_IRQS_NOSUPPORT: u8 = 0x02;
    /// TIF_NEED_RESCHED was set.
    pub const TRACE_FLAG_NEED_RESCHED: u8 = 0x04;
    /// Running in hard interrupt context.
    pub const TRACE_FLAG_HARDIRQ: u8 = 0x08;
    /// Serving a softirq.
    pub const TRACE_FLAG_SOFTIRQ: u8 = 0x10;
    /// PREEMPT_NEED_RESCHED was set in the preempt count.
    pub const TRACE_FLAG_PREEMPT_RESCHED: u8 = 0x20;
    /// Running in NMI context.
    pub const TRACE_FLAG_NMI: u8 = 0x40;
    /// Bottom halves were disabled (softirq count beyond "serving").
    pub const TRACE_FLAG_BH_OFF: u8 = 0x80;
}

pub use trace_flag::*;

/// Size of `struct trace_entry`.
pub const TRACE_ENTRY_SIZE: usize = 8;
/// Size of `struct ftrace_entry`.
pub const FTRACE_ENTRY_SIZE: usize = 24;
/// Size of the packed `struct ftrace_graph_ent_entry`.
pub const GRAPH_ENT_SIZE: usize = 20;
/// Size of the packed `struct ftrace_graph_ret_entry`.
pub const GRAPH_RET_SIZE: usize = 40;
/// Offset of `buf` in `struct print_entry`.
pub const PRINT_BUF_OFFSET: usize = 16;
/// Offset of `caller` in `struct stack_entry`.
pub const STACK_CALLER_OFFSET: usize = 16;
/// `FTRACE_STACK_ENTRIES`: the declared (minimum) length of `caller[]`.
pub const FTRACE_STACK_ENTRIES: usize = 8;

/// Why a record could not be decoded or encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryError {
    /// The input (or output) slice is shorter than the record.
    Short { need: usize, got: usize },
    /// The `type` field is not the one the decoder expects.
    WrongType { expected: u16, found: u16 },
}

impl From<EntryError> for Errno {
    fn from(_: EntryError) -> Errno {
        Errno::EINVAL
    }
}

fn need(buf: &[u8], n: usize) -> Result<(), EntryError> {
    if buf.len() < n {
        Err(EntryError::Short {
            need: n,
            got: buf.len(),
        })
    } else {
        Ok(())
    }
}

fn rd_u16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}
fn rd_u32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}
fn rd_u64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}
fn wr(b: &mut [u8], off: usize, v: &[u8]) {
    b[off..off + v.len()].copy_from_slice(v);
}

/// `struct trace_entry`: the common header of every record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TraceEntry {
    /// `enum trace_type` value (the event id).
    pub type_: u16,
    /// `TRACE_FLAG_*` bits.
    pub flags: u8,
    /// Low nibble: preempt depth; high nibble: migrate-disable depth.
    pub preempt_count: u8,
    /// The task's pid (0 = idle).
    pub pid: i32,
}

impl TraceEntry {
    /// Builds a header the way `tracing_generic_entry_update()` does from a
    /// packed `trace_ctx` (see [`TraceCtx`]).
    pub fn new(type_: u16, ctx: TraceCtx, pid: i32) -> Self {
        TraceEntry {
            type_,
            flags: ctx.flags(),
            preempt_count: ctx.preempt_count(),
            pid,
        }
    }

    /// Reads the header from the first 8 bytes.
    pub fn decode(buf: &[u8]) -> Result<Self, EntryError> {
        need(buf, TRACE_ENTRY_SIZE)?;
        Ok(TraceEntry {
            type_: rd_u16(buf, 0),
            flags: buf[2],
            preempt_count: buf[3],
            pid: rd_u32(buf, 4) as i32,
        })
    }

    /// Writes the header into the first 8 bytes.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), EntryError> {
        need(buf, TRACE_ENTRY_SIZE)?;
        wr(buf, 0, &self.type_.to_le_bytes());
        buf[2] = self.flags;
        buf[3] = self.preempt_count;
        wr(buf, 4, &self.pid.to_le_bytes());
        Ok(())
    }

    /// The header word of these fields: `type | flags << 16 |
    /// preempt_count << 24 | pid << 32` (the layout of `struct
    /// trace_entry`, little endian). Writers on the hot path build it from
    /// the fields they sample, without a [`TraceEntry`].
    #[inline(always)]
    pub const fn pack(type_: u16, flags: u8, preempt_count: u8, pid: i32) -> u64 {
        type_ as u64
            | (flags as u64) << 16
            | (preempt_count as u64) << 24
            | (pid as u32 as u64) << 32
    }

    fn expect(buf: &[u8], ty: u16, size: usize) -> Result<Self, EntryError> {
        let ent = TraceEntry::decode(buf)?;
        if ent.type_ != ty {
            return Err(EntryError::WrongType {
                expected: ty,
                found: ent.type_,
            });
        }
        need(buf, size)?;
        Ok(ent)
    }
}

/// Linux's packed `trace_ctx` (`tracing_gen_ctx*()` in trace.h):
/// `flags << 16 | min(preempt, 15) | min(migrate_disable, 15) << 4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TraceCtx(pub u32);

impl TraceCtx {
    /// Packs the flag bits, the preempt depth and the migrate-disable depth.
    pub fn new(flags: u8, preempt_depth: u32, migrate_disable: u32) -> Self {
        TraceCtx(((flags as u32) << 16) | preempt_depth.min(15) | (migrate_disable.min(15) << 4))
    }
    /// The `TRACE_FLAG_*` byte.
    pub fn flags(self) -> u8 {
        (self.0 >> 16) as u8
    }
    /// The `preempt_count` byte of the record.
    pub fn preempt_count(self) -> u8 {
        self.0 as u8
    }
    /// `tracing_gen_ctx_dec()`: the same context with one preempt level
    /// removed (the tracer's own `preempt_disable_notrace`).
    pub fn dec(self) -> Self {
        if self.0 & 0xf != 0 {
            TraceCtx(self.0 - 1)
        } else {
            self
        }
    }
}

/// The context bits the tracer samples when it records an event
/// (`tracing_gen_ctx_irq_test()`); [`IrqContext::flags`] turns them into
/// `TRACE_FLAG_*` bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqContext {
    pub irqs_off: bool,
    pub nmi: bool,
    pub hardirq: bool,
    /// `in_serving_softirq()`.
    pub softirq: bool,
    /// `softirq_count() >> (SOFTIRQ_SHIFT + 1)`: bottom halves disabled.
    pub bh_off: bool,
    /// TIF_NEED_RESCHED.
    pub need_resched: bool,
    /// PREEMPT_NEED_RESCHED folded into the preempt count.
    pub preempt_resched: bool,
}

impl IrqContext {
    /// The `TRACE_FLAG_*` byte for this context.
    pub fn flags(&self) -> u8 {
        let mut f = 0;
        if self.irqs_off {
            f |= TRACE_FLAG_IRQS_OFF;
        }
        if self.nmi {
            f |= TRACE_FLAG_NMI;
        }
        if self.hardirq {
            f |= TRACE_FLAG_HARDIRQ;
        }
        if self.softirq {
            f |= TRACE_FLAG_SOFTIRQ;
        }
        if self.bh_off {
            f |= TRACE_FLAG_BH_OFF;
        }
        if self.need_resched {
            f |= TRACE_FLAG_NEED_RESCHED;
        }
        if self.preempt_resched {
            f |= TRACE_FLAG_PREEMPT_RESCHED;
        }
        f
    }
}

/// The five latency columns (`trace_print_lat_fmt()`, Linux 6.6):
/// irqs-off/BH-disabled (`D d b X .`), need-resched (`N n p .`),
/// hardirq/softirq (`Z z H h s .`), preempt depth (hex or `.`) and
/// migrate-disable depth (hex or `.`).
pub fn lat_fmt(flags: u8, preempt_count: u8) -> [u8; 5] {
    let nmi = flags & TRACE_FLAG_NMI != 0;
    let hardirq = flags & TRACE_FLAG_HARDIRQ != 0;
    let softirq = flags & TRACE_FLAG_SOFTIRQ != 0;
    let bh_off = flags & TRACE_FLAG_BH_OFF != 0;
    let irqs_off = flags & TRACE_FLAG_IRQS_OFF != 0;

    let c1 = if irqs_off && bh_off {
        b'D'
    } else if irqs_off {
        b'd'
    } else if bh_off {
        b'b'
    } else if flags & TRACE_FLAG_IRQS_NOSUPPORT != 0 {
        b'X'
    } else {
        b'.'
    };
    let c2 = match flags & (TRACE_FLAG_NEED_RESCHED | TRACE_FLAG_PREEMPT_RESCHED) {
        x if x == TRACE_FLAG_NEED_RESCHED | TRACE_FLAG_PREEMPT_RESCHED => b'N',
        TRACE_FLAG_NEED_RESCHED => b'n',
        TRACE_FLAG_PREEMPT_RESCHED => b'p',
        _ => b'.',
    };
    let c3 = if nmi && hardirq {
        b'Z'
    } else if nmi {
        b'z'
    } else if hardirq && softirq {
        b'H'
    } else if hardirq {
        b'h'
    } else if softirq {
        b's'
    } else {
        b'.'
    };
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let c4 = if preempt_count & 0xf != 0 {
        HEX[(preempt_count & 0xf) as usize]
    } else {
        b'.'
    };
    let c5 = if preempt_count & 0xf0 != 0 {
        HEX[(preempt_count >> 4) as usize]
    } else {
        b'.'
    };
    [c1, c2, c3, c4, c5]
}

/// `struct ftrace_entry` (TRACE_FN): one traced function call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FtraceEntry {
    pub ent: TraceEntry,
    /// Address of the traced function (its call site).
    pub ip: u64,
    /// Return address into the caller.
    pub parent_ip: u64,
}

impl FtraceEntry {
    pub const SIZE: usize = FTRACE_ENTRY_SIZE;

    pub fn decode(buf: &[u8]) -> Result<Self, EntryError> {
        let ent = TraceEntry::expect(buf, TRACE_FN, Self::SIZE)?;
        Ok(FtraceEntry {
            ent,
            ip: rd_u64(buf, 8),
            parent_ip: rd_u64(buf, 16),
        })
    }

    /// Writes the 24 bytes; returns the size written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, EntryError> {
        need(buf, Self::SIZE)?;
        TraceEntry {
            type_: TRACE_FN,
            ..self.ent
        }
        .encode(buf)?;
        wr(buf, 8, &self.ip.to_le_bytes());
        wr(buf, 16, &self.parent_ip.to_le_bytes());
        Ok(Self::SIZE)
    }

    /// Writes the record from its header word ([`TraceEntry::pack`]) and
    /// fields, as three stores: the function tracer's hot path, which
    /// samples the header's fields as one word. The same bytes as
    /// [`FtraceEntry::encode`] (host-tested). A slice shorter than the
    /// record is zeroed instead.
    #[inline(always)]
    pub fn encode_raw(buf: &mut [u8], header: u64, ip: u64, parent_ip: u64) {
        let Some(b) = buf.first_chunk_mut::<{ Self::SIZE }>() else {
            buf.fill(0);
            return;
        };
        b[0..8].copy_from_slice(&header.to_le_bytes());
        b[8..16].copy_from_slice(&ip.to_le_bytes());
        b[16..24].copy_from_slice(&parent_ip.to_le_bytes());
    }
}

/// `struct ftrace_graph_ent_entry` (TRACE_GRAPH_ENT): a function was entered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphEntEntry {
    pub ent: TraceEntry,
    pub func: u64,
    /// Call depth, 0 for the outermost traced call.
    pub depth: i32,
}

impl GraphEntEntry {
    pub const SIZE: usize = GRAPH_ENT_SIZE;

    pub fn decode(buf: &[u8]) -> Result<Self, EntryError> {
        let ent = TraceEntry::expect(buf, TRACE_GRAPH_ENT, Self::SIZE)?;
        Ok(GraphEntEntry {
            ent,
            func: rd_u64(buf, 8),
            depth: rd_u32(buf, 16) as i32,
        })
    }

    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, EntryError> {
        need(buf, Self::SIZE)?;
        TraceEntry {
            type_: TRACE_GRAPH_ENT,
            ..self.ent
        }
        .encode(buf)?;
        wr(buf, 8, &self.func.to_le_bytes());
        wr(buf, 16, &self.depth.to_le_bytes());
        Ok(Self::SIZE)
    }

    /// Writes the record from its header word ([`TraceEntry::pack`]) and
    /// fields: function_graph's entry hot path. A slice shorter than the
    /// record is zeroed instead.
    #[inline(always)]
    pub fn encode_raw(buf: &mut [u8], header: u64, func: u64, depth: i32) {
        let Some(b) = buf.first_chunk_mut::<{ Self::SIZE }>() else {
            buf.fill(0);
            return;
        };
        b[0..8].copy_from_slice(&header.to_le_bytes());
        b[8..16].copy_from_slice(&func.to_le_bytes());
        b[16..20].copy_from_slice(&depth.to_le_bytes());
    }
}

/// `struct ftrace_graph_ret_entry` (TRACE_GRAPH_RET): a function returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphRetEntry {
    pub ent: TraceEntry,
    pub func: u64,
    pub depth: i32,
    /// Frames lost because the shadow stack was full.
    pub overrun: u32,
    /// Entry time (ns, trace clock).
    pub calltime: u64,
    /// Return time (ns, trace clock).
    pub rettime: u64,
}

impl GraphRetEntry {
    pub const SIZE: usize = GRAPH_RET_SIZE;

    pub fn decode(buf: &[u8]) -> Result<Self, EntryError> {
        let ent = TraceEntry::expect(buf, TRACE_GRAPH_RET, Self::SIZE)?;
        Ok(GraphRetEntry {
            ent,
            func: rd_u64(buf, 8),
            depth: rd_u32(buf, 16) as i32,
            overrun: rd_u32(buf, 20),
            calltime: rd_u64(buf, 24),
            rettime: rd_u64(buf, 32),
        })
    }

    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, EntryError> {
        need(buf, Self::SIZE)?;
        TraceEntry {
            type_: TRACE_GRAPH_RET,
            ..self.ent
        }
        .encode(buf)?;
        wr(buf, 8, &self.func.to_le_bytes());
        wr(buf, 16, &self.depth.to_le_bytes());
        wr(buf, 20, &self.overrun.to_le_bytes());
        wr(buf, 24, &self.calltime.to_le_bytes());
        wr(buf, 32, &self.rettime.to_le_bytes());
        Ok(Self::SIZE)
    }

    /// Writes the record from its header word ([`TraceEntry::pack`]) and
    /// fields: function_graph's return hot path. A slice shorter than the
    /// record is zeroed instead.
    #[inline(always)]
    pub fn encode_raw(
        buf: &mut [u8],
        header: u64,
        func: u64,
        depth: i32,
        overrun: u32,
        calltime: u64,
        rettime: u64,
    ) {
        let Some(b) = buf.first_chunk_mut::<{ Self::SIZE }>() else {
            buf.fill(0);
            return;
        };
        b[0..8].copy_from_slice(&header.to_le_bytes());
        b[8..16].copy_from_slice(&func.to_le_bytes());
        b[16..20].copy_from_slice(&depth.to_le_bytes());
        b[20..24].copy_from_slice(&overrun.to_le_bytes());
        b[24..32].copy_from_slice(&calltime.to_le_bytes());
        b[32..40].copy_from_slice(&rettime.to_le_bytes());
    }

    /// `rettime - calltime` (0 if the clock went backwards).
    pub fn duration(&self) -> u64 {
        self.rettime.wrapping_sub(self.calltime)
    }
}

/// Linux's `TRACE_MARKER_MAX_SIZE`: a longer `trace_marker` write is cut to
/// this first.
pub const TRACE_MARKER_MAX_SIZE: usize = 4096;
/// Linux's `FAULTED_STR` (`<faulted>`): the text stored when the user
/// buffer faults. Nothing faults here, but a short event is sized so that
/// it would fit, as in Linux.
const FAULTED_SIZE: usize = "<faulted>".len();
/// `sizeof(struct print_entry)` (header 8 + ip 8) plus `'\n'` and `'\0'`.
const MARKER_META_SIZE: usize = PRINT_BUF_OFFSET + 2;

/// `struct print_entry` (TRACE_PRINT): a `trace_marker` write or
/// `trace_puts`-style message. `buf` excludes the terminating NUL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrintEntry {
    pub ent: TraceEntry,
    /// Address of the writer (`tracing_mark_write` for the marker).
    pub ip: u64,
    pub buf: Vec<u8>,
}

impl PrintEntry {
    /// The record for a `trace_marker` write: Linux appends `\n` when the
    /// text does not end with one (`tracing_mark_write()`).
    pub fn marker(ent: TraceEntry, ip: u64, text: &[u8]) -> Self {
        let mut buf = Vec::with_capacity(text.len() + 1);
        buf.extend_from_slice(text);
        if buf.last() != Some(&b'\n') {
            buf.push(b'\n');
        }
        PrintEntry {
            ent: TraceEntry {
                type_: TRACE_PRINT,
                ..ent
            },
            ip,
            buf,
        }
    }

    /// How one `trace_marker` event takes a write of `len` bytes (Linux:
    /// `tracing_mark_write` and `write_marker_to_buffer`, v6.9+): returns
    /// `(cnt, size)`, the bytes of the text it takes and the payload size
    /// to reserve. At most [`TRACE_MARKER_MAX_SIZE`] bytes are taken, and
    /// fewer if the event would exceed `max_data`, the largest payload the
    /// ring buffer accepts: the writer returns the short count and the
    /// rest becomes the next event. A short text still reserves room for
    /// `<faulted>`. `cnt` is 0 only for an empty write.
    #[inline(always)]
    pub fn marker_size(len: usize, max_data: usize) -> (usize, usize) {
        let mut cnt = len.min(TRACE_MARKER_MAX_SIZE);
        if cnt == 0 {
            return (0, 0);
        }
        let mut size = cnt + MARKER_META_SIZE;
        if size > max_data {
            // Linux's "goto again" with ring_buffer_max_event_size().
            cnt = max_data - MARKER_META_SIZE;
            size = cnt + MARKER_META_SIZE;
        }
        if cnt < FAULTED_SIZE {
            size += FAULTED_SIZE - cnt;
        }
        (cnt, size)
    }

    /// Bytes needed: header, ip, text and its NUL.
    pub fn encoded_len(&self) -> usize {
        PRINT_BUF_OFFSET + self.buf.len() + 1
    }

    /// The payload size of a `trace_printk` event of `len` bytes of text
    /// (Linux `__trace_array_vprintk`: `sizeof(*entry) + len + 1`).
    #[inline(always)]
    pub const fn printk_size(len: usize) -> usize {
        PRINT_BUF_OFFSET + len + 1
    }

    /// Writes a print record from the packed header word (the kernel's
    /// `trace_entry_word`), `ip` and `text` into `buf`, without building a
    /// `PrintEntry` (no allocation inside a ring-buffer reservation): the
    /// bytes of [`PrintEntry::encode`] (host-tested), then zeros to the
    /// end of `buf`. The text is taken as it is: unlike `trace_marker`,
    /// `trace_printk` adds no `'\n'` (Linux neither). A `buf` shorter than
    /// [`printk_size`](Self::printk_size) of the text is zeroed instead.
    #[inline(always)]
    pub fn encode_raw(buf: &mut [u8], header: u64, ip: u64, text: &[u8]) {
        let n = Self::printk_size(text.len());
        if buf.len() < n {
            buf.fill(0);
            return;
        }
        buf[0..8].copy_from_slice(&header.to_le_bytes());
        buf[8..16].copy_from_slice(&ip.to_le_bytes());
        buf[PRINT_BUF_OFFSET..n - 1].copy_from_slice(text);
        buf[n - 1..].fill(0);
    }

    /// Decodes the record; the text ends at the first NUL or at the end of
    /// the payload (the ring buffer pads records to 4 bytes).
    pub fn decode(buf: &[u8]) -> Result<Self, EntryError> {
        let ent = TraceEntry::expect(buf, TRACE_PRINT, PRINT_BUF_OFFSET)?;
        let text = &buf[PRINT_BUF_OFFSET..];
        let end = text.iter().position(|&c| c == 0).unwrap_or(text.len());
        Ok(PrintEntry {
            ent,
            ip: rd_u64(buf, 8),
            buf: text[..end].to_vec(),
        })
    }

    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, EntryError> {
        let n = self.encoded_len();
        need(buf, n)?;
        TraceEntry {
            type_: TRACE_PRINT,
            ..self.ent
        }
        .encode(buf)?;
        wr(buf, 8, &self.ip.to_le_bytes());
        wr(buf, PRINT_BUF_OFFSET, &self.buf);
        buf[n - 1] = 0;
        Ok(n)
    }
}

/// `struct stack_entry` (TRACE_STACK): a kernel stack trace, recorded by the
/// `func_stack_trace` option or the `stacktrace` trigger. Linux reserves
/// `16 + 8 * nr` bytes (more or fewer than the declared 8 slots) and sets
/// `size` to the number of frames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackEntry {
    pub ent: TraceEntry,
    pub callers: Vec<u64>,
}

impl StackEntry {
    pub fn encoded_len(&self) -> usize {
        STACK_CALLER_OFFSET + 8 * self.callers.len()
    }

    /// Reads every full word after the header; a `u64::MAX` word ends the
    /// trace early (Linux's printer stops there).
    pub fn decode(buf: &[u8]) -> Result<Self, EntryError> {
        let ent = TraceEntry::expect(buf, TRACE_STACK, STACK_CALLER_OFFSET)?;
        let words = (buf.len() - STACK_CALLER_OFFSET) / 8;
        let declared = rd_u32(buf, 8) as i32;
        let n = if declared >= 0 {
            words.min(declared as usize)
        } else {
            words
        };
        let mut callers = Vec::with_capacity(n);
        for i in 0..n {
            let w = rd_u64(buf, STACK_CALLER_OFFSET + 8 * i);
            if w == u64::MAX {
                break;
            }
            callers.push(w);
        }
        Ok(StackEntry { ent, callers })
    }

    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, EntryError> {
        let n = self.encoded_len();
        need(buf, n)?;
        TraceEntry {
            type_: TRACE_STACK,
            ..self.ent
        }
        .encode(buf)?;
        wr(buf, 8, &(self.callers.len() as i32).to_le_bytes());
        wr(buf, 12, &[0u8; 4]);
        for (i, c) in self.callers.iter().enumerate() {
            wr(buf, STACK_CALLER_OFFSET + 8 * i, &c.to_le_bytes());
        }
        Ok(n)
    }
}

/// `struct func_repeats_entry` (TRACE_FUNC_REPEATS), written by the
/// `func-no-repeats` option instead of identical consecutive function
/// events: the last `ip`/`parent_ip`, how many repeats were folded, and how
/// long before this record the last one happened (48-bit ns delta split in
/// `top_delta_ts`/`bottom_delta_ts`). 32 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuncRepeatsEntry {
    pub ent: TraceEntry,
    pub ip: u64,
    pub parent_ip: u64,
    pub count: u16,
    pub top_delta_ts: u16,
    pub bottom_delta_ts: u32,
}

impl FuncRepeatsEntry {
    pub const SIZE: usize = 32;

    /// `FUNC_REPEATS_GET_DELTA_TS()`.
    pub fn delta_ts(&self) -> u64 {
        ((self.top_delta_ts as u64) << 32) | self.bottom_delta_ts as u64
    }

    pub fn decode(buf: &[u8]) -> Result<Self, EntryError> {
        let ent = TraceEntry::expect(buf, TRACE_FUNC_REPEATS, Self::SIZE)?;
        Ok(FuncRepeatsEntry {
            ent,
            ip: rd_u64(buf, 8),
            parent_ip: rd_u64(buf, 16),
            count: rd_u16(buf, 24),
            top_delta_ts: rd_u16(buf, 26),
            bottom_delta_ts: rd_u32(buf, 28),
        })
    }

    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, EntryError> {
        need(buf, Self::SIZE)?;
        TraceEntry {
            type_: TRACE_FUNC_REPEATS,
            ..self.ent
        }
        .encode(buf)?;
        wr(buf, 8, &self.ip.to_le_bytes());
        wr(buf, 16, &self.parent_ip.to_le_bytes());
        wr(buf, 24, &self.count.to_le_bytes());
        wr(buf, 26, &self.top_delta_ts.to_le_bytes());
        wr(buf, 28, &self.bottom_delta_ts.to_le_bytes());
        Ok(Self::SIZE)
    }
}

/// `struct ctx_switch_entry`: what the wakeup latency tracers record of a
/// wake-up (TRACE_WAKE: `prev` is the waker, `next` the wakee) and of the
/// switch to the woken task (TRACE_CTX). Linux declares it with
/// `FTRACE_ENTRY(context_switch, ...)` and `FTRACE_ENTRY_DUP(wakeup, ...)`
/// in kernel/trace/trace_entries.h. States are `task_state_index()`
/// values (0 `R`, 1 `S`, ... see [`task_index_to_char`]); priorities are
/// `p->prio` stored in a byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CtxSwitchEntry {
    pub ent: TraceEntry,
    pub prev_pid: u32,
    pub next_pid: u32,
    pub next_cpu: u32,
    pub prev_prio: u8,
    pub prev_state: u8,
    pub next_prio: u8,
    pub next_state: u8,
}

/// `task_index_to_char()`: the letter of a `task_state_index()` value
/// (`"RSDTtXZPI"`); an index past the table prints `?` instead of reading
/// past it.
pub fn task_index_to_char(index: u8) -> char {
    const STATE_CHAR: &[u8] = b"RSDTtXZPI";
    STATE_CHAR.get(index as usize).map_or('?', |&c| c as char)
}

/// `task_state_index()` of a `prev_state` bit mask as `sched_switch`
/// reports it (0 for running, else one `TASK_REPORT` bit): the position
/// of its highest bit, plus one (`fls`).
pub fn task_state_index(state: u32) -> u8 {
    (u32::BITS - state.leading_zeros()) as u8
}

impl CtxSwitchEntry {
    pub const SIZE: usize = 24;

    /// True for a TRACE_WAKE record (printed with `  +`), false for
    /// TRACE_CTX (`==>`).
    pub fn is_wake(&self) -> bool {
        self.ent.type_ == TRACE_WAKE
    }

    /// Decodes a TRACE_CTX or TRACE_WAKE record.
    pub fn decode(buf: &[u8]) -> Result<Self, EntryError> {
        let ent = TraceEntry::decode(buf)?;
        if ent.type_ != TRACE_CTX && ent.type_ != TRACE_WAKE {
            return Err(EntryError::WrongType {
                expected: TRACE_CTX,
                found: ent.type_,
            });
        }
        need(buf, Self::SIZE)?;
        Ok(CtxSwitchEntry {
            ent,
            prev_pid: rd_u32(buf, 8),
            next_pid: rd_u32(buf, 12),
            next_cpu: rd_u32(buf, 16),
            prev_prio: buf[20],
            prev_state: buf[21],
            next_prio: buf[22],
            next_state: buf[23],
        })
    }

    /// Encodes the record with the type in `ent` (TRACE_CTX or TRACE_WAKE).
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, EntryError> {
        need(buf, Self::SIZE)?;
        self.ent.encode(buf)?;
        wr(buf, 8, &self.prev_pid.to_le_bytes());
        wr(buf, 12, &self.next_pid.to_le_bytes());
        wr(buf, 16, &self.next_cpu.to_le_bytes());
        buf[20] = self.prev_prio;
        buf[21] = self.prev_state;
        buf[22] = self.next_prio;
        buf[23] = self.next_state;
        Ok(Self::SIZE)
    }
}

/// A record of a trace event (`sched_switch`, `kmalloc`, ...): a type
/// above [`TRACE_LAST_TYPE`], kept whole, because its layout is its
/// event's (the printer finds the event by type:
/// `crate::trace_events::find_event`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventEntry {
    pub ent: TraceEntry,
    /// The whole record, common header included.
    pub raw: Vec<u8>,
}

/// Any record, decoded by its `type`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    Function(FtraceEntry),
    GraphEnt(GraphEntEntry),
    GraphRet(GraphRetEntry),
    Print(PrintEntry),
    Stack(StackEntry),
    FuncRepeats(FuncRepeatsEntry),
    /// TRACE_CTX or TRACE_WAKE (the wakeup latency tracers).
    CtxSwitch(CtxSwitchEntry),
    /// A trace event's record (type above [`TRACE_LAST_TYPE`]).
    Event(EventEntry),
    /// A type this crate does not decode; the header is still valid.
    Other(TraceEntry),
}

impl Entry {
    /// Decodes a ring-buffer payload.
    pub fn decode(buf: &[u8]) -> Result<Entry, EntryError> {
        let ent = TraceEntry::decode(buf)?;
        Ok(match ent.type_ {
            TRACE_FN => Entry::Function(FtraceEntry::decode(buf)?),
            TRACE_GRAPH_ENT => Entry::GraphEnt(GraphEntEntry::decode(buf)?),
            TRACE_GRAPH_RET => Entry::GraphRet(GraphRetEntry::decode(buf)?),
            TRACE_PRINT => Entry::Print(PrintEntry::decode(buf)?),
            TRACE_STACK => Entry::Stack(StackEntry::decode(buf)?),
            TRACE_FUNC_REPEATS => Entry::FuncRepeats(FuncRepeatsEntry::decode(buf)?),
            TRACE_CTX | TRACE_WAKE => Entry::CtxSwitch(CtxSwitchEntry::decode(buf)?),
            t if t > TRACE_LAST_TYPE => Entry::Event(EventEntry {
                ent,
                raw: buf.to_vec(),
            }),
            _ => Entry::Other(ent),
        })
    }

    /// The common header.
    pub fn header(&self) -> &TraceEntry {
        match self {
            Entry::Function(e) => &e.ent,
            Entry::GraphEnt(e) => &e.ent,
            Entry::GraphRet(e) => &e.ent,
            Entry::Print(e) => &e.ent,
            Entry::Stack(e) => &e.ent,
            Entry::FuncRepeats(e) => &e.ent,
            Entry::CtxSwitch(e) => &e.ent,
            Entry::Event(e) => &e.ent,
            Entry::Other(e) => e,
        }
    }

    /// Bytes [`Entry::encode`] writes (0 for `Other`, which has no body).
    pub fn encoded_len(&self) -> usize {
        match self {
            Entry::Function(_) => FTRACE_ENTRY_SIZE,
            Entry::GraphEnt(_) => GRAPH_ENT_SIZE,
            Entry::GraphRet(_) => GRAPH_RET_SIZE,
            Entry::Print(e) => e.encoded_len(),
            Entry::Stack(e) => e.encoded_len(),
            Entry::FuncRepeats(_) => FuncRepeatsEntry::SIZE,
            Entry::CtxSwitch(_) => CtxSwitchEntry::SIZE,
            Entry::Event(e) => e.raw.len().max(TRACE_ENTRY_SIZE),
            Entry::Other(_) => TRACE_ENTRY_SIZE,
        }
    }

    /// Encodes into `buf`; returns the size written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, EntryError> {
        match self {
            Entry::Function(e) => e.encode(buf),
            Entry::GraphEnt(e) => e.encode(buf),
            Entry::GraphRet(e) => e.encode(buf),
            Entry::Print(e) => e.encode(buf),
            Entry::Stack(e) => e.encode(buf),
            Entry::FuncRepeats(e) => e.encode(buf),
            Entry::CtxSwitch(e) => e.encode(buf),
            Entry::Event(e) => {
                // The header first, so the type and flags are `ent`'s.
                need(buf, e.raw.len().max(TRACE_ENTRY_SIZE))?;
                wr(buf, 0, &e.raw);
                e.ent.encode(buf)?;
                Ok(e.raw.len().max(TRACE_ENTRY_SIZE))
            }
            Entry::Other(e) => e.encode(buf).map(|_| TRACE_ENTRY_SIZE),
        }
    }

    /// Encodes into a new vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = alloc::vec![0u8; self.encoded_len()];
        // The vector has exactly encoded_len() bytes, so this cannot fail.
        let n = self.encode(&mut v).unwrap_or(0);
        v.truncate(n);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ent(type_: u16, flags: u8, preempt_count: u8, pid: i32) -> TraceEntry {
        TraceEntry {
            type_,
            flags,
            preempt_count,
            pid,
        }
    }

    proptest! {
        /// The hot-path writers (a packed header word, then `encode_raw`)
        /// write exactly the bytes of the full encoders, which the decoders
        /// read back.
        #[test]
        fn raw_encoders_write_what_encode_writes(
            flags: u8, pc: u8, pid: i32, a: u64, b: u64, depth: i32, overrun: u32, t0: u64, t1: u64
        ) {
            let word = TraceEntry::pack(TRACE_FN, flags, pc, pid);
            let mut h = [0u8; 8];
            ent(TRACE_FN, flags, pc, pid).encode(&mut h).unwrap();
            prop_assert_eq!(word.to_le_bytes(), h);

            let f = FtraceEntry { ent: ent(TRACE_FN, flags, pc, pid), ip: a, parent_ip: b };
            let (mut x, mut y) = ([0xaau8; 24], [0x55u8; 24]);
            f.encode(&mut x).unwrap();
            FtraceEntry::encode_raw(&mut y, word, a, b);
            prop_assert_eq!(x, y);
            prop_assert_eq!(FtraceEntry::decode(&y).unwrap(), f);

            let e = GraphEntEntry { ent: ent(TRACE_GRAPH_ENT, flags, pc, pid), func: a, depth };
            let (mut x, mut y) = ([0xaau8; 20], [0x55u8; 20]);
            e.encode(&mut x).unwrap();
            GraphEntEntry::encode_raw(&mut y, TraceEntry::pack(TRACE_GRAPH_ENT, flags, pc, pid), a, depth);
            prop_assert_eq!(x, y);
            prop_assert_eq!(GraphEntEntry::decode(&y).unwrap(), e);

            let r = GraphRetEntry {
                ent: ent(TRACE_GRAPH_RET, flags, pc, pid),
                func: a,
                depth,
                overrun,
                calltime: t0,
                rettime: t1,
            };
            let (mut x, mut y) = ([0xaau8; 40], [0x55u8; 40]);
            r.encode(&mut x).unwrap();
            GraphRetEntry::encode_raw(
                &mut y,
                TraceEntry::pack(TRACE_GRAPH_RET, flags, pc, pid),
                a,
                depth,
                overrun,
                t0,
                t1,
            );
            prop_assert_eq!(x, y);
            prop_assert_eq!(GraphRetEntry::decode(&y).unwrap(), r);
        }

        /// `trace_printk`'s writer: the reservation of `printk_size` bytes
        /// (padded to 4 by the ring buffer, stale bytes in it) ends up
        /// holding the bytes `PrintEntry::encode` writes, text kept as it
        /// is (no `'\n'` added), and decodes back.
        #[test]
        fn print_encode_raw_writes_what_encode_writes(
            flags: u8, pc: u8, pid: i32, ip: u64,
            text in proptest::collection::vec(1u8..=255, 0..200), pad in 0usize..4
        ) {
            let p = PrintEntry { ent: ent(TRACE_PRINT, flags, pc, pid), ip, buf: text.clone() };
            let n = PrintEntry::printk_size(text.len());
            prop_assert_eq!(n, p.encoded_len());
            let mut x = vec![0u8; n + pad];
            p.encode(&mut x).unwrap();
            let mut y = vec![0x55u8; n + pad];
            PrintEntry::encode_raw(&mut y, TraceEntry::pack(TRACE_PRINT, flags, pc, pid), ip, &text);
            prop_assert_eq!(&x, &y);
            prop_assert_eq!(PrintEntry::decode(&y).unwrap(), p);
        }
    }

    #[test]
    fn print_encode_raw_zeroes_a_short_slice() {
        let mut b = [0xffu8; 20];
        PrintEntry::encode_raw(&mut b, u64::MAX, 1, b"abcd");
        assert_eq!(b, [0; 20]);
        let mut b = [0xffu8; 21];
        PrintEntry::encode_raw(&mut b, 0, 1, b"abcd");
        assert_eq!(&b[16..], b"abcd\0");
    }

    #[test]
    fn raw_encoders_zero_a_short_slice() {
        let mut b = [0xffu8; 23];
        FtraceEntry::encode_raw(&mut b, u64::MAX, 1, 2);
        assert_eq!(b, [0; 23]);
        let mut b = [0xffu8; 19];
        GraphEntEntry::encode_raw(&mut b, u64::MAX, 1, 2);
        assert_eq!(b, [0; 19]);
        let mut b = [0xffu8; 39];
        GraphRetEntry::encode_raw(&mut b, u64::MAX, 1, 2, 3, 4, 5);
        assert_eq!(b, [0; 39]);
    }

    /// The ring buffer's largest payload (4096-byte pages).
    const MAX: usize = crate::ring_buffer::BUF_MAX_DATA_SIZE;

    #[test]
    fn marker_size_of_a_plain_write() {
        // Header and ip (16), the text, '\n' and NUL.
        assert_eq!(PrintEntry::marker_size(100, MAX), (100, 118));
        assert_eq!(PrintEntry::marker_size(0, MAX), (0, 0));
    }

    #[test]
    fn a_short_marker_keeps_room_for_faulted() {
        assert_eq!(PrintEntry::marker_size(5, MAX), (5, 27));
        assert_eq!(PrintEntry::marker_size(9, MAX), (9, 27));
        assert_eq!(PrintEntry::marker_size(10, MAX), (10, 28));
    }

    #[test]
    fn a_long_marker_is_cut_to_what_one_event_holds() {
        assert_eq!(MAX, 4072);
        assert_eq!(PrintEntry::marker_size(4096, MAX), (4054, 4072));
        assert_eq!(PrintEntry::marker_size(4054, MAX), (4054, 4072));
        assert_eq!(PrintEntry::marker_size(4055, MAX), (4054, 4072));
        // With bigger sub-buffers the limit is TRACE_MARKER_MAX_SIZE.
        assert_eq!(PrintEntry::marker_size(10_000, 8192), (4096, 4114));
    }
}
