//! recordmcount: record the ftrace call sites of a kernel object or archive.
//!
//! Usage: recordmcount [--mode mcount|fentry] [--notrace FILE] [--list] -o OUTPUT INPUT
//!
//! INPUT is an ELF relocatable object or an ar archive (.a, .rlib). OUTPUT gets
//! the same object (or archive, same members in the same order) with a
//! `__mcount_loc` table added; see `build_tools::recordmcount`.
#![forbid(unsafe_code)]

use build_tools::recordmcount::{process, Mode, Notrace, Options};
use std::process::ExitCode;

const USAGE: &str =
    "usage: recordmcount [--mode mcount|fentry] [--notrace FILE] [--list] -o OUTPUT INPUT";

struct Args {
    mode: Mode,
    notrace: Option<String>,
    list: bool,
    output: String,
    input: String,
}

fn parse_args() -> Result<Args, String> {
    let mut mode = Mode::Mcount;
    let (mut notrace, mut output, mut input, mut list) = (None, None, None, false);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |what: &str| args.next().ok_or(format!("{arg} needs {what}"));
        match arg.as_str() {
            "--mode" => {
                mode = value("mcount or fentry")?
                    .parse()
                    .map_err(|e| format!("{e}"))?
            }
            "--notrace" => notrace = Some(value("a file")?),
            "-o" => output = Some(value("a file")?),
            "--list" => list = true,
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            _ if input.is_none() => input = Some(arg),
            _ => return Err("more than one input".into()),
        }
    }
    Ok(Args {
        mode,
        notrace,
        list,
        output: output.ok_or("missing -o OUTPUT")?,
        input: input.ok_or("missing INPUT")?,
    })
}

fn run(args: Args) -> Result<(), String> {
    let notrace = match &args.notrace {
        Some(path) => {
            Notrace::parse(&std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?)
        }
        None => Notrace::none(),
    };
    let data = std::fs::read(&args.input).map_err(|e| format!("{}: {e}", args.input))?;
    let opts = Options {
        mode: args.mode,
        notrace,
    };
    let out = process(&data, &opts).map_err(|e| format!("{}: {e}", args.input))?;
    if args.list {
        for s in &out.sites {
            let member = s
                .member
                .as_deref()
                .map(|m| format!("{m}:"))
                .unwrap_or_default();
            let state = if s.recorded { "traced " } else { "notrace" };
            println!(
                "{state} {member}{}+{:#x} {}",
                s.section, s.offset, s.function
            );
        }
    }
    std::fs::write(&args.output, &out.data).map_err(|e| format!("{}: {e}", args.output))?;
    println!("recordmcount: {}: {}", args.input, out.summary);
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("recordmcount: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("recordmcount: error: {e}");
            ExitCode::FAILURE
        }
    }
}
