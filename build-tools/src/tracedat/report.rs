//! `ktrace report`: prints a trace.dat the way `trace-cmd report` (3.1.x)
//! does, so students can compare the two.
//!
//! What trace-cmd does, and we mirror (trace-cmd: tracecmd/trace-read.c
//! `trace_show_data`, lib/trace-cmd/trace-ftrace.c for function_graph,
//! libtraceevent: plugins/plugin_function.c, event-parse.c):
//! - records of all CPUs are merged by time stamp (the lowest CPU first on
//!   a tie);
//! - each line is `"%16s-%-5d [%03d] %5lu.%06lu: %s: "` (comm, pid, CPU,
//!   time in µs rounded to the nearest, event name) with the name padded
//!   to 20 characters, then the event's text, without a trailing newline;
//! - `function` goes through the function plugin: the callee, indented by
//!   3 spaces per level of a per-CPU stack of parents it has seen
//!   (`add_and_get_index`), and `<-- parent` with `-O parent=1`;
//! - `funcgraph_entry` whose very next record (over all CPUs) is the
//!   matching `funcgraph_exit` of the same task and function is folded
//!   into one `func();` line with its duration; other entries print
//!   `func() {`, exits `}` with the duration and its overhead mark;
//! - `print` uses its print fmt `"%ps: %s"`;
//! - `sched_switch`, `sched_wakeup` and `sched_wakeup_new` go through the
//!   sched plugin (libtraceevent: plugins/plugin_sched_switch.c), the kmem
//!   events get the kmem plugin's `(function+0xoff) ` prefix; trace events
//!   print their `print fmt` text, which is the kernel's own but for `%p`
//!   (`0x..`) and `%pS` (no `/0xsize`);
//! - `func_repeats` prints as `function` does, then
//!   `(count: N  last_ts: T)`;
//! - the wakeup tracers' `context_switch` and `wakeup` print their print
//!   fmt, `prev_pid:prio:state  ==> next_pid:prio:state [cpu]` (`==+`);
//! - a page whose `commit` carries RB_MISSED_EVENTS starts with
//!   `CPU:N [EVENTS DROPPED]` (or `[N EVENTS DROPPED]` with the count).
//!
//! Fields are found by name in the event's format text, as libtraceevent
//! does, so a file from a real Linux kernel (whose funcgraph_exit has extra
//! fields) prints too.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write;

use tracer::ring_buffer::{decode_page, decode_page_header, EventKind};

use super::dat::{DatError, TraceDat};

/// One field of an event format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub offset: usize,
    pub size: usize,
}

/// An event format (`name`, `ID`, fields) parsed from its format text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    pub system: String,
    pub name: String,
    pub id: u16,
    pub fields: Vec<Field>,
    /// The `print fmt:` line's text.
    pub print_fmt: String,
}

impl EventFormat {
    /// Parses the `name:`, `ID:` and `field:` lines of a format file.
    pub fn parse(system: &str, text: &str) -> Result<EventFormat, DatError> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        let mut print_fmt = String::new();
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("print fmt: ") {
                print_fmt = v.to_string();
            } else if let Some(v) = line.strip_prefix("name: ") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("ID: ") {
                id = v.trim().parse::<u16>().ok();
            } else if let Some(rest) = line.trim_start().strip_prefix("field:") {
                let mut decl = "";
                let mut offset = None;
                let mut size = None;
                for part in rest.split(';') {
                    let part = part.trim();
                    if let Some(v) = part.strip_prefix("offset:") {
                        offset = v.parse().ok();
                    } else if let Some(v) = part.strip_prefix("size:") {
                        size = v.parse().ok();
                    } else if decl.is_empty() {
                        decl = part;
                    }
                }
                // The name is the last word of the declaration, without [..].
                let word = decl.rsplit(' ').next().unwrap_or("");
                let fname = word.split('[').next().unwrap_or("").to_string();
                if let (Some(offset), Some(size)) = (offset, size) {
                    fields.push(Field {
                        name: fname,
                        offset,
                        size,
                    });
                }
            }
        }
        match (name, id) {
            (Some(name), Some(id)) => Ok(EventFormat {
                system: system.to_string(),
                name,
                id,
                fields,
                print_fmt,
            }),
            _ => Err(DatError(format!(
                "a {system} event format without name or ID"
            ))),
        }
    }

    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Reads an unsigned field (1, 2, 4 or 8 bytes, little endian).
    pub fn num(&self, data: &[u8], name: &str) -> Option<u64> {
        let f = self.field(name)?;
        let b = data.get(f.offset..f.offset + f.size)?;
        let mut a = [0u8; 8];
        if f.size > 8 {
            return None;
        }
        a[..f.size].copy_from_slice(b);
        Some(u64::from_le_bytes(a))
    }
}

/// `/proc/kallsyms` text, looked up as libtraceevent does: the symbol with
/// the largest address at or below, provided a later symbol exists (the
/// last one only marks the end).
pub struct Symbols {
    sorted: Vec<(u64, String)>,
}

impl Symbols {
    pub fn parse(text: &str) -> Symbols {
        let mut sorted = Vec::new();
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(addr), Some(ty), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if ty.eq_ignore_ascii_case("a") || name.starts_with('$') {
                continue;
            }
            if let Ok(a) = u64::from_str_radix(addr, 16) {
                sorted.push((a, name.to_string()));
            }
        }
        sorted.sort();
        Symbols { sorted }
    }

    /// (name, start) of the function containing `addr`.
    pub fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self.sorted.partition_point(|(a, _)| *a <= addr);
        if i == 0 || i >= self.sorted.len() {
            return None;
        }
        let (a, name) = &self.sorted[i - 1];
        Some((name.as_str(), *a))
    }
}

/// For the tracer's event printers (`%pS`-style symbols).
impl tracer::output::SymbolResolver for Symbols {
    /// (name, offset in it, size up to the next symbol).
    fn lookup(&self, addr: u64) -> Option<(&str, u64, u64)> {
        let i = self.sorted.partition_point(|(a, _)| *a <= addr);
        if i == 0 || i >= self.sorted.len() {
            return None;
        }
        let (a, name) = &self.sorted[i - 1];
        Some((name.as_str(), addr - a, self.sorted[i].0 - a))
    }
}

/// A record read from a CPU's pages.
#[derive(Clone, Debug)]
pub struct Record {
    pub cpu: usize,
    pub ts: u64,
    pub data: Vec<u8>,
    /// Events lost before this record: 0 none, -1 unknown count.
    pub missed: i64,
}

/// Every data record of `cpu`, oldest first.
pub fn cpu_records(dat: &TraceDat, cpu: usize) -> Result<Vec<Record>, DatError> {
    let mut out = Vec::new();
    for (i, page) in dat.pages(cpu).enumerate() {
        let hdr =
            decode_page_header(page).map_err(|e| DatError(format!("CPU {cpu} page {i}: {e}")))?;
        let mut missed = match (hdr.missed_events, hdr.missed_stored) {
            (true, Some(n)) => n as i64,
            (true, None) => -1,
            _ => 0,
        };
        for ev in decode_page(page).map_err(|e| DatError(format!("CPU {cpu} page {i}: {e}")))? {
            let ev = ev.map_err(|e| DatError(format!("CPU {cpu} page {i}: {e}")))?;
            if ev.kind == EventKind::Data {
                out.push(Record {
                    cpu,
                    ts: ev.ts,
                    data: ev.payload.to_vec(),
                    missed,
                });
                missed = 0;
            }
        }
    }
    Ok(out)
}

/// What to print.
#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    /// Only these CPUs (`--cpu`), all if empty.
    pub cpus: Vec<usize>,
    /// Only these events, by `name` or `system:name` (`-F`), all if empty.
    pub events: Vec<String>,
    /// `-O parent=1`: function events show `<-- parent`.
    pub parent: bool,
}

struct Ctx<'a> {
    syms: Symbols,
    comms: HashMap<i32, String>,
    by_id: HashMap<u16, &'a EventFormat>,
    func_stack: BTreeMap<usize, Vec<Option<String>>>,
}

/// Every event format `dat` carries: the ftrace formats, then each
/// system's.
pub(crate) fn event_formats(dat: &TraceDat) -> Result<Vec<EventFormat>, DatError> {
    let mut formats = Vec::new();
    for f in &dat.ftrace_formats {
        formats.push(EventFormat::parse("ftrace", &String::from_utf8_lossy(f))?);
    }
    for sys in &dat.event_systems {
        for f in &sys.formats {
            formats.push(EventFormat::parse(&sys.name, &String::from_utf8_lossy(f))?);
        }
    }
    Ok(formats)
}

/// The task names of `dat`'s cmdlines section (`PID COMM` lines), by pid.
pub(crate) fn task_comms(dat: &TraceDat) -> HashMap<i32, String> {
    let mut comms = HashMap::new();
    for line in String::from_utf8_lossy(&dat.cmdlines).lines() {
        if let Some((pid, comm)) = line.split_once(' ') {
            if let Ok(pid) = pid.trim().parse::<i32>() {
                comms.insert(pid, comm.to_string());
            }
        }
    }
    comms
}

/// The whole `trace-cmd report` text for `dat`.
pub fn report(dat: &TraceDat, opts: &ReportOptions) -> Result<String, DatError> {
    let formats = event_formats(dat)?;
    let comms = task_comms(dat);
    let mut ctx = Ctx {
        syms: Symbols::parse(&String::from_utf8_lossy(&dat.kallsyms)),
        comms,
        by_id: formats.iter().map(|f| (f.id, f)).collect(),
        func_stack: BTreeMap::new(),
    };
    let mut queues: Vec<VecDeque<Record>> = Vec::new();
    for cpu in 0..dat.cpus.len() {
        queues.push(cpu_records(dat, cpu)?.into());
    }
    let mut out = String::new();
    let _ = writeln!(out, "cpus={}", dat.cpus.len());
    loop {
        let allowed = |cpu: usize| opts.cpus.is_empty() || opts.cpus.contains(&cpu);
        let Some(cpu) = next_cpu(&queues, allowed) else {
            break;
        };
        let rec = queues[cpu].pop_front().expect("next_cpu found a record");
        let fmt = event_of(&ctx, &rec);
        if !opts.events.is_empty() {
            let keep = fmt.is_some_and(|f| {
                opts.events
                    .iter()
                    .any(|e| *e == f.name || *e == format!("{}:{}", f.system, f.name))
            });
            if !keep {
                continue;
            }
        }
        print_record(&mut ctx, &mut queues, &rec, opts, &mut out);
    }
    Ok(out)
}

/// The CPU whose next record is the oldest (lowest CPU on a tie).
fn next_cpu(queues: &[VecDeque<Record>], allowed: impl Fn(usize) -> bool) -> Option<usize> {
    let mut best: Option<(u64, usize)> = None;
    for (cpu, q) in queues.iter().enumerate() {
        if !allowed(cpu) {
            continue;
        }
        if let Some(r) = q.front() {
            if best.is_none_or(|(ts, _)| r.ts < ts) {
                best = Some((r.ts, cpu));
            }
        }
    }
    best.map(|(_, cpu)| cpu)
}

fn event_of<'a>(ctx: &Ctx<'a>, rec: &Record) -> Option<&'a EventFormat> {
    let ty = u16::from_le_bytes([*rec.data.first()?, *rec.data.get(1)?]);
    ctx.by_id.get(&ty).copied()
}

fn pid_of(rec: &Record) -> i32 {
    match rec.data.get(4..8) {
        Some(b) => i32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => -1,
    }
}

fn print_record(
    ctx: &mut Ctx<'_>,
    queues: &mut [VecDeque<Record>],
    rec: &Record,
    opts: &ReportOptions,
    out: &mut String,
) {
    if rec.missed > 0 {
        let _ = writeln!(out, "CPU:{} [{} EVENTS DROPPED]", rec.cpu, rec.missed);
    } else if rec.missed < 0 {
        let _ = writeln!(out, "CPU:{} [EVENTS DROPPED]", rec.cpu);
    }
    let pid = pid_of(rec);
    let comm = match pid {
        0 => "<idle>".to_string(),
        p => ctx
            .comms
            .get(&p)
            .cloned()
            .unwrap_or_else(|| "<...>".to_string()),
    };
    let us = (rec.ts + 500) / 1000;
    let mut line = format!(
        "{:>16}-{:<5} [{:03}] {:5}.{:06}:",
        comm,
        pid,
        rec.cpu,
        us / 1_000_000,
        us % 1_000_000
    );
    let Some(fmt) = event_of(ctx, rec) else {
        line.push_str(" [UNKNOWN EVENT]");
        out.push_str(&line);
        out.push('\n');
        return;
    };
    let _ = write!(line, " {}: ", fmt.name);
    for _ in fmt.name.len()..20 {
        line.push(' ');
    }
    let body = match (fmt.system.as_str(), fmt.name.as_str()) {
        ("ftrace", "function") => function_text(ctx, fmt, rec, opts.parent),
        ("ftrace", "funcgraph_entry") => graph_entry_text(ctx, fmt, rec, queues),
        ("ftrace", "funcgraph_exit") => graph_exit_text(fmt, rec),
        ("ftrace", "print") => print_text(ctx, fmt, rec),
        ("ftrace", "func_repeats") => func_repeats_text(ctx, fmt, rec, opts.parent),
        ("ftrace", "context_switch") => ctxwake_text(fmt, rec, "==>"),
        ("ftrace", "wakeup") => ctxwake_text(fmt, rec, "==+"),
        ("sched", "sched_switch") => sched_switch_text(ctx, fmt, rec),
        ("sched", "sched_wakeup" | "sched_wakeup_new") => sched_wakeup_text(ctx, fmt, rec),
        (
            "kmem",
            "kfree"
            | "kmalloc"
            | "kmalloc_node"
            | "kmem_cache_alloc"
            | "kmem_cache_alloc_node"
            | "kmem_cache_free",
        ) => event_text(ctx, fmt, rec).map(|t| call_site_prefix(ctx, fmt, rec) + &t),
        _ => event_text(ctx, fmt, rec),
    };
    match body {
        Some(b) => line.push_str(&b),
        None => line.push_str("[FAILED TO PARSE]"),
    }
    if line.ends_with('\n') {
        line.pop();
    }
    out.push_str(&line);
    out.push('\n');
}

fn func_name(ctx: &Ctx<'_>, addr: u64) -> Option<String> {
    ctx.syms.lookup(addr).map(|(n, _)| n.to_string())
}

/// plugin_function.c `function_handler` with `add_and_get_index`.
fn function_text(
    ctx: &mut Ctx<'_>,
    fmt: &EventFormat,
    rec: &Record,
    parent_opt: bool,
) -> Option<String> {
    let ip = fmt.num(&rec.data, "ip")?;
    let pip = fmt.num(&rec.data, "parent_ip")?;
    let func = func_name(ctx, ip);
    let parent = func_name(ctx, pip);
    let mut index = 0;
    if let Some(parent) = &parent {
        let stack = ctx.func_stack.entry(rec.cpu).or_default();
        let set = |stack: &mut Vec<Option<String>>, pos: usize, v: &Option<String>| {
            if let Some(v) = v {
                if stack.len() <= pos {
                    stack.resize(pos + 1, None);
                }
                stack[pos] = Some(v.clone());
            }
        };
        let found = stack
            .iter()
            .take_while(|s| s.is_some())
            .position(|s| s.as_deref() == Some(parent.as_str()));
        match found {
            Some(i) => {
                set(stack, i + 1, &func);
                index = i;
            }
            None => {
                set(stack, 0, &Some(parent.clone()));
                set(stack, 1, &func);
            }
        }
    }
    let mut s = " ".repeat(index * 3);
    match &func {
        Some(f) => s.push_str(f),
        None => {
            let _ = write!(s, "0x{ip:x}");
        }
    }
    if parent_opt {
        s.push_str(" <-- ");
        match &parent {
            Some(p) => s.push_str(p),
            None => {
                let _ = write!(s, "0x{pip:x}");
            }
        }
    }
    Some(s)
}

/// plugin_function.c `trace_func_repeat_handler`: the function plugin's
/// text for the folded call, then the count and the time of the last
/// repeat (the record's time minus the 48-bit delta), printed as trace-cmd
/// prints time stamps (its `tep_func_repeat_format`).
fn func_repeats_text(
    ctx: &mut Ctx<'_>,
    fmt: &EventFormat,
    rec: &Record,
    parent_opt: bool,
) -> Option<String> {
    let mut s = function_text(ctx, fmt, rec, parent_opt)?;
    let count = fmt.num(&rec.data, "count")?;
    let top = fmt.num(&rec.data, "top_delta_ts")?;
    let bottom = fmt.num(&rec.data, "bottom_delta_ts")?;
    let last = rec.ts.wrapping_sub(top << 32 | bottom);
    let us = (last + 500) / 1000;
    let _ = write!(
        s,
        " (count: {count}  last_ts: {:5}.{:06})",
        us / 1_000_000,
        us % 1_000_000
    );
    Some(s)
}

/// trace-ftrace.c `print_graph_overhead`.
fn overhead(duration: Option<u64>) -> &'static str {
    match duration {
        None => "  ",
        Some(d) if d > 1_000_000_000 => "$ ",
        Some(d) if d > 1_000_000 => "# ",
        Some(d) if d > 100_000 => "! ",
        Some(d) if d > 10_000 => "+ ",
        Some(_) => "  ",
    }
}

/// trace-ftrace.c `print_graph_duration`: µs with 3 decimals while the
/// number has fewer than 7 digits, padded, then `|  `. Unlike Linux's
/// `print_graph_duration` (trace_functions_graph.c), which cuts the
/// decimals so that the number keeps 7 digits in all (`12345.67 us`),
/// trace-cmd computes that limit from its output position, which leaves
/// all 3 decimals (`12345.678 us`); we print what trace-cmd prints.
fn duration_text(d: u64) -> String {
    let mut s = format!("{}", d / 1000);
    if s.len() < 7 {
        let _ = write!(s, ".{:03}", d % 1000);
    }
    let len = s.len();
    s.push_str(" us ");
    for _ in len..7 {
        s.push(' ');
    }
    s.push_str("|  ");
    s
}

fn graph_entry_text(
    ctx: &Ctx<'_>,
    fmt: &EventFormat,
    rec: &Record,
    queues: &mut [VecDeque<Record>],
) -> Option<String> {
    let func = fmt.num(&rec.data, "func")?;
    let depth = fmt.num(&rec.data, "depth")? as u32 as i32;
    let name = func_name(ctx, func);
    let pid = pid_of(rec);
    // get_return_for_leaf: the next record over all CPUs.
    let leaf = next_cpu(queues, |_| true).and_then(|cpu| {
        let next = queues[cpu].front()?;
        let nf = event_of(ctx, next)?;
        let is_ret = nf.system == "ftrace" && nf.name == "funcgraph_exit";
        if is_ret && pid_of(next) == pid && nf.num(&next.data, "func") == Some(func) {
            let calltime = nf.num(&next.data, "calltime")?;
            let rettime = nf.num(&next.data, "rettime")?;
            queues[cpu].pop_front();
            Some(rettime.wrapping_sub(calltime))
        } else {
            None
        }
    });
    let indent = " ".repeat((depth.max(0) as usize) * 2);
    let fname = name.unwrap_or_else(|| format!("{func:x}"));
    Some(match leaf {
        Some(d) => format!(
            "{}{}{}{}();",
            overhead(Some(d)),
            duration_text(d),
            indent,
            fname
        ),
        None => format!("{}           |  {}{}() {{", overhead(None), indent, fname),
    })
}

fn graph_exit_text(fmt: &EventFormat, rec: &Record) -> Option<String> {
    let calltime = fmt.num(&rec.data, "calltime")?;
    let rettime = fmt.num(&rec.data, "rettime")?;
    let depth = fmt.num(&rec.data, "depth")? as u32 as i32;
    let d = rettime.wrapping_sub(calltime);
    Some(format!(
        "{}{}{}}}",
        overhead(Some(d)),
        duration_text(d),
        " ".repeat((depth.max(0) as usize) * 2)
    ))
}

/// The `print` event's fmt: `"%ps: %s", ip, buf`.
fn print_text(ctx: &Ctx<'_>, fmt: &EventFormat, rec: &Record) -> Option<String> {
    let ip = fmt.num(&rec.data, "ip")?;
    let buf = fmt.field("buf")?;
    let bytes = rec.data.get(buf.offset..)?;
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let text = String::from_utf8_lossy(&bytes[..end]);
    let sym = func_name(ctx, ip).unwrap_or_else(|| format!("0x{ip:x}"));
    Some(format!("{sym}: {text}"))
}

/// A signed 4-byte (or smaller) field, as the sched plugin prints pids and
/// priorities.
fn int_field(fmt: &EventFormat, rec: &Record, name: &str) -> Option<i64> {
    let f = fmt.field(name)?;
    let v = fmt.num(&rec.data, name)?;
    Some(match f.size {
        1 => v as u8 as i8 as i64,
        2 => v as u16 as i16 as i64,
        4 => v as u32 as i32 as i64,
        _ => v as i64,
    })
}

/// A `char name[N]` field up to its NUL, and saves it as the name of
/// `pid` when the file did not name that pid (libtraceevent's sched
/// plugin `write_and_save_comm`: `tep_register_comm`, which keeps an
/// existing name), so later records of that task show it.
fn save_comm(ctx: &mut Ctx<'_>, fmt: &EventFormat, rec: &Record, name: &str, pid: i64) -> String {
    let Some(f) = fmt.field(name) else {
        return String::new();
    };
    let bytes = rec.data.get(f.offset..f.offset + f.size).unwrap_or(&[]);
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let comm = String::from_utf8_lossy(&bytes[..end]).into_owned();
    ctx.comms.entry(pid as i32).or_insert_with(|| comm.clone());
    comm
}

/// The sched plugin's `write_state`: the letters of the low 8 bits of
/// `prev_state` in its own order (`SDTtZXxW`, bit 0 first) joined by `|`,
/// or `R` when none is set (so a preempted task, 0x100, prints `R`).
fn sched_state(state: u64) -> String {
    let letters: Vec<String> = "SDTtZXxW"
        .chars()
        .enumerate()
        .filter(|(i, _)| state & (1 << i) != 0)
        .map(|(_, c)| c.to_string())
        .collect();
    if letters.is_empty() {
        "R".into()
    } else {
        letters.join("|")
    }
}

/// libtraceevent's sched plugin (plugin_sched_switch.c,
/// `sched_switch_handler`), which trace-cmd and KernelShark load:
/// `prev_comm:prev_pid [prio] STATE ==> next_comm:next_pid [prio]`.
fn sched_switch_text(ctx: &mut Ctx<'_>, fmt: &EventFormat, rec: &Record) -> Option<String> {
    let mut out = String::new();
    let prev = int_field(fmt, rec, "prev_pid")?;
    let _ = write!(
        out,
        "{}:{} ",
        save_comm(ctx, fmt, rec, "prev_comm", prev),
        prev
    );
    if let Some(p) = int_field(fmt, rec, "prev_prio") {
        let _ = write!(out, "[{p}] ");
    }
    if let Some(state) = fmt.num(&rec.data, "prev_state") {
        out.push_str(&sched_state(state));
    }
    out.push_str(" ==> ");
    let next = int_field(fmt, rec, "next_pid")?;
    let _ = write!(
        out,
        "{}:{}",
        save_comm(ctx, fmt, rec, "next_comm", next),
        next
    );
    if let Some(p) = int_field(fmt, rec, "next_prio") {
        let _ = write!(out, " [{p}]");
    }
    Some(out)
}

/// The sched plugin's `sched_wakeup_handler`: `comm:pid [prio]`, then
/// ` success=N` and ` CPU:NNN` for the fields the format has.
fn sched_wakeup_text(ctx: &mut Ctx<'_>, fmt: &EventFormat, rec: &Record) -> Option<String> {
    let mut out = String::new();
    let pid = int_field(fmt, rec, "pid")?;
    let _ = write!(out, "{}:{}", save_comm(ctx, fmt, rec, "comm", pid), pid);
    if let Some(p) = int_field(fmt, rec, "prio") {
        let _ = write!(out, " [{p}]");
    }
    if let Some(v) = int_field(fmt, rec, "success") {
        let _ = write!(out, " success={v}");
    }
    if let Some(v) = fmt.num(&rec.data, "target_cpu") {
        let _ = write!(out, " CPU:{:03}", v as u32);
    }
    Some(out)
}

/// Any other event this kernel declares: its `TP_printk` text, printed by
/// the same printer as the kernel's `trace` (tracer::trace_events), which
/// is what libtraceevent computes from the `print fmt` line (bare `%p`
/// pointers aside: see [`plain_pointers`]). An event the
/// tracer does not know (or a format that names it differently) is
/// `[FAILED TO PARSE]`.
/// The wakeup tracers' `context_switch` and `wakeup` records, by their
/// print fmt (`"%u:%u:%u  ==> %u:%u:%u [%03u]"`, `==+` for a wake-up), as
/// libtraceevent evaluates it: no plugin handles them.
fn ctxwake_text(fmt: &EventFormat, rec: &Record, delim: &str) -> Option<String> {
    let f = |name: &str| fmt.num(&rec.data, name);
    Some(format!(
        "{}:{}:{}  {delim} {}:{}:{} [{:03}]",
        f("prev_pid")?,
        f("prev_prio")?,
        f("prev_state")?,
        f("next_pid")?,
        f("next_prio")?,
        f("next_state")?,
        f("next_cpu")?
    ))
}

fn event_text(ctx: &Ctx<'_>, fmt: &EventFormat, rec: &Record) -> Option<String> {
    if fmt.field("__probe_ip").is_some() || fmt.field("__probe_func").is_some() {
        return probe_event_text(ctx, fmt, rec);
    }
    let call = tracer::trace_events::find_event(fmt.id)?;
    if call.system != fmt.system || call.name != fmt.name || rec.data.len() < call.size {
        return None;
    }
    let mut out = tracer::output::TraceSeq::new();
    (call.print)(&rec.data, &mut out, &ctx.syms);
    let text = String::from_utf8_lossy(out.as_bytes());
    Some(plain_pointers(&no_symbol_sizes(&text)))
}

/// A probe event (`kprobe_events`), by its print fmt as libtraceevent
/// evaluates it: `(%lx)` (or `(%lx <- %lx)`: `__probe_func`, then
/// `__probe_ret_ip`) in bare hex, then ` NAME=CONV` per argument:
/// `%u`/`%Lu`, `%d`/`%Ld`, `0x%x`/`0x%Lx`, `%pS` (`sym+0xoff`), a
/// `__data_loc` string in quotes, arrays as `{a,b}`.
fn probe_event_text(ctx: &Ctx<'_>, fmt: &EventFormat, rec: &Record) -> Option<String> {
    let body = fmt.print_fmt.strip_prefix('"')?;
    let body = &body[..body.find("\", ").or_else(|| body.rfind('"'))?];
    let (head, args) = if let Some(rest) = body.strip_prefix("(%lx <- %lx)") {
        let func = fmt.num(&rec.data, "__probe_func")?;
        let ret = fmt.num(&rec.data, "__probe_ret_ip")?;
        (format!("({func:x} <- {ret:x})"), rest)
    } else {
        let ip = fmt.num(&rec.data, "__probe_ip")?;
        (format!("({ip:x})"), body.strip_prefix("(%lx)")?)
    };
    let mut out = head;
    for seg in args.split(' ').filter(|s| !s.is_empty()) {
        let (name, conv) = seg.split_once('=')?;
        let f = fmt.field(name)?;
        let bytes = rec.data.get(f.offset..f.offset + f.size)?;
        out.push(' ');
        out.push_str(name);
        out.push('=');
        let one = |conv: &str, b: &[u8]| -> Option<String> {
            let mut a = [0u8; 8];
            a[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
            let v = u64::from_le_bytes(a);
            let bits = 8 * b.len() as u32;
            Some(match conv {
                "%u" | "%Lu" => v.to_string(),
                "%d" | "%Ld" => {
                    let sh = 64 - bits;
                    (((v << sh) as i64) >> sh).to_string()
                }
                "0x%x" | "0x%Lx" => format!("0x{v:x}"),
                "%pS" => match ctx.syms.lookup(v) {
                    Some((n, start)) => format!("{n}+0x{:x}", v - start),
                    None => format!("0x{v:x}"),
                },
                "\\\"%s\\\"" => {
                    let loc = v as u32;
                    let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
                    let s = rec.data.get(off..off + len).unwrap_or(&[]);
                    let s = &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())];
                    format!("\"{}\"", String::from_utf8_lossy(s))
                }
                _ => return None,
            })
        };
        if let Some(inner) = conv.strip_prefix('{').and_then(|c| c.strip_suffix('}')) {
            let convs: Vec<&str> = inner.split(',').collect();
            let n = convs.len();
            let each = f.size / n.max(1);
            let vals: Option<Vec<String>> = convs
                .iter()
                .enumerate()
                .map(|(i, c)| one(c, &bytes[i * each..(i + 1) * each]))
                .collect();
            out.push('{');
            out.push_str(&vals?.join(","));
            out.push('}');
        } else {
            out.push_str(&one(conv, bytes)?);
        }
    }
    Some(out)
}

/// libtraceevent's kmem plugin (plugins/plugin_kmem.c, `call_site_handler`)
/// puts `(function+0xoff) ` before the text of the kmem events when their
/// `call_site` resolves to a function.
fn call_site_prefix(ctx: &Ctx<'_>, fmt: &EventFormat, rec: &Record) -> String {
    let Some(site) = fmt.num(&rec.data, "call_site") else {
        return String::new();
    };
    match ctx.syms.lookup(site) {
        Some((name, start)) => format!("({name}+0x{:x}) ", (site - start) as i32),
        None => String::new(),
    }
}

/// Linux's `%pS` prints `function+0xoff/0xsize`, libtraceevent's
/// `function+0xoff`: drops each `/0xsize` that follows a `+0xoff`.
pub fn no_symbol_sizes(text: &str) -> String {
    let hex_run = |s: &str| s.bytes().take_while(u8::is_ascii_hexdigit).count();
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("+0x") {
        let n = hex_run(&rest[i + 3..]);
        out.push_str(&rest[..i + 3 + n]);
        rest = &rest[i + 3 + n..];
        if n > 0 {
            if let Some(after) = rest.strip_prefix("/0x") {
                let m = hex_run(after);
                if m > 0 {
                    rest = &after[m..];
                }
            }
        }
    }
    out.push_str(rest);
    out
}

/// Linux prints a bare `%p` as 16 hex digits (`ptr=0000000000000006`,
/// hashed unless the `hash-ptr` option is off), libtraceevent as `0x%lx`
/// (`ptr=0x6`): rewrites each `=` followed by exactly 16 hex digits the
/// libtraceevent way. It is the one place where `trace-cmd report -N` and
/// the kernel's `trace` differ for our events (real Linux too).
pub fn plain_pointers(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
        let b = rest.as_bytes();
        let hex = b.len() >= 16
            && b[..16].iter().all(u8::is_ascii_hexdigit)
            && b.get(16).is_none_or(|c| !c.is_ascii_alphanumeric());
        if hex {
            if let Ok(v) = u64::from_str_radix(&rest[..16], 16) {
                let _ = write!(out, "0x{v:x}");
                rest = &rest[16..];
            }
        }
    }
    out.push_str(rest);
    out
}
