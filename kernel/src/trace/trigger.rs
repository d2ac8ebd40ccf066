//! Event triggers: `events/SYSTEM/EVENT/trigger` of every trace array, the
//! registry of trigger commands, and the triggers' actions in the probe
//! (Linux: kernel/trace/trace_events_trigger.c).
//!
//! A trigger is an action attached to one event of one trace array (its
//! [`TraceEventFile`]): `traceon`/`traceoff` switch that array's
//! recording, `snapshot` swaps its spare buffer in, `stacktrace` writes a
//! stack record, `enable_event`/`disable_event` flip another event's
//! soft-disable bit. The text of a write is parsed in `tracer::trigger`;
//! this module finds the command in the registry ([`EventCommand`], Linux's
//! `struct event_command`: other trigger kinds such as `hist` plug in with
//! [`register_event_command`]), keeps the list of each event's triggers
//! ([`EventTriggers`]) and runs them.
//!
//! How a trigger runs: an event with triggers is put in soft mode (its
//! probe is registered even if the event is off, with the records dropped)
//! and has `TRIGGER_MODE`; its probe then calls [`event_triggers_call`]
//! (see `events::trace_event_slow` for when, and with which record). An
//! event that `enable_event` may turn on is registered soft-disabled too,
//! so that turning it on is one bit, with no code patching; its `enable`
//! reads `0*` until then.
//!
//! The list is read by probes without a lock: a change copies it, publishes
//! the copy with one pointer store, and frees the old one after a grace
//! period (`rcu::synchronize_sched`), under the event mutex. Counts are
//! taken with compare-and-swap (`tracer::trigger::TriggerCount`), so a
//! `traceoff:3` switches tracing off exactly three times whatever the
//! number of CPUs.
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use spin::{Mutex, MutexGuard};
use tracer::entry::{PRINT_BUF_OFFSET, STACK_CALLER_OFFSET, TRACE_PRINT, TRACE_STACK};
use tracer::event_filter::{FieldTest, Filter, FilterEnv};
use tracer::trigger::{
    parse_enable, parse_simple, print_available, print_trigger, split_trigger_write, SimpleCommand,
    TriggerCount, TriggerType, TriggerWrite,
};

use super::events::{
    event_mutex, event_probe_update, event_soft_enable_disable_locked, flags, TraceEventFile,
};
use super::trace::{self, trace_buffer_write, trace_entry, tracing_gen_ctx_dec, TraceArray};
use crate::fs::tracefs::{self, Dentry, SeqFile, TRACE_MODE_WRITE};
use crate::fs::{Errno, OpenFile, OpenFlags};

/// The command's action runs after the event's record is written (Linux:
/// `EVENT_CMD_FL_POST_TRIGGER`).
pub const EVENT_CMD_FL_POST_TRIGGER: u32 = 1 << 0;
/// The command needs the record (Linux: `EVENT_CMD_FL_NEEDS_REC`, hist).
pub const EVENT_CMD_FL_NEEDS_REC: u32 = 1 << 1;

/// A trigger command (Linux: `struct event_command`).
pub struct EventCommand {
    /// What is written before the first `:` (`traceoff`).
    pub name: &'static str,
    /// One trigger of a type per event (per target for the enable types).
    pub trigger_type: TriggerType,
    /// `EVENT_CMD_FL_*`.
    pub flags: u32,
    /// Parses a write whose command is this one and registers or removes
    /// the trigger on `file`, with the event mutex held (Linux: `parse`).
    /// A failure changes nothing.
    pub parse: fn(
        cmd: &'static EventCommand,
        guard: &MutexGuard<'static, ()>,
        file: &TraceEventFile,
        w: &TriggerWrite<'_>,
    ) -> Result<(), Errno>,
    /// Removes every trigger of this command from `file` when `trigger` is
    /// opened with `O_TRUNC` (Linux: `unreg_all`; only hist has one).
    pub unreg_all: Option<fn(&MutexGuard<'static, ()>, &TraceEventFile)>,
}

/// The registered commands, in registration order (Linux keeps them
/// newest first and prints them reversed: the same order on screen).
static TRIGGER_COMMANDS: Mutex<Vec<&'static EventCommand>> = Mutex::new(Vec::new());

/// Adds a command (Linux: `register_event_command`); EBUSY if its name is
/// taken.
pub fn register_event_command(cmd: &'static EventCommand) -> Result<(), Errno> {
    let mut cmds = TRIGGER_COMMANDS.lock();
    if cmds.iter().any(|c| c.name == cmd.name) {
        return Err(Errno::EBUSY);
    }
    cmds.push(cmd);
    Ok(())
}

/// The action and the `cat trigger` line of one trigger (Linux:
/// `event_trigger_ops` with the trigger's `private_data`).
pub trait TriggerOps: Send + Sync {
    /// Runs the action. `rec` is the event's record when the probe built
    /// it, None for a trigger called before the record or after it
    /// (Linux: `ops->trigger`). Runs in the probe: no lock, no allocation.
    fn trigger(&self, data: &EventTriggerData, file: &TraceEventFile, rec: Option<&[u8]>);
    /// Appends the trigger's line to `out` (Linux: `ops->print`).
    fn print(&self, data: &EventTriggerData, out: &mut String);
    /// The target event of an enable-type trigger: part of its identity.
    fn target(&self) -> Option<&TraceEventFile> {
        None
    }
    /// The hist trigger behind a `hist` trigger (for `cat hist` and for
    /// matching specs).
    fn hist(&self) -> Option<&tracer::hist::HistTrigger> {
        None
    }
    /// Undoes what registering took besides the list entry (the target's
    /// soft reference), once the trigger is off the list (Linux:
    /// `ops->free`).
    fn free(&self, _guard: &MutexGuard<'static, ()>) {}
}

/// One trigger on one event (Linux: `struct event_trigger_data`).
pub struct EventTriggerData {
    pub cmd: &'static EventCommand,
    /// What remains of `:N` (unlimited without).
    pub count: TriggerCount,
    /// The filter text after `if`, as written.
    pub filter_str: Option<String>,
    /// That filter, compiled against the triggering event's fields.
    pub filter: Option<Filter>,
    /// Skipped by the probe while set (hist's `pause`).
    pub paused: AtomicBool,
    pub ops: Box<dyn TriggerOps>,
}

impl EventTriggerData {
    /// Whether the filter lets `rec` through (no filter: yes; Linux:
    /// `filter_match_preds`).
    #[inline]
    fn filter_match(&self, rec: &[u8]) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f.matches(rec, &ProbeEnv))
    }

    /// Whether the trigger needs the record built first (Linux:
    /// `update_cond_flag`).
    fn needs_cond(&self) -> bool {
        self.filter.is_some()
            || self.cmd.flags & (EVENT_CMD_FL_POST_TRIGGER | EVENT_CMD_FL_NEEDS_REC) != 0
    }

    /// Same type, and the same target for the enable types: a duplicate,
    /// or the one a `!` removes.
    fn same_as(&self, ty: TriggerType, target: Option<&TraceEventFile>) -> bool {
        self.cmd.trigger_type == ty
            && match (self.ops.target(), target) {
                (None, None) => true,
                (Some(a), Some(b)) => ptr::eq(a, b),
                _ => false,
            }
    }
}

/// What a filter may ask of the probe's context besides the record: the
/// CPU and the current task's name (the `cpu` and `comm` fields).
pub struct ProbeEnv;

impl FilterEnv for ProbeEnv {
    fn cpu(&self) -> u32 {
        crate::arch::cpu_id() as u32
    }

    fn comm(&self) -> [u8; 16] {
        crate::sched::current().map_or([0; 16], |t| t.trace_info().comm)
    }
}

type TriggerList = Vec<Arc<EventTriggerData>>;

/// The triggers of one event (Linux: `file->triggers`, an RCU list): a
/// pointer to an immutable list that probes read without a lock.
pub struct EventTriggers {
    /// Null when there is none.
    list: AtomicPtr<TriggerList>,
    /// The hist trigger, when it is the only trigger, has no filter and
    /// reads only the event's own numeric fields
    /// (`HistTrigger::fields_only`): the probe then counts it from the
    /// tracepoint's arguments without building the record. Null
    /// otherwise. It points into an entry of `list`, published and freed
    /// with it.
    fields_hist: AtomicPtr<tracer::hist::HistTrigger>,
}

impl Default for EventTriggers {
    fn default() -> Self {
        Self::new()
    }
}

impl EventTriggers {
    pub const fn new() -> EventTriggers {
        EventTriggers {
            list: AtomicPtr::new(ptr::null_mut()),
            fields_hist: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The current list, for a probe (preemption off) or a holder of the
    /// event mutex.
    #[inline]
    fn current(&self) -> &[Arc<EventTriggerData>] {
        let p = self.list.load(Ordering::Acquire);
        if p.is_null() {
            return &[];
        }
        // SAFETY: a published list is freed only after a grace period
        // (see `update`), and callers are preempt-off readers or hold the
        // event mutex, under which lists are replaced.
        unsafe { &*p }
    }

    /// The list's one hist trigger that the probe may count from the
    /// tracepoint's arguments (see `fields_hist`), for a probe.
    #[inline(always)]
    pub fn fields_hist(&self) -> Option<&tracer::hist::HistTrigger> {
        let p = self.fields_hist.load(Ordering::Acquire);
        // SAFETY: it points into an entry of the published list, which is
        // freed only after it is replaced and a grace period has passed
        // (see `update`), and callers are preempt-off readers.
        unsafe { p.as_ref() }
    }

    /// Replaces the list by `f` of a copy of it, with the event mutex held;
    /// on error nothing changes. The old list is freed after a grace
    /// period, so no probe still reads it.
    fn update<R>(
        &self,
        _guard: &MutexGuard<'static, ()>,
        f: impl FnOnce(&mut TriggerList) -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        let mut copy: TriggerList = self.current().to_vec();
        let r = f(&mut copy)?;
        let fields_hist = match &copy[..] {
            [only] if only.filter.is_none() => only
                .ops
                .hist()
                .filter(|h| h.fields_only())
                .map_or(ptr::null_mut(), |h| {
                    h as *const tracer::hist::HistTrigger as *mut _
                }),
            _ => ptr::null_mut(),
        };
        let new = if copy.is_empty() {
            ptr::null_mut()
        } else {
            Box::into_raw(Box::new(copy))
        };
        // The fast pointer first: a probe that still sees it after the old
        // list is gone would read a freed entry. Both old values stay
        // valid until the grace period below.
        self.fields_hist.store(fields_hist, Ordering::Release);
        let old = self.list.swap(new, Ordering::AcqRel);
        if !old.is_null() {
            crate::rcu::synchronize_sched();
            // SAFETY: `old` came from Box::into_raw here and is no longer
            // reachable: it was replaced, and a grace period has passed.
            drop(unsafe { Box::from_raw(old) });
        }
        Ok(r)
    }

    pub fn is_empty(&self) -> bool {
        self.list.load(Ordering::Acquire).is_null()
    }
}

/// Runs `file`'s triggers from its probe (Linux: `event_triggers_call`).
/// With no record (`rec` None) every trigger runs. With a record, those
/// whose filter rejects it are skipped, and post-triggers are not run but
/// returned as a set of [`TriggerType`] bits for
/// [`event_triggers_post_call`].
pub fn event_triggers_call(file: &TraceEventFile, rec: Option<&[u8]>) -> u32 {
    let mut tt = 0;
    for data in file.triggers.current() {
        if data.paused.load(Ordering::Relaxed) {
            continue;
        }
        let Some(r) = rec else {
            data.ops.trigger(data, file, None);
            continue;
        };
        if !data.filter_match(r) {
            continue;
        }
        if data.cmd.flags & EVENT_CMD_FL_POST_TRIGGER != 0 {
            tt |= data.cmd.trigger_type as u32;
            continue;
        }
        data.ops.trigger(data, file, rec);
    }
    tt
}

/// The filter of `file`'s only trigger as one field test, if it has one
/// trigger and its filter is one numeric test of one of the event's
/// fields (for the probe's gate: when that test fails, the trigger does
/// not fire). With the event mutex held.
pub fn single_trigger_field_test(file: &TraceEventFile) -> Option<FieldTest> {
    match file.triggers.current() {
        [only] => only.filter.as_ref()?.field_test().copied(),
        _ => None,
    }
}

/// Runs the post-triggers noted by [`event_triggers_call`] after the
/// record is written (Linux: `event_triggers_post_call`).
pub fn event_triggers_post_call(file: &TraceEventFile, tt: u32) {
    for data in file.triggers.current() {
        if !data.paused.load(Ordering::Relaxed) && data.cmd.trigger_type as u32 & tt != 0 {
            data.ops.trigger(data, file, None);
        }
    }
}

/// Sets TRIGGER_COND from the list (Linux: `update_cond_flag`).
fn update_cond_flag(file: &TraceEventFile) {
    if file.triggers.current().iter().any(|d| d.needs_cond()) {
        file.set_flags(flags::TRIGGER_COND);
    } else {
        file.clear_flags(flags::TRIGGER_COND);
    }
}

/// Adds `data` to `file`'s triggers (Linux: `register_trigger` and
/// `event_enable_register_trigger`): EEXIST if one of its type (and
/// target) is there. The first trigger puts the event in trigger and soft
/// mode. On error nothing has changed.
pub fn register_trigger(
    guard: &MutexGuard<'static, ()>,
    file: &TraceEventFile,
    data: EventTriggerData,
) -> Result<(), Errno> {
    let ty = data.cmd.trigger_type;
    let first = file.triggers.is_empty();
    if first {
        // Soft mode first: if the probe cannot be registered, nothing is
        // on the list yet.
        event_soft_enable_disable_locked(guard, file, true)?;
    }
    let data = Arc::new(data);
    let r = file.triggers.update(guard, |list| {
        // Hist allows any number of distinct specs (its parse refuses an
        // identical one).
        if ty != TriggerType::Hist && list.iter().any(|t| t.same_as(ty, data.ops.target())) {
            return Err(Errno::EEXIST);
        }
        if ty == TriggerType::Hist {
            list.push(data.clone());
        } else {
            list.insert(0, data.clone());
        }
        Ok(())
    });
    match r {
        Ok(()) => {
            update_cond_flag(file);
            file.set_flags(flags::TRIGGER_MODE);
            event_probe_update(guard, file);
            Ok(())
        }
        Err(e) => {
            if first {
                let _ = event_soft_enable_disable_locked(guard, file, false);
            }
            Err(e)
        }
    }
}

/// Removes the trigger of type `ty` (and `target`) from `file`, if there
/// is one (Linux: `unregister_trigger`); nothing there is not an error.
pub fn unregister_trigger(
    guard: &MutexGuard<'static, ()>,
    file: &TraceEventFile,
    ty: TriggerType,
    target: Option<&TraceEventFile>,
) {
    let removed = file.triggers.update(guard, |list| {
        Ok(list
            .iter()
            .position(|t| t.same_as(ty, target))
            .map(|i| list.remove(i)))
    });
    if let Ok(Some(data)) = removed {
        after_removal(guard, file, &data);
    }
}

/// Removes the triggers of `file` for which `pred` holds (hist's
/// `!hist:...` and `unreg_all`).
pub fn unregister_trigger_if(
    guard: &MutexGuard<'static, ()>,
    file: &TraceEventFile,
    pred: impl Fn(&EventTriggerData) -> bool,
) {
    let removed = file.triggers.update(guard, |list| {
        let (gone, kept): (Vec<_>, Vec<_>) = list.drain(..).partition(|t| pred(t));
        *list = kept;
        Ok(gone)
    });
    if let Ok(gone) = removed {
        for data in gone {
            after_removal(guard, file, &data);
        }
    }
}

/// `file`'s triggers, for a holder of the event mutex.
pub fn triggers_of<'a>(
    file: &'a TraceEventFile,
    _guard: &MutexGuard<'static, ()>,
) -> &'a [Arc<EventTriggerData>] {
    file.triggers.current()
}

/// What follows taking a trigger off `file`'s list (the grace period has
/// passed): flags, soft references.
fn after_removal(guard: &MutexGuard<'static, ()>, file: &TraceEventFile, data: &EventTriggerData) {
    update_cond_flag(file);
    if file.triggers.is_empty() {
        file.clear_flags(flags::TRIGGER_MODE);
        let _ = event_soft_enable_disable_locked(guard, file, false);
    }
    event_probe_update(guard, file);
    data.ops.free(guard);
}

/// Removes every trigger of every event of `tr` (Linux:
/// `clear_event_triggers`), before the array goes.
pub fn clear_event_triggers(guard: &MutexGuard<'static, ()>, tr: &TraceArray) {
    for file in tr.events.all_files() {
        clear_file_triggers(guard, file);
    }
}

/// Removes every trigger of one event (a probe event being removed).
pub fn clear_file_triggers(guard: &MutexGuard<'static, ()>, file: &TraceEventFile) {
    if file.triggers.is_empty() {
        return;
    }
    let Ok(all) = file
        .triggers
        .update(guard, |list| Ok(core::mem::take(list)))
    else {
        return;
    };
    for data in all {
        after_removal(guard, file, &data);
    }
}

// ---------------------------------------------------------------------------
// traceon, traceoff, snapshot, stacktrace, enable_event, disable_event

/// Switches `tr`'s recording to `on` if it is not; true if this call did.
fn tracing_switch(tr: &TraceArray, on: bool) -> bool {
    if tr.tracing_on_flag().swap(on, Ordering::SeqCst) == on {
        return false;
    }
    trace::set_recording(tr, on);
    true
}

/// Records a TRACE_STACK event of the current call chain into `tr`
/// (Linux: `__trace_stack`), without allocating. The first frames, those
/// of tracing itself (the trigger, the probe: whatever the compiler did not
/// inline), are left out, so that the record starts at the function that
/// hit the tracepoint, as Linux's does (its `STACK_SKIP`).
#[inline(never)]
fn trace_stack_tr(tr: &TraceArray) {
    const MAX: usize = 16;
    let syms = crate::kallsyms::table();
    let in_tracing = |addr: u64| {
        syms.and_then(|t| t.lookup(addr.wrapping_sub(1)))
            .is_some_and(|s| s.name.starts_with("kernel::trace::"))
    };
    let mut frames = [0u64; MAX];
    let mut n = 0;
    let mut skipping = true;
    crate::arch::traps::walk_frames(crate::arch::frame_pointer(), 64, |_, real| {
        skipping = skipping && in_tracing(real);
        if !skipping && n < MAX {
            frames[n] = real;
            n += 1;
        }
    });
    let ent = trace_entry(TRACE_STACK, tracing_gen_ctx_dec());
    trace_buffer_write(tr, STACK_CALLER_OFFSET + 8 * n, |buf| {
        let _ = ent.encode(buf);
        buf[8..12].copy_from_slice(&(n as i32).to_le_bytes());
        for (i, f) in frames[..n].iter().enumerate() {
            let at = STACK_CALLER_OFFSET + 8 * i;
            buf[at..at + 8].copy_from_slice(&f.to_le_bytes());
        }
    });
}

/// Writes `text` as a print event of `tr` from `ip` (Linux:
/// `__trace_array_puts`), without allocating.
fn trace_array_puts(tr: &TraceArray, ip: u64, text: &str) {
    let ent = trace_entry(TRACE_PRINT, tracing_gen_ctx_dec());
    trace_buffer_write(tr, PRINT_BUF_OFFSET + text.len() + 1, |buf| {
        let _ = ent.encode(buf);
        buf[8..16].copy_from_slice(&ip.to_le_bytes());
        buf[PRINT_BUF_OFFSET..PRINT_BUF_OFFSET + text.len()].copy_from_slice(text.as_bytes());
    });
}

/// The `snapshot` trigger's action (Linux: `tracing_snapshot_instance`):
/// swap `tr`'s buffers; with no spare buffer (freed since the trigger was
/// set), say so in the trace and stop tracing, as Linux does; under a
/// latency tracer, which owns the spare buffer, say that.
fn snapshot_trigger(tr: &TraceArray) {
    use super::snapshot::{tracing_snapshot_instance, SnapshotFail};
    let ip = tracing_snapshot_instance as *const () as u64;
    match tracing_snapshot_instance(tr) {
        Err(SnapshotFail::NotAllocated) => {
            trace_array_puts(tr, ip, "*** SNAPSHOT NOT ALLOCATED ***\n");
            trace_array_puts(tr, ip, "*** stopping trace here!   ***\n");
            tracing_switch(tr, false);
        }
        Err(SnapshotFail::LatencyTracer) => {
            trace_array_puts(tr, ip, "*** LATENCY TRACER ACTIVE ***\n");
            trace_array_puts(tr, ip, "*** Can not use snapshot (sorry) ***\n");
        }
        _ => {}
    }
}

/// The actions of the commands parsed by `tracer::trigger`.
struct SimpleOps {
    cmd: SimpleCommand,
    /// enable_event/disable_event: the event to switch, in the same trace
    /// array (it outlives the trigger: an array's triggers go before its
    /// files).
    target: Option<*const TraceEventFile>,
}

// SAFETY: `target` points to a TraceEventFile, which is Sync, and is only
// read; see the field's comment for its lifetime.
unsafe impl Send for SimpleOps {}
// SAFETY: as for Send.
unsafe impl Sync for SimpleOps {}

impl SimpleOps {
    fn target_file(&self) -> Option<&TraceEventFile> {
        // SAFETY: see the field's comment.
        self.target.map(|t| unsafe { &*t })
    }
}

impl TriggerOps for SimpleOps {
    fn trigger(&self, data: &EventTriggerData, file: &TraceEventFile, _rec: Option<&[u8]>) {
        let tr = file.tr();
        match self.cmd {
            SimpleCommand::TraceOn | SimpleCommand::TraceOff => {
                let on = self.cmd == SimpleCommand::TraceOn;
                data.count.fire_if_changes(
                    || tr.tracing_on_flag().load(Ordering::Relaxed) == on,
                    || tracing_switch(tr, on),
                );
            }
            SimpleCommand::Stacktrace => {
                if data.count.take() {
                    trace_stack_tr(tr);
                }
            }
            SimpleCommand::Snapshot => {
                if data.count.take() {
                    snapshot_trigger(tr);
                }
            }
            SimpleCommand::EnableEvent | SimpleCommand::DisableEvent => {
                let Some(target) = self.target_file() else {
                    return;
                };
                let enable = self.cmd == SimpleCommand::EnableEvent;
                data.count.fire_if_changes(
                    || (target.flags() & flags::SOFT_DISABLED == 0) == enable,
                    || {
                        if enable {
                            target.clear_flags(flags::SOFT_DISABLED) & flags::SOFT_DISABLED != 0
                        } else {
                            target.set_flags(flags::SOFT_DISABLED) & flags::SOFT_DISABLED == 0
                        }
                    },
                );
            }
        }
    }

    fn print(&self, data: &EventTriggerData, out: &mut String) {
        let target = self.target_file().map(|t| (t.call.system, t.call.name));
        print_trigger(
            out,
            self.cmd.name(),
            target,
            data.count.get(),
            data.filter_str.as_deref(),
        );
    }

    fn target(&self) -> Option<&TraceEventFile> {
        self.target_file()
    }

    fn free(&self, guard: &MutexGuard<'static, ()>) {
        if let Some(t) = self.target_file() {
            let _ = event_soft_enable_disable_locked(guard, t, false);
        }
    }
}

/// Compiles a trigger's filter against the triggering event (Linux:
/// `set_trigger_filter`, `create_event_filter` without an error_log
/// entry); a bad one fails with the errno a `filter` write would give.
fn compile_filter(file: &TraceEventFile, filter: Option<&str>) -> Result<Option<Filter>, Errno> {
    filter
        .map(|text| Filter::compile(text, file.call.fields).map_err(|e| e.errno))
        .transpose()
}

/// `parse` of traceon, traceoff, snapshot and stacktrace (Linux:
/// `event_trigger_parse`).
fn simple_parse(
    cmd: &'static EventCommand,
    guard: &MutexGuard<'static, ()>,
    file: &TraceEventFile,
    w: &TriggerWrite<'_>,
) -> Result<(), Errno> {
    let which = SimpleCommand::from_name(cmd.name).ok_or(Errno::EINVAL)?;
    let spec = parse_simple(which, w)?;
    if spec.remove {
        unregister_trigger(guard, file, cmd.trigger_type, None);
        return Ok(());
    }
    let filter = compile_filter(file, spec.filter.as_deref())?;
    if which == SimpleCommand::Snapshot {
        // Linux: register_snapshot_trigger allocates the spare first.
        super::snapshot::tracing_alloc_snapshot_instance(file.tr())?;
    }
    let data = simple_trigger(cmd, which, spec.count, spec.filter, filter, None);
    register_trigger(guard, file, data)
}

/// `parse` of enable_event and disable_event (Linux:
/// `event_enable_trigger_parse`): the target must be an event of the same
/// trace array; it is put in soft mode for as long as the trigger exists.
fn enable_parse(
    cmd: &'static EventCommand,
    guard: &MutexGuard<'static, ()>,
    file: &TraceEventFile,
    w: &TriggerWrite<'_>,
) -> Result<(), Errno> {
    let which = SimpleCommand::from_name(cmd.name).ok_or(Errno::EINVAL)?;
    let tr = file.tr();
    let spec = parse_enable(which, w, |system, event| {
        tr.events
            .find(system, event)
            .filter(|f| f.call.system != "ftrace")
    })?;
    let target = spec.target.ok_or(Errno::EINVAL)?;
    if spec.remove {
        unregister_trigger(guard, file, cmd.trigger_type, Some(target));
        return Ok(());
    }
    let filter = compile_filter(file, spec.filter.as_deref())?;
    event_soft_enable_disable_locked(guard, target, true)?;
    let data = simple_trigger(cmd, which, spec.count, spec.filter, filter, Some(target));
    register_trigger(guard, file, data).inspect_err(|_| {
        let _ = event_soft_enable_disable_locked(guard, target, false);
    })
}

/// The trigger data of a simple command (`which`) or of
/// enable_event/disable_event (`target`), with the parsed count and filter.
fn simple_trigger(
    cmd: &'static EventCommand,
    which: SimpleCommand,
    count: u64,
    filter_str: Option<String>,
    filter: Option<Filter>,
    target: Option<&TraceEventFile>,
) -> EventTriggerData {
    EventTriggerData {
        cmd,
        count: TriggerCount::new(count),
        filter_str,
        filter,
        paused: AtomicBool::new(false),
        ops: Box::new(SimpleOps {
            cmd: which,
            target: target.map(|t| t as *const TraceEventFile),
        }),
    }
}

macro_rules! simple_command {
    ($name:ident, $cmd:expr, $flags:expr, $parse:ident) => {
        static $name: EventCommand = EventCommand {
            name: $cmd.name(),
            trigger_type: $cmd.trigger_type(),
            flags: $flags,
            parse: $parse,
            unreg_all: None,
        };
    };
}

simple_command!(TRACEON_CMD, SimpleCommand::TraceOn, 0, simple_parse);
simple_command!(
    TRACEOFF_CMD,
    SimpleCommand::TraceOff,
    EVENT_CMD_FL_POST_TRIGGER,
    simple_parse
);
simple_command!(SNAPSHOT_CMD, SimpleCommand::Snapshot, 0, simple_parse);
simple_command!(
    STACKTRACE_CMD,
    SimpleCommand::Stacktrace,
    EVENT_CMD_FL_POST_TRIGGER,
    simple_parse
);
simple_command!(ENABLE_CMD, SimpleCommand::EnableEvent, 0, enable_parse);
simple_command!(DISABLE_CMD, SimpleCommand::DisableEvent, 0, enable_parse);

/// Registers the built-in commands, in Linux's order (Linux:
/// `register_trigger_cmds`). Other trigger kinds register after these.
pub fn register_trigger_cmds() {
    for cmd in [
        &TRACEON_CMD,
        &TRACEOFF_CMD,
        &SNAPSHOT_CMD,
        &STACKTRACE_CMD,
        &ENABLE_CMD,
        &DISABLE_CMD,
    ] {
        if register_event_command(cmd).is_err() {
            println!("trigger: command {} registered twice", cmd.name);
        }
    }
}

// ---------------------------------------------------------------------------
// The trigger file

/// A write to `file`'s `trigger` (Linux: `event_trigger_regex_write`,
/// `trigger_process_regex`).
fn trigger_write(file: &TraceEventFile, buf: &[u8]) -> Result<usize, Errno> {
    let Some(w) = split_trigger_write(buf)? else {
        return Ok(0);
    };
    let guard = event_mutex();
    let cmd = TRIGGER_COMMANDS
        .lock()
        .iter()
        .copied()
        .find(|c| c.name == w.cmd)
        .ok_or(Errno::EINVAL)?;
    (cmd.parse)(cmd, &guard, file, &w)?;
    Ok(buf.len())
}

/// What `cat trigger` shows (Linux: `trigger_show`): one line per
/// trigger, newest first (hist at the end), or the available commands.
pub fn trigger_text(file: &TraceEventFile) -> String {
    let _guard = event_mutex();
    let mut out = String::new();
    let list = file.triggers.current();
    if list.is_empty() {
        let cmds = TRIGGER_COMMANDS.lock();
        print_available(&mut out, cmds.iter().map(|c| c.name));
    } else {
        for data in list {
            data.ops.print(data, &mut out);
        }
    }
    out
}

/// Opening `trigger`; with `O_TRUNC` the commands that have `unreg_all`
/// drop their triggers first (Linux: `event_trigger_regex_open`).
fn trigger_open(
    tr: &Arc<TraceArray>,
    index: usize,
    flags: OpenFlags,
) -> Result<Box<dyn OpenFile>, Errno> {
    let tr = tr.clone();
    let file = &tr.events.files()[index];
    trigger_open_file(file, flags, {
        let tr = tr.clone();
        move |buf| trigger_write(&tr.events.files()[index], buf)
    })
}

/// Opening the `trigger` of `file`; writes go to `write`.
fn trigger_open_file(
    file: &TraceEventFile,
    flags: OpenFlags,
    write: impl FnMut(&[u8]) -> Result<usize, Errno> + Send + 'static,
) -> Result<Box<dyn OpenFile>, Errno> {
    if flags.writable() && flags.truncate() {
        let guard = event_mutex();
        let cmds: Vec<_> = TRIGGER_COMMANDS.lock().clone();
        for c in cmds {
            if let Some(unreg_all) = c.unreg_all {
                unreg_all(&guard, file);
            }
        }
    }
    let text = trigger_text(file);
    Ok(Box::new(SeqFile::new(text).with_write(write)))
}

/// Creates `trigger` in `dir` for the file of an event made at run time
/// (a probe event's, see `trace_kprobe`).
pub fn create_trigger_file_dyn(
    dir: &Dentry,
    file: super::events::DynFileRef,
) -> Result<Dentry, Errno> {
    tracefs::create_file(dir, "trigger", TRACE_MODE_WRITE, move |f| {
        let w = file.clone();
        trigger_open_file(&file, f, move |buf| trigger_write(&w, buf))
    })
}

/// Creates `trigger` in `dir` for the event `tr.events.files()[index]`.
pub fn create_trigger_file(
    dir: &Dentry,
    tr: &Arc<TraceArray>,
    index: usize,
) -> Result<Dentry, Errno> {
    let tr = tr.clone();
    tracefs::create_file(dir, "trigger", TRACE_MODE_WRITE, move |f| {
        trigger_open(&tr, index, f)
    })
}

/// `# Available triggers:` and the registered commands (the text of an
/// event's `trigger` with no trigger).
pub fn available_triggers_text() -> String {
    let mut out = String::new();
    print_available(&mut out, TRIGGER_COMMANDS.lock().iter().map(|c| c.name));
    out
}
