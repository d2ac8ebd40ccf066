//! A probe event's `format` file fields, its `print fmt` and its text in
//! `trace` (Linux: `__set_print_fmt`, `traceprobe_define_arg_fields`,
//! `kprobe_event_define_fields`, `print_kprobe_event`,
//! `print_kretprobe_event` and `print_probe_args`).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use super::{PrintKind, ProbeArg, TraceProbe};
use crate::output::config::SymbolResolver;
use crate::output::format::write_sym;
use crate::output::seq::TraceSeq;

/// One field as the `format` file lists it: C type, name, offset, size,
/// signed.
pub type FieldDesc = (String, String, u32, u32, bool);

/// The probe's own fields and its args', after the common header.
pub fn fields(tp: &TraceProbe) -> Vec<FieldDesc> {
    let mut v = Vec::new();
    if tp.is_return {
        v.push(("unsigned long".into(), "__probe_func".into(), 8, 8, false));
        v.push((
            "unsigned long".into(),
            "__probe_ret_ip".into(),
            16,
            8,
            false,
        ));
    } else {
        v.push(("unsigned long".into(), "__probe_ip".into(), 8, 8, false));
    }
    let base = tp.args_offset();
    for a in &tp.args {
        v.push((
            a.field_type(),
            a.name.clone(),
            base + a.offset,
            a.field_size(),
            a.ty.signed,
        ));
    }
    v
}

/// The `print fmt:` text (Linux: `__set_print_fmt`).
pub fn print_fmt(tp: &TraceProbe) -> String {
    let (fmt, arg) = if tp.is_return {
        ("(%lx <- %lx)", ", REC->__probe_func, REC->__probe_ret_ip")
    } else {
        ("(%lx)", ", REC->__probe_ip")
    };
    let mut s = format!("\"{}", fmt);
    for a in &tp.args {
        let _ = write!(s, " {}=", a.name);
        if a.count > 0 {
            let _ = write!(s, "{{{}", a.ty.fmt);
            for _ in 1..a.count {
                let _ = write!(s, ",{}", a.ty.fmt);
            }
            s.push('}');
        } else {
            s.push_str(a.ty.fmt);
        }
    }
    let _ = write!(s, "\"{}", arg);
    for a in &tp.args {
        if a.count > 0 {
            for j in 0..a.count {
                if a.ty.is_string() {
                    let _ = write!(s, ", __get_str({}[{}])", a.name, j);
                } else {
                    let _ = write!(s, ", REC->{}[{}]", a.name, j);
                }
            }
        } else if a.ty.is_string() {
            let _ = write!(s, ", __get_str({})", a.name);
        } else {
            let _ = write!(s, ", REC->{}", a.name);
        }
    }
    s
}

fn le(rec: &[u8], off: usize, size: usize) -> Option<u64> {
    let b = rec.get(off..off + size)?;
    let mut v = [0u8; 8];
    v[..size].copy_from_slice(b);
    Some(u64::from_le_bytes(v))
}

/// One value of `a`'s type at `off` in the record (Linux's
/// `print_type_*` functions).
fn print_one(out: &mut TraceSeq, a: &ProbeArg, rec: &[u8], off: usize, syms: &dyn SymbolResolver) {
    let size = a.ty.size as usize;
    let Some(v) = le(rec, off, size) else {
        return;
    };
    match a.ty.kind {
        PrintKind::Unsigned => {
            let _ = write!(out, "{}", v);
        }
        PrintKind::Signed => {
            let sh = 64 - 8 * size as u32;
            let _ = write!(out, "{}", ((v << sh) as i64) >> sh);
        }
        PrintKind::Hex => {
            let _ = write!(out, "0x{:x}", v);
        }
        PrintKind::Symbol => {
            // %pS: sym+off/size, or the address in hex.
            if v == 0 || syms.lookup(v).is_none() {
                let _ = write!(out, "0x{:x}", v);
            } else {
                write_sym(out, syms, v, true);
            }
        }
        PrintKind::String => {
            let loc = v as u32;
            if loc >> 16 == 0 {
                out.push_str("(fault)");
            } else {
                let s = crate::trace_events::get_str(rec, loc);
                let _ = write!(out, "\"{}\"", s);
            }
        }
    }
}

/// ` name=value` per argument (Linux: `print_probe_args`).
pub fn print_probe_args(
    out: &mut TraceSeq,
    tp: &TraceProbe,
    rec: &[u8],
    syms: &dyn SymbolResolver,
) {
    let base = tp.args_offset() as usize;
    for a in &tp.args {
        let _ = write!(out, " {}=", a.name);
        let off = base + a.offset as usize;
        if a.count == 0 {
            print_one(out, a, rec, off, syms);
            continue;
        }
        out.push('{');
        for j in 0..a.count as usize {
            print_one(out, a, rec, off + j * a.ty.size as usize, syms);
            out.push(if j == a.count as usize - 1 { '}' } else { ',' });
        }
    }
}

/// The text after `NAME: ` of a record (Linux: `print_kprobe_event`,
/// `print_kretprobe_event`): `(sym+0x4/0x90) a=1` or
/// `(caller+0x1c/0x60 <- sym) a=1`.
pub fn print_event(out: &mut TraceSeq, tp: &TraceProbe, rec: &[u8], syms: &dyn SymbolResolver) {
    out.push('(');
    if tp.is_return {
        let func = le(rec, 8, 8).unwrap_or(0);
        let ret_ip = le(rec, 16, 8).unwrap_or(0);
        put_ip_sym(out, syms, ret_ip, true);
        out.push_str(" <- ");
        put_ip_sym(out, syms, func, false);
    } else {
        put_ip_sym(out, syms, le(rec, 8, 8).unwrap_or(0), true);
    }
    out.push(')');
    print_probe_args(out, tp, rec, syms);
}

/// The function a hijacked return goes through (the arch's
/// `return_to_handler`, this kernel's rethook trampoline).
pub const RETHOOK_TRAMPOLINE: &str = "return_to_handler";

/// `seq_print_ip_sym` without `sym-addr`: `0` for a null address, and
/// Linux's `[unknown/kretprobe'd]` for the return trampoline (Linux:
/// `kretprobed()`): a return probe's return address is the trampoline when
/// another return hook was placed on the same call before it.
fn put_ip_sym(out: &mut TraceSeq, syms: &dyn SymbolResolver, ip: u64, offset: bool) {
    if ip == 0 {
        out.push('0');
    } else if matches!(syms.lookup(ip), Some((RETHOOK_TRAMPOLINE, 0, _))) {
        out.push_str("[unknown/kretprobe'd]");
    } else {
        write_sym(out, syms, ip, offset);
    }
}
