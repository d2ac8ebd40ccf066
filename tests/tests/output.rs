//! QEMU tests of the `trace` header under the options that change it, byte
//! for byte as Linux 6.1 prints it (kernel/trace/trace.c
//! `print_func_help_header[_irq]()`, `print_trace_header()`,
//! `print_lat_help_header()`), checked against the real Linux with
//! /work/shared/linux/qemu.sh: `irq-info`, `record-tgid`,
//! `latency-format` (with and without `verbose`, and on an empty buffer).

use tests::Kernel;

const T: &str = "/tracing";

fn lines(s: &str) -> Vec<String> {
    s.replace('\r', "").lines().map(str::to_string).collect()
}

/// The header lines (those starting with `#`) of a `trace` file.
fn header(trace: &str) -> String {
    lines(trace)
        .into_iter()
        .take_while(|l| l.starts_with('#'))
        .map(|l| l + "\n")
        .collect()
}

/// The event lines.
fn events(trace: &str) -> Vec<String> {
    lines(trace)
        .into_iter()
        .filter(|l| !l.starts_with('#'))
        .collect()
}

/// `# tracer: function`, `#` and the entries line of a trace of `n` events
/// on 4 CPUs.
fn top(n: usize) -> String {
    format!("# tracer: function\n#\n# entries-in-buffer/entries-written: {n}/{n}   #P:4\n#\n")
}

/// Records a few function events on every CPU, then stops recording, so
/// that every read below sees the same events.
fn setup(k: &mut Kernel) -> usize {
    let f = "kernel::shell::work::compute_iteration";
    assert_eq!(k.run(&format!("echo {f} > {T}/set_ftrace_filter")), "");
    assert_eq!(k.run(&format!("echo function > {T}/current_tracer")), "");
    k.run("work compute 2");
    k.run(&format!("echo 0 > {T}/tracing_on"));
    let n = events(&k.run(&format!("cat {T}/trace"))).len();
    assert_eq!(n, 8, "2 iterations on 4 CPUs");
    n
}

/// The kernel's release as the latency banner shows it (`UTS_RELEASE`):
/// the version in kernel/Cargo.toml.
fn kernel_version() -> String {
    let toml = std::fs::read_to_string(tests::root().join("kernel/Cargo.toml")).unwrap();
    let line = toml
        .lines()
        .find(|l| l.starts_with("version = "))
        .expect("no version in kernel/Cargo.toml");
    line["version = ".len()..].trim_matches('"').to_string()
}

fn set(k: &mut Kernel, opt: &str) {
    assert_eq!(
        k.run(&format!("echo {opt} > {T}/trace_options")),
        "",
        "{opt}"
    );
}

#[test]
fn header_follows_irq_info_record_tgid_and_latency_format() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    let n = setup(&mut k);
    let cat = |k: &mut Kernel| k.run(&format!("cat {T}/trace"));

    // irq-info off: print_func_help_header().
    set(&mut k, "noirq-info");
    let t = cat(&mut k);
    assert_eq!(
        header(&t),
        top(n)
            + "#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n\
               #              | |         |         |         |\n"
    );
    // The lines lose their flag column too: `[CPU]` then the timestamp.
    for l in events(&t) {
        let cpu = l.find("] ").unwrap_or_else(|| panic!("{l}"));
        assert!(l[cpu + 2..].starts_with("    "), "flags printed: {l:?}");
    }
    // The same header for one CPU's file.
    assert_eq!(
        header(&k.run(&format!("cat {T}/per_cpu/cpu2/trace"))),
        header(&t)
    );

    // irq-info off, record-tgid on: the TGID column. Linux 6.1 saves tgids
    // only for tasks seen by an enabled trace event's sched_switch probe;
    // with the function tracer alone (and this kernel has no trace events)
    // every line shows the unknown tgid, `(-------)`, as on Linux.
    set(&mut k, "record-tgid");
    let t = cat(&mut k);
    assert_eq!(
        header(&t),
        top(n)
            + "#           TASK-PID       TGID    CPU#     TIMESTAMP  FUNCTION\n\
               #              | |           |       |         |         |\n"
    );
    for l in events(&t) {
        assert!(l.contains(" (-------) ["), "no TGID column: {l:?}");
    }

    // irq-info and record-tgid: the legend moves right by 10 columns.
    set(&mut k, "irq-info");
    assert_eq!(
        header(&cat(&mut k)),
        top(n)
            + "#                                          _-----=> irqs-off/BH-disabled\n\
               #                                         / _----=> need-resched\n\
               #                                        | / _---=> hardirq/softirq\n\
               #                                        || / _--=> preempt-depth\n\
               #                                        ||| / _-=> migrate-disable\n\
               #                                        |||| /     delay\n\
               #           TASK-PID       TGID    CPU#  |||||  TIMESTAMP  FUNCTION\n\
               #              | |           |       |   |||||     |         |\n"
    );
    set(&mut k, "norecord-tgid");
    assert!(
        !cat(&mut k).contains("(-------)"),
        "TGID column without record-tgid"
    );

    // latency-format: the latency banner and the latency legend (whose
    // lines keep Linux's trailing spaces).
    set(&mut k, "latency-format");
    let t = cat(&mut k);
    let banner = format!(
        "# tracer: function\n\
         #\n\
         # function latency trace v1.1.5 on {}\n\
         # --------------------------------------------------------------------\n\
         # latency: 0 us, #{n}/{n}, CPU#0 | (M:preempt VP:0, KP:0, SP:0 HP:0 #P:4)\n\
         #    -----------------\n\
         #    | task: -0 (uid:0 nice:0 policy:0 rt_prio:0)\n\
         #    -----------------\n\
         #\n",
        kernel_version()
    );
    assert_eq!(
        header(&t),
        banner.clone()
            + "#                    _------=> CPU#            \n\
               #                   / _-----=> irqs-off/BH-disabled\n\
               #                  | / _----=> need-resched    \n\
               #                  || / _---=> hardirq/softirq \n\
               #                  ||| / _--=> preempt-depth   \n\
               #                  |||| / _-=> migrate-disable \n\
               #                  ||||| /     delay           \n\
               #  cmd     pid     |||||| time  |   caller     \n\
               #     \\   /        ||||||  \\    |    /       \n"
    );
    // The lines are in latency format: `comm-pid`, CPU and flags glued
    // together, then the time in µs and a delay mark.
    for l in events(&t) {
        assert!(l.contains("us") && l.contains(": kernel::"), "{l:?}");
    }

    // latency-format and verbose: the banner only.
    set(&mut k, "verbose");
    assert_eq!(header(&cat(&mut k)), banner);
    set(&mut k, "noverbose");

    // latency-format on an empty buffer: no header beyond the tracer's name.
    k.run(&format!("echo > {T}/trace"));
    assert_eq!(cat(&mut k).replace('\r', ""), "# tracer: function\n#\n");
}

/// `hash-ptr` (how trace events print `%p`: no record here prints a
/// pointer) and `fields` (not in Linux 6.1) are unknown names: not listed,
/// no file, EINVAL when written.
#[test]
fn hash_ptr_and_fields_are_unknown() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let files = k.run(&format!("ls {T}/options")).replace('\r', "");
    let listed = k.run(&format!("cat {T}/trace_options")).replace('\r', "");
    assert!(listed.lines().any(|l| l == "noraw"), "{listed}");
    for name in ["hash-ptr", "fields"] {
        assert!(!files.split_whitespace().any(|f| f == name), "{files}");
        let no = format!("no{name}");
        assert!(!listed.lines().any(|l| l == name || l == no), "{listed}");
        for w in [name, no.as_str()] {
            let r = k.run(&format!("echo {w} > {T}/trace_options"));
            assert_eq!(
                r.replace('\r', ""),
                "sh: write error: Invalid argument\n",
                "{w}"
            );
        }
    }
}

/// `raw`, `hex` and `bin` print the same events as the default format:
/// raw as `pid cpu ts ip parent` (decimal, decimal, ns, hex, hex), hex as
/// fixed-width hex fields each followed by a space, bin as raw
/// little-endian fields (4+4+8+8+8 bytes per function event). A marker has
/// no hex printer: `type: 5` and an empty line, as on Linux 6.1.
#[test]
fn raw_hex_and_bin_lines() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    let n = setup(&mut k);
    let cat = |k: &mut Kernel| k.run(&format!("cat {T}/trace"));

    // The default lines with sym-addr: pid, CPU and both addresses.
    set(&mut k, "sym-addr");
    let t = cat(&mut k);
    let head = header(&t);
    let mut want = Vec::new();
    for l in events(&t) {
        let open = l.find(" [").unwrap();
        let pid: u64 = l[..open]
            .trim_end()
            .rsplit('-')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let cpu: u64 = l[open + 2..open + 5].parse().unwrap();
        let addrs: Vec<u64> = l
            .split('<')
            .skip(1)
            .filter_map(|a| a.split('>').next())
            .filter_map(|a| u64::from_str_radix(a, 16).ok())
            .collect();
        assert_eq!(addrs.len(), 2, "ip and parent in {l:?}");
        want.push((pid, cpu, addrs[0], addrs[1]));
    }
    assert_eq!(want.len(), n);
    set(&mut k, "nosym-addr");

    // raw: the same events, in the same order, with ns time stamps.
    set(&mut k, "raw");
    let t = cat(&mut k);
    assert_eq!(header(&t), head, "raw keeps the header");
    let raw: Vec<(u64, u64, u64, u64, u64)> = events(&t)
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 5, "{l:?}");
            let dec = |s: &str| s.parse::<u64>().unwrap_or_else(|_| panic!("{l:?}"));
            let hex = |s: &str| u64::from_str_radix(s, 16).unwrap_or_else(|_| panic!("{l:?}"));
            (dec(f[0]), dec(f[1]), dec(f[2]), hex(f[3]), hex(f[4]))
        })
        .collect();
    let got: Vec<(u64, u64, u64, u64)> = raw.iter().map(|r| (r.0, r.1, r.3, r.4)).collect();
    assert_eq!(got, want);
    assert!(raw.windows(2).all(|w| w[0].2 <= w[1].2), "time order");

    // hex: the raw values as fixed-width hex fields.
    set(&mut k, "hex");
    let t = cat(&mut k);
    assert_eq!(header(&t), head, "hex keeps the header");
    let hex: Vec<String> = raw
        .iter()
        .map(|(pid, cpu, ts, ip, parent)| {
            format!("{pid:08x} {cpu:08x} {ts:016x} {ip:016x} {parent:016x} ")
        })
        .collect();
    assert_eq!(events(&t), hex);

    // bin: 32 bytes per function event after the header.
    set(&mut k, "bin");
    let wc = k.run(&format!("cat {T}/trace | wc -c")).replace('\r', "");
    assert_eq!(wc.trim(), (head.len() + 32 * n).to_string(), "{wc}");
    set(&mut k, "nobin");

    // A trace_marker event in hex.
    k.run(&format!("echo 1 > {T}/tracing_on"));
    k.run(&format!("echo hi > {T}/trace_marker"));
    k.run(&format!("echo 0 > {T}/tracing_on"));
    let t = lines(&cat(&mut k));
    let last = &t[t.len() - 2..];
    assert!(last[0].ends_with(" type: 5"), "{last:?}");
    assert_eq!(last[1], "", "{last:?}");
    assert_eq!(last[0].split(' ').count(), 5, "{last:?}");
}
