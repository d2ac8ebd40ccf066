//! Host-side build tools for the kernel.
