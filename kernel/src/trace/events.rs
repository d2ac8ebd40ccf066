//! Trace events: the probes that turn a tracepoint hit into a ring-buffer
//! record, the per-event state of each trace array, and the
//! `events/SYSTEM/EVENT/{enable,format,id}` and `available_events` files
//! (Linux: kernel/trace/trace_events.c, and the probe stage of
//! include/trace/trace_events.h).
//!
//! Every system's declaration (tracer/src/trace_events/) is expanded here
//! by [`define_event_probes!`], in one module per system that
//! `tracer::for_each_event_system!` makes; it makes per event:
//! - the probe `trace_event_raw_event_NAME(data, args..)`: `data` is a
//!   [`TraceEventFile`]; unless the event is soft-disabled or the current
//!   task is pid-filtered in that file's trace array, it reserves
//!   `NAME::size(args)` bytes in that array's buffer and fills them with
//!   `NAME::write` (the record layout comes from the declaration, so it
//!   cannot disagree with the `format` file);
//! - the [`EventCall`] `NAME` (upper case), whose `reg` registers,
//!   replaces and unregisters that probe (or its gate) on the tracepoint
//!   `crate::events::SYSTEM`.
//!
//! What is registered depends on the file's state: when one test of one
//! field decides the hit (a filter of one predicate; or, on a
//! soft-disabled event, the filter of its only trigger), it is the event's
//! gate (`tracer::trace_events::gate`: the field computed from the
//! arguments and tested, the probe called only if it passes), otherwise
//! the probe. [`event_probe_update`] recomputes that after every change
//! of filter, triggers or flags, under the event mutex, and swaps the two
//! in one step (`Tracepoint::replace`).
//!
//! Each trace array (the top level and every instance) has its own
//! [`TraceEventFile`] per event, in its [`TrEvents`], made by [`init_tr`]
//! (Linux: one `trace_event_file` per event and `trace_array`). Enabling an
//! event in an array ([`trace_event_enable_disable`]) registers the probe
//! with that array's file as its data, which turns the tracepoint's static
//! key on; the same event enabled in two arrays is two probes on one
//! tracepoint, each writing to its own array. Disabling unregisters it.
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU32, Ordering};

use spin::{Mutex, MutexGuard, Once};
use tracer::event_filter::FieldTest;
use tracer::trace_events::TraceEventCall;

use tracer::ring_buffer::BUF_PAGE_SIZE;

use super::event_pid::TrEventPid;
use super::trace::{global_trace, trace_buffer_write_at, trace_buffer_write_full, TraceArray};
use crate::fs::tracefs::{self, Dentry, TRACE_MODE_WRITE};
use crate::fs::Errno;

/// The bits of [`TraceEventFile::flags`] (Linux: `EVENT_FILE_FL_*`, same
/// bit numbers).
pub mod flags {
    /// The probe is registered.
    pub const ENABLED: u32 = 1 << 0;
    /// A compiled filter is in place: the probe tests the record first.
    pub const FILTERED: u32 = 1 << 3;
    /// A trigger holds a soft reference (`sm_ref`).
    pub const SOFT_MODE: u32 = 1 << 5;
    /// Registered, but the records are dropped.
    pub const SOFT_DISABLED: u32 = 1 << 6;
    /// The event has triggers: the probe calls them.
    pub const TRIGGER_MODE: u32 = 1 << 7;
    /// One of its triggers has a filter, runs after the record or needs
    /// it: the probe builds the record before calling them.
    pub const TRIGGER_COND: u32 = 1 << 8;
    /// `set_event_pid` has a list: ask the pid filter.
    pub const PID_FILTER: u32 = 1 << 9;
    /// Was enabled once (never cleared).
    pub const WAS_ENABLED: u32 = 1 << 10;
    /// The file's trace array has a clock other than `local`: the probe
    /// stamps its record out of line, through the array's clock (see
    /// [`super::TraceEventFile::sync_clock_flag`]).
    pub const CLOCK_OTHER: u32 = 1 << 11;
    /// The bits that send the probe out of line before it writes
    /// anything (one test on the fast path).
    pub const PROBE_SLOW: u32 = SOFT_DISABLED | PID_FILTER | TRIGGER_MODE | FILTERED;
}

/// One declared event, the same for every trace array (Linux: `struct
/// trace_event_call` with its `class->reg`): its layout and the function
/// that registers its probe with a [`TraceEventFile`] as the data.
pub struct EventCall {
    pub call: &'static TraceEventCall,
    /// Registers, replaces or unregisters the event's probe for `file`
    /// (Linux: `call->class->reg`); see [`RegFn`].
    reg: RegFn,
    gate: GateFns,
}

/// Puts the probe `new` in place of `old` on the event's tracepoint, for
/// one file: register (`None` to `Some`), replace (one published list:
/// each call runs one of the two), unregister (`Some` to `None`).
pub type RegFn = fn(&TraceEventFile, Option<ProbeSel>, Option<ProbeSel>) -> Result<(), Errno>;

/// Which of an event's probes is meant.
#[derive(Clone, Copy)]
pub enum ProbeSel {
    /// The probe `trace_event_raw_event_NAME`, with the file as its data.
    Full,
    /// The event's gate (`tracer::trace_events::gate`), with this gate
    /// data (made by the event's [`GateFns::new`]).
    Gate(*mut ()),
}

/// What a gate tests (see [`wanted_gate`]): a hit whose field fails `test`
/// is dropped, while the file's flags have every bit of `need`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateSpec {
    pub test: FieldTest,
    pub need: u32,
}

/// Makes and frees an event's gate data (a `ProbeGate` of the event's
/// probe type, boxed, behind an untyped pointer).
pub struct GateFns {
    /// The gate of `spec` in front of `file`'s probe.
    pub new: fn(&TraceEventFile, &GateSpec) -> *mut (),
    /// Frees what `new` made.
    ///
    /// # Safety
    /// The pointer came from this event's `new`, is no longer registered
    /// and no CPU can still be in the gate (a grace period has passed).
    pub free: unsafe fn(*mut ()),
}

/// What is registered on the tracepoint for one file.
enum Probe {
    Off,
    Full,
    /// The gate of this spec, with its data.
    Gate(GateSpec, *mut ()),
}

impl Probe {
    fn sel(&self) -> Option<ProbeSel> {
        match *self {
            Probe::Off => None,
            Probe::Full => Some(ProbeSel::Full),
            Probe::Gate(_, data) => Some(ProbeSel::Gate(data)),
        }
    }
}

impl EventCall {
    pub const fn new(call: &'static TraceEventCall, reg: RegFn, gate: GateFns) -> EventCall {
        EventCall { call, reg, gate }
    }
}

/// One event of one trace array (Linux: `struct trace_event_file`): the
/// data of that array's probe on the event's tracepoint.
pub struct TraceEventFile {
    pub call: &'static TraceEventCall,
    flags: AtomicU32,
    reg: RegFn,
    gate: &'static GateFns,
    /// What is registered for this file (the probe or its gate); changed
    /// under the event mutex.
    probe: Mutex<Probe>,
    /// The trace array that owns this file and whose buffer the probe
    /// writes (Linux: `file->tr`).
    tr: *const TraceArray,
    /// Soft references: triggers that may enable this event (Linux:
    /// `sm_ref`). Changed under the event mutex.
    sm_ref: AtomicU32,
    /// The triggers on this event (Linux: `file->triggers`).
    pub triggers: super::trigger::EventTriggers,
    /// The event's filter in this array (Linux: `file->filter`).
    pub filter: super::event_filter::FilterSlot,
}

// SAFETY: `tr` is only read; it points to the trace array that owns this
// file (in its `events`), so it is valid for as long as the file is, and
// a TraceArray is shared between CPUs by design.
unsafe impl Send for TraceEventFile {}
// SAFETY: as for Send; every other field is Sync.
unsafe impl Sync for TraceEventFile {}

impl TraceEventFile {
    /// The file of an event made at run time (a probe event of
    /// `trace_kprobe`) in `tr`, disabled: `reg` and `gate` do what an
    /// [`EventCall`]'s do. The caller keeps it for as long as `tr` lives
    /// or longer.
    pub fn new_dynamic(
        call: &'static TraceEventCall,
        reg: RegFn,
        gate: &'static GateFns,
        tr: &TraceArray,
    ) -> TraceEventFile {
        TraceEventFile {
            call,
            flags: AtomicU32::new(0),
            reg,
            gate,
            probe: Mutex::new(Probe::Off),
            tr,
            sm_ref: AtomicU32::new(0),
            triggers: super::trigger::EventTriggers::new(),
            filter: super::event_filter::FilterSlot::new(),
        }
    }

    /// The trace array this event records into.
    #[inline(always)]
    pub fn tr(&self) -> &TraceArray {
        // SAFETY: the file lives inside `*tr` (see the Send impl).
        unsafe { &*self.tr }
    }

    /// The `EVENT_FILE_FL_*` bits.
    #[inline(always)]
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Acquire)
    }

    /// The flags word itself (for a gate, which reads it).
    pub fn flags_word(&self) -> &AtomicU32 {
        &self.flags
    }

    /// Sets `bits` in the flags (for the pid filter and triggers);
    /// returns the flags before.
    pub fn set_flags(&self, bits: u32) -> u32 {
        self.flags.fetch_or(bits, Ordering::AcqRel)
    }

    /// Clears `bits` in the flags; returns the flags before.
    pub fn clear_flags(&self, bits: u32) -> u32 {
        self.flags.fetch_and(!bits, Ordering::AcqRel)
    }

    /// Whether the probe is registered (soft-disabled events count as
    /// enabled, as in `events/SYSTEM/enable`).
    pub fn is_enabled(&self) -> bool {
        self.flags() & flags::ENABLED != 0
    }

    /// `system:name`.
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.call.system, self.call.name)
    }

    /// What `enable` reads (Linux: `event_enable_read`): `1` if enabled and
    /// not soft-disabled, else `0`; then `*` in soft mode; then `\n`.
    pub fn enable_text(&self) -> String {
        let f = self.flags();
        let on = f & flags::ENABLED != 0 && f & flags::SOFT_DISABLED == 0;
        let soft = f & (flags::SOFT_DISABLED | flags::SOFT_MODE) != 0;
        format!("{}{}\n", on as u8, if soft { "*" } else { "" })
    }

    /// Whether the record needs more than "reserve and fill" (a trigger,
    /// soft-disable, a pid list, a filter), which a probe's out-of-line
    /// path handles: a probe event's first test (the generated probes
    /// test [`probe_slow`](Self::probe_slow), which adds the clock).
    #[inline(always)]
    pub fn needs_slow_path(&self) -> bool {
        self.flags() & flags::PROBE_SLOW != 0
    }

    /// The generated probe's one test: anything of
    /// [`needs_slow_path`](Self::needs_slow_path), or a clock other than
    /// `local` ([`flags::CLOCK_OTHER`]); both are handled by the probe's
    /// out-of-line path, so the inline one reads the `local` clock with no
    /// test of the array's clock.
    ///
    /// One `test` of the word in memory and a branch: the compiler does
    /// not fold an atomic load into the `test` (it loads, then tests), so
    /// the read is an `asm!` of its own, a plain load as an acquire load
    /// is on x86.
    #[inline(always)]
    pub fn probe_slow(&self) -> bool {
        // SAFETY: reads the 4 bytes of `self.flags`, which are valid and
        // aligned; an aligned 4-byte load is atomic on x86, and ordered
        // before every later load (x86 loads are acquire loads). The block
        // is not `readonly`, so the compiler moves no memory access across
        // it either. It writes only the arithmetic flags.
        unsafe {
            core::arch::asm!(
                "test dword ptr [{file} + {off}], {mask}",
                "jnz {slow}",
                file = in(reg) self as *const TraceEventFile,
                off = const core::mem::offset_of!(TraceEventFile, flags),
                mask = const flags::PROBE_SLOW | flags::CLOCK_OTHER,
                slow = label { return true; },
                options(nostack),
            );
        }
        false
    }

    /// Sets or clears [`flags::CLOCK_OTHER`] after the trace array's clock
    /// (the caller holds [`super::trace::EVENT_CLOCK_LOCK`], so that the
    /// bit and the clock cannot end up disagreeing when the clock changes
    /// meanwhile).
    pub fn sync_clock_flag(&self) {
        if self.tr().trace_clock_index() != 0 {
            self.set_flags(flags::CLOCK_OTHER);
        } else {
            self.clear_flags(flags::CLOCK_OTHER);
        }
    }

    /// Whether a record must be dropped (soft-disabled, or the current
    /// task is not traced in this array).
    #[inline]
    fn discard(&self, f: u32) -> bool {
        f & flags::SOFT_DISABLED != 0
            || (f & flags::PID_FILTER != 0 && super::event_pid::trace_event_ignore_this_pid(self))
    }
}

/// Reserves `len` bytes in the buffer of `file`'s trace array and lets
/// `fill` write the record (Linux: `trace_event_buffer_reserve` + commit).
/// Runs inside a tracepoint call (preemption off).
#[inline(always)]
pub fn trace_event_buffer_write(file: &TraceEventFile, len: usize, fill: impl FnOnce(&mut [u8])) {
    trace_buffer_write_full(file.tr(), len, fill);
}

/// [`trace_event_buffer_write`] stamped by the `local` clock without
/// reading which clock the array has: for the generated probe's inline
/// path, which only runs while [`flags::CLOCK_OTHER`] is clear. A probe
/// that read the flags just before the clock changed may write one record
/// stamped by the old clock, as one that had read the old clock could
/// before; the clock's change clears the buffer after it updates the bits.
#[inline(always)]
pub fn trace_event_buffer_write_local(
    file: &TraceEventFile,
    len: usize,
    fill: impl FnOnce(&mut [u8]),
) {
    trace_buffer_write_at(file.tr(), crate::time::now_ns(), len, fill);
}

/// The largest record [`trace_event_slow`] builds on the stack: every
/// declared event's fixed part and one string of
/// `tracer::trace_events::DATA_LOC_STR_MAX` bytes fit.
const REC_STACK_MAX: usize = 1280;

/// The probe's path when [`TraceEventFile::needs_slow_path`] (Linux:
/// `trace_trigger_soft_disabled`, `trace_event_buffer_commit` and
/// `__event_trigger_test_discard`). True if the probe is done, false if it
/// is to write the record itself.
///
/// Without `TRIGGER_COND` or a filter the triggers run first, with no
/// record, even if the event is soft-disabled; then the record is dropped
/// or left to the probe. With `TRIGGER_COND` or `FILTERED` the record is
/// built here, on the stack: the triggers whose filter accepts it run
/// (post-triggers, `traceoff` and `stacktrace`, are only noted), the
/// record is copied into the buffer unless it is dropped or the event's
/// filter rejects it, and then the noted post-triggers run, so the event
/// that turns tracing off is still in the trace. (An event with only a
/// filter does not come here: its probe decides before building anything.)
#[inline(always)]
pub fn trace_event_slow(file: &TraceEventFile, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
    let f = file.flags();
    if f & (flags::TRIGGER_COND | flags::FILTERED) == 0 || len > REC_STACK_MAX {
        if f & flags::TRIGGER_MODE != 0 {
            super::trigger::event_triggers_call(file, None);
        }
        return file.discard(f);
    }
    let mut stack = core::mem::MaybeUninit::<[u8; REC_STACK_MAX]>::uninit();
    // SAFETY: the first `len` bytes (len <= REC_STACK_MAX) are zeroed
    // before the slice is made, so it covers initialized bytes only.
    let rec = unsafe {
        let p = stack.as_mut_ptr().cast::<u8>();
        core::ptr::write_bytes(p, 0, len);
        core::slice::from_raw_parts_mut(p, len)
    };
    fill(rec);
    let tt = super::trigger::event_triggers_call(file, Some(rec));
    if !file.discard(file.flags()) && super::event_filter::filter_match(file, rec) {
        trace_event_buffer_write(file, len, |buf| buf.copy_from_slice(rec));
    }
    if tt != 0 {
        super::trigger::event_triggers_post_call(file, tt);
    }
    true
}

/// The probe stage (see the module doc). Invoked by a system's declaration
/// macro inside a module of this file: `tracer::sched_events!(define_event_probes)`,
/// which `tracer::for_each_event_system!(define_event_probes)` calls per system.
#[macro_export]
macro_rules! define_event_probes {
    (
        system: $system:ident;
        $(
            $(#[$meta:meta])*
            event $name:ident, id $id:literal,
            ($($arg:ident : $argty:ty),* $(,)?)
            { $($body:tt)* }
        )*
    ) => {
        $crate::__pastey::paste! {
            $(
                #[doc = concat!("The probe of `", stringify!($system), ":", stringify!($name),
                    "` (Linux: `trace_event_raw_event_", stringify!($name), "`).")]
                #[allow(clippy::too_many_arguments)]
                fn [<trace_event_raw_event_ $name>](data: *mut (), $($arg: $argty),*) {
                    // SAFETY: the probe is only registered (by `reg` below)
                    // with the address of a TraceEventFile, which is
                    // unregistered before its trace array goes, with a
                    // grace period between.
                    let file = unsafe { &*(data as *const $crate::trace::events::TraceEventFile) };
                    if file.probe_slow() {
                        // A tail call: nothing of this frame is live after it.
                        return [<trace_event_discard_ $name>](file, $($arg),*);
                    }
                    let len = ::tracer::trace_events::$system::$name::size($($arg),*);
                    $crate::trace::events::trace_event_buffer_write_local(file, len, |buf| {
                        ::tracer::trace_events::$system::$name::write(
                            buf,
                            $crate::trace::trace::trace_entry_word_inline($id),
                            $($arg),*
                        )
                    });
                }

                #[doc = concat!("The out-of-line path of `", stringify!($system), ":",
                    stringify!($name), "`'s probe, for a file with any of `PROBE_SLOW` or ",
                    "`CLOCK_OTHER`: decides (`trace_event_decide_", stringify!($name), "`), ",
                    "then writes the record stamped by the array's clock unless it was dropped ",
                    "or written there.")]
                #[cold]
                #[inline(never)]
                #[allow(clippy::too_many_arguments)]
                fn [<trace_event_discard_ $name>](
                    file: &$crate::trace::events::TraceEventFile,
                    $($arg: $argty),*
                ) {
                    // With none of `PROBE_SLOW` (only `CLOCK_OTHER`), every
                    // test of the decision fails and it says "write".
                    if [<trace_event_decide_ $name>](file, $($arg),*) {
                        return;
                    }
                    [<trace_event_write_ $name>](file, $($arg),*)
                }

                #[doc = concat!("Writes `", stringify!($system), ":", stringify!($name),
                    "`'s record stamped by the array's clock (the probe's out-of-line path, ",
                    "once the record is to be written): out of line again, so that the ",
                    "decision's frame stays as small as it was.")]
                #[cold]
                #[inline(never)]
                #[allow(clippy::too_many_arguments)]
                fn [<trace_event_write_ $name>](
                    file: &$crate::trace::events::TraceEventFile,
                    $($arg: $argty),*
                ) {
                    let len = ::tracer::trace_events::$system::$name::size($($arg),*);
                    $crate::trace::events::trace_event_buffer_write(file, len, |buf| {
                        ::tracer::trace_events::$system::$name::write(
                            buf,
                            $crate::trace::trace::trace_entry_word($id),
                            $($arg),*
                        )
                    });
                }

                #[doc = concat!("What `", stringify!($system), ":", stringify!($name),
                    "`'s filter, triggers, soft-disable and pid lists decide (see ",
                    "`trace_event_slow`): true if the probe is done (the record dropped, or ",
                    "written here), false if the record is to be written.")]
                #[inline(always)]
                #[allow(clippy::too_many_arguments)]
                fn [<trace_event_decide_ $name>](
                    file: &$crate::trace::events::TraceEventFile,
                    $($arg: $argty),*
                ) -> bool {
                    use $crate::trace::events::flags;
                    let f = file.flags();
                    if f & (flags::SOFT_DISABLED | flags::PID_FILTER | flags::TRIGGER_MODE) == 0 {
                        // Only a filter: decided before anything is
                        // reserved. One test of one field is decided from
                        // that field alone, computed from the arguments;
                        // any other filter runs on the record built on the
                        // stack, whose header's context half is filled only
                        // if the filter reads common_flags/preempt_count/pid.
                        let Some(filter) = file.filter.prog() else {
                            return false;
                        };
                        if let Some(keep) = ::tracer::trace_events::$system::$name::field_test_keep(
                            filter, $($arg),*)
                        {
                            return !keep;
                        }
                        let common = if filter.reads_context() {
                            $crate::trace::trace::trace_entry_word($id)
                        } else {
                            $id as u64
                        };
                        return !::tracer::trace_events::$system::$name::with_record(
                            common,
                            $($arg,)*
                            |rec| filter.matches(rec, &$crate::trace::event_filter::CurrentEnv),
                        );
                    }
                    if f & (flags::PID_FILTER | flags::FILTERED) == 0 {
                        // A lone hist trigger on fields of the event's own:
                        // counted from those fields alone, computed from
                        // the arguments; the record is then written only
                        // if the event is enabled, by the probe.
                        if let Some(h) = file.triggers.fields_hist() {
                            h.update_fields(|offset| {
                                ::tracer::trace_events::$system::$name::field_bits(offset, $($arg),*)
                            });
                            return f & flags::SOFT_DISABLED != 0;
                        }
                    }
                    let len = ::tracer::trace_events::$system::$name::size($($arg),*);
                    $crate::trace::events::trace_event_slow(file, len, |buf: &mut [u8]| {
                        ::tracer::trace_events::$system::$name::write(
                            buf,
                            $crate::trace::trace::trace_entry_word($id),
                            $($arg),*
                        )
                    })
                }

                fn [<__gate_new_ $name>](
                    file: &$crate::trace::events::TraceEventFile,
                    spec: &$crate::trace::events::GateSpec,
                ) -> *mut () {
                    use ::tracer::trace_events::$system::$name::Probe;
                    let data = file as *const $crate::trace::events::TraceEventFile as *mut ();
                    // SAFETY: the gate is freed (`__gate_free`) before the
                    // file: the file's probe state owns it.
                    let gate = unsafe {
                        ::tracer::trace_events::gate::ProbeGate::<Probe>::new(
                            spec.test,
                            [<trace_event_raw_event_ $name>],
                            data,
                            file.flags_word(),
                            spec.need,
                        )
                    };
                    ::alloc::boxed::Box::into_raw(::alloc::boxed::Box::new(gate)) as *mut ()
                }

                /// # Safety
                /// See `GateFns::free`.
                unsafe fn [<__gate_free_ $name>](data: *mut ()) {
                    use ::tracer::trace_events::$system::$name::Probe;
                    // SAFETY: `data` came from Box::into_raw in
                    // `__gate_new` and nothing uses it any more (the
                    // caller's contract).
                    drop(unsafe {
                        ::alloc::boxed::Box::from_raw(
                            data as *mut ::tracer::trace_events::gate::ProbeGate<Probe>)
                    });
                }

                fn [<__reg_ $name>](
                    file: &$crate::trace::events::TraceEventFile,
                    old: Option<$crate::trace::events::ProbeSel>,
                    new: Option<$crate::trace::events::ProbeSel>,
                ) -> Result<(), $crate::fs::Errno> {
                    use $crate::trace::events::ProbeSel;
                    let pick = |p: ProbeSel| -> (fn(*mut (), $($argty),*), *mut ()) {
                        match p {
                            ProbeSel::Full => (
                                [<trace_event_raw_event_ $name>],
                                file as *const $crate::trace::events::TraceEventFile as *mut (),
                            ),
                            ProbeSel::Gate(data) => (::tracer::trace_events::$system::$name::gate, data),
                        }
                    };
                    match (old.map(pick), new.map(pick)) {
                        (None, Some((f, d))) => $crate::events::$system::[<register_trace_ $name>](f, d),
                        (Some((f, d)), None) => $crate::events::$system::[<unregister_trace_ $name>](f, d),
                        (Some((f, d)), Some((nf, nd))) => {
                            $crate::events::$system::[<replace_trace_ $name>](f, d, nf, nd)
                        }
                        (None, None) => Ok(()),
                    }
                }

                #[doc = concat!("The `", stringify!($system), ":", stringify!($name), "` event.")]
                pub static [<$name:upper>]: $crate::trace::events::EventCall =
                    $crate::trace::events::EventCall::new(
                        &::tracer::trace_events::$system::$name::CALL,
                        [<__reg_ $name>],
                        $crate::trace::events::GateFns {
                            new: [<__gate_new_ $name>],
                            free: [<__gate_free_ $name>],
                        },
                    );
            )*

            /// The events of this system, in declaration order.
            pub static CALLS: &[&$crate::trace::events::EventCall] = &[$(&[<$name:upper>]),*];
        }
    };
}

// One module per system (`sched::CALLS`, ...), from tracer's list of
// systems.
tracer::for_each_event_system!(define_event_probes);

/// Every system's events, in the order `available_events` lists them
/// (the order of `tracer::trace_events::systems()`, from the same list;
/// `init_tr` checks).
static SYSTEMS: &[&[&EventCall]] = &tracer::for_each_event_system!(list CALLS);

/// Every declared event (Linux: the `ftrace_events` list).
pub fn event_calls() -> impl Iterator<Item = &'static EventCall> {
    SYSTEMS.iter().flat_map(|s| s.iter().copied())
}

/// The events of one trace array (Linux: `tr->events` and the other
/// per-array event state: the pid lists, `event-fork`). Its files are made
/// by [`init_tr`], which knows the array's address, and live until the
/// array is dropped; [`del_tr`] unregisters their probes first.
pub struct TrEvents {
    /// One file per [`event_calls`] entry, in that order.
    files: Once<Box<[TraceEventFile]>>,
    /// `set_event_pid`, `set_event_notrace_pid`, `event-fork`.
    pub pid: TrEventPid,
    /// The files of the events made at run time (probe events) in this
    /// array, oldest first; their maker adds and removes them, under the
    /// event mutex (Linux: their `trace_event_file`s on `tr->events`).
    /// Each points into [`Self::dynamic_owned`].
    dynamic: Mutex<alloc::vec::Vec<*const TraceEventFile>>,
    /// Every file ever added by [`Self::add_dynamic`], removed or not: a
    /// file is freed with its array only, so that a reference to it taken
    /// while the array lives (an open `filter` file, a `set_event` write
    /// in progress) never dangles. A removed probe event leaves its few
    /// hundred bytes here until the array goes.
    #[allow(clippy::vec_box)] // a box gives each file an address that stays
    dynamic_owned: Mutex<alloc::vec::Vec<Box<TraceEventFile>>>,
}

// SAFETY: the raw pointers of `dynamic` point into the boxes of
// `dynamic_owned`, which live as long as `self`; the files are Sync.
unsafe impl Send for TrEvents {}
// SAFETY: as for Send.
unsafe impl Sync for TrEvents {}

/// A handle on an event file made at run time that keeps its trace array,
/// and so the file, alive (for the closures of its tracefs files).
#[derive(Clone)]
pub struct DynFileRef {
    /// Held, never read: it keeps the box `file` points into.
    _tr: Arc<TraceArray>,
    file: *const TraceEventFile,
}

// SAFETY: `file` points into `_tr`'s `dynamic_owned`, alive while `_tr` is.
unsafe impl Send for DynFileRef {}
// SAFETY: as for Send.
unsafe impl Sync for DynFileRef {}

impl core::ops::Deref for DynFileRef {
    type Target = TraceEventFile;
    fn deref(&self) -> &TraceEventFile {
        // SAFETY: see the Send impl: `self._tr` keeps the box alive.
        unsafe { &*self.file }
    }
}

impl DynFileRef {
    /// The handle of `file`, which `tr.events.add_dynamic` returned.
    pub fn new(tr: &Arc<TraceArray>, file: &TraceEventFile) -> DynFileRef {
        debug_assert!(core::ptr::eq(file.tr, Arc::as_ptr(tr)));
        DynFileRef {
            _tr: tr.clone(),
            file,
        }
    }
}

impl Default for TrEvents {
    fn default() -> Self {
        Self::new()
    }
}

impl TrEvents {
    /// No files yet (see [`init_tr`]), no pid lists.
    pub const fn new() -> TrEvents {
        TrEvents {
            files: Once::new(),
            pid: TrEventPid::new(),
            dynamic: Mutex::new(alloc::vec::Vec::new()),
            dynamic_owned: Mutex::new(alloc::vec::Vec::new()),
        }
    }

    /// Keeps the file of an event made at run time for as long as `self`
    /// lives (see [`Self::dynamic_owned`]); [`Self::add_dynamic`] then
    /// makes it one of the array's events.
    pub fn own_dynamic(&self, file: TraceEventFile) -> &TraceEventFile {
        let b = Box::new(file);
        let p: *const TraceEventFile = &*b;
        self.dynamic_owned.lock().push(b);
        // SAFETY: the box is in `dynamic_owned` until `self` is dropped, and
        // a box's contents do not move when the vector grows.
        unsafe { &*p }
    }

    /// Adds the file of an event made at run time, which
    /// [`Self::own_dynamic`] returned (see [`Self::all_files`]).
    pub fn add_dynamic(&self, file: &TraceEventFile) {
        debug_assert!(self
            .dynamic_owned
            .lock()
            .iter()
            .any(|b| core::ptr::eq(&**b, file)));
        self.dynamic.lock().push(file);
        // After it is on the list: a pid file written meanwhile either
        // finds it there or has its list published before this test.
        if self.pid.filtering() {
            file.set_flags(flags::PID_FILTER);
        }
        // The same for the clock: a change meanwhile finds the file on the
        // list, or was stored before this reads it.
        let _g = super::trace::EVENT_CLOCK_LOCK.lock();
        file.sync_clock_flag();
    }

    /// Takes the file of an event made at run time off the lists (it stays
    /// allocated until the array goes).
    pub fn remove_dynamic(&self, file: &TraceEventFile) {
        self.dynamic.lock().retain(|f| !core::ptr::eq(*f, file));
    }

    /// Every event's file: those made at run time first, newest first (as
    /// Linux adds them at the head of `tr->events`), then the declared
    /// ones in [`event_calls`] order.
    pub fn all_files(&self) -> alloc::vec::Vec<&TraceEventFile> {
        let mut v: alloc::vec::Vec<&TraceEventFile> = self
            .dynamic
            .lock()
            .iter()
            .rev()
            // SAFETY: each points into `dynamic_owned`, alive while `self` is.
            .map(|f| unsafe { &**f })
            .collect();
        v.extend(self.files().iter());
        v
    }

    /// The files, in [`event_calls`] order (none before [`init_tr`]).
    pub fn files(&self) -> &[TraceEventFile] {
        self.files.get().map_or(&[], |f| &f[..])
    }

    /// The event `system:name`, a declared one or one made at run time (a
    /// probe event: an `enable_event` trigger may name it).
    pub fn find(&self, system: &str, name: &str) -> Option<&TraceEventFile> {
        let is = |f: &TraceEventFile| f.call.system == system && f.call.name == name;
        self.files().iter().find(|f| is(f)).or_else(|| {
            self.dynamic
                .lock()
                .iter()
                // SAFETY: each points into `dynamic_owned`, alive while
                // `self` is.
                .map(|f| unsafe { &**f })
                .find(|f| is(f))
        })
    }

    /// This array's file of `event`.
    pub fn file_of(&self, event: &EventCall) -> Option<&TraceEventFile> {
        self.files()
            .iter()
            .find(|f| core::ptr::eq(f.call, event.call))
    }
}

/// The gate `file`'s probe should have now, if one (see
/// `tracer::trace_events::gate`), from its flags, filter and triggers:
/// with no trigger, a filter that is one field test (a hit it rejects is
/// dropped whatever else is set); with triggers, a soft-disabled event (no
/// record is written) whose one trigger has a filter that is one field
/// test (a hit it rejects fires nothing, while the event stays
/// soft-disabled: `need`). With the event mutex held.
fn wanted_gate(file: &TraceEventFile) -> Option<GateSpec> {
    let f = file.flags();
    if f & flags::TRIGGER_MODE == 0 {
        if f & flags::FILTERED == 0 {
            return None;
        }
        let test = *file.filter.prog()?.field_test()?;
        Some(GateSpec { test, need: 0 })
    } else if f & flags::SOFT_DISABLED != 0 {
        let test = super::trigger::single_trigger_field_test(file)?;
        Some(GateSpec {
            test,
            need: flags::SOFT_DISABLED,
        })
    } else {
        None
    }
}

impl TraceEventFile {
    /// The probe that fits the file's state now (see [`wanted_gate`]),
    /// its gate data made if it is a gate.
    fn wanted_probe(&self) -> Probe {
        match wanted_gate(self) {
            Some(spec) => Probe::Gate(spec, (self.gate.new)(self, &spec)),
            None => Probe::Full,
        }
    }

    /// Frees what `p` holds, once it is off the tracepoint (its
    /// unregistration or replacement waited for a grace period).
    fn free_probe(&self, p: Probe) {
        if let Probe::Gate(_, data) = p {
            // SAFETY: `data` came from `self.gate.new`, is unregistered,
            // and a grace period has passed.
            unsafe { (self.gate.free)(data) };
        }
    }
}

/// Registers `file`'s probe (or its gate: [`wanted_gate`]), or
/// unregisters whichever is registered. With the event mutex held; on
/// error nothing has changed.
fn probe_reg(file: &TraceEventFile, on: bool) -> Result<(), Errno> {
    let mut cur = file.probe.lock();
    let new = if on { file.wanted_probe() } else { Probe::Off };
    match (file.reg)(file, cur.sel(), new.sel()) {
        Ok(()) => {
            let old = core::mem::replace(&mut *cur, new);
            file.free_probe(old);
            Ok(())
        }
        Err(e) => {
            // Never registered: nothing can be in it.
            file.free_probe(new);
            Err(e)
        }
    }
}

/// After a change of `file`'s filter, triggers or flags: if its probe is
/// registered, puts the gate that now fits (or the plain probe) in place
/// of the registered one, in one step (the tracepoint's replace), so that
/// no hit is seen twice or missed. Nothing to do when it did not change.
pub fn event_probe_update(_guard: &MutexGuard<'static, ()>, file: &TraceEventFile) {
    let mut cur = file.probe.lock();
    match (&*cur, wanted_gate(file)) {
        (Probe::Off, _) | (Probe::Full, None) => return,
        (Probe::Gate(spec, _), Some(w)) if *spec == w => return,
        _ => {}
    }
    let new = file.wanted_probe();
    match (file.reg)(file, cur.sel(), new.sel()) {
        // The replace waited for a grace period after publishing the new
        // list: nothing runs the old gate any more.
        Ok(()) => {
            let old = core::mem::replace(&mut *cur, new);
            file.free_probe(old);
        }
        Err(e) => {
            file.free_probe(new);
            println!(
                "trace events: cannot switch the probe of {}: {e:?}",
                file.full_name()
            );
        }
    }
}

/// Serializes enabling and disabling events (Linux: `event_mutex`). Take
/// it with [`event_mutex`] to apply several changes as one.
static EVENT_MUTEX: Mutex<()> = Mutex::new(());

/// Holds the event mutex (for [`ftrace_event_enable_disable_locked`]).
pub fn event_mutex() -> MutexGuard<'static, ()> {
    EVENT_MUTEX.lock()
}

/// Enables or disables one event (Linux: `ftrace_event_enable_disable`).
pub fn trace_event_enable_disable(file: &TraceEventFile, enable: bool) -> Result<(), Errno> {
    let guard = event_mutex();
    ftrace_event_enable_disable_locked(&guard, file, enable)
}

/// As [`trace_event_enable_disable`], with the event mutex held by the
/// caller (Linux: `__ftrace_event_enable_disable(file, enable, 0)`).
/// Enabling clears SOFT_DISABLED and registers the probe if it is not;
/// disabling in soft mode only sets SOFT_DISABLED, otherwise unregisters.
/// On error nothing has changed.
pub fn ftrace_event_enable_disable_locked(
    guard: &MutexGuard<'static, ()>,
    file: &TraceEventFile,
    enable: bool,
) -> Result<(), Errno> {
    let f = file.flags();
    if enable {
        if f & flags::ENABLED == 0 {
            probe_reg(file, true)?;
            file.set_flags(flags::ENABLED | flags::WAS_ENABLED);
        }
        file.clear_flags(flags::SOFT_DISABLED);
    } else if f & flags::SOFT_MODE != 0 {
        file.set_flags(flags::SOFT_DISABLED);
    } else if f & flags::ENABLED != 0 {
        probe_reg(file, false)?;
        file.clear_flags(flags::ENABLED | flags::SOFT_DISABLED);
    }
    event_probe_update(guard, file);
    Ok(())
}

/// Takes (`enable`) or drops a soft reference on `file`, with the event
/// mutex held (Linux: `__ftrace_event_enable_disable(file, enable, 1)`):
/// the first makes the event SOFT_MODE and, if it was off, registers its
/// probe soft-disabled, so that a trigger can start its records with one
/// bit; the last leaves SOFT_MODE and unregisters the probe if the event
/// is still soft-disabled. On error nothing has changed.
pub fn event_soft_enable_disable_locked(
    guard: &MutexGuard<'static, ()>,
    file: &TraceEventFile,
    enable: bool,
) -> Result<(), Errno> {
    if enable {
        if file.sm_ref.load(Ordering::Relaxed) > 0 {
            file.sm_ref.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let f = file.flags();
        if f & flags::ENABLED == 0 {
            file.set_flags(flags::SOFT_DISABLED | flags::SOFT_MODE);
            if let Err(e) = probe_reg(file, true) {
                file.clear_flags(flags::SOFT_DISABLED | flags::SOFT_MODE);
                return Err(e);
            }
            file.set_flags(flags::ENABLED | flags::WAS_ENABLED);
        } else {
            file.set_flags(flags::SOFT_MODE);
        }
        file.sm_ref.store(1, Ordering::Relaxed);
    } else {
        match file.sm_ref.load(Ordering::Relaxed) {
            0 => return Ok(()),
            1 => {}
            n => {
                file.sm_ref.store(n - 1, Ordering::Relaxed);
                return Ok(());
            }
        }
        let f = file.flags();
        if f & flags::SOFT_DISABLED != 0 && f & flags::ENABLED != 0 {
            probe_reg(file, false)?;
            file.clear_flags(flags::ENABLED);
        }
        file.clear_flags(flags::SOFT_MODE | flags::SOFT_DISABLED);
        file.sm_ref.store(0, Ordering::Relaxed);
    }
    event_probe_update(guard, file);
    Ok(())
}

/// The lister of the events made at run time (probe events), set once by
/// their maker (`trace_kprobe`'s init). Linux keeps every event on one
/// list, `ftrace_events`, which `trace_add_event_call` adds dynamic events
/// to; here the maker lists its own, and registers the lister so that this
/// file does not depend on it.
static DYNAMIC_EVENTS_LISTER: spin::Once<fn() -> String> = spin::Once::new();

/// Registers the lister of run-time events for `available_events`.
pub fn set_dynamic_events_lister(lister: fn() -> String) {
    DYNAMIC_EVENTS_LISTER.call_once(|| lister);
}

/// What the maker of run-time events does when an instance comes and goes
/// (Linux: `event_trace_add_tracer` and `event_trace_del_tracer` walk
/// every event, run-time ones included; here their maker gives each
/// instance its files).
pub struct DynamicEventsTrOps {
    /// Gives the new instance `tr`, whose directory is `dir`, a file and
    /// the `events/GROUP/EVENT/` files of each run-time event.
    pub init_tr: fn(&Arc<TraceArray>, &Dentry) -> Result<(), Errno>,
    /// Disables the run-time events of `tr` and forgets its files (with
    /// the event mutex held), before `tr` is freed.
    pub del_tr: fn(&MutexGuard<'static, ()>, &TraceArray),
}

static DYNAMIC_EVENTS_TR_OPS: spin::Once<DynamicEventsTrOps> = spin::Once::new();

/// Registers [`DynamicEventsTrOps`] (once, by `trace_kprobe`'s init).
pub fn set_dynamic_events_tr_ops(ops: DynamicEventsTrOps) {
    DYNAMIC_EVENTS_TR_OPS.call_once(|| ops);
}

/// `available_events`: `system:event` per line.
pub fn available_events() -> String {
    // Probe events first, newest first, as Linux adds an event made at
    // run time at the head of its list.
    let mut s = DYNAMIC_EVENTS_LISTER
        .get()
        .map(|lister| lister())
        .unwrap_or_default();
    for e in event_calls() {
        s.push_str(e.call.system);
        s.push(':');
        s.push_str(e.call.name);
        s.push('\n');
    }
    s
}

/// A write to `events/SYSTEM/EVENT/enable` (Linux: `event_enable_write`):
/// a decimal 0 or 1, else EINVAL.
pub fn enable_store(file: &TraceEventFile, text: &str) -> Result<(), Errno> {
    match tracefs::parse_ulong(text)? {
        0 => trace_event_enable_disable(file, false),
        1 => trace_event_enable_disable(file, true),
        _ => Err(Errno::EINVAL),
    }
}

/// Gives `tr` its event files and creates, in its directory `dir`,
/// `events/{header_page,header_event}`, `events/ftrace/EVENT/{format,id}`,
/// `events/SYSTEM/EVENT/{enable,format,id}` (Linux:
/// `event_trace_add_tracer`, `event_create_dir`), then the files of
/// [`super::event_files`]: `set_event`, `set_event_pid`,
/// `set_event_notrace_pid`, the `enable`, `filter` and `trigger` files.
/// The top-level array (`global_trace()`) also gets `available_events`.
/// Directories that exist are reused.
pub fn init_tr(tr: &Arc<TraceArray>, dir: &Dentry) -> Result<(), Errno> {
    // Every declared event has its file, in the declarations' order.
    let declared = tracer::trace_events::all_events();
    if !declared
        .map(|c| c as *const TraceEventCall)
        .eq(event_calls().map(|e| e.call as *const TraceEventCall))
    {
        println!("trace events: kernel/src/trace/events.rs does not list every declared system");
    }
    let tr_ptr = Arc::as_ptr(tr);
    tr.events.files.call_once(|| {
        event_calls()
            .map(|e| TraceEventFile {
                call: e.call,
                flags: AtomicU32::new(0),
                reg: e.reg,
                gate: &e.gate,
                probe: Mutex::new(Probe::Off),
                tr: tr_ptr,
                sm_ref: AtomicU32::new(0),
                triggers: super::trigger::EventTriggers::new(),
                filter: super::event_filter::FilterSlot::new(),
            })
            .collect()
    });
    // The files take their clock bit from the array (a new array's clock
    // is `local`, and a clock written since found no files to mark).
    {
        let _g = super::trace::EVENT_CLOCK_LOCK.lock();
        for f in tr.events.files() {
            f.sync_clock_flag();
        }
    }
    if global_trace().is_some_and(|g| core::ptr::eq(g, tr_ptr)) {
        tracefs::create_show(dir, "available_events", available_events)?;
    }
    let events = tracefs::get_or_create_dir(dir, "events")?;
    // The ring buffer's headers and the internal ftrace events, which
    // cannot be enabled (Linux: `create_event_toplevel_files`, and the
    // `ftrace` system's directories from trace_export.c).
    tracefs::create_show(&events, "header_page", || {
        tracer::events::header_page(BUF_PAGE_SIZE as u32)
    })?;
    tracefs::create_show(&events, "header_event", tracer::events::header_event)?;
    let ftrace = tracefs::get_or_create_dir(&events, "ftrace")?;
    for e in tracer::events::FTRACE_EVENTS {
        let d = tracefs::get_or_create_dir(&ftrace, e.name)?;
        tracefs::create_show(&d, "format", move || e.format_file())?;
        tracefs::create_show(&d, "id", move || format!("{}\n", e.id))?;
    }
    for (i, file) in tr.events.files().iter().enumerate() {
        let sys = tracefs::get_or_create_dir(&events, file.call.system)?;
        let d = tracefs::get_or_create_dir(&sys, file.call.name)?;
        let (tr1, tr2) = (tr.clone(), tr.clone());
        tracefs::create_show_store(
            &d,
            "enable",
            TRACE_MODE_WRITE,
            move || tr1.events.files()[i].enable_text(),
            Some(move |text: &str| enable_store(&tr2.events.files()[i], text)),
        )?;
        let call = file.call;
        tracefs::create_show(&d, "format", move || call.format_file())?;
        tracefs::create_show(&d, "id", move || format!("{}\n", call.id))?;
    }
    super::event_files::init_tr(tr, dir)?;
    // An instance gets the probe events that exist (the top level gets
    // each one when it is made).
    if !global_trace().is_some_and(|g| core::ptr::eq(g, tr_ptr)) {
        if let Some(ops) = DYNAMIC_EVENTS_TR_OPS.get() {
            (ops.init_tr)(tr, dir)?;
        }
    }
    Ok(())
}

/// Takes the events of `tr` down before it is freed (Linux:
/// `event_trace_del_tracer`): the pid lists and `event-fork` go, every
/// event is disabled (soft mode included), so that no probe has a file of
/// `tr` as its data. The caller waits for a grace period before dropping
/// `tr` (each unregister here already waited for one). The files stay,
/// disabled, until `tr` is dropped.
pub fn del_tr(tr: &TraceArray) {
    let guard = event_mutex();
    super::event_pid::del_tr(tr);
    super::trigger::clear_event_triggers(&guard, tr);
    for file in tr.events.all_files() {
        // Only triggers take soft references, and they are gone.
        file.sm_ref.store(0, Ordering::Relaxed);
        file.clear_flags(flags::SOFT_MODE);
        if let Err(e) = ftrace_event_enable_disable_locked(&guard, file, false) {
            println!("trace events: cannot disable {}: {e:?}", file.full_name());
        }
    }
    // Their maker forgets the files of its events in `tr`, now disabled.
    if let Some(ops) = DYNAMIC_EVENTS_TR_OPS.get() {
        (ops.del_tr)(&guard, tr);
    }
}
