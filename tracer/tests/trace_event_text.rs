//! Each declared event, written by its `write()` as a probe writes it and
//! printed by its printer, gives the text Linux 6.1 prints for it (the
//! expected lines are from Linux's `trace` file; pids, names and numbers
//! are whatever the record holds).

use tracer::output::config::SymbolResolver;
use tracer::output::seq::TraceSeq;
use tracer::trace_events::{self as te, comm_bytes, TaskInfo};

/// Knows two functions, as kallsyms would.
struct Syms;
impl SymbolResolver for Syms {
    fn lookup(&self, addr: u64) -> Option<(&str, u64, u64)> {
        const FUNCS: [(&str, u64, u64); 2] = [
            ("tracepoint_add_func", 0xffff_ffff_8100_1000, 0x3f0),
            ("tomoyo_check_open_permission", 0xffff_ffff_8100_2000, 0x190),
        ];
        FUNCS
            .iter()
            .find(|(_, start, size)| (*start..start + size).contains(&addr))
            .map(|&(name, start, size)| (name, addr - start, size))
    }
}

/// Prints the record `buf` with its event's printer (found by its type,
/// as the `trace` printer finds it).
fn text(buf: &[u8]) -> String {
    let ty = u16::from_le_bytes([buf[0], buf[1]]);
    let call = te::find_event(ty).expect("event type");
    let mut out = TraceSeq::new();
    (call.print)(buf, &mut out, &Syms);
    out.as_str().unwrap().to_string()
}

fn task(comm: &str, pid: i32, prio: i32) -> TaskInfo {
    TaskInfo {
        comm: comm_bytes(comm),
        pid,
        prio,
    }
}

/// `trace_entry_word` of an event id for pid 94.
fn word(id: u16) -> u64 {
    id as u64 | (94u64 << 32)
}

macro_rules! record {
    ($ev:ident :: $name:ident ( $($arg:expr),* )) => {{
        use te::$ev::$name as e;
        let mut buf = vec![0u8; e::size($($arg),*)];
        e::write(&mut buf, word(e::CALL.id), $($arg),*);
        buf
    }};
}

#[test]
fn sched_events() {
    let rcu = task("rcu_preempt", 15, 120);
    let sh = task("sh", 94, 120);
    let ls = task("ls", 95, 120);
    assert_eq!(
        text(&record!(sched::sched_switch(false, &task("swapper/1", 0, 120), &rcu, 0))),
        "prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rcu_preempt next_pid=15 next_prio=120"
    );
    assert_eq!(
        text(&record!(sched::sched_switch(true, &sh, &rcu, 1))),
        "prev_comm=sh prev_pid=94 prev_prio=120 prev_state=R+ ==> next_comm=rcu_preempt next_pid=15 next_prio=120"
    );
    assert_eq!(
        text(&record!(sched::sched_waking(&rcu, 1))),
        "comm=rcu_preempt pid=15 prio=120 target_cpu=001"
    );
    assert_eq!(
        text(&record!(sched::sched_wakeup(&rcu, 1))),
        "comm=rcu_preempt pid=15 prio=120 target_cpu=001"
    );
    assert_eq!(
        text(&record!(sched::sched_wakeup_new(&ls, 0))),
        "comm=ls pid=95 prio=120 target_cpu=000"
    );
    assert_eq!(
        text(&record!(sched::sched_process_fork(
            &sh,
            &task("sh", 95, 120)
        ))),
        "comm=sh pid=94 child_comm=sh child_pid=95"
    );
    assert_eq!(
        text(&record!(sched::sched_process_exit(&ls))),
        "comm=ls pid=95 prio=120"
    );
    assert_eq!(
        text(&record!(sched::sched_migrate_task(&ls, 0, 1))),
        "comm=ls pid=95 prio=120 orig_cpu=0 dest_cpu=1"
    );
}

#[test]
fn irq_events() {
    let buf = record!(irq::irq_handler_entry(4, "ttyS0"));
    // 16 fixed bytes, then "ttyS0\0": the word is (6 << 16) | 16.
    assert_eq!(buf.len(), 16 + 6);
    assert_eq!(&buf[12..16], &((6u32 << 16) | 16).to_le_bytes());
    assert_eq!(&buf[16..], b"ttyS0\0");
    assert_eq!(text(&buf), "irq=4 name=ttyS0");
    assert_eq!(
        text(&record!(irq::irq_handler_exit(4, 1))),
        "irq=4 ret=handled"
    );
    assert_eq!(
        text(&record!(irq::irq_handler_exit(4, 0))),
        "irq=4 ret=unhandled"
    );
}

#[test]
fn irq_vector_events() {
    for name in [
        "local_timer_entry",
        "local_timer_exit",
        "call_function_entry",
        "call_function_exit",
        "reschedule_entry",
        "reschedule_exit",
    ] {
        assert!(te::irq_vectors::EVENTS.iter().any(|e| e.name == name));
    }
    assert_eq!(
        text(&record!(irq_vectors::local_timer_entry(236))),
        "vector=236"
    );
    assert_eq!(
        text(&record!(irq_vectors::local_timer_exit(236))),
        "vector=236"
    );
    assert_eq!(
        text(&record!(irq_vectors::call_function_entry(251))),
        "vector=251"
    );
    assert_eq!(
        text(&record!(irq_vectors::call_function_exit(251))),
        "vector=251"
    );
    assert_eq!(
        text(&record!(irq_vectors::reschedule_entry(253))),
        "vector=253"
    );
    assert_eq!(
        text(&record!(irq_vectors::reschedule_exit(253))),
        "vector=253"
    );
}

#[test]
fn kmem_events() {
    use te::kmem::*;
    let site = 0xffff_ffff_8100_1000 + 0xf7;
    assert_eq!(
        text(&record!(kmem::kmalloc(site, 0xffff_8880_03c5_e000, 64, 64, GFP_KERNEL, -1))),
        "call_site=tracepoint_add_func+0xf7/0x3f0 ptr=ffff888003c5e000 bytes_req=64 bytes_alloc=64 gfp_flags=GFP_KERNEL node=-1 accounted=false"
    );
    assert_eq!(
        text(&record!(kmem::kmalloc(site, 0xffff_8880_03c5_e000, 16, 16, GFP_KERNEL_ACCOUNT | __GFP_ZERO, -1))),
        "call_site=tracepoint_add_func+0xf7/0x3f0 ptr=ffff888003c5e000 bytes_req=16 bytes_alloc=16 gfp_flags=GFP_KERNEL_ACCOUNT|__GFP_ZERO node=-1 accounted=true"
    );
    assert_eq!(
        text(&record!(kmem::kmalloc(0x1234, 0x10, 72, 96, GFP_ATOMIC | __GFP_NOWARN | 0x4000000, 0))),
        "call_site=0x1234 ptr=0000000000000010 bytes_req=72 bytes_alloc=96 gfp_flags=GFP_ATOMIC|__GFP_NOWARN|0x4000000 node=0 accounted=false"
    );
    assert_eq!(
        text(&record!(kmem::kmalloc(0x1234, 0x10, 8, 8, 0, 0))),
        "call_site=0x1234 ptr=0000000000000010 bytes_req=8 bytes_alloc=8 gfp_flags=none node=0 accounted=false"
    );
    assert_eq!(
        text(&record!(kmem::kfree(0xffff_ffff_8100_2000 + 0x107, 0))),
        "call_site=tomoyo_check_open_permission+0x107/0x190 ptr=0000000000000000"
    );
}

/// The GFP name table holds the values of Linux's print fmt, in its order.
#[test]
fn gfp_names_are_linuxs() {
    let data = include_str!("data/linux-6.1-formats.txt");
    let fmt = data
        .lines()
        .skip_while(|l| *l != "=== kmem/kmalloc")
        .find(|l| l.starts_with("print fmt: "))
        .unwrap();
    let names: Vec<&str> = fmt
        .split("\"}")
        .filter_map(|p| p.rsplit_once(", \"").map(|(_, n)| n))
        .collect();
    let ours: Vec<&str> = te::kmem::GFP_NAMES
        .iter()
        .map(|&(_, n)| n)
        .filter(|n| !n.is_empty())
        .collect();
    assert_eq!(names, ours);
    let expect = [
        ("GFP_TRANSHUGE", 0x1c24ca),
        ("GFP_TRANSHUGE_LIGHT", 0x1c20ca),
        ("GFP_HIGHUSER_MOVABLE", 0x100cca),
        ("GFP_KERNEL_ACCOUNT", 0x400cc0),
        ("GFP_KERNEL", 0xcc0),
        ("GFP_ATOMIC", 0xa20),
        ("__GFP_RECLAIM", 0xc00),
    ];
    for (name, v) in expect {
        assert!(te::kmem::GFP_NAMES.contains(&(v, name)), "{name}");
    }
}

#[test]
fn own_events() {
    let buf = record!(vfs::vfs_open("/tracing/trace", 0o1101, -22));
    assert_eq!(buf.len(), 20 + 15);
    assert_eq!(text(&buf), "filename=/tracing/trace flags=0x241 ret=-22");
    let buf = record!(shell::shell_command_entry(
        "echo 1 > /tracing/events/enable"
    ));
    assert_eq!(buf.len(), 12 + 32);
    assert_eq!(text(&buf), "line=echo 1 > /tracing/events/enable");
    assert_eq!(text(&record!(shell::shell_command_entry(""))), "line=");
    assert_eq!(text(&record!(shell::shell_command_exit(0))), "ret=0");
}

#[test]
fn dynamic_strings() {
    // A long string is cut to DATA_LOC_STR_MAX bytes and its NUL.
    let long = "x".repeat(5000);
    let buf = record!(shell::shell_command_entry(&long));
    assert_eq!(buf.len(), 12 + te::DATA_LOC_STR_MAX + 1);
    assert_eq!(text(&buf).len(), "line=".len() + te::DATA_LOC_STR_MAX);
    // A word pointing outside the record prints what lies inside it.
    let mut buf = record!(irq::irq_handler_entry(4, "ttyS0"));
    buf[12..16].copy_from_slice(&((100u32 << 16) | 18).to_le_bytes());
    assert_eq!(text(&buf), "irq=4 name=yS0");
    buf[12..16].copy_from_slice(&((4u32 << 16) | 900).to_le_bytes());
    assert_eq!(text(&buf), "irq=4 name=");
    // A record shorter than the fixed part is not read.
    assert_eq!(text(&buf[..10]), "[LOST]");
    // A fixed-size event's size is its record.
    assert_eq!(te::irq::irq_handler_exit::size(1, 1), 16);
}
