//! Events per second for a single writer (function-tracer sized events:
//! 24-byte payload, 28 bytes on the page), in overwrite mode so the buffer
//! wraps as it does in the kernel.
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tracer::ring_buffer::RingBuffer;

fn bench(c: &mut Criterion) {
    let rb = RingBuffer::new(1, 1 << 20).unwrap();
    let mut g = c.benchmark_group("ring_buffer");
    g.throughput(Throughput::Elements(1));
    let mut ts = 0u64;
    let payload = [0x5au8; 24];
    g.bench_function("write_24B", |b| {
        b.iter(|| {
            ts += 37;
            // SAFETY: the only writer of CPU 0.
            black_box(unsafe { rb.write(0, ts, black_box(&payload)) })
        })
    });
    g.bench_function("reserve_fill_commit_24B", |b| {
        b.iter(|| {
            ts += 37;
            // SAFETY: the only writer of CPU 0.
            if let Some(mut r) = unsafe { rb.lock_reserve(0, 24, ts) } {
                let d = r.data_mut();
                d[..8].copy_from_slice(&ts.to_le_bytes());
                rb.unlock_commit(r);
            }
        })
    });
    g.bench_function("write_then_consume_24B", |b| {
        b.iter(|| {
            ts += 37;
            // SAFETY: the only writer of CPU 0.
            unsafe { rb.write(0, ts, &payload) };
            black_box(rb.consume_with(0, |t, d, _| t + d.len() as u64))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
