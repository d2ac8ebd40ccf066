//! The function profiler's statistics and output (Linux: kernel/trace/ftrace.c,
//! profile_graph_return, function_stat_headers, function_stat_show and
//! function_stat_cmp, with CONFIG_FUNCTION_GRAPH_TRACER).
//!
//! Each `trace_stat/functionN` file shows one CPU's records: the header
//! lines, then one row per function that was hit since the profiler was
//! last enabled, the one with the most time first. A record holds the
//! hits, the sum of the calls' durations (`time`, ns) and the sum of their
//! squares (`time_squared`, ns²), added by the profiler's function-graph
//! return hook. A row prints the hits, then Time, Avg (time / hits) and
//! s² (the sample variance, in µs², see [`stddev`]), each as function_graph
//! prints a duration (µs with up to 3 decimals).
//!
//! With the `graph-time` option off, a call's time leaves out the time of
//! the calls it made: each shadow-stack frame sums its callees' times
//! (`subtime`), and [`self_time`] subtracts them.
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use crate::graph::trace_print_graph_duration;
use crate::output::seq::TraceSeq;

/// The header lines (Linux with CONFIG_FUNCTION_GRAPH_TRACER).
pub const HEADER: &str = "  Function                               Hit    Time            Avg             s^2\n  --------                               ---    ----            ---             ---\n";

/// One function's statistics on one CPU (Linux: struct ftrace_profile).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProfileRec {
    /// Calls (Linux: counter).
    pub hits: u64,
    /// Sum of the durations, ns.
    pub time: u64,
    /// Sum of the squared durations, ns².
    pub time_squared: u64,
}

impl ProfileRec {
    /// Adds one call's duration (Linux: profile_graph_return; the sums
    /// wrap as Linux's unsigned long long do).
    pub fn add_time(&mut self, t: u64) {
        self.time = self.time.wrapping_add(t);
        self.time_squared = self.time_squared.wrapping_add(t.wrapping_mul(t));
    }

    /// Average duration, ns (Linux: div64_ul(time, counter)).
    pub fn avg(&self) -> u64 {
        self.time.checked_div(self.hits).unwrap_or(0)
    }
}

/// The time a returning call adds to its record (Linux:
/// profile_graph_return). `duration` is rettime − calltime; with
/// `graph_time` it is counted whole. Without, it is first added to the
/// caller frame's callees' time (`parent_subtime`, None at the bottom of
/// the shadow stack), and the call's own callees' time (`own_subtime`) is
/// taken out of it (0 if they add up to more, as Linux).
pub fn self_time(
    graph_time: bool,
    duration: u64,
    parent_subtime: Option<&mut u64>,
    own_subtime: u64,
) -> u64 {
    if graph_time {
        return duration;
    }
    if let Some(p) = parent_subtime {
        *p = p.wrapping_add(duration);
    }
    duration.saturating_sub(own_subtime)
}

/// The s² column (Linux's function_stat_show): the sample variance
/// `(n·Σx² − (Σx)²) / (n·(n−1))`, divided by 1000 only (ns² to µs² is
/// completed by the duration printer's own division by 1000); 0 for one
/// call. Computed in wrapping 64-bit arithmetic, as Linux does.
pub fn stddev(rec: &ProfileRec) -> u64 {
    let n = rec.hits;
    let denom = n.wrapping_mul(n.wrapping_sub(1)).wrapping_mul(1000);
    if n == 0 || denom == 0 {
        return 0;
    }
    n.wrapping_mul(rec.time_squared)
        .wrapping_sub(rec.time.wrapping_mul(rec.time))
        / denom
}

/// Appends one row: `"  %-30.30s  %10lu"` (the name cut to 30 bytes),
/// then Time, Avg and s², each after four spaces.
pub fn format_row(out: &mut String, name: &str, rec: &ProfileRec) {
    let mut cut = name.len().min(30);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let _ = write!(out, "  {:<30}  {:>10}", &name[..cut], rec.hits);
    let mut s = TraceSeq::new();
    s.push_str("    ");
    trace_print_graph_duration(rec.time, &mut s);
    s.push_str("    ");
    trace_print_graph_duration(rec.avg(), &mut s);
    s.push_str("    ");
    trace_print_graph_duration(stddev(rec), &mut s);
    out.push_str(s.as_str().unwrap_or(""));
    out.push('\n');
}

/// The whole file for one CPU: `recs[i]` is record `i`'s statistics and
/// `name(i)` its function. Rows with no hit are left out, and, with a
/// `tracing_thresh` (ns) set, rows whose average is below it; the others
/// are sorted by descending time (equal times in record order).
pub fn show(
    recs: impl Iterator<Item = ProfileRec>,
    name: impl Fn(usize) -> String,
    tracing_thresh: u64,
) -> String {
    let mut rows: Vec<(usize, ProfileRec)> = recs
        .enumerate()
        .filter(|(_, r)| r.hits != 0)
        .filter(|(_, r)| tracing_thresh == 0 || r.avg() >= tracing_thresh)
        .collect();
    rows.sort_by(|a, b| b.1.time.cmp(&a.1.time).then(a.0.cmp(&b.0)));
    let mut out = String::from(HEADER);
    for (i, r) in rows {
        format_row(&mut out, &name(i), &r);
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

    fn rec(hits: u64, durations: &[u64]) -> ProfileRec {
        let mut r = ProfileRec {
            hits,
            ..Default::default()
        };
        for &d in durations {
            r.add_time(d);
        }
        r
    }

    #[test]
    fn header_is_linux_s() {
        let s = show(
            [ProfileRec::default(); 3].into_iter(),
            |_| unreachable!(),
            0,
        );
        assert_eq!(
            s,
            "  Function                               Hit    Time            Avg             s^2\n  --------                               ---    ----            ---             ---\n"
        );
    }

    #[test]
    fn rows_sorted_by_time_and_formatted() {
        let names = ["alpha", "beta", "gamma", "delta"];
        let recs = [
            rec(3, &[1000, 2000, 3000]),
            ProfileRec::default(),
            rec(10, &[100; 10]),
            rec(1, &[225_412]),
        ];
        let s = show(recs.into_iter(), |i| names[i].into(), 0);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 5);
        // delta (225 us) first, then alpha (6 us), then gamma (1 us).
        assert_eq!(
            lines[2],
            format!(
                "  delta{}           1    225.412 us      225.412 us      0.000 us    ",
                " ".repeat(25)
            )
        );
        // alpha: avg 2 us; s^2 = (3*14e6 - 36e6) / (3*2*1000) = 1000 -> 1.000 us.
        assert_eq!(
            lines[3],
            format!(
                "  alpha{}           3    6.000 us        2.000 us        1.000 us    ",
                " ".repeat(25)
            )
        );
        assert_eq!(
            lines[4],
            format!(
                "  gamma{}          10    1.000 us        0.100 us        0.000 us    ",
                " ".repeat(25)
            )
        );
        // Each column starts where the header's title does.
        for (title, at) in [("Time", 48), ("Avg", 64), ("s^2", 80)] {
            assert_eq!(&lines[0][at..at + title.len()], title);
            assert!(lines[2].as_bytes()[at - 1] == b' ' && lines[2].as_bytes()[at] != b' ');
        }
    }

    #[test]
    fn stddev_is_the_sample_variance_in_us2() {
        // Durations 1, 2, 3, 4 us: mean 2.5 us, sample variance 1.6667 us^2.
        let r = rec(4, &[1000, 2000, 3000, 4000]);
        assert_eq!(stddev(&r), 1666);
        let mut s = TraceSeq::new();
        trace_print_graph_duration(stddev(&r), &mut s);
        assert_eq!(s.as_str(), Some("1.666 us    "));
        // One call, or none: 0.
        assert_eq!(stddev(&rec(1, &[5000])), 0);
        assert_eq!(stddev(&ProfileRec::default()), 0);
        // Equal durations: 0.
        assert_eq!(stddev(&rec(5, &[7000; 5])), 0);
    }

    #[test]
    fn avg_times_hits_is_about_the_time() {
        let r = rec(3, &[1000, 1001, 1003]);
        assert_eq!(r.avg(), 1001);
        assert!(r.time - r.avg() * r.hits < r.hits);
    }

    #[test]
    fn graph_time_off_subtracts_the_callees() {
        // parent [0, 100] calls a [10, 30] and b [40, 70].
        let mut parent_sub = 0u64;
        let mut grand = 0u64;
        // a and b return first: each adds itself to the parent's subtime.
        assert_eq!(self_time(false, 20, Some(&mut parent_sub), 0), 20);
        assert_eq!(self_time(false, 30, Some(&mut parent_sub), 0), 30);
        assert_eq!(parent_sub, 50);
        // The parent keeps 100 - 50, and adds its whole 100 to its caller.
        assert_eq!(self_time(false, 100, Some(&mut grand), parent_sub), 50);
        assert_eq!(grand, 100);
        // graph-time on: whole durations, nothing accumulated.
        assert_eq!(self_time(true, 100, Some(&mut grand), parent_sub), 100);
        assert_eq!(grand, 100);
        // Callees longer than the call (clock skew): 0, as Linux.
        assert_eq!(self_time(false, 10, None, 50), 0);
    }

    #[test]
    fn thresh_hides_rows_below_it() {
        let names = ["fast", "slow"];
        let recs = [rec(2, &[500, 700]), rec(1, &[5000])];
        let s = show(recs.into_iter(), |i| names[i].into(), 1000);
        assert!(s.contains("slow") && !s.contains("fast"));
    }

    #[test]
    fn long_names_cut_to_30() {
        let mut s = String::new();
        let long = "a_function_name_that_is_much_longer_than_thirty";
        format_row(&mut s, long, &rec(12345678901, &[]));
        assert!(s.starts_with(&format!("  {}  12345678901    0.000 us ", &long[..30])));
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
