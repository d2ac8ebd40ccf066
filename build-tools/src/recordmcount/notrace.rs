//! The notrace list: functions whose ftrace call site is removed at build time.
//!
//! In Linux a function is `notrace` (`__attribute__((no_instrument_function))`)
//! or its whole file is built without `-pg`, so the compiler emits no call. rustc
//! has no per-function switch for `-Z instrument-mcount`, so recordmcount does it
//! after the fact: a site inside a function whose name matches a pattern here is
//! turned into a NOP and not recorded.
//!
//! File format: one pattern per line; `#` starts a comment; blank lines are
//! ignored. A pattern is a glob matched by the tracer's own matcher, the one
//! `set_ftrace_filter` uses (Linux's lib/glob.c: `*` matches any run of
//! characters, including `::`; `?`, `[a-z]`, `[!x]` and `\x` work too),
//! against the whole display name (see [`crate::names`]), e.g.
//! `kernel::arch::*` or `<kernel::trace::*`. Spaces in a pattern are read as
//! `_`, like in the display names.

use tracer::filter::glob_match;

/// A parsed notrace list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notrace {
    patterns: Vec<String>,
}

impl Notrace {
    /// An empty list: every function is traced.
    pub fn none() -> Notrace {
        Notrace::default()
    }

    /// Parses the text of a notrace file.
    pub fn parse(text: &str) -> Notrace {
        let patterns = text
            .lines()
            .map(|line| line.split('#').next().unwrap_or("").trim())
            .filter(|p| !p.is_empty())
            .map(|p| p.replace(' ', "_"))
            .collect();
        Notrace { patterns }
    }

    /// The patterns, in file order.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// True when `display_name` matches one of the patterns.
    pub fn matches(&self, display_name: &str) -> bool {
        self.patterns
            .iter()
            .any(|p| glob_match(p.as_bytes(), display_name.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match(b"kernel::arch::*", b"kernel::arch::x86::outb"));
        assert!(!glob_match(b"kernel::arch::*", b"kernel::archive::x"));
        assert!(glob_match(
            b"*::fmt",
            b"<kernel::X_as_core::fmt::Display>::fmt"
        ));
        assert!(glob_match(b"a*b*c", b"aXXbYYc"));
        assert!(!glob_match(b"a*b*c", b"aXXbYY"));
        assert!(glob_match(b"exact", b"exact"));
        assert!(!glob_match(b"exact", b"exactly"));
        assert!(glob_match(b"*", b""));
        assert!(glob_match(b"**x", b"x"));
        // The rest of Linux's glob syntax, as in set_ftrace_filter.
        assert!(glob_match(
            b"kernel::sched::preempt_[de]*",
            b"kernel::sched::preempt_enable"
        ));
        assert!(!glob_match(
            b"kernel::sched::preempt_[!de]*",
            b"kernel::sched::preempt_enable"
        ));
        assert!(glob_match(b"kernel::time::?sc", b"kernel::time::tsc"));
    }

    #[test]
    fn file_format() {
        let n = Notrace::parse(
            "# comment\n\nkernel::trace::*   # trailing comment\n  <kernel::A as core::fmt::Debug>::fmt\n",
        );
        assert_eq!(
            n.patterns(),
            ["kernel::trace::*", "<kernel::A_as_core::fmt::Debug>::fmt"]
        );
        assert!(n.matches("kernel::trace::ring_buffer::write"));
        assert!(n.matches("<kernel::A_as_core::fmt::Debug>::fmt"));
        assert!(!n.matches("kernel::main"));
        assert!(!Notrace::none().matches("anything"));
    }
}
