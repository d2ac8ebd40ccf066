//! Self-tests of dynamic ftrace run in the booted kernel
//! (Linux: kernel/trace/trace_selftest.c, trace_selftest_dynamic.c).
//!
//! - [`ftrace_check`]: reads every recorded call site back and compares it
//!   with its record: the NOP, or `call ftrace_caller` when enabled.
//! - [`ftrace_stress`]: one pinned worker per CPU calls a traced target
//!   function in a tight loop while this CPU switches tracing on and off
//!   thousands of times, over all sites and over changing subsets, through
//!   the real [`register_ftrace_function`] / [`ftrace_update`] paths. A
//!   counting [`FtraceOps`] on the target proves that every call made while
//!   the target's site was enabled was seen exactly once (see below).
//! - [`ftrace_int3_test`]: holds the patcher just after it has written the
//!   int3 (step 1 of the int3 protocol) until another CPU has called the
//!   target, in both directions, and checks the emulation.
//!
//! The function these tests trace lives outside `kernel::trace` (which
//! kernel/notrace.list excludes), in `shell::commands::ftrace_targets`, as
//! Linux builds trace_selftest_dynamic.c with -pg although kernel/trace/ is
//! built without; the shell passes it in as a [`Target`].
//!
//! How the stress test decides "exactly once": the controller publishes an
//! epoch word before and after every update: `TRANSITION` while it changes
//! sites, then `STABLE_ON` (the counting ops is registered and wants the
//! target, the update has returned, so the site calls the trampoline and the
//! dispatch reaches the ops) or `STABLE_OFF`. Around each call a worker reads
//! the epoch and its CPU's counter before and after. If both epoch reads are
//! the same stable epoch, the counter must have moved by exactly 1 (`STABLE_ON`)
//! or exactly 0 (`STABLE_OFF`); otherwise the call overlapped a transition and
//! may have been seen or not, but never twice.
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::ftrace::{
    self, recursion, register_ftrace_function, unregister_ftrace_function, FtraceOps,
};
use crate::arch::percpu::{self, MAX_CPUS};
use crate::arch::text_poke::{self, INT3};

// ---------------------------------------------------------------------------
// ftrace_check

/// The `ftrace_check` shell command's text.
pub fn ftrace_check_text() -> String {
    let r = ftrace::ftrace_check_sites();
    format!(
        "ftrace_check: {} sites, {} bad, {} call ftrace_caller, {} nop\n",
        r.sites, r.bad, r.calls, r.nops
    )
}

// ---------------------------------------------------------------------------
// The counting ops

/// A per-CPU counter on its own cache line.
#[repr(align(64))]
struct PerCpuCount(AtomicU64);

/// Calls of the target seen by [`COUNT_OPS`], per CPU.
static TARGET_SEEN: [PerCpuCount; MAX_CPUS] = [const { PerCpuCount(AtomicU64::new(0)) }; MAX_CPUS];
/// Calls of any function seen by [`NOISE_OPS`], per CPU.
static NOISE_SEEN: [PerCpuCount; MAX_CPUS] = [const { PerCpuCount(AtomicU64::new(0)) }; MAX_CPUS];
/// The call site (record ip) of `ftrace_selftest_target`.
static TARGET_IP: AtomicU64 = AtomicU64::new(0);

/// Counts the calls of the target on this CPU. Like every ftrace callback it
/// takes the recursion guard (Linux: ftrace_test_recursion_trylock).
extern "C" fn count_call(ip: u64, _parent_slot: *mut u64, _op: &FtraceOps) {
    let Some(bit) = recursion::trylock(recursion::FTRACE_START) else {
        return;
    };
    if ip == TARGET_IP.load(Ordering::Relaxed) {
        TARGET_SEEN[percpu::cpu_id()]
            .0
            .fetch_add(1, Ordering::SeqCst);
    }
    recursion::unlock(bit);
}

/// A second user of function tracing, so that sites are shared and the
/// dispatch switches between one ops (direct) and the list function.
extern "C" fn noise_call(_ip: u64, _parent_slot: *mut u64, _op: &FtraceOps) {
    let Some(bit) = recursion::trylock(recursion::FTRACE_START) else {
        return;
    };
    NOISE_SEEN[percpu::cpu_id()]
        .0
        .fetch_add(1, Ordering::Relaxed);
    recursion::unlock(bit);
}

static COUNT_OPS: FtraceOps = FtraceOps::new("selftest_count", count_call);
static NOISE_OPS: FtraceOps = FtraceOps::new("selftest_noise", noise_call);

/// One self-test at a time (they share the ops above).
static SELFTEST_BUSY: AtomicBool = AtomicBool::new(false);

struct Busy;

impl Busy {
    fn take() -> Option<Busy> {
        SELFTEST_BUSY
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Busy)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        SELFTEST_BUSY.store(false, Ordering::Release);
    }
}

/// A traced function for the tests: it must compute
/// [`ftrace_selftest_formula`] of its argument.
pub type Target = fn(u64) -> u64;

/// What a [`Target`] computes. Inlined into the target (and into the checks
/// here, which are not traced), so it is not a traced call of its own.
#[inline(always)]
pub fn ftrace_selftest_formula(x: u64) -> u64 {
    x.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17) ^ 0x5a5a
}

/// The record index of the target's call site.
fn target_record(target: Target) -> Option<usize> {
    let start = target as *const () as u64;
    let sym = crate::kallsyms::table()?.lookup(start)?;
    let recs = ftrace::records();
    let i = recs.partition_point(|r| r.ip < start);
    (i < recs.len() && recs[i].ip < start - sym.offset + sym.size as u64).then_some(i)
}

/// The value the target must return (computed here, untraced).
fn target_expected(x: u64) -> u64 {
    ftrace_selftest_formula(x)
}

/// A small xorshift generator for the controller's choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A random set of records: all, every k-th, about one in d, or none;
/// `target` decides whether the target's record is in it.
fn random_subset(rng: &mut Rng, n: usize, target_i: usize, target: bool) -> Vec<bool> {
    let mut v: Vec<bool> = match rng.below(4) {
        0 => alloc::vec![true; n],
        1 => {
            let k = 2 + rng.below(7) as usize;
            let off = rng.below(k as u64) as usize;
            (0..n).map(|i| i % k == off).collect()
        }
        2 => {
            let d = 2 + rng.below(7);
            (0..n).map(|_| rng.below(d) == 0).collect()
        }
        _ => alloc::vec![false; n],
    };
    v[target_i] = target;
    v
}

// ---------------------------------------------------------------------------
// ftrace_stress

const STABLE_OFF: u64 = 0;
const STABLE_ON: u64 = 1;
const TRANSITION: u64 = 2;

/// The controller's state: `(sequence << 2) | STABLE_OFF/STABLE_ON/TRANSITION`.
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// What one worker saw.
#[derive(Default)]
struct WorkerStats {
    calls: AtomicU64,
    stable_on: AtomicU64,
    stable_on_seen: AtomicU64,
    stable_off: AtomicU64,
    stable_off_seen: AtomicU64,
    transition: AtomicU64,
    transition_seen: AtomicU64,
    /// Calls seen more than once, or not exactly as the stable epoch says.
    violations: AtomicU64,
    wrong_results: AtomicU64,
    /// The first violation: (epoch before, epoch after, counter delta).
    first_violation: spin::Mutex<Option<(u64, u64, u64)>>,
}

struct StressShared {
    stop: AtomicBool,
    running: AtomicUsize,
    stats: Vec<WorkerStats>,
}

fn stress_worker(cpu: usize, shared: &StressShared, target: Target) {
    let stats = &shared.stats[cpu];
    let seen = &TARGET_SEEN[cpu].0;
    let mut x = 0x1234_5678u64 ^ (cpu as u64) << 40;
    shared.running.fetch_add(1, Ordering::SeqCst);
    while !shared.stop.load(Ordering::Relaxed) {
        // A pinned thread: cpu_id() cannot change under us, and nothing else
        // on this CPU calls the target, so the counter moves only for our call.
        let e0 = EPOCH.load(Ordering::SeqCst);
        let c0 = seen.load(Ordering::SeqCst);
        let r = target(x);
        let c1 = seen.load(Ordering::SeqCst);
        let e1 = EPOCH.load(Ordering::SeqCst);
        if r != target_expected(x) {
            stats.wrong_results.fetch_add(1, Ordering::Relaxed);
        }
        x = x.wrapping_add(0x9e37_79b9);
        let delta = c1.wrapping_sub(c0);
        stats.calls.fetch_add(1, Ordering::Relaxed);
        let ok = if e0 == e1 && e0 & 3 == STABLE_ON {
            stats.stable_on.fetch_add(1, Ordering::Relaxed);
            stats.stable_on_seen.fetch_add(delta, Ordering::Relaxed);
            delta == 1
        } else if e0 == e1 && e0 & 3 == STABLE_OFF {
            stats.stable_off.fetch_add(1, Ordering::Relaxed);
            stats.stable_off_seen.fetch_add(delta, Ordering::Relaxed);
            delta == 0
        } else {
            stats.transition.fetch_add(1, Ordering::Relaxed);
            stats.transition_seen.fetch_add(delta, Ordering::Relaxed);
            delta <= 1
        };
        if !ok {
            stats.violations.fetch_add(1, Ordering::Relaxed);
            let mut first = stats.first_violation.lock();
            if first.is_none() {
                *first = Some((e0, e1, delta));
            }
        }
    }
    shared.running.fetch_sub(1, Ordering::SeqCst);
}

/// Busy-waits about `ns` (the controller must not sleep while holding the
/// CPU for a stable phase; the workers on this CPU still get their slices).
fn spin_ns(ns: u64) {
    let end = crate::time::now_ns() + ns;
    while crate::time::now_ns() < end {
        core::hint::spin_loop();
    }
}

/// Runs the SMP stress test for `duration_ns` and at least `min_updates`
/// updates (a slow or loaded host still gets that many), and returns its
/// report. Ctrl-C stops it early.
pub fn ftrace_stress(duration_ns: u64, min_updates: u64, target: Target) -> String {
    let Some(_busy) = Busy::take() else {
        return String::from("ftrace_stress: a self-test is already running\n");
    };
    let mut out = String::new();
    if ftrace::ftrace_is_dead() {
        out.push_str("ftrace_stress: ftrace is disabled (ftrace_bug)\nftrace_stress: FAIL\n");
        return out;
    }
    let Some(target_i) = target_record(target) else {
        out.push_str("ftrace_stress: the target function has no call site\nftrace_stress: FAIL\n");
        return out;
    };
    TARGET_IP.store(ftrace::records()[target_i].ip, Ordering::SeqCst);
    let n = ftrace::records().len();
    let cpus = crate::arch::nr_cpus();
    let shared = Arc::new(StressShared {
        stop: AtomicBool::new(false),
        running: AtomicUsize::new(0),
        stats: (0..cpus).map(|_| WorkerStats::default()).collect(),
    });
    let int3_before = ftrace::int3_hits();
    let stale_before = text_poke::stale_int3_hits();
    let mut seq = EPOCH.load(Ordering::SeqCst) >> 2;
    EPOCH.store(((seq + 1) << 2) | STABLE_OFF, Ordering::SeqCst);
    seq += 1;

    let handles: Vec<_> = (0..cpus)
        .map(|cpu| {
            let s = shared.clone();
            crate::sched::spawn_on(cpu, "ftrace_stress", move || stress_worker(cpu, &s, target))
        })
        .collect();
    while shared.running.load(Ordering::SeqCst) < cpus {
        crate::sched::yield_now();
    }

    let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ crate::arch::rdtsc());
    let (mut count_on, mut noise_on) = (false, false);
    let mut count_wanted = alloc::vec![false; n];
    COUNT_OPS.set_wanted(&count_wanted);
    let (mut updates, mut errors, mut enables, mut disables) = (0u64, 0u64, 0u64, 0u64);
    let (mut patched, mut stable_on_phases, mut update_ticks) = (0usize, 0u64, 0u64);
    let start = crate::time::now_ns();
    let mut first_error = None;
    while (crate::time::now_ns() - start < duration_ns || updates < min_updates)
        && !crate::sched::signal_pending()
    {
        let was_on = count_on && COUNT_OPS.wants(target_i);
        EPOCH.store(((seq + 1) << 2) | TRANSITION, Ordering::SeqCst);
        seq += 1;
        // One change through the real paths: register/unregister an ops or
        // change its filter and re-patch (ftrace_update).
        let r = match rng.below(10) {
            // Most steps flip the target alone (a batch of one site, or none
            // when the noise ops holds it), so that there are thousands.
            0..=5 => {
                count_wanted[target_i] = !count_wanted[target_i];
                COUNT_OPS.set_wanted(&count_wanted);
                if count_on {
                    ftrace::ftrace_update()
                } else {
                    count_on = true;
                    register_ftrace_function(&COUNT_OPS)
                }
            }
            // A new subset, hundreds of sites at once.
            6 => {
                let want_target = rng.below(2) == 0;
                count_wanted = random_subset(&mut rng, n, target_i, want_target);
                COUNT_OPS.set_wanted(&count_wanted);
                if count_on {
                    ftrace::ftrace_update()
                } else {
                    count_on = true;
                    register_ftrace_function(&COUNT_OPS)
                }
            }
            7 if count_on => {
                count_on = false;
                unregister_ftrace_function(&COUNT_OPS)
            }
            7 => {
                count_on = true;
                register_ftrace_function(&COUNT_OPS)
            }
            _ => {
                let want_target = rng.below(2) == 0;
                if noise_on && rng.below(2) == 0 {
                    noise_on = false;
                    unregister_ftrace_function(&NOISE_OPS)
                } else {
                    NOISE_OPS.set_wanted(&random_subset(&mut rng, n, target_i, want_target));
                    if noise_on {
                        ftrace::ftrace_update()
                    } else {
                        noise_on = true;
                        register_ftrace_function(&NOISE_OPS)
                    }
                }
            }
        };
        updates += 1;
        {
            let last = ftrace::LAST_UPDATE.lock();
            update_ticks += last.0;
            patched += last.1;
        }
        if let Err(e) = r {
            errors += 1;
            first_error.get_or_insert(e);
        }
        let now_on = count_on && COUNT_OPS.wants(target_i);
        match (was_on, now_on) {
            (false, true) => enables += 1,
            (true, false) => disables += 1,
            _ => {}
        }
        EPOCH.store(
            ((seq + 1) << 2) | if now_on { STABLE_ON } else { STABLE_OFF },
            Ordering::SeqCst,
        );
        seq += 1;
        if now_on {
            stable_on_phases += 1;
        }
        // A stable phase of 0..2 ms, so that workers see both kinds.
        spin_ns(rng.below(2_000_000));
    }
    let elapsed = crate::time::now_ns() - start;

    // Leave everything as it was: both ops gone, every site a NOP again.
    EPOCH.store(((seq + 1) << 2) | TRANSITION, Ordering::SeqCst);
    if count_on {
        let _ = unregister_ftrace_function(&COUNT_OPS);
    }
    if noise_on {
        let _ = unregister_ftrace_function(&NOISE_OPS);
    }
    EPOCH.store(((seq + 2) << 2) | STABLE_OFF, Ordering::SeqCst);
    shared.stop.store(true, Ordering::SeqCst);
    for h in handles {
        h.join();
    }
    let int3 = ftrace::int3_hits() - int3_before;
    let stale = text_poke::stale_int3_hits() - stale_before;

    let sum = |f: fn(&WorkerStats) -> &AtomicU64| -> u64 {
        shared
            .stats
            .iter()
            .map(|s| f(s).load(Ordering::Relaxed))
            .sum()
    };
    let violations = sum(|s| &s.violations);
    let wrong = sum(|s| &s.wrong_results);
    let _ = writeln!(
        out,
        "ftrace_stress: {} cpus, {}.{:03} s, {} updates ({} target enables, {} disables, {} stable-enabled phases), {} sites patched, {} us per update",
        cpus,
        elapsed / 1_000_000_000,
        elapsed / 1_000_000 % 1000,
        updates,
        enables,
        disables,
        stable_on_phases,
        patched,
        update_ticks * 1_000_000 / crate::arch::tsc::tsc_hz().max(1) / updates.max(1)
    );
    for (cpu, s) in shared.stats.iter().enumerate() {
        let _ = writeln!(
            out,
            "ftrace_stress: cpu{}: {} calls: stable-enabled {} (seen {}), stable-disabled {} (seen {}), transition {} (seen {})",
            cpu,
            s.calls.load(Ordering::Relaxed),
            s.stable_on.load(Ordering::Relaxed),
            s.stable_on_seen.load(Ordering::Relaxed),
            s.stable_off.load(Ordering::Relaxed),
            s.stable_off_seen.load(Ordering::Relaxed),
            s.transition.load(Ordering::Relaxed),
            s.transition_seen.load(Ordering::Relaxed),
        );
        if let Some((e0, e1, d)) = *s.first_violation.lock() {
            let _ = writeln!(
                out,
                "ftrace_stress: cpu{}: first violation: epoch {:#x} -> {:#x}, seen {} times",
                cpu, e0, e1, d
            );
        }
    }
    let _ = writeln!(
        out,
        "ftrace_stress: calls {}, stable-enabled {} (seen {}), stable-disabled {} (seen {}), transition {} (seen {})",
        sum(|s| &s.calls),
        sum(|s| &s.stable_on),
        sum(|s| &s.stable_on_seen),
        sum(|s| &s.stable_off),
        sum(|s| &s.stable_off_seen),
        sum(|s| &s.transition),
        sum(|s| &s.transition_seen),
    );
    let noise: u64 = NOISE_SEEN.iter().map(|c| c.0.load(Ordering::Relaxed)).sum();
    let _ = writeln!(
        out,
        "ftrace_stress: int3 hits {} (on a removed int3: {}), noise ops calls {}, update errors {}{}, violations {}, wrong results {}",
        int3,
        stale,
        noise,
        errors,
        first_error.map(|e| format!(" ({e:?})")).unwrap_or_default(),
        violations,
        wrong
    );
    // No writable alias of the text may outlive the updates' batches.
    let mapped = text_poke::poke_slots_mapped();
    let _ = writeln!(out, "ftrace_stress: {mapped} poke window slots mapped");
    let check = ftrace::ftrace_check_sites();
    out.push_str(&ftrace_check_text());
    let pass = violations == 0
        && wrong == 0
        && errors == 0
        && mapped == 0
        && check.bad == 0
        && !ftrace::ftrace_is_dead();
    let _ = writeln!(out, "ftrace_stress: {}", if pass { "PASS" } else { "FAIL" });
    out
}

// ---------------------------------------------------------------------------
// ftrace_int3_test

/// Set by the patcher's hook: the int3 is on every site of the batch.
static INT3_PHASE: AtomicBool = AtomicBool::new(false);
/// Set by the helper once it has called the target.
static HELPER_DONE: AtomicBool = AtomicBool::new(false);
/// The target's first byte as the hook saw it (must be int3).
static SITE_BYTE: AtomicU64 = AtomicU64::new(0);

/// Runs in the patcher after step 1 (int3 written, all CPUs synced): lets
/// the helper CPU run into the int3 and waits (at most 2 s) until it has.
fn hold_after_int3() {
    let ip = TARGET_IP.load(Ordering::SeqCst);
    // SAFETY: the target's site is 5 bytes of mapped kernel text.
    SITE_BYTE.store(
        unsafe { core::ptr::read_volatile(ip as *const u8) } as u64,
        Ordering::SeqCst,
    );
    INT3_PHASE.store(true, Ordering::SeqCst);
    let end = crate::time::now_ns() + 2_000_000_000;
    while !HELPER_DONE.load(Ordering::SeqCst) && crate::time::now_ns() < end {
        core::hint::spin_loop();
    }
}

/// One direction of the int3 test: run `change` with the patcher held after
/// step 1 while a CPU other than ours calls the target.
fn int3_case(
    out: &mut String,
    name: &str,
    target: Target,
    expect_seen: u64,
    change: impl FnOnce() -> Result<(), crate::fs::Errno>,
) -> bool {
    // We run pinned on CPU 0 (see ftrace_int3_test), the helper on CPU 1.
    let helper_cpu = 1;
    INT3_PHASE.store(false, Ordering::SeqCst);
    HELPER_DONE.store(false, Ordering::SeqCst);
    let result = Arc::new(AtomicU64::new(0));
    let delta = Arc::new(AtomicU64::new(u64::MAX));
    let hits = Arc::new(AtomicU64::new(0));
    let ready = Arc::new(AtomicBool::new(false));
    let (r2, d2, h2, rd2) = (result.clone(), delta.clone(), hits.clone(), ready.clone());
    let x = 0xfeed_f00d_u64;
    let helper = crate::sched::spawn_on(helper_cpu, "int3_helper", move || {
        rd2.store(true, Ordering::SeqCst);
        let end = crate::time::now_ns() + 5_000_000_000;
        while !INT3_PHASE.load(Ordering::SeqCst) && crate::time::now_ns() < end {
            core::hint::spin_loop();
        }
        let cpu = percpu::cpu_id();
        let h0 = ftrace::int3_hits();
        let c0 = TARGET_SEEN[cpu].0.load(Ordering::SeqCst);
        let r = target(x);
        let c1 = TARGET_SEEN[cpu].0.load(Ordering::SeqCst);
        h2.store((ftrace::int3_hits() - h0) as u64, Ordering::SeqCst);
        r2.store(r, Ordering::SeqCst);
        d2.store(c1 - c0, Ordering::SeqCst);
        HELPER_DONE.store(true, Ordering::SeqCst);
    });
    while !ready.load(Ordering::SeqCst) {
        crate::sched::yield_now();
    }
    text_poke::set_poke_test_hook(Some(hold_after_int3));
    let r = change();
    text_poke::set_poke_test_hook(None);
    HELPER_DONE.store(true, Ordering::SeqCst);
    INT3_PHASE.store(true, Ordering::SeqCst);
    helper.join();
    let (site, seen, res, int3) = (
        SITE_BYTE.load(Ordering::SeqCst),
        delta.load(Ordering::SeqCst),
        result.load(Ordering::SeqCst),
        hits.load(Ordering::SeqCst),
    );
    let ok = r.is_ok()
        && site == INT3 as u64
        && seen == expect_seen
        && res == target_expected(x)
        && int3 >= 1;
    let _ = writeln!(
        out,
        "ftrace_int3_test: {}: site byte {:#04x} during the patch, helper on cpu{}: int3 hits {}, traced {} time(s) (want {}), result {} ({}): {}",
        name,
        site,
        helper_cpu,
        int3,
        seen,
        expect_seen,
        if res == target_expected(x) { "correct" } else { "WRONG" },
        res,
        if ok { "ok" } else { "FAIL" }
    );
    if let Err(e) = r {
        let _ = writeln!(out, "ftrace_int3_test: {}: update failed: {:?}", name, e);
    }
    ok
}

/// Forces a CPU to hit the target's site while it holds int3, enabling
/// (NOP -> call: the emulated call must reach the tracer) and disabling
/// (call -> NOP: skipped, not traced); the function must return normally.
pub fn ftrace_int3_test(target: Target) -> String {
    let Some(_busy) = Busy::take() else {
        return String::from("ftrace_int3_test: a self-test is already running\n");
    };
    let mut out = String::new();
    if crate::arch::nr_cpus() < 2 {
        out.push_str("ftrace_int3_test: needs 2 CPUs\nftrace_int3_test: FAIL\n");
        return out;
    }
    let Some(target_i) = target_record(target) else {
        out.push_str(
            "ftrace_int3_test: the target function has no call site\nftrace_int3_test: FAIL\n",
        );
        return out;
    };
    TARGET_IP.store(ftrace::records()[target_i].ip, Ordering::SeqCst);
    let mut only_target = alloc::vec![false; ftrace::records().len()];
    only_target[target_i] = true;
    COUNT_OPS.set_wanted(&only_target);
    let int3_before = ftrace::int3_hits();
    // The patcher holds its CPU (preemption off) while it waits for the
    // helper: pin it to CPU 0 and the helper to CPU 1 so they never share one.
    let cases = crate::sched::spawn_on(0, "int3_patcher", move || {
        let mut out = String::new();
        let on = int3_case(&mut out, "enable (nop -> call)", target, 1, || {
            register_ftrace_function(&COUNT_OPS)
        });
        let off = int3_case(&mut out, "disable (call -> nop)", target, 0, || {
            unregister_ftrace_function(&COUNT_OPS)
        });
        *INT3_REPORT.lock() = Some((out, on && off));
    });
    cases.join();
    let Some((text, cases_ok)) = INT3_REPORT.lock().take() else {
        out.push_str(
            "ftrace_int3_test: the patcher thread gave no report\nftrace_int3_test: FAIL\n",
        );
        return out;
    };
    out.push_str(&text);
    let _ = writeln!(
        out,
        "ftrace_int3_test: int3 hits {}",
        ftrace::int3_hits() - int3_before
    );
    let check = ftrace::ftrace_check_sites();
    out.push_str(&ftrace_check_text());
    let pass = cases_ok && check.bad == 0;
    let _ = writeln!(
        out,
        "ftrace_int3_test: {}",
        if pass { "PASS" } else { "FAIL" }
    );
    out
}

/// The int3 test's text and verdict, from its pinned patcher thread.
static INT3_REPORT: spin::Mutex<Option<(String, bool)>> = spin::Mutex::new(None);
