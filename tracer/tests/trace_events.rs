//! Every declared event's `format` file against Linux 6.1's, byte for byte
//! (tests/data/linux-6.1-formats.txt was printed by Linux 6.1 on x86_64:
//! `cat /tracing/events/SYSTEM/EVENT/format`). Only the `ID:` line differs:
//! ids are handed out at run time on both sides.

use tracer::trace_events::all_events;

const LINUX: &str = include_str!("data/linux-6.1-formats.txt");

/// Linux's format file for SYSTEM/NAME, with the ID line removed.
fn linux_format(system: &str, name: &str) -> Option<String> {
    let start = LINUX.find(&format!("=== {system}/{name}\n"))?;
    let body = &LINUX[start..];
    let body = &body[body.find('\n')? + 1..];
    let end = body.find("\n=== ").map(|e| e + 1).unwrap_or(body.len());
    Some(without_id(&body[..end]))
}

fn without_id(s: &str) -> String {
    s.lines()
        .filter(|l| !l.starts_with("ID: "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The systems this kernel adds where Linux has none; their format files
/// are ours and checked in `own_format_files`.
const OWN_SYSTEMS: [&str; 2] = ["vfs", "shell"];
/// Systems of Linux that Debian's 6.1 (the kernel the data file came
/// from) is built without; their format files are checked against the
/// text Linux's source gives them, in `source_format_files`.
const SOURCE_SYSTEMS: [&str; 1] = ["preemptirq"];

#[test]
fn format_files_are_linuxs() {
    let mut checked = 0;
    for e in all_events()
        .filter(|e| !OWN_SYSTEMS.contains(&e.system) && !SOURCE_SYSTEMS.contains(&e.system))
    {
        let want = linux_format(e.system, e.name)
            .unwrap_or_else(|| panic!("no Linux text for {}:{}", e.system, e.name));
        let got = e.format_file();
        assert!(got.contains(&format!("\nID: {}\n", e.id)));
        assert_eq!(without_id(&got), want, "{}:{}", e.system, e.name);
        checked += 1;
    }
    assert_eq!(checked, 17);
}

#[test]
fn ids_are_unique_and_above_the_ftrace_types() {
    let mut ids: Vec<u16> = all_events().map(|e| e.id).collect();
    assert!(ids.iter().all(|&id| id > tracer::entry::TRACE_LAST_TYPE));
    ids.sort();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n);
}

const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
";

fn event(system: &str, name: &str) -> &'static tracer::trace_events::TraceEventCall {
    all_events()
        .find(|e| e.system == system && e.name == name)
        .unwrap_or_else(|| panic!("no event {system}:{name}"))
}

#[test]
fn own_format_files() {
    let want = [
        (
            "vfs",
            "vfs_open",
            360,
            "\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:1;
\tfield:unsigned int flags;\toffset:12;\tsize:4;\tsigned:0;
\tfield:int ret;\toffset:16;\tsize:4;\tsigned:1;

print fmt: \"filename=%s flags=0x%x ret=%d\", __get_str(filename), REC->flags, REC->ret
",
        ),
        (
            "shell",
            "shell_command_entry",
            370,
            "\tfield:__data_loc char[] line;\toffset:8;\tsize:4;\tsigned:1;

print fmt: \"line=%s\", __get_str(line)
",
        ),
        (
            "shell",
            "shell_command_exit",
            371,
            "\tfield:int ret;\toffset:8;\tsize:4;\tsigned:1;

print fmt: \"ret=%d\", REC->ret
",
        ),
    ];
    for (system, name, id, fields) in want {
        let e = event(system, name);
        assert_eq!(
            e.format_file(),
            format!("name: {name}\nID: {id}\nformat:\n{COMMON}\n{fields}"),
            "{system}:{name}"
        );
    }
    let own = all_events()
        .filter(|e| OWN_SYSTEMS.contains(&e.system))
        .count();
    assert_eq!(own, want.len());
}

/// `preemptirq` (include/trace/events/preemptirq.h, `preemptirq_template`:
/// two `s32` offsets from `_stext`), as Linux 6.1 prints it when built
/// with CONFIG_PREEMPTIRQ_TRACEPOINTS.
#[test]
fn source_format_files() {
    let fields = "\tfield:s32 caller_offs;\toffset:8;\tsize:4;\tsigned:1;
\tfield:s32 parent_offs;\toffset:12;\tsize:4;\tsigned:1;

print fmt: \"caller=%pS parent=%pS\", (void *)((unsigned long)(_stext) + REC->caller_offs), (void *)((unsigned long)(_stext) + REC->parent_offs)
";
    let names = [
        "irq_disable",
        "irq_enable",
        "preempt_disable",
        "preempt_enable",
    ];
    for name in names {
        let e = event("preemptirq", name);
        assert_eq!(
            e.format_file(),
            format!("name: {name}\nID: {}\nformat:\n{COMMON}\n{fields}", e.id),
            "preemptirq:{name}"
        );
    }
    let n = all_events()
        .filter(|e| SOURCE_SYSTEMS.contains(&e.system))
        .count();
    assert_eq!(n, names.len());
}

#[test]
fn systems_list_every_event_once() {
    let names: Vec<&str> = tracer::trace_events::systems()
        .iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(
        names,
        [
            "sched",
            "irq",
            "irq_vectors",
            "kmem",
            "preemptirq",
            "vfs",
            "shell"
        ]
    );
    let mut n = 0;
    for s in tracer::trace_events::systems() {
        for e in s.events {
            assert_eq!(e.system, s.name);
            assert_eq!(
                tracer::trace_events::find_event(e.id).map(|f| f.name),
                Some(e.name)
            );
            n += 1;
        }
    }
    assert_eq!(n, all_events().count());
    assert_eq!(n, 24);
    assert!(tracer::trace_events::find_event(tracer::entry::TRACE_LAST_TYPE).is_none());
    assert!(tracer::trace_events::find_event(1).is_none());
}
