//! Path names: splitting, `.`/`..` and repeated slashes.
//!
//! There are no symbolic links, so a path can be resolved *lexically*: it is
//! turned into an absolute list of components first (`..` removes the
//! previous component, `..` of `/` is `/`), and only then walked from the
//! root. This is what a shell's `cd` does with `$PWD` (Linux itself walks
//! `..` through the dentry tree, which gives the same result without links).

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::errno::Errno;

/// Longest path accepted (Linux's PATH_MAX, including the NUL).
pub const PATH_MAX: usize = 4096;
/// Longest single component (Linux's NAME_MAX).
pub const NAME_MAX: usize = 255;

/// Turns `path`, absolute or relative to `cwd` (itself absolute and
/// normalized), into a list of components from the root.
/// `""` is ENOENT, as for Linux system calls.
pub fn normalize(cwd: &str, path: &str) -> Result<Vec<String>, Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    let mut parts: Vec<String> = Vec::new();
    if !path.starts_with('/') {
        for c in cwd.split('/').filter(|c| !c.is_empty()) {
            parts.push(c.to_string());
        }
    }
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            name => {
                if name.len() > NAME_MAX {
                    return Err(Errno::ENAMETOOLONG);
                }
                parts.push(name.to_string());
            }
        }
    }
    Ok(parts)
}

/// Joins components back into an absolute path (`/` for none).
pub fn join(parts: &[String]) -> String {
    if parts.is_empty() {
        return "/".to_string();
    }
    let mut s = String::new();
    for p in parts {
        s.push('/');
        s.push_str(p);
    }
    s
}

/// The last component of a path as the user wrote it (`a/b/` gives `b`,
/// `/` gives `None`). Removal commands use it to refuse `.` and `..`
/// as Linux does (`rmdir .` is EINVAL).
pub fn last_component(path: &str) -> Option<&str> {
    path.split('/').rfind(|c| !c.is_empty())
}
