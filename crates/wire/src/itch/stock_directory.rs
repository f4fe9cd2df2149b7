//! ITCH 5.0 Stock Directory message, type `'R'`, 39 bytes: one per active symbol at the start of
//! the day, assigning its stock locate code.
//!
//! | Offset | Len | Field                          | Type                                |
//! |-------:|----:|--------------------------------|-------------------------------------|
//! | 0      | 1   | Message Type                   | `'R'`                               |
//! | 1      | 2   | Stock Locate                   | u16                                 |
//! | 3      | 2   | Tracking Number                | u16                                 |
//! | 5      | 6   | Timestamp                      | u48, ns since midnight              |
//! | 11     | 8   | Stock                          | Alpha(8), space padded              |
//! | 19     | 1   | Market Category                | Alpha                               |
//! | 20     | 1   | Financial Status Indicator     | Alpha                               |
//! | 21     | 4   | Round Lot Size                 | u32                                 |
//! | 25     | 1   | Round Lots Only                | Alpha, `'Y'` / `'N'`                |
//! | 26     | 1   | Issue Classification           | Alpha                               |
//! | 27     | 2   | Issue Sub-Type                 | Alpha(2)                            |
//! | 29     | 1   | Authenticity                   | Alpha, `'P'` / `'T'`                |
//! | 30     | 1   | Short Sale Threshold Indicator | Alpha, `'Y'` / `'N'` / `' '`        |
//! | 31     | 1   | IPO Flag                       | Alpha, `'Y'` / `'N'` / `' '`        |
//! | 32     | 1   | LULD Reference Price Tier      | Alpha, `'1'` / `'2'` / `' '`        |
//! | 33     | 1   | ETP Flag                       | Alpha, `'Y'` / `'N'` / `' '`        |
//! | 34     | 4   | ETP Leverage Factor            | u32                                 |
//! | 38     | 1   | Inverse Indicator              | Alpha, `'Y'` / `'N'`                |

use super::Stock;

message! {
    kind: b'R', len: 39, name: "Stock Directory",
    fields: {
        /// Stock symbol.
        stock, set_stock, STOCK: Stock = 11..19, "Stock";
        /// Listing market or tier (`'Q'` Global Select, `'G'` Global, `'S'` Capital, `'N'`
        /// NYSE, ...).
        market_category, set_market_category, MARKET_CATEGORY: u8 = 19, "Market Category";
        /// Financial status of a Nasdaq-listed issuer (`'N'` normal, `'D'` deficient, ...).
        financial_status, set_financial_status, FINANCIAL_STATUS: u8 = 20,
            "Financial Status Indicator";
        /// Shares in a round lot.
        round_lot_size, set_round_lot_size, ROUND_LOT_SIZE: u32 = 21..25, "Round Lot Size";
        /// `'Y'` if Nasdaq accepts round lots only.
        round_lots_only, set_round_lots_only, ROUND_LOTS_ONLY: u8 = 25, "Round Lots Only";
        /// Security class (Appendix D of the spec).
        issue_classification, set_issue_classification, ISSUE_CLASSIFICATION: u8 = 26,
            "Issue Classification";
        /// Security sub-type (Appendix E of the spec).
        issue_subtype, set_issue_subtype, ISSUE_SUBTYPE: [u8; 2] = 27..29, "Issue Sub-Type";
        /// `'P'` live/production or `'T'` test.
        authenticity, set_authenticity, AUTHENTICITY: u8 = 29, "Authenticity";
        /// SEC Rule 203(b)(3) threshold indicator.
        short_sale_threshold, set_short_sale_threshold, SHORT_SALE_THRESHOLD: u8 = 30,
            "Short Sale Threshold Indicator";
        /// `'Y'` if set up for IPO release.
        ipo_flag, set_ipo_flag, IPO_FLAG: u8 = 31, "IPO Flag";
        /// LULD price band tier.
        luld_reference_price_tier, set_luld_reference_price_tier, LULD_REFERENCE_PRICE_TIER: u8 =
            32, "LULD Reference Price Tier";
        /// `'Y'` for an exchange traded product.
        etp_flag, set_etp_flag, ETP_FLAG: u8 = 33, "ETP Flag";
        /// The ETP's leverage relative to its index, rounded down to an integer.
        etp_leverage_factor, set_etp_leverage_factor, ETP_LEVERAGE_FACTOR: u32 = 34..38,
            "ETP Leverage Factor";
        /// `'Y'` for an inverse ETP.
        inverse_indicator, set_inverse_indicator, INVERSE_INDICATOR: u8 = 38, "Inverse Indicator";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // ZVZZT, Nasdaq's test symbol. Every one-byte field holds a different byte so that a swap
    // shows: the ETP flag and inverse indicator ('E', 'I') are not codes the spec defines for
    // them, which the decoder does not check.
    static PACKET_BYTES: [u8; 39] = [
        b'R', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        b'Z', b'V', b'Z', b'Z', b'T', b' ', b' ', b' ', // stock
        b'Q', // market category: Nasdaq Global Select
        b'D', // financial status: deficient
        0x00, 0x00, 0x00, 0x64, // round lot size 100
        b'Y', // round lots only
        b'C', // issue classification: common stock
        b'A', b'I', // issue sub-type
        b'T', // authenticity: test
        b'N', // short sale threshold: not restricted
        b' ', // IPO flag: not available
        b'1', // LULD reference price tier 1
        b'E', // ETP flag
        0x00, 0x00, 0x00, 0x03, // ETP leverage factor 3
        b'I', // inverse indicator
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            stock: Stock(*b"ZVZZT   "),
            market_category: b'Q',
            financial_status: b'D',
            round_lot_size: 100,
            round_lots_only: b'Y',
            issue_classification: b'C',
            issue_subtype: *b"AI",
            authenticity: b'T',
            short_sale_threshold: b'N',
            ipo_flag: b' ',
            luld_reference_price_tier: b'1',
            etp_flag: b'E',
            etp_leverage_factor: 3,
            inverse_indicator: b'I',
        }
    }

    fixture_tests!(Message::StockDirectory, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'R');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.stock(), Stock(*b"ZVZZT   "));
        assert_eq!(packet.market_category(), b'Q');
        assert_eq!(packet.financial_status(), b'D');
        assert_eq!(packet.round_lot_size(), 100);
        assert_eq!(packet.round_lots_only(), b'Y');
        assert_eq!(packet.issue_classification(), b'C');
        assert_eq!(packet.issue_subtype(), *b"AI");
        assert_eq!(packet.authenticity(), b'T');
        assert_eq!(packet.short_sale_threshold(), b'N');
        assert_eq!(packet.ipo_flag(), b' ');
        assert_eq!(packet.luld_reference_price_tier(), b'1');
        assert_eq!(packet.etp_flag(), b'E');
        assert_eq!(packet.etp_leverage_factor(), 3);
        assert_eq!(packet.inverse_indicator(), b'I');
    }
}
