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

#[test]
fn format_files_are_linuxs() {
    let mut checked = 0;
    for e in all_events() {
        let want = linux_format(e.system, e.name)
            .unwrap_or_else(|| panic!("no Linux text for {}:{}", e.system, e.name));
        let got = e.format_file();
        assert!(got.contains(&format!("\nID: {}\n", e.id)));
        assert_eq!(without_id(&got), want, "{}:{}", e.system, e.name);
        checked += 1;
    }
    assert!(checked >= 2);
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
