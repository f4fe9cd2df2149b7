//! The tick-to-trade core every trader path shares: MoldUDP64 payload in, orders out, in two
//! halves with a typed seam between them:
//!
//! - the [`Sequencer`] ([`sequencer`]): the MoldUDP64 session, the feed [`gate`], the A/B
//!   [`lines`], [`recovery`] and the end of session. It takes (line, arrival, payload) and
//!   hands each message that is new and in order to a [`Sink`], numbered;
//! - the [`Desk`] ([`desk`]): the engine's streaming strategy on the traded stock's prints,
//!   making orders, and the trader's own ledger.
//!
//! [`Trader`] is the two wired together, with the counters both keep; the XDP path and the
//! kernel-UDP path differ only in how a payload arrives and how an order's bytes leave. Nothing
//! here allocates, logs or makes a system call: the caller passes the clock in, and it is read
//! only on the ticks whose engine time is sampled; each packet's arrival ([`Nanos`]) comes with
//! it ([`Trader::arrived`]).
//!
//! What can wait until the orders are out does: the engine-time samples and the trader's own
//! ledger bookings of a packet are kept aside by [`Trader::on_packet`] and recorded by
//! [`Trader::settle`], which the loop calls after the packet's orders left.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use affinity as _;
#[cfg(test)]
use criterion as _;

pub mod arm;
pub mod desk;
pub mod gate;
pub mod lines;
pub mod recovery;
pub mod repair;
pub mod sequencer;
pub mod stats;
pub mod time;
pub mod workload;

use engine::Params;

pub use crate::arm::NotArmed;
use results::Account;
use wire::{
    itch::{self, Price4, Side, Stock},
    moldudp64,
    order::OrderRepr,
};

use crate::stats::Latency;
pub use crate::{
    desk::Desk,
    gate::{
        DEFAULT_MAX_JUMP, DEFAULT_MAX_RATE, DEFAULT_QUIET_NS, FeedRules, ForeignSessions,
        PROFILE_MAX_BYTES, PROFILE_MAX_MESSAGES,
    },
    lines::Line,
    sequencer::{Claim, Cx, Sequencer, Sink},
    time::Nanos,
};

/// Shares per order that opens a position; a reversal sends twice this (close + open).
pub use xdp_common::LOT;

/// How many sequence numbers behind the newest one the tracker remembers, to tell a
/// duplicate from a late arrival (a power of two).
pub(crate) const SEEN_WINDOW: u64 = 1 << 16;

/// The largest packet that can be held (by the gate, or by a line waiting for its turn): more
/// than any UDP payload in a 1500-byte MTU frame and than an AF_XDP frame's 2048 bytes. A larger
/// unconfirmed packet is dropped, not held.
pub const HOLD_MAX: usize = 2048;

pub use results::TraderCounters as Counters;

/// Engine time (`on_tick`) is taken on one tick in this many by default: two clock reads on the
/// critical path of that tick, none on the others.
pub const DEFAULT_ENGINE_SAMPLE_EVERY: u32 = 64;

/// What a packet meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketOutcome {
    /// Processed (possibly nothing in it was new).
    Data,
    /// The exchange ended the session.
    EndOfSession,
}

/// The trader: a [`Sequencer`] handing the feed's messages in order to a [`Desk`], and the
/// counters both keep. The I/O loops drive it; the two halves can be driven alone too.
#[derive(Debug)]
pub struct Trader {
    /// What was counted.
    pub counters: Counters,
    sequencer: Sequencer,
    desk: Desk,
}

/// The sequencer's sink on the trader: each in-order message to the desk, with the clock and
/// the order sender of the call.
struct ToDesk<'a, C, E> {
    desk: &'a mut Desk,
    clock: &'a C,
    emit: &'a mut E,
}

impl<C: Fn() -> u64, E: FnMut(&OrderRepr) -> bool> Sink for ToDesk<'_, C, E> {
    #[inline(always)]
    fn message(&mut self, seq: u64, message: &[u8], counters: &mut Counters) {
        self.desk
            .on_message(seq, message, counters, self.clock, self.emit);
    }
}

impl Trader {
    /// A trader running the strategy `params` on trades of `stock` (all stocks if `None`),
    /// sampling the engine's time every [`DEFAULT_ENGINE_SAMPLE_EVERY`] ticks.
    pub fn new(params: Params, stock: Option<Stock>) -> Self {
        Trader {
            counters: Counters::default(),
            sequencer: Sequencer::default(),
            desk: Desk::new(params, stock),
        }
    }

    /// Samples the engine's time on one tick in `every` (the first tick, then every
    /// `every`th); 0 never reads the clock for it, 1 times every tick.
    #[must_use]
    pub fn with_engine_sampling(mut self, every: u32) -> Self {
        self.desk.set_engine_sampling(every);
        self
    }

    /// Decides which packets are the feed by `rules` (the default learns the session and the
    /// first sequence number from the traffic, and holds forward jumps over
    /// [`DEFAULT_MAX_JUMP`] until the feed was silent [`DEFAULT_QUIET_NS`], within
    /// [`DEFAULT_MAX_RATE`]: see [`gate`]).
    #[must_use]
    pub fn with_feed_rules(mut self, rules: FeedRules) -> Self {
        self.sequencer = self.sequencer.with_rules(rules);
        self
    }

    /// Queues every gap for a MoldUDP64 re-request ([`Trader::next_request`]); what comes back
    /// is counted (`recovered_messages`), not traded (see [`recovery`]), unless the feed is
    /// held at its gaps for a book ([`Trader::with_repair`]).
    #[must_use]
    pub fn with_recovery(mut self) -> Self {
        self.sequencer = self.sequencer.with_recovery();
        self
    }

    /// Holds the feed at a gap for the re-request server's answer, up to `wait_ns`, so a book
    /// sees every message in order (see [`repair`]); with [`Trader::with_recovery`], on a
    /// one-line feed.
    #[must_use]
    pub fn with_repair(mut self, wait_ns: u64) -> Self {
        self.sequencer = self.sequencer.with_repair(wait_ns);
        self
    }

    /// Takes the feed on two lines, A and B (see [`lines`]): [`Trader::on_packet_from`] says
    /// which line each packet came on, and the report counts per line. A packet past a gap
    /// waits up to `wait_ns` for the other line to fill it ([`lines::DEFAULT_WAIT_NS`]).
    #[must_use]
    pub fn with_lines(mut self, wait_ns: u64) -> Self {
        self.sequencer = self.sequencer.with_lines(wait_ns);
        self
    }

    /// Reads a full-depth feed: keeps the book of `symbols` and of the stock traded, each
    /// resolved through the feed's Stock Directory messages, and trades the stock's book
    /// prints ([`Desk::with_symbols`]). Every message is still sequenced; only the watched
    /// symbols' reach the book.
    ///
    /// # Errors
    /// The trader trades every stock, or more than [`book::watch::MAX_SYMBOLS`] are named.
    pub fn with_symbols(self, symbols: &[Stock]) -> Result<Self, book::WatchError> {
        self.with_symbols_sized(symbols, desk::WATCH_LIVE_ORDERS)
    }

    /// [`Trader::with_symbols`], the book sized for `live_orders` resting orders of the
    /// watched symbols before it grows (`book_allocations` counts what it grew).
    ///
    /// # Errors
    /// As [`Trader::with_symbols`].
    pub fn with_symbols_sized(
        mut self,
        symbols: &[Stock],
        live_orders: usize,
    ) -> Result<Self, book::WatchError> {
        self.desk = self.desk.with_symbols_sized(symbols, live_orders)?;
        Ok(self)
    }

    /// The sequencer.
    pub fn sequencer(&self) -> &Sequencer {
        &self.sequencer
    }

    /// The desk.
    pub fn desk(&self) -> &Desk {
        &self.desk
    }

    /// Engine time (`on_tick`, price in to decision out) of one tick in the sampling rate.
    pub fn engine(&self) -> &Latency {
        self.desk.engine()
    }

    /// The book's sampled work per message, with `--symbols` ([`Desk::book_work`]).
    pub fn book_work(&self) -> &Latency {
        self.desk.book_work()
    }

    /// When the first packet waiting for the other line of an A/B feed (or behind a book's
    /// gap) stops waiting, or an end of session at the feed's next number is believed on the
    /// feed's silence; `None` when nothing waits. The loop calls [`Trader::release_due`] then,
    /// if no packet came to do it.
    #[inline]
    pub fn waiting_due(&self) -> Option<Nanos> {
        self.sequencer.waiting_due()
    }

    /// Trades the packets whose wait for the other line (or a book's for the re-request
    /// server) is over by `clock`, sending their orders through `emit`; then takes an end of
    /// session at the feed's next number that the feed stayed silent after
    /// ([`PacketOutcome::EndOfSession`]: the run is over). Call [`Trader::settle`] after the
    /// orders are out.
    pub fn release_due(
        &mut self,
        now: Option<Nanos>,
        clock: impl Fn() -> u64,
        mut emit: impl FnMut(&OrderRepr) -> bool,
    ) -> PacketOutcome {
        let mut sink = ToDesk {
            desk: &mut self.desk,
            clock: &clock,
            emit: &mut emit,
        };
        let mut cx = Cx {
            counters: &mut self.counters,
            clock: &clock,
            sink: &mut sink,
        };
        self.sequencer.release_due(now, &mut cx)
    }

    /// Packets of the feed so far (messages taken in sequence, late or duplicate, or from
    /// before the join, and heartbeats): what the loop's idle timeout watches, so neither
    /// another session's stream nor garbage on the port keeps a trader alive.
    #[inline]
    pub fn feed_progress(&self) -> u64 {
        let c = &self.counters;
        c.messages
            .wrapping_add(c.heartbeats)
            .wrapping_add(c.duplicate_messages)
            .wrapping_add(c.late_messages)
            .wrapping_add(c.before_join_messages)
            .wrapping_add(c.repair_held_packets)
    }

    /// Per line of an A/B feed (A, then B) and the numbers neither delivered; settled by
    /// [`Trader::finish`]. `None` with one line.
    pub fn line_counts(&self) -> Option<([results::LineCounts; lines::LINES], u64)> {
        self.sequencer.line_counts()
    }

    /// The next MoldUDP64 re-request to send at `now`, if one is due: paced, bounded and
    /// retried as [`recovery`] says. Call between packets, never inside one's critical path.
    pub fn next_request(&mut self, now: Nanos) -> Option<moldudp64::Request> {
        self.sequencer.next_request(now, &mut self.counters)
    }

    /// The arrival (on the monotonic clock every packet's is read from) of the packet the
    /// next [`Trader::on_packet_from`] call processes: the I/O loop calls it right before
    /// each. The feed's silence before a jump or a lost tail is measured on these times
    /// ([`gate`]); a trader never told believes neither without an A/B copy. A store.
    #[inline(always)]
    pub fn arrived(&mut self, rx: Nanos) {
        self.sequencer.arrived(rx);
    }

    /// The arrival ([`Trader::arrived`]) of the last packet that advanced the feed in
    /// sequence (traded in range: at or past the next number, within `max_jump`, or a jump's
    /// packets when believed); `None` before any.
    pub fn last_feed(&self) -> Option<Nanos> {
        self.sequencer.last_feed()
    }

    /// The feed's session, once known.
    pub fn session(&self) -> Option<moldudp64::Session> {
        self.sequencer.session()
    }

    /// The sequence number the trader expects next (meaningful once the feed is known).
    #[inline]
    pub fn next_seq(&self) -> u64 {
        self.sequencer.next_seq()
    }

    /// Keeps the firing set's changes for the book trigger ([`Trader::take_firing`]).
    #[must_use]
    pub fn tracking_firing_set(mut self) -> Self {
        self.desk.track_firing_set();
        self
    }

    /// Hands each change to the firing set (the traded stock's resting orders) since the last
    /// call to `f`, in order.
    pub fn take_firing(&mut self, f: impl FnMut(desk::Resting)) {
        self.desk.take_firing(f);
    }

    /// The traded stock's locate on a full-depth feed, once its Stock Directory named it.
    pub fn traded_locate(&self) -> Option<u16> {
        self.desk.watch()?.locate(self.desk.stock()?)
    }

    /// What the driver filter is armed with, once it may be: the confirmed session and the
    /// book's locate map (`--symbols`, every symbol resolved). `None` before (nothing is
    /// filtered), and always on the ticker.
    pub fn filter_locates(
        &self,
    ) -> Option<(moldudp64::Session, &[u64; book::watch::LOCATE_WORDS])> {
        let watch = self.desk.watch()?;
        if watch.unresolved() > 0 {
            return None;
        }
        self.sequencer.first_seq()?;
        Some((self.sequencer.session()?, watch.locates()))
    }

    /// The first sequence number the trader took, once known.
    pub fn first_seq(&self) -> Option<u64> {
        self.sequencer.first_seq()
    }

    /// Sessions other than the feed's that sent packets, with their counts.
    pub fn foreign_sessions(&self) -> &ForeignSessions {
        self.sequencer.foreign_sessions()
    }

    /// The run is over: packets still held for want of a packet to confirm them are counted
    /// (`unconfirmed_packets` before the feed was known; forward jumps are already in
    /// `suspect_sequence`). Call once, after the loop.
    pub fn finish(&mut self) {
        self.sequencer.finish(&mut self.counters);
        if let Some(w) = self.desk.watch() {
            self.counters.book_allocations = w.book().allocations_after_start();
        }
    }

    /// Records what [`Trader::on_packet`] kept aside: the engine samples of its ticks and the
    /// bookings of its orders. Call once the packet's orders are out. Cheap when nothing waits.
    #[inline]
    pub fn settle(&mut self) {
        self.desk.settle();
    }

    /// The trader's own account: every order it sent, booked at the price of the tick that
    /// made it, the open position (if any) closed at the last tick price seen. Includes what
    /// [`Trader::settle`] has not recorded yet.
    pub fn account(&self) -> Account {
        self.desk.account()
    }

    /// Processes one MoldUDP64 packet of line A; `emit` is called for each order, in tick
    /// order, and returns whether the order went out. `clock` reads the time, only on the
    /// ticks whose engine time is sampled. The samples and the ledger's bookings wait for
    /// [`Trader::settle`].
    ///
    /// A packet that the [`gate`] holds sends nothing now; when a later packet confirms it,
    /// that call trades the held packet first, then its own.
    #[inline]
    pub fn on_packet(
        &mut self,
        payload: &[u8],
        clock: impl Fn() -> u64,
        emit: impl FnMut(&OrderRepr) -> bool,
    ) -> PacketOutcome {
        self.on_packet_from(Line::A, payload, clock, emit)
    }

    /// [`Trader::on_packet`] for a packet that came on `line` (of an A/B feed, or an answer of
    /// the re-request server, taken only for numbers the trader asked for and never traded:
    /// see [`recovery`]). The I/O loop tells the trader the packet's arrival first
    /// ([`Trader::arrived`]). The sequencing rules, end of session included, are
    /// [`Sequencer::on_packet`]'s.
    #[inline]
    pub fn on_packet_from(
        &mut self,
        line: Line,
        payload: &[u8],
        clock: impl Fn() -> u64,
        emit: impl FnMut(&OrderRepr) -> bool,
    ) -> PacketOutcome {
        self.on_packet_claimed(line, payload, None, clock, emit)
    }

    /// [`Trader::on_packet_from`] for a packet carrying a driver filter's claim: the numbers
    /// the XDP program dropped before it, in a run from `claim`, are taken as received and
    /// empty ([`Sequencer::on_packet_claimed`] says when a claim is taken).
    #[inline]
    pub fn on_packet_claimed(
        &mut self,
        line: Line,
        payload: &[u8],
        claim: Option<Claim>,
        clock: impl Fn() -> u64,
        mut emit: impl FnMut(&OrderRepr) -> bool,
    ) -> PacketOutcome {
        let mut sink = ToDesk {
            desk: &mut self.desk,
            clock: &clock,
            emit: &mut emit,
        };
        let mut cx = Cx {
            counters: &mut self.counters,
            clock: &clock,
            sink: &mut sink,
        };
        self.sequencer
            .on_packet_claimed(line, payload, claim, &mut cx)
    }

    /// Work for the next tick that doesn't depend on its price; call after the orders of the
    /// last packet are out. Cheap when already done.
    #[inline]
    pub fn prepare(&mut self) {
        self.desk.prepare();
    }
}

/// Builds the ITCH Trade message for one tick (synthetic feeds).
pub fn trade_message(seq: u64, stock: Stock, price: Price4, timestamp_ns: u64) -> itch::TradeRepr {
    itch::TradeRepr {
        stock_locate: 1,
        tracking_number: 0,
        timestamp: itch::Timestamp::from_nanos(timestamp_ns % itch::Timestamp::MAX.nanos())
            .unwrap_or(itch::Timestamp::MAX),
        order_ref: seq,
        side: Side::Buy,
        shares: LOT,
        stock,
        price,
        match_number: seq,
    }
}

#[cfg(test)]
mod filter_tests;
#[cfg(test)]
mod firing_tests;
#[cfg(test)]
mod gate_tests;
#[cfg(test)]
mod repair_tests;

#[cfg(test)]
mod tests {
    use wire::moldudp64::{PacketBuilder, Session};

    use super::*;

    fn stock() -> Stock {
        Stock::new("SYNTH").unwrap()
    }

    fn trade(seq: u64) -> [u8; itch::trade::LEN] {
        let mut m = [0u8; itch::trade::LEN];
        trade_message(
            seq,
            stock(),
            Price4::from_f64_quantised(100.0).unwrap(),
            seq,
        )
        .emit_into(&mut m)
        .unwrap();
        m
    }

    fn packet(seq: u64, blocks: &[&[u8]]) -> Vec<u8> {
        let mut buf = [0u8; 1500];
        let mut b =
            PacketBuilder::new(&mut buf, Session::new(paths::market::SESSION).unwrap(), seq)
                .unwrap();
        for m in blocks {
            b.push(m).unwrap();
        }
        b.finish().to_vec()
    }

    fn feed(t: &mut Trader, p: &[u8]) {
        t.on_packet(p, || 0, |_| true);
    }

    /// A trader that knows where the feed is (session and first sequence number pinned): these
    /// tests are about sequence tracking, not learning the feed (`gate_tests`).
    pub(crate) fn trader() -> Trader {
        Trader::new(Params::from_n(6).unwrap(), Some(stock())).with_feed_rules(FeedRules {
            session: Some(Session::new(paths::market::SESSION).unwrap()),
            first_seq: Some(1),
            ..FeedRules::default()
        })
    }

    /// A generated day as the exchange packs it: up to `per` messages a packet, from 1.
    pub(crate) fn market_packets(config: market::Config, per: u16) -> Vec<Vec<u8>> {
        let session = Session::new(paths::market::SESSION).unwrap();
        let mut out = Vec::new();
        let (mut buf, mut m) = ([0u8; 1500], [0u8; 64]);
        let mut b = PacketBuilder::new(&mut buf, session, 1).unwrap();
        for (seq, msg) in (1..).zip(market::Generator::new(config).unwrap()) {
            let n = msg.emit_into(&mut m).unwrap();
            if b.count() == per || b.remaining() < n + 2 {
                out.push(b.finish().to_vec());
                b = PacketBuilder::new(&mut buf, session, seq).unwrap();
            }
            b.push(&m[..n]).unwrap();
        }
        if !b.is_empty() {
            out.push(b.finish().to_vec());
        }
        out
    }

    /// Every order a trader sends on `packets`, with its account.
    pub(crate) fn orders_of(t: Trader, packets: &[Vec<u8>]) -> (Vec<(u64, Side, u32)>, Trader) {
        orders_with_claims(t, packets.iter().map(|p| (p.as_slice(), None)))
    }

    /// [`orders_of`] on line A's packets, each with the driver filter's claim if it has one.
    pub(crate) fn orders_with_claims<'a>(
        mut t: Trader,
        packets: impl IntoIterator<Item = (&'a [u8], Option<Claim>)>,
    ) -> (Vec<(u64, Side, u32)>, Trader) {
        let mut orders = Vec::new();
        for (p, claim) in packets {
            t.on_packet_claimed(
                Line::A,
                p,
                claim,
                || 0,
                |o| {
                    orders.push((o.token, o.side, o.price.0));
                    true
                },
            );
            t.settle();
        }
        (orders, t)
    }

    /// The full-depth day's SYNTH prints as Add Order + Order Executed (no price on the print:
    /// only a book knows it) trade exactly as the ticker of the same seed: the same orders, in
    /// order, at the same prices, and the same account to the bit.
    #[test]
    fn the_books_work_is_sampled_at_the_engines_rate_on_messages_that_cant_print() {
        let config = market::Config {
            per_print: 8,
            symbols: 200,
            ..market::Config::new(9, 500)
        };
        let day = market_packets(config, 16);
        let tick = std::cell::Cell::new(0u64);
        // Each clock read 10 ns after the last: every sample is exactly one read apart.
        let clock = || {
            tick.set(tick.get() + 10);
            tick.get()
        };
        let mut t = trader().with_symbols(&[]).unwrap().with_engine_sampling(4);
        for p in &day {
            t.on_packet(p, clock, |_| true);
            t.settle();
        }
        let (w, c) = (t.book_work(), t.counters);
        // One in four of the watched messages, the first the first (fewer: a print whose
        // turn it is passes it to the next that can't print).
        let prints = c.ticks;
        assert!(
            (w.len() - 1) * 4 < c.book_messages
                && w.len() * 4 + 4 >= (c.book_messages - prints) / 2,
            "{} samples of {} book messages",
            w.len(),
            c.book_messages
        );
        assert_eq!(
            w.summary().max_us,
            0.01,
            "two reads around each, nothing else"
        );
        let mut none = trader().with_symbols(&[]).unwrap().with_engine_sampling(0);
        for p in &day {
            none.on_packet(p, || 0, |_| true);
        }
        assert_eq!(none.book_work().len(), 0, "sampling 0 never times the book");
    }

    #[test]
    fn a_book_desk_on_the_full_depth_day_trades_as_the_ticker_of_its_seed() {
        const BARS: usize = 3_000;
        let config = market::Config {
            per_print: 8,
            symbols: 200,
            ..market::Config::new(42, BARS)
        };
        let day = market_packets(config, 16);
        let ticker: Vec<Vec<u8>> = engine::data::gbm(42, BARS)
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let price = Price4::from_f64_quantised(c).unwrap();
                let mut m = [0u8; itch::trade::LEN];
                trade_message(i as u64 + 1, stock(), price, i as u64)
                    .emit_into(&mut m)
                    .unwrap();
                packet(i as u64 + 1, &[&m])
            })
            .collect();
        let (want, plain) = orders_of(trader(), &ticker);
        let book_trader = trader().with_symbols(&[]).unwrap();
        let (got, t) = orders_of(book_trader, &day);
        assert!(want.len() > 100, "the strategy trades: {}", want.len());
        assert_eq!(got, want);
        let (a, b) = (t.account(), plain.account());
        assert_eq!((a.orders, a.pnl.to_bits()), (b.orders, b.pnl.to_bits()));
        let c = t.counters;
        assert_eq!(c.ticks, BARS as u64, "{c:?}");
        assert_eq!(
            (c.book_refused, c.malformed_messages, c.gap_messages),
            (0, 0, 0)
        );
        // Nearly all of the day is other symbols', dropped unread.
        assert!(c.unwatched_messages > 7 * BARS as u64, "{c:?}");
        assert_eq!(c.messages, c.unwatched_messages + c.book_messages);
        let watch = t.desk().watch().unwrap();
        assert_eq!(watch.unresolved(), 0);
        assert_eq!(
            watch.book().live_orders(),
            0,
            "every SYNTH add was executed"
        );
        // The ticker desk reads the same day's Add + Execute as no tick at all.
        let (none, _) = orders_of(trader(), &day);
        assert!(none.is_empty());
    }

    /// A trader that joins after the Stock Directory never learns its stock's locate: it
    /// sequences everything, books and trades nothing, and says so.
    #[test]
    fn a_book_desk_joined_after_the_directory_trades_nothing_and_says_why() {
        let config = market::Config {
            per_print: 8,
            symbols: 50,
            ..market::Config::new(7, 500)
        };
        let day = market_packets(config, 16);
        let t = Trader::new(Params::from_n(6).unwrap(), Some(stock()))
            .with_symbols(&[])
            .unwrap();
        // Joins at the 20th packet, past the directory; learns the feed there.
        let (orders, t2) = orders_of(t, &day[20..]);
        assert!(orders.is_empty());
        let c = t2.counters;
        assert!(c.messages > 1_000, "{c:?}");
        assert_eq!((c.ticks, c.book_messages), (0, 0), "{c:?}");
        assert_eq!(c.unwatched_messages, c.messages);
        assert_eq!(t2.desk().watch().unwrap().unresolved(), 1);
    }

    #[test]
    fn framing_lies_consume_no_sequence_numbers() {
        let mut t = trader();
        let good = trade(1);
        // Count says 5, one block: would claim 100..105.
        let mut high = packet(100, &[&good]);
        high[18..20].copy_from_slice(&5u16.to_be_bytes());
        // Count says 1, two blocks: trailing bytes.
        let mut low = packet(1, &[&good, &good]);
        low[18..20].copy_from_slice(&1u16.to_be_bytes());
        // A block length running past the end.
        let mut overrun = packet(2, &[&good]);
        overrun[20..22].copy_from_slice(&200u16.to_be_bytes());
        // A cut length prefix after the first block.
        let mut cut = packet(3, &[&good]);
        cut[18..20].copy_from_slice(&2u16.to_be_bytes());
        cut.push(0);
        for p in [&high, &low, &overrun, &cut] {
            feed(&mut t, p);
        }
        assert_eq!(t.counters.malformed_framing, 4);
        for seq in 1..=3 {
            feed(&mut t, &packet(seq, &[&trade(seq)]));
        }
        let c = t.counters;
        assert_eq!(c.ticks, 3, "{c:?}");
        assert_eq!(c.gap_messages + c.late_messages + c.duplicate_messages, 0);
        assert_eq!(c.messages, 3);
    }

    /// A packet framed soundly but not as the feed sends (an unknown type, a message cut
    /// short) is off the feed's profile: held as a jump is, never traded on its own word, so
    /// the feed's real packets at its numbers trade as if it never came.
    #[test]
    fn an_itch_lie_off_the_profile_is_held_and_moves_nothing() {
        let mut t = trader();
        let unknown = [b'z'; 44];
        let short = &trade(2)[..43];
        feed(&mut t, &packet(1, &[&unknown, short, &trade(3)]));
        let c = t.counters;
        assert_eq!(
            (c.off_profile, c.suspect_sequence, c.ticks, c.messages),
            (1, 1, 0, 0),
            "{c:?}"
        );
        for seq in 1..=4 {
            feed(&mut t, &packet(seq, &[&trade(seq)]));
        }
        let c = t.counters;
        assert_eq!(
            (c.ticks, c.gap_messages, c.duplicate_messages),
            (4, 0, 0),
            "{c:?}"
        );
        // Larger than one frame: off the profile too, whatever it holds.
        let five = trade(5);
        let big: Vec<&[u8]> = std::iter::repeat_n(&five[..], 32).collect();
        feed(&mut t, &packet(5, &big));
        assert_eq!((t.counters.off_profile, t.counters.ticks), (2, 4));
    }

    /// `packet(seq, blocks)` with zero-length blocks after block `at` (the builder refuses
    /// them), its count set to `count`.
    fn with_empty_blocks(
        seq: u64,
        blocks: &[&[u8]],
        at: usize,
        empty: usize,
        count: u16,
    ) -> Vec<u8> {
        let mut p = packet(seq, &blocks[..at]);
        p.extend(std::iter::repeat_n(0u8, 2 * empty));
        for b in &blocks[at..] {
            p.extend_from_slice(&(b.len() as u16).to_be_bytes());
            p.extend_from_slice(b);
        }
        p[18..20].copy_from_slice(&count.to_be_bytes());
        p
    }

    #[test]
    fn an_empty_block_is_malformed_framing_and_consumes_no_number() {
        let mut t = trader();
        // A trade, an empty block, a trade: numbers 1..=3 if it were taken.
        let one_empty = with_empty_blocks(1, &[&trade(1), &trade(3)], 1, 1, 3);
        // Nothing but length prefixes: would swallow 1..=5.
        let all_empty = with_empty_blocks(1, &[], 0, 5, 5);
        // Empty blocks and a count that disagrees with them (trailing bytes).
        let count_lies = with_empty_blocks(1, &[&trade(1)], 1, 2, 2);
        for p in [&one_empty, &all_empty, &count_lies] {
            feed(&mut t, p);
        }
        let c = t.counters;
        assert_eq!(
            (
                c.malformed_framing,
                c.malformed_messages,
                c.messages,
                c.ticks
            ),
            (3, 0, 0, 0),
            "{c:?}"
        );
        assert_eq!(t.next_seq(), 1, "no number consumed");
        // The real ticks 1..=3 are traded, none taken as a duplicate.
        for seq in 1..=3 {
            feed(&mut t, &packet(seq, &[&trade(seq)]));
        }
        let c = t.counters;
        assert_eq!(
            (c.ticks, c.duplicate_messages, c.gap_messages),
            (3, 0, 0),
            "{c:?}"
        );
    }

    #[test]
    fn gaps_late_arrivals_and_duplicates_are_told_apart() {
        let mut t = trader();
        for seq in [1, 4, 2, 4, 2, 5, 3] {
            feed(&mut t, &packet(seq, &[&trade(seq)]));
        }
        let c = t.counters;
        // 2 and 3 skipped when 4 came; both arrived later (late, not traded); 4 and 2 twice.
        assert_eq!(c.gap_messages, 2, "{c:?}");
        assert_eq!(c.late_messages, 2, "{c:?}");
        assert_eq!(c.duplicate_messages, 2, "{c:?}");
        assert_eq!(c.ticks, 3, "{c:?}");
        // Lost = skipped and never seen later.
        assert_eq!(c.gap_messages - c.late_messages, 0);
    }

    #[test]
    fn end_of_session_reveals_a_lost_tail() {
        let mut t = trader();
        t.arrived(Nanos(10_000_000));
        feed(&mut t, &packet(1, &[&trade(1)]));
        let mut eos = packet(4, &[]);
        eos[18..20].copy_from_slice(&moldudp64::END_OF_SESSION.to_be_bytes());
        // Past the feed: a lost tail or a lie, believed when the exchange repeats it after the
        // feed stopped (the lab's exchange repeats it 2 ms apart).
        t.arrived(Nanos(10_100_000));
        assert_eq!(t.on_packet(&eos, || 0, |_| true), PacketOutcome::Data);
        assert_eq!(t.counters.suspect_sequence, 1);
        t.arrived(Nanos(12_100_000));
        assert_eq!(
            t.on_packet(&eos, || 0, |_| true),
            PacketOutcome::EndOfSession
        );
        assert_eq!(t.counters.gap_messages, 2, "2 and 3 never came");
        assert_eq!(t.counters.suspect_sequence, 0, "confirmed");
    }

    /// An end of session at the feed's next number is believed on its repeat after the feed
    /// stopped, or on the feed's silence after it (`release_due`), never while the feed flows
    /// (a forger's end between two real packets costs nothing); one behind the feed or past
    /// it, never on its own.
    #[test]
    fn an_end_of_session_at_the_next_number_ends_on_its_repeat_or_silence_and_one_elsewhere_never()
    {
        const MS: u64 = 1_000_000;
        let eos = |n: u64| {
            let mut e = packet(n, &[]);
            e[18..20].copy_from_slice(&moldudp64::END_OF_SESSION.to_be_bytes());
            e
        };
        // Before the feed ever advanced: the wait for it to open is no silence after an end.
        let mut t = trader();
        t.arrived(Nanos(MS));
        assert_eq!(t.on_packet(&eos(1), || 0, |_| true), PacketOutcome::Data);
        assert!(
            t.waiting_due().is_none(),
            "one forged end before the feed: no timer"
        );
        for repeat in [true, false] {
            let mut t = trader();
            t.arrived(Nanos(10 * MS));
            feed(&mut t, &packet(1, &[&trade(1)]));
            for lie in [1, 7, 1 << 40] {
                assert_eq!(t.on_packet(&eos(lie), || 0, |_| true), PacketOutcome::Data);
            }
            assert_eq!(t.counters.suspect_sequence, 3);
            // A forged end at the next number while the feed flows: the feed's next packet
            // goes past it, and nothing ends on the silence the forger hoped for.
            t.arrived(Nanos(10 * MS + 100));
            assert_eq!(t.on_packet(&eos(2), || 0, |_| true), PacketOutcome::Data);
            assert_eq!(t.counters.suspect_sequence, 4);
            t.arrived(Nanos(10 * MS + 200));
            feed(&mut t, &packet(2, &[&trade(2)]));
            assert_eq!(t.counters.ticks, 2, "the feed goes on");
            assert!(t.waiting_due().is_none(), "the feed passed the forged end");
            assert_eq!(
                t.release_due(Some(Nanos(20 * MS)), || 0, |_| true),
                PacketOutcome::Data
            );
            // The real end: once, then (repeated 2 ms on, or) silence.
            t.arrived(Nanos(10 * MS + 300));
            assert_eq!(t.on_packet(&eos(3), || 0, |_| true), PacketOutcome::Data);
            let due = t
                .waiting_due()
                .expect("an end the feed's silence may confirm");
            assert_eq!(due, Nanos(11 * MS + 300));
            // A forger's end one past it doesn't displace it.
            t.arrived(Nanos(10 * MS + 400));
            assert_eq!(t.on_packet(&eos(4), || 0, |_| true), PacketOutcome::Data);
            assert_eq!(t.waiting_due(), Some(due), "the real end's claim stands");
            assert_eq!(
                t.release_due(None, || 0, |_| true),
                PacketOutcome::Data,
                "not on a turn that took packets"
            );
            assert_eq!(
                t.release_due(Some(Nanos(due.ns() - 1)), || 0, |_| true),
                PacketOutcome::Data,
                "not before the feed was silent a full quiet_ns"
            );
            let out = if repeat {
                t.arrived(Nanos(12 * MS + 300));
                t.on_packet(&eos(3), || 0, |_| true)
            } else {
                t.release_due(Some(due), || 0, |_| true)
            };
            assert_eq!(out, PacketOutcome::EndOfSession, "repeat: {repeat}");
            assert_eq!(t.counters.gap_messages, 0);
            assert_eq!(
                t.counters.suspect_sequence, 5,
                "the real end's claim taken back"
            );
        }
    }
}
