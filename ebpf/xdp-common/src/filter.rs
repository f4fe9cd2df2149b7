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

/// The claims of the packets passed, by the packet's first number: an array of one
/// [`ClaimSlots`] value (`BPF_F_MMAPABLE`), which the trader maps and reads for each packet of
/// line A. A claim rides beside its packet, not in it: veth's frames from a sender's socket
/// often have no tailroom for a trailer, and this kernel refuses `bpf_xdp_adjust_meta` to the
/// program.
pub const MAP_CLAIMS: &str = "CLAIMS";
/// Slots of [`MAP_CLAIMS`] (a power of two), a ring filed in order: a packet's claim is found
/// while fewer than this many claims were filed after it, whatever the packets' sizes. A trader
/// further behind finds its claim overwritten, takes none, and sees the gap it then is
/// (re-requested, never skipped).
pub const CLAIM_SLOTS: usize = 1024;
/// No packet's: the key a slot has while the program rewrites it.
pub const NO_KEY: u64 = u64::MAX;

/// One passed packet's claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C)]
pub struct ClaimSlot {
    /// The first number of the packet it came with ([`NO_KEY`] while being written).
    pub key: u64,
    /// The claim.
    pub claim: Claim,
}

/// [`MAP_CLAIMS`]'s one value: a ring of claims in the order the program filed them.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct ClaimSlots {
    /// Claims filed so far (the next goes to slot `head % CLAIM_SLOTS`); written by the program
    /// after the slot, so a reader that sees it sees the slot whole.
    pub head: u64,
    /// The ring.
    pub slots: [ClaimSlot; CLAIM_SLOTS],
}

/// The slot of the `n`th claim filed. (Keyed by the ring's count, not the packet's number: a
/// feed of 16 messages a packet would use one slot in 16 of a ring keyed by number.)
#[inline]
pub const fn claim_slot(n: u64) -> usize {
    (n as usize) & (CLAIM_SLOTS - 1)
}

/// The reader's walk of the ring for the packet numbered from `first`: from `next` (the ring's
/// count at the first claim not yet taken or passed over) to `head` (claims filed), with `key`
/// and `claim` reading slot `n`'s (a key read before and after its claim, which must agree).
/// Claims are filed in the order their packets were passed and packets are taken in that
/// order, so it passes over older packets' claims (a passed packet that never reached the
/// reader) and stops at a later packet's (this one has none). A reader a whole ring behind
/// starts at the oldest claim still there. Returns the claim and where the next walk starts.
#[inline]
pub fn walk_claims(
    next: u64,
    head: u64,
    first: u64,
    key: impl Fn(u64) -> u64,
    claim: impl Fn(u64) -> Claim,
) -> (Option<Claim>, u64) {
    let mut n = if head - next.min(head) > CLAIM_SLOTS as u64 {
        head - CLAIM_SLOTS as u64
    } else {
        next
    };
    while n < head {
        match key(n) {
            k if k == first => {
                let c = claim(n);
                return ((key(n) == first).then_some(c), n + 1);
            }
            // An older packet's, which never came: passed over for good.
            k if k < first => n += 1,
            // A later packet's (or being rewritten, a ring ahead): none for this one.
            _ => break,
        }
    }
    (None, n)
}

/// Whether a claim is worth a slot: it claims something, and ends at or before the packet it
/// comes with (a packet behind the line carries the run ahead of it, which the trader never
/// takes, and must not evict the claim of the packet that ended that run).
#[inline]
pub const fn worth_a_slot(claim: Claim, first: u64) -> bool {
    !claim.is_empty() && claim.to <= first
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
    /// The run so far, for a packet that neither continues nor breaks it (a heartbeat, an end
    /// of session: numbered, carrying no message): passed with this claim, the run left as it
    /// is. Empty before the line is known.
    #[inline]
    pub fn so_far(&self) -> Claim {
        if self.primed == 0 {
            return Claim { from: 0, to: 0 };
        }
        Claim {
            from: self.from,
            to: self.expect,
        }
    }

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

    /// The ring as the program files it: (key, claim) per claim filed, the last CLAIM_SLOTS
    /// kept.
    fn ring(filed: &[(u64, Claim)]) -> ([(u64, Claim); CLAIM_SLOTS], u64) {
        let mut r = [(NO_KEY, Claim { from: 0, to: 0 }); CLAIM_SLOTS];
        for (n, f) in filed.iter().enumerate() {
            r[claim_slot(n as u64)] = *f;
        }
        (r, filed.len() as u64)
    }

    fn walk(
        r: &[(u64, Claim); CLAIM_SLOTS],
        head: u64,
        next: u64,
        first: u64,
    ) -> (Option<Claim>, u64) {
        walk_claims(
            next,
            head,
            first,
            |n| r[claim_slot(n)].0,
            |n| r[claim_slot(n)].1,
        )
    }

    /// The reader finds each packet's claim in a ring filed in order, whatever the packets'
    /// numbers (16 messages a packet used one slot in 16 of a ring keyed by number); passes
    /// over a claim whose packet never came; finds none for a packet that had none, without
    /// losing the next packet's; and, a whole ring behind, starts at the oldest claim kept.
    #[test]
    fn the_reader_walks_the_ring_in_the_order_claims_were_filed() {
        let c = |from: u64, to: u64| Claim { from, to };
        // Passed packets numbered 1 + 96k, each after five filtered packets of 16.
        let mut filed = [(0, c(0, 0)); 3000];
        for (i, f) in filed.iter_mut().enumerate() {
            let k = i as u64 + 1;
            *f = (1 + 96 * k, c(17 + 96 * (k - 1), 1 + 96 * k));
        }
        let (r, head) = ring(&filed);
        // The last CLAIM_SLOTS, taken one after another.
        let mut next = head - CLAIM_SLOTS as u64;
        for &(key, claim) in &filed[filed.len() - CLAIM_SLOTS..] {
            let (got, n) = walk(&r, head, next, key);
            assert_eq!(got, Some(claim), "key {key}");
            next = n;
        }
        assert_eq!(next, head);
        // A whole ring behind: the overwritten one is gone, the oldest kept is found.
        let (old, _) = walk(&r, head, 0, filed[0].0);
        assert_eq!(old, None);
        let oldest = filed[filed.len() - CLAIM_SLOTS];
        assert_eq!(walk(&r, head, 0, oldest.0).0, Some(oldest.1));
        // Passing over a packet that never came (its claim filed, the packet lost after).
        let (r, head) = ring(&[(17, c(1, 17)), (49, c(33, 49)), (81, c(65, 81))]);
        assert_eq!(walk(&r, head, 0, 49), (Some(c(33, 49)), 2));
        // A packet with no claim (nothing filtered before it) leaves the next one's in place.
        assert_eq!(walk(&r, head, 2, 65), (None, 2));
        assert_eq!(walk(&r, head, 2, 81), (Some(c(65, 81)), 3));
        // Nothing filed past the reader: none, and it stays.
        assert_eq!(walk(&r, head, 3, 97), (None, 3));
        // A slot being rewritten (its key invalid) is never read as a claim.
        let (r, head) = ring(&[(NO_KEY, c(1, 17))]);
        assert_eq!(walk(&r, head, 0, 17), (None, 0));
    }

    #[test]
    fn a_slot_is_kept_for_claims_the_trader_can_take() {
        assert!(worth_a_slot(Claim { from: 3, to: 9 }, 9));
        assert!(worth_a_slot(Claim { from: 3, to: 9 }, 12));
        assert!(!worth_a_slot(Claim { from: 3, to: 9 }, 6));
        assert!(!worth_a_slot(Claim { from: 9, to: 9 }, 9));
        assert_eq!(claim_slot(CLAIM_SLOTS as u64 + 5), 5);
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
        // A heartbeat or an end between carries the run so far and leaves it.
        assert_eq!(r.step(14, 15, true), Verdict::Drop);
        assert_eq!(r.so_far(), Claim { from: 14, to: 15 });
        assert_eq!(
            r.step(15, 16, false),
            Verdict::Pass(Claim { from: 14, to: 15 })
        );
        assert!(Run::default().so_far().is_empty());
    }
}
