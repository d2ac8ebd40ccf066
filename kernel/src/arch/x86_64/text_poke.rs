//! Writing to kernel text while every CPU may be running it
//! (Linux: arch/x86/kernel/alternative.c, text_poke and text_poke_bp).
//!
//! Kernel text is mapped read-only, and stays so. [`TextPoke`] writes through
//! a temporary writable alias: it maps the text's physical page at a spare
//! address (`POKE_VA`) for as long as it needs it, then unmaps it. Nobody
//! ever switches write protection off.
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
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use spin::{Mutex, MutexGuard};

use super::entry::PtRegs;
use super::paging::{self, NO_EXECUTE, PAGE_SIZE, WRITABLE};

/// Where text pages are mapped writable while being patched (two pages, so
/// an instruction that crosses a page boundary can be written in one go).
const POKE_VA: u64 = 0xffff_fe00_0000_0000;

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
    /// The physical page now mapped at POKE_VA.
    mapped: Option<u64>,
}

impl TextPoke {
    /// Takes the text lock. Preemption stays off while the alias exists, so the
    /// alias is only ever used by the CPU that mapped it. Always inlined, as
    /// `alias`, `write` and `drop`: see `alias`.
    #[inline(always)]
    pub fn lock() -> TextPoke {
        super::percpu::this_cpu_preempt_inc(); // Linux: preempt_disable()
        TextPoke {
            _guard: TEXT_MUTEX.lock(),
            mapped: None,
        }
    }

    /// Always inlined, as `write`, its only caller, and `lock` and `drop`:
    /// whether the compiler inlined these on its own changed with unrelated
    /// code elsewhere in the crate (the kernel crate is several code units),
    /// and with them the patching rows of the bench by tens of instructions
    /// per site (`event_enable_all_per_site` 217 inlined, 237 with `alias`
    /// alone inlined, 314 with none).
    #[inline(always)]
    fn alias(&mut self, addr: u64) -> *mut u8 {
        let page_va = addr & !(PAGE_SIZE - 1);
        let pa = paging::virt_to_phys(page_va);
        if self.mapped != Some(pa) {
            // Map this page and the next (an instruction may cross into it).
            paging::map_4k(POKE_VA, pa, WRITABLE | NO_EXECUTE);
            paging::map_4k(POKE_VA + PAGE_SIZE, pa + PAGE_SIZE, WRITABLE | NO_EXECUTE);
            self.mapped = Some(pa);
        }
        (POKE_VA + (addr - page_va)) as *mut u8
    }

    /// Writes `bytes` at kernel text address `addr` and checks them through
    /// the normal (read-only) mapping. Always inlined: the int3 batch calls
    /// it four times per site, and whether the compiler inlined it on its
    /// own changed with unrelated code elsewhere in the crate (28
    /// instructions per site in `enable_all_per_site`).
    #[inline(always)]
    pub fn write(&mut self, addr: u64, bytes: &[u8]) {
        let dst = self.alias(addr);
        // SAFETY: `dst` is the writable alias of [addr, addr+len) (at most
        // one page boundary crossed, covered by the second mapped page), and
        // TEXT_MUTEX makes this the only writer.
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
        if self.mapped.is_some() {
            paging::unmap_4k(POKE_VA);
            paging::unmap_4k(POKE_VA + PAGE_SIZE);
        }
        super::percpu::this_cpu_preempt_dec(); // Linux: preempt_enable()
    }
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
