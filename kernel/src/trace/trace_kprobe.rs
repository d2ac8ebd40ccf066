//! Probe events: `kprobe_events`, `dynamic_events` and `kprobe_profile`
//! (Linux: kernel/trace/trace_kprobe.c and trace_dynevent.c).
//!
//! A line written to `kprobe_events` (or `dynamic_events`) is parsed by
//! `tracer::trace_probe` into a probe point, an event name and fetch
//! programs. The probe is then registered with the kprobe core
//! (`crate::kprobes`), disabled, and, unless its `[GROUP/]EVENT` exists
//! already (several probes may feed one event, Linux's multiprobe), the
//! event is made: a type id and its description in
//! `tracer::trace_probe::registry` (what the printer and `ktrace report`
//! look up), one [`TraceEventFile`] of the top-level trace array, and
//! `events/GROUP/EVENT/{enable,format,id,filter,trigger,hist}`. Those files work
//! as a declared event's do, through the same event-file code: enabling
//! the event calls [`kprobe_event_reg`], which enables the probes' int3s.
//!
//! On a hit, the probe's pre-handler (interrupts off) counts the hit for
//! `kprobe_profile`, measures the strings its arguments copy, and writes
//! the record (`__probe_ip`, then the arguments) through the same
//! reserve/commit path as a declared event, or through the event's slow
//! path when it has a filter, triggers or is soft-disabled. Linux has one
//! `kprobe_dispatcher`; here the pre-handler is chosen when the probe is
//! defined: [`kprobe_dispatcher`]`::<N>` for a probe whose N arguments
//! are whole registers (a record of a length the compiler knows), and
//! [`kprobe_dispatcher_any`] for any other. The fetch programs read memory with
//! [`copy_from_kernel_nofault`], which refuses anything that is not mapped
//! kernel memory instead of faulting.
//!
//! An event's description and file are never freed: a record of a removed
//! event may still be printed, and its file may still be named by a
//! trigger being torn down. That is a few hundred bytes per event ever
//! made (the registry bounds how many).
//!
//! A return probe (`r[MAXACTIVE]`, or `SYM%return`) is a kretprobe
//! (`crate::kprobes::Kretprobe`: the return address hijacked through
//! the task's rethook stack) whose handler, [`kretprobe_dispatcher`],
//! runs when the function returns and writes `__probe_func` (the
//! function), `__probe_ret_ip` (where it returns to) and the arguments,
//! `$retval` being `rax` (Linux: `kretprobe_dispatcher` and
//! `__kretprobe_trace_func`). At most MAXACTIVE calls are watched at once
//! (default `max(10, 2 * CPUs)`); a call past that is not watched and
//! counts as missed in `kprobe_profile`. At the return the handler has
//! every register as the function left it (the kretprobe's trampoline
//! saves them all, as Linux's rethook trampoline does): `rax`/`rdx`, the
//! caller's callee-saved `rbx`, `rbp`, `r12`-`r15`, whatever the function
//! left in the others, `ip` = the return address and `sp` the stack
//! pointer after the return.
//!
//! A group is an event system: `events/GROUP/{enable,filter}` act on its
//! probe events, and `set_event` names them as `GROUP:EVENT`.
//!
//! Probe events in instances (Linux 6.1 does the same): each event has a
//! file in every instance too, with the same
//! `instances/NAME/events/GROUP/EVENT/` files and group files, made when the
//! event is made or, for an instance made later, by [`init_instance`]
//! (called from `events::init_tr`). An instance's file belongs to that
//! instance's array and is freed with it. Enabling the event in an array
//! adds that array's file to the event's set of enabled files
//! ([`ProbeEventFile::targets`]); the dispatcher writes one record into
//! each file of the set, so each array gets only the hits of its own
//! enabling. The set is replaced whole and the old one freed after a grace
//! period, so a CPU in the dispatcher never reads a freed set; `rmdir` of
//! an instance disables its files first (`events::del_tr`). Removing a
//! probe is EBUSY while its event is enabled in any array.
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use spin::{Mutex, MutexGuard, Once};
use tracer::trace_events::TraceEventCall;
use tracer::trace_probe::fetch::{self, FetchEnv};
use tracer::trace_probe::registry::{self, ProbeEvent};
use tracer::trace_probe::{
    self as tp, log_entry, ProbeError, ProbeLogEntry, ProbeSymbols, TpErr, TraceProbe,
};

use super::events::{self, flags, DynFileRef, GateFns, GateSpec, ProbeSel, TraceEventFile};
use super::trace::{global_trace, global_trace_arc, trace_entry_word, TraceArray};
use crate::fs::tracefs::{self, Dentry, SeqFile, TRACE_MODE_READ, TRACE_MODE_WRITE};
use crate::fs::{Errno, OpenFile, OpenFlags};
use crate::kprobes::{self, Kprobe, Kretprobe, PtRegs};

/// Where the error log says refused definitions come from.
const LOG_LOC: &str = "trace_kprobe";

/// One event made by probe definitions (Linux: `trace_probe_event`),
/// shared by the probes defined with its name.
struct ProbeEventFile {
    ev: &'static ProbeEvent,
    /// The event's file in the top-level trace array.
    file: &'static TraceEventFile,
    /// `events/GROUP`.
    group_dir: Dentry,
    /// Its file in each instance. Changed under the event mutex.
    inst: Mutex<Vec<InstFile>>,
    /// The files where it is enabled now, which its probes' dispatchers
    /// write to (their `targets` point to it); `None` while it is enabled
    /// nowhere. Replaced whole under the event mutex, the old set freed
    /// after a grace period (Linux: the `trace_event_file_link` list of
    /// `trace_probe_event`, an RCU list).
    targets: Mutex<Option<Box<Targets>>>,
}

/// The event's file in one instance, that instance's directory and its
/// `events/GROUP`.
struct InstFile {
    file: DynFileRef,
    root: Dentry,
    group_dir: Dentry,
}

/// The enabled files of one event, one per trace array (see
/// [`ProbeEventFile::targets`]): the first written by the dispatcher
/// itself, the others (the event enabled in several arrays at once) out
/// of line, so that one array costs what it did before instances had
/// probe events.
struct Targets {
    first: *const TraceEventFile,
    rest: Box<[*const TraceEventFile]>,
}

impl Targets {
    /// The set of `files`, none if empty.
    fn new(files: &[*const TraceEventFile]) -> Option<Box<Targets>> {
        let (&first, rest) = files.split_first()?;
        Some(Box::new(Targets {
            first,
            rest: rest.into(),
        }))
    }

    fn files(&self) -> Vec<*const TraceEventFile> {
        let mut v = alloc::vec![self.first];
        v.extend_from_slice(&self.rest);
        v
    }
}

// SAFETY: the pointers are to event files, which are Sync and live as long
// as their trace array; an array disables its files (taking them out of
// every set, then a grace period) before it is freed.
unsafe impl Send for Targets {}
// SAFETY: as for Send.
unsafe impl Sync for Targets {}

impl ProbeEventFile {
    /// Every file of the event: the top level's, then each instance's.
    fn all_files(&self) -> Vec<&TraceEventFile> {
        let mut v = alloc::vec![self.file];
        // SAFETY: `inst` entries hold their array (DynFileRef), and are only
        // dropped with the ProbeEventFile or under the event mutex by the
        // caller's own code; the references are used under that mutex.
        v.extend(
            self.inst
                .lock()
                .iter()
                .map(|i| unsafe { &*(&*i.file as *const TraceEventFile) }),
        );
        v
    }

    /// Whether the event is enabled, or held by a trigger, in some array:
    /// it cannot be removed (EBUSY).
    fn busy(&self) -> bool {
        self.all_files()
            .iter()
            .any(|f| f.is_enabled() || f.flags() & flags::SOFT_MODE != 0)
    }
}

/// What a definition registered with the kprobe core (Linux: the
/// `kretprobe rp` of a `trace_kprobe`, whose `rp.kp` is the probe of an
/// entry probe).
enum ProbeHandle {
    Kprobe(Arc<Kprobe>),
    Kretprobe(Arc<Kretprobe>),
}

/// One probe definition (Linux: `struct trace_kprobe`).
pub struct TraceKprobe {
    tp: TraceProbe,
    event: Once<Arc<ProbeEventFile>>,
    probe: ProbeHandle,
    /// Hits while enabled (Linux: `nhit`, per CPU there).
    nhit: AtomicU64,
    /// The files the dispatcher writes to (its event's
    /// [`ProbeEventFile::targets`]), null while the event is enabled
    /// nowhere: the dispatcher does nothing else.
    targets: AtomicPtr<Targets>,
    /// An argument copies a string (its size is measured at each hit).
    dynamic: bool,
    /// When every argument is a register stored as it is (`%di`,
    /// `$arg1:u32`, `$retval`...): each one compiled to a copy from
    /// `PtRegs` into the record, stored without running the fetch programs.
    regs_only: Option<Vec<fetch::RegCopy>>,
    /// When those copies are whole registers, at most
    /// [`fetch::REG_WORDS_MAX`]: the probe's handler is the dispatcher of
    /// their count, which writes a record of a known length
    /// ([`kprobe_dispatcher`]).
    words: Option<fetch::RegWords>,
}

impl TraceKprobe {
    /// Registers the probe with the core (Linux: `__register_trace_kprobe`).
    fn register(&self) -> Result<(), Errno> {
        match &self.probe {
            ProbeHandle::Kprobe(kp) => kprobes::register_kprobe(kp.clone()),
            ProbeHandle::Kretprobe(rp) => kprobes::register_kretprobe(rp.clone()),
        }
    }

    /// Returns once no CPU can be in its handlers.
    fn unregister(&self) {
        match &self.probe {
            ProbeHandle::Kprobe(kp) => kprobes::unregister_kprobe(kp),
            ProbeHandle::Kretprobe(rp) => kprobes::unregister_kretprobe(rp),
        }
    }

    /// The kprobe that fires at the probe point (a return probe's at the
    /// function's entry).
    fn entry_kprobe(&self) -> Option<Arc<Kprobe>> {
        match &self.probe {
            ProbeHandle::Kprobe(kp) => Some(kp.clone()),
            ProbeHandle::Kretprobe(rp) => rp.kprobe(),
        }
    }

    fn enable(&self) -> Result<(), Errno> {
        self.entry_kprobe()
            .map_or(Err(Errno::EINVAL), |kp| kprobes::enable_kprobe(&kp))
    }

    fn disable(&self) -> Result<(), Errno> {
        self.entry_kprobe()
            .map_or(Err(Errno::EINVAL), |kp| kprobes::disable_kprobe(&kp))
    }

    /// `kprobe_profile`'s misses (Linux: the kprobe's `nmissed`, plus the
    /// kretprobe's for a return probe).
    fn nmissed(&self) -> u64 {
        let kp = self
            .entry_kprobe()
            .map_or(0, |kp| kp.nmissed.load(Ordering::Relaxed));
        match &self.probe {
            ProbeHandle::Kprobe(_) => kp,
            ProbeHandle::Kretprobe(rp) => kp + rp.nmissed.load(Ordering::Relaxed),
        }
    }
}

/// Every probe definition, in the order written (Linux: the
/// `dynamic_events` list).
///
/// Lock order: the event mutex, then this, then [`INSTANCES`] and an
/// event's `inst` and `targets`. Trigger code runs under the event mutex
/// and may take this one (an `enable_event` trigger switching a probe
/// event on or off reaches [`kprobe_event_reg`]), so nothing that holds
/// this one enters trigger code: a removal takes its event off the list
/// under it and clears the event's files after dropping it
/// ([`detach_one`], [`teardown`]).
static DYN_EVENTS: Mutex<Vec<Arc<TraceKprobe>>> = Mutex::new(Vec::new());

/// The kernel's symbols, for the parser.
struct KernelSyms;

impl ProbeSymbols for KernelSyms {
    fn lookup(&self, name: &str) -> (usize, u64) {
        let Some(t) = crate::kallsyms::table() else {
            return (0, 0);
        };
        let mut n = 0;
        let mut addr = 0;
        for s in t.iter().filter(|s| s.name == name) {
            if n == 0 {
                addr = s.addr;
            }
            n += 1;
        }
        (n, addr)
    }
}

/// Linux's `copy_from_kernel_nofault`: copies `buf.len()` bytes at `addr`
/// if every page of them is mapped kernel memory (the upper half),
/// otherwise copies nothing and returns false.
pub fn copy_from_kernel_nofault(addr: u64, buf: &mut [u8]) -> bool {
    let len = buf.len() as u64;
    if len == 0 {
        return true;
    }
    let Some(last) = addr.checked_add(len - 1) else {
        return false;
    };
    if addr < 0xffff_8000_0000_0000 {
        return false;
    }
    let mut page = addr & !0xfff;
    while page <= last {
        if !crate::arch::paging::is_mapped(page.max(addr), 1) {
            return false;
        }
        match page.checked_add(0x1000) {
            Some(p) => page = p,
            None => break,
        }
    }
    // SAFETY: every page of [addr, addr + len) is mapped (checked above),
    // and `buf` does not overlap it from the reader's point of view (a
    // racing writer can only change the bytes read, not fault).
    unsafe { core::ptr::copy_nonoverlapping(addr as *const u8, buf.as_mut_ptr(), buf.len()) };
    true
}

/// The registers and memory a fetch program reads at a hit.
struct RegsEnv<'a> {
    regs: &'a PtRegs,
}

impl FetchEnv for RegsEnv<'_> {
    fn reg(&self, idx: u8) -> u64 {
        let r = self.regs;
        match idx {
            0 => r.r15,
            1 => r.r14,
            2 => r.r13,
            3 => r.r12,
            4 => r.rbp,
            5 => r.rbx,
            6 => r.r11,
            7 => r.r10,
            8 => r.r9,
            9 => r.r8,
            10 => r.rax,
            11 => r.rcx,
            12 => r.rdx,
            13 => r.rsi,
            14 => r.rdi,
            // orig_ax: -1 in an exception frame, as on Linux.
            15 => u64::MAX,
            16 => r.rip,
            17 => r.cs,
            18 => r.rflags,
            19 => r.rsp,
            20 => r.ss,
            _ => 0,
        }
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        copy_from_kernel_nofault(addr, buf)
    }

    fn comm(&self) -> [u8; 16] {
        crate::sched::current().map_or([0; 16], |t| tracer::trace_events::comm_bytes(t.comm()))
    }
}

/// The probe definition `data` points at and the files its event is
/// enabled in, if any; counts the hit for `kprobe_profile` (Linux: the
/// start of `kprobe_dispatcher`).
///
/// # Safety
/// `data` is the `data` of a kprobe or kretprobe registered by
/// [`create_trace_kprobe`], called from its handler (interrupts or
/// preemption off); the references are not kept past the handler.
#[inline(always)]
unsafe fn probe_hit<'a>(data: usize) -> Option<(&'a TraceKprobe, &'a Targets)> {
    // SAFETY: `data` is the address of the TraceKprobe that owns the probe
    // (Arc::new_cyclic in `create_trace_kprobe`); the probe is
    // unregistered, which waits for every CPU to leave its handlers,
    // before that TraceKprobe is dropped.
    let tk = unsafe { &*(data as *const TraceKprobe) };
    // SAFETY: a published set is freed only after a grace period, which
    // this CPU (interrupts or preemption off) cannot pass.
    let t = unsafe { tk.targets.load(Ordering::Acquire).as_ref() }?;
    tk.nhit.fetch_add(1, Ordering::Relaxed);
    Some((tk, t))
}

/// The one file of `t` whose record the usual path writes: the event is
/// enabled in one trace array only, with no filter, trigger or soft
/// disable there.
#[inline(always)]
fn usual_file(t: &Targets) -> Option<&TraceEventFile> {
    // SAFETY: see Targets' Send impl.
    let file = unsafe { &*t.first };
    (t.rest.is_empty() && !file.needs_slow_path()).then_some(file)
}

/// The kprobe's pre-handler (Linux: `kprobe_dispatcher` and
/// `__kprobe_trace_func`) for a probe whose `N` arguments are whole
/// registers ([`fetch::RegWords`]), chosen when the probe is defined
/// ([`KPROBE_DISPATCHERS`]). Each writes a record of a length it knows
/// (the ring buffer's length arithmetic and every store's bounds check
/// fold away), and an entry probe's has no return probe's header. An
/// event enabled in several arrays, or with a filter, triggers or
/// soft-disabled, takes [`kprobe_trace_all`].
fn kprobe_dispatcher<const N: usize>(kp: &Kprobe, regs: &mut PtRegs) -> bool {
    // SAFETY: the kprobe's data, from its pre-handler.
    if let Some((tk, t)) = unsafe { probe_hit(kp.data) } {
        match (usual_file(t), &tk.words) {
            (Some(file), Some(w)) => write_words::<false, N>(file, regs, &w.idx, kp.addr, 0),
            _ => kprobe_trace_all::<false>(tk, t, regs, kp.addr, 0),
        }
    }
    false
}

/// The pre-handler of any other probe: arguments narrower than a word,
/// or read by their fetch programs.
fn kprobe_dispatcher_any(kp: &Kprobe, regs: &mut PtRegs) -> bool {
    // SAFETY: the kprobe's data, from its pre-handler.
    if let Some((tk, t)) = unsafe { probe_hit(kp.data) } {
        kprobe_trace_all::<false>(tk, t, regs, kp.addr, 0);
    }
    false
}

/// The kretprobe's handler, when a watched call returns (Linux:
/// `kretprobe_dispatcher` and `__kretprobe_trace_func`): `regs.rax` is the
/// return value and `regs.rip` the return address. As
/// [`kprobe_dispatcher`], one per count of whole-register arguments.
fn kretprobe_dispatcher<const N: usize>(rp: &Kretprobe, regs: &mut PtRegs) {
    // SAFETY: the kretprobe's data, from its handler.
    if let Some((tk, t)) = unsafe { probe_hit(rp.data) } {
        match (usual_file(t), &tk.words) {
            (Some(file), Some(w)) => write_words::<true, N>(file, regs, &w.idx, rp.addr, regs.rip),
            _ => kprobe_trace_all::<true>(tk, t, regs, rp.addr, regs.rip),
        }
    }
}

/// The handler of any other return probe.
fn kretprobe_dispatcher_any(rp: &Kretprobe, regs: &mut PtRegs) {
    // SAFETY: the kretprobe's data, from its handler.
    if let Some((tk, t)) = unsafe { probe_hit(rp.data) } {
        kprobe_trace_all::<true>(tk, t, regs, rp.addr, regs.rip);
    }
}

/// The pre-handler of a probe with `n` whole-register arguments is
/// `KPROBE_DISPATCHERS[n]` (`n <= fetch::REG_WORDS_MAX`).
const KPROBE_DISPATCHERS: [kprobes::PreHandler; fetch::REG_WORDS_MAX + 1] = [
    kprobe_dispatcher::<0>,
    kprobe_dispatcher::<1>,
    kprobe_dispatcher::<2>,
    kprobe_dispatcher::<3>,
    kprobe_dispatcher::<4>,
];

/// The same for return probes.
const KRETPROBE_DISPATCHERS: [kprobes::KretprobeHandler; fetch::REG_WORDS_MAX + 1] = [
    kretprobe_dispatcher::<0>,
    kretprobe_dispatcher::<1>,
    kretprobe_dispatcher::<2>,
    kretprobe_dispatcher::<3>,
    kretprobe_dispatcher::<4>,
];

/// The records of every file of `t` (the event enabled in several trace
/// arrays, or its file needing the slow path, or a probe that is not
/// [`write_words`]'), out of line.
#[inline(never)]
fn kprobe_trace_all<const RET: bool>(
    tk: &TraceKprobe,
    t: &Targets,
    regs: &PtRegs,
    ip: u64,
    ret_ip: u64,
) {
    for &file in core::iter::once(&t.first).chain(t.rest.iter()) {
        // SAFETY: see Targets' Send impl.
        kprobe_trace_func_any::<RET>(tk, unsafe { &*file }, regs, ip, ret_ip);
    }
}

/// The record of a probe whose `N` arguments are whole registers
/// ([`fetch::RegWords`]), through the fast path: `16 + 8 * N` bytes, or
/// `24 + 8 * N` for a return probe.
#[inline(always)]
fn write_words<const RET: bool, const N: usize>(
    file: &TraceEventFile,
    regs: &PtRegs,
    idx: &[u8; fetch::REG_WORDS_MAX],
    ip: u64,
    ret_ip: u64,
) {
    let args = if RET { 24 } else { 16 };
    let words = regs_words(regs);
    let id = file.call.id;
    events::trace_event_buffer_write(file, args + 8 * N, |buf| {
        put_word(buf, 0, trace_entry_word(id));
        put_word(buf, 8, ip);
        if RET {
            put_word(buf, 16, ret_ip);
        }
        for (i, &r) in idx.iter().take(N).enumerate() {
            // `r` is a saved word (checked when the probe was defined):
            // the fallback is never taken.
            put_word(
                buf,
                args + 8 * i,
                words.get(usize::from(r)).copied().unwrap_or(0),
            );
        }
    });
}

#[inline(always)]
fn put_word(buf: &mut [u8], at: usize, w: u64) {
    if let Some(d) = buf.get_mut(at..at + 8) {
        d.copy_from_slice(&w.to_le_bytes());
    }
}

/// Writes one record of `tk`'s event: after the common header, `ip`
/// (`__probe_ip`, or a return probe's `__probe_func`), for a return probe
/// (`RET`) `ret_ip` (`__probe_ret_ip`), then the arguments, copied
/// ([`fetch::store_reg_copies`]) or fetched by their programs; through the
/// event's slow path when it has a filter, triggers or is soft-disabled.
/// Out of line: the usual record ([`write_words`]) does not pay for its
/// stack and its generality.
#[inline(never)]
fn kprobe_trace_func_any<const RET: bool>(
    tk: &TraceKprobe,
    file: &TraceEventFile,
    regs: &PtRegs,
    ip: u64,
    ret_ip: u64,
) {
    let env = RegsEnv { regs };
    let dsize = if tk.dynamic {
        fetch::get_data_size(&tk.tp, &env)
    } else {
        0
    };
    let len = (tk.tp.args_offset() + tk.tp.size) as usize + dsize;
    let id = file.call.id;
    #[inline(always)]
    fn fill<const RET: bool>(
        tk: &TraceKprobe,
        env: &RegsEnv<'_>,
        hdr: [u64; 3],
        dsize: usize,
        buf: &mut [u8],
    ) {
        put_word(buf, 0, hdr[0]);
        put_word(buf, 8, hdr[1]);
        if RET {
            put_word(buf, 16, hdr[2]);
        }
        match &tk.regs_only {
            Some(copies) => fetch::store_reg_copies(copies, regs_bytes(env.regs), buf),
            None => fetch::store_trace_args(&tk.tp, env, buf, dsize),
        }
    }
    if file.needs_slow_path()
        && events::trace_event_slow(file, len, |buf| {
            let hdr = [trace_entry_word(id), ip, ret_ip];
            fill::<RET>(tk, &env, hdr, dsize, buf)
        })
    {
        return;
    }
    events::trace_event_buffer_write(file, len, |buf| {
        let hdr = [trace_entry_word(id), ip, ret_ip];
        fill::<RET>(tk, &env, hdr, dsize, buf)
    });
}

/// The saved registers as words, indexed as [`fetch::RegWords`] counts
/// them.
#[inline(always)]
fn regs_words(regs: &PtRegs) -> &[u64; core::mem::size_of::<PtRegs>() / 8] {
    // SAFETY: PtRegs is repr(C) with only u64 fields, so it has the size,
    // alignment and layout of this array; the borrow is `regs`'s.
    unsafe { &*(regs as *const PtRegs).cast() }
}

/// The saved registers as bytes, for [`fetch::store_reg_copies`].
#[inline(always)]
fn regs_bytes(regs: &PtRegs) -> &[u8] {
    // SAFETY: PtRegs is repr(C), all u64 fields: every byte is initialized
    // and the slice borrows `regs` for its lifetime.
    unsafe {
        core::slice::from_raw_parts(
            (regs as *const PtRegs).cast::<u8>(),
            core::mem::size_of::<PtRegs>(),
        )
    }
}

/// See [`TraceKprobe::regs_only`]: each register's place in `PtRegs`
/// (`orig_ax` is not saved: its programs give -1 as Linux's exception
/// frame has).
fn regs_only(tp: &TraceProbe) -> Option<Vec<fetch::RegCopy>> {
    use core::mem::offset_of;
    const OFFSETS: [Option<usize>; 21] = [
        Some(offset_of!(PtRegs, r15)),
        Some(offset_of!(PtRegs, r14)),
        Some(offset_of!(PtRegs, r13)),
        Some(offset_of!(PtRegs, r12)),
        Some(offset_of!(PtRegs, rbp)),
        Some(offset_of!(PtRegs, rbx)),
        Some(offset_of!(PtRegs, r11)),
        Some(offset_of!(PtRegs, r10)),
        Some(offset_of!(PtRegs, r9)),
        Some(offset_of!(PtRegs, r8)),
        Some(offset_of!(PtRegs, rax)),
        Some(offset_of!(PtRegs, rcx)),
        Some(offset_of!(PtRegs, rdx)),
        Some(offset_of!(PtRegs, rsi)),
        Some(offset_of!(PtRegs, rdi)),
        None,
        Some(offset_of!(PtRegs, rip)),
        Some(offset_of!(PtRegs, cs)),
        Some(offset_of!(PtRegs, rflags)),
        Some(offset_of!(PtRegs, rsp)),
        Some(offset_of!(PtRegs, ss)),
    ];
    fetch::compile_reg_copies(tp, core::mem::size_of::<PtRegs>(), |r| {
        OFFSETS
            .get(usize::from(r))
            .copied()
            .flatten()
            .map(|o| o as u16)
    })
}

/// Enables or disables the event of `file` in `file`'s trace array (its
/// `class->reg`): only turning on and off matters, the dispatcher reads the
/// file's filter and triggers at every hit. The event's set of enabled
/// files ([`ProbeEventFile::targets`]) gets or loses `file`; its probes'
/// int3s go in with its first file and out with its last. With the event
/// mutex held.
fn kprobe_event_reg(
    file: &TraceEventFile,
    old: Option<ProbeSel>,
    new: Option<ProbeSel>,
) -> Result<(), Errno> {
    let on = match (old.is_some(), new.is_some()) {
        (false, true) => true,
        (true, false) => false,
        _ => return Ok(()),
    };
    let list = DYN_EVENTS.lock();
    let Some(ev) = list
        .iter()
        .filter_map(|t| t.event.get())
        .find(|e| e.all_files().iter().any(|f| core::ptr::eq(*f, file)))
        .cloned()
    else {
        return Err(Errno::EINVAL);
    };
    let mine: Vec<&Arc<TraceKprobe>> = list
        .iter()
        .filter(|tk| tk.event.get().is_some_and(|e| Arc::ptr_eq(e, &ev)))
        .collect();
    let mut cur = ev.targets.lock();
    let mut files = cur.as_ref().map_or(Vec::new(), |t| t.files());
    let was_on = !files.is_empty();
    let p: *const TraceEventFile = file;
    if on {
        if !files.contains(&p) {
            files.push(p);
        }
    } else {
        files.retain(|f| *f != p);
    }
    let next = Targets::new(&files);
    let next_ptr = next.as_deref().map_or(core::ptr::null_mut(), |t| {
        t as *const Targets as *mut Targets
    });
    match (was_on, next.is_some()) {
        (false, true) => {
            for (i, tk) in mine.iter().enumerate() {
                tk.targets.store(next_ptr, Ordering::Release);
                if let Err(e) = tk.enable() {
                    for t in &mine[..=i] {
                        let _ = t.disable();
                        t.targets.store(core::ptr::null_mut(), Ordering::Release);
                    }
                    // A hit may have started with the new set.
                    crate::rcu::synchronize_sched();
                    return Err(e);
                }
            }
        }
        (true, false) => {
            for tk in &mine {
                let _ = tk.disable();
                tk.targets.store(core::ptr::null_mut(), Ordering::Release);
            }
        }
        _ => {
            for tk in &mine {
                tk.targets.store(next_ptr, Ordering::Release);
            }
        }
    }
    let old = core::mem::replace(&mut *cur, next);
    if old.is_some() {
        // No dispatcher still reads the old set after this.
        crate::rcu::synchronize_sched();
        drop(old);
    }
    Ok(())
}

fn no_gate(_: &TraceEventFile, _: &GateSpec) -> *mut () {
    core::ptr::null_mut()
}

/// # Safety
/// Nothing to free (see [`no_gate`]).
unsafe fn no_gate_free(_: *mut ()) {}

/// Probe events have no gate: their dispatcher applies the filter itself
/// (the events code asks for a gate by the filter's shape; this one is
/// empty and [`kprobe_event_reg`] ignores it).
static NO_GATE: GateFns = GateFns {
    new: no_gate,
    free: no_gate_free,
};

/// Logs a refused definition in the top-level `error_log`.
fn log_err(entry: &ProbeLogEntry) {
    if let Some(tr) = global_trace() {
        super::error_log::tracing_log_err(
            tr,
            LOG_LOC,
            &entry.cmd,
            &[entry.err.text()],
            0,
            entry.pos,
        );
    }
}

fn fail(e: ProbeError) -> Errno {
    if let Some(l) = &e.log {
        log_err(l);
    }
    e.errno
}

/// The maxactive a return probe gets when none is given (Linux:
/// `max(10, 2 * num_possible_cpus())`).
fn default_maxactive() -> u32 {
    (2 * crate::arch::nr_cpus() as u32).max(10)
}

/// Adds one definition (Linux: `__trace_kprobe_create` and
/// `register_trace_kprobe`).
fn create_trace_kprobe(raw: &str) -> Result<(), Errno> {
    let argv = tp::argv_split(raw);
    if argv.is_empty() {
        return Ok(());
    }
    let probe = tp::parse_probe(&argv, &KernelSyms).map_err(fail)?;
    let guard = events::event_mutex();
    let mut list = DYN_EVENTS.lock();
    let at = |index: usize, err: TpErr| log_entry(&probe.argv, index, 0, err);

    // The same GROUP/EVENT: another probe for that event.
    let sibling = list
        .iter()
        .find(|t| t.tp.event == probe.event && t.tp.group == probe.group)
        .and_then(|t| t.event.get().cloned());
    if let Some(ev) = &sibling {
        if ev.ev.probe.is_return != probe.is_return {
            log_err(&at(0, TpErr::DiffProbeType));
            return Err(Errno::EEXIST);
        }
        let i = probe.compare_arg_type(&ev.ev.probe);
        if i != 0 {
            log_err(&at(i + 1, TpErr::DiffArgType));
            return Err(Errno::EEXIST);
        }
        if list
            .iter()
            .filter(|t| t.tp.event == probe.event && t.tp.group == probe.group)
            .any(|t| t.tp.same_probe(&probe))
        {
            log_err(&at(0, TpErr::SameProbe));
            return Err(Errno::EEXIST);
        }
    } else if global_trace().is_some_and(|tr| tr.events.find(&probe.group, &probe.event).is_some())
    {
        log_err(&at(0, TpErr::EventExist));
        return Err(Errno::EEXIST);
    }

    let mut probe = probe;
    let argv = probe.argv.clone();
    let reg_err = |e: Errno| {
        let err = match e {
            Errno::EILSEQ => Some(TpErr::BadInsnBndry),
            Errno::ENOENT => Some(TpErr::BadProbeAddr),
            Errno::ENOMEM | Errno::EEXIST => None,
            _ => Some(TpErr::FailRegProbe),
        };
        if let Some(err) = err {
            log_err(&log_entry(&argv, 1, 0, err));
        }
        e
    };
    if let Err(e) = probe.update_args(&KernelSyms) {
        return Err(reg_err(e));
    }
    let addr = probe.addr();
    let regs_only = regs_only(&probe);
    // (reg_words takes at most REG_WORDS_MAX: an index of the tables.)
    let words = regs_only
        .as_deref()
        .and_then(|c| fetch::reg_words(c, probe.args_offset()));
    let tk = Arc::new_cyclic(|me: &alloc::sync::Weak<TraceKprobe>| TraceKprobe {
        tp: probe.clone(),
        event: Once::new(),
        probe: if probe.is_return {
            // Linux: `tk->rp.maxactive`, the default when none is given.
            let maxactive = match probe.maxactive {
                0 => default_maxactive(),
                n => n,
            };
            let handler = words
                .map_or(kretprobe_dispatcher_any as kprobes::KretprobeHandler, |w| {
                    KRETPROBE_DISPATCHERS[usize::from(w.n)]
                });
            ProbeHandle::Kretprobe(Arc::new(Kretprobe::new(
                addr,
                Some(handler),
                None,
                maxactive,
                me.as_ptr() as usize,
            )))
        } else {
            let handler = words.map_or(kprobe_dispatcher_any as kprobes::PreHandler, |w| {
                KPROBE_DISPATCHERS[usize::from(w.n)]
            });
            ProbeHandle::Kprobe(Arc::new(Kprobe::new(
                addr,
                Some(handler),
                None,
                me.as_ptr() as usize,
            )))
        },
        nhit: AtomicU64::new(0),
        targets: AtomicPtr::new(core::ptr::null_mut()),
        dynamic: probe.args.iter().any(|a| a.dynamic),
        regs_only,
        words,
    });
    tk.register().map_err(reg_err)?;
    // Registered disabled unless its event is on somewhere (Linux: the
    // kprobe's DISABLED flag set from the event's state); then it writes
    // where its siblings write.
    let on_targets = sibling.as_ref().map_or(core::ptr::null_mut(), |e| {
        e.targets
            .lock()
            .as_deref()
            .map_or(core::ptr::null_mut(), |t| {
                t as *const Targets as *mut Targets
            })
    });
    if !on_targets.is_null() {
        tk.targets.store(on_targets, Ordering::Release);
    } else if let Err(e) = tk.disable() {
        tk.unregister();
        return Err(reg_err(e));
    }

    let group_exists = list.iter().any(|t| t.tp.group == probe.group);
    let ev = match sibling {
        Some(ev) => ev,
        None => match make_event(&guard, probe, group_exists) {
            Ok(ev) => ev,
            Err(e) => {
                tk.unregister();
                return Err(e);
            }
        },
    };
    tk.event.call_once(|| ev);
    list.push(tk);
    Ok(())
}

/// The instances, with their directories, that have the probe events'
/// files (added and removed by [`init_instance`] and [`del_instance`]).
/// Taken after [`DYN_EVENTS`].
static INSTANCES: Mutex<Vec<(Arc<TraceArray>, Dentry)>> = Mutex::new(Vec::new());

/// Makes, in the directory `root` of `tr`, `events/GROUP/` (with the
/// group's `enable` and `filter` if it is new) and
/// `events/GROUP/EVENT/{enable,format,id,filter,trigger,hist}` for `file`,
/// `tr`'s file of the event `call`; returns `events/GROUP`. On error
/// nothing of it is left.
fn create_event_dir(
    tr: &Arc<TraceArray>,
    root: &Dentry,
    call: &'static TraceEventCall,
    file: DynFileRef,
) -> Result<Dentry, Errno> {
    let events_dir = tracefs::get_or_create_dir(root, "events")?;
    let new_group = tracefs::lookup(&events_dir, call.system).is_none();
    let group_dir = tracefs::get_or_create_dir(&events_dir, call.system)?;
    let made = (|| -> Result<(), Errno> {
        if new_group {
            // A new group is an event system with its own `enable` and
            // `filter` (Linux: `event_subsystem_dir`).
            super::event_files::create_system_files(tr, &group_dir, call.system)?;
        }
        let d = tracefs::create_dir(&group_dir, call.name)?;
        let (f1, f2) = (file.clone(), file.clone());
        tracefs::create_show_store(
            &d,
            "enable",
            TRACE_MODE_WRITE,
            move || f1.enable_text(),
            Some(move |text: &str| events::enable_store(&f2, text)),
        )?;
        tracefs::create_show(&d, "format", move || call.format_file())?;
        tracefs::create_show(&d, "id", move || alloc::format!("{}\n", call.id))?;
        super::event_filter::create_event_filter_file_dyn(&d, file.clone())?;
        super::trigger::create_trigger_file_dyn(&d, file.clone())?;
        super::hist::create_hist_file_dyn(&d, file)?;
        Ok(())
    })();
    if let Err(e) = made {
        tracefs::unlink_instance_dir(&group_dir, call.name);
        if new_group {
            tracefs::unlink_instance_dir(&events_dir, call.system);
        }
        return Err(e);
    }
    Ok(group_dir)
}

/// Gives the instance `tr` (directory `root`) its file of the event
/// `call`, and the event's directory.
fn make_inst_file(
    tr: &Arc<TraceArray>,
    root: &Dentry,
    call: &'static TraceEventCall,
) -> Result<InstFile, Errno> {
    let f = tr.events.own_dynamic(TraceEventFile::new_dynamic(
        call,
        kprobe_event_reg,
        &NO_GATE,
        tr,
    ));
    let file = DynFileRef::new(tr, f);
    let group_dir = create_event_dir(tr, root, call, file.clone())?;
    tr.events.add_dynamic(&file);
    Ok(InstFile {
        file,
        root: root.clone(),
        group_dir,
    })
}

/// Makes the event of a new `GROUP/EVENT`: its description, its file in
/// the top-level array and in each instance, and their directories.
/// `group_exists`: another event of the group exists.
fn make_event(
    _guard: &MutexGuard<'static, ()>,
    probe: TraceProbe,
    group_exists: bool,
) -> Result<Arc<ProbeEventFile>, Errno> {
    let gtr = global_trace().ok_or(Errno::ENODEV)?;
    let tr = global_trace_arc().ok_or(Errno::ENODEV)?;
    let ev = registry::register(probe)?;
    let call = &ev.call;
    let file: &'static TraceEventFile = gtr.events.own_dynamic(TraceEventFile::new_dynamic(
        call,
        kprobe_event_reg,
        &NO_GATE,
        gtr,
    ));
    let group_dir = create_event_dir(&tr, &tracefs::root(), call, DynFileRef::new(&tr, file))?;
    let mut inst = Vec::new();
    for (itr, root) in INSTANCES.lock().iter() {
        match make_inst_file(itr, root, call) {
            Ok(i) => inst.push(i),
            Err(e) => {
                for i in &inst {
                    i.file.tr().events.remove_dynamic(&i.file);
                    unlink_event_dir(&i.root, &i.group_dir, call, !group_exists);
                }
                unlink_event_dir(&tracefs::root(), &group_dir, call, !group_exists);
                return Err(e);
            }
        }
    }
    // `set_event` and the group's files see it.
    gtr.events.add_dynamic(file);
    Ok(Arc::new(ProbeEventFile {
        ev,
        file,
        group_dir,
        inst: Mutex::new(inst),
        targets: Mutex::new(None),
    }))
}

/// Unlinks `events/GROUP/EVENT` of the event `call` in one array, whose
/// directory is `root`, and `events/GROUP` too if `last_of_group`.
fn unlink_event_dir(root: &Dentry, group_dir: &Dentry, call: &TraceEventCall, last_of_group: bool) {
    tracefs::unlink_instance_dir(group_dir, call.name);
    if last_of_group {
        if let Some(events_dir) = tracefs::lookup(root, "events") {
            tracefs::unlink_instance_dir(&events_dir, call.system);
        }
    }
}

/// An event whose last probe [`detach_one`] took off [`DYN_EVENTS`]:
/// its files and directories, which [`teardown`] removes once that lock
/// is dropped.
struct Detached {
    ev: Arc<ProbeEventFile>,
    /// Its files in the instances, taken from `ev.inst`.
    inst: Vec<InstFile>,
    /// No other definition has its group: `events/GROUP` goes too.
    last_of_group: bool,
}

/// Takes definition `i` off the list and unregisters its probe (Linux:
/// `unregister_trace_kprobe`): EBUSY, with nothing changed, while its
/// event is enabled or held by a trigger (soft mode) in some array. If it
/// was its event's last probe, the event is taken off too (out of every
/// lookup: `kprobe_event_reg`, `init_instance`, `available_events`) and
/// returned for [`teardown`].
fn detach_one(list: &mut Vec<Arc<TraceKprobe>>, i: usize) -> Result<Option<Detached>, Errno> {
    let tk = list[i].clone();
    let Some(ev) = tk.event.get() else {
        return Err(Errno::EINVAL);
    };
    if ev.busy() {
        return Err(Errno::EBUSY);
    }
    tk.unregister();
    list.remove(i);
    if list
        .iter()
        .any(|t| t.event.get().is_some_and(|e| Arc::ptr_eq(e, ev)))
    {
        return Ok(None);
    }
    let group = ev.ev.call.system;
    let inst = core::mem::take(&mut *ev.inst.lock());
    Ok(Some(Detached {
        ev: ev.clone(),
        inst,
        last_of_group: !list.iter().any(|t| t.tp.group == group),
    }))
}

/// Removes a detached event's files from their arrays and unlinks their
/// directories, resetting the buffers that held its records (Linux:
/// `trace_remove_event_call`). With the event mutex held and
/// [`DYN_EVENTS`] not: clearing triggers may switch events off, which
/// for a probe event takes that lock (`kprobe_event_reg`), so the trigger
/// code is never entered under it (the order is event mutex, then
/// `DYN_EVENTS`, then the locks of one event).
fn teardown(guard: &MutexGuard<'static, ()>, d: Detached) {
    let call = &d.ev.ev.call;
    let top = (d.ev.file, tracefs::root(), d.ev.group_dir.clone());
    let dirs = d
        .inst
        .iter()
        .map(|i| (&*i.file, i.root.clone(), i.group_dir.clone()));
    for (file, root, group_dir) in core::iter::once(top).chain(dirs) {
        // Its triggers may hold other events soft-enabled. An event with
        // triggers is in soft mode, so [`detach_one`] refused it: there
        // are none unless a future trigger kind holds no soft reference.
        // (Its filter stays with the file, which nothing uses any more;
        // the file goes with its array.)
        super::trigger::clear_file_triggers(guard, file);
        file.tr().events.remove_dynamic(file);
        unlink_event_dir(&root, &group_dir, call, d.last_of_group);
        if file.flags() & flags::WAS_ENABLED != 0 {
            file.tr().buffer.reset();
        }
    }
}

/// `-:[GROUP/]EVENT [SYM ARGS...]` (Linux: `dyn_event_release`): removes
/// every matching definition; ENOENT if none matches, EBUSY (and stop) at
/// one whose event is enabled (those removed before it stay removed, as
/// on Linux).
fn delete_trace_kprobe(raw: &str) -> Result<(), Errno> {
    let spec = tp::parse_delete(raw)?;
    let guard = events::event_mutex();
    let mut ret = Err(Errno::ENOENT);
    loop {
        let mut list = DYN_EVENTS.lock();
        let Some(i) = list.iter().position(|t| spec.matches(&t.tp)) else {
            return ret;
        };
        let detached = detach_one(&mut list, i)?;
        drop(list);
        if let Some(d) = detached {
            teardown(&guard, d);
        }
        ret = Ok(());
    }
}

/// Removes every definition, or none (EBUSY) if one's event is enabled
/// (Linux: `dyn_events_release_all`, on `O_TRUNC`). Nothing can be enabled
/// between the check and the removals: that needs the event mutex.
fn release_all() -> Result<(), Errno> {
    let guard = events::event_mutex();
    if DYN_EVENTS
        .lock()
        .iter()
        .any(|t| t.event.get().is_some_and(|e| e.busy()))
    {
        return Err(Errno::EBUSY);
    }
    loop {
        let mut list = DYN_EVENTS.lock();
        if list.is_empty() {
            return Ok(());
        }
        let detached = detach_one(&mut list, 0)?;
        drop(list);
        if let Some(d) = detached {
            teardown(&guard, d);
        }
    }
}

/// One line of a write (Linux: `create_or_delete_trace_kprobe`); with
/// `bang`, `!` removes too (dynamic_events).
fn create_or_delete(line: &str, bang: bool) -> Result<(), Errno> {
    match line.as_bytes().first() {
        Some(b'-') => delete_trace_kprobe(line),
        Some(b'!') if bang => delete_trace_kprobe(&alloc::format!("-{}", &line[1..])),
        _ => create_trace_kprobe(line),
    }
}

/// Longest line a write may hold (Linux: `WRITE_BUFSIZE - 2`).
const MAX_LINE: usize = 4094;

/// A write to `kprobe_events` or `dynamic_events` (Linux:
/// `trace_parse_run_command`): line by line, `#` starts a comment, stops
/// at the first error.
fn run_commands(buf: &[u8], bang: bool) -> Result<usize, Errno> {
    let text = core::str::from_utf8(buf).map_err(|_| Errno::EINVAL)?;
    for line in text.split('\n') {
        if line.len() > MAX_LINE {
            return Err(Errno::EINVAL);
        }
        let line = line.split('#').next().unwrap_or("");
        create_or_delete(line, bang)?;
    }
    Ok(buf.len())
}

/// `kprobe_events` / `dynamic_events` as read.
fn probes_text() -> String {
    let m = default_maxactive();
    DYN_EVENTS.lock().iter().map(|t| t.tp.show(m)).collect()
}

/// `kprobe_profile` (Linux: `probes_profile_seq_show`).
fn profile_text() -> String {
    let mut s = String::new();
    for t in DYN_EVENTS.lock().iter() {
        let _ = writeln!(
            s,
            "  {:<44} {:>15} {:>15}",
            t.tp.event,
            t.nhit.load(Ordering::Relaxed),
            t.nmissed()
        );
    }
    s
}

fn probes_file(root: &Dentry, name: &str, bang: bool) -> Result<Dentry, Errno> {
    tracefs::create_file(root, name, TRACE_MODE_WRITE, move |f: OpenFlags| {
        if f.writable() && f.truncate() {
            release_all()?;
        }
        let file = SeqFile::new(probes_text()).with_write(move |buf| run_commands(buf, bang));
        Ok(Box::new(file) as Box<dyn OpenFile>)
    })
}

/// Gives the new instance `tr` (directory `root`) the probe events'
/// files (see `events::DynamicEventsTrOps`).
fn init_instance(tr: &Arc<TraceArray>, root: &Dentry) -> Result<(), Errno> {
    let _guard = events::event_mutex();
    let list = DYN_EVENTS.lock();
    INSTANCES.lock().push((tr.clone(), root.clone()));
    let mut seen: Vec<*const ProbeEventFile> = Vec::new();
    for e in list.iter().filter_map(|t| t.event.get()) {
        if seen.contains(&Arc::as_ptr(e)) {
            continue;
        }
        seen.push(Arc::as_ptr(e));
        let i = make_inst_file(tr, root, &e.ev.call)?;
        e.inst.lock().push(i);
    }
    Ok(())
}

/// Forgets the instance `tr`, whose events `events::del_tr` disabled (no
/// set of enabled files has one of its files any more).
fn del_instance(_guard: &MutexGuard<'static, ()>, tr: &TraceArray) {
    let list = DYN_EVENTS.lock();
    INSTANCES
        .lock()
        .retain(|(t, _)| !core::ptr::eq(Arc::as_ptr(t), tr));
    for e in list.iter().filter_map(|t| t.event.get()) {
        e.inst.lock().retain(|i| !core::ptr::eq(i.file.tr(), tr));
    }
}

/// Creates `kprobe_events`, `dynamic_events` and `kprobe_profile`.
pub fn init(root: &Dentry) -> Result<(), Errno> {
    super::events::set_dynamic_events_lister(available_events);
    super::events::set_dynamic_events_tr_ops(events::DynamicEventsTrOps {
        init_tr: init_instance,
        del_tr: del_instance,
    });
    probes_file(root, "kprobe_events", false)?;
    probes_file(root, "dynamic_events", true)?;
    tracefs::create_file(root, "kprobe_profile", TRACE_MODE_READ, |_: OpenFlags| {
        Ok(Box::new(SeqFile::new(profile_text())) as Box<dyn OpenFile>)
    })?;
    Ok(())
}

/// The probe events' `GROUP:EVENT` lines of `available_events`, newest
/// first.
pub fn available_events() -> String {
    let mut seen: Vec<*const ProbeEventFile> = Vec::new();
    let mut s = String::new();
    for t in DYN_EVENTS.lock().iter().rev() {
        if let Some(e) = t.event.get() {
            if !seen.contains(&Arc::as_ptr(e)) {
                seen.push(Arc::as_ptr(e));
                let _ = writeln!(s, "{}:{}", e.ev.call.system, e.ev.call.name);
            }
        }
    }
    s
}

/// The probe events that exist, oldest first (for `trace-export`).
pub fn event_calls() -> Vec<&'static tracer::trace_events::TraceEventCall> {
    let mut v: Vec<&'static tracer::trace_events::TraceEventCall> = Vec::new();
    for t in DYN_EVENTS.lock().iter() {
        if let Some(e) = t.event.get() {
            if !v.iter().any(|c| core::ptr::eq(*c, &e.ev.call)) {
                v.push(&e.ev.call);
            }
        }
    }
    v
}

/// The bench's probe event: `p:kprobes/bench_kprobe SYM+OFF [%di]` at the
/// first instruction boundary after `sym`'s first instruction (found by
/// registering a bare probe at each offset until one is accepted), made
/// as a user's definition is. Returns the event's file, disabled.
pub fn bench_define(sym: &str, fetch_arg: bool) -> Result<&'static TraceEventFile, String> {
    let (kp, off) = bench_bare(sym)?;
    kprobes::unregister_kprobe(&kp);
    bench_define_at(sym, off, fetch_arg)
}

/// The bench's probe event at `sym+off`.
pub fn bench_define_at(
    sym: &str,
    off: u64,
    fetch_arg: bool,
) -> Result<&'static TraceEventFile, String> {
    let def = alloc::format!(
        "p:kprobes/bench_kprobe {sym}+{off}{}",
        if fetch_arg { " %di" } else { "" }
    );
    bench_make(&def)
}

/// Makes the bench's definition `def` and returns its event's file.
fn bench_make(def: &str) -> Result<&'static TraceEventFile, String> {
    create_trace_kprobe(def).map_err(|e| alloc::format!("{def}: {e:?}"))?;
    let list = DYN_EVENTS.lock();
    list.last()
        .and_then(|t| t.event.get())
        .map(|e| e.file)
        .ok_or_else(|| alloc::format!("{def}: not made"))
}

/// The bench's return probe event: `r:kprobes/bench_kretprobe SYM
/// $retval`, made as a user's definition is. Returns the event's file,
/// disabled.
pub fn bench_define_ret(sym: &str) -> Result<&'static TraceEventFile, String> {
    bench_make(&alloc::format!("r:kprobes/bench_kretprobe {sym} $retval"))
}

/// A registered probe with a pre-handler that does nothing, at the first
/// instruction boundary after `sym`'s first instruction, and its offset:
/// the int3 path alone (the caller unregisters it).
pub fn bench_bare(sym: &str) -> Result<(Arc<Kprobe>, u64), String> {
    fn nop(_: &Kprobe, _: &mut PtRegs) -> bool {
        false
    }
    let (n, addr) = KernelSyms.lookup(sym);
    if n != 1 {
        return Err(alloc::format!("{sym}: {n} symbols"));
    }
    (1..32u64)
        .find_map(|off| {
            let kp = Arc::new(Kprobe::new(addr + off, Some(nop), None, 0));
            kprobes::register_kprobe(kp.clone())
                .ok()
                .map(|()| (kp, off))
        })
        .ok_or_else(|| alloc::format!("no instruction boundary in {sym}+1..32"))
}

/// Removes the bench's probe event.
pub fn bench_remove() {
    let _ = delete_trace_kprobe("-:kprobes/bench_kprobe");
    let _ = delete_trace_kprobe("-:kprobes/bench_kretprobe");
}
