//! NASDAQ TotalView-ITCH 5.0 messages.
//!
//! [`parse`] is the entry point for one message (a MoldUDP64 block, or a record of an ITCH file):
//! it checks the type byte against the ITCH 5.0 message table and the length against the fixed
//! length the spec gives that type, and decodes the Trade (non-cross) `'P'` message fully
//! ([`trade`]). Every other known type comes back as [`Message::Other`].
//!
//! Every ITCH 5.0 message starts with the same 11 bytes: type (1), stock locate (u16), tracking
//! number (u16) and a 6-byte timestamp in nanoseconds since midnight.

use crate::{Error, Result};
use core::fmt;
use xdp_common::layout::itch::{SIDE_BUY, SIDE_SELL};

pub mod file;
pub mod trade;

pub use trade::{Packet as TradePacket, Repr as TradeRepr};

/// Fixed length, type byte included, of every ITCH 5.0 message type (NASDAQ TotalView-ITCH 5.0
/// specification, section 4; `'O'`, Direct Listing with Capital Raise Price Discovery, was added in
/// the 2020 revision).
pub const MESSAGE_LENGTHS: [(u8, usize); 23] = [
    (b'S', 12), // System Event
    (b'R', 39), // Stock Directory
    (b'H', 25), // Stock Trading Action
    (b'Y', 20), // Reg SHO Short Sale Price Test Restricted Indicator
    (b'L', 26), // Market Participant Position
    (b'V', 35), // MWCB Decline Level
    (b'W', 12), // MWCB Status
    (b'K', 28), // Quoting Period Update (IPO)
    (b'J', 35), // LULD Auction Collar
    (b'h', 21), // Operational Halt
    (b'A', 36), // Add Order, no MPID attribution
    (b'F', 40), // Add Order with MPID attribution
    (b'E', 31), // Order Executed
    (b'C', 36), // Order Executed With Price
    (b'X', 23), // Order Cancel
    (b'D', 19), // Order Delete
    (b'U', 35), // Order Replace
    (b'P', 44), // Trade (non-cross)
    (b'Q', 40), // Cross Trade
    (b'B', 19), // Broken Trade
    (b'I', 50), // Net Order Imbalance Indicator (NOII)
    (b'N', 20), // Retail Price Improvement Indicator (RPII)
    (b'O', 48), // Direct Listing with Capital Raise Price Discovery (DLCR)
];

/// The length ITCH 5.0 specifies for message type `kind`, or `None` for a type it does not define.
pub const fn message_len(kind: u8) -> Option<usize> {
    let mut i = 0;
    while i < MESSAGE_LENGTHS.len() {
        if MESSAGE_LENGTHS[i].0 == kind {
            return Some(MESSAGE_LENGTHS[i].1);
        }
        i += 1;
    }
    None
}

/// One decoded ITCH message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// Trade (non-cross), type `'P'`.
    Trade(TradeRepr),
    /// A known ITCH 5.0 type of the right length that this crate does not decode further.
    Other {
        /// The type byte.
        kind: u8,
    },
}

/// Parses one ITCH 5.0 message.
///
/// Errors: [`Error::Truncated`] for an empty buffer, [`Error::UnknownType`] for a type byte outside
/// ITCH 5.0, [`Error::BadLength`] when the length differs from the type's fixed length, and for a
/// `'P'` message whatever [`TradeRepr::parse`] rejects (a side other than `'B'`/`'S'`).
#[inline]
pub fn parse(msg: &[u8]) -> Result<Message> {
    let Some(&kind) = msg.first() else {
        return Err(Error::Truncated { need: 1, have: 0 });
    };
    let expected = message_len(kind).ok_or(Error::UnknownType(kind))?;
    if msg.len() != expected {
        return Err(Error::BadLength {
            kind,
            expected,
            got: msg.len(),
        });
    }
    if kind == trade::KIND {
        return TradeRepr::parse(&TradePacket::new_checked(msg)?).map(Message::Trade);
    }
    Ok(Message::Other { kind })
}

/// A price in ITCH's `Price(4)` format: an unsigned 32-bit count of 1/10,000 of a dollar.
///
/// # The one conversion to `f64`
/// [`Price4::to_f64`] is `self.0 as f64 / 10_000.0`, and it is the only conversion from wire
/// prices to floating point anywhere in this project: the engine's batch backtest and the live
/// trader both see prices through it, which is what makes their PnL agree to the bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Price4(pub u32);

impl Price4 {
    /// Units per dollar: 4 implied decimals.
    pub const SCALE: u32 = 10_000;
    /// The largest representable price, $429,496.7295.
    pub const MAX: Price4 = Price4(u32::MAX);

    /// Quantises a price in dollars to 4 decimals.
    ///
    /// # Quantisation
    /// The result is `(x * 10_000.0).round()`, computed in `f64`: round half away from zero,
    /// where "half" is judged on the `f64` product: `0.00015 * 10_000.0` is
    /// `1.4999999999999998`, so 0.00015 quantises to 0.0001, while 123.45675 gives 123.4568.
    /// Quantising the output of [`Price4::to_f64`] gives back the same `Price4` for every
    /// value. Negative prices, NaN, infinities and anything that rounds above `u32::MAX` units are
    /// [`Error::BadPrice`]; `-0.0` quantises to 0.
    pub fn from_f64_quantised(x: f64) -> Result<Price4> {
        let scaled = (x * f64::from(Self::SCALE)).round();
        // NaN and negatives fail `x >= 0.0`; `-0.0` passes it.
        let non_negative = x >= 0.0;
        if !non_negative || scaled > f64::from(u32::MAX) {
            return Err(Error::BadPrice);
        }
        // Exact: `scaled` is an integer in u32's range.
        Ok(Price4(scaled as u32))
    }

    /// The price in dollars: `self.0 as f64 / 10_000.0`, the project's one conversion (see the
    /// type's documentation).
    pub fn to_f64(self) -> f64 {
        self.0 as f64 / 10_000.0
    }
}

impl fmt::Display for Price4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:04}", self.0 / Self::SCALE, self.0 % Self::SCALE)
    }
}

/// A stock symbol: 8 bytes of alphanumeric text, left-justified and space padded (ITCH `Alpha(8)`).
///
/// Bytes from the wire are kept as they are; [`Stock::new`] checks text from users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Stock(pub [u8; 8]);

impl Stock {
    /// Builds a symbol from at most 8 printable ASCII characters, padding with spaces; anything
    /// longer or outside printable ASCII is [`Error::BadStock`].
    pub fn new(symbol: &str) -> Result<Stock> {
        let bytes = symbol.as_bytes();
        let mut out = [b' '; 8];
        if bytes.len() > out.len() || !bytes.iter().all(|b| (0x20..=0x7e).contains(b)) {
            return Err(Error::BadStock);
        }
        out[..bytes.len()].copy_from_slice(bytes);
        Ok(Stock(out))
    }

    /// The symbol without its space padding.
    pub fn trimmed(&self) -> &[u8] {
        crate::moldudp64::trim_spaces(&self.0)
    }

    /// The symbol without its space padding, if it is UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        core::str::from_utf8(self.trimmed()).ok()
    }
}

impl fmt::Display for Stock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &b in self.trimmed() {
            write!(f, "{}", core::ascii::escape_default(b))?;
        }
        Ok(())
    }
}

/// Buy or sell, as ITCH's Buy/Sell Indicator and the order message encode it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// `'B'`.
    Buy,
    /// `'S'`.
    Sell,
}

impl Side {
    /// Decodes `'B'` or `'S'`; anything else is [`Error::BadSide`].
    pub const fn from_byte(b: u8) -> Result<Side> {
        match b {
            SIDE_BUY => Ok(Side::Buy),
            SIDE_SELL => Ok(Side::Sell),
            other => Err(Error::BadSide(other)),
        }
    }

    /// `b'B'` or `b'S'`.
    pub const fn to_byte(self) -> u8 {
        match self {
            Side::Buy => SIDE_BUY,
            Side::Sell => SIDE_SELL,
        }
    }

    /// The other side.
    pub const fn opposite(self) -> Side {
        match self {
            Side::Buy => Side::Sell,
            Side::Sell => Side::Buy,
        }
    }
}

/// An ITCH timestamp: nanoseconds since midnight, in 48 bits (a day is about 2^46.3 ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The largest value the 6-byte field holds.
    pub const MAX: Timestamp = Timestamp((1 << 48) - 1);

    /// Wraps a nanosecond count; 2^48 or more is [`Error::BadTimestamp`].
    pub const fn from_nanos(nanos: u64) -> Result<Timestamp> {
        if nanos > Self::MAX.0 {
            return Err(Error::BadTimestamp(nanos));
        }
        Ok(Timestamp(nanos))
    }

    /// Nanoseconds since midnight.
    pub const fn nanos(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_table_is_complete_and_unique() {
        for (i, (kind, len)) in MESSAGE_LENGTHS.iter().enumerate() {
            assert_eq!(message_len(*kind), Some(*len));
            assert!(
                MESSAGE_LENGTHS[i + 1..].iter().all(|(k, _)| k != kind),
                "{kind} twice"
            );
        }
        assert_eq!(message_len(b'P'), Some(44));
        assert_eq!(message_len(b'Z'), None);
        assert_eq!(message_len(0), None);
    }

    #[test]
    fn parse_empty() {
        assert_eq!(parse(&[]), Err(Error::Truncated { need: 1, have: 0 }));
    }

    #[test]
    fn parse_unknown_type() {
        for kind in [0u8, b'Z', b'p', b'a', 0xff] {
            assert_eq!(parse(&[kind; 44]), Err(Error::UnknownType(kind)));
        }
    }

    #[test]
    fn parse_other_types_check_length() {
        for &(kind, len) in &MESSAGE_LENGTHS {
            let mut buf = [0u8; 64];
            buf[0] = kind;
            if kind == b'P' {
                buf[19] = b'B';
            }
            let msg = &buf[..len];
            match parse(msg) {
                Ok(Message::Other { kind: k }) => assert_eq!(k, kind),
                Ok(Message::Trade(_)) => assert_eq!(kind, b'P'),
                Err(e) => panic!("{}: {e}", char::from(kind)),
            }
            for got in [len - 1, len + 1, 1] {
                assert_eq!(
                    parse(&buf[..got]),
                    Err(Error::BadLength {
                        kind,
                        expected: len,
                        got
                    })
                );
            }
        }
    }

    // An 'S' System Event, start of messages ('O'), at 03:00:00.000000001.
    static SYSTEM_EVENT_BYTES: [u8; 12] = [
        b'S', 0x00, 0x00, 0x00, 0x00, 0x09, 0xD2, 0x92, 0x29, 0xE0, 0x01, b'O',
    ];

    #[test]
    fn parse_system_event() {
        assert_eq!(
            parse(&SYSTEM_EVENT_BYTES),
            Ok(Message::Other { kind: b'S' })
        );
    }

    #[test]
    fn price_quantisation() {
        let q = |x| Price4::from_f64_quantised(x);
        assert_eq!(q(0.0), Ok(Price4(0)));
        assert_eq!(q(-0.0), Ok(Price4(0)));
        assert_eq!(q(100.0), Ok(Price4(1_000_000)));
        assert_eq!(q(123.45675), Ok(Price4(1_234_568))); // half away from zero
        assert_eq!(q(0.00005), Ok(Price4(1)));
        assert_eq!(q(0.000049), Ok(Price4(0)));
        assert_eq!(q(0.00015), Ok(Price4(1))); // 0.00015 * 10_000.0 is 1.4999999999999998
        assert_eq!(q(429_496.729_5), Ok(Price4::MAX));
        assert_eq!(q(429_496.729_54), Ok(Price4::MAX));
        assert_eq!(q(429_496.729_6), Err(Error::BadPrice));
        assert_eq!(q(-0.0001), Err(Error::BadPrice));
        assert_eq!(q(-0.00001), Err(Error::BadPrice));
        assert_eq!(q(f64::NAN), Err(Error::BadPrice));
        assert_eq!(q(f64::INFINITY), Err(Error::BadPrice));
        assert_eq!(q(f64::NEG_INFINITY), Err(Error::BadPrice));
        assert_eq!(Price4(1_234_568).to_f64(), 123.4568);
        assert_eq!(Price4(1_234_568).to_string(), "123.4568");
        assert_eq!(Price4(5).to_string(), "0.0005");
    }

    #[test]
    fn price_round_trips_through_f64_at_the_edges() {
        for n in [
            0,
            1,
            9_999,
            10_000,
            10_001,
            u32::MAX / 2,
            u32::MAX - 1,
            u32::MAX,
        ] {
            assert_eq!(
                Price4::from_f64_quantised(Price4(n).to_f64()),
                Ok(Price4(n))
            );
        }
    }

    #[test]
    fn stock() {
        assert_eq!(Stock::new("AAPL"), Ok(Stock(*b"AAPL    ")));
        assert_eq!(Stock::new("ABCDEFGH"), Ok(Stock(*b"ABCDEFGH")));
        assert_eq!(Stock::new(""), Ok(Stock(*b"        ")));
        assert_eq!(Stock::new("ABCDEFGHI"), Err(Error::BadStock));
        assert_eq!(Stock::new("AB\n"), Err(Error::BadStock));
        assert_eq!(Stock::new("ÄPPL"), Err(Error::BadStock));
        let s = Stock(*b"BRK A   ");
        assert_eq!(s.trimmed(), b"BRK A");
        assert_eq!(s.as_str(), Some("BRK A"));
        assert_eq!(s.to_string(), "BRK A");
        assert_eq!(Stock(*b"\xffX      ").to_string(), "\\xffX");
    }

    #[test]
    fn side_and_timestamp() {
        assert_eq!(Side::from_byte(b'B'), Ok(Side::Buy));
        assert_eq!(Side::from_byte(b'S'), Ok(Side::Sell));
        assert_eq!(Side::from_byte(b'b'), Err(Error::BadSide(b'b')));
        assert_eq!(Side::Buy.opposite().to_byte(), b'S');
        assert_eq!(Timestamp::from_nanos((1 << 48) - 1), Ok(Timestamp::MAX));
        assert_eq!(
            Timestamp::from_nanos(1 << 48),
            Err(Error::BadTimestamp(1 << 48))
        );
    }
}
