//! The x86 side of function_graph: hijacking a return address and coming
//! back (Linux: `return_to_handler` in arch/x86/kernel/ftrace_64.S, and
//! the stack layout `prepare_ftrace_return` in arch/x86/kernel/ftrace.c
//! relies on). The generic part is kernel/src/trace/fgraph.rs.
//!
//! Entry. `ftrace_caller` calls the graph user's callback (the core's
//! `ftrace_graph_func`, or the function_graph tracer's own) with
//! `parent_slot`, the address of the stack slot that holds the traced
//! function's return address. In the mcount build that slot is at the
//! traced function's frame pointer + 8 (the `call mcount` comes after
//! `push rbp; mov rbp, rsp`); in the fentry build it is just above
//! `ftrace_caller`'s own return address (nothing is pushed yet at the
//! function's first byte). Either way the function's `ret` will later pop
//! that slot. The generic side saves the old value on the task's shadow
//! stack and, if the tracer wants the call, writes [`return_to_handler_addr`]
//! into the slot.
//!
//! Exit. The function's `ret` jumps to `return_to_handler` with the stack
//! pointer just above the slot. The return value is in rax (and rdx for
//! 128-bit values; this kernel has no SSE), every other caller-saved
//! register is dead. `return_to_handler` saves rax/rdx (the first push
//! lands in the slot itself, which is no longer needed), calls the generic
//! `ftrace_return_to_handler(slot)` (which records the exit, pops the frame
//! and returns the real return address), restores rax/rdx and jumps to
//! the real caller, as Linux's does (`jmp *%rdi`): the stack pointer ends
//! exactly where the function's own `ret` would have left it.
//!
//! Like Linux's assembly, this file names the generic function it calls by
//! its symbol: arch code does not import the tracing modules.
use core::arch::global_asm;

global_asm!(
    r#"
.pushsection .text.return_to_handler, "ax"
.global return_to_handler
.type return_to_handler, @function
return_to_handler:
    /* LAB 4 BEGIN: return_to_handler (keep rax/rdx, call ftrace_return_to_handler, jump to the real caller) */
    /* LAB 4 STUB: ud2                              # lab 4: return_to_handler is not written yet */
    push rax                         /* the return value, into the slot */
    push rdx                         /* rsp is 16-byte aligned again */
    lea rdi, [rsp + 8]               /* retp: the slot */
    call ftrace_return_to_handler    /* rax = the real return address */
    mov rdi, rax
    pop rdx
    pop rax
    jmp rdi                          /* to the real caller */
    /* LAB 4 END */
.size return_to_handler, . - return_to_handler
.popsection
"#,
);

// The kretprobes' return (Linux: `arch_rethook_trampoline` in
// arch/x86/kernel/rethook.c): a function whose return a kretprobe
// hijacked returns here, with the stack pointer just above its slot. It
// saves every register as a `PtRegs` (the first word lands in the slot, to
// be the real return address at the end), so that the handler sees what
// the function left: the return value in rax/rdx and, in rbx, rbp and
// r12-r15, the caller's values (the callee-saved registers the function
// restored). `rethook_trampoline_handler(regs)` runs the handler, pops the
// frame and returns the real return address; the registers (as the
// handler left them) are restored and `ret` goes to the caller with the
// stack pointer where the function's own `ret` would have left it.
// function_graph's `return_to_handler` saves only rax/rdx: its returns pay
// nothing for this.
global_asm!(concat!(
    r#"
.pushsection .text.return_to_handler, "ax"
.global rethook_trampoline
.type rethook_trampoline, @function
rethook_trampoline:
    sub rsp, 8                       /* the slot: the real return address at the end */
    push 0                           /* ss */
    push 0                           /* rsp (the handler sets it) */
    pushfq                           /* rflags */
    push 0                           /* cs (the handler sets it) */
    push 0                           /* rip (the handler sets it) */
    push 0                           /* error_code */
    push 0                           /* vector */
"#,
    super::entry::push_gprs!(),
    r#"    mov rdi, rsp                     /* &PtRegs; the slot is just above it */
    sub rsp, 8                       /* rsp 16-byte aligned for the call */
    call rethook_trampoline_handler  /* rax = the real return address */
    add rsp, 8
    mov [rsp + 22 * 8], rax          /* into the slot */
"#,
    super::entry::pop_gprs!(),
    r#"    add rsp, 4 * 8                   /* vector, error_code, rip, cs */
    popfq
    add rsp, 2 * 8                   /* rsp, ss */
    ret                              /* to the real caller */
.size rethook_trampoline, . - rethook_trampoline
.popsection
"#,
));

extern "C" {
    fn return_to_handler();
    fn rethook_trampoline();
}

/// The address traced functions return to while hijacked.
#[inline(always)]
pub fn return_to_handler_addr() -> u64 {
    return_to_handler as *const () as u64
}

/// The address functions return to while a kretprobe hijacked their
/// return.
#[inline(always)]
pub fn rethook_trampoline_addr() -> u64 {
    rethook_trampoline as *const () as u64
}

/// The addresses a hijacked return address is replaced by, for unwinders:
/// function_graph's, then the kretprobes'.
#[inline(always)]
pub fn return_trampolines() -> [u64; 2] {
    [return_to_handler_addr(), rethook_trampoline_addr()]
}

/// True if `addr` is `return_to_handler` or `rethook_trampoline`: a return
/// address that function_graph or a kretprobe replaced. Two compares, each
/// with the address as an immediate (a range test of the two takes one
/// more instruction: the difference needs a copy, a subtraction and the
/// address in a register).
#[inline(always)]
pub fn is_return_trampoline(addr: u64) -> bool {
    addr == return_to_handler_addr() || addr == rethook_trampoline_addr()
}

/// True if `slot` can be a return-address slot on a kernel stack: a
/// kernel (higher-half) address, 8-byte aligned (Linux's
/// skip_ftrace_return() test).
///
/// One test for both: rotated right by 3, the alignment bits become the
/// top three (zero if aligned) and the 17 bits 63..47 (all ones in the
/// higher half) the next ones.
#[inline(always)]
pub fn valid_return_slot(slot: u64) -> bool {
    slot.rotate_right(3) >> 44 == 0x1ffff
}
