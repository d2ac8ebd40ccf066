//! `trace_printk [-n] N`: calls `trace_printk!` N times from one function,
//! so that students (and the tests) can see its messages in `trace`, named
//! after the calling function. `-n` leaves out the trailing newline, to show
//! what Linux does then: the next event continues the same line.

use alloc::format;
use alloc::string::String;

use super::Output;

const USAGE: &str = "usage: trace_printk [-n] N";

/// The command.
pub fn command(args: &[String], out: &mut Output) {
    let (newline, rest) = match args.first().map(String::as_str) {
        Some("-n") => (false, &args[1..]),
        _ => (true, args),
    };
    let n = match rest {
        [n] => match n.parse::<u64>() {
            Ok(n) => n,
            Err(_) => {
                println!("trace_printk: invalid number '{n}'");
                return;
            }
        },
        _ => {
            println!("{USAGE}");
            return;
        }
    };
    for i in 0..n {
        trace_printk_demo(i, n, newline);
    }
    out.emit_str("trace_printk", &format!("trace_printk: {n} messages\n"));
}

/// The caller every message is named after.
#[inline(never)]
fn trace_printk_demo(i: u64, n: u64, newline: bool) {
    if newline {
        crate::trace_printk!("trace_printk demo: i={} of {} square={:#x}\n", i, n, i * i);
    } else {
        crate::trace_printk!("trace_printk demo: i={} of {} (no newline)", i, n);
    }
}
