//! RFC 5961 in front of smoltcp, for the userspace TCP's order session (`--orders tcp-xdp`).
//!
//! smoltcp 0.13 takes any RST whose sequence number falls in its receive window (64 KiB here)
//! and closes the connection: a stranger on the segment who knows the 4-tuple needs a few
//! guesses to reset the session. RFC 5961 narrows that to one number: an RST is taken only at
//! exactly RCV.NXT; one elsewhere in the window gets a challenge ACK (which makes the real
//! peer, if it meant it, answer with an RST at the exact number) and is dropped; one outside
//! the window is dropped silently. A SYN on a synchronized connection gets a challenge ACK
//! and is dropped, whatever its number (§4). The checks sit in the device, between the RX
//! ring and smoltcp, not in smoltcp: no fork to keep, and the device already reads every
//! segment both ways (it learns RCV.NXT from what smoltcp acknowledges: behind smoltcp's own
//! between a segment and its ACK at worst, never ahead, so the exchange's exact RST is at
//! worst challenged, and its answer to the challenge taken).
//!
//! Challenge ACKs are rate-limited ([`CHALLENGE_EVERY_NS`]): a flood of forged RSTs can't
//! become a flood of ACKs to the gateway. §5's check of the ACK field of data segments is not
//! here: a forged data segment is the session layer's to catch (an answer that matches no
//! order).

/// TCP's RST and SYN flags.
const RST: u8 = 0x04;
const SYN: u8 = 0x02;

/// At most one challenge ACK this often (ns): 100 a second.
pub(super) const CHALLENGE_EVERY_NS: u64 = 10_000_000;

/// What the guard does with a segment from the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Guard {
    /// To smoltcp.
    Pass,
    /// An RST outside the window: dropped silently.
    Drop,
    /// An RST in the window but not at RCV.NXT, or a SYN on a synchronized connection: a
    /// challenge ACK, and dropped.
    Challenge,
}

/// The guard's verdict on a segment numbered `seq` with `flags`, on a connection that is
/// `synchronized` (past the handshake), expecting `rcv_nxt` next (`None`: not known yet, so
/// nothing is refused) with a receive window of `window` bytes.
pub(super) fn guard(
    synchronized: bool,
    rcv_nxt: Option<u32>,
    window: u32,
    seq: u32,
    flags: u8,
) -> Guard {
    let Some(next) = rcv_nxt.filter(|_| synchronized) else {
        return Guard::Pass;
    };
    if flags & RST != 0 {
        if seq == next {
            Guard::Pass
        } else if seq.wrapping_sub(next) < window {
            Guard::Challenge
        } else {
            Guard::Drop
        }
    } else if flags & SYN != 0 {
        Guard::Challenge
    } else {
        Guard::Pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACK: u8 = 0x10;
    const NEXT: u32 = 1_000_000;
    const WINDOW: u32 = 65_535;

    fn on(seq: u32, flags: u8) -> Guard {
        guard(true, Some(NEXT), WINDOW, seq, flags)
    }

    /// The lies the table tried, each with the verdict RFC 5961 gives it.
    #[test]
    fn an_rst_is_taken_only_at_exactly_the_next_number() {
        assert_eq!(on(NEXT, RST), Guard::Pass, "exact");
        assert_eq!(on(NEXT, RST | ACK), Guard::Pass, "exact, with ACK");
        assert_eq!(
            on(NEXT + 1_000, RST),
            Guard::Challenge,
            "1,000 past, in the window"
        );
        assert_eq!(
            on(NEXT + WINDOW - 1, RST),
            Guard::Challenge,
            "the window's last byte"
        );
        assert_eq!(on(NEXT + WINDOW, RST), Guard::Drop, "just past the window");
        assert_eq!(on(NEXT - 1, RST), Guard::Drop, "just behind");
        // A blind sweep, one RST every 64 KiB of sequence space: one lands in the window and is
        // challenged, none resets.
        let sweep: Vec<Guard> = (0..65_536u32)
            .map(|i| on(i.wrapping_mul(65_536), RST))
            .collect();
        assert!(!sweep.contains(&Guard::Pass));
        assert!(sweep.iter().filter(|&&g| g == Guard::Challenge).count() <= 1);
    }

    #[test]
    fn the_next_number_wraps_as_sequence_space_does() {
        let g = |seq| guard(true, Some(u32::MAX - 10), WINDOW, seq, RST);
        assert_eq!(g(u32::MAX - 10), Guard::Pass);
        assert_eq!(g(5), Guard::Challenge, "past the wrap, in the window");
        assert_eq!(g(u32::MAX - 11), Guard::Drop);
    }

    #[test]
    fn a_syn_on_a_synchronized_connection_is_challenged_wherever_it_is() {
        assert_eq!(on(NEXT, SYN), Guard::Challenge);
        assert_eq!(on(NEXT + 5_000_000, SYN | ACK), Guard::Challenge);
        assert_eq!(on(NEXT, ACK), Guard::Pass, "data and ACKs are smoltcp's");
    }

    /// Before the handshake is done (or before the device knows RCV.NXT) smoltcp's own checks
    /// stand: its SYN-SENT rules take only an RST that acknowledges its SYN.
    #[test]
    fn nothing_is_refused_before_the_connection_is_synchronized() {
        assert_eq!(guard(false, Some(NEXT), WINDOW, NEXT + 7, RST), Guard::Pass);
        assert_eq!(guard(true, None, WINDOW, NEXT + 7, RST), Guard::Pass);
        assert_eq!(guard(false, None, WINDOW, 0, SYN | ACK), Guard::Pass);
    }
}
