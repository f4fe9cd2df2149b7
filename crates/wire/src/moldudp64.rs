//! MoldUDP64 downstream packets (NASDAQ MoldUDP64 Protocol Specification, v1.00).
//!
//! ```text
//!  0                   10                  18        20
//! +---------------------+-------------------+---------+--------+---------------+-----
//! | Session (10, alpha) | Sequence (u64 BE) | Count   | Length | Message bytes | ...
//! |                     | seq of 1st msg    | (u16 BE)| (u16)  | (Length)      |
//! +---------------------+-------------------+---------+--------+---------------+-----
//! ```
//!
//! A count of 0 is a heartbeat and 0xFFFF is end of session; neither carries blocks. The `n`-th
//! block (from 0) carries message sequence number `sequence + n`.

use crate::{Error, Result, be};

/// Message count meaning "end of session" (MoldUDP64 spec, "End of Session").
pub use xdp_common::layout::moldudp64::END_OF_SESSION;
/// Byte ranges of the MoldUDP64 header, and its lengths (shared with the XDP program).
pub use xdp_common::layout::moldudp64::{BLOCK_HEADER_LEN, HEADER_LEN, field};
/// Message count meaning "heartbeat".
pub const HEARTBEAT: u16 = 0;
/// The largest message count a data packet can carry: 0xFFFF is reserved for end of session.
pub const MAX_COUNT: u16 = END_OF_SESSION - 1;

/// A MoldUDP64 session name: 10 bytes of alphanumeric text, space padded on the right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Session(pub [u8; 10]);

impl Session {
    /// A session named on a command line (`--session`): up to 10 printable ASCII characters,
    /// or an error that says so.
    pub fn parse_arg(s: &str) -> core::result::Result<Self, String> {
        Self::new(s).map_err(|_| {
            format!("bad session {s:?}: up to 10 printable ASCII characters (MoldUDP64's session)")
        })
    }

    /// Builds a session from text of at most 10 printable ASCII characters, padding with spaces.
    pub fn new(name: &str) -> Result<Self> {
        let mut out = [b' '; 10];
        let bytes = name.as_bytes();
        if bytes.len() > out.len() || !bytes.iter().all(|b| (0x20..=0x7e).contains(b)) {
            return Err(Error::BadStock);
        }
        out[..bytes.len()].copy_from_slice(bytes);
        Ok(Session(out))
    }

    /// The session bytes without the right-hand space padding.
    pub fn trimmed(&self) -> &[u8] {
        trim_spaces(&self.0)
    }
}

pub(crate) fn trim_spaces(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    bytes.get(..end).unwrap_or_default()
}

/// A read/write view of a MoldUDP64 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors panic if it is shorter than
    /// [`HEADER_LEN`]. Use [`Packet::new_checked`] on anything from the network.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`Packet::check_len`], so that no accessor can panic.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the whole header. The blocks are checked as they are
    /// iterated ([`Packet::messages`]) or all at once by [`Repr::parse`].
    pub fn check_len(&self) -> Result<()> {
        let have = self.buffer.as_ref().len();
        if have < HEADER_LEN {
            return Err(Error::Truncated {
                need: HEADER_LEN,
                have,
            });
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The session.
    pub fn session(&self) -> Session {
        Session(be::bytes(self.buffer.as_ref(), field::SESSION))
    }

    /// The sequence number of the first message.
    pub fn sequence(&self) -> u64 {
        be::u64(self.buffer.as_ref(), field::SEQUENCE)
    }

    /// The message count as sent (0 = heartbeat, 0xFFFF = end of session).
    pub fn count(&self) -> u16 {
        be::u16(self.buffer.as_ref(), field::COUNT)
    }

    /// Whether this is a heartbeat (count 0).
    pub fn is_heartbeat(&self) -> bool {
        self.count() == HEARTBEAT
    }

    /// Whether this is the end-of-session packet (count 0xFFFF).
    pub fn is_end_of_session(&self) -> bool {
        self.count() == END_OF_SESSION
    }

    /// The number of message blocks the header announces: the count, or 0 for end of session.
    pub fn block_count(&self) -> u16 {
        match self.count() {
            END_OF_SESSION => 0,
            n => n,
        }
    }

    /// The sequence number that follows this packet's messages (wrapping at 2^64).
    pub fn next_sequence(&self) -> u64 {
        self.sequence().wrapping_add(u64::from(self.block_count()))
    }

    /// The bytes after the header: the message blocks.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// An iterator over the message blocks, borrowing the underlying buffer rather than the
    /// view (smoltcp's `payload` on `Packet<&'a T>` does the same); see [`Messages`].
    pub fn messages(&self) -> Messages<'a> {
        let data: &'a [u8] = self.buffer.as_ref();
        let count = be::u16(data, field::COUNT);
        Messages::new(&data[field::PAYLOAD], count)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the session.
    pub fn set_session(&mut self, value: Session) {
        be::set_bytes(self.buffer.as_mut(), field::SESSION, &value.0);
    }

    /// Sets the sequence number of the first message.
    pub fn set_sequence(&mut self, value: u64) {
        be::set_u64(self.buffer.as_mut(), field::SEQUENCE, value);
    }

    /// Sets the message count.
    pub fn set_count(&mut self, value: u16) {
        be::set_u16(self.buffer.as_mut(), field::COUNT, value);
    }

    /// The bytes after the header, mutably.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// Iterator over a packet's message blocks, yielding each message's bytes.
///
/// Framing errors end the iteration: after a block whose length runs past the end of the packet
/// ([`Error::BlockOverrun`]), a packet that ends before the count is reached
/// ([`Error::MissingBlocks`], or [`Error::Truncated`] for a partial length prefix), or bytes after
/// the last announced block ([`Error::TrailingBytes`]), it yields that error once and then `None`.
/// A zero-length block ([`Error::EmptyBlock`]) leaves the framing intact, so iteration goes on
/// after it. Every item, `Ok` or `Err`, stands for one sequence number: item `n` is message
/// `sequence + n`.
#[derive(Debug, Clone)]
pub struct Messages<'a> {
    rest: &'a [u8],
    /// Offset of `rest` from the start of the packet.
    offset: usize,
    claimed: u16,
    index: u16,
    done: bool,
}

impl<'a> Messages<'a> {
    fn new(payload: &'a [u8], count: u16) -> Self {
        let claimed = if count == END_OF_SESSION { 0 } else { count };
        Messages {
            rest: payload,
            offset: HEADER_LEN,
            claimed,
            index: 0,
            done: false,
        }
    }

    /// Index of the block the next call to `next` examines.
    pub fn index(&self) -> u16 {
        self.index
    }

    fn fail(&mut self, error: Error) -> Option<Result<&'a [u8]>> {
        self.done = true;
        Some(Err(error))
    }
}

impl<'a> Iterator for Messages<'a> {
    type Item = Result<&'a [u8]>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.index == self.claimed {
            self.done = true;
            if self.rest.is_empty() {
                return None;
            }
            let (offset, len) = (self.offset, self.rest.len());
            return self.fail(Error::TrailingBytes { offset, len });
        }
        let Some((len, rest)) = self.rest.split_first_chunk::<BLOCK_HEADER_LEN>() else {
            if self.rest.is_empty() {
                let (claimed, found) = (self.claimed, self.index);
                return self.fail(Error::MissingBlocks { claimed, found });
            }
            let (need, have) = (
                self.offset + BLOCK_HEADER_LEN,
                self.offset + self.rest.len(),
            );
            return self.fail(Error::Truncated { need, have });
        };
        let len = u16::from_be_bytes(*len);
        let Some((block, rest)) = rest.split_at_checked(usize::from(len)) else {
            let (index, remaining) = (self.index, rest.len());
            return self.fail(Error::BlockOverrun {
                index,
                len,
                remaining,
            });
        };
        let index = self.index;
        self.rest = rest;
        self.offset += BLOCK_HEADER_LEN + block.len();
        self.index += 1;
        if block.is_empty() {
            return Some(Err(Error::EmptyBlock { index }));
        }
        Some(Ok(block))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        // At most the remaining count, plus one trailing-bytes error.
        (0, Some(usize::from(self.claimed - self.index) + 1))
    }
}

impl core::iter::FusedIterator for Messages<'_> {}

/// The header of a MoldUDP64 packet, with its block framing validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// The session.
    pub session: Session,
    /// Sequence number of the first message.
    pub sequence: u64,
    /// Message count as on the wire (0 = heartbeat, 0xFFFF = end of session).
    pub count: u16,
}

impl Repr {
    /// Parses the header and walks the blocks once without copying: succeeds exactly when
    /// [`Packet::messages`] would yield only `Ok` items.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        if let Some(error) = packet.messages().find_map(Result::err) {
            return Err(error);
        }
        Ok(Repr {
            session: packet.session(),
            sequence: packet.sequence(),
            count: packet.count(),
        })
    }

    /// Length of the header this `Repr` emits; the blocks are written after it (see
    /// [`PacketBuilder`]).
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header. The packet must have been checked to hold [`HEADER_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        let Repr {
            session,
            sequence,
            count,
        } = *self;
        packet.set_session(session);
        packet.set_sequence(sequence);
        packet.set_count(count);
    }
}

/// A MoldUDP64 re-request (the spec's "Request Packet"): the session, the first sequence
/// number wanted and how many messages, sent to the exchange's re-request server, which
/// answers with a normal packet of those messages (as many as fit) to the requester's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// The session the messages are of.
    pub session: Session,
    /// The first sequence number wanted.
    pub sequence: u64,
    /// Messages wanted from there.
    pub count: u16,
}

impl Request {
    /// A request's length on the wire: the downstream header's fields, no blocks.
    pub const LEN: usize = HEADER_LEN;

    /// Parses a request datagram: exactly [`Request::LEN`] bytes.
    pub fn parse(bytes: &[u8]) -> Result<Request> {
        if bytes.len() > Self::LEN {
            return Err(Error::TrailingBytes {
                offset: Self::LEN,
                len: bytes.len() - Self::LEN,
            });
        }
        let p = Packet::new_checked(bytes)?;
        Ok(Request {
            session: p.session(),
            sequence: p.sequence(),
            count: p.count(),
        })
    }

    /// The request's bytes.
    pub fn emit(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        let mut p = Packet::new_unchecked(&mut b[..]);
        p.set_session(self.session);
        p.set_sequence(self.sequence);
        p.set_count(self.count);
        b
    }
}

/// Builds a MoldUDP64 packet in a caller's buffer: header first, then blocks appended one at a
/// time, with the count kept up to date after each, so the buffer always holds a valid packet.
#[derive(Debug)]
pub struct PacketBuilder<'a> {
    buffer: &'a mut [u8],
    len: usize,
    count: u16,
}

impl<'a> PacketBuilder<'a> {
    /// Starts a packet with `count` 0 (a heartbeat until a block is appended).
    pub fn new(buffer: &'a mut [u8], session: Session, sequence: u64) -> Result<Self> {
        let have = buffer.len();
        let mut packet = Packet::new_checked(&mut *buffer).map_err(|_| Error::NoSpace {
            need: HEADER_LEN,
            have,
        })?;
        Repr {
            session,
            sequence,
            count: HEARTBEAT,
        }
        .emit(&mut packet);
        Ok(PacketBuilder {
            buffer,
            len: HEADER_LEN,
            count: 0,
        })
    }

    /// Reserves a block of `len` bytes, updates the count and returns the block's bytes for the
    /// caller to fill (so an ITCH message can be emitted in place, without a copy). The returned
    /// bytes hold whatever the buffer held before.
    pub fn reserve(&mut self, len: usize) -> Result<&mut [u8]> {
        let prefix = u16::try_from(len).map_err(|_| Error::TooLong { len })?;
        if len == 0 {
            return Err(Error::EmptyBlock { index: self.count });
        }
        if self.count == MAX_COUNT {
            return Err(Error::CountFull);
        }
        let need = BLOCK_HEADER_LEN + len;
        let have = self.remaining();
        if need > have {
            return Err(Error::NoSpace { need, have });
        }
        let start = self.len;
        self.len += need;
        self.count += 1;
        be::set_u16(self.buffer, field::COUNT, self.count);
        // In bounds: `need <= remaining()` was checked above.
        let (head, body) = self.buffer[start..self.len].split_at_mut(BLOCK_HEADER_LEN);
        head.copy_from_slice(&prefix.to_be_bytes());
        Ok(body)
    }

    /// Appends one message block.
    pub fn push(&mut self, message: &[u8]) -> Result<()> {
        self.reserve(message.len())?.copy_from_slice(message);
        Ok(())
    }

    /// Blocks appended so far.
    pub fn count(&self) -> u16 {
        self.count
    }

    /// Bytes written so far, header included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no block has been appended yet.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes still free in the buffer.
    pub fn remaining(&self) -> usize {
        self.buffer.len() - self.len
    }

    /// The finished packet: the written prefix of the buffer.
    pub fn finish(self) -> &'a mut [u8] {
        let len = self.len;
        self.buffer.get_mut(..len).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Session "SESSION001", sequence 1_000_000, two blocks: a 3-byte and a 1-byte message.
    static PACKET_BYTES: [u8; 28] = [
        b'S', b'E', b'S', b'S', b'I', b'O', b'N', b'0', b'0', b'1', // session
        0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x42, 0x40, // sequence 1_000_000
        0x00, 0x02, // count 2
        0x00, 0x03, b'a', b'b', b'c', // block 0
        0x00, 0x01, b'd', // block 1
    ];

    // End of session for "SESSION001", next sequence 1_000_002.
    static END_BYTES: [u8; 20] = [
        b'S', b'E', b'S', b'S', b'I', b'O', b'N', b'0', b'0', b'1', // session
        0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x42, 0x42, // sequence 1_000_002
        0xff, 0xff, // count: end of session
    ];

    fn session() -> Session {
        Session::new("SESSION001").unwrap()
    }

    fn with_blocks(count: u16, blocks: &[u8]) -> Vec<u8> {
        let mut v = PACKET_BYTES[..HEADER_LEN].to_vec();
        v[18..20].copy_from_slice(&count.to_be_bytes());
        v.extend_from_slice(blocks);
        v
    }

    fn messages(bytes: &[u8]) -> Vec<Result<&[u8]>> {
        Packet::new_checked(bytes).unwrap().messages().collect()
    }

    #[test]
    fn test_deconstruct() {
        let packet = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(packet.session(), session());
        assert_eq!(packet.session().trimmed(), b"SESSION001");
        assert_eq!(packet.sequence(), 1_000_000);
        assert_eq!(packet.count(), 2);
        assert!(!packet.is_heartbeat() && !packet.is_end_of_session());
        assert_eq!(packet.next_sequence(), 1_000_002);
        assert_eq!(packet.payload(), &PACKET_BYTES[20..]);
        assert_eq!(messages(&PACKET_BYTES), [Ok(&b"abc"[..]), Ok(&b"d"[..])]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0xa5u8; 28];
        let mut packet = Packet::new_unchecked(&mut bytes[..]);
        packet.set_session(session());
        packet.set_sequence(1_000_000);
        packet.set_count(2);
        packet.payload_mut().copy_from_slice(&PACKET_BYTES[20..]);
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn test_parse() {
        let repr = Repr::parse(&Packet::new_checked(&PACKET_BYTES[..]).unwrap());
        assert_eq!(
            repr,
            Ok(Repr {
                session: session(),
                sequence: 1_000_000,
                count: 2
            })
        );
        let end = Packet::new_checked(&END_BYTES[..]).unwrap();
        assert!(end.is_end_of_session());
        assert_eq!(end.block_count(), 0);
        assert_eq!(end.next_sequence(), 1_000_002);
        assert_eq!(end.messages().count(), 0);
        assert_eq!(Repr::parse(&end).map(|r| r.count), Ok(END_OF_SESSION));
    }

    #[test]
    fn test_emit() {
        let mut bytes = [0xa5u8; 20];
        let repr = Repr {
            session: session(),
            sequence: 1_000_002,
            count: END_OF_SESSION,
        };
        assert_eq!(repr.buffer_len(), HEADER_LEN);
        repr.emit(&mut Packet::new_checked(&mut bytes[..]).unwrap());
        assert_eq!(bytes, END_BYTES);
    }

    #[test]
    fn test_builder() {
        let mut buf = [0xa5u8; 64];
        let mut builder = PacketBuilder::new(&mut buf, session(), 1_000_000).unwrap();
        assert!(builder.is_empty());
        builder.push(b"abc").unwrap();
        builder.reserve(1).unwrap().copy_from_slice(b"d");
        assert_eq!(
            (builder.count(), builder.len(), builder.remaining()),
            (2, 28, 36)
        );
        assert_eq!(builder.finish(), &PACKET_BYTES[..]);
    }

    #[test]
    fn test_builder_heartbeat() {
        let mut buf = [0u8; 20];
        let builder = PacketBuilder::new(&mut buf, session(), 5).unwrap();
        let packet = Packet::new_checked(&*builder.finish()).unwrap();
        assert!(packet.is_heartbeat());
        assert_eq!((packet.sequence(), packet.next_sequence()), (5, 5));
        assert_eq!(packet.messages().count(), 0);
    }

    #[test]
    fn test_builder_no_space() {
        assert_eq!(
            PacketBuilder::new(&mut [0u8; 19], session(), 1).err(),
            Some(Error::NoSpace { need: 20, have: 19 })
        );
        let mut buf = [0u8; 27];
        let mut builder = PacketBuilder::new(&mut buf, session(), 1_000_000).unwrap();
        builder.push(b"abc").unwrap();
        assert_eq!(
            builder.push(b"de"),
            Err(Error::NoSpace { need: 4, have: 2 })
        );
        assert_eq!(builder.push(b""), Err(Error::EmptyBlock { index: 1 }));
        assert_eq!(
            builder.push(&[0; 65536]),
            Err(Error::TooLong { len: 65536 })
        );
        // A failed push leaves a valid packet behind.
        assert_eq!(builder.finish(), &with_blocks(1, b"\x00\x03abc")[..]);
    }

    #[test]
    fn test_builder_count_full() {
        let mut buf = vec![0u8; HEADER_LEN + 3 * usize::from(MAX_COUNT) + 3];
        let mut builder = PacketBuilder::new(&mut buf, session(), 0).unwrap();
        for _ in 0..MAX_COUNT {
            builder.push(b"x").unwrap();
        }
        assert_eq!(builder.push(b"x"), Err(Error::CountFull));
        let packet = Packet::new_checked(&*builder.finish()).unwrap();
        assert_eq!(packet.count(), MAX_COUNT);
        assert_eq!(
            packet.messages().filter(Result::is_ok).count(),
            usize::from(MAX_COUNT)
        );
    }

    #[test]
    fn test_truncated_header_at_every_length() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                Packet::new_checked(&PACKET_BYTES[..len]).err(),
                Some(Error::Truncated {
                    need: 20,
                    have: len
                })
            );
        }
    }

    #[test]
    fn test_truncated_blocks_at_every_length() {
        let expected = |len: usize| -> Vec<Result<&'static [u8]>> {
            match len {
                20 => vec![Err(Error::MissingBlocks {
                    claimed: 2,
                    found: 0,
                })],
                21 => vec![Err(Error::Truncated { need: 22, have: 21 })],
                22..=24 => {
                    vec![Err(Error::BlockOverrun {
                        index: 0,
                        len: 3,
                        remaining: len - 22,
                    })]
                }
                25 => vec![
                    Ok(b"abc"),
                    Err(Error::MissingBlocks {
                        claimed: 2,
                        found: 1,
                    }),
                ],
                26 => vec![Ok(b"abc"), Err(Error::Truncated { need: 27, have: 26 })],
                27 => vec![
                    Ok(b"abc"),
                    Err(Error::BlockOverrun {
                        index: 1,
                        len: 1,
                        remaining: 0,
                    }),
                ],
                _ => unreachable!(),
            }
        };
        for len in HEADER_LEN..PACKET_BYTES.len() {
            let short = &PACKET_BYTES[..len];
            let want = expected(len);
            assert_eq!(messages(short), want, "len {len}");
            let packet = Packet::new_checked(short).unwrap();
            assert_eq!(
                Repr::parse(&packet).err(),
                want.last().unwrap().err(),
                "len {len}"
            );
        }
    }

    #[test]
    fn test_count_too_high() {
        let bytes = with_blocks(3, &PACKET_BYTES[20..]);
        assert_eq!(
            messages(&bytes),
            [
                Ok(&b"abc"[..]),
                Ok(&b"d"[..]),
                Err(Error::MissingBlocks {
                    claimed: 3,
                    found: 2
                })
            ]
        );
        let bytes = with_blocks(MAX_COUNT, &PACKET_BYTES[20..]);
        assert_eq!(
            messages(&bytes).last(),
            Some(&Err(Error::MissingBlocks {
                claimed: MAX_COUNT,
                found: 2
            }))
        );
    }

    #[test]
    fn test_count_too_low_is_trailing_garbage() {
        let bytes = with_blocks(1, &PACKET_BYTES[20..]);
        assert_eq!(
            messages(&bytes),
            [
                Ok(&b"abc"[..]),
                Err(Error::TrailingBytes { offset: 25, len: 3 })
            ]
        );
        // Heartbeat and end of session carry no blocks either.
        for count in [HEARTBEAT, END_OF_SESSION] {
            let bytes = with_blocks(count, b"\x00");
            assert_eq!(
                messages(&bytes),
                [Err(Error::TrailingBytes { offset: 20, len: 1 })]
            );
            let packet = Packet::new_checked(&bytes[..]).unwrap();
            assert_eq!(
                Repr::parse(&packet),
                Err(Error::TrailingBytes { offset: 20, len: 1 })
            );
        }
    }

    #[test]
    fn test_block_length_past_end() {
        // Block 0 claims 0xFFFF bytes.
        let bytes = with_blocks(2, b"\xff\xffabc\x00\x01d");
        assert_eq!(
            messages(&bytes),
            [Err(Error::BlockOverrun {
                index: 0,
                len: 0xffff,
                remaining: 6
            })]
        );
        // Block 1 claims one byte more than is left.
        let bytes = with_blocks(2, b"\x00\x03abc\x00\x02d");
        assert_eq!(
            messages(&bytes),
            [
                Ok(&b"abc"[..]),
                Err(Error::BlockOverrun {
                    index: 1,
                    len: 2,
                    remaining: 1
                })
            ]
        );
    }

    #[test]
    fn test_block_length_zero() {
        let bytes = with_blocks(3, b"\x00\x00\x00\x03abc\x00\x00");
        assert_eq!(
            messages(&bytes),
            [
                Err(Error::EmptyBlock { index: 0 }),
                Ok(&b"abc"[..]),
                Err(Error::EmptyBlock { index: 2 })
            ]
        );
        let packet = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(Repr::parse(&packet), Err(Error::EmptyBlock { index: 0 }));
    }

    #[test]
    fn test_sequence_wraps() {
        let mut bytes = PACKET_BYTES;
        bytes[10..18].copy_from_slice(&u64::MAX.to_be_bytes());
        assert_eq!(Packet::new_checked(&bytes[..]).unwrap().next_sequence(), 1);
    }

    #[test]
    fn test_session() {
        assert_eq!(Session::new("AB"), Ok(Session(*b"AB        ")));
        assert_eq!(Session::new("ABCDEFGHIJK"), Err(Error::BadStock));
        assert_eq!(Session(*b"AB        ").trimmed(), b"AB");
        assert_eq!(Session([b' '; 10]).trimmed(), b"");
    }

    #[test]
    fn a_request_round_trips_and_refuses_other_lengths() {
        let r = Request {
            session: Session::new("T2TLAB0001").unwrap(),
            sequence: 1 << 40,
            count: 31,
        };
        let b = r.emit();
        assert_eq!(Request::parse(&b).unwrap(), r);
        assert!(matches!(
            Request::parse(&b[..19]),
            Err(Error::Truncated { need: 20, have: 19 })
        ));
        let mut long = b.to_vec();
        long.push(0);
        assert!(matches!(
            Request::parse(&long),
            Err(Error::TrailingBytes { offset: 20, len: 1 })
        ));
    }
}
