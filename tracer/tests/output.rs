//! `trace` / `trace_pipe` text for the function and nop tracers, records and
//! format files. Golden strings are copied from real Linux 6.x output (noted
//! per test) or from Linux's format strings with the values of the
//! Documentation/trace/ftrace.rst examples.

mod output_support;

use output_support::*;
use tracer::entry::*;
use tracer::events;
use tracer::options::{TraceOption, Tracer};
use tracer::output::header::BufferStats;
use tracer::output::merge::{Merger, TraceRecord, LOST_EVENTS_UNKNOWN};
use tracer::output::{
    print_context, trace_find_mark, NoSymbols, OutputConfig, TraceIter, TraceSeq,
};

// ---------------------------------------------------------------- records

#[test]
fn trace_entry_layout_is_linux_s() {
    let e = TraceEntry {
        type_: TRACE_FN,
        flags: TRACE_FLAG_IRQS_OFF | TRACE_FLAG_HARDIRQ,
        preempt_count: 0x21,
        pid: 1994,
    };
    let f = FtraceEntry {
        ent: e,
        ip: 0xffff_ffff_8100_1234,
        parent_ip: 0xffff_ffff_8100_5678,
    };
    let mut b = [0u8; 24];
    assert_eq!(f.encode(&mut b), Ok(24));
    assert_eq!(&b[0..2], &1u16.to_le_bytes());
    assert_eq!(b[2], 0x09);
    assert_eq!(b[3], 0x21);
    assert_eq!(&b[4..8], &1994i32.to_le_bytes());
    assert_eq!(&b[8..16], &0xffff_ffff_8100_1234u64.to_le_bytes());
    assert_eq!(&b[16..24], &0xffff_ffff_8100_5678u64.to_le_bytes());
    assert_eq!(FtraceEntry::decode(&b), Ok(f));
    assert_eq!(Entry::decode(&b), Ok(Entry::Function(f)));
}

#[test]
fn type_ids_match_enum_trace_type() {
    assert_eq!(
        (TRACE_FN, TRACE_CTX, TRACE_WAKE, TRACE_STACK, TRACE_PRINT),
        (1, 2, 3, 4, 5)
    );
    assert_eq!(
        (
            TRACE_BPRINT,
            TRACE_GRAPH_RET,
            TRACE_GRAPH_ENT,
            TRACE_USER_STACK,
            TRACE_BPUTS
        ),
        (6, 10, 11, 12, 14)
    );
    assert_eq!((TRACE_RAW_DATA, TRACE_FUNC_REPEATS), (18, 19));
}

#[test]
fn graph_records_are_packed() {
    let g = GraphEntEntry {
        ent: hdr(7, 0, 0),
        func: 0x1122334455667788,
        depth: -2,
    };
    let v = Entry::GraphEnt(g).to_vec();
    assert_eq!(v.len(), 20);
    assert_eq!(&v[0..2], &11u16.to_le_bytes());
    assert_eq!(&v[16..20], &(-2i32).to_le_bytes());
    let r = GraphRetEntry {
        ent: hdr(7, 0, 0),
        func: 5,
        depth: 3,
        overrun: 9,
        calltime: 100,
        rettime: 350,
    };
    let v = Entry::GraphRet(r).to_vec();
    assert_eq!(v.len(), 40);
    assert_eq!(&v[0..2], &10u16.to_le_bytes());
    assert_eq!(&v[16..20], &3i32.to_le_bytes());
    assert_eq!(&v[20..24], &9u32.to_le_bytes());
    assert_eq!(&v[24..32], &100u64.to_le_bytes());
    assert_eq!(&v[32..40], &350u64.to_le_bytes());
    assert_eq!(GraphRetEntry::decode(&v).unwrap().duration(), 250);
}

#[test]
fn decoders_reject_short_and_wrong_input() {
    let v = Entry::Function(FtraceEntry {
        ent: hdr(1, 0, 0),
        ip: 1,
        parent_ip: 2,
    })
    .to_vec();
    for n in 0..24 {
        assert!(Entry::decode(&v[..n]).is_err(), "len {n}");
    }
    assert_eq!(
        FtraceEntry::decode(&v[..10]),
        Err(EntryError::Short { need: 24, got: 10 })
    );
    assert_eq!(
        GraphEntEntry::decode(&v),
        Err(EntryError::WrongType {
            expected: 11,
            found: 1
        })
    );
    let mut small = [0u8; 10];
    assert!(FtraceEntry {
        ent: hdr(1, 0, 0),
        ip: 1,
        parent_ip: 2
    }
    .encode(&mut small)
    .is_err());
    let r = Entry::GraphRet(GraphRetEntry {
        ent: hdr(1, 0, 0),
        func: 1,
        depth: 0,
        overrun: 0,
        calltime: 0,
        rettime: 0,
    })
    .to_vec();
    assert!(Entry::decode(&r[..39]).is_err());
}

#[test]
fn print_entry_appends_newline_and_nul() {
    let p = PrintEntry::marker(hdr(999, 0, 0), 0xffffffff81000010, b"hello");
    assert_eq!(p.buf, b"hello\n");
    let v = Entry::Print(p.clone()).to_vec();
    assert_eq!(v.len(), 16 + 6 + 1);
    assert_eq!(v[v.len() - 1], 0);
    // The ring buffer pads payloads to 4 bytes: the padding is ignored.
    let mut padded = v.clone();
    padded.push(0);
    assert_eq!(PrintEntry::decode(&padded).unwrap(), p);
    let q = PrintEntry::marker(hdr(1, 0, 0), 0, b"already\n");
    assert_eq!(q.buf, b"already\n");
}

#[test]
fn stack_entry_layout_and_ulong_max_end() {
    let s = StackEntry {
        ent: TraceEntry {
            type_: TRACE_STACK,
            ..hdr(3, 0, 0)
        },
        callers: vec![0x10, 0x20, 0x30],
    };
    let v = Entry::Stack(s.clone()).to_vec();
    assert_eq!(v.len(), 16 + 24);
    assert_eq!(&v[8..12], &3i32.to_le_bytes());
    assert_eq!(StackEntry::decode(&v).unwrap(), s);
    let mut w = v.clone();
    w[8..12].copy_from_slice(&8i32.to_le_bytes());
    w.extend_from_slice(&u64::MAX.to_le_bytes());
    w.extend_from_slice(&0x40u64.to_le_bytes());
    assert_eq!(
        StackEntry::decode(&w).unwrap().callers,
        vec![0x10, 0x20, 0x30]
    );
}

#[test]
fn trace_ctx_packs_like_tracing_gen_ctx() {
    let c = TraceCtx::new(TRACE_FLAG_IRQS_OFF, 20, 3);
    assert_eq!(c.0, (1 << 16) | 15 | (3 << 4));
    assert_eq!(c.flags(), 1);
    assert_eq!(c.preempt_count(), 0x3f);
    assert_eq!(TraceCtx::new(0, 2, 0).dec().preempt_count(), 1);
    assert_eq!(TraceCtx::new(0, 0, 0).dec().preempt_count(), 0);
    let e = TraceEntry::new(TRACE_FN, c, 42);
    assert_eq!((e.flags, e.preempt_count, e.pid), (1, 0x3f, 42));
    let ctx = IrqContext {
        irqs_off: true,
        softirq: true,
        need_resched: true,
        ..Default::default()
    };
    assert_eq!(
        ctx.flags(),
        TRACE_FLAG_IRQS_OFF | TRACE_FLAG_SOFTIRQ | TRACE_FLAG_NEED_RESCHED
    );
}

#[test]
fn latency_columns() {
    let s = |f: u8, pc: u8| String::from_utf8(lat_fmt(f, pc).to_vec()).unwrap();
    assert_eq!(s(0, 0), ".....");
    assert_eq!(s(TRACE_FLAG_IRQS_OFF, 0), "d....");
    assert_eq!(s(TRACE_FLAG_IRQS_OFF | TRACE_FLAG_BH_OFF, 0), "D....");
    assert_eq!(s(TRACE_FLAG_BH_OFF, 0), "b....");
    assert_eq!(s(TRACE_FLAG_IRQS_NOSUPPORT, 0), "X....");
    assert_eq!(
        s(TRACE_FLAG_NEED_RESCHED | TRACE_FLAG_PREEMPT_RESCHED, 0),
        ".N..."
    );
    assert_eq!(s(TRACE_FLAG_NEED_RESCHED, 0), ".n...");
    assert_eq!(s(TRACE_FLAG_PREEMPT_RESCHED, 0), ".p...");
    assert_eq!(s(TRACE_FLAG_HARDIRQ, 0), "..h..");
    assert_eq!(s(TRACE_FLAG_SOFTIRQ, 0), "..s..");
    assert_eq!(s(TRACE_FLAG_HARDIRQ | TRACE_FLAG_SOFTIRQ, 0), "..H..");
    assert_eq!(s(TRACE_FLAG_NMI, 0), "..z..");
    assert_eq!(s(TRACE_FLAG_NMI | TRACE_FLAG_HARDIRQ, 0), "..Z..");
    assert_eq!(s(0, 0x01), "...1.");
    assert_eq!(s(0, 0x0c), "...c.");
    assert_eq!(s(0, 0x21), "...12");
    assert_eq!(s(TRACE_FLAG_IRQS_OFF, 0x01), "d..1.");
}

// ---------------------------------------------------------------- format files

/// A real x86_64 `events/ftrace/function/format` (0x1cc = 460 bytes in the
/// dump this was copied from).
#[test]
fn function_format_file() {
    let golden = "name: function\nID: 1\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
        \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
        \n\
        \tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\
        \tfield:unsigned long parent_ip;\toffset:16;\tsize:8;\tsigned:0;\n\
        \n\
        print fmt: \" %ps <-- %ps\", (void *)REC->ip, (void *)REC->parent_ip\n";
    assert_eq!(events::FUNCTION.format_file(), golden);
    assert_eq!(golden.len(), 0x1cc);
}

/// From a Linux 6.5 mail (Rostedt, "tracing: Stop FORTIFY_SOURCE
/// complaining about stack trace caller"), print fmt on one line.
#[test]
fn kernel_stack_format_file() {
    let golden = "name: kernel_stack\nID: 4\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
        \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
        \n\
        \tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n\
        \tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n\
        \n\
        print fmt: \"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\" \"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\" \"\\t=> %ps\\n\\t=> %ps\\n\", \
        (void *)REC->caller[0], (void *)REC->caller[1], (void *)REC->caller[2], (void *)REC->caller[3], \
        (void *)REC->caller[4], (void *)REC->caller[5], (void *)REC->caller[6], (void *)REC->caller[7]\n";
    assert_eq!(events::KERNEL_STACK.format_file(), golden);
}

#[test]
fn graph_and_print_format_files() {
    let exit = events::FUNCGRAPH_EXIT.format_file();
    assert!(exit.contains("\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:int depth;\toffset:16;\tsize:4;\tsigned:1;\n\tfield:unsigned int overrun;\toffset:20;\tsize:4;\tsigned:0;\n\tfield:unsigned long long calltime;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:unsigned long long rettime;\toffset:32;\tsize:8;\tsigned:0;\n\n"));
    assert!(exit.starts_with("name: funcgraph_exit\nID: 10\nformat:\n"));
    assert!(exit.ends_with("print fmt: \"<-- %ps (%d) (start: %llx  end: %llx) over: %d\", (void *)REC->func, REC->depth, REC->calltime, REC->rettime, REC->depth\n"));
    let entry = events::FUNCGRAPH_ENTRY.format_file();
    assert!(entry.contains("\tfield:int depth;\toffset:16;\tsize:4;\tsigned:1;\n\nprint fmt: \"--> %ps (%d)\", (void *)REC->func, REC->depth\n"));
    let print = events::PRINT.format_file();
    assert!(print.contains("\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:1;\n\nprint fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n"));
    // Sizes of the texts trace-cmd 3.1.6 was checked with.
    assert_eq!((entry.len(), exit.len(), print.len()), (446, 707, 425));
    assert_eq!(events::PRINT.id, 5);
}

#[test]
fn header_page_and_header_event() {
    let hp = events::header_page(4080);
    assert_eq!(
        hp,
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
         \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
         \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
         \tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n"
    );
    assert_eq!(hp.len(), 205);
    assert_eq!(
        events::header_event(),
        "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\
         \tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n"
    );
}

// ---------------------------------------------------------------- headers

/// The function tracer's header with the modern (>= 5.19) legend; numbers
/// from the reference notes' example.
#[test]
fn function_header() {
    let (s, t, o) = (Syms(vec![]), Tasks::default(), opts());
    let stats = BufferStats {
        entries: 140080,
        written: 250280,
        online_cpus: 4,
    };
    let out = render_trace(cfg(&o, Tracer::Function, &s, &t, 4), stats, vec![vec![]]);
    assert_eq!(
        out,
        "# tracer: function\n\
         #\n\
         # entries-in-buffer/entries-written: 140080/250280   #P:4\n\
         #\n\
         #                                _-----=> irqs-off/BH-disabled\n\
         #                               / _----=> need-resched\n\
         #                              | / _---=> hardirq/softirq\n\
         #                              || / _--=> preempt-depth\n\
         #                              ||| / _-=> migrate-disable\n\
         #                              |||| /     delay\n\
         #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
         #              | |         |   |||||     |         |\n"
    );
}

/// Copied from a real 6.x `trace` (RK3588 PCIe series, 64/64 #P:8).
#[test]
fn nop_header_real_dump() {
    let (s, t, o) = (Syms(vec![]), Tasks::default(), opts());
    let stats = BufferStats {
        entries: 64,
        written: 64,
        online_cpus: 8,
    };
    let out = render_trace(cfg(&o, Tracer::Nop, &s, &t, 8), stats, vec![vec![]]);
    let golden = concat!(
        "# tracer: nop\n",
        "#\n",
        "# entries-in-buffer/entries-written: 64/64   #P:8\n",
        "#\n",
        "#                                _-----=> irqs-off/BH-disabled\n",
        "#                               / _----=> need-resched\n",
        "#                              | / _---=> hardirq/softirq\n",
        "#                              || / _--=> preempt-depth\n",
        "#                              ||| / _-=> migrate-disable\n",
        "#                              |||| /     delay\n",
        "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n",
        "#              | |         |   |||||     |         |\n",
    );
    assert_eq!(out, golden);
    for line in out.lines() {
        assert_eq!(line, line.trim_end(), "no trailing spaces");
    }
}

#[test]
fn header_variants() {
    let (s, t) = (Syms(vec![]), Tasks::default());
    let stats = BufferStats {
        entries: 2,
        written: 3,
        online_cpus: 1,
    };
    let mut o = opts();
    o.set(TraceOption::IrqInfo, false);
    let out = render_trace(cfg(&o, Tracer::Function, &s, &t, 1), stats, vec![vec![]]);
    assert!(out.ends_with(
        "# entries-in-buffer/entries-written: 2/3   #P:1\n#\n\
         #           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n\
         #              | |         |         |         |\n"
    ));
    o.set(TraceOption::RecordTgid, true);
    let out = render_trace(cfg(&o, Tracer::Function, &s, &t, 1), stats, vec![vec![]]);
    assert!(out.ends_with(
        "#           TASK-PID       TGID    CPU#     TIMESTAMP  FUNCTION\n\
         #              | |           |       |         |         |\n"
    ));
    o.set(TraceOption::IrqInfo, true);
    let out = render_trace(cfg(&o, Tracer::Function, &s, &t, 1), stats, vec![vec![]]);
    assert!(
        out.contains("#                                          _-----=> irqs-off/BH-disabled\n")
    );
    assert!(out.ends_with(
        "#           TASK-PID       TGID    CPU#  |||||  TIMESTAMP  FUNCTION\n\
         #              | |           |       |   |||||     |         |\n"
    ));
    // verbose: only "# tracer" lines; no context-info: same.
    let mut v = opts();
    v.set(TraceOption::Verbose, true);
    assert_eq!(
        render_trace(cfg(&v, Tracer::Nop, &s, &t, 1), stats, vec![vec![]]),
        "# tracer: nop\n#\n"
    );
    let mut c = opts();
    c.set(TraceOption::ContextInfo, false);
    assert_eq!(
        render_trace(cfg(&c, Tracer::Function, &s, &t, 1), stats, vec![vec![]]),
        "# tracer: function\n#\n"
    );
}

// ---------------------------------------------------------------- lines

fn ctx_line(comm: &str, pid: i32, cpu: usize, flags: u8, pc: u8, ts: u64) -> String {
    let (s, o) = (Syms(vec![]), opts());
    let t = Tasks::with(&[(pid, comm)]);
    let c = cfg(&o, Tracer::Nop, &s, &t, 8);
    let mut out = TraceSeq::new();
    print_context(&c, cpu, ts, &hdr(pid, flags, pc), &mut out);
    out.as_str().unwrap().to_string()
}

/// Context prefixes copied from real 6.x `trace` files.
#[test]
fn context_matches_real_dumps() {
    assert_eq!(
        ctx_line("kworker/0:0", 9, 0, 0, 0, 5_600_194_000),
        "     kworker/0:0-9       [000] .....     5.600194: "
    );
    assert_eq!(
        ctx_line("systemd", 1, 2, TRACE_FLAG_IRQS_OFF, 1, 127_240_361_000),
        "         systemd-1       [002] d..1.   127.240361: "
    );
    assert_eq!(
        ctx_line("sh", 113, 4, 0, 0, 6_467_444_000),
        "              sh-113     [004] .....     6.467444: "
    );
    assert_eq!(
        ctx_line("swapper", 0, 5, TRACE_FLAG_IRQS_OFF, 4, 521_164_922_000),
        "          <idle>-0       [005] d..4.   521.164922: "
    );
    let (s, o, t) = (Syms(vec![]), opts(), Tasks::default());
    let mut out = TraceSeq::new();
    print_context(
        &cfg(&o, Tracer::Nop, &s, &t, 8),
        4,
        525_184_257_000,
        &hdr(2, TRACE_FLAG_IRQS_OFF, 4),
        &mut out,
    );
    assert_eq!(
        out.as_str().unwrap(),
        "           <...>-2       [004] d..4.   525.184257: "
    );
}

#[test]
fn timestamp_rounds_to_microseconds_and_comm_is_cut() {
    assert!(ctx_line("bash", 1, 0, 0, 0, 3_082_063_030_499).ends_with(" 3082.063030: "));
    assert!(ctx_line("bash", 1, 0, 0, 0, 3_082_063_030_500).ends_with(" 3082.063031: "));
    assert!(ctx_line("bash", 1, 0, 0, 0, 999_999_999_600).ends_with("  1000.000000: "));
    assert!(ctx_line("bash", 1, 0, 0, 0, 123_456_789_012_345_678).contains(" 123456789.012346: "));
    assert_eq!(
        ctx_line("a-very-long-command-name", 1, 0, 0, 0, 0),
        " a-very-long-com-1       [000] .....     0.000000: "
    );
    assert_eq!(
        ctx_line("x", 12345678, 123, 0, 0, 0),
        "               x-12345678 [123] .....     0.000000: "
    );
}

/// The ftrace.rst function-tracer example values in the 6.x layout.
#[test]
fn function_lines_and_symbol_options() {
    let (s, _) = Syms::layout(&[
        "mutex_unlock",
        "rb_simple_write",
        "__mutex_unlock_slowpath",
        "simple_strtoul",
        "kstrtoul",
    ]);
    let t = Tasks::with(&[(1994, "bash")]);
    let recs = |o: &tracer::options::TraceOptions| {
        render(
            cfg(o, Tracer::Function, &s, &t, 4),
            vec![
                vec![],
                vec![],
                vec![
                    fn_rec(
                        3_082_063_030_000,
                        hdr(1994, 0, 0),
                        s.addr("mutex_unlock"),
                        s.addr("rb_simple_write") + 0x4c,
                    ),
                    fn_rec(
                        3_082_063_031_000,
                        hdr(1994, 0, 0),
                        s.addr("__mutex_unlock_slowpath"),
                        s.addr("mutex_unlock") + 0x10,
                    ),
                    fn_rec(
                        3_082_063_032_000,
                        hdr(1994, 0, 1),
                        s.addr("simple_strtoul") + 6,
                        s.addr("kstrtoul") + 0x1a,
                    ),
                ],
            ],
        )
    };
    let o = opts();
    assert_eq!(
        recs(&o),
        "            bash-1994    [002] .....  3082.063030: mutex_unlock <-rb_simple_write\n\
         \x20           bash-1994    [002] .....  3082.063031: __mutex_unlock_slowpath <-mutex_unlock\n\
         \x20           bash-1994    [002] ...1.  3082.063032: simple_strtoul <-kstrtoul\n"
    );
    let mut np = opts();
    np.set(TraceOption::PrintParent, false);
    assert!(recs(&np).ends_with("3082.063032: simple_strtoul\n"));
    let mut so = opts();
    so.set(TraceOption::SymOffset, true);
    assert!(recs(&so).ends_with("3082.063032: simple_strtoul+0x6/0x100 <-kstrtoul+0x1a/0x100\n"));
    let mut sa = opts();
    sa.set(TraceOption::SymAddr, true);
    assert!(
        recs(&sa).ends_with("simple_strtoul <ffffffff81000306> <-kstrtoul <ffffffff8100041a>\n")
    );
}

#[test]
fn unknown_and_null_addresses() {
    let (s, t) = (Syms(vec![]), Tasks::with(&[(5, "init")]));
    let o = opts();
    let out = render(
        cfg(&o, Tracer::Function, &s, &t, 1),
        vec![vec![fn_rec(1000, hdr(5, 0, 0), 0xffffffff81234567, 0)]],
    );
    assert_eq!(
        out,
        "            init-5       [000] .....     0.000001: 0xffffffff81234567\n"
    );
    let out = render(
        cfg(&o, Tracer::Function, &s, &t, 1),
        vec![vec![fn_rec(1000, hdr(5, 0, 0), 0x10, 0x20)]],
    );
    assert!(out.ends_with(": 0x00000010 <-0x00000020\n"), "{out}");
    let mut so = opts();
    so.set(TraceOption::SymOffset, true);
    let out = render(
        cfg(&so, Tracer::Function, &s, &t, 1),
        vec![vec![fn_rec(1000, hdr(5, 0, 0), 0x10, 0x20)]],
    );
    assert!(out.ends_with(": 0x10 <-0x20\n"), "{out}");
    let c = OutputConfig::new(&o, Tracer::Function, &NoSymbols, &t, 1);
    let out = render(c, vec![vec![stack_rec(1, hdr(5, 0, 0), &[0])]]);
    assert!(out.ends_with("<stack trace>\n => 0\n"));
}

/// `           <...>-999     [001] .....  2296.140373: tracing_mark_write: hello`
/// (LKML sample quoted in the reference notes).
#[test]
fn trace_marker_line() {
    let (s, _) = Syms::layout(&["tracing_mark_write"]);
    let t = Tasks::default();
    let o = opts();
    let out = render(
        cfg(&o, Tracer::Nop, &s, &t, 2),
        vec![
            vec![],
            vec![print_rec(
                2_296_140_373_000,
                hdr(999, 0, 0),
                s.addr("tracing_mark_write") + 0x55,
                "hello",
            )],
        ],
    );
    assert_eq!(
        out,
        "           <...>-999     [001] .....  2296.140373: tracing_mark_write: hello\n"
    );
    let mut m = opts();
    m.set(TraceOption::PrintkMsgOnly, true);
    let out = render(
        cfg(&m, Tracer::Nop, &s, &t, 1),
        vec![vec![print_rec(1, hdr(999, 0, 0), 0, "only")]],
    );
    assert_eq!(out, "only\n");
}

#[test]
fn func_stack_trace_lines() {
    let (s, _) = Syms::layout(&["mutex_unlock", "rb_simple_write", "vfs_write", "ksys_write"]);
    let t = Tasks::with(&[(1994, "bash")]);
    let o = opts();
    let out = render(
        cfg(&o, Tracer::Function, &s, &t, 4),
        vec![
            vec![],
            vec![],
            vec![
                fn_rec(
                    3_082_063_030_000,
                    hdr(1994, 0, 0),
                    s.addr("mutex_unlock"),
                    s.addr("rb_simple_write") + 0x4c,
                ),
                stack_rec(
                    3_082_063_031_000,
                    hdr(1994, 0, 0),
                    &[
                        s.addr("rb_simple_write") + 0x4c,
                        s.addr("vfs_write") + 0xc8,
                        s.addr("ksys_write") + 0x6f,
                    ],
                ),
            ],
        ],
    );
    assert_eq!(
        out,
        "            bash-1994    [002] .....  3082.063030: mutex_unlock <-rb_simple_write\n\
         \x20           bash-1994    [002] .....  3082.063031: <stack trace>\n\
         \x20=> rb_simple_write\n\
         \x20=> vfs_write\n\
         \x20=> ksys_write\n"
    );
    let mut so = opts();
    so.set(TraceOption::SymOffset, true);
    let out = render(
        cfg(&so, Tracer::Function, &s, &t, 1),
        vec![vec![stack_rec(
            1,
            hdr(1994, 0, 0),
            &[s.addr("vfs_write") + 0xc8],
        )]],
    );
    assert!(out.ends_with("<stack trace>\n => vfs_write+0xc8/0x100\n"));
}

#[test]
fn lost_events_lines() {
    let (s, _) = Syms::layout(&["f", "g"]);
    let t = Tasks::with(&[(1, "init")]);
    let o = opts();
    let mut a = fn_rec(1_000_000, hdr(1, 0, 0), s.addr("f"), s.addr("g"));
    a.lost_events = 42;
    let mut b = fn_rec(2_000_000, hdr(1, 0, 0), s.addr("f"), s.addr("g"));
    b.lost_events = LOST_EVENTS_UNKNOWN;
    let out = render(
        cfg(&o, Tracer::Function, &s, &t, 2),
        vec![vec![], vec![a, b]],
    );
    assert_eq!(
        out,
        "CPU:1 [LOST 42 EVENTS]\n\
         \x20           init-1       [001] .....     0.001000: f <-g\n\
         CPU:1 [LOST EVENTS]\n\
         \x20           init-1       [001] .....     0.002000: f <-g\n"
    );
}

#[test]
fn merger_orders_by_timestamp_ties_to_lowest_cpu() {
    let r = |ts| TraceRecord::new(ts, vec![]);
    let m = Merger::new(vec![
        vec![r(5), r(9)].into_iter(),
        vec![r(1), r(5), r(20)].into_iter(),
        vec![].into_iter(),
        vec![r(7)].into_iter(),
    ]);
    let order: Vec<(usize, u64)> = m.map(|(c, e)| (c, e.ts)).collect();
    assert_eq!(order, vec![(1, 1), (0, 5), (1, 5), (3, 7), (0, 9), (1, 20)]);
    let mut m = Merger::new(vec![vec![r(3)].into_iter(), vec![r(2)].into_iter()]);
    assert_eq!(m.peek().map(|(c, e)| (c, e.ts)), Some((1, 2)));
    assert_eq!(m.peek_cpu(0).map(|e| e.ts), Some(3));
    assert_eq!(m.next_cpu(0).map(|e| e.ts), Some(3));
    assert_eq!(m.next().map(|(c, e)| (c, e.ts)), Some((1, 2)));
    assert!(m.is_empty());
}

#[test]
fn raw_option_and_garbage_payloads() {
    let (s, _) = Syms::layout(&["f"]);
    let t = Tasks::default();
    let mut o = opts();
    o.set(TraceOption::Raw, true);
    let out = render(
        cfg(&o, Tracer::Function, &s, &t, 1),
        vec![vec![fn_rec(12345, hdr(7, 0, 0), 0xabc, 0xdef)]],
    );
    assert_eq!(out, "7 0 12345 abc def\n");
    // A truncated payload must not panic.
    let o = opts();
    let out = render(
        cfg(&o, Tracer::Function, &s, &t, 1),
        vec![
            vec![TraceRecord::new(1, vec![1, 0, 0])],
            vec![TraceRecord::new(2, vec![1, 0, 0, 0, 0, 0, 0, 0, 1])],
        ],
    );
    assert_eq!(out, "Unknown type -1\nUnknown type 1\n");
    let out = render(
        cfg(&o, Tracer::Function, &s, &t, 1),
        vec![vec![TraceRecord::new(1, vec![77, 0, 0, 0, 1, 0, 0, 0])]],
    );
    assert!(out.ends_with("Unknown type 77\n"));
}

/// `hex`: pid, cpu and time stamp, then the function's ip and parent, each
/// a field in hex (most significant byte first) and a space; a marker has
/// no hex printer and prints `type: 5` (Linux 6.1 printed
/// `0000005e 00000000 000000021b7f402c type: 5` and an empty line).
#[test]
fn hex_option() {
    let (s, _) = Syms::layout(&["f"]);
    let t = Tasks::default();
    let mut o = opts();
    o.set(TraceOption::Hex, true);
    let out = render(
        cfg(&o, Tracer::Function, &s, &t, 2),
        vec![
            vec![fn_rec(
                0x21b7f402c,
                hdr(0x5e, 0, 0),
                0xffffffff8100abcd,
                0x12,
            )],
            vec![print_rec(0x21b7f4100, hdr(0x5e, 0, 0), 0x34, "hello\n")],
        ],
    );
    assert_eq!(
        out,
        "0000005e 00000000 000000021b7f402c ffffffff8100abcd 0000000000000012 \n\
         0000005e 00000001 000000021b7f4100 type: 5\n\n"
    );
    // Without context-info: the event's fields only; raw gives way to hex.
    o.set(TraceOption::ContextInfo, false);
    o.set(TraceOption::Raw, true);
    let out = render(
        cfg(&o, Tracer::Function, &s, &t, 1),
        vec![vec![fn_rec(1, hdr(1, 0, 0), 0xab, 0xcd)]],
    );
    assert_eq!(out, "00000000000000ab 00000000000000cd \n");
}

/// `bin`: the same fields as raw little-endian bytes, no separators; a
/// marker prints `type: 5\n` (Linux 6.1: `5e 00 00 00 00 00 00 00 2c 40 7f
/// 1b 02 00 00 00 74 79 70 65 3a 20 35 0a`). bin wins over hex and raw.
#[test]
fn bin_option() {
    let (s, _) = Syms::layout(&["f"]);
    let t = Tasks::default();
    let mut o = opts();
    o.set(TraceOption::Bin, true);
    o.set(TraceOption::Hex, true);
    let out = render_bytes(
        cfg(&o, Tracer::Function, &s, &t, 2),
        vec![
            vec![fn_rec(
                0x21b7f402c,
                hdr(0x5e, 0, 0),
                0xffffffff8100abcd,
                0x12,
            )],
            vec![print_rec(0x21b7f4100, hdr(0x5e, 0, 0), 0x34, "hello\n")],
        ],
    );
    let mut want = Vec::new();
    want.extend_from_slice(&0x5e_i32.to_le_bytes());
    want.extend_from_slice(&0_i32.to_le_bytes());
    want.extend_from_slice(&0x21b7f402c_u64.to_le_bytes());
    want.extend_from_slice(&0xffffffff8100abcd_u64.to_le_bytes());
    want.extend_from_slice(&0x12_u64.to_le_bytes());
    want.extend_from_slice(&[0x5e, 0, 0, 0, 1, 0, 0, 0]);
    want.extend_from_slice(&0x21b7f4100_u64.to_le_bytes());
    want.extend_from_slice(b"type: 5\n");
    assert_eq!(out, want);
    // A lost-events note stays text, before the event's bytes.
    let mut r = fn_rec(7, hdr(1, 0, 0), 0xab, 0xcd);
    r.lost_events = 3;
    let out = render_bytes(cfg(&o, Tracer::Function, &s, &t, 1), vec![vec![r]]);
    assert!(out.starts_with(b"CPU:0 [LOST 3 EVENTS]\n\x01\0\0\0\0\0\0\0\x07"));
    assert_eq!(out.len(), 22 + 32);
}

/// Latency format, from a real v6.14 irqsoff dump (`stat_rea-96532 52d....`).
#[test]
fn latency_format_lines_and_header() {
    let (s, _) = Syms::layout(&["_raw_spin_lock_irq", "cgroup_rstat_flush"]);
    let t = Tasks::with(&[(96532, "stat_reader")]);
    let mut o = opts();
    o.set(TraceOption::LatencyFmt, true);
    let mut c = cfg(&o, Tracer::Function, &s, &t, 64);
    c.time_start = 1_000_000_000;
    let mut cpus = vec![vec![]; 53];
    cpus[52] = vec![
        fn_rec(
            1_000_000_000,
            hdr(96532, TRACE_FLAG_IRQS_OFF, 0),
            s.addr("_raw_spin_lock_irq"),
            0,
        ),
        fn_rec(
            1_045_342_000,
            hdr(96532, TRACE_FLAG_IRQS_OFF, 0),
            s.addr("cgroup_rstat_flush"),
            0,
        ),
    ];
    let out = render(c, cpus);
    assert_eq!(
        out,
        "stat_rea-96532    52d....    0us*: _raw_spin_lock_irq\n\
         stat_rea-96532    52d.... 45342us : cgroup_rstat_flush\n"
    );
    let mut hdr_seq = TraceSeq::new();
    tracer::output::header::print_lat_help_header(&mut hdr_seq);
    let hdr_out = hdr_seq.as_str().unwrap();
    assert!(hdr_out.starts_with(
        "#                    _------=> CPU#            \n#                   / _-----=> irqs-off/BH-disabled\n"
    ));
    assert!(hdr_out.ends_with(
        "#  cmd     pid     |||||| time  |   caller     \n#     \\   /        ||||||  \\    |    /       \n"
    ));
}

#[test]
fn annotate_marks_cpu_buffer_start_after_overrun() {
    let (s, _) = Syms::layout(&["f"]);
    let t = Tasks::with(&[(1, "a")]);
    let o = opts();
    let f = s.addr("f");
    let cpus = vec![
        vec![
            fn_rec(1000, hdr(1, 0, 0), f, 0),
            fn_rec(2000, hdr(1, 0, 0), f, 0),
        ],
        vec![fn_rec(3000, hdr(1, 0, 0), f, 0)],
    ];
    let mut m = Merger::new(cpus.into_iter().map(|v| v.into_iter()).collect());
    let mut it = TraceIter::new(cfg(&o, Tracer::Function, &s, &t, 2), 2, true);
    let mut out = TraceSeq::new();
    it.print_all(&mut m, &mut out);
    let out = out.as_str().unwrap().to_string();
    assert_eq!(out.matches("##### CPU 1 buffer started ####\n").count(), 1);
    assert!(!out.contains("CPU 0 buffer started"));
}

#[test]
fn trace_pipe_consumes_and_has_no_header() {
    let (s, _) = Syms::layout(&["f"]);
    let t = Tasks::with(&[(1, "a")]);
    let o = opts();
    let mut m = Merger::new(vec![
        vec![fn_rec(1000, hdr(1, 0, 0), s.addr("f"), 0)].into_iter()
    ]);
    let c: OutputConfig = cfg(&o, Tracer::Function, &s, &t, 1);
    let mut it = TraceIter::new(c, 1, false);
    let mut out = TraceSeq::new();
    assert!(it.print_line(&mut m, &mut out));
    assert!(!it.print_line(&mut m, &mut out));
    let out = out.as_str().unwrap().to_string();
    assert!(!out.starts_with('#'));
    assert_eq!(out.lines().count(), 1);
}

#[test]
fn overhead_marks_thresholds() {
    let cases = [
        (0, ' '),
        (10_000, ' '),
        (10_001, '+'),
        (100_000, '+'),
        (100_001, '!'),
        (1_000_000, '!'),
        (1_000_001, '#'),
        (10_000_000, '#'),
        (10_000_001, '*'),
        (100_000_000, '*'),
        (100_000_001, '@'),
        (1_000_000_000, '@'),
        (1_000_000_001, '$'),
    ];
    for (d, m) in cases {
        assert_eq!(trace_find_mark(d), m, "{d}");
    }
}

#[test]
fn verbose_latency_line() {
    let (s, _) = Syms::layout(&["simple_strtoul", "kstrtoul"]);
    let t = Tasks::with(&[(4000, "bash")]);
    let mut o = opts();
    o.set(TraceOption::LatencyFmt, true);
    o.set(TraceOption::Verbose, true);
    let out = render(
        cfg(&o, Tracer::Function, &s, &t, 2),
        vec![
            vec![],
            vec![
                fn_rec(
                    1_720_415_000,
                    hdr(4000, TRACE_FLAG_IRQS_OFF, 0),
                    s.addr("simple_strtoul"),
                    s.addr("kstrtoul") + 1,
                ),
                fn_rec(1_720_416_500, hdr(4000, 0, 0), s.addr("kstrtoul"), 0),
            ],
        ],
    );
    assert_eq!(
        out,
        "            bash    4000   1 1 00000000 00000000 [001a405f] 1720.415ms (+0.002ms): simple_strtoul <-kstrtoul\n\
         \x20           bash    4000   1 0 00000000 00000001 [001a4061] 1720.417ms (+0.000ms): kstrtoul\n"
    );
}

#[test]
fn whole_trace_file_helper() {
    let (s, _) = Syms::layout(&["f"]);
    let t = Tasks::with(&[(1, "init")]);
    let o = opts();
    let mut m = Merger::new(vec![
        vec![fn_rec(1000, hdr(1, 0, 0), s.addr("f"), 0)].into_iter()
    ]);
    let mut out = TraceSeq::new();
    let stats = BufferStats {
        entries: 1,
        written: 1,
        online_cpus: 1,
    };
    tracer::output::write_trace_file(
        &mut out,
        cfg(&o, Tracer::Function, &s, &t, 1),
        None,
        &stats,
        &Default::default(),
        &mut m,
        1,
        false,
    );
    let out = out.as_str().unwrap().to_string();
    assert!(
        out.starts_with("# tracer: function\n#\n# entries-in-buffer/entries-written: 1/1   #P:1\n")
    );
    assert!(out.ends_with("#              | |         |   |||||     |         |\n            init-1       [000] .....     0.000001: f\n"));
}

#[test]
fn func_no_repeats_record() {
    let (s, _) = Syms::layout(&["mutex_unlock", "rb_simple_write"]);
    let t = Tasks::with(&[(1994, "bash")]);
    let r = FuncRepeatsEntry {
        ent: hdr(1994, 0, 0),
        ip: s.addr("mutex_unlock"),
        parent_ip: s.addr("rb_simple_write") + 8,
        count: 3,
        top_delta_ts: 0,
        bottom_delta_ts: 2_000,
    };
    let v = Entry::FuncRepeats(r).to_vec();
    assert_eq!(v.len(), 32);
    assert_eq!(&v[0..2], &19u16.to_le_bytes());
    assert_eq!(&v[24..26], &3u16.to_le_bytes());
    let big = FuncRepeatsEntry {
        top_delta_ts: 1,
        bottom_delta_ts: 5,
        ..r
    };
    assert_eq!(big.delta_ts(), (1 << 32) | 5);
    let o = opts();
    let out = render(
        cfg(&o, Tracer::Function, &s, &t, 1),
        vec![vec![TraceRecord::new(3_082_063_032_000, v)]],
    );
    assert_eq!(
        out,
        "            bash-1994    [000] .....  3082.063032: mutex_unlock <-rb_simple_write (repeats: 3, last_ts:  3082.063030)\n"
    );
}

/// An empty `snapshot` file, as Linux 6.1 prints it (captured from its
/// `cat snapshot` and `cat per_cpu/cpu0/snapshot`; the per-CPU `echo 1`
/// line is the one of kernels built with CONFIG_RING_BUFFER_ALLOW_SWAP).
#[test]
fn snapshot_file_help_when_empty() {
    use tracer::output::header::SnapshotHelp;
    let (s, _) = Syms::layout(&["f"]);
    let t = Tasks::with(&[(1, "init")]);
    let o = opts();
    let render = |tracer: Tracer, recs: Vec<TraceRecord>, help: SnapshotHelp| {
        let mut m = Merger::new(vec![recs.into_iter()]);
        let mut out = TraceSeq::new();
        let stats = BufferStats {
            entries: 1,
            written: 1,
            online_cpus: 1,
        };
        tracer::output::write_snapshot_file(
            &mut out,
            cfg(&o, tracer, &s, &t, 1),
            None,
            &stats,
            &Default::default(),
            &mut m,
            1,
            false,
            help,
        );
        out.as_str().unwrap().to_string()
    };
    let main_help = "# Snapshot commands:\n\
        # echo 0 > snapshot : Clears and frees snapshot buffer\n\
        # echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n\
        #                      Takes a snapshot of the main buffer.\n\
        # echo 2 > snapshot : Clears snapshot buffer (but does not allocate or free)\n\
        #                      (Doesn't have to be '2' works with any number that\n\
        #                       is not a '0' or '1')\n";
    let help = |allocated, per_cpu| SnapshotHelp { allocated, per_cpu };
    assert_eq!(
        render(Tracer::Nop, vec![], help(false, false)),
        format!("# tracer: nop\n#\n#\n# * Snapshot is freed *\n#\n{main_help}")
    );
    assert_eq!(
        render(Tracer::Function, vec![], help(true, false)),
        format!("# tracer: function\n#\n#\n# * Snapshot is allocated *\n#\n{main_help}")
    );
    assert_eq!(
        render(Tracer::Nop, vec![], help(true, true)),
        "# tracer: nop\n\
         #\n\
         #\n\
         # * Snapshot is allocated *\n\
         #\n\
         # Snapshot commands:\n\
         # echo 0 > snapshot : Invalid for per_cpu snapshot file.\n\
         # echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n\
         #                      Takes a snapshot of the main buffer for this cpu.\n\
         # echo 2 > snapshot : Clears this cpu's snapshot buffer (but does not allocate)\n\
         #                      (Doesn't have to be '2' works with any number that\n\
         #                       is not a '0' or '1')\n"
    );
    // With events, the `trace` file's text.
    let rec = || vec![fn_rec(1000, hdr(1, 0, 0), s.addr("f"), 0)];
    let snap = render(Tracer::Function, rec(), help(true, false));
    let mut m = Merger::new(vec![rec().into_iter()]);
    let mut out = TraceSeq::new();
    let stats = BufferStats {
        entries: 1,
        written: 1,
        online_cpus: 1,
    };
    tracer::output::write_trace_file(
        &mut out,
        cfg(&o, Tracer::Function, &s, &t, 1),
        None,
        &stats,
        &Default::default(),
        &mut m,
        1,
        false,
    );
    assert_eq!(snap, out.as_str().unwrap());
    assert!(snap.ends_with(": f\n") && !snap.contains("Snapshot"));
}
