//! What `trace-cmd record` reads from a Linux kernel, and a way to get it to
//! the host: the tracefs metadata files, `per_cpu/cpuN/trace_pipe_raw`, and
//! the `trace-export` shell command that sends all of it over COM2.
//!
//! trace-cmd builds its `trace.dat` from files Linux provides
//! (trace-cmd: lib/tracefs + lib/trace-cmd/trace-output.c):
//! `events/header_page` and `events/header_event` (ring_buffer.c
//! `ring_buffer_print_page_header`/`_entry_header`), every
//! `events/ftrace/<event>/format` (trace_export.c) and
//! `events/<system>/<event>/format` (trace_events.c), `saved_cmdlines`
//! (trace.c), `/proc/kallsyms` (kallsyms.c) and each CPU's
//! `trace_pipe_raw`, which hands out whole ring-buffer pages in their binary
//! `buffer_data_page` form (`ring_buffer_read_page`). We create the same
//! files, with the texts from `tracer::events`, plus `kallsyms` here in
//! tracefs (we have no /proc).
//!
//! Our kernel cannot run trace-cmd, and the console cannot carry binary
//! data (it echoes, interleaves output from other CPUs, and a terminal may
//! translate bytes). So `trace-export` writes the same files and pages to
//! the second UART, which QEMU can write to a host file byte for byte
//! (`./qemu.sh -- -serial file:com2.bin`), as checksummed frames that the
//! host's `ktrace` decodes (build-tools/src/tracedat/frame.rs documents the
//! format; this is its sender):
//!
//! `"KTRC"`, u16 type, u16 aux (CPU of a page), u32 sequence number,
//! u32 payload length, payload, CRC-32 of everything after the magic.
//! START (version, CPUs, page size, sizeof(long), uname), one FILE per
//! file (`path\0content`), one PAGE per ring-buffer page, and END (status,
//! frame count, pages per CPU), so a lost or damaged frame is detected.
//!
//! Like `trace-cmd extract`, the export consumes the pages it sends. While
//! it runs, recording is paused with `ring_buffer_record_disable` so that
//! the export does not trace itself into the buffer it is draining.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use spin::Mutex;
use tracer::crc32::Crc32;
use tracer::events;
use tracer::ring_buffer::{RingBuffer, BUF_PAGE_SIZE, PAGE_SIZE};

use crate::arch::serial::SerialPort;
use crate::fs::tracefs::{self, Dentry, TRACE_MODE_READ};
use crate::fs::{Errno, OpenFile, OpenFlags};

/// I/O base of COM2.
pub const COM2_BASE: u16 = 0x2f8;
/// Frame magic.
pub const MAGIC: [u8; 4] = *b"KTRC";
/// Version in the START payload.
pub const STREAM_VERSION: u32 = 1;

/// Frame types.
#[derive(Clone, Copy)]
#[repr(u16)]
enum FrameType {
    Start = 1,
    File = 2,
    Page = 3,
    End = 4,
}

static COM2: Mutex<SerialPort> = Mutex::new(SerialPort::new(COM2_BASE));

/// The ring buffer of the top-level trace array (what `trace` shows).
fn ring_buffer() -> Option<&'static RingBuffer> {
    super::trace::global_trace().map(|tr| &tr.buffer)
}

// ---------------------------------------------------------------------------
// The metadata files.

/// `saved_cmdlines`: `"pid comm\n"` for every task the tracer has seen
/// (Linux's `saved_cmdlines_show`), from the same cache the `trace` file
/// takes its task names from; tasks alive now are added, so a trace.dat
/// names them even if they were not recorded yet.
pub fn saved_cmdlines() -> String {
    let mut map: alloc::collections::BTreeMap<u32, String> =
        super::trace::saved_cmdlines().into_iter().collect();
    for t in crate::sched::tasks() {
        if t.pid != 0 {
            map.entry(t.pid).or_insert(t.comm);
        }
    }
    let mut out = String::new();
    for (pid, comm) in map {
        let _ = writeln!(out, "{pid} {comm}");
    }
    out
}

extern "C" {
    static __text_end: u8;
}

/// `/proc/kallsyms` lines (`ffffffff80001000 T name`) for the functions in
/// the kernel's symbol table (one name per address), then `_etext` at the
/// end of the text section as in Linux (readers resolve an address only
/// below a following symbol).
pub fn kallsyms() -> String {
    let mut out = String::new();
    if let Some(table) = crate::kallsyms::table() {
        for sym in table.iter() {
            // Identical functions merged by the linker share an address.
            // List only the name the kernel itself prints for it, so that
            // trace-cmd and `cat trace` agree (libtraceevent's choice among
            // aliases is arbitrary).
            if table.lookup(sym.addr).is_none_or(|s| s.name == sym.name) {
                let _ = writeln!(out, "{:016x} T {}", sym.addr, sym.name);
            }
        }
    }
    let etext = &raw const __text_end as u64;
    let _ = writeln!(out, "{etext:016x} T _etext");
    out
}

/// The files `trace-export` sends: (tracefs path, content).
pub fn metadata_files() -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    files.push((
        String::from("events/header_page"),
        events::header_page(BUF_PAGE_SIZE as u32).into_bytes(),
    ));
    files.push((
        String::from("events/header_event"),
        events::header_event().into_bytes(),
    ));
    for e in events::FTRACE_EVENTS {
        files.push((
            format!("events/ftrace/{}/format", e.name),
            e.format_file().into_bytes(),
        ));
        files.push((
            format!("events/ftrace/{}/id", e.name),
            format!("{}\n", e.id).into_bytes(),
        ));
    }
    // Every declared event, under its system, as trace-cmd reads
    // `events/SYSTEM/EVENT/format` for the EVENT FORMATS section.
    // And the probe events that exist.
    let probes = super::trace_kprobe::event_calls();
    for e in tracer::trace_events::all_events().chain(probes) {
        files.push((
            format!("events/{}/{}/format", e.system, e.name),
            e.format_file().into_bytes(),
        ));
        files.push((
            format!("events/{}/{}/id", e.system, e.name),
            format!("{}\n", e.id).into_bytes(),
        ));
    }
    files.push((String::from("printk_formats"), Vec::new()));
    files.push((
        String::from("saved_cmdlines"),
        saved_cmdlines().into_bytes(),
    ));
    files.push((String::from("kallsyms"), kallsyms().into_bytes()));
    files
}

/// A read-only file, unless one of that name exists already.
fn show(
    parent: &Dentry,
    name: &str,
    f: impl Fn() -> String + Send + Sync + 'static,
) -> Result<(), Errno> {
    if tracefs::lookup(parent, name).is_none() {
        tracefs::create_show(parent, name, f)?;
    }
    Ok(())
}

/// An open `per_cpu/cpuN/trace_pipe_raw` (Linux: `tracing_buffers_read`):
/// each page is taken from the ring buffer whole and returned across as
/// many reads as the reader needs. With nothing to read it waits (checking
/// every 10 ms; Ctrl-C gives EINTR), except with O_NONBLOCK (EAGAIN) or when
/// tracing is off (end of file; Linux would keep waiting).
struct TracePipeRaw {
    tr: alloc::sync::Arc<super::trace::TraceArray>,
    cpu: usize,
    page: Box<[u8; PAGE_SIZE]>,
    pos: usize,
    nonblock: bool,
}

impl OpenFile for TracePipeRaw {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.pos < PAGE_SIZE {
                let n = buf.len().min(PAGE_SIZE - self.pos);
                buf[..n].copy_from_slice(&self.page[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(n);
            }
            if self.tr.buffer.read_page(self.cpu, &mut self.page).is_some() {
                self.pos = 0;
                continue;
            }
            if self.nonblock {
                return Err(Errno::EAGAIN);
            }
            if !crate::trace::control::tracer_tracing_is_on(&self.tr) {
                return Ok(0);
            }
            if crate::sched::signal_pending() {
                return Err(Errno::EINTR);
            }
            crate::sched::sleep_ns(10_000_000);
        }
    }
}

/// Creates `saved_cmdlines`, `printk_formats` and `kallsyms` (top level
/// only; `events/header_page`, `events/header_event` and
/// `events/ftrace/<event>/` are every trace array's, made by
/// `trace::events::init_tr`). Files that already exist are left alone.
pub fn init_tracefs(root: &Dentry) -> Result<(), Errno> {
    show(root, "saved_cmdlines", saved_cmdlines)?;
    show(root, "printk_formats", String::new)?;
    show(root, "kallsyms", kallsyms)?;
    Ok(())
}

/// Creates `per_cpu/cpuN/trace_pipe_raw` of `tr` in `dir`.
pub fn init_tr(tr: &alloc::sync::Arc<super::trace::TraceArray>, dir: &Dentry) -> Result<(), Errno> {
    let per_cpu = tracefs::get_or_create_dir(dir, "per_cpu")?;
    for cpu in 0..tr.nr_cpus {
        let d = tracefs::get_or_create_dir(&per_cpu, &format!("cpu{cpu}"))?;
        if tracefs::lookup(&d, "trace_pipe_raw").is_none() {
            let tr = tr.clone();
            tracefs::create_file(
                &d,
                "trace_pipe_raw",
                TRACE_MODE_READ,
                move |flags: OpenFlags| {
                    Ok(Box::new(TracePipeRaw {
                        tr: tr.clone(),
                        cpu,
                        page: Box::new([0u8; PAGE_SIZE]),
                        pos: PAGE_SIZE,
                        nonblock: flags.nonblock(),
                    }) as Box<dyn OpenFile>)
                },
            )?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The sender.

/// Frames written to COM2, counting as it goes.
struct Sender<'a> {
    port: &'a mut SerialPort,
    seq: u32,
    bytes: u64,
}

impl Sender<'_> {
    fn raw(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.port.send(b);
        }
        self.bytes += bytes.len() as u64;
    }

    /// One frame whose payload is the concatenation of `parts`.
    fn frame(&mut self, ty: FrameType, aux: u16, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let mut header = [0u8; 12];
        header[0..2].copy_from_slice(&(ty as u16).to_le_bytes());
        header[2..4].copy_from_slice(&aux.to_le_bytes());
        header[4..8].copy_from_slice(&self.seq.to_le_bytes());
        header[8..12].copy_from_slice(&(len as u32).to_le_bytes());
        self.raw(&MAGIC);
        self.raw(&header);
        let mut crc = Crc32::new();
        crc.update(&header);
        for p in parts {
            self.raw(p);
            crc.update(p);
        }
        self.raw(&crc.finish().to_le_bytes());
        self.seq += 1;
    }
}

/// The `trace-export` shell command: sends the metadata files and every
/// CPU's pages to COM2 and prints a summary on the console.
pub fn command(args: &[String]) {
    if !args.is_empty() {
        println!("usage: trace-export   (sends tracefs metadata and trace_pipe_raw pages to COM2)");
        return;
    }
    let mut port = COM2.lock();
    if !port.probe() {
        println!(
            "trace-export: no UART at COM2 ({COM2_BASE:#x}); start QEMU with a second serial port, e.g. ./qemu.sh -- -serial file:com2.bin"
        );
        return;
    }
    port.init();
    let nr_cpus = crate::arch::nr_cpus();
    let rb = ring_buffer();
    if let Some(rb) = rb {
        rb.record_disable();
    }
    let mut s = Sender {
        port: &mut port,
        seq: 0,
        bytes: 0,
    };

    let mut start = Vec::new();
    for v in [
        STREAM_VERSION,
        nr_cpus as u32,
        PAGE_SIZE as u32,
        core::mem::size_of::<usize>() as u32,
    ] {
        start.extend_from_slice(&v.to_le_bytes());
    }
    start.extend_from_slice(
        format!(
            "{} {} x86_64",
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION")
        )
        .as_bytes(),
    );
    s.frame(FrameType::Start, 0, &[&start]);
    for (name, content) in metadata_files() {
        s.frame(FrameType::File, 0, &[name.as_bytes(), &[0], &content]);
    }

    // Every CPU's pages, oldest first, as trace_pipe_raw hands them out.
    // The bound stops a buffer that keeps filling from holding us forever.
    let mut status = 0u32;
    let mut pages = Vec::with_capacity(nr_cpus);
    let mut page = Box::new([0u8; PAGE_SIZE]);
    for cpu in 0..nr_cpus {
        let mut n = 0u32;
        if let Some(rb) = rb {
            let limit = rb.nr_pages(cpu) + 2;
            while (n as usize) < limit
                && !crate::sched::signal_pending()
                && rb.read_page(cpu, &mut page).is_some()
            {
                s.frame(FrameType::Page, cpu as u16, &[&page[..]]);
                n += 1;
            }
        }
        if crate::sched::signal_pending() {
            status = Errno::EINTR.code() as u32;
        }
        pages.push(n);
    }
    if let Some(rb) = rb {
        rb.record_enable();
    }

    let mut end = Vec::new();
    end.extend_from_slice(&status.to_le_bytes());
    end.extend_from_slice(&s.seq.to_le_bytes());
    end.extend_from_slice(&(nr_cpus as u32).to_le_bytes());
    for n in &pages {
        end.extend_from_slice(&n.to_le_bytes());
    }
    s.frame(FrameType::End, 0, &[&end]);
    let (frames, bytes) = (s.seq, s.bytes);
    drop(port);

    let mut summary = format!("trace-export: {frames} frames, {bytes} bytes to COM2;");
    for (cpu, n) in pages.iter().enumerate() {
        let _ = write!(summary, " cpu{cpu}: {n} pages");
        if cpu + 1 < pages.len() {
            summary.push(',');
        }
    }
    if rb.is_none() {
        summary.push_str(" (no ring buffer installed: metadata only)");
    }
    println!("{summary}");
}
