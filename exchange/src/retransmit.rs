//! The exchange's MoldUDP64 re-request server: a request names a session, a first sequence
//! number and a count; the answer is one ordinary downstream packet holding as many of those
//! messages as fit (the MoldUDP64 spec's "Request Packet" and its response), sent to the
//! requester. Only messages the send loop has reached are served (sent, or refused by our own
//! socket: the session's numbers are used either way), and only the last `history` of them: a
//! bounded history, as a real server keeps.
//!
//! [`Retransmitter`] is sans-IO (what to answer); [`serve`] is the thread that answers over a
//! UDP socket while the send loop runs, told how far the feed has gone through an atomic.
use std::{
    net::{SocketAddr, UdpSocket},
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
    time::Duration,
};

use results::RetransmitReport;
use wire::moldudp64::{PacketBuilder, Request};

use crate::feed::{Feed, MAX_PAYLOAD};

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
        'packets: for &i in &self.by_seq[start..] {
            let meta = self.feed.packets[i];
            if meta.first_seq > next {
                break; // a hole in the feed's numbers: the answer stops before it
            }
            let packet = wire::moldudp64::Packet::new_unchecked(self.feed.packet(i));
            for (seq, m) in meta.sequences().zip(packet.messages()) {
                if seq < next {
                    continue;
                }
                if seq >= end {
                    break 'packets;
                }
                let Ok(m) = m else { break 'packets };
                if b.remaining() < m.len() + 2 || b.push(m).is_err() {
                    break 'packets;
                }
                next = seq + 1;
            }
        }
        let count = b.count();
        if count == 0 {
            return Err(Refusal::NotAvailable);
        }
        Ok((b.finish().len(), count))
    }
}

/// Answers requests on `sock` until `done`, the feed sent up to `frontier`; what it did.
pub fn serve(
    rt: &Retransmitter<'_>,
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
