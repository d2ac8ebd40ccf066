//! The `bench` command: what tracing costs the code it watches, measured in
//! the running kernel (Linux has no single equivalent; the closest are
//! samples/ftrace/ftrace-ops.c and kernel/trace/ring_buffer_benchmark.c).
//!
//! Every figure is a difference of time-stamp counter readings. Under
//! `qemu.sh --icount` (`-icount shift=0,sleep=off`) the guest TSC advances
//! by exactly one per guest instruction, so the figures are instruction
//! counts, the same on any host; without it they are nanoseconds.
//!
//! How each figure is taken:
//! - A case runs a batch of `N` operations between two `rdtsc`s with
//!   interrupts off, `REPS` times, and keeps the smallest batch: the other
//!   CPUs' timer interrupts advance the shared instruction clock too, and the
//!   smallest batch is one they did not touch. The same batch with an empty
//!   body is subtracted (loop overhead), then the result is divided by `N`.
//! - A case that records events resets the ring buffer before each batch and
//!   counts the events after it; if the count is wrong the case prints
//!   `FAILED` instead of a figure, so a broken tracer cannot look fast.
//! - The traced function is [`ktrace_bench_leaf`], expanded from the same
//!   macro as `tracer::bench::bench_leaf_uninstrumented`, which lives in a
//!   crate built without instrumentation: the two differ only by the call
//!   site (and, in the mcount build, by what the compiler does around it).
//!
//! `bench allcpu` is the exception: ring-buffer writers on every CPU at once
//! against one writer, in nanoseconds, for vCPUs that run in parallel
//! (multi-threaded TCG without `-icount`, which runs them one at a time).
//!
//! The command switches tracers and the filter; it restores the tracer, the
//! filter and `tracing_on` afterwards, but the buffer's contents are lost
//! (changing the tracer resets it, as in Linux).
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::hint::black_box;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use spin::Mutex;
use tracer::entry::{FtraceEntry, TRACE_FN};
use tracer::trace_events::read_record;
use tracer::trace_events::sched::sched_switch;

use super::control;
use super::ftrace::{self, FtraceOps};
use super::functions;
use super::trace::{
    self, global_trace, trace_buffer_write, trace_entry, tracing_gen_ctx_dec, TraceArray,
};
use crate::arch::{self, percpu::MAX_CPUS};
use crate::jump_label::{static_key_disable, static_key_enable, StaticKey};

/// Operations per batch.
const N: u64 = 1000;
/// Batches per case (the smallest is kept).
const REPS: usize = 7;
/// Repetitions of the enable/disable-all case.
const UPDATE_REPS: usize = 3;

tracer::bench_leaf_fn!(
    /// The traced twin of `tracer::bench::bench_leaf_uninstrumented`. Its
    /// symbol has no `kernel::trace::` path, so kernel/notrace.list leaves
    /// its call site recorded (everything else in this module is notrace).
    #[export_name = "ktrace_bench_leaf"]
    ktrace_bench_leaf
);

/// A function the filtered-out case selects instead of the leaf (any
/// other traceable function: it is not called while the case runs).
fn other_function() -> &'static str {
    let leaf = leaf_record();
    (0..ftrace::records().len())
        .find(|&i| {
            let name = ftrace::record_name(i);
            Some(i) != leaf
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        })
        .map(ftrace::record_name)
        .unwrap_or("")
}

type Leaf = fn(u64, u64) -> u64;

/// Calls `f` `n` times; the function pointer goes through `black_box`, so
/// the same loop code serves every leaf.
#[inline(never)]
fn call_loop(n: u64, f: Leaf) -> u64 {
    let f = black_box(f);
    let mut acc = 0;
    for i in 0..n {
        acc ^= f(black_box(i), 7);
    }
    acc
}

/// The loop of [`call_loop`] without the call.
#[inline(never)]
fn empty_loop(n: u64) -> u64 {
    let mut acc = 0;
    for i in 0..n {
        acc ^= black_box(i);
    }
    acc
}

/// TSC ticks spent in `f`, interrupts off.
#[inline(always)]
fn ticks(f: impl FnOnce()) -> u64 {
    crate::irqflags::without_interrupts(|| {
        let t0 = arch::rdtsc();
        f();
        arch::rdtsc().wrapping_sub(t0)
    })
}

/// The smallest of `REPS` batches; `setup` runs before each, untimed.
fn min_ticks(mut setup: impl FnMut(), mut batch: impl FnMut()) -> u64 {
    (0..REPS)
        .map(|_| {
            setup();
            ticks(&mut batch)
        })
        .min()
        .unwrap_or(0)
}

/// The unit of the figures.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Instructions,
    Ns,
}

/// Detects `-icount shift=0`: a loop of exactly `2k` instructions more
/// must advance the TSC by exactly `2k` more, three times in a row. With
/// the TSC following host time that essentially never happens. Each loop
/// is the smallest of 7 runs, as the figures are: under icount the clock
/// is shared by all vCPUs, so a run during which another CPU executed
/// (a timer tick) counts those instructions too.
fn detect_icount() -> bool {
    fn spin(k: u64) -> u64 {
        ticks(|| {
            // SAFETY: a register-only countdown loop (dec + jnz per round).
            unsafe {
                core::arch::asm!("2: dec {0}", "jnz 2b", inout(reg) k => _, options(nomem, nostack));
            }
        })
    }
    let min = |k| (0..REPS).map(|_| spin(k)).min().unwrap_or(0);
    (0..3).all(|_| min(2000).wrapping_sub(min(1000)) == 2000)
}

struct Report {
    unit: Unit,
    tsc_hz: u64,
    out: String,
}

impl Report {
    /// Prints `bench: NAME VALUE UNIT` for `t` ticks spread over `n` operations.
    fn figure(&mut self, name: &str, t: u64, n: u64) {
        let n = n.max(1);
        match self.unit {
            Unit::Instructions => {
                let _ = writeln!(self.out, "bench: {} {} instructions", name, (t + n / 2) / n);
            }
            Unit::Ns => {
                // Tenths of a nanosecond, from ticks at tsc_hz.
                let tenths =
                    (t as u128 * 10_000_000_000 / (self.tsc_hz.max(1) as u128 * n as u128)) as u64;
                let _ = writeln!(
                    self.out,
                    "bench: {} {}.{} ns",
                    name,
                    tenths / 10,
                    tenths % 10
                );
            }
        }
    }

    fn failed(&mut self, name: &str, why: &str) {
        let _ = writeln!(self.out, "bench: {} FAILED {}", name, why);
    }

    fn result(&mut self, name: &str, r: Result<(u64, u64), String>) {
        match r {
            Ok((t, n)) => self.figure(name, t, n),
            Err(why) => self.failed(name, &why),
        }
    }
}

/// The record index of the leaf's call site (between its first byte and
/// its end: in the mcount build the site follows the prologue).
fn leaf_record() -> Option<usize> {
    let start = ktrace_bench_leaf as *const () as u64;
    let sym = crate::kallsyms::table()?.lookup(start)?;
    let recs = ftrace::records();
    let i = recs.partition_point(|r| r.ip < start);
    (i < recs.len() && recs[i].ip < start - sym.offset + sym.size as u64).then_some(i)
}

/// Ticks per call of `leaf`, loop overhead subtracted.
fn call_cost(leaf: Leaf, setup: &mut dyn FnMut()) -> u64 {
    let empty = min_ticks(
        || {},
        || {
            black_box(empty_loop(N));
        },
    );
    let full = min_ticks(setup, || {
        black_box(call_loop(N, leaf));
    });
    full.saturating_sub(empty)
}

fn this_cpu_entries(tr: &TraceArray) -> u64 {
    let cpu = arch::cpu_id();
    tr.buffer.entries_cpu(cpu) + tr.buffer.overrun_cpu(cpu)
}

/// Runs a call case with the buffer reset before each batch; the last
/// batch must leave exactly `expect` events per call on this CPU.
fn traced_call_case(tr: &TraceArray, expect_per_call: u64) -> Result<(u64, u64), String> {
    let t = call_cost(ktrace_bench_leaf, &mut || tr.buffer.reset());
    let got = this_cpu_entries(tr);
    if got != expect_per_call * N {
        return Err(format!(
            "{} events recorded for {} calls, expected {}",
            got,
            N,
            expect_per_call * N
        ));
    }
    // The function tracer's events must be the leaf's, well formed.
    if expect_per_call == 1 {
        let site = leaf_record().map(|i| ftrace::records()[i].ip);
        let first = tr
            .buffer
            .peek_with(arch::cpu_id(), |_, data, _| FtraceEntry::decode(data).ok())
            .flatten();
        if first.map(|e| e.ip) != site {
            return Err(String::from(
                "the recorded event is not a TRACE_FN of ktrace_bench_leaf",
            ));
        }
    }
    Ok((t, N))
}

fn set_filter(text: &str) -> Result<(), String> {
    crate::fs::vfs::write_file("/tracing/set_ftrace_filter", text.as_bytes())
        .map_err(|e| format!("set_ftrace_filter '{}': {:?}", text, e))
}

fn set_tracer(name: &str) -> Result<(), String> {
    control::tracing_set_tracer(name).map_err(|e| format!("current_tracer '{}': {:?}", name, e))
}

/// The leaf's site must be in the state the case needs.
fn expect_site(enabled: bool) -> Result<(), String> {
    let i = leaf_record().ok_or_else(|| String::from("ktrace_bench_leaf has no call site"))?;
    if ftrace::records()[i].enabled() != enabled {
        return Err(format!(
            "ktrace_bench_leaf's site is {}",
            if enabled { "a NOP" } else { "enabled" }
        ));
    }
    Ok(())
}

/// A tracer with the filter on the leaf: recording (`on`) or `tracing_on` 0.
fn tracer_case(
    tr: &TraceArray,
    tracer: &str,
    filter: &str,
    on: bool,
    per_call: u64,
) -> Result<(u64, u64), String> {
    set_filter(filter)?;
    set_tracer(tracer)?;
    expect_site(filter == "ktrace_bench_leaf")?;
    if on {
        control::tracing_on();
    } else {
        control::tracing_off();
    }
    let r = traced_call_case(tr, if on { per_call } else { 0 });
    control::tracing_on();
    set_tracer("nop")?;
    r
}

/// One function event written straight into this CPU's buffer, as the
/// function tracer writes it (reserve, fill, commit).
#[inline(always)]
fn write_event(tr: &TraceArray, i: u64) {
    let ent = trace_entry(TRACE_FN, tracing_gen_ctx_dec());
    trace_buffer_write(tr, FtraceEntry::SIZE, |buf| {
        let _ = FtraceEntry {
            ent,
            ip: 0xffff_ffff_8000_0000 + i,
            parent_ip: 0xffff_ffff_8000_1000,
        }
        .encode(buf);
    });
}

#[inline(never)]
fn write_loop(tr: &TraceArray, n: u64) {
    for i in 0..n {
        write_event(tr, black_box(i));
    }
}

/// Ticks per event on this CPU (buffer reset before each batch, count checked).
fn rb_cost(tr: &TraceArray) -> Result<u64, String> {
    let cpu = arch::cpu_id();
    let empty = min_ticks(
        || {},
        || {
            black_box(empty_loop(N));
        },
    );
    crate::sched::preempt_disable();
    let full = min_ticks(
        || {
            let _ = tr.buffer.reset_cpu(cpu);
        },
        || write_loop(tr, N),
    );
    let got = tr.buffer.entries_cpu(cpu) + tr.buffer.overrun_cpu(cpu);
    crate::sched::preempt_enable();
    if got != N {
        return Err(format!(
            "cpu{}: {} events recorded for {} writes",
            cpu, got, N
        ));
    }
    Ok(full.saturating_sub(empty))
}

/// Rounds of the all-CPU cases (more than `REPS`: a round only counts when
/// every CPU's batch overlapped the others' in time).
const PAR_REPS: usize = 63;

/// What each CPU runs in a round of the all-CPU cases.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ParCase {
    /// A register-only loop: shares nothing, so its ratio is what the host
    /// gives two vCPUs at once (1.00 when each has a core to itself).
    Compute,
    /// `N` reads of the TSC.
    Clock,
    /// `N` function events into this CPU's ring buffer, the time stamp given
    /// (see [`write_loop_at`]).
    Ring,
    /// The same plus one increment per event of a counter all CPUs share:
    /// what one shared written cache line in the write path would cost.
    RingShared,
}

impl ParCase {
    fn name(self) -> &'static str {
        match self {
            ParCase::Compute => "compute_allcpu",
            ParCase::Clock => "rdtsc_allcpu",
            ParCase::Ring => "rb_event_allcpu",
            ParCase::RingShared => "rb_event_allcpu_shared",
        }
    }
}

/// The counter of [`ParCase::RingShared`].
static PAR_SHARED: AtomicU64 = AtomicU64::new(0);

/// Waits (interrupts on) until `count` reaches `target`; false after about
/// 20 s (a CPU that never comes). No `pause` in the loop: QEMU's TCG
/// implements it by leaving the vCPU's execution loop (and taking its global
/// lock), which delays the waiter by milliseconds.
fn wait_for(count: &AtomicUsize, target: usize) -> bool {
    let t0 = arch::rdtsc();
    let limit = arch::tsc::tsc_hz().max(1_000_000_000).saturating_mul(20);
    while count.load(Ordering::SeqCst) < target {
        if arch::rdtsc().wrapping_sub(t0) > limit {
            return false;
        }
    }
    true
}

/// One round's work on this CPU.
fn par_work(tr: &TraceArray, case: ParCase) {
    match case {
        ParCase::Compute => {
            // SAFETY: a register-only countdown loop (dec + jnz per round).
            unsafe {
                core::arch::asm!("2: dec {0}", "jnz 2b", inout(reg) 50 * N => _, options(nomem, nostack));
            }
        }
        ParCase::Clock => {
            for _ in 0..N {
                black_box(arch::rdtsc());
            }
        }
        ParCase::Ring => write_loop_at(tr, N, None),
        ParCase::RingShared => write_loop_at(tr, N, Some(&PAR_SHARED)),
    }
}

/// This CPU's rounds: `(start, end)` TSC of each batch, every round begun at
/// a barrier shared by the `nr` CPUs taking part. The ring cases reset this
/// CPU's buffer before each round and check its count after.
fn par_rounds(
    tr: &TraceArray,
    case: ParCase,
    nr: usize,
    barrier: &AtomicUsize,
) -> Result<Vec<(u64, u64)>, String> {
    let cpu = arch::cpu_id();
    let mut spans = Vec::with_capacity(PAR_REPS);
    let mut err = None;
    crate::sched::preempt_disable();
    for round in 0..PAR_REPS {
        let _ = tr.buffer.reset_cpu(cpu);
        barrier.fetch_add(1, Ordering::SeqCst);
        if !wait_for(barrier, nr * (round + 1)) {
            err = Some(format!("cpu{}: round {}: not every CPU came", cpu, round));
            break;
        }
        spans.push(crate::irqflags::without_interrupts(|| {
            let t0 = arch::rdtsc();
            par_work(tr, case);
            (t0, arch::rdtsc())
        }));
        let got = tr.buffer.entries_cpu(cpu) + tr.buffer.overrun_cpu(cpu);
        let want = if matches!(case, ParCase::Compute | ParCase::Clock) {
            0
        } else {
            N
        };
        if got != want && err.is_none() {
            err = Some(format!(
                "cpu{}: {} events recorded for {} writes",
                cpu, got, want
            ));
        }
    }
    crate::sched::preempt_enable();
    match err {
        Some(e) => Err(e),
        None => Ok(spans),
    }
}

/// `n` function events into this CPU's buffer as [`write_event`] writes
/// them (reserve, context word, fill, commit), but stamped from one clock
/// read per batch: under TCG every `rdtsc` takes a lock shared by all vCPUs
/// (`rdtsc_allcpu` shows it), which would measure QEMU rather than the
/// ring buffer. `shared`, if given, is incremented once per event.
#[inline(never)]
fn write_loop_at(tr: &TraceArray, n: u64, shared: Option<&AtomicU64>) {
    let cpu = arch::cpu_id();
    let t0 = trace::trace_clock();
    for i in 0..n {
        let ent = trace_entry(TRACE_FN, tracing_gen_ctx_dec());
        // SAFETY: the caller runs with preemption off, and `cpu` is this CPU.
        if let Some(mut res) = unsafe { tr.buffer.lock_reserve(cpu, FtraceEntry::SIZE, t0 + i) } {
            let _ = FtraceEntry {
                ent,
                ip: 0xffff_ffff_8000_0000 + black_box(i),
                parent_ip: 0xffff_ffff_8000_1000,
            }
            .encode(res.data_mut());
            tr.buffer.unlock_commit(res);
        }
        if let Some(c) = shared {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// An all-CPU case's result, in TSC ticks per batch: one CPU alone, and the
/// worst CPU of the best round with every CPU at once; and how much that
/// round's batches overlapped (percent of the longest batch).
struct Parallel {
    one: u64,
    all: u64,
    overlap_pct: u64,
}

/// Rounds needed for a round to count: every batch overlapped every other
/// by half the longest batch at least.
const MIN_OVERLAP_PCT: u64 = 50;

/// The best round of `cpus` (one list of spans per CPU) whose batches ran at
/// once: (longest batch, overlap percent).
fn best_parallel_round(cpus: &[Vec<(u64, u64)>]) -> Option<(u64, u64)> {
    let rounds = cpus.iter().map(|c| c.len()).min().unwrap_or(0);
    let mut best: Option<(u64, u64)> = None;
    for round in 0..rounds {
        let spans = cpus.iter().map(|c| c[round]);
        let longest = spans
            .clone()
            .map(|(a, b)| b.wrapping_sub(a))
            .max()
            .unwrap_or(0);
        let start = spans.clone().map(|s| s.0).max().unwrap_or(0);
        let end = spans.map(|s| s.1).min().unwrap_or(0);
        let overlap = end.saturating_sub(start) * 100 / longest.max(1);
        if overlap >= MIN_OVERLAP_PCT && best.is_none_or(|b| longest < b.0) {
            best = Some((longest, overlap));
        }
    }
    best
}

/// `case` on this CPU alone, then on every CPU at once, in the same run.
fn par_case(tr: &'static TraceArray, case: ParCase) -> Result<Parallel, String> {
    let nr = arch::nr_cpus().min(MAX_CPUS);
    if nr < 2 {
        return Err(String::from("needs 2 CPUs or more (--smp 2)"));
    }
    // Alone: the same rounds with a barrier of one.
    let alone = par_rounds(tr, case, 1, &AtomicUsize::new(0))?;
    let one = alone
        .iter()
        .map(|&(a, b)| b.wrapping_sub(a))
        .min()
        .unwrap_or(0);

    let barrier = Arc::new(AtomicUsize::new(0));
    type Spans = Result<Vec<(u64, u64)>, String>;
    let results: Arc<Mutex<Vec<Spans>>> = Arc::new(Mutex::new(Vec::new()));
    let run = {
        let barrier = barrier.clone();
        let results = results.clone();
        move || {
            let r = par_rounds(tr, case, nr, &barrier);
            crate::irqflags::without_interrupts(|| results.lock().push(r));
        }
    };
    let handles: Vec<_> = (1..nr)
        .map(|cpu| crate::sched::spawn_on(cpu, "bench_rb", run.clone()))
        .collect();
    run();
    for h in handles {
        h.join();
    }
    let results = core::mem::take(&mut *results.lock());
    if results.len() != nr {
        return Err(format!("{} of {} CPUs reported", results.len(), nr));
    }
    let cpus = results.into_iter().collect::<Result<Vec<_>, String>>()?;
    let (all, overlap_pct) = best_parallel_round(&cpus).ok_or_else(|| {
        format!(
            "in none of {} rounds did the {} CPUs' batches overlap by {}%: the vCPUs did not run in parallel",
            PAR_REPS, nr, MIN_OVERLAP_PCT
        )
    })?;
    Ok(Parallel {
        one,
        all,
        overlap_pct,
    })
}

/// `bench allcpu`: each case on every CPU at once against one CPU alone, in
/// ns (wall clock), for vCPUs that really run in parallel (`./qemu.sh --smp
/// 2` on a 2-core host: multi-threaded TCG, one vCPU thread per host core).
/// Under `-icount` QEMU runs the vCPUs one at a time, so it refuses.
fn allcpu(rep: &mut Report, tr: &'static TraceArray) {
    if rep.unit == Unit::Instructions {
        rep.failed(
            "rb_event_allcpu",
            "under -icount the vCPUs run one at a time: run it without --icount (./qemu.sh --smp 2)",
        );
        return;
    }
    control::tracing_on();
    let nr = arch::nr_cpus().min(MAX_CPUS);
    for case in [
        ParCase::Compute,
        ParCase::Clock,
        ParCase::Ring,
        ParCase::RingShared,
    ] {
        let name = case.name();
        // Per event for the ring cases, per batch of 50k instructions for
        // the compute loop (its ratio is what matters).
        let per = if case == ParCase::Compute { 1 } else { N };
        match par_case(tr, case) {
            Ok(p) => {
                rep.figure(&format!("{}_alone", name), p.one, per);
                rep.figure(name, p.all, per);
                let hundredths = p.all * 100 / p.one.max(1);
                let _ = writeln!(
                    rep.out,
                    "bench: {}_ratio {}.{:02} ({} CPUs at once, worst CPU against one alone; batches overlapped {}%)",
                    name,
                    hundredths / 100,
                    hundredths % 100,
                    nr,
                    p.overlap_pct
                );
            }
            Err(e) => rep.failed(name, &e),
        }
    }
}

/// Calls seen by [`BENCH_ALL_OPS`].
static ALL_SEEN: AtomicU64 = AtomicU64::new(0);

extern "C" fn bench_all_call(_ip: u64, _parent_slot: *mut u64, _op: &FtraceOps) {
    ALL_SEEN.fetch_add(1, Ordering::Relaxed);
}

/// An ops that wants every site: enabling and disabling it patches them all.
static BENCH_ALL_OPS: FtraceOps = FtraceOps::new("bench_all", bench_all_call);

/// (enable ticks, disable ticks, sites) of the cheapest of `UPDATE_REPS`.
fn update_all() -> Result<(u64, u64, u64), String> {
    let n = ftrace::records().len();
    BENCH_ALL_OPS.set_wanted(&alloc::vec![true; n]);
    let mut best: Option<(u64, u64, u64)> = None;
    for _ in 0..UPDATE_REPS {
        let t0 = arch::rdtsc();
        ftrace::register_ftrace_function(&BENCH_ALL_OPS)
            .map_err(|e| format!("register: {:?}", e))?;
        let on = arch::rdtsc().wrapping_sub(t0);
        let sites = ftrace::LAST_UPDATE.lock().1 as u64;
        let seen0 = ALL_SEEN.load(Ordering::Relaxed);
        black_box(ktrace_bench_leaf(black_box(1), 2));
        let seen = ALL_SEEN.load(Ordering::Relaxed) - seen0;
        let ftrace::CheckReport {
            sites: checked,
            bad,
            ..
        } = ftrace::ftrace_check_sites();
        let enabled = ftrace::records().iter().filter(|r| r.enabled()).count();
        let t1 = arch::rdtsc();
        ftrace::unregister_ftrace_function(&BENCH_ALL_OPS)
            .map_err(|e| format!("unregister: {:?}", e))?;
        let off = arch::rdtsc().wrapping_sub(t1);
        let sites_off = ftrace::LAST_UPDATE.lock().1 as u64;
        if bad != 0 || enabled != checked || seen == 0 {
            return Err(format!(
                "{} of {} sites enabled, {} bad, leaf call seen {} times",
                enabled, checked, bad, seen
            ));
        }
        if sites == 0 || sites != sites_off {
            return Err(format!(
                "{} sites enabled but {} disabled",
                sites, sites_off
            ));
        }
        if best.is_none_or(|b| on + off < b.0 + b.1) {
            best = Some((on, off, sites));
        }
    }
    best.ok_or_else(|| String::from("no run"))
}

// ---------------------------------------------------------------------------
// Static keys: a disabled tracepoint, and patching a key's sites

/// The key of [`tracepoint_leaf_off`]'s branch; never enabled.
static TRACEPOINT_OFF_KEY: StaticKey = StaticKey::new();
/// Calls of [`tracepoint_probe`] (must stay 0 while the key is off).
static TRACEPOINT_PROBED: AtomicU64 = AtomicU64::new(0);

/// What the branch calls when taken: a tracepoint's probe call.
#[inline(never)]
fn tracepoint_probe(a: u64, b: u64) {
    TRACEPOINT_PROBED.fetch_add(black_box(a ^ b) | 1, Ordering::Relaxed);
}

/// The benchmark body with a disabled tracepoint in front (what every
/// `trace_NAME(args)` call is while its event is off): the site is a
/// 5-byte NOP and the probe call is out of line.
#[inline(never)]
fn tracepoint_leaf_off(a: u64, b: u64) -> u64 {
    if crate::static_branch_unlikely!(TRACEPOINT_OFF_KEY) {
        tracepoint_probe(a, b);
    }
    a.wrapping_mul(b).rotate_left(11) ^ a ^ (b >> 3)
}

/// [`tracepoint_leaf_off`] without the tracepoint. Both are in this
/// (notrace) module, so both have the same NOPed ftrace site. (Their
/// rotation differs from the leaf's, or the compiler would merge this one
/// with `ktrace_bench_leaf`, whose site is traceable.)
#[inline(never)]
fn tracepoint_leaf_base(a: u64, b: u64) -> u64 {
    a.wrapping_mul(b).rotate_left(11) ^ a ^ (b >> 3)
}

/// An interrupt save/restore pair around the body, through the raw arch
/// operations: the pair without the latency tracers' hooks.
#[inline(never)]
fn irq_pair_leaf_base(a: u64, b: u64) -> u64 {
    let flags = arch::irqflags::arch_local_irq_save();
    let r = a.wrapping_mul(b).rotate_left(13) ^ a ^ (b >> 5);
    arch::irqflags::arch_local_irq_restore(flags);
    r
}

/// The same pair through `crate::irqflags`, as the kernel's code does:
/// each wrapper holds the static branch of its `preemptirq` tracepoint.
#[inline(never)]
fn irq_pair_leaf(a: u64, b: u64) -> u64 {
    let flags = crate::irqflags::local_irq_save();
    let r = a.wrapping_mul(b).rotate_left(13) ^ a ^ (b >> 5);
    crate::irqflags::local_irq_restore(flags);
    r
}

/// A preemption off/on pair around the body without the hooks (Linux:
/// `preempt_disable_notrace`).
#[inline(never)]
fn preempt_pair_leaf_base(a: u64, b: u64) -> u64 {
    crate::sched::preempt_disable_notrace();
    let r = a.wrapping_mul(b).rotate_left(17) ^ a ^ (b >> 7);
    crate::sched::preempt_enable_notrace();
    r
}

/// The same pair through `sched::preempt_disable`/`preempt_enable`.
#[inline(never)]
fn preempt_pair_leaf(a: u64, b: u64) -> u64 {
    crate::sched::preempt_disable();
    let r = a.wrapping_mul(b).rotate_left(17) ^ a ^ (b >> 7);
    crate::sched::preempt_enable();
    r
}

/// The figures of the irq-flag and preemption hooks while nothing listens:
/// each pair with its hooks, and the same pair without them.
fn hook_pairs(rep: &mut Report) {
    use crate::events::preemptirq as tp;
    let keys_on = || {
        tp::trace_irq_disable_enabled()
            || tp::trace_irq_enable_enabled()
            || tp::trace_preempt_disable_enabled()
            || tp::trace_preempt_enable_enabled()
    };
    if keys_on() {
        for name in [
            "irq_pair_base",
            "irq_pair",
            "preempt_pair_base",
            "preempt_pair",
        ] {
            rep.failed(
                name,
                "a preemptirq tracepoint is on (a latency tracer or event)",
            );
        }
        return;
    }
    rep.figure(
        "irq_pair_base",
        call_cost(irq_pair_leaf_base, &mut || {}),
        N,
    );
    rep.figure("irq_pair", call_cost(irq_pair_leaf, &mut || {}), N);
    rep.figure(
        "preempt_pair_base",
        call_cost(preempt_pair_leaf_base, &mut || {}),
        N,
    );
    rep.figure("preempt_pair", call_cost(preempt_pair_leaf, &mut || {}), N);
}

/// [`tracepoint_leaf_off`]'s body behind the real sched_switch
/// tracepoint, as the scheduler fires it: with the event off this is the
/// NOP, with it on one recorded sched_switch per call.
#[inline(never)]
fn event_switch_leaf(a: u64, b: u64) -> u64 {
    if let Some(t) = crate::sched::current() {
        let me = t.trace_info();
        crate::events::sched::trace_sched_switch(false, me, me, 1);
    }
    a.wrapping_mul(b).rotate_left(11) ^ a ^ (b >> 3)
}

/// `tr`'s sched_switch event file, for the cases that hit the real
/// sched_switch tracepoint from [`event_switch_leaf`]. The switch is the
/// running task to itself, a live task as the scheduler's probes expect;
/// but no probe may be registered yet (function_graph's sleep time, the
/// event pid filter): they would act on it.
fn sched_switch_file(tr: &TraceArray) -> Result<&super::events::TraceEventFile, String> {
    let file = tr
        .events
        .file_of(&super::events::sched::SCHED_SWITCH)
        .ok_or_else(|| String::from("no sched_switch event file"))?;
    if crate::events::sched::trace_sched_switch_enabled() {
        return Err(String::from(
            "sched_switch has probes already (function_graph, set_event_pid?)",
        ));
    }
    Ok(file)
}

/// Instructions per recorded sched_switch: [`event_switch_leaf`] with the
/// event on, minus the same with it off (so the figure is what recording
/// adds to the disabled tracepoint, as `call_function` minus `call_nop` is
/// for a function event). Preemption stays off so that no real switch
/// lands in the buffer; every batch must leave exactly N sched_switch
/// records of the bench's two tasks on this CPU.
fn event_sched_switch(tr: &TraceArray) -> Result<(u64, u64), String> {
    use super::events::trace_event_enable_disable;
    let file = sched_switch_file(tr)?;
    let pid = crate::sched::current_pid() as i32;
    crate::sched::preempt_disable();
    let off = call_cost(event_switch_leaf, &mut || {});
    let r = trace_event_enable_disable(file, true)
        .map_err(|e| format!("enable sched_switch: {:?}", e))
        .and_then(|_| {
            let on = call_cost(event_switch_leaf, &mut || tr.buffer.reset());
            let got = this_cpu_entries(tr);
            let first = tr
                .buffer
                .peek_with(arch::cpu_id(), |_, data, _| {
                    read_record::<sched_switch::Record>(data)
                })
                .flatten();
            if got != N {
                Err(format!(
                    "{} events recorded for {} calls, expected {}",
                    got, N, N
                ))
            } else if first.map(|r| (r.common.common_type, r.prev_pid, r.next_pid))
                != Some((sched_switch::CALL.id, pid, pid))
            {
                Err(String::from(
                    "the recorded event is not the bench's sched_switch",
                ))
            } else {
                Ok((on.saturating_sub(off), N))
            }
        });
    let _ = trace_event_enable_disable(file, false);
    crate::sched::preempt_enable();
    tr.buffer.reset();
    r
}

/// Instructions a bare kprobe (a pre-handler that returns at once) adds to
/// a call of the leaf, at the same place as [`kprobe_hit`]'s: the int3
/// path alone.
fn kprobe_int3_bare() -> Result<(u64, u64), String> {
    let (kp, _) = super::trace_kprobe::bench_bare("ktrace_bench_leaf")?;
    crate::sched::preempt_disable();
    let on = call_cost(ktrace_bench_leaf, &mut || {});
    crate::kprobes::unregister_kprobe(&kp);
    let off = call_cost(ktrace_bench_leaf, &mut || {});
    crate::sched::preempt_enable();
    Ok((on.saturating_sub(off), N))
}

/// The measure every probe event row shares, with preemption off (the
/// probes' per-CPU state stays on this CPU): `before` checks the state the
/// unprobed call is measured in, the leaf is timed unprobed, the event
/// `file` enabled, `when_on` checks the state it made, the leaf timed
/// again (the buffer reset before each batch) and must have recorded one
/// event per call, and `after` checks the recorded events. The event is
/// disabled and the probe removed whatever failed. Returns the difference
/// per `N` calls.
fn probe_event_cost(
    tr: &TraceArray,
    file: &super::events::TraceEventFile,
    before: impl FnOnce() -> Result<(), String>,
    when_on: impl FnOnce() -> Result<(), String>,
    after: impl FnOnce(&TraceArray) -> Result<(), String>,
) -> Result<(u64, u64), String> {
    use super::events::trace_event_enable_disable;
    crate::sched::preempt_disable();
    let r = before().and_then(|_| {
        let off = call_cost(ktrace_bench_leaf, &mut || {});
        trace_event_enable_disable(file, true)
            .map_err(|e| format!("enable {}: {:?}", file.call.name, e))
            .and_then(|_| when_on())
            .and_then(|_| {
                let on = call_cost(ktrace_bench_leaf, &mut || tr.buffer.reset());
                match this_cpu_entries(tr) {
                    N => after(tr).map(|_| (on.saturating_sub(off), N)),
                    got => Err(format!(
                        "{} events recorded for {} calls, expected {}",
                        got, N, N
                    )),
                }
            })
    });
    let _ = trace_event_enable_disable(file, false);
    crate::sched::preempt_enable();
    super::trace_kprobe::bench_remove();
    tr.buffer.reset();
    r
}

/// Instructions a probe event adds to a call of the leaf: the int3 probe
/// (`kprobe_events`' `p:` at the leaf's second instruction, so not the
/// function-entry path) with its event enabled and recorded, with no fetch
/// argument or with `%di` (trace_kprobe's `bench_define`); over the same
/// call unprobed.
fn kprobe_hit(tr: &TraceArray, fetch_arg: bool) -> Result<(u64, u64), String> {
    let file = super::trace_kprobe::bench_define("ktrace_bench_leaf", fetch_arg)?;
    probe_event_cost(tr, file, || Ok(()), || Ok(()), |_| Ok(()))
}

/// Instructions a return probe event adds to a call of the leaf:
/// `r:kprobes/bench_kretprobe ktrace_bench_leaf $retval` enabled, one
/// record per call (the entry probe hijacks the return address, the
/// return runs the handler through the return trampoline), over the same
/// call unprobed. Each record's `$retval` must be what the call returned.
fn kretprobe_pair(tr: &TraceArray) -> Result<(u64, u64), String> {
    let file = super::trace_kprobe::bench_define_ret("ktrace_bench_leaf")?;
    // What the batch's first call, ktrace_bench_leaf(0, 7), returns.
    let want = ktrace_bench_leaf(0, 7);
    probe_event_cost(
        tr,
        file,
        || Ok(()),
        || Ok(()),
        |tr| {
            let first = tr
                .buffer
                .peek_with(arch::cpu_id(), |_, data, _| {
                    data.get(24..32)
                        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                })
                .flatten();
            if first == Some(want) {
                Ok(())
            } else {
                Err(format!("$retval {:?}, the call returned {}", first, want))
            }
        },
    )
}

/// Instructions a probe event on the leaf's function-tracing call site
/// adds to a call of the leaf (`kprobe_events`' `p:` at the site's offset:
/// kprobes on ftrace, through `ftrace_regs_caller` and the kprobe ops, no
/// int3), event enabled and recorded, no fetch argument; over the same
/// call unprobed (the site a NOP). The site must call the trampoline while
/// the event is on and be the NOP again after.
fn kprobe_ftrace_hit(tr: &TraceArray) -> Result<(u64, u64), String> {
    let i = leaf_record().ok_or_else(|| String::from("ktrace_bench_leaf has no call site"))?;
    let start = ktrace_bench_leaf as *const () as u64;
    let off = ftrace::records()[i].ip - start;
    let file = super::trace_kprobe::bench_define_at("ktrace_bench_leaf", off, false)?;
    let r = probe_event_cost(
        tr,
        file,
        || expect_site(false),
        || expect_site(true),
        |_| Ok(()),
    );
    r.and_then(|v| expect_site(false).map(|_| v))
}

/// Instructions a bare probe (a pre-handler that returns at once) on the
/// leaf's function-tracing call site adds to a call of the leaf: the
/// kprobes-on-ftrace path alone (`ftrace_regs_caller`, the kprobe ops, the
/// core's handler), as [`kprobe_int3_bare`] is for the int3 path.
fn kprobe_ftrace_bare() -> Result<(u64, u64), String> {
    fn nop(_: &crate::kprobes::Kprobe, _: &mut crate::kprobes::PtRegs) -> bool {
        false
    }
    let i = leaf_record().ok_or_else(|| String::from("ktrace_bench_leaf has no call site"))?;
    let kp = alloc::sync::Arc::new(crate::kprobes::Kprobe::new(
        ftrace::records()[i].ip,
        Some(nop),
        None,
        0,
    ));
    crate::kprobes::register_kprobe(kp.clone())
        .map_err(|e| format!("register at the leaf's site: {:?}", e))?;
    crate::sched::preempt_disable();
    let r = expect_site(true).map(|_| call_cost(ktrace_bench_leaf, &mut || {}));
    crate::kprobes::unregister_kprobe(&kp);
    let off = call_cost(ktrace_bench_leaf, &mut || {});
    crate::sched::preempt_enable();
    let on = r?;
    expect_site(false)?;
    Ok((on.saturating_sub(off), N))
}

/// The kprobe rows alone (`bench kprobe`).
fn kprobe_rows(rep: &mut Report, tr: &TraceArray) {
    rep.result("kprobe_int3_bare", kprobe_int3_bare());
    rep.result("kprobe_hit", kprobe_hit(tr, false));
    rep.result("kprobe_hit_one_arg", kprobe_hit(tr, true));
    rep.result("kretprobe_pair", kretprobe_pair(tr));
    rep.result("kprobe_ftrace_bare", kprobe_ftrace_bare());
    rep.result("kprobe_ftrace_hit", kprobe_ftrace_hit(tr));
}

/// Instructions per sched_switch that the event's filter rejects: the
/// same leaf as [`event_sched_switch`] with the event on and the
/// one-predicate filter `next_pid == 0` (the bench's task is not pid 0),
/// minus the leaf with the event off. Nothing may reach the buffer: the
/// probe tests the record it built on its stack before reserving.
fn event_filtered_out(tr: &TraceArray) -> Result<(u64, u64), String> {
    use super::event_filter::apply_event_filter;
    use super::events::trace_event_enable_disable;
    let file = sched_switch_file(tr)?;
    if crate::sched::current_pid() == 0 {
        return Err(String::from(
            "the bench runs as pid 0, which the filter keeps",
        ));
    }
    apply_event_filter(file, b"next_pid == 0\n").map_err(|e| format!("set the filter: {:?}", e))?;
    crate::sched::preempt_disable();
    let off = call_cost(event_switch_leaf, &mut || {});
    let r = trace_event_enable_disable(file, true)
        .map_err(|e| format!("enable sched_switch: {:?}", e))
        .and_then(|_| {
            let on = call_cost(event_switch_leaf, &mut || tr.buffer.reset());
            match this_cpu_entries(tr) {
                0 => Ok((on.saturating_sub(off), N)),
                got => Err(format!("{} events recorded, the filter rejects all", got)),
            }
        });
    let _ = trace_event_enable_disable(file, false);
    crate::sched::preempt_enable();
    let _ = apply_event_filter(file, b"0\n");
    tr.buffer.reset();
    r
}

/// Instructions per sched_switch hit of a trigger that never fires:
/// [`event_switch_leaf`] with `traceoff if prev_pid == -2` written to the
/// top level's `events/sched/sched_switch/trigger` (as a user writes it,
/// through the file) while the event itself stays off, so that the
/// trigger alone registers the probe, soft-disabled; minus the same leaf
/// with no trigger (the disabled tracepoint). Every batch must leave the
/// buffer empty on this CPU and tracing on.
fn trigger_if_false(tr: &TraceArray) -> Result<(u64, u64), String> {
    const TRIGGER: &str = "/tracing/events/sched/sched_switch/trigger";
    sched_switch_file(tr)?;
    if !tr.tracing_on_flag().load(Ordering::Relaxed) {
        return Err(String::from("tracing is off"));
    }
    crate::sched::preempt_disable();
    let off = call_cost(event_switch_leaf, &mut || {});
    crate::sched::preempt_enable();
    crate::fs::vfs::write_file(TRIGGER, b"traceoff if prev_pid == -2\n")
        .map_err(|e| format!("set the trigger: {:?}", e))?;
    crate::sched::preempt_disable();
    let on = call_cost(event_switch_leaf, &mut || tr.buffer.reset());
    let got = this_cpu_entries(tr);
    let still_on = tr.tracing_on_flag().load(Ordering::Relaxed);
    crate::sched::preempt_enable();
    let removed = crate::fs::vfs::write_file(TRIGGER, b"!traceoff\n");
    tr.buffer.reset();
    if !still_on {
        control::tracing_on();
    }
    if let Err(e) = removed {
        Err(format!("remove the trigger: {:?}", e))
    } else if got != 0 {
        Err(format!("{got} events recorded, expected none"))
    } else if !still_on {
        Err(String::from("the trigger fired"))
    } else {
        Ok((on.saturating_sub(off), N))
    }
}

/// The key of [`bench_key_sites`]'s `JL_SITES` sites.
static BENCH_SITES_KEY: StaticKey = StaticKey::new();
/// Bit `i` set when site `i` of [`bench_key_sites`] took its branch.
static BENCH_SITES_RAN: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];
/// Sites of [`BENCH_SITES_KEY`].
const JL_SITES: u64 = 256;

#[inline(never)]
fn bench_site_ran(i: u64) {
    BENCH_SITES_RAN[(i / 64) as usize].fetch_or(1 << (i % 64), Ordering::Relaxed);
}

/// One function with 64 sites of [`BENCH_SITES_KEY`], numbered from `$base`.
macro_rules! bench_sites_fn {
    ($name:ident, $base:literal) => {
        #[inline(never)]
        fn $name() {
            bench_sites_fn!(@sites $base; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21
                22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47
                48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);
        }
    };
    (@sites $base:literal; $($i:literal)+) => {
        $(
            if crate::static_branch_unlikely!(BENCH_SITES_KEY) {
                bench_site_ran($base + $i);
            }
        )+
    };
}
bench_sites_fn!(bench_key_sites_0, 0);
bench_sites_fn!(bench_key_sites_1, 64);
bench_sites_fn!(bench_key_sites_2, 128);
bench_sites_fn!(bench_key_sites_3, 192);

/// How many of [`BENCH_SITES_KEY`]'s sites took their branch in one call of
/// every site function.
fn bench_key_sites_taken() -> u64 {
    for w in &BENCH_SITES_RAN {
        w.store(0, Ordering::Relaxed);
    }
    bench_key_sites_0();
    bench_key_sites_1();
    bench_key_sites_2();
    bench_key_sites_3();
    BENCH_SITES_RAN
        .iter()
        .map(|w| w.load(Ordering::Relaxed).count_ones() as u64)
        .sum()
}

/// (enable ticks, disable ticks) of [`BENCH_SITES_KEY`] (all its
/// `JL_SITES` sites patched each way), the cheapest of `UPDATE_REPS`, each
/// checked: every site runs its branch after the enable and none after
/// the disable, and jump_label_check finds no bad site.
fn static_key_update() -> Result<(u64, u64), String> {
    let mut best: Option<(u64, u64)> = None;
    for _ in 0..UPDATE_REPS {
        let t0 = arch::rdtsc();
        static_key_enable(&BENCH_SITES_KEY).map_err(|e| format!("enable: {:?}", e))?;
        let on = arch::rdtsc().wrapping_sub(t0);
        let taken_on = bench_key_sites_taken();
        let bad_on = crate::jump_label::jump_label_check().bad;
        let t1 = arch::rdtsc();
        static_key_disable(&BENCH_SITES_KEY).map_err(|e| format!("disable: {:?}", e))?;
        let off = arch::rdtsc().wrapping_sub(t1);
        let taken_off = bench_key_sites_taken();
        let bad_off = crate::jump_label::jump_label_check().bad;
        if taken_on != JL_SITES || taken_off != 0 || bad_on + bad_off != 0 {
            return Err(format!(
                "{} of {} sites taken when on, {} when off, {} bad sites",
                taken_on,
                JL_SITES,
                taken_off,
                bad_on + bad_off
            ));
        }
        if best.is_none_or(|b| on + off < b.0 + b.1) {
            best = Some((on, off));
        }
    }
    best.ok_or_else(|| String::from("no run"))
}

/// Ticks per event to print `trace` over `N` function events on this CPU.
/// The events are the function tracer's (the leaf called from this
/// module), written with fixed time stamps so that the text, and so its
/// cost, does not depend on when the command was typed.
/// Writes `n` function events of the leaf into this CPU's buffer of `tr`
/// (the buffer reset first), with fixed time stamps 1 µs apart from 1 s, so
/// that the printed text does not depend on when the command was typed.
fn write_fn_events(tr: &TraceArray, n: u64) {
    let cpu = arch::cpu_id();
    let site = leaf_record().map(|i| ftrace::records()[i].ip).unwrap_or(0);
    let parent = call_loop as fn(u64, Leaf) -> u64 as usize as u64 + 0x20;
    tr.buffer.reset();
    crate::sched::preempt_disable();
    for i in 0..n {
        let ent = trace_entry(TRACE_FN, tracing_gen_ctx_dec());
        // SAFETY: preemption is off and `cpu` is this CPU.
        if let Some(mut res) = unsafe {
            tr.buffer
                .lock_reserve(cpu, FtraceEntry::SIZE, 1_000_000_000 + i * 1000)
        } {
            let _ = FtraceEntry {
                ent,
                ip: site,
                parent_ip: parent,
            }
            .encode(res.data_mut());
            tr.buffer.unlock_commit(res);
        }
    }
    crate::sched::preempt_enable();
}

/// How many lines of `text` are the leaf's function events.
fn leaf_lines(text: &[u8]) -> u64 {
    core::str::from_utf8(text)
        .unwrap_or("")
        .lines()
        .filter(|l| l.contains("ktrace_bench_leaf <-"))
        .count() as u64
}

/// `format_per_event`: the `trace` text of one function event
/// (`print_trace_events`: merge, symbol look-ups, Linux's line format).
/// The printed lines are checked after the timed batch.
fn format_cost(tr: &TraceArray) -> Result<(u64, u64), String> {
    set_tracer("function")?;
    write_fn_events(tr, N);
    // Keep the events still while they are printed.
    control::tracing_off();
    let mut out = tracer::output::TraceSeq::new();
    let mut t = u64::MAX;
    for _ in 0..REPS {
        out = tracer::output::TraceSeq::with_capacity(N as usize * 80);
        t = t.min(ticks(|| trace::print_trace_events(tr, &mut out)));
    }
    control::tracing_on();
    set_tracer("nop")?;
    let lines = leaf_lines(out.as_bytes());
    if lines != N {
        return Err(format!("{} lines printed for {} events", lines, N));
    }
    Ok((t, N))
}

/// Writes `events` function events, then times reading `path` through the
/// file (open O_NONBLOCK, `read` of 4 KiB until EAGAIN or `cap` bytes),
/// smallest of [`REPS`] batches. Returns the ticks and the bytes read by
/// the last batch.
fn timed_nonblocking_read(
    tr: &TraceArray,
    path: &str,
    events: u64,
    cap: usize,
) -> Result<(u64, Vec<u8>), String> {
    use crate::fs::{vfs, OpenFlags};
    const CHUNK: usize = 4096;
    set_tracer("function")?;
    let mut buf: Vec<u8> = Vec::new();
    let mut file = None;
    let mut got = 0usize;
    let mut err = None;
    let mut t = u64::MAX;
    for _ in 0..REPS {
        control::tracing_on();
        write_fn_events(tr, events);
        control::tracing_off();
        buf = alloc::vec![0u8; cap];
        got = 0;
        file = vfs::open(path, OpenFlags::O_RDONLY | OpenFlags::O_NONBLOCK).ok();
        t = t.min(ticks(|| {
            let Some(f) = file.as_mut() else { return };
            while got + CHUNK <= buf.len() {
                match f.read(&mut buf[got..got + CHUNK]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) => {
                        if e != crate::fs::Errno::EAGAIN {
                            err = Some(e);
                        }
                        break;
                    }
                }
            }
        }));
    }
    drop(file);
    control::tracing_on();
    set_tracer("nop")?;
    if let Some(e) = err {
        return Err(format!("read: {:?}", e));
    }
    buf.truncate(got);
    Ok((t, buf))
}

/// `trace_pipe_per_line`: reading `trace_pipe` through the file, per
/// function event line: consuming reads, the printer, the copy to the
/// reader's buffer.
fn trace_pipe_cost(tr: &TraceArray) -> Result<(u64, u64), String> {
    let (t, buf) = timed_nonblocking_read(tr, "/tracing/trace_pipe", N, N as usize * 200)?;
    let lines = leaf_lines(&buf);
    if lines != N {
        return Err(format!("{} lines read for {} events", lines, N));
    }
    Ok((t, N))
}

/// Function events written for `trace_pipe_raw_per_page`: about 27 full
/// pages of 145 events (28 bytes each) and a part-filled last one.
const RAW_EVENTS: u64 = 4000;

/// `trace_pipe_raw_per_page`: reading this CPU's `trace_pipe_raw` through
/// the file, per page: `ring_buffer_read_page` (the page taken from the
/// buffer, copied into the file's page) and the copy to the reader's
/// buffer. The pages' events are counted after the timed batch.
fn trace_pipe_raw_cost(tr: &TraceArray) -> Result<(u64, u64), String> {
    use tracer::ring_buffer::PAGE_SIZE;
    let path = format!("/tracing/per_cpu/cpu{}/trace_pipe_raw", arch::cpu_id());
    let (t, buf) = timed_nonblocking_read(tr, &path, RAW_EVENTS, 64 * PAGE_SIZE)?;
    let got = buf.len();
    let pages = (got / PAGE_SIZE) as u64;
    let events: u64 = buf
        .chunks_exact(PAGE_SIZE)
        .map(|p| {
            tracer::ring_buffer::decode_page(p)
                .map(|evs| {
                    evs.filter_map(|e| e.ok())
                        .filter(|e| e.kind == tracer::ring_buffer::EventKind::Data)
                        .count() as u64
                })
                .unwrap_or(0)
        })
        .sum();
    if got % PAGE_SIZE != 0 || events != RAW_EVENTS {
        return Err(format!(
            "{} bytes, {} events read for {} written",
            got, events, RAW_EVENTS
        ));
    }
    Ok((t, pages))
}

/// The reading rows (`bench read` prints them alone). The filter holds
/// the leaf only, so that the function tracer, on while the events are
/// written, records nothing else.
fn reading(rep: &mut Report, tr: &TraceArray) {
    if let Err(e) = set_filter("ktrace_bench_leaf") {
        for name in [
            "format_per_event",
            "trace_pipe_per_line",
            "trace_pipe_raw_per_page",
        ] {
            rep.failed(name, &e);
        }
        return;
    }
    rep.result("format_per_event", format_cost(tr));
    rep.result("trace_pipe_per_line", trace_pipe_cost(tr));
    rep.result("trace_pipe_raw_per_page", trace_pipe_raw_cost(tr));
}

// ---------------------------------------------------------------------------
// Costs per call site: what grows with the number of sites (compare a
// `qemu.sh --scale N` kernel with the default one)

/// The glob of [`filter_glob_cost`]: Linux's `*foo*` form (a match
/// anywhere in the name), selecting the bench's leaf alone in any build.
const FILTER_GLOB: &[u8] = b"*bench_leaf*\n";
/// Repetitions of the tracefs-file cases (the cheapest is kept).
const FILE_REPS: usize = 3;

/// Ticks to set `set_ftrace_filter` to [`FILTER_GLOB`] (open with
/// `O_TRUNC`, write, close: matching every record's name, then the
/// update), with no tracer on; the filter is emptied after each run,
/// untimed. Fails unless exactly the leaf was selected.
fn filter_glob_cost() -> Result<(u64, u64), String> {
    use crate::fs::{vfs, OpenFlags};
    let path = "/tracing/set_ftrace_filter";
    set_tracer("nop")?;
    let leaf = leaf_record().ok_or_else(|| String::from("no leaf record"))?;
    let mut best = u64::MAX;
    for _ in 0..FILE_REPS {
        let t0 = arch::rdtsc();
        let mut f = vfs::open(path, OpenFlags::O_WRONLY | OpenFlags::O_TRUNC)
            .map_err(|e| format!("open: {}", e))?;
        f.write_all(FILTER_GLOB)
            .map_err(|e| format!("write: {}", e))?;
        f.close().map_err(|e| format!("close: {}", e))?;
        let t = arch::rdtsc().wrapping_sub(t0);
        drop(f);
        let selected: Vec<usize> = super::global_ops::FILTER.lock().filter.iter().collect();
        set_filter("")?;
        if selected != [leaf] {
            return Err(format!("{} functions selected", selected.len()));
        }
        best = best.min(t);
    }
    Ok((best, ftrace::records().len() as u64))
}

/// Ticks to read `available_filter_functions` to its end in 4 KiB reads
/// (open, reads, close: what `cat` does). Fails unless it lists one line
/// per record.
fn available_filter_functions_cost() -> Result<(u64, u64), String> {
    use crate::fs::{vfs, OpenFlags};
    let n = ftrace::records().len() as u64;
    let mut best = u64::MAX;
    for _ in 0..FILE_REPS {
        let mut lines = 0u64;
        let mut buf = alloc::vec![0u8; 4096];
        let t = ticks(|| {
            let Ok(mut f) = vfs::open("/tracing/available_filter_functions", OpenFlags::O_RDONLY)
            else {
                return;
            };
            while let Ok(k) = f.read(&mut buf) {
                if k == 0 {
                    break;
                }
                lines += buf[..k].iter().filter(|&&b| b == b'\n').count() as u64;
            }
            let _ = f.close();
        });
        if lines != n {
            return Err(format!("{} lines for {} records", lines, n));
        }
        best = best.min(t);
    }
    Ok((best, n))
}

/// Ticks per symbol look-up of the printer ([`trace::KernelSymbols`], the
/// name of an event's `ip`), over `N` call sites spread evenly over the
/// kernel's own records: a `--scale` build's generated functions
/// (`ktrace_scale::*`) are left out, so both builds
/// look up the same functions in tables of different sizes. Each must
/// name its function.
fn kallsyms_lookup_cost() -> Result<(u64, u64), String> {
    use tracer::output::SymbolResolver;
    let recs = ftrace::records();
    let own: Vec<u64> = (0..recs.len())
        .filter(|&i| !ftrace::record_name(i).starts_with("ktrace_scale::"))
        .map(|i| recs[i].ip)
        .collect();
    if own.is_empty() {
        return Err(String::from("no records"));
    }
    let ips: Vec<u64> = (0..N as usize)
        .map(|i| own[i * own.len() / N as usize])
        .collect();
    let syms = trace::KernelSymbols;
    let empty = min_ticks(
        || {},
        || {
            for &ip in &ips {
                black_box(black_box(ip));
            }
        },
    );
    let mut found = 0u64;
    let full = min_ticks(
        || {},
        || {
            found = 0;
            for &ip in &ips {
                found += black_box(syms.lookup(black_box(ip))).is_some() as u64;
            }
        },
    );
    if found != N {
        return Err(format!("{} of {} sites have a symbol", found, N));
    }
    Ok((full.saturating_sub(empty), N))
}

/// Ticks to name every record once ([`ftrace::build_record_names`], what
/// the first read of `available_filter_functions` or glob filter pays
/// before the rows above, which find the names made).
fn record_names_cost() -> Result<(u64, u64), String> {
    let n = ftrace::records().len();
    let mut best = u64::MAX;
    for _ in 0..FILE_REPS {
        let mut names = None;
        let t = ticks(|| names = Some(ftrace::build_record_names()));
        let names = names.unwrap_or_default();
        if names.len() != n || (0..n).any(|i| names[i] != ftrace::record_name(i)) {
            return Err(String::from("names differ from record_name"));
        }
        best = best.min(t);
    }
    Ok((best, n as u64))
}

/// What the command changes, put back afterwards.
struct Saved {
    tracer: &'static str,
    filter: tracer::filter::FtraceFilter,
    tracing_on: bool,
}

fn save() -> Saved {
    Saved {
        tracer: control::current_tracer().name,
        filter: super::global_ops::FILTER.lock().clone(),
        tracing_on: control::tracing_is_on(),
    }
}

fn restore(s: Saved) {
    let _ = set_tracer("nop");
    *super::global_ops::FILTER.lock() = s.filter;
    let _ = functions::apply_filter();
    let _ = set_tracer(s.tracer);
    if s.tracing_on {
        control::tracing_on();
    } else {
        control::tracing_off();
    }
}

/// `bench steps`: the parts of one function event, each timed alone
/// (`bench-step: NAME VALUE UNIT`), for the breakdown in BENCHMARKS.md.
fn steps(rep: &mut Report, tr: &TraceArray) {
    let cpu = arch::cpu_id();
    let empty = min_ticks(
        || {},
        || {
            black_box(empty_loop(N));
        },
    );
    let step = |rep: &mut Report, name: &str, setup: &mut dyn FnMut(), f: &mut dyn FnMut(u64)| {
        let t = min_ticks(setup, || {
            for i in 0..N {
                f(black_box(i));
            }
        });
        let _ = write!(rep.out, "bench-step: ");
        let len = rep.out.len();
        rep.figure(name, t.saturating_sub(empty), N);
        // figure() wrote "bench: " again: drop it.
        rep.out.replace_range(len..len + 7, "");
    };
    crate::sched::preempt_disable();
    step(rep, "trace_clock", &mut || {}, &mut |_| {
        black_box(trace::trace_clock());
    });
    step(
        rep,
        "tracing_gen_ctx_dec+trace_entry",
        &mut || {},
        &mut |_| {
            black_box(trace_entry(TRACE_FN, tracing_gen_ctx_dec()));
        },
    );
    step(rep, "recursion_trylock+unlock", &mut || {}, &mut |_| {
        if let Some(bit) = ftrace::recursion::trylock(ftrace::recursion::FTRACE_START) {
            ftrace::recursion::unlock(black_box(bit));
        }
    });
    step(rep, "encode_ftrace_entry", &mut || {}, &mut |i| {
        let mut buf = [0u8; FtraceEntry::SIZE];
        let ent = tracer::entry::TraceEntry::default();
        let _ = FtraceEntry {
            ent,
            ip: i,
            parent_ip: 1,
        }
        .encode(&mut buf);
        black_box(&buf);
    });
    step(
        rep,
        "lock_reserve+unlock_commit",
        &mut || {
            let _ = tr.buffer.reset_cpu(cpu);
        },
        &mut |i| {
            // SAFETY: preemption is off and this is the current CPU.
            if let Some(res) = unsafe { tr.buffer.lock_reserve(cpu, FtraceEntry::SIZE, i) } {
                tr.buffer.unlock_commit(res);
            }
        },
    );
    step(
        rep,
        "trace_buffer_write",
        &mut || {
            let _ = tr.buffer.reset_cpu(cpu);
        },
        &mut |i| write_event(tr, i),
    );
    crate::sched::preempt_enable();
}

/// Runs every case and returns the `bench:` lines (`bench steps`: the
/// breakdown of one event instead; `bench read`: the reading rows alone).
pub fn run(args: &[String]) -> String {
    let Some(tr) = global_trace() else {
        return String::from("bench: no trace array\n");
    };
    let unit = if detect_icount() {
        Unit::Instructions
    } else {
        Unit::Ns
    };
    let mut rep = Report {
        unit,
        tsc_hz: arch::tsc::tsc_hz(),
        out: String::new(),
    };
    if leaf_record().is_none() {
        rep.failed(
            "call_nop",
            "ktrace_bench_leaf has no call site (not instrumented?)",
        );
        return rep.out;
    }
    match args.first().map(|a| a.as_str()) {
        Some("steps") => {
            control::tracing_on();
            steps(&mut rep, tr);
            tr.buffer.reset();
            return rep.out;
        }
        Some("read") => {
            let saved = save();
            reading(&mut rep, tr);
            restore(saved);
            tr.buffer.reset();
            return rep.out;
        }
        Some("kprobe") => {
            let saved = save();
            if let Err(e) = set_tracer("nop") {
                rep.failed("setup", &e);
                return rep.out;
            }
            control::tracing_on();
            kprobe_rows(&mut rep, tr);
            restore(saved);
            tr.buffer.reset();
            return rep.out;
        }
        Some("allcpu") => {
            let saved = save();
            allcpu(&mut rep, tr);
            restore(saved);
            tr.buffer.reset();
            return rep.out;
        }
        None => {}
        Some(other) => {
            return format!(
                "bench: {}: unknown case (bench [steps|read|kprobe|allcpu])\n",
                other
            );
        }
    }
    // The count the per-site rows divide by (a `--scale N` build has N
    // more).
    let _ = writeln!(rep.out, "bench: sites {} sites", ftrace::records().len());
    let saved = save();
    if let Err(e) = set_tracer("nop") {
        rep.failed("setup", &e);
        return rep.out;
    }
    control::tracing_on();

    let t = call_cost(tracer::bench::bench_leaf_uninstrumented, &mut || {});
    rep.figure("call_uninstrumented", t, N);
    let r = expect_site(false).map(|_| (call_cost(ktrace_bench_leaf, &mut || {}), N));
    if cfg!(ktrace_fentry) {
        rep.result("call_nop_fentry", r.clone());
    }
    rep.result("call_nop", r);

    rep.result(
        "call_function",
        tracer_case(tr, "function", "ktrace_bench_leaf", true, 1),
    );
    rep.result(
        "call_function_filtered_out",
        tracer_case(tr, "function", other_function(), true, 0),
    );
    rep.result(
        "call_function_tracing_off",
        tracer_case(tr, "function", "ktrace_bench_leaf", false, 0),
    );
    rep.result(
        "call_graph",
        tracer_case(tr, "function_graph", "ktrace_bench_leaf", true, 2),
    );
    rep.result(
        "call_graph_tracing_off",
        tracer_case(tr, "function_graph", "ktrace_bench_leaf", false, 0),
    );
    let _ = set_filter("");

    rep.result("rb_event_1cpu", rb_cost(tr).map(|t| (t, N)));

    // A disabled tracepoint against the same function without one.
    let base = call_cost(tracepoint_leaf_base, &mut || {});
    rep.figure("tracepoint_off_base", base, N);
    let probed = TRACEPOINT_PROBED.load(Ordering::Relaxed);
    let off = call_cost(tracepoint_leaf_off, &mut || {});
    if TRACEPOINT_OFF_KEY.is_enabled() || TRACEPOINT_PROBED.load(Ordering::Relaxed) != probed {
        rep.failed("tracepoint_off", "the disabled tracepoint's probe ran");
    } else {
        rep.figure("tracepoint_off", off, N);
    }
    hook_pairs(&mut rep);

    rep.result("event_sched_switch", event_sched_switch(tr));
    rep.result("event_filtered_out", event_filtered_out(tr));
    rep.result("trigger_if_false", trigger_if_false(tr));
    kprobe_rows(&mut rep, tr);

    match update_all() {
        Ok((on, off, sites)) => {
            rep.figure("enable_all_per_site", on, sites);
            rep.figure("disable_all_per_site", off, sites);
        }
        Err(e) => {
            rep.failed("enable_all_per_site", &e);
            rep.failed("disable_all_per_site", &e);
        }
    }
    match static_key_update() {
        Ok((on, off)) => {
            rep.figure("event_enable_all_per_site", on, JL_SITES);
            rep.figure("event_disable_all_per_site", off, JL_SITES);
        }
        Err(e) => {
            rep.failed("event_enable_all_per_site", &e);
            rep.failed("event_disable_all_per_site", &e);
        }
    }
    let nrec = ftrace::records().len() as u64;
    rep.figure(
        "boot_nop_per_site",
        ftrace::BOOT_NOP_TICKS.load(Ordering::Relaxed),
        nrec,
    );

    reading(&mut rep, tr);
    // The hist case lives with the hist trigger (super::hist), run with
    // this module's loop; after the call cases, since its table changes
    // the heap.
    rep.result(
        "hist_update",
        sched_switch_file(tr).and_then(|file| {
            super::hist::bench_hist_update(
                tr,
                file,
                N,
                event_switch_leaf,
                call_cost,
                this_cpu_entries,
            )
        }),
    );

    // After the cases above: these allocate and free large texts, which
    // would change where their allocations land.
    rep.result("filter_glob_per_site", filter_glob_cost());
    rep.result(
        "available_filter_functions_per_site",
        available_filter_functions_cost(),
    );
    rep.result("kallsyms_lookup", kallsyms_lookup_cost());
    rep.result("record_names_per_site", record_names_cost());

    restore(saved);
    tr.buffer.reset();
    rep.out
}
