//! The bytes a read of `trace` or `trace_pipe` produces (Linux's
//! `struct trace_seq`, include/linux/trace_seq.h): text written with
//! `write!` and `push_str`, and with the `bin` option raw bytes too, which
//! is why it is not a `String`.

use alloc::vec::Vec;
use core::fmt;

/// A growing buffer of output bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceSeq {
    buf: Vec<u8>,
}

impl TraceSeq {
    #[inline]
    pub fn new() -> Self {
        TraceSeq { buf: Vec::new() }
    }

    #[inline]
    pub fn with_capacity(n: usize) -> Self {
        TraceSeq {
            buf: Vec::with_capacity(n),
        }
    }

    /// `trace_seq_puts()`.
    #[inline]
    pub fn push_str(&mut self, s: &str) {
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// `trace_seq_putc()`.
    #[inline]
    pub fn push(&mut self, c: char) {
        if c.is_ascii() {
            self.buf.push(c as u8);
        } else {
            let mut b = [0u8; 4];
            self.push_str(c.encode_utf8(&mut b));
        }
    }

    /// `trace_seq_putmem()`: raw bytes.
    #[inline]
    pub fn putmem(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// `n` copies of `b` (the padding of a `%16s`).
    #[inline]
    pub fn push_fill(&mut self, b: u8, n: usize) {
        let len = self.buf.len();
        self.buf.resize(len + n, b);
    }

    /// `s` right-aligned in `width` columns: `%16s`, as `{:>16}` pads (by
    /// characters, not bytes; no truncation).
    #[inline]
    pub fn push_str_right(&mut self, s: &str, width: usize) {
        let chars = if s.is_ascii() {
            s.len()
        } else {
            s.chars().count()
        };
        if chars < width {
            self.push_fill(b' ', width - chars);
        }
        self.push_str(s);
    }

    /// `v` in decimal, right-aligned in `width` columns, padded with
    /// `pad` (`b' '`: `%5lu`, `{:5}`; `b'0'`: `%06lu`, `{:06}`).
    #[inline]
    pub fn push_u64(&mut self, v: u64, width: usize, pad: u8) {
        let mut d = [0u8; 20];
        let at = decimal(v, &mut d);
        let n = d.len() - at;
        if n < width {
            self.push_fill(pad, width - n);
        }
        self.buf.extend_from_slice(&d[at..]);
    }

    /// `v` in decimal, left-aligned in `width` columns, padded with spaces
    /// after (`%-7d`, `{:<7}`).
    #[inline]
    pub fn push_i64_left(&mut self, v: i64, width: usize) {
        let mut d = [0u8; 20];
        let at = decimal(v.unsigned_abs(), &mut d);
        let mut n = d.len() - at;
        if v < 0 {
            self.buf.push(b'-');
            n += 1;
        }
        self.buf.extend_from_slice(&d[at..]);
        if n < width {
            self.push_fill(b' ', width - n);
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    #[inline]
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// The output as text, or None if it holds bytes that are not UTF-8
    /// (`bin` output).
    #[inline]
    pub fn as_str(&self) -> Option<&str> {
        core::str::from_utf8(&self.buf).ok()
    }
}

/// Writes the decimal digits of `v` at the end of `out` and returns the
/// index of the first one, two digits per division.
#[inline]
fn decimal(mut v: u64, out: &mut [u8; 20]) -> usize {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";
    let mut at = out.len();
    while v >= 100 {
        let p = (v % 100) as usize * 2;
        v /= 100;
        at -= 2;
        out[at] = PAIRS[p];
        out[at + 1] = PAIRS[p + 1];
    }
    if v >= 10 {
        let p = v as usize * 2;
        at -= 2;
        out[at] = PAIRS[p];
        out[at + 1] = PAIRS[p + 1];
    } else {
        at -= 1;
        out[at] = b'0' + v as u8;
    }
    at
}

impl fmt::Write for TraceSeq {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s);
        Ok(())
    }
    #[inline]
    fn write_char(&mut self, c: char) -> fmt::Result {
        self.push(c);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    #[test]
    fn text_and_bytes() {
        let mut s = TraceSeq::new();
        let _ = write!(s, "{:>4}|", 7);
        s.push('é');
        s.push_str("x");
        assert_eq!(s.as_str(), Some("   7|éx"));
        s.putmem(&[0xff, 0]);
        assert_eq!(s.as_str(), None);
        assert_eq!(s.len(), 10);
        assert_eq!(&s.into_bytes()[8..], &[0xff, 0]);
    }

    #[test]
    fn numbers_and_padding_match_core_fmt() {
        let vals: [u64; 12] = [
            0,
            1,
            9,
            10,
            99,
            100,
            999_999,
            1_000_000,
            12_345_678_901,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ];
        for &v in &vals {
            for w in [0, 3, 5, 6, 12, 25] {
                let mut a = TraceSeq::new();
                a.push_u64(v, w, b' ');
                a.push('|');
                a.push_u64(v, w, b'0');
                let mut b = TraceSeq::new();
                let _ = write!(b, "{:w$}|{:0w$}", v, v, w = w);
                assert_eq!(a, b, "{} {}", v, w);
            }
        }
        let ints: [i64; 9] = [0, 1, -1, 7, -42, 1234567, -1234567, i64::MIN, i64::MAX];
        for &v in &ints {
            for w in [0, 7, 12, 25] {
                let mut a = TraceSeq::new();
                a.push_i64_left(v, w);
                let mut b = TraceSeq::new();
                let _ = write!(b, "{:<w$}", v, w = w);
                assert_eq!(a, b, "{} {}", v, w);
            }
        }
        for s in [
            "",
            "<idle>",
            "ktrace",
            "0123456789abcdef",
            "0123456789abcdefXY",
            "héllo",
            "日本",
        ] {
            for w in [0, 8, 16] {
                let mut a = TraceSeq::new();
                a.push_str_right(s, w);
                let mut b = TraceSeq::new();
                let _ = write!(b, "{:>w$}", s, w = w);
                assert_eq!(a, b, "{:?} {}", s, w);
            }
        }
    }
}
