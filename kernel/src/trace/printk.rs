//! The writer behind `trace_printk!` (Linux: kernel/trace/trace_printk.c
//! and `trace_vprintk`/`__trace_array_vprintk` in kernel/trace/trace.c).
//!
//! `crate::trace_printk` holds the macro and its static key; this module
//! registers the function that records a message and keeps the key in
//! step with the `trace_printk` option. A message is formatted into a
//! `TRACE_BUF_SIZE` buffer on the stack (cut at 1023 bytes as Linux's
//! `vscnprintf`), then written as a `print` event of exactly its length:
//! `struct print_entry { ip, buf[] }` with the caller's `ip`.
use core::fmt;

use tracer::entry::{PrintEntry, TRACE_PRINT};
use tracer::options::{OptionChange, OptionId, TraceOption};
use tracer::printk::TraceBuf;

use super::trace::{self, global_trace};

/// Records one `trace_printk!` message (Linux: `trace_vprintk`). Nothing
/// is formatted when the ring buffer would not record it (tracing off or
/// paused).
fn trace_vprintk(ip: u64, args: fmt::Arguments<'_>) {
    let Some(tr) = global_trace() else {
        return;
    };
    if !tr.buffer.record_is_on() {
        return;
    }
    let text = TraceBuf::format(args);
    let text = text.as_bytes();
    crate::sched::preempt_disable();
    trace::trace_buffer_write_full(tr, PrintEntry::printk_size(text.len()), |buf| {
        PrintEntry::encode_raw(buf, trace::trace_entry_word(TRACE_PRINT), ip, text)
    });
    crate::sched::preempt_enable();
}

/// The `trace_printk` option switches the macro's static key (Linux:
/// `set_tracer_flag` calls `trace_printk_control`).
fn option_changed(tr: &trace::TraceArray, change: &OptionChange) {
    // trace_printk! writes to the top level only.
    if !tr.is_global() {
        return;
    }
    if change.id == OptionId::Core(TraceOption::Printk) {
        if let Err(e) = crate::trace_printk::trace_printk_control(change.enabled) {
            println!("trace_printk: cannot switch the static key: {e:?}");
        }
    }
}

/// Registers the writer and the option probe; the key goes on with the
/// option's current value.
pub fn init() -> Result<(), crate::fs::Errno> {
    trace::OPTIONS_CHANGED.register(option_changed)?;
    if let Some(tr) = global_trace() {
        let on = tr.options.lock().has(TraceOption::Printk);
        crate::trace_printk::trace_printk_control(on)?;
    }
    crate::trace_printk::register_trace_printk(trace_vprintk)
}
