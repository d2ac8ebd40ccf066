//! `trace_options` and `options/` semantics (Linux 6.6 names, order and
//! defaults).

use tracer::errno::Errno;
use tracer::options::*;

const CORE_DEFAULT: &str =
    "print-parent\nnosym-offset\nnosym-addr\nnoverbose\nnoraw\nnohex\nnobin\n\
trace_printk\nannotate\nnoprintk-msg-only\ncontext-info\nnolatency-format\n\
norecord-tgid\noverwrite\nnodisable_on_free\nirq-info\nmarkers\nnoevent-fork\nnopause-on-trace\n\
function-trace\nnofunction-fork\nnodisplay-graph\n";

#[test]
fn default_listing_per_tracer() {
    let o = TraceOptions::new();
    assert_eq!(
        o.trace_options_text(Tracer::Nop),
        format!("{CORE_DEFAULT}notest_nop_accept\nnotest_nop_refuse\n")
    );
    assert_eq!(
        o.trace_options_text(Tracer::Function),
        format!("{CORE_DEFAULT}nofunc_stack_trace\nnofunc-no-repeats\n")
    );
    assert_eq!(
        o.trace_options_text(Tracer::FunctionGraph),
        format!(
            "{CORE_DEFAULT}nofuncgraph-overrun\nfuncgraph-cpu\nfuncgraph-overhead\nnofuncgraph-proc\nfuncgraph-duration\n\
             nofuncgraph-abstime\nfuncgraph-irqs\nnofuncgraph-tail\nsleep-time\ngraph-time\n"
        )
    );
}

#[test]
fn write_sets_and_clears() {
    let mut o = TraceOptions::new();
    let c = o
        .write_trace_options(Tracer::Function, b"noprint-parent\n")
        .unwrap();
    assert_eq!(
        c,
        OptionChange {
            id: OptionId::Core(TraceOption::PrintParent),
            enabled: false,
            changed: true
        }
    );
    assert!(!o.has(TraceOption::PrintParent));
    assert!(o
        .trace_options_text(Tracer::Function)
        .starts_with("noprint-parent\n"));
    let c = o
        .write_trace_options(Tracer::Function, b"  sym-offset  ")
        .unwrap();
    assert!(c.enabled && c.changed);
    assert!(o.has(TraceOption::SymOffset));
    // Setting again changes nothing.
    assert!(
        !o.write_trace_options(Tracer::Function, b"sym-offset")
            .unwrap()
            .changed
    );
    o.write_trace_options(Tracer::Function, b"func_stack_trace")
        .unwrap();
    assert_eq!(o.tracer_flags(Tracer::Function), func_flags::STACK);
    assert!(o
        .trace_options_text(Tracer::Function)
        .ends_with("func_stack_trace\nnofunc-no-repeats\n"));
}

#[test]
fn bad_writes_change_nothing() {
    let mut o = TraceOptions::new();
    let before = o.clone();
    for bad in [
        &b"bogus"[..],
        b"no",
        b"",
        b"print-parent sym-offset",
        b"nonoprint-parent",
        b"PRINT-PARENT",
        &[0xff, 0xfe][..],
    ] {
        assert_eq!(
            o.write_trace_options(Tracer::Function, bad),
            Err(Errno::EINVAL),
            "{bad:?}"
        );
    }
    // Another tracer's option is unknown while it is not current.
    assert_eq!(
        o.write_trace_options(Tracer::Function, b"funcgraph-proc"),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        o.write_trace_options(Tracer::Nop, b"func_stack_trace"),
        Err(Errno::EINVAL)
    );
    // Longer than Linux's 64-byte buffer.
    assert_eq!(
        o.write_trace_options(Tracer::Function, &[b' '; 64]),
        Err(Errno::EINVAL)
    );
    // nop's self-test option that refuses every change.
    assert_eq!(
        o.write_trace_options(Tracer::Nop, b"test_nop_refuse"),
        Err(Errno::EINVAL)
    );
    assert_eq!(o, before);
    assert!(o
        .write_trace_options(Tracer::Nop, b"test_nop_accept")
        .is_ok());
    assert!(o
        .trace_options_text(Tracer::Nop)
        .ends_with("test_nop_accept\nnotest_nop_refuse\n"));
}

/// Linux options with nothing to act on in this kernel are unknown names:
/// not listed, no file in `options/`, EINVAL when written.
#[test]
fn options_without_meaning_here_are_unknown() {
    let mut o = TraceOptions::new();
    let before = o.clone();
    for name in [
        "block",
        "userstacktrace",
        "sym-userobj",
        "record-cmd",
        "stacktrace",
        "hash-ptr",
        "fields",
    ] {
        for t in [Tracer::Nop, Tracer::Function, Tracer::FunctionGraph] {
            let text = o.trace_options_text(t);
            assert!(
                !text.lines().any(|l| l == name || l == format!("no{name}")),
                "{name}"
            );
            assert_eq!(
                o.write_trace_options(t, name.as_bytes()),
                Err(Errno::EINVAL)
            );
            let neg = format!("no{name}");
            assert_eq!(o.write_trace_options(t, neg.as_bytes()), Err(Errno::EINVAL));
        }
        assert!(!TraceOptions::option_files().any(|f| f == name), "{name}");
        assert_eq!(o.read_option_file(name), Err(Errno::ENOENT));
        assert_eq!(o.write_option_file(name, b"1"), Err(Errno::ENOENT));
    }
    assert_eq!(o, before);
}

/// An instance's `options/` (Linux 6.1, checked with
/// /work/shared/linux/qemu.sh): no trace_printk nor printk-msg-only
/// (TOP_LEVEL_TRACE_FLAGS), and only the options of tracers that can run
/// there (no funcgraph-*, sleep-time, graph-time).
#[test]
fn instance_option_files() {
    let top: Vec<&str> = TraceOptions::option_files_in(true, |_| false).collect();
    assert_eq!(top, TraceOptions::option_files().collect::<Vec<_>>());
    let runs = |t: Tracer| matches!(t, Tracer::Nop | Tracer::Function);
    let inst: Vec<&str> = TraceOptions::option_files_in(false, runs).collect();
    assert_eq!(inst.len(), 22 - 2 + 2 + 2);
    for gone in [
        "trace_printk",
        "printk-msg-only",
        "funcgraph-proc",
        "sleep-time",
        "graph-time",
    ] {
        assert!(!inst.contains(&gone), "{gone}");
    }
    for kept in [
        "print-parent",
        "overwrite",
        "func_stack_trace",
        "test_nop_accept",
        "display-graph",
    ] {
        assert!(inst.contains(&kept), "{kept}");
    }
}

#[test]
fn option_files() {
    let names: Vec<&str> = TraceOptions::option_files().collect();
    assert_eq!(names.len(), 22 + 2 + 2 + 10);
    assert!(
        names.contains(&"funcgraph-proc")
            && names.contains(&"func_stack_trace")
            && names.contains(&"print-parent")
    );
    let mut o = TraceOptions::new();
    assert_eq!(o.read_option_file("print-parent"), Ok("1\n"));
    assert_eq!(o.read_option_file("funcgraph-proc"), Ok("0\n"));
    assert_eq!(o.read_option_file("nope"), Err(Errno::ENOENT));
    // options/ files work whatever the current tracer is.
    o.write_option_file("funcgraph-proc", b"1\n").unwrap();
    assert_eq!(
        o.tracer_flags(Tracer::FunctionGraph) & graph_flags::PRINT_PROC,
        graph_flags::PRINT_PROC
    );
    o.write_option_file("print-parent", b"0").unwrap();
    assert!(!o.has(TraceOption::PrintParent));
    let before = o.clone();
    for bad in [&b"2"[..], b"", b"yes", b"-1", b"1 ", b"0x1"] {
        assert_eq!(
            o.write_option_file("sym-addr", bad),
            Err(Errno::EINVAL),
            "{bad:?}"
        );
    }
    assert_eq!(o, before);
}

#[test]
fn names_and_defaults() {
    assert_eq!(
        TraceOption::from_name("disable_on_free"),
        Some(TraceOption::StopOnFree)
    );
    assert_eq!(
        TraceOption::from_name("pause-on-trace"),
        Some(TraceOption::PauseOnTrace)
    );
    // event-fork: Linux's place (after markers) and default (off).
    assert_eq!(
        TraceOption::from_name("event-fork"),
        Some(TraceOption::EventFork)
    );
    assert!(!TraceOptions::new().has(TraceOption::EventFork));
    assert_eq!(TraceOption::Printk.name(), "trace_printk");
    assert_eq!(
        Tracer::from_name("function_graph"),
        Some(Tracer::FunctionGraph)
    );
    assert_eq!(Tracer::from_name("blk"), None);
    let o = TraceOptions::new();
    for opt in [
        TraceOption::PrintParent,
        TraceOption::IrqInfo,
        TraceOption::Overwrite,
        TraceOption::Markers,
    ] {
        assert!(o.has(opt), "{opt:?}");
    }
    for opt in [
        TraceOption::SymOffset,
        TraceOption::LatencyFmt,
        TraceOption::Verbose,
        TraceOption::Raw,
        TraceOption::RecordTgid,
    ] {
        assert!(!o.has(opt), "{opt:?}");
    }
}

#[test]
fn kstrtoul_like_linux() {
    assert_eq!(parse_kstrtoul(b"42", 0), Ok(42));
    assert_eq!(parse_kstrtoul(b"42\n", 10), Ok(42));
    assert_eq!(parse_kstrtoul(b"0x1f", 0), Ok(31));
    assert_eq!(parse_kstrtoul(b"017", 0), Ok(15));
    assert_eq!(parse_kstrtoul(b"0", 0), Ok(0));
    assert_eq!(parse_kstrtoul(b"+7", 0), Ok(7));
    assert_eq!(parse_kstrtoul(b"08", 0), Err(Errno::EINVAL));
    assert_eq!(parse_kstrtoul(b"12a", 10), Err(Errno::EINVAL));
    assert_eq!(parse_kstrtoul(b"\n", 10), Err(Errno::EINVAL));
    assert_eq!(
        parse_kstrtoul(b"99999999999999999999", 10),
        Err(Errno::ERANGE)
    );
}

/// What tracefs number files accept, as Linux 6.1 answered (max_graph_depth,
/// tracing_thresh): kstrtoul_from_user reads only the first 66 bytes.
#[test]
fn kstrtoul_from_user_reads_66_bytes() {
    let num = |zeros: usize, tail: &str| format!("{}7{tail}", "0".repeat(zeros)).into_bytes();
    // 66 bytes with the newline cut off: still 7.
    assert_eq!(kstrtoul_from_user(&num(65, "\n"), 10), Ok(7));
    assert_eq!(kstrtoul_from_user(&num(65, ""), 10), Ok(7));
    // The 7 is byte 67: never read.
    assert_eq!(kstrtoul_from_user(&num(66, "\n"), 10), Ok(0));
    assert_eq!(kstrtoul_from_user(&num(71, "\n"), 10), Ok(0));
    assert_eq!(
        kstrtoul_from_user(b"18446744073709551615\n", 10),
        Ok(u64::MAX)
    );
    assert_eq!(
        kstrtoul_from_user(b"18446744073709551616\n", 10),
        Err(Errno::ERANGE)
    );
    for bad in [&b"-1\n"[..], b" 7\n", b"7 \n", b"\n", b"0x10\n"] {
        assert_eq!(kstrtoul_from_user(bad, 10), Err(Errno::EINVAL), "{bad:?}");
    }
}
