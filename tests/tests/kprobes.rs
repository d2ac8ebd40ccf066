//! The kprobe core in the booted kernel (kernel/src/kprobes.rs), both
//! instrumentation modes, through the shell's `kprobe_test`
//! (kernel/src/test_kprobes.rs):
//! - a probe at every instruction boundary of the target functions (an asm
//!   one with one of each kind of instruction, compiled Rust ones) fires,
//!   the registers the handlers see before and after the instruction are
//!   what the instruction does, the results stay right, every emulated
//!   kind (loop, loope, loopne and jrcxz too) and the single-step path
//!   (RIP-relative, indirect call and jump) are covered, and the boundaries
//!   are objdump's;
//! - errnos: inside an instruction EILSEQ, the tracer's code, the kprobe
//!   core itself and the breakpoint path EINVAL (blacklist), not text
//!   EINVAL, an unknown symbol ENOENT;
//! - the 4-CPU stress: probes registered, aggregated, disabled and removed
//!   for 30 s while three other CPUs call the probed function: every call
//!   counted exactly once, the text the ELF's after;
//! - a probe on a function-tracing call site, through ftrace's
//!   registers-saving trampoline, alone and with the function tracer on
//!   the same function;
//! - kretprobes: the return values and return addresses of each call, and
//!   the first arguments their entry handler sees, alone and while
//!   function_graph traces the same function; the entry of a traceable
//!   function is reached through ftrace (its site calls
//!   ftrace_regs_caller, no int3: the first instruction in the fentry
//!   build, the call site after the prologue in the mcount build), of an
//!   untraceable one through an int3;
//! - after all that, the probed functions' text equals the ELF's, byte for
//!   byte (function-tracing sites hold the NOP, as after boot).
use std::process::Command;
use std::time::Duration;

use object::{Object, ObjectSection, ObjectSymbol};
use tests::{kernel_elf, Kernel};

const NOP5: [u8; 5] = [0x0f, 0x1f, 0x44, 0x00, 0x00];

/// The bytes of function `name` in the ELF, with the function-tracing call
/// sites as boot leaves them (NOP5).
fn elf_text(mode: &str, name: &str) -> (u64, Vec<u8>) {
    let data = std::fs::read(kernel_elf(mode)).unwrap();
    let obj = object::File::parse(&*data).unwrap();
    let mcount = obj
        .symbols()
        .find(|s| s.name() == Ok("mcount"))
        .map(|s| s.address());
    let sym = obj
        .symbols()
        .find(|s| {
            s.name()
                .map(|n| n == name || build_tools::names::display_name(n) == name)
                .unwrap_or(false)
                && s.size() > 0
        })
        .unwrap_or_else(|| panic!("{mode}: no symbol {name} in the ELF"));
    let text = obj.section_by_name(".text").unwrap();
    let off = (sym.address() - text.address()) as usize;
    let mut bytes = text.data().unwrap()[off..off + sym.size() as usize].to_vec();
    // mcount build: `call mcount` becomes the NOP at boot.
    if let Some(m) = mcount {
        let mut i = 0;
        while i + 5 <= bytes.len() {
            if bytes[i] == 0xe8 {
                let rel = i32::from_le_bytes(bytes[i + 1..i + 5].try_into().unwrap()) as i64;
                let target = (sym.address() + i as u64 + 5).wrapping_add_signed(rel);
                if target == m {
                    bytes[i..i + 5].copy_from_slice(&NOP5);
                    i += 5;
                    continue;
                }
            }
            i += 1;
        }
    }
    (sym.address(), bytes)
}

/// How many instructions objdump finds in `name`.
fn objdump_insns(mode: &str, name: &str) -> usize {
    let out = Command::new("objdump")
        .args(["-d", "-w", "-M", "intel", &format!("--disassemble={name}")])
        .arg(kernel_elf(mode))
        .output()
        .expect("objdump");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("ffffffff") && l.contains(":\t"))
        .count()
}

fn line<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{out}"))
}

fn kinds(out: &str) -> Vec<(String, u32)> {
    line(out, "kprobe_test kinds:")["kprobe_test kinds:".len()..]
        .split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

fn check_text(k: &mut Kernel, mode: &str, name: &str) {
    let (addr, want) = elf_text(mode, name);
    let out = k.run(&format!("kprobe_test text {name}"));
    let hex: String = want.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        out,
        format!("kprobe_test text {name} {addr:#x} {hex}\n"),
        "{mode}: text of {name} differs from the ELF"
    );
}

fn kprobes(mode: &str) {
    let mut k = Kernel::boot_mode(mode, &[]);

    // Every boundary.
    let out = k.run_with_timeout("kprobe_test boundaries", Duration::from_secs(300));
    assert!(
        out.ends_with("kprobe_test boundaries: PASS\n"),
        "{mode}:\n{out}"
    );
    let asm = objdump_insns(mode, "kprobe_target_asm");
    assert_eq!(asm, 30, "{mode}: objdump's count for the asm target");
    assert!(
        out.contains(&format!(
            "kprobe_test boundaries: kprobe_target_asm: {asm} boundaries, {asm} probed, {asm} hit, 0 ftrace sites, 0 bad, text restored\n"
        )),
        "{mode}:\n{out}"
    );
    // loop, loope, loopne and jrcxz, each taken and not taken.
    let n = objdump_insns(mode, "kprobe_target_loop");
    assert_eq!(n, 16, "{mode}: objdump's count for the loop target");
    assert!(
        out.contains(&format!(
            "kprobe_test boundaries: kprobe_target_loop: {n} boundaries, {n} probed, {n} hit, 0 ftrace sites, 0 bad, text restored\n"
        )),
        "{mode}:\n{out}"
    );
    for f in [
        "kernel::test_kprobes::kprobe_target_rust",
        "kernel::test_kprobes::kprobe_target_rust_leaf",
    ] {
        let l = line(&out, &format!("kprobe_test boundaries: {f}: "));
        let n = objdump_insns(mode, &elf_symbol(mode, f));
        assert!(
            l.starts_with(&format!("kprobe_test boundaries: {f}: {n} boundaries, ")),
            "{mode}: objdump finds {n} instructions: {l}"
        );
        assert!(l.ends_with(", 0 bad, text restored"), "{mode}: {l}");
    }
    let kinds = kinds(&out);
    for want in [
        "call",
        "cli",
        "jcc",
        "jmp",
        "jrcxz",
        "loop",
        "loope",
        "loopne",
        "nop",
        "pop",
        "popf",
        "push",
        "pushf",
        "ret",
        "rip-relative",
        "step",
        "step-indirect-call",
        "step-indirect-jmp",
        "ftrace",
    ] {
        assert!(
            kinds.iter().any(|(k, n)| k == want && *n > 0),
            "{mode}: kind {want} not covered: {kinds:?}"
        );
    }

    // Refused places.
    for (place, errno) in [
        ("kprobe_target_asm+0", "ok"),
        ("kprobe_target_asm+1", "ok"),
        // Inside `mov rbp, rsp` (48 89 e5).
        ("kprobe_target_asm+2", "EILSEQ"),
        ("kprobe_target_asm+3", "EILSEQ"),
        // The tracer, the kprobe core, the int3 path: the blacklist.
        ("kernel::trace::ftrace::ftrace_init", "EINVAL"),
        ("kernel::kprobes::register_kprobe", "EINVAL"),
        ("interrupt_dispatch", "EINVAL"),
        (
            "kernel::arch::x86_64::text_poke::poke_int3_handler",
            "EINVAL",
        ),
        // Not text.
        ("0xffffffff00000000", "EINVAL"),
        ("no::such::symbol", "ENOENT"),
    ] {
        assert_eq!(
            k.run(&format!("kprobe_test register {place}")),
            format!("kprobe_test register {place}: {errno}\n"),
            "{mode}"
        );
    }

    // Registered and removed for 30 s while three other CPUs hit them;
    // the text is the ELF's after.
    let out = k.run_with_timeout("kprobe_test stress 30000", Duration::from_secs(600));
    assert!(
        out.ends_with("kprobe_test stress: PASS\n"),
        "{mode}:\n{out}"
    );
    check_text(&mut k, mode, "kprobe_target_count");
    let stats = k.run("kprobe_test stats");
    assert!(
        stats.ends_with(" 0 probed addresses, 0 slots in use\n"),
        "{mode}: {stats}"
    );

    // A probe on a function-tracing call site goes through ftrace
    // (ftrace_regs_caller), alone and while the function tracer traces the
    // same function.
    let rust = "kernel::test_kprobes::kprobe_target_rust";
    let out = k.run("kprobe_test ftrace");
    assert!(
        out.ends_with("kprobe_test ftrace: PASS\n"),
        "{mode}:\n{out}"
    );
    assert_eq!(
        k.run(&format!("echo {rust} > /tracing/set_ftrace_filter")),
        ""
    );
    assert_eq!(k.run("echo function > /tracing/current_tracer"), "");
    let out = k.run("kprobe_test ftrace");
    assert!(
        out.ends_with("kprobe_test ftrace: PASS\n"),
        "{mode}:\n{out}"
    );
    assert_eq!(k.run("echo 0 > /tracing/tracing_on"), "");
    let trace = k.run("cat /tracing/trace");
    // One call for the expected value and five probed ones.
    let calls = trace
        .lines()
        .filter(|l| l.contains(&format!(": {rust} <-")))
        .count();
    assert_eq!(calls, 6, "{mode}: the function tracer's lines:\n{trace}");
    assert_eq!(k.run("echo nop > /tracing/current_tracer"), "");
    assert_eq!(k.run("echo 1 > /tracing/tracing_on"), "");
    assert_eq!(k.run("echo > /tracing/set_ftrace_filter"), "");
    let check = k.run("ftrace_check");
    assert!(
        check.contains(" 0 bad, 0 call ftrace_caller"),
        "{mode}: {check}"
    );

    // Return probes: the values each call returned, alone and with
    // function_graph tracing the same function (both hijack its return
    // address, each with a frame on its own stack of the task).
    // The entry is reached through ftrace where the function has a
    // function-tracing site (its first instruction in the fentry build,
    // after the prologue in the mcount build, where the return address is
    // found above the frame pointer), through an int3 otherwise.
    let out = k.run("kprobe_test kretprobe");
    assert!(
        out.ends_with("kprobe_test kretprobe: PASS\n"),
        "{mode}:\n{out}"
    );
    assert!(
        out.contains(&format!("kprobe_test kretprobe: {rust}: entry ftrace ok, ")),
        "{mode}:\n{out}"
    );
    assert!(
        out.contains("kprobe_test kretprobe: kprobe_target_asm: entry int3 ok, "),
        "{mode}:\n{out}"
    );
    assert_eq!(
        k.run(&format!("echo {rust} > /tracing/set_ftrace_filter")),
        ""
    );
    assert_eq!(k.run("echo function_graph > /tracing/current_tracer"), "");
    let out = k.run("kprobe_test kretprobe");
    assert!(
        out.ends_with("kprobe_test kretprobe: PASS\n"),
        "{mode}:\n{out}"
    );
    assert_eq!(k.run("echo 0 > /tracing/tracing_on"), "");
    let trace = k.run("cat /tracing/trace");
    // 8 watched calls and one after the kretprobe is gone, each a leaf.
    let calls = trace
        .lines()
        .filter(|l| l.trim_end().ends_with(&format!("{rust}();")))
        .count();
    assert_eq!(calls, 9, "{mode}: function_graph's lines:\n{trace}");
    // Each at depth 0, as without the kretprobe (whose frames are on the
    // task's rethook stack).
    assert!(
        trace
            .lines()
            .filter(|l| l.trim_end().ends_with(&format!("{rust}();")))
            .all(|l| l.contains(&format!("|  {rust}();"))),
        "{mode}: function_graph's lines:\n{trace}"
    );
    assert_eq!(k.run("echo nop > /tracing/current_tracer"), "");
    assert_eq!(k.run("echo 1 > /tracing/tracing_on"), "");
    assert_eq!(k.run("echo > /tracing/set_ftrace_filter"), "");

    for f in [
        "kprobe_target_asm",
        "kprobe_target_loop",
        "kprobe_target_leaf",
        "kprobe_target_count",
        "kernel::test_kprobes::kprobe_target_rust",
        "kernel::test_kprobes::kprobe_target_rust_leaf",
    ] {
        check_text(&mut k, mode, f);
    }
}

/// The ELF's (mangled) name of the function displayed as `display`.
fn elf_symbol(mode: &str, display: &str) -> String {
    let data = std::fs::read(kernel_elf(mode)).unwrap();
    let obj = object::File::parse(&*data).unwrap();
    obj.symbols()
        .find(|s| {
            s.size() > 0
                && s.name()
                    .map(|n| build_tools::names::display_name(n) == display)
                    .unwrap_or(false)
        })
        .and_then(|s| s.name().ok().map(str::to_string))
        .unwrap_or_else(|| panic!("{mode}: no symbol {display}"))
}

#[test]
fn kprobes_mcount() {
    kprobes("mcount");
}

#[test]
fn kprobes_fentry() {
    kprobes("fentry");
}
