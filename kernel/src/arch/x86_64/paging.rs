//! Physical frames and the kernel's page tables (Linux: arch/x86/mm/init_64.c).
//!
//! Boot starts on `boot/entry.S`'s tables: 1 GiB mapped twice with 2 MiB pages,
//! writable and executable everywhere. [`init`] replaces them with the final
//! layout:
//! - the kernel image at `KERNEL_VMA` with 4 KiB pages: text read-only and
//!   executable, rodata read-only, data and bss writable, all but text
//!   non-executable;
//! - all physical memory (at least 4 GiB, so the APIC registers are covered) at
//!   `PHYS_OFFSET`, Linux's direct map, non-executable; the kernel image's own
//!   frames appear there read-only, so there is no writable alias of the text;
//! - one identity-mapped page at 0x8000 for the AP trampoline.
use core::arch::asm;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use spin::Mutex;

use super::boot::{MemmapEntry, E820_RAM};

/// Where the kernel image is linked (Linux: __START_KERNEL_map).
pub const KERNEL_VMA: u64 = 0xffff_ffff_8000_0000;
/// Base of the direct map of physical memory (Linux: page_offset_base).
pub const PHYS_OFFSET: u64 = 0xffff_8880_0000_0000;
/// Physical page of the AP trampoline (STARTUP IPI vector 0x08).
pub const TRAMPOLINE_PA: u64 = 0x8000;
pub const PAGE_SIZE: u64 = 4096;

pub const PRESENT: u64 = 1 << 0;
pub const WRITABLE: u64 = 1 << 1;
pub const HUGE: u64 = 1 << 7;
pub const GLOBAL: u64 = 1 << 8;
pub const NO_EXECUTE: u64 = 1 << 63;
const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;

static DIRECT_MAP_READY: AtomicBool = AtomicBool::new(false);
static KERNEL_PML4: AtomicU64 = AtomicU64::new(0);

extern "C" {
    static __kernel_start: u8;
    static __text_start: u8;
    static __text_end: u8;
    static __rodata_start: u8;
    static __rodata_end: u8;
    static __data_start: u8;
    static __data_end: u8;
    static __kernel_end: u8;
}

fn sym(s: &u8) -> u64 {
    s as *const u8 as u64
}

/// The address at which the kernel can read physical address `pa`.
pub fn phys_to_virt(pa: u64) -> u64 {
    if DIRECT_MAP_READY.load(Ordering::Relaxed) {
        PHYS_OFFSET + pa
    } else {
        // Boot tables: the first 1 GiB is also mapped at KERNEL_VMA.
        KERNEL_VMA + pa
    }
}

/// The physical address behind a kernel-image or direct-map address.
pub fn virt_to_phys(va: u64) -> u64 {
    if va >= KERNEL_VMA {
        va - KERNEL_VMA
    } else {
        va - PHYS_OFFSET
    }
}

/// A bump allocator over the usable RAM of the memory map. Frames are never
/// freed: they hold page tables, and the heap gets one big block.
struct FrameAllocator {
    regions: [(u64, u64); 32],
    count: usize,
    current: usize,
}

static FRAMES: Mutex<FrameAllocator> = Mutex::new(FrameAllocator {
    regions: [(0, 0); 32],
    count: 0,
    current: 0,
});

impl FrameAllocator {
    fn alloc(&mut self) -> Option<u64> {
        while self.current < self.count {
            let (start, end) = &mut self.regions[self.current];
            // Before the switch only the first 1 GiB is reachable.
            let limit = if DIRECT_MAP_READY.load(Ordering::Relaxed) {
                u64::MAX
            } else {
                1 << 30
            };
            if *start + PAGE_SIZE <= *end && *start + PAGE_SIZE <= limit {
                let frame = *start;
                *start += PAGE_SIZE;
                return Some(frame);
            }
            self.current += 1;
        }
        None
    }
}

/// Allocates a zeroed 4 KiB frame.
pub fn alloc_frame() -> Option<u64> {
    let frame = FRAMES.lock().alloc()?;
    // SAFETY: the frame is fresh, mapped through phys_to_virt, and 4 KiB long.
    unsafe { core::ptr::write_bytes(phys_to_virt(frame) as *mut u8, 0, PAGE_SIZE as usize) };
    Some(frame)
}

/// Takes the largest free block of RAM, keeping `reserve` bytes for frames;
/// returns its physical start and size (the heap).
pub fn take_largest_block(reserve: u64) -> (u64, u64) {
    let mut f = FRAMES.lock();
    let count = f.count;
    let (idx, _) = f.regions[..count]
        .iter()
        .enumerate()
        .max_by_key(|(_, (s, e))| e - s)
        .expect("no usable memory");
    let (start, end) = f.regions[idx];
    let size = (end - start).saturating_sub(reserve) & !(PAGE_SIZE - 1);
    f.regions[idx].1 = end - size;
    (end - size, size)
}

fn table(pa: u64) -> *mut u64 {
    phys_to_virt(pa) as *mut u64
}

/// Finds (creating if asked) the entry for `va` at `level` (1: 4 KiB PTE,
/// 2: 2 MiB PDE). Returns None if absent and not created, or if a huge page
/// covers it at a higher level.
fn walk(pml4: u64, va: u64, level: usize, create: bool) -> Option<*mut u64> {
    let mut table_pa = pml4;
    for l in (level + 1..=4).rev() {
        let index = (va >> (12 + 9 * (l - 1))) & 0x1ff;
        // SAFETY: `table_pa` is a page-table frame and index < 512.
        let entry = unsafe { table(table_pa).add(index as usize) };
        // SAFETY: as above; page tables are only modified under FRAMES-free
        // single-threaded boot or by the text poker under its own lock.
        let value = unsafe { entry.read_volatile() };
        if value & PRESENT == 0 {
            if !create {
                return None;
            }
            let frame = alloc_frame()?;
            // SAFETY: as above.
            unsafe { entry.write_volatile(frame | PRESENT | WRITABLE) };
            table_pa = frame;
        } else if value & HUGE != 0 {
            return None;
        } else {
            table_pa = value & ADDR_MASK;
        }
    }
    let index = (va >> (12 + 9 * (level - 1))) & 0x1ff;
    // SAFETY: as above.
    Some(unsafe { table(table_pa).add(index as usize) })
}

/// Makes the page table at physical address `pte_table_pa` (512 PTEs) map
/// the 2 MiB at `va`, which nothing may map yet (Linux:
/// pmd_populate_kernel). For text_poke's window, whose tables are static.
pub fn pmd_populate_kernel(va: u64, pte_table_pa: u64) {
    let pml4 = KERNEL_PML4.load(Ordering::Relaxed);
    let pde = walk(pml4, va, 2, true).expect("out of page-table frames");
    // SAFETY: `pde` points at the entry for `va`.
    let old = unsafe { pde.read_volatile() };
    assert_eq!(old, 0, "pmd_populate_kernel: {va:#x} is mapped");
    // SAFETY: as above.
    unsafe { pde.write_volatile(pte_table_pa | PRESENT | WRITABLE) };
}

fn map_2m(pml4: u64, va: u64, pa: u64, flags: u64) {
    let pde = walk(pml4, va, 2, true).expect("out of page-table frames");
    // SAFETY: `pde` points at the entry for `va`.
    unsafe { pde.write_volatile(pa | flags | PRESENT | HUGE) };
}

fn map_4k_in(pml4: u64, va: u64, pa: u64, flags: u64) {
    let pte = walk(pml4, va, 1, true).expect("out of page-table frames");
    // SAFETY: `pte` points at the entry for `va`.
    unsafe { pte.write_volatile(pa | flags | PRESENT) };
}

/// Invalidates one page in this CPU's TLB.
pub fn flush(va: u64) {
    // SAFETY: invlpg only drops a cached translation.
    unsafe { asm!("invlpg [{}]", in(reg) va, options(nostack, preserves_flags)) };
}

/// True if every byte of [va, va+len) is mapped (used by the backtrace so a
/// corrupt frame pointer cannot fault inside the fault handler).
pub fn is_mapped(va: u64, len: u64) -> bool {
    let pml4 = KERNEL_PML4.load(Ordering::Relaxed);
    if pml4 == 0 {
        return true;
    }
    [va, va + len - 1]
        .iter()
        .all(|&a| translate(pml4, a).is_some())
}

fn translate(pml4: u64, va: u64) -> Option<u64> {
    let mut table_pa = pml4;
    for l in (1..=4).rev() {
        let index = (va >> (12 + 9 * (l - 1))) & 0x1ff;
        // SAFETY: `table_pa` is a page-table frame and index < 512.
        let value = unsafe { table(table_pa).add(index as usize).read_volatile() };
        if value & PRESENT == 0 {
            return None;
        }
        if l == 1 || value & HUGE != 0 {
            let page = 1u64 << (12 + 9 * (l - 1));
            return Some((value & ADDR_MASK & !(page - 1)) + (va & (page - 1)));
        }
        table_pa = value & ADDR_MASK;
    }
    None
}

/// Reads the memory map, sets up the frame allocator and switches to the
/// final page tables. Runs once, on the boot CPU, before the heap exists.
pub fn init(memmap: &[MemmapEntry]) {
    let kernel_start_pa = virt_to_phys(sym(unsafe_ref(&raw const __kernel_start)));
    let kernel_end_pa = virt_to_phys(sym(unsafe_ref(&raw const __kernel_end)));
    let mut top = 4u64 << 30;
    {
        let mut f = FRAMES.lock();
        for e in memmap.iter().filter(|e| e.kind == E820_RAM) {
            // Keep the first 1 MiB (trampoline, BIOS data) and the kernel image.
            let start = e
                .addr
                .max(kernel_end_pa)
                .max(1 << 20)
                .next_multiple_of(PAGE_SIZE);
            let end = (e.addr + e.size) & !(PAGE_SIZE - 1);
            top = top.max(end);
            if start < end && f.count < f.regions.len() {
                let i = f.count;
                f.regions[i] = (start, end);
                f.count += 1;
            }
        }
        let count = f.count;
        f.regions[..count].sort_unstable();
    }

    let pml4 = alloc_frame().expect("no memory for page tables");
    let image = |s: &u8, e: &u8, flags: u64| {
        let mut va = sym(s);
        while va < sym(e) {
            map_4k_in(pml4, va, virt_to_phys(va), flags | GLOBAL);
            va += PAGE_SIZE;
        }
    };
    image(
        unsafe_ref(&raw const __text_start),
        unsafe_ref(&raw const __text_end),
        0,
    );
    image(
        unsafe_ref(&raw const __rodata_start),
        unsafe_ref(&raw const __rodata_end),
        NO_EXECUTE,
    );
    image(
        unsafe_ref(&raw const __data_start),
        unsafe_ref(&raw const __data_end),
        WRITABLE | NO_EXECUTE,
    );
    image(
        unsafe_ref(&raw const __data_end),
        unsafe_ref(&raw const __kernel_end),
        NO_EXECUTE,
    );

    // The direct map: 2 MiB pages, except around the kernel image, whose
    // frames are mapped read-only with 4 KiB pages.
    let huge = 2u64 << 20;
    let mut pa = 0;
    while pa < top {
        if pa + huge <= kernel_start_pa || pa >= kernel_end_pa.next_multiple_of(huge) {
            map_2m(pml4, PHYS_OFFSET + pa, pa, WRITABLE | NO_EXECUTE | GLOBAL);
        } else {
            for page in (pa..pa + huge).step_by(PAGE_SIZE as usize) {
                let in_kernel = page >= kernel_start_pa && page < kernel_end_pa;
                let flags = if in_kernel {
                    NO_EXECUTE
                } else {
                    WRITABLE | NO_EXECUTE
                };
                map_4k_in(pml4, PHYS_OFFSET + page, page, flags | GLOBAL);
            }
        }
        pa += huge;
    }
    // The AP trampoline runs at its physical address when paging turns on.
    map_4k_in(pml4, TRAMPOLINE_PA, TRAMPOLINE_PA, WRITABLE);

    KERNEL_PML4.store(pml4, Ordering::Relaxed);
    // SAFETY: the new tables map everything the kernel uses from here on: its
    // image, its stacks (boot stack in .bss) and all memory via the direct map.
    unsafe { asm!("mov cr3, {}", in(reg) pml4, options(nostack)) };
    DIRECT_MAP_READY.store(true, Ordering::Relaxed);
}

/// The physical address of the kernel's top-level page table (for the APs).
pub fn kernel_cr3() -> u64 {
    KERNEL_PML4.load(Ordering::Relaxed)
}

fn unsafe_ref(p: *const u8) -> &'static u8 {
    // SAFETY: linker symbols: only their addresses are used, never their bytes.
    unsafe { &*p }
}
