//! The exchange's order entry: OUCH 5.0 inside a SoupBinTCP 3.00 session, as Nasdaq takes
//! orders.
//!
//! [`Gateway`] is the sans-IO half: one session's OUCH rules. Each Enter Order's `UserRefNum`
//! must be higher than the last one the session took; a lower or equal one is a retransmission
//! of an order already taken and is ignored, as the spec says. A taken order becomes the lab's
//! [`OrderRepr`] (its tick and its reversal read from the ClOrdID, [`wire::ouch::lab_cl_ord_id`])
//! and goes to the [`Exchange`](crate::Exchange) like any other order; its answer goes on the
//! session's sequenced stream: Order Accepted, then Order Executed when the exchange booked it
//! as a fill, or Order Canceled (immediate or cancel) when it didn't (a second order for one
//! tick, an order for a tick that never went out). The trader's orders are IOC: none is live
//! after its answer, so a Cancel Order finds nothing and is ignored (counted). An Enter Order
//! that doesn't decode is answered with Order Rejected where its `UserRefNum` can be read.
//!
//! The TCP half ([`tcp`]) accepts the connection, runs a [`soup::Server`] on it, stamps each
//! segment on arrival and writes the answers.
use wire::{
    order::OrderRepr,
    ouch::{
        self, EnterOrder, Inbound, OrderAccepted, OrderCanceled, OrderExecuted, OrderRejected,
        Outbound,
    },
};

use crate::Took;

#[cfg(feature = "io")]
pub mod tcp;

/// The reject reason the lab answers an Enter Order it can't decode with (the lab's own code:
/// OUCH 5.0's table of reasons is not reproduced).
pub const REJECT_UNDECODABLE: u16 = 1;
/// The liquidity flag of the lab's fills: the order took liquidity ("removed").
pub const LIQUIDITY_REMOVED: u8 = b'R';

/// What one session's order entry came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GatewayCounts {
    /// Enter Orders taken (a new `UserRefNum`, decoded).
    pub enter_orders: u64,
    /// Of those, executed (booked as a fill).
    pub executed: u64,
    /// Of those, canceled unfilled (immediate or cancel).
    pub canceled: u64,
    /// Enter Orders whose `UserRefNum` was not above the last taken: retransmissions, ignored.
    pub retransmissions: u64,
    /// Enter Orders that didn't decode, answered with Order Rejected.
    pub rejected: u64,
    /// Cancel Orders (none finds a live order: ignored).
    pub cancels: u64,
    /// Messages of another type or too short to tell (ignored).
    pub unknown: u64,
}

/// One session's OUCH order entry and its sequenced stream, sans-IO.
#[derive(Debug)]
pub struct Gateway {
    stream: soup::Stream,
    /// The highest `UserRefNum` taken (0: none yet; the spec's numbers start at 1).
    last_user_ref: u32,
    next_order_ref: u64,
    next_match: u64,
    counts: GatewayCounts,
    /// Scratch for the lab order each Enter Order becomes.
    order: [u8; wire::order::LEN],
    /// Scratch for an answer.
    answer: [u8; 128],
}

impl Default for Gateway {
    fn default() -> Gateway {
        Gateway::new()
    }
}

impl Gateway {
    /// A session with nothing sequenced yet.
    pub fn new() -> Gateway {
        Gateway::for_orders(0)
    }

    /// A session with room for the answers to `orders` orders before its stream grows (each
    /// order's two answers, Accepted and Executed or Canceled, at most 64 bytes each).
    pub fn for_orders(orders: usize) -> Gateway {
        Gateway {
            stream: soup::Stream::with_capacity(2 * orders, 2 * 64 * orders),
            last_user_ref: 0,
            next_order_ref: 1,
            next_match: 1,
            counts: GatewayCounts::default(),
            order: [0; wire::order::LEN],
            answer: [0; 128],
        }
    }

    /// The session's sequenced messages (the answers), for the connection to send and replay.
    pub fn stream(&self) -> &soup::Stream {
        &self.stream
    }

    /// What came in so far.
    pub fn counts(&self) -> GatewayCounts {
        self.counts
    }

    /// One unsequenced message from the trader, at `timestamp` (ns since midnight, for the
    /// answers): an Enter Order goes to `take` (the exchange, with the arrival stamp) as the
    /// lab's order, and its answers are appended to the stream.
    pub fn on_message(&mut self, message: &[u8], timestamp: u64, take: impl FnOnce(&[u8]) -> Took) {
        let enter = match Inbound::parse(message) {
            Ok(Inbound::EnterOrder(e)) => e,
            Ok(Inbound::CancelOrder(_)) => {
                self.counts.cancels += 1;
                return;
            }
            Err(_) => {
                self.reject_undecodable(message, timestamp);
                return;
            }
        };
        if enter.user_ref_num <= self.last_user_ref {
            self.counts.retransmissions += 1;
            return;
        }
        self.last_user_ref = enter.user_ref_num;
        let order = match enter.to_order() {
            Ok(o) => o,
            Err(_) => {
                self.reject(enter.user_ref_num, enter.cl_ord_id, timestamp);
                return;
            }
        };
        let took = match order.emit_into(&mut self.order) {
            Ok(n) => take(&self.order[..n]),
            Err(_) => Took::default(),
        };
        self.counts.enter_orders += 1;
        self.answer_order(&enter, &order, took.filled > 0, timestamp);
    }

    /// Order Accepted, then Executed or Canceled.
    fn answer_order(&mut self, e: &EnterOrder, order: &OrderRepr, filled: bool, timestamp: u64) {
        let accepted = OrderAccepted {
            timestamp,
            user_ref_num: e.user_ref_num,
            side: e.side,
            quantity: e.quantity,
            symbol: e.symbol,
            price: e.price,
            time_in_force: e.time_in_force,
            display: e.display,
            order_reference_number: self.next_order_ref,
            capacity: e.capacity,
            intermarket_sweep: e.intermarket_sweep,
            cross_type: e.cross_type,
            order_state: ouch::order_state::LIVE,
            cl_ord_id: e.cl_ord_id,
        };
        self.next_order_ref += 1;
        self.sequence(&Outbound::Accepted(accepted));
        let done = if filled {
            self.counts.executed += 1;
            let m = self.next_match;
            self.next_match += 1;
            Outbound::Executed(OrderExecuted {
                timestamp,
                user_ref_num: e.user_ref_num,
                quantity: order.shares,
                price: order.price,
                liquidity_flag: LIQUIDITY_REMOVED,
                match_number: m,
            })
        } else {
            self.counts.canceled += 1;
            Outbound::Canceled(OrderCanceled {
                timestamp,
                user_ref_num: e.user_ref_num,
                quantity: order.shares,
                reason: ouch::cancel_reason::IMMEDIATE_OR_CANCEL,
            })
        };
        self.sequence(&done);
    }

    /// An Enter Order that doesn't decode: rejected if its `UserRefNum` (and ClOrdID) can be
    /// read and is new, otherwise only counted.
    fn reject_undecodable(&mut self, message: &[u8], timestamp: u64) {
        let view = ouch::enter_order::Packet::new_checked(message);
        match view {
            Ok(p) if message.first() == Some(&ouch::enter_order::KIND) => {
                let user_ref = p.user_ref_num();
                if user_ref <= self.last_user_ref {
                    self.counts.retransmissions += 1;
                    return;
                }
                self.last_user_ref = user_ref;
                self.reject(user_ref, p.cl_ord_id(), timestamp);
            }
            _ => self.counts.unknown += 1,
        }
    }

    fn reject(&mut self, user_ref_num: u32, cl_ord_id: [u8; 14], timestamp: u64) {
        self.counts.rejected += 1;
        self.sequence(&Outbound::Rejected(OrderRejected {
            timestamp,
            user_ref_num,
            reason: REJECT_UNDECODABLE,
            cl_ord_id,
        }));
    }

    fn sequence(&mut self, message: &Outbound) {
        // Every answer the gateway builds fits the scratch and encodes (its codes are the
        // spec's): a failure here would be a bug, and sends nothing rather than garbage.
        if let Ok(n) = message.emit_into(&mut self.answer) {
            self.stream.push(&self.answer[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use wire::itch::{Price4, Side, Stock};

    use super::*;

    fn order(token: u64, tick_seq: u64) -> OrderRepr {
        OrderRepr {
            side: Side::Buy,
            reverse: false,
            shares: 100,
            token,
            tick_seq,
            price: Price4(1_234_500),
            stock: Stock::new("LAB").unwrap(),
        }
    }

    fn enter(token: u64, tick_seq: u64) -> Vec<u8> {
        let e = EnterOrder::from_order(&order(token, tick_seq)).unwrap();
        let mut buf = vec![0; e.buffer_len()];
        e.emit_into(&mut buf).unwrap();
        buf
    }

    fn answers(g: &Gateway, from: u64) -> Vec<Outbound> {
        (from..=g.stream().len())
            .map(|s| Outbound::parse(g.stream().get(s).unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn a_taken_order_goes_to_the_exchange_as_the_lab_order_and_is_answered() {
        let mut g = Gateway::new();
        let mut seen = Vec::new();
        g.on_message(&enter(1, 77), 5, |b| {
            seen.push(wire::order::orders(b).next().unwrap().unwrap());
            Took {
                orders: 1,
                filled: 1,
            }
        });
        assert_eq!(
            seen,
            [order(1, 77)],
            "the tick and the token survive the trip"
        );
        let a = answers(&g, 1);
        assert!(matches!(a[0], Outbound::Accepted(x) if x.user_ref_num == 1 && x.timestamp == 5));
        assert!(
            matches!(a[1], Outbound::Executed(x) if x.quantity == 100 && x.price == Price4(1_234_500))
        );
        // Not filled (a second order for the tick): accepted, then canceled IOC.
        g.on_message(&enter(2, 77), 6, |_| Took {
            orders: 1,
            filled: 0,
        });
        let a = answers(&g, 3);
        assert!(matches!(a[0], Outbound::Accepted(x) if x.user_ref_num == 2));
        assert!(
            matches!(a[1], Outbound::Canceled(x) if x.reason == ouch::cancel_reason::IMMEDIATE_OR_CANCEL)
        );
        assert_eq!(g.counts().executed, 1);
        assert_eq!(g.counts().canceled, 1);
    }

    #[test]
    fn a_user_ref_num_not_above_the_last_is_a_retransmission_and_ignored() {
        let mut g = Gateway::new();
        let mut taken = 0;
        for token in [1, 2, 2, 1, 5, 3, 6] {
            g.on_message(&enter(token, 10 + token), 0, |_| {
                taken += 1;
                Took::default()
            });
        }
        assert_eq!(taken, 4, "1, 2, 5, 6");
        assert_eq!(g.counts().retransmissions, 3);
        assert_eq!(g.stream().len(), 8, "two answers per taken order");
    }

    #[test]
    fn what_does_not_decode_is_rejected_or_counted_never_taken() {
        let mut g = Gateway::new();
        let mut bad_side = enter(1, 5);
        bad_side[5] = b'T'; // sell short: not a side the lab trades
        g.on_message(&bad_side, 0, |_| panic!("a bad order reached the exchange"));
        assert!(matches!(answers(&g, 1)[..], [Outbound::Rejected(r)] if r.user_ref_num == 1));
        g.on_message(b"Q123", 0, |_| panic!("unknown type taken"));
        g.on_message(b"", 0, |_| panic!("empty taken"));
        g.on_message(&[b'X', 0, 0, 0, 1, 0, 0, 0, 0], 0, |_| {
            panic!("cancel taken")
        });
        let c = g.counts();
        assert_eq!(
            (c.rejected, c.unknown, c.cancels, c.enter_orders),
            (1, 2, 1, 0)
        );
        // A bad order with an old number is a retransmission, not a second reject.
        g.on_message(&bad_side, 0, |_| panic!("taken"));
        assert_eq!(g.counts().retransmissions, 1);
        assert_eq!(g.stream().len(), 1);
    }
}
