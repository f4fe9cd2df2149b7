//! The driver filter's run per line: the state machine the XDP program keeps to drop the
//! packets of a full-depth feed that carry nothing for the trader without a dropped packet
//! ever looking like a gap (docs/driver-filter.md). One implementation, for the program and
//! for the tests that drive the trader's sequencer with what it would pass.
//!
//! Per line the program remembers where the current run of dropped packets began and the
//! number it expects next. A packet it may drop (a *candidate*: from the pinned source, sound
//! framing, at least one message and at most [`CAP`], none for the trader's stock locates) is
//! dropped only when it continues the line exactly; then the run grows. Every packet it passes
//! carries the run's [`Claim`]: "every number in `[from, to)` came on this line, in order, and
//! carried nothing for you". A packet that doesn't continue the line (a loss before it, a
//! reorder, a duplicate) is passed, never dropped, so a run never spans a number the program
//! did not see.

/// The most messages a dropped packet may carry: a forged candidate at the line's next number,
/// from the feed's own source and port, whose real packet was lost, hides at most this many
/// real messages from the trader (the one lie the filter can be told; docs/trust.md).
pub const CAP: u16 = 32;

/// The load-time global that compiles the filter in (1) or out (0: the verifier prunes it, and
/// the program is the one every other path measures).
pub const GLOBAL_FILTER_ON: &str = "FILTER_ON";
/// The stock locates the trader keeps: one bit each, 1,024 `u64` words ([`LOCATE_WORDS`]). A
/// message with its bit set (and locate 0, the system's, which the trader always sets) is the
/// trader's: its packet is never dropped.
pub const MAP_LOCATES: &str = "LOCATES";
/// Words of [`MAP_LOCATES`].
pub const LOCATE_WORDS: u32 = 1024;
/// The filter's arming, written by the trader once it has confirmed its feed and resolved its
/// symbols: [`FILTER_SESSION_HEAD`], [`FILTER_SESSION_TAIL`], then [`FILTER_ARMED`] last.
/// Until it is armed nothing is dropped.
pub const MAP_FILTER: &str = "FILTER";
/// [`MAP_FILTER`]'s entries.
pub const FILTER_ENTRIES: u32 = 3;
/// The confirmed session's first eight bytes (native order of the bytes as they are on the
/// wire): a packet of another session is never dropped and never steps the run.
pub const FILTER_SESSION_HEAD: u32 = 0;
/// The session's last two bytes, in the low two bytes of the word.
pub const FILTER_SESSION_TAIL: u32 = 1;
/// Nonzero: armed.
pub const FILTER_ARMED: u32 = 2;
/// The per-line run ([`Run`]), one entry: the filter serves a one-line feed (line A).
pub const MAP_FILTER_RUN: &str = "FILTER_RUN";

/// The session's two words as [`MAP_FILTER`] holds them.
pub const fn session_words(session: [u8; 10]) -> (u64, u64) {
    let s = session;
    (
        u64::from_ne_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]),
        u64::from_ne_bytes([s[8], s[9], 0, 0, 0, 0, 0, 0]),
    )
}

/// The claim's trailer length: magic, then `from` and `to` little-endian.
pub const CLAIM_LEN: usize = 20;
/// What starts a claim trailer.
pub const CLAIM_MAGIC: [u8; 4] = *b"T2TC";

/// The trailer bytes of `claim`.
pub fn claim_bytes(claim: Claim) -> [u8; CLAIM_LEN] {
    let mut b = [0u8; CLAIM_LEN];
    b[..4].copy_from_slice(&CLAIM_MAGIC);
    b[4..12].copy_from_slice(&claim.from.to_le_bytes());
    b[12..].copy_from_slice(&claim.to.to_le_bytes());
    b
}

/// The claim the filter appended to `frame` (Ethernet, IPv4), if there is one: the trailer
/// must start exactly where the IPv4 datagram ends and fill the rest of the frame. The program
/// appends one to every feed packet it passes while it filters, after whatever the frame
/// carried, so a stranger's bytes past the datagram never end where a claim would be read.
pub fn claim_trailer(frame: &[u8]) -> Option<Claim> {
    let len_at = crate::layout::at(
        crate::layout::ethernet::HEADER_LEN,
        crate::layout::ipv4::TOTAL_LEN,
    );
    let total = frame.get(len_at)?;
    let ip_end =
        crate::layout::ethernet::HEADER_LEN + usize::from(u16::from_be_bytes([total[0], total[1]]));
    let t = frame.get(ip_end..)?;
    let t: &[u8; CLAIM_LEN] = t.try_into().ok()?;
    if t[..4] != CLAIM_MAGIC {
        return None;
    }
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&t[at..at + 8]);
        u64::from_le_bytes(w)
    };
    Some(Claim {
        from: word(4),
        to: word(12),
    })
}

/// The run a passed packet claims: `[from, to)` was dropped, whole and in order. Empty
/// (`from == to`) claims nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C)]
pub struct Claim {
    /// The first number of the run.
    pub from: u64,
    /// One past its last.
    pub to: u64,
}

impl Claim {
    /// Whether it claims anything.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.from >= self.to
    }
}

/// What to do with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Drop it in the driver: its numbers join the run.
    Drop,
    /// Pass it to the trader with this claim.
    Pass(Claim),
}

/// One line's run (an entry of the program's per-line array map).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C)]
pub struct Run {
    /// Where the current run of dropped packets began.
    pub from: u64,
    /// The number after the last packet that continued the line, dropped or passed.
    pub expect: u64,
    /// 1 once a packet set `expect`: before, nothing continues the line and nothing drops.
    pub primed: u64,
}

impl Run {
    /// A packet numbered `[first, next)` of this line; `candidate`: it passed every check
    /// and may be dropped.
    #[inline]
    pub fn step(&mut self, first: u64, next: u64, candidate: bool) -> Verdict {
        let continues = self.primed != 0 && first == self.expect;
        if continues && candidate {
            self.expect = next;
            return Verdict::Drop;
        }
        let claim = Claim {
            from: self.from,
            to: self.expect,
        };
        if continues || self.primed == 0 || next > self.expect {
            // It continues the line, or jumps ahead of it (a loss before it): the run it
            // claims ends here and the next begins after it.
            self.from = next;
            self.expect = next;
            self.primed = 1;
        }
        // Behind the line (a duplicate, a late packet) it is passed and the run left as it
        // was: it claims the run so far, which the trader takes only past its next number.
        Verdict::Pass(claim)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_read_only_right_past_the_ip_datagram_to_the_frames_end_with_its_magic() {
        // A 40-byte frame whose IPv4 total length says 26 (14 + 26 = 40), then the trailer.
        let mut frame = [0u8; 40].to_vec();
        frame[16..18].copy_from_slice(&26u16.to_be_bytes());
        let claim = Claim { from: 7, to: 19 };
        frame.extend_from_slice(&claim_bytes(claim));
        assert_eq!(claim_trailer(&frame), Some(claim));
        // A byte more (a stranger's trailer behind the program's, or padding): none.
        let mut longer = frame.clone();
        longer.push(0);
        assert_eq!(claim_trailer(&longer), None);
        // Cut short: none.
        assert_eq!(claim_trailer(&frame[..frame.len() - 1]), None);
        // Wrong magic: none.
        let mut wrong = frame.clone();
        wrong[40] ^= 1;
        assert_eq!(claim_trailer(&wrong), None);
        // A frame too short for the IPv4 length field: none, no panic.
        assert_eq!(claim_trailer(&frame[..10]), None);
        assert_eq!(session_words(*b"ABCDEFGHIJ").1.to_ne_bytes()[..2], *b"IJ");
    }

    #[test]
    fn a_run_is_claimed_by_the_packet_that_ends_it_and_never_spans_a_loss() {
        let mut r = Run::default();
        // Nothing drops before the line is known.
        assert_eq!(r.step(1, 3, true), Verdict::Pass(Claim { from: 0, to: 0 }));
        assert_eq!(r.step(3, 5, true), Verdict::Drop);
        assert_eq!(r.step(5, 6, true), Verdict::Drop);
        assert_eq!(r.step(6, 8, false), Verdict::Pass(Claim { from: 3, to: 6 }));
        assert_eq!(r.step(8, 9, true), Verdict::Drop);
        // 9..11 lost: the candidate after it is passed, claiming the run up to the loss.
        assert_eq!(
            r.step(11, 12, true),
            Verdict::Pass(Claim { from: 8, to: 9 })
        );
        assert_eq!(r.step(12, 13, true), Verdict::Drop);
        // A duplicate behind the line is passed and leaves the run as it was.
        assert_eq!(
            r.step(6, 8, true),
            Verdict::Pass(Claim { from: 12, to: 13 })
        );
        assert_eq!(
            r.step(13, 14, false),
            Verdict::Pass(Claim { from: 12, to: 13 })
        );
        assert!(Claim { from: 14, to: 14 }.is_empty());
    }
}
