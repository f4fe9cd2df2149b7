//! The sequencer: the MoldUDP64 session, the [`gate`](crate::gate), the A/B [`lines`](crate::lines),
//! [`recovery`](crate::recovery) and the end of session. It takes (line, arrival, payload) and
//! hands each message that is new and in order (possibly after a gap) to a [`Sink`], numbered;
//! everything else (duplicates, late numbers, lies) it counts and keeps from the sink.
//!
//! It knows nothing of ITCH beyond what the gate needs to tell a feed from noise: what a message
//! means is the sink's business (the [`Desk`](crate::desk::Desk), through its book or its
//! ticker). quiche's connection, with its `recovery` module apart, is the model: the sequencer
//! owns the session's state machine, the desk only sees in-order data.
//!
//! Nothing here allocates after start, logs or makes a system call. Time comes in as
//! [`Nanos`]: each packet's arrival ([`Sequencer::arrived`]) and, for an A/B feed's waits, the
//! clock in [`Cx`], read only when a packet waits for the other line.

use wire::{itch, moldudp64};
pub use xdp_common::filter::Claim;

use crate::{
    Counters, PacketOutcome, SEEN_WINDOW,
    gate::{FeedRules, ForeignSessions, HELD, Holding, PROFILE_MAX_BYTES},
    lines::{self, Line, Lines},
    recovery::Recovery,
    repair::{Held, Repair, What},
    time::Nanos,
};

/// Where the sequencer's in-order messages go.
pub trait Sink {
    /// Message `seq` of the feed, new and in order (after a gap, if the numbers before it
    /// never came), its framing checked (`message` is one block, never empty). `counters` are
    /// the trader's, for the sink to count what it did with it.
    fn message(&mut self, seq: u64, message: &[u8], counters: &mut Counters);
}

/// What one call into the sequencer works with: the trader's counters, the clock (read only
/// for an A/B feed's waits, and by the sink if it times itself) and the sink.
pub struct Cx<'a, C, S> {
    /// The trader's counters.
    pub counters: &'a mut Counters,
    /// Reads the monotonic clock, in ns.
    pub clock: &'a C,
    /// Where the in-order messages go.
    pub sink: &'a mut S,
}

impl<C, S> std::fmt::Debug for Cx<'_, C, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cx")
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

/// An end of session not believed yet: believed when the exchange repeats it after the feed
/// stopped, or (at the feed's next number) when the feed stays silent after it (see
/// [`Sequencer::on_packet`]).
#[derive(Debug, Clone, Copy)]
struct EndClaim {
    /// The number it claims comes after the feed's last message.
    end: u64,
    /// The feed's next number when it was (last) claimed: the feed has moved if it differs.
    feed_next: u64,
    /// The datagrams that claimed it, each counted in `suspect_sequence` until believed.
    count: u64,
    /// When it was first claimed at this `feed_next`: the feed's silence after it counts from
    /// here.
    at: Nanos,
}

/// The sequencer's state (see the [module](self)).
#[derive(Debug)]
pub struct Sequencer {
    /// What decides which packets are the feed.
    rules: FeedRules,
    /// The feed's session, once known (pinned, or learned and confirmed).
    session: Option<moldudp64::Session>,
    /// The first sequence number the trader took (pinned, or learned): nothing before it is
    /// late, the trader joined after it.
    base: Option<u64>,
    /// Next sequence number expected (meaningful once `base` is known).
    next_seq: u64,
    /// Packets waiting for a later one to confirm them (see [`gate`](crate::gate)).
    holding: Holding,
    /// Sessions seen besides the feed's.
    foreign: ForeignSessions,
    /// Gaps to ask the exchange for again (`None`: the trader doesn't ask).
    recovery: Option<Recovery>,
    /// Per-line accounting of an A/B feed (`None`: one line).
    lines: Option<Box<Lines>>,
    /// Packets held behind a gap for a book (`None`: gaps are traded through; see
    /// [`repair`](crate::repair)).
    repair: Option<Box<Repair>>,
    /// The line the packet being processed came on.
    line: Line,
    /// An end of session past the feed's next number, not believed yet.
    end_claim: Option<EndClaim>,
    /// The arrival of the packet being processed ([`Sequencer::arrived`]).
    rx: Nanos,
    /// The arrival of the last packet that advanced the feed in sequence (`None`: none yet).
    last_feed: Option<Nanos>,
    /// Before any packet advanced the feed: when the first jump or end claim was held, where
    /// the feed's silence counts from.
    quiet_from: Option<Nanos>,
    /// One bit per number in the window behind `next_seq`: which came.
    seen: Box<[u64]>,
}

impl Default for Sequencer {
    fn default() -> Self {
        Sequencer::new(FeedRules::default())
    }
}

impl Sequencer {
    /// A sequencer deciding which packets are the feed by `rules` (see [`gate`](crate::gate)).
    pub fn new(rules: FeedRules) -> Self {
        Sequencer {
            rules: FeedRules::default(),
            session: None,
            base: None,
            next_seq: 1,
            holding: Holding::new(),
            foreign: ForeignSessions::default(),
            recovery: None,
            lines: None,
            repair: None,
            line: Line::A,
            end_claim: None,
            rx: Nanos::ZERO,
            last_feed: None,
            quiet_from: None,
            seen: vec![0u64; (SEEN_WINDOW / 64) as usize].into_boxed_slice(),
        }
        .with_rules(rules)
    }

    /// Decides which packets are the feed by `rules` from now (call before the first packet).
    pub fn with_rules(mut self, rules: FeedRules) -> Self {
        self.rules = rules;
        self.session = rules.session;
        if let (Some(_), Some(first)) = (rules.session, rules.first_seq) {
            self.base = Some(first);
            self.next_seq = first;
        }
        self
    }

    /// Queues every gap for a MoldUDP64 re-request ([`Sequencer::next_request`]).
    pub fn with_recovery(mut self) -> Self {
        self.recovery = Some(Recovery::new());
        self
    }

    /// Takes the feed on two lines, A and B (see [`lines`]); a packet past a gap waits up to
    /// `wait_ns` for the other line to fill it (and no longer for the re-request server:
    /// [`Sequencer::with_repair`] is for a one-line feed).
    pub fn with_lines(mut self, wait_ns: u64) -> Self {
        let mut l = Lines::new();
        l.wait_ns = wait_ns;
        self.lines = Some(Box::new(l));
        self.repair = None;
        self
    }

    /// Keeps the feed in order through its gaps, for a book (see [`repair`](crate::repair)):
    /// a packet past a gap waits up to `wait_ns` for the re-request server's answer. It takes
    /// [`Sequencer::with_recovery`] (asked first or after) and a one-line feed: on an A/B feed
    /// ([`Sequencer::with_lines`], asked first or after) the lines' own wait stands alone.
    pub fn with_repair(mut self, wait_ns: u64) -> Self {
        if self.lines.is_none() {
            self.repair = Some(Box::new(Repair::new(wait_ns)));
        }
        self
    }

    /// Whether gaps are held for the re-request server's answer.
    pub fn is_repairing(&self) -> bool {
        self.repair.is_some() && self.recovery.is_some()
    }

    /// Whether the feed comes on two lines.
    pub fn has_lines(&self) -> bool {
        self.lines.is_some()
    }

    /// When the first packet waiting for the other line of an A/B feed, or behind a gap for
    /// the re-request server ([`Sequencer::with_repair`]), stops waiting; `None` when nothing
    /// waits.
    #[inline]
    pub fn waiting_due(&self) -> Option<Nanos> {
        let line = self.lines.as_ref().and_then(|l| l.head()).map(|w| w.due);
        let gap = self.repair.as_ref().and_then(|r| r.head()).map(|h| h.due);
        line.into_iter().chain(gap).chain(self.end_due()).min()
    }

    /// Hands on the packets whose wait for the other line, or for the re-request server, is
    /// over by `cx`'s clock; then takes an end of session at the feed's next number that the
    /// feed has stayed silent after for [`FeedRules::quiet_ns`] by `now` (`None`: not now,
    /// the receive that just ran took packets, so the feed may not be silent; returning
    /// [`PacketOutcome::EndOfSession`]).
    pub fn release_due(
        &mut self,
        now: Option<Nanos>,
        cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>,
    ) -> PacketOutcome {
        self.release(cx, false);
        self.release_repaired(cx, false);
        match (self.end_due(), now) {
            (Some(due), Some(now)) if now >= due => self.take_end(self.next_seq, cx),
            _ => PacketOutcome::Data,
        }
    }

    /// When an end of session at the feed's next number is believed on the feed's silence:
    /// [`FeedRules::quiet_ns`] after it was claimed, if no packet advanced the feed since and
    /// none waits (for the other line, or behind a book's gap).
    ///
    /// Never before the feed advanced once: the wait for the feed to open is the longest quiet
    /// a trader sees, and one forged end then would end the run before it began (it takes the
    /// repeat then).
    fn end_due(&self) -> Option<Nanos> {
        let c = self.end_claim?;
        let waiting = self.lines.as_ref().is_some_and(|l| l.any_waiting())
            || self.repair.as_ref().is_some_and(|r| r.holding());
        (c.end == self.next_seq
            && c.feed_next == self.next_seq
            && self.last_feed.is_some()
            && !waiting)
            .then(|| c.at.after(self.rules.quiet_ns))
    }

    /// Whether the end claim standing is one at the feed's next number, made since the feed
    /// last moved: a claim elsewhere doesn't displace it.
    fn end_at_next_stands(&self) -> bool {
        self.end_claim
            .is_some_and(|c| c.end == self.next_seq && c.feed_next == self.next_seq)
    }

    /// Per line of an A/B feed (A, then B) and the numbers neither delivered; settled by
    /// [`Sequencer::finish`]. `None` with one line.
    pub fn line_counts(&self) -> Option<([results::LineCounts; lines::LINES], u64)> {
        self.lines.as_ref().map(|l| (l.counts, l.lost_on_both))
    }

    /// The next MoldUDP64 re-request to send at `now`, if one is due: paced, bounded and
    /// retried as [`recovery`](crate::recovery) says. Call between packets.
    pub fn next_request(&mut self, now: Nanos, c: &mut Counters) -> Option<moldudp64::Request> {
        let session = self.session()?;
        let rec = self.recovery.as_mut()?;
        let (seen, next) = (&self.seen, self.next_seq);
        let oldest = next.saturating_sub(SEEN_WINDOW - 1);
        // A gap held for a book is at or past the next number, where the window's bits are
        // the numbers a window before: nothing there has come.
        let (ask, gave_up) = rec.next_request(now.ns(), oldest, |s| s < next && marked(seen, s));
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

    /// The arrival of the packet the next [`Sequencer::on_packet`] call processes. A store.
    #[inline(always)]
    pub fn arrived(&mut self, rx: Nanos) {
        self.rx = rx;
    }

    /// The arrival of the last packet that advanced the feed in sequence; `None` before any.
    pub fn last_feed(&self) -> Option<Nanos> {
        self.last_feed
    }

    /// The feed's session, once known.
    pub fn session(&self) -> Option<moldudp64::Session> {
        self.session.filter(|_| self.base.is_some())
    }

    /// The sequence number expected next (meaningful once the feed is known).
    #[inline]
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The first sequence number taken, once known.
    pub fn first_seq(&self) -> Option<u64> {
        self.base
    }

    /// Sessions other than the feed's that sent packets, with their counts.
    pub fn foreign_sessions(&self) -> &ForeignSessions {
        &self.foreign
    }

    /// The run is over: packets still held for want of a packet to confirm them are counted
    /// (`unconfirmed_packets`). Call once, after the loop.
    pub fn finish(&mut self, c: &mut Counters) {
        match self.base {
            None => self.holding.clear(|_| c.unconfirmed_packets += 1),
            Some(base) => {
                if let Some(r) = &mut self.repair {
                    // Still held behind a gap when the run ended: never handed on.
                    c.unconfirmed_packets += r.drop_held();
                }
                if let Some(l) = &mut self.lines {
                    // Still waiting for the other line when the run ended: never handed on.
                    c.unconfirmed_packets += l.drop_waiting();
                    l.finish(base, self.next_seq);
                }
            }
        }
    }

    /// Sequences one MoldUDP64 packet that came on `line`, at the time told to
    /// [`Sequencer::arrived`]: each message that is new and in order goes to `cx.sink`, in
    /// order. A packet that the [`gate`](crate::gate) holds hands on nothing now; when a later
    /// packet confirms it, that call hands on the held packet's messages first, then its own.
    /// An answer of the re-request server ([`Line::Recovery`]) is taken only for numbers the
    /// trader asked for, counted and never handed on (see [`recovery`](crate::recovery)).
    ///
    /// An end of session carries the number after the feed's last message. It ends the run
    /// only when the exchange repeats it after the feed stopped: no packet advanced the feed
    /// between the claim and the repeat (and none waits for the other line), the feed has been
    /// silent for [`FeedRules::quiet_ns`] when the repeat arrives, and the tail it claims is at
    /// most [`FeedRules::max_rate`] × that silence + `max_jump`; the tail then counts as a gap.
    /// At the feed's next number the feed's silence for `quiet_ns` after it ends the run too,
    /// with no repeat ([`Sequencer::release_due`]: the loop calls it when
    /// [`Sequencer::waiting_due`] says). Behind the next number, never. Each one not believed counts in `suspect_sequence` (a
    /// believed claim takes its earlier datagrams back out). A held jump it continues is
    /// believed, and traded first, under the same rules as a packet continuing it ([`gate`]).
    #[inline]
    pub fn on_packet(
        &mut self,
        line: Line,
        payload: &[u8],
        cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>,
    ) -> PacketOutcome {
        self.on_packet_claimed(line, payload, None, cx)
    }

    /// [`Sequencer::on_packet`] for a packet that carries a driver filter's [`Claim`] (see
    /// docs/driver-filter.md and [`xdp_common::filter`]): the run `[from, to)` of numbers the
    /// XDP program saw on this line, whole, in order and from the pinned source, and dropped
    /// because none carried a message for the trader's symbols. The numbers of the run not yet
    /// taken are taken as received and empty (`filtered_skipped`), neither a gap nor a
    /// recovery; any before the run, or between it and the packet, that never came are a gap
    /// as always (a loss broke the run). A claim is the program's word, never a
    /// datagram's: only the AF_XDP path, whose program writes it, may pass one. It is taken
    /// once the feed is known, on a one-line feed (an A/B feed's lines arbitrate each number,
    /// and a claimed skip would need both lines' word), when its run ends past the next number
    /// and at or before the packet (a packet behind the line carries the run ahead of it,
    /// which it can't vouch for), and when the run begins within `max_jump` of the next
    /// number: a run that a forged jump ahead began is the gate's business, never a skip.
    #[inline]
    pub fn on_packet_claimed(
        &mut self,
        line: Line,
        payload: &[u8],
        claim: Option<Claim>,
        cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>,
    ) -> PacketOutcome {
        self.line = line;
        cx.counters.packets += 1;
        let Ok(packet) = moldudp64::Packet::new_checked(payload) else {
            cx.counters.malformed_packets += 1;
            return PacketOutcome::Data;
        };
        let session = packet.session();
        if self.session.is_some_and(|s| s != session) {
            cx.counters.wrong_session += 1;
            self.foreign.count(session);
            return PacketOutcome::Data;
        }
        if self.line == Line::Recovery {
            return self.on_answer(payload, cx);
        }
        if (packet.is_end_of_session() || packet.is_heartbeat())
            && let Some(claim) = claim
            && self.base.is_some()
        {
            // The filter's run before an end or a heartbeat (which the program passes without
            // ending the run): the numbers up to it were dropped whole and in order. Behind a
            // book's held gap (or past one) it waits in the hold, taken in its turn.
            if self.must_hold_claim(claim) {
                self.hold_claim(claim, cx);
            } else {
                self.try_claim(claim, packet.sequence(), cx.counters);
            }
        }
        if packet.is_end_of_session() {
            return self.on_end_of_session(session, packet.sequence(), cx);
        }
        if packet.is_heartbeat() {
            // Whatever its number: a heartbeat moves nothing and confirms nothing ([`gate`]).
            cx.counters.heartbeats += 1;
            return PacketOutcome::Data;
        }
        let shape = shape(&packet, payload.len());
        if shape == Shape::Malformed {
            cx.counters.malformed_framing += 1;
            return PacketOutcome::Data;
        }
        let first = packet.sequence();
        let Some(next) = first.checked_add(u64::from(packet.block_count())) else {
            // Numbers past 2^64 - 1: no feed can continue it.
            cx.counters.suspect_sequence += 1;
            return PacketOutcome::Data;
        };
        if shape == Shape::OffProfile {
            return self.off_profile(session, first, next, payload, claim, cx);
        }
        let max_jump = self.rules.max_jump;
        if self.base.is_some() {
            if let Some(r) = &self.repair {
                // While a book's gap is held, a jump is measured from what is held, or from
                // the end of the filter's run before the packet if that run begins in reach:
                // always from the packet's own first number (a forged packet far ahead
                // carries the run it broke, and is the gate's business, never a hold's).
                let ahead = r.end().map_or(self.next_seq, |e| e.max(self.next_seq));
                let reach = claim
                    .filter(|c| c.to <= first && c.from <= ahead.saturating_add(max_jump))
                    .map_or(ahead, |c| c.to.max(ahead));
                if first <= reach.saturating_add(max_jump)
                    && self.must_hold(first, claim)
                    && self.hold_behind_gap(payload, first, next, claim, false, cx)
                {
                    // Its claim may be due at once.
                    self.release_repaired(cx, false);
                    self.holding.drop_passed(self.next_seq);
                    return PacketOutcome::Data;
                }
            }
            // While a book's gap is held, claims are taken in the hold only: a packet that
            // goes past it (in order, or to the gate) carries none that applies.
            if let Some(claim) = claim
                && !self.repair.as_ref().is_some_and(|r| r.holding())
            {
                self.try_claim(claim, first, cx.counters);
            }
            if first <= self.next_seq.saturating_add(max_jump) {
                self.arbitrate(payload, first, next, cx);
            } else {
                self.on_jump(session, first, next, payload, cx);
            }
            if self.repair.as_ref().is_some_and(|r| r.holding()) {
                self.release_repaired(cx, false);
            }
            // A held jump the feed has reached was never confirmed: it stays a suspect.
            self.holding.drop_passed(self.next_seq);
            return PacketOutcome::Data;
        }
        // Learning: a packet that continues a held one confirms both.
        if let Some(i) = self.holding.continued_by(session, first) {
            self.confirm_feed(session, i, cx);
            self.deliver_cold(payload, cx);
            return PacketOutcome::Data;
        }
        if let Some(i) = self.holding.find(session, first) {
            self.copy_of_held(i, packet.block_count(), cx.counters);
            return PacketOutcome::Data;
        }
        let itch_like = |b: &[u8]| b.first().and_then(|&k| itch::message_len(k)) == Some(b.len());
        if !packet.messages().any(|m| m.is_ok_and(itch_like)) {
            // Nothing in it is an ITCH message (a known type at its length): not a feed.
            cx.counters.unconfirmed_packets += 1;
            return PacketOutcome::Data;
        }
        // Too large to hold, or displacing the oldest held packet: one packet dropped unconfirmed.
        if !matches!(
            self.holding.hold(session, first, next, payload, self.line),
            Some((_, None))
        ) {
            cx.counters.unconfirmed_packets += 1;
        }
        PacketOutcome::Data
    }

    /// A packet of the feed that doesn't fit its profile ([`Shape::OffProfile`]): never traded
    /// on its own word, whatever its number. Once the feed is known it is held as a jump is
    /// (counted in `off_profile` and `suspect_sequence`), so it is traded only if a packet
    /// continues it after the feed's stream has stopped ([`gate`](crate::gate)); a real
    /// packet at its numbers passes it. Before, it confirms nothing (`unconfirmed_packets`). A
    /// driver filter's claim it carries is taken as on any packet.
    #[inline(never)]
    #[cold]
    fn off_profile(
        &mut self,
        session: moldudp64::Session,
        first: u64,
        next: u64,
        payload: &[u8],
        claim: Option<Claim>,
        cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>,
    ) -> PacketOutcome {
        cx.counters.off_profile += 1;
        if self.base.is_none() {
            cx.counters.unconfirmed_packets += 1;
            return PacketOutcome::Data;
        }
        if let Some(claim) = claim {
            // The filter's run before it is the program's word, not the packet's: taken as
            // a heartbeat's is, whatever the packet says.
            if self.must_hold_claim(claim) {
                self.hold_claim(claim, cx);
            } else {
                self.try_claim(claim, first, cx.counters);
            }
        }
        if first < self.next_seq {
            // Behind the feed: nothing it could move, a copy or a late number's lie.
            cx.counters.suspect_sequence += 1;
            return PacketOutcome::Data;
        }
        self.on_jump(session, first, next, payload, cx);
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
        cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>,
    ) {
        if let Some(i) = self.holding.continued_by(session, first) {
            if self.stream_stopped(self.holding.slots[i].feed_next, first) {
                // The jump was real: the old stream stopped and what follows continues it.
                self.believe(i, cx);
                self.deliver_cold(payload, cx);
                self.trade_continuations(session, cx);
            } else {
                // The old stream may still flow: held as the chain's newest packet.
                cx.counters.suspect_sequence += 1;
                cx.counters.jumps_refused += 1;
                self.hold_jump(session, first, next, payload, true);
            }
        } else if let Some(i) = self.holding.find(session, first) {
            // Another copy of a held jump: the other line's confirms it; else a duplicate.
            self.copy_of_held(i, (next - first) as u16, cx.counters);
            if self.line != Line::Recovery && self.line != self.holding.slots[i].line {
                self.believe(i, cx);
                self.trade_continuations(session, cx);
            }
        } else {
            // Held (or, too large to hold, dropped): a suspect either way, until confirmed.
            cx.counters.suspect_sequence += 1;
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
        if self.last_feed.is_none() {
            // The feed never advanced: its silence counts from the first claim held.
            self.quiet_from.get_or_insert(self.rx);
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
        // Packets waiting (for the other line, or behind a book's gap) are the feed flowing.
        if feed_next != self.next_seq
            || self.lines.as_ref().is_some_and(|l| l.any_waiting())
            || self.repair.as_ref().is_some_and(|r| r.holding())
        {
            return false;
        }
        let since = match self.last_feed {
            Some(t) => t,
            None => *self.quiet_from.get_or_insert(self.rx),
        };
        let silence = self.rx.since(since);
        silence >= self.rules.quiet_ns
            && at.saturating_sub(self.next_seq) <= self.rules.allowed_jump(silence)
    }

    /// Held packet `i` is a real jump: the packets waiting for the other line go first (they
    /// are behind it), then the held chain that ends with it, oldest first.
    fn believe(&mut self, i: usize, cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>) {
        self.release(cx, true);
        let mut chain = [0; HELD];
        let n = self.holding.chain_to(i, &mut chain);
        cx.counters.jumps_confirmed += 1;
        for &j in &chain[..n] {
            self.trade_held_jump(j, cx);
        }
    }

    /// Trades the held packets that now continue the feed (after a believed jump).
    fn trade_continuations(
        &mut self,
        session: moldudp64::Session,
        cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>,
    ) {
        while let Some(j) = self.holding.find(session, self.next_seq) {
            self.trade_held_jump(j, cx);
        }
    }

    /// Trades held jump packet `j`: no longer a suspect (nor a refused continuation).
    fn trade_held_jump(&mut self, j: usize, cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>) {
        let refused = u64::from(self.holding.slots[j].refused);
        let c = &mut cx.counters;
        c.suspect_sequence = c.suspect_sequence.saturating_sub(1);
        c.jumps_refused = c.jumps_refused.saturating_sub(refused);
        self.trade_held(j, cx);
    }

    /// A packet from the re-request server ([`lines::RECOVERY`]). Its messages numbered in a
    /// range the trader asked for (still queued, and behind the feed) count as late and
    /// recovered (or duplicates); nothing of it is traded or moves the feed's next number.
    /// Every other message, and a heartbeat or end of session, counts in `recovery_unasked`.
    /// With a book ([`Sequencer::with_repair`]) the feed waits at a gap instead: an answer
    /// that was asked for, every message of it, and reaches past the next number is handed on
    /// in order now, or held for its turn if an earlier gap is still open.
    #[inline(never)]
    #[cold]
    fn on_answer(
        &mut self,
        payload: &[u8],
        cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>,
    ) -> PacketOutcome {
        let packet = moldudp64::Packet::new_unchecked(payload);
        let c = &mut *cx.counters;
        if packet.is_end_of_session() || packet.is_heartbeat() {
            c.recovery_unasked += 1;
            return PacketOutcome::Data;
        }
        match shape(&packet, payload.len()) {
            Shape::Sound => {}
            Shape::Malformed => {
                c.malformed_framing += 1;
                return PacketOutcome::Data;
            }
            Shape::OffProfile => {
                // Not what the server of this feed sends: never taken (the request is
                // retried as for any answer that didn't come).
                c.off_profile += 1;
                return PacketOutcome::Data;
            }
        }
        let first = packet.sequence();
        let next = first.checked_add(u64::from(packet.block_count()));
        if self.is_repairing()
            && self.base.is_some()
            && let Some(next) = next.filter(|&n| n > self.next_seq)
        {
            // Every number of it asked for, the ones behind the next number too.
            let asked = |seq| self.recovery.as_ref().is_some_and(|r| r.asked(seq));
            if (first..next).all(asked) {
                if first > self.next_seq
                    && self.hold_behind_gap(payload, first, next, None, true, cx)
                {
                    return PacketOutcome::Data;
                }
                self.deliver_recovered(payload, cx);
                self.release_repaired(cx, false);
                return PacketOutcome::Data;
            }
        }
        let c = &mut *cx.counters;
        for i in 0..u64::from(packet.block_count()) {
            let asked = first.checked_add(i).filter(|&seq| {
                self.base.is_some()
                    && seq < self.next_seq
                    && self.recovery.as_ref().is_some_and(|r| r.asked(seq))
            });
            match asked {
                // Behind the feed: late (and recovered) or a duplicate, never traded.
                Some(seq) => {
                    self.admit_slow(seq, c);
                }
                None => c.recovery_unasked += 1,
            }
        }
        PacketOutcome::Data
    }

    /// The exchange's end of session, carrying the sequence number after its last message (the
    /// rules: [`Sequencer::on_packet`]).
    fn on_end_of_session(
        &mut self,
        session: moldudp64::Session,
        end: u64,
        cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>,
    ) -> PacketOutcome {
        if self.base.is_none() {
            // It confirms a held packet it follows (a one-packet session).
            let Some(i) = self.holding.continued_by(session, end) else {
                cx.counters.unconfirmed_packets += 1;
                return PacketOutcome::Data;
            };
            self.confirm_feed(session, i, cx);
        }
        if self.repair.as_ref().and_then(|r| r.end()) == Some(end) {
            // A book's gap is held and the end continues what is held: nothing more will
            // come on the feed, and the run ends now. The gaps are given up.
            self.release_repaired(cx, true);
        }
        if end < self.next_seq {
            // Behind what was traded: not this feed's end.
            cx.counters.suspect_sequence += 1;
            return PacketOutcome::Data;
        }
        // A held jump that the end continues, once the old stream stopped: it goes first.
        if end > self.next_seq
            && let Some(i) = self.holding.continued_by(session, end)
            && self.stream_stopped(self.holding.slots[i].feed_next, end)
        {
            self.believe(i, cx);
        }
        // At the next number, the end of the feed; past it, a lost tail; either may be a lie.
        // Believed when the exchange says it again after the feed stopped (or, at the next
        // number, when the feed stays silent after it: `release_due`), never on one
        // datagram's word nor while the feed flows.
        let repeat = self.end_claim.filter(|c| c.end == end);
        if repeat.is_none() && end != self.next_seq && self.end_at_next_stands() {
            // An end at the next number stands: one elsewhere (a forger's, one past it) is
            // counted and never displaces it, so it can't keep the real end from its silence.
            cx.counters.suspect_sequence += 1;
            return PacketOutcome::Data;
        }
        if !repeat.is_some_and(|c| self.stream_stopped(c.feed_next, end)) {
            let count = repeat.map_or(0, |c| c.count) + 1;
            let at = repeat
                .filter(|c| c.feed_next == self.next_seq)
                .map_or(self.rx, |c| c.at);
            self.end_claim = Some(EndClaim {
                end,
                feed_next: self.next_seq,
                count,
                at,
            });
            if self.last_feed.is_none() {
                self.quiet_from.get_or_insert(self.rx);
            }
            cx.counters.suspect_sequence += 1;
            return PacketOutcome::Data;
        }
        self.take_end(end, cx)
    }

    /// Takes the end of session at `end` (at or past the next number): the run is over.
    fn take_end(
        &mut self,
        end: u64,
        cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>,
    ) -> PacketOutcome {
        if let Some(claim) = self.end_claim
            && claim.end == end
        {
            // The claim was true (repeated after the feed stopped, or the feed reached it).
            self.end_claim = None;
            cx.counters.suspect_sequence = cx.counters.suspect_sequence.saturating_sub(claim.count);
        }
        if let Some(l) = &mut self.lines {
            l.saw(self.line, end);
        }
        // Nothing more will come to fill a gap the waiting packets sit behind.
        self.release(cx, true);
        self.release_repaired(cx, true);
        let end = end.max(self.next_seq);
        cx.counters.gap_messages = cx.counters.gap_messages.saturating_add(end - self.next_seq);
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
        cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>,
    ) {
        let Some(l) = &mut self.lines else {
            return self.deliver(payload, cx);
        };
        l.saw(self.line, next);
        if (first > self.next_seq || l.any_waiting()) && next > self.next_seq {
            let due = Nanos((cx.clock)()).after(l.wait_ns);
            if !l.hold(payload, first, self.line, due) {
                self.release(cx, true);
                self.deliver_cold(payload, cx);
            }
        } else {
            self.deliver(payload, cx);
        }
        if self.lines.as_ref().is_some_and(|l| l.any_waiting()) {
            self.release(cx, false);
        }
    }

    /// Trades the waiting packets whose turn has come: the gap before the first of them is
    /// filled, lost on both lines, or it has waited long enough (or `force`).
    #[inline(never)]
    fn release(&mut self, cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>, force: bool) {
        loop {
            let Some(l) = &mut self.lines else { return };
            let Some(head) = l.head() else { return };
            let ready = force
                || head.first <= self.next_seq
                || l.both_past(self.next_seq)
                || Nanos((cx.clock)()) >= head.due;
            if !ready {
                return;
            }
            let Some(w) = l.take_head() else { return };
            let line = std::mem::replace(&mut self.line, w.line);
            self.deliver_cold(&w.bytes, cx);
            self.line = line;
            if let Some(l) = &mut self.lines {
                l.recycle(w.bytes);
            }
        }
    }

    /// Whether a packet of the feed numbered `first..` (in range, with `claim`) waits behind a
    /// gap for a book ([`repair`](crate::repair)): it starts past the next number and the
    /// filter's claim doesn't vouch for the numbers between, or packets wait already.
    #[inline]
    fn must_hold(&self, first: u64, claim: Option<Claim>) -> bool {
        // The claim vouches for every number between: its run reaches the packet.
        let covered = || {
            claim.is_some_and(|c| {
                self.claim_applies(c, first) && c.from <= self.next_seq && c.to == first
            })
        };
        first > self.next_seq
            && self.is_repairing()
            && (self.repair.as_ref().is_some_and(|r| r.holding()) || !covered())
    }

    /// Holds a packet (`recovered`: an answer of the re-request server) behind a gap until its
    /// turn, queueing what is missing before it for recovery; false when it can't be held
    /// (the hold is full, or the packet too large): what was held goes on at once, the gaps
    /// given up, and the caller takes the packet as usual.
    #[inline(never)]
    #[cold]
    fn hold_behind_gap(
        &mut self,
        payload: &[u8],
        first: u64,
        next: u64,
        claim: Option<Claim>,
        recovered: bool,
        cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>,
    ) -> bool {
        let Some(r) = self.repair.as_mut() else {
            return false;
        };
        if r.has(first, next) {
            cx.counters.duplicate_messages += next - first;
            return true;
        }
        // No later than the earliest held packet's wait: a packet that comes to the head of
        // the hold never extends it.
        let due = r.earliest_due().map_or(self.rx.after(r.wait_ns), |d| {
            d.min(self.rx.after(r.wait_ns))
        });
        let what = if recovered {
            What::Answer
        } else {
            What::Packet
        };
        // The claim's run, held beside the packet when it reaches past what is held before it.
        let run = claim.filter(|c| {
            c.from < c.to
                && c.to <= first
                && c.to > r.end_before(c.from).unwrap_or(0).max(self.next_seq)
        });
        let mut spans = [(first, next, what), (0, 0, What::Packet)];
        if let Some(c) = run {
            spans = [(c.from, c.to, What::Claim(c)), (first, next, what)];
        }
        for (first, next, what) in spans.into_iter().filter(|s| s.1 > s.0) {
            let Some(r) = self.repair.as_mut() else {
                return false;
            };
            // What is missing before it: from the end of what is held before it (or the
            // next number) to its first number, queued for recovery.
            let expected = r.end_before(first).unwrap_or(0).max(self.next_seq);
            let bytes = if matches!(what, What::Claim(_)) {
                &[][..]
            } else {
                payload
            };
            let h = Held {
                first,
                next,
                what,
                due,
                bytes: Vec::new(),
            };
            if !r.hold(bytes, h) {
                self.release_repaired(cx, true);
                return false;
            }
            if first > expected
                && let Some(rec) = &mut self.recovery
            {
                let gave_up = rec.push(expected, first).0;
                let c = &mut cx.counters;
                c.retransmit_gave_up = c.retransmit_gave_up.saturating_add(gave_up);
            }
        }
        if !recovered {
            cx.counters.repair_held_packets += 1;
        }
        true
    }

    /// Whether a claim that came on a heartbeat or an end of session waits in the book's
    /// hold: something is held, or the run begins past the next number (a gap before it).
    fn must_hold_claim(&self, claim: Claim) -> bool {
        self.is_repairing()
            && claim.to > self.next_seq
            && (self.repair.as_ref().is_some_and(|r| r.holding()) || claim.from > self.next_seq)
    }

    /// Holds `claim` (from a heartbeat or an end of session) as an entry of its own, what is
    /// missing before it queued for recovery; taken at once if nothing is missing. A full
    /// hold goes on at once and takes the claim as without a book.
    #[inline(never)]
    #[cold]
    fn hold_claim(&mut self, claim: Claim, cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>) {
        let Some(r) = self.repair.as_mut() else {
            return;
        };
        let expected = r.end_before(claim.from).unwrap_or(0).max(self.next_seq);
        let due = r.earliest_due().map_or(self.rx.after(r.wait_ns), |d| {
            d.min(self.rx.after(r.wait_ns))
        });
        let h = Held {
            first: claim.from,
            next: claim.to,
            what: What::Claim(claim),
            due,
            bytes: Vec::new(),
        };
        if !r.hold(&[], h) {
            self.release_repaired(cx, true);
            self.try_claim(claim, claim.to, cx.counters);
            return;
        }
        if claim.from > expected
            && let Some(rec) = &mut self.recovery
        {
            let gave_up = rec.push(expected, claim.from).0;
            let c = &mut cx.counters;
            c.retransmit_gave_up = c.retransmit_gave_up.saturating_add(gave_up);
        }
        self.release_repaired(cx, false);
    }

    /// Hands on the packets held behind gaps whose turn has come: the numbers before each
    /// came (from the feed or the server), its wait ran out by `cx`'s clock, or `force`. One
    /// handed on past numbers that never came counts in `repair_gave_up`, its gap as usual.
    #[inline(never)]
    #[cold]
    fn release_repaired(&mut self, cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>, force: bool) {
        loop {
            let Some(head) = self.repair.as_ref().and_then(|r| r.head()) else {
                return;
            };
            let filled = head.first <= self.next_seq;
            if !(filled || force || Nanos((cx.clock)()) >= head.due) {
                return;
            }
            let Some(h) = self.repair.as_mut().and_then(|r| r.take_head()) else {
                return;
            };
            if !filled && h.next > self.next_seq {
                cx.counters.repair_gave_up += 1;
            }
            let line = std::mem::replace(&mut self.line, Line::A);
            match h.what {
                What::Packet => self.deliver_cold(&h.bytes, cx),
                What::Answer => self.deliver_recovered(&h.bytes, cx),
                // Its run, taken as the packet that carried it would have (a run the feed
                // has passed already is no longer taken).
                What::Claim(c) => self.try_claim(c, c.to, cx.counters),
            }
            self.line = line;
            if let Some(r) = &mut self.repair {
                r.recycle(h.bytes);
            }
        }
    }

    /// Hands on an answer of the re-request server in order (with a book: see
    /// [`Sequencer::on_answer`]): what it brings past the next number is recovered and new.
    fn deliver_recovered(&mut self, payload: &[u8], cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>) {
        let line = std::mem::replace(&mut self.line, Line::Recovery);
        let before = cx.counters.messages;
        self.deliver_cold(payload, cx);
        cx.counters.recovered_messages += cx.counters.messages - before;
        self.line = line;
    }

    /// Held packet `i` of `session` is confirmed as the start of the feed: the trader locks on
    /// to it and trades it; whatever else was held was not the feed (another session's, or a
    /// wild number of this one) and is counted so.
    fn confirm_feed(
        &mut self,
        session: moldudp64::Session,
        i: usize,
        cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>,
    ) {
        self.lock(session, self.holding.slots[i].first);
        self.trade_held(i, cx);
        let (c, foreign) = (&mut cx.counters, &mut self.foreign);
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
    fn copy_of_held(&mut self, i: usize, count: u16, c: &mut Counters) {
        c.duplicate_messages += u64::from(count);
        if let Some(k) = self.line.index() {
            self.holding.slots[i].also |= 1 << k;
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
    fn trade_held(&mut self, i: usize, cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>) {
        let bytes = self.holding.take(i);
        let held = &self.holding.slots[i];
        let (first, next, also) = (held.first, held.next, held.also);
        let line = std::mem::replace(&mut self.line, held.line);
        self.deliver_cold(&bytes, cx);
        // Copies that came on the other line while it was held.
        if let (Some(l), Some(base)) = (&mut self.lines, self.base) {
            let others = Line::FEED.into_iter().zip(0..);
            for (other, k) in others.filter(|&(o, _)| o != self.line && also & o.bit() != 0) {
                l.saw(other, next);
                for seq in first.max(base)..next {
                    l.counts[k].received_messages += 1;
                    l.mark(other, seq);
                }
            }
        }
        self.line = line;
        self.holding.give_back(i, bytes);
    }

    /// [`Sequencer::deliver`] for the rare paths (held packets, confirmed jumps, the feed's
    /// first packets, A/B waits): one out-of-line copy, so the hot path's stays inlined.
    #[inline(never)]
    #[cold]
    fn deliver_cold(&mut self, payload: &[u8], cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>) {
        self.deliver(payload, cx);
    }

    /// Trades the messages of a packet of the feed whose header and framing were checked.
    #[inline(always)]
    fn deliver(&mut self, payload: &[u8], cx: &mut Cx<'_, impl Fn() -> u64, impl Sink>) {
        let packet = moldudp64::Packet::new_unchecked(payload);
        let first = packet.sequence();
        for (i, block) in packet.messages().enumerate() {
            let seq = first.saturating_add(i as u64);
            let new = self.admit(seq, cx.counters);
            // Only the feed's lines count here (the re-request server's answers never come
            // here: `on_answer`).
            if let Some(l) = &mut self.lines
                && let Some(k) = self.line.index()
            {
                let c = &mut l.counts[k];
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
            cx.counters.messages += 1;
            let Ok(block) = block else {
                cx.counters.malformed_messages += 1;
                continue;
            };
            cx.sink.message(seq, block, cx.counters);
        }
    }

    /// Sequence tracking: true when `seq` is new and in order (possibly after a gap): the feed
    /// advanced, at the current packet's receive time. The common case, the next number on a
    /// one-line feed, is a mark, an increment and a store.
    #[inline(always)]
    fn admit(&mut self, seq: u64, c: &mut Counters) -> bool {
        if seq == self.next_seq && self.lines.is_none() && seq != u64::MAX {
            self.mark(seq);
            self.next_seq = seq + 1;
            self.last_feed = Some(self.rx);
            return true;
        }
        self.admit_slow(seq, c)
    }

    /// [`Sequencer::admit`] for everything else: gaps, late and duplicate numbers, A/B feeds.
    #[inline(never)]
    fn admit_slow(&mut self, seq: u64, c: &mut Counters) -> bool {
        if self.base.is_some_and(|b| seq < b) {
            // From before the trader joined the feed: neither late nor a duplicate.
            c.before_join_messages += 1;
            return false;
        }
        if seq >= self.next_seq {
            self.pass_gap(seq, c);
            if let (Some(l), Some(base)) = (&mut self.lines, self.base) {
                l.advance(self.next_seq, seq.saturating_add(1), base);
            }
            // Forget what the window held for the sequence numbers we now move over.
            if seq - self.next_seq + 1 >= SEEN_WINDOW {
                self.seen.fill(0);
            } else {
                for s in self.next_seq..=seq.min(u64::MAX - 1) {
                    self.clear(s);
                }
            }
            self.mark(seq);
            self.next_seq = seq.saturating_add(1);
            self.last_feed = Some(self.rx);
            return true;
        }
        if self.next_seq - seq > SEEN_WINDOW || !self.is_marked(seq) {
            // Older than a gap we passed: the tick arrived late.
            c.late_messages += 1;
            if self.line == Line::Recovery {
                c.recovered_messages += 1;
            }
            if self.next_seq - seq <= SEEN_WINDOW {
                self.mark(seq);
            }
        } else {
            c.duplicate_messages += 1;
        }
        false
    }

    /// The numbers `[next_seq, to)` never came: a gap, counted and queued for recovery (the
    /// caller moves `next_seq` and the window).
    fn pass_gap(&mut self, to: u64, c: &mut Counters) {
        let skipped = to.saturating_sub(self.next_seq);
        if skipped > 0
            && let Some(rec) = &mut self.recovery
        {
            let gave_up = rec.push(self.next_seq, to).0;
            c.retransmit_gave_up = c.retransmit_gave_up.saturating_add(gave_up);
        }
        // Saturating: a hostile sequence number near u64::MAX must not wrap the counters.
        c.gap_messages = c.gap_messages.saturating_add(skipped);
    }

    /// Takes `claim`, carried by a packet numbered from `first`, when it may be taken (see
    /// [`Sequencer::on_packet_claimed`]).
    #[inline]
    fn try_claim(&mut self, claim: Claim, first: u64, c: &mut Counters) {
        if self.claim_applies(claim, first) && self.line == Line::A {
            self.take_claim(claim, c);
        }
    }

    /// Whether `claim`, carried by a packet numbered from `first`, may be taken now (the
    /// packet's line aside: see [`Sequencer::on_packet_claimed`]).
    #[inline]
    fn claim_applies(&self, claim: Claim, first: u64) -> bool {
        claim.to > self.next_seq
            && claim.to <= first
            && claim.from <= self.next_seq.saturating_add(self.rules.max_jump)
            && self.lines.is_none()
    }

    /// A driver filter's claim ([`Sequencer::on_packet_claimed`]) whose run ends past the
    /// feed's next number and at or before the packet that carries it: what the run covers is
    /// taken as received and empty, what lies before it is a gap. Most passed packets carry
    /// one on a full-depth feed, so it is not cold.
    #[inline]
    fn take_claim(&mut self, claim: Claim, c: &mut Counters) {
        let first = claim.to;
        let from = claim.from.clamp(self.next_seq, first);
        if from > self.next_seq {
            // The run broke at a loss: its start is after the numbers that never came.
            self.pass_gap(from, c);
        }
        if first - self.next_seq >= SEEN_WINDOW {
            self.seen.fill(0);
            for s in first.saturating_sub(SEEN_WINDOW).max(from)..first {
                self.mark(s);
            }
        } else {
            for s in self.next_seq..from {
                self.clear(s);
            }
            for s in from..first {
                self.mark(s);
            }
        }
        c.filtered_skipped = c.filtered_skipped.saturating_add(first - from);
        self.next_seq = first;
        self.last_feed = Some(self.rx);
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
    let (w, b) = Sequencer::slot(seq);
    seen.get(w).is_some_and(|word| word & b != 0)
}

/// What a feed packet's messages look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Framed soundly, and it fits the feed's profile ([`PROFILE_MAX_BYTES`]).
    Sound,
    /// The blocks don't tile the payload exactly as its message count says, or one is empty.
    /// A zero-length block is malformed framing, not a malformed message: no ITCH message is
    /// empty, and taking one as a message would let a packet of nothing but length prefixes
    /// consume sequence numbers (the messages iterator's errors are exactly these).
    Malformed,
    /// Framed soundly, but not as the feed sends: a message that is not an ITCH 5.0 message
    /// of a known type at its exact length, or a datagram larger than one frame carries.
    OffProfile,
}

/// The packet's [`Shape`] (`len`: its payload's length). One pass over the blocks.
#[inline]
fn shape(packet: &moldudp64::Packet<&[u8]>, len: usize) -> Shape {
    let mut fits = len <= PROFILE_MAX_BYTES;
    for m in packet.messages() {
        let Ok(m) = m else {
            return Shape::Malformed;
        };
        fits &= m.first().and_then(|&k| itch::message_len(k)) == Some(m.len());
    }
    if fits {
        Shape::Sound
    } else {
        Shape::OffProfile
    }
}
