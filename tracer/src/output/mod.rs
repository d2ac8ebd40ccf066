//! The text of the `trace` and `trace_pipe` files, byte for byte as Linux 6.6
//! prints them (kernel/trace/trace.c `s_show()`/`print_trace_line()`,
//! trace_output.c, trace_functions_graph.c).
//!
//! The mechanism: a [`merge::Merger`] walks the per-CPU buffers in timestamp
//! order; for each event [`TraceIter::print_line`] prints the lost-events
//! note, lets the current tracer print it (function_graph has its own
//! printer, [`crate::graph`]), and otherwise prints the default line: the
//! context (`comm-pid [cpu] flags timestamp: `) and the event body.
//! `trace` starts with a header ([`header`]); `trace_pipe` has none.
//!
//! The printer does not know the ring buffer or kallsyms: it reads symbols
//! through [`SymbolResolver`] and task names through [`TaskNames`].

pub mod header;
pub mod merge;

use alloc::string::String;
use core::fmt::Write;
use core::ops::Range;

use crate::entry::{lat_fmt, Entry, TraceEntry};
use crate::graph::GraphState;
use crate::options::{TraceOption, TraceOptions, Tracer};
use merge::{Merger, TraceRecord, LOST_EVENTS_UNKNOWN};

/// Address to symbol lookup (kallsyms). Returns the symbol's name, the
/// offset of `addr` inside it, and the symbol's size.
pub trait SymbolResolver {
    fn lookup(&self, addr: u64) -> Option<(&str, u64, u64)>;
}

/// pid to command name (`saved_cmdlines`). `None` prints Linux's `<...>`.
pub trait TaskNames {
    fn comm(&self, pid: i32) -> Option<&str>;
    /// Thread-group id for the `record-tgid` column; `None` prints
    /// `(-------)`.
    fn tgid(&self, _pid: i32) -> Option<i32> {
        None
    }
}

/// A resolver that knows no symbol (every address prints as hex).
pub struct NoSymbols;
impl SymbolResolver for NoSymbols {
    fn lookup(&self, _addr: u64) -> Option<(&str, u64, u64)> {
        None
    }
}

/// A task table that knows no name (every pid but 0 prints as `<...>`).
pub struct NoTasks;
impl TaskNames for NoTasks {
    fn comm(&self, _pid: i32) -> Option<&str> {
        None
    }
}

/// `TASK_COMM_LEN - 1`: the longest command name Linux keeps.
pub const TASK_COMM_MAX: usize = 15;

/// `trace_find_cmdline()`: `<idle>` for pid 0, `<XXX>` for a negative pid,
/// the saved name (at most 15 bytes), or `<...>` when unknown.
pub fn find_cmdline(tasks: &dyn TaskNames, pid: i32) -> String {
    if pid == 0 {
        return String::from("<idle>");
    }
    if pid < 0 {
        return String::from("<XXX>");
    }
    match tasks.comm(pid) {
        Some(c) => String::from(truncate_str(c, TASK_COMM_MAX)),
        None => String::from("<...>"),
    }
}

/// Cuts a string to at most `max` bytes, at a character boundary.
pub fn truncate_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `%ps`: the symbol name, or `0x<hex>` when the address is unknown
/// (`sprint_symbol_no_offset()`).
pub fn write_ps(out: &mut String, syms: &dyn SymbolResolver, addr: u64) {
    match syms.lookup(addr) {
        Some((name, _, _)) if !name.is_empty() => out.push_str(name),
        _ => {
            let _ = write!(out, "0x{:x}", addr);
        }
    }
}

/// `trace_seq_print_sym()`: with `offset`, `name+0x<off>/0x<size>`
/// (`sprint_symbol()`, `0x<hex>` when unknown); without, the bare name, or
/// `0x%08lx` when unknown.
pub fn write_sym(out: &mut String, syms: &dyn SymbolResolver, addr: u64, offset: bool) {
    match syms.lookup(addr) {
        Some((name, off, size)) if !name.is_empty() => {
            out.push_str(name);
            if offset {
                let _ = write!(out, "+0x{:x}/0x{:x}", off, size);
            }
        }
        _ => {
            if offset {
                let _ = write!(out, "0x{:x}", addr);
            } else {
                let _ = write!(out, "0x{:08x}", addr);
            }
        }
    }
}

/// `seq_print_ip_sym()`: `0` for a null address, the symbol (with offset
/// when `sym-offset` is set) and ` <%016lx>` when `sym-addr` is set.
pub fn seq_print_ip_sym(out: &mut String, syms: &dyn SymbolResolver, ip: u64, opts: &TraceOptions) {
    if ip == 0 {
        out.push('0');
        return;
    }
    write_sym(out, syms, ip, opts.has(TraceOption::SymOffset));
    if opts.has(TraceOption::SymAddr) {
        let _ = write!(out, " <{:016x}>", ip);
    }
}

/// `ns2usecs()`: ns to µs, rounded to nearest.
pub fn ns2usecs(ns: u64) -> u64 {
    ns.saturating_add(500) / 1000
}

/// Everything the printer needs besides the events.
pub struct OutputConfig<'a> {
    pub options: &'a TraceOptions,
    /// The current tracer (its header and line printer are used).
    pub tracer: Tracer,
    pub syms: &'a dyn SymbolResolver,
    pub tasks: &'a dyn TaskNames,
    /// `nr_cpu_ids`: sets the width of function_graph's CPU column.
    pub nr_cpu_ids: u32,
    /// False for the `counter`-style clocks whose stamps are not ns
    /// (timestamps then print raw as `%12llu`).
    pub time_in_ns: bool,
    /// `array_buffer->time_start`: latency format prints times relative to it.
    pub time_start: u64,
    /// `[__irqentry_text_start, __irqentry_text_end)`: function_graph marks
    /// calls into this range with `==========>` / `<==========`.
    pub irqentry: Range<u64>,
}

impl<'a> OutputConfig<'a> {
    /// A configuration with ns timestamps, time_start 0 and no irq range.
    pub fn new(
        options: &'a TraceOptions,
        tracer: Tracer,
        syms: &'a dyn SymbolResolver,
        tasks: &'a dyn TaskNames,
        nr_cpu_ids: u32,
    ) -> Self {
        OutputConfig {
            options,
            tracer,
            syms,
            tasks,
            nr_cpu_ids,
            time_in_ns: true,
            time_start: 0,
            irqentry: 0..0,
        }
    }
}

/// Where the printer gets events: the merged stream plus per-CPU look-ahead.
/// Implemented by [`Merger`] over [`TraceRecord`]s.
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

impl<S: Iterator<Item = TraceRecord>> EventSource for Merger<S> {
    fn next_event(&mut self) -> Option<(usize, TraceRecord)> {
        self.next()
    }
    fn peek_next_ts(&mut self) -> Option<u64> {
        self.peek().map(|(_, r)| r.ts)
    }
    fn peek_cpu(&mut self, cpu: usize) -> Option<&TraceRecord> {
        Merger::peek_cpu(self, cpu)
    }
    fn next_cpu(&mut self, cpu: usize) -> Option<TraceRecord> {
        Merger::next_cpu(self, cpu)
    }
}

/// The iterator state of one open `trace`/`trace_pipe` file
/// (`struct trace_iterator`): the entry index, which CPUs have been seen
/// (for `annotate`) and function_graph's per-CPU state.
pub struct TraceIter<'a> {
    pub cfg: OutputConfig<'a>,
    /// `iter->idx`: index of the current entry (first is 0).
    idx: i64,
    /// `TRACE_FILE_ANNOTATE`: set when the buffers overran at open time.
    annotate: bool,
    started: alloc::vec::Vec<bool>,
    /// function_graph's per-CPU printer state (`struct fgraph_data`).
    pub graph: GraphState,
}

impl<'a> TraceIter<'a> {
    /// Opens an iterator. `overruns` tells whether the buffers lost events
    /// (`ring_buffer_overruns()`), which enables the `annotate` lines.
    pub fn new(cfg: OutputConfig<'a>, nr_cpus: usize, overruns: bool) -> Self {
        let graph = GraphState::new(nr_cpus);
        TraceIter {
            cfg,
            idx: -1,
            annotate: overruns,
            started: alloc::vec![false; nr_cpus],
            graph,
        }
    }

    fn lat_fmt_on(&self) -> bool {
        self.cfg.options.has(TraceOption::LatencyFmt)
    }

    /// Prints the next event (taking it, and for a function_graph leaf its
    /// return too) into `out`. Returns false when there are no more events.
    pub fn print_line(&mut self, src: &mut dyn EventSource, out: &mut String) -> bool {
        let Some((cpu, rec)) = src.next_event() else {
            return false;
        };
        self.idx += 1;
        self.print_record(src, cpu, &rec, out);
        true
    }

    /// Prints every remaining event.
    pub fn print_all(&mut self, src: &mut dyn EventSource, out: &mut String) {
        while self.print_line(src, out) {}
    }

    /// `print_trace_line()` for one event already taken from `src`.
    pub fn print_record(
        &mut self,
        src: &mut dyn EventSource,
        cpu: usize,
        rec: &TraceRecord,
        out: &mut String,
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

        if self.cfg.tracer == Tracer::FunctionGraph {
            let cfg = &self.cfg;
            if self.graph.print_line(cfg, src, cpu, rec.ts, &entry, out) {
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
        if opts.has(TraceOption::Raw) {
            self.print_raw(cpu, rec.ts, &entry, out);
            return;
        }
        self.print_trace_fmt(src, cpu, rec.ts, &entry, out);
    }

    fn test_cpu_buff_start(&mut self, cpu: usize, out: &mut String) {
        if !self.cfg.options.has(TraceOption::Annotate) || !self.annotate {
            return;
        }
        if self.started.get(cpu).copied().unwrap_or(true) {
            return;
        }
        self.started[cpu] = true;
        if self.idx > 1 {
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
        out: &mut String,
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
        out: &mut String,
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
                self.idx
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
    fn print_raw(&self, cpu: usize, ts: u64, entry: &Entry, out: &mut String) {
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
            Entry::GraphEnt(_) | Entry::GraphRet(_) => {
                // function_graph's raw printer is the graph printer itself
                // (print_graph_function_event); outside function_graph the
                // events have none.
                let _ = writeln!(out, "type: {}", entry.header().type_);
            }
            other => {
                let _ = writeln!(out, "type: {}", other.header().type_);
            }
        }
    }
}

/// `trace_print_context()`: `%16s-%-7d `, optional tgid, `[%03d] `, the
/// five flag characters (irq-info) and ` %5lu.%06lu: `.
pub fn print_context(
    cfg: &OutputConfig<'_>,
    cpu: usize,
    ts: u64,
    ent: &TraceEntry,
    out: &mut String,
) {
    let comm = find_cmdline(cfg.tasks, ent.pid);
    let _ = write!(out, "{:>16}-{:<7} ", comm, ent.pid);
    if cfg.options.has(TraceOption::RecordTgid) {
        match cfg.tasks.tgid(ent.pid) {
            Some(t) if t != 0 => {
                let _ = write!(out, "({:7}) ", t);
            }
            _ => out.push_str("(-------) "),
        }
    }
    let _ = write!(out, "[{:03}] ", cpu);
    if cfg.options.has(TraceOption::IrqInfo) {
        out.push_str(
            core::str::from_utf8(&lat_fmt(ent.flags, ent.preempt_count)).unwrap_or("....."),
        );
    }
    print_time(cfg, ts, out);
    out.push_str(": ");
}

/// `trace_print_time()`: ` %5lu.%06lu` (seconds.µs, rounded) or ` %12llu`.
pub fn print_time(cfg: &OutputConfig<'_>, ts: u64, out: &mut String) {
    if cfg.time_in_ns {
        let t = ns2usecs(ts);
        let _ = write!(out, " {:5}.{:06}", t / 1_000_000, t % 1_000_000);
    } else {
        let _ = write!(out, " {:12}", ts);
    }
}

/// `print_fn_trace()`: the function and, with `print-parent`, ` <-parent`.
fn print_fn_trace(cfg: &OutputConfig<'_>, ip: u64, parent_ip: u64, out: &mut String) {
    let opts = cfg.options;
    seq_print_ip_sym(out, cfg.syms, ip, opts);
    if opts.has(TraceOption::PrintParent) && parent_ip != 0 {
        out.push_str(" <-");
        seq_print_ip_sym(out, cfg.syms, parent_ip, opts);
    }
}

/// The event's own text (`event->funcs->trace`), with a trailing newline
/// for the events whose printer adds one. `ts` is the event's timestamp.
pub fn print_event_body(cfg: &OutputConfig<'_>, ts: u64, entry: &Entry, out: &mut String) {
    let opts = cfg.options;
    match entry {
        Entry::Function(f) => {
            print_fn_trace(cfg, f.ip, f.parent_ip, out);
            out.push('\n');
        }
        Entry::FuncRepeats(r) => {
            // trace_func_repeats_print()
            print_fn_trace(cfg, r.ip, r.parent_ip, out);
            let _ = write!(out, " (repeats: {}, last_ts:", r.count);
            print_time(cfg, ts.wrapping_sub(r.delta_ts()), out);
            out.push_str(")\n");
        }
        Entry::Stack(s) => {
            out.push_str("<stack trace>\n");
            for &ip in &s.callers {
                out.push_str(" => ");
                seq_print_ip_sym(out, cfg.syms, ip, opts);
                out.push('\n');
            }
        }
        Entry::Print(p) => {
            // trace_print_print(): "%ps: %s"; the text keeps its own newline.
            seq_print_ip_sym(out, cfg.syms, p.ip, opts);
            out.push_str(": ");
            out.push_str(&String::from_utf8_lossy(&p.buf));
        }
        Entry::GraphEnt(g) => {
            // Outside function_graph, Linux prints these through the
            // function_graph event printer; keep a readable fallback.
            let _ = write!(out, "--> ");
            write_ps(out, cfg.syms, g.func);
            let _ = writeln!(out, " ({})", g.depth);
        }
        Entry::GraphRet(g) => {
            let _ = write!(out, "<-- ");
            write_ps(out, cfg.syms, g.func);
            let _ = writeln!(
                out,
                " ({}) (start: {:x}  end: {:x}) over: {}",
                g.depth, g.calltime, g.rettime, g.depth
            );
        }
        Entry::Other(e) => {
            let _ = writeln!(out, "Unknown type {}", e.type_);
        }
    }
}

/// `trace_find_mark()`: the overhead mark for a duration in ns, strictly
/// greater than each threshold: `$` 1 s, `@` 100 ms, `*` 10 ms, `#` 1 ms,
/// `!` 100 µs, `+` 10 µs, else a space.
pub fn trace_find_mark(d: u64) -> char {
    const MARKS: [(u64, char); 6] = [
        (1_000_000_000, '$'),
        (100_000_000, '@'),
        (10_000_000, '*'),
        (1_000_000, '#'),
        (100_000, '!'),
        (10_000, '+'),
    ];
    for (val, sym) in MARKS {
        if d > val {
            return sym;
        }
    }
    ' '
}

/// The whole `trace` file: the header (`# tracer: ...`), then every event
/// of `src` in time order. `overruns` enables the `annotate` lines.
pub fn write_trace_file(
    out: &mut String,
    cfg: OutputConfig<'_>,
    stats: &header::BufferStats,
    lat: &header::LatencyInfo,
    src: &mut dyn EventSource,
    nr_cpus: usize,
    overruns: bool,
) {
    let empty = src.peek_next_ts().is_none();
    header::print_header(out, &cfg, stats, lat, empty);
    let mut it = TraceIter::new(cfg, nr_cpus, overruns);
    it.print_all(src, out);
}
