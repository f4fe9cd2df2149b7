//! The lab's one clock.

/// Nanoseconds on CLOCK_MONOTONIC (vDSO, ~20 ns). Every process of the lab reads the same
/// clock, so the replay's send schedule and the orders' arrival are on one time base.
#[inline]
pub fn now_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always available");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}
