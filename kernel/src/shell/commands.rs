//! The shell's commands. Messages follow busybox's wording (the shell of
//! most small Linux systems) so that what students see matches Linux.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::parse::parse_seconds;
use super::pipe::{CatFilter, Grep, Head, LineSplitter, Pattern, Sink, Tail, Wc};
use super::Output;
use crate::fs::{self, vfs, Errno, FileType, OpenFlags};

const HELP: &str = "\
Commands:
  help                     this text
  ls [-l] [PATH...]        list a directory
  cd [DIR]                 change directory (default /)
  pwd                      print the current directory
  cat [FILE...]            print files (or copy a pipe)
  echo [-n] [ARG...]       print arguments
  mkdir [-p] DIR...        make directories
  rmdir DIR...             remove empty directories
  rm [-r] [-f] FILE...     remove files
  touch FILE...            create empty files
  head [-n N] [FILE]       first N lines (default 10)
  tail [-n N] [FILE]       last N lines (default 10)
  grep [-v] [-c] PATTERN [FILE]  lines containing PATTERN (^ and $ anchor it)
  wc [-l] [-w] [-c] [FILE] count lines, words, bytes
  ps                       list tasks
  cpus                     list CPUs
  meminfo                  heap use (total, used, free)
  exec N<FILE, exec N<&-   keep FILE open as descriptor N (3-9) between commands, close it
  sleep SECONDS            sleep (fractions allowed)
  chrt -f PRIO CMD [ARG...]  run CMD as a SCHED_FIFO task of priority PRIO (1-99);
                           -o 0: as a normal task; chrt -p PID: show a task's policy
  wakeup_busy [-f PRIO] US wake a task (SCHED_FIFO at PRIO, or normal) from CPU 0
                           while a SCHED_FIFO task keeps its CPU busy US more us
  work files|sleep|compute N, work all SECONDS   workloads on every CPU
  poweroff                 stop the machine
  exit [N]                 stop the machine with exit code N
  crash [pagefault|ud2]    panic on purpose, or take a CPU exception (to see the reports)
  calltree [N]             run a small fixed call tree N times (function_graph demo)
  profnest [N]             run a parent and two children of known lengths N times (profiler demo)
  ringbuf markers|resize|rawdump|bigmarker|snapshot ...  ring buffer workloads (tests)
  latency irqsoff|preemptoff US   spin US microseconds with interrupts / preemption off
  trace_printk [-n] N      call trace_printk!() N times (-n: without a newline)
  ftrace_check             read every ftrace call site back and check it
  ftrace_stress [SECONDS [MIN]]  SMP stress of code patching for SECONDS (default
                           30) and at least MIN updates
  ftrace_int3_test         hit a site while it is being patched (int3 path)
  jump_label_check         read every static key site back and check it
  jump_label_test enable|disable|run|int3|unexpected|stress [N]  the static key
                           self-test (int3: hit its sites while they are being
                           patched; unexpected: a site that holds something
                           else; stress: run them on every CPU while N toggles)
  kprobe_test boundaries|register SYM[+OFF]|stress MS|kretprobe|ftrace|regs N|text SYM|stats
                           the kprobe core's self-test (boundaries: a probe at
                           every instruction of the target functions; register:
                           ok or the errno; stress: probes added and removed
                           while 4 CPUs hit them, MS milliseconds; kretprobe:
                           return values seen; ftrace: a probe on a call site;
                           text: the bytes)
  fail_function FUNC N     the next N calls of FUNC (register_ftrace_function,
                           ftrace_update) fail with ENOMEM (tests of error paths)
  bench [steps|read|kprobe|allcpu] cost of tracing per call/event/site (BENCHMARKS.md)
  trace-export             send the trace buffers to the host over COM2 (ktrace)
Operators: CMD | CMD ...,  > FILE,  >> FILE.  Ctrl-C interrupts a command.
Tracing: cd /tracing; cat README
";

/// Runs the first command of a pipeline.
pub fn run_command(argv: &[String], out: &mut Output) {
    let cmd = argv[0].as_str();
    let args = &argv[1..];
    match cmd {
        "help" => {
            out.emit_str(cmd, HELP);
        }
        "ls" => ls(args, out),
        "cd" => cd(args),
        "pwd" => {
            out.emit_str(cmd, &format!("{}\n", vfs::getcwd()));
        }
        "echo" => echo(args, out),
        "mkdir" => mkdir(args),
        "rmdir" => rmdir(args),
        "rm" => rm(args),
        "touch" => touch(args),
        "ps" => ps(out),
        "cpus" => cpus(out),
        "meminfo" => meminfo(out),
        "exec" => exec(args),
        "sleep" => sleep(args),
        "poweroff" => crate::arch::exit_qemu(0),
        "exit" => exit(args),
        // Panicking here, not in `crash` (a tail call), keeps run_command in
        // the backtrace, which the graph test checks.
        "crash" if args.is_empty() => panic!("crash command typed in the shell"),
        "crash" => crash(args),
        "work" => super::work::run(args, out),
        "chrt" => super::rt::chrt(args, out, run_command),
        "wakeup_busy" => super::rt::wakeup_busy(args, out),
        "calltree" => super::work::calltree(args, out),
        "profnest" => super::work::profnest(args, out),
        "ftrace_check" => {
            out.emit_str(cmd, &crate::trace::selftest::ftrace_check_text());
        }
        "ftrace_stress" => ftrace_stress(args, out),
        "fail_function" => fail_function(args),
        "ftrace_int3_test" => {
            let text =
                crate::trace::selftest::ftrace_int3_test(ftrace_targets::ftrace_selftest_target);
            out.emit_str(cmd, &text);
        }
        "jump_label_check" => {
            out.emit_str(cmd, &crate::jump_label::jump_label_check_text());
        }
        "jump_label_test" => {
            out.emit_str(cmd, &crate::test_static_keys::jump_label_test(args));
        }
        "kprobe_test" => {
            out.emit_str(cmd, &crate::test_kprobes::command(args));
        }
        "tracepoint_stress" => match args.first().map_or(Ok(1000), |n| n.parse::<u64>()) {
            Ok(n) if n > 0 => {
                out.emit_str(cmd, &crate::trace::tracepoint_stress::tracepoint_stress(n));
            }
            _ => println!("usage: tracepoint_stress [ROUNDS]"),
        },
        "trace-export" => crate::trace::export::command(args),
        "ringbuf" => super::ringbuf::command(args, out),
        "latency" => super::latency::command(args, out),
        "trace_printk" => super::printk::command(args, out),
        "bench" => {
            out.emit_str(cmd, &crate::trace::bench::run(args));
        }
        "cat" | "head" | "tail" | "grep" | "wc" => filter_first(argv, out),
        _ => println!("sh: {}: not found", cmd),
    }
}

/// Builds the filter for a pipeline stage after the first one.
pub fn make_filter(argv: &[String], next: Box<dyn Sink>) -> Result<Box<dyn Sink>, String> {
    let (filter, files) = parse_filter(argv, next)?;
    if !files.is_empty() {
        return Err(format!(
            "{}: file operands are only supported in the first command",
            argv[0]
        ));
    }
    Ok(filter)
}

/// Parses a filter command line into the filter and its file operands.
fn parse_filter(
    argv: &[String],
    next: Box<dyn Sink>,
) -> Result<(Box<dyn Sink>, Vec<String>), String> {
    let cmd = argv[0].as_str();
    let mut files = Vec::new();
    let mut i = 1;
    match cmd {
        "cat" => {
            files.extend(argv[1..].iter().cloned());
            Ok((Box::new(CatFilter(next)), files))
        }
        "head" | "tail" => {
            let mut n: usize = 10;
            while i < argv.len() {
                let a = argv[i].as_str();
                let count = if a == "-n" {
                    i += 1;
                    Some(argv.get(i).map(String::as_str).unwrap_or(""))
                } else if let Some(rest) = a.strip_prefix("-n") {
                    Some(rest)
                } else if a.len() > 1 && a.starts_with('-') {
                    Some(&a[1..])
                } else {
                    files.push(a.to_string());
                    None
                };
                if let Some(c) = count {
                    n = c
                        .parse()
                        .map_err(|_| format!("{}: invalid number '{}'", cmd, c))?;
                }
                i += 1;
            }
            let filter: Box<dyn Sink> = if cmd == "head" {
                Box::new(Head {
                    left: n,
                    lines: LineSplitter::default(),
                    next,
                })
            } else {
                Box::new(Tail {
                    n,
                    kept: VecDeque::new(),
                    last_unterminated: false,
                    lines: LineSplitter::default(),
                    next,
                })
            };
            Ok((filter, files))
        }
        "grep" => {
            let (mut invert, mut count_only) = (false, false);
            let mut pattern = None;
            while i < argv.len() {
                let a = argv[i].as_str();
                if pattern.is_none() && a.len() > 1 && a.starts_with('-') {
                    for f in a[1..].chars() {
                        match f {
                            'v' => invert = true,
                            'c' => count_only = true,
                            _ => return Err(format!("grep: invalid option -- '{}'", f)),
                        }
                    }
                } else if pattern.is_none() {
                    pattern = Some(a);
                } else {
                    files.push(a.to_string());
                }
                i += 1;
            }
            let pattern =
                pattern.ok_or_else(|| String::from("Usage: grep [-v] [-c] PATTERN [FILE]"))?;
            Ok((
                Box::new(Grep {
                    pattern: Pattern::new(pattern),
                    invert,
                    count_only,
                    count: 0,
                    lines: LineSplitter::default(),
                    next,
                }),
                files,
            ))
        }
        "wc" => {
            let (mut l, mut w, mut c) = (false, false, false);
            for a in &argv[1..] {
                if a.len() > 1 && a.starts_with('-') {
                    for f in a[1..].chars() {
                        match f {
                            'l' => l = true,
                            'w' => w = true,
                            'c' => c = true,
                            _ => return Err(format!("wc: invalid option -- '{}'", f)),
                        }
                    }
                } else {
                    files.push(a.clone());
                }
            }
            if !(l || w || c) {
                (l, w, c) = (true, true, true);
            }
            let mut wc = Wc::new(l, w, c, next);
            if files.len() == 1 {
                wc.label = Some(files[0].clone());
            } else if files.len() > 1 {
                return Err(String::from("wc: only one file operand is supported"));
            }
            Ok((Box::new(wc), files))
        }
        _ => Err(format!("sh: {}: cannot read from a pipe", cmd)),
    }
}

/// A filter as the first command: it reads its file operands.
fn filter_first(argv: &[String], out: &mut Output) {
    let cmd = argv[0].as_str();
    let next = core::mem::replace(&mut out.sink, Box::new(super::pipe::Console));
    let (filter, files) = match parse_filter(argv, next) {
        Ok(x) => x,
        Err(msg) => {
            println!("{}", msg);
            out.stopped = true;
            return;
        }
    };
    out.sink = filter;
    if files.is_empty() {
        if cmd == "cat" {
            return; // nothing to copy
        }
        println!("{}: no input: give a FILE or use it after a |", cmd);
        out.stopped = true;
        return;
    }
    for f in &files {
        if !copy_file(cmd, f, out) {
            break;
        }
    }
}

/// Copies a file into the output; false if the command must stop.
fn copy_file(cmd: &str, path: &str, out: &mut Output) -> bool {
    let mut file = match vfs::open(path, OpenFlags::O_RDONLY) {
        Ok(f) => f,
        Err(e) => {
            println!("{}: {}: {}", cmd, path, e);
            return true;
        }
    };
    let mut buf = [0u8; 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return true,
            Ok(n) => {
                if !out.emit(cmd, &buf[..n]) {
                    return false;
                }
            }
            Err(Errno::EINTR) => return false,
            Err(e) => {
                println!("{}: {}: {}", cmd, path, e);
                return true;
            }
        }
    }
}

fn mode_string(ft: FileType, mode: u16) -> String {
    let mut s = String::new();
    s.push(if ft == FileType::Directory { 'd' } else { '-' });
    for shift in [6, 3, 0] {
        let bits = (mode >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        s.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    s
}

fn ls_line(long: bool, name: &str, md: &fs::Metadata) -> String {
    if long {
        format!(
            "{} {:>4} root     root     {:>9} {}\n",
            mode_string(md.file_type, md.mode),
            md.nlink,
            md.size,
            name
        )
    } else {
        format!("{}\n", name)
    }
}

fn ls(args: &[String], out: &mut Output) {
    let mut long = false;
    let mut paths = Vec::new();
    for a in args {
        match a.strip_prefix('-') {
            Some(flags) if !flags.is_empty() => {
                for f in flags.chars() {
                    match f {
                        'l' => long = true,
                        'a' | '1' => {} // no hidden files; one per line anyway
                        _ => {
                            println!("ls: invalid option -- '{}'", f);
                            return;
                        }
                    }
                }
            }
            _ => paths.push(a.clone()),
        }
    }
    if paths.is_empty() {
        paths.push(String::from("."));
    }
    let many = paths.len() > 1;
    for (i, p) in paths.iter().enumerate() {
        let md = match vfs::stat(p) {
            Ok(md) => md,
            Err(e) => {
                println!("ls: {}: {}", p, e);
                continue;
            }
        };
        if md.file_type != FileType::Directory {
            if !out.emit_str("ls", &ls_line(long, p, &md)) {
                return;
            }
            continue;
        }
        let entries = match vfs::readdir(p) {
            Ok(e) => e,
            Err(e) => {
                println!("ls: {}: {}", p, e);
                continue;
            }
        };
        let mut text = String::new();
        if many {
            if i > 0 {
                text.push('\n');
            }
            text.push_str(&format!("{}:\n", p));
        }
        for e in entries {
            let line = if long {
                let child = format!("{}/{}", p.trim_end_matches('/'), e.name);
                match vfs::stat(&child) {
                    Ok(md) => ls_line(true, &e.name, &md),
                    Err(_) => continue, // removed meanwhile
                }
            } else {
                ls_line(
                    false,
                    &e.name,
                    &fs::Metadata {
                        file_type: e.file_type,
                        mode: 0,
                        size: 0,
                        nlink: 0,
                    },
                )
            };
            text.push_str(&line);
        }
        if !out.emit_str("ls", &text) {
            return;
        }
    }
}

fn cd(args: &[String]) {
    let dir = args.first().map(String::as_str).unwrap_or("/");
    if let Err(e) = vfs::chdir(dir) {
        println!("sh: cd: can't cd to {}: {}", dir, e);
    }
}

fn echo(args: &[String], out: &mut Output) {
    let mut newline = true;
    let mut args = args;
    while let Some(first) = args.first() {
        if first == "-n" {
            newline = false;
            args = &args[1..];
        } else {
            break;
        }
    }
    let mut text = args.join(" ");
    if newline {
        text.push('\n');
    }
    out.emit_str("echo", &text);
}

fn mkdir(args: &[String]) {
    let parents = args.iter().any(|a| a == "-p");
    for d in args.iter().filter(|a| *a != "-p") {
        let r = if parents { mkdir_p(d) } else { vfs::mkdir(d) };
        if let Err(e) = r {
            println!("mkdir: can't create directory '{}': {}", d, e);
        }
    }
}

fn mkdir_p(d: &str) -> Result<(), Errno> {
    let parts = vfs::absolute(d)?;
    let mut path = String::new();
    for p in parts {
        path.push('/');
        path.push_str(&p);
        match vfs::mkdir(&path) {
            Ok(()) => {}
            Err(Errno::EEXIST) if vfs::stat(&path)?.file_type == FileType::Directory => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn rmdir(args: &[String]) {
    for d in args {
        if let Err(e) = vfs::rmdir(d) {
            println!("rmdir: '{}': {}", d, e);
        }
    }
}

fn rm(args: &[String]) {
    let (mut recursive, mut force) = (false, false);
    let mut files = Vec::new();
    for a in args {
        match a.as_str() {
            "-r" | "-R" => recursive = true,
            "-f" => force = true,
            "-rf" | "-fr" => (recursive, force) = (true, true),
            _ => files.push(a.as_str()),
        }
    }
    for f in files {
        let r = if recursive { rm_r(f) } else { vfs::unlink(f) };
        match r {
            Ok(()) => {}
            Err(Errno::ENOENT) if force => {}
            Err(e) => println!("rm: can't remove '{}': {}", f, e),
        }
    }
}

fn rm_r(path: &str) -> Result<(), Errno> {
    if vfs::stat(path)?.file_type == FileType::Directory {
        for e in vfs::readdir(path)? {
            rm_r(&format!("{}/{}", path.trim_end_matches('/'), e.name))?;
        }
        vfs::rmdir(path)
    } else {
        vfs::unlink(path)
    }
}

fn touch(args: &[String]) {
    for f in args {
        if let Err(e) = vfs::open(f, OpenFlags::O_WRONLY | OpenFlags::O_CREAT) {
            println!("touch: {}: {}", f, e);
        }
    }
}

fn ps(out: &mut Output) {
    let mut text = String::from("  PID CPU STATE    COMMAND\n");
    for t in crate::sched::tasks() {
        text.push_str(&format!(
            "{:>5} {:>3} {:<8} {}\n",
            t.pid, t.cpu, t.state, t.comm
        ));
    }
    out.emit_str("ps", &text);
}

/// Files the shell keeps open between commands (`exec 3<FILE`), by
/// descriptor number.
static SHELL_FDS: spin::Mutex<alloc::collections::BTreeMap<u32, vfs::File>> =
    spin::Mutex::new(alloc::collections::BTreeMap::new());

/// `exec N<FILE` opens FILE for reading and keeps it open as descriptor N
/// (3 to 9) until `exec N<&-` closes it, as sh's `exec` redirections do;
/// e.g. to hold `trace_pipe` open while another command runs. The other
/// forms of `exec` are not supported.
fn exec(args: &[String]) {
    let [arg] = args else {
        println!("sh: exec: usage: exec N<FILE | exec N<&-");
        return;
    };
    let Some((fd, target)) = arg.split_once('<') else {
        println!("sh: exec: usage: exec N<FILE | exec N<&-");
        return;
    };
    let Some(fd) = fd.parse::<u32>().ok().filter(|n| (3..=9).contains(n)) else {
        println!("sh: exec: {fd}: bad file descriptor number");
        return;
    };
    if target == "&-" {
        // Taken out of the table first: closing may block or print.
        let file = SHELL_FDS.lock().remove(&fd);
        if let Some(mut file) = file {
            if let Err(e) = file.close() {
                println!("sh: exec: close: {e}");
            }
        }
        return;
    }
    match vfs::open(target, OpenFlags::O_RDONLY) {
        Ok(file) => {
            let old = SHELL_FDS.lock().insert(fd, file);
            if let Some(mut old) = old {
                let _ = old.close();
            }
        }
        Err(e) => println!("sh: can't open '{target}': {e}"),
    }
}

/// Heap use, in /proc/meminfo's layout (this kernel's memory is its heap:
/// ring buffers, instances, tasks): total, used and free in kB, and the
/// exact bytes in use, which the instance tests compare before and after.
fn meminfo(out: &mut Output) {
    let (used, free) = crate::mm::heap::usage();
    let text = format!(
        "HeapTotal:      {:8} kB\nHeapUsed:       {:8} kB\nHeapFree:       {:8} kB\nHeapUsedBytes:  {:8}\n",
        (used + free) >> 10,
        used >> 10,
        free >> 10,
        used
    );
    out.emit_str("meminfo", &text);
}

fn cpus(out: &mut Output) {
    let mut text = String::new();
    for cpu in 0..crate::arch::nr_cpus() {
        text.push_str(&format!(
            "cpu{} apic {} online\n",
            cpu,
            crate::arch::apic_id(cpu)
        ));
    }
    out.emit_str("cpus", &text);
}

/// Sleeps `ns`, waking every 10 ms to notice Ctrl-C. Returns false if
/// interrupted.
pub fn sleep_interruptible(ns: u64) -> bool {
    let deadline = crate::time::now_ns().saturating_add(ns);
    loop {
        if crate::sched::signal_pending() {
            return false;
        }
        let now = crate::time::now_ns();
        if now >= deadline {
            return true;
        }
        crate::sched::sleep_ns((deadline - now).min(10_000_000));
    }
}

fn sleep(args: &[String]) {
    let Some(arg) = args.first() else {
        println!("Usage: sleep SECONDS");
        return;
    };
    match parse_seconds(arg) {
        Some(ns) => {
            sleep_interruptible(ns);
        }
        None => println!("sleep: invalid number '{}'", arg),
    }
}

fn ftrace_stress(args: &[String], out: &mut Output) {
    let ns = match args.first() {
        None => Some(30_000_000_000),
        Some(a) => parse_seconds(a),
    };
    let min_updates = match args.get(1) {
        None => Some(0),
        Some(a) => a.parse::<u64>().ok(),
    };
    match (ns, min_updates) {
        (Some(ns), Some(min_updates)) => {
            let text = crate::trace::selftest::ftrace_stress(
                ns,
                min_updates,
                ftrace_targets::ftrace_selftest_target,
            );
            out.emit_str("ftrace_stress", &text);
        }
        (None, _) => println!("ftrace_stress: invalid number '{}'", args[0]),
        (_, None) => println!("ftrace_stress: invalid number '{}'", args[1]),
    }
}

/// Functions the ftrace self-tests trace (Linux: trace_selftest_dynamic.c,
/// the one file of kernel/trace/ built with -pg). They live here because
/// kernel/notrace.list keeps all of `kernel::trace` untraced.
mod ftrace_targets {
    /// The traced function of `ftrace_stress` and `ftrace_int3_test`.
    #[inline(never)]
    pub fn ftrace_selftest_target(x: u64) -> u64 {
        crate::trace::selftest::ftrace_selftest_formula(core::hint::black_box(x))
    }
}

fn exit(args: &[String]) {
    let code = match args.first() {
        None => 0,
        Some(a) => match a.parse::<u32>() {
            Ok(n) => n,
            Err(_) => {
                println!("sh: exit: Illegal number: {}", a);
                return;
            }
        },
    };
    crate::arch::exit_qemu(code)
}

/// `crash`: a Rust panic, or with an argument a real CPU exception, so that a
/// student (and the tests) can see each kind of report.
/// `fail_function FUNC N`: fault injection for the error paths of code
/// patching (see `trace::ftrace::fail_function`).
fn fail_function(args: &[String]) {
    let (Some(func), Some(n)) = (args.first(), args.get(1)) else {
        println!("Usage: fail_function register_ftrace_function|ftrace_update N");
        return;
    };
    let Ok(times) = n.parse::<u32>() else {
        println!("fail_function: invalid number '{}'", n);
        return;
    };
    if crate::trace::ftrace::fail_function(func, times).is_err() {
        println!("fail_function: {}: no such injection point", func);
    }
}

fn crash(args: &[String]) {
    match args.first().map(|s| s.as_str()) {
        None => {}
        Some("pagefault") => {
            let v = crate::arch::traps::crash_page_fault();
            println!("crash: read {v:#x}?");
        }
        Some("ud2") => crate::arch::traps::crash_invalid_opcode(),
        Some(other) => println!("crash: unknown kind '{other}' (pagefault or ud2)"),
    }
}
