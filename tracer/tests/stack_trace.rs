//! The stack tracer's table (tracer::stack_trace) on made-up stacks, the
//! `stack_trace` text as Linux 6.1 prints it, the boot options and
//! stack_trace_filter's commands; and the /proc/sys integer files'
//! parser (tracer::sysctl) against what Linux 6.1 answered.
use tracer::errno::Errno;
use tracer::stack_trace::{parse_boot_options, stack_filter_command, StackTrace};
use tracer::sysctl::{proc_dointvec_write, SysctlAction, SysctlWrite};

/// A stack of `nwords` words (index 0 = the callback's local variable,
/// top = nwords) with return addresses at the given word indexes.
fn stack(nwords: usize, rets: &[(usize, u64)]) -> Vec<u64> {
    let mut s: Vec<u64> = (0..nwords as u64).map(|i| 0x1000 + i).collect();
    for &(at, addr) in rets {
        s[at] = addr;
    }
    s
}

fn symbol(out: &mut String, addr: u64) {
    out.push_str(&format!("f{addr:x}+0x5/0x20"));
}

/// The chain the walk reports: the tracer's own return first, then the
/// traced function (ip), then its callers.
const TRACER_RET: u64 = 0xaaa0;
const IP: u64 = 0xb005;
const CALLER1: u64 = 0xc010;
const CALLER2: u64 = 0xd020;

fn save_chain(chain: &[u64]) -> impl FnOnce(&mut [u64], &mut [u64]) -> usize + '_ {
    move |raw, real| {
        let n = chain.len().min(raw.len());
        raw[..n].copy_from_slice(&chain[..n]);
        real[..n].copy_from_slice(&chain[..n]);
        n
    }
}

#[test]
fn depths_and_sizes_from_the_stack() {
    // 100 words: tracer ret at word 2, ip at word 6 (tracer frame = 48
    // bytes), caller1 at 40, caller2 at 90.
    let chain = [TRACER_RET, IP, CALLER1, CALLER2];
    let s = stack(
        100,
        &[(2, TRACER_RET), (6, IP), (40, CALLER1), (90, CALLER2)],
    );
    let mut st = StackTrace::new();
    assert!(st.check_stack(IP, s.len(), |k| s[k], save_chain(&chain)));
    assert_eq!(st.tracer_frame(), 48);
    // Depths: (100-6)*8, (100-40)*8, (100-90)*8.
    let e: Vec<_> = st.entries().map(|e| (e.depth, e.size, e.addr)).collect();
    assert_eq!(
        e,
        vec![
            (752, 752 - 480, IP),
            (480, 480 - 80, CALLER1),
            (80, 80, CALLER2)
        ]
    );
    assert_eq!(st.max_size(), 752);
    // The sizes add up to the deepest depth, which is the max.
    assert_eq!(st.entries().map(|e| e.size).sum::<u64>(), st.max_size());
}

#[test]
fn only_a_deeper_stack_replaces_the_max() {
    let chain = [TRACER_RET, IP, CALLER1];
    let s = stack(100, &[(2, TRACER_RET), (6, IP), (40, CALLER1)]);
    let mut st = StackTrace::new();
    assert!(st.check_stack(IP, s.len(), |k| s[k], save_chain(&chain)));
    let max = st.max_size();
    // The same depth again (the tracer frame is now subtracted up front).
    assert!(!st.check_stack(IP, s.len(), |k| s[k], save_chain(&chain)));
    // A shallower one.
    let s2 = stack(80, &[(2, TRACER_RET), (6, IP), (30, CALLER1)]);
    assert!(!st.check_stack(IP, s2.len(), |k| s2[k], save_chain(&chain)));
    assert_eq!(st.max_size(), max);
    // A deeper one: 120 words.
    let s3 = stack(120, &[(2, TRACER_RET), (6, IP), (50, CALLER1)]);
    assert!(st.check_stack(IP, s3.len(), |k| s3[k], save_chain(&chain)));
    assert_eq!(st.max_size(), (120 - 6) * 8);
    assert_eq!(st.entries().next().unwrap().depth, (120 - 6) * 8);
}

#[test]
fn writing_zero_resets_and_the_table_stays_until_replaced() {
    let chain = [TRACER_RET, IP, CALLER1];
    let s = stack(100, &[(2, TRACER_RET), (6, IP), (40, CALLER1)]);
    let mut st = StackTrace::new();
    st.check_stack(IP, s.len(), |k| s[k], save_chain(&chain));
    st.set_max_size(0);
    assert_eq!(st.max_size(), 0);
    assert_eq!(st.entries().count(), 2);
    // Now a shallower stack is a new max.
    let s2 = stack(50, &[(2, TRACER_RET), (6, IP), (30, CALLER1)]);
    assert!(st.check_stack(IP, s2.len(), |k| s2[k], save_chain(&chain)));
    assert_eq!(st.max_size(), (50 - 6) * 8);
    // A write of another value is a threshold.
    st.set_max_size(10_000);
    assert!(!st.check_stack(IP, s.len(), |k| s[k], save_chain(&chain)));
}

#[test]
fn an_address_missing_from_the_stack_is_skipped() {
    // CALLER1 was never found on the stack (e.g. a frame the walk made up).
    let chain = [TRACER_RET, IP, CALLER1, CALLER2];
    let s = stack(100, &[(2, TRACER_RET), (6, IP), (90, CALLER2)]);
    let mut st = StackTrace::new();
    st.check_stack(IP, s.len(), |k| s[k], save_chain(&chain));
    let addrs: Vec<_> = st.entries().map(|e| e.addr).collect();
    assert_eq!(addrs, vec![IP, CALLER2]);
}

#[test]
fn without_the_ip_everything_is_shown() {
    let chain = [TRACER_RET, CALLER1];
    let s = stack(100, &[(2, TRACER_RET), (40, CALLER1)]);
    let mut st = StackTrace::new();
    st.check_stack(IP, s.len(), |k| s[k], save_chain(&chain));
    let addrs: Vec<_> = st.entries().map(|e| e.addr).collect();
    assert_eq!(addrs, vec![TRACER_RET, CALLER1]);
}

#[test]
fn hijacked_returns_are_found_raw_and_printed_real() {
    // function_graph put its trampoline in CALLER1's slot.
    const HANDLER: u64 = 0xeee0;
    let s = stack(100, &[(2, TRACER_RET), (6, IP), (40, HANDLER)]);
    let mut st = StackTrace::new();
    st.check_stack(
        IP,
        s.len(),
        |k| s[k],
        |raw, real| {
            raw[..3].copy_from_slice(&[TRACER_RET, IP, HANDLER]);
            real[..3].copy_from_slice(&[TRACER_RET, IP, CALLER1]);
            3
        },
    );
    let addrs: Vec<_> = st.entries().map(|e| (e.depth, e.addr)).collect();
    assert_eq!(addrs, vec![(752, IP), (480, CALLER1)]);
}

#[test]
fn a_long_chain_is_cut_at_499_entries() {
    let n = 700;
    let chain: Vec<u64> = (0..n as u64).map(|i| 0x10_0000 + i * 16).collect();
    let rets: Vec<(usize, u64)> = chain.iter().enumerate().map(|(i, &a)| (i * 2, a)).collect();
    let s = stack(2 * n + 4, &rets);
    let mut st = StackTrace::new();
    st.check_stack(chain[0], s.len(), |k| s[k], save_chain(&chain[..]));
    assert_eq!(st.entries().count(), 499);
}

#[test]
fn the_text_is_linuxs() {
    let chain = [TRACER_RET, IP, CALLER1, CALLER2];
    let s = stack(
        500,
        &[(2, TRACER_RET), (6, IP), (40, CALLER1), (490, CALLER2)],
    );
    let mut st = StackTrace::new();
    st.check_stack(IP, s.len(), |k| s[k], save_chain(&chain));
    let text = st.show(true, symbol);
    assert_eq!(
        text,
        "        Depth    Size   Location    (3 entries)\n\
         \x20       -----    ----   --------\n\
         \x20 0)     3952     272   fb005+0x5/0x20\n\
         \x20 1)     3680    3600   fc010+0x5/0x20\n\
         \x20 2)       80      80   fd020+0x5/0x20\n"
    );
    // Disabled with a table but max 0: both the note and the rows.
    st.set_max_size(0);
    let text = st.show(false, symbol);
    assert!(text.contains("#  Stack tracer disabled\n"));
    assert!(text.ends_with("  2)       80      80   fd020+0x5/0x20\n"));
}

#[test]
fn the_disabled_text_is_linuxs() {
    // As Linux 6.1 prints it at boot.
    let st = StackTrace::new();
    assert_eq!(
        st.show(false, symbol),
        "        Depth    Size   Location    (0 entries)\n\
         \x20       -----    ----   --------\n\
         #\n\
         #  Stack tracer disabled\n\
         #\n\
         # To enable the stack tracer, either add 'stacktrace' to the\n\
         # kernel command line\n\
         # or 'echo 1 > /proc/sys/kernel/stack_tracer_enabled'\n\
         #\n"
    );
    // Enabled, nothing recorded yet: the header only.
    assert_eq!(
        st.show(true, symbol),
        "        Depth    Size   Location    (0 entries)\n        -----    ----   --------\n"
    );
}

#[test]
fn boot_options() {
    assert_eq!(parse_boot_options(""), (false, None));
    assert_eq!(parse_boot_options("quiet stacktrace"), (true, None));
    assert_eq!(
        parse_boot_options("stacktrace_filter=vfs_*,work_stack"),
        (true, Some("vfs_*,work_stack"))
    );
    // __setup matches the prefix: any such word enables it.
    assert_eq!(parse_boot_options("stacktrace=0"), (true, None));
    assert_eq!(parse_boot_options("nostacktrace"), (false, None));
}

#[test]
fn stack_filter_commands_have_no_trace_array() {
    // Linux 6.1: `schedule:traceoff`, `:mod:foo`, `:stacktrace` gave
    // ENODEV, `schedule:bogus` EINVAL.
    assert_eq!(stack_filter_command("schedule"), None);
    assert_eq!(stack_filter_command("!vfs_*"), None);
    assert_eq!(
        stack_filter_command("schedule:traceoff"),
        Some(Errno::ENODEV)
    );
    assert_eq!(
        stack_filter_command("schedule:mod:foo"),
        Some(Errno::ENODEV)
    );
    assert_eq!(
        stack_filter_command("schedule:stacktrace:3"),
        Some(Errno::ENODEV)
    );
    assert_eq!(stack_filter_command("schedule:bogus"), Some(Errno::EINVAL));
    assert_eq!(stack_filter_command("schedule:"), Some(Errno::EINVAL));
    // `::` is part of a Rust path, not a command separator.
    assert_eq!(stack_filter_command("kernel::fs::vfs::read"), None);
    assert_eq!(stack_filter_command("kernel::fs::*"), None);
    assert_eq!(
        stack_filter_command("kernel::fs::vfs::read:traceoff"),
        Some(Errno::ENODEV)
    );
    assert_eq!(
        stack_filter_command("kernel::fs::vfs::read:bogus"),
        Some(Errno::EINVAL)
    );
}

fn value(s: &str) -> Result<i32, Errno> {
    proc_dointvec_write(s.as_bytes()).map(|(v, _)| v)
}

#[test]
fn proc_dointvec_accepts_what_linux_accepts() {
    // Each case as Linux 6.1 answered `echo ... > stack_tracer_enabled`.
    assert_eq!(value("2\n"), Ok(2));
    assert_eq!(value("-1\n"), Ok(-1));
    assert_eq!(value(" 4\n"), Ok(4));
    assert_eq!(value("0x10\n"), Ok(16));
    assert_eq!(value("7\t\n"), Ok(7));
    assert_eq!(value("-0\n"), Ok(0));
    assert_eq!(value("-2147483648\n"), Ok(i32::MIN));
    assert_eq!(value("010\n"), Ok(8));
    assert_eq!(value("-0x10\n"), Ok(-16));
    assert_eq!(value("5"), Ok(5));
}

#[test]
fn proc_dointvec_refuses_what_linux_refuses() {
    for bad in [
        "abc\n",
        "99999999999\n",
        "3x\n",
        "\n",
        "+5\n",
        "2147483648\n",
        "-2147483649\n",
        "08\n",
        "0x\n",
        "-\n",
        "-",
        "1,2\n",
        // 21 characters of number: refused even though the value fits.
        "000000000000000000001\n",
        "99999999999999999999999999\n",
    ] {
        assert_eq!(value(bad), Err(Errno::EINVAL), "{bad:?}");
    }
}

#[test]
fn proc_dointvec_reports_the_bytes_it_used() {
    // "1 2\n": the number and the space after it; the rest comes back in a
    // second write, which is ignored once the position moved.
    assert_eq!(proc_dointvec_write(b"1 2\n"), Ok((1, 2)));
    assert_eq!(proc_dointvec_write(b"  9  \n"), Ok((9, 6)));
    let mut w = SysctlWrite::new();
    assert_eq!(
        w.write(b"1 2\n"),
        Ok(SysctlAction::Store { value: 1, used: 2 })
    );
    w.advance(2);
    assert_eq!(w.write(b"2\n"), Ok(SysctlAction::Ignore(2)));
    // A failed write leaves the position at 0: the next one is parsed.
    let mut w = SysctlWrite::new();
    assert_eq!(w.write(b"x\n"), Err(Errno::EINVAL));
    assert_eq!(
        w.write(b"3\n"),
        Ok(SysctlAction::Store { value: 3, used: 2 })
    );
    assert_eq!(w.write(b""), Ok(SysctlAction::Ignore(0)));
}
