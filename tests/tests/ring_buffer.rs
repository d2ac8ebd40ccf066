//! QEMU tests of the ring buffer's tracefs files: `trace_marker` events
//! from every CPU in order in `trace`, `trace_pipe` consuming, overrun and
//! producer/consumer accounting against `per_cpu/cpuN/stats` and the
//! `trace` header, `buffer_size_kb` / `trace_clock` / `free_buffer` /
//! `saved_cmdlines_size` and their errors, resizing while tracing, and raw
//! pages from `trace_pipe_raw` decoded here, with Linux's rules and
//! independently of the kernel's code, into the same events `trace` shows.

use std::collections::BTreeMap;

use tests::Kernel;

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

fn run(k: &mut Kernel, cmd: &str) -> String {
    clean(&k.run(cmd))
}

/// A `trace_marker` line of `trace`: `comm-pid [cpu] flags ts: tracing_mark_write: text`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MarkerLine {
    pid: i32,
    cpu: usize,
    ts: String,
    text: String,
}

fn parse_marker_line(line: &str) -> Option<MarkerLine> {
    let (left, text) = line.split_once(": tracing_mark_write: ")?;
    let toks: Vec<&str> = left.split_whitespace().collect();
    let ci = toks
        .iter()
        .position(|t| t.starts_with('[') && t.ends_with(']'))?;
    let cpu = toks[ci]
        .trim_matches(|c| c == '[' || c == ']')
        .parse()
        .ok()?;
    let pid = toks[..ci].join(" ").rsplit_once('-')?.1.parse().ok()?;
    let ts = toks.last()?.to_string();
    Some(MarkerLine {
        pid,
        cpu,
        ts,
        text: text.to_string(),
    })
}

fn marker_lines(trace: &str) -> Vec<MarkerLine> {
    trace.lines().filter_map(parse_marker_line).collect()
}

/// The time stamps of the `trace` lines of the event `name` (given as
/// `kmalloc:`), as printed.
fn event_stamps(trace: &str, name: &str) -> Vec<String> {
    trace
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let i = f.iter().position(|w| *w == name)?;
            Some(f.get(i.checked_sub(1)?)?.trim_end_matches(':').to_string())
        })
        .collect()
}

/// `entries-in-buffer/entries-written: A/B` of a `trace` header.
fn header_counts(trace: &str) -> (u64, u64) {
    let l = trace
        .lines()
        .find(|l| l.starts_with("# entries-in-buffer/entries-written: "))
        .unwrap_or_else(|| panic!("no header in {trace}"));
    let v = l.split_whitespace().nth(2).unwrap();
    let (a, b) = v.split_once('/').unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

/// The fields of `per_cpu/cpuN/stats`, checking Linux's order.
fn stats(k: &mut Kernel, cpu: usize) -> BTreeMap<String, String> {
    let text = run(k, &format!("cat /tracing/per_cpu/cpu{cpu}/stats"));
    let keys: Vec<&str> = text.lines().map(|l| l.split(':').next().unwrap()).collect();
    assert_eq!(
        keys,
        [
            "entries",
            "overrun",
            "commit overrun",
            "bytes",
            "oldest event ts",
            "now ts",
            "dropped events",
            "read events"
        ],
        "{text}"
    );
    text.lines()
        .map(|l| {
            let (k, v) = l.split_once(": ").unwrap();
            (k.to_string(), v.trim().to_string())
        })
        .collect()
}

fn stat(s: &BTreeMap<String, String>, key: &str) -> u64 {
    s[key].parse().unwrap_or_else(|_| panic!("{key} in {s:?}"))
}

fn seqs(lines: &[MarkerLine]) -> Vec<u64> {
    lines
        .iter()
        .map(|l| l.text.rsplit_once("seq=").unwrap().1.parse().unwrap())
        .collect()
}

const CLOCKS: &str = "local global counter uptime perf mono mono_raw boot tai x86-tsc";

fn clocks_with(cur: &str) -> String {
    let v: Vec<String> = CLOCKS
        .split(' ')
        .map(|c| {
            if c == cur {
                format!("[{c}]")
            } else {
                c.to_string()
            }
        })
        .collect();
    format!("{}\n", v.join(" "))
}

// ---------------------------------------------------------------------------
// An independent decoder of Linux's ring-buffer pages
// (kernel/trace/ring_buffer.c: buffer_data_page, ring_buffer_event).

#[derive(Debug)]
struct RawEvent {
    ts: u64,
    payload: Vec<u8>,
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// Decodes one 4096-byte page: u64 time_stamp, u64 commit (flags in bits
/// 30-31), then events with a u32 header `type_len:5, time_delta:27`.
fn decode_page(page: &[u8]) -> Vec<RawEvent> {
    assert_eq!(page.len(), 4096);
    let mut ts = u64_at(page, 0);
    let commit = u64_at(page, 8);
    assert_eq!(commit >> 30, 0, "RB_MISSED_* flags set: events were lost");
    let data = &page[16..16 + commit as usize];
    let mut off = 0;
    let mut out = Vec::new();
    while off < data.len() {
        let hdr = u32_at(data, off);
        let (type_len, delta) = (hdr & 31, u64::from(hdr >> 5));
        match type_len {
            29 => {
                // PADDING: a null event (delta 0) ends the page.
                if delta == 0 {
                    break;
                }
                off += 4 + u32_at(data, off + 4) as usize;
            }
            30 => {
                // TIME_EXTEND: delta = array[0] << 27 | time_delta.
                ts += (u64::from(u32_at(data, off + 4)) << 27) | delta;
                off += 8;
            }
            31 => {
                // TIME_STAMP: absolute (the top bits never matter here).
                ts = (u64::from(u32_at(data, off + 4)) << 27) | delta;
                off += 8;
            }
            0 => {
                // Long data: array[0] = length incl. itself, data at array[1].
                let len = u32_at(data, off + 4) as usize;
                ts += delta;
                out.push(RawEvent {
                    ts,
                    payload: data[off + 8..off + 4 + len].to_vec(),
                });
                off += 4 + len;
            }
            n => {
                let len = n as usize * 4;
                ts += delta;
                out.push(RawEvent {
                    ts,
                    payload: data[off + 4..off + 4 + len].to_vec(),
                });
                off += 4 + len;
            }
        }
    }
    out
}

/// A decoded `struct print_entry` as `trace` prints it.
fn print_entry_line(cpu: usize, ev: &RawEvent) -> MarkerLine {
    let p = &ev.payload;
    assert_eq!(
        u16::from_le_bytes([p[0], p[1]]),
        5,
        "not TRACE_PRINT: {p:?}"
    );
    let pid = i32::from_le_bytes(p[4..8].try_into().unwrap());
    let text = &p[16..];
    let end = text.iter().position(|&c| c == 0).unwrap();
    let text = String::from_utf8(text[..end].to_vec()).unwrap();
    // ns2usecs rounds to the nearest microsecond.
    let us = (ev.ts + 500) / 1000;
    MarkerLine {
        pid,
        cpu,
        ts: format!("{}.{:06}", us / 1_000_000, us % 1_000_000),
        text: text.trim_end_matches('\n').to_string(),
    }
}

/// `ringbuf rawdump CPU` output -> pages.
fn parse_rawdump(text: &str) -> Vec<Vec<u8>> {
    let mut pages = Vec::new();
    let mut cur: Option<Vec<u8>> = None;
    for l in text.lines() {
        if l.starts_with("page ") || l.starts_with("ringbuf rawdump:") {
            pages.extend(cur.take());
            if l.starts_with("page ") {
                cur = Some(Vec::new());
            }
        } else if let Some(p) = cur.as_mut() {
            assert_eq!(l.len(), 128, "bad hex line {l:?}");
            for i in (0..l.len()).step_by(2) {
                p.push(u8::from_str_radix(&l[i..i + 2], 16).unwrap());
            }
        }
    }
    pages.extend(cur.take());
    pages
}

// ---------------------------------------------------------------------------

#[test]
fn markers_pipe_accounting_and_files() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    assert_eq!(run(&mut k, "cd /tracing"), "");

    // Defaults: 1408 KiB asked, 354 pages of 4080 bytes = 1410 KiB (Linux).
    assert_eq!(run(&mut k, "cat buffer_size_kb"), "1410\n");
    assert_eq!(run(&mut k, "cat buffer_total_size_kb"), "5640\n");
    assert_eq!(run(&mut k, "cat per_cpu/cpu2/buffer_size_kb"), "1410\n");
    assert_eq!(run(&mut k, "cat trace_clock"), clocks_with("local"));
    assert_eq!(run(&mut k, "cat saved_cmdlines_size"), "128\n");
    assert!(run(&mut k, "ls per_cpu/cpu3").contains("trace_pipe_raw"));

    // Bad sizes and clock names: EINVAL / ENOMEM, nothing changes.
    for bad in ["0", "abc", "-1", "12x"] {
        let out = run(&mut k, &format!("echo {bad} > buffer_size_kb"));
        assert!(out.contains("Invalid argument"), "{bad}: {out}");
    }
    let out = run(&mut k, "echo 0 > per_cpu/cpu1/buffer_size_kb");
    assert!(out.contains("Invalid argument"), "{out}");
    let out = run(&mut k, "echo 100000000 > buffer_size_kb");
    assert!(out.contains("Cannot allocate memory"), "{out}");
    assert_eq!(run(&mut k, "cat buffer_size_kb"), "1410\n");
    assert_eq!(run(&mut k, "cat buffer_total_size_kb"), "5640\n");
    for bad in ["nosuch", "loca", "[local]"] {
        let out = run(&mut k, &format!("echo {bad} > trace_clock"));
        assert!(out.contains("Invalid argument"), "{bad}: {out}");
    }
    assert_eq!(run(&mut k, "cat trace_clock"), clocks_with("local"));
    let out = run(&mut k, "echo 0 > saved_cmdlines_size");
    assert!(out.contains("Invalid argument"), "{out}");

    // Markers from every CPU in turn show up in order, each on its CPU.
    assert_eq!(
        run(&mut k, "ringbuf markers 5"),
        "ringbuf markers: 20 written, 0 failed, 0 off-cpu\n"
    );
    let trace = run(&mut k, "cat trace");
    assert_eq!(header_counts(&trace), (20, 20), "{trace}");
    let m = marker_lines(&trace);
    assert_eq!(seqs(&m), (0..20).collect::<Vec<_>>(), "{trace}");
    for (i, l) in m.iter().enumerate() {
        assert_eq!(l.cpu, i % 4, "{l:?}");
    }
    let ts: Vec<f64> = m
        .iter()
        .map(|l| l.ts.trim_end_matches(':').parse().unwrap())
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
    for cpu in 0..4 {
        let s = stats(&mut k, cpu);
        assert_eq!(stat(&s, "entries"), 5, "{s:?}");
        assert_eq!(
            stat(&s, "overrun") + stat(&s, "read events") + stat(&s, "dropped events"),
            0
        );
        assert!(stat(&s, "bytes") > 0, "{s:?}");
    }
    // per_cpu/cpuN/trace: the same header, that CPU's events only.
    let t1 = run(&mut k, "cat per_cpu/cpu1/trace");
    assert_eq!(header_counts(&t1), (20, 20));
    assert_eq!(seqs(&marker_lines(&t1)), [1, 5, 9, 13, 17]);

    // trace_pipe consumes: what it returned is gone from trace.
    let pipe = run(&mut k, "cat trace_pipe | head -n 3");
    assert_eq!(seqs(&marker_lines(&pipe)), [0, 1, 2], "{pipe}");
    assert!(!pipe.contains("# tracer"), "{pipe}");
    let read: u64 = (0..4).map(|c| stat(&stats(&mut k, c), "read events")).sum();
    assert!(read >= 3, "{read}");
    let trace = run(&mut k, "cat trace");
    assert_eq!(header_counts(&trace), (20 - read, 20 - read), "{trace}");
    assert_eq!(seqs(&marker_lines(&trace)), (read..20).collect::<Vec<_>>());
    // The per-CPU pipe gives that CPU's next event.
    let p3 = run(&mut k, "cat per_cpu/cpu3/trace_pipe | head -n 1");
    let p3 = marker_lines(&p3);
    assert_eq!(p3.len(), 1);
    assert_eq!(p3[0].cpu, 3);
    assert!(seqs(&p3)[0] >= read && seqs(&p3)[0] % 4 == 3, "{p3:?}");

    // echo > trace clears; per_cpu/cpuN/trace clears one CPU.
    run(&mut k, "ringbuf markers 2");
    assert_eq!(run(&mut k, "echo > per_cpu/cpu0/trace"), "");
    let t0 = run(&mut k, "cat per_cpu/cpu0/trace");
    assert!(marker_lines(&t0).is_empty(), "{t0}");
    assert_eq!(stat(&stats(&mut k, 0), "entries"), 0);
    assert!(stat(&stats(&mut k, 1), "entries") > 0);
    assert_eq!(run(&mut k, "echo > trace"), "");
    assert_eq!(header_counts(&run(&mut k, "cat trace")), (0, 0));

    // Long markers: cut to fit a sub-buffer (4072 - 18 bytes), the rest
    // written by the next write() of the same string.
    assert_eq!(
        run(&mut k, "ringbuf bigmarker 5000"),
        "ringbuf bigmarker: writes 4054 946\n"
    );
    let m = marker_lines(&run(&mut k, "cat trace"));
    assert_eq!(m.len(), 2, "{m:?}");
    let whole: String = (0..5000).map(|i| (b'a' + (i % 26) as u8) as char).collect();
    assert_eq!(m[0].text.len(), 4054);
    assert_eq!(format!("{}{}", m[0].text, m[1].text), whole);
    assert_eq!(run(&mut k, "echo > trace"), "");

    // Overwrite mode: a small buffer keeps the newest events, the others
    // are counted as overrun in stats, in the header and in trace_pipe.
    assert_eq!(run(&mut k, "echo 8 > buffer_size_kb"), "");
    assert_eq!(run(&mut k, "cat buffer_size_kb"), "11\n"); // 3 pages
    assert_eq!(run(&mut k, "cat buffer_total_size_kb"), "44\n");
    assert_eq!(
        run(&mut k, "ringbuf markers 2000 1"),
        "ringbuf markers: 2000 written, 0 failed, 0 off-cpu\n"
    );
    let s = stats(&mut k, 1);
    let (entries, overrun) = (stat(&s, "entries"), stat(&s, "overrun"));
    assert_eq!(entries + overrun, 2000, "{s:?}");
    assert!(overrun > 0 && entries > 50, "{s:?}");
    assert_eq!(
        stat(&s, "commit overrun") + stat(&s, "dropped events") + stat(&s, "read events"),
        0
    );
    let trace = run(&mut k, "cat trace");
    assert_eq!(header_counts(&trace), (entries, 2000), "{trace}");
    assert_eq!(
        seqs(&marker_lines(&trace)),
        (overrun..2000).collect::<Vec<_>>()
    );
    let pipe = run(&mut k, "cat trace_pipe | head -n 2");
    let first: Vec<&str> = pipe.lines().collect();
    assert_eq!(first[0], format!("CPU:1 [LOST {overrun} EVENTS]"), "{pipe}");
    assert_eq!(seqs(&marker_lines(first[1])), [overrun]);

    // Producer/consumer mode: once full, new events are dropped and counted.
    assert_eq!(run(&mut k, "echo 0 > options/overwrite"), "");
    assert_eq!(run(&mut k, "echo > trace"), "");
    let out = run(&mut k, "ringbuf markers 2000 2");
    let n: Vec<u64> = out
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let (written, failed) = (n[0], n[1]);
    assert_eq!(written + failed, 2000, "{out}");
    assert!(failed > 0 && written > 50, "{out}");
    let s = stats(&mut k, 2);
    assert_eq!(stat(&s, "entries"), written, "{s:?}");
    assert_eq!(stat(&s, "dropped events"), failed, "{s:?}");
    assert_eq!(stat(&s, "overrun"), 0, "{s:?}");
    let trace = run(&mut k, "cat trace");
    assert_eq!(header_counts(&trace), (written, written), "{trace}");
    assert_eq!(
        seqs(&marker_lines(&trace)),
        (0..written).collect::<Vec<_>>()
    );
    assert_eq!(run(&mut k, "echo 1 > options/overwrite"), "");

    // tracing_on drives the ring buffer: markers fail with EBADF while off.
    assert_eq!(run(&mut k, "echo > trace"), "");
    assert_eq!(run(&mut k, "echo 0 > tracing_on"), "");
    let out = run(&mut k, "echo off > trace_marker");
    assert!(out.contains("Bad file descriptor"), "{out}");
    assert_eq!(run(&mut k, "echo 1 > tracing_on"), "");
    // The markers option gates writing (EINVAL when off).
    assert_eq!(run(&mut k, "echo 0 > options/markers"), "");
    let out = run(&mut k, "echo nomarkers > trace_marker");
    assert!(out.contains("Invalid argument"), "{out}");
    assert_eq!(run(&mut k, "echo 1 > options/markers"), "");
    assert_eq!(run(&mut k, "echo on > trace_marker"), "");
    let m = marker_lines(&run(&mut k, "cat trace"));
    assert_eq!(
        m.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
        ["on"]
    );

    // Switching the clock clears the buffer; counter stamps print raw.
    assert_eq!(run(&mut k, "echo global > trace_clock"), "");
    assert_eq!(run(&mut k, "cat trace_clock"), clocks_with("global"));
    assert_eq!(header_counts(&run(&mut k, "cat trace")), (0, 0));
    assert_eq!(run(&mut k, "echo counter > trace_clock"), "");
    assert_eq!(run(&mut k, "echo c1 > trace_marker"), "");
    let m = marker_lines(&run(&mut k, "cat trace"));
    assert_eq!(m.len(), 1);
    assert!(
        !m[0].ts.contains('.') && m[0].ts.parse::<u64>().is_ok(),
        "{m:?}"
    );
    assert!(run(&mut k, "cat per_cpu/cpu0/stats").contains("now ts: "));
    // Events take the array's clock too: their probe stamps out of line
    // while it is not `local` (the files' CLOCK_OTHER bit), with a filter
    // (the probe's decision, then the write) or without, and inline again
    // once it is `local`.
    let kmalloc_stamps = |k: &mut Kernel, filter: &str| {
        assert_eq!(
            run(k, &format!("echo '{filter}' > events/kmem/kmalloc/filter")),
            ""
        );
        assert_eq!(run(k, "echo > trace"), "");
        assert_eq!(run(k, "echo 1 > events/kmem/kmalloc/enable"), "");
        run(k, "calltree 1 2");
        assert_eq!(run(k, "echo 0 > events/kmem/kmalloc/enable"), "");
        assert_eq!(run(k, "echo 0 > events/kmem/kmalloc/filter"), "");
        event_stamps(&run(k, "cat trace"), "kmalloc:")
    };
    for filter in ["bytes_req > 0", "0"] {
        let ts = kmalloc_stamps(&mut k, filter);
        assert!(
            !ts.is_empty()
                && ts
                    .iter()
                    .all(|t| !t.contains('.') && t.parse::<u64>().is_ok()),
            "counter, filter {filter}: {ts:?}"
        );
    }
    assert_eq!(run(&mut k, "echo '  local  ' > trace_clock"), "");
    assert_eq!(run(&mut k, "cat trace_clock"), clocks_with("local"));
    let ts = kmalloc_stamps(&mut k, "0");
    assert!(
        !ts.is_empty() && ts.iter().all(|t| t.contains('.')),
        "local: {ts:?}"
    );

    // Raw pages decode (Linux's rules, decoder above) into the events that
    // trace shows, CPU by CPU.
    assert_eq!(run(&mut k, "echo 1408 > buffer_size_kb"), "");
    assert_eq!(run(&mut k, "echo > trace"), "");
    assert_eq!(
        run(&mut k, "ringbuf markers 40"),
        "ringbuf markers: 160 written, 0 failed, 0 off-cpu\n"
    );
    assert_eq!(run(&mut k, "echo 0 > tracing_on"), "");
    let trace = marker_lines(&run(&mut k, "cat trace"));
    assert_eq!(trace.len(), 160);
    for cpu in 0..4 {
        let dump = run(&mut k, &format!("ringbuf rawdump {cpu}"));
        let pages = parse_rawdump(&dump);
        assert!(!pages.is_empty(), "{dump}");
        let decoded: Vec<MarkerLine> = pages
            .iter()
            .flat_map(|p| decode_page(p))
            .map(|e| print_entry_line(cpu, &e))
            .collect();
        let expected: Vec<MarkerLine> = trace.iter().filter(|l| l.cpu == cpu).cloned().collect();
        assert_eq!(decoded, expected, "cpu {cpu}");
    }
    assert_eq!(run(&mut k, "echo 1 > tracing_on"), "");

    // free_buffer shrinks to the minimum when closed; per-CPU sizes.
    assert_eq!(run(&mut k, "echo > free_buffer"), "");
    assert_eq!(run(&mut k, "cat buffer_size_kb"), "7\n");
    assert_eq!(run(&mut k, "echo 20 > per_cpu/cpu3/buffer_size_kb"), "");
    assert_eq!(run(&mut k, "cat per_cpu/cpu3/buffer_size_kb"), "23\n");
    assert_eq!(run(&mut k, "cat buffer_size_kb"), "X\n");
    assert_eq!(run(&mut k, "cat buffer_total_size_kb"), "44\n");
    assert_eq!(run(&mut k, "echo 256 > saved_cmdlines_size"), "");
    assert_eq!(run(&mut k, "cat saved_cmdlines_size"), "256\n");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(std::time::Duration::from_secs(60)), 0);
}

/// The summary of `ringbuf resize`: (resizes, errors, retried writes,
/// markers committed per CPU).
fn resize_summary(out: &str) -> (u64, u64, u64, Vec<u64>) {
    let line = out
        .lines()
        .find(|l| l.starts_with("ringbuf resize: "))
        .unwrap_or_else(|| panic!("{out}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| w[i].trim_end_matches(',').parse::<u64>().unwrap();
    let per_cpu = w
        .iter()
        .filter_map(|t| t.strip_prefix("cpu"))
        .map(|t| t.split_once('=').unwrap().1.parse().unwrap())
        .collect();
    (num(2), num(4), num(6), per_cpu)
}

/// The markers `cpu=C seq=N` of one CPU's `trace`, by a few greps so
/// that thousands of lines need not cross the serial console:
/// (count, first seq, last seq).
fn cpu_markers(k: &mut Kernel, cpu: usize) -> (u64, Option<u64>, Option<u64>) {
    let f = format!("cat per_cpu/cpu{cpu}/trace | grep tracing_mark_write:");
    let count = run(k, &format!("{f} | wc -l")).trim().parse().unwrap();
    let seq = |out: String| {
        let m = marker_lines(&out);
        assert!(m.len() <= 1, "{out}");
        m.first().map(|l| {
            let (c, s) = l.text.split_once(" seq=").unwrap();
            assert_eq!(c, format!("cpu={cpu}"), "{l:?}");
            assert_eq!(l.cpu, cpu, "{l:?}");
            s.parse().unwrap()
        })
    };
    let first = seq(run(k, &format!("{f} | head -n 1")));
    let last = seq(run(k, &format!("{f} | tail -n 1")));
    (count, first, last)
}

#[test]
fn resize_while_tracing() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    assert_eq!(run(&mut k, "cd /tracing"), "");

    // Markers only, while the buffer grows and shrinks between sizes that
    // always hold them: every committed marker must be there, once.
    let out = run(&mut k, "ringbuf resize 2 1410,2000,1500,3000,1408");
    let (resizes, errors, _, written) = resize_summary(&out);
    assert_eq!((resizes, errors), (10, 0), "{out}");
    assert_eq!(written.len(), 4, "{out}");
    assert!(written.iter().all(|&w| w > 0), "{out}");
    assert_eq!(run(&mut k, "cat buffer_size_kb"), "1410\n");
    let total: u64 = written.iter().sum();
    let head = run(&mut k, "cat trace | head -n 3");
    assert_eq!(header_counts(&head), (total, total), "{out}");
    for (cpu, &w) in written.iter().enumerate() {
        assert_eq!(
            cpu_markers(&mut k, cpu),
            (w, Some(0), Some(w - 1)),
            "cpu {cpu}: {out}"
        );
        let s = stats(&mut k, cpu);
        assert_eq!((stat(&s, "entries"), stat(&s, "overrun")), (w, 0), "{s:?}");
    }

    // The function tracer on the VFS (every marker write goes through it)
    // while the buffer shrinks below its contents and grows again: the
    // markers left on each CPU are a gap-free run ending at the last one
    // written; a run that lost its head was counted as overrun.
    assert_eq!(run(&mut k, "echo > trace"), "");
    assert_eq!(run(&mut k, "echo 'kernel::fs::*' > set_ftrace_filter"), "");
    assert_eq!(run(&mut k, "echo function > current_tracer"), "");
    let out = run(&mut k, "ringbuf resize 3 64,8,512,16,128");
    let (resizes, errors, _, written) = resize_summary(&out);
    assert_eq!((resizes, errors), (15, 0), "{out}");
    assert_eq!(written.len(), 4, "{out}");
    assert_eq!(run(&mut k, "echo 0 > tracing_on"), "");
    let (mut entries, mut total) = (0, 0);
    for (cpu, &w) in written.iter().enumerate() {
        let (count, first, last) = cpu_markers(&mut k, cpu);
        let s = stats(&mut k, cpu);
        entries += stat(&s, "entries");
        total += stat(&s, "entries") + stat(&s, "overrun");
        assert_eq!(last, Some(w - 1), "cpu {cpu}: {out}");
        let first = first.unwrap();
        assert_eq!(count, w - first, "cpu {cpu}: {out}");
        if first != 0 {
            assert!(stat(&s, "overrun") > 0, "cpu {cpu}: {s:?}");
        }
    }
    let head = run(&mut k, "cat trace | head -n 3");
    assert_eq!(header_counts(&head), (entries, total));
    assert!(head.starts_with("# tracer: function\n"), "{head}");
    assert!(
        run(&mut k, "cat trace | grep -c kernel::fs::")
            .trim()
            .parse::<u64>()
            .unwrap()
            > 0
    );
    assert_eq!(run(&mut k, "echo nop > current_tracer"), "");
    assert_eq!(run(&mut k, "echo 1 > tracing_on"), "");
    assert_eq!(run(&mut k, "echo ok > trace_marker"), "");
    assert!(run(&mut k, "cat trace").contains("tracing_mark_write: ok"));
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(std::time::Duration::from_secs(60)), 0);
}
