//! A/B line arbitration's accounting: exchanges publish MoldUDP64 on two lines with the same
//! sequence numbers, and the trader takes the first copy of each number from either (the
//! sequence tracker already drops the second as a duplicate). What this adds is the account
//! per line: what each delivered, what it delivered first, and what it lost that the other
//! line filled.
//!
//! Arbitration waits for the slower line: a packet that arrives past a gap is not traded at
//! once but held until the gap is filled by either line, or both lines have shown they are past
//! it (it is lost on both), or [`DEFAULT_WAIT_NS`] (`--ab-wait-us`) has passed since it came.
//! So a tick lost on one line only is traded in order, as if nothing was lost; the price is the
//! wait on the packets behind a one-line gap, normally the skew between the lines.
//!
//! Whether a line ever delivered a number is known once the number leaves the tracker's
//! window (65,536 numbers behind the feed) or the run ends: each line keeps one bit per
//! number in the window, and a number is classified as it leaves.
use std::collections::VecDeque;

use results::LineCounts;

use crate::{HOLD_MAX, SEEN_WINDOW, time::Nanos};

/// The lines a feed can come on: A and B.
pub const LINES: usize = 2;

/// Where a packet came from: one of the feed's lines, or the exchange's re-request server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Line {
    /// Line A: the only line of a one-line feed.
    #[default]
    A,
    /// Line B of an A/B feed.
    B,
    /// An answer of the re-request server, not either line: its messages count as recovered
    /// and for neither line.
    Recovery,
}

impl Line {
    /// The feed's lines, A then B.
    pub const FEED: [Line; LINES] = [Line::A, Line::B];

    /// The feed line numbered `i` (0: A, 1: B); `None` past B.
    pub const fn feed(i: usize) -> Option<Line> {
        match i {
            0 => Some(Line::A),
            1 => Some(Line::B),
            _ => None,
        }
    }

    /// The feed line's number (A 0, B 1); `None` for [`Line::Recovery`].
    #[inline]
    pub const fn index(self) -> Option<usize> {
        match self {
            Line::A => Some(0),
            Line::B => Some(1),
            Line::Recovery => None,
        }
    }

    /// The feed line's bit in a set of lines (A 1, B 2); 0 for [`Line::Recovery`].
    #[inline]
    pub const fn bit(self) -> u8 {
        match self {
            Line::A => 1,
            Line::B => 2,
            Line::Recovery => 0,
        }
    }
}

/// How long a packet past a gap waits for the other line to fill the gap, by default (ns).
pub const DEFAULT_WAIT_NS: u64 = 1_000_000;

/// Packets waiting at most; one more releases the oldest at once.
pub const WAIT_MAX: usize = 64;

/// A packet waiting for a gap before it to be filled.
#[derive(Debug)]
pub(crate) struct Waiting {
    pub(crate) first: u64,
    pub(crate) line: Line,
    /// When it stops waiting.
    pub(crate) due: Nanos,
    pub(crate) bytes: Vec<u8>,
}

/// Per-line bits and counts, and the packets waiting for the slower line.
#[derive(Debug)]
pub(crate) struct Lines {
    seen: [Box<[u64]>; LINES],
    pub(crate) counts: [LineCounts; LINES],
    /// Numbers neither line delivered.
    pub(crate) lost_on_both: u64,
    /// Per line, the number after the highest it delivered.
    line_next: [u64; LINES],
    /// Packets waiting, ordered by first sequence number.
    waiting: VecDeque<Waiting>,
    /// Buffers for waiting packets (allocated once).
    pool: Vec<Vec<u8>>,
    /// How long a packet waits at most (ns).
    pub(crate) wait_ns: u64,
}

impl Lines {
    pub(crate) fn new() -> Lines {
        Lines {
            seen: std::array::from_fn(|_| vec![0u64; (SEEN_WINDOW / 64) as usize].into()),
            counts: [LineCounts::default(); LINES],
            lost_on_both: 0,
            line_next: [0; LINES],
            waiting: VecDeque::with_capacity(WAIT_MAX),
            pool: (0..WAIT_MAX)
                .map(|_| Vec::with_capacity(HOLD_MAX))
                .collect(),
            wait_ns: DEFAULT_WAIT_NS,
        }
    }

    /// Line `line` delivered numbers up to `next` (exclusive).
    #[inline]
    pub(crate) fn saw(&mut self, line: Line, next: u64) {
        if let Some(n) = line.index().and_then(|i| self.line_next.get_mut(i)) {
            *n = (*n).max(next);
        }
    }

    /// Both lines delivered something past `seq`: if `seq` hasn't come, it is lost on both.
    pub(crate) fn both_past(&self, seq: u64) -> bool {
        self.line_next.iter().all(|&n| n > seq)
    }

    /// Something is waiting.
    #[inline]
    pub(crate) fn any_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// The waiting packet with the lowest first number.
    pub(crate) fn head(&self) -> Option<&Waiting> {
        self.waiting.front()
    }

    /// Takes the head out; give its bytes back with [`Lines::recycle`].
    pub(crate) fn take_head(&mut self) -> Option<Waiting> {
        self.waiting.pop_front()
    }

    /// A buffer back to the pool.
    pub(crate) fn recycle(&mut self, mut bytes: Vec<u8>) {
        bytes.clear();
        if self.pool.len() < WAIT_MAX {
            self.pool.push(bytes);
        }
    }

    /// Holds `bytes` (numbered from `first`, from `line`) until `due`; false when it can't
    /// (all buffers in use, or too large): the caller releases what waits and trades it.
    pub(crate) fn hold(&mut self, bytes: &[u8], first: u64, line: Line, due: Nanos) -> bool {
        if bytes.len() > HOLD_MAX {
            return false;
        }
        let Some(mut buf) = self.pool.pop() else {
            return false;
        };
        buf.extend_from_slice(bytes);
        let at = self
            .waiting
            .iter()
            .rposition(|w| w.first <= first)
            .map_or(0, |i| i + 1);
        self.waiting.insert(
            at,
            Waiting {
                first,
                line,
                due,
                bytes: buf,
            },
        );
        true
    }

    /// Packets still waiting when the run ended without an end of session: dropped.
    pub(crate) fn drop_waiting(&mut self) -> u64 {
        let n = self.waiting.len() as u64;
        while let Some(w) = self.waiting.pop_front() {
            self.recycle(w.bytes);
        }
        n
    }

    #[inline]
    fn slot(seq: u64) -> (usize, u64) {
        let i = seq % SEEN_WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    fn bit(&self, line: usize, seq: u64) -> bool {
        let (w, b) = Self::slot(seq);
        self.seen[line].get(w).is_some_and(|x| x & b != 0)
    }

    /// Line `line` delivered `seq` (a number the window tracks).
    #[inline]
    pub(crate) fn mark(&mut self, line: Line, seq: u64) {
        let (w, b) = Self::slot(seq);
        if let Some(x) = line
            .index()
            .and_then(|i| self.seen.get_mut(i))
            .and_then(|s| s.get_mut(w))
        {
            *x |= b;
        }
    }

    /// Settles `seq`: who delivered it.
    fn classify(&mut self, seq: u64) {
        match (self.bit(0, seq), self.bit(1, seq)) {
            (true, true) => {}
            (true, false) => self.counts[1].gaps_filled_by_other += 1,
            (false, true) => self.counts[0].gaps_filled_by_other += 1,
            (false, false) => self.lost_on_both += 1,
        }
        let (w, b) = Self::slot(seq);
        for s in &mut self.seen {
            if let Some(x) = s.get_mut(w) {
                *x &= !b;
            }
        }
    }

    /// The feed's next number moves from `from` to `to`: the numbers that leave the window
    /// (those at or after `base`, the first the trader took) are settled.
    pub(crate) fn advance(&mut self, from: u64, to: u64, base: u64) {
        // Tracked: from - W..from; then to - W..to. A jump of W or more settles all of it.
        let leaving_from = from.saturating_sub(SEEN_WINDOW).max(base);
        let leaving_to = to.saturating_sub(SEEN_WINDOW).max(base).min(from);
        for s in leaving_from..leaving_to {
            self.classify(s);
        }
    }

    /// The run is over: every number still tracked, from `base` (or the window's start) to
    /// `next`, is settled.
    pub(crate) fn finish(&mut self, base: u64, next: u64) {
        for s in next.saturating_sub(SEEN_WINDOW).max(base)..next {
            self.classify(s);
        }
    }
}
