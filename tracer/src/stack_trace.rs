//! The stack tracer's bookkeeping (Linux: kernel/trace/trace_stack.c,
//! `check_stack` and the `stack_trace` file), without the hardware.
//!
//! The kernel calls [`StackTrace::check_stack`] from its ftrace callback
//! when the stack in use (from a local variable of the callback up to the
//! top of the task's stack) is deeper than the deepest seen so far. The
//! callback hands over the call chain as the frame-pointer walk found it
//! (return addresses, innermost first) and a way to read the stack's words.
//! As Linux does, the chain is first cut at the traced function (the
//! return address `ip` into it), then every return address is looked for
//! in the stack, going up from the local variable: the depth of the word
//! holding it, counted from the top of the stack, is that entry's depth,
//! and the difference between one entry's depth and the next one's is the
//! size of the frame in between. The first time, the distance from the
//! local variable to the traced function's return address is the tracer's
//! own frames; it is learnt once and left out of every size after.
//!
//! [`StackTrace::show`] prints the table as Linux's `stack_trace` file:
//! `"%3ld) %8d   %5d   %pS\n"` per entry under the `Depth Size Location`
//! header, and a note on how to enable the tracer while it is off and
//! nothing was recorded.
use alloc::string::String;
use core::fmt::Write;

/// Entries kept (Linux: STACK_TRACE_ENTRIES); the walk fills one less.
pub const STACK_TRACE_ENTRIES: usize = 500;

/// The deepest stack seen and its call chain (Linux: stack_dump_trace,
/// stack_trace_index, stack_trace_nr_entries, stack_trace_max_size and
/// check_stack's tracer_frame).
pub struct StackTrace {
    /// The return addresses as the stack holds them (function_graph may
    /// have put `return_to_handler` in place of some).
    raw: [u64; STACK_TRACE_ENTRIES],
    /// The same, as they are printed (the real callers).
    real: [u64; STACK_TRACE_ENTRIES],
    /// Each entry's depth in bytes, from the top of the stack.
    index: [u64; STACK_TRACE_ENTRIES],
    nr_entries: usize,
    max_size: u64,
    tracer_frame: u64,
}

impl Default for StackTrace {
    fn default() -> Self {
        Self::new()
    }
}

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackEntry {
    /// Bytes from the top of the stack to the word holding the address.
    pub depth: u64,
    /// This frame's share: the depth minus the next entry's (the last
    /// entry's is its depth).
    pub size: u64,
    /// The return address (the real one under function_graph).
    pub addr: u64,
}

impl StackTrace {
    pub const fn new() -> StackTrace {
        StackTrace {
            raw: [0; STACK_TRACE_ENTRIES],
            real: [0; STACK_TRACE_ENTRIES],
            index: [0; STACK_TRACE_ENTRIES],
            nr_entries: 0,
            max_size: 0,
            tracer_frame: 0,
        }
    }

    /// The deepest stack recorded, in bytes (`stack_max_size`).
    pub fn max_size(&self) -> u64 {
        self.max_size
    }

    /// What a write to `stack_max_size` does: sets the size a stack must
    /// exceed to be recorded (0: the next call is a new maximum). The table
    /// stays until a deeper stack replaces it.
    pub fn set_max_size(&mut self, size: u64) {
        self.max_size = size;
    }

    /// The tracer's own frames, once learnt (0 before).
    pub fn tracer_frame(&self) -> u64 {
        self.tracer_frame
    }

    /// The recorded chain, innermost first.
    pub fn entries(&self) -> impl Iterator<Item = StackEntry> + '_ {
        let n = self.nr_entries;
        (0..n).map(move |i| StackEntry {
            depth: self.index[i],
            size: if i + 1 == n {
                self.index[i]
            } else {
                self.index[i].wrapping_sub(self.index[i + 1])
            },
            addr: self.real[i],
        })
    }

    /// The locked part of Linux's `check_stack`: records a new maximum if
    /// the stack is deeper than the current one. `ip` is the return address
    /// into the traced function; `nwords` the words from the callback's
    /// local variable (word 0) up to the top of the stack (exclusive), read
    /// by `word(k)`; `save` fills the two slices with the call chain
    /// (as on the stack, and as printed), innermost first, and returns how
    /// many it wrote. Returns true if a new maximum was recorded.
    pub fn check_stack(
        &mut self,
        ip: u64,
        nwords: usize,
        word: impl Fn(usize) -> u64,
        save: impl FnOnce(&mut [u64], &mut [u64]) -> usize,
    ) -> bool {
        let mut this_size = (nwords as u64 * 8).saturating_sub(self.tracer_frame);
        if this_size <= self.max_size {
            return false;
        }
        self.max_size = this_size;
        let max = STACK_TRACE_ENTRIES - 1;
        let n = save(&mut self.raw[..max], &mut self.real[..max]).min(max);
        // Skip the tracer's own calls; without the ip, show everything.
        let mut i = (0..n).find(|&i| self.real[i] == ip).unwrap_or(0);
        let mut x = 0;
        let mut start = 0;
        // An address missing from the stack is skipped: the search goes on
        // from the last one found.
        while i < n {
            let mut found = false;
            self.index[x] = this_size;
            let mut p = start;
            while p < nwords && i < n {
                if word(p) == self.raw[i] {
                    self.raw[x] = self.raw[i];
                    self.real[x] = self.real[i];
                    i += 1;
                    this_size = (nwords - p) as u64 * 8;
                    self.index[x] = this_size;
                    x += 1;
                    found = true;
                    start = p + 1;
                    if self.tracer_frame == 0 {
                        self.tracer_frame = p as u64 * 8;
                        self.max_size -= self.tracer_frame;
                    }
                }
                p += 1;
            }
            if !found {
                i += 1;
            }
        }
        self.nr_entries = x;
        true
    }

    /// The `stack_trace` file. `enabled` is whether the tracer is on;
    /// `symbol` appends an address as `%pS` prints it.
    pub fn show(&self, enabled: bool, symbol: impl Fn(&mut String, u64)) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "        Depth    Size   Location    ({} entries)\n        -----    ----   --------\n",
            self.nr_entries
        );
        if !enabled && self.max_size == 0 {
            s.push_str(
                "#\n\
                 #  Stack tracer disabled\n\
                 #\n\
                 # To enable the stack tracer, either add 'stacktrace' to the\n\
                 # kernel command line\n\
                 # or 'echo 1 > /proc/sys/kernel/stack_tracer_enabled'\n\
                 #\n",
            );
        }
        for (i, e) in self.entries().enumerate() {
            // Linux prints the depth and size as `int`s.
            let _ = write!(s, "{:3}) {:8}   {:5}   ", i, e.depth as i32, e.size as i32);
            symbol(&mut s, e.addr);
            s.push('\n');
        }
        s
    }
}

/// The boot options the stack tracer takes (Linux: `__setup("stacktrace",
/// enable_stacktrace)`): any word of the command line that starts with
/// `stacktrace` turns the tracer on, and `stacktrace_filter=LIST` also
/// gives the functions to trace, separated by commas. Returns (enabled,
/// the last filter given).
pub fn parse_boot_options(cmdline: &str) -> (bool, Option<&str>) {
    let mut enabled = false;
    let mut filter = None;
    for word in cmdline.split_ascii_whitespace() {
        if let Some(rest) = word.strip_prefix("stacktrace") {
            enabled = true;
            if let Some(list) = rest.strip_prefix("_filter=") {
                filter = Some(list);
            }
        }
    }
    (enabled, filter)
}

/// The commands of `set_ftrace_filter` (Linux's `ftrace_commands`: `mod`,
/// the function probes, `snapshot`, `enable_event`/`disable_event`). In
/// `stack_trace_filter`, whose ops has no trace array, every one of them
/// fails with ENODEV; an unknown command is EINVAL.
pub const FTRACE_COMMANDS: &[&str] = &[
    "mod",
    "traceon",
    "traceoff",
    "stacktrace",
    "dump",
    "cpudump",
    "snapshot",
    "enable_event",
    "disable_event",
];

/// What a `func:command...` token written to `stack_trace_filter` gives
/// (None for a plain function glob, which the filter parser takes). The
/// command starts at a single `:`, as in `set_ftrace_filter`, so a Rust
/// path (`kernel::fs::vfs::read`) is a function name.
pub fn stack_filter_command(token: &str) -> Option<crate::errno::Errno> {
    let (_, Some((cmd, _))) = crate::filter::split_command(token) else {
        return None;
    };
    Some(if FTRACE_COMMANDS.contains(&cmd) {
        crate::errno::Errno::ENODEV
    } else {
        crate::errno::Errno::EINVAL
    })
}
