//! Where every field of the lab's wire formats sits: the one place each offset and length is
//! written down.
//!
//! The `wire` crate's codecs re-export these as their `field` modules and lengths, and the XDP
//! program reads and writes frames at exactly these offsets, so the two cannot drift apart.
//! They live here, in the `no_std` crate the XDP program already depends on, rather than in
//! `wire` (which needs std for its file readers and pulls in etherparse and thiserror): the
//! eBPF build then gains no crate, no `RUSTC_BOOTSTRAP` entry and no rebuild trigger.
//!
//! Ranges follow smoltcp's convention: a [`Field`] is the byte range inside its header or
//! message, a single-byte field is a plain `usize` offset. All multi-byte integers are
//! big-endian on the wire.

/// A fixed byte range inside a header or message (smoltcp's `wire::field::Field`).
pub type Field = core::ops::Range<usize>;
/// Everything from a byte offset to the end of a packet.
pub type Rest = core::ops::RangeFrom<usize>;

/// `field`, relative to its header, moved to where that header starts in a frame (`base`):
/// `at(ethernet::HEADER_LEN, ipv4::TOTAL_LEN)` is the IPv4 total length in an Ethernet frame.
#[inline(always)]
pub const fn at(base: usize, field: Field) -> Field {
    base + field.start..base + field.end
}

/// Ethernet II header (IEEE 802.3, no VLAN tag, no FCS).
pub mod ethernet {
    use super::Field;

    /// Destination MAC.
    pub const DST: Field = 0..6;
    /// Source MAC.
    pub const SRC: Field = 6..12;
    /// EtherType.
    pub const ETHERTYPE: Field = 12..14;
    /// Header length.
    pub const HEADER_LEN: usize = ETHERTYPE.end;
    /// EtherType of IPv4 (IANA).
    pub const ETHERTYPE_IPV4: u16 = 0x0800;
}

/// IPv4 header (RFC 791).
pub mod ipv4 {
    use super::Field;

    /// Version (high nibble) and header length in 32-bit words (IHL, low nibble).
    pub const VER_IHL: usize = 0;
    /// Total length: header and payload.
    pub const TOTAL_LEN: Field = 2..4;
    /// Identification.
    pub const IDENT: Field = 4..6;
    /// Flags (3 bits) and fragment offset (13 bits).
    pub const FLAGS_FRAG: Field = 6..8;
    /// Time to live.
    pub const TTL: usize = 8;
    /// Protocol of the payload.
    pub const PROTOCOL: usize = 9;
    /// Header checksum ([`crate::checksum::ipv4_header`]).
    pub const CHECKSUM: Field = 10..12;
    /// Source address.
    pub const SRC: Field = 12..16;
    /// Destination address.
    pub const DST: Field = 16..20;
    /// Header length without options (IHL 5).
    pub const HEADER_LEN: usize = DST.end;
    /// `VER_IHL` of a version 4 header without options.
    pub const VER_IHL_NO_OPTIONS: u8 = 0x45;
    /// The "don't fragment" flag in `FLAGS_FRAG`.
    pub const FLAG_DONT_FRAGMENT: u16 = 0x4000;
    /// The "more fragments" flag in `FLAGS_FRAG`.
    pub const FLAG_MORE_FRAGMENTS: u16 = 0x2000;
    /// The fragment offset in `FLAGS_FRAG`, in units of 8 bytes.
    pub const FRAG_OFFSET_MASK: u16 = 0x1fff;
    /// IANA protocol number of UDP.
    pub const PROTOCOL_UDP: u8 = 17;
    /// IP protocol number of TCP.
    pub const PROTOCOL_TCP: u8 = 6;

    /// The header length a `VER_IHL` byte gives, if it is a version 4 header of at least
    /// [`HEADER_LEN`] bytes; `None` is a malformed header. The XDP program's `classify` and
    /// `afxdp::frame`'s both read the byte through this.
    #[inline(always)]
    pub const fn header_len(ver_ihl: u8) -> Option<usize> {
        let ihl = (ver_ihl & 0x0f) as usize * 4;
        if ver_ihl >> 4 != 4 || ihl < HEADER_LEN {
            None
        } else {
            Some(ihl)
        }
    }

    /// Whether a `FLAGS_FRAG` field marks a fragment: anything but "don't fragment" (more
    /// fragments, or an offset). Both classifiers pass fragments to the kernel.
    #[inline(always)]
    pub const fn is_fragment(flags_frag: u16) -> bool {
        flags_frag & (FLAG_MORE_FRAGMENTS | FRAG_OFFSET_MASK) != 0
    }
}

/// TCP header (RFC 9293), without options.
pub mod tcp {
    use super::Field;

    /// Source port: at the same offset as UDP's, so one read serves both.
    pub const SRC_PORT: Field = 0..2;
    /// Destination port.
    pub const DST_PORT: Field = 2..4;
    /// Sequence number.
    pub const SEQ: Field = 4..8;
    /// Acknowledgement number.
    pub const ACK: Field = 8..12;
    /// Data offset (high nibble, in 32-bit words) and reserved bits.
    pub const DATA_OFFSET: usize = 12;
    /// Flags (CWR ECE URG ACK PSH RST SYN FIN).
    pub const FLAGS: usize = 13;
    /// Receive window.
    pub const WINDOW: Field = 14..16;
    /// Checksum.
    pub const CHECKSUM: Field = 16..18;
    /// Urgent pointer.
    pub const URGENT: Field = 18..20;
    /// Header length without options.
    pub const HEADER_LEN: usize = URGENT.end;
}

/// UDP header (RFC 768).
pub mod udp {
    use super::Field;

    /// Source port.
    pub const SRC_PORT: Field = 0..2;
    /// Destination port.
    pub const DST_PORT: Field = 2..4;
    /// Length: header and payload.
    pub const LENGTH: Field = 4..6;
    /// Checksum over the pseudo header, header and payload; 0 means none (IPv4 only).
    pub const CHECKSUM: Field = 6..8;
    /// Header length.
    pub const HEADER_LEN: usize = CHECKSUM.end;

    /// Whether a UDP `LENGTH` field can be one: at least the header.
    #[inline(always)]
    pub const fn length_holds_header(length: u16) -> bool {
        length as usize >= HEADER_LEN
    }
}

/// Everything in front of the UDP payload of an Ethernet II / IPv4 (no options) / UDP frame.
pub const UDP_PAYLOAD_OFFSET: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN;

/// MoldUDP64 downstream packet header (NASDAQ MoldUDP64 Protocol Specification, v1.00).
pub mod moldudp64 {
    /// Byte ranges of the header.
    pub mod field {
        use crate::layout::{Field, Rest};

        /// Session: 10 bytes, alphanumeric, identifies the session the sequence numbers belong
        /// to.
        pub const SESSION: Field = 0..10;
        /// Sequence number of the first message in the packet (or the next expected, for
        /// heartbeats and end of session).
        pub const SEQUENCE: Field = 10..18;
        /// Message count: blocks in the packet; 0 = heartbeat, 0xFFFF = end of session.
        pub const COUNT: Field = 18..20;
        /// Message blocks, each `[u16 length][length bytes]`.
        pub const PAYLOAD: Rest = 20..;
        /// The length prefix of a message block, relative to the block's start.
        pub const BLOCK_LEN: Field = 0..2;
    }

    /// Length of the header.
    pub const HEADER_LEN: usize = field::PAYLOAD.start;
    /// The message count of an end-of-session packet (0 is a heartbeat's).
    pub const END_OF_SESSION: u16 = 0xFFFF;
    /// Length of a message block's length prefix.
    pub const BLOCK_HEADER_LEN: usize = field::BLOCK_LEN.end;
    /// Where the first message's bytes start.
    pub const FIRST_MESSAGE: usize = HEADER_LEN + BLOCK_HEADER_LEN;
}

/// NASDAQ TotalView-ITCH 5.0.
pub mod itch {
    /// The Buy/Sell Indicator's buy (also the order message's side).
    pub const SIDE_BUY: u8 = b'B';
    /// The Buy/Sell Indicator's sell.
    pub const SIDE_SELL: u8 = b'S';

    /// Trade (non-cross) message, type `'P'`.
    pub mod trade {
        /// Byte ranges of the message.
        pub mod field {
            use crate::layout::Field;

            /// Message type, `'P'`.
            pub const KIND: usize = 0;
            /// Stock locate code.
            pub const STOCK_LOCATE: Field = 1..3;
            /// Tracking number.
            pub const TRACKING_NUMBER: Field = 3..5;
            /// Nanoseconds since midnight, 6 bytes.
            pub const TIMESTAMP: Field = 5..11;
            /// Order reference number of the non-displayed order executed.
            pub const ORDER_REF: Field = 11..19;
            /// Buy/sell indicator.
            pub const SIDE: usize = 19;
            /// Shares executed.
            pub const SHARES: Field = 20..24;
            /// Stock symbol.
            pub const STOCK: Field = 24..32;
            /// Execution price, Price(4).
            pub const PRICE: Field = 32..36;
            /// Match number.
            pub const MATCH_NUMBER: Field = 36..44;
        }

        /// The message's type byte.
        pub const KIND: u8 = b'P';
        /// The message's length.
        pub const LEN: usize = field::MATCH_NUMBER.end;
    }
}

/// The trader's order message: a compact, OUCH-style Enter Order.
pub mod order {
    /// Byte ranges of the message.
    pub mod field {
        use crate::layout::Field;

        /// Message type, `'O'`.
        pub const KIND: usize = 0;
        /// Side, `'B'` or `'S'`.
        pub const SIDE: usize = 1;
        /// Flags (`FLAG_REVERSE`).
        pub const FLAGS: Field = 2..4;
        /// Shares.
        pub const SHARES: Field = 4..8;
        /// Order token.
        pub const TOKEN: Field = 8..16;
        /// Sequence number of the triggering tick.
        pub const TICK_SEQ: Field = 16..24;
        /// Price of the triggering tick, Price(4).
        pub const PRICE: Field = 24..28;
        /// Stock symbol.
        pub const STOCK: Field = 28..36;
    }

    /// The message's type byte.
    pub const KIND: u8 = b'O';
    /// The message's length.
    pub const LEN: usize = field::STOCK.end;
}

/// SoupBinTCP 3.00's packet header and its packets' fixed fields.
pub mod soupbin;

/// OUCH 5.0's messages (inside SoupBinTCP's data packets).
pub mod ouch;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_rules() {
        assert_eq!(ipv4::header_len(0x45), Some(20));
        assert_eq!(ipv4::header_len(0x4f), Some(60));
        assert_eq!(ipv4::header_len(0x44), None, "IHL below 5");
        assert_eq!(ipv4::header_len(0x65), None, "version 6");
        assert!(!ipv4::is_fragment(ipv4::FLAG_DONT_FRAGMENT));
        assert!(!ipv4::is_fragment(0));
        assert!(ipv4::is_fragment(ipv4::FLAG_MORE_FRAGMENTS));
        assert!(ipv4::is_fragment(1));
        assert!(ipv4::is_fragment(ipv4::FLAG_DONT_FRAGMENT | 8));
        assert!(udp::length_holds_header(8) && !udp::length_holds_header(7));
    }

    /// Each header's fields tile it: no gap, no overlap (a mistyped offset shows up here).
    #[test]
    fn fields_tile_their_headers() {
        fn tiles(fields: &[Field], len: usize) {
            let mut at = 0;
            for f in fields {
                assert_eq!(f.start, at, "{f:?}");
                at = f.end;
            }
            assert_eq!(at, len);
        }
        let one = |i: usize| i..i + 1;
        tiles(
            &[ethernet::DST, ethernet::SRC, ethernet::ETHERTYPE],
            ethernet::HEADER_LEN,
        );
        tiles(
            &[
                0..2, // version/IHL and DSCP/ECN
                ipv4::TOTAL_LEN,
                ipv4::IDENT,
                ipv4::FLAGS_FRAG,
                one(ipv4::TTL),
                one(ipv4::PROTOCOL),
                ipv4::CHECKSUM,
                ipv4::SRC,
                ipv4::DST,
            ],
            ipv4::HEADER_LEN,
        );
        tiles(
            &[udp::SRC_PORT, udp::DST_PORT, udp::LENGTH, udp::CHECKSUM],
            udp::HEADER_LEN,
        );
        {
            use moldudp64::field::*;
            tiles(&[SESSION, SEQUENCE, COUNT], moldudp64::HEADER_LEN);
        }
        {
            use itch::trade::field::*;
            tiles(
                &[
                    one(KIND),
                    STOCK_LOCATE,
                    TRACKING_NUMBER,
                    TIMESTAMP,
                    ORDER_REF,
                    one(SIDE),
                    SHARES,
                    STOCK,
                    PRICE,
                    MATCH_NUMBER,
                ],
                itch::trade::LEN,
            );
        }
        {
            use order::field::*;
            tiles(
                &[
                    one(KIND),
                    one(SIDE),
                    FLAGS,
                    SHARES,
                    TOKEN,
                    TICK_SEQ,
                    PRICE,
                    STOCK,
                ],
                order::LEN,
            );
        }
        assert_eq!(UDP_PAYLOAD_OFFSET, 42);
        assert_eq!(at(ethernet::HEADER_LEN, ipv4::TOTAL_LEN), 16..18);
        assert_eq!(moldudp64::FIRST_MESSAGE, 22);
    }
}
