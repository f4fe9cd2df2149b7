//! ITCH 5.0 Net Order Imbalance Indicator (NOII) message, type `'I'`, 50 bytes: the indicative
//! clearing prices and imbalance before a cross.
//!
//! | Offset | Len | Field                     | Type                                   |
//! |-------:|----:|---------------------------|----------------------------------------|
//! | 0      | 1   | Message Type              | `'I'`                                  |
//! | 1      | 2   | Stock Locate              | u16                                    |
//! | 3      | 2   | Tracking Number           | u16                                    |
//! | 5      | 6   | Timestamp                 | u48, ns since midnight                 |
//! | 11     | 8   | Paired Shares             | u64                                    |
//! | 19     | 8   | Imbalance Shares          | u64                                    |
//! | 27     | 1   | Imbalance Direction       | Alpha: `'B'`, `'S'`, `'N'`, `'O'`, `'P'` |
//! | 28     | 8   | Stock                     | Alpha(8), space padded                 |
//! | 36     | 4   | Far Price                 | Price(4): u32, 4 implied decimals      |
//! | 40     | 4   | Near Price                | Price(4): u32, 4 implied decimals      |
//! | 44     | 4   | Current Reference Price   | Price(4): u32, 4 implied decimals      |
//! | 48     | 1   | Cross Type                | Alpha: `'O'`, `'C'`, `'H'`, `'A'`      |
//! | 49     | 1   | Price Variation Indicator | Alpha: `'L'`, `'1'`-`'9'`, `'A'`-`'C'`, `' '` |

use super::{Price4, Stock};

message! {
    kind: b'I', len: 50, name: "Net Order Imbalance Indicator (NOII)",
    fields: {
        /// Shares eligible to match at the current reference price.
        paired_shares, set_paired_shares, PAIRED_SHARES: u64 = 11..19, "Paired Shares";
        /// Shares not paired at the current reference price.
        imbalance_shares, set_imbalance_shares, IMBALANCE_SHARES: u64 = 19..27,
            "Imbalance Shares";
        /// `'B'` buy, `'S'` sell, `'N'` no imbalance, `'O'` insufficient orders, `'P'` paused.
        imbalance_direction, set_imbalance_direction, IMBALANCE_DIRECTION: u8 = 27,
            "Imbalance Direction";
        /// Stock symbol.
        stock, set_stock, STOCK: Stock = 28..36, "Stock";
        /// Hypothetical clearing price of the cross orders alone.
        far_price, set_far_price, FAR_PRICE: Price4 = 36..40, "Far Price";
        /// Hypothetical clearing price of cross and continuous orders.
        near_price, set_near_price, NEAR_PRICE: Price4 = 40..44, "Near Price";
        /// The price the paired and imbalance shares are counted at.
        current_reference_price, set_current_reference_price, CURRENT_REFERENCE_PRICE: Price4 =
            44..48, "Current Reference Price";
        /// `'O'` opening, `'C'` closing, `'H'` IPO or halted/paused, `'A'` extended trading close.
        cross_type, set_cross_type, CROSS_TYPE: u8 = 48, "Cross Type";
        /// How far the near price is from the current reference price (`'L'` under 1%, ...).
        price_variation_indicator, set_price_variation_indicator, PRICE_VARIATION_INDICATOR: u8 =
            49, "Price Variation Indicator";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // AAPL before the opening cross: 200,000 paired, 50,000 to buy, near $123.4567, far
    // $123.4500, reference $123.4600, deviation under 1%.
    static PACKET_BYTES: [u8; 50] = [
        b'I', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x0d, 0x40, // paired shares 200_000
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc3, 0x50, // imbalance shares 50_000
        b'B', // imbalance direction: buy
        b'A', b'A', b'P', b'L', b' ', b' ', b' ', b' ', // stock
        0x00, 0x12, 0xd6, 0x44, // far price 1_234_500 = $123.4500
        0x00, 0x12, 0xd6, 0x87, // near price 1_234_567 = $123.4567
        0x00, 0x12, 0xd6, 0xa8, // current reference price 1_234_600 = $123.4600
        b'O', // cross type: opening
        b'L', // price variation indicator: less than 1%
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            paired_shares: 200_000,
            imbalance_shares: 50_000,
            imbalance_direction: b'B',
            stock: Stock(*b"AAPL    "),
            far_price: Price4(1_234_500),
            near_price: Price4(1_234_567),
            current_reference_price: Price4(1_234_600),
            cross_type: b'O',
            price_variation_indicator: b'L',
        }
    }

    fixture_tests!(Message::Noii, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'I');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.paired_shares(), 200_000);
        assert_eq!(packet.imbalance_shares(), 50_000);
        assert_eq!(packet.imbalance_direction(), b'B');
        assert_eq!(packet.stock(), Stock(*b"AAPL    "));
        assert_eq!(packet.far_price(), Price4(1_234_500));
        assert_eq!(packet.near_price(), Price4(1_234_567));
        assert_eq!(packet.current_reference_price(), Price4(1_234_600));
        assert_eq!(packet.cross_type(), b'O');
        assert_eq!(packet.price_variation_indicator(), b'L');
    }
}
