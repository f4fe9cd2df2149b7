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

/// Converts the kernel's CLOCK_REALTIME receive stamps to the lab's CLOCK_MONOTONIC. The
/// offset between the two is read again when it is more than [`RealToMono::RESAMPLE_NS`] old,
/// so NTP slewing the real-time clock during a run (at most 500 ppm) moves a converted stamp
/// by at most 0.5 µs; the reading itself is good to about a clock read (~20 ns). The kernel
/// stamps with the real-time clock it read itself, so a stamp can still be off by that much:
/// an order whose stamp lands before its tick's due time is counted
/// (`orders_stamped_before_due`, a note in the bench's report) and left out of the latency
/// figures, never recorded as 0.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealToMono {
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC, ns.
    offset: i128,
    /// When the offset was read (monotonic ns; 0: never).
    read_at: u64,
}

impl RealToMono {
    /// How old the offset may get before it is read again.
    pub const RESAMPLE_NS: u64 = 1_000_000;
    /// Reads per resample, the narrowest kept.
    const TRIES: usize = 4;

    /// `real_ns` (CLOCK_REALTIME) on CLOCK_MONOTONIC.
    pub fn to_mono(&mut self, real_ns: u64) -> u64 {
        let now = now_ns();
        if self.read_at == 0 || now.saturating_sub(self.read_at) > Self::RESAMPLE_NS {
            // The real-time read between two monotonic ones; of a few tries, the one with the
            // narrowest window, so a preemption in the middle of one can't skew the offset.
            let mut best = (u64::MAX, 0i128);
            for _ in 0..Self::TRIES {
                let before = now_ns();
                let real = realtime_ns();
                let after = now_ns();
                let window = after.saturating_sub(before);
                if window < best.0 {
                    best = (
                        window,
                        i128::from(real) - i128::from(before / 2 + after / 2),
                    );
                }
            }
            self.offset = best.1;
            self.read_at = now_ns();
        }
        u64::try_from(i128::from(real_ns) - self.offset).unwrap_or(0)
    }
}
