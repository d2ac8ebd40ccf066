//! Helpers shared by the output tests: a symbol table, a task table and
//! record builders.
#![allow(dead_code)]

use std::collections::HashMap;

use tracer::entry::*;
use tracer::graph::{GraphOutput, LatencyGraphOutput};
use tracer::options::{TraceOptions, Tracer};
use tracer::output::header::{BufferStats, LatencyInfo};
use tracer::output::merge::{Merger, TraceRecord};
use tracer::output::{
    IterState, OutputConfig, SymbolResolver, TaskNames, TraceIter, TraceSeq, TracerOutput,
};

/// Symbols as (start, size, name).
pub struct Syms(pub Vec<(u64, u64, String)>);

impl Syms {
    /// Functions laid out one after another from 0xffffffff81000000, each
    /// 0x100 bytes long. Returns the table and the start addresses.
    pub fn layout(names: &[&str]) -> (Syms, Vec<u64>) {
        let mut v = Vec::new();
        let mut addrs = Vec::new();
        let mut a = 0xffff_ffff_8100_0000u64;
        for n in names {
            v.push((a, 0x100, n.to_string()));
            addrs.push(a);
            a += 0x100;
        }
        (Syms(v), addrs)
    }
    /// Address of a symbol by name.
    pub fn addr(&self, name: &str) -> u64 {
        self.0
            .iter()
            .find(|s| s.2 == name)
            .map(|s| s.0)
            .expect("no such symbol")
    }
}

impl SymbolResolver for Syms {
    fn lookup(&self, addr: u64) -> Option<(&str, u64, u64)> {
        self.0
            .iter()
            .find(|(a, s, _)| *a <= addr && addr < a + s)
            .map(|(a, s, n)| (n.as_str(), addr - a, *s))
    }
}

/// pid -> comm.
#[derive(Default)]
pub struct Tasks(pub HashMap<i32, String>, pub HashMap<i32, i32>);

impl Tasks {
    pub fn with(list: &[(i32, &str)]) -> Tasks {
        Tasks(
            list.iter().map(|(p, c)| (*p, c.to_string())).collect(),
            HashMap::new(),
        )
    }
}

impl TaskNames for Tasks {
    fn comm(&self, pid: i32) -> Option<&str> {
        self.0.get(&pid).map(|s| s.as_str())
    }
    fn tgid(&self, pid: i32) -> Option<i32> {
        self.1.get(&pid).copied()
    }
}

pub fn hdr(pid: i32, flags: u8, pc: u8) -> TraceEntry {
    TraceEntry {
        type_: 0,
        flags,
        preempt_count: pc,
        pid,
    }
}

pub fn fn_rec(ts: u64, ent: TraceEntry, ip: u64, parent_ip: u64) -> TraceRecord {
    TraceRecord::new(
        ts,
        Entry::Function(FtraceEntry { ent, ip, parent_ip }).to_vec(),
    )
}

pub fn ent_rec(ts: u64, pid: i32, func: u64, depth: i32) -> TraceRecord {
    TraceRecord::new(
        ts,
        Entry::GraphEnt(GraphEntEntry {
            ent: hdr(pid, 0, 0),
            func,
            depth,
        })
        .to_vec(),
    )
}

pub fn ret_rec(ts: u64, pid: i32, func: u64, depth: i32, calltime: u64) -> TraceRecord {
    TraceRecord::new(
        ts,
        Entry::GraphRet(GraphRetEntry {
            ent: hdr(pid, 0, 0),
            func,
            depth,
            overrun: 0,
            calltime,
            rettime: ts,
        })
        .to_vec(),
    )
}

pub fn print_rec(ts: u64, ent: TraceEntry, ip: u64, text: &str) -> TraceRecord {
    TraceRecord::new(
        ts,
        Entry::Print(PrintEntry::marker(ent, ip, text.as_bytes())).to_vec(),
    )
}

pub fn stack_rec(ts: u64, ent: TraceEntry, callers: &[u64]) -> TraceRecord {
    TraceRecord::new(
        ts,
        Entry::Stack(StackEntry {
            ent,
            callers: callers.to_vec(),
        })
        .to_vec(),
    )
}

/// The tracer's own printer, as the kernel registers it with the tracer.
pub fn tracer_output(t: Tracer, nr_cpus: usize) -> Option<Box<dyn TracerOutput>> {
    match t {
        Tracer::FunctionGraph => Some(Box::new(GraphOutput::new(nr_cpus))),
        Tracer::Irqsoff | Tracer::Preemptoff | Tracer::Preemptirqsoff => Some(Box::new(
            LatencyGraphOutput::new(nr_cpus, tracer::graph::IRQSOFF_GRAPH_FLAGS),
        )),
        Tracer::Wakeup | Tracer::WakeupRt => Some(Box::new(LatencyGraphOutput::new(
            nr_cpus,
            tracer::graph::WAKEUP_GRAPH_FLAGS,
        ))),
        _ => None,
    }
}

/// An iterator over `nr_cpus` CPUs with the configured tracer's printer.
pub fn iter(cfg: OutputConfig<'_>, nr_cpus: usize, overruns: bool) -> TraceIter<'_> {
    let t = tracer_output(cfg.tracer, nr_cpus);
    TraceIter::resume(cfg, IterState::new(nr_cpus, overruns, t))
}

/// Prints every event of the per-CPU streams (no header), as trace_pipe:
/// the bytes (binary with the `bin` option).
pub fn render_bytes(cfg: OutputConfig<'_>, cpus: Vec<Vec<TraceRecord>>) -> Vec<u8> {
    let n = cpus.len();
    let mut m = Merger::new(cpus.into_iter().map(|v| v.into_iter()).collect());
    let mut it = iter(cfg, n, false);
    let mut out = TraceSeq::new();
    it.print_all(&mut m, &mut out);
    out.into_bytes()
}

/// As [`render_bytes`] for text.
pub fn render(cfg: OutputConfig<'_>, cpus: Vec<Vec<TraceRecord>>) -> String {
    String::from_utf8(render_bytes(cfg, cpus)).expect("text output")
}

/// Header + events, as the `trace` file.
pub fn render_trace(
    cfg: OutputConfig<'_>,
    stats: BufferStats,
    cpus: Vec<Vec<TraceRecord>>,
) -> String {
    let mut out = TraceSeq::new();
    let n = cpus.len();
    let t = tracer_output(cfg.tracer, n);
    let mut m = Merger::new(cpus.into_iter().map(|v| v.into_iter()).collect());
    tracer::output::write_trace_file(
        &mut out,
        cfg,
        t,
        &stats,
        &LatencyInfo::default(),
        &mut m,
        n,
        false,
    );
    out.as_str().expect("text output").to_string()
}

pub fn opts() -> TraceOptions {
    TraceOptions::new()
}

pub fn cfg<'a>(
    o: &'a TraceOptions,
    t: Tracer,
    s: &'a Syms,
    k: &'a Tasks,
    ncpu: u32,
) -> OutputConfig<'a> {
    OutputConfig::new(o, t, s, k, ncpu)
}
