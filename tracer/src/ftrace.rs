//! The decisions of dynamic ftrace, apart from any instruction set
//! (Linux: the record logic of kernel/trace/ftrace.c).
//!
//! The kernel keeps one record per call site (`struct dyn_ftrace`: the
//! site's address and a word of flags). This module says what a site must
//! become when the users of function tracing change; the kernel's arch code
//! turns that into bytes.

/// What one site must become (Linux: the FTRACE_UPDATE_* values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FtraceUpdate {
    /// Leave the site as it is.
    Ignore,
    /// The NOP becomes a call to the trampoline.
    MakeCall,
    /// The call becomes the NOP.
    MakeNop,
    /// The call stays a call, to another trampoline.
    ModifyCall,
}
