//! The generator's random numbers: xoshiro256** seeded through SplitMix64 (Blackman and Vigna,
//! "Scrambled linear pseudorandom number generators", 2021). Written out here, a dozen lines,
//! because a feed file must be the same for a seed forever: a library's small fast generator
//! (rand's `SmallRng`) is documented as free to change its stream between versions.

/// xoshiro256**.
#[derive(Debug, Clone)]
pub(crate) struct Rng([u64; 4]);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng([next(), next(), next(), next()])
    }

    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let out = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    /// Uniform in [0, 1), 53 bits.
    #[inline]
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n) (Lemire's multiply-shift; the bias is below 2^-32 for the n used here).
    #[inline]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `p`.
    #[inline]
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Geometric on {0, 1, 2, ...} with mean `mean`.
    #[inline]
    pub(crate) fn geometric(&mut self, mean: f64) -> u64 {
        // P(k) = (1-q) q^k, mean q / (1-q).
        let q = mean / (1.0 + mean);
        let u = 1.0 - self.unit();
        (u.ln() / q.ln()) as u64
    }

    /// Exponential with mean `mean`.
    #[inline]
    pub(crate) fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_stream() {
        // The stream for seed 0 must never change: a feed file is named by its seed.
        let mut r = Rng::new(0);
        let first: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        let mut again = Rng::new(0);
        assert_eq!(first, (0..3).map(|_| again.next_u64()).collect::<Vec<_>>());
        assert_ne!(first[0], first[1]);
        assert_eq!(
            first,
            [0x99ec5f36cb75f2b4, 0xbf6e1f784956452a, 0x1a5f849d4933e6e0]
        );
    }

    #[test]
    fn distributions_have_their_means() {
        let mut r = Rng::new(7);
        let n = 200_000;
        let g: f64 = (0..n).map(|_| r.geometric(3.0) as f64).sum::<f64>() / f64::from(n);
        let e: f64 = (0..n).map(|_| r.exponential(2.0)).sum::<f64>() / f64::from(n);
        let u: f64 = (0..n).map(|_| r.below(10) as f64).sum::<f64>() / f64::from(n);
        assert!((g - 3.0).abs() < 0.05, "{g}");
        assert!((e - 2.0).abs() < 0.03, "{e}");
        assert!((u - 4.5).abs() < 0.03, "{u}");
    }
}
