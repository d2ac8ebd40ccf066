//! `ktrace report`'s pictures without QEMU, on the hand-made trace of
//! `tracedat_common`: the folded stacks and their weights, the SVG, the
//! Chrome JSON, a function tracer trace, and bad input (no output file).
mod tracedat_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use build_tools::tracedat::dat::TraceDat;
use build_tools::tracedat::flame::parse_folded;
use build_tools::tracedat::pages::PageWriter;
use build_tools::tracedat::trace_dat_from_transfer;
use serde_json::Value;

fn ktrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ktrace"))
        .args(args)
        .output()
        .expect("run ktrace")
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ktrace-pictures-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_dat(path: &Path, dat: &TraceDat) {
    std::fs::write(path, dat.to_bytes().unwrap()).unwrap();
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn folded_stacks_svg_and_chrome_json_of_the_sample() {
    let d = dir("sample");
    let dat = d.join("t.dat");
    write_dat(
        &dat,
        &trace_dat_from_transfer(&tracedat_common::transfer()).unwrap(),
    );
    let (folded, svg, json) = (d.join("f.txt"), d.join("f.svg"), d.join("c.json"));
    let r = ktrace(&[
        "report",
        "--folded",
        s(&folded),
        "--flamegraph",
        s(&svg),
        "--chrome",
        s(&json),
        s(&dat),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(r.stdout.is_empty(), "the pictures replace the report");
    let f = parse_folded(&std::fs::read_to_string(&folded).unwrap()).unwrap();
    // do_work (1000..4700) { helper_a 700; helper_b (1700) { leaf_c 700 } }
    // then leaf calls of init, of pid 77 (no cmdline) and of the idle task.
    let want = [
        ("init-1;do_work", 3700 - 700 - 1700),
        ("init-1;do_work;helper_a", 700),
        ("init-1;do_work;helper_b", 1700 - 700),
        ("init-1;do_work;helper_b;leaf_c", 700),
        ("init-1;helper_a", 200),
        ("init-1;leaf_c", 999 + 100_001 + 123_456_789),
        ("<...>-77;leaf_c", 10_000 + 1_000_001 + 1_000_000_001),
        ("<idle>-0;leaf_c", 10_001 + 12_345_678 + 12_345_678_901_234),
    ];
    let want: Vec<(String, u64)> = want.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    assert_eq!(f.into_iter().collect::<Vec<_>>().len(), want.len());
    let f = parse_folded(&std::fs::read_to_string(&folded).unwrap()).unwrap();
    for (k, v) in &want {
        assert_eq!(f.get(k), Some(v), "{k}: {f:?}");
    }
    let svg = std::fs::read_to_string(&svg).unwrap();
    // (The idle task's 12345 s leaf makes the other frames too narrow to
    // be drawn.)
    assert!(
        svg.contains("<svg") && svg.contains("&lt;idle&gt;-0"),
        "{svg}"
    );
    assert!(svg.contains("function_graph: self time per call stack"));

    // --count: calls per stack.
    let r = ktrace(&["report", "--count", "--folded", s(&folded), s(&dat)]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let f = parse_folded(&std::fs::read_to_string(&folded).unwrap()).unwrap();
    assert_eq!(f["init-1;do_work;helper_b;leaf_c"], 1);
    assert_eq!(f["<idle>-0;leaf_c"], 3);

    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let evs = v["traceEvents"].as_array().unwrap();
    let tid_named = |name: &str| {
        evs.iter()
            .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == name)
            .unwrap_or_else(|| panic!("no track {name}"))["tid"]
            .as_u64()
            .unwrap()
    };
    let init = tid_named("init-1");
    let do_work = evs
        .iter()
        .find(|e| e["name"] == "do_work" && e["ph"] == "X")
        .unwrap();
    assert_eq!(do_work["tid"].as_u64(), Some(init));
    assert_eq!(do_work["ts"].as_f64(), Some(5_000_001.0));
    assert_eq!(do_work["dur"].as_f64(), Some(3.7));
    // Tasks named by the sched events, CPUs, and the sched events as
    // instant events on their CPU's track.
    tid_named("worker-42");
    assert_eq!(tid_named("CPU 1"), 1);
    let sw: Vec<&Value> = evs.iter().filter(|e| e["name"] == "sched_switch").collect();
    assert_eq!(sw.len(), 3);
    assert!(sw
        .iter()
        .all(|e| e["ph"] == "i" && e["s"] == "t" && e["pid"] == 1 && e["tid"] == 0));
    assert_eq!(sw[0]["args"]["next_comm"], "worker");
}

#[test]
fn a_function_trace_gives_call_counts() {
    let d = dir("function");
    // The sample's function records only.
    let mut t = tracedat_common::transfer();
    let mut writers = [PageWriter::new(4096), PageWriter::new(4096)];
    let function_id = tracer::entry::TRACE_FN;
    for (cpu, ts, data) in tracedat_common::events() {
        if u16::from_le_bytes([data[0], data[1]]) == function_id {
            writers[cpu].push(ts, &data);
        }
    }
    t.pages = writers.iter().map(|w| w.pages().to_vec()).collect();
    let dat = d.join("fn.dat");
    write_dat(&dat, &trace_dat_from_transfer(&t).unwrap());
    let (folded, svg) = (d.join("f.txt"), d.join("f.svg"));
    let r = ktrace(&[
        "report",
        "-i",
        s(&dat),
        "--flamegraph",
        s(&svg),
        "--folded",
        s(&folded),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let f = parse_folded(&std::fs::read_to_string(&folded).unwrap()).unwrap();
    assert_eq!(f["worker-42;kernel_main;worker_loop;leaf_c"], 400);
    assert_eq!(f["worker-42;kernel_main;worker_loop;helper_b"], 1);
    assert_eq!(f["init-1;kernel_main;do_work"], 1);
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("function tracer: call counts"), "title");
}

#[test]
fn bad_input_writes_no_picture() {
    let d = dir("bad");
    let good = trace_dat_from_transfer(&tracedat_common::transfer())
        .unwrap()
        .to_bytes()
        .unwrap();
    // A page whose header claims more data than a page holds.
    let mut corrupt = good.clone();
    let dat0 = trace_dat_from_transfer(&tracedat_common::transfer()).unwrap();
    let first_page = good
        .windows(4096)
        .position(|w| w == &dat0.cpus[0][..4096])
        .unwrap();
    corrupt[first_page + 8..first_page + 16].copy_from_slice(&0xfff0u64.to_le_bytes());
    let cases = [
        (
            "truncated",
            good[..good.len() / 2].to_vec(),
            "cut off|truncated|short|end of file",
        ),
        ("corrupt", corrupt, "CPU 0 page 0"),
        ("empty", Vec::new(), ""),
    ];
    for (name, bytes, why) in cases {
        let dat = d.join(format!("{name}.dat"));
        std::fs::write(&dat, bytes).unwrap();
        let outs = [
            d.join(format!("{name}.svg")),
            d.join(format!("{name}.txt")),
            d.join(format!("{name}.json")),
        ];
        let r = ktrace(&[
            "report",
            "--flamegraph",
            s(&outs[0]),
            "--folded",
            s(&outs[1]),
            "--chrome",
            s(&outs[2]),
            s(&dat),
        ]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.starts_with(&format!("ktrace: {}: ", dat.display())),
            "{name}: {err}"
        );
        assert!(
            why.is_empty() || why.split('|').any(|w| err.contains(w)),
            "{name}: {err}"
        );
        let left: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with(name) && !n.ends_with(".dat"))
            .collect();
        assert!(left.is_empty(), "{name}: left {left:?}");
    }
    // --count alone is a usage error.
    let r = ktrace(&["report", "--count", "x.dat"]);
    assert_eq!(r.status.code(), Some(2));
}
