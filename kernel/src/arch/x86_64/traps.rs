//! What happens after the entry stubs: exceptions and device interrupts
//! (Linux: arch/x86/kernel/traps.c, irq.c, dumpstack.c).
//!
//! An exception the kernel cannot handle prints its name, error code, RIP and
//! a frame-pointer backtrace, then ends QEMU with [`super::PANIC_EXIT`].
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::apic;
use super::entry::PtRegs;
use super::percpu::this_cpu;

const EXCEPTION_NAMES: [&str; 32] = [
    "divide error",
    "debug",
    "NMI",
    "int3",
    "overflow",
    "bounds",
    "invalid opcode",
    "device not available",
    "double fault",
    "coprocessor segment overrun",
    "invalid TSS",
    "segment not present",
    "stack segment",
    "general protection fault",
    "page fault",
    "reserved 15",
    "x87 floating point",
    "alignment check",
    "machine check",
    "SIMD floating point",
    "virtualization",
    "control protection",
    "reserved 22",
    "reserved 23",
    "reserved 24",
    "reserved 25",
    "reserved 26",
    "reserved 27",
    "hypervisor injection",
    "VMM communication",
    "security",
    "reserved 31",
];

/// A handler for int3 installed by the code patcher: returns true when the
/// breakpoint was one of its own and `regs` now says where to resume.
static INT3_HOOK: AtomicUsize = AtomicUsize::new(0);
/// The int3 handler of kprobes, asked after the patcher's.
static KPROBE_INT3_HOOK: AtomicUsize = AtomicUsize::new(0);
/// The debug-exception (#DB) handler of kprobes: its single steps.
static KPROBE_DEBUG_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Installs the int3 handler of the code patcher (Linux: poke_int3_handler).
pub fn set_int3_hook(hook: fn(&mut PtRegs) -> bool) {
    INT3_HOOK.store(hook as usize, Ordering::Release);
}

/// Installs the breakpoint and single-step handlers of kprobes (Linux:
/// kprobe_int3_handler and kprobe_debug_handler, which do_int3 and
/// exc_debug call). Each returns true when the exception was its own.
pub fn set_kprobe_hooks(int3: fn(&mut PtRegs) -> bool, debug: fn(&mut PtRegs) -> bool) {
    KPROBE_INT3_HOOK.store(int3 as usize, Ordering::Release);
    KPROBE_DEBUG_HOOK.store(debug as usize, Ordering::Release);
}

#[inline(always)]
fn call_hook(hook: &AtomicUsize, regs: &mut PtRegs) -> bool {
    let hook = hook.load(Ordering::Acquire);
    if hook == 0 {
        return false;
    }
    // SAFETY: only the setters above store here, always valid fn pointers
    // of this type.
    let hook: fn(&mut PtRegs) -> bool = unsafe { core::mem::transmute(hook) };
    hook(regs)
}

/// The entry stubs' common handler: `regs` is the interrupted context.
#[no_mangle]
extern "C" fn interrupt_dispatch(regs: &mut PtRegs) {
    let vector = regs.vector as u8;
    if vector < 32 {
        let cpu = this_cpu();
        cpu.exception_depth.fetch_add(1, Ordering::Relaxed);
        exception(regs);
        cpu.exception_depth.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    if vector == apic::SPURIOUS_VECTOR {
        return;
    }
    // The CPU turned interrupts off to deliver this one: if they were on,
    // say so, and say that the return turns them on again (Linux:
    // irqentry_enter / irqentry_exit). Exceptions say nothing: int3 must
    // not run a site the code patcher may be changing.
    let irqs_were_on = regs.rflags & super::irqflags::X86_EFLAGS_IF != 0;
    if irqs_were_on {
        crate::irqflags::irqentry_hardirqs_off();
    }
    super::percpu::this_cpu_hardirq_enter();
    // The traceable part, in the irq-entry section (function_graph's arrows).
    super::irq::handle_irq(vector);
    super::percpu::this_cpu_hardirq_exit();
    if irqs_were_on {
        // Preempt the interrupted task if it asked for it and was preemptible.
        crate::sched::preempt_on_irq_exit();
        crate::irqflags::irqentry_hardirqs_on();
    }
}

fn exception(regs: &mut PtRegs) {
    let vector = regs.vector as usize;
    match vector {
        3 if do_int3(regs) => return,
        1 if call_hook(&KPROBE_DEBUG_HOOK, regs) => return,
        _ => {}
    }
    die(EXCEPTION_NAMES[vector], regs);
}

/// The breakpoint: the code patcher's in-flight sites first, then kprobes
/// (Linux: do_int3). The handler runs on the interrupted stack (the entry
/// left a gap below it for an emulated push), so a breakpoint inside a
/// probe's handler nests like any exception.
fn do_int3(regs: &mut PtRegs) -> bool {
    call_hook(&INT3_HOOK, regs) || call_hook(&KPROBE_INT3_HOOK, regs)
}

static DYING: AtomicBool = AtomicBool::new(false);

/// Prints the exception report and ends QEMU (Linux: die + panic).
pub fn die(name: &str, regs: &PtRegs) -> ! {
    if DYING.swap(true, Ordering::SeqCst) {
        // A second CPU, or a fault while reporting: stop quietly.
        super::exit_qemu(super::PANIC_EXIT);
    }
    crate::console::force_unlock();
    crate::println!(
        "\n*** kernel exception on cpu{}: {} (vector {}), error code {:#x}",
        super::cpu_id(),
        name,
        regs.vector,
        regs.error_code
    );
    if regs.vector == 14 {
        let cr2: u64;
        // SAFETY: reads CR2, the faulting address.
        unsafe { core::arch::asm!("mov {}, cr2", out(reg) cr2, options(nomem, nostack)) };
        crate::println!("faulting address (cr2): {cr2:#018x}");
    }
    crate::println!(
        "RIP: {:#018x} {}",
        regs.rip,
        crate::kallsyms::describe(regs.rip)
    );
    crate::println!(
        "RSP: {:#018x} RBP: {:#018x} RFLAGS: {:#x}",
        regs.rsp,
        regs.rbp,
        regs.rflags
    );
    crate::println!(
        "RAX: {:#018x} RBX: {:#018x} RCX: {:#018x} RDX: {:#018x}",
        regs.rax,
        regs.rbx,
        regs.rcx,
        regs.rdx
    );
    crate::println!(
        "RSI: {:#018x} RDI: {:#018x} R8: {:#018x} R9: {:#018x}",
        regs.rsi,
        regs.rdi,
        regs.r8,
        regs.r9
    );
    print_backtrace(regs.rbp);
    crate::panic::notify();
    crate::println!("---[ end Kernel panic ]---");
    super::exit_qemu(super::PANIC_EXIT);
}

/// Walks the frame-pointer chain from `rbp` and prints each return address
/// (Linux: show_trace_log_lvl with the frame-pointer unwinder). A return
/// address that function_graph replaced by `return_to_handler`, or a
/// kretprobe by `rethook_trampoline`, is printed as Linux does: the
/// trampoline as an unreliable `?` hint, then the real caller from the
/// task's shadow stack or rethook stack (ftrace_graph_ret_addr,
/// rethook_find_ret_addr).
pub fn print_backtrace(rbp: u64) {
    crate::println!("Call Trace:");
    walk_frames(rbp, 32, |ret, real| {
        if real != ret {
            crate::println!(" [<{:016x}>] ? {}", ret, crate::kallsyms::describe(ret));
        }
        crate::println!(
            " [<{:016x}>] {}",
            real,
            crate::kallsyms::describe_return(real)
        );
    });
}

/// Walks at most `max` frames of the frame-pointer chain from `rbp`, calling
/// `f(ret, real)` for each return address: `real` is `ret` unless
/// function_graph or a kretprobe replaced it with its trampoline, then it
/// is the caller's real address (from the task's two stacks:
/// `tracer::rethook::unwind_ret_addr`). Stops at a frame pointer that is not a mapped,
/// aligned kernel address, or that does not go up the stack, so a corrupt
/// chain cannot fault (Linux: the frame-pointer unwinder).
pub fn walk_frames(mut rbp: u64, max: usize, mut f: impl FnMut(u64, u64)) {
    let mut cur = tracer::rethook::RetAddrCursor::default();
    let task = crate::sched::current();
    let handlers = super::fgraph::return_trampolines();
    for _ in 0..max {
        if rbp < 0xffff_8000_0000_0000
            || !rbp.is_multiple_of(8)
            || !super::paging::is_mapped(rbp, 16)
        {
            break;
        }
        // SAFETY: `rbp` is aligned and its 16 bytes are mapped (checked above);
        // a frame holds the caller's rbp then the return address.
        let (next, ret) = unsafe { (*(rbp as *const u64), *((rbp + 8) as *const u64)) };
        if ret == 0 {
            break;
        }
        f(
            ret,
            task.as_ref().map_or(ret, |t| {
                tracer::rethook::unwind_ret_addr(
                    &t.ret_stack,
                    &t.rethooks,
                    &mut cur,
                    ret,
                    rbp + 8,
                    handlers,
                )
            }),
        );
        if next <= rbp {
            break;
        }
        rbp = next;
    }
}

/// Reads an unmapped kernel address: a page fault (vector 14) that the
/// kernel reports and dies of. For the shell's `crash pagefault` (Linux's
/// lkdtm does the same to test its reports).
#[inline(never)]
pub fn crash_page_fault() -> u64 {
    let p = 0xffff_fe80_0000_0000u64 as *const u64;
    // SAFETY: not safe, on purpose: the read faults and the kernel stops,
    // which is what this function is for.
    unsafe { core::ptr::read_volatile(p) }
}

/// Executes `ud2`: an invalid opcode (vector 6) that the kernel reports and
/// dies of (Linux's `BUG()` is a `ud2`). For the shell's `crash ud2`.
#[inline(never)]
pub fn crash_invalid_opcode() {
    // SAFETY: not safe, on purpose: ud2 raises invalid opcode and the kernel
    // stops, which is what this function is for.
    unsafe { core::arch::asm!("ud2") };
}
