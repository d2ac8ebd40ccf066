//! The function profiler: how often each function was called and how long
//! it took, per CPU (Linux: kernel/trace/ftrace.c, the
//! CONFIG_FUNCTION_PROFILER part, with CONFIG_FUNCTION_GRAPH_TRACER).
//!
//! Writing a non-zero number to `function_profile_enabled` zeroes the
//! statistics and registers [`FPROFILER_OPS`] with the function-graph core:
//! its ftrace_ops is on the global filter (so `set_ftrace_filter` and
//! `set_ftrace_notrace` choose the functions, as for the function tracer).
//! - The entry hook (`profile_graph_entry`) finds the record of the traced
//!   call site, adds one to this CPU's hit counter for it, zeroes the
//!   frame's callees' time and asks for the return.
//! - The return hook (`profile_graph_return`) adds the call's duration
//!   (`rettime - calltime`) and its square to this CPU's sums for the
//!   function; with the function_graph tracer's `graph-time` option off,
//!   the callees' time is taken out (`tracer::function_profile::self_time`).
//!
//! The graph core serves one user at a time, as Linux 6.1's: enabling the
//! profiler while function_graph (or a latency tracer with `display-graph`)
//! holds it fails with EBUSY, and so does selecting function_graph while
//! the profiler runs. Writing 0 unregisters: the statistics stay as they
//! were, and `trace_stat/functionN` keeps showing them until the next enable.
//!
//! The statistics are preallocated when the profiler is first enabled: one
//! record per CPU per call site (Linux preallocates one profile record per
//! traced function per CPU too), so the hooks never allocate and never take
//! a lock: they only update records of their own CPU.
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use spin::{Mutex, Once};

use super::fgraph::{self, FgraphOps, FtraceGraphEnt, FtraceGraphRet, ShadowStack};
use super::ftrace::{self, FtraceOps};
use super::global_ops;
use crate::arch::percpu;
use crate::fs::tracefs::{self, Dentry, TRACE_MODE_READ, TRACE_MODE_WRITE};
use crate::fs::Errno;
use tracer::function_profile::ProfileRec;

/// The profiler's ftrace_ops, on the global filter's records (Linux:
/// fprofiler_ops.ops with ftrace_ops_set_global_filter). Not gated by
/// `tracing_on`: the profiler counts whatever the ring buffer does.
static PROFILE_OPS: FtraceOps =
    FtraceOps::new("profile", fgraph::ftrace_graph_entry_func).with_hash(&global_ops::GLOBAL_HASH);

/// The profiler's hooks in the graph core (Linux: fprofiler_ops).
static FPROFILER_OPS: FgraphOps = FgraphOps {
    entryfunc: profile_graph_entry,
    retfunc: profile_graph_return,
    ops: &PROFILE_OPS,
    return_handler: None,
};

/// The statistics: `nr_cpus` rows of one record per call site, made at
/// the first enable (Linux: ftrace_profile_init's pages).
static COUNTS: Once<Counts> = Once::new();

/// One CPU's record of one call site (Linux: struct ftrace_profile),
/// written only by its CPU with preemption off; atomics for the readers.
#[derive(Default)]
struct Rec {
    hits: AtomicU64,
    time: AtomicU64,
    time_squared: AtomicU64,
}

impl Rec {
    fn get(&self) -> ProfileRec {
        ProfileRec {
            hits: self.hits.load(Ordering::Relaxed),
            time: self.time.load(Ordering::Relaxed),
            time_squared: self.time_squared.load(Ordering::Relaxed),
        }
    }

    fn clear(&self) {
        self.hits.store(0, Ordering::Relaxed);
        self.time.store(0, Ordering::Relaxed);
        self.time_squared.store(0, Ordering::Relaxed);
    }
}

struct Counts {
    records: usize,
    recs: Vec<Rec>,
}

impl Counts {
    fn cpu(&self, cpu: usize) -> &[Rec] {
        self.recs
            .get(cpu * self.records..(cpu + 1) * self.records)
            .unwrap_or(&[])
    }
}

/// `function_profile_enabled` (Linux: ftrace_profile_enabled); the mutex
/// serialises enabling and disabling (Linux: ftrace_profile_lock).
static ENABLED: AtomicBool = AtomicBool::new(false);
static PROFILE_LOCK: Mutex<()> = Mutex::new(());

/// This CPU's record of call site `ip`, if the profiler has records.
#[inline(always)]
fn this_cpu_rec(ip: u64) -> Option<&'static Rec> {
    let (c, i) = (COUNTS.get()?, ftrace::record_index(ip)?);
    c.cpu(crate::arch::cpu_id()).get(i)
}

/// The entry hook (Linux: profile_graph_entry and function_profile_call):
/// one more hit for the function on this CPU, the frame's callees' time
/// zeroed; the return is wanted. The graph core holds the recursion lock
/// (preemption off).
fn profile_graph_entry(trace: &FtraceGraphEnt, rs: &ShadowStack) -> bool {
    if !ENABLED.load(Ordering::Relaxed) {
        return false;
    }
    if let Some(r) = this_cpu_rec(trace.func) {
        // Only this CPU writes this record; the atomic is for the readers.
        r.hits
            .store(r.hits.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
    rs.set_subtime(trace.depth as usize, 0);
    true
}

/// The return hook (Linux: profile_graph_return): the call's time, and
/// its square, added to this CPU's record of the function.
fn profile_graph_return(trace: &FtraceGraphRet, rs: &ShadowStack) {
    if !ENABLED.load(Ordering::Relaxed) || trace.calltime == 0 {
        return;
    }
    let depth = trace.depth as usize;
    let duration = trace.rettime.wrapping_sub(trace.calltime);
    let mut parent = depth.checked_sub(1).map(|p| rs.subtime(p));
    let t = tracer::function_profile::self_time(
        fgraph::fgraph_graph_time(),
        duration,
        parent.as_mut(),
        rs.subtime(depth),
    );
    if let (Some(p), Some(v)) = (depth.checked_sub(1), parent) {
        rs.set_subtime(p, v);
    }
    let flags = crate::arch::irqflags::arch_local_irq_save();
    if let Some(r) = this_cpu_rec(trace.func) {
        let mut rec = r.get();
        rec.add_time(t);
        r.time.store(rec.time, Ordering::Relaxed);
        r.time_squared.store(rec.time_squared, Ordering::Relaxed);
    }
    crate::arch::irqflags::arch_local_irq_restore(flags);
}

/// Makes the records if they are not yet (ENOMEM if they cannot be).
fn counts() -> Result<&'static Counts, Errno> {
    if let Some(c) = COUNTS.get() {
        return Ok(c);
    }
    let records = ftrace::records().len();
    let n = records
        .checked_mul(percpu::nr_cpus())
        .ok_or(Errno::ENOMEM)?;
    let mut recs = Vec::new();
    recs.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    recs.resize_with(n, Rec::default);
    Ok(COUNTS.call_once(|| Counts { records, recs }))
}

/// A write to `function_profile_enabled` (Linux: ftrace_profile_write):
/// enabling resets the statistics and registers with the graph core
/// (EBUSY while another user holds it), disabling unregisters. If
/// registering fails, the profiler stays off.
fn profile_store(text: &str) -> Result<(), Errno> {
    let want = tracer::function_profile::parse_enabled(text.as_bytes())?;
    let _g = PROFILE_LOCK.lock();
    if want == ENABLED.load(Ordering::Relaxed) {
        return Ok(());
    }
    if want {
        let c = counts()?;
        for r in &c.recs {
            r.clear();
        }
        global_ops::ftrace_update_global_hash();
        ENABLED.store(true, Ordering::Relaxed);
        if let Err(e) = fgraph::register_ftrace_graph(&FPROFILER_OPS) {
            ENABLED.store(false, Ordering::Relaxed);
            return Err(e);
        }
    } else {
        ENABLED.store(false, Ordering::Relaxed);
        fgraph::unregister_ftrace_graph(&FPROFILER_OPS);
    }
    Ok(())
}

/// `trace_stat/function<cpu>` (Linux: function_stat_headers and
/// function_stat_show over the records sorted by function_stat_cmp).
fn function_stat_show(cpu: usize) -> String {
    let recs = COUNTS.get().map(|c| c.cpu(cpu)).unwrap_or(&[]);
    tracer::function_profile::show(
        recs.iter().map(Rec::get),
        |i| ftrace::record_name(i).into(),
        super::max_trace::tracing_thresh(),
    )
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
