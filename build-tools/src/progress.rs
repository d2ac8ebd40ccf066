//! `ktrace record`/`extract`'s progress display: while the kernel's
//! `trace-export` sends the pages over COM2 (which QEMU writes to a file),
//! a thread reads the file as it grows, counts the PAGE frames of each
//! CPU ([`PageCounter`]) and shows one `indicatif` bar per CPU. Only on a
//! terminal: with stderr redirected, [`Progress::start`] does nothing.
//!
//! The counter only reads frames: a damaged stream stops the count, and
//! the decoder that builds the trace.dat reports the error.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::tracedat::frame::{read_frame, FrameError, FrameType};

/// Counts the pages of each CPU in a COM2 stream fed piece by piece.
#[derive(Debug, Default)]
pub struct PageCounter {
    buf: Vec<u8>,
    offset: usize,
    /// Pages received per CPU of the current transfer (from its START).
    pub pages: Vec<u64>,
    /// The current transfer's END arrived.
    pub ended: bool,
    /// The stream is damaged: counting stopped.
    pub broken: bool,
}

impl PageCounter {
    /// Adds the next bytes of the stream; returns whether a count changed.
    pub fn feed(&mut self, bytes: &[u8]) -> bool {
        self.buf.extend_from_slice(bytes);
        let mut changed = false;
        while !self.broken && self.offset < self.buf.len() {
            match read_frame(&self.buf, self.offset) {
                Ok((frame, next)) => {
                    match frame.ty {
                        FrameType::Start => {
                            let cpus = frame
                                .payload
                                .get(4..8)
                                .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                            self.pages = vec![0; cpus.min(4096) as usize];
                            self.ended = false;
                        }
                        FrameType::Page => {
                            if let Some(n) = self.pages.get_mut(frame.aux as usize) {
                                *n += 1;
                            }
                        }
                        FrameType::End => self.ended = true,
                        FrameType::File => {}
                    }
                    changed = true;
                    self.offset = next;
                }
                Err(FrameError::Truncated { .. }) => break,
                Err(_) => self.broken = true,
            }
        }
        // Keep only the unread part.
        if self.offset > 0 {
            self.buf.drain(..self.offset);
            self.offset = 0;
        }
        changed
    }
}

/// The progress thread of one recording.
pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts watching `com2` if stderr is a terminal.
    pub fn start(com2: &Path) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::io::stderr().is_terminal().then(|| {
            let stop = stop.clone();
            let path = com2.to_path_buf();
            std::thread::spawn(move || watch(&path, &stop))
        });
        Progress { stop, thread }
    }

    /// Stops the display.
    pub fn finish(mut self) {
        self.stop_thread();
    }

    fn stop_thread(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// The display loop: reads what QEMU appended to the file every 100 ms
/// (it is a display: polling is what `tail -f` does too).
fn watch(path: &PathBuf, stop: &AtomicBool) {
    let multi = MultiProgress::new();
    let style = ProgressStyle::with_template("{prefix:>6} {spinner} {pos} pages received")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    let mut bars: Vec<ProgressBar> = Vec::new();
    let mut counter = PageCounter::default();
    let mut file = None;
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        // Read once more after the stop: QEMU has exited by then and the
        // file is whole.
        let stopping = stop.load(Ordering::Relaxed);
        if file.is_none() {
            file = std::fs::File::open(path).ok();
        }
        let mut changed = false;
        if let Some(f) = file.as_mut() {
            while let Ok(n) = f.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                changed |= counter.feed(&chunk[..n]);
            }
        }
        if changed {
            if bars.len() != counter.pages.len() {
                for b in bars.drain(..) {
                    b.finish_and_clear();
                }
                for cpu in 0..counter.pages.len() {
                    let b = multi.add(ProgressBar::new_spinner());
                    b.set_style(style.clone());
                    b.set_prefix(format!("cpu{cpu}"));
                    bars.push(b);
                }
            }
            for (b, n) in bars.iter().zip(&counter.pages) {
                b.set_position(*n);
                b.tick();
            }
            if counter.ended || counter.broken {
                for b in &bars {
                    b.finish();
                }
            }
        }
        if stopping {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for b in &bars {
        if !b.is_finished() {
            b.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tracedat::frame::{encode_frame, Transfer};

    #[test]
    fn counts_pages_per_cpu_from_pieces() {
        let t = Transfer {
            nr_cpus: 2,
            page_size: 64,
            long_size: 8,
            uname: "x".into(),
            files: Default::default(),
            pages: vec![vec![vec![1; 64]; 3], vec![vec![2; 64]; 1]],
        };
        let stream = t.encode();
        let mut c = PageCounter::default();
        // Byte by byte for the first frames, then in big pieces.
        for b in &stream[..40] {
            c.feed(std::slice::from_ref(b));
        }
        assert_eq!(c.pages, vec![0, 0]);
        for piece in stream[40..].chunks(50) {
            c.feed(piece);
        }
        assert_eq!(
            (c.pages.clone(), c.ended, c.broken),
            (vec![3, 1], true, false)
        );
        // Garbage stops the count.
        let mut c = PageCounter::default();
        c.feed(&encode_frame(FrameType::Start, 0, 0, &[0u8; 16]));
        c.feed(b"garbage-garbage-garbage");
        assert!(c.broken);
    }
}
