//! Path-based file operations, the mount table and the current directory
//! (Linux: fs/namei.c, fs/namespace.c, fs/open.c).
//!
//! A path is first made absolute and normalized ([`super::path`]), then
//! walked from the root one component at a time. After each step the mount
//! table is consulted: if the path walked so far is a mount point, the walk
//! continues in the root of the mounted file system (Linux's
//! `follow_mount`). The same file system can be mounted at several places;
//! tracefs is at `/sys/kernel/tracing` and `/tracing`.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use spin::{Mutex, Once};

use super::path::{self, NAME_MAX};
use super::{DirEntry, Errno, FileType, Metadata, NodeRef, OpenFile, OpenFlags};

struct Vfs {
    root: NodeRef,
    /// Absolute normalized path -> root of the file system mounted there.
    /// Replaced as a whole on mount, so a walk takes a cheap snapshot.
    mounts: Mutex<Arc<BTreeMap<String, NodeRef>>>,
    cwd: Mutex<String>,
}

static VFS: Once<Vfs> = Once::new();

/// Creates the ramfs root, the mount points and mounts tracefs on
/// `/sys/kernel/tracing` and `/tracing`, and `/proc`. Called once at boot, before the
/// shell and the tracers run.
pub fn init() {
    VFS.call_once(|| Vfs {
        root: super::ramfs::RamDir::new_root(),
        mounts: Mutex::new(Arc::new(BTreeMap::new())),
        cwd: Mutex::new("/".to_string()),
    });
    for dir in [
        "/sys",
        "/sys/kernel",
        "/sys/kernel/tracing",
        "/tracing",
        "/tmp",
        "/proc",
    ] {
        let _ = mkdir(dir);
    }
    let tracefs = super::tracefs::root_inode();
    mount("/sys/kernel/tracing", tracefs.clone()).expect("mount tracefs");
    mount("/tracing", tracefs).expect("mount tracefs");
    mount("/proc", super::procfs::root_inode()).expect("mount proc");
}

fn vfs() -> &'static Vfs {
    VFS.get().expect("vfs::init not called")
}

/// Mounts a file system root on an existing directory.
pub fn mount(at: &str, root: NodeRef) -> Result<(), Errno> {
    let parts = absolute(at)?;
    let node = walk(&parts)?;
    if node.metadata().file_type != FileType::Directory {
        return Err(Errno::ENOTDIR);
    }
    let key = path::join(&parts);
    let mut mounts = vfs().mounts.lock();
    if mounts.contains_key(&key) {
        return Err(Errno::EBUSY);
    }
    let mut new = BTreeMap::clone(&mounts);
    new.insert(key, root);
    *mounts = Arc::new(new);
    Ok(())
}

/// The current directory, absolute and normalized.
pub fn getcwd() -> String {
    vfs().cwd.lock().clone()
}

/// Changes the current directory.
pub fn chdir(p: &str) -> Result<(), Errno> {
    let parts = absolute(p)?;
    let node = walk(&parts)?;
    if node.metadata().file_type != FileType::Directory {
        return Err(Errno::ENOTDIR);
    }
    *vfs().cwd.lock() = path::join(&parts);
    Ok(())
}

/// `p` made absolute against the current directory, as components.
pub fn absolute(p: &str) -> Result<Vec<String>, Errno> {
    let cwd = getcwd();
    path::normalize(&cwd, p)
}

/// Walks absolute components from the root, crossing mount points.
fn walk(parts: &[String]) -> Result<NodeRef, Errno> {
    let v = vfs();
    let mounts = v.mounts.lock().clone();
    let mut node = mounts.get("/").cloned().unwrap_or_else(|| v.root.clone());
    let mut walked = String::new();
    for name in parts {
        node = node.lookup(name)?;
        walked.push('/');
        walked.push_str(name);
        if let Some(root) = mounts.get(&walked) {
            node = root.clone();
        }
    }
    Ok(node)
}

fn is_mount_point(parts: &[String]) -> bool {
    parts.is_empty() || vfs().mounts.lock().contains_key(&path::join(parts))
}

/// Resolves a path to its inode.
pub fn lookup(p: &str) -> Result<NodeRef, Errno> {
    walk(&absolute(p)?)
}

/// The parent directory's inode and the last name, for create/remove.
fn parent_and_name(p: &str) -> Result<(NodeRef, String, Vec<String>), Errno> {
    let mut parts = absolute(p)?;
    let name = parts.pop().ok_or(Errno::EEXIST)?;
    let parent = walk(&parts)?;
    if parent.metadata().file_type != FileType::Directory {
        return Err(Errno::ENOTDIR);
    }
    parts.push(name.clone());
    Ok((parent, name, parts))
}

pub fn stat(p: &str) -> Result<Metadata, Errno> {
    Ok(lookup(p)?.metadata())
}

pub fn readdir(p: &str) -> Result<Vec<DirEntry>, Errno> {
    lookup(p)?.readdir()
}

pub fn mkdir(p: &str) -> Result<(), Errno> {
    let (parent, name, _) = parent_and_name(p)?;
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if parent.lookup(&name).is_ok() {
        return Err(Errno::EEXIST);
    }
    parent.mkdir(&name, 0o755).map(|_| ())
}

pub fn rmdir(p: &str) -> Result<(), Errno> {
    match path::last_component(p) {
        Some(".") => return Err(Errno::EINVAL),
        Some("..") => return Err(Errno::ENOTEMPTY),
        None => return Err(Errno::EBUSY), // rmdir("/")
        _ => {}
    }
    let (parent, name, parts) = parent_and_name(p)?;
    if parent.lookup(&name)?.metadata().file_type != FileType::Directory {
        return Err(Errno::ENOTDIR);
    }
    if is_mount_point(&parts) || getcwd() == path::join(&parts) {
        return Err(Errno::EBUSY);
    }
    parent.rmdir(&name)
}

pub fn unlink(p: &str) -> Result<(), Errno> {
    let (parent, name, _) = parent_and_name(p)?;
    if parent.lookup(&name)?.metadata().file_type == FileType::Directory {
        return Err(Errno::EISDIR);
    }
    parent.unlink(&name)
}

/// An open file. Dropping it closes it (runs the file system's release).
pub struct File {
    inner: Box<dyn OpenFile>,
    flags: OpenFlags,
    closed: bool,
}

impl File {
    /// Reads up to `buf.len()` bytes; 0 means end of file.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        if !self.flags.readable() {
            return Err(Errno::EBADF);
        }
        self.inner.read(buf)
    }

    /// Writes `buf` in one call to the file system's write handler.
    pub fn write(&mut self, buf: &[u8]) -> Result<usize, Errno> {
        if !self.flags.writable() {
            return Err(Errno::EBADF);
        }
        self.inner.write(buf)
    }

    /// Writes all of `buf`, calling write again after a short write.
    pub fn write_all(&mut self, mut buf: &[u8]) -> Result<(), Errno> {
        while !buf.is_empty() {
            let n = self.write(buf)?;
            if n == 0 {
                return Err(Errno::EIO);
            }
            buf = &buf[n..];
        }
        Ok(())
    }

    /// Reads until end of file. Not for consuming streams such as trace_pipe,
    /// which never end.
    pub fn read_to_end(&mut self) -> Result<Vec<u8>, Errno> {
        let mut out = Vec::new();
        let mut chunk = [0u8; 512];
        loop {
            let n = self.read(&mut chunk)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&chunk[..n]);
        }
    }
}

impl File {
    /// Closes the file now and returns what its release reported (Linux:
    /// `close()`'s return value). A file dropped without `close` is
    /// released too, and the error is lost.
    pub fn close(&mut self) -> Result<(), Errno> {
        if core::mem::replace(&mut self.closed, true) {
            return Ok(());
        }
        self.inner.release()
    }
}

impl Drop for File {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Opens `p`. With `O_CREAT` a missing regular file is created in its
/// parent (EEXIST with `O_EXCL` if it exists). Directories can't be opened
/// here (EISDIR): use [`readdir`]. Fires `vfs:vfs_open` with the result.
pub fn open(p: &str, flags: OpenFlags) -> Result<File, Errno> {
    let file = do_open(p, flags);
    let ret = file.as_ref().map_or_else(|e| -e.code(), |_| 0);
    crate::events::vfs::trace_vfs_open(p, flags.0, ret);
    file
}

/// `open` without its event.
fn do_open(p: &str, flags: OpenFlags) -> Result<File, Errno> {
    let node = if flags.contains(OpenFlags::O_CREAT) {
        let (parent, name, _) = parent_and_name(p)?;
        match parent.lookup(&name) {
            Ok(_) if flags.contains(OpenFlags::O_EXCL) => return Err(Errno::EEXIST),
            Ok(node) => node,
            Err(Errno::ENOENT) => {
                if name.len() > NAME_MAX {
                    return Err(Errno::ENAMETOOLONG);
                }
                parent.create(&name, 0o644)?
            }
            Err(e) => return Err(e),
        }
    } else {
        lookup(p)?
    };
    if node.metadata().file_type == FileType::Directory {
        return Err(Errno::EISDIR);
    }
    let inner = node.open(flags)?;
    Ok(File {
        inner,
        flags,
        closed: false,
    })
}

/// Reads a whole (finite) file.
pub fn read_file(p: &str) -> Result<Vec<u8>, Errno> {
    open(p, OpenFlags::O_RDONLY)?.read_to_end()
}

/// Creates or truncates `p` and writes `data` in one write call
/// (what `echo data > p` does).
pub fn write_file(p: &str, data: &[u8]) -> Result<(), Errno> {
    let flags = OpenFlags::O_WRONLY | OpenFlags::O_CREAT | OpenFlags::O_TRUNC;
    let mut file = open(p, flags)?;
    file.write_all(data)?;
    file.close()
}
