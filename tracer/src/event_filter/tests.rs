use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::trace_events::sched::{sched_switch, sched_wakeup};
use crate::trace_events::{comm_bytes, Common, EventField, TaskInfo};

struct Env {
    cpu: u32,
    comm: [u8; 16],
}

impl FilterEnv for Env {
    fn cpu(&self) -> u32 {
        self.cpu
    }
    fn comm(&self) -> [u8; 16] {
        self.comm
    }
}

const ENV: Env = Env {
    cpu: 1,
    comm: *b"sh\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
};

fn switch_rec(prev: &str, prev_pid: i32, next: &str, next_pid: i32, state: i64) -> Vec<u8> {
    let p = TaskInfo {
        comm: comm_bytes(prev),
        pid: prev_pid,
        prio: 120,
    };
    let n = TaskInfo {
        comm: comm_bytes(next),
        pid: next_pid,
        prio: 120,
    };
    let common = Common {
        common_type: 300,
        common_flags: 1,
        common_preempt_count: 2,
        common_pid: prev_pid,
    };
    let word = common.common_type as u64
        | (common.common_flags as u64) << 16
        | (common.common_preempt_count as u64) << 24
        | (common.common_pid as u32 as u64) << 32;
    let mut buf = alloc::vec![0u8; sched_switch::size(false, &p, &n, state as u32)];
    sched_switch::write(&mut buf, word, false, &p, &n, state as u32);
    buf
}

fn sw(text: &str) -> Result<Filter, ParseError> {
    Filter::compile(text, sched_switch::FIELDS)
}

/// What `cat filter` shows after writing `text` to sched_switch's filter.
fn cat_after(text: &str) -> (String, Option<Errno>) {
    let FilterWrite::Set(t) = parse_filter_write(text.as_bytes()).unwrap() else {
        return (String::from("none\n"), None);
    };
    let (f, r) = EventFilter::create(&t, sched_switch::FIELDS);
    (filter_file_text(Some(&f)), r.err().map(|e| e.errno))
}

/// Every error of the grammar, with the text, caret and errno that
/// Linux 6.1 shows for the same write to sched_switch's filter.
#[test]
fn errors_match_linux() {
    use Errno::*;
    let cases: &[(&str, &str, Errno)] = &[
        ("", "\nError: (0)\n\n", EINVAL),
        ("== 1", "== 1\nError: (0)\n\n", EPERM),
        ("(prev_pid == 1", "(prev_pid == 1\n^\nparse_error: Too many '('\n\n", ENOENT),
        ("prev_pid == 1)", "prev_pid == 1)\n             ^\nparse_error: Too few '('\n\n", EPERM),
        (
            "prev_pid == \"1",
            "prev_pid == \"1\n            ^\nparse_error: Missing matching quote\n\n",
            ESRCH,
        ),
        ("foo == 1", "foo == 1\n    ^\nparse_error: Field not found\n\n", EINVAL),
        ("prev_pid = 1", "prev_pid = 1\n          ^\nparse_error: Invalid operator\n\n", EINVAL),
        (
            "prev_pid ~ 1",
            "prev_pid ~ 1\n            ^\nparse_error: Illegal operation for field type\n\n",
            EINVAL,
        ),
        (
            "prev_comm == 1",
            "prev_comm == 1\n              ^\nparse_error: Expecting string field\n\n",
            EINVAL,
        ),
        (
            "prev_pid == \"x\"",
            "prev_pid == \"x\"\n             ^\nparse_error: Expecting numeric field\n\n",
            EINVAL,
        ),
        (
            "prev_comm == sh",
            "prev_comm == sh\n              ^\nparse_error: Invalid value (did you forget quotes)?\n\n",
            EINVAL,
        ),
        (
            "prev_comm < \"sh\"",
            "prev_comm < \"sh\"\n             ^\nparse_error: Illegal operation for field type\n\n",
            EINVAL,
        ),
        (
            "prev_pid == 1 &&",
            "prev_pid == 1 &&\n                ^\nparse_error: Meaningless filter expression\n\n",
            EINVAL,
        ),
        (
            "prev_pid == 1 || !",
            "prev_pid == 1 || !\n                  ^\nparse_error: Meaningless filter expression\n\n",
            EINVAL,
        ),
        (
            "prev_pid == 1 prev_pid == 2",
            "prev_pid == 1 prev_pid == 2\n              ^\nparse_error: Too many terms in predicate expression\n\n",
            EPERM,
        ),
        (
            "prev_pid == 0x1g",
            "prev_pid == 0x1g\n             ^\nparse_error: Illegal integer value\n\n",
            EINVAL,
        ),
        (
            "prev_pid == 123456789012345678901234",
            "prev_pid == 123456789012345678901234\n                                    ^\nparse_error: Operand too long\n\n",
            EINVAL,
        ),
        (
            "prev_pid == 1 & next_pid == 2",
            "prev_pid == 1 & next_pid == 2\n              ^\nparse_error: Too many terms in predicate expression\n\n",
            EPERM,
        ),
        (
            "prev_pid !~ 1",
            "prev_pid !~ 1\n          ^\nparse_error: Invalid operator\n\n",
            EINVAL,
        ),
        (
            "((prev_pid == 1)))",
            "((prev_pid == 1)))\n                 ^\nparse_error: Too few '('\n\n",
            EPERM,
        ),
        (
            "prev_pid == CPUS{0}",
            "prev_pid == CPUS{0}\n             ^\nparse_error: Invalid value (did you forget quotes)?\n\n",
            EINVAL,
        ),
        (
            "prev_pid.function == 1",
            "prev_pid.function == 1\n         ^\nparse_error: Invalid operator\n\n",
            EINVAL,
        ),
    ];
    for &(text, want, errno) in cases {
        let (got, e) = cat_after(&format!("{}\n", text));
        assert_eq!(got, want, "text {:?}", text);
        assert_eq!(e, Some(errno), "errno of {:?}", text);
    }
}

/// The rest of the error kinds a filter can give here.
#[test]
fn other_errors() {
    let e = sw("!").unwrap_err();
    assert_eq!(
        (e.kind, e.pos, e.errno),
        (Some(FiltErr::NoFilter), 1, Errno::EINVAL)
    );
    let e = sw("prev_pid == 1 && (").unwrap_err();
    assert_eq!(e.kind, Some(FiltErr::TooManyOpen));
    assert_eq!(e.pos, 17);
    let e = sw("(prev_pid == 1) && (next_pid == 2").unwrap_err();
    assert_eq!((e.kind, e.pos), (Some(FiltErr::TooManyOpen), 19));
    let long = format!("prev_comm == \"{}\"", "a".repeat(256));
    assert_eq!(sw(&long).unwrap_err().kind, Some(FiltErr::OperandTooLong));
    let ok = format!("prev_comm == \"{}\"", "a".repeat(255));
    assert!(sw(&ok).is_ok());
    // Unsigned fields take no minus sign; signed ones stay within i64.
    assert_eq!(
        sw("common_type == -1").unwrap_err().kind,
        Some(FiltErr::IllegalIntval)
    );
    assert!(sw("prev_pid == -9223372036854775808").is_ok());
    assert_eq!(
        sw("prev_pid == 9223372036854775808").unwrap_err().kind,
        Some(FiltErr::IllegalIntval)
    );
    assert!(sw("common_type == 18446744073709551615").is_ok());
    assert_eq!(
        sw("common_type == 18446744073709551616").unwrap_err().kind,
        Some(FiltErr::IllegalIntval)
    );
    // 08 is octal with a bad digit.
    assert_eq!(
        sw("prev_pid == 08").unwrap_err().kind,
        Some(FiltErr::IllegalIntval)
    );
    assert_eq!(
        sw("COMM == 1").unwrap_err().kind,
        Some(FiltErr::ExpectString)
    );
    assert_eq!(
        sw("CPU ~ 1").unwrap_err().kind,
        Some(FiltErr::IllegalFieldOp)
    );
    // Log position and kind: Error at 0 when Linux has no parse error.
    let e = sw("== 1").unwrap_err();
    assert_eq!(log_err_kind(&e), (FiltErr::Errno, 0));
    let e = sw("foo == 1").unwrap_err();
    assert_eq!(log_err_kind(&e), (FiltErr::FieldNotFound, 4));
}

#[test]
fn good_filters_round_trip() {
    for text in [
        "prev_pid == 1",
        "prev_pid==1&&next_pid>2",
        "  prev_pid == 1",
        "!prev_pid == 1",
        "!(prev_pid == 1)",
        "prev_pid == 99999999999",
        "common_pid == 1 && CPU == 0 && COMM ~ \"s*\" && common_cpu < 3",
        "prev_state & 1",
        "prev_comm ~ \"*a?c*\"",
        "prev_pid.ustring == 1",
    ] {
        let (got, e) = cat_after(&format!("{}   \n", text));
        assert_eq!(e, None, "{:?}", text);
        assert_eq!(got, format!("{}\n", text));
    }
    assert_eq!(parse_filter_write(b" 0 \n"), Ok(FilterWrite::Clear));
    assert_eq!(parse_filter_write(&[b' '; 4096]), Err(Errno::EINVAL));
    assert_eq!(
        parse_filter_write(b"prev_pid == 1\0junk"),
        Ok(FilterWrite::Set(String::from("prev_pid == 1")))
    );
    assert_eq!(filter_file_text(None), "none\n");
}

#[test]
fn subsystem_error_text() {
    let f = EventFilter::subsystem_error("prev_pid == 1");
    assert_eq!(
        filter_file_text(Some(&f)),
        "prev_pid == 1\n^\nparse_error: Couldn't find or set field in one of a subsystem's events\n\n"
    );
}

#[test]
fn evaluates_sched_switch() {
    let rec = switch_rec("bash", 42, "swapper/1", 0, 1);
    let t = |text: &str| sw(text).unwrap().matches(&rec, &ENV);
    assert!(t("next_pid == 0"));
    assert!(!t("next_pid != 0"));
    assert!(t("prev_pid == 42 && next_pid < 1"));
    assert!(t("prev_pid == 1 || next_comm ~ \"swapper*\""));
    assert!(t("prev_comm == \"bash\""));
    assert!(!t("prev_comm == \"bas\""));
    assert!(t("prev_comm ~ \"ba*\""));
    assert!(t("prev_comm ~ \"*as*\""));
    assert!(t("prev_comm ~ \"b?s[gh]\""));
    assert!(t("prev_comm ~ \"!zsh\""));
    // Linux's end match on char[16] looks at the array's end, not the
    // string's: "*sh" does not match "bash" in a comm.
    assert!(!t("prev_comm ~ \"*sh\""));
    assert!(t("prev_state & 1"));
    assert!(!t("prev_state & 2"));
    assert!(t(
        "common_pid == 42 && common_flags == 1 && common_preempt_count == 2"
    ));
    assert!(t("common_type == 300"));
    assert!(t("CPU == 1 && cpu >= 1 && common_cpu < 2"));
    assert!(!t("CPU & 1"));
    assert!(t("COMM == \"sh\" && comm ~ \"s*\""));
    assert!(t("!(prev_pid == 1 || next_pid == 1)"));
    // Truncation to the field's width: 2^32 + 42 is 42 in a pid_t.
    assert!(t("prev_pid == 4294967338"));
    assert!(t("prev_pid > -1 && prev_pid < 0x2b"));
    // Which filters read the context bytes of the header.
    assert!(sw("common_pid == 1").unwrap().reads_context());
    assert!(!sw("common_type == 1 || next_pid == 0")
        .unwrap()
        .reads_context());
    // sched_wakeup's own `comm` hides the generic one.
    let w = Filter::compile("comm == \"sh\"", sched_wakeup::FIELDS).unwrap();
    assert!(matches!(
        w.prog()[0].pred,
        Pred::Str {
            src: StrSource::Static { len: 16 },
            ..
        }
    ));
}

/// "a || b && c" compiles to Linux's documented program:
/// if (a) goto T; if (!b) goto F; if (!c) goto F.
#[test]
fn program_shape() {
    let f = sw("prev_pid == 1 || next_pid == 2 && prev_prio == 3").unwrap();
    let shape: Vec<(bool, u32)> = f
        .prog()
        .iter()
        .map(|e| (e.when_to_branch, e.target))
        .collect();
    assert_eq!(shape, [(true, 2), (false, 3), (false, 3)]);
}

#[test]
fn kstrto() {
    assert_eq!(kstrtoull(b"0x1f"), Some(31));
    assert_eq!(kstrtoull(b"017"), Some(15));
    assert_eq!(kstrtoull(b"0"), Some(0));
    assert_eq!(kstrtoull(b"+5"), Some(5));
    assert_eq!(kstrtoull(b"0x"), None);
    assert_eq!(kstrtoull(b""), None);
    assert_eq!(kstrtoll(b"-0x10"), Some(-16));
    assert_eq!(kstrtoll(b"-"), None);
}

// ---- the property test: the compiled program against a tree ----

/// A record layout with every width and signedness, a `char[8]` and a
/// `__data_loc char[]`.
static FIELDS: &[EventField] = &[
    fld("unsigned char", "u8f", 8, 1, false, None),
    fld("signed char", "s8f", 9, 1, true, None),
    fld("unsigned short", "u16f", 10, 2, false, None),
    fld("short", "s16f", 12, 2, true, None),
    fld("unsigned int", "u32f", 16, 4, false, None),
    fld("int", "s32f", 20, 4, true, None),
    fld("u64", "u64f", 24, 8, false, None),
    fld("long", "s64f", 32, 8, true, None),
    fld("char", "name", 40, 8, true, Some(8)),
    fld("__data_loc char[]", "path", 48, 4, true, None),
];

const fn fld(
    ty: &'static str,
    name: &'static str,
    offset: u32,
    size: u32,
    signed: bool,
    array: Option<u32>,
) -> EventField {
    EventField {
        ty,
        name,
        offset,
        size,
        signed,
        array,
    }
}

const NUMS: usize = 8;

#[derive(Clone, Debug)]
enum P {
    Num { field: usize, op: usize, val: i64 },
    StaticEq { ne: bool, s: String },
    StaticFront(String),
    Dyn { kind: usize, s: String },
}

#[derive(Clone, Debug)]
enum Expr {
    P(P),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Paren(Box<Expr>),
}

const NUM_OPS: [&str; 7] = ["==", "!=", "<", "<=", ">", ">=", "&"];

fn print_p(p: &P) -> String {
    match p {
        P::Num { field, op, val } => {
            let f = &FIELDS[*field];
            let v = if f.signed {
                format!("{}", val)
            } else {
                format!("{}", *val as u64)
            };
            format!("{} {} {}", f.name, NUM_OPS[*op], v)
        }
        P::StaticEq { ne, s } => format!("name {} \"{}\"", if *ne { "!=" } else { "==" }, s),
        P::StaticFront(s) => format!("name ~ \"{}*\"", s),
        P::Dyn { kind, s } => match kind {
            0 => format!("path == \"{}\"", s),
            1 => format!("path != '{}'", s),
            2 => format!("path ~ \"{}*\"", s),
            3 => format!("path ~ \"*{}\"", s),
            4 => format!("path ~ \"*{}*\"", s),
            _ => format!("path ~ \"?{}*\"", s),
        },
    }
}

/// Prints with the parentheses the precedence needs (`&&` over `||`,
/// `!` over both).
fn print(e: &Expr) -> String {
    match e {
        Expr::P(p) => print_p(p),
        Expr::Paren(e) => format!("({})", print(e)),
        Expr::Not(e) => match **e {
            Expr::P(_) | Expr::Paren(_) | Expr::Not(_) => format!("!{}", print(e)),
            _ => format!("!({})", print(e)),
        },
        Expr::And(a, b) => {
            let side = |e: &Expr| match e {
                Expr::Or(..) => format!("({})", print(e)),
                _ => print(e),
            };
            format!("{} && {}", side(a), side(b))
        }
        Expr::Or(a, b) => format!("{}||{}", print(a), print(b)),
    }
}

/// The straightforward meaning of a predicate on a record.
fn eval_p(p: &P, rec: &[u8]) -> bool {
    match p {
        P::Num { field, op, val } => {
            let f = &FIELDS[*field];
            let o = f.offset as usize;
            let raw = &rec[o..o + f.size as usize];
            let mut b = [0u8; 8];
            b[..raw.len()].copy_from_slice(raw);
            let bits = 8 * f.size;
            let (x, y): (i128, i128) = if f.signed {
                let x = (i64::from_le_bytes(b) << (64 - bits)) >> (64 - bits);
                let y = (val << (64 - bits)) >> (64 - bits);
                (x as i128, y as i128)
            } else {
                let m = if bits == 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                (
                    (u64::from_le_bytes(b) & m) as i128,
                    (*val as u64 & m) as i128,
                )
            };
            match *op {
                0 => x == y,
                1 => x != y,
                2 => x < y,
                3 => x <= y,
                4 => x > y,
                5 => x >= y,
                _ => x & y != 0,
            }
        }
        P::StaticEq { ne, s } => (cstr_of(&rec[40..48]) == s.as_bytes()) ^ ne,
        P::StaticFront(s) => cstr_of(&rec[40..48]).starts_with(s.as_bytes()),
        P::Dyn { kind, s } => {
            let item = u32::from_le_bytes(rec[48..52].try_into().unwrap());
            let (o, l) = ((item & 0xffff) as usize, (item >> 16) as usize);
            let st = cstr_of(&rec[o..o + l]);
            let s = s.as_bytes();
            match kind {
                0 => st == s,
                1 => st != s,
                2 => st.starts_with(s),
                3 => st.ends_with(s),
                4 => s.is_empty() || st.windows(s.len()).any(|w| w == s),
                _ => !st.is_empty() && st[1..].starts_with(s),
            }
        }
    }
}

fn cstr_of(b: &[u8]) -> &[u8] {
    &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]
}

fn eval(e: &Expr, rec: &[u8]) -> bool {
    match e {
        Expr::P(p) => eval_p(p, rec),
        Expr::Paren(e) => eval(e, rec),
        Expr::Not(e) => !eval(e, rec),
        Expr::And(a, b) => eval(a, rec) && eval(b, rec),
        Expr::Or(a, b) => eval(a, rec) || eval(b, rec),
    }
}

fn word() -> impl Strategy<Value = String> {
    "[a-c]{0,3}"
}

fn pred() -> impl Strategy<Value = P> {
    prop_oneof![
        (0..NUMS, 0..7usize, prop_oneof![-3i64..4, any::<i64>()])
            .prop_map(|(field, op, val)| P::Num { field, op, val }),
        (any::<bool>(), word()).prop_map(|(ne, s)| P::StaticEq { ne, s }),
        word().prop_map(P::StaticFront),
        (0..6usize, word()).prop_map(|(kind, s)| P::Dyn { kind, s }),
    ]
}

fn expr() -> impl Strategy<Value = Expr> {
    pred().prop_map(Expr::P).prop_recursive(5, 24, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|e| Expr::Not(Box::new(e))),
            inner.clone().prop_map(|e| Expr::Paren(Box::new(e))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner).prop_map(|(a, b)| Expr::Or(Box::new(a), Box::new(b))),
        ]
    })
}

/// A record for [`FIELDS`]: random numbers (often small, to hit the
/// constants), a `char[8]` name and a path after the fixed part.
fn record() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xff), any::<u8>()], 40),
        "[a-c]{0,7}",
        "[a-c]{0,6}",
    )
        .prop_map(|(mut fixed, name, path)| {
            fixed.truncate(40);
            fixed.extend_from_slice(&{
                let mut n = [0u8; 8];
                n[..name.len()].copy_from_slice(name.as_bytes());
                n
            });
            let loc = ((path.len() as u32 + 1) << 16) | 56;
            fixed.extend_from_slice(&loc.to_le_bytes());
            fixed.extend_from_slice(&[0; 4]);
            fixed.extend_from_slice(path.as_bytes());
            fixed.push(0);
            fixed
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn compiled_equals_tree(e in expr(), recs in proptest::collection::vec(record(), 8)) {
        let text = print(&e);
        let f = Filter::compile(&text, FIELDS)
            .map_err(|err| TestCaseError::fail(format!("{:?} on {}", err, text)))?;
        for rec in &recs {
            prop_assert_eq!(f.matches(rec, &ENV), eval(&e, rec), "{}", text);
        }
        // And it reads back as written.
        let (ef, r) = EventFilter::create(&text, FIELDS);
        prop_assert!(r.is_ok());
        prop_assert_eq!(filter_file_text(Some(&ef)), format!("{}\n", text));
    }

    /// Random bytes, and random mixes of the grammar's tokens, never
    /// panic the parser, and any program it makes runs on any record.
    #[test]
    fn fuzz_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..80),
        toks in proptest::collection::vec(
            prop_oneof![
                Just("("), Just(")"), Just("!"), Just("&&"), Just("||"), Just("&"),
                Just("=="), Just("~"), Just("<="), Just("\""), Just("'"), Just(" "),
                Just("u8f"), Just("name"), Just("path"), Just("CPU"), Just("COMM"),
                Just("common_pid"), Just("-"), Just("0x"), Just("12"), Just("\"a*\""),
                Just("*"), Just("?"), Just("["), Just("\\"),
            ],
            0..30,
        ),
        rec in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let texts = [String::from_utf8_lossy(&bytes).into_owned(), toks.concat()];
        for text in &texts {
            let (ef, _) = EventFilter::create(text, FIELDS);
            let _ = filter_file_text(Some(&ef));
            if let Some(f) = ef.prog {
                let _ = f.matches(&rec, &ENV);
                prop_assert!(f.prog().iter().enumerate().all(|(i, e)| e.target as usize > i
                    && e.target as usize <= f.prog().len()));
            }
            let _ = Filter::compile(text, sched_switch::FIELDS);
        }
    }
}

proptest! {
    /// A filter of one numeric test decided from one field computed from
    /// the probe's arguments (`field_test_keep`, what the kernel's probe
    /// runs) agrees with the program run on the whole record.
    #[test]
    fn field_test_equals_program(
        field in prop::sample::select(vec![
            "prev_pid", "prev_prio", "prev_state", "next_pid", "next_prio",
        ]),
        op in prop::sample::select(vec!["==", "!=", "<", "<=", ">", ">=", "&"]),
        not in any::<bool>(),
        val in prop_oneof![-2i64..3, any::<i32>().prop_map(i64::from), any::<i64>()],
        preempt in any::<bool>(),
        pids in (any::<i32>(), any::<i32>(), -1i32..3, 0i32..140),
        state in prop_oneof![0u32..4, any::<u32>()],
    ) {
        let text = format!("{}{} {} {}", if not { "!" } else { "" }, field, op, val);
        let f = sw(&text).unwrap();
        let t = f.field_test().expect("one numeric test of an event field");
        prop_assert!(t.offset >= 8);
        let p = TaskInfo { comm: comm_bytes("a"), pid: pids.0, prio: pids.3 };
        let n = TaskInfo { comm: comm_bytes("b"), pid: pids.1, prio: pids.2 };
        let rec = sched_switch::assign(300, preempt, &p, &n, state);
        let mut buf = alloc::vec![0u8; sched_switch::size(preempt, &p, &n, state)];
        sched_switch::write(&mut buf, 300, preempt, &p, &n, state);
        let _ = rec;
        prop_assert_eq!(
            sched_switch::field_test_keep(&f, preempt, &p, &n, state),
            Some(f.matches(&buf, &ENV)),
            "{}", text
        );
        // with_record builds the same bytes the ring buffer gets.
        prop_assert!(sched_switch::with_record(300, preempt, &p, &n, state, |r| r == &buf[..]));
    }
}

#[test]
fn no_field_test_for_others() {
    for text in [
        "common_pid == 1",
        "prev_pid == 1 && next_pid == 2",
        "prev_comm == \"a\"",
        "CPU == 0",
    ] {
        assert!(sw(text).unwrap().field_test().is_none(), "{}", text);
    }
    // A string event: with_record copies its string behind the fixed part.
    use crate::trace_events::vfs::vfs_open;
    let f = Filter::compile("filename ~ \"/tr*\" && ret == -2", vfs_open::FIELDS).unwrap();
    assert!(vfs_open::with_record(360, "/tracing/x", 0, -2, |r| f.matches(r, &ENV)));
    assert!(!vfs_open::with_record(360, "/etc", 0, -2, |r| f.matches(r, &ENV)));
    assert_eq!(vfs_open::field_test_keep(&f, "/x", 0, 0), None);
}

/// Values where the interval form of a test can go wrong: the ends of
/// each width, signed and unsigned, and their neighbours.
fn edge_values() -> Vec<u64> {
    let mut v = Vec::new();
    for bits in [8u32, 16, 32, 64] {
        let max = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let smax = max >> 1;
        for x in [0, 1, 2, smax - 1, smax, smax + 1, smax + 2, max - 1, max] {
            v.push(x);
            v.push(x.wrapping_neg());
        }
    }
    v
}

const ALL_NUM_OPS: [NumOp; 11] = [
    NumOp::Eq,
    NumOp::Ne,
    NumOp::SLt,
    NumOp::SLe,
    NumOp::SGt,
    NumOp::SGe,
    NumOp::ULt,
    NumOp::ULe,
    NumOp::UGt,
    NumOp::UGe,
    NumOp::Band,
];

/// The field test's interval gives the predicate's answer (inverted or
/// not) for every operator and width on the edge values.
#[test]
fn field_test_interval_edges() {
    let edges = edge_values();
    for op in ALL_NUM_OPS {
        for size in [1u32, 2, 4, 8] {
            let Pred::Num { shift, .. } = Pred::num(8, size, op, 0) else {
                unreachable!()
            };
            for invert in [false, true] {
                for &val in &edges {
                    let val = val << shift;
                    let t = FieldTest::new(8, shift, op, val, invert);
                    for &bits in &edges {
                        assert_eq!(
                            t.keep(bits),
                            pred::num_test(bits << shift, op, val) ^ invert,
                            "{op:?} size {size} invert {invert} val {val:#x} bits {bits:#x}"
                        );
                    }
                }
            }
        }
    }
}

proptest! {
    /// The same on random values.
    #[test]
    fn field_test_interval_random(
        op in prop::sample::select(ALL_NUM_OPS.to_vec()),
        size in prop::sample::select(vec![1u32, 2, 4, 8]),
        invert in any::<bool>(),
        val in any::<u64>(),
        bits in proptest::collection::vec(any::<u64>(), 16),
    ) {
        let Pred::Num { shift, .. } = Pred::num(8, size, op, 0) else { unreachable!() };
        let val = val << shift;
        let t = FieldTest::new(8, shift, op, val, invert);
        for b in bits.into_iter().chain([val >> shift, (val >> shift).wrapping_add(1)]) {
            prop_assert_eq!(t.keep(b), pred::num_test(b << shift, op, val) ^ invert);
        }
    }
}
