//! Pipes without processes: every stage after the first is a *filter* that
//! receives the previous stage's output as calls to [`Sink::write`] and
//! passes its own output on to the next sink. The last sink is the console
//! or a file (`> FILE`). When a filter needs no more input (`head` has its
//! lines) it answers EPIPE, and the producer stops quietly, which is what
//! SIGPIPE does to `cat trace_pipe | head -n 3` on Linux.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::fs::{Errno, File};

/// Where a command writes its output.
pub trait Sink: Send {
    /// Consumes `data`. EPIPE: the reader is gone, stop quietly. Any
    /// other error is a write error the command reports.
    fn write(&mut self, data: &[u8]) -> Result<(), Errno>;
    /// End of input: filters that print at the end (tail, wc, grep -c) do it
    /// here and pass `finish` on.
    fn finish(&mut self) -> Result<(), Errno> {
        Ok(())
    }
}

/// The serial console.
pub struct Console;

impl Sink for Console {
    fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        crate::console::write_bytes(data);
        Ok(())
    }
}

/// A file opened by `> FILE` or `>> FILE`. Each write of the producer is
/// one write to the file, so `echo nop > current_tracer` is a single write
/// of `"nop\n"` as on Linux. `finish` closes it: an error of the close (a
/// filter file that cannot be installed) is reported like a write error.
pub struct FileSink(pub File);

impl Sink for FileSink {
    fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        self.0.write_all(data)
    }
    fn finish(&mut self) -> Result<(), Errno> {
        self.0.close()
    }
}

/// Splits a byte stream into lines (without the `\n`) and hands complete
/// lines to `f`; a last line without `\n` is delivered by `flush`.
#[derive(Default)]
pub struct LineSplitter {
    partial: Vec<u8>,
}

impl LineSplitter {
    pub fn feed(
        &mut self,
        mut data: &[u8],
        mut f: impl FnMut(&[u8]) -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        while let Some(pos) = data.iter().position(|&b| b == b'\n') {
            if self.partial.is_empty() {
                f(&data[..pos])?;
            } else {
                self.partial.extend_from_slice(&data[..pos]);
                let line = core::mem::take(&mut self.partial);
                f(&line)?;
            }
            data = &data[pos + 1..];
        }
        self.partial.extend_from_slice(data);
        Ok(())
    }

    pub fn flush(&mut self, mut f: impl FnMut(&[u8]) -> Result<(), Errno>) -> Result<(), Errno> {
        if self.partial.is_empty() {
            return Ok(());
        }
        let line = core::mem::take(&mut self.partial);
        f(&line)
    }
}

fn with_newline(line: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(line.len() + 1);
    v.extend_from_slice(line);
    v.push(b'\n');
    v
}

/// `cat` in a pipe: passes everything on.
pub struct CatFilter(pub Box<dyn Sink>);

impl Sink for CatFilter {
    fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        self.0.write(data)
    }
    fn finish(&mut self) -> Result<(), Errno> {
        self.0.finish()
    }
}

/// `head -n N`: the first N lines, then EPIPE.
pub struct Head {
    pub left: usize,
    pub lines: LineSplitter,
    pub next: Box<dyn Sink>,
}

impl Sink for Head {
    fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        if self.left == 0 {
            return Err(Errno::EPIPE);
        }
        let (left, next) = (&mut self.left, &mut self.next);
        self.lines.feed(data, |line| {
            if *left == 0 {
                return Err(Errno::EPIPE);
            }
            *left -= 1;
            next.write(&with_newline(line))
        })?;
        if self.left == 0 {
            return Err(Errno::EPIPE);
        }
        Ok(())
    }
    fn finish(&mut self) -> Result<(), Errno> {
        if self.left > 0 {
            let next = &mut self.next;
            self.lines.flush(|line| next.write(line))?;
        }
        self.next.finish()
    }
}

/// `tail -n N`: keeps the last N lines and prints them at the end.
pub struct Tail {
    pub n: usize,
    pub kept: VecDeque<Vec<u8>>,
    /// True if the last line had no `\n` (printed without one, like tail).
    pub last_unterminated: bool,
    pub lines: LineSplitter,
    pub next: Box<dyn Sink>,
}

impl Tail {
    fn keep(n: usize, kept: &mut VecDeque<Vec<u8>>, line: &[u8]) {
        if n == 0 {
            return;
        }
        if kept.len() == n {
            kept.pop_front();
        }
        kept.push_back(line.to_vec());
    }
}

impl Sink for Tail {
    fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        let (n, kept) = (self.n, &mut self.kept);
        self.lines.feed(data, |line| {
            Tail::keep(n, kept, line);
            Ok(())
        })
    }
    fn finish(&mut self) -> Result<(), Errno> {
        let (n, kept, unterminated) = (self.n, &mut self.kept, &mut self.last_unterminated);
        self.lines.flush(|line| {
            Tail::keep(n, kept, line);
            *unterminated = true;
            Ok(())
        })?;
        let count = self.kept.len();
        for (i, line) in self.kept.iter().enumerate() {
            if i + 1 == count && self.last_unterminated {
                self.next.write(line)?;
            } else {
                self.next.write(&with_newline(line))?;
            }
        }
        self.next.finish()
    }
}

/// `grep [-v] [-c] PATTERN`: a fixed string, optionally anchored with a
/// leading `^` and/or a trailing `$`.
pub struct Grep {
    pub pattern: Pattern,
    pub invert: bool,
    pub count_only: bool,
    pub count: usize,
    pub lines: LineSplitter,
    pub next: Box<dyn Sink>,
}

/// A grep pattern: a fixed string with optional `^`/`$` anchors.
pub struct Pattern {
    text: Vec<u8>,
    start: bool,
    end: bool,
}

impl Pattern {
    pub fn new(p: &str) -> Pattern {
        let mut s = p.as_bytes();
        let start = s.first() == Some(&b'^');
        if start {
            s = &s[1..];
        }
        let end = s.last() == Some(&b'$');
        if end {
            s = &s[..s.len() - 1];
        }
        Pattern {
            text: s.to_vec(),
            start,
            end,
        }
    }

    pub fn matches(&self, line: &[u8]) -> bool {
        let t = &self.text[..];
        match (self.start, self.end) {
            (true, true) => line == t,
            (true, false) => line.starts_with(t),
            (false, true) => line.ends_with(t),
            (false, false) => t.is_empty() || line.windows(t.len()).any(|w| w == t),
        }
    }
}

impl Grep {
    fn line(&mut self, line: &[u8]) -> Result<(), Errno> {
        if self.pattern.matches(line) != self.invert {
            self.count += 1;
            if !self.count_only {
                self.next.write(&with_newline(line))?;
            }
        }
        Ok(())
    }
}

impl Sink for Grep {
    fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        let mut lines = core::mem::take(&mut self.lines);
        let r = lines.feed(data, |line| self.line(line));
        self.lines = lines;
        r
    }
    fn finish(&mut self) -> Result<(), Errno> {
        let mut lines = core::mem::take(&mut self.lines);
        lines.flush(|line| self.line(line))?;
        if self.count_only {
            self.next.write(format!("{}\n", self.count).as_bytes())?;
        }
        self.next.finish()
    }
}

/// `wc [-l|-w|-c]`: counts lines (`\n` bytes), words and bytes.
pub struct Wc {
    pub show_lines: bool,
    pub show_words: bool,
    pub show_bytes: bool,
    pub lines: usize,
    pub words: usize,
    pub bytes: usize,
    pub in_word: bool,
    /// Printed after the counts (the file name, when counting a file).
    pub label: Option<String>,
    pub next: Box<dyn Sink>,
}

impl Wc {
    pub fn new(show_lines: bool, show_words: bool, show_bytes: bool, next: Box<dyn Sink>) -> Wc {
        Wc {
            show_lines,
            show_words,
            show_bytes,
            lines: 0,
            words: 0,
            bytes: 0,
            in_word: false,
            label: None,
            next,
        }
    }
}

impl Sink for Wc {
    fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        self.bytes += data.len();
        for &b in data {
            if b == b'\n' {
                self.lines += 1;
            }
            let space = b.is_ascii_whitespace();
            if !space && !self.in_word {
                self.words += 1;
            }
            self.in_word = !space;
        }
        Ok(())
    }
    fn finish(&mut self) -> Result<(), Errno> {
        let mut cols: Vec<String> = Vec::new();
        if self.show_lines {
            cols.push(format!("{}", self.lines));
        }
        if self.show_words {
            cols.push(format!("{}", self.words));
        }
        if self.show_bytes {
            cols.push(format!("{}", self.bytes));
        }
        let mut out = if cols.len() == 1 {
            cols.pop().unwrap_or_default()
        } else {
            cols.iter()
                .map(|c| format!("{c:>7}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        if let Some(label) = &self.label {
            out.push(' ');
            out.push_str(label);
        }
        out.push('\n');
        self.next.write(out.as_bytes())?;
        self.next.finish()
    }
}
