//! Starting the application processors and running a function on all CPUs
//! (Linux: arch/x86/kernel/smpboot.c, kernel/smp.c).
//!
//! Each AP is woken with INIT and STARTUP IPIs; it begins in real mode at the
//! trampoline page, climbs to long mode with the kernel's page tables, and
//! calls [`ap_entry`] on a fresh stack. `smp_call_function` sends an IPI that
//! makes every other CPU run a function, and waits until all have: returning
//! from that interrupt (iretq) also serialises each CPU's instruction stream,
//! which the code patcher needs.
use alloc::vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::percpu::{self, MAX_CPUS};
use super::{apic, gdt, idt, paging, tsc};

static APIC_IDS: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(0) }; MAX_CPUS];
static AP_ONLINE: AtomicBool = AtomicBool::new(false);
static ONLINE_MASK: AtomicU64 = AtomicU64::new(1);
/// What each AP runs once it is up: the scheduler's idle loop, given by
/// `start_aps`'s caller (arch code does not import the scheduler).
static AP_IDLE: spin::Once<fn(usize) -> !> = spin::Once::new();

const AP_STACK_SIZE: usize = 64 * 1024;

extern "C" {
    static ap_trampoline: u8;
    static ap_trampoline_end: u8;
    static ap_trampoline_params: u8;
}

/// The local APIC id of `cpu`.
pub fn apic_id(cpu: usize) -> u32 {
    APIC_IDS[cpu].load(Ordering::Relaxed)
}

fn spin_ns(ns: u64) {
    let start = tsc::now_ns();
    while tsc::now_ns() - start < ns {
        core::hint::spin_loop();
    }
}

/// Starts every AP listed in the MADT, one at a time; each ends in
/// `idle(cpu)`. Returns the CPU count.
pub fn start_aps(apic_ids: &[u32], idle: fn(usize) -> !) -> usize {
    AP_IDLE.call_once(|| idle);
    let bsp = apic::lapic_id();
    APIC_IDS[0].store(bsp, Ordering::Relaxed);
    // SAFETY: the trampoline symbols delimit bytes in .rodata.
    let (start, end, params) = unsafe {
        (
            &ap_trampoline as *const u8,
            &ap_trampoline_end as *const u8,
            &ap_trampoline_params as *const u8,
        )
    };
    let len = end as usize - start as usize;
    let params_off = params as usize - start as usize;
    let dest = paging::phys_to_virt(paging::TRAMPOLINE_PA) as *mut u8;
    // SAFETY: the trampoline page is reserved low memory mapped in the direct map.
    unsafe { core::ptr::copy_nonoverlapping(start, dest, len) };

    let mut cpus = 1;
    for &id in apic_ids.iter().filter(|&&id| id != bsp) {
        if cpus == MAX_CPUS {
            break;
        }
        let stack = vec![0u8; AP_STACK_SIZE].leak();
        let top = (stack.as_ptr() as u64 + AP_STACK_SIZE as u64) & !0xf;
        let values = [
            paging::kernel_cr3(),
            top,
            ap_entry as *const () as u64,
            cpus as u64,
        ];
        // SAFETY: the parameter block at the end of the copied trampoline.
        unsafe {
            core::ptr::copy_nonoverlapping(values.as_ptr(), dest.add(params_off) as *mut u64, 4)
        };
        APIC_IDS[cpus].store(id, Ordering::Relaxed);
        AP_ONLINE.store(false, Ordering::SeqCst);
        apic::send_init(id);
        spin_ns(10_000_000);
        apic::send_startup(id, (paging::TRAMPOLINE_PA >> 12) as u8);
        let deadline = tsc::now_ns() + 2_000_000_000;
        let mut resent = false;
        while !AP_ONLINE.load(Ordering::SeqCst) && tsc::now_ns() < deadline {
            if !resent && tsc::now_ns() + 1_990_000_000 > deadline {
                apic::send_startup(id, (paging::TRAMPOLINE_PA >> 12) as u8);
                resent = true;
            }
            core::hint::spin_loop();
        }
        if !AP_ONLINE.load(Ordering::SeqCst) {
            crate::println!("smp: CPU with APIC id {id} did not start");
            continue;
        }
        ONLINE_MASK.fetch_or(1 << cpus, Ordering::SeqCst);
        cpus += 1;
    }
    percpu::set_nr_cpus(cpus);
    cpus
}

/// Where an AP arrives in long mode, on its own stack.
extern "C" fn ap_entry(cpu: usize) -> ! {
    percpu::init(cpu);
    gdt::init();
    idt::init();
    apic::init_local();
    apic::start_timer();
    AP_ONLINE.store(true, Ordering::SeqCst);
    let idle = AP_IDLE
        .get()
        .expect("start_aps sets it before starting an AP");
    idle(cpu)
}

static CALL_LOCK: AtomicBool = AtomicBool::new(false);
static CALL_FUNC: AtomicUsize = AtomicUsize::new(0);
static CALL_ARG: AtomicUsize = AtomicUsize::new(0);
/// CPUs that still have to run the current call.
static CALL_PENDING: AtomicU64 = AtomicU64::new(0);

/// Runs `func(arg)` on every other online CPU, from an interrupt, and waits
/// until all of them have returned (Linux: smp_call_function(func, info, 1)).
pub fn smp_call_function(func: fn(usize), arg: usize) {
    let me = 1u64 << percpu::cpu_id();
    let others = ONLINE_MASK.load(Ordering::SeqCst) & !me;
    if others == 0 {
        return;
    }
    // While waiting for the lock, answer the current holder's call ourselves:
    // it may be waiting for us while our interrupts are off.
    while CALL_LOCK
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        run_pending_call();
        core::hint::spin_loop();
    }
    CALL_FUNC.store(func as usize, Ordering::SeqCst);
    CALL_ARG.store(arg, Ordering::SeqCst);
    CALL_PENDING.store(others, Ordering::SeqCst);
    apic::send_ipi_all_but_self(apic::CALL_FUNCTION_VECTOR);
    while CALL_PENDING.load(Ordering::SeqCst) != 0 {
        core::hint::spin_loop();
    }
    CALL_LOCK.store(false, Ordering::Release);
}

fn run_pending_call() {
    let me = 1u64 << percpu::cpu_id();
    if CALL_PENDING.load(Ordering::SeqCst) & me != 0 {
        let func = CALL_FUNC.load(Ordering::SeqCst);
        let arg = CALL_ARG.load(Ordering::SeqCst);
        // SAFETY: CALL_FUNC holds a `fn(usize)` stored by smp_call_function,
        // which waits for this bit to clear before storing another.
        let func: fn(usize) = unsafe { core::mem::transmute(func) };
        func(arg);
        CALL_PENDING.fetch_and(!me, Ordering::SeqCst);
    }
}

/// The CALL_FUNCTION_VECTOR handler.
pub fn call_function_interrupt() {
    run_pending_call();
}
