//! One field of an event's record as its `format` file lists it (Linux:
//! `struct ftrace_event_field`): the data that the event declarations
//! (`trace_events`) produce and the filters (`event_filter`) and hist
//! triggers read, in a module of its own below both.

/// One field of an event as the `format` file lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventField {
    /// The C type as Linux prints it (`pid_t`, `char`, `__data_loc char[]`).
    pub ty: &'static str,
    pub name: &'static str,
    pub offset: u32,
    pub size: u32,
    pub signed: bool,
    /// `Some(n)` for a fixed array, printed `name[n]`.
    pub array: Option<u32>,
}
