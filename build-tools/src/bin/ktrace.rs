//! ktrace: trace-cmd for the kernel under QEMU.
//!
//!     ktrace record [-p TRACER] [-l FUNC]... [-n FUNC]... [-g FUNC]... [-e EVENT]...
//!                   [-b KB] [--smp N] [-o FILE] [-v] [PICTURES] -- 'SHELL LINE'...
//!     ktrace extract [-o FILE] [--smp N] [-v] [PICTURES] -- 'SHELL LINE'...
//!     ktrace extract [-o FILE] [PICTURES] -i CAPTURE
//!     ktrace report [-i FILE] [--cpu N]... [-F EVENT]... [-O parent=1]
//!     ktrace report [-i FILE] PICTURES
//!     PICTURES: [--flamegraph OUT.svg] [--folded OUT.txt] [--count] [--chrome OUT.json]
//!
//! `record` boots the kernel (`qemu.sh`, COM2 captured to a file), sets the
//! tracer and filters as `trace-cmd record` does through tracefs, enables
//! the events `-e` selects (`SYSTEM:EVENT`, a system or an event name, globs,
//! `all`; as trace-cmd), runs each
//! shell line, stops tracing, runs `trace-export` and powers off; the frames
//! on COM2 are checked (CRC, sequence, totals) and become a trace.dat v6.
//! `extract` does the same without touching the tracing setup: the lines
//! given set up and run tracing themselves; or `-i` converts a COM2 capture
//! of a QEMU you ran yourself (`./qemu.sh -- -serial file:com2.bin`, then
//! `trace-export` in its shell). `report` prints a trace.dat like
//! `trace-cmd report`. A transfer that is corrupt or incomplete is reported
//! with exit status 1 and no file is written. Usage errors exit with 2.
//!
//! The pictures (`report`, or straight from `record`/`extract`): a flame
//! graph as SVG (`--flamegraph`, drawn by inferno) or as folded stacks
//! (`--folded`), weighted by self time in ns, or by calls with `--count`
//! (`tracedat::flame`); a Chrome trace-event timeline (`--chrome`,
//! `tracedat::chrome`). Each file is written under a temporary name and
//! renamed, and only once every picture was made: an error leaves none.
//! `record` and `extract` show the pages arriving on a terminal
//! (`progress`).
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use build_tools::event_select::select_events;
use build_tools::progress::Progress;
use build_tools::session::{error_lines, repo_root, Options, Session};
use build_tools::tracedat::calls::Trace;
use build_tools::tracedat::chrome::chrome_trace;
use build_tools::tracedat::dat::TraceDat;
use build_tools::tracedat::flame::{fold_trace, folded_text, svg, Weight};
use build_tools::tracedat::frame::decode_stream;
use build_tools::tracedat::report::{report, ReportOptions};
use build_tools::tracedat::trace_dat_from_transfer;
use build_tools::{Error, Result};

const USAGE: &str = "\
usage: ktrace record [-p TRACER] [-l FUNC]... [-n FUNC]... [-g FUNC]... [-e EVENT]...
                     [--kprobe DEFINITION]... [-b KB] [--smp N] [-o FILE] [-v] [PICTURES]
                     -- 'SHELL LINE'...
       ktrace extract [-o FILE] [--smp N] [-v] [PICTURES] -- 'SHELL LINE'...
       ktrace extract [-o FILE] [PICTURES] -i CAPTURE
       ktrace report [-i FILE] [--cpu N]... [-F EVENT]... [-O parent=1]
       ktrace report [-i FILE] PICTURES
PICTURES: --flamegraph OUT.svg (self time in ns; --count: calls), --folded OUT.txt
          (the same stacks as text), --chrome OUT.json (Chrome trace-event timeline).
-e EVENT: SYSTEM:EVENT, a SYSTEM, an EVENT name, globs (sched:sched_wak*), or all.
--kprobe DEFINITION: written to kprobe_events before the events are chosen
  ('p:myprobe SYM arg=%di', then -e kprobes), as one does before trace-cmd.
Each SHELL LINE is one line typed into the kernel's shell (no `;`).
Output defaults to trace.dat.";

/// How long one shell line may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a boot may take (the first run also builds the kernel).
const BOOT_TIMEOUT: Duration = Duration::from_secs(900);

enum Failure {
    Usage(String),
    Run(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Run(e)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("record") => record(&args[1..], true),
        Some("extract") => record(&args[1..], false),
        Some("report") => report_cmd(&args[1..]),
        Some("-h") | Some("--help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => Err(Failure::Usage("missing or unknown command".into())),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("ktrace: {msg}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Run(e)) => {
            eprintln!("ktrace: {e}");
            ExitCode::from(1)
        }
    }
}

#[derive(Default)]
struct RecordArgs {
    tracer: Option<String>,
    filters: Vec<String>,
    notrace: Vec<String>,
    graph: Vec<String>,
    events: Vec<String>,
    kprobes: Vec<String>,
    buffer_kb: Option<u64>,
    smp: u32,
    output: PathBuf,
    input: Option<PathBuf>,
    verbose: bool,
    lines: Vec<String>,
    pictures: Pictures,
}

/// The pictures asked for.
#[derive(Default)]
struct Pictures {
    flamegraph: Option<PathBuf>,
    folded: Option<PathBuf>,
    count: bool,
    chrome: Option<PathBuf>,
}

impl Pictures {
    fn any(&self) -> bool {
        self.flamegraph.is_some() || self.folded.is_some() || self.chrome.is_some()
    }

    fn check(&self) -> std::result::Result<(), Failure> {
        if self.count && self.flamegraph.is_none() && self.folded.is_none() {
            return Err(Failure::Usage(
                "--count needs --flamegraph or --folded".into(),
            ));
        }
        Ok(())
    }

    /// Takes the option at `args[*i]` if it is one of the pictures'.
    fn parse(&mut self, args: &[String], i: &mut usize) -> std::result::Result<bool, Failure> {
        let opt = args[*i].as_str();
        let mut value = || {
            *i += 1;
            args.get(*i)
                .map(PathBuf::from)
                .ok_or_else(|| Failure::Usage(format!("{opt} needs a value")))
        };
        match opt {
            "--flamegraph" => self.flamegraph = Some(value()?),
            "--folded" => self.folded = Some(value()?),
            "--chrome" => self.chrome = Some(value()?),
            "--count" => self.count = true,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Makes every picture asked for from `dat`, then writes them all.
    fn write(&self, dat: &TraceDat) -> Result<()> {
        if !self.any() {
            return Ok(());
        }
        let trace = Trace::new(dat).map_err(|e| Error::new(e.to_string()))?;
        let mut files: Vec<(&PathBuf, Vec<u8>)> = Vec::new();
        if self.flamegraph.is_some() || self.folded.is_some() {
            let weight = if self.count {
                Weight::Calls
            } else {
                Weight::SelfTime
            };
            let (folded, source) = fold_trace(&trace, weight).map_err(Error::new)?;
            if let Some(p) = &self.folded {
                files.push((p, folded_text(&folded).into_bytes()));
            }
            if let Some(p) = &self.flamegraph {
                files.push((p, svg(&folded, source, weight).map_err(Error::new)?));
            }
        }
        if let Some(p) = &self.chrome {
            let json = serde_json::to_vec(&chrome_trace(&trace))
                .map_err(|e| Error::new(format!("writing JSON: {e}")))?;
            files.push((p, json));
        }
        for (path, bytes) in files {
            write_atomically(path, &bytes)?;
            eprintln!("ktrace: wrote {}", path.display());
        }
        Ok(())
    }
}

fn parse_record(args: &[String], record: bool) -> std::result::Result<RecordArgs, Failure> {
    let mut a = RecordArgs {
        smp: 4,
        output: PathBuf::from("trace.dat"),
        ..Default::default()
    };
    let mut i = 0;
    let value = |i: &mut usize, opt: &str| -> std::result::Result<String, Failure> {
        *i += 1;
        args.get(*i)
            .cloned()
            .ok_or_else(|| Failure::Usage(format!("{opt} needs a value")))
    };
    while i < args.len() {
        if a.pictures.parse(args, &mut i)? {
            i += 1;
            continue;
        }
        let opt = args[i].as_str();
        match opt {
            "--" => {
                for l in &args[i + 1..] {
                    a.lines.extend(
                        l.lines()
                            .map(str::to_string)
                            .filter(|l| !l.trim().is_empty()),
                    );
                }
                break;
            }
            "-o" => a.output = PathBuf::from(value(&mut i, opt)?),
            "--smp" => {
                let v = value(&mut i, opt)?;
                a.smp = v
                    .parse()
                    .ok()
                    .filter(|&n| (1..=64).contains(&n))
                    .ok_or_else(|| Failure::Usage(format!("bad --smp {v}")))?;
            }
            "-v" => a.verbose = true,
            "-i" if !record => a.input = Some(PathBuf::from(value(&mut i, opt)?)),
            "-p" if record => a.tracer = Some(value(&mut i, opt)?),
            "-l" if record => a.filters.push(value(&mut i, opt)?),
            "-n" if record => a.notrace.push(value(&mut i, opt)?),
            "-g" if record => a.graph.push(value(&mut i, opt)?),
            "-e" if record => a.events.push(value(&mut i, opt)?),
            "--kprobe" if record => a.kprobes.push(value(&mut i, opt)?),
            "-b" if record => {
                let v = value(&mut i, opt)?;
                a.buffer_kb = Some(
                    v.parse()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| Failure::Usage(format!("bad -b {v}")))?,
                );
            }
            _ => return Err(Failure::Usage(format!("unknown option {opt}"))),
        }
        i += 1;
    }
    if record && a.tracer.is_none() && a.events.is_empty() {
        return Err(Failure::Usage("record needs -p TRACER or -e EVENT".into()));
    }
    a.pictures.check()?;
    if a.input.is_some() && !a.lines.is_empty() {
        return Err(Failure::Usage(
            "extract takes -i CAPTURE or shell lines, not both".into(),
        ));
    }
    Ok(a)
}

/// Runs `line` and fails if the shell or the command reported an error.
fn run_checked(s: &mut Session, line: &str) -> Result<String> {
    let out = s.run(line, COMMAND_TIMEOUT)?;
    let errors = error_lines(&out);
    if !errors.is_empty() {
        return Err(Error::new(format!(
            "`{line}` failed: {}",
            errors.join(" / ")
        )));
    }
    Ok(out)
}

/// The tracefs writes `trace-cmd record` makes, in its order: stop,
/// buffer size, filters, events (`events`: the (system, event) pairs the
/// `-e` patterns selected), tracer, clear, start.
fn setup_lines(a: &RecordArgs, events: &[(String, String)]) -> Vec<String> {
    let mut l = vec!["echo 0 > /tracing/tracing_on".to_string()];
    if let Some(kb) = a.buffer_kb {
        l.push(format!("echo {kb} > /tracing/buffer_size_kb"));
    }
    for f in &a.filters {
        l.push(format!("echo '{f}' >> /tracing/set_ftrace_filter"));
    }
    for f in &a.notrace {
        l.push(format!("echo '{f}' >> /tracing/set_ftrace_notrace"));
    }
    for f in &a.graph {
        l.push(format!("echo '{f}' >> /tracing/set_graph_function"));
    }
    for (system, event) in events {
        l.push(format!("echo 1 > /tracing/events/{system}/{event}/enable"));
    }
    if let Some(t) = &a.tracer {
        l.push(format!("echo {t} > /tracing/current_tracer"));
    }
    l.push("echo > /tracing/trace".to_string());
    l.push("echo 1 > /tracing/tracing_on".to_string());
    l
}

fn record(args: &[String], record: bool) -> std::result::Result<(), Failure> {
    let a = parse_record(args, record)?;
    let capture = match &a.input {
        Some(path) => {
            std::fs::read(path).map_err(|e| Error::new(format!("{}: {e}", path.display())))?
        }
        None => {
            let com2 = std::env::temp_dir().join(format!("ktrace-com2-{}.bin", std::process::id()));
            let _ = std::fs::remove_file(&com2);
            let progress = Progress::start(&com2);
            let result = run_kernel(&a, record, &com2);
            progress.finish();
            let bytes = std::fs::read(&com2).unwrap_or_default();
            let _ = std::fs::remove_file(&com2);
            result?;
            bytes
        }
    };
    let transfers =
        decode_stream(&capture).map_err(|e| Error::new(format!("export channel: {e}")))?;
    let t = transfers
        .last()
        .ok_or_else(|| Error::new("the capture holds no transfer"))?;
    if transfers.len() > 1 {
        eprintln!(
            "ktrace: the capture holds {} transfers; using the last one",
            transfers.len()
        );
    }
    let dat = trace_dat_from_transfer(t).map_err(|e| Error::new(e.to_string()))?;
    let bytes = dat.to_bytes().map_err(|e| Error::new(e.to_string()))?;
    write_atomically(&a.output, &bytes)?;
    let pages: Vec<String> = dat
        .cpus
        .iter()
        .enumerate()
        .map(|(cpu, d)| format!("cpu{cpu}: {} pages", d.len() / dat.page_size as usize))
        .collect();
    eprintln!(
        "ktrace: wrote {} ({})",
        a.output.display(),
        pages.join(", ")
    );
    a.pictures.write(&dat)?;
    Ok(())
}

/// Starts `qemu.sh --smp SMP -- -serial file:COM2` and waits for the first
/// prompt. qemu.sh stays in our process group, so Ctrl-C stops QEMU too.
fn boot(smp: u32, com2: &Path, verbose: bool) -> Result<Session> {
    let qemu_sh = repo_root().join("qemu.sh");
    if !qemu_sh.is_file() {
        return Err(Error::new(format!(
            "{} not found (run ktrace from the repository or set KTRACE_ROOT)",
            qemu_sh.display()
        )));
    }
    let mut cmd = Command::new(&qemu_sh);
    cmd.arg("--smp")
        .arg(smp.to_string())
        .arg("--")
        .arg("-serial")
        .arg(format!("file:{}", com2.display()));
    let opts = Options {
        own_process_group: false,
        echo: verbose,
        log_in_errors: 3000,
    };
    let mut s = Session::start(cmd, opts)?;
    s.wait_prompt(BOOT_TIMEOUT)
        .map_err(|e| e.context("booting the kernel"))?;
    Ok(s)
}

fn run_kernel(a: &RecordArgs, record: bool, com2: &Path) -> Result<()> {
    let mut s = boot(a.smp, com2, a.verbose)?;
    match run_lines(&mut s, a, record) {
        Ok(()) => {}
        Err(e) => {
            // Stop the kernel before reporting: dropping the session ends
            // qemu.sh but not the QEMU it started.
            let _ = s.poweroff(Duration::from_secs(60));
            return Err(e);
        }
    }
    let status = s.poweroff(Duration::from_secs(60))?;
    if status != 0 {
        return Err(Error::new(format!(
            "the kernel exited with status {status}"
        )));
    }
    Ok(())
}

/// Everything between the boot and the poweroff: the set-up, the user's
/// lines, stopping, and `trace-export`.
fn run_lines(s: &mut Session, a: &RecordArgs, record: bool) -> Result<()> {
    for def in &a.kprobes {
        if def.contains('\'') {
            return Err(Error::new(format!(
                "--kprobe {def:?}: no ' in a definition"
            )));
        }
        run_checked(s, &format!("echo '{def}' >> /tracing/kprobe_events"))?;
    }
    let events = if record && !a.events.is_empty() {
        let available = run_checked(s, "cat /tracing/available_events")?;
        select_events(&a.events, &available).map_err(Error::new)?
    } else {
        Vec::new()
    };
    let mut lines = if record {
        setup_lines(a, &events)
    } else {
        Vec::new()
    };
    let user_start = lines.len();
    lines.extend(a.lines.iter().cloned());
    for (i, line) in lines.iter().enumerate() {
        let out = if i < user_start {
            run_checked(s, line)?
        } else {
            s.run(line, COMMAND_TIMEOUT)?
        };
        if i >= user_start && !a.verbose {
            eprint!("{out}");
        }
    }
    if record {
        run_checked(s, "echo 0 > /tracing/tracing_on")?;
    }
    let summary = run_checked(s, "trace-export")?;
    eprint!("{summary}");
    Ok(())
}

/// Writes the file under a temporary name (`NAME.partial`) and renames it,
/// so a failure never leaves a partial file behind.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    let tmp = path.with_file_name(name);
    if let Err(e) = std::fs::write(&tmp, bytes) {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::new(format!("{}: {e}", tmp.display())));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::new(format!("{}: {e}", path.display()))
    })
}

fn report_cmd(args: &[String]) -> std::result::Result<(), Failure> {
    let mut input = PathBuf::from("trace.dat");
    let mut opts = ReportOptions::default();
    let mut pictures = Pictures::default();
    let mut i = 0;
    while i < args.len() {
        if pictures.parse(args, &mut i)? {
            i += 1;
            continue;
        }
        let opt = args[i].as_str();
        let mut value = || {
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| Failure::Usage(format!("{opt} needs a value")))
        };
        match opt {
            "-i" => input = PathBuf::from(value()?),
            "--cpu" => {
                let v = value()?;
                for c in v.split(',') {
                    opts.cpus.push(
                        c.parse()
                            .map_err(|_| Failure::Usage(format!("bad --cpu {v}")))?,
                    );
                }
            }
            "-F" => opts
                .events
                .extend(value()?.split(',').map(|s| s.trim().to_string())),
            "-O" => match value()?.as_str() {
                "parent=1" | "parent" => opts.parent = true,
                "parent=0" => opts.parent = false,
                o => {
                    return Err(Failure::Usage(format!(
                        "unsupported -O {o} (only parent=0/1)"
                    )))
                }
            },
            f if !f.starts_with('-') => input = PathBuf::from(f),
            _ => return Err(Failure::Usage(format!("unknown option {opt}"))),
        }
        i += 1;
    }
    pictures.check()?;
    if pictures.any() && (!opts.cpus.is_empty() || !opts.events.is_empty() || opts.parent) {
        return Err(Failure::Usage(
            "--cpu, -F and -O print the report; the pictures take the whole trace".into(),
        ));
    }
    let bytes =
        std::fs::read(&input).map_err(|e| Error::new(format!("{}: {e}", input.display())))?;
    let dat =
        TraceDat::parse(&bytes).map_err(|e| Error::new(format!("{}: {e}", input.display())))?;
    if pictures.any() {
        pictures
            .write(&dat)
            .map_err(|e| e.context(input.display()))?;
        return Ok(());
    }
    let text = report(&dat, &opts).map_err(|e| Error::new(format!("{}: {e}", input.display())))?;
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error.
    let _ = out.write_all(text.as_bytes());
    Ok(())
}
