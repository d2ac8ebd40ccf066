//! The choices of `ftrace_dump_on_oops` (Linux 6.1: kernel/trace/trace.c,
//! `set_ftrace_dump_on_oops` and `ftrace_dump`): whether the kernel prints
//! its trace buffer to the console when it dies, and which CPUs' events.
//! The kernel's side (kernel/src/trace/ftrace_dump.rs) consumes the buffer
//! and prints it; this decides from the setting and the command line.

/// What a dump covers (Linux's `enum ftrace_dump_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpMode {
    /// `0`: no dump.
    None,
    /// `1`: every CPU's events.
    All,
    /// `2` (`orig_cpu`): only the events of the CPU that died.
    Orig,
}

impl DumpMode {
    /// The mode of a `ftrace_dump_on_oops` value, and whether Linux first
    /// prints `Bad dumping mode, switching to all CPUs dump` (any value but
    /// 0, 1 and 2 dumps every CPU after that line).
    pub fn of_setting(value: i32) -> (DumpMode, bool) {
        match value {
            0 => (DumpMode::None, false),
            1 => (DumpMode::All, false),
            2 => (DumpMode::Orig, false),
            _ => (DumpMode::All, true),
        }
    }
}

/// The value the boot option sets, if the command line has it (Linux 6.1:
/// `__setup("ftrace_dump_on_oops", set_ftrace_dump_on_oops)`, which
/// matches any word that starts with the name): with no `=` after the name,
/// `=` alone or `=1` it is 1, with `=orig_cpu` or `=2` it is 2, and any
/// other value is refused (nothing set). The last one given counts.
pub fn parse_boot_option(cmdline: &str) -> Option<i32> {
    let mut value = None;
    for word in cmdline.split_ascii_whitespace() {
        let Some(rest) = word.strip_prefix("ftrace_dump_on_oops") else {
            continue;
        };
        match rest.strip_prefix('=') {
            None | Some("") | Some("1") => value = Some(1),
            Some("orig_cpu") | Some("2") => value = Some(2),
            Some(_) => {}
        }
    }
    value
}

/// The lines around the dumped events (Linux: `ftrace_dump_one`'s
/// printks): the heading, the dashes before the first event and after the
/// last, or the empty-buffer line when nothing was printed.
pub const DUMP_HEADING: &str = "Dumping ftrace buffer:";
pub const DUMP_DASHES: &str = "---------------------------------";
pub const DUMP_EMPTY: &str = "   (ftrace buffer empty)";
pub const DUMP_BAD_MODE: &str = "Bad dumping mode, switching to all CPUs dump";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_map_to_linux_modes() {
        assert_eq!(DumpMode::of_setting(0), (DumpMode::None, false));
        assert_eq!(DumpMode::of_setting(1), (DumpMode::All, false));
        assert_eq!(DumpMode::of_setting(2), (DumpMode::Orig, false));
        assert_eq!(DumpMode::of_setting(3), (DumpMode::All, true));
        assert_eq!(DumpMode::of_setting(-1), (DumpMode::All, true));
    }

    #[test]
    fn boot_option_forms() {
        assert_eq!(parse_boot_option(""), None);
        assert_eq!(parse_boot_option("quiet"), None);
        assert_eq!(parse_boot_option("ftrace_dump_on_oops"), Some(1));
        assert_eq!(parse_boot_option("a ftrace_dump_on_oops=1 b"), Some(1));
        assert_eq!(parse_boot_option("ftrace_dump_on_oops=orig_cpu"), Some(2));
        assert_eq!(parse_boot_option("ftrace_dump_on_oops=2"), Some(2));
        assert_eq!(parse_boot_option("ftrace_dump_on_oops=3"), None);
        // Linux's prefix match: no `=` after the name is the plain option.
        assert_eq!(parse_boot_option("ftrace_dump_on_oopsy"), Some(1));
        assert_eq!(parse_boot_option("ftrace_dump_on_oops="), Some(1));
        assert_eq!(
            parse_boot_option("ftrace_dump_on_oops=orig_cpu ftrace_dump_on_oops"),
            Some(1)
        );
    }
}
