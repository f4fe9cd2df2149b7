/// The round-trip fee of the spec: `net = (1 + g) * (1 - FEE) - 1`.
pub const FEE: f64 = 0.0009;

/// A position's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Bought; profits when the price rises.
    Long,
    /// Sold short; profits when the price falls.
    Short,
}

/// What a backtest of one combo produces.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ComboResult {
    /// Sum over closed trades of `100 * net` (percentage points, no compounding).
    pub pnl: f64,
    /// Closed positions.
    pub trades: u64,
}

/// Books fills into trades and PnL, exactly as the spec's event loop does.
///
/// The one implementation of the fee formula: every kernel and the exchange side book through
/// it, so equal fills give bit-equal PnL. Sans-IO and `Copy`: a few words of state.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Ledger {
    open: Option<(Side, f64)>,
    pnl: f64,
    trades: u64,
}

impl Ledger {
    /// No position, no trades.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            open: None,
            pnl: 0.0,
            trades: 0,
        }
    }

    /// Fills at `price` on `side`: an open position (whatever its side) is closed at `price`
    /// and booked as one trade, then a new position is opened at `price`.
    ///
    /// The strategies only call this when the side changes; a same-side fill books a
    /// round trip (one trade, fee paid) and re-opens, which is what an exchange that
    /// received such an order would do.
    pub fn fill(&mut self, side: Side, price: f64) {
        self.close(price);
        self.open = Some((side, price));
    }

    /// Closes the open position, if any, at `last_price` (the end of a backtest).
    pub fn close(&mut self, last_price: f64) {
        if let Some((side, entry)) = self.open.take() {
            let g = match side {
                Side::Long => last_price / entry - 1.0,
                Side::Short => 1.0 - last_price / entry,
            };
            let net = (1.0 + g) * (1.0 - FEE) - 1.0;
            self.pnl += 100.0 * net;
            self.trades += 1;
        }
    }

    /// PnL and trade count of the closed trades so far (an open position is not counted).
    #[must_use]
    pub const fn result(&self) -> ComboResult {
        ComboResult {
            pnl: self.pnl,
            trades: self.trades,
        }
    }

    /// The open position's side, if any.
    #[must_use]
    pub fn position(&self) -> Option<Side> {
        self.open.map(|(side, _)| side)
    }

    /// The open position's entry price, if any.
    #[must_use]
    pub fn entry(&self) -> Option<f64> {
        self.open.map(|(_, price)| price)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fee_formula_and_reverse() {
        let mut l = Ledger::new();
        l.fill(Side::Long, 100.0);
        assert_eq!(l.result().trades, 0);
        l.fill(Side::Short, 110.0);
        let long_net = (1.0 + (110.0 / 100.0 - 1.0)) * (1.0 - FEE) - 1.0;
        assert_eq!(
            l.result(),
            ComboResult {
                pnl: 100.0 * long_net,
                trades: 1
            }
        );
        assert_eq!(l.position(), Some(Side::Short));
        l.close(99.0);
        let short_net = (1.0 + (1.0 - 99.0 / 110.0)) * (1.0 - FEE) - 1.0;
        assert_eq!(
            l.result(),
            ComboResult {
                pnl: 100.0 * long_net + 100.0 * short_net,
                trades: 2
            }
        );
        assert_eq!(l.position(), None);
        l.close(50.0); // nothing open: no-op
        assert_eq!(l.result().trades, 2);
    }
}
