//! The one error type of every codec in this crate.

/// Why a buffer could not be parsed or a value could not be emitted.
///
/// Small and `Copy` so the trader's hot loop can count outcomes by kind without allocating
/// (quiche's `Error` is the model). I/O errors live in [`crate::itch::file::FileError`] instead,
/// because `std::io::Error` is neither `Copy` nor small.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The buffer is shorter than the format requires at this point.
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated {
        /// Bytes the format requires.
        need: usize,
        /// Bytes the buffer holds.
        have: usize,
    },
    /// An output buffer is too small for what is being written into it.
    #[error("no space: need {need} bytes, have {have}")]
    NoSpace {
        /// Bytes the write needs.
        need: usize,
        /// Bytes left in the buffer.
        have: usize,
    },
    /// An ITCH message's length differs from the fixed length the ITCH 5.0 spec gives its type.
    #[error("ITCH message type {:?} must be {expected} bytes, got {got}", char::from(*kind))]
    BadLength {
        /// The message type byte.
        kind: u8,
        /// The length ITCH 5.0 specifies for that type.
        expected: usize,
        /// The length of the message as received.
        got: usize,
    },
    /// A message type byte that the format does not define.
    #[error("unknown message type {0:#04x}")]
    UnknownType(u8),
    /// A known message type, but not the one this view or `Repr` decodes.
    #[error("expected message type {:?}, got {:?}", char::from(*expected), char::from(*got))]
    WrongType {
        /// The type byte this decoder handles.
        expected: u8,
        /// The type byte found.
        got: u8,
    },
    /// A MoldUDP64 message block's length field runs past the end of the packet.
    #[error("MoldUDP64 block {index} claims {len} bytes but only {remaining} remain")]
    BlockOverrun {
        /// Index of the block within the packet, from 0.
        index: u16,
        /// The length the block claims.
        len: u16,
        /// Bytes left in the packet after the block's length field.
        remaining: usize,
    },
    /// A MoldUDP64 message block of length zero, which cannot hold a message.
    #[error("MoldUDP64 block {index} is empty")]
    EmptyBlock {
        /// Index of the block within the packet, from 0.
        index: u16,
    },
    /// The MoldUDP64 message count claims more blocks than the packet holds.
    #[error("MoldUDP64 header claims {claimed} messages, packet holds {found}")]
    MissingBlocks {
        /// The message count from the header.
        claimed: u16,
        /// Complete blocks found before the packet ended.
        found: u16,
    },
    /// Bytes after the last block the message count announces (or after an end-of-session or
    /// heartbeat header).
    #[error("{len} trailing bytes at offset {offset}")]
    TrailingBytes {
        /// Offset of the first trailing byte.
        offset: usize,
        /// Number of trailing bytes.
        len: usize,
    },
    /// A message too long for a 16-bit length field.
    #[error("message of {len} bytes does not fit a 16-bit length field")]
    TooLong {
        /// The message length.
        len: usize,
    },
    /// A MoldUDP64 packet cannot take another block: the count would reach 0xFFFF, which
    /// means end of session.
    #[error("MoldUDP64 message count full")]
    CountFull,
    /// A side byte other than `'B'` or `'S'`.
    #[error("bad side {0:#04x}, expected 'B' or 'S'")]
    BadSide(u8),
    /// Order flags with bits set that this version does not define.
    #[error("undefined order flag bits {0:#06x}")]
    BadFlags(u16),
    /// A price that is negative, NaN or beyond the range of ITCH's `Price(4)` (u32 / 10^4).
    #[error("price not representable as 4-decimal fixed point in u32")]
    BadPrice,
    /// A stock symbol (or MoldUDP64 session) longer than its field or with bytes outside printable ASCII.
    #[error("stock symbol must be at most 8 printable ASCII characters")]
    BadStock,
    /// A SoupBinTCP packet whose length disagrees with the fixed length its type has.
    #[error("SoupBinTCP packet {:?} must carry {expected} payload bytes, got {got}", char::from(*kind))]
    PacketLength {
        /// The packet type byte.
        kind: u8,
        /// The payload length SoupBinTCP 3.00 gives that type.
        expected: usize,
        /// The payload length received.
        got: usize,
    },
    /// A SoupBinTCP length field of 0: no room for the type byte.
    #[error("SoupBinTCP packet of length 0 (no type byte)")]
    EmptyPacket,
    /// A SoupBinTCP packet longer than the receiver's buffer takes.
    #[error("SoupBinTCP packet of {len} bytes is longer than the {max} this end takes")]
    PacketTooLong {
        /// The packet's length field.
        len: usize,
        /// The most this end buffers.
        max: usize,
    },
    /// A numeric (ASCII decimal) field that is not digits padded with spaces, or too large.
    #[error("numeric field is not space-padded ASCII digits that fit 64 bits")]
    BadNumeric,
    /// An alpha field with a byte outside printable ASCII.
    #[error("alpha field has a byte outside printable ASCII")]
    BadAlpha,
    /// A one-byte code field holding a value the format does not define (an OUCH time in
    /// force, display, capacity, ...).
    #[error("field {field} holds {byte:#04x}, not one of its codes")]
    BadField {
        /// The field's name.
        field: &'static str,
        /// The byte found (or given to emit).
        byte: u8,
    },
    /// An OUCH ClOrdID that is not the lab's (13 decimal digits, then `'O'` or `'R'`), or a tick
    /// sequence number of 10^13 or more, which its 13 digits cannot hold.
    #[error("ClOrdID is not the lab's 13 digits and 'O'/'R'")]
    BadClOrdId,
    /// An order token too large for OUCH's 4-byte UserRefNum.
    #[error("order token {0} does not fit OUCH's 32-bit UserRefNum")]
    BadToken(u64),
    /// A timestamp of 2^48 nanoseconds or more, which ITCH's 6-byte field cannot hold.
    #[error("timestamp {0} ns does not fit 48 bits")]
    BadTimestamp(u64),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;
