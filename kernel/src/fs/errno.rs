//! Error numbers: the kernel uses the one [`Errno`] of the `tracer` crate
//! (Linux's values and `strerror` texts), so the tracer's parsers and the
//! file layer return the same type and `?` needs no conversion.

pub use tracer::errno::Errno;
