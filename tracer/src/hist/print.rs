//! The `cat trigger` line of a hist trigger (`event_hist_trigger_print()`)
//! and the `cat hist` text (`hist_show()`, `hist_trigger_show()`,
//! `hist_trigger_entry_print()`), byte for byte as Linux prints them.

use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt::Write;

use super::{flags, sort::sort, HistField, HistTrigger, Source};
use crate::output::config::SymbolResolver;
use crate::tracing_map::Elt;

/// `hist_field_print()`: `name[.modifier][=buckets]`.
fn field(out: &mut String, f: &HistField) {
    out.push_str(&f.name);
    let m = [
        (flags::HEX, "hex"),
        (flags::SYM, "sym"),
        (flags::SYM_OFFSET, "sym-offset"),
        (flags::EXECNAME, "execname"),
        (flags::LOG2, "log2"),
        (flags::BUCKET, "buckets"),
        (flags::USECS, "usecs"),
    ]
    .iter()
    .find(|(bit, _)| f.flags & bit != 0);
    if let Some((_, name)) = m {
        out.push('.');
        out.push_str(name);
    }
    if f.flags & flags::BUCKET != 0 {
        let _ = write!(out, "={}", f.buckets);
    }
}

/// The trigger's line in `cat trigger` and in the hist header, with its
/// newline.
pub fn print(out: &mut String, t: &HistTrigger) {
    print_as(out, t, t.spec.filter.as_deref(), t.paused());
}

/// [`print`] of one event's use of a trigger whose table may be shared
/// (`name=`): that event's filter and paused state (Linux prints the
/// trigger data's `filter_str` and `paused`).
pub fn print_as(out: &mut String, t: &HistTrigger, filter: Option<&str>, paused: bool) {
    let s = &t.spec;
    out.push_str("hist:");
    if let Some(n) = &s.name {
        let _ = write!(out, "name={}:", n);
    }
    out.push_str("keys=");
    for (i, k) in s.keys.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        field(out, k);
    }
    out.push_str(":vals=hitcount");
    for v in &s.vals {
        out.push(',');
        field(out, v);
    }
    out.push_str(":sort=");
    for (i, k) in s.sort.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match k.field {
            0 => out.push_str("hitcount"),
            n if n <= s.vals.len() => field(out, &s.vals[n - 1]),
            n => field(out, &s.keys[n - 1 - s.vals.len()]),
        }
        if k.descending {
            out.push_str(".descending");
        }
    }
    let _ = write!(out, ":size={}", 1u32 << s.bits);
    if s.timestamps() {
        let _ = write!(out, ":clock={}", s.clock);
    }
    if let Some(f) = filter {
        let _ = write!(out, " if {}", f);
    }
    out.push_str(if paused { " [paused]" } else { " [active]" });
    out.push('\n');
}

/// A string key's bytes up to its first NUL.
fn key_str(e: &Elt<'_>, k: &HistField) -> String {
    let mut b = Vec::new();
    'words: for i in 0..k.key_words {
        for byte in e.key(k.key_off + i).to_le_bytes() {
            if byte == 0 {
                break 'words;
            }
            b.push(byte);
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// `%ps` / `%pS`: the symbol (with `+0xoff/0xsize` for `%pS`), or
/// `0x<hex>` when the address is unknown.
fn sym(syms: &dyn SymbolResolver, addr: u64, offset: bool) -> String {
    let mut s = String::new();
    match syms.lookup(addr) {
        Some((name, off, size)) if !name.is_empty() => {
            s.push_str(name);
            if offset {
                let _ = write!(s, "+0x{:x}/0x{:x}", off, size);
            }
        }
        _ => {
            let _ = write!(s, "0x{:x}", addr);
        }
    }
    s
}

/// `hist_trigger_print_key()`.
fn print_key(out: &mut String, t: &HistTrigger, e: &Elt<'_>, syms: &dyn SymbolResolver) {
    out.push_str("{ ");
    for (i, k) in t.spec.keys.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let v = e.key(k.key_off);
        let n = &k.name;
        let _ = if k.flags & flags::HEX != 0 {
            write!(out, "{}: {:x}", n, v)
        } else if k.flags & flags::SYM != 0 {
            write!(out, "{}: [{:x}] {:<45}", n, v, sym(syms, v, false))
        } else if k.flags & flags::SYM_OFFSET != 0 {
            write!(out, "{}: [{:x}] {:<55}", n, v, sym(syms, v, true))
        } else if k.flags & flags::EXECNAME != 0 {
            let mut c = [0u8; 16];
            c[..8].copy_from_slice(&e.private(0).to_le_bytes());
            c[8..].copy_from_slice(&e.private(1).to_le_bytes());
            let comm = crate::trace_events::comm_str(&c);
            write!(out, "{}: {:<16}[{:>10}]", n, comm, v)
        } else if k.flags & flags::LOG2 != 0 {
            write!(out, "{}: ~ 2^{:<2}", n, v)
        } else if k.flags & flags::BUCKET != 0 {
            write!(
                out,
                "{}: ~ {}-{}",
                n,
                v,
                v.wrapping_add(k.buckets).wrapping_sub(1)
            )
        } else if k.is_string() {
            write!(out, "{}: {:<50}", n, key_str(e, k))
        } else {
            write!(out, "{}: {:>10}", n, v)
        };
    }
    out.push_str(" }");
}

/// `hist_trigger_entry_print()`: the key, hitcount and the values.
fn print_entry(out: &mut String, t: &HistTrigger, e: &Elt<'_>, syms: &dyn SymbolResolver) {
    print_key(out, t, e, syms);
    let _ = write!(out, " hitcount: {:>10}", e.sum(0));
    for (i, v) in t.spec.vals.iter().enumerate() {
        let s = e.sum(i + 1);
        let _ = if v.flags & flags::HEX != 0 {
            write!(out, "  {}: {:>10x}", v.name, s)
        } else {
            write!(out, "  {}: {:>10}", v.name, s)
        };
    }
    out.push('\n');
}

/// Compares two entries on one sort key (`cmp_entries_sum()` /
/// `cmp_entries_key()` with the field's `cmp_fn`).
fn cmp_on(t: &HistTrigger, field: usize, descending: bool, a: &Elt<'_>, b: &Elt<'_>) -> Ordering {
    let nv = t.spec.vals.len();
    let o = if field <= nv {
        a.sum(field).cmp(&b.sum(field))
    } else {
        let k = &t.spec.keys[field - 1 - nv];
        let (x, y) = (a.key(k.key_off), b.key(k.key_off));
        match k.src {
            Source::StaticStr { .. } | Source::DynStr { .. } => key_str(a, k).cmp(&key_str(b, k)),
            // tracing_map_cmp_num(size, signed): the word cast to the
            // field's C type.
            Source::Num { size, signed, .. } => match (size, signed) {
                (1, true) => (x as i8).cmp(&(y as i8)),
                (1, false) => (x as u8).cmp(&(y as u8)),
                (2, true) => (x as i16).cmp(&(y as i16)),
                (2, false) => (x as u16).cmp(&(y as u16)),
                (4, true) => (x as i32).cmp(&(y as i32)),
                (4, false) => (x as u32).cmp(&(y as u32)),
                (_, true) => (x as i64).cmp(&(y as i64)),
                (_, false) => x.cmp(&y),
            },
            Source::Timestamp | Source::Cpu => x.cmp(&y),
        }
    };
    if descending {
        o.reverse()
    } else {
        o
    }
}

/// The entries in print order (`tracing_map_sort_entries()`): by key
/// bytes, then Linux's heapsort on the first sort key, then on the second within runs
/// that tie on the first (`sort_secondary()`).
fn sorted<'a>(t: &'a HistTrigger) -> Vec<Elt<'a>> {
    let mut v = t.map.entries();
    if v.len() < 2 {
        return v;
    }
    // detect_dups() first sorts by the key's bytes (memcmp), so the
    // order before the real sort does not depend on the slots.
    let kw = t.spec.key_words;
    sort(&mut v, |a, b| {
        (0..kw)
            .map(|i| a.key(i).swap_bytes().cmp(&b.key(i).swap_bytes()))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
    let k0 = t.spec.sort[0];
    sort(&mut v, |a, b| cmp_on(t, k0.field, k0.descending, a, b));
    if let Some(&k1) = t.spec.sort.get(1) {
        let n = v.len();
        let (mut start, mut n_sub) = (0, 1);
        for i in 0..n - 1 {
            if cmp_on(t, k0.field, k0.descending, &v[i], &v[i + 1]) == Ordering::Equal {
                n_sub += 1;
                if i < n - 2 {
                    continue;
                }
            }
            if n_sub < 2 {
                start = i + 1;
                n_sub = 1;
                continue;
            }
            sort(&mut v[start..start + n_sub], |a, b| {
                cmp_on(t, k1.field, k1.descending, a, b)
            });
            start = i + 1;
            n_sub = 1;
        }
    }
    v
}

/// One trigger's block of `cat hist` (`hist_trigger_show()` without the
/// separator).
pub fn show_one(out: &mut String, t: &HistTrigger, syms: &dyn SymbolResolver) {
    show_one_as(out, t, t.spec.filter.as_deref(), t.paused(), syms);
}

fn show_one_as(
    out: &mut String,
    t: &HistTrigger,
    filter: Option<&str>,
    paused: bool,
    syms: &dyn SymbolResolver,
) {
    out.push_str("# event histogram\n#\n# trigger info: ");
    print_as(out, t, filter, paused);
    out.push_str("#\n\n");
    let entries = sorted(t);
    for e in &entries {
        print_entry(out, t, e, syms);
    }
    let _ = write!(
        out,
        "\nTotals:\n    Hits: {}\n    Entries: {}\n    Dropped: {}\n",
        t.map.hits(),
        entries.len(),
        t.map.drops()
    );
}

/// The `events/SYSTEM/EVENT/hist` file: every hist trigger's block, two
/// newlines between blocks; nothing when there is none.
pub fn show<'a>(
    out: &mut String,
    triggers: impl IntoIterator<Item = &'a HistTrigger>,
    syms: &dyn SymbolResolver,
) {
    for (n, t) in triggers.into_iter().enumerate() {
        if n > 0 {
            out.push_str("\n\n");
        }
        show_one(out, t, syms);
    }
}

/// [`show`] of one event's triggers, each with that event's filter and
/// paused state (see [`print_as`]).
pub fn show_as<'a>(
    out: &mut String,
    triggers: impl IntoIterator<Item = (&'a HistTrigger, Option<&'a str>, bool)>,
    syms: &dyn SymbolResolver,
) {
    for (n, (t, filter, paused)) in triggers.into_iter().enumerate() {
        if n > 0 {
            out.push_str("\n\n");
        }
        show_one_as(out, t, filter, paused, syms);
    }
}
