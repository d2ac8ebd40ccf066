//! Editing a relocatable ELF64 object in place, the way `scripts/recordmcount.c`
//! does it.
//!
//! Nothing already in the file moves, so every section, symbol and relocation the
//! compiler wrote (COMDAT groups, `.llvm_addrsig`, debug info...) stays valid
//! without our having to understand it. We only
//! 1. overwrite a few bytes in place (a call turned into a NOP, a relocation type
//!    turned into `R_X86_64_NONE`, a section flag), and
//! 2. append at the end of the file: the `__mcount_loc` contents, its
//!    `.rela__mcount_loc` relocations, a copy of the section-name string table
//!    with the two new names, and a copy of the section header table with two
//!    more headers. The ELF header is then pointed at the new header table. The
//!    old string table and header table stay behind, unreferenced.

use crate::{Error, Result};
use object::elf;

/// Size of an `Elf64_Shdr`.
pub const SHDR_SIZE: usize = 64;
/// Size of an `Elf64_Rela`.
pub const RELA_SIZE: usize = 24;

/// Where the section header table and its string table are in the input.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// `e_shoff`.
    pub shoff: usize,
    /// Number of section headers (taken from section 0 when `e_shnum` is 0).
    pub shnum: usize,
    /// Index of the section-name string table.
    pub shstrndx: usize,
    /// Index of `.symtab`, the `sh_link` of the new relocation section.
    pub symtab: u32,
}

/// One `__mcount_loc` slot: an `R_X86_64_64` relocation against `symbol + addend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    pub symbol: u32,
    pub addend: i64,
}

/// A byte overwrite at a file offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    pub offset: usize,
    pub bytes: Vec<u8>,
}

fn put_u16(out: &mut [u8], at: usize, v: u16) {
    out[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(out: &mut [u8], at: usize, v: u32) {
    out[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(out: &mut [u8], at: usize, v: u64) {
    out[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn get_u64(data: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&data[at..at + 8]);
    u64::from_le_bytes(b)
}

fn align_to(out: &mut Vec<u8>, align: usize) {
    while !out.len().is_multiple_of(align) {
        out.push(0);
    }
}

/// Offsets of the fields we touch in `Elf64_Ehdr` and `Elf64_Shdr`.
const E_SHOFF: usize = 0x28;
const E_SHNUM: usize = 0x3c;
const SH_FLAGS: usize = 8;
const SH_OFFSET: usize = 24;
const SH_SIZE: usize = 32;

/// Byte offset of the `sh_flags` field of section `index`, for a [`Patch`].
pub fn sh_flags_offset(layout: &Layout, index: usize) -> usize {
    layout.shoff + index * SHDR_SIZE + SH_FLAGS
}

/// Applies `patches` to a copy of `data` and, when `records` is not empty,
/// appends the `__mcount_loc` and `.rela__mcount_loc` sections.
pub fn rewrite(
    data: &[u8],
    layout: &Layout,
    patches: &[Patch],
    records: &[Record],
) -> Result<Vec<u8>> {
    let mut out = data.to_vec();
    for p in patches {
        let end = p.offset.saturating_add(p.bytes.len());
        let dst = out.get_mut(p.offset..end).ok_or_else(|| {
            Error::new(format!(
                "patch at file offset {:#x} is out of bounds",
                p.offset
            ))
        })?;
        dst.copy_from_slice(&p.bytes);
    }
    if records.is_empty() {
        return Ok(out);
    }

    let headers_end = layout
        .shnum
        .checked_mul(SHDR_SIZE)
        .and_then(|n| n.checked_add(layout.shoff))
        .filter(|&end| end <= data.len())
        .ok_or_else(|| Error::new("section header table is out of bounds"))?;
    let old_headers = out[layout.shoff..headers_end].to_vec();
    if layout.shstrndx == 0 || layout.shstrndx >= layout.shnum {
        return Err(Error::new("bad section name string table index"));
    }
    let shstr_hdr = layout.shstrndx * SHDR_SIZE;
    let shstr_off = usize::try_from(get_u64(&old_headers, shstr_hdr + SH_OFFSET)).ok();
    let shstr_size = usize::try_from(get_u64(&old_headers, shstr_hdr + SH_SIZE)).ok();
    let old_shstrtab = match (shstr_off, shstr_size) {
        (Some(o), Some(s)) => o.checked_add(s).and_then(|end| data.get(o..end)),
        _ => None,
    }
    .ok_or_else(|| Error::new("section name string table is out of bounds"))?;

    // __mcount_loc: one zeroed 8-byte slot per site; the linker fills them in.
    align_to(&mut out, 8);
    let loc_offset = out.len();
    out.resize(loc_offset + 8 * records.len(), 0);

    // .rela__mcount_loc: slot k gets the address of symbol + addend.
    align_to(&mut out, 8);
    let rela_offset = out.len();
    for (k, r) in records.iter().enumerate() {
        let r_info = (u64::from(r.symbol) << 32) | u64::from(elf::R_X86_64_64);
        out.extend_from_slice(&(8 * k as u64).to_le_bytes());
        out.extend_from_slice(&r_info.to_le_bytes());
        out.extend_from_slice(&r.addend.to_le_bytes());
    }

    // New section-name string table: the old names plus ours.
    let strtab_offset = out.len();
    out.extend_from_slice(old_shstrtab);
    let loc_name = out.len() - strtab_offset;
    out.extend_from_slice(b"__mcount_loc\0");
    let rela_name = out.len() - strtab_offset;
    out.extend_from_slice(b".rela__mcount_loc\0");
    let strtab_size = out.len() - strtab_offset;

    // New section header table: the old headers plus two.
    align_to(&mut out, 8);
    let shoff = out.len();
    out.extend_from_slice(&old_headers);
    let shstr_at = shoff + shstr_hdr;
    put_u64(&mut out, shstr_at + SH_OFFSET, strtab_offset as u64);
    put_u64(&mut out, shstr_at + SH_SIZE, strtab_size as u64);

    let loc_index = layout.shnum;
    let header = |name: usize, sh_type: u32, flags: u64, offset: usize, size: usize| {
        let mut h = [0u8; SHDR_SIZE];
        put_u32(&mut h, 0, name as u32);
        put_u32(&mut h, 4, sh_type);
        put_u64(&mut h, SH_FLAGS, flags);
        put_u64(&mut h, SH_OFFSET, offset as u64);
        put_u64(&mut h, SH_SIZE, size as u64);
        h
    };
    // __mcount_loc: PROGBITS, ALLOC, align 8, entsize 8 (like Linux).
    let mut loc = header(
        loc_name,
        elf::SHT_PROGBITS,
        u64::from(elf::SHF_ALLOC),
        loc_offset,
        8 * records.len(),
    );
    put_u64(&mut loc, 48, 8); // sh_addralign
    put_u64(&mut loc, 56, 8); // sh_entsize
    out.extend_from_slice(&loc);
    // .rela__mcount_loc: RELA, sh_link = .symtab, sh_info = __mcount_loc.
    let mut rela = header(
        rela_name,
        elf::SHT_RELA,
        u64::from(elf::SHF_INFO_LINK),
        rela_offset,
        RELA_SIZE * records.len(),
    );
    put_u32(&mut rela, 40, layout.symtab);
    put_u32(&mut rela, 44, loc_index as u32);
    put_u64(&mut rela, 48, 8);
    put_u64(&mut rela, 56, RELA_SIZE as u64);
    out.extend_from_slice(&rela);

    // Point the ELF header at the new table. From SHN_LORESERVE sections on, the
    // count lives in section 0's sh_size and e_shnum is 0 (extended numbering).
    let shnum = layout.shnum + 2;
    put_u64(&mut out, E_SHOFF, shoff as u64);
    let e_shnum = u16::from_le_bytes([data[E_SHNUM], data[E_SHNUM + 1]]);
    if shnum < usize::from(elf::SHN_LORESERVE) && e_shnum != 0 {
        put_u16(&mut out, E_SHNUM, shnum as u16);
    } else {
        put_u16(&mut out, E_SHNUM, 0);
        put_u64(&mut out, shoff + SH_SIZE, shnum as u64);
    }
    Ok(out)
}
