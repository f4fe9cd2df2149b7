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
