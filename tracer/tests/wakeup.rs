//! The wakeup latency tracers' records: `ctx_switch_entry` (TRACE_CTX and
//! TRACE_WAKE), their format files (Linux 6.1's, byte for byte, so
//! trace-cmd decodes the records) and their text in every output mode
//! (Linux: kernel/trace/trace_output.c, `trace_ctxwake_*`).

mod output_support;

use output_support::*;
use tracer::entry::*;
use tracer::events;
use tracer::options::{TraceOption, Tracer};
use tracer::output::merge::TraceRecord;

/// `cat /tracing/events/ftrace/context_switch/format` on Linux 6.1.
const CONTEXT_SWITCH_GOLDEN: &str = r#"name: context_switch
ID: 2
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:unsigned int prev_pid;	offset:8;	size:4;	signed:0;
	field:unsigned int next_pid;	offset:12;	size:4;	signed:0;
	field:unsigned int next_cpu;	offset:16;	size:4;	signed:0;
	field:unsigned char prev_prio;	offset:20;	size:1;	signed:0;
	field:unsigned char prev_state;	offset:21;	size:1;	signed:0;
	field:unsigned char next_prio;	offset:22;	size:1;	signed:0;
	field:unsigned char next_state;	offset:23;	size:1;	signed:0;

print fmt: "%u:%u:%u  ==> %u:%u:%u [%03u]", REC->prev_pid, REC->prev_prio, REC->prev_state, REC->next_pid, REC->next_prio, REC->next_state, REC->next_cpu
"#;

/// `cat /tracing/events/ftrace/wakeup/format` on Linux 6.1.
const WAKEUP_GOLDEN: &str = r#"name: wakeup
ID: 3
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:unsigned int prev_pid;	offset:8;	size:4;	signed:0;
	field:unsigned int next_pid;	offset:12;	size:4;	signed:0;
	field:unsigned int next_cpu;	offset:16;	size:4;	signed:0;
	field:unsigned char prev_prio;	offset:20;	size:1;	signed:0;
	field:unsigned char prev_state;	offset:21;	size:1;	signed:0;
	field:unsigned char next_prio;	offset:22;	size:1;	signed:0;
	field:unsigned char next_state;	offset:23;	size:1;	signed:0;

print fmt: "%u:%u:%u  ==+ %u:%u:%u [%03u]", REC->prev_pid, REC->prev_prio, REC->prev_state, REC->next_pid, REC->next_prio, REC->next_state, REC->next_cpu
"#;

#[test]
fn format_files_are_linuxs() {
    assert_eq!(events::CONTEXT_SWITCH.format_file(), CONTEXT_SWITCH_GOLDEN);
    assert_eq!(events::WAKEUP.format_file(), WAKEUP_GOLDEN);
    assert_eq!(
        (events::CONTEXT_SWITCH.id, events::WAKEUP.id),
        (TRACE_CTX, TRACE_WAKE)
    );
    // Both are among the events whose format files tracefs and
    // trace-export give, in trace_entries.h order (after funcgraph_exit).
    let names: Vec<&str> = events::FTRACE_EVENTS.iter().map(|e| e.name).collect();
    let at = names.iter().position(|n| *n == "context_switch").unwrap();
    assert_eq!(
        &names[at - 1..=at + 1],
        ["funcgraph_exit", "context_switch", "wakeup"]
    );
    // The layout they describe is the one the record encodes.
    for ev in [&events::CONTEXT_SWITCH, &events::WAKEUP] {
        let end = ev.offsets().map(|(f, off)| off + f.size).max();
        assert_eq!(end, Some(CtxSwitchEntry::SIZE as u32));
    }
}

fn ctx(type_: u16, pid: i32, prev: (u32, u8, u8), next: (u32, u8, u8), cpu: u32) -> CtxSwitchEntry {
    CtxSwitchEntry {
        ent: TraceEntry {
            type_,
            flags: TRACE_FLAG_IRQS_OFF,
            preempt_count: 3,
            pid,
        },
        prev_pid: prev.0,
        prev_prio: prev.1,
        prev_state: prev.2,
        next_pid: next.0,
        next_prio: next.1,
        next_state: next.2,
        next_cpu: cpu,
    }
}

fn rec(ts: u64, e: CtxSwitchEntry) -> TraceRecord {
    TraceRecord::new(ts, Entry::CtxSwitch(e).to_vec())
}

#[test]
fn record_layout_round_trips() {
    let e = ctx(TRACE_WAKE, 7, (7, 120, 0), (2389, 94, 0), 3);
    let v = Entry::CtxSwitch(e).to_vec();
    assert_eq!(v.len(), 24);
    assert_eq!(&v[0..2], &3u16.to_le_bytes());
    assert_eq!(&v[8..12], &7u32.to_le_bytes());
    assert_eq!(&v[12..16], &2389u32.to_le_bytes());
    assert_eq!(&v[16..20], &3u32.to_le_bytes());
    assert_eq!(&v[20..24], &[120, 0, 94, 0]);
    assert_eq!(Entry::decode(&v), Ok(Entry::CtxSwitch(e)));
    assert!(e.is_wake());
    let c = ctx(TRACE_CTX, 7, (7, 120, 1), (2389, 94, 0), 3);
    assert!(!c.is_wake());
    assert_eq!(CtxSwitchEntry::decode(&Entry::CtxSwitch(c).to_vec()), Ok(c));
    // Short input and other types are refused, not misread.
    assert!(CtxSwitchEntry::decode(&v[..20]).is_err());
    let f = Entry::Function(FtraceEntry {
        ent: hdr(1, 0, 0),
        ip: 1,
        parent_ip: 2,
    })
    .to_vec();
    assert!(CtxSwitchEntry::decode(&f).is_err());
}

#[test]
fn task_states() {
    // sched_switch's prev_state bits to task_state_index() to a letter.
    assert_eq!(task_state_index(0), 0);
    assert_eq!(task_state_index(0x01), 1);
    assert_eq!(task_state_index(0x02), 2);
    assert_eq!(task_state_index(0x10), 5);
    let letters: String = (0..=8).map(task_index_to_char).collect();
    assert_eq!(letters, "RSDTtXZPI");
    assert_eq!(task_index_to_char(9), '?');
    assert_eq!(task_index_to_char(255), '?');
}

/// The wake-up and switch lines of a wakeup_rt trace in latency format
/// (Documentation/trace/ftrace.rst's wakeup_rt example, with Linux 6.x's
/// `%7d` pid width and six context columns).
#[test]
fn latency_format_lines() {
    let (s, _) = Syms::layout(&["f"]);
    let t = Tasks::with(&[(2389, "sleep")]);
    let mut o = opts();
    o.set(TraceOption::LatencyFmt, true);
    let mut c = cfg(&o, Tracer::Nop, &s, &t, 4);
    c.time_start = 1_000_000;
    let cpus = vec![
        vec![],
        vec![],
        vec![],
        vec![
            rec(1_000_000, ctx(TRACE_WAKE, 0, (0, 120, 0), (2389, 94, 0), 3)),
            rec(1_005_000, ctx(TRACE_CTX, 0, (0, 120, 0), (2389, 94, 0), 3)),
        ],
    ];
    assert_eq!(
        render(c, cpus),
        concat!(
            "  <idle>-0         3d..3.    0us :        0:120:R   + [003]    2389: 94:R sleep\n",
            "  <idle>-0         3d..3.    5us :        0:120:R ==> [003]    2389: 94:R sleep\n",
        )
    );
}

/// The default (non-latency) format, a blocked prev task, and a wakee
/// whose name is unknown.
#[test]
fn default_format_line() {
    let (s, _) = Syms::layout(&["f"]);
    let t = Tasks::with(&[(12, "busy")]);
    let o = opts();
    let c = cfg(&o, Tracer::Nop, &s, &t, 4);
    let out = render(
        c,
        vec![vec![rec(
            2_000_000_000,
            ctx(TRACE_CTX, 12, (12, 49, 5), (77, 49, 0), 0),
        )]],
    );
    assert_eq!(
        out,
        "            busy-12      [000] d..3.     2.000000:       12: 49:X ==> [000]      77: 49:R <...>\n"
    );
}

#[test]
fn raw_hex_and_bin_lines() {
    let (s, _) = Syms::layout(&["f"]);
    let t = Tasks::with(&[]);
    let wake = ctx(TRACE_WAKE, 5, (5, 120, 1), (9, 49, 0), 2);
    let sw = ctx(TRACE_CTX, 5, (5, 120, 1), (9, 49, 0), 2);

    // trace_ctxwake_raw(): a wake-up's prev state is `+`.
    let mut o = opts();
    o.set(TraceOption::Raw, true);
    let out = render(
        cfg(&o, Tracer::Nop, &s, &t, 1),
        vec![vec![rec(1000, wake), rec(2000, sw)]],
    );
    assert_eq!(
        out,
        "5 0 1000 5 120 + 2 9 49 R\n5 0 2000 5 120 S 2 9 49 R\n"
    );

    // trace_ctxwake_hex(): the state letters, T as an int.
    let mut o = opts();
    o.set(TraceOption::Hex, true);
    let out = render(cfg(&o, Tracer::Nop, &s, &t, 1), vec![vec![rec(1000, sw)]]);
    assert_eq!(
        out,
        "00000005 00000000 00000000000003e8 00000005 78 53 00000002 00000009 31 00000052 \n"
    );

    // trace_ctxwake_bin(): the fields as stored.
    let mut o = opts();
    o.set(TraceOption::Bin, true);
    let out = render_bytes(cfg(&o, Tracer::Nop, &s, &t, 1), vec![vec![rec(1000, sw)]]);
    let mut want = Vec::new();
    want.extend_from_slice(&5i32.to_le_bytes());
    want.extend_from_slice(&0i32.to_le_bytes());
    want.extend_from_slice(&1000u64.to_le_bytes());
    want.extend_from_slice(&5u32.to_le_bytes());
    want.extend_from_slice(&[120, 1]);
    want.extend_from_slice(&2u32.to_le_bytes());
    want.extend_from_slice(&9u32.to_le_bytes());
    want.extend_from_slice(&[49, 0]);
    assert_eq!(out, want);
}
