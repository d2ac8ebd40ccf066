//! The install step of `tests/run.sh` (`tests/install-deps.sh`), run against
//! a `PATH` in which QEMU, trace-cmd, KernelShark's library (pkg-config
//! finds no libkshark), Chromium and cc are missing and `apt-get`, `sudo`
//! and `id` are shims that log how they were called. The shim `apt-get`
//! "installs" by creating the missing commands, so the script's check after
//! installing passes only when it asked for the right packages.
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Commands the script and the shims use, linked from the real system.
const REAL: &[&str] = &["bash", "env", "head", "true", "cat", "chmod"];

struct Sandbox {
    dir: PathBuf,
    bin: PathBuf,
    log: PathBuf,
}

fn write_script(path: &Path, body: &str) {
    fs::write(path, format!("#!/bin/bash\n{body}\n")).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn which(cmd: &str) -> PathBuf {
    let out = Command::new("bash")
        .args(["-c", &format!("type -P {cmd}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{cmd} not on this machine");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

impl Sandbox {
    /// `uid` is what the `id -u` shim answers; `sudo` is the body of the sudo
    /// shim (None: no sudo at all).
    fn new(name: &str, uid: u32, sudo: Option<&str>) -> Sandbox {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("install-{name}"));
        let _ = fs::remove_dir_all(&dir);
        let bin = dir.join("bin");
        fs::create_dir_all(&bin).unwrap();
        let log = dir.join("calls.log");
        for cmd in REAL {
            std::os::unix::fs::symlink(which(cmd), bin.join(cmd)).unwrap();
        }
        // binutils and flock are present; ld reports a version.
        write_script(
            &bin.join("ld"),
            "echo 'GNU ld (GNU Binutils for Debian) 2.40'",
        );
        write_script(&bin.join("objdump"), "true");
        write_script(&bin.join("flock"), "true");
        write_script(&bin.join("id"), &format!("echo {uid}"));
        let bin_s = bin.display();
        let log_s = log.display();
        // apt-get logs its arguments (and the DEBIAN_FRONTEND it saw) and,
        // for `install`, creates the commands of the packages it was given.
        write_script(
            &bin.join("apt-get"),
            &format!(
                r#"echo "apt-get $* [DEBIAN_FRONTEND=${{DEBIAN_FRONTEND:-}}]" >> {log_s}
if [ "$1" = install ]; then
  for p in "$@"; do
    case "$p" in
      qemu-system-x86) printf '#!/bin/bash\n' > {bin_s}/qemu-system-x86_64; chmod +x {bin_s}/qemu-system-x86_64 ;;
      trace-cmd) printf '#!/bin/bash\n' > {bin_s}/trace-cmd; chmod +x {bin_s}/trace-cmd ;;
      gcc) printf '#!/bin/bash\n' > {bin_s}/cc; chmod +x {bin_s}/cc ;;
      libkshark-dev) printf '#!/bin/bash\n' > {bin_s}/pkg-config; chmod +x {bin_s}/pkg-config ;;
      chromium) printf '#!/bin/bash\n' > {bin_s}/chromium; chmod +x {bin_s}/chromium ;;
    esac
  done
fi"#
            ),
        );
        if let Some(body) = sudo {
            write_script(
                &bin.join("sudo"),
                &format!("echo \"sudo $*\" >> {log_s}\n{body}"),
            );
        }
        Sandbox { dir, bin, log }
    }

    fn run(&self) -> Output {
        self.run_with(&[], &[])
    }

    /// Runs the script with `args` and, besides the sandbox's PATH, `env`.
    fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let script = tests::root().join("tests/install-deps.sh");
        Command::new(self.bin.join("bash"))
            .arg(script)
            .args(args)
            .env_clear()
            .env("PATH", &self.bin)
            .envs(env.iter().copied())
            .current_dir(&self.dir)
            .output()
            .unwrap()
    }

    fn calls(&self) -> Vec<String> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

const PKGS: &str = "qemu-system-x86 trace-cmd kernelshark libkshark-dev libjson-c-dev libtracecmd-dev libtraceevent-dev libtracefs-dev pkg-config chromium gcc libc6-dev";

#[test]
fn as_root_runs_apt_get_itself() {
    let sb = Sandbox::new("root", 0, Some("exit 1"));
    let out = sb.run();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        sb.calls(),
        vec![
            "apt-get update -qq [DEBIAN_FRONTEND=]".to_string(),
            format!("apt-get install -y -qq {PKGS} [DEBIAN_FRONTEND=noninteractive]"),
        ],
        "{err}"
    );
    // Everything is there now: a second run installs nothing.
    fs::remove_file(&sb.log).unwrap();
    assert!(sb.run().status.success());
    assert!(sb.calls().is_empty(), "{:?}", sb.calls());
}

#[test]
fn as_user_uses_sudo_n() {
    // A sudo that works without a password runs the command it is given.
    let sb = Sandbox::new(
        "user",
        1000,
        Some(r#"[ "$1" = -n ] || exit 1; shift; exec "$@""#),
    );
    let out = sb.run();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        sb.calls(),
        vec![
            "sudo -n true".to_string(),
            "sudo -n apt-get update -qq".to_string(),
            "apt-get update -qq [DEBIAN_FRONTEND=]".to_string(),
            format!("sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq {PKGS}"),
            format!("apt-get install -y -qq {PKGS} [DEBIAN_FRONTEND=noninteractive]"),
        ],
        "{err}"
    );
}

#[test]
fn as_user_without_usable_sudo_says_what_to_run() {
    for (name, sudo) in [("nosudo", None), ("password", Some("exit 1"))] {
        let sb = Sandbox::new(name, 1000, sudo);
        let out = sb.run();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains(&format!("    apt-get install -y {PKGS}\n")),
            "{name}: {err}"
        );
        // No apt-get ran; with a sudo that wants a password, only `sudo -n true`.
        let expected: Vec<String> = match sudo {
            Some(_) => vec!["sudo -n true".into()],
            None => vec![],
        };
        assert_eq!(sb.calls(), expected, "{name}");
    }
}

#[test]
fn old_binutils_is_refused_clearly() {
    let sb = Sandbox::new("oldld", 0, None);
    for cmd in [
        "qemu-system-x86_64",
        "trace-cmd",
        "pkg-config",
        "chromium",
        "cc",
    ] {
        write_script(&sb.bin.join(cmd), "true");
    }
    write_script(
        &sb.bin.join("ld"),
        "echo 'GNU ld (GNU Binutils for Debian) 2.35.2'",
    );
    let out = sb.run();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("ld is too old"), "{err}");
    assert!(err.contains("2.39 or newer"), "{err}");
    assert!(sb.calls().is_empty());
}

#[test]
fn honours_qemu_variable() {
    // QEMU names a binary that exists: nothing to install for QEMU.
    let sb = Sandbox::new("qemuvar", 0, None);
    write_script(&sb.bin.join("my-qemu"), "true");
    for cmd in ["trace-cmd", "pkg-config", "chromium", "cc"] {
        write_script(&sb.bin.join(cmd), "true");
    }
    let out = sb.run_with(&[], &[("QEMU", "my-qemu")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(sb.calls().is_empty(), "{:?}", sb.calls());
}

#[test]
fn boot_mode_leaves_out_trace_cmd() {
    // qemu.sh's `--boot`: what building and booting need, not trace-cmd or
    // KernelShark.
    let sb = Sandbox::new("boot", 0, None);
    let out = sb.run_with(&["--boot"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        sb.calls(),
        vec![
            "apt-get update -qq [DEBIAN_FRONTEND=]".to_string(),
            "apt-get install -y -qq qemu-system-x86 gcc libc6-dev [DEBIAN_FRONTEND=noninteractive]"
                .to_string(),
        ]
    );
    assert!(!sb.bin.join("trace-cmd").exists());
    assert!(!sb.bin.join("chromium").exists());
}
