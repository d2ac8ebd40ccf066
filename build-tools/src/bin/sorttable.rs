//! sorttable: sort the `__mcount_loc` and `__jump_table` tables of a linked
//! kernel in place.
//!
//! Usage:
//!   sorttable KERNEL.elf           sort the tables (rewrites the file if one was unsorted)
//!   sorttable --check KERNEL.elf   only check; fails if a table is not sorted
//!
//! See `build_tools::sorttable` (Linux: scripts/sorttable.c, BUILDTIME_MCOUNT_SORT).
#![forbid(unsafe_code)]

use build_tools::sorttable::{
    first_descent, jump_table, mcount_loc, sort_jump_table, sort_mcount_loc,
};
use std::process::ExitCode;
use tracer::jump_label::first_unsorted;

const USAGE: &str = "usage: sorttable [--check] KERNEL.elf";

fn run(check: bool, path: &str) -> Result<(), String> {
    let mut data = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    if check {
        let entries = mcount_loc(&data).map_err(|e| format!("{path}: {e}"))?;
        if let Some(i) = first_descent(&entries) {
            return Err(format!(
                "{path}: __mcount_loc is not sorted (entry {i}: {:#x} after {:#x})",
                entries[i],
                entries[i - 1]
            ));
        }
        println!("sorttable: {path}: {} entries, sorted", entries.len());
        if let Some(jt) = jump_table(&data).map_err(|e| format!("{path}: {e}"))? {
            if let Some(i) = first_unsorted(&jt) {
                return Err(format!(
                    "{path}: __jump_table is not sorted (entry {i}: key {:#x} site {:#x} after key {:#x} site {:#x})",
                    jt[i].key,
                    jt[i].code,
                    jt[i - 1].key,
                    jt[i - 1].code
                ));
            }
            println!(
                "sorttable: {path}: {} __jump_table entries, sorted",
                jt.len()
            );
        }
        return Ok(());
    }
    let s = sort_mcount_loc(&mut data).map_err(|e| format!("{path}: {e}"))?;
    let jt = sort_jump_table(&mut data).map_err(|e| format!("{path}: {e}"))?;
    if s.first_descent.is_some() || jt.as_ref().is_some_and(|j| j.first_descent.is_some()) {
        std::fs::write(path, &data).map_err(|e| format!("{path}: {e}"))?;
    }
    match s.first_descent {
        None => println!(
            "sorttable: {path}: {} __mcount_loc entries at {:#x}, already sorted",
            s.entries, s.start
        ),
        Some(i) => println!(
            "sorttable: {path}: sorted {} __mcount_loc entries at {:#x} (first out of order: entry {i})",
            s.entries, s.start
        ),
    }
    match jt {
        None => {}
        Some(j) => match j.first_descent {
            None => println!(
                "sorttable: {path}: {} __jump_table entries at {:#x}, already sorted",
                j.entries, j.start
            ),
            Some(i) => println!(
                "sorttable: {path}: sorted {} __jump_table entries at {:#x} (first out of order: entry {i})",
                j.entries, j.start
            ),
        },
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (check, path) = match args.as_slice() {
        [p] if !p.starts_with('-') => (false, p),
        [c, p] if c == "--check" && !p.starts_with('-') => (true, p),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(check, path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sorttable: error: {e}");
            ExitCode::FAILURE
        }
    }
}
