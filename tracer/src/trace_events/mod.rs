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
//!   (`kernel/src/events/`, `kernel/src/tracepoint.rs`) and the probe that
//!   writes the record into the ring buffer (`kernel/src/trace/events.rs`).
//!
//! Events with the same arguments, record and text are declared once as a
//! class, as Linux does with `DECLARE_EVENT_CLASS` and `DEFINE_EVENT`
//! (`sched_wakeup_template` for the three wakeups, `x86_irq_vector` for
//! the six vector events): the class gives the arguments, `struct`,
//! `assign`, `print_fmt` and `print`, and each of its events only a name
//! and an id. [`__event_classes!`](crate::__event_classes), which every
//! system macro goes through, copies the class into a plain declaration
//! per event before the stage sees them, so the stages know nothing of
//! classes and each event still has its own record module, tracepoint and
//! probe. [`for_each_event_system!`](crate::for_each_event_system) is the
//! one list of systems the kernel's stages and [`systems()`] are built from.
//!
//! Since this crate cannot see the kernel's types, tracepoint arguments are
//! plain values, `&str` for strings, or the small views defined here
//! ([`TaskInfo`]).
//!
//! The systems, one file each, with their ids: `sched` (300..),
//! `irq` (320..), `irq_vectors` (330..), `kmem` (340..), and this kernel's
//! own `vfs` (360..) and `shell` (370..) (see their module docs for why
//! those names). [`systems()`] lists them for the `events/` directory.
//! The printer (`crate::output`) finds an event by its record's type
//! ([`find_event`]) and prints `NAME: ` and the event's text.

use alloc::format;
use alloc::string::String;
use core::fmt::Write;

use crate::output::config::SymbolResolver;
use crate::output::seq::TraceSeq;

pub mod gate;
pub mod irq;
pub mod irq_vectors;
pub mod kmem;
pub mod preemptirq;
pub mod sched;
pub mod set_event;
pub mod shell;
pub mod vfs;

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

pub use crate::event_field::EventField;

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
        crate::events::format_file(
            self.name,
            self.id,
            self.fields.iter().map(|f| {
                let name = match f.array {
                    Some(n) => format!("{}[{}]", f.name, n),
                    None => String::from(f.name),
                };
                (f.ty, name, f.offset, f.size, f.signed)
            }),
            self.print_fmt,
        )
    }
}

/// A Rust type that can be a record field: whether it is a fixed array
/// (and of how many elements), and its bits as a filter reads them (the
/// value's little-endian bytes in the low bytes of a u64; 0 for an
/// array, which a numeric filter never reads). Signedness comes from the
/// C type name.
pub trait FieldType {
    const ARRAY: Option<u32> = None;
    fn bits(&self) -> u64;
}
macro_rules! int_field_type {
    ($($t:ty),*) => {$(
        impl FieldType for $t {
            #[inline(always)]
            fn bits(&self) -> u64 {
                *self as u64
            }
        }
    )*};
}
int_field_type!(i8, u8, i16, u16, i32, u32, i64, u64);
impl<const N: usize> FieldType for [u8; N] {
    const ARRAY: Option<u32> = Some(N as u32);
    fn bits(&self) -> u64 {
        0
    }
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

/// The longest string a `__data_loc char[]` field keeps, NUL excluded.
/// Linux copies the whole string and drops the event when the record
/// does not fit a ring-buffer page; here a longer string is cut to this
/// length so that the record always fits and its 16-bit length cannot
/// overflow.
pub const DATA_LOC_STR_MAX: usize = 1023;

/// Bytes a `__string` takes in the record: the string (at most
/// [`DATA_LOC_STR_MAX`] bytes) and its NUL (Linux: `strlen(src) + 1`).
#[inline(always)]
pub fn data_loc_str_size(s: &str) -> usize {
    if s.len() < DATA_LOC_STR_MAX {
        s.len() + 1
    } else {
        DATA_LOC_STR_MAX + 1
    }
}

/// Copies `s` and its NUL into `buf` at the place its `__data_loc` word
/// `loc` (`(len << 16) | offset`) names (`__assign_str()`). Nothing is
/// written outside `buf`.
#[inline(always)]
pub fn data_loc_copy(buf: &mut [u8], loc: u32, s: &str) {
    let off = (loc & 0xffff) as usize;
    let len = (loc >> 16) as usize;
    if let Some(dst) = buf.get_mut(off..off + len) {
        if let Some((nul, text)) = dst.split_last_mut() {
            text.copy_from_slice(&s.as_bytes()[..text.len()]);
            *nul = 0;
        }
    }
}

/// `__get_str()`: the string a `__data_loc` word `loc` points at inside
/// the record `rec`, up to its first NUL. A word that points outside the
/// record gives the part inside it (or an empty string); bytes that are
/// not UTF-8 give an empty string.
pub fn get_str(rec: &[u8], loc: u32) -> &str {
    let off = (loc & 0xffff) as usize;
    let len = (loc >> 16) as usize;
    let start = off.min(rec.len());
    let end = off.saturating_add(len).min(rec.len());
    let bytes = &rec[start..end];
    let n = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    core::str::from_utf8(&bytes[..n]).unwrap_or("")
}

/// What a printer sees: the decoded fixed part (fields reached through
/// `Deref`, `e.prev_pid`) and the whole record, for the dynamic fields
/// (`e.get_str(e.name)`, Linux's `__get_str(name)`).
pub struct RecordView<'a, R> {
    pub fixed: R,
    pub raw: &'a [u8],
}

impl<R> core::ops::Deref for RecordView<'_, R> {
    type Target = R;
    #[inline]
    fn deref(&self) -> &R {
        &self.fixed
    }
}

impl<'a, R> RecordView<'a, R> {
    /// `__get_str(field)` for the `__data_loc` word `loc`.
    pub fn get_str(&self, loc: u32) -> &'a str {
        get_str(self.raw, loc)
    }
}

/// One system: its name (the directory under `events/`) and its events.
#[derive(Debug)]
pub struct EventSystem {
    pub name: &'static str,
    pub events: &'static [&'static TraceEventCall],
}

/// Expands event classes into plain event declarations, then hands the
/// system to `$stage` (Linux: `DECLARE_EVENT_CLASS` + `DEFINE_EVENT`).
///
/// Every system macro wraps its declarations in this macro. Besides plain
/// `event NAME, id N, (ARGS) { BODY }` declarations it accepts a class:
///
/// ```text
/// class CLASS, (ARGS) { BODY }          // DECLARE_EVENT_CLASS
/// events {
///     /// doc of the first event
///     event NAME, id N;                 // DEFINE_EVENT(CLASS, NAME, ...)
///     ...
/// }
/// ```
///
/// Each `event NAME, id N;` of the class becomes
/// `event NAME, id N, (ARGS) { BODY }`, so the stages only ever see plain
/// declarations and each event still gets its own record module,
/// tracepoint and probe, with the class's layout and text. The class name
/// appears nowhere else (as in Linux's `format` files).
///
/// The macro is a "tt-muncher": it takes one declaration at a time from
/// the front of its input and appends its expansion to the accumulator in
/// `[...]`; when the input is empty it calls the stage.
#[doc(hidden)]
#[macro_export]
macro_rules! __event_classes {
    // Entry: `__event_classes! { STAGE; system: NAME; DECLARATIONS }`.
    ($stage:ident; system: $system:ident; $($decls:tt)*) => {
        $crate::__event_classes! { @munch $stage, $system, [] $($decls)* }
    };
    // Done: every class is expanded.
    (@munch $stage:ident, $system:ident, [$($out:tt)*]) => {
        $stage! { system: $system; $($out)* }
    };
    // A plain event: passed on as it is.
    (@munch $stage:ident, $system:ident, [$($out:tt)*]
        $(#[$meta:meta])*
        event $name:ident, id $id:literal, $args:tt $body:tt
        $($rest:tt)*
    ) => {
        $crate::__event_classes! { @munch $stage, $system,
            [$($out)* $(#[$meta])* event $name, id $id, $args $body]
            $($rest)*
        }
    };
    // A class and its events: one plain event per `event NAME, id N;`,
    // each with the class's arguments and body.
    (@munch $stage:ident, $system:ident, [$($out:tt)*]
        class $class:ident, $args:tt $body:tt
        events { $($(#[$meta:meta])* event $name:ident, id $id:literal;)* }
        $($rest:tt)*
    ) => {
        $crate::__event_classes! { @munch $stage, $system,
            [$($out)* $($(#[$meta])* event $name, id $id, $args $body)*]
            $($rest)*
        }
    };
}

/// The stage that turns each declaration into a module with the record,
/// `assign`, the field table, the `TraceEventCall` and the printer (Linux:
/// the `TRACE_EVENT` definitions of include/trace/trace_events.h).
///
/// A declaration (see sched.rs and irq.rs for examples):
///
/// ```text
/// event NAME, id N, (ARG: TYPE, ...) {
///     struct { FIELD: RUST_TYPE = "C type", ... }   // TP_STRUCT__entry
///     assign { FIELD: EXPR, ... }                  // TP_fast_assign
///     strings { FIELD: EXPR, ... }                 // optional: __string/__assign_str
///     print_fmt: "...";                            // the format file's text
///     print(e, out, syms) { ... }                  // TP_printk
/// }
/// ```
///
/// A dynamic string (`__string(FIELD, src)`) is a `u32` field of C type
/// `"__data_loc char[]"` in `struct`, left out of `assign` and named in
/// `strings` with the `&str` to copy. The stage sets its word to
/// `(len << 16) | offset` (len counts the NUL; the strings follow the
/// fixed part in `strings` order), `size()` adds the string bytes and
/// `write()` copies them; the printer reads them with `e.get_str(e.FIELD)`.
/// An event without `strings` compiles to exactly the fixed-size code.
///
/// Other stages (the kernel's tracepoints and probes) only need
/// `event NAME, id N, (ARGS)` and should match the body as
/// `{ $($body:tt)* }`.
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
                $(strings { $($dfield:ident : $dexpr:expr),* $(,)? })?
                print_fmt: $print_fmt:literal;
                print($e:ident, $out:ident, $syms:ident) $print:block
            }
        )*
    ) => {
        $(
            $(#[$meta])*
            #[allow(non_camel_case_types, dead_code, unused_variables, clippy::too_many_arguments)]
            pub mod $name {
                #[allow(unused_imports)]
                use core::fmt::Write as _;
                // FieldType is unused by an event without fields (lab 5's starter).
                #[allow(unused_imports)]
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
                /// `trace_entry_word` computes). Dynamic strings get their
                /// `__data_loc` words here; `write` copies their bytes.
                #[inline(always)]
                #[allow(unused_assignments)]
                pub fn assign(common: u64, $($arg: $argty),*) -> Record {
                    #[allow(unused_mut)]
                    let mut rec = Record {
                        common: Common::from_word(common),
                        $($afield: $aexpr,)*
                        $($($dfield: 0,)*)?
                    };
                    #[allow(unused_mut)]
                    let mut off = core::mem::size_of::<Record>();
                    $($(
                        let n = $crate::trace_events::data_loc_str_size($dexpr);
                        rec.$dfield = ((n as u32) << 16) | off as u32;
                        off += n;
                    )*)?
                    rec
                }

                /// Bytes the record of these arguments takes in the ring
                /// buffer (the fixed part plus any dynamic data).
                #[inline(always)]
                pub fn size($($arg: $argty),*) -> usize {
                    core::mem::size_of::<Record>()
                        $($(+ $crate::trace_events::data_loc_str_size($dexpr))*)?
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
                    $($(
                        $crate::trace_events::data_loc_copy(buf, rec.$dfield, $dexpr);
                    )*)?
                }

                /// The bits of the fixed field at `offset` in the record of
                /// these arguments, computed alone (its `assign`
                /// expression), without building the record: what a
                /// filter of one numeric test reads. 0 for any other
                /// offset.
                #[inline(always)]
                pub fn field_bits(offset: u32, $($arg: $argty),*) -> u64 {
                    $(
                        if offset == core::mem::offset_of!(Record, $afield) as u32 {
                            return FieldType::bits(&$aexpr);
                        }
                    )*
                    0
                }

                /// The type of this event's probes (the tracepoint's
                /// function type: the data, then the arguments).
                pub type Probe = fn(*mut (), $($argty),*);

                /// The gate in front of this event's probe (see
                /// `trace_events::gate`): `data` is a
                /// `ProbeGate<Probe>`; the hit goes on to its probe only
                /// if its test passes. (A safe function, as every probe:
                /// the tracepoint's function type.)
                #[allow(clippy::not_unsafe_ptr_arg_deref)]
                pub fn gate(data: *mut (), $($arg: $argty),*) {
                    // SAFETY: the gate is registered on the tracepoint
                    // only with the address of a ProbeGate<Probe>, which
                    // is freed only after it was unregistered and no CPU
                    // can still be in this call.
                    let g = unsafe { &*(data as *const $crate::trace_events::gate::ProbeGate<Probe>) };
                    if g.pass(field_bits(g.test.offset, $($arg),*)) {
                        (g.probe)(g.data, $($arg),*)
                    }
                }

                /// Whether the record of these arguments passes `filter`,
                /// if the filter is one test of one field (`None`
                /// otherwise): that field alone is computed from the
                /// arguments, nothing is built.
                #[inline(always)]
                pub fn field_test_keep(
                    filter: &$crate::event_filter::Filter,
                    $($arg: $argty),*
                ) -> Option<bool> {
                    let t = filter.field_test()?;
                    Some(t.keep(field_bits(t.offset, $($arg),*)))
                }

                /// Builds the record of these arguments on the stack,
                /// behind the common header `common`, and hands its bytes
                /// to `f` (what an event filter tests before anything is
                /// reserved in the ring buffer). A fixed-size record is
                /// the `Record` itself; one with strings is written into
                /// a stack buffer of the largest size it can have.
                #[inline(always)]
                pub fn with_record<T>(common: u64, $($arg: $argty,)* f: impl FnOnce(&[u8]) -> T) -> T {
                    const MAX: usize = core::mem::size_of::<Record>()
                        $($(+ { let _ = stringify!($dfield); $crate::trace_events::DATA_LOC_STR_MAX + 1 })*)?;
                    if MAX == core::mem::size_of::<Record>() {
                        let rec = assign(common, $($arg),*);
                        // SAFETY: `rec` is a live plain-data record of
                        // size_of::<Record>() bytes; the slice ends before
                        // it does. A filter reads only at its fields'
                        // offsets, never a padding byte.
                        let bytes = unsafe {
                            core::slice::from_raw_parts(
                                &rec as *const Record as *const u8,
                                core::mem::size_of::<Record>(),
                            )
                        };
                        f(bytes)
                    } else {
                        let mut buf = core::mem::MaybeUninit::<[u8; MAX]>::uninit();
                        let n = size($($arg),*).min(MAX);
                        // SAFETY: the first `n` bytes (n <= MAX) of `buf`
                        // are zeroed before the slice over them is made.
                        let bytes = unsafe {
                            let p = buf.as_mut_ptr() as *mut u8;
                            core::ptr::write_bytes(p, 0, n);
                            core::slice::from_raw_parts_mut(p, n)
                        };
                        write(bytes, common, $($arg),*);
                        f(bytes)
                    }
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
                        Some(fixed) => {
                            let $e = $crate::trace_events::RecordView { fixed, raw: rec };
                            $print
                        }
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

        /// This system (its `events/` directory).
        pub static SYSTEM: $crate::trace_events::EventSystem = $crate::trace_events::EventSystem {
            name: stringify!($system),
            events: EVENTS,
        };
    };
}

/// The one list of systems: for each, its module name and its
/// declaration macro, in the order `available_events` lists them.
///
/// - `for_each_event_system!(STAGE)` makes `pub mod SYSTEM {
///   tracer::SYSTEM_events!(STAGE); }` for every system (the kernel's
///   tracepoints and probes);
/// - `for_each_event_system!(list ITEM)` is the array `[SYSTEM::ITEM, ...]`
///   and `for_each_event_system!(list &ITEM)` the array
///   `[&SYSTEM::ITEM, ...]`, one element per system module.
///
/// Adding a system is a file here, its `pub mod` above and its line below.
#[macro_export]
macro_rules! for_each_event_system {
    ($($how:tt)+) => {
        $crate::__for_each_event_system! {
            [$($how)+]
            /// `sched:*`: switch, wakeups, fork, exit, migration.
            sched: sched_events,
            /// `irq:*`: device interrupt handlers.
            irq: irq_events,
            /// `irq_vectors:*`: the local timer and the IPIs.
            irq_vectors: irq_vectors_events,
            /// `kmem:*`: the heap.
            kmem: kmem_events,
            /// `preemptirq:*`: interrupts and preemption off and on.
            preemptirq: preemptirq_events,
            /// `vfs:*`: this kernel's VFS.
            vfs: vfs_events,
            /// `shell:*`: this kernel's shell.
            shell: shell_events,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __for_each_event_system {
    ([list & $item:ident] $($(#[$doc:meta])* $sys:ident: $decl:ident,)*) => {
        [$(&$sys::$item),*]
    };
    ([list $item:ident] $($(#[$doc:meta])* $sys:ident: $decl:ident,)*) => {
        [$($sys::$item),*]
    };
    ([$stage:ident] $($(#[$doc:meta])* $sys:ident: $decl:ident,)*) => {
        $(
            $(#[$doc])*
            pub mod $sys {
                $crate::$decl!($stage);
            }
        )*
    };
}

/// Every system, in the order `available_events` lists them.
static SYSTEMS: &[&EventSystem] = &crate::for_each_event_system!(list & SYSTEM);

/// Every system with its events (the directories of `events/`).
pub fn systems() -> &'static [&'static EventSystem] {
    SYSTEMS
}

/// Every declared event, system by system.
pub fn all_events() -> impl Iterator<Item = &'static TraceEventCall> {
    SYSTEMS.iter().flat_map(|s| s.events.iter().copied())
}

/// The first type id of an event made at run time (a probe definition's),
/// above every declared event's.
pub const FIRST_DYNAMIC_ID: u16 = 1000;
/// How many events can ever be made at run time.
pub const MAX_DYNAMIC_EVENTS: usize = 4096;

/// Events made at run time, by `id - FIRST_DYNAMIC_ID` (Linux:
/// `register_trace_event` giving a dynamic event its type, found again by
/// `ftrace_find_event`). The maker (`crate::trace_probe::registry`) picks
/// the id; a published event is never removed: records of a removed event
/// may still sit in a buffer, and a reader must still be able to print
/// them. The maker registers here so that this module, which the printer
/// uses, does not depend on the maker.
static DYNAMIC_EVENTS: [core::sync::atomic::AtomicPtr<TraceEventCall>; MAX_DYNAMIC_EVENTS] =
    [const { core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()) }; MAX_DYNAMIC_EVENTS];

/// Publishes an event made at run time under its id (from
/// [`FIRST_DYNAMIC_ID`], below `FIRST_DYNAMIC_ID + MAX_DYNAMIC_EVENTS`).
pub fn publish_dynamic_event(call: &'static TraceEventCall) {
    let n = (call.id - FIRST_DYNAMIC_ID) as usize;
    DYNAMIC_EVENTS[n].store(
        call as *const TraceEventCall as *mut TraceEventCall,
        core::sync::atomic::Ordering::Release,
    );
}

/// The event whose records have type `id`: a declared event, or one made at
/// run time ([`publish_dynamic_event`]).
pub fn find_event(id: u16) -> Option<&'static TraceEventCall> {
    if id <= crate::entry::TRACE_LAST_TYPE {
        return None;
    }
    if id >= FIRST_DYNAMIC_ID {
        let slot = DYNAMIC_EVENTS.get((id - FIRST_DYNAMIC_ID) as usize)?;
        let p = slot.load(core::sync::atomic::Ordering::Acquire);
        // SAFETY: a published pointer is a `&'static TraceEventCall`, never
        // freed or changed.
        return (!p.is_null()).then(|| unsafe { &*p });
    }
    all_events().find(|e| e.id == id)
}
