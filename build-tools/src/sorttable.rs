//! sorttable: sorts the `__mcount_loc` and `__jump_table` tables of the
//! linked kernel in place.
//!
//! Mirrors the `__mcount_loc` part of Linux's `scripts/sorttable.c`
//! (`CONFIG_BUILDTIME_MCOUNT_SORT`). recordmcount writes one table per object,
//! and the linker concatenates them in link order, which is not address order
//! (for example `.text.irqentry` is placed first in `.text`). `ftrace_init`
//! needs the call sites sorted, because the records are binary-searched; sorting
//! them here, once, lets the boot skip the sort after a single O(n) check.
//!
//! The table is found the way the kernel finds it: between the symbols
//! `__start_mcount_loc` and `__stop_mcount_loc`. Its entries are 8-byte
//! little-endian addresses, already resolved by the final link, so sorting the
//! bytes moves no code and no symbol. A file that still carries relocations
//! against the table's section (`ld --emit-relocs`) is refused: sorting would
//! leave them pointing at the wrong entries.
//!
//! `__jump_table` (static keys' sites, between `__start___jump_table` and
//! `__stop___jump_table`) is sorted by (key, site) so that each key's sites
//! are one run (Linux sorts it at boot, in jump_label_sort_entries; here the
//! kernel only checks the order). Its 16-byte entries are self-relative
//! (`tracer::jump_label`): an entry that moves gets its offsets recomputed
//! for its new address, so it still names the same site, target and key.

use crate::{Error, Result};
use object::elf;
use object::read::elf::{SectionHeader, Sym};
use tracer::jump_label::{self, JumpEntry, SortError, JUMP_ENTRY_SIZE};

/// What [`sort_mcount_loc`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Address of `__start_mcount_loc`.
    pub start: u64,
    /// Number of 8-byte entries in the table.
    pub entries: usize,
    /// Where the table is in the file.
    pub file_offset: u64,
    /// True if the table was already in ascending order (nothing written).
    pub was_sorted: bool,
    /// Index of the first entry smaller than its predecessor, if any.
    pub first_descent: Option<usize>,
}

/// One table sorttable knows: its bounding symbols and entry size.
struct Table {
    name: &'static str,
    start: &'static [u8],
    stop: &'static [u8],
    entry: u64,
}

const MCOUNT_LOC: Table = Table {
    name: "__mcount_loc",
    start: b"__start_mcount_loc",
    stop: b"__stop_mcount_loc",
    entry: 8,
};

const JUMP_TABLE: Table = Table {
    name: "__jump_table",
    start: b"__start___jump_table",
    stop: b"__stop___jump_table",
    entry: JUMP_ENTRY_SIZE as u64,
};

/// Where the `__mcount_loc` table lies in the file: (address, file offset,
/// length in bytes).
fn locate(data: &[u8]) -> Result<(u64, usize, usize)> {
    locate_table(data, &MCOUNT_LOC)?.ok_or_else(|| Error::new("no __start_mcount_loc symbol"))
}

/// Where table `t` lies in the file: (address, file offset, length in
/// bytes); None if the file has neither of its symbols.
fn locate_table(data: &[u8], t: &Table) -> Result<Option<(u64, usize, usize)>> {
    let name = t.name;
    let (start_sym, stop_sym) = (
        String::from_utf8_lossy(t.start),
        String::from_utf8_lossy(t.stop),
    );
    let crate::linked::LinkedElf {
        endian,
        sections,
        symbols,
    } = crate::linked::parse(data)?;
    let (mut start, mut stop) = (None, None);
    for sym in symbols.iter() {
        let n = symbols.symbol_name(endian, sym)?;
        let slot = if n == t.start {
            &mut start
        } else if n == t.stop {
            &mut stop
        } else {
            continue;
        };
        if sym.st_shndx(endian) == elf::SHN_UNDEF {
            continue;
        }
        if slot.replace(sym.st_value(endian)).is_some() {
            return Err(Error::new(format!(
                "more than one {start_sym}/{stop_sym} symbol"
            )));
        }
    }
    if start.is_none() && stop.is_none() {
        return Ok(None);
    }
    let start = start.ok_or_else(|| Error::new(format!("no {start_sym} symbol")))?;
    let stop = stop.ok_or_else(|| Error::new(format!("no {stop_sym} symbol")))?;
    if stop < start {
        return Err(Error::new(format!(
            "{stop_sym} ({stop:#x}) is below {start_sym} ({start:#x})"
        )));
    }
    let len = stop - start;
    if len % t.entry != 0 {
        return Err(Error::new(format!(
            "{name} is {len} bytes, not a whole number of {}-byte entries",
            t.entry
        )));
    }
    if len == 0 {
        return Ok(Some((start, 0, 0)));
    }

    // The allocated section with file contents that holds [start, stop).
    let mut found = None;
    for (index, sh) in sections.iter().enumerate() {
        let addr = sh.sh_addr(endian);
        let size = sh.sh_size(endian);
        let alloc = sh.sh_flags(endian) & u64::from(elf::SHF_ALLOC) != 0;
        if !alloc || addr > start || stop > addr.saturating_add(size) {
            continue;
        }
        if sh.sh_type(endian) == elf::SHT_NOBITS {
            return Err(Error::new(format!(
                "{name} lies in a section without file contents"
            )));
        }
        found = Some((index, start - addr + sh.sh_offset(endian)));
        break;
    }
    let (index, offset) = found
        .ok_or_else(|| Error::new(format!("no section holds {name} ({start:#x}..{stop:#x})")))?;
    for sh in sections.iter() {
        let t = sh.sh_type(endian);
        if (t == elf::SHT_RELA || t == elf::SHT_REL) && sh.sh_info(endian) as usize == index {
            return Err(Error::new(format!(
                "the section holding {name} has relocations (linked with --emit-relocs?): \
                 sorting would desynchronise them"
            )));
        }
    }
    let offset =
        usize::try_from(offset).map_err(|_| Error::new(format!("{name} offset too large")))?;
    let len = usize::try_from(len).map_err(|_| Error::new(format!("{name} too large")))?;
    match offset.checked_add(len) {
        Some(end) if end <= data.len() => Ok(Some((start, offset, len))),
        _ => Err(Error::new(format!(
            "{name} lies beyond the end of the file"
        ))),
    }
}

/// The index of the first entry smaller than the one before it.
pub fn first_descent(entries: &[u64]) -> Option<usize> {
    entries.windows(2).position(|w| w[1] < w[0]).map(|i| i + 1)
}

/// Sorts the `__mcount_loc` entries of the linked kernel `data` ascending, in
/// place. Everything else in the file is left byte for byte as it was.
pub fn sort_mcount_loc(data: &mut [u8]) -> Result<Summary> {
    let (start, offset, len) = locate(data)?;
    let table = &mut data[offset..offset + len];
    let mut entries: Vec<u64> = table
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8")))
        .collect();
    let descent = first_descent(&entries);
    if descent.is_some() {
        entries.sort_unstable();
        for (chunk, e) in table.chunks_exact_mut(8).zip(&entries) {
            chunk.copy_from_slice(&e.to_le_bytes());
        }
    }
    Ok(Summary {
        start,
        entries: entries.len(),
        file_offset: offset as u64,
        was_sorted: descent.is_none(),
        first_descent: descent,
    })
}

/// The `__mcount_loc` entries of a linked kernel, in file order.
pub fn mcount_loc(data: &[u8]) -> Result<Vec<u64>> {
    let (_, offset, len) = locate(data)?;
    Ok(data[offset..offset + len]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8")))
        .collect())
}

/// Sorts the `__jump_table` entries of the linked kernel `data` by (key,
/// site), in place, re-encoding each moved entry's offsets for its new
/// slot. None if the kernel has no `__jump_table` symbols. On an error
/// nothing is written.
pub fn sort_jump_table(data: &mut [u8]) -> Result<Option<Summary>> {
    let Some((start, offset, len)) = locate_table(data, &JUMP_TABLE)? else {
        return Ok(None);
    };
    let table = &mut data[offset..offset + len];
    let descent = jump_label::sort_raw(start, table).map_err(|e| match e {
        SortError::PartialEntry { len } => Error::new(format!(
            "__jump_table is {len} bytes, not a whole number of 16-byte entries"
        )),
        SortError::OutOfRange { code } => Error::new(format!(
            "__jump_table: the entry of site {code:#x} cannot be encoded at its sorted slot"
        )),
    })?;
    Ok(Some(Summary {
        start,
        entries: len / JUMP_ENTRY_SIZE,
        file_offset: offset as u64,
        was_sorted: descent.is_none(),
        first_descent: descent,
    }))
}

/// The `__jump_table` entries of a linked kernel, decoded, in file order;
/// None if it has no `__jump_table` symbols.
pub fn jump_table(data: &[u8]) -> Result<Option<Vec<JumpEntry>>> {
    let Some((start, offset, len)) = locate_table(data, &JUMP_TABLE)? else {
        return Ok(None);
    };
    Ok(Some(jump_label::decode_raw(
        start,
        &data[offset..offset + len],
    )))
}
