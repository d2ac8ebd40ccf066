//! trace.dat writer: files built from hand-made pages are read back by our
//! parser and by `trace-cmd dump` and `trace-cmd report` (required:
//! `tests/run.sh` installs trace-cmd), whose output must equal
//! `ktrace report`'s.
mod tracedat_common;

use std::path::{Path, PathBuf};
use std::process::Command;

use build_tools::tracedat::dat::{TraceDat, OPTION_UNAME};
use build_tools::tracedat::report::{report, ReportOptions};
use build_tools::tracedat::trace_dat_from_transfer;

fn sample() -> TraceDat {
    trace_dat_from_transfer(&tracedat_common::transfer()).unwrap()
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tracedat-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// `trace-cmd ARGS`. trace-cmd is required: `tests/run.sh` installs it.
fn trace_cmd(args: &[&str]) -> String {
    let out = Command::new("trace-cmd").args(args).output().unwrap_or_else(|e| {
        panic!(
            "cannot run trace-cmd ({e}): install it (apt-get install -y trace-cmd; tests/run.sh does)"
        )
    });
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "trace-cmd {args:?} failed: {stderr}\n{stdout}"
    );
    stdout + &stderr
}

fn write(path: &Path, dat: &TraceDat) {
    std::fs::write(path, dat.to_bytes().unwrap()).unwrap();
}

#[test]
fn round_trip_through_our_parser() {
    let dat = sample();
    let bytes = dat.to_bytes().unwrap();
    let back = TraceDat::parse(&bytes).unwrap();
    assert_eq!(back, dat);
    assert_eq!(back.uname().as_deref(), Some("ktrace 0.1.0 x86_64"));
    assert_eq!(back.cpus.len(), 2);
    assert!(back.cpus[1].len() >= 3 * 4096, "CPU 1 spans several pages");
}

#[test]
fn layout_follows_the_v6_spec() {
    let dat = sample();
    let b = dat.to_bytes().unwrap();
    assert_eq!(&b[..10], b"\x17\x08\x44tracing");
    assert_eq!(&b[10..12], b"6\0");
    assert_eq!(b[12], 0, "little endian");
    assert_eq!(b[13], 8, "sizeof(long)");
    assert_eq!(u32::from_le_bytes(b[14..18].try_into().unwrap()), 4096);
    assert_eq!(&b[18..30], b"header_page\0");
    assert_eq!(
        u64::from_le_bytes(b[30..38].try_into().unwrap()),
        205,
        "Linux's header_page is 205 bytes"
    );
    // The cmdlines length is a u64: find it right before the text.
    let cmd = b"1 init\n42 worker\n";
    let at = b.windows(cmd.len()).position(|w| w == cmd).unwrap();
    assert_eq!(
        u64::from_le_bytes(b[at - 8..at].try_into().unwrap()),
        cmd.len() as u64
    );
    // Then the CPU count, "options  \0", UNAME, end of options, flyrecord.
    let mut p = at + cmd.len();
    assert_eq!(u32::from_le_bytes(b[p..p + 4].try_into().unwrap()), 2);
    p += 4;
    assert_eq!(&b[p..p + 10], b"options  \0");
    p += 10;
    assert_eq!(
        u16::from_le_bytes(b[p..p + 2].try_into().unwrap()),
        OPTION_UNAME
    );
    let size = u32::from_le_bytes(b[p + 2..p + 6].try_into().unwrap()) as usize;
    p += 6 + size;
    assert_eq!(&b[p..p + 2], &[0, 0]);
    p += 2;
    assert_eq!(&b[p..p + 10], b"flyrecord\0");
    p += 10;
    for cpu in 0..2 {
        let off = u64::from_le_bytes(b[p..p + 8].try_into().unwrap());
        let size = u64::from_le_bytes(b[p + 8..p + 16].try_into().unwrap());
        assert_eq!(off % 4096, 0, "CPU {cpu} data is page-aligned");
        assert_eq!(size as usize, dat.cpus[cpu].len());
        assert_eq!(&b[off as usize..(off + size) as usize], &dat.cpus[cpu][..]);
        p += 16;
    }
}

#[test]
fn bad_descriptions_are_refused() {
    let mut dat = sample();
    dat.header_page.clear();
    assert!(dat.to_bytes().unwrap_err().0.contains("header_page"));
    let mut dat = sample();
    dat.cpus[0].push(0);
    assert!(dat.to_bytes().unwrap_err().0.contains("whole pages"));
    let mut dat = sample();
    dat.long_size = 3;
    assert!(dat.to_bytes().is_err());
    let mut dat = sample();
    dat.options.push((4, Vec::new())); // TRACECLOCK without its text
    assert!(dat.to_bytes().is_err());
}

#[test]
fn truncated_or_damaged_files_give_errors_not_panics() {
    let bytes = sample().to_bytes().unwrap();
    // Every cut before the last CPU's data ends is an error.
    let last_end = bytes.len();
    for cut in (0..last_end).step_by(97).chain([last_end - 1]) {
        assert!(
            TraceDat::parse(&bytes[..cut]).is_err(),
            "cut at {cut} accepted"
        );
    }
    // Garbage lengths anywhere in the header must not panic.
    for i in (0..3000).step_by(7) {
        let mut b = bytes.clone();
        b[i] ^= 0xff;
        let _ = TraceDat::parse(&b);
    }
}

#[test]
fn transfer_without_metadata_is_refused() {
    let mut t = tracedat_common::transfer();
    t.files.remove("events/header_page");
    assert!(trace_dat_from_transfer(&t)
        .unwrap_err()
        .0
        .contains("header_page"));
    let mut t = tracedat_common::transfer();
    t.files.retain(|k, _| !k.starts_with("events/ftrace/"));
    assert!(trace_dat_from_transfer(&t).is_err());
    // A page whose events run past commit is not written into a file.
    let mut t = tracedat_common::transfer();
    t.pages[0][0][8..16].copy_from_slice(&4000u64.to_le_bytes());
    assert!(trace_dat_from_transfer(&t).is_err());
}

#[test]
fn trace_cmd_dump_reads_every_section() {
    let path = temp("dump.dat");
    write(&path, &sample());
    let out = trace_cmd(&["dump", "--summary", "-i", path.to_str().unwrap()]);
    let mut systems: Vec<&str> = tracer::trace_events::all_events()
        .map(|e| e.system)
        .collect();
    systems.dedup();
    assert!(systems.contains(&"sched"));
    let systems = format!("[Events format, {} systems]", systems.len());
    let ftrace = format!(
        "[Ftrace format, {} events]",
        tracer::events::FTRACE_EVENTS.len()
    );
    for want in [
        "6\t[Version]",
        "8\t[Bytes in a long]",
        "4096\t[Page size, bytes]",
        "[Header page, 205 bytes]",
        &ftrace,
        &systems,
        "[Saved command lines, 17 bytes]",
        "2 [CPUs with tracing data]",
        "[1 options]",
        "[Flyrecord tracing data]",
    ] {
        assert!(out.contains(want), "trace-cmd dump lacks {want:?}:\n{out}");
    }
    let out = trace_cmd(&["dump", "--ftrace-events", "-i", path.to_str().unwrap()]);
    for e in [
        "function",
        "funcgraph_entry",
        "funcgraph_exit",
        "print",
        "kernel_stack",
        "func_repeats",
        "context_switch",
        "wakeup",
    ] {
        assert!(out.contains(&format!("name: {e}\n")), "{e} missing:\n{out}");
    }
    // Every declared event's format, byte for byte, under its system.
    let out = trace_cmd(&["dump", "--events", "-i", path.to_str().unwrap()]);
    for e in tracer::trace_events::all_events() {
        assert!(
            out.contains(&e.format_file()),
            "{}:{} missing:\n{out}",
            e.system,
            e.name
        );
    }
}

/// Our report equals trace-cmd's for the whole sample: function lines with
/// the plugin's indentation, folded and nested function_graph calls with
/// every overhead mark, prints (long ones too), unknown tasks, the idle
/// task, the 3 s gap, rounding at a second boundary, and func_repeats
/// records (one with a delta beyond 32 bits).
#[test]
fn report_equals_trace_cmd_report() {
    let dat = sample();
    let path = temp("report.dat");
    write(&path, &dat);
    let p = path.to_str().unwrap();
    let ours = report(&dat, &ReportOptions::default()).unwrap();
    assert!(ours.starts_with("cpus=2\n"));
    assert!(ours.contains("tracing_mark_write: cpu1 after a 3 s gap"));
    assert!(ours.contains("|  helper_a() {"));
    assert!(ours.contains("$ 12345678901 us |    leaf_c();"));
    assert!(!ours.contains("FAILED TO PARSE"));
    assert!(ours.contains(" func_repeats:            leaf_c (count: 3  last_ts:     5.000899)"));
    assert!(ours.contains(" helper_b (count: 65535  last_ts:     3.000777)"));
    // Scheduler events in the sched plugin's format (trace-cmd's own).
    for want in [
        "init-1     [000]     5.000950: sched_wakeup:         worker:42 [120] CPU:000\n",
        "init-1     [000]     5.000951: sched_switch:         init:1 [120] S ==> worker:42 [120]\n",
        "worker-42    [000]     5.000952: sched_switch:         worker:42 [120] R ==> init:1 [120]\n",
        "init-1     [000]     5.000953: sched_switch:         init:1 [120] D ==> swapper/0:0 [120]\n",
        // The wakeup tracers' records, by their print fmt.
        "init-1     [000]     5.000954: wakeup:               1:120:0  ==+ 42:49:0 [000]\n",
        "init-1     [000]     5.000955: context_switch:       1:120:1  ==> 42:49:0 [000]\n",
    ] {
        assert!(ours.contains(want), "no {want:?} in\n{ours}");
    }
    let theirs = trace_cmd(&["report", p]);
    assert_eq!(ours, theirs);
    // Without plugins (-N), libtraceevent evaluates the print fmt line of
    // our format files: it must give the kernel's own text for the record.
    let plain = trace_cmd(&["report", "-N", p]);
    for rec in [
        tracedat_common::sched_switch(("worker", 42), 0, true, ("init", 1)),
        tracedat_common::sched_switch(("init", 1), 2, false, ("swapper/0", 0)),
        tracedat_common::sched_wakeup(1, ("worker", 42), 0),
    ] {
        let call = tracer::trace_events::find_event(u16::from_le_bytes([rec[0], rec[1]])).unwrap();
        let mut text = tracer::output::TraceSeq::new();
        (call.print)(
            &rec,
            &mut text,
            &build_tools::tracedat::report::Symbols::parse(""),
        );
        let text = text.as_str().unwrap().to_string();
        assert!(
            plain.contains(&format!("{}: ", call.name)) && plain.contains(&format!(" {text}\n")),
            "{text:?} not in\n{plain}"
        );
    }

    let parent = report(
        &dat,
        &ReportOptions {
            parent: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(parent.contains("do_work <-- kernel_main"));
    assert_eq!(parent, trace_cmd(&["report", "-O", "parent=1", p]));

    let cpu1 = report(
        &dat,
        &ReportOptions {
            cpus: vec![1],
            ..Default::default()
        },
    )
    .unwrap();
    assert!(cpu1.lines().skip(1).all(|l| l.contains("[001]")));
    assert_eq!(cpu1, trace_cmd(&["report", "--cpu", "1", p]));

    let prints = report(
        &dat,
        &ReportOptions {
            events: vec!["print".into()],
            cpus: vec![1],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(prints.lines().count(), 2);
    assert_eq!(
        prints,
        trace_cmd(&["report", "--cpu", "1", "-F", "print", p])
    );
}

/// A page flagged RB_MISSED_EVENTS (with and without the stored count)
/// shows the drop line in both reports.
#[test]
fn dropped_events_are_reported() {
    let mut t = tracedat_common::transfer();
    let page = &mut t.pages[1][1];
    let commit = u64::from_le_bytes(page[8..16].try_into().unwrap()) as usize;
    assert!(commit + 8 <= 4080, "room for the stored count");
    let flags = (1u64 << 31) | (1 << 30);
    page[8..16].copy_from_slice(&(commit as u64 | flags).to_le_bytes());
    page[16 + commit..24 + commit].copy_from_slice(&1234u64.to_le_bytes());
    let commit2 = u64::from_le_bytes(t.pages[1][2][8..16].try_into().unwrap());
    t.pages[1][2][8..16].copy_from_slice(&(commit2 | (1 << 31)).to_le_bytes());
    let dat = trace_dat_from_transfer(&t).unwrap();
    let ours = report(&dat, &ReportOptions::default()).unwrap();
    assert!(ours.contains("CPU:1 [1234 EVENTS DROPPED]\n"));
    assert!(ours.contains("CPU:1 [EVENTS DROPPED]\n"));
    let path = temp("dropped.dat");
    write(&path, &dat);
    let theirs = trace_cmd(&["report", path.to_str().unwrap()]);
    assert_eq!(ours, theirs);
}

/// The `events/ftrace/*/format` files trace.dat carries describe exactly the
/// bytes the encoders write: every field read at the format's offset and
/// size gives the value encoded, and the fields end where the record does
/// (trace-cmd lays records out by the format alone; a field the format
/// lacks or places wrongly misparses every event after it).
#[test]
fn formats_describe_the_encoded_bytes() {
    use tracer::entry::{FtraceEntry, GraphEntEntry, GraphRetEntry, TraceEntry};
    use tracer::events::{FtraceEvent, FUNCGRAPH_ENTRY, FUNCGRAPH_EXIT, FUNCTION};

    fn field(ev: &FtraceEvent, rec: &[u8], name: &str) -> u64 {
        let (f, off) = ev
            .offsets()
            .find(|(f, _)| f.name == name)
            .unwrap_or_else(|| panic!("{} has no field {name}", ev.name));
        let mut b = [0u8; 8];
        let (off, size) = (off as usize, f.size as usize);
        b[..size].copy_from_slice(&rec[off..off + size]);
        u64::from_le_bytes(b)
    }
    fn end(ev: &FtraceEvent) -> usize {
        ev.offsets()
            .map(|(f, o)| (o + f.size) as usize)
            .max()
            .unwrap()
    }
    let ent = TraceEntry {
        type_: 0,
        flags: 0x81,
        preempt_count: 2,
        pid: 7,
    };
    let mut rec = [0u8; 64];

    let n = FtraceEntry {
        ent,
        ip: 0xffff_ffff_8010_0004,
        parent_ip: 0xffff_ffff_8020_0020,
    }
    .encode(&mut rec)
    .unwrap();
    assert_eq!(end(&FUNCTION), n);
    assert_eq!(field(&FUNCTION, &rec, "ip"), 0xffff_ffff_8010_0004);
    assert_eq!(field(&FUNCTION, &rec, "parent_ip"), 0xffff_ffff_8020_0020);

    let n = GraphEntEntry {
        ent,
        func: 0xffff_ffff_8010_0000,
        depth: 5,
    }
    .encode(&mut rec)
    .unwrap();
    assert_eq!(
        end(&FUNCGRAPH_ENTRY),
        n,
        "funcgraph_entry: no field beyond func, depth"
    );
    assert_eq!(field(&FUNCGRAPH_ENTRY, &rec, "func"), 0xffff_ffff_8010_0000);
    assert_eq!(field(&FUNCGRAPH_ENTRY, &rec, "depth"), 5);

    let r = GraphRetEntry {
        ent,
        func: 0xffff_ffff_8010_0000,
        depth: 3,
        overrun: 9,
        calltime: 1_000_000_123,
        rettime: 1_000_456_789,
    };
    let n = r.encode(&mut rec).unwrap();
    assert_eq!(end(&FUNCGRAPH_EXIT), n);
    for (name, v) in [
        ("func", r.func),
        ("depth", 3),
        ("overrun", 9),
        ("calltime", r.calltime),
        ("rettime", r.rettime),
    ] {
        assert_eq!(
            field(&FUNCGRAPH_EXIT, &rec, name),
            v,
            "funcgraph_exit.{name}"
        );
    }
    // The common header, at the offsets every format file prints.
    assert_eq!(
        u16::from_le_bytes([rec[0], rec[1]]),
        tracer::entry::TRACE_GRAPH_RET
    );
    assert_eq!((rec[2], rec[3]), (0x81, 2));
    assert_eq!(i32::from_le_bytes(rec[4..8].try_into().unwrap()), 7);
}

/// A record of `call` with every field set: integers to small distinct
/// values, `char[N]` arrays to a short name, `__data_loc` strings to a
/// string after the fixed part (`(len << 16) | offset`, as Linux).
fn sample_event_record(call: &tracer::trace_events::TraceEventCall) -> Vec<u8> {
    let mut rec = vec![0u8; call.size];
    rec[..8].copy_from_slice(&tracer::entry::TraceEntry::pack(call.id, 0, 0, 1).to_le_bytes());
    let mut dynamic = Vec::new();
    for (k, f) in call.fields.iter().enumerate() {
        let off = f.offset as usize;
        if f.ty.starts_with("__data_loc") {
            let s = format!("str{k}");
            let loc = (((s.len() + 1) << 16) | (call.size + dynamic.len())) as u32;
            dynamic.extend_from_slice(s.as_bytes());
            dynamic.push(0);
            rec[off..off + 4].copy_from_slice(&loc.to_le_bytes());
        } else if f.array.is_some() {
            let s = format!("c{k}");
            rec[off..off + s.len()].copy_from_slice(s.as_bytes());
        } else if f.name == "call_site" {
            // A code address, printed with %pS (and by the kmem plugin).
            let a = tracedat_common::addr("helper_b") + 0x12;
            rec[off..off + 8].copy_from_slice(&a.to_le_bytes());
        } else {
            let v = 3 * (k as u64 + 1);
            rec[off..off + f.size as usize].copy_from_slice(&v.to_le_bytes()[..f.size as usize]);
        }
    }
    rec.extend_from_slice(&dynamic);
    rec
}

/// Every event the kernel declares reads in trace-cmd: one record of each,
/// all fields set, in a trace.dat with the kernel's format files. No
/// `[FAILED TO PARSE]`; without plugins (`-N`) libtraceevent's rendering of
/// our `print fmt` line is the kernel's own text for the record; and
/// `ktrace report` equals `trace-cmd report` (the sched plugin for the
/// sched events, the print fmt for the others).
#[test]
fn every_declared_event_reads_in_trace_cmd() {
    use build_tools::tracedat::pages::PageWriter;
    let base = tracedat_common::transfer();
    let mut w = PageWriter::new(4096);
    let calls: Vec<_> = tracer::trace_events::all_events().collect();
    let t0 = 9_000_000_000u64;
    for (i, call) in calls.iter().enumerate() {
        w.push(t0 + 1000 * i as u64, &sample_event_record(call));
    }
    let t = build_tools::tracedat::frame::Transfer {
        nr_cpus: 1,
        pages: vec![w.pages().to_vec()],
        ..base
    };
    let dat = trace_dat_from_transfer(&t).unwrap();
    let path = temp("all-events.dat");
    write(&path, &dat);
    let p = path.to_str().unwrap();

    let plain = trace_cmd(&["report", "-N", p]);
    assert!(!plain.contains("FAILED TO PARSE"), "{plain}");
    let lines: Vec<&str> = plain.lines().skip(1).collect();
    assert_eq!(lines.len(), calls.len(), "{plain}");
    let syms = build_tools::tracedat::report::Symbols::parse(&tracedat_common::kallsyms());
    for (call, line) in calls.iter().zip(&lines) {
        let mut text = tracer::output::TraceSeq::new();
        (call.print)(&sample_event_record(call), &mut text, &syms);
        let text = text.as_str().unwrap().trim_end().to_string();
        let (_, body) = line
            .split_once(&format!(" {}: ", call.name))
            .unwrap_or_else(|| panic!("{}:{} not in {line:?}", call.system, call.name));
        assert_eq!(
            body.trim_start(),
            build_tools::tracedat::report::plain_pointers(
                &build_tools::tracedat::report::no_symbol_sizes(&text)
            ),
            "{}:{}",
            call.system,
            call.name
        );
    }

    let theirs = trace_cmd(&["report", p]);
    assert!(!theirs.contains("FAILED TO PARSE"), "{theirs}");
    let ours = report(&dat, &ReportOptions::default()).unwrap();
    assert_eq!(ours, theirs);
}

#[test]
fn plain_pointers_rewrites_only_16_digit_values() {
    use build_tools::tracedat::report::plain_pointers;
    assert_eq!(plain_pointers("ptr=0000000000000006 x=1"), "ptr=0x6 x=1");
    assert_eq!(plain_pointers("p=ffff888000001000"), "p=0xffff888000001000");
    for same in [
        "a=00000000000000061",
        "b=000000000000000g",
        "c=123",
        "comm=sh pid=1 ==> x",
        "=",
    ] {
        assert_eq!(plain_pointers(same), same);
    }
}

#[test]
fn no_symbol_sizes_drops_only_a_size_after_an_offset() {
    use build_tools::tracedat::report::no_symbol_sizes;
    assert_eq!(
        no_symbol_sizes("call_site=f+0x2f/0x80 ptr=1"),
        "call_site=f+0x2f ptr=1"
    );
    assert_eq!(no_symbol_sizes("a=<T>::g+0x0/0x10"), "a=<T>::g+0x0");
    for same in ["x+0x/0x1", "a/0x10", "f+0x12", "f+0x12/", "+0x"] {
        assert_eq!(no_symbol_sizes(same), same);
    }
}
