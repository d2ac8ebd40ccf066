//! The x86 side of kprobes (Linux: arch/x86/kernel/kprobes/core.c).
//!
//! A probe replaces the first byte of an instruction with `int3`
//! ([`arch_arm_kprobe`]), written through the text-poking alias of
//! `text_poke` and followed by a sync of every CPU, as Linux's
//! arch_arm_kprobe does. When the breakpoint fires, the generic side
//! (crate::kprobes) runs the handlers, then either emulates the original
//! instruction on the saved registers or single-steps a copy of it:
//!
//! - the copy lives in an out-of-line *slot*, 16 bytes of a page reserved
//!   in the kernel's own text (`kprobe_insn_slots`, filled with int3), so
//!   that a RIP-relative displacement rewritten for the slot still reaches
//!   its target (the kernel is in the top 2 GiB);
//! - [`setup_singlestep`] points the saved rip at the slot, sets the trap
//!   flag and clears the interrupt flag (no interrupt may run between the
//!   breakpoint and the debug exception);
//! - the CPU returns from int3, runs the one instruction, and raises the
//!   debug exception (#DB); [`resume_execution`] moves rip back to the
//!   original text and restores the two flags.
//!
//! The decoding, the choice between emulation and stepping and the fix-ups
//! are host-tested in `tracer::kprobe_insn`; this file only knows the
//! machine: the slots, the bytes and `PtRegs`.
use core::arch::global_asm;
use core::sync::atomic::{AtomicU64, Ordering};

use tracer::errno::Errno;
use tracer::kprobe_insn::{self, Kind, ProbedInsn, Regs, FLAG_IF, FLAG_TF, SLOT_SIZE};

use super::entry::PtRegs;
use super::text_poke::{self, TextPoke, INT3};

/// Pages of out-of-line slots.
const SLOT_PAGES: usize = 4;
/// How many slots there are.
pub const NR_SLOTS: usize = SLOT_PAGES * 4096 / SLOT_SIZE;

// The slots: kernel text that holds nothing but int3 until a probe copies
// its instruction into one (Linux allocates them from module space with
// get_insn_slot; here they are reserved in the image).
global_asm!(
    r#"
.pushsection .text.kprobe_insn_slots, "ax"
.balign 4096
.global kprobe_insn_slots
kprobe_insn_slots:
.fill 4 * 4096, 1, 0xcc
.global kprobe_insn_slots_end
kprobe_insn_slots_end:
.popsection
"#
);

extern "C" {
    static kprobe_insn_slots: u8;
    static kprobe_insn_slots_end: u8;
}

/// The slot area `[start, end)`: probing it is refused.
pub fn insn_slots_range() -> core::ops::Range<u64> {
    // Taking the addresses of extern statics reads nothing.
    (&raw const kprobe_insn_slots) as u64..(&raw const kprobe_insn_slots_end) as u64
}

/// Which slots are taken, one bit each (changed under the caller's
/// registration lock).
static SLOT_USED: [AtomicU64; NR_SLOTS / 64] = [const { AtomicU64::new(0) }; NR_SLOTS / 64];

fn alloc_slot() -> Option<u64> {
    for (w, word) in SLOT_USED.iter().enumerate() {
        let used = word.load(Ordering::Relaxed);
        if used != u64::MAX {
            let bit = (!used).trailing_zeros() as usize;
            word.fetch_or(1 << bit, Ordering::Relaxed);
            return Some(insn_slots_range().start + ((w * 64 + bit) * SLOT_SIZE) as u64);
        }
    }
    None
}

/// Slots in use (for the shell's report).
pub fn slots_in_use() -> usize {
    SLOT_USED
        .iter()
        .map(|w| w.load(Ordering::Relaxed).count_ones() as usize)
        .sum()
}

/// A prepared probe: the instruction, how it runs and its slot (Linux:
/// struct arch_specific_insn).
#[derive(Clone, Copy, Debug)]
pub struct ArchInsn {
    pub insn: ProbedInsn,
    /// The out-of-line copy, for a stepped instruction (0 otherwise).
    pub slot: u64,
}

impl ArchInsn {
    /// The original first byte, which the int3 replaces.
    pub fn opcode(&self) -> u8 {
        self.insn.bytes[0]
    }
}

/// Decodes the instruction at `addr` of the function `func` (its bytes,
/// starting at `start`, with other probes' int3 replaced by their original
/// bytes), and for a stepped instruction copies it into a fresh slot
/// (Linux: arch_prepare_kprobe). Errors: EILSEQ not an instruction
/// boundary, EOPNOTSUPP an instruction that cannot be probed, EINVAL bytes
/// that do not decode, ENOMEM no free slot.
pub fn arch_prepare_kprobe(func: &[u8], start: u64, addr: u64) -> Result<ArchInsn, Errno> {
    let insn = kprobe_insn::analyze(func, start, addr)?;
    let slot = match insn.kind {
        Kind::Emulate(_) => 0,
        Kind::Step(_) => {
            let slot = alloc_slot().ok_or(Errno::ENOMEM)?;
            let Some(bytes) = kprobe_insn::slot_bytes(&insn, slot) else {
                free_slot(slot);
                return Err(Errno::EOPNOTSUPP);
            };
            let mut poke = TextPoke::lock();
            poke.write(slot, &bytes);
            drop(poke);
            // Nobody runs the slot before the int3 is armed, which syncs.
            slot
        }
    };
    Ok(ArchInsn { insn, slot })
}

/// Frees the slot of a probe that no CPU can be stepping any more (the
/// caller waited for a grace period). The slot is filled with int3 again.
pub fn arch_remove_kprobe(a: &ArchInsn) {
    if a.slot != 0 {
        let mut poke = TextPoke::lock();
        poke.write(a.slot, &[INT3; SLOT_SIZE]);
        drop(poke);
        free_slot(a.slot);
    }
}

fn free_slot(slot: u64) {
    let i = ((slot - insn_slots_range().start) / SLOT_SIZE as u64) as usize;
    SLOT_USED[i / 64].fetch_and(!(1 << (i % 64)), Ordering::Relaxed);
}

/// Writes `byte` at `addr` and makes every CPU see it: a one-byte write
/// replaces an instruction's first byte atomically for any CPU fetching
/// it. The byte is written once more after the sync for QEMU's TCG (see
/// text_poke_bp_batch).
fn poke_one(addr: u64, byte: u8) {
    let mut poke = TextPoke::lock();
    poke.write(addr, &[byte]);
    text_poke::text_poke_sync();
    poke.write(addr, &[byte]);
}

/// Puts the int3 at the probed address (Linux: arch_arm_kprobe).
pub fn arch_arm_kprobe(addr: u64) {
    poke_one(addr, INT3);
}

/// Puts the original first byte back (Linux: arch_disarm_kprobe).
pub fn arch_disarm_kprobe(addr: u64, a: &ArchInsn) {
    poke_one(addr, a.opcode());
}

/// A copy of `len` bytes of text at `start`, taken under the text lock so
/// that no site is half-patched (an in-flight int3) while it is read.
pub fn copy_text(start: u64, len: usize) -> alloc::vec::Vec<u8> {
    let mut buf = alloc::vec![0u8; len];
    let poke = TextPoke::lock();
    // SAFETY: the caller names a function of kernel text, mapped readable.
    unsafe { core::ptr::copy_nonoverlapping(start as *const u8, buf.as_mut_ptr(), len) };
    drop(poke);
    buf
}

/// Reads the byte at a text address.
pub fn text_byte(addr: u64) -> u8 {
    // SAFETY: the caller names kernel text, which is mapped and readable.
    unsafe { core::ptr::read_volatile(addr as *const u8) }
}

impl Regs for PtRegs {
    #[inline(always)]
    fn gpr(&self, n: u8) -> u64 {
        match n {
            0 => self.rax,
            1 => self.rcx,
            2 => self.rdx,
            3 => self.rbx,
            4 => self.rsp,
            5 => self.rbp,
            6 => self.rsi,
            7 => self.rdi,
            8 => self.r8,
            9 => self.r9,
            10 => self.r10,
            11 => self.r11,
            12 => self.r12,
            13 => self.r13,
            14 => self.r14,
            _ => self.r15,
        }
    }
    #[inline(always)]
    fn set_gpr(&mut self, n: u8, v: u64) {
        let r = match n {
            0 => &mut self.rax,
            1 => &mut self.rcx,
            2 => &mut self.rdx,
            3 => &mut self.rbx,
            4 => &mut self.rsp,
            5 => &mut self.rbp,
            6 => &mut self.rsi,
            7 => &mut self.rdi,
            8 => &mut self.r8,
            9 => &mut self.r9,
            10 => &mut self.r10,
            11 => &mut self.r11,
            12 => &mut self.r12,
            13 => &mut self.r13,
            14 => &mut self.r14,
            _ => &mut self.r15,
        };
        *r = v;
    }
    #[inline(always)]
    fn ip(&self) -> u64 {
        self.rip
    }
    #[inline(always)]
    fn set_ip(&mut self, v: u64) {
        self.rip = v;
    }
    #[inline(always)]
    fn flags(&self) -> u64 {
        self.rflags
    }
    #[inline(always)]
    fn set_flags(&mut self, v: u64) {
        self.rflags = v;
    }
    #[inline(always)]
    fn read_u64(&self, addr: u64) -> u64 {
        // SAFETY: a word of the interrupted kernel stack, at or above its
        // stack pointer (the emulator only pops what is there).
        unsafe { core::ptr::read_volatile(addr as *const u64) }
    }
    #[inline(always)]
    fn write_u64(&mut self, addr: u64, v: u64) {
        // SAFETY: a word of the interrupted kernel stack: at its stack
        // pointer, or just below it inside the gap the int3 entry leaves
        // between the interrupted stack and the exception frame.
        unsafe { core::ptr::write_volatile(addr as *mut u64, v) }
    }
}

/// Runs the probed instruction on `regs` without executing it. False if
/// it must be stepped instead.
#[inline(always)]
pub fn emulate(a: &ArchInsn, regs: &mut PtRegs) -> bool {
    match a.insn.kind {
        Kind::Emulate(e) => {
            kprobe_insn::emulate(e, a.insn.addr, a.insn.len, regs);
            true
        }
        Kind::Step(_) => false,
    }
}

/// Makes the return from int3 run the slot's copy with the trap flag set
/// and interrupts off. Returns the flags to restore afterwards.
#[inline(always)]
pub fn setup_singlestep(a: &ArchInsn, regs: &mut PtRegs) -> u64 {
    let saved = regs.rflags & (FLAG_TF | FLAG_IF);
    regs.rflags = (regs.rflags | FLAG_TF) & !FLAG_IF;
    regs.rip = a.slot;
    saved
}

/// After the debug exception of a step: fixes rip (and an indirect call's
/// return address) and gives back the flags `setup_singlestep` saved.
#[inline(always)]
pub fn resume_execution(a: &ArchInsn, regs: &mut PtRegs, saved: u64) {
    if let Kind::Step(fix) = a.insn.kind {
        kprobe_insn::resume_after_step(fix, a.insn.addr, a.slot, regs);
    }
    regs.rflags = (regs.rflags & !(FLAG_TF | FLAG_IF)) | saved;
}

/// True if this debug exception is a completed single step (DR6.BS); DR6
/// is cleared for the next one (the CPU never clears it).
#[inline(always)]
pub fn debug_single_step_done() -> bool {
    let dr6: u64;
    // SAFETY: reading and writing DR6 in ring 0 only changes DR6.
    unsafe {
        core::arch::asm!("mov {}, dr6", out(reg) dr6, options(nomem, nostack));
        core::arch::asm!("mov dr6, {}", in(reg) 0xffff_0ff0u64, options(nomem, nostack));
    }
    dr6 & (1 << 14) != 0
}
