//! A short soak: mixed workloads on 4 CPUs (file operations, sleeps and
//! wake-ups, deep call trees) whose threads are not bound to a CPU, so the
//! scheduler moves them; first untraced, then with the function tracer and
//! with the function_graph tracer on every function. Each run must show
//! migrations and no error in any workload. The long version is a command a
//! user can run: `printf 'work all 600\npoweroff\n' | ./qemu.sh --smp 4`.
use std::time::Duration;
use tests::Kernel;

/// The number before `what` in the summary line (`... 12 migrations, ...`).
fn count(line: &str, what: &str) -> u64 {
    let before = line
        .split_once(what)
        .unwrap_or_else(|| panic!("no '{what}' in: {line}"))
        .0;
    let word = before.trim_end().rsplit(' ').next().unwrap();
    word.parse()
        .unwrap_or_else(|_| panic!("no number before '{what}' in: {line}"))
}

/// The number right after `what` (`(0 bad)` after ` files (`).
fn after(line: &str, what: &str) -> u64 {
    let rest = line
        .split_once(what)
        .unwrap_or_else(|| panic!("no '{what}' in: {line}"))
        .1;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after '{what}' in: {line}"))
}

fn check_summary(out: &str) {
    let line = out
        .lines()
        .find(|l| l.starts_with("work all:"))
        .unwrap_or_else(|| panic!("no summary: {out}"));
    assert!(line.contains("on 4 cpus"), "{line}");
    // Every workload made progress and none had an error.
    for what in [" files (", " compute iterations (", " round trips ("] {
        assert!(count(line, what) > 0, "{what}: {line}");
        assert_eq!(after(line, what), 0, "{what}: {line}");
    }
    assert!(count(line, " migrations,") > 0, "{line}");
    assert!(line.ends_with(" 0 errors"), "{line}");
}

#[test]
fn workloads_on_four_cpus_with_and_without_tracing() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    let t = Duration::from_secs(300);
    check_summary(&k.run_with_timeout("work all 5", t));
    for tracer in ["function", "function_graph"] {
        let set = format!("echo {tracer} > /tracing/current_tracer");
        assert!(k.run(&set).is_empty());
        check_summary(&k.run_with_timeout("work all 5", t));
    }
    assert!(k.run("echo nop > /tracing/current_tracer").is_empty());
    let ps = k.run("ps");
    assert!(ps.contains("swapper/3"), "{ps}");
    assert!(!ps.contains("work-"), "{ps}");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}
