//! function_graph output: the per-CPU state machine that turns entry/return
//! records into Linux's call-graph text (kernel/trace/trace_functions_graph.c,
//! Linux 6.6, `print_graph_function_flags()` and helpers).
//!
//! How it works. Every CPU remembers the last pid it printed (a change
//! prints the `------` task-switch banner), the current depth (for comment
//! indentation), whether it is inside an interrupt that is being hidden, and
//! which function it entered at each depth (`enter_funcs[]`). An entry whose
//! very next record on the same CPU is its own return (same pid, same
//! function) is a *leaf*: both are printed as one `func();` line with the
//! duration. Any other entry prints `func() {` and a later return prints `}`
//! (or `} /* func */` when the entry was not seen, or with `funcgraph-tail`).
//! Each line starts with the optional absolute time, CPU, task and the
//! duration column with its overhead mark (`+ ! # * @ $`).
//!
//! [`GraphOutput`] plugs this into the generic printer as the tracer's
//! `print_header`/`print_line` (Linux's `graph_trace` in the same file).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use crate::entry::{lat_fmt, Entry, GraphEntEntry, GraphRetEntry, TraceEntry};
use crate::options::{graph_flags::*, TraceOption, Tracer};
use crate::output::config::{find_cmdline, truncate_str, OutputConfig};
use crate::output::format::{print_ctxwake, print_trace_event, trace_find_mark, write_ps};
use crate::output::header::{print_trace_header, BufferStats, LatencyInfo};
use crate::output::merge::EventSource;
use crate::output::seq::TraceSeq;
use crate::output::TracerOutput;

/// Depth of the `enter_funcs[]` matcher (`FTRACE_RETFUNC_DEPTH`).
pub const FTRACE_RETFUNC_DEPTH: usize = 50;
/// Spaces per call depth (`TRACE_GRAPH_INDENT`).
pub const TRACE_GRAPH_INDENT: usize = 2;
/// Width of the centred `comm-pid` column (`TRACE_GRAPH_PROCINFO_LENGTH`).
pub const TRACE_GRAPH_PROCINFO_LENGTH: usize = 14;

/// `struct fgraph_cpu_data`.
#[derive(Clone, Debug)]
struct FgraphCpuData {
    last_pid: i32,
    depth: i32,
    depth_irq: i32,
    enter_funcs: [u64; FTRACE_RETFUNC_DEPTH],
}

impl FgraphCpuData {
    fn new() -> Self {
        // graph_trace_open(): last_pid = -1, depth = 0, depth_irq = -1.
        FgraphCpuData {
            last_pid: -1,
            depth: 0,
            depth_irq: -1,
            enter_funcs: [0; FTRACE_RETFUNC_DEPTH],
        }
    }
}

/// The duration column is also used to draw the irq arrows; these say what
/// to print instead of a duration (`FLAGS_FILL_*`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fill {
    None,
    Full,
    Start,
    End,
}

/// Per-CPU printer state of one open `trace`/`trace_pipe` file.
pub struct GraphState {
    cpu_data: Vec<FgraphCpuData>,
    /// The flags another tracer prints with (Linux's
    /// `print_graph_function_flags(iter, flags)`); None: function_graph's
    /// own options.
    flags: Option<u32>,
}

/// tracing_thresh on the recording side: with a threshold set, entries are
/// not recorded at all (`trace_graph_entry()` returns early)...
#[inline]
pub fn thresh_records_entry(tracing_thresh_ns: u64) -> bool {
    tracing_thresh_ns == 0
}

/// ...and a return is recorded only if the call lasted at least the
/// threshold (`trace_graph_thresh_return()`). The output then shows only
/// `} /* func */` lines, since their entries are missing.
#[inline]
pub fn thresh_records_return(tracing_thresh_ns: u64, calltime: u64, rettime: u64) -> bool {
    tracing_thresh_ns == 0 || rettime.wrapping_sub(calltime) >= tracing_thresh_ns
}

/// `trace_print_graph_duration()`: µs with up to 3 decimals so that at most
/// 7 digits show, then ` us `, padded to the column width.
pub fn trace_print_graph_duration(duration_ns: u64, out: &mut TraceSeq) {
    let usecs = duration_ns / 1000;
    let nsecs_rem = duration_ns % 1000;
    let start = out.len();
    let _ = write!(out, "{}", usecs);
    let mut len = out.len() - start;
    if len < 7 {
        // snprintf(nsecs_str, min(sizeof(nsecs_str)=5, 8 - len), "%03lu")
        let slen = core::cmp::min(5, 8 - len);
        let mut ns = String::new();
        let _ = write!(ns, "{:03}", nsecs_rem);
        let keep = core::cmp::min(ns.len(), slen - 1);
        out.push('.');
        out.push_str(&ns[..keep]);
        len += keep + 1;
    }
    out.push_str(" us ");
    for _ in len..8 {
        out.push(' ');
    }
}

/// `print_graph_cpu()`: ` %*d) ` with the width of `nr_cpu_ids - 1`.
fn print_graph_cpu(cfg: &OutputConfig<'_>, cpu: usize, out: &mut TraceSeq) {
    let mut w = String::new();
    let _ = write!(w, "{}", cfg.nr_cpu_ids.saturating_sub(1));
    let _ = write!(out, " {:>width$}) ", cpu, width = w.len());
}

/// `print_graph_proc()`: `comm-pid` (comm cut to 7 characters) centred in
/// 14 columns, extra space going to the right.
fn print_graph_proc(cfg: &OutputConfig<'_>, pid: i32, out: &mut TraceSeq) {
    let comm = find_cmdline(cfg.tasks, pid);
    let comm = truncate_str(&comm, 7);
    let mut pid_str = String::new();
    let _ = write!(pid_str, "{}", pid);
    let len = comm.len() + pid_str.len() + 1;
    let spaces = TRACE_GRAPH_PROCINFO_LENGTH.saturating_sub(len);
    for _ in 0..spaces / 2 {
        out.push(' ');
    }
    let _ = write!(out, "{}-{}", comm, pid_str);
    for _ in 0..spaces - spaces / 2 {
        out.push(' ');
    }
}

fn print_graph_lat_fmt(ent: &TraceEntry, out: &mut TraceSeq) {
    out.push(' ');
    out.push_str(core::str::from_utf8(&lat_fmt(ent.flags, ent.preempt_count)).unwrap_or("....."));
    out.push_str(" | ");
}

/// `print_graph_abs_time()`: `%5lu.%06lu |  ` (µs truncated, not rounded).
fn print_graph_abs_time(ts: u64, out: &mut TraceSeq) {
    let _ = write!(
        out,
        "{:5}.{:06} |  ",
        ts / 1_000_000_000,
        (ts % 1_000_000_000) / 1000
    );
}

fn graph_flags(cfg: &OutputConfig<'_>) -> u32 {
    cfg.options.tracer_flags(Tracer::FunctionGraph)
}

/// `print_graph_duration()`.
fn print_graph_duration(
    cfg: &OutputConfig<'_>,
    flags: u32,
    duration: u64,
    fill: Fill,
    out: &mut TraceSeq,
) {
    if flags & PRINT_DURATION == 0 || !cfg.options.has(TraceOption::ContextInfo) {
        return;
    }
    match fill {
        Fill::Full => {
            out.push_str("              |  ");
            return;
        }
        Fill::Start => {
            out.push_str("  ");
            return;
        }
        Fill::End => {
            out.push_str(" |");
            return;
        }
        Fill::None => {}
    }
    if flags & PRINT_OVERHEAD != 0 {
        out.push(trace_find_mark(duration));
        out.push(' ');
    } else {
        out.push_str("  ");
    }
    trace_print_graph_duration(duration, out);
    out.push_str("|  ");
}

fn indent(depth: i32, out: &mut TraceSeq) {
    for _ in 0..(depth.max(0) as usize) * TRACE_GRAPH_INDENT {
        out.push(' ');
    }
}

impl GraphState {
    /// State for `nr_cpus` CPUs, as `graph_trace_open()` sets it up.
    pub fn new(nr_cpus: usize) -> Self {
        GraphState {
            cpu_data: alloc::vec![FgraphCpuData::new(); nr_cpus],
            flags: None,
        }
    }

    /// State for a tracer that prints graphs with fixed `flags` (the
    /// latency tracers with `display-graph`).
    pub fn with_flags(nr_cpus: usize, flags: u32) -> Self {
        GraphState {
            flags: Some(flags),
            ..GraphState::new(nr_cpus)
        }
    }

    fn flags(&self, cfg: &OutputConfig<'_>) -> u32 {
        self.flags.unwrap_or_else(|| graph_flags(cfg))
    }

    fn data(&mut self, cpu: usize) -> &mut FgraphCpuData {
        if cpu >= self.cpu_data.len() {
            self.cpu_data.resize(cpu + 1, FgraphCpuData::new());
        }
        &mut self.cpu_data[cpu]
    }

    /// `print_graph_function_flags()`: prints one event in graph form and
    /// returns true, or returns false for events function_graph leaves to
    /// the default printer (function and stack-trace records, unknown types).
    pub fn print_line(
        &mut self,
        cfg: &OutputConfig<'_>,
        src: &mut dyn EventSource,
        cpu: usize,
        ts: u64,
        entry: &Entry,
        out: &mut TraceSeq,
    ) -> bool {
        match entry {
            Entry::GraphEnt(e) => {
                self.print_graph_entry(cfg, src, cpu, ts, e, out);
                true
            }
            Entry::GraphRet(r) => {
                self.print_graph_return(cfg, cpu, ts, r, out);
                true
            }
            // Linux: "dont trace stack and functions as comments".
            Entry::Function(_) | Entry::Stack(_) | Entry::FuncRepeats(_) | Entry::Other(_) => false,
            Entry::CtxSwitch(c) => {
                // The wakeup tracers' records, as their event prints them.
                let mut text = TraceSeq::new();
                print_ctxwake(cfg, c, &mut text);
                self.print_graph_comment(cfg, cpu, ts, &c.ent, text.as_bytes(), out);
                true
            }
            Entry::Print(p) => {
                self.print_graph_comment(cfg, cpu, ts, &p.ent, &p.buf, out);
                true
            }
            Entry::Event(ev) => {
                // The event's own text (`event->funcs->trace`); a type
                // without an event is left to the default printer.
                let mut text = TraceSeq::new();
                if !print_trace_event(cfg.syms, ev, &mut text) {
                    return false;
                }
                self.print_graph_comment(cfg, cpu, ts, &ev.ent, text.as_bytes(), out);
                true
            }
        }
    }

    /// `verif_pid()`: the task-switch banner when this CPU's pid changes.
    fn verif_pid(&mut self, cfg: &OutputConfig<'_>, cpu: usize, pid: i32, out: &mut TraceSeq) {
        let d = self.data(cpu);
        if d.last_pid == pid {
            return;
        }
        let prev = d.last_pid;
        d.last_pid = pid;
        if prev == -1 {
            return;
        }
        out.push_str(" ------------------------------------------\n");
        print_graph_cpu(cfg, cpu, out);
        print_graph_proc(cfg, prev, out);
        out.push_str(" => ");
        print_graph_proc(cfg, pid, out);
        out.push_str("\n ------------------------------------------\n\n");
    }

    /// The columns before the duration: abs time, CPU, task, latency flags.
    fn print_context_columns(
        cfg: &OutputConfig<'_>,
        flags: u32,
        cpu: usize,
        ts: u64,
        ent: &TraceEntry,
        out: &mut TraceSeq,
    ) {
        if flags & PRINT_ABS_TIME != 0 {
            print_graph_abs_time(ts, out);
        }
        if flags & PRINT_REL_TIME != 0 {
            let _ = write!(out, "{:9} us |  ", ts.wrapping_sub(cfg.time_start) / 1000);
        }
        if flags & PRINT_CPU != 0 {
            print_graph_cpu(cfg, cpu, out);
        }
        if flags & PRINT_PROC != 0 {
            print_graph_proc(cfg, ent.pid, out);
            out.push_str(" | ");
        }
        if cfg.options.has(TraceOption::LatencyFmt) {
            print_graph_lat_fmt(ent, out);
        }
    }

    fn in_irqentry(cfg: &OutputConfig<'_>, addr: u64) -> bool {
        cfg.irqentry.start <= addr && addr < cfg.irqentry.end
    }

    /// `print_graph_irq()`: the `==========>` / `<==========` line around a
    /// function in the irq-entry section.
    #[allow(clippy::too_many_arguments)]
    fn print_graph_irq(
        cfg: &OutputConfig<'_>,
        flags: u32,
        cpu: usize,
        ts: u64,
        ent: &TraceEntry,
        addr: u64,
        entering: bool,
        out: &mut TraceSeq,
    ) {
        if !Self::in_irqentry(cfg, addr) {
            return;
        }
        if cfg.options.has(TraceOption::ContextInfo) {
            Self::print_context_columns(cfg, flags, cpu, ts, ent, out);
        }
        print_graph_duration(cfg, flags, 0, Fill::Start, out);
        out.push_str(if entering {
            "==========>"
        } else {
            "<=========="
        });
        print_graph_duration(cfg, flags, 0, Fill::End, out);
        out.push('\n');
    }

    /// `print_graph_prologue()`.
    fn print_graph_prologue(
        &mut self,
        cfg: &OutputConfig<'_>,
        cpu: usize,
        ts: u64,
        ent: &TraceEntry,
        irq_addr: Option<u64>,
        out: &mut TraceSeq,
    ) {
        self.verif_pid(cfg, cpu, ent.pid, out);
        let flags = self.flags(cfg);
        if let Some(addr) = irq_addr {
            Self::print_graph_irq(cfg, flags, cpu, ts, ent, addr, true, out);
        }
        if !cfg.options.has(TraceOption::ContextInfo) {
            return;
        }
        Self::print_context_columns(cfg, flags, cpu, ts, ent, out);
    }

    /// `check_irq_entry()`: with `funcgraph-irqs` off, hide everything from
    /// an irq-entry function down to its return. True = hidden.
    fn check_irq_entry(
        &mut self,
        cfg: &OutputConfig<'_>,
        cpu: usize,
        addr: u64,
        depth: i32,
    ) -> bool {
        if self.flags(cfg) & PRINT_IRQS != 0 {
            return false;
        }
        let inside = Self::in_irqentry(cfg, addr);
        let d = self.data(cpu);
        if d.depth_irq >= 0 {
            return true;
        }
        if !inside {
            return false;
        }
        d.depth_irq = depth;
        true
    }

    /// `check_irq_return()`.
    fn check_irq_return(&mut self, cfg: &OutputConfig<'_>, cpu: usize, depth: i32) -> bool {
        if self.flags(cfg) & PRINT_IRQS != 0 {
            return false;
        }
        let d = self.data(cpu);
        if d.depth_irq == -1 {
            return false;
        }
        if d.depth_irq >= depth {
            d.depth_irq = -1;
        }
        true
    }

    /// `get_return_for_leaf()`: if the next record on this CPU is the return
    /// of this very call (same pid and function), take it.
    fn get_return_for_leaf(
        src: &mut dyn EventSource,
        cpu: usize,
        curr: &GraphEntEntry,
    ) -> Option<GraphRetEntry> {
        let next = src.peek_cpu(cpu)?;
        let ret = match Entry::decode(&next.payload) {
            Ok(Entry::GraphRet(r)) => r,
            _ => return None,
        };
        if curr.ent.pid != ret.ent.pid || curr.func != ret.func {
            return None;
        }
        src.next_cpu(cpu);
        Some(ret)
    }

    fn print_graph_entry(
        &mut self,
        cfg: &OutputConfig<'_>,
        src: &mut dyn EventSource,
        cpu: usize,
        ts: u64,
        call: &GraphEntEntry,
        out: &mut TraceSeq,
    ) {
        if self.check_irq_entry(cfg, cpu, call.func, call.depth) {
            return;
        }
        self.print_graph_prologue(cfg, cpu, ts, &call.ent, Some(call.func), out);
        let flags = self.flags(cfg);

        match Self::get_return_for_leaf(src, cpu, call) {
            Some(ret) => {
                // print_graph_entry_leaf()
                let d = self.data(cpu);
                d.depth = call.depth - 1;
                if call.depth >= 0 && (call.depth as usize) < FTRACE_RETFUNC_DEPTH {
                    d.enter_funcs[call.depth as usize] = 0;
                }
                print_graph_duration(cfg, flags, ret.duration(), Fill::None, out);
                indent(call.depth, out);
                write_ps(out, cfg.syms, call.func);
                out.push_str("();\n");
                Self::print_graph_irq(cfg, flags, cpu, ts, &call.ent, ret.func, false, out);
            }
            None => {
                // print_graph_entry_nested()
                let d = self.data(cpu);
                d.depth = call.depth;
                if call.depth >= 0 && (call.depth as usize) < FTRACE_RETFUNC_DEPTH {
                    d.enter_funcs[call.depth as usize] = call.func;
                }
                print_graph_duration(cfg, flags, 0, Fill::Full, out);
                indent(call.depth, out);
                write_ps(out, cfg.syms, call.func);
                out.push_str("() {\n");
            }
        }
    }

    fn print_graph_return(
        &mut self,
        cfg: &OutputConfig<'_>,
        cpu: usize,
        ts: u64,
        trace: &GraphRetEntry,
        out: &mut TraceSeq,
    ) {
        if self.check_irq_return(cfg, cpu, trace.depth) {
            return;
        }
        let mut func_match = true;
        {
            let d = self.data(cpu);
            d.depth = trace.depth - 1;
            if trace.depth >= 0 && (trace.depth as usize) < FTRACE_RETFUNC_DEPTH {
                if d.enter_funcs[trace.depth as usize] != trace.func {
                    func_match = false;
                }
                d.enter_funcs[trace.depth as usize] = 0;
            }
        }
        self.print_graph_prologue(cfg, cpu, ts, &trace.ent, None, out);
        let flags = self.flags(cfg);
        print_graph_duration(cfg, flags, trace.duration(), Fill::None, out);
        indent(trace.depth, out);
        if func_match && flags & PRINT_TAIL == 0 {
            out.push_str("}\n");
        } else {
            out.push_str("} /* ");
            write_ps(out, cfg.syms, trace.func);
            out.push_str(" */\n");
        }
        if flags & PRINT_OVERRUN != 0 {
            let _ = writeln!(out, " (Overruns: {})", trace.overrun);
        }
        Self::print_graph_irq(cfg, flags, cpu, ts, &trace.ent, trace.func, false, out);
    }

    /// `print_graph_comment()`: another event inside the graph, printed as
    /// `/* text */` one level deeper than the current depth.
    fn print_graph_comment(
        &mut self,
        cfg: &OutputConfig<'_>,
        cpu: usize,
        ts: u64,
        ent: &TraceEntry,
        text: &[u8],
        out: &mut TraceSeq,
    ) {
        let depth = self.data(cpu).depth;
        self.print_graph_prologue(cfg, cpu, ts, ent, None, out);
        print_graph_duration(cfg, self.flags(cfg), 0, Fill::Full, out);
        if depth > 0 {
            indent(depth + 1, out);
        }
        out.push_str("/* ");
        let mut msg = String::from_utf8_lossy(text).into_owned();
        if msg.ends_with('\n') {
            msg.pop();
        }
        out.push_str(&msg);
        out.push_str(" */\n");
    }
}

/// `print_lat_header()`: the latency legend above the graph columns.
fn print_lat_header(out: &mut TraceSeq, flags: u32) {
    const SPACES: &str = "                                     "; // 16 + 4 + 17
    let mut size = 0;
    if flags & PRINT_ABS_TIME != 0 {
        size += 16;
    }
    if flags & PRINT_REL_TIME != 0 {
        size += 16;
    }
    if flags & PRINT_CPU != 0 {
        size += 4;
    }
    if flags & PRINT_PROC != 0 {
        size += 17;
    }
    let sp = &SPACES[..size.min(SPACES.len())];
    let _ = writeln!(out, "#{}  _-----=> irqs-off        ", sp);
    let _ = writeln!(out, "#{} / _----=> need-resched    ", sp);
    let _ = writeln!(out, "#{}| / _---=> hardirq/softirq ", sp);
    let _ = writeln!(out, "#{}|| / _--=> preempt-depth   ", sp);
    let _ = writeln!(out, "#{}||| /                      ", sp);
}

/// `__print_graph_headers_flags()`: the two column-title lines.
pub fn print_graph_column_headers(out: &mut TraceSeq, flags: u32, lat: bool) {
    if lat {
        print_lat_header(out, flags);
    }
    out.push('#');
    if flags & PRINT_ABS_TIME != 0 {
        out.push_str("     TIME       ");
    }
    if flags & PRINT_REL_TIME != 0 {
        out.push_str("   REL TIME     ");
    }
    if flags & PRINT_CPU != 0 {
        out.push_str(" CPU");
    }
    if flags & PRINT_PROC != 0 {
        out.push_str("  TASK/PID       ");
    }
    if lat {
        out.push_str("||||   ");
    }
    if flags & PRINT_DURATION != 0 {
        out.push_str("  DURATION   ");
    }
    out.push_str("               FUNCTION CALLS\n");

    out.push('#');
    if flags & PRINT_ABS_TIME != 0 {
        out.push_str("      |         ");
    }
    if flags & PRINT_REL_TIME != 0 {
        out.push_str("      |         ");
    }
    if flags & PRINT_CPU != 0 {
        out.push_str(" |  ");
    }
    if flags & PRINT_PROC != 0 {
        out.push_str("   |    |        ");
    }
    if lat {
        out.push_str("||||   ");
    }
    if flags & PRINT_DURATION != 0 {
        out.push_str("   |   |      ");
    }
    out.push_str("               |   |   |   |\n");
}

/// `print_graph_headers_flags()`: nothing without `context-info`; with
/// `latency-format`, the latency banner first (and nothing at all when the
/// buffers are empty).
pub fn print_graph_headers(
    out: &mut TraceSeq,
    cfg: &OutputConfig<'_>,
    stats: &BufferStats,
    lat: &LatencyInfo,
    empty: bool,
) {
    print_graph_headers_flags(out, cfg, stats, lat, empty, graph_flags(cfg));
}

/// [`print_graph_headers`] with another tracer's fixed flags (Linux:
/// print_graph_headers_flags).
pub fn print_graph_headers_flags(
    out: &mut TraceSeq,
    cfg: &OutputConfig<'_>,
    stats: &BufferStats,
    lat: &LatencyInfo,
    empty: bool,
    flags: u32,
) {
    let o = cfg.options;
    if !o.has(TraceOption::ContextInfo) {
        return;
    }
    let latfmt = o.has(TraceOption::LatencyFmt);
    if latfmt {
        if empty {
            return;
        }
        print_trace_header(out, cfg, stats, lat);
    }
    print_graph_column_headers(out, flags, latfmt);
}

/// function_graph's printer for one open `trace`/`trace_pipe` file
/// (Linux: `graph_trace.print_header`/`print_line`, with the state
/// `graph_trace_open()` allocates).
pub struct GraphOutput {
    state: GraphState,
}

impl GraphOutput {
    pub fn new(nr_cpus: usize) -> Self {
        GraphOutput {
            state: GraphState::new(nr_cpus),
        }
    }
}

impl TracerOutput for GraphOutput {
    fn print_header(
        &self,
        out: &mut TraceSeq,
        cfg: &OutputConfig<'_>,
        stats: &BufferStats,
        lat: &LatencyInfo,
        empty: bool,
    ) -> bool {
        print_graph_headers(out, cfg, stats, lat, empty);
        true
    }

    fn print_line(
        &mut self,
        cfg: &OutputConfig<'_>,
        src: &mut dyn EventSource,
        cpu: usize,
        ts: u64,
        entry: &Entry,
        out: &mut TraceSeq,
    ) -> bool {
        self.state.print_line(cfg, src, cpu, ts, entry, out)
    }
}

/// The flags the irqsoff tracers print a graph with (Linux trace_irqsoff.c's
/// GRAPH_TRACER_FLAGS).
pub const IRQSOFF_GRAPH_FLAGS: u32 = PRINT_CPU | PRINT_PROC | PRINT_REL_TIME | PRINT_DURATION;
/// The wakeup tracers' (Linux trace_sched_wakeup.c's GRAPH_TRACER_FLAGS).
pub const WAKEUP_GRAPH_FLAGS: u32 =
    PRINT_PROC | PRINT_CPU | PRINT_REL_TIME | PRINT_DURATION | PRINT_OVERHEAD | PRINT_IRQS;

/// A latency tracer's printer (Linux: irqsoff_print_header/print_line and
/// wakeup's): with the `display-graph` option, the graph printer with the
/// tracer's fixed flags; without, the default printer.
pub struct LatencyGraphOutput {
    state: GraphState,
    flags: u32,
}

impl LatencyGraphOutput {
    pub fn new(nr_cpus: usize, flags: u32) -> Self {
        LatencyGraphOutput {
            state: GraphState::with_flags(nr_cpus, flags),
            flags,
        }
    }
}

impl TracerOutput for LatencyGraphOutput {
    fn print_header(
        &self,
        out: &mut TraceSeq,
        cfg: &OutputConfig<'_>,
        stats: &BufferStats,
        lat: &LatencyInfo,
        empty: bool,
    ) -> bool {
        if !cfg.options.has(TraceOption::DisplayGraph) {
            return false;
        }
        print_graph_headers_flags(out, cfg, stats, lat, empty, self.flags);
        true
    }

    fn print_line(
        &mut self,
        cfg: &OutputConfig<'_>,
        src: &mut dyn EventSource,
        cpu: usize,
        ts: u64,
        entry: &Entry,
        out: &mut TraceSeq,
    ) -> bool {
        cfg.options.has(TraceOption::DisplayGraph)
            && self.state.print_line(cfg, src, cpu, ts, entry, out)
    }
}
