//! ITCH 5.0 Order Replace message, type `'U'`, 35 bytes: a displayed order cancel-replaced under
//! a new reference number (side, stock and attribution carry over from the original).
//!
//! | Offset | Len | Field                           | Type                              |
//! |-------:|----:|---------------------------------|-----------------------------------|
//! | 0      | 1   | Message Type                    | `'U'`                             |
//! | 1      | 2   | Stock Locate                    | u16                               |
//! | 3      | 2   | Tracking Number                 | u16                               |
//! | 5      | 6   | Timestamp                       | u48, ns since midnight            |
//! | 11     | 8   | Original Order Reference Number | u64                               |
//! | 19     | 8   | New Order Reference Number      | u64                               |
//! | 27     | 4   | Shares                          | u32                               |
//! | 31     | 4   | Price                           | Price(4): u32, 4 implied decimals |

use super::Price4;

message! {
    kind: b'U', len: 35, name: "Order Replace",
    fields: {
        /// The order replaced.
        original_ref, set_original_ref, ORIGINAL_REF: u64 = 11..19,
            "Original Order Reference Number";
        /// The replacement's reference number, used from now on.
        new_ref, set_new_ref, NEW_REF: u64 = 19..27, "New Order Reference Number";
        /// The new displayed shares.
        shares, set_shares, SHARES: u32 = 27..31, "Shares";
        /// The new display price.
        price, set_price, PRICE: Price4 = 31..35, "Price";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // Order 0x0102030405060708 replaced by 0x1112131415161718: 200 shares at $123.4567.
    static PACKET_BYTES: [u8; 35] = [
        b'U', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // original order ref
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // new order ref
        0x00, 0x00, 0x00, 0xc8, // shares 200
        0x00, 0x12, 0xd6, 0x87, // price 1_234_567 = $123.4567
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            original_ref: 0x0102_0304_0506_0708,
            new_ref: 0x1112_1314_1516_1718,
            shares: 200,
            price: Price4(1_234_567),
        }
    }

    fixture_tests!(Message::OrderReplace, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'U');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.original_ref(), 0x0102_0304_0506_0708);
        assert_eq!(packet.new_ref(), 0x1112_1314_1516_1718);
        assert_eq!(packet.shares(), 200);
        assert_eq!(packet.price(), Price4(1_234_567));
    }
}
