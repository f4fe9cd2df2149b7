//! Gap recovery: which sequence numbers to ask the exchange's re-request server for, and when.
//!
//! Each gap the trader skips over is queued. [`Recovery::next_request`] (called by the loop
//! between packets, never inside one) hands out one MoldUDP64 re-request at a time: at most one
//! per [`MIN_INTERVAL_NS`], a gap asked again only after [`RETRY_NS`] without an answer and at
//! most [`MAX_TRIES`] times, at most [`MAX_COUNT`] messages a request, at most [`MAX_GAPS`]
//! gaps queued (the oldest given up first), and never a gap older than the trader's memory of
//! what it has seen. What comes back arrives as ordinary packets, behind the feed: counted
//! late, and as recovered, but **not traded**: the strategy has already decided later ticks
//! without them, and feeding it an old price now would make it decide on a tape that never
//! was. A recovered tick completes the trader's account of the tape, not its trading. A book
//! is another matter: it can't skip a lost Add or Cancel, so a trader that keeps one holds the
//! feed at the gap and takes the answer in order ([`repair`](crate::repair)).
//!
//! Each queued gap remembers what of it was asked for (`Recovery::asked`): the server's
//! answers are taken only for those numbers, while the gap is queued (not yet filled or given
//! up). Anything else that comes from the server (numbers never asked for, at or past the
//! feed's next number, heartbeats, ends of session) is counted in `recovery_unasked` and
//! dropped: an answer never moves the expected number and is never traded, so a forger who
//! can pose as the re-request server gains nothing but that count.
//!
//! Nothing here allocates after start-up.
use std::collections::VecDeque;

/// Gaps queued at most; past it the oldest is given up.
pub const MAX_GAPS: usize = 64;
/// Times a gap is asked for before it is given up.
pub const MAX_TRIES: u8 = 3;
/// Messages one request asks for at most (the server answers with as many as fit one packet;
/// the rest is asked again).
pub const MAX_COUNT: u16 = 512;
/// No two requests closer than this (ns): a burst of loss can't become a burst of requests.
pub const MIN_INTERVAL_NS: u64 = 100_000;
/// A gap is asked again after this long without its first message coming back (ns).
pub const RETRY_NS: u64 = 20_000_000;

/// One queued gap: `first..end` (what is still missing of it starts at `first`).
#[derive(Debug, Clone, Copy)]
struct Gap {
    first: u64,
    end: u64,
    /// Where the gap started when it was queued.
    start: u64,
    /// The end of what was asked for (`start..asked_end`; `start`: nothing yet).
    asked_end: u64,
    /// Tries since the gap last shrank (an answer that brought part of it resets them).
    tries: u8,
    /// Where the gap started when it was last asked for.
    asked_from: u64,
    /// When it may be asked (again).
    due_ns: u64,
}

/// A re-request to send: `count` messages from `sequence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    /// The first sequence number wanted.
    pub sequence: u64,
    /// How many.
    pub count: u16,
}

/// The queue of gaps and the request pacing.
#[derive(Debug)]
pub(crate) struct Recovery {
    gaps: VecDeque<Gap>,
    last_request_ns: Option<u64>,
}

/// What the queue gave up on: messages of gaps dropped unanswered.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct GaveUp(pub u64);

impl Recovery {
    pub(crate) fn new() -> Recovery {
        Recovery {
            gaps: VecDeque::with_capacity(MAX_GAPS),
            last_request_ns: None,
        }
    }

    /// Queues the gap `first..end`; returns the messages of a gap given up to make room. A gap
    /// inside one queued already (a book's hold queues it when it is seen, the sequencer
    /// again if it gives up and passes it) is not queued twice.
    pub(crate) fn push(&mut self, first: u64, end: u64) -> GaveUp {
        let mut gave_up = GaveUp(0);
        if self.gaps.iter().any(|g| g.start <= first && end <= g.end) {
            return gave_up;
        }
        if self.gaps.len() == MAX_GAPS
            && let Some(old) = self.gaps.pop_front()
        {
            gave_up.0 = old.end - old.first;
        }
        self.gaps.push_back(Gap {
            first,
            end,
            start: first,
            asked_end: first,
            tries: 0,
            asked_from: first,
            due_ns: 0,
        });
        gave_up
    }

    /// Whether `seq` was asked for and its gap is still queued: an answer the trader expects.
    pub(crate) fn asked(&self, seq: u64) -> bool {
        self.gaps
            .iter()
            .any(|g| (g.start..g.asked_end).contains(&seq))
    }

    /// Whether `seq` is in a queued gap (a late message that was asked for, or is about to be).
    #[cfg(test)]
    pub(crate) fn wanted(&self, seq: u64) -> bool {
        self.gaps.iter().any(|g| (g.first..g.end).contains(&seq))
    }

    /// The next request to send at `now_ns`, if one is due. `seen(seq)` says whether a message
    /// came already (the front of each gap is trimmed by it); `oldest` is the oldest sequence
    /// number the trader can still tell seen from missing (gaps before it are given up).
    /// Returns the request and the messages given up on the way.
    pub(crate) fn next_request(
        &mut self,
        now_ns: u64,
        oldest: u64,
        seen: impl Fn(u64) -> bool,
    ) -> (Option<Ask>, GaveUp) {
        let mut gave_up = GaveUp(0);
        if self.gaps.is_empty()
            || self
                .last_request_ns
                .is_some_and(|t| now_ns.saturating_sub(t) < MIN_INTERVAL_NS)
        {
            return (None, gave_up);
        }
        let mut ask = None;
        self.gaps.retain_mut(|g| {
            while g.first < g.end && seen(g.first) {
                g.first += 1;
            }
            if g.first >= g.end {
                return false; // filled
            }
            if g.first > g.asked_from {
                // Part of it came back: the rest is asked for now, with a fresh budget.
                g.asked_from = g.first;
                g.tries = 0;
                g.due_ns = 0;
            }
            if g.first < oldest || g.tries >= MAX_TRIES && g.due_ns <= now_ns {
                gave_up.0 += g.end - g.first;
                return false;
            }
            if ask.is_none() && g.due_ns <= now_ns && g.tries < MAX_TRIES {
                g.tries += 1;
                g.due_ns = now_ns.saturating_add(RETRY_NS);
                let count = (g.end - g.first).min(u64::from(MAX_COUNT)) as u16;
                g.asked_end = g.asked_end.max(g.first + u64::from(count));
                ask = Some(Ask {
                    sequence: g.first,
                    count,
                });
            }
            true
        });
        if ask.is_some() {
            self.last_request_ns = Some(now_ns);
        }
        (ask, gave_up)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_asked_in_order_paced_retried_and_given_up() {
        let mut r = Recovery::new();
        r.push(10, 13);
        r.push(20, 21);
        let none = |_| false;
        let (a, _) = r.next_request(1_000_000, 0, none);
        assert_eq!(
            a,
            Some(Ask {
                sequence: 10,
                count: 3
            })
        );
        // Too soon for another request.
        assert_eq!(
            r.next_request(1_000_000 + MIN_INTERVAL_NS - 1, 0, none).0,
            None
        );
        // Then the next gap (the first isn't due again yet).
        let t = 1_000_000 + MIN_INTERVAL_NS;
        assert_eq!(
            r.next_request(t, 0, none).0,
            Some(Ask {
                sequence: 20,
                count: 1
            })
        );
        // 10 and 11 came back: 12 is asked at once (the answer brought progress).
        let t = t + MIN_INTERVAL_NS;
        let seen = |s| s == 10 || s == 11;
        assert_eq!(
            r.next_request(t, 0, seen).0,
            Some(Ask {
                sequence: 12,
                count: 1
            })
        );
        // Nothing more comes: each is asked twice more (the oldest due first), then both are
        // given up.
        let mut asked = Vec::new();
        let mut t = t;
        let mut gave_up = 0;
        for _ in 0..8 {
            t += RETRY_NS;
            let (a, g) = r.next_request(t, 0, seen);
            gave_up += g.0;
            asked.extend(a.map(|a| a.sequence));
        }
        asked.sort_unstable();
        assert_eq!(asked, [12, 12, 20, 20]);
        assert_eq!(gave_up, 2, "12 and 20, three tries each");
        assert!(!r.wanted(12) && !r.wanted(20));
        assert!(
            !r.asked(12) && !r.asked(20),
            "given up: answers are no longer taken"
        );
    }

    #[test]
    fn only_what_was_asked_for_is_an_answer() {
        let mut r = Recovery::new();
        r.push(10, 13);
        r.push(100, 100 + 2 * u64::from(MAX_COUNT));
        // Queued, not asked yet.
        assert!(!r.asked(10) && !r.asked(100));
        assert_eq!(
            r.next_request(1, 0, |_| false).0.map(|a| a.sequence),
            Some(10)
        );
        assert!(r.asked(10) && r.asked(12));
        assert!(!r.asked(9) && !r.asked(13) && !r.asked(100));
        // The long gap is asked in pieces: only the piece asked for is taken.
        let t = 1 + MIN_INTERVAL_NS;
        assert_eq!(
            r.next_request(t, 0, |_| false).0.map(|a| a.sequence),
            Some(100)
        );
        let piece_end = 100 + u64::from(MAX_COUNT);
        assert!(r.asked(100) && r.asked(piece_end - 1) && !r.asked(piece_end));
        // Filled: the gap leaves the queue, and a second answer is no longer expected.
        let t = t + MIN_INTERVAL_NS;
        let _ = r.next_request(t, 0, |s| (10..13).contains(&s));
        assert!(!r.asked(10) && !r.asked(12));
    }

    #[test]
    fn the_queue_is_bounded_and_old_gaps_are_given_up() {
        let mut r = Recovery::new();
        for i in 0..MAX_GAPS as u64 {
            assert_eq!(r.push(i * 10, i * 10 + 2).0, 0);
        }
        assert_eq!(r.push(10_000, 10_005).0, 2, "the oldest made room");
        assert!(!r.wanted(0) && r.wanted(10) && r.wanted(10_004));
        // Everything before 10_000 is beyond what the trader remembers.
        let (a, g) = r.next_request(1, 10_000, |_| false);
        assert_eq!(
            a,
            Some(Ask {
                sequence: 10_000,
                count: 5
            })
        );
        assert_eq!(g.0, 2 * (MAX_GAPS as u64 - 1));
    }

    #[test]
    fn a_long_gap_is_asked_in_pieces() {
        let mut r = Recovery::new();
        r.push(1, 1 + 3 * u64::from(MAX_COUNT));
        let a = r.next_request(1, 0, |_| false).0.unwrap();
        assert_eq!((a.sequence, a.count), (1, MAX_COUNT));
    }
}
