//! The `func_repeats` record of the `func-no-repeats` option: its format
//! file is Linux 6.1's, byte for byte (so trace-cmd decodes the records).

use tracer::entry::{FuncRepeatsEntry, TRACE_FUNC_REPEATS};
use tracer::events;

/// `cat /tracing/events/ftrace/func_repeats/format` on Linux 6.1 (x86_64).
const GOLDEN: &str = r#"name: func_repeats
ID: 19
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:unsigned long ip;	offset:8;	size:8;	signed:0;
	field:unsigned long parent_ip;	offset:16;	size:8;	signed:0;
	field:u16 count;	offset:24;	size:2;	signed:0;
	field:u16 top_delta_ts;	offset:26;	size:2;	signed:0;
	field:u32 bottom_delta_ts;	offset:28;	size:4;	signed:0;

print fmt: " %ps <-%ps\t(repeats:%u  delta: -%llu)", (void *)REC->ip, (void *)REC->parent_ip, REC->count, (((u64)(REC)->top_delta_ts << 32) | (REC)->bottom_delta_ts)
"#;

#[test]
fn format_file_is_linuxs() {
    assert_eq!(events::FUNC_REPEATS.format_file(), GOLDEN);
    assert_eq!(events::FUNC_REPEATS.id, TRACE_FUNC_REPEATS);
    // It is one of the events whose format files tracefs and trace-export give.
    let found = events::FTRACE_EVENTS
        .iter()
        .find(|e| e.name == "func_repeats");
    assert_eq!(found.map(|e| e.format_file()).as_deref(), Some(GOLDEN));
    // The layout the format file describes is the one the record encodes.
    let end = events::FUNC_REPEATS
        .offsets()
        .map(|(f, off)| off + f.size)
        .max();
    assert_eq!(end, Some(FuncRepeatsEntry::SIZE as u32));
}
