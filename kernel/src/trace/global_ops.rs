//! The global filter: the functions `set_ftrace_filter` and
//! `set_ftrace_notrace` select (Linux: `global_ops` in kernel/trace/ftrace.c,
//! whose hashes the function tracer uses, and function_graph's `graph_ops`
//! too).
//!
//! [`FILTER`] is the filter as the two files edit it (globs already turned
//! into sets of records, and the probes). [`GLOBAL_HASH`] is what it selects,
//! one bit per record, read without a lock: the function tracer's and
//! function_graph's ops both want exactly those records. After [`FILTER`]
//! changes, [`ftrace_update_global_hash`] recomputes the set; the next
//! `ftrace_update` patches the code to match.
use spin::{Lazy, Mutex};
use tracer::filter::{FtraceFilter, FuncNames};

use super::ftrace::{self, FtraceHash};

/// The filter shared by the function tracers (Linux: global_ops' filter
/// and notrace hashes).
pub static FILTER: Lazy<Mutex<FtraceFilter>> = Lazy::new(|| Mutex::new(FtraceFilter::new()));

/// The records [`FILTER`] selects (Linux: global_ops.func_hash, as
/// ftrace_ops_test evaluates it): the filter's records, or all if it is
/// empty, minus notrace's.
pub static GLOBAL_HASH: FtraceHash = FtraceHash::new();

/// Recomputes [`GLOBAL_HASH`] from [`FILTER`].
pub fn ftrace_update_global_hash() {
    let f = FILTER.lock();
    GLOBAL_HASH.get_or_init().store(|i| f.traces(i));
}

/// Function names in record order, for the filter parser.
pub struct RecordNames;

impl FuncNames for RecordNames {
    fn count(&self) -> usize {
        ftrace::records().len()
    }
    fn name(&self, index: usize) -> &str {
        ftrace::record_name(index)
    }
}
