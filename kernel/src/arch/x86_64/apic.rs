//! The local APIC (timer, inter-processor interrupts) and the I/O APIC (device
//! interrupts) (Linux: arch/x86/kernel/apic/apic.c, io_apic.c).
//! Both are programmed through memory-mapped registers reached via the
//! direct map. The legacy 8259 PICs are masked.
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use ::x86_64::instructions::port::Port;

use super::paging::phys_to_virt;

pub const TIMER_VECTOR: u8 = 0x20;
pub const SERIAL_VECTOR: u8 = 0x21;
pub const CALL_FUNCTION_VECTOR: u8 = 0xf0;
pub const RESCHEDULE_VECTOR: u8 = 0xf1;
pub const SPURIOUS_VECTOR: u8 = 0xff;

/// Timer interrupts per second (Linux: HZ).
pub const HZ: u64 = 100;

const LAPIC_DEFAULT_BASE: u64 = 0xfee0_0000;
const REG_ID: u32 = 0x20;
const REG_EOI: u32 = 0xb0;
const REG_SPURIOUS: u32 = 0xf0;
const REG_ICR_LOW: u32 = 0x300;
const REG_ICR_HIGH: u32 = 0x310;
const REG_LVT_TIMER: u32 = 0x320;
const REG_TIMER_INITIAL: u32 = 0x380;
const REG_TIMER_CURRENT: u32 = 0x390;
const REG_TIMER_DIVIDE: u32 = 0x3e0;

static LAPIC_BASE: AtomicU64 = AtomicU64::new(LAPIC_DEFAULT_BASE);
static IOAPIC_BASE: AtomicU64 = AtomicU64::new(0xfec0_0000);
/// APIC timer counts per tick, measured on the boot CPU.
static TIMER_COUNT: AtomicU32 = AtomicU32::new(0);

fn lapic_read(reg: u32) -> u32 {
    let addr = phys_to_virt(LAPIC_BASE.load(Ordering::Relaxed)) + reg as u64;
    // SAFETY: a local APIC register, mapped by the direct map.
    unsafe { (addr as *const u32).read_volatile() }
}

fn lapic_write(reg: u32, value: u32) {
    let addr = phys_to_virt(LAPIC_BASE.load(Ordering::Relaxed)) + reg as u64;
    // SAFETY: a local APIC register, mapped by the direct map.
    unsafe { (addr as *mut u32).write_volatile(value) };
}

/// Signals the end of the interrupt being handled.
#[inline]
pub fn eoi() {
    lapic_write(REG_EOI, 0);
}

/// This CPU's local APIC id.
pub fn lapic_id() -> u32 {
    lapic_read(REG_ID) >> 24
}

pub fn set_addresses(lapic: u64, ioapic: u64) {
    LAPIC_BASE.store(lapic, Ordering::Relaxed);
    IOAPIC_BASE.store(ioapic, Ordering::Relaxed);
}

/// Masks both 8259 PICs: all device interrupts go through the I/O APIC.
pub fn disable_pic() {
    // SAFETY: the PIC data ports; writing 0xff masks every line.
    unsafe {
        Port::<u8>::new(0x21).write(0xff);
        Port::<u8>::new(0xa1).write(0xff);
    }
}

/// Enables this CPU's local APIC.
pub fn init_local() {
    lapic_write(REG_SPURIOUS, 0x100 | SPURIOUS_VECTOR as u32);
}

/// Measures the APIC timer against the TSC (boot CPU, once).
pub fn calibrate_timer() {
    lapic_write(REG_TIMER_DIVIDE, 0x3); // divide by 16
    lapic_write(REG_LVT_TIMER, 1 << 16); // masked, one-shot
    lapic_write(REG_TIMER_INITIAL, u32::MAX);
    let start = super::tsc::now_ns();
    while super::tsc::now_ns() - start < 10_000_000 {
        core::hint::spin_loop();
    }
    let elapsed = u32::MAX - lapic_read(REG_TIMER_CURRENT);
    lapic_write(REG_TIMER_INITIAL, 0);
    // `elapsed` counts in 10 ms; a tick is 1/HZ s.
    let per_tick = (elapsed as u64 * 100 / HZ).max(1000);
    TIMER_COUNT.store(per_tick as u32, Ordering::Relaxed);
}

/// Starts this CPU's periodic tick.
pub fn start_timer() {
    lapic_write(REG_TIMER_DIVIDE, 0x3);
    lapic_write(REG_LVT_TIMER, (1 << 17) | TIMER_VECTOR as u32); // periodic
    lapic_write(REG_TIMER_INITIAL, TIMER_COUNT.load(Ordering::Relaxed));
}

/// Sends an interrupt to one CPU (by APIC id).
pub fn send_ipi(apic_id: u32, vector: u8) {
    send_icr(apic_id, vector as u32);
}

/// Sends `vector` to every CPU but this one (ICR shorthand "all excluding self").
pub fn send_ipi_all_but_self(vector: u8) {
    wait_icr_idle();
    lapic_write(REG_ICR_HIGH, 0);
    lapic_write(REG_ICR_LOW, (3 << 18) | vector as u32);
    wait_icr_idle();
}

/// INIT then STARTUP IPIs, the sequence that starts an application processor.
pub fn send_init(apic_id: u32) {
    send_icr(apic_id, 0x4500); // INIT, assert
}

pub fn send_startup(apic_id: u32, page: u8) {
    send_icr(apic_id, 0x4600 | page as u32);
}

fn send_icr(apic_id: u32, low: u32) {
    // Raw: the CPU start-up sequence runs at boot, before tracing exists
    // (the irq-flag wrappers are generic code, above arch).
    let flags = super::irqflags::arch_local_irq_save();
    wait_icr_idle();
    lapic_write(REG_ICR_HIGH, apic_id << 24);
    lapic_write(REG_ICR_LOW, low);
    wait_icr_idle();
    super::irqflags::arch_local_irq_restore(flags);
}

fn wait_icr_idle() {
    while lapic_read(REG_ICR_LOW) & (1 << 12) != 0 {
        core::hint::spin_loop();
    }
}

fn ioapic_write(reg: u32, value: u32) {
    let base = phys_to_virt(IOAPIC_BASE.load(Ordering::Relaxed));
    // SAFETY: IOREGSEL at +0 and IOWIN at +0x10, mapped by the direct map.
    unsafe {
        (base as *mut u32).write_volatile(reg);
        ((base + 0x10) as *mut u32).write_volatile(value);
    }
}

/// Routes I/O APIC input `gsi` to `vector` on the CPU with `apic_id`.
/// `flags` are the MADT override's polarity/trigger bits.
pub fn route_irq(gsi: u32, vector: u8, apic_id: u32, flags: u16) {
    let mut low = vector as u32;
    if flags & 0x3 == 0x3 {
        low |= 1 << 13; // active low
    }
    if (flags >> 2) & 0x3 == 0x3 {
        low |= 1 << 15; // level triggered
    }
    ioapic_write(0x10 + 2 * gsi + 1, apic_id << 24);
    ioapic_write(0x10 + 2 * gsi, low);
}
