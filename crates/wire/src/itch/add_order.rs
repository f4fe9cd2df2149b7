//! ITCH 5.0 Add Order (no MPID attribution) message, type `'A'`, 36 bytes: a new order on the
//! displayed book.
//!
//! | Offset | Len | Field                  | Type                              |
//! |-------:|----:|------------------------|-----------------------------------|
//! | 0      | 1   | Message Type           | `'A'`                             |
//! | 1      | 2   | Stock Locate           | u16                               |
//! | 3      | 2   | Tracking Number        | u16                               |
//! | 5      | 6   | Timestamp              | u48, ns since midnight            |
//! | 11     | 8   | Order Reference Number | u64                               |
//! | 19     | 1   | Buy/Sell Indicator     | `'B'` / `'S'`                     |
//! | 20     | 4   | Shares                 | u32                               |
//! | 24     | 8   | Stock                  | Alpha(8), space padded            |
//! | 32     | 4   | Price                  | Price(4): u32, 4 implied decimals |

use super::{Price4, Side, Stock};

message! {
    kind: b'A', len: 36, name: "Add Order (no MPID attribution)",
    fields: {
        /// The day-unique reference number of the new order.
        order_ref, set_order_ref, ORDER_REF: u64 = 11..19, "Order Reference Number";
        /// Side of the order.
        side, set_side, SIDE: Side = 19, "Buy/Sell Indicator";
        /// Shares of the order.
        shares, set_shares, SHARES: u32 = 20..24, "Shares";
        /// Stock symbol.
        stock, set_stock, STOCK: Stock = 24..32, "Stock";
        /// Display price.
        price, set_price, PRICE: Price4 = 32..36, "Price";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::itch::{Message, Timestamp, parse};

    // A sell of 300 AAPL at $123.4567, order 0x0102030405060708, at 09:30:00.123456789.
    static PACKET_BYTES: [u8; 36] = [
        b'A', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // order ref
        b'S', // side
        0x00, 0x00, 0x01, 0x2c, // shares 300
        b'A', b'A', b'P', b'L', b' ', b' ', b' ', b' ', // stock
        0x00, 0x12, 0xd6, 0x87, // price 1_234_567 = $123.4567
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            order_ref: 0x0102_0304_0506_0708,
            side: Side::Sell,
            shares: 300,
            stock: Stock(*b"AAPL    "),
            price: Price4(1_234_567),
        }
    }

    fixture_tests!(Message::AddOrder, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'A');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.order_ref(), 0x0102_0304_0506_0708);
        assert_eq!(packet.side(), b'S');
        assert_eq!(packet.shares(), 300);
        assert_eq!(packet.stock(), Stock(*b"AAPL    "));
        assert_eq!(packet.price(), Price4(1_234_567));
    }

    #[test]
    fn test_bad_side() {
        let mut bytes = PACKET_BYTES;
        bytes[field::SIDE] = b'X';
        assert_eq!(parse(&bytes), Err(Error::BadSide(b'X')));
    }
}
