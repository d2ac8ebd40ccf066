//! The function profiler: how often each function was called, per CPU
//! (Linux: kernel/trace/ftrace.c, the CONFIG_FUNCTION_PROFILER part).
//!
//! Writing a non-zero number to `function_profile_enabled` zeroes the
//! counters and registers [`PROFILE_OPS`], an ftrace_ops on the global
//! filter (so `set_ftrace_filter` and `set_ftrace_notrace` choose the
//! functions, as for the function tracer). Its callback finds the record
//! of the traced call site and adds one to this CPU's counter for it.
//! Writing 0 unregisters the ops: the counters stay as they were, and
//! `trace_stat/functionN` keeps showing them until the next enable.
//!
//! The counters are preallocated when the profiler is first enabled: one
//! per CPU per record (Linux preallocates one profile record per traced
//! function per CPU too), so the callback never allocates and never takes
//! a lock: it only increments a counter of its own CPU.
//!
//! Linux adds the Time, Avg and s^2 columns when function_graph is built
//! in, through a second fgraph user; this profiler counts hits only, and
//! prints what Linux prints without function_graph.
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use spin::{Mutex, Once};

use super::ftrace::{self, recursion, FtraceOps};
use super::global_ops;
use crate::arch::percpu;
use crate::fs::tracefs::{self, Dentry, TRACE_MODE_READ, TRACE_MODE_WRITE};
use crate::fs::Errno;

/// The profiler's ops, on the global filter's records (Linux:
/// ftrace_profile_ops with ftrace_ops_set_global_filter).
static PROFILE_OPS: FtraceOps =
    FtraceOps::new("profile", function_profile_call).with_hash(&global_ops::GLOBAL_HASH);

/// The counters: `nr_cpus` rows of one counter per record, made at the
/// first enable (Linux: ftrace_profile_init's pages).
static COUNTS: Once<Counts> = Once::new();

struct Counts {
    records: usize,
    hits: Vec<AtomicU64>,
}

impl Counts {
    fn cpu(&self, cpu: usize) -> &[AtomicU64] {
        self.hits
            .get(cpu * self.records..(cpu + 1) * self.records)
            .unwrap_or(&[])
    }
}

/// `function_profile_enabled` (Linux: ftrace_profile_enabled); the mutex
/// serialises enabling and disabling (Linux: ftrace_profile_lock).
static ENABLED: AtomicBool = AtomicBool::new(false);
static PROFILE_LOCK: Mutex<()> = Mutex::new(());

/// The record index of call site `ip`: a binary search written here,
/// because this module is never traced while a generic from `core`
/// instantiated in it might be.
#[inline(always)]
fn record_of(ip: u64) -> Option<usize> {
    let recs = ftrace::records();
    let (mut lo, mut hi) = (0, recs.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let r = recs[mid].ip;
        if r == ip {
            return Some(mid);
        }
        if r < ip {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    None
}

/// The callback (Linux: function_profile_call): one more hit for `ip` on
/// this CPU.
extern "C" fn function_profile_call(ip: u64, _parent_slot: *mut u64, _op: &FtraceOps) {
    let Some(bit) = recursion::trylock(recursion::FTRACE_START) else {
        return;
    };
    if let (Some(c), Some(i)) = (COUNTS.get(), record_of(ip)) {
        if let Some(h) = c.cpu(crate::arch::cpu_id()).get(i) {
            // Preemption is off (trylock): only this CPU writes this
            // counter; the atomic is for the readers on other CPUs.
            h.store(h.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }
    recursion::unlock(bit);
}

/// Makes the counters if they are not yet (ENOMEM if they cannot be).
fn counts() -> Result<&'static Counts, Errno> {
    if let Some(c) = COUNTS.get() {
        return Ok(c);
    }
    let records = ftrace::records().len();
    let n = records
        .checked_mul(percpu::nr_cpus())
        .ok_or(Errno::ENOMEM)?;
    let mut hits = Vec::new();
    hits.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    hits.resize_with(n, || AtomicU64::new(0));
    Ok(COUNTS.call_once(|| Counts { records, hits }))
}

/// A write to `function_profile_enabled` (Linux: ftrace_profile_write):
/// enabling resets the counters and registers the ops, disabling
/// unregisters it. If registering fails, the profiler stays off.
fn profile_store(text: &str) -> Result<(), Errno> {
    let want = tracer::function_profile::parse_enabled(text.as_bytes())?;
    let _g = PROFILE_LOCK.lock();
    if want == ENABLED.load(Ordering::Relaxed) {
        return Ok(());
    }
    if want {
        let c = counts()?;
        for h in &c.hits {
            h.store(0, Ordering::Relaxed);
        }
        global_ops::ftrace_update_global_hash();
        ftrace::register_ftrace_function(&PROFILE_OPS)?;
    } else {
        // Linux ignores the result too: the ops is off the list either way.
        let _ = ftrace::unregister_ftrace_function(&PROFILE_OPS);
    }
    ENABLED.store(want, Ordering::Relaxed);
    Ok(())
}

/// `trace_stat/function<cpu>` (Linux: function_stat_headers and
/// function_stat_show over the sorted records).
fn function_stat_show(cpu: usize) -> String {
    let hits = COUNTS.get().map(|c| c.cpu(cpu)).unwrap_or(&[]);
    tracer::function_profile::show(hits.iter().map(|h| h.load(Ordering::Relaxed)), |i| {
        ftrace::record_name(i).into()
    })
}

/// Creates `function_profile_enabled` and `trace_stat/functionN`, one file
/// per CPU (Linux: ftrace_profile_tracefs).
pub fn init(root: &Dentry) -> Result<(), Errno> {
    tracefs::create_show_store(
        root,
        "function_profile_enabled",
        TRACE_MODE_WRITE,
        || alloc::format!("{}\n", ENABLED.load(Ordering::Relaxed) as u32),
        Some(profile_store),
    )?;
    let dir = tracefs::create_dir(root, "trace_stat")?;
    for cpu in 0..percpu::nr_cpus() {
        tracefs::create_show_store(
            &dir,
            &alloc::format!("function{cpu}"),
            TRACE_MODE_READ,
            move || function_stat_show(cpu),
            None::<fn(&str) -> Result<(), Errno>>,
        )?;
    }
    Ok(())
}
