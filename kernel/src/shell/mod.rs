//! The serial-console shell: a small busybox-like `sh` with the commands a
//! student needs to drive ftrace through tracefs (`ls`, `cat`, `echo >`,
//! pipes into `head`/`tail`/`grep`/`wc`) and workloads to trace (`work`).
//!
//! The shell reads one line at a time from the console, echoing every byte
//! it reads (so a script piped into QEMU shows up in the output as if typed)
//! and handling backspace. A line is parsed into a pipeline
//! ([`parse`]), whose stages are connected with in-kernel pipes ([`pipe`]).
//! Ctrl-C interrupts the running command: commands poll
//! [`crate::sched::signal_pending`] and blocking reads return EINTR.

mod commands;
mod latency;
pub mod parse;
pub mod pipe;
mod printk;
mod ringbuf;
mod rt;
mod work;

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use crate::fs::{self, vfs, Errno, OpenFlags};
use pipe::{Console, FileSink, Sink};

/// Longest command line. A longer line is read to its end and refused with
/// an error, never cut.
pub const MAX_LINE: usize = 64 * 1024;

/// Runs the shell (called on the boot CPU's shell task). Never returns:
/// `poweroff` and `exit` stop the machine.
pub fn run() {
    fs::init();
    crate::trace::control::init();
    let mut editor = LineEditor::default();
    loop {
        print!("{} # ", vfs::getcwd());
        let line = editor.read_line();
        match line {
            Ok(line) => execute_line(&line),
            Err(len) => println!(
                "sh: line too long: {} bytes (at most {}), not run",
                len, MAX_LINE
            ),
        }
        // The command's Ctrl-C is handled (execute_line printed `^C`): its
        // byte, still queued for the line editor, is then just dropped.
        crate::sched::clear_signal();
    }
}

/// Reads lines from the console with echo and backspace editing.
#[derive(Default)]
struct LineEditor {
    /// The previous line ended with CR: a LF right after it is the second
    /// half of a CRLF, not an empty line.
    after_cr: bool,
}

impl LineEditor {
    /// The next line, or Err(its length) if it is longer than [`MAX_LINE`]:
    /// the bytes past the limit are read (not echoed) to the end of the line
    /// and the whole line is refused.
    fn read_line(&mut self) -> Result<String, usize> {
        let mut line: Vec<u8> = Vec::new();
        let mut too_long = 0;
        loop {
            let b = crate::console::read_byte();
            let after_cr = core::mem::replace(&mut self.after_cr, false);
            match b {
                b'\n' if after_cr => {}
                b'\r' | b'\n' => {
                    self.after_cr = b == b'\r';
                    // A Ctrl-C from before this line is spent; one typed
                    // once the newline is echoed reaches the command, even
                    // if it comes before the command starts to run.
                    crate::sched::clear_signal();
                    crate::console::write_bytes(b"\n");
                    if too_long > 0 {
                        return Err(line.len() + too_long);
                    }
                    return Ok(String::from_utf8_lossy(&line).into_owned());
                }
                0x08 | 0x7f if too_long > 0 => too_long -= 1,
                0x08 | 0x7f if !line.is_empty() => {
                    // Remove a whole UTF-8 character.
                    while let Some(c) = line.pop() {
                        if c & 0xc0 != 0x80 {
                            break;
                        }
                    }
                    crate::console::write_bytes(b"\x08 \x08");
                }
                // Ctrl-C at the prompt discards the line. If a command
                // already handled this Ctrl-C, the byte is just dropped.
                0x03 if crate::sched::signal_pending() => {
                    crate::sched::clear_signal();
                    crate::console::write_bytes(b"^C\n");
                    return Ok(String::new());
                }
                0x1b => skip_escape_sequence(),
                // A tab is taken as a space; other control bytes are ignored.
                b'\t' | 0x20..=0x7e | 0x80..=0xff if line.len() < MAX_LINE => {
                    let b = if b == b'\t' { b' ' } else { b };
                    line.push(b);
                    crate::console::write_bytes(&[b]);
                }
                b'\t' | 0x20..=0x7e | 0x80..=0xff => too_long += 1,
                _ => {}
            }
        }
    }
}

/// Skips the rest of an escape sequence (arrow keys send `ESC [ A`): the
/// line editor has no history or cursor movement.
fn skip_escape_sequence() {
    if crate::console::read_byte() == b'[' {
        while !(0x40..=0x7e).contains(&crate::console::read_byte()) {}
    }
}

/// Parses and runs one command line, between the `shell_command_entry`
/// and `shell_command_exit` events.
pub fn execute_line(line: &str) {
    crate::events::shell::trace_shell_command_entry(line);
    let ret = execute_stages(line);
    crate::events::shell::trace_shell_command_exit(ret);
}

/// Runs a command line: 0, or the negative errno of the error that ended
/// it, as the shell printed it (a redirection that cannot be opened, a
/// write error; -EINVAL for a line that does not parse).
fn execute_stages(line: &str) -> i32 {
    let stages = match parse::parse_line(line) {
        Ok(stages) => stages,
        Err(msg) => {
            println!("sh: {}", msg);
            return -Errno::EINVAL.code();
        }
    };
    if stages.is_empty() {
        return 0;
    }
    let ret = run_pipeline(stages);
    if crate::sched::signal_pending() {
        println!("^C");
    }
    ret
}

/// Flags for `> FILE` and `>> FILE`.
fn redirect_flags(append: bool) -> OpenFlags {
    let mode = if append {
        OpenFlags::O_APPEND
    } else {
        OpenFlags::O_TRUNC
    };
    OpenFlags::O_WRONLY | OpenFlags::O_CREAT | mode
}

fn run_pipeline(mut stages: Vec<parse::Stage>) -> i32 {
    for stage in &stages[..stages.len() - 1] {
        if stage.redirect.is_some() {
            println!("sh: only the last command of a pipeline can be redirected");
            return -Errno::EINVAL.code();
        }
    }
    let last = stages.len() - 1;
    let mut sink: Box<dyn Sink> = match &stages[last].redirect {
        None => Box::new(Console),
        Some((path, append)) => match vfs::open(path, redirect_flags(*append)) {
            Ok(file) => Box::new(FileSink(file)),
            Err(e) => {
                println!("sh: can't create {}: {}", path, e);
                return -e.code();
            }
        },
    };
    if stages[0].argv.is_empty() {
        // `> file` alone: the open above did it; the close may fail.
        if let Err(e) = sink.finish() {
            println!("sh: write error: {}", e);
            return -e.code();
        }
        return 0;
    }
    // Wrap the sink in the filters of stages 1.., from the last one back.
    while stages.len() > 1 {
        let stage = stages.pop().unwrap_or_default();
        match commands::make_filter(&stage.argv, sink) {
            Ok(filter) => sink = filter,
            Err(msg) => {
                println!("{}", msg);
                return -Errno::EINVAL.code();
            }
        }
    }
    let first = stages.pop().unwrap_or_default();
    let mut out = Output {
        sink,
        stopped: false,
        error: None,
    };
    commands::run_command(&first.argv, &mut out);
    out.finish(&first.argv[0]);
    out.error.map_or(0, |e| -e.code())
}

/// A command's standard output: the head of the pipeline.
pub struct Output {
    sink: Box<dyn Sink>,
    /// Set when the reader is gone or a write failed: stop producing.
    stopped: bool,
    /// The write error the shell reported, if any.
    error: Option<Errno>,
}

impl Output {
    /// Writes `data`; returns false if the command should stop (reader gone,
    /// write error already reported, or Ctrl-C).
    pub fn emit(&mut self, cmd: &str, data: &[u8]) -> bool {
        if self.stopped {
            return false;
        }
        match self.sink.write(data) {
            Ok(()) => !crate::sched::signal_pending(),
            Err(e) => {
                self.stopped = true;
                self.report_write_error(cmd, e);
                false
            }
        }
    }

    pub fn emit_str(&mut self, cmd: &str, s: &str) -> bool {
        self.emit(cmd, s.as_bytes())
    }

    fn finish(&mut self, cmd: &str) {
        if let Err(e) = self.sink.finish() {
            self.report_write_error(cmd, e);
        }
    }

    fn report_write_error(&mut self, cmd: &str, e: Errno) {
        match e {
            Errno::EPIPE => {} // the reader is gone (head got its lines)
            _ if cmd == "echo" => println!("sh: write error: {}", e),
            _ => println!("{}: write error: {}", cmd, e),
        }
        if e != Errno::EPIPE && self.error.is_none() {
            self.error = Some(e);
        }
    }
}
