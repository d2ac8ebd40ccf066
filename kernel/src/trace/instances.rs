//! Instances: independent tracing set-ups under `instances/` (Linux:
//! kernel/trace/trace.c, `instance_mkdir`, `instance_rmdir`,
//! `init_tracer_tracefs`).
//!
//! `mkdir instances/NAME` makes a [`TraceArray`] with its own ring buffer,
//! options, clock, `tracing_on` and tracer, and fills its directory with the
//! files every trace array has ([`init_tracer_tracefs`], which also makes
//! the top level's at boot); each file acts on the array it was made for.
//! The files Linux keeps at the top level only (`README`,
//! `available_filter_functions`, `saved_cmdlines`, the graph filters, ...)
//! are not in an instance.
//!
//! `rmdir instances/NAME` is refused with EBUSY while a file of the instance
//! is open (tracefs counts them, Linux's `tr->ref`). Otherwise the instance
//! stops its tracer, each part of tracing lets go of it (events unregister
//! their probes, the function tracer its ftrace_ops), the directory is
//! unlinked, and after a grace period (`crate::rcu::synchronize_sched`: the
//! writers that could still be inside its buffer run with preemption off)
//! the array and its buffers are freed.
use alloc::sync::Arc;
use alloc::vec::Vec;

use spin::{Mutex, Once};

use super::trace::{TraceArray, TRACE_BUF_SIZE_DEFAULT};
use super::{
    buffer_files, control, error_log, events, export, fgraph, functions, max_trace, snapshot, trace,
};
use crate::fs::tracefs::{self, Dentry, InstanceOps};
use crate::fs::Errno;

/// The instances, in creation order (Linux: `ftrace_trace_arrays`, without
/// the top level). Also serialises mkdir and rmdir.
static INSTANCES: Mutex<Vec<Arc<TraceArray>>> = Mutex::new(Vec::new());

/// The `instances/` directory.
static INSTANCES_DIR: Once<Dentry> = Once::new();

/// Creates the files every trace array has in `dir` (Linux:
/// `init_tracer_tracefs`).
pub fn init_tracer_tracefs(tr: &Arc<TraceArray>, dir: &Dentry) -> Result<(), Errno> {
    control::init_tr(tr, dir)?;
    trace::init_options_files(tr, dir)?;
    buffer_files::init_tr(tr, dir)?;
    export::init_tr(tr, dir)?;
    events::init_tr(tr, dir)?;
    snapshot::init_tr(tr, dir)?;
    max_trace::init_tr(tr, dir)?;
    functions::init_tr(tr, dir)?;
    error_log::init_tr(tr, dir)?;
    Ok(())
}

/// Lets go of everything of `tr` that other parts of tracing hold (Linux:
/// the teardown in `__remove_instance`). Run before the grace period that
/// precedes freeing it.
fn del_tracer(tr: &TraceArray) {
    control::tracing_set_nop(tr);
    events::del_tr(tr);
    functions::del_tr(tr);
}

struct Instances;

impl InstanceOps for Instances {
    fn mkdir(&self, name: &str) -> Result<Dentry, Errno> {
        let mut list = INSTANCES.lock();
        if list.iter().any(|t| t.name == name) {
            return Err(Errno::EEXIST);
        }
        let tr = Arc::new(new_instance(name)?);
        let dir = tracefs::new_instance_dir(tr.open_files.clone());
        if let Err(e) = init_tracer_tracefs(&tr, &dir) {
            del_tracer(&tr);
            crate::rcu::synchronize_sched();
            return Err(e);
        }
        functions::init_tr_hijackers(&tr);
        list.push(tr);
        Ok(dir)
    }

    fn rmdir(&self, name: &str) -> Result<(), Errno> {
        let mut list = INSTANCES.lock();
        let i = list
            .iter()
            .position(|t| t.name == name)
            .ok_or(Errno::ENOENT)?;
        let tr = &list[i];
        if tr.open_files.load(core::sync::atomic::Ordering::SeqCst) != 0
            || tr.trace_ref.load(core::sync::atomic::Ordering::SeqCst) != 0
        {
            return Err(Errno::EBUSY);
        }
        del_tracer(tr);
        let dir = INSTANCES_DIR
            .get()
            .and_then(|parent| tracefs::unlink_instance_dir(parent, name));
        let tr = list.remove(i);
        drop(list);
        // Writers that found the array before it was let go are done
        // after this; then its files (which hold it) and the array go.
        crate::rcu::synchronize_sched();
        drop(dir);
        drop(tr);
        Ok(())
    }
}

/// A new instance's array, with Linux's default buffer size, if the heap
/// can hold it with room to spare (ENOMEM otherwise, nothing allocated).
fn new_instance(name: &str) -> Result<TraceArray, Errno> {
    // Each CPU's pages and its reader page.
    buffer_files::heap_fits_pages(
        crate::arch::nr_cpus()
            .saturating_mul(tracer::ring_buffer::nr_pages_for(TRACE_BUF_SIZE_DEFAULT) + 1),
    )?;
    TraceArray::new(name, TRACE_BUF_SIZE_DEFAULT)
}

/// The instances, for code that acts on every trace array.
pub fn instances() -> Vec<Arc<TraceArray>> {
    INSTANCES.lock().clone()
}

/// The probe on [`fgraph::RETURN_HIJACKERS`]: the first return hijacker
/// registered (`on`) or the last one gone; every trace array's function
/// tracer follows ([`functions::set_tr_hijackers`]). A new instance takes
/// the state in `mkdir`, under the instance list's lock, which this walk
/// takes after the count changed: either the walk sees the new instance
/// or the instance sees the new count.
fn return_hijackers_probe(on: bool) {
    if let Some(tr) = trace::global_trace() {
        functions::set_tr_hijackers(tr, on);
    }
    for tr in instances() {
        functions::set_tr_hijackers(&tr, on);
    }
}

/// Creates `instances/` in the tracefs root, and keeps every trace
/// array's function tracer told of return hijackers.
pub fn init(root: &Dentry) -> Result<(), Errno> {
    fgraph::RETURN_HIJACKERS.register(return_hijackers_probe)?;
    // A hijacker registered before (a boot self-test's kretprobe).
    if fgraph::return_hijackers() {
        return_hijackers_probe(true);
    }
    let dir = tracefs::create_instance_dir(root, "instances", Arc::new(Instances))?;
    INSTANCES_DIR.call_once(|| dir);
    control::readme_add(
        "  instances\t\t- Make sub-buffers with: mkdir instances/foo\n\
         \t\t\t  Remove sub-buffer with rmdir\n",
    );
    Ok(())
}
