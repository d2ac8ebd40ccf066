//! `/proc`, reduced to the sysctl files tracing needs (Linux: fs/proc/ and
//! fs/proc/proc_sysctl.c for `/proc/sys`).
//!
//! The tree is made of tracefs's nodes (a second root, directories mode
//! 0555 as Linux's `/proc/sys`), mounted at `/proc`. A sysctl file holds one
//! `int` and behaves like Linux's `proc_dointvec` (the parsing is
//! `tracer::sysctl`, tested on the host): a read shows `N\n`; a write at
//! position 0 is parsed and handed to the owner's `store`, which may refuse
//! it with an errno and then changes nothing; once a write moved the
//! position, further writes to the same open file are accepted and ignored.
//! The owner (tracing, for `kernel/ftrace_enabled` and the others) registers
//! its files at boot with [`register_sysctl_int`]; this file imports no
//! tracing code.
use alloc::boxed::Box;
use alloc::sync::Arc;

use spin::Once;
use tracer::sysctl::{proc_dointvec_show, SysctlAction, SysctlWrite};

use super::tracefs::{self, Dentry, SeqFile};
use super::{Errno, NodeRef, OpenFile, OpenFlags};

/// Mode of the `/proc` and `/proc/sys` directories (`dr-xr-xr-x`).
const PROC_DIR_MODE: u16 = 0o555;
/// Mode of a writable sysctl file (`-rw-r--r--`).
const SYSCTL_MODE: u16 = 0o644;

static ROOT: Once<Dentry> = Once::new();

/// The root of `/proc`.
pub fn root() -> Dentry {
    ROOT.call_once(|| tracefs::new_root(PROC_DIR_MODE)).clone()
}

/// The root as a VFS inode, for mounting.
pub fn root_inode() -> NodeRef {
    root()
}

/// What a sysctl's owner does with a value written to it.
type Store = dyn Fn(i32) -> Result<(), Errno> + Send + Sync;

/// Creates `/proc/sys/DIR/NAME`, an `int` shown by `show` and set by
/// `store` (Linux: a `ctl_table` entry whose handler is `proc_dointvec` or
/// wraps it, as `stack_trace_sysctl` and `ftrace_enable_sysctl` do).
pub fn register_sysctl_int(
    dir: &str,
    name: &str,
    show: impl Fn() -> i32 + Send + Sync + 'static,
    store: impl Fn(i32) -> Result<(), Errno> + Send + Sync + 'static,
) -> Result<(), Errno> {
    let sys = tracefs::get_or_create_dir_mode(&root(), "sys", PROC_DIR_MODE)?;
    let dir = tracefs::get_or_create_dir_mode(&sys, dir, PROC_DIR_MODE)?;
    let store: Arc<Store> = Arc::new(store);
    tracefs::create_file(&dir, name, SYSCTL_MODE, move |_flags: OpenFlags| {
        Ok(Box::new(SysctlFile {
            text: SeqFile::new(proc_dointvec_show(show())),
            writes: SysctlWrite::new(),
            store: store.clone(),
        }) as Box<dyn OpenFile>)
    })?;
    Ok(())
}

/// An open sysctl file.
struct SysctlFile {
    text: SeqFile,
    writes: SysctlWrite,
    store: Arc<Store>,
}

impl OpenFile for SysctlFile {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        self.text.read(buf)
    }

    fn write(&mut self, buf: &[u8]) -> Result<usize, Errno> {
        match self.writes.write(buf)? {
            SysctlAction::Ignore(n) => Ok(n),
            SysctlAction::Store { value, used } => {
                (self.store)(value)?;
                self.writes.advance(used);
                Ok(used)
            }
        }
    }
}
