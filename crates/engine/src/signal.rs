use crate::{ComboResult, Ledger, Side};

/// A decision of the stop-and-reverse rule: go `side` at this bar's close.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signal {
    /// The side to hold from now on.
    pub side: Side,
    /// True when a position was open (on the other side) and is closed first.
    pub reverse: bool,
}

/// The spec's rule for bar `i >= 1`, given the indicators at `i - 1` and `i` and the current
/// position: `Some(side)` to fill, `None` to do nothing. Shared by every kernel and the
/// streaming strategy, so they cannot disagree on a decision.
#[inline(always)]
pub(crate) fn decide(
    prev_hma: f64,
    prev_hma3: f64,
    hma: f64,
    hma3: f64,
    position: Option<Side>,
) -> Option<Side> {
    if hma.is_nan() || hma3.is_nan() || prev_hma.is_nan() || prev_hma3.is_nan() {
        return None;
    }
    let up = hma3 > hma && prev_hma3 < prev_hma;
    let dn = hma > hma3 && prev_hma < prev_hma3;
    if up && position != Some(Side::Long) {
        Some(Side::Long)
    } else if dn && position != Some(Side::Short) {
        Some(Side::Short)
    } else {
        None
    }
}

/// The event loop's state between bars: the ledger and the previous bar's indicators.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Events {
    pub(crate) ledger: Ledger,
    prev_hma: f64,
    prev_hma3: f64,
}

impl Events {
    pub(crate) const fn new() -> Self {
        Self {
            ledger: Ledger::new(),
            prev_hma: f64::NAN,
            prev_hma3: f64::NAN,
        }
    }

    /// The previous bar's (HMA, HMA3).
    pub(crate) const fn prev(&self) -> (f64, f64) {
        (self.prev_hma, self.prev_hma3)
    }

    /// One bar: decide on this bar's indicators against the previous bar's, fill at `price`.
    /// The first bar never signals (its "previous" indicators are NaN).
    #[inline(always)]
    pub(crate) fn step(&mut self, price: f64, hma: f64, hma3: f64) -> Option<Signal> {
        let position = self.ledger.position();
        let decision = decide(self.prev_hma, self.prev_hma3, hma, hma3, position);
        self.prev_hma = hma;
        self.prev_hma3 = hma3;
        let side = decision?;
        self.ledger.fill(side, price);
        Some(Signal {
            side,
            reverse: position.is_some(),
        })
    }
}

impl Events {
    /// [`Events::step`] over consecutive bars, with the same decisions and fills in the same
    /// order. [`decide`] can only fill where the lines cross (`up` or `dn`; any NaN makes both
    /// comparisons false), so a branch-free scan marks those bars 64 at a time and only they
    /// run the decision against the position. Most bars cross nowhere: the sweep's event loops
    /// then cost a compare per bar instead of a mispredicted branch per signal.
    #[inline]
    pub(crate) fn steps(&mut self, close: &[f64], hma: &[f64], hma3: &[f64]) {
        let len = close.len().min(hma.len()).min(hma3.len());
        if len == 0 {
            return;
        }
        // Bar 0 is against the previous run's last bar.
        self.step(close[0], hma[0], hma3[0]);
        let (close, prev, prev3) = (&close[1..len], &hma[..len - 1], &hma3[..len - 1]);
        let (cur, cur3) = (&hma[1..len], &hma3[1..len]);
        for base in (0..len - 1).step_by(64) {
            let end = (base + 64).min(len - 1);
            let mut crossings = 0u64;
            for (j, (((&h, &h3), &ph), &ph3)) in cur[base..end]
                .iter()
                .zip(&cur3[base..end])
                .zip(&prev[base..end])
                .zip(&prev3[base..end])
                .enumerate()
            {
                let up = h3 > h && ph3 < ph;
                let dn = h > h3 && ph < ph3;
                crossings |= u64::from(up | dn) << j;
            }
            while crossings != 0 {
                let k = base + crossings.trailing_zeros() as usize;
                crossings &= crossings - 1;
                if let Some(side) =
                    decide(prev[k], prev3[k], cur[k], cur3[k], self.ledger.position())
                {
                    self.ledger.fill(side, close[k]);
                }
            }
        }
        self.prev_hma = hma[len - 1];
        self.prev_hma3 = hma3[len - 1];
    }
}

/// The event loop over precomputed indicators; `on_signal(i, signal)` sees every fill.
/// An open position is closed at the last close.
pub(crate) fn run_events(
    close: &[f64],
    hma: &[f64],
    hma3: &[f64],
    mut on_signal: impl FnMut(usize, Signal),
) -> ComboResult {
    let mut ev = Events::new();
    for (i, ((&price, &h), &h3)) in close.iter().zip(hma).zip(hma3).enumerate() {
        if let Some(s) = ev.step(price, h, h3) {
            on_signal(i, s);
        }
    }
    if let Some(&last) = close.last() {
        ev.ledger.close(last);
    }
    ev.ledger.result()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Indicator values from a small set, so ties (neither line above the other) and NaNs are
    /// common: the cases where skipping a bar would be wrong if the scan were.
    fn lines(len: usize, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut s = seed;
        let mut next = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as u32
        };
        let mut pick = move || match next() % 8 {
            7 => f64::NAN,
            v => f64::from(v % 3),
        };
        let (mut close, mut h, mut h3) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..len {
            close.push(100.0 + (i % 17) as f64);
            h.push(pick());
            h3.push(pick());
        }
        (close, h, h3)
    }

    #[test]
    fn steps_equals_step_bar_by_bar_across_runs_ties_and_nans() {
        for (seed, len) in [
            (1, 0),
            (2, 1),
            (3, 63),
            (4, 64),
            (5, 65),
            (6, 1000),
            (7, 4097),
        ] {
            let (close, h, h3) = lines(len, seed);
            let mut one = Events::new();
            let mut fills = 0;
            for i in 0..len {
                fills += usize::from(one.step(close[i], h[i], h3[i]).is_some());
            }
            // Runs of uneven lengths, as the sweep's time blocks and a final short block.
            for cut in [1, 7, 64, 100, 4096] {
                let mut many = Events::new();
                for s in (0..len).step_by(cut) {
                    let e = (s + cut).min(len);
                    many.steps(&close[s..e], &h[s..e], &h3[s..e]);
                }
                let (a, b) = (one.ledger.result(), many.ledger.result());
                assert_eq!(a.trades, b.trades, "len {len}, runs of {cut}");
                assert_eq!(a.pnl.to_bits(), b.pnl.to_bits(), "len {len}, runs of {cut}");
                assert_eq!(one.ledger.position(), many.ledger.position());
                assert_eq!(one.prev_hma.to_bits(), many.prev_hma.to_bits());
                assert_eq!(one.prev_hma3.to_bits(), many.prev_hma3.to_bits());
            }
            if len > 100 {
                assert!(
                    fills > 10,
                    "the data has crossings to skip between ({fills})"
                );
            }
        }
    }
}
