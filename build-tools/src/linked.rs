//! Opening the linked kernel: the checks `kallsyms` and `sorttable` both make
//! before they read its section and symbol tables.

use crate::{Error, Result};
use object::elf::{self, FileHeader64};
use object::read::elf::{FileHeader, SectionTable, SymbolTable};
use object::Endianness;

/// The tables of a linked little-endian x86_64 ELF64 executable.
pub(crate) struct LinkedElf<'data> {
    pub endian: Endianness,
    pub sections: SectionTable<'data, FileHeader64<Endianness>>,
    pub symbols: SymbolTable<'data, FileHeader64<Endianness>>,
}

/// Checks that `data` is a linked x86_64 ELF64 executable with a symbol
/// table, and returns its tables. Bad input is an error, never a panic.
pub(crate) fn parse(data: &[u8]) -> Result<LinkedElf<'_>> {
    if data.len() < 4 || data[..4] != elf::ELFMAG {
        return Err(Error::new("not an ELF file"));
    }
    if data.len() < std::mem::size_of::<FileHeader64<Endianness>>() {
        return Err(Error::new("truncated ELF header"));
    }
    if data[4] != elf::ELFCLASS64 || data[5] != elf::ELFDATA2LSB {
        return Err(Error::new("not a little-endian ELF64 file"));
    }
    let header = FileHeader64::<Endianness>::parse(data)?;
    let endian = header.endian()?;
    let machine = header.e_machine(endian);
    if machine != elf::EM_X86_64 {
        return Err(Error::new(format!(
            "not an x86_64 ELF (e_machine = {machine})"
        )));
    }
    let e_type = header.e_type(endian);
    if e_type != elf::ET_EXEC && e_type != elf::ET_DYN {
        return Err(Error::new(format!(
            "not a linked executable (e_type = {e_type})"
        )));
    }
    let sections = header.sections(endian, data)?;
    let symbols = sections.symbols(endian, data, elf::SHT_SYMTAB)?;
    if symbols.is_empty() {
        return Err(Error::new("no symbol table (was the kernel stripped?)"));
    }
    Ok(LinkedElf {
        endian,
        sections,
        symbols,
    })
}
