//! Static keys (Linux: kernel/jump_label.c, include/linux/jump_label.h).
//!
//! A static key is a boolean read at a site that costs nothing while it is
//! false: `static_branch_unlikely!(KEY)` is meant to compile to a 5-byte NOP
//! plus a `__jump_table` entry, and enabling the key patches every site of the
//! key into a `jmp` to the out-of-line code.
//!
//! THIS IS THE INTERFACE ONLY: for now the macro reads the key's counter (a
//! load and a branch). The arch side (asm goto, `__jump_table`, patching
//! through `text_poke_bp_batch`) replaces the macro's body and the bodies of
//! `static_key_enable`/`static_key_disable` without changing their
//! signatures.
use core::sync::atomic::{AtomicI32, Ordering};

use crate::fs::Errno;

/// A static key (Linux: `struct static_key`, default false). Must live in a
/// `static`: its sites refer to it by address.
pub struct StaticKey {
    enabled: AtomicI32,
}

impl Default for StaticKey {
    fn default() -> Self {
        Self::new()
    }
}

impl StaticKey {
    /// A key that starts false (Linux: `STATIC_KEY_FALSE_INIT`).
    pub const fn new() -> StaticKey {
        StaticKey {
            enabled: AtomicI32::new(0),
        }
    }

    /// Whether the key is on (Linux: `static_key_enabled`), read from its
    /// counter, not from the code.
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire) > 0
    }
}

/// Turns the key on, patching all its sites (Linux: `static_key_enable`).
/// Idempotent.
pub fn static_key_enable(key: &'static StaticKey) -> Result<(), Errno> {
    key.enabled.store(1, Ordering::Release);
    Ok(())
}

/// Turns the key off, patching all its sites back to NOPs (Linux:
/// `static_key_disable`). Idempotent.
pub fn static_key_disable(key: &'static StaticKey) -> Result<(), Errno> {
    key.enabled.store(0, Ordering::Release);
    Ok(())
}

/// `if static_branch_unlikely!(KEY) { .. }`: true while `KEY` (the path of a
/// `static StaticKey`) is enabled (Linux: `static_branch_unlikely`).
#[macro_export]
macro_rules! static_branch_unlikely {
    ($key:path) => {
        $key.is_enabled()
    };
}
