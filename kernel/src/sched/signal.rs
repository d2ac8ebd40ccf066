//! Signals, reduced to the one this kernel has: the SIGINT that Ctrl-C on
//! the console sends to the foreground command (Linux: kernel/signal.c,
//! `signal_pending`, and drivers/tty/n_tty.c's `isig`).
//!
//! One rule: a Ctrl-C is pending from the moment it is typed until the shell
//! has handled it ([`clear_signal`], after the command it interrupted or at
//! the prompt). Everything a command does (blocking reads, workloads, long
//! loops) polls [`signal_pending`]; tasks asleep in
//! `wait_event_interruptible` are woken so that they see it.
use core::sync::atomic::{AtomicBool, Ordering};

static SIGINT_PENDING: AtomicBool = AtomicBool::new(false);

/// True if Ctrl-C was typed and the shell has not handled it yet (Linux:
/// `signal_pending(current)`).
#[inline]
pub fn signal_pending() -> bool {
    SIGINT_PENDING.load(Ordering::SeqCst)
}

/// Forgets a handled Ctrl-C (the shell calls this around each command).
pub fn clear_signal() {
    SIGINT_PENDING.store(false, Ordering::SeqCst);
}

/// Marks SIGINT pending. `sched::send_sigint` also wakes the interruptible
/// sleepers.
pub(super) fn raise_sigint() {
    SIGINT_PENDING.store(true, Ordering::SeqCst);
}
