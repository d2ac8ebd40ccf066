//! Writing to kernel text while every CPU may be running it
//! (Linux: arch/x86/kernel/alternative.c, text_poke and text_poke_bp).
//!
//! Kernel text is mapped read-only, and stays so. [`TextPoke`] writes through
//! a temporary writable, non-executable alias (Linux: the poking mm at
//! `poking_addr`): a window at `POKE_VA` with one slot per text page, whose
//! page tables [`poking_init`] makes at boot. A slot is mapped the first time
//! a `TextPoke` writes to its page and stays mapped while that `TextPoke`
//! lives (one batch); dropping it clears every slot it mapped and flushes
//! them from the TLB, so no writable alias outlives the text lock. Nobody
//! ever switches write protection off.
//!
//! Linux maps one or two pages at `poking_addr` for each write and unmaps
//! them after it. This kernel first kept one page mapped and remapped it
//! (a page-table walk and a TLB flush for it and the next page) whenever a
//! write fell on another page: the int3 batch passes over all its sites
//! four times, so that was four remaps per text page per batch, about a
//! quarter of the cost of patching a site, and that share moved with how
//! many sites shared a page and with whether the compiler inlined the
//! walk into the old `paging::map_4k` (which changed with unrelated code elsewhere in the
//! crate): the bench's patching rows moved by 10% between builds of the
//! same code. A slot per page makes a page's mapping one store, once per
//! batch.
//!
//! Changing a 5-byte instruction that other CPUs may execute at the same time
//! cannot be done with one store. [`text_poke_bp_batch`] uses Linux's int3
//! protocol, for many sites at once:
//!  1. write `int3` (0xcc) over the first byte of every site, sync all CPUs;
//!  2. write bytes 1..5 of the new instruction, sync all CPUs;
//!  3. write the new first byte, sync all CPUs.
//!
//! A CPU that reaches a site in between traps on the int3, and
//! [`poke_int3_handler`] emulates the *new* instruction (a call: push the
//! return address and jump; a NOP: skip 5 bytes). "Sync" means every CPU has
//! executed a serialising instruction, so none still runs stale bytes.
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{compiler_fence, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use spin::{Mutex, MutexGuard};

use super::entry::PtRegs;
use super::paging::{self, NO_EXECUTE, PAGE_SIZE, PRESENT, WRITABLE};

/// Where text pages are mapped writable while being patched: slot `i` of
/// the window, at `POKE_VA + i * PAGE_SIZE`, maps the text page at
/// `POKE_BASE + i * PAGE_SIZE` (Linux: poking_addr).
const POKE_VA: u64 = 0xffff_fe00_0000_0000;
/// What one page table maps (512 slots).
const PT_SPAN: u64 = 512 * PAGE_SIZE;
/// The window's page tables: 32 MiB of text (the `--scale 35000` kernel
/// has about 5 MiB).
const POKE_PTS: usize = 16;
/// Slots in the window.
const POKE_SLOTS: usize = POKE_PTS * 512;

/// The window's page tables, one after the other, so that slot `i`'s entry
/// is element `i` (Linux keeps the fixmap's page tables in the image too:
/// level1_fixmap_pgt). Atomics only so that the static needs no `mut`:
/// they are written under TEXT_MUTEX, read by the CPU's page walker.
#[repr(C, align(4096))]
struct PokePtes([AtomicU64; POKE_SLOTS]);
static POKE_PTES: PokePtes = PokePtes([const { AtomicU64::new(0) }; POKE_SLOTS]);
/// The text address slot 0 maps: the 2 MiB boundary at or below the text's
/// start, so that slot `i` is entry `i % 512` of page table `i / 512`.
static POKE_BASE: AtomicU64 = AtomicU64::new(0);
/// The text the window may map, [start, end), checked when a slot is
/// mapped (copied by poking_init: the write path calls no function).
static TEXT_START: AtomicU64 = AtomicU64::new(0);
static TEXT_END: AtomicU64 = AtomicU64::new(0);

/// Hangs the window's page tables into the kernel's, all entries empty, so
/// that mapping a slot later is one store and cannot fail (Linux:
/// poking_init). Called once at boot after the kernel's page tables are
/// set up, before any text is patched.
pub fn poking_init() {
    let (start, end) = (super::stext(), super::etext());
    let base = start & !(PT_SPAN - 1);
    assert!(
        end - base <= POKE_SLOTS as u64 * PAGE_SIZE,
        "text_poke: {} KiB of text from {base:#x}, the window maps {} KiB",
        (end - base) >> 10,
        (POKE_SLOTS * PAGE_SIZE as usize) >> 10
    );
    let tables = paging::virt_to_phys(&POKE_PTES as *const PokePtes as u64);
    for i in 0..POKE_PTS as u64 {
        paging::pmd_populate_kernel(POKE_VA + i * PT_SPAN, tables + i * PAGE_SIZE);
    }
    POKE_BASE.store(base, Ordering::Relaxed);
    TEXT_START.store(start, Ordering::Relaxed);
    TEXT_END.store(end, Ordering::Relaxed);
}

/// Serialises all writers of kernel text (Linux: text_mutex).
static TEXT_MUTEX: Mutex<()> = Mutex::new(());

/// The int3 opcode.
pub const INT3: u8 = 0xcc;

/// Makes this CPU discard any prefetched instructions (Linux: sync_core).
#[inline(always)]
pub fn sync_core() {
    // cpuid is a serialising instruction with no other effect.
    core::arch::x86_64::__cpuid(0);
}

fn do_sync_core(_: usize) {
    sync_core();
}

/// Serialises every CPU (Linux: text_poke_sync): the others in an IPI, whose
/// return (iretq) serialises too, and this one directly.
pub fn text_poke_sync() {
    super::smp::smp_call_function(do_sync_core, 0);
    sync_core();
}

/// Exclusive access to kernel text, with the writable alias.
pub struct TextPoke {
    _guard: MutexGuard<'static, ()>,
    /// The lowest and highest window slots this TextPoke mapped (none while
    /// `lo > hi`): drop clears the mapped ones between them.
    lo: usize,
    hi: usize,
}

impl TextPoke {
    /// Takes the text lock. Preemption stays off while the alias exists, so the
    /// alias is only ever used by the CPU that mapped it. Always inlined, as
    /// `alias`, `write` and `drop`: see `write`.
    #[inline(always)]
    pub fn lock() -> TextPoke {
        super::percpu::this_cpu_preempt_inc(); // Linux: preempt_disable()
        TextPoke {
            _guard: TEXT_MUTEX.lock(),
            lo: usize::MAX,
            hi: 0,
        }
    }

    /// The writable alias of the text at [addr, addr + len) (`len` > 0), its
    /// pages mapped in the window if this TextPoke has not mapped them yet.
    #[inline(always)]
    fn alias(&mut self, addr: u64, len: usize) -> *mut u8 {
        let off = addr.wrapping_sub(POKE_BASE.load(Ordering::Relaxed));
        let first = (off / PAGE_SIZE) as usize;
        let last = ((off + len as u64 - 1) / PAGE_SIZE) as usize;
        self.map_slot(first);
        if last != first {
            self.map_slot(last);
        }
        (POKE_VA + off) as *mut u8
    }

    /// Maps window slot `slot` if it is not mapped. A slot not present was
    /// flushed when it was last cleared, and a CPU caches no translation of
    /// a page that is not present, so mapping it needs no flush.
    #[inline(always)]
    fn map_slot(&mut self, slot: usize) {
        let Some(pte) = POKE_PTES.0.get(slot) else {
            not_text(slot);
        };
        if pte.load(Ordering::Relaxed) == 0 {
            let page = POKE_BASE.load(Ordering::Relaxed) + slot as u64 * PAGE_SIZE;
            if page + PAGE_SIZE <= TEXT_START.load(Ordering::Relaxed)
                || page >= TEXT_END.load(Ordering::Relaxed)
            {
                not_text(slot);
            }
            let pa = paging::virt_to_phys(page);
            pte.store(pa | PRESENT | WRITABLE | NO_EXECUTE, Ordering::Relaxed);
            // The write through the slot comes after this store (the CPU's
            // page walk then sees it: x86 orders a CPU's own accesses).
            compiler_fence(Ordering::SeqCst);
            self.lo = self.lo.min(slot);
            self.hi = self.hi.max(slot);
        }
    }

    /// Writes `bytes` at kernel text address `addr` and checks them through
    /// the normal (read-only) mapping. Always inlined, as `alias`, `lock`
    /// and `drop`: the int3 batch calls it four times per site, and whether
    /// the compiler inlined these on its own changed with unrelated code
    /// elsewhere in the crate (the kernel crate is several code units), and
    /// with them the patching rows of the bench by tens of instructions per
    /// site (`event_enable_all_per_site` 217 inlined, 237 with `alias` alone
    /// inlined, 314 with none; 28 per site in `enable_all_per_site`).
    #[inline(always)]
    pub fn write(&mut self, addr: u64, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let dst = self.alias(addr, bytes.len());
        // SAFETY: `dst` is the writable alias of [addr, addr+len), every page
        // of it mapped by `alias`, and TEXT_MUTEX makes this the only writer.
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
        // SAFETY: reading back kernel text through its own mapping.
        let back = unsafe { core::slice::from_raw_parts(addr as *const u8, bytes.len()) };
        assert_eq!(back, bytes, "text_poke: write did not land at {addr:#x}");
    }

    /// Reads `N` bytes of text.
    pub fn read<const N: usize>(&self, addr: u64) -> [u8; N] {
        let mut out = [0u8; N];
        // SAFETY: kernel text is mapped and readable; the caller names a site.
        unsafe { core::ptr::copy_nonoverlapping(addr as *const u8, out.as_mut_ptr(), N) };
        out
    }
}

impl Drop for TextPoke {
    #[inline(always)]
    fn drop(&mut self) {
        // The writes through the slots come before their clearing.
        compiler_fence(Ordering::SeqCst);
        // Every slot this TextPoke mapped is in [lo, hi] (none if lo > hi).
        for (slot, pte) in POKE_PTES
            .0
            .iter()
            .enumerate()
            .take(self.hi + 1)
            .skip(self.lo)
        {
            if pte.load(Ordering::Relaxed) != 0 {
                pte.store(0, Ordering::Relaxed);
                paging::flush(POKE_VA + slot as u64 * PAGE_SIZE);
            }
        }
        super::percpu::this_cpu_preempt_dec(); // Linux: preempt_enable()
    }
}

/// How many slots of the poking window are mapped: 0 whenever no TextPoke
/// exists (the self-tests check it after their batches).
pub fn poke_slots_mapped() -> usize {
    let _guard = TEXT_MUTEX.lock();
    POKE_PTES
        .0
        .iter()
        .filter(|pte| pte.load(Ordering::Relaxed) != 0)
        .count()
}

/// A write outside the kernel's text: a bug in the caller.
#[cold]
#[inline(never)]
fn not_text(slot: usize) -> ! {
    let page = POKE_BASE.load(Ordering::Relaxed) + slot as u64 * PAGE_SIZE;
    panic!("text_poke: write to {page:#x}, not kernel text");
}

/// What a CPU that hits the int3 of an in-flight site must do instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emulate {
    /// `call target`: push the address after the site, jump to target.
    Call(u64),
    /// Continue at target (a NOP is `Jump(site + 5)`).
    Jump(u64),
}

/// One site of a batch.
#[derive(Clone, Copy, Debug)]
pub struct PokeSite {
    pub addr: u64,
    pub new: [u8; 5],
    pub emulate: Emulate,
}

/// The batch being applied, for the int3 handler (sorted by address).
static BATCH: AtomicPtr<Vec<PokeSite>> = AtomicPtr::new(core::ptr::null_mut());
/// int3 handlers currently looking at BATCH.
static BATCH_REFS: AtomicUsize = AtomicUsize::new(0);
/// int3 traps handled for in-flight sites since boot (for tests and stats).
static INT3_HITS: AtomicUsize = AtomicUsize::new(0);

/// Test hook, normally unset: a `fn()` called by [`text_poke_bp_batch`] right
/// after step 1 (every site holds int3 and every CPU has synced). The int3
/// self-test (trace::selftest) uses it to hold the patcher there until another
/// CPU has run into an in-flight site. Linux has no such hook; its int3
/// handler is exercised by luck, this one by construction.
static POKE_TEST_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Installs (or with None removes) the after-step-1 test hook.
pub fn set_poke_test_hook(hook: Option<fn()>) {
    POKE_TEST_HOOK.store(hook.map_or(0, |f| f as usize), Ordering::SeqCst);
}

/// Replaces the 5-byte instructions at `sites` (sorted by address, distinct)
/// while other CPUs run, with three global serialisations for the whole batch.
pub fn text_poke_bp_batch(poke: &mut TextPoke, sites: Vec<PokeSite>) {
    if sites.is_empty() {
        return;
    }
    debug_assert!(sites.windows(2).all(|w| w[0].addr < w[1].addr));
    let batch = Box::into_raw(Box::new(sites));
    BATCH.store(batch, Ordering::SeqCst);
    // SAFETY: `batch` is ours until freed below; the int3 handler only reads it.
    let sites = unsafe { &*batch };

    for s in sites {
        poke.write(s.addr, &[INT3]);
    }
    text_poke_sync();
    let hook = POKE_TEST_HOOK.load(Ordering::SeqCst);
    if hook != 0 {
        // SAFETY: only set_poke_test_hook stores here, always a valid fn().
        let hook: fn() = unsafe { core::mem::transmute::<usize, fn()>(hook) };
        hook();
    }
    for s in sites {
        poke.write(s.addr + 1, &s.new[1..]);
    }
    text_poke_sync();
    for s in sites {
        poke.write(s.addr, &s.new[..1]);
    }
    text_poke_sync();
    // Write the first bytes once more, unchanged. Hardware does not need
    // this; QEMU's TCG (7.2, multi-threaded) does: a block translated by
    // another vCPU while we wrote can be linked after our write invalidated
    // the page, and then runs stale code (an int3 that is gone, or the old
    // instruction) after the last sync. Every vCPU finished its translations
    // before acknowledging that sync, so this write invalidates all such
    // blocks; until then a stale int3 still finds its site in BATCH.
    for s in sites {
        poke.write(s.addr, &s.new[..1]);
    }

    BATCH.store(core::ptr::null_mut(), Ordering::SeqCst);
    while BATCH_REFS.load(Ordering::SeqCst) != 0 {
        core::hint::spin_loop();
    }
    // SAFETY: no handler can still see the batch (pointer cleared, refs zero).
    drop(unsafe { Box::from_raw(batch) });
}

/// The int3 handler for sites being patched (Linux: poke_int3_handler).
/// Returns false if the int3 is not one of ours.
///
/// It holds a reference on BATCH for its whole run, and the int3 gate keeps
/// interrupts off, so while it runs no batch can get past its first sync
/// (that needs this CPU to take an IPI), and the batch it saw cannot be
/// freed. The int3 may still be older than the batch it sees: a CPU can run
/// an int3 that a finished batch has already removed (QEMU's TCG may run a
/// stale translated block), and by the time the handler looks, BATCH may be
/// null or the next batch may have put its own int3 on the same byte. So
/// when the site is not in the batch it saw, it reads the byte, then BATCH
/// again: if the byte is no longer an int3, the instruction there now runs;
/// if BATCH changed meanwhile, it looks again in the new batch (at most
/// twice: a finished batch clears the pointer, and the next one cannot
/// finish while this CPU has interrupts off); only an int3 that is still
/// there while the same batch (or none) is published is not ours.
pub fn poke_int3_handler(regs: &mut PtRegs) -> bool {
    let ip = regs.rip - 1;
    // Take the reference before looking at the pointer: the patcher clears
    // the pointer, then waits for references to drop to zero.
    BATCH_REFS.fetch_add(1, Ordering::SeqCst);
    let mut batch = BATCH.load(Ordering::SeqCst);
    let handled = loop {
        if !batch.is_null() {
            // SAFETY: non-null and kept alive while BATCH_REFS > 0.
            let sites = unsafe { &*batch };
            if let Some(site) = find_site(sites, ip) {
                emulate(regs, ip, site.emulate);
                INT3_HITS.fetch_add(1, Ordering::Relaxed);
                break true;
            }
        }
        // Not a site of this batch. If the byte is no longer an int3, the
        // patcher removed it after this CPU fetched it: run the instruction
        // that is there now (Linux's kprobe_int3_handler does the same for
        // a removed breakpoint).
        // SAFETY: the CPU just executed an instruction at `ip`: mapped text.
        if unsafe { core::ptr::read_volatile(ip as *const u8) } != INT3 {
            regs.rip = ip;
            STALE_INT3.fetch_add(1, Ordering::Relaxed);
            break true;
        }
        let now = BATCH.load(Ordering::SeqCst);
        if now == batch {
            break false;
        }
        // Another batch was published while we looked (it may have put
        // this int3 there): look in it.
        BATCH_CHANGED.fetch_add(1, Ordering::Relaxed);
        batch = now;
    };
    BATCH_REFS.fetch_sub(1, Ordering::SeqCst);
    handled
}

/// int3 traps taken on a byte that was no longer an int3 (see above).
static STALE_INT3: AtomicUsize = AtomicUsize::new(0);
/// int3 traps during which the published batch changed (see above).
static BATCH_CHANGED: AtomicUsize = AtomicUsize::new(0);

/// How many int3 traps were taken on a removed int3 since boot.
pub fn stale_int3_hits() -> usize {
    STALE_INT3.load(Ordering::Relaxed)
}

/// How many int3 traps saw the published batch change under them since boot.
pub fn batch_changed_hits() -> usize {
    BATCH_CHANGED.load(Ordering::Relaxed)
}

/// Binary search written out by hand: the int3 handler must not call any
/// traceable code (a generic helper such as `slice::binary_search` is
/// compiled, and instrumented, in this crate), or it would trace itself and
/// could trap again on a site of the very batch it is serving.
#[inline(always)]
fn find_site(sites: &[PokeSite], ip: u64) -> Option<&PokeSite> {
    let (mut lo, mut hi) = (0, sites.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let s = sites.get(mid)?;
        if s.addr == ip {
            return Some(s);
        }
        if s.addr < ip {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    None
}

#[inline(always)]
fn emulate(regs: &mut PtRegs, ip: u64, what: Emulate) {
    match what {
        Emulate::Call(target) => {
            // The int3 entry left a gap between the interrupted stack and its
            // frame, so there is room below the stack pointer for the return
            // address.
            regs.rsp -= 8;
            // SAFETY: the interrupted kernel stack, just below its top of stack
            // (kernel code has no red zone).
            unsafe { *(regs.rsp as *mut u64) = ip + 5 };
            regs.rip = target;
        }
        Emulate::Jump(target) => regs.rip = target,
    }
}

/// How many in-flight sites were hit and emulated since boot.
pub fn int3_hits() -> usize {
    INT3_HITS.load(Ordering::Relaxed)
}
