//! trace-cmd's `trace.dat` file, version 6: writer and reader
//! (trace-cmd: lib/trace-cmd/trace-output.c writes it, trace-input.c reads
//! it; the layout is in Documentation/trace-cmd/trace-cmd.dat.v6.5.txt).
//!
//! A v6 file is a fixed sequence, read front to back:
//!
//! 1. `17 08 44 "tracing" "6\0"`, endianness byte (0 = little), `sizeof(long)`
//!    byte, u32 page size;
//! 2. `"header_page\0"` u64 length + text, `"header_event\0"` u64 length + text
//!    (the tracefs files `events/header_page` and `events/header_event`);
//! 3. u32 count, then u64 length + text of each `events/ftrace/*/format`;
//! 4. u32 number of other event systems, each: cstr name, u32 count,
//!    (u64 length + format)*;
//! 5. u32 length + kallsyms text (`/proc/kallsyms` lines);
//! 6. u32 length + printk formats;
//! 7. **u64** length + saved_cmdlines text;
//! 8. u32 CPU count, `"options  \0"` then options (u16 id, u32 size, data)
//!    ended by a bare u16 0;
//! 9. `"flyrecord\0"`, per CPU u64 file offset + u64 size of its pages, then
//!    zero padding so that every CPU's pages start on a page boundary (the
//!    reader mmaps them).
//!
//! Every number is in the file's byte order; we write little endian only
//! (x86_64), and the reader accepts only that.

use std::fmt;

/// `17 08 44` + `tracing`.
pub const MAGIC: &[u8; 10] = b"\x17\x08\x44tracing";
/// Option ids (trace-cmd's `enum tracecmd_file_options`).
pub const OPTION_DONE: u16 = 0;
pub const OPTION_DATE: u16 = 1;
pub const OPTION_CPUSTAT: u16 = 2;
pub const OPTION_BUFFER: u16 = 3;
pub const OPTION_TRACECLOCK: u16 = 4;
pub const OPTION_UNAME: u16 = 5;

/// One non-ftrace event system (EVENT FORMATS section), e.g. `sched`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventSystem {
    pub name: String,
    pub formats: Vec<Vec<u8>>,
}

/// The content of a trace.dat file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceDat {
    /// `sizeof(long)` of the traced kernel (8 on x86_64).
    pub long_size: u8,
    pub page_size: u32,
    pub header_page: Vec<u8>,
    pub header_event: Vec<u8>,
    /// The `events/ftrace/*/format` texts.
    pub ftrace_formats: Vec<Vec<u8>>,
    pub event_systems: Vec<EventSystem>,
    /// `/proc/kallsyms`-style text.
    pub kallsyms: Vec<u8>,
    /// `printk_formats` (for bprint events; may be empty).
    pub printk_formats: Vec<u8>,
    /// `saved_cmdlines`: `"pid comm\n"` lines.
    pub cmdlines: Vec<u8>,
    /// Options, in file order (id, data). A TRACECLOCK option must have
    /// empty data; [`TraceDat::trace_clock`] then holds its text.
    pub options: Vec<(u16, Vec<u8>)>,
    /// The `trace_clock` text written after the CPU table (only with a
    /// TRACECLOCK option).
    pub trace_clock: Option<Vec<u8>>,
    /// Per CPU: whole pages, concatenated (empty for a CPU without data).
    pub cpus: Vec<Vec<u8>>,
}

/// Why a file could not be written or read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatError(pub String);

impl fmt::Display for DatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DatError {}

fn err<T>(msg: impl Into<String>) -> Result<T, DatError> {
    Err(DatError(msg.into()))
}

impl TraceDat {
    /// An empty file description for `nr_cpus` CPUs.
    pub fn new(long_size: u8, page_size: u32, nr_cpus: usize) -> TraceDat {
        TraceDat {
            long_size,
            page_size,
            header_page: Vec::new(),
            header_event: Vec::new(),
            ftrace_formats: Vec::new(),
            event_systems: Vec::new(),
            kallsyms: Vec::new(),
            printk_formats: Vec::new(),
            cmdlines: Vec::new(),
            options: Vec::new(),
            trace_clock: None,
            cpus: vec![Vec::new(); nr_cpus],
        }
    }

    /// The UNAME option's text, if any.
    pub fn uname(&self) -> Option<String> {
        self.options
            .iter()
            .find(|(id, _)| *id == OPTION_UNAME)
            .map(|(_, d)| {
                let end = d.iter().position(|&b| b == 0).unwrap_or(d.len());
                String::from_utf8_lossy(&d[..end]).into_owned()
            })
    }

    /// Checks what the readers rely on: long size 4 or 8, a power-of-two
    /// page size, a non-empty header_page (an empty one selects the pre-2.6.31
    /// page format and no event is shown), whole pages per CPU, TRACECLOCK
    /// only together with its text.
    pub fn validate(&self) -> Result<(), DatError> {
        if self.long_size != 4 && self.long_size != 8 {
            return err(format!("sizeof(long) {} is not 4 or 8", self.long_size));
        }
        if !self.page_size.is_power_of_two() || self.page_size < 4096 {
            return err(format!(
                "page size {} is not a power of two >= 4096",
                self.page_size
            ));
        }
        if self.header_page.is_empty() {
            return err("empty header_page: trace-cmd would read no events");
        }
        for (cpu, data) in self.cpus.iter().enumerate() {
            if data.len() % self.page_size as usize != 0 {
                return err(format!(
                    "CPU {cpu}: {} bytes is not whole pages",
                    data.len()
                ));
            }
        }
        let clock_opt = self
            .options
            .iter()
            .any(|(id, d)| *id == OPTION_TRACECLOCK && d.is_empty());
        if clock_opt != self.trace_clock.is_some() {
            return err("a TRACECLOCK option and the trace_clock text go together");
        }
        if self.options.iter().any(|(id, _)| *id == OPTION_DONE) {
            return err("option id 0 is the end marker");
        }
        Ok(())
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, DatError> {
        self.validate()?;
        let mut w = Vec::new();
        w.extend_from_slice(MAGIC);
        w.extend_from_slice(b"6\0");
        w.push(0); // little endian
        w.push(self.long_size);
        w.extend_from_slice(&self.page_size.to_le_bytes());

        w.extend_from_slice(b"header_page\0");
        w.extend_from_slice(&(self.header_page.len() as u64).to_le_bytes());
        w.extend_from_slice(&self.header_page);
        w.extend_from_slice(b"header_event\0");
        w.extend_from_slice(&(self.header_event.len() as u64).to_le_bytes());
        w.extend_from_slice(&self.header_event);

        w.extend_from_slice(&u32_len(self.ftrace_formats.len())?.to_le_bytes());
        for f in &self.ftrace_formats {
            w.extend_from_slice(&(f.len() as u64).to_le_bytes());
            w.extend_from_slice(f);
        }
        w.extend_from_slice(&u32_len(self.event_systems.len())?.to_le_bytes());
        for sys in &self.event_systems {
            if sys.name.as_bytes().contains(&0) {
                return err("event system name contains a NUL");
            }
            w.extend_from_slice(sys.name.as_bytes());
            w.push(0);
            w.extend_from_slice(&u32_len(sys.formats.len())?.to_le_bytes());
            for f in &sys.formats {
                w.extend_from_slice(&(f.len() as u64).to_le_bytes());
                w.extend_from_slice(f);
            }
        }
        w.extend_from_slice(&u32_len(self.kallsyms.len())?.to_le_bytes());
        w.extend_from_slice(&self.kallsyms);
        w.extend_from_slice(&u32_len(self.printk_formats.len())?.to_le_bytes());
        w.extend_from_slice(&self.printk_formats);
        w.extend_from_slice(&(self.cmdlines.len() as u64).to_le_bytes());
        w.extend_from_slice(&self.cmdlines);

        w.extend_from_slice(&u32_len(self.cpus.len())?.to_le_bytes());
        w.extend_from_slice(b"options  \0");
        for (id, data) in &self.options {
            w.extend_from_slice(&id.to_le_bytes());
            w.extend_from_slice(&u32_len(data.len())?.to_le_bytes());
            w.extend_from_slice(data);
        }
        w.extend_from_slice(&OPTION_DONE.to_le_bytes());

        w.extend_from_slice(b"flyrecord\0");
        let table_at = w.len();
        w.resize(table_at + 16 * self.cpus.len(), 0);
        if let Some(clock) = &self.trace_clock {
            w.extend_from_slice(&(clock.len() as u64).to_le_bytes());
            w.extend_from_slice(clock);
        }
        let page = self.page_size as usize;
        for (cpu, data) in self.cpus.iter().enumerate() {
            let (off, size) = if data.is_empty() {
                (0u64, 0u64)
            } else {
                w.resize(w.len().div_ceil(page) * page, 0);
                let off = w.len() as u64;
                w.extend_from_slice(data);
                (off, data.len() as u64)
            };
            let at = table_at + 16 * cpu;
            w[at..at + 8].copy_from_slice(&off.to_le_bytes());
            w[at + 8..at + 16].copy_from_slice(&size.to_le_bytes());
        }
        Ok(w)
    }

    /// Parses a v6 file (little endian).
    pub fn parse(bytes: &[u8]) -> Result<TraceDat, DatError> {
        let mut r = Reader { b: bytes, pos: 0 };
        if r.take(10)? != MAGIC {
            return err("not a trace.dat file (bad magic)");
        }
        let version = r.cstr()?;
        if version != b"6" {
            return err(format!(
                "trace.dat version {} (only 6 is read)",
                String::from_utf8_lossy(version)
            ));
        }
        if r.u8()? != 0 {
            return err("big-endian trace.dat files are not supported");
        }
        let long_size = r.u8()?;
        let page_size = r.u32()?;
        let mut dat = TraceDat::new(long_size, page_size, 0);
        if r.cstr()? != b"header_page" {
            return err("missing header_page");
        }
        let n = r.u64()?;
        dat.header_page = r.take_u64(n)?.to_vec();
        if r.cstr()? != b"header_event" {
            return err("missing header_event");
        }
        let n = r.u64()?;
        dat.header_event = r.take_u64(n)?.to_vec();
        for _ in 0..r.u32()? {
            let n = r.u64()?;
            dat.ftrace_formats.push(r.take_u64(n)?.to_vec());
        }
        for _ in 0..r.u32()? {
            let name = String::from_utf8_lossy(r.cstr()?).into_owned();
            let mut sys = EventSystem {
                name,
                formats: Vec::new(),
            };
            for _ in 0..r.u32()? {
                let n = r.u64()?;
                sys.formats.push(r.take_u64(n)?.to_vec());
            }
            dat.event_systems.push(sys);
        }
        let n = r.u32()?;
        dat.kallsyms = r.take(n as usize)?.to_vec();
        let n = r.u32()?;
        dat.printk_formats = r.take(n as usize)?.to_vec();
        let n = r.u64()?;
        dat.cmdlines = r.take_u64(n)?.to_vec();
        let nr_cpus = r.u32()? as usize;
        if nr_cpus > 4096 {
            return err(format!("{nr_cpus} CPUs"));
        }
        let mut tag = r.take(10)?;
        if tag == b"options  \0" {
            loop {
                let id = r.u16()?;
                if id == OPTION_DONE {
                    break;
                }
                let size = r.u32()?;
                dat.options.push((id, r.take(size as usize)?.to_vec()));
            }
            tag = r.take(10)?;
        }
        if tag == b"latency  \0" {
            return err("latency-format trace.dat files are not supported");
        }
        if tag != b"flyrecord\0" {
            return err("missing flyrecord section");
        }
        let mut table = Vec::with_capacity(nr_cpus);
        for _ in 0..nr_cpus {
            table.push((r.u64()?, r.u64()?));
        }
        if dat
            .options
            .iter()
            .any(|(id, d)| *id == OPTION_TRACECLOCK && d.is_empty())
        {
            let n = r.u64()?;
            dat.trace_clock = Some(r.take_u64(n)?.to_vec());
        }
        for (cpu, (off, size)) in table.into_iter().enumerate() {
            if size == 0 {
                dat.cpus.push(Vec::new());
                continue;
            }
            if off % page_size as u64 != 0 || size % page_size as u64 != 0 {
                return err(format!(
                    "CPU {cpu}: data at {off} size {size} is not page-aligned"
                ));
            }
            let end = off.checked_add(size).filter(|&e| e <= bytes.len() as u64);
            let Some(end) = end else {
                return err(format!(
                    "CPU {cpu}: data at {off} size {size} runs past the end of the file"
                ));
            };
            dat.cpus.push(bytes[off as usize..end as usize].to_vec());
        }
        Ok(dat)
    }

    /// The pages of `cpu`.
    pub fn pages(&self, cpu: usize) -> impl Iterator<Item = &[u8]> {
        self.cpus[cpu].chunks_exact(self.page_size as usize)
    }
}

fn u32_len(n: usize) -> Result<u32, DatError> {
    u32::try_from(n).map_err(|_| DatError(format!("section of {n} bytes is too large")))
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DatError> {
        match self.pos.checked_add(n).filter(|&e| e <= self.b.len()) {
            Some(end) => {
                let s = &self.b[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => err(format!(
                "file truncated at byte {} (needed {n} more bytes)",
                self.pos
            )),
        }
    }
    fn take_u64(&mut self, n: u64) -> Result<&'a [u8], DatError> {
        let n = usize::try_from(n).map_err(|_| DatError(format!("length {n} too large")))?;
        self.take(n)
    }
    fn cstr(&mut self) -> Result<&'a [u8], DatError> {
        let rest = &self.b[self.pos..];
        let Some(n) = rest.iter().position(|&c| c == 0) else {
            return err(format!("unterminated string at byte {}", self.pos));
        };
        self.pos += n + 1;
        Ok(&rest[..n])
    }
    fn u8(&mut self) -> Result<u8, DatError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, DatError> {
        let s = self.take(2)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }
    fn u32(&mut self) -> Result<u32, DatError> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self) -> Result<u64, DatError> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }
}
