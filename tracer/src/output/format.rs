//! The text of one event, as Linux's kernel/trace/trace_output.c prints it:
//! symbols (`%ps`, `seq_print_ip_sym()`), the context columns
//! (`trace_print_context()`), the timestamp and each event type's own
//! text (`event->funcs->trace`).

use alloc::string::String;
use core::fmt::Write;

use super::config::{cmdline_str, find_cmdline, OutputConfig, SymbolResolver};
use super::seq::TraceSeq;
use crate::entry::{lat_fmt, task_index_to_char, CtxSwitchEntry, Entry, EventEntry, TraceEntry};
use crate::options::{TraceOption, TraceOptions};

/// `%ps`: the symbol name, or `0x<hex>` when the address is unknown
/// (`sprint_symbol_no_offset()`).
pub fn write_ps(out: &mut TraceSeq, syms: &dyn SymbolResolver, addr: u64) {
    match syms.lookup(addr) {
        Some((name, _, _)) if !name.is_empty() => out.push_str(name),
        _ => {
            let _ = write!(out, "0x{:x}", addr);
        }
    }
}

/// `trace_seq_print_sym()`: with `offset`, `name+0x<off>/0x<size>`
/// (`sprint_symbol()`, `0x<hex>` when unknown); without, the bare name, or
/// `0x%08lx` when unknown.
pub fn write_sym(out: &mut TraceSeq, syms: &dyn SymbolResolver, addr: u64, offset: bool) {
    match syms.lookup(addr) {
        Some((name, off, size)) if !name.is_empty() => {
            out.push_str(name);
            if offset {
                let _ = write!(out, "+0x{:x}/0x{:x}", off, size);
            }
        }
        _ => {
            if offset {
                let _ = write!(out, "0x{:x}", addr);
            } else {
                let _ = write!(out, "0x{:08x}", addr);
            }
        }
    }
}

/// `seq_print_ip_sym()`: `0` for a null address, the symbol (with offset
/// when `sym-offset` is set) and ` <%016lx>` when `sym-addr` is set.
pub fn seq_print_ip_sym(
    out: &mut TraceSeq,
    syms: &dyn SymbolResolver,
    ip: u64,
    opts: &TraceOptions,
) {
    if ip == 0 {
        out.push('0');
        return;
    }
    write_sym(out, syms, ip, opts.has(TraceOption::SymOffset));
    if opts.has(TraceOption::SymAddr) {
        let _ = write!(out, " <{:016x}>", ip);
    }
}

/// `ns2usecs()`: ns to µs, rounded to nearest.
pub fn ns2usecs(ns: u64) -> u64 {
    ns.saturating_add(500) / 1000
}

/// `trace_print_context()`: `%16s-%-7d `, optional tgid, `[%03d] `, the
/// five flag characters (irq-info) and ` %5lu.%06lu: `.
pub fn print_context(
    cfg: &OutputConfig<'_>,
    cpu: usize,
    ts: u64,
    ent: &TraceEntry,
    out: &mut TraceSeq,
) {
    // Written digit by digit rather than through core::fmt: this prefix is
    // on every line of `trace` and `trace_pipe` (the same text as
    // `{:>16}-{:<7} [{:03}]` and ` {:5}.{:06}`, host-tested).
    out.push_str_right(cmdline_str(cfg.tasks, ent.pid), 16);
    out.push('-');
    out.push_i64_left(ent.pid as i64, 7);
    out.push(' ');
    if cfg.options.has(TraceOption::RecordTgid) {
        match cfg.tasks.tgid(ent.pid) {
            Some(t) if t != 0 => {
                let _ = write!(out, "({:7}) ", t);
            }
            _ => out.push_str("(-------) "),
        }
    }
    out.push('[');
    out.push_u64(cpu as u64, 3, b'0');
    out.push_str("] ");
    if cfg.options.has(TraceOption::IrqInfo) {
        out.push_str(
            core::str::from_utf8(&lat_fmt(ent.flags, ent.preempt_count)).unwrap_or("....."),
        );
    }
    print_time(cfg, ts, out);
    out.push_str(": ");
}

/// `trace_print_time()`: ` %5lu.%06lu` (seconds.µs, rounded) or ` %12llu`.
pub fn print_time(cfg: &OutputConfig<'_>, ts: u64, out: &mut TraceSeq) {
    if cfg.time_in_ns {
        let t = ns2usecs(ts);
        out.push(' ');
        out.push_u64(t / 1_000_000, 5, b' ');
        out.push('.');
        out.push_u64(t % 1_000_000, 6, b'0');
    } else {
        out.push(' ');
        out.push_u64(ts, 12, b' ');
    }
}

/// `print_fn_trace()`: the function and, with `print-parent`, ` <-parent`.
fn print_fn_trace(cfg: &OutputConfig<'_>, ip: u64, parent_ip: u64, out: &mut TraceSeq) {
    let opts = cfg.options;
    seq_print_ip_sym(out, cfg.syms, ip, opts);
    if opts.has(TraceOption::PrintParent) && parent_ip != 0 {
        out.push_str(" <-");
        seq_print_ip_sym(out, cfg.syms, parent_ip, opts);
    }
}

/// The event's own text (`event->funcs->trace`), with a trailing newline
/// for the events whose printer adds one. `ts` is the event's timestamp.
pub fn print_event_body(cfg: &OutputConfig<'_>, ts: u64, entry: &Entry, out: &mut TraceSeq) {
    let opts = cfg.options;
    match entry {
        Entry::Function(f) => {
            print_fn_trace(cfg, f.ip, f.parent_ip, out);
            out.push('\n');
        }
        Entry::FuncRepeats(r) => {
            // trace_func_repeats_print()
            print_fn_trace(cfg, r.ip, r.parent_ip, out);
            let _ = write!(out, " (repeats: {}, last_ts:", r.count);
            print_time(cfg, ts.wrapping_sub(r.delta_ts()), out);
            out.push_str(")\n");
        }
        Entry::Stack(s) => {
            out.push_str("<stack trace>\n");
            for &ip in &s.callers {
                out.push_str(" => ");
                seq_print_ip_sym(out, cfg.syms, ip, opts);
                out.push('\n');
            }
        }
        Entry::Print(p) => {
            // trace_print_print(): "%ps: %s"; the text keeps its own newline.
            seq_print_ip_sym(out, cfg.syms, p.ip, opts);
            out.push_str(": ");
            out.push_str(&String::from_utf8_lossy(&p.buf));
        }
        Entry::GraphEnt(g) => {
            // Outside function_graph, Linux prints these through the
            // function_graph event printer; keep a readable fallback.
            let _ = write!(out, "--> ");
            write_ps(out, cfg.syms, g.func);
            let _ = writeln!(out, " ({})", g.depth);
        }
        Entry::GraphRet(g) => {
            let _ = write!(out, "<-- ");
            write_ps(out, cfg.syms, g.func);
            let _ = writeln!(
                out,
                " ({}) (start: {:x}  end: {:x}) over: {}",
                g.depth, g.calltime, g.rettime, g.depth
            );
        }
        Entry::CtxSwitch(c) => print_ctxwake(cfg, c, out),
        Entry::Event(ev) => {
            if !print_trace_event(cfg.syms, ev, out) {
                let _ = writeln!(out, "Unknown type {}", ev.ent.type_);
            }
        }
        Entry::Other(e) => {
            let _ = writeln!(out, "Unknown type {}", e.type_);
        }
    }
}

/// `trace_ctxwake_print()`: `pid:prio:state`, the delimiter (`==>` for a
/// switch, `  +` for a wake-up), the wakee's CPU, its `pid:prio:state` and
/// name.
pub(crate) fn print_ctxwake(cfg: &OutputConfig<'_>, c: &CtxSwitchEntry, out: &mut TraceSeq) {
    let delim = if c.is_wake() { "  +" } else { "==>" };
    let comm = find_cmdline(cfg.tasks, c.next_pid as i32);
    let _ = writeln!(
        out,
        " {:7}:{:3}:{} {} [{:03}] {:7}:{:3}:{} {}",
        c.prev_pid as i32,
        c.prev_prio,
        task_index_to_char(c.prev_state),
        delim,
        c.next_cpu as i32,
        c.next_pid as i32,
        c.next_prio,
        task_index_to_char(c.next_state),
        comm
    );
}

/// A trace event's text (`trace_raw_output_<name>()`: `trace_raw_output_prep`
/// prints the name and `": "`, then the `TP_printk` text and a newline).
/// Returns false, printing nothing, when no event has the record's type.
pub fn print_trace_event(syms: &dyn SymbolResolver, ev: &EventEntry, out: &mut TraceSeq) -> bool {
    let Some(call) = crate::trace_events::find_event(ev.ent.type_) else {
        return false;
    };
    out.push_str(call.name);
    out.push_str(": ");
    (call.print)(&ev.raw, out, syms);
    out.push('\n');
    true
}

/// `trace_find_mark()`: the overhead mark for a duration in ns, strictly
/// greater than each threshold: `$` 1 s, `@` 100 ms, `*` 10 ms, `#` 1 ms,
/// `!` 100 µs, `+` 10 µs, else a space.
pub fn trace_find_mark(d: u64) -> char {
    const MARKS: [(u64, char); 6] = [
        (1_000_000_000, '$'),
        (100_000_000, '@'),
        (10_000_000, '*'),
        (1_000_000, '#'),
        (100_000, '!'),
        (10_000, '+'),
    ];
    for (val, sym) in MARKS {
        if d > val {
            return sym;
        }
    }
    ' '
}
