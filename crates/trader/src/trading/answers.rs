//! The order session's answers, matched to what was sent (both transports): an answer is
//! booked only if it is for an order this trader sent and says what that order said. Order
//! Accepted and Rejected answer an order awaiting its answer (its UserRefNum, and for an
//! Accepted its side, shares, symbol and price); Order Executed and Canceled an accepted
//! order still open, for no more than its open shares. Anything else (an answer that matches
//! no order, one whose terms differ, a sequenced message that isn't an OUCH answer this
//! trader knows) is a [`Verdict::Mismatch`]: counted, never booked, and the session ends the
//! connection and logs in again from that message's number ([`soup::Client::refuse`]), so a
//! forgery in the stream costs a reconnect, and the exchange's own message comes in its
//! place. If the exchange itself says the same thing again in the new login's replay (the
//! messages that come with its Login Accepted), it is the exchange's word: counted, not
//! booked, and the session goes on; the same number in bytes of their own after the login is
//! a forger's again.
//!
//! Orders whose answer never comes are counted too (`unanswered`): passed by a later order's
//! answer (answers come in the order the orders went), unanswered for [`DEADLINE_NS`], or
//! still awaited at the end.
use std::collections::VecDeque;

use results::OrderSessionReport;
use trader_core::stats::Latency;
use wire::{
    ouch::{EnterOrder, Outbound, Price4, Side, Stock, enter_order},
    soupbin::HEADER_LEN,
};

/// Orders awaited, and accepted orders open, kept at most (the oldest dropped past it).
const KEPT: usize = 1 << 16;
/// An order whose Order Accepted (or Rejected) hasn't come this long after it went is given
/// up as unanswered: well past a TCP retransmission's (smoltcp's floor is 1 s) and a slow
/// login's, short of SoupBinTCP's 15 s dead-peer timeout.
pub(super) const DEADLINE_NS: u64 = 10_000_000_000;

/// What an order said that its answers must repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Terms {
    pub(super) user_ref: u32,
    side: Side,
    shares: u32,
    symbol: Stock,
    price: Price4,
}

impl Terms {
    /// The terms of the Enter Order in the SoupBinTCP `packet` (`None`: it holds none).
    pub(super) fn of(packet: &[u8]) -> Option<Terms> {
        let p = enter_order::Packet::new_checked(packet.get(HEADER_LEN..)?).ok()?;
        let e = EnterOrder::parse(&p).ok()?;
        Some(Terms {
            user_ref: e.user_ref_num,
            side: e.side,
            shares: e.quantity,
            symbol: e.symbol,
            price: e.price,
        })
    }
}

/// An order sent, awaiting its answer.
#[derive(Debug, Clone, Copy)]
struct Awaited {
    terms: Terms,
    /// Its tick's RX time (0: untimed, a fired order).
    tick_rx: u64,
    /// When it went.
    at: u64,
}

/// What an answer was to the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Matched and booked (or a message that answers no order, like a System Event).
    Booked,
    /// For no order sent, or saying something else than the order did, or not an answer.
    Mismatch,
}

/// The orders awaiting an answer, the accepted ones still open, and the round trip to each
/// Order Accepted.
#[derive(Debug)]
pub(super) struct Answers {
    awaited: VecDeque<Awaited>,
    /// Accepted orders with shares open: UserRefNum and open shares.
    open: VecDeque<(u32, u32)>,
    pub(super) rx_to_ack: Latency,
}

impl Answers {
    /// Room for [`KEPT`] of each, touched now.
    pub(super) fn new() -> Answers {
        let blank = Awaited {
            terms: Terms {
                user_ref: 0,
                side: Side::Buy,
                shares: 0,
                symbol: Stock::new("X").unwrap_or_else(|_| unreachable!("a valid symbol")),
                price: Price4(0),
            },
            tick_rx: 0,
            at: 0,
        };
        let mut awaited = VecDeque::with_capacity(KEPT);
        awaited.extend(std::iter::repeat_n(blank, KEPT));
        awaited.clear();
        let mut open = VecDeque::with_capacity(KEPT);
        open.extend(std::iter::repeat_n((0, 0), KEPT));
        open.clear();
        Answers {
            awaited,
            open,
            rx_to_ack: Latency::new(),
        }
    }

    /// An order went at `at` (its tick's RX time `tick_rx`, 0 if untimed): its answer awaited.
    pub(super) fn sent(&mut self, terms: Terms, tick_rx: u64, at: u64) {
        if self.awaited.len() == KEPT {
            self.awaited.pop_front();
        }
        self.awaited.push_back(Awaited { terms, tick_rx, at });
    }

    /// The orders unanswered for [`DEADLINE_NS`] at `now`, given up (`unanswered`).
    pub(super) fn expire(&mut self, now: u64, r: &mut OrderSessionReport) {
        while self
            .awaited
            .front()
            .is_some_and(|w| now.saturating_sub(w.at) >= DEADLINE_NS)
        {
            self.awaited.pop_front();
            r.unanswered += 1;
        }
    }

    /// The last `n` orders sent never left (held for a login that never came, or queued
    /// behind a write when the connection went): no longer awaited.
    pub(super) fn forget_last(&mut self, n: u64) {
        for _ in 0..n {
            self.awaited.pop_back();
        }
    }

    /// The run is over: what is still awaited was never answered.
    pub(super) fn finish(&mut self, r: &mut OrderSessionReport) {
        r.unanswered += self.awaited.len() as u64;
        self.awaited.clear();
    }

    /// The awaited order `user_ref` answered: those before it never will be (counted), and
    /// it is taken out. `None`: no such order awaited.
    fn answer(&mut self, user_ref: u32, r: &mut OrderSessionReport) -> Option<Awaited> {
        let i = self
            .awaited
            .iter()
            .position(|w| w.terms.user_ref == user_ref)?;
        r.unanswered += i as u64;
        self.awaited.drain(..i);
        self.awaited.pop_front()
    }

    /// One sequenced message of the session, arrived at `arrived` (`None`: not an OUCH
    /// message this trader reads): booked if it matches, else a mismatch (nothing booked).
    pub(super) fn take(
        &mut self,
        answer: Option<Outbound>,
        arrived: u64,
        r: &mut OrderSessionReport,
    ) -> Verdict {
        match answer {
            Some(Outbound::Accepted(a)) => {
                let same = |w: &Awaited| {
                    let t = w.terms;
                    (t.side, t.shares, t.symbol, t.price) == (a.side, a.quantity, a.symbol, a.price)
                };
                if !self
                    .awaited
                    .iter()
                    .find(|w| w.terms.user_ref == a.user_ref_num)
                    .is_some_and(same)
                {
                    return Verdict::Mismatch;
                }
                let Some(w) = self.answer(a.user_ref_num, r) else {
                    return Verdict::Mismatch;
                };
                r.accepted += 1;
                if w.tick_rx != 0 {
                    self.rx_to_ack.record(arrived.saturating_sub(w.tick_rx));
                }
                if self.open.len() == KEPT {
                    self.open.pop_front();
                }
                self.open.push_back((a.user_ref_num, a.quantity));
                Verdict::Booked
            }
            Some(Outbound::Rejected(x)) => {
                if self.answer(x.user_ref_num, r).is_none() {
                    return Verdict::Mismatch;
                }
                r.rejected += 1;
                Verdict::Booked
            }
            Some(Outbound::Executed(e)) => {
                if !self.off_open(e.user_ref_num, e.quantity) {
                    return Verdict::Mismatch;
                }
                r.executed += 1;
                Verdict::Booked
            }
            Some(Outbound::Canceled(c)) => {
                if !self.off_open(c.user_ref_num, c.quantity) {
                    return Verdict::Mismatch;
                }
                r.canceled += 1;
                Verdict::Booked
            }
            Some(Outbound::SystemEvent(_)) => {
                r.unknown_answers += 1;
                Verdict::Booked
            }
            None => Verdict::Mismatch,
        }
    }

    /// `shares` of accepted order `user_ref` done (executed or canceled): false if it is not
    /// open or has fewer open.
    fn off_open(&mut self, user_ref: u32, shares: u32) -> bool {
        let Some(i) = self.open.iter().position(|&(u, _)| u == user_ref) else {
            return false;
        };
        let left = &mut self.open[i].1;
        if shares > *left {
            return false;
        }
        *left -= shares;
        if *left == 0 {
            self.open.remove(i);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use wire::ouch::{OrderAccepted, OrderCanceled, OrderExecuted, OrderRejected};

    use super::*;

    fn terms(user_ref: u32, shares: u32, price: u32) -> Terms {
        Terms {
            user_ref,
            side: Side::Buy,
            shares,
            symbol: Stock::new("LAB").unwrap(),
            price: Price4(price),
        }
    }

    fn accepted(t: Terms) -> Option<Outbound> {
        Some(Outbound::Accepted(OrderAccepted {
            timestamp: 0,
            user_ref_num: t.user_ref,
            side: t.side,
            quantity: t.shares,
            symbol: t.symbol,
            price: t.price,
            time_in_force: wire::ouch::time_in_force::IOC,
            display: wire::ouch::display::VISIBLE,
            order_reference_number: 1,
            capacity: wire::ouch::capacity::PRINCIPAL,
            intermarket_sweep: b'N',
            cross_type: b'N',
            order_state: b'L',
            cl_ord_id: [b' '; 14],
        }))
    }

    fn executed(user_ref: u32, shares: u32) -> Option<Outbound> {
        Some(Outbound::Executed(OrderExecuted {
            timestamp: 0,
            user_ref_num: user_ref,
            quantity: shares,
            price: Price4(1),
            liquidity_flag: b'A',
            match_number: 1,
        }))
    }

    #[test]
    fn an_answer_is_booked_only_for_an_order_sent_and_with_its_terms() {
        let mut a = Answers::new();
        let mut r = OrderSessionReport::default();
        for (u, at) in [(1, 100), (2, 200), (3, 300)] {
            a.sent(terms(u, 100, 50), at, at);
        }
        // Order 2's answer, at 1,200: order 1 never will be answered.
        assert_eq!(
            a.take(accepted(terms(2, 100, 50)), 1_200, &mut r),
            Verdict::Booked
        );
        assert_eq!((r.accepted, r.unanswered), (1, 1));
        assert_eq!(a.rx_to_ack.summary().max_us, 1.0, "1,200 - 200 ns");
        // Forgeries: another price, other shares, an order never sent, one answered already.
        let before = r.clone();
        for forged in [
            terms(3, 100, 51),
            terms(3, 200, 50),
            terms(9, 100, 50),
            terms(2, 100, 50),
        ] {
            assert_eq!(
                a.take(accepted(forged), 1_300, &mut r),
                Verdict::Mismatch,
                "{forged:?}"
            );
        }
        assert_eq!(r, before, "nothing booked, nothing popped");
        // Executions: only of an accepted order, for no more than its open shares.
        assert_eq!(
            a.take(executed(3, 100), 0, &mut r),
            Verdict::Mismatch,
            "not accepted yet"
        );
        assert_eq!(
            a.take(executed(2, 101), 0, &mut r),
            Verdict::Mismatch,
            "overfill"
        );
        assert_eq!(a.take(executed(2, 60), 0, &mut r), Verdict::Booked);
        let cancel = |u, q| {
            Some(Outbound::Canceled(OrderCanceled {
                timestamp: 0,
                user_ref_num: u,
                quantity: q,
                reason: b'I',
            }))
        };
        assert_eq!(a.take(cancel(2, 40), 0, &mut r), Verdict::Booked);
        assert_eq!(a.take(executed(2, 1), 0, &mut r), Verdict::Mismatch, "done");
        // A Rejected answers an awaited order; a message that isn't an answer is a mismatch.
        let rejected = Some(Outbound::Rejected(OrderRejected {
            timestamp: 0,
            user_ref_num: 3,
            reason: 0,
            cl_ord_id: [b' '; 14],
        }));
        assert_eq!(a.take(rejected, 0, &mut r), Verdict::Booked);
        assert_eq!(a.take(None, 0, &mut r), Verdict::Mismatch);
        assert_eq!((r.executed, r.canceled, r.rejected), (1, 1, 1));
    }

    #[test]
    fn an_order_unanswered_for_the_deadline_is_given_up_and_counted() {
        let mut a = Answers::new();
        let mut r = OrderSessionReport::default();
        a.sent(terms(1, 100, 5), 1_000, 1_000);
        a.sent(terms(2, 100, 5), 0, 500_000_000);
        a.sent(terms(3, 100, 5), 0, 600_000_000);
        a.expire(1_000 + DEADLINE_NS - 1, &mut r);
        assert_eq!(r.unanswered, 0, "not yet");
        a.expire(1_000 + DEADLINE_NS, &mut r);
        assert_eq!(r.unanswered, 1, "order 1");
        // Order 3 never left (its connection went first): not awaited, not unanswered.
        a.forget_last(1);
        a.finish(&mut r);
        assert_eq!(r.unanswered, 2, "order 2, awaited at the end");
    }

    #[test]
    fn an_enter_orders_terms_are_read_from_its_packet() {
        let order = wire::order::OrderRepr {
            side: wire::ouch::Side::Sell,
            reverse: false,
            shares: 100,
            token: 7,
            tick_seq: 3,
            price: Price4(123_400),
            stock: Stock::new("SYNTH").unwrap(),
        };
        let mut packet = [0u8; super::super::tcp::ORDER_PACKET];
        let (user_ref, n) = super::super::tcp::order_packet(&order, &mut packet).unwrap();
        let t = Terms::of(&packet[..n]).unwrap();
        assert_eq!(t.user_ref, user_ref);
        assert_eq!(
            (t.side, t.shares, t.price),
            (Side::Sell, 100, Price4(123_400))
        );
        assert_eq!(Terms::of(&packet[..n - 1]), None);
    }
}
