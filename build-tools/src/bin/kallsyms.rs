//! kallsyms: the kernel's function table for the second link.
//!
//! Usage:
//!   kallsyms -o KALLSYMS.o KERNEL.elf     write the .kallsyms object
//!   kallsyms --empty -o KALLSYMS.o        an object with an empty table (first link)
//!   kallsyms --list KERNEL.elf            print "address size name" lines
//!   kallsyms --compare A.elf B.elf        fail unless every function has the same
//!                                         address and size in both
#![forbid(unsafe_code)]

use build_tools::kallsyms::{blob, compare, functions, object, Function};
use std::process::ExitCode;

const USAGE: &str = "usage: kallsyms -o OUT.o KERNEL.elf | kallsyms --empty -o OUT.o | \
kallsyms --list KERNEL.elf | kallsyms --compare A.elf B.elf";

enum Command {
    Object {
        input: Option<String>,
        output: String,
    },
    List(String),
    Compare(String, String),
}

fn parse_args() -> Result<Command, String> {
    let (mut output, mut empty, mut list, mut cmp) = (None, false, false, false);
    let mut inputs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-o" => output = Some(args.next().ok_or("-o needs a file")?),
            "--empty" => empty = true,
            "--list" => list = true,
            "--compare" => cmp = true,
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            _ => inputs.push(arg),
        }
    }
    match (cmp, list, empty, output, inputs.as_slice()) {
        (true, false, false, None, [a, b]) => Ok(Command::Compare(a.clone(), b.clone())),
        (false, true, false, None, [a]) => Ok(Command::List(a.clone())),
        (false, false, true, Some(o), []) => Ok(Command::Object {
            input: None,
            output: o,
        }),
        (false, false, false, Some(o), [a]) => Ok(Command::Object {
            input: Some(a.clone()),
            output: o,
        }),
        _ => Err("bad arguments".into()),
    }
}

fn read_functions(path: &str) -> Result<Vec<Function>, String> {
    let data = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    functions(&data).map_err(|e| format!("{path}: {e}"))
}

fn run(cmd: Command) -> Result<(), String> {
    match cmd {
        Command::Object { input, output } => {
            let funcs = match &input {
                Some(path) => read_functions(path)?,
                None => Vec::new(),
            };
            let blob = blob(&funcs).map_err(|e| e.to_string())?;
            let obj = object(&blob).map_err(|e| e.to_string())?;
            std::fs::write(&output, obj).map_err(|e| format!("{output}: {e}"))?;
            println!(
                "kallsyms: {}: {} functions, {} bytes",
                input.as_deref().unwrap_or("(empty)"),
                funcs.len(),
                blob.len()
            );
        }
        Command::List(path) => {
            for f in read_functions(&path)? {
                println!("{:016x} {:x} {}", f.addr, f.size, f.name);
            }
        }
        Command::Compare(a, b) => {
            let (fa, fb) = (read_functions(&a)?, read_functions(&b)?);
            let diffs = compare(&fa, &fb);
            if !diffs.is_empty() {
                for d in diffs.iter().take(20) {
                    eprintln!("kallsyms: {d}");
                }
                return Err(format!(
                    "{} functions differ between {a} and {b}",
                    diffs.len()
                ));
            }
            println!("kallsyms: {} functions identical in {a} and {b}", fa.len());
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cmd = match parse_args() {
        Ok(c) => c,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("kallsyms: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kallsyms: error: {e}");
            ExitCode::FAILURE
        }
    }
}
