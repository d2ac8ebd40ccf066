//! The definition parser (Linux: `__trace_kprobe_create`,
//! `traceprobe_parse_probe_arg` and friends, `dyn_event_release`'s
//! reading of `-:[GRP/]EVENT`). Every check, error text, caret position
//! and errno follows Linux 6.1; the comments name the Linux step.

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::*;

/// The kernel's symbol table as the parser needs it.
pub trait ProbeSymbols {
    /// How many symbols are called `name`, and the address of one of them
    /// (0 when none).
    fn lookup(&self, name: &str) -> (usize, u64);
}

/// Linux's `argv_split`: words separated by white space, no quoting.
pub fn argv_split(s: &str) -> Vec<&str> {
    s.split(|c: char| c.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Linux's `_parse_integer` with base 0 (`0x` hex, leading `0` octal,
/// else decimal) or 10: the value, or `EINVAL` (no digits, or a stray
/// character; one trailing newline is allowed) or `ERANGE` (overflow).
fn parse_u64(s: &str, base0: bool) -> Result<u64, Errno> {
    let s = s.strip_suffix('\n').unwrap_or(s);
    let (digits, radix) = if base0 {
        if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            (h, 16)
        } else if s.len() > 1 && s.starts_with('0') {
            (&s[1..], 8)
        } else {
            (s, 10)
        }
    } else {
        (s, 10)
    };
    if digits.is_empty() {
        return Err(Errno::EINVAL);
    }
    let mut v: u64 = 0;
    for c in digits.chars() {
        let d = c.to_digit(radix).ok_or(Errno::EINVAL)?;
        v = v
            .checked_mul(radix as u64)
            .and_then(|v| v.checked_add(d as u64))
            .ok_or(Errno::ERANGE)?;
    }
    Ok(v)
}

/// Linux's `kstrtoul(s, 0)`: an optional `+`, then [`parse_u64`].
pub fn kstrtoul(s: &str) -> Result<u64, Errno> {
    parse_u64(s.strip_prefix('+').unwrap_or(s), true)
}

/// `kstrtoul(s, 10)`.
fn kstrtoul10(s: &str) -> Result<u64, Errno> {
    parse_u64(s.strip_prefix('+').unwrap_or(s), false)
}

/// Linux's `kstrtol(s, 0)`: a signed value that fits an `i64`.
pub fn kstrtol(s: &str) -> Result<i64, Errno> {
    if let Some(neg) = s.strip_prefix('-') {
        let v = parse_u64(neg, true)?;
        if v > i64::MAX as u64 + 1 {
            return Err(Errno::ERANGE);
        }
        Ok((v as i64).wrapping_neg())
    } else {
        let v = kstrtoul(s)?;
        if v > i64::MAX as u64 {
            return Err(Errno::ERANGE);
        }
        Ok(v as i64)
    }
}

/// `kstrtouint(s, 0)`.
fn kstrtouint(s: &str) -> Result<u32, Errno> {
    let v = kstrtoul(s)?;
    u32::try_from(v).map_err(|_| Errno::ERANGE)
}

/// `simple_strtoul(s, &end, 0)`: the value of the leading digits and the
/// bytes consumed (lenient, as Linux's).
fn simple_strtoul(s: &str) -> (u64, usize) {
    let b = s.as_bytes();
    let (start, radix) =
        if b.len() > 2 && b[0] == b'0' && (b[1] | 0x20) == b'x' && b[2].is_ascii_hexdigit() {
            (2, 16)
        } else if b.first() == Some(&b'0') {
            (1, 8)
        } else {
            (0, 10)
        };
    let mut v: u64 = 0;
    let mut i = start;
    while i < b.len() {
        let Some(d) = (b[i] as char).to_digit(radix) else {
            break;
        };
        v = v.wrapping_mul(radix as u64).wrapping_add(d as u64);
        i += 1;
    }
    if radix == 8 && i == 1 {
        // A lone "0".
        return (0, 1);
    }
    (v, i)
}

/// Splits `SYM[+|-offs]` into the symbol and the offset text by this
/// kernel's rule (see the module doc): the whole word if it names a
/// symbol; else at the first `+`/`-` whose left part names a symbol; else
/// at the first `+`/`-` (Linux's `traceprobe_split_symbol_offset`). The
/// offset is `kstrtol`'s, errors included.
pub fn split_symbol<'a>(word: &'a str, syms: &dyn ProbeSymbols) -> Result<(&'a str, i64), Errno> {
    if syms.lookup(word).0 > 0 {
        return Ok((word, 0));
    }
    let cut = word
        .match_indices(['+', '-'])
        .map(|(i, _)| i)
        .find(|&i| syms.lookup(&word[..i]).0 > 0)
        .or_else(|| word.find(['+', '-']));
    match cut {
        Some(i) => Ok((&word[..i], kstrtol(&word[i..])?)),
        None => Ok((word, 0)),
    }
}

/// The first `:` that is not part of a `::` (the type separator of a
/// fetch argument, and Linux's `MOD:SYM` separator).
pub(crate) fn single_colon(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    (0..b.len())
        .find(|&i| b[i] == b':' && (i == 0 || b[i - 1] != b':') && b.get(i + 1) != Some(&b':'))
}

/// Argument-parsing flags (Linux: `TPARG_FL_*`).
#[derive(Clone, Copy)]
struct ArgFlags {
    is_return: bool,
    /// On a function's entry: `$argN` allowed.
    fentry: bool,
}

/// Builds errors for one definition (Linux's `trace_probe_log`).
struct Log<'a> {
    argv: &'a [String],
    index: usize,
}

impl Log<'_> {
    fn err(&self, offset: usize, err: TpErr) -> ProbeError {
        self.err_no(Errno::EINVAL, offset, err)
    }

    fn err_no(&self, errno: Errno, offset: usize, err: TpErr) -> ProbeError {
        ProbeError {
            errno,
            log: Some(log_entry(self.argv, self.index, offset, err)),
        }
    }
}

/// Parses a probe definition `p[:[GRP/]EVENT] SYM[+offs]|ADDR [FETCHARGS]`
/// or `r[MAXACTIVE][:[GRP/]EVENT] SYM[+0] [FETCHARGS]` (or `SYM%return`),
/// already split into words (Linux: `__trace_kprobe_create` up to the
/// registration). Whether the event exists, the instruction boundary and
/// the registration itself are the kernel's to check.
pub fn parse_probe(argv: &[&str], syms: &dyn ProbeSymbols) -> Result<TraceProbe, ProbeError> {
    let bare = || ProbeError::bare(Errno::EINVAL);
    let a0 = *argv.first().ok_or_else(bare)?;
    let mut is_return = match a0.as_bytes()[0] {
        b'r' => true,
        b'p' => false,
        _ => return Err(bare()),
    };
    if argv.len() < 2 {
        return Err(bare());
    }
    let owned: Vec<String> = argv.iter().map(|s| String::from(*s)).collect();
    let mut log = Log {
        argv: &owned,
        index: 0,
    };

    // The event part starts after the first ':' following the type.
    let event_at = a0[1..].find(':').map(|p| p + 2);
    let mut maxactive = 0u32;
    if a0.as_bytes().get(1).is_some_and(|c| c.is_ascii_digit()) {
        if !is_return {
            return Err(log.err(1, TpErr::MaxactNoKprobe));
        }
        let len = match event_at {
            Some(e) => e - 2,
            None => a0.len() - 1,
        };
        if len > MAX_EVENT_NAME_LEN - 1 {
            return Err(log.err(1, TpErr::BadMaxact));
        }
        match kstrtouint(&a0[1..1 + len]) {
            Ok(m) if m != 0 => maxactive = m,
            _ => return Err(log.err(1, TpErr::BadMaxact)),
        }
        if maxactive > KRETPROBE_MAXACTIVE_MAX {
            return Err(log.err(1, TpErr::MaxactTooBig));
        }
    }

    // An address, else a symbol.
    let mut fentry = false;
    let mut ret_flag = false;
    let target = match kstrtoul(argv[1]) {
        Ok(addr) => ProbeTarget::Addr(addr),
        Err(_) => {
            log.index = 1;
            let word = argv[1];
            if syms.lookup(word).0 == 0 && word.contains('/') && word.contains(':') {
                // A uprobe definition: not for kprobes.
                return Err(bare());
            }
            let mut symbol = word;
            if syms.lookup(word).0 == 0 {
                if let Some(p) = word.find('%') {
                    if &word[p..] == "%return" {
                        symbol = &word[..p];
                        is_return = true;
                    } else {
                        return Err(log.err(p, TpErr::BadAddrSuffix));
                    }
                }
            }
            let (name, offset) = match split_symbol(symbol, syms) {
                Ok((n, o)) if (0..=u32::MAX as i64).contains(&o) => (n, o as u64),
                _ => return Err(log.err(0, TpErr::BadProbeAddr)),
            };
            ret_flag = is_return;
            let (count, addr) = syms.lookup(name);
            // kprobe_on_func_entry(): only SYM+0 is a function entry.
            if count > 0 {
                if offset == 0 {
                    fentry = true;
                } else if is_return {
                    return Err(log.err(0, TpErr::BadRetprobe));
                }
            }
            if count > 1 {
                return Err(log.err_no(Errno::EADDRNOTAVAIL, 0, TpErr::NonUniqSymbol));
            } else if count == 0 {
                // Also `MOD:SYM`: this kernel cannot place a probe on a
                // module that is not loaded (module doc).
                return Err(log.err_no(Errno::ENOENT, 0, TpErr::BadProbeAddr));
            }
            ProbeTarget::Symbol {
                name: name.to_owned(),
                offset,
                addr,
            }
        }
    };

    log.index = 0;
    let mut group = String::from(KPROBE_EVENT_SYSTEM);
    let mut event = None;
    if let Some(at) = event_at {
        let (g, e) = parse_event_name(&a0[at..], at, &log)?;
        if let Some(g) = g {
            group = g;
        }
        event = e;
    }
    let event = event.unwrap_or_else(|| default_event_name(is_return, &target));

    let flags = ArgFlags {
        is_return: ret_flag,
        fentry,
    };
    let mut tp = TraceProbe {
        is_return,
        maxactive,
        group,
        event,
        target,
        args: Vec::new(),
        size: 0,
        argv: owned.clone(),
    };
    for (i, arg) in argv[2..].iter().take(MAX_TRACE_ARGS).enumerate() {
        log.index = i + 2;
        parse_probe_arg_named(&mut tp, i, arg, flags, &log)?;
    }
    Ok(tp)
}

/// `traceprobe_parse_event_name`: `[GRP/|GRP.]EVENT` starting at `offset`
/// in word 0. `(None, None)` parts are the defaults; `GRP/` alone keeps
/// the default event name.
fn parse_event_name(
    s: &str,
    mut offset: usize,
    log: &Log<'_>,
) -> Result<(Option<String>, Option<String>), ProbeError> {
    let slash = s.find('/').or_else(|| s.find('.'));
    let mut group = None;
    let mut event = s;
    if let Some(sl) = slash {
        if sl == 0 {
            return Err(log.err(offset, TpErr::NoGroupName));
        }
        if sl + 1 > MAX_EVENT_NAME_LEN {
            return Err(log.err(offset, TpErr::GroupTooLong));
        }
        let g = &s[..sl];
        if !is_good_system_name(g) {
            return Err(log.err(offset, TpErr::BadGroupName));
        }
        group = Some(String::from(g));
        event = &s[sl + 1..];
        offset += sl + 1;
    }
    if event.is_empty() {
        if slash.is_some() {
            return Ok((group, None));
        }
        return Err(log.err(offset, TpErr::NoEventName));
    } else if event.len() >= MAX_EVENT_NAME_LEN {
        return Err(log.err(offset, TpErr::EventTooLong));
    }
    if !is_good_name(event) {
        return Err(log.err(offset, TpErr::BadEventName));
    }
    Ok((group, Some(String::from(event))))
}

/// Field names no argument may take.
const RESERVED_FIELD_NAMES: [&str; 8] = [
    "common_type",
    "common_flags",
    "common_preempt_count",
    "common_pid",
    "common_tgid",
    "__probe_ip",
    "__probe_ret_ip",
    "__probe_func",
];

/// `traceprobe_parse_probe_arg`: `[NAME=]FETCHARG[:TYPE]` as argument `i`.
fn parse_probe_arg_named(
    tp: &mut TraceProbe,
    i: usize,
    arg: &str,
    flags: ArgFlags,
    log: &Log<'_>,
) -> Result<(), ProbeError> {
    let (name, body, body_off) = match arg.find('=') {
        Some(b) => {
            if b > MAX_ARG_NAME_LEN {
                return Err(log.err(0, TpErr::ArgNameTooLong));
            } else if b == 0 {
                return Err(log.err(0, TpErr::NoArgName));
            }
            (String::from(&arg[..b]), &arg[b + 1..], b + 1)
        }
        None => (format!("arg{}", i + 1), arg, 0),
    };
    if !is_good_name(&name) {
        return Err(log.err(0, TpErr::BadArgName));
    }
    if RESERVED_FIELD_NAMES.contains(&name.as_str()) || tp.args.iter().any(|a| a.name == name) {
        return Err(log.err(0, TpErr::UsedArgName));
    }
    let parg = parse_probe_arg_body(body, &mut tp.size, name, flags, body_off, log)?;
    tp.args.push(parg);
    Ok(())
}

/// A fetch program being built: Linux's fixed array of
/// `FETCH_INSN_MAX` instructions, the last one `END`, and the cursor.
struct Code {
    insns: Vec<FetchInsn>,
    at: usize,
}

impl Code {
    fn new() -> Code {
        let mut insns = vec![FetchInsn::Nop; FETCH_INSN_MAX];
        insns[FETCH_INSN_MAX - 1] = FetchInsn::End;
        Code { insns, at: 0 }
    }

    fn cur(&self) -> &FetchInsn {
        &self.insns[self.at]
    }

    fn set(&mut self, insn: FetchInsn) {
        self.insns[self.at] = insn;
    }

    /// `++code == end`: false when the program is full.
    fn advance(&mut self) -> bool {
        self.at += 1;
        self.at < FETCH_INSN_MAX - 1
    }

    /// `code++; if (code->op != FETCH_OP_NOP)`: false when there is no
    /// free slot.
    fn next_free(&mut self) -> bool {
        self.at += 1;
        self.at < FETCH_INSN_MAX && self.insns[self.at] == FetchInsn::Nop
    }
}

/// `traceprobe_parse_probe_arg_body`: the expression, its type and the
/// store/modify/loop stages.
fn parse_probe_arg_body(
    argv: &str,
    size: &mut u32,
    name: String,
    flags: ArgFlags,
    offset: usize,
    log: &Log<'_>,
) -> Result<ProbeArg, ProbeError> {
    if argv.len() > MAX_ARGSTR_LEN {
        return Err(log.err(offset, TpErr::ArgTooLong));
    } else if argv.is_empty() {
        return Err(log.err(offset, TpErr::NoArgBody));
    }
    let comm = String::from(argv);
    let mut arg = argv;
    // `t`: where the type starts (after the ':'), and the type's name.
    let mut t: Option<(usize, &str)> = None;
    let mut count = 0u32;
    if let Some(c) = single_colon(argv) {
        arg = &argv[..c];
        let tstr = &argv[c + 1..];
        let mut tname = tstr;
        if let Some(b) = tstr.find('[') {
            let t2 = c + 1 + b + 1; // after '['
            let inner = &argv[t2..];
            tname = &tstr[..b];
            match inner.find(']') {
                None => return Err(log.err(offset + t2 + inner.len(), TpErr::ArrayNoClose)),
                Some(t3) if t3 + 1 < inner.len() => {
                    return Err(log.err(offset + t2 + t3 + 1, TpErr::BadArraySuffix))
                }
                Some(t3) => {
                    match kstrtouint(&inner[..t3]) {
                        Ok(n) if n != 0 => count = n,
                        _ => return Err(log.err(offset + t2, TpErr::BadArrayNum)),
                    }
                    if count > MAX_ARRAY_LEN {
                        return Err(log.err(offset + t2, TpErr::ArrayTooBig));
                    }
                }
            }
        }
        t = Some((c + 1, tname));
    }
    let t_off = t.map_or(0, |(p, _)| p);

    let ty = if arg == "$comm" || arg == "$COMM" || arg.starts_with("\\\"") {
        // $comm and an immediate string are strings, never arrays.
        if count != 0 || t.is_some_and(|(_, n)| n != "string") {
            return Err(ProbeError::bare(Errno::EINVAL));
        }
        find_fetch_type(Some("string"))
    } else {
        find_fetch_type(t.map(|(_, n)| n))
    };
    let Some(ty) = ty else {
        return Err(log.err(offset + t_off, TpErr::BadType));
    };
    let arg_offset = *size;
    *size += ty.size * count.max(1);
    if *size > MAX_PROBE_EVENT_SIZE {
        return Err(log.err_no(Errno::E2BIG, offset, TpErr::EventTooBig));
    }

    let mut code = Code::new();
    parse_probe_arg(arg, &mut code, flags, offset, log)?;

    let mut dynamic = false;
    // Store operation.
    if ty.is_string() {
        if !matches!(
            code.cur(),
            FetchInsn::Deref(_)
                | FetchInsn::UDeref(_)
                | FetchInsn::Imm(_)
                | FetchInsn::Comm
                | FetchInsn::Data(_)
        ) {
            return Err(log.err(offset + t_off, TpErr::BadString));
        }
        if (matches!(
            code.cur(),
            FetchInsn::Imm(_) | FetchInsn::Comm | FetchInsn::Data(_)
        ) || count != 0)
            && !code.next_free()
        {
            return Err(log.err(offset, TpErr::TooManyOps));
        }
        let off = match code.cur() {
            FetchInsn::Deref(o) | FetchInsn::UDeref(o) => *o,
            _ => 0,
        };
        let user = matches!(code.cur(), FetchInsn::UDeref(_)) || ty.name == "ustring";
        code.set(if user {
            FetchInsn::StUstring { offset: off }
        } else {
            FetchInsn::StString { offset: off }
        });
        dynamic = true;
    } else if let FetchInsn::Deref(o) = *code.cur() {
        code.set(FetchInsn::StMem {
            offset: o,
            size: ty.size,
        });
    } else if let FetchInsn::UDeref(o) = *code.cur() {
        code.set(FetchInsn::StUmem {
            offset: o,
            size: ty.size,
        });
    } else {
        if !code.next_free() {
            return Err(log.err(offset, TpErr::TooManyOps));
        }
        code.set(FetchInsn::StRaw(ty.size));
    }
    let scode = code.cur().clone();
    // Modify operation: a bitfield.
    if let Some((tp, tname)) = t {
        if parse_bitfield(tname, ty, &mut code).is_err() {
            return Err(log.err(offset + tp, TpErr::BadBitfield));
        }
    }
    // Loop operation: an array.
    if count != 0 {
        if !matches!(
            scode,
            FetchInsn::StMem { .. } | FetchInsn::StString { .. } | FetchInsn::StUstring { .. }
        ) {
            return Err(log.err(offset + t_off, TpErr::BadString));
        }
        if !code.next_free() {
            return Err(log.err(offset, TpErr::TooManyOps));
        }
        code.set(FetchInsn::LpArray(count));
    }
    code.at += 1;
    code.set(FetchInsn::End);
    code.insns.truncate(code.at + 1);
    Ok(ProbeArg {
        name,
        comm,
        ty,
        count,
        offset: arg_offset,
        dynamic,
        code: code.insns,
    })
}

/// `__parse_bitfield_probe_arg`: `b<W>@<O>/<C>` adds a shift pair.
fn parse_bitfield(bf: &str, ty: &FetchType, code: &mut Code) -> Result<(), ()> {
    let Some(rest) = bf.strip_prefix('b') else {
        return Ok(());
    };
    let (bw, n) = simple_strtoul(rest);
    let rest = &rest[n..];
    if bw == 0 || !rest.starts_with('@') {
        return Err(());
    }
    let rest = &rest[1..];
    let (bo, n) = simple_strtoul(rest);
    if n == 0 || !rest[n..].starts_with('/') {
        return Err(());
    }
    if !code.next_free() {
        return Err(());
    }
    let bits = ty.size as u64 * 8;
    if bits < bw.saturating_add(bo) {
        return Err(());
    }
    code.set(FetchInsn::ModBf {
        basesize: ty.size as u8,
        lshift: (bits - (bw + bo)) as u8,
        rshift: (bits - bw) as u8,
    });
    Ok(())
}

/// `parse_probe_vars`: `$retval`, `$stack`, `$stackN`, `$comm`, `$argN`.
fn parse_probe_vars(
    arg: &str,
    code: &mut Code,
    flags: ArgFlags,
    offs: usize,
    log: &Log<'_>,
) -> Result<(), ProbeError> {
    let bad_var = || log.err(offs, TpErr::BadVar);
    if arg == "retval" {
        if flags.is_return {
            code.set(FetchInsn::Retval);
            Ok(())
        } else {
            Err(log.err(offs, TpErr::RetvalOnProbe))
        }
    } else if let Some(rest) = arg.strip_prefix("stack") {
        if rest.is_empty() {
            code.set(FetchInsn::StackP);
            Ok(())
        } else if rest.as_bytes()[0].is_ascii_digit() {
            let n = kstrtoul10(rest).map_err(|_| bad_var())?;
            if n > PARAM_MAX_STACK {
                return Err(log.err(offs, TpErr::BadStackNum));
            }
            code.set(FetchInsn::Stack(n as u32));
            Ok(())
        } else {
            Err(bad_var())
        }
    } else if arg == "comm" || arg == "COMM" {
        code.set(FetchInsn::Comm);
        Ok(())
    } else if let Some(rest) = arg
        .strip_prefix("arg")
        .filter(|_| flags.fentry && !flags.is_return)
    {
        let n = kstrtoul10(rest).map_err(|_| bad_var())?;
        if n == 0 || n > PARAM_MAX_STACK {
            return Err(log.err(offs, TpErr::BadArgNum));
        }
        code.set(FetchInsn::Arg(n as u32 - 1));
        Ok(())
    } else {
        Err(bad_var())
    }
}

/// `parse_probe_arg`: one fetch expression, recursively for
/// dereferences; `offs` is where `arg` starts in its word.
fn parse_probe_arg(
    arg: &str,
    code: &mut Code,
    flags: ArgFlags,
    offs: usize,
    log: &Log<'_>,
) -> Result<(), ProbeError> {
    let b = arg.as_bytes();
    match b.first() {
        Some(b'$') => parse_probe_vars(&arg[1..], code, flags, offs, log)?,
        Some(b'%') => match REG_NAMES.iter().position(|r| *r == &arg[1..]) {
            Some(i) => code.set(FetchInsn::Reg(i as u8)),
            None => return Err(log.err(offs, TpErr::BadRegName)),
        },
        Some(b'@') => {
            if b.get(1).is_some_and(|c| c.is_ascii_digit()) {
                match kstrtoul(&arg[1..]) {
                    Ok(a) => code.set(FetchInsn::Imm(a)),
                    Err(e) => return Err(log.err_no(e, offs, TpErr::BadMemAddr)),
                }
            } else if b.get(1) == Some(&b'+') {
                return Err(log.err(offs, TpErr::FileOnKprobe));
            } else {
                code.set(FetchInsn::Symbol(String::from(&arg[1..])));
                if !code.advance() {
                    return Err(log.err(offs, TpErr::TooManyOps));
                }
                code.set(FetchInsn::Imm(0));
            }
            if !code.advance() {
                return Err(log.err(offs, TpErr::TooManyOps));
            }
            code.set(FetchInsn::Deref(0));
        }
        Some(b'+') | Some(b'-') => {
            let mut s = String::from(arg);
            let user = b.get(1) == Some(&b'u');
            if user {
                s.remove(1);
            }
            if s.starts_with('+') {
                s.remove(0);
            }
            let Some(open) = s.find('(') else {
                return Err(log.err(offs, TpErr::DerefNeedBrace));
            };
            let offset = match kstrtol(&s[..open]) {
                Ok(o) => o,
                Err(e) => return Err(log.err_no(e, offs, TpErr::BadDerefOffs)),
            };
            let offs = offs + open + 1 + usize::from(!s.starts_with('-'));
            let inner = &s[open + 1..];
            let Some(close) = inner.rfind(')') else {
                return Err(log.err(offs + inner.len(), TpErr::DerefOpenBrace));
            };
            parse_probe_arg(&inner[..close], code, flags, offs, log)?;
            if matches!(code.cur(), FetchInsn::Comm | FetchInsn::Data(_)) {
                return Err(log.err(offs, TpErr::CommCantDeref));
            }
            if !code.advance() {
                return Err(log.err(offs, TpErr::TooManyOps));
            }
            code.set(if user {
                FetchInsn::UDeref(offset)
            } else {
                FetchInsn::Deref(offset)
            });
        }
        Some(b'\\') => {
            if b.get(1) == Some(&b'"') {
                let s = &arg[2..];
                if !s.ends_with('"') {
                    return Err(log.err(offs + 2 + s.len(), TpErr::ImmstrNoClose));
                }
                let mut data = s.as_bytes()[..s.len() - 1].to_vec();
                data.push(0);
                code.set(FetchInsn::Data(data));
            } else {
                let s = &arg[1..];
                let v = match s.as_bytes().first() {
                    Some(c) if c.is_ascii_digit() => kstrtoul(s),
                    Some(b'-') => kstrtol(s).map(|v| v as u64),
                    Some(b'+') => kstrtol(&s[1..]).map(|v| v as u64),
                    _ => Err(Errno::EINVAL),
                };
                match v {
                    Ok(v) => code.set(FetchInsn::Imm(v)),
                    Err(e) => return Err(log.err_no(e, offs + 1, TpErr::BadImm)),
                }
            }
        }
        _ => {}
    }
    if *code.cur() == FetchInsn::Nop {
        return Err(log.err(offs, TpErr::BadFetchArg));
    }
    Ok(())
}

/// A removal `-:[GRP/]EVENT [SYM ARGS...]` (Linux: `dyn_event_release`):
/// an empty `event` with a group removes the whole group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteSpec {
    pub system: Option<String>,
    pub event: String,
    /// The words after the name, which must match the probe's head.
    pub words: Vec<String>,
}

impl DeleteSpec {
    /// Whether the probe `tp` is to be removed.
    pub fn matches(&self, tp: &TraceProbe) -> bool {
        let words: Vec<&str> = self.words.iter().map(|s| s.as_str()).collect();
        (self.event.is_empty() || tp.event == self.event)
            && self.system.as_ref().is_none_or(|s| *s == tp.group)
            && tp.match_command_head(&words)
    }
}

/// Parses a removal; `EINVAL` for `-` without `:` or without any name.
pub fn parse_delete(raw: &str) -> Result<DeleteSpec, Errno> {
    let argv = argv_split(raw);
    let a0 = *argv.first().ok_or(Errno::EINVAL)?;
    let event = if let Some(rest) = a0.strip_prefix('-') {
        rest.strip_prefix(':').ok_or(Errno::EINVAL)?
    } else {
        let p = a0.find(':').ok_or(Errno::EINVAL)?;
        &a0[p + 1..]
    };
    let (system, event) = match event.find('/') {
        Some(p) => (Some(String::from(&event[..p])), &event[p + 1..]),
        None => (None, event),
    };
    if system.is_none() && event.is_empty() {
        return Err(Errno::EINVAL);
    }
    Ok(DeleteSpec {
        system,
        event: String::from(event),
        words: argv[1..].iter().map(|s| String::from(*s)).collect(),
    })
}
