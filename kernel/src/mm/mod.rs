//! Memory management: the kernel heap (frames and page tables are in
//! `arch::paging`).
pub mod heap;
