//! The x86 side of static keys (Linux: arch/x86/include/asm/jump_label.h,
//! arch/x86/kernel/jump_label.c).
//!
//! [`arch_static_branch!`] is Linux's `arch_static_branch`: an `asm goto`
//! (`asm!` with a `label` operand) that emits the 5-byte NOP at the site and,
//! in the `__jump_table` section, the entry `{ site - ., label - ., key - . }`
//! (see `tracer::jump_label`). The compiler places the guarded code out of
//! line at the label, so while the key is off the site costs one NOP.
//! Enabling the key turns the NOP into `jmp label`.
//!
//! This file only knows the bytes: the NOP, `jmp rel32`, reading a site,
//! checking that a site holds what the generic side says before anything is
//! written (Linux: the "unexpected op" check of `__jump_label_patch`), and
//! handing the sites to the int3 batch of `text_poke`.
use alloc::vec::Vec;

use tracer::jump_label::JumpLabelType;

use super::text_poke::{self, Emulate, PokeSite, TextPoke};

/// The NOP every site holds while its branch is not taken (Linux:
/// x86_nops[5], the `.byte` of `arch_static_branch`).
pub const JUMP_LABEL_NOP: [u8; 5] = [0x0f, 0x1f, 0x44, 0x00, 0x00];
/// Size of a site (Linux: JUMP_LABEL_NOP_SIZE).
pub const JUMP_LABEL_NOP_SIZE: u64 = 5;
/// The opcode of `jmp rel32` (Linux: JMP32_INSN_OPCODE).
const JMP32_INSN_OPCODE: u8 = 0xe9;

/// `if arch_static_branch!(KEY, BRANCH) { .. }` (Linux: arch_static_branch):
/// false while the site holds the NOP, true once it holds `jmp`. `KEY` is
/// the path of a `static` (the entry refers to it by symbol); `BRANCH` is
/// the entry's bit 0 (0 for `static_branch_unlikely`).
macro_rules! arch_static_branch {
    ($key:path, $branch:literal) => {
        'static_branch: {
            // SAFETY: the asm emits a 5-byte NOP (no effect) and a table
            // entry in its own section; the only way out other than falling
            // through is the label, as declared. It touches no memory,
            // stack or flags.
            unsafe {
                ::core::arch::asm!(
                    "2: .byte 0x0f,0x1f,0x44,0x00,0x00",
                    ".pushsection __jump_table, \"a\"",
                    ".balign 8",
                    ".long 2b - .",
                    ".long {yes} - .",
                    ".quad {key} + {branch} - .",
                    ".popsection",
                    key = sym $key,
                    branch = const $branch,
                    yes = label { break 'static_branch true; },
                    options(nomem, nostack, preserves_flags),
                );
            }
            false
        }
    };
}
pub(crate) use arch_static_branch;

/// The instruction a site must hold: the NOP, or `jmp target` (Linux:
/// __jump_label_patch's choice of code). None if `target` is out of
/// rel32 range (never for a kernel linked in the top 2 GiB).
pub fn jump_label_insn(code: u64, target: u64, ty: JumpLabelType) -> Option<[u8; 5]> {
    match ty {
        JumpLabelType::Nop => Some(JUMP_LABEL_NOP),
        JumpLabelType::Jmp => {
            let rel = (target as i64).wrapping_sub((code + JUMP_LABEL_NOP_SIZE) as i64);
            let r = i32::try_from(rel).ok()?.to_le_bytes();
            Some([JMP32_INSN_OPCODE, r[0], r[1], r[2], r[3]])
        }
    }
}

/// What a site holds, read back from the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JumpInsn {
    /// The NOP.
    Nop,
    /// `jmp addr`.
    Jmp(u64),
    /// Anything else.
    Other,
}

/// Reads the site at `code` and says what it holds, with its bytes.
pub fn jump_label_read_site(code: u64) -> (JumpInsn, [u8; 5]) {
    // SAFETY: a jump table site is 5 bytes of mapped kernel text.
    let b = unsafe { core::ptr::read_unaligned(code as *const [u8; 5]) };
    let insn = if b == JUMP_LABEL_NOP {
        JumpInsn::Nop
    } else if b[0] == JMP32_INSN_OPCODE {
        let rel = i32::from_le_bytes([b[1], b[2], b[3], b[4]]);
        JumpInsn::Jmp((code + JUMP_LABEL_NOP_SIZE).wrapping_add_signed(rel as i64))
    } else {
        JumpInsn::Other
    };
    (insn, b)
}

/// One site to change, as the generic side decided it: it holds `old` now
/// and must become `new`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JumpSite {
    pub code: u64,
    pub target: u64,
    pub old: JumpLabelType,
    pub new: JumpLabelType,
}

/// A site that does not hold what it should (Linux: the "unexpected op"
/// report of __jump_label_patch, which BUG()s; here nothing is written and
/// the caller gets the error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JumpFault {
    pub code: u64,
    /// What the site should hold ([0; 5] if no instruction could be encoded).
    pub expected: [u8; 5],
    pub actual: [u8; 5],
}

/// Checks that the site holds the instruction of `ty`.
fn jump_label_verify(code: u64, target: u64, ty: JumpLabelType) -> Result<(), JumpFault> {
    let (_, actual) = jump_label_read_site(code);
    match jump_label_insn(code, target, ty) {
        Some(expected) if expected == actual => Ok(()),
        e => Err(JumpFault {
            code,
            expected: e.unwrap_or([0; 5]),
            actual,
        }),
    }
}

/// Checks a site at boot, while no other CPU runs, and makes it hold the
/// instruction of `new` with a plain write (Linux:
/// arch_jump_label_transform_static; the compiler emitted `old`, the NOP).
pub fn arch_jump_label_transform_static(
    poke: &mut TextPoke,
    code: u64,
    target: u64,
    new: JumpLabelType,
) -> Result<(), JumpFault> {
    jump_label_verify(code, target, JumpLabelType::Nop)?;
    if new != JumpLabelType::Nop {
        let insn = jump_label_insn(code, target, new).ok_or(JumpFault {
            code,
            expected: [0; 5],
            actual: JUMP_LABEL_NOP,
        })?;
        poke.write(code, &insn);
    }
    Ok(())
}

/// Patches `sites` (sorted by address, distinct) while every CPU may run
/// them (Linux: arch_jump_label_transform_queue + _apply, one int3 batch).
/// First every site is checked against `old`; if one differs, nothing is
/// written. A CPU that meets a site's int3 in between continues where the
/// new instruction leads: the target for `jmp`, the next instruction for
/// the NOP. Returns how many sites were written.
pub fn arch_jump_label_transform_apply(sites: &[JumpSite]) -> Result<usize, JumpFault> {
    let mut poke = TextPoke::lock();
    let mut batch = Vec::with_capacity(sites.len());
    for s in sites {
        jump_label_verify(s.code, s.target, s.old)?;
        let new = jump_label_insn(s.code, s.target, s.new).ok_or(JumpFault {
            code: s.code,
            expected: [0; 5],
            actual: jump_label_read_site(s.code).1,
        })?;
        let emulate = match s.new {
            JumpLabelType::Jmp => Emulate::Jump(s.target),
            JumpLabelType::Nop => Emulate::Jump(s.code + JUMP_LABEL_NOP_SIZE),
        };
        batch.push(PokeSite {
            addr: s.code,
            new,
            emulate,
        });
    }
    let n = batch.len();
    text_poke::text_poke_bp_batch(&mut poke, batch);
    Ok(n)
}
