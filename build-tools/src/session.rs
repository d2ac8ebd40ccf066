//! The kernel's serial console under QEMU, driven as a person at a terminal
//! would: start `qemu.sh`, type command lines, wait for the prompt after each
//! one, read what the console printed. `ktrace` drives its recordings with it
//! and the QEMU tests (`tests/src/lib.rs`) their checks.
//!
//! A reader thread collects the console bytes (without the CR of the serial
//! line ends); every wait is bounded and wakes as soon as new bytes arrive or
//! QEMU exits. A wait that fails returns an error that says what was awaited
//! and shows the console log, never a hang and never a fixed sleep.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// How a session is started (see [`Session::start`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Run qemu.sh in a process group of its own, so that dropping the
    /// session kills the QEMU it started too (qemu.sh runs QEMU as a child,
    /// which killing qemu.sh alone would leave running). The tests want this;
    /// an interactive command wants the terminal's group instead, so that
    /// Ctrl-C stops QEMU with it.
    pub own_process_group: bool,
    /// Copy the console to our stderr as it arrives (`ktrace -v`).
    pub echo: bool,
    /// How much of the console log, in characters from its end, an error
    /// shows (`usize::MAX`: all of it).
    pub log_in_errors: usize,
}

struct Shared {
    /// Console bytes (without CR) and whether the console closed.
    bytes: Mutex<(Vec<u8>, bool)>,
    cond: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, (Vec<u8>, bool)> {
        self.bytes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A kernel running under QEMU, with its console.
pub struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    shared: Arc<Shared>,
    /// Output before this offset was consumed by earlier waits.
    cursor: usize,
    opts: Options,
}

/// The repository root: `KTRACE_ROOT`, else the nearest ancestor of the
/// current directory that has `qemu.sh`, else this crate's parent.
pub fn repo_root() -> PathBuf {
    if let Some(r) = std::env::var_os("KTRACE_ROOT") {
        return PathBuf::from(r);
    }
    if let Ok(mut dir) = std::env::current_dir() {
        loop {
            if dir.join("qemu.sh").is_file() {
                return dir;
            }
            if !dir.pop() {
                break;
            }
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

impl Session {
    /// Starts `cmd` (qemu.sh and its arguments) with the console on its
    /// stdin and stdout; its stderr stays ours. Does not wait for anything:
    /// call [`Session::wait_prompt`] for the first prompt.
    pub fn start(mut cmd: Command, opts: Options) -> Result<Session> {
        if opts.own_process_group {
            cmd.process_group(0);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| Error::new(format!("cannot start {:?}: {e}", cmd.get_program())))?;
        let mut stdout = child.stdout.take().expect("piped");
        let shared = Arc::new(Shared {
            bytes: Mutex::new((Vec::new(), false)),
            cond: Condvar::new(),
        });
        let reader = shared.clone();
        let echo = opts.echo;
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                let n = stdout.read(&mut buf).unwrap_or(0);
                let mut g = reader.lock();
                if n == 0 {
                    g.1 = true;
                    reader.cond.notify_all();
                    return;
                }
                if echo {
                    let _ = std::io::stderr().write_all(&buf[..n]);
                }
                g.0.extend(buf[..n].iter().filter(|&&b| b != b'\r'));
                reader.cond.notify_all();
            }
        });
        let stdin = child.stdin.take();
        Ok(Session {
            child,
            stdin,
            shared,
            cursor: 0,
            opts,
        })
    }

    /// Everything the console printed so far.
    pub fn log(&self) -> String {
        String::from_utf8_lossy(&self.shared.lock().0).into_owned()
    }

    /// `what` went wrong, with the console log (as much as the options say).
    fn error(&self, what: String) -> Error {
        let log = self.log();
        let n = log.chars().count();
        let keep = self.opts.log_in_errors;
        let (title, shown) = if n <= keep {
            ("console log".to_string(), log.as_str())
        } else {
            let start = log.char_indices().nth(n - keep).map_or(0, |(i, _)| i);
            (
                format!("console log, last {keep} characters"),
                &log[start..],
            )
        };
        Error::new(format!("{what}\n----- {title} -----\n{shown}\n-----"))
    }

    /// Sends raw bytes to the console.
    pub fn send(&mut self, bytes: &[u8]) -> Result<()> {
        let sent = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(bytes).and_then(|_| stdin.flush()),
            None => return Err(self.error("the console is closed".into())),
        };
        sent.map_err(|e| self.error(format!("writing to QEMU: {e}")))
    }

    /// Waits until `pred` finds a match in the unread output, and returns
    /// the output up to the end of the match (which it consumes).
    fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&[u8]) -> Option<usize>,
    ) -> Result<String> {
        let deadline = Instant::now() + timeout;
        let mut g = self.shared.lock();
        loop {
            if let Some(end) = pred(&g.0[self.cursor..]) {
                let end = self.cursor + end;
                let out = String::from_utf8_lossy(&g.0[self.cursor..end]).into_owned();
                self.cursor = end;
                return Ok(out);
            }
            let now = Instant::now();
            if g.1 || now >= deadline {
                let why = if g.1 { "QEMU exited" } else { "timed out" };
                drop(g);
                return Err(self.error(format!("{why} waiting for {what} ({timeout:?})")));
            }
            g = self
                .shared
                .cond
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Waits for `text` in the output and returns everything up to and
    /// including it.
    pub fn expect(&mut self, text: &str, timeout: Duration) -> Result<String> {
        let needle = text.as_bytes();
        self.wait_for(&format!("{text:?}"), timeout, |hay| {
            find(hay, needle).map(|i| i + needle.len())
        })
    }

    /// Checks that the console prints nothing more for `period` (a command
    /// that must block: a read of an empty pipe). Fails as soon as a byte
    /// arrives, so only a kernel that behaves waits the whole period.
    pub fn expect_silence(&mut self, period: Duration) -> Result<()> {
        let deadline = Instant::now() + period;
        let mut g = self.shared.lock();
        loop {
            if g.0.len() > self.cursor {
                let extra = String::from_utf8_lossy(&g.0[self.cursor..]).into_owned();
                drop(g);
                return Err(self.error(format!("expected no output for {period:?}, got {extra:?}")));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(());
            }
            if g.1 {
                drop(g);
                return Err(self.error(format!("QEMU exited within {period:?}")));
            }
            g = self
                .shared
                .cond
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Waits for a shell prompt (`/PATH # ` at the end of the output).
    pub fn wait_prompt(&mut self, timeout: Duration) -> Result<String> {
        self.wait_for("the shell prompt", timeout, prompt_end)
    }

    /// Types one command line and returns what it printed (without the
    /// echoed line and the next prompt). Each of the two waits is bounded by
    /// `timeout`.
    pub fn run(&mut self, line: &str, timeout: Duration) -> Result<String> {
        if line.contains('\n') || line.contains('\r') {
            return Err(Error::new(format!("command {line:?} spans several lines")));
        }
        self.send(format!("{line}\n").as_bytes())?;
        self.expect(&format!("{line}\n"), timeout)?;
        let out = self.wait_prompt(timeout)?;
        // Drop the prompt itself (the last line).
        Ok(match out.rfind('\n') {
            Some(i) => out[..=i].to_string(),
            None => String::new(),
        })
    }

    /// Waits for qemu.sh to exit (after `poweroff`, `exit N` or a panic)
    /// and returns its status: the kernel's exit code.
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<i32> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok(status.code().unwrap_or(-1)),
                Ok(None) => {}
                Err(e) => return Err(self.error(format!("waiting for QEMU: {e}"))),
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.error(format!("QEMU did not exit in {timeout:?}")));
            }
            // Wake up when the console closes (QEMU is exiting), or re-check
            // at the latest after 50 ms.
            let g = self.shared.lock();
            if g.1 {
                drop(g);
                let _ = self.child.wait();
            } else {
                let wait = (deadline - now).min(Duration::from_millis(50));
                let _ = self.shared.cond.wait_timeout(g, wait);
            }
        }
    }

    /// Types `poweroff` and waits for qemu.sh to exit; returns its status.
    pub fn poweroff(mut self, timeout: Duration) -> Result<i32> {
        self.send(b"poweroff\n")?;
        self.wait_exit(timeout)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            if self.opts.own_process_group {
                // The whole group: qemu.sh and the QEMU it started.
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", self.child.id())])
                    .status();
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The end of the output if it ends with a prompt line: `/PATH # `.
pub fn prompt_end(hay: &[u8]) -> Option<usize> {
    if !hay.ends_with(b" # ") {
        return None;
    }
    let line_start = hay[..hay.len() - 3]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = &hay[line_start..hay.len() - 3];
    (line.first() == Some(&b'/') && !line.contains(&b' ')).then_some(hay.len())
}

/// Lines of a command's output that show the shell or a command failed
/// (`sh: ...`, `... write error: ...`, `can't ...`).
pub fn error_lines(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter(|l| {
            l.starts_with("sh: ")
                || l.contains("write error")
                || l.contains("can't ")
                || l.contains(": not found")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_detection() {
        assert_eq!(prompt_end(b"ktrace\n/ # "), Some(11));
        assert_eq!(prompt_end(b"x\n/tracing # "), Some(13));
        assert_eq!(prompt_end(b"# tracer: nop\n# "), None);
        assert_eq!(prompt_end(b"/ # ls\n"), None);
    }

    /// A "kernel" made of `sh`: the session types lines, waits for the
    /// prompt, bounds every wait, and reports the exit status.
    #[test]
    fn drives_a_console_with_bounded_waits() {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(
            "printf 'boot\\n/ # '; while read l; do echo \"$l\"; \
             case \"$l\" in exit) exit 7;; hang) ;; *) echo \"out:$l\"; printf '/ # ';; esac; done",
        );
        let opts = Options {
            own_process_group: true,
            echo: false,
            log_in_errors: 20,
        };
        let mut s = Session::start(cmd, opts).unwrap();
        assert_eq!(
            s.wait_prompt(Duration::from_secs(10)).unwrap(),
            "boot\n/ # "
        );
        assert_eq!(s.run("hi", Duration::from_secs(10)).unwrap(), "out:hi\n");
        s.send(b"quiet\n").unwrap();
        s.expect("out:quiet\n/ # ", Duration::from_secs(10))
            .unwrap();
        s.expect_silence(Duration::from_millis(100)).unwrap();
        s.send(b"x\n").unwrap();
        let e = s.expect_silence(Duration::from_secs(10)).unwrap_err();
        assert!(e.message().starts_with("expected no output"), "{e}");
        s.wait_prompt(Duration::from_secs(10)).unwrap();
        let e = s.run("hang", Duration::from_millis(200)).unwrap_err();
        let e = e.message();
        assert!(
            e.starts_with("timed out waiting for the shell prompt"),
            "{e}"
        );
        assert!(e.contains("last 20 characters"), "{e}");
        assert!(s.run("a\nb", Duration::from_secs(1)).is_err());
        s.send(b"exit\n").unwrap();
        assert_eq!(s.wait_exit(Duration::from_secs(10)).unwrap(), 7);
        let e = s.expect("never", Duration::from_secs(10)).unwrap_err();
        assert!(e.message().starts_with("QEMU exited waiting for \"never\""));
    }
}
