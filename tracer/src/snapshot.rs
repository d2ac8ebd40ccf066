//! What a write to a `snapshot` file asks for (Linux: kernel/trace/trace.c,
//! `tracing_snapshot_write`). The number is parsed as
//! `kstrtoul_from_user(.., 10)`: `0` frees the spare buffer (EINVAL in a
//! `per_cpu/cpuN/snapshot` file), `1` allocates it if needed and swaps it
//! with the live buffer, any other number clears it; `-1` or text is
//! EINVAL, a number too large for 64 bits ERANGE. The kernel's
//! `trace/snapshot.rs` carries the commands out.

use crate::errno::Errno;
use crate::options::kstrtoul_from_user;

/// A `snapshot` write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotCmd {
    /// `0`: clear the spare buffer and shrink it to its minimum (Linux:
    /// `free_snapshot`).
    Free,
    /// `1`: allocate the spare buffer to the live buffer's size if needed,
    /// and swap the two (all CPUs, or the file's CPU).
    Swap,
    /// Any other number: clear the spare buffer, if allocated (all CPUs, or
    /// the file's CPU).
    Clear,
}

/// Parses a write to `snapshot` (`per_cpu` false) or to
/// `per_cpu/cpuN/snapshot` (`per_cpu` true).
pub fn parse_snapshot_write(input: &[u8], per_cpu: bool) -> Result<SnapshotCmd, Errno> {
    match kstrtoul_from_user(input, 10)? {
        0 if per_cpu => Err(Errno::EINVAL),
        0 => Ok(SnapshotCmd::Free),
        1 => Ok(SnapshotCmd::Swap),
        _ => Ok(SnapshotCmd::Clear),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_linux() {
        let p = |s: &str| parse_snapshot_write(s.as_bytes(), false);
        assert_eq!(p("0\n"), Ok(SnapshotCmd::Free));
        assert_eq!(p("1\n"), Ok(SnapshotCmd::Swap));
        assert_eq!(p("1"), Ok(SnapshotCmd::Swap));
        assert_eq!(p("+1\n"), Ok(SnapshotCmd::Swap));
        assert_eq!(p("01\n"), Ok(SnapshotCmd::Swap));
        assert_eq!(p("2\n"), Ok(SnapshotCmd::Clear));
        // Linux: "Doesn't have to be '2'".
        assert_eq!(p("3\n"), Ok(SnapshotCmd::Clear));
        assert_eq!(p("18446744073709551615\n"), Ok(SnapshotCmd::Clear));
    }

    #[test]
    fn per_cpu_zero_is_invalid() {
        let p = |s: &str| parse_snapshot_write(s.as_bytes(), true);
        assert_eq!(p("0\n"), Err(Errno::EINVAL));
        assert_eq!(p("1\n"), Ok(SnapshotCmd::Swap));
        assert_eq!(p("2\n"), Ok(SnapshotCmd::Clear));
    }

    #[test]
    fn junk_is_rejected() {
        for bad in [
            "-1\n", "", "\n", "x\n", "1x\n", " 1\n", "1\n\n", "0x1\n", "1 2\n",
        ] {
            for per_cpu in [false, true] {
                assert_eq!(
                    parse_snapshot_write(bad.as_bytes(), per_cpu),
                    Err(Errno::EINVAL),
                    "{bad:?}"
                );
            }
        }
        assert_eq!(
            parse_snapshot_write(b"18446744073709551616\n", false),
            Err(Errno::ERANGE)
        );
    }
}
