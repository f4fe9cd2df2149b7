//! Which packets are the feed: the session, where its sequence starts, and forward jumps that
//! the following packets must confirm before the trader acts on them.
//!
//! One stray or forged datagram must never cost the trader its session. So nothing a single
//! packet claims is believed on its own word when believing it would move the trader away
//! from the feed it is following:
//! - **Session and start.** Unless `--session` and `--first-seq` say where the feed is, the
//!   first packet of a session is held, not traded: the session and its first sequence number
//!   are taken only when a later packet of the same session continues its sequence (its first
//!   sequence number is the held packet's next one). Then the held packet is traded, and the
//!   later one: the feed's first packet is decided one packet late. A stray datagram of another session, or
//!   of the right one with a wild sequence number, is never continued, so it is dropped when
//!   the real feed is confirmed (counted in `wrong_session` or `suspect_sequence`).
//! - **Forward jumps.** Once the feed is known, a packet whose first sequence number is more
//!   than [`FeedRules::max_jump`] past the next expected one is held and counted in
//!   `suspect_sequence`; the expected sequence stays with the feed. If a packet continues the held one's
//!   sequence, the jump was real (an outage, a burst of loss): the held packet and then that one
//!   are traded, the skipped numbers count as a gap, and `jumps_confirmed` counts it (and
//!   `suspect_sequence` no longer does). Jumps up to `max_jump` are acted on at once, as gaps.
//!   A lie told twice in sequence (two forged packets, the second continuing the first) is
//!   believed: confirmation guards against stray and corrupted datagrams, not a forger who
//!   controls a stream of them. A real jump whose next packet is lost is held again from the
//!   packet after: the first packet after the jump is then dropped (counted as a suspect).
//! - **Another session after the start** is rejected (`wrong_session`) and named in the report;
//!   the trader never follows a session change mid-run (the exchange ends a session with its
//!   end-of-session packet, which ends the trader's run).
//!
//! Held packets live in a few preallocated buffers; nothing here allocates after start-up.
use wire::moldudp64::Session;

/// Forward jumps larger than this many sequence numbers wait for the next packet to confirm
/// them. Up to it, a forged jump costs at most this many real ticks (counted late); above it,
/// a real jump (an outage, a burst of loss) delays the first packet after it by one packet.
pub const DEFAULT_MAX_JUMP: u64 = 256;

/// Packets held at once, waiting for a packet that continues their sequence. With more
/// unconfirmed packets than this, the oldest is dropped.
pub const HELD: usize = 4;

/// The largest packet that can be held: more than any UDP payload in a 1500-byte MTU frame and
/// than an AF_XDP frame's 2048 bytes. A larger unconfirmed packet is dropped, not held.
pub const HOLD_MAX: usize = 2048;

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
}

impl Default for FeedRules {
    fn default() -> Self {
        FeedRules {
            session: None,
            first_seq: None,
            max_jump: DEFAULT_MAX_JUMP,
        }
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
    pub(crate) line: usize,
    /// Other lines that delivered a copy while it was held (bit per line).
    pub(crate) also: u8,
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
                line: 0,
                also: 0,
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

    /// Holds `bytes`; returns the packet it displaced (its session), if the slots were full.
    /// `None` in the outer option: too large to hold.
    pub(crate) fn hold(
        &mut self,
        session: Session,
        first: u64,
        next: u64,
        bytes: &[u8],
        line: usize,
    ) -> Option<Option<Session>> {
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
        Some(displaced)
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
