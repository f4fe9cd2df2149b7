//! The tick-to-trade core every trader path shares: MoldUDP64 payload in, ITCH decode,
//! sequence tracking, the engine's streaming strategy, orders out.
//!
//! The XDP path and the kernel-UDP path differ only in how a payload arrives and how an
//! order's bytes leave; everything in between is this code. Nothing here allocates, logs or
//! makes a system call: the caller passes the clock in, and it is read only on the ticks whose
//! engine time is sampled; each packet's receive time comes with it ([`Trader::arrived`]).
//!
//! What can wait until the orders are out does: the engine-time samples and the trader's own
//! ledger bookings of a packet are kept aside by [`Trader::on_packet`] and recorded by
//! [`Trader::settle`], which the loop calls after the packet's orders left.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use affinity as _;
#[cfg(test)]
use criterion as _;

pub mod arm;
pub mod gate;
pub mod lines;
pub mod recovery;
pub mod stats;
pub mod workload;

use engine::{Ledger, Params, Side as EngineSide, Strategy};

pub use crate::arm::NotArmed;
use results::{Account, Position};
use wire::{
    itch::{self, Message, Price4, Side, Stock},
    moldudp64,
    order::OrderRepr,
};

pub use crate::gate::{
    DEFAULT_MAX_JUMP, DEFAULT_MAX_RATE, DEFAULT_QUIET_NS, FeedRules, ForeignSessions,
};
use crate::{
    gate::{HELD, Holding},
    lines::Lines,
    recovery::Recovery,
    stats::Latency,
};

/// Shares per order that opens a position; a reversal sends twice this (close + open).
pub use xdp_common::LOT;

/// How many sequence numbers behind the newest one the tracker remembers, to tell a
/// duplicate from a late arrival (a power of two).
pub(crate) const SEEN_WINDOW: u64 = 1 << 16;

pub use results::TraderCounters as Counters;

/// Engine time (`on_tick`) is taken on one tick in this many by default: two clock reads on the
/// critical path of that tick, none on the others.
pub const DEFAULT_ENGINE_SAMPLE_EVERY: u32 = 64;

/// `last_feed_ns` before any packet advanced the feed.
const NEVER: u64 = u64::MAX;

/// Samples and bookings one packet can keep aside for [`Trader::settle`]: more than the trades
/// a 2048-byte frame holds (44). Past it, the rest is recorded at once (never lost).
const PENDING_MAX: usize = 64;

/// What a packet meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketOutcome {
    /// Processed (possibly nothing in it was new).
    Data,
    /// The exchange ended the session.
    EndOfSession,
}

/// The trader's state: strategy, sequence tracker, counters, timing.
#[derive(Debug)]
pub struct Trader {
    strategy: Strategy,
    stock: Option<Stock>,
    /// What decides which packets are the feed.
    rules: FeedRules,
    /// The feed's session, once known (pinned, or learned and confirmed).
    session: Option<moldudp64::Session>,
    /// The first sequence number the trader took (pinned, or learned): nothing before it is
    /// late, the trader joined after it.
    base: Option<u64>,
    /// Next sequence number expected (meaningful once `base` is known).
    next_seq: u64,
    /// Packets waiting for a later one to confirm them (see [`gate`]).
    holding: Holding,
    /// Sessions seen besides the feed's.
    foreign: ForeignSessions,
    /// Gaps to ask the exchange for again (`None`: the trader doesn't ask).
    recovery: Option<Recovery>,
    /// Per-line accounting of an A/B feed (`None`: one line).
    lines: Option<Box<Lines>>,
    /// The line the packet being processed came on (0: A, 1: B; [`lines::RECOVERY`]: an
    /// answer of the re-request server).
    line: usize,
    /// An end of session past the feed's next number, not believed yet.
    end_claim: Option<EndClaim>,
    /// The receive time of the packet being processed (ns, monotonic; [`Trader::arrived`]).
    rx_ns: u64,
    /// The receive time of the last packet that advanced the feed in sequence ([`NEVER`]:
    /// none yet).
    last_feed_ns: u64,
    /// Before any packet advanced the feed: when the first jump or end claim was held, where
    /// the feed's silence counts from.
    quiet_from_ns: Option<u64>,
    seen: Box<[u64]>,
    token: u64,
    /// What was counted.
    pub counters: Counters,
    /// Engine time (`on_tick`, price in to decision out) of one tick in `engine_every`.
    pub engine: Latency,
    /// Sample the engine on one tick in this many (0: never).
    engine_every: u32,
    /// Ticks until the next sample.
    engine_countdown: u32,
    /// The trader's own book of the orders it sent, at the tick prices it saw.
    ledger: Ledger,
    /// Orders booked in `ledger`.
    booked: u64,
    /// The last tick price seen (of the stock traded): where the account closes.
    last_price: Option<f64>,
    /// What the current packet keeps aside until its orders are out.
    pending: Pending,
}

/// An end of session past the feed's next number: believed when the exchange repeats it after
/// the feed stopped (see [`Trader::on_packet_from`]).
#[derive(Debug, Clone, Copy)]
struct EndClaim {
    /// The number it claims comes after the feed's last message.
    end: u64,
    /// The feed's next number when it was (last) claimed: the feed has moved if it differs.
    feed_next: u64,
    /// The datagrams that claimed it, each counted in `suspect_sequence` until believed.
    count: u64,
}

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

/// Books `fill` into `ledger`.
#[inline]
fn book(ledger: &mut Ledger, (side, price): (EngineSide, f64)) {
    ledger.fill(side, price);
}

impl Trader {
    /// A trader running the strategy `params` on trades of `stock` (all stocks if `None`),
    /// sampling the engine's time every [`DEFAULT_ENGINE_SAMPLE_EVERY`] ticks.
    pub fn new(params: Params, stock: Option<Stock>) -> Self {
        Trader {
            strategy: Strategy::new(params),
            stock,
            rules: FeedRules::default(),
            session: None,
            base: None,
            next_seq: 1,
            holding: Holding::new(),
            foreign: ForeignSessions::default(),
            recovery: None,
            lines: None,
            line: 0,
            end_claim: None,
            rx_ns: 0,
            last_feed_ns: NEVER,
            quiet_from_ns: None,
            seen: vec![0u64; (SEEN_WINDOW / 64) as usize].into_boxed_slice(),
            token: 0,
            counters: Counters::default(),
            engine: Latency::new(),
            engine_every: DEFAULT_ENGINE_SAMPLE_EVERY,
            engine_countdown: 0,
            ledger: Ledger::new(),
            booked: 0,
            last_price: None,
            pending: Pending::default(),
        }
    }

    /// Samples the engine's time on one tick in `every` (the first tick, then every
    /// `every`th); 0 never reads the clock for it, 1 times every tick.
    #[must_use]
    pub fn with_engine_sampling(mut self, every: u32) -> Self {
        self.engine_every = every;
        self.engine_countdown = 0;
        self
    }

    /// Decides which packets are the feed by `rules` (the default learns the session and the
    /// first sequence number from the traffic, and holds forward jumps over
    /// [`DEFAULT_MAX_JUMP`] until the feed was silent [`DEFAULT_QUIET_NS`], within
    /// [`DEFAULT_MAX_RATE`]: see [`gate`]).
    #[must_use]
    pub fn with_feed_rules(mut self, rules: FeedRules) -> Self {
        self.rules = rules;
        self.session = rules.session;
        if let (Some(_), Some(first)) = (rules.session, rules.first_seq) {
            self.base = Some(first);
            self.next_seq = first;
        }
        self
    }

    /// Queues every gap for a MoldUDP64 re-request ([`Trader::next_request`]); what comes back
    /// is counted (`recovered_messages`), not traded (see [`recovery`]).
    #[must_use]
    pub fn with_recovery(mut self) -> Self {
        self.recovery = Some(Recovery::new());
        self
    }

    /// Takes the feed on two lines, A and B (see [`lines`]): [`Trader::on_packet_from`] says
    /// which line each packet came on, and the report counts per line. A packet past a gap
    /// waits up to `wait_ns` for the other line to fill it ([`lines::DEFAULT_WAIT_NS`]).
    #[must_use]
    pub fn with_lines(mut self, wait_ns: u64) -> Self {
        let mut l = Lines::new();
        l.wait_ns = wait_ns;
        self.lines = Some(Box::new(l));
        self
    }

    /// When the first packet waiting for the other line of an A/B feed stops waiting (ns on
    /// the clock given to [`Trader::on_packet`]); `None` when nothing waits. The loop calls
    /// [`Trader::release_due`] then, if no packet came to do it.
    #[inline]
    pub fn waiting_due(&self) -> Option<u64> {
        self.lines.as_ref().and_then(|l| l.head()).map(|w| w.due_ns)
    }

    /// Trades the packets whose wait for the other line is over by `clock`, sending their
    /// orders through `emit`. Call [`Trader::settle`] after the orders are out.
    pub fn release_due(
        &mut self,
        clock: impl Fn() -> u64,
        mut emit: impl FnMut(&OrderRepr) -> bool,
    ) {
        self.release(&clock, &mut emit, false);
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
    }

    /// Per line of an A/B feed (A, then B) and the numbers neither delivered; settled by
    /// [`Trader::finish`]. `None` with one line.
    pub fn line_counts(&self) -> Option<([results::LineCounts; lines::LINES], u64)> {
        self.lines.as_ref().map(|l| (l.counts, l.lost_on_both))
    }

    /// The next MoldUDP64 re-request to send at `now_ns`, if one is due: paced, bounded and
    /// retried as [`recovery`] says. Call between packets, never inside one's critical path.
    pub fn next_request(&mut self, now_ns: u64) -> Option<moldudp64::Request> {
        let session = self.session()?;
        let rec = self.recovery.as_mut()?;
        let seen = &self.seen;
        let oldest = self.next_seq.saturating_sub(SEEN_WINDOW - 1);
        let (ask, gave_up) = rec.next_request(now_ns, oldest, |s| marked(seen, s));
        let c = &mut self.counters;
        c.retransmit_gave_up = c.retransmit_gave_up.saturating_add(gave_up.0);
        let ask = ask?;
        c.retransmit_requests += 1;
        c.retransmit_requested = c.retransmit_requested.saturating_add(u64::from(ask.count));
        Some(moldudp64::Request {
            session,
            sequence: ask.sequence,
            count: ask.count,
        })
    }

    /// The receive time (ns on a monotonic clock, the same for every packet) of the packet the
    /// next [`Trader::on_packet_from`] call processes: the I/O loop calls it right before each.
    /// The feed's silence before a jump or a lost tail is measured on these times ([`gate`]);
    /// a trader never told believes neither without an A/B copy. A store, nothing more.
    #[inline(always)]
    pub fn arrived(&mut self, rx_ns: u64) {
        self.rx_ns = rx_ns;
    }

    /// The receive time ([`Trader::arrived`]) of the last packet that advanced the feed in
    /// sequence (traded in range: at or past the next number, within `max_jump`, or a jump's
    /// packets when believed); `None` before any.
    pub fn last_feed_ns(&self) -> Option<u64> {
        (self.last_feed_ns != NEVER).then_some(self.last_feed_ns)
    }

    /// The feed's session, once known.
    pub fn session(&self) -> Option<moldudp64::Session> {
        self.session.filter(|_| self.base.is_some())
    }

    /// The sequence number the trader expects next (meaningful once the feed is known).
    #[inline]
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The first sequence number the trader took, once known.
    pub fn first_seq(&self) -> Option<u64> {
        self.base
    }

    /// Sessions other than the feed's that sent packets, with their counts.
    pub fn foreign_sessions(&self) -> &ForeignSessions {
        &self.foreign
    }

    /// The run is over: packets still held for want of a packet to confirm them are counted
    /// (`unconfirmed_packets` before the feed was known; forward jumps are already in
    /// `suspect_sequence`). Call once, after the loop.
    pub fn finish(&mut self) {
        match self.base {
            None => {
                let c = &mut self.counters;
                self.holding.clear(|_| c.unconfirmed_packets += 1);
            }
            Some(base) => {
                if let Some(l) = &mut self.lines {
                    // Still waiting for the other line when the run ended: never traded.
                    self.counters.unconfirmed_packets += l.drop_waiting();
                    l.finish(base, self.next_seq);
                }
            }
        }
    }

    /// Records what [`Trader::on_packet`] kept aside: the engine samples of its ticks and the
    /// bookings of its orders. Call once the packet's orders are out. Cheap when nothing waits.
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
    }

    /// The trader's own account: every order it sent, booked at the price of the tick that
    /// made it, the open position (if any) closed at the last tick price seen. Includes what
    /// [`Trader::settle`] has not recorded yet.
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

    /// Processes one MoldUDP64 packet; `emit` is called for each order, in tick order, and
    /// returns whether the order went out. `clock` reads the time, only on the ticks whose
    /// engine time is sampled. The samples and the ledger's bookings wait for
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
        self.on_packet_from(0, payload, clock, emit)
    }

    /// [`Trader::on_packet`] for a packet that came on line `line` of an A/B feed (0: A, 1: B;
    /// [`lines::RECOVERY`]: an answer of the re-request server, taken only for numbers the
    /// trader asked for and never traded: see [`recovery`]). The I/O loop tells the trader the
    /// packet's receive time first ([`Trader::arrived`]).
    ///
    /// An end of session carries the number after the feed's last message. At the feed's next
    /// number it ends the run at once. Past it (a lost tail, or a lie) it ends the run only
    /// when the exchange repeats it after the feed stopped: no packet advanced the feed between
    /// the claim and the repeat (and none waits for the other line), the feed has been silent
    /// for [`FeedRules::quiet_ns`] when the repeat arrives, and the tail it claims is at most
    /// [`FeedRules::max_rate`] × that silence + `max_jump`; the tail then counts as a gap.
    /// Behind the next number, never. Each one not believed counts in `suspect_sequence` (a
    /// believed claim takes its earlier datagrams back out). A held jump it continues is
    /// believed, and traded first, under the same rules as a packet continuing it ([`gate`]).
    #[inline]
    pub fn on_packet_from(
        &mut self,
        line: usize,
        payload: &[u8],
        clock: impl Fn() -> u64,
        mut emit: impl FnMut(&OrderRepr) -> bool,
    ) -> PacketOutcome {
        self.line = line.min(lines::RECOVERY);
        self.counters.packets += 1;
        let Ok(packet) = moldudp64::Packet::new_checked(payload) else {
            self.counters.malformed_packets += 1;
            return PacketOutcome::Data;
        };
        let session = packet.session();
        if self.session.is_some_and(|s| s != session) {
            self.counters.wrong_session += 1;
            self.foreign.count(session);
            return PacketOutcome::Data;
        }
        if self.line == lines::RECOVERY {
            return self.on_answer(payload);
        }
        if packet.is_end_of_session() {
            return self.on_end_of_session(session, packet.sequence(), &clock, &mut emit);
        }
        if packet.is_heartbeat() {
            // Whatever its number: a heartbeat moves nothing and confirms nothing ([`gate`]).
            self.counters.heartbeats += 1;
            return PacketOutcome::Data;
        }
        if !framing_is_sound(&packet) {
            self.counters.malformed_framing += 1;
            return PacketOutcome::Data;
        }
        let first = packet.sequence();
        let Some(next) = first.checked_add(u64::from(packet.block_count())) else {
            // Numbers past 2^64 - 1: no feed can continue it.
            self.counters.suspect_sequence += 1;
            return PacketOutcome::Data;
        };
        let max_jump = self.rules.max_jump;
        if self.base.is_some() {
            if first <= self.next_seq.saturating_add(max_jump) {
                self.arbitrate(payload, first, next, &clock, &mut emit);
            } else {
                self.on_jump(session, first, next, payload, &clock, &mut emit);
            }
            // A held jump the feed has reached was never confirmed: it stays a suspect.
            self.holding.drop_passed(self.next_seq);
            return PacketOutcome::Data;
        }
        // Learning: a packet that continues a held one confirms both.
        if let Some(i) = self.holding.continued_by(session, first) {
            self.confirm_feed(session, i, &clock, &mut emit);
            self.trade_packet_cold(payload, &clock, &mut emit);
            return PacketOutcome::Data;
        }
        if let Some(i) = self.holding.find(session, first) {
            self.copy_of_held(i, packet.block_count());
            return PacketOutcome::Data;
        }
        let itch_like = |b: &[u8]| b.first().and_then(|&k| itch::message_len(k)) == Some(b.len());
        if !packet.messages().any(|m| m.is_ok_and(itch_like)) {
            // Nothing in it is an ITCH message (a known type at its length): not a feed.
            self.counters.unconfirmed_packets += 1;
            return PacketOutcome::Data;
        }
        // Too large to hold, or displacing the oldest held packet: one packet dropped unconfirmed.
        if !matches!(
            self.holding.hold(session, first, next, payload, self.line),
            Some((_, None))
        ) {
            self.counters.unconfirmed_packets += 1;
        }
        PacketOutcome::Data
    }

    /// A packet of the feed more than `max_jump` past its next number: held, believed (with
    /// the held packets before it) when it continues a held packet and the stream it leaves
    /// has stopped, or when it is the other line's copy of a held packet ([`gate`]).
    #[inline(never)]
    #[cold]
    fn on_jump(
        &mut self,
        session: moldudp64::Session,
        first: u64,
        next: u64,
        payload: &[u8],
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
    ) {
        if let Some(i) = self.holding.continued_by(session, first) {
            if self.stream_stopped(self.holding.slots[i].feed_next, first) {
                // The jump was real: the old stream stopped and what follows continues it.
                self.believe(i, clock, emit);
                self.trade_packet_cold(payload, clock, emit);
                self.trade_continuations(session, clock, emit);
            } else {
                // The old stream may still flow: held as the chain's newest packet.
                self.counters.suspect_sequence += 1;
                self.counters.jumps_refused += 1;
                self.hold_jump(session, first, next, payload, true);
            }
        } else if let Some(i) = self.holding.find(session, first) {
            // Another copy of a held jump: the other line's confirms it; else a duplicate.
            self.copy_of_held(i, (next - first) as u16);
            if self.line < lines::LINES && self.line != self.holding.slots[i].line {
                self.believe(i, clock, emit);
                self.trade_continuations(session, clock, emit);
            }
        } else {
            // Held (or, too large to hold, dropped): a suspect either way, until confirmed.
            self.counters.suspect_sequence += 1;
            self.hold_jump(session, first, next, payload, false);
        }
    }

    /// Holds a jump's packet, noting where the feed is now (`refused`: it continued a held
    /// packet that was not believed).
    fn hold_jump(
        &mut self,
        session: moldudp64::Session,
        first: u64,
        next: u64,
        payload: &[u8],
        refused: bool,
    ) {
        if self.last_feed_ns == NEVER {
            // The feed never advanced: its silence counts from the first claim held.
            self.quiet_from_ns.get_or_insert(self.rx_ns);
        }
        if let Some((i, _)) = self.holding.hold(session, first, next, payload, self.line) {
            let h = &mut self.holding.slots[i];
            h.feed_next = self.next_seq;
            h.refused = refused;
        }
    }

    /// Whether the feed's stream has stopped, for a claim (a held jump, an end of session) made
    /// when the feed's next number was `feed_next` and that the current packet, numbered `at`,
    /// continues: no packet advanced the feed since (none waits for the other line either),
    /// the feed has been silent [`FeedRules::quiet_ns`] at the current packet's receive time,
    /// and `at` is within what the feed could have produced in that silence.
    fn stream_stopped(&mut self, feed_next: u64, at: u64) -> bool {
        if feed_next != self.next_seq || self.lines.as_ref().is_some_and(|l| l.any_waiting()) {
            return false;
        }
        let since = if self.last_feed_ns == NEVER {
            *self.quiet_from_ns.get_or_insert(self.rx_ns)
        } else {
            self.last_feed_ns
        };
        let silence = self.rx_ns.saturating_sub(since);
        silence >= self.rules.quiet_ns
            && at.saturating_sub(self.next_seq) <= self.rules.allowed_jump(silence)
    }

    /// Held packet `i` is a real jump: the packets waiting for the other line go first (they
    /// are behind it), then the held chain that ends with it, oldest first.
    fn believe(
        &mut self,
        i: usize,
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
    ) {
        self.release(clock, emit, true);
        let mut chain = [0; HELD];
        let n = self.holding.chain_to(i, &mut chain);
        self.counters.jumps_confirmed += 1;
        for &j in &chain[..n] {
            self.trade_held_jump(j, clock, emit);
        }
    }

    /// Trades the held packets that now continue the feed (after a believed jump).
    fn trade_continuations(
        &mut self,
        session: moldudp64::Session,
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
    ) {
        while let Some(j) = self.holding.find(session, self.next_seq) {
            self.trade_held_jump(j, clock, emit);
        }
    }

    /// Trades held jump packet `j`: no longer a suspect (nor a refused continuation).
    fn trade_held_jump(
        &mut self,
        j: usize,
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
    ) {
        let refused = u64::from(self.holding.slots[j].refused);
        let c = &mut self.counters;
        c.suspect_sequence = c.suspect_sequence.saturating_sub(1);
        c.jumps_refused = c.jumps_refused.saturating_sub(refused);
        self.trade_held(j, clock, emit);
    }

    /// A packet from the re-request server ([`lines::RECOVERY`]). Its messages numbered in a
    /// range the trader asked for (still queued, and behind the feed) count as late and
    /// recovered (or duplicates); nothing of it is traded or moves the feed's next number.
    /// Every other message, and a heartbeat or end of session, counts in `recovery_unasked`.
    #[inline(never)]
    #[cold]
    fn on_answer(&mut self, payload: &[u8]) -> PacketOutcome {
        let packet = moldudp64::Packet::new_unchecked(payload);
        if packet.is_end_of_session() || packet.is_heartbeat() {
            self.counters.recovery_unasked += 1;
            return PacketOutcome::Data;
        }
        if !framing_is_sound(&packet) {
            self.counters.malformed_framing += 1;
            return PacketOutcome::Data;
        }
        let first = packet.sequence();
        for i in 0..u64::from(packet.block_count()) {
            let asked = first.checked_add(i).filter(|&seq| {
                self.base.is_some()
                    && seq < self.next_seq
                    && self.recovery.as_ref().is_some_and(|r| r.asked(seq))
            });
            match asked {
                // Behind the feed: late (and recovered) or a duplicate, never traded.
                Some(seq) => {
                    self.admit_slow(seq);
                }
                None => self.counters.recovery_unasked += 1,
            }
        }
        PacketOutcome::Data
    }

    /// The exchange's end of session, carrying the sequence number after its last message (the
    /// rules: [`Trader::on_packet_from`]).
    fn on_end_of_session(
        &mut self,
        session: moldudp64::Session,
        end: u64,
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
    ) -> PacketOutcome {
        if self.base.is_none() {
            // It confirms a held packet it follows (a one-packet session).
            let Some(i) = self.holding.continued_by(session, end) else {
                self.counters.unconfirmed_packets += 1;
                return PacketOutcome::Data;
            };
            self.confirm_feed(session, i, clock, emit);
        }
        if end < self.next_seq {
            // Behind what was traded: not this feed's end.
            self.counters.suspect_sequence += 1;
            return PacketOutcome::Data;
        }
        // A held jump that the end continues, once the old stream stopped: it goes first.
        if end > self.next_seq
            && let Some(i) = self.holding.continued_by(session, end)
            && self.stream_stopped(self.holding.slots[i].feed_next, end)
        {
            self.believe(i, clock, emit);
        }
        if end > self.next_seq {
            // A lost tail, or a lie: believed when the exchange says it again after the feed
            // stopped, never on one datagram's word nor while the feed flows.
            let repeat = self.end_claim.filter(|c| c.end == end);
            if !repeat.is_some_and(|c| self.stream_stopped(c.feed_next, end)) {
                let count = repeat.map_or(0, |c| c.count) + 1;
                self.end_claim = Some(EndClaim {
                    end,
                    feed_next: self.next_seq,
                    count,
                });
                if self.last_feed_ns == NEVER {
                    self.quiet_from_ns.get_or_insert(self.rx_ns);
                }
                self.counters.suspect_sequence += 1;
                return PacketOutcome::Data;
            }
        }
        if let Some(claim) = self.end_claim
            && claim.end == end
        {
            // The claim was true (repeated after the feed stopped, or the feed reached it).
            self.end_claim = None;
            self.counters.suspect_sequence =
                self.counters.suspect_sequence.saturating_sub(claim.count);
        }
        if let Some(l) = &mut self.lines {
            l.saw(self.line, end);
        }
        // Nothing more will come to fill a gap the waiting packets sit behind.
        self.release(clock, emit, true);
        let end = end.max(self.next_seq);
        self.counters.gap_messages = self
            .counters
            .gap_messages
            .saturating_add(end - self.next_seq);
        if let (Some(l), Some(base)) = (&mut self.lines, self.base) {
            l.advance(self.next_seq, end, base);
        }
        self.next_seq = end;
        PacketOutcome::EndOfSession
    }

    /// A packet of the feed in the normal range: traded now, unless it comes on an A/B feed past
    /// a gap (or behind packets that wait), where it waits for the slower line ([`lines`]).
    #[inline]
    fn arbitrate(
        &mut self,
        payload: &[u8],
        first: u64,
        next: u64,
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
    ) {
        let Some(l) = &mut self.lines else {
            return self.trade_packet(payload, clock, emit);
        };
        l.saw(self.line, next);
        if (first > self.next_seq || l.any_waiting()) && next > self.next_seq {
            let due = clock().saturating_add(l.wait_ns);
            if !l.hold(payload, first, self.line, due) {
                self.release(clock, emit, true);
                self.trade_packet_cold(payload, clock, emit);
            }
        } else {
            self.trade_packet(payload, clock, emit);
        }
        if self.lines.as_ref().is_some_and(|l| l.any_waiting()) {
            self.release(clock, emit, false);
        }
    }

    /// Trades the waiting packets whose turn has come: the gap before the first of them is
    /// filled, lost on both lines, or it has waited long enough (or `force`).
    #[inline(never)]
    fn release(
        &mut self,
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
        force: bool,
    ) {
        loop {
            let Some(l) = &mut self.lines else { return };
            let Some(head) = l.head() else { return };
            let ready = force
                || head.first <= self.next_seq
                || l.both_past(self.next_seq)
                || clock() >= head.due_ns;
            if !ready {
                return;
            }
            let Some(w) = l.take_head() else { return };
            let line = std::mem::replace(&mut self.line, w.line);
            self.trade_packet_cold(&w.bytes, clock, emit);
            self.line = line;
            if let Some(l) = &mut self.lines {
                l.recycle(w.bytes);
            }
        }
    }

    /// Held packet `i` of `session` is confirmed as the start of the feed: the trader locks on
    /// to it and trades it; whatever else was held was not the feed (another session's, or a
    /// wild number of this one) and is counted so.
    fn confirm_feed(
        &mut self,
        session: moldudp64::Session,
        i: usize,
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
    ) {
        self.lock(session, self.holding.slots[i].first);
        self.trade_held(i, clock, emit);
        let (c, foreign) = (&mut self.counters, &mut self.foreign);
        self.holding.clear(|s| {
            if s == session {
                c.suspect_sequence += 1;
            } else {
                c.wrong_session += 1;
                foreign.count(s);
            }
        });
    }

    /// Another copy of held packet `i` (`count` messages): its messages are duplicates either
    /// way; on an A/B feed it is the other line's copy, counted for that line when the held
    /// packet is traded.
    fn copy_of_held(&mut self, i: usize, count: u16) {
        self.counters.duplicate_messages += u64::from(count);
        if self.line < lines::LINES {
            self.holding.slots[i].also |= 1 << self.line;
        }
    }

    /// The feed is `session`, starting at `first`.
    fn lock(&mut self, session: moldudp64::Session, first: u64) {
        self.session = Some(session);
        self.base = Some(first);
        self.next_seq = first;
        self.seen.fill(0);
    }

    /// Trades held packet `i` (its slot is freed).
    fn trade_held(
        &mut self,
        i: usize,
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
    ) {
        let bytes = self.holding.take(i);
        let held = &self.holding.slots[i];
        let (first, next, also) = (held.first, held.next, held.also);
        let line = std::mem::replace(&mut self.line, held.line);
        self.trade_packet_cold(&bytes, clock, emit);
        // Copies that came on the other line while it was held.
        if let (Some(l), Some(base)) = (&mut self.lines, self.base) {
            for other in (0..lines::LINES).filter(|&o| o != self.line && also & (1 << o) != 0) {
                l.saw(other, next);
                for seq in first.max(base)..next {
                    l.counts[other].received_messages += 1;
                    l.mark(other, seq);
                }
            }
        }
        self.line = line;
        self.holding.give_back(i, bytes);
    }

    /// [`Trader::trade_packet`] for the rare paths (held packets, confirmed jumps, the feed's
    /// first packets, A/B waits): one out-of-line copy, so the hot path's stays inlined.
    #[inline(never)]
    #[cold]
    fn trade_packet_cold(
        &mut self,
        payload: &[u8],
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
    ) {
        self.trade_packet(payload, clock, emit);
    }

    /// Trades the messages of a packet of the feed whose header and framing were checked.
    #[inline(always)]
    fn trade_packet(
        &mut self,
        payload: &[u8],
        clock: &impl Fn() -> u64,
        emit: &mut impl FnMut(&OrderRepr) -> bool,
    ) {
        let packet = moldudp64::Packet::new_unchecked(payload);
        let first = packet.sequence();
        for (i, block) in packet.messages().enumerate() {
            let seq = first.saturating_add(i as u64);
            let new = self.admit(seq);
            // Only the feed's lines count here (the re-request server's answers never come
            // here: `on_answer`).
            if let Some(l) = &mut self.lines
                && self.line < lines::LINES
            {
                let c = &mut l.counts[self.line];
                c.received_messages += 1;
                c.first_arrivals += u64::from(new);
                // Tracked while in the window and in the feed the trader follows.
                if self.base.is_some_and(|b| seq >= b)
                    && self.next_seq.saturating_sub(seq) <= SEEN_WINDOW
                {
                    l.mark(self.line, seq);
                }
            }
            if !new {
                continue;
            }
            self.counters.messages += 1;
            let Ok(block) = block else {
                self.counters.malformed_messages += 1;
                continue;
            };
            match itch::parse(block) {
                Ok(Message::Trade(t)) => {
                    if self.stock.is_some_and(|s| s != t.stock) {
                        self.counters.other_stock += 1;
                        continue;
                    }
                    self.counters.ticks += 1;
                    let price = t.price.to_f64();
                    self.last_price = Some(price);
                    // The between-ticks work, if the loop hasn't done it yet (the second
                    // message of a packet): never inside the decision's time.
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
                            price: t.price,
                            stock: t.stock,
                        };
                        if emit(&order) {
                            self.counters.orders += 1;
                            self.keep_fill((signal.side, price));
                        } else {
                            self.counters.orders_failed += 1;
                        }
                    }
                }
                // Every other well-formed ITCH message: not a tick for this trader.
                Ok(_) => self.counters.other_messages += 1,
                Err(_) => self.counters.malformed_messages += 1,
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

    /// Work for the next tick that doesn't depend on its price; call after the orders of the
    /// last packet are out. Cheap when already done.
    #[inline]
    pub fn prepare(&mut self) {
        self.strategy.prepare();
    }

    /// Sequence tracking: true when `seq` is new and in order (possibly after a gap): the feed
    /// advanced, at the current packet's receive time. The common case, the next number on a
    /// one-line feed, is a mark, an increment and a store.
    #[inline(always)]
    fn admit(&mut self, seq: u64) -> bool {
        if seq == self.next_seq && self.lines.is_none() && seq != u64::MAX {
            self.mark(seq);
            self.next_seq = seq + 1;
            self.last_feed_ns = self.rx_ns;
            return true;
        }
        self.admit_slow(seq)
    }

    /// [`Trader::admit`] for everything else: gaps, late and duplicate numbers, A/B feeds.
    #[inline(never)]
    fn admit_slow(&mut self, seq: u64) -> bool {
        if self.base.is_some_and(|b| seq < b) {
            // From before the trader joined the feed: neither late nor a duplicate.
            self.counters.before_join_messages += 1;
            return false;
        }
        if seq >= self.next_seq {
            let skipped = seq - self.next_seq;
            if skipped > 0
                && let Some(rec) = &mut self.recovery
            {
                let gave_up = rec.push(self.next_seq, seq).0;
                self.counters.retransmit_gave_up =
                    self.counters.retransmit_gave_up.saturating_add(gave_up);
            }
            // Saturating: a hostile sequence number near u64::MAX must not wrap the counters.
            self.counters.gap_messages = self.counters.gap_messages.saturating_add(skipped);
            if let (Some(l), Some(base)) = (&mut self.lines, self.base) {
                l.advance(self.next_seq, seq.saturating_add(1), base);
            }
            // Forget what the window held for the sequence numbers we now move over.
            if skipped + 1 >= SEEN_WINDOW {
                self.seen.fill(0);
            } else {
                for s in self.next_seq..=seq.min(u64::MAX - 1) {
                    self.clear(s);
                }
            }
            self.mark(seq);
            self.next_seq = seq.saturating_add(1);
            self.last_feed_ns = self.rx_ns;
            return true;
        }
        if self.next_seq - seq > SEEN_WINDOW || !self.is_marked(seq) {
            // Older than a gap we passed: the tick arrived late.
            self.counters.late_messages += 1;
            if self.line == lines::RECOVERY {
                self.counters.recovered_messages += 1;
            }
            if self.next_seq - seq <= SEEN_WINDOW {
                self.mark(seq);
            }
        } else {
            self.counters.duplicate_messages += 1;
        }
        false
    }

    #[inline]
    fn slot(seq: u64) -> (usize, u64) {
        let i = seq % SEEN_WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    #[inline]
    fn mark(&mut self, seq: u64) {
        let (w, b) = Self::slot(seq);
        if let Some(word) = self.seen.get_mut(w) {
            *word |= b;
        }
    }

    #[inline]
    fn clear(&mut self, seq: u64) {
        let (w, b) = Self::slot(seq);
        if let Some(word) = self.seen.get_mut(w) {
            *word &= !b;
        }
    }

    #[inline]
    fn is_marked(&self, seq: u64) -> bool {
        marked(&self.seen, seq)
    }
}

/// Whether `seq` is marked in the seen window `seen`.
#[inline]
fn marked(seen: &[u64], seq: u64) -> bool {
    let (w, b) = Trader::slot(seq);
    seen.get(w).is_some_and(|word| word & b != 0)
}

/// True when the packet's blocks tile its payload exactly as its message count says and none
/// is empty. A zero-length block is malformed framing, not a malformed message: no ITCH
/// message is empty, and taking one as a message would let a packet of nothing but length
/// prefixes consume sequence numbers (the messages iterator's errors are exactly these).
#[inline]
fn framing_is_sound(packet: &moldudp64::Packet<&[u8]>) -> bool {
    packet.messages().all(|m| m.is_ok())
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
mod gate_tests;

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
    fn trader() -> Trader {
        Trader::new(Params::from_n(6).unwrap(), Some(stock())).with_feed_rules(FeedRules {
            session: Some(Session::new(paths::market::SESSION).unwrap()),
            first_seq: Some(1),
            ..FeedRules::default()
        })
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

    #[test]
    fn itch_lies_consume_their_sequence_number() {
        let mut t = trader();
        let unknown = [b'z'; 44];
        let short = &trade(2)[..43];
        feed(&mut t, &packet(1, &[&unknown, short, &trade(3)]));
        let c = t.counters;
        assert_eq!(
            (
                c.malformed_messages,
                c.ticks,
                c.messages,
                c.malformed_framing
            ),
            (2, 1, 3, 0),
            "{c:?}"
        );
        feed(&mut t, &packet(4, &[&trade(4)]));
        assert_eq!(t.counters.gap_messages, 0);
        assert_eq!(t.counters.ticks, 2);
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
        t.arrived(10_000_000);
        feed(&mut t, &packet(1, &[&trade(1)]));
        let mut eos = packet(4, &[]);
        eos[18..20].copy_from_slice(&moldudp64::END_OF_SESSION.to_be_bytes());
        // Past the feed: a lost tail or a lie, believed when the exchange repeats it after the
        // feed stopped (the lab's exchange repeats it 2 ms apart).
        t.arrived(10_100_000);
        assert_eq!(t.on_packet(&eos, || 0, |_| true), PacketOutcome::Data);
        assert_eq!(t.counters.suspect_sequence, 1);
        t.arrived(12_100_000);
        assert_eq!(
            t.on_packet(&eos, || 0, |_| true),
            PacketOutcome::EndOfSession
        );
        assert_eq!(t.counters.gap_messages, 2, "2 and 3 never came");
        assert_eq!(t.counters.suspect_sequence, 0, "confirmed");
    }

    #[test]
    fn an_end_of_session_at_the_next_number_ends_at_once_and_one_elsewhere_never() {
        let mut t = trader();
        feed(&mut t, &packet(1, &[&trade(1)]));
        let eos = |n: u64| {
            let mut e = packet(n, &[]);
            e[18..20].copy_from_slice(&moldudp64::END_OF_SESSION.to_be_bytes());
            e
        };
        for lie in [1, 7, 1 << 40] {
            assert_eq!(t.on_packet(&eos(lie), || 0, |_| true), PacketOutcome::Data);
        }
        assert_eq!(t.counters.suspect_sequence, 3);
        feed(&mut t, &packet(2, &[&trade(2)]));
        assert_eq!(t.counters.ticks, 2, "the feed goes on");
        assert_eq!(
            t.on_packet(&eos(3), || 0, |_| true),
            PacketOutcome::EndOfSession
        );
        assert_eq!(t.counters.gap_messages, 0);
    }
}
