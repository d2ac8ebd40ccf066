//! Host-side build tools for the kernel.
//!
//! - [`recordmcount`]: finds the ftrace call sites in the compiled kernel objects
//!   and records them in a `__mcount_loc` table (Linux: `scripts/recordmcount.c`).
//! - [`kallsyms`]: extracts the function symbols of the linked kernel into the
//!   `.kallsyms` blob of [`tracer::kallsyms`] (Linux: `scripts/kallsyms.c`).
//! - [`sorttable`]: sorts the `__mcount_loc` table of the linked kernel in place
//!   (Linux: `scripts/sorttable.c`, `BUILDTIME_MCOUNT_SORT`).
//! - [`names`]: the one-token function names both of them use; `linked`: the
//!   checks kallsyms and sorttable make when they open the linked kernel.
//! - [`event_select`]: which events `ktrace record -e` enables.
//! - [`tracedat`]: `ktrace`'s trace.dat writer and reader; [`session`]: the
//!   kernel's console under QEMU, driven by `ktrace` and the QEMU tests;
//!   [`progress`]: `ktrace`'s progress bars while the pages arrive.
#![forbid(unsafe_code)]

pub mod error;
pub mod event_select;
pub mod kallsyms;
mod linked;
pub mod names;
pub mod progress;
pub mod recordmcount;
pub mod session;
pub mod sorttable;
pub mod tracedat;

pub use error::{Error, Result};
