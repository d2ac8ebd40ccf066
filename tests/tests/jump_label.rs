//! Static keys in the booted kernel, both instrumentation modes: the
//! `__jump_table` of the ELF read independently (sorted by key and site,
//! every site the 5-byte NOP in the image and in objdump, the self-test
//! key's sites), the boot line that counts them, then the self-test key
//! enabled and disabled with `jump_label_check` reading every site back and
//! `jump_label_test run` showing whether the guarded code runs, and
//! `jump_label_test int3` running the sites while they hold int3, and
//! `jump_label_test stress` running them on 3 CPUs while the key toggles.

use std::collections::BTreeMap;
use std::process::Command;

use build_tools::sorttable::jump_table;
use object::{Object, ObjectSection, ObjectSymbol};
use tests::{kernel_elf, Kernel};

/// The NOP of `arch_static_branch`.
const NOP5: [u8; 5] = [0x0f, 0x1f, 0x44, 0x00, 0x00];
/// Sites of the self-test key (kernel/src/jump_label.rs: TEST_SITES).
const TEST_SITES: usize = 5;

/// Every `__jump_table` entry of the ELF: sorted, on NOPs, grouped by key.
/// Returns (sites, keys, sites of the self-test key).
fn check_elf(mode: &str) -> (usize, usize, usize) {
    let elf = kernel_elf(mode);
    let data = std::fs::read(&elf).unwrap();
    let entries = jump_table(&data)
        .expect("readable __jump_table")
        .expect("the kernel has __start___jump_table/__stop___jump_table");
    assert!(entries.len() >= TEST_SITES, "{mode}: {entries:?}");
    assert!(
        entries
            .windows(2)
            .all(|w| (w[0].key, w[0].code) < (w[1].key, w[1].code)),
        "{mode}: __jump_table not sorted by (key, site)"
    );
    let obj = object::File::parse(&*data).unwrap();
    // Each site's bytes in the image.
    let text = obj.section_by_name(".text").unwrap();
    let bytes = text.data().unwrap();
    for e in &entries {
        let off = (e.code - text.address()) as usize;
        assert_eq!(bytes[off..off + 5], NOP5, "{mode}: site {:#x}", e.code);
        assert!(!e.branch, "{mode}: every site is static_branch_unlikely");
        assert!(
            e.target != e.code
                && e.target >= text.address()
                && e.target < text.address() + text.size(),
            "{mode}: target {:#x} of site {:#x}",
            e.target,
            e.code
        );
    }
    // objdump sees the NOP at each site (an instruction boundary).
    let out = Command::new("objdump")
        .args(["-d", "-w", "--no-show-raw-insn"])
        .arg(&elf)
        .output()
        .expect("objdump");
    let dis = String::from_utf8_lossy(&out.stdout);
    let insns: BTreeMap<u64, &str> = dis
        .lines()
        .filter_map(|l| {
            let (a, rest) = l.split_once(":\t")?;
            Some((u64::from_str_radix(a.trim(), 16).ok()?, rest.trim()))
        })
        .collect();
    for e in &entries {
        assert_eq!(
            insns.get(&e.code).copied(),
            Some("nopl   0x0(%rax,%rax,1)"),
            "{mode}: objdump at site {:#x}",
            e.code
        );
    }
    // A function with a disabled static branch runs at most one instruction
    // more than its twin without (kernel/src/trace/bench.rs): its path to
    // `ret` holds the site's NOP and the probe call is after the `ret`.
    let hot_path = |name: &str| -> Vec<(u64, &str)> {
        let sym = obj
            .symbols()
            .find(|s| s.name().is_ok_and(|n| n.contains(name)))
            .unwrap_or_else(|| panic!("{mode}: no symbol {name}"));
        let mut path = Vec::new();
        for (&a, &insn) in insns.range(sym.address()..sym.address() + sym.size()) {
            path.push((a, insn));
            if insn == "ret" {
                break;
            }
        }
        path
    };
    let off = hot_path("19tracepoint_leaf_off");
    let base = hot_path("20tracepoint_leaf_base");
    assert!(
        off.len() <= base.len() + 1,
        "{mode}: disabled branch path {off:?} against {base:?}"
    );
    assert!(
        off.iter()
            .any(|(a, _)| entries.iter().any(|e| e.code == *a)),
        "{mode}: no jump table site on the path of tracepoint_leaf_off: {off:?}"
    );
    assert!(
        !off.iter().any(|(_, i)| i.starts_with("call")),
        "{mode}: {off:?}"
    );
    let key = obj
        .symbols()
        .find(|s| s.name().is_ok_and(|n| n.contains("19JUMP_LABEL_TEST_KEY")))
        .expect("JUMP_LABEL_TEST_KEY symbol")
        .address();
    let mut keys: Vec<u64> = entries.iter().map(|e| e.key).collect();
    keys.dedup();
    let test = entries.iter().filter(|e| e.key == key).count();
    (entries.len(), keys.len(), test)
}

fn check(mode: &str) {
    let (sites, keys, test) = check_elf(mode);
    assert_eq!(test, TEST_SITES, "{mode}: sites of JUMP_LABEL_TEST_KEY");
    let mut k = Kernel::boot_mode(mode, &["--smp", "4"]);
    assert!(
        k.log()
            .contains(&format!("jump_label: {sites} sites, {keys} keys")),
        "{mode}: boot line\n{}",
        k.log()
    );
    let check_line = |jmp: usize| {
        format!(
            "jump_label_check: {sites} sites, {keys} keys, 0 bad, {jmp} jmp, {} nop\n",
            sites - jmp
        )
    };
    // Other keys may be on at boot; the test key is off.
    let boot = k.run("jump_label_check");
    let jmp0: usize = boot
        .split(", ")
        .find_map(|f| f.strip_suffix(" jmp"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{mode}: {boot}"));
    assert_eq!(boot, check_line(jmp0));
    assert_eq!(
        k.run("jump_label_test run"),
        format!("jump_label_test: key off, {TEST_SITES} sites, 0 of {TEST_SITES} ran: ok\n")
    );
    for _ in 0..2 {
        // Enabling patches the key's sites to jmp, and only them.
        assert_eq!(k.run("jump_label_test enable"), "");
        assert_eq!(k.run("jump_label_check"), check_line(jmp0 + TEST_SITES));
        assert_eq!(
            k.run("jump_label_test run"),
            format!(
                "jump_label_test: key on, {TEST_SITES} sites, {TEST_SITES} of {TEST_SITES} ran: ok\n"
            )
        );
        // Enabling twice changes nothing.
        assert_eq!(k.run("jump_label_test enable"), "");
        assert_eq!(k.run("jump_label_check"), check_line(jmp0 + TEST_SITES));
        assert_eq!(k.run("jump_label_test disable"), "");
        assert_eq!(k.run("jump_label_check"), check_line(jmp0));
        assert_eq!(
            k.run("jump_label_test run"),
            format!("jump_label_test: key off, {TEST_SITES} sites, 0 of {TEST_SITES} ran: ok\n")
        );
    }
    assert_eq!(k.run("jump_label_test disable"), "");
    // A CPU that runs into the sites while they hold int3 (the patcher held
    // there) goes where the new instruction leads, in both directions.
    let int3 = k.run_with_timeout("jump_label_test int3", std::time::Duration::from_secs(120));
    for dir in ["enable (nop -> jmp)", "disable (jmp -> nop)"] {
        assert!(
            int3.lines().any(|l| l.starts_with(&format!(
                "jump_label_test int3: {dir}: {TEST_SITES} sites at int3, helper on cpu1: int3 hits "
            )) && l.ends_with(": ok")),
            "{mode}: {int3}"
        );
    }
    assert!(int3.contains(&check_line(jmp0)), "{mode}: {int3}");
    assert!(
        int3.ends_with("jump_label_test int3: PASS\n"),
        "{mode}: {int3}"
    );
    // A site that holds something else: enabling fails with EIO and writes
    // nothing (Linux's "unexpected op"), then the site is put back.
    let unexpected = k.run("jump_label_test unexpected");
    assert!(
        unexpected.contains(&format!(
            "jump_label_test unexpected: enable: Input/output error, key off, 1 bad site(s), 0 of {TEST_SITES} ran\n"
        )) && unexpected.contains("jump_label: unexpected op at ")
            && unexpected.ends_with(&format!(
                "{}jump_label_test unexpected: PASS\n",
                check_line(jmp0)
            )),
        "{mode}: {unexpected}"
    );
    // Every other CPU runs the sites while this one toggles the key: in a
    // stable epoch all or none of the branches are taken, every result is
    // right (the stress command checks both and says PASS or FAIL).
    let stress = k.run_with_timeout(
        "jump_label_test stress 100",
        std::time::Duration::from_secs(300),
    );
    assert!(
        stress.starts_with("jump_label_test stress: 100 toggles, ")
            && stress.contains(" on 3 CPUs (")
            && stress.contains(", 0 violations, 0 wrong results, 0 errors\n"),
        "{mode}: {stress}"
    );
    assert!(stress.contains(&check_line(jmp0)), "{mode}: {stress}");
    assert!(
        stress.ends_with("jump_label_test stress: PASS\n"),
        "{mode}: {stress}"
    );
    assert_eq!(
        k.run("jump_label_test bogus"),
        "usage: jump_label_test enable|disable|run|int3|unexpected|stress [N]\n"
    );
    assert_eq!(
        k.run("jump_label_test stress x"),
        "usage: jump_label_test stress [TOGGLES]\n"
    );
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(std::time::Duration::from_secs(60)), 0);
}

#[test]
fn jump_label_mcount() {
    check("mcount");
}

#[test]
fn jump_label_fentry() {
    check("fentry");
}
