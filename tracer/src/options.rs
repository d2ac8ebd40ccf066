//! The `trace_options` file and the `options/` directory (Linux 6.6,
//! kernel/trace/trace.c: `trace_options[]`, `tracing_trace_options_show()`,
//! `trace_set_options()`, `trace_options_core_write()`; tracer options from
//! trace_functions.c, trace_functions_graph.c and trace_nop.c).
//!
//! There are two kinds of options. *Core* options are bits of
//! `tr->trace_flags`, always listed. *Tracer* options belong to one tracer
//! (`struct tracer_opt`); `trace_options` lists and accepts them only while
//! that tracer is current, but their files in `options/` exist for every
//! registered tracer. Reading `trace_options` prints one option per line,
//! `name` when set and `noname` when clear. Writing takes one option
//! (surrounding whitespace ignored); a `no` prefix clears it; an unknown
//! name is `EINVAL` and nothing changes. `options/<name>` reads `0`/`1` and
//! takes `0` or `1`.
//!
//! Only options that do something here are listed. Linux's options for
//! user space (`userstacktrace`, `sym-userobj`), `record-cmd` (this kernel
//! saves every task's comm when it is created, whatever the option),
//! `stacktrace` (it also covers `trace_printk`, which this kernel has
//! not) and for `poll()` on `trace_pipe` (`block`) are not listed, and
//! writing them is `EINVAL`, as for any unknown name. So is `hash-ptr`: it changes how trace events
//! print `%p`, and the only ones that print a pointer here, kmem's
//! `kmalloc` and `kfree`, always print it as Linux does with `hash-ptr`
//! off (the raw value, 16 hex digits). `fields` came after Linux 6.1 and
//! is not listed either.

use alloc::string::String;

use crate::errno::Errno;

/// Declares [`TraceOption`], [`TRACE_OPTIONS`] (Linux's `trace_options[]`)
/// and the list of all options from one table, so the three cannot disagree.
macro_rules! core_options {
    ($($variant:ident => $name:literal,)*) => {
        /// A core option: its bit number in `trace_flags` (Linux's
        /// `TRACE_ITER_*_BIT`, in `TRACE_FLAGS` order, leaving out the options
        /// that have nothing to act on in this kernel; see the module docs).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum TraceOption {
            $($variant,)*
        }

        /// Core option names, indexed by [`TraceOption`] (Linux's `trace_options[]`).
        pub const TRACE_OPTIONS: &[&str] = &[$($name,)*];

        const ALL_CORE: &[TraceOption] = &[$(TraceOption::$variant,)*];
    };
}

core_options! {
    PrintParent => "print-parent",
    SymOffset => "sym-offset",
    SymAddr => "sym-addr",
    Verbose => "verbose",
    Raw => "raw",
    Hex => "hex",
    Bin => "bin",
    Printk => "trace_printk",
    Annotate => "annotate",
    PrintkMsgOnly => "printk-msg-only",
    ContextInfo => "context-info",
    LatencyFmt => "latency-format",
    RecordTgid => "record-tgid",
    Overwrite => "overwrite",
    StopOnFree => "disable_on_free",
    IrqInfo => "irq-info",
    Markers => "markers",
    EventFork => "event-fork",
    PauseOnTrace => "pause-on-trace",
    FunctionTrace => "function-trace",
    FuncFork => "function-fork",
    DisplayGraph => "display-graph",
}

impl TraceOption {
    /// The bit in the flags word.
    pub const fn mask(self) -> u32 {
        1 << (self as u8)
    }
    /// The option's name.
    pub fn name(self) -> &'static str {
        TRACE_OPTIONS[self as usize]
    }
    /// Looks a core option up by name.
    pub fn from_name(name: &str) -> Option<TraceOption> {
        TRACE_OPTIONS
            .iter()
            .position(|n| *n == name)
            .map(|i| ALL_CORE[i])
    }
}

/// `TRACE_DEFAULT_FLAGS` of the options listed here: print-parent,
/// trace_printk, annotate, context-info, overwrite, irq-info, markers and
/// function-trace.
pub const TRACE_DEFAULT_FLAGS: u32 = TraceOption::FunctionTrace.mask()
    | TraceOption::PrintParent.mask()
    | TraceOption::Printk.mask()
    | TraceOption::Annotate.mask()
    | TraceOption::ContextInfo.mask()
    | TraceOption::Overwrite.mask()
    | TraceOption::IrqInfo.mask()
    | TraceOption::Markers.mask();

/// Linux 6.1's `TOP_LEVEL_TRACE_FLAGS` of the options listed here
/// (trace_printk, printk-msg-only; record-cmd is not listed): only the
/// top-level `options/` has their files. An instance's `trace_options`
/// still lists and takes them, as Linux 6.1's does.
pub const TOP_LEVEL_TRACE_FLAGS: u32 =
    TraceOption::Printk.mask() | TraceOption::PrintkMsgOnly.mask();

/// The tracers whose options this module knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tracer {
    Nop,
    Function,
    FunctionGraph,
    /// The latency tracers (no options of their own).
    Irqsoff,
    Preemptoff,
    Preemptirqsoff,
    Wakeup,
    WakeupRt,
}

/// How many [`Tracer`]s there are.
const NR_TRACERS: usize = 8;

impl Tracer {
    /// The name written to `current_tracer`.
    pub fn name(self) -> &'static str {
        match self {
            Tracer::Nop => "nop",
            Tracer::Function => "function",
            Tracer::FunctionGraph => "function_graph",
            Tracer::Irqsoff => "irqsoff",
            Tracer::Preemptoff => "preemptoff",
            Tracer::Preemptirqsoff => "preemptirqsoff",
            Tracer::Wakeup => "wakeup",
            Tracer::WakeupRt => "wakeup_rt",
        }
    }
    /// Parses a `current_tracer` name.
    pub fn from_name(name: &str) -> Option<Tracer> {
        match name {
            "nop" => Some(Tracer::Nop),
            "function" => Some(Tracer::Function),
            "function_graph" => Some(Tracer::FunctionGraph),
            "irqsoff" => Some(Tracer::Irqsoff),
            "preemptoff" => Some(Tracer::Preemptoff),
            "preemptirqsoff" => Some(Tracer::Preemptirqsoff),
            "wakeup" => Some(Tracer::Wakeup),
            "wakeup_rt" => Some(Tracer::WakeupRt),
            _ => None,
        }
    }
    /// This tracer's options (`struct tracer_opt` array), in Linux's order.
    pub fn opts(self) -> &'static [TracerOpt] {
        match self {
            Tracer::Nop => &NOP_OPTS,
            Tracer::Function => &FUNC_OPTS,
            Tracer::FunctionGraph => &GRAPH_OPTS,
            _ => &[],
        }
    }
    /// The default value of this tracer's option bits.
    pub fn default_flags(self) -> u32 {
        match self {
            Tracer::FunctionGraph => graph_flags::DEFAULT,
            _ => 0,
        }
    }
    fn index(self) -> usize {
        self as usize
    }
}

/// One tracer-specific option (`TRACER_OPT(name, bit)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracerOpt {
    pub name: &'static str,
    pub bit: u32,
}

/// Function tracer option bits (trace_functions.c).
pub mod func_flags {
    /// `func_stack_trace`: record a stack trace after every function event.
    pub const STACK: u32 = 0x1;
    /// `func-no-repeats`: fold identical consecutive events.
    pub const NO_REPEATS: u32 = 0x2;
}

/// function_graph option bits (`TRACE_GRAPH_*`, trace.h).
pub mod graph_flags {
    pub const PRINT_OVERRUN: u32 = 0x1;
    pub const PRINT_CPU: u32 = 0x2;
    pub const PRINT_OVERHEAD: u32 = 0x4;
    pub const PRINT_PROC: u32 = 0x8;
    pub const PRINT_DURATION: u32 = 0x10;
    pub const PRINT_ABS_TIME: u32 = 0x20;
    pub const PRINT_REL_TIME: u32 = 0x40;
    pub const PRINT_IRQS: u32 = 0x80;
    pub const PRINT_TAIL: u32 = 0x100;
    pub const SLEEP_TIME: u32 = 0x200;
    /// `graph-time`: the function profiler counts the time of a
    /// function's callees in its time.
    pub const GRAPH_TIME: u32 = 0x400;
    /// CPU, overhead, duration, irqs, sleep-time and graph-time.
    pub const DEFAULT: u32 =
        PRINT_CPU | PRINT_OVERHEAD | PRINT_DURATION | PRINT_IRQS | SLEEP_TIME | GRAPH_TIME;
}

/// nop tracer's self-test options (trace_nop.c).
pub mod nop_flags {
    pub const ACCEPT: u32 = 0x1;
    pub const REFUSE: u32 = 0x2;
}

const NOP_OPTS: [TracerOpt; 2] = [
    TracerOpt {
        name: "test_nop_accept",
        bit: nop_flags::ACCEPT,
    },
    TracerOpt {
        name: "test_nop_refuse",
        bit: nop_flags::REFUSE,
    },
];

const FUNC_OPTS: [TracerOpt; 2] = [
    TracerOpt {
        name: "func_stack_trace",
        bit: func_flags::STACK,
    },
    TracerOpt {
        name: "func-no-repeats",
        bit: func_flags::NO_REPEATS,
    },
];

const GRAPH_OPTS: [TracerOpt; 10] = {
    use graph_flags::*;
    [
        TracerOpt {
            name: "funcgraph-overrun",
            bit: PRINT_OVERRUN,
        },
        TracerOpt {
            name: "funcgraph-cpu",
            bit: PRINT_CPU,
        },
        TracerOpt {
            name: "funcgraph-overhead",
            bit: PRINT_OVERHEAD,
        },
        TracerOpt {
            name: "funcgraph-proc",
            bit: PRINT_PROC,
        },
        TracerOpt {
            name: "funcgraph-duration",
            bit: PRINT_DURATION,
        },
        TracerOpt {
            name: "funcgraph-abstime",
            bit: PRINT_ABS_TIME,
        },
        TracerOpt {
            name: "funcgraph-irqs",
            bit: PRINT_IRQS,
        },
        TracerOpt {
            name: "funcgraph-tail",
            bit: PRINT_TAIL,
        },
        TracerOpt {
            name: "sleep-time",
            bit: SLEEP_TIME,
        },
        TracerOpt {
            name: "graph-time",
            bit: GRAPH_TIME,
        },
    ]
};

const TRACERS: [Tracer; NR_TRACERS] = [
    Tracer::Nop,
    Tracer::Function,
    Tracer::FunctionGraph,
    Tracer::Irqsoff,
    Tracer::Preemptoff,
    Tracer::Preemptirqsoff,
    Tracer::Wakeup,
    Tracer::WakeupRt,
];

/// Which option a successful write changed, so the kernel can apply side
/// effects (ring-buffer overwrite mode, the function tracer's stack-trace
/// callback, function_graph's irq skipping, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionId {
    Core(TraceOption),
    Tracer(Tracer, u32),
}

/// The result of a write that was accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionChange {
    pub id: OptionId,
    pub enabled: bool,
    /// False when the option already had that value (Linux does nothing).
    pub changed: bool,
}

/// All option values of one trace instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceOptions {
    /// Core `trace_flags`.
    pub trace_flags: u32,
    /// Tracer option words, indexed by tracer.
    tracer_flags: [u32; NR_TRACERS],
}

impl Default for TraceOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// Longest write `trace_options` accepts (`char buf[64]`, minus the NUL).
pub const TRACE_OPTIONS_WRITE_MAX: usize = 63;

impl TraceOptions {
    /// Linux's boot defaults.
    pub fn new() -> Self {
        TraceOptions {
            trace_flags: TRACE_DEFAULT_FLAGS,
            tracer_flags: core::array::from_fn(|i| TRACERS[i].default_flags()),
        }
    }

    /// Is a core option set?
    pub fn has(&self, opt: TraceOption) -> bool {
        self.trace_flags & opt.mask() != 0
    }

    /// Sets or clears a core option directly (no side-effect checks).
    pub fn set(&mut self, opt: TraceOption, on: bool) {
        if on {
            self.trace_flags |= opt.mask();
        } else {
            self.trace_flags &= !opt.mask();
        }
    }

    /// A tracer's option word.
    pub fn tracer_flags(&self, t: Tracer) -> u32 {
        self.tracer_flags[t.index()]
    }

    /// Sets a tracer's option word directly.
    pub fn set_tracer_flags(&mut self, t: Tracer, flags: u32) {
        self.tracer_flags[t.index()] = flags;
    }

    /// The text of `trace_options` while `current` is the tracer.
    pub fn trace_options_text(&self, current: Tracer) -> String {
        let mut s = String::new();
        for (i, name) in TRACE_OPTIONS.iter().enumerate() {
            if self.trace_flags & (1 << i) == 0 {
                s.push_str("no");
            }
            s.push_str(name);
            s.push('\n');
        }
        let flags = self.tracer_flags(current);
        for o in current.opts() {
            if flags & o.bit == 0 {
                s.push_str("no");
            }
            s.push_str(o.name);
            s.push('\n');
        }
        s
    }

    /// A write to `trace_options` (`trace_set_options()`): one option name,
    /// optionally prefixed by `no`, surrounded by optional whitespace.
    /// Tracer options are accepted only for the current tracer.
    pub fn write_trace_options(
        &mut self,
        current: Tracer,
        input: &[u8],
    ) -> Result<OptionChange, Errno> {
        if input.len() > TRACE_OPTIONS_WRITE_MAX {
            return Err(Errno::EINVAL);
        }
        let text = core::str::from_utf8(input).map_err(|_| Errno::EINVAL)?;
        let cmp = text.trim_matches(|c: char| c.is_ascii_whitespace());
        let (neg, name) = match cmp.strip_prefix("no") {
            Some(rest) => (true, rest),
            None => (false, cmp),
        };
        if let Some(opt) = TraceOption::from_name(name) {
            return Ok(self.set_core(opt, !neg));
        }
        match current.opts().iter().find(|o| o.name == name) {
            Some(o) => self.set_tracer_opt(current, o.bit, !neg),
            None => Err(Errno::EINVAL),
        }
    }

    fn set_core(&mut self, opt: TraceOption, on: bool) -> OptionChange {
        let changed = self.has(opt) != on;
        self.set(opt, on);
        OptionChange {
            id: OptionId::Core(opt),
            enabled: on,
            changed,
        }
    }

    fn set_tracer_opt(&mut self, t: Tracer, bit: u32, on: bool) -> Result<OptionChange, Errno> {
        let cur = self.tracer_flags(t);
        let changed = (cur & bit != 0) != on;
        if !changed {
            return Ok(OptionChange {
                id: OptionId::Tracer(t, bit),
                enabled: on,
                changed,
            });
        }
        // nop_set_flag(): the "refuse" test option refuses every change.
        if t == Tracer::Nop && bit == nop_flags::REFUSE {
            return Err(Errno::EINVAL);
        }
        let new = if on { cur | bit } else { cur & !bit };
        self.tracer_flags[t.index()] = new;
        Ok(OptionChange {
            id: OptionId::Tracer(t, bit),
            enabled: on,
            changed,
        })
    }

    /// Names of the files in `options/`: every core option, then every
    /// registered tracer's options.
    pub fn option_files() -> impl Iterator<Item = &'static str> {
        TRACE_OPTIONS
            .iter()
            .copied()
            .chain(TRACERS.iter().flat_map(|t| t.opts().iter().map(|o| o.name)))
    }

    /// Names of the files in an `options/` directory (Linux:
    /// `create_trace_options_dir()`, `add_tracer_options()`): in the top
    /// level, [`Self::option_files`]; in an instance, the core options but
    /// [`TOP_LEVEL_TRACE_FLAGS`], then the options of the tracers
    /// `runs_here` (those that can run in the instance).
    pub fn option_files_in(
        top_level: bool,
        runs_here: impl Fn(Tracer) -> bool,
    ) -> impl Iterator<Item = &'static str> {
        let core = TRACE_OPTIONS
            .iter()
            .zip(ALL_CORE)
            .filter(move |(_, o)| top_level || o.mask() & TOP_LEVEL_TRACE_FLAGS == 0)
            .map(|(n, _)| *n);
        core.chain(
            TRACERS
                .iter()
                .filter(move |&&t| top_level || runs_here(t))
                .flat_map(|t| t.opts().iter().map(|o| o.name)),
        )
    }

    fn lookup_file(name: &str) -> Option<OptionId> {
        if let Some(opt) = TraceOption::from_name(name) {
            return Some(OptionId::Core(opt));
        }
        for t in TRACERS {
            if let Some(o) = t.opts().iter().find(|o| o.name == name) {
                return Some(OptionId::Tracer(t, o.bit));
            }
        }
        None
    }

    /// Reads `options/<name>`: `"1\n"` or `"0\n"`.
    pub fn read_option_file(&self, name: &str) -> Result<&'static str, Errno> {
        let on = match Self::lookup_file(name).ok_or(Errno::ENOENT)? {
            OptionId::Core(opt) => self.has(opt),
            OptionId::Tracer(t, bit) => self.tracer_flags(t) & bit != 0,
        };
        Ok(if on { "1\n" } else { "0\n" })
    }

    /// Writes `options/<name>`: a decimal `0` or `1` (an optional trailing
    /// newline, as `kstrtoul_from_user()` allows); anything else is `EINVAL`.
    pub fn write_option_file(&mut self, name: &str, input: &[u8]) -> Result<OptionChange, Errno> {
        let id = Self::lookup_file(name).ok_or(Errno::ENOENT)?;
        let v = kstrtoul_from_user(input, 10)?;
        if v > 1 {
            return Err(Errno::EINVAL);
        }
        let on = v == 1;
        match id {
            OptionId::Core(opt) => Ok(self.set_core(opt, on)),
            OptionId::Tracer(t, bit) => self.set_tracer_opt(t, bit, on),
        }
    }
}

/// How many bytes of a write `kstrtoul_from_user()` looks at: its buffer
/// holds a sign, 64 binary digits, a newline and the terminating NUL.
pub const KSTRTOUL_FROM_USER_MAX: usize = 1 + 64 + 1;

/// Linux's `kstrtoul_from_user()`, what tracefs number files parse a write
/// with (`max_graph_depth`, `tracing_thresh`, `tracing_on`,
/// `buffer_size_kb`, `options/*`...): [`parse_kstrtoul`] of the first
/// [`KSTRTOUL_FROM_USER_MAX`] bytes. The rest of a longer write is never
/// read, so 67 zeros and a `7` are 0, not 7 (checked on Linux 6.1).
pub fn kstrtoul_from_user(input: &[u8], base: u32) -> Result<u64, Errno> {
    parse_kstrtoul(&input[..input.len().min(KSTRTOUL_FROM_USER_MAX)], base)
}

/// Linux's `kstrtoul()`: digits in `base` (0 = auto: `0x` hex, leading `0`
/// octal, else decimal), optionally one trailing newline, nothing else.
/// Overflow is `ERANGE`, anything malformed `EINVAL`.
pub fn parse_kstrtoul(input: &[u8], base: u32) -> Result<u64, Errno> {
    let s = match input.last() {
        Some(b'\n') => &input[..input.len() - 1],
        _ => input,
    };
    let s = if s.first() == Some(&b'+') { &s[1..] } else { s };
    let (base, digits) = match base {
        0 => {
            if s.len() > 2 && s[0] == b'0' && (s[1] | 0x20) == b'x' {
                (16, &s[2..])
            } else if s.len() > 1 && s[0] == b'0' {
                (8, &s[1..])
            } else {
                (10, s)
            }
        }
        16 if s.len() > 2 && s[0] == b'0' && (s[1] | 0x20) == b'x' => (16, &s[2..]),
        b => (b, s),
    };
    if digits.is_empty() {
        return Err(Errno::EINVAL);
    }
    let mut v: u64 = 0;
    for &c in digits {
        let d = (c as char).to_digit(base).ok_or(Errno::EINVAL)?;
        v = v
            .checked_mul(base as u64)
            .and_then(|v| v.checked_add(d as u64))
            .ok_or(Errno::ERANGE)?;
    }
    Ok(v)
}
