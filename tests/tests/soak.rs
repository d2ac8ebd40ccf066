//! A short soak: mixed workloads on 4 CPUs (file operations, sleeps and
//! wake-ups, deep call trees, migration), first untraced, then with the
//! function tracer on every function. The long version is a command a user
//! can run: `printf 'work all 600\npoweroff\n' | ./qemu.sh --smp 4`.
use std::time::Duration;
use tests::Kernel;

fn check_summary(out: &str) {
    let line = out
        .lines()
        .find(|l| l.starts_with("work all:"))
        .unwrap_or_else(|| panic!("no summary: {out}"));
    assert!(line.contains(" 0 errors"), "{line}");
    assert!(line.contains("on 4 cpus"), "{line}");
}

#[test]
fn workloads_on_four_cpus_with_and_without_tracing() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    let t = Duration::from_secs(300);
    check_summary(&k.run_with_timeout("work all 8", t));
    assert!(k.run("echo function > /tracing/current_tracer").is_empty());
    check_summary(&k.run_with_timeout("work all 8", t));
    assert!(k.run("echo nop > /tracing/current_tracer").is_empty());
    let ps = k.run("ps");
    assert!(ps.contains("swapper/3"), "{ps}");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}
