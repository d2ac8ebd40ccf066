//! The kernel's symbol table: maps an instruction address to `function+offset/size`.
//!
//! Linux builds its symbol table at link time (`scripts/kallsyms.c` produces the
//! compressed tables that `kernel/kallsyms.c` reads); ftrace uses it to print the
//! function names in `trace` and `available_filter_functions`. We do the same with a
//! simpler, uncompressed blob: the host program `kallsyms` (build-tools) reads the
//! linked kernel, writes this blob into a `.kallsyms` section, and the kernel links
//! it in a second time. Nothing in the kernel moves between the two links, so the
//! addresses stay right.
//!
//! Blob layout, all integers little-endian, no padding:
//!
//! ```text
//! offset  size        field
//! 0       8           magic  b"KALLSYMS"
//! 8       4           version (1)
//! 12      4           count: number of entries
//! 16      4           strings_len: size of the string table in bytes
//! 20      4           reserved, 0
//! 24      16 * count  entries, sorted by addr: { addr u64, size u32, name_off u32 }
//! ...     strings_len string table: NUL-terminated UTF-8 names
//! ```
//!
//! `name_off` is an offset into the string table. A symbol covers the addresses
//! `[addr, addr + size)`. The reader needs no allocation, so the kernel can use it
//! directly on the bytes of its `.kallsyms` section.

use alloc::vec::Vec;
use core::fmt;

/// The first eight bytes of every blob.
pub const MAGIC: [u8; 8] = *b"KALLSYMS";
/// The blob version this module reads and writes.
pub const VERSION: u32 = 1;
/// Size of the fixed header.
pub const HEADER_SIZE: usize = 24;
/// Size of one entry `{ addr u64, size u32, name_off u32 }`.
pub const ENTRY_SIZE: usize = 16;

/// Why a blob could not be parsed or built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// Shorter than the header, or than the header says.
    Truncated,
    /// The first eight bytes are not [`MAGIC`].
    BadMagic,
    /// A version this reader does not know.
    UnsupportedVersion(u32),
    /// Entry `index` is at a lower address than the one before it.
    NotSorted { index: usize },
    /// Entry `index` has a name offset outside the string table or without NUL.
    BadName { index: usize },
    /// Entry `index` has a name that is not UTF-8.
    NotUtf8 { index: usize },
    /// (encode) More entries, or more string bytes, than fit in a u32.
    TooLarge,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated => write!(f, "kallsyms blob is truncated"),
            Error::BadMagic => write!(f, "kallsyms blob has a bad magic number"),
            Error::UnsupportedVersion(v) => write!(f, "kallsyms blob version {v} is not supported"),
            Error::NotSorted { index } => write!(f, "kallsyms entry {index} is out of order"),
            Error::BadName { index } => write!(f, "kallsyms entry {index} has a bad name offset"),
            Error::NotUtf8 { index } => write!(f, "kallsyms entry {index} has a non-UTF-8 name"),
            Error::TooLarge => write!(f, "too many symbols for a kallsyms blob"),
        }
    }
}

/// One function, as returned by [`KallSyms::lookup`], [`KallSyms::find`] and
/// [`KallSyms::iter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// Demangled name without hash, one token (spaces replaced by `_`).
    pub name: &'a str,
    /// Start address.
    pub addr: u64,
    /// Size in bytes.
    pub size: u32,
    /// Distance of the looked-up address from `addr` (0 from `find` and `iter`).
    pub offset: u64,
}

/// Builds a blob from `(addr, size, name)` triples. The entries are sorted by
/// address (then name) so the caller need not sort. A name ends at its first NUL
/// byte (ELF symbol names cannot contain one anyway).
pub fn encode(syms: &[(u64, u32, &str)]) -> Result<Vec<u8>, Error> {
    let mut sorted: Vec<(u64, u32, &[u8])> = syms
        .iter()
        .map(|&(addr, size, name)| {
            let bytes = name.as_bytes();
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            (addr, size, &bytes[..end])
        })
        .collect();
    sorted.sort();

    let count = u32::try_from(sorted.len()).map_err(|_| Error::TooLarge)?;
    let strings_len: usize = sorted.iter().map(|s| s.2.len() + 1).sum();
    let strings_len32 = u32::try_from(strings_len).map_err(|_| Error::TooLarge)?;

    let mut out = Vec::with_capacity(HEADER_SIZE + ENTRY_SIZE * sorted.len() + strings_len);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&strings_len32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    let mut name_off = 0u32;
    for &(addr, size, name) in &sorted {
        out.extend_from_slice(&addr.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&name_off.to_le_bytes());
        // Cannot overflow: the total was checked to fit in a u32 above.
        name_off += name.len() as u32 + 1;
    }
    for &(_, _, name) in &sorted {
        out.extend_from_slice(name);
        out.push(0);
    }
    Ok(out)
}

/// A parsed, validated blob borrowing the bytes it was parsed from.
#[derive(Debug, Clone, Copy)]
pub struct KallSyms<'a> {
    entries: &'a [u8],
    strings: &'a [u8],
    count: usize,
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(v)
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

impl<'a> KallSyms<'a> {
    /// Checks the whole blob once (header, order, every name), so the lookups
    /// afterwards cannot fail. Trailing bytes after the string table (section
    /// padding) are allowed.
    pub fn parse(data: &'a [u8]) -> Result<KallSyms<'a>, Error> {
        if data.len() < HEADER_SIZE {
            return Err(Error::Truncated);
        }
        if data[..8] != MAGIC {
            return Err(Error::BadMagic);
        }
        let version = le_u32(data, 8);
        if version != VERSION {
            return Err(Error::UnsupportedVersion(version));
        }
        let count = le_u32(data, 12) as usize;
        let strings_len = le_u32(data, 16) as usize;
        let entries_len = count.checked_mul(ENTRY_SIZE).ok_or(Error::Truncated)?;
        let strings_start = HEADER_SIZE + entries_len;
        let strings_end = strings_start
            .checked_add(strings_len)
            .ok_or(Error::Truncated)?;
        if data.len() < strings_end {
            return Err(Error::Truncated);
        }
        let syms = KallSyms {
            entries: &data[HEADER_SIZE..strings_start],
            strings: &data[strings_start..strings_end],
            count,
        };
        let mut prev = 0u64;
        for index in 0..count {
            let (addr, _, name_off) = syms.raw(index);
            if addr < prev {
                return Err(Error::NotSorted { index });
            }
            prev = addr;
            let tail = syms
                .strings
                .get(name_off as usize..)
                .ok_or(Error::BadName { index })?;
            let len = tail
                .iter()
                .position(|&b| b == 0)
                .ok_or(Error::BadName { index })?;
            core::str::from_utf8(&tail[..len]).map_err(|_| Error::NotUtf8 { index })?;
        }
        Ok(syms)
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when the table holds no symbol.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// `(addr, size, name_off)` of entry `index` (< count, checked by callers).
    fn raw(&self, index: usize) -> (u64, u32, u32) {
        let at = index * ENTRY_SIZE;
        (
            le_u64(self.entries, at),
            le_u32(self.entries, at + 8),
            le_u32(self.entries, at + 12),
        )
    }

    fn name(&self, name_off: u32) -> &'a str {
        // `parse` checked that every name is in bounds, NUL-terminated and UTF-8,
        // so the fallbacks below are never taken.
        let tail = self.strings.get(name_off as usize..).unwrap_or(&[]);
        let len = tail.iter().position(|&b| b == 0).unwrap_or(0);
        core::str::from_utf8(&tail[..len]).unwrap_or("")
    }

    /// Entry `index` as a [`Symbol`] with the given offset.
    fn symbol(&self, index: usize, offset: u64) -> Symbol<'a> {
        let (addr, size, name_off) = self.raw(index);
        Symbol {
            name: self.name(name_off),
            addr,
            size,
            offset,
        }
    }

    /// The function containing `addr` (`start <= addr < start + size`), found by
    /// binary search. `offset` is `addr - start`.
    pub fn lookup(&self, addr: u64) -> Option<Symbol<'a>> {
        // Index of the first entry that starts after `addr`.
        let (mut lo, mut hi) = (0usize, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.raw(mid).0 <= addr {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            return None;
        }
        // Entries before `lo` start at or before `addr`. Functions do not overlap,
        // so only the entries sharing the nearest start (aliases, e.g. a sizeless
        // asm label on a sized function) can contain `addr`.
        let start = self.raw(lo - 1).0;
        let offset = addr - start;
        (0..lo)
            .rev()
            .take_while(|&i| self.raw(i).0 == start)
            .find(|&i| offset < u64::from(self.raw(i).1))
            .map(|i| self.symbol(i, offset))
    }

    /// The first symbol called exactly `name`.
    pub fn find(&self, name: &str) -> Option<Symbol<'a>> {
        self.iter().find(|s| s.name == name)
    }

    /// All symbols in address order.
    pub fn iter(&self) -> impl Iterator<Item = Symbol<'a>> + '_ {
        (0..self.count).map(move |i| self.symbol(i, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        encode(&[
            (0x3000, 0x10, "c"),
            (0x1000, 0x20, "<kernel::fs::X_as_core::fmt::Display>::fmt"),
            (0x2000, 0x100, "kernel::b"),
        ])
        .unwrap()
    }

    #[test]
    fn round_trip_sorted() {
        let blob = sample();
        let k = KallSyms::parse(&blob).unwrap();
        assert_eq!(k.len(), 3);
        let v: Vec<_> = k.iter().map(|s| (s.addr, s.size, s.name)).collect();
        assert_eq!(
            v,
            [
                (0x1000, 0x20, "<kernel::fs::X_as_core::fmt::Display>::fmt"),
                (0x2000, 0x100, "kernel::b"),
                (0x3000, 0x10, "c"),
            ]
        );
    }

    #[test]
    fn lookup_inside_and_outside() {
        let blob = sample();
        let k = KallSyms::parse(&blob).unwrap();
        let s = k.lookup(0x2042).unwrap();
        assert_eq!((s.name, s.offset, s.size), ("kernel::b", 0x42, 0x100));
        assert_eq!(k.lookup(0x1000).unwrap().offset, 0);
        assert_eq!(k.lookup(0x101f).unwrap().offset, 0x1f);
        assert_eq!(k.lookup(0x1020), None, "end is exclusive");
        assert_eq!(k.lookup(0xfff), None, "before the first symbol");
        assert_eq!(k.lookup(0x2100), None, "gap between symbols");
        assert_eq!(k.lookup(0x300f).unwrap().name, "c");
        assert_eq!(k.lookup(0x3010), None, "after the last symbol");
        assert_eq!(k.lookup(u64::MAX), None);
    }

    #[test]
    fn lookup_with_aliases() {
        // Two names for the same start, one of them with size 0.
        let blob = encode(&[(0x10, 0, "alias0"), (0x10, 8, "real"), (0x18, 8, "next")]).unwrap();
        let k = KallSyms::parse(&blob).unwrap();
        assert_eq!(k.lookup(0x14).unwrap().name, "real");
        assert_eq!(k.lookup(0x18).unwrap().name, "next");
    }

    #[test]
    fn find_by_name() {
        let blob = sample();
        let k = KallSyms::parse(&blob).unwrap();
        assert_eq!(k.find("c").unwrap().addr, 0x3000);
        assert!(k.find("nope").is_none());
    }

    #[test]
    fn empty_table() {
        let blob = encode(&[]).unwrap();
        assert_eq!(blob.len(), HEADER_SIZE);
        let k = KallSyms::parse(&blob).unwrap();
        assert!(k.is_empty());
        assert_eq!(k.lookup(0), None);
    }

    #[test]
    fn trailing_padding_is_allowed() {
        let mut blob = sample();
        blob.extend_from_slice(&[0; 5]);
        assert_eq!(KallSyms::parse(&blob).unwrap().len(), 3);
    }

    #[test]
    fn bad_blobs_are_errors() {
        let blob = sample();
        for cut in 0..blob.len() {
            assert!(KallSyms::parse(&blob[..cut]).is_err(), "cut at {cut}");
        }
        let mut b = blob.clone();
        b[0] = b'X';
        assert_eq!(KallSyms::parse(&b).unwrap_err(), Error::BadMagic);
        let mut b = blob.clone();
        b[8] = 2;
        assert_eq!(
            KallSyms::parse(&b).unwrap_err(),
            Error::UnsupportedVersion(2)
        );
        // Swap the first two addresses: out of order.
        let mut b = blob.clone();
        b[HEADER_SIZE..HEADER_SIZE + 8].copy_from_slice(&0x9000u64.to_le_bytes());
        assert_eq!(
            KallSyms::parse(&b).unwrap_err(),
            Error::NotSorted { index: 1 }
        );
        // Name offset past the string table.
        let mut b = blob.clone();
        b[HEADER_SIZE + 12..HEADER_SIZE + 16].copy_from_slice(&9999u32.to_le_bytes());
        assert_eq!(
            KallSyms::parse(&b).unwrap_err(),
            Error::BadName { index: 0 }
        );
        // Invalid UTF-8 in a name.
        let mut b = blob.clone();
        let strings = HEADER_SIZE + 3 * ENTRY_SIZE;
        b[strings] = 0xff;
        assert_eq!(
            KallSyms::parse(&b).unwrap_err(),
            Error::NotUtf8 { index: 0 }
        );
        // A huge count must not overflow or panic.
        let mut b = blob.clone();
        b[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(KallSyms::parse(&b).unwrap_err(), Error::Truncated);
        // Last string without its NUL.
        let mut b = blob;
        let len = b.len();
        b[len - 1] = b'x';
        assert!(matches!(
            KallSyms::parse(&b).unwrap_err(),
            Error::BadName { .. }
        ));
    }

    #[test]
    fn names_stop_at_nul() {
        let blob = encode(&[(1, 1, "ab\0cd")]).unwrap();
        assert_eq!(KallSyms::parse(&blob).unwrap().find("ab").unwrap().addr, 1);
    }
}
