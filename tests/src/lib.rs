//! The QEMU test harness: boots the kernel with `qemu.sh`, types commands on
//! its serial console and reads what it prints.
//!
//! Every wait is bounded: a test fails with the whole console log when the
//! expected text does not appear in time. Nothing sleeps for a fixed time.
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// How long a boot may take under TCG on a loaded 2-core machine.
pub const BOOT_TIMEOUT: Duration = Duration::from_secs(180);
/// Default bound for one shell command.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Builds the kernel for `mode` ("mcount" or "fentry") once per test process
/// (serialised across processes with flock) and returns the ELF's path.
pub fn kernel_elf(mode: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<Vec<(String, PathBuf)>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(Vec::new()));
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = built.iter().find(|(m, _)| m == mode) {
        return p.clone();
    }
    let root = root();
    std::fs::create_dir_all(root.join("target")).unwrap();
    let out = Command::new("flock")
        .arg(root.join("target/build.lock"))
        .arg(root.join("boot/build.sh"))
        .env("KTRACE_MODE", mode)
        .stderr(Stdio::inherit())
        .output()
        .expect("cannot run boot/build.sh");
    assert!(out.status.success(), "boot/build.sh failed for mode {mode}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let path = PathBuf::from(
        stdout
            .lines()
            .last()
            .expect("build.sh printed nothing")
            .trim(),
    );
    built.push((mode.to_string(), path.clone()));
    path
}

struct Shared {
    bytes: Mutex<(Vec<u8>, bool)>,
    cond: Condvar,
}

/// A running kernel under QEMU.
pub struct Kernel {
    child: Child,
    stdin: Option<ChildStdin>,
    shared: Arc<Shared>,
    /// Output before this offset has been consumed by earlier expectations.
    cursor: usize,
}

impl Kernel {
    /// Boots the mcount-instrumented kernel with extra qemu.sh arguments
    /// (e.g. `["--smp", "4"]`) and waits for the first prompt.
    pub fn boot(args: &[&str]) -> Kernel {
        Self::boot_mode("mcount", args)
    }

    /// Boots the kernel built in `mode` ("mcount" or "fentry").
    pub fn boot_mode(mode: &str, args: &[&str]) -> Kernel {
        let elf = kernel_elf(mode);
        // Its own process group, so that Drop can stop QEMU too (qemu.sh
        // runs QEMU as a child and would otherwise leave it orphaned).
        let mut child = Command::new(root().join("qemu.sh"))
            .process_group(0)
            .args(args)
            .env("KTRACE_KERNEL", &elf)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("cannot start qemu.sh");
        let mut stdout = child.stdout.take().unwrap();
        let shared = Arc::new(Shared {
            bytes: Mutex::new((Vec::new(), false)),
            cond: Condvar::new(),
        });
        let reader = shared.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                let n = stdout.read(&mut buf).unwrap_or(0);
                let mut g = reader.bytes.lock().unwrap();
                if n == 0 {
                    g.1 = true;
                    reader.cond.notify_all();
                    return;
                }
                g.0.extend(buf[..n].iter().filter(|&&b| b != b'\r'));
                reader.cond.notify_all();
            }
        });
        let stdin = child.stdin.take();
        let mut k = Kernel {
            child,
            stdin,
            shared,
            cursor: 0,
        };
        k.wait_prompt(BOOT_TIMEOUT);
        k
    }

    /// Everything the kernel printed so far.
    pub fn log(&self) -> String {
        String::from_utf8_lossy(&self.shared.bytes.lock().unwrap().0).into_owned()
    }

    /// Sends raw bytes to the console.
    pub fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin closed");
        stdin.write_all(bytes).expect("write to QEMU failed");
        stdin.flush().unwrap();
    }

    /// Waits until `pred` finds a match in the unread output; returns the
    /// end offset of the match. Panics with the log after `timeout`.
    fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&[u8]) -> Option<usize>,
    ) -> usize {
        let deadline = Instant::now() + timeout;
        let mut g = self.shared.bytes.lock().unwrap();
        loop {
            if let Some(end) = pred(&g.0[self.cursor..]) {
                return self.cursor + end;
            }
            let now = Instant::now();
            if g.1 || now >= deadline {
                let log = String::from_utf8_lossy(&g.0).into_owned();
                drop(g);
                panic!(
                    "timed out ({}) waiting for {what:?}\n----- console log -----\n{log}\n-----",
                    if g_closed(&self.shared) {
                        "QEMU exited"
                    } else {
                        "deadline"
                    }
                );
            }
            g = self.shared.cond.wait_timeout(g, deadline - now).unwrap().0;
        }
    }

    /// Waits for `text` in the output and returns everything up to and
    /// including it.
    pub fn expect(&mut self, text: &str, timeout: Duration) -> String {
        let needle = text.as_bytes().to_vec();
        let end = self.wait_for(text, timeout, |hay| {
            find(hay, &needle).map(|i| i + needle.len())
        });
        let out = self.slice(self.cursor, end);
        self.cursor = end;
        out
    }

    fn slice(&self, a: usize, b: usize) -> String {
        String::from_utf8_lossy(&self.shared.bytes.lock().unwrap().0[a..b]).into_owned()
    }

    /// Waits for a shell prompt (`CWD # ` at the end of the output).
    pub fn wait_prompt(&mut self, timeout: Duration) -> String {
        let end = self.wait_for("shell prompt", timeout, prompt_end);
        let out = self.slice(self.cursor, end);
        self.cursor = end;
        out
    }

    /// Runs one command line and returns its output (without the echoed
    /// command and the next prompt).
    pub fn run(&mut self, cmd: &str) -> String {
        self.run_with_timeout(cmd, COMMAND_TIMEOUT)
    }

    /// As [`Kernel::run`], with an explicit bound.
    pub fn run_with_timeout(&mut self, cmd: &str, timeout: Duration) -> String {
        self.send(format!("{cmd}\n").as_bytes());
        let echo = format!("{cmd}\n");
        self.expect(&echo, timeout);
        let out = self.wait_prompt(timeout);
        // Drop the prompt itself (the last line).
        match out.rfind('\n') {
            Some(i) => out[..=i].to_string(),
            None => String::new(),
        }
    }

    /// Sends a command that ends the kernel and returns qemu.sh's exit status.
    pub fn wait_exit(mut self, timeout: Duration) -> i32 {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "QEMU did not exit in {timeout:?}\n----- console log -----\n{}",
                    self.log()
                );
            }
            // Wake up when the console closes, or re-check in 50 ms.
            let g = self.shared.bytes.lock().unwrap();
            if !g.1 {
                let _ = self
                    .shared
                    .cond
                    .wait_timeout(g, Duration::from_millis(50))
                    .unwrap();
            } else {
                drop(g);
                let _ = self.child.wait();
            }
        }
    }
}

fn g_closed(s: &Shared) -> bool {
    s.bytes.try_lock().map(|g| g.1).unwrap_or(false)
}

impl Drop for Kernel {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // Kill the whole group: qemu.sh and the QEMU it started.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.child.id())])
                .status();
        }
        let _ = self.child.kill();
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
fn prompt_end(hay: &[u8]) -> Option<usize> {
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
}
