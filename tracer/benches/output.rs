//! The `trace` formatter: time to print function-tracer events as Linux's
//! text lines (`TASK-PID [CPU] FLAGS TIMESTAMP: func <-parent`), merged from
//! 4 CPUs with symbol look-ups, as the kernel does for `cat trace`
//! (the kernel's `bench` command reports the same in instructions:
//! `format_per_event`).
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::hint::black_box;
use tracer::entry::{FtraceEntry, TraceEntry, TRACE_FN};
use tracer::options::{TraceOptions, Tracer};
use tracer::output::merge::{Merger, TraceRecord};
use tracer::output::{OutputConfig, SymbolResolver, TaskNames, TraceIter, TraceSeq};

const CPUS: usize = 4;
const EVENTS_PER_CPU: usize = 1000;
const BASE: u64 = 0xffff_ffff_8010_0000;

/// 64 functions of 256 bytes each, found by binary search like kallsyms.
struct Syms(Vec<(u64, String)>);

impl SymbolResolver for Syms {
    fn lookup(&self, addr: u64) -> Option<(&str, u64, u64)> {
        let i = self.0.partition_point(|(a, _)| *a <= addr).checked_sub(1)?;
        let (start, name) = &self.0[i];
        (addr < start + 256).then(|| (name.as_str(), addr - start, 256))
    }
}

struct Tasks;

impl TaskNames for Tasks {
    fn comm(&self, pid: i32) -> Option<&str> {
        (pid == 1).then_some("sh")
    }
}

fn records() -> Vec<Vec<TraceRecord>> {
    (0..CPUS)
        .map(|cpu| {
            (0..EVENTS_PER_CPU)
                .map(|i| {
                    let e = FtraceEntry {
                        ent: TraceEntry {
                            type_: TRACE_FN,
                            flags: 1,
                            preempt_count: 1,
                            pid: 1,
                        },
                        ip: BASE + ((i * 7 + cpu) % 64) as u64 * 256 + 5,
                        parent_ip: BASE + ((i * 3) % 64) as u64 * 256 + 40,
                    };
                    let mut buf = vec![0u8; FtraceEntry::SIZE];
                    e.encode(&mut buf).unwrap();
                    TraceRecord::new(1_000_000_000 + (i * CPUS + cpu) as u64 * 1234, buf)
                })
                .collect()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let syms = Syms(
        (0..64)
            .map(|i| (BASE + i * 256, format!("kernel::module::function_{i}")))
            .collect(),
    );
    let options = TraceOptions::new();
    let recs = records();
    let mut g = c.benchmark_group("output");
    g.throughput(Throughput::Elements((CPUS * EVENTS_PER_CPU) as u64));
    g.bench_function("function_events_4cpu", |b| {
        b.iter_batched(
            || {
                recs.iter()
                    .map(|v| v.clone().into_iter())
                    .collect::<Vec<_>>()
            },
            |streams| {
                let cfg = OutputConfig::new(&options, Tracer::Function, &syms, &Tasks, CPUS as u32);
                let mut it = TraceIter::new(cfg, CPUS, false);
                let mut merger = Merger::new(streams);
                let mut out = TraceSeq::with_capacity(CPUS * EVENTS_PER_CPU * 80);
                it.print_all(&mut merger, &mut out);
                black_box(out)
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
