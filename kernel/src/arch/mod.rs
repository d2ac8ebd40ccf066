//! Architecture-specific code behind one module, as in Hermit's `arch/mod.rs`:
//! the rest of the kernel calls `crate::arch::…` and never names x86_64 directly.
pub mod x86_64;
pub use self::x86_64::*;
