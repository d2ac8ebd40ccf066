//! Property tests: random sequences of operations on a small ring buffer,
//! checked against a simple model (what was committed, in order) and the
//! accounting rules (read once, or counted in overrun; never garbled).
#![cfg(not(loom))]

use proptest::prelude::*;
use tracer::ring_buffer::{decode_page, Cpus, EventKind, RingBuffer, PAGE_SIZE};

#[derive(Clone, Debug)]
enum Op {
    /// Write an event of this length on cpu, with this time step.
    Write {
        cpu: usize,
        len: usize,
        dt: u64,
    },
    /// Reserve, write a nested event, commit.
    Nested {
        cpu: usize,
        len: usize,
        nlen: usize,
    },
    Consume {
        cpu: usize,
        n: usize,
    },
    ReadPage {
        cpu: usize,
    },
    Iterate {
        cpu: usize,
    },
    Reset,
    ResetCpu {
        cpu: usize,
    },
    Resize {
        cpu: Option<usize>,
        pages: usize,
    },
    Overwrite(bool),
    RecordOff,
    RecordOn,
}

fn op() -> impl Strategy<Value = Op> {
    let cpu = 0..2usize;
    prop_oneof![
        20 => (cpu.clone(), 0..300usize, prop_oneof![0..2000u64, 100_000_000..400_000_000u64])
            .prop_map(|(cpu, len, dt)| Op::Write { cpu, len, dt }),
        4 => (cpu.clone(), 12..200usize, 12..200usize).prop_map(|(cpu, len, nlen)| Op::Nested { cpu, len, nlen }),
        6 => (cpu.clone(), 1..200usize).prop_map(|(cpu, n)| Op::Consume { cpu, n }),
        3 => cpu.clone().prop_map(|cpu| Op::ReadPage { cpu }),
        2 => cpu.clone().prop_map(|cpu| Op::Iterate { cpu }),
        1 => Just(Op::Reset),
        1 => cpu.clone().prop_map(|cpu| Op::ResetCpu { cpu }),
        2 => (proptest::option::of(cpu.clone()), 1..6usize).prop_map(|(cpu, pages)| Op::Resize { cpu, pages }),
        1 => any::<bool>().prop_map(Op::Overwrite),
        1 => Just(Op::RecordOff),
        2 => Just(Op::RecordOn),
    ]
}

/// Events are: seq u64, ts u64, filler derived from seq. Lengths < 16 carry
/// a shorter prefix of the same bytes.
fn payload(seq: u64, ts: u64, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = seq
        .to_le_bytes()
        .iter()
        .chain(ts.to_le_bytes().iter())
        .copied()
        .collect();
    v.extend((0..len.saturating_sub(16)).map(|i| (seq as u8) ^ (i as u8)));
    v.truncate(len);
    v
}

#[derive(Default, Clone)]
struct CpuModel {
    /// Committed and not yet read or known lost: (seq, ts, len).
    pending: Vec<(u64, u64, usize)>,
    /// Overrun already accounted for by the model.
    overrun_seen: u64,
}

struct Model {
    cpus: Vec<CpuModel>,
    seq: u64,
    clock: u64,
    off: bool,
}

/// Check that a read event is the first pending one after skipping events
/// lost to overwriting; update the model.
fn on_read(
    m: &mut CpuModel,
    rb: &RingBuffer,
    cpu: usize,
    ts: u64,
    data: &[u8],
) -> Result<(), TestCaseError> {
    // Identify by ts (unique per event) + content.
    let pos = m.pending.iter().position(|&(_, t, _)| t == ts);
    prop_assert!(
        pos.is_some(),
        "cpu {}: read event ts {} not pending",
        cpu,
        ts
    );
    let pos = pos.unwrap();
    let (seq, t, len) = m.pending[pos];
    let want = payload(seq, t, len);
    prop_assert_eq!(&data[..len], &want[..], "garbled");
    prop_assert!(data[len..].iter().all(|&b| b == 0));
    prop_assert_eq!(
        data.len(),
        len.max(1)
            .next_multiple_of(4)
            .max(if len <= 112 && len.max(1).next_multiple_of(4) == 8 {
                12
            } else {
                0
            })
    );
    // Events before it were lost to overwriting: they must be in overrun.
    m.overrun_seen += pos as u64;
    m.pending.drain(..=pos);
    let overrun = rb.overrun_cpu(cpu);
    prop_assert!(
        m.overrun_seen <= overrun,
        "cpu {}: {} skipped but overrun {}",
        cpu,
        m.overrun_seen,
        overrun
    );
    Ok(())
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let rb = RingBuffer::new(2, 3 * 4080).unwrap();
    let mut m = Model {
        cpus: vec![CpuModel::default(); 2],
        seq: 0,
        clock: 1000,
        off: false,
    };
    let mut page = Box::new([0u8; PAGE_SIZE]);
    for op in ops {
        match op {
            Op::Write { cpu, len, dt } => {
                m.clock += dt + 1;
                let seq = m.seq;
                m.seq += 1;
                let p = payload(seq, m.clock, len);
                // SAFETY: single-threaded test.
                let ok = unsafe { rb.write(cpu, m.clock, &p) };
                if ok {
                    m.cpus[cpu].pending.push((seq, m.clock, len));
                }
                prop_assert!(
                    ok || m.off || !rb.overwrite(),
                    "overwrite-mode write failed"
                );
            }
            Op::Nested { cpu, len, nlen } => {
                m.clock += 10;
                let (seq, ts) = (m.seq, m.clock);
                m.seq += 2;
                // SAFETY: single-threaded test; nested commit innermost first.
                if let Some(mut r) = unsafe { rb.lock_reserve(cpu, len, ts) } {
                    m.cpus[cpu].pending.push((seq, ts, len));
                    let np = payload(seq + 1, ts + 1, nlen);
                    if unsafe { rb.write(cpu, ts + 1, &np) } {
                        m.cpus[cpu].pending.push((seq + 1, ts + 1, nlen));
                    }
                    r.data_mut().copy_from_slice(&payload(seq, ts, len));
                    rb.unlock_commit(r);
                }
                m.clock += 1;
            }
            Op::Consume { cpu, n } => {
                for _ in 0..n {
                    let mut res = Ok(());
                    let got = rb.consume_with(cpu, |ts, d, _lost| {
                        res = on_read(&mut m.cpus[cpu], &rb, cpu, ts, d)
                    });
                    res?;
                    if got.is_none() {
                        break;
                    }
                }
            }
            Op::ReadPage { cpu } => {
                if let Some(n) = rb.read_page(cpu, &mut page) {
                    // Like Linux, a page may hold only the padding left at the
                    // end of a partly consumed page.
                    let mut bytes = 0;
                    for ev in decode_page(&page[..]).unwrap() {
                        let ev = ev.unwrap();
                        bytes = ev.offset + 4 + ev.payload.len();
                        if ev.kind == EventKind::Data {
                            on_read(&mut m.cpus[cpu], &rb, cpu, ev.ts, ev.payload)?;
                        }
                    }
                    prop_assert!(n > 0);
                    prop_assert!(bytes <= n);
                }
            }
            Op::Iterate { cpu } => {
                // Non-consuming: must list the pending events in order (a suffix
                // of them if some were overwritten), without changing anything.
                let before = rb.entries_cpu(cpu);
                let got: Vec<(u64, Vec<u8>)> = rb.iter(cpu).unwrap().collect();
                let pend = &m.cpus[cpu].pending;
                prop_assert!(got.len() <= pend.len());
                let skip = pend.len() - got.len();
                for ((ts, d), &(seq, t, len)) in got.iter().zip(&pend[skip..]) {
                    prop_assert_eq!(*ts, t);
                    prop_assert_eq!(&d[..len], &payload(seq, t, len)[..]);
                }
                prop_assert_eq!(rb.entries_cpu(cpu), before);
                prop_assert_eq!(got.len() as u64, before, "iterator sees every entry");
            }
            Op::Reset => {
                rb.reset();
                for c in &mut m.cpus {
                    *c = CpuModel::default();
                }
            }
            Op::ResetCpu { cpu } => {
                rb.reset_cpu(cpu).unwrap();
                m.cpus[cpu] = CpuModel::default();
            }
            Op::Resize { cpu, pages } => {
                let sel = cpu.map_or(Cpus::All, Cpus::One);
                rb.resize(sel, pages * 4080).unwrap();
                for c in 0..2 {
                    prop_assert_eq!(rb.size_per_cpu(c) % 4080, 0);
                }
                if let Some(c) = cpu {
                    prop_assert_eq!(rb.nr_pages(c), pages.max(2));
                }
            }
            Op::Overwrite(on) => rb.set_overwrite(on),
            Op::RecordOff => {
                rb.record_off();
                m.off = true;
            }
            Op::RecordOn => {
                rb.record_on();
                m.off = false;
            }
        }
        for cpu in 0..2 {
            // In-buffer count = pending minus those lost and not yet seen.
            let c = &m.cpus[cpu];
            let unseen_lost = rb.overrun_cpu(cpu) - c.overrun_seen;
            prop_assert_eq!(
                rb.entries_cpu(cpu) + unseen_lost,
                c.pending.len() as u64,
                "cpu {} entries",
                cpu
            );
        }
    }
    // Drain: everything pending is read or lost.
    for cpu in 0..2 {
        loop {
            let mut res = Ok(());
            let got = rb.consume_with(cpu, |ts, d, _| {
                res = on_read(&mut m.cpus[cpu], &rb, cpu, ts, d)
            });
            res?;
            if got.is_none() {
                break;
            }
        }
        prop_assert!(rb.empty_cpu(cpu));
        let c = &mut m.cpus[cpu];
        let lost_tail = c.pending.len() as u64;
        prop_assert_eq!(
            c.overrun_seen + lost_tail,
            rb.overrun_cpu(cpu),
            "cpu {} overrun at end",
            cpu
        );
        prop_assert_eq!(rb.entries_cpu(cpu), 0);
        prop_assert_eq!(rb.stats(cpu).unwrap().bytes, 0);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    #[test]
    fn ops_match_model(ops in proptest::collection::vec(op(), 1..200)) {
        run(ops)?;
    }
}
