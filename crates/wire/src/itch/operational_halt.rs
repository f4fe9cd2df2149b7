//! ITCH 5.0 Operational Halt message, type `'h'`, 21 bytes: a symbol halted or resumed on one
//! Nasdaq market center only.
//!
//! | Offset | Len | Field                   | Type                           |
//! |-------:|----:|-------------------------|--------------------------------|
//! | 0      | 1   | Message Type            | `'h'`                          |
//! | 1      | 2   | Stock Locate            | u16                            |
//! | 3      | 2   | Tracking Number         | u16                            |
//! | 5      | 6   | Timestamp               | u48, ns since midnight         |
//! | 11     | 8   | Stock                   | Alpha(8), space padded         |
//! | 19     | 1   | Market Code             | Alpha: `'Q'`, `'B'`, `'X'`     |
//! | 20     | 1   | Operational Halt Action | Alpha, `'H'` / `'T'`           |

use super::Stock;

message! {
    kind: b'h', len: 21, name: "Operational Halt",
    fields: {
        /// Stock symbol.
        stock, set_stock, STOCK: Stock = 11..19, "Stock";
        /// The market center: `'Q'` Nasdaq, `'B'` BX, `'X'` PSX.
        market_code, set_market_code, MARKET_CODE: u8 = 19, "Market Code";
        /// `'H'` operationally halted, `'T'` halt lifted and trading resumed.
        action, set_action, ACTION: u8 = 20, "Operational Halt Action";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // ZVZZT operationally halted on BX.
    static PACKET_BYTES: [u8; 21] = [
        b'h', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        b'Z', b'V', b'Z', b'Z', b'T', b' ', b' ', b' ', // stock
        b'B', // market code: BX
        b'H', // action: halted
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            stock: Stock(*b"ZVZZT   "),
            market_code: b'B',
            action: b'H',
        }
    }

    fixture_tests!(Message::OperationalHalt, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'h');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.stock(), Stock(*b"ZVZZT   "));
        assert_eq!(packet.market_code(), b'B');
        assert_eq!(packet.action(), b'H');
    }
}
