//! `tracepoint_stress`: probes registered and unregistered on one CPU while
//! the others hit the tracepoint as fast as they can (Linux has no such
//! self-test; it relies on RCU's own torture tests).
//!
//! Each round registers a probe whose data is a fresh heap object marked
//! live, unregisters it, then marks the object dead: a probe call that saw
//! the object after `unregister` returned (the quiescence wait in
//! `tracepoint.rs` failed) would read the dead mark and count an error.
//! A second probe is registered on even rounds only, so the probe array is
//! replaced while the key stays on (two probes to one and back: the
//! published function goes from the iterator to the probe and back) and the
//! key goes off and on (one probe to none) in other rounds. The arrays the
//! tracepoint replaces are freed to the heap and reused: a CPU still
//! walking one would call garbage.
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::jump_label::StaticKey;
use crate::tracepoint::Tracepoint;

const LIVE: u64 = 0x11fe_11fe_11fe_11fe;
const DEAD: u64 = 0xdead_dead_dead_dead;

static STRESS_KEY: StaticKey = StaticKey::new();
static STRESS_TP: Tracepoint<fn(*mut (), u64)> =
    Tracepoint::new("tracepoint_stress", &STRESS_KEY, stress_iter);

static STOP: AtomicBool = AtomicBool::new(false);
static HITS: AtomicU64 = AtomicU64::new(0);
static ERRORS: AtomicU64 = AtomicU64::new(0);

/// The call site.
#[inline(always)]
fn trace_stress(v: u64) {
    if crate::static_branch_unlikely!(STRESS_KEY) {
        STRESS_TP.do_trace(|func, data| func(data, v));
    }
}

/// The tracepoint's iterator (as `events`' `__traceiter_NAME`): the
/// published function while both probes are registered.
fn stress_iter(data: *mut (), v: u64) {
    // SAFETY: called by `do_trace` with the array as data.
    for f in unsafe { Tracepoint::<fn(*mut (), u64)>::iter_list(data) } {
        (f.func)(f.data as *mut (), v);
    }
}

struct ProbeData {
    mark: AtomicU64,
}

fn probe(data: *mut (), _v: u64) {
    // SAFETY: `data` is a ProbeData that stays allocated until the end of
    // the run (only marked dead after its unregister).
    let d = unsafe { &*(data as *const ProbeData) };
    if d.mark.load(Ordering::Acquire) != LIVE {
        ERRORS.fetch_add(1, Ordering::Relaxed);
    }
    HITS.fetch_add(1, Ordering::Relaxed);
}

fn probe2(data: *mut (), v: u64) {
    probe(data, v);
}

/// Runs `rounds` register/unregister rounds against hitters on every other
/// CPU; the text the shell command prints.
pub fn tracepoint_stress(rounds: u64) -> String {
    let cpus = crate::arch::nr_cpus();
    if cpus < 2 {
        return String::from("tracepoint_stress: needs 2 CPUs\n");
    }
    STOP.store(false, Ordering::SeqCst);
    HITS.store(0, Ordering::SeqCst);
    ERRORS.store(0, Ordering::SeqCst);
    let me = crate::arch::cpu_id();
    let hitters: Vec<_> = (0..cpus)
        .filter(|&c| c != me)
        .map(|c| {
            crate::sched::spawn_on(c, "tp_stress", || {
                let mut v = 0u64;
                while !STOP.load(Ordering::Relaxed) {
                    trace_stress(v);
                    v += 1;
                    // Some work outside the tracepoint, as real callers
                    // have: a CPU that is always inside a tracepoint call
                    // (preemption off) stretches every grace period.
                    for _ in 0..64 {
                        core::hint::spin_loop();
                    }
                }
            })
        })
        .collect();
    let mut dead = Vec::new();
    let mut failed = None;
    for round in 0..rounds {
        let d = Box::into_raw(Box::new(ProbeData {
            mark: AtomicU64::new(LIVE),
        }));
        let d2 = Box::into_raw(Box::new(ProbeData {
            mark: AtomicU64::new(LIVE),
        }));
        let two = round % 2 == 0;
        let r = STRESS_TP
            .register(probe, d as *mut ())
            .and_then(|_| {
                if two {
                    STRESS_TP.register(probe2, d2 as *mut ())
                } else {
                    Ok(())
                }
            })
            .and_then(|_| STRESS_TP.unregister(probe, d as *mut ()))
            .and_then(|_| {
                if two {
                    STRESS_TP.unregister(probe2, d2 as *mut ())
                } else {
                    Ok(())
                }
            });
        // Unregistered: no probe may see them any more.
        // SAFETY: both came from Box::into_raw above and are freed below.
        unsafe {
            (*d).mark.store(DEAD, Ordering::Release);
            (*d2).mark.store(DEAD, Ordering::Release);
        }
        dead.push(d);
        dead.push(d2);
        if let Err(e) = r {
            failed = Some(e);
            break;
        }
    }
    STOP.store(true, Ordering::SeqCst);
    for h in hitters {
        h.join();
    }
    for d in dead {
        // SAFETY: from Box::into_raw; the hitters have exited.
        drop(unsafe { Box::from_raw(d) });
    }
    let key = if STRESS_KEY.is_enabled() { "on" } else { "off" };
    let mut s = format!(
        "tracepoint_stress: {} rounds on {} cpus, {} hits, {} errors, key {}\n",
        rounds,
        cpus,
        HITS.load(Ordering::SeqCst),
        ERRORS.load(Ordering::SeqCst),
        key
    );
    if let Some(e) = failed {
        s.push_str(&format!("tracepoint_stress: register failed: {e:?}\n"));
    }
    s
}
