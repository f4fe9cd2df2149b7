//! Booking the fills and the parity verdict: pure functions of what was sent and taken.
use engine::{ComboResult, Ledger};
use paths::Expect;
use results::ParityVerdict;
use wire::itch::Side;

use super::{ExpectedOrder, Fill, OrderCounts, Schedule, Sent};
use crate::feed::Feed;

/// Books `fills` (in tick order) with the engine's own ledger, at their ticks' prices, and
/// closes at `close_at`: the same arithmetic as the backtest. Returns the result and how many
/// fills had a REVERSE flag that disagrees with the book.
pub(super) fn book(
    fills: &[Fill],
    schedule: &Schedule,
    close_at: Option<f64>,
) -> (ComboResult, u64) {
    let mut ledger = Ledger::default();
    let mut reverse_mismatch = 0u64;
    for f in fills {
        // An order says whether it reverses an open position; the book knows.
        if f.reverse != ledger.position().is_some() {
            reverse_mismatch += 1;
        }
        // An order for a message that is not a tick was counted as a price mismatch; it
        // books nothing.
        if let Some(p) = schedule.price(f.seq) {
            ledger.fill(
                match f.side {
                    Side::Buy => engine::Side::Long,
                    Side::Sell => engine::Side::Short,
                },
                p.to_f64(),
            );
        }
    }
    if let Some(p) = close_at {
        ledger.close(p);
    }
    (ledger.result(), reverse_mismatch)
}

/// The price an open position is closed at: the last tick's, as in the backtest, or, for a
/// run stopped early, the last tick that went out.
pub(super) fn closing_price(feed: &Feed, schedule: &Schedule, sent_all: bool) -> Option<f64> {
    let last = if sent_all {
        feed.ticks.last()
    } else {
        feed.ticks
            .iter()
            .rev()
            .find(|t| schedule.sent_at(t.seq).is_some())
    };
    last.map(|t| t.price.to_f64())
}

/// Sequence number of the first tick where the orders taken (`fills`, in tick order) and the
/// expected ones differ: a missing, extra or wrong-sided order.
pub(super) fn first_divergence(expected: &[ExpectedOrder], fills: &[Fill]) -> Option<u64> {
    expected
        .iter()
        .map(|e| (e.seq, e.side))
        .zip(
            fills
                .iter()
                .map(|f| Some((f.seq, f.side)))
                .chain(std::iter::repeat(None)),
        )
        .find(|(want, got)| Some(*want) != *got)
        .map(|(want, got)| got.map_or(want.0, |g| g.0.min(want.0)))
        .or_else(|| fills.get(expected.len()).map(|f| f.seq))
}

/// What the verdict rests on.
#[derive(Debug)]
pub(super) struct Evidence<'a> {
    pub(super) expect: Expect,
    /// For the ticks that went out.
    pub(super) expected: &'a [ExpectedOrder],
    /// In tick order.
    pub(super) fills: &'a [Fill],
    pub(super) counts: OrderCounts,
    pub(super) sent: Sent,
    pub(super) feed_messages: u64,
    pub(super) ticks: u64,
    pub(super) live: ComboResult,
    pub(super) batch: ComboResult,
}

/// The verdict: the first of [`ParityVerdict`]'s cases that applies, in its order.
pub(super) fn verdict(e: &Evidence<'_>) -> ParityVerdict {
    let Evidence {
        expect,
        expected,
        fills,
        counts,
        sent,
        feed_messages,
        ticks,
        live,
        batch,
    } = *e;
    let OrderCounts {
        received,
        unknown_tick,
        duplicate,
        shares_mismatch,
        stock_mismatch,
        malformed,
        price_mismatch,
        reverse_mismatch,
        // A clock's fault, not the order's: it is booked.
        stamped_before_due: _,
    } = counts;
    let divergence = first_divergence(expected, fills);
    let faults = price_mismatch
        + malformed
        + unknown_tick
        + reverse_mismatch
        + duplicate
        + shares_mismatch
        + stock_mismatch;
    let sent_all = sent.messages == feed_messages;
    if expect == Expect::Every {
        ParityVerdict::NotApplicable {
            answered: received,
            ticks,
        }
    } else if sent_all
        && !expected.is_empty()
        && faults == 0
        && divergence.is_none()
        && live.trades == batch.trades
        && live.pnl == batch.pnl
    {
        ParityVerdict::Ok
    } else if faults > 0 {
        ParityVerdict::OrderFaults {
            price_mismatch,
            reverse_mismatch,
            malformed,
            unknown_tick,
            duplicate,
            shares_mismatch,
            stock_mismatch,
        }
    } else if !sent_all {
        ParityVerdict::NotAllSent {
            sent_messages: sent.messages,
            feed_messages,
            send_dropped: sent.dropped,
        }
    } else if let Some(first_divergence) = divergence {
        let want = expected.len() as u64;
        ParityVerdict::Diverged {
            first_divergence,
            missing_orders: want - received.min(want),
        }
    } else if expected.is_empty() {
        // Nothing expected, nothing came: equal, but nothing was compared.
        ParityVerdict::NothingToCheck { ticks }
    } else {
        ParityVerdict::PnlDiffers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(seq: u64, side: Side) -> ExpectedOrder {
        ExpectedOrder { seq, side }
    }

    fn fill(seq: u64, side: Side) -> Fill {
        Fill {
            seq,
            side,
            reverse: false,
        }
    }

    #[test]
    fn divergence_is_the_first_tick_where_orders_differ() {
        let want = [exp(3, Side::Buy), exp(7, Side::Sell), exp(9, Side::Buy)];
        let all = [fill(3, Side::Buy), fill(7, Side::Sell), fill(9, Side::Buy)];
        assert_eq!(first_divergence(&want, &all), None);
        // Lost: the expected tick is where it starts.
        assert_eq!(first_divergence(&want, &[all[0], all[2]]), Some(7));
        // Lost at the end.
        assert_eq!(first_divergence(&want, &all[..2]), Some(9));
        // An order the strategy didn't send, before the next expected one.
        let extra = [all[0], fill(5, Side::Sell), all[1], all[2]];
        assert_eq!(first_divergence(&want, &extra), Some(5));
        // An extra one after the last expected one.
        let late = [all[0], all[1], all[2], fill(11, Side::Sell)];
        assert_eq!(first_divergence(&want, &late), Some(11));
        // The right tick, the wrong side.
        let wrong = [all[0], fill(7, Side::Buy), all[2]];
        assert_eq!(first_divergence(&want, &wrong), Some(7));
        assert_eq!(first_divergence(&[], &[]), None);
    }
}
