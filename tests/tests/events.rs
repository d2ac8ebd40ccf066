//! QEMU tests of the kernel side of trace events: the tracepoints at their
//! call sites (scheduler, interrupts, heap, VFS, shell) record what Linux's
//! do once their `events/SYSTEM/EVENT/enable` is 1 and stop when it is 0;
//! `enable` rejects anything but 0 and 1 and changes nothing then;
//! `available_events`, `format` and `id` are the declarations'; events and
//! the function tracer record into the same buffer.

use tests::Kernel;

const T: &str = "/tracing";
const EINVAL: &str = "sh: write error: Invalid argument\n";

fn clean(s: &str) -> String {
    s.replace('\r', "")
}

fn run(k: &mut Kernel, cmd: &str) -> String {
    clean(&k.run(cmd))
}

fn enable_path(event: &str) -> String {
    let (sys, name) = event.split_once(':').unwrap();
    format!("{T}/events/{sys}/{name}/enable")
}

fn set(k: &mut Kernel, event: &str, on: bool) {
    let r = run(k, &format!("echo {} > {}", on as u8, enable_path(event)));
    assert_eq!(r, "", "enabling {event}");
}

/// The event lines of `trace` (no comments).
fn trace_lines(k: &mut Kernel) -> Vec<String> {
    run(k, &format!("cat {T}/trace"))
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The text after `NAME: ` of every line of event `name`.
fn texts<'a>(lines: &'a [String], name: &str) -> Vec<&'a str> {
    let tag = format!(": {name}: ");
    lines
        .iter()
        .filter_map(|l| l.split_once(&tag).map(|(_, t)| t))
        .collect()
}

/// `available_events` lists every declared event as `system:event`; each
/// `format` and `id` is the declaration's; `enable` reads 0, takes 1 and 0,
/// and any other write is EINVAL with nothing changed.
#[test]
fn event_files() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let want: String = tracer::trace_events::all_events()
        .map(|e| format!("{}:{}\n", e.system, e.name))
        .collect();
    assert_eq!(run(&mut k, &format!("cat {T}/available_events")), want);
    for e in tracer::trace_events::all_events() {
        let dir = format!("{T}/events/{}/{}", e.system, e.name);
        assert_eq!(run(&mut k, &format!("cat {dir}/format")), e.format_file());
        assert_eq!(run(&mut k, &format!("cat {dir}/id")), format!("{}\n", e.id));
        assert_eq!(run(&mut k, &format!("cat {dir}/enable")), "0\n", "{dir}");
    }
    let en = enable_path("sched:sched_switch");
    for bad in ["2", "-1", "abc", "1x", "01 1", ""] {
        let r = run(&mut k, &format!("echo '{bad}' > {en}"));
        assert_eq!(r, EINVAL, "echo '{bad}' > enable");
        assert_eq!(run(&mut k, &format!("cat {en}")), "0\n");
    }
    assert_eq!(run(&mut k, &format!("echo 1 > {en}")), "");
    assert_eq!(run(&mut k, &format!("cat {en}")), "1\n");
    // Enabling twice is no error (the probe is registered once).
    assert_eq!(run(&mut k, &format!("echo 1 > {en}")), "");
    assert_eq!(run(&mut k, &format!("echo 2 > {en}")), EINVAL);
    assert_eq!(run(&mut k, &format!("cat {en}")), "1\n");
    assert_eq!(run(&mut k, &format!("echo 0 > {en}")), "");
    assert_eq!(run(&mut k, &format!("echo 0 > {en}")), "");
    assert_eq!(run(&mut k, &format!("cat {en}")), "0\n");
    // The static key follows the event: every site holds what its key says.
    let check = run(&mut k, "jump_label_check");
    assert!(check.contains(" 0 bad,"), "{check}");
}

/// Every event fires from its call site with Linux's text, and nothing is
/// recorded once it is disabled again.
#[test]
fn events_fire_at_their_call_sites() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    // call_function first: enabling the others syncs the CPUs by IPI.
    let events = [
        "irq_vectors:call_function_entry",
        "irq_vectors:call_function_exit",
        "sched:sched_switch",
        "sched:sched_wakeup",
        "sched:sched_wakeup_new",
        "sched:sched_waking",
        "sched:sched_process_fork",
        "sched:sched_process_exit",
        "sched:sched_migrate_task",
        "irq:irq_handler_entry",
        "irq:irq_handler_exit",
        "irq_vectors:local_timer_entry",
        "irq_vectors:local_timer_exit",
        "irq_vectors:reschedule_entry",
        "irq_vectors:reschedule_exit",
        "vfs:vfs_open",
        "shell:shell_command_entry",
        "shell:shell_command_exit",
    ];
    for e in events {
        set(&mut k, e, true);
    }
    // Cross-CPU wake-ups, new tasks that exit, a failed open, a failed
    // write, and tasks that may move between the CPUs.
    assert!(run(&mut k, "work sleep 3").contains("0 errors"));
    assert!(run(&mut k, "calltree 1 2").starts_with("calltree: 2 tasks"));
    assert_eq!(
        run(&mut k, "cat /nonexist"),
        "cat: /nonexist: No such file or directory\n"
    );
    assert_eq!(
        run(&mut k, &format!("echo 5 > {}", enable_path("vfs:vfs_open"))),
        EINVAL
    );
    // A migration needs an idle CPU to steal a queued task: more tasks than
    // CPUs, a few rounds at most.
    for _ in 0..10 {
        run(&mut k, "calltree 2000 8");
        let n = run(&mut k, &format!("grep -c sched_migrate_task {T}/trace"));
        if n.trim() != "0" {
            break;
        }
    }
    for e in events {
        set(&mut k, e, false);
    }
    let lines = trace_lines(&mut k);

    // The shell (pid 1) blocks reading its input, and is woken by it.
    let switch = texts(&lines, "sched_switch");
    assert!(
        switch
            .iter()
            .any(|t| t
                .starts_with("prev_comm=sh prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=")),
        "{switch:?}"
    );
    assert!(switch
        .iter()
        .any(|t| t.contains("==> next_comm=sh next_pid=1 next_prio=120")));
    for name in ["sched_wakeup", "sched_waking"] {
        let t = texts(&lines, name);
        assert!(
            t.iter()
                .any(|t| t.starts_with("comm=sh pid=1 prio=120 target_cpu=")),
            "{name}: {t:?}"
        );
    }
    // calltree's tasks: forked by the shell, woken new, exited.
    let fork = texts(&lines, "sched_process_fork");
    let calltree: Vec<&str> = fork
        .iter()
        .filter_map(|t| t.strip_prefix("comm=sh pid=1 child_comm="))
        .filter(|t| t.starts_with("calltree"))
        .collect();
    assert!(calltree.len() >= 2, "{fork:?}");
    let child = calltree[0].split(" child_pid=").nth(1).unwrap();
    let new = texts(&lines, "sched_wakeup_new");
    assert!(
        new.iter()
            .any(|t| t.contains(&format!(" pid={child} prio=120 target_cpu="))),
        "{new:?}"
    );
    let exit = texts(&lines, "sched_process_exit");
    assert!(
        exit.iter()
            .any(|t| t.contains(&format!(" pid={child} prio=120"))),
        "{exit:?}"
    );
    let migrate = texts(&lines, "sched_migrate_task");
    assert!(
        migrate
            .iter()
            .any(|t| t.contains(" orig_cpu=") && t.contains(" dest_cpu=")),
        "no migration in 10 rounds of calltree 2000 8"
    );
    // Interrupts: the serial port (each typed command), the timer, the IPIs.
    assert!(texts(&lines, "irq_handler_entry").contains(&"irq=4 name=ttyS0"));
    assert!(texts(&lines, "irq_handler_exit").contains(&"irq=4 ret=handled"));
    assert!(texts(&lines, "local_timer_entry").contains(&"vector=32"));
    assert!(texts(&lines, "local_timer_exit").contains(&"vector=32"));
    assert!(texts(&lines, "call_function_entry").contains(&"vector=240"));
    assert!(texts(&lines, "call_function_exit").contains(&"vector=240"));
    assert!(texts(&lines, "reschedule_entry").contains(&"vector=241"));
    assert!(texts(&lines, "reschedule_exit").contains(&"vector=241"));
    // The interrupt events are in hardirq context (`h`).
    let timer = lines
        .iter()
        .find(|l| l.contains(": local_timer_entry: "))
        .unwrap();
    assert!(timer.contains(" d.h"), "{timer}");
    // The VFS and the shell.
    assert!(texts(&lines, "vfs_open").contains(&"filename=/nonexist flags=0x0 ret=-2"));
    assert!(texts(&lines, "shell_command_entry").contains(&"line=cat /nonexist"));
    let exits = texts(&lines, "shell_command_exit");
    assert!(
        exits.contains(&"ret=-22") && exits.contains(&"ret=0"),
        "{exits:?}"
    );

    // Disabled: the same workload records nothing.
    assert_eq!(run(&mut k, &format!("echo > {T}/trace")), "");
    assert!(run(&mut k, "work sleep 2").contains("0 errors"));
    assert!(run(&mut k, "calltree 1 2").starts_with("calltree: 2 tasks"));
    run(&mut k, "cat /nonexist");
    assert_eq!(trace_lines(&mut k), Vec::<String>::new());
}

/// kmalloc and kfree come from the heap with the allocating function as
/// call_site; the probes' own writes do not recurse.
#[test]
fn kmem_events() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    set(&mut k, "kmem:kmalloc", true);
    set(&mut k, "kmem:kfree", true);
    assert!(run(&mut k, "calltree 1 2").starts_with("calltree: 2 tasks"));
    set(&mut k, "kmem:kmalloc", false);
    set(&mut k, "kmem:kfree", false);
    let lines = trace_lines(&mut k);
    let kmalloc = texts(&lines, "kmalloc");
    let kfree = texts(&lines, "kfree");
    assert!(
        kmalloc.len() > 10 && kfree.len() > 10,
        "{} {}",
        kmalloc.len(),
        kfree.len()
    );
    // call_site=FUNC+OFF/SIZE ptr=... bytes_req=N bytes_alloc=M gfp_flags=GFP_KERNEL node=-1
    let mut ptrs = Vec::new();
    for t in &kmalloc {
        let f: Vec<&str> = t.split(' ').collect();
        assert!(f[0].starts_with("call_site=") && f[0].contains('+'), "{t}");
        assert!(f[1].starts_with("ptr="), "{t}");
        let req: u64 = f[2].strip_prefix("bytes_req=").unwrap().parse().unwrap();
        let alloc: u64 = f[3].strip_prefix("bytes_alloc=").unwrap().parse().unwrap();
        assert!(alloc >= req, "{t}");
        assert!(t.contains(" node=-1"), "{t}");
        assert!(
            t.contains("gfp_flags=GFP_KERNEL") || t.contains("gfp_flags=GFP_ATOMIC"),
            "{t}"
        );
        ptrs.push(f[1].to_string());
    }
    // What calltree's tasks allocated is freed: some kfree has a kmalloc's ptr.
    assert!(
        kfree
            .iter()
            .any(|t| ptrs.iter().any(|p| t.ends_with(&format!(" {p}")))),
        "{kfree:?}"
    );
    // The task stacks of calltree's tasks come from Task::new.
    assert!(
        kmalloc.iter().any(|t| t.contains("bytes_req=65536")),
        "{kmalloc:?}"
    );
}

/// The function tracer and events record into the same buffer, interleaved
/// by time: the shell's `sleep` command, then its switch away to sleep.
#[test]
fn function_tracer_and_events() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    let f = "kernel::shell::commands::sleep";
    assert_eq!(
        run(&mut k, &format!("echo {f} > {T}/set_ftrace_filter")),
        ""
    );
    assert_eq!(
        run(&mut k, &format!("echo function > {T}/current_tracer")),
        ""
    );
    set(&mut k, "sched:sched_switch", true);
    // Two sleeps: the first one's switches come before the second's call
    // (whether the shell switched between other commands depends on when
    // the console delivers the next line).
    assert_eq!(run(&mut k, "sleep 0.1"), "");
    assert_eq!(run(&mut k, "sleep 0.1"), "");
    set(&mut k, "sched:sched_switch", false);
    // (Changing the tracer would clear the buffer.)
    let lines = trace_lines(&mut k);
    assert_eq!(run(&mut k, &format!("echo nop > {T}/current_tracer")), "");
    let call = lines
        .iter()
        .rposition(|l| l.contains(&format!(": {f} <-")))
        .unwrap_or_else(|| panic!("no call of {f}: {lines:?}"));
    assert!(
        lines[call].trim_start().starts_with("sh-1 "),
        "{}",
        lines[call]
    );
    assert!(
        lines[call..].iter().any(|l| l
            .contains(": sched_switch: prev_comm=sh prev_pid=1 prev_prio=120 prev_state=S ==> ")),
        "{lines:?}"
    );
    assert!(
        lines[..call].iter().any(|l| l.contains(": sched_switch: ")),
        "{lines:?}"
    );
}

/// Probes registered and unregistered on one CPU while the three others
/// hit the tracepoint nonstop: no probe runs with data whose unregister
/// returned (the quiescence wait), nothing faults, and the key is off
/// after the last probe.
#[test]
fn tracepoint_register_under_load() {
    let mut k = Kernel::boot(&["--smp", "4"]);
    let r =
        clean(&k.run_with_timeout("tracepoint_stress 200", std::time::Duration::from_secs(600)));
    let words: Vec<&str> = r.split_whitespace().collect();
    assert_eq!(
        words[..5],
        ["tracepoint_stress:", "200", "rounds", "on", "4"],
        "{r}"
    );
    let hits: u64 = words[6].parse().unwrap_or_else(|_| panic!("{r}"));
    assert!(hits > 0, "{r}");
    assert!(r.ends_with(" hits, 0 errors, key off\n"), "{r}");
    assert_eq!(
        run(&mut k, "tracepoint_stress x"),
        "usage: tracepoint_stress [ROUNDS]\n"
    );
}

/// The `N jmp` of `jump_label_check` (which must find no bad site).
fn jmp_sites(k: &mut Kernel) -> usize {
    let check = run(k, "jump_label_check");
    assert!(check.contains(" 0 bad,"), "{check}");
    let before = check.split(" jmp,").next().unwrap();
    before
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{check}"))
}

/// Enabling an event turns exactly its tracepoint's sites into `jmp` (the
/// count is read from the ELF's `__jump_table`: the entries whose key is
/// the event's `__TRACEPOINT_KEY_NAME`), and disabling turns them back.
#[test]
fn enabling_an_event_patches_exactly_its_sites() {
    use build_tools::sorttable::jump_table;
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(tests::kernel_elf("mcount")).unwrap();
    let entries = jump_table(&data).unwrap().unwrap();
    let obj = object::File::parse(&*data).unwrap();
    let sites_of = |name: &str| -> usize {
        // The v0-mangled name ends with the identifier's length, `_` (it
        // starts with `_`) and the identifier.
        let ident = format!("__TRACEPOINT_KEY_{name}");
        let tag = format!("{}_{ident}", ident.len());
        let key = obj
            .symbols()
            .find(|s| s.name().is_ok_and(|n| n.ends_with(&tag)))
            .unwrap_or_else(|| panic!("no symbol {ident}"))
            .address();
        entries.iter().filter(|e| e.key == key).count()
    };
    let mut k = Kernel::boot(&["--smp", "2"]);
    let base = jmp_sites(&mut k);
    for event in [
        "sched:sched_switch",
        "sched:sched_wakeup",
        "irq_vectors:local_timer_entry",
        "kmem:kmalloc",
        "vfs:vfs_open",
    ] {
        let n = sites_of(event.split_once(':').unwrap().1);
        assert!(n >= 1, "{event}: no site in the ELF");
        set(&mut k, event, true);
        assert_eq!(jmp_sites(&mut k), base + n, "{event}: {n} sites");
        set(&mut k, event, false);
        assert_eq!(jmp_sites(&mut k), base, "{event} disabled");
    }
}
