//! The `ktrace` binary without QEMU: `extract -i` on good, corrupted and
//! cut-off COM2 captures, `report`, and usage errors.
mod tracedat_common;

use std::path::PathBuf;
use std::process::{Command, Output};

use build_tools::tracedat::dat::TraceDat;
use build_tools::tracedat::report::{report, ReportOptions};
use build_tools::tracedat::trace_dat_from_transfer;

fn ktrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ktrace"))
        .args(args)
        .output()
        .expect("run ktrace")
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("ktrace-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn extract_converts_a_capture() {
    let d = dir();
    let capture = d.join("good.bin");
    let out = d.join("good.dat");
    std::fs::write(&capture, tracedat_common::transfer().encode()).unwrap();
    let r = ktrace(&[
        "extract",
        "-i",
        capture.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let got = TraceDat::parse(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(
        got,
        trace_dat_from_transfer(&tracedat_common::transfer()).unwrap()
    );
    assert!(String::from_utf8_lossy(&r.stderr).contains("cpu1: "));
}

#[test]
fn damaged_captures_fail_without_writing_a_file() {
    let d = dir();
    let good = tracedat_common::transfer().encode();
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 1;
    let cut = good[..good.len() - 100].to_vec();
    for (name, bytes, why) in [
        ("flipped", flipped, "CRC mismatch"),
        ("cut", cut, "cut off"),
        ("empty", Vec::new(), "no data"),
    ] {
        let capture = d.join(format!("{name}.bin"));
        let out = d.join(format!("{name}.dat"));
        std::fs::write(&capture, bytes).unwrap();
        let r = ktrace(&[
            "extract",
            "-i",
            capture.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(why), "{name}: {err}");
        assert!(!out.exists(), "{name}: a file was written");
        assert!(!out.with_extension("dat.partial").exists());
    }
}

#[test]
fn report_prints_the_file() {
    let d = dir();
    let path = d.join("r.dat");
    let dat = trace_dat_from_transfer(&tracedat_common::transfer()).unwrap();
    std::fs::write(&path, dat.to_bytes().unwrap()).unwrap();
    let r = ktrace(&["report", "-i", path.to_str().unwrap()]);
    assert!(r.status.success());
    assert_eq!(
        String::from_utf8(r.stdout).unwrap(),
        report(&dat, &ReportOptions::default()).unwrap()
    );
    let r = ktrace(&[
        "report",
        "--cpu",
        "0",
        "-F",
        "funcgraph_exit",
        path.to_str().unwrap(),
    ]);
    let text = String::from_utf8(r.stdout).unwrap();
    assert!(
        text.lines()
            .skip(1)
            .all(|l| l.contains("[000]") && l.contains("funcgraph_exit:")),
        "{text}"
    );
    assert!(text.lines().count() > 3);
    // Not a trace.dat.
    let junk = d.join("junk.dat");
    std::fs::write(&junk, b"hello").unwrap();
    let r = ktrace(&["report", "-i", junk.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(1));
}

#[test]
fn usage_errors_exit_with_2() {
    assert_eq!(ktrace(&[]).status.code(), Some(2));
    assert_eq!(
        ktrace(&["record", "--", "ls"]).status.code(),
        Some(2),
        "record needs -p or -e"
    );
    assert_eq!(ktrace(&["record", "-p"]).status.code(), Some(2));
    assert_eq!(ktrace(&["report", "--bogus"]).status.code(), Some(2));
    assert_eq!(
        ktrace(&["extract", "-i", "x", "--", "ls"]).status.code(),
        Some(2)
    );
}
