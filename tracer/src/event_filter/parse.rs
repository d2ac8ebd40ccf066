//! The filter's parser and compiler, step for step as Linux's
//! `process_preds()`: `calc_stack()` counts predicates and parentheses and
//! checks quotes, `predicate_parse()` builds the program in one pass over
//! the text with a stack for parentheses and optimises it in two passes
//! over the program, and `parse_pred()` turns one `FIELD OP VALUE` into a
//! [`Pred`]. Error kinds, caret positions and errnos are Linux's, quirks
//! included (they are what a user sees in `cat filter`).

use alloc::vec::Vec;

use super::pred::{parse_glob, MatchType, Op, Pred, StrSource};
use super::{FiltErr, FilterField, FilterType, ParseError, ProgEntry};
use crate::errno::Errno;

/// Longest quoted string (Linux: `MAX_FILTER_STR_VAL`, with its NUL).
const MAX_FILTER_STR_VAL: usize = 256;
/// Longest number (Linux: `num_buf[24]`, with its NUL).
const NUM_BUF: usize = 24;

/// C's `isspace()`.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Byte `i` of the text, NUL past its end (the text is a C string).
fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

fn err(kind: Option<FiltErr>, pos: usize, errno: Errno) -> ParseError {
    ParseError { kind, pos, errno }
}

/// `calc_stack()`: the number of predicates and the deepest nesting
/// (counting the whole text as one level), or the first error: a `)`
/// without its `(` (EPERM, Linux's -1), a `(` without its `)` (ENOENT,
/// -2), an unclosed quote (ESRCH, -3).
fn calc_stack(s: &[u8]) -> Result<(usize, usize), ParseError> {
    let mut is_pred = false;
    let mut nr_preds = 0;
    let mut open = 1usize;
    let mut max_open = 1usize;
    let mut quote = 0u8;
    let mut last_quote = 0usize;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if is_space(c) {
            i += 1;
            continue;
        }
        if quote != 0 {
            if c == quote {
                quote = 0;
            }
            i += 1;
            continue;
        }
        match c {
            b'\'' | b'"' => {
                quote = c;
                last_quote = i;
            }
            b'|' | b'&' if at(s, i + 1) == c => {
                is_pred = false;
                i += 1;
                continue;
            }
            b'(' => {
                is_pred = false;
                open += 1;
                max_open = max_open.max(open);
                i += 1;
                continue;
            }
            b')' => {
                is_pred = false;
                if open == 1 {
                    return Err(err(Some(FiltErr::TooManyClose), i, Errno::EPERM));
                }
                open -= 1;
                i += 1;
                continue;
            }
            _ => {}
        }
        if !is_pred {
            nr_preds += 1;
            is_pred = true;
        }
        i += 1;
    }
    if quote != 0 {
        return Err(err(Some(FiltErr::MissingQuote), last_quote, Errno::ESRCH));
    }
    if open != 1 {
        // Find the '(' left open, walking back (never looking at index 0,
        // as Linux's loop does not).
        let mut level = open;
        let mut quote = 0u8;
        let mut j = s.len().saturating_sub(1);
        while j > 0 {
            let c = s[j];
            if quote != 0 {
                if c == quote {
                    quote = 0;
                }
            } else {
                match c {
                    b'(' => {
                        if level == open {
                            return Err(err(Some(FiltErr::TooManyOpen), j, Errno::ENOENT));
                        }
                        level -= 1;
                    }
                    b')' => level += 1,
                    b'\'' | b'"' => quote = c,
                    _ => {}
                }
            }
            j -= 1;
        }
        return Err(err(Some(FiltErr::TooManyOpen), 0, Errno::ENOENT));
    }
    Ok((max_open, nr_preds))
}

/// `process_preds()`: the program for `s` over the event's `fields`.
pub(super) fn process_preds(
    s: &[u8],
    lookup: &dyn Fn(&[u8]) -> Option<FilterField>,
) -> Result<Vec<ProgEntry>, ParseError> {
    let (nr_parens, nr_preds) = calc_stack(s)?;
    if nr_preds == 0 {
        return Err(err(None, 0, Errno::EINVAL));
    }
    predicate_parse(s, nr_parens, nr_preds, lookup)
}

const INVERT: u8 = 1;
const PROCESS_AND: u8 = 2;
const PROCESS_OR: u8 = 4;

/// One entry during compilation: Linux's `prog_entry` with a signed
/// target (the first pass starts each at "the previous entry", -1 for
/// the first).
struct Entry {
    pred: Option<Pred>,
    when_to_branch: bool,
    target: isize,
}

/// `update_preds()`: the entry `prog[N].target` names gets label `n` and
/// branch condition `invert`; `n` takes over that entry's old target.
fn update_preds(prog: &mut [Entry], n: usize, invert: bool) {
    let t = prog[n].target as usize;
    let s = prog[t].target;
    prog[t].when_to_branch = invert;
    prog[t].target = n as isize;
    prog[n].target = s;
}

/// `predicate_parse()`. See Linux's long comment above it for why the
/// passes give a correct program; in short: an entry branches when its
/// predicate equals `when_to_branch`, to the entry after `target`; the
/// first pass sets, at each `&&`/`||` boundary, the pending entry's
/// target to the current label; the second follows chains of branches
/// with the same condition; the third folds the `!`s into the condition.
fn predicate_parse(
    s: &[u8],
    nr_parens: usize,
    nr_preds: usize,
    lookup: &dyn Fn(&[u8]) -> Option<FilterField>,
) -> Result<Vec<ProgEntry>, ParseError> {
    let mut prog: Vec<Entry> = Vec::with_capacity(nr_preds + 2);
    let mut inverts: Vec<bool> = Vec::with_capacity(nr_preds + 2);
    let mut stack: Vec<u8> = Vec::with_capacity(nr_parens);
    stack.push(0);
    let mut invert = false;
    let mut ptr = 0usize;
    // The errno of a failure without a parse error, as Linux's `ret`.
    let mut ret = Errno::EINVAL;

    // Set when the inner loop reaches the end of the text right after a
    // predicate (Linux's `goto out`).
    let mut complete = false;
    'outer: while at(s, ptr) != 0 {
        let next = ptr;
        ptr += 1;
        let c = s[next];
        if is_space(c) {
            continue;
        }
        match c {
            b'(' => {
                // Linux 6.1's bound; calc_stack() counted every '(' so it
                // is never reached.
                if stack.len() - 1 > nr_parens {
                    return Err(err(None, 0, Errno::EINVAL));
                }
                stack.push(invert as u8);
                continue;
            }
            b'!' if !matches!(at(s, next + 1), b'=' | b'~') => {
                invert = !invert;
                continue;
            }
            _ => {}
        }
        let n = prog.len();
        if n >= nr_preds {
            return Err(err(Some(FiltErr::TooManyPreds), next, ret));
        }
        inverts.push(invert);
        let (pred, len) = parse_pred(&s[next..], ptr, lookup)?;
        ptr = next + len;
        prog.push(Entry {
            pred: Some(pred),
            when_to_branch: false,
            target: n as isize - 1,
        });
        let n = prog.len();
        ret = Errno::EPERM;
        loop {
            let next = ptr;
            ptr += 1;
            let c = at(s, next);
            if is_space(c) {
                continue;
            }
            match c {
                b')' | 0 => {}
                b'&' | b'|' if at(s, next + 1) == c => ptr += 1,
                _ => return Err(err(Some(FiltErr::TooManyPreds), next, ret)),
            }
            let top = stack.last_mut().expect("the stack keeps its bottom");
            invert = *top & INVERT != 0;
            if *top & PROCESS_AND != 0 {
                update_preds(&mut prog, n - 1, invert);
                *top &= !PROCESS_AND;
            }
            if c == b'&' {
                *top |= PROCESS_AND;
                break;
            }
            if *top & PROCESS_OR != 0 {
                update_preds(&mut prog, n - 1, !invert);
                *top &= !PROCESS_OR;
            }
            if c == b'|' {
                *top |= PROCESS_OR;
                break;
            }
            if c == 0 {
                complete = true;
                break 'outer;
            }
            if stack.len() == 1 {
                return Err(err(Some(FiltErr::TooManyClose), ptr, ret));
            }
            stack.pop();
        }
    }
    // Only the inner loop can complete a non-empty expression: the outer
    // loop running out of text means a dangling `&&`, `||`, `(` or `!`.
    if !complete && !prog.is_empty() {
        return Err(err(Some(FiltErr::InvalidFilter), ptr, Errno::EINVAL));
    }
    if stack.len() != 1 {
        return Err(err(Some(FiltErr::TooManyOpen), ptr, ret));
    }
    let n = prog.len();
    if n == 0 {
        return Err(err(Some(FiltErr::NoFilter), ptr, Errno::EINVAL));
    }
    // The sentinels TRUE (prog[N]) and FALSE (prog[N+1]).
    prog.push(Entry {
        pred: None,
        when_to_branch: false,
        target: 1,
    });
    prog.push(Entry {
        pred: None,
        when_to_branch: false,
        target: 0,
    });
    prog[n - 1].target = n as isize;
    prog[n - 1].when_to_branch = false;
    // Second pass.
    for i in (0..n - 1).rev() {
        let t = prog[i].target;
        if t < 0 || t as usize > n + 1 {
            return Err(err(None, 0, Errno::EINVAL));
        }
        let t = t as usize;
        if prog[i].when_to_branch == prog[t].when_to_branch {
            prog[i].target = prog[t].target;
        }
    }
    // Third pass, and the program must always move forward.
    let mut out = Vec::with_capacity(n);
    for (i, e) in prog.into_iter().take(n).enumerate() {
        if e.target <= i as isize || e.target > n as isize {
            return Err(err(None, 0, Errno::EINVAL));
        }
        out.push(ProgEntry {
            pred: e.pred.expect("entries below N have a predicate"),
            when_to_branch: inverts[i] ^ e.when_to_branch,
            target: e.target as u32,
        });
    }
    Ok(out)
}

/// `parse_pred()`: one predicate at the start of `s` (the text from the
/// predicate's first byte; `pos` is where Linux says it starts, one past
/// that byte). Returns the predicate and the bytes it took.
fn parse_pred(
    s: &[u8],
    pos: usize,
    lookup: &dyn Fn(&[u8]) -> Option<FilterField>,
) -> Result<(Pred, usize), ParseError> {
    let mut i = 0;
    while is_space(at(s, i)) {
        i += 1;
    }
    let start = i;
    while at(s, i).is_ascii_alphanumeric() || at(s, i) == b'_' {
        i += 1;
    }
    if i == start {
        // Linux returns -1 here without a parse error.
        return Err(err(None, 0, Errno::EPERM));
    }
    let Some(field) = lookup(&s[start..i]) else {
        return Err(err(Some(FiltErr::FieldNotFound), pos + i, Errno::EINVAL));
    };
    // `.ustring` only changes how a `char *` is read; there are none here.
    if s[i..].starts_with(b".ustring") {
        i += 8;
    }
    while is_space(at(s, i)) {
        i += 1;
    }
    let Some(&(op, text)) = Op::ALL
        .iter()
        .find(|(_, t)| s[i.min(s.len())..].starts_with(t.as_bytes()))
    else {
        return Err(err(Some(FiltErr::InvalidOp), pos + i, Errno::EINVAL));
    };
    i += text.len();
    while is_space(at(s, i)) {
        i += 1;
    }
    let vstart = i;
    let bad = |kind, at: usize| Err(err(Some(kind), pos + at, Errno::EINVAL));
    let q = at(s, i);
    if q == b'\'' || q == b'"' {
        let not = match op {
            Op::Ne => true,
            Op::Glob | Op::Eq => false,
            _ => return bad(FiltErr::IllegalFieldOp, i),
        };
        if !field.ty.is_string() {
            return bad(FiltErr::ExpectDigit, i);
        }
        i += 1;
        while at(s, i) != 0 && at(s, i) != q {
            i += 1;
        }
        if at(s, i) == 0 {
            return bad(FiltErr::MissingQuote, i);
        }
        let value = &s[vstart + 1..i];
        if value.len() >= MAX_FILTER_STR_VAL {
            return bad(FiltErr::OperandTooLong, i);
        }
        let (ty, pattern, not) = if op == Op::Glob {
            parse_glob(value)
        } else {
            (MatchType::Full, value, not)
        };
        let src = match field.ty {
            FilterType::Comm => StrSource::Comm,
            FilterType::StaticString => StrSource::Static { len: field.size },
            FilterType::DynString => StrSource::Dyn,
            _ => StrSource::RelDyn,
        };
        let pred = Pred::Str {
            src,
            offset: field.offset,
            ty,
            pattern: pattern.into(),
            not,
        };
        return Ok((pred, i + 1));
    }
    if q.is_ascii_digit() || q == b'-' {
        if field.ty.is_string() {
            return bad(FiltErr::ExpectString, i);
        }
        if op == Op::Glob {
            return bad(FiltErr::IllegalFieldOp, i);
        }
        if q == b'-' {
            i += 1;
        }
        while at(s, i).is_ascii_alphanumeric() {
            i += 1;
        }
        let num = &s[vstart..i];
        if num.len() >= NUM_BUF {
            return bad(FiltErr::OperandTooLong, i);
        }
        let val = if field.signed {
            kstrtoll(num).map(|v| v as u64)
        } else {
            kstrtoull(num)
        };
        let Some(val) = val else {
            return bad(FiltErr::IllegalIntval, vstart);
        };
        let pred = if field.ty == FilterType::Cpu {
            Pred::Cpu {
                op,
                val: val as i32,
            }
        } else {
            select_comparison(&field, op, val)
        };
        return Ok((pred, i));
    }
    bad(FiltErr::InvalidValue, i)
}

/// `select_comparison_fn()`: the numeric predicate for the field's size
/// and signedness; a size other than 1, 2, 4 or 8 has none.
fn select_comparison(field: &FilterField, op: Op, val: u64) -> Pred {
    match (field.size, op.num(field.signed)) {
        (1 | 2 | 4 | 8, Some(num)) => Pred::num(field.offset, field.size, num, val),
        _ => Pred::Nop,
    }
}

/// `kstrtoull(s, 0)`: decimal, `0x` hex or `0` octal, the whole text, no
/// overflow. A leading `+` is allowed.
pub fn kstrtoull(s: &[u8]) -> Option<u64> {
    let s = s.strip_prefix(b"+").unwrap_or(s);
    let (base, digits) = if s.len() >= 3
        && s[0] == b'0'
        && s[1].eq_ignore_ascii_case(&b'x')
        && s[2].is_ascii_hexdigit()
    {
        (16, &s[2..])
    } else if s.first() == Some(&b'0') {
        (8, s)
    } else {
        (10, s)
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        let d = (c as char).to_digit(base)?;
        v = v.checked_mul(base as u64)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// `kstrtoll(s, 0)`: an optional `-`, then as [`kstrtoull`], within i64.
pub fn kstrtoll(s: &[u8]) -> Option<i64> {
    if let Some(rest) = s.strip_prefix(b"-") {
        let v = kstrtoull(rest)?;
        if v > 1u64 << 63 {
            return None;
        }
        Some((v as i64).wrapping_neg())
    } else {
        let v = kstrtoull(s)?;
        i64::try_from(v).ok()
    }
}
