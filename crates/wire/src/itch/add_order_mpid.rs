//! ITCH 5.0 Add Order with MPID Attribution message, type `'F'`, 40 bytes: a new attributed
//! order or quote on the displayed book.
//!
//! | Offset | Len | Field                  | Type                              |
//! |-------:|----:|------------------------|-----------------------------------|
//! | 0      | 1   | Message Type           | `'F'`                             |
//! | 1      | 2   | Stock Locate           | u16                               |
//! | 3      | 2   | Tracking Number        | u16                               |
//! | 5      | 6   | Timestamp              | u48, ns since midnight            |
//! | 11     | 8   | Order Reference Number | u64                               |
//! | 19     | 1   | Buy/Sell Indicator     | `'B'` / `'S'`                     |
//! | 20     | 4   | Shares                 | u32                               |
//! | 24     | 8   | Stock                  | Alpha(8), space padded            |
//! | 32     | 4   | Price                  | Price(4): u32, 4 implied decimals |
//! | 36     | 4   | Attribution            | Alpha(4), the MPID                |

use super::{Price4, Side, Stock};

message! {
    kind: b'F', len: 40, name: "Add Order with MPID Attribution",
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
        /// The market participant the order is attributed to.
        attribution, set_attribution, ATTRIBUTION: [u8; 4] = 36..40, "Attribution";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::itch::{Message, Timestamp, parse};

    // GSCO buys 500 AAPL at $123.4500, order 0x1112131415161718.
    static PACKET_BYTES: [u8; 40] = [
        b'F', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // order ref
        b'B', // side
        0x00, 0x00, 0x01, 0xf4, // shares 500
        b'A', b'A', b'P', b'L', b' ', b' ', b' ', b' ', // stock
        0x00, 0x12, 0xd6, 0x44, // price 1_234_500 = $123.4500
        b'G', b'S', b'C', b'O', // attribution
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            order_ref: 0x1112_1314_1516_1718,
            side: Side::Buy,
            shares: 500,
            stock: Stock(*b"AAPL    "),
            price: Price4(1_234_500),
            attribution: *b"GSCO",
        }
    }

    fixture_tests!(Message::AddOrderMpid, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'F');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.order_ref(), 0x1112_1314_1516_1718);
        assert_eq!(packet.side(), b'B');
        assert_eq!(packet.shares(), 500);
        assert_eq!(packet.stock(), Stock(*b"AAPL    "));
        assert_eq!(packet.price(), Price4(1_234_500));
        assert_eq!(packet.attribution(), *b"GSCO");
    }

    #[test]
    fn test_bad_side() {
        let mut bytes = PACKET_BYTES;
        bytes[field::SIDE] = b'b';
        assert_eq!(parse(&bytes), Err(Error::BadSide(b'b')));
    }
}
