//! Book repair: a trader that keeps a book doesn't trade through a gap. A ticker strategy can
//! skip a lost tick (the next one carries a price of its own), but a book can't skip a lost Add
//! or Cancel: every later message of that order would be refused or applied to the wrong
//! shares, and the book would be wrong for the rest of the day (MoldUDP64 has no snapshot; on
//! NASDAQ that is GLIMPSE, another service).
//!
//! So, with a book and a re-request server, a packet past a gap is held here, its gap queued
//! for [`recovery`](crate::recovery) at once, and the feed waits: the server's answers are
//! handed on in order, as the feed would have been, and then the held packets behind them.
//! A gap that is not filled within the wait (`--repair-wait-ms`, [`DEFAULT_WAIT_NS`]), or a hold
//! that would outgrow [`HELD_MAX`] packets, is given up: what is held goes on past the gap as a
//! trader without a book would (`gap_messages`), the book knowingly short (`repair_gave_up`),
//! and what the server sends for it later is late, as always.
//!
//! The price is latency behind a gap: every tick behind it waits for the answer (a round trip
//! to the server), which the report's tick-to-trade shows as it is. The numbers a
//! [driver filter's](crate::sequencer::Sequencer::on_packet_claimed) claim covers are no gap:
//! a claim a held packet carried is held beside it, and taken in its turn.
//!
//! Nothing here allocates after start-up.
use std::collections::VecDeque;

use xdp_common::filter::Claim;

use crate::{HOLD_MAX, time::Nanos};

/// Entries held behind a gap at most (packets, answers, and the driver filter's claims, each
/// a buffer): 8 MiB of buffers, ~33 ms of a 2M message/s feed at 16 messages a packet (the
/// driver filter passes far fewer, each with a claim beside it).
pub const HELD_MAX: usize = 4_096;
/// How long a packet waits behind a gap for the server's answer by default (ns): more than
/// two of [`recovery`](crate::recovery)'s tries.
pub const DEFAULT_WAIT_NS: u64 = 50_000_000;

/// What is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum What {
    /// A packet of the feed.
    Packet,
    /// An answer of the re-request server.
    Answer,
    /// A driver filter's claim that a passed packet carried: its run of dropped numbers,
    /// taken in its turn like a packet (its bytes are empty).
    Claim(Claim),
}

/// A packet (or a claim) held behind a gap.
#[derive(Debug)]
pub(crate) struct Held {
    /// Its first sequence number (a claim's: where its run began).
    pub(crate) first: u64,
    /// The number after its last.
    pub(crate) next: u64,
    /// What it is.
    pub(crate) what: What,
    /// When its wait is over.
    pub(crate) due: Nanos,
    /// The packet.
    pub(crate) bytes: Vec<u8>,
}

/// The packets held, ordered by first number, and their buffers.
#[derive(Debug)]
pub(crate) struct Repair {
    held: VecDeque<Held>,
    pool: Vec<Vec<u8>>,
    /// How long a packet waits at most (ns).
    pub(crate) wait_ns: u64,
}

impl Repair {
    pub(crate) fn new(wait_ns: u64) -> Repair {
        Repair {
            held: VecDeque::with_capacity(HELD_MAX),
            pool: (0..HELD_MAX)
                .map(|_| Vec::with_capacity(HOLD_MAX))
                .collect(),
            wait_ns,
        }
    }

    /// Something is held.
    #[inline(always)]
    pub(crate) fn holding(&self) -> bool {
        !self.held.is_empty()
    }

    /// The held packet with the lowest first number.
    pub(crate) fn head(&self) -> Option<&Held> {
        self.held.front()
    }

    /// Takes the head out; give its bytes back with [`Repair::recycle`].
    pub(crate) fn take_head(&mut self) -> Option<Held> {
        self.held.pop_front()
    }

    /// A buffer back to the pool.
    pub(crate) fn recycle(&mut self, mut bytes: Vec<u8>) {
        bytes.clear();
        if self.pool.len() < HELD_MAX {
            self.pool.push(bytes);
        }
    }

    /// Where the numbers held before a packet numbered from `first` end: the `next` of the
    /// held packet before it (`None`: nothing held before it).
    pub(crate) fn end_before(&self, first: u64) -> Option<u64> {
        self.held
            .iter()
            .take_while(|h| h.first < first)
            .map(|h| h.next)
            .max()
    }

    /// The number after the highest held (`None`: nothing held): where the feed would be had
    /// the gaps been passed, what a jump is measured from while a gap is held.
    pub(crate) fn end(&self) -> Option<u64> {
        self.held.iter().map(|h| h.next).max()
    }

    /// Whether a packet (or answer) holding every number of `first..next` is held already (a
    /// shorter one at the same first number is not: the longer is held beside it, and what it
    /// repeats counts as duplicates when its turn comes).
    pub(crate) fn has(&self, first: u64, next: u64) -> bool {
        self.held
            .iter()
            .any(|h| h.first == first && h.next >= next && !matches!(h.what, What::Claim(_)))
    }

    /// The earliest wait's end among what is held.
    pub(crate) fn earliest_due(&self) -> Option<Nanos> {
        self.held.iter().map(|h| h.due).min()
    }

    /// Holds `bytes` (numbers `first..next`, with its claim) until `due`, in order of first
    /// number; false when it can't (every buffer in use, or the packet too large).
    pub(crate) fn hold(&mut self, bytes: &[u8], h: Held) -> bool {
        if bytes.len() > HOLD_MAX {
            return false;
        }
        let Some(mut buf) = self.pool.pop() else {
            return false;
        };
        buf.extend_from_slice(bytes);
        let at = self
            .held
            .iter()
            .rposition(|w| w.first <= h.first)
            .map_or(0, |i| i + 1);
        self.held.insert(at, Held { bytes: buf, ..h });
        true
    }

    /// Packets still held when the run ended: dropped, their count returned.
    pub(crate) fn drop_held(&mut self) -> u64 {
        let n = self.held.len() as u64;
        while let Some(h) = self.held.pop_front() {
            self.recycle(h.bytes);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(first: u64, next: u64) -> Held {
        Held {
            first,
            next,
            what: What::Packet,
            due: Nanos(0),
            bytes: Vec::new(),
        }
    }

    #[test]
    fn held_packets_come_out_in_number_order_whatever_order_they_came_in() {
        let mut r = Repair::new(1);
        for (first, next) in [(30, 40), (10, 20), (20, 30)] {
            assert!(r.hold(&[first as u8], held(first, next)));
        }
        assert_eq!(r.end_before(30), Some(30));
        assert_eq!(r.end_before(10), None);
        assert_eq!(r.end(), Some(40));
        assert!(r.has(20, 30) && r.has(20, 25) && !r.has(20, 31) && !r.has(25, 30));
        let mut order = Vec::new();
        while let Some(h) = r.take_head() {
            order.push((h.first, h.bytes[0]));
            r.recycle(h.bytes);
        }
        assert_eq!(order, [(10, 10), (20, 20), (30, 30)]);
    }

    #[test]
    fn a_full_hold_refuses_and_says_so() {
        let mut r = Repair::new(1);
        for i in 0..HELD_MAX as u64 {
            assert!(r.hold(&[0], held(i, i + 1)));
        }
        assert!(!r.hold(&[0], held(1 << 40, (1 << 40) + 1)));
        assert!(!Repair::new(1).hold(&[0; HOLD_MAX + 1], held(0, 1)));
        assert_eq!(r.drop_held(), HELD_MAX as u64);
        assert!(!r.holding());
    }
}
