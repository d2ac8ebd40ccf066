//! The predicates of a compiled filter and how each tests a record (Linux:
//! the `filter_pred_*` functions and `regex_match_*` of
//! kernel/trace/trace_events_filter.c).
//!
//! A predicate reads one field at a fixed offset of the record's bytes.
//! Numbers are read little-endian with the field's width; a read outside
//! the record gives 0, a string outside it is cut at the record's end, so
//! a short or corrupt record never panics (Linux trusts the record).

use alloc::boxed::Box;

use crate::filter::glob_match;

/// What the filter may ask about the context the record is tested in:
/// Linux's generic fields `CPU` (`raw_smp_processor_id()`) and `COMM`
/// (`current->comm`). Only predicates on those fields call it.
pub trait FilterEnv {
    /// The current CPU.
    fn cpu(&self) -> u32;
    /// The current task's name, NUL-padded (`TASK_COMM_LEN` = 16).
    fn comm(&self) -> [u8; 16];
}

/// The comparison of a numeric predicate (Linux: `filter_pred_N` for
/// `==`/`!=`, `filter_pred_sN`/`filter_pred_uN` for the others).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumOp {
    Eq,
    Ne,
    /// Signed `<` `<=` `>` `>=`.
    SLt,
    SLe,
    SGt,
    SGe,
    /// Unsigned `<` `<=` `>` `>=`.
    ULt,
    ULe,
    UGt,
    UGe,
    /// `&`: true when `field & value` is not 0.
    Band,
}

/// The operators of the grammar, in the order Linux tries them (`~`
/// before `!=`, `<=` before `<`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Glob,
    Ne,
    Eq,
    Le,
    Lt,
    Ge,
    Gt,
    Band,
}

impl Op {
    /// `ops[]` of trace_events_filter.c.
    pub const ALL: [(Op, &'static str); 8] = [
        (Op::Glob, "~"),
        (Op::Ne, "!="),
        (Op::Eq, "=="),
        (Op::Le, "<="),
        (Op::Lt, "<"),
        (Op::Ge, ">="),
        (Op::Gt, ">"),
        (Op::Band, "&"),
    ];

    /// The numeric comparison of this operator on a field of that
    /// signedness (`~` has none).
    pub fn num(self, signed: bool) -> Option<NumOp> {
        Some(match (self, signed) {
            (Op::Eq, _) => NumOp::Eq,
            (Op::Ne, _) => NumOp::Ne,
            (Op::Band, _) => NumOp::Band,
            (Op::Lt, true) => NumOp::SLt,
            (Op::Le, true) => NumOp::SLe,
            (Op::Gt, true) => NumOp::SGt,
            (Op::Ge, true) => NumOp::SGe,
            (Op::Lt, false) => NumOp::ULt,
            (Op::Le, false) => NumOp::ULe,
            (Op::Gt, false) => NumOp::UGt,
            (Op::Ge, false) => NumOp::UGe,
            (Op::Glob, _) => return None,
        })
    }
}

/// How a string pattern matches (Linux: `enum regex_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchType {
    Full,
    /// `abc*`
    Front,
    /// `*abc*`
    Middle,
    /// `*abc`
    End,
    /// Any other `*`, or `?`, `[`, `\`: `glob_match`.
    Glob,
}

/// Where a string predicate finds its string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrSource {
    /// `char name[len]` at the offset (`FILTER_STATIC_STRING`).
    Static { len: u32 },
    /// `__data_loc char[]`: a u32 `(len << 16) | offset from the record`.
    Dyn,
    /// `__rel_loc char[]`: the same, offset from the end of the word.
    RelDyn,
    /// The generic `COMM` field (`current->comm`).
    Comm,
}

/// One predicate (Linux: `struct filter_pred` with its `fn_num`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pred {
    /// A number of `size` bytes at `offset` against `val`, both
    /// truncated to the field's width (Linux's `(type)pred->val`) and
    /// compared as `op` says. Stored pre-shifted: the evaluator loads 8
    /// bytes at `offset` and shifts them left by `shift` (64 - 8 * size),
    /// which drops the bytes after the field and keeps order for both
    /// signed and unsigned compares; `val` is shifted the same way.
    Num {
        offset: u32,
        shift: u8,
        op: NumOp,
        val: u64,
    },
    /// The generic `CPU` field against a number (`filter_pred_cpu`: an
    /// `int` compare; `&` is always false there).
    Cpu { op: Op, val: i32 },
    /// A string field against a pattern; `not` from `!=` or from a
    /// pattern that starts with `!` under `~`.
    Str {
        src: StrSource,
        offset: u32,
        ty: MatchType,
        pattern: Box<[u8]>,
        not: bool,
    },
    /// A field with no comparison function (a number wider than 8 bytes,
    /// or size 0): always false (`FILTER_PRED_FN_NOP`).
    Nop,
}

/// The 8 bytes at `offset` as a little-endian number (bytes past the
/// record read as 0).
#[inline(always)]
fn load8(rec: &[u8], offset: u32) -> u64 {
    let o = offset as usize;
    match rec.get(o..o.wrapping_add(8)) {
        Some(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        None => load8_tail(rec, o),
    }
}

/// [`load8`] near or past the record's end.
#[cold]
#[inline(never)]
fn load8_tail(rec: &[u8], o: usize) -> u64 {
    let mut b = [0u8; 8];
    for (i, d) in b.iter_mut().enumerate() {
        *d = o
            .checked_add(i)
            .and_then(|j| rec.get(j))
            .copied()
            .unwrap_or(0);
    }
    u64::from_le_bytes(b)
}

/// A numeric test on a field value `x` and a value `val`, both shifted
/// to the top of the u64 (see [`Pred::Num`]).
#[inline(always)]
pub(super) fn num_test(x: u64, op: NumOp, val: u64) -> bool {
    match op {
        NumOp::Eq => x == val,
        NumOp::Ne => x != val,
        NumOp::SLt => (x as i64) < val as i64,
        NumOp::SLe => (x as i64) <= val as i64,
        NumOp::SGt => (x as i64) > val as i64,
        NumOp::SGe => (x as i64) >= val as i64,
        NumOp::ULt => x < val,
        NumOp::ULe => x <= val,
        NumOp::UGt => x > val,
        NumOp::UGe => x >= val,
        NumOp::Band => x & val != 0,
    }
}

impl Pred {
    /// The numeric predicate for a field of `size` bytes (1, 2, 4 or 8)
    /// at `offset`.
    pub fn num(offset: u32, size: u32, op: NumOp, val: u64) -> Pred {
        let shift = 64 - 8 * size.clamp(1, 8) as u8;
        Pred::Num {
            offset,
            shift,
            op,
            val: val << shift,
        }
    }
}

impl Pred {
    /// Tests the record `rec` (Linux: `filter_pred_fn_call`). Numbers
    /// are tested in line; strings out of line.
    #[inline(always)]
    pub fn test<E: FilterEnv + ?Sized>(&self, rec: &[u8], env: &E) -> bool {
        match *self {
            Pred::Num {
                offset,
                shift,
                op,
                val,
            } => num_test(load8(rec, offset) << shift, op, val),
            Pred::Cpu { op, val } => {
                let cpu = env.cpu() as i32;
                match op {
                    Op::Eq => cpu == val,
                    Op::Ne => cpu != val,
                    Op::Lt => cpu < val,
                    Op::Le => cpu <= val,
                    Op::Gt => cpu > val,
                    Op::Ge => cpu >= val,
                    Op::Band | Op::Glob => false,
                }
            }
            Pred::Str { .. } => self.test_str(rec, env),
            Pred::Nop => false,
        }
    }

    #[inline(never)]
    fn test_str<E: FilterEnv + ?Sized>(&self, rec: &[u8], env: &E) -> bool {
        let Pred::Str {
            src,
            offset,
            ty,
            ref pattern,
            not,
        } = *self
        else {
            return false;
        };
        {
            let m = match src {
                StrSource::Static { len } => {
                    let o = (offset as usize).min(rec.len());
                    let end = o.saturating_add(len as usize).min(rec.len());
                    regex_match(ty, pattern, &rec[o..end], len as usize)
                }
                StrSource::Dyn | StrSource::RelDyn => {
                    let item = load8(rec, offset) as u32;
                    let base = if src == StrSource::RelDyn {
                        offset as usize + 4
                    } else {
                        0
                    };
                    let len = (item >> 16) as usize;
                    let o = (base + (item & 0xffff) as usize).min(rec.len());
                    let end = o.saturating_add(len).min(rec.len());
                    regex_match(ty, pattern, &rec[o..end], len)
                }
                StrSource::Comm => {
                    let comm = env.comm();
                    regex_match(ty, pattern, &comm, comm.len())
                }
            };
            m ^ not
        }
    }
}

/// Byte `i` of `s`, NUL past its end.
#[inline(always)]
fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

/// C's `strncmp(a, b, n) == 0` with bytes past a slice read as NUL.
fn strn_eq(a: &[u8], b: &[u8], n: usize) -> bool {
    for i in 0..n {
        let (x, y) = (at(a, i), at(b, i));
        if x != y {
            return false;
        }
        if x == 0 {
            return true;
        }
    }
    true
}

/// `s` up to its first NUL.
fn cstr(s: &[u8]) -> &[u8] {
    &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
}

/// Whether `pat` occurs in `hay` (any bytes, NULs included).
fn contains(hay: &[u8], pat: &[u8]) -> bool {
    pat.is_empty() || hay.windows(pat.len()).any(|w| w == pat)
}

/// Linux's `regex_match_*` on a string `s` the record holds as `len`
/// bytes (`len` counts the NUL of a dynamic string; for `char[N]` it is
/// N; 0 means "up to the NUL"). `s` is those bytes, cut at the record's
/// end.
pub fn regex_match(ty: MatchType, pat: &[u8], s: &[u8], len: usize) -> bool {
    match ty {
        MatchType::Full => {
            if len == 0 {
                cstr(s) == pat
            } else {
                len >= pat.len() && strn_eq(s, pat, len)
            }
        }
        MatchType::Front => (len == 0 || len >= pat.len()) && strn_eq(s, pat, pat.len()),
        // strnstr() looks at `len` bytes, past any NUL.
        MatchType::Middle => {
            if len == 0 {
                contains(cstr(s), pat)
            } else {
                contains(&s[..len.min(s.len())], pat)
            }
        }
        // The `len - 1` bytes before the last: for `char[N]` that is the
        // end of the array, not of the string, as in Linux.
        MatchType::End => {
            let Some(strlen) = len.checked_sub(1) else {
                return false;
            };
            strlen >= pat.len()
                && (strlen - pat.len()..strlen)
                    .zip(pat)
                    .all(|(i, &c)| at(s, i) == c)
        }
        MatchType::Glob => glob_match(pat, &s[..len.min(s.len())]),
    }
}

/// `filter_parse_regex()` for a `~` pattern: a leading `!` inverts; then
/// `*x` end, `x*` front, `*x*` middle, any other `*` or `?`, `[`, `\` a
/// full glob, a leading digit a full match. Returns the type, the pattern
/// to compare and whether it is inverted.
pub fn parse_glob(buf: &[u8]) -> (MatchType, &[u8], bool) {
    let (not, buf) = match buf.first() {
        Some(b'!') => (true, &buf[1..]),
        _ => (false, buf),
    };
    if buf.first().is_some_and(|c| c.is_ascii_digit()) {
        return (MatchType::Full, buf, not);
    }
    let mut ty = MatchType::Full;
    let mut end = buf.len();
    for (i, &c) in buf.iter().enumerate() {
        if c == b'*' {
            if i == 0 {
                ty = MatchType::End;
            } else if i == buf.len() - 1 {
                ty = if ty == MatchType::End {
                    MatchType::Middle
                } else {
                    MatchType::Front
                };
                end = i;
                break;
            } else {
                return (MatchType::Glob, buf, not);
            }
        } else if matches!(c, b'[' | b'?' | b'\\') {
            return (MatchType::Glob, buf, not);
        }
    }
    let start = usize::from(buf.first() == Some(&b'*')).min(end);
    (ty, &buf[start..end], not)
}
