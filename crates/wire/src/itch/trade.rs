//! ITCH 5.0 Trade (non-cross) message, type `'P'`, 44 bytes.
//!
//! | Offset | Len | Field                  | Type                                  |
//! |-------:|----:|------------------------|---------------------------------------|
//! | 0      | 1   | Message Type           | `'P'`                                 |
//! | 1      | 2   | Stock Locate           | u16                                   |
//! | 3      | 2   | Tracking Number        | u16                                   |
//! | 5      | 6   | Timestamp              | u48, ns since midnight                |
//! | 11     | 8   | Order Reference Number | u64                                   |
//! | 19     | 1   | Buy/Sell Indicator     | `'B'` / `'S'`                         |
//! | 20     | 4   | Shares                 | u32                                   |
//! | 24     | 8   | Stock                  | Alpha(8), space padded                |
//! | 32     | 4   | Price                  | Price(4): u32, 4 implied decimals     |
//! | 36     | 8   | Match Number           | u64                                   |

use super::{Price4, Side, Stock};

message! {
    kind: b'P', len: 44, name: "Trade (non-cross)",
    layout: xdp_common::layout::itch::trade,
    fields: {
        /// Order reference number (NASDAQ has sent zero here since 2010).
        order_ref, set_order_ref, ORDER_REF: u64 = 11..19, "Order Reference Number";
        /// Side of the non-displayed order executed.
        side, set_side, SIDE: Side = 19, "Buy/Sell Indicator";
        /// Shares executed.
        shares, set_shares, SHARES: u32 = 20..24, "Shares";
        /// Stock symbol.
        stock, set_stock, STOCK: Stock = 24..32, "Stock";
        /// Execution price.
        price, set_price, PRICE: Price4 = 32..36, "Price";
        /// Match number.
        match_number, set_match_number, MATCH_NUMBER: u64 = 36..44, "Match Number";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, Timestamp, parse};
    use crate::Error;

    // A buy of 100 AAPL at $123.4567 at 09:30:00.123456789.
    static PACKET_BYTES: [u8; 44] = [
        b'P', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x39, // order ref 12345
        b'B', // side
        0x00, 0x00, 0x00, 0x64, // shares 100
        b'A', b'A', b'P', b'L', b' ', b' ', b' ', b' ', // stock
        0x00, 0x12, 0xd6, 0x87, // price 1_234_567 = $123.4567
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // match number
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            order_ref: 12345,
            side: Side::Buy,
            shares: 100,
            stock: Stock::new("AAPL").unwrap(),
            price: Price4(1_234_567),
            match_number: 0x0102_0304_0506_0708,
        }
    }

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'P');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.order_ref(), 12345);
        assert_eq!(packet.side(), b'B');
        assert_eq!(packet.shares(), 100);
        assert_eq!(packet.stock(), Stock(*b"AAPL    "));
        assert_eq!(packet.price(), Price4(1_234_567));
        assert_eq!(packet.price().to_f64(), 123.4567);
        assert_eq!(packet.match_number(), 0x0102_0304_0506_0708);
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0xa5u8; 44];
        let mut packet = Packet::new_unchecked(&mut bytes[..]);
        packet.set_kind(b'P');
        packet.set_stock_locate(13);
        packet.set_tracking_number(2);
        packet.set_timestamp(Timestamp::from_nanos(34_200_123_456_789).unwrap());
        packet.set_order_ref(12345);
        packet.set_side(Side::Buy);
        packet.set_shares(100);
        packet.set_stock(Stock::new("AAPL").unwrap());
        packet.set_price(Price4(1_234_567));
        packet.set_match_number(0x0102_0304_0506_0708);
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn test_parse() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&packet), Ok(packet_repr()));
        assert_eq!(parse(&PACKET_BYTES), Ok(Message::Trade(packet_repr())));
    }

    #[test]
    fn test_emit() {
        let repr = packet_repr();
        let mut bytes = [0xa5u8; 44];
        assert_eq!(repr.buffer_len(), 44);
        repr.emit(&mut Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, PACKET_BYTES);
        let mut bytes = [0u8; 50];
        assert_eq!(repr.emit_into(&mut bytes), Ok(44));
        assert_eq!(bytes[..44], PACKET_BYTES);
        assert_eq!(
            repr.emit_into(&mut [0u8; 43]),
            Err(Error::NoSpace { need: 44, have: 43 })
        );
    }

    #[test]
    fn test_truncated_at_every_length() {
        for len in 0..LEN {
            let short = &PACKET_BYTES[..len];
            assert_eq!(
                Packet::new_checked(short).err(),
                Some(Error::Truncated {
                    need: LEN,
                    have: len
                })
            );
            let expected = if len == 0 {
                Error::Truncated { need: 1, have: 0 }
            } else {
                Error::BadLength {
                    kind: b'P',
                    expected: 44,
                    got: len,
                }
            };
            assert_eq!(parse(short), Err(expected));
        }
    }

    #[test]
    fn test_too_long() {
        let mut long = [0u8; 45];
        long[..44].copy_from_slice(&PACKET_BYTES);
        assert_eq!(
            parse(&long),
            Err(Error::BadLength {
                kind: b'P',
                expected: 44,
                got: 45
            })
        );
        // The view itself accepts a longer buffer, as smoltcp's do.
        assert_eq!(
            Repr::parse(&Packet::new_checked(&long[..]).unwrap()),
            Ok(packet_repr())
        );
    }

    #[test]
    fn test_bad_side_and_type() {
        let mut bytes = PACKET_BYTES;
        bytes[field::SIDE] = b'X';
        assert_eq!(parse(&bytes), Err(Error::BadSide(b'X')));
        let mut bytes = PACKET_BYTES;
        bytes[0] = b'Q';
        assert_eq!(
            Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()),
            Err(Error::WrongType {
                expected: b'P',
                got: b'Q'
            })
        );
        // A 44-byte 'Q' is a bad length for a Cross Trade (40).
        assert_eq!(
            parse(&bytes),
            Err(Error::BadLength {
                kind: b'Q',
                expected: 40,
                got: 44
            })
        );
    }

    #[test]
    fn test_sell_and_max_values() {
        let repr = Repr {
            stock_locate: u16::MAX,
            tracking_number: u16::MAX,
            timestamp: Timestamp::MAX,
            order_ref: u64::MAX,
            side: Side::Sell,
            shares: u32::MAX,
            stock: Stock(*b"ZZZZZZZZ"),
            price: Price4::MAX,
            match_number: u64::MAX,
        };
        let mut bytes = [0u8; 44];
        repr.emit_into(&mut bytes).unwrap();
        assert_eq!(bytes[field::SIDE], b'S');
        assert_eq!(parse(&bytes), Ok(Message::Trade(repr)));
    }
}
