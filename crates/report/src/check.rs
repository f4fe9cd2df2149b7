//! What a run's reports say went wrong: lost orders and ticks ([`Delivery`]), broken parity,
//! accounts that differ, the XDP program's and the order session's faults ([`problems`], which
//! `--strict` fails on), and what a reader should know that is no fault ([`notes`]).
use results::{ReplayReport, TraderReport};
use serde::{Deserialize, Serialize};

/// The mark on a figure from a trial that lost ticks or orders.
pub const LOSS_MARK: &str = "⚠";

/// What a trial delivered: the orders that came back against those expected, and the ticks
/// the trader never got. Lost orders never enter the latency histogram, so a percentile row
/// without this beside it hides them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// Orders taken by the exchange.
    pub orders: u64,
    /// Orders the strategy (or the reflector: one per tick) should have sent.
    pub expected: u64,
    /// Messages the trader never got (its gaps less those that came late). The reflector has
    /// no trader loop to count them: its lost ticks show as lost orders.
    pub ticks_lost: u64,
}

impl Delivery {
    pub fn of(replay: &ReplayReport, trader: &TraderReport) -> Delivery {
        let c = &trader.counters;
        Delivery {
            orders: replay.orders_received,
            expected: replay.parity.expected_orders,
            ticks_lost: c.gap_messages.saturating_sub(c.late_messages),
        }
    }

    /// Anything lost: an expected order that never came, or a tick that never arrived.
    pub fn lost(self) -> bool {
        self.orders < self.expected || self.ticks_lost > 0
    }
}

/// `40/40`; from a trial that lost anything `⚠ 37/40`, `⚠ 40/40, 3 ticks lost`.
impl std::fmt::Display for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Delivery {
            orders,
            expected,
            ticks_lost,
        } = *self;
        if self.lost() {
            write!(f, "{LOSS_MARK} ")?;
        }
        write!(f, "{orders}/{expected}")?;
        if ticks_lost > 0 {
            write!(f, ", {ticks_lost} {} lost", ticks(ticks_lost))?;
        }
        Ok(())
    }
}

/// "tick" or "ticks".
fn ticks(n: u64) -> &'static str {
    if n == 1 { "tick" } else { "ticks" }
}

/// What a tick-to-trade histogram measured: open loop (each tick timed from its schedule), or
/// closed loop (`--rate max`: each tick is due when the previous send returns, so the figure
/// is a round trip under the harness's pacing, not tick-to-trade).
pub fn latency_name(replay: &ReplayReport) -> &'static str {
    if replay.closed_loop {
        "closed-loop round trip (--rate max)"
    } else {
        "tick-to-trade"
    }
}

/// The three accounts of a strategy run, compared: the trader's own ledger of the orders it
/// sent (its report), the exchange's booking of the orders it received, and the batch
/// backtest of the same quantised ticks. `None` when they agree to the bit (or there is no
/// strategy: the reflector); otherwise which disagree.
pub fn accounts_differ(replay: &ReplayReport, trader: &TraderReport) -> Option<String> {
    if replay.expect != paths::Expect::Signals {
        return None;
    }
    let p = &replay.parity;
    let a = &trader.account;
    let trader_v = (a.trades, a.pnl.to_bits());
    let exchange_v = (p.live_trades, p.live_pnl.to_bits());
    let batch_v = (p.batch_trades, p.batch_pnl.to_bits());
    if trader_v == exchange_v && exchange_v == batch_v {
        return None;
    }
    Some(format!(
        "accounts differ: trader {} trades, PnL {:.4}; exchange {} trades, PnL {:.4}; batch {} \
         trades, PnL {:.4}",
        a.trades, a.pnl, p.live_trades, p.live_pnl, p.batch_trades, p.batch_pnl
    ))
}

/// What is wrong with a lab row, if anything: lost orders or ticks, broken parity (a strategy
/// run), frames the XDP program could not hand to the socket. `--strict` fails on any.
pub fn problems(row: &str, replay: &ReplayReport, trader: &TraderReport) -> Vec<String> {
    let mut p = Vec::new();
    let d = Delivery::of(replay, trader);
    if d.orders != d.expected {
        p.push(format!("{row}: {} of {} orders", d.orders, d.expected));
    }
    if d.ticks_lost > 0 {
        p.push(format!(
            "{row}: {} {} lost",
            d.ticks_lost,
            ticks(d.ticks_lost)
        ));
    }
    if replay.expect == paths::Expect::Signals && !replay.parity.ok() {
        p.push(format!("{row}: {}", replay.parity.verdict));
    }
    if let Some(differ) = accounts_differ(replay, trader) {
        p.push(format!("{row}: {differ}"));
    }
    if replay.unstamped_datagrams > 0 {
        p.push(format!(
            "{row}: {} order datagrams came without an arrival stamp (counted from the \
             replay's read)",
            replay.unstamped_datagrams
        ));
    }

    if let (Some(t), Some(x)) = (trader.trigger, trader.xdp_counters)
        && t.fired != x.trigger_fired
    {
        p.push(format!(
            "{row}: the program fired {} orders, the trader read {} back (a fire it never saw)",
            x.trigger_fired, t.fired
        ));
    }
    if let Some(t) = trader.trigger.filter(|t| t.mismatch > 0) {
        p.push(format!(
            "{row}: {} of {} fired orders were not the trader's (trigger.mismatch)",
            t.mismatch, t.fired
        ));
    }
    if let Some(s) = &replay.session {
        for (n, what) in [
            (s.protocol_errors, "connections ended by a protocol error"),
            (s.retransmissions, "Enter Orders ignored as retransmissions"),
            (s.rejected, "Enter Orders rejected"),
            (s.unstamped_reads, "order reads without an arrival stamp"),
            (
                s.outside_feed,
                "orders that came while the feed wasn't running",
            ),
        ] {
            if n > 0 {
                p.push(format!("{row}: {n} {what} (the session's report)"));
            }
        }
    }
    if let Some(o) = &trader.order_session {
        for (n, what) in [
            (o.disconnects, "order-session connections lost"),
            (
                o.protocol_errors,
                "order-session protocol errors at the trader",
            ),
        ] {
            if n > 0 {
                p.push(format!("{row}: {n} {what}"));
            }
        }
        if o.not_sent > 0 {
            p.push(format!(
                "{row}: {} orders not sent (no order session logged in at the time)",
                o.not_sent
            ));
        }
        if o.accepted + o.rejected < o.sent || !o.end_of_session {
            p.push(format!(
                "{row}: {} of {} orders answered{}",
                o.accepted + o.rejected,
                o.sent,
                if o.end_of_session {
                    ""
                } else {
                    ", and the session's end never came"
                }
            ));
        }
    }
    if let Some(x) = trader.xdp_counters.filter(|x| x.redirect_failed > 0) {
        p.push(format!(
            "{row}: {} frames the XDP program could not redirect to the AF_XDP socket \
             (redirect_failed: they arrived on an RX queue with no AF_XDP socket)",
            x.redirect_failed
        ));
    }
    p
}

/// What a reader should know about a row's figures that is not a fault of the run (so not a
/// problem for `--strict`): orders whose arrival stamp came before their tick was due, which
/// the clocks' conversion allows now and then (`afxdp::clock::RealToMono`).
pub fn notes(row: &str, replay: &ReplayReport) -> Vec<String> {
    let mut n = Vec::new();
    if replay.orders_stamped_before_due > 0 {
        n.push(format!(
            "{row}: {} orders were stamped on arrival before their tick was due (the arrival \
             stamp's clock and the schedule's disagreed): booked, but left out of the latency \
             figures",
            replay.orders_stamped_before_due
        ));
    }
    n
}

#[cfg(test)]
mod tests {
    use paths::TraderPath;

    use super::*;
    use crate::fixtures;

    #[test]
    fn an_order_stamped_before_its_tick_was_due_is_a_note_not_a_problem() {
        let mut replay = fixtures::replay(10.0);
        let trader = fixtures::trader(TraderPath::Xdp);
        assert!(notes("xdp", &replay).is_empty());
        replay.orders_stamped_before_due = 2;
        assert!(
            problems("xdp", &replay, &trader).is_empty(),
            "not for --strict"
        );
        let n = notes("xdp", &replay);
        assert!(
            n.iter()
                .any(|n| n.starts_with("xdp: 2 orders were stamped on arrival before")),
            "{n:?}"
        );
    }

    #[test]
    fn a_fire_the_trader_never_read_back_is_a_problem() {
        let replay = fixtures::replay(10.0);
        let mut trader = fixtures::trader(TraderPath::Trigger);
        trader.trigger = Some(results::TriggerReport {
            fired: 5,
            ..Default::default()
        });
        trader.xdp_counters = Some(results::XdpCounters {
            trigger_fired: 5,
            ..Default::default()
        });
        let none = problems("trigger", &replay, &trader);
        assert!(!none.iter().any(|p| p.contains("read")), "{none:?}");
        trader.xdp_counters = Some(results::XdpCounters {
            trigger_fired: 6,
            ..Default::default()
        });
        let p = problems("trigger", &replay, &trader);
        assert!(
            p.iter()
                .any(|p| p == "trigger: the program fired 6 orders, the trader read 5 back (a fire it never saw)"),
            "{p:?}"
        );
    }

    #[test]
    fn the_three_accounts_must_agree_to_the_bit() {
        let replay = fixtures::replay(10.0);
        let mut trader = fixtures::trader(TraderPath::Xdp);
        assert_eq!(accounts_differ(&replay, &trader), None);
        trader.account.pnl = f64::from_bits(trader.account.pnl.to_bits() + 1);
        let differ = accounts_differ(&replay, &trader).expect("one ulp is a difference");
        assert!(
            differ.starts_with("accounts differ: trader 20 trades"),
            "{differ}"
        );
        assert!(
            problems("xdp", &replay, &trader)
                .iter()
                .any(|p| p.contains("accounts differ")),
        );
    }
}
