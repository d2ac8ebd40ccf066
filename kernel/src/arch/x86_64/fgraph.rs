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
//! register is dead. `return_to_handler` saves rax/rdx, calls
//! `ftrace_return_to_handler(slot)` (which records the exit and pops the
//! frame), puts the real return address back in the slot, restores rax/rdx
//! and `ret`s through the slot: the stack pointer ends exactly where the
//! function's own `ret` would have left it.
use core::arch::global_asm;

use crate::trace::ftrace::{recursion, FtraceOps};

global_asm!(
    r#"
.pushsection .text.return_to_handler, "ax"
.global return_to_handler
.type return_to_handler, @function
return_to_handler:
    sub rsp, 8                       /* rsp = the hijacked slot again */
    push rax                         /* the return value */
    push rdx
    sub rsp, 8                       /* 16-byte alignment for the call */
    lea rdi, [rsp + 24]              /* retp: the slot */
    call ftrace_return_to_handler    /* rax = the real return address */
    mov [rsp + 24], rax
    add rsp, 8
    pop rdx
    pop rax
    ret                              /* to the real caller */
.size return_to_handler, . - return_to_handler
.popsection
"#
);

extern "C" {
    fn return_to_handler();
}

/// The address traced functions return to while hijacked.
#[inline(always)]
pub fn return_to_handler_addr() -> u64 {
    return_to_handler as *const () as u64
}

/// Called by `return_to_handler`; returns where to go back to.
#[no_mangle]
extern "C" fn ftrace_return_to_handler(retp: u64) -> u64 {
    crate::trace::fgraph::ftrace_return_to_handler(retp)
}

/// function_graph's ftrace_ops callback (Linux: ftrace_graph_func).
pub extern "C" fn ftrace_graph_func(ip: u64, parent_slot: *mut u64, _op: &FtraceOps) {
    prepare_ftrace_return(ip, parent_slot);
}

/// Pushes the return address in `*parent_slot` on the task's shadow stack
/// and replaces it with `return_to_handler` if the tracer wants this call
/// of the function at `ip` (Linux: prepare_ftrace_return).
#[inline(always)]
pub fn prepare_ftrace_return(ip: u64, parent_slot: *mut u64) {
    // Linux's skip_ftrace_return(): a dead graph, or a slot that is not on
    // a kernel stack.
    let slot = parent_slot as u64;
    if crate::trace::fgraph::ftrace_graph_is_dead() || slot < 0xffff_8000_0000_0000 || slot % 8 != 0 {
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
