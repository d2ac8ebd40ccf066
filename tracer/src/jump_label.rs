//! The generic logic of static keys' jump table (Linux: kernel/jump_label.c,
//! include/linux/jump_label.h), shared by the kernel and the build-time
//! sorter (build-tools' sorttable).
//!
//! Every `static_branch_unlikely!(KEY)` site adds one 16-byte entry to the
//! `__jump_table` section, laid out as Linux's `struct jump_entry` on x86_64:
//!
//! ```text
//! struct jump_entry { s32 code; s32 target; s64 key; }
//! ```
//!
//! Each field is an offset from the field's own address (self-relative), so
//! the table needs no relocation at run time: `code` is the site (the 5-byte
//! NOP), `target` where the site jumps while the branch is taken, `key` the
//! `struct static_key`. Keys are 4-byte aligned, which leaves the two low
//! bits of `key` for flags: bit 0 is the branch's default direction
//! (`static_branch_likely` sets it; every site here is `unlikely`, 0), bit 1
//! marks init text in Linux (unused here).
//!
//! The table is sorted by (key, code), so each key's sites form one
//! contiguous run, which the key points at; and within a run the sites come
//! in address order, as the int3 batch patcher wants them.

use alloc::vec::Vec;

/// Size of one `struct jump_entry`.
pub const JUMP_ENTRY_SIZE: usize = 16;
/// The low bits of the key field that are flags, not address.
pub const JUMP_TYPE_MASK: u64 = 3;
/// Bit 0 of the key field: the branch's default (Linux: JUMP_TYPE_TRUE).
pub const JUMP_TYPE_BRANCH: u64 = 1;

/// One entry with its offsets resolved to absolute addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct JumpEntry {
    /// The key's address (flag bits cleared). First, so the derived order is
    /// the table's order: key, then code.
    pub key: u64,
    /// The site's address.
    pub code: u64,
    /// Where the site jumps when the branch is taken.
    pub target: u64,
    /// Bit 0 of the key field (Linux: jump_entry_is_branch).
    pub branch: bool,
}

impl JumpEntry {
    /// Resolves the raw entry stored at address `addr` (Linux:
    /// jump_entry_code, jump_entry_target, jump_entry_key).
    pub fn decode(addr: u64, raw: &[u8; JUMP_ENTRY_SIZE]) -> JumpEntry {
        let code = i32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
        let target = i32::from_le_bytes([raw[4], raw[5], raw[6], raw[7]]);
        let mut k = [0u8; 8];
        k.copy_from_slice(&raw[8..16]);
        let key = addr
            .wrapping_add(8)
            .wrapping_add_signed(i64::from_le_bytes(k));
        JumpEntry {
            key: key & !JUMP_TYPE_MASK,
            code: addr.wrapping_add_signed(code as i64),
            target: addr.wrapping_add(4).wrapping_add_signed(target as i64),
            branch: key & JUMP_TYPE_BRANCH != 0,
        }
    }

    /// The raw entry that describes `self` when stored at `addr`; None if the
    /// site or target is more than ±2 GiB away from the entry (the 32-bit
    /// offsets cannot reach it).
    pub fn encode(&self, addr: u64) -> Option<[u8; JUMP_ENTRY_SIZE]> {
        let rel32 = |to: u64, from: u64| i32::try_from(to.wrapping_sub(from) as i64).ok();
        let code = rel32(self.code, addr)?;
        let target = rel32(self.target, addr.wrapping_add(4))?;
        let key = (self.key | self.branch as u64).wrapping_sub(addr.wrapping_add(8)) as i64;
        let mut raw = [0u8; JUMP_ENTRY_SIZE];
        raw[0..4].copy_from_slice(&code.to_le_bytes());
        raw[4..8].copy_from_slice(&target.to_le_bytes());
        raw[8..16].copy_from_slice(&key.to_le_bytes());
        Some(raw)
    }
}

/// What a site must hold (Linux: enum jump_label_type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JumpLabelType {
    /// The 5-byte NOP: fall through to the code after the site.
    Nop,
    /// `jmp target`.
    Jmp,
}

/// What a site of `entry` must hold while its key is `enabled` (Linux:
/// jump_label_type: the key's state xor the branch's default).
pub fn jump_label_type(enabled: bool, entry: &JumpEntry) -> JumpLabelType {
    if enabled ^ entry.branch {
        JumpLabelType::Jmp
    } else {
        JumpLabelType::Nop
    }
}

/// The index of the first entry that is before its predecessor in (key,
/// code) order, or equal to it (two entries for one site).
pub fn first_unsorted(entries: &[JumpEntry]) -> Option<usize> {
    entries
        .windows(2)
        .position(|w| (w[1].key, w[1].code) <= (w[0].key, w[0].code))
        .map(|i| i + 1)
}

/// One key's sites: `entries[start..start + len]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyRun {
    pub key: u64,
    pub start: usize,
    pub len: usize,
}

/// What is wrong with a table (Linux: jump_label_init's checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JumpTableError {
    /// Entry `index` is not after the one before it in (key, code) order.
    Unsorted { index: usize },
    /// The site at `code` has entries under two keys: both would patch
    /// the same bytes.
    SiteInTwoKeys { code: u64 },
}

/// The runs of a sorted table, one per key, in table order (Linux: the
/// loop of jump_label_init that points each key at its first entry).
/// Refuses a table that is not strictly sorted by (key, code), and one
/// site that two keys claim (its entries would patch the same bytes).
pub fn key_runs(entries: &[JumpEntry]) -> Result<Vec<KeyRun>, JumpTableError> {
    if let Some(index) = first_unsorted(entries) {
        return Err(JumpTableError::Unsorted { index });
    }
    let mut codes: Vec<u64> = entries.iter().map(|e| e.code).collect();
    codes.sort_unstable();
    if let Some(w) = codes.windows(2).find(|w| w[0] == w[1]) {
        return Err(JumpTableError::SiteInTwoKeys { code: w[0] });
    }
    let mut runs: Vec<KeyRun> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if r.key == e.key => r.len += 1,
            _ => runs.push(KeyRun {
                key: e.key,
                start: i,
                len: 1,
            }),
        }
    }
    Ok(runs)
}

/// Sorts raw entries stored from address `base` on, moving each entry to its
/// sorted slot and rewriting its offsets for the new address (what build
/// time sorting must do with self-relative entries). Returns the index of
/// the first entry that was out of order, None if the table was already
/// sorted (then nothing is written). Errors (nothing written) if the bytes
/// are not whole entries or an entry cannot be re-encoded at its new slot.
pub fn sort_raw(base: u64, table: &mut [u8]) -> Result<Option<usize>, SortError> {
    if !table.len().is_multiple_of(JUMP_ENTRY_SIZE) {
        return Err(SortError::PartialEntry { len: table.len() });
    }
    let entries = decode_raw(base, table);
    let first = entries
        .windows(2)
        .position(|w| (w[1].key, w[1].code) < (w[0].key, w[0].code))
        .map(|i| i + 1);
    if first.is_none() {
        return Ok(None);
    }
    let mut sorted = entries;
    sorted.sort_unstable();
    let mut out = Vec::with_capacity(table.len());
    for (i, e) in sorted.iter().enumerate() {
        let addr = base + (i * JUMP_ENTRY_SIZE) as u64;
        let raw = e
            .encode(addr)
            .ok_or(SortError::OutOfRange { code: e.code })?;
        out.extend_from_slice(&raw);
    }
    table.copy_from_slice(&out);
    Ok(first)
}

/// Why [`sort_raw`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortError {
    /// The table is `len` bytes, not a multiple of 16.
    PartialEntry { len: usize },
    /// The entry of the site at `code` cannot be encoded at its new slot.
    OutOfRange { code: u64 },
}

/// Decodes the whole raw table stored from address `base` on (trailing
/// bytes that are not a whole entry are ignored).
pub fn decode_raw(base: u64, table: &[u8]) -> Vec<JumpEntry> {
    table
        .chunks_exact(JUMP_ENTRY_SIZE)
        .enumerate()
        .map(|(i, c)| {
            let raw: &[u8; JUMP_ENTRY_SIZE] = c.try_into().expect("chunks of 16");
            JumpEntry::decode(base + (i * JUMP_ENTRY_SIZE) as u64, raw)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u64 = 0xffff_ffff_8020_0000;

    fn entry(key: u64, code: u64) -> JumpEntry {
        JumpEntry {
            key,
            code,
            target: code + 0x40,
            branch: false,
        }
    }

    fn raw_table(entries: &[JumpEntry]) -> Vec<u8> {
        let mut t = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            t.extend_from_slice(&e.encode(BASE + 16 * i as u64).unwrap());
        }
        t
    }

    #[test]
    fn decode_is_self_relative_like_linux() {
        // Written as the assembler writes `.long 2b - .; .long L - .;
        // .quad key + 1 - .` at BASE.
        let code = 0xffff_ffff_8000_1000u64;
        let target = 0xffff_ffff_8000_1100u64;
        let key = 0xffff_ffff_8040_0008u64;
        let mut raw = [0u8; 16];
        raw[0..4].copy_from_slice(&((code.wrapping_sub(BASE)) as i32).to_le_bytes());
        raw[4..8].copy_from_slice(&((target.wrapping_sub(BASE + 4)) as i32).to_le_bytes());
        raw[8..16].copy_from_slice(&((key + 1).wrapping_sub(BASE + 8) as i64).to_le_bytes());
        let e = JumpEntry::decode(BASE, &raw);
        assert_eq!(
            e,
            JumpEntry {
                key,
                code,
                target,
                branch: true
            }
        );
        assert_eq!(e.encode(BASE), Some(raw));
        // The same entry moved 32 bytes further has different offsets but
        // decodes to the same addresses.
        let moved = e.encode(BASE + 32).unwrap();
        assert_ne!(moved, raw);
        assert_eq!(JumpEntry::decode(BASE + 32, &moved), e);
    }

    #[test]
    fn encode_refuses_what_32_bits_cannot_reach() {
        let e = entry(BASE + 0x100, BASE - (1 << 31) - 16);
        assert_eq!(e.encode(BASE), None);
        let e = entry(BASE + 0x100, BASE - (1 << 31));
        assert!(e.encode(BASE).is_some());
    }

    #[test]
    fn wanted_type_is_key_xor_branch() {
        let mut e = entry(8, 0x100);
        assert_eq!(jump_label_type(false, &e), JumpLabelType::Nop);
        assert_eq!(jump_label_type(true, &e), JumpLabelType::Jmp);
        e.branch = true;
        assert_eq!(jump_label_type(false, &e), JumpLabelType::Jmp);
        assert_eq!(jump_label_type(true, &e), JumpLabelType::Nop);
    }

    #[test]
    fn runs_group_each_key() {
        let t = [
            entry(0x10, 0x300),
            entry(0x10, 0x500),
            entry(0x20, 0x100),
            entry(0x30, 0x200),
            entry(0x30, 0x400),
            entry(0x30, 0x600),
        ];
        assert_eq!(first_unsorted(&t), None);
        assert_eq!(
            key_runs(&t).unwrap(),
            vec![
                KeyRun {
                    key: 0x10,
                    start: 0,
                    len: 2
                },
                KeyRun {
                    key: 0x20,
                    start: 2,
                    len: 1
                },
                KeyRun {
                    key: 0x30,
                    start: 3,
                    len: 3
                },
            ]
        );
        assert_eq!(key_runs(&[]).unwrap(), vec![]);
    }

    #[test]
    fn runs_refuse_unsorted_duplicated_and_shared_sites() {
        let t = [entry(0x10, 0x300), entry(0x20, 0x100), entry(0x10, 0x500)];
        assert_eq!(key_runs(&t), Err(JumpTableError::Unsorted { index: 2 }));
        let t = [entry(0x10, 0x500), entry(0x10, 0x300)];
        assert_eq!(key_runs(&t), Err(JumpTableError::Unsorted { index: 1 }));
        let t = [entry(0x10, 0x300), entry(0x10, 0x300)];
        assert_eq!(key_runs(&t), Err(JumpTableError::Unsorted { index: 1 }));
        let t = [entry(0x10, 0x300), entry(0x20, 0x300)];
        assert_eq!(
            key_runs(&t),
            Err(JumpTableError::SiteInTwoKeys { code: 0x300 })
        );
    }

    #[test]
    fn sort_raw_moves_entries_and_fixes_offsets() {
        let want = vec![
            entry(BASE + 0x1000, BASE - 0x300),
            entry(BASE + 0x1000, BASE - 0x100),
            entry(BASE + 0x2000, BASE - 0x500),
            JumpEntry {
                branch: true,
                ..entry(BASE + 0x3000, BASE - 0x200)
            },
        ];
        let shuffled = [want[2], want[3], want[1], want[0]];
        let mut t = raw_table(&shuffled);
        let before = t.clone();
        assert_eq!(sort_raw(BASE, &mut t), Ok(Some(2)));
        assert_ne!(t, before);
        assert_eq!(decode_raw(BASE, &t), want);
        assert_eq!(t, raw_table(&want));
        // Sorting a sorted table writes nothing.
        let again = t.clone();
        assert_eq!(sort_raw(BASE, &mut t), Ok(None));
        assert_eq!(t, again);
        // Copying the raw bytes instead of re-encoding would have given
        // different addresses: the offsets must move with the entry.
        let naive: Vec<u8> = [2usize, 3, 1, 0]
            .iter()
            .flat_map(|&i| before[16 * i..16 * i + 16].to_vec())
            .collect();
        assert_ne!(decode_raw(BASE, &naive), want);
    }

    #[test]
    fn sort_raw_refuses_bad_tables_without_writing() {
        let mut t = vec![0u8; 24];
        assert_eq!(
            sort_raw(BASE, &mut t),
            Err(SortError::PartialEntry { len: 24 })
        );
        // `a`'s site is reachable from slot 1 but not from slot 0, where
        // sorting (its key is below `b`'s) would move it.
        let base = 0x1000_0000u64;
        let b = entry(base + 0x100, base + 0x40);
        let a = JumpEntry {
            target: base,
            ..entry(base + 0x50, base + 16 + (1 << 31) - 1)
        };
        assert!(a.encode(base).is_none());
        let mut t = Vec::new();
        t.extend_from_slice(&b.encode(base).unwrap());
        t.extend_from_slice(&a.encode(base + 16).unwrap());
        let before = t.clone();
        assert_eq!(
            sort_raw(base, &mut t),
            Err(SortError::OutOfRange { code: a.code })
        );
        assert_eq!(t, before);
    }
}
