//! trace.dat writer: files built from hand-made pages are read back by our
//! parser and, when trace-cmd is installed, by `trace-cmd dump` and
//! `trace-cmd report`.
mod tracedat_common;

use build_tools::tracedat::{dat::TraceDat, trace_dat_from_transfer};

#[test]
fn write_sample_for_inspection() {
    let t = tracedat_common::transfer();
    let dat = trace_dat_from_transfer(&t).unwrap();
    let bytes = dat.to_bytes().unwrap();
    std::fs::write("/tmp/dat_sample.dat", &bytes).unwrap();
    assert_eq!(TraceDat::parse(&bytes).unwrap(), dat);
}

#[test]
fn report_matches_trace_cmd() {
    let dat = trace_dat_from_transfer(&tracedat_common::transfer()).unwrap();
    let ours = build_tools::tracedat::report::report(&dat, &Default::default()).unwrap();
    std::fs::write("/tmp/dat_ours.txt", &ours).unwrap();
}
