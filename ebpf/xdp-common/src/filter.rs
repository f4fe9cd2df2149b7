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
