use crate::Error;

/// Python's `round(x)` for a float: round half to even (`round(2.5) == 2`, `round(10.5) == 10`).
#[must_use]
pub fn round_half_even(x: f64) -> i64 {
    x.round_ties_even() as i64
}

/// `numpy.linspace(start, stop, num)` with the endpoint, computed as NumPy does
/// (`i * step + start`, the last value set to `stop`), so rounding it gives NumPy's grid.
#[must_use]
pub fn linspace(start: f64, stop: f64, num: usize) -> Vec<f64> {
    match num {
        0 => Vec::new(),
        1 => vec![start],
        _ => {
            let step = (stop - start) / (num - 1) as f64;
            let mut y: Vec<f64> = (0..num).map(|i| i as f64 * step + start).collect();
            y[num - 1] = stop;
            y
        }
    }
}

/// The number of combos in the spec's default grid.
pub const GRID_DEFAULT_LEN: usize = 80;

/// The spec's grid: `n = round(linspace(6, 200, 80))`, round half to even.
#[must_use]
pub fn grid_default() -> Vec<Params> {
    linspace(6.0, 200.0, GRID_DEFAULT_LEN)
        .into_iter()
        .filter_map(|v| Params::from_n(round_half_even(v)).ok())
        .collect()
}

/// The six windows of one combo, the six i64 parameters of a combo on the wire.
///
/// Construction validates every window (at least 1, fits `usize`), so the kernels can take
/// any `Params` without checking again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Params {
    n: i64,
    half: i64,
    sq: i64,
    p: i64,
    p3: i64,
    p2: i64,
}

/// Names of the six windows in wire order, for error messages.
const NAMES: [&str; 6] = ["n", "half", "sq", "p", "p3", "p2"];

impl Params {
    /// The combo of length `n`, its other windows derived as the spec says (Python rounding,
    /// each at least 1). For `n = 6`: `(6, 3, 2, 3, 1, 2)`.
    ///
    /// # Errors
    /// [`Error::InvalidWindow`] when `n < 1`.
    pub fn from_n(n: i64) -> Result<Self, Error> {
        if n < 1 {
            return Err(Error::InvalidWindow {
                name: "n",
                value: n,
            });
        }
        let r = |x: f64| round_half_even(x).max(1);
        let nf = n as f64;
        let half = r(nf / 2.0);
        let sq = r(nf.sqrt());
        let p = r(nf / 2.0);
        let p3 = r(p as f64 / 3.0);
        let p2 = r(p as f64 / 2.0);
        Self::from_wire([n, half, sq, p, p3, p2])
    }

    /// Parameters as they come off the wire, `[n, half, sq, p, p3, p2]`. They need not be
    /// the ones [`Params::from_n`] derives; each only has to be a valid window.
    ///
    /// # Errors
    /// [`Error::InvalidWindow`] for a window below 1, [`Error::WindowTooLarge`] for one that
    /// does not fit `usize`.
    pub fn from_wire(wire: [i64; 6]) -> Result<Self, Error> {
        for (name, value) in NAMES.into_iter().zip(wire) {
            if value < 1 {
                return Err(Error::InvalidWindow { name, value });
            }
            if usize::try_from(value).is_err() {
                return Err(Error::WindowTooLarge { value });
            }
        }
        let [n, half, sq, p, p3, p2] = wire;
        Ok(Self {
            n,
            half,
            sq,
            p,
            p3,
            p2,
        })
    }

    /// `[n, half, sq, p, p3, p2]`, the wire order.
    #[must_use]
    pub const fn to_wire(&self) -> [i64; 6] {
        let Self {
            n,
            half,
            sq,
            p,
            p3,
            p2,
        } = *self;
        [n, half, sq, p, p3, p2]
    }

    /// The HMA's long window.
    #[must_use]
    pub const fn n(&self) -> i64 {
        self.n
    }
    /// The HMA's short window.
    #[must_use]
    pub const fn half(&self) -> i64 {
        self.half
    }
    /// The HMA's smoothing window.
    #[must_use]
    pub const fn sq(&self) -> i64 {
        self.sq
    }
    /// HMA3's long window, also its smoothing window.
    #[must_use]
    pub const fn p(&self) -> i64 {
        self.p
    }
    /// HMA3's shortest window.
    #[must_use]
    pub const fn p3(&self) -> i64 {
        self.p3
    }
    /// HMA3's middle window.
    #[must_use]
    pub const fn p2(&self) -> i64 {
        self.p2
    }

    /// The windows as `usize`, wire order. Lossless: construction checked they fit.
    pub(crate) const fn windows(&self) -> Windows {
        let [n, half, sq, p, p3, p2] = self.to_wire();
        Windows {
            n: n as usize,
            half: half as usize,
            sq: sq as usize,
            p: p as usize,
            p3: p3 as usize,
            p2: p2 as usize,
        }
    }
}

/// [`Params`] as indices.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Windows {
    pub(crate) n: usize,
    pub(crate) half: usize,
    pub(crate) sq: usize,
    pub(crate) p: usize,
    pub(crate) p3: usize,
    pub(crate) p2: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_rounding() {
        assert_eq!(round_half_even(1.5), 2);
        assert_eq!(round_half_even(2.5), 2);
        assert_eq!(round_half_even(10.5), 10);
        assert_eq!(round_half_even(0.5), 0);
        assert_eq!(round_half_even(3.5), 4);
        assert_eq!(round_half_even(-2.5), -2);
        assert_eq!(round_half_even(2.4999), 2);
    }

    #[test]
    fn combo_zero_windows() {
        assert_eq!(
            Params::from_n(6).map(|p| p.to_wire()).ok(),
            Some([6, 3, 2, 3, 1, 2])
        );
        // n = 1: every derived window rounds to 0 and is lifted to 1.
        assert_eq!(
            Params::from_n(1).map(|p| p.to_wire()).ok(),
            Some([1, 1, 1, 1, 1, 1])
        );
        // round(21 / 2) = round(10.5) = 10, not 11.
        assert_eq!(Params::from_n(21).map(|p| p.half()).ok(), Some(10));
    }

    #[test]
    fn invalid_n_is_an_error() {
        assert!(matches!(
            Params::from_n(0),
            Err(Error::InvalidWindow {
                name: "n",
                value: 0
            })
        ));
        assert!(matches!(
            Params::from_n(-5),
            Err(Error::InvalidWindow { .. })
        ));
        assert!(matches!(
            Params::from_wire([6, 3, 0, 3, 1, 2]),
            Err(Error::InvalidWindow { name: "sq", .. })
        ));
    }

    #[test]
    fn wire_round_trip() {
        let p = Params::from_n(103).expect("valid n");
        assert_eq!(Params::from_wire(p.to_wire()).ok(), Some(p));
    }

    /// `numpy.round(numpy.linspace(6, 200, 80)).astype(int)`.
    #[test]
    fn default_grid_matches_numpy() {
        const NUMPY: [i64; 80] = [
            6, 8, 11, 13, 16, 18, 21, 23, 26, 28, 31, 33, 35, 38, 40, 43, 45, 48, 50, 53, 55, 58,
            60, 62, 65, 67, 70, 72, 75, 77, 80, 82, 85, 87, 89, 92, 94, 97, 99, 102, 104, 107, 109,
            112, 114, 117, 119, 121, 124, 126, 129, 131, 134, 136, 139, 141, 144, 146, 148, 151,
            153, 156, 158, 161, 163, 166, 168, 171, 173, 175, 178, 180, 183, 185, 188, 190, 193,
            195, 198, 200,
        ];
        let g = grid_default();
        assert_eq!(g.len(), GRID_DEFAULT_LEN);
        let ns: Vec<i64> = g.iter().map(Params::n).collect();
        assert_eq!(ns, NUMPY);
        assert_eq!(g[0].to_wire(), [6, 3, 2, 3, 1, 2]);
        assert_eq!(g[79].to_wire(), [200, 100, 14, 100, 33, 50]);
    }
}
