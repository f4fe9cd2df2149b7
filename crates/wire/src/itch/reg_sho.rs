//! ITCH 5.0 Reg SHO Short Sale Price Test Restricted Indicator message, type `'Y'`, 20 bytes:
//! a symbol's SEC Rule 201 status.
//!
//! | Offset | Len | Field           | Type                         |
//! |-------:|----:|-----------------|------------------------------|
//! | 0      | 1   | Message Type    | `'Y'`                        |
//! | 1      | 2   | Stock Locate    | u16                          |
//! | 3      | 2   | Tracking Number | u16                          |
//! | 5      | 6   | Timestamp       | u48, ns since midnight       |
//! | 11     | 8   | Stock           | Alpha(8), space padded       |
//! | 19     | 1   | Reg SHO Action  | Alpha: `'0'`, `'1'`, `'2'`   |

use super::Stock;

message! {
    kind: b'Y', len: 20, name: "Reg SHO Short Sale Price Test Restricted Indicator",
    fields: {
        /// Stock symbol.
        stock, set_stock, STOCK: Stock = 11..19, "Stock";
        /// `'0'` no price test, `'1'` restriction in effect after an intraday drop, `'2'`
        /// restriction remains in effect.
        action, set_action, ACTION: u8 = 19, "Reg SHO Action";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // ZVZZT restricted after an intraday price drop ('1').
    static PACKET_BYTES: [u8; 20] = [
        b'Y', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        b'Z', b'V', b'Z', b'Z', b'T', b' ', b' ', b' ', // stock
        b'1', // Reg SHO action
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            stock: Stock(*b"ZVZZT   "),
            action: b'1',
        }
    }

    fixture_tests!(Message::RegSho, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'Y');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.stock(), Stock(*b"ZVZZT   "));
        assert_eq!(packet.action(), b'1');
    }
}
