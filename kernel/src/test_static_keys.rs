//! The static keys' self-test, run by the shell's `jump_label_test`
//! (Linux: lib/test_static_keys.c). A key of its own with five sites in
//! four functions: enable, check, run, disable; the int3 window of a patch;
//! the key toggled while other CPUs run its sites; and a site that does not
//! hold what its key says (the patch must be refused, nothing written).
//! It lives apart from `jump_label`, which the scheduler's tracepoints
//! use, because it spawns tasks on the scheduler.
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use spin::Mutex;

use crate::arch::jump_label as arch_jl;
use crate::arch::percpu::MAX_CPUS;
use crate::fs::Errno;
use crate::jump_label::{
    jump_entries, jump_label_check, jump_label_check_text, static_key_disable, static_key_enable,
    StaticKey, JUMP_LABEL_MUTEX,
};
use crate::static_branch_unlikely;

/// The key of the self-test's sites; nothing else uses it.
pub static JUMP_LABEL_TEST_KEY: StaticKey = StaticKey::new();

/// Which test sites ran their guarded code (bit per site), per CPU.
static TEST_RAN: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// The guarded code of test site `bit`: out of line, so the site's `jmp`
/// really leads somewhere else.
#[inline(never)]
fn test_site_ran(bit: u32) {
    TEST_RAN[crate::arch::cpu_id()].fetch_or(1 << bit, Ordering::SeqCst);
}

macro_rules! test_site_fn {
    ($name:ident, $($bit:literal),+) => {
        /// A function with static-key sites on [`JUMP_LABEL_TEST_KEY`].
        #[inline(never)]
        fn $name(x: u64) -> u64 {
            let mut x = core::hint::black_box(x);
            $(
                if static_branch_unlikely!(JUMP_LABEL_TEST_KEY) {
                    test_site_ran($bit);
                }
                x = x.rotate_left(7) ^ $bit;
            )+
            x
        }
    };
}

test_site_fn!(jump_label_test_a, 0);
test_site_fn!(jump_label_test_b, 1);
test_site_fn!(jump_label_test_c, 2);
// Two sites in one function.
test_site_fn!(jump_label_test_d, 3, 4);

/// The number of test sites.
pub const TEST_SITES: u32 = 5;

/// Calls every test function once; returns the bits of the sites whose
/// guarded code ran and whether the functions' results were right.
fn run_test_sites() -> (u64, bool) {
    crate::sched::preempt_disable();
    let cpu = crate::arch::cpu_id();
    TEST_RAN[cpu].store(0, Ordering::SeqCst);
    let x = 0x1234_5678_9abc_def0u64;
    let want = |bits: &[u64]| bits.iter().fold(x, |x, &b| x.rotate_left(7) ^ b);
    let ok = jump_label_test_a(x) == want(&[0])
        && jump_label_test_b(x) == want(&[1])
        && jump_label_test_c(x) == want(&[2])
        && jump_label_test_d(x) == want(&[3, 4]);
    let ran = TEST_RAN[cpu].load(Ordering::SeqCst);
    crate::sched::preempt_enable();
    (ran, ok)
}

/// The `jump_label_test` shell command: `enable` or `disable` the test key
/// (errors printed as the shell prints them), `run` the test functions
/// and say how many sites ran their guarded code and whether that is what
/// the key says, `int3`: [`jump_label_int3_test`], `unexpected`:
/// [`jump_label_unexpected_test`], `stress [N]`: [`jump_label_stress`].
pub fn jump_label_test(args: &[String]) -> String {
    let key = &JUMP_LABEL_TEST_KEY;
    match args.first().map(String::as_str) {
        Some("enable") | Some("disable") => {
            let r = if args[0] == "enable" {
                static_key_enable(key)
            } else {
                static_key_disable(key)
            };
            match r {
                Ok(()) => String::new(),
                Err(e) => format!("jump_label_test: {}\n", e.strerror()),
            }
        }
        Some("run") => {
            let on = key.is_enabled();
            let (ran, results_ok) = run_test_sites();
            let want = if on { (1u64 << TEST_SITES) - 1 } else { 0 };
            format!(
                "jump_label_test: key {}, {} sites, {} of {} ran{}: {}\n",
                if on { "on" } else { "off" },
                key.run().len(),
                ran.count_ones(),
                TEST_SITES,
                if results_ok { "" } else { ", WRONG results" },
                if ran == want && results_ok && key.run().len() == TEST_SITES as usize {
                    "ok"
                } else {
                    "FAIL"
                }
            )
        }
        Some("int3") => jump_label_int3_test(),
        Some("unexpected") => jump_label_unexpected_test(),
        Some("stress") => match args.get(1).map_or(Ok(200), |n| n.parse::<u64>()) {
            Ok(n) if n > 0 => jump_label_stress(n),
            _ => String::from("usage: jump_label_test stress [TOGGLES]\n"),
        },
        _ => String::from("usage: jump_label_test enable|disable|run|int3|unexpected|stress [N]\n"),
    }
}

/// Set by the patcher's hook: every site of the batch holds int3.
static INT3_PHASE: AtomicBool = AtomicBool::new(false);
/// Set by the helper once it has run the test functions.
static HELPER_DONE: AtomicBool = AtomicBool::new(false);
/// How many test sites held int3 when the hook looked.
static SITES_AT_INT3: AtomicU64 = AtomicU64::new(0);

/// Runs in the patcher after step 1 of the int3 protocol (int3 on every
/// site, all CPUs synced): counts the test sites that hold int3, lets the
/// helper run into them and waits (at most 2 s) until it has.
fn hold_after_int3() {
    let int3 = jump_entries()[JUMP_LABEL_TEST_KEY.run()]
        .iter()
        // SAFETY: a site is mapped kernel text.
        .filter(|e| unsafe { core::ptr::read_volatile(e.code as *const u8) } == 0xcc)
        .count();
    SITES_AT_INT3.store(int3 as u64, Ordering::SeqCst);
    INT3_PHASE.store(true, Ordering::SeqCst);
    let end = crate::time::now_ns() + 2_000_000_000;
    while !HELPER_DONE.load(Ordering::SeqCst) && crate::time::now_ns() < end {
        core::hint::spin_loop();
    }
}

/// One direction: `on` patches the test key while a helper on CPU 1 runs
/// the test functions with every site at int3. The int3 handler must
/// emulate the *new* instruction: `jmp` to the guarded code when enabling,
/// the NOP when disabling.
fn int3_case(out: &mut String, on: bool) -> bool {
    use alloc::sync::Arc;
    INT3_PHASE.store(false, Ordering::SeqCst);
    HELPER_DONE.store(false, Ordering::SeqCst);
    SITES_AT_INT3.store(0, Ordering::SeqCst);
    let res = Arc::new(Mutex::new(None));
    let r2 = res.clone();
    let helper = crate::sched::spawn_on(1, "jl_int3_helper", move || {
        let end = crate::time::now_ns() + 5_000_000_000;
        while !INT3_PHASE.load(Ordering::SeqCst) && crate::time::now_ns() < end {
            core::hint::spin_loop();
        }
        let h0 = crate::arch::text_poke::int3_hits();
        let (ran, ok) = run_test_sites();
        let hits = crate::arch::text_poke::int3_hits() - h0;
        *r2.lock() = Some((ran, ok, hits));
        HELPER_DONE.store(true, Ordering::SeqCst);
    });
    // The patcher holds its CPU while it waits: pin it to CPU 0.
    let patch = Arc::new(Mutex::new(None));
    let p2 = patch.clone();
    crate::sched::spawn_on(0, "jl_int3_patcher", move || {
        crate::arch::text_poke::set_poke_test_hook(Some(hold_after_int3));
        let r = if on {
            static_key_enable(&JUMP_LABEL_TEST_KEY)
        } else {
            static_key_disable(&JUMP_LABEL_TEST_KEY)
        };
        crate::arch::text_poke::set_poke_test_hook(None);
        HELPER_DONE.store(true, Ordering::SeqCst);
        INT3_PHASE.store(true, Ordering::SeqCst);
        *p2.lock() = Some(r);
    })
    .join();
    helper.join();
    let patched = patch.lock().take();
    let (ran, results_ok, hits) = res.lock().take().unwrap_or((u64::MAX, false, 0));
    let at_int3 = SITES_AT_INT3.load(Ordering::SeqCst);
    let want = if on { (1u64 << TEST_SITES) - 1 } else { 0 };
    let ok = patched == Some(Ok(()))
        && at_int3 == TEST_SITES as u64
        && ran == want
        && results_ok
        && hits >= TEST_SITES as usize;
    let _ = core::fmt::Write::write_fmt(
        out,
        format_args!(
            "jump_label_test int3: {}: {} sites at int3, helper on cpu1: int3 hits {}, {} of {} ran (want {}){}: {}\n",
            if on { "enable (nop -> jmp)" } else { "disable (jmp -> nop)" },
            at_int3,
            hits,
            ran.count_ones(),
            TEST_SITES,
            want.count_ones(),
            if results_ok { "" } else { ", WRONG results" },
            if ok { "ok" } else { "FAIL" }
        ),
    );
    ok
}

/// `jump_label_test int3`: holds the patcher after it has put int3 on every
/// test site until another CPU has run through them, enabling then
/// disabling the key, so that the int3 handler's emulation of an in-flight
/// site is exercised by construction (as ftrace_int3_test does for calls).
pub fn jump_label_int3_test() -> String {
    let mut out = String::new();
    if crate::arch::nr_cpus() < 2 {
        return String::from("jump_label_test int3: needs 2 CPUs\njump_label_test int3: FAIL\n");
    }
    if JUMP_LABEL_TEST_KEY.is_enabled() {
        let _ = static_key_disable(&JUMP_LABEL_TEST_KEY);
    }
    let on = int3_case(&mut out, true);
    let off = int3_case(&mut out, false);
    let check = jump_label_check();
    out.push_str(&jump_label_check_text());
    out.push_str(if on && off && check.bad == 0 {
        "jump_label_test int3: PASS\n"
    } else {
        "jump_label_test int3: FAIL\n"
    });
    out
}

/// The stress test's epoch: incremented at every change of the test key,
/// so `epoch % 4` is 0 (off, stable), 1 (being enabled), 2 (on, stable),
/// 3 (being disabled), and two equal reads mean nothing changed between.
static STRESS_EPOCH: AtomicU64 = AtomicU64::new(0);
static STRESS_STOP: AtomicBool = AtomicBool::new(false);

/// What one stress worker saw.
#[derive(Clone, Copy, Default)]
struct StressCounts {
    calls: u64,
    stable_on: u64,
    stable_off: u64,
    /// Calls within one stable epoch whose sites did not all do what the
    /// key said.
    violations: u64,
    /// Calls whose functions returned a wrong value.
    wrong: u64,
}

/// `jump_label_test stress N`: a worker pinned on every other CPU calls the
/// test functions in a loop while this CPU enables and disables the test
/// key `toggles` times each. Around each call a worker reads the epoch: if
/// both reads are the same stable epoch, every site must have taken its
/// branch (on) or none (off); a call that overlapped a change may see
/// either, per site. Every call must compute the right values (a site
/// patched wrongly would jump into the middle of an instruction).
pub fn jump_label_stress(toggles: u64) -> String {
    use alloc::sync::Arc;
    let nr = crate::arch::nr_cpus().min(MAX_CPUS);
    if nr < 2 {
        return String::from(
            "jump_label_test stress: needs 2 CPUs\njump_label_test stress: FAIL\n",
        );
    }
    if JUMP_LABEL_TEST_KEY.is_enabled() {
        let _ = static_key_disable(&JUMP_LABEL_TEST_KEY);
    }
    STRESS_STOP.store(false, Ordering::SeqCst);
    STRESS_EPOCH.store(0, Ordering::SeqCst);
    use crate::arch::text_poke::{batch_changed_hits, int3_hits, stale_int3_hits};
    let traps0 = (int3_hits(), stale_int3_hits(), batch_changed_hits());
    let all = (1u64 << TEST_SITES) - 1;
    let calls = Arc::new(AtomicU64::new(0));
    let results = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (1..nr)
        .map(|cpu| {
            let (calls, results) = (calls.clone(), results.clone());
            crate::sched::spawn_on(cpu, "jl_stress", move || {
                let mut c = StressCounts::default();
                while !STRESS_STOP.load(Ordering::SeqCst) {
                    let e0 = STRESS_EPOCH.load(Ordering::SeqCst);
                    let (ran, ok) = run_test_sites();
                    let e1 = STRESS_EPOCH.load(Ordering::SeqCst);
                    c.calls += 1;
                    c.wrong += !ok as u64;
                    if e0 == e1 && e0.is_multiple_of(2) {
                        let on = e0 % 4 == 2;
                        if on {
                            c.stable_on += 1;
                        } else {
                            c.stable_off += 1;
                        }
                        if ran != if on { all } else { 0 } {
                            c.violations += 1;
                        }
                    }
                    calls.fetch_add(1, Ordering::Relaxed);
                }
                crate::irqflags::without_interrupts(|| results.lock().push(c));
            })
        })
        .collect();
    // Lets the workers make `n` calls (at most 100 ms) in a stable epoch.
    let let_run = |n: u64| {
        let c0 = calls.load(Ordering::Relaxed);
        let end = crate::time::now_ns() + 100_000_000;
        while calls.load(Ordering::Relaxed) < c0 + n && crate::time::now_ns() < end {
            crate::sched::yield_now();
        }
    };
    let mut errors = 0u64;
    let_run(nr as u64);
    for _ in 0..toggles {
        for on in [true, false] {
            STRESS_EPOCH.fetch_add(1, Ordering::SeqCst);
            let r = if on {
                static_key_enable(&JUMP_LABEL_TEST_KEY)
            } else {
                static_key_disable(&JUMP_LABEL_TEST_KEY)
            };
            errors += r.is_err() as u64;
            STRESS_EPOCH.fetch_add(1, Ordering::SeqCst);
            let_run(1);
        }
    }
    STRESS_STOP.store(true, Ordering::SeqCst);
    for w in workers {
        w.join();
    }
    let mut t = StressCounts::default();
    let reported = results.lock().len();
    for c in results.lock().iter() {
        t.calls += c.calls;
        t.stable_on += c.stable_on;
        t.stable_off += c.stable_off;
        t.violations += c.violations;
        t.wrong += c.wrong;
    }
    let check = jump_label_check();
    let mut out = format!(
        "jump_label_test stress: {} toggles, {} calls on {} CPUs ({} in a stable on epoch, {} off), {} violations, {} wrong results, {} errors\n",
        toggles, t.calls, reported, t.stable_on, t.stable_off, t.violations, t.wrong, errors
    );
    out.push_str(&format!(
        "jump_label_test stress: int3 traps: {} on in-flight sites, {} on removed int3s, {} while the batch changed\n",
        int3_hits() - traps0.0,
        stale_int3_hits() - traps0.1,
        batch_changed_hits() - traps0.2
    ));
    out.push_str(&jump_label_check_text());
    let pass = reported == nr - 1
        && t.stable_on > 0
        && t.stable_off > 0
        && t.violations == 0
        && t.wrong == 0
        && errors == 0
        && check.bad == 0
        && !JUMP_LABEL_TEST_KEY.is_enabled();
    out.push_str(if pass {
        "jump_label_test stress: PASS\n"
    } else {
        "jump_label_test stress: FAIL\n"
    });
    out
}

/// `jump_label_test unexpected`: the last site of the test key is made to
/// hold another 5-byte NOP (`0f 1f 44 00 08`), then the key is enabled: the
/// enable must fail with EIO having written nothing (the key stays off, the
/// other sites keep their NOP, no guarded code runs), as Linux refuses an
/// "unexpected op" (it BUG()s). The site is put back afterwards.
pub fn jump_label_unexpected_test() -> String {
    use crate::arch::text_poke::{text_poke_sync, TextPoke};
    let key = &JUMP_LABEL_TEST_KEY;
    if key.is_enabled() {
        let _ = static_key_disable(key);
    }
    let Some(site) = jump_entries()[key.run()].last().map(|e| e.code) else {
        return String::from("jump_label_test unexpected: the test key has no site\njump_label_test unexpected: FAIL\n");
    };
    let other_nop = [0x0f, 0x1f, 0x44, 0x00, 0x08];
    let set = |bytes: &[u8; 5]| {
        let _guard = JUMP_LABEL_MUTEX.lock();
        let mut poke = TextPoke::lock();
        // Only the last byte differs: a displacement byte of the NOP,
        // harmless to a CPU that runs the site meanwhile.
        poke.write(site + 4, &bytes[4..]);
        drop(poke);
        text_poke_sync();
    };
    set(&other_nop);
    let r = static_key_enable(key);
    let check = jump_label_check();
    let (ran, results_ok) = run_test_sites();
    let still_off = !key.is_enabled();
    set(&arch_jl::JUMP_LABEL_NOP);
    let after = jump_label_check();
    let mut out = format!(
        "jump_label_test unexpected: enable: {}, key {}, {} bad site(s), {} of {} ran\n",
        match r {
            Ok(()) => String::from("ok"),
            Err(e) => String::from(e.strerror()),
        },
        if still_off { "off" } else { "on" },
        check.bad,
        ran.count_ones(),
        TEST_SITES
    );
    out.push_str(&jump_label_check_text());
    let pass = r == Err(Errno::EIO)
        && still_off
        && check.bad == 1
        && ran == 0
        && results_ok
        && after.bad == 0;
    out.push_str(if pass {
        "jump_label_test unexpected: PASS\n"
    } else {
        "jump_label_test unexpected: FAIL\n"
    });
    out
}
