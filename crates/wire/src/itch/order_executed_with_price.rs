//! ITCH 5.0 Order Executed With Price message, type `'C'`, 36 bytes: a displayed order executed
//! at a price other than its display price.
//!
//! | Offset | Len | Field                  | Type                              |
//! |-------:|----:|------------------------|-----------------------------------|
//! | 0      | 1   | Message Type           | `'C'`                             |
//! | 1      | 2   | Stock Locate           | u16                               |
//! | 3      | 2   | Tracking Number        | u16                               |
//! | 5      | 6   | Timestamp              | u48, ns since midnight            |
//! | 11     | 8   | Order Reference Number | u64                               |
//! | 19     | 4   | Executed Shares        | u32                               |
//! | 23     | 8   | Match Number           | u64                               |
//! | 31     | 1   | Printable              | Alpha, `'Y'` / `'N'`              |
//! | 32     | 4   | Execution Price        | Price(4): u32, 4 implied decimals |

use super::Price4;

message! {
    kind: b'C', len: 36, name: "Order Executed With Price",
    fields: {
        /// The order executed.
        order_ref, set_order_ref, ORDER_REF: u64 = 11..19, "Order Reference Number";
        /// Shares executed.
        executed_shares, set_executed_shares, EXECUTED_SHARES: u32 = 19..23, "Executed Shares";
        /// The day-unique match number of the execution.
        match_number, set_match_number, MATCH_NUMBER: u64 = 23..31, "Match Number";
        /// Whether the execution belongs on time-and-sales and in volume (`'Y'`); a
        /// non-printable one (`'N'`) is counted in a later bulk print, such as a cross's.
        printable, set_printable, PRINTABLE: bool = 31, "Printable";
        /// Execution price.
        price, set_price, PRICE: Price4 = 32..36, "Execution Price";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::itch::{Message, Timestamp, parse};

    // 100 shares of order 0x0102030405060708 executed at $123.4567, printable.
    static PACKET_BYTES: [u8; 36] = [
        b'C', // type
        0x00, 0x0d, // stock locate 13
        0x00, 0x02, // tracking number 2
        0x1f, 0x1a, 0xd6, 0x35, 0xbd, 0x15, // timestamp 34_200_123_456_789 ns
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // order ref
        0x00, 0x00, 0x00, 0x64, // executed shares 100
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // match number
        b'Y', // printable
        0x00, 0x12, 0xd6, 0x87, // execution price 1_234_567 = $123.4567
    ];

    fn packet_repr() -> Repr {
        Repr {
            stock_locate: 13,
            tracking_number: 2,
            timestamp: Timestamp::from_nanos(34_200_123_456_789).unwrap(),
            order_ref: 0x0102_0304_0506_0708,
            executed_shares: 100,
            match_number: 0x1112_1314_1516_1718,
            printable: true,
            price: Price4(1_234_567),
        }
    }

    fixture_tests!(Message::OrderExecutedWithPrice, PACKET_BYTES, packet_repr());

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'C');
        assert_eq!(packet.stock_locate(), 13);
        assert_eq!(packet.tracking_number(), 2);
        assert_eq!(packet.timestamp(), 34_200_123_456_789);
        assert_eq!(packet.order_ref(), 0x0102_0304_0506_0708);
        assert_eq!(packet.executed_shares(), 100);
        assert_eq!(packet.match_number(), 0x1112_1314_1516_1718);
        assert_eq!(packet.printable(), b'Y');
        assert_eq!(packet.price(), Price4(1_234_567));
    }

    #[test]
    fn test_printable() {
        let mut bytes = PACKET_BYTES;
        bytes[field::PRINTABLE] = b'N';
        let not_printable = Repr {
            printable: false,
            ..packet_repr()
        };
        assert_eq!(
            parse(&bytes),
            Ok(Message::OrderExecutedWithPrice(not_printable))
        );
        let mut emitted = [0u8; LEN];
        not_printable.emit_into(&mut emitted).unwrap();
        assert_eq!(emitted, bytes);
        for byte in [b'y', b'n', b' ', 0] {
            bytes[field::PRINTABLE] = byte;
            assert_eq!(
                parse(&bytes),
                Err(Error::BadField {
                    field: "printable",
                    byte
                })
            );
        }
    }
}
