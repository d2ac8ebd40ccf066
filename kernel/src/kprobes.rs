//! Kprobes: a breakpoint on any instruction of kernel text, with handlers
//! that see the registers (Linux: kernel/kprobes.c; the x86 side is
//! arch::kprobes, Linux's arch/x86/kernel/kprobes/core.c).
//!
//! [`register_kprobe`] checks the address (kernel text, not blacklisted,
//! the first byte of an instruction: the function is decoded from its
//! start), prepares the instruction (emulated, or copied into an
//! out-of-line slot to be single-stepped) and writes `int3` over its first
//! byte. When a CPU reaches it:
//!  1. the breakpoint handler finds the probe by address and runs its
//!     `pre_handler` with the interrupted registers (`regs.rip` is the
//!     probe's address + 1, as on Linux); a pre-handler that returns true
//!     has set the registers itself and the instruction is skipped;
//!  2. otherwise the original instruction runs: emulated on `regs`, or
//!     single-stepped in its slot with the trap flag, the debug exception
//!     coming back here;
//!  3. the `post_handler` runs, and the CPU continues after the
//!     instruction.
//!
//! Several probes on one address share one breakpoint: the site is an
//! aggregate (Linux's aggr_kprobe) whose handlers run each probe's in
//! registration order. A probe hit while this CPU is already inside a
//! probe's handlers (a handler calls a probed function) does not run its
//! handlers: the instruction just runs, and every probe of the site counts
//! it in `nmissed` (Linux's reenter_kprobe).
//!
//! The handlers run with interrupts off, from the breakpoint to the end of
//! the step. The table of sites is replaced, never changed in place, and a
//! removed site is freed only after an RCU-sched grace period, which no CPU
//! can pass inside a handler: that is how [`unregister_kprobe`] knows no
//! CPU still runs a removed probe.
//!
//! Refused addresses (Linux's kprobe blacklist): the functions that must not
//! be traced (kernel/notrace.list: the tracer, the breakpoint and exception
//! paths, the code patcher, per-CPU data...), this module and its arch part,
//! the out-of-line slots, and a static key's site: EINVAL. Not the first
//! byte of an instruction, or inside a function-tracing call site: EILSEQ.
//! An instruction that cannot be emulated nor stepped: EOPNOTSUPP.
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use spin::{Mutex, Once};
use tracer::errno::Errno;

use crate::arch::kprobes::{self as arch_kp, ArchInsn};
use crate::arch::percpu::{self, MAX_CPUS};

pub use crate::arch::entry::PtRegs;

/// Runs before the probed instruction. Returning true says the handler
/// changed `regs` to resume elsewhere: the instruction is skipped.
pub type PreHandler = fn(&Kprobe, &mut PtRegs) -> bool;
/// Runs after the probed instruction.
pub type PostHandler = fn(&Kprobe, &mut PtRegs);

const KPROBE_FLAG_REGISTERED: u32 = 1;
const KPROBE_FLAG_DISABLED: u32 = 2;

/// One probe (Linux: struct kprobe).
pub struct Kprobe {
    /// The probed address (symbol + offset, resolved by the caller; see
    /// [`kprobe_addr`]).
    pub addr: u64,
    pub pre_handler: Option<PreHandler>,
    pub post_handler: Option<PostHandler>,
    /// The user's context (e.g. a trace_kprobe).
    pub data: usize,
    /// Hits whose handlers did not run because the CPU was already inside
    /// a probe's handler (Linux: nmissed).
    pub nmissed: AtomicU64,
    flags: AtomicU32,
}

impl Kprobe {
    pub const fn new(
        addr: u64,
        pre_handler: Option<PreHandler>,
        post_handler: Option<PostHandler>,
        data: usize,
    ) -> Kprobe {
        Kprobe {
            addr,
            pre_handler,
            post_handler,
            data,
            nmissed: AtomicU64::new(0),
            flags: AtomicU32::new(0),
        }
    }

    /// True while the probe is disabled (Linux: kprobe_disabled).
    pub fn is_disabled(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & KPROBE_FLAG_DISABLED != 0
    }

    /// True between a successful register and the unregister.
    pub fn is_registered(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & KPROBE_FLAG_REGISTERED != 0
    }
}

/// One probed address with its probes, as the breakpoint handler sees it.
struct Site {
    addr: u64,
    probes: Vec<Arc<Kprobe>>,
    arch: ArchInsn,
}

/// The registry, changed under its lock; the handlers read [`TABLE`].
struct Entry {
    probes: Vec<Arc<Kprobe>>,
    arch: ArchInsn,
    armed: bool,
}

static REGISTRY: Mutex<BTreeMap<u64, Entry>> = Mutex::new(BTreeMap::new());

/// The sites sorted by address, replaced as a whole on every change.
static TABLE: AtomicPtr<Vec<Site>> = AtomicPtr::new(core::ptr::null_mut());

/// Breakpoint hits that ran handlers (for tests and the shell).
static HITS: AtomicU64 = AtomicU64::new(0);
/// Breakpoint hits while a handler was running (reentered).
static REENTERED: AtomicU64 = AtomicU64::new(0);

// Per-CPU state of the probe being handled (Linux: kprobe_ctlblk).
const KPROBE_HIT_ACTIVE: u32 = 1;
const KPROBE_HIT_SS: u32 = 2;
const KPROBE_HIT_SSDONE: u32 = 3;
const KPROBE_REENTER: u32 = 4;

struct Kcb {
    /// The site being handled (`*const Site`), 0 for none.
    cur: AtomicUsize,
    status: AtomicU32,
    /// TF and IF of the interrupted code, while its instruction is stepped.
    saved_flags: AtomicU64,
    /// The outer probe's state while a reentered one is stepped.
    prev_cur: AtomicUsize,
    prev_status: AtomicU32,
    prev_flags: AtomicU64,
}

static KCB: [Kcb; MAX_CPUS] = [const {
    Kcb {
        cur: AtomicUsize::new(0),
        status: AtomicU32::new(0),
        saved_flags: AtomicU64::new(0),
        prev_cur: AtomicUsize::new(0),
        prev_status: AtomicU32::new(0),
        prev_flags: AtomicU64::new(0),
    }
}; MAX_CPUS];

/// Installs the breakpoint and debug handlers. Called once at boot.
pub fn init() {
    crate::arch::traps::set_kprobe_hooks(kprobe_int3_handler, kprobe_debug_handler);
}

// ---------------------------------------------------------------------------
// The exception side. Everything here runs with interrupts off and calls no
// traceable code (this module is in kernel/notrace.list) except the probes'
// own handlers.

/// The site at `addr` in the current table. Written out by hand: a generic
/// search would be compiled, and traced, in this crate.
#[inline(always)]
fn get_site(addr: u64) -> Option<&'static Site> {
    let table = TABLE.load(Ordering::Acquire);
    if table.is_null() {
        return None;
    }
    // SAFETY: a published table is freed only after a grace period, which
    // cannot end while this CPU runs with interrupts off (the breakpoint
    // and debug handlers do, until the probe is done with).
    let sites = unsafe { &*table };
    let (mut lo, mut hi) = (0, sites.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let s = sites.get(mid)?;
        if s.addr == addr {
            return Some(s);
        }
        if s.addr < addr {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    None
}

#[inline(always)]
fn this_kcb() -> &'static Kcb {
    &KCB[percpu::cpu_id()]
}

/// Every probe of the site counts a missed hit (Linux:
/// kprobes_inc_nmissed_count).
#[inline(always)]
fn inc_nmissed(site: &Site) {
    for p in site.probes.iter() {
        p.nmissed.fetch_add(1, Ordering::Relaxed);
    }
}

/// The aggregate's pre-handler: each enabled probe's in turn; the first
/// that returns true ends the walk (Linux: aggr_pre_handler).
#[inline(always)]
fn pre_handlers(site: &Site, regs: &mut PtRegs) -> bool {
    for p in site.probes.iter() {
        if let Some(h) = p.pre_handler {
            if !p.is_disabled() && h(p, regs) {
                return true;
            }
        }
    }
    false
}

#[inline(always)]
fn post_handlers(site: &Site, regs: &mut PtRegs) {
    for p in site.probes.iter() {
        if let Some(h) = p.post_handler {
            if !p.is_disabled() {
                h(p, regs);
            }
        }
    }
}

/// The breakpoint handler (Linux: kprobe_int3_handler). False if no probe
/// is at the breakpoint.
fn kprobe_int3_handler(regs: &mut PtRegs) -> bool {
    let addr = regs.rip - 1;
    let Some(site) = get_site(addr) else {
        return false;
    };
    let kcb = this_kcb();
    match kcb.status.load(Ordering::Relaxed) {
        0 => {}
        KPROBE_HIT_ACTIVE | KPROBE_HIT_SSDONE => {
            // A handler reached a probe: run the instruction only (Linux:
            // reenter_kprobe).
            REENTERED.fetch_add(1, Ordering::Relaxed);
            inc_nmissed(site);
            kcb.prev_cur
                .store(kcb.cur.load(Ordering::Relaxed), Ordering::Relaxed);
            kcb.prev_status
                .store(kcb.status.load(Ordering::Relaxed), Ordering::Relaxed);
            kcb.prev_flags
                .store(kcb.saved_flags.load(Ordering::Relaxed), Ordering::Relaxed);
            if arch_kp::emulate(&site.arch, regs) {
                return true;
            }
            kcb.cur
                .store(site as *const Site as usize, Ordering::Relaxed);
            kcb.status.store(KPROBE_REENTER, Ordering::Relaxed);
            kcb.saved_flags.store(
                arch_kp::setup_singlestep(&site.arch, regs),
                Ordering::Relaxed,
            );
            return true;
        }
        _ => crate::arch::traps::die("kprobes: breakpoint while single-stepping a probe", regs),
    }
    HITS.fetch_add(1, Ordering::Relaxed);
    kcb.cur
        .store(site as *const Site as usize, Ordering::Relaxed);
    kcb.status.store(KPROBE_HIT_ACTIVE, Ordering::Relaxed);
    if pre_handlers(site, regs) {
        // The handler moved rip: the instruction is skipped.
        reset_current(kcb);
        return true;
    }
    if arch_kp::emulate(&site.arch, regs) {
        kcb.status.store(KPROBE_HIT_SSDONE, Ordering::Relaxed);
        post_handlers(site, regs);
        reset_current(kcb);
        return true;
    }
    kcb.saved_flags.store(
        arch_kp::setup_singlestep(&site.arch, regs),
        Ordering::Relaxed,
    );
    kcb.status.store(KPROBE_HIT_SS, Ordering::Relaxed);
    true
}

#[inline(always)]
fn reset_current(kcb: &Kcb) {
    kcb.status.store(0, Ordering::Relaxed);
    kcb.cur.store(0, Ordering::Relaxed);
}

/// The debug exception after a probe's single step (Linux:
/// kprobe_debug_handler). False if this CPU was not stepping a probe.
fn kprobe_debug_handler(regs: &mut PtRegs) -> bool {
    let kcb = this_kcb();
    let status = kcb.status.load(Ordering::Relaxed);
    if status != KPROBE_HIT_SS && status != KPROBE_REENTER {
        return false;
    }
    if !arch_kp::debug_single_step_done() {
        return false;
    }
    // SAFETY: set by the breakpoint handler on this CPU, which has run with
    // interrupts off since: the site's table is still alive.
    let site = unsafe { &*(kcb.cur.load(Ordering::Relaxed) as *const Site) };
    arch_kp::resume_execution(&site.arch, regs, kcb.saved_flags.load(Ordering::Relaxed));
    if status == KPROBE_REENTER {
        kcb.cur
            .store(kcb.prev_cur.load(Ordering::Relaxed), Ordering::Relaxed);
        kcb.status
            .store(kcb.prev_status.load(Ordering::Relaxed), Ordering::Relaxed);
        kcb.saved_flags
            .store(kcb.prev_flags.load(Ordering::Relaxed), Ordering::Relaxed);
        return true;
    }
    kcb.status.store(KPROBE_HIT_SSDONE, Ordering::Relaxed);
    post_handlers(site, regs);
    reset_current(kcb);
    true
}

// ---------------------------------------------------------------------------
// Registration.

/// The blacklist's patterns: kernel/notrace.list (the code the tracer and
/// the breakpoint path run on) and this module's own code.
fn blacklist() -> &'static [&'static str] {
    static LIST: Once<Vec<&'static str>> = Once::new();
    LIST.call_once(|| {
        include_str!("../notrace.list")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect()
    })
}

/// True if the function `name` may not be probed (Linux:
/// within_kprobe_blacklist).
pub fn within_kprobe_blacklist(name: &str) -> bool {
    blacklist()
        .iter()
        .any(|p| tracer::filter::glob_match(p.as_bytes(), name.as_bytes()))
}

/// The address of `symbol` + `offset` (Linux: _kprobe_addr). ENOENT for an
/// unknown symbol; EINVAL for an offset past the function's end.
pub fn kprobe_addr(symbol: &str, offset: u64) -> Result<u64, Errno> {
    let table = crate::kallsyms::table().ok_or(Errno::ENOENT)?;
    let sym = table.find(symbol).ok_or(Errno::ENOENT)?;
    if offset >= u64::from(sym.size) {
        return Err(Errno::EINVAL);
    }
    Ok(sym.addr + offset)
}

/// True if `addr` is the entry of a function (Linux: kprobe_on_func_entry,
/// which "r" probes require).
pub fn kprobe_on_func_entry(addr: u64) -> bool {
    crate::kallsyms::table()
        .and_then(|t| t.lookup(addr))
        .is_some_and(|s| s.offset == 0)
}

/// The checks that do not depend on the instruction (Linux:
/// check_kprobe_address_safe): returns the function containing `addr`.
fn check_kprobe_address_safe(addr: u64) -> Result<(u64, u32), Errno> {
    let sym = crate::kallsyms::table()
        .and_then(|t| t.lookup(addr))
        .ok_or(Errno::EINVAL)?;
    if !crate::arch::core_kernel_text(addr)
        || arch_kp::insn_slots_range().contains(&addr)
        || within_kprobe_blacklist(sym.name)
    {
        return Err(Errno::EINVAL);
    }
    // A static key's site is rewritten by jump labels (Linux:
    // jump_label_text_reserved).
    let site_len = crate::arch::jump_label::JUMP_LABEL_NOP_SIZE;
    if crate::jump_label::jump_entries()
        .iter()
        .any(|e| addr >= e.code && addr < e.code + site_len)
    {
        return Err(Errno::EINVAL);
    }
    // A function-tracing call site belongs to ftrace.
    let mcount = crate::arch::ftrace::MCOUNT_INSN_SIZE;
    let recs = crate::trace::ftrace::records();
    let i = recs.partition_point(|r| r.ip + mcount <= addr);
    if let Some(r) = recs.get(i) {
        if r.ip <= addr {
            return Err(if r.ip == addr {
                Errno::EOPNOTSUPP
            } else {
                Errno::EILSEQ
            });
        }
    }
    Ok((sym.addr, sym.size))
}

/// Rebuilds the handlers' table from the registry and frees the old one
/// after a grace period. Called with the registry locked.
fn publish(reg: &BTreeMap<u64, Entry>) {
    let table: Vec<Site> = reg
        .iter()
        .map(|(&addr, e)| Site {
            addr,
            probes: e.probes.clone(),
            arch: e.arch,
        })
        .collect();
    let new = alloc::boxed::Box::into_raw(alloc::boxed::Box::new(table));
    let old = TABLE.swap(new, Ordering::AcqRel);
    crate::rcu::synchronize_sched();
    if !old.is_null() {
        // SAFETY: unpublished, and a grace period has passed: no handler
        // can still hold it.
        drop(unsafe { alloc::boxed::Box::from_raw(old) });
    }
}

/// The bytes of `[start, start + len)` as they were before any probe:
/// each armed probe's int3 replaced by its original byte (Linux:
/// recover_probed_instruction).
fn recover_text(reg: &BTreeMap<u64, Entry>, start: u64, len: u32) -> Vec<u8> {
    let mut buf = arch_kp::copy_text(start, len as usize);
    for (&a, e) in reg.range(start..start + u64::from(len)) {
        buf[(a - start) as usize] = e.arch.opcode();
    }
    buf
}

/// Registers `kp` (Linux: register_kprobe). Errors: EINVAL an address
/// outside kernel text, blacklisted, or a probe already registered;
/// EILSEQ not an instruction boundary; EOPNOTSUPP an instruction that
/// cannot be probed (or a function-tracing call site); ENOMEM no slot.
pub fn register_kprobe(kp: Arc<Kprobe>) -> Result<(), Errno> {
    let addr = kp.addr;
    let mut reg = REGISTRY.lock();
    if kp.is_registered() {
        return Err(Errno::EINVAL);
    }
    let enabled = !kp.is_disabled();
    if let Some(e) = reg.get_mut(&addr) {
        // Another probe on this address: join its site.
        e.probes.push(kp.clone());
        let arm = enabled && !e.armed;
        e.armed |= arm;
        kp.flags.fetch_or(KPROBE_FLAG_REGISTERED, Ordering::Relaxed);
        publish(&reg);
        if arm {
            arch_kp::arch_arm_kprobe(addr);
        }
        return Ok(());
    }
    let (start, size) = check_kprobe_address_safe(addr)?;
    let func = recover_text(&reg, start, size);
    let arch = arch_kp::arch_prepare_kprobe(&func, start, addr)?;
    reg.insert(
        addr,
        Entry {
            probes: alloc::vec![kp.clone()],
            arch,
            armed: enabled,
        },
    );
    kp.flags.fetch_or(KPROBE_FLAG_REGISTERED, Ordering::Relaxed);
    publish(&reg);
    if enabled {
        arch_kp::arch_arm_kprobe(addr);
    }
    Ok(())
}

/// Removes `kp` (Linux: unregister_kprobe). Returns once no CPU can be in
/// its handlers; the text is back as it was if it was the address's last
/// probe. Does nothing for a probe that is not registered.
pub fn unregister_kprobe(kp: &Arc<Kprobe>) {
    let mut reg = REGISTRY.lock();
    let Some(e) = reg.get_mut(&kp.addr) else {
        return;
    };
    let Some(i) = e.probes.iter().position(|p| Arc::ptr_eq(p, kp)) else {
        return;
    };
    e.probes.remove(i);
    kp.flags
        .fetch_and(!KPROBE_FLAG_REGISTERED, Ordering::Relaxed);
    if e.probes.is_empty() {
        let e = reg.remove(&kp.addr).expect("the entry just found");
        if e.armed {
            arch_kp::arch_disarm_kprobe(kp.addr, &e.arch);
        }
        publish(&reg);
        // No CPU can be stepping its slot any more.
        arch_kp::arch_remove_kprobe(&e.arch);
    } else {
        let disarm = e.armed && e.probes.iter().all(|p| p.is_disabled());
        if disarm {
            e.armed = false;
            arch_kp::arch_disarm_kprobe(kp.addr, &e.arch);
        }
        publish(&reg);
    }
}

/// Stops `kp`'s handlers from running; the breakpoint goes when no probe
/// of its address is enabled (Linux: disable_kprobe). EINVAL if it is not
/// registered.
pub fn disable_kprobe(kp: &Kprobe) -> Result<(), Errno> {
    let mut reg = REGISTRY.lock();
    if !kp.is_registered() {
        return Err(Errno::EINVAL);
    }
    kp.flags.fetch_or(KPROBE_FLAG_DISABLED, Ordering::Relaxed);
    if let Some(e) = reg.get_mut(&kp.addr) {
        if e.armed && e.probes.iter().all(|p| p.is_disabled()) {
            e.armed = false;
            arch_kp::arch_disarm_kprobe(kp.addr, &e.arch);
        }
    }
    Ok(())
}

/// Lets `kp`'s handlers run again (Linux: enable_kprobe). EINVAL if it is
/// not registered.
pub fn enable_kprobe(kp: &Kprobe) -> Result<(), Errno> {
    let mut reg = REGISTRY.lock();
    if !kp.is_registered() {
        return Err(Errno::EINVAL);
    }
    kp.flags.fetch_and(!KPROBE_FLAG_DISABLED, Ordering::Relaxed);
    if let Some(e) = reg.get_mut(&kp.addr) {
        if !e.armed {
            e.armed = true;
            arch_kp::arch_arm_kprobe(kp.addr);
        }
    }
    Ok(())
}

/// Counters for tests and the shell: (hits that ran handlers, reentered
/// hits, probed addresses, slots in use).
pub fn stats() -> (u64, u64, usize, usize) {
    (
        HITS.load(Ordering::Relaxed),
        REENTERED.load(Ordering::Relaxed),
        REGISTRY.lock().len(),
        arch_kp::slots_in_use(),
    )
}
