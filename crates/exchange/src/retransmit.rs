//! The exchange's MoldUDP64 re-request server: a request names a session, a first sequence
//! number and a count; the answer is one ordinary downstream packet holding as many of those
//! messages as fit (the MoldUDP64 spec's "Request Packet" and its response), sent to the
//! requester. Only messages the send loop has reached are served (sent, or refused by our own
//! socket: the session's numbers are used either way), and only the last `history` of them: a
//! bounded history, as a real server keeps.
//!
//! [`Retransmitter`] is sans-IO (what to answer from a prebuilt feed); [`Window`] is the same for
//! a streamed feed, whose packets are not held: it keeps a copy of the packets of the last
//! `history` messages put on the wire, in a byte ring sized once, and refuses older ones as
//! [`Refusal::OutOfWindow`] (counted apart: the messages a longer window would have served).
//! [`serve`] is the thread that answers over a UDP socket while the send loop runs, told how far
//! the feed has gone through an atomic (a window knows it itself).
use std::{
    collections::{TryReserveError, VecDeque},
    net::{SocketAddr, UdpSocket},
    sync::{
        Mutex, PoisonError,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use results::RetransmitReport;
use wire::moldudp64::{self, PacketBuilder, Request, Session};

use crate::feed::{Feed, MAX_PAYLOAD, PacketMeta};

/// Why a request got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not a request (wrong length).
    Malformed,
    /// Another session than the feed's.
    WrongSession,
    /// Its first message was not sent yet, or is older than the history kept, or not in the
    /// feed, or the count is 0.
    NotAvailable,
    /// Its first message went out, but before the last `history` messages a streamed feed's
    /// [`Window`] keeps: it fell out of the window.
    OutOfWindow,
}

/// What answers re-requests: a prebuilt feed ([`Retransmitter`]) or a streamed feed's window
/// (a [`Window`] behind the lock the send loop fills it through).
pub trait Answers: Sync {
    /// The answer to `request` (its bytes) when the feed has gone out up to `frontier` (the
    /// sequence number after the last message put on the wire), written into `buf`; its length
    /// and the messages in it.
    ///
    /// # Errors
    /// Why there is no answer.
    fn answer(
        &self,
        request: &[u8],
        frontier: u64,
        buf: &mut [u8; MAX_PAYLOAD],
    ) -> Result<(usize, u16), Refusal>;
}

impl Answers for Retransmitter<'_> {
    fn answer(
        &self,
        request: &[u8],
        frontier: u64,
        buf: &mut [u8; MAX_PAYLOAD],
    ) -> Result<(usize, u16), Refusal> {
        Retransmitter::answer(self, request, frontier, buf)
    }
}

/// The window is filled by the send loop ([`crate::Driver::keep_window`]) before it publishes
/// the frontier; the lock is held for one packet's copy there and one answer's here.
impl Answers for Mutex<Window> {
    fn answer(
        &self,
        request: &[u8],
        frontier: u64,
        buf: &mut [u8; MAX_PAYLOAD],
    ) -> Result<(usize, u16), Refusal> {
        self.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .answer(request, frontier, buf)
    }
}

/// The most bytes one message costs a [`Window`]: ITCH 5.0's longest message (NOII, `'I'`,
/// 50 bytes), its MoldUDP64 block length, and a packet header of its own (a packet of one).
/// A real file always fits the window's byte ring at this; a file of longer messages keeps
/// fewer than `history` of them.
pub const WINDOW_BYTES_PER_MESSAGE: usize =
    LONGEST_ITCH_MESSAGE + moldudp64::BLOCK_HEADER_LEN + moldudp64::HEADER_LEN;

/// ITCH 5.0's longest message: the Net Order Imbalance Indicator (`'I'`), 50 bytes
/// (NASDAQ TotalView-ITCH 5.0, section 1.9).
pub const LONGEST_ITCH_MESSAGE: usize = 50;

/// One packet the window holds.
#[derive(Debug, Clone, Copy)]
struct Kept {
    first_seq: u64,
    messages: u16,
    /// Where its bytes start, counted from the first byte ever pushed.
    at: u64,
    len: u16,
}

impl Kept {
    fn next_seq(&self) -> u64 {
        self.first_seq.saturating_add(u64::from(self.messages))
    }
}

/// A streamed feed's re-request window: copies of the packets of the last `history` messages
/// put on the wire (sent, or refused by our own side), oldest first. Its memory is reserved
/// once, at most `history` x [`WINDOW_BYTES_PER_MESSAGE`] + one packet of bytes and a record per
/// packet, and never grows: the oldest packets go as new ones come.
#[derive(Debug)]
pub struct Window {
    session: Session,
    history: u64,
    bytes: VecDeque<u8>,
    /// The byte ring's size.
    byte_cap: usize,
    kept: VecDeque<Kept>,
    /// The record ring's size (a packet holds at least one message).
    kept_cap: usize,
    /// The position, counted from the first byte ever pushed, of `bytes[0]`.
    base: u64,
    /// The sequence number after the last message pushed.
    end: u64,
}

impl Window {
    /// An empty window of `session`'s packets, for the last `history` messages, the feed
    /// numbered from `first_seq`; its memory reserved now.
    ///
    /// # Errors
    /// When the memory can't be had (a `history` far beyond a day's messages).
    pub fn new(session: Session, history: u64, first_seq: u64) -> Result<Window, TryReserveError> {
        let messages = usize::try_from(history).unwrap_or(usize::MAX);
        let byte_cap = messages
            .saturating_mul(WINDOW_BYTES_PER_MESSAGE)
            .saturating_add(MAX_PAYLOAD);
        let kept_cap = messages.saturating_add(1);
        let mut bytes = VecDeque::new();
        bytes.try_reserve_exact(byte_cap)?;
        let mut kept = VecDeque::new();
        kept.try_reserve_exact(kept_cap)?;
        Ok(Window {
            session,
            history,
            bytes,
            byte_cap,
            kept,
            kept_cap,
            base: 0,
            end: first_seq,
        })
    }

    /// Keeps a copy of the packet `meta` describes, `bytes` (a MoldUDP64 data packet), and lets
    /// go of those no longer among the last `history` messages (or, for room, the oldest).
    pub fn push(&mut self, meta: PacketMeta, bytes: &[u8]) {
        if meta.messages == 0 || bytes.len() > MAX_PAYLOAD {
            return;
        }
        self.end = meta.next_seq();
        let oldest = self.end.saturating_sub(self.history);
        while let Some(front) = self.kept.front().copied()
            && (front.next_seq() <= oldest
                || self.bytes.len() + bytes.len() > self.byte_cap
                || self.kept.len() == self.kept_cap)
        {
            self.kept.pop_front();
            self.bytes.drain(..usize::from(front.len));
            self.base += u64::from(front.len);
        }
        self.kept.push_back(Kept {
            first_seq: meta.first_seq,
            messages: meta.messages,
            at: self.base + self.bytes.len() as u64,
            len: bytes.len() as u16,
        });
        self.bytes.extend(bytes);
    }

    /// The sequence number after the last message pushed.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The first sequence number a request may name: the last `history` messages, of those
    /// still held.
    pub fn oldest(&self) -> u64 {
        let held = self.kept.front().map_or(self.end, |k| k.first_seq);
        held.max(self.end.saturating_sub(self.history))
    }

    /// Bytes reserved: what the window costs, however long the feed.
    pub fn reserved_bytes(&self) -> usize {
        self.bytes.capacity() + self.kept.capacity() * std::mem::size_of::<Kept>()
    }

    /// The answer to `request` ([`Answers::answer`]), from what the window holds, up to its own
    /// end or `frontier`, whichever is first.
    ///
    /// # Errors
    /// Why there is no answer: [`Refusal::OutOfWindow`] for a message that went out before the
    /// window's oldest.
    pub fn answer(
        &self,
        request: &[u8],
        frontier: u64,
        buf: &mut [u8; MAX_PAYLOAD],
    ) -> Result<(usize, u16), Refusal> {
        let r = Request::parse(request).map_err(|_| Refusal::Malformed)?;
        if r.session != self.session {
            return Err(Refusal::WrongSession);
        }
        let frontier = frontier.min(self.end);
        if r.count == 0 || r.sequence >= frontier {
            return Err(Refusal::NotAvailable);
        }
        if r.sequence < self.oldest() {
            return Err(Refusal::OutOfWindow);
        }
        let end = r.sequence.saturating_add(u64::from(r.count)).min(frontier);
        let at = self.kept.partition_point(|k| k.first_seq <= r.sequence);
        let Some(start) = at.checked_sub(1) else {
            return Err(Refusal::NotAvailable);
        };
        let mut b = PacketBuilder::new(&mut buf[..], r.session, r.sequence)
            .map_err(|_| Refusal::NotAvailable)?;
        let mut copy = [0u8; MAX_PAYLOAD];
        let mut next = r.sequence;
        for k in self.kept.range(start..) {
            if k.first_seq > next {
                break; // a hole in the numbers: the answer stops before it
            }
            let from = usize::try_from(k.at - self.base).unwrap_or(usize::MAX);
            let len = usize::from(k.len);
            for (dst, src) in copy[..len]
                .iter_mut()
                .zip(self.bytes.range(from..from + len))
            {
                *dst = *src;
            }
            let packet = moldudp64::Packet::new_unchecked(&copy[..len]);
            let meta = PacketMeta {
                start: 0,
                end: len,
                first_seq: k.first_seq,
                messages: k.messages,
            };
            if !take(&mut b, &mut next, end, meta, &packet) {
                break;
            }
        }
        finish(b)
    }
}

/// Appends to an answer the messages of one packet (`meta`, its view) from `next` up to `end`,
/// moving `next` past them; false when the answer is done: `end` reached, a block that doesn't
/// frame, or no room for the next message. The one way both the prebuilt feed's answers and the
/// streamed window's are filled.
fn take(
    b: &mut PacketBuilder<'_>,
    next: &mut u64,
    end: u64,
    meta: PacketMeta,
    packet: &moldudp64::Packet<&[u8]>,
) -> bool {
    for (seq, m) in meta.sequences().zip(packet.messages()) {
        if seq < *next {
            continue;
        }
        if seq >= end {
            return false;
        }
        let Ok(m) = m else { return false };
        if b.remaining() < m.len() + 2 || b.push(m).is_err() {
            return false;
        }
        *next = seq + 1;
    }
    true
}

/// The answer's length and message count, or [`Refusal::NotAvailable`] for an empty one.
fn finish(b: PacketBuilder<'_>) -> Result<(usize, u16), Refusal> {
    let count = b.count();
    if count == 0 {
        return Err(Refusal::NotAvailable);
    }
    Ok((b.finish().len(), count))
}

/// What to answer, from one feed.
#[derive(Debug)]
pub struct Retransmitter<'f> {
    feed: &'f Feed,
    /// Packet indices sorted by first sequence number (data packets only).
    by_seq: Vec<usize>,
    history: u64,
}

impl<'f> Retransmitter<'f> {
    /// Serves `feed`'s messages, the last `history` sent.
    pub fn new(feed: &'f Feed, history: u64) -> Self {
        let mut by_seq: Vec<usize> = (0..feed.packets.len())
            .filter(|&i| feed.packets[i].messages > 0)
            .collect();
        by_seq.sort_by_key(|&i| feed.packets[i].first_seq);
        Retransmitter {
            feed,
            by_seq,
            history,
        }
    }

    /// The answer to `request` (its bytes) when the feed has gone out up to `frontier` (the
    /// sequence number after the last message sent), written into `buf`; returns its length and
    /// the messages in it.
    pub fn answer(
        &self,
        request: &[u8],
        frontier: u64,
        buf: &mut [u8; MAX_PAYLOAD],
    ) -> Result<(usize, u16), Refusal> {
        let r = Request::parse(request).map_err(|_| Refusal::Malformed)?;
        if r.session != self.feed.session {
            return Err(Refusal::WrongSession);
        }
        let oldest = frontier.saturating_sub(self.history);
        if r.count == 0 || r.sequence < oldest || r.sequence >= frontier {
            return Err(Refusal::NotAvailable);
        }
        let end = r.sequence.saturating_add(u64::from(r.count)).min(frontier);
        // The packet holding `r.sequence`: the last one starting at or before it.
        let at = self
            .by_seq
            .partition_point(|&i| self.feed.packets[i].first_seq <= r.sequence);
        let Some(start) = at.checked_sub(1) else {
            return Err(Refusal::NotAvailable);
        };
        let mut b = PacketBuilder::new(&mut buf[..], r.session, r.sequence)
            .map_err(|_| Refusal::NotAvailable)?;
        let mut next = r.sequence;
        for &i in &self.by_seq[start..] {
            let meta = self.feed.packets[i];
            if meta.first_seq > next {
                break; // a hole in the feed's numbers: the answer stops before it
            }
            let packet = wire::moldudp64::Packet::new_unchecked(self.feed.packet(i));
            if !take(&mut b, &mut next, end, meta, &packet) {
                break;
            }
        }
        finish(b)
    }
}

/// Answers requests on `sock` until `done`, the feed sent up to `frontier`; what it did.
pub fn serve(
    rt: &impl Answers,
    sock: &UdpSocket,
    frontier: &AtomicU64,
    done: &AtomicBool,
) -> std::io::Result<RetransmitReport> {
    sock.set_read_timeout(Some(Duration::from_millis(20)))?;
    let mut report = RetransmitReport::default();
    let mut req = [0u8; 64];
    let mut out = [0u8; MAX_PAYLOAD];
    while !done.load(Ordering::Relaxed) {
        let (n, from) = match sock.recv_from(&mut req) {
            Ok(x) => x,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(e) => return Err(e),
        };
        report.requests += 1;
        match rt.answer(&req[..n], frontier.load(Ordering::Relaxed), &mut out) {
            Ok((len, count)) => {
                if send_to(sock, &out[..len], from) {
                    report.answers += 1;
                    report.served_messages += u64::from(count);
                } else {
                    report.send_failed += 1;
                }
            }
            Err(Refusal::Malformed) => report.malformed += 1,
            Err(Refusal::WrongSession) => report.wrong_session += 1,
            Err(Refusal::NotAvailable) => report.not_available += 1,
            Err(Refusal::OutOfWindow) => report.out_of_window += 1,
        }
    }
    Ok(report)
}

fn send_to(sock: &UdpSocket, payload: &[u8], to: SocketAddr) -> bool {
    sock.send_to(payload, to).is_ok()
}

#[cfg(test)]
mod tests {
    use wire::moldudp64::{Packet, Session};

    use super::*;
    use crate::feed::Source;

    fn feed(batch: u16) -> Feed {
        Feed::build(
            &Source::Gbm {
                seed: 42,
                bars: 1000,
            },
            None,
            batch,
            wire::itch::Stock::new("SYNTH").unwrap(),
        )
        .unwrap()
    }

    fn request(f: &Feed, sequence: u64, count: u16) -> [u8; Request::LEN] {
        Request {
            session: f.session,
            sequence,
            count,
        }
        .emit()
    }

    /// The messages of an answer, as (sequence, bytes).
    fn messages(answer: &[u8]) -> Vec<(u64, Vec<u8>)> {
        let p = Packet::new_checked(answer).unwrap();
        let first = p.sequence();
        p.messages()
            .enumerate()
            .map(|(k, m)| (first + k as u64, m.unwrap().to_vec()))
            .collect()
    }

    /// The feed's own bytes of message `seq`.
    fn original(f: &Feed, seq: u64) -> Vec<u8> {
        for (i, meta) in f.packets.iter().enumerate() {
            let p = Packet::new_checked(f.packet(i)).unwrap();
            for (s, m) in meta.sequences().zip(p.messages()) {
                if s == seq {
                    return m.unwrap().to_vec();
                }
            }
        }
        panic!("no message {seq}")
    }

    #[test]
    fn answers_are_the_feeds_own_messages_across_packets() {
        for batch in [1, 3] {
            let f = feed(batch);
            let rt = Retransmitter::new(&f, 100_000);
            let mut buf = [0u8; MAX_PAYLOAD];
            let (len, count) = rt.answer(&request(&f, 5, 7), 1001, &mut buf).unwrap();
            assert_eq!(count, 7);
            let got = messages(&buf[..len]);
            assert_eq!(got.len(), 7);
            for (seq, bytes) in got {
                assert_eq!(bytes, original(&f, seq), "batch {batch} seq {seq}");
            }
        }
    }

    #[test]
    fn one_answer_holds_what_fits_and_never_what_was_not_sent() {
        let f = feed(1);
        let rt = Retransmitter::new(&f, 100_000);
        let mut buf = [0u8; MAX_PAYLOAD];
        // 44-byte trades with a 2-byte length: 31 fit a 1472-byte payload.
        let (_, count) = rt.answer(&request(&f, 1, 500), 1001, &mut buf).unwrap();
        assert_eq!(count, 31);
        // Only up to the frontier.
        let (_, count) = rt.answer(&request(&f, 95, 20), 100, &mut buf).unwrap();
        assert_eq!(count, 5);
        assert_eq!(
            rt.answer(&request(&f, 100, 1), 100, &mut buf),
            Err(Refusal::NotAvailable)
        );
    }

    #[test]
    fn old_wrong_and_malformed_requests_are_refused() {
        let f = feed(1);
        let rt = Retransmitter::new(&f, 100);
        let mut buf = [0u8; MAX_PAYLOAD];
        let frontier = 1001;
        assert_eq!(
            rt.answer(&request(&f, 900, 1), frontier, &mut buf),
            Err(Refusal::NotAvailable),
            "older than the history"
        );
        assert!(rt.answer(&request(&f, 901, 1), frontier, &mut buf).is_ok());
        assert_eq!(
            rt.answer(&request(&f, 950, 0), frontier, &mut buf),
            Err(Refusal::NotAvailable)
        );
        let other = Request {
            session: Session::new("OTHER").unwrap(),
            sequence: 950,
            count: 1,
        }
        .emit();
        assert_eq!(
            rt.answer(&other, frontier, &mut buf),
            Err(Refusal::WrongSession)
        );
        assert_eq!(
            rt.answer(&other[..10], frontier, &mut buf),
            Err(Refusal::Malformed)
        );
        assert_eq!(
            rt.answer(&request(&f, u64::MAX, u16::MAX), u64::MAX, &mut buf),
            Err(Refusal::NotAvailable),
            "not in the feed, and no overflow"
        );
    }
}
