//! What a kprobe does with the instruction it replaces (Linux:
//! arch/x86/kernel/kprobes/core.c: can_probe, prepare_emulation, the
//! kprobe_emulate_* functions and, from older kernels, resume_execution).
//!
//! A kprobe writes `int3` over the first byte of an instruction. When the
//! breakpoint fires, the original instruction still has to run, and there
//! are two ways:
//!  - **emulate** it on the saved registers: a relative jump, conditional
//!    jump, loop or jrcxz, call or return, a push or pop of a register, a NOP, and the
//!    flag instructions (cli, sti, pushf, popf) whose single-stepping would
//!    change the interrupt flag under the stepper. Nothing is executed.
//!  - **single-step** a copy of it in an out-of-line *slot*: the copy runs
//!    with the trap flag set, the debug exception follows, and
//!    [`resume_after_step`] moves the instruction pointer back to where the
//!    original would have left it. A RIP-relative operand is rewritten in
//!    the copy ([`slot_bytes`]) so that it still names the same address; an
//!    indirect call's pushed return address is corrected after the step.
//!
//! Everything else that depends on where it runs, or that traps, is refused
//! with `EOPNOTSUPP` as Linux refuses it (int3, int n, ud2, iret, far jumps
//! and calls, hlt), or is not supported here (xbegin). The rcx-counted
//! branches (loop, loope, loopne, jrcxz) are emulated, as Linux does. An
//! address that is not the start of an instruction, decoding the function
//! from its first byte with iced-x86, is refused with `EILSEQ` (Linux's
//! can_probe).
//!
//! The registers are reached through [`Regs`], so the emulator runs on the
//! host in the tests below and on the kernel's `PtRegs` in the int3 handler.
use alloc::vec::Vec;

use iced_x86::{
    ConditionCode, Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic, OpKind,
};

use crate::errno::Errno;

/// The longest x86 instruction.
pub const MAX_INSN_SIZE: usize = 15;
/// One out-of-line slot: the instruction, padded with int3.
pub const SLOT_SIZE: usize = 16;
/// The int3 opcode.
pub const INT3: u8 = 0xcc;

/// Flag bits the emulator reads or writes.
pub const FLAG_CF: u64 = 1 << 0;
pub const FLAG_PF: u64 = 1 << 2;
pub const FLAG_ZF: u64 = 1 << 6;
pub const FLAG_SF: u64 = 1 << 7;
pub const FLAG_TF: u64 = 1 << 8;
pub const FLAG_IF: u64 = 1 << 9;
pub const FLAG_OF: u64 = 1 << 11;
pub const FLAG_RF: u64 = 1 << 16;
/// The bits popf may change in ring 0 (CF PF AF ZF SF IF DF OF IOPL NT AC
/// ID); TF is left out on purpose: a probe never turns stepping on.
const POPF_MASK: u64 = 0x24_7ed5;

/// An instruction emulated on the saved registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emulate {
    /// Any NOP: continue after it.
    Nop,
    /// `jmp rel`: continue at the absolute target.
    Jmp(u64),
    /// `jcc rel`: the condition (0..16, the low nibble of the opcode) and
    /// the target taken when it holds.
    Jcc {
        cc: u8,
        target: u64,
    },
    /// `call rel`: push the address after it, continue at the target.
    Call(u64),
    /// `ret` or `ret imm16`: pop the return address, then `pop` more bytes.
    Ret {
        pop: u16,
    },
    /// `push r64`, register number in encoding order (rax 0 .. r15 15).
    Push(u8),
    /// `pop r64`.
    Pop(u8),
    Cli,
    Sti,
    Pushf,
    Popf,
    /// `loop`, `loope`, `loopne`, `jrcxz` (`jecxz` with `ecx`): the count
    /// register is rcx, or ecx with an address-size prefix (Linux:
    /// kprobe_emulate_loop).
    Loop {
        op: LoopOp,
        ecx: bool,
        target: u64,
    },
}

/// Which of the rcx-counted branches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopOp {
    /// Decrement the count; jump if it is not 0.
    Loop,
    /// ... and ZF is set.
    Loope,
    /// ... and ZF is clear.
    Loopne,
    /// Jump if the count is 0 (nothing changes).
    Jrcxz,
}

/// What one of those branches does with `rcx` and `flags`: whether it
/// jumps, and rcx after it. A 32-bit count (`ecx`) is written as any
/// 32-bit register is in 64-bit mode, zero-extended (what the CPU and
/// QEMU do; Linux's emulator keeps the upper half).
pub fn loop_step(op: LoopOp, ecx: bool, rcx: u64, flags: u64) -> (bool, u64) {
    let count = |v: u64| if ecx { v & 0xffff_ffff } else { v };
    if op == LoopOp::Jrcxz {
        return (count(rcx) == 0, rcx);
    }
    let new = count(count(rcx).wrapping_sub(1));
    let zf = flags & FLAG_ZF != 0;
    let taken = new != 0
        && match op {
            LoopOp::Loope => zf,
            LoopOp::Loopne => !zf,
            _ => true,
        };
    (taken, new)
}

/// What must be corrected after single-stepping the copy in its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepFixup {
    /// The instruction falls through: move rip from the slot back to the
    /// original text.
    Rip,
    /// An indirect jump: rip is already the absolute target.
    IndirectJmp,
    /// An indirect call: rip is the target, and the return address it
    /// pushed points into the slot: correct it.
    IndirectCall,
}

/// How a probed instruction is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Emulate(Emulate),
    Step(StepFixup),
}

/// A decoded, probe-able instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbedInsn {
    /// Its address in the text.
    pub addr: u64,
    /// Its length.
    pub len: u8,
    /// Its original bytes (the first `len`).
    pub bytes: [u8; MAX_INSN_SIZE],
    pub kind: Kind,
    /// The offset of a RIP-relative displacement (4 bytes) in `bytes`.
    pub rip_disp_offset: Option<u8>,
}

/// Decodes `func` (the bytes of a function starting at `start`, with any
/// other probe's int3 already replaced by its original byte) from its first
/// instruction up to `addr` and returns the instruction there.
/// `EILSEQ` if `addr` is inside an instruction or past the function's end
/// (Linux: can_probe), `EINVAL` if the bytes do not decode.
pub fn insn_at(func: &[u8], start: u64, addr: u64) -> Result<Instruction, Errno> {
    if addr < start || addr >= start + func.len() as u64 {
        return Err(Errno::EILSEQ);
    }
    let mut decoder = Decoder::with_ip(64, func, start, DecoderOptions::NONE);
    let mut insn = Instruction::default();
    while decoder.can_decode() {
        let ip = decoder.ip();
        decoder.decode_out(&mut insn);
        if insn.is_invalid() {
            return Err(Errno::EINVAL);
        }
        if ip == addr {
            return Ok(insn);
        }
        if ip > addr {
            break;
        }
    }
    Err(Errno::EILSEQ)
}

/// Every instruction boundary of `func` (offsets from its start), in order,
/// up to the first byte that does not decode.
pub fn boundaries(func: &[u8]) -> Vec<usize> {
    let mut decoder = Decoder::with_ip(64, func, 0, DecoderOptions::NONE);
    let mut insn = Instruction::default();
    let mut out = Vec::new();
    while decoder.can_decode() {
        let ip = decoder.ip() as usize;
        decoder.decode_out(&mut insn);
        if insn.is_invalid() {
            break;
        }
        out.push(ip);
    }
    out
}

/// Analyses the instruction at `addr` of the function `func` (see
/// [`insn_at`]) and says how a probe on it runs it, or why it cannot be
/// probed (Linux: arch_prepare_kprobe's errors).
pub fn analyze(func: &[u8], start: u64, addr: u64) -> Result<ProbedInsn, Errno> {
    let insn = insn_at(func, start, addr)?;
    let off = (addr - start) as usize;
    let len = insn.len();
    let mut bytes = [0u8; MAX_INSN_SIZE];
    bytes[..len].copy_from_slice(&func[off..off + len]);
    let kind = classify(&insn, &bytes[..len])?;
    let rip_disp_offset = if insn.is_ip_rel_memory_operand() {
        // The displacement's place in the bytes, from a decoder that has
        // just decoded the instruction (it keeps the offsets of the last).
        let mut decoder = Decoder::with_ip(64, &bytes[..len], addr, DecoderOptions::NONE);
        let again = decoder.decode();
        let co = decoder.get_constant_offsets(&again);
        if !co.has_displacement() || co.displacement_size() != 4 {
            return Err(Errno::EOPNOTSUPP);
        }
        Some(co.displacement_offset() as u8)
    } else {
        None
    };
    Ok(ProbedInsn {
        addr,
        len: len as u8,
        bytes,
        kind,
        rip_disp_offset,
    })
}

/// The register number of a one-byte `push r64` / `pop r64` (opcode
/// `base + r`, with an optional REX.B), if `bytes` is one.
fn push_pop_reg(bytes: &[u8], base: u8) -> Option<u8> {
    let (rex, op) = match bytes {
        [op] => (0, *op),
        [rex, op] if rex & 0xf0 == 0x40 => (*rex, *op),
        _ => return None,
    };
    if op & 0xf8 != base {
        return None;
    }
    Some((op & 7) | if rex & 1 != 0 { 8 } else { 0 })
}

fn classify(insn: &Instruction, bytes: &[u8]) -> Result<Kind, Errno> {
    use Emulate as E;
    let near64 = insn.op_count() >= 1 && insn.op0_kind() == OpKind::NearBranch64;
    let kind = match insn.flow_control() {
        FlowControl::Next => match insn.mnemonic() {
            Mnemonic::Nop => Kind::Emulate(E::Nop),
            Mnemonic::Cli => Kind::Emulate(E::Cli),
            Mnemonic::Sti => Kind::Emulate(E::Sti),
            Mnemonic::Pushfq => Kind::Emulate(E::Pushf),
            Mnemonic::Popfq => Kind::Emulate(E::Popf),
            // Stepping these with interrupts off would stop the CPU, or they
            // change the stack segment or other CPU state under the stepper.
            Mnemonic::Hlt
            | Mnemonic::Pushf
            | Mnemonic::Popf
            | Mnemonic::Syscall
            | Mnemonic::Sysretq
            | Mnemonic::Sysret
            | Mnemonic::Sysenter
            | Mnemonic::Sysexit
            | Mnemonic::Swapgs
            | Mnemonic::Mwait
            | Mnemonic::Monitor => return Err(Errno::EOPNOTSUPP),
            Mnemonic::Push => match push_pop_reg(bytes, 0x50) {
                Some(r) => Kind::Emulate(E::Push(r)),
                None => Kind::Step(StepFixup::Rip),
            },
            Mnemonic::Pop => match push_pop_reg(bytes, 0x58) {
                Some(r) => Kind::Emulate(E::Pop(r)),
                None => Kind::Step(StepFixup::Rip),
            },
            Mnemonic::Mov if insn.op0_register() == iced_x86::Register::SS => {
                return Err(Errno::EOPNOTSUPP)
            }
            _ => Kind::Step(StepFixup::Rip),
        },
        FlowControl::UnconditionalBranch if near64 => Kind::Emulate(E::Jmp(insn.near_branch64())),
        FlowControl::Call if near64 => Kind::Emulate(E::Call(insn.near_branch64())),
        FlowControl::ConditionalBranch
            if near64
                && matches!(
                    insn.mnemonic(),
                    Mnemonic::Loop
                        | Mnemonic::Loope
                        | Mnemonic::Loopne
                        | Mnemonic::Jrcxz
                        | Mnemonic::Jecxz
                ) =>
        {
            // Prefixes, the opcode (e0..e3), rel8.
            let prefixes = &bytes[..bytes.len().saturating_sub(2)];
            if prefixes.contains(&0x66) {
                // A 16-bit operand size truncates the target on some CPUs.
                return Err(Errno::EOPNOTSUPP);
            }
            let op = match insn.mnemonic() {
                Mnemonic::Loop => LoopOp::Loop,
                Mnemonic::Loope => LoopOp::Loope,
                Mnemonic::Loopne => LoopOp::Loopne,
                _ => LoopOp::Jrcxz,
            };
            Kind::Emulate(E::Loop {
                op,
                ecx: prefixes.contains(&0x67),
                target: insn.near_branch64(),
            })
        }
        FlowControl::ConditionalBranch
            if near64 && insn.condition_code() != ConditionCode::None =>
        {
            Kind::Emulate(E::Jcc {
                cc: insn.condition_code() as u8 - 1,
                target: insn.near_branch64(),
            })
        }
        FlowControl::Return if insn.mnemonic() == Mnemonic::Ret && bytes_opsize64(bytes) => {
            let pop = if insn.op_count() == 1 {
                insn.immediate16()
            } else {
                0
            };
            Kind::Emulate(E::Ret { pop })
        }
        FlowControl::IndirectBranch if insn.mnemonic() == Mnemonic::Jmp => {
            Kind::Step(StepFixup::IndirectJmp)
        }
        FlowControl::IndirectCall if insn.mnemonic() == Mnemonic::Call => {
            Kind::Step(StepFixup::IndirectCall)
        }
        // Far jumps and calls, iret, xbegin, int, int3,
        // into, ud0/1/2 and anything that raises an exception on purpose.
        _ => return Err(Errno::EOPNOTSUPP),
    };
    // A far indirect jump or call is `jmp m16:64`: refused above only if
    // the mnemonic differs, so check the memory size here.
    if let Kind::Step(StepFixup::IndirectJmp | StepFixup::IndirectCall) = kind {
        if insn.is_jmp_far_indirect() || insn.is_call_far_indirect() {
            return Err(Errno::EOPNOTSUPP);
        }
    }
    Ok(kind)
}

/// True unless an operand-size prefix (0x66) makes a `ret` pop 2 bytes.
fn bytes_opsize64(bytes: &[u8]) -> bool {
    !bytes.contains(&0x66) || bytes.last() == Some(&0x66)
}

/// The bytes of the out-of-line slot at `slot` for `insn`: the instruction
/// with its RIP-relative displacement (if any) rewritten to name the same
/// address from the slot, then int3 padding. None if the slot is too far
/// from the original for a 32-bit displacement.
pub fn slot_bytes(insn: &ProbedInsn, slot: u64) -> Option<[u8; SLOT_SIZE]> {
    let mut out = [INT3; SLOT_SIZE];
    let len = insn.len as usize;
    out[..len].copy_from_slice(&insn.bytes[..len]);
    if let Some(off) = insn.rip_disp_offset {
        let off = off as usize;
        let disp = i32::from_le_bytes(out[off..off + 4].try_into().ok()?) as i64;
        let new = disp + (insn.addr as i64).wrapping_sub(slot as i64);
        let new = i32::try_from(new).ok()?;
        out[off..off + 4].copy_from_slice(&new.to_le_bytes());
    }
    Some(out)
}

/// The registers and stack the emulator works on (the kernel's `PtRegs`).
pub trait Regs {
    /// A general register by its encoding number (rax 0, rcx 1, rdx 2, rbx 3,
    /// rsp 4, rbp 5, rsi 6, rdi 7, r8..r15 8..15).
    fn gpr(&self, n: u8) -> u64;
    fn set_gpr(&mut self, n: u8, v: u64);
    fn ip(&self) -> u64;
    fn set_ip(&mut self, v: u64);
    fn flags(&self) -> u64;
    fn set_flags(&mut self, v: u64);
    /// Reads a stack word.
    fn read_u64(&self, addr: u64) -> u64;
    /// Writes a stack word (below the interrupted stack pointer: the int3
    /// entry leaves a gap there).
    fn write_u64(&mut self, addr: u64, v: u64);
}

const RCX: u8 = 1;
const RSP: u8 = 4;

fn push<R: Regs + ?Sized>(regs: &mut R, v: u64) {
    let sp = regs.gpr(RSP) - 8;
    regs.write_u64(sp, v);
    regs.set_gpr(RSP, sp);
}

fn pop<R: Regs + ?Sized>(regs: &mut R) -> u64 {
    let sp = regs.gpr(RSP);
    let v = regs.read_u64(sp);
    regs.set_gpr(RSP, sp + 8);
    v
}

/// True if condition `cc` (the low nibble of a jcc opcode) holds for
/// `flags` (Linux: __kprobe_emulate_jcc).
pub fn cond_holds(cc: u8, flags: u64) -> bool {
    let f = |b: u64| flags & b != 0;
    let holds = match cc >> 1 {
        0 => f(FLAG_OF),
        1 => f(FLAG_CF),
        2 => f(FLAG_ZF),
        3 => f(FLAG_CF) || f(FLAG_ZF),
        4 => f(FLAG_SF),
        5 => f(FLAG_PF),
        6 => f(FLAG_SF) != f(FLAG_OF),
        _ => f(FLAG_ZF) || (f(FLAG_SF) != f(FLAG_OF)),
    };
    holds != (cc & 1 != 0)
}

/// Runs `e`, the instruction of `len` bytes at `addr`, on `regs`.
#[inline(always)]
pub fn emulate<R: Regs + ?Sized>(e: Emulate, addr: u64, len: u8, regs: &mut R) {
    let next = addr + len as u64;
    let ip = match e {
        Emulate::Nop => next,
        Emulate::Jmp(t) => t,
        Emulate::Jcc { cc, target } => {
            if cond_holds(cc, regs.flags()) {
                target
            } else {
                next
            }
        }
        Emulate::Call(t) => {
            push(regs, next);
            t
        }
        Emulate::Ret { pop: n } => {
            let ret = pop(regs);
            let sp = regs.gpr(RSP);
            regs.set_gpr(RSP, sp + n as u64);
            ret
        }
        Emulate::Push(r) => {
            let v = regs.gpr(r);
            push(regs, v);
            next
        }
        Emulate::Pop(r) => {
            let v = pop(regs);
            regs.set_gpr(r, v);
            next
        }
        Emulate::Cli => {
            regs.set_flags(regs.flags() & !FLAG_IF);
            next
        }
        Emulate::Sti => {
            regs.set_flags(regs.flags() | FLAG_IF);
            next
        }
        Emulate::Pushf => {
            let v = regs.flags() & !(FLAG_TF | FLAG_RF);
            push(regs, v);
            next
        }
        Emulate::Popf => {
            let v = pop(regs);
            let f = (regs.flags() & !POPF_MASK) | (v & POPF_MASK);
            regs.set_flags(f);
            next
        }
        Emulate::Loop { op, ecx, target } => {
            let (taken, rcx) = loop_step(op, ecx, regs.gpr(RCX), regs.flags());
            regs.set_gpr(RCX, rcx);
            if taken {
                target
            } else {
                next
            }
        }
    };
    regs.set_ip(ip);
}

/// After the copy at `slot` of the instruction at `addr` was stepped:
/// puts `regs` where running the original would have left them (Linux:
/// resume_execution).
#[inline(always)]
pub fn resume_after_step<R: Regs + ?Sized>(fix: StepFixup, addr: u64, slot: u64, regs: &mut R) {
    match fix {
        StepFixup::Rip => regs.set_ip(regs.ip().wrapping_sub(slot).wrapping_add(addr)),
        StepFixup::IndirectJmp => {}
        StepFixup::IndirectCall => {
            let sp = regs.gpr(RSP);
            let ret = regs.read_u64(sp);
            regs.write_u64(sp, ret.wrapping_sub(slot).wrapping_add(addr));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(Default, Debug)]
    struct Fake {
        gpr: [u64; 16],
        ip: u64,
        flags: u64,
        mem: HashMap<u64, u64>,
    }

    impl Regs for Fake {
        fn gpr(&self, n: u8) -> u64 {
            self.gpr[n as usize]
        }
        fn set_gpr(&mut self, n: u8, v: u64) {
            self.gpr[n as usize] = v;
        }
        fn ip(&self) -> u64 {
            self.ip
        }
        fn set_ip(&mut self, v: u64) {
            self.ip = v;
        }
        fn flags(&self) -> u64 {
            self.flags
        }
        fn set_flags(&mut self, v: u64) {
            self.flags = v;
        }
        fn read_u64(&self, a: u64) -> u64 {
            *self.mem.get(&a).expect("read of an unwritten stack word")
        }
        fn write_u64(&mut self, a: u64, v: u64) {
            self.mem.insert(a, v);
        }
    }

    const BASE: u64 = 0xffff_ffff_8010_0000;

    /// A made-up function with one of each kind:
    ///  0: push rbp              55
    ///  1: mov rbp, rsp          48 89 e5
    ///  4: push r12              41 54
    ///  6: mov rax, [rip+0x100]  48 8b 05 00 01 00 00
    /// 13: call +0x20            e8 20 00 00 00
    /// 18: test eax, eax         85 c0
    /// 20: jne +2                75 02
    /// 22: jmp +5                eb 05
    /// 24: nop dword [rax+0]     0f 1f 40 00
    /// 28: call rax              ff d0
    /// 30: pop r12               41 5c
    /// 32: pop rbp               5d
    /// 33: ret                   c3
    const FUNC: &[u8] = &[
        0x55, 0x48, 0x89, 0xe5, 0x41, 0x54, 0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00, 0xe8, 0x20,
        0x00, 0x00, 0x00, 0x85, 0xc0, 0x75, 0x02, 0xeb, 0x05, 0x0f, 0x1f, 0x40, 0x00, 0xff, 0xd0,
        0x41, 0x5c, 0x5d, 0xc3,
    ];

    fn at(off: u64) -> Result<ProbedInsn, Errno> {
        analyze(FUNC, BASE, BASE + off)
    }

    #[test]
    fn boundaries_of_the_function() {
        assert_eq!(
            boundaries(FUNC),
            vec![0, 1, 4, 6, 13, 18, 20, 22, 24, 28, 30, 32, 33]
        );
    }

    #[test]
    fn each_boundary_gets_its_kind() {
        use Emulate as E;
        let kinds: Vec<Kind> = boundaries(FUNC)
            .into_iter()
            .map(|o| at(o as u64).unwrap().kind)
            .collect();
        assert_eq!(
            kinds,
            vec![
                Kind::Emulate(E::Push(5)),
                Kind::Step(StepFixup::Rip),
                Kind::Emulate(E::Push(12)),
                Kind::Step(StepFixup::Rip),
                Kind::Emulate(E::Call(BASE + 18 + 0x20)),
                Kind::Step(StepFixup::Rip),
                Kind::Emulate(E::Jcc {
                    cc: 5,
                    target: BASE + 24
                }),
                Kind::Emulate(E::Jmp(BASE + 29)),
                Kind::Emulate(E::Nop),
                Kind::Step(StepFixup::IndirectCall),
                Kind::Emulate(E::Pop(12)),
                Kind::Emulate(E::Pop(5)),
                Kind::Emulate(E::Ret { pop: 0 }),
            ]
        );
        assert_eq!(at(6).unwrap().rip_disp_offset, Some(3));
        assert_eq!(at(1).unwrap().rip_disp_offset, None);
    }

    #[test]
    fn inside_an_instruction_or_outside_is_eilseq() {
        for off in [2, 3, 5, 7, 12, 14, 21, 25, 29, 31] {
            assert_eq!(at(off), Err(Errno::EILSEQ), "offset {off}");
        }
        assert_eq!(at(FUNC.len() as u64), Err(Errno::EILSEQ));
        assert_eq!(analyze(FUNC, BASE, BASE - 1), Err(Errno::EILSEQ));
    }

    #[test]
    fn refused_instructions() {
        for code in [
            &[0xcc][..],               // int3
            &[0xcd, 0x80],             // int 0x80
            &[0x0f, 0x0b],             // ud2
            &[0x48, 0xcf],             // iretq
            &[0xf4],                   // hlt
            &[0x66, 0xe2, 0xfe],       // loopw (16-bit target)
            &[0xcb],                   // retf
            &[0xff, 0x28],             // jmp far [rax]
            &[0xff, 0x18],             // call far [rax]
            &[0xc7, 0xf8, 0, 0, 0, 0], // xbegin
        ] {
            assert_eq!(
                analyze(code, BASE, BASE),
                Err(Errno::EOPNOTSUPP),
                "{code:x?}"
            );
        }
        assert_eq!(
            analyze(&[0x0f, 0xff, 0xc0], BASE, BASE),
            Err(Errno::EOPNOTSUPP)
        );
        // Bytes that do not decode, or are cut short.
        assert_eq!(analyze(&[0x0f, 0xff], BASE, BASE), Err(Errno::EINVAL));
        assert_eq!(analyze(&[0x06], BASE, BASE), Err(Errno::EINVAL));
    }

    #[test]
    fn other_steppable_and_emulated_forms() {
        // jmp [rip+8]: indirect through a RIP-relative slot: stepped, fixed.
        let i = analyze(&[0xff, 0x25, 8, 0, 0, 0], BASE, BASE).unwrap();
        assert_eq!(i.kind, Kind::Step(StepFixup::IndirectJmp));
        assert_eq!(i.rip_disp_offset, Some(2));
        // jmp qword [rax*8+table]: a jump table.
        let i = analyze(&[0xff, 0x24, 0xc5, 0, 0, 0x10, 0x80], BASE, BASE).unwrap();
        assert_eq!(i.kind, Kind::Step(StepFixup::IndirectJmp));
        // 2-byte jcc rel32, ret imm16, pushfq/popfq, cli/sti, 66-prefixed push.
        let i = analyze(&[0x0f, 0x84, 0x10, 0, 0, 0], BASE, BASE).unwrap();
        assert_eq!(
            i.kind,
            Kind::Emulate(Emulate::Jcc {
                cc: 4,
                target: BASE + 6 + 0x10
            })
        );
        let i = analyze(&[0xc2, 0x10, 0], BASE, BASE).unwrap();
        assert_eq!(i.kind, Kind::Emulate(Emulate::Ret { pop: 16 }));
        for (code, e) in [
            (0x9c, Emulate::Pushf),
            (0x9d, Emulate::Popf),
            (0xfa, Emulate::Cli),
            (0xfb, Emulate::Sti),
        ] {
            assert_eq!(analyze(&[code], BASE, BASE).unwrap().kind, Kind::Emulate(e));
        }
        let i = analyze(&[0x66, 0x50], BASE, BASE).unwrap();
        assert_eq!(i.kind, Kind::Step(StepFixup::Rip));
        // push qword [rip+0]: stepped, displacement fixed.
        let i = analyze(&[0xff, 0x35, 0, 0, 0, 0], BASE, BASE).unwrap();
        assert_eq!(
            (i.kind, i.rip_disp_offset),
            (Kind::Step(StepFixup::Rip), Some(2))
        );
    }

    #[test]
    fn slot_copy_names_the_same_address() {
        let i = at(6).unwrap();
        let target = BASE + 13 + 0x100;
        for slot in [BASE + 0x10_0000, BASE - 0x7000_0000, BASE + 16] {
            let b = slot_bytes(&i, slot).unwrap();
            assert_eq!(&b[i.len as usize..], &[INT3; SLOT_SIZE - 7][..]);
            let mut d = Decoder::with_ip(64, &b, slot, DecoderOptions::NONE);
            let copy = d.decode();
            assert_eq!(copy.len(), 7);
            assert_eq!(copy.ip_rel_memory_address(), target, "slot {slot:#x}");
        }
        // Too far for a 32-bit displacement.
        assert_eq!(slot_bytes(&i, BASE - 0x9000_0000), None);
        // Without a RIP-relative operand the copy is the instruction.
        let i = at(1).unwrap();
        let b = slot_bytes(&i, 0x1000).unwrap();
        assert_eq!(&b[..3], &FUNC[1..4]);
    }

    #[test]
    fn conditions_match_the_flags() {
        // (cc, flags that make it hold, flags that do not)
        let cases = [
            (0x0, FLAG_OF, 0),
            (0x2, FLAG_CF, 0),
            (0x4, FLAG_ZF, 0),
            (0x6, FLAG_ZF, 0),
            (0x6, FLAG_CF, 0),
            (0x8, FLAG_SF, 0),
            (0xa, FLAG_PF, 0),
            (0xc, FLAG_SF, FLAG_SF | FLAG_OF),
            (0xc, FLAG_OF, 0),
            (0xe, FLAG_ZF, FLAG_SF | FLAG_OF),
            (0xe, FLAG_SF, 0),
        ];
        for (cc, yes, no) in cases {
            assert!(cond_holds(cc, yes), "cc {cc:#x} flags {yes:#x}");
            assert!(!cond_holds(cc, no), "cc {cc:#x} flags {no:#x}");
            // The odd condition is the negation.
            assert!(!cond_holds(cc | 1, yes), "cc {:#x} flags {yes:#x}", cc | 1);
            assert!(cond_holds(cc | 1, no), "cc {:#x} flags {no:#x}", cc | 1);
        }
    }

    fn regs() -> Fake {
        let mut r = Fake::default();
        r.gpr[RSP as usize] = 0x8000;
        r.flags = FLAG_IF | 2;
        r
    }

    #[test]
    fn emulate_stack_and_flow() {
        let mut r = regs();
        // call: pushes the next address.
        emulate(Emulate::Call(0x5000), 0x1000, 5, &mut r);
        assert_eq!((r.ip, r.gpr[4], r.mem[&0x7ff8]), (0x5000, 0x7ff8, 0x1005));
        // ret 8: pops it and 8 more bytes.
        emulate(Emulate::Ret { pop: 8 }, 0x5000, 3, &mut r);
        assert_eq!((r.ip, r.gpr[4]), (0x1005, 0x8008));
        // push r12 / pop rbx.
        r.gpr[12] = 0xabcd;
        emulate(Emulate::Push(12), 0x2000, 2, &mut r);
        assert_eq!((r.ip, r.gpr[4], r.mem[&0x8000]), (0x2002, 0x8000, 0xabcd));
        emulate(Emulate::Pop(3), 0x2002, 1, &mut r);
        assert_eq!((r.ip, r.gpr[4], r.gpr[3]), (0x2003, 0x8008, 0xabcd));
        // push rsp pushes the old value; pop rsp loads the stack pointer.
        emulate(Emulate::Push(4), 0x2003, 1, &mut r);
        assert_eq!(r.mem[&0x8000], 0x8008);
        emulate(Emulate::Pop(4), 0x2004, 1, &mut r);
        assert_eq!(r.gpr[4], 0x8008);
        // jcc taken and not taken; jmp; nop.
        r.flags |= FLAG_ZF;
        emulate(
            Emulate::Jcc {
                cc: 4,
                target: 0x3000,
            },
            0x2005,
            2,
            &mut r,
        );
        assert_eq!(r.ip, 0x3000);
        emulate(
            Emulate::Jcc {
                cc: 5,
                target: 0x4000,
            },
            0x3000,
            6,
            &mut r,
        );
        assert_eq!(r.ip, 0x3006);
        emulate(Emulate::Jmp(0x100), 0x3006, 2, &mut r);
        assert_eq!(r.ip, 0x100);
        emulate(Emulate::Nop, 0x100, 4, &mut r);
        assert_eq!(r.ip, 0x104);
    }

    #[test]
    fn emulate_flag_instructions() {
        let mut r = regs();
        emulate(Emulate::Cli, 0x10, 1, &mut r);
        assert_eq!(r.flags & FLAG_IF, 0);
        // pushf never shows TF or RF; popf never sets TF.
        r.flags |= FLAG_TF | FLAG_CF;
        emulate(Emulate::Pushf, 0x11, 1, &mut r);
        assert_eq!(r.mem[&0x7ff8], FLAG_CF | 2);
        r.mem.insert(0x7ff8, FLAG_IF | FLAG_TF | FLAG_ZF | 2);
        r.flags &= !FLAG_TF;
        emulate(Emulate::Popf, 0x12, 1, &mut r);
        assert_eq!(r.flags, FLAG_IF | FLAG_ZF | 2);
        assert_eq!((r.ip, r.gpr[4]), (0x13, 0x8000));
        emulate(Emulate::Cli, 0x13, 1, &mut r);
        emulate(Emulate::Sti, 0x14, 1, &mut r);
        assert_eq!(r.flags & FLAG_IF, FLAG_IF);
    }

    #[test]
    fn loop_forms_are_emulated() {
        use LoopOp::*;
        // (bytes, op, ecx, rel8 target from BASE)
        for (code, op, ecx) in [
            (&[0xe2, 0x10][..], Loop, false),
            (&[0xe1, 0x10], Loope, false),
            (&[0xe0, 0x10], Loopne, false),
            (&[0xe3, 0x10], Jrcxz, false),
            (&[0x67, 0xe2, 0x10], Loop, true),
            (&[0x67, 0xe3, 0x10], Jrcxz, true),
        ] {
            let i = analyze(code, BASE, BASE).unwrap();
            let target = BASE + code.len() as u64 + 0x10;
            assert_eq!(
                i.kind,
                Kind::Emulate(Emulate::Loop { op, ecx, target }),
                "{code:x?}"
            );
        }
        // A backward loop (rel8 -2: to itself).
        let i = analyze(&[0xe2, 0xfe], BASE, BASE).unwrap();
        assert_eq!(
            i.kind,
            Kind::Emulate(Emulate::Loop {
                op: Loop,
                ecx: false,
                target: BASE
            })
        );
    }

    #[test]
    fn loop_semantics() {
        use LoopOp::*;
        // loop: decrement, jump unless 0; flags unchanged.
        assert_eq!(loop_step(Loop, false, 3, 0), (true, 2));
        assert_eq!(loop_step(Loop, false, 1, 0), (false, 0));
        assert_eq!(loop_step(Loop, false, 0, 0), (true, u64::MAX));
        // loope / loopne also need ZF set / clear.
        assert_eq!(loop_step(Loope, false, 3, FLAG_ZF), (true, 2));
        assert_eq!(loop_step(Loope, false, 3, 0), (false, 2));
        assert_eq!(loop_step(Loopne, false, 3, 0), (true, 2));
        assert_eq!(loop_step(Loopne, false, 3, FLAG_ZF), (false, 2));
        assert_eq!(loop_step(Loopne, false, 1, 0), (false, 0));
        // jrcxz reads only.
        assert_eq!(loop_step(Jrcxz, false, 0, 0), (true, 0));
        assert_eq!(loop_step(Jrcxz, false, 1 << 32, 0), (false, 1 << 32));
        // The 32-bit forms look at ecx and write it zero-extended.
        assert_eq!(loop_step(Jrcxz, true, 1 << 32, 0), (true, 1 << 32));
        assert_eq!(loop_step(Loop, true, (5 << 32) | 1, 0), (false, 0));
        assert_eq!(loop_step(Loop, true, 5 << 32, 0), (true, 0xffff_ffff));
        // On the registers: rcx and rip.
        let mut r = regs();
        r.gpr[1] = 2;
        let e = Emulate::Loop {
            op: Loop,
            ecx: false,
            target: 0x900,
        };
        emulate(e, 0x1000, 2, &mut r);
        assert_eq!((r.ip, r.gpr[1]), (0x900, 1));
        emulate(e, 0x1000, 2, &mut r);
        assert_eq!((r.ip, r.gpr[1]), (0x1002, 0));
        let flags = r.flags;
        let e = Emulate::Loop {
            op: Jrcxz,
            ecx: false,
            target: 0x800,
        };
        emulate(e, 0x1002, 2, &mut r);
        assert_eq!((r.ip, r.gpr[1], r.flags), (0x800, 0, flags));
    }

    #[test]
    fn resume_after_stepping() {
        let (addr, slot) = (0xffff_ffff_8010_0006u64, 0xffff_ffff_8020_0040u64);
        let mut r = regs();
        r.ip = slot + 7;
        resume_after_step(StepFixup::Rip, addr, slot, &mut r);
        assert_eq!(r.ip, addr + 7);
        // An indirect call: the target stays, the return address moves.
        r.ip = 0x1234;
        r.gpr[4] = 0x7ff8;
        r.mem.insert(0x7ff8, slot + 2);
        resume_after_step(StepFixup::IndirectCall, addr, slot, &mut r);
        assert_eq!((r.ip, r.mem[&0x7ff8]), (0x1234, addr + 2));
        resume_after_step(StepFixup::IndirectJmp, addr, slot, &mut r);
        assert_eq!(r.ip, 0x1234);
    }
}
