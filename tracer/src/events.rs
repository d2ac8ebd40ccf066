//! The text of `events/header_page`, `events/header_event` and the
//! `events/ftrace/<name>/format` files, byte-identical to Linux 6.6 on x86_64.
//!
//! Linux does not store these texts: `kernel/trace/trace_export.c` turns each
//! `FTRACE_ENTRY()` of trace_entries.h into a table of fields (type string,
//! size, alignment, signedness, array length), `event_define_fields()`
//! (trace_events.c) lays them out after the 8-byte common header with
//! `ALIGN(offset, align)`, and `f_show()` prints them. We do the same from a
//! table that mirrors trace_entries.h, so the offsets are computed, not typed
//! in. `ring_buffer_print_page_header()` / `ring_buffer_print_entry_header()`
//! (ring_buffer.c) give the two header files.

use alloc::format;
use alloc::string::String;
use core::fmt::Write;

use crate::entry::{
    TRACE_CTX, TRACE_FN, TRACE_FUNC_REPEATS, TRACE_GRAPH_ENT, TRACE_GRAPH_RET, TRACE_PRINT,
    TRACE_STACK, TRACE_WAKE,
};
use crate::ring_buffer::event::{
    RINGBUF_TYPE_DATA_TYPE_LEN_MAX, RINGBUF_TYPE_PADDING, RINGBUF_TYPE_TIME_EXTEND,
    RINGBUF_TYPE_TIME_STAMP,
};

/// One field of an event, as `trace_export.c` describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldDesc {
    /// C type as printed (without array brackets).
    pub ty: &'static str,
    pub name: &'static str,
    /// `sizeof` of the field (0 for a dynamic array).
    pub size: u32,
    /// Alignment used for layout (1 for `__field_packed`).
    pub align: u32,
    pub signed: bool,
    pub kind: FieldKind,
}

/// Plain field, fixed array (`__array`, printed `name[len]`), or dynamic
/// array (`__dynamic_array`, printed `name[]`, size 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    Scalar,
    Array(u32),
    Dynamic,
}

const fn scalar(
    ty: &'static str,
    name: &'static str,
    size: u32,
    align: u32,
    signed: bool,
) -> FieldDesc {
    FieldDesc {
        ty,
        name,
        size,
        align,
        signed,
        kind: FieldKind::Scalar,
    }
}

/// `unsigned long` on x86_64.
const fn ulong(name: &'static str) -> FieldDesc {
    scalar("unsigned long", name, 8, 8, false)
}

/// The common fields every event starts with (`trace_define_common_fields()`).
pub const COMMON_FIELDS: [(&str, &str, u32, u32, bool); 4] = [
    ("unsigned short", "common_type", 0, 2, false),
    ("unsigned char", "common_flags", 2, 1, false),
    ("unsigned char", "common_preempt_count", 3, 1, false),
    ("int", "common_pid", 4, 4, true),
];

/// An event of the `ftrace` system (an `FTRACE_ENTRY()`).
#[derive(Clone, Copy, Debug)]
pub struct FtraceEvent {
    pub name: &'static str,
    pub id: u16,
    pub fields: &'static [FieldDesc],
    /// The `print fmt:` text (Linux stringifies `F_printk()` with `__entry`
    /// replaced by `REC`).
    pub print_fmt: &'static str,
}

/// `function` (TRACE_FN).
pub const FUNCTION: FtraceEvent = FtraceEvent {
    name: "function",
    id: TRACE_FN,
    fields: &[ulong("ip"), ulong("parent_ip")],
    print_fmt: "\" %ps <-- %ps\", (void *)REC->ip, (void *)REC->parent_ip",
};

/// `funcgraph_entry` (TRACE_GRAPH_ENT, packed fields).
pub const FUNCGRAPH_ENTRY: FtraceEvent = FtraceEvent {
    name: "funcgraph_entry",
    id: TRACE_GRAPH_ENT,
    fields: &[
        scalar("unsigned long", "func", 8, 1, false),
        scalar("int", "depth", 4, 1, true),
    ],
    print_fmt: "\"--> %ps (%d)\", (void *)REC->func, REC->depth",
};

/// `funcgraph_exit` (TRACE_GRAPH_RET, packed fields, no retval).
pub const FUNCGRAPH_EXIT: FtraceEvent = FtraceEvent {
    name: "funcgraph_exit",
    id: TRACE_GRAPH_RET,
    fields: &[
        scalar("unsigned long", "func", 8, 1, false),
        scalar("int", "depth", 4, 1, true),
        scalar("unsigned int", "overrun", 4, 1, false),
        scalar("unsigned long long", "calltime", 8, 1, false),
        scalar("unsigned long long", "rettime", 8, 1, false),
    ],
    print_fmt:
        "\"<-- %ps (%d) (start: %llx  end: %llx) over: %d\", (void *)REC->func, REC->depth, \
                REC->calltime, REC->rettime, REC->depth",
};

/// The fields of `struct ctx_switch_entry` (`FTRACE_CTX_FIELDS`).
const CTX_FIELDS: [FieldDesc; 7] = [
    scalar("unsigned int", "prev_pid", 4, 4, false),
    scalar("unsigned int", "next_pid", 4, 4, false),
    scalar("unsigned int", "next_cpu", 4, 4, false),
    scalar("unsigned char", "prev_prio", 1, 1, false),
    scalar("unsigned char", "prev_state", 1, 1, false),
    scalar("unsigned char", "next_prio", 1, 1, false),
    scalar("unsigned char", "next_state", 1, 1, false),
];

/// `context_switch` (TRACE_CTX): the wakeup tracers' switch to the woken task.
pub const CONTEXT_SWITCH: FtraceEvent = FtraceEvent {
    name: "context_switch",
    id: TRACE_CTX,
    fields: &CTX_FIELDS,
    print_fmt: "\"%u:%u:%u  ==> %u:%u:%u [%03u]\", REC->prev_pid, REC->prev_prio, \
                REC->prev_state, REC->next_pid, REC->next_prio, REC->next_state, REC->next_cpu",
};

/// `wakeup` (TRACE_WAKE): the wakeup tracers' wake-up (Linux's
/// `FTRACE_ENTRY_DUP` of `context_switch`).
pub const WAKEUP: FtraceEvent = FtraceEvent {
    name: "wakeup",
    id: TRACE_WAKE,
    fields: &CTX_FIELDS,
    print_fmt: "\"%u:%u:%u  ==+ %u:%u:%u [%03u]\", REC->prev_pid, REC->prev_prio, \
                REC->prev_state, REC->next_pid, REC->next_prio, REC->next_state, REC->next_cpu",
};

/// `print` (TRACE_PRINT): `trace_marker` writes.
pub const PRINT: FtraceEvent = FtraceEvent {
    name: "print",
    id: TRACE_PRINT,
    fields: &[
        ulong("ip"),
        FieldDesc {
            ty: "char",
            name: "buf",
            size: 0,
            align: 1,
            signed: true,
            kind: FieldKind::Dynamic,
        },
    ],
    print_fmt: "\"%ps: %s\", (void *)REC->ip, REC->buf",
};

/// `kernel_stack` (TRACE_STACK).
pub const KERNEL_STACK: FtraceEvent = FtraceEvent {
    name: "kernel_stack",
    id: TRACE_STACK,
    fields: &[
        scalar("int", "size", 4, 4, true),
        FieldDesc {
            ty: "unsigned long",
            name: "caller",
            size: 64,
            align: 8,
            signed: false,
            kind: FieldKind::Array(8),
        },
    ],
    print_fmt: "\"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\" \"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\" \
                \"\\t=> %ps\\n\\t=> %ps\\n\", (void *)REC->caller[0], (void *)REC->caller[1], \
                (void *)REC->caller[2], (void *)REC->caller[3], (void *)REC->caller[4], \
                (void *)REC->caller[5], (void *)REC->caller[6], (void *)REC->caller[7]",
};

/// `func_repeats` (TRACE_FUNC_REPEATS): the function tracer's
/// `func-no-repeats` records.
pub const FUNC_REPEATS: FtraceEvent = FtraceEvent {
    name: "func_repeats",
    id: TRACE_FUNC_REPEATS,
    fields: &[
        ulong("ip"),
        ulong("parent_ip"),
        scalar("u16", "count", 2, 2, false),
        scalar("u16", "top_delta_ts", 2, 2, false),
        scalar("u32", "bottom_delta_ts", 4, 4, false),
    ],
    print_fmt: "\" %ps <-%ps\\t(repeats:%u  delta: -%llu)\", (void *)REC->ip, \
                (void *)REC->parent_ip, REC->count, \
                (((u64)(REC)->top_delta_ts << 32) | (REC)->bottom_delta_ts)",
};

/// The events this tracer produces, in `trace_entries.h` order.
pub const FTRACE_EVENTS: [&FtraceEvent; 8] = [
    &FUNCTION,
    &FUNCGRAPH_ENTRY,
    &FUNCGRAPH_EXIT,
    &CONTEXT_SWITCH,
    &WAKEUP,
    &KERNEL_STACK,
    &PRINT,
    &FUNC_REPEATS,
];

impl FtraceEvent {
    /// Field offsets as `event_define_fields()` computes them: start after
    /// `struct trace_entry` (8 bytes), align each field, add its size.
    pub fn offsets(&self) -> impl Iterator<Item = (FieldDesc, u32)> + '_ {
        let mut offset = 8u32;
        self.fields.iter().map(move |f| {
            offset = offset.div_ceil(f.align) * f.align;
            let here = offset;
            offset += f.size;
            (*f, here)
        })
    }

    /// The `format` file text (`f_show()`).
    pub fn format_file(&self) -> String {
        format_file(
            self.name,
            self.id,
            self.offsets().map(|(f, off)| {
                let name = match f.kind {
                    FieldKind::Scalar => String::from(f.name),
                    FieldKind::Array(n) => format!("{}[{}]", f.name, n),
                    FieldKind::Dynamic => format!("{}[]", f.name),
                };
                (f.ty, name, off, f.size, f.signed)
            }),
            self.print_fmt,
        )
    }
}

/// An event's `format` file (Linux: `f_show()`): name, id, the common
/// fields, a blank line, the event's fields as (C type, name with any
/// `[N]`, offset, size, signed), a blank line, the `print fmt:` line.
pub fn format_file(
    name: &str,
    id: u16,
    fields: impl Iterator<Item = (&'static str, String, u32, u32, bool)>,
    print_fmt: &str,
) -> String {
    let mut s = String::new();
    let _ = write!(s, "name: {}\nID: {}\nformat:\n", name, id);
    let common = COMMON_FIELDS
        .iter()
        .map(|&(ty, name, off, size, signed)| (ty, String::from(name), off, size, signed));
    for (ty, name, off, size, signed) in common {
        let _ = writeln!(
            s,
            "\tfield:{} {};\toffset:{};\tsize:{};\tsigned:{};",
            ty, name, off, size, signed as u8
        );
    }
    s.push('\n');
    for (ty, name, off, size, signed) in fields {
        let _ = writeln!(
            s,
            "\tfield:{} {};\toffset:{};\tsize:{};\tsigned:{};",
            ty, name, off, size, signed as u8
        );
    }
    let _ = write!(s, "\nprint fmt: {}\n", print_fmt);
    s
}

/// `events/header_page` for sub-buffers with `data_size` bytes of data
/// (4080 for 4 KiB pages: 4096 minus the 16-byte `buffer_data_page` header).
pub fn header_page(data_size: u32) -> String {
    format!(
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
         \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
         \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
         \tfield: char data;\toffset:16;\tsize:{};\tsigned:1;\n",
        data_size
    )
}

/// `events/header_event`: the compressed ring-buffer event header.
pub fn header_event() -> String {
    format!(
        "# compressed entry header\n\
         \ttype_len    :    5 bits\n\
         \ttime_delta  :   27 bits\n\
         \tarray       :   32 bits\n\
         \n\
         \tpadding     : type == {}\n\
         \ttime_extend : type == {}\n\
         \ttime_stamp : type == {}\n\
         \tdata max type_len  == {}\n",
        RINGBUF_TYPE_PADDING,
        RINGBUF_TYPE_TIME_EXTEND,
        RINGBUF_TYPE_TIME_STAMP,
        RINGBUF_TYPE_DATA_TYPE_LEN_MAX
    )
}
