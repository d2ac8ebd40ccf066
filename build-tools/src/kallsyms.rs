//! kallsyms: the kernel's function table, built from the linked kernel.
//!
//! Mirrors the role of Linux's `scripts/kallsyms.c`: the kernel is linked once,
//! its function symbols are read back, and an object holding them is linked into
//! the second link. Here the table is the simple blob of [`tracer::kallsyms`], in
//! a section `.kallsyms` (`SHF_ALLOC`, align 8) that the linker script must place
//! after everything whose address matters, so the second link moves nothing.
//! [`compare`] checks exactly that.
//!
//! Which symbols: every `STT_FUNC` with a nonzero size, plus the sizeless entry
//! points written in assembly (`STT_FUNC` or `STT_NOTYPE` symbols with size 0 in
//! an executable section, like naked functions or `global_asm!` labels), which get
//! the size up to the next symbol or the end of their section. A sizeless symbol
//! at the same address as a sized function is an alias and is left out, as are
//! symbols that end up with size 0 (e.g. `_etext`-style markers at a section end).

use crate::names::display_name;
use crate::{Error, Result};
use object::elf;
use object::read::elf::{SectionHeader, Sym};
use object::SymbolIndex;
use std::collections::BTreeMap;

/// One function of the linked kernel.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Function {
    pub addr: u64,
    pub size: u64,
    /// The symbol name as in the ELF file (mangled).
    pub raw: String,
    /// The one-token display name (see [`crate::names`]).
    pub name: String,
}

/// Reads the functions of a linked x86_64 ELF executable, sorted by address.
pub fn functions(data: &[u8]) -> Result<Vec<Function>> {
    let crate::linked::LinkedElf {
        endian,
        sections,
        symbols,
    } = crate::linked::parse(data)?;

    // (section index) -> (end address, candidate symbols)
    struct Candidate {
        addr: u64,
        size: u64,
        raw: String,
    }
    let mut by_section: BTreeMap<usize, (u64, Vec<Candidate>)> = BTreeMap::new();
    for (i, sym) in symbols.iter().enumerate() {
        let st_type = sym.st_type();
        if st_type != elf::STT_FUNC && st_type != elf::STT_NOTYPE {
            continue;
        }
        let Some(section) = symbols.symbol_section(endian, sym, SymbolIndex(i))? else {
            continue;
        };
        let sh = sections.section(section)?;
        if sh.sh_flags(endian) & u64::from(elf::SHF_EXECINSTR) == 0 {
            continue;
        }
        let size = sym.st_size(endian);
        if st_type == elf::STT_NOTYPE && size != 0 {
            continue;
        }
        let raw = String::from_utf8_lossy(symbols.symbol_name(endian, sym)?).into_owned();
        if raw.is_empty() || raw.starts_with(".L") || raw.starts_with('$') {
            continue;
        }
        let end = sh.sh_addr(endian).saturating_add(sh.sh_size(endian));
        by_section
            .entry(section.0)
            .or_insert_with(|| (end, Vec::new()))
            .1
            .push(Candidate {
                addr: sym.st_value(endian),
                size,
                raw,
            });
    }

    let mut out = Vec::new();
    for (_, (end, mut cands)) in by_section {
        cands.sort_by(|a, b| (a.addr, a.size == 0, &a.raw).cmp(&(b.addr, b.size == 0, &b.raw)));
        for (k, c) in cands.iter().enumerate() {
            let size = if c.size != 0 {
                c.size
            } else {
                // A sized function at the same address makes this an alias.
                if cands.iter().any(|o| o.addr == c.addr && o.size != 0) {
                    continue;
                }
                let next = cands[k + 1..]
                    .iter()
                    .map(|o| o.addr)
                    .find(|&a| a > c.addr)
                    .unwrap_or(end);
                next.saturating_sub(c.addr)
            };
            if size == 0 {
                continue;
            }
            out.push(Function {
                addr: c.addr,
                size,
                name: display_name(&c.raw),
                raw: c.raw.clone(),
            });
        }
    }
    out.sort();
    Ok(out)
}

/// Builds the [`tracer::kallsyms`] blob for `funcs`.
pub fn blob(funcs: &[Function]) -> Result<Vec<u8>> {
    let mut entries = Vec::with_capacity(funcs.len());
    for f in funcs {
        let size = u32::try_from(f.size)
            .map_err(|_| Error::new(format!("function {} is larger than 4 GiB", f.name)))?;
        entries.push((f.addr, size, f.name.as_str()));
    }
    tracer::kallsyms::encode(&entries).map_err(|e| Error::new(e.to_string()))
}

/// A relocatable x86_64 ELF object whose only content is the section
/// `.kallsyms` (`SHF_ALLOC`, align 8) holding `blob`.
pub fn object(blob: &[u8]) -> Result<Vec<u8>> {
    use object::write::Object;
    use object::{Architecture, BinaryFormat, SectionFlags, SectionKind};
    let mut obj = Object::new(
        BinaryFormat::Elf,
        Architecture::X86_64,
        object::Endianness::Little,
    );
    let id = obj.add_section(Vec::new(), b".kallsyms".to_vec(), SectionKind::ReadOnlyData);
    obj.section_mut(id).flags = SectionFlags::Elf {
        sh_flags: u64::from(elf::SHF_ALLOC),
    };
    obj.append_section_data(id, blob, 8);
    // An empty .note.GNU-stack says the object needs no executable stack (ld
    // warns without it).
    let note = obj.add_section(Vec::new(), b".note.GNU-stack".to_vec(), SectionKind::Other);
    obj.section_mut(note).flags = SectionFlags::Elf { sh_flags: 0 };
    obj.write()
        .map_err(|e| Error::new(format!("writing the kallsyms object: {e}")))
}

/// Checks that every function has the same address and size in both kernels
/// (compared by raw symbol name). Returns the differences, empty when none.
pub fn compare(a: &[Function], b: &[Function]) -> Vec<String> {
    fn index(fs: &[Function]) -> BTreeMap<&str, Vec<(u64, u64)>> {
        let mut m: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
        for f in fs {
            m.entry(f.raw.as_str()).or_default().push((f.addr, f.size));
        }
        m
    }
    let (ma, mb) = (index(a), index(b));
    let mut diffs = Vec::new();
    for (name, va) in &ma {
        match mb.get(name) {
            None => diffs.push(format!("{name}: only in the first kernel")),
            Some(vb) if vb != va => diffs.push(format!(
                "{name}: {} in the first kernel, {} in the second",
                show(va),
                show(vb)
            )),
            Some(_) => {}
        }
    }
    for name in mb.keys() {
        if !ma.contains_key(name) {
            diffs.push(format!("{name}: only in the second kernel"));
        }
    }
    diffs
}

fn show(v: &[(u64, u64)]) -> String {
    v.iter()
        .map(|(a, s)| format!("{a:#x}+{s:#x}"))
        .collect::<Vec<_>>()
        .join(", ")
}
