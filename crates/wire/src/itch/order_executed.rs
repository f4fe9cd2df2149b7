//! ITCH 5.0 Order Executed message, type `'E'`, 31 bytes: a displayed order executed, in whole
//! or in part, at its display price.
//!
//! | Offset | Len | Field                  | Type                   |
//! |-------:|----:|------------------------|------------------------|
//! | 0      | 1   | Message Type           | `'E'`                  |
//! | 1      | 2   | Stock Locate           | u16                    |
//! | 3      | 2   | Tracking Number        | u16                    |
//! | 5      | 6   | Timestamp              | u48, ns since midnight |
//! | 11     | 8   | Order Reference Number | u64                    |
//! | 19     | 4   | Executed Shares        | u32                    |
//! | 23     | 8   | Match Number           | u64                    |

message! {
    kind: b'E', len: 31, name: "Order Executed",
    fields: {
        /// The order executed.
        order_ref, set_order_ref, ORDER_REF: u64 = 11..19, "Order Reference Number";
        /// Shares executed.
        executed_shares, set_executed_shares, EXECUTED_SHARES: u32 = 19..23, "Executed Shares";
        /// The day-unique match number of the execution.
        match_number, set_match_number, MATCH_NUMBER: u64 = 23..31, "Match Number";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // 100 shares of order 0x0102030405060708 executed, match 0x1112131415161718.
    static PACKET_BYTES: [u8; 31] = [
        b'E', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // order ref
        0x00, 0x00, 0x00, 0x64, // executed shares 100
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // match number
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            order_ref: 0x0102_0304_0506_0708,
            executed_shares: 100,
            match_number: 0x1112_1314_1516_1718,
        }
    }

    fixture_tests!(Message::OrderExecuted, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'E');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.order_ref(), 0x0102_0304_0506_0708);
        assert_eq!(packet.executed_shares(), 100);
        assert_eq!(packet.match_number(), 0x1112_1314_1516_1718);
    }
}
