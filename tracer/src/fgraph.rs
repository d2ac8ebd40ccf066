//! A task's shadow return stack for function_graph (Linux: the ret_stack
//! part of kernel/trace/fgraph.c, and `ftrace_graph_ret_addr`).
//!
//! To see a function *return*, function_graph replaces the function's return
//! address on the stack with the address of `return_to_handler`, after
//! saving the real one here: an array of [`FgraphFrame`]s `{ret, func,
//! calltime, retp}` that grows and shrinks with the real call stack. When
//! the function returns into `return_to_handler`, the kernel pops the top
//! frame and jumps to the real return address.
//!
//! - Interrupts use the stack of the task they interrupt: their frames go on
//!   top and are all popped before the interrupt returns. So [`ShadowStack::push`]
//!   first reserves its slot (`curr` + 1) and then fills it, and a pop reads
//!   the slot ([`ShadowStack::top`]) before releasing it
//!   ([`ShadowStack::release`]): an interrupt arriving in between works above.
//! - The stack has [`SHADOW_STACK_DEPTH`] frames (4 KiB, as Linux's
//!   SHADOW_STACK_SIZE). When it is full the call is simply not hijacked and
//!   the `overrun` counter goes up.
//! - Each frame records `retp`, the address of the stack slot it hijacked.
//!   The return checks it (Linux's frame-pointer test, [`ShadowStack::top`])
//!   and unwinders use it to translate `return_to_handler` back
//!   ([`ShadowStack::ret_addr`]).
//! - A frame's index is its call's graph depth: only function_graph's
//!   calls are on this stack.
//!
//! - Without the `sleep-time` option, a duration leaves out the time the
//!   task was scheduled out: the scheduler switch stamps the task it
//!   switches out ([`ShadowStack::sched_out`]) and, when the task comes back,
//!   moves the calltime of every frame in use forward by the time it was
//!   away ([`ShadowStack::sched_in`]; Linux: ftrace_graph_probe_sched_switch).
//!
//! Two stacks. Kretprobes hijack returns too, through a task's second
//! stack, the rethook stack of rethook.rs (Linux: kernel/trace/rethook.c's
//! per-task `current->rethooks`), and their own trampoline,
//! `rethook_trampoline`. A slot both hijack holds the last hijacker's
//! trampoline, whose frame's `ret` is the other's trampoline: the return
//! goes through both, each popping its own stack. An unwinder translates
//! a trampoline in the stack it belongs to, and again if the result is
//! the other trampoline (rethook.rs's `unwind_ret_addr`; Linux's x86
//! unwinder: `ftrace_graph_ret_addr`, then `rethook_find_ret_addr`). This
//! module does not use that one: the rethook stack is built on it.
//!
//! Only the task that owns a stack (and interrupts nesting on its CPU) use
//! it, and the scheduler while the task is not running; the kernel embeds
//! one in each task.
use core::cell::UnsafeCell;
use core::sync::atomic::{compiler_fence, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};

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
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
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

/// A return through a slot that is not the top frame's: nowhere safe to
/// return to (Linux: "Bad function graph frame pointer").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadFrame {
    /// Frames in use.
    pub depth: usize,
    /// The top frame's slot (0 if the stack is empty).
    pub top_retp: u64,
    /// The top frame's function (0 if the stack is empty).
    pub top_func: u64,
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
    /// When the task was last switched out, 0 if never while stamping
    /// (Linux: task_struct's ftrace_timestamp).
    ftrace_timestamp: AtomicU64,
    /// Per frame: the time its callees took, for the function profiler
    /// with `graph-time` off (Linux: ftrace_ret_stack's subtime). Kept
    /// apart from the frames, so the function_graph tracer's push does
    /// not write it.
    subtime: UnsafeCell<[u64; SHADOW_STACK_DEPTH]>,
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
            ftrace_timestamp: AtomicU64::new(0),
            subtime: UnsafeCell::new([0; SHADOW_STACK_DEPTH]),
        }
    }

    /// The callees' time of frame `i` (0 outside the stack).
    #[inline(always)]
    pub fn subtime(&self, i: usize) -> u64 {
        if i >= SHADOW_STACK_DEPTH {
            return 0;
        }
        // SAFETY: in bounds; as for the frames, only this task's contexts
        // use its own frames, nested ones strictly above.
        unsafe { (*self.subtime.get())[i] }
    }

    /// Sets the callees' time of frame `i` (ignored outside the stack).
    #[inline(always)]
    pub fn set_subtime(&self, i: usize, t: u64) {
        if i < SHADOW_STACK_DEPTH {
            // SAFETY: as in `subtime`.
            unsafe { (*self.subtime.get())[i] = t };
        }
    }

    /// The task is switched out at `now` (Linux: `prev->ftrace_timestamp`
    /// in ftrace_graph_probe_sched_switch, sleep-time off).
    pub fn sched_out(&self, now: u64) {
        self.ftrace_timestamp.store(now, Ordering::Relaxed);
    }

    /// The task is switched back in at `now`: if it was stamped when it left,
    /// every frame in use gets the time it was away added to its calltime,
    /// so that its duration counts only the time it ran (Linux:
    /// ftrace_graph_probe_sched_switch for `next`). The stamp stays, as in
    /// Linux. Runs while the task is not running, so no context of the
    /// task uses the frames.
    pub fn sched_in(&self, now: u64) {
        let stamp = self.ftrace_timestamp.load(Ordering::Relaxed);
        if stamp == 0 {
            return;
        }
        let away = now.wrapping_sub(stamp);
        let depth = self.depth().min(SHADOW_STACK_DEPTH);
        for i in 0..depth {
            // SAFETY: in bounds; the task is not running (see above), so
            // nothing else reads or writes its frames meanwhile.
            unsafe {
                let f = &mut (*self.frames.get())[i];
                f.calltime = f.calltime.wrapping_add(away);
            }
        }
    }

    /// Frames in use.
    #[inline(always)]
    pub fn depth(&self) -> usize {
        self.curr.load(Ordering::Relaxed)
    }

    /// Calls refused because the stack was full.
    #[inline(always)]
    pub fn overrun(&self) -> u32 {
        self.overrun.load(Ordering::Relaxed)
    }

    /// A copy of frame `i` (0 = bottom).
    #[inline(always)]
    pub fn frame(&self, i: usize) -> Option<FgraphFrame> {
        if i >= SHADOW_STACK_DEPTH {
            return None;
        }
        // SAFETY: in bounds; a plain read of a Copy value. A concurrent
        // writer can only be an interrupt on this CPU working above `curr`.
        Some(unsafe { (*self.frames.get())[i] })
    }

    /// Pushes a frame for `func`, whose return address `ret` sits in slot
    /// `retp`, stamped with `clock()` read after the slot is reserved
    /// (Linux: ftrace_push_return_trace). Returns the frame's index (its
    /// depth) and its calltime, or None, counting an overrun, if the stack
    /// is full. The caller then either keeps the frame (and hijacks the
    /// return) or gives it back with [`ShadowStack::unreserve`].
    #[inline(always)]
    pub fn push(
        &self,
        ret: u64,
        func: u64,
        retp: u64,
        clock: impl FnOnce() -> u64,
    ) -> Option<(usize, u64)> {
        let idx = self.curr.load(Ordering::Relaxed);
        if idx >= SHADOW_STACK_DEPTH {
            self.overrun.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        // Reserve the slot before filling it: an interrupt from here on
        // pushes above it.
        self.curr.store(idx + 1, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        let calltime = clock();
        // SAFETY: idx < SHADOW_STACK_DEPTH and the slot was reserved by this
        // context just above (see the module docs).
        unsafe {
            (*self.frames.get())[idx] = FgraphFrame {
                ret,
                func,
                calltime,
                retp,
            }
        };
        compiler_fence(Ordering::SeqCst);
        Some((idx, calltime))
    }

    /// Gives back the frame [`ShadowStack::push`] returned as `idx`, when the
    /// call is not hijacked after all.
    #[inline(always)]
    pub fn unreserve(&self, idx: usize) {
        compiler_fence(Ordering::SeqCst);
        self.curr.store(idx, Ordering::Relaxed);
    }

    /// The top frame, for a return through slot `retp`, with its index; the
    /// frame stays reserved until [`ShadowStack::release`]. A different slot
    /// (or an empty stack) is a corrupted stack (Linux's frame-pointer test
    /// in ftrace_pop_return_trace).
    #[inline(always)]
    pub fn top(&self, retp: u64) -> Result<(usize, FgraphFrame), BadFrame> {
        let depth = self.depth();
        let top = if depth > 0 {
            self.frame(depth - 1)
        } else {
            None
        };
        match top {
            Some(f) if f.retp == retp => Ok((depth - 1, f)),
            other => Err(BadFrame {
                depth,
                top_retp: other.map_or(0, |f| f.retp),
                top_func: other.map_or(0, |f| f.func),
            }),
        }
    }

    /// Releases frame `idx` (from [`ShadowStack::top`]). When the stack
    /// becomes empty nothing traced is in progress on the task any more:
    /// the graph bits are cleared too, forgetting a set_graph_function or
    /// set_graph_notrace state whose return no tracer saw.
    #[inline(always)]
    pub fn release(&self, idx: usize) {
        compiler_fence(Ordering::SeqCst);
        self.curr.store(idx, Ordering::Relaxed);
        if idx == 0 {
            self.bits.store(0, Ordering::Relaxed);
        }
    }

    /// The real return address for a stack slot `retp` that holds `ret`:
    /// `ret` itself unless it is `handler` (`return_to_handler`), in which
    /// case this stack says what it replaced (Linux: ftrace_graph_ret_addr),
    /// which may be the kretprobes' trampoline (see rethook.rs's
    /// `unwind_ret_addr`).
    /// `idx` keeps the search position between the frames of one unwind
    /// (0 to start); after a tail call several frames share a slot, and
    /// the deepest one that is not `handler` wins.
    pub fn ret_addr(&self, idx: &mut usize, ret: u64, retp: u64, handler: u64) -> u64 {
        if ret != handler {
            return ret;
        }
        find_ret_addr(idx, self.depth(), SHADOW_STACK_DEPTH, retp, handler, |i| {
            self.frame(i).map(|f| (f.retp, f.ret))
        })
        .unwrap_or(ret)
    }
}

/// The search of [`ShadowStack::ret_addr`] and of the rethook stack's
/// `ret_addr` (rethook.rs) in a
/// stack of `depth` frames (at most `max`), `frame(i)` giving frame `i`'s
/// `(retp, ret)`: from `*idx` (0: the top) down, the first frame for slot
/// `retp` whose `ret` is not `handler`; `*idx` becomes its index.
pub(crate) fn find_ret_addr(
    idx: &mut usize,
    depth: usize,
    max: usize,
    retp: u64,
    handler: u64,
    frame: impl Fn(usize) -> Option<(u64, u64)>,
) -> Option<u64> {
    let mut i = if *idx == 0 { depth.min(max) } else { *idx };
    while i > 0 {
        i -= 1;
        let (f_retp, f_ret) = frame(i)?;
        if f_retp == retp && f_ret != handler {
            *idx = i;
            return Some(f_ret);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const HANDLER: u64 = 0xffff_ffff_8000_1000;

    fn push(rs: &ShadowStack, ret: u64, retp: u64, t: u64) -> Option<(usize, u64)> {
        rs.push(ret, ret + 0x100, retp, || t)
    }

    #[test]
    fn push_then_pop_in_order() {
        let rs = ShadowStack::new();
        assert_eq!(push(&rs, 0x10, 0x1000, 5), Some((0, 5)));
        assert_eq!(push(&rs, 0x20, 0x0ff0, 6), Some((1, 6)));
        assert_eq!(rs.depth(), 2);
        let (i, f) = rs.top(0x0ff0).unwrap();
        assert_eq!((i, f.ret, f.func, f.calltime), (1, 0x20, 0x120, 6));
        // Still reserved until released.
        assert_eq!(rs.depth(), 2);
        rs.release(i);
        let (i, f) = rs.top(0x1000).unwrap();
        assert_eq!((i, f.ret), (0, 0x10));
        rs.release(i);
        assert_eq!(rs.depth(), 0);
    }

    #[test]
    fn the_clock_is_read_after_the_slot_is_reserved() {
        let rs = ShadowStack::new();
        let (idx, _) = rs
            .push(1, 2, 3, || {
                // An interrupt here would push above the reserved slot.
                assert_eq!(rs.depth(), 1);
                let (inner, _) = push(&rs, 9, 0x500, 7).unwrap();
                assert_eq!(inner, 1);
                rs.release(rs.top(0x500).unwrap().0);
                42
            })
            .unwrap();
        assert_eq!(idx, 0);
        assert_eq!(rs.frame(0).unwrap().calltime, 42);
    }

    #[test]
    fn unreserve_gives_the_frame_back() {
        let rs = ShadowStack::new();
        push(&rs, 0x10, 0x1000, 1).unwrap();
        let (idx, _) = push(&rs, 0x20, 0x0ff0, 2).unwrap();
        rs.unreserve(idx);
        assert_eq!(rs.depth(), 1);
        assert_eq!(rs.top(0x1000).unwrap().0, 0);
    }

    #[test]
    fn a_full_stack_refuses_and_counts_overruns() {
        let rs = ShadowStack::new();
        for k in 0..SHADOW_STACK_DEPTH as u64 {
            assert!(push(&rs, k, 0x10_0000 - 8 * k, k).is_some());
        }
        assert_eq!(push(&rs, 1, 8, 0), None);
        assert_eq!(push(&rs, 1, 8, 0), None);
        assert_eq!(rs.overrun(), 2);
        assert_eq!(rs.depth(), SHADOW_STACK_DEPTH);
    }

    #[test]
    fn a_return_through_another_slot_is_a_bad_frame() {
        let rs = ShadowStack::new();
        assert_eq!(
            rs.top(0x1000),
            Err(BadFrame {
                depth: 0,
                top_retp: 0,
                top_func: 0
            })
        );
        push(&rs, 0x10, 0x1000, 1).unwrap();
        assert_eq!(
            rs.top(0x0ff8),
            Err(BadFrame {
                depth: 1,
                top_retp: 0x1000,
                top_func: 0x110
            })
        );
        assert_eq!(rs.depth(), 1, "a failed check pops nothing");
    }

    #[test]
    fn releasing_the_last_frame_clears_the_graph_bits() {
        let rs = ShadowStack::new();
        push(&rs, 0x10, 0x1000, 1).unwrap();
        push(&rs, 0x20, 0x0ff0, 1).unwrap();
        rs.bits
            .store(task_bits::GRAPH | task_bits::NOTRACE, Ordering::Relaxed);
        rs.release(1);
        assert_ne!(rs.bits.load(Ordering::Relaxed), 0);
        rs.release(0);
        assert_eq!(rs.bits.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn sched_in_moves_the_calltimes_by_the_time_away() {
        let rs = ShadowStack::new();
        push(&rs, 0x10, 0x1000, 100).unwrap();
        push(&rs, 0x20, 0x0ff0, 150).unwrap();
        // Never stamped: nothing moves.
        rs.sched_in(1000);
        assert_eq!(rs.frame(1).unwrap().calltime, 150);
        // Out at 200, back at 1200: both frames in use move by 1000, so
        // the time away does not count in their durations.
        rs.sched_out(200);
        rs.sched_in(1200);
        assert_eq!(rs.frame(0).unwrap().calltime, 1100);
        assert_eq!(rs.frame(1).unwrap().calltime, 1150);
        // Frames above the depth are not in use and stay as they are.
        rs.release(rs.top(0x0ff0).unwrap().0);
        rs.sched_out(1300);
        rs.sched_in(1400);
        assert_eq!(rs.frame(0).unwrap().calltime, 1200);
        assert_eq!(rs.frame(1).unwrap().calltime, 1150);
    }

    #[test]
    fn subtime_is_per_frame_and_bounded() {
        let rs = ShadowStack::new();
        rs.set_subtime(0, 5);
        rs.set_subtime(1, 7);
        rs.set_subtime(SHADOW_STACK_DEPTH, 9);
        assert_eq!((rs.subtime(0), rs.subtime(1)), (5, 7));
        assert_eq!(rs.subtime(SHADOW_STACK_DEPTH), 0);
    }

    #[test]
    fn ret_addr_translates_the_handler_only() {
        let rs = ShadowStack::new();
        push(&rs, 0xaaaa, 0x1000, 1).unwrap();
        push(&rs, 0xbbbb, 0x0f00, 1).unwrap();
        let mut idx = 0;
        // A return address that is not the handler is the real one.
        assert_eq!(rs.ret_addr(&mut idx, 0x1234, 0x0e00, HANDLER), 0x1234);
        assert_eq!(idx, 0);
        // Unwinding from the innermost frame outwards.
        assert_eq!(rs.ret_addr(&mut idx, HANDLER, 0x0f00, HANDLER), 0xbbbb);
        assert_eq!(idx, 1);
        assert_eq!(rs.ret_addr(&mut idx, HANDLER, 0x1000, HANDLER), 0xaaaa);
        assert_eq!(idx, 0);
        // A slot no frame hijacked stays the handler.
        let mut idx = 0;
        assert_eq!(rs.ret_addr(&mut idx, HANDLER, 0x2000, HANDLER), HANDLER);
    }

    #[test]
    fn ret_addr_after_a_tail_call_takes_the_deepest_real_address() {
        // A tail call reuses its caller's return slot: two frames share
        // slot 0x1000, the second one's `ret` being the handler itself.
        let rs = ShadowStack::new();
        push(&rs, 0xaaaa, 0x1000, 1).unwrap();
        push(&rs, HANDLER, 0x1000, 1).unwrap();
        let mut idx = 0;
        assert_eq!(rs.ret_addr(&mut idx, HANDLER, 0x1000, HANDLER), 0xaaaa);
        assert_eq!(idx, 0);
    }
}
