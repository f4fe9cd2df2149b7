//! Who may send the feed: each line's source, named (`trader --feed-source`) or learned when
//! the trader confirms its feed and pinned from then on.
//!
//! The rule is the XDP program's ([`xdp_common::Source`]), applied again in the loop so that
//! every path keeps it: the kernel UDP paths (no program), and an AF_XDP path in the moments
//! between the trader learning a source and the program being told. A datagram to a line's
//! port from any other address or port is counted (`foreign_source_addr`,
//! `foreign_source_port`) and dropped before the trader reads a byte of it. The re-request
//! server's answers are told apart by the I/O (their exact address), before this check.
use std::{fmt, net::Ipv4Addr, net::SocketAddrV4, str::FromStr};

use xdp_common::Foreign;

use trader_core::lines::{LINES, Line};

/// A feed's source: an IPv4 address, and its UDP port if named (`None`: any port of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeedSource {
    /// The address.
    pub ip: Ipv4Addr,
    /// The UDP port (`None`: any).
    pub port: Option<u16>,
}

impl FeedSource {
    /// Exactly `addr`.
    pub fn exactly(addr: SocketAddrV4) -> Self {
        FeedSource {
            ip: *addr.ip(),
            port: Some(addr.port()),
        }
    }

    /// Whether a datagram from `from` is this source's.
    #[inline]
    pub fn check(&self, from: SocketAddrV4) -> Result<(), Foreign> {
        if *from.ip() != self.ip {
            return Err(Foreign::Addr);
        }
        match self.port {
            Some(p) if p != from.port() => Err(Foreign::Port),
            _ => Ok(()),
        }
    }

    /// The XDP program's form of it.
    pub fn to_program(&self) -> xdp_common::Source {
        xdp_common::Source::pinned(self.ip.octets(), self.port.unwrap_or(0).to_be_bytes())
    }
}

impl fmt::Display for FeedSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(p) => write!(f, "{}:{p}", self.ip),
            None => write!(f, "{}", self.ip),
        }
    }
}

impl FromStr for FeedSource {
    type Err = String;

    /// `IP` or `IP:PORT` (port 1-65535).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad =
            || format!("bad feed source {s:?}: an IPv4 address, or IP:PORT (198.18.0.1:26404)");
        if let Ok(ip) = s.parse::<Ipv4Addr>() {
            return Ok(FeedSource { ip, port: None });
        }
        let addr: SocketAddrV4 = s.parse().map_err(|_| bad())?;
        if addr.port() == 0 {
            return Err(bad());
        }
        Ok(FeedSource::exactly(addr))
    }
}

/// Who sent a packet, as its I/O saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sender {
    /// A datagram's IPv4/UDP source.
    Datagram(SocketAddrV4),
    /// A tick the XDP program fired on: the program drops every frame from a source other than
    /// the pinned one before its trigger looks, and fires nothing before one is pinned.
    Program,
}

/// Senders a learning line remembers at once (the newest; a new one takes the oldest's place).
pub(crate) const CANDIDATES: usize = 4;

/// Each line's source: pinned, or still to learn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sources {
    pinned: [Option<FeedSource>; LINES],
    /// A source pinned by the last packet, for the I/O to pass on (the XDP program).
    fresh: Option<(Line, FeedSource)>,
    /// Per learning line, the senders of its latest packets, each with the number after its
    /// last packet's messages: a sender whose next packet starts there continues itself.
    candidates: [[Option<(SocketAddrV4, u64)>; CANDIDATES]; LINES],
    /// Per line, each candidate's last use (a counter): a new sender takes the least recently
    /// seen one's slot, so strangers between the feed's packets don't push the feed out
    /// unless more of them than [`CANDIDATES`] come between two of its packets.
    used: [[u64; CANDIDATES]; LINES],
    /// The use counter.
    uses: u64,
}

impl Sources {
    /// `named[line]`: that line's source, if named; the others are learned.
    pub fn new(named: [Option<FeedSource>; LINES]) -> Self {
        Sources {
            pinned: named,
            ..Sources::default()
        }
    }

    /// Line `line`'s source, if pinned.
    pub fn pinned(&self, line: Line) -> Option<FeedSource> {
        self.slot(line).copied().flatten()
    }

    /// Whether a packet on `line` from `sender` may be read. The re-request server's answers
    /// ([`Line::Recovery`], which the I/O matched to its exact address) and what the program
    /// vouches for always may.
    #[inline]
    pub fn check(&self, line: Line, sender: Sender) -> Result<(), Foreign> {
        match (sender, self.slot(line)) {
            (Sender::Datagram(from), Some(Some(source))) => source.check(from),
            _ => Ok(()),
        }
    }

    /// Whether line `line`'s source is still to learn.
    #[inline]
    pub fn learning(&self, line: Line) -> bool {
        matches!(self.slot(line), Some(None))
    }

    /// A packet of the feed's numbering (`first`, and `next` after its messages) on a line
    /// still learning its source, from `from`; `feed`: it carried messages of the confirmed
    /// feed (new ones, or copies of numbers the feed brought). The line is pinned to `from`
    /// when such a packet continues `from`'s own previous packet exactly: one stranger's
    /// datagram before the feed (even at its next number, with `--session` and `--first-seq`
    /// given) never takes a line, it takes two of one sender in sequence. Returns whether it
    /// pinned the line.
    pub fn seen(
        &mut self,
        line: Line,
        from: SocketAddrV4,
        first: u64,
        next: u64,
        feed: bool,
    ) -> bool {
        let Some(i) = line.index().filter(|&i| i < LINES) else {
            return false;
        };
        let slots = &mut self.candidates[i];
        let known = slots.iter().position(|c| c.is_some_and(|(a, _)| a == from));
        let continues = known.is_some_and(|k| slots[k].is_some_and(|(_, n)| n == first));
        let used = &mut self.used[i];
        let k = known.unwrap_or_else(|| (0..CANDIDATES).min_by_key(|&k| used[k]).unwrap_or(0));
        self.uses += 1;
        used[k] = self.uses;
        slots[k] = Some((from, next));
        if continues && feed && self.learning(line) {
            self.learn(line, from);
            return !self.learning(line);
        }
        false
    }

    /// Pins line `line` to exactly `from` (the datagram that showed the feed).
    fn learn(&mut self, line: Line, from: SocketAddrV4) {
        // Port 0 would mean "any port" to the XDP program: never learned.
        if from.port() == 0 {
            return;
        }
        if let Some(slot @ None) = line.index().and_then(|i| self.pinned.get_mut(i)) {
            let source = FeedSource::exactly(from);
            *slot = Some(source);
            self.fresh = Some((line, source));
        }
    }

    /// The source pinned since the last call, if any.
    pub fn take_fresh(&mut self) -> Option<(Line, FeedSource)> {
        self.fresh.take()
    }

    /// Line `line`'s slot: `None` for the re-request server's answers.
    #[inline]
    fn slot(&self, line: Line) -> Option<&Option<FeedSource>> {
        line.index().and_then(|i| self.pinned.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ip: [u8; 4], port: u16) -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::from(ip), port)
    }

    #[test]
    fn a_source_takes_its_address_and_port_and_nothing_else() {
        let s: FeedSource = "198.18.0.1:26404".parse().unwrap();
        assert_eq!(s.check(at([198, 18, 0, 1], 26404)), Ok(()));
        assert_eq!(s.check(at([198, 18, 0, 1], 26405)), Err(Foreign::Port));
        assert_eq!(s.check(at([198, 18, 0, 5], 26404)), Err(Foreign::Addr));
        let any_port: FeedSource = "198.18.0.1".parse().unwrap();
        assert_eq!(any_port.check(at([198, 18, 0, 1], 1)), Ok(()));
        assert_eq!(any_port.check(at([198, 18, 0, 9], 1)), Err(Foreign::Addr));
        for bad in ["", "198.18.0.1:0", "198.18.0.1:x", "host:1", "198.18.0.256"] {
            assert!(bad.parse::<FeedSource>().is_err(), "{bad}");
        }
        assert_eq!(s.to_string(), "198.18.0.1:26404");
        assert_eq!(any_port.to_string(), "198.18.0.1");
    }

    #[test]
    fn the_program_form_checks_as_the_loop_does() {
        for (s, from) in [
            ("198.18.0.1:26404", at([198, 18, 0, 1], 26404)),
            ("198.18.0.1:26404", at([198, 18, 0, 1], 9)),
            ("198.18.0.1:26404", at([198, 18, 0, 7], 26404)),
            ("198.18.0.1", at([198, 18, 0, 1], 9)),
            ("198.18.0.1", at([198, 18, 0, 7], 9)),
        ] {
            let source: FeedSource = s.parse().unwrap();
            assert_eq!(
                source
                    .to_program()
                    .check(from.ip().octets(), from.port().to_be_bytes()),
                source.check(from),
                "{s} from {from}"
            );
        }
    }

    /// What takes a learning line: two packets of one sender in sequence, the second carrying
    /// the confirmed feed's messages. A stranger's single datagram at the feed's next number
    /// (the one a forger sends first when `--session` and `--first-seq` pin where the feed
    /// starts) never does, nor do two strangers' packets that continue each other, nor a
    /// sender's packets out of sequence, nor a sender whose continuing packet carried nothing
    /// of the feed; a stranger who sends between the feed's packets does not stop it.
    #[test]
    fn a_learning_line_is_taken_only_by_a_sender_continuing_itself() {
        let feed = at([198, 18, 0, 1], 26404);
        let (s1, s2) = (at([198, 18, 0, 9], 1), at([198, 18, 0, 9], 2));
        let mut s = Sources::new([None, None]);
        assert!(!s.seen(Line::A, s1, 1, 2, true), "one stranger's packet");
        assert!(!s.seen(Line::A, s2, 2, 3, true), "another's continuing it");
        assert!(!s.seen(Line::A, feed, 1, 2, true));
        assert!(!s.seen(Line::A, s1, 5, 6, true), "its own, out of sequence");
        assert!(
            !s.seen(Line::A, s2, 3, 4, false),
            "its own, nothing of the feed"
        );
        assert!(s.learning(Line::A));
        assert!(
            s.seen(Line::A, feed, 2, 3, true),
            "the feed, continuing itself"
        );
        assert_eq!(s.pinned(Line::A), Some(FeedSource::exactly(feed)));
        assert!(!s.seen(Line::A, feed, 3, 4, true), "pinned once");
        // A named line never learns.
        let mut named = Sources::new([Some(FeedSource::exactly(feed)), None]);
        named.seen(Line::A, s1, 1, 2, true);
        assert!(!named.seen(Line::A, s1, 2, 3, true));
        assert_eq!(named.pinned(Line::A), Some(FeedSource::exactly(feed)));
    }

    #[test]
    fn a_learned_source_is_pinned_once_and_then_checked() {
        let mut s = Sources::new([None, None]);
        let feed = at([198, 18, 0, 1], 40000);
        assert_eq!(
            s.check(Line::A, Sender::Datagram(at([198, 18, 0, 9], 1))),
            Ok(())
        );
        assert!(s.learning(Line::A));
        assert!(
            !s.seen(Line::A, feed, 1, 3, true),
            "one packet pins nothing"
        );
        assert!(s.seen(Line::A, feed, 3, 4, true));
        assert_eq!(s.take_fresh(), Some((Line::A, FeedSource::exactly(feed))));
        assert_eq!(s.take_fresh(), None);
        let stranger = at([198, 18, 0, 9], 1);
        s.seen(Line::A, stranger, 4, 5, true);
        assert!(!s.seen(Line::A, stranger, 5, 6, true));
        assert_eq!(s.take_fresh(), None, "pinned once");
        assert_eq!(s.check(Line::A, Sender::Datagram(feed)), Ok(()));
        assert_eq!(
            s.check(Line::A, Sender::Datagram(at([198, 18, 0, 9], 1))),
            Err(Foreign::Addr)
        );
        assert_eq!(
            s.check(Line::A, Sender::Datagram(at([198, 18, 0, 1], 40001))),
            Err(Foreign::Port)
        );
        assert_eq!(s.check(Line::A, Sender::Program), Ok(()));
        // Line B still learns; the re-request server's line is never checked here.
        assert_eq!(
            s.check(Line::B, Sender::Datagram(at([198, 18, 0, 9], 1))),
            Ok(())
        );
        assert_eq!(
            s.check(Line::Recovery, Sender::Datagram(at([198, 18, 0, 9], 1))),
            Ok(())
        );
    }
}
