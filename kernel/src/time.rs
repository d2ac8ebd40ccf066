//! Kernel time: nanoseconds since boot from the TSC (see arch::tsc).

/// Nanoseconds since boot.
#[inline(always)]
pub fn now_ns() -> u64 {
    crate::arch::tsc::now_ns()
}
