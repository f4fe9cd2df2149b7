//! ITCH 5.0 Market-Wide Circuit Breaker (MWCB) Status message, type `'W'`, 12 bytes: a breach
//! of one of the day's levels.
//!
//! | Offset | Len | Field           | Type                         |
//! |-------:|----:|-----------------|------------------------------|
//! | 0      | 1   | Message Type    | `'W'`                        |
//! | 1      | 2   | Stock Locate    | u16, always 0                |
//! | 3      | 2   | Tracking Number | u16                          |
//! | 5      | 6   | Timestamp       | u48, ns since midnight       |
//! | 11     | 1   | Breached Level  | Alpha: `'1'`, `'2'`, `'3'`   |

message! {
    kind: b'W', len: 12, name: "MWCB Status",
    fields: {
        /// The level breached: `'1'`, `'2'` or `'3'`.
        breached_level, set_breached_level, BREACHED_LEVEL: u8 = 11, "Breached Level";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // Level 2 breached. Stock locate is always 0 on the feed; 13 here so that a misplaced field
    // shows.
    static PACKET_BYTES: [u8; 12] = [
        b'W', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        b'2', // breached level
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            breached_level: b'2',
        }
    }

    fixture_tests!(Message::MwcbStatus, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'W');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.breached_level(), b'2');
    }
}
