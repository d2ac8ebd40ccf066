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

/// One probed address with its probes, as the handlers see it.
struct Site {
    addr: u64,
    probes: Vec<Arc<Kprobe>>,
    /// The breakpoint's instruction; None for a function-tracing call site,
    /// reached through ftrace instead.
    arch: Option<ArchInsn>,
}

/// The registry, changed under its lock; the handlers read [`TABLE`].
struct Entry {
    probes: Vec<Arc<Kprobe>>,
    arch: Option<ArchInsn>,
    /// The int3 is in (or, on ftrace, the site is in the ops' set).
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
    crate::trace::ftrace::set_ftrace_regs_hook(kprobe_ftrace_handler, &KPROBE_FTRACE_OPS);
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
    // A few sites (the usual case): a scan costs less than the search.
    if sites.len() <= 4 {
        return sites.iter().find(|s| s.addr == addr);
    }
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
    let Some(arch) = site.arch.as_ref() else {
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
            if arch_kp::emulate(arch, regs) {
                return true;
            }
            kcb.cur
                .store(site as *const Site as usize, Ordering::Relaxed);
            kcb.status.store(KPROBE_REENTER, Ordering::Relaxed);
            kcb.saved_flags
                .store(arch_kp::setup_singlestep(arch, regs), Ordering::Relaxed);
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
    if arch_kp::emulate(arch, regs) {
        kcb.status.store(KPROBE_HIT_SSDONE, Ordering::Relaxed);
        post_handlers(site, regs);
        reset_current(kcb);
        return true;
    }
    kcb.saved_flags
        .store(arch_kp::setup_singlestep(arch, regs), Ordering::Relaxed);
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
    let Some(arch) = site.arch.as_ref() else {
        return false;
    };
    arch_kp::resume_execution(arch, regs, kcb.saved_flags.load(Ordering::Relaxed));
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

/// A probe on a function-tracing call site, called by `ftrace_regs_caller`
/// with the registers at the site (Linux: kprobe_ftrace_handler). The site
/// is a NOP to the probed code: the pre-handlers see `regs.rip` one past
/// the site's first byte, as after an int3, then the post-handlers see it
/// after the site.
/// A pre-handler that returns true has set `regs.rip` itself. Interrupts may
/// be on here; preemption is off for the handlers, and a hit while this CPU
/// is in a probe's handler counts as missed.
extern "C" fn kprobe_ftrace_handler(ip: u64, regs: &mut PtRegs) {
    percpu::this_cpu_preempt_inc();
    if let Some(site) = get_site_preempt_off(ip) {
        if site.arch.is_none() {
            let kcb = this_kcb();
            if kcb.status.load(Ordering::Relaxed) != 0 {
                REENTERED.fetch_add(1, Ordering::Relaxed);
                inc_nmissed(site);
            } else {
                HITS.fetch_add(1, Ordering::Relaxed);
                kcb.cur
                    .store(site as *const Site as usize, Ordering::Relaxed);
                kcb.status.store(KPROBE_HIT_ACTIVE, Ordering::Relaxed);
                let resume = regs.rip;
                regs.rip = ip + 1;
                // One probe (the usual case): its handlers without the
                // aggregate's walks.
                let skipped = match site.probes.as_slice() {
                    [p] if p.is_disabled() => false,
                    [p] => p.pre_handler.is_some_and(|h| h(p, regs)),
                    _ => pre_handlers(site, regs),
                };
                if !skipped {
                    regs.rip = resume;
                    kcb.status.store(KPROBE_HIT_SSDONE, Ordering::Relaxed);
                    match site.probes.as_slice() {
                        [p] => {
                            if let Some(h) = p.post_handler {
                                if !p.is_disabled() {
                                    h(p, regs);
                                }
                            }
                        }
                        _ => post_handlers(site, regs),
                    }
                }
                reset_current(kcb);
            }
        }
    }
    percpu::this_cpu_preempt_dec();
}

/// [`get_site`] for a caller with preemption (not interrupts) off: the
/// grace period waits for preemption to be on again, too.
#[inline(always)]
fn get_site_preempt_off(addr: u64) -> Option<&'static Site> {
    get_site(addr)
}

/// The ftrace_ops of probes on call sites: its set is the probed sites,
/// its sites call `ftrace_regs_caller`, which runs [`kprobe_ftrace_handler`]
/// (Linux: kprobe_ftrace_ops with FTRACE_OPS_FL_SAVE_REGS). Its own
/// callback does nothing: the registers' hook does the work.
static KPROBE_FTRACE_OPS: crate::trace::ftrace::FtraceOps =
    crate::trace::ftrace::FtraceOps::new("kprobe", kprobe_ftrace_stub).save_regs();

extern "C" fn kprobe_ftrace_stub(_: u64, _: *mut u64, _: &crate::trace::ftrace::FtraceOps) {}

/// Makes the ops' set the armed call-site probes and patches the sites
/// (Linux: arm_kprobe_ftrace / disarm_kprobe_ftrace). Called with the
/// registry locked. ENODEV etc. from ftrace.
fn kprobe_ftrace_update(reg: &BTreeMap<u64, Entry>) -> Result<(), Errno> {
    use crate::trace::ftrace;
    let mut wanted = alloc::vec![false; ftrace::records().len()];
    let mut any = false;
    for (&addr, e) in reg.iter() {
        if e.arch.is_none() && e.armed {
            if let Some(i) = ftrace::record_index(addr) {
                wanted[i] = true;
                any = true;
            }
        }
    }
    KPROBE_FTRACE_OPS.set_wanted(&wanted);
    let registered = KPROBE_FTRACE_REGISTERED.load(Ordering::Relaxed);
    match (registered, any) {
        (false, true) => {
            ftrace::register_ftrace_function(&KPROBE_FTRACE_OPS)?;
            KPROBE_FTRACE_REGISTERED.store(true, Ordering::Relaxed);
        }
        (true, false) => {
            ftrace::unregister_ftrace_function(&KPROBE_FTRACE_OPS)?;
            KPROBE_FTRACE_REGISTERED.store(false, Ordering::Relaxed);
        }
        (true, true) => ftrace::ftrace_update()?,
        (false, false) => {}
    }
    Ok(())
}

static KPROBE_FTRACE_REGISTERED: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(false);

/// Arms or disarms the probe at `addr`: its int3, or its call site.
fn arm(reg: &mut BTreeMap<u64, Entry>, addr: u64, on: bool) -> Result<(), Errno> {
    let Some(e) = reg.get_mut(&addr) else {
        return Ok(());
    };
    if e.armed == on {
        return Ok(());
    }
    e.armed = on;
    match e.arch {
        Some(a) => {
            if on {
                arch_kp::arch_arm_kprobe(addr);
            } else {
                arch_kp::arch_disarm_kprobe(addr, &a);
            }
            Ok(())
        }
        None => {
            let r = kprobe_ftrace_update(reg);
            if r.is_err() {
                if let Some(e) = reg.get_mut(&addr) {
                    e.armed = !on;
                }
            }
            r
        }
    }
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
        if r.ip < addr {
            return Err(Errno::EILSEQ);
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
        if let Some(arch) = &e.arch {
            buf[(a - start) as usize] = arch.opcode();
        }
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
        kp.flags.fetch_or(KPROBE_FLAG_REGISTERED, Ordering::Relaxed);
        publish(&reg);
        if enabled {
            if let Err(err) = arm(&mut reg, addr, true) {
                let e = reg.get_mut(&addr).expect("the entry just used");
                e.probes.pop();
                kp.flags
                    .fetch_and(!KPROBE_FLAG_REGISTERED, Ordering::Relaxed);
                publish(&reg);
                return Err(err);
            }
        }
        return Ok(());
    }
    let (start, size) = check_kprobe_address_safe(addr)?;
    // A function-tracing call site is reached through ftrace (Linux:
    // kprobes on ftrace), any other instruction through an int3.
    let arch = if crate::trace::ftrace::record_index(addr).is_some() {
        None
    } else {
        let func = recover_text(&reg, start, size);
        Some(arch_kp::arch_prepare_kprobe(&func, start, addr)?)
    };
    reg.insert(
        addr,
        Entry {
            probes: alloc::vec![kp.clone()],
            arch,
            armed: false,
        },
    );
    kp.flags.fetch_or(KPROBE_FLAG_REGISTERED, Ordering::Relaxed);
    publish(&reg);
    if enabled {
        if let Err(err) = arm(&mut reg, addr, true) {
            reg.remove(&addr);
            kp.flags
                .fetch_and(!KPROBE_FLAG_REGISTERED, Ordering::Relaxed);
            publish(&reg);
            if let Some(a) = &arch {
                arch_kp::arch_remove_kprobe(a);
            }
            return Err(err);
        }
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
        let _ = arm(&mut reg, kp.addr, false);
        let e = reg.remove(&kp.addr).expect("the entry just found");
        publish(&reg);
        // No CPU can be stepping its slot any more.
        if let Some(a) = &e.arch {
            arch_kp::arch_remove_kprobe(a);
        }
    } else {
        if e.probes.iter().all(|p| p.is_disabled()) {
            let _ = arm(&mut reg, kp.addr, false);
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
    let all_off = reg
        .get(&kp.addr)
        .is_some_and(|e| e.probes.iter().all(|p| p.is_disabled()));
    if all_off {
        arm(&mut reg, kp.addr, false)?;
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
    if let Err(e) = arm(&mut reg, kp.addr, true) {
        kp.flags.fetch_or(KPROBE_FLAG_DISABLED, Ordering::Relaxed);
        return Err(e);
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

// ---------------------------------------------------------------------------
// Kretprobes (Linux: kernel/kprobes.c's kretprobe part, with rethook).
//
// A kretprobe is a kprobe at the function's entry whose pre-handler
// hijacks the return address, through the task's rethook stack (apart from
// function_graph's shadow stack; trace::fgraph's rethook part): the frame
// holds the kretprobe's cookie,
// and when the function returns through `rethook_trampoline` (which saves
// every register), [`kretprobe_return`] runs the handler with the return
// value in `regs.rax` and the return address in `regs.rip`. The kprobe is
// on the function's function-tracing call site when it has one, reached
// through ftrace (`ftrace_regs_caller`), not an int3: in the fentry build
// that is the first instruction; in the mcount build the site comes after
// the prologue and the return address is found above the frame pointer,
// as function_graph finds it there. A function without a site (notrace)
// gets an int3 on its first instruction.

/// Runs when the probed function returns, with the registers as the
/// function left them (as Linux's rethook trampoline saves them):
/// `regs.rax` is its return value, `regs.rdx` the high half, rbx, rbp and
/// r12-r15 the caller's values (callee-saved), the other caller-saved
/// registers whatever the function left in them; `regs.rip` is the
/// address it returns to and `regs.rsp` the stack pointer after the
/// return.
pub type KretprobeHandler = fn(&Kretprobe, &mut PtRegs);
/// Runs at the function's entry; returning true says not to watch this
/// call's return (Linux: an entry_handler returning non-zero).
pub type KretprobeEntryHandler = fn(&Kretprobe, &mut PtRegs) -> bool;

/// A return probe (Linux: struct kretprobe).
pub struct Kretprobe {
    /// The function's address (its entry: see [`kprobe_on_func_entry`]).
    pub addr: u64,
    pub handler: Option<KretprobeHandler>,
    pub entry_handler: Option<KretprobeEntryHandler>,
    /// Calls watched at once (across tasks and nesting); 0 means Linux's
    /// default, max(10, 2 * CPUs). A call past it counts in `nmissed`.
    pub maxactive: u32,
    pub data: usize,
    /// Calls whose return was not watched: maxactive reached, or the
    /// task's rethook stack full.
    pub nmissed: AtomicU64,
    /// Calls being watched now.
    nactive: AtomicU32,
    /// The cookie in its rethook frames (0 while not registered).
    cookie: AtomicU64,
    kp: Mutex<Option<Arc<Kprobe>>>,
}

impl Kretprobe {
    pub const fn new(
        addr: u64,
        handler: Option<KretprobeHandler>,
        entry_handler: Option<KretprobeEntryHandler>,
        maxactive: u32,
        data: usize,
    ) -> Kretprobe {
        Kretprobe {
            addr,
            handler,
            entry_handler,
            maxactive,
            data,
            nmissed: AtomicU64::new(0),
            nactive: AtomicU32::new(0),
            cookie: AtomicU64::new(0),
            kp: Mutex::new(None),
        }
    }

    /// True between a successful register and the unregister.
    pub fn is_registered(&self) -> bool {
        self.cookie.load(Ordering::Relaxed) != 0
    }

    /// The kprobe at its entry (for enable/disable and its own nmissed).
    pub fn kprobe(&self) -> Option<Arc<Kprobe>> {
        self.kp.lock().clone()
    }
}

/// Registered kretprobes, by the low byte of their cookie.
const MAX_KRETPROBES: usize = 256;
static KRETPROBES: [AtomicPtr<Kretprobe>; MAX_KRETPROBES] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_KRETPROBES];
/// The registered ones, kept alive here.
static KRETPROBE_LIST: Mutex<Vec<Arc<Kretprobe>>> = Mutex::new(Vec::new());
/// Makes each registration's cookie new, so that a frame left by a removed
/// kretprobe never runs another's handler.
static KRETPROBE_GEN: AtomicU64 = AtomicU64::new(0);

/// Where a kretprobe's kprobe goes for the function at `addr`: its
/// function-tracing call site when it has one, reached through ftrace
/// (Linux's kprobes on ftrace; `ftrace_regs_caller`, no int3), otherwise
/// its first instruction (an int3). In the fentry build the site is the
/// first instruction, with the return address on top of the stack as at
/// an int3 there; in the mcount build it comes after the prologue's
/// `push rbp; mov rbp, rsp`, and the return address is just above the
/// function's frame pointer, where function_graph finds it on the same
/// site (see [`kretprobe_ret_slot`]).
fn kretprobe_hook_addr(addr: u64) -> u64 {
    let Some(size) = crate::kallsyms::table()
        .and_then(|t| t.lookup(addr))
        .filter(|s| s.offset == 0)
        .map(|s| u64::from(s.size))
    else {
        return addr;
    };
    let recs = crate::trace::ftrace::records();
    let i = recs.partition_point(|r| r.ip < addr);
    match recs.get(i) {
        Some(r) if r.ip < addr + size => r.ip,
        _ => addr,
    }
}

/// The stack slot holding the return address of the function `rp` probes,
/// at its kprobe `kp`: the top of the stack at the function's first
/// instruction, the word above the frame pointer at its mcount call site
/// (the traced function's `rbp`, as `ftrace_regs_caller` saved it).
#[inline(always)]
fn kretprobe_ret_slot(kp: &Kprobe, rp: &Kretprobe, regs: &PtRegs) -> u64 {
    if kp.addr == rp.addr {
        regs.rsp
    } else {
        regs.rbp + 8
    }
}

/// The kretprobe whose kprobe this is (its `data` is the table index).
#[inline(always)]
fn kretprobe_of(kp: &Kprobe) -> Option<&'static Kretprobe> {
    let p = KRETPROBES.get(kp.data)?.load(Ordering::Acquire);
    // SAFETY: non-null entries point at a kretprobe held by KRETPROBE_LIST
    // until a grace period after the entry is cleared; handlers run with
    // interrupts (or preemption) off.
    unsafe { p.as_ref() }
}

/// The entry kprobe's pre-handler (Linux: pre_handler_kretprobe).
fn pre_handler_kretprobe(kp: &Kprobe, regs: &mut PtRegs) -> bool {
    let Some(rp) = kretprobe_of(kp) else {
        return false;
    };
    let max = match rp.maxactive {
        0 => core::cmp::max(10, 2 * crate::arch::nr_cpus() as u32),
        n => n,
    };
    if rp.nactive.fetch_add(1, Ordering::Relaxed) >= max {
        rp.nactive.fetch_sub(1, Ordering::Relaxed);
        rp.nmissed.fetch_add(1, Ordering::Relaxed);
        return false;
    }
    let slot = kretprobe_ret_slot(kp, rp, regs);
    if let Some(eh) = rp.entry_handler {
        if kretprobe_entry_handler(rp, eh, regs, slot) {
            rp.nactive.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
    }
    let cookie = rp.cookie.load(Ordering::Relaxed);
    // SAFETY: `slot` holds the return address of the function this
    // kprobe's site belongs to, on this task's stack (kretprobe_ret_slot).
    if !unsafe { crate::trace::fgraph::rethook_hijack(cookie, slot as *mut u64) } {
        rp.nactive.fetch_sub(1, Ordering::Relaxed);
        rp.nmissed.fetch_add(1, Ordering::Relaxed);
    }
    false
}

/// Runs `rp`'s entry handler `eh` (true: do not watch this call). It sees
/// the stack and instruction pointers as at the function's entry even on
/// the mcount call site (`slot`: the return address's; the other
/// registers are as the prologue left them there); both are put back for
/// the site's other probes. Out of line: the usual kretprobe has none.
#[inline(never)]
fn kretprobe_entry_handler(
    rp: &Kretprobe,
    eh: KretprobeEntryHandler,
    regs: &mut PtRegs,
    slot: u64,
) -> bool {
    let (rsp, rip) = (regs.rsp, regs.rip);
    regs.rsp = slot;
    regs.rip = rp.addr + 1;
    let skip = eh(rp, regs);
    (regs.rsp, regs.rip) = (rsp, rip);
    skip
}

/// A kretprobe's frame returned (the rethook handler, from
/// `rethook_trampoline` with every register saved): runs its handler if
/// the kretprobe is still the one that pushed the frame.
fn kretprobe_return(cookie: u64, regs: &mut PtRegs) {
    percpu::this_cpu_preempt_inc();
    let slot = (cookie & 0xff) as usize;
    let p = KRETPROBES[slot].load(Ordering::Acquire);
    // SAFETY: as in kretprobe_of: preemption is off.
    if let Some(rp) = unsafe { p.as_ref() } {
        if rp.cookie.load(Ordering::Relaxed) == cookie {
            rp.nactive.fetch_sub(1, Ordering::Relaxed);
            if let Some(h) = rp.handler {
                h(rp, regs);
            }
        }
    }
    percpu::this_cpu_preempt_dec();
}

/// Registers `rp` (Linux: register_kretprobe). EINVAL if its address is not
/// a function's entry or it is registered already; ENOSPC if 256 are;
/// otherwise register_kprobe's errors.
pub fn register_kretprobe(rp: Arc<Kretprobe>) -> Result<(), Errno> {
    if !kprobe_on_func_entry(rp.addr) {
        return Err(Errno::EINVAL);
    }
    let mut list = KRETPROBE_LIST.lock();
    if rp.is_registered() {
        return Err(Errno::EINVAL);
    }
    let slot = KRETPROBES
        .iter()
        .position(|s| s.load(Ordering::Relaxed).is_null())
        .ok_or(Errno::ENOSPC)?;
    let gen = KRETPROBE_GEN.fetch_add(1, Ordering::Relaxed) + 1;
    rp.cookie.store((gen << 8) | slot as u64, Ordering::Relaxed);
    rp.nactive.store(0, Ordering::Relaxed);
    KRETPROBES[slot].store(Arc::as_ptr(&rp) as *mut Kretprobe, Ordering::Release);
    crate::trace::fgraph::set_rethook_handler(kretprobe_return);
    // Before the first hijack (the function tracer's slow path translates
    // a caller's `rethook_trampoline` while a hijacker is registered).
    crate::trace::fgraph::return_hijackers_changed(1);
    let kp = Arc::new(Kprobe::new(
        kretprobe_hook_addr(rp.addr),
        Some(pre_handler_kretprobe),
        None,
        slot,
    ));
    if let Err(e) = register_kprobe(kp.clone()) {
        crate::trace::fgraph::return_hijackers_changed(-1);
        KRETPROBES[slot].store(core::ptr::null_mut(), Ordering::Release);
        rp.cookie.store(0, Ordering::Relaxed);
        return Err(e);
    }
    *rp.kp.lock() = Some(kp);
    list.push(rp);
    Ok(())
}

/// Removes `rp` (Linux: unregister_kretprobe). Returns once no CPU can be
/// in its handlers; calls still in progress return normally, unwatched.
pub fn unregister_kretprobe(rp: &Arc<Kretprobe>) {
    let mut list = KRETPROBE_LIST.lock();
    let Some(i) = list.iter().position(|p| Arc::ptr_eq(p, rp)) else {
        return;
    };
    if let Some(kp) = rp.kp.lock().take() {
        unregister_kprobe(&kp);
    }
    let slot = (rp.cookie.load(Ordering::Relaxed) & 0xff) as usize;
    KRETPROBES[slot].store(core::ptr::null_mut(), Ordering::Release);
    crate::rcu::synchronize_sched();
    rp.cookie.store(0, Ordering::Relaxed);
    list.remove(i);
    crate::trace::fgraph::return_hijackers_changed(-1);
}
