//! The pid -> comm table that names tasks in the output after they exit
//! (Linux: kernel/trace/trace.c's `savedcmd`, `trace_save_cmdline`,
//! `tracing_resize_saved_cmdlines`).
//!
//! It keeps at most `size` pairs (`saved_cmdlines_size`, 128 by default).
//! Saving a pid that is not in a full table first evicts the lowest pid:
//! pids only grow here, so that is the task seen longest ago. Resizing
//! starts a new, empty table, as Linux's does.
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

/// The saved pid -> comm pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedCmdlines {
    map: BTreeMap<u32, String>,
    /// At most this many pairs (Linux: `savedcmd->cmdline_num`).
    size: usize,
}

impl Default for SavedCmdlines {
    fn default() -> Self {
        Self::new()
    }
}

impl SavedCmdlines {
    /// An empty table of the default size.
    pub const fn new() -> SavedCmdlines {
        SavedCmdlines {
            map: BTreeMap::new(),
            size: SAVED_CMDLINES_SIZE,
        }
    }

    /// How many pairs are kept at most.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Sets the size and empties the table. 0 or more than
    /// [`PID_MAX_DEFAULT`] is EINVAL, and nothing changes.
    pub fn resize(&mut self, n: usize) -> Result<(), Errno> {
        check_size(n)?;
        self.size = n;
        self.map.clear();
        Ok(())
    }

    /// Remembers `comm` for `pid`, evicting the lowest pid if the table is
    /// full and `pid` is new.
    pub fn save(&mut self, pid: u32, comm: &str) {
        save_cmdline(&mut self.map, self.size, pid, comm);
    }

    /// The name saved for `pid`.
    pub fn get(&self, pid: u32) -> Option<&str> {
        self.map.get(&pid).map(String::as_str)
    }

    /// The pairs, by pid.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &str)> {
        self.map.iter().map(|(&p, c)| (p, c.as_str()))
    }

    /// How many pairs are saved.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True if nothing is saved.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn pids(t: &SavedCmdlines) -> Vec<u32> {
        t.iter().map(|(p, _)| p).collect()
    }

    #[test]
    fn keeps_names_up_to_the_size() {
        let mut t = SavedCmdlines::new();
        assert_eq!(t.size(), 128);
        for pid in 1..=128 {
            t.save(pid, "w");
        }
        assert_eq!(t.len(), 128);
        assert_eq!(t.get(1), Some("w"));
    }

    #[test]
    fn a_new_pid_in_a_full_table_evicts_the_lowest() {
        let mut t = SavedCmdlines::new();
        t.resize(3).unwrap();
        t.save(5, "a");
        t.save(7, "b");
        t.save(9, "c");
        t.save(11, "d");
        assert_eq!(pids(&t), [7, 9, 11]);
        assert_eq!(t.get(5), None);
        assert_eq!(t.get(11), Some("d"));
    }

    #[test]
    fn saving_a_known_pid_renames_it_and_evicts_nothing() {
        let mut t = SavedCmdlines::new();
        t.resize(2).unwrap();
        t.save(1, "sh");
        t.save(2, "work");
        t.save(1, "sh2");
        assert_eq!(pids(&t), [1, 2]);
        assert_eq!(t.get(1), Some("sh2"));
    }

    #[test]
    fn resize_empties_the_table_and_bad_sizes_change_nothing() {
        let mut t = SavedCmdlines::new();
        t.save(1, "sh");
        assert_eq!(t.resize(0), Err(Errno::EINVAL));
        assert_eq!(t.resize(PID_MAX_DEFAULT + 1), Err(Errno::EINVAL));
        assert_eq!((t.size(), t.get(1)), (128, Some("sh")));
        t.resize(PID_MAX_DEFAULT).unwrap();
        assert_eq!(t.size(), PID_MAX_DEFAULT);
        assert!(t.is_empty());
    }
}
