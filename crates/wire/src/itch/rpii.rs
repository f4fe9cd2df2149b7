//! ITCH 5.0 Retail Price Improvement Indicator (RPII) message, type `'N'`, 20 bytes: retail
//! interest on the bid, the ask, both or neither.
//!
//! | Offset | Len | Field           | Type                               |
//! |-------:|----:|-----------------|------------------------------------|
//! | 0      | 1   | Message Type    | `'N'`                              |
//! | 1      | 2   | Stock Locate    | u16                                |
//! | 3      | 2   | Tracking Number | u16                                |
//! | 5      | 6   | Timestamp       | u48, ns since midnight             |
//! | 11     | 8   | Stock           | Alpha(8), space padded             |
//! | 19     | 1   | Interest Flag   | Alpha: `'B'`, `'S'`, `'A'`, `'N'`  |

use super::Stock;

message! {
    kind: b'N', len: 20, name: "Retail Price Improvement Indicator (RPII)",
    fields: {
        /// Stock symbol.
        stock, set_stock, STOCK: Stock = 11..19, "Stock";
        /// RPI orders on `'B'` the buy side, `'S'` the sell side, `'A'` both, `'N'` neither.
        interest_flag, set_interest_flag, INTEREST_FLAG: u8 = 19, "Interest Flag";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // Retail interest on the AAPL sell side.
    static PACKET_BYTES: [u8; 20] = [
        b'N', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        b'A', b'A', b'P', b'L', b' ', b' ', b' ', b' ', // stock
        b'S', // interest flag: sell side
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            stock: Stock(*b"AAPL    "),
            interest_flag: b'S',
        }
    }

    fixture_tests!(Message::Rpii, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'N');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.stock(), Stock(*b"AAPL    "));
        assert_eq!(packet.interest_flag(), b'S');
    }
}
