//! Just enough ACPI to find the CPUs and the I/O APIC: RSDP -> RSDT/XSDT ->
//! MADT (Linux: arch/x86/kernel/acpi/boot.c).
use alloc::vec::Vec;

use super::paging::phys_to_virt;

/// What the MADT says about the machine.
pub struct Madt {
    pub lapic_addr: u64,
    /// APIC ids of the usable CPUs, boot CPU first is not guaranteed.
    pub apic_ids: Vec<u32>,
    pub ioapic_addr: u64,
    pub ioapic_gsi_base: u32,
    /// Interrupt source overrides: (ISA irq, gsi, flags).
    pub overrides: Vec<(u8, u32, u16)>,
}

fn read<T: Copy>(pa: u64) -> T {
    // SAFETY: firmware tables are in RAM covered by the direct map; read_unaligned
    // because ACPI structures are packed.
    unsafe { (phys_to_virt(pa) as *const T).read_unaligned() }
}

fn find_rsdp(hint: u64) -> Option<u64> {
    let valid = |pa: u64| {
        let sig: [u8; 8] = read(pa);
        if &sig != b"RSD PTR " {
            return false;
        }
        let bytes: [u8; 20] = read(pa);
        bytes.iter().fold(0u8, |a, b| a.wrapping_add(*b)) == 0
    };
    if hint != 0 && valid(hint) {
        return Some(hint);
    }
    (0xe0000..0x100000).step_by(16).find(|&pa| valid(pa))
}

/// Parses the MADT. `rsdp_hint` is the PVH start info's rsdp_paddr (may be 0).
pub fn parse_madt(rsdp_hint: u64) -> Option<Madt> {
    let rsdp = find_rsdp(rsdp_hint)?;
    let revision: u8 = read(rsdp + 15);
    let (root, entry_size) = if revision >= 2 {
        (read::<u64>(rsdp + 24), 8)
    } else {
        (read::<u32>(rsdp + 16) as u64, 4)
    };
    let root_len: u32 = read(root + 4);
    let entries = (root_len as u64 - 36) / entry_size;
    let madt = (0..entries).find_map(|i| {
        let at = root + 36 + i * entry_size;
        let table = if entry_size == 8 {
            read::<u64>(at)
        } else {
            read::<u32>(at) as u64
        };
        let sig: [u8; 4] = read(table);
        (&sig == b"APIC").then_some(table)
    })?;
    let len: u32 = read(madt + 4);
    let mut out = Madt {
        lapic_addr: read::<u32>(madt + 36) as u64,
        apic_ids: Vec::new(),
        ioapic_addr: 0xfec0_0000,
        ioapic_gsi_base: 0,
        overrides: Vec::new(),
    };
    let mut at = madt + 44;
    while at + 2 <= madt + len as u64 {
        let kind: u8 = read(at);
        let entry_len: u8 = read(at + 1);
        if entry_len < 2 {
            break;
        }
        match kind {
            0 => {
                let apic_id: u8 = read(at + 3);
                let flags: u32 = read(at + 4);
                if flags & 1 != 0 {
                    out.apic_ids.push(apic_id as u32);
                }
            }
            1 => {
                out.ioapic_addr = read::<u32>(at + 4) as u64;
                out.ioapic_gsi_base = read(at + 8);
            }
            2 => out
                .overrides
                .push((read(at + 3), read(at + 4), read(at + 8))),
            5 => out.lapic_addr = read(at + 4),
            _ => {}
        }
        at += entry_len as u64;
    }
    Some(out)
}
