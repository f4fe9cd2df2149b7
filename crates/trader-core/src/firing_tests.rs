//! The book trigger's firing set: the traded stock's resting orders, by reference with their
//! prices, as the trader hands them to the XDP program ([`Trader::take_firing`]). Kept in step
//! with the book across every message that adds, changes or removes an order, a refused one
//! too (an overfill deletes its order); never touched by another stock's messages.
use std::collections::HashMap;

use wire::{
    itch::{
        AddOrderRepr, Message, OrderCancelRepr, OrderDeleteRepr, OrderExecutedRepr,
        OrderExecutedWithPriceRepr, OrderReplaceRepr, Price4, Side, Stock, Timestamp,
    },
    moldudp64::{PacketBuilder, Session},
};

use crate::{Trader, desk::Resting, tests::trader};

/// The firing set as the program's map would hold it, after the trader's changes.
#[derive(Default)]
struct Model(HashMap<u64, (u32, u32)>);

impl Model {
    fn take(&mut self, t: &mut Trader) -> usize {
        let mut n = 0;
        t.take_firing(|c| {
            n += 1;
            match c {
                Resting::Rests {
                    order_ref,
                    price,
                    shares,
                } => {
                    self.0.insert(order_ref, (price, shares));
                }
                Resting::Gone { order_ref } => {
                    self.0.remove(&order_ref);
                }
            }
        });
        n
    }
}

/// A one-message packet numbered `seq`.
fn packet(seq: u64, msg: &Message) -> Vec<u8> {
    let (mut buf, mut m) = ([0u8; 256], [0u8; 64]);
    let n = msg.emit_into(&mut m).unwrap();
    let mut b =
        PacketBuilder::new(&mut buf, Session::new(paths::market::SESSION).unwrap(), seq).unwrap();
    b.push(&m[..n]).unwrap();
    b.finish().to_vec()
}

/// The day's opening messages (the system event and every Stock Directory) and SYNTH's locate.
fn opening() -> (Vec<Message>, u16) {
    let config = market::Config {
        per_print: 8,
        symbols: 20,
        ..market::Config::new(7, 50)
    };
    let g = market::Generator::new(config).unwrap();
    let locate = g.synth_locate();
    let msgs = g
        .take_while(|m| !matches!(m, Message::AddOrder(_) | Message::OrderExecuted(_)))
        .collect();
    (msgs, locate)
}

#[test]
fn the_firing_set_follows_adds_replaces_cancels_and_executions() {
    let synth = Stock::new("SYNTH").unwrap();
    let (open, l) = opening();
    let other = l + 1;
    let ts = Timestamp::from_nanos(34_200_000_000_000).unwrap();
    let add = |locate: u16, order_ref: u64, price: u32| {
        Message::AddOrder(AddOrderRepr {
            stock_locate: locate,
            tracking_number: 0,
            timestamp: ts,
            order_ref,
            side: Side::Sell,
            shares: 100,
            stock: synth,
            price: Price4(price),
        })
    };
    let exec = |order_ref: u64, shares: u32| {
        Message::OrderExecuted(OrderExecutedRepr {
            stock_locate: l,
            tracking_number: 0,
            timestamp: ts,
            order_ref,
            executed_shares: shares,
            match_number: order_ref,
        })
    };
    let cancel = |order_ref: u64, shares: u32| {
        Message::OrderCancel(OrderCancelRepr {
            stock_locate: l,
            tracking_number: 0,
            timestamp: ts,
            order_ref,
            cancelled_shares: shares,
        })
    };
    // Each step: the message, and how many changes it hands the map (one an order it names
    // of the traded stock: set with its open shares, or out).
    let steps: Vec<(Message, usize)> = vec![
        (add(l, 1, 1_000_000), 1),
        (add(l, 2, 1_010_000), 1),
        // Partly cancelled: still resting, 50 open.
        (cancel(1, 50), 1),
        // Replaced: the old order gone, the new one resting at its price.
        (
            Message::OrderReplace(OrderReplaceRepr {
                stock_locate: l,
                tracking_number: 0,
                timestamp: ts,
                original_ref: 2,
                new_ref: 3,
                shares: 100,
                price: Price4(1_020_000),
            }),
            2,
        ),
        // Executed in full (the 50 left): gone.
        (exec(1, 50), 1),
        (add(l, 4, 990_000), 1),
        // Executed in part at its own price: still resting, 60 open.
        (
            Message::OrderExecutedWithPrice(OrderExecutedWithPriceRepr {
                stock_locate: l,
                tracking_number: 0,
                timestamp: ts,
                order_ref: 4,
                executed_shares: 40,
                match_number: 9,
                printable: true,
                price: Price4(991_000),
            }),
            1,
        ),
        (
            Message::OrderDelete(OrderDeleteRepr {
                stock_locate: l,
                tracking_number: 0,
                timestamp: ts,
                order_ref: 4,
            }),
            1,
        ),
        // Cancelled in full: gone.
        (cancel(3, 100), 1),
        // A lie the book refuses (no such order): out of the set, where it never was.
        (exec(5, 100), 1),
        // Another stock's order: not the traded stock's, never in the set.
        (add(other, 6, 500_000), 0),
        (add(l, 7, 1_000_000), 1),
        // Executed in part: stays, 70 open.
        (exec(7, 30), 1),
        // An overfill, refused, deletes the order: out.
        (add(l, 8, 1_000_100), 1),
        (cancel(8, 500), 1),
    ];
    let mut t = trader().with_symbols(&[]).unwrap().tracking_firing_set();
    let mut model = Model::default();
    let mut seq = 1;
    for m in &open {
        t.on_packet(&packet(seq, m), || 0, |_| true);
        seq += 1;
    }
    assert_eq!(t.traded_locate(), Some(l));
    assert_eq!(model.take(&mut t), 0, "the directory rests no order");
    for (i, (m, changes)) in steps.iter().enumerate() {
        t.on_packet(&packet(seq, m), || 0, |_| true);
        seq += 1;
        assert_eq!(model.take(&mut t), *changes, "step {i}: {m:?}");
        // The set is the book's resting SYNTH orders, each at its price with its open shares.
        let book = t.desk().watch().unwrap().book();
        for r in 1..=8 {
            let resting = book
                .order(r)
                .filter(|o| o.locate == l)
                .map(|o| (o.price, o.shares));
            assert_eq!(model.0.get(&r).copied(), resting, "step {i}, order {r}");
        }
    }
    assert_eq!(model.0.len(), 1);
    assert_eq!(model.0.get(&7), Some(&(1_000_000, 70)));
}

/// On a generated day the set holds exactly the order the next print executes (each rests
/// from the print before), at that print's price: a book-driven trigger has it a print ahead.
#[test]
fn on_a_generated_day_the_next_print_rests_in_the_set_a_print_ahead() {
    let config = market::Config {
        per_print: 8,
        symbols: 50,
        ..market::Config::new(42, 300)
    };
    let packets = crate::tests::market_packets(config, 16);
    let closes = market::Generator::new(config).unwrap().ticks().to_vec();
    let mut t = trader().with_symbols(&[]).unwrap().tracking_firing_set();
    let mut model = Model::default();
    let mut checked = 0;
    for p in &packets {
        let before = t.counters.ticks;
        t.on_packet(p, || 0, |_| true);
        model.take(&mut t);
        let ticks = t.counters.ticks;
        // At most one SYNTH order rests at any packet's end: the next print's, at its close
        // (none where the packet ended between a print and the next order's add).
        assert!(model.0.len() <= 1, "{:?}", model.0);
        if ticks > before
            && let Some(&(price, _)) = model.0.values().next()
        {
            assert_eq!(price, closes[ticks as usize].0, "after print {ticks}");
            checked += 1;
        }
    }
    assert_eq!(t.counters.ticks, 300);
    // Most packets with a print (about 230 of them: two prints share one often) end after
    // the next order's add.
    assert!(checked > 100, "checked {checked}");
    assert!(model.0.is_empty(), "the day ends with the set empty");
}
