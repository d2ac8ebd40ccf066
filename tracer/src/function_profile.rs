//! The function profiler's output (Linux: kernel/trace/ftrace.c,
//! function_stat_headers, function_stat_show and function_stat_cmp).
//!
//! Each `trace_stat/functionN` file shows one CPU's counts: the header
//! lines, then one row per function that was hit since the profiler was
//! last enabled, the most hit first. This kernel's profiler counts hits
//! through an ftrace_ops, as Linux's does when function_graph is not built
//! in, so the header stops after `Hit` and the rows have no time columns.
use alloc::string::String;
use core::fmt::Write;

/// The header lines (Linux without CONFIG_FUNCTION_GRAPH_TRACER).
pub const HEADER: &str =
    "  Function                               Hit\n  --------                               ---\n";

/// Appends one row: `"  %-30.30s  %10lu\n"` (the name cut to 30 bytes).
pub fn format_row(out: &mut String, name: &str, hits: u64) {
    let mut cut = name.len().min(30);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let _ = writeln!(out, "  {:<30}  {:>10}", &name[..cut], hits);
}

/// The whole file for one CPU: `hits[i]` is record `i`'s count and
/// `name(i)` its function. Rows with no hit are left out; the others are
/// sorted by descending hit count (equal counts in record order).
pub fn show(hits: impl Iterator<Item = u64>, name: impl Fn(usize) -> String) -> String {
    let mut rows: alloc::vec::Vec<(usize, u64)> =
        hits.enumerate().filter(|&(_, h)| h != 0).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = String::from(HEADER);
    for (i, h) in rows {
        format_row(&mut out, &name(i), h);
    }
    out
}

/// A write to `function_profile_enabled` (Linux: ftrace_profile_write):
/// a number as kstrtoul reads it, any non-zero value meaning on.
pub fn parse_enabled(input: &[u8]) -> Result<bool, crate::errno::Errno> {
    crate::options::kstrtoul_from_user(input, 10).map(|v| v != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn header_is_linux_s() {
        let s = show([0u64; 3].into_iter(), |_| unreachable!());
        assert_eq!(
            s,
            "  Function                               Hit\n  --------                               ---\n"
        );
    }

    #[test]
    fn rows_sorted_by_hits_and_formatted() {
        let names = ["alpha", "beta", "gamma", "delta"];
        let s = show([3u64, 0, 10, 3].into_iter(), |i| names[i].into());
        let lines: alloc::vec::Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[2], format!("  gamma{}          10", " ".repeat(25)));
        assert_eq!(lines[3], format!("  alpha{}           3", " ".repeat(25)));
        assert_eq!(lines[4], format!("  delta{}           3", " ".repeat(25)));
        // The hit column ends where the header's `Hit` ends.
        assert_eq!(lines[2].len(), lines[0].len());
    }

    #[test]
    fn long_names_cut_to_30() {
        let mut s = String::new();
        let long = "a_function_name_that_is_much_longer_than_thirty";
        format_row(&mut s, long, 12345678901);
        assert_eq!(s, format!("  {}  12345678901\n", &long[..30]));
    }

    #[test]
    fn enabled_parses_like_kstrtoul() {
        use crate::errno::Errno;
        assert_eq!(parse_enabled(b"0\n"), Ok(false));
        assert_eq!(parse_enabled(b"1"), Ok(true));
        assert_eq!(parse_enabled(b"7\n"), Ok(true));
        assert_eq!(parse_enabled(b"x\n"), Err(Errno::EINVAL));
        assert_eq!(parse_enabled(b"-1\n"), Err(Errno::EINVAL));
        assert_eq!(
            parse_enabled(b"99999999999999999999999\n"),
            Err(Errno::ERANGE)
        );
    }
}
