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
    /// The entries, `count` of them.
    entries: &'a [[u8; ENTRY_SIZE]],
    strings: &'a [u8],
    count: usize,
    /// The names are stored back to back in entry order (what [`encode`]
    /// writes): a name then ends one byte before the next entry's, and
    /// reading it needs no search for its NUL.
    packed: bool,
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(v)
}

/// The start address of an entry.
#[inline]
fn entry_addr(e: &[u8; ENTRY_SIZE]) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&e[..8]);
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
            entries: data[HEADER_SIZE..strings_start].as_chunks::<ENTRY_SIZE>().0,
            strings: &data[strings_start..strings_end],
            count,
            packed: false,
        };
        let mut prev = 0u64;
        let mut next_name = 0usize;
        let mut packed = true;
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
            packed &= name_off as usize == next_name;
            next_name = name_off as usize + len + 1;
        }
        Ok(KallSyms {
            packed: packed && next_name == syms.strings.len(),
            ..syms
        })
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
    #[inline]
    fn raw(&self, index: usize) -> (u64, u32, u32) {
        let e = &self.entries[index];
        (entry_addr(e), le_u32(e, 8), le_u32(e, 12))
    }

    /// The name of entry `index` (< count): up to its NUL, which is one
    /// byte before the next entry's name in a packed table, and otherwise
    /// found with `memchr` (one word at a time). Not checked for UTF-8
    /// again: the printer looks up two names per line.
    #[inline]
    fn name(&self, index: usize) -> &'a str {
        let off = self.raw(index).2 as usize;
        // `parse` checked that every entry's name is in bounds and
        // NUL-terminated, so the fallbacks are never taken.
        let bytes = if self.packed {
            let next = self
                .entries
                .get(index + 1)
                .map_or(self.strings.len(), |e| le_u32(e, 12) as usize);
            self.strings.get(off..next.saturating_sub(1)).unwrap_or(&[])
        } else {
            let tail = self.strings.get(off..).unwrap_or(&[]);
            core::ffi::CStr::from_bytes_until_nul(tail)
                .map(|c| c.to_bytes())
                .unwrap_or(&[])
        };
        // SAFETY: `parse` (the only constructor) checked that the bytes from
        // each entry's name offset to the first NUL are UTF-8, and set
        // `packed` only when each such NUL is the byte before the next
        // entry's name (the last one's, the table's last byte): either way
        // `bytes` is exactly those checked bytes (or empty).
        unsafe { core::str::from_utf8_unchecked(bytes) }
    }

    /// Entry `index` as a [`Symbol`] with the given offset.
    fn symbol(&self, index: usize, offset: u64) -> Symbol<'a> {
        let (addr, size, _) = self.raw(index);
        Symbol {
            name: self.name(index),
            addr,
            size,
            offset,
        }
    }

    /// The function containing `addr` (`start <= addr < start + size`), found by
    /// binary search. `offset` is `addr - start`.
    pub fn lookup(&self, addr: u64) -> Option<Symbol<'a>> {
        // Index of the first entry that starts after `addr`.
        let lo = self.entries.partition_point(|e| entry_addr(e) <= addr);
        self.containing(lo, addr)
    }

    /// The symbol containing `addr`, given `lo`: the number of entries that
    /// start at or before it.
    fn containing(&self, lo: usize, addr: u64) -> Option<Symbol<'a>> {
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

    /// [`lookup`](Self::lookup) for every address of `addrs`, which must be
    /// in increasing order, in one walk of the table beside them:
    /// O(addresses plus symbols) for the whole list, instead of a binary
    /// search per address (O(addresses times log symbols)). An address below the one before it is
    /// looked up by binary search, so the result is always `lookup`'s.
    pub fn lookup_sorted<'s, I>(&'s self, addrs: I) -> impl Iterator<Item = Option<Symbol<'a>>> + 's
    where
        I: IntoIterator<Item = u64>,
        I::IntoIter: 's,
    {
        let (mut lo, mut prev) = (0usize, 0u64);
        addrs.into_iter().map(move |addr| {
            if addr < prev {
                return self.lookup(addr);
            }
            prev = addr;
            while lo < self.count && self.raw(lo).0 <= addr {
                lo += 1;
            }
            self.containing(lo, addr)
        })
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
    fn lookup_sorted_is_lookup() {
        let blob = encode(&[
            (0x10, 0, "alias0"),
            (0x10, 8, "real"),
            (0x18, 8, "next"),
            (0x40, 0x10, "far"),
            (0x40, 0, "far_alias"),
        ])
        .unwrap();
        let k = KallSyms::parse(&blob).unwrap();
        let addrs: Vec<u64> = (0..0x60).collect();
        let walked: Vec<_> = k.lookup_sorted(addrs.iter().copied()).collect();
        let searched: Vec<_> = addrs.iter().map(|&a| k.lookup(a)).collect();
        assert_eq!(walked, searched);
        assert_eq!(walked[0x14].unwrap().name, "real");
        assert_eq!(walked[0x20], None, "gap");
        assert_eq!(walked[0x45].unwrap().name, "far");
        // Out of order: still lookup's answer.
        let back: Vec<_> = k.lookup_sorted([0x45, 0x14, 0x19]).collect();
        assert_eq!(back, [k.lookup(0x45), k.lookup(0x14), k.lookup(0x19)]);
        assert_eq!(
            KallSyms::parse(&encode(&[]).unwrap())
                .unwrap()
                .lookup_sorted([1])
                .next(),
            Some(None)
        );
    }

    proptest::proptest! {
        #[test]
        fn lookup_sorted_matches_lookup(
            syms in proptest::collection::vec((0u64..4096, 0u32..64), 0..40),
            mut addrs in proptest::collection::vec(0u64..4200, 0..80),
        ) {
            let named: Vec<(u64, u32, alloc::string::String)> = syms
                .iter()
                .enumerate()
                .map(|(i, &(a, sz))| (a, sz, alloc::format!("f{i}")))
                .collect();
            let triples: Vec<(u64, u32, &str)> =
                named.iter().map(|(a, sz, n)| (*a, *sz, n.as_str())).collect();
            let blob = encode(&triples).unwrap();
            let k = KallSyms::parse(&blob).unwrap();
            addrs.sort();
            let walked: Vec<_> = k.lookup_sorted(addrs.iter().copied()).collect();
            let searched: Vec<_> = addrs.iter().map(|&a| k.lookup(a)).collect();
            proptest::prop_assert_eq!(walked, searched);
        }
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

    /// A table whose names are not in entry order (another writer than
    /// [`encode`]) reads the same as a packed one.
    #[test]
    fn names_out_of_entry_order() {
        let packed = sample();
        let k = KallSyms::parse(&packed).unwrap();
        assert!(k.packed);
        let names: Vec<&str> = k.iter().map(|s| s.name).collect();
        // The same entries with the string table written in reverse.
        let mut blob = packed[..HEADER_SIZE + 3 * ENTRY_SIZE].to_vec();
        let mut strings = Vec::new();
        let mut offs = [0u32; 3];
        for i in (0..3).rev() {
            offs[i] = strings.len() as u32;
            strings.extend_from_slice(names[i].as_bytes());
            strings.push(0);
        }
        for (i, off) in offs.iter().enumerate() {
            let at = HEADER_SIZE + i * ENTRY_SIZE + 12;
            blob[at..at + 4].copy_from_slice(&off.to_le_bytes());
        }
        blob.extend_from_slice(&strings);
        let r = KallSyms::parse(&blob).unwrap();
        assert!(!r.packed);
        assert_eq!(r.iter().map(|s| s.name).collect::<Vec<_>>(), names);
        for a in [0x1000, 0x101f, 0x2000, 0x20ff, 0x3000, 0x300f] {
            assert_eq!(r.lookup(a), k.lookup(a));
        }
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
