//! QEMU test of `ftrace_dump_on_oops` (Linux: `ftrace_dump`): when the
//! kernel dies with the setting on (the harness boots every kernel with
//! it), the trace buffer is printed after the crash report, in time order,
//! in the latency format, between two lines of dashes, and the kernel
//! still exits with 101. `orig_cpu` (2) prints only the dying CPU's
//! events; 0 prints nothing.

use std::time::Duration;

use tests::Kernel;

const DASHES: &str = "---------------------------------";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

/// One dumped line: `comm-pid CPU flags time: text`, with Linux's widths
/// (`%8.8s-%-7d %3d`, five flag characters, ` %4lldus%c: `).
struct Line {
    cpu: u32,
    us: u64,
    text: String,
}

fn parse_line(line: &str) -> Line {
    let (ctx, text) = line
        .split_once(": ")
        .unwrap_or_else(|| panic!("no ': ' in {line:?}"));
    // comm (8, right-aligned) '-' pid (7, left-aligned) ' ' cpu (3).
    assert!(ctx.len() >= 8 + 1 + 7 + 1 + 3 + 5 + 1 + 4 + 3, "{line:?}");
    assert_eq!(&ctx[8..9], "-", "{line:?}");
    let cpu: u32 = ctx[17..20].trim().parse().expect(line);
    let flags = &ctx[20..25];
    assert!(
        flags
            .chars()
            .all(|c| ".dDbXNnpZzHhs0123456789abcdef".contains(c)),
        "{line:?}"
    );
    let time = ctx[25..].trim_start();
    let digits: String = time.chars().take_while(|c| c.is_ascii_digit()).collect();
    let mark = time[digits.len()..].trim_end();
    assert!(
        ["us", "us+", "us!", "us#", "us*", "us@", "us$"].contains(&mark),
        "{line:?}"
    );
    Line {
        cpu,
        us: digits.parse().expect(line),
        text: text.to_string(),
    }
}

/// Boots, runs `setup`, crashes with `crash_cmd`, checks the exit status
/// and returns the report (the CPU that died) and the whole log.
fn crash_with(setup: &[&str], crash_cmd: &str) -> (u32, String) {
    let mut k = Kernel::boot(&["--smp", "2"]);
    for cmd in setup {
        assert_eq!(clean(&k.run(cmd)), "", "{cmd}");
    }
    k.send(format!("{crash_cmd}\n").as_bytes());
    let out = clean(&k.expect("---[ end Kernel panic ]---", Duration::from_secs(120)));
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 101, "{out}");
    let cpu = out
        .split("on cpu")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("no 'on cpuN' in {out}"));
    (cpu, out)
}

/// The dumped lines, after checking the frame around them.
fn dumped(out: &str) -> Vec<Line> {
    let (_, dump) = out
        .split_once("Dumping ftrace buffer:\n")
        .unwrap_or_else(|| panic!("no dump in {out}"));
    let dump = dump
        .strip_prefix(&format!("{DASHES}\n"))
        .unwrap_or_else(|| panic!("no dashes after the heading: {dump}"));
    let (body, rest) = dump
        .split_once(&format!("\n{DASHES}\n"))
        .unwrap_or_else(|| panic!("no closing dashes: {dump}"));
    assert!(rest.starts_with("---[ end Kernel panic ]---"), "{rest}");
    body.lines().map(parse_line).collect()
}

#[test]
fn a_crash_dumps_the_functions_that_led_to_it() {
    let (cpu, out) = crash_with(&["echo function > /tracing/current_tracer"], "crash ud2");
    let lines = dumped(&out);
    // Merged in time order.
    for w in lines.windows(2) {
        assert!(w[0].us <= w[1].us, "{} then {}", w[0].text, w[1].text);
    }
    // The shell's `crash` command, then the exception report's printing
    // from `die`, on the CPU that died: the last things it did.
    let crash = lines
        .iter()
        .rposition(|l| l.cpu == cpu && l.text.starts_with("kernel::shell::commands::crash <-"))
        .unwrap_or_else(|| panic!("no crash line in {out}"));
    let die = lines
        .iter()
        .position(|l| l.cpu == cpu && l.text.ends_with("<-kernel::arch::x86_64::traps::die"))
        .unwrap_or_else(|| panic!("no die line in {out}"));
    assert!(crash < die, "{out}");
    // The report was printed before the dump, the dump before the end.
    let report = out.find("kernel exception on cpu").unwrap();
    assert!(report < out.find("Dumping ftrace buffer:").unwrap());
}

#[test]
fn orig_cpu_dumps_the_dying_cpu_and_0_dumps_nothing() {
    let (cpu, out) = crash_with(
        &[
            "echo 2 > /proc/sys/kernel/ftrace_dump_on_oops",
            "echo function > /tracing/current_tracer",
        ],
        "crash pagefault",
    );
    let lines = dumped(&out);
    assert!(!lines.is_empty(), "{out}");
    assert!(lines.iter().all(|l| l.cpu == cpu), "{out}");

    let (_, out) = crash_with(
        &[
            "echo 0 > /proc/sys/kernel/ftrace_dump_on_oops",
            "echo function > /tracing/current_tracer",
        ],
        "crash",
    );
    assert!(!out.contains("Dumping ftrace buffer"), "{out}");
    assert!(out.contains("Kernel panic on cpu"), "{out}");
}
