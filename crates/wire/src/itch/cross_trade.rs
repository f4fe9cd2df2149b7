//! ITCH 5.0 Cross Trade message, type `'Q'`, 40 bytes: the bulk print of a Nasdaq cross
//! (opening, closing, IPO or halt).
//!
//! | Offset | Len | Field           | Type                              |
//! |-------:|----:|-----------------|-----------------------------------|
//! | 0      | 1   | Message Type    | `'Q'`                             |
//! | 1      | 2   | Stock Locate    | u16                               |
//! | 3      | 2   | Tracking Number | u16                               |
//! | 5      | 6   | Timestamp       | u48, ns since midnight            |
//! | 11     | 8   | Shares          | u64                               |
//! | 19     | 8   | Stock           | Alpha(8), space padded            |
//! | 27     | 4   | Cross Price     | Price(4): u32, 4 implied decimals |
//! | 31     | 8   | Match Number    | u64                               |
//! | 39     | 1   | Cross Type      | Alpha: `'O'`, `'C'`, `'H'`, `'I'` |

use super::{Price4, Stock};

message! {
    kind: b'Q', len: 40, name: "Cross Trade",
    fields: {
        /// Shares matched in the cross (may be 0).
        shares, set_shares, SHARES: u64 = 11..19, "Shares";
        /// Stock symbol.
        stock, set_stock, STOCK: Stock = 19..27, "Stock";
        /// The cross price.
        cross_price, set_cross_price, CROSS_PRICE: Price4 = 27..31, "Cross Price";
        /// The day-unique match number of the cross.
        match_number, set_match_number, MATCH_NUMBER: u64 = 31..39, "Match Number";
        /// `'O'` opening, `'C'` closing, `'H'` IPO or halted/paused, `'I'` intraday (unchecked).
        cross_type, set_cross_type, CROSS_TYPE: u8 = 39, "Cross Type";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // The AAPL opening cross: 100,000 shares at $123.4567.
    static PACKET_BYTES: [u8; 40] = [
        b'Q', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xa0, // shares 100_000
        b'A', b'A', b'P', b'L', b' ', b' ', b' ', b' ', // stock
        0x00, 0x12, 0xd6, 0x87, // cross price 1_234_567 = $123.4567
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // match number
        b'O', // cross type: opening
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            shares: 100_000,
            stock: Stock(*b"AAPL    "),
            cross_price: Price4(1_234_567),
            match_number: 0x1112_1314_1516_1718,
            cross_type: b'O',
        }
    }

    fixture_tests!(Message::CrossTrade, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'Q');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.shares(), 100_000);
        assert_eq!(packet.stock(), Stock(*b"AAPL    "));
        assert_eq!(packet.cross_price(), Price4(1_234_567));
        assert_eq!(packet.match_number(), 0x1112_1314_1516_1718);
        assert_eq!(packet.cross_type(), b'O');
    }
}
