//! What the printer reads besides the events: the options, the current
//! tracer's name, symbols (kallsyms) and task names (`saved_cmdlines`), and
//! the clock's unit (Linux: the fields of `struct trace_iterator` and
//! `trace_find_cmdline()` in kernel/trace/trace.c).

use alloc::string::String;
use core::ops::Range;

use crate::options::{TraceOptions, Tracer};

/// Address to symbol lookup (kallsyms). Returns the symbol's name, the
/// offset of `addr` inside it, and the symbol's size.
pub trait SymbolResolver {
    fn lookup(&self, addr: u64) -> Option<(&str, u64, u64)>;
}

/// pid to command name (`saved_cmdlines`). `None` prints Linux's `<...>`.
pub trait TaskNames {
    fn comm(&self, pid: i32) -> Option<&str>;
    /// Thread-group id for the `record-tgid` column (`saved_tgids`);
    /// `None` prints `(-------)`.
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
    String::from(cmdline_str(tasks, pid))
}

/// [`find_cmdline`] without the copy: the name borrowed from `tasks`.
#[inline]
pub fn cmdline_str(tasks: &dyn TaskNames, pid: i32) -> &str {
    if pid == 0 {
        return "<idle>";
    }
    if pid < 0 {
        return "<XXX>";
    }
    match tasks.comm(pid) {
        Some(c) => truncate_str(c, TASK_COMM_MAX),
        None => "<...>",
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

/// Everything the printer needs besides the events.
pub struct OutputConfig<'a> {
    pub options: &'a TraceOptions,
    /// The current tracer (its name heads the `trace` file; its own
    /// header and line printer, if any, come with the iterator).
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
    /// The iterator's `TRACE_FILE_LAT_FMT`: event lines get the latency
    /// context columns even without the `latency-format` option (what
    /// `ftrace_dump` sets; headers still follow the option).
    pub file_lat_fmt: bool,
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
            file_lat_fmt: false,
        }
    }
}
