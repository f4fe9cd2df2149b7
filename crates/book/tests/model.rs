//! The book against a naive model (a map of orders, levels summed on demand), on random order
//! flows: valid ones built from the model's own live orders, with lies mixed in (unknown
//! references, duplicates, overfills, wrong locates, zero shares) that both must refuse alike.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use {criterion as _, libc as _};

use std::collections::BTreeMap;

use book::{Book, Config, Event, PrintKind, Refusal};
use proptest::prelude::*;
use wire::itch::{
    AddOrderRepr, Message, OrderCancelRepr, OrderDeleteRepr, OrderExecutedRepr,
    OrderExecutedWithPriceRepr, OrderReplaceRepr, Price4, Side, Stock, Timestamp, TradeRepr,
};

#[derive(Debug, Clone, Copy)]
struct ModelOrder {
    locate: u16,
    side: Side,
    price: u32,
    shares: u32,
    arrival: u64,
}

#[derive(Debug, Default)]
struct Model {
    orders: BTreeMap<u64, ModelOrder>,
    arrivals: u64,
}

impl Model {
    /// (price, orders, shares), best first.
    fn levels(&self, locate: u16, side: Side) -> Vec<(u32, u32, u64)> {
        let mut by_price: BTreeMap<u32, (u32, u64)> = BTreeMap::new();
        for o in self
            .orders
            .values()
            .filter(|o| o.locate == locate && o.side == side)
        {
            let e = by_price.entry(o.price).or_default();
            e.0 += 1;
            e.1 += u64::from(o.shares);
        }
        let mut v: Vec<_> = by_price.into_iter().map(|(p, (n, s))| (p, n, s)).collect();
        if side == Side::Buy {
            v.reverse();
        }
        v
    }

    fn queue(&self, locate: u16, side: Side, price: u32) -> Vec<u64> {
        let mut q: Vec<_> = self
            .orders
            .iter()
            .filter(|(_, o)| o.locate == locate && o.side == side && o.price == price)
            .map(|(&r, o)| (o.arrival, r))
            .collect();
        q.sort();
        q.into_iter().map(|(_, r)| r).collect()
    }

    fn add(&mut self, r: u64, o: ModelOrder) {
        self.orders.insert(
            r,
            ModelOrder {
                arrival: self.arrivals,
                ..o
            },
        );
        self.arrivals += 1;
    }

    /// Takes shares off; `Err` as the book must refuse.
    fn take(&mut self, locate: u16, r: u64, n: u32) -> Result<ModelOrder, Refusal> {
        if n == 0 {
            return Err(Refusal::ZeroShares);
        }
        let o = self.named(locate, r)?;
        if n > o.shares {
            self.orders.remove(&r);
            return Err(Refusal::Overfill {
                order_ref: r,
                asked: n,
                open: o.shares,
            });
        }
        if n == o.shares {
            self.orders.remove(&r);
        } else {
            self.orders.get_mut(&r).unwrap().shares -= n;
        }
        Ok(o)
    }

    fn named(&self, locate: u16, r: u64) -> Result<ModelOrder, Refusal> {
        let o = *self
            .orders
            .get(&r)
            .ok_or(Refusal::UnknownOrder { order_ref: r })?;
        if o.locate != locate {
            return Err(Refusal::LocateMismatch {
                order_ref: r,
                order_locate: o.locate,
                message_locate: locate,
            });
        }
        Ok(o)
    }
}

const LOCATES: u16 = 3;

fn ts() -> Timestamp {
    Timestamp::from_nanos(34_200_000_000_000).unwrap()
}

fn stock(locate: u16) -> Stock {
    Stock::new(&format!("S{locate}")).unwrap()
}

/// One step of a flow: what to do, with raw choices that the driver turns into a message
/// valid (or, for the lies, invalid) against the model's state.
#[derive(Debug, Clone)]
enum Step {
    Add {
        locate: u16,
        buy: bool,
        tick: u32,
        shares: u32,
    },
    Execute {
        pick: usize,
        shares: u32,
    },
    ExecuteWithPrice {
        pick: usize,
        shares: u32,
        printable: bool,
        tick: u32,
    },
    Cancel {
        pick: usize,
        shares: u32,
    },
    Delete {
        pick: usize,
    },
    Replace {
        pick: usize,
        tick: u32,
        shares: u32,
    },
    Trade {
        locate: u16,
        tick: u32,
    },
    /// A lie: an unknown reference, a duplicate add, a wrong locate, zero shares, an overfill.
    Lie {
        pick: usize,
        how: u8,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (1..=LOCATES, any::<bool>(), 0u32..12, 1u32..500)
            .prop_map(|(locate, buy, tick, shares)| Step::Add { locate, buy, tick, shares }),
        2 => (any::<usize>(), 1u32..300).prop_map(|(pick, shares)| Step::Execute { pick, shares }),
        1 => (any::<usize>(), 1u32..300, any::<bool>(), 0u32..12)
            .prop_map(|(pick, shares, printable, tick)| Step::ExecuteWithPrice { pick, shares, printable, tick }),
        2 => (any::<usize>(), 1u32..300).prop_map(|(pick, shares)| Step::Cancel { pick, shares }),
        3 => any::<usize>().prop_map(|pick| Step::Delete { pick }),
        2 => (any::<usize>(), 0u32..12, 1u32..500)
            .prop_map(|(pick, tick, shares)| Step::Replace { pick, tick, shares }),
        1 => (1..=LOCATES, 0u32..12).prop_map(|(locate, tick)| Step::Trade { locate, tick }),
        1 => (any::<usize>(), 0u8..6).prop_map(|(pick, how)| Step::Lie { pick, how }),
    ]
}

fn price(tick: u32) -> u32 {
    100_000 + tick * 100
}

struct Driver {
    book: Book,
    model: Model,
    next_ref: u64,
    refused: u64,
}

impl Driver {
    fn pick(&self, pick: usize) -> Option<(u64, ModelOrder)> {
        if self.model.orders.is_empty() {
            return None;
        }
        let i = pick % self.model.orders.len();
        self.model.orders.iter().nth(i).map(|(&r, &o)| (r, o))
    }

    fn apply(&mut self, m: Message) -> Event {
        let e = self.book.apply(&m);
        if matches!(e, Event::Refused(_)) {
            self.refused += 1;
        }
        e
    }

    fn add_msg(locate: u16, order_ref: u64, side: Side, shares: u32, p: u32) -> Message {
        Message::AddOrder(AddOrderRepr {
            stock_locate: locate,
            tracking_number: 0,
            timestamp: ts(),
            order_ref,
            side,
            shares,
            stock: stock(locate),
            price: Price4(p),
        })
    }

    fn run(&mut self, s: Step) {
        match s {
            Step::Add {
                locate,
                buy,
                tick,
                shares,
            } => {
                let side = if buy { Side::Buy } else { Side::Sell };
                // Refs in steps of 1 to 3 with collisions in the table's home slots.
                self.next_ref += 1 + (self.next_ref % 3);
                let r = self.next_ref;
                let e = self.apply(Self::add_msg(locate, r, side, shares, price(tick)));
                assert_eq!(e, Event::Changed { locate });
                self.model.add(
                    r,
                    ModelOrder {
                        locate,
                        side,
                        price: price(tick),
                        shares,
                        arrival: 0,
                    },
                );
            }
            Step::Execute { pick, shares } => {
                let Some((r, o)) = self.pick(pick) else {
                    return;
                };
                let shares = shares.min(o.shares);
                let e = self.apply(Message::OrderExecuted(OrderExecutedRepr {
                    stock_locate: o.locate,
                    tracking_number: 0,
                    timestamp: ts(),
                    order_ref: r,
                    executed_shares: shares,
                    match_number: 1,
                }));
                self.model.take(o.locate, r, shares).unwrap();
                let Event::Print(p) = e else {
                    panic!("'E' gave {e:?}")
                };
                assert_eq!(
                    (p.locate, p.price, p.shares, p.side, p.kind),
                    (
                        o.locate,
                        Price4(o.price),
                        shares,
                        o.side,
                        PrintKind::Executed
                    )
                );
            }
            Step::ExecuteWithPrice {
                pick,
                shares,
                printable,
                tick,
            } => {
                let Some((r, o)) = self.pick(pick) else {
                    return;
                };
                let shares = shares.min(o.shares);
                let e = self.apply(Message::OrderExecutedWithPrice(
                    OrderExecutedWithPriceRepr {
                        stock_locate: o.locate,
                        tracking_number: 0,
                        timestamp: ts(),
                        order_ref: r,
                        executed_shares: shares,
                        match_number: 2,
                        printable,
                        price: Price4(price(tick)),
                    },
                ));
                self.model.take(o.locate, r, shares).unwrap();
                if printable {
                    let Event::Print(p) = e else {
                        panic!("printable 'C' gave {e:?}")
                    };
                    assert_eq!(
                        (p.price, p.shares, p.kind),
                        (Price4(price(tick)), shares, PrintKind::ExecutedWithPrice)
                    );
                } else {
                    assert_eq!(e, Event::NonPrintable { locate: o.locate });
                }
            }
            Step::Cancel { pick, shares } => {
                let Some((r, o)) = self.pick(pick) else {
                    return;
                };
                let shares = shares.min(o.shares);
                let e = self.apply(Message::OrderCancel(OrderCancelRepr {
                    stock_locate: o.locate,
                    tracking_number: 0,
                    timestamp: ts(),
                    order_ref: r,
                    cancelled_shares: shares,
                }));
                self.model.take(o.locate, r, shares).unwrap();
                assert_eq!(e, Event::Changed { locate: o.locate });
            }
            Step::Delete { pick } => {
                let Some((r, o)) = self.pick(pick) else {
                    return;
                };
                let e = self.apply(Message::OrderDelete(OrderDeleteRepr {
                    stock_locate: o.locate,
                    tracking_number: 0,
                    timestamp: ts(),
                    order_ref: r,
                }));
                self.model.orders.remove(&r);
                assert_eq!(e, Event::Changed { locate: o.locate });
            }
            Step::Replace { pick, tick, shares } => {
                let Some((r, o)) = self.pick(pick) else {
                    return;
                };
                self.next_ref += 1;
                let new_ref = self.next_ref;
                let e = self.apply(Message::OrderReplace(OrderReplaceRepr {
                    stock_locate: o.locate,
                    tracking_number: 0,
                    timestamp: ts(),
                    original_ref: r,
                    new_ref,
                    shares,
                    price: Price4(price(tick)),
                }));
                assert_eq!(e, Event::Changed { locate: o.locate });
                self.model.orders.remove(&r);
                self.model.add(
                    new_ref,
                    ModelOrder {
                        price: price(tick),
                        shares,
                        ..o
                    },
                );
            }
            Step::Trade { locate, tick } => {
                let e = self.apply(Message::Trade(TradeRepr {
                    stock_locate: locate,
                    tracking_number: 0,
                    timestamp: ts(),
                    order_ref: 0,
                    side: Side::Buy,
                    shares: 100,
                    stock: stock(locate),
                    price: Price4(price(tick)),
                    match_number: 3,
                }));
                let Event::Print(p) = e else {
                    panic!("'P' gave {e:?}")
                };
                assert_eq!((p.locate, p.kind), (locate, PrintKind::Trade));
            }
            Step::Lie { pick, how } => self.lie(pick, how),
        }
    }

    fn lie(&mut self, pick: usize, how: u8) {
        let live = self.pick(pick);
        let (msg, want) = match (how, live) {
            (0, _) | (_, None) => {
                let r = self.next_ref + 1_000_000;
                let m = Message::OrderDelete(OrderDeleteRepr {
                    stock_locate: 1,
                    tracking_number: 0,
                    timestamp: ts(),
                    order_ref: r,
                });
                (m, Refusal::UnknownOrder { order_ref: r })
            }
            (1, Some((r, o))) => (
                Self::add_msg(o.locate, r, o.side, 10, o.price),
                Refusal::DuplicateOrder { order_ref: r },
            ),
            (2, Some((r, o))) => {
                let wrong = o.locate % LOCATES + 1;
                let m = Message::OrderCancel(OrderCancelRepr {
                    stock_locate: wrong,
                    tracking_number: 0,
                    timestamp: ts(),
                    order_ref: r,
                    cancelled_shares: 1,
                });
                (
                    m,
                    Refusal::LocateMismatch {
                        order_ref: r,
                        order_locate: o.locate,
                        message_locate: wrong,
                    },
                )
            }
            (3, Some((r, o))) => {
                let m = Message::OrderExecuted(OrderExecutedRepr {
                    stock_locate: o.locate,
                    tracking_number: 0,
                    timestamp: ts(),
                    order_ref: r,
                    executed_shares: o.shares + 1,
                    match_number: 4,
                });
                (
                    m,
                    Refusal::Overfill {
                        order_ref: r,
                        asked: o.shares + 1,
                        open: o.shares,
                    },
                )
            }
            (4, Some((r, o))) => {
                let m = Message::OrderCancel(OrderCancelRepr {
                    stock_locate: o.locate,
                    tracking_number: 0,
                    timestamp: ts(),
                    order_ref: r,
                    cancelled_shares: 0,
                });
                (m, Refusal::ZeroShares)
            }
            (_, Some((r, o))) => {
                // A replace onto a live reference.
                let other = self.pick(pick.wrapping_add(1)).map(|(r, _)| r).unwrap_or(r);
                let m = Message::OrderReplace(OrderReplaceRepr {
                    stock_locate: o.locate,
                    tracking_number: 0,
                    timestamp: ts(),
                    original_ref: r,
                    new_ref: other,
                    shares: 5,
                    price: Price4(o.price),
                });
                if other == r {
                    // Replacing an order by itself under its own reference is allowed: it
                    // moves to the back of its queue.
                    let e = self.apply(m);
                    assert_eq!(e, Event::Changed { locate: o.locate });
                    self.model.orders.remove(&r);
                    self.model.add(r, ModelOrder { shares: 5, ..o });
                    return;
                }
                (m, Refusal::DuplicateOrder { order_ref: other })
            }
        };
        let e = self.apply(msg);
        assert_eq!(e, Event::Refused(want));
        if let Refusal::Overfill { order_ref, .. } = want {
            self.model.orders.remove(&order_ref);
        }
    }

    fn check(&self) {
        assert_eq!(self.book.live_orders(), self.model.orders.len());
        for locate in 1..=LOCATES {
            for side in [Side::Buy, Side::Sell] {
                let got: Vec<_> = self
                    .book
                    .stock(locate)
                    .side(side)
                    .iter(side)
                    .map(|l| (l.price, l.orders, l.shares))
                    .collect();
                assert_eq!(got, self.model.levels(locate, side), "{locate} {side:?}");
            }
            let s = self.book.stock(locate);
            assert_eq!(
                s.bid().map(|l| l.price),
                self.model.levels(locate, Side::Buy).first().map(|l| l.0)
            );
            assert_eq!(
                s.ask().map(|l| l.price),
                self.model.levels(locate, Side::Sell).first().map(|l| l.0)
            );
        }
        for (&r, o) in &self.model.orders {
            let b = self.book.order(r).expect("a live order");
            assert_eq!(
                (b.locate, b.side, b.price, b.shares),
                (o.locate, o.side, o.price, o.shares)
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn book_equals_the_naive_model(steps in proptest::collection::vec(step(), 1..300)) {
        // A small table, so refs collide and the table grows mid-flow.
        let mut d = Driver {
            book: Book::new(Config { live_orders: 8, locates: LOCATES, levels: 2 }),
            model: Model::default(),
            next_ref: 0,
            refused: 0,
        };
        for s in steps {
            d.run(s);
            d.check();
        }
        // Priority: every level's queue in arrival order.
        for locate in 1..=LOCATES {
            for side in [Side::Buy, Side::Sell] {
                for (p, _, _) in d.model.levels(locate, side) {
                    prop_assert_eq!(d.book.queue(locate, side, Price4(p)), d.model.queue(locate, side, p));
                }
            }
        }
        prop_assert_eq!(d.book.stats().refused(), d.refused);
    }
}

#[test]
fn replace_loses_priority_at_the_same_price() {
    let mut b = Book::new(Config::default());
    for r in [1, 2, 3] {
        b.apply(&Driver::add_msg(7, r, Side::Buy, 100, 500_000));
    }
    assert_eq!(b.queue(7, Side::Buy, Price4(500_000)), [1, 2, 3]);
    let e = b.apply(&Message::OrderReplace(OrderReplaceRepr {
        stock_locate: 7,
        tracking_number: 0,
        timestamp: ts(),
        original_ref: 1,
        new_ref: 4,
        shares: 100,
        price: Price4(500_000),
    }));
    assert_eq!(e, Event::Changed { locate: 7 });
    assert_eq!(b.queue(7, Side::Buy, Price4(500_000)), [2, 3, 4]);
    assert_eq!(b.order(1), None);
    let bid = b.stock(7).bid().unwrap();
    assert_eq!((bid.price, bid.orders, bid.shares), (500_000, 3, 300));
    assert_eq!(b.allocations_after_start(), 0);
}

#[test]
fn executions_reduce_and_remove_and_print_at_the_resting_price() {
    let mut b = Book::new(Config::default());
    b.apply(&Driver::add_msg(2, 10, Side::Sell, 300, 1_000_100));
    b.apply(&Driver::add_msg(2, 11, Side::Sell, 200, 1_000_200));
    let exec = |r, n| {
        Message::OrderExecuted(OrderExecutedRepr {
            stock_locate: 2,
            tracking_number: 0,
            timestamp: ts(),
            order_ref: r,
            executed_shares: n,
            match_number: 9,
        })
    };
    let Event::Print(p) = b.apply(&exec(10, 100)) else {
        panic!()
    };
    assert_eq!(
        (p.price, p.shares, p.side),
        (Price4(1_000_100), 100, Side::Sell)
    );
    assert_eq!(
        b.stock(2).ask().map(|l| (l.price, l.shares)),
        Some((1_000_100, 200))
    );
    b.apply(&exec(10, 200));
    assert_eq!(b.order(10), None, "fully executed: gone without a delete");
    assert_eq!(b.stock(2).ask().map(|l| l.price), Some(1_000_200));
    // A delete after a full execution names a gone order.
    let e = b.apply(&Message::OrderDelete(OrderDeleteRepr {
        stock_locate: 2,
        tracking_number: 0,
        timestamp: ts(),
        order_ref: 10,
    }));
    assert_eq!(e, Event::Refused(Refusal::UnknownOrder { order_ref: 10 }));
    assert_eq!(b.stats().unknown_order, 1);
    assert_eq!(b.stock(2).prints, 2);
    assert_eq!(b.stock(2).last_price, Some(Price4(1_000_100)));
}
