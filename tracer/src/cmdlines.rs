//! The pid -> comm table that names tasks in the output after they exit
//! (Linux: kernel/trace/trace.c's `savedcmd`, `trace_save_cmdline`,
//! `tracing_resize_saved_cmdlines`).
//!
//! It keeps at most `size` pairs (`saved_cmdlines_size`, 128 by default).
//! Saving a pid that is not in a full table first evicts the lowest pid:
//! pids only grow here, so that is the task seen longest ago. Resizing (the
//! kernel's `set_saved_cmdlines_size`) starts a new, empty table, as Linux's does.
use alloc::collections::BTreeMap;
use alloc::string::String;

use crate::errno::Errno;

/// Linux's default `saved_cmdlines_size`.
pub const SAVED_CMDLINES_SIZE: usize = 128;
/// Linux's `PID_MAX_DEFAULT`, the largest `saved_cmdlines_size`.
pub const PID_MAX_DEFAULT: usize = 0x8000;

/// EINVAL unless `n` is a valid `saved_cmdlines_size` (1 to
/// [`PID_MAX_DEFAULT`]).
pub fn check_size(n: usize) -> Result<(), Errno> {
    if n == 0 || n > PID_MAX_DEFAULT {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Saves `comm` for `pid` in `map`, which keeps at most `size` pairs:
/// a new pid in a full map first evicts the lowest pid (the table's rule,
/// for a caller that keeps its own map).
pub fn save_cmdline(map: &mut BTreeMap<u32, String>, size: usize, pid: u32, comm: &str) {
    if map.len() >= size && !map.contains_key(&pid) {
        if let Some(&oldest) = map.keys().next() {
            map.remove(&oldest);
        }
    }
    map.insert(pid, String::from(comm));
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn pids(m: &BTreeMap<u32, String>) -> Vec<u32> {
        m.keys().copied().collect()
    }

    #[test]
    fn keeps_names_up_to_the_size() {
        let mut m = BTreeMap::new();
        for pid in 1..=128 {
            save_cmdline(&mut m, SAVED_CMDLINES_SIZE, pid, "w");
        }
        assert_eq!(m.len(), 128);
        assert_eq!(m.get(&1).map(String::as_str), Some("w"));
    }

    #[test]
    fn a_new_pid_in_a_full_table_evicts_the_lowest() {
        let mut m = BTreeMap::new();
        for (pid, comm) in [(5, "a"), (7, "b"), (9, "c"), (11, "d")] {
            save_cmdline(&mut m, 3, pid, comm);
        }
        assert_eq!(pids(&m), [7, 9, 11]);
        assert_eq!(m.get(&5), None);
        assert_eq!(m.get(&11).map(String::as_str), Some("d"));
    }

    #[test]
    fn saving_a_known_pid_renames_it_and_evicts_nothing() {
        let mut m = BTreeMap::new();
        save_cmdline(&mut m, 2, 1, "sh");
        save_cmdline(&mut m, 2, 2, "work");
        save_cmdline(&mut m, 2, 1, "sh2");
        assert_eq!(pids(&m), [1, 2]);
        assert_eq!(m.get(&1).map(String::as_str), Some("sh2"));
    }

    #[test]
    fn sizes_out_of_range_are_einval() {
        assert_eq!(check_size(0), Err(Errno::EINVAL));
        assert_eq!(check_size(PID_MAX_DEFAULT + 1), Err(Errno::EINVAL));
        assert_eq!(check_size(1), Ok(()));
        assert_eq!(check_size(PID_MAX_DEFAULT), Ok(()));
    }
}
