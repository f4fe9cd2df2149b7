//! ITCH 5.0 Market Participant Position message, type `'L'`, 26 bytes: a market participant's
//! status in one issue.
//!
//! | Offset | Len | Field                    | Type                                        |
//! |-------:|----:|--------------------------|---------------------------------------------|
//! | 0      | 1   | Message Type             | `'L'`                                       |
//! | 1      | 2   | Stock Locate             | u16                                         |
//! | 3      | 2   | Tracking Number          | u16                                         |
//! | 5      | 6   | Timestamp                | u48, ns since midnight                      |
//! | 11     | 4   | MPID                     | Alpha(4)                                    |
//! | 15     | 8   | Stock                    | Alpha(8), space padded                      |
//! | 23     | 1   | Primary Market Maker     | Alpha, `'Y'` / `'N'`                        |
//! | 24     | 1   | Market Maker Mode        | Alpha: `'N'`, `'P'`, `'S'`, `'R'`, `'L'`    |
//! | 25     | 1   | Market Participant State | Alpha: `'A'`, `'E'`, `'W'`, `'S'`, `'D'`    |

use super::Stock;

message! {
    kind: b'L', len: 26, name: "Market Participant Position",
    fields: {
        /// The market participant's identifier.
        mpid, set_mpid, MPID: [u8; 4] = 11..15, "MPID";
        /// Stock symbol.
        stock, set_stock, STOCK: Stock = 15..23, "Stock";
        /// `'Y'` for a primary market maker.
        primary_market_maker, set_primary_market_maker, PRIMARY_MARKET_MAKER: u8 = 23,
            "Primary Market Maker";
        /// `'N'` normal, `'P'` passive, `'S'` syndicate, `'R'` pre-syndicate, `'L'` penalty.
        market_maker_mode, set_market_maker_mode, MARKET_MAKER_MODE: u8 = 24, "Market Maker Mode";
        /// `'A'` active, `'E'` excused, `'W'` withdrawn, `'S'` suspended, `'D'` deleted.
        market_participant_state, set_market_participant_state, MARKET_PARTICIPANT_STATE: u8 =
            25, "Market Participant State";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp};

    // GSCO, primary market maker in ZVZZT, in passive mode, active.
    static PACKET_BYTES: [u8; 26] = [
        b'L', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        b'G', b'S', b'C', b'O', // MPID
        b'Z', b'V', b'Z', b'Z', b'T', b' ', b' ', b' ', // stock
        b'Y', // primary market maker
        b'P', // market maker mode: passive
        b'A', // market participant state: active
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            mpid: *b"GSCO",
            stock: Stock(*b"ZVZZT   "),
            primary_market_maker: b'Y',
            market_maker_mode: b'P',
            market_participant_state: b'A',
        }
    }

    fixture_tests!(Message::MarketParticipantPosition, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'L');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.mpid(), *b"GSCO");
        assert_eq!(packet.stock(), Stock(*b"ZVZZT   "));
        assert_eq!(packet.primary_market_maker(), b'Y');
        assert_eq!(packet.market_maker_mode(), b'P');
        assert_eq!(packet.market_participant_state(), b'A');
    }
}
