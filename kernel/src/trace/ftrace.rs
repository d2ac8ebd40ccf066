//! Dynamic ftrace: the call-site records and who wants them
//! (Linux: kernel/trace/ftrace.c).
//!
//! - At boot, [`ftrace_init`] reads the `__mcount_loc` table that recordmcount
//!   built (sorted at build time by `sorttable`, so one pass checks the order
//!   and the sort is only a fallback) and has the arch code turn every site
//!   into a NOP (`ftrace_make_nop`, which checks the site's bytes first).
//!   Each site becomes a [`DynFtrace`] record (ip, flags).
//! - A user of function tracing is an [`FtraceOps`]: a callback plus the set of
//!   records it wants (its filter). Several can be registered at once.
//! - [`ftrace_update`] recomputes, for every record, how many ops want it,
//!   decides what each site must become (`ftrace_modify_all_code`: a site
//!   calls `ftrace_caller` if any ops wants it and is a NOP when none does),
//!   and hands the sites that change to the arch code's
//!   `ftrace_replace_code`, which checks and patches them in one int3 batch.
//!   This file never sees an instruction byte.
//! - `ftrace_caller` calls `function_trace_op->func`: the single registered
//!   ops directly, or [`ftrace_ops_list_func`], which asks each ops.
//! - An ops that needs the registers (kprobes on a call site; Linux's
//!   FTRACE_OPS_FL_SAVE_REGS) makes the sites it wants call
//!   `ftrace_regs_caller` instead, which saves a full `PtRegs`, calls what
//!   `ftrace_caller` calls, then the registers' user
//!   ([`ftrace_regs_handler`]), and restores them. The other sites keep
//!   calling `ftrace_caller`, unchanged.
//! - An ops may belong to a tracing instance (Linux: `ops->private = tr`,
//!   `ftrace_init_array_ops`): its callback finds the instance through
//!   [`FtraceOps::private`]. Instances come and go, so their ops live in
//!   static pools and are reused ([`tracer::ftrace::OpsPool`]), never
//!   freed: a task preempted inside `ftrace_caller` after it loaded an ops
//!   may call it long after it was unregistered, and finds a live ops whose
//!   private pointer is null or another live instance. Whoever frees an
//!   instance clears the pointer first and then waits for a grace period
//!   (`rcu::synchronize_sched`): the callbacks read it with preemption off.
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

use spin::{Mutex, Once};

use tracer::ftrace::{
    ftrace_rec_count, ftrace_rec_set_count, ftrace_test_record, ftrace_update_record, FtraceUpdate,
    RecordSet,
};
pub use tracer::ftrace::{FTRACE_FL_ENABLED, FTRACE_FL_REGS_EN, FTRACE_FL_TOUCHED};

use crate::arch::entry::PtRegs;
use crate::arch::ftrace::{self as arch_ftrace, FtraceFault, FtraceInsn, FtraceSite};
use crate::arch::percpu;
use crate::arch::text_poke;
use crate::fs::Errno;

/// One call site (Linux: struct dyn_ftrace).
pub struct DynFtrace {
    pub ip: u64,
    pub flags: AtomicU32,
}

impl DynFtrace {
    pub fn enabled(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & FTRACE_FL_ENABLED != 0
    }
    pub fn refcount(&self) -> u32 {
        ftrace_rec_count(self.flags.load(Ordering::Relaxed))
    }
}

static RECORDS: Once<Box<[DynFtrace]>> = Once::new();
/// Set by `ftrace_bug`: code patching is off for good (Linux: ftrace_disabled).
static FTRACE_DISABLED: AtomicBool = AtomicBool::new(false);
/// TSC ticks spent converting sites at boot (instructions under --icount).
pub static BOOT_NOP_TICKS: AtomicU64 = AtomicU64::new(0);
/// TSC ticks and sites of the last ftrace_update, for the benchmark.
pub static LAST_UPDATE: Mutex<(u64, usize)> = Mutex::new((0, 0));

/// Fault injection, for tests of the error paths (Linux: the `fail_function`
/// fault injection, which makes a function marked ALLOW_ERROR_INJECTION
/// return an error): how many of the next calls of
/// [`register_ftrace_function`] and of [`ftrace_update`] fail with ENOMEM
/// before changing anything. Set with the shell's `fail_function`.
static FAIL_REGISTER: AtomicU32 = AtomicU32::new(0);
static FAIL_UPDATE: AtomicU32 = AtomicU32::new(0);

/// Makes the next `times` calls of `func` (`register_ftrace_function` or
/// `ftrace_update`) fail with ENOMEM; EINVAL for another name.
pub fn fail_function(func: &str, times: u32) -> Result<(), Errno> {
    let counter = match func {
        "register_ftrace_function" => &FAIL_REGISTER,
        "ftrace_update" => &FAIL_UPDATE,
        _ => return Err(Errno::EINVAL),
    };
    counter.store(times, Ordering::SeqCst);
    Ok(())
}

/// True (and one failure used up) if an injected failure is due.
fn should_fail(counter: &AtomicU32) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

/// All records, sorted by ip (empty before ftrace_init).
pub fn records() -> &'static [DynFtrace] {
    RECORDS.get().map(|r| &r[..]).unwrap_or(&[])
}

/// The index of the record at `ip` (Linux: ftrace_location / lookup_rec).
///
/// A binary search over the sorted records, written out rather than
/// `binary_search_by_key`: tracer callbacks call this, and a generic from
/// `core` is compiled into the crate that uses it with that crate's
/// instrumentation, where it is traced (kernel/notrace.list names this
/// kernel's modules, not `core`'s). Inlined into every caller.
#[inline(always)]
pub fn record_index(ip: u64) -> Option<usize> {
    let recs = records();
    let (mut lo, mut hi) = (0, recs.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let r = recs[mid].ip;
        if r == ip {
            return Some(mid);
        }
        if r < ip {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    None
}

/// True once code patching was switched off by [`ftrace_bug`].
pub fn ftrace_is_dead() -> bool {
    FTRACE_DISABLED.load(Ordering::Relaxed)
}

extern "C" {
    static __start_mcount_loc: u64;
    static __stop_mcount_loc: u64;
}

fn mcount_loc() -> &'static [u64] {
    // SAFETY: the linker script delimits the __mcount_loc table (8-byte
    // entries) with these two symbols, in read-only data.
    unsafe {
        let start = &raw const __start_mcount_loc;
        let stop = &raw const __stop_mcount_loc;
        core::slice::from_raw_parts(start, stop.offset_from(start) as usize)
    }
}

/// Reports a site whose bytes are not what we expect, and stops all code
/// patching (Linux: ftrace_bug + ftrace_kill).
fn ftrace_bug(fault: &FtraceFault) {
    FTRACE_DISABLED.store(true, Ordering::SeqCst);
    println!("------------[ cut here ]------------");
    println!(
        "WARNING: ftrace failed to modify {}",
        crate::kallsyms::describe(fault.ip)
    );
    println!(" actual:   {}", hex(&fault.actual));
    println!(" expected: {}", hex(&fault.expected));
    println!("ftrace: code patching disabled");
    println!("---[ end trace ]---");
}

fn hex(b: &[u8]) -> String {
    let mut s = String::new();
    for (i, x) in b.iter().enumerate() {
        let _ = write!(s, "{}{:02x}", if i > 0 { ":" } else { "" }, x);
    }
    s
}

/// Boot-time setup: records every call site and turns it into a NOP. Runs on
/// the boot CPU before the others start, so plain writes are safe
/// (Linux: ftrace_init, ftrace_process_locs, ftrace_init_nop).
pub fn ftrace_init() {
    let t0 = crate::arch::rdtsc();
    let mut ips: Vec<u64> = mcount_loc().iter().copied().filter(|&ip| ip != 0).collect();
    if ips.is_empty() {
        println!("ftrace: No functions to be traced?");
        return;
    }
    // boot/build.sh sorts the table in the ELF (build-tools' sorttable), so
    // one pass confirms the order and the sort is skipped, as Linux does with
    // CONFIG_BUILDTIME_MCOUNT_SORT. The sort stays for a table that was not
    // (a kernel linked without that step): the records must be in address
    // order, since record_index binary-searches them.
    if !ips.is_sorted() {
        ips.sort_unstable();
    }
    ips.dedup();
    let count = ips.len();
    // Linux allocates its records in pages ("allocating N entries in M
    // pages"); here they are one array on the heap, and the line says so.
    println!(
        "ftrace: allocating {} entries ({} bytes)",
        count,
        count * core::mem::size_of::<DynFtrace>()
    );
    let mut records = Vec::with_capacity(count);
    let mut poke = arch_ftrace::ftrace_arch_code_modify_prepare();
    for ip in ips {
        // Linux: ftrace_nop_initialize -> ftrace_init_nop.
        if let Err(fault) = arch_ftrace::ftrace_make_nop(&mut poke, ip) {
            drop(poke);
            ftrace_bug(&fault);
            return;
        }
        records.push(DynFtrace {
            ip,
            flags: AtomicU32::new(0),
        });
    }
    arch_ftrace::ftrace_arch_code_modify_post_process(poke);
    let n = records.len();
    RECORDS.call_once(|| records.into_boxed_slice());
    let ticks = crate::arch::rdtsc() - t0;
    BOOT_NOP_TICKS.store(ticks, Ordering::Relaxed);
    println!(
        "ftrace: {} sites ({} mode) converted to NOPs in {} us",
        n,
        arch_ftrace::MODE,
        ticks * 1_000_000 / crate::arch::tsc::tsc_hz().max(1)
    );
}

// ---------------------------------------------------------------------------
// ftrace_ops

/// A callback: `ip` is the call site, `parent_slot` the stack slot holding
/// the traced function's return address (read it for the parent; the graph
/// tracer replaces it).
pub type FtraceFunc = extern "C" fn(ip: u64, parent_slot: *mut u64, op: &FtraceOps);

/// A user of function tracing (Linux: struct ftrace_ops).
#[repr(C)]
pub struct FtraceOps {
    /// Called by `ftrace_caller` (must stay the first field: the trampoline
    /// calls `[op]`).
    pub func: FtraceFunc,
    /// If set, `ftrace_caller` returns at once, before saving any register,
    /// while this flag is false (must stay at offset 8: the trampoline reads
    /// `[op + 8]`). The tracers pass `tracing_on`, so a tracer that is
    /// attached but not recording costs a few instructions per call.
    pub gate: Option<&'static AtomicBool>,
    pub name: &'static str,
    /// Which records this ops wants, unless it uses another's
    /// (Linux: ops->local_hash).
    local_hash: FtraceHash,
    /// The set it uses instead (Linux: ops->func_hash, which points at the
    /// ops' local_hash or, for ops that share the global filter, at
    /// global_ops').
    func_hash: Option<&'static FtraceHash>,
    /// The owner's data, for the callback (Linux: ops->private, the
    /// trace_array of an instance's ops). Null while the ops is free; a
    /// callback reads it with preemption off and ignores a null one.
    private: AtomicPtr<()>,
    /// [`FTRACE_OPS_FL_SAVE_REGS`] or 0.
    flags: u32,
}

/// The ops' sites call `ftrace_regs_caller` (Linux: FTRACE_OPS_FL_SAVE_REGS).
pub const FTRACE_OPS_FL_SAVE_REGS: u32 = 1 << 0;

/// A [`RecordSet`] covering every record (after [`ftrace_init`]), made by
/// the first writer. Only writers (tracefs files, registration) make it:
/// [`FtraceHash::get_or_init`] allocates. Traced code (the ftrace_ops
/// callbacks) only reads it ([`FtraceHash::is_empty`],
/// [`FtraceHash::contains_ip`], [`FtraceHash::contains`]), and to a reader
/// a set not made yet is an empty one (Linux: the hash pointers start as
/// EMPTY_HASH and only the write path allocates). A callback that made the
/// set would allocate in traced context, and the allocator's own traced
/// functions would enter the callback again (the recursion guard lets one
/// nested level through), which would then wait forever for the set its
/// own CPU is in the middle of making.
pub struct FtraceHash(Once<RecordSet>);

impl FtraceHash {
    pub const fn new() -> FtraceHash {
        FtraceHash(Once::new())
    }

    /// The set, made (allocated) if it is not yet: writers only, never
    /// from traced code.
    #[inline]
    pub fn get_or_init(&self) -> &RecordSet {
        self.0.call_once(|| RecordSet::new(records().len()))
    }

    /// The set if a writer made it; never allocates.
    #[inline(always)]
    pub fn get(&self) -> Option<&RecordSet> {
        self.0.get()
    }

    /// True if no record is in the set (or it was never made).
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.get().is_none_or(|s| s.is_empty())
    }

    /// True if record `i` is in the set.
    #[inline(always)]
    pub fn contains(&self, i: usize) -> bool {
        self.get().is_some_and(|s| s.contains(i))
    }

    /// True if the record at call site `ip` is in the set.
    #[inline]
    pub fn contains_ip(&self, ip: u64) -> bool {
        self.get()
            .is_some_and(|s| record_index(ip).is_some_and(|i| s.contains(i)))
    }
}

impl Default for FtraceHash {
    fn default() -> Self {
        Self::new()
    }
}

impl FtraceOps {
    pub const fn new(name: &'static str, func: FtraceFunc) -> FtraceOps {
        FtraceOps {
            func,
            gate: None,
            name,
            local_hash: FtraceHash::new(),
            func_hash: None,
            private: AtomicPtr::new(core::ptr::null_mut()),
            flags: 0,
        }
    }

    /// The same ops, whose sites save the registers for
    /// [`ftrace_regs_handler`] (its own callback is still called, without
    /// them).
    pub const fn save_regs(mut self) -> FtraceOps {
        self.flags |= FTRACE_OPS_FL_SAVE_REGS;
        self
    }

    /// True if its sites save the registers.
    pub fn saves_regs(&self) -> bool {
        self.flags & FTRACE_OPS_FL_SAVE_REGS != 0
    }

    /// The owner's data set with [`set_private`](Self::set_private) (null
    /// if none). A callback must read it with preemption off: the owner is
    /// only freed a grace period after it cleared the pointer.
    #[inline(always)]
    pub fn private(&self) -> *const () {
        self.private.load(Ordering::Acquire)
    }

    /// Sets (or, with null, clears) the owner's data.
    pub fn set_private(&self, data: *const ()) {
        self.private.store(data as *mut (), Ordering::Release);
    }

    /// True unless the ops has a gate and it is closed (the trampoline
    /// tests it too, for the single-ops case).
    #[inline(always)]
    pub fn gate_open(&self) -> bool {
        self.gate.is_none_or(|g| g.load(Ordering::Relaxed))
    }

    /// The same ops, wanting the records of `hash` (shared with other ops)
    /// instead of a set of its own.
    pub const fn with_hash(mut self, hash: &'static FtraceHash) -> FtraceOps {
        self.func_hash = Some(hash);
        self
    }

    /// The same ops, skipped by the trampoline while `*gate` is false.
    pub const fn gated(mut self, gate: &'static AtomicBool) -> FtraceOps {
        self.gate = Some(gate);
        self
    }

    /// The records this ops wants (Linux: ops->func_hash).
    #[inline]
    pub fn func_hash(&self) -> &FtraceHash {
        self.func_hash.unwrap_or(&self.local_hash)
    }

    /// True if this ops wants record `i` (never allocates: called from
    /// traced code by the list function).
    #[inline]
    pub fn wants(&self, i: usize) -> bool {
        self.func_hash().contains(i)
    }

    /// Sets the records this ops wants (takes effect at the next update).
    pub fn set_wanted(&self, wanted: &[bool]) {
        self.func_hash()
            .get_or_init()
            .store(|i| wanted.get(i).copied().unwrap_or(false));
    }
}

extern "C" fn ftrace_stub(_ip: u64, _parent_slot: *mut u64, _op: &FtraceOps) {}

/// Calls every registered ops that wants this site and whose gate is open
/// (Linux: ftrace_ops_list_func; the gate is what `ftrace_caller` tests for
/// a single ops, so that a callback never tests it again).
extern "C" fn ftrace_ops_list_func(ip: u64, parent_slot: *mut u64, _op: &FtraceOps) {
    let Some(bit) = recursion::trylock(recursion::LIST_START) else {
        return;
    };
    if let Some(i) = record_index(ip) {
        let end = OPS_END.load(Ordering::Acquire);
        for slot in &OPS_SLOTS[..end.min(MAX_OPS)] {
            let p = slot.load(Ordering::Acquire);
            if p.is_null() {
                continue;
            }
            // SAFETY: slots hold `&'static FtraceOps`.
            let op = unsafe { &*p };
            if op.gate_open() && op.wants(i) {
                (op.func)(ip, parent_slot, op);
            }
        }
    }
    recursion::unlock(bit);
}

static FTRACE_STUB_OPS: FtraceOps = FtraceOps::new("stub", ftrace_stub);
static FTRACE_LIST_OPS: FtraceOps = FtraceOps::new("list", ftrace_ops_list_func);

/// What `ftrace_caller` calls (Linux: function_trace_op + ftrace_trace_function,
/// here one pointer so both change together).
#[no_mangle]
static function_trace_op: AtomicPtr<FtraceOps> =
    AtomicPtr::new(&FTRACE_STUB_OPS as *const FtraceOps as *mut FtraceOps);

/// Ops registered at once: the top level's (function, probes, graph) and
/// two per tracing instance.
const MAX_OPS: usize = 40;
/// Registered ops (Linux: ftrace_ops_list).
static OPS_SLOTS: [AtomicPtr<FtraceOps>; MAX_OPS] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_OPS];
/// One past the last slot of [`OPS_SLOTS`] that may be in use: the list
/// function looks no further. Raised before a slot past it is filled,
/// lowered after the last slots are emptied (under [`FTRACE_LOCK`]).
static OPS_END: AtomicUsize = AtomicUsize::new(0);

/// Recomputes [`OPS_END`] after a slot was emptied (under [`FTRACE_LOCK`]).
fn ops_end_update() {
    let end = OPS_SLOTS
        .iter()
        .rposition(|s| !s.load(Ordering::Relaxed).is_null())
        .map_or(0, |i| i + 1);
    OPS_END.store(end, Ordering::Release);
}
/// Serialises registration and code updates (Linux: ftrace_lock).
static FTRACE_LOCK: Mutex<()> = Mutex::new(());

fn registered() -> Vec<&'static FtraceOps> {
    OPS_SLOTS
        .iter()
        .filter_map(|s| {
            let p = s.load(Ordering::Acquire);
            // SAFETY: slots hold `&'static FtraceOps`.
            (!p.is_null()).then(|| unsafe { &*p })
        })
        .collect()
}

fn op_for(ops: &[&'static FtraceOps]) -> *mut FtraceOps {
    let op: &'static FtraceOps = match ops {
        [] => &FTRACE_STUB_OPS,
        [one] => one,
        _ => &FTRACE_LIST_OPS,
    };
    op as *const FtraceOps as *mut FtraceOps
}

/// Adds an ops and patches the sites it wants (Linux: register_ftrace_function).
pub fn register_ftrace_function(ops: &'static FtraceOps) -> Result<(), Errno> {
    if should_fail(&FAIL_REGISTER) {
        return Err(Errno::ENOMEM);
    }
    let _g = FTRACE_LOCK.lock();
    let p = ops as *const FtraceOps as *mut FtraceOps;
    if OPS_SLOTS.iter().any(|s| s.load(Ordering::Relaxed) == p) {
        return Err(Errno::EBUSY);
    }
    let index = OPS_SLOTS
        .iter()
        .position(|s| s.load(Ordering::Relaxed).is_null())
        .ok_or(Errno::ENOSPC)?;
    let slot = &OPS_SLOTS[index];
    let before = registered();
    OPS_END.fetch_max(index + 1, Ordering::AcqRel);
    slot.store(p, Ordering::Release);
    let after = registered();
    let r = ftrace_run_update_code(&before, &after);
    if r.is_err() {
        // Not registered after all: nothing may call it.
        set_trace_op(op_for(&before));
        slot.store(core::ptr::null_mut(), Ordering::Release);
        ops_end_update();
    }
    r
}

/// Removes an ops; sites nobody wants any more become NOPs again.
pub fn unregister_ftrace_function(ops: &'static FtraceOps) -> Result<(), Errno> {
    let _g = FTRACE_LOCK.lock();
    let p = ops as *const FtraceOps as *mut FtraceOps;
    let Some(slot) = OPS_SLOTS.iter().find(|s| s.load(Ordering::Relaxed) == p) else {
        return Err(Errno::EINVAL);
    };
    let before = registered();
    let after: Vec<_> = before
        .iter()
        .copied()
        .filter(|o| !core::ptr::eq(*o, ops))
        .collect();
    // Patch first, with the ops still reachable; then drop it from the list.
    let r = ftrace_run_update_code(&before, &after);
    slot.store(core::ptr::null_mut(), Ordering::Release);
    ops_end_update();
    r
}

/// Re-applies every ops' wanted set to the code (after a filter change).
pub fn ftrace_update() -> Result<(), Errno> {
    if should_fail(&FAIL_UPDATE) {
        return Err(Errno::ENOMEM);
    }
    let _g = FTRACE_LOCK.lock();
    let ops = registered();
    ftrace_run_update_code(&ops, &ops)
}

/// Brings the code in line with the registered ops, under [`FTRACE_LOCK`]
/// (Linux: ftrace_run_update_code; `before` and `after` are the ops
/// registered before and after the change).
fn ftrace_run_update_code(
    before: &[&'static FtraceOps],
    after: &[&'static FtraceOps],
) -> Result<(), Errno> {
    if ftrace_is_dead() {
        return Err(Errno::ENODEV);
    }
    if FTRACE_ENABLED.load(Ordering::Relaxed) == 0 {
        // Every site stays a NOP; enabling patches what is registered then.
        return Ok(());
    }
    let t0 = crate::arch::rdtsc();
    let r = ftrace_modify_all_code(before, after);
    if let Ok(n) = r {
        *LAST_UPDATE.lock() = (crate::arch::rdtsc() - t0, n);
    }
    r.map(|_| ())
}

/// `/proc/sys/kernel/ftrace_enabled` as last written (Linux:
/// ftrace_enabled): while it is 0, no site calls the trampoline, whatever
/// is registered. Written under [`FTRACE_LOCK`].
static FTRACE_ENABLED: AtomicI32 = AtomicI32::new(1);

/// The value of `ftrace_enabled`.
pub fn ftrace_enabled() -> i32 {
    FTRACE_ENABLED.load(Ordering::Relaxed)
}

/// A write to `ftrace_enabled` (Linux: ftrace_enable_sysctl): 0 turns
/// every site back into a NOP (ops stay registered, and more can be, but
/// nothing is called: `echo function > current_tracer` succeeds and traces
/// nothing), non-zero patches the sites the registered ops want. The value
/// is kept as written (`2` reads back as 2). ENODEV once patching is dead;
/// if patching fails the value stays.
pub fn ftrace_enable_sysctl(val: i32) -> Result<(), Errno> {
    let _g = FTRACE_LOCK.lock();
    if ftrace_is_dead() {
        return Err(Errno::ENODEV);
    }
    let old = FTRACE_ENABLED.load(Ordering::Relaxed);
    let ops = registered();
    match (old != 0, val != 0) {
        (false, true) => {
            // Enabled first, so that the update patches.
            FTRACE_ENABLED.store(val, Ordering::Relaxed);
            if let Err(e) = ftrace_run_update_code(&[], &ops) {
                FTRACE_ENABLED.store(old, Ordering::Relaxed);
                return Err(e);
            }
        }
        (true, false) => {
            // Patched while still enabled; disabled once it is done.
            ftrace_run_update_code(&ops, &[])?;
            FTRACE_ENABLED.store(val, Ordering::Relaxed);
        }
        _ => FTRACE_ENABLED.store(val, Ordering::Relaxed),
    }
    Ok(())
}

/// The address an enabled site calls now (Linux: ftrace_get_addr_curr):
/// `ftrace_regs_caller` if its record says it saves the registers.
#[inline(always)]
fn ftrace_get_addr_curr(rec: &DynFtrace) -> u64 {
    if rec.flags.load(Ordering::Relaxed) & FTRACE_FL_REGS_EN != 0 {
        arch_ftrace::ftrace_regs_caller_addr()
    } else {
        arch_ftrace::ftrace_caller_addr()
    }
}

/// The address a wanted site must call (Linux: ftrace_get_addr_new):
/// `ftrace_regs_caller` if an ops that saves the registers wants it.
#[inline(always)]
fn ftrace_get_addr_new(want_regs: bool) -> u64 {
    if want_regs {
        arch_ftrace::ftrace_regs_caller_addr()
    } else {
        arch_ftrace::ftrace_caller_addr()
    }
}

/// The registers' hook: what the registers' user (kprobes on call sites)
/// runs from `ftrace_regs_caller`.
pub type FtraceRegsHook = extern "C" fn(u64, &mut PtRegs);

/// The registers' hook (an [`FtraceRegsHook`]); 0 for none.
static FTRACE_REGS_HOOK: AtomicUsize = AtomicUsize::new(0);
/// The ops whose work the hook does (its own func does nothing).
static FTRACE_REGS_HOOK_OPS: AtomicPtr<FtraceOps> = AtomicPtr::new(core::ptr::null_mut());

/// What `ftrace_regs_caller` calls at once with `(ip, &mut PtRegs)`,
/// instead of [`ftrace_regs_handler`]: the registers' hook while its ops
/// is the only one registered (nothing else to run at any site), else 0.
/// Kept with `function_trace_op` by [`set_trace_op`]; a CPU that reads one
/// of the pair stale during an update runs what it would have run just
/// before or just after it, as with `function_trace_op` alone.
#[no_mangle]
static ftrace_regs_direct: AtomicUsize = AtomicUsize::new(0);

/// Installs the function `ftrace_regs_caller` calls with the registers
/// (kprobes' kprobe_ftrace_handler; tracing does not import kprobes), and
/// the ops whose sites want it, whose own func does nothing. Called once at
/// boot, before that ops is registered.
pub fn set_ftrace_regs_hook(hook: FtraceRegsHook, ops: &'static FtraceOps) {
    FTRACE_REGS_HOOK_OPS.store(ops as *const FtraceOps as *mut FtraceOps, Ordering::Release);
    FTRACE_REGS_HOOK.store(hook as usize, Ordering::Release);
}

/// Publishes what `ftrace_caller` (and `ftrace_regs_caller`) call.
fn set_trace_op(op: *mut FtraceOps) {
    let direct = if op == FTRACE_REGS_HOOK_OPS.load(Ordering::Acquire) {
        FTRACE_REGS_HOOK.load(Ordering::Acquire)
    } else {
        0
    };
    // The direct call goes first when it stops, last when it starts.
    if direct == 0 {
        ftrace_regs_direct.store(0, Ordering::SeqCst);
    }
    function_trace_op.store(op, Ordering::SeqCst);
    ftrace_regs_direct.store(direct, Ordering::SeqCst);
}

/// Called by `ftrace_regs_caller` with the call site, the parent slot and
/// the saved registers (`rip` is the return address into the traced
/// function, where the trampoline returns: a handler may change it and the
/// other registers). Runs what `ftrace_caller` would have, then the
/// registers' user.
#[no_mangle]
pub extern "C" fn ftrace_regs_handler(ip: u64, parent_slot: *mut u64, regs: &mut PtRegs) {
    // SAFETY: function_trace_op always holds a `&'static FtraceOps`.
    let op = unsafe { &*function_trace_op.load(Ordering::Acquire) };
    if op.gate_open() {
        (op.func)(ip, parent_slot, op);
    }
    let hook = FTRACE_REGS_HOOK.load(Ordering::Acquire);
    if hook != 0 {
        // SAFETY: only set_ftrace_regs_hook stores here, a fn of this type.
        let hook: FtraceRegsHook = unsafe { core::mem::transmute(hook) };
        hook(ip, regs);
    }
}

/// Decides, for every record, what its site must become, has the arch code
/// patch the sites that change, and keeps the records' flags (Linux:
/// ftrace_modify_all_code with FTRACE_UPDATE_CALLS). While sites change,
/// the trampoline reaches every ops of both sets. Returns how many sites
/// were patched. If a site does not hold what its record says, nothing is
/// written and patching stops for good ([`ftrace_bug`]).
fn ftrace_modify_all_code(
    before: &[&'static FtraceOps],
    after: &[&'static FtraceOps],
) -> Result<usize, Errno> {
    let mut both: Vec<&'static FtraceOps> = before.to_vec();
    for o in after {
        if !both.iter().any(|b| core::ptr::eq(*b, *o)) {
            both.push(o);
        }
    }
    set_trace_op(op_for(&both));

    let mut sites = Vec::new();
    let mut new_flags = Vec::with_capacity(records().len());
    // Each ops' set, looked up once (a set never made wants nothing).
    let sets: Vec<&RecordSet> = after.iter().filter_map(|o| o.func_hash().get()).collect();
    // The sets of the ops that save the registers (usually none).
    let regs_sets: Vec<&RecordSet> = after
        .iter()
        .filter(|o| o.saves_regs())
        .filter_map(|o| o.func_hash().get())
        .collect();
    for (i, rec) in records().iter().enumerate() {
        // Linux counts the ops per record as they come and go
        // (__ftrace_hash_rec_update); here the count is recomputed.
        let refs = sets.iter().filter(|s| s.contains(i)).count() as u32;
        let mut flags = ftrace_rec_set_count(rec.flags.load(Ordering::Relaxed), refs);
        let want_regs = !regs_sets.is_empty() && regs_sets.iter().any(|s| s.contains(i));
        let (addr_curr, addr_new) = (ftrace_get_addr_curr(rec), ftrace_get_addr_new(want_regs));
        let update = ftrace_test_record(flags, addr_curr, addr_new);
        if want_regs {
            flags |= FTRACE_FL_REGS_EN;
        } else {
            flags &= !FTRACE_FL_REGS_EN;
        }
        if update != FtraceUpdate::Ignore {
            sites.push(FtraceSite {
                ip: rec.ip,
                update,
                addr_curr,
                addr_new,
            });
        }
        new_flags.push(ftrace_update_record(flags, addr_curr, addr_new));
    }
    let n = match arch_ftrace::ftrace_replace_code(&sites) {
        Ok(n) => n,
        Err(fault) => {
            ftrace_bug(&fault);
            return Err(Errno::EIO);
        }
    };
    for (rec, nf) in records().iter().zip(new_flags) {
        rec.flags.store(nf, Ordering::Relaxed);
    }
    set_trace_op(op_for(after));
    Ok(n)
}

/// What [`ftrace_check_sites`] found.
pub struct CheckReport {
    pub sites: usize,
    /// Sites whose bytes disagree with their record.
    pub bad: usize,
    /// Sites that hold `call ftrace_caller` (read from the text, not the flags).
    pub calls: usize,
    /// Sites that hold the NOP.
    pub nops: usize,
}

/// Reads every site back, once: checks its bytes against its record (the
/// NOP, or a call to `ftrace_caller` when enabled) and counts what it holds.
pub fn ftrace_check_sites() -> CheckReport {
    let _g = FTRACE_LOCK.lock();
    let mut report = CheckReport {
        sites: records().len(),
        bad: 0,
        calls: 0,
        nops: 0,
    };
    for rec in records() {
        let (insn, actual) = arch_ftrace::ftrace_read_site(rec.ip);
        let is_call = insn == FtraceInsn::Call(ftrace_get_addr_curr(rec));
        let is_nop = insn == FtraceInsn::Nop;
        report.calls += is_call as usize;
        report.nops += is_nop as usize;
        if (rec.enabled() && !is_call) || (!rec.enabled() && !is_nop) {
            println!(
                "ftrace_check: {} holds {}",
                crate::kallsyms::describe(rec.ip),
                hex(&actual)
            );
            report.bad += 1;
        }
    }
    report
}

/// The name of every record, in record order, made by the first
/// [`record_name`] after [`ftrace_init`].
static RECORD_NAMES: Once<Box<[&'static str]>> = Once::new();

/// What a record without a symbol is called.
const INVALID_NAME: &str = "__ftrace_invalid_address__";

/// Every record's name, looked up in one walk of the records and the
/// symbol table together (both are sorted by address): O(records +
/// symbols), where a kallsyms look-up per record is O(records * log
/// symbols). `bench` times it on its own (`record_names_per_site`).
pub fn build_record_names() -> Box<[&'static str]> {
    let recs = records();
    match crate::kallsyms::table() {
        Some(t) => t
            .lookup_sorted(recs.iter().map(|r| r.ip))
            .map(|s| s.map_or(INVALID_NAME, |s| s.name))
            .collect(),
        None => alloc::vec![INVALID_NAME; recs.len()].into_boxed_slice(),
    }
}

/// The name a record shows in available_filter_functions (Linux: %ps,
/// a kallsyms look-up every time; here the first call names every record,
/// so that reading the file or matching a glob against every record costs
/// the same per record at any number of records).
pub fn record_name(i: usize) -> &'static str {
    if records().is_empty() {
        return INVALID_NAME;
    }
    RECORD_NAMES
        .call_once(build_record_names)
        .get(i)
        .copied()
        .unwrap_or(INVALID_NAME)
}

/// Per-context recursion protection (Linux: include/linux/trace_recursion.h).
///
/// Tracing code may call traced functions, and an interrupt may arrive in
/// the middle of a callback. Each context (normal, irq, exception/NMI) has
/// its own bit per user (callback, list function), so an interrupt can still
/// trace while the code it interrupted is inside the tracer, but the tracer
/// never re-enters itself in the same context. One extra "transition" bit
/// allows a single level for an interrupt that has not yet marked its context.
pub mod recursion {
    use super::*;

    pub const FTRACE_START: u32 = 0;
    pub const LIST_START: u32 = 5;
    const TRANSITION: u32 = 4;

    /// The context's bit: 0: exception (NMI-like), 1: irq, 3: normal
    /// (Linux's bit order), from one gs-relative load of both depths.
    #[inline(always)]
    fn context_bit() -> u32 {
        let depths = percpu::this_cpu_irq_exception_depth();
        if depths == 0 {
            3
        } else if depths >> 32 != 0 {
            0
        } else {
            1
        }
    }

    /// Disables preemption and takes this context's bit; None if it is taken
    /// (and the transition bit too): the caller must not trace. Returns
    /// the bit as a mask, for [`unlock`].
    ///
    /// Hot path, task context with its bit free: `preempt_count += 1`,
    /// two gs-relative loads (the recursion bits, both interrupt depths
    /// in one word), two tests and one store, no locked instruction: all
    /// of it is this CPU's own data, and an interrupt that takes a bit
    /// releases it before returning (Linux's trace_test_and_set_recursion
    /// works the same way on current->trace_recursion). There the mask is
    /// a constant, which the caller's [`unlock`] folds into its `and`.
    /// Interrupts, exceptions and the transition bit go out of line.
    #[inline(always)]
    pub fn trylock(start: u32) -> Option<u32> {
        percpu::this_cpu_preempt_inc();
        let val = percpu::this_cpu_trace_recursion();
        let normal = 1 << (start + 3);
        if percpu::this_cpu_irq_exception_depth() | u64::from(val & normal) == 0 {
            percpu::this_cpu_set_trace_recursion(val | normal);
            return Some(normal);
        }
        trylock_slow(start, val)
    }

    /// [`trylock`] in an interrupt or an exception, or with this context's
    /// bit taken: an interrupt that has not yet marked its context may go
    /// one level further on the transition bit.
    #[cold]
    #[inline(never)]
    fn trylock_slow(start: u32, val: u32) -> Option<u32> {
        let mut bit = 1 << (start + context_bit());
        if val & bit != 0 {
            bit = 1 << (start + TRANSITION);
            if val & bit != 0 {
                percpu::this_cpu_preempt_dec();
                return None;
            }
        }
        percpu::this_cpu_set_trace_recursion(val | bit);
        Some(bit)
    }

    /// [`trylock`]'s hot path on its own, for callbacks that keep a
    /// second, out-of-line copy of their body for the other cases: takes
    /// the task context's bit if this is task context and the bit is
    /// free, with preemption disabled, and returns true; otherwise changes
    /// nothing and returns false (the caller then goes through
    /// [`trylock`]). Released by [`unlock_task`] with the same `start`:
    /// the bit is a constant, so the caller keeps nothing live for it.
    #[inline(always)]
    pub fn trylock_task(start: u32) -> bool {
        percpu::this_cpu_preempt_inc();
        let val = percpu::this_cpu_trace_recursion();
        let normal = 1 << (start + 3);
        // Both tests in one: no interrupt depth and the bit free.
        if percpu::this_cpu_irq_exception_depth() | u64::from(val & normal) == 0 {
            percpu::this_cpu_set_trace_recursion(val | normal);
            return true;
        }
        percpu::this_cpu_preempt_dec();
        false
    }

    /// Releases what [`trylock_task`] took.
    #[inline(always)]
    pub fn unlock_task(start: u32) {
        unlock(1 << (start + 3));
    }

    /// Releases the bit and re-enables preemption.
    #[inline(always)]
    pub fn unlock(bit: u32) {
        percpu::this_cpu_and_trace_recursion(!bit);
        percpu::this_cpu_preempt_dec();
    }
}

/// Number of int3 traps taken on in-flight sites (tests read this).
pub fn int3_hits() -> usize {
    text_poke::int3_hits()
}

/// The tracefs files that list the records (Linux: ftrace_init_dyn_tracefs).
pub fn init_tracefs(dir: &crate::fs::tracefs::Dentry) -> Result<(), Errno> {
    use crate::fs::tracefs::create_show;
    create_show(dir, "available_filter_functions", || {
        let mut out = String::new();
        for i in 0..records().len() {
            out.push_str(record_name(i));
            out.push('\n');
        }
        out
    })?;
    create_show(dir, "available_filter_functions_addrs", || {
        let mut out = String::new();
        for (i, r) in records().iter().enumerate() {
            let _ = writeln!(out, "{:x} {}", r.ip, record_name(i));
        }
        out
    })?;
    create_show(dir, "enabled_functions", || {
        show_records(|r| r.refcount() > 0)
    })?;
    create_show(dir, "touched_functions", || {
        show_records(|r| r.flags.load(Ordering::Relaxed) & FTRACE_FL_TOUCHED != 0)
    })?;
    create_show(dir, "dyn_ftrace_total_info", || {
        let n = records().len();
        alloc::format!("{} pages:{} groups: 1\n", n, n / 256 + 1)
    })?;
    Ok(())
}

/// `name (refs)` and Linux's flag columns (R I D O M: none apply here).
fn show_records(pick: impl Fn(&DynFtrace) -> bool) -> String {
    let mut out = String::new();
    for (i, r) in records().iter().enumerate() {
        if pick(r) {
            let _ = writeln!(out, "{} ({})         ", record_name(i), r.refcount());
        }
    }
    out
}
