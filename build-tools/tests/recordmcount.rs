//! recordmcount on real rustc output, checked against binutils.

mod common;

use build_tools::recordmcount::{self, Mode, Notrace, Options};
use common::*;
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

const NOTRACE: &str = "# the sample's notrace list\nsample::quiet::*\n";

fn recordmcount(args: &[&OsStr]) -> String {
    let (ok, out, err) = run_tool("recordmcount", args);
    assert!(ok, "recordmcount failed: {err}");
    out
}

fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> &OsStr {
    s.as_ref()
}

/// Display names of the functions holding `sites`, through the object's labels.
fn function_of(d: &Disassembly, section: &str, offset: u64) -> String {
    let label = d
        .labels
        .iter()
        .filter(|l| l.section == section && l.offset <= offset)
        .max_by_key(|l| l.offset)
        .expect("a label before the site");
    build_tools::names::display_name(&label.name)
}

#[test]
fn mcount_sites_equal_objdump_scan() {
    let dir = test_dir("mcount-sites");
    let obj = compile(&dir, SAMPLE, "lib", Instrument::Mcount);
    let expected = objdump_mcount_sites(&objdump(&obj));
    assert!(
        expected.len() >= 7,
        "sample has at least 7 traced functions: {expected:?}"
    );

    let out = dir.join("out.o");
    let summary = recordmcount(&[os("-o"), out.as_os_str(), obj.as_os_str()]);
    assert!(
        summary.contains(&format!(
            "1 objects, {n} sections, {n} sites, 0 skipped",
            n = expected.len()
        )),
        "{summary}"
    );
    let recorded: BTreeSet<(String, u64)> = readelf_records(&out).into_iter().collect();
    assert_eq!(recorded, expected);
    assert_eq!(section_flags(&out, "__mcount_loc"), ["A"]);

    // The output still disassembles to the same calls with the same relocations.
    assert_eq!(objdump_mcount_sites(&objdump(&out)), expected);
}

#[test]
fn notrace_sites_become_nops() {
    let dir = test_dir("mcount-notrace");
    let obj = compile(&dir, SAMPLE, "lib", Instrument::Mcount);
    let before = objdump(&obj);
    let all = objdump_mcount_sites(&before);
    let quiet: BTreeSet<_> = all
        .iter()
        .filter(|(s, o)| function_of(&before, s, *o).starts_with("sample::quiet::"))
        .cloned()
        .collect();
    assert_eq!(quiet.len(), 2, "hidden and also: {quiet:?}");

    let notrace = dir.join("notrace");
    std::fs::write(&notrace, NOTRACE).unwrap();
    let out = dir.join("out.o");
    let summary = recordmcount(&[
        os("--notrace"),
        notrace.as_os_str(),
        os("-o"),
        out.as_os_str(),
        obj.as_os_str(),
    ]);
    assert!(summary.contains("2 skipped (notrace)"), "{summary}");

    let recorded: BTreeSet<_> = readelf_records(&out).into_iter().collect();
    let traced: BTreeSet<_> = all.difference(&quiet).cloned().collect();
    assert_eq!(recorded, traced);

    let after = objdump(&out);
    for (section, offset) in &quiet {
        let insn = after.insn(section, *offset).unwrap();
        assert_eq!(insn.bytes, [0x0f, 0x1f, 0x44, 0x00, 0x00], "{insn:?}");
        assert!(insn.text.starts_with("nop"), "{insn:?}");
        let reloc = after
            .relocs
            .iter()
            .find(|r| &r.section == section && r.offset == offset + 1)
            .unwrap();
        assert_eq!(reloc.r_type, "R_X86_64_NONE");
    }
    // Only those sites changed.
    assert_eq!(objdump_mcount_sites(&after), traced);
}

#[test]
fn fentry_sites_equal_objdump_scan() {
    let dir = test_dir("fentry-sites");
    let obj = compile(&dir, SAMPLE, "lib", Instrument::Patchable);
    let before = objdump(&obj);
    let expected = objdump_fentry_sites(&before);
    assert!(expected.len() >= 7, "{expected:?}");
    assert!(objdump_mcount_sites(&before).is_empty());

    let notrace = dir.join("notrace");
    std::fs::write(&notrace, NOTRACE).unwrap();
    let out = dir.join("out.o");
    let summary = recordmcount(&[
        os("--mode"),
        os("fentry"),
        os("--notrace"),
        notrace.as_os_str(),
        os("-o"),
        out.as_os_str(),
        obj.as_os_str(),
    ]);
    let quiet: BTreeSet<_> = expected
        .iter()
        .filter(|(s, o)| function_of(&before, s, *o).starts_with("sample::quiet::"))
        .cloned()
        .collect();
    assert_eq!(quiet.len(), 2);
    let traced: BTreeSet<_> = expected.difference(&quiet).cloned().collect();
    assert!(
        summary.contains(&format!("{} sites, 2 skipped", traced.len())),
        "{summary}"
    );

    let recorded: BTreeSet<_> = readelf_records(&out).into_iter().collect();
    assert_eq!(recorded, traced);

    // Recorded entries now hold Linux's ideal NOP; notrace ones are untouched.
    let after = objdump(&out);
    for (section, offset) in &expected {
        let bytes = &after.insn(section, *offset).unwrap().bytes;
        let want: &[u8] = if quiet.contains(&(section.clone(), *offset)) {
            &recordmcount::PATCHABLE_NOP5
        } else {
            &recordmcount::IDEAL_NOP5
        };
        assert_eq!(bytes, want, "{section}+{offset:#x}");
    }
    // The compiler's table is excluded from the link and no longer allocated.
    let flags = section_flags(&out, "__patchable_function_entries");
    assert_eq!(flags.len(), expected.len());
    for f in flags {
        assert!(
            f.contains('E') && !f.contains('A') && !f.contains('W'),
            "{f}"
        );
    }
}

#[test]
fn linked_mcount_loc_points_at_calls() {
    let dir = test_dir("mcount-link");
    let obj = compile(&dir, SAMPLE, "lib", Instrument::Mcount);
    let out = dir.join("out.o");
    let notrace = dir.join("notrace");
    std::fs::write(&notrace, NOTRACE).unwrap();
    recordmcount(&[
        os("--notrace"),
        notrace.as_os_str(),
        os("-o"),
        out.as_os_str(),
        obj.as_os_str(),
    ]);
    let elf = dir.join("kernel.elf");
    link(&dir, &[&out], &elf);

    // Independent: every call to mcount in the linked image, from objdump.
    let d = objdump(&elf);
    let calls: BTreeSet<u64> = d
        .insns
        .iter()
        .filter(|i| i.bytes[0] == 0xe8 && i.text.contains("<mcount>"))
        .map(|i| i.offset)
        .collect();
    let (_, table) = section_bytes(&elf, ".mcount_loc").unwrap();
    let entries: BTreeSet<u64> = table
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(table.len() / 8, entries.len(), "no duplicates");
    assert_eq!(entries, calls);
    for addr in &entries {
        let insn = d.insns.iter().find(|i| i.offset == *addr).unwrap();
        let rel = i32::from_le_bytes(insn.bytes[1..5].try_into().unwrap());
        assert_eq!(
            addr.wrapping_add(5).wrapping_add_signed(rel.into()),
            MCOUNT_ADDR
        );
    }
    // The notrace functions hold a NOP and are not in the table.
    for l in d
        .labels
        .iter()
        .filter(|l| build_tools::names::display_name(&l.name).starts_with("sample::quiet::"))
    {
        let body: Vec<_> = d
            .insns
            .iter()
            .filter(|i| i.offset >= l.offset && i.offset < l.offset + 0x20)
            .collect();
        assert!(
            body.iter().any(|i| i.bytes == recordmcount::IDEAL_NOP5),
            "{}",
            l.name
        );
        assert!(!entries
            .iter()
            .any(|e| *e >= l.offset && *e < l.offset + 0x20));
    }
}

#[test]
fn linked_fentry_table_replaces_compiler_table() {
    let dir = test_dir("fentry-link");
    let obj = compile(&dir, SAMPLE, "lib", Instrument::Patchable);
    let out = dir.join("out.o");
    recordmcount(&[
        os("--mode"),
        os("fentry"),
        os("-o"),
        out.as_os_str(),
        obj.as_os_str(),
    ]);
    let elf = dir.join("kernel.elf");
    link(&dir, &[&out], &elf);
    assert!(section_bytes(&elf, "__patchable_function_entries").is_none());

    let (_, table) = section_bytes(&elf, ".mcount_loc").unwrap();
    let entries: BTreeSet<u64> = table
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    // Every Rust function (nm, independent) starts a recorded NOP, and nothing else
    // is recorded. asm_entry and the naked global_asm have no patchable entry.
    let funcs: BTreeSet<u64> = nm_functions(&elf).into_iter().map(|(a, _, _)| a).collect();
    assert_eq!(entries, funcs);
    let d = objdump(&elf);
    for addr in &entries {
        let insn = d.insns.iter().find(|i| i.offset == *addr).unwrap();
        assert_eq!(insn.bytes, recordmcount::IDEAL_NOP5);
    }
}

#[test]
fn archive_round_trip() {
    let dir = test_dir("archive");
    let src = format!("{SAMPLE}{STATICLIB_EXTRA}");
    let lib = compile(&dir, &src, "staticlib", Instrument::Mcount);
    let out = dir.join("libout.a");
    let summary = recordmcount(&[os("-o"), out.as_os_str(), lib.as_os_str()]);

    // Same members in the same order (ar, independent).
    let names = |p: &Path| stdout(std::process::Command::new("ar").arg("t").arg(p));
    assert_eq!(names(&lib), names(&out));
    let members = names(&lib).lines().count();
    assert!(
        members > 2,
        "the staticlib bundles core and compiler_builtins"
    );
    assert!(summary.contains(&format!("{members} objects")), "{summary}");

    // Members without sites (core, compiler_builtins) are byte-identical; the
    // sample's object gained its table; the symbol index lists the same symbols.
    use object::read::archive::ArchiveFile;
    let (a, b) = (std::fs::read(&lib).unwrap(), std::fs::read(&out).unwrap());
    let (fa, fb) = (
        ArchiveFile::parse(&*a).unwrap(),
        ArchiveFile::parse(&*b).unwrap(),
    );
    let mut changed = 0;
    for (ma, mb) in fa.members().zip(fb.members()) {
        let (ma, mb) = (ma.unwrap(), mb.unwrap());
        assert_eq!(ma.name(), mb.name());
        if ma.data(&*a).unwrap() != mb.data(&*b).unwrap() {
            changed += 1;
            assert!(String::from_utf8_lossy(ma.name()).starts_with("libsample.sample."));
        }
    }
    assert_eq!(changed, 1);
    let index = |p: &Path| {
        let text = stdout(std::process::Command::new("nm").arg("-s").arg(p));
        let start = text.find("Archive index:").expect("archive has an index");
        let mut lines: Vec<String> = text[start..]
            .lines()
            .take_while(|l| !l.is_empty())
            .map(String::from)
            .collect();
        lines.sort();
        lines
    };
    assert_eq!(index(&lib), index(&out));

    // ld can link from it (needs the index) and the table is there.
    let elf = dir.join("kernel.elf");
    link(&dir, &[&out], &elf);
    let (_, table) = section_bytes(&elf, ".mcount_loc").unwrap();
    let calls = objdump(&elf)
        .insns
        .iter()
        .filter(|i| i.bytes[0] == 0xe8 && i.text.contains("<mcount>"))
        .count();
    assert!(calls >= 7);
    assert_eq!(table.len(), 8 * calls);

    // Processing twice is refused.
    let (ok, _, err) = run_tool(
        "recordmcount",
        &[os("-o"), dir.join("x.a").as_os_str(), out.as_os_str()],
    );
    assert!(!ok);
    assert!(err.contains("already has a __mcount_loc"), "{err}");
}

fn process(data: &[u8], mode: Mode) -> Result<recordmcount::Output, build_tools::Error> {
    recordmcount::process(
        data,
        &Options {
            mode,
            notrace: Notrace::none(),
        },
    )
}

#[test]
fn garbage_and_truncated_inputs_are_errors() {
    let dir = test_dir("garbage");
    assert!(process(b"", Mode::Mcount).is_err());
    assert!(process(b"hello world, not an object", Mode::Mcount).is_err());
    assert!(process(b"\x7fELF", Mode::Mcount).is_err());
    assert!(process(b"!<arch>\n", Mode::Mcount).is_ok_and(|o| o.summary.objects == 0));
    assert!(process(b"!<arch>\nshort", Mode::Mcount).is_err());

    let obj = std::fs::read(compile(&dir, SAMPLE, "lib", Instrument::Mcount)).unwrap();
    // Every truncation is handled without a panic; those that cut into the
    // section headers at the end of the file are errors.
    let mut errors = 0;
    for len in (0..obj.len()).step_by(7) {
        for mode in [Mode::Mcount, Mode::Fentry] {
            errors += usize::from(process(&obj[..len], mode).is_err());
        }
    }
    assert!(errors > 0);
    for len in [16, 63, 64, obj.len() / 2, obj.len() - 1] {
        let e = process(&obj[..len], Mode::Mcount).unwrap_err();
        assert!(!e.message().is_empty());
    }
    // Corrupted header fields.
    let mut bad = obj.clone();
    bad[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes()); // e_shoff
    assert!(process(&bad, Mode::Mcount).is_err());
    let mut bad = obj.clone();
    bad[4] = 1; // ELFCLASS32
    assert!(process(&bad, Mode::Mcount)
        .unwrap_err()
        .message()
        .contains("not an x86_64"));

    // Through the command line: non-zero exit and a message naming the file.
    let garbage = dir.join("garbage.o");
    std::fs::write(&garbage, b"garbage").unwrap();
    let (ok, _, err) = run_tool(
        "recordmcount",
        &[os("-o"), dir.join("x").as_os_str(), garbage.as_os_str()],
    );
    assert!(!ok);
    assert!(err.contains("garbage.o") && err.contains("error"), "{err}");
}

/// A hand-made object for the cases rustc does not produce.
fn handmade(arch: object::Architecture, code: &[u8], with_func: bool, reloc_at: u64) -> Vec<u8> {
    handmade_with(arch, code, with_func, false, reloc_at)
}

fn handmade_with(
    arch: object::Architecture,
    code: &[u8],
    with_func: bool,
    weak: bool,
    reloc_at: u64,
) -> Vec<u8> {
    use object::write::{Object, Relocation, Symbol, SymbolSection};
    use object::{
        BinaryFormat, Endianness, RelocationFlags, SectionKind, SymbolFlags, SymbolKind,
        SymbolScope,
    };
    let mut obj = Object::new(BinaryFormat::Elf, arch, Endianness::Little);
    let text = obj.add_section(Vec::new(), b".text.handmade".to_vec(), SectionKind::Text);
    obj.append_section_data(text, code, 16);
    if with_func {
        obj.add_symbol(Symbol {
            name: b"handmade".to_vec(),
            value: 0,
            size: code.len() as u64,
            kind: SymbolKind::Text,
            scope: SymbolScope::Linkage,
            weak,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        });
    }
    if arch == object::Architecture::X86_64 {
        let mcount = obj.add_symbol(Symbol {
            name: b"mcount".to_vec(),
            value: 0,
            size: 0,
            kind: SymbolKind::Text,
            scope: SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Undefined,
            flags: SymbolFlags::None,
        });
        obj.add_relocation(
            text,
            Relocation {
                offset: reloc_at,
                symbol: mcount,
                addend: -4,
                flags: RelocationFlags::Elf {
                    r_type: object::elf::R_X86_64_PLT32,
                },
            },
        )
        .unwrap();
    }
    obj.write().unwrap()
}

#[test]
fn non_x86_objects_are_errors() {
    let obj = handmade(
        object::Architecture::Aarch64,
        &[0xd5, 0x03, 0x20, 0x1f],
        true,
        0,
    );
    let e = process(&obj, Mode::Mcount).unwrap_err();
    assert!(e.message().contains("not an x86_64"), "{e}");
    let obj = handmade(object::Architecture::I386, &[0x90], true, 0);
    assert!(process(&obj, Mode::Mcount).is_err());
}

#[test]
fn unexpected_instruction_and_missing_symbol_are_errors() {
    // A well-formed site: push rbp; call mcount; ret.
    let good = [0x55, 0xe8, 0, 0, 0, 0, 0xc3];
    let obj = handmade(object::Architecture::X86_64, &good, true, 2);
    let out = process(&obj, Mode::Mcount).unwrap();
    assert_eq!(out.summary.sites, 1);
    assert_eq!(
        recordmcount::read_records(&out.data).unwrap(),
        [(".text.handmade".to_string(), 1)]
    );

    // jmp instead of call.
    let jmp = [0x55, 0xe9, 0, 0, 0, 0, 0xc3];
    let e = process(
        &handmade(object::Architecture::X86_64, &jmp, true, 2),
        Mode::Mcount,
    )
    .unwrap_err();
    assert!(
        e.message().contains(".text.handmade offset 0x1") && e.message().contains("jmp"),
        "{e}"
    );

    // The relocation in the middle of another instruction.
    let e = process(
        &handmade(object::Architecture::X86_64, &good, true, 3),
        Mode::Mcount,
    )
    .unwrap_err();
    assert!(e.message().contains("expected `call mcount`"), "{e}");

    // A call outside any function symbol.
    let e = process(
        &handmade(object::Architecture::X86_64, &good, false, 2),
        Mode::Mcount,
    )
    .unwrap_err();
    assert!(e.message().contains("not inside any function"), "{e}");

    // A non-call reference to mcount (lea) is an error in a traced function but
    // left alone in a notrace one (the tracer may compute the call's target).
    let lea = [0x48, 0x8d, 0x05, 0, 0, 0, 0, 0xc3];
    let obj_lea = handmade(object::Architecture::X86_64, &lea, true, 3);
    assert!(process(&obj_lea, Mode::Mcount).is_err());
    let opts = Options {
        mode: Mode::Mcount,
        notrace: Notrace::parse("handmade\n"),
    };
    let out = recordmcount::process(&obj_lea, &opts).unwrap();
    assert_eq!((out.summary.sites, out.summary.skipped), (0, 0));
    assert_eq!(out.data, obj_lea);

    // Only a weak symbol to anchor the record: refused, like recordmcount.c.
    let weak = handmade_with(object::Architecture::X86_64, &good, true, true, 2);
    let e = process(&weak, Mode::Mcount).unwrap_err();
    assert!(e.message().contains("no section or non-weak symbol"), "{e}");

    // fentry mode refuses an mcount-instrumented object.
    let e = process(&obj, Mode::Fentry).unwrap_err();
    assert!(e.message().contains("--mode mcount"), "{e}");
}

#[test]
fn corrupted_bytes_never_panic() {
    // Flip every byte of a real object, one at a time: each run must return
    // (Ok or Err), never panic.
    let dir = test_dir("flips");
    for instrument in [Instrument::Mcount, Instrument::Patchable] {
        let obj = std::fs::read(compile(&dir, SAMPLE, "lib", instrument)).unwrap();
        let mode = match instrument {
            Instrument::Mcount => Mode::Mcount,
            Instrument::Patchable => Mode::Fentry,
        };
        let mut errors = 0;
        for i in 0..obj.len() {
            let mut bad = obj.clone();
            bad[i] ^= 0xff;
            errors += usize::from(process(&bad, mode).is_err());
        }
        assert!(errors > 0);
    }
}

/// LLVM merges identical functions into one body with several names. A body
/// is notrace when any of its names is listed, whatever the order of the
/// names in the symbol table (here the listed alias comes first in one
/// function and last in the other), in both modes.
#[test]
fn a_listed_alias_makes_the_whole_body_notrace() {
    let dir = test_dir("notrace-alias");
    let notrace = Notrace::parse("quiet_*\n");
    for mode in [Mode::Mcount, Mode::Fentry] {
        let site = match mode {
            Mode::Mcount => "push %rbp\n mov %rsp, %rbp\n call mcount@PLT\n pop %rbp",
            Mode::Fentry => "nopl 8(%rax,%rax,1)",
        };
        let mut src = String::new();
        for (first, second) in [("quiet_a", "loud_a"), ("loud_b", "quiet_b")] {
            src += &format!(
                ".section .text.{first},\"ax\",@progbits\n\
                 .globl {first}\n .type {first},@function\n\
                 .globl {second}\n .type {second},@function\n\
                 {first}:\n{second}:\n {site}\n ret\n\
                 .size {first}, .-{first}\n .size {second}, .-{second}\n"
            );
            if mode == Mode::Fentry {
                src += &format!(
                    ".section __patchable_function_entries,\"awo\",@progbits,{first}\n .quad {first}\n"
                );
            }
        }
        let asm = dir.join("alias.s");
        let obj = dir.join("alias.o");
        std::fs::write(&asm, &src).unwrap();
        stdout(Command::new("as").arg("-o").arg(&obj).arg(&asm));
        let data = std::fs::read(&obj).unwrap();
        let opts = Options {
            mode,
            notrace: notrace.clone(),
        };
        let out = recordmcount::process(&data, &opts).unwrap();
        assert_eq!(
            (out.summary.sites, out.summary.skipped),
            (0, 2),
            "{mode:?}: {src}"
        );
    }
}
