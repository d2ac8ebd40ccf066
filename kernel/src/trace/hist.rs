//! Hist triggers in the kernel: the `hist` trigger command and each event's
//! `hist` file (Linux: kernel/trace/trace_events_hist.c).
//!
//! `echo 'hist:keys=...' >> events/SYSTEM/EVENT/trigger` parses the spec
//! with `tracer::hist` and registers a trigger whose action counts the
//! event's record into the trigger's preallocated `tracing_map`. The hist
//! command needs the record (`EVENT_CMD_FL_NEEDS_REC`), so the probe builds
//! it on its stack, hands it to the triggers and, since a trigger puts the
//! event in soft mode, writes nothing to the buffer unless the event is
//! also enabled: counting costs no buffer space. Several hist triggers may
//! sit on one event; `:pause`, `:cont` and `:clear` act on the existing
//! trigger with the same spec, `!hist:...` removes it, and opening
//! `trigger` with `O_TRUNC` removes them all (Linux's `unreg_all`).
//!
//! `cat events/SYSTEM/EVENT/hist` prints every hist trigger's table in
//! Linux's layout (`tracer::hist::show`).
//!
//! `name=NAME` (Linux's named triggers): the first trigger of a name makes
//! its table and lists it in [`NAMED`]; a later trigger of that name, on
//! any event of any trace array, must have a matching spec and then counts
//! into the same table. Each event's trigger keeps its own filter and
//! paused flag; `:clear` pauses the table itself while it empties it.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use spin::MutexGuard;
use tracer::event_filter::Filter;
use tracer::hist::{self, EventInfo, HistCtx, HistSpec, HistTrigger, Register};
use tracer::trigger::{TriggerCount, TriggerType, TriggerWrite};

use super::error_log::tracing_log_err;
use super::events::{event_mutex, TraceEventFile};
use super::trace::{KernelSymbols, TraceArray};
use super::trigger::{
    register_event_command, register_trigger, unregister_trigger_if, EventCommand,
    EventTriggerData, TriggerOps, EVENT_CMD_FL_NEEDS_REC,
};
use crate::fs::tracefs::{self, Dentry, SeqFile, TRACE_MODE_READ};
use crate::fs::{Errno, OpenFile};

/// A hist trigger's action and text. Triggers of one `name=` share one
/// `HistTrigger` (its table) across events.
struct HistOps {
    hist: Arc<HistTrigger>,
}

/// The named hist triggers' tables, by the name in their spec (Linux:
/// `named_triggers`, global to every trace array). A table lives while a
/// trigger holds it; the entries are weak. Changed under the event mutex.
static NAMED: spin::Mutex<Vec<Weak<HistTrigger>>> = spin::Mutex::new(Vec::new());

/// The live table named `name` (Linux: `find_named_trigger`).
fn find_named(name: &str) -> Option<Arc<HistTrigger>> {
    let mut named = NAMED.lock();
    named.retain(|w| w.strong_count() > 0);
    named
        .iter()
        .filter_map(Weak::upgrade)
        .find(|h| h.spec.name.as_deref() == Some(name))
}

impl TriggerOps for HistOps {
    /// `event_hist_trigger()`: count the record (the probe has applied
    /// the filter and skips a paused trigger).
    #[inline]
    fn trigger(&self, _data: &EventTriggerData, file: &TraceEventFile, rec: Option<&[u8]>) {
        let Some(rec) = rec else {
            return;
        };
        let mut ctx = HistCtx::default();
        if self.hist.needs_ctx() {
            ctx.ts = file.tr().trace_clock();
            ctx.cpu = crate::arch::cpu_id() as u32;
            if let Some(t) = crate::sched::current() {
                ctx.comm = t.trace_info().comm;
            }
        }
        self.hist.update(rec, &ctx);
    }

    fn print(&self, data: &EventTriggerData, out: &mut String) {
        hist::print_as(
            out,
            &self.hist,
            data.filter_str.as_deref(),
            data.paused.load(Ordering::Relaxed),
        );
    }

    fn hist(&self) -> Option<&HistTrigger> {
        Some(&self.hist)
    }
}

/// The event as the hist parser sees it.
fn event_info(file: &TraceEventFile) -> EventInfo<'static> {
    EventInfo {
        system: file.call.system,
        name: file.call.name,
        fields: file.call.fields,
    }
}

/// Pauses or continues a trigger: the probe's flag and the printed state.
/// A named trigger's table is shared, so only this event's trigger flag
/// changes (Linux: `test->paused`); an unnamed one's table flag follows
/// it (the probe's fields hist reads that one).
fn set_paused(data: &EventTriggerData, h: &HistTrigger, p: bool) {
    data.paused.store(p, Ordering::SeqCst);
    if h.spec.name.is_none() {
        h.set_paused(p);
    }
}

/// `:clear` (Linux: `hist_clear()`, `pause_named_trigger`): pause the
/// table (every event that shares it), wait until no probe can still be
/// counting, empty the map, continue as before.
fn hist_clear(h: &HistTrigger) {
    let was = h.paused();
    h.set_paused(true);
    crate::rcu::synchronize_sched();
    h.clear();
    h.set_paused(was);
}

/// Logs a refused hist command in the trace array's `error_log` when
/// Linux logs it (Linux: `hist_err()`, with `last_cmd_loc`
/// `hist:SYSTEM:EVENT` and `last_cmd` `hist:` + the text after `hist:`);
/// gives its errno.
fn hist_err(file: &TraceEventFile, param: &str, e: hist::HistError) -> Errno {
    if let Some((text, pos)) = e.log {
        let loc = alloc::format!("hist:{}:{}", file.call.system, file.call.name);
        tracing_log_err(
            file.tr(),
            &loc,
            &hist::HistError::cmd(param),
            &[text],
            0,
            pos,
        );
    }
    e.errno
}

/// `parse` of the hist command (Linux: `event_hist_trigger_parse()`).
fn hist_parse(
    cmd: &'static EventCommand,
    guard: &MutexGuard<'static, ()>,
    file: &TraceEventFile,
    w: &TriggerWrite<'_>,
) -> Result<(), Errno> {
    let param = w.param_and_filter.ok_or(Errno::EINVAL)?;
    let hc = hist::parse(param, &event_info(file)).map_err(|e| hist_err(file, param, e))?;
    let filter = hc
        .spec
        .filter
        .as_deref()
        .map(|text| Filter::compile(text, file.call.fields).map_err(|e| e.errno))
        .transpose()?;
    // A name already in use: share its table if the spec matches it
    // (Linux: hist_register_trigger's named_data).
    let named = match hc.spec.name.as_deref() {
        Some(name) if !w.remove => match find_named(name) {
            Some(h) if hc.spec.named_match(&h.spec) => Some(h),
            Some(_) => return Err(hist_err(file, param, hist::named_mismatch(param, name))),
            None => None,
        },
        _ => None,
    };
    let existing = super::trigger::triggers_of(file, guard);
    let hists: Vec<(&Arc<EventTriggerData>, &HistTrigger)> = existing
        .iter()
        .filter_map(|d| d.ops.hist().map(|h| (d, h)))
        .collect();
    let specs: Vec<&HistSpec> = hists.iter().map(|(_, h)| &h.spec).collect();
    if w.remove {
        if let Some(i) = hist::find_match(&specs, &hc.spec) {
            let target = Arc::as_ptr(hists[i].0);
            unregister_trigger_if(guard, file, |d| core::ptr::eq(d, target));
        }
        return Ok(());
    }
    match hist::register(&specs, &hc).map_err(|e| hist_err(file, param, e))? {
        Register::Update {
            index,
            pause,
            cont,
            clear,
        } => {
            let (data, h) = hists[index];
            if pause {
                set_paused(data, h, true);
            } else if cont {
                set_paused(data, h, false);
            } else if clear {
                hist_clear(h);
            }
            Ok(())
        }
        Register::Install { paused } => {
            let filter_str = hc.spec.filter.clone();
            let (h, new_name) = match named {
                Some(h) => (h, false),
                None => {
                    let named = hc.spec.name.is_some();
                    // A named table starts active: each event's trigger
                    // pauses on its own.
                    let h = HistTrigger::new(hc.spec, paused && !named)?;
                    (Arc::new(h), named)
                }
            };
            if h.uses_timestamps() {
                file.tr().set_trace_clock(&h.spec.clock)?;
            }
            let data = EventTriggerData {
                cmd,
                count: TriggerCount::new(TriggerCount::UNLIMITED),
                filter_str,
                filter,
                paused: AtomicBool::new(paused),
                ops: Box::new(HistOps { hist: h.clone() }),
            };
            register_trigger(guard, file, data)?;
            if new_name {
                NAMED.lock().push(Arc::downgrade(&h));
            }
            Ok(())
        }
    }
}

/// `unreg_all` of hist: `echo 'hist:...' > trigger` first removes every
/// hist trigger of the event.
fn hist_unreg_all(guard: &MutexGuard<'static, ()>, file: &TraceEventFile) {
    unregister_trigger_if(guard, file, |d| d.ops.hist().is_some());
}

static HIST_CMD: EventCommand = EventCommand {
    name: "hist",
    trigger_type: TriggerType::Hist,
    flags: EVENT_CMD_FL_NEEDS_REC,
    parse: hist_parse,
    unreg_all: Some(hist_unreg_all),
};

/// Registers the `hist` command (Linux: `register_trigger_hist_cmd`).
pub fn register_trigger_hist_cmd() {
    if register_event_command(&HIST_CMD).is_err() {
        println!("hist: trigger command registered twice");
    }
}

/// The text of `events/SYSTEM/EVENT/hist` (Linux: `hist_show()`).
pub fn hist_text(file: &TraceEventFile) -> String {
    let guard = event_mutex();
    let mut out = String::new();
    let list = super::trigger::triggers_of(file, &guard);
    hist::show_as(
        &mut out,
        list.iter().filter_map(|d| {
            let h = d.ops.hist()?;
            Some((h, d.filter_str.as_deref(), d.paused.load(Ordering::Relaxed)))
        }),
        &KernelSymbols,
    );
    out
}

/// Creates `hist` in `dir` for the event `tr.events.files()[index]`.
pub fn create_hist_file(dir: &Dentry, tr: &Arc<TraceArray>, index: usize) -> Result<Dentry, Errno> {
    let tr = tr.clone();
    tracefs::create_file(dir, "hist", TRACE_MODE_READ, move |_| {
        let text = hist_text(&tr.events.files()[index]);
        Ok(Box::new(SeqFile::new(text)) as Box<dyn OpenFile>)
    })
}

/// Creates `hist` in `dir` for the file of an event made at run time (a
/// probe event's, see `trace_kprobe`; Linux gives every event one, dynamic
/// events included).
pub fn create_hist_file_dyn(
    dir: &Dentry,
    file: super::events::DynFileRef,
) -> Result<Dentry, Errno> {
    tracefs::create_file(dir, "hist", TRACE_MODE_READ, move |_| {
        Ok(Box::new(SeqFile::new(hist_text(&file))) as Box<dyn OpenFile>)
    })
}

/// Runs a `hist:` (or, with `remove`, `!hist:`) write on `file` as the
/// `trigger` file would, for in-kernel users (the benchmark).
pub fn hist_trigger_write(file: &TraceEventFile, param: &str, remove: bool) -> Result<(), Errno> {
    let guard = event_mutex();
    let w = TriggerWrite {
        glob: if remove { "!hist" } else { "hist" },
        cmd: "hist",
        remove,
        param_and_filter: Some(param),
    };
    // Through the registry's function pointer, as the trigger file calls it.
    (core::hint::black_box(HIST_CMD.parse))(&HIST_CMD, &guard, file, &w)
}

/// The bench's measuring function: the cost of calling a leaf, with a
/// reset run before each batch.
pub type CallCost = fn(fn(u64, u64) -> u64, &mut dyn FnMut()) -> u64;

/// The `bench` case `hist_update` (kernel/src/trace/bench.rs runs it with
/// its own loop, `call_cost`, and leaf, `leaf`: the benchmark body behind
/// the real sched_switch tracepoint): instructions per sched_switch counted
/// by a one-key hist trigger (`hist:keys=prev_pid`) with the event itself
/// off, so the probe builds the record on its stack, the trigger counts it
/// into the tracing_map and nothing is written to the buffer; the leaf with
/// the trigger minus the leaf with the tracepoint off. Every batch must
/// count exactly `n` hits on the bench task's key and write no record.
/// `file` is `tr`'s sched_switch, with no probe registered yet.
#[inline(never)]
pub fn bench_hist_update(
    tr: &TraceArray,
    file: &TraceEventFile,
    n: u64,
    leaf: fn(u64, u64) -> u64,
    call_cost: CallCost,
    this_cpu_entries: fn(&TraceArray) -> u64,
) -> Result<(u64, u64), String> {
    const SPEC: &str = "keys=prev_pid";
    let key = crate::sched::current_pid() as i32 as i64 as u64;
    // Preemption off while measuring only: registering and removing the
    // trigger wait for grace periods.
    crate::sched::preempt_disable();
    let off = call_cost(leaf, &mut || {});
    crate::sched::preempt_enable();
    hist_trigger_write(file, SPEC, false).map_err(|e| String::from(e.strerror()))?;
    let mut before = 0;
    tr.buffer.reset();
    crate::sched::preempt_disable();
    let on = call_cost(leaf, &mut || {
        before = hist_key_hitcount(file, key).unwrap_or(0);
    });
    let counted = hist_key_hitcount(file, key).unwrap_or(0) - before;
    let written = this_cpu_entries(tr);
    crate::sched::preempt_enable();
    let _ = hist_trigger_write(file, SPEC, true);
    tr.buffer.reset();
    if counted != n {
        Err(String::from("the hist did not count every call"))
    } else if written != 0 {
        Err(String::from("records were written with the event off"))
    } else {
        Ok((on.saturating_sub(off), n))
    }
}

/// The hitcount of the one-word key `key` in `file`'s first hist trigger.
pub fn hist_key_hitcount(file: &TraceEventFile, key: u64) -> Option<u64> {
    let guard = event_mutex();
    let list = super::trigger::triggers_of(file, &guard);
    let h = list.iter().find_map(|d| d.ops.hist())?;
    h.map.lookup(&[key]).map(|e| e.sum(0))
}
