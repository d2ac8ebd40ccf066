//! The function-graph core (Linux: kernel/trace/fgraph.c, and the generic
//! part of arch/x86/kernel/ftrace.c's `prepare_ftrace_return`).
//!
//! To see a function *return*, function_graph replaces the function's return
//! address on the stack with the address of `return_to_handler` (see
//! `arch::fgraph`), after saving the real one on the running task's
//! **shadow stack** (`Task::ret_stack`, a `tracer::fgraph::ShadowStack`,
//! whose push/pop protocol and checks are host-tested there). When the
//! function returns, it "returns" into `return_to_handler`, which calls
//! [`ftrace_return_to_handler`]: it pops the top frame, lets the tracer
//! record the exit, and hands back the real return address.
//!
//! - The stack belongs to the task, not to the CPU (Linux: `current->ret_stack`):
//!   a task preempted in the middle of a traced function may resume on
//!   another CPU, and the function must still return to the right place.
//! - When the stack is full the function is simply not hijacked and the
//!   task's `trace_overrun` counter goes up.
//! - Each frame records `retp`, the address of the stack slot it hijacked.
//!   The return checks it (Linux's frame-pointer test) and unwinders use it
//!   to translate `return_to_handler` back ([`ftrace_graph_ret_addr`]).
//! - A frame's index on the stack is its call's depth, as the graph prints
//!   it and `max_graph_depth` tests it.
//! - Two stacks per task, as on Linux: kretprobes hijack returns too (the
//!   rethook part below, Linux: kernel/trace/rethook.c), with their frames
//!   on the task's rethook stack (`Task::rethooks`, a
//!   `tracer::rethook::RethookStack`) and their own trampoline,
//!   `rethook_trampoline`. A slot both hijack returns through both
//!   trampolines, the last hijacker's first, each popping its own stack;
//!   [`ftrace_graph_ret_addr`] looks each trampoline up in its own stack,
//!   again if the answer is the other trampoline.
//! - One user at a time plugs in with [`register_ftrace_graph`] (a second
//!   gets EBUSY, as in Linux 6.1): the function_graph tracer, a latency
//!   tracer with `display-graph`, or the function profiler. Its
//!   `entryfunc` decides whether a call is hijacked, its `retfunc` sees
//!   every return of a hijacked call, and its `ops` is the ftrace_ops
//!   through which the calls reach the core (Linux: struct fgraph_ops).
//! - While a user is registered, a probe on the scheduler's switch hook
//!   ([`ftrace_graph_probe_sched_switch`]) implements the tracer's
//!   `sleep-time` option: when it is off, the time a task spends switched
//!   out is taken out of the durations of the calls it has in progress.
//!
//! Entry. `ftrace_caller` calls [`ftrace_graph_func`] (or a user's own
//! callback, see [`ftrace_graph_enter_user`]) with `parent_slot`,
//! the address of the stack slot that holds the traced function's return
//! address (see arch/x86_64/fgraph.rs for where that slot is in each
//! build). [`prepare_ftrace_return`] saves the old value on the task's
//! shadow stack and, if the tracer wants the call, writes
//! `return_to_handler` into the slot.
//!
//! With `tracing_on` 0 the entry callback returns at once, before pushing
//! a shadow frame (the function tracer's fast path does the same). Linux
//! 6.1 pushes the frame and pops it again when the tracer refuses the
//! call; the difference is only visible to `set_graph_function`, whose
//! "inside a selected function" state is not set for a call entered while
//! tracing was off.
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use super::ftrace::{self, recursion, FtraceOps};
use crate::arch::entry::PtRegs;
use crate::arch::fgraph::{
    rethook_trampoline_addr, return_to_handler_addr, return_trampolines, valid_return_slot,
};
use crate::events::sched::{register_trace_sched_switch, unregister_trace_sched_switch};
use crate::fs::Errno;
use crate::sched::Task;
pub use tracer::fgraph::{task_bits, FgraphFrame, ShadowStack, SHADOW_STACK_DEPTH};
pub use tracer::rethook::RetAddrCursor;
use tracer::trace_events::TaskInfo;

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
    /// The ftrace_ops registered while this user is: [`GRAPH_OPS`] (the
    /// global filter, skipped while `tracing_on` is 0) or an ops of the
    /// user's whose callback is [`ftrace_graph_entry_func`] or calls
    /// [`ftrace_graph_enter_user`].
    pub ops: &'static FtraceOps,
    /// What `return_to_handler` calls while this user is registered: None
    /// for the generic handler, or the user's own, which calls
    /// [`ftrace_return_to_handler_user`] (see there).
    pub return_handler: Option<extern "C" fn(u64) -> u64>,
}

static FGRAPH_OPS: AtomicPtr<FgraphOps> = AtomicPtr::new(core::ptr::null_mut());
/// The handler [`ftrace_return_to_handler`] jumps to: the registered
/// user's `return_handler`, or the generic [`ftrace_return_to_handler_any`].
static FGRAPH_RETURN: AtomicPtr<()> = AtomicPtr::new(GENERIC_RETURN);
const GENERIC_RETURN: *mut () = ftrace_return_to_handler_any as *mut ();
/// Set after a corrupted shadow stack: no more hijacking (Linux: kill_ftrace_graph).
static GRAPH_DEAD: AtomicBool = AtomicBool::new(false);

/// The ftrace_ops through which function_graph gets every function entry
/// (Linux: graph_ops, whose func is the arch's ftrace_graph_func). It
/// wants the records of the global filter, set_ftrace_filter/notrace.
pub static GRAPH_OPS: FtraceOps = FtraceOps::new("function_graph", ftrace_graph_func)
    .gated(&super::control::TRACING_ON)
    .with_hash(&super::global_ops::GLOBAL_HASH);

/// True once [`ftrace_graph_stop`] ran.
#[inline(always)]
pub fn ftrace_graph_is_dead() -> bool {
    GRAPH_DEAD.load(Ordering::Relaxed)
}

/// Stops hijacking for good after an error (Linux: ftrace_graph_stop).
pub fn ftrace_graph_stop() {
    GRAPH_DEAD.store(true, Ordering::SeqCst);
}

/// Registered return hijackers: function_graph users and kretprobes.
static HIJACKERS: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
/// Serialises the changes of [`HIJACKERS`] with their probes' walks.
static HIJACKERS_LOCK: spin::Mutex<()> = spin::Mutex::new(());

/// Told when the first return hijacker registers (`true`) and when the
/// last one goes (`false`): the function tracer's fast path trusts a
/// caller's return address only while none is registered.
pub static RETURN_HIJACKERS: crate::hook::Hook<fn(bool)> = crate::hook::Hook::new();

/// A return hijacker registers (`delta` 1, before its first hijack) or is
/// gone (-1): a function_graph user here, a kretprobe in kprobes.
pub fn return_hijackers_changed(delta: isize) {
    let _g = HIJACKERS_LOCK.lock();
    let before = if delta > 0 {
        HIJACKERS.fetch_add(1, Ordering::SeqCst)
    } else {
        HIJACKERS.fetch_sub(1, Ordering::SeqCst)
    };
    // 0 -> 1 or 1 -> 0.
    if (delta > 0 && before == 0) || (delta < 0 && before == 1) {
        for probe in RETURN_HIJACKERS.probes() {
            probe(delta > 0);
        }
    }
}

/// True while a return hijacker is registered.
pub fn return_hijackers() -> bool {
    HIJACKERS.load(Ordering::SeqCst) != 0
}

/// Durations include the time a task was switched out (the function_graph
/// tracer's `sleep-time` option, on by default; Linux: fgraph_sleep_time).
static FGRAPH_SLEEP_TIME: AtomicBool = AtomicBool::new(true);

/// Sets whether durations include the time a task was switched out
/// (Linux: ftrace_graph_sleep_time_control).
pub fn ftrace_graph_sleep_time_control(enable: bool) {
    FGRAPH_SLEEP_TIME.store(enable, Ordering::Relaxed);
}

/// The function profiler counts the time of a function's callees in its
/// time (the function_graph tracer's `graph-time` option, on by default;
/// Linux: fgraph_graph_time).
static FGRAPH_GRAPH_TIME: AtomicBool = AtomicBool::new(true);

/// Linux: ftrace_graph_graph_time_control.
pub fn ftrace_graph_graph_time_control(enable: bool) {
    FGRAPH_GRAPH_TIME.store(enable, Ordering::Relaxed);
}

/// The `graph-time` option's value.
#[inline(always)]
pub fn fgraph_graph_time() -> bool {
    FGRAPH_GRAPH_TIME.load(Ordering::Relaxed)
}

/// The probe's data: this probe needs none.
const NO_DATA: *mut () = core::ptr::null_mut();

/// Runs on every context switch while function_graph is registered (Linux:
/// ftrace_graph_probe_sched_switch, a probe on the sched_switch
/// tracepoint). With sleep-time off it stamps the task switched out and
/// moves the calltimes of the task switched in forward by the time it was
/// away; with sleep-time on it does nothing.
fn ftrace_graph_probe_sched_switch(
    _data: *mut (),
    _preempt: bool,
    prev: &TaskInfo,
    next: &TaskInfo,
    _prev_state: u32,
) {
    if FGRAPH_SLEEP_TIME.load(Ordering::Relaxed) {
        return;
    }
    // SAFETY: only the scheduler fires sched_switch, with its tasks' own
    // `trace_info()`; both tasks are alive across the switch.
    let (prev, next) = unsafe { (Task::from_trace_info(prev), Task::from_trace_info(next)) };
    let now = super::trace::trace_clock();
    prev.ret_stack.sched_out(now);
    next.ret_stack.sched_in(now);
}

/// Installs `ops` and starts hijacking the calls its ftrace_ops selects
/// (Linux: register_ftrace_graph). Only one user at a time: EBUSY, as in
/// Linux 6.1 (so the function profiler cannot be enabled while
/// function_graph is the current tracer, nor the other way round).
pub fn register_ftrace_graph(ops: &'static FgraphOps) -> Result<(), Errno> {
    let p = ops as *const FgraphOps as *mut FgraphOps;
    if FGRAPH_OPS
        .compare_exchange(core::ptr::null_mut(), p, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return Err(Errno::EBUSY);
    }
    // Linux: start_graph_tracing's register_trace_sched_switch.
    if let Err(e) = register_trace_sched_switch(ftrace_graph_probe_sched_switch, NO_DATA) {
        FGRAPH_OPS.store(core::ptr::null_mut(), Ordering::SeqCst);
        return Err(e);
    }
    // Frames pushed before (by an earlier user) go through the user's
    // handler too: it hands any return that is not its own to the generic
    // one.
    FGRAPH_RETURN.store(
        ops.return_handler.map_or(GENERIC_RETURN, |h| h as *mut ()),
        Ordering::SeqCst,
    );
    // Before the first hijack: the function tracer translates callers
    // through its slow path while this bit is set.
    return_hijackers_changed(1);
    if let Err(e) = ftrace::register_ftrace_function(ops.ops) {
        return_hijackers_changed(-1);
        FGRAPH_RETURN.store(GENERIC_RETURN, Ordering::SeqCst);
        let _ = unregister_trace_sched_switch(ftrace_graph_probe_sched_switch, NO_DATA);
        FGRAPH_OPS.store(core::ptr::null_mut(), Ordering::SeqCst);
        return Err(e);
    }
    Ok(())
}

/// Stops hijacking (Linux: unregister_ftrace_graph). Calls hijacked before
/// keep returning through `return_to_handler`, which pops them; their
/// returns are recorded only while a user is registered.
pub fn unregister_ftrace_graph(ops: &'static FgraphOps) {
    if !core::ptr::eq(
        fgraph_ops().map_or(core::ptr::null(), |o| o as *const _),
        ops,
    ) {
        return;
    }
    let _ = ftrace::unregister_ftrace_function(ops.ops);
    let _ = unregister_trace_sched_switch(ftrace_graph_probe_sched_switch, NO_DATA);
    // A return that still reads the old handler is handled right: it
    // checks that its user is the registered one.
    FGRAPH_RETURN.store(GENERIC_RETURN, Ordering::SeqCst);
    let p = ops as *const FgraphOps as *mut FgraphOps;
    let _ =
        FGRAPH_OPS.compare_exchange(p, core::ptr::null_mut(), Ordering::SeqCst, Ordering::SeqCst);
    // Calls hijacked before return as they did; a function such a call
    // tail-called and that is traced after this reports
    // `return_to_handler` as its caller (the function tracer's fast path
    // no longer translates once no hijacker is registered).
    return_hijackers_changed(-1);
}

#[inline(always)]
fn fgraph_ops() -> Option<&'static FgraphOps> {
    // SAFETY: null or a `&'static FgraphOps` stored by register_ftrace_graph.
    unsafe { FGRAPH_OPS.load(Ordering::Acquire).as_ref() }
}

/// True if `ops` is the registered user.
#[inline(always)]
fn fgraph_ops_is(ops: &'static FgraphOps) -> bool {
    core::ptr::eq(FGRAPH_OPS.load(Ordering::Acquire), ops)
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
        tracing_on = sym super::control::TRACING_ON,
        enter = sym ftrace_graph_enter,
    )
}

/// The part of [`ftrace_graph_func`] that runs with `tracing_on` 1.
extern "C" fn ftrace_graph_enter(ip: u64, parent_slot: *mut u64, _op: &FtraceOps) {
    if let Some(ops) = fgraph_ops() {
        prepare_ftrace_return(ip, parent_slot, ops);
    }
}

/// The callback of a graph user's own ftrace_ops that wants every call
/// whatever `tracing_on` (the function profiler's; Linux's fgraph_ops.ops
/// with ftrace_graph_func).
pub extern "C" fn ftrace_graph_entry_func(ip: u64, parent_slot: *mut u64, _op: &FtraceOps) {
    if let Some(ops) = fgraph_ops() {
        prepare_ftrace_return(ip, parent_slot, ops);
    }
}

/// The entry of a user with its own ftrace_ops callback, which calls this
/// with its own static `ops` (the function_graph tracer's): if `ops` is
/// the registered user, its `entryfunc` is a direct call, inlined here,
/// instead of a call through the registered ops (Linux 6.x: the static
/// call fgraph uses while it has a single user).
#[inline(always)]
pub fn ftrace_graph_enter_user(ip: u64, parent_slot: *mut u64, ops: &'static FgraphOps) {
    if fgraph_ops_is(ops) {
        prepare_ftrace_return(ip, parent_slot, ops);
    }
}

/// Pushes the return address in `*parent_slot` on the task's shadow stack
/// and replaces it with `return_to_handler` if `ops`, the registered user,
/// wants this call of the function at `ip` (Linux: prepare_ftrace_return).
#[inline(always)]
fn prepare_ftrace_return(ip: u64, parent_slot: *mut u64, ops: &FgraphOps) {
    // LAB 4 BEGIN: prepare_ftrace_return (save the return address on the shadow stack, hijack the slot)
    // LAB 4 STUB: let _ = (ip, parent_slot, ops, recursion::trylock, return_to_handler_addr); // what you will use
    // LAB 4 STUB: // Only the first call panics; the calls the panic makes on its way are not traced.
    // LAB 4 STUB: if GRAPH_DEAD.swap(true, Ordering::SeqCst) {
    // LAB 4 STUB:     return;
    // LAB 4 STUB: }
    // LAB 4 STUB: unimplemented!("lab 4: prepare_ftrace_return: push the return address and hijack *parent_slot")
    // Linux's skip_ftrace_return(): a dead graph, or a slot that is not on
    // a kernel stack.
    let slot = parent_slot as u64;
    if ftrace_graph_is_dead() || !valid_return_slot(slot) {
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
    if function_graph_enter(old, ip, slot, ops) {
        // SAFETY: as above.
        unsafe { parent_slot.write(return_to_handler_addr()) };
    }
    recursion::unlock(bit);
    // LAB 4 END
}

/// Pushes a frame for `func`, whose return address `ret` sits in slot
/// `retp`, and asks the user `ops` whether to trace it. True: the caller
/// must now replace `*retp` with `return_to_handler` (Linux:
/// function_graph_enter_regs + ftrace_push_return_trace). The caller holds
/// the recursion lock, so preemption is off.
#[inline(always)]
pub fn function_graph_enter(ret: u64, func: u64, retp: u64, ops: &FgraphOps) -> bool {
    // LAB 4 BEGIN: function_graph_enter (push a shadow frame, ask the tracer)
    // LAB 4 STUB: let _ = (ret, func, retp, ops);
    // LAB 4 STUB: unimplemented!("lab 4: function_graph_enter: push a frame on the task's shadow stack")
    let Some(task) = crate::sched::current() else {
        return false;
    };
    let rs = &task.ret_stack;
    // The clock read is inlined (as a plain closure or the function item,
    // the compiler calls it once the user's hook is inlined too).
    #[allow(clippy::redundant_closure)] // the closure carries #[inline(always)]
    let Some((idx, calltime)) = rs.push(
        ret,
        func,
        retp,
        #[inline(always)]
        || super::trace::trace_clock(),
    ) else {
        return false;
    };
    let trace = FtraceGraphEnt {
        func,
        depth: idx as i32,
        calltime,
    };
    if (ops.entryfunc)(&trace, rs) {
        return true;
    }
    rs.unreserve(idx);
    false
    // LAB 4 END
}

// ---------------------------------------------------------------------------
// Rethook: returns hijacked for kretprobes (Linux: kernel/trace/rethook.c),
// on the task's own stack of them (`Task::rethooks`, a
// `tracer::rethook::RethookStack`, host-tested there), apart from the
// shadow stack so that a graph frame's index stays its depth. A frame
// holds the kretprobe's cookie; the slot holds `rethook_trampoline`
// (arch), not `return_to_handler`: the function returns there, which
// saves every register and calls [`rethook_trampoline_handler`]. A slot
// hijacked by both function_graph and a kretprobe returns through the two
// trampolines in turn, the last hijacker's first, each popping the top
// frame of its own stack and going on to the address that frame saved:
// the other trampoline, then the real caller.

/// `fn(cookie, regs)`, run when a rethook frame returns.
static RETHOOK_HANDLER: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// Installs the handler of rethook frames: `cookie` is the frame's, `regs`
/// the registers at the return (`rip` the real return address, `rsp`
/// the stack pointer after the return).
pub fn set_rethook_handler(handler: fn(u64, &mut PtRegs)) {
    RETHOOK_HANDLER.store(handler as usize, Ordering::Release);
}

/// Hijacks the return address in `*slot` for `cookie`: pushes a frame on
/// the running task's rethook stack and writes `rethook_trampoline` into
/// the slot (Linux: rethook_hook). False if there is no task, the stack is
/// full or the graph is dead (a corrupted stack was met).
///
/// # Safety
/// `slot` must hold the return address of a function stopped at its first
/// instruction or its function-tracing call site, on the running task's
/// stack.
#[inline]
pub unsafe fn rethook_hijack(cookie: u64, slot: *mut u64) -> bool {
    if ftrace_graph_is_dead() || !valid_return_slot(slot as u64) {
        return false;
    }
    let Some(task) = crate::sched::current() else {
        return false;
    };
    // SAFETY: the caller's contract: the slot holds the return address of a
    // function at its entry, on the running task's stack.
    let ret = unsafe { slot.read() };
    if task.rethooks.push(ret, cookie, slot as u64).is_none() {
        return false;
    }
    // SAFETY: as above.
    unsafe { slot.write(rethook_trampoline_addr()) };
    true
}

/// Called by `rethook_trampoline` (arch) when a function whose return a
/// kretprobe hijacked returns, with every register saved in `regs`; the
/// slot its `ret` used is just above them. Runs the rethook handler with
/// `regs.rip` = the real return address and `regs.rsp` = the stack
/// pointer after the return, pops the frame and gives back the real
/// return address (Linux: `arch_rethook_trampoline_callback` and
/// `rethook_trampoline_handler`). The top frame of the task's rethook
/// stack must be for this slot (a LIFO check, as the graph's).
#[no_mangle]
pub extern "C" fn rethook_trampoline_handler(regs: &mut PtRegs) -> u64 {
    let retp = regs as *const PtRegs as u64 + core::mem::size_of::<PtRegs>() as u64;
    let task = crate::sched::current();
    let top = match task.as_deref() {
        Some(t) => t.rethooks.top(retp),
        None => Err(tracer::fgraph::BadFrame {
            depth: 0,
            top_retp: 0,
            top_func: 0,
        }),
    };
    let (idx, frame) = match top {
        Ok(top) => top,
        Err(bad) => bad_rethook_frame(retp, bad),
    };
    regs.rip = frame.ret;
    regs.rsp = retp + 8;
    regs.cs = u64::from(crate::arch::gdt::KERNEL_CS.0);
    let h = RETHOOK_HANDLER.load(Ordering::Acquire);
    if h != 0 {
        // SAFETY: only set_rethook_handler stores here, a fn of this type.
        let h: fn(u64, &mut PtRegs) = unsafe { core::mem::transmute(h) };
        h(frame.cookie, regs);
    }
    task.as_ref().expect("checked above").rethooks.release(idx);
    frame.ret
}

/// A kretprobe's return through slot `retp` that the rethook stack's top
/// frame is not for: nowhere safe to return to (Linux's rethook WARNs and
/// returns to a bogus address; the graph's check panics, as here).
#[cold]
fn bad_rethook_frame(retp: u64, bad: tracer::fgraph::BadFrame) -> ! {
    ftrace_graph_stop();
    panic!(
        "rethook: bad frame: return through slot {:#x}, rethook stack depth {}, top slot {:#x} (cookie {:#x})",
        retp, bad.depth, bad.top_retp, bad.top_func
    );
}

/// The top frame of `task`'s shadow stack, which must be for slot `retp`,
/// and its index; a panic if it is not (see [`bad_frame`]).
#[inline(always)]
fn top_frame(task: Option<&crate::sched::Task>, retp: u64) -> (usize, tracer::fgraph::FgraphFrame) {
    let top = match task {
        Some(t) => t.ret_stack.top(retp),
        None => Err(tracer::fgraph::BadFrame {
            depth: 0,
            top_retp: 0,
            top_func: 0,
        }),
    };
    match top {
        Ok(top) => top,
        Err(bad) => bad_frame(retp, bad),
    }
}

/// A return through slot `retp` that the shadow stack's top frame is not
/// for: there is nowhere safe to return to (Linux: "Bad function graph
/// frame pointer", then it returns to panic()).
#[cold]
fn bad_frame(retp: u64, bad: tracer::fgraph::BadFrame) -> ! {
    ftrace_graph_stop();
    panic!(
        "ftrace: bad function graph frame: return through slot {:#x}, shadow stack depth {}, top slot {:#x} (from {})",
        retp,
        bad.depth,
        bad.top_retp,
        crate::kallsyms::describe(bad.top_func)
    );
}

/// Called by `return_to_handler` when a hijacked function returns, with
/// `retp` = the slot its `ret` used. Pops the frame, reports the return and
/// gives back the real return address (Linux: ftrace_return_to_handler).
/// `return_to_handler` (arch/x86_64/fgraph.rs) calls it by this name.
///
/// It jumps to the registered user's own handler if it has one (the
/// function_graph tracer's: its hooks are then direct calls), or to the
/// generic one, [`ftrace_return_to_handler_any`]; arguments untouched.
#[unsafe(naked)]
#[no_mangle]
pub extern "C" fn ftrace_return_to_handler(retp: u64) -> u64 {
    core::arch::naked_asm!(
        "jmp qword ptr [rip + {handler}]",
        handler = sym FGRAPH_RETURN,
    )
}

/// The generic return handler: reports to whichever user is registered,
/// through its ops, under the recursion lock (a user's `retfunc` may call
/// traced functions, whose entries the lock then refuses). A return met
/// while the lock is taken is still popped, only not reported.
extern "C" fn ftrace_return_to_handler_any(retp: u64) -> u64 {
    let bit = recursion::trylock(recursion::FTRACE_START);
    let ret = ftrace_return_to_handler_for(retp, bit.and(fgraph_ops()));
    if let Some(bit) = bit {
        recursion::unlock(bit);
    }
    ret
}

/// The return handler of a user with its own (its `return_handler`, which
/// calls this with its own static `ops`): while `ops` is the registered
/// user its `retfunc` is a direct call, inlined here; otherwise the
/// generic handler runs.
///
/// Only for a user whose `retfunc` runs notrace code alone (the
/// function_graph tracer's: kernel::trace and the tracer crate): nothing
/// it runs can re-enter the tracer, so it takes no recursion lock, as
/// Linux's ftrace_return_to_handler takes none; preemption stays off for
/// the per-CPU buffer.
#[inline(always)]
pub fn ftrace_return_to_handler_user(retp: u64, ops: &'static FgraphOps) -> u64 {
    if !fgraph_ops_is(ops) {
        return ftrace_return_to_handler_any(retp);
    }
    crate::sched::preempt_disable_notrace();
    let ret = ftrace_return_to_handler_for(retp, Some(ops));
    crate::sched::preempt_enable_notrace();
    ret
}

/// Pops the frame for slot `retp`, reports the return to `ops` (the
/// registered user, if any) and gives back the real return address. The
/// caller keeps preemption off, and holds the recursion lock if the
/// user's `retfunc` may call traced functions.
#[inline(always)]
fn ftrace_return_to_handler_for(retp: u64, ops: Option<&FgraphOps>) -> u64 {
    // LAB 4 BEGIN: ftrace_return_to_handler (pop the shadow frame, report the return, give back the real address)
    // LAB 4 STUB: let _ = (retp, ops, top_frame); // what you will use
    // LAB 4 STUB: ftrace_graph_stop();
    // LAB 4 STUB: unimplemented!("lab 4: ftrace_return_to_handler: pop the shadow frame whose slot is retp")
    let task = crate::sched::current();
    let (idx, frame) = top_frame(task.as_deref(), retp);
    let rs = &task.as_ref().expect("checked above").ret_stack;
    let rettime = super::trace::trace_clock();
    if let Some(ops) = ops {
        let trace = FtraceGraphRet {
            func: frame.func,
            depth: idx as i32,
            overrun: rs.overrun(),
            calltime: frame.calltime,
            rettime,
        };
        (ops.retfunc)(&trace, rs);
    }
    rs.release(idx);
    frame.ret
    // LAB 4 END
}

/// The real return address for a stack slot `retp` that holds `ret`, from
/// the running task's two stacks: `return_to_handler` from the shadow
/// stack, `rethook_trampoline` from the rethook stack, and again if that
/// gives the other trampoline (Linux: ftrace_graph_ret_addr and
/// rethook_find_ret_addr; see `tracer::rethook::unwind_ret_addr`). `cur`
/// keeps the search positions between the frames of one unwind.
pub fn ftrace_graph_ret_addr(cur: &mut RetAddrCursor, ret: u64, retp: u64) -> u64 {
    match crate::sched::current() {
        Some(task) => tracer::rethook::unwind_ret_addr(
            &task.ret_stack,
            &task.rethooks,
            cur,
            ret,
            retp,
            return_trampolines(),
        ),
        None => ret,
    }
}

/// [`ftrace_graph_ret_addr`] for one slot, outside an unwind: the real
/// caller a traced function returns to (the function tracer's parent,
/// the stack tracer's and the irqs-off sections' callers).
pub fn ftrace_ret_addr_of(ret: u64, retp: u64) -> u64 {
    ftrace_graph_ret_addr(&mut RetAddrCursor::default(), ret, retp)
}
