//! QEMU tests of live code patching under load: the SMP stress
//! test and the forced int3 path, both run by kernel self-tests
//! (kernel/src/trace/selftest.rs) whose report this file checks.
//!
//! `KTRACE_STRESS_SECONDS=300 cargo test --release -p tests --test stress`
//! runs the stress longer than the CI default.

use std::time::Duration;

use tests::Kernel;

/// The number after `key ` in `text` (e.g. `num(s, "violations")`).
fn num(text: &str, key: &str) -> u64 {
    let pat = format!("{key} ");
    let i = text
        .find(&pat)
        .unwrap_or_else(|| panic!("no {key:?} in:\n{text}"));
    let rest = &text[i + pat.len()..];
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after {key:?} in:\n{text}"))
}

/// The number just before ` key` in `text` (e.g. `num_before(s, "updates")`).
fn num_before(text: &str, key: &str) -> u64 {
    let i = text
        .find(&format!(" {key}"))
        .unwrap_or_else(|| panic!("no {key:?} in:\n{text}"));
    let digits: String = text[..i]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits
        .chars()
        .rev()
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number before {key:?} in:\n{text}"))
}

/// The line of `text` that starts with `prefix`.
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{text}"))
}

/// `(calls, seen)` of one class ("stable-enabled", "stable-disabled",
/// "transition") in a stress report line.
fn class(l: &str, name: &str) -> (u64, u64) {
    let calls = num(l, name);
    let after = &l[l.find(&format!("{name} ")).unwrap()..];
    (calls, num(after, "(seen"))
}

#[test]
fn smp_stress_every_enabled_call_seen_exactly_once() {
    let seconds: u64 = std::env::var("KTRACE_STRESS_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let mut k = Kernel::boot(&["--smp", "4"]);
    let before = k.run("ftrace_check");
    assert!(
        before.contains(" sites, 0 bad, 0 call ftrace_caller, "),
        "{before}"
    );

    // At least MIN_UPDATES updates however slow the host: the bounds below
    // count events, not a rate, so a loaded machine takes longer but the
    // test means the same thing.
    const MIN_UPDATES: u64 = 300;
    let out = k.run_with_timeout(
        &format!("ftrace_stress {seconds} {MIN_UPDATES}"),
        Duration::from_secs(600 + 4 * seconds),
    );
    eprintln!("{out}");
    assert!(out.contains("ftrace_stress: PASS"), "{out}");
    let head = line(&out, "ftrace_stress: 4 cpus, ");
    let updates = num_before(head, "updates");
    assert!(updates >= MIN_UPDATES, "only {updates} updates:\n{out}");
    // Six steps in ten flip the target alone: about 90 enables and 90
    // disables in 300 updates; 30 of each is far below any real outcome.
    assert!(
        num_before(head, "target enables") >= 30,
        "too few target enables:\n{out}"
    );
    assert!(
        num_before(head, "disables") >= 30,
        "too few target disables:\n{out}"
    );

    // Every CPU's worker ran and saw all three kinds of phase.
    for cpu in 0..4 {
        let l = line(&out, &format!("ftrace_stress: cpu{cpu}: "));
        let (on, on_seen) = class(l, "stable-enabled");
        let (off, off_seen) = class(l, "stable-disabled");
        let (tr, tr_seen) = class(l, "transition");
        assert!(on > 0 && off > 0, "cpu{cpu} missed a phase: {l}");
        assert_eq!(
            on, on_seen,
            "cpu{cpu}: a call made while enabled was lost or doubled: {l}"
        );
        assert_eq!(
            off_seen, 0,
            "cpu{cpu}: a call made while disabled was traced: {l}"
        );
        assert!(
            tr_seen <= tr,
            "cpu{cpu}: more hits than calls in transitions: {l}"
        );
    }
    let total = line(&out, "ftrace_stress: calls ");
    let (on, on_seen) = class(total, "stable-enabled");
    assert_eq!(on, on_seen, "{total}");
    let tail = line(&out, "ftrace_stress: int3 hits ");
    assert!(
        num(tail, "int3 hits") > 0,
        "no CPU ever ran into an in-flight site: {tail}"
    );
    assert_eq!(num(tail, "violations"), 0, "{tail}");
    assert_eq!(num(tail, "wrong results"), 0, "{tail}");
    assert_eq!(num(tail, "update errors"), 0, "{tail}");
    assert!(num(tail, "noise ops calls") > 0, "{tail}");
    let check = line(&out, "ftrace_check: ");
    assert!(
        check.contains(", 0 bad, 0 call ftrace_caller, "),
        "sites left patched or torn: {check}"
    );

    // Everything is back to rest, and the kernel still works and traces.
    assert_eq!(k.run("cat /tracing/enabled_functions"), "");
    k.run("echo function > /tracing/current_tracer");
    let check = k.run("ftrace_check");
    assert!(check.contains(" 0 bad, "), "{check}");
    k.run("echo nop > /tracing/current_tracer");
    let after = k.run("ftrace_check");
    assert!(after.contains(", 0 bad, 0 call ftrace_caller, "), "{after}");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}

fn forced_int3(mode: &str) {
    let mut k = Kernel::boot_mode(mode, &["--smp", "4"]);
    let out = k.run("ftrace_int3_test");
    eprintln!("{out}");
    let on = line(&out, "ftrace_int3_test: enable (nop -> call): ");
    let off = line(&out, "ftrace_int3_test: disable (call -> nop): ");
    for l in [on, off] {
        // The patcher really was between step 1 and step 2 (the site held
        // int3), the helper trapped on it, and the function returned the
        // right value.
        assert!(l.contains("site byte 0xcc during the patch"), "{l}");
        assert!(num(l, "int3 hits") >= 1, "{l}");
        assert!(l.contains("result correct"), "{l}");
        assert!(l.ends_with(": ok"), "{l}");
    }
    // Enabling: the emulated call reached the tracer; disabling: skipped.
    assert!(on.contains("traced 1 time(s) (want 1)"), "{on}");
    assert!(off.contains("traced 0 time(s) (want 0)"), "{off}");
    assert!(out.contains("ftrace_int3_test: PASS"), "{out}");
    let check = k.run("ftrace_check");
    assert!(check.contains(", 0 bad, 0 call ftrace_caller, "), "{check}");
    // The machine is fine afterwards: a workload still computes correctly.
    let w = k.run("work compute 2");
    assert!(
        w.starts_with("work compute: 4 cpus x 2 iterations, result "),
        "{w}"
    );
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}

#[test]
fn int3_hit_in_the_middle_of_a_patch_mcount() {
    forced_int3("mcount");
}

#[test]
fn int3_hit_in_the_middle_of_a_patch_fentry() {
    forced_int3("fentry");
}
