//! What runs when the kernel dies (Linux: kernel/panic.c's
//! `panic_notifier_list` and kernel/notifier.c's `die_chain`).
//!
//! The panic handler and the fatal-exception path (`arch::traps::die`)
//! print their report and then call [`notify`], which runs every function
//! registered on [`PANIC_NOTIFIER`], before QEMU is told to exit. Tracing
//! registers its buffer dump here (`ftrace_dump_on_oops`), so neither path
//! imports `trace`.

use core::sync::atomic::{AtomicBool, Ordering};

use crate::hook::Hook;

/// Functions run once when the kernel panics or takes a fatal exception,
/// with interrupts off and the console unlocked.
pub static PANIC_NOTIFIER: Hook<fn()> = Hook::new();

static NOTIFIED: AtomicBool = AtomicBool::new(false);

/// Runs the registered functions, once: a fault inside one of them (or a
/// second CPU dying meanwhile) does not run them again.
pub fn notify() {
    if NOTIFIED.swap(true, Ordering::SeqCst) {
        return;
    }
    for f in PANIC_NOTIFIER.probes() {
        f();
    }
}
