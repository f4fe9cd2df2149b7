//! ITCH 5.0 Market-Wide Circuit Breaker (MWCB) Decline Level message, type `'V'`, 35 bytes: the
//! day's three breach levels.
//!
//! | Offset | Len | Field           | Type                                  |
//! |-------:|----:|-----------------|---------------------------------------|
//! | 0      | 1   | Message Type    | `'V'`                                 |
//! | 1      | 2   | Stock Locate    | u16, always 0                         |
//! | 3      | 2   | Tracking Number | u16                                   |
//! | 5      | 6   | Timestamp       | u48, ns since midnight                |
//! | 11     | 8   | Level 1         | Price(8): u64, 8 implied decimals     |
//! | 19     | 8   | Level 2         | Price(8): u64, 8 implied decimals     |
//! | 27     | 8   | Level 3         | Price(8): u64, 8 implied decimals     |
//!
//! The levels are kept as the raw `u64`s: [`Price4`](super::Price4) is 4 decimals.

message! {
    kind: b'V', len: 35, name: "MWCB Decline Level",
    fields: {
        /// MWCB Level 1, in units of 10^-8 (`Price(8)`).
        level1, set_level1, LEVEL1: u64 = 11..19, "Level 1";
        /// MWCB Level 2, in units of 10^-8 (`Price(8)`).
        level2, set_level2, LEVEL2: u64 = 19..27, "Level 2";
        /// MWCB Level 3, in units of 10^-8 (`Price(8)`).
        level3, set_level3, LEVEL3: u64 = 27..35, "Level 3";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // Levels 4185.30, 3915.28 and 3690.28 (8 implied decimals). Stock locate is always 0 on the
    // feed; 13 here so that a misplaced field shows.
    static PACKET_BYTES: [u8; 35] = [
        b'V', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        0x00, 0x00, 0x00, 0x61, 0x72, 0x54, 0xfc, 0x80, // level 1: 418_530_000_000
        0x00, 0x00, 0x00, 0x5b, 0x28, 0xe3, 0x2a, 0x00, // level 2: 391_528_000_000
        0x00, 0x00, 0x00, 0x55, 0xeb, 0xc8, 0x69, 0x00, // level 3: 369_028_000_000
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            level1: 418_530_000_000,
            level2: 391_528_000_000,
            level3: 369_028_000_000,
        }
    }

    fixture_tests!(Message::MwcbDeclineLevel, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'V');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.level1(), 418_530_000_000);
        assert_eq!(packet.level2(), 391_528_000_000);
        assert_eq!(packet.level3(), 369_028_000_000);
    }
}
