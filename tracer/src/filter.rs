//! Function filters: `set_ftrace_filter`, `set_ftrace_notrace`,
//! `set_graph_function`, `set_graph_notrace` and `set_ftrace_pid`, with
//! Linux 6.6's syntax and read-back text (kernel/trace/ftrace.c:
//! `filter_parse_regex()`, `ftrace_match()`, `match_records()`,
//! `ftrace_process_regex()`, the traceon/traceoff/stacktrace probes of
//! trace_functions.c, `ftrace_graph_set_hash()`; lib/glob.c `glob_match()`;
//! trace.c `trace_pid_write()`).
//!
//! The filters work on record *indexes*: the caller passes the function
//! names in record order (the order of `available_filter_functions`, i.e.
//! by address) through [`FuncNames`], and a filter is a [`RecSet`] of those
//! indexes.
//!
//! Each write is transactional: all its whitespace-separated tokens are
//! applied to a copy, and the copy replaces the filter only if every token
//! succeeded. (Linux applies tokens one by one as `write()` consumes them
//! and installs the new hash when the file is closed, even after an error;
//! here a failed write changes nothing.) Opening with `O_TRUNC` (`>`) starts
//! from an empty set; appending (`>>`) from the current one. Probe commands
//! (`func:traceoff[:N]`...) are not affected by truncation, as in Linux.
//!
//! Rust symbol names contain `::`, which Linux would read as command
//! separators. Here a command separator is a single `:` that is not part of
//! a `::` pair, so `kernel::fs::read` is a plain name and
//! `kernel::fs::*:traceoff:5` is a command.
//!
//! The module form `<func-glob>:mod:<module-glob>` treats a Rust path as
//! module + function: for `kernel::fs::vfs::read` the module is
//! `kernel::fs::vfs` and the function `read`. The module glob matches the
//! module path (a plain name also matches its submodules, so `kernel::fs`
//! selects `kernel::fs::vfs::read`), the function glob matches the last
//! path segment, `!` before the module excludes it (`*:mod:!kernel::fs`),
//! and an empty module glob (`*`) selects every function inside any module
//! (`!*`: only top-level functions), as Linux's blank module does.

use alloc::collections::BTreeSet;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::errno::Errno;
use crate::options::parse_kstrtoul;

/// Function names in record order.
pub trait FuncNames {
    fn count(&self) -> usize;
    fn name(&self, index: usize) -> &str;
}

impl FuncNames for &[&str] {
    fn count(&self) -> usize {
        self.len()
    }
    fn name(&self, index: usize) -> &str {
        self[index]
    }
}

impl FuncNames for &[String] {
    fn count(&self) -> usize {
        self.len()
    }
    fn name(&self, index: usize) -> &str {
        &self[index]
    }
}

impl FuncNames for alloc::vec::Vec<&str> {
    fn count(&self) -> usize {
        self.len()
    }
    fn name(&self, index: usize) -> &str {
        self[index]
    }
}

impl FuncNames for alloc::vec::Vec<String> {
    fn count(&self) -> usize {
        self.len()
    }
    fn name(&self, index: usize) -> &str {
        &self[index]
    }
}

/// A set of record indexes (a bitmap).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecSet {
    words: Vec<u64>,
}

impl RecSet {
    pub fn new() -> Self {
        RecSet { words: Vec::new() }
    }
    pub fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    pub fn insert(&mut self, i: usize) {
        if self.words.len() <= i / 64 {
            self.words.resize(i / 64 + 1, 0);
        }
        self.words[i / 64] |= 1 << (i % 64);
    }
    pub fn remove(&mut self, i: usize) {
        if let Some(w) = self.words.get_mut(i / 64) {
            *w &= !(1 << (i % 64));
        }
    }
    pub fn clear(&mut self) {
        self.words.clear();
    }
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
    /// Indexes in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            (0..64)
                .filter(move |b| w & (1u64 << b) != 0)
                .map(move |b| wi * 64 + b)
        })
    }
}

/// Linux's `glob_match()` (lib/glob.c): `*`, `?`, `[abc]`, `[a-z]`,
/// `[!a]`, `\x`; a malformed class matches literally.
pub fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    let at = |v: &[u8], i: usize| v.get(i).copied().unwrap_or(0);
    let (mut p, mut si) = (0usize, 0usize);
    let mut back: Option<(usize, usize)> = None;
    loop {
        let c = at(s, si);
        si += 1;
        let d = at(pat, p);
        p += 1;
        let mut literal = None;
        let mut mismatch = false;
        match d {
            b'?' => {
                if c == 0 {
                    return false;
                }
            }
            b'*' => {
                if at(pat, p) == 0 {
                    return true;
                }
                si -= 1;
                back = Some((p, si));
            }
            b'[' => {
                let inverted = at(pat, p) == b'!';
                let mut class = p + inverted as usize;
                let mut a = at(pat, class);
                class += 1;
                let mut matched = false;
                let mut malformed = false;
                loop {
                    let mut b = a;
                    if a == 0 {
                        malformed = true;
                        break;
                    }
                    if at(pat, class) == b'-' && at(pat, class + 1) != b']' {
                        b = at(pat, class + 1);
                        if b == 0 {
                            malformed = true;
                            break;
                        }
                        class += 2;
                    }
                    matched |= a <= c && c <= b;
                    a = at(pat, class);
                    class += 1;
                    if a == b']' {
                        break;
                    }
                }
                if malformed {
                    literal = Some(b'[');
                } else if matched == inverted {
                    mismatch = true;
                } else {
                    p = class;
                }
            }
            b'\\' => {
                literal = Some(at(pat, p));
                p += 1;
            }
            _ => literal = Some(d),
        }
        if let Some(d) = literal {
            if c == d {
                if d == 0 {
                    return true;
                }
                continue;
            }
            mismatch = true;
        }
        if mismatch {
            match back {
                Some((bp, bs)) if c != 0 => {
                    p = bp;
                    si = bs + 1;
                    back = Some((bp, bs + 1));
                }
                _ => return false,
            }
        }
    }
}

/// How a pattern matches (`enum regex_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchType {
    /// Exact name.
    Full,
    /// `foo*`: prefix.
    FrontOnly,
    /// `*foo*`: substring.
    MiddleOnly,
    /// `*foo`: suffix.
    EndOnly,
    /// Any other use of `*`, or `?`, `[`, `\`: [`glob_match`].
    Glob,
    /// A number: 1-based line of `available_filter_functions`.
    Index,
}

/// A parsed pattern (`struct ftrace_glob`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FtraceGlob<'a> {
    pub ty: MatchType,
    pub search: &'a str,
    /// The pattern started with `!`.
    pub not: bool,
}

/// `filter_parse_regex()`.
pub fn filter_parse_regex(buff: &str) -> FtraceGlob<'_> {
    let (not, buff) = match buff.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, buff),
    };
    let bytes = buff.as_bytes();
    if bytes.first().is_some_and(|c| c.is_ascii_digit()) {
        return FtraceGlob {
            ty: MatchType::Index,
            search: buff,
            not,
        };
    }
    let mut ty = MatchType::Full;
    let mut end = buff.len();
    for (i, &c) in bytes.iter().enumerate() {
        if c == b'*' {
            if i == 0 {
                ty = MatchType::EndOnly;
            } else if i == bytes.len() - 1 {
                ty = if ty == MatchType::EndOnly {
                    MatchType::MiddleOnly
                } else {
                    MatchType::FrontOnly
                };
                end = i;
                break;
            } else {
                return FtraceGlob {
                    ty: MatchType::Glob,
                    search: buff,
                    not,
                };
            }
        } else if matches!(c, b'[' | b'?' | b'\\') {
            return FtraceGlob {
                ty: MatchType::Glob,
                search: buff,
                not,
            };
        }
    }
    let start = if bytes.first() == Some(&b'*') { 1 } else { 0 };
    let search = if start <= end { &buff[start..end] } else { "" };
    FtraceGlob { ty, search, not }
}

/// `ftrace_match()`: does `name` match the parsed pattern? (`Index`
/// patterns match no name.)
pub fn ftrace_match(name: &str, g: &FtraceGlob<'_>) -> bool {
    match g.ty {
        MatchType::Full => name == g.search,
        MatchType::FrontOnly => name.starts_with(g.search),
        MatchType::MiddleOnly => contains_bytes(name.as_bytes(), g.search.as_bytes()),
        MatchType::EndOnly => name.ends_with(g.search),
        MatchType::Glob => glob_match(g.search.as_bytes(), name.as_bytes()),
        MatchType::Index => false,
    }
}

/// Whether `needle` occurs in `hay` (Linux's `strstr` for `*foo*`).
///
/// Finds each occurrence of the needle's first byte eight bytes at a time
/// (the "has a zero byte" word trick on `hay ^ first`, as a word-at-a-time
/// `memchr` does) and compares the rest only there. Its cost follows the
/// name's length, not its letters: `core`'s `str::contains` (Two-Way)
/// prepares the needle on every call and skips less when the name shares
/// the needle's letters, so a glob over 35,000 generated names cost more
/// per name than over the kernel's own (BENCHMARKS.md, "Costs per call
/// site at Linux's size").
pub fn contains_bytes(hay: &[u8], needle: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    if hay.len() < needle.len() {
        return false;
    }
    // Candidates start at 0..=last.
    let last = hay.len() - needle.len();
    let matches_at = |i: usize| hay[i + 1..i + needle.len()] == *rest;
    let pattern = LO * u64::from(first);
    let mut i = 0;
    while i + 8 <= last + 1 {
        let word = u64::from_le_bytes(hay[i..i + 8].try_into().expect("8 bytes"));
        let x = word ^ pattern;
        // A bit set in each byte of `x` that is 0 (and possibly above the
        // lowest such byte in bytes that are not: checked below).
        let mut zeros = x.wrapping_sub(LO) & !x & HI;
        while zeros != 0 {
            let at = i + (zeros.trailing_zeros() / 8) as usize;
            if hay[at] == first && matches_at(at) {
                return true;
            }
            zeros &= zeros - 1;
        }
        i += 8;
    }
    (i..=last).any(|at| hay[at] == first && matches_at(at))
}

/// `simple_strtoul(s, NULL, 0)`: the leading number (auto base), 0 if none.
fn simple_strtoul(s: &str) -> u64 {
    let b = s.as_bytes();
    let (base, mut i) = if b.len() > 1
        && b[0] == b'0'
        && (b[1] | 0x20) == b'x'
        && b.get(2).is_some_and(|c| c.is_ascii_hexdigit())
    {
        (16, 2)
    } else if b.first() == Some(&b'0') {
        (8, 1)
    } else {
        (10, 0)
    };
    let mut v: u64 = 0;
    while let Some(d) = b.get(i).and_then(|&c| (c as char).to_digit(base)) {
        v = v.wrapping_mul(base as u64).wrapping_add(d as u64);
        i += 1;
    }
    v
}

/// Splits a Rust path into (module, function): the part before the last
/// `::` and the rest.
pub fn split_module(name: &str) -> (&str, &str) {
    match name.rfind("::") {
        Some(i) => (&name[..i], &name[i + 2..]),
        None => ("", name),
    }
}

/// Module test for `:mod:` (see the module docs).
fn module_matches(module: &str, g: &FtraceGlob<'_>) -> bool {
    if ftrace_match(module, g) {
        return true;
    }
    // A plain module name also selects its submodules.
    g.ty == MatchType::Full
        && module.len() > g.search.len()
        && module.starts_with(g.search)
        && module[g.search.len()..].starts_with("::")
}

/// `ftrace_match_record()` with our module rules.
fn match_record(name: &str, func_g: &FtraceGlob<'_>, mod_g: Option<&FtraceGlob<'_>>) -> bool {
    if let Some(m) = mod_g {
        let (module, leaf) = split_module(name);
        let has_module = !module.is_empty();
        if m.search.is_empty() {
            // Blank module glob: modname xor exclude.
            if m.not == has_module {
                return false;
            }
        } else {
            let mod_matches = has_module && module_matches(module, m);
            if mod_matches == m.not {
                return false;
            }
        }
        if func_g.search.is_empty() {
            return true;
        }
        return ftrace_match(leaf, func_g);
    }
    ftrace_match(name, func_g)
}

/// `match_records()`: add (or with `!` remove) every record matching
/// `func` (and `module`). Returns whether anything matched.
fn match_records(
    hash: &mut RecSet,
    funcs: &dyn FuncNames,
    func: &str,
    module: Option<&str>,
) -> bool {
    let func_g = filter_parse_regex(func);
    let mod_g = module.map(filter_parse_regex);
    let clear = func_g.not;
    if func_g.ty == MatchType::Index {
        let index = simple_strtoul(func_g.search);
        if index == 0 || index > funcs.count() as u64 {
            return false;
        }
        let i = (index - 1) as usize;
        if clear {
            hash.remove(i);
        } else {
            hash.insert(i);
        }
        return true;
    }
    let mut found = false;
    for i in 0..funcs.count() {
        if match_record(funcs.name(i), &func_g, mod_g.as_ref()) {
            if clear {
                hash.remove(i);
            } else {
                hash.insert(i);
            }
            found = true;
        }
    }
    found
}

/// Splits `func:cmd:param` at single colons (a `::` stays in the name).
/// Returns the function part and, if present, the command and the rest.
pub fn split_command(tok: &str) -> (&str, Option<(&str, Option<&str>)>) {
    fn single_colon(s: &str) -> Option<usize> {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b':' {
                if b.get(i + 1) == Some(&b':') {
                    i += 2;
                    continue;
                }
                return Some(i);
            }
            i += 1;
        }
        None
    }
    let Some(i) = single_colon(tok) else {
        return (tok, None);
    };
    let func = &tok[..i];
    let rest = &tok[i + 1..];
    // The command itself never contains "::"; the parameter is the rest.
    match rest.find(':') {
        Some(j) => (func, Some((&rest[..j], Some(&rest[j + 1..])))),
        None => (func, Some((rest, None))),
    }
}

/// The probe commands of `set_ftrace_filter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeCmd {
    /// `func:traceon[:N]`: turn tracing on when func is hit.
    Traceon,
    /// `func:traceoff[:N]`: turn tracing off when func is hit.
    Traceoff,
    /// `func:stacktrace[:N]`: record a stack trace when func is hit.
    Stacktrace,
}

impl ProbeCmd {
    pub fn name(self) -> &'static str {
        match self {
            ProbeCmd::Traceon => "traceon",
            ProbeCmd::Traceoff => "traceoff",
            ProbeCmd::Stacktrace => "stacktrace",
        }
    }
    fn from_name(s: &str) -> Option<ProbeCmd> {
        match s {
            "traceon" => Some(ProbeCmd::Traceon),
            "traceoff" => Some(ProbeCmd::Traceoff),
            "stacktrace" => Some(ProbeCmd::Stacktrace),
            _ => None,
        }
    }
}

/// One registered probe (`struct ftrace_func_probe`): a command, counted
/// or not (Linux registers `traceon` and `traceon:N` as different probe
/// ops), and the functions it is attached to with their remaining counts.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Probe {
    cmd: ProbeCmd,
    counted: bool,
    /// One per function, sorted by record index.
    entries: Vec<ProbeEntry>,
}

/// A probe on one function (Linux: the probe's entry in its `ftrace_hash`
/// and the count kept in its `ftrace_func_mapper`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ProbeEntry {
    rec: usize,
    /// Remaining count (-1: none given).
    count: i64,
    /// Unique over every filter and copy: which registration this entry
    /// comes from, so that an edited copy can tell an entry it kept from
    /// one registered again (see [`FtraceFilter::keep_live_counts`]).
    id: u64,
}

/// The source of [`ProbeEntry::id`].
static NEXT_PROBE_ID: AtomicU64 = AtomicU64::new(1);

/// What the probes on a function ask the tracer to do when it is hit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeActions {
    pub tracing_on: bool,
    pub tracing_off: bool,
    pub stacktrace: bool,
}

/// Which of the two regex files of the global ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegexFile {
    /// `set_ftrace_filter`: functions to trace (empty = all) and probes.
    Filter,
    /// `set_ftrace_notrace`: functions never traced.
    Notrace,
}

/// The global function filter: `set_ftrace_filter`, `set_ftrace_notrace`
/// and the probes registered through `set_ftrace_filter`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FtraceFilter {
    pub filter: RecSet,
    pub notrace: RecSet,
    /// Newest probe first (Linux adds to the head of `tr->func_probes`).
    probes: Vec<Probe>,
}

/// Splits a write into tokens at ASCII whitespace (`trace_get_user()`).
fn tokens(input: &[u8]) -> Result<impl Iterator<Item = &str>, Errno> {
    let text = core::str::from_utf8(input).map_err(|_| Errno::EINVAL)?;
    Ok(text
        .split(|c: char| c.is_ascii_whitespace())
        .filter(|t| !t.is_empty()))
}

impl FtraceFilter {
    pub fn new() -> Self {
        Self::default()
    }

    /// `ftrace_ops_test()`: is function `rec` traced? (filter empty or
    /// containing it, and not in notrace)
    pub fn traces(&self, rec: usize) -> bool {
        (self.filter.is_empty() || self.filter.contains(rec)) && !self.notrace.contains(rec)
    }

    /// Every function with a probe, in record order.
    pub fn probed_functions(&self) -> RecSet {
        let mut s = RecSet::new();
        for p in &self.probes {
            for e in &p.entries {
                s.insert(e.rec);
            }
        }
        s
    }

    /// Runs the probes on function `rec` (the probe callbacks of
    /// trace_functions.c), updating their counts. `tracing_on` is the
    /// current state of `tracing_on`.
    pub fn probe_hit(&mut self, rec: usize, tracing_on: bool) -> ProbeActions {
        let mut on = tracing_on;
        let mut act = ProbeActions::default();
        for p in self.probes.iter_mut() {
            let Some(e) = p.entries.iter_mut().find(|e| e.rec == rec) else {
                continue;
            };
            match (p.cmd, p.counted) {
                (ProbeCmd::Traceon | ProbeCmd::Traceoff, false) => {
                    let want = p.cmd == ProbeCmd::Traceon;
                    if on != want {
                        on = want;
                        if want {
                            act.tracing_on = true;
                        } else {
                            act.tracing_off = true;
                        }
                    }
                }
                (ProbeCmd::Traceon | ProbeCmd::Traceoff, true) => {
                    // update_traceon_count(): only a real state change
                    // uses up the count.
                    let want = p.cmd == ProbeCmd::Traceon;
                    if e.count <= 0 || on == want {
                        continue;
                    }
                    on = want;
                    if want {
                        act.tracing_on = true;
                    } else {
                        act.tracing_off = true;
                    }
                    e.count = e.count.wrapping_sub(1);
                }
                (ProbeCmd::Stacktrace, false) => {
                    if on {
                        act.stacktrace = true;
                    }
                }
                (ProbeCmd::Stacktrace, true) => {
                    if on && e.count != 0 {
                        // A count above LONG_MAX is negative, as in
                        // Linux's `long`, and wraps the same way.
                        e.count = e.count.wrapping_sub(1);
                        act.stacktrace = true;
                    }
                }
            }
        }
        act
    }

    /// A write to `set_ftrace_filter` / `set_ftrace_notrace`. `truncate` is
    /// `O_TRUNC` (`>`). On error nothing changes.
    pub fn write(
        &mut self,
        file: RegexFile,
        truncate: bool,
        input: &[u8],
        funcs: &dyn FuncNames,
    ) -> Result<(), Errno> {
        let mut new = self.clone();
        {
            let hash = match file {
                RegexFile::Filter => &mut new.filter,
                RegexFile::Notrace => &mut new.notrace,
            };
            if truncate {
                hash.clear();
            }
        }
        for tok in tokens(input)? {
            new.process_regex(file, tok, funcs)?;
        }
        *self = new;
        Ok(())
    }

    /// `ftrace_process_regex()` for one token.
    fn process_regex(
        &mut self,
        file: RegexFile,
        tok: &str,
        funcs: &dyn FuncNames,
    ) -> Result<(), Errno> {
        let (func, cmd) = split_command(tok);
        let hash = match file {
            RegexFile::Filter => &mut self.filter,
            RegexFile::Notrace => &mut self.notrace,
        };
        let Some((cmd, param)) = cmd else {
            return if match_records(hash, funcs, func, None) {
                Ok(())
            } else {
                Err(Errno::EINVAL)
            };
        };
        if cmd == "mod" {
            return if match_records(hash, funcs, func, param) {
                Ok(())
            } else {
                Err(Errno::EINVAL)
            };
        }
        let pcmd = ProbeCmd::from_name(cmd).ok_or(Errno::EINVAL)?;
        // "hash funcs only work with set_ftrace_filter"
        if file != RegexFile::Filter {
            return Err(Errno::EINVAL);
        }
        let counted = param.is_some();
        if let Some(glob) = func.strip_prefix('!') {
            return self.unregister_probe(glob, pcmd, counted, funcs);
        }
        let mut count: i64 = -1;
        if let Some(p) = param {
            let number = p.split(':').next().unwrap_or("");
            if !number.is_empty() {
                count = parse_kstrtoul(number.as_bytes(), 0)? as i64;
            }
        }
        self.register_probe(func, pcmd, counted, count, funcs)
    }

    /// `register_ftrace_function_probe()`: attach to every match; functions
    /// that already have this probe keep their count, and if they all had
    /// it, nothing was added: EINVAL, as Linux.
    fn register_probe(
        &mut self,
        glob: &str,
        cmd: ProbeCmd,
        counted: bool,
        count: i64,
        funcs: &dyn FuncNames,
    ) -> Result<(), Errno> {
        let mut matched = RecSet::new();
        if !match_records(&mut matched, funcs, glob, None) || matched.is_empty() {
            return Err(Errno::EINVAL);
        }
        let pos = match self
            .probes
            .iter()
            .position(|p| p.cmd == cmd && p.counted == counted)
        {
            Some(pos) => pos,
            None => {
                self.probes.insert(
                    0,
                    Probe {
                        cmd,
                        counted,
                        entries: Vec::new(),
                    },
                );
                0
            }
        };
        let probe = &mut self.probes[pos];
        let mut added = 0;
        for i in matched.iter() {
            if let Err(at) = probe.entries.binary_search_by_key(&i, |e| e.rec) {
                let id = NEXT_PROBE_ID.fetch_add(1, Ordering::Relaxed);
                probe.entries.insert(at, ProbeEntry { rec: i, count, id });
                added += 1;
            }
        }
        // "Nothing was added?" The probe existed (a new one gets every
        // match), so the filter is left as it was.
        if added == 0 {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    /// `unregister_ftrace_function_probe_func()`.
    fn unregister_probe(
        &mut self,
        glob: &str,
        cmd: ProbeCmd,
        counted: bool,
        funcs: &dyn FuncNames,
    ) -> Result<(), Errno> {
        let pos = self
            .probes
            .iter()
            .position(|p| p.cmd == cmd && p.counted == counted)
            .ok_or(Errno::EINVAL)?;
        let all = glob.is_empty() || glob == "*";
        let g = filter_parse_regex(glob);
        if !all && g.not {
            return Err(Errno::EINVAL);
        }
        let probe = &mut self.probes[pos];
        let before = probe.entries.len();
        probe
            .entries
            .retain(|e| !(all || (e.rec < funcs.count() && ftrace_match(funcs.name(e.rec), &g))));
        if probe.entries.len() == before {
            return Err(Errno::EINVAL);
        }
        if probe.entries.is_empty() {
            self.probes.remove(pos);
        }
        Ok(())
    }

    /// Before an edited copy replaces `live`, the filter in use: every probe
    /// entry the copy kept from when it was made takes its count from
    /// `live`, where hits may have used it up in the meantime; entries the
    /// edits registered (anew) keep theirs. In Linux a probe is registered
    /// by the write itself and its count is never copied, so closing a
    /// filter file cannot give a probe back the hits it used.
    pub fn keep_live_counts(&mut self, live: &FtraceFilter) {
        for p in &mut self.probes {
            for e in &mut p.entries {
                let now = live
                    .probes
                    .iter()
                    .flat_map(|q| q.entries.iter())
                    .find(|l| l.id == e.id);
                if let Some(l) = now {
                    e.count = l.count;
                }
            }
        }
    }

    /// The text of `set_ftrace_filter` / `set_ftrace_notrace`: the selected
    /// functions in record order, or `#### all functions enabled ####`
    /// (filter) / `#### no functions disabled ####` (notrace) when empty;
    /// then, for the filter file, one line per probe and function
    /// (`func:cmd:unlimited` or `func:cmd:count=N`).
    pub fn read(&self, file: RegexFile, funcs: &dyn FuncNames) -> String {
        let mut s = String::new();
        let hash = match file {
            RegexFile::Filter => &self.filter,
            RegexFile::Notrace => &self.notrace,
        };
        if hash.is_empty() {
            s.push_str(match file {
                RegexFile::Filter => "#### all functions enabled ####\n",
                RegexFile::Notrace => "#### no functions disabled ####\n",
            });
        } else {
            for i in hash.iter().filter(|&i| i < funcs.count()) {
                s.push_str(funcs.name(i));
                s.push('\n');
            }
        }
        if file == RegexFile::Filter {
            for p in &self.probes {
                for e in &p.entries {
                    if e.rec >= funcs.count() {
                        continue;
                    }
                    let _ = write!(s, "{}:{}", funcs.name(e.rec), p.cmd.name());
                    if p.counted {
                        let _ = writeln!(s, ":count={}", e.count);
                    } else {
                        s.push_str(":unlimited\n");
                    }
                }
            }
        }
        s
    }
}

/// `set_graph_function` or `set_graph_notrace`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphFile {
    Function,
    Notrace,
}

/// A function_graph filter (`ftrace_graph_hash` / `ftrace_graph_notrace_hash`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphFilter {
    pub kind: GraphFile,
    pub hash: RecSet,
}

impl GraphFilter {
    pub fn new(kind: GraphFile) -> Self {
        GraphFilter {
            kind,
            hash: RecSet::new(),
        }
    }

    /// A write (`ftrace_graph_write()` / `ftrace_graph_set_hash()` per
    /// token). Globs as for `set_ftrace_filter`, `!` removes; no index form
    /// and no commands. A token that adds nothing new and matches nothing,
    /// or a `!` token that removes nothing, is `EINVAL`. On error nothing
    /// changes.
    pub fn write(
        &mut self,
        truncate: bool,
        input: &[u8],
        funcs: &dyn FuncNames,
    ) -> Result<(), Errno> {
        let mut new = self.hash.clone();
        if truncate {
            new.clear();
        }
        for tok in tokens(input)? {
            let g = filter_parse_regex(tok);
            let mut ok = false;
            for i in 0..funcs.count() {
                if !ftrace_match(funcs.name(i), &g) {
                    continue;
                }
                if !g.not {
                    ok = true;
                    new.insert(i);
                } else if new.contains(i) {
                    new.remove(i);
                    ok = true;
                }
            }
            if !ok {
                return Err(Errno::EINVAL);
            }
        }
        self.hash = new;
        Ok(())
    }

    /// The text: one function per line (record order), or
    /// `#### all functions enabled ####` / `#### no functions disabled ####`.
    pub fn read(&self, funcs: &dyn FuncNames) -> String {
        if self.hash.is_empty() {
            return String::from(match self.kind {
                GraphFile::Function => "#### all functions enabled ####\n",
                GraphFile::Notrace => "#### no functions disabled ####\n",
            });
        }
        let mut s = String::new();
        for i in self.hash.iter().filter(|&i| i < funcs.count()) {
            s.push_str(funcs.name(i));
            s.push('\n');
        }
        s
    }

    /// Is function `rec` in the set?
    pub fn contains(&self, rec: usize) -> bool {
        self.hash.contains(rec)
    }
}

/// The kernel's `isspace()`: space, `\t`, `\n`, `\v`, `\f`, `\r`, and 0xA0
/// (no-break space in the kernel's Latin-1 `ctype` table).
pub const fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0xa0)
}

/// The tokens of a write, as Linux's `trace_get_user()` cuts them for
/// `set_event` and the pid files: runs of
/// non-space bytes (a NUL ends a token too); a token longer than `max`
/// bytes is `EINVAL`, and nothing after it is read.
pub struct UserTokens<'a> {
    input: &'a [u8],
    pos: usize,
    max: usize,
}

/// The tokens of `input`, each at most `max` bytes.
pub fn user_tokens(input: &[u8], max: usize) -> UserTokens<'_> {
    UserTokens { input, pos: 0, max }
}

impl<'a> Iterator for UserTokens<'a> {
    type Item = Result<&'a [u8], Errno>;

    fn next(&mut self) -> Option<Self::Item> {
        let sep = |c: u8| is_space(c) || c == 0;
        let rest = &self.input[self.pos.min(self.input.len())..];
        let start = rest.iter().position(|&c| !sep(c))?;
        let len = rest[start..]
            .iter()
            .position(|&c| sep(c))
            .unwrap_or(rest.len() - start);
        if len > self.max {
            self.pos = self.input.len();
            return Some(Err(Errno::EINVAL));
        }
        self.pos += start + len;
        Some(Ok(&rest[start..start + len]))
    }
}

/// Largest pid the pid list can hold (`pid_list.c`: `MAX_PID`, 2^30).
pub const PID_LIST_MAX: u64 = 1 << 30;

/// x86_64's `PID_MAX_LIMIT` (4 * 1024 * 1024): a pid that can be listed
/// but never run, whose seq_file cursor is `set_ftrace_pid`'s
/// `FTRACE_NO_PIDS` (see [`PidFilter::read`]).
pub const PID_MAX_LIMIT: u64 = 4 * 1024 * 1024;

/// Longest number in a pid list write (Linux: `PID_BUF_SIZE`).
pub const PID_BUF_SIZE: usize = 127;

/// `set_ftrace_pid` / `set_ftrace_notrace_pid` (`trace_pid_write()`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PidFilter {
    pids: BTreeSet<u32>,
    /// The list exists (Linux: `tr->function_pids` is not NULL). It can
    /// exist and be empty once `function-fork` has removed every pid that
    /// exited: then no task is traced.
    active: bool,
}

impl PidFilter {
    pub const fn new() -> Self {
        PidFilter {
            pids: BTreeSet::new(),
            active: false,
        }
    }

    /// A write: whitespace-separated numbers (`kstrtoul` base 0, so `0x10`
    /// and octal `010` work) of at most 127 characters each. All or
    /// nothing: a bad number is `EINVAL`, a pid that does not fit the list
    /// `EPERM` (Linux returns -1), and the list is unchanged. The number
    /// is cast to `pid_t` first, so `4294967296` is pid 0, as on Linux.
    /// A write that leaves no pid at all removes the list (Linux frees the
    /// new list when it counted no pid, the ones kept from the old list
    /// included): `echo > file` clears, `echo >> file` keeps the list.
    pub fn write(&mut self, truncate: bool, input: &[u8]) -> Result<(), Errno> {
        let mut new = if truncate {
            BTreeSet::new()
        } else {
            self.pids.clone()
        };
        let mut nr = new.len();
        for tok in user_tokens(input, PID_BUF_SIZE) {
            let v = parse_kstrtoul(tok?, 0).map_err(|_| Errno::EINVAL)?;
            // pid_t cast, then unsigned compare against the list's limit.
            let pid = v as u32;
            if pid as u64 >= PID_LIST_MAX {
                return Err(Errno::EPERM);
            }
            new.insert(pid);
            nr += 1;
        }
        self.pids = if nr == 0 { BTreeSet::new() } else { new };
        self.active = nr != 0;
        Ok(())
    }

    /// `set_ftrace_pid`'s text (Linux: `fpid_show()`): `no pid` without a
    /// list, else one pid per line, ascending (nothing for a list that
    /// exists but is empty). The seq_file passes pid + 1 as its cursor and
    /// `FTRACE_NO_PIDS` is `PID_MAX_LIMIT + 1`, so pid [`PID_MAX_LIMIT`]
    /// reads as `no pid` and ends the listing, as on Linux 6.1.
    pub fn read(&self) -> String {
        if !self.active {
            return String::from("no pid\n");
        }
        let mut s = String::new();
        for &p in &self.pids {
            if u64::from(p) == PID_MAX_LIMIT {
                s.push_str("no pid\n");
                break;
            }
            let _ = writeln!(s, "{}", p);
        }
        s
    }

    /// No list: every task is traced.
    pub fn is_empty(&self) -> bool {
        !self.active
    }

    /// The listed pids, ascending.
    pub fn pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.pids.iter().copied()
    }

    /// Is `pid` in the list?
    pub fn contains(&self, pid: i32) -> bool {
        pid >= 0 && self.pids.contains(&(pid as u32))
    }

    /// `ftrace_trace_task()` style test: trace when the list is empty or has
    /// the pid.
    pub fn allows(&self, pid: i32) -> bool {
        self.is_empty() || self.contains(pid)
    }

    /// The `function-fork` option's rule (`trace_filter_add_remove_task()`):
    /// a fork (`parent` Some) adds the child `task` if the parent is listed;
    /// an exit (`parent` None) removes `task`. Returns true if the list
    /// changed. Without a list there is nothing to follow; a list whose
    /// last pid exits stays, empty, and then no task is traced (Linux
    /// keeps the allocated list).
    pub fn follow_task(&mut self, parent: Option<i32>, task: i32) -> bool {
        if !self.active || task < 0 {
            return false;
        }
        match parent {
            Some(p) if self.contains(p) => self.pids.insert(task as u32),
            Some(_) => false,
            None => self.pids.remove(&(task as u32)),
        }
    }
}
