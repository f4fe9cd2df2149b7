//! The trigger path's arm: the order the next tick would send and the prices that would send
//! it, for the XDP program to fire without waiting for the trader ([`Trader::next_arm`]); and
//! the check that what it fired is what the trader would have sent ([`fired_order`]).
//!
//! The arm is the engine's [`engine::Trigger`] for the next tick, keyed to the sequence number
//! the trader expects next and carrying the token its next order would get: an arm can only
//! fire on the one tick it was computed for, with exactly the order `on_packet` would emit for
//! that tick at a price in its set (the tests prove it through `on_packet` itself).
use engine::{
    Side as EngineSide,
    trigger::{Prices, Unarmed},
};
use wire::{
    itch::{Price4, Side, Stock},
    order::{FLAG_REVERSE, OrderRepr},
};
use xdp_common::{ARM_AT_OR_ABOVE, ARM_AT_OR_BELOW, Arm, Fired, LOT};

use crate::Trader;

/// Why the trader has no arm for the next tick: it decides that tick itself, as on the AF_XDP
/// path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NotArmed {
    /// The feed's session and first sequence number are not known yet.
    FeedUnknown,
    /// The trader trades every stock (an arm names one).
    AnyStock,
    /// An A/B feed: which line's copy is traded is decided in userspace, not by the first
    /// packet to arrive.
    Lines,
    /// The sequence numbers are exhausted.
    SequenceEnd,
    /// The engine can't arm the next tick ([`Unarmed`] says why).
    Engine(Unarmed),
}

impl Trader {
    /// The arm for the next tick: the sequence number expected next, the prices at which
    /// `on_packet` would send an order for a one-trade packet there, and that order (side,
    /// reverse flag, shares, token), or why there is none. Prepares the next tick
    /// ([`Trader::prepare`]) and changes nothing else.
    ///
    /// # Errors
    /// [`NotArmed`] says why the next tick can't be armed.
    pub fn next_arm(&mut self) -> Result<Arm, NotArmed> {
        let (Some(session), Some(_)) = (self.session(), self.first_seq()) else {
            return Err(NotArmed::FeedUnknown);
        };
        let Some(stock) = self.desk.stock() else {
            return Err(NotArmed::AnyStock);
        };
        if self.sequencer.has_lines() {
            return Err(NotArmed::Lines);
        }
        if self.desk.watch().is_some() && self.traded_locate().is_none() {
            // A full-depth feed whose Stock Directory hasn't named the stock yet: nothing of
            // it can be a print.
            return Err(NotArmed::FeedUnknown);
        }
        let next_seq = self.next_seq();
        if next_seq == u64::MAX {
            return Err(NotArmed::SequenceEnd);
        }
        let token = self.desk.token() + 1;
        let trigger = self
            .desk
            .strategy_mut()
            .trigger()
            .map_err(NotArmed::Engine)?;
        let (direction, threshold) = match trigger.prices {
            Prices::AtOrAbove(t) => (ARM_AT_OR_ABOVE, t),
            Prices::AtOrBelow(t) => (ARM_AT_OR_BELOW, t),
        };
        let reverse = trigger.signal.reverse;
        Ok(Arm {
            seq: next_seq,
            token,
            threshold,
            shares: order_shares(reverse),
            session: session.0,
            stock: stock.0,
            armed: 1,
            direction,
            side: order_side(trigger.signal.side).to_byte(),
            flags: if reverse { FLAG_REVERSE } else { 0 }.to_be_bytes(),
            pad: [0; 5],
            generation: 0,
        })
    }
}

/// The order side that takes a signal's side: the one spelling of it for the trader's
/// `on_packet`, the arm the XDP program fires, and the exchange checking what came.
#[inline]
pub const fn order_side(side: EngineSide) -> Side {
    match side {
        EngineSide::Long => Side::Buy,
        EngineSide::Short => Side::Sell,
    }
}

/// A signal's order's shares: one lot to open a position, two to reverse one (close and
/// open). The one spelling of it for `on_packet`, the arm and the exchange.
#[inline]
pub const fn order_shares(reverse: bool) -> u32 {
    if reverse { 2 * LOT } else { LOT }
}

/// The order the XDP program sent, as `on_packet` would have emitted it for its tick (of
/// `stock`, the one armed): compare the two with `==`. `None` if the record's side or flags
/// are not an order's.
#[must_use]
pub fn fired_order(f: &Fired, stock: Stock) -> Option<OrderRepr> {
    let flags = u16::from_be_bytes(f.flags);
    if flags & !FLAG_REVERSE != 0 {
        return None;
    }
    Some(OrderRepr {
        side: Side::from_byte(f.side).ok()?,
        reverse: flags & FLAG_REVERSE != 0,
        shares: f.shares,
        token: f.token,
        tick_seq: f.seq,
        price: Price4(f.price),
        stock,
    })
}

#[cfg(test)]
mod tests {
    /// The spec's lots, pinned here: the exchange checks every order's shares with the same
    /// function, so a change to it would pass the exchange unseen.
    #[test]
    fn one_lot_opens_and_two_reverse() {
        assert_eq!((order_shares(false), order_shares(true)), (100, 200));
    }

    use engine::Params;
    use proptest::prelude::*;
    use wire::{
        itch,
        moldudp64::{PacketBuilder, Session},
    };

    use super::*;
    use crate::{FeedRules, trade_message};

    fn stock() -> Stock {
        Stock::new("SYNTH").unwrap()
    }

    fn trader(n: i64) -> Trader {
        Trader::new(Params::from_n(n).unwrap(), Some(stock())).with_feed_rules(FeedRules {
            session: Some(Session::new(paths::market::SESSION).unwrap()),
            first_seq: Some(1),
            ..FeedRules::default()
        })
    }

    fn tick(seq: u64, price: u32) -> Vec<u8> {
        let mut m = [0u8; itch::trade::LEN];
        trade_message(seq, stock(), Price4(price), seq)
            .emit_into(&mut m)
            .unwrap();
        let mut buf = [0u8; 128];
        let mut b =
            PacketBuilder::new(&mut buf, Session::new(paths::market::SESSION).unwrap(), seq)
                .unwrap();
        b.push(&m).unwrap();
        b.finish().to_vec()
    }

    /// The orders `on_packet` emits for one packet.
    fn orders(t: &mut Trader, p: &[u8]) -> Vec<OrderRepr> {
        let mut out = Vec::new();
        t.on_packet(
            p,
            || 0,
            |o| {
                out.push(*o);
                true
            },
        );
        t.settle();
        out
    }

    /// What the XDP program records when it fires `arm` on a tick at `price`.
    fn fire(arm: &Arm, price: u32) -> Fired {
        Fired::of(arm, price)
    }

    /// How a step's price is chosen: a random walk, or right at the armed threshold (where a
    /// wrong bound shows).
    #[derive(Debug, Clone, Copy)]
    enum Next {
        Walk(i32),
        AtThreshold(i8),
    }

    fn next() -> impl Strategy<Value = Next> {
        prop_oneof![
            3 => (-3_000i32..=3_000).prop_map(Next::Walk),
            1 => (-2i8..=2).prop_map(Next::AtThreshold),
        ]
    }

    /// Checks one step: arm, feed the tick, compare. Returns whether the tick was armed.
    fn step(t: &mut Trader, seq: u64, price: u32) -> Result<bool, TestCaseError> {
        let arm = t.next_arm();
        let sent = orders(t, &tick(seq, price));
        prop_assert!(sent.len() <= 1);
        match arm {
            Ok(arm) => {
                prop_assert_eq!(arm.seq, seq);
                prop_assert_eq!(&arm.session[..], paths::market::SESSION.as_bytes());
                prop_assert_eq!(arm.stock, stock().0);
                prop_assert_eq!(
                    arm.contains(price),
                    !sent.is_empty(),
                    "price {} against {:?}",
                    price,
                    arm
                );
                if let Some(o) = sent.first() {
                    prop_assert_eq!(fired_order(&fire(&arm, price), stock()), Some(*o));
                }
                Ok(true)
            }
            Err(NotArmed::Engine(
                Unarmed::WarmingUp | Unarmed::Level | Unarmed::Held | Unarmed::Never,
            )) => {
                prop_assert!(sent.is_empty(), "{:?} but {:?}", arm, sent);
                Ok(false)
            }
            Err(_) => Ok(false),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Over random walks with steps landing on and next to the armed threshold: a tick
        /// sends an order exactly when its price is in the arm's set, and that order is the
        /// armed one (the XDP program's record of it equals what `on_packet` emitted).
        #[test]
        fn an_arm_fires_exactly_when_on_packet_sends_and_what_it_sends(
            n in prop_oneof![Just(4i64), Just(6), Just(16)],
            start in 500_000u32..2_000_000,
            steps in proptest::collection::vec(next(), 40..160),
        ) {
            let mut t = trader(n);
            let mut price = start;
            let mut armed = 0;
            for (i, s) in steps.into_iter().enumerate() {
                let seq = i as u64 + 1;
                price = match s {
                    Next::Walk(d) => price.saturating_add_signed(d).max(1),
                    Next::AtThreshold(d) => match t.next_arm().ok() {
                        Some(a) => a.threshold.saturating_add_signed(i32::from(d)),
                        None => price,
                    },
                };
                armed += u32::from(step(&mut t, seq, price)?);
            }
            // Past the warm-up most ticks are armed: the test is not vacuous.
            prop_assert!(armed > 0);
        }
    }

    #[test]
    fn no_arm_until_the_feed_is_known_nor_for_every_stock_nor_an_ab_feed() {
        let p = Params::from_n(6).unwrap();
        let mut learning = Trader::new(p, Some(stock()));
        assert_eq!(learning.next_arm(), Err(NotArmed::FeedUnknown));
        let rules = FeedRules {
            session: Some(Session::new(paths::market::SESSION).unwrap()),
            first_seq: Some(1),
            ..FeedRules::default()
        };
        assert_eq!(
            Trader::new(p, None).with_feed_rules(rules).next_arm(),
            Err(NotArmed::AnyStock)
        );
        assert_eq!(
            Trader::new(p, Some(stock()))
                .with_feed_rules(rules)
                .with_lines(0)
                .next_arm(),
            Err(NotArmed::Lines)
        );
        assert_eq!(
            trader(6).next_arm(),
            Err(NotArmed::Engine(Unarmed::WarmingUp))
        );
    }

    #[test]
    fn a_record_that_is_not_an_order_is_refused() {
        let f = Fired {
            seq: 1,
            token: 1,
            price: 1,
            shares: LOT,
            side: b'B',
            flags: [0; 2],
            pad: [0; 5],
        };
        assert!(fired_order(&f, stock()).is_some());
        assert!(fired_order(&Fired { side: b'X', ..f }, stock()).is_none());
        assert!(fired_order(&Fired { flags: [0, 2], ..f }, stock()).is_none());
    }

    /// A fixed walk long past the warm-up: arms are written, some fire, some don't, and each
    /// agrees with `on_packet` (the proptest's check on a known series, with counts).
    #[test]
    fn a_known_series_arms_and_fires_as_on_packet_trades() {
        let mut t = trader(6);
        let (mut armed, mut fired) = (0u32, 0u32);
        let mut price = 1_000_000u32;
        let mut x: u32 = 12_345;
        for seq in 1..=3_000u64 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            price = price.saturating_add_signed((x >> 16) as i32 % 4_001 - 2_000);
            let arm = t.next_arm();
            let sent = orders(&mut t, &tick(seq, price));
            if let Ok(a) = arm {
                armed += 1;
                assert_eq!(a.contains(price), !sent.is_empty(), "tick {seq}");
                if let Some(o) = sent.first() {
                    fired += 1;
                    assert_eq!(fired_order(&fire(&a, price), stock()), Some(*o));
                }
            }
        }
        assert!(armed > 2_900, "armed {armed} of 3,000");
        assert!(fired > 50, "fired {fired}");
        assert_eq!(u64::from(fired), t.counters.orders);
    }
}
