//! ramfs: a file system that lives only in memory (Linux: fs/ramfs/).
//!
//! A directory is a sorted map from names to inodes; a file is a byte
//! vector behind a lock. An open file keeps its own position; with
//! `O_APPEND` every write goes to the current end, with `O_TRUNC` the file is
//! emptied at open. An unlinked file stays readable by whoever has it open,
//! because the open file holds an `Arc` to its data.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use spin::Mutex;

use super::{DirEntry, Errno, FileType, Inode, Metadata, NodeRef, OpenFile, OpenFlags};

/// Largest ramfs file, so that a runaway writer gets ENOSPC instead of
/// exhausting the kernel heap.
pub const MAX_FILE_SIZE: usize = 1 << 20;

/// A ramfs directory.
pub struct RamDir {
    mode: u16,
    children: Mutex<BTreeMap<String, Child>>,
}

#[derive(Clone)]
enum Child {
    Dir(Arc<RamDir>),
    File(Arc<RamFile>),
}

impl Child {
    fn node(&self) -> NodeRef {
        match self {
            Child::Dir(d) => d.clone(),
            Child::File(f) => f.clone(),
        }
    }
}

impl RamDir {
    /// A new empty directory to be used as a file system root.
    pub fn new_root() -> NodeRef {
        Arc::new(RamDir::new(0o755))
    }

    fn new(mode: u16) -> RamDir {
        RamDir {
            mode,
            children: Mutex::new(BTreeMap::new()),
        }
    }
}

impl Inode for RamDir {
    fn metadata(&self) -> Metadata {
        let children = self.children.lock();
        let subdirs = children
            .values()
            .filter(|c| matches!(c, Child::Dir(_)))
            .count();
        Metadata {
            file_type: FileType::Directory,
            mode: self.mode,
            size: 0,
            nlink: 2 + subdirs,
        }
    }

    fn lookup(&self, name: &str) -> Result<NodeRef, Errno> {
        self.children
            .lock()
            .get(name)
            .map(Child::node)
            .ok_or(Errno::ENOENT)
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        let children = self.children.lock();
        Ok(children
            .iter()
            .map(|(name, c)| DirEntry {
                name: name.clone(),
                file_type: match c {
                    Child::Dir(_) => FileType::Directory,
                    Child::File(_) => FileType::Regular,
                },
            })
            .collect())
    }

    fn create(&self, name: &str, mode: u16) -> Result<NodeRef, Errno> {
        let mut children = self.children.lock();
        if children.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        let file = Arc::new(RamFile {
            mode,
            data: Arc::new(Mutex::new(Vec::new())),
        });
        children.insert(name.to_string(), Child::File(file.clone()));
        Ok(file)
    }

    fn mkdir(&self, name: &str, mode: u16) -> Result<NodeRef, Errno> {
        let mut children = self.children.lock();
        if children.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        let dir = Arc::new(RamDir::new(mode));
        children.insert(name.to_string(), Child::Dir(dir.clone()));
        Ok(dir)
    }

    fn rmdir(&self, name: &str) -> Result<(), Errno> {
        let mut children = self.children.lock();
        match children.get(name) {
            None => Err(Errno::ENOENT),
            Some(Child::File(_)) => Err(Errno::ENOTDIR),
            Some(Child::Dir(d)) => {
                if !d.children.lock().is_empty() {
                    return Err(Errno::ENOTEMPTY);
                }
                children.remove(name);
                Ok(())
            }
        }
    }

    fn unlink(&self, name: &str) -> Result<(), Errno> {
        let mut children = self.children.lock();
        match children.get(name) {
            None => Err(Errno::ENOENT),
            Some(Child::Dir(_)) => Err(Errno::EISDIR),
            Some(Child::File(_)) => {
                children.remove(name);
                Ok(())
            }
        }
    }
}

/// A ramfs regular file.
pub struct RamFile {
    mode: u16,
    /// Shared with the open files, which keep it alive after an unlink.
    data: Arc<Mutex<Vec<u8>>>,
}

impl Inode for RamFile {
    fn metadata(&self) -> Metadata {
        Metadata {
            file_type: FileType::Regular,
            mode: self.mode,
            size: self.data.lock().len(),
            nlink: 1,
        }
    }

    fn open(&self, flags: OpenFlags) -> Result<Box<dyn OpenFile>, Errno> {
        if flags.truncate() && flags.writable() {
            self.data.lock().clear();
        }
        Ok(Box::new(RamOpenFile {
            data: self.data.clone(),
            pos: 0,
            append: flags.append(),
        }))
    }
}

struct RamOpenFile {
    data: Arc<Mutex<Vec<u8>>>,
    pos: usize,
    append: bool,
}

impl OpenFile for RamOpenFile {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        let data = self.data.lock();
        let start = self.pos.min(data.len());
        let n = buf.len().min(data.len() - start);
        buf[..n].copy_from_slice(&data[start..start + n]);
        self.pos = start + n;
        Ok(n)
    }

    fn write(&mut self, buf: &[u8]) -> Result<usize, Errno> {
        let mut data = self.data.lock();
        let start = if self.append { data.len() } else { self.pos };
        let end = start.checked_add(buf.len()).ok_or(Errno::EFBIG)?;
        if end > MAX_FILE_SIZE {
            return Err(Errno::ENOSPC);
        }
        if data.len() < end {
            let grow = end - data.len();
            data.try_reserve(grow).map_err(|_| Errno::ENOMEM)?;
            data.resize(end, 0);
        }
        data[start..end].copy_from_slice(buf);
        self.pos = end;
        Ok(buf.len())
    }
}
