//! The lab's one clock, and the conversions to it.

use nix::sys::time::TimeSpec;

/// Nanoseconds on CLOCK_MONOTONIC (vDSO, ~20 ns). Every process of the lab reads the same
/// clock, so the replay's send schedule and the orders' arrival are on one time base.
#[inline]
pub fn now_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always available");
    ns(&ts)
}

/// Nanoseconds on CLOCK_REALTIME: what the kernel's receive timestamps are on.
pub fn realtime_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME)
        .expect("CLOCK_REALTIME is always available");
    ns(&ts)
}

/// A `timespec` (non-negative, as every clock and stamp here is) in nanoseconds.
#[inline]
pub fn ns(ts: &TimeSpec) -> u64 {
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}
