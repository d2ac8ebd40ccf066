//! The interrupt descriptor table (Linux: arch/x86/kernel/idt.c). One table
//! shared by all CPUs; every gate points at its stub in [`super::entry`].
use core::arch::asm;
use core::mem::size_of;

use spin::Once;

use super::entry::stub_address;
use super::gdt;

#[repr(C, align(16))]
struct Idt([u128; 256]);

static IDT: Once<Idt> = Once::new();

/// An interrupt gate (IF cleared on entry), optionally on an IST stack.
fn gate(handler: u64, ist: u16) -> u128 {
    let selector = gdt::KERNEL_CS.0 as u128;
    let type_attr: u128 = 0x8e; // present, DPL 0, 64-bit interrupt gate
    (handler as u128 & 0xffff)
        | (selector << 16)
        | ((ist as u128) << 32)
        | (type_attr << 40)
        | (((handler as u128 >> 16) & 0xffff) << 48)
        | (((handler as u128 >> 32) & 0xffff_ffff) << 64)
}

/// Builds the table (once) and loads it on this CPU.
pub fn init() {
    let idt = IDT.call_once(|| {
        let mut t = Idt([0; 256]);
        for (v, entry) in t.0.iter_mut().enumerate() {
            let ist = match v {
                2 => gdt::IST_NMI + 1,
                8 => gdt::IST_DOUBLE_FAULT + 1,
                18 => gdt::IST_MACHINE_CHECK + 1,
                _ => 0,
            };
            *entry = gate(stub_address(v as u8), ist);
        }
        t
    });
    #[repr(C, packed)]
    struct Pointer {
        limit: u16,
        base: u64,
    }
    let ptr = Pointer {
        limit: (size_of::<Idt>() - 1) as u16,
        base: idt as *const Idt as u64,
    };
    // SAFETY: the table is a static that lives forever and is fully built.
    unsafe { asm!("lidt [{}]", in(reg) &ptr, options(readonly, nostack, preserves_flags)) };
}
