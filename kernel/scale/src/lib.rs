//! The generated functions of `qemu.sh --scale N` (see build.rs): a module
//! of N small traceable functions, so that the kernel has as many ftrace
//! call sites as Linux's (35,609 on Debian 12's 6.1) and the per-site costs
//! of ftrace (boot NOP conversion, enabling every site, glob filters,
//! `available_filter_functions`, symbol look-ups) can be measured at that
//! size. Linux has no such module; its call sites are the kernel's own.
//!
//! boot/build.sh builds this crate with the kernel's instrumentation flags
//! (boot/rustc-wrapper.sh) only for a `--scale` build: the default kernel
//! does not depend on it.
#![no_std]

include!(concat!(env!("OUT_DIR"), "/scale.rs"));

/// What `FUNCS[i](x)` returns, computed without the call (the workload
/// checks every call against it).
pub fn expected(i: usize, x: u64) -> u64 {
    (x ^ i as u64).wrapping_mul(2 * i as u64 + 1)
}
