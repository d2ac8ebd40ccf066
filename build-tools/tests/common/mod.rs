//! Helpers shared by the integration tests: compiling Rust sources the way the
//! kernel is compiled, and independent views of objects from binutils
//! (`objdump`, `readelf`, `nm`, `ld`), so the tests never check our tools with
//! our own readers alone.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh directory for one test.
pub fn test_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("build-tools-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// stdout of a command that must succeed.
pub fn stdout(cmd: &mut Command) -> String {
    String::from_utf8(run(cmd).stdout).unwrap()
}

/// The kernel's target when its core library is installed, otherwise the host
/// target (same x86_64 code generation for a `#![no_std]` crate with the flags
/// below; x86_64-unknown-none is not installed on every machine).
pub fn target() -> &'static str {
    static TARGET: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    TARGET.get_or_init(|| {
        let out = Command::new("rustc")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["--print", "target-libdir", "--target", "x86_64-unknown-none"])
            .output();
        let has_core = out.ok().filter(|o| o.status.success()).is_some_and(|o| {
            let dir = String::from_utf8_lossy(&o.stdout).trim().to_string();
            std::fs::read_dir(dir).is_ok_and(|mut d| {
                d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("libcore-")))
            })
        });
        if has_core {
            "x86_64-unknown-none"
        } else {
            eprintln!("note: x86_64-unknown-none is not installed; compiling the samples for x86_64-unknown-linux-gnu");
            "x86_64-unknown-linux-gnu"
        }
    })
}

/// How the kernel crate is instrumented.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Instrument {
    Mcount,
    Patchable,
}

/// Compiles `src` like the kernel crate (code-model=kernel, static, frame
/// pointers, opt-level 2) with the given instrumentation; `crate_type` is `lib`
/// (emits an object) or `staticlib` (emits an archive).
pub fn compile(dir: &Path, src: &str, crate_type: &str, instrument: Instrument) -> PathBuf {
    let src_path = dir.join("sample.rs");
    std::fs::write(&src_path, src).unwrap();
    let (out, emit) = match crate_type {
        "staticlib" => (dir.join("libsample.a"), "link"),
        _ => (dir.join("sample.o"), "obj"),
    };
    let flag = match instrument {
        Instrument::Mcount => "-Zinstrument-mcount".to_string(),
        Instrument::Patchable => "-Zpatchable-function-entry=5".to_string(),
    };
    run(Command::new("rustc")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUSTC_BOOTSTRAP", "1")
        .args([
            "--edition",
            "2021",
            "--crate-name",
            "sample",
            "--crate-type",
            crate_type,
        ])
        .args(["--target", target(), &format!("--emit={emit}")])
        .args(["-C", "code-model=kernel", "-C", "relocation-model=static"])
        .args([
            "-C",
            "force-frame-pointers=yes",
            "-C",
            "opt-level=2",
            "-C",
            "panic=abort",
        ])
        .arg(flag)
        .arg(&src_path)
        .arg("-o")
        .arg(&out));
    out
}

/// One instruction from `objdump -drw`.
#[derive(Debug, Clone)]
pub struct Insn {
    pub section: String,
    pub offset: u64,
    pub bytes: Vec<u8>,
    pub text: String,
}

/// A relocation line from `objdump -drw`.
#[derive(Debug, Clone)]
pub struct Reloc {
    pub section: String,
    pub offset: u64,
    pub r_type: String,
    pub target: String,
}

/// A symbol label (`<name>:`) from `objdump -drw`.
#[derive(Debug, Clone)]
pub struct Label {
    pub section: String,
    pub offset: u64,
    pub name: String,
}

#[derive(Debug, Default)]
pub struct Disassembly {
    pub insns: Vec<Insn>,
    pub relocs: Vec<Reloc>,
    pub labels: Vec<Label>,
}

impl Disassembly {
    pub fn insn(&self, section: &str, offset: u64) -> Option<&Insn> {
        self.insns
            .iter()
            .find(|i| i.section == section && i.offset == offset)
    }
}

/// Runs `objdump -drw` and parses its listing.
pub fn objdump(path: &Path) -> Disassembly {
    let text = stdout(Command::new("objdump").arg("-drw").arg(path));
    let mut d = Disassembly::default();
    let mut section = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Disassembly of section ") {
            section = rest.trim_end_matches(':').to_string();
        } else if let Some(rest) = line.strip_prefix("\t\t\t") {
            // "b: R_X86_64_PLT32\tmcount-0x4"
            let (off, rest) = rest.split_once(": ").unwrap();
            let (r_type, target) = rest.split_once('\t').unwrap_or((rest, ""));
            d.relocs.push(Reloc {
                section: section.clone(),
                offset: u64::from_str_radix(off.trim(), 16).unwrap(),
                r_type: r_type.trim().to_string(),
                target: target.trim().to_string(),
            });
        } else if line.ends_with(">:") && !line.starts_with(' ') {
            let (addr, name) = line.split_once(' ').unwrap();
            d.labels.push(Label {
                section: section.clone(),
                offset: u64::from_str_radix(addr, 16).unwrap(),
                name: name
                    .trim_start_matches('<')
                    .trim_end_matches(">:")
                    .to_string(),
            });
        } else if line.starts_with(' ') && line.contains(":\t") {
            let fields: Vec<&str> = line.split('\t').collect();
            let offset = u64::from_str_radix(fields[0].trim().trim_end_matches(':'), 16).unwrap();
            let bytes = fields[1]
                .split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).unwrap())
                .collect();
            d.insns.push(Insn {
                section: section.clone(),
                offset,
                bytes,
                text: fields.get(2).unwrap_or(&"").trim().to_string(),
            });
            // With -w the relocations follow on the same line: "9: R_X86_64_PLT32\tmcount-0x4".
            for pair in fields.get(3..).unwrap_or(&[]).chunks(2) {
                let (off, r_type) = pair[0].split_once(": ").unwrap();
                d.relocs.push(Reloc {
                    section: section.clone(),
                    offset: u64::from_str_radix(off.trim(), 16).unwrap(),
                    r_type: r_type.trim().to_string(),
                    target: pair.get(1).unwrap_or(&"").trim().to_string(),
                });
            }
        }
    }
    d
}

/// The mcount sites of an unprocessed object, found from objdump alone: each
/// `call` with an R_X86_64_PLT32/PC32 relocation against mcount, as
/// (section, offset of the call).
pub fn objdump_mcount_sites(d: &Disassembly) -> BTreeSet<(String, u64)> {
    let mut sites = BTreeSet::new();
    for r in &d.relocs {
        if (r.r_type == "R_X86_64_PLT32" || r.r_type == "R_X86_64_PC32")
            && r.target.starts_with("mcount")
        {
            let insn = d
                .insn(&r.section, r.offset - 1)
                .expect("instruction at the site");
            assert!(insn.text.starts_with("call"), "{insn:?}");
            sites.insert((r.section.clone(), insn.offset));
        }
    }
    sites
}

/// The patchable function entries, from objdump alone: every function label
/// whose first instruction is the 5-byte NOP `0f 1f 44 00 08`.
pub fn objdump_fentry_sites(d: &Disassembly) -> BTreeSet<(String, u64)> {
    d.labels
        .iter()
        .filter(|l| {
            d.insn(&l.section, l.offset)
                .is_some_and(|i| i.bytes == [0x0f, 0x1f, 0x44, 0x00, 0x08])
        })
        .map(|l| (l.section.clone(), l.offset))
        .collect()
}

/// Section names by index, from `readelf -SW`.
fn readelf_section_names(path: &Path) -> Vec<(usize, String)> {
    let text = stdout(Command::new("readelf").arg("-SW").arg(path));
    text.lines()
        .filter_map(|l| {
            let (num, rest) = l.trim_start().strip_prefix('[')?.split_once(']')?;
            Some((
                num.trim().parse().ok()?,
                rest.split_whitespace().next()?.to_string(),
            ))
        })
        .collect()
}

/// Named symbols from `readelf -sW`: name -> (section index, value).
fn readelf_symbols(path: &Path) -> std::collections::HashMap<String, (usize, u64)> {
    let text = stdout(Command::new("readelf").arg("-sW").arg(path));
    text.lines()
        .filter_map(|l| {
            // Num: Value Size Type Bind Vis Ndx Name
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() != 8 || !f[0].ends_with(':') {
                return None;
            }
            let ndx = f[6].parse().ok()?;
            Some((f[7].to_string(), (ndx, u64::from_str_radix(f[1], 16).ok()?)))
        })
        .collect()
}

/// The `__mcount_loc` records of a processed object, from readelf alone:
/// (section the relocation's symbol is defined in, symbol value + addend).
pub fn readelf_records(path: &Path) -> Vec<(String, u64)> {
    let sections = readelf_section_names(path);
    let symbols = readelf_symbols(path);
    let text = stdout(Command::new("readelf").arg("-rW").arg(path));
    let mut out = Vec::new();
    let mut in_loc = false;
    for line in text.lines() {
        if line.starts_with("Relocation section") {
            in_loc = line.contains("'.rela__mcount_loc'");
            continue;
        }
        if !in_loc || !line.contains("R_X86_64_64") {
            continue;
        }
        // "...  R_X86_64_64  0000000000000000 .text.foo + a"
        let fields: Vec<&str> = line.split_whitespace().collect();
        let n = fields.len();
        assert_eq!(fields[n - 2], "+", "{line}");
        let addend = u64::from_str_radix(fields[n - 1], 16).unwrap();
        // readelf prints a section symbol as its section's name.
        let name = fields[n - 3];
        out.push(match symbols.get(name) {
            Some(&(ndx, value)) => {
                let section = sections.iter().find(|(i, _)| *i == ndx).unwrap();
                (section.1.clone(), value + addend)
            }
            None => (name.to_string(), addend),
        });
    }
    out
}

/// Section flags column of `readelf -SW` for every section called `name`.
pub fn section_flags(path: &Path, name: &str) -> Vec<String> {
    let text = stdout(Command::new("readelf").arg("-SW").arg(path));
    text.lines()
        .filter_map(|l| {
            let l = l.split_once("] ")?.1;
            let fields: Vec<&str> = l.split_whitespace().collect();
            (fields.first() == Some(&name)).then(|| {
                // Name Type Address Off Size ES Flg Lk Inf Al; Flg may be empty.
                if fields.len() == 10 {
                    fields[6].to_string()
                } else {
                    String::new()
                }
            })
        })
        .collect()
}

/// The linker script of the tests: a miniature of the kernel's.
pub const LINKER_SCRIPT: &str = "
ENTRY(entry)
SECTIONS {
  . = 0x200000;
  .text : { *(.text .text.*) }
  .rodata : { *(.rodata .rodata.*) }
  .data : { *(.data .data.*) }
  .bss : { *(.bss .bss.*) }
  . = ALIGN(8);
  .mcount_loc : { __start_mcount_loc = .; KEEP(*(__mcount_loc)) __stop_mcount_loc = .; }
  . = ALIGN(8);
  .kallsyms : { KEEP(*(.kallsyms)) }
  /DISCARD/ : { *(.eh_frame) *(.comment) }
}
";

/// Address given to `mcount` in the test links.
pub const MCOUNT_ADDR: u64 = 0x1f0000;

/// Links `inputs` with [`LINKER_SCRIPT`] into `out`.
pub fn link(dir: &Path, inputs: &[&Path], out: &Path) {
    let script = dir.join("link.ld");
    std::fs::write(&script, LINKER_SCRIPT).unwrap();
    run(Command::new("ld")
        .arg("-T")
        .arg(&script)
        .arg(format!("--defsym=mcount={MCOUNT_ADDR:#x}"))
        .arg("-o")
        .arg(out)
        .args(inputs));
}

/// `nm -S --defined-only` of a linked file: (address, size, raw name) of the
/// text symbols that have a size.
pub fn nm_functions(path: &Path) -> Vec<(u64, u64, String)> {
    let text = stdout(Command::new("nm").args(["-S", "--defined-only"]).arg(path));
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 4 && (f[2] == "T" || f[2] == "t")).then(|| {
                (
                    u64::from_str_radix(f[0], 16).unwrap(),
                    u64::from_str_radix(f[1], 16).unwrap(),
                    f[3].to_string(),
                )
            })
        })
        .collect()
}

/// The contents of section `name` of an ELF file and its address.
pub fn section_bytes(path: &Path, name: &str) -> Option<(u64, Vec<u8>)> {
    use object::{Object, ObjectSection};
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let s = file.section_by_name(name)?;
    Some((s.address(), s.data().unwrap().to_vec()))
}

/// The sample crate: traced functions, a notrace module, a trait method, a
/// generic, and an assembly entry point without size.
pub const SAMPLE: &str = r#"
#![no_std]
use core::hint::black_box;

pub mod traced {
    use core::hint::black_box;
    #[inline(never)]
    pub fn add(a: u64, b: u64) -> u64 { black_box(a).wrapping_add(b) }
    #[inline(never)]
    pub fn mul(a: u64, b: u64) -> u64 { black_box(a).wrapping_mul(b) }
    #[inline(never)]
    pub fn widen<T: Copy + Into<u64>>(x: T) -> u64 { black_box(x).into() + 1 }
    #[inline(never)]
    pub fn uses_generic(a: u32, b: u16) -> u64 { widen(a) + widen(b) }
}

pub mod quiet {
    use core::hint::black_box;
    #[inline(never)]
    pub fn hidden(a: u64) -> u64 { black_box(a) ^ 0x55 }
    #[inline(never)]
    pub fn also(a: u64) -> u64 { super::traced::add(black_box(a), 1) }
}

pub trait Shape { fn area(&self) -> u64; }
pub struct Point(pub u64);
impl Shape for Point {
    #[inline(never)]
    fn area(&self) -> u64 { black_box(self.0).wrapping_mul(3) }
}

core::arch::global_asm!(
    ".globl asm_entry",
    "asm_entry:",
    "    nop",
    "    nop",
    "    ret",
);

#[no_mangle]
pub extern "C" fn entry(x: u64) -> u64 {
    let point = Point(x);
    let shape: &dyn Shape = black_box(&point);
    traced::uses_generic(x as u32, x as u16)
        + traced::mul(x, 3)
        + quiet::also(x)
        + quiet::hidden(x)
        + shape.area()
}
"#;

/// Extra items for a staticlib (needs a panic handler).
pub const STATICLIB_EXTRA: &str = r#"
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! { loop {} }
"#;

/// Path of one of our binaries.
pub fn tool(name: &str) -> PathBuf {
    match name {
        "recordmcount" => PathBuf::from(env!("CARGO_BIN_EXE_recordmcount")),
        "kallsyms" => PathBuf::from(env!("CARGO_BIN_EXE_kallsyms")),
        "sorttable" => PathBuf::from(env!("CARGO_BIN_EXE_sorttable")),
        _ => panic!("unknown tool {name}"),
    }
}

/// Runs one of our binaries; returns (success, stdout, stderr).
pub fn run_tool(name: &str, args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let out = Command::new(tool(name)).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
