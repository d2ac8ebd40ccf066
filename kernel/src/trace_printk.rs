//! `trace_printk!`: printf-style debugging into the trace buffer (Linux:
//! `trace_printk` in include/linux/kernel.h, kernel/trace/trace_printk.c).
//!
//! Any kernel code can write `trace_printk!("x={}\n", x)`: the message
//! becomes a `print` event (TRACE_PRINT, `struct print_entry`) whose `ip`
//! is an address inside the caller, so `trace` shows it as
//! `<task>-<pid> [cpu] flags ts: caller_function: x=42`. As in Linux, no
//! `'\n'` is added: a message without one runs into the next line of
//! `trace` (only `trace_marker` adds the missing newline).
//!
//! This module is neutral ground: the scheduler, the file system or the
//! shell call the macro without importing tracing. Tracing registers the
//! writer at boot ([`register_trace_printk`]) and switches the static key
//! [`TRACE_PRINTK_KEY`] with the `trace_printk` option (Linux:
//! `trace_printk_control`). The macro's site is the key's branch: while the
//! key is off the arguments are not even evaluated. While it is on, the
//! writer first checks that the ring buffer would record (`tracing_on`)
//! and only then formats the message (Linux formats before it reserves).
//!
//! Linux stores a constant-format `trace_printk` as a `bprint` event (the
//! format's address and the binary arguments, formatted when read);
//! Rust's `format_args!` has no binary form to store, so every message is
//! formatted when it is recorded, which is Linux's `print` path
//! (`__trace_printk`, used there for non-constant formats).
use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering};

use spin::{Mutex, Once};

use crate::fs::Errno;
use crate::jump_label::{static_key_disable, static_key_enable, StaticKey};

/// On while a writer is registered and the `trace_printk` option is set.
pub static TRACE_PRINTK_KEY: StaticKey = StaticKey::new();

/// What tracing registered: records one message (its `ip` and text).
pub type TracePrintkWriter = fn(ip: u64, args: fmt::Arguments<'_>);

static WRITER: Once<TracePrintkWriter> = Once::new();
/// The `trace_printk` option's state (Linux: `trace_printk_enabled`),
/// on at boot as in Linux.
static CONTROL: AtomicBool = AtomicBool::new(true);
/// Serialises key changes (Linux: `trace_types_lock` around the option).
static KEY_LOCK: Mutex<()> = Mutex::new(());

/// `trace_printk!(fmt, args...)`: records a formatted message in the trace
/// buffer, as Linux's `trace_printk`. Nothing is evaluated or formatted
/// unless tracing would record it.
#[macro_export]
macro_rules! trace_printk {
    ($($arg:tt)+) => {
        if $crate::trace_printk::trace_printk_enabled() {
            $crate::trace_printk::__trace_printk(
                $crate::arch::this_ip(),
                ::core::format_args!($($arg)+),
            );
        }
    };
}

/// The macro's branch: the static key.
#[inline(always)]
pub fn trace_printk_enabled() -> bool {
    crate::static_branch_unlikely!(TRACE_PRINTK_KEY)
}

/// Out of line, behind the key: hands the message to tracing's writer
/// (Linux: `__trace_printk`). `ip` is the caller's address.
#[cold]
#[inline(never)]
pub fn __trace_printk(ip: u64, args: fmt::Arguments<'_>) {
    if let Some(write) = WRITER.get() {
        write(ip, args);
    }
}

/// Installs tracing's writer (once) and turns the key on if the option is
/// set. EBUSY if a writer is installed already.
pub fn register_trace_printk(writer: TracePrintkWriter) -> Result<(), Errno> {
    let mut installed = false;
    WRITER.call_once(|| {
        installed = true;
        writer
    });
    if !installed {
        return Err(Errno::EBUSY);
    }
    update_key()
}

/// The `trace_printk` option changed (Linux: `trace_printk_control`): off,
/// `trace_printk!` sites skip everything again.
pub fn trace_printk_control(enabled: bool) -> Result<(), Errno> {
    CONTROL.store(enabled, Ordering::SeqCst);
    update_key()
}

fn update_key() -> Result<(), Errno> {
    let _guard = KEY_LOCK.lock();
    if WRITER.get().is_some() && CONTROL.load(Ordering::SeqCst) {
        static_key_enable(&TRACE_PRINTK_KEY)
    } else {
        static_key_disable(&TRACE_PRINTK_KEY)
    }
}
