//! Boot, SMP and the basic interfaces that scripts outside the project use.
use std::time::Duration;
use tests::Kernel;

#[test]
fn boots_on_four_cpus_and_powers_off() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    let cpus = k.run("cpus");
    let lines: Vec<&str> = cpus.lines().collect();
    assert_eq!(lines.len(), 4, "{cpus}");
    for (i, l) in lines.iter().enumerate() {
        assert!(l.starts_with(&format!("cpu{i}")), "{cpus}");
    }
    let tracers = k.run("cat /tracing/available_tracers");
    assert!(tracers.split_whitespace().any(|t| t == "nop"), "{tracers}");
    let err = k.run("echo bogus > /tracing/current_tracer");
    assert!(err.contains("Invalid argument"), "{err}");
    assert_eq!(k.run("cat /tracing/current_tracer").trim(), "nop");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}

#[test]
fn boots_on_one_cpu_and_exit_status_passes_through() {
    let mut k = Kernel::boot(&["--smp", "1"]);
    assert_eq!(k.run("cpus").lines().count(), 1);
    let ps = k.run("ps");
    assert!(ps.contains("swapper/0") && ps.contains(" sh"), "{ps}");
    k.send(b"exit 7\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 7);
}

#[test]
fn a_panic_reports_and_exits_nonzero() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    k.send(b"crash\n");
    let out = k.expect("end Kernel panic", Duration::from_secs(60));
    assert!(out.contains("Call Trace:"), "{out}");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 101);
}

#[test]
fn cpu_exceptions_report_name_error_code_rip_and_backtrace() {
    for (kind, name) in [("pagefault", "page fault"), ("ud2", "invalid opcode")] {
        let mut k = Kernel::boot(&["--smp", "2"]);
        k.send(format!("crash {kind}\n").as_bytes());
        let out = k.expect("end Kernel panic", Duration::from_secs(60));
        assert!(out.contains("kernel exception on cpu"), "{out}");
        assert!(out.contains(name), "{out}");
        assert!(out.contains("error code"), "{out}");
        assert!(out.contains("RIP: 0xffffffff8"), "{out}");
        // The faulting function is named, and the trace reaches the shell.
        assert!(out.contains("crash"), "{out}");
        assert!(
            out.contains("Call Trace:") && out.contains("kernel::shell::"),
            "{out}"
        );
        assert_eq!(k.wait_exit(Duration::from_secs(60)), 101);
    }
}
