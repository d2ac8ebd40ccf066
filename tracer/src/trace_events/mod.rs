//! Trace events: one declaration per event, several "stages" that expand it
//! (Linux: include/trace/events/*.h read by include/trace/trace_events.h and
//! include/trace/stages/*.h).
//!
//! In Linux an event is declared once with `TRACE_EVENT(name, TP_PROTO,
//! TP_ARGS, TP_STRUCT__entry, TP_fast_assign, TP_printk)`, and the header is
//! included several times with different definitions of `TRACE_EVENT`: once
//! to make the call site `trace_<name>()`, once to make the record layout,
//! the `format` file and the printer. Rust's version of that trick is the
//! "X-macro": each system file here defines a `macro_rules!` list (for
//! example [`sched_events!`](crate::sched_events)) that hands every
//! declaration of the system to a *stage* macro named by its caller.
//!
//! - This crate's stage, [`define_event_records!`](crate::define_event_records),
//!   makes for each event a module with the record (`#[repr(C)]`, the same
//!   layout as Linux's `struct trace_event_raw_<name>`), `assign` (the
//!   `TP_fast_assign` part: arguments to record), the field table (offsets
//!   from `offset_of!`, so the `format` file cannot disagree with the record)
//!   and `print` (the `TP_printk` part).
//! - The kernel's stages make the tracepoint and its call site
//!   (`kernel/src/events.rs`) and the probe that writes the record into the
//!   ring buffer (`kernel/src/trace/events.rs`).
//!
//! Since this crate cannot see the kernel's types, tracepoint arguments are
//! plain values or the small views defined here ([`TaskInfo`]).

use alloc::format;
use alloc::string::String;
use core::fmt::Write;

use crate::events::COMMON_FIELDS;
use crate::output::config::SymbolResolver;
use crate::output::seq::TraceSeq;

pub mod sched;
pub mod set_event;

/// What an event record needs to know about a task (the parts of
/// `task_struct` that Linux's sched events copy).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskInfo {
    pub comm: [u8; 16],
    pub pid: i32,
    pub prio: i32,
}

/// The first 8 bytes of every record (`struct trace_entry`), as the
/// little-endian word the kernel's `trace_entry_word` computes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Common {
    pub common_type: u16,
    pub common_flags: u8,
    pub common_preempt_count: u8,
    pub common_pid: i32,
}

impl Common {
    /// Splits the packed word `type | flags << 16 | pc << 24 | pid << 32`.
    #[inline(always)]
    pub const fn from_word(w: u64) -> Common {
        Common {
            common_type: w as u16,
            common_flags: (w >> 16) as u8,
            common_preempt_count: (w >> 24) as u8,
            common_pid: (w >> 32) as i32,
        }
    }
}

/// One field of an event as the `format` file lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventField {
    /// The C type as Linux prints it (`pid_t`, `char`, `__data_loc char[]`).
    pub ty: &'static str,
    pub name: &'static str,
    pub offset: u32,
    pub size: u32,
    pub signed: bool,
    /// `Some(n)` for a fixed array, printed `name[n]`.
    pub array: Option<u32>,
}

/// Everything tracing knows about one event (Linux: `struct
/// trace_event_call` with its class).
#[derive(Debug)]
pub struct TraceEventCall {
    pub system: &'static str,
    pub name: &'static str,
    /// The record type (`common_type`), above `TRACE_LAST_TYPE`.
    pub id: u16,
    pub fields: &'static [EventField],
    /// Size of the fixed part of the record.
    pub size: usize,
    /// The `print fmt:` line after its label, exactly as Linux prints it.
    pub print_fmt: &'static str,
    /// Prints the `TP_printk` text of a record (everything after
    /// `"<name>: "`). `rec` is the whole record, common header included.
    pub print: fn(rec: &[u8], out: &mut TraceSeq, syms: &dyn SymbolResolver),
}

impl TraceEventCall {
    /// The `events/SYSTEM/NAME/format` file (Linux: `f_show()`).
    pub fn format_file(&self) -> String {
        let mut s = String::new();
        let _ = write!(s, "name: {}\nID: {}\nformat:\n", self.name, self.id);
        for (ty, name, off, size, signed) in COMMON_FIELDS {
            let _ = writeln!(
                s,
                "\tfield:{} {};\toffset:{};\tsize:{};\tsigned:{};",
                ty, name, off, size, signed as u8
            );
        }
        s.push('\n');
        for f in self.fields {
            let name = match f.array {
                Some(n) => format!("{}[{}]", f.name, n),
                None => String::from(f.name),
            };
            let _ = writeln!(
                s,
                "\tfield:{} {};\toffset:{};\tsize:{};\tsigned:{};",
                f.ty, name, f.offset, f.size, f.signed as u8
            );
        }
        let _ = write!(s, "\nprint fmt: {}\n", self.print_fmt);
        s
    }
}

/// A Rust type that can be a record field: whether it is a fixed array
/// (and of how many elements). Signedness comes from the C type name.
pub trait FieldType {
    const ARRAY: Option<u32> = None;
}
impl FieldType for i8 {}
impl FieldType for u8 {}
impl FieldType for i16 {}
impl FieldType for u16 {}
impl FieldType for i32 {}
impl FieldType for u32 {}
impl FieldType for i64 {}
impl FieldType for u64 {}
impl<const N: usize> FieldType for [u8; N] {
    const ARRAY: Option<u32> = Some(N as u32);
}

/// `is_signed_type()` of a C type name, as Linux 6.1 on x86_64 reports it
/// (`char` is signed there; 6.2 and later build with `-funsigned-char`).
pub const fn c_type_signed(ty: &str) -> bool {
    let b = ty.as_bytes();
    !(starts_with(b, b"unsigned")
        || starts_with(b, b"u8")
        || starts_with(b, b"u16")
        || starts_with(b, b"u32")
        || starts_with(b, b"u64")
        || starts_with(b, b"size_t")
        || starts_with(b, b"bool")
        || starts_with(b, b"gfp_t")
        || starts_with(b, b"const void *")
        || starts_with(b, b"void *"))
}

const fn starts_with(s: &[u8], p: &[u8]) -> bool {
    if s.len() < p.len() {
        return false;
    }
    let mut i = 0;
    while i < p.len() {
        if s[i] != p[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A `char[16]` comm as text, up to its first NUL.
pub fn comm_str(c: &[u8]) -> &str {
    let n = c.iter().position(|&b| b == 0).unwrap_or(c.len());
    core::str::from_utf8(&c[..n]).unwrap_or("")
}

/// A comm for a record: `s` truncated to 15 bytes, NUL-padded.
pub fn comm_bytes(s: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    let n = s.len().min(15);
    c[..n].copy_from_slice(&s.as_bytes()[..n]);
    c
}

/// `__print_flags(value, delim, {bit, name}...)`: the names of the set
/// bits joined by `delim`; leftover bits as `0x<hex>`.
pub fn print_flags(out: &mut TraceSeq, mut value: u64, delim: &str, names: &[(u64, &str)]) {
    let mut first = true;
    for &(mask, name) in names {
        if mask != 0 && value & mask == mask {
            if !first {
                out.push_str(delim);
            }
            out.push_str(name);
            first = false;
            value &= !mask;
        }
    }
    if value != 0 {
        if !first {
            out.push_str(delim);
        }
        let _ = write!(out, "0x{:x}", value);
    }
}

/// Reads the record struct `R` from the front of `rec` (the ring buffer
/// keeps records only 4-byte aligned). `None` if `rec` is too short.
pub fn read_record<R: Copy>(rec: &[u8]) -> Option<R> {
    if rec.len() < core::mem::size_of::<R>() {
        return None;
    }
    // SAFETY: `rec` holds at least size_of::<R>() bytes; R is a plain-data
    // `#[repr(C)]` record of integer fields, valid for any bit pattern.
    Some(unsafe { core::ptr::read_unaligned(rec.as_ptr() as *const R) })
}

/// The stage that turns each declaration into a module with the record,
/// `assign`, the field table, the `TraceEventCall` and the printer (Linux:
/// the `TRACE_EVENT` definitions of include/trace/trace_events.h).
#[macro_export]
macro_rules! define_event_records {
    (
        system: $system:ident;
        $(
            $(#[$meta:meta])*
            event $name:ident, id $id:literal,
            ($($arg:ident : $argty:ty),* $(,)?)
            {
                struct { $($field:ident : $fty:ty = $cty:literal),* $(,)? }
                assign { $($afield:ident : $aexpr:expr),* $(,)? }
                print_fmt: $print_fmt:literal;
                print($e:ident, $out:ident, $syms:ident) $print:block
            }
        )*
    ) => {
        $(
            $(#[$meta])*
            #[allow(non_camel_case_types, dead_code, unused_variables)]
            pub mod $name {
                #[allow(unused_imports)]
                use core::fmt::Write as _;
                use $crate::trace_events::{Common, EventField, FieldType, TraceEventCall};

                /// The record (Linux: `struct trace_event_raw_<name>`).
                #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
                #[repr(C)]
                pub struct Record {
                    pub common: Common,
                    $(pub $field: $fty,)*
                }

                /// The `TP_fast_assign` part: the record for these
                /// arguments, behind the common header `common` (the word
                /// `trace_entry_word` computes).
                #[inline(always)]
                pub fn assign(common: u64, $($arg: $argty),*) -> Record {
                    Record {
                        common: Common::from_word(common),
                        $($afield: $aexpr,)*
                    }
                }

                /// Bytes the record of these arguments takes in the ring
                /// buffer (the fixed part plus any dynamic data).
                #[inline(always)]
                pub fn size($($arg: $argty),*) -> usize {
                    core::mem::size_of::<Record>()
                }

                /// Writes the record of these arguments into `buf` (a
                /// reservation of `size(..)` bytes), behind the common
                /// header `common`.
                #[inline(always)]
                pub fn write(buf: &mut [u8], common: u64, $($arg: $argty),*) {
                    let rec = assign(common, $($arg),*);
                    assert!(buf.len() >= core::mem::size_of::<Record>());
                    // SAFETY: `buf` holds at least size_of::<Record>()
                    // bytes (checked); the write is unaligned because the
                    // ring buffer aligns records to 4 bytes only.
                    unsafe { core::ptr::write_unaligned(buf.as_mut_ptr() as *mut Record, rec) };
                }

                pub const FIELDS: &[EventField] = &[
                    $(EventField {
                        ty: $cty,
                        name: stringify!($field),
                        offset: core::mem::offset_of!(Record, $field) as u32,
                        size: core::mem::size_of::<$fty>() as u32,
                        signed: $crate::trace_events::c_type_signed($cty),
                        array: <$fty as FieldType>::ARRAY,
                    },)*
                ];

                fn print(
                    rec: &[u8],
                    $out: &mut $crate::output::seq::TraceSeq,
                    $syms: &dyn $crate::output::config::SymbolResolver,
                ) {
                    match $crate::trace_events::read_record::<Record>(rec) {
                        Some($e) => $print,
                        None => $out.push_str("[LOST]"),
                    }
                }

                pub static CALL: TraceEventCall = TraceEventCall {
                    system: stringify!($system),
                    name: stringify!($name),
                    id: $id,
                    fields: FIELDS,
                    size: core::mem::size_of::<Record>(),
                    print_fmt: $print_fmt,
                    print,
                };
            }
        )*

        /// Every event of this system, in declaration order.
        pub static EVENTS: &[&$crate::trace_events::TraceEventCall] = &[$(&$name::CALL),*];
    };
}

/// Every declared event, system by system.
pub fn all_events() -> impl Iterator<Item = &'static TraceEventCall> {
    sched::EVENTS.iter().copied()
}

/// The event whose records have type `id`.
pub fn find_event(id: u16) -> Option<&'static TraceEventCall> {
    all_events().find(|e| e.id == id)
}
