//! Error numbers, with Linux's values (include/uapi/asm-generic/errno-base.h,
//! errno.h) and the C library's `strerror` texts, so that the shell prints
//! the same messages as a Linux system (`Invalid argument`, ...).
//!
//! The tracer's parsers return an [`Errno`], exactly as Linux's
//! `ftrace_regex_write()` returns `-EINVAL` for a name that matches nothing;
//! the kernel re-exports this one type for its file layer (`fs::Errno`).

use core::fmt;

macro_rules! errnos {
    ($($name:ident = $num:literal, $text:literal;)*) => {
        /// A Linux error number. `code()` gives the positive value
        /// (`EINVAL` = 22); file operations return `Result<T, Errno>`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(i32)]
        pub enum Errno {
            $(#[doc = $text] $name = $num,)*
        }

        impl Errno {
            /// The symbolic name, e.g. `"EINVAL"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Errno::$name => stringify!($name),)*
                }
            }

            /// The text `strerror()` gives for this error, e.g. `"Invalid argument"`.
            pub const fn strerror(self) -> &'static str {
                match self {
                    $(Errno::$name => $text,)*
                }
            }

            /// The error for a Linux error number, if it is one we know.
            pub const fn from_i32(num: i32) -> Option<Errno> {
                match num {
                    $($num => Some(Errno::$name),)*
                    _ => None,
                }
            }
        }
    };
}

errnos! {
    EPERM = 1, "Operation not permitted";
    ENOENT = 2, "No such file or directory";
    ESRCH = 3, "No such process";
    EINTR = 4, "Interrupted system call";
    EIO = 5, "Input/output error";
    ENXIO = 6, "No such device or address";
    E2BIG = 7, "Argument list too long";
    ENOEXEC = 8, "Exec format error";
    EBADF = 9, "Bad file descriptor";
    ECHILD = 10, "No child processes";
    EAGAIN = 11, "Resource temporarily unavailable";
    ENOMEM = 12, "Cannot allocate memory";
    EACCES = 13, "Permission denied";
    EFAULT = 14, "Bad address";
    EBUSY = 16, "Device or resource busy";
    EEXIST = 17, "File exists";
    EXDEV = 18, "Invalid cross-device link";
    ENODEV = 19, "No such device";
    ENOTDIR = 20, "Not a directory";
    EISDIR = 21, "Is a directory";
    EINVAL = 22, "Invalid argument";
    ENFILE = 23, "Too many open files in system";
    EMFILE = 24, "Too many open files";
    ENOTTY = 25, "Inappropriate ioctl for device";
    EFBIG = 27, "File too large";
    ENOSPC = 28, "No space left on device";
    ESPIPE = 29, "Illegal seek";
    EROFS = 30, "Read-only file system";
    EMLINK = 31, "Too many links";
    EPIPE = 32, "Broken pipe";
    ERANGE = 34, "Numerical result out of range";
    ENAMETOOLONG = 36, "File name too long";
    ENOSYS = 38, "Function not implemented";
    ENOTEMPTY = 39, "Directory not empty";
    ELOOP = 40, "Too many levels of symbolic links";
    ENODATA = 61, "No data available";
    EOVERFLOW = 75, "Value too large for defined data type";
    EILSEQ = 84, "Invalid or incomplete multibyte or wide character";
    EOPNOTSUPP = 95, "Operation not supported";
    EADDRNOTAVAIL = 99, "Cannot assign requested address";
}

impl Errno {
    /// The positive error number.
    pub const fn code(self) -> i32 {
        self as i32
    }
}

/// Prints what `strerror()` prints, as a Linux shell does after `sh: ...: `.
impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.strerror())
    }
}

#[cfg(test)]
mod tests {
    use super::Errno;

    #[test]
    fn numbers_names_and_texts_are_linuxs() {
        assert_eq!(Errno::EINVAL.code(), 22);
        assert_eq!(Errno::EINVAL.name(), "EINVAL");
        assert_eq!(Errno::EBUSY.strerror(), "Device or resource busy");
        assert_eq!(Errno::from_i32(12), Some(Errno::ENOMEM));
        assert_eq!(Errno::from_i32(0), None);
        assert_eq!(Errno::from_i32(-22), None);
        assert_eq!(Errno::ENOENT.to_string(), "No such file or directory");
    }
}
