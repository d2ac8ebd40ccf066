//! `qemu.sh --scale 35000`: the kernel with 35,000 generated traceable
//! functions (kernel/scale), so that it has Linux's number of call sites.
//! Checks that the generated functions are call sites the function tracer
//! can select by a glob and that `work scale` runs them, then compares the
//! per-site rows of `bench` under `--icount` with the default kernel's: at
//! 35,000 sites each must stay within [`MAX_RATIO`] of its figure at the
//! default size (no step grows faster than the number of sites).
//!
//! Slow (a second kernel build with 35,000 more functions: several minutes
//! on a 2-core machine), so it is not in the default run:
//! `cargo test --release -p tests --test scale -- --ignored --nocapture`
//! (it prints the build and boot times and both sets of figures).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tests::{kernel_elf, kernel_elf_scale, Kernel};

/// Generated functions.
const SCALE: u32 = 35_000;

/// The rows that grow with the number of sites, per site (or, for
/// `kallsyms_lookup`, per look-up in the larger table).
const PER_SITE: [&str; 7] = [
    "boot_nop_per_site",
    "enable_all_per_site",
    "disable_all_per_site",
    "filter_glob_per_site",
    "available_filter_functions_per_site",
    "kallsyms_lookup",
    "record_names_per_site",
];

/// How much dearer a row may be at 35,000 sites than at the default size.
const MAX_RATIO: f64 = 1.2;

/// `bench: NAME VALUE instructions` lines, and the `bench: sites N sites`
/// count.
fn parse(out: &str) -> (BTreeMap<String, u64>, u64) {
    let mut rows = BTreeMap::new();
    let mut sites = 0;
    for line in out.lines().filter(|l| l.starts_with("bench: ")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert!(f.len() == 4, "bad bench line: {line}\n{out}");
        let v: u64 = f[2]
            .parse()
            .unwrap_or_else(|_| panic!("bad figure: {line}\n{out}"));
        match f[3] {
            "sites" if f[1] == "sites" => sites = v,
            "instructions" => {
                rows.insert(f[1].to_string(), v);
            }
            _ => panic!("not an instruction count (is --icount detected?): {line}\n{out}"),
        }
    }
    (rows, sites)
}

/// Boots `elf` under `--icount`, runs `bench` and powers off; returns the
/// figures, the site count and the time to the first prompt.
fn bench(
    elf: &std::path::Path,
    before: impl FnOnce(&mut Kernel),
) -> (BTreeMap<String, u64>, u64, Duration) {
    let t = Instant::now();
    let mut k = Kernel::boot_elf(elf, &["--icount", "--smp", "4"]);
    let boot = t.elapsed();
    before(&mut k);
    let out = k.run_with_timeout("bench", Duration::from_secs(900));
    let (rows, sites) = parse(&out);
    for name in PER_SITE {
        assert!(rows.contains_key(name), "no figure for {name}\n{out}");
    }
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
    (rows, sites, boot)
}

/// The generated functions run, are call sites, and a glob selects them.
fn generated_functions_are_traced(k: &mut Kernel) {
    let out = k.run_with_timeout("work scale 2", Duration::from_secs(300));
    assert!(
        out.contains(&format!("work scale: {SCALE} functions x 2 rounds"))
            && out.contains(", 0 errors"),
        "{out}"
    );
    let aff = k.run_with_timeout(
        "grep -c ::scale_fn_ /tracing/available_filter_functions",
        Duration::from_secs(300),
    );
    assert!(aff.contains(&SCALE.to_string()), "{aff}");
    k.run("echo '*::scale_fn_1234?' > /tracing/set_ftrace_filter");
    k.run("echo function > /tracing/current_tracer");
    k.run("work scale 1");
    k.run("echo 0 > /tracing/tracing_on");
    let trace = k.run_with_timeout("cat /tracing/trace", Duration::from_secs(300));
    for d in 0..10 {
        let line = format!("::scale_fn_1234{d} <-");
        assert_eq!(
            trace.matches(&line).count(),
            1,
            "scale_fn_1234{d}: one event expected\n{trace}"
        );
    }
    assert_eq!(
        trace.matches(" <-").count(),
        10,
        "only the ten selected\n{trace}"
    );
    k.run("echo nop > /tracing/current_tracer");
    k.run("echo > /tracing/set_ftrace_filter");
    k.run("echo 1 > /tracing/tracing_on");
}

#[test]
#[ignore = "slow: builds a kernel with 35,000 more functions; run with --ignored"]
fn scale_35000_per_site_costs_stay_within_1_2x() {
    let t = Instant::now();
    let small_elf = kernel_elf("mcount");
    let small_build = t.elapsed();
    let t = Instant::now();
    let big_elf = kernel_elf_scale("mcount", Some(SCALE));
    let big_build = t.elapsed();

    let (small, small_sites, small_boot) = bench(&small_elf, |_| {});
    let (big, big_sites, big_boot) = bench(&big_elf, generated_functions_are_traced);
    eprintln!(
        "scale: build {:.0?} (default kernel: {:.0?}, cached or not), boot to the prompt {:.1?} (default {:.1?})",
        big_build, small_build, big_boot, small_boot
    );
    // Every generated function is a site (checked by name above); the rest
    // of the kernel may differ by a few sites between the two builds, since
    // the compiler inlines a few generic helpers differently (a run gave 892
    // against 899).
    assert!(
        big_sites + small_sites / 100 >= small_sites + u64::from(SCALE),
        "{big_sites} sites with {SCALE} generated functions, {small_sites} without"
    );
    let mut over = Vec::new();
    for name in PER_SITE {
        let (s, b) = (small[name], big[name]);
        let ratio = b as f64 / s as f64;
        eprintln!(
            "scale: {name}: {s} at {small_sites} sites, {b} at {big_sites} sites ({ratio:.2}x)"
        );
        if ratio > MAX_RATIO {
            over.push(format!("{name}: {s} -> {b} ({ratio:.2}x)"));
        }
    }
    assert!(
        over.is_empty(),
        "per-site rows above {MAX_RATIO}x at {big_sites} sites:\n{}",
        over.join("\n")
    );
}
