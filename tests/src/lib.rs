//! QEMU test harness.
