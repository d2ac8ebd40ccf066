//! QEMU tests of the instrumented build: the call sites recorded
//! at build time against an independent scan of the kernel ELF, the boot-time
//! NOP conversion read back by the kernel's `ftrace_check`, and the listing
//! of `available_filter_functions` in both instrumentation modes.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use tests::{kernel_elf, Kernel};

const T: &str = "/tracing";

fn lines(s: &str) -> Vec<String> {
    s.replace('\r', "").lines().map(str::to_string).collect()
}

/// `objdump -d` of the kernel built in `mode`.
fn disassemble(mode: &str) -> String {
    let elf = kernel_elf(mode);
    let out = Command::new("objdump")
        .args(["-d", "-w"])
        .arg(&elf)
        .output()
        .expect("objdump (binutils) is needed for this test");
    assert!(out.status.success(), "objdump failed on {}", elf.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Independent scan, mcount mode: the address of every `call <mcount>` in
/// the linked image (sites are NOPed only at boot; recordmcount already
/// NOPed the notrace ones, so every remaining call is a recorded site).
fn mcount_calls(disasm: &str) -> BTreeSet<u64> {
    disasm
        .lines()
        .filter(|l| {
            let mut f = l.split('\t');
            let (_, _, insn) = (f.next(), f.next(), f.next().unwrap_or(""));
            insn.starts_with("call") && insn.ends_with(" <mcount>")
        })
        .map(|l| u64::from_str_radix(l.trim().split(':').next().unwrap(), 16).unwrap())
        .collect()
}

/// The addresses of the ELF's function symbols (`readelf -s`, type FUNC).
/// Linker-script labels such as `__irqentry_text_end` are not functions,
/// even when the padding after them happens to be a 5-byte NOP.
fn function_addresses(mode: &str) -> BTreeSet<u64> {
    let elf = kernel_elf(mode);
    let out = Command::new("readelf")
        .args(["-sW"])
        .arg(&elf)
        .output()
        .expect("readelf (binutils) is needed for this test");
    assert!(out.status.success(), "readelf failed on {}", elf.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 8 && f[3] == "FUNC").then(|| u64::from_str_radix(f[1], 16).ok())?
        })
        .collect()
}

/// Independent scan, fentry mode: every function whose first instruction is
/// the 5-byte NOP `0f 1f 44 00 00` (recordmcount rewrote the compiler's
/// `0f 1f 44 00 08` of each recorded site; notrace functions keep it).
fn fentry_nops(disasm: &str, functions: &BTreeSet<u64>) -> BTreeSet<u64> {
    let mut out = BTreeSet::new();
    let mut it = disasm.lines().peekable();
    while let Some(l) = it.next() {
        if l.ends_with(">:") && !l.starts_with(' ') {
            if let Some(first) = it.peek() {
                let mut f = first.split('\t');
                let (addr, bytes) = (f.next().unwrap_or(""), f.next().unwrap_or(""));
                if bytes.trim() == "0f 1f 44 00 00" {
                    let addr = u64::from_str_radix(addr.trim().trim_end_matches(':'), 16).unwrap();
                    if functions.contains(&addr) {
                        out.insert(addr);
                    }
                }
            }
        }
    }
    out
}

/// Boots `mode`, checks the sites and returns available_filter_functions.
fn listing_and_checks(mode: &str, expected_sites: &BTreeSet<u64>) -> Vec<String> {
    let mut k = Kernel::boot_mode(mode, &["--smp", "4"]);
    let boot = k.log();
    let n = expected_sites.len();
    assert!(n >= 300, "only {n} call sites in the ELF");
    assert!(
        boot.contains(&format!(
            "ftrace: {n} sites ({mode} mode) converted to NOPs"
        )),
        "{boot}"
    );

    // The listing, and the addresses behind it, equal the independent scan.
    let funcs = lines(&k.run(&format!("cat {T}/available_filter_functions")));
    assert_eq!(
        funcs.len(),
        n,
        "available_filter_functions vs call sites in the ELF"
    );
    let addrs: BTreeSet<u64> = lines(&k.run(&format!("cat {T}/available_filter_functions_addrs")))
        .iter()
        .map(|l| u64::from_str_radix(l.split(' ').next().unwrap(), 16).unwrap())
        .collect();
    assert_eq!(
        &addrs, expected_sites,
        "recorded sites differ from the ELF scan"
    );
    let total = k.run(&format!("cat {T}/dyn_ftrace_total_info"));
    assert!(total.starts_with(&format!("{n} ")), "{total}");

    // Known functions listed, notrace ones not.
    for f in [
        "kernel::shell::work::compute_leaf",
        "kernel::shell::work::compute_iteration",
        "kernel::fs::path::normalize",
    ] {
        assert!(funcs.iter().any(|l| l == f), "{f} is not listed");
    }
    for f in [
        "kernel::trace::functions::function_trace_call",
        "kernel::trace::ftrace::ftrace_init",
        "kernel::arch::x86_64::text_poke::poke_int3_handler",
        "interrupt_dispatch",
        "kernel::time::now_ns",
    ] {
        assert!(!funcs.iter().any(|l| l == f), "notrace {f} is listed");
    }
    // Nothing written in kernel::trace is traceable (generic code of alloc
    // instantiated for its types, e.g. `<alloc::raw_vec::RawVec<kernel::
    // trace::..>>::grow_one`, is, as Linux traces lib/).
    let own: Vec<&String> = funcs
        .iter()
        .filter(|l| l.starts_with("kernel::trace::") || l.starts_with("<kernel::trace::"))
        .collect();
    assert!(
        own.is_empty(),
        "traceable functions of kernel::trace: {own:?}"
    );

    // After boot every site holds the NOP.
    let check = k.run("ftrace_check");
    assert_eq!(
        check,
        format!("ftrace_check: {n} sites, 0 bad, 0 call ftrace_caller, {n} nop\n")
    );
    // With the function tracer on, every site calls ftrace_caller...
    assert_eq!(k.run(&format!("echo function > {T}/current_tracer")), "");
    let check = k.run("ftrace_check");
    assert_eq!(
        check,
        format!("ftrace_check: {n} sites, 0 bad, {n} call ftrace_caller, 0 nop\n")
    );
    assert_eq!(
        lines(&k.run(&format!("cat {T}/enabled_functions"))).len(),
        n
    );
    // ... with a filter only the selected ones ...
    assert_eq!(
        k.run(&format!(
            "echo 'kernel::shell::work::compute_*' > {T}/set_ftrace_filter"
        )),
        ""
    );
    let selected = funcs
        .iter()
        .filter(|l| l.starts_with("kernel::shell::work::compute_"))
        .count();
    assert!(selected >= 4);
    let check = k.run("ftrace_check");
    assert_eq!(
        check,
        format!(
            "ftrace_check: {n} sites, 0 bad, {selected} call ftrace_caller, {} nop\n",
            n - selected
        )
    );
    assert_eq!(
        lines(&k.run(&format!("cat {T}/enabled_functions"))).len(),
        selected
    );
    // ... and after `nop` every site is a NOP again.
    assert_eq!(k.run(&format!("echo nop > {T}/current_tracer")), "");
    let check = k.run("ftrace_check");
    assert_eq!(
        check,
        format!("ftrace_check: {n} sites, 0 bad, 0 call ftrace_caller, {n} nop\n")
    );
    assert_eq!(k.run(&format!("cat {T}/enabled_functions")), "");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
    funcs
}

#[test]
fn mcount_sites_match_the_elf_and_are_nops_after_boot() {
    let sites = mcount_calls(&disassemble("mcount"));
    listing_and_checks("mcount", &sites);
}

#[test]
fn fentry_sites_match_the_elf_and_are_nops_after_boot() {
    let sites = fentry_nops(&disassemble("fentry"), &function_addresses("fentry"));
    listing_and_checks("fentry", &sites);
}

/// Both modes list the same functions. The two builds are compiled with
/// different flags, so the optimiser may inline or outline a handful of
/// generic helpers differently; anything beyond that is a bug.
#[test]
fn both_modes_list_the_same_functions() {
    let m = lines_of_mode("mcount");
    let f = lines_of_mode("fentry");
    let ms: BTreeSet<&String> = m.iter().collect();
    let fs: BTreeSet<&String> = f.iter().collect();
    let only_m: Vec<_> = ms.difference(&fs).collect();
    let only_f: Vec<_> = fs.difference(&ms).collect();
    eprintln!("only in mcount: {only_m:#?}\nonly in fentry: {only_f:#?}");
    let diff = only_m.len() + only_f.len();
    assert!(
        diff * 50 <= m.len(),
        "{diff} functions differ between the modes"
    );
    // Every function written in the kernel's own modules (not generic
    // instances) is in both.
    for name in ms.symmetric_difference(&fs) {
        assert!(
            name.starts_with('<')
                || name.contains("::<")
                || name.starts_with("core::")
                || name.starts_with("alloc::"),
            "{name} is listed in one mode only"
        );
    }
}

fn lines_of_mode(mode: &str) -> Vec<String> {
    let mut k = Kernel::boot_mode(mode, &["--smp", "2"]);
    let v = lines(&k.run(&format!("cat {T}/available_filter_functions")));
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
    v
}
