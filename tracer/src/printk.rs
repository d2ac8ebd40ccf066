//! The text buffer of `trace_printk` (Linux: kernel/trace/trace.c,
//! `get_trace_buf` and the `vscnprintf(tbuffer, TRACE_BUF_SIZE, ..)` of
//! `__trace_array_vprintk`).
//!
//! Linux formats a `trace_printk` message into a per-CPU buffer of
//! `TRACE_BUF_SIZE` bytes first, then reserves an event of exactly the
//! formatted length and copies the text in. A longer message is cut:
//! `vscnprintf` keeps at most `TRACE_BUF_SIZE - 1` bytes and a NUL. The
//! kernel does the same with a [`TraceBuf`] on its stack (no allocation,
//! so `trace_printk` works where the heap is being traced or locked).

use core::fmt;

/// Linux's `TRACE_BUF_SIZE`: the formatted message, NUL included, is at
/// most this long.
pub const TRACE_BUF_SIZE: usize = 1024;

/// A fixed buffer that `core::fmt` writes into, keeping the first
/// `TRACE_BUF_SIZE - 1` bytes and dropping the rest, as `vscnprintf` does
/// (the cut may fall inside a multi-byte character; the printer shows such
/// a byte as U+FFFD).
pub struct TraceBuf {
    buf: [u8; TRACE_BUF_SIZE - 1],
    len: usize,
}

impl Default for TraceBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceBuf {
    pub const fn new() -> TraceBuf {
        TraceBuf {
            buf: [0; TRACE_BUF_SIZE - 1],
            len: 0,
        }
    }

    /// The text kept so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Formats `args` into a new buffer.
    pub fn format(args: fmt::Arguments) -> TraceBuf {
        let mut b = TraceBuf::new();
        // `write_str` never fails, so neither does this (a Display impl
        // that returns an error just ends the text early).
        let _ = fmt::write(&mut b, args);
        b
    }
}

impl fmt::Write for TraceBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.buf.len() - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_the_arguments() {
        let x = 42;
        let b = TraceBuf::format(format_args!("x={} name={:>4}\n", x, "ab"));
        assert_eq!(b.as_bytes(), b"x=42 name=  ab\n");
        assert_eq!(TraceBuf::format(format_args!("")).as_bytes(), b"");
    }

    #[test]
    fn keeps_trace_buf_size_minus_one_bytes() {
        let long = "a".repeat(3000);
        let b = TraceBuf::format(format_args!("{long}"));
        assert_eq!(b.as_bytes().len(), TRACE_BUF_SIZE - 1);
        // Across several writes: the last one that fits is cut, the rest
        // dropped.
        let part = "0123456789".repeat(100);
        let b = TraceBuf::format(format_args!("{part}|{part}|end"));
        assert_eq!(b.as_bytes().len(), TRACE_BUF_SIZE - 1);
        assert_eq!(&b.as_bytes()[..1000], part.as_bytes());
        assert_eq!(b.as_bytes()[1000], b'|');
        assert_eq!(&b.as_bytes()[1001..], &part.as_bytes()[..22]);
        // Exactly full.
        let exact = "b".repeat(TRACE_BUF_SIZE - 1);
        assert_eq!(
            TraceBuf::format(format_args!("{exact}")).as_bytes(),
            exact.as_bytes()
        );
    }

    #[test]
    fn cuts_bytes_not_characters() {
        // 1022 ASCII bytes, then a 2-byte character: only its first byte fits.
        let s = format!("{}é", "c".repeat(TRACE_BUF_SIZE - 2));
        let b = TraceBuf::format(format_args!("{s}"));
        assert_eq!(b.as_bytes().len(), TRACE_BUF_SIZE - 1);
        assert_eq!(b.as_bytes()[TRACE_BUF_SIZE - 2], "é".as_bytes()[0]);
    }
}
