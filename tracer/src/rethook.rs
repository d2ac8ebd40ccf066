//! A task's stack of hijacked returns for kretprobes (Linux: the per-task
//! `current->rethooks` list of kernel/trace/rethook.c).
//!
//! A kretprobe sees a function return the way function_graph does: at the
//! function's entry it saves the return address here and writes the
//! address of `rethook_trampoline` into the stack slot; the function
//! returns into the trampoline, which pops the top frame, runs the
//! kretprobe's handler and goes on to the real return address. The frames
//! are `{ret, cookie, retp}` ([`RethookFrame`]): the cookie says which
//! kretprobe pushed the frame.
//!
//! This stack is apart from function_graph's
//! ([`ShadowStack`](crate::fgraph::ShadowStack)), as on Linux, so that a
//! graph frame's index stays its call depth. A slot both hijack holds the
//! last hijacker's trampoline and its frame's `ret` is the other's: the
//! return goes through both trampolines, each popping its own stack. An
//! unwinder translates a trampoline through the stack it belongs to, and
//! again while the answer is the other trampoline ([`unwind_ret_addr`];
//! Linux's x86 unwinder: `ftrace_graph_ret_addr`, then
//! `rethook_find_ret_addr`).
//!
//! The protocol is the shadow stack's: only the owning task and interrupts
//! nesting on its CPU use it, a push reserves its slot before filling it
//! and a pop reads the top frame ([`RethookStack::top`]) before releasing
//! it ([`RethookStack::release`]), so that an interrupt arriving in
//! between works above. It has [`RETHOOK_STACK_DEPTH`] frames; when it is
//! full the push fails and the kretprobe counts a missed call (on Linux
//! the rethook's pool of nodes runs out instead).
use core::cell::UnsafeCell;
use core::sync::atomic::{compiler_fence, AtomicUsize, Ordering};

use crate::fgraph::{find_ret_addr, BadFrame, ShadowStack};

/// Frames per task: 64 × 24 bytes = 1536 bytes.
pub const RETHOOK_STACK_DEPTH: usize = 64;

/// One hijacked return (Linux: struct rethook_node).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct RethookFrame {
    /// The real return address.
    pub ret: u64,
    /// Which kretprobe pushed the frame (Linux: the node's rethook).
    pub cookie: u64,
    /// The stack slot that held `ret` and now holds `rethook_trampoline`
    /// (Linux: the node's `frame`).
    pub retp: u64,
}

/// A task's stack of [`RethookFrame`]s.
pub struct RethookStack {
    frames: UnsafeCell<[RethookFrame; RETHOOK_STACK_DEPTH]>,
    /// Frames in use.
    curr: AtomicUsize,
}

// SAFETY: as ShadowStack's: only the task that owns the stack touches it,
// from its own context or from interrupts nesting on its CPU, and the
// push/pop protocol makes nested uses work strictly above the interrupted
// one.
unsafe impl Sync for RethookStack {}

impl Default for RethookStack {
    fn default() -> Self {
        Self::new()
    }
}

impl RethookStack {
    pub const fn new() -> RethookStack {
        RethookStack {
            frames: UnsafeCell::new(
                [RethookFrame {
                    ret: 0,
                    cookie: 0,
                    retp: 0,
                }; RETHOOK_STACK_DEPTH],
            ),
            curr: AtomicUsize::new(0),
        }
    }

    /// Frames in use.
    #[inline(always)]
    pub fn depth(&self) -> usize {
        self.curr.load(Ordering::Relaxed)
    }

    /// A copy of frame `i` (0 = bottom).
    #[inline(always)]
    pub fn frame(&self, i: usize) -> Option<RethookFrame> {
        if i >= RETHOOK_STACK_DEPTH {
            return None;
        }
        // SAFETY: in bounds; a plain read of a Copy value. A concurrent
        // writer can only be an interrupt on this CPU working above `curr`.
        Some(unsafe { (*self.frames.get())[i] })
    }

    /// Pushes a frame for the kretprobe `cookie`, whose function's return
    /// address `ret` sits in slot `retp` (Linux: rethook_hook). Its index,
    /// or None if the stack is full.
    #[inline(always)]
    pub fn push(&self, ret: u64, cookie: u64, retp: u64) -> Option<usize> {
        let idx = self.curr.load(Ordering::Relaxed);
        if idx >= RETHOOK_STACK_DEPTH {
            return None;
        }
        // Reserved before it is filled: an interrupt from here on pushes
        // above it.
        self.curr.store(idx + 1, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        // SAFETY: idx < RETHOOK_STACK_DEPTH and this context reserved the
        // slot just above.
        unsafe { (*self.frames.get())[idx] = RethookFrame { ret, cookie, retp } };
        compiler_fence(Ordering::SeqCst);
        Some(idx)
    }

    /// The top frame, for a return through slot `retp`, with its index; it
    /// stays reserved until [`RethookStack::release`]. Another slot, or an
    /// empty stack, is a corrupted stack (`top_func` of the error is the
    /// top frame's cookie).
    #[inline(always)]
    pub fn top(&self, retp: u64) -> Result<(usize, RethookFrame), BadFrame> {
        let depth = self.depth();
        match depth.checked_sub(1).and_then(|i| self.frame(i)) {
            Some(f) if f.retp == retp => Ok((depth - 1, f)),
            other => Err(BadFrame {
                depth,
                top_retp: other.map_or(0, |f| f.retp),
                top_func: other.map_or(0, |f| f.cookie),
            }),
        }
    }

    /// Releases frame `idx` (from [`RethookStack::top`]).
    #[inline(always)]
    pub fn release(&self, idx: usize) {
        compiler_fence(Ordering::SeqCst);
        self.curr.store(idx, Ordering::Relaxed);
    }

    /// The real return address for a stack slot `retp` that holds `ret`:
    /// `ret` itself unless it is `trampoline` (`rethook_trampoline`), in
    /// which case this stack says what it replaced, which may be
    /// function_graph's `return_to_handler` (Linux: rethook_find_ret_addr;
    /// see [`unwind_ret_addr`]). `idx` keeps the search
    /// position between the frames of one unwind (0 to start).
    pub fn ret_addr(&self, idx: &mut usize, ret: u64, retp: u64, trampoline: u64) -> u64 {
        if ret != trampoline {
            return ret;
        }
        find_ret_addr(
            idx,
            self.depth(),
            RETHOOK_STACK_DEPTH,
            retp,
            trampoline,
            |i| self.frame(i).map(|f| (f.retp, f.ret)),
        )
        .unwrap_or(ret)
    }
}

/// An unwind's search positions in a task's two stacks (Linux:
/// unwind_state's `graph_idx` and `kr_cur`); the default starts at the
/// tops.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct RetAddrCursor {
    pub graph: usize,
    pub rethook: usize,
}

/// The real return address for a stack slot `retp` that holds `ret`, from
/// a task's two stacks (Linux's x86 unwind_recover_ret_addr):
/// `return_to_handler` (`trampolines[0]`) is looked up in the graph stack
/// `graph`, `rethook_trampoline` (`trampolines[1]`) in the rethook stack
/// `rethooks`, and again while the answer is a trampoline (a slot both
/// hijacked: the last hijacker's frame saved the other's trampoline).
/// Anything else is returned as it is. `cur` keeps the positions between
/// the frames of one unwind.
pub fn unwind_ret_addr(
    graph: &ShadowStack,
    rethooks: &RethookStack,
    cur: &mut RetAddrCursor,
    mut ret: u64,
    retp: u64,
    trampolines: [u64; 2],
) -> u64 {
    // A chain of tail calls can alternate the two; a corrupted pair of
    // stacks could loop: a few rounds are plenty.
    for _ in 0..8 {
        let real = if ret == trampolines[0] {
            graph.ret_addr(&mut cur.graph, ret, retp, trampolines[0])
        } else if ret == trampolines[1] {
            rethooks.ret_addr(&mut cur.rethook, ret, retp, trampolines[1])
        } else {
            break;
        };
        if real == ret {
            break;
        }
        ret = real;
    }
    ret
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRAMPOLINE: u64 = 0xffff_ffff_8000_2000;
    /// function_graph's `return_to_handler`, for the two-stack tests.
    const HANDLER: u64 = 0xffff_ffff_8000_1000;

    fn push(rs: &ShadowStack, ret: u64, retp: u64, t: u64) -> Option<(usize, u64)> {
        rs.push(ret, ret + 0x100, retp, || t)
    }

    #[test]
    fn push_then_pop_in_order() {
        let rh = RethookStack::new();
        assert_eq!(rh.push(0x10, 7, 0x1000), Some(0));
        assert_eq!(rh.push(0x20, 8, 0x0f00), Some(1));
        let (i, f) = rh.top(0x0f00).unwrap();
        assert_eq!(
            (i, f),
            (
                1,
                RethookFrame {
                    ret: 0x20,
                    cookie: 8,
                    retp: 0x0f00
                }
            )
        );
        // Still reserved until released.
        assert_eq!(rh.depth(), 2);
        rh.release(i);
        let (i, f) = rh.top(0x1000).unwrap();
        assert_eq!((i, f.ret, f.cookie), (0, 0x10, 7));
        rh.release(i);
        assert_eq!(rh.depth(), 0);
    }

    #[test]
    fn a_full_stack_refuses() {
        let rh = RethookStack::new();
        for k in 0..RETHOOK_STACK_DEPTH as u64 {
            assert_eq!(rh.push(k, 1, 0x10_0000 - 8 * k), Some(k as usize));
        }
        assert_eq!(rh.push(1, 1, 8), None);
        assert_eq!(rh.depth(), RETHOOK_STACK_DEPTH);
        // The top is still the last frame pushed.
        let top = 0x10_0000 - 8 * (RETHOOK_STACK_DEPTH as u64 - 1);
        assert_eq!(rh.top(top).unwrap().0, RETHOOK_STACK_DEPTH - 1);
    }

    #[test]
    fn a_return_through_another_slot_is_a_bad_frame() {
        let rh = RethookStack::new();
        assert_eq!(
            rh.top(0x1000),
            Err(BadFrame {
                depth: 0,
                top_retp: 0,
                top_func: 0
            })
        );
        rh.push(0x10, 7, 0x1000).unwrap();
        assert_eq!(
            rh.top(0x0ff8),
            Err(BadFrame {
                depth: 1,
                top_retp: 0x1000,
                top_func: 7
            })
        );
        assert_eq!(rh.depth(), 1, "a failed check pops nothing");
    }

    #[test]
    fn an_interrupt_between_reserve_and_release_works_above() {
        // A return reads its top frame; an interrupt then pushes and pops
        // above it before the release.
        let rh = RethookStack::new();
        rh.push(0x10, 7, 0x1000).unwrap();
        let (i, f) = rh.top(0x1000).unwrap();
        assert_eq!(rh.push(0x30, 9, 0x0800), Some(1));
        rh.release(rh.top(0x0800).unwrap().0);
        rh.release(i);
        assert_eq!((f.ret, rh.depth()), (0x10, 0));
    }

    #[test]
    fn ret_addr_translates_the_trampoline_only() {
        let rh = RethookStack::new();
        rh.push(0xaaaa, 7, 0x1000).unwrap();
        rh.push(0xbbbb, 7, 0x0f00).unwrap();
        let mut idx = 0;
        assert_eq!(rh.ret_addr(&mut idx, 0x1234, 0x0f00, TRAMPOLINE), 0x1234);
        assert_eq!(
            rh.ret_addr(&mut idx, TRAMPOLINE, 0x0f00, TRAMPOLINE),
            0xbbbb
        );
        assert_eq!(idx, 1);
        assert_eq!(
            rh.ret_addr(&mut idx, TRAMPOLINE, 0x1000, TRAMPOLINE),
            0xaaaa
        );
        assert_eq!(idx, 0);
        // A slot no frame is for stays the trampoline.
        assert_eq!(
            rh.ret_addr(&mut 0, TRAMPOLINE, 0x2000, TRAMPOLINE),
            TRAMPOLINE
        );
    }

    #[test]
    fn the_frame_index_is_the_graph_depth() {
        // Kretprobes' frames are on the task's other stack: a graph frame
        // pushed while one is in use still gets index = depth.
        let rs = ShadowStack::new();
        let rh = RethookStack::new();
        assert_eq!(push(&rs, 0x10, 0x1000, 1), Some((0, 1)));
        assert_eq!(rh.push(0x20, 5, 0x0f00), Some(0));
        assert_eq!(push(&rs, 0x7000, 0x0f00, 2), Some((1, 2)));
        assert_eq!(push(&rs, 0x30, 0x0e00, 3), Some((2, 3)));
    }

    const RETHOOK: u64 = TRAMPOLINE;
    const BOTH: [u64; 2] = [HANDLER, RETHOOK];

    #[test]
    fn unwind_through_both_trampolines_in_either_order() {
        // function_graph hijacked slot 0x1000 first, then a kretprobe: the
        // slot holds the kretprobe's trampoline, its frame's `ret` the
        // graph's handler; the real address is the graph frame's.
        let rs = ShadowStack::new();
        let rh = RethookStack::new();
        push(&rs, 0xaaaa, 0x1000, 1).unwrap();
        rh.push(HANDLER, 5, 0x1000).unwrap();
        let mut cur = RetAddrCursor::default();
        assert_eq!(
            unwind_ret_addr(&rs, &rh, &mut cur, RETHOOK, 0x1000, BOTH),
            0xaaaa
        );
        assert_eq!(
            cur,
            RetAddrCursor {
                graph: 0,
                rethook: 0
            }
        );
        // The other order: the kretprobe first, function_graph last.
        let rs = ShadowStack::new();
        let rh = RethookStack::new();
        rh.push(0xbbbb, 5, 0x1000).unwrap();
        push(&rs, RETHOOK, 0x1000, 1).unwrap();
        let mut cur = RetAddrCursor::default();
        assert_eq!(
            unwind_ret_addr(&rs, &rh, &mut cur, HANDLER, 0x1000, BOTH),
            0xbbbb
        );
        // Each stack alone: its own trampoline, not the other's.
        assert_eq!(rs.ret_addr(&mut 0, HANDLER, 0x1000, HANDLER), RETHOOK);
        assert_eq!(rs.ret_addr(&mut 0, RETHOOK, 0x1000, HANDLER), RETHOOK);
        assert_eq!(rh.ret_addr(&mut 0, RETHOOK, 0x1000, RETHOOK), 0xbbbb);
        // Not a trampoline, or a slot no frame is for: as it is.
        let mut cur = RetAddrCursor::default();
        assert_eq!(
            unwind_ret_addr(&rs, &rh, &mut cur, 0x1234, 0x1000, BOTH),
            0x1234
        );
        assert_eq!(
            unwind_ret_addr(&rs, &rh, &mut cur, RETHOOK, 0x2000, BOTH),
            RETHOOK
        );
        assert_eq!(cur, RetAddrCursor::default());
    }

    #[test]
    fn unwind_walks_both_stacks_outwards() {
        // Outermost first: slot 0x1000 graph-hijacked, 0x0f00 by a
        // kretprobe, 0x0e00 by both (graph first), 0x0d00 by the graph.
        let rs = ShadowStack::new();
        let rh = RethookStack::new();
        push(&rs, 0xa1, 0x1000, 1).unwrap();
        rh.push(0xa2, 7, 0x0f00).unwrap();
        push(&rs, 0xa3, 0x0e00, 1).unwrap();
        rh.push(HANDLER, 7, 0x0e00).unwrap();
        push(&rs, 0xa4, 0x0d00, 1).unwrap();
        let mut cur = RetAddrCursor::default();
        let mut walk = |ret, retp| unwind_ret_addr(&rs, &rh, &mut cur, ret, retp, BOTH);
        assert_eq!(walk(HANDLER, 0x0d00), 0xa4);
        assert_eq!(walk(RETHOOK, 0x0e00), 0xa3);
        assert_eq!(walk(RETHOOK, 0x0f00), 0xa2);
        assert_eq!(walk(HANDLER, 0x1000), 0xa1);
    }

    #[test]
    fn unwind_stops_on_a_loop() {
        // Corrupted stacks whose frames name each other's trampolines.
        let rs = ShadowStack::new();
        let rh = RethookStack::new();
        push(&rs, RETHOOK, 0x1000, 1).unwrap();
        rh.push(HANDLER, 7, 0x1000).unwrap();
        let mut cur = RetAddrCursor::default();
        let r = unwind_ret_addr(&rs, &rh, &mut cur, HANDLER, 0x1000, BOTH);
        assert!(BOTH.contains(&r));
    }
}
