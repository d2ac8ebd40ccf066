//! Probe events: the definitions written to `kprobe_events` and
//! `dynamic_events`, compiled into small fetch programs, and the records,
//! `format` files and text of the events they make (Linux:
//! kernel/trace/trace_probe.c, trace_probe.h, trace_probe_tmpl.h and the
//! parsing half of trace_kprobe.c).
//!
//! A definition such as
//!
//! ```text
//! p:myprobe kernel::sched::sleep_ns+0x4 ns=%di:u64 name=+0(%si):string
//! r:myret kernel::fs::read $retval:s64
//! -:myprobe
//! ```
//!
//! is split into words ([`argv_split`]) and parsed by [`parse_probe`] into a
//! [`TraceProbe`]: the probe point (a symbol and offset, or an address),
//! the event's group and name, and one [`ProbeArg`] per fetch argument.
//! Each argument is compiled, as Linux does, into a short program of
//! [`FetchInsn`]s: a load (a register, a stack slot, `$retval`,
//! `$comm`, an immediate, a symbol's address), any number of
//! dereferences, a store of the arg's type into the record, an optional
//! bitfield fix-up and an optional array loop. [`fetch::store_trace_args`]
//! runs the programs over the registers and memory the kernel hands it
//! through [`fetch::FetchEnv`], whose memory reads never fault.
//!
//! ## Symbol names
//!
//! Rust symbols contain `::` and sometimes `+`, `-` or a single `:`
//! (`<Box<dyn FnOnce() + Send>>::call_once::{shim:vtable#0}`). So that
//! every name `available_filter_functions` lists can be probed, `SYM` in
//! `SYM[+offs]` is read as follows (see [`split_symbol`]):
//! 1. if the whole word names a symbol, it is that symbol, offset 0;
//! 2. otherwise the word is split at the first `+` or `-` whose left part
//!    names a symbol, and the rest is the offset;
//! 3. otherwise at the first `+` or `-` (Linux's rule, so a C-like name
//!    gives Linux's errors).
//!
//! Linux reads `MOD:SYM` as a symbol of a module; here a single `:` that
//! is not part of `::`, in a word that names no symbol, is such a module
//! reference, and since the probe cannot be placed it is refused with
//! `ENOENT` and Linux's "Invalid probed address or symbol". In a fetch
//! argument, the `:TYPE` suffix starts at the first `:` that is not part
//! of `::`, so `@kernel::time::JIFFIES:u64` reads a Rust static.
//!
//! Default event names are Linux's (`p_SYM_OFFS`, `r_SYM_OFFS`,
//! `p_0xADDR`) with every character that is not a letter, a digit or `_`
//! replaced by `_` (Linux replaces `:` and `.`, the only others a C name
//! can hold), cut to 63 characters.

use alloc::string::String;
use alloc::vec::Vec;

use crate::errno::Errno;

pub mod fetch;
mod parse;
pub mod print;
pub mod registry;
#[cfg(test)]
mod tests;

pub use parse::{
    argv_split, kstrtol, kstrtoul, parse_delete, parse_probe, split_symbol, DeleteSpec,
    ProbeSymbols,
};

/// Most fetch arguments of one probe (Linux: `MAX_TRACE_ARGS`).
pub const MAX_TRACE_ARGS: usize = 128;
/// Longest fetch-argument expression (Linux: `MAX_ARGSTR_LEN`).
pub const MAX_ARGSTR_LEN: usize = 63;
/// Largest array count (`:u8[64]`).
pub const MAX_ARRAY_LEN: u32 = 64;
/// Longest argument name.
pub const MAX_ARG_NAME_LEN: usize = 32;
/// Event and group names are shorter than this (Linux:
/// `MAX_EVENT_NAME_LEN`).
pub const MAX_EVENT_NAME_LEN: usize = 64;
/// Largest fixed part of a probe record's arguments.
pub const MAX_PROBE_EVENT_SIZE: u32 = 3072;
/// Instructions in one fetch program, the end included.
pub const FETCH_INSN_MAX: usize = 16;
/// Largest `r<MAXACTIVE>` (Linux: `KRETPROBE_MAXACTIVE_MAX`).
pub const KRETPROBE_MAXACTIVE_MAX: u32 = 4096;
/// Largest `$stackN` and `$argN` (Linux: `THREAD_SIZE / sizeof(long)`
/// with 16 KiB stacks).
pub const PARAM_MAX_STACK: u64 = 2048;
/// The group of a probe defined without one.
pub const KPROBE_EVENT_SYSTEM: &str = "kprobes";
/// The longest string argument a record keeps, NUL excluded (strings are
/// cut there, see `trace_events::DATA_LOC_STR_MAX`).
pub const MAX_STRING_SIZE: usize = crate::trace_events::DATA_LOC_STR_MAX;

/// The errors a definition can get, with Linux's texts (trace_probe.h's
/// `ERRORS` list, the kprobe ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TpErr {
    MaxactNoKprobe,
    BadMaxact,
    MaxactTooBig,
    BadProbeAddr,
    NonUniqSymbol,
    BadRetprobe,
    BadAddrSuffix,
    NoGroupName,
    GroupTooLong,
    BadGroupName,
    NoEventName,
    EventTooLong,
    BadEventName,
    EventExist,
    RetvalOnProbe,
    BadStackNum,
    BadArgNum,
    BadVar,
    BadRegName,
    BadMemAddr,
    BadImm,
    ImmstrNoClose,
    FileOnKprobe,
    TooManyOps,
    DerefNeedBrace,
    BadDerefOffs,
    DerefOpenBrace,
    CommCantDeref,
    BadFetchArg,
    ArrayNoClose,
    BadArraySuffix,
    BadArrayNum,
    ArrayTooBig,
    BadType,
    BadString,
    BadBitfield,
    ArgNameTooLong,
    NoArgName,
    BadArgName,
    UsedArgName,
    ArgTooLong,
    NoArgBody,
    BadInsnBndry,
    FailRegProbe,
    DiffProbeType,
    DiffArgType,
    SameProbe,
    EventTooBig,
}

impl TpErr {
    /// Linux's text for the error.
    pub const fn text(self) -> &'static str {
        use TpErr::*;
        match self {
            MaxactNoKprobe => "Maxactive is not for kprobe",
            BadMaxact => "Invalid maxactive number",
            MaxactTooBig => "Maxactive is too big",
            BadProbeAddr => "Invalid probed address or symbol",
            NonUniqSymbol => "The symbol is not unique",
            BadRetprobe => "Retprobe address must be an function entry",
            BadAddrSuffix => "Invalid probed address suffix",
            NoGroupName => "Group name is not specified",
            GroupTooLong => "Group name is too long",
            BadGroupName => "Group name must follow the same rules as C identifiers",
            NoEventName => "Event name is not specified",
            EventTooLong => "Event name is too long",
            BadEventName => "Event name must follow the same rules as C identifiers",
            EventExist => "Given group/event name is already used by another event",
            RetvalOnProbe => "$retval is not available on probe",
            BadStackNum => "Invalid stack number",
            BadArgNum => "Invalid argument number",
            BadVar => "Invalid $-variable specified",
            BadRegName => "Invalid register name",
            BadMemAddr => "Invalid memory address",
            BadImm => "Invalid immediate value",
            ImmstrNoClose => "String is not closed with '\"'",
            FileOnKprobe => "File offset is not available with kprobe",
            TooManyOps => "Dereference is too much nested",
            DerefNeedBrace => "Dereference needs a brace",
            BadDerefOffs => "Invalid dereference offset",
            DerefOpenBrace => "Dereference brace is not closed",
            CommCantDeref => "$comm can not be dereferenced",
            BadFetchArg => "Invalid fetch argument",
            ArrayNoClose => "Array is not closed",
            BadArraySuffix => "Array has wrong suffix",
            BadArrayNum => "Invalid array size",
            ArrayTooBig => "Array number is too big",
            BadType => "Unknown type is specified",
            BadString => "String accepts only memory argument",
            BadBitfield => "Invalid bitfield",
            ArgNameTooLong => "Argument name is too long",
            NoArgName => "Argument name is not specified",
            BadArgName => "Argument name must follow the same rules as C identifiers",
            UsedArgName => "This argument name is already used",
            ArgTooLong => "Argument expression is too long",
            NoArgBody => "No argument expression",
            BadInsnBndry => "Probe point is not an instruction boundary",
            FailRegProbe => "Failed to register probe event",
            DiffProbeType => "Probe type is different from existing probe",
            DiffArgType => "Argument type or name is different from existing probe",
            SameProbe => "There is already the exact same probe event",
            EventTooBig => "Event too big (too many fields?)",
        }
    }
}

/// The `error_log` entry of a refused definition: the command (the words
/// joined by single spaces), the caret's position in it and the error
/// (Linux: `__trace_probe_log_err`, logged under `trace_kprobe`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeLogEntry {
    pub cmd: String,
    pub pos: usize,
    pub err: TpErr,
}

/// A refused definition: the errno of the write and, for most errors, the
/// `error_log` entry (Linux logs nothing for an unknown probe type, a
/// missing probe point or a bad `$comm` type).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeError {
    pub errno: Errno,
    pub log: Option<ProbeLogEntry>,
}

impl ProbeError {
    /// An error with no log entry.
    pub fn bare(errno: Errno) -> ProbeError {
        ProbeError { errno, log: None }
    }
}

/// The log position of an error in word `index` at `offset` inside it
/// (Linux: `trace_probe_log_set_index` + `trace_probe_log_err`): the
/// caret is after the earlier words and their separating spaces; past the
/// last word it sits one space after it.
pub fn log_entry(argv: &[String], index: usize, offset: usize, err: TpErr) -> ProbeLogEntry {
    let mut pos = 0;
    let mut len = 0;
    for (i, a) in argv.iter().enumerate() {
        if i == index {
            pos = len;
        }
        len += a.len() + 1;
    }
    let pos = if index >= argv.len() {
        len
    } else {
        pos + offset
    };
    ProbeLogEntry {
        cmd: argv.join(" "),
        pos,
        err,
    }
}

/// How an argument's value is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrintKind {
    Unsigned,
    Signed,
    Hex,
    Symbol,
    String,
}

/// One fetch type (Linux: `struct fetch_type`): its name, size in the
/// record, signedness, `print fmt` conversion and the C type the `format`
/// file shows.
#[derive(Debug, PartialEq, Eq)]
pub struct FetchType {
    pub name: &'static str,
    pub size: u32,
    pub signed: bool,
    pub kind: PrintKind,
    pub fmt: &'static str,
    pub fmttype: &'static str,
}

impl FetchType {
    /// A `__data_loc` string.
    pub fn is_string(&self) -> bool {
        self.kind == PrintKind::String
    }
}

macro_rules! ft {
    ($name:literal, $size:literal, $signed:literal, $kind:ident, $fmt:literal, $fmttype:literal) => {
        FetchType {
            name: $name,
            size: $size,
            signed: $signed,
            kind: PrintKind::$kind,
            fmt: $fmt,
            fmttype: $fmttype,
        }
    };
}

/// Linux's `probe_fetch_types` (`symstr` left out).
pub static FETCH_TYPES: [FetchType; 15] = [
    ft!("string", 4, true, String, "\\\"%s\\\"", "__data_loc char[]"),
    ft!(
        "ustring",
        4,
        true,
        String,
        "\\\"%s\\\"",
        "__data_loc char[]"
    ),
    ft!("u8", 1, false, Unsigned, "%u", "u8"),
    ft!("u16", 2, false, Unsigned, "%u", "u16"),
    ft!("u32", 4, false, Unsigned, "%u", "u32"),
    ft!("u64", 8, false, Unsigned, "%Lu", "u64"),
    ft!("s8", 1, true, Signed, "%d", "s8"),
    ft!("s16", 2, true, Signed, "%d", "s16"),
    ft!("s32", 4, true, Signed, "%d", "s32"),
    ft!("s64", 8, true, Signed, "%Ld", "s64"),
    ft!("x8", 1, false, Hex, "0x%x", "u8"),
    ft!("x16", 2, false, Hex, "0x%x", "u16"),
    ft!("x32", 4, false, Hex, "0x%x", "u32"),
    ft!("x64", 8, false, Hex, "0x%Lx", "u64"),
    ft!("symbol", 8, false, Symbol, "%pS", "u64"),
];

/// `find_fetch_type()`: by name, `x64` when none is given, and the
/// container type of a bitfield `b<W>@<O>/<8|16|32|64>`.
pub fn find_fetch_type(name: Option<&str>) -> Option<&'static FetchType> {
    let name = name.unwrap_or("x64");
    if let Some(rest) = name.strip_prefix('b') {
        let slash = rest.find('/')?;
        let bs = kstrtoul(&rest[slash + 1..]).ok()?;
        return match bs {
            8 => find_fetch_type(Some("u8")),
            16 => find_fetch_type(Some("u16")),
            32 => find_fetch_type(Some("u32")),
            64 => find_fetch_type(Some("u64")),
            _ => None,
        };
    }
    FETCH_TYPES.iter().find(|t| t.name == name)
}

/// The registers `%REG` names, in `struct pt_regs` order (Linux x86_64's
/// `regoffset_table`); a [`FetchInsn::Reg`] holds the index.
pub const REG_NAMES: [&str; 21] = [
    "r15", "r14", "r13", "r12", "bp", "bx", "r11", "r10", "r9", "r8", "ax", "cx", "dx", "si", "di",
    "orig_ax", "ip", "cs", "flags", "sp", "ss",
];

/// Index in [`REG_NAMES`] of a few registers the evaluator reads itself.
pub mod reg {
    pub const BP: u8 = 4;
    pub const R9: u8 = 8;
    pub const R8: u8 = 9;
    pub const AX: u8 = 10;
    pub const CX: u8 = 11;
    pub const DX: u8 = 12;
    pub const SI: u8 = 13;
    pub const DI: u8 = 14;
    pub const IP: u8 = 16;
    pub const SP: u8 = 19;
}

/// One step of a fetch program (Linux: `struct fetch_insn`, its
/// `FETCH_OP_*` as variants).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchInsn {
    Nop,
    // Stage 1: load.
    /// `%REG`: the register at this index of [`REG_NAMES`].
    Reg(u8),
    /// `$stackN`.
    Stack(u32),
    /// `$stack`.
    StackP,
    /// `$retval`.
    Retval,
    /// An address or a value.
    Imm(u64),
    /// `$comm`.
    Comm,
    /// `$argN`, 0-based.
    Arg(u32),
    /// `\"STR"`: the bytes, NUL included.
    Data(Vec<u8>),
    /// `@SYM[+|-offs]`: resolved into the next [`FetchInsn::Imm`] when the
    /// probe is registered.
    Symbol(String),
    // Stage 2: dereference.
    Deref(i64),
    UDeref(i64),
    // Stage 3: store.
    StRaw(u32),
    StMem {
        offset: i64,
        size: u32,
    },
    StUmem {
        offset: i64,
        size: u32,
    },
    StString {
        offset: i64,
    },
    StUstring {
        offset: i64,
    },
    // Stage 4: modify.
    ModBf {
        basesize: u8,
        lshift: u8,
        rshift: u8,
    },
    // Stage 5: loop.
    LpArray(u32),
    End,
}

/// One fetch argument (Linux: `struct probe_arg`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeArg {
    /// The field name (`argN` by default).
    pub name: String,
    /// The expression as written (`+0(%di):string`), as `kprobe_events`
    /// shows it.
    pub comm: String,
    pub ty: &'static FetchType,
    /// Array count, 0 for a scalar.
    pub count: u32,
    /// Offset of the field from the end of the probe's own header.
    pub offset: u32,
    /// A string (or array of strings): a `__data_loc` word plus bytes
    /// after the fixed part.
    pub dynamic: bool,
    pub code: Vec<FetchInsn>,
}

impl ProbeArg {
    /// The C type the `format` file shows (`u8[3]` for an array).
    pub fn field_type(&self) -> String {
        if self.count > 0 {
            alloc::format!("{}[{}]", self.ty.fmttype, self.count)
        } else {
            String::from(self.ty.fmttype)
        }
    }

    /// Bytes of the fixed part.
    pub fn field_size(&self) -> u32 {
        self.ty.size * self.count.max(1)
    }
}

/// Where a probe is placed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeTarget {
    /// `SYM+offs` with the symbol's address.
    Symbol {
        name: String,
        offset: u64,
        addr: u64,
    },
    /// A raw address.
    Addr(u64),
}

/// A parsed definition (Linux: `struct trace_kprobe` with its
/// `trace_probe`, before registration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceProbe {
    pub is_return: bool,
    /// `r<N>`, 0 when not given.
    pub maxactive: u32,
    pub group: String,
    pub event: String,
    pub target: ProbeTarget,
    pub args: Vec<ProbeArg>,
    /// Bytes of the arguments' fixed part (Linux: `tp->size`).
    pub size: u32,
    /// The words of the definition, for later log entries.
    pub argv: Vec<String>,
}

impl TraceProbe {
    /// The probed address.
    pub fn addr(&self) -> u64 {
        match self.target {
            ProbeTarget::Symbol { addr, offset, .. } => addr.wrapping_add(offset),
            ProbeTarget::Addr(a) => a,
        }
    }

    /// Size of the probe's own header after the common fields:
    /// `__probe_ip`, or `__probe_func` and `__probe_ret_ip`.
    pub fn header_size(&self) -> u32 {
        if self.is_return {
            16
        } else {
            8
        }
    }

    /// Offset of the first argument in the record (common header
    /// included).
    pub fn args_offset(&self) -> u32 {
        8 + self.header_size()
    }

    /// `SYM+OFFS`, `SYM` or `0xADDR` as `kprobe_events` shows the probe
    /// point (Linux prints `0x%p`, a hashed pointer; here the address).
    pub fn point(&self) -> String {
        match &self.target {
            ProbeTarget::Symbol { name, offset, .. } if *offset != 0 => {
                alloc::format!("{}+{}", name, offset)
            }
            ProbeTarget::Symbol { name, .. } => name.clone(),
            ProbeTarget::Addr(a) => alloc::format!("0x{:x}", a),
        }
    }

    /// The `kprobe_events` line (Linux: `trace_kprobe_show`), with the
    /// effective maxactive of a return probe (`maxactive`, or the
    /// default the kernel chose, given as `default_maxactive`).
    pub fn show(&self, default_maxactive: u32) -> String {
        let mut s = String::new();
        s.push(if self.is_return { 'r' } else { 'p' });
        if self.is_return {
            let m = if self.maxactive != 0 {
                self.maxactive
            } else {
                default_maxactive
            };
            if m != 0 {
                s.push_str(&alloc::format!("{}", m));
            }
        }
        s.push_str(&alloc::format!(
            ":{}/{} {}",
            self.group,
            self.event,
            self.point()
        ));
        for a in &self.args {
            s.push_str(&alloc::format!(" {}={}", a.name, a.comm));
        }
        s.push('\n');
        s
    }

    /// Resolves each `@SYM[+|-offs]` into its address (Linux:
    /// `traceprobe_update_arg`), `ENOENT` when a symbol is unknown.
    pub fn update_args(&mut self, syms: &dyn ProbeSymbols) -> Result<(), Errno> {
        for a in &mut self.args {
            let mut i = 0;
            while i < a.code.len() {
                if let FetchInsn::Symbol(s) = &a.code[i] {
                    let (name, offset) = split_symbol(s, syms).map_err(|_| Errno::EINVAL)?;
                    let (n, addr) = syms.lookup(name);
                    if n == 0 {
                        return Err(Errno::ENOENT);
                    }
                    match a.code.get_mut(i + 1) {
                        Some(FetchInsn::Imm(v)) => *v = addr.wrapping_add(offset as u64),
                        _ => return Err(Errno::EINVAL),
                    }
                }
                i += 1;
            }
        }
        Ok(())
    }

    /// Linux's `trace_probe_compare_arg_type`: 0 if both have the same
    /// argument names, types and counts, else the 1-based index of the
    /// first that differs.
    pub fn compare_arg_type(&self, b: &TraceProbe) -> usize {
        if self.args.len() < b.args.len() {
            return self.args.len() + 1;
        }
        if self.args.len() > b.args.len() {
            return b.args.len() + 1;
        }
        for (i, (x, y)) in self.args.iter().zip(&b.args).enumerate() {
            if !core::ptr::eq(x.ty, y.ty) || x.count != y.count || x.name != y.name {
                return i + 1;
            }
        }
        0
    }

    /// Same probe point and same argument expressions (Linux:
    /// `trace_kprobe_has_same_kprobe`, after the types matched).
    pub fn same_probe(&self, b: &TraceProbe) -> bool {
        self.point() == b.point()
            && self.args.len() == b.args.len()
            && self.args.iter().zip(&b.args).all(|(x, y)| x.comm == y.comm)
    }

    /// Whether a `-:EVENT SYM ARGS...` removal names this probe (Linux:
    /// `trace_kprobe_match_command_head`): no words match every probe;
    /// otherwise the first word is the probe point and each further
    /// word `NAME=EXPR` one argument, in order.
    pub fn match_command_head(&self, words: &[&str]) -> bool {
        let Some((first, rest)) = words.split_first() else {
            return true;
        };
        if *first != self.point() || self.args.len() < rest.len() {
            return false;
        }
        rest.iter().zip(&self.args).all(|(w, a)| {
            w.strip_prefix(a.name.as_str())
                .and_then(|r| r.strip_prefix('='))
                .is_some_and(|r| r == a.comm)
        })
    }
}

/// Linux's `is_good_name`: a C identifier.
pub fn is_good_name(name: &str) -> bool {
    is_good_name_hash(name, false)
}

/// Linux's `is_good_system_name`: a C identifier that may also hold `-`.
pub fn is_good_system_name(name: &str) -> bool {
    is_good_name_hash(name, true)
}

fn is_good_name_hash(name: &str, hash_ok: bool) -> bool {
    let b = name.as_bytes();
    let Some((&first, rest)) = b.split_first() else {
        return false;
    };
    let ok_first = first.is_ascii_alphabetic() || first == b'_' || (hash_ok && first == b'-');
    ok_first
        && rest
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'_' || (hash_ok && c == b'-'))
}

/// The default event name (Linux: `"%c_%s_%ld"` or `"%c_0x%p"` then
/// `sanitize_event_name`), see the module doc.
pub fn default_event_name(is_return: bool, target: &ProbeTarget) -> String {
    let c = if is_return { 'r' } else { 'p' };
    let mut s = match target {
        ProbeTarget::Symbol { name, offset, .. } => alloc::format!("{}_{}_{}", c, name, offset),
        ProbeTarget::Addr(a) => alloc::format!("{}_0x{:x}", c, a),
    };
    let mut out: String = s
        .drain(..)
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || ch == '_' {
                ch
            } else {
                '_'
            }
        })
        .collect();
    out.truncate(MAX_EVENT_NAME_LEN - 1);
    out
}
