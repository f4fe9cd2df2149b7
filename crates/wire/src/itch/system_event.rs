//! ITCH 5.0 System Event message, type `'S'`, 12 bytes: a market or feed event (start of
//! messages, start of system hours, ... end of messages).
//!
//! | Offset | Len | Field           | Type                                     |
//! |-------:|----:|-----------------|------------------------------------------|
//! | 0      | 1   | Message Type    | `'S'`                                    |
//! | 1      | 2   | Stock Locate    | u16, always 0                            |
//! | 3      | 2   | Tracking Number | u16                                      |
//! | 5      | 6   | Timestamp       | u48, ns since midnight                   |
//! | 11     | 1   | Event Code      | Alpha: `'O'`, `'S'`, `'Q'`, `'M'`, `'E'`, `'C'` |

message! {
    kind: b'S', len: 12, name: "System Event",
    fields: {
        /// Event code: `'O'` start of messages, `'S'` start of system hours, `'Q'` start of
        /// market hours, `'M'` end of market hours, `'E'` end of system hours, `'C'` end of
        /// messages (unchecked).
        event_code, set_event_code, EVENT_CODE: u8 = 11, "Event Code";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // Start of market hours ('Q'). Stock locate is always 0 on the feed; 13 here so that a
    // misplaced field shows.
    static PACKET_BYTES: [u8; 12] = [
        b'S', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        b'Q', // event code
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            event_code: b'Q',
        }
    }

    fixture_tests!(Message::SystemEvent, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'S');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.event_code(), b'Q');
    }
}
