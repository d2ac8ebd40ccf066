//! The x86 side of ftrace (Linux: arch/x86/kernel/ftrace.c, ftrace_64.S).
//!
//! Every instrumented function calls `mcount` (or, in the fentry-style build,
//! starts with a 5-byte NOP). Until tracing is switched on, `mcount` returns
//! at once, exactly like Linux's `__fentry__` with dynamic ftrace; at boot
//! `ftrace_init` turns every call site into a NOP anyway.
use core::arch::global_asm;

global_asm!(
    r#"
.pushsection .text.mcount, "ax"
.global mcount
mcount:
    ret
.popsection
"#
);
