//! A teaching x86_64 kernel whose centrepiece is a reimplementation of Linux's
//! ftrace. Boot starts in `boot/entry.S`, which calls [`kernel_main`] on the
//! boot CPU; the other CPUs start in `arch::smp`.
#![no_std]

extern crate alloc;

#[macro_use]
pub mod console;
pub mod arch;
pub mod events;
pub mod fs;
pub mod hook;
pub mod irqflags;
pub mod jump_label;
pub mod kallsyms;
pub mod kprobes;
pub mod mm;
pub mod panic;
pub mod rcu;
pub mod sched;
// The shell only calls safe interfaces.
#[forbid(unsafe_code)]
pub mod shell;
pub mod test_kprobes;
pub mod test_static_keys;
pub mod time;
pub mod trace;
pub mod trace_printk;
pub mod tracepoint;

#[doc(hidden)]
pub use pastey as __pastey;

use alloc::string::String;
use core::panic::PanicInfo;

use arch::boot::{HvmStartInfo, MemmapEntry, HVM_START_MAGIC};
use spin::Once;

/// The kernel command line (`qemu.sh --cmdline`).
static CMDLINE: Once<String> = Once::new();

/// The kernel command line given by the boot loader.
pub fn cmdline() -> &'static str {
    CMDLINE.get().map(|s| s.as_str()).unwrap_or("")
}

/// The boot CPU arrives here from `boot/entry.S` (Linux: start_kernel).
#[no_mangle]
pub extern "C" fn kernel_main(start_info_pa: u32) -> ! {
    arch::percpu::init(0);
    console::init();
    println!("ktrace kernel booting");

    let info: HvmStartInfo = read_phys(start_info_pa as u64);
    if info.magic != HVM_START_MAGIC {
        panic!("bad PVH start info magic {:#x}", info.magic);
    }
    let mut memmap = [MemmapEntry {
        addr: 0,
        size: 0,
        kind: 0,
        reserved: 0,
    }; 64];
    let entries = (info.memmap_entries as usize).min(memmap.len());
    for (i, e) in memmap.iter_mut().take(entries).enumerate() {
        *e = read_phys(info.memmap_paddr + i as u64 * 24);
    }

    arch::paging::init(&memmap[..entries]);
    arch::text_poke::poking_init();
    let (heap_pa, heap_size) = arch::paging::take_largest_block(16 << 20);
    mm::heap::init(arch::paging::phys_to_virt(heap_pa), heap_size);
    CMDLINE.call_once(|| read_cstr(info.cmdline_paddr));
    println!(
        "memory: {} MiB heap, command line: \"{}\"",
        heap_size >> 20,
        self::cmdline()
    );

    arch::gdt::init();
    arch::idt::init();
    arch::tsc::calibrate();
    println!("tsc: {} kHz", arch::tsc::tsc_hz() / 1000);

    let madt = arch::acpi::parse_madt(info.rsdp_paddr).expect("no ACPI MADT");
    arch::apic::set_addresses(madt.lapic_addr, madt.ioapic_addr);
    arch::apic::disable_pic();
    arch::apic::init_local();
    arch::apic::calibrate_timer();
    // COM1 is ISA IRQ 4, unless an override moves it.
    let (gsi, flags) = madt
        .overrides
        .iter()
        .find(|o| o.0 == 4)
        .map(|o| (o.1, o.2))
        .unwrap_or((4, 0));
    arch::apic::route_irq(
        gsi - madt.ioapic_gsi_base,
        arch::apic::SERIAL_VECTOR,
        arch::apic::lapic_id(),
        flags,
    );
    // Input typed before the route existed raised no interrupt: collect it now.
    console::serial_interrupt();

    sched::init();
    // Before the other CPUs run: boot-time NOP conversion needs no int3.
    arch::traps::set_int3_hook(arch::text_poke::poke_int3_handler);
    kprobes::init();
    jump_label::jump_label_init();
    trace::ftrace::ftrace_init();
    let cpus = arch::smp::start_aps(&madt.apic_ids, sched::run_idle);
    println!("smp: {} CPUs online", cpus);
    arch::apic::start_timer();

    trace::init();
    sched::spawn_on(0, "sh", || {
        shell::run();
    });
    sched::run_idle(0)
}

fn read_phys<T: Copy>(pa: u64) -> T {
    // SAFETY: boot-time firmware structures, below 1 GiB, mapped by the boot
    // page tables (or the direct map later); read_unaligned for packed layouts.
    unsafe { (arch::paging::phys_to_virt(pa) as *const T).read_unaligned() }
}

fn read_cstr(pa: u64) -> String {
    let mut s = String::new();
    if pa == 0 {
        return s;
    }
    for i in 0..4096 {
        let b: u8 = read_phys(pa + i);
        if b == 0 {
            break;
        }
        s.push(b as char);
    }
    s
}

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    // Raw: nothing is reported to tracing on the way down.
    arch::irqflags::arch_local_irq_disable();
    console::force_unlock();
    println!("\nKernel panic on cpu{}: {}", arch::cpu_id(), info);
    arch::traps::print_backtrace(arch::frame_pointer());
    panic::notify();
    println!("---[ end Kernel panic ]---");
    arch::exit_qemu(arch::PANIC_EXIT)
}
