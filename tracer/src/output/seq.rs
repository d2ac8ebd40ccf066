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
}
