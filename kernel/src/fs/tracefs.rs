//! tracefs: the file system through which ftrace is controlled
//! (Linux: fs/tracefs/inode.c, plus the seq_file and simple-attribute
//! patterns of fs/seq_file.c and kernel/trace/trace.c).
//!
//! Tracer code builds the tree with [`create_dir`] and [`create_file`]; a
//! file's behaviour is a [`FileOperations`] object whose `open` returns an
//! [`OpenFile`]. Three patterns cover most of Linux's tracing files:
//! - a text generated when the file is opened and then read piece by piece
//!   ([`SeqFile`], Linux's `single_open` seq_file); repeated reads of the
//!   same open file see the same snapshot;
//! - a value shown by a function and stored by another one that parses what
//!   was written ([`create_show_store`], e.g. `current_tracer`);
//! - a stream produced at every read (e.g. `trace_pipe`), written directly as
//!   an [`OpenFile`] whose `read` may block in
//!   [`crate::sched::wait_event_interruptible`].
//!
//! A write is handed to the file's handler in one piece per `write()` call,
//! exactly as Linux hands the user buffer to `->write`; a handler that fails
//! must leave everything unchanged. `O_TRUNC`/`O_APPEND` reach `open`.
//! Files cannot be created by users (EACCES, as Linux when a directory has no
//! `->create`), nor directories (EPERM), except in a directory made with
//! [`create_instance_dir`] (Linux: `instances/`), whose `mkdir` and `rmdir`
//! call the tracing code that builds and removes an instance. Every file
//! below such an instance's directory counts its opens in the instance's
//! counter ([`new_instance_dir`]), so that `rmdir` can refuse while one is
//! open (Linux: `tr->ref`).
//! The same tracefs is mounted at `/sys/kernel/tracing` and `/tracing`.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use core::sync::atomic::{AtomicUsize, Ordering};

use spin::{Mutex, Once};

use super::{DirEntry, Errno, FileType, Inode, Metadata, NodeRef, OpenFile, OpenFlags};

/// Mode of a tracefs file that can be written (Linux 6.x `TRACE_MODE_WRITE`).
pub const TRACE_MODE_WRITE: u16 = 0o640;
/// Mode of a read-only tracefs file (Linux 6.x `TRACE_MODE_READ`).
pub const TRACE_MODE_READ: u16 = 0o440;
/// Mode of a tracefs directory.
const TRACE_MODE_DIR: u16 = 0o750;

/// A tracefs directory or file (Linux's dentry + inode).
pub type Dentry = Arc<TracefsNode>;

/// What a tracefs file does when opened.
pub trait FileOperations: Send + Sync {
    fn open(&self, flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno>;
}

/// Any `Fn(OpenFlags) -> Result<Box<dyn OpenFile>, Errno>` is a file's
/// operations, so a tracer can write `create_file(&dir, "x", mode, |flags| ...)`.
impl<F> FileOperations for F
where
    F: Fn(OpenFlags) -> Result<Box<dyn OpenFile>, Errno> + Send + Sync,
{
    fn open(&self, flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno> {
        self(flags)
    }
}

pub struct TracefsNode {
    mode: u16,
    kind: Kind,
    /// The open-file counter of the instance this node belongs to (None
    /// outside instances); inherited from the parent at creation.
    opens: Option<Arc<AtomicUsize>>,
}

enum Kind {
    Dir {
        children: Mutex<BTreeMap<String, Dentry>>,
        /// What `mkdir`/`rmdir` in this directory do (instances/ only).
        instances: Option<Arc<dyn InstanceOps>>,
    },
    File(Arc<dyn FileOperations>),
}

/// The `mkdir` and `rmdir` of an instances directory (Linux: the
/// `tracefs_dir_ops` that `tracefs_create_instance_dir` installs).
pub trait InstanceOps: Send + Sync {
    /// Makes the instance `name`: returns its directory, filled, made with
    /// [`new_instance_dir`]. tracefs links it in afterwards.
    fn mkdir(&self, name: &str) -> Result<Dentry, Errno>;
    /// Removes the instance `name` (EBUSY while it is in use); on success
    /// tracefs unlinks its directory afterwards.
    fn rmdir(&self, name: &str) -> Result<(), Errno>;
}

static ROOT: Once<Dentry> = Once::new();

/// The top tracefs directory (what is mounted at `/sys/kernel/tracing`).
pub fn root() -> Dentry {
    ROOT.call_once(new_dir).clone()
}

/// The root as a VFS inode, for mounting.
pub fn root_inode() -> NodeRef {
    root()
}

fn new_dir_in(opens: Option<Arc<AtomicUsize>>) -> Dentry {
    Arc::new(TracefsNode {
        mode: TRACE_MODE_DIR,
        kind: Kind::Dir {
            children: Mutex::new(BTreeMap::new()),
            instances: None,
        },
        opens,
    })
}

fn new_dir() -> Dentry {
    new_dir_in(None)
}

/// A directory with its own mode, linked nowhere: the root of another
/// pseudo file system built from these nodes (`/proc`, see `fs::procfs`).
pub fn new_root(mode: u16) -> Dentry {
    Arc::new(TracefsNode {
        mode,
        kind: Kind::Dir {
            children: Mutex::new(BTreeMap::new()),
            instances: None,
        },
        opens: None,
    })
}

/// The directory `name` of `parent` with the given mode: the existing one,
/// or a new one (ENOTDIR if the name is taken by a file).
pub fn get_or_create_dir_mode(parent: &Dentry, name: &str, mode: u16) -> Result<Dentry, Errno> {
    match lookup(parent, name) {
        Some(d) if matches!(d.kind, Kind::Dir { .. }) => Ok(d),
        Some(_) => Err(Errno::ENOTDIR),
        None => add_child(parent, name, new_root(mode)),
    }
}

/// A directory for an instance, not linked anywhere yet: every file
/// created below it counts its opens in `opens`.
pub fn new_instance_dir(opens: Arc<AtomicUsize>) -> Dentry {
    new_dir_in(Some(opens))
}

/// Creates a directory whose `mkdir` and `rmdir` are `ops`'s (Linux:
/// `tracefs_create_instance_dir`).
pub fn create_instance_dir(
    parent: &Dentry,
    name: &str,
    ops: Arc<dyn InstanceOps>,
) -> Result<Dentry, Errno> {
    let node = Arc::new(TracefsNode {
        mode: TRACE_MODE_DIR,
        kind: Kind::Dir {
            children: Mutex::new(BTreeMap::new()),
            instances: Some(ops),
        },
        opens: None,
    });
    add_child(parent, name, node)
}

fn add_child(parent: &Dentry, name: &str, node: Dentry) -> Result<Dentry, Errno> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(Errno::EINVAL);
    }
    if name.len() > super::path::NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    let Kind::Dir { children, .. } = &parent.kind else {
        return Err(Errno::ENOTDIR);
    };
    let mut children = children.lock();
    if children.contains_key(name) {
        return Err(Errno::EEXIST);
    }
    children.insert(name.to_string(), node.clone());
    Ok(node)
}

/// Creates a directory (Linux: `tracefs_create_dir`). EEXIST if taken.
pub fn create_dir(parent: &Dentry, name: &str) -> Result<Dentry, Errno> {
    add_child(parent, name, new_dir_in(parent.opens.clone()))
}

/// The directory `name` of `parent`: the one another part of the kernel
/// already made (e.g. `per_cpu/`, filled by several tracing files), or a new
/// one. ENOTDIR if the name is taken by a file.
pub fn get_or_create_dir(parent: &Dentry, name: &str) -> Result<Dentry, Errno> {
    match lookup(parent, name) {
        Some(d) if matches!(d.kind, Kind::Dir { .. }) => Ok(d),
        Some(_) => Err(Errno::ENOTDIR),
        None => create_dir(parent, name),
    }
}

/// Creates a file (Linux: `tracefs_create_file`). `mode` is shown by `ls -l`
/// (use [`TRACE_MODE_WRITE`] or [`TRACE_MODE_READ`]).
pub fn create_file(
    parent: &Dentry,
    name: &str,
    mode: u16,
    ops: impl FileOperations + 'static,
) -> Result<Dentry, Errno> {
    let node = Arc::new(TracefsNode {
        mode,
        kind: Kind::File(Arc::new(ops)),
        opens: parent.opens.clone(),
    });
    add_child(parent, name, node)
}

/// Finds a child of a directory.
pub fn lookup(parent: &Dentry, name: &str) -> Option<Dentry> {
    match &parent.kind {
        Kind::Dir { children, .. } => children.lock().get(name).cloned(),
        Kind::File(_) => None,
    }
}

impl Inode for TracefsNode {
    fn metadata(&self) -> Metadata {
        match &self.kind {
            Kind::Dir { children, .. } => {
                let subdirs = children
                    .lock()
                    .values()
                    .filter(|c| matches!(c.kind, Kind::Dir { .. }))
                    .count();
                Metadata {
                    file_type: FileType::Directory,
                    mode: self.mode,
                    size: 0,
                    nlink: 2 + subdirs,
                }
            }
            Kind::File(_) => Metadata {
                file_type: FileType::Regular,
                mode: self.mode,
                size: 0,
                nlink: 1,
            },
        }
    }

    fn open(&self, flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno> {
        match &self.kind {
            Kind::File(ops) => match &self.opens {
                None => ops.open(flags),
                Some(opens) => {
                    // Counted from before the open, so that an rmdir that
                    // saw no open file cannot race with one being opened.
                    let counted = Counted::new(opens.clone());
                    let inner = ops.open(flags)?;
                    Ok(Box::new(counted.holding(inner)))
                }
            },
            Kind::Dir { .. } => Err(Errno::EISDIR),
        }
    }

    fn lookup(&self, name: &str) -> Result<NodeRef, Errno> {
        match &self.kind {
            Kind::Dir { children, .. } => children
                .lock()
                .get(name)
                .map(|d| d.clone() as NodeRef)
                .ok_or(Errno::ENOENT),
            Kind::File(_) => Err(Errno::ENOTDIR),
        }
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        match &self.kind {
            Kind::Dir { children, .. } => Ok(children
                .lock()
                .iter()
                .map(|(name, d)| DirEntry {
                    name: name.clone(),
                    file_type: match d.kind {
                        Kind::Dir { .. } => FileType::Directory,
                        Kind::File(_) => FileType::Regular,
                    },
                })
                .collect()),
            Kind::File(_) => Err(Errno::ENOTDIR),
        }
    }

    fn create(&self, _name: &str, _mode: u16) -> Result<NodeRef, Errno> {
        match &self.kind {
            Kind::Dir { .. } => Err(Errno::EACCES),
            Kind::File(_) => Err(Errno::ENOTDIR),
        }
    }

    // Only instances/ accepts mkdir and rmdir, as on Linux.
    fn mkdir(&self, name: &str, _mode: u16) -> Result<NodeRef, Errno> {
        match &self.kind {
            Kind::Dir {
                instances: Some(ops),
                children,
            } => {
                if name.contains('/') || name == "." || name == ".." {
                    return Err(Errno::EINVAL);
                }
                if name.len() > super::path::NAME_MAX {
                    return Err(Errno::ENAMETOOLONG);
                }
                if children.lock().contains_key(name) {
                    return Err(Errno::EEXIST);
                }
                let dir = ops.mkdir(name)?;
                let mut children = children.lock();
                if children.contains_key(name) {
                    // The instance code serialises mkdirs of one name,
                    // so this is not reached; refuse rather than replace.
                    return Err(Errno::EEXIST);
                }
                children.insert(name.to_string(), dir.clone());
                Ok(dir)
            }
            Kind::Dir { .. } => Err(Errno::EPERM),
            Kind::File(_) => Err(Errno::ENOTDIR),
        }
    }

    fn rmdir(&self, name: &str) -> Result<(), Errno> {
        match &self.kind {
            Kind::Dir {
                instances: Some(ops),
                children,
            } => {
                if !children.lock().contains_key(name) {
                    return Err(Errno::ENOENT);
                }
                ops.rmdir(name)
            }
            Kind::Dir { .. } => Err(Errno::EPERM),
            Kind::File(_) => Err(Errno::ENOTDIR),
        }
    }

    fn unlink(&self, _name: &str) -> Result<(), Errno> {
        match &self.kind {
            Kind::Dir { .. } => Err(Errno::EPERM),
            Kind::File(_) => Err(Errno::ENOTDIR),
        }
    }
}

/// An open file of an instance: holds one count of the instance's open
/// files from open to close.
struct Counted {
    opens: Arc<AtomicUsize>,
    inner: Option<Box<dyn OpenFile>>,
}

impl Counted {
    fn new(opens: Arc<AtomicUsize>) -> Counted {
        opens.fetch_add(1, Ordering::SeqCst);
        Counted { opens, inner: None }
    }

    fn holding(mut self, inner: Box<dyn OpenFile>) -> Counted {
        self.inner = Some(inner);
        self
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        // The inner file goes first: its own release may use the instance.
        drop(self.inner.take());
        self.opens.fetch_sub(1, Ordering::SeqCst);
    }
}

impl OpenFile for Counted {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        match &mut self.inner {
            Some(f) => f.read(buf),
            None => Err(Errno::EBADF),
        }
    }
    fn write(&mut self, buf: &[u8]) -> Result<usize, Errno> {
        match &mut self.inner {
            Some(f) => f.write(buf),
            None => Err(Errno::EBADF),
        }
    }
    fn release(&mut self) -> Result<(), Errno> {
        match &mut self.inner {
            Some(f) => f.release(),
            None => Ok(()),
        }
    }
}

/// True for a directory with no entries.
pub fn is_empty_dir(dir: &Dentry) -> bool {
    match &dir.kind {
        Kind::Dir { children, .. } => children.lock().is_empty(),
        Kind::File(_) => false,
    }
}

/// Unlinks an instance's directory from `instances/` once the instance is
/// gone (called by the instance code from its `rmdir`).
pub fn unlink_instance_dir(parent: &Dentry, name: &str) -> Option<Dentry> {
    match &parent.kind {
        Kind::Dir { children, .. } => children.lock().remove(name),
        Kind::File(_) => None,
    }
}

// ---------------------------------------------------------------------------
// seq_file-like snapshot files

/// Something that handles one `write()` to an open file.
pub type WriteHandler = Box<dyn FnMut(&[u8]) -> Result<usize, Errno> + Send>;
/// Something that runs when an open file is closed.
pub type ReleaseHandler = Box<dyn FnOnce() + Send>;

/// An open file whose content was generated at open time (Linux's
/// `single_open` seq_file). Reads walk through the snapshot; writes go to the
/// optional handler (EINVAL without one, as a file without `->write`).
pub struct SeqFile {
    text: Vec<u8>,
    pos: usize,
    write: Option<WriteHandler>,
    release: Option<ReleaseHandler>,
}

impl SeqFile {
    /// A read-only snapshot.
    pub fn new(text: impl Into<Vec<u8>>) -> SeqFile {
        SeqFile {
            text: text.into(),
            pos: 0,
            write: None,
            release: None,
        }
    }

    /// Adds a write handler; it returns how many bytes it consumed.
    pub fn with_write(
        mut self,
        handler: impl FnMut(&[u8]) -> Result<usize, Errno> + Send + 'static,
    ) -> SeqFile {
        self.write = Some(Box::new(handler));
        self
    }

    /// Adds a hook that runs when the file is closed (Linux's `->release`).
    pub fn with_release(mut self, hook: impl FnOnce() + Send + 'static) -> SeqFile {
        self.release = Some(Box::new(hook));
        self
    }
}

impl OpenFile for SeqFile {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        let start = self.pos.min(self.text.len());
        let n = buf.len().min(self.text.len() - start);
        buf[..n].copy_from_slice(&self.text[start..start + n]);
        self.pos = start + n;
        Ok(n)
    }

    fn write(&mut self, buf: &[u8]) -> Result<usize, Errno> {
        match &mut self.write {
            Some(handler) => handler(buf),
            None => Err(Errno::EINVAL),
        }
    }

    fn release(&mut self) -> Result<(), Errno> {
        if let Some(hook) = self.release.take() {
            hook();
        }
        Ok(())
    }
}

/// An open file whose writes edit a private copy of some state, installed
/// when the file is closed, and only if every write succeeded: a bad write
/// returns its errno and changes nothing (Linux installs a new filter hash on
/// release the same way, in `ftrace_regex_release`). If installing fails,
/// `close()` returns the error and the state in use stays as it was. Used
/// by the filter files.
pub struct EditFile<T> {
    text: SeqFile,
    /// The copy being edited (None when opened read-only).
    copy: Option<T>,
    failed: bool,
    edit: EditHandler<T>,
    commit: Option<CommitHandler<T>>,
}

/// Applies one `write()` to the copy an [`EditFile`] edits.
pub type EditHandler<T> = Box<dyn FnMut(&mut T, &[u8]) -> Result<(), Errno> + Send>;
/// Installs the edited copy when an [`EditFile`] is closed; on error it
/// must leave the state in use whole.
pub type CommitHandler<T> = Box<dyn FnOnce(T) -> Result<(), Errno> + Send>;

impl<T: Clone + Send> EditFile<T> {
    /// `text` is what reads show; `copy` the state to edit (None: read-only);
    /// `edit` applies one write to a copy; `commit` installs the result.
    pub fn new(
        text: impl Into<Vec<u8>>,
        copy: Option<T>,
        edit: impl FnMut(&mut T, &[u8]) -> Result<(), Errno> + Send + 'static,
        commit: impl FnOnce(T) -> Result<(), Errno> + Send + 'static,
    ) -> EditFile<T> {
        EditFile {
            text: SeqFile::new(text),
            copy,
            failed: false,
            edit: Box::new(edit),
            commit: Some(Box::new(commit)),
        }
    }
}

impl<T: Clone + Send> OpenFile for EditFile<T> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        self.text.read(buf)
    }

    fn write(&mut self, buf: &[u8]) -> Result<usize, Errno> {
        let Some(copy) = self.copy.as_mut() else {
            return Err(Errno::EBADF);
        };
        // Edit a scratch copy so that a write failing half-way leaves
        // nothing behind.
        let mut attempt = copy.clone();
        match (self.edit)(&mut attempt, buf) {
            Ok(()) => {
                *copy = attempt;
                Ok(buf.len())
            }
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    fn release(&mut self) -> Result<(), Errno> {
        match (self.copy.take(), self.commit.take()) {
            (Some(copy), Some(commit)) if !self.failed => commit(copy),
            _ => Ok(()),
        }
    }
}

/// Creates a file that shows `show()` and passes each write, as text, to
/// `store` (which sees the raw text, trailing newline included, and returns
/// an error to reject it). Without a store the file is read-only: writes
/// give EINVAL.
pub fn create_show_store<S, T>(
    parent: &Dentry,
    name: &str,
    mode: u16,
    show: S,
    store: Option<T>,
) -> Result<Dentry, Errno>
where
    S: Fn() -> String + Send + Sync + 'static,
    T: Fn(&str) -> Result<(), Errno> + Send + Sync + 'static,
{
    let store: Option<Arc<T>> = store.map(Arc::new);
    create_file(
        parent,
        name,
        mode,
        move |_flags: OpenFlags| -> Result<Box<dyn OpenFile>, Errno> {
            let mut file = SeqFile::new(show());
            if let Some(store) = &store {
                let store = store.clone();
                file = file.with_write(move |buf| {
                    let text = core::str::from_utf8(buf).map_err(|_| Errno::EINVAL)?;
                    store(text)?;
                    Ok(buf.len())
                });
            }
            Ok(Box::new(file) as Box<dyn OpenFile>)
        },
    )
}

/// A read-only file showing `show()`.
pub fn create_show(
    parent: &Dentry,
    name: &str,
    show: impl Fn() -> String + Send + Sync + 'static,
) -> Result<Dentry, Errno> {
    create_show_store(
        parent,
        name,
        TRACE_MODE_READ,
        show,
        None::<fn(&str) -> Result<(), Errno>>,
    )
}

/// Parses a write as Linux's `kstrtoul_from_user(buf, count, 10, ..)`: of
/// its first 66 bytes, an optional `+`, at least one digit, an optional
/// single trailing newline, nothing else (EINVAL); ERANGE on overflow.
pub fn parse_ulong(s: &str) -> Result<u64, Errno> {
    tracer::options::kstrtoul_from_user(s.as_bytes(), 10)
}
