//! The stack tracer: which call chain used the most stack (Linux:
//! kernel/trace/trace_stack.c).
//!
//! While it is on (`echo 1 > /proc/sys/kernel/stack_tracer_enabled`, or the
//! boot option `stacktrace`), an ftrace_ops calls [`stack_trace_call`] at
//! the entry of every function, or of those `stack_trace_filter` lists
//! (also `stacktrace_filter=LIST` at boot). With preemption off and this
//! CPU's recursion counter taken, the callback measures the stack in use:
//! from one of its local variables up to the top of the running task's own
//! stack (calls on another stack, an idle task's boot stack or an
//! exception's IST stack, are left out, as Linux leaves out the IRQ
//! stacks). Only when that is deeper than the deepest so far does it take
//! the lock, walk the frame pointers and let `tracer::stack_trace` find
//! each return address on the stack: their depths give each frame's size,
//! without the tracer's own frames. `stack_max_size` shows the deepest
//! size (writing a number sets it: 0 starts over); `stack_trace` the chain
//! as Linux prints it.
//!
//! The per-CPU counter (Linux: disable_stack_tracer) is also taken by the
//! file handlers while they hold the lock with interrupts off, so that a
//! traced function they call never waits for the lock its own CPU holds.
use alloc::boxed::Box;
use alloc::string::String;
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use spin::{Lazy, Mutex};
use tracer::filter::{FtraceFilter, RegexFile};
use tracer::stack_trace::{
    parse_boot_options, stack_filter_command, StackTrace, STACK_TRACE_ENTRIES,
};

use super::ftrace::{self, recursion, FtraceOps};
use super::functions::ftrace_regex_open;
use super::global_ops::RecordNames;
use crate::arch::ftrace::{FRAME_SET_UP_AT_CALL, MCOUNT_INSN_SIZE};
use crate::arch::percpu;
use crate::fs::tracefs::{self, Dentry, SeqFile, TRACE_MODE_READ, TRACE_MODE_WRITE};
use crate::fs::{Errno, OpenFile, OpenFlags};

/// The stack tracer's ops: its own set, `stack_trace_filter`'s (all
/// functions while the filter is empty).
static STACK_OPS: FtraceOps = FtraceOps::new("stack_trace", stack_trace_call);

/// The deepest stack and its chain (Linux: stack_trace_max_lock and what
/// it guards). Taken with interrupts off and this CPU's counter held.
static STACK: Mutex<StackTrace> = Mutex::new(StackTrace::new());
/// Copies of the max and of the tracer's frame size for the callback's
/// unlocked first test; written under [`STACK`].
static MAX_SIZE: AtomicU64 = AtomicU64::new(0);
static TRACER_FRAME: AtomicU64 = AtomicU64::new(0);

/// Per CPU: non-zero while this CPU is inside the stack tracer (Linux:
/// disable_stack_tracer).
static DISABLE: [AtomicU32; percpu::MAX_CPUS] = [const { AtomicU32::new(0) }; percpu::MAX_CPUS];

/// `stack_tracer_enabled` as written (Linux keeps the int: 2 reads back 2).
static ENABLED: AtomicI32 = AtomicI32::new(0);
/// Whether [`STACK_OPS`] is registered; serialises enabling and the
/// filter's installation (Linux: stack_sysctl_mutex).
static REGISTERED: Mutex<bool> = Mutex::new(false);

/// `stack_trace_filter` (only its filter part is used).
static FILTER: Lazy<Mutex<FtraceFilter>> = Lazy::new(|| Mutex::new(FtraceFilter::new()));

/// The callback (Linux: stack_trace_call): `local` is the variable whose
/// address marks how deep the stack is.
extern "C" fn stack_trace_call(ip: u64, parent_slot: *mut u64, _op: &FtraceOps) {
    let Some(bit) = recursion::trylock(recursion::FTRACE_START) else {
        return;
    };
    // Preemption is off (trylock): this CPU's counter is ours.
    let disable = &DISABLE[crate::arch::cpu_id()];
    let n = disable.load(Ordering::Relaxed) + 1;
    disable.store(n, Ordering::Relaxed);
    if n == 1 {
        let local = 0u64;
        let sp = core::hint::black_box(&local) as *const u64 as u64;
        // The return address into the traced function (Linux:
        // ip += MCOUNT_INSN_SIZE).
        check_stack(ip + MCOUNT_INSN_SIZE, sp, parent_slot);
    }
    disable.store(n - 1, Ordering::Relaxed);
    recursion::unlock(bit);
}

/// Linux's check_stack: records the chain if the stack from `sp` up is the
/// deepest so far. `parent_slot` holds the traced function's return
/// address.
#[inline(never)]
fn check_stack(ip: u64, sp: u64, parent_slot: *mut u64) {
    let Some((bottom, top)) = crate::sched::current().and_then(|t| t.stack_range()) else {
        return;
    };
    // Not on the task's stack (Linux: object_is_on_stack).
    if sp < bottom || sp >= top {
        return;
    }
    let this_size = (top - sp).saturating_sub(TRACER_FRAME.load(Ordering::Relaxed));
    if this_size <= MAX_SIZE.load(Ordering::Relaxed) {
        return;
    }
    // Not from an NMI-like exception (Linux: in_nmi()).
    if percpu::this_cpu_irq_exception_depth() >> 32 != 0 {
        return;
    }
    let fp = crate::arch::frame_pointer();
    let nwords = ((top - sp) / 8) as usize;
    // Without the traced function's frame (fentry), the walk misses its
    // return address: it is added after the ip's entry.
    let parent = (!FRAME_SET_UP_AT_CALL).then(|| {
        // SAFETY: ftrace_caller passes the address of the stack slot
        // holding the traced function's return address.
        let ret = unsafe { *parent_slot };
        (
            ret,
            super::fgraph::ftrace_ret_addr_of(ret, parent_slot as u64),
        )
    });
    crate::irqflags::without_interrupts(|| {
        let mut st = STACK.lock();
        st.check_stack(
            ip,
            nwords,
            |k| {
                // SAFETY: sp + 8k is below `top` (k < nwords) and above
                // `sp`, a live local: inside the running task's own
                // stack, mapped and 8-aligned (a u64 local). Volatile: the
                // words are the live stack, not memory Rust may assume
                // unchanged.
                unsafe { core::ptr::read_volatile((sp + 8 * k as u64) as *const u64) }
            },
            |raw, real| {
                let mut n = 0;
                let mut push = |r: u64, re: u64| {
                    if n < raw.len() {
                        raw[n] = r;
                        real[n] = re;
                        n += 1;
                    }
                };
                crate::arch::traps::walk_frames(fp, STACK_TRACE_ENTRIES, |ret, real_ret| {
                    push(ret, real_ret);
                    if let (true, Some((r, re))) = (real_ret == ip, parent) {
                        push(r, re);
                    }
                });
                n
            },
        );
        MAX_SIZE.store(st.max_size(), Ordering::Relaxed);
        TRACER_FRAME.store(st.tracer_frame(), Ordering::Relaxed);
    });
}

/// Runs `f` on the locked state, with interrupts off and this CPU's
/// counter held (Linux: t_start/t_stop, stack_max_size_write).
fn with_stack_locked<R>(f: impl FnOnce(&mut StackTrace) -> R) -> R {
    crate::irqflags::without_interrupts(|| {
        let disable = &DISABLE[crate::arch::cpu_id()];
        disable.fetch_add(1, Ordering::Relaxed);
        let r = {
            let mut st = STACK.lock();
            let r = f(&mut st);
            MAX_SIZE.store(st.max_size(), Ordering::Relaxed);
            r
        };
        disable.fetch_sub(1, Ordering::Relaxed);
        r
    })
}

/// `stack_max_size`: read `%ld`, written with a number (Linux:
/// kstrtoul_from_user: EINVAL, ERANGE).
fn max_size_store(text: &str) -> Result<(), Errno> {
    let v = tracefs::parse_ulong(text)?;
    with_stack_locked(|st| st.set_max_size(v));
    Ok(())
}

/// The `stack_trace` text.
fn stack_trace_show() -> String {
    let enabled = ENABLED.load(Ordering::Relaxed) != 0;
    with_stack_locked(|st| {
        st.show(enabled, |s, addr| {
            s.push_str(&crate::kallsyms::describe(addr));
        })
    })
}

/// Points the ops at the filter's functions (all while it is empty).
fn apply_filter(filter: &FtraceFilter) {
    STACK_OPS
        .func_hash()
        .get_or_init()
        .store(|i| filter.traces(i));
}

/// Installs an edited `stack_trace_filter` when the file is closed; if the
/// code cannot be patched to match, the previous filter goes back.
fn install_filter(new: FtraceFilter) -> Result<(), Errno> {
    let registered = REGISTERED.lock();
    let old = core::mem::replace(&mut *FILTER.lock(), new);
    apply_filter(&FILTER.lock());
    if !*registered {
        return Ok(());
    }
    let Err(e) = ftrace::ftrace_update() else {
        return Ok(());
    };
    *FILTER.lock() = old;
    apply_filter(&FILTER.lock());
    if let Err(e2) = ftrace::ftrace_update() {
        println!("stack tracer: cannot restore the previous filter: {e2}");
    }
    Err(e)
}

/// One write to `stack_trace_filter`: function globs as in
/// `set_ftrace_filter` (the same parser); its commands need a trace array,
/// which this ops has not (Linux: ENODEV), an unknown one is EINVAL.
fn filter_write(f: &mut FtraceFilter, buf: &[u8]) -> Result<(), Errno> {
    let text = core::str::from_utf8(buf).map_err(|_| Errno::EINVAL)?;
    for tok in text.split_ascii_whitespace() {
        if let Some(e) = stack_filter_command(tok) {
            return Err(e);
        }
        f.write(RegexFile::Filter, false, tok.as_bytes(), &RecordNames)?;
    }
    Ok(())
}

fn filter_open(flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno> {
    ftrace_regex_open(
        &FILTER,
        RegexFile::Filter,
        flags,
        filter_write,
        install_filter,
    )
}

/// A write to `/proc/sys/kernel/stack_tracer_enabled` (Linux:
/// stack_trace_sysctl): registers the ops when the value becomes non-zero,
/// unregisters it when it becomes 0. If registering fails, nothing changes.
pub fn stack_trace_sysctl(val: i32) -> Result<(), Errno> {
    let mut registered = REGISTERED.lock();
    let want = val != 0;
    if want && !*registered {
        apply_filter(&FILTER.lock());
        ftrace::register_ftrace_function(&STACK_OPS)?;
    } else if !want && *registered {
        // Linux ignores the result too: the ops is off the list either way.
        let _ = ftrace::unregister_ftrace_function(&STACK_OPS);
    }
    *registered = want;
    ENABLED.store(val, Ordering::Relaxed);
    Ok(())
}

/// The value of `stack_tracer_enabled`.
pub fn stack_tracer_enabled() -> i32 {
    ENABLED.load(Ordering::Relaxed)
}

/// Creates `stack_max_size`, `stack_trace` and `stack_trace_filter` at the
/// top of tracefs and applies the boot options (Linux: stack_trace_init and
/// enable_stacktrace; a `stacktrace_filter=` entry that matches nothing is
/// ignored, as ftrace_set_early_filter ignores it).
pub fn init(root: &Dentry) -> Result<(), Errno> {
    tracefs::create_show_store(
        root,
        "stack_max_size",
        TRACE_MODE_WRITE,
        // Linux prints the unsigned long with %ld.
        || alloc::format!("{}\n", with_stack_locked(|st| st.max_size()) as i64),
        Some(max_size_store),
    )?;
    tracefs::create_file(root, "stack_trace", TRACE_MODE_READ, |_flags| {
        Ok(Box::new(SeqFile::new(stack_trace_show())) as Box<dyn OpenFile>)
    })?;
    tracefs::create_file(root, "stack_trace_filter", TRACE_MODE_WRITE, filter_open)?;

    let (enabled, filter) = parse_boot_options(crate::cmdline());
    if let Some(list) = filter {
        let mut f = FILTER.lock();
        // Each entry is a glob, never a command (Linux: ftrace_set_regex).
        for glob in list.split(',').filter(|g| !g.contains(':')) {
            let _ = f.write(RegexFile::Filter, false, glob.as_bytes(), &RecordNames);
        }
    }
    if enabled {
        if let Err(e) = stack_trace_sysctl(1) {
            println!("stack tracer: cannot start: {e}");
        }
    }
    Ok(())
}
