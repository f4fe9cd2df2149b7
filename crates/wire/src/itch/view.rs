//! The one macro behind every ITCH 5.0 message's view and `Repr`: [`message!`] turns a field
//! table (name, setter, constant, type, byte offset or range, the spec's field name) into the
//! smoltcp-style `Packet<T>` view, its `field` constants, `KIND` and `LEN`, and a typed `Repr`
//! with `parse`/`emit`/`emit_into`/`buffer_len`, exactly the shape `trade` had by hand.
//!
//! What a field's type means on the wire is said once, by its [`Codec`] impl: its width, what
//! the view's getter returns (the raw byte for `Side` and `bool`, which `Repr::parse` checks)
//! and how `Repr` decodes and encodes it. A layout that does not start at the end of the common
//! header, has a gap or an overlap, gives a field a width its type does not have, or does not end
//! at `LEN`, fails to compile (the `const` assertion in every expansion).

use super::{Price4, Side, Stock};
use crate::{Error, Field, Result, be};

/// Bytes before the first message-specific field: type (1), stock locate (2), tracking number
/// (2), timestamp (6).
pub(super) const HEADER_LEN: usize = 11;

/// How a field's type sits in its bytes.
pub(super) trait Codec: Copy {
    /// Where the field is: a `usize` offset for one-byte fields, a [`Field`] range otherwise
    /// (smoltcp's convention, and `xdp_common::layout`'s).
    type At;
    /// What the view's getter returns: the wire value, unchecked.
    type Raw;
    /// Bytes on the wire.
    const WIDTH: usize;
    /// Reads the raw value.
    fn get(data: &[u8], at: Self::At) -> Self::Raw;
    /// Checks a raw value; `field` names it in [`Error::BadField`].
    fn decode(raw: Self::Raw, field: &'static str) -> Result<Self>;
    /// Writes the value.
    fn set(self, data: &mut [u8], at: Self::At);
}

/// A one-byte code, kept as it is (not validated: ITCH adds codes over time).
impl Codec for u8 {
    type At = usize;
    type Raw = u8;
    const WIDTH: usize = 1;
    #[inline]
    fn get(data: &[u8], at: usize) -> u8 {
        data[at]
    }
    #[inline]
    fn decode(raw: u8, _: &'static str) -> Result<u8> {
        Ok(raw)
    }
    #[inline]
    fn set(self, data: &mut [u8], at: usize) {
        data[at] = self;
    }
}

/// ITCH `Integer` of 4 bytes.
impl Codec for u32 {
    type At = Field;
    type Raw = u32;
    const WIDTH: usize = 4;
    #[inline]
    fn get(data: &[u8], at: Field) -> u32 {
        be::u32(data, at)
    }
    #[inline]
    fn decode(raw: u32, _: &'static str) -> Result<u32> {
        Ok(raw)
    }
    #[inline]
    fn set(self, data: &mut [u8], at: Field) {
        be::set_u32(data, at, self);
    }
}

/// ITCH `Integer` of 8 bytes (and `Price(8)`, kept raw).
impl Codec for u64 {
    type At = Field;
    type Raw = u64;
    const WIDTH: usize = 8;
    #[inline]
    fn get(data: &[u8], at: Field) -> u64 {
        be::u64(data, at)
    }
    #[inline]
    fn decode(raw: u64, _: &'static str) -> Result<u64> {
        Ok(raw)
    }
    #[inline]
    fn set(self, data: &mut [u8], at: Field) {
        be::set_u64(data, at, self);
    }
}

/// ITCH `Price(4)`.
impl Codec for Price4 {
    type At = Field;
    type Raw = Price4;
    const WIDTH: usize = 4;
    #[inline]
    fn get(data: &[u8], at: Field) -> Price4 {
        Price4(be::u32(data, at))
    }
    #[inline]
    fn decode(raw: Price4, _: &'static str) -> Result<Price4> {
        Ok(raw)
    }
    #[inline]
    fn set(self, data: &mut [u8], at: Field) {
        be::set_u32(data, at, self.0);
    }
}

/// ITCH `Alpha(8)` stock symbol, bytes kept as they are.
impl Codec for Stock {
    type At = Field;
    type Raw = Stock;
    const WIDTH: usize = 8;
    #[inline]
    fn get(data: &[u8], at: Field) -> Stock {
        Stock(be::bytes(data, at))
    }
    #[inline]
    fn decode(raw: Stock, _: &'static str) -> Result<Stock> {
        Ok(raw)
    }
    #[inline]
    fn set(self, data: &mut [u8], at: Field) {
        be::set_bytes(data, at, &self.0);
    }
}

/// ITCH `Alpha(N)` other than a stock (MPIDs, reason codes, issue sub-types), kept as they are.
impl<const N: usize> Codec for [u8; N] {
    type At = Field;
    type Raw = [u8; N];
    const WIDTH: usize = N;
    #[inline]
    fn get(data: &[u8], at: Field) -> [u8; N] {
        be::bytes(data, at)
    }
    #[inline]
    fn decode(raw: [u8; N], _: &'static str) -> Result<[u8; N]> {
        Ok(raw)
    }
    #[inline]
    fn set(self, data: &mut [u8], at: Field) {
        be::set_bytes(data, at, &self);
    }
}

/// Buy/Sell Indicator: `'B'` or `'S'`, anything else [`Error::BadSide`].
impl Codec for Side {
    type At = usize;
    type Raw = u8;
    const WIDTH: usize = 1;
    #[inline]
    fn get(data: &[u8], at: usize) -> u8 {
        data[at]
    }
    #[inline]
    fn decode(raw: u8, _: &'static str) -> Result<Side> {
        Side::from_byte(raw)
    }
    #[inline]
    fn set(self, data: &mut [u8], at: usize) {
        data[at] = self.to_byte();
    }
}

/// A `'Y'`/`'N'` flag (the Printable field); anything else is [`Error::BadField`].
impl Codec for bool {
    type At = usize;
    type Raw = u8;
    const WIDTH: usize = 1;
    #[inline]
    fn get(data: &[u8], at: usize) -> u8 {
        data[at]
    }
    #[inline]
    fn decode(raw: u8, field: &'static str) -> Result<bool> {
        match raw {
            b'Y' => Ok(true),
            b'N' => Ok(false),
            byte => Err(Error::BadField { field, byte }),
        }
    }
    #[inline]
    fn set(self, data: &mut [u8], at: usize) {
        data[at] = if self { b'Y' } else { b'N' };
    }
}

/// Whether fields given as `((start, end), width)` follow the header and each other without a
/// gap or an overlap, each as wide as its type, and end at `len`.
pub(super) const fn layout_is_packed(fields: &[((usize, usize), usize)], len: usize) -> bool {
    let mut at = HEADER_LEN;
    let mut i = 0;
    while i < fields.len() {
        let ((start, end), width) = fields[i];
        if start != at || end < start || end - start != width {
            return false;
        }
        at = end;
        i += 1;
    }
    at == len
}

/// Generates one ITCH message's `field` module, `KIND`, `LEN`, `Packet` view and `Repr` from its
/// field table. Each message module invokes it once; see `add_order.rs` for the input shape:
///
/// ```text
/// message! {
///     kind: b'A', len: 36, name: "Add Order (no MPID attribution)",
///     fields: {
///         /// Doc of the Repr field.
///         order_ref, set_order_ref, ORDER_REF: u64 = 11..19, "Order Reference Number";
///         side, set_side, SIDE: Side = 19, "Buy/Sell Indicator";
///     }
/// }
/// ```
///
/// A one-byte field is written as its offset, a wider one as its range. `layout: path,` after
/// `name` takes `KIND`, `LEN` and `field` from that module instead of generating them (the Trade
/// message, whose layout the XDP program shares) and checks at compile time that they agree with
/// the table.
macro_rules! message {
    (
        kind: $kind:literal, len: $len:literal, name: $name:literal,
        $(layout: $layout:path,)?
        fields: {
            $(
                $(#[doc = $doc:literal])*
                $get:ident, $set:ident, $field:ident: $ty:tt = $start:literal $(.. $end:literal)?,
                $label:literal;
            )*
        }
    ) => {
        message!(@layout [$($layout)?] $kind, $len, $name; $($field $label [$start $(, $end)?])*);

        // The layout is the table: packed after the header, every field its type's width, ending
        // at LEN; and `field`'s constants (generated or shared) are the table's offsets.
        const _: () = {
            assert!(KIND == $kind && LEN == $len);
            assert!(field::KIND == 0);
            assert!(field::STOCK_LOCATE.start == 1 && field::STOCK_LOCATE.end == 3);
            assert!(field::TRACKING_NUMBER.start == 3 && field::TRACKING_NUMBER.end == 5);
            assert!(field::TIMESTAMP.start == 5 && field::TIMESTAMP.end == 11);
            $(assert!(message!(@same field::$field, $start $(, $end)?));)*
            assert!($crate::itch::view::layout_is_packed(
                &[$((
                    message!(@span $start $(, $end)?),
                    <$ty as $crate::itch::view::Codec>::WIDTH,
                )),*],
                $len,
            ));
        };

        #[doc = concat!("A read/write view of a ", $name, " message.")]
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
            pub fn new_checked(buffer: T) -> $crate::Result<Packet<T>> {
                let packet = Self::new_unchecked(buffer);
                packet.check_len()?;
                Ok(packet)
            }

            /// Checks that the buffer holds at least [`LEN`] bytes. (An exact length is
            /// [`crate::itch::parse`]'s business: a view may sit at the front of a larger
            /// buffer.)
            pub fn check_len(&self) -> $crate::Result<()> {
                let have = self.buffer.as_ref().len();
                if have < LEN {
                    return Err($crate::Error::Truncated { need: LEN, have });
                }
                Ok(())
            }

            /// Returns the underlying buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            /// The message type byte.
            #[inline]
            pub fn kind(&self) -> u8 {
                self.buffer.as_ref()[field::KIND]
            }

            /// Stock locate code.
            #[inline]
            pub fn stock_locate(&self) -> u16 {
                $crate::be::u16(self.buffer.as_ref(), field::STOCK_LOCATE)
            }

            /// Tracking number.
            #[inline]
            pub fn tracking_number(&self) -> u16 {
                $crate::be::u16(self.buffer.as_ref(), field::TRACKING_NUMBER)
            }

            /// Timestamp, nanoseconds since midnight (always below 2^48).
            #[inline]
            pub fn timestamp(&self) -> u64 {
                $crate::be::u48(self.buffer.as_ref(), field::TIMESTAMP)
            }

            $(
                #[doc = concat!("The ", $label, " field", message!(@raw_note $ty), ".")]
                #[inline]
                pub fn $get(&self) -> message!(@raw $ty) {
                    <$ty as $crate::itch::view::Codec>::get(self.buffer.as_ref(), field::$field)
                }
            )*
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
            /// Sets the message type byte.
            #[inline]
            pub fn set_kind(&mut self, value: u8) {
                self.buffer.as_mut()[field::KIND] = value;
            }

            /// Sets the stock locate code.
            #[inline]
            pub fn set_stock_locate(&mut self, value: u16) {
                $crate::be::set_u16(self.buffer.as_mut(), field::STOCK_LOCATE, value);
            }

            /// Sets the tracking number.
            #[inline]
            pub fn set_tracking_number(&mut self, value: u16) {
                $crate::be::set_u16(self.buffer.as_mut(), field::TRACKING_NUMBER, value);
            }

            /// Sets the timestamp.
            #[inline]
            pub fn set_timestamp(&mut self, value: $crate::itch::Timestamp) {
                $crate::be::set_u48(self.buffer.as_mut(), field::TIMESTAMP, value.nanos());
            }

            $(
                #[doc = concat!("Sets the ", $label, " field.")]
                #[inline]
                pub fn $set(&mut self, value: $ty) {
                    $crate::itch::view::Codec::set(value, self.buffer.as_mut(), field::$field);
                }
            )*
        }

        impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
            fn as_ref(&self) -> &[u8] {
                self.buffer.as_ref()
            }
        }

        #[doc = concat!("A decoded ", $name, " message.")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Repr {
            /// Stock locate code.
            pub stock_locate: u16,
            /// Tracking number.
            pub tracking_number: u16,
            /// Nanoseconds since midnight.
            pub timestamp: $crate::itch::Timestamp,
            $(
                $(#[doc = $doc])*
                pub $get: $ty,
            )*
        }

        impl Repr {
            #[doc = concat!(
                "Decodes a ", $name, " message: [`Error::Truncated`](crate::Error::Truncated) if ",
                "shorter than [`LEN`], [`Error::WrongType`](crate::Error::WrongType) if the type ",
                "byte is not [`KIND`], [`Error::BadSide`](crate::Error::BadSide) for a side other ",
                "than `'B'`/`'S'` and [`Error::BadField`](crate::Error::BadField) for a Printable ",
                "flag other than `'Y'`/`'N'`, where the message has them."
            )]
            #[inline]
            pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> $crate::Result<Repr> {
                packet.check_len()?;
                if packet.kind() != KIND {
                    return Err($crate::Error::WrongType {
                        expected: KIND,
                        got: packet.kind(),
                    });
                }
                Ok(Repr {
                    stock_locate: packet.stock_locate(),
                    tracking_number: packet.tracking_number(),
                    // Cannot fail: six bytes hold less than 2^48.
                    timestamp: $crate::itch::Timestamp::from_nanos(packet.timestamp())?,
                    $(
                        $get: <$ty as $crate::itch::view::Codec>::decode(
                            packet.$get(),
                            stringify!($get),
                        )?,
                    )*
                })
            }

            /// The message length, [`LEN`].
            pub const fn buffer_len(&self) -> usize {
                LEN
            }

            /// Writes the message into a view already checked to hold [`LEN`] bytes.
            #[inline]
            pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
                let Repr {
                    stock_locate,
                    tracking_number,
                    timestamp,
                    $($get,)*
                } = *self;
                packet.set_kind(KIND);
                packet.set_stock_locate(stock_locate);
                packet.set_tracking_number(tracking_number);
                packet.set_timestamp(timestamp);
                $(packet.$set($get);)*
            }

            /// Checks that `buf` is long enough and writes the message at its front; returns
            /// [`LEN`].
            #[inline]
            pub fn emit_into(&self, buf: &mut [u8]) -> $crate::Result<usize> {
                let have = buf.len();
                let mut packet = Packet::new_checked(buf)
                    .map_err(|_| $crate::Error::NoSpace { need: LEN, have })?;
                self.emit(&mut packet);
                Ok(LEN)
            }
        }

        /// Every row of the module's layout table, (offset, length, spec field name), for the
        /// test that holds the module documentation to the code.
        #[cfg(test)]
        pub(crate) const DOC_ROWS: &[(usize, usize, &str)] = &[
            (0, 1, "Message Type"),
            (1, 2, "Stock Locate"),
            (3, 2, "Tracking Number"),
            (5, 6, "Timestamp"),
            $({
                let (start, end) = message!(@span $start $(, $end)?);
                (start, end - start, $label)
            },)*
        ];

        /// Arbitrary `Repr`s (every field uniform over its type) and the round trip through the
        /// bytes, for every message type alike.
        #[cfg(test)]
        pub(crate) mod round_trip {
            use super::{LEN, Packet, Repr};
            use $crate::itch::view::Arbitrary;
            use proptest::prelude::*;

            /// A `Repr` from one random 64-bit word per field, cut to the field's width.
            pub(crate) fn arbitrary() -> impl Strategy<Value = Repr> {
                any::<[u64; 20]>().prop_map(|words| {
                    let mut words = words.into_iter();
                    let mut next = move || words.next().expect("20 words cover every field");
                    Repr {
                        stock_locate: next() as u16,
                        tracking_number: next() as u16,
                        timestamp: $crate::itch::Timestamp::from_nanos(
                            next() & $crate::itch::Timestamp::MAX.nanos(),
                        )
                        .unwrap(),
                        $($get: Arbitrary::from_word(next()),)*
                    }
                })
            }

            proptest! {
                #[test]
                fn emit_then_parse(repr in arbitrary()) {
                    let mut bytes = [0u8; LEN];
                    prop_assert_eq!(repr.emit_into(&mut bytes), Ok(LEN));
                    let packet = Packet::new_checked(&bytes[..]).unwrap();
                    prop_assert_eq!(Repr::parse(&packet), Ok(repr));
                    let message = $crate::itch::Message::from(repr);
                    prop_assert_eq!($crate::itch::parse(&bytes), Ok(message));
                    let mut again = [0u8; LEN];
                    prop_assert_eq!(message.emit_into(&mut again), Ok(LEN));
                    prop_assert_eq!(again, bytes);
                }
            }
        }
    };

    // `KIND`, `LEN` and `field`: generated from the table...
    (@layout [] $kind:literal, $len:literal, $name:literal; $($field:ident $label:literal [$($at:literal),+])*) => {
        #[doc = concat!("Byte offsets (one-byte fields) and ranges of the ", $name, " message.")]
        pub mod field {
            /// Message Type.
            pub const KIND: usize = 0;
            /// Stock Locate.
            pub const STOCK_LOCATE: $crate::Field = 1..3;
            /// Tracking Number.
            pub const TRACKING_NUMBER: $crate::Field = 3..5;
            /// Timestamp.
            pub const TIMESTAMP: $crate::Field = 5..11;
            $(
                #[doc = concat!($label, ".")]
                pub const $field: message!(@at_ty $($at),+) = message!(@at $($at),+);
            )*
        }

        /// The message type byte.
        pub const KIND: u8 = $kind;
        /// The message length, type byte included.
        pub const LEN: usize = $len;
    };
    // ... or shared with the XDP program.
    (@layout [$layout:path] $kind:literal, $len:literal, $name:literal; $($rest:tt)*) => {
        #[doc = concat!(
            "Byte ranges of the ", $name, " message, its type byte and length (shared with the ",
            "XDP program)."
        )]
        pub use $layout::{KIND, LEN, field};
    };

    (@at_ty $start:literal) => { usize };
    (@at_ty $start:literal, $end:literal) => { $crate::Field };
    (@at $start:literal) => { $start };
    (@at $start:literal, $end:literal) => { $start..$end };
    (@span $start:literal) => { ($start, $start + 1) };
    (@span $start:literal, $end:literal) => { ($start, $end) };
    (@same $c:expr, $start:literal) => { $c == $start };
    (@same $c:expr, $start:literal, $end:literal) => { $c.start == $start && $c.end == $end };
    (@raw Side) => { u8 };
    (@raw bool) => { u8 };
    (@raw $ty:tt) => { $ty };
    (@raw_note Side) => { ", the raw byte (`Repr::parse` checks it)" };
    (@raw_note bool) => { ", the raw byte (`Repr::parse` checks it)" };
    (@raw_note $ty:tt) => { "" };
}

/// A value of every field type from one random 64-bit word, for the round trip property tests.
#[cfg(test)]
pub(super) trait Arbitrary {
    /// The value the word's low (or, for byte strings, leading) bytes encode.
    fn from_word(word: u64) -> Self;
}

/// The fixture tests every message module runs on its hand-written bytes (`$bytes`, the spec's
/// layout with a distinct non-zero value in every field) and the `Repr` they encode: parse, emit,
/// every truncation, a wrong length and a wrong type byte. Getters are checked by hand in each
/// module's `test_deconstruct`.
#[cfg(test)]
macro_rules! fixture_tests {
    ($variant:path, $bytes:expr, $repr:expr) => {
        #[test]
        fn fixture_parse() {
            let packet = Packet::new_checked(&$bytes[..]).unwrap();
            assert_eq!(Repr::parse(&packet), Ok($repr));
            assert_eq!(crate::itch::parse(&$bytes), Ok($variant($repr)));
        }

        #[test]
        fn fixture_emit() {
            let repr = $repr;
            assert_eq!(repr.buffer_len(), LEN);
            let mut bytes = [0xa5u8; LEN];
            repr.emit(&mut Packet::new_unchecked(&mut bytes[..]));
            assert_eq!(bytes, $bytes);
            let mut long = [0u8; LEN + 8];
            assert_eq!(repr.emit_into(&mut long), Ok(LEN));
            assert_eq!(long[..LEN], $bytes);
            assert_eq!(long[LEN..], [0u8; 8]);
            assert_eq!(
                repr.emit_into(&mut [0u8; LEN - 1]),
                Err(crate::Error::NoSpace {
                    need: LEN,
                    have: LEN - 1
                })
            );
            let mut bytes = [0u8; LEN];
            assert_eq!($variant(repr).emit_into(&mut bytes), Ok(LEN));
            assert_eq!(bytes, $bytes);
        }

        #[test]
        fn fixture_message() {
            let message = $variant($repr);
            assert_eq!(message.kind(), KIND);
            assert_eq!(message.kind(), $bytes[0]);
            assert_eq!(message.len(), LEN);
            assert_eq!(crate::itch::message_len(KIND), Some(LEN));
            assert_eq!(message.stock_locate(), $repr.stock_locate);
            assert_eq!(message.timestamp(), $repr.timestamp);
        }

        #[test]
        fn fixture_truncated() {
            for len in 0..LEN {
                let short = &$bytes[..len];
                assert_eq!(
                    Packet::new_checked(short).err(),
                    Some(crate::Error::Truncated {
                        need: LEN,
                        have: len
                    })
                );
                let expected = if len == 0 {
                    crate::Error::Truncated { need: 1, have: 0 }
                } else {
                    crate::Error::BadLength {
                        kind: KIND,
                        expected: LEN,
                        got: len,
                    }
                };
                assert_eq!(crate::itch::parse(short), Err(expected));
            }
        }

        #[test]
        fn fixture_bad_length_and_type() {
            let mut long = [0u8; LEN + 1];
            long[..LEN].copy_from_slice(&$bytes);
            assert_eq!(
                crate::itch::parse(&long),
                Err(crate::Error::BadLength {
                    kind: KIND,
                    expected: LEN,
                    got: LEN + 1
                })
            );
            // The view itself accepts a longer buffer, as smoltcp's do.
            assert_eq!(
                Repr::parse(&Packet::new_checked(&long[..]).unwrap()),
                Ok($repr)
            );
            let mut bytes = $bytes;
            bytes[0] = b'z';
            assert_eq!(
                Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()),
                Err(crate::Error::WrongType {
                    expected: KIND,
                    got: b'z'
                })
            );
            assert_eq!(
                crate::itch::parse(&bytes),
                Err(crate::Error::UnknownType(b'z'))
            );
        }
    };
}

#[cfg(test)]
mod arbitrary {
    use super::{Arbitrary, Price4, Side, Stock};

    impl Arbitrary for u8 {
        fn from_word(word: u64) -> u8 {
            word as u8
        }
    }
    impl Arbitrary for u32 {
        fn from_word(word: u64) -> u32 {
            word as u32
        }
    }
    impl Arbitrary for u64 {
        fn from_word(word: u64) -> u64 {
            word
        }
    }
    impl Arbitrary for Price4 {
        fn from_word(word: u64) -> Price4 {
            Price4(word as u32)
        }
    }
    impl Arbitrary for Stock {
        fn from_word(word: u64) -> Stock {
            Stock(word.to_be_bytes())
        }
    }
    impl<const N: usize> Arbitrary for [u8; N] {
        fn from_word(word: u64) -> [u8; N] {
            let bytes = word.to_be_bytes();
            core::array::from_fn(|i| bytes[i % bytes.len()])
        }
    }
    impl Arbitrary for Side {
        fn from_word(word: u64) -> Side {
            if word & 1 == 0 { Side::Buy } else { Side::Sell }
        }
    }
    impl Arbitrary for bool {
        fn from_word(word: u64) -> bool {
            word & 1 == 1
        }
    }
}
