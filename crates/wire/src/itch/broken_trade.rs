//! ITCH 5.0 Broken Trade message, type `'B'`, 19 bytes: an execution broken as clearly
//! erroneous.
//!
//! | Offset | Len | Field           | Type                   |
//! |-------:|----:|-----------------|------------------------|
//! | 0      | 1   | Message Type    | `'B'`                  |
//! | 1      | 2   | Stock Locate    | u16                    |
//! | 3      | 2   | Tracking Number | u16                    |
//! | 5      | 6   | Timestamp       | u48, ns since midnight |
//! | 11     | 8   | Match Number    | u64                    |

message! {
    kind: b'B', len: 19, name: "Broken Trade",
    fields: {
        /// The match number of the execution broken (from an `'E'`, `'C'` or `'P'` message).
        match_number, set_match_number, MATCH_NUMBER: u64 = 11..19, "Match Number";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // Match 0x1112131415161718 broken.
    static PACKET_BYTES: [u8; 19] = [
        b'B', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // match number
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            match_number: 0x1112_1314_1516_1718,
        }
    }

    fixture_tests!(Message::BrokenTrade, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'B');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.match_number(), 0x1112_1314_1516_1718);
    }
}
