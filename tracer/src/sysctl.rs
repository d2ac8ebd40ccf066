//! How a `/proc/sys` integer file reads and parses writes (Linux:
//! kernel/sysctl.c, `proc_dointvec` for a table entry holding one `int`).
//!
//! A read shows the value and a newline. A write is parsed the way
//! `__do_proc_dointvec` does it: leading white space is skipped; an
//! optional `-`; then a number in C's notation (`0x` hex, leading `0`
//! octal, else decimal: `proc_get_long` calls `strtoul` with base 0), at
//! most 20 characters; what follows it must be a space, tab or newline (or
//! nothing). The value must fit an `int`. Anything else is EINVAL, and so is
//! a write with no number at all. Text after the first number is not
//! parsed: the write reports only the bytes it used (the number and the
//! white space around it), and since the file position is then no longer 0,
//! the caller's next write of the rest is accepted and ignored (Linux's
//! default `sysctl_writes_strict` mode): see [`SysctlWrite`].
use crate::errno::Errno;

/// Linux's `TMPBUFLEN` in `proc_get_long`: a number is read from at most
/// 21 bytes, and one that fills them all is refused.
const TMPBUFLEN: usize = 22;
/// A write is cut to one page less one byte (`PAGE_SIZE - 1`).
const WRITE_MAX: usize = 4095;

/// The kernel's `isspace()` (lib/ctype.c: the C locale's six plus the
/// Latin-1 no-break space).
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0xa0)
}

/// The value of hex digit `c` in `base`, if it is one.
fn digit(c: u8, base: u32) -> Option<u64> {
    (c as char).to_digit(base).map(u64::from)
}

/// `proc_get_long` with `proc_wspace_sep` as the allowed terminators: the
/// number at the start of `buf` (`buf.len()` is the bytes left in the
/// write), as (magnitude, negative, bytes used).
fn proc_get_long(buf: &[u8]) -> Result<(u64, bool, usize), Errno> {
    let size = buf.len();
    if size == 0 {
        return Err(Errno::EINVAL);
    }
    let tmp = &buf[..size.min(TMPBUFLEN - 1)];
    // What C reads at `i`: the copy is NUL-terminated.
    let at = |i: usize| tmp.get(i).copied().unwrap_or(0);
    let mut p = 0;
    let neg = at(0) == b'-' && size > 1;
    if neg {
        p = 1;
    }
    if !at(p).is_ascii_digit() {
        return Err(Errno::EINVAL);
    }
    // _parse_integer_fixup_radix with base 0.
    let base = if at(p) == b'0' {
        if at(p + 1) | 0x20 == b'x' && at(p + 2).is_ascii_hexdigit() {
            p += 2;
            16
        } else {
            8
        }
    } else {
        10
    };
    // _parse_integer: every digit counts; overflow is remembered and makes
    // strtoul_lenient fail (-ERANGE, which proc_get_long turns to EINVAL).
    let mut value: u64 = 0;
    let mut overflow = false;
    while let Some(d) = digit(at(p), base) {
        match value
            .checked_mul(u64::from(base))
            .and_then(|v| v.checked_add(d))
        {
            Some(v) => value = v,
            None => overflow = true,
        }
        p += 1;
    }
    if overflow || p == TMPBUFLEN - 1 {
        return Err(Errno::EINVAL);
    }
    if p < size && !matches!(at(p), b' ' | b'\t' | b'\n') {
        return Err(Errno::EINVAL);
    }
    Ok((value, neg, p))
}

/// `do_proc_dointvec_conv`: the magnitude and sign as an `int`.
fn to_int(value: u64, neg: bool) -> Result<i32, Errno> {
    if neg {
        if value > i32::MAX as u64 + 1 {
            return Err(Errno::EINVAL);
        }
        Ok((value as i64).wrapping_neg() as i32)
    } else {
        i32::try_from(value).map_err(|_| Errno::EINVAL)
    }
}

/// A write at file position 0 to a file holding one `int`: the value and
/// how many bytes of `buf` the write reports as written.
pub fn proc_dointvec_write(buf: &[u8]) -> Result<(i32, usize), Errno> {
    let count = buf.len();
    let mut left = count.min(WRITE_MAX);
    let mut p = 0;
    let skip = |p: &mut usize, left: &mut usize| {
        while *left > 0 && is_space(buf[*p]) {
            *p += 1;
            *left -= 1;
        }
    };
    skip(&mut p, &mut left);
    if left == 0 {
        return Err(Errno::EINVAL);
    }
    let (value, neg, used) = proc_get_long(&buf[p..p + left])?;
    let v = to_int(value, neg)?;
    p += used;
    left -= used;
    skip(&mut p, &mut left);
    Ok((v, count - left))
}

/// What a read of the file shows (`proc_dointvec`: `%d` and a newline).
pub fn proc_dointvec_show(v: i32) -> alloc::string::String {
    alloc::format!("{v}\n")
}

/// One open `/proc/sys` file's writes: the first, at position 0, is parsed;
/// once the position moved, writes are accepted and ignored
/// (`proc_first_pos_non_zero_ignore`, `sysctl_writes_strict` = 1).
#[derive(Debug, Default)]
pub struct SysctlWrite {
    pos: u64,
}

/// What to do with one `write()`.
#[derive(Debug, PartialEq, Eq)]
pub enum SysctlAction {
    /// Store this value; the write reports `used` bytes.
    Store { value: i32, used: usize },
    /// Nothing to store; the write reports this many bytes.
    Ignore(usize),
}

impl SysctlWrite {
    pub const fn new() -> SysctlWrite {
        SysctlWrite { pos: 0 }
    }

    /// Parses one `write()` of `buf`. On error the position stays.
    pub fn write(&mut self, buf: &[u8]) -> Result<SysctlAction, Errno> {
        if buf.is_empty() {
            return Ok(SysctlAction::Ignore(0));
        }
        if self.pos != 0 {
            self.pos += buf.len() as u64;
            return Ok(SysctlAction::Ignore(buf.len()));
        }
        let (value, used) = proc_dointvec_write(buf)?;
        Ok(SysctlAction::Store { value, used })
    }

    /// The store the last [`write`](Self::write) asked for succeeded.
    pub fn advance(&mut self, used: usize) {
        self.pos += used as u64;
    }
}
