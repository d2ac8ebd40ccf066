//! The pid filter of trace events (Linux: `trace_event_ignore_this_pid` in
//! kernel/trace/trace_events.c, fed by `set_event_pid`).
//!
//! An event probe asks [`trace_event_ignore_this_pid`] before it records.
//! With no `set_event_pid` list no task is ignored.
/// Whether the event probe running now must drop its record because the
/// current task is filtered out by `set_event_pid` (Linux passes the
/// event file, to reach its trace array; there is one trace array here).
/// Only asked for events whose PID_FILTER flag is set.
#[inline(always)]
pub fn trace_event_ignore_this_pid() -> bool {
    false
}
