//! Self-tests of the kprobe core, driven by the shell's `kprobe_test`
//! (Linux: lib/test_kprobes.c).
//!
//! - `boundaries`: a probe at every instruction boundary of the target
//!   functions below, one at a time; each call must still compute the
//!   unprobed result, the handlers must fire, and the registers they see
//!   before and after the instruction must be what running it leaves
//!   (rip, rsp, the top of the stack, the flags).
//! - `register SYMBOL+OFFSET`: registers a probe there and prints `ok` or
//!   the errno (and removes it).
//! - `stress MS`: three CPUs call a counting function while the shell's CPU
//!   registers and removes probes on it; every call must be counted
//!   exactly once.
//! - `kretprobe`: return probes on the targets: the handler sees each
//!   call's return value and return address, the entry handler its first
//!   argument.
//! - `ftrace`: a probe on a function-tracing call site (through
//!   `ftrace_regs_caller`), hit five times.
//! - `regs N`: N calls of `kprobe_target_saver` from a caller whose
//!   callee-saved registers hold known values (for a return probe's
//!   `%bx`...).
//! - `text SYMBOL`: the function's bytes in hex, for comparison with the
//!   ELF.
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::arch::global_asm;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tracer::errno::Errno;
use tracer::kprobe_insn::{self, Emulate, Kind, LoopOp, StepFixup, FLAG_TF};

use crate::kprobes::{self, Kprobe, PtRegs};

// The asm target: one of each kind of instruction a probe meets, at known
// places. kprobe_target_asm(a, b) = 9 * (1000 + a - b) if a >= b, else
// 9 * (1000 + a + b) (wrapping).
global_asm!(
    r#"
.pushsection .text.kprobe_target, "ax"
.balign 16
.global kprobe_target_leaf
.type kprobe_target_leaf, @function
kprobe_target_leaf:
    lea rax, [rdi + rdi * 2]
    ret
.size kprobe_target_leaf, . - kprobe_target_leaf

.balign 16
.global kprobe_target_asm
.type kprobe_target_asm, @function
kprobe_target_asm:
    push rbp
    mov rbp, rsp
    push rbx
    push r12
    mov rbx, rdi
    mov r12, rsi
    mov rax, qword ptr [rip + kprobe_target_base]
    add rax, rbx
    cmp rbx, r12
    jb 2f
    sub rax, r12
    jmp 3f
2:  add rax, r12
3:  nop dword ptr [rax]
    mov rdi, rax
    call kprobe_target_leaf
    lea rcx, [rip + kprobe_target_leaf]
    mov rdi, rax
    call rcx
    pushfq
    cli
    popfq
    jmp qword ptr [rip + kprobe_target_jmp_slot]
.Lkprobe_target_after_jmp:
    test rax, rax
    .byte 0x0f, 0x85
    .long 4f - (. + 4)
    xor eax, eax
4:  pop r12
    pop rbx
    pop rbp
    ret
.size kprobe_target_asm, . - kprobe_target_asm

/* The rcx-counted branches: kprobe_target_loop(n >= 1, m, d), see
   loop_expected. */
.balign 16
.global kprobe_target_loop
.type kprobe_target_loop, @function
kprobe_target_loop:
    xor eax, eax
    mov rcx, rdi
5:  add rax, rcx
    loop 5b
    mov rcx, rsi
    jrcxz 6f
    add rax, 1000
6:  mov ecx, 4
7:  add rax, 1
    cmp rax, rdx
    loopne 7b
    mov ecx, 4
8:  test al, 1
    lea rax, [rax + 1]
    loope 8b
    ret
.size kprobe_target_loop, . - kprobe_target_loop

/* The callee-saved registers at a return: kprobe_target_saver(x) = x + 1
   uses rbx, rbp and r12-r15 and restores them, so that at its return they
   hold its caller's values again; kprobe_target_regs_caller(x) calls it
   with rbx = 0xb0b0, r12..r15 = 0x1212..0x1515 and rbp 48 bytes above the
   stack pointer the return leaves (its frame: rbp, 5 registers, 8 bytes
   of alignment). */
.balign 16
.global kprobe_target_saver
.type kprobe_target_saver, @function
kprobe_target_saver:
    sub rsp, 48
    mov [rsp], rbx
    mov [rsp + 8], rbp
    mov [rsp + 16], r12
    mov [rsp + 24], r13
    mov [rsp + 32], r14
    mov [rsp + 40], r15
    mov rbx, -1
    mov rbp, -1
    mov r12, -1
    mov r13, -1
    mov r14, -1
    mov r15, -1
    lea rax, [rdi + 1]
    mov rbx, [rsp]
    mov rbp, [rsp + 8]
    mov r12, [rsp + 16]
    mov r13, [rsp + 24]
    mov r14, [rsp + 32]
    mov r15, [rsp + 40]
    add rsp, 48
    ret
.size kprobe_target_saver, . - kprobe_target_saver

.balign 16
.global kprobe_target_regs_caller
.type kprobe_target_regs_caller, @function
kprobe_target_regs_caller:
    push rbp
    mov rbp, rsp
    push r15
    push r14
    push r13
    push r12
    push rbx
    sub rsp, 8
    mov rbx, 0xb0b0
    mov r12, 0x1212
    mov r13, 0x1313
    mov r14, 0x1414
    mov r15, 0x1515
    call kprobe_target_saver
    add rsp, 8
    pop rbx
    pop r12
    pop r13
    pop r14
    pop r15
    pop rbp
    ret
.size kprobe_target_regs_caller, . - kprobe_target_regs_caller

/* The stress target: two counted increments. */
.balign 16
.global kprobe_target_count
.type kprobe_target_count, @function
kprobe_target_count:
    lock inc qword ptr [rip + kprobe_count_a]
    lock inc qword ptr [rip + kprobe_count_b]
    ret
.size kprobe_target_count, . - kprobe_target_count
.popsection

.pushsection .rodata.kprobe_target, "a"
.balign 8
kprobe_target_base:
    .quad 1000
kprobe_target_jmp_slot:
    .quad .Lkprobe_target_after_jmp
.popsection

.pushsection .data.kprobe_target, "aw"
.balign 8
.global kprobe_count_a
kprobe_count_a:
    .quad 0
.global kprobe_count_b
kprobe_count_b:
    .quad 0
.popsection
"#
);

extern "C" {
    fn kprobe_target_asm(a: u64, b: u64) -> u64;
    fn kprobe_target_leaf(x: u64) -> u64;
    fn kprobe_target_count();
    fn kprobe_target_loop(n: u64, m: u64, d: u64) -> u64;
    fn kprobe_target_regs_caller(x: u64) -> u64;
    static kprobe_count_a: AtomicU64;
    static kprobe_count_b: AtomicU64;
}

/// The same computation as the asm target, in Rust.
fn asm_expected(a: u64, b: u64) -> u64 {
    let r = if a >= b {
        1000u64.wrapping_add(a).wrapping_sub(b)
    } else {
        1000u64.wrapping_add(a).wrapping_add(b)
    };
    r.wrapping_mul(9)
}

/// What kprobe_target_loop computes: the sum n..1 (loop), 1000 more if m
/// is not 0 (jrcxz), then up to 4 increments stopping when the sum is d
/// (loopne), then up to 4 increments while it was even (loope).
fn loop_expected(n: u64, m: u64, d: u64) -> u64 {
    let mut rax = 0u64;
    let mut rcx = n;
    loop {
        rax = rax.wrapping_add(rcx);
        rcx -= 1;
        if rcx == 0 {
            break;
        }
    }
    if m != 0 {
        rax = rax.wrapping_add(1000);
    }
    for _ in 0..4 {
        rax = rax.wrapping_add(1);
        if rax == d {
            break;
        }
    }
    for _ in 0..4 {
        let even = rax & 1 == 0;
        rax = rax.wrapping_add(1);
        if !even {
            break;
        }
    }
    rax
}

/// A compiled target: a loop, a match, calls.
#[inline(never)]
pub fn kprobe_target_rust(n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        acc = match i % 4 {
            0 => acc.wrapping_add(i * 3),
            1 => acc ^ (i << 2),
            2 => acc.wrapping_mul(3) | 1,
            _ => kprobe_target_rust_leaf(acc),
        };
    }
    acc
}

#[inline(never)]
fn kprobe_target_rust_leaf(x: u64) -> u64 {
    core::hint::black_box(x.rotate_left(7).wrapping_add(11))
}

/// What the handlers saw at the first hit since [`reset`].
struct Seen {
    pre_hits: AtomicU64,
    post_hits: AtomicU64,
    pre: [AtomicU64; 9],
    post: [AtomicU64; 5],
}

static SEEN: Seen = Seen {
    pre_hits: AtomicU64::new(0),
    post_hits: AtomicU64::new(0),
    pre: [const { AtomicU64::new(0) }; 9],
    post: [const { AtomicU64::new(0) }; 5],
};

fn reset() {
    SEEN.pre_hits.store(0, Ordering::SeqCst);
    SEEN.post_hits.store(0, Ordering::SeqCst);
}

/// [rsp] of `regs`.
fn top_of_stack(regs: &PtRegs) -> u64 {
    // SAFETY: the interrupted kernel stack's top word.
    unsafe { core::ptr::read_volatile(regs.rsp as *const u64) }
}

fn record_pre(_: &Kprobe, regs: &mut PtRegs) -> bool {
    if SEEN.pre_hits.fetch_add(1, Ordering::SeqCst) == 0 {
        let v = [
            regs.rip,
            regs.rsp,
            regs.rdi,
            regs.rsi,
            regs.rbx,
            regs.r12,
            regs.rflags,
            top_of_stack(regs),
            regs.rcx,
        ];
        for (s, v) in SEEN.pre.iter().zip(v) {
            s.store(v, Ordering::SeqCst);
        }
        SEEN.pre[0].store(regs.rip, Ordering::SeqCst);
    }
    false
}

fn record_post(_: &Kprobe, regs: &mut PtRegs) {
    if SEEN.post_hits.fetch_add(1, Ordering::SeqCst) == 0 {
        let v = [
            regs.rip,
            regs.rsp,
            regs.rflags,
            top_of_stack(regs),
            regs.rcx,
        ];
        for (s, v) in SEEN.post.iter().zip(v) {
            s.store(v, Ordering::SeqCst);
        }
    }
}

/// The function's bytes as the kernel runs them now.
fn text_of(addr: u64, size: u32) -> Vec<u8> {
    crate::arch::kprobes::copy_text(addr, size as usize)
}

fn symbol(name: &str) -> Option<(u64, u32)> {
    crate::kallsyms::table()?
        .find(name)
        .map(|s| (s.addr, s.size))
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Emulate(e) => match e {
            Emulate::Nop => "nop",
            Emulate::Jmp(_) => "jmp",
            Emulate::Jcc { .. } => "jcc",
            Emulate::Call(_) => "call",
            Emulate::Ret { .. } => "ret",
            Emulate::Push(_) => "push",
            Emulate::Pop(_) => "pop",
            Emulate::Cli => "cli",
            Emulate::Sti => "sti",
            Emulate::Pushf => "pushf",
            Emulate::Popf => "popf",
            Emulate::Loop { op, .. } => match op {
                LoopOp::Loop => "loop",
                LoopOp::Loope => "loope",
                LoopOp::Loopne => "loopne",
                LoopOp::Jrcxz => "jrcxz",
            },
        },
        Kind::Step(StepFixup::Rip) => "step",
        Kind::Step(StepFixup::IndirectJmp) => "step-indirect-jmp",
        Kind::Step(StepFixup::IndirectCall) => "step-indirect-call",
    }
}

/// Checks the registers the handlers saw around the instruction at
/// `addr` against what the instruction does. None if they agree.
fn check_regs(insn: &kprobe_insn::ProbedInsn) -> Option<String> {
    let pre: Vec<u64> = SEEN.pre.iter().map(|a| a.load(Ordering::SeqCst)).collect();
    let post: Vec<u64> = SEEN.post.iter().map(|a| a.load(Ordering::SeqCst)).collect();
    let (rip0, rsp0, flags0, tos0) = (pre[0], pre[1], pre[6], pre[7]);
    let (rip1, rsp1, flags1, tos1) = (post[0], post[1], post[2], post[3]);
    let (rcx0, rcx1) = (pre[8], post[4]);
    let mut want_rcx = rcx1;
    let addr = insn.addr;
    let next = addr + insn.len as u64;
    let mut want_rip = next;
    let mut want_rsp = rsp0;
    match insn.kind {
        Kind::Emulate(e) => match e {
            Emulate::Jmp(t) => want_rip = t,
            Emulate::Jcc { cc, target } if kprobe_insn::cond_holds(cc, flags0) => want_rip = target,
            Emulate::Jcc { .. } => {}
            Emulate::Call(t) => {
                want_rip = t;
                want_rsp = rsp0 - 8;
            }
            Emulate::Ret { pop } => {
                want_rip = tos0;
                want_rsp = rsp0 + 8 + pop as u64;
            }
            Emulate::Push(_) | Emulate::Pushf => want_rsp = rsp0 - 8,
            Emulate::Pop(_) | Emulate::Popf => want_rsp = rsp0 + 8,
            Emulate::Loop { op, ecx, target } => {
                let (taken, rcx) = kprobe_insn::loop_step(op, ecx, rcx0, flags0);
                want_rcx = rcx;
                if taken {
                    want_rip = target;
                }
            }
            _ => {}
        },
        // A stepped instruction may change rsp itself (add rsp, leave).
        Kind::Step(StepFixup::Rip) => want_rsp = rsp1,
        Kind::Step(StepFixup::IndirectCall) => {
            want_rsp = rsp0 - 8;
            if tos1 != next {
                return Some(format!("return address {tos1:#x}, want {next:#x}"));
            }
            want_rip = rip1;
        }
        Kind::Step(StepFixup::IndirectJmp) => want_rip = rip1,
    }
    if rip0 != addr + 1 {
        return Some(format!("pre rip {rip0:#x}, want {:#x}", addr + 1));
    }
    if rip1 != want_rip || rsp1 != want_rsp {
        return Some(format!(
            "post rip {rip1:#x} rsp {rsp1:#x}, want {want_rip:#x} {want_rsp:#x}"
        ));
    }
    if rcx1 != want_rcx {
        return Some(format!("post rcx {rcx1:#x}, want {want_rcx:#x}"));
    }
    if flags1 & FLAG_TF != 0 {
        return Some(String::from("TF left set"));
    }
    None
}

/// Probes every boundary of one function, calling `run` (which returns
/// false on a wrong result) with each probe in place.
fn sweep(
    out: &mut String,
    name: &str,
    kinds: &mut Vec<(&'static str, u32)>,
    must_hit: bool,
    run: &dyn Fn() -> bool,
) -> bool {
    let Some((start, size)) = symbol(name) else {
        let _ = writeln!(out, "kprobe_test boundaries: {name}: no such symbol");
        return false;
    };
    let before = text_of(start, size);
    let offs = kprobe_insn::boundaries(&before);
    let (mut probed, mut hit, mut ftrace, mut bad) = (0, 0, 0u32, 0);
    for &off in &offs {
        let addr = start + off as u64;
        let kp = Arc::new(Kprobe::new(addr, Some(record_pre), Some(record_post), 0));
        match kprobes::register_kprobe(kp.clone()) {
            Ok(()) => {}
            Err(e) => {
                let _ = writeln!(out, "kprobe_test boundaries: {name}+{off:#x}: {}", e.name());
                bad += 1;
                continue;
            }
        }
        probed += 1;
        let on_ftrace = crate::trace::ftrace::record_index(addr).is_some();
        let insn = kprobe_insn::analyze(&before, start, addr).expect("registered, so it decodes");
        reset();
        let ok = run();
        kprobes::unregister_kprobe(&kp);
        let (pre, post) = (
            SEEN.pre_hits.load(Ordering::SeqCst),
            SEEN.post_hits.load(Ordering::SeqCst),
        );
        let mut why = None;
        if !ok {
            why = Some(String::from("wrong result"));
        } else if pre != post {
            why = Some(format!("{pre} pre-handler hits, {post} post-handler hits"));
        } else if pre == 0 && must_hit {
            why = Some(String::from("never hit"));
        } else if pre > 0 {
            why = check_regs(&insn);
        }
        if pre > 0 {
            hit += 1;
            ftrace += on_ftrace as u32;
            let k = if on_ftrace {
                "ftrace"
            } else {
                kind_name(insn.kind)
            };
            match kinds.iter_mut().find(|(n, _)| *n == k) {
                Some((_, c)) => *c += 1,
                None => kinds.push((k, 1)),
            }
            if insn.rip_disp_offset.is_some() {
                match kinds.iter_mut().find(|(n, _)| *n == "rip-relative") {
                    Some((_, c)) => *c += 1,
                    None => kinds.push(("rip-relative", 1)),
                }
            }
        }
        if let Some(why) = why {
            bad += 1;
            let _ = writeln!(
                out,
                "kprobe_test boundaries: {name}+{off:#x} ({}): {why}",
                kind_name(insn.kind)
            );
        }
    }
    let restored = text_of(start, size) == before;
    let _ = writeln!(
        out,
        "kprobe_test boundaries: {name}: {} boundaries, {probed} probed, {hit} hit, {ftrace} ftrace sites, {bad} bad, text {}",
        offs.len(),
        if restored { "restored" } else { "CHANGED" }
    );
    bad == 0 && restored && probed > 0
}

fn boundaries() -> String {
    let mut out = String::new();
    let mut kinds = Vec::new();
    // Both directions of the jb, and a sum that wraps to 0 for the jne,
    // so that every instruction runs.
    let args = [(5u64, 3u64), (3, 5), (1, u64::MAX - 1000)];
    let asm_ok = sweep(&mut out, "kprobe_target_asm", &mut kinds, true, &|| {
        args.iter()
            // SAFETY: an ordinary function following the System V ABI.
            .all(|&(a, b)| unsafe { kprobe_target_asm(a, b) } == asm_expected(a, b))
    });
    // Every branch of each loop taken and not taken: loopne stops early
    // for (3, 0, 8), jrcxz jumps for m = 0.
    let loop_args = [(3u64, 0u64, 8u64), (5, 7, 17), (1, 1, 0)];
    let loop_ok = sweep(&mut out, "kprobe_target_loop", &mut kinds, true, &|| {
        loop_args.iter().all(|&(n, m, d)| {
            // SAFETY: an ordinary function following the System V ABI.
            let got = unsafe { kprobe_target_loop(n, m, d) };
            got == loop_expected(n, m, d)
        })
    });
    let leaf_ok = sweep(&mut out, "kprobe_target_leaf", &mut kinds, true, &|| {
        // SAFETY: as above.
        unsafe { kprobe_target_leaf(7) == 21 }
    });
    let want = kprobe_target_rust(12);
    let rust_ok = sweep(
        &mut out,
        "kernel::test_kprobes::kprobe_target_rust",
        &mut kinds,
        false,
        &|| kprobe_target_rust(12) == want,
    );
    let want_leaf = kprobe_target_rust_leaf(5);
    let rust_leaf_ok = sweep(
        &mut out,
        "kernel::test_kprobes::kprobe_target_rust_leaf",
        &mut kinds,
        false,
        &|| kprobe_target_rust_leaf(5) == want_leaf,
    );
    kinds.sort();
    let _ = write!(out, "kprobe_test kinds:");
    for (k, n) in &kinds {
        let _ = write!(out, " {k}={n}");
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "kprobe_test boundaries: {}",
        if asm_ok && loop_ok && leaf_ok && rust_ok && rust_leaf_ok {
            "PASS"
        } else {
            "FAIL"
        }
    );
    out
}

/// `SYMBOL[+OFFSET]` to an address (offset in hex with 0x, or decimal).
fn parse_place(s: &str) -> Result<u64, Errno> {
    let (sym, off) = match s.rfind('+') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, "0"),
    };
    let off = match off.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => off.parse(),
    }
    .map_err(|_| Errno::EINVAL)?;
    if let Some(h) = sym.strip_prefix("0x") {
        let a = u64::from_str_radix(h, 16).map_err(|_| Errno::EINVAL)?;
        return Ok(a + off);
    }
    kprobes::kprobe_addr(sym, off)
}

fn register_once(place: &str) -> String {
    let r = parse_place(place).and_then(|addr| {
        let kp = Arc::new(Kprobe::new(addr, Some(record_pre), Some(record_post), 0));
        kprobes::register_kprobe(kp.clone())?;
        kprobes::unregister_kprobe(&kp);
        Ok(())
    });
    match r {
        Ok(()) => format!("kprobe_test register {place}: ok\n"),
        Err(e) => format!("kprobe_test register {place}: {}\n", e.name()),
    }
}

// ---------------------------------------------------------------------------
// The stress test.

static STRESS_STOP: AtomicBool = AtomicBool::new(false);
static STRESS_CALLS: AtomicU64 = AtomicU64::new(0);
static HITS_A: AtomicU64 = AtomicU64::new(0);
static HITS_A2: AtomicU64 = AtomicU64::new(0);
static HITS_B: AtomicU64 = AtomicU64::new(0);
/// Length of `lock inc qword ptr [rip + x]`.
const LOCK_INC_LEN: u64 = 8;

fn count_a(_: &Kprobe, _: &mut PtRegs) -> bool {
    HITS_A.fetch_add(1, Ordering::Relaxed);
    false
}

fn count_a2(_: &Kprobe, _: &mut PtRegs) -> bool {
    HITS_A2.fetch_add(1, Ordering::Relaxed);
    false
}

/// Counts the call here and skips the increment of B: every call counts
/// either in B or here.
fn count_b_skip(kp: &Kprobe, regs: &mut PtRegs) -> bool {
    HITS_B.fetch_add(1, Ordering::Relaxed);
    regs.rip = kp.addr + LOCK_INC_LEN;
    true
}

fn call_counted() {
    // SAFETY: an ordinary function with no arguments.
    unsafe { kprobe_target_count() };
    STRESS_CALLS.fetch_add(1, Ordering::Relaxed);
}

fn stress(ms: u64) -> String {
    let mut out = String::new();
    let Some((start, size)) = symbol("kprobe_target_count") else {
        return String::from("kprobe_test stress: no target\nkprobe_test stress: FAIL\n");
    };
    let before = text_of(start, size);
    // SAFETY: the counters are plain words in .data, used only as atomics.
    let (ca, cb) = unsafe { (&kprobe_count_a, &kprobe_count_b) };
    let (a0, b0) = (ca.load(Ordering::SeqCst), cb.load(Ordering::SeqCst));
    for c in [&STRESS_CALLS, &HITS_A, &HITS_A2, &HITS_B] {
        c.store(0, Ordering::SeqCst);
    }
    STRESS_STOP.store(false, Ordering::SeqCst);
    let ncpus = crate::arch::nr_cpus();
    let workers: Vec<_> = (1..ncpus)
        .map(|cpu| {
            crate::sched::spawn_on(cpu, "kprobe_stress", || {
                while !STRESS_STOP.load(Ordering::Relaxed) {
                    call_counted();
                }
            })
        })
        .collect();
    let (addr_a, addr_b) = (start, start + LOCK_INC_LEN);
    let end = crate::time::now_ns() + ms * 1_000_000;
    let (mut rounds, mut errors) = (0u64, 0u64);
    while crate::time::now_ns() < end {
        let a = Arc::new(Kprobe::new(addr_a, Some(count_a), None, 0));
        let a2 = Arc::new(Kprobe::new(addr_a, Some(count_a2), None, 0));
        let b = Arc::new(Kprobe::new(addr_b, Some(count_b_skip), None, 0));
        let mut ok = kprobes::register_kprobe(a.clone()).is_ok();
        call_counted();
        ok &= kprobes::register_kprobe(b.clone()).is_ok();
        // A second probe on A: an aggregate, then back to one.
        ok &= kprobes::register_kprobe(a2.clone()).is_ok();
        call_counted();
        kprobes::unregister_kprobe(&a);
        ok &= kprobes::disable_kprobe(&b).is_ok();
        ok &= kprobes::enable_kprobe(&b).is_ok();
        kprobes::unregister_kprobe(&b);
        call_counted();
        kprobes::unregister_kprobe(&a2);
        if !ok {
            errors += 1;
        }
        rounds += 1;
    }
    STRESS_STOP.store(true, Ordering::SeqCst);
    for w in workers {
        w.join();
    }
    let calls = STRESS_CALLS.load(Ordering::SeqCst);
    let a = ca.load(Ordering::SeqCst) - a0;
    let b = cb.load(Ordering::SeqCst) - b0;
    let (ha, ha2, hb) = (
        HITS_A.load(Ordering::SeqCst),
        HITS_A2.load(Ordering::SeqCst),
        HITS_B.load(Ordering::SeqCst),
    );
    let restored = text_of(start, size) == before;
    let ok = errors == 0
        && a == calls
        && b + hb == calls
        && ha > 0
        && ha2 > 0
        && hb > 0
        && ha <= calls
        && restored;
    let _ = writeln!(
        out,
        "kprobe_test stress: {ncpus} cpus, {rounds} rounds, {errors} errors, {calls} calls, A ran {a}, B ran {b}, probe A hits {ha}, probe A2 hits {ha2}, probe B hits {hb} (B + hits {}), text {}",
        b + hb,
        if restored { "restored" } else { "CHANGED" }
    );
    let _ = writeln!(
        out,
        "kprobe_test stress: {}",
        if ok { "PASS" } else { "FAIL" }
    );
    out
}

// ---------------------------------------------------------------------------
// Kretprobes.

/// Return values and return addresses seen, in order.
static RET_SEEN: spin::Mutex<Vec<(u64, u64)>> = spin::Mutex::new(Vec::new());
/// First arguments and return addresses seen by the entry handler.
static ENTRY_SEEN: spin::Mutex<Vec<(u64, u64)>> = spin::Mutex::new(Vec::new());

fn ret_handler(_: &kprobes::Kretprobe, regs: &mut PtRegs) {
    RET_SEEN.lock().push((regs.rax, regs.rip));
}

fn entry_handler(_: &kprobes::Kretprobe, regs: &mut PtRegs) -> bool {
    // At the function's entry the return address is on top of the stack.
    ENTRY_SEEN.lock().push((regs.rdi, top_of_stack(regs)));
    false
}

/// A kretprobe on `name` while `calls` runs the function: the values and
/// arguments seen must be `want` and `args`, the return addresses in this
/// function's callers.
fn kretprobe_case(out: &mut String, name: &str, args: &[u64], call: &dyn Fn(u64) -> u64) -> bool {
    let Some((addr, size)) = symbol(name) else {
        let _ = writeln!(out, "kprobe_test kretprobe: {name}: no such symbol");
        return false;
    };
    let before = text_of(addr, size);
    RET_SEEN.lock().clear();
    ENTRY_SEEN.lock().clear();
    let rp = Arc::new(kprobes::Kretprobe::new(
        addr,
        Some(ret_handler),
        Some(entry_handler),
        0,
        0,
    ));
    if let Err(e) = kprobes::register_kretprobe(rp.clone()) {
        let _ = writeln!(out, "kprobe_test kretprobe: {name}: {}", e.name());
        return false;
    }
    // The entry: through ftrace where the function has a function-tracing
    // site (its first instruction in the fentry build, after the prologue
    // in the mcount build), the site calling ftrace_regs_caller and no
    // int3 written; otherwise an int3 on the first instruction.
    let site = crate::trace::ftrace::records()
        .iter()
        .map(|r| r.ip)
        .find(|&ip| ip >= addr && ip < addr + u64::from(size));
    let on_ftrace = site.is_some();
    let entry_ok = rp.kprobe().map(|kp| kp.addr) == Some(site.unwrap_or(addr))
        && match site {
            Some(ip) => calls_regs_caller(ip) && text_of(addr, 1) != [0xcc],
            None => text_of(addr, 1) == [0xcc],
        };
    let want: Vec<u64> = args.iter().map(|&a| call(a)).collect();
    kprobes::unregister_kretprobe(&rp);
    // Not watched any more.
    let _ = call(args[0]);
    let seen = core::mem::take(&mut *RET_SEEN.lock());
    let entries = core::mem::take(&mut *ENTRY_SEEN.lock());
    let values: Vec<u64> = seen.iter().map(|s| s.0).collect();
    // Each return went where its call came from.
    let callers_ok = seen.len() == entries.len()
        && seen
            .iter()
            .zip(&entries)
            .all(|(&(_, rip), &(_, ret))| rip == ret);
    let entries: Vec<u64> = entries.iter().map(|e| e.0).collect();
    let restored = text_of(addr, size) == before;
    let ok = values == want
        && entries == args
        && callers_ok
        && restored
        && entry_ok
        && rp.nmissed.load(Ordering::Relaxed) == 0;
    let _ = writeln!(
        out,
        "kprobe_test kretprobe: {name}: entry {} {}, {} calls, {} returns seen, values {}, entries {}, return addresses {}, {} missed, text {}",
        if on_ftrace { "ftrace" } else { "int3" },
        if entry_ok { "ok" } else { "WRONG" },
        args.len(),
        seen.len(),
        if values == want { "ok" } else { "WRONG" },
        if entries == args { "ok" } else { "WRONG" },
        if callers_ok { "ok" } else { "WRONG" },
        rp.nmissed.load(Ordering::Relaxed),
        if restored { "restored" } else { "CHANGED" }
    );
    ok
}

fn kretprobe() -> String {
    let mut out = String::new();
    let asm_ok = kretprobe_case(&mut out, "kprobe_target_asm", &[5, 3, 100, 7, 0], &|a| {
        // SAFETY: an ordinary function following the System V ABI.
        unsafe { kprobe_target_asm(a, 4) }
    });
    let rust_ok = kretprobe_case(
        &mut out,
        "kernel::test_kprobes::kprobe_target_rust",
        &[1, 2, 3, 4, 5, 6, 7, 8],
        &kprobe_target_rust,
    );
    let _ = writeln!(
        out,
        "kprobe_test kretprobe: {}",
        if asm_ok && rust_ok { "PASS" } else { "FAIL" }
    );
    out
}

// ---------------------------------------------------------------------------
// A probe on a function-tracing call site (through ftrace_regs_caller).

/// True if the site at `site` is `call ftrace_regs_caller` (no int3).
fn calls_regs_caller(site: u64) -> bool {
    let b = text_of(site, 5);
    let rel = i32::from_le_bytes([b[1], b[2], b[3], b[4]]);
    b[0] == 0xe8
        && (site + 5).wrapping_add_signed(i64::from(rel))
            == crate::arch::ftrace::ftrace_regs_caller_addr()
}

fn ftrace_probe() -> String {
    let mut out = String::new();
    let name = "kernel::test_kprobes::kprobe_target_rust";
    let Some((start, size)) = symbol(name) else {
        return format!("kprobe_test ftrace: no symbol {name}\nkprobe_test ftrace: FAIL\n");
    };
    let recs = crate::trace::ftrace::records();
    let Some(site) = recs
        .iter()
        .map(|r| r.ip)
        .find(|&ip| ip >= start && ip < start + u64::from(size))
    else {
        return format!("kprobe_test ftrace: {name} has no call site\nkprobe_test ftrace: FAIL\n");
    };
    let want = kprobe_target_rust(9);
    let kp = Arc::new(Kprobe::new(site, Some(record_pre), Some(record_post), 0));
    if let Err(e) = kprobes::register_kprobe(kp.clone()) {
        return format!(
            "kprobe_test ftrace: {}\nkprobe_test ftrace: FAIL\n",
            e.name()
        );
    }
    reset();
    let results_ok = (0..5).all(|_| kprobe_target_rust(9) == want);
    let calls_ok = calls_regs_caller(site);
    let check = crate::trace::ftrace::ftrace_check_sites();
    kprobes::unregister_kprobe(&kp);
    let (pre, post) = (
        SEEN.pre_hits.load(Ordering::SeqCst),
        SEEN.post_hits.load(Ordering::SeqCst),
    );
    // The probe sits on the site as a NOP (it calls a tracer's trampoline
    // when one traces the function).
    let insn = kprobe_insn::analyze(&crate::arch::ftrace::NOP5, site, site);
    let regs_ok = insn.map(|i| check_regs(&i)).ok().flatten();
    let ok = results_ok && calls_ok && pre == 5 && post == 5 && regs_ok.is_none() && check.bad == 0;
    let _ = writeln!(
        out,
        "kprobe_test ftrace: {}: site {}, 5 calls, {pre} pre-handler hits, {post} post-handler hits, results {}, registers {}, {} sites bad",
        crate::kallsyms::describe(site),
        if calls_ok {
            "calls ftrace_regs_caller"
        } else {
            "WRONG"
        },
        if results_ok { "ok" } else { "WRONG" },
        regs_ok.as_deref().unwrap_or("ok"),
        check.bad
    );
    let _ = writeln!(
        out,
        "kprobe_test ftrace: {}",
        if ok { "PASS" } else { "FAIL" }
    );
    out
}

fn text(name: &str) -> String {
    match symbol(name) {
        Some((addr, size)) => {
            let mut s = format!("kprobe_test text {name} {addr:#x} ");
            for b in text_of(addr, size) {
                let _ = write!(s, "{b:02x}");
            }
            s.push('\n');
            s
        }
        None => format!("kprobe_test text {name}: no such symbol\n"),
    }
}

/// The shell's `kprobe_test`.
pub fn command(args: &[String]) -> String {
    const USAGE: &str =
        "usage: kprobe_test boundaries|register SYMBOL[+OFFSET]|stress MS|kretprobe|ftrace|regs N|text SYMBOL|stats\n";
    match (args.first().map(String::as_str), args.get(1)) {
        (Some("boundaries"), None) => boundaries(),
        (Some("register"), Some(p)) => register_once(p),
        (Some("stress"), Some(ms)) => match ms.parse::<u64>() {
            Ok(ms) if ms > 0 => stress(ms),
            _ => String::from(USAGE),
        },
        (Some("text"), Some(name)) => text(name),
        (Some("kretprobe"), None) => kretprobe(),
        (Some("ftrace"), None) => ftrace_probe(),
        (Some("regs"), Some(n)) => match n.parse::<u64>() {
            Ok(n) => {
                // SAFETY: an ordinary function following the System V ABI.
                let sum: u64 = (0..n)
                    .map(|i| unsafe { kprobe_target_regs_caller(i) })
                    .sum();
                format!("kprobe_test regs: {n} calls, sum {sum}\n")
            }
            _ => String::from(USAGE),
        },
        (Some("stats"), None) => {
            let (hits, reentered, sites, slots) = kprobes::stats();
            format!(
                "kprobe_test stats: {hits} hits, {reentered} reentered, {sites} probed addresses, {slots} slots in use\n"
            )
        }
        _ => String::from(USAGE),
    }
}
