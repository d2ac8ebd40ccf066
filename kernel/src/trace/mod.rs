//! The kernel side of ftrace (Linux: kernel/trace/): the call-site records
//! and code patching (`ftrace`), the tracefs files, and the glue between the
//! tracer logic in the `tracer` crate and this kernel.
pub mod control;
pub mod ftrace;
pub mod ksyms;

/// Creates the tracefs files (Linux: tracer_init_tracefs). Runs once at boot,
/// after ftrace_init and before the shell.
pub fn init() {
    control::init();
    let root = crate::fs::tracefs::root();
    if let Err(e) = ftrace::init_tracefs(&root) {
        println!("tracefs: cannot create the ftrace files: {e:?}");
    }
}
