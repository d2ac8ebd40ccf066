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

use super::control;
use super::ftrace::{self, FtraceOps};
use super::functions;
use super::trace::{
    self, global_trace, trace_buffer_write, trace_entry, tracing_gen_ctx_dec, TraceArray,
};
use crate::arch::{self, percpu::MAX_CPUS};

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
    arch::without_interrupts(|| {
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

/// Writers on every CPU at once: each CPU's cost per event; the largest.
fn rb_allcpu(tr: &'static TraceArray) -> Result<u64, String> {
    let nr = arch::nr_cpus().min(MAX_CPUS);
    let ready = Arc::new(AtomicUsize::new(0));
    let results: Arc<Mutex<Vec<Result<u64, String>>>> = Arc::new(Mutex::new(Vec::new()));
    let run = {
        let ready = ready.clone();
        let results = results.clone();
        move || {
            // Start together (bounded: a CPU that never comes is an error).
            ready.fetch_add(1, Ordering::SeqCst);
            let t0 = arch::rdtsc();
            while ready.load(Ordering::SeqCst) < nr {
                if arch::rdtsc().wrapping_sub(t0) > 20_000_000_000 {
                    break;
                }
                core::hint::spin_loop();
            }
            let r = rb_cost(tr);
            arch::without_interrupts(|| results.lock().push(r));
        }
    };
    let handles: Vec<_> = (1..nr)
        .map(|cpu| {
            let run = run.clone();
            crate::sched::spawn_on(cpu, "bench_rb", run)
        })
        .collect();
    run();
    for h in handles {
        h.join();
    }
    let results = core::mem::take(&mut *results.lock());
    if results.len() != nr {
        return Err(format!("{} of {} CPUs reported", results.len(), nr));
    }
    let mut worst = 0;
    for r in results {
        worst = worst.max(r?);
    }
    Ok(worst)
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

/// Ticks per event to print `trace` over `N` function events on this CPU.
/// The events are the function tracer's (the leaf called from this
/// module), written with fixed time stamps so that the text, and so its
/// cost, does not depend on when the command was typed.
fn format_cost(tr: &TraceArray) -> Result<(u64, u64), String> {
    set_tracer("function")?;
    let cpu = arch::cpu_id();
    let site = leaf_record().map(|i| ftrace::records()[i].ip).unwrap_or(0);
    let parent = call_loop as fn(u64, Leaf) -> u64 as usize as u64 + 0x20;
    tr.buffer.reset();
    crate::sched::preempt_disable();
    for i in 0..N {
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
    // Keep the events still while they are printed.
    control::tracing_off();
    let mut lines = 0;
    let t = min_ticks(
        || {},
        || {
            let mut out = tracer::output::TraceSeq::with_capacity(N as usize * 80);
            trace::print_trace_events(tr, &mut out);
            let text = out.as_str().unwrap_or("");
            lines = text
                .lines()
                .filter(|l| l.contains("ktrace_bench_leaf <-"))
                .count() as u64;
        },
    );
    control::tracing_on();
    set_tracer("nop")?;
    if lines != N {
        return Err(format!("{} lines printed for {} events", lines, N));
    }
    Ok((t, N))
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
/// breakdown of one event instead).
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
    if args.first().map(|a| a.as_str()) == Some("steps") {
        control::tracing_on();
        steps(&mut rep, tr);
        tr.buffer.reset();
        return rep.out;
    }
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
    rep.result("rb_event_allcpu", rb_allcpu(tr).map(|t| (t, N)));

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
    let nrec = ftrace::records().len() as u64;
    rep.figure(
        "boot_nop_per_site",
        ftrace::BOOT_NOP_TICKS.load(Ordering::Relaxed),
        nrec,
    );

    rep.result("format_per_event", format_cost(tr));

    restore(saved);
    tr.buffer.reset();
    rep.out
}
