//! A hand-made trace for the trace.dat tests: two CPUs, the function,
//! funcgraph and print events with Linux's binary layouts (tracer::entry),
//! the kernel's format texts (tracer::events), a small kallsyms and the
//! saved_cmdlines, as `trace-export` would send them.
#![allow(dead_code)]

use build_tools::tracedat::frame::Transfer;
use build_tools::tracedat::pages::PageWriter;
use tracer::entry::{
    FtraceEntry, FuncRepeatsEntry, GraphEntEntry, GraphRetEntry, PrintEntry, TraceEntry,
};
use tracer::events;
use tracer::trace_events::{comm_bytes, sched, TaskInfo};

pub const BASE: u64 = 0xffff_ffff_8000_0000;
/// (offset from BASE, name); each function ends where the next begins.
pub const SYMS: &[(u64, &str)] = &[
    (0x1000, "kernel_main"),
    (0x1100, "do_work"),
    (0x1200, "helper_a"),
    (0x1300, "helper_b"),
    (0x1400, "leaf_c"),
    (0x1500, "tracing_mark_write"),
    (0x1600, "worker_loop"),
    (0x1700, "_etext"),
];

pub fn addr(name: &str) -> u64 {
    BASE + SYMS.iter().find(|s| s.1 == name).expect("known symbol").0
}

fn ent(pid: i32) -> TraceEntry {
    TraceEntry {
        type_: 0,
        flags: 0,
        preempt_count: 0,
        pid,
    }
}

pub fn function(pid: i32, ip: &str, parent: &str) -> Vec<u8> {
    let mut b = vec![0u8; FtraceEntry::SIZE];
    FtraceEntry {
        ent: ent(pid),
        ip: addr(ip) + 4,
        parent_ip: addr(parent) + 0x20,
    }
    .encode(&mut b)
    .unwrap();
    b
}

/// A `func_repeats` record (func-no-repeats): `count` more calls of
/// `ip` from `parent`, the last one `delta` ns before the record.
pub fn func_repeats(pid: i32, ip: &str, parent: &str, count: u16, delta: u64) -> Vec<u8> {
    let mut b = vec![0u8; FuncRepeatsEntry::SIZE];
    FuncRepeatsEntry {
        ent: ent(pid),
        ip: addr(ip) + 4,
        parent_ip: addr(parent) + 0x20,
        count,
        top_delta_ts: (delta >> 32) as u16,
        bottom_delta_ts: delta as u32,
    }
    .encode(&mut b)
    .unwrap();
    b
}

pub fn graph_ent(pid: i32, func: &str, depth: i32) -> Vec<u8> {
    let mut b = vec![0u8; GraphEntEntry::SIZE];
    GraphEntEntry {
        ent: ent(pid),
        func: addr(func),
        depth,
    }
    .encode(&mut b)
    .unwrap();
    b
}

pub fn graph_ret(pid: i32, func: &str, depth: i32, calltime: u64, rettime: u64) -> Vec<u8> {
    let mut b = vec![0u8; GraphRetEntry::SIZE];
    GraphRetEntry {
        ent: ent(pid),
        func: addr(func),
        depth,
        overrun: 0,
        calltime,
        rettime,
    }
    .encode(&mut b)
    .unwrap();
    b
}

pub fn print(pid: i32, text: &str) -> Vec<u8> {
    let p = PrintEntry::marker(ent(pid), addr("tracing_mark_write"), text.as_bytes());
    let mut b = vec![0u8; p.encoded_len()];
    p.encode(&mut b).unwrap();
    b
}

fn task(comm: &str, pid: i32, prio: i32) -> TaskInfo {
    TaskInfo {
        comm: comm_bytes(comm),
        pid,
        prio,
    }
}

/// A `sched:sched_switch` record from `prev` (state `prev_state`, or
/// preempted) to `next`, written by the tracer's own stage.
pub fn sched_switch(
    prev: (&str, i32),
    prev_state: u32,
    preempt: bool,
    next: (&str, i32),
) -> Vec<u8> {
    let (p, n) = (task(prev.0, prev.1, 120), task(next.0, next.1, 120));
    let mut b = vec![0u8; sched::sched_switch::size(preempt, &p, &n, prev_state)];
    let common = TraceEntry::pack(sched::sched_switch::CALL.id, 0, 0, prev.1);
    sched::sched_switch::write(&mut b, common, preempt, &p, &n, prev_state);
    b
}

/// A `sched:sched_wakeup` record: `waker` wakes `(comm, pid)` onto `cpu`.
pub fn sched_wakeup(waker: i32, woken: (&str, i32), cpu: i32) -> Vec<u8> {
    let t = task(woken.0, woken.1, 120);
    let mut b = vec![0u8; sched::sched_wakeup::size(&t, cpu)];
    let common = TraceEntry::pack(sched::sched_wakeup::CALL.id, 0, 0, waker);
    sched::sched_wakeup::write(&mut b, common, &t, cpu);
    b
}

/// A wakeup tracer's `wakeup` (TRACE_WAKE, `wake`) or `context_switch`
/// (TRACE_CTX) record: `prev` (pid, prio, state index) to `next` on `cpu`.
pub fn ctx_switch(wake: bool, prev: (u32, u8, u8), next: (u32, u8, u8), cpu: u32) -> Vec<u8> {
    let type_ = if wake {
        tracer::entry::TRACE_WAKE
    } else {
        tracer::entry::TRACE_CTX
    };
    let e = tracer::entry::CtxSwitchEntry {
        ent: TraceEntry {
            type_,
            flags: 1,
            preempt_count: 0,
            pid: prev.0 as i32,
        },
        prev_pid: prev.0,
        prev_prio: prev.1,
        prev_state: prev.2,
        next_pid: next.0,
        next_prio: next.1,
        next_state: next.2,
        next_cpu: cpu,
    };
    tracer::entry::Entry::CtxSwitch(e).to_vec()
}

/// The kallsyms text, one `addr T name` line per symbol.
pub fn kallsyms() -> String {
    SYMS.iter()
        .map(|(off, name)| format!("{:016x} T {}\n", BASE + off, name))
        .collect()
}

/// The events of the sample: (cpu, ts in ns, payload). Covers a nested
/// function_graph call tree with a leaf, a long print (> 112 bytes, the
/// long event form), a 3 s gap (TIME_EXTEND) and enough events on CPU 1 to
/// fill several pages.
pub fn events() -> Vec<(usize, u64, Vec<u8>)> {
    let t0 = 5_000_000_000u64;
    let mut ev = vec![
        (0, t0, function(1, "do_work", "kernel_main")),
        (1, t0 + 100, function(42, "worker_loop", "kernel_main")),
        (0, t0 + 1000, graph_ent(1, "do_work", 0)),
        (0, t0 + 1500, graph_ent(1, "helper_a", 1)),
        (0, t0 + 2200, graph_ret(1, "helper_a", 1, t0 + 1500, t0 + 2200)),
        (0, t0 + 2500, graph_ent(1, "helper_b", 1)),
        (0, t0 + 2600, graph_ent(1, "leaf_c", 2)),
        (0, t0 + 3300, graph_ret(1, "leaf_c", 2, t0 + 2600, t0 + 3300)),
        (0, t0 + 4200, graph_ret(1, "helper_b", 1, t0 + 2500, t0 + 4200)),
        (0, t0 + 4700, graph_ret(1, "do_work", 0, t0 + 1000, t0 + 4700)),
        (0, t0 + 5000, print(1, "hello from cpu0")),
        (0, t0 + 6000, print(1, &"a long marker text, longer than one hundred and twelve bytes so that it needs the long event form ".repeat(2))),
    ];
    // Leaf calls with durations around every overhead mark and beyond 7
    // digits of µs, tasks without a cmdline (pid 77) and the idle task.
    let durations = [
        999u64,
        10_000,
        10_001,
        100_001,
        1_000_001,
        // 5 and 6 digits of µs: trace-cmd still prints 3 decimals (Linux's
        // own output keeps 7 digits in all: 12345.67).
        12_345_678,
        123_456_789,
        1_000_000_001,
        12_345_678_901_234,
    ];
    for (i, d) in durations.iter().enumerate() {
        let t = t0 + 7000 + i as u64 * 200;
        let pid = [1, 77, 0][i % 3];
        ev.push((0, t, graph_ent(pid, "leaf_c", 1)));
        ev.push((0, t + 100, graph_ret(pid, "leaf_c", 1, t, t + d)));
    }
    // An entry whose exit is not the next record (CPU 1 has one between).
    ev.push((0, t0 + 9000, graph_ent(1, "helper_a", 0)));
    ev.push((1, t0 + 9100, function(42, "helper_b", "worker_loop")));
    ev.push((
        0,
        t0 + 9200,
        graph_ret(1, "helper_a", 0, t0 + 9000, t0 + 9200),
    ));
    // Rounding of the printed time at a second boundary.
    ev.push((0, 7_999_999_600, print(1, "rounding")));
    for i in 0..400u64 {
        ev.push((
            1,
            t0 + 10_000 + i * 2000,
            function(42, "leaf_c", "worker_loop"),
        ));
    }
    // func-no-repeats records: a small count, and one whose last repeat is
    // more than 2^32 ns (4.3 s) back, so top_delta_ts is used.
    ev.push((
        1,
        t0 + 900_000,
        func_repeats(42, "leaf_c", "worker_loop", 3, 1500),
    ));
    ev.push((
        1,
        t0 + 3_000_000_000 + 900_000,
        func_repeats(77, "helper_b", "do_work", 65535, 5_000_123_456),
    ));
    ev.push((
        1,
        t0 + 3_000_000_000 + 800_000,
        print(42, "cpu1 after a 3 s gap"),
    ));
    // Scheduler events: a wake-up, a switch to the woken task (prev
    // sleeping), one back (prev preempted while runnable), and to idle.
    ev.push((0, t0 + 950_000, sched_wakeup(1, ("worker", 42), 0)));
    ev.push((
        0,
        t0 + 951_000,
        sched_switch(("init", 1), 1, false, ("worker", 42)),
    ));
    ev.push((
        0,
        t0 + 952_000,
        sched_switch(("worker", 42), 0, true, ("init", 1)),
    ));
    ev.push((
        0,
        t0 + 953_000,
        sched_switch(("init", 1), 2, false, ("swapper/0", 0)),
    ));
    // The wakeup tracers' records: worker (prio 49) woken by init, then
    // switched in from init, which is blocked.
    ev.push((
        0,
        t0 + 954_000,
        ctx_switch(true, (1, 120, 0), (42, 49, 0), 0),
    ));
    ev.push((
        0,
        t0 + 955_000,
        ctx_switch(false, (1, 120, 1), (42, 49, 0), 0),
    ));
    ev.sort_by_key(|e| (e.0, e.1));
    ev
}

/// The transfer `trace-export` would send for [`events`].
pub fn transfer() -> Transfer {
    let mut writers = [PageWriter::new(4096), PageWriter::new(4096)];
    for (cpu, ts, data) in events() {
        writers[cpu].push(ts, &data);
    }
    let mut t = Transfer {
        nr_cpus: 2,
        page_size: 4096,
        long_size: 8,
        uname: "ktrace 0.1.0 x86_64".into(),
        ..Default::default()
    };
    t.files.insert(
        "events/header_page".into(),
        events::header_page(4080).into_bytes(),
    );
    t.files.insert(
        "events/header_event".into(),
        events::header_event().into_bytes(),
    );
    for e in events::FTRACE_EVENTS {
        t.files.insert(
            format!("events/ftrace/{}/format", e.name),
            e.format_file().into_bytes(),
        );
        t.files.insert(
            format!("events/ftrace/{}/id", e.name),
            format!("{}\n", e.id).into_bytes(),
        );
    }
    for e in tracer::trace_events::all_events() {
        t.files.insert(
            format!("events/{}/{}/format", e.system, e.name),
            e.format_file().into_bytes(),
        );
    }
    t.files.insert("kallsyms".into(), kallsyms().into_bytes());
    t.files
        .insert("saved_cmdlines".into(), b"1 init\n42 worker\n".to_vec());
    t.pages = writers.iter().map(|w| w.pages().to_vec()).collect();
    t
}
