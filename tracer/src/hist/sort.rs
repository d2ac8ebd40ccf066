//! Linux's `sort()` (lib/sort.c): a bottom-up heapsort. It is not stable,
//! so the order of equal entries depends on the algorithm; using the same
//! one as Linux (on the same slot order, see `tracing_map`) prints ties in
//! the same order as Linux does.

use core::cmp::Ordering;

/// Sorts `v` with `cmp` exactly as Linux's `sort(base, num, size, cmp, NULL)`.
pub fn sort<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    let num = v.len();
    let mut n = num;
    let mut a = num / 2;
    if a == 0 {
        return;
    }
    let parent = |i: usize| (i - 1) / 2;
    loop {
        if a > 0 {
            // Building the heap: sift down --a.
            a -= 1;
        } else {
            // Sorting: move the root to --n.
            n -= 1;
            if n == 0 {
                break;
            }
            v.swap(0, n);
        }
        // Find the sift-down path to a leaf, one compare per level.
        let mut b = a;
        let (mut c, mut d);
        loop {
            c = 2 * b + 1;
            d = c + 1;
            if d >= n {
                break;
            }
            b = if cmp(&v[c], &v[d]) != Ordering::Less {
                c
            } else {
                d
            };
        }
        if d == n {
            // The last leaf has no sibling.
            b = c;
        }
        // Back up to where the element at `a` belongs.
        while b != a && cmp(&v[a], &v[b]) != Ordering::Less {
            b = parent(b);
        }
        let c = b;
        while b != a {
            b = parent(b);
            v.swap(b, c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn sorts_like_std() {
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for len in 0..60 {
            let mut v: Vec<u64> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % 10
                })
                .collect();
            let mut w = v.clone();
            sort(&mut v, |a, b| a.cmp(b));
            w.sort();
            assert_eq!(v, w);
        }
    }
}
