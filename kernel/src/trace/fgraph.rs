//! The function-graph core: each task's shadow return stack
//! (Linux: kernel/trace/fgraph.c).
//!
//! To see a function *return*, function_graph replaces the function's return
//! address on the stack with the address of `return_to_handler` (see
//! `arch::fgraph`), after saving the real one here, on the running task's
//! **shadow stack**: an array of [`FgraphFrame`]s `{ret, func, calltime,
//! retp}` that grows and shrinks with the real call stack. When the function
//! returns, it "returns" into `return_to_handler`, which calls
//! [`ftrace_return_to_handler`]: it pops the top frame, lets the tracer
//! record the exit, and hands back the real return address.
//!
//! - The stack belongs to the task, not to the CPU (Linux: `current->ret_stack`):
//!   a task preempted in the middle of a traced function may resume on
//!   another CPU, and the function must still return to the right place.
//! - Interrupts use the stack of the task they interrupt: their frames go on
//!   top and are all popped before the interrupt returns. So a push first
//!   reserves its slot (`curr` + 1) and then fills it, and a pop reads the
//!   slot before releasing it: an interrupt arriving in between works above.
//! - The stack has [`SHADOW_STACK_DEPTH`] frames (4 KiB, as Linux's
//!   SHADOW_STACK_SIZE). When it is full the function is simply not
//!   hijacked and the task's `trace_overrun` counter goes up.
//! - Each frame records `retp`, the address of the stack slot it hijacked.
//!   The return checks it (Linux's frame-pointer test) and unwinders use it
//!   to translate `return_to_handler` back ([`ftrace_graph_ret_addr`]).
//! - One user (the function_graph tracer) plugs in with [`register_ftrace_graph`]:
//!   its `entryfunc` decides whether a call is hijacked, its `retfunc` sees
//!   every return of a hijacked call (Linux: struct fgraph_ops).
use core::cell::UnsafeCell;
use core::sync::atomic::{
    compiler_fence, AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicUsize, Ordering,
};

use super::ftrace::{self, recursion, FtraceOps};
use crate::arch::percpu;
use crate::fs::Errno;
use crate::sched::Task;

/// Frames per task: 128 × 32 bytes = 4096 bytes (Linux: SHADOW_STACK_SIZE).
pub const SHADOW_STACK_DEPTH: usize = 128;

/// Per-task graph bits (Linux: the TRACE_GRAPH_* bits of current->trace_recursion).
pub mod task_bits {
    /// Inside a `set_graph_function` function (Linux: TRACE_GRAPH_BIT / TRACE_GRAPH_FL).
    pub const GRAPH: u32 = 1 << 0;
    /// That function was entered in hardirq context (Linux: TRACE_IRQ_BIT).
    pub const IRQ: u32 = 1 << 1;
    /// Inside a `set_graph_notrace` function (Linux: TRACE_GRAPH_NOTRACE_BIT).
    pub const NOTRACE: u32 = 1 << 2;
}

/// One hijacked call (Linux: struct ftrace_ret_stack).
#[derive(Clone, Copy, Default)]
pub struct FgraphFrame {
    /// The real return address.
    pub ret: u64,
    /// The traced function (its call-site address, as ftrace's `ip`).
    pub func: u64,
    /// Trace clock at entry.
    pub calltime: u64,
    /// The stack slot that held `ret` and now holds `return_to_handler`.
    pub retp: u64,
}

/// A task's shadow return stack and graph state (Linux: the ret_stack,
/// curr_ret_stack, trace_overrun and trace_recursion fields of task_struct).
pub struct ShadowStack {
    frames: UnsafeCell<[FgraphFrame; SHADOW_STACK_DEPTH]>,
    /// Frames in use (Linux: curr_ret_stack / curr_ret_depth + 1).
    curr: AtomicUsize,
    /// Calls not hijacked because the stack was full (Linux: trace_overrun).
    overrun: AtomicU32,
    /// [`task_bits`].
    pub bits: AtomicU32,
    /// Depth of the set_graph_function function that set GRAPH
    /// (Linux: trace_recursion_depth()).
    pub graph_depth: AtomicI32,
}

// SAFETY: only the task that owns the stack touches it, from its own
// context or from interrupts nesting on the CPU it runs on; the push/pop
// protocol (reserve, then fill; read, then release) makes those nested uses
// work strictly above the interrupted one.
unsafe impl Sync for ShadowStack {}

impl Default for ShadowStack {
    fn default() -> Self {
        Self::new()
    }
}

impl ShadowStack {
    pub const fn new() -> ShadowStack {
        ShadowStack {
            frames: UnsafeCell::new(
                [FgraphFrame {
                    ret: 0,
                    func: 0,
                    calltime: 0,
                    retp: 0,
                }; SHADOW_STACK_DEPTH],
            ),
            curr: AtomicUsize::new(0),
            overrun: AtomicU32::new(0),
            bits: AtomicU32::new(0),
            graph_depth: AtomicI32::new(-1),
        }
    }

    /// Frames in use.
    pub fn depth(&self) -> usize {
        self.curr.load(Ordering::Relaxed)
    }

    /// Calls refused because the stack was full.
    pub fn overrun(&self) -> u32 {
        self.overrun.load(Ordering::Relaxed)
    }

    /// A copy of frame `i` (0 = bottom).
    pub fn frame(&self, i: usize) -> Option<FgraphFrame> {
        if i >= SHADOW_STACK_DEPTH {
            return None;
        }
        // SAFETY: in bounds; a plain read of a Copy value. A concurrent
        // writer can only be an interrupt on this CPU working above `curr`.
        Some(unsafe { (*self.frames.get())[i] })
    }

    fn set_frame(&self, i: usize, f: FgraphFrame) {
        // SAFETY: `i` < SHADOW_STACK_DEPTH (checked by the caller) and the
        // slot was reserved by this context (see the module docs).
        unsafe { (*self.frames.get())[i] = f };
    }
}

/// What the entry callback sees (Linux: struct ftrace_graph_ent).
pub struct FtraceGraphEnt {
    pub func: u64,
    pub depth: i32,
    /// Trace clock at entry (the frame's `calltime`; the entry event is
    /// recorded at this time).
    pub calltime: u64,
}

/// What the return callback sees (Linux: struct ftrace_graph_ret).
pub struct FtraceGraphRet {
    pub func: u64,
    pub depth: i32,
    pub overrun: u32,
    pub calltime: u64,
    pub rettime: u64,
}

/// A user of the graph hooks (Linux: struct fgraph_ops).
pub struct FgraphOps {
    /// Returns true to hijack the call (its return will be seen).
    pub entryfunc: fn(&FtraceGraphEnt, &ShadowStack) -> bool,
    pub retfunc: fn(&FtraceGraphRet, &ShadowStack),
}

static FGRAPH_OPS: AtomicPtr<FgraphOps> = AtomicPtr::new(core::ptr::null_mut());
/// Set after a corrupted shadow stack: no more hijacking (Linux: kill_ftrace_graph).
static GRAPH_DEAD: AtomicBool = AtomicBool::new(false);

/// The ftrace_ops through which function_graph gets every function entry
/// (Linux: graph_ops, whose func is the arch's ftrace_graph_func). Its
/// filter is set by the graph tracer from set_ftrace_filter/notrace.
pub static GRAPH_OPS: FtraceOps =
    FtraceOps::new("function_graph", crate::arch::fgraph::ftrace_graph_func)
        .gated(&super::control::TRACING_ON);

/// True once [`ftrace_graph_stop`] ran.
#[inline(always)]
pub fn ftrace_graph_is_dead() -> bool {
    GRAPH_DEAD.load(Ordering::Relaxed)
}

/// Stops hijacking for good after an error (Linux: ftrace_graph_stop).
pub fn ftrace_graph_stop() {
    GRAPH_DEAD.store(true, Ordering::SeqCst);
}

/// The running task, or None before the scheduler runs on this CPU.
#[inline(always)]
pub fn current_task() -> Option<&'static Task> {
    let p = percpu::this_cpu_current() as *const Task;
    // SAFETY: `current` is null or the running task, which stays alive while
    // it runs (the scheduler holds a reference until its last switch).
    unsafe { p.as_ref() }
}

/// Installs `ops` and starts hijacking the calls GRAPH_OPS selects
/// (Linux: register_ftrace_graph). Only one user at a time: EBUSY.
pub fn register_ftrace_graph(ops: &'static FgraphOps) -> Result<(), Errno> {
    let p = ops as *const FgraphOps as *mut FgraphOps;
    if FGRAPH_OPS
        .compare_exchange(core::ptr::null_mut(), p, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return Err(Errno::EBUSY);
    }
    if let Err(e) = ftrace::register_ftrace_function(&GRAPH_OPS) {
        FGRAPH_OPS.store(core::ptr::null_mut(), Ordering::SeqCst);
        return Err(e);
    }
    Ok(())
}

/// Stops hijacking (Linux: unregister_ftrace_graph). Calls hijacked before
/// keep returning through `return_to_handler`, which pops them; their
/// returns are recorded only while a user is registered.
pub fn unregister_ftrace_graph(ops: &'static FgraphOps) {
    let _ = ftrace::unregister_ftrace_function(&GRAPH_OPS);
    let p = ops as *const FgraphOps as *mut FgraphOps;
    let _ =
        FGRAPH_OPS.compare_exchange(p, core::ptr::null_mut(), Ordering::SeqCst, Ordering::SeqCst);
}

#[inline(always)]
fn fgraph_ops() -> Option<&'static FgraphOps> {
    // SAFETY: null or a `&'static FgraphOps` stored by register_ftrace_graph.
    unsafe { FGRAPH_OPS.load(Ordering::Acquire).as_ref() }
}

/// Pushes a frame for `func`, whose return address `ret` sits in slot
/// `retp`, and asks the user whether to trace it. True: the caller must
/// now replace `*retp` with `return_to_handler` (Linux:
/// function_graph_enter_regs + ftrace_push_return_trace). The caller holds
/// the recursion lock, so preemption is off.
#[inline(always)]
pub fn function_graph_enter(ret: u64, func: u64, retp: u64) -> bool {
    let Some(ops) = fgraph_ops() else {
        return false;
    };
    let Some(task) = current_task() else {
        return false;
    };
    let rs = &task.ret_stack;
    let idx = rs.curr.load(Ordering::Relaxed);
    if idx >= SHADOW_STACK_DEPTH {
        rs.overrun.fetch_add(1, Ordering::Relaxed);
        return false;
    }
    // Reserve the slot before filling it: an interrupt from here on pushes
    // above it.
    rs.curr.store(idx + 1, Ordering::Relaxed);
    compiler_fence(Ordering::SeqCst);
    let calltime = super::trace::trace_clock();
    rs.set_frame(
        idx,
        FgraphFrame {
            ret,
            func,
            calltime,
            retp,
        },
    );
    compiler_fence(Ordering::SeqCst);
    let trace = FtraceGraphEnt {
        func,
        depth: idx as i32,
        calltime,
    };
    if (ops.entryfunc)(&trace, rs) {
        return true;
    }
    compiler_fence(Ordering::SeqCst);
    rs.curr.store(idx, Ordering::Relaxed);
    false
}

/// Called by `return_to_handler` when a hijacked function returns, with
/// `retp` = the slot its `ret` used. Pops the frame, reports the return and
/// gives back the real return address (Linux: ftrace_return_to_handler).
/// `extern "C"`: `return_to_handler` calls it directly.
pub extern "C" fn ftrace_return_to_handler(retp: u64) -> u64 {
    let task = current_task();
    let rs = task.map(|t| &t.ret_stack);
    let idx = rs.map_or(0, |rs| rs.curr.load(Ordering::Relaxed));
    let frame = match rs.and_then(|rs| if idx > 0 { rs.frame(idx - 1) } else { None }) {
        Some(f) if f.retp == retp => f,
        other => {
            // Nowhere safe to return to (Linux: "Bad function graph frame
            // pointer", then it returns to panic()).
            ftrace_graph_stop();
            panic!(
                "ftrace: bad function graph frame: return through slot {:#x}, shadow stack depth {}, top slot {:#x}",
                retp,
                idx,
                other.map_or(0, |f| f.retp)
            );
        }
    };
    let rs = rs.expect("checked above");
    let rettime = super::trace::trace_clock();
    if let Some(ops) = fgraph_ops() {
        if let Some(bit) = recursion::trylock(recursion::FTRACE_START) {
            let trace = FtraceGraphRet {
                func: frame.func,
                depth: (idx - 1) as i32,
                overrun: rs.overrun(),
                calltime: frame.calltime,
                rettime,
            };
            (ops.retfunc)(&trace, rs);
            recursion::unlock(bit);
        }
    }
    compiler_fence(Ordering::SeqCst);
    rs.curr.store(idx - 1, Ordering::Relaxed);
    if idx == 1 {
        // Nothing traced is in progress on this task any more: forget a
        // set_graph_function/notrace state whose return was not seen by a
        // tracer (the tracer was switched off meanwhile).
        rs.bits.store(0, Ordering::Relaxed);
    }
    frame.ret
}

/// The real return address for a stack slot `retp` that holds `ret`:
/// `ret` itself unless it is `return_to_handler`, in which case the
/// running task's shadow stack says what it replaced (Linux:
/// ftrace_graph_ret_addr). `idx` keeps the search position between the
/// frames of one unwind (0 to start); after a tail call several frames
/// share a slot, and the deepest real address wins.
pub fn ftrace_graph_ret_addr(idx: &mut usize, ret: u64, retp: u64) -> u64 {
    let handler = crate::arch::fgraph::return_to_handler_addr();
    if ret != handler {
        return ret;
    }
    let Some(task) = current_task() else {
        return ret;
    };
    let rs = &task.ret_stack;
    let mut i = if *idx == 0 {
        rs.depth().min(SHADOW_STACK_DEPTH)
    } else {
        *idx
    };
    while i > 0 {
        i -= 1;
        let Some(f) = rs.frame(i) else { break };
        if f.retp == retp && f.ret != handler {
            *idx = i;
            return f.ret;
        }
    }
    ret
}
