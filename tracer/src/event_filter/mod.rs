//! Event filters: the text written to `events/SYSTEM/EVENT/filter`,
//! compiled once into a small program that tests a record's bytes
//! (Linux: kernel/trace/trace_events_filter.c; the grammar and the texts
//! are Linux 6.1's).
//!
//! ```text
//! expr := term { ('&&' | '||') term }      && binds tighter than ||
//! term := '!' term | '(' expr ')' | FIELD OP VALUE
//! OP   := ~  !=  ==  <=  <  >=  >  &       (tried in this order)
//! VALUE:= "string" | 'string' | [-]number  (kstrtoll/kstrtoull, base 0)
//! ```
//!
//! A FIELD is looked up in the event's own fields, then the generic ones
//! (`CPU`/`cpu`/`common_cpu`: the current CPU; `COMM`/`comm`: the current
//! task's name), then the common ones (`common_pid`...). Numbers are
//! truncated to the field's width and compared signed or unsigned as the
//! field is; strings (`char[N]`, `__data_loc char[]`, `COMM`) take only
//! `==`, `!=` and `~` (a glob: `a*`, `*a`, `*a*`, or a full glob with `?`,
//! `[...]`; a leading `!` inverts).
//!
//! Compiling ([`Filter::compile`]) follows Linux's `predicate_parse()`:
//! the program is a list of entries `{pred, when_to_branch, target}`; the
//! evaluator ([`Filter::matches`]) runs
//!
//! ```text
//! for i in 0..N: if pred[i](rec) == when_to_branch[i] { i = target[i] }
//! keep the record if the loop ended at N (TRUE), not at N+1 (FALSE)
//! ```
//!
//! so `a && b` is "if !a goto FALSE; if !b goto FALSE; TRUE" and a
//! predicate is never tested twice. A bad text gives a [`ParseError`]
//! with Linux's error kind, caret position and errno (EINVAL for most,
//! EPERM/ENOENT/ESRCH where Linux returns its raw -1/-2/-3).
//!
//! The state of one event's `filter` file is an [`EventFilter`]: the text
//! `cat filter` shows (the filter as written, or after a bad write the
//! text with a caret line and `parse_error: ...`, Linux's defined
//! behaviour) and, for a good filter, its program.
//!
//! For other users (the trigger's `if FILTER`): [`Filter::compile`] with
//! the event's fields, then [`Filter::matches`] on a record and a
//! [`FilterEnv`]; [`Filter::reads_context`] tells whether the record's
//! common header (flags, preempt count, pid) must be filled in first.
//!
//! Not here: `.function` and `CPUS{...}` (not in Linux 6.1), `char *`
//! fields (no event here has one).

mod parse;
mod pred;
#[cfg(test)]
mod tests;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

pub use parse::{kstrtoll, kstrtoull};
pub use pred::{regex_match, FilterEnv, MatchType, NumOp, Op, Pred, StrSource};

use crate::errno::Errno;
use crate::event_field::EventField;
use crate::events::COMMON_FIELDS;

/// Linux's filter error kinds (`FILT_ERR_*`), in Linux's order: the
/// index into [`ERR_TEXT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FiltErr {
    None = 0,
    InvalidOp,
    TooManyOpen,
    TooManyClose,
    MissingQuote,
    OperandTooLong,
    ExpectString,
    ExpectDigit,
    IllegalFieldOp,
    FieldNotFound,
    IllegalIntval,
    BadSubsysFilter,
    TooManyPreds,
    InvalidFilter,
    IpFieldOnly,
    InvalidValue,
    Errno,
    NoFilter,
}

/// The texts of [`FiltErr`] (Linux 6.1's `err_text[]`), for
/// `parse_error:` lines and `error_log`.
pub const ERR_TEXT: [&str; 18] = [
    "No error",
    "Invalid operator",
    "Too many '('",
    "Too few '('",
    "Missing matching quote",
    "Operand too long",
    "Expecting string field",
    "Expecting numeric field",
    "Illegal operation for field type",
    "Field not found",
    "Illegal integer value",
    "Couldn't find or set field in one of a subsystem's events",
    "Too many terms in predicate expression",
    "Meaningless filter expression",
    "Only 'ip' field is supported for function trace",
    "Invalid value (did you forget quotes)?",
    "Error",
    "No filter found",
];

impl FiltErr {
    pub fn text(self) -> &'static str {
        ERR_TEXT[self as usize]
    }
}

/// Why a filter did not compile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The parse error, or `None` where Linux fails without one (an empty
    /// text, a predicate without a field name): `cat filter` then shows
    /// `Error: (0)`.
    pub kind: Option<FiltErr>,
    /// Linux's `lasterr_pos`: where the caret goes.
    pub pos: usize,
    /// What the write returns.
    pub errno: Errno,
}

/// How a field is compared (Linux: `enum filter_type`, from
/// `filter_assign_type()` and the generic fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterType {
    Other,
    StaticString,
    DynString,
    RelDynString,
    Cpu,
    Comm,
}

impl FilterType {
    /// `is_string_field()`.
    pub fn is_string(self) -> bool {
        matches!(
            self,
            FilterType::StaticString
                | FilterType::DynString
                | FilterType::RelDynString
                | FilterType::Comm
        )
    }

    /// `filter_assign_type()` for a C type (`array`: the `[N]` of a fixed
    /// array, which Linux has in the type string).
    pub fn of(ty: &str, array: Option<u32>) -> FilterType {
        if ty.contains("__data_loc") && ty.contains("char") {
            FilterType::DynString
        } else if ty.contains("__rel_loc") && ty.contains("char") {
            FilterType::RelDynString
        } else if (array.is_some() || ty.contains('[')) && ty.contains("char") {
            FilterType::StaticString
        } else {
            FilterType::Other
        }
    }
}

/// A field as the filter sees it (Linux: `struct ftrace_event_field`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilterField {
    pub offset: u32,
    pub size: u32,
    pub signed: bool,
    pub ty: FilterType,
}

/// `trace_find_event_field()`: the event's field `name`, else a generic
/// field (`CPU`, `cpu`, `common_cpu`, `COMM`, `comm`), else a common one.
pub fn find_field(fields: &[EventField], name: &[u8]) -> Option<FilterField> {
    if let Some(f) = fields.iter().find(|f| f.name.as_bytes() == name) {
        return Some(FilterField {
            offset: f.offset,
            size: f.size,
            signed: f.signed,
            ty: FilterType::of(f.ty, f.array),
        });
    }
    let generic = |ty| {
        Some(FilterField {
            offset: 0,
            size: 0,
            signed: true,
            ty,
        })
    };
    match name {
        b"CPU" | b"cpu" | b"common_cpu" => return generic(FilterType::Cpu),
        b"COMM" | b"comm" => return generic(FilterType::Comm),
        _ => {}
    }
    COMMON_FIELDS
        .iter()
        .find(|c| c.1.as_bytes() == name)
        .map(|&(_, _, offset, size, signed)| FilterField {
            offset,
            size,
            signed,
            ty: FilterType::Other,
        })
}

/// One entry of the program: test `pred`; if the result equals
/// `when_to_branch`, continue after entry `target` (`target` = N means
/// "reject", the entry after the last means "keep").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgEntry {
    pub pred: Pred,
    pub when_to_branch: bool,
    pub target: u32,
}

/// A filter that is one numeric test of one of the event's own fields
/// (`next_pid == 0`, `!(prio < 100)`): the probe computes just that
/// field from its arguments and tests it, without building the record.
///
/// Every numeric test, inverted or not, keeps the values of one interval
/// (wrapping around the top of the u64): `==` keeps `[v, v]`, `!=` its
/// complement, `<` keeps `[0, v - 1]` (after moving signed values to
/// unsigned order by flipping the sign bit, which the interval's start
/// absorbs), `&` keeps the masked values in `[1, MAX]`. So the test is one
/// shift, one mask, one subtraction and one unsigned compare, whatever the
/// operator: no jump on the operator, which keeps the probe's gate short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldTest {
    /// The field's offset in the record (at least 8).
    pub offset: u32,
    /// `64 - 8 * size`: the field's bytes moved to the top of the u64.
    shift: u8,
    /// All ones, or the value of `&`.
    mask: u64,
    /// The interval kept: `lo ..= lo + span`, wrapping.
    lo: u64,
    span: u64,
}

/// A set of u64 values: empty, or `lo ..= lo + span` (wrapping).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Interval {
    Empty,
    From { lo: u64, span: u64 },
}

impl Interval {
    /// `lo ..= hi` (empty when `hi < lo`).
    fn new(lo: u64, hi: u64) -> Interval {
        if hi < lo {
            Interval::Empty
        } else {
            Interval::From { lo, span: hi - lo }
        }
    }

    /// Every value not in `self` (one interval again, wrapping).
    fn complement(self) -> Interval {
        match self {
            Interval::Empty => Interval::From {
                lo: 0,
                span: u64::MAX,
            },
            Interval::From { span: u64::MAX, .. } => Interval::Empty,
            Interval::From { lo, span } => Interval::From {
                lo: lo.wrapping_add(span).wrapping_add(1),
                span: u64::MAX - span - 1,
            },
        }
    }
}

impl FieldTest {
    /// The test of the predicate `num_test(x, op, val)` on the field at
    /// `offset` (`x` its bits shifted left by `shift`), inverted when
    /// `invert` (the program's `when_to_branch`).
    fn new(offset: u32, shift: u8, op: NumOp, val: u64, invert: bool) -> FieldTest {
        const SIGN: u64 = 1 << 63;
        // Signed compares become unsigned ones on values with the sign
        // bit flipped.
        let flip = match op {
            NumOp::SLt | NumOp::SLe | NumOp::SGt | NumOp::SGe => SIGN,
            _ => 0,
        };
        let v = val ^ flip;
        let mut mask = u64::MAX;
        let kept = match op {
            NumOp::Eq => Interval::new(v, v),
            NumOp::Ne => Interval::new(v, v).complement(),
            NumOp::SLt | NumOp::ULt => match v.checked_sub(1) {
                Some(hi) => Interval::new(0, hi),
                None => Interval::Empty,
            },
            NumOp::SLe | NumOp::ULe => Interval::new(0, v),
            NumOp::SGt | NumOp::UGt => match v.checked_add(1) {
                Some(lo) => Interval::new(lo, u64::MAX),
                None => Interval::Empty,
            },
            NumOp::SGe | NumOp::UGe => Interval::new(v, u64::MAX),
            NumOp::Band => {
                mask = val;
                Interval::new(1, u64::MAX)
            }
        };
        let kept = if invert { kept.complement() } else { kept };
        let (mask, lo, span) = match kept {
            // Nothing passes: 0 - 1 is above a span of 0.
            Interval::Empty => (0, 1, 0),
            // (x ^ flip) - lo == x - (lo ^ flip), modulo 2^64.
            Interval::From { lo, span } => (mask, lo ^ flip, span),
        };
        FieldTest {
            offset,
            shift,
            mask,
            lo,
            span,
        }
    }

    /// Whether a record whose field has `bits` (the value's bytes in the
    /// low bytes) passes the filter.
    #[inline(always)]
    pub fn keep(&self, bits: u64) -> bool {
        ((bits << self.shift) & self.mask).wrapping_sub(self.lo) <= self.span
    }
}

/// A compiled filter (Linux: `struct event_filter`'s `prog`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    prog: Vec<ProgEntry>,
    reads_context: bool,
    field_test: Option<FieldTest>,
}

impl Filter {
    /// Compiles `text` for an event with `fields` (Linux:
    /// `process_preds()`). The text ends at its first NUL.
    pub fn compile(text: &str, fields: &[EventField]) -> Result<Filter, ParseError> {
        let bytes = text.as_bytes();
        let bytes = &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len())];
        let prog = parse::process_preds(bytes, &|name| find_field(fields, name))?;
        // Bytes 2..8 of a record (flags, preempt count, pid) depend on
        // the context; common_type (0..2) is the event's own id.
        let reads_context = prog.iter().any(|e| match e.pred {
            Pred::Num { offset, .. } => (2..8).contains(&offset),
            _ => false,
        });
        let field_test = match prog.as_slice() {
            [ProgEntry {
                pred:
                    Pred::Num {
                        offset,
                        shift,
                        op,
                        val,
                    },
                when_to_branch,
                ..
            }] if *offset >= 8 => Some(FieldTest::new(*offset, *shift, *op, *val, *when_to_branch)),
            _ => None,
        };
        Ok(Filter {
            prog,
            reads_context,
            field_test,
        })
    }

    /// Whether the record passes (Linux: `filter_match_preds()`).
    /// Inlined into its caller (the probe's out-of-line path), with the
    /// numeric tests; string tests are calls.
    #[inline(always)]
    pub fn matches<E: FilterEnv + ?Sized>(&self, rec: &[u8], env: &E) -> bool {
        let n = self.prog.len();
        let mut i = 0;
        while let Some(e) = self.prog.get(i) {
            if e.pred.test(rec, env) == e.when_to_branch {
                i = e.target as usize;
            }
            i += 1;
        }
        i == n
    }

    /// Whether a predicate reads `common_flags`, `common_preempt_count`
    /// or `common_pid`: if not, a record to test needs only its type in
    /// its first 8 bytes.
    pub fn reads_context(&self) -> bool {
        self.reads_context
    }

    /// The filter as one test of one field, when it is one (see
    /// [`FieldTest`]); [`Filter::matches`] gives the same answer.
    #[inline(always)]
    pub fn field_test(&self) -> Option<&FieldTest> {
        self.field_test.as_ref()
    }

    /// The program (for tests and the curious).
    pub fn prog(&self) -> &[ProgEntry] {
        &self.prog
    }
}

/// What a write to a `filter` file asks for (Linux:
/// `event_filter_write()`, `apply_event_filter()`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilterWrite {
    /// `0`: remove the filter.
    Clear,
    /// Any other text: compile it. The text is the written bytes up to a
    /// NUL, without trailing white space (Linux's `strstrip()` works in
    /// place), leading white space kept.
    Set(String),
}

/// The longest write (Linux: `cnt >= PAGE_SIZE` is EINVAL).
pub const PAGE_SIZE: usize = 4096;

/// Judges a write of `buf` to a `filter` file.
pub fn parse_filter_write(buf: &[u8]) -> Result<FilterWrite, Errno> {
    if buf.len() >= PAGE_SIZE {
        return Err(Errno::EINVAL);
    }
    let buf = &buf[..buf.iter().position(|&b| b == 0).unwrap_or(buf.len())];
    let is_space = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let end = buf.iter().rposition(|c| !is_space(c)).map_or(0, |i| i + 1);
    let text = &buf[..end];
    let start = text.iter().position(|c| !is_space(c)).unwrap_or(text.len());
    if &text[start..] == b"0" {
        return Ok(FilterWrite::Clear);
    }
    Ok(FilterWrite::Set(String::from_utf8_lossy(text).into_owned()))
}

/// The state of one event's filter (Linux: `struct event_filter`): what
/// `cat filter` shows and, if it compiled, the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFilter {
    /// The filter string, or after an error the string with its caret
    /// and error lines (`filter_string`, without the final newline).
    pub text: String,
    pub prog: Option<Filter>,
}

impl EventFilter {
    /// `create_filter()`: compiles `text`; on error the state keeps the
    /// text with Linux's error report and no program.
    pub fn create(text: &str, fields: &[EventField]) -> (EventFilter, Result<(), ParseError>) {
        match Filter::compile(text, fields) {
            Ok(f) => (
                EventFilter {
                    text: String::from(text),
                    prog: Some(f),
                },
                Ok(()),
            ),
            Err(e) => (
                EventFilter {
                    text: append_filter_err(text, &e),
                    prog: None,
                },
                Err(e),
            ),
        }
    }

    /// The state of an event a subsystem filter did not compile for:
    /// the caret at column 0 and `Couldn't find or set field...`.
    pub fn subsystem_error(text: &str) -> EventFilter {
        let e = ParseError {
            kind: Some(FiltErr::BadSubsysFilter),
            pos: 0,
            errno: Errno::EINVAL,
        };
        EventFilter {
            text: append_filter_err(text, &e),
            prog: None,
        }
    }
}

/// `append_filter_err()`: the text, then the caret line (`"\n%*s"` with
/// width pos+1, pos at most the text's length, and 0 stays 0) and
/// `parse_error: TEXT`, or `Error: (0)` for a failure without a parse
/// error.
pub fn append_filter_err(text: &str, e: &ParseError) -> String {
    let len = text.len();
    let mut pos = e.pos.min(len);
    if pos != 0 {
        pos += 1;
    }
    match e.kind {
        Some(kind) => format!(
            "{}\n{:>width$}\nparse_error: {}\n",
            text,
            "^",
            kind.text(),
            width = pos
        ),
        None => format!("{}\nError: (0)\n", text),
    }
}

/// What `error_log` records for a filter error (Linux passes
/// `FILT_ERR_ERRNO` at position 0 when there is no parse error).
pub fn log_err_kind(e: &ParseError) -> (FiltErr, usize) {
    match e.kind {
        Some(k) => (k, e.pos),
        None => (FiltErr::Errno, 0),
    }
}

/// `cat filter` of an event (`print_event_filter()`): `none` without a
/// filter.
pub fn filter_file_text(f: Option<&EventFilter>) -> String {
    match f {
        Some(f) => format!("{}\n", f.text),
        None => String::from("none\n"),
    }
}

/// The location `error_log` names for filter errors.
pub const ERR_LOC: &str = "event filter parse error";
