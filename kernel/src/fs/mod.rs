//! The virtual file system: paths, directories, a ramfs root and mounts
//! (Linux: fs/namei.c, fs/open.c, fs/read_write.c, fs/namespace.c).
//!
//! Every file system object is an [`Inode`] behind an `Arc` ([`NodeRef`]).
//! A directory inode answers `lookup`/`readdir`/`create`/`mkdir`/`rmdir`/
//! `unlink`; a file inode answers `open`, which returns an [`OpenFile`]
//! (Linux's `struct file` with its `file_operations`). Because the open file
//! is an object of the file system's choosing, a file's content can be a
//! plain byte vector (ramfs), a text generated once at open time (tracefs'
//! seq_file-like snapshot), or a stream produced at every read (trace_pipe).
//! The open flags, including `O_TRUNC` and `O_APPEND`, are given to `open`,
//! and `release` runs when the last handle is dropped (Linux's `->release`).
//!
//! [`vfs`] holds the mount table and the path-based API used by the shell:
//! `open`, `stat`, `readdir`, `mkdir`, `rmdir`, `unlink`, `chdir`.
//! [`ramfs`] is the root file system, [`tracefs`] the tracing one and
//! [`procfs`] the `/proc/sys` files.

pub mod errno;
pub mod path;
pub mod procfs;
pub mod ramfs;
pub mod tracefs;
pub mod vfs;

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
pub use errno::Errno;
pub use vfs::File;

/// Mounts the root ramfs, tracefs and `/proc` (idempotent). Run at boot before
/// anything opens a file.
pub fn init() {
    static INIT: spin::Once<()> = spin::Once::new();
    INIT.call_once(vfs::init);
}

/// A reference to an inode.
pub type NodeRef = Arc<dyn Inode>;

/// What an inode is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    Regular,
    Directory,
}

/// What `stat` returns.
#[derive(Clone, Copy, Debug)]
pub struct Metadata {
    pub file_type: FileType,
    /// Permission bits, e.g. `0o644`.
    pub mode: u16,
    /// Size in bytes (0 for tracefs files, as on Linux).
    pub size: usize,
    /// Link count: 1 for files, 2 + subdirectories for directories.
    pub nlink: usize,
}

/// One directory entry as `readdir` returns it.
#[derive(Clone, Debug)]
pub struct DirEntry {
    pub name: String,
    pub file_type: FileType,
}

/// Open flags, with Linux's values (include/uapi/asm-generic/fcntl.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFlags(pub u32);

impl OpenFlags {
    pub const O_RDONLY: OpenFlags = OpenFlags(0o0);
    pub const O_WRONLY: OpenFlags = OpenFlags(0o1);
    pub const O_RDWR: OpenFlags = OpenFlags(0o2);
    pub const O_CREAT: OpenFlags = OpenFlags(0o100);
    pub const O_EXCL: OpenFlags = OpenFlags(0o200);
    pub const O_TRUNC: OpenFlags = OpenFlags(0o1000);
    pub const O_APPEND: OpenFlags = OpenFlags(0o2000);
    pub const O_NONBLOCK: OpenFlags = OpenFlags(0o4000);
    const ACCMODE: u32 = 0o3;

    /// True if every bit of `other` is set (the access mode is compared as
    /// a value, since O_RDONLY is 0).
    pub fn contains(self, other: OpenFlags) -> bool {
        self.0 & other.0 == other.0
    }
    pub fn readable(self) -> bool {
        self.0 & Self::ACCMODE != Self::O_WRONLY.0
    }
    pub fn writable(self) -> bool {
        self.0 & Self::ACCMODE != Self::O_RDONLY.0
    }
    pub fn truncate(self) -> bool {
        self.contains(Self::O_TRUNC)
    }
    pub fn append(self) -> bool {
        self.contains(Self::O_APPEND)
    }
    pub fn nonblock(self) -> bool {
        self.contains(Self::O_NONBLOCK)
    }
}

impl core::ops::BitOr for OpenFlags {
    type Output = OpenFlags;
    fn bitor(self, rhs: OpenFlags) -> OpenFlags {
        OpenFlags(self.0 | rhs.0)
    }
}

/// An inode. Directory operations default to ENOTDIR and file operations
/// to EISDIR, so an implementation only writes the ones that apply.
pub trait Inode: Send + Sync {
    fn metadata(&self) -> Metadata;

    /// Opens a regular file. `flags` are the caller's: `O_TRUNC` and
    /// `O_APPEND` are for the file system to interpret.
    fn open(&self, _flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno> {
        Err(Errno::EISDIR)
    }

    /// Finds `name` in this directory.
    fn lookup(&self, _name: &str) -> Result<NodeRef, Errno> {
        Err(Errno::ENOTDIR)
    }
    /// Lists this directory (without `.` and `..`), sorted by name.
    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        Err(Errno::ENOTDIR)
    }
    /// Creates a regular file (open with O_CREAT). A directory that cannot
    /// hold new files answers EACCES, as Linux does without `->create`.
    fn create(&self, _name: &str, _mode: u16) -> Result<NodeRef, Errno> {
        Err(Errno::ENOTDIR)
    }
    fn mkdir(&self, _name: &str, _mode: u16) -> Result<NodeRef, Errno> {
        Err(Errno::ENOTDIR)
    }
    fn rmdir(&self, _name: &str) -> Result<(), Errno> {
        Err(Errno::ENOTDIR)
    }
    fn unlink(&self, _name: &str) -> Result<(), Errno> {
        Err(Errno::ENOTDIR)
    }
}

/// An open file (Linux's `struct file` + `file_operations`).
///
/// `read` returns 0 at end of file. A stream may block in `read` until data
/// arrives; it must then return EINTR when Ctrl-C is pending (use
/// `sched::wait_event_interruptible`). A `write` that fails must change
/// nothing. `release` runs once, when the file is closed; its error is what
/// `close()` returns (Linux: `->flush`'s), and a release that fails must
/// leave things as they were before the file was opened.
pub trait OpenFile: Send {
    fn read(&mut self, _buf: &mut [u8]) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }
    fn write(&mut self, _buf: &[u8]) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }
    fn release(&mut self) -> Result<(), Errno> {
        Ok(())
    }
}
