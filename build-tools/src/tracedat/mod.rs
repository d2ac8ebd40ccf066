//! trace-cmd compatibility: getting a trace out of the kernel into a
//! `trace.dat` file that `trace-cmd report` and KernelShark read.
//!
//! Linux's `trace-cmd record` reads `events/header_page`, the event formats,
//! `/proc/kallsyms`, `saved_cmdlines` and each CPU's `trace_pipe_raw` pages
//! and stores them, unchanged, in `trace.dat` (trace-cmd:
//! lib/trace-cmd/trace-output.c). Our kernel cannot run trace-cmd, so its
//! `trace-export` shell command sends the same files and pages over a second
//! serial port in checksummed frames ([`frame`]), and the host side here
//! turns them into the file ([`dat`], version 6) and prints it the way
//! `trace-cmd report` does ([`report`]). The `ktrace` command boots the
//! kernel and drives its shell with [`crate::session`]. Its pictures: the
//! calls rebuilt per task ([`calls`]), folded into a flame graph
//! ([`flame`]) or laid out as a Chrome trace-event timeline ([`chrome`]).

pub use tracer::crc32;
pub mod calls;
pub mod chrome;
pub mod dat;
pub mod flame;
pub mod frame;
pub mod pages;
pub mod report;

use dat::{DatError, EventSystem, TraceDat, OPTION_UNAME};
use frame::Transfer;
use tracer::ring_buffer::decode_page;

/// The tracefs files a transfer must contain.
pub const REQUIRED_FILES: [&str; 4] = [
    "events/header_page",
    "events/header_event",
    "kallsyms",
    "saved_cmdlines",
];

/// Builds the trace.dat content from an exported transfer: the texts go in
/// as the kernel sent them, the ftrace event formats in name order, the
/// formats of every other system (`events/SYSTEM/EVENT/format`) as that
/// system's EVENT FORMATS entry, the
/// kernel's uname as the UNAME option, and every CPU's non-empty pages in the
/// order they were read. Each page is decoded first; one that does not
/// decode is an error (a broken file is never produced).
pub fn trace_dat_from_transfer(t: &Transfer) -> Result<TraceDat, DatError> {
    for name in REQUIRED_FILES {
        if !t.files.contains_key(name) {
            return Err(DatError(format!("the export has no {name} file")));
        }
    }
    let mut dat = TraceDat::new(t.long_size as u8, t.page_size, t.nr_cpus as usize);
    dat.header_page = t.files["events/header_page"].clone();
    dat.header_event = t.files["events/header_event"].clone();
    dat.kallsyms = t.files["kallsyms"].clone();
    dat.cmdlines = t.files["saved_cmdlines"].clone();
    if let Some(p) = t.files.get("printk_formats") {
        dat.printk_formats = p.clone();
    }
    for (name, content) in &t.files {
        let Some(path) = name.strip_prefix("events/") else {
            continue;
        };
        let parts: Vec<&str> = path.split('/').collect();
        let [system, _event, "format"] = parts[..] else {
            continue;
        };
        if system == "ftrace" {
            dat.ftrace_formats.push(content.clone());
            continue;
        }
        // The files come in path order, so each system's events are
        // together and in name order.
        match dat.event_systems.last_mut() {
            Some(sys) if sys.name == system => sys.formats.push(content.clone()),
            _ => dat.event_systems.push(EventSystem {
                name: system.to_string(),
                formats: vec![content.clone()],
            }),
        }
    }
    if dat.ftrace_formats.is_empty() {
        return Err(DatError(
            "the export has no events/ftrace/*/format file".into(),
        ));
    }
    if !t.uname.is_empty() {
        let mut u = t.uname.as_bytes().to_vec();
        u.push(0);
        dat.options.push((OPTION_UNAME, u));
    }
    for (cpu, pages) in t.pages.iter().enumerate() {
        for (i, page) in pages.iter().enumerate() {
            let iter =
                decode_page(page).map_err(|e| DatError(format!("CPU {cpu} page {i}: {e}")))?;
            let mut events = 0;
            for ev in iter {
                ev.map_err(|e| DatError(format!("CPU {cpu} page {i}: {e}")))?;
                events += 1;
            }
            if events > 0 {
                dat.cpus[cpu].extend_from_slice(page);
            }
        }
    }
    Ok(dat)
}
