//! ITCH 5.0 IPO Quoting Period Update message, type `'K'`, 28 bytes: the anticipated quotation
//! release time of an IPO.
//!
//! | Offset | Len | Field                           | Type                              |
//! |-------:|----:|---------------------------------|-----------------------------------|
//! | 0      | 1   | Message Type                    | `'K'`                             |
//! | 1      | 2   | Stock Locate                    | u16, always 0                     |
//! | 3      | 2   | Tracking Number                 | u16                               |
//! | 5      | 6   | Timestamp                       | u48, ns since midnight            |
//! | 11     | 8   | Stock                           | Alpha(8), space padded            |
//! | 19     | 4   | IPO Quotation Release Time      | u32, seconds since midnight       |
//! | 23     | 1   | IPO Quotation Release Qualifier | Alpha, `'A'` / `'C'`              |
//! | 24     | 4   | IPO Price                       | Price(4): u32, 4 implied decimals |

use super::{Price4, Stock};

message! {
    kind: b'K', len: 28, name: "IPO Quoting Period Update",
    fields: {
        /// Stock symbol.
        stock, set_stock, STOCK: Stock = 11..19, "Stock";
        /// Quotation release time, seconds since midnight (0 if canceled or postponed).
        release_time, set_release_time, RELEASE_TIME: u32 = 19..23, "IPO Quotation Release Time";
        /// `'A'` anticipated release time, `'C'` release canceled or postponed.
        release_qualifier, set_release_qualifier, RELEASE_QUALIFIER: u8 = 23,
            "IPO Quotation Release Qualifier";
        /// IPO price (0 if canceled or postponed).
        ipo_price, set_ipo_price, IPO_PRICE: Price4 = 24..28, "IPO Price";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // ZVZZT anticipated for release at 11:30:00 at $21.0000. Stock locate is always 0 on the
    // feed; 13 here so that a misplaced field shows.
    static PACKET_BYTES: [u8; 28] = [
        b'K', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        b'Z', b'V', b'Z', b'Z', b'T', b' ', b' ', b' ', // stock
        0x00, 0x00, 0xa1, 0xb8, // release time 41_400 s = 11:30:00
        b'A', // release qualifier: anticipated
        0x00, 0x03, 0x34, 0x50, // IPO price 210_000 = $21.0000
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            stock: Stock(*b"ZVZZT   "),
            release_time: 41_400,
            release_qualifier: b'A',
            ipo_price: Price4(210_000),
        }
    }

    fixture_tests!(Message::IpoQuotingPeriodUpdate, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'K');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.stock(), Stock(*b"ZVZZT   "));
        assert_eq!(packet.release_time(), 41_400);
        assert_eq!(packet.release_qualifier(), b'A');
        assert_eq!(packet.ipo_price(), Price4(210_000));
    }
}
