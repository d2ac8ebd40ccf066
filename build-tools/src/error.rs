//! One error type for the build tools: a message that names what went wrong and
//! where (file, archive member, section, offset), built up with [`Error::context`].

use std::fmt;

/// A build-tool error. Bad input is always reported with one of these, never a panic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

/// Result alias for the build tools.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error with the given message.
    pub fn new(msg: impl Into<String>) -> Error {
        Error(msg.into())
    }

    /// Prefixes the message with `ctx: ` (for example a file or member name).
    pub fn context(self, ctx: impl fmt::Display) -> Error {
        Error(format!("{ctx}: {}", self.0))
    }

    /// The full message.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<object::read::Error> for Error {
    fn from(e: object::read::Error) -> Error {
        Error(format!("malformed ELF: {e}"))
    }
}
