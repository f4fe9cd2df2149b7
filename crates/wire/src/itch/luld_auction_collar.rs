//! ITCH 5.0 Limit Up-Limit Down (LULD) Auction Collar message, type `'J'`, 35 bytes: the
//! collars within which a paused symbol can reopen.
//!
//! | Offset | Len | Field                          | Type                              |
//! |-------:|----:|--------------------------------|-----------------------------------|
//! | 0      | 1   | Message Type                   | `'J'`                             |
//! | 1      | 2   | Stock Locate                   | u16                               |
//! | 3      | 2   | Tracking Number                | u16                               |
//! | 5      | 6   | Timestamp                      | u48, ns since midnight            |
//! | 11     | 8   | Stock                          | Alpha(8), space padded            |
//! | 19     | 4   | Auction Collar Reference Price | Price(4): u32, 4 implied decimals |
//! | 23     | 4   | Upper Auction Collar Price     | Price(4): u32, 4 implied decimals |
//! | 27     | 4   | Lower Auction Collar Price     | Price(4): u32, 4 implied decimals |
//! | 31     | 4   | Auction Collar Extension       | u32                               |

use super::{Price4, Stock};

message! {
    kind: b'J', len: 35, name: "LULD Auction Collar",
    fields: {
        /// Stock symbol.
        stock, set_stock, STOCK: Stock = 11..19, "Stock";
        /// Reference price the collars are set from.
        reference_price, set_reference_price, REFERENCE_PRICE: Price4 = 19..23,
            "Auction Collar Reference Price";
        /// Upper auction collar.
        upper_price, set_upper_price, UPPER_PRICE: Price4 = 23..27, "Upper Auction Collar Price";
        /// Lower auction collar.
        lower_price, set_lower_price, LOWER_PRICE: Price4 = 27..31, "Lower Auction Collar Price";
        /// Number of extensions of the reopening auction.
        extension, set_extension, EXTENSION: u32 = 31..35, "Auction Collar Extension";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // ZVZZT collared at $95.0000-$105.0000 around $100.0000, second extension.
    static PACKET_BYTES: [u8; 35] = [
        b'J', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        b'Z', b'V', b'Z', b'Z', b'T', b' ', b' ', b' ', // stock
        0x00, 0x0f, 0x42, 0x40, // reference price 1_000_000 = $100.0000
        0x00, 0x10, 0x05, 0x90, // upper collar 1_050_000 = $105.0000
        0x00, 0x0e, 0x7e, 0xf0, // lower collar 950_000 = $95.0000
        0x00, 0x00, 0x00, 0x02, // extension 2
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            stock: Stock(*b"ZVZZT   "),
            reference_price: Price4(1_000_000),
            upper_price: Price4(1_050_000),
            lower_price: Price4(950_000),
            extension: 2,
        }
    }

    fixture_tests!(Message::LuldAuctionCollar, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'J');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.stock(), Stock(*b"ZVZZT   "));
        assert_eq!(packet.reference_price(), Price4(1_000_000));
        assert_eq!(packet.upper_price(), Price4(1_050_000));
        assert_eq!(packet.lower_price(), Price4(950_000));
        assert_eq!(packet.extension(), 2);
    }
}
