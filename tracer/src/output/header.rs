//! The default header at the top of the `trace` file (Linux trace.c:
//! `trace_default_header()`, `print_event_info()`,
//! `print_func_help_header[_irq]()`, `print_trace_header()`,
//! `print_lat_help_header()`). A tracer with its own header (Linux's
//! `print_header` hook) prints it instead; the
//! latency banner [`print_trace_header`] is shared. An empty `snapshot`
//! file shows [`print_snapshot_help`] instead.
//!
//! `trace_pipe` prints no header at all.

use alloc::string::String;
use core::fmt::Write;

use super::config::{truncate_str, OutputConfig};
use super::format::seq_print_ip_sym;
use super::seq::TraceSeq;
use crate::options::TraceOption;

/// Buffer counters shown in the header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferStats {
    /// Events still in the buffers (`entries-in-buffer`).
    pub entries: u64,
    /// Events written, including overwritten ones (`entries + overrun`).
    pub written: u64,
    /// `num_online_cpus()` (`#P:`).
    pub online_cpus: u32,
}

/// What the latency-format header (`print_trace_header()`) shows; the
/// function and nop tracers leave most of it at zero.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencyInfo {
    /// `UTS_RELEASE` of the running kernel.
    pub release: String,
    /// `data->saved_latency` in ns.
    pub saved_latency_ns: u64,
    /// `buf->cpu`.
    pub cpu: u32,
    /// Preemption model: `server`, `desktop`, `preempt`, `preempt_rt` or
    /// `unknown`.
    pub preempt_model: &'static str,
    /// Task that hit the latency (`data->comm`, `data->pid`, ...).
    pub comm: String,
    pub pid: i32,
    pub uid: u32,
    pub nice: i64,
    pub policy: i64,
    pub rt_priority: i64,
    /// `data->critical_start` / `critical_end`: where the irqsoff family's
    /// section began and ended (the `=> started at:` / `=> ended at:`
    /// lines, printed only when `critical_start` is not 0).
    pub critical_start: u64,
    pub critical_end: u64,
}

/// `print_event_info()`: the entries line and a `#` line.
pub fn print_event_info(out: &mut TraceSeq, stats: &BufferStats) {
    let _ = writeln!(
        out,
        "# entries-in-buffer/entries-written: {}/{}   #P:{}",
        stats.entries, stats.written, stats.online_cpus
    );
    out.push_str("#\n");
}

/// `print_func_help_header_irq()` (irq-info on; 6.6 legend with
/// `irqs-off/BH-disabled` and `migrate-disable`).
pub fn print_func_help_header_irq(out: &mut TraceSeq, stats: &BufferStats, tgid: bool) {
    const SPACE: &str = "            ";
    let prec = if tgid { 12 } else { 2 };
    let sp = &SPACE[..prec];
    print_event_info(out, stats);
    let _ = writeln!(
        out,
        "#                            {}  _-----=> irqs-off/BH-disabled",
        sp
    );
    let _ = writeln!(
        out,
        "#                            {} / _----=> need-resched",
        sp
    );
    let _ = writeln!(
        out,
        "#                            {}| / _---=> hardirq/softirq",
        sp
    );
    let _ = writeln!(
        out,
        "#                            {}|| / _--=> preempt-depth",
        sp
    );
    let _ = writeln!(
        out,
        "#                            {}||| / _-=> migrate-disable",
        sp
    );
    let _ = writeln!(out, "#                            {}|||| /     delay", sp);
    let _ = writeln!(
        out,
        "#           TASK-PID  {} CPU#  |||||  TIMESTAMP  FUNCTION",
        &"     TGID   "[..prec]
    );
    let _ = writeln!(
        out,
        "#              | |    {}   |   |||||     |         |",
        &"       |    "[..prec]
    );
}

/// `print_func_help_header()` (irq-info off).
pub fn print_func_help_header(out: &mut TraceSeq, stats: &BufferStats, tgid: bool) {
    print_event_info(out, stats);
    let _ = writeln!(
        out,
        "#           TASK-PID    {} CPU#     TIMESTAMP  FUNCTION",
        if tgid { "   TGID   " } else { "" }
    );
    let _ = writeln!(
        out,
        "#              | |      {}   |         |         |",
        if tgid { "     |    " } else { "" }
    );
}

/// `print_lat_help_header()`.
pub fn print_lat_help_header(out: &mut TraceSeq) {
    out.push_str(
        "#                    _------=> CPU#            \n\
         #                   / _-----=> irqs-off/BH-disabled\n\
         #                  | / _----=> need-resched    \n\
         #                  || / _---=> hardirq/softirq \n\
         #                  ||| / _--=> preempt-depth   \n\
         #                  |||| / _-=> migrate-disable \n\
         #                  ||||| /     delay           \n\
         #  cmd     pid     |||||| time  |   caller     \n\
         #     \\   /        ||||||  \\    |    /       \n",
    );
}

/// `print_trace_header()`: the latency-format banner of `cfg.tracer`.
pub fn print_trace_header(
    out: &mut TraceSeq,
    cfg: &OutputConfig<'_>,
    stats: &BufferStats,
    lat: &LatencyInfo,
) {
    let _ = writeln!(
        out,
        "# {} latency trace v1.1.5 on {}",
        cfg.tracer.name(),
        lat.release
    );
    out.push_str("# --------------------------------------------------------------------\n");
    let model = if lat.preempt_model.is_empty() {
        "unknown"
    } else {
        lat.preempt_model
    };
    let _ = writeln!(
        out,
        "# latency: {} us, #{}/{}, CPU#{} | (M:{} VP:0, KP:0, SP:0 HP:0 #P:{})",
        lat.saved_latency_ns / 1000,
        stats.entries,
        stats.written,
        lat.cpu,
        model,
        stats.online_cpus
    );
    out.push_str("#    -----------------\n");
    let _ = writeln!(
        out,
        "#    | task: {}-{} (uid:{} nice:{} policy:{} rt_prio:{})",
        truncate_str(&lat.comm, 16),
        lat.pid,
        lat.uid,
        lat.nice,
        lat.policy,
        lat.rt_priority
    );
    out.push_str("#    -----------------\n");
    if lat.critical_start != 0 {
        out.push_str("#  => started at: ");
        seq_print_ip_sym(out, cfg.syms, lat.critical_start, cfg.options);
        out.push_str("\n#  => ended at:   ");
        seq_print_ip_sym(out, cfg.syms, lat.critical_end, cfg.options);
        out.push_str("\n#\n");
    }
    out.push_str("#\n");
}

/// `trace_default_header()`.
pub fn trace_default_header(
    out: &mut TraceSeq,
    cfg: &OutputConfig<'_>,
    stats: &BufferStats,
    lat: &LatencyInfo,
    empty: bool,
) {
    let o = cfg.options;
    if !o.has(TraceOption::ContextInfo) {
        return;
    }
    if o.has(TraceOption::LatencyFmt) {
        if empty {
            return;
        }
        print_trace_header(out, cfg, stats, lat);
        if !o.has(TraceOption::Verbose) {
            print_lat_help_header(out);
        }
    } else if !o.has(TraceOption::Verbose) {
        let tgid = o.has(TraceOption::RecordTgid);
        if o.has(TraceOption::IrqInfo) {
            print_func_help_header_irq(out, stats, tgid);
        } else {
            print_func_help_header(out, stats, tgid);
        }
    }
}

/// Which `snapshot` file is read and the state of the spare buffer, for
/// [`print_snapshot_help`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotHelp {
    /// The spare buffer is allocated (Linux: `tr->allocated_snapshot`).
    pub allocated: bool,
    /// `per_cpu/cpuN/snapshot` rather than the top `snapshot`.
    pub per_cpu: bool,
}

/// `print_snapshot_help()`: what an empty `snapshot` file shows after the
/// `# tracer:` lines, instead of the column header. The per-CPU text is
/// Linux's with `CONFIG_RING_BUFFER_ALLOW_SWAP` (a CPU's buffer can be
/// swapped alone).
pub fn print_snapshot_help(out: &mut TraceSeq, help: SnapshotHelp) {
    out.push_str(if help.allocated {
        "#\n# * Snapshot is allocated *\n#\n"
    } else {
        "#\n# * Snapshot is freed *\n#\n"
    });
    out.push_str("# Snapshot commands:\n");
    if help.per_cpu {
        out.push_str("# echo 0 > snapshot : Invalid for per_cpu snapshot file.\n");
        out.push_str(
            "# echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n\
             #                      Takes a snapshot of the main buffer for this cpu.\n",
        );
        out.push_str(
            "# echo 2 > snapshot : Clears this cpu's snapshot buffer (but does not allocate)\n",
        );
    } else {
        out.push_str(
            "# echo 0 > snapshot : Clears and frees snapshot buffer\n\
             # echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n\
             #                      Takes a snapshot of the main buffer.\n\
             # echo 2 > snapshot : Clears snapshot buffer (but does not allocate or free)\n",
        );
    }
    out.push_str(
        "#                      (Doesn't have to be '2' works with any number that\n\
         #                       is not a '0' or '1')\n",
    );
}
