//! The function the kernel's `bench` command calls as "uninstrumented".
//!
//! Only the `kernel` crate is compiled with the ftrace instrumentation
//! (`-Z instrument-mcount` or `-Z patchable-function-entry=5`, see
//! boot/rustc-wrapper.sh); this crate is not. So [`bench_leaf_uninstrumented`]
//! is the plain machine code of [`bench_leaf_fn!`]'s body, and the kernel
//! expands the same macro into a traced twin: comparing the two gives the
//! cost of a NOPed call site (kernel/src/trace/bench.rs).

/// Defines `pub fn $name(a: u64, b: u64) -> u64` with the benchmark body.
/// Its arguments are used after the function's entry, so in the mcount
/// build they must survive the `call mcount` (part of what its cost measures).
#[macro_export]
macro_rules! bench_leaf_fn {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[inline(never)]
        pub fn $name(a: u64, b: u64) -> u64 {
            a.wrapping_mul(b).rotate_left(13) ^ a ^ (b >> 3)
        }
    };
}

bench_leaf_fn!(
    /// The benchmark body, compiled without instrumentation.
    bench_leaf_uninstrumented
);
