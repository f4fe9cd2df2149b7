//! The desk: the strategy on the traded stock's prints, making orders, and the trader's own
//! ledger of what it sent. It sees only what the [`Sequencer`](crate::sequencer::Sequencer)
//! hands it: each message of the feed once, in order, numbered.
//!
//! What a print is depends on what the desk reads. On the ticker feed, a Trade (`'P'`) message
//! of its stock. On a full-depth feed (a desk given symbols, [`Desk::with_symbols`]), a print of
//! its stock's book: an Order Executed at the resting order's price, a printable Order Executed
//! With Price at its own, or a Trade. The book is a [`book::Watch`], kept for the watched
//! symbols only: every other symbol's message costs a two-byte read and a bit test.
//!
//! What can wait until the orders are out does: the engine-time samples and the ledger's
//! bookings of a packet are kept aside and recorded by [`Desk::settle`].

pub use book::watch::MAX_SYMBOLS;
use book::{Event, Watch, WatchError};
use engine::{Ledger, Params, Side as EngineSide, Strategy};
use results::{Account, Position};
use wire::{
    itch::{self, Message, Price4, Stock},
    order::OrderRepr,
};

use crate::{Counters, DEFAULT_ENGINE_SAMPLE_EVERY, arm, stats::Latency};

/// Samples and bookings one packet can keep aside for [`Desk::settle`]: more than the trades
/// a 2048-byte frame holds (44). Past it, the rest is recorded at once (never lost).
const PENDING_MAX: usize = 64;

/// Engine samples and fills of the packet being processed, in tick order.
#[derive(Debug)]
struct Pending {
    engine: [u64; PENDING_MAX],
    engine_len: usize,
    fills: [(EngineSide, f64); PENDING_MAX],
    fills_len: usize,
}

impl Default for Pending {
    fn default() -> Self {
        Pending {
            engine: [0; PENDING_MAX],
            engine_len: 0,
            fills: [(EngineSide::Long, 0.0); PENDING_MAX],
            fills_len: 0,
        }
    }
}

/// The desk's state (see the [module](self)).
#[derive(Debug)]
pub struct Desk {
    strategy: Strategy,
    /// The stock traded (all stocks' trades if `None`, on the ticker feed).
    stock: Option<Stock>,
    /// The token of the last order made.
    token: u64,
    /// Engine time (`on_tick`, price in to decision out) of one tick in `engine_every`.
    engine: Latency,
    /// Sample the engine on one tick in this many (0: never).
    engine_every: u32,
    /// Ticks until the next sample.
    engine_countdown: u32,
    /// The book's work on one message (its parse and apply), sampled on one watched message
    /// in `engine_every` that can't print (see [`Desk::book_work`]).
    book_work: Latency,
    /// Watched messages until the next book sample.
    book_countdown: u32,
    /// A book sample of the packet being processed, recorded at [`Desk::settle`].
    book_pending: Option<u64>,
    /// The desk's own book of the orders it sent, at the tick prices it saw.
    ledger: Ledger,
    /// Orders booked in `ledger`.
    booked: u64,
    /// The last tick price seen (of the stock traded): where the account closes.
    last_price: Option<f64>,
    /// What the current packet keeps aside until its orders are out.
    pending: Pending,
    /// The watched symbols' book (`None`: the ticker feed).
    watch: Option<Box<Watch>>,
    /// The firing set's changes since the trader last took them (the book trigger's, see
    /// [`Desk::track_firing_set`]); `None`: not tracked.
    firing: Option<Vec<Resting>>,
}

/// A change to the firing set: the traded stock's resting orders, by reference, with their
/// prices (the book trigger fires on an Order Executed of one of them whose price is in the
/// arm's set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resting {
    /// The order rests in the book now, at `price` (Price(4)) with `shares` open (added, or
    /// its open shares changed).
    Rests {
        /// Its reference.
        order_ref: u64,
        /// Its price.
        price: u32,
        /// Its open shares.
        shares: u32,
    },
    /// The order is gone from the book (executed in full, cancelled in full, deleted, or
    /// replaced).
    Gone {
        /// Its reference.
        order_ref: u64,
    },
}

/// Resting orders of the watched symbols a desk's book holds before it grows, by default
/// (`trader --book-orders`): its order table is 32 bytes a slot at most half full, so this is
/// 4 MiB, out of a small guest's cache for a book of one or two symbols.
pub const WATCH_LIVE_ORDERS: usize = 1 << 16;

/// Books `fill` into `ledger`.
#[inline]
fn book(ledger: &mut Ledger, (side, price): (EngineSide, f64)) {
    ledger.fill(side, price);
}

impl Desk {
    /// A desk running the strategy `params` on trades of `stock` (all stocks if `None`),
    /// sampling the engine's time every [`DEFAULT_ENGINE_SAMPLE_EVERY`] ticks.
    pub fn new(params: Params, stock: Option<Stock>) -> Self {
        Desk {
            strategy: Strategy::new(params),
            stock,
            token: 0,
            engine: Latency::new(),
            engine_every: DEFAULT_ENGINE_SAMPLE_EVERY,
            engine_countdown: 0,
            book_work: Latency::new(),
            book_countdown: 0,
            book_pending: None,
            ledger: Ledger::new(),
            booked: 0,
            last_price: None,
            pending: Pending::default(),
            watch: None,
            firing: None,
        }
    }

    /// Reads a full-depth feed: keeps the book of `symbols` and the stock traded (which must
    /// be named), each resolved through the feed's Stock Directory, and trades the stock's
    /// book prints.
    ///
    /// # Errors
    /// The desk trades every stock (a book names its symbols), or the watch refuses the list.
    pub fn with_symbols(self, symbols: &[Stock]) -> Result<Self, WatchError> {
        self.with_symbols_sized(symbols, WATCH_LIVE_ORDERS)
    }

    /// [`Desk::with_symbols`], the book sized for `live_orders` resting orders before it
    /// grows.
    ///
    /// # Errors
    /// As [`Desk::with_symbols`].
    pub fn with_symbols_sized(
        mut self,
        symbols: &[Stock],
        live_orders: usize,
    ) -> Result<Self, WatchError> {
        let Some(stock) = self.stock else {
            return Err(WatchError::NoSymbols);
        };
        let mut all = vec![stock];
        all.extend_from_slice(symbols);
        self.watch = Some(Box::new(Watch::new(&all, live_orders)?));
        Ok(self)
    }

    /// Keeps the firing set's changes for the trader to take ([`Desk::take_firing`]): every
    /// order of the traded stock that comes to rest, changes its open shares, or leaves its
    /// book. For the book trigger.
    pub fn track_firing_set(&mut self) {
        self.firing = Some(Vec::with_capacity(64));
    }

    /// Hands each firing-set change since the last call to `f`, in the order they happened.
    pub fn take_firing(&mut self, mut f: impl FnMut(Resting)) {
        if let Some(changes) = &mut self.firing {
            for c in changes.drain(..) {
                f(c);
            }
        }
    }

    /// The watched symbols' book, on a full-depth feed.
    pub fn watch(&self) -> Option<&Watch> {
        self.watch.as_deref()
    }

    /// Samples the engine's time on one tick in `every` (0: never).
    pub fn set_engine_sampling(&mut self, every: u32) {
        self.engine_every = every;
        self.engine_countdown = 0;
        self.book_countdown = 0;
    }

    /// The stock traded, if one.
    pub fn stock(&self) -> Option<Stock> {
        self.stock
    }

    /// The token of the last order made (0: none yet).
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The strategy (for the trigger's arm).
    pub(crate) fn strategy_mut(&mut self) -> &mut Strategy {
        &mut self.strategy
    }

    /// The engine's sampled times.
    pub fn engine(&self) -> &Latency {
        &self.engine
    }

    /// The book's sampled work per message, with `--symbols`: the parse and apply of one
    /// watched message in the engine's sampling rate, of the types that can't print (adds,
    /// cancels, deletes, replaces, the directory and the rest), two clock reads around it.
    /// A print's own book work is inside its tick-to-trade, which the clock reads would
    /// enter; unwatched messages cost a locate check, too short to time this way.
    pub fn book_work(&self) -> &Latency {
        &self.book_work
    }

    /// Message `seq` of the feed, new and in order: a tick if it prints the stock traded, and
    /// the order the strategy makes of it through `emit` (which says whether it went out).
    /// `clock` is read only on the ticks whose engine time is sampled.
    #[inline(always)]
    pub fn on_message(
        &mut self,
        seq: u64,
        message: &[u8],
        c: &mut Counters,
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
    ) {
        if self.watch.is_some() {
            return self.on_book_message(seq, message, c, clock, emit);
        }
        match itch::parse(message) {
            Ok(Message::Trade(t)) => {
                if self.stock.is_some_and(|s| s != t.stock) {
                    c.other_stock += 1;
                    return;
                }
                self.on_tick(seq, t.stock, t.price, c, clock, emit);
            }
            // Every other well-formed ITCH message: not a tick for this desk.
            Ok(_) => c.other_messages += 1,
            Err(_) => c.malformed_messages += 1,
        }
    }

    /// [`Desk::on_message`] on a full-depth feed: the watched symbols' messages to their book,
    /// the stock's prints to the strategy, the rest dropped unread.
    #[inline(always)]
    fn on_book_message(
        &mut self,
        seq: u64,
        message: &[u8],
        c: &mut Counters,
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
    ) {
        let Some(watch) = self.watch.as_deref_mut() else {
            return;
        };
        if !watch.wants(message) {
            c.unwatched_messages += 1;
            return;
        }
        // One watched message in `engine_every` is timed, never one that can print.
        let sample = self.book_countdown == 0
            && self.engine_every > 0
            && !matches!(message.first(), Some(b'E' | b'C' | b'P'));
        let t0 = if sample {
            self.book_countdown = self.engine_every - 1;
            clock()
        } else {
            self.book_countdown = self.book_countdown.saturating_sub(1);
            0
        };
        let msg = match itch::parse(message) {
            Ok(m) => m,
            Err(_) => {
                c.malformed_messages += 1;
                return;
            }
        };
        let event = watch.apply(&msg);
        if sample {
            let ns = clock().saturating_sub(t0);
            if let Some(earlier) = self.book_pending.replace(ns) {
                self.book_work.record(earlier);
            }
        }
        c.book_messages += 1;
        // Refused messages too: an overfill deletes the order it names.
        if let Some(changes) = &mut self.firing
            && let Some(locate) = self.stock.and_then(|s| watch.locate(s))
            && locate == msg.stock_locate()
        {
            firing_changes(watch, locate, &msg, changes);
        }
        match event {
            Event::Print(p) => {
                let Some(stock) = self.stock.filter(|&s| watch.locate(s) == Some(p.locate)) else {
                    c.other_stock += 1;
                    return;
                };
                self.on_tick(seq, stock, p.price, c, clock, emit);
            }
            Event::Refused(_) => c.book_refused += 1,
            _ => c.other_messages += 1,
        }
    }

    /// A print of `stock` at `price`, message `seq`: the strategy's tick.
    #[inline(always)]
    fn on_tick(
        &mut self,
        seq: u64,
        stock: Stock,
        price4: Price4,
        c: &mut Counters,
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
    ) {
        c.ticks += 1;
        let price = price4.to_f64();
        self.last_price = Some(price);
        // The between-ticks work, if the loop hasn't done it yet (the second message of a
        // packet): never inside the decision's time.
        self.strategy.prepare();
        let signal = if self.engine_countdown == 0 && self.engine_every > 0 {
            self.engine_countdown = self.engine_every - 1;
            let t0 = clock();
            let signal = self.strategy.on_tick(price);
            let ns = clock().saturating_sub(t0);
            self.keep_engine_sample(ns);
            signal
        } else {
            self.engine_countdown = self.engine_countdown.saturating_sub(1);
            self.strategy.on_tick(price)
        };
        if let Some(signal) = signal {
            self.token += 1;
            let order = OrderRepr {
                side: arm::order_side(signal.side),
                reverse: signal.reverse,
                shares: arm::order_shares(signal.reverse),
                token: self.token,
                tick_seq: seq,
                price: price4,
                stock,
            };
            if emit(&order) {
                c.orders += 1;
                self.keep_fill((signal.side, price));
            } else {
                c.orders_failed += 1;
            }
        }
    }

    #[inline]
    fn keep_engine_sample(&mut self, ns: u64) {
        let p = &mut self.pending;
        if let Some(slot) = p.engine.get_mut(p.engine_len) {
            *slot = ns;
            p.engine_len += 1;
        } else {
            self.engine.record(ns);
        }
    }

    /// Keeps an order that went out for the ledger (booked in tick order, after the send).
    #[inline]
    fn keep_fill(&mut self, fill: (EngineSide, f64)) {
        self.booked += 1;
        let p = &mut self.pending;
        if let Some(slot) = p.fills.get_mut(p.fills_len) {
            *slot = fill;
            p.fills_len += 1;
        } else {
            // Keeps the tick order: what waits is booked first.
            for &f in &p.fills[..p.fills_len] {
                book(&mut self.ledger, f);
            }
            p.fills_len = 0;
            book(&mut self.ledger, fill);
        }
    }

    /// Records what was kept aside: the engine samples of the packet's ticks and the bookings
    /// of its orders. Call once the packet's orders are out. Cheap when nothing waits.
    #[inline]
    pub fn settle(&mut self) {
        let p = &mut self.pending;
        for &ns in &p.engine[..p.engine_len] {
            self.engine.record(ns);
        }
        for &fill in &p.fills[..p.fills_len] {
            book(&mut self.ledger, fill);
        }
        p.engine_len = 0;
        p.fills_len = 0;
        if let Some(ns) = self.book_pending.take() {
            self.book_work.record(ns);
        }
    }

    /// Work for the next tick that doesn't depend on its price. Cheap when already done.
    #[inline]
    pub fn prepare(&mut self) {
        self.strategy.prepare();
    }

    /// The desk's own account: every order it sent, booked at the price of the tick that made
    /// it, the open position (if any) closed at the last tick price seen. Includes what
    /// [`Desk::settle`] has not recorded yet.
    pub fn account(&self) -> Account {
        let mut ledger = self.ledger;
        let p = &self.pending;
        for &fill in &p.fills[..p.fills_len] {
            book(&mut ledger, fill);
        }
        let position = ledger.position().map(|s| match s {
            EngineSide::Long => Position::Long,
            EngineSide::Short => Position::Short,
        });
        if let Some(price) = self.last_price {
            ledger.close(price);
        }
        let r = ledger.result();
        Account {
            orders: self.booked,
            trades: r.trades,
            pnl: r.pnl,
            position,
        }
    }
}

/// What `msg` (of the traded stock, at `locate`, applied to `watch`'s book, or refused by it) did
/// to the orders it names: each still resting of the stock is set with its open shares, each
/// gone (or another stock's) is out.
#[cold]
fn firing_changes(watch: &Watch, locate: u16, msg: &Message, changes: &mut Vec<Resting>) {
    let refs = match msg {
        Message::AddOrder(a) => [Some(a.order_ref), None],
        Message::AddOrderMpid(a) => [Some(a.order_ref), None],
        Message::OrderReplace(u) => [Some(u.original_ref), Some(u.new_ref)],
        Message::OrderExecuted(e) => [Some(e.order_ref), None],
        Message::OrderExecutedWithPrice(e) => [Some(e.order_ref), None],
        Message::OrderCancel(x) => [Some(x.order_ref), None],
        Message::OrderDelete(d) => [Some(d.order_ref), None],
        _ => [None, None],
    };
    let book = watch.book();
    for order_ref in refs.into_iter().flatten() {
        changes.push(match book.order(order_ref).filter(|o| o.locate == locate) {
            Some(o) => Resting::Rests {
                order_ref,
                price: o.price,
                shares: o.shares,
            },
            None => Resting::Gone { order_ref },
        });
    }
}
