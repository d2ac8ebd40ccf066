//! The global descriptor table and the task-state segment, one per CPU
//! (Linux: arch/x86/kernel/cpu/common.c, cpu_init). In long mode segments are
//! flat; the TSS only matters for its interrupt stack table (IST): a double
//! fault, an NMI or a machine check switches to a known-good stack. (The
//! breakpoint runs on the interrupted stack, as Linux's since 4.15: kprobe
//! handlers run from it and may hit another breakpoint.)
use alloc::boxed::Box;
use alloc::vec;

use ::x86_64::instructions::segmentation::{Segment, CS, DS, ES, SS};
use ::x86_64::instructions::tables::load_tss;
use ::x86_64::structures::gdt::{Descriptor, GlobalDescriptorTable, SegmentSelector};
use ::x86_64::structures::tss::TaskStateSegment;
use ::x86_64::VirtAddr;

/// IST slots (1-based in the IDT, 0-based in the TSS array).
pub const IST_DOUBLE_FAULT: u16 = 0;
pub const IST_NMI: u16 = 1;
pub const IST_MACHINE_CHECK: u16 = 2;

const IST_STACK_SIZE: usize = 16 * 1024;

/// Builds and loads this CPU's GDT and TSS. Needs the heap.
pub fn init() {
    let tss: &'static mut TaskStateSegment = Box::leak(Box::new(TaskStateSegment::new()));
    for slot in [IST_DOUBLE_FAULT, IST_NMI, IST_MACHINE_CHECK] {
        let stack = vec![0u8; IST_STACK_SIZE].leak();
        let top = stack.as_ptr() as u64 + IST_STACK_SIZE as u64;
        tss.interrupt_stack_table[slot as usize] = VirtAddr::new(top & !0xf);
    }
    let gdt: &'static mut GlobalDescriptorTable = Box::leak(Box::new(GlobalDescriptorTable::new()));
    let code = gdt.append(Descriptor::kernel_code_segment());
    let data = gdt.append(Descriptor::kernel_data_segment());
    let tss_sel = gdt.append(Descriptor::tss_segment(tss));
    gdt.load();
    // SAFETY: the selectors come from the GDT just loaded, which lives forever.
    unsafe {
        CS::set_reg(code);
        DS::set_reg(data);
        ES::set_reg(data);
        SS::set_reg(data);
        load_tss(tss_sel);
    }
}

/// The kernel code selector (index 1).
pub const KERNEL_CS: SegmentSelector = SegmentSelector(0x08);
