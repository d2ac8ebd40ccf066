//! The QEMU test harness: boots the kernel with `qemu.sh`, types commands on
//! its serial console and reads what it prints.
//!
//! Every wait is bounded: a test fails with the whole console log when the
//! expected text does not appear in time. Nothing sleeps for a fixed time.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use build_tools::session::{Options, Session};

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
    kernel_elf_scale(mode, None)
}

/// [`kernel_elf`] with `scale` generated functions (`qemu.sh --scale N`)
/// when given.
pub fn kernel_elf_scale(mode: &str, scale: Option<u32>) -> PathBuf {
    static BUILT: OnceLock<Mutex<Vec<(String, PathBuf)>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(Vec::new()));
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    let key = match scale {
        Some(n) => format!("{mode}-scale{n}"),
        None => mode.to_string(),
    };
    if let Some((_, p)) = built.iter().find(|(m, _)| *m == key) {
        return p.clone();
    }
    let root = root();
    std::fs::create_dir_all(root.join("target")).unwrap();
    let mut cmd = Command::new("flock");
    cmd.arg(root.join("target/build.lock"))
        .arg(root.join("boot/build.sh"))
        .env("KTRACE_MODE", mode)
        .env_remove("KTRACE_SCALE");
    if let Some(n) = scale {
        cmd.env("KTRACE_SCALE", n.to_string());
    }
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .expect("cannot run boot/build.sh");
    assert!(out.status.success(), "boot/build.sh failed for {key}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let path = PathBuf::from(
        stdout
            .lines()
            .last()
            .expect("build.sh printed nothing")
            .trim(),
    );
    built.push((key, path.clone()));
    path
}

/// A running kernel under QEMU: the console session `ktrace` uses too
/// ([`build_tools::session`]), with every failure a panic that shows the
/// whole console log.
pub struct Kernel {
    session: Session,
}

/// The value of a session call, or a panic with its error (which carries
/// the console log).
fn ok<T>(r: build_tools::Result<T>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

/// `args` with `ftrace_dump_on_oops` added to the kernel command line: to
/// the `--cmdline` value if there is one, else as a new `--cmdline` before
/// the `--` that starts QEMU's own arguments.
fn with_dump_on_oops(args: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let ours = out.iter().position(|a| a == "--").unwrap_or(out.len());
    match out[..ours].iter().position(|a| a == "--cmdline") {
        Some(i) if i + 1 < ours => {
            out[i + 1] = format!("{} ftrace_dump_on_oops", out[i + 1]);
        }
        _ => {
            out.splice(
                ours..ours,
                ["--cmdline".to_string(), "ftrace_dump_on_oops".to_string()],
            );
        }
    }
    out
}

impl Kernel {
    /// Boots the mcount-instrumented kernel with extra qemu.sh arguments
    /// (e.g. `["--smp", "4"]`) and waits for the first prompt.
    pub fn boot(args: &[&str]) -> Kernel {
        Self::boot_mode("mcount", args)
    }

    /// Boots the kernel built in `mode` ("mcount" or "fentry"). The
    /// command line always has `ftrace_dump_on_oops`, so a kernel that
    /// dies in a test prints its trace buffer (the last functions it ran,
    /// when a tracer was on) into the log that the failure shows.
    pub fn boot_mode(mode: &str, args: &[&str]) -> Kernel {
        Self::boot_elf(&kernel_elf(mode), args)
    }

    /// Boots an ELF that [`kernel_elf`] or [`kernel_elf_scale`] built.
    pub fn boot_elf(elf: &Path, args: &[&str]) -> Kernel {
        let mut cmd = Command::new(root().join("qemu.sh"));
        cmd.args(with_dump_on_oops(args)).env("KTRACE_KERNEL", elf);
        // Its own process group, so that Drop stops QEMU too (qemu.sh runs
        // QEMU as a child and would otherwise leave it orphaned).
        let opts = Options {
            own_process_group: true,
            echo: false,
            log_in_errors: usize::MAX,
        };
        let mut k = Kernel {
            session: ok(Session::start(cmd, opts)),
        };
        k.wait_prompt(BOOT_TIMEOUT);
        k
    }

    /// Everything the kernel printed so far.
    pub fn log(&self) -> String {
        self.session.log()
    }

    /// Sends raw bytes to the console.
    pub fn send(&mut self, bytes: &[u8]) {
        ok(self.session.send(bytes))
    }

    /// Waits for `text` in the output and returns everything up to and
    /// including it.
    pub fn expect(&mut self, text: &str, timeout: Duration) -> String {
        ok(self.session.expect(text, timeout))
    }

    /// Checks that the kernel prints nothing for `period` (a command that
    /// must block); fails at the first byte it prints.
    pub fn expect_silence(&mut self, period: Duration) {
        ok(self.session.expect_silence(period))
    }

    /// Waits for a shell prompt (`CWD # ` at the end of the output).
    pub fn wait_prompt(&mut self, timeout: Duration) -> String {
        ok(self.session.wait_prompt(timeout))
    }

    /// Runs one command line and returns its output (without the echoed
    /// command and the next prompt).
    pub fn run(&mut self, cmd: &str) -> String {
        self.run_with_timeout(cmd, COMMAND_TIMEOUT)
    }

    /// As [`Kernel::run`], with an explicit bound.
    pub fn run_with_timeout(&mut self, cmd: &str, timeout: Duration) -> String {
        ok(self.session.run(cmd, timeout))
    }

    /// Waits for the kernel to end (after a command that ends it) and
    /// returns qemu.sh's exit status.
    pub fn wait_exit(mut self, timeout: Duration) -> i32 {
        ok(self.session.wait_exit(timeout))
    }
}

/// Builds the ktrace binary (release, in the repository's target dir,
/// serialised with the kernel builds) and returns its path.
pub fn ktrace_bin() -> PathBuf {
    let root = root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new("flock")
        .arg(root.join("target/build.lock"))
        .arg(cargo)
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "build-tools",
            "--bin",
            "ktrace",
            "--target-dir",
        ])
        .arg(root.join("target"))
        .current_dir(&root)
        .status()
        .expect("cannot run cargo");
    assert!(status.success(), "building ktrace failed");
    root.join("target/release/ktrace")
}

#[cfg(test)]
mod dump_on_oops_tests {
    use super::with_dump_on_oops;

    #[test]
    fn the_option_joins_the_kernel_command_line() {
        assert_eq!(
            with_dump_on_oops(&["--smp", "2"]),
            ["--smp", "2", "--cmdline", "ftrace_dump_on_oops"]
        );
        assert_eq!(
            with_dump_on_oops(&["--cmdline", "stacktrace", "--smp", "2"]),
            ["--cmdline", "stacktrace ftrace_dump_on_oops", "--smp", "2"]
        );
        // QEMU's own arguments after `--` are left alone.
        assert_eq!(
            with_dump_on_oops(&["--smp", "2", "--", "-serial", "file:x"]),
            [
                "--smp",
                "2",
                "--cmdline",
                "ftrace_dump_on_oops",
                "--",
                "-serial",
                "file:x"
            ]
        );
        assert_eq!(
            with_dump_on_oops(&["--", "--cmdline", "x"]),
            ["--cmdline", "ftrace_dump_on_oops", "--", "--cmdline", "x"]
        );
    }
}
