//! The tracepoints of every declared event (Linux: the `DECLARE_TRACE` /
//! `DEFINE_TRACE` stage of include/linux/tracepoint.h over
//! include/trace/events/*.h).
//!
//! Each system's declaration (`tracer::sched_events!` and the others, in
//! tracer/src/trace_events/, with their event classes already expanded
//! into plain events) is expanded here by [`define_tracepoints!`], in one
//! module per system that `tracer::for_each_event_system!` makes; the
//! stage makes for every event NAME:
//! - `static __TRACEPOINT_KEY_NAME: StaticKey` and
//!   `static __TRACEPOINT_NAME: Tracepoint<fn(*mut (), args..)>`;
//! - `#[inline(always)] pub fn trace_NAME(args)`, the call site: a static
//!   branch, and out of line the loop over the probes;
//! - `register_trace_NAME(probe, data)`, `register_trace_prio_NAME(probe,
//!   data, prio)`, `unregister_trace_NAME(probe, data)`,
//!   `replace_trace_NAME(probe, data, new_probe, new_data)`, `trace_NAME_enabled()`.
//!
//! The scheduler, the interrupt path and the allocator call
//! `crate::events::SYSTEM::trace_NAME(..)` and never import tracing; the
//! probes that write records (kernel/src/trace/events.rs) register here.

/// The tracepoint stage (see the module doc). Invoked by a system's
/// declaration macro: `tracer::sched_events!(define_tracepoints)`, which
/// `tracer::for_each_event_system!(define_tracepoints)` calls per system.
#[macro_export]
macro_rules! define_tracepoints {
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
                #[doc(hidden)]
                #[allow(non_upper_case_globals)]
                pub static [<__TRACEPOINT_KEY_ $name>]: $crate::jump_label::StaticKey =
                    $crate::jump_label::StaticKey::new();

                #[doc = concat!("The `", stringify!($system), ":", stringify!($name), "` tracepoint.")]
                #[allow(non_upper_case_globals)]
                pub static [<__TRACEPOINT_ $name>]: $crate::tracepoint::Tracepoint<fn(*mut (), $($argty),*)> =
                    $crate::tracepoint::Tracepoint::new(
                        stringify!($name),
                        &[<__TRACEPOINT_KEY_ $name>],
                        [<__traceiter_ $name>],
                    );

                $(#[$meta])*
                #[doc = ""]
                #[doc = concat!("Fires `", stringify!($system), ":", stringify!($name), "`: one static branch while no probe is registered.")]
                #[inline(always)]
                #[allow(clippy::too_many_arguments)]
                pub fn [<trace_ $name>]($($arg: $argty),*) {
                    if $crate::static_branch_unlikely!([<__TRACEPOINT_KEY_ $name>]) {
                        [<__do_trace_ $name>]($($arg),*);
                    }
                }

                /// The out-of-line part of the call site (Linux: `__DO_TRACE`):
                /// one indirect call of the published function, the only
                /// probe or the iterator over several (Linux's static call).
                #[inline(always)]
                #[allow(clippy::too_many_arguments)]
                fn [<__do_trace_ $name>]($($arg: $argty),*) {
                    [<__TRACEPOINT_ $name>].do_trace(|func, data| func(data, $($arg),*));
                }

                /// Every probe in turn (Linux: `__traceiter_NAME`): the
                /// published function when there are several, `data` the
                /// published array.
                #[inline(never)]
                #[cold]
                #[allow(clippy::too_many_arguments)]
                fn [<__traceiter_ $name>](data: *mut (), $($arg: $argty),*) {
                    // SAFETY: called by `do_trace` with the array's
                    // own address as data, preemption still off.
                    let funcs = unsafe {
                        $crate::tracepoint::Tracepoint::<fn(*mut (), $($argty),*)>::iter_list(data)
                    };
                    for f in funcs {
                        (f.func)(f.data as *mut (), $($arg),*);
                    }
                }

                /// Whether a probe is registered (Linux: `trace_NAME_enabled()`).
                #[inline(always)]
                pub fn [<trace_ $name _enabled>]() -> bool {
                    [<__TRACEPOINT_ $name>].is_enabled()
                }

                /// Adds `probe`, called with `data` first (EEXIST if this pair is registered).
                pub fn [<register_trace_ $name>](probe: fn(*mut (), $($argty),*), data: *mut ()) -> Result<(), $crate::fs::Errno> {
                    [<__TRACEPOINT_ $name>].register(probe, data)
                }

                /// Adds `probe` at priority `prio` (higher runs first).
                pub fn [<register_trace_prio_ $name>](probe: fn(*mut (), $($argty),*), data: *mut (), prio: i32) -> Result<(), $crate::fs::Errno> {
                    [<__TRACEPOINT_ $name>].register_prio(probe, data, prio)
                }

                /// Replaces `probe` with `data` by `new_probe` with `new_data` in one step
                /// (every call runs one of them; ENOENT if the first is not registered).
                pub fn [<replace_trace_ $name>](
                    probe: fn(*mut (), $($argty),*),
                    data: *mut (),
                    new_probe: fn(*mut (), $($argty),*),
                    new_data: *mut (),
                ) -> Result<(), $crate::fs::Errno> {
                    [<__TRACEPOINT_ $name>].replace(probe, data, new_probe, new_data)
                }

                /// Removes `probe` with `data` (ENOENT if it is not registered).
                pub fn [<unregister_trace_ $name>](probe: fn(*mut (), $($argty),*), data: *mut ()) -> Result<(), $crate::fs::Errno> {
                    [<__TRACEPOINT_ $name>].unregister(probe, data)
                }
            )*
        }
    };
}

// One module per system (`crate::events::sched`, ...), from tracer's list
// of systems.
tracer::for_each_event_system!(define_tracepoints);
