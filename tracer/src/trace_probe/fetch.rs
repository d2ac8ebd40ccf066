//! Running fetch programs over a probe hit (Linux: `process_fetch_insn`
//! in trace_kprobe.c, `process_fetch_insn_bottom`, `__get_data_size`
//! and `store_trace_args` in trace_probe_tmpl.h).
//!
//! A program runs in stages: load a value (a register, a stack slot...),
//! dereference it any number of times, store it into the record in the
//! arg's type (or copy a string after the fixed part and store its
//! `__data_loc` word), fix up a bitfield, and loop for an array. Memory is
//! read through [`FetchEnv::read`], which never faults: a bad address
//! makes the read fail, and the arg keeps zeros (a string prints
//! `(fault)`).

use super::{reg, FetchInsn, TraceProbe, MAX_STRING_SIZE};
use alloc::vec::Vec;

/// What a fetch program reads: the registers at the hit and kernel memory.
pub trait FetchEnv {
    /// The register at index `idx` of [`super::REG_NAMES`].
    fn reg(&self, idx: u8) -> u64;
    /// Copies `buf.len()` bytes at `addr`; false (and nothing promised in
    /// `buf`) if any byte is not readable kernel memory.
    fn read(&self, addr: u64, buf: &mut [u8]) -> bool;
    /// The current task's name (`current->comm`).
    fn comm(&self) -> [u8; 16];
}

fn read_u64(env: &dyn FetchEnv, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    env.read(addr, &mut b).then(|| u64::from_le_bytes(b))
}

/// `regs_get_kernel_stack_nth`: the Nth word above the stack pointer, 0
/// if it cannot be read.
fn stack_nth(env: &dyn FetchEnv, n: u64) -> u64 {
    let sp = env.reg(reg::SP);
    read_u64(env, sp.wrapping_add(n.wrapping_mul(8))).unwrap_or(0)
}

/// `regs_get_kernel_argument`: the System V argument registers, then the
/// stack above the return address.
fn kernel_argument(env: &dyn FetchEnv, n: u32) -> u64 {
    const ARGS: [u8; 6] = [reg::DI, reg::SI, reg::DX, reg::CX, reg::R8, reg::R9];
    match ARGS.get(n as usize) {
        Some(&r) => env.reg(r),
        None => stack_nth(env, n as u64 - ARGS.len() as u64 + 1),
    }
}

/// Where stage 1 found a string that is not in memory (`$comm`, `\"..."`).
enum Src<'a> {
    Mem,
    Bytes(&'a [u8]),
}

/// A string's bytes: at most `MAX_STRING_SIZE` bytes before the NUL.
fn strlen(env: &dyn FetchEnv, src: &Src<'_>, addr: u64) -> Option<usize> {
    match src {
        Src::Bytes(b) => Some(
            b.iter()
                .position(|&c| c == 0)
                .unwrap_or(b.len())
                .min(MAX_STRING_SIZE),
        ),
        Src::Mem => {
            let mut n = 0usize;
            loop {
                let mut c = [0u8; 1];
                if !env.read(addr.wrapping_add(n as u64), &mut c) {
                    return None;
                }
                if c[0] == 0 || n == MAX_STRING_SIZE {
                    return Some(n);
                }
                n += 1;
            }
        }
    }
}

/// Loads the `__data_loc` word at `dl` of `rec`.
fn loc_at(rec: &[u8], dl: usize) -> u32 {
    rec.get(dl..dl + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn put_loc(rec: &mut [u8], dl: usize, loc: u32) {
    if let Some(b) = rec.get_mut(dl..dl + 4) {
        b.copy_from_slice(&loc.to_le_bytes());
    }
}

/// `fetch_store_string`: copies the string (NUL included, cut to the room
/// the word at `dl` gives) to where that word points, and rewrites the
/// word with the length stored (0 when the string could not be read).
/// Returns the bytes used.
fn store_string(env: &dyn FetchEnv, src: &Src<'_>, addr: u64, rec: &mut [u8], dl: usize) -> usize {
    let loc = loc_at(rec, dl);
    let maxlen = (loc >> 16) as usize;
    let off = (loc & 0xffff) as usize;
    if maxlen == 0 {
        return 0;
    }
    let n = match strlen(env, src, addr) {
        Some(len) => {
            let n = (len + 1).min(maxlen);
            let Some(dst) = rec.get_mut(off..off + n) else {
                return 0;
            };
            let ok = match src {
                Src::Bytes(b) => {
                    let k = (n - 1).min(b.len());
                    dst[..k].copy_from_slice(&b[..k]);
                    true
                }
                Src::Mem => env.read(addr, &mut dst[..n - 1]),
            };
            dst[n - 1] = 0;
            if ok {
                n
            } else {
                0
            }
        }
        None => 0,
    };
    put_loc(rec, dl, ((n as u32) << 16) | off as u32);
    n
}

/// Runs `code` (Linux: `process_fetch_insn`). With `dest`, the record and
/// the offset of the arg's field: stores the value and returns the
/// dynamic bytes used. Without: returns the dynamic bytes the strings
/// need (0 for other args).
pub fn process_fetch_insn(
    code: &[FetchInsn],
    env: &dyn FetchEnv,
    mut dest: Option<(&mut [u8], usize)>,
) -> usize {
    // The common case, a register stored as it is: no stage loop.
    if let ([FetchInsn::Reg(r), FetchInsn::StRaw(size), FetchInsn::End], Some((rec, dl))) =
        (code, &mut dest)
    {
        let n = *size as usize;
        if let Some(d) = rec.get_mut(*dl..*dl + n) {
            d.copy_from_slice(&env.reg(*r).to_le_bytes()[..n]);
        }
        return 0;
    }
    let mut i = 0;
    let mut src = Src::Mem;
    // Stage 1: load.
    let mut val = loop {
        match code.get(i) {
            Some(FetchInsn::Reg(r)) => break env.reg(*r),
            Some(FetchInsn::Stack(n)) => break stack_nth(env, *n as u64),
            Some(FetchInsn::StackP) => break env.reg(reg::SP),
            Some(FetchInsn::Retval) => break env.reg(reg::AX),
            Some(FetchInsn::Imm(v)) => break *v,
            Some(FetchInsn::Arg(n)) => break kernel_argument(env, *n),
            Some(FetchInsn::Comm) => {
                src = Src::Bytes(&[]);
                break 0;
            }
            Some(FetchInsn::Data(d)) => {
                src = Src::Bytes(d);
                break 0;
            }
            // The symbol's address is in the next `Imm`.
            Some(FetchInsn::Symbol(_)) => i += 1,
            _ => return 0,
        }
    };
    let comm;
    if matches!(code.get(i), Some(FetchInsn::Comm)) {
        comm = env.comm();
        src = Src::Bytes(&comm);
    }
    i += 1;

    let mut lval = val;
    let mut total = 0usize;
    let mut looped = 0u32;
    // The `__data_loc` word before the last string store (Linux: `loc`).
    let mut loc = 0u32;
    'stage2: loop {
        // Stage 2: dereference.
        while let Some(FetchInsn::Deref(o) | FetchInsn::UDeref(o)) = code.get(i) {
            lval = val;
            match read_u64(env, val.wrapping_add(*o as u64)) {
                Some(v) => val = v,
                None => return 0,
            }
            i += 1;
        }
        let s3 = i;
        'stage3: loop {
            let mut ret = 0usize;
            // Stage 3: store.
            match (&mut dest, code.get(i)) {
                (None, Some(FetchInsn::StString { offset } | FetchInsn::StUstring { offset })) => {
                    ret = strlen(env, &src, val.wrapping_add(*offset as u64)).map_or(0, |n| n + 1);
                    i += 1;
                }
                (None, _) => return 0,
                (Some((rec, dl)), Some(insn)) => {
                    let dl = *dl;
                    match insn {
                        FetchInsn::StRaw(size) => {
                            let n = *size as usize;
                            if let Some(d) = rec.get_mut(dl..dl + n) {
                                d.copy_from_slice(&val.to_le_bytes()[..n]);
                            }
                        }
                        FetchInsn::StMem { offset, size } | FetchInsn::StUmem { offset, size } => {
                            let n = *size as usize;
                            if let Some(d) = rec.get_mut(dl..dl + n) {
                                if !env.read(val.wrapping_add(*offset as u64), d) {
                                    d.fill(0);
                                }
                            }
                        }
                        FetchInsn::StString { offset } | FetchInsn::StUstring { offset } => {
                            loc = loc_at(rec, dl);
                            ret =
                                store_string(env, &src, val.wrapping_add(*offset as u64), rec, dl);
                        }
                        _ => return 0,
                    }
                    i += 1;
                    // Stage 4: modify.
                    if let Some(FetchInsn::ModBf {
                        basesize,
                        lshift,
                        rshift,
                    }) = code.get(i)
                    {
                        apply_bitfield(rec, dl, *basesize, *lshift, *rshift);
                        i += 1;
                    }
                }
                (Some(_), None) => return 0,
            }
            // Stage 5: loop.
            if let Some(FetchInsn::LpArray(n)) = code.get(i) {
                total += ret;
                looped += 1;
                if looped < *n {
                    i = s3;
                    let s3_insn = &code[s3];
                    if !matches!(
                        s3_insn,
                        FetchInsn::StString { .. } | FetchInsn::StUstring { .. }
                    ) {
                        let size = match s3_insn {
                            FetchInsn::StMem { size, .. } | FetchInsn::StUmem { size, .. } => {
                                *size as usize
                            }
                            _ => 0,
                        };
                        if let Some((_, dl)) = &mut dest {
                            *dl += size;
                        }
                        val = val.wrapping_add(size as u64);
                        continue 'stage3;
                    }
                    // An array of strings: the next pointer.
                    i = s3 - 1;
                    val = lval.wrapping_add(8);
                    if let Some((rec, dl)) = &mut dest {
                        *dl += 4;
                        let len = (loc >> 16).saturating_sub(ret as u32);
                        put_loc(rec, *dl, (len << 16) | ((loc & 0xffff) + ret as u32));
                    }
                    continue 'stage2;
                }
                return total;
            }
            return ret;
        }
    }
}

fn apply_bitfield(rec: &mut [u8], dl: usize, basesize: u8, lshift: u8, rshift: u8) {
    let n = basesize as usize;
    let Some(d) = rec.get_mut(dl..dl + n) else {
        return;
    };
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(d);
    let bits = n as u32 * 8;
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let v = u64::from_le_bytes(b);
    let v = (v.checked_shl(lshift as u32).unwrap_or(0) & mask)
        .checked_shr(rshift as u32)
        .unwrap_or(0);
    d.copy_from_slice(&v.to_le_bytes()[..n]);
}

/// Dynamic bytes the probe's strings need at this hit (Linux:
/// `__get_data_size`).
pub fn get_data_size(tp: &TraceProbe, env: &dyn FetchEnv) -> usize {
    tp.args
        .iter()
        .filter(|a| a.dynamic)
        .map(|a| process_fetch_insn(&a.code, env, None))
        .sum()
}

/// Fills the arguments of a record (Linux: `store_trace_args`): `rec` is
/// the whole record (common header at 0), at least `tp.args_offset() +
/// tp.size + dsize` bytes and zeroed; `dsize` is what [`get_data_size`]
/// gave. Strings go after the fixed part, each `__data_loc` word naming
/// its bytes.
pub fn store_trace_args(tp: &TraceProbe, env: &dyn FetchEnv, rec: &mut [u8], dsize: usize) {
    let data = tp.args_offset() as usize;
    let mut dyndata = data + tp.size as usize;
    let mut maxlen = dsize;
    for a in &tp.args {
        let dl = data + a.offset as usize;
        if a.dynamic {
            put_loc(rec, dl, ((maxlen as u32) << 16) | (dyndata as u32 & 0xffff));
        }
        let ret = process_fetch_insn(&a.code, env, Some((&mut *rec, dl)));
        if a.dynamic {
            dyndata += ret;
            maxlen = maxlen.saturating_sub(ret);
        }
    }
}

/// A register argument compiled at definition time (Linux interprets its
/// fetch program at every hit): copy `size` bytes at byte `src` of the
/// saved registers to byte `dst` of the record. The registers are saved
/// little-endian, so a narrower type is the register's first bytes, what
/// the program's `StRaw` stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegCopy {
    pub src: u16,
    pub dst: u16,
    pub size: u8,
}

/// The copies of a probe whose every argument is a register stored as it
/// is (`%di`, `%ax:u32`, `$arg1`..`$arg6`, which are the System V argument
/// registers, `$retval`, which is rax); None if any argument needs its program (a dereference, a
/// stack slot, a string, a bitfield...). `reg_offset` gives the byte
/// offset of a register (index in [`super::REG_NAMES`]) in the caller's
/// block of `regs_len` saved bytes, None for one it does not save. Every
/// copy is checked to fit both sides here, once.
pub fn compile_reg_copies(
    tp: &TraceProbe,
    regs_len: usize,
    reg_offset: impl Fn(u8) -> Option<u16>,
) -> Option<Vec<RegCopy>> {
    const ARGS: [u8; 6] = [reg::DI, reg::SI, reg::DX, reg::CX, reg::R8, reg::R9];
    let rec_len = (tp.args_offset() + tp.size) as usize;
    tp.args
        .iter()
        .map(|a| {
            let (r, size) = match a.code.as_slice() {
                [FetchInsn::Reg(r), FetchInsn::StRaw(s), FetchInsn::End] => (*r, *s),
                [FetchInsn::Arg(n), FetchInsn::StRaw(s), FetchInsn::End] => {
                    (*ARGS.get(*n as usize)?, *s)
                }
                [FetchInsn::Retval, FetchInsn::StRaw(s), FetchInsn::End] => (reg::AX, *s),
                _ => return None,
            };
            if !matches!(size, 1 | 2 | 4 | 8) || a.dynamic {
                return None;
            }
            let src = reg_offset(r)?;
            let dst = u16::try_from(tp.args_offset() + a.offset).ok()?;
            let fits = |at: u16, len: usize| usize::from(at) + size as usize <= len;
            (fits(src, regs_len) && fits(dst, rec_len)).then_some(RegCopy {
                src,
                dst,
                size: size as u8,
            })
        })
        .collect()
}

/// Stores the copies from the saved registers' bytes into the record:
/// each one a fixed-size copy (no call, no loop over bytes).
#[inline(always)]
pub fn store_reg_copies(copies: &[RegCopy], regs: &[u8], rec: &mut [u8]) {
    #[inline(always)]
    fn copy<const N: usize>(regs: &[u8], rec: &mut [u8], src: usize, dst: usize) {
        if let (Some(s), Some(d)) = (regs.get(src..src + N), rec.get_mut(dst..dst + N)) {
            let s: &[u8; N] = s.try_into().expect("N bytes");
            let d: &mut [u8; N] = d.try_into().expect("N bytes");
            *d = *s;
        }
    }
    for c in copies {
        let (s, d) = (usize::from(c.src), usize::from(c.dst));
        match c.size {
            8 => copy::<8>(regs, rec, s, d),
            4 => copy::<4>(regs, rec, s, d),
            2 => copy::<2>(regs, rec, s, d),
            _ => copy::<1>(regs, rec, s, d),
        }
    }
}

/// Most arguments a probe may have for [`reg_words`].
pub const REG_WORDS_MAX: usize = 4;

/// The registers of a probe whose every argument is a whole saved
/// register (8 bytes: `%di`, `$arg1`, `$retval`, the default `x64`/`u64`
/// or `s64` types), stored one after the other from the record's
/// `args_offset`, and at most [`REG_WORDS_MAX`] of them: `n` arguments,
/// the `i`th being the saved word `idx[i]` (its byte offset / 8). The
/// record's length is then fixed by `n`, so the kernel writes it with a
/// writer made for that length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegWords {
    pub n: u8,
    pub idx: [u8; REG_WORDS_MAX],
}

/// [`RegWords`] of compiled copies, or None if a copy is narrower than a
/// word, not word-aligned in the saved registers, not in order, or if
/// there are more than [`REG_WORDS_MAX`].
pub fn reg_words(copies: &[RegCopy], args_offset: u32) -> Option<RegWords> {
    if copies.len() > REG_WORDS_MAX {
        return None;
    }
    let mut w = RegWords {
        n: copies.len() as u8,
        idx: [0; REG_WORDS_MAX],
    };
    for (i, c) in copies.iter().enumerate() {
        let dst = args_offset as usize + 8 * i;
        if c.size != 8 || c.src % 8 != 0 || usize::from(c.dst) != dst {
            return None;
        }
        w.idx[i] = u8::try_from(c.src / 8).ok()?;
    }
    Some(w)
}

#[cfg(test)]
mod reg_copy_tests {
    use super::*;
    use crate::trace_probe::{argv_split, parse_probe, ProbeSymbols};

    struct NoSyms;
    impl ProbeSymbols for NoSyms {
        fn lookup(&self, name: &str) -> (usize, u64) {
            if name == "f" {
                (1, 0x1000)
            } else {
                (0, 0)
            }
        }
    }

    /// Registers saved in REG_NAMES order, 8 bytes each, without orig_ax.
    fn offset(r: u8) -> Option<u16> {
        match r {
            0..=14 => Some(u16::from(r) * 8),
            15 => None,
            _ => Some((u16::from(r) - 1) * 8),
        }
    }

    struct Env([u64; 20]);
    impl FetchEnv for Env {
        fn reg(&self, idx: u8) -> u64 {
            match offset(idx) {
                Some(o) => self.0[usize::from(o / 8)],
                None => u64::MAX,
            }
        }
        fn read(&self, _: u64, _: &mut [u8]) -> bool {
            false
        }
        fn comm(&self) -> [u8; 16] {
            [0; 16]
        }
    }

    fn probe(cmd: &str) -> TraceProbe {
        let mut tp = parse_probe(&argv_split(cmd), &NoSyms).unwrap();
        tp.update_args(&NoSyms).unwrap();
        tp
    }

    /// The copies store exactly what the fetch programs store.
    #[test]
    fn copies_match_the_programs() {
        let regs: [u64; 20] =
            core::array::from_fn(|i| 0x1122_3344_5566_7788u64.rotate_left(i as u32 * 5) ^ i as u64);
        let bytes: Vec<u8> = regs.iter().flat_map(|r| r.to_le_bytes()).collect();
        for cmd in [
            "p f %di",
            "p f %ax:u32 %si:s16 %dx:x8 %r15 %ip %sp:x64 %flags",
            "p f $arg1 $arg2:u8 $arg6:s32 a=%cx b=$arg4:x16",
            "p f %r9:u16 %r8:u64 %bp %bx %ss %cs",
            "r f $retval",
            "r f $retval:s32 %dx",
        ] {
            let tp = probe(cmd);
            let copies = compile_reg_copies(&tp, bytes.len(), offset)
                .unwrap_or_else(|| panic!("{cmd}: not compiled"));
            assert_eq!(copies.len(), tp.args.len(), "{cmd}");
            let len = (tp.args_offset() + tp.size) as usize;
            let mut want = alloc::vec![0u8; len];
            store_trace_args(&tp, &Env(regs), &mut want, 0);
            let mut got = alloc::vec![0u8; len];
            store_reg_copies(&copies, &bytes, &mut got);
            assert_eq!(got, want, "{cmd}");
        }
    }

    /// Whole registers in order become words; anything narrower, or more
    /// than REG_WORDS_MAX, does not.
    #[test]
    fn whole_registers_are_words() {
        let words = |cmd: &str| {
            let tp = probe(cmd);
            let copies = compile_reg_copies(&tp, 160, offset).unwrap();
            reg_words(&copies, tp.args_offset())
        };
        let w = |n: u8, idx: [u8; REG_WORDS_MAX]| Some(RegWords { n, idx });
        assert_eq!(words("p f"), w(0, [0; 4]));
        assert_eq!(words("p f %di"), w(1, [14, 0, 0, 0]));
        // (%ip is word 15 here: this block does not save orig_ax.)
        assert_eq!(words("p f $arg2 %r15 $arg1:s64 %ip"), w(4, [13, 0, 14, 15]));
        assert_eq!(words("r f $retval"), w(1, [10, 0, 0, 0]));
        assert_eq!(words("r f %dx:x64 $retval"), w(2, [12, 10, 0, 0]));
        assert_eq!(words("p f %di:u32"), None);
        assert_eq!(words("p f %di %si:u8"), None);
        assert_eq!(words("p f %di %si %dx %cx %r8"), None);
        // Copies out of the record's order are not words.
        let tp = probe("p f %di %si");
        let mut copies = compile_reg_copies(&tp, 160, offset).unwrap();
        copies.swap(0, 1);
        assert_eq!(reg_words(&copies, tp.args_offset()), None);
        // Nor a source inside a word.
        copies.swap(0, 1);
        copies[1].src += 4;
        assert_eq!(reg_words(&copies, tp.args_offset()), None);
    }

    /// Anything but a plain register keeps its program.
    #[test]
    fn other_forms_are_not_compiled() {
        for cmd in [
            "p f %di +0(%si)",
            "p f $stack1",
            "p f $arg7",
            "p f %orig_ax",
            "p f $comm",
            "p f +8(%di):string",
            "p f %di:b4@2/32",
            "p f @0x1000",
            "p f +0(%di):u8[2]",
        ] {
            let tp = probe(cmd);
            assert_eq!(compile_reg_copies(&tp, 160, offset), None, "{cmd}");
        }
        // A register the caller does not save, or a block too short.
        let tp = probe("p f %ss");
        assert_eq!(compile_reg_copies(&tp, 152, offset), None);
        assert!(compile_reg_copies(&tp, 160, offset).is_some());
    }
}
