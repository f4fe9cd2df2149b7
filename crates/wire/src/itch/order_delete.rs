//! ITCH 5.0 Order Delete message, type `'D'`, 19 bytes: a displayed order cancelled in full.
//!
//! | Offset | Len | Field                  | Type                   |
//! |-------:|----:|------------------------|------------------------|
//! | 0      | 1   | Message Type           | `'D'`                  |
//! | 1      | 2   | Stock Locate           | u16                    |
//! | 3      | 2   | Tracking Number        | u16                    |
//! | 5      | 6   | Timestamp              | u48, ns since midnight |
//! | 11     | 8   | Order Reference Number | u64                    |

message! {
    kind: b'D', len: 19, name: "Order Delete",
    fields: {
        /// The order deleted.
        order_ref, set_order_ref, ORDER_REF: u64 = 11..19, "Order Reference Number";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // Order 0x0102030405060708 deleted.
    static PACKET_BYTES: [u8; 19] = [
        b'D', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // order ref
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            order_ref: 0x0102_0304_0506_0708,
        }
    }

    fixture_tests!(Message::OrderDelete, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'D');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.order_ref(), 0x0102_0304_0506_0708);
    }
}
