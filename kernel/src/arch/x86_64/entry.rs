//! Interrupt and exception entry (Linux: arch/x86/entry/entry_64.S,
//! idtentry.h).
//!
//! Every one of the 256 vectors gets a 16-byte stub. The stub pushes a dummy
//! error code when the CPU does not push one, then the vector number, and
//! jumps to `common_interrupt`, which saves all general registers so that the
//! stack holds a complete [`PtRegs`]. Rust code gets `&mut PtRegs`: changing
//! `rip` or `rsp` there changes where the interrupted code resumes (the int3
//! handlers of the code patcher and of kprobes rely on this). The
//! breakpoint's stub first moves the frame down to leave room for an
//! emulated push (`int3_entry`).
use core::arch::global_asm;

/// The registers of the interrupted context, in stack order (Linux: pt_regs).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PtRegs {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub rbp: u64,
    pub rbx: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rax: u64,
    pub rcx: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub vector: u64,
    pub error_code: u64,
    // Pushed by the CPU:
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

/// The pushes that save the general registers below a frame's `vector`
/// word, so that the stack pointer ends at a [`PtRegs`] (for the asm of
/// the interrupt entry and of the kretprobes' trampoline).
macro_rules! push_gprs {
    () => {
        "push rdi\npush rsi\npush rdx\npush rcx\npush rax\npush r8\npush r9\npush r10\n\
         push r11\npush rbx\npush rbp\npush r12\npush r13\npush r14\npush r15\n"
    };
}
pub(crate) use push_gprs;

/// The pops that restore what [`push_gprs`] saved.
macro_rules! pop_gprs {
    () => {
        "pop r15\npop r14\npop r13\npop r12\npop rbp\npop rbx\npop r11\npop r10\npop r9\n\
         pop r8\npop rax\npop rcx\npop rdx\npop rsi\npop rdi\n"
    };
}
pub(crate) use pop_gprs;

global_asm!(concat!(
    r#"
.pushsection .text.entry, "ax"
.balign 16
.global idt_stubs
idt_stubs:
.set vec, 0
.rept 256
    .balign 16
    .if vec == 3
    jmp int3_entry
    /* Vectors 8, 10-14, 17, 21, 29, 30: the CPU pushed an error code. */
    .elseif (vec == 8) || ((vec >= 10) && (vec <= 14)) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
    .else
    push 0
    .endif
    push vec
    jmp common_interrupt
    .set vec, vec + 1
.endr

/* The breakpoint runs on the interrupted stack. Its handler may emulate
   a call or a push there (the code patcher's in-flight call sites, a
   kprobe on `push`), which writes just below the interrupted stack
   pointer, where the CPU put the exception frame: copy the five words of
   the frame further down, so that they leave a gap of five words (Linux:
   the int3 gap of idtentry in entry_64.S). iretq then uses the copy. */
int3_entry:
    .rept 5
    push qword ptr [rsp + 32]
    .endr
    push 0
    push 3
    jmp common_interrupt

common_interrupt:
    cld
"#,
    push_gprs!(),
    r#"    mov rdi, rsp            /* &mut PtRegs */
    mov rbx, rsp            /* callee-saved: the unaligned stack pointer */
    and rsp, -16
    call interrupt_dispatch
    mov rsp, rbx
"#,
    pop_gprs!(),
    r#"    add rsp, 16             /* vector and error code */
    iretq
.popsection
"#
));

extern "C" {
    static idt_stubs: u8;
}

/// The address of the entry stub for `vector`.
pub fn stub_address(vector: u8) -> u64 {
    // SAFETY: only the address of the asm symbol is taken.
    let base = unsafe { &idt_stubs as *const u8 as u64 };
    base + 16 * vector as u64
}
