//! The byte stream the kernel's `trace-export` command writes to COM2, and
//! its decoder.
//!
//! The console (COM1) is a terminal: the shell echoes, `println!` from other
//! CPUs interleaves, and a terminal may translate bytes. Ring-buffer pages are
//! binary, so they travel on the second UART, which QEMU writes to a file
//! byte for byte (`-serial file:PATH` after the console's `-serial`). Every
//! piece is a *frame*, so that a lost, damaged or cut-off transfer is noticed
//! instead of becoming a broken trace.dat:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `KTRC` |
//! | 4 | 2 | type (u16): 1 START, 2 FILE, 3 PAGE, 4 END |
//! | 6 | 2 | aux (u16): the CPU of a PAGE frame, 0 otherwise |
//! | 8 | 4 | sequence number (u32): 0 for START, +1 per frame |
//! | 12 | 4 | payload length n (u32) |
//! | 16 | n | payload |
//! | 16+n | 4 | CRC-32 of bytes 4 .. 16+n (everything but the magic and the CRC) |
//!
//! All numbers are little endian. Payloads:
//! - START: u32 stream version (1), u32 number of CPUs, u32 page size,
//!   u32 `sizeof(long)`, then the kernel's uname text (the rest).
//! - FILE: the tracefs path (e.g. `events/header_page`, `kallsyms`,
//!   `saved_cmdlines`), a NUL, then the file's bytes.
//! - PAGE: one `trace_pipe_raw` page of CPU `aux` (page-size bytes).
//! - END: u32 status (0 = complete, else the errno that stopped the
//!   export), u32 number of frames before END (START included), u32 number of
//!   CPUs, then one u32 page count per CPU.
//!
//! A capture file may hold several transfers (one per `trace-export`); the
//! decoder returns them all. It accepts nothing else: a byte that is not part
//! of a valid frame, a bad CRC, a sequence gap, a FILE/PAGE outside a
//! transfer, a transfer without END, or an END whose totals disagree with what
//! arrived is an error.

use std::collections::BTreeMap;
use std::fmt;

use super::crc32::{crc32, Crc32};

/// `KTRC`.
pub const MAGIC: [u8; 4] = *b"KTRC";
/// Size of the header before the payload.
pub const HEADER_LEN: usize = 16;
/// Version in the START payload.
pub const STREAM_VERSION: u32 = 1;
/// Largest payload the decoder accepts (a page is 4 KiB; kallsyms a few
/// hundred KiB). Anything larger is taken as a corrupted length field.
pub const MAX_PAYLOAD: usize = 64 << 20;

/// Frame types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum FrameType {
    Start = 1,
    File = 2,
    Page = 3,
    End = 4,
}

impl FrameType {
    fn from_u16(v: u16) -> Option<FrameType> {
        match v {
            1 => Some(FrameType::Start),
            2 => Some(FrameType::File),
            3 => Some(FrameType::Page),
            4 => Some(FrameType::End),
            _ => None,
        }
    }
}

/// One decoded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub ty: FrameType,
    pub aux: u16,
    pub seq: u32,
    pub payload: &'a [u8],
}

/// Why a stream could not be decoded. Offsets are byte offsets in the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The stream is empty: nothing was exported (was COM2 connected?).
    Empty,
    /// No magic at this offset.
    BadMagic { offset: usize },
    /// The stream ends inside the frame that starts here.
    Truncated { offset: usize },
    /// The CRC of the frame at this offset does not match.
    BadCrc {
        offset: usize,
        expected: u32,
        found: u32,
    },
    /// Unknown frame type.
    BadType { offset: usize, ty: u16 },
    /// Payload length beyond [`MAX_PAYLOAD`].
    TooLong { offset: usize, len: u32 },
    /// A frame is missing before this one.
    Sequence {
        offset: usize,
        expected: u32,
        found: u32,
    },
    /// A frame that cannot appear here (e.g. PAGE before START).
    Unexpected { offset: usize, what: String },
    /// A malformed payload.
    BadPayload { offset: usize, what: String },
    /// The last transfer has no END frame: the export was cut off.
    NoEnd { frames: u32 },
    /// END reports a failure inside the kernel.
    KernelError { status: u32 },
    /// END's totals disagree with what was received.
    Mismatch { what: String },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Empty => write!(f, "no data received on the export channel (COM2)"),
            FrameError::BadMagic { offset } => {
                write!(f, "no frame magic at byte {offset}: corrupted stream")
            }
            FrameError::Truncated { offset } => {
                write!(f, "stream cut off inside the frame at byte {offset}")
            }
            FrameError::BadCrc {
                offset,
                expected,
                found,
            } => {
                write!(f, "CRC mismatch in the frame at byte {offset} (frame says {expected:#010x}, data gives {found:#010x})")
            }
            FrameError::BadType { offset, ty } => {
                write!(f, "unknown frame type {ty} at byte {offset}")
            }
            FrameError::TooLong { offset, len } => {
                write!(f, "frame at byte {offset} claims a {len}-byte payload")
            }
            FrameError::Sequence {
                offset,
                expected,
                found,
            } => {
                write!(f, "frame at byte {offset} has sequence number {found}, expected {expected}: frames were lost")
            }
            FrameError::Unexpected { offset, what } => {
                write!(f, "unexpected frame at byte {offset}: {what}")
            }
            FrameError::BadPayload { offset, what } => {
                write!(f, "bad payload in the frame at byte {offset}: {what}")
            }
            FrameError::NoEnd { frames } => {
                write!(
                    f,
                    "transfer incomplete: {frames} frames received but no END frame"
                )
            }
            FrameError::KernelError { status } => {
                write!(f, "the kernel reported export error {status}")
            }
            FrameError::Mismatch { what } => write!(f, "transfer totals disagree: {what}"),
        }
    }
}

impl std::error::Error for FrameError {}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Encodes one frame (what the kernel sends; used by tests and tools).
pub fn encode_frame(ty: FrameType, aux: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len() + 4);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(ty as u16).to_le_bytes());
    out.extend_from_slice(&aux.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32(&out[4..]);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Reads the frame at `offset`; returns it and the offset after it.
pub fn read_frame(stream: &[u8], offset: usize) -> Result<(Frame<'_>, usize), FrameError> {
    let rest = &stream[offset..];
    if rest.len() < 4 {
        return Err(if MAGIC.starts_with(rest) {
            FrameError::Truncated { offset }
        } else {
            FrameError::BadMagic { offset }
        });
    }
    if rest[..4] != MAGIC {
        return Err(FrameError::BadMagic { offset });
    }
    if rest.len() < HEADER_LEN {
        return Err(FrameError::Truncated { offset });
    }
    let ty_raw = le_u16(rest, 4);
    let aux = le_u16(rest, 6);
    let seq = le_u32(rest, 8);
    let len = le_u32(rest, 12);
    if len as usize > MAX_PAYLOAD {
        return Err(FrameError::TooLong { offset, len });
    }
    let end = HEADER_LEN + len as usize + 4;
    if rest.len() < end {
        return Err(FrameError::Truncated { offset });
    }
    let mut crc = Crc32::new();
    crc.update(&rest[4..end - 4]);
    let found = crc.finish();
    let expected = le_u32(rest, end - 4);
    if found != expected {
        return Err(FrameError::BadCrc {
            offset,
            expected,
            found,
        });
    }
    let ty = FrameType::from_u16(ty_raw).ok_or(FrameError::BadType { offset, ty: ty_raw })?;
    Ok((
        Frame {
            ty,
            aux,
            seq,
            payload: &rest[HEADER_LEN..end - 4],
        },
        offset + end,
    ))
}

/// One complete `trace-export`: what the kernel had under tracefs, and every
/// CPU's pages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transfer {
    pub nr_cpus: u32,
    pub page_size: u32,
    pub long_size: u32,
    pub uname: String,
    /// tracefs path -> content.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Per CPU, the pages in the order they were read (oldest first).
    pub pages: Vec<Vec<Vec<u8>>>,
}

impl Transfer {
    /// A file as text (lossy UTF-8), or None if it was not sent.
    pub fn text(&self, name: &str) -> Option<String> {
        self.files
            .get(name)
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// Encodes the transfer as the kernel would send it (START, FILEs in
    /// name order, PAGEs CPU by CPU, END with status 0).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut seq = 0u32;
        let push = |out: &mut Vec<u8>, seq: &mut u32, ty, aux, payload: &[u8]| {
            out.extend(encode_frame(ty, aux, *seq, payload));
            *seq += 1;
        };
        let mut start = Vec::new();
        for v in [STREAM_VERSION, self.nr_cpus, self.page_size, self.long_size] {
            start.extend_from_slice(&v.to_le_bytes());
        }
        start.extend_from_slice(self.uname.as_bytes());
        push(&mut out, &mut seq, FrameType::Start, 0, &start);
        for (name, content) in &self.files {
            let mut p = name.as_bytes().to_vec();
            p.push(0);
            p.extend_from_slice(content);
            push(&mut out, &mut seq, FrameType::File, 0, &p);
        }
        for (cpu, pages) in self.pages.iter().enumerate() {
            for page in pages {
                push(&mut out, &mut seq, FrameType::Page, cpu as u16, page);
            }
        }
        let mut end = Vec::new();
        end.extend_from_slice(&0u32.to_le_bytes());
        end.extend_from_slice(&seq.to_le_bytes());
        end.extend_from_slice(&self.nr_cpus.to_le_bytes());
        for cpu in 0..self.nr_cpus as usize {
            let n = self.pages.get(cpu).map_or(0, |p| p.len()) as u32;
            end.extend_from_slice(&n.to_le_bytes());
        }
        push(&mut out, &mut seq, FrameType::End, 0, &end);
        out
    }
}

/// Decodes every transfer in `stream` (see the module documentation for
/// what is rejected).
pub fn decode_stream(stream: &[u8]) -> Result<Vec<Transfer>, FrameError> {
    if stream.is_empty() {
        return Err(FrameError::Empty);
    }
    let mut transfers = Vec::new();
    let mut current: Option<(Transfer, u32)> = None; // transfer, next sequence number
    let mut offset = 0;
    while offset < stream.len() {
        let (frame, next) = read_frame(stream, offset)?;
        let unexpected = |what: &str| FrameError::Unexpected {
            offset,
            what: what.to_string(),
        };
        let bad = |what: String| FrameError::BadPayload { offset, what };
        match frame.ty {
            FrameType::Start => {
                if let Some((_, frames)) = current {
                    return Err(FrameError::NoEnd { frames });
                }
                if frame.seq != 0 {
                    return Err(FrameError::Sequence {
                        offset,
                        expected: 0,
                        found: frame.seq,
                    });
                }
                let p = frame.payload;
                if p.len() < 16 {
                    return Err(bad(format!("START payload is {} bytes", p.len())));
                }
                let version = le_u32(p, 0);
                if version != STREAM_VERSION {
                    return Err(bad(format!(
                        "stream version {version}, this ktrace reads {STREAM_VERSION}"
                    )));
                }
                let nr_cpus = le_u32(p, 4);
                let page_size = le_u32(p, 8);
                let long_size = le_u32(p, 12);
                if nr_cpus == 0 || nr_cpus > 4096 {
                    return Err(bad(format!("{nr_cpus} CPUs")));
                }
                if !page_size.is_power_of_two() || !(4096..=65536).contains(&page_size) {
                    return Err(bad(format!("page size {page_size}")));
                }
                if long_size != 4 && long_size != 8 {
                    return Err(bad(format!("sizeof(long) = {long_size}")));
                }
                let t = Transfer {
                    nr_cpus,
                    page_size,
                    long_size,
                    uname: String::from_utf8_lossy(&p[16..]).into_owned(),
                    files: BTreeMap::new(),
                    pages: vec![Vec::new(); nr_cpus as usize],
                };
                current = Some((t, 1));
            }
            _ => {
                let Some((t, expected)) = current.as_mut() else {
                    return Err(unexpected("data frame before a START frame"));
                };
                if frame.seq != *expected {
                    return Err(FrameError::Sequence {
                        offset,
                        expected: *expected,
                        found: frame.seq,
                    });
                }
                *expected += 1;
                match frame.ty {
                    FrameType::Start => unreachable!("handled above"),
                    FrameType::File => {
                        let nul = frame
                            .payload
                            .iter()
                            .position(|&b| b == 0)
                            .ok_or_else(|| bad("FILE without a NUL after its name".into()))?;
                        let name = std::str::from_utf8(&frame.payload[..nul])
                            .map_err(|_| bad("FILE name is not UTF-8".into()))?;
                        if t.files
                            .insert(name.to_string(), frame.payload[nul + 1..].to_vec())
                            .is_some()
                        {
                            return Err(bad(format!("file {name} sent twice")));
                        }
                    }
                    FrameType::Page => {
                        let cpu = frame.aux as usize;
                        if cpu >= t.pages.len() {
                            return Err(bad(format!("page for CPU {cpu} of {}", t.nr_cpus)));
                        }
                        if frame.payload.len() != t.page_size as usize {
                            return Err(bad(format!(
                                "page of {} bytes, page size {}",
                                frame.payload.len(),
                                t.page_size
                            )));
                        }
                        t.pages[cpu].push(frame.payload.to_vec());
                    }
                    FrameType::End => {
                        let (t, expected) = current.take().expect("checked above");
                        check_end(&t, expected - 1, frame.payload).map_err(|e| match e {
                            FrameError::BadPayload { what, .. } => bad(what),
                            e => e,
                        })?;
                        transfers.push(t);
                    }
                }
            }
        }
        offset = next;
    }
    if let Some((_, frames)) = current {
        return Err(FrameError::NoEnd { frames });
    }
    Ok(transfers)
}

/// Checks END's totals. `frames` = frames received before END.
fn check_end(t: &Transfer, frames: u32, p: &[u8]) -> Result<(), FrameError> {
    let bad = |what: String| FrameError::BadPayload { offset: 0, what };
    if p.len() < 12 {
        return Err(bad(format!("END payload is {} bytes", p.len())));
    }
    let status = le_u32(p, 0);
    let sent = le_u32(p, 4);
    let nr_cpus = le_u32(p, 8);
    if status != 0 {
        return Err(FrameError::KernelError { status });
    }
    if sent != frames {
        return Err(FrameError::Mismatch {
            what: format!("END counts {sent} frames, {frames} arrived"),
        });
    }
    if nr_cpus != t.nr_cpus || p.len() != 12 + 4 * nr_cpus as usize {
        return Err(bad(format!(
            "END lists {nr_cpus} CPUs in {} bytes, START said {}",
            p.len(),
            t.nr_cpus
        )));
    }
    for cpu in 0..nr_cpus as usize {
        let n = le_u32(p, 12 + 4 * cpu) as usize;
        if n != t.pages[cpu].len() {
            return Err(FrameError::Mismatch {
                what: format!(
                    "END counts {n} pages for CPU {cpu}, {} arrived",
                    t.pages[cpu].len()
                ),
            });
        }
    }
    Ok(())
}
