//! The x86 side of ftrace (Linux: arch/x86/kernel/ftrace.c, ftrace_64.S).
//!
//! Every traceable function has a 5-byte call site: in the default build the
//! compiler puts `call mcount` right after the function's prologue
//! (`-Z instrument-mcount`); in the fentry-style build it leaves the NOP
//! `0f 1f 44 00 08` at the function's first byte (`-Z patchable-function-entry=5`).
//! At boot every site becomes the NOP `0f 1f 44 00 00`. Tracing a function
//! means patching its site to `call ftrace_caller`.
//!
//! `ftrace_caller` first tests the op's gate (`tracing_on` for the tracers)
//! and returns at once if it is closed; otherwise it saves what must
//! survive, finds the call site (`ip`, the return address minus 5) and the
//! slot holding the traced function's own return address (the *parent*;
//! function_graph rewrites that slot), and calls
//! `function_trace_op->func(ip, parent_slot, op)`. Loading the op and its
//! function through one pointer keeps the pair consistent while it changes.
//!
//! The generic side (`trace::ftrace`) decides what each site must become;
//! this file only knows the bytes: it checks that a site holds what its
//! record says ([`ftrace_make_nop`] at boot, the first pass of
//! [`ftrace_replace_code`]) and writes the new instruction, live sites
//! through the int3 protocol of `text_poke`.
use alloc::vec::Vec;
use core::arch::global_asm;

use tracer::ftrace::FtraceUpdate;

use super::text_poke::{self, Emulate, PokeSite, TextPoke};

/// The 5-byte NOP every site holds while not traced (Linux: x86_nops[5]).
pub const NOP5: [u8; 5] = [0x0f, 0x1f, 0x44, 0x00, 0x00];
/// Size of a call site (Linux: MCOUNT_INSN_SIZE).
pub const MCOUNT_INSN_SIZE: u64 = 5;

/// The instrumentation this kernel was built with.
pub const MODE: &str = if cfg!(ktrace_fentry) {
    "fentry"
} else {
    "mcount"
};

/// True if the traced function has set up its frame when `ftrace_caller`
/// runs (mcount: the call comes after the prologue), so that a frame
/// pointer walk from a callback passes through the traced function's own
/// return address. With fentry the call is the first instruction: the walk
/// goes from `ftrace_caller`'s frame straight to the caller's, and the
/// traced function's return address is only in `parent_slot` (Linux's
/// fentry trampoline builds a frame for it instead).
pub const FRAME_SET_UP_AT_CALL: bool = !cfg!(ktrace_fentry);

// `mcount` itself: until sites are patched, a call to it just returns, like
// Linux's __fentry__ with dynamic ftrace.
global_asm!(
    r#"
.pushsection .text.mcount, "ax"
.global mcount
mcount:
    ret
.popsection
"#
);

// mcount mode: the compiler calls mcount like any function, after
// `push rbp; mov rbp, rsp`, so caller-saved registers hold nothing live and the
// parent's return address is at the traced function's rbp + 8.
#[cfg(not(ktrace_fentry))]
global_asm!(
    r#"
.pushsection .text.ftrace_caller, "ax"
.global ftrace_caller
.global ftrace_caller_end
ftrace_caller:
    mov rdx, [rip + function_trace_op]
    mov rax, [rdx + 8]               /* op->gate */
    test rax, rax
    jz 1f
    cmp byte ptr [rax], 0
    je 2f                            /* gate closed: not recording */
1:  push rbp
    mov rbp, rsp
    mov rdi, [rbp + 8]
    sub rdi, 5                       /* ip: the call site */
    mov rsi, [rbp]                   /* the traced function's frame pointer */
    add rsi, 8                       /* parent_slot: its return address */
    call [rdx]                       /* op->func(ip, parent_slot, op) */
    pop rbp
2:  ret
ftrace_caller_end:
.popsection
"#
);

// fentry mode: the site is the function's first instruction, before its
// prologue, so the argument registers (and rax, used by variadic calls) are
// live and must be kept, as Linux's save_mcount_regs does; r10 and r11 hold
// nothing at a function's first byte. Seven pushes after rbp keep the stack
// 16-byte aligned for the call. The parent's return address is just above
// our own return address.
#[cfg(ktrace_fentry)]
global_asm!(
    r#"
.pushsection .text.ftrace_caller, "ax"
.global ftrace_caller
.global ftrace_caller_end
ftrace_caller:
    /* r10 and r11 carry no argument at a function's entry (Linux's
       ftrace_caller does not save them either): test the gate with them
       before saving anything. */
    mov r11, [rip + function_trace_op]
    mov r10, [r11 + 8]               /* op->gate */
    test r10, r10
    jz 1f
    cmp byte ptr [r10], 0
    je 2f                            /* gate closed: not recording */
1:  push rbp
    mov rbp, rsp
    push rax
    push rcx
    push rdx
    push rsi
    push rdi
    push r8
    push r9
    mov rdi, [rbp + 8]
    sub rdi, 5                       /* ip: the call site = function start */
    lea rsi, [rbp + 16]              /* parent_slot */
    mov rdx, r11                     /* the op whose gate we tested */
    call [rdx]                       /* op->func(ip, parent_slot, op) */
    pop r9
    pop r8
    pop rdi
    pop rsi
    pop rdx
    pop rcx
    pop rax
    pop rbp
2:  ret
ftrace_caller_end:
.popsection
"#
);

// The registers-saving trampoline (Linux: ftrace_regs_caller in
// ftrace_64.S), for the sites of an ops that needs them (kprobes on a call
// site). It builds a complete PtRegs as an exception would (rip: the return
// address into the traced function; rsp: the stack pointer at the call
// site), calls `ftrace_regs_handler(ip, parent_slot, &mut regs)` (or,
// while the registers' user is the only ftrace user, its hook
// `ftrace_regs_direct(ip, &mut regs)` at once), then
// restores every general register from it and returns to `regs.rip`, so a
// handler may change them. `ftrace_caller` is not touched: the other sites
// keep calling it. The parent slot is found as `ftrace_caller` finds it.
macro_rules! ftrace_regs_caller_asm {
    ($parent_slot:literal) => {
        concat!(
            r#"
.pushsection .text.ftrace_regs_caller, "ax"
.global ftrace_regs_caller
.global ftrace_regs_caller_end
ftrace_regs_caller:
    push rbp
    mov rbp, rsp                     /* [rbp]: caller's rbp, [rbp+8]: site + 5 */
    sub rsp, 176                     /* sizeof(PtRegs) */
    and rsp, -16
    mov [rsp + 0], r15
    mov [rsp + 8], r14
    mov [rsp + 16], r13
    mov [rsp + 24], r12
    mov [rsp + 40], rbx
    mov [rsp + 48], r11
    mov [rsp + 56], r10
    mov [rsp + 64], r9
    mov [rsp + 72], r8
    mov [rsp + 80], rax
    mov [rsp + 88], rcx
    mov [rsp + 96], rdx
    mov [rsp + 104], rsi
    mov [rsp + 112], rdi
    mov rax, [rbp]
    mov [rsp + 32], rax              /* rbp */
    pushfq
    pop rax
    mov [rsp + 152], rax             /* rflags */
    mov qword ptr [rsp + 120], 0     /* vector */
    mov qword ptr [rsp + 128], 0     /* error code */
    mov rax, [rbp + 8]
    mov [rsp + 136], rax             /* rip: where the site returns */
    mov qword ptr [rsp + 144], 0x08  /* cs */
    lea rax, [rbp + 16]
    mov [rsp + 160], rax             /* rsp at the call site */
    mov qword ptr [rsp + 168], 0x10  /* ss */
    mov rdi, [rbp + 8]
    sub rdi, 5                       /* ip: the call site */
"#,
            $parent_slot,
            r#"
    mov rdx, rsp                     /* &mut PtRegs */
    mov rax, [rip + ftrace_regs_direct]
    test rax, rax
    jz 5f
    mov rsi, rdx                     /* the hook alone: hook(ip, regs) */
    call rax
    jmp 6f
5:  call ftrace_regs_handler
6:
    mov rax, [rsp + 136]
    mov [rbp + 8], rax               /* return to regs.rip */
    mov rax, [rsp + 32]
    mov [rbp], rax                   /* regs.rbp, popped below */
    mov r15, [rsp + 0]
    mov r14, [rsp + 8]
    mov r13, [rsp + 16]
    mov r12, [rsp + 24]
    mov rbx, [rsp + 40]
    mov r11, [rsp + 48]
    mov r10, [rsp + 56]
    mov r9, [rsp + 64]
    mov r8, [rsp + 72]
    mov rcx, [rsp + 88]
    mov rdx, [rsp + 96]
    mov rsi, [rsp + 104]
    mov rdi, [rsp + 112]
    mov rax, [rsp + 80]
    mov rsp, rbp
    pop rbp
    ret
ftrace_regs_caller_end:
.popsection
"#
        )
    };
}

// mcount: the traced function's frame is set up; its return address is
// above its rbp (the caller's rbp saved at [rbp]).
#[cfg(not(ktrace_fentry))]
global_asm!(ftrace_regs_caller_asm!(
    "    mov rsi, [rbp]\n    add rsi, 8                       /* parent_slot */\n"
));

// fentry: the traced function's return address is just above ours.
#[cfg(ktrace_fentry)]
global_asm!(ftrace_regs_caller_asm!(
    "    lea rsi, [rbp + 16]              /* parent_slot */\n"
));

extern "C" {
    fn ftrace_caller();
    fn ftrace_regs_caller();
    fn mcount();
}

/// The address the sites of an ops that saves the registers call (Linux:
/// FTRACE_REGS_ADDR).
pub fn ftrace_regs_caller_addr() -> u64 {
    ftrace_regs_caller as *const () as u64
}

/// The address sites call while traced (Linux: FTRACE_ADDR).
pub fn ftrace_caller_addr() -> u64 {
    ftrace_caller as *const () as u64
}

/// The address the compiler's `call mcount` sites target (Linux: MCOUNT_ADDR).
pub fn mcount_addr() -> u64 {
    mcount as *const () as u64
}

/// The NOP a site holds while not traced (Linux: ftrace_nop_replace).
pub fn ftrace_nop_replace() -> [u8; 5] {
    NOP5
}

/// `call target` encoded at `ip` (Linux: ftrace_call_replace, with
/// text_gen_insn(CALL_INSN_OPCODE, ...)). None if the target is out of
/// rel32 range.
pub fn ftrace_call_replace(ip: u64, target: u64) -> Option<[u8; 5]> {
    let rel = (target as i64).wrapping_sub(ip as i64 + 5);
    let rel = i32::try_from(rel).ok()?;
    let r = rel.to_le_bytes();
    Some([0xe8, r[0], r[1], r[2], r[3]])
}

/// The bytes a site holds in the image, before boot conversion: `call mcount`,
/// or in the fentry-style build the NOP (recordmcount already rewrote the
/// compiler's `NOP5_PATCHABLE` of every recorded site into [`NOP5`]).
fn compiler_site_bytes(ip: u64) -> Option<[u8; 5]> {
    if cfg!(ktrace_fentry) {
        Some(NOP5)
    } else {
        ftrace_call_replace(ip, mcount_addr())
    }
}

/// A site that does not hold what it should: nothing was written to it, and
/// the caller must stop all patching (Linux: the report of ftrace_bug).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FtraceFault {
    pub ip: u64,
    /// What the site should hold ([0; 5] when no instruction could be
    /// encoded: a call target out of rel32 range).
    pub expected: [u8; 5],
    pub actual: [u8; 5],
}

/// Reads the site and compares it with `old` (Linux: ftrace_verify_code).
fn ftrace_verify_code(poke: &TextPoke, ip: u64, old: Option<[u8; 5]>) -> Result<(), FtraceFault> {
    let actual: [u8; 5] = poke.read(ip);
    match old {
        Some(expected) if actual == expected => Ok(()),
        _ => Err(FtraceFault {
            ip,
            expected: old.unwrap_or([0; 5]),
            actual,
        }),
    }
}

/// Takes the text lock for a series of code changes (Linux:
/// ftrace_arch_code_modify_prepare, which takes text_mutex).
pub fn ftrace_arch_code_modify_prepare() -> TextPoke {
    TextPoke::lock()
}

/// Ends a series of direct (boot-time) writes: drops the text lock and makes
/// this CPU forget any prefetched bytes (Linux:
/// ftrace_arch_code_modify_post_process).
pub fn ftrace_arch_code_modify_post_process(poke: TextPoke) {
    drop(poke);
    text_poke::sync_core();
}

/// Turns the compiler's site at `ip` into the NOP, with a plain write: only
/// for boot, while no other CPU runs (Linux: ftrace_init_nop ->
/// ftrace_make_nop(rec, MCOUNT_ADDR) -> ftrace_modify_code_direct). The
/// site must hold the compiler's instruction (`call mcount`, or the NOP in
/// the fentry-style build); otherwise nothing is written. Inlined into
/// ftrace_init's loop: whether the compiler did so on its own changed with
/// unrelated code in the crate (14 instructions per site at boot).
#[inline]
pub fn ftrace_make_nop(poke: &mut TextPoke, ip: u64) -> Result<(), FtraceFault> {
    ftrace_verify_code(poke, ip, compiler_site_bytes(ip))?;
    poke.write(ip, &ftrace_nop_replace());
    Ok(())
}

/// One site of a live update, as the generic side decided it: the site at
/// `ip` calls `addr_curr` or holds the NOP now, and `update` says what it
/// must become (calls go to `addr_new`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FtraceSite {
    pub ip: u64,
    pub update: FtraceUpdate,
    pub addr_curr: u64,
    pub addr_new: u64,
}

/// The bytes a site must hold before its update (Linux: the first switch of
/// x86's ftrace_replace_code).
fn ftrace_old_insn(s: &FtraceSite) -> Option<[u8; 5]> {
    match s.update {
        FtraceUpdate::MakeCall => Some(ftrace_nop_replace()),
        FtraceUpdate::MakeNop | FtraceUpdate::ModifyCall => ftrace_call_replace(s.ip, s.addr_curr),
        FtraceUpdate::Ignore => None,
    }
}

/// The site's new instruction, and what a CPU that meets its int3 in
/// between must do instead (Linux: ftrace_make_call / ftrace_make_nop /
/// ftrace_modify_call, queued with text_poke_queue).
fn ftrace_new_insn(s: &FtraceSite) -> Option<PokeSite> {
    let (new, emulate) = match s.update {
        FtraceUpdate::MakeCall | FtraceUpdate::ModifyCall => (
            ftrace_call_replace(s.ip, s.addr_new)?,
            Emulate::Call(s.addr_new),
        ),
        FtraceUpdate::MakeNop => (ftrace_nop_replace(), Emulate::Jump(s.ip + MCOUNT_INSN_SIZE)),
        FtraceUpdate::Ignore => return None,
    };
    Some(PokeSite {
        addr: s.ip,
        new,
        emulate,
    })
}

/// Applies the generic side's decisions to the code, while every CPU may be
/// running it (Linux: arch/x86's ftrace_replace_code). `sites` is sorted by
/// address, without [`FtraceUpdate::Ignore`]. First every site is checked
/// against the bytes its record says it holds; if one differs nothing is
/// written. Then all are patched in one int3 batch (Linux: text_poke_queue,
/// text_poke_finish). Returns how many sites were written.
pub fn ftrace_replace_code(sites: &[FtraceSite]) -> Result<usize, FtraceFault> {
    let mut poke = TextPoke::lock();
    let mut batch = Vec::with_capacity(sites.len());
    for s in sites {
        ftrace_verify_code(&poke, s.ip, ftrace_old_insn(s))?;
        // A call whose target is out of range cannot be encoded.
        let p = ftrace_new_insn(s).ok_or(FtraceFault {
            ip: s.ip,
            expected: [0; 5],
            actual: poke.read(s.ip),
        })?;
        batch.push(p);
    }
    let n = batch.len();
    text_poke::text_poke_bp_batch(&mut poke, batch);
    Ok(n)
}

/// What a site holds now, read back from the text (for ftrace_check).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FtraceInsn {
    /// The NOP.
    Nop,
    /// `call addr`.
    Call(u64),
    /// Anything else.
    Other,
}

/// Reads the site at `ip` and says what it holds, with its bytes.
pub fn ftrace_read_site(ip: u64) -> (FtraceInsn, [u8; 5]) {
    // SAFETY: a recorded site is 5 bytes of mapped kernel text.
    let b = unsafe { core::ptr::read_unaligned(ip as *const [u8; 5]) };
    let insn = if b == NOP5 {
        FtraceInsn::Nop
    } else if b[0] == 0xe8 {
        let rel = i32::from_le_bytes([b[1], b[2], b[3], b[4]]);
        FtraceInsn::Call((ip + MCOUNT_INSN_SIZE).wrapping_add_signed(rel as i64))
    } else {
        FtraceInsn::Other
    };
    (insn, b)
}
