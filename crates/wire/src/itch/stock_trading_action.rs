//! ITCH 5.0 Stock Trading Action message, type `'H'`, 25 bytes: a symbol halted, paused,
//! released for quotation or released for trading.
//!
//! | Offset | Len | Field           | Type                                  |
//! |-------:|----:|-----------------|---------------------------------------|
//! | 0      | 1   | Message Type    | `'H'`                                 |
//! | 1      | 2   | Stock Locate    | u16                                   |
//! | 3      | 2   | Tracking Number | u16                                   |
//! | 5      | 6   | Timestamp       | u48, ns since midnight                |
//! | 11     | 8   | Stock           | Alpha(8), space padded                |
//! | 19     | 1   | Trading State   | Alpha: `'H'`, `'P'`, `'Q'`, `'T'`     |
//! | 20     | 1   | Reserved        | Alpha                                 |
//! | 21     | 4   | Reason          | Alpha(4), space padded                |

use super::Stock;

message! {
    kind: b'H', len: 25, name: "Stock Trading Action",
    fields: {
        /// Stock symbol.
        stock, set_stock, STOCK: Stock = 11..19, "Stock";
        /// `'H'` halted, `'P'` paused, `'Q'` quotation only, `'T'` trading.
        trading_state, set_trading_state, TRADING_STATE: u8 = 19, "Trading State";
        /// Reserved.
        reserved, set_reserved, RESERVED: u8 = 20, "Reserved";
        /// Trading action reason (Appendix C of the spec), space padded.
        reason, set_reason, REASON: [u8; 4] = 21..25, "Reason";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // ZVZZT paused for a LULD trading pause ("LUDP"); the reserved byte is 'R' here, not the
    // feed's space, so that a misplaced field shows.
    static PACKET_BYTES: [u8; 25] = [
        b'H', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        b'Z', b'V', b'Z', b'Z', b'T', b' ', b' ', b' ', // stock
        b'P', // trading state: paused
        b'R', // reserved
        b'L', b'U', b'D', b'P', // reason
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            stock: Stock(*b"ZVZZT   "),
            trading_state: b'P',
            reserved: b'R',
            reason: *b"LUDP",
        }
    }

    fixture_tests!(Message::StockTradingAction, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'H');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.stock(), Stock(*b"ZVZZT   "));
        assert_eq!(packet.trading_state(), b'P');
        assert_eq!(packet.reserved(), b'R');
        assert_eq!(packet.reason(), *b"LUDP");
    }
}
