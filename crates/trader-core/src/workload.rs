//! The core's benchmark workload: the spec's price series as a MoldUDP64 feed, one Trade per
//! packet (as the lab's replay sends it at batch 1), and a pass of the trader over it with the
//! orders encoded into a buffer as the I/O paths do. The criterion bench (`benches/on_packet.rs`)
//! and the PGO experiment (`core-workload`) both run this, so they measure the same work.

use engine::Params;
use serde::Serialize;
use wire::{
    itch::{Price4, Stock},
    moldudp64::{PacketBuilder, Session},
    order::OrderRepr,
};

use crate::{Trader, trade_message};

/// The session the feed carries.
pub const SESSION: &str = "T2TBENCH01";
/// The stock it trades.
pub const STOCK: &str = "SYNTH";

/// The spec's series (`engine::data::gbm`, seed 42) as `n` single-trade packets, sequence 1..=n.
pub fn feed(n: usize) -> Vec<Vec<u8>> {
    let stock = Stock::new(STOCK).expect("a valid stock name");
    let session = Session::new(SESSION).expect("a valid session name");
    engine::data::gbm(engine::data::SPEC_SEED, n)
        .into_iter()
        .enumerate()
        .map(|(i, px)| {
            let seq = i as u64 + 1;
            let price = Price4::from_f64_quantised(px).expect("the series is in Price(4)'s range");
            let mut msg = [0u8; wire::itch::trade::LEN];
            trade_message(seq, stock, price, seq * 1_000)
                .emit_into(&mut msg)
                .expect("a trade fits its buffer");
            let mut buf = [0u8; 256];
            let mut b = PacketBuilder::new(&mut buf, session, seq).expect("a packet header fits");
            b.push(&msg).expect("one trade fits a packet");
            b.finish().to_vec()
        })
        .collect()
}

/// A trader as the lab runs it: strategy n, the feed's stock, engine time not sampled (the
/// clock is the caller's business here).
pub fn trader(n: i64) -> Trader {
    let params = Params::from_n(n).expect("a valid strategy n");
    Trader::new(params, Some(Stock::new(STOCK).expect("a valid stock name")))
        .with_engine_sampling(0)
}

/// One pass of `trader` over `feed`: each order encoded into a frame-sized buffer (what the
/// I/O paths do before sending), `settle` after each packet. Returns the orders and a checksum
/// of their bytes, so no pass is a no-op to the optimiser and every build can be compared.
pub fn pass(trader: &mut Trader, feed: &[Vec<u8>]) -> (u64, u64) {
    let mut buf = [0u8; 128];
    let (mut orders, mut sum) = (0u64, 0u64);
    for p in feed {
        trader.on_packet(
            p,
            || 0,
            |o: &OrderRepr| {
                let Ok(len) = o.emit_into(&mut buf) else {
                    return false;
                };
                orders += 1;
                sum = buf[..len]
                    .iter()
                    .fold(sum, |s, &b| s.rotate_left(5) ^ u64::from(b));
                true
            },
        );
        trader.settle();
    }
    (orders, sum)
}

/// What `core-workload` prints, one JSON object: the per-packet ns of each pass and the sweep
/// ms of each run (to the nearest thousandth), and the checksums the builds are compared by.
/// xtask's PGO experiment reads it (`xtask/src/pgo.rs`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadReport {
    /// Nanoseconds a packet, one a pass.
    pub per_packet_ns: Vec<f64>,
    /// Milliseconds a sweep, one a run.
    pub sweep_ms: Vec<f64>,
    /// The orders of the last pass.
    pub orders: u64,
    /// The checksum of the last pass's orders ([`pass`]).
    pub order_checksum: u64,
    /// The sweep's summed P&L, exact (the builds must agree to the bit).
    pub sweep_pnl_sum: f64,
}

impl WorkloadReport {
    /// The report from the timings as measured: each rounded to the nearest thousandth (as
    /// printed before the report was a type: `{:.3}`).
    pub fn new(
        per_packet_ns: &[f64],
        sweep_ms: &[f64],
        (orders, order_checksum): (u64, u64),
        sweep_pnl_sum: f64,
    ) -> Self {
        let thousandths = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.3}").parse().unwrap_or(*x))
                .collect()
        };
        WorkloadReport {
            per_packet_ns: thousandths(per_packet_ns),
            sweep_ms: thousandths(sweep_ms),
            orders,
            order_checksum,
            sweep_pnl_sum,
        }
    }

    /// The report as one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a report of numbers serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_keeps_its_fields_and_thousandths() {
        let r = WorkloadReport::new(&[60.3004, 47.8], &[12.0], (3, 42), 0.1 + 0.2);
        assert_eq!(
            r.to_json(),
            r#"{"per_packet_ns":[60.3,47.8],"sweep_ms":[12.0],"orders":3,"order_checksum":42,"sweep_pnl_sum":0.30000000000000004}"#
        );
    }

    #[test]
    fn the_feed_trades_and_two_passes_agree() {
        let feed = feed(5_000);
        assert_eq!(feed.len(), 5_000);
        let a = pass(&mut trader(6), &feed);
        let b = pass(&mut trader(6), &feed);
        assert!(a.0 > 1_000, "n=6 reverses often on this series: {a:?}");
        assert_eq!(a, b);
        // The trader's own counters agree with what was emitted.
        let mut t = trader(6);
        let (orders, _) = pass(&mut t, &feed);
        assert_eq!(t.counters.orders, orders);
        assert_eq!(t.counters.ticks, 5_000);
    }
}
