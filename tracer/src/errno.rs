//! Error numbers the tracefs files return, with Linux's values
//! (include/uapi/asm-generic/errno-base.h and errno.h).
//!
//! The tracer's parsers return an [`Errno`]; the kernel's file layer turns it
//! into the negative return value of `read`/`write`, exactly as Linux's
//! `ftrace_regex_write()` returns `-EINVAL` for a name that matches nothing.

use core::fmt;

/// A Linux error number. `as i32` gives the positive value (`EINVAL` = 22);
/// a syscall returns its negation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Errno {
    /// Operation not permitted.
    EPERM = 1,
    /// No such file or directory.
    ENOENT = 2,
    /// Out of memory.
    ENOMEM = 12,
    /// Bad address (user copy failed).
    EFAULT = 14,
    /// Device or resource busy.
    EBUSY = 16,
    /// File exists (duplicate trigger).
    EEXIST = 17,
    /// No such device (tracing disabled, e.g. `ftrace_disabled`).
    ENODEV = 19,
    /// Invalid argument: the usual answer to a bad write.
    EINVAL = 22,
    /// No space left (a fixed-size table is full).
    ENOSPC = 28,
    /// Result too large.
    ERANGE = 34,
    /// Try again (non-blocking read of an empty pipe).
    EAGAIN = 11,
}

impl Errno {
    /// The positive error number.
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The value a syscall returns: `-code`.
    pub const fn as_neg(self) -> isize {
        -(self as i32 as isize)
    }

    /// Linux's symbolic name.
    pub const fn name(self) -> &'static str {
        match self {
            Errno::EPERM => "EPERM",
            Errno::ENOENT => "ENOENT",
            Errno::ENOMEM => "ENOMEM",
            Errno::EFAULT => "EFAULT",
            Errno::EBUSY => "EBUSY",
            Errno::EEXIST => "EEXIST",
            Errno::ENODEV => "ENODEV",
            Errno::EINVAL => "EINVAL",
            Errno::ENOSPC => "ENOSPC",
            Errno::ERANGE => "ERANGE",
            Errno::EAGAIN => "EAGAIN",
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}
