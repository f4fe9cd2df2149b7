//! The study's code-level experiments: how the program itself is written (dispatch, type tests,
//! allocation, data layout, moves), each measured beside the study's C++ figure.

pub mod alloc;
pub mod dispatch;
pub mod hotcold;
pub mod moves;
pub mod typetest;

/// Our ratio (slower / faster) against the study's, in words.
pub(crate) fn agreement(ours: f64, study: f64) -> &'static str {
    let r = ours / study;
    if (0.67..=1.5).contains(&r) {
        "agrees with the study"
    } else if ours < 1.1 {
        "no measurable difference here"
    } else if r < 1.0 {
        "same direction, smaller here"
    } else {
        "same direction, larger here"
    }
}

/// A comparison row's verdict: how our ratio stands (against the study's, when it gives one),
/// then why.
pub(crate) fn verdict(ours: f64, study: Option<f64>, why: &str) -> String {
    let how = match study {
        Some(sr) => agreement(ours, sr),
        None if ours < 0.91 => "reversed here",
        None if ours < 1.1 => "no measurable difference here",
        None => "measurable here",
    };
    format!("{how}; {why}")
}

/// The smallest step the time-stamp counter is seen to advance by, in ns: the resolution of a
/// single-operation sample (on bare metal about one read's cost; a virtualised TSC may advance in
/// coarser steps).
pub(crate) fn tsc_step_ns(cal: crate::harness::Tsc) -> f64 {
    let mut step = u64::MAX;
    let mut prev = crate::harness::tsc();
    for _ in 0..10_000 {
        let t = crate::harness::tsc();
        if t > prev {
            step = step.min(t - prev);
        }
        prev = t;
    }
    cal.ns(step)
}

/// SplitMix64: a small, seedable generator for the experiments' pre-generated random sequences
/// (call sites, message kinds, which order to free), so every variant sees the same sequence
/// and no generator runs inside a timed region.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`; the bias of a 64-bit multiply-shift is below 2⁻³²).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_say_how_our_ratio_stands() {
        assert!(verdict(1.4, Some(1.47), "x").starts_with("agrees with the study; x"));
        assert!(verdict(1.05, Some(5.68), "x").starts_with("no measurable difference"));
        assert!(verdict(1.5, Some(5.68), "x").starts_with("same direction, smaller"));
        assert!(verdict(20.0, Some(2.6), "x").starts_with("same direction, larger"));
        assert!(verdict(0.8, None, "x").starts_with("reversed"));
        assert!(verdict(1.0, None, "x").starts_with("no measurable"));
        assert!(verdict(2.0, None, "x").starts_with("measurable here; x"));
    }

    #[test]
    fn the_counter_advances_in_a_positive_step() {
        let cal = crate::harness::Tsc::calibrate(std::time::Duration::from_millis(5));
        let step = tsc_step_ns(cal);
        assert!(step > 0.0 && step < 1_000.0, "{step}");
    }

    #[test]
    fn the_generator_is_deterministic_and_stays_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
        }
        let mut seen = [false; 4];
        let mut r = Rng::new(1);
        for _ in 0..100 {
            seen[r.below(4)] = true;
        }
        assert_eq!(seen, [true; 4]);
    }
}
