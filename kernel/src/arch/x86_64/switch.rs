//! The context switch (Linux: arch/x86/entry/entry_64.S, __switch_to_asm).
//!
//! `context_switch(&mut prev_sp, next_sp)` pushes the callee-saved registers on
//! the current stack, saves the stack pointer, loads the next task's stack
//! pointer and pops its registers: the `ret` then continues wherever the next
//! task called `context_switch` — or, for a new task, at `task_entry`.
use core::arch::global_asm;

global_asm!(
    r#"
.pushsection .text.context_switch, "ax"
.global context_switch
context_switch:
    push rbp
    push rbx
    push r12
    push r13
    push r14
    push r15
    mov [rdi], rsp
    mov rsp, rsi
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbx
    pop rbp
    ret

/* First code a new task runs: r12 holds its argument (see initial_stack). */
.global task_entry
task_entry:
    mov rdi, r12
    xor ebp, ebp
    and rsp, -16
    call task_start
    ud2
.popsection
"#
);

extern "C" {
    fn context_switch(prev_sp: *mut u64, next_sp: u64);
    fn task_entry();
}

/// Saves the current context into `*prev_sp` and resumes the one saved in
/// `next_sp`.
///
/// # Safety
/// Interrupts must be off; `next_sp` must come from a previous switch or from
/// [`initial_stack`], and its stack must stay alive while the task runs.
pub unsafe fn switch(prev_sp: *mut u64, next_sp: u64) {
    // SAFETY: the caller upholds the contract above.
    unsafe { context_switch(prev_sp, next_sp) }
}

/// Lays out a new task's stack so that the first switch to it "returns" into
/// `task_entry`, which calls `task_start(arg)`. Returns the initial stack pointer.
pub fn initial_stack(stack_top: u64, arg: u64) -> u64 {
    let top = stack_top & !0xf;
    // Popped in this order: r15, r14, r13, r12 (the argument), rbx, rbp, then
    // the return address.
    let frame: [u64; 8] = [0, 0, 0, arg, 0, 0, task_entry as *const () as u64, 0];
    let sp = top - 8 * frame.len() as u64;
    // SAFETY: the caller gives a fresh stack of which these 64 bytes are the top.
    unsafe { core::ptr::copy_nonoverlapping(frame.as_ptr(), sp as *mut u64, frame.len()) };
    sp
}
