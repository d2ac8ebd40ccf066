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
use core::arch::global_asm;

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

extern "C" {
    fn ftrace_caller();
    fn mcount();
}

/// The address sites call while traced (Linux: FTRACE_ADDR).
pub fn ftrace_caller_addr() -> u64 {
    ftrace_caller as *const () as u64
}

/// The address the compiler's `call mcount` sites target (Linux: MCOUNT_ADDR).
pub fn mcount_addr() -> u64 {
    mcount as *const () as u64
}

/// `call target` encoded at `ip` (Linux: text_gen_insn(CALL_INSN_OPCODE, ...)).
/// None if the target is out of rel32 range.
pub fn ftrace_call_replace(ip: u64, target: u64) -> Option<[u8; 5]> {
    let rel = (target as i64).wrapping_sub(ip as i64 + 5);
    let rel = i32::try_from(rel).ok()?;
    let r = rel.to_le_bytes();
    Some([0xe8, r[0], r[1], r[2], r[3]])
}

/// The bytes a site holds in the image, before boot conversion: `call mcount`,
/// or in the fentry-style build the NOP (recordmcount already rewrote the
/// compiler's `NOP5_PATCHABLE` of every recorded site into [`NOP5`]).
pub fn compiler_site_bytes(ip: u64) -> Option<[u8; 5]> {
    if cfg!(ktrace_fentry) {
        Some(NOP5)
    } else {
        ftrace_call_replace(ip, mcount_addr())
    }
}
