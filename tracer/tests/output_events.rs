//! Trace events in the `trace`/`trace_pipe` text: after the context
//! columns, `NAME: ` and the event's text (Linux: `trace_raw_output_prep`);
//! the raw/hex/bin options' `type: N` (`trace_nop_print`: trace events
//! have no raw printers); and under function_graph a `/* NAME: ... */`
//! comment (`print_graph_comment`). Expected lines are from Linux 6.1's
//! `trace` file (pids, times and flags rebuilt in the records).

mod output_support;

use output_support::*;
use tracer::entry::trace_flag::*;
use tracer::options::{TraceOption, Tracer};
use tracer::output::header::BufferStats;
use tracer::output::merge::TraceRecord;
use tracer::trace_events::{self as te, comm_bytes, TaskInfo};

/// The header word of a record: type, flags, preempt count, pid.
fn word(id: u16, flags: u8, pc: u8, pid: i32) -> u64 {
    id as u64 | (flags as u64) << 16 | (pc as u64) << 24 | (pid as u32 as u64) << 32
}

fn task(comm: &str, pid: i32) -> TaskInfo {
    TaskInfo {
        comm: comm_bytes(comm),
        pid,
        prio: 120,
    }
}

fn switch_rec(ts: u64, pid: i32, prev: &TaskInfo, next: &TaskInfo) -> TraceRecord {
    use te::sched::sched_switch as e;
    let mut buf = vec![0u8; e::size(false, prev, next, 0)];
    let w = word(e::CALL.id, TRACE_FLAG_IRQS_OFF, 2, pid);
    e::write(&mut buf, w, false, prev, next, 0);
    TraceRecord::new(ts, buf)
}

fn timer_rec(ts: u64, pid: i32) -> TraceRecord {
    use te::irq_vectors::local_timer_entry as e;
    let mut buf = vec![0u8; e::size(236)];
    e::write(
        &mut buf,
        word(e::CALL.id, TRACE_FLAG_IRQS_OFF | TRACE_FLAG_HARDIRQ, 0, pid),
        236,
    );
    TraceRecord::new(ts, buf)
}

fn irq_rec(ts: u64, pid: i32) -> TraceRecord {
    use te::irq::irq_handler_entry as e;
    let mut buf = vec![0u8; e::size(4, "ttyS0")];
    e::write(
        &mut buf,
        word(e::CALL.id, TRACE_FLAG_IRQS_OFF | TRACE_FLAG_HARDIRQ, 0, pid),
        4,
        "ttyS0",
    );
    TraceRecord::new(ts, buf)
}

fn kmalloc_rec(ts: u64, pid: i32, site: u64) -> TraceRecord {
    use te::kmem::kmalloc as e;
    let args = (
        site,
        0xffff_8880_03c5_e000,
        64,
        64,
        te::kmem::GFP_KERNEL,
        -1,
    );
    let mut buf = vec![0u8; e::size(args.0, args.1, args.2, args.3, args.4, args.5)];
    e::write(
        &mut buf,
        word(e::CALL.id, 0, 0, pid),
        args.0,
        args.1,
        args.2,
        args.3,
        args.4,
        args.5,
    );
    TraceRecord::new(ts, buf)
}

/// A record of type 999, which no event has.
fn unknown_rec(ts: u64, pid: i32) -> TraceRecord {
    let mut buf = vec![0u8; 16];
    buf[..8].copy_from_slice(&word(999, 0, 0, pid).to_le_bytes());
    TraceRecord::new(ts, buf)
}

#[test]
fn events_print_name_and_text_after_the_context() {
    let (s, _) = Syms::layout(&["tracepoint_add_func", "schedule"]);
    let t = Tasks::with(&[(15, "rcu_preempt"), (94, "sh")]);
    let o = opts();
    let idle = task("swapper/1", 0);
    let rcu = task("rcu_preempt", 15);
    let site = s.addr("tracepoint_add_func") + 0xf7;
    let out = render(
        cfg(&o, Tracer::Nop, &s, &t, 2),
        vec![
            vec![
                timer_rec(2_441_275_000, 94),
                irq_rec(2_441_300_000, 94),
                kmalloc_rec(2_455_474_000, 94, site),
            ],
            vec![switch_rec(2_419_160_000, 0, &idle, &rcu)],
        ],
    );
    assert_eq!(
        out,
        "          <idle>-0       [001] d..2.     2.419160: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rcu_preempt next_pid=15 next_prio=120\n\
         \x20             sh-94      [000] d.h..     2.441275: local_timer_entry: vector=236\n\
         \x20             sh-94      [000] d.h..     2.441300: irq_handler_entry: irq=4 name=ttyS0\n\
         \x20             sh-94      [000] .....     2.455474: kmalloc: call_site=tracepoint_add_func+0xf7/0x100 ptr=ffff888003c5e000 bytes_req=64 bytes_alloc=64 gfp_flags=GFP_KERNEL node=-1 accounted=false\n"
    );
}

#[test]
fn events_interleave_with_functions_and_one_cpu_prints_its_own() {
    let (s, _) = Syms::layout(&["schedule", "do_idle"]);
    let t = Tasks::with(&[(15, "rcu_preempt")]);
    let o = opts();
    let idle = task("swapper/1", 0);
    let rcu = task("rcu_preempt", 15);
    let cpu1 = vec![
        fn_rec(1_000, hdr(0, 0, 0), s.addr("schedule"), s.addr("do_idle")),
        switch_rec(2_000, 0, &idle, &rcu),
        fn_rec(3_000, hdr(15, 0, 0), s.addr("schedule"), s.addr("do_idle")),
    ];
    // per_cpu/cpu1/trace: CPU 0's reader is empty.
    let out = render(cfg(&o, Tracer::Function, &s, &t, 2), vec![vec![], cpu1]);
    assert_eq!(
        out,
        "          <idle>-0       [001] .....     0.000001: schedule <-do_idle\n\
         \x20         <idle>-0       [001] d..2.     0.000002: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rcu_preempt next_pid=15 next_prio=120\n\
         \x20    rcu_preempt-15      [001] .....     0.000003: schedule <-do_idle\n"
    );
}

#[test]
fn trace_file_header_then_event_lines() {
    let (s, _) = Syms::layout(&["f"]);
    let t = Tasks::with(&[(94, "sh")]);
    let o = opts();
    let out = render_trace(
        cfg(&o, Tracer::Nop, &s, &t, 1),
        BufferStats {
            entries: 1,
            written: 1,
            online_cpus: 1,
        },
        vec![vec![timer_rec(2_441_275_000, 94)]],
    );
    assert!(out.starts_with("# tracer: nop\n#\n"), "{out}");
    assert!(
        out.ends_with(
            "\n              sh-94      [000] d.h..     2.441275: local_timer_entry: vector=236\n"
        ),
        "{out}"
    );
}

#[test]
fn raw_hex_and_bin_print_the_type() {
    let (s, _) = Syms::layout(&["f"]);
    let t = Tasks::with(&[(94, "sh")]);
    let id = te::irq_vectors::local_timer_entry::CALL.id;

    let mut o = opts();
    o.set(TraceOption::Raw, true);
    let out = render(
        cfg(&o, Tracer::Nop, &s, &t, 1),
        vec![vec![
            timer_rec(2_441_275_000, 94),
            unknown_rec(2_441_276_000, 94),
        ]],
    );
    assert_eq!(
        out,
        format!("94 0 2441275000 type: {id}\n94 0 2441276000 999 ?\n")
    );

    let mut o = opts();
    o.set(TraceOption::Hex, true);
    let out = render(
        cfg(&o, Tracer::Nop, &s, &t, 1),
        vec![vec![timer_rec(0x10, 94), unknown_rec(0x20, 94)]],
    );
    assert_eq!(
        out,
        format!(
            "0000005e 00000000 0000000000000010 type: {id}\n\n\
             0000005e 00000000 0000000000000020 \n"
        )
    );

    let mut o = opts();
    o.set(TraceOption::Bin, true);
    let out = render_bytes(
        cfg(&o, Tracer::Nop, &s, &t, 1),
        vec![vec![timer_rec(0x10, 94)]],
    );
    let mut want = Vec::new();
    want.extend_from_slice(&94i32.to_le_bytes());
    want.extend_from_slice(&0i32.to_le_bytes());
    want.extend_from_slice(&0x10u64.to_le_bytes());
    want.extend_from_slice(format!("type: {id}\n").as_bytes());
    assert_eq!(out, want);
}

#[test]
fn unknown_event_type() {
    let (s, _) = Syms::layout(&["f"]);
    let t = Tasks::with(&[(94, "sh")]);
    let o = opts();
    let out = render(
        cfg(&o, Tracer::Nop, &s, &t, 1),
        vec![vec![unknown_rec(1_000, 94)]],
    );
    assert_eq!(
        out,
        "              sh-94      [000] .....     0.000001: Unknown type 999\n"
    );
    // function_graph leaves it to the default printer.
    let out = render(
        cfg(&o, Tracer::FunctionGraph, &s, &t, 1),
        vec![vec![unknown_rec(1_000, 94)]],
    );
    assert_eq!(
        out,
        "              sh-94      [000] .....     0.000001: Unknown type 999\n"
    );
}

/// function_graph prints events as comments at the current depth
/// (Linux 6.1: ` 0)               |  /* sched_waking: comm=rcu_preempt pid=15 prio=120 target_cpu=000 */`).
#[test]
fn function_graph_prints_events_as_comments() {
    let (s, _) = Syms::layout(&["schedule", "pick_next_task"]);
    let t = Tasks::with(&[(15, "rcu_preempt"), (94, "sh")]);
    let o = opts();
    let f = s.addr("schedule");
    let g = s.addr("pick_next_task");
    let rcu = task("rcu_preempt", 15);
    let waking = {
        use te::sched::sched_waking as e;
        let mut buf = vec![0u8; e::size(&rcu, 0)];
        e::write(&mut buf, word(e::CALL.id, 0, 0, 94), &rcu, 0);
        TraceRecord::new(500, buf)
    };
    let out = render(
        cfg(&o, Tracer::FunctionGraph, &s, &t, 1),
        vec![vec![
            waking,
            ent_rec(1000, 94, f, 0),
            ent_rec(1100, 94, g, 1),
            irq_rec(1200, 94),
            ret_rec(1300, 94, g, 1, 1100),
            ret_rec(2000, 94, f, 0, 1000),
        ]],
    );
    assert_eq!(
        out,
        " 0)               |  /* sched_waking: comm=rcu_preempt pid=15 prio=120 target_cpu=000 */\n\
         \x200)               |  schedule() {\n\
         \x200)               |    pick_next_task() {\n\
         \x200)               |      /* irq_handler_entry: irq=4 name=ttyS0 */\n\
         \x200)   0.200 us    |    }\n\
         \x200)   1.000 us    |  }\n"
    );
}

/// A trace event's record decodes whole (its printer needs every byte,
/// dynamic strings included) and encodes back to the same bytes.
#[test]
fn event_records_decode_whole() {
    use tracer::entry::Entry;
    let rec = irq_rec(1, 94);
    let Ok(Entry::Event(ev)) = Entry::decode(&rec.payload) else {
        panic!("not an event record");
    };
    assert_eq!(ev.ent.pid, 94);
    assert_eq!(ev.raw, rec.payload);
    assert_eq!(Entry::Event(ev).to_vec(), rec.payload);
    // Types up to TRACE_LAST_TYPE that this crate does not decode stay Other.
    let mut ctx = vec![0u8; 8];
    ctx[0] = tracer::entry::TRACE_MMIO_RW as u8;
    assert!(matches!(Entry::decode(&ctx), Ok(Entry::Other(_))));
}
