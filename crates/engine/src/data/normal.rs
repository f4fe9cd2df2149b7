//! NumPy's `random_standard_normal` (`numpy/random/src/distributions/distributions.c`): the
//! 256-layer ziggurat of `Generator.normal`, not the legacy Box-Muller of `RandomState`.

use super::pcg64::Pcg64;
use super::ziggurat::{FI, KI, NOR_INV_R, NOR_R, WI};

pub(crate) fn standard_normal(rng: &mut Pcg64) -> f64 {
    loop {
        let r = rng.next_u64();
        let idx = (r & 0xff) as usize;
        let r = r >> 8;
        let negative = r & 1 == 1;
        let rabs = (r >> 1) & 0x000f_ffff_ffff_ffff;
        let mut x = rabs as f64 * WI[idx];
        if negative {
            x = -x;
        }
        if rabs < KI[idx] {
            return x; // 99.3% of draws end here.
        }
        if idx == 0 {
            // The tail beyond NOR_R. NumPy draws 1 - U to avoid log(0) (its GH 13361).
            loop {
                let xx = -NOR_INV_R * (-rng.next_f64()).ln_1p();
                let yy = -(-rng.next_f64()).ln_1p();
                if yy + yy > xx * xx {
                    return if (rabs >> 8) & 1 == 1 {
                        -(NOR_R + xx)
                    } else {
                        NOR_R + xx
                    };
                }
            }
        }
        if (FI[idx - 1] - FI[idx]) * rng.next_f64() + FI[idx] < (-0.5 * x * x).exp() {
            return x;
        }
    }
}

/// `Generator.normal(loc, scale, n)`: `loc + scale * standard_normal` per draw.
pub(crate) fn normal(rng: &mut Pcg64, loc: f64, scale: f64, n: usize) -> Vec<f64> {
    (0..n).map(|_| loc + scale * standard_normal(rng)).collect()
}
