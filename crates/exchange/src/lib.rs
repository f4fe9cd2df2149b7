//! The exchange side of the lab as a library: what the `replay` binary drives (the program
//! itself is [`replay`]), its sockets ([`exchange_io`]) and the feeds it replays ([`feed`]).
//!
//! [`Exchange`] is sans-IO (quiche's model): it is told what went out and when, and what came
//! back and when, and answers with the verdict. It knows the schedule (sequence number → send
//! time, price per tick), matches orders to ticks, books fills with the engine's own
//! [`Ledger`](engine::Ledger) and checks parity with the batch backtest; it never reads a clock
//! or touches a socket, so all of that is tested without a lab.
//!
//! [`Driver`] is the I/O half: open-loop pacing, the drain and the end of session, over any
//! [`Port`] and [`Clock`] ([`ExchangeIo`](crate::exchange_io::ExchangeIo) and [`Monotonic`] in
//! the lab).
#![forbid(unsafe_code)]

use engine::{ComboResult, Params};
use paths::Expect;
use results::Parity;
use wire::itch::{Side, Stock};

use trader_core::stats::Latency;

use crate::feed::{Feed, PacketMeta};
pub use burst::Burst;

mod burst;
#[cfg(feature = "io")]
pub mod exchange_io;
pub mod feed;
pub mod gateway;
mod pacing;
mod parity;
pub mod replay;
pub mod retransmit;
mod schedule;
mod span;
pub mod stream;
#[cfg(test)]
mod tests;

#[cfg(feature = "io")]
pub use pacing::Monotonic;
pub use pacing::{
    Clock, Driver, Multiplier, Outgoing, Pace, Port, Prebuilt, Progress, READ_AHEAD_NS, Rate,
    SendLoop,
};
pub use schedule::Schedule;

/// An order the trader should send: the strategy's signal on a tick (or, for
/// [`Expect::Every`], every tick).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectedOrder {
    /// The tick's sequence number.
    pub seq: u64,
    /// The side the order should have.
    pub side: Side,
}

/// An order taken: the first one for its tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fill {
    /// The tick it answers.
    pub seq: u64,
    /// Its side.
    pub side: Side,
    /// Its REVERSE flag: the trader says a position was open.
    pub reverse: bool,
}

/// What the orders that came back were.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OrderCounts {
    /// Taken: the first order for a tick that went out.
    pub received: u64,
    /// For a tick that never went out (or is not in the feed).
    pub unknown_tick: u64,
    /// A second order for the same tick: counted, not booked.
    pub duplicate: u64,
    /// Taken, but its share count disagrees with its own REVERSE flag (one lot opens, two
    /// reverse: what the trader sends).
    pub shares_mismatch: u64,
    /// Taken, but for another stock than the one traded.
    pub stock_mismatch: u64,
    /// Bytes that are not an order.
    pub malformed: u64,
    /// Taken, but the price is not its tick's.
    pub price_mismatch: u64,
    /// Taken, but its REVERSE flag disagrees with the book (a position was or wasn't open).
    /// Known once the fills are booked ([`Exchange::settle`]).
    pub reverse_mismatch: u64,
    /// Taken, but stamped on arrival before its tick was due: the arrival stamp's clock and
    /// the schedule's disagree by more than the path takes (the kernel's real-time stamp
    /// converted to the monotonic clock, `afxdp::clock::RealToMono`). Booked; left out of
    /// every latency figure rather than counted as 0.
    pub stamped_before_due: u64,
}

/// What one datagram's (or one OUCH message's) orders came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Took {
    /// Orders in it (well-formed or not).
    pub orders: u32,
    /// Of those, booked as fills: the first order for a tick that went out.
    pub filled: u32,
}

/// What went out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    /// Packets sent.
    pub packets: u64,
    /// Messages in them.
    pub messages: u64,
    /// Messages our own socket refused (buffer full): not sent.
    pub dropped: u64,
}

/// The end of a run: what went out, what came back, how fast, and the parity verdict.
#[derive(Debug)]
pub struct Settlement {
    /// What went out.
    pub sent: Sent,
    /// What came back.
    pub orders: OrderCounts,
    /// From each tick's scheduled send time to its order's arrival (the kernel's receive
    /// timestamp where the port has one), ns.
    pub tick_to_trade: Latency,
    /// The same, to when the replay's loop read the order: what the figure was before kernel
    /// timestamps, harness delay included.
    pub tick_to_trade_seen: Latency,
    /// From when the send loop actually started each tick's send (never before its due time)
    /// to its order's arrival: tick-to-trade without the sender's own lateness, for comparing
    /// paths whose exchange does different work between sends (an order session's answers).
    pub tick_to_trade_from_send: Latency,
    /// The harness's own delay per order: from the kernel taking it in to the replay reading it
    /// (0 where the port has no kernel timestamp).
    pub harness_delay: Latency,
    /// Order datagrams that came without an arrival stamp (counted from the replay's read).
    pub unstamped: u64,
    /// `tick_to_trade` by the tick's place in the run, in [`TENTHS`] equal parts of the feed:
    /// whether the latency grew over the run (a queue filling) or stayed level.
    pub tick_to_trade_tenths: Vec<Latency>,
    /// With `--burst`: `tick_to_trade` of the ticks due inside a burst.
    pub tick_to_trade_in_bursts: Option<Latency>,
    /// Live orders against the batch backtest.
    pub parity: Parity,
    /// When each message was scheduled to go out (for a capture of the run).
    pub schedule: Schedule,
}

/// The parts of a run `Settlement::tick_to_trade_tenths` splits tick-to-trade into.
pub const TENTHS: usize = 10;

/// The exchange's state over one run of a feed.
#[derive(Debug)]
pub struct Exchange<'f> {
    feed: &'f Feed,
    expect: Expect,
    /// The stock traded: every order must name it.
    stock: Stock,
    /// The orders the trader should send, for the ticks that went out (once sending is over).
    expected: Vec<ExpectedOrder>,
    /// The batch backtest over all of the feed's ticks.
    batch: ComboResult,
    schedule: Schedule,
    /// Per sequence number: an order for it was taken.
    answered: Vec<bool>,
    fills: Vec<Fill>,
    counts: OrderCounts,
    latency: Latency,
    latency_seen: Latency,
    /// From the send's actual start (where recorded) to the arrival: tick-to-trade without
    /// the sender's lateness.
    latency_from_send: Latency,
    /// `latency` by the tick's tenth of the feed.
    latency_tenths: Vec<Latency>,
    /// With `--burst`: the send loop's start and the bursts, and the latency of the ticks due
    /// inside one.
    bursts: Option<(u64, Burst, Latency)>,
    harness_delay: Latency,
    /// The datagram being taken: how long after the kernel took it in the replay read it.
    reading_delay_ns: u64,
    /// Order datagrams that came without an arrival stamp.
    unstamped: u64,
    sent: Sent,
    /// The sequence number after the last message put on the wire (sent or refused).
    session_end: u64,
}

impl<'f> Exchange<'f> {
    /// Ready to send `feed`, whose ticks are trades of `stock`: what the trader should answer
    /// (`expect`: the strategy `params` fed the same ticks offline, or every tick) and the
    /// batch backtest to compare with.
    ///
    /// # Errors
    /// When the backtest fails.
    pub fn new(
        feed: &'f Feed,
        params: Params,
        expect: Expect,
        stock: Stock,
    ) -> Result<Self, engine::Error> {
        let prices = feed.tick_prices();
        let mut expected = Vec::with_capacity(feed.ticks.len() / 2);
        match expect {
            Expect::Every => expected.extend(feed.ticks.iter().map(|t| ExpectedOrder {
                seq: t.seq,
                side: Side::Buy,
            })),
            Expect::Signals => {
                let mut s = engine::Strategy::new(params);
                for (t, &p) in feed.ticks.iter().zip(&prices) {
                    if let Some(sig) = s.on_tick(p) {
                        expected.push(ExpectedOrder {
                            seq: t.seq,
                            side: trader_core::arm::order_side(sig.side),
                        });
                    }
                }
            }
        }
        let batch = engine::reference::backtest(&prices, &params)?;
        let schedule = Schedule::new(feed);
        Ok(Exchange {
            feed,
            expect,
            stock,
            answered: vec![false; schedule.len()],
            fills: Vec::with_capacity(expected.len()),
            expected,
            batch,
            schedule,
            counts: OrderCounts::default(),
            latency: Latency::new(),
            latency_seen: Latency::new(),
            latency_from_send: Latency::new(),
            latency_tenths: (0..TENTHS).map(|_| Latency::new()).collect(),
            bursts: None,
            harness_delay: Latency::new(),
            reading_delay_ns: 0,
            unstamped: 0,
            sent: Sent::default(),
            session_end: feed.first_seq,
        })
    }

    /// The send loop started at `start_ns` with `burst`'s bursts: the ticks due inside one are
    /// also timed apart.
    pub(crate) fn bursts_from(&mut self, start_ns: u64, burst: Burst) {
        self.bursts = Some((start_ns, burst, Latency::new()));
    }

    /// The feed being sent.
    pub(crate) fn feed(&self) -> &'f Feed {
        self.feed
    }

    /// Packet `packet` of the feed went out, scheduled for `at_ns` (not 0).
    ///
    /// # Panics
    /// If the feed has no packet `packet` (as [`refused`](Self::refused)).
    pub fn sent(&mut self, packet: usize, at_ns: u64) {
        self.sent_paced(packet, |_| at_ns);
    }

    /// Packet `packet`'s send started at `at` (after [`Exchange::sent_paced`]): what
    /// tick-to-trade from the send counts from.
    pub fn send_started(&mut self, packet: usize, at: u64) {
        self.send_started_packet(self.feed.packets[packet], at);
    }

    /// Packet `packet` went out, its message `k` due at `due_of(k)`: with several messages per
    /// packet each is measured from its own due time (the packet leaves when its last is due).
    pub fn sent_paced(&mut self, packet: usize, due_of: impl Fn(u64) -> u64) {
        self.sent_packet(self.feed.packets[packet], due_of);
    }

    /// Our own socket refused packet `packet`: not sent, and said so, not blamed on the
    /// trader. Its sequence numbers are used all the same: the session now ends after them.
    pub fn refused(&mut self, packet: usize) {
        self.refused_packet(self.feed.packets[packet]);
    }

    /// The packet `meta` describes went out, its message `k` due at `due_of(k)` (not 0): a
    /// prebuilt feed's packet or a streamed one's, which the feed does not hold.
    pub fn sent_packet(&mut self, meta: PacketMeta, due_of: impl Fn(u64) -> u64) {
        self.session_end = meta.next_seq();
        self.schedule.mark_sent(&meta, due_of);
        self.sent.packets += 1;
        self.sent.messages += u64::from(meta.messages);
    }

    /// The send of the packet `meta` describes started at `at` (after
    /// [`Exchange::sent_packet`]).
    pub fn send_started_packet(&mut self, meta: PacketMeta, at: u64) {
        self.schedule.mark_started(&meta, at);
    }

    /// Our own socket refused the packet `meta` describes ([`Exchange::refused`]).
    pub fn refused_packet(&mut self, meta: PacketMeta) {
        self.session_end = meta.next_seq();
        self.schedule.mark_refused(&meta);
        self.sent.dropped += u64::from(meta.messages);
    }

    /// Messages sent or refused so far: where the open-loop schedule stands.
    pub(crate) fn messages_tried(&self) -> u64 {
        self.sent.messages + self.sent.dropped
    }

    /// What came back so far.
    pub fn orders(&self) -> OrderCounts {
        self.counts
    }

    /// The sequence number after the last message put on the wire: what MoldUDP64's end of
    /// session carries, so a run stopped early ends there and what it never sent is not a gap.
    pub fn session_end(&self) -> u64 {
        self.session_end
    }

    /// Takes the orders of one datagram that the kernel took in at `arrived_ns` and the replay
    /// read at `seen_ns`: tick-to-trade counts to the arrival, and the difference is the
    /// harness's own delay (a send or a preemption of the replay's thread in between).
    #[inline]
    pub fn receive_stamped(&mut self, payload: &[u8], arrived_ns: u64, seen_ns: u64) -> Took {
        self.reading_delay_ns = seen_ns.saturating_sub(arrived_ns);
        let took = self.receive(payload, arrived_ns);
        self.reading_delay_ns = 0;
        took
    }

    /// Takes the orders of one datagram that came without an arrival stamp where the port
    /// should have given one: it counts from when the replay read it, and is counted as such.
    #[inline]
    pub fn receive_unstamped(&mut self, payload: &[u8], seen_ns: u64) -> Took {
        self.unstamped += 1;
        self.receive(payload, seen_ns)
    }

    /// Takes the orders of one datagram that arrived at `now_ns` (no kernel timestamp: arrival
    /// is when the replay read it); says how many of them were booked as fills.
    #[inline]
    pub fn receive(&mut self, payload: &[u8], now_ns: u64) -> Took {
        let mut took = Took::default();
        for ord in wire::order::orders(payload) {
            took.orders += 1;
            let Ok(ord) = ord else {
                self.counts.malformed += 1;
                continue;
            };
            let Some((i, sent_at)) = self.schedule.sent_slot(ord.tick_seq) else {
                self.counts.unknown_tick += 1;
                continue;
            };
            if self.answered[i] {
                self.counts.duplicate += 1;
                continue;
            }
            took.filled += 1;
            self.answered[i] = true;
            if self.schedule.price(ord.tick_seq) != Some(ord.price) {
                self.counts.price_mismatch += 1;
            }
            if ord.stock != self.stock {
                self.counts.stock_mismatch += 1;
            }
            if ord.shares != trader_core::arm::order_shares(ord.reverse) {
                self.counts.shares_mismatch += 1;
            }
            self.fills.push(Fill {
                seq: ord.tick_seq,
                side: ord.side,
                reverse: ord.reverse,
            });
            self.counts.received += 1;
            if now_ns < sent_at {
                self.counts.stamped_before_due += 1;
                continue;
            }
            self.latency.record(now_ns - sent_at);
            if let Some(started) = self.schedule.started(i) {
                self.latency_from_send
                    .record(now_ns.saturating_sub(started.max(sent_at)));
            }
            let tenth = (i * TENTHS / self.answered.len().max(1)).min(TENTHS - 1);
            self.latency_tenths[tenth].record(now_ns.saturating_sub(sent_at));
            if let Some((start, burst, in_bursts)) = &mut self.bursts
                && burst.in_burst(sent_at.saturating_sub(*start))
            {
                in_bursts.record(now_ns - sent_at);
            }
            self.latency_seen
                .record(now_ns.saturating_sub(sent_at) + self.reading_delay_ns);
            self.harness_delay.record(self.reading_delay_ns);
        }
        took
    }

    /// Sending is over: from now on only the ticks that went out can have orders (a run
    /// stopped early, or our socket refused some). Calling it again changes nothing.
    pub fn finish_sending(&mut self) {
        if self.sent.messages != self.feed.messages {
            let schedule = &self.schedule;
            self.expected.retain(|e| schedule.sent_at(e.seq).is_some());
        }
    }

    /// Orders the trader should send (for the ticks that went out, after
    /// [`finish_sending`](Self::finish_sending)).
    pub fn expected_orders(&self) -> u64 {
        self.expected.len() as u64
    }

    /// Fewer orders taken than expected.
    pub fn awaiting_orders(&self) -> bool {
        self.counts.received < self.expected_orders()
    }

    /// Books the fills in tick order and checks parity with the backtest.
    pub fn settle(mut self) -> Settlement {
        self.finish_sending();
        self.fills.sort_unstable_by_key(|f| f.seq);
        let sent_all = self.sent.messages == self.feed.messages;
        let (live, reverse_mismatch) = parity::book(
            &self.fills,
            &self.schedule,
            parity::closing_price(self.feed, &self.schedule, sent_all),
        );
        self.counts.reverse_mismatch = reverse_mismatch;
        let verdict = parity::verdict(&parity::Evidence {
            expect: self.expect,
            expected: &self.expected,
            fills: &self.fills,
            counts: self.counts,
            sent: self.sent,
            feed_messages: self.feed.messages,
            ticks: self.feed.ticks.len() as u64,
            live,
            batch: self.batch,
        });
        Settlement {
            sent: self.sent,
            orders: self.counts,
            tick_to_trade: self.latency,
            tick_to_trade_seen: self.latency_seen,
            tick_to_trade_from_send: self.latency_from_send,
            tick_to_trade_tenths: self.latency_tenths,
            tick_to_trade_in_bursts: self.bursts.map(|(_, _, l)| l),
            harness_delay: self.harness_delay,
            unstamped: self.unstamped,
            parity: Parity {
                verdict,
                live_pnl: live.pnl,
                live_trades: live.trades,
                batch_pnl: self.batch.pnl,
                batch_trades: self.batch.trades,
                expected_orders: self.expected.len() as u64,
                first_divergence: (self.expect == Expect::Signals)
                    .then(|| parity::first_divergence(&self.expected, &self.fills))
                    .flatten(),
                explanation: verdict.to_string(),
            },
            schedule: self.schedule,
        }
    }
}
