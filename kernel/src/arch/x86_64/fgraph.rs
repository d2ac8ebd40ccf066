//! The x86 side of function_graph: hijacking a return address and coming
//! back (Linux: arch/x86/kernel/ftrace.c `prepare_ftrace_return` /
//! `ftrace_graph_func`, and `return_to_handler` in ftrace_64.S).
//!
//! Entry. `ftrace_caller` calls [`ftrace_graph_func`] with `parent_slot`,
//! the address of the stack slot that holds the traced function's return
//! address. In the mcount build that slot is at the traced function's
//! frame pointer + 8 (the `call mcount` comes after `push rbp; mov rbp,
//! rsp`); in the fentry build it is just above `ftrace_caller`'s own
//! return address (nothing is pushed yet at the function's first byte).
//! Either way the function's `ret` will later pop that slot.
//! [`prepare_ftrace_return`] saves the old value on the task's shadow
//! stack (kernel/src/trace/fgraph.rs) and, if the tracer wants the call,
//! writes `return_to_handler` into the slot.
//!
//! Exit. The function's `ret` jumps to `return_to_handler` with the stack
//! pointer just above the slot. The return value is in rax (and rdx for
//! 128-bit values; this kernel has no SSE), every other caller-saved
//! register is dead. `return_to_handler` saves rax/rdx (the first push
//! lands in the slot itself, which is no longer needed), calls
//! `ftrace_return_to_handler(slot)` (which records the exit, pops the frame
//! and returns the real return address), restores rax/rdx and jumps to
//! the real caller, as Linux's does (`jmp *%rdi`): the stack pointer ends
//! exactly where the function's own `ret` would have left it.
//!
//! With `tracing_on` 0 the entry callback returns at once, before pushing
//! a shadow frame (the function tracer's fast path does the same). Linux
//! 6.1 pushes the frame and pops it again when the tracer refuses the
//! call; the difference is only visible to `set_graph_function`, whose
//! "inside a selected function" state is not set for a call entered while
//! tracing was off.
use core::arch::global_asm;

use crate::trace::ftrace::{recursion, FtraceOps};

global_asm!(
    r#"
.pushsection .text.return_to_handler, "ax"
.global return_to_handler
.type return_to_handler, @function
return_to_handler:
    push rax                         /* the return value, into the slot */
    push rdx                         /* rsp is 16-byte aligned again */
    lea rdi, [rsp + 8]               /* retp: the slot */
    call {handler}                   /* rax = the real return address */
    mov rdi, rax
    pop rdx
    pop rax
    jmp rdi                          /* to the real caller */
.size return_to_handler, . - return_to_handler
.popsection
"#,
    handler = sym crate::trace::fgraph::ftrace_return_to_handler,
);

extern "C" {
    fn return_to_handler();
}

/// The address traced functions return to while hijacked.
#[inline(always)]
pub fn return_to_handler_addr() -> u64 {
    return_to_handler as *const () as u64
}

/// function_graph's ftrace_ops callback (Linux: ftrace_graph_func).
///
/// A naked function, as the function tracer's `function_trace_call`: it
/// gets no mcount instrumentation (whose NOPed call would still make the
/// compiler save the arguments), tests `tracing_on` in three instructions
/// and only then tail-jumps, arguments untouched, to the part that pushes
/// a shadow frame.
#[unsafe(naked)]
pub extern "C" fn ftrace_graph_func(ip: u64, parent_slot: *mut u64, op: &FtraceOps) {
    core::arch::naked_asm!(
        "cmp byte ptr [rip + {tracing_on}], 0",
        "jne {enter}",
        "ret",
        tracing_on = sym crate::trace::control::TRACING_ON,
        enter = sym ftrace_graph_enter,
    )
}

/// The part of [`ftrace_graph_func`] that runs with `tracing_on` 1.
extern "C" fn ftrace_graph_enter(ip: u64, parent_slot: *mut u64, _op: &FtraceOps) {
    prepare_ftrace_return(ip, parent_slot);
}

/// Pushes the return address in `*parent_slot` on the task's shadow stack
/// and replaces it with `return_to_handler` if the tracer wants this call
/// of the function at `ip` (Linux: prepare_ftrace_return).
#[inline(always)]
fn prepare_ftrace_return(ip: u64, parent_slot: *mut u64) {
    // Linux's skip_ftrace_return(): a dead graph, or a slot that is not on
    // a kernel stack.
    let slot = parent_slot as u64;
    if crate::trace::fgraph::ftrace_graph_is_dead()
        || slot < 0xffff_8000_0000_0000
        || !slot.is_multiple_of(8)
    {
        return;
    }
    let Some(bit) = recursion::trylock(recursion::FTRACE_START) else {
        return;
    };
    // SAFETY: ftrace_caller passes the address of the live stack slot that
    // holds the traced function's return address; the function is running,
    // so the slot stays valid, and only this task (with preemption off)
    // writes it now.
    let old = unsafe { parent_slot.read() };
    if crate::trace::fgraph::function_graph_enter(old, ip, slot) {
        // SAFETY: as above.
        unsafe { parent_slot.write(return_to_handler_addr()) };
    }
    recursion::unlock(bit);
}
