//! sorttable on small kernels linked in the test: an object written with
//! `object::write` whose `__mcount_loc` lists its functions out of address
//! order (as the kernel's does once `.text.irqentry` is linked first), linked
//! by `ld` with the tests' linker script. The sorted table is read back with
//! binutils-independent checks (nm addresses, byte comparison of the rest of
//! the file, kallsyms --compare), and bad inputs give errors, never panics.
//! The same for `__jump_table`: self-relative entries written with `ld`'s
//! PC-relative relocations, out of (key, site) order, sorted and checked
//! against nm's addresses.

mod common;

use build_tools::sorttable::{
    first_descent, jump_table, mcount_loc, sort_jump_table, sort_mcount_loc,
};
use common::*;
use object::write::{Object, Relocation, StandardSection, Symbol, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness, RelocationEncoding, RelocationFlags, RelocationKind,
    SectionFlags, SectionKind, SymbolFlags, SymbolKind, SymbolScope,
};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> &OsStr {
    s.as_ref()
}

/// The order in which the table lists the functions f0..f7 (not sorted).
const ORDER: [usize; 8] = [5, 6, 7, 0, 3, 1, 2, 4];

/// An object with functions `f0`..`f7` (16 bytes each), an `entry`, some
/// data around, and a `__mcount_loc` section of `R_X86_64_64` relocations to
/// the functions in [`ORDER`]; `extra` raw bytes are appended to the table.
fn object_with_table(extra: &[u8]) -> Vec<u8> {
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let text = obj.section_id(StandardSection::Text);
    let mut funcs = Vec::new();
    for i in 0..8 {
        // push rbp; mov rbp,rsp; pop rbp; ret; padded with int3.
        let mut code = vec![0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3];
        code.resize(16, 0xcc);
        let off = obj.append_section_data(text, &code, 16);
        funcs.push(obj.add_symbol(Symbol {
            name: format!("f{i}").into_bytes(),
            value: off,
            size: 16,
            kind: SymbolKind::Text,
            scope: SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        }));
    }
    let off = obj.append_section_data(text, &[0xc3], 16);
    obj.add_symbol(Symbol {
        name: b"entry".to_vec(),
        value: off,
        size: 1,
        kind: SymbolKind::Text,
        scope: SymbolScope::Linkage,
        weak: false,
        section: SymbolSection::Section(text),
        flags: SymbolFlags::None,
    });
    let rodata = obj.section_id(StandardSection::ReadOnlyData);
    obj.append_section_data(rodata, &[0xaa; 24], 8);
    let data = obj.section_id(StandardSection::Data);
    obj.append_section_data(data, &[0x55; 40], 8);

    let table = obj.add_section(
        Vec::new(),
        b"__mcount_loc".to_vec(),
        SectionKind::ReadOnlyData,
    );
    obj.section_mut(table).flags = SectionFlags::Elf {
        sh_flags: u64::from(object::elf::SHF_ALLOC),
    };
    let mut bytes = vec![0u8; 8 * ORDER.len()];
    bytes.extend_from_slice(extra);
    obj.append_section_data(table, &bytes, 8);
    for (slot, &f) in ORDER.iter().enumerate() {
        obj.add_relocation(
            table,
            Relocation {
                offset: 8 * slot as u64,
                symbol: funcs[f],
                addend: 0,
                flags: RelocationFlags::Generic {
                    kind: RelocationKind::Absolute,
                    encoding: RelocationEncoding::Generic,
                    size: 64,
                },
            },
        )
        .unwrap();
    }
    let note = obj.add_section(Vec::new(), b".note.GNU-stack".to_vec(), SectionKind::Other);
    obj.section_mut(note).flags = SectionFlags::Elf { sh_flags: 0 };
    obj.write().unwrap()
}

/// Writes the object and links it into `dir/name.elf`.
fn linked(dir: &Path, name: &str, extra: &[u8]) -> PathBuf {
    let o = dir.join(format!("{name}.o"));
    std::fs::write(&o, object_with_table(extra)).unwrap();
    let elf = dir.join(format!("{name}.elf"));
    link(dir, &[&o], &elf);
    elf
}

/// Addresses of f0..f7 according to nm.
fn nm_addresses(elf: &Path) -> Vec<u64> {
    let funcs = nm_functions(elf);
    (0..8)
        .map(|i| {
            funcs
                .iter()
                .find(|f| f.2 == format!("f{i}"))
                .unwrap_or_else(|| panic!("f{i} not in nm output"))
                .0
        })
        .collect()
}

fn entries(table: &[u8]) -> Vec<u64> {
    table
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn sorts_the_table_in_place_and_nothing_else() {
    let dir = test_dir("sorttable-sort");
    let elf = linked(&dir, "k", &[]);
    let before = std::fs::read(&elf).unwrap();
    let addrs = nm_addresses(&elf);
    let (start, table) = section_bytes(&elf, ".mcount_loc").unwrap();
    // The link resolved the relocations in ORDER: the table is unsorted.
    let want_unsorted: Vec<u64> = ORDER.iter().map(|&f| addrs[f]).collect();
    assert_eq!(entries(&table), want_unsorted);
    assert_eq!(first_descent(&want_unsorted), Some(3));

    let copy = dir.join("k.pass1.elf");
    std::fs::copy(&elf, &copy).unwrap();
    let (ok, out, err) = run_tool("sorttable", &[elf.as_os_str()]);
    assert!(ok, "{err}");
    assert!(out.contains("sorted 8 __mcount_loc entries"), "{out}");
    assert!(out.contains("entry 3"), "{out}");

    let after = std::fs::read(&elf).unwrap();
    let (start2, table2) = section_bytes(&elf, ".mcount_loc").unwrap();
    assert_eq!(start2, start);
    let mut want = addrs.clone();
    want.sort();
    assert_eq!(
        entries(&table2),
        want,
        "entries are the functions, ascending"
    );
    // Only the table's bytes changed.
    assert_eq!(before.len(), after.len());
    let pos = before
        .windows(table.len())
        .position(|w| w == table.as_slice())
        .expect("table in the file");
    assert_eq!(before[..pos], after[..pos]);
    assert_eq!(before[pos + table.len()..], after[pos + table.len()..]);
    // No function moved (the check build.sh runs after sorting).
    let (ok, out, err) = run_tool(
        "kallsyms",
        &[os("--compare"), copy.as_os_str(), elf.as_os_str()],
    );
    assert!(ok, "{out}{err}");
    // --check: the original fails, the sorted one passes.
    let (ok, _, err) = run_tool("sorttable", &[os("--check"), copy.as_os_str()]);
    assert!(!ok && err.contains("not sorted (entry 3"), "{err}");
    let (ok, out, _) = run_tool("sorttable", &[os("--check"), elf.as_os_str()]);
    assert!(ok && out.contains("8 entries, sorted"), "{out}");
    // Sorting again changes nothing.
    let (ok, out, _) = run_tool("sorttable", &[elf.as_os_str()]);
    assert!(ok && out.contains("already sorted"), "{out}");
    assert_eq!(std::fs::read(&elf).unwrap(), after);
}

#[test]
fn library_reports_what_it_did() {
    let dir = test_dir("sorttable-lib");
    let elf = linked(&dir, "k", &[]);
    let mut data = std::fs::read(&elf).unwrap();
    let addrs = nm_addresses(&elf);
    let (start, _) = section_bytes(&elf, ".mcount_loc").unwrap();
    assert_eq!(
        mcount_loc(&data).unwrap(),
        ORDER.iter().map(|&f| addrs[f]).collect::<Vec<_>>()
    );
    let s = sort_mcount_loc(&mut data).unwrap();
    assert_eq!(
        (s.start, s.entries, s.was_sorted, s.first_descent),
        (start, 8, false, Some(3))
    );
    let s = sort_mcount_loc(&mut data).unwrap();
    assert!(s.was_sorted && s.first_descent.is_none());
    assert!(mcount_loc(&data).unwrap().is_sorted());
}

fn err_of(data: &[u8]) -> String {
    let mut d = data.to_vec();
    match sort_mcount_loc(&mut d) {
        Ok(s) => panic!("expected an error, got {s:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_inputs_are_errors() {
    let dir = test_dir("sorttable-bad");
    let elf = linked(&dir, "k", &[]);
    let good = std::fs::read(&elf).unwrap();

    assert!(err_of(b"").contains("not an ELF"));
    assert!(err_of(b"hello, world, this is not an ELF file").contains("not an ELF"));
    assert!(err_of(&good[..20]).contains("truncated"));
    // A relocatable object is not a linked kernel.
    assert!(err_of(&object_with_table(&[])).contains("not a linked executable"));
    // Every truncation is an error, not a panic.
    for len in (0..good.len()).step_by(7) {
        let mut d = good[..len].to_vec();
        assert!(sort_mcount_loc(&mut d).is_err(), "truncated to {len}");
    }
    // Missing symbols: rename them in the string table.
    for (sym, msg) in [
        (&b"__start_mcount_loc"[..], "no __start_mcount_loc"),
        (&b"__stop_mcount_loc"[..], "no __stop_mcount_loc"),
    ] {
        let mut d = good.clone();
        let pos = d.windows(sym.len()).position(|w| w == sym).unwrap();
        d[pos + 2] = b'X';
        assert!(err_of(&d).contains(msg), "{}", err_of(&d));
    }
    // A table that is not a whole number of 8-byte entries.
    let odd = linked(&dir, "odd", &[1, 2, 3, 4]);
    let e = err_of(&std::fs::read(&odd).unwrap());
    assert!(e.contains("not a whole number of 8-byte entries"), "{e}");
    // Relocations kept in the output (ld --emit-relocs) would go stale.
    let script = dir.join("link.ld");
    let o = dir.join("k.o");
    let kept = dir.join("kept.elf");
    let st = std::process::Command::new("ld")
        .arg("-T")
        .arg(&script)
        .arg("--emit-relocs")
        .arg("-o")
        .arg(&kept)
        .arg(&o)
        .status()
        .unwrap();
    assert!(st.success());
    let e = err_of(&std::fs::read(&kept).unwrap());
    assert!(e.contains("has relocations"), "{e}");
    // The CLI reports errors with status 1 and usage errors with 2.
    let junk = dir.join("junk");
    std::fs::write(&junk, b"junk").unwrap();
    let out = std::process::Command::new(tool("sorttable"))
        .arg(&junk)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an ELF"));
    let out = std::process::Command::new(tool("sorttable"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn corrupted_bytes_never_panic() {
    let dir = test_dir("sorttable-corrupt");
    let good = std::fs::read(linked(&dir, "k", &[])).unwrap();
    for_corrupted_copies(&good, 0x2545_f491_4f6c_dd1d, 3000, |d| {
        let _ = sort_mcount_loc(d);
    });
}

/// Calls `f` on `n` copies of `good`, each with 4 bytes set to random values
/// all over the headers and tables (a simple LCG from `seed`).
fn for_corrupted_copies(good: &[u8], seed: u64, n: usize, mut f: impl FnMut(&mut Vec<u8>)) {
    let mut x = seed;
    for _ in 0..n {
        let mut d = good.to_vec();
        for _ in 0..4 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let pos = (x >> 33) as usize % d.len();
            d[pos] = (x >> 17) as u8;
        }
        f(&mut d);
    }
}

// ---------------------------------------------------------------------------
// __jump_table

/// The linker script of the `__jump_table` tests: the tables in their own
/// output sections, as the kernel's script bounds them with symbols.
const JUMP_SCRIPT: &str = "
ENTRY(entry)
SECTIONS
{
  . = 0x200000;
  .text : { *(.text .text.*) }
  .rodata : { *(.rodata .rodata.*) }
  .data : { *(.data .data.*) }
  . = ALIGN(8);
  .mcount_loc : { __start_mcount_loc = .; KEEP(*(__mcount_loc)) __stop_mcount_loc = .; }
  . = ALIGN(8);
  .jump_table : { __start___jump_table = .; KEEP(*(__jump_table)) __stop___jump_table = .; }
  /DISCARD/ : { *(.eh_frame) *(.comment) }
}
";

/// The jump table's entries, in table order: (function of the site, key).
/// Not sorted by key, nor by site within a key.
const JUMPS: [(usize, usize); 7] = [(3, 1), (0, 2), (5, 1), (1, 1), (7, 0), (2, 2), (6, 0)];
/// Where a site is in its function, and its target.
const SITE_OFF: u64 = 4;
const TARGET_OFF: u64 = 11;

/// An object with functions `f0`..`f7`, keys `k0`..`k2` (8 bytes each in
/// .data), a one-entry `__mcount_loc` and a `__jump_table` of [`JUMPS`]
/// written as `arch_static_branch` writes it: `.long site - .`,
/// `.long target - .`, `.quad key - .` (PC-relative relocations). `extra`
/// raw bytes are appended to the jump table.
fn object_with_jump_table(extra: &[u8]) -> Vec<u8> {
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let text = obj.section_id(StandardSection::Text);
    let sym = |obj: &mut Object, name: String, value, size, kind, section| {
        obj.add_symbol(Symbol {
            name: name.into_bytes(),
            value,
            size,
            kind,
            scope: SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Section(section),
            flags: SymbolFlags::None,
        })
    };
    let mut funcs = Vec::new();
    for i in 0..8 {
        let mut code = vec![
            0x55, 0x48, 0x89, 0xe5, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0x5d, 0xc3,
        ];
        code.resize(16, 0xcc);
        let off = obj.append_section_data(text, &code, 16);
        funcs.push(sym(
            &mut obj,
            format!("f{i}"),
            off,
            16,
            SymbolKind::Text,
            text,
        ));
    }
    let off = obj.append_section_data(text, &[0xc3], 16);
    sym(&mut obj, "entry".into(), off, 1, SymbolKind::Text, text);
    let data = obj.section_id(StandardSection::Data);
    let mut keys = Vec::new();
    for i in 0..3 {
        let off = obj.append_section_data(data, &[0u8; 8], 8);
        keys.push(sym(
            &mut obj,
            format!("k{i}"),
            off,
            8,
            SymbolKind::Data,
            data,
        ));
    }
    let alloc = SectionFlags::Elf {
        sh_flags: u64::from(object::elf::SHF_ALLOC),
    };
    let mcount = obj.add_section(
        Vec::new(),
        b"__mcount_loc".to_vec(),
        SectionKind::ReadOnlyData,
    );
    obj.section_mut(mcount).flags = alloc;
    obj.append_section_data(mcount, &[0u8; 8], 8);
    let reloc = |kind, size, symbol, addend| Relocation {
        offset: 0,
        symbol,
        addend,
        flags: RelocationFlags::Generic {
            kind,
            encoding: RelocationEncoding::Generic,
            size,
        },
    };
    obj.add_relocation(
        mcount,
        reloc(RelocationKind::Absolute, 64, funcs[0], SITE_OFF as i64),
    )
    .unwrap();
    let table = obj.add_section(
        Vec::new(),
        b"__jump_table".to_vec(),
        SectionKind::ReadOnlyData,
    );
    obj.section_mut(table).flags = alloc;
    let mut bytes = vec![0u8; 16 * JUMPS.len()];
    bytes.extend_from_slice(extra);
    obj.append_section_data(table, &bytes, 8);
    for (slot, &(f, k)) in JUMPS.iter().enumerate() {
        let at = 16 * slot as u64;
        for (field, r_type, symbol, addend) in [
            (0, object::elf::R_X86_64_PC32, funcs[f], SITE_OFF as i64),
            (4, object::elf::R_X86_64_PC32, funcs[f], TARGET_OFF as i64),
            (8, object::elf::R_X86_64_PC64, keys[k], 0),
        ] {
            let r = Relocation {
                offset: at + field,
                symbol,
                addend,
                flags: RelocationFlags::Elf { r_type },
            };
            obj.add_relocation(table, r).unwrap();
        }
    }
    let note = obj.add_section(Vec::new(), b".note.GNU-stack".to_vec(), SectionKind::Other);
    obj.section_mut(note).flags = SectionFlags::Elf { sh_flags: 0 };
    obj.write().unwrap()
}

/// Writes the object and links it into `dir/name.elf` (with `--emit-relocs`
/// if `keep_relocs`).
fn linked_jumps(dir: &Path, name: &str, extra: &[u8], keep_relocs: bool) -> PathBuf {
    let o = dir.join(format!("{name}.o"));
    std::fs::write(&o, object_with_jump_table(extra)).unwrap();
    let script = dir.join("jump.ld");
    std::fs::write(&script, JUMP_SCRIPT).unwrap();
    let elf = dir.join(format!("{name}.elf"));
    let mut ld = std::process::Command::new("ld");
    ld.arg("-T").arg(&script).arg("--no-warn-rwx-segments");
    if keep_relocs {
        ld.arg("--emit-relocs");
    }
    let st = ld.arg("-o").arg(&elf).arg(&o).status().unwrap();
    assert!(st.success());
    elf
}

/// Addresses of the symbols `names` according to nm.
fn nm_symbols(elf: &Path) -> std::collections::BTreeMap<String, u64> {
    let out = std::process::Command::new("nm").arg(elf).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3).then(|| (f[2].to_string(), u64::from_str_radix(f[0], 16).unwrap()))
        })
        .collect()
}

/// (key, site, target) of every entry, from nm's addresses, in [`JUMPS`]
/// order.
fn expected_jumps(elf: &Path) -> Vec<(u64, u64, u64)> {
    let nm = nm_symbols(elf);
    JUMPS
        .iter()
        .map(|&(f, k)| {
            let fa = nm[&format!("f{f}")];
            (nm[&format!("k{k}")], fa + SITE_OFF, fa + TARGET_OFF)
        })
        .collect()
}

fn decoded(data: &[u8]) -> Vec<(u64, u64, u64)> {
    jump_table(data)
        .unwrap()
        .expect("a __jump_table")
        .iter()
        .map(|e| {
            assert!(!e.branch);
            (e.key, e.code, e.target)
        })
        .collect()
}

#[test]
fn sorts_the_jump_table_by_key_and_site_keeping_every_entry() {
    let dir = test_dir("sorttable-jump");
    let elf = linked_jumps(&dir, "k", &[], false);
    let before = std::fs::read(&elf).unwrap();
    let want = expected_jumps(&elf);
    // The link wrote the entries in JUMPS order: decoded from the file, they
    // name nm's addresses.
    assert_eq!(decoded(&before), want);
    let copy = dir.join("k.unsorted.elf");
    std::fs::copy(&elf, &copy).unwrap();

    let (ok, out, err) = run_tool("sorttable", &[elf.as_os_str()]);
    assert!(ok, "{err}");
    assert!(out.contains("sorted 7 __jump_table entries"), "{out}");
    assert!(out.contains("(first out of order: entry 2)"), "{out}");
    let after = std::fs::read(&elf).unwrap();
    let mut sorted = want.clone();
    sorted.sort();
    assert_eq!(decoded(&after), sorted, "same entries, by (key, site)");
    // Entries moved: copying their bytes unchanged would have broken them.
    let (start, table) = section_bytes(&elf, ".jump_table").unwrap();
    let (_, old_table) = section_bytes(&copy, ".jump_table").unwrap();
    assert_ne!(table, old_table);
    assert_eq!(start, nm_symbols(&elf)["__start___jump_table"]);
    // Only the table's bytes changed.
    let pos = before
        .windows(old_table.len())
        .position(|w| w == old_table.as_slice())
        .unwrap();
    assert_eq!(before.len(), after.len());
    assert_eq!(before[..pos], after[..pos]);
    assert_eq!(before[pos + table.len()..], after[pos + table.len()..]);
    // --check: the original fails, the sorted one passes.
    let (ok, _, err) = run_tool("sorttable", &[os("--check"), copy.as_os_str()]);
    assert!(
        !ok && err.contains("__jump_table is not sorted (entry 2"),
        "{err}"
    );
    let (ok, out, _) = run_tool("sorttable", &[os("--check"), elf.as_os_str()]);
    assert!(
        ok && out.contains("7 __jump_table entries, sorted"),
        "{out}"
    );
    // Sorting again writes nothing.
    let (ok, out, _) = run_tool("sorttable", &[elf.as_os_str()]);
    assert!(ok && out.contains("7 __jump_table entries at"), "{out}");
    assert!(out.contains("already sorted"), "{out}");
    assert_eq!(std::fs::read(&elf).unwrap(), after);
    // The library reports the same.
    let mut d = before.clone();
    let s = sort_jump_table(&mut d).unwrap().unwrap();
    assert_eq!(
        (s.start, s.entries, s.was_sorted, s.first_descent),
        (start, 7, false, Some(2))
    );
    // A kernel without the symbols has no jump table (not an error).
    let plain = linked(&dir, "plain", &[]);
    let mut d = std::fs::read(&plain).unwrap();
    assert_eq!(sort_jump_table(&mut d).unwrap(), None);
    assert_eq!(jump_table(&d).unwrap(), None);
}

#[test]
fn bad_jump_tables_are_errors_and_nothing_is_written() {
    let dir = test_dir("sorttable-jump-bad");
    let odd = linked_jumps(&dir, "odd", &[0; 8], false);
    let mut d = std::fs::read(&odd).unwrap();
    let e = sort_jump_table(&mut d).unwrap_err().to_string();
    assert!(e.contains("not a whole number of 16-byte entries"), "{e}");
    let before = std::fs::read(&odd).unwrap();
    let (ok, _, err) = run_tool("sorttable", &[odd.as_os_str()]);
    assert!(!ok && err.contains("__jump_table"), "{err}");
    assert_eq!(std::fs::read(&odd).unwrap(), before);
    let kept = linked_jumps(&dir, "kept", &[], true);
    let mut d = std::fs::read(&kept).unwrap();
    let e = sort_jump_table(&mut d).unwrap_err().to_string();
    assert!(e.contains("has relocations"), "{e}");
    // One symbol without the other.
    let good = std::fs::read(linked_jumps(&dir, "k", &[], false)).unwrap();
    let sym = b"__stop___jump_table";
    let mut d = good.clone();
    let pos = d.windows(sym.len()).position(|w| w == sym).unwrap();
    d[pos + 3] = b'X';
    let e = sort_jump_table(&mut d).unwrap_err().to_string();
    assert!(e.contains("no __stop___jump_table symbol"), "{e}");
    // Corrupted files never panic.
    for_corrupted_copies(&good, 0x9e37_79b9_7f4a_7c15, 2000, |d| {
        let _ = sort_jump_table(d);
        let _ = jump_table(d);
    });
}
