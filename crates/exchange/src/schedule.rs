//! Per sequence number: when its message was scheduled to go out, and the price of its tick.
use wire::itch::Price4;

use crate::feed::{Feed, PacketMeta};

/// Sequence number → scheduled send time and tick price, for every message of the feed (of a
/// streamed feed, for its ticks only: orders answer ticks, and the feed's other messages are
/// never held).
///
/// Sized by the feed's message count (a streamed feed's tick count), never by the span of its
/// sequence numbers: a capture whose numbers start at 2^40, or that holds one stray packet
/// numbered near 2^64, costs what its messages cost. A feed numbered without holes (every
/// synthetic one) is indexed by subtraction; any other by a binary search over its sorted
/// numbers.
#[derive(Debug, Clone)]
pub struct Schedule {
    index: Index,
    /// Scheduled send time (ns on the lab's clock); 0: not sent.
    sent_at: Vec<u64>,
    /// When the send loop started sending each message's packet (0: not recorded).
    started: Vec<u64>,
    /// The tick's price; `None` for a message that is not a tick of the traded stock.
    price: Vec<Option<Price4>>,
    /// The packets our own side refused, as runs of sequence numbers `[first, end)`, in order
    /// (adjacent runs merged): what a capture of a streamed run leaves out. Empty in a healthy
    /// run; at worst one entry per refused packet.
    refused: Vec<(u64, u64)>,
    /// The sequence number after the last message put on the wire (sent or refused).
    reached: Option<u64>,
}

/// Where a sequence number's entry is.
#[derive(Debug, Clone)]
enum Index {
    /// `first..first + len`, every number present.
    Dense { first: u64, len: usize },
    /// The numbers present, sorted, without repeats.
    Sparse(Vec<u64>),
}

impl Index {
    fn new(feed: &Feed) -> Index {
        let seqs: Vec<u64> = match feed.streamed {
            // A streamed feed's packets are not held: its ticks are what orders can name.
            Some(_) => feed.ticks.iter().map(|t| t.seq).collect(),
            None => feed
                .packets
                .iter()
                .flat_map(PacketMeta::sequences)
                .collect(),
        };
        Self::of(seqs)
    }

    fn of(mut seqs: Vec<u64>) -> Index {
        seqs.sort_unstable();
        seqs.dedup();
        match (seqs.first(), seqs.last()) {
            (Some(&first), Some(&last))
                if (last - first).checked_add(1) == Some(seqs.len() as u64) =>
            {
                Index::Dense {
                    first,
                    len: seqs.len(),
                }
            }
            _ => Index::Sparse(seqs),
        }
    }

    #[inline]
    fn slot(&self, seq: u64) -> Option<usize> {
        match self {
            Index::Dense { first, len } => seq
                .checked_sub(*first)
                .and_then(|i| usize::try_from(i).ok())
                .filter(|i| i < len),
            Index::Sparse(seqs) => seqs.binary_search(&seq).ok(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Index::Dense { len, .. } => *len,
            Index::Sparse(seqs) => seqs.len(),
        }
    }

    /// The slots of the numbers from `first` to `last` (both included): one or two binary
    /// searches, not one per number of a packet.
    fn slots(&self, first: u64, last: u64) -> std::ops::Range<usize> {
        match self {
            Index::Dense { first: f, len } => {
                if last < *f || first > last {
                    return 0..0;
                }
                let at = |s: u64| usize::try_from(s - *f).unwrap_or(usize::MAX);
                let lo = at(first.max(*f)).min(*len);
                let hi = at(last).saturating_add(1).min(*len);
                lo..hi.max(lo)
            }
            Index::Sparse(seqs) => {
                let lo = seqs.partition_point(|&s| s < first);
                let hi = seqs.partition_point(|&s| s <= last);
                lo..hi.max(lo)
            }
        }
    }

    /// The number in slot `i` (a slot [`Index::slots`] gave).
    #[inline]
    fn seq(&self, i: usize) -> u64 {
        match self {
            Index::Dense { first, .. } => first + i as u64,
            Index::Sparse(seqs) => seqs[i],
        }
    }
}

impl Schedule {
    /// Nothing sent yet; the prices of `feed`'s ticks.
    pub fn new(feed: &Feed) -> Schedule {
        let index = Index::new(feed);
        let len = index.len();
        let mut s = Schedule {
            index,
            sent_at: vec![0; len],
            started: vec![0; len],
            price: vec![None; len],
            refused: Vec::new(),
            reached: None,
        };
        for t in &feed.ticks {
            if let Some(i) = s.slot(t.seq) {
                s.price[i] = Some(t.price);
            }
        }
        s
    }

    /// The index of `seq`, if the feed has it.
    #[inline]
    fn slot(&self, seq: u64) -> Option<usize> {
        self.index.slot(seq)
    }

    /// The slots of `packet`'s messages.
    fn slots_of(&self, packet: &PacketMeta) -> std::ops::Range<usize> {
        match packet.messages {
            0 => 0..0,
            n => {
                let first = packet.first_seq;
                self.index
                    .slots(first, first.saturating_add(u64::from(n) - 1))
            }
        }
    }

    /// Records that `packet`'s messages went out, message `k` of it scheduled for
    /// `due_of(k)` (not 0).
    pub fn mark_sent(&mut self, packet: &PacketMeta, due_of: impl Fn(u64) -> u64) {
        for i in self.slots_of(packet) {
            self.sent_at[i] = due_of(self.index.seq(i) - packet.first_seq);
        }
        self.reached = Some(packet.next_seq());
    }

    /// Records that our own side refused `packet`: its numbers are used, its messages not sent.
    pub fn mark_refused(&mut self, packet: &PacketMeta) {
        let (first, end) = (packet.first_seq, packet.next_seq());
        match self.refused.last_mut() {
            Some((_, e)) if *e == first => *e = end,
            _ => self.refused.push((first, end)),
        }
        self.reached = Some(end);
    }

    /// Whether the packet whose first message is `first_seq` was refused (see
    /// [`Schedule::mark_refused`]).
    pub fn was_refused(&self, first_seq: u64) -> bool {
        let at = self.refused.partition_point(|&(f, _)| f <= first_seq);
        at.checked_sub(1)
            .is_some_and(|i| first_seq < self.refused[i].1)
    }

    /// The sequence number after the last message put on the wire (sent or refused); `None`
    /// before the first.
    pub fn reached(&self) -> Option<u64> {
        self.reached
    }

    /// The send of `packet` started at `at` (a time at or after its messages' due times).
    pub fn mark_started(&mut self, packet: &PacketMeta, at: u64) {
        for i in self.slots_of(packet) {
            self.started[i] = at;
        }
    }

    /// When the send of the message in slot `i` started, if recorded.
    #[inline]
    pub(super) fn started(&self, i: usize) -> Option<u64> {
        self.started.get(i).copied().filter(|&t| t != 0)
    }

    /// When `seq` was scheduled to go out; `None` if it never went out (or the feed doesn't
    /// have it).
    #[inline]
    pub fn sent_at(&self, seq: u64) -> Option<u64> {
        self.slot(seq).map(|i| self.sent_at[i]).filter(|&t| t != 0)
    }

    /// The price of the tick `seq`; `None` if `seq` is not a tick of the traded stock.
    #[inline]
    pub fn price(&self, seq: u64) -> Option<Price4> {
        self.slot(seq).and_then(|i| self.price[i])
    }

    /// The index of `seq` and its send time, if it went out: where an order for it is booked.
    #[inline]
    pub(super) fn sent_slot(&self, seq: u64) -> Option<(usize, u64)> {
        self.slot(seq)
            .map(|i| (i, self.sent_at[i]))
            .filter(|&(_, t)| t != 0)
    }

    /// Distinct sequence numbers in the feed: the size of a per-sequence table.
    pub(super) fn len(&self) -> usize {
        self.sent_at.len()
    }

    /// The packets that went out, each with the time it was scheduled to leave (its last
    /// message's due time), in feed order.
    pub fn sent_packets<'a>(&'a self, feed: &'a Feed) -> impl Iterator<Item = (u64, &'a [u8])> {
        feed.packets.iter().enumerate().filter_map(|(i, m)| {
            let last = m.sequences().last().unwrap_or(m.first_seq);
            Some((self.sent_at(last)?, feed.packet(i)))
        })
    }
}
