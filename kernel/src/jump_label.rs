//! Static keys (Linux: kernel/jump_label.c, include/linux/jump_label.h).
//!
//! A static key is a boolean read at a site that costs one NOP while it is
//! false: `static_branch_unlikely!(KEY)` compiles to a 5-byte NOP plus a
//! `__jump_table` entry (site, out-of-line target, key; see
//! `tracer::jump_label` for the layout and `arch::jump_label` for the asm),
//! and enabling the key patches every site of the key into a `jmp` to the
//! out-of-line code, through the same int3 batch as ftrace.
//!
//! boot/build.sh sorts the table by (key, site) (build-tools' sorttable), so
//! every key's sites are one run. [`jump_label_init`] checks the order (an
//! unsorted table is reported and static keys stay unpatchable), checks
//! that every site holds the NOP, and points each key at its run. Enabling
//! or disabling a key, under [`JUMP_LABEL_MUTEX`], checks every site of the
//! run and then patches them all, or, if one holds something unexpected,
//! none. [`jump_label_check`] reads every site back.
//!
//! Keys are boolean, like Linux's `static_key_enable`/`static_key_disable`
//! (not the counting `static_key_slow_inc`).
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

use spin::{Mutex, Once};
use tracer::jump_label::{
    jump_label_type, key_runs, JumpEntry, JumpLabelType, JumpTableError, JUMP_ENTRY_SIZE,
};

use crate::arch::jump_label::{self as arch_jl, JumpInsn, JumpSite};
use crate::fs::Errno;

/// A static key (Linux: `struct static_key`, default false). Must live in a
/// `static`: its sites refer to it by address.
pub struct StaticKey {
    enabled: AtomicI32,
    /// The key's run in the jump table: `start << 32 | len`, 0 for none
    /// (Linux: `key->entries`, set by jump_label_init).
    entries: AtomicU64,
}

impl Default for StaticKey {
    fn default() -> Self {
        Self::new()
    }
}

impl StaticKey {
    /// A key that starts false (Linux: `STATIC_KEY_FALSE_INIT`).
    pub const fn new() -> StaticKey {
        StaticKey {
            enabled: AtomicI32::new(0),
            entries: AtomicU64::new(0),
        }
    }

    /// Whether the key is on (Linux: `static_key_enabled`), read from its
    /// counter, not from the code.
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire) > 0
    }

    /// The key's sites: a range of [`jump_entries`].
    pub(crate) fn run(&self) -> core::ops::Range<usize> {
        let v = self.entries.load(Ordering::Acquire);
        let (start, len) = ((v >> 32) as usize, (v & 0xffff_ffff) as usize);
        start..start + len
    }

    fn addr(&self) -> u64 {
        self as *const StaticKey as u64
    }
}

/// `if static_branch_unlikely!(KEY) { .. }`: true while `KEY` (the path of a
/// `static StaticKey`) is enabled (Linux: `static_branch_unlikely`). The
/// site is a 5-byte NOP while the key is off.
#[macro_export]
macro_rules! static_branch_unlikely {
    ($key:path) => {{
        // The key must be a StaticKey (the asm only sees a symbol).
        let _: &'static $crate::jump_label::StaticKey = &$key;
        $crate::arch::jump_label::arch_static_branch!($key, 0)
    }};
}

// ---------------------------------------------------------------------------
// The table

extern "C" {
    static __start___jump_table: u8;
    static __stop___jump_table: u8;
}

/// The raw `__jump_table` (boot/linker.ld), as its start address and bytes.
fn jump_table_raw() -> (u64, &'static [u8]) {
    // The linker script defines both symbols around the section; only
    // their addresses are taken.
    let (start, stop) = (
        &raw const __start___jump_table as u64,
        &raw const __stop___jump_table as u64,
    );
    let len = stop.saturating_sub(start) as usize;
    // SAFETY: [start, stop) is the read-only table, mapped for the kernel's
    // lifetime.
    (start, unsafe {
        core::slice::from_raw_parts(start as *const u8, len)
    })
}

/// The decoded table, sorted and checked by [`jump_label_init`].
static ENTRIES: Once<Vec<JumpEntry>> = Once::new();
/// Set once the table has been checked: keys can be patched.
static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// Every site, in table order (empty before [`jump_label_init`] or if it
/// refused the table).
pub fn jump_entries() -> &'static [JumpEntry] {
    ENTRIES.get().map_or(&[], |v| v.as_slice())
}

/// Serialises key changes and the check (Linux: jump_label_mutex).
pub(crate) static JUMP_LABEL_MUTEX: Mutex<()> = Mutex::new(());

/// Reads the table, checks it and every site, and points each key at its
/// run (Linux: jump_label_init). Called at boot before the other CPUs run;
/// a key enabled before this has its sites made `jmp` here.
pub fn jump_label_init() {
    let _guard = JUMP_LABEL_MUTEX.lock();
    let (start, raw) = jump_table_raw();
    if raw.len() % JUMP_ENTRY_SIZE != 0 {
        println!(
            "jump_label: __jump_table is {} bytes, not whole entries: static keys disabled",
            raw.len()
        );
        return;
    }
    let entries = tracer::jump_label::decode_raw(start, raw);
    let runs = match key_runs(&entries) {
        Ok(runs) => runs,
        Err(JumpTableError::Unsorted { index }) => {
            println!(
                "jump_label: __jump_table is not sorted (entry {}: key {:#x} site {:#x} after key {:#x} site {:#x}): static keys disabled",
                index,
                entries[index].key,
                entries[index].code,
                entries[index - 1].key,
                entries[index - 1].code
            );
            return;
        }
        Err(JumpTableError::SiteInTwoKeys { code }) => {
            println!(
                "jump_label: site {:#x} belongs to two keys: static keys disabled",
                code
            );
            return;
        }
    };
    // Every site must hold the NOP the compiler emitted; a key enabled
    // before this point gets its jumps now (no other CPU runs yet).
    let mut poke = crate::arch::text_poke::TextPoke::lock();
    for e in &entries {
        // SAFETY: `e.key` is the address of a `static StaticKey`: the entry
        // was emitted by `static_branch_unlikely!`, which checks the type.
        let key = unsafe { &*(e.key as *const StaticKey) };
        let ty = jump_label_type(key.is_enabled(), e);
        if let Err(f) = arch_jl::arch_jump_label_transform_static(&mut poke, e.code, e.target, ty) {
            drop(poke);
            println!(
                "jump_label: unexpected op at {:#x}: {:02x?} (expected {:02x?}): static keys disabled",
                f.code, f.actual, f.expected
            );
            return;
        }
    }
    drop(poke);
    crate::arch::text_poke::sync_core();
    for r in &runs {
        // SAFETY: as above.
        let key = unsafe { &*(r.key as *const StaticKey) };
        key.entries
            .store(((r.start as u64) << 32) | r.len as u64, Ordering::Release);
    }
    let (n, keys) = (entries.len(), runs.len());
    ENTRIES.call_once(|| entries);
    INITIALIZED.store(true, Ordering::Release);
    println!("jump_label: {} sites, {} keys", n, keys);
}

/// Makes every site of `key` hold what the key's state says (Linux:
/// jump_label_update). Checks every site first; if one is not what it
/// should be, nothing is written and EIO is returned.
fn jump_label_update(key: &'static StaticKey, was: bool, now: bool) -> Result<(), Errno> {
    let entries = jump_entries();
    let sites: Vec<JumpSite> = entries[key.run()]
        .iter()
        .map(|e| JumpSite {
            code: e.code,
            target: e.target,
            old: jump_label_type(was, e),
            new: jump_label_type(now, e),
        })
        .filter(|s| s.old != s.new)
        .collect();
    arch_jl::arch_jump_label_transform_apply(&sites)
        .map(|_| ())
        .map_err(|f| {
            println!(
                "jump_label: unexpected op at {:#x}: {:02x?} (expected {:02x?}): key {:#x} left {}",
                f.code,
                f.actual,
                f.expected,
                key.addr(),
                if was { "enabled" } else { "disabled" }
            );
            Errno::EIO
        })
}

/// Sets `key` to `on`, patching its sites.
fn static_key_set(key: &'static StaticKey, on: bool) -> Result<(), Errno> {
    let _guard = JUMP_LABEL_MUTEX.lock();
    let was = key.is_enabled();
    if was == on {
        return Ok(());
    }
    if INITIALIZED.load(Ordering::Acquire) {
        jump_label_update(key, was, on)?;
    }
    // Before jump_label_init the value alone changes; init patches it.
    key.enabled.store(on as i32, Ordering::Release);
    Ok(())
}

/// Turns the key on, patching all its sites to `jmp` (Linux:
/// `static_key_enable`). Idempotent. EIO, with nothing changed, if a site
/// does not hold the NOP.
pub fn static_key_enable(key: &'static StaticKey) -> Result<(), Errno> {
    static_key_set(key, true)
}

/// Turns the key off, patching all its sites back to NOPs (Linux:
/// `static_key_disable`). Idempotent. EIO, with nothing changed, if a site
/// does not hold its `jmp`.
pub fn static_key_disable(key: &'static StaticKey) -> Result<(), Errno> {
    static_key_set(key, false)
}

// ---------------------------------------------------------------------------
// jump_label_check

/// What [`jump_label_check`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    pub sites: usize,
    pub keys: usize,
    pub bad: usize,
    pub jmps: usize,
    pub nops: usize,
}

/// Reads every site back and compares it with what its key says: the NOP,
/// or `jmp target` (the jump label counterpart of ftrace_check). Each bad
/// site is printed.
pub fn jump_label_check() -> CheckReport {
    let _guard = JUMP_LABEL_MUTEX.lock();
    let entries = jump_entries();
    let mut r = CheckReport {
        sites: entries.len(),
        ..CheckReport::default()
    };
    let mut last_key = None;
    for e in entries {
        if last_key != Some(e.key) {
            r.keys += 1;
            last_key = Some(e.key);
        }
        // SAFETY: as in jump_label_init.
        let key = unsafe { &*(e.key as *const StaticKey) };
        let want = jump_label_type(key.is_enabled(), e);
        let (insn, bytes) = arch_jl::jump_label_read_site(e.code);
        match (want, insn) {
            (JumpLabelType::Nop, JumpInsn::Nop) => r.nops += 1,
            (JumpLabelType::Jmp, JumpInsn::Jmp(t)) if t == e.target => r.jmps += 1,
            _ => {
                r.bad += 1;
                println!(
                    "jump_label_check: site {:#x} of key {:#x} holds {:02x?}, expected {}",
                    e.code,
                    e.key,
                    bytes,
                    match want {
                        JumpLabelType::Nop => String::from("the NOP"),
                        JumpLabelType::Jmp => format!("jmp {:#x}", e.target),
                    }
                );
            }
        }
    }
    r
}

/// The `jump_label_check` shell command's text.
pub fn jump_label_check_text() -> String {
    let r = jump_label_check();
    format!(
        "jump_label_check: {} sites, {} keys, {} bad, {} jmp, {} nop\n",
        r.sites, r.keys, r.bad, r.jmps, r.nops
    )
}
