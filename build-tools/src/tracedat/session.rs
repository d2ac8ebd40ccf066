//! Drives the kernel's serial shell under QEMU for `ktrace`: boots
//! `qemu.sh` with COM2 connected to a capture file, types command lines,
//! waits for the prompt after each one, and collects what the console
//! printed. Every wait is bounded and fails with the console log.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// How long a boot may take (the first run also builds the kernel).
pub const BOOT_TIMEOUT: Duration = Duration::from_secs(900);

struct Shared {
    /// Console bytes (without CR) and whether the console closed.
    bytes: Mutex<(Vec<u8>, bool)>,
    cond: Condvar,
}

/// A kernel running under QEMU.
pub struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    shared: Arc<Shared>,
    cursor: usize,
    /// Echo the console to our stderr as it arrives (`-v`).
    pub verbose: bool,
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
    /// Starts `qemu.sh --smp SMP -- -serial file:COM2` (plus `qemu_args`)
    /// and waits for the first prompt.
    pub fn boot(smp: u32, com2: &Path, qemu_args: &[String], verbose: bool) -> Result<Session> {
        let qemu_sh = repo_root().join("qemu.sh");
        if !qemu_sh.is_file() {
            return Err(Error::new(format!(
                "{} not found (run ktrace from the repository or set KTRACE_ROOT)",
                qemu_sh.display()
            )));
        }
        let mut cmd = Command::new(&qemu_sh);
        cmd.arg("--smp")
            .arg(smp.to_string())
            .arg("--")
            .arg("-serial")
            .arg(format!("file:{}", com2.display()));
        cmd.args(qemu_args);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| Error::new(format!("cannot start {}: {e}", qemu_sh.display())))?;
        let mut stdout = child.stdout.take().expect("piped");
        let shared = Arc::new(Shared {
            bytes: Mutex::new((Vec::new(), false)),
            cond: Condvar::new(),
        });
        let reader = shared.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                let n = stdout.read(&mut buf).unwrap_or(0);
                let mut g = reader.bytes.lock().unwrap_or_else(|e| e.into_inner());
                if n == 0 {
                    g.1 = true;
                    reader.cond.notify_all();
                    return;
                }
                if verbose {
                    let _ = std::io::stderr().write_all(&buf[..n]);
                }
                g.0.extend(buf[..n].iter().filter(|&&b| b != b'\r'));
                reader.cond.notify_all();
            }
        });
        let stdin = child.stdin.take();
        let mut s = Session {
            child,
            stdin,
            shared,
            cursor: 0,
            verbose,
        };
        s.wait_prompt(BOOT_TIMEOUT)
            .map_err(|e| e.context("booting the kernel"))?;
        Ok(s)
    }

    /// Everything the console printed.
    pub fn log(&self) -> String {
        String::from_utf8_lossy(
            &self
                .shared
                .bytes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .0,
        )
        .into_owned()
    }

    fn send(&mut self, bytes: &[u8]) -> Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| Error::new("console closed"))?;
        stdin
            .write_all(bytes)
            .and_then(|_| stdin.flush())
            .map_err(|e| Error::new(format!("writing to QEMU: {e}")))
    }

    fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&[u8]) -> Option<usize>,
    ) -> Result<String> {
        let deadline = Instant::now() + timeout;
        let mut g = self.shared.bytes.lock().unwrap_or_else(|e| e.into_inner());
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
                let tail: String = String::from_utf8_lossy(&g.0)
                    .chars()
                    .rev()
                    .take(3000)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                return Err(Error::new(format!(
                    "{why} waiting for {what}; console ends with:\n{tail}"
                )));
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
    /// echoed line and the next prompt).
    pub fn run(&mut self, line: &str, timeout: Duration) -> Result<String> {
        if line.contains('\n') || line.contains('\r') {
            return Err(Error::new(format!("command {line:?} spans several lines")));
        }
        self.send(format!("{line}\n").as_bytes())?;
        let echo = format!("{line}\n").into_bytes();
        self.wait_for(&format!("the echo of {line:?}"), timeout, |hay| {
            hay.windows(echo.len())
                .position(|w| w == echo.as_slice())
                .map(|i| i + echo.len())
        })?;
        let out = self.wait_prompt(timeout)?;
        Ok(match out.rfind('\n') {
            Some(i) => out[..=i].to_string(),
            None => String::new(),
        })
    }

    /// Types `poweroff` and waits for qemu.sh to exit; returns its status.
    pub fn poweroff(mut self, timeout: Duration) -> Result<i32> {
        self.send(b"poweroff\n")?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self
                .child
                .try_wait()
                .map_err(|e| Error::new(e.to_string()))?
            {
                return Ok(status.code().unwrap_or(-1));
            }
            if Instant::now() >= deadline {
                return Err(Error::new("QEMU did not exit after poweroff"));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
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
