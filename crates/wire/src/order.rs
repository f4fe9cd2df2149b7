//! The trader's order message: a compact, OUCH-style Enter Order, fixed 36 bytes, big-endian.
//!
//! | Offset | Len | Field    | Type / meaning                                                   |
//! |-------:|----:|----------|------------------------------------------------------------------|
//! | 0      | 1   | type     | `'O'` (Enter Order)                                              |
//! | 1      | 1   | side     | `'B'` / `'S'`                                                    |
//! | 2      | 2   | flags    | u16; bit 0 `REVERSE`: close the open opposite position first; other bits must be 0 |
//! | 4      | 4   | shares   | u32                                                              |
//! | 8      | 8   | token    | u64, the trader's order counter, from 1                          |
//! | 16     | 8   | tick_seq | u64, MoldUDP64 sequence number of the ITCH message that triggered the order |
//! | 24     | 4   | price    | u32 Price(4), the triggering tick's price                        |
//! | 28     | 8   | stock    | Alpha(8), space padded                                           |
//!
//! A UDP payload carries one or more orders back to back ([`orders`]).

pub use crate::itch::{Price4, Side, Stock};
use crate::{Error, Result, be};

/// Byte ranges of the order message, its type byte and length (shared with the XDP program,
/// whose reflector writes orders).
pub use xdp_common::layout::order::{KIND, LEN, field};
/// Flag bit 0: close an open opposite position before opening this one (a reversal).
pub const FLAG_REVERSE: u16 = 1 << 0;
/// Every flag bit this version defines.
pub const FLAGS_KNOWN: u16 = FLAG_REVERSE;

/// A read/write view of an order message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors panic if it is shorter than [`LEN`].
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`Packet::check_len`], so that no accessor can panic.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds at least [`LEN`] bytes.
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

    /// The side byte, unchecked.
    pub fn side(&self) -> u8 {
        self.buffer.as_ref()[field::SIDE]
    }

    /// The flags, unchecked.
    pub fn flags(&self) -> u16 {
        be::u16(self.buffer.as_ref(), field::FLAGS)
    }

    /// Shares.
    pub fn shares(&self) -> u32 {
        be::u32(self.buffer.as_ref(), field::SHARES)
    }

    /// Order token.
    pub fn token(&self) -> u64 {
        be::u64(self.buffer.as_ref(), field::TOKEN)
    }

    /// Sequence number of the triggering tick.
    pub fn tick_seq(&self) -> u64 {
        be::u64(self.buffer.as_ref(), field::TICK_SEQ)
    }

    /// Price of the triggering tick.
    pub fn price(&self) -> Price4 {
        Price4(be::u32(self.buffer.as_ref(), field::PRICE))
    }

    /// Stock symbol.
    pub fn stock(&self) -> Stock {
        Stock(be::bytes(self.buffer.as_ref(), field::STOCK))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the message type byte.
    pub fn set_kind(&mut self, value: u8) {
        self.buffer.as_mut()[field::KIND] = value;
    }

    /// Sets the side.
    pub fn set_side(&mut self, value: Side) {
        self.buffer.as_mut()[field::SIDE] = value.to_byte();
    }

    /// Sets the flags.
    pub fn set_flags(&mut self, value: u16) {
        be::set_u16(self.buffer.as_mut(), field::FLAGS, value);
    }

    /// Sets the shares.
    pub fn set_shares(&mut self, value: u32) {
        be::set_u32(self.buffer.as_mut(), field::SHARES, value);
    }

    /// Sets the order token.
    pub fn set_token(&mut self, value: u64) {
        be::set_u64(self.buffer.as_mut(), field::TOKEN, value);
    }

    /// Sets the triggering tick's sequence number.
    pub fn set_tick_seq(&mut self, value: u64) {
        be::set_u64(self.buffer.as_mut(), field::TICK_SEQ, value);
    }

    /// Sets the price.
    pub fn set_price(&mut self, value: Price4) {
        be::set_u32(self.buffer.as_mut(), field::PRICE, value.0);
    }

    /// Sets the stock symbol.
    pub fn set_stock(&mut self, value: Stock) {
        be::set_bytes(self.buffer.as_mut(), field::STOCK, &value.0);
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A decoded order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderRepr {
    /// Buy or sell.
    pub side: Side,
    /// Close an open opposite position first ([`FLAG_REVERSE`]).
    pub reverse: bool,
    /// Shares.
    pub shares: u32,
    /// The trader's order counter, from 1.
    pub token: u64,
    /// MoldUDP64 sequence number of the ITCH message that triggered the order.
    pub tick_seq: u64,
    /// The triggering tick's price.
    pub price: Price4,
    /// Stock symbol.
    pub stock: Stock,
}

/// smoltcp's name for it.
pub type Repr = OrderRepr;

impl OrderRepr {
    /// Decodes an order: [`Error::Truncated`] if shorter than [`LEN`], [`Error::UnknownType`] if
    /// the type byte is not `'O'`, [`Error::BadSide`], or [`Error::BadFlags`] for undefined flag
    /// bits.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<OrderRepr> {
        packet.check_len()?;
        if packet.kind() != KIND {
            return Err(Error::UnknownType(packet.kind()));
        }
        let side = Side::from_byte(packet.side())?;
        let flags = packet.flags();
        if flags & !FLAGS_KNOWN != 0 {
            return Err(Error::BadFlags(flags));
        }
        Ok(OrderRepr {
            side,
            reverse: flags & FLAG_REVERSE != 0,
            shares: packet.shares(),
            token: packet.token(),
            tick_seq: packet.tick_seq(),
            price: packet.price(),
            stock: packet.stock(),
        })
    }

    /// The message length, [`LEN`].
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Writes the order into a view already checked to hold [`LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        let OrderRepr {
            side,
            reverse,
            shares,
            token,
            tick_seq,
            price,
            stock,
        } = *self;
        packet.set_kind(KIND);
        packet.set_side(side);
        packet.set_flags(if reverse { FLAG_REVERSE } else { 0 });
        packet.set_shares(shares);
        packet.set_token(token);
        packet.set_tick_seq(tick_seq);
        packet.set_price(price);
        packet.set_stock(stock);
    }

    /// Checks that `buf` is long enough and writes the order at its front; returns [`LEN`].
    pub fn emit_into(&self, buf: &mut [u8]) -> Result<usize> {
        let have = buf.len();
        let mut packet =
            Packet::new_checked(buf).map_err(|_| Error::NoSpace { need: LEN, have })?;
        self.emit(&mut packet);
        Ok(LEN)
    }
}

/// Decodes the orders of a UDP payload, back to back.
///
/// Yields one item per 36-byte order (an `Err` for an order that does not decode, after which the
/// next order is still tried, since the framing is fixed) and, if the payload does not end on an
/// order boundary, a final [`Error::Truncated`] for the partial order. An empty payload yields
/// nothing.
pub fn orders(payload: &[u8]) -> Orders<'_> {
    Orders { rest: payload }
}

/// Iterator returned by [`orders`].
#[derive(Debug, Clone)]
pub struct Orders<'a> {
    rest: &'a [u8],
}

impl Iterator for Orders<'_> {
    type Item = Result<OrderRepr>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let Some((order, rest)) = self.rest.split_first_chunk::<LEN>() else {
            let have = self.rest.len();
            self.rest = &[];
            return Some(Err(Error::Truncated { need: LEN, have }));
        };
        self.rest = rest;
        Some(OrderRepr::parse(&Packet::new_unchecked(&order[..])))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.rest.len().div_ceil(LEN);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Orders<'_> {}
impl core::iter::FusedIterator for Orders<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    // Token 7: buy 100 AAPL at $123.4567, reversing, triggered by tick 1_000_001.
    static PACKET_BYTES: [u8; 36] = [
        b'O', // type
        b'B', // side
        0x00, 0x01, // flags: REVERSE
        0x00, 0x00, 0x00, 0x64, // shares 100
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, // token 7
        0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x42, 0x41, // tick_seq 1_000_001
        0x00, 0x12, 0xd6, 0x87, // price 1_234_567
        b'A', b'A', b'P', b'L', b' ', b' ', b' ', b' ', // stock
    ];

    fn packet_repr() -> OrderRepr {
        OrderRepr {
            side: Side::Buy,
            reverse: true,
            shares: 100,
            token: 7,
            tick_seq: 1_000_001,
            price: Price4(1_234_567),
            stock: Stock::new("AAPL").unwrap(),
        }
    }

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.kind(), b'O');
        assert_eq!(packet.side(), b'B');
        assert_eq!(packet.flags(), FLAG_REVERSE);
        assert_eq!(packet.shares(), 100);
        assert_eq!(packet.token(), 7);
        assert_eq!(packet.tick_seq(), 1_000_001);
        assert_eq!(packet.price(), Price4(1_234_567));
        assert_eq!(packet.stock(), Stock(*b"AAPL    "));
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0xa5u8; 36];
        let mut packet = Packet::new_unchecked(&mut bytes[..]);
        packet.set_kind(b'O');
        packet.set_side(Side::Buy);
        packet.set_flags(FLAG_REVERSE);
        packet.set_shares(100);
        packet.set_token(7);
        packet.set_tick_seq(1_000_001);
        packet.set_price(Price4(1_234_567));
        packet.set_stock(Stock::new("AAPL").unwrap());
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn test_parse() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(OrderRepr::parse(&packet), Ok(packet_repr()));
    }

    #[test]
    fn test_emit() {
        let mut bytes = [0xa5u8; 36];
        packet_repr().emit(&mut Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, PACKET_BYTES);
        assert_eq!(packet_repr().buffer_len(), 36);
        assert_eq!(
            packet_repr().emit_into(&mut [0u8; 35]),
            Err(Error::NoSpace { need: 36, have: 35 })
        );
    }

    #[test]
    fn test_truncated_at_every_length() {
        for len in 0..LEN {
            assert_eq!(
                Packet::new_checked(&PACKET_BYTES[..len]).err(),
                Some(Error::Truncated {
                    need: 36,
                    have: len
                })
            );
            let mut it = orders(&PACKET_BYTES[..len]);
            if len == 0 {
                assert_eq!(it.next(), None);
            } else {
                assert_eq!(
                    it.next(),
                    Some(Err(Error::Truncated {
                        need: 36,
                        have: len
                    }))
                );
                assert_eq!(it.next(), None);
            }
        }
    }

    #[test]
    fn test_bad_fields() {
        let parse = |b: &[u8]| OrderRepr::parse(&Packet::new_checked(b).unwrap());
        let mut bytes = PACKET_BYTES;
        bytes[0] = b'U';
        assert_eq!(parse(&bytes), Err(Error::UnknownType(b'U')));
        let mut bytes = PACKET_BYTES;
        bytes[1] = 0;
        assert_eq!(parse(&bytes), Err(Error::BadSide(0)));
        for bit in 1..16 {
            let mut bytes = PACKET_BYTES;
            bytes[2..4].copy_from_slice(&(1u16 << bit | 1).to_be_bytes());
            assert_eq!(parse(&bytes), Err(Error::BadFlags(1 << bit | 1)));
        }
        let mut bytes = PACKET_BYTES;
        bytes[3] = 0;
        assert_eq!(
            parse(&bytes),
            Ok(OrderRepr {
                reverse: false,
                ..packet_repr()
            })
        );
    }

    #[test]
    fn test_orders_back_to_back() {
        let second = OrderRepr {
            side: Side::Sell,
            reverse: false,
            token: 8,
            ..packet_repr()
        };
        let mut payload = [0u8; 36 * 3 + 5];
        packet_repr().emit_into(&mut payload[..36]).unwrap();
        second.emit_into(&mut payload[36..72]).unwrap();
        payload[72..108].copy_from_slice(&PACKET_BYTES);
        payload[72] = b'X';
        let mut it = orders(&payload);
        assert_eq!(it.len(), 4);
        assert_eq!(it.next(), Some(Ok(packet_repr())));
        assert_eq!(it.next(), Some(Ok(second)));
        assert_eq!(it.next(), Some(Err(Error::UnknownType(b'X'))));
        assert_eq!(it.next(), Some(Err(Error::Truncated { need: 36, have: 5 })));
        assert_eq!(it.next(), None);
        assert_eq!(
            orders(&payload[..72]).collect::<Vec<_>>(),
            [Ok(packet_repr()), Ok(second)]
        );
    }
}
