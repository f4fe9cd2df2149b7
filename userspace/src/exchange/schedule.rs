//! Per sequence number: when its message was scheduled to go out, and the price of its tick.
use wire::itch::Price4;

use crate::feed::{Feed, PacketMeta};

/// Sequence number → scheduled send time and tick price, for every sequence number the feed
/// spans.
///
/// Indexed from the feed's first sequence number and sized by the span, not the message
/// count, so a capture with gaps in its sequence numbers still fits.
#[derive(Debug, Clone)]
pub struct Schedule {
    first_seq: u64,
    /// Scheduled send time (ns on the lab's clock); 0: not sent.
    sent_at: Vec<u64>,
    /// The tick's price; `None` for a message that is not a tick of the traded stock.
    price: Vec<Option<Price4>>,
}

impl Schedule {
    /// Nothing sent yet; the prices of `feed`'s ticks.
    pub fn new(feed: &Feed) -> Schedule {
        let span = feed.sequence_span() as usize + 1;
        let mut s = Schedule {
            first_seq: feed.first_seq,
            sent_at: vec![0; span],
            price: vec![None; span],
        };
        for t in &feed.ticks {
            if let Some(i) = s.slot(t.seq) {
                s.price[i] = Some(t.price);
            }
        }
        s
    }

    /// The index of `seq`, if the feed spans it.
    #[inline]
    fn slot(&self, seq: u64) -> Option<usize> {
        seq.checked_sub(self.first_seq)
            .map(|i| i as usize)
            .filter(|&i| i < self.sent_at.len())
    }

    /// Records that `packet`'s messages went out, message `k` of it scheduled for
    /// `due_of(k)` (not 0).
    pub fn mark_sent(&mut self, packet: &PacketMeta, due_of: impl Fn(u64) -> u64) {
        for k in 0..u64::from(packet.messages) {
            if let Some(i) = self.slot(packet.first_seq + k) {
                self.sent_at[i] = due_of(k);
            }
        }
    }

    /// When `seq` was scheduled to go out; `None` if it never went out (or the feed doesn't
    /// span it).
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

    /// Sequence numbers the feed spans: the size of a per-sequence table.
    pub(super) fn len(&self) -> usize {
        self.sent_at.len()
    }

    /// The packets that went out, each with the time it was scheduled to leave (its last
    /// message's due time), in feed order.
    pub fn sent_packets<'a>(&'a self, feed: &'a Feed) -> impl Iterator<Item = (u64, &'a [u8])> {
        feed.packets.iter().enumerate().filter_map(|(i, m)| {
            let last = m.first_seq + u64::from(m.messages.max(1)) - 1;
            Some((self.sent_at(last)?, feed.packet(i)))
        })
    }
}
