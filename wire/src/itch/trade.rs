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

use super::{Price4, Side, Stock, Timestamp};
use crate::{Error, Result, be};

/// Byte ranges of the Trade message, its type byte and length (shared with the XDP program).
pub use xdp_common::layout::itch::trade::{KIND, LEN, field};

/// A read/write view of a Trade message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors panic if it is shorter than
    /// [`LEN`].
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`Packet::check_len`], so that no accessor can panic.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds at least [`LEN`] bytes. (An exact length is [`super::parse`]'s
    /// business: a view may sit at the front of a larger buffer.)
    pub fn check_len(&self) -> Result<()> {
        let have = self.buffer.as_ref().len();
        if have < LEN {
            return Err(Error::Truncated { need: LEN, have });
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The message type byte.
    pub fn kind(&self) -> u8 {
        self.buffer.as_ref()[field::KIND]
    }

    /// Stock locate code.
    pub fn stock_locate(&self) -> u16 {
        be::u16(self.buffer.as_ref(), field::STOCK_LOCATE)
    }

    /// Tracking number.
    pub fn tracking_number(&self) -> u16 {
        be::u16(self.buffer.as_ref(), field::TRACKING_NUMBER)
    }

    /// Timestamp, nanoseconds since midnight (always below 2^48).
    pub fn timestamp(&self) -> u64 {
        be::u48(self.buffer.as_ref(), field::TIMESTAMP)
    }

    /// Order reference number.
    pub fn order_ref(&self) -> u64 {
        be::u64(self.buffer.as_ref(), field::ORDER_REF)
    }

    /// Buy/sell indicator byte, unchecked.
    pub fn side(&self) -> u8 {
        self.buffer.as_ref()[field::SIDE]
    }

    /// Shares.
    pub fn shares(&self) -> u32 {
        be::u32(self.buffer.as_ref(), field::SHARES)
    }

    /// Stock symbol.
    pub fn stock(&self) -> Stock {
        Stock(be::bytes(self.buffer.as_ref(), field::STOCK))
    }

    /// Price.
    pub fn price(&self) -> Price4 {
        Price4(be::u32(self.buffer.as_ref(), field::PRICE))
    }

    /// Match number.
    pub fn match_number(&self) -> u64 {
        be::u64(self.buffer.as_ref(), field::MATCH_NUMBER)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the message type byte.
    pub fn set_kind(&mut self, value: u8) {
        self.buffer.as_mut()[field::KIND] = value;
    }

    /// Sets the stock locate code.
    pub fn set_stock_locate(&mut self, value: u16) {
        be::set_u16(self.buffer.as_mut(), field::STOCK_LOCATE, value);
    }

    /// Sets the tracking number.
    pub fn set_tracking_number(&mut self, value: u16) {
        be::set_u16(self.buffer.as_mut(), field::TRACKING_NUMBER, value);
    }

    /// Sets the timestamp.
    pub fn set_timestamp(&mut self, value: Timestamp) {
        be::set_u48(self.buffer.as_mut(), field::TIMESTAMP, value.nanos());
    }

    /// Sets the order reference number.
    pub fn set_order_ref(&mut self, value: u64) {
        be::set_u64(self.buffer.as_mut(), field::ORDER_REF, value);
    }

    /// Sets the buy/sell indicator.
    pub fn set_side(&mut self, value: Side) {
        self.buffer.as_mut()[field::SIDE] = value.to_byte();
    }

    /// Sets the shares.
    pub fn set_shares(&mut self, value: u32) {
        be::set_u32(self.buffer.as_mut(), field::SHARES, value);
    }

    /// Sets the stock symbol.
    pub fn set_stock(&mut self, value: Stock) {
        be::set_bytes(self.buffer.as_mut(), field::STOCK, &value.0);
    }

    /// Sets the price.
    pub fn set_price(&mut self, value: Price4) {
        be::set_u32(self.buffer.as_mut(), field::PRICE, value.0);
    }

    /// Sets the match number.
    pub fn set_match_number(&mut self, value: u64) {
        be::set_u64(self.buffer.as_mut(), field::MATCH_NUMBER, value);
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A decoded Trade (non-cross) message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Stock locate code.
    pub stock_locate: u16,
    /// Tracking number.
    pub tracking_number: u16,
    /// Nanoseconds since midnight.
    pub timestamp: Timestamp,
    /// Order reference number.
    pub order_ref: u64,
    /// Side of the non-displayed order executed.
    pub side: Side,
    /// Shares executed.
    pub shares: u32,
    /// Stock symbol.
    pub stock: Stock,
    /// Execution price.
    pub price: Price4,
    /// Match number.
    pub match_number: u64,
}

impl Repr {
    /// Decodes a Trade message: [`Error::Truncated`] if shorter than [`LEN`],
    /// [`Error::WrongType`] if the type byte is not `'P'`, [`Error::BadSide`] for a side other
    /// than `'B'`/`'S'`.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.kind() != KIND {
            return Err(Error::WrongType {
                expected: KIND,
                got: packet.kind(),
            });
        }
        Ok(Repr {
            stock_locate: packet.stock_locate(),
            tracking_number: packet.tracking_number(),
            // Cannot fail: six bytes hold less than 2^48.
            timestamp: Timestamp::from_nanos(packet.timestamp())?,
            order_ref: packet.order_ref(),
            side: Side::from_byte(packet.side())?,
            shares: packet.shares(),
            stock: packet.stock(),
            price: packet.price(),
            match_number: packet.match_number(),
        })
    }

    /// The message length, [`LEN`].
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Writes the message into a view already checked to hold [`LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        let Repr {
            stock_locate,
            tracking_number,
            timestamp,
            order_ref,
            side,
            shares,
            stock,
            price,
            match_number,
        } = *self;
        packet.set_kind(KIND);
        packet.set_stock_locate(stock_locate);
        packet.set_tracking_number(tracking_number);
        packet.set_timestamp(timestamp);
        packet.set_order_ref(order_ref);
        packet.set_side(side);
        packet.set_shares(shares);
        packet.set_stock(stock);
        packet.set_price(price);
        packet.set_match_number(match_number);
    }

    /// Checks that `buf` is long enough and writes the message at its front; returns [`LEN`].
    pub fn emit_into(&self, buf: &mut [u8]) -> Result<usize> {
        let have = buf.len();
        let mut packet =
            Packet::new_checked(buf).map_err(|_| Error::NoSpace { need: LEN, have })?;
        self.emit(&mut packet);
        Ok(LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::{Message, parse};

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
