//! A trace as a timeline in the Chrome trace-event format (the JSON that
//! `chrome://tracing` and the Perfetto UI open; its reference is Google's
//! "Trace Event Format" document).
//!
//! The file is the format's JSON object form, `{"traceEvents": [...],
//! "displayTimeUnit": "ns"}`. Every event has `ph` (its phase), `ts` (its
//! time in µs, fractional: trace times are in ns), `pid` and `tid`, which
//! pick its track. Two processes hold the tracks:
//!
//! - pid 1, "CPUs": one thread per CPU (tid = the CPU number). What ran on
//!   the CPU: each stretch of consecutive records of one task is a
//!   complete event (`ph: "X"`, `dur` in µs) named after the task. Every
//!   event that is not a function or function_graph record
//!   (`sched_switch`, `sched_wakeup`, `print`, ...) is an instant event
//!   (`ph: "i"`, `s: "t"`: drawn on its thread) on its CPU's track, named
//!   after the event, with its fields as `args`.
//! - pid 2, "tasks": one thread per task (tid = the CPU count + the
//!   task's index, so that no two tracks share a tid; the thread's name
//!   is the task's `comm-pid`). Each function_graph call is one complete
//!   event named after the function, with its duration; calls nest by
//!   time on their task's track as they nested in the program. A call
//!   whose return is not in the trace ends, on the timeline, where the
//!   last thing known inside it ends (or where it began), with
//!   `args.returned: false`, so that the nesting stays right (a begin
//!   event without its end would swallow the calls after it). Calls in
//!   hard-interrupt context have category `irq`,
//!   the others `function`. A function tracer record is an instant event
//!   on its task's track.
//!
//! Metadata events (`ph: "M"`) name the processes and threads
//! (`process_name`, `thread_name`) and order them (`process_sort_index`,
//! `thread_sort_index`).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::calls::{common_pid, common_type, Call, FunctionEvent, TaskKey, Trace};
use super::report::{EventFormat, Record};

/// The pid of the CPUs' tracks.
pub const CPUS_PID: u64 = 1;
/// The pid of the tasks' tracks.
pub const TASKS_PID: u64 = 2;

/// ns -> the format's µs.
fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The events of a trace-event file, built track by track.
pub struct ChromeTrace {
    nr_cpus: usize,
    events: Vec<Value>,
    tasks: BTreeMap<TaskKey, (u64, String)>,
}

impl ChromeTrace {
    pub fn new(nr_cpus: usize) -> ChromeTrace {
        ChromeTrace {
            nr_cpus,
            events: Vec::new(),
            tasks: BTreeMap::new(),
        }
    }

    /// The tid of `task`'s track (named `name` the first time).
    pub fn task_tid(&mut self, task: TaskKey, name: &str) -> u64 {
        let next = (self.nr_cpus + self.tasks.len()) as u64;
        self.tasks
            .entry(task)
            .or_insert_with(|| (next, name.to_string()))
            .0
    }

    /// One task's calls (outermost first), with their children.
    pub fn add_calls(&mut self, task: TaskKey, name: &str, calls: &[Call]) {
        let tid = self.task_tid(task, name);
        fn walk(c: &Call, tid: u64, out: &mut Vec<Value>) {
            let cat = if c.hardirq { "irq" } else { "function" };
            let mut ev = json!({
                "name": c.func,
                "cat": cat,
                "ts": us(c.start),
                "pid": TASKS_PID,
                "tid": tid,
                "args": { "depth": c.depth, "cpu": c.cpu },
            });
            ev["ph"] = "X".into();
            let end = match c.end {
                Some(end) => end,
                None => {
                    ev["args"]["returned"] = false.into();
                    known_end(c)
                }
            };
            ev["dur"] = us(end.saturating_sub(c.start)).into();
            out.push(ev);
            for child in &c.children {
                walk(child, tid, out);
            }
        }
        for c in calls {
            walk(c, tid, &mut self.events);
        }
    }

    /// One function tracer record, on its task's track.
    pub fn add_function(&mut self, task: TaskKey, name: &str, e: &FunctionEvent) {
        let tid = self.task_tid(task, name);
        self.events.push(json!({
            "name": e.func,
            "cat": "function",
            "ph": "i",
            "s": "t",
            "ts": us(e.ts),
            "pid": TASKS_PID,
            "tid": tid,
            "args": { "parent": e.parent, "count": e.count, "cpu": e.cpu },
        }));
    }

    /// `task` ran on `cpu` from `start` to `end` (ns).
    pub fn add_cpu_slice(&mut self, cpu: usize, task_name: &str, start: u64, end: u64) {
        self.events.push(json!({
            "name": task_name,
            "cat": "task",
            "ph": "X",
            "ts": us(start),
            "dur": us(end.saturating_sub(start)),
            "pid": CPUS_PID,
            "tid": cpu,
        }));
    }

    /// An event at `ts` on `cpu`'s track.
    pub fn add_instant(&mut self, cpu: usize, name: &str, cat: &str, ts: u64, args: Value) {
        self.events.push(json!({
            "name": name,
            "cat": cat,
            "ph": "i",
            "s": "t",
            "ts": us(ts),
            "pid": CPUS_PID,
            "tid": cpu,
            "args": args,
        }));
    }

    /// The whole file: metadata first, then the events.
    pub fn into_json(self) -> Value {
        let meta = |name: &str, pid: u64, tid: Option<u64>, args: Value| {
            let mut v = json!({ "name": name, "ph": "M", "pid": pid, "args": args });
            if let Some(t) = tid {
                v["tid"] = t.into();
            }
            v
        };
        let mut all = vec![
            meta("process_name", CPUS_PID, None, json!({ "name": "CPUs" })),
            meta(
                "process_sort_index",
                CPUS_PID,
                None,
                json!({ "sort_index": 0 }),
            ),
            meta("process_name", TASKS_PID, None, json!({ "name": "tasks" })),
            meta(
                "process_sort_index",
                TASKS_PID,
                None,
                json!({ "sort_index": 1 }),
            ),
        ];
        for cpu in 0..self.nr_cpus as u64 {
            let name = format!("CPU {cpu}");
            all.push(meta(
                "thread_name",
                CPUS_PID,
                Some(cpu),
                json!({ "name": name }),
            ));
            all.push(meta(
                "thread_sort_index",
                CPUS_PID,
                Some(cpu),
                json!({ "sort_index": cpu }),
            ));
        }
        for (tid, name) in self.tasks.values() {
            all.push(meta(
                "thread_name",
                TASKS_PID,
                Some(*tid),
                json!({ "name": name }),
            ));
            all.push(meta(
                "thread_sort_index",
                TASKS_PID,
                Some(*tid),
                json!({ "sort_index": tid }),
            ));
        }
        all.extend(self.events);
        json!({ "traceEvents": all, "displayTimeUnit": "ns" })
    }
}

/// The latest time known inside a call: its end, else its last child's.
fn known_end(c: &Call) -> u64 {
    c.end
        .or_else(|| c.children.last().map(known_end))
        .unwrap_or(c.start)
        .max(c.start)
}

/// An event's fields (but the common ones) as JSON: numbers for 1, 2, 4
/// and 8-byte fields, text up to the NUL for the others (`char comm[16]`).
pub fn field_args(fmt: &EventFormat, data: &[u8]) -> Value {
    let mut m = Map::new();
    for f in fmt.fields.iter().filter(|f| !f.name.starts_with("common_")) {
        let v = if matches!(f.size, 1 | 2 | 4 | 8) {
            match fmt.num(data, &f.name) {
                Some(n) => Value::from(n),
                None => continue,
            }
        } else {
            let Some(b) = data.get(f.offset..f.offset + f.size) else {
                continue;
            };
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            Value::from(String::from_utf8_lossy(&b[..end]).into_owned())
        };
        m.insert(f.name.clone(), v);
    }
    Value::Object(m)
}

/// The timeline of a trace (see the module documentation).
pub fn chrome_trace(trace: &Trace) -> Value {
    let mut c = ChromeTrace::new(trace.nr_cpus);
    let mut names = trace.comms.clone();
    // The sched events name tasks the saved cmdlines may not have.
    for rec in &trace.records {
        let Some(f) = trace.format(rec) else { continue };
        if f.system != "sched" {
            continue;
        }
        for (pid, comm) in [
            ("prev_pid", "prev_comm"),
            ("next_pid", "next_comm"),
            ("pid", "comm"),
        ] {
            if let (Some(p), Some(Value::String(s))) = (
                f.num(&rec.data, pid),
                field_args(f, &rec.data).get(comm).cloned(),
            ) {
                names.entry(p as u32 as i32).or_insert(s);
            }
        }
    }
    let name_of = |task: TaskKey| -> String {
        match (task.pid, names.get(&task.pid), task.idle_cpu) {
            (0, _, Some(cpu)) => format!("<idle>-0/{cpu}"),
            (pid, Some(c), _) => format!("{c}-{pid}"),
            (pid, None, _) => format!("<...>-{pid}"),
        }
    };
    // What ran on each CPU: runs of one task's records.
    let mut run: Vec<Option<(TaskKey, u64, u64)>> = vec![None; trace.nr_cpus];
    let flush = |c: &mut ChromeTrace, cpu: usize, r: Option<(TaskKey, u64, u64)>| {
        if let Some((task, start, end)) = r {
            c.add_cpu_slice(cpu, &name_of(task), start, end);
        }
    };
    for rec in &trace.records {
        let task = TaskKey::of(common_pid(rec), rec.cpu);
        let Some(slot) = run.get_mut(rec.cpu) else {
            continue;
        };
        match slot {
            Some((t, _, end)) if *t == task => *end = rec.ts,
            _ => {
                let prev = slot.replace((task, rec.ts, rec.ts));
                flush(&mut c, rec.cpu, prev);
            }
        }
        if let Some(f) = trace.format(rec) {
            let skip = f.system == "ftrace"
                && matches!(
                    f.name.as_str(),
                    "function" | "func_repeats" | "funcgraph_entry" | "funcgraph_exit"
                );
            if !skip {
                instant(&mut c, f, rec);
            }
        } else if common_type(rec).is_some() {
            c.add_instant(rec.cpu, "[unknown event]", "unknown", rec.ts, json!({}));
        }
    }
    for (cpu, r) in run.into_iter().enumerate() {
        flush(&mut c, cpu, r);
    }
    for (task, calls) in trace.graph_calls() {
        c.add_calls(task, &name_of(task), &calls);
    }
    for (task, evs) in trace.function_events() {
        let name = name_of(task);
        for e in &evs {
            c.add_function(task, &name, e);
        }
    }
    c.into_json()
}

fn instant(c: &mut ChromeTrace, f: &EventFormat, rec: &Record) {
    let mut args = field_args(f, &rec.data);
    args["common_pid"] = common_pid(rec).into();
    c.add_instant(rec.cpu, &f.name, &f.system, rec.ts, args);
}

#[cfg(test)]
mod tests {
    use super::super::calls::{build_calls, GraphEvent};
    use super::*;

    #[test]
    fn calls_become_complete_events_on_their_task_track() {
        let e = |func: &str, depth, ts| GraphEvent::Entry {
            func: func.into(),
            depth,
            ts,
            cpu: 1,
            hardirq: false,
        };
        let x = |func: &str, depth, calltime, rettime| GraphEvent::Exit {
            func: func.into(),
            depth,
            calltime,
            rettime,
            cpu: 1,
            hardirq: false,
        };
        let calls = build_calls([
            e("root", 0, 1000),
            e("leaf", 1, 1500),
            x("leaf", 1, 1500, 2750),
            x("root", 0, 1000, 4000),
            e("open", 0, 5000),
        ]);
        let mut c = ChromeTrace::new(2);
        let task = TaskKey::of(7, 1);
        c.add_calls(task, "sh-7", &calls);
        c.add_cpu_slice(1, "sh-7", 1000, 5000);
        c.add_instant(0, "sched_switch", "sched", 900, json!({"next_pid": 7}));
        let v = c.into_json();
        assert_eq!(v["displayTimeUnit"], "ns");
        let evs = v["traceEvents"].as_array().unwrap();
        let find = |name: &str, ph: &str| {
            evs.iter()
                .find(|e| e["name"] == name && e["ph"] == ph)
                .unwrap_or_else(|| panic!("no {ph} {name}: {v}"))
        };
        let root = find("root", "X");
        assert_eq!(
            (root["ts"].as_f64(), root["dur"].as_f64()),
            (Some(1.0), Some(3.0))
        );
        assert_eq!(
            (root["pid"].as_u64(), root["tid"].as_u64()),
            (Some(2), Some(2))
        );
        let leaf = find("leaf", "X");
        assert_eq!(
            (leaf["ts"].as_f64(), leaf["dur"].as_f64()),
            (Some(1.5), Some(1.25))
        );
        let open = find("open", "X");
        assert_eq!(
            (open["dur"].as_f64(), &open["args"]["returned"]),
            (Some(0.0), &json!(false))
        );
        let name = evs
            .iter()
            .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == 2)
            .unwrap();
        assert_eq!(name["args"]["name"], "sh-7");
        assert_eq!(name["pid"], 2);
        let cpu1 = evs
            .iter()
            .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == 1)
            .unwrap();
        assert_eq!(
            (cpu1["pid"].as_u64(), &cpu1["args"]["name"]),
            (Some(1), &json!("CPU 1"))
        );
        let slice = find("sh-7", "X");
        assert_eq!(
            (slice["pid"].as_u64(), slice["tid"].as_u64()),
            (Some(1), Some(1))
        );
        // A call whose exit was lost ends where its last child ends.
        let calls = build_calls([
            e("a", 0, 10_000),
            e("b", 1, 11_000),
            e("c", 2, 12_000),
            x("c", 2, 12_000, 13_000),
            x("a", 0, 10_000, 20_000),
        ]);
        let mut c = ChromeTrace::new(1);
        c.add_calls(TaskKey::of(8, 0), "t-8", &calls);
        let v2 = c.into_json();
        let b = v2["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "b")
            .unwrap()
            .clone();
        assert_eq!(
            (b["ts"].as_f64(), b["dur"].as_f64()),
            (Some(11.0), Some(2.0))
        );
        assert_eq!(
            (&b["ph"], &b["args"]["returned"]),
            (&json!("X"), &json!(false))
        );
        let sw = find("sched_switch", "i");
        assert_eq!(
            (&sw["s"], &sw["args"]["next_pid"]),
            (&json!("t"), &json!(7))
        );
    }
}
