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

/// The event loop over precomputed indicators; `on_signal(i, signal)` sees every fill.
/// An open position is closed at the last close.
pub(crate) fn run_events(
    close: &[f64],
    hma: &[f64],
    hma3: &[f64],
    mut on_signal: impl FnMut(usize, Signal),
) -> ComboResult {
    let mut ledger = Ledger::new();
    let n = close.len().min(hma.len()).min(hma3.len());
    for i in 1..n {
        if let Some(side) = decide(hma[i - 1], hma3[i - 1], hma[i], hma3[i], ledger.position()) {
            on_signal(
                i,
                Signal {
                    side,
                    reverse: ledger.position().is_some(),
                },
            );
            ledger.fill(side, close[i]);
        }
    }
    if let Some(&last) = close.last() {
        ledger.close(last);
    }
    ledger.result()
}
