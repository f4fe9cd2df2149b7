//! Which packets are the feed: the session, where its sequence starts, and forward jumps that
//! the trader believes only once the stream it leaves has stopped.
//!
//! One stray or forged datagram must never cost the trader its session, and a forger who sends
//! datagrams that look exactly like the feed (its session, even its source address) must not
//! move the expected sequence number, end the run, or get a jump traded while the real feed
//! flows. So nothing a packet claims is believed on its own word when believing it would move
//! the trader away from the feed it is following:
//! - **Session and start.** Unless `--session` and `--first-seq` say where the feed is, the
//!   first packet of a session is held, not traded: the session and its first sequence number
//!   are taken only when a later packet of the same session continues its sequence (its first
//!   sequence number is the held packet's next one). Then the held packet is traded, and the
//!   later one: the feed's first packet is decided one packet late. A stray datagram of another
//!   session, or of the right one with a wild sequence number, is never continued, so it is
//!   dropped when the real feed is confirmed (counted in `wrong_session` or
//!   `suspect_sequence`). Two forged packets in sequence sent before the real feed's first two
//!   are taken as the feed: pin the session and start against a forger.
//! - **Forward jumps.** Once the feed is known, a packet whose first sequence number is more
//!   than [`FeedRules::max_jump`] past the next expected one is held and counted in
//!   `suspect_sequence`; the expected sequence stays with the feed. A packet that continues a
//!   held one's sequence confirms the jump only when the stream the jump leaves has stopped:
//!   (a) no packet advanced the feed since the held packet was held (and none waits for the
//!   other line of an A/B feed), and the feed has been silent for at least
//!   [`FeedRules::quiet_ns`] when the continuing packet arrives (times are the receive times
//!   the I/O loop passes to `Trader::arrived`; before the feed ever advanced, the silence
//!   counts from the first jump or end claim held); and (b) the jump is no larger than the feed
//!   could have produced in that silence: the continuing packet's first number is at most
//!   [`FeedRules::max_rate`] × silence + `max_jump` past the next expected one. Or (c) on an
//!   A/B feed, the other line delivers a copy of a held packet: that confirms it at once. A
//!   confirmed jump trades its held packets in order, then the confirming one; the skipped
//!   numbers count as a gap, `jumps_confirmed` counts it, and `suspect_sequence` no longer
//!   counts the packets traded. Jumps up to `max_jump` are acted on at once, as gaps.
//! - **A continuing packet that does not confirm** is held too (in `suspect_sequence` and
//!   `jumps_refused` until a later confirmation trades it): the chain of held packets grows
//!   with the stream that follows the jump. A forger's chain is never believed while the real
//!   feed flows (each real packet moves the feed, so the chain must start again after it, and
//!   the silence stays short). A real outage that ends in a restart at a higher number looks
//!   like this: the old stream stops, the new one flows, each of its packets continues the
//!   chain, and the first one that arrives with the old stream silent for `quiet_ns` and the
//!   jump within `max_rate` × silence confirms it. **What is lost:** only the newest [`HELD`]
//!   packets of the chain are held, so of what the new stream sent before that moment (after
//!   `quiet_ns` of silence, or jump ÷ `max_rate` for a larger jump) all but the last [`HELD`]
//!   packets are dropped (they stay in `suspect_sequence`, continuations in `jumps_refused`)
//!   and their numbers count as a gap (`--retransmit` asks for them; recovered, not traded). An
//!   outage longer than both loses nothing: the jump's second packet confirms it. A real jump
//!   whose next packet is lost is held again from the packet after: the first packet after
//!   the jump is then dropped (counted as a suspect). A jump larger than `max_rate` × the
//!   silence the old stream keeps is never believed; nor is anything, without an A/B copy, if
//!   the loop passes no receive times.
//! - **The feed's profile.** A packet whose messages are not all ITCH 5.0 messages of a known
//!   type at their exact length, or larger than one frame ([`PROFILE_MAX_BYTES`]), is not
//!   what the feed sends: whatever its number it is held as a jump is, never traded on its
//!   own word (`off_profile`). A datagram of hundreds of one-byte messages can't move the
//!   trader hundreds of numbers.
//! - **What a forger can still do.** Packets within `max_jump` of the feed that fit the
//!   profile are traded at once: a forged one costs at most `max_jump` +
//!   [`PROFILE_MAX_MESSAGES`] real messages (359 with the defaults): the numbers it jumped
//!   count as a gap (the real ones late), the numbers it carried as duplicates. While the real feed is
//!   silent for `s` ≥ `quiet_ns` (a quiet market), two forged packets in sequence can move the
//!   trader up to `max_rate` × `s` + `max_jump` ahead, or end the run with an end of session
//!   sent twice that far ahead. A forger on both lines of an A/B feed confirms a jump with its
//!   copy. An end of session at the feed's next number is believed on its repeat after the
//!   feed stopped, or on the feed's silence for `quiet_ns` after it: one forged while the feed
//!   flows costs nothing (the next real packet passes it); in a quiet market it ends the run
//!   `quiet_ns` later.
//! - **Heartbeats** say nothing the trader acts on: whatever their sequence number, they count
//!   in `heartbeats` (the feed is alive) and never move the expected number, confirm a jump or
//!   count as the feed advancing.
//! - **Another session after the start** is rejected (`wrong_session`) and named in the report;
//!   the trader never follows a session change mid-run (the exchange ends a session with its
//!   end-of-session packet, which ends the trader's run; see `Trader` for when one past the
//!   next number is believed: by the same silence rules as a jump).
//!
//! Held packets live in a few preallocated buffers; nothing here allocates after start-up.
use wire::moldudp64::Session;

use crate::{HOLD_MAX, lines::Line};

/// Forward jumps larger than this many sequence numbers wait for the next packet to confirm
/// them. Up to it, a forged jump costs at most this many real ticks (counted late); above it,
/// a real jump (an outage, a burst of loss) delays the first packet after it by one packet, or
/// more when the old stream was silent for less than [`DEFAULT_QUIET_NS`].
pub const DEFAULT_MAX_JUMP: u64 = 256;

/// How long the feed must have been silent (no packet advancing it) before a jump or a tail
/// past the next number is believed, by default (ns): 1 ms. A flowing feed (the lab's replay,
/// an active market) sends a packet every few microseconds, so a 1 ms silence is hundreds of
/// its usual gaps: the old stream really stopped. It is the same as the A/B wait
/// ([`crate::lines::DEFAULT_WAIT_NS`]), and the lab's exchange repeats its end of session 2 ms
/// apart, so a repeat always comes after it. Longer costs a real restart more packets.
pub const DEFAULT_QUIET_NS: u64 = 1_000_000;

/// The fastest the feed produces sequence numbers, by default (messages a second): a jump or
/// lost tail is believed only if it is no larger than this × the silence before it (+
/// `max_jump`). 1,000,000/s is far above the lab's replay and about the peak rate of a busy
/// exchange's whole ITCH feed; a faster feed wants it raised (a forger gains in proportion).
pub const DEFAULT_MAX_RATE: u64 = 1_000_000;

/// The largest feed datagram the feed's profile takes (bytes of UDP payload): one Ethernet
/// frame's at a 1,500-byte MTU, as the exchange sends (a real MoldUDP64 feed never fragments).
/// With every message an ITCH 5.0 message at its type's length (the smallest, a System Event,
/// is 12 bytes and its length prefix 2), a datagram that fits carries at most 103 messages:
/// what a lie from the feed's exact source within `max_jump` can cost, on top of `max_jump`.
pub const PROFILE_MAX_BYTES: usize = 1472;

/// The most messages a datagram that fits the feed's profile carries: (1,472 − 20) / 14.
pub const PROFILE_MAX_MESSAGES: u64 = ((PROFILE_MAX_BYTES - 20) / 14) as u64;

/// Packets held at once, waiting for a packet that continues their sequence. With more
/// unconfirmed packets than this, the oldest is dropped.
pub const HELD: usize = 4;

/// Foreign sessions the report names (the first ones seen).
pub const FOREIGN_MAX: usize = 8;

/// How the trader tells the feed from stray and forged datagrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedRules {
    /// Take only this session (`None`: learn it from the traffic).
    pub session: Option<Session>,
    /// The feed's next sequence number is known (`None`: learn it from the first packets).
    /// With both set the trader trades the first packet at once.
    pub first_seq: Option<u64>,
    /// Forward jumps larger than this wait for confirmation.
    pub max_jump: u64,
    /// A jump (or a tail past the next number) is believed only after the feed was silent this
    /// long (ns, on the receive times given to `Trader::arrived`) ([`DEFAULT_QUIET_NS`]).
    pub quiet_ns: u64,
    /// The most sequence numbers a second the feed produces: a jump is believed only if it is
    /// at most this × the silence before it, + `max_jump` ([`DEFAULT_MAX_RATE`]).
    pub max_rate: u64,
}

impl Default for FeedRules {
    fn default() -> Self {
        FeedRules {
            session: None,
            first_seq: None,
            max_jump: DEFAULT_MAX_JUMP,
            quiet_ns: DEFAULT_QUIET_NS,
            max_rate: DEFAULT_MAX_RATE,
        }
    }
}

impl FeedRules {
    /// How far past the feed's next number a jump or tail may reach after `silence_ns` of
    /// silence: `max_rate` × silence + `max_jump` (saturating).
    pub fn allowed_jump(&self, silence_ns: u64) -> u64 {
        let produced = u128::from(self.max_rate) * u128::from(silence_ns) / 1_000_000_000;
        u64::try_from(produced)
            .unwrap_or(u64::MAX)
            .saturating_add(self.max_jump)
    }
}

/// One held packet.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) session: Session,
    /// Its first sequence number.
    pub(crate) first: u64,
    /// The sequence number after its messages.
    pub(crate) next: u64,
    /// Its bytes (empty: the slot is free).
    pub(crate) bytes: Vec<u8>,
    /// When it was held (a counter): the oldest goes first.
    pub(crate) stamp: u64,
    /// The line it came on (A/B feeds).
    pub(crate) line: Line,
    /// Other lines that delivered a copy while it was held (bit per line).
    pub(crate) also: u8,
    /// The feed's next expected number when it was held: if the feed has moved since, the
    /// stream the jump leaves had not stopped.
    pub(crate) feed_next: u64,
    /// It continued a held packet and was refused (counted in `jumps_refused`).
    pub(crate) refused: bool,
}

/// The held packets.
#[derive(Debug)]
pub(crate) struct Holding {
    pub(crate) slots: [Held; HELD],
    stamp: u64,
    /// Slots in use (a packet is held): 0 on a healthy feed, so the per-packet checks are one
    /// comparison.
    in_use: usize,
}

impl Holding {
    pub(crate) fn new() -> Holding {
        Holding {
            slots: std::array::from_fn(|_| Held {
                session: Session([b' '; 10]),
                first: 0,
                next: 0,
                bytes: Vec::with_capacity(HOLD_MAX),
                stamp: 0,
                line: Line::A,
                also: 0,
                feed_next: 0,
                refused: false,
            }),
            stamp: 0,
            in_use: 0,
        }
    }

    /// Frees slot `i` and hands back its bytes (to be returned with [`Holding::give_back`]).
    pub(crate) fn take(&mut self, i: usize) -> Vec<u8> {
        let bytes = std::mem::take(&mut self.slots[i].bytes);
        if !bytes.is_empty() {
            self.in_use -= 1;
        }
        bytes
    }

    /// Returns a buffer taken with [`Holding::take`] to slot `i` (empty, capacity kept).
    pub(crate) fn give_back(&mut self, i: usize, mut bytes: Vec<u8>) {
        bytes.clear();
        self.slots[i].bytes = bytes;
    }

    /// The held packet that a packet of `session` starting at `first` continues: `first` is
    /// its next sequence number, exactly. (Not "close to it": two independent lies a little
    /// apart would confirm each other.)
    pub(crate) fn continued_by(&self, session: Session, first: u64) -> Option<usize> {
        if self.in_use == 0 {
            return None;
        }
        self.slots
            .iter()
            .position(|h| !h.bytes.is_empty() && h.session == session && first == h.next)
    }

    /// The slot holding a packet of `session` starting at `first`.
    pub(crate) fn find(&self, session: Session, first: u64) -> Option<usize> {
        if self.in_use == 0 {
            return None;
        }
        self.slots
            .iter()
            .position(|h| !h.bytes.is_empty() && h.session == session && h.first == first)
    }

    /// Holds `bytes`; returns its slot (its `feed_next` and `refused` cleared, for the caller
    /// to set) and the packet it displaced (its session), if the slots were full. `None`: too
    /// large to hold.
    pub(crate) fn hold(
        &mut self,
        session: Session,
        first: u64,
        next: u64,
        bytes: &[u8],
        line: Line,
    ) -> Option<(usize, Option<Session>)> {
        if bytes.len() > HOLD_MAX {
            return None;
        }
        let i = self
            .slots
            .iter()
            .position(|h| h.bytes.is_empty())
            .or_else(|| {
                self.slots
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, h)| h.stamp)
                    .map(|(i, _)| i)
            })
            .unwrap_or(0);
        self.stamp += 1;
        let h = &mut self.slots[i];
        let displaced = (!h.bytes.is_empty()).then_some(h.session);
        if displaced.is_none() {
            self.in_use += 1;
        }
        h.bytes.clear();
        h.bytes.extend_from_slice(bytes);
        h.session = session;
        h.first = first;
        h.next = next;
        h.stamp = self.stamp;
        h.line = line;
        h.also = 0;
        h.feed_next = 0;
        h.refused = false;
        Some((i, displaced))
    }

    /// The held chain that ends with slot `i`: the held packets each continuing the one before,
    /// oldest first, into `chain`; returns how many.
    pub(crate) fn chain_to(&self, i: usize, chain: &mut [usize; HELD]) -> usize {
        let session = self.slots[i].session;
        let mut n = 0;
        let mut at = i;
        loop {
            chain[n] = at;
            n += 1;
            match self.continued_by(session, self.slots[at].first) {
                Some(j) if n < HELD && !chain[..n].contains(&j) => at = j,
                _ => break,
            }
        }
        chain[..n].reverse();
        n
    }

    /// Empties every slot, calling `dropped` with the session of each packet that was held.
    pub(crate) fn clear(&mut self, mut dropped: impl FnMut(Session)) {
        for h in &mut self.slots {
            if !h.bytes.is_empty() {
                dropped(h.session);
                h.bytes.clear();
            }
        }
        self.in_use = 0;
    }

    /// Empties the slots whose packet starts before `next` (the feed has passed it).
    #[inline]
    pub(crate) fn drop_passed(&mut self, next: u64) {
        if self.in_use == 0 {
            return;
        }
        for h in &mut self.slots {
            if !h.bytes.is_empty() && h.first < next {
                h.bytes.clear();
                self.in_use -= 1;
            }
        }
    }
}

/// Sessions other than the feed's, with the packets each sent, as the report names them.
#[derive(Debug, Clone, Copy, Default)]
pub struct ForeignSessions {
    seen: [Option<(Session, u64)>; FOREIGN_MAX],
    /// Packets of sessions past the first [`FOREIGN_MAX`].
    pub others: u64,
}

impl ForeignSessions {
    /// Counts one packet of `session`.
    pub fn count(&mut self, session: Session) {
        for slot in &mut self.seen {
            match slot {
                Some((s, n)) if *s == session => {
                    *n += 1;
                    return;
                }
                None => {
                    *slot = Some((session, 1));
                    return;
                }
                Some(_) => {}
            }
        }
        self.others += 1;
    }

    /// The sessions seen, with their packet counts, in the order first seen.
    pub fn iter(&self) -> impl Iterator<Item = (Session, u64)> + '_ {
        self.seen.iter().flatten().copied()
    }
}
