//! A NASDAQ TotalView-ITCH 5.0 order book, sans-IO: messages in, events out.
//!
//! For every stock locate it keeps the resting orders (L3: each order's side, price, open shares
//! and place in the queue), the price levels with their aggregate shares and order counts (L2),
//! and so the best bid and offer. It follows the ITCH 5.0 semantics:
//!
//! - Add Order (`'A'`, `'F'`) rests a new order.
//! - Order Executed (`'E'`) and Order Executed With Price (`'C'`) take shares off a resting
//!   order; Order Cancel (`'X'`) takes some off without a trade; Order Delete (`'D'`) removes
//!   what is left. An order with no shares left is gone: no Delete follows an execution of all
//!   of it.
//! - Order Replace (`'U'`) removes the original order and rests a new one, with a new
//!   reference, price and size, on the same side of the same stock, *behind* every order already
//!   at its price: it loses its priority even at an unchanged price.
//! - Trade prints are `'E'` at the resting order's price, a printable `'C'` at the price it
//!   carries, and `'P'` (a non-displayed order, which never rested in this book). A
//!   non-printable `'C'` takes the shares but prints nothing; Cross Trades (`'Q'`) and Broken
//!   Trades (`'B'`) are counted apart from the prints.
//!
//! Input it can't apply is refused and counted, never a panic, and leaves the book as it was
//! (but for an overfill, which removes the order: it can have no shares left): a
//! reference to an order it never saw (a feed joined mid-session, or a lie), an add with a live
//! reference or no shares, an execution or cancel of more shares than the order has, a message
//! whose stock locate is not its order's ([`Refusal`]).
//!
//! # Memory
//! Everything is sized at start ([`Config`]): the order table for the day's most live orders,
//! and room for [`Config::levels`] price levels per side for the first [`Config::locates`] stock
//! locates. It allocates again only when a day outgrows that, and counts each time
//! ([`Book::allocations_after_start`]). A full NASDAQ day (~9,000 symbols, a few million live
//! orders at the peak) fits the defaults.

// Two `unsafe` blocks, both in `orders`: the prefetch hint (which can't fault or change memory)
// and the order table's zeroed allocation with its huge-page advice; everything else is safe.
#![deny(unsafe_code)]

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
#[cfg(test)]
use criterion as _;

mod levels;
mod orders;
pub mod watch;

pub use levels::{Level, Levels};
pub use orders::{MAX_LOAD_DEN, MAX_LOAD_NUM, Order, Orders};
pub use watch::{Watch, WatchError};

use wire::itch::{Message, Price4, Side, Stock};

/// How big a book to build at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// The most orders live at once that the table holds without growing.
    pub live_orders: usize,
    /// Stock locates 1 to this get their levels' room at start.
    pub locates: u16,
    /// Room for this many price levels per side of each stock before it allocates.
    pub levels: usize,
}

impl Default for Config {
    /// 4 M live orders (a 256 MiB table), 16,384 locates with room for 64 levels a side.
    fn default() -> Self {
        Config {
            live_orders: 1 << 22,
            locates: 16_384,
            levels: 64,
        }
    }
}

/// Why a message was not applied (the book is left as it was, unless said).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// An execution, cancel, delete or replace of an order the book never saw or that is gone.
    UnknownOrder {
        /// The reference it named.
        order_ref: u64,
    },
    /// An add (or a replace's new reference) that names a live order.
    DuplicateOrder {
        /// The reference.
        order_ref: u64,
    },
    /// An add or replace of zero shares, or an execution or cancel of zero.
    ZeroShares,
    /// An execution or cancel of more shares than the order has open. The order is removed
    /// (it can have none left) and nothing prints.
    Overfill {
        /// The order.
        order_ref: u64,
        /// Shares the message named.
        asked: u32,
        /// Shares the order had.
        open: u32,
    },
    /// The message's stock locate is not the order's.
    LocateMismatch {
        /// The order.
        order_ref: u64,
        /// The locate the order was added for.
        order_locate: u16,
        /// The locate the message carries.
        message_locate: u16,
    },
}

/// What kind of print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrintKind {
    /// `'E'`: at the resting order's price.
    Executed,
    /// `'C'`, printable: at the price the message carries.
    ExecutedWithPrice,
    /// `'P'`: a non-displayed order.
    Trade,
}

/// A trade print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Print {
    /// The stock locate.
    pub locate: u16,
    /// The price.
    pub price: Price4,
    /// Shares.
    pub shares: u32,
    /// The resting (or, for `'P'`, the non-displayed) order's side.
    pub side: Side,
    /// What printed.
    pub kind: PrintKind,
}

/// What one message did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The book of this locate changed, and nothing printed.
    Changed {
        /// The stock locate.
        locate: u16,
    },
    /// A trade print (the book changed too, for `'E'` and `'C'`).
    Print(Print),
    /// A non-printable `'C'`: shares taken off an order, no print.
    NonPrintable {
        /// The stock locate.
        locate: u16,
    },
    /// A Cross Trade (`'Q'`), counted apart from the prints.
    Cross {
        /// The stock locate.
        locate: u16,
        /// The cross price.
        price: Price4,
        /// Shares matched in the cross.
        shares: u64,
    },
    /// A Broken Trade (`'B'`).
    Broken {
        /// The stock locate.
        locate: u16,
        /// The match number broken.
        match_number: u64,
    },
    /// A Stock Directory message named this locate's stock.
    Directory {
        /// The stock locate.
        locate: u16,
    },
    /// A message that doesn't touch a book (system events, trading actions, imbalances…).
    Other,
    /// A message the book could not apply.
    Refused(Refusal),
}

/// One stock's book and its counts.
#[derive(Debug, Clone, Default)]
pub struct StockBook {
    /// Its symbol, from the Stock Directory (or the first add that named it).
    pub stock: Option<Stock>,
    /// The bid side.
    pub bids: Levels,
    /// The ask side.
    pub asks: Levels,
    /// Messages that carried this locate.
    pub messages: u64,
    /// Prints.
    pub prints: u64,
    /// The last print's price.
    pub last_price: Option<Price4>,
}

impl StockBook {
    /// One side.
    pub fn side(&self, side: Side) -> &Levels {
        match side {
            Side::Buy => &self.bids,
            Side::Sell => &self.asks,
        }
    }

    fn side_mut(&mut self, side: Side) -> &mut Levels {
        match side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        }
    }

    /// The best bid.
    pub fn bid(&self) -> Option<Level> {
        self.bids.best(Side::Buy)
    }

    /// The best offer.
    pub fn ask(&self) -> Option<Level> {
        self.asks.best(Side::Sell)
    }
}

/// What the book counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Messages applied or refused, by type byte.
    pub by_kind: [u64; 128],
    /// Prints.
    pub prints: u64,
    /// Non-printable `'C'` executions.
    pub non_printable: u64,
    /// Cross Trades.
    pub crosses: u64,
    /// Broken Trades.
    pub breaks: u64,
    /// [`Refusal::UnknownOrder`]s.
    pub unknown_order: u64,
    /// [`Refusal::DuplicateOrder`]s.
    pub duplicate_order: u64,
    /// [`Refusal::ZeroShares`].
    pub zero_shares: u64,
    /// [`Refusal::Overfill`]s.
    pub overfill: u64,
    /// [`Refusal::LocateMismatch`]es.
    pub locate_mismatch: u64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            by_kind: [0; 128],
            prints: 0,
            non_printable: 0,
            crosses: 0,
            breaks: 0,
            unknown_order: 0,
            duplicate_order: 0,
            zero_shares: 0,
            overfill: 0,
            locate_mismatch: 0,
        }
    }
}

impl Stats {
    /// Every refusal.
    pub fn refused(&self) -> u64 {
        self.unknown_order
            + self.duplicate_order
            + self.zero_shares
            + self.overfill
            + self.locate_mismatch
    }

    /// Messages seen.
    pub fn messages(&self) -> u64 {
        self.by_kind.iter().sum()
    }
}

/// The book of every stock on the feed.
#[derive(Debug, Clone)]
pub struct Book {
    orders: Orders,
    stocks: Box<[StockBook]>,
    levels: usize,
    arrivals: u64,
    stats: Stats,
}

impl Book {
    /// Builds a book sized by `config`: every allocation of a day that fits it happens here.
    pub fn new(config: Config) -> Book {
        let Config {
            live_orders,
            locates,
            levels,
        } = config;
        let mut stocks = vec![StockBook::default(); usize::from(u16::MAX) + 1];
        for s in &mut stocks[1..=usize::from(locates)] {
            s.bids = Levels::with_capacity(levels);
            s.asks = Levels::with_capacity(levels);
        }
        Book {
            orders: Orders::with_capacity(live_orders),
            stocks: stocks.into_boxed_slice(),
            levels,
            arrivals: 0,
            stats: Stats::default(),
        }
    }

    /// Applies one message.
    #[inline]
    pub fn apply(&mut self, msg: &Message) -> Event {
        let kind = msg.kind();
        self.stats.by_kind[usize::from(kind & 0x7f)] += 1;
        let locate = msg.stock_locate();
        self.stocks[usize::from(locate)].messages += 1;
        let event = match msg {
            Message::AddOrder(m) => {
                self.add(locate, m.order_ref, m.side, m.shares, m.price, m.stock)
            }
            Message::AddOrderMpid(m) => {
                self.add(locate, m.order_ref, m.side, m.shares, m.price, m.stock)
            }
            Message::OrderExecuted(m) => match self.take(locate, m.order_ref, m.executed_shares) {
                Ok(o) => self.print(
                    locate,
                    Price4(o.price),
                    m.executed_shares,
                    o.side,
                    PrintKind::Executed,
                ),
                Err(r) => Event::Refused(r),
            },
            Message::OrderExecutedWithPrice(m) => {
                match self.take(locate, m.order_ref, m.executed_shares) {
                    Ok(o) if m.printable => self.print(
                        locate,
                        m.price,
                        m.executed_shares,
                        o.side,
                        PrintKind::ExecutedWithPrice,
                    ),
                    Ok(_) => {
                        self.stats.non_printable += 1;
                        Event::NonPrintable { locate }
                    }
                    Err(r) => Event::Refused(r),
                }
            }
            Message::OrderCancel(m) => match self.take(locate, m.order_ref, m.cancelled_shares) {
                Ok(_) => Event::Changed { locate },
                Err(r) => Event::Refused(r),
            },
            Message::OrderDelete(m) => match self.delete(locate, m.order_ref) {
                Ok(_) => Event::Changed { locate },
                Err(r) => Event::Refused(r),
            },
            Message::OrderReplace(m) => {
                self.replace(locate, m.original_ref, m.new_ref, m.shares, m.price)
            }
            Message::Trade(m) => self.print(locate, m.price, m.shares, m.side, PrintKind::Trade),
            Message::CrossTrade(m) => {
                self.stats.crosses += 1;
                Event::Cross {
                    locate,
                    price: m.cross_price,
                    shares: m.shares,
                }
            }
            Message::BrokenTrade(m) => {
                self.stats.breaks += 1;
                Event::Broken {
                    locate,
                    match_number: m.match_number,
                }
            }
            Message::StockDirectory(m) => {
                let s = &mut self.stocks[usize::from(locate)];
                s.stock = Some(m.stock);
                s.bids.reserve(self.levels);
                s.asks.reserve(self.levels);
                Event::Directory { locate }
            }
            _ => Event::Other,
        };
        if let Event::Refused(r) = event {
            self.count(r);
        }
        event
    }

    fn count(&mut self, r: Refusal) {
        let s = &mut self.stats;
        match r {
            Refusal::UnknownOrder { .. } => s.unknown_order += 1,
            Refusal::DuplicateOrder { .. } => s.duplicate_order += 1,
            Refusal::ZeroShares => s.zero_shares += 1,
            Refusal::Overfill { .. } => s.overfill += 1,
            Refusal::LocateMismatch { .. } => s.locate_mismatch += 1,
        }
    }

    #[inline]
    fn print(
        &mut self,
        locate: u16,
        price: Price4,
        shares: u32,
        side: Side,
        kind: PrintKind,
    ) -> Event {
        let s = &mut self.stocks[usize::from(locate)];
        s.prints += 1;
        s.last_price = Some(price);
        self.stats.prints += 1;
        Event::Print(Print {
            locate,
            price,
            shares,
            side,
            kind,
        })
    }

    #[inline]
    fn add(
        &mut self,
        locate: u16,
        order_ref: u64,
        side: Side,
        shares: u32,
        price: Price4,
        stock: Stock,
    ) -> Event {
        if shares == 0 {
            return Event::Refused(Refusal::ZeroShares);
        }
        let order = Order {
            order_ref,
            arrival: self.arrivals,
            price: price.0,
            shares,
            locate,
            side,
        };
        if self.orders.insert(&order).is_err() {
            return Event::Refused(Refusal::DuplicateOrder { order_ref });
        }
        self.arrivals += 1;
        let s = &mut self.stocks[usize::from(locate)];
        if s.stock.is_none() {
            s.stock = Some(stock);
        }
        s.side_mut(side).add(side, price.0, shares);
        Event::Changed { locate }
    }

    /// Checks an order named by an execution, cancel, delete or replace.
    #[inline]
    fn named(&self, locate: u16, order_ref: u64) -> Result<Order, Refusal> {
        let o = self
            .orders
            .get(order_ref)
            .ok_or(Refusal::UnknownOrder { order_ref })?;
        if o.locate != locate {
            return Err(Refusal::LocateMismatch {
                order_ref,
                order_locate: o.locate,
                message_locate: locate,
            });
        }
        Ok(o)
    }

    /// Takes `shares` off an order (an execution or a cancel); returns the order as it was.
    #[inline]
    fn take(&mut self, locate: u16, order_ref: u64, shares: u32) -> Result<Order, Refusal> {
        if shares == 0 {
            return Err(Refusal::ZeroShares);
        }
        let o = self.named(locate, order_ref)?;
        if shares > o.shares {
            self.delete(locate, order_ref)?;
            return Err(Refusal::Overfill {
                order_ref,
                asked: shares,
                open: o.shares,
            });
        }
        self.orders.reduce(order_ref, shares);
        let gone = shares == o.shares;
        let side = o.side;
        let found = self.stocks[usize::from(locate)]
            .side_mut(side)
            .reduce(side, o.price, shares, gone);
        debug_assert!(found, "order {order_ref} rests at a level the book lacks");
        Ok(o)
    }

    #[inline]
    fn delete(&mut self, locate: u16, order_ref: u64) -> Result<Order, Refusal> {
        let o = self.named(locate, order_ref)?;
        self.orders.remove(order_ref);
        let side = o.side;
        let found = self.stocks[usize::from(locate)]
            .side_mut(side)
            .reduce(side, o.price, o.shares, true);
        debug_assert!(found, "order {order_ref} rests at a level the book lacks");
        Ok(o)
    }

    #[inline]
    fn replace(
        &mut self,
        locate: u16,
        original: u64,
        new_ref: u64,
        shares: u32,
        price: Price4,
    ) -> Event {
        if shares == 0 {
            return Event::Refused(Refusal::ZeroShares);
        }
        let o = match self.named(locate, original) {
            Ok(o) => o,
            Err(r) => return Event::Refused(r),
        };
        if new_ref != original && self.orders.get(new_ref).is_some() {
            return Event::Refused(Refusal::DuplicateOrder { order_ref: new_ref });
        }
        let deleted = self.delete(locate, original);
        debug_assert!(deleted.is_ok());
        let stock = self.stocks[usize::from(locate)]
            .stock
            .unwrap_or(Stock([b' '; 8]));
        self.add(locate, new_ref, o.side, shares, price, stock)
    }

    /// Starts loading what applying `msg` will touch first (its stock's book and, for an
    /// execution, cancel, delete or replace, its order's slot), so that a replay that calls this
    /// one message ahead of [`Book::apply`] overlaps the cache misses of consecutive messages.
    /// A hint: it changes nothing.
    #[inline]
    pub fn prefetch(&self, msg: &Message) {
        let stock = &self.stocks[usize::from(msg.stock_locate())];
        orders::prefetch(stock);
        // The best levels' line of the side(s) it may touch (a load of the stock's book, off
        // the path of the message being applied).
        match msg {
            Message::AddOrder(m) => stock.side(m.side).prefetch_best(),
            Message::AddOrderMpid(m) => stock.side(m.side).prefetch_best(),
            Message::Trade(_) | Message::CrossTrade(_) | Message::Noii(_) => {}
            _ => {
                stock.bids.prefetch_best();
                stock.asks.prefetch_best();
            }
        }
        let order_ref = match msg {
            Message::OrderExecuted(m) => m.order_ref,
            Message::OrderExecutedWithPrice(m) => m.order_ref,
            Message::OrderCancel(m) => m.order_ref,
            Message::OrderDelete(m) => m.order_ref,
            Message::OrderReplace(m) => m.original_ref,
            _ => return,
        };
        self.orders.prefetch(order_ref);
    }

    /// The live order with this reference.
    pub fn order(&self, order_ref: u64) -> Option<Order> {
        self.orders.get(order_ref)
    }

    /// Live orders.
    pub fn live_orders(&self) -> usize {
        self.orders.len()
    }

    /// Orders the table holds without growing.
    pub fn order_capacity(&self) -> usize {
        self.orders.capacity()
    }

    /// One stock's book.
    pub fn stock(&self, locate: u16) -> &StockBook {
        &self.stocks[usize::from(locate)]
    }

    /// Every locate that has seen a message, with its book.
    pub fn stocks(&self) -> impl Iterator<Item = (u16, &StockBook)> {
        self.stocks
            .iter()
            .enumerate()
            .filter(|(_, s)| s.messages > 0 || s.stock.is_some())
            .map(|(i, s)| (i as u16, s))
    }

    /// The references of the orders resting at `price` on `side` of `locate`, in priority order
    /// (first to trade first). A scan of the whole order table: for checks, not the hot path.
    pub fn queue(&self, locate: u16, side: Side, price: Price4) -> Vec<u64> {
        let mut q: Vec<Order> = self
            .orders
            .iter()
            .filter(|o| o.locate == locate && o.side == side && o.price == price.0)
            .collect();
        q.sort_by_key(|o| o.arrival);
        q.into_iter().map(|o| o.order_ref).collect()
    }

    /// What it counted.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Allocations since [`Book::new`]: the order table's growths and every side that outgrew
    /// its room (0 for a day that fits its [`Config`]).
    pub fn allocations_after_start(&self) -> u64 {
        self.orders.growths()
            + self
                .stocks
                .iter()
                .map(|s| s.bids.grown() + s.asks.grown())
                .sum::<u64>()
    }

    /// Bytes the book holds: its order table, its stocks and their levels' room.
    pub fn bytes(&self) -> usize {
        self.orders.bytes()
            + core::mem::size_of_val(&*self.stocks)
            + self
                .stocks
                .iter()
                .map(|s| s.bids.bytes() + s.asks.bytes())
                .sum::<usize>()
    }
}
