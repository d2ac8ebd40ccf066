//! The probe list of a tracepoint (Linux: kernel/tracepoint.c, `func_add`,
//! `func_remove`).
//!
//! A tracepoint holds a pointer to an immutable array of probes, each a
//! (function, data) pair with a priority. Registering or unregistering never
//! edits the array a CPU may be walking: it builds a new array
//! ([`func_add`], [`func_remove`]), publishes it with one pointer store, and
//! frees the old one only after every CPU has left any tracepoint call it
//! was in when the new pointer became visible.
//!
//! How the kernel waits for that (an RCU-sched grace period: every CPU
//! seen with preemption on) is in kernel/src/tracepoint.rs.

use alloc::vec::Vec;

use crate::errno::Errno;

/// Priority of a probe registered without one (Linux:
/// `TRACEPOINT_DEFAULT_PRIO`). Higher runs first.
pub const TRACEPOINT_DEFAULT_PRIO: i32 = 10;

/// One probe of a tracepoint (Linux: `struct tracepoint_func`). `F` is the
/// probe's function type; `data` is passed to it as its first argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracepointFunc<F> {
    pub func: F,
    pub data: usize,
    pub prio: i32,
}

/// The list with `new` added (Linux: `func_add`): before the first probe of
/// lower priority, so equal priorities keep their registration order.
/// EEXIST if the same (function, data) pair is already there; `old` is
/// never changed.
pub fn func_add<F: Copy + PartialEq>(
    old: &[TracepointFunc<F>],
    new: TracepointFunc<F>,
) -> Result<Vec<TracepointFunc<F>>, Errno> {
    if old.iter().any(|f| f.func == new.func && f.data == new.data) {
        return Err(Errno::EEXIST);
    }
    let at = old
        .iter()
        .position(|f| f.prio < new.prio)
        .unwrap_or(old.len());
    let mut list = Vec::with_capacity(old.len() + 1);
    list.extend_from_slice(&old[..at]);
    list.push(new);
    list.extend_from_slice(&old[at..]);
    Ok(list)
}

/// The list without the probe (`func`, `data`) (Linux: `func_remove`).
/// ENOENT if it is not there; `old` is never changed.
pub fn func_remove<F: Copy + PartialEq>(
    old: &[TracepointFunc<F>],
    func: F,
    data: usize,
) -> Result<Vec<TracepointFunc<F>>, Errno> {
    let at = old
        .iter()
        .position(|f| f.func == func && f.data == data)
        .ok_or(Errno::ENOENT)?;
    let mut list = Vec::with_capacity(old.len() - 1);
    list.extend_from_slice(&old[..at]);
    list.extend_from_slice(&old[at + 1..]);
    Ok(list)
}

/// The list with the probe (`func`, `data`) replaced by `new`, in its
/// place (Linux has no such call: it registers the new probe, then
/// unregisters the old one, and for a moment both run). Publishing this
/// list switches every CPU from the old probe to the new one at once: a
/// call runs one or the other, never both, never neither. ENOENT if the
/// old probe is not there, EEXIST if `new` is already another entry;
/// `old` is never changed.
pub fn func_replace<F: Copy + PartialEq>(
    old: &[TracepointFunc<F>],
    func: F,
    data: usize,
    new: TracepointFunc<F>,
) -> Result<Vec<TracepointFunc<F>>, Errno> {
    let at = old
        .iter()
        .position(|f| f.func == func && f.data == data)
        .ok_or(Errno::ENOENT)?;
    if old
        .iter()
        .enumerate()
        .any(|(i, f)| i != at && f.func == new.func && f.data == new.data)
    {
        return Err(Errno::EEXIST);
    }
    let mut list = old.to_vec();
    list[at] = TracepointFunc {
        prio: old[at].prio,
        ..new
    };
    Ok(list)
}

/// What a change of the probe list does to the tracepoint's static key
/// (Linux turns the key on at the first probe and off after the last).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyChange {
    /// 0 -> 1 probes: publish the list, then enable the key.
    Enable,
    /// 1 -> 0 probes: disable the key, then publish the empty list.
    Disable,
    /// Any other count: the key stays as it is.
    Keep,
}

/// The key change for a list going from `old` to `new` probes.
pub fn key_change(old: usize, new: usize) -> KeyChange {
    match (old, new) {
        (0, n) if n > 0 => KeyChange::Enable,
        (o, 0) if o > 0 => KeyChange::Disable,
        _ => KeyChange::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn p(func: u32, data: usize, prio: i32) -> TracepointFunc<u32> {
        TracepointFunc { func, data, prio }
    }

    #[test]
    fn add_keeps_priority_order_and_rejects_duplicates() {
        let l = func_add(&[], p(1, 0, 10)).unwrap();
        let l = func_add(&l, p(2, 0, 10)).unwrap();
        // Higher priority runs first; equal keeps insertion order.
        let l = func_add(&l, p(3, 0, i32::MAX)).unwrap();
        let l = func_add(&l, p(4, 0, 0)).unwrap();
        let l = func_add(&l, p(5, 0, 10)).unwrap();
        let order: Vec<u32> = l.iter().map(|f| f.func).collect();
        assert_eq!(order, vec![3, 1, 2, 5, 4]);
        // The same function with other data is another probe.
        let l2 = func_add(&l, p(1, 7, 10)).unwrap();
        assert_eq!(l2.len(), 6);
        assert_eq!(func_add(&l2, p(1, 7, 3)), Err(Errno::EEXIST));
        assert_eq!(func_add(&l2, p(1, 0, 10)), Err(Errno::EEXIST));
    }

    #[test]
    fn remove_takes_exactly_the_pair() {
        let l = vec![p(1, 0, 10), p(1, 5, 10), p(2, 0, 10)];
        let r = func_remove(&l, 1, 5).unwrap();
        assert_eq!(r, vec![p(1, 0, 10), p(2, 0, 10)]);
        assert_eq!(func_remove(&r, 1, 5), Err(Errno::ENOENT));
        assert_eq!(func_remove(&r, 3, 0), Err(Errno::ENOENT));
        let r = func_remove(&r, 1, 0).unwrap();
        let r = func_remove(&r, 2, 0).unwrap();
        assert!(r.is_empty());
        assert_eq!(func_remove(&r, 2, 0), Err(Errno::ENOENT));
    }

    #[test]
    fn replace_keeps_the_place_and_priority() {
        let l = vec![p(1, 0, 20), p(2, 0, 10), p(3, 0, 0)];
        let r = func_replace(&l, 2, 0, p(7, 9, 99)).unwrap();
        assert_eq!(r, vec![p(1, 0, 20), p(7, 9, 10), p(3, 0, 0)]);
        // The same probe again (a no-op) is allowed; another entry is not.
        assert_eq!(func_replace(&r, 7, 9, p(7, 9, 10)).unwrap(), r);
        assert_eq!(func_replace(&r, 7, 9, p(1, 0, 10)), Err(Errno::EEXIST));
        assert_eq!(func_replace(&r, 2, 0, p(5, 0, 10)), Err(Errno::ENOENT));
        assert_eq!(func_replace(&[], 2, 0, p(5, 0, 10)), Err(Errno::ENOENT));
        assert_eq!(key_change(r.len(), r.len()), KeyChange::Keep);
    }

    #[test]
    fn key_follows_zero_and_one() {
        assert_eq!(key_change(0, 1), KeyChange::Enable);
        assert_eq!(key_change(1, 2), KeyChange::Keep);
        assert_eq!(key_change(2, 1), KeyChange::Keep);
        assert_eq!(key_change(1, 0), KeyChange::Disable);
        assert_eq!(key_change(0, 0), KeyChange::Keep);
    }
}
