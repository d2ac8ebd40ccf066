//! The course labs (labs/): every lab's grader gives full marks on this
//! tree, and 0 on a starter tree made by `labs/make-starter`, where every
//! test fails because it reached the lab's stub (its `lab N:` message is
//! in the test's failure text), and the starter builds without warnings.
//!
//! Cost: the starters are two trees, one with the host labs 1 and 3 (no
//! kernel build: lab 1's kernel test only runs once its host tests pass)
//! and one with the QEMU labs 2, 4 and 5 (one kernel build for the three). They live under target/labs/ at a fixed path, and
//! their target/ directories are kept between runs and seeded from this
//! tree's on the first: only what the stubs change is compiled again.
//! Lab 3's loom checks use target/loom, as tests/run.sh does, so its later
//! loom step finds them built.
//!
//! One test, the labs in turn: the graders build and boot, and two cargo
//! builds or QEMU boots at once would only compete for the same cores.

use std::path::{Path, PathBuf};
use std::process::Command;

use tests::root;

/// What a grader printed: its test lines and its score.
struct Grade {
    output: String,
    score: (u32, u32),
}

fn grade(lab: u32, tree: &Path) -> Grade {
    let out = Command::new(root().join("labs/grade"))
        .arg(lab.to_string())
        .arg(tree)
        .output()
        .expect("cannot run labs/grade");
    let output =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let score = output
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("score: "))
        .and_then(|s| s.split_once('/'))
        .and_then(|(x, y)| Some((x.trim().parse().ok()?, y.trim().parse().ok()?)))
        .unwrap_or_else(|| {
            panic!(
                "labs/grade {lab} {} printed no score:\n{output}",
                tree.display()
            )
        });
    assert_eq!(
        out.status.success(),
        score.0 == score.1,
        "labs/grade {lab}: exit status {:?} does not match the score {score:?}:\n{output}",
        out.status
    );
    Grade { output, score }
}

/// The failure text of each test: (test line, the indented lines under it).
fn failures(output: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in output.lines() {
        if line.starts_with("== Test ") {
            out.push((line.to_string(), String::new()));
        } else if let (Some(last), true) = (out.last_mut(), line.starts_with("    ")) {
            last.1.push_str(line);
            last.1.push('\n');
        }
    }
    out
}

/// Makes (or remakes) the starter tree for `labs` at a fixed path under
/// target/labs/, keeping its target/ directory from the last run.
fn starter(labs: &str) -> PathBuf {
    let base = root().join("target/labs");
    let dir = base.join(format!("starter-{}", labs.replace(',', "")));
    let cache = base.join(format!("target-{}", labs.replace(',', "")));
    std::fs::create_dir_all(&base).unwrap();
    if dir.join("target").exists() {
        let _ = std::fs::remove_dir_all(&cache);
        std::fs::rename(dir.join("target"), &cache).unwrap();
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    let out = Command::new(root().join("labs/make-starter"))
        .arg(labs)
        .arg(&dir)
        .output()
        .expect("cannot run labs/make-starter");
    assert!(
        out.status.success(),
        "labs/make-starter {labs} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if cache.exists() {
        std::fs::rename(&cache, dir.join("target")).unwrap();
    } else {
        // First run: seed it with this tree's host and kernel builds.
        std::fs::create_dir_all(dir.join("target")).unwrap();
        for sub in ["release", "kernel-build", "loom"] {
            let from = root().join("target").join(sub);
            if from.exists() {
                let status = Command::new("cp")
                    .arg("-a")
                    .arg(&from)
                    .arg(dir.join("target"))
                    .status()
                    .unwrap();
                assert!(status.success(), "cp -a {} failed", from.display());
            }
        }
    }
    dir
}

fn check_reference(lab: u32) {
    let g = grade(lab, &root());
    assert!(
        g.score.1 > 0 && g.score.0 == g.score.1,
        "lab {lab}: the reference tree must get full marks, got {}/{}:\n{}",
        g.score.0,
        g.score.1,
        g.output
    );
}

fn check_starter(lab: u32, tree: &Path) {
    let g = grade(lab, tree);
    assert!(
        g.score.1 > 0 && g.score.0 == 0,
        "lab {lab}: the starter must score 0, got {}/{}:\n{}",
        g.score.0,
        g.score.1,
        g.output
    );
    let tests = failures(&g.output);
    assert!(tests.len() >= 4, "lab {lab}: too few tests:\n{}", g.output);
    let stub = format!("lab {lab}:");
    for (line, why) in &tests {
        assert!(line.ends_with(")") && line.contains(": FAIL ("), "{line}");
        assert!(
            why.contains(&stub),
            "lab {lab}: on the starter, '{line}' failed without reaching the stub ('{stub}' is not in its failure text):\n{why}"
        );
    }
}

/// The warnings of building `tree` with `cmd` (run in `tree`): a starter
/// builds clean, so a student's first warning is about their own code.
/// The graders built the tree just before, so this only replays cargo's
/// cached diagnostics.
fn build_warnings(tree: &Path, cmd: &str, args: &[&str]) -> Vec<String> {
    let out = Command::new(cmd)
        .args(args)
        .current_dir(tree)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{cmd} {args:?} in {} failed:\n{stderr}",
        tree.display()
    );
    stderr
        .lines()
        .filter(|l| l.starts_with("warning"))
        .map(str::to_string)
        .collect()
}

#[test]
fn labs_grade_full_on_reference_and_zero_on_starters() {
    for lab in 1..=5 {
        check_reference(lab);
    }
    // Labs 1 and 3 are host labs; 2, 4 and 5 boot a kernel, which needs
    // lab 1's recordmcount to build and lab 3's ring buffer to record.
    let host = starter("1,3");
    for lab in [1, 3] {
        check_starter(lab, &host);
    }
    let warnings = build_warnings(
        &host,
        "cargo",
        &["build", "--release", "-p", "build-tools", "-p", "tracer"],
    );
    assert!(
        warnings.is_empty(),
        "the starter of labs 1 and 3 builds with warnings:\n{}",
        warnings.join("\n")
    );
    let kernel = starter("2,4,5");
    for lab in [2, 4, 5] {
        check_starter(lab, &kernel);
    }
    let qemu = kernel.join("qemu.sh");
    let warnings = build_warnings(&kernel, qemu.to_str().unwrap(), &["--build-only"]);
    assert!(
        warnings.is_empty(),
        "the starter of labs 2, 4 and 5 builds with warnings:\n{}",
        warnings.join("\n")
    );
}
