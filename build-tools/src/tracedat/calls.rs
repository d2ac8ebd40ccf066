//! The calls a function_graph trace shows, rebuilt as a tree per task: what
//! the flame graph ([`super::flame`]) and the timeline
//! ([`super::chrome`]) are drawn from.
//!
//! function_graph writes a `funcgraph_entry` (function, depth) when a
//! function is called and a `funcgraph_exit` (function, depth, calltime,
//! rettime) when it returns (Linux: kernel/trace/trace_functions_graph.c).
//! The depth is the task's (`current->curr_ret_depth`), so the records are
//! paired task by task, in time order over all CPUs (a task may migrate):
//! an exit closes the task's open call of the same function and depth.
//! What a real trace adds, and what we do with it:
//!
//! - The trace begins in the middle of calls (the ring buffer overwrote
//!   their entries): such an exit still gives the function, its depth and
//!   both times, so it becomes a call whose children are the finished
//!   calls just before it that are deeper and started after it.
//! - The trace ends in the middle of calls (or an exit was lost): their
//!   end is unknown ([`Call::end`] is `None`); they keep their children.
//! - Interrupts: a call made in hard-interrupt context (the record's
//!   `common_flags` has TRACE_FLAG_HARDIRQ) from a task context that was
//!   not is where an interrupt came in, which function_graph's text output
//!   marks with `==========>` before the irq-entry function
//!   ([`Call::interrupt`]).
//!
//! The idle tasks all have pid 0, one per CPU, so a task is a pid and, for
//! pid 0, the CPU ([`TaskKey`]).

use std::collections::{BTreeMap, HashMap};

use tracer::entry::trace_flag::TRACE_FLAG_HARDIRQ;

use super::dat::{DatError, TraceDat};
use super::report::{cpu_records, event_formats, task_comms, EventFormat, Record, Symbols};

/// A task: its pid, and the CPU for pid 0 (each CPU has its own idle task).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskKey {
    pub pid: i32,
    pub idle_cpu: Option<usize>,
}

impl TaskKey {
    pub fn of(pid: i32, cpu: usize) -> TaskKey {
        TaskKey {
            pid,
            idle_cpu: (pid == 0).then_some(cpu),
        }
    }
}

/// One record of a function_graph trace, of one task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GraphEvent {
    Entry {
        func: String,
        depth: i32,
        ts: u64,
        cpu: usize,
        hardirq: bool,
    },
    Exit {
        func: String,
        depth: i32,
        calltime: u64,
        rettime: u64,
        cpu: usize,
        hardirq: bool,
    },
}

/// One call, with the calls it made in time order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub func: String,
    pub depth: i32,
    /// When it was called (ns): the exit's calltime, or the entry's time
    /// stamp when the exit is not in the trace.
    pub start: u64,
    /// When it returned; None when the trace holds no exit for it.
    pub end: Option<u64>,
    /// Whether the trace holds its entry (false: it began before the trace).
    pub entry_seen: bool,
    /// Made in hard-interrupt context.
    pub hardirq: bool,
    /// The CPU of its first record.
    pub cpu: usize,
    pub children: Vec<Call>,
}

impl Call {
    /// How long it ran, when known.
    pub fn duration(&self) -> Option<u64> {
        self.end.map(|e| e.saturating_sub(self.start))
    }

    /// Its own time: its duration minus its children's (the ones with a
    /// known duration). None when its duration is unknown.
    pub fn self_time(&self) -> Option<u64> {
        let children: u64 = self.children.iter().filter_map(Call::duration).sum();
        self.duration().map(|d| d.saturating_sub(children))
    }

    /// Whether this call is where an interrupt came in: it ran in
    /// hard-interrupt context and its caller (`parent_hardirq`, false for
    /// a task's outermost calls) did not.
    pub fn interrupt(&self, parent_hardirq: bool) -> bool {
        self.hardirq && !parent_hardirq
    }

    /// Number of calls in this subtree.
    pub fn count(&self) -> usize {
        1 + self.children.iter().map(Call::count).sum::<usize>()
    }
}

/// Pairs one task's records (in time order) into its calls. The result is
/// the task's outermost calls in time order.
pub fn build_calls(events: impl IntoIterator<Item = GraphEvent>) -> Vec<Call> {
    let mut roots: Vec<Call> = Vec::new();
    let mut open: Vec<Call> = Vec::new();
    // Closes the top open call (with `end`) into its parent or the roots.
    fn close(open: &mut Vec<Call>, roots: &mut Vec<Call>, end: Option<(u64, u64)>) {
        let mut c = open.pop().expect("an open call");
        if let Some((calltime, rettime)) = end {
            c.start = calltime;
            c.end = Some(rettime);
        }
        match open.last_mut() {
            Some(p) => p.children.push(c),
            None => roots.push(c),
        }
    }
    for ev in events {
        match ev {
            GraphEvent::Entry {
                func,
                depth,
                ts,
                cpu,
                hardirq,
            } => {
                // An open call as deep or deeper lost its exit.
                while open.last().is_some_and(|c| c.depth >= depth) {
                    close(&mut open, &mut roots, None);
                }
                open.push(Call {
                    func,
                    depth,
                    start: ts,
                    end: None,
                    entry_seen: true,
                    hardirq,
                    cpu,
                    children: Vec::new(),
                });
            }
            GraphEvent::Exit {
                func,
                depth,
                calltime,
                rettime,
                cpu,
                hardirq,
            } => {
                if let Some(i) = open
                    .iter()
                    .rposition(|c| c.depth == depth && c.func == func)
                {
                    // Calls opened above it lost their exits.
                    while open.len() > i + 1 {
                        close(&mut open, &mut roots, None);
                    }
                    close(&mut open, &mut roots, Some((calltime, rettime)));
                    continue;
                }
                // Entered before the trace began (or its entry was lost):
                // it adopts the finished calls before it that are deeper
                // and began after it.
                while open.last().is_some_and(|c| c.depth >= depth) {
                    close(&mut open, &mut roots, None);
                }
                let siblings = match open.last_mut() {
                    Some(p) => &mut p.children,
                    None => &mut roots,
                };
                let keep = siblings
                    .iter()
                    .rposition(|c| c.depth <= depth || c.start < calltime)
                    .map_or(0, |i| i + 1);
                let children = siblings.split_off(keep);
                siblings.push(Call {
                    func,
                    depth,
                    start: calltime,
                    end: Some(rettime),
                    entry_seen: false,
                    hardirq,
                    cpu,
                    children,
                });
            }
        }
    }
    while !open.is_empty() {
        close(&mut open, &mut roots, None);
    }
    roots
}

/// One function tracer call: `func <-parent`, `count` times (more than 1
/// for a `func_repeats` record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionEvent {
    pub func: String,
    pub parent: String,
    pub ts: u64,
    pub cpu: usize,
    pub count: u64,
}

/// The stack of each function tracer call of one task, rebuilt from the
/// `func <-parent` pairs the way trace-cmd's function plugin indents them
/// (libtraceevent plugin_function.c `add_and_get_index`): if the parent is
/// one of the functions on the current stack (the latest such), the call
/// goes right above it; otherwise the stack starts again as `parent;func`.
/// The function tracer records no returns, so this is a guess that is
/// right for a call tree traced whole and shallower where callers are not
/// traced. Returns (stack, count) per call, in time order.
pub fn function_stacks(events: &[FunctionEvent]) -> Vec<(Vec<String>, u64)> {
    let mut stack: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for e in events {
        match stack.iter().rposition(|f| *f == e.parent) {
            Some(i) => stack.truncate(i + 1),
            None => {
                stack.clear();
                stack.push(e.parent.clone());
            }
        }
        stack.push(e.func.clone());
        out.push((stack.clone(), e.count));
    }
    out
}

/// What a trace.dat holds for the pictures: the records of every CPU in
/// time order, decoded by their formats, and the task names.
pub struct Trace {
    pub nr_cpus: usize,
    pub records: Vec<Record>,
    pub formats: Vec<EventFormat>,
    pub syms: Symbols,
    /// pid -> comm (`saved_cmdlines`, then the sched events' names).
    pub comms: HashMap<i32, String>,
}

/// A record's common fields.
pub fn common_type(rec: &Record) -> Option<u16> {
    Some(u16::from_le_bytes([*rec.data.first()?, *rec.data.get(1)?]))
}
pub fn common_flags(rec: &Record) -> u8 {
    rec.data.get(2).copied().unwrap_or(0)
}
pub fn common_pid(rec: &Record) -> i32 {
    match rec.data.get(4..8) {
        Some(b) => i32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => -1,
    }
}

impl Trace {
    /// Reads `dat`'s formats, symbols, task names and records. A page
    /// that does not decode is an error.
    pub fn new(dat: &TraceDat) -> Result<Trace, DatError> {
        let formats = event_formats(dat)?;
        let comms = task_comms(dat);
        let mut records = Vec::new();
        for cpu in 0..dat.cpus.len() {
            records.extend(cpu_records(dat, cpu)?);
        }
        // Time order over all CPUs, the lowest CPU first on a tie (as
        // trace-cmd merges them); each CPU's records keep their order.
        records.sort_by_key(|r| (r.ts, r.cpu));
        Ok(Trace {
            nr_cpus: dat.cpus.len(),
            records,
            formats,
            syms: Symbols::parse(&String::from_utf8_lossy(&dat.kallsyms)),
            comms,
        })
    }

    /// The format of a record.
    pub fn format(&self, rec: &Record) -> Option<&EventFormat> {
        let ty = common_type(rec)?;
        self.formats.iter().find(|f| f.id == ty)
    }

    /// The format of `system:name`.
    pub fn format_named(&self, system: &str, name: &str) -> Option<&EventFormat> {
        self.formats
            .iter()
            .find(|f| f.system == system && f.name == name)
    }

    /// A function's name, or its address in hex.
    pub fn func_name(&self, addr: u64) -> String {
        match self.syms.lookup(addr) {
            Some((name, _)) => name.to_string(),
            None => format!("0x{addr:x}"),
        }
    }

    /// `comm-pid` as function_graph's funcgraph-proc column names a task
    /// (`<idle>-0` for the idle tasks, `<...>-pid` for one never named).
    pub fn task_name(&self, task: TaskKey) -> String {
        match (task.pid, self.comms.get(&task.pid)) {
            (0, _) => "<idle>-0".to_string(),
            (pid, Some(c)) => format!("{c}-{pid}"),
            (pid, None) => format!("<...>-{pid}"),
        }
    }

    /// Each task's function_graph records, in time order; empty if the
    /// trace has none.
    pub fn graph_events(&self) -> BTreeMap<TaskKey, Vec<GraphEvent>> {
        let mut out: BTreeMap<TaskKey, Vec<GraphEvent>> = BTreeMap::new();
        let entry = self.format_named("ftrace", "funcgraph_entry");
        let exit = self.format_named("ftrace", "funcgraph_exit");
        for rec in &self.records {
            let Some(ty) = common_type(rec) else {
                continue;
            };
            let task = TaskKey::of(common_pid(rec), rec.cpu);
            let hardirq = common_flags(rec) & TRACE_FLAG_HARDIRQ != 0;
            if let Some(f) = entry.filter(|f| f.id == ty) {
                let (Some(func), Some(depth)) =
                    (f.num(&rec.data, "func"), f.num(&rec.data, "depth"))
                else {
                    continue;
                };
                out.entry(task).or_default().push(GraphEvent::Entry {
                    func: self.func_name(func),
                    depth: depth as u32 as i32,
                    ts: rec.ts,
                    cpu: rec.cpu,
                    hardirq,
                });
            } else if let Some(f) = exit.filter(|f| f.id == ty) {
                let (Some(func), Some(depth), Some(calltime), Some(rettime)) = (
                    f.num(&rec.data, "func"),
                    f.num(&rec.data, "depth"),
                    f.num(&rec.data, "calltime"),
                    f.num(&rec.data, "rettime"),
                ) else {
                    continue;
                };
                out.entry(task).or_default().push(GraphEvent::Exit {
                    func: self.func_name(func),
                    depth: depth as u32 as i32,
                    calltime,
                    rettime,
                    cpu: rec.cpu,
                    hardirq,
                });
            }
        }
        out
    }

    /// Each task's calls (see [`build_calls`]).
    pub fn graph_calls(&self) -> BTreeMap<TaskKey, Vec<Call>> {
        self.graph_events()
            .into_iter()
            .map(|(task, evs)| (task, build_calls(evs)))
            .collect()
    }

    /// Each task's function tracer records (`function`, `func_repeats`),
    /// in time order; empty if the trace has none.
    pub fn function_events(&self) -> BTreeMap<TaskKey, Vec<FunctionEvent>> {
        let mut out: BTreeMap<TaskKey, Vec<FunctionEvent>> = BTreeMap::new();
        let function = self.format_named("ftrace", "function");
        let repeats = self.format_named("ftrace", "func_repeats");
        for rec in &self.records {
            let Some(ty) = common_type(rec) else {
                continue;
            };
            let (f, count) = if let Some(f) = function.filter(|f| f.id == ty) {
                (f, Some(1))
            } else if let Some(f) = repeats.filter(|f| f.id == ty) {
                (f, f.num(&rec.data, "count"))
            } else {
                continue;
            };
            let (Some(ip), Some(pip), Some(count)) =
                (f.num(&rec.data, "ip"), f.num(&rec.data, "parent_ip"), count)
            else {
                continue;
            };
            out.entry(TaskKey::of(common_pid(rec), rec.cpu))
                .or_default()
                .push(FunctionEvent {
                    func: self.func_name(ip),
                    parent: self.func_name(pip),
                    ts: rec.ts,
                    cpu: rec.cpu,
                    count,
                });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ent(func: &str, depth: i32, ts: u64) -> GraphEvent {
        GraphEvent::Entry {
            func: func.into(),
            depth,
            ts,
            cpu: 0,
            hardirq: false,
        }
    }
    fn ext(func: &str, depth: i32, calltime: u64, rettime: u64) -> GraphEvent {
        GraphEvent::Exit {
            func: func.into(),
            depth,
            calltime,
            rettime,
            cpu: 0,
            hardirq: false,
        }
    }
    fn shape(c: &Call) -> String {
        let kids: Vec<String> = c.children.iter().map(shape).collect();
        let end = c.end.map_or("?".to_string(), |e| e.to_string());
        if kids.is_empty() {
            format!("{}[{}-{end}]", c.func, c.start)
        } else {
            format!("{}[{}-{end}]({})", c.func, c.start, kids.join(" "))
        }
    }

    #[test]
    fn pairs_entries_and_exits() {
        let calls = build_calls([
            ent("a", 0, 10),
            ent("b", 1, 11),
            ext("b", 1, 11, 15),
            ent("c", 1, 16),
            ext("c", 1, 16, 18),
            ext("a", 0, 10, 20),
            ent("d", 0, 21),
        ]);
        let s: Vec<String> = calls.iter().map(shape).collect();
        assert_eq!(s, ["a[10-20](b[11-15] c[16-18])", "d[21-?]"]);
        assert_eq!(calls[0].self_time(), Some(4));
        assert_eq!(calls[1].self_time(), None);
    }

    #[test]
    fn exits_without_entries_adopt_the_calls_before_them() {
        // The trace begins inside a() { b() { ... and inside a second b.
        let calls = build_calls([
            ext("c", 2, 3, 4),
            ext("b", 1, 2, 5),
            ent("b", 1, 6),
            ext("b", 1, 6, 7),
            ext("a", 0, 1, 9),
        ]);
        let s: Vec<String> = calls.iter().map(shape).collect();
        assert_eq!(s, ["a[1-9](b[2-5](c[3-4]) b[6-7])"]);
        assert!(!calls[0].entry_seen && calls[0].children[1].entry_seen);
        // An exit does not adopt a call at its own depth or one that
        // began before it.
        let calls = build_calls([ext("x", 1, 1, 2), ext("y", 1, 3, 4), ext("z", 0, 2, 5)]);
        let s: Vec<String> = calls.iter().map(shape).collect();
        assert_eq!(s, ["x[1-2]", "z[2-5](y[3-4])"]);
    }

    #[test]
    fn lost_exits_leave_open_calls() {
        // b's exit is lost: a's exit closes it, unknown end.
        let calls = build_calls([
            ent("a", 0, 1),
            ent("b", 1, 2),
            ent("c", 2, 3),
            ext("c", 2, 3, 4),
            ext("a", 0, 1, 9),
        ]);
        let s: Vec<String> = calls.iter().map(shape).collect();
        assert_eq!(s, ["a[1-9](b[2-?](c[3-4]))"]);
        // An entry at a depth already open closes what is open there.
        let calls = build_calls([ent("a", 0, 1), ent("b", 0, 2), ext("b", 0, 2, 3)]);
        let s: Vec<String> = calls.iter().map(shape).collect();
        assert_eq!(s, ["a[1-?]", "b[2-3]"]);
    }

    #[test]
    fn function_stacks_follow_the_parents() {
        let ev = |func: &str, parent: &str| FunctionEvent {
            func: func.into(),
            parent: parent.into(),
            ts: 0,
            cpu: 0,
            count: 1,
        };
        let stacks = function_stacks(&[
            ev("root", "main"),
            ev("leaf", "root"),
            ev("chain", "root"),
            ev("chain", "chain"),
            ev("leaf", "chain"),
            ev("wide", "root"),
            ev("other", "elsewhere"),
        ]);
        let s: Vec<String> = stacks.iter().map(|(s, _)| s.join(";")).collect();
        assert_eq!(
            s,
            [
                "main;root",
                "main;root;leaf",
                "main;root;chain",
                "main;root;chain;chain",
                "main;root;chain;chain;leaf",
                "main;root;wide",
                "elsewhere;other",
            ]
        );
    }
}
