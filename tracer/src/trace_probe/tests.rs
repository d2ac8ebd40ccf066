//! Host tests: every fetch-arg form, every error against Linux 6.1's
//! error_log (text, caret, errno, as `tests/tests/kprobe_events.rs` and a
//! run of Linux 6.1 recorded them), the evaluator over fake registers and
//! memory, the format and the printer, and a fuzz of the parser.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::collections::BTreeMap;

use super::fetch::{self, get_data_size, store_trace_args, FetchEnv};
use super::*;
use crate::errno::Errno::{self, *};
use crate::output::config::SymbolResolver;
use crate::output::seq::TraceSeq;

/// A symbol table: names to (address, size); `dup` appears twice.
struct Syms(BTreeMap<&'static str, (u64, u64)>);

fn syms() -> Syms {
    Syms(BTreeMap::from([
        ("vfs_read", (0x1000, 0x90)),
        ("vfs_write", (0x1100, 0x90)),
        ("do_sys_open", (0x1200, 0x40)),
        ("jiffies", (0x9000, 8)),
        ("kernel::sched::sleep_ns", (0x2000, 0x90)),
        ("a_+_b", (0x3000, 0x10)),
        ("f::{shim:vtable#0}", (0x3100, 0x10)),
        ("kernel::time::JIFFIES", (0x9100, 8)),
        ("dup", (0x4000, 0x10)),
        ("return_to_handler", (0x5100, 0x13)),
    ]))
}

impl ProbeSymbols for Syms {
    fn lookup(&self, name: &str) -> (usize, u64) {
        match self.0.get(name) {
            Some(_) if name == "dup" => (2, 0x4000),
            Some(&(a, _)) => (1, a),
            None => (0, 0),
        }
    }
}

impl SymbolResolver for Syms {
    fn lookup(&self, addr: u64) -> Option<(&str, u64, u64)> {
        self.0
            .iter()
            .find(|(_, &(a, s))| addr >= a && addr < a + s)
            .map(|(n, &(a, s))| (*n, addr - a, s))
    }
}

fn parse(cmd: &str) -> Result<TraceProbe, ProbeError> {
    parse_probe(&argv_split(cmd), &syms())
}

/// Linux 6.1's error_log for definitions refused while parsing: command,
/// errno, text, caret position (column of `^` minus the 11 of
/// "  Command: ").
const LINUX_ERRORS: &[(&str, Errno, &str, usize)] = &[
    ("p:bad nosuchsym", ENOENT, "Invalid probed address or symbol", 6),
    ("r:b3 vfs_read+4", EINVAL, "Retprobe address must be an function entry", 5),
    ("p3:b4 vfs_read", EINVAL, "Maxactive is not for kprobe", 1),
    ("r0:b5 vfs_read", EINVAL, "Invalid maxactive number", 1),
    ("r9999:b6 vfs_read", EINVAL, "Maxactive is too big", 1),
    ("p:/e vfs_read", EINVAL, "Group name is not specified", 2),
    ("p:1g/e vfs_read", EINVAL, "Group name must follow the same rules as C identifiers", 2),
    ("p:e1 vfs_read%foo", EINVAL, "Invalid probed address suffix", 13),
    ("p:e2 vfs_read $retval", EINVAL, "$retval is not available on probe", 14),
    ("p:e3 vfs_read $stackx", EINVAL, "Invalid $-variable specified", 14),
    ("p:e4 vfs_read $arg0", EINVAL, "Invalid argument number", 14),
    ("p:e5 vfs_read+4 $arg1", EINVAL, "Invalid $-variable specified", 16),
    ("p:e6 vfs_read %foo", EINVAL, "Invalid register name", 14),
    ("p:e7 vfs_read @0xzz", EINVAL, "Invalid memory address", 14),
    ("p:e8 vfs_read +8%di", EINVAL, "Dereference needs a brace", 14),
    ("p:e9 vfs_read +8(%di", EINVAL, "Dereference brace is not closed", 20),
    ("p:e10 vfs_read +8(%di):u99", EINVAL, "Unknown type is specified", 23),
    ("p:e11 vfs_read %di:string", EINVAL, "String accepts only memory argument", 19),
    ("p:e12 vfs_read x=+0($comm)", EINVAL, "$comm can not be dereferenced", 20),
    ("p:e13 vfs_read =%di", EINVAL, "Argument name is not specified", 15),
    ("p:e14 vfs_read 1x=%di", EINVAL, "Argument name must follow the same rules as C identifiers", 15),
    ("p:e15 vfs_read a=%di a=%si", EINVAL, "This argument name is already used", 21),
    ("p:e16 vfs_read common_pid=%di", EINVAL, "This argument name is already used", 15),
    ("p:e17 vfs_read +0(%di):u8[3", EINVAL, "Array is not closed", 27),
    ("p:e18 vfs_read +0(%di):u8[3]x", EINVAL, "Array has wrong suffix", 28),
    ("p:e19 vfs_read +0(%di):u8[0]", EINVAL, "Invalid array size", 26),
    ("p:e20 vfs_read +0(%di):u8[65]", EINVAL, "Array number is too big", 26),
    ("p:e21 vfs_read %di:b3@6/8", EINVAL, "Invalid bitfield", 19),
    ("p:e22 vfs_read \\xyz", EINVAL, "Invalid immediate value", 16),
    ("p:e23 vfs_read \\\"abc", EINVAL, "String is not closed with '\"'", 20),
    ("p:e24 vfs_read @+10", EINVAL, "File offset is not available with kprobe", 15),
    ("p:e26 vfs_read abc", EINVAL, "Invalid fetch argument", 15),
    ("p:e27 vfs_read $stack99999", EINVAL, "Invalid stack number", 15),
    ("p:e28 vfs_read $arg99999", EINVAL, "Invalid argument number", 15),
    ("p:e29 vfs_read +zz(%di)", EINVAL, "Invalid dereference offset", 15),
    ("p:e33 vfs_read -8", EINVAL, "Dereference needs a brace", 15),
    ("p:e34 vfs_read+-8", EINVAL, "Invalid probed address or symbol", 6),
    ("p:e40 vfs_read aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=%di", EINVAL, "Argument name is too long", 15),
    (
        "p:e41 vfs_read +0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(%di))))))))))))))))",
        EINVAL,
        "Argument expression is too long",
        15,
    ),
    ("p:e47 vfs_read x=", EINVAL, "No argument expression", 17),
    ("p:e48 vfs_read %di:b9@0/8", EINVAL, "Invalid bitfield", 19),
    ("p:e49 vfs_read %di:b3@0/7", EINVAL, "Unknown type is specified", 19),
    ("p:e51 vfs_read %di:u8[2]", EINVAL, "String accepts only memory argument", 19),
    (
        "p:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/e vfs_read",
        EINVAL,
        "Group name is too long",
        2,
    ),
    (
        "p:g/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa vfs_read",
        EINVAL,
        "Event name is too long",
        4,
    ),
    ("p:g/e-x vfs_read", EINVAL, "Event name must follow the same rules as C identifiers", 4),
    ("p: vfs_read", EINVAL, "Event name is not specified", 2),
    (
        "p:e54 vfs_read $stack $stack0 +0($stack) $comm \\1234 \\\"hello\" @jiffies %ip %ax:s32 x=%di:symbol y=%si:string z=+8(%sp):u16",
        EINVAL,
        "String accepts only memory argument",
        102,
    ),
    // Return probes (Linux 6.1, recorded with vfs_open in place of vfs_read):
    ("r:e64 vfs_read $arg1", EINVAL, "Invalid $-variable specified", 15),
    ("p:e65 vfs_read+4%return", EINVAL, "Retprobe address must be an function entry", 6),
    ("r5000:e66 vfs_read", EINVAL, "Maxactive is too big", 1),
    ("r1a:e67 vfs_read", EINVAL, "Invalid maxactive number", 1),
    // Not from the recorded run, but by the same rules:
    ("p:e60 dup", EADDRNOTAVAIL, "The symbol is not unique", 6),
    ("p:e61 nomod:foo", ENOENT, "Invalid probed address or symbol", 6),
    ("p:e62 vfs_read @0xfffffffffffffffffffff", ERANGE, "Invalid memory address", 15),
];

#[test]
fn errors_match_linux() {
    for &(cmd, errno, text, pos) in LINUX_ERRORS {
        let e = parse(cmd).expect_err(cmd);
        assert_eq!(e.errno, errno, "{cmd}");
        let log = e.log.unwrap_or_else(|| panic!("{cmd}: no log"));
        assert_eq!(log.err.text(), text, "{cmd}");
        assert_eq!(log.pos, pos, "{cmd}");
        assert_eq!(log.cmd, cmd);
    }
}

#[test]
fn errors_without_a_log_entry() {
    // Linux: an unknown type letter, a missing probe point, a uprobe
    // definition, and a non-string $comm or immediate string.
    for cmd in [
        "q:e31 vfs_read",
        "p:e32",
        "p:e25 vfs_read $comm:u32",
        "p:e50 vfs_read $comm:string[2]",
        "p:u /bin/sh:0x10",
    ] {
        let e = parse(cmd).expect_err(cmd);
        assert_eq!(e, ProbeError::bare(EINVAL), "{cmd}");
    }
}

#[test]
fn linux_accepts_these() {
    for cmd in [
        "p:g/ vfs_read",
        "p:g.ev vfs_read",
        "p:e42 vfs_read +0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(%di))))))))))))):string",
        "p:e45 vfs_read +0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(%di)))))))))))))",
        "p:e46 vfs_read ",
        "p:e52 vfs_read @vfs_read+4:x8 @vfs_read-4:x8",
        "p:e53 0xffffffff00000000",
        "r vfs_read",
        "p 0xffffffff81000000",
        "r:e55 vfs_read $retval $retval:s32 $comm",
        "r2:e56 vfs_read",
        "p:e57 vfs_read%return",
        // Linux 6.1 takes these too: a letter after `r` is not a maxactive,
        // `%return` on an `r` probe, and any fetch arg on a return probe.
        "rx:e68 vfs_read",
        "r:e69 vfs_read%return",
        "r:e70 vfs_read +0($retval) $stack %di",
        "r:e71 vfs_read+0 $retval",
        "p:e72 vfs_read+0%return",
        "p:e58 vfs_read a=$arg1 b=$arg2:u32 c=$arg7",
        "p:e59 vfs_read $stack $stack0 +0($stack) $comm \\1234 \\\"hello\" @jiffies %ip %ax:s32 x=%di:symbol z=+8(%sp):u16",
        "p:e63 vfs_read +0(%di):u8[3] +0(%di):string[2] %di:b3@2/8 -8(+u16(%si)):s16 +0(%di):ustring",
    ] {
        parse(cmd).unwrap_or_else(|e| panic!("{cmd}: {e:?}"));
    }
}

#[test]
fn names_groups_and_show() {
    let tp = parse("p:g/ vfs_read").unwrap();
    assert_eq!(
        (tp.group.as_str(), tp.event.as_str()),
        ("g", "p_vfs_read_0")
    );
    let tp = parse("p:g.ev vfs_read").unwrap();
    assert_eq!((tp.group.as_str(), tp.event.as_str()), ("g", "ev"));
    let tp = parse("r vfs_read").unwrap();
    assert_eq!(tp.show(10), "r10:kprobes/r_vfs_read_0 vfs_read\n");
    let tp = parse("p:e57 vfs_read%return").unwrap();
    assert!(tp.is_return);
    assert_eq!(tp.show(10), "r10:kprobes/e57 vfs_read\n");
    let tp = parse("r2:e56 vfs_read").unwrap();
    assert_eq!(tp.show(10), "r2:kprobes/e56 vfs_read\n");
    assert_eq!(tp.maxactive, 2);
    let tp = parse("r4096:e56 vfs_read").unwrap();
    assert_eq!(tp.maxactive, 4096);
    let tp = parse("r0x10:e56 vfs_read").unwrap();
    assert_eq!(tp.maxactive, 16);
    // What Linux 6.1 reads back (recorded).
    let tp = parse("p:myret3 vfs_write%return arg1=$retval:s32").unwrap();
    assert_eq!(
        tp.show(10),
        "r10:kprobes/myret3 vfs_write arg1=$retval:s32\n"
    );
    let tp = parse("rx vfs_read").unwrap();
    assert_eq!(tp.show(10), "r10:kprobes/r_vfs_read_0 vfs_read\n");
    let tp = parse("r:e71 vfs_read+0 $retval").unwrap();
    assert_eq!(tp.show(10), "r10:kprobes/e71 vfs_read arg1=$retval\n");
    let tp = parse("p:e72 vfs_read+0%return").unwrap();
    assert!(tp.is_return);
    assert_eq!(tp.event, "e72");
    let tp = parse("p:e58 vfs_read a=$arg1 b=$arg2:u32 c=$arg7").unwrap();
    assert_eq!(
        tp.show(0),
        "p:kprobes/e58 vfs_read a=$arg1 b=$arg2:u32 c=$arg7\n"
    );
    let tp = parse("p vfs_read+0x10 %di").unwrap();
    assert_eq!(tp.event, "p_vfs_read_16");
    assert_eq!(tp.show(0), "p:kprobes/p_vfs_read_16 vfs_read+16 arg1=%di\n");
    assert_eq!(tp.addr(), 0x1010);
    let tp = parse("p 0x1234").unwrap();
    assert_eq!(tp.event, "p_0x1234");
    assert_eq!(tp.show(0), "p:kprobes/p_0x1234 0x1234\n");
}

#[test]
fn rust_symbol_names() {
    // `::` is part of the symbol; the default name has `_` for every
    // character an event name cannot hold.
    let tp = parse("p kernel::sched::sleep_ns+0x4 %di").unwrap();
    assert_eq!(
        tp.target,
        ProbeTarget::Symbol {
            name: "kernel::sched::sleep_ns".into(),
            offset: 4,
            addr: 0x2000
        }
    );
    assert_eq!(tp.event, "p_kernel__sched__sleep_ns_4");
    // A name with '+' in it, alone and with an offset.
    let tp = parse("p:a a_+_b").unwrap();
    assert_eq!(tp.addr(), 0x3000);
    let tp = parse("p:a a_+_b+8").unwrap();
    assert_eq!(tp.addr(), 0x3008);
    // A single ':' inside a Rust name is not MOD:SYM.
    let tp = parse("p f::{shim:vtable#0}").unwrap();
    assert_eq!(tp.addr(), 0x3100);
    assert_eq!(tp.event, "p_f___shim_vtable_0__0");
    // Only +0 of a Rust function is its entry, for $argN and r.
    assert!(parse("r kernel::sched::sleep_ns $retval").is_ok());
    assert!(parse("p kernel::sched::sleep_ns $arg1").is_ok());
    // A Rust static with a type after the single ':'.
    let mut tp = parse("p:j vfs_read @kernel::time::JIFFIES:u64").unwrap();
    assert_eq!(tp.args[0].ty.name, "u64");
    tp.update_args(&syms()).unwrap();
    assert_eq!(
        tp.args[0].code,
        [
            FetchInsn::Symbol("kernel::time::JIFFIES".into()),
            FetchInsn::Imm(0x9100),
            FetchInsn::StMem { offset: 0, size: 8 },
            FetchInsn::End
        ]
    );
    // The default name is cut to 63 characters.
    let long = "p kernel::sched::sleep_ns";
    assert!(parse(long).unwrap().event.len() < MAX_EVENT_NAME_LEN);
}

#[test]
fn every_fetch_arg_form_compiles() {
    use FetchInsn::*;
    let cases: &[(&str, &[FetchInsn])] = &[
        ("%di", &[Reg(reg::DI), StRaw(8), End]),
        ("%orig_ax", &[Reg(15), StRaw(8), End]),
        ("@0x10", &[Imm(0x10), StMem { offset: 0, size: 8 }, End]),
        (
            "@jiffies+8",
            &[
                Symbol("jiffies+8".into()),
                Imm(0),
                StMem { offset: 0, size: 8 },
                End,
            ],
        ),
        ("$stack", &[StackP, StRaw(8), End]),
        ("$stack3", &[Stack(3), StRaw(8), End]),
        ("$comm", &[Comm, StString { offset: 0 }, End]),
        ("$arg2", &[Arg(1), StRaw(8), End]),
        (
            "+8(%di)",
            &[Reg(reg::DI), StMem { offset: 8, size: 8 }, End],
        ),
        (
            "-8(%di):u32",
            &[
                Reg(reg::DI),
                StMem {
                    offset: -8,
                    size: 4,
                },
                End,
            ],
        ),
        (
            "+0(+16(%si)):string",
            &[Reg(reg::SI), Deref(16), StString { offset: 0 }, End],
        ),
        (
            "+u4(%di):u8",
            &[Reg(reg::DI), StUmem { offset: 4, size: 1 }, End],
        ),
        ("\\123", &[Imm(123), StRaw(8), End]),
        ("\\-1:s8", &[Imm(u64::MAX), StRaw(1), End]),
        (
            "\\\"hi\"",
            &[Data(b"hi\0".to_vec()), StString { offset: 0 }, End],
        ),
        ("%si:symbol", &[Reg(reg::SI), StRaw(8), End]),
        (
            "%di:b3@2/8",
            &[
                Reg(reg::DI),
                StRaw(1),
                ModBf {
                    basesize: 1,
                    lshift: 3,
                    rshift: 5,
                },
                End,
            ],
        ),
        (
            "+0(%di):u16[4]",
            &[Reg(reg::DI), StMem { offset: 0, size: 2 }, LpArray(4), End],
        ),
        (
            "+0(%di):string[2]",
            &[
                Reg(reg::DI),
                Deref(0),
                StString { offset: 0 },
                LpArray(2),
                End,
            ],
        ),
    ];
    for (arg, code) in cases {
        let tp = parse(&format!("p:x vfs_read {arg}")).unwrap_or_else(|e| panic!("{arg}: {e:?}"));
        assert_eq!(&tp.args[0].code[..], *code, "{arg}");
        assert_eq!(tp.args[0].comm, *arg);
    }
    // Return probes: $retval.
    let tp = parse("r:x vfs_read $retval").unwrap();
    assert_eq!(
        tp.args[0].code,
        [FetchInsn::Retval, FetchInsn::StRaw(8), FetchInsn::End]
    );
}

#[test]
fn types_and_sizes() {
    for (t, size, signed, fmttype) in [
        ("u8", 1, false, "u8"),
        ("u16", 2, false, "u16"),
        ("u32", 4, false, "u32"),
        ("u64", 8, false, "u64"),
        ("s8", 1, true, "s8"),
        ("s16", 2, true, "s16"),
        ("s32", 4, true, "s32"),
        ("s64", 8, true, "s64"),
        ("x8", 1, false, "u8"),
        ("x16", 2, false, "u16"),
        ("x32", 4, false, "u32"),
        ("x64", 8, false, "u64"),
        ("symbol", 8, false, "u64"),
    ] {
        let tp = parse(&format!("p:x vfs_read %di:{t}")).unwrap();
        let a = &tp.args[0];
        assert_eq!(
            (a.ty.size, a.ty.signed, a.ty.fmttype),
            (size, signed, fmttype),
            "{t}"
        );
    }
}

/// Fake registers and memory.
struct Env {
    regs: [u64; 21],
    mem: BTreeMap<u64, u8>,
}

impl Env {
    fn new() -> Env {
        Env {
            regs: [0; 21],
            mem: BTreeMap::new(),
        }
    }
    fn poke(&mut self, addr: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            self.mem.insert(addr + i as u64, *b);
        }
    }
}

impl FetchEnv for Env {
    fn reg(&self, idx: u8) -> u64 {
        self.regs[idx as usize]
    }
    fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        for (i, b) in buf.iter_mut().enumerate() {
            match self.mem.get(&(addr.wrapping_add(i as u64))) {
                Some(v) => *b = *v,
                None => return false,
            }
        }
        true
    }
    fn comm(&self) -> [u8; 16] {
        *b"sh\0\0\0\0\0\0\0\0\0\0\0\0\0\0"
    }
}

/// Runs `tp` over `env` into a record and prints it as `trace` would.
fn record_and_print(tp: &TraceProbe, env: &Env, ip: u64) -> String {
    let dsize = get_data_size(tp, env);
    let mut rec = vec![0u8; (tp.args_offset() + tp.size) as usize + dsize];
    rec[8..16].copy_from_slice(&ip.to_le_bytes());
    if tp.is_return {
        rec[16..24].copy_from_slice(&0x1234u64.to_le_bytes());
        rec[8..16].copy_from_slice(&tp.addr().to_le_bytes());
    }
    store_trace_args(tp, env, &mut rec, dsize);
    let mut out = TraceSeq::new();
    print::print_event(&mut out, tp, &rec, &syms());
    out.as_str().unwrap().to_string()
}

#[test]
fn evaluate_and_print() {
    let mut env = Env::new();
    env.regs[reg::DI as usize] = 1000;
    env.regs[reg::SI as usize] = 0x5000;
    env.regs[reg::DX as usize] = (-3i64) as u64;
    env.regs[reg::SP as usize] = 0x7000;
    env.regs[reg::AX as usize] = 42;
    env.poke(0x5000, b"hello\0");
    env.poke(0x5010, &0x5000u64.to_le_bytes());
    env.poke(0x5018, &0x5020u64.to_le_bytes());
    env.poke(0x5020, b"world\0");
    env.poke(0x7000, &0xaau64.to_le_bytes());
    env.poke(0x7008, &0x1004u64.to_le_bytes());
    env.poke(0x7010, &7u64.to_le_bytes());
    env.poke(0x9000, &0x1122334455667788u64.to_le_bytes());
    env.poke(0x5030, &[1, 2, 3, 4]);

    let tp = parse("p:myprobe kernel::sched::sleep_ns").unwrap();
    assert_eq!(
        record_and_print(&tp, &env, 0x2000),
        "(kernel::sched::sleep_ns+0x0/0x90)"
    );

    let tp = parse("p:myprobe kernel::sched::sleep_ns arg1=%di").unwrap();
    assert_eq!(
        record_and_print(&tp, &env, 0x2000),
        "(kernel::sched::sleep_ns+0x0/0x90) arg1=0x3e8"
    );

    let mut tp = parse(
        "p:x vfs_read a=%di:u32 b=%dx:s64 c=%dx:s8 s=+0(%si):string n=+0(%di):string \
         sym=$stack1:symbol st=$stack0 c2=$comm j=@jiffies:x32 arr=+48(%si):u8[4] \
         ss=+16(%si):string[2] bf=+0(%si):b4@0/8 imm=\\\"str\" i7=$arg7",
    )
    .unwrap();
    tp.update_args(&syms()).unwrap();
    assert_eq!(
        record_and_print(&tp, &env, 0x1000),
        "(vfs_read+0x0/0x90) a=1000 b=-3 c=-3 s=\"hello\" n=(fault) sym=vfs_read+0x4/0x90 \
         st=0xaa c2=\"sh\" j=0x55667788 arr={1,2,3,4} ss={\"hello\",\"world\"} bf=8 imm=\"str\" i7=0x1004"
    );

    let tp = parse("p:x vfs_read ss=+16(%si):string[2]").unwrap();
    assert_eq!(get_data_size(&tp, &env), 12);
    assert_eq!(
        record_and_print(&tp, &env, 0x1000),
        "(vfs_read+0x0/0x90) ss={\"hello\",\"world\"}"
    );

    let tp = parse("r:myret vfs_read $retval rs=$retval:s32").unwrap();
    assert_eq!(
        record_and_print(&tp, &env, 0),
        "(do_sys_open+0x34/0x40 <- vfs_read) arg1=0x2a rs=42"
    );
    // The return address is the trampoline when another return hook took
    // the call first: Linux's `[unknown/kretprobe'd]`.
    let tp = parse("r:myret vfs_read $retval").unwrap();
    let mut rec = vec![0u8; (tp.args_offset() + tp.size) as usize];
    rec[8..16].copy_from_slice(&0x1000u64.to_le_bytes());
    rec[16..24].copy_from_slice(&0x5100u64.to_le_bytes());
    store_trace_args(&tp, &env, &mut rec, 0);
    let mut out = TraceSeq::new();
    print::print_event(&mut out, &tp, &rec, &syms());
    assert_eq!(
        out.as_str().unwrap(),
        "([unknown/kretprobe'd] <- vfs_read) arg1=0x2a"
    );
}

#[test]
fn format_and_print_fmt_match_linux() {
    // Linux 6.1's `format` of r:e55 vfs_read $retval $retval:s32 $comm.
    let tp = parse("r:e55 vfs_read $retval $retval:s32 $comm").unwrap();
    assert_eq!(
        print::print_fmt(&tp),
        "\"(%lx <- %lx) arg1=0x%Lx arg2=%d arg3=\\\"%s\\\"\", REC->__probe_func, REC->__probe_ret_ip, REC->arg1, REC->arg2, __get_str(arg3)"
    );
    let f = print::fields(&tp);
    let want: Vec<(String, String, u32, u32, bool)> = vec![
        ("unsigned long".into(), "__probe_func".into(), 8, 8, false),
        (
            "unsigned long".into(),
            "__probe_ret_ip".into(),
            16,
            8,
            false,
        ),
        ("u64".into(), "arg1".into(), 24, 8, false),
        ("s32".into(), "arg2".into(), 32, 4, true),
        ("__data_loc char[]".into(), "arg3".into(), 36, 4, true),
    ];
    assert_eq!(f, want);
    // p:e58 vfs_read a=$arg1 b=$arg2:u32 c=$arg7
    let tp = parse("p:e58 vfs_read a=$arg1 b=$arg2:u32 c=$arg7").unwrap();
    assert_eq!(
        print::print_fmt(&tp),
        "\"(%lx) a=0x%Lx b=%u c=0x%Lx\", REC->__probe_ip, REC->a, REC->b, REC->c"
    );
    let offs: Vec<u32> = print::fields(&tp).iter().map(|f| f.2).collect();
    assert_eq!(offs, [8, 16, 24, 28]);
    // An array: `u8[3]` type, `{%u,%u,%u}`.
    let tp = parse("p:x vfs_read +0(%di):u8[3]").unwrap();
    assert_eq!(
        print::print_fmt(&tp),
        "\"(%lx) arg1={%u,%u,%u}\", REC->__probe_ip, REC->arg1[0], REC->arg1[1], REC->arg1[2]"
    );
    assert_eq!(print::fields(&tp)[1].0, "u8[3]");
}

#[test]
fn registry_format_file() {
    let tp = parse("p:e52 vfs_read @vfs_read+4:x8 @vfs_read-4:x8").unwrap();
    let ev = registry::register(tp).unwrap();
    assert!(ev.call.id >= registry::FIRST_ID);
    // A string keeps `__data_loc char[]`; an array is `u8 name[3]`.
    let ev2 = registry::register(parse("p:x vfs_read c=$comm a=+0(%di):u8[3]").unwrap()).unwrap();
    assert_eq!(
        (ev2.call.fields[1].ty, ev2.call.fields[1].array),
        ("__data_loc char[]", None)
    );
    assert_eq!(
        (ev2.call.fields[2].ty, ev2.call.fields[2].array),
        ("u8", Some(3))
    );
    let want = format!(
        "name: e52\nID: {}\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\n\
\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:u8 arg1;\toffset:16;\tsize:1;\tsigned:0;\n\
\tfield:u8 arg2;\toffset:17;\tsize:1;\tsigned:0;\n\
\n\
print fmt: \"(%lx) arg1=0x%x arg2=0x%x\", REC->__probe_ip, REC->arg1, REC->arg2\n",
        ev.call.id
    );
    assert_eq!(ev.call.format_file(), want);
    let found = crate::trace_events::find_event(ev.call.id).unwrap();
    assert!(core::ptr::eq(found, &ev.call));
    // The printer finds it by the record's type.
    let mut rec = vec![0u8; 18];
    rec[0..2].copy_from_slice(&ev.call.id.to_le_bytes());
    rec[8..16].copy_from_slice(&0x1004u64.to_le_bytes());
    rec[16] = 0xab;
    rec[17] = 0x1;
    let mut out = TraceSeq::new();
    (found.print)(&rec, &mut out, &syms());
    assert_eq!(
        out.as_str().unwrap(),
        "(vfs_read+0x4/0x90) arg1=0xab arg2=0x1"
    );
}

#[test]
fn multiprobe_compare_and_match() {
    let a = parse("p:myprobe do_sys_open").unwrap();
    let b = parse("p:myprobe vfs_read").unwrap();
    assert_eq!(a.compare_arg_type(&b), 0);
    assert!(!a.same_probe(&b));
    assert!(a.same_probe(&parse("p:myprobe do_sys_open").unwrap()));
    // Linux: 'p:myprobe vfs_write x=%di' -> index 2 (ret + 1), caret 20.
    let c = parse("p:myprobe vfs_write x=%di").unwrap();
    let i = a.compare_arg_type(&c);
    assert_eq!(i, 1);
    assert_eq!(log_entry(&c.argv, i + 1, 0, TpErr::DiffArgType).pos, 20);
    // -:myprobe vfs_read matches only that probe.
    let d = parse_delete("-:myprobe vfs_read").unwrap();
    assert!(d.matches(&b) && !d.matches(&a));
    let d = parse_delete("-:kprobes/myprobe").unwrap();
    assert!(d.matches(&a) && d.matches(&b));
    let d = parse_delete("-:g/").unwrap();
    assert!(d.matches(&parse("p:g/x vfs_read").unwrap()) && !d.matches(&a));
    let e = parse("p:e58 vfs_read a=$arg1 b=$arg2:u32").unwrap();
    assert!(parse_delete("-:e58 vfs_read a=$arg1").unwrap().matches(&e));
    assert!(!parse_delete("-:e58 vfs_read a=$arg2").unwrap().matches(&e));
    assert_eq!(parse_delete("-:"), Err(EINVAL));
    assert_eq!(parse_delete("-x"), Err(EINVAL));
    assert_eq!(parse_delete("-"), Err(EINVAL));
}

#[test]
fn log_caret_past_the_last_word() {
    let argv: Vec<String> = ["p:x", "vfs_read"].iter().map(|s| s.to_string()).collect();
    assert_eq!(log_entry(&argv, 5, 3, TpErr::BadVar).pos, 13);
    assert_eq!(log_entry(&argv, 1, 2, TpErr::BadVar).pos, 6);
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn word() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![
                "p",
                "r",
                "4",
                ":",
                "/",
                ".",
                "-",
                "+",
                "%",
                "$",
                "@",
                "(",
                ")",
                "[",
                "]",
                "\\",
                "\"",
                "=",
                "u",
                "b",
                "x",
                "0x",
                "8",
                "di",
                "stack",
                "arg",
                "retval",
                "comm",
                "string",
                "u8",
                "s16",
                "x64",
                "symbol",
                "vfs_read",
                "a_+_b",
                "::",
                "return",
                "@",
                "0",
                "99999999999999999999",
                "é",
                " ",
            ]),
            0..24,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn parser_never_panics(cmd in word(), raw in ".{0,80}") {
            let s = syms();
            for c in [&cmd, &raw] {
                let argv = argv_split(c);
                if argv.is_empty() {
                    continue;
                }
                if let Ok(mut tp) = parse_probe(&argv, &s) {
                    let _ = tp.update_args(&s);
                    let _ = print::print_fmt(&tp);
                    let _ = tp.show(10);
                    let env = Env::new();
                    let _ = record_and_print(&tp, &env, 0x1000);
                } else if let Err(ProbeError { log: Some(l), .. }) = parse_probe(&argv, &s) {
                    prop_assert!(l.pos <= l.cmd.len() + 1);
                }
                let _ = parse_delete(c);
            }
        }
    }
}

/// A return probe reads the callee-saved registers the function left (the
/// caller's values, which the kernel's rethook trampoline saves), through
/// the fetch programs and through the register copies the kernel compiles
/// for register-only arguments: both give the same record.
#[test]
fn return_probe_reads_callee_saved_registers() {
    let mut env = Env::new();
    env.regs[reg::AX as usize] = 42;
    // Indices in REG_NAMES: r15 0, r12 3, bx 5.
    env.regs[5] = 0x1111_2222;
    env.regs[reg::BP as usize] = 0x3333;
    env.regs[3] = 7;
    env.regs[0] = 0xffff_ffff_ffff_fffe;
    let tp = parse("r:myret vfs_read b=%bx p=%bp r12=%r12:u8 r15=%r15:s64 $retval").unwrap();
    let want = "(do_sys_open+0x34/0x40 <- vfs_read) b=0x11112222 p=0x3333 r12=7 r15=-2 arg5=0x2a";
    assert_eq!(record_and_print(&tp, &env, 0), want);
    // The same through register copies, the registers laid out by index.
    let regs: Vec<u8> = env.regs.iter().flat_map(|r| r.to_le_bytes()).collect();
    let copies = fetch::compile_reg_copies(&tp, regs.len(), |r| Some(u16::from(r) * 8))
        .expect("register-only arguments");
    let mut rec = vec![0u8; (tp.args_offset() + tp.size) as usize];
    rec[8..16].copy_from_slice(&tp.addr().to_le_bytes());
    rec[16..24].copy_from_slice(&0x1234u64.to_le_bytes());
    fetch::store_reg_copies(&copies, &regs, &mut rec);
    let mut out = TraceSeq::new();
    print::print_event(&mut out, &tp, &rec, &syms());
    assert_eq!(out.as_str().unwrap(), want);
}
