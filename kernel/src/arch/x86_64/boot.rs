//! The boot assembly (`boot/entry.S`, `boot/trampoline.S`) and the PVH start
//! information QEMU hands us (Linux: arch/x86/platform/pvh/enlighten.c).
use core::arch::global_asm;

global_asm!(include_str!("../../../../boot/entry.S"));
global_asm!(
    include_str!("../../../../boot/trampoline.S"),
    options(att_syntax)
);

/// `struct hvm_start_info` from Xen's public/arch-x86/hvm/start_info.h.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HvmStartInfo {
    pub magic: u32,
    pub version: u32,
    pub flags: u32,
    pub nr_modules: u32,
    pub modlist_paddr: u64,
    pub cmdline_paddr: u64,
    pub rsdp_paddr: u64,
    pub memmap_paddr: u64,
    pub memmap_entries: u32,
    pub reserved: u32,
}

pub const HVM_START_MAGIC: u32 = 0x336e_c578;

/// One entry of the E820-style memory map.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MemmapEntry {
    pub addr: u64,
    pub size: u64,
    pub kind: u32,
    pub reserved: u32,
}

/// Usable RAM in the memory map.
pub const E820_RAM: u32 = 1;
