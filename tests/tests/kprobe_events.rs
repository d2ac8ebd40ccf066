//! QEMU test of probe events (`kprobe_events`, `dynamic_events`,
//! `kprobe_profile`, `events/kprobes/*`): definitions refused with Linux
//! 6.1's errno and error_log entry (text and caret as
//! /work/shared/linux/qemu.sh shows them for the same definitions on
//! Linux's functions), the files an event gets, records with the argument
//! values of calls whose arguments the shell's workloads fix, filters and
//! triggers on a probe event, EBUSY while an event is enabled, and hit
//! counts equal to the known number of calls; probe events in instances
//! (each instance's own files, records only where enabled, EBUSY while
//! enabled in any instance, as Linux 6.1 does); hist triggers on probe
//! events and their `hist` files, in the top level and in instances.

use tests::Kernel;

const T: &str = "/tracing";
/// `work stack N` calls this N + 1 times: (N, 0), (N - 1, 1) ... (0, N),
/// its third argument a slice of 65 words (ptr, len).
const STACK_FN: &str = "kernel::shell::work::work_stack_recurse";
/// `calltree 1` calls this with n = 2, 1, 0; the n = 0 call ends in a
/// tail call of `LEAF_FN` (`jmp`, checked by return_probes' function
/// tracer part).
const CHAIN_FN: &str = "kernel::shell::work::calltree_chain";
const LEAF_FN: &str = "kernel::shell::work::calltree_leaf";
/// `work files N` calls this twice per file, first argument the path
/// `/tmp/work-CPU-I`.
const FILES_FN: &str = "kernel::shell::work::files_write";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

fn cat(k: &mut Kernel, file: &str) -> String {
    clean(&k.run(&format!("cat {T}/{file}")))
}

/// `echo 'TEXT' >> FILE` (or `>` with `trunc`), and what the shell printed.
fn echo(k: &mut Kernel, text: &str, file: &str) -> String {
    clean(&k.run(&format!("echo '{text}' >> {T}/{file}")))
}

fn error_log(k: &mut Kernel) -> String {
    let log = cat(k, "error_log");
    assert_eq!(k.run(&format!("echo > {T}/error_log")), "");
    log
}

/// The error_log entry for `cmd` without its time stamp: the error line's
/// text, the command line and the caret line.
fn entry(text: &str, cmd: &str, pos: usize) -> String {
    format!(
        "trace_kprobe: error: {text}\n  Command: {cmd}\n{}^\n",
        " ".repeat(11 + pos)
    )
}

/// The one error_log entry, time stamp dropped.
fn only_entry(log: &str) -> String {
    let mut lines = log.lines();
    let first = lines.next().unwrap_or_else(|| panic!("empty error_log"));
    let first = &first[first.find("] ").expect(first) + 2..];
    let rest: Vec<&str> = lines.collect();
    assert_eq!(rest.len(), 2, "{log}");
    format!("{first}\n{}\n{}\n", rest[0], rest[1])
}

/// The `trace` lines of event `name`.
fn events(k: &mut Kernel, name: &str) -> Vec<String> {
    events_in(k, "trace", name)
}

/// The lines of event `name` in the trace file `trace`.
fn events_in(k: &mut Kernel, trace: &str, name: &str) -> Vec<String> {
    let tag = format!(" {name}: ");
    cat(k, trace)
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(&tag))
        .map(String::from)
        .collect()
}

#[test]
fn definitions_errors_and_files() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    // Linux's errors, with the function names of this kernel.
    // (definition, errno, text, where the caret points: the first
    // occurrence of this text, or the end for None).
    let cases: &[(&str, &str, &str, Option<&str>)] = &[
        (
            "p:bad nosuchsym",
            "No such file or directory",
            "Invalid probed address or symbol",
            Some("nosuch"),
        ),
        (
            "p3:b4 SYM",
            "Invalid argument",
            "Maxactive is not for kprobe",
            Some("3"),
        ),
        (
            "p:1g/e SYM",
            "Invalid argument",
            "Group name must follow the same rules as C identifiers",
            Some("1g"),
        ),
        (
            "p:e1 SYM%foo",
            "Invalid argument",
            "Invalid probed address suffix",
            Some("%foo"),
        ),
        (
            "p:e2 SYM $retval",
            "Invalid argument",
            "$retval is not available on probe",
            Some("$retval"),
        ),
        (
            "p:e4 SYM $arg0",
            "Invalid argument",
            "Invalid argument number",
            Some("$arg0"),
        ),
        (
            "p:e6 SYM %foo",
            "Invalid argument",
            "Invalid register name",
            Some("%foo"),
        ),
        (
            "p:e9 SYM +8(%di",
            "Invalid argument",
            "Dereference brace is not closed",
            None,
        ),
        (
            "p:e11 SYM %di:string",
            "Invalid argument",
            "String accepts only memory argument",
            Some("string"),
        ),
        (
            "p:e15 SYM a=%di a=%si",
            "Invalid argument",
            "This argument name is already used",
            Some("a=%si"),
        ),
        (
            "p:e17 SYM +0(%di):u8[3",
            "Invalid argument",
            "Array is not closed",
            None,
        ),
        (
            "p:e30 SYM @nosuchsym",
            "No such file or directory",
            "Invalid probed address or symbol",
            Some("kernel"),
        ),
        (
            "p:sched/sched_switch SYM",
            "File exists",
            "Given group/event name is already used by another event",
            Some("p:"),
        ),
    ];
    for (def, errno, text, at) in cases {
        let def = def.replace("SYM", STACK_FN);
        let pos = at.map_or(def.len(), |m| def.find(m).unwrap());
        let out = echo(&mut k, &def, "kprobe_events");
        assert!(
            out.contains(&format!("write error: {errno}")),
            "{def}: {out}"
        );
        assert_eq!(
            only_entry(&error_log(&mut k)),
            entry(text, &def, pos),
            "{def}"
        );
    }
    // An offset inside an instruction: EILSEQ and Linux's text. Offsets
    // 1..16 of the function hold at least one that is not a boundary and
    // one that is.
    let mut boundary = None;
    let mut refused = 0;
    for off in 1..16 {
        let def = format!("p:mid {STACK_FN}+{off}");
        let out = echo(&mut k, &def, "kprobe_events");
        if out.is_empty() {
            boundary = Some(off);
            assert_eq!(echo(&mut k, "-:mid", "kprobe_events"), "");
            continue;
        }
        assert!(
            out.contains("write error: Invalid or incomplete multibyte or wide character"),
            "{def}: {out}"
        );
        assert_eq!(
            only_entry(&error_log(&mut k)),
            entry("Probe point is not an instruction boundary", &def, 6)
        );
        refused += 1;
    }
    assert!(boundary.is_some() && refused > 0, "{boundary:?} {refused}");

    // No log entry for these (Linux neither).
    for def in ["q:x SYM", "p:x", "p:x SYM $comm:u32"] {
        let out = echo(&mut k, &def.replace("SYM", STACK_FN), "kprobe_events");
        assert!(
            out.contains("write error: Invalid argument"),
            "{def}: {out}"
        );
    }
    assert_eq!(cat(&mut k, "error_log"), "");

    // A definition and its files.
    let def = format!("p:myprobe {STACK_FN} left=$arg1 level=$arg2:u32 s=$stack0 c=$comm");
    assert_eq!(echo(&mut k, &def, "kprobe_events"), "");
    assert_eq!(
        cat(&mut k, "kprobe_events"),
        format!("p:kprobes/myprobe {STACK_FN} left=$arg1 level=$arg2:u32 s=$stack0 c=$comm\n")
    );
    assert_eq!(cat(&mut k, "dynamic_events"), cat(&mut k, "kprobe_events"));
    let ls = clean(&k.run(&format!("ls {T}/events/kprobes/myprobe")));
    for f in ["enable", "filter", "format", "hist", "id", "trigger"] {
        assert!(ls.lines().any(|l| l.trim() == f), "{f}: {ls}");
    }
    let id = cat(&mut k, "events/kprobes/myprobe/id");
    let format = cat(&mut k, "events/kprobes/myprobe/format");
    assert_eq!(
        format,
        format!(
            "name: myprobe\nID: {}\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:u64 left;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:u32 level;\toffset:24;\tsize:4;\tsigned:0;\n\
\tfield:u64 s;\toffset:28;\tsize:8;\tsigned:0;\n\
\tfield:__data_loc char[] c;\toffset:36;\tsize:4;\tsigned:1;\n\n\
print fmt: \"(%lx) left=0x%Lx level=%u s=0x%Lx c=\\\"%s\\\"\", REC->__probe_ip, REC->left, REC->level, REC->s, __get_str(c)\n",
            id.trim()
        )
    );
    assert_eq!(cat(&mut k, "events/kprobes/myprobe/enable"), "0\n");
    // A second probe on the event (multiprobe), and Linux's refusals.
    assert_eq!(
        echo(
            &mut k,
            &format!("p:myprobe {FILES_FN} left=$arg1 level=$arg2:u32 s=$stack0 c=$comm"),
            "kprobe_events"
        ),
        ""
    );
    let same = format!("p:myprobe {FILES_FN} left=$arg1 level=$arg2:u32 s=$stack0 c=$comm");
    assert!(echo(&mut k, &same, "kprobe_events").contains("write error: File exists"));
    assert_eq!(
        only_entry(&error_log(&mut k)),
        entry("There is already the exact same probe event", &same, 0)
    );
    let diff = format!("p:myprobe {FILES_FN} x=%di");
    assert!(echo(&mut k, &diff, "kprobe_events").contains("write error: File exists"));
    assert_eq!(
        only_entry(&error_log(&mut k)),
        // Fewer args than the event's: Linux's caret goes past the last
        // word.
        entry(
            "Argument type or name is different from existing probe",
            &diff,
            diff.len() + 1
        )
    );
    // Removal: one probe by its point, unknown names, bad syntax.
    assert_eq!(
        echo(&mut k, &format!("-:myprobe {FILES_FN}"), "kprobe_events"),
        ""
    );
    assert!(echo(&mut k, "-:nosuch", "kprobe_events").contains("No such file or directory"));
    assert!(echo(&mut k, "-:", "kprobe_events").contains("Invalid argument"));
    // A group, a default name, removal of the group with `-:g/`.
    assert_eq!(
        echo(&mut k, &format!("p:g/ {STACK_FN}"), "dynamic_events"),
        ""
    );
    let name = "p_kernel__shell__work__work_stack_recurse_0";
    assert!(cat(&mut k, "kprobe_events").contains(&format!("p:g/{name} {STACK_FN}\n")));
    assert_eq!(cat(&mut k, &format!("events/g/{name}/enable")), "0\n");
    assert_eq!(echo(&mut k, "-:g/", "kprobe_events"), "");
    assert!(clean(&k.run(&format!("ls {T}/events")))
        .lines()
        .all(|l| l.trim() != "g"));
    // EBUSY while enabled: removal and truncation change nothing.
    assert_eq!(echo(&mut k, "1", "events/kprobes/myprobe/enable"), "");
    assert!(echo(&mut k, "-:myprobe", "kprobe_events").contains("Device or resource busy"));
    let out = clean(&k.run(&format!("echo > {T}/kprobe_events")));
    assert!(out.contains("Device or resource busy"), "{out}");
    assert!(cat(&mut k, "kprobe_events").contains("p:kprobes/myprobe"));
    assert_eq!(echo(&mut k, "0", "events/kprobes/myprobe/enable"), "");
    assert_eq!(clean(&k.run(&format!("echo > {T}/kprobe_events"))), "");
    assert_eq!(cat(&mut k, "kprobe_events"), "");
    assert!(clean(&k.run(&format!("ls {T}/events")))
        .lines()
        .all(|l| l.trim() != "kprobes"));
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(std::time::Duration::from_secs(60)), 0);
}

#[test]
fn records_filters_triggers_and_counts() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    let def = format!("p:myprobe {STACK_FN} left=$arg1 level=$arg2:u32 ret=$stack0:symbol c=$comm");
    assert_eq!(echo(&mut k, &def, "kprobe_events"), "");
    assert_eq!(echo(&mut k, "1", "events/kprobes/myprobe/enable"), "");
    let out = clean(&k.run("work stack 4"));
    assert!(out.contains("5 calls"), "{out}");
    assert_eq!(echo(&mut k, "0", "events/kprobes/myprobe/enable"), "");
    let lines = events(&mut k, "myprobe");
    assert_eq!(lines.len(), 5, "{lines:?}");
    for (i, l) in lines.iter().enumerate() {
        let tail = &l[l.find(" myprobe: ").unwrap() + 10..];
        let (point, args) = tail.split_once(") ").unwrap();
        assert!(point.starts_with(&format!("({STACK_FN}+0x0/0x")), "{l}");
        // The return address: the shell's `work stack`, then the
        // function itself.
        let caller = if i == 0 {
            "kernel::shell::work::"
        } else {
            "kernel::shell::work::work_stack_recurse+0x"
        };
        let want = format!("left=0x{:x} level={} ret={caller}", 4 - i, i);
        assert!(args.starts_with(&want), "{l}");
        assert!(args.ends_with(" c=\"sh\""), "{l}");
    }
    // kprobe_profile: hits equal the calls made while enabled.
    let prof = cat(&mut k, "kprobe_profile");
    assert_eq!(prof, format!("  {:<44} {:>15} {:>15}\n", "myprobe", 5, 0));

    // A filter on an argument.
    assert_eq!(
        echo(&mut k, "level == 2", "events/kprobes/myprobe/filter"),
        ""
    );
    assert_eq!(cat(&mut k, "events/kprobes/myprobe/filter"), "level == 2\n");
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    assert_eq!(echo(&mut k, "1", "events/kprobes/myprobe/enable"), "");
    clean(&k.run("work stack 6"));
    assert_eq!(echo(&mut k, "0", "events/kprobes/myprobe/enable"), "");
    let lines = events(&mut k, "myprobe");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(" myprobe: (") && lines[0].contains(") left=0x4 level=2 ret="),
        "{}",
        lines[0]
    );
    assert_eq!(echo(&mut k, "0", "events/kprobes/myprobe/filter"), "");
    assert_eq!(
        cat(&mut k, "kprobe_profile"),
        format!("  {:<44} {:>15} {:>15}\n", "myprobe", 12, 0)
    );

    // A trigger: traceoff when level is 3.
    assert_eq!(
        echo(
            &mut k,
            "traceoff if level == 3",
            "events/kprobes/myprobe/trigger"
        ),
        ""
    );
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    assert_eq!(echo(&mut k, "1", "events/kprobes/myprobe/enable"), "");
    clean(&k.run("work stack 6"));
    assert_eq!(cat(&mut k, "tracing_on"), "0\n");
    assert_eq!(echo(&mut k, "0", "events/kprobes/myprobe/enable"), "");
    let levels: Vec<String> = events(&mut k, "myprobe")
        .iter()
        .map(|l| {
            l.split(" level=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(levels, ["0", "1", "2", "3"]);
    assert_eq!(
        echo(
            &mut k,
            "!traceoff if level == 3",
            "events/kprobes/myprobe/trigger"
        ),
        ""
    );
    assert_eq!(echo(&mut k, "1", "tracing_on"), "");

    // A deref and an array on every CPU: files_write's path starts with
    // "/tmp/"; two calls per file.
    let def = format!("p:fw {FILES_FN} p=+0(%di):u8[5] append=%r8:u8");
    assert_eq!(echo(&mut k, &def, "kprobe_events"), "");
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    assert_eq!(echo(&mut k, "1", "events/kprobes/fw/enable"), "");
    let out = clean(&k.run("work files 10"));
    assert!(out.contains(" 0 errors"), "{out}");
    assert_eq!(echo(&mut k, "0", "events/kprobes/fw/enable"), "");
    let lines = events(&mut k, "fw");
    assert_eq!(lines.len(), 4 * 10 * 2, "{}", lines.len());
    for l in &lines {
        assert!(l.contains(" p={47,116,109,112,47} append="), "{l}");
    }
    assert!(
        cat(&mut k, "kprobe_profile").contains(&format!("  {:<44} {:>15} {:>15}\n", "fw", 80, 0))
    );
    // set_event_pid filters probe events as it filters the others: one
    // defined before the list is set (myprobe) and one defined while it is
    // (pidp). The shell is pid 1.
    assert_eq!(echo(&mut k, "1000", "set_event_pid"), "");
    assert_eq!(
        echo(&mut k, &format!("p:pidp {STACK_FN}"), "kprobe_events"),
        ""
    );
    for e in ["myprobe", "pidp"] {
        assert_eq!(echo(&mut k, "1", &format!("events/kprobes/{e}/enable")), "");
    }
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    clean(&k.run("work stack 1"));
    assert_eq!(events(&mut k, "myprobe").len(), 0);
    assert_eq!(events(&mut k, "pidp").len(), 0);
    assert_eq!(k.run(&format!("echo 1 > {T}/set_event_pid")), "");
    clean(&k.run("work stack 1"));
    assert_eq!(events(&mut k, "myprobe").len(), 2);
    assert_eq!(events(&mut k, "pidp").len(), 2);
    // No list: every task again.
    assert_eq!(k.run(&format!("echo > {T}/set_event_pid")), "");
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    clean(&k.run("work stack 1"));
    assert_eq!(events(&mut k, "pidp").len(), 2);
    // Another event's enable_event trigger may name a probe event (Linux:
    // event_enable_trigger_parse looks among all of tr->events); while the
    // trigger holds it in soft mode the probe cannot go.
    assert_eq!(echo(&mut k, "0", "events/kprobes/pidp/enable"), "");
    let sw = "events/sched/sched_switch/trigger";
    assert_eq!(
        k.run(&format!("echo 'enable_event:kprobes:pidp:1' > {T}/{sw}")),
        ""
    );
    // The shell waiting for the next line may already have switched to
    // the idle task: the count is 1 or 0.
    assert!(cat(&mut k, sw).starts_with("enable_event:kprobes:pidp:count="));
    assert!(echo(&mut k, "-:pidp", "kprobe_events").contains("Device or resource busy"));
    k.run("sleep 0.02");
    assert_eq!(cat(&mut k, sw), "enable_event:kprobes:pidp:count=0\n");
    assert_eq!(cat(&mut k, "events/kprobes/pidp/enable"), "1*\n");
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    clean(&k.run("work stack 1"));
    assert_eq!(events(&mut k, "pidp").len(), 2);
    assert_eq!(
        k.run(&format!("echo '!enable_event:kprobes:pidp:1' > {T}/{sw}")),
        ""
    );
    assert!(!cat(&mut k, sw).contains("enable_event:"));
    // The trigger fired: the event stays enabled, as on Linux.
    assert_eq!(cat(&mut k, "events/kprobes/pidp/enable"), "1\n");
    assert_eq!(echo(&mut k, "0", "events/kprobes/pidp/enable"), "");
    assert_eq!(echo(&mut k, "-:pidp", "kprobe_events"), "");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(std::time::Duration::from_secs(60)), 0);
}

/// Probes whose arguments are all whole registers (at most 4) have a
/// handler made for their count, writing a record of a known length
/// (trace_kprobe.rs `write_words`); a fifth argument or a narrower one
/// takes the general copies. Each records its calls' values, entry and
/// return probes alike, several probes sharing the function's entry.
#[test]
fn whole_register_arguments() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let defs = [
        format!("p:w0 {STACK_FN}"),
        format!("p:w4 {STACK_FN} a=%di b=$arg2 c=%si d=$arg1"),
        format!("p:w5 {STACK_FN} a=%di b=$arg2 c=%si d=$arg1 e=$arg1"),
        format!("p:n4 {STACK_FN} a=%di:u32 b=$arg2 c=%si d=$arg1"),
        format!("r:r2 {STACK_FN} x=$retval y=%ax"),
    ];
    for def in &defs {
        assert_eq!(echo(&mut k, def, "kprobe_events"), "", "{def}");
    }
    assert_eq!(echo(&mut k, "1", "events/kprobes/enable"), "");
    let out = clean(&k.run("work stack 4"));
    assert!(out.contains("5 calls"), "{out}");
    assert_eq!(echo(&mut k, "0", "events/kprobes/enable"), "");
    let tail = |l: &str, name: &str| {
        l[l.find(&format!(" {name}: (")).unwrap() + name.len() + 3..]
            .split_once(") ")
            .map_or(String::new(), |(_, args)| args.to_string())
    };
    let w0 = events(&mut k, "w0");
    assert_eq!(w0.len(), 5, "{w0:?}");
    assert!(w0.iter().all(|l| l.ends_with(')')), "{w0:?}");
    // `work stack 4` calls (4, 0), (3, 1) ... (0, 4).
    for (name, fifth) in [("w4", false), ("w5", true)] {
        let lines = events(&mut k, name);
        assert_eq!(lines.len(), 5, "{lines:?}");
        for (i, l) in lines.iter().enumerate() {
            let left = 4 - i;
            let e = if fifth {
                format!(" e=0x{left:x}")
            } else {
                String::new()
            };
            let want = format!("a=0x{left:x} b=0x{i:x} c=0x{i:x} d=0x{left:x}{e}");
            assert_eq!(tail(l, name), want, "{l}");
        }
    }
    let lines = events(&mut k, "n4");
    assert_eq!(lines.len(), 5, "{lines:?}");
    for (i, l) in lines.iter().enumerate() {
        let want = format!("a={} b=0x{i:x} c=0x{i:x} d=0x{:x}", 4 - i, 4 - i);
        assert_eq!(tail(l, "n4"), want, "{l}");
    }
    // The return probe: the deepest call returns first; %ax is $retval.
    let rets: Vec<(u64, u64)> = events(&mut k, "r2")
        .iter()
        .map(|l| (arg_value(l, "x"), arg_value(l, "y")))
        .collect();
    let want: Vec<(u64, u64)> = (0..=4)
        .rev()
        .map(|l| (stack_sum(l, 4), stack_sum(l, 4)))
        .collect();
    assert_eq!(rets, want);
    assert_eq!(clean(&k.run(&format!("echo > {T}/kprobe_events"))), "");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(std::time::Duration::from_secs(60)), 0);
}

/// What `work_stack_recurse` returns at `level` of `work stack n`: the
/// sum of its 480-byte array, `(i + level) as u8`, and of every deeper
/// level's (kernel/src/shell/work.rs: `STACK_ARRAY`).
fn stack_sum(level: u64, n: u64) -> u64 {
    (level..=n)
        .map(|j| (0..480u64).map(|i| (i + j) & 0xff).sum::<u64>())
        .sum()
}

/// The `$retval` a return probe printed as `NAME=0x...` or `NAME=N`.
fn arg_value(line: &str, name: &str) -> u64 {
    let v = line
        .split(&format!(" {name}="))
        .nth(1)
        .unwrap_or_else(|| panic!("{name}: {line}"))
        .split([' ', '*'])
        .next()
        .unwrap();
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => v.parse().unwrap(),
    }
}

#[test]
fn return_probes() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    // Linux 6.1's refusals of return probes (texts and carets as
    // /work/shared/linux/qemu.sh shows them for vfs_open).
    let cases: &[(&str, &str, Option<&str>)] = &[
        (
            "r:b1 SYM+4",
            "Retprobe address must be an function entry",
            Some("kernel"),
        ),
        (
            "p:b2 SYM+4%return",
            "Retprobe address must be an function entry",
            Some("kernel"),
        ),
        (
            "p:b3 SYM $retval",
            "$retval is not available on probe",
            Some("$retval"),
        ),
        ("r0:b4 SYM", "Invalid maxactive number", Some("0")),
        ("r5000:b5 SYM", "Maxactive is too big", Some("5")),
        (
            "r:b6 SYM $arg1",
            "Invalid $-variable specified",
            Some("$arg1"),
        ),
    ];
    for (def, text, at) in cases {
        let def = def.replace("SYM", STACK_FN);
        let pos = at.map_or(def.len(), |m| def.find(m).unwrap());
        let out = echo(&mut k, &def, "kprobe_events");
        assert!(
            out.contains("write error: Invalid argument"),
            "{def}: {out}"
        );
        assert_eq!(
            only_entry(&error_log(&mut k)),
            entry(text, &def, pos),
            "{def}"
        );
    }
    assert_eq!(cat(&mut k, "kprobe_events"), "");

    // `r`, `%return` and a default name; read back as Linux does, with
    // the default maxactive max(10, 2 * CPUs).
    for def in [
        format!("r:myret {STACK_FN} $retval"),
        format!("p:pr {STACK_FN}%return rs=$retval:s64"),
        format!("r3 {STACK_FN}"),
    ] {
        assert_eq!(echo(&mut k, &def, "kprobe_events"), "", "{def}");
    }
    let dflt = "r_kernel__shell__work__work_stack_recurse_0";
    assert_eq!(
        cat(&mut k, "kprobe_events"),
        format!(
            "r10:kprobes/myret {STACK_FN} arg1=$retval\n\
             r10:kprobes/pr {STACK_FN} rs=$retval:s64\n\
             r3:kprobes/{dflt} {STACK_FN}\n"
        )
    );
    // An entry probe cannot join a return probe's event.
    let mixed = format!("p:myret {FILES_FN}");
    assert!(echo(&mut k, &mixed, "kprobe_events").contains("write error: File exists"));
    assert_eq!(
        only_entry(&error_log(&mut k)),
        entry("Probe type is different from existing probe", &mixed, 0)
    );
    let id = cat(&mut k, "events/kprobes/myret/id");
    assert_eq!(
        cat(&mut k, "events/kprobes/myret/format"),
        format!(
            "name: myret\nID: {}\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:unsigned long __probe_func;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:unsigned long __probe_ret_ip;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:u64 arg1;\toffset:24;\tsize:8;\tsigned:0;\n\n\
print fmt: \"(%lx <- %lx) arg1=0x%Lx\", REC->__probe_func, REC->__probe_ret_ip, REC->arg1\n",
            id.trim()
        )
    );

    // $retval is what each call returned: the innermost returns first.
    assert_eq!(echo(&mut k, "1", "events/kprobes/myret/enable"), "");
    assert_eq!(echo(&mut k, "1", "events/kprobes/pr/enable"), "");
    let out = clean(&k.run("work stack 4"));
    assert!(
        out.contains(&format!(
            "5 calls, frame 1024 bytes, 0 errors, sum {}",
            stack_sum(0, 4)
        )),
        "{out}"
    );
    // Enabled: removal is refused.
    assert!(echo(&mut k, "-:myret", "kprobe_events").contains("Device or resource busy"));
    assert_eq!(echo(&mut k, "0", "events/kprobes/myret/enable"), "");
    assert_eq!(echo(&mut k, "0", "events/kprobes/pr/enable"), "");
    let lines = events(&mut k, "myret");
    assert_eq!(lines.len(), 5, "{lines:?}");
    for (i, l) in lines.iter().enumerate() {
        let level = 4 - i as u64;
        // The caller: the function itself, then the shell's `work`.
        let caller = if level > 0 {
            format!("{STACK_FN}+0x")
        } else {
            String::from("kernel::shell::work::")
        };
        assert!(
            l.contains(&format!(" myret: ({caller}"))
                && l.contains(&format!(" <- {STACK_FN}) arg1=0x")),
            "{l}"
        );
        assert_eq!(arg_value(l, "arg1"), stack_sum(level, 4), "{l}");
    }
    let lines = events(&mut k, "pr");
    assert_eq!(lines.len(), 5, "{lines:?}");
    for (i, l) in lines.iter().enumerate() {
        assert!(
            l.ends_with(&format!(" rs={}", stack_sum(4 - i as u64, 4))),
            "{l}"
        );
    }

    // maxactive 1: the outermost call is watched, the four nested ones
    // are missed.
    assert_eq!(
        echo(
            &mut k,
            &format!("r1:one {STACK_FN} $retval"),
            "kprobe_events"
        ),
        ""
    );
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    assert_eq!(echo(&mut k, "1", "events/kprobes/one/enable"), "");
    clean(&k.run("work stack 4"));
    assert_eq!(echo(&mut k, "0", "events/kprobes/one/enable"), "");
    let lines = events(&mut k, "one");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(arg_value(&lines[0], "arg1"), stack_sum(0, 4));
    let prof = cat(&mut k, "kprobe_profile");
    for (name, hits, missed) in [("myret", 5, 0), ("pr", 5, 0), (dflt, 0, 0), ("one", 1, 4)] {
        assert!(
            prof.contains(&format!("  {name:<44} {hits:>15} {missed:>15}\n")),
            "{name}: {prof}"
        );
    }

    // A return probe and function_graph on the same function at once:
    // both see every call, and the values stay right.
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    assert_eq!(echo(&mut k, "1", "events/kprobes/myret/enable"), "");
    assert_eq!(
        k.run(&format!("echo {STACK_FN} > {T}/set_ftrace_filter")),
        ""
    );
    assert_eq!(
        k.run(&format!("echo function_graph > {T}/current_tracer")),
        ""
    );
    let out = clean(&k.run("work stack 2"));
    assert!(
        out.contains(&format!(
            "3 calls, frame 1024 bytes, 0 errors, sum {}",
            stack_sum(0, 2)
        )),
        "{out}"
    );
    assert_eq!(k.run(&format!("echo 0 > {T}/tracing_on")), "");
    let trace = cat(&mut k, "trace");
    let calls = trace
        .lines()
        .filter(|l| {
            l.ends_with(&format!("{STACK_FN}() {{")) || l.ends_with(&format!("{STACK_FN}();"))
        })
        .count();
    assert_eq!(calls, 3, "{trace}");
    // Indented as without the return probe (whose frames are on the
    // task's rethook stack, not the graph's): the recursion's depths 0,
    // 1, 2. Both hijack each call's return slot: the return goes through
    // the kretprobe's trampoline, then function_graph's.
    assert_eq!(graph_indents(&trace, STACK_FN), [0, 1, 2], "{trace}");
    let rets: Vec<u64> = trace
        .lines()
        .filter(|l| l.contains("/* myret: ("))
        .map(|l| arg_value(l, "arg1"))
        .collect();
    assert_eq!(
        rets,
        [stack_sum(2, 2), stack_sum(1, 2), stack_sum(0, 2)],
        "{trace}"
    );

    // A return probe on a function that tail-calls a traced one:
    // calltree_chain(0, x) ends in `jmp calltree_leaf`, so the leaf's
    // return address is the chain's, which the kretprobe replaced by
    // `rethook_trampoline`. The function tracer prints the real caller
    // (the chain one level up), on its fast path and, with
    // func_stack_trace, on its slow path, whose stack traces go through
    // the hijacked slots too.
    assert_eq!(echo(&mut k, "0", "events/kprobes/myret/enable"), "");
    assert_eq!(
        echo(&mut k, &format!("r:ch {CHAIN_FN}"), "kprobe_events"),
        ""
    );
    assert_eq!(echo(&mut k, "1", "events/kprobes/ch/enable"), "");
    assert_eq!(
        k.run(&format!("echo {LEAF_FN} > {T}/set_ftrace_filter")),
        ""
    );
    assert_eq!(k.run(&format!("echo function > {T}/current_tracer")), "");
    for stack_trace in [false, true] {
        if stack_trace {
            assert_eq!(echo(&mut k, "1", "options/func_stack_trace"), "");
        }
        assert_eq!(k.run(&format!("echo > {T}/trace")), "");
        assert_eq!(k.run(&format!("echo 1 > {T}/tracing_on")), "");
        clean(&k.run("calltree 1"));
        assert_eq!(k.run(&format!("echo 0 > {T}/tracing_on")), "");
        let trace = cat(&mut k, "trace");
        let parents: Vec<&str> = trace
            .lines()
            .filter_map(|l| l.split_once(&format!(": {LEAF_FN} <-")))
            .map(|(_, parent)| parent.trim_end())
            .collect();
        assert_eq!(
            parents,
            [
                "kernel::shell::work::calltree_root",
                "kernel::shell::work::calltree_pair",
                "kernel::shell::work::calltree_pair",
                CHAIN_FN
            ],
            "{trace}"
        );
        assert!(!trace.contains("rethook_trampoline"), "{trace}");
        // The three chain calls' returns.
        assert_eq!(
            trace.lines().filter(|l| l.contains(" ch: (")).count(),
            3,
            "{trace}"
        );
        if stack_trace {
            let chain = format!(
                " => {LEAF_FN}\n => {CHAIN_FN}\n => {CHAIN_FN}\n \
                 => kernel::shell::work::calltree_root\n"
            );
            assert!(trace.contains(&chain), "{trace}");
        }
    }
    assert_eq!(echo(&mut k, "0", "options/func_stack_trace"), "");
    assert_eq!(k.run(&format!("echo nop > {T}/current_tracer")), "");
    assert_eq!(k.run(&format!("echo 1 > {T}/tracing_on")), "");
    assert_eq!(echo(&mut k, "0", "events/kprobes/ch/enable"), "");
    assert_eq!(clean(&k.run(&format!("echo > {T}/kprobe_events"))), "");
    assert_eq!(cat(&mut k, "kprobe_events"), "");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(std::time::Duration::from_secs(60)), 0);
}

#[test]
fn group_files_and_set_event() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    assert_eq!(
        echo(
            &mut k,
            &format!("p:a {STACK_FN} lvl=$arg2:u32"),
            "kprobe_events"
        ),
        ""
    );
    assert_eq!(
        echo(&mut k, &format!("r:b {STACK_FN} $retval"), "kprobe_events"),
        ""
    );
    // The group is an event system: its own enable and filter.
    let ls = clean(&k.run(&format!("ls {T}/events/kprobes")));
    let names: Vec<&str> = ls.lines().map(str::trim).collect();
    assert_eq!(names, ["a", "b", "enable", "filter"], "{ls}");
    assert_eq!(cat(&mut k, "events/kprobes/enable"), "0\n");
    // set_event names probe events as GROUP:EVENT, newest first.
    assert_eq!(echo(&mut k, "kprobes:a", "set_event"), "");
    assert_eq!(cat(&mut k, "set_event"), "kprobes:a\n");
    assert_eq!(cat(&mut k, "events/kprobes/enable"), "X\n");
    assert_eq!(cat(&mut k, "events/kprobes/a/enable"), "1\n");
    assert_eq!(echo(&mut k, "kprobes:*", "set_event"), "");
    assert_eq!(cat(&mut k, "set_event"), "kprobes:b\nkprobes:a\n");
    assert_eq!(cat(&mut k, "events/kprobes/enable"), "1\n");
    // Removing an enabled probe: EBUSY.
    assert!(echo(&mut k, "-:a", "kprobe_events").contains("Device or resource busy"));
    // The group's filter reaches each event it compiles for.
    assert_eq!(
        k.run(&format!("echo 'lvl == 1' > {T}/events/kprobes/filter")),
        ""
    );
    assert_eq!(cat(&mut k, "events/kprobes/a/filter"), "lvl == 1\n");
    assert!(cat(&mut k, "events/kprobes/b/filter")
        .contains("parse_error: Couldn't find or set field in one of a subsystem's events"));
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    clean(&k.run("work stack 3"));
    let lines = events(&mut k, "a");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].ends_with(" lvl=1"), "{}", lines[0]);
    assert_eq!(events(&mut k, "b").len(), 4);
    assert_eq!(k.run(&format!("echo 0 > {T}/events/kprobes/filter")), "");
    assert_eq!(cat(&mut k, "events/kprobes/a/filter"), "none\n");
    // The group's enable switches them all off; `!` in set_event too.
    assert_eq!(echo(&mut k, "1", "events/kprobes/enable"), "");
    assert_eq!(echo(&mut k, "!kprobes:b", "set_event"), "");
    assert_eq!(cat(&mut k, "set_event"), "kprobes:a\n");
    assert_eq!(k.run(&format!("echo 0 > {T}/events/kprobes/enable")), "");
    assert_eq!(cat(&mut k, "set_event"), "");
    assert_eq!(clean(&k.run(&format!("echo > {T}/kprobe_events"))), "");
    assert!(clean(&k.run(&format!("ls {T}/events")))
        .lines()
        .all(|l| l.trim() != "kprobes"));
    assert!(echo(&mut k, "kprobes:a", "set_event").contains("Invalid argument"));
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(std::time::Duration::from_secs(60)), 0);
}

/// The depths function_graph's `trace` shows for the calls of `func`:
/// the indentation after `|` (two spaces, then two per level) halved.
fn graph_indents(trace: &str, func: &str) -> Vec<usize> {
    trace
        .lines()
        .filter(|l| l.ends_with(&format!("{func}() {{")) || l.ends_with(&format!("{func}();")))
        .map(|l| {
            let after = &l[l.find('|').expect(l) + 1..];
            (after.len() - after.trim_start().len() - 2) / 2
        })
        .collect()
}

/// `instances/INST/trace`'s lines of event `name`.
/// The names `ls` prints for the tracefs directory `dir`.
fn ls(k: &mut Kernel, dir: &str) -> Vec<String> {
    clean(&k.run(&format!("ls {T}/{dir}")))
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

/// `events/GROUP` is gone from the top level and the instance `foo`.
fn group_gone(k: &mut Kernel, group: &str) {
    for dir in ["events", "instances/foo/events"] {
        assert!(!ls(k, dir).iter().any(|l| l == group), "{dir}: {group}");
    }
}

fn inst_events(k: &mut Kernel, inst: &str, name: &str) -> Vec<String> {
    events_in(k, &format!("instances/{inst}/trace"), name)
}

#[test]
fn probe_events_in_instances() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let def = format!("p:myp {STACK_FN} level=$arg2:u32");
    assert_eq!(echo(&mut k, &def, "kprobe_events"), "");
    assert_eq!(k.run(&format!("mkdir {T}/instances/foo")), "");
    // An instance made after the probe has its files, and the group's.
    let ls = clean(&k.run(&format!("ls {T}/instances/foo/events/kprobes")));
    let names: Vec<&str> = ls.lines().map(str::trim).collect();
    assert_eq!(names, ["enable", "filter", "myp"], "{ls}");
    let ls = clean(&k.run(&format!("ls {T}/instances/foo/events/kprobes/myp")));
    let names: Vec<&str> = ls.lines().map(str::trim).collect();
    assert_eq!(
        names,
        ["enable", "filter", "format", "hist", "id", "trigger"],
        "{ls}"
    );
    assert_eq!(
        cat(&mut k, "instances/foo/events/kprobes/myp/id"),
        cat(&mut k, "events/kprobes/myp/id")
    );
    // Enabled in the instance only (through its set_event).
    assert_eq!(echo(&mut k, "kprobes:myp", "instances/foo/set_event"), "");
    assert_eq!(cat(&mut k, "instances/foo/set_event"), "kprobes:myp\n");
    assert_eq!(cat(&mut k, "set_event"), "");
    assert_eq!(
        cat(&mut k, "instances/foo/events/kprobes/myp/enable"),
        "1\n"
    );
    assert_eq!(cat(&mut k, "events/kprobes/myp/enable"), "0\n");
    assert_eq!(cat(&mut k, "instances/foo/events/kprobes/enable"), "1\n");
    assert_eq!(cat(&mut k, "events/kprobes/enable"), "0\n");
    let out = clean(&k.run("work stack 3"));
    assert!(out.contains("4 calls"), "{out}");
    let lines = inst_events(&mut k, "foo", "myp");
    assert_eq!(lines.len(), 4, "{lines:?}");
    for (i, l) in lines.iter().enumerate() {
        assert!(l.contains(&format!("({STACK_FN}+0x0/0x")), "{l}");
        assert!(l.ends_with(&format!(" level={i}")), "{l}");
    }
    assert_eq!(events(&mut k, "myp"), Vec::<String>::new());
    // Removing it while enabled in an instance only: EBUSY, by `-:` and by
    // a truncating write.
    assert!(echo(&mut k, "-:myp", "kprobe_events").contains("Device or resource busy"));
    assert!(clean(&k.run(&format!("echo > {T}/kprobe_events"))).contains("Device or resource busy"));
    assert!(cat(&mut k, "kprobe_events").contains("p:kprobes/myp "));
    // Enabled in both: each array gets every hit once.
    assert_eq!(echo(&mut k, "1", "events/kprobes/myp/enable"), "");
    assert_eq!(k.run(&format!("echo > {T}/instances/foo/trace")), "");
    clean(&k.run("work stack 2"));
    assert_eq!(inst_events(&mut k, "foo", "myp").len(), 3);
    assert_eq!(events(&mut k, "myp").len(), 3);
    // Off in the instance: the top level still records, the instance no.
    assert_eq!(
        echo(&mut k, "0", "instances/foo/events/kprobes/myp/enable"),
        ""
    );
    assert_eq!(k.run(&format!("echo > {T}/instances/foo/trace")), "");
    assert_eq!(k.run(&format!("echo > {T}/trace")), "");
    clean(&k.run("work stack 1"));
    assert_eq!(inst_events(&mut k, "foo", "myp").len(), 0);
    assert_eq!(events(&mut k, "myp").len(), 2);
    assert_eq!(echo(&mut k, "0", "events/kprobes/myp/enable"), "");

    // A probe defined while instances exist appears in them; rmdir of an
    // instance where it is enabled works, and then it can be removed.
    let def = format!("r:myr {STACK_FN} $retval");
    assert_eq!(echo(&mut k, &def, "kprobe_events"), "");
    assert_eq!(k.run(&format!("mkdir {T}/instances/bar")), "");
    for inst in ["foo", "bar"] {
        let ls = clean(&k.run(&format!("ls {T}/instances/{inst}/events/kprobes")));
        let names: Vec<&str> = ls.lines().map(str::trim).collect();
        assert_eq!(names, ["enable", "filter", "myp", "myr"], "{inst}: {ls}");
    }
    assert_eq!(
        echo(&mut k, "1", "instances/bar/events/kprobes/myr/enable"),
        ""
    );
    assert!(echo(&mut k, "-:myr", "kprobe_events").contains("Device or resource busy"));
    clean(&k.run("work stack 1"));
    assert_eq!(inst_events(&mut k, "bar", "myr").len(), 2);
    assert_eq!(k.run(&format!("rmdir {T}/instances/bar")), "");
    assert_eq!(echo(&mut k, "-:myr", "kprobe_events"), "");
    let ls = clean(&k.run(&format!("ls {T}/instances/foo/events/kprobes")));
    let names: Vec<&str> = ls.lines().map(str::trim).collect();
    assert_eq!(names, ["enable", "filter", "myp"], "{ls}");
    // The last probe goes with its group's directory in every array.
    assert_eq!(clean(&k.run(&format!("echo > {T}/kprobe_events"))), "");
    group_gone(&mut k, "kprobes");
    assert!(echo(&mut k, "kprobes:myp", "instances/foo/set_event").contains("Invalid argument"));
    // The instance works on without it.
    assert_eq!(k.run(&format!("rmdir {T}/instances/foo")), "");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(std::time::Duration::from_secs(60)), 0);
}

/// A return probe's registers are the ones the function left: the
/// caller's callee-saved values (`kprobe_test regs` calls
/// `kprobe_target_saver`, which uses and restores them all, with rbx =
/// 0xb0b0, r12..r15 = 0x1212..0x1515 and rbp 48 bytes above the stack
/// pointer after the return), and the return value.
#[test]
fn return_probe_registers() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let def = "r:rr kprobe_target_saver bx=%bx r12=%r12 r13=%r13 r14=%r14 r15=%r15 \
               bp=%bp sp=%sp rv=$retval:u64";
    assert_eq!(echo(&mut k, def, "kprobe_events"), "");
    assert_eq!(echo(&mut k, "1", "events/kprobes/rr/enable"), "");
    let out = clean(&k.run("kprobe_test regs 3"));
    assert!(out.contains("kprobe_test regs: 3 calls, sum 6"), "{out}");
    assert_eq!(echo(&mut k, "0", "events/kprobes/rr/enable"), "");
    let lines = events(&mut k, "rr");
    assert_eq!(lines.len(), 3, "{lines:?}");
    for (i, l) in lines.iter().enumerate() {
        assert!(
            l.contains(" <- kprobe_target_saver) bx=0xb0b0 r12=0x1212 r13=0x1313 r14=0x1414 r15=0x1515 bp=0x"),
            "{l}"
        );
        assert!(l.contains("(kprobe_target_regs_caller+0x"), "{l}");
        let (bp, sp) = (arg_value(l, "bp"), arg_value(l, "sp"));
        assert_eq!(bp, sp + 48, "{l}");
        assert!(l.ends_with(&format!(" rv={}", i + 1)), "{l}");
    }
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(std::time::Duration::from_secs(60)), 0);
}

/// One block of a `hist` file with one-word keys (Linux's layout): the
/// trigger line, then each `{ KEY: N } hitcount: H` entry in order.
fn hist_block(trigger: &str, key: &str, entries: &[(u64, u64)]) -> String {
    let mut s = format!("# event histogram\n#\n# trigger info: {trigger} [active]\n#\n\n");
    for (k, h) in entries {
        s += &format!("{{ {key}: {k:>10} }} hitcount: {h:>10}\n");
    }
    let hits: u64 = entries.iter().map(|e| e.1).sum();
    s + &format!(
        "\nTotals:\n    Hits: {hits}\n    Entries: {}\n    Dropped: 0\n",
        entries.len()
    )
}

/// Hist triggers on probe events, entry and return probes, in the top
/// level and in an instance: every event directory has `hist` (Linux 6.1
/// gives every event one, dynamic events included), keys on the probe's
/// fetch args (`$arg2:u32`, `$comm` as a string, `__probe_ip.sym`,
/// `$retval`) and common fields, counts equal to the calls made (`work
/// stack N` calls the function N + 1 times, at levels 0..=N), printed as
/// /work/shared/linux/qemu.sh prints them for kprobe events on Linux's
/// functions. Removing the event while a hist trigger is on it is EBUSY
/// (the trigger holds it in soft mode: its `enable` reads `0*`), by `-:`
/// and by a truncating write; after `!hist:` it can go.
#[test]
fn hist_triggers_on_probe_events() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let def = format!("p:myprobe {STACK_FN} left=$arg1 level=$arg2:u32 c=$comm");
    assert_eq!(echo(&mut k, &def, "kprobe_events"), "");
    let def = format!("r:myret {STACK_FN} ret=$retval");
    assert_eq!(echo(&mut k, &def, "kprobe_events"), "");
    assert_eq!(k.run(&format!("mkdir {T}/instances/foo")), "");
    for dir in [
        "events/kprobes/myprobe",
        "events/kprobes/myret",
        "instances/foo/events/kprobes/myprobe",
        "instances/foo/events/kprobes/myret",
    ] {
        let ls = clean(&k.run(&format!("ls {T}/{dir}")));
        assert!(ls.lines().any(|l| l.trim() == "hist"), "{dir}: {ls}");
        // No hist trigger: an empty file.
        assert_eq!(cat(&mut k, &format!("{dir}/hist")), "", "{dir}");
    }
    let trig = "events/kprobes/myprobe/trigger";
    assert_eq!(echo(&mut k, "hist:keys=level:sort=level", trig), "");
    assert_eq!(echo(&mut k, "hist:keys=c,__probe_ip.sym:sort=c", trig), "");
    assert_eq!(
        echo(
            &mut k,
            "hist:keys=common_pid",
            "events/kprobes/myret/trigger"
        ),
        ""
    );
    assert_eq!(
        cat(&mut k, trig),
        "hist:keys=level:vals=hitcount:sort=level:size=2048 [active]\n\
         hist:keys=c,__probe_ip.sym:vals=hitcount:sort=c:size=2048 [active]\n"
    );
    // Counting only: the event is off, held in soft mode.
    assert_eq!(cat(&mut k, "events/kprobes/myprobe/enable"), "0*\n");
    let out = clean(&k.run("work stack 4"));
    assert!(out.contains("5 calls"), "{out}");
    let hist = cat(&mut k, "events/kprobes/myprobe/hist");
    let (first, second) = hist.split_once("\n\n# event").expect(&hist);
    assert_eq!(
        first,
        hist_block(
            "hist:keys=level:vals=hitcount:sort=level:size=2048",
            "level",
            &[(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)]
        )
    );
    // `{ c: sh<to 50>, __probe_ip: [ADDR] SYMBOL<to 45> } hitcount: 5`.
    let second = format!("# event{second}");
    let lines: Vec<&str> = second.lines().collect();
    assert_eq!(
        lines[..5],
        [
            "# event histogram",
            "#",
            "# trigger info: hist:keys=c,__probe_ip.sym:vals=hitcount:sort=c:size=2048 [active]",
            "#",
            ""
        ],
        "{second}"
    );
    let entry = lines[5];
    let head = format!("{{ c: {:<50}, __probe_ip: [ffffffff", "sh");
    let tail = format!("] {STACK_FN:<45} }} hitcount:          5");
    assert!(
        entry.starts_with(&head)
            && entry.ends_with(&tail)
            && entry.len() == head.len() + 8 + tail.len(),
        "{entry}"
    );
    assert_eq!(
        lines[6..],
        [
            "",
            "Totals:",
            "    Hits: 5",
            "    Entries: 1",
            "    Dropped: 0"
        ]
    );
    // The shell (pid 1) made every call.
    let pid_hist = |hits| {
        let t = "hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048";
        hist_block(t, "common_pid", &[(1, hits)])
    };
    assert_eq!(cat(&mut k, "events/kprobes/myret/hist"), pid_hist(5));
    // Nothing was written to the buffer.
    assert_eq!(events(&mut k, "myprobe"), Vec::<String>::new());
    // The instance's file counts only its own trigger's hits: the return
    // values of `work stack 2`'s three calls, one each.
    let itrig = "instances/foo/events/kprobes/myret/trigger";
    assert_eq!(echo(&mut k, "hist:keys=ret:sort=ret", itrig), "");
    let out = clean(&k.run("work stack 2"));
    assert!(out.contains("3 calls"), "{out}");
    let mut rets: Vec<(u64, u64)> = (0..=2).map(|l| (stack_sum(l, 2), 1)).collect();
    rets.sort();
    assert_eq!(
        cat(&mut k, "instances/foo/events/kprobes/myret/hist"),
        hist_block(
            "hist:keys=ret:vals=hitcount:sort=ret:size=2048",
            "ret",
            &rets
        )
    );
    assert_eq!(cat(&mut k, "events/kprobes/myret/hist"), pid_hist(8));
    // A hist trigger holds its event: removal is EBUSY (Linux 6.1 too),
    // by name, by a truncating write, and in an instance; nothing goes.
    assert!(echo(&mut k, "-:myprobe", "kprobe_events").contains("Device or resource busy"));
    let out = clean(&k.run(&format!("echo > {T}/kprobe_events")));
    assert!(out.contains("Device or resource busy"), "{out}");
    assert_eq!(
        echo(
            &mut k,
            "!hist:keys=common_pid",
            "events/kprobes/myret/trigger"
        ),
        ""
    );
    assert!(echo(&mut k, "-:myret", "kprobe_events").contains("Device or resource busy"));
    assert_eq!(cat(&mut k, "kprobe_events").lines().count(), 2);
    assert!(cat(&mut k, "events/kprobes/myprobe/hist").contains("Hits: 8"));
    // Without the triggers both go, with their directories.
    assert_eq!(echo(&mut k, "!hist:keys=ret:sort=ret", itrig), "");
    assert_eq!(echo(&mut k, "-:myret", "kprobe_events"), "");
    assert_eq!(echo(&mut k, "!hist:keys=level:sort=level", trig), "");
    assert!(echo(&mut k, "-:myprobe", "kprobe_events").contains("Device or resource busy"));
    assert_eq!(echo(&mut k, "!hist:keys=c,__probe_ip.sym:sort=c", trig), "");
    assert_eq!(cat(&mut k, "events/kprobes/myprobe/enable"), "0\n");
    assert_eq!(echo(&mut k, "-:myprobe", "kprobe_events"), "");
    assert_eq!(cat(&mut k, "kprobe_events"), "");
    group_gone(&mut k, "kprobes");
    // `-:g/` removes the group's events in order and stops, EBUSY, at one
    // held by a trigger in an instance: those before it are gone, in every
    // array (Linux 6.1 stops the same way at an enabled one).
    for (e, arg) in [("a", ""), ("b", " x=%di"), ("c", " y=%si")] {
        let def = format!("p:g/{e} {STACK_FN}{arg}");
        assert_eq!(echo(&mut k, &def, "kprobe_events"), "");
    }
    let btrig = "instances/foo/events/g/b/trigger";
    assert_eq!(echo(&mut k, "hist:keys=x", btrig), "");
    assert!(echo(&mut k, "-:g/", "kprobe_events").contains("Device or resource busy"));
    assert_eq!(
        cat(&mut k, "kprobe_events"),
        format!("p:g/b {STACK_FN} x=%di\np:g/c {STACK_FN} y=%si\n")
    );
    for dir in ["events/g", "instances/foo/events/g"] {
        assert_eq!(ls(&mut k, dir), ["b", "c", "enable", "filter"], "{dir}");
    }
    assert_eq!(echo(&mut k, "!hist:keys=x", btrig), "");
    assert_eq!(echo(&mut k, "-:g/", "kprobe_events"), "");
    assert_eq!(cat(&mut k, "kprobe_events"), "");
    group_gone(&mut k, "g");
    assert_eq!(k.run(&format!("rmdir {T}/instances/foo")), "");
    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(std::time::Duration::from_secs(60)), 0);
}
