//! ITCH 5.0 Direct Listing with Capital Raise Price Discovery (DLCR) message, type `'O'`, 48
//! bytes: sent once a second for a DLCR security once its volatility test has passed (added in
//! the spec's 2023-04-28 revision).
//!
//! | Offset | Len | Field                    | Type                              |
//! |-------:|----:|--------------------------|-----------------------------------|
//! | 0      | 1   | Message Type             | `'O'`                             |
//! | 1      | 2   | Stock Locate             | u16                               |
//! | 3      | 2   | Tracking Number          | u16                               |
//! | 5      | 6   | Timestamp                | u48, ns since midnight            |
//! | 11     | 8   | Stock                    | Alpha(8), space padded            |
//! | 19     | 1   | Open Eligibility Status  | Alpha, `'Y'` / `'N'`              |
//! | 20     | 4   | Minimum Allowable Price  | Price(4): u32, 4 implied decimals |
//! | 24     | 4   | Maximum Allowable Price  | Price(4): u32, 4 implied decimals |
//! | 28     | 4   | Near Execution Price     | Price(4): u32, 4 implied decimals |
//! | 32     | 8   | Near Execution Time      | u64                               |
//! | 40     | 4   | Lower Price Range Collar | Price(4): u32, 4 implied decimals |
//! | 44     | 4   | Upper Price Range Collar | Price(4): u32, 4 implied decimals |

use super::{Price4, Stock};

message! {
    kind: b'O', len: 48, name: "Direct Listing with Capital Raise Price Discovery (DLCR)",
    fields: {
        /// Stock symbol.
        stock, set_stock, STOCK: Stock = 11..19, "Stock";
        /// `'Y'` if eligible to be released for trading, `'N'` if not (kept raw).
        open_eligibility_status, set_open_eligibility_status, OPEN_ELIGIBILITY_STATUS: u8 = 19,
            "Open Eligibility Status";
        /// 20% below the registration statement's lowest price.
        minimum_allowable_price, set_minimum_allowable_price, MINIMUM_ALLOWABLE_PRICE: Price4 =
            20..24, "Minimum Allowable Price";
        /// 80% above the registration statement's highest price.
        maximum_allowable_price, set_maximum_allowable_price, MAXIMUM_ALLOWABLE_PRICE: Price4 =
            24..28, "Maximum Allowable Price";
        /// The reference price when the volatility test passed.
        near_execution_price, set_near_execution_price, NEAR_EXECUTION_PRICE: Price4 = 28..32,
            "Near Execution Price";
        /// When the near execution price was set (the spec says `Integer`, no unit).
        near_execution_time, set_near_execution_time, NEAR_EXECUTION_TIME: u64 = 32..40,
            "Near Execution Time";
        /// Lower auction collar, 10% below the near execution price.
        lower_price_range_collar, set_lower_price_range_collar, LOWER_PRICE_RANGE_COLLAR: Price4 =
            40..44, "Lower Price Range Collar";
        /// Upper auction collar, 10% above the near execution price.
        upper_price_range_collar, set_upper_price_range_collar, UPPER_PRICE_RANGE_COLLAR: Price4 =
            44..48, "Upper Price Range Collar";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // ZVZZT, registered at $10-$20: eligible, allowed $8.0000-$36.0000, near execution at
    // $20.0000 set at 09:30:00, collars $18.0000-$22.0000.
    static PACKET_BYTES: [u8; 48] = [
        b'O', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        b'Z', b'V', b'Z', b'Z', b'T', b' ', b' ', b' ', // stock
        b'Y', // open eligibility status
        0x00, 0x01, 0x38, 0x80, // minimum allowable price 80_000 = $8.0000
        0x00, 0x05, 0x7e, 0x40, // maximum allowable price 360_000 = $36.0000
        0x00, 0x03, 0x0d, 0x40, // near execution price 200_000 = $20.0000
        0x00, 0x00, 0x1f, 0x1a, 0xce, 0xd9, 0xf0, 0x00, // near execution time 34_200_000_000_000
        0x00, 0x02, 0xbf, 0x20, // lower price range collar 180_000 = $18.0000
        0x00, 0x03, 0x5b, 0x60, // upper price range collar 220_000 = $22.0000
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            stock: Stock(*b"ZVZZT   "),
            open_eligibility_status: b'Y',
            minimum_allowable_price: Price4(80_000),
            maximum_allowable_price: Price4(360_000),
            near_execution_price: Price4(200_000),
            near_execution_time: 34_200_000_000_000,
            lower_price_range_collar: Price4(180_000),
            upper_price_range_collar: Price4(220_000),
        }
    }

    fixture_tests!(Message::Dlcr, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'O');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.stock(), Stock(*b"ZVZZT   "));
        assert_eq!(packet.open_eligibility_status(), b'Y');
        assert_eq!(packet.minimum_allowable_price(), Price4(80_000));
        assert_eq!(packet.maximum_allowable_price(), Price4(360_000));
        assert_eq!(packet.near_execution_price(), Price4(200_000));
        assert_eq!(packet.near_execution_time(), 34_200_000_000_000);
        assert_eq!(packet.lower_price_range_collar(), Price4(180_000));
        assert_eq!(packet.upper_price_range_collar(), Price4(220_000));
    }
}
