//! QEMU tests of the instrumented build: the call sites recorded
//! at build time against an independent scan of the compiler's output (the
//! `call mcount`s of the kernel ELF; the patchable entries of the objects
//! before recordmcount runs), the sorted table, the boot-time
//! NOP conversion read back by the kernel's `ftrace_check`, and the listing
//! of `available_filter_functions` in both instrumentation modes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use build_tools::names::display_name;
use build_tools::recordmcount::{read_records, Notrace};
use build_tools::sorttable::{first_descent, mcount_loc};
use object::read::archive::ArchiveFile;
use object::{Object, ObjectSection, ObjectSymbol, SectionIndex, SymbolKind};
use tests::{kernel_elf, root, Kernel};

const T: &str = "/tracing";

fn lines(s: &str) -> Vec<String> {
    s.replace('\r', "").lines().map(str::to_string).collect()
}

/// `objdump -d` of the kernel built in `mode`.
fn disassemble(mode: &str) -> String {
    let elf = kernel_elf(mode);
    let out = Command::new("objdump")
        .args(["-d", "-w"])
        .arg(&elf)
        .output()
        .expect("objdump (binutils) is needed for this test");
    assert!(out.status.success(), "objdump failed on {}", elf.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Independent scan, mcount mode: the address of every call to `mcount` in
/// the linked image (sites are NOPed only at boot; recordmcount already
/// NOPed the notrace ones, so every remaining call is a recorded site).
/// Calls are matched by their target address, not by the name objdump
/// prints: a linker-script label at the same address (`__irqentry_text_end`
/// when `mcount` follows `.text.irqentry`) may be the name it picks.
fn mcount_calls(elf: &Path, disasm: &str) -> BTreeSet<u64> {
    let bytes = std::fs::read(elf).unwrap();
    let obj = object::File::parse(&*bytes).expect("an ELF");
    let mcount = obj
        .symbols()
        .find(|s| s.name() == Ok("mcount"))
        .expect("the kernel defines mcount")
        .address();
    let target = format!("{mcount:x}");
    disasm
        .lines()
        .filter(|l| {
            let mut f = l.split('\t');
            let (_, _, insn) = (f.next(), f.next(), f.next().unwrap_or(""));
            let mut words = insn.split_whitespace();
            words.next() == Some("call") && words.next() == Some(target.as_str())
        })
        .map(|l| u64::from_str_radix(l.trim().split(':').next().unwrap(), 16).unwrap())
        .collect()
}

/// The compiler's marker of a patchable entry (`-Z patchable-function-entry=5`
/// emits `nopl 0x8(%rax,%rax,1)`); recordmcount rewrites it in the sites it
/// records, so it is looked for only in the objects recordmcount reads.
const COMPILER_NOP5: [u8; 5] = [0x0f, 0x1f, 0x44, 0x00, 0x08];

/// The sites of one archive of kernel objects, by member (name and
/// occurrence) then (text section, offset).
type SitesByMember = BTreeMap<(String, usize), BTreeSet<(String, u64)>>;

/// Calls `f(member key, object bytes)` for each ELF object of the archive.
fn for_each_object(path: &Path, mut f: impl FnMut((String, usize), &[u8])) {
    let ar = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let archive = ArchiveFile::parse(&*ar).expect("an archive");
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for member in archive.members() {
        let member = member.unwrap();
        let name = String::from_utf8_lossy(member.name()).into_owned();
        let bytes = member.data(&*ar).unwrap();
        if !bytes.starts_with(b"\x7fELF") {
            continue; // e.g. the rustc metadata member
        }
        let n = seen.entry(name.clone()).or_default();
        *n += 1;
        f((name, *n), bytes);
    }
}

/// Independent scan, fentry mode: in each object of the kernel crate as the
/// compiler left it (`libkernel.a`, which recordmcount reads and never
/// writes), every function that begins with the compiler's NOP, less the
/// notrace ones. A body LLVM gave several names is notrace if any of them
/// is listed.
fn compiler_sites(lib: &Path) -> SitesByMember {
    let list = std::fs::read_to_string(root().join("kernel/notrace.list")).unwrap();
    let notrace = Notrace::parse(&list);
    let mut out = SitesByMember::new();
    for_each_object(lib, |key, bytes| {
        let obj = object::File::parse(bytes).expect("an ELF object");
        // Function names by (section, offset).
        let mut funcs: BTreeMap<(usize, u64), Vec<String>> = BTreeMap::new();
        for sym in obj.symbols() {
            if sym.kind() == SymbolKind::Text && sym.is_definition() {
                if let Some(i) = sym.section_index() {
                    let name = display_name(sym.name().unwrap());
                    funcs.entry((i.0, sym.address())).or_default().push(name);
                }
            }
        }
        let sites = out.entry(key).or_default();
        for ((i, at), names) in funcs {
            let section = obj.section_by_index(SectionIndex(i)).unwrap();
            let code = section.data().unwrap();
            let at_code = code.get(at as usize..at as usize + 5);
            if at_code == Some(&COMPILER_NOP5[..]) && !names.iter().any(|n| notrace.matches(n)) {
                sites.insert((section.name().unwrap().to_string(), at));
            }
        }
    });
    out
}

/// The sites recordmcount recorded in each object of its output.
fn recorded_sites(lib_mc: &Path) -> SitesByMember {
    let mut out = SitesByMember::new();
    for_each_object(lib_mc, |key, bytes| {
        let records = read_records(bytes).unwrap_or_else(|e| panic!("{key:?}: {e}"));
        out.entry(key).or_default().extend(records);
    });
    out
}

/// Boots `mode`, checks the sites and returns available_filter_functions.
fn listing_and_checks(mode: &str, expected_sites: &BTreeSet<u64>) -> Vec<String> {
    let mut k = Kernel::boot_mode(mode, &["--smp", "4"]);
    let boot = k.log();
    let n = expected_sites.len();
    assert!(n >= 300, "only {n} call sites in the ELF");
    assert!(
        boot.contains(&format!(
            "ftrace: {n} sites ({mode} mode) converted to NOPs"
        )),
        "{boot}"
    );

    // The listing, and the addresses behind it, equal the independent scan.
    let funcs = lines(&k.run(&format!("cat {T}/available_filter_functions")));
    assert_eq!(
        funcs.len(),
        n,
        "available_filter_functions vs call sites in the ELF"
    );
    let addrs: BTreeSet<u64> = lines(&k.run(&format!("cat {T}/available_filter_functions_addrs")))
        .iter()
        .map(|l| u64::from_str_radix(l.split(' ').next().unwrap(), 16).unwrap())
        .collect();
    assert_eq!(
        &addrs, expected_sites,
        "recorded sites differ from the ELF scan"
    );
    let total = k.run(&format!("cat {T}/dyn_ftrace_total_info"));
    assert!(total.starts_with(&format!("{n} ")), "{total}");

    // Known functions listed, notrace ones not.
    for f in [
        "kernel::shell::work::compute_leaf",
        "kernel::shell::work::compute_iteration",
        "kernel::fs::vfs::open",
    ] {
        assert!(funcs.iter().any(|l| l == f), "{f} is not listed");
    }
    for f in [
        "kernel::trace::functions::function_trace_call",
        "kernel::trace::ftrace::ftrace_init",
        "kernel::arch::x86_64::text_poke::poke_int3_handler",
        "interrupt_dispatch",
        "kernel::time::now_ns",
    ] {
        assert!(!funcs.iter().any(|l| l == f), "notrace {f} is listed");
    }
    // Nothing written in kernel::trace is traceable (generic code of alloc
    // instantiated for its types, e.g. `<alloc::raw_vec::RawVec<kernel::
    // trace::..>>::grow_one`, is, as Linux traces lib/).
    let own: Vec<&String> = funcs
        .iter()
        .filter(|l| l.starts_with("kernel::trace::") || l.starts_with("<kernel::trace::"))
        .collect();
    assert!(
        own.is_empty(),
        "traceable functions of kernel::trace: {own:?}"
    );

    // After boot every site holds the NOP.
    let check = k.run("ftrace_check");
    assert_eq!(
        check,
        format!("ftrace_check: {n} sites, 0 bad, 0 call ftrace_caller, {n} nop\n")
    );
    // With the function tracer on, every site calls ftrace_caller...
    assert_eq!(k.run(&format!("echo function > {T}/current_tracer")), "");
    let check = k.run("ftrace_check");
    assert_eq!(
        check,
        format!("ftrace_check: {n} sites, 0 bad, {n} call ftrace_caller, 0 nop\n")
    );
    assert_eq!(
        lines(&k.run(&format!("cat {T}/enabled_functions"))).len(),
        n
    );
    // ... with a filter only the selected ones ...
    assert_eq!(
        k.run(&format!(
            "echo 'kernel::shell::work::compute_*' > {T}/set_ftrace_filter"
        )),
        ""
    );
    let selected = funcs
        .iter()
        .filter(|l| l.starts_with("kernel::shell::work::compute_"))
        .count();
    assert!(selected >= 4);
    let check = k.run("ftrace_check");
    assert_eq!(
        check,
        format!(
            "ftrace_check: {n} sites, 0 bad, {selected} call ftrace_caller, {} nop\n",
            n - selected
        )
    );
    assert_eq!(
        lines(&k.run(&format!("cat {T}/enabled_functions"))).len(),
        selected
    );
    // ... and after `nop` every site is a NOP again.
    assert_eq!(k.run(&format!("echo nop > {T}/current_tracer")), "");
    let check = k.run("ftrace_check");
    assert_eq!(
        check,
        format!("ftrace_check: {n} sites, 0 bad, 0 call ftrace_caller, {n} nop\n")
    );
    assert_eq!(k.run(&format!("cat {T}/enabled_functions")), "");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
    funcs
}

#[test]
fn mcount_sites_match_the_elf_and_are_nops_after_boot() {
    let sites = mcount_calls(&kernel_elf("mcount"), &disassemble("mcount"));
    listing_and_checks("mcount", &sites);
}

/// fentry mode. The compiler's patchable entries are found in its objects
/// before recordmcount runs, independently of what recordmcount writes: they
/// must be exactly the sites it recorded (a missed site fails here). The
/// linked kernel's table, which the linker builds from those records, is then
/// what the kernel lists and patches.
#[test]
fn fentry_sites_match_the_elf_and_are_nops_after_boot() {
    let elf = kernel_elf("fentry");
    let build = root().join("target/kernel-build/fentry/x86_64-unknown-none/release");
    let expected = compiler_sites(&build.join("libkernel.a"));
    let recorded = recorded_sites(&elf.with_file_name("libkernel.mc.a"));
    let total: usize = expected.values().map(BTreeSet::len).sum();
    assert!(total >= 300, "only {total} patchable entries");
    for (member, sites) in &expected {
        let got = recorded.get(member).cloned().unwrap_or_default();
        let missed: Vec<_> = sites.difference(&got).collect();
        let extra: Vec<_> = got.difference(sites).collect();
        assert!(
            missed.is_empty() && extra.is_empty(),
            "{member:?}: not recorded {missed:?}; recorded, not a traced compiler site {extra:?}"
        );
    }
    assert!(recorded.keys().all(|m| expected.contains_key(m)));
    let table: BTreeSet<u64> = mcount_loc(&std::fs::read(&elf).unwrap())
        .unwrap()
        .into_iter()
        .collect();
    listing_and_checks("fentry", &table);
}

/// boot/build.sh sorts the linked kernel's `__mcount_loc` (sorttable): the
/// final table holds exactly the entries of the first, unsorted link, in
/// ascending order.
#[test]
fn the_built_kernels_mcount_loc_is_sorted() {
    let elf = kernel_elf("mcount");
    let pass1 = std::fs::read(elf.with_file_name("kernel.pass1.elf")).unwrap();
    let final_table = mcount_loc(&std::fs::read(&elf).unwrap()).unwrap();
    let mut unsorted = mcount_loc(&pass1).unwrap();
    assert!(unsorted.len() > 300);
    assert_eq!(first_descent(&final_table), None, "not sorted");
    unsorted.sort();
    assert_eq!(final_table, unsorted);
}

/// Both modes list the same functions. The two builds are compiled with
/// different flags, so the optimiser may inline or outline a handful of
/// generic helpers differently (at most 5% of the list: the event layer's
/// monomorphised tracepoint code made 16 of 691 differ; with the kprobe
/// core, 35 of 892, all generic instances or helpers inlined in one build,
/// which the checks below confirm); anything beyond that is a bug.
#[test]
fn both_modes_list_the_same_functions() {
    let m = lines_of_mode("mcount");
    let f = lines_of_mode("fentry");
    let ms: BTreeSet<&String> = m.iter().collect();
    let fs: BTreeSet<&String> = f.iter().collect();
    let only_m: Vec<_> = ms.difference(&fs).collect();
    let only_f: Vec<_> = fs.difference(&ms).collect();
    eprintln!("only in mcount: {only_m:#?}\nonly in fentry: {only_f:#?}");
    let diff = only_m.len() + only_f.len();
    assert!(
        diff * 20 <= m.len(),
        "{diff} functions differ between the modes"
    );
    // A function written in the kernel's own modules (not a generic
    // instance) that is listed in one mode only must have been inlined away
    // in the other (no symbol of that name in the other mode's ELF), or
    // folded there into a function of identical code that is listed under
    // its own name (two symbols at one address: the listing names one).
    let syms_m = function_symbols("mcount");
    let syms_f = function_symbols("fentry");
    for (name, other, syms, listed) in only_m
        .iter()
        .map(|n| (n, "fentry", &syms_f, &fs))
        .chain(only_f.iter().map(|n| (n, "mcount", &syms_m, &ms)))
    {
        let generic = name.starts_with('<')
            || name.contains("::<")
            || name.starts_with("core::")
            || name.starts_with("alloc::");
        let folded = |addr: u64| {
            syms.iter()
                .any(|(n, &a)| a == addr && n != name.as_str() && listed.contains(n))
        };
        assert!(
            generic || syms.get(name.as_str()).is_none_or(|&a| folded(a)),
            "{name} is a function of the {other} kernel but is not listed there"
        );
    }
}

/// The demangled names of the functions defined in `mode`'s kernel ELF,
/// with their addresses.
fn function_symbols(mode: &str) -> BTreeMap<String, u64> {
    let out = std::process::Command::new("nm")
        .args(["-C", "--defined-only"])
        .arg(kernel_elf(mode))
        .output()
        .expect("nm");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ' ');
            let (addr, kind, name) = (f.next()?, f.next()?, f.next()?);
            matches!(kind, "t" | "T")
                .then(|| Some((name.to_string(), u64::from_str_radix(addr, 16).ok()?)))?
        })
        .collect()
}

fn lines_of_mode(mode: &str) -> Vec<String> {
    let mut k = Kernel::boot_mode(mode, &["--smp", "2"]);
    let v = lines(&k.run(&format!("cat {T}/available_filter_functions")));
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
    v
}
