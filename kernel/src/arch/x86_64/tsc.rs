//! A nanosecond clock from the time-stamp counter (Linux: arch/x86/kernel/tsc.c).
//!
//! At boot we count TSC ticks across a 10 ms interval timed by the legacy PIT
//! (channel 2, whose output we can poll), which gives the TSC frequency. Then
//! `ns = (tsc - tsc_at_boot) * mult >> 32`: one multiply, no division.
//! Under `qemu.sh --icount` the TSC advances once per guest instruction.
use core::sync::atomic::{AtomicU64, Ordering};

use ::x86_64::instructions::port::Port;

use super::rdtsc;

static TSC_BASE: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds per TSC tick, as a 32.32 fixed-point number.
static MULT: AtomicU64 = AtomicU64::new(0);
static TSC_HZ: AtomicU64 = AtomicU64::new(0);

const PIT_HZ: u64 = 1_193_182;

/// Measures the TSC frequency. Boot CPU, interrupts off.
pub fn calibrate() {
    let ticks = PIT_HZ / 100; // 10 ms
                              // SAFETY: PIT ports 0x42/0x43 and the speaker port 0x61 (gate of channel 2).
    let (t0, t1) = unsafe {
        let mut speaker = Port::<u8>::new(0x61);
        let gate = (speaker.read() & !0x02) | 0x01;
        speaker.write(gate);
        Port::<u8>::new(0x43).write(0xb0); // channel 2, lo/hi byte, mode 0
        Port::<u8>::new(0x42).write((ticks & 0xff) as u8);
        Port::<u8>::new(0x42).write((ticks >> 8) as u8);
        let t0 = rdtsc();
        while speaker.read() & 0x20 == 0 {
            core::hint::spin_loop();
        }
        (t0, rdtsc())
    };
    let hz = ((t1 - t0) * 100).max(1_000_000);
    TSC_HZ.store(hz, Ordering::Relaxed);
    MULT.store(
        ((1_000_000_000u128 << 32) / hz as u128) as u64,
        Ordering::Relaxed,
    );
    TSC_BASE.store(rdtsc(), Ordering::Relaxed);
}

/// Nanoseconds since boot.
#[inline(always)]
pub fn now_ns() -> u64 {
    let delta = rdtsc().wrapping_sub(TSC_BASE.load(Ordering::Relaxed));
    ((delta as u128 * MULT.load(Ordering::Relaxed) as u128) >> 32) as u64
}

/// The measured TSC frequency in Hz.
pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}
