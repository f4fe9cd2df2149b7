//! Time in the trader's core: [`Nanos`], an instant on the monotonic clock every packet's
//! arrival is read from (`CLOCK_MONOTONIC`, as `afxdp::clock::now_ns`), in nanoseconds.
//! smoltcp's `Instant` is the model: instants are a type, so an arrival can't be passed where
//! a duration is meant; durations stay plain `u64` nanoseconds, named `_ns`.

/// An instant on the monotonic clock, in ns since its (arbitrary) origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Nanos(pub u64);

impl Nanos {
    /// The clock's origin.
    pub const ZERO: Nanos = Nanos(0);

    /// The instant in ns since the clock's origin.
    #[inline]
    pub const fn ns(self) -> u64 {
        self.0
    }

    /// The ns from `earlier` to this instant (0 if `earlier` is later).
    #[inline]
    pub const fn since(self, earlier: Nanos) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// `ns` after this instant (the clock's end at the most).
    #[inline]
    pub const fn after(self, ns: u64) -> Nanos {
        Nanos(self.0.saturating_add(ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_saturate_rather_than_wrap() {
        let (a, b) = (Nanos(5), Nanos(12));
        assert_eq!(b.since(a), 7);
        assert_eq!(
            a.since(b),
            0,
            "an earlier instant is 0 ns after a later one"
        );
        assert_eq!(Nanos(u64::MAX - 1).after(5), Nanos(u64::MAX));
        assert!(a < b && a.after(7) == b);
    }
}
