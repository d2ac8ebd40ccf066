//! kallsyms on a small linked kernel, checked against nm and read back with the
//! kernel's own reader (tracer::kallsyms).

mod common;

use common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use tracer::kallsyms::KallSyms;

fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> &OsStr {
    s.as_ref()
}

fn kallsyms(args: &[&OsStr]) -> String {
    let (ok, out, err) = run_tool("kallsyms", args);
    assert!(ok, "kallsyms failed: {err}");
    out
}

/// Compiles and processes the sample, links it, and returns the ELF path.
fn linked_sample(dir: &Path) -> PathBuf {
    let obj = compile(dir, SAMPLE, "lib", Instrument::Mcount);
    let out = dir.join("traced.o");
    let (ok, _, err) = run_tool(
        "recordmcount",
        &[os("-o"), out.as_os_str(), obj.as_os_str()],
    );
    assert!(ok, "{err}");
    let elf = dir.join("pass1.elf");
    link(dir, &[&out], &elf);
    elf
}

/// The `.kallsyms` blob of a file (object or linked kernel).
fn blob_of(path: &Path) -> Vec<u8> {
    section_bytes(path, ".kallsyms")
        .expect(".kallsyms section")
        .1
}

#[test]
fn table_matches_nm_and_looks_up() {
    let dir = test_dir("kallsyms-table");
    let elf = linked_sample(&dir);
    let ko = dir.join("kallsyms.o");
    let summary = kallsyms(&[os("-o"), ko.as_os_str(), elf.as_os_str()]);

    // The object: relocatable x86_64, one allocated .kallsyms section, align 8.
    {
        use object::{Object, ObjectSection};
        let data = std::fs::read(&ko).unwrap();
        let file = object::File::parse(&*data).unwrap();
        assert_eq!(file.kind(), object::ObjectKind::Relocatable);
        assert_eq!(file.architecture(), object::Architecture::X86_64);
        let s = file.section_by_name(".kallsyms").unwrap();
        assert_eq!(s.align(), 8);
        assert_eq!(section_flags(&ko, ".kallsyms"), ["A"]);
    }
    let blob = blob_of(&ko);
    let syms = KallSyms::parse(&blob).unwrap();

    // Every sized function nm sees is there with its address, size and the
    // demangled name (nm --demangle is independent of rustc-demangle's use here).
    let nm = nm_functions(&elf);
    assert!(nm.len() >= 9, "{nm:?}");
    let demangled = stdout(
        std::process::Command::new("nm")
            .args(["-S", "--defined-only", "--demangle=rust"])
            .arg(&elf),
    );
    for (addr, size, raw) in &nm {
        let s = syms
            .lookup(*addr)
            .unwrap_or_else(|| panic!("{raw} missing"));
        assert_eq!(
            (s.addr, u64::from(s.size), s.offset),
            (*addr, *size, 0),
            "{raw}"
        );
        // nm prints "addr size T name"; with spaces made `_` it must be our name.
        let prefix = format!("{addr:016x} {size:016x} ");
        let line = demangled.lines().find(|l| l.starts_with(&prefix)).unwrap();
        let nm_name = line.splitn(4, ' ').nth(3).unwrap().replace(' ', "_");
        assert_eq!(s.name, nm_name, "{raw}");
    }
    assert!(
        summary.contains(&format!("{} functions", syms.len())),
        "{summary}"
    );

    // Names are demangled, hash-free single tokens.
    let names: Vec<&str> = syms.iter().map(|s| s.name).collect();
    for want in [
        "sample::traced::add",
        "sample::quiet::hidden",
        "<sample::Point_as_sample::Shape>::area",
        "sample::traced::widen::<u32>",
        "entry",
        "asm_entry",
    ] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
    assert!(
        names.iter().all(|n| !n.contains(' ') && !n.contains("[")),
        "{names:?}"
    );

    // Lookups inside functions give function+offset.
    let add = syms.find("sample::traced::add").unwrap();
    let inside = syms.lookup(add.addr + 3).unwrap();
    assert_eq!((inside.name, inside.offset), ("sample::traced::add", 3));
    let past = syms.lookup(add.addr + u64::from(add.size));
    assert!(past.is_none_or(|s| s.name != add.name), "{past:?}");

    // The sizeless asm entry point got the size up to the next symbol.
    let asm = syms.find("asm_entry").unwrap();
    assert!(asm.size >= 3, "{asm:?}");
    let next = syms.iter().find(|s| s.addr > asm.addr).unwrap();
    assert_eq!(asm.addr + u64::from(asm.size), next.addr);
    assert_eq!(syms.lookup(asm.addr + 2).unwrap().name, "asm_entry");

    // Every __mcount_loc entry of the kernel is inside a known function.
    let (_, table) = section_bytes(&elf, ".mcount_loc").unwrap();
    for c in table.chunks(8) {
        let ip = u64::from_le_bytes(c.try_into().unwrap());
        let s = syms.lookup(ip).unwrap();
        assert!(s.offset > 0 && s.offset < u64::from(s.size), "{s:?}");
    }
}

#[test]
fn second_link_moves_nothing() {
    let dir = test_dir("kallsyms-compare");
    let elf = linked_sample(&dir);
    let ko = dir.join("kallsyms.o");
    kallsyms(&[os("-o"), ko.as_os_str(), elf.as_os_str()]);
    let traced = dir.join("traced.o");
    let elf2 = dir.join("pass2.elf");
    link(&dir, &[&traced, &ko], &elf2);

    let out = kallsyms(&[os("--compare"), elf.as_os_str(), elf2.as_os_str()]);
    assert!(out.contains("identical"), "{out}");

    // The blob linked into the kernel parses and agrees with the kernel's symbols.
    let blob = blob_of(&elf2);
    let syms = KallSyms::parse(&blob).unwrap();
    let listed = kallsyms(&[os("--list"), elf2.as_os_str()]);
    assert_eq!(listed.lines().count(), syms.len());
    for (line, s) in listed.lines().zip(syms.iter()) {
        assert_eq!(line, format!("{:016x} {:x} {}", s.addr, s.size, s.name));
    }

    // Moving the text is caught.
    let moved = dir.join("moved.elf");
    let script = dir.join("moved.ld");
    std::fs::write(&script, LINKER_SCRIPT.replace("0x200000", "0x300000")).unwrap();
    let status = std::process::Command::new("ld")
        .arg("-T")
        .arg(&script)
        .arg(format!("--defsym=mcount={MCOUNT_ADDR:#x}"))
        .arg("-o")
        .arg(&moved)
        .arg(&traced)
        .status()
        .unwrap();
    assert!(status.success());
    let (ok, _, err) = run_tool(
        "kallsyms",
        &[os("--compare"), elf.as_os_str(), moved.as_os_str()],
    );
    assert!(!ok);
    assert!(err.contains("functions differ"), "{err}");
}

#[test]
fn empty_table_object() {
    let dir = test_dir("kallsyms-empty");
    let ko = dir.join("empty.o");
    kallsyms(&[os("--empty"), os("-o"), ko.as_os_str()]);
    let blob = blob_of(&ko);
    assert!(KallSyms::parse(&blob).unwrap().is_empty());
}

#[test]
fn bad_inputs_are_errors() {
    let dir = test_dir("kallsyms-bad");
    // A relocatable object is not a linked kernel.
    let obj = compile(&dir, SAMPLE, "lib", Instrument::Mcount);
    let e = build_tools::kallsyms::functions(&std::fs::read(&obj).unwrap()).unwrap_err();
    assert!(e.message().contains("not a linked"), "{e}");
    assert!(build_tools::kallsyms::functions(b"junk").is_err());
    assert!(build_tools::kallsyms::functions(b"").is_err());
    let elf = linked_sample(&dir);
    let data = std::fs::read(&elf).unwrap();
    for len in (0..data.len()).step_by(97) {
        let _ = build_tools::kallsyms::functions(&data[..len]);
    }
    assert!(build_tools::kallsyms::functions(&data[..data.len() - 1]).is_err());
    // Corrupting any byte gives Ok or Err, never a panic.
    for i in 0..data.len() {
        let mut bad = data.clone();
        bad[i] ^= 0xff;
        if let Ok(funcs) = build_tools::kallsyms::functions(&bad) {
            let _ = build_tools::kallsyms::blob(&funcs);
        }
    }

    let junk = dir.join("junk.elf");
    std::fs::write(&junk, b"junk").unwrap();
    let (ok, _, err) = run_tool(
        "kallsyms",
        &[os("-o"), dir.join("x.o").as_os_str(), junk.as_os_str()],
    );
    assert!(!ok && err.contains("junk.elf"), "{err}");
    let (ok, _, _) = run_tool("kallsyms", &[os("--bogus")]);
    assert!(!ok);
}
