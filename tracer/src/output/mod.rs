//! The text of the `trace` and `trace_pipe` files, byte for byte as Linux
//! prints them (kernel/trace/trace.c `s_show()`/`print_trace_line()`,
//! trace_output.c).
//!
//! The mechanism: a [`merge::Merger`] walks the per-CPU readers in
//! timestamp order; for each event [`TraceIter::print_line`] prints the
//! lost-events note, lets the current tracer print it (a [`TracerOutput`],
//! Linux's `print_line` hook: function_graph has one), and otherwise prints
//! the default line: the context (`comm-pid [cpu] flags timestamp: `) and
//! the event body ([`format`]). `trace` starts with a header: the tracer's
//! own (`print_header`) or the default one ([`header`]); `trace_pipe` has
//! none. The same code prints `trace`, `per_cpu/cpuN/trace`, `trace_pipe`
//! and `per_cpu/cpuN/trace_pipe`: they differ only in their readers.
//!
//! The printer does not know the ring buffer or kallsyms: it reads symbols
//! through [`SymbolResolver`] and task names through [`TaskNames`].

pub mod config;
pub mod format;
pub mod header;
pub mod merge;
pub mod seq;

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

pub use config::{
    find_cmdline, truncate_str, NoSymbols, NoTasks, OutputConfig, SymbolResolver, TaskNames,
    TASK_COMM_MAX,
};
pub use format::{
    ns2usecs, print_context, print_event_body, print_time, print_trace_event, seq_print_ip_sym,
    trace_find_mark, write_ps, write_sym,
};
pub use merge::EventSource;
pub use seq::TraceSeq;

use crate::entry::{lat_fmt, task_index_to_char, Entry, TraceEntry};
use crate::options::TraceOption;
use header::{BufferStats, LatencyInfo};
use merge::{TraceRecord, LOST_EVENTS_UNKNOWN};

/// A tracer's own output (Linux's `struct tracer`: `print_header` and
/// `print_line`, with the state its `open` hook keeps in
/// `iter->private`). The generic printer calls it first and falls back to
/// its default text when it declines. One value serves one open file.
pub trait TracerOutput: Send {
    /// `print_header`: writes the tracer's header (after `# tracer: NAME`
    /// and `#`) and returns true, or returns false for the default header.
    /// `empty` tells whether the buffers hold no event.
    fn print_header(
        &self,
        _out: &mut TraceSeq,
        _cfg: &OutputConfig<'_>,
        _stats: &BufferStats,
        _lat: &LatencyInfo,
        _empty: bool,
    ) -> bool {
        false
    }

    /// `print_line`: prints one event already taken from `src` (it may
    /// take more from `src`, e.g. a return to fold into one line) and
    /// returns true, or returns false (`TRACE_TYPE_UNHANDLED`) to leave the
    /// event to the default printer.
    fn print_line(
        &mut self,
        _cfg: &OutputConfig<'_>,
        _src: &mut dyn EventSource,
        _cpu: usize,
        _ts: u64,
        _entry: &Entry,
        _out: &mut TraceSeq,
    ) -> bool {
        false
    }
}

/// The part of `struct trace_iterator` that lives as long as the open file:
/// the entry index, which CPUs have been seen (for `annotate`) and the
/// current tracer's printer state. `trace_pipe` keeps it from one read to
/// the next; each read pairs it with a fresh [`OutputConfig`].
pub struct IterState {
    /// `iter->idx`: index of the current entry (first is 0).
    idx: i64,
    /// `TRACE_FILE_ANNOTATE`: set when the buffers overran at open time.
    annotate: bool,
    started: Vec<bool>,
    /// The tracer's printer (`iter->trace` and `iter->private`).
    tracer: Option<Box<dyn TracerOutput>>,
}

impl IterState {
    /// The state of a newly opened file. `overruns` tells whether the
    /// buffers lost events (`ring_buffer_overruns()`), which enables the
    /// `annotate` lines; `tracer` is the current tracer's printer, if it
    /// has one.
    pub fn new(nr_cpus: usize, overruns: bool, tracer: Option<Box<dyn TracerOutput>>) -> Self {
        IterState {
            idx: -1,
            annotate: overruns,
            started: alloc::vec![false; nr_cpus],
            tracer,
        }
    }
}

/// One open `trace`/`trace_pipe` file being printed (`struct
/// trace_iterator`): the configuration of this read and the [`IterState`].
pub struct TraceIter<'a> {
    pub cfg: OutputConfig<'a>,
    state: IterState,
}

impl<'a> TraceIter<'a> {
    /// Opens an iterator with the default printer only (see
    /// [`IterState::new`] for `overruns`).
    pub fn new(cfg: OutputConfig<'a>, nr_cpus: usize, overruns: bool) -> Self {
        Self::resume(cfg, IterState::new(nr_cpus, overruns, None))
    }

    /// Continues printing with state kept from an earlier read.
    pub fn resume(cfg: OutputConfig<'a>, state: IterState) -> Self {
        TraceIter { cfg, state }
    }

    /// Ends this read, keeping the state for the next one.
    pub fn into_state(self) -> IterState {
        self.state
    }

    /// The header of the `trace` file (`s_show()` for the first entry):
    /// `# tracer: NAME`, `#`, then the tracer's header or
    /// [`header::trace_default_header`]. `empty` tells whether the buffers
    /// hold no event (the latency-format header is skipped then).
    pub fn print_header(
        &self,
        out: &mut TraceSeq,
        stats: &BufferStats,
        lat: &LatencyInfo,
        empty: bool,
    ) {
        let _ = writeln!(out, "# tracer: {}", self.cfg.tracer.name());
        out.push_str("#\n");
        if let Some(t) = &self.state.tracer {
            if t.print_header(out, &self.cfg, stats, lat, empty) {
                return;
            }
        }
        header::trace_default_header(out, &self.cfg, stats, lat, empty);
    }

    fn lat_fmt_on(&self) -> bool {
        self.cfg.file_lat_fmt || self.cfg.options.has(TraceOption::LatencyFmt)
    }

    /// Prints the next event (taking it, and more if the tracer's printer
    /// folds several into one line) into `out`. Returns false when there
    /// are no more events. The output is text, except with the `bin`
    /// option.
    pub fn print_line(&mut self, src: &mut dyn EventSource, out: &mut TraceSeq) -> bool {
        let Some((cpu, rec)) = src.next_event() else {
            return false;
        };
        self.state.idx += 1;
        self.print_record(src, cpu, &rec, out);
        true
    }

    /// Prints every remaining event.
    pub fn print_all(&mut self, src: &mut dyn EventSource, out: &mut TraceSeq) {
        while self.print_line(src, out) {}
    }

    /// `print_trace_line()` for one event already taken from `src`.
    pub fn print_record(
        &mut self,
        src: &mut dyn EventSource,
        cpu: usize,
        rec: &TraceRecord,
        out: &mut TraceSeq,
    ) {
        if rec.lost_events != 0 {
            if rec.lost_events == LOST_EVENTS_UNKNOWN {
                let _ = writeln!(out, "CPU:{} [LOST EVENTS]", cpu);
            } else {
                let _ = writeln!(out, "CPU:{} [LOST {} EVENTS]", cpu, rec.lost_events);
            }
        }

        let entry = match Entry::decode(&rec.payload) {
            Ok(e) => e,
            Err(_) => {
                let ty = TraceEntry::decode(&rec.payload)
                    .map(|e| e.type_ as i32)
                    .unwrap_or(-1);
                let _ = writeln!(out, "Unknown type {}", ty);
                return;
            }
        };

        if let Some(t) = self.state.tracer.as_mut() {
            if t.print_line(&self.cfg, src, cpu, rec.ts, &entry, out) {
                return;
            }
        }

        let opts = self.cfg.options;
        if let Entry::Print(p) = &entry {
            if opts.has(TraceOption::Printk) && opts.has(TraceOption::PrintkMsgOnly) {
                out.push_str(&String::from_utf8_lossy(&p.buf));
                return;
            }
        }
        if opts.has(TraceOption::Bin) {
            self.print_bin(cpu, rec.ts, &entry, out);
            return;
        }
        if opts.has(TraceOption::Hex) {
            self.print_hex(cpu, rec.ts, &entry, out);
            return;
        }
        if opts.has(TraceOption::Raw) {
            self.print_raw(cpu, rec.ts, &entry, out);
            return;
        }
        self.print_trace_fmt(src, cpu, rec.ts, &entry, out);
    }

    /// `print_hex_fmt()`: the context and the event's fields in hex
    /// (`SEQ_PUT_HEX_FIELD`), then a newline. Events without a hex printer
    /// print `type: N` (`trace_nop_print`).
    fn print_hex(&self, cpu: usize, ts: u64, entry: &Entry, out: &mut TraceSeq) {
        if self.cfg.options.has(TraceOption::ContextInfo) {
            put_hex_field(out, &entry.header().pid.to_le_bytes());
            put_hex_field(out, &(cpu as i32).to_le_bytes());
            put_hex_field(out, &ts.to_le_bytes());
        }
        match entry {
            Entry::Function(f) => {
                // trace_fn_hex()
                put_hex_field(out, &f.ip.to_le_bytes());
                put_hex_field(out, &f.parent_ip.to_le_bytes());
            }
            Entry::CtxSwitch(c) => {
                // trace_ctxwake_hex(): the state letters, a wake-up's
                // prev state as `+`.
                let s = if c.is_wake() {
                    b'+'
                } else {
                    task_index_to_char(c.prev_state) as u8
                };
                put_hex_field(out, &c.prev_pid.to_le_bytes());
                put_hex_field(out, &[c.prev_prio]);
                put_hex_field(out, &[s]);
                put_hex_field(out, &c.next_cpu.to_le_bytes());
                put_hex_field(out, &c.next_pid.to_le_bytes());
                put_hex_field(out, &[c.next_prio]);
                // T is an `int` there: four bytes.
                put_hex_field(
                    out,
                    &(task_index_to_char(c.next_state) as i32).to_le_bytes(),
                );
            }
            // A trace event has no hex printer (`trace_nop_print`); a type
            // without an event prints nothing here.
            Entry::Event(ev) if crate::trace_events::find_event(ev.ent.type_).is_none() => {}
            Entry::Other(_) => {}
            other => {
                let _ = writeln!(out, "type: {}", other.header().type_);
            }
        }
        out.push('\n');
    }

    /// `print_bin_fmt()`: the context and the event's fields as raw
    /// little-endian bytes (`SEQ_PUT_FIELD`), no separator and no newline.
    /// Events without a binary printer print `type: N` (`trace_nop_print`).
    fn print_bin(&self, cpu: usize, ts: u64, entry: &Entry, out: &mut TraceSeq) {
        if self.cfg.options.has(TraceOption::ContextInfo) {
            out.putmem(&entry.header().pid.to_le_bytes());
            out.putmem(&(cpu as i32).to_le_bytes());
            out.putmem(&ts.to_le_bytes());
        }
        match entry {
            Entry::Function(f) => {
                // trace_fn_bin()
                out.putmem(&f.ip.to_le_bytes());
                out.putmem(&f.parent_ip.to_le_bytes());
            }
            Entry::CtxSwitch(c) => {
                // trace_ctxwake_bin()
                out.putmem(&c.prev_pid.to_le_bytes());
                out.putmem(&[c.prev_prio, c.prev_state]);
                out.putmem(&c.next_cpu.to_le_bytes());
                out.putmem(&c.next_pid.to_le_bytes());
                out.putmem(&[c.next_prio, c.next_state]);
            }
            // As in print_hex: `type: N` for an event, nothing for a type
            // without one.
            Entry::Event(ev) if crate::trace_events::find_event(ev.ent.type_).is_none() => {}
            Entry::Other(_) => {}
            other => {
                let _ = writeln!(out, "type: {}", other.header().type_);
            }
        }
    }

    fn test_cpu_buff_start(&mut self, cpu: usize, out: &mut TraceSeq) {
        let st = &mut self.state;
        if !self.cfg.options.has(TraceOption::Annotate) || !st.annotate {
            return;
        }
        if st.started.get(cpu).copied().unwrap_or(true) {
            return;
        }
        st.started[cpu] = true;
        if st.idx > 1 {
            let _ = writeln!(out, "##### CPU {} buffer started ####", cpu);
        }
    }

    /// `print_trace_fmt()`: context, then the event's own text.
    fn print_trace_fmt(
        &mut self,
        src: &mut dyn EventSource,
        cpu: usize,
        ts: u64,
        entry: &Entry,
        out: &mut TraceSeq,
    ) {
        self.test_cpu_buff_start(cpu, out);
        let opts = self.cfg.options;
        if opts.has(TraceOption::ContextInfo) {
            if self.lat_fmt_on() {
                let next_ts = src.peek_next_ts().unwrap_or(ts);
                self.print_lat_context(cpu, ts, next_ts, entry.header(), out);
            } else {
                print_context(&self.cfg, cpu, ts, entry.header(), out);
            }
        }
        print_event_body(&self.cfg, ts, entry, out);
    }

    /// `trace_print_lat_context()`.
    fn print_lat_context(
        &self,
        cpu: usize,
        ts: u64,
        next_ts: u64,
        ent: &TraceEntry,
        out: &mut TraceSeq,
    ) {
        let cfg = &self.cfg;
        let comm = find_cmdline(cfg.tasks, ent.pid);
        let verbose = cfg.options.has(TraceOption::Verbose);
        if verbose {
            let _ = write!(
                out,
                "{:>16} {:7} {:3} {} {:08x} {:08x} ",
                comm,
                ent.pid,
                cpu,
                ent.flags,
                ent.preempt_count & 0xf,
                self.state.idx
            );
        } else {
            let c = truncate_str(&comm, 8);
            let _ = write!(out, "{:>8}-{:<7} {:3}", c, ent.pid, cpu);
            out.push_str(
                core::str::from_utf8(&lat_fmt(ent.flags, ent.preempt_count)).unwrap_or("....."),
            );
        }
        // lat_print_timestamp()
        let mut abs = ts.wrapping_sub(cfg.time_start);
        let mut rel = next_ts.wrapping_sub(ts);
        if cfg.time_in_ns {
            abs = ns2usecs(abs);
            rel = ns2usecs(rel);
        }
        if verbose && cfg.time_in_ns {
            let _ = write!(
                out,
                "[{:08x}] {}.{:03}ms (+{}.{:03}ms): ",
                ns2usecs(ts),
                abs / 1000,
                abs % 1000,
                rel / 1000,
                rel % 1000
            );
        } else if verbose {
            let _ = write!(out, "[{:016x}] {} (+{}): ", ts, abs as i64, rel as i64);
        } else if cfg.time_in_ns {
            let _ = write!(
                out,
                " {:4}us{}: ",
                abs as i64,
                trace_find_mark(rel.saturating_mul(1000))
            );
        } else {
            let _ = write!(out, " {:4}: ", abs as i64);
        }
    }

    /// `print_raw_fmt()`.
    fn print_raw(&self, cpu: usize, ts: u64, entry: &Entry, out: &mut TraceSeq) {
        if self.cfg.options.has(TraceOption::ContextInfo) {
            let _ = write!(out, "{} {} {} ", entry.header().pid, cpu, ts);
        }
        match entry {
            Entry::Function(f) => {
                let _ = writeln!(out, "{:x} {:x}", f.ip, f.parent_ip);
            }
            Entry::Print(p) => {
                let _ = write!(out, "# {:x} {}", p.ip, String::from_utf8_lossy(&p.buf));
            }
            Entry::FuncRepeats(r) => {
                let _ = writeln!(out, "{} {} {} {}", r.ip, r.parent_ip, r.count, r.delta_ts());
            }
            Entry::CtxSwitch(c) => {
                // trace_ctxwake_raw(): a wake-up's prev state prints `+`.
                let s = if c.is_wake() {
                    '+'
                } else {
                    task_index_to_char(c.prev_state)
                };
                let _ = writeln!(
                    out,
                    "{} {} {} {} {} {} {}",
                    c.prev_pid as i32,
                    c.prev_prio,
                    s,
                    c.next_cpu as i32,
                    c.next_pid as i32,
                    c.next_prio,
                    task_index_to_char(c.next_state)
                );
            }
            Entry::GraphEnt(_) | Entry::GraphRet(_) => {
                // function_graph's raw printer is the graph printer itself
                // (print_graph_function_event); outside function_graph the
                // events have none.
                let _ = writeln!(out, "type: {}", entry.header().type_);
            }
            // A trace event has no raw printer (`trace_nop_print`); a type
            // without an event prints `%d ?`.
            Entry::Event(ev) if crate::trace_events::find_event(ev.ent.type_).is_none() => {
                let _ = writeln!(out, "{} ?", ev.ent.type_);
            }
            other => {
                let _ = writeln!(out, "type: {}", other.header().type_);
            }
        }
    }
}

/// `seq_buf_putmem_hex()` for one field of at most 8 bytes: the bytes of
/// the little-endian value from the most significant, as two hex digits
/// each, then a space.
fn put_hex_field(out: &mut TraceSeq, le: &[u8]) {
    for b in le.iter().rev() {
        let _ = write!(out, "{:02x}", b);
    }
    out.push(' ');
}

/// The `snapshot` file (`per_cpu/cpuN/snapshot` with `help.per_cpu`): the
/// `trace` file of the spare buffer, except that when `src` is empty the
/// `# tracer:` lines are followed by Linux's help text instead of the column
/// header (Linux's `s_show` with `iter->snapshot && trace_empty(iter)`).
#[allow(clippy::too_many_arguments)]
pub fn write_snapshot_file(
    out: &mut TraceSeq,
    cfg: OutputConfig<'_>,
    tracer: Option<Box<dyn TracerOutput>>,
    stats: &BufferStats,
    lat: &LatencyInfo,
    src: &mut dyn EventSource,
    nr_cpus: usize,
    overruns: bool,
    help: header::SnapshotHelp,
) {
    if src.peek_next_ts().is_some() {
        return write_trace_file(out, cfg, tracer, stats, lat, src, nr_cpus, overruns);
    }
    let _ = writeln!(out, "# tracer: {}", cfg.tracer.name());
    out.push_str("#\n");
    header::print_snapshot_help(out, help);
}

/// The whole `trace` file: the header, then every event of `src` in time
/// order, printed by `tracer` (the current tracer's printer, if it has one)
/// and the default printer. `overruns` enables the `annotate` lines.
#[allow(clippy::too_many_arguments)]
pub fn write_trace_file(
    out: &mut TraceSeq,
    cfg: OutputConfig<'_>,
    tracer: Option<Box<dyn TracerOutput>>,
    stats: &BufferStats,
    lat: &LatencyInfo,
    src: &mut dyn EventSource,
    nr_cpus: usize,
    overruns: bool,
) {
    let empty = src.peek_next_ts().is_none();
    let mut it = TraceIter::resume(cfg, IterState::new(nr_cpus, overruns, tracer));
    it.print_header(out, stats, lat, empty);
    it.print_all(src, out);
}
