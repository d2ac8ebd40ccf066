//! Trace events: the probes that turn a tracepoint hit into a ring-buffer
//! record, the per-event state, and the `events/SYSTEM/EVENT/{enable,
//! format,id}` and `available_events` files (Linux:
//! kernel/trace/trace_events.c, and the probe stage of
//! include/trace/trace_events.h).
//!
//! Every system's declaration (tracer/src/trace_events/) is expanded here
//! by [`define_event_probes!`], in one module per system that
//! `tracer::for_each_event_system!` makes; it makes per event:
//! - the probe `trace_event_raw_event_NAME(data, args..)`: `data` is the
//!   event's [`TraceEventFile`]; unless the event is soft-disabled or the
//!   current task is pid-filtered, it reserves `NAME::size(args)` bytes and
//!   fills them with `NAME::write` (the record layout comes from the
//!   declaration, so it cannot disagree with the `format` file);
//! - the [`TraceEventFile`] `NAME` (upper case), whose `reg` registers and
//!   unregisters that probe on the tracepoint `crate::events::SYSTEM`.
//!
//! Enabling an event ([`trace_event_enable_disable`]) registers its probe,
//! which turns the tracepoint's static key on; disabling unregisters it.
use alloc::format;
use alloc::string::String;
use core::sync::atomic::{AtomicU32, Ordering};

use spin::{Mutex, MutexGuard};
use tracer::trace_events::TraceEventCall;

use super::trace::{global_trace, trace_buffer_write_full};
use crate::fs::tracefs::{self, Dentry, TRACE_MODE_WRITE};
use crate::fs::Errno;

/// The bits of [`TraceEventFile::flags`] (Linux: `EVENT_FILE_FL_*`, same
/// bit numbers).
pub mod flags {
    /// The probe is registered.
    pub const ENABLED: u32 = 1 << 0;
    /// A trigger holds a soft reference (`sm_ref`).
    pub const SOFT_MODE: u32 = 1 << 5;
    /// Registered, but the records are dropped.
    pub const SOFT_DISABLED: u32 = 1 << 6;
    /// `set_event_pid` has a list: ask the pid filter.
    pub const PID_FILTER: u32 = 1 << 9;
    /// Was enabled once (never cleared).
    pub const WAS_ENABLED: u32 = 1 << 10;
}

/// One event of the trace array (Linux: `struct trace_event_file`).
pub struct TraceEventFile {
    pub call: &'static TraceEventCall,
    flags: AtomicU32,
    /// Registers (true) or unregisters (false) the event's probe with this
    /// file as its data (Linux: `call->class->reg`).
    reg: fn(&'static TraceEventFile, bool) -> Result<(), Errno>,
}

impl TraceEventFile {
    pub const fn new(
        call: &'static TraceEventCall,
        reg: fn(&'static TraceEventFile, bool) -> Result<(), Errno>,
    ) -> TraceEventFile {
        TraceEventFile {
            call,
            flags: AtomicU32::new(0),
            reg,
        }
    }

    /// The `EVENT_FILE_FL_*` bits.
    #[inline(always)]
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Acquire)
    }

    /// Sets `bits` in the flags (for the pid filter and triggers).
    pub fn set_flags(&self, bits: u32) {
        self.flags.fetch_or(bits, Ordering::AcqRel);
    }

    /// Clears `bits` in the flags.
    pub fn clear_flags(&self, bits: u32) {
        self.flags.fetch_and(!bits, Ordering::AcqRel);
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

    /// The probe's first test (Linux: `trace_trigger_soft_disabled`):
    /// true if the record must not be written.
    #[inline(always)]
    pub fn trace_trigger_soft_disabled(&self) -> bool {
        let f = self.flags();
        if f & (flags::SOFT_DISABLED | flags::PID_FILTER) == 0 {
            return false;
        }
        f & flags::SOFT_DISABLED != 0 || super::event_pid::trace_event_ignore_this_pid()
    }
}

/// Reserves `len` bytes in the global trace buffer and lets `fill` write
/// the record (Linux: `trace_event_buffer_reserve` + commit). Runs inside a
/// tracepoint call (preemption off).
#[inline(always)]
pub fn trace_event_buffer_write(len: usize, fill: impl FnOnce(&mut [u8])) {
    if let Some(tr) = global_trace() {
        trace_buffer_write_full(tr, len, fill);
    }
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
                    // with the address of the static TraceEventFile.
                    let file = unsafe { &*(data as *const $crate::trace::events::TraceEventFile) };
                    if file.trace_trigger_soft_disabled() {
                        return;
                    }
                    let len = ::tracer::trace_events::$system::$name::size($($arg),*);
                    $crate::trace::events::trace_event_buffer_write(len, |buf| {
                        ::tracer::trace_events::$system::$name::write(
                            buf,
                            $crate::trace::trace::trace_entry_word($id),
                            $($arg),*
                        )
                    });
                }

                fn [<__reg_ $name>](
                    file: &'static $crate::trace::events::TraceEventFile,
                    on: bool,
                ) -> Result<(), $crate::fs::Errno> {
                    let data = file as *const $crate::trace::events::TraceEventFile as *mut ();
                    if on {
                        $crate::events::$system::[<register_trace_ $name>](
                            [<trace_event_raw_event_ $name>], data)
                    } else {
                        $crate::events::$system::[<unregister_trace_ $name>](
                            [<trace_event_raw_event_ $name>], data)
                    }
                }

                #[doc = concat!("The `", stringify!($system), ":", stringify!($name), "` event.")]
                pub static [<$name:upper>]: $crate::trace::events::TraceEventFile =
                    $crate::trace::events::TraceEventFile::new(
                        &::tracer::trace_events::$system::$name::CALL,
                        [<__reg_ $name>],
                    );
            )*

            /// The events of this system, in declaration order.
            pub static FILES: &[&$crate::trace::events::TraceEventFile] = &[$(&[<$name:upper>]),*];
        }
    };
}

// One module per system (`sched::FILES`, ...), from tracer's list of
// systems.
tracer::for_each_event_system!(define_event_probes);

/// Every system's events, in the order `available_events` lists them
/// (the order of `tracer::trace_events::systems()`, from the same list;
/// `init` checks).
static SYSTEMS: &[&[&TraceEventFile]] = &tracer::for_each_event_system!(list FILES);

/// Every event file (Linux: the `tr->events` list).
pub fn trace_event_files() -> impl Iterator<Item = &'static TraceEventFile> {
    SYSTEMS.iter().flat_map(|s| s.iter().copied())
}

/// The event `system:name`.
pub fn find_event_file(system: &str, name: &str) -> Option<&'static TraceEventFile> {
    trace_event_files().find(|f| f.call.system == system && f.call.name == name)
}

/// Serializes enabling and disabling events (Linux: `event_mutex`). Take
/// it with [`event_mutex`] to apply several changes as one.
static EVENT_MUTEX: Mutex<()> = Mutex::new(());

/// Holds the event mutex (for [`ftrace_event_enable_disable_locked`]).
pub fn event_mutex() -> MutexGuard<'static, ()> {
    EVENT_MUTEX.lock()
}

/// Enables or disables one event (Linux: `ftrace_event_enable_disable`).
pub fn trace_event_enable_disable(
    file: &'static TraceEventFile,
    enable: bool,
) -> Result<(), Errno> {
    let guard = event_mutex();
    ftrace_event_enable_disable_locked(&guard, file, enable)
}

/// As [`trace_event_enable_disable`], with the event mutex held by the
/// caller (Linux: `__ftrace_event_enable_disable(file, enable, 0)`).
/// Enabling clears SOFT_DISABLED and registers the probe if it is not;
/// disabling in soft mode only sets SOFT_DISABLED, otherwise unregisters.
/// On error nothing has changed.
pub fn ftrace_event_enable_disable_locked(
    _guard: &MutexGuard<'static, ()>,
    file: &'static TraceEventFile,
    enable: bool,
) -> Result<(), Errno> {
    let f = file.flags();
    if enable {
        if f & flags::ENABLED == 0 {
            (file.reg)(file, true)?;
            file.set_flags(flags::ENABLED | flags::WAS_ENABLED);
        }
        file.clear_flags(flags::SOFT_DISABLED);
    } else if f & flags::SOFT_MODE != 0 {
        file.set_flags(flags::SOFT_DISABLED);
    } else if f & flags::ENABLED != 0 {
        (file.reg)(file, false)?;
        file.clear_flags(flags::ENABLED | flags::SOFT_DISABLED);
    }
    Ok(())
}

/// `available_events`: `system:event` per line.
pub fn available_events() -> String {
    let mut s = String::new();
    for f in trace_event_files() {
        s.push_str(f.call.system);
        s.push(':');
        s.push_str(f.call.name);
        s.push('\n');
    }
    s
}

/// A write to `events/SYSTEM/EVENT/enable` (Linux: `event_enable_write`):
/// a decimal 0 or 1, else EINVAL.
fn enable_store(file: &'static TraceEventFile, text: &str) -> Result<(), Errno> {
    match tracefs::parse_ulong(text)? {
        0 => trace_event_enable_disable(file, false),
        1 => trace_event_enable_disable(file, true),
        _ => Err(Errno::EINVAL),
    }
}

/// Creates `available_events` and `events/SYSTEM/EVENT/{enable,format,id}`
/// (Linux: `event_trace_add_tracer`, `event_create_dir`). Directories that
/// exist are reused.
pub fn init(root: &Dentry) -> Result<(), Errno> {
    // Every declared event has its file, in the declarations' order.
    let declared = tracer::trace_events::all_events();
    if !declared
        .map(|c| c as *const TraceEventCall)
        .eq(trace_event_files().map(|f| f.call as *const TraceEventCall))
    {
        println!("trace events: kernel/src/trace/events.rs does not list every declared system");
    }
    tracefs::create_show(root, "available_events", available_events)?;
    let events = tracefs::get_or_create_dir(root, "events")?;
    for file in trace_event_files() {
        let sys = tracefs::get_or_create_dir(&events, file.call.system)?;
        let dir = tracefs::get_or_create_dir(&sys, file.call.name)?;
        tracefs::create_show_store(
            &dir,
            "enable",
            TRACE_MODE_WRITE,
            move || file.enable_text(),
            Some(move |text: &str| enable_store(file, text)),
        )?;
        tracefs::create_show(&dir, "format", move || file.call.format_file())?;
        tracefs::create_show(&dir, "id", move || format!("{}\n", file.call.id))?;
    }
    Ok(())
}
