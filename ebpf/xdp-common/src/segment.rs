//! The TCP trigger's segment (`trader --path trigger --orders tcp-xdp`): the order session's
//! next segment, built by the trader's userspace TCP between ticks, sent by the XDP program
//! when the armed tick fires.
//!
//! The frame is fixed in shape: Ethernet, IPv4 without options, TCP without options, one
//! SoupBinTCP Unsequenced Data packet carrying one OUCH 5.0 Enter Order without appendage
//! ([`FRAME_LEN`] bytes). Everything in it is known when the trader arms, the price excepted:
//! the order's price is the tick's. So the trader leaves the price's bytes zero and gives the
//! TCP checksum's partial sum over everything else ([`SegmentSlot::partial`]); the program
//! writes the tick's price at [`PRICE_AT`] and finishes the checksum with
//! [`tcp_checksum`]: a copy, four bytes and a fold, no sum over the segment in the driver.
//!
//! # Who may send at the next sequence number
//!
//! An armed segment holds the connection's next sequence number: the stack must not send data
//! of its own there while the program may fire it, and must learn of it if the program did.
//! The slot's claim words settle that without a lock. The program, about to fire the segment
//! of arm generation `g`: checks the slot is `g`'s, adds one to `claims` (an atomic add, which
//! on x86 is a full barrier), then reads `withdrawn` and the slot's generation again: if `g`
//! was withdrawn, or the slot holds another arm's segment now (withdrawn and re-armed between
//! the first read and the claim: `withdrawn` names only the last withdrawal), it gives up
//! (`resolved` += 1; the tick goes to the trader); else it sends, records `sent_price` and
//! `sent_generation`, and adds one to `resolved`. The stack, before it sends data itself:
//! writes `withdrawn = g`, a full fence, then reads `claims`, and waits until `resolved`
//! reaches it; then `sent_generation == g` says whether the segment left; it writes a new
//! segment only when every claim is settled. Either the program sees the withdrawal or the
//! stack sees the claim (the two stores can't both pass the two loads with a full barrier
//! between each store and its load), so the segment and the stack's own data never share a
//! sequence number. The wait is one program run at most (nanoseconds; the program runs with
//! preemption off). The rule rests on x86's ordering (a locked instruction orders the
//! program's later loads); BPF's non-fetching atomic add is relaxed on arm64, so the trader
//! refuses the TCP trigger on other architectures.

/// The segment's frame length: Ethernet 14, IPv4 20, TCP 20, SoupBinTCP header 3, Enter Order
/// 47.
pub const FRAME_LEN: usize = crate::layout::ethernet::HEADER_LEN
    + crate::layout::ipv4::HEADER_LEN
    + crate::layout::tcp::HEADER_LEN
    + crate::layout::soupbin::header::HEADER_LEN
    + crate::layout::ouch::enter_order::LEN;

/// Where the TCP header starts in the frame.
pub const TCP_AT: usize = crate::layout::ethernet::HEADER_LEN + crate::layout::ipv4::HEADER_LEN;

/// Where the Enter Order starts in the frame.
pub const ORDER_AT: usize =
    TCP_AT + crate::layout::tcp::HEADER_LEN + crate::layout::soupbin::header::HEADER_LEN;

/// Where the price's low four bytes sit in the frame (the Enter Order's 8-byte price, whose
/// high four bytes are zero for any price the feed can carry: ITCH prices are 4 bytes).
pub const PRICE_AT: usize = ORDER_AT + crate::layout::ouch::enter_order::field::PRICE.end - 4;

/// Where the TCP checksum sits in the frame.
pub const CHECKSUM_AT: usize = TCP_AT + crate::layout::tcp::CHECKSUM.start;

/// The array map (one [`SegmentSlot`], `BPF_F_MMAPABLE`) of the armed segment.
pub const MAP_SEGMENT: &str = "SEGMENT";

/// The load-time global (u8) that makes the trigger fire the armed TCP segment (1) instead of
/// the lab's UDP order (0, the default).
pub const GLOBAL_TRIGGER_TCP: &str = "TRIGGER_TCP";

/// The armed segment and its claim words (see the module's text). `repr(C)`, no padding the
/// compiler could leave undefined. Three parts, each on lines of its own: the claim words and
/// the trader's words (the first line), the record of what the program sent (the second line,
/// which the trader polls), and the frame (the third and fourth): the trader's polling never
/// pulls back the line the program's claim takes. (Pushing the words' and the frame's lines to
/// the shared cache after each write, as the trader does with the arm's, bought nothing
/// measurable: the fired run's order write was 145-209 ns either way, docs/trigger.md.)
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentSlot {
    /// Program: fire attempts that claimed the segment (atomic add).
    pub claims: u64,
    /// Program: claims settled, sent or given up (atomic add), each after its record.
    pub resolved: u64,
    /// Trader: the arm generation the segment is for (0: none); written after the frame.
    pub generation: u32,
    /// Trader: a generation withdrawn (the program must not send it).
    pub withdrawn: u32,
    /// Trader: the TCP checksum's ones'-complement sum, folded to 16 bits, over the pseudo
    /// header and the segment with its checksum and the price's bytes zero.
    pub partial: u32,
    /// Zero: the rest of the first line.
    pub pad: [u8; 36],
    /// Program: the arm generation of the last segment sent (0: none yet).
    pub sent_generation: u32,
    /// Program: the price that segment was sent at, Price(4).
    pub sent_price: u32,
    /// Zero: the rest of the record's line.
    pub sent_pad: [u64; 7],
    /// The frame, the price's bytes and the TCP checksum zero.
    pub frame: [u8; FRAME_LEN],
}

impl Default for SegmentSlot {
    fn default() -> Self {
        Self {
            claims: 0,
            resolved: 0,
            generation: 0,
            withdrawn: 0,
            partial: 0,
            pad: [0; 36],
            sent_generation: 0,
            sent_price: 0,
            sent_pad: [0; 7],
            frame: [0; FRAME_LEN],
        }
    }
}

/// The TCP checksum of the armed segment sent at `price`: the trader's `partial` sum, plus
/// the price's four bytes where they sit (at an odd offset from the TCP header, so each byte
/// counts in the other half of its 16-bit word: summed after a zero byte), folded and
/// complemented.
#[inline(always)]
pub fn tcp_checksum(partial: u32, price: u32) -> u16 {
    let p = price.to_be_bytes();
    let shifted = [0, p[0], p[1], p[2], p[3]];
    let words = if (PRICE_AT - TCP_AT) % 2 == 1 {
        crate::checksum::sum(&shifted)
    } else {
        crate::checksum::sum(&p)
    };
    !crate::checksum::fold(u64::from(partial) + words)
}

/// The partial sum [`SegmentSlot::partial`] holds, over `frame` (whose price bytes and TCP
/// checksum are zero): the pseudo header (addresses, protocol, TCP length), then the segment.
#[must_use]
pub fn partial_sum(frame: &[u8; FRAME_LEN]) -> u32 {
    let ip = &frame[crate::layout::ethernet::HEADER_LEN..];
    u32::from(crate::checksum::fold(crate::checksum::tcp_sum(ip)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum;

    #[test]
    fn the_slot_is_the_frame_after_a_line_of_words_and_a_line_of_record() {
        assert_eq!(FRAME_LEN, 104);
        assert_eq!(core::mem::size_of::<SegmentSlot>(), 128 + FRAME_LEN);
        assert_eq!(core::mem::offset_of!(SegmentSlot, sent_generation), 64);
        assert_eq!(core::mem::offset_of!(SegmentSlot, frame), 128);
        assert_eq!(PRICE_AT, 14 + 20 + 20 + 3 + 22);
    }

    /// The program's checksum (a partial sum and the price's bytes) equals the whole
    /// segment's checksum computed afresh, for prices of every byte pattern.
    #[test]
    fn the_finished_checksum_is_the_whole_segments() {
        let mut frame = [0u8; FRAME_LEN];
        let mut x: u32 = 0x9e37_79b9;
        for b in frame.iter_mut() {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            *b = (x >> 16) as u8;
        }
        frame[PRICE_AT..PRICE_AT + 4].fill(0);
        frame[CHECKSUM_AT..CHECKSUM_AT + 2].fill(0);
        let partial = partial_sum(&frame);
        for price in [
            0u32,
            1,
            0xff,
            0x1234_5678,
            0xffff_ffff,
            1_234_500,
            0x8000_0001,
        ] {
            let mut sent = frame;
            sent[PRICE_AT..PRICE_AT + 4].copy_from_slice(&price.to_be_bytes());
            let sum = tcp_checksum(partial, price);
            sent[CHECKSUM_AT..CHECKSUM_AT + 2].copy_from_slice(&sum.to_be_bytes());
            // A right checksum: the pseudo header and the segment with it sum to 0xffff.
            let mut pseudo = [0u8; 12];
            pseudo[..8].copy_from_slice(&sent[26..34]);
            pseudo[9] = 6;
            pseudo[10..].copy_from_slice(&((FRAME_LEN - TCP_AT) as u16).to_be_bytes());
            let all = checksum::sum(&pseudo) + checksum::sum(&sent[TCP_AT..]);
            assert_eq!(checksum::fold(all), 0xffff, "price {price:#x}");
        }
    }
}
