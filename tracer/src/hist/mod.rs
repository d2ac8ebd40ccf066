//! Hist triggers: `hist:keys=...:vals=...` on an event counts its hits (and
//! sums some of its fields) per key in a [`TracingMap`], without writing
//! any record, and `cat hist` prints the table (Linux:
//! kernel/trace/trace_events_hist.c).
//!
//! - [`parse`] reads the text after `hist:` (Linux's `param_and_filter`)
//!   against an event's fields and gives a [`HistCommand`]: the spec (keys,
//!   values, sort keys, size, name, the ` if FILTER` text) and the
//!   `pause`/`cont`/`clear` flags. Errors carry Linux's errno and, where
//!   Linux logs one, the `error_log` text and caret position.
//! - [`HistTrigger`] is one installed trigger: the spec, its preallocated
//!   map and the paused flag. [`HistTrigger::update`] is the probe side:
//!   it builds the key from the record's bytes, inserts it and adds the
//!   values, with no allocation and no lock.
//! - [`register`] decides what a new command does with the event's
//!   existing hist triggers (install, pause/continue/clear a matching one,
//!   `EEXIST`, `ENOENT`), [`print`] writes the `cat trigger` line and
//!   [`show`] the `cat hist` text.
//!
//! Keys are built as Linux builds them: one numeric key is its value as a
//! 64-bit word; two or more keys, or a string key, make a zeroed compound
//! key where each key takes its size rounded up to 8 bytes. The map hashes
//! those bytes with `jhash` and the printer sorts with Linux's heapsort, so
//! even entries that tie print in Linux's order.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::errno::Errno;
use crate::trace_events::EventField;
use crate::tracing_map::{TracingMap, MAP_BITS_DEFAULT, MAP_BITS_MAX, MAP_BITS_MIN};

mod print;
pub mod sort;

pub use print::{print, print_as, show, show_as, show_one};

/// Field modifier flags (`HIST_FIELD_FL_*`).
pub mod flags {
    pub const HEX: u32 = 1 << 0;
    pub const SYM: u32 = 1 << 1;
    pub const SYM_OFFSET: u32 = 1 << 2;
    pub const EXECNAME: u32 = 1 << 3;
    pub const LOG2: u32 = 1 << 4;
    pub const BUCKET: u32 = 1 << 5;
    pub const USECS: u32 = 1 << 6;
}

/// At most 3 keys, 2 values besides hitcount, 2 sort keys
/// (`TRACING_MAP_KEYS_MAX`, `TRACING_MAP_VALS_MAX - 1`,
/// `TRACING_MAP_SORT_KEYS_MAX`).
pub const KEYS_MAX: usize = 3;
pub const VALS_MAX: usize = 3;
pub const SORT_KEYS_MAX: usize = 2;
/// `MAX_FILTER_STR_VAL`: the key room of a dynamic string.
pub const STR_VAL_MAX: usize = 256;
/// `HIST_KEY_SIZE_MAX` in 64-bit words (256 + 16 * 8 bytes).
pub const KEY_WORDS_MAX: usize = (STR_VAL_MAX + 16 * 8) / 8;

/// An event as the hist parser sees it.
#[derive(Clone, Copy)]
pub struct EventInfo<'a> {
    pub system: &'a str,
    pub name: &'a str,
    /// The event's own fields (the common ones are known here).
    pub fields: &'a [EventField],
}

/// What the probe knows besides the record: its timestamp (ns), CPU and
/// the current task's name (saved on a new entry for `.execname`).
#[derive(Clone, Copy, Default)]
pub struct HistCtx {
    pub ts: u64,
    pub cpu: u32,
    pub comm: [u8; 16],
}

/// Where a field's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A number in the record.
    Num {
        offset: u32,
        size: u32,
        signed: bool,
    },
    /// A `char[N]` in the record.
    StaticStr { offset: u32, size: u32 },
    /// A `__data_loc char[]` in the record.
    DynStr { offset: u32 },
    /// `common_timestamp`.
    Timestamp,
    /// `common_cpu` (also `cpu`, `CPU`).
    Cpu,
}

/// One key or value (`struct hist_field`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistField {
    /// The field name as printed (`common_cpu` for `cpu`).
    pub name: String,
    pub flags: u32,
    /// `.buckets=N`.
    pub buckets: u64,
    pub src: Source,
    /// For a key: its place and length in the compound key, in words.
    pub key_off: usize,
    pub key_words: usize,
}

impl HistField {
    fn is_string(&self) -> bool {
        matches!(self.src, Source::StaticStr { .. } | Source::DynStr { .. })
    }

    /// The value of a numeric field (`hist_fn_call()`): sign-extended
    /// from its size, then `.log2`/`.buckets`/`.usecs` applied.
    #[inline(always)]
    fn value(&self, rec: &[u8], ctx: &HistCtx) -> u64 {
        let v = match self.src {
            Source::Num {
                offset,
                size,
                signed,
            } => read_num(rec, offset as usize, size as usize, signed),
            Source::Timestamp => {
                if self.flags & flags::USECS != 0 {
                    ctx.ts / 1000
                } else {
                    ctx.ts
                }
            }
            Source::Cpu => ctx.cpu as u64,
            Source::StaticStr { .. } | Source::DynStr { .. } => 0,
        };
        self.modify(v)
    }

    /// The value of a numeric field of the record from `bits`, the field's
    /// value with its bytes in the low bytes (what an event declaration's
    /// `field_bits` computes from the tracepoint's arguments): the same
    /// number [`value`](Self::value) reads from the record's bytes.
    #[inline(always)]
    fn value_of_bits(&self, bits: u64) -> u64 {
        let v = match self.src {
            Source::Num { size, signed, .. } if size < 8 => {
                let shift = 64 - 8 * size;
                if signed {
                    (((bits << shift) as i64) >> shift) as u64
                } else {
                    (bits << shift) >> shift
                }
            }
            _ => bits,
        };
        self.modify(v)
    }

    /// `.log2` and `.buckets` applied to a number.
    #[inline(always)]
    fn modify(&self, v: u64) -> u64 {
        if self.flags & flags::LOG2 != 0 {
            // ilog2(roundup_pow_of_two(v)), 0 for 0 and 1.
            if v <= 1 {
                0
            } else {
                64 - (v - 1).leading_zeros() as u64
            }
        } else if self.flags & flags::BUCKET != 0 {
            v / self.buckets * self.buckets
        } else {
            v
        }
    }

    /// Copies a string key into `key` at its place, up to its first NUL and
    /// at most its room minus one (`add_to_key()`).
    fn copy_str(&self, rec: &[u8], key: &mut [u64]) {
        let (start, len) = match self.src {
            Source::StaticStr { offset, size } => (offset as usize, size as usize),
            Source::DynStr { offset } => {
                let loc = read_num(rec, offset as usize, 4, false) as u32;
                ((loc & 0xffff) as usize, (loc >> 16) as usize)
            }
            _ => return,
        };
        let room = self.key_words * 8 - 1;
        let len = len.min(room);
        let bytes = rec.get(start..).unwrap_or(&[]);
        let bytes = &bytes[..len.min(bytes.len())];
        let words = &mut key[self.key_off..self.key_off + self.key_words];
        for (i, &b) in bytes.iter().take_while(|&&b| b != 0).enumerate() {
            words[i / 8] |= (b as u64) << (8 * (i % 8));
        }
    }
}

/// Reads a little-endian field, sign-extended when `signed`; 0 if it is
/// outside the record.
#[inline(always)]
fn read_num(rec: &[u8], off: usize, size: usize, signed: bool) -> u64 {
    match size {
        1 => rec.get(off).map_or(0, |&b| {
            if signed {
                b as i8 as i64 as u64
            } else {
                b as u64
            }
        }),
        2 => rec.get(off..off + 2).map_or(0, |b| {
            let v = u16::from_le_bytes([b[0], b[1]]);
            if signed {
                v as i16 as i64 as u64
            } else {
                v as u64
            }
        }),
        4 => rec.get(off..off + 4).map_or(0, |b| {
            let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            if signed {
                v as i32 as i64 as u64
            } else {
                v as u64
            }
        }),
        8 => rec.get(off..off + 8).map_or(0, |b| {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            u64::from_le_bytes(w)
        }),
        _ => 0,
    }
}

/// A sort key: field 0 is hitcount, 1.. the values, then the keys (the
/// order of Linux's `tracing_map` fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortKey {
    pub field: usize,
    pub descending: bool,
}

/// A parsed hist trigger (`struct hist_trigger_data` + attrs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistSpec {
    pub name: Option<String>,
    pub keys: Vec<HistField>,
    /// The values after hitcount.
    pub vals: Vec<HistField>,
    pub sort: Vec<SortKey>,
    pub bits: u32,
    pub clock: String,
    /// The ` if FILTER` text, without `if`.
    pub filter: Option<String>,
    pub key_words: usize,
}

impl HistSpec {
    fn timestamps(&self) -> bool {
        self.keys
            .iter()
            .chain(self.vals.iter())
            .any(|f| f.src == Source::Timestamp)
    }

    /// `hist_trigger_match()`: the same keys, values, sort keys, filter and
    /// name (the size, pause state and clock do not count).
    pub fn matches(&self, other: &HistSpec) -> bool {
        let same_fields = |a: &[HistField], b: &[HistField]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| x.name == y.name && x.flags == y.flags && x.buckets == y.buckets)
        };
        self.name == other.name
            && same_fields(&self.keys, &other.keys)
            && same_fields(&self.vals, &other.vals)
            && self.sort == other.sort
            && self.filter == other.filter
    }
}

impl HistSpec {
    /// Whether a trigger of this spec may share the table of the existing
    /// named trigger `named` (Linux: `hist_trigger_match(.., named_data,
    /// ignore_filter)`): the same keys and values, each the same field
    /// (name, place, size, signedness) with the same modifiers, and the same
    /// sort keys. The filter, size and clock do not count.
    pub fn named_match(&self, named: &HistSpec) -> bool {
        let same = |a: &[HistField], b: &[HistField]| {
            a.len() == b.len()
                && a.iter().zip(b).all(|(x, y)| {
                    x.name == y.name
                        && x.flags == y.flags
                        && x.buckets == y.buckets
                        && x.src == y.src
                })
        };
        same(&self.keys, &named.keys) && same(&self.vals, &named.vals) && self.sort == named.sort
    }
}

/// The error of a `name=` trigger that does not match the existing trigger
/// of that name (Linux: `HIST_ERR_NAMED_MISMATCH` at `errpos(name)`: the
/// caret under `name=NAME` in the command).
pub fn named_mismatch(param: &str, name: &str) -> HistError {
    let cmd = HistError::cmd(param);
    let mut token = String::from("name=");
    token.push_str(name);
    HistError {
        errno: Errno::EINVAL,
        log: Some((err::NAMED_MISMATCH, cmd.find(&token).unwrap_or(0))),
    }
}

/// A `hist:` write: the spec and what to do with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistCommand {
    pub spec: HistSpec,
    pub pause: bool,
    pub cont: bool,
    pub clear: bool,
}

/// A refused `hist:` write: the errno and, when Linux logs the error,
/// the `error_log` text and the caret's position in [`HistError::cmd`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistError {
    pub errno: Errno,
    pub log: Option<(&'static str, usize)>,
}

impl HistError {
    fn plain(errno: Errno) -> HistError {
        HistError { errno, log: None }
    }

    /// The `Command:` line of the error_log entry: `hist:` + the text.
    pub fn cmd(param: &str) -> String {
        let mut s = String::from("hist:");
        s.push_str(param);
        s
    }
}

/// Error texts (`hist_err_text[]`).
pub mod err {
    pub const FIELD_NOT_FOUND: &str = "Couldn't find field";
    pub const BAD_FIELD_MODIFIER: &str = "Invalid field modifier";
    pub const EMPTY_ASSIGNMENT: &str = "Empty assignment";
    pub const INVALID_SORT_MODIFIER: &str = "Invalid sort modifier";
    pub const EMPTY_SORT_FIELD: &str = "Empty sort field";
    pub const TOO_MANY_SORT_FIELDS: &str = "Too many sort fields (Max = 2)";
    pub const INVALID_SORT_FIELD: &str = "Sort field must be a key or a val";
    pub const TRIGGER_EEXIST: &str = "Hist trigger already exists";
    pub const TRIGGER_ENOENT_CLEAR: &str = "Can't clear or continue a nonexistent hist trigger";
    pub const NAMED_MISMATCH: &str =
        "Named hist trigger doesn't match existing named trigger (includes variables)";
}

/// Builds errors whose caret is at the first occurrence of a token in the
/// command (`errpos()`).
struct Errs<'a> {
    cmd: String,
    _p: core::marker::PhantomData<&'a ()>,
}

impl Errs<'_> {
    fn at(&self, msg: &'static str, token: &str) -> HistError {
        let pos = if token.is_empty() {
            0
        } else {
            self.cmd.find(token).unwrap_or(0)
        };
        HistError {
            errno: Errno::EINVAL,
            log: Some((msg, pos)),
        }
    }
}

/// The common fields (`trace_define_common_fields()`), as event fields.
const COMMON: [EventField; 4] = [
    EventField {
        ty: "unsigned short",
        name: "common_type",
        offset: 0,
        size: 2,
        signed: false,
        array: None,
    },
    EventField {
        ty: "unsigned char",
        name: "common_flags",
        offset: 2,
        size: 1,
        signed: false,
        array: None,
    },
    EventField {
        ty: "unsigned char",
        name: "common_preempt_count",
        offset: 3,
        size: 1,
        signed: false,
        array: None,
    },
    EventField {
        ty: "int",
        name: "common_pid",
        offset: 4,
        size: 4,
        signed: true,
        array: None,
    },
];

/// `parse_field()` + `create_hist_field()`: a field with at most one
/// modifier. `is_key` picks the modifiers a key or a value may have.
fn parse_field(
    ev: &EventInfo<'_>,
    errs: &Errs<'_>,
    text: &str,
    is_key: bool,
) -> Result<HistField, HistError> {
    let (name, modifier) = match text.split_once('.') {
        Some((n, m)) => (n, Some(m)),
        None => (text, None),
    };
    let mut fl = 0;
    let mut buckets = 0;
    if let Some(m) = modifier {
        fl = match m {
            "hex" => flags::HEX,
            "sym" => flags::SYM,
            "sym-offset" => flags::SYM_OFFSET,
            "execname" if name == "common_pid" => flags::EXECNAME,
            "log2" => flags::LOG2,
            "usecs" => flags::USECS,
            _ => {
                let n = m
                    .strip_prefix("buckets=")
                    .or_else(|| m.strip_prefix("bucket="))
                    .and_then(|n| crate::options::parse_kstrtoul(n.as_bytes(), 0).ok());
                match n {
                    Some(n) if n != 0 => {
                        buckets = n;
                        flags::BUCKET
                    }
                    _ => return Err(errs.at(err::BAD_FIELD_MODIFIER, m)),
                }
            }
        };
    }
    let src = match name {
        "common_timestamp" => Source::Timestamp,
        "common_cpu" => Source::Cpu,
        _ => match COMMON
            .iter()
            .chain(ev.fields.iter())
            .find(|f| f.name == name)
        {
            Some(f) if f.ty == "__data_loc char[]" => Source::DynStr { offset: f.offset },
            Some(f) if f.array.is_some() && f.ty == "char" => Source::StaticStr {
                offset: f.offset,
                size: f.size,
            },
            Some(f) if matches!(f.size, 1 | 2 | 4 | 8) && f.array.is_none() => Source::Num {
                offset: f.offset,
                size: f.size,
                signed: f.signed,
            },
            _ if name == "cpu" || name == "CPU" => Source::Cpu,
            _ => return Err(errs.at(err::FIELD_NOT_FOUND, name)),
        },
    };
    // Values may not be bucketed, log2'd or symbolised
    // (`__create_val_field()`).
    if !is_key && fl & (flags::BUCKET | flags::LOG2 | flags::SYM | flags::SYM_OFFSET) != 0 {
        return Err(errs.at(err::BAD_FIELD_MODIFIER, text));
    }
    let name = if src == Source::Cpu {
        "common_cpu"
    } else {
        name
    };
    let bytes = match src {
        Source::StaticStr { size, .. } => size as usize,
        Source::DynStr { .. } => STR_VAL_MAX,
        Source::Num { size, .. } => size as usize,
        Source::Timestamp | Source::Cpu => 8,
    };
    Ok(HistField {
        name: String::from(name),
        flags: fl,
        buckets,
        src,
        key_off: 0,
        key_words: bytes.div_ceil(8),
    })
}

/// Splits `param` into the trigger and its ` if FILTER` (the word `if`
/// with a space or tab on both sides), as `event_hist_trigger_parse()`.
fn split_filter(param: &str) -> Result<(&str, Option<&str>), HistError> {
    let b = param.as_bytes();
    let mut from = 0;
    while let Some(i) = param[from..].find("if").map(|i| i + from) {
        if i == 0 {
            return Err(HistError::plain(Errno::EINVAL));
        }
        if b[i - 1] != b' ' && b[i - 1] != b'\t' {
            from = i + 1;
            continue;
        }
        if i + 2 >= b.len().saturating_sub(1) {
            return Err(HistError::plain(Errno::EINVAL));
        }
        if b[i + 2] != b' ' && b[i + 2] != b'\t' {
            from = i + 1;
            continue;
        }
        // The filter text is what follows the word `if`
        // (`set_trigger_filter()`).
        let filter = param[i + 2..].trim_matches(|c: char| c.is_ascii_whitespace());
        let trig = param[..i - 1].trim_matches(|c: char| c.is_ascii_whitespace());
        return Ok((trig, Some(filter)));
    }
    Ok((param, None))
}

/// Parses the text after `hist:` for the event `ev` (Linux's
/// `event_hist_trigger_parse()` up to the registration). The filter is
/// returned as text (`spec.filter`, without `if`); the caller compiles it.
pub fn parse(param: &str, ev: &EventInfo<'_>) -> Result<HistCommand, HistError> {
    let errs = Errs {
        cmd: HistError::cmd(param),
        _p: core::marker::PhantomData,
    };
    let param = param.trim_matches(|c: char| c.is_ascii_whitespace());
    if param.is_empty() {
        return Err(HistError::plain(Errno::EINVAL));
    }
    let (trig, filter) = split_filter(param)?;

    // parse_hist_trigger_attrs()
    let (mut keys_s, mut vals_s, mut sort_s, mut name, mut clock) = (None, None, None, None, None);
    let mut bits = None;
    let (mut pause, mut cont, mut clear) = (false, false, false);
    for piece in trig.split(':') {
        if let Some((lhs, rhs)) = piece.split_once('=') {
            if rhs.is_empty() {
                return Err(errs.at(err::EMPTY_ASSIGNMENT, piece));
            }
            match lhs {
                "key" | "keys" => keys_s = Some(rhs),
                "val" | "vals" | "values" => vals_s = Some(rhs),
                "sort" => sort_s = Some(rhs),
                "name" => name = Some(rhs),
                "clock" => clock = Some(rhs.trim_matches(|c: char| c.is_ascii_whitespace())),
                "size" => {
                    let size = crate::options::parse_kstrtoul(rhs.as_bytes(), 0)
                        .map_err(HistError::plain)?;
                    // ilog2(roundup_pow_of_two(size))
                    let b = if size <= 1 {
                        0
                    } else {
                        64 - (size - 1).leading_zeros()
                    };
                    if !(MAP_BITS_MIN..=MAP_BITS_MAX).contains(&b) {
                        return Err(HistError::plain(Errno::EINVAL));
                    }
                    bits = Some(b);
                }
                // Variables (`NAME=EXPR`) are not supported here.
                _ => return Err(HistError::plain(Errno::EINVAL)),
            }
        } else {
            match piece {
                "pause" => pause = true,
                "cont" | "continue" => cont = true,
                "clear" => clear = true,
                // Actions (onmatch/onmax/onchange) are not supported here.
                _ => return Err(HistError::plain(Errno::EINVAL)),
            }
        }
    }
    let Some(keys_s) = keys_s else {
        return Err(HistError::plain(Errno::EINVAL));
    };

    // create_val_fields(): hitcount is always value 0; an explicit one is
    // folded into it.
    let mut vals = Vec::new();
    if let Some(vs) = vals_s {
        let mut it = vs.split(',');
        let mut rest = None;
        for v in it.by_ref() {
            if v == "hitcount" {
                continue;
            }
            if vals.len() == VALS_MAX - 1 {
                rest = Some(v);
                break;
            }
            vals.push(parse_field(ev, &errs, v, false)?);
        }
        if let Some(r) = rest {
            // Anything left but a last "hitcount" is too many.
            if r != "hitcount" || it.next().is_some() {
                return Err(HistError::plain(Errno::EINVAL));
            }
        }
    }

    // create_key_fields()
    let mut keys = Vec::new();
    let mut key_words = 0;
    for (i, k) in keys_s.split(',').enumerate() {
        if i == KEYS_MAX {
            return Err(HistError::plain(Errno::EINVAL));
        }
        let mut f = parse_field(ev, &errs, k, true)?;
        f.key_off = key_words;
        key_words += f.key_words;
        if key_words > KEY_WORDS_MAX {
            return Err(HistError::plain(Errno::EINVAL));
        }
        keys.push(f);
    }

    // create_sort_keys(): default hitcount ascending.
    let mut sort = Vec::new();
    if let Some(ss) = sort_s {
        let parts: Vec<&str> = ss.split(',').collect();
        for (i, s) in parts.iter().enumerate() {
            if s.is_empty() {
                return Err(errs.at(err::EMPTY_SORT_FIELD, "sort="));
            }
            if i == SORT_KEYS_MAX - 1 && parts.len() > SORT_KEYS_MAX {
                return Err(errs.at(err::TOO_MANY_SORT_FIELDS, "sort="));
            }
            let (fname, m) = match s.split_once('.') {
                Some((n, m)) => (n, Some(m)),
                None => (*s, None),
            };
            if fname.is_empty() {
                return Err(errs.at(err::EMPTY_SORT_FIELD, "sort="));
            }
            let field = if fname == "hitcount" {
                0
            } else {
                match vals.iter().chain(keys.iter()).position(|f| f.name == fname) {
                    Some(p) => p + 1,
                    None => return Err(errs.at(err::INVALID_SORT_FIELD, fname)),
                }
            };
            let descending = match m {
                None | Some("ascending") => false,
                Some("descending") => true,
                Some(m) => return Err(errs.at(err::INVALID_SORT_MODIFIER, m)),
            };
            sort.push(SortKey { field, descending });
        }
    }
    if sort.is_empty() {
        sort.push(SortKey {
            field: 0,
            descending: false,
        });
    }

    Ok(HistCommand {
        spec: HistSpec {
            name: name.map(String::from),
            keys,
            vals,
            sort,
            bits: bits.unwrap_or(MAP_BITS_DEFAULT),
            clock: String::from(clock.unwrap_or("global")),
            filter: filter.map(String::from),
            key_words,
        },
        pause,
        cont,
        clear,
    })
}

/// One installed hist trigger: its spec, its map and whether it is
/// paused (`struct event_trigger_data` with its `hist_trigger_data`).
pub struct HistTrigger {
    pub spec: HistSpec,
    pub map: TracingMap,
    paused: AtomicBool,
    /// A single numeric key: the key is that one word (the fast path).
    simple_key: bool,
    execname: bool,
    /// See [`needs_ctx`](Self::needs_ctx).
    needs_ctx: bool,
    /// See [`fields_only`](Self::fields_only).
    fields_only: bool,
}

impl HistTrigger {
    /// Allocates the map (`tracing_map_init()`); `ENOMEM` if it cannot.
    pub fn new(spec: HistSpec, paused: bool) -> Result<HistTrigger, Errno> {
        let execname = spec.keys.iter().any(|k| k.flags & flags::EXECNAME != 0);
        let map = TracingMap::new(
            spec.bits,
            spec.key_words,
            1 + spec.vals.len(),
            if execname { 2 } else { 0 },
        )
        .ok_or(Errno::ENOMEM)?;
        let simple_key = spec.keys.len() == 1 && !spec.keys[0].is_string();
        let needs_ctx = execname
            || spec
                .keys
                .iter()
                .chain(spec.vals.iter())
                .any(|f| matches!(f.src, Source::Timestamp | Source::Cpu));
        // Fields of the event's own start after the 8-byte common header.
        // A named trigger's table is shared with triggers on other events,
        // each pausing on its own: the probe's trigger flag decides there.
        let fields_only = simple_key
            && spec.name.is_none()
            && spec
                .keys
                .iter()
                .chain(spec.vals.iter())
                .all(|f| matches!(f.src, Source::Num { offset, .. } if offset >= 8));
        Ok(HistTrigger {
            spec,
            map,
            paused: AtomicBool::new(paused),
            simple_key,
            execname,
            needs_ctx,
            fields_only,
        })
    }

    pub fn paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    pub fn set_paused(&self, p: bool) {
        self.paused.store(p, Ordering::Relaxed)
    }

    /// Whether the event's timestamp is used (`common_timestamp`).
    pub fn uses_timestamps(&self) -> bool {
        self.spec.timestamps()
    }

    /// Whether [`update`](Self::update) reads its [`HistCtx`] (the
    /// timestamp, the CPU or, for `.execname`, the task's name); when not,
    /// the probe need not fill it in.
    #[inline(always)]
    pub fn needs_ctx(&self) -> bool {
        self.needs_ctx
    }

    /// Counts one event (`event_hist_trigger()`): builds the key from
    /// `rec`, inserts it and adds hitcount and the values. Never
    /// allocates; a paused trigger does nothing. The caller has already
    /// applied the trigger's filter.
    #[inline]
    pub fn update(&self, rec: &[u8], ctx: &HistCtx) {
        if self.paused.load(Ordering::Relaxed) {
            return;
        }
        let elt = if self.simple_key && !self.execname {
            self.map.insert_word(self.spec.keys[0].value(rec, ctx))
        } else if self.simple_key {
            let k = self.spec.keys[0].value(rec, ctx);
            self.insert(&[k], ctx)
        } else {
            let mut key = [0u64; KEY_WORDS_MAX];
            for f in &self.spec.keys {
                if f.is_string() {
                    f.copy_str(rec, &mut key);
                } else {
                    key[f.key_off] = f.value(rec, ctx);
                }
            }
            self.insert(&key[..self.spec.key_words], ctx)
        };
        if let Some(e) = elt {
            e.add(0, 1);
            for (i, v) in self.spec.vals.iter().enumerate() {
                e.add(i + 1, v.value(rec, ctx));
            }
        }
    }

    /// Whether the key is one number and it and every value are numeric
    /// fields of the event's own (not `common_*`, the CPU or the
    /// timestamp): then the probe may count the event with
    /// [`update_fields`](Self::update_fields), from the tracepoint's
    /// arguments, without building the record.
    #[inline(always)]
    pub fn fields_only(&self) -> bool {
        self.fields_only
    }

    /// [`update`](Self::update) for a [`fields_only`](Self::fields_only)
    /// trigger, with `bits(offset)` giving the bits of the record's field
    /// at `offset` (an event declaration's `field_bits`): the same key and
    /// sums as `update` on the record those arguments make.
    #[inline(always)]
    pub fn update_fields(&self, bits: impl Fn(u32) -> u64) {
        if self.paused.load(Ordering::Relaxed) {
            return;
        }
        let field_bits = |f: &HistField| match f.src {
            Source::Num { offset, .. } => f.value_of_bits(bits(offset)),
            _ => 0,
        };
        let Some(key) = self.spec.keys.first() else {
            return;
        };
        if let Some(e) = self.map.insert_word(field_bits(key)) {
            e.add(0, 1);
            for (i, v) in self.spec.vals.iter().enumerate() {
                e.add(i + 1, field_bits(v));
            }
        }
    }

    #[inline(always)]
    fn insert(&self, key: &[u64], ctx: &HistCtx) -> Option<crate::tracing_map::Elt<'_>> {
        if self.execname {
            self.map.insert_with(key, |e| {
                let mut w = [0u8; 8];
                w.copy_from_slice(&ctx.comm[..8]);
                e.set_private(0, u64::from_le_bytes(w));
                w.copy_from_slice(&ctx.comm[8..]);
                e.set_private(1, u64::from_le_bytes(w));
            })
        } else {
            self.map.insert(key)
        }
    }

    /// `:clear`: empty the map. The caller pauses the trigger and waits
    /// until no probe can be inside [`update`](Self::update) first.
    pub fn clear(&self) {
        self.map.clear();
    }
}

/// What a `hist:` command does on an event whose hist triggers are
/// `existing` (`hist_register_trigger()` and `existing_hist_update_only()`).
#[derive(Debug, PartialEq, Eq)]
pub enum Register {
    /// Install a new trigger (paused if `:pause` was given).
    Install { paused: bool },
    /// Pause, continue or clear `existing[index]`; nothing is installed.
    Update {
        index: usize,
        pause: bool,
        cont: bool,
        clear: bool,
    },
}

/// Decides what `cmd` does given the event's existing hist triggers.
pub fn register(existing: &[&HistSpec], cmd: &HistCommand) -> Result<Register, HistError> {
    if let Some(index) = existing.iter().position(|s| s.matches(&cmd.spec)) {
        if cmd.pause || cmd.cont || cmd.clear {
            return Ok(Register::Update {
                index,
                pause: cmd.pause,
                cont: cmd.cont,
                clear: cmd.clear,
            });
        }
        return Err(HistError {
            errno: Errno::EEXIST,
            log: Some((err::TRIGGER_EEXIST, 0)),
        });
    }
    if cmd.cont || cmd.clear {
        return Err(HistError {
            errno: Errno::ENOENT,
            log: Some((err::TRIGGER_ENOENT_CLEAR, 0)),
        });
    }
    Ok(Register::Install { paused: cmd.pause })
}

/// `!hist:...`: the index of the trigger the spec names, if any (removing
/// an absent one succeeds silently, as on Linux).
pub fn find_match(existing: &[&HistSpec], spec: &HistSpec) -> Option<usize> {
    existing.iter().position(|s| s.matches(spec))
}

/// Boxed for callers that keep triggers in a list.
pub fn new_boxed(spec: HistSpec, paused: bool) -> Result<Box<HistTrigger>, Errno> {
    HistTrigger::new(spec, paused).map(Box::new)
}

#[cfg(test)]
mod tests;
