//! SoupBinTCP 3.00: Nasdaq's session protocol on TCP, under OUCH order entry.
//!
//! Follows the text of Nasdaq's "SoupBinTCP 3.00" specification. A packet is a 2-byte
//! big-endian length (of the type byte and the payload), a type byte and a payload; TCP may
//! split or coalesce packets anywhere, so a receiver reassembles them with a [`Framer`]. The
//! server sends Login Accepted or Rejected, Sequenced Data (numbered by counting, from 1 in
//! each session), Server Heartbeats and End of Session; the client sends a Login Request,
//! Unsequenced Data, Client Heartbeats and a Logout Request; either may send Debug text.
//!
//! [`Repr`] is one decoded packet, borrowing its payload; [`Repr::parse`] takes one whole
//! packet, [`Framer`] finds them in a byte stream. Field layouts: [`xdp_common::layout::soupbin`].
use crate::{Error, Result, be};

pub use xdp_common::layout::soupbin::{
    header, kind, login_accepted, login_rejected, login_request,
};

/// Header length: the 2-byte length and the type byte.
pub const HEADER_LEN: usize = header::HEADER_LEN;
/// The most payload one packet can carry (its length field counts the type byte too).
pub const MAX_PAYLOAD: usize = u16::MAX as usize - 1;

/// A session name, alpha 10 (all spaces in a Login Request: the server's current session).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Session(pub [u8; 10]);

impl Session {
    /// All spaces: "the currently active session" in a Login Request.
    pub const CURRENT: Session = Session([b' '; 10]);

    /// A session named `name` (at most 10 printable ASCII bytes, space padded).
    pub fn new(name: &str) -> Result<Session> {
        Ok(Session(alpha(name.as_bytes())?))
    }

    /// The name without its padding.
    pub fn as_str(&self) -> &str {
        trimmed(&self.0)
    }
}

/// Why the server refused a login (Login Rejected's reason code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    /// `'A'`: not authorized (bad username or password).
    NotAuthorized,
    /// `'S'`: the requested session is not available.
    SessionNotAvailable,
}

impl RejectReason {
    /// The reason code on the wire.
    pub const fn to_byte(self) -> u8 {
        match self {
            RejectReason::NotAuthorized => login_rejected::NOT_AUTHORIZED,
            RejectReason::SessionNotAvailable => login_rejected::SESSION_NOT_AVAILABLE,
        }
    }

    /// Decodes a reason code; anything else is [`Error::BadAlpha`].
    pub const fn from_byte(b: u8) -> Result<RejectReason> {
        match b {
            login_rejected::NOT_AUTHORIZED => Ok(RejectReason::NotAuthorized),
            login_rejected::SESSION_NOT_AVAILABLE => Ok(RejectReason::SessionNotAvailable),
            _ => Err(Error::BadAlpha),
        }
    }
}

/// One SoupBinTCP packet, decoded; data packets borrow their message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repr<'a> {
    /// `'+'`: free text, either direction.
    Debug(&'a [u8]),
    /// `'A'`: the login succeeded; `sequence` is the number of the next sequenced message.
    LoginAccepted {
        /// The session logged into.
        session: Session,
        /// The next sequenced message's number.
        sequence: u64,
    },
    /// `'J'`: the login failed.
    LoginRejected(RejectReason),
    /// `'S'`: one sequenced message.
    SequencedData(&'a [u8]),
    /// `'H'`: the server is alive.
    ServerHeartbeat,
    /// `'Z'`: the session is over; no more sequenced messages will come.
    EndOfSession,
    /// `'L'`: a client logs in.
    LoginRequest {
        /// Username, alpha 6.
        username: [u8; 6],
        /// Password, alpha 10.
        password: [u8; 10],
        /// The session asked for ([`Session::CURRENT`]: whichever is current).
        session: Session,
        /// The next sequenced message the client wants (0: none of the past).
        sequence: u64,
    },
    /// `'U'`: one unsequenced message from the client.
    UnsequencedData(&'a [u8]),
    /// `'R'`: the client is alive.
    ClientHeartbeat,
    /// `'O'`: the client logs out.
    LogoutRequest,
}

impl<'a> Repr<'a> {
    /// Decodes one whole packet, header included; returns it and the bytes it took (the
    /// packet may be followed by others in `buf`). [`Error::Truncated`] when `buf` doesn't yet
    /// hold the whole packet.
    pub fn parse(buf: &'a [u8]) -> Result<(Repr<'a>, usize)> {
        let have = buf.len();
        if have < header::LEN.end {
            return Err(Error::Truncated {
                need: header::LEN.end,
                have,
            });
        }
        let len = usize::from(be::u16(buf, header::LEN));
        if len == 0 {
            return Err(Error::EmptyPacket);
        }
        let total = header::LEN.end + len;
        let Some(packet) = buf.get(..total) else {
            return Err(Error::Truncated { need: total, have });
        };
        let kind = packet[header::KIND];
        let payload = &packet[HEADER_LEN..];
        let fixed = |expected: usize| {
            if payload.len() == expected {
                Ok(())
            } else {
                Err(Error::PacketLength {
                    kind,
                    expected,
                    got: payload.len(),
                })
            }
        };
        let repr = match kind {
            kind::DEBUG => Repr::Debug(payload),
            kind::LOGIN_ACCEPTED => {
                fixed(login_accepted::LEN)?;
                Repr::LoginAccepted {
                    session: Session(checked_alpha(payload, login_accepted::SESSION)?),
                    sequence: numeric(&payload[login_accepted::SEQUENCE])?,
                }
            }
            kind::LOGIN_REJECTED => {
                fixed(login_rejected::LEN)?;
                Repr::LoginRejected(RejectReason::from_byte(payload[login_rejected::REASON])?)
            }
            kind::SEQUENCED_DATA => Repr::SequencedData(payload),
            kind::SERVER_HEARTBEAT => {
                fixed(0)?;
                Repr::ServerHeartbeat
            }
            kind::END_OF_SESSION => {
                fixed(0)?;
                Repr::EndOfSession
            }
            kind::LOGIN_REQUEST => {
                fixed(login_request::LEN)?;
                Repr::LoginRequest {
                    username: checked_alpha(payload, login_request::USERNAME)?,
                    password: checked_alpha(payload, login_request::PASSWORD)?,
                    session: Session(checked_alpha(payload, login_request::SESSION)?),
                    sequence: numeric(&payload[login_request::SEQUENCE])?,
                }
            }
            kind::UNSEQUENCED_DATA => Repr::UnsequencedData(payload),
            kind::CLIENT_HEARTBEAT => {
                fixed(0)?;
                Repr::ClientHeartbeat
            }
            kind::LOGOUT_REQUEST => {
                fixed(0)?;
                Repr::LogoutRequest
            }
            other => return Err(Error::UnknownType(other)),
        };
        Ok((repr, total))
    }

    /// The packet's type byte.
    pub const fn kind(&self) -> u8 {
        match self {
            Repr::Debug(_) => kind::DEBUG,
            Repr::LoginAccepted { .. } => kind::LOGIN_ACCEPTED,
            Repr::LoginRejected(_) => kind::LOGIN_REJECTED,
            Repr::SequencedData(_) => kind::SEQUENCED_DATA,
            Repr::ServerHeartbeat => kind::SERVER_HEARTBEAT,
            Repr::EndOfSession => kind::END_OF_SESSION,
            Repr::LoginRequest { .. } => kind::LOGIN_REQUEST,
            Repr::UnsequencedData(_) => kind::UNSEQUENCED_DATA,
            Repr::ClientHeartbeat => kind::CLIENT_HEARTBEAT,
            Repr::LogoutRequest => kind::LOGOUT_REQUEST,
        }
    }

    /// The payload's length.
    pub const fn payload_len(&self) -> usize {
        match self {
            Repr::Debug(p) | Repr::SequencedData(p) | Repr::UnsequencedData(p) => p.len(),
            Repr::LoginAccepted { .. } => login_accepted::LEN,
            Repr::LoginRejected(_) => login_rejected::LEN,
            Repr::LoginRequest { .. } => login_request::LEN,
            Repr::ServerHeartbeat
            | Repr::EndOfSession
            | Repr::ClientHeartbeat
            | Repr::LogoutRequest => 0,
        }
    }

    /// The whole packet's length, header included.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len()
    }

    /// Writes the packet at the front of `buf`; returns its length. [`Error::NoSpace`] if
    /// `buf` is too short, [`Error::TooLong`] for a payload beyond [`MAX_PAYLOAD`].
    pub fn emit_into(&self, buf: &mut [u8]) -> Result<usize> {
        let payload_len = self.payload_len();
        if payload_len > MAX_PAYLOAD {
            return Err(Error::TooLong { len: payload_len });
        }
        let total = self.buffer_len();
        let have = buf.len();
        let Some(packet) = buf.get_mut(..total) else {
            return Err(Error::NoSpace { need: total, have });
        };
        // Fits: checked against MAX_PAYLOAD above.
        be::set_u16(packet, header::LEN, (payload_len + 1) as u16);
        packet[header::KIND] = self.kind();
        let payload = &mut packet[HEADER_LEN..];
        match *self {
            Repr::Debug(p) | Repr::SequencedData(p) | Repr::UnsequencedData(p) => {
                payload.copy_from_slice(p);
            }
            Repr::LoginAccepted { session, sequence } => {
                payload[login_accepted::SESSION].copy_from_slice(&session.0);
                set_numeric(&mut payload[login_accepted::SEQUENCE], sequence);
            }
            Repr::LoginRejected(reason) => payload[login_rejected::REASON] = reason.to_byte(),
            Repr::LoginRequest {
                username,
                password,
                session,
                sequence,
            } => {
                payload[login_request::USERNAME].copy_from_slice(&username);
                payload[login_request::PASSWORD].copy_from_slice(&password);
                payload[login_request::SESSION].copy_from_slice(&session.0);
                set_numeric(&mut payload[login_request::SEQUENCE], sequence);
            }
            Repr::ServerHeartbeat
            | Repr::EndOfSession
            | Repr::ClientHeartbeat
            | Repr::LogoutRequest => {}
        }
        Ok(total)
    }
}

/// `value` as an alpha field of `N` bytes: left-justified, space padded; at most `N`
/// printable ASCII bytes ([`Error::BadAlpha`] otherwise).
pub fn alpha<const N: usize>(value: &[u8]) -> Result<[u8; N]> {
    if value.len() > N || !value.iter().all(|b| (b' '..=b'~').contains(b)) {
        return Err(Error::BadAlpha);
    }
    let mut out = [b' '; N];
    out[..value.len()].copy_from_slice(value);
    Ok(out)
}

/// An alpha field without its padding (the whole field if it isn't UTF-8, which a checked
/// alpha field always is).
pub fn trimmed(field: &[u8]) -> &str {
    core::str::from_utf8(field).map_or("", |s| s.trim_end_matches(' '))
}

fn checked_alpha<const N: usize>(payload: &[u8], field: crate::Field) -> Result<[u8; N]> {
    let bytes: [u8; N] = be::bytes(payload, field);
    if bytes.iter().all(|b| (b' '..=b'~').contains(b)) {
        Ok(bytes)
    } else {
        Err(Error::BadAlpha)
    }
}

/// A numeric field: ASCII digits, right-justified and padded on the left with spaces (a
/// left-justified one, padded on the right, is taken too; an all-space one is 0).
fn numeric(field: &[u8]) -> Result<u64> {
    let start = field.iter().position(|&b| b != b' ').unwrap_or(field.len());
    let end = field
        .iter()
        .rposition(|&b| b != b' ')
        .map_or(start, |i| i + 1);
    let mut value: u64 = 0;
    for &b in &field[start..end] {
        if !b.is_ascii_digit() {
            return Err(Error::BadNumeric);
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or(Error::BadNumeric)?;
    }
    Ok(value)
}

/// Writes `value` right-justified, space padded (a u64 has at most 20 digits: always fits the
/// spec's 20-byte fields).
fn set_numeric(field: &mut [u8], mut value: u64) {
    field.fill(b' ');
    let mut i = field.len();
    loop {
        i -= 1;
        field[i] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 || i == 0 {
            break;
        }
    }
}

/// Reassembles SoupBinTCP packets from a TCP byte stream, however it was split or coalesced.
///
/// [`Framer::read_into`] gives the free space to read into, [`Framer::filled`] says how much
/// was read, [`Framer::next_packet`] yields whole packets in order. The buffer is allocated
/// once; a packet longer than it is [`Error::PacketTooLong`], which ends the stream (the spec
/// sets no maximum; this end takes `capacity` bytes).
#[derive(Debug)]
pub struct Framer {
    buf: Box<[u8]>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
}

impl Framer {
    /// A framer whose longest packet, header included, is `capacity` bytes.
    pub fn new(capacity: usize) -> Framer {
        Framer {
            buf: vec![0; capacity.max(HEADER_LEN)].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    /// The free space at the end of the buffer to read into (moving what's unconsumed to the
    /// front first); call [`Framer::filled`] with what was read.
    pub fn read_into(&mut self) -> &mut [u8] {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.buf[self.end..]
    }

    /// `n` bytes were read into [`Framer::read_into`]'s space.
    pub fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    /// Copies `bytes` in (a test's or an in-memory stream's way of feeding it); returns how
    /// many fit.
    pub fn push(&mut self, bytes: &[u8]) -> usize {
        let space = self.read_into();
        let n = bytes.len().min(space.len());
        space[..n].copy_from_slice(&bytes[..n]);
        self.filled(n);
        n
    }

    /// Bytes received but not yet taken as a packet.
    pub fn pending(&self) -> usize {
        self.end - self.start
    }

    /// The next whole packet, if one is in; `None` while the next one is still partial. An
    /// error is final for this stream (its framing is lost): the session must end.
    pub fn next_packet(&mut self) -> Option<Result<Repr<'_>>> {
        match self.next_frame()? {
            Ok(range) => Some(Repr::parse(&self.buf[range]).map(|(repr, _)| repr)),
            Err(e) => Some(Err(e)),
        }
    }

    /// [`Framer::next_packet`] as a byte range, for a caller that decides what to do with a
    /// packet before borrowing it again ([`Framer::frame`]): the whole packet, header included,
    /// not yet checked beyond its length. Valid until the next [`Framer::read_into`].
    pub fn next_frame(&mut self) -> Option<Result<core::ops::Range<usize>>> {
        let data = &self.buf[self.start..self.end];
        if data.len() < header::LEN.end {
            return None;
        }
        let len = header::LEN.end + usize::from(be::u16(data, header::LEN));
        if len > self.buf.len() {
            return Some(Err(Error::PacketTooLong {
                len,
                max: self.buf.len(),
            }));
        }
        if data.len() < len {
            return None;
        }
        let at = self.start;
        self.start += len;
        Some(Ok(at..at + len))
    }

    /// The bytes of a range [`Framer::next_frame`] returned (empty if it is not one).
    pub fn frame(&self, range: core::ops::Range<usize>) -> &[u8] {
        self.buf.get(range).unwrap_or(&[])
    }

    /// Drops whatever is buffered (a new connection starts a new stream).
    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every packet type, written out by hand from the spec's layout.
    fn hand_made() -> Vec<(Vec<u8>, Repr<'static>)> {
        let mut login = vec![0x00, 0x2f, b'L'];
        login.extend_from_slice(b"TRADER"); // username, 6
        login.extend_from_slice(b"secret    "); // password, 10
        login.extend_from_slice(b"          "); // session: current
        login.extend_from_slice(b"                   1"); // sequence 1, right-justified
        let mut accepted = vec![0x00, 0x1f, b'A'];
        accepted.extend_from_slice(b"LAB0000001");
        accepted.extend_from_slice(b"                  42");
        vec![
            (
                login,
                Repr::LoginRequest {
                    username: *b"TRADER",
                    password: *b"secret    ",
                    session: Session::CURRENT,
                    sequence: 1,
                },
            ),
            (
                accepted,
                Repr::LoginAccepted {
                    session: Session(*b"LAB0000001"),
                    sequence: 42,
                },
            ),
            (
                vec![0x00, 0x02, b'J', b'A'],
                Repr::LoginRejected(RejectReason::NotAuthorized),
            ),
            (
                vec![0x00, 0x02, b'J', b'S'],
                Repr::LoginRejected(RejectReason::SessionNotAvailable),
            ),
            (
                vec![0x00, 0x04, b'S', 1, 2, 3],
                Repr::SequencedData(&[1, 2, 3]),
            ),
            (vec![0x00, 0x01, b'H'], Repr::ServerHeartbeat),
            (vec![0x00, 0x01, b'Z'], Repr::EndOfSession),
            (vec![0x00, 0x03, b'U', 9, 8], Repr::UnsequencedData(&[9, 8])),
            (vec![0x00, 0x01, b'R'], Repr::ClientHeartbeat),
            (vec![0x00, 0x01, b'O'], Repr::LogoutRequest),
            (vec![0x00, 0x03, b'+', b'h', b'i'], Repr::Debug(b"hi")),
            (vec![0x00, 0x01, b'S'], Repr::SequencedData(&[])),
        ]
    }

    #[test]
    fn every_packet_parses_from_and_emits_to_its_hand_made_bytes() {
        for (bytes, repr) in hand_made() {
            assert_eq!(Repr::parse(&bytes), Ok((repr, bytes.len())), "{bytes:?}");
            let mut out = vec![0xAA; bytes.len() + 3];
            assert_eq!(repr.emit_into(&mut out), Ok(bytes.len()));
            assert_eq!(&out[..bytes.len()], &bytes[..], "{repr:?}");
            assert_eq!(repr.buffer_len(), bytes.len());
            assert_eq!(
                repr.emit_into(&mut out[..bytes.len() - 1]),
                Err(Error::NoSpace {
                    need: bytes.len(),
                    have: bytes.len() - 1
                })
            );
        }
    }

    #[test]
    fn numeric_fields_take_either_justification_and_refuse_anything_else() {
        assert_eq!(numeric(b"   12"), Ok(12));
        assert_eq!(numeric(b"12   "), Ok(12));
        assert_eq!(numeric(b"     "), Ok(0));
        assert_eq!(numeric(b" 1 2 "), Err(Error::BadNumeric));
        assert_eq!(numeric(b"  -12"), Err(Error::BadNumeric));
        assert_eq!(numeric(b"99999999999999999999"), Err(Error::BadNumeric));
        assert_eq!(numeric(b"18446744073709551615"), Ok(u64::MAX));
        let mut f = [0u8; 20];
        set_numeric(&mut f, u64::MAX);
        assert_eq!(&f, b"18446744073709551615");
        set_numeric(&mut f, 0);
        assert_eq!(&f, b"                   0");
    }

    #[test]
    fn bad_packets_are_refused_with_what_is_wrong() {
        assert_eq!(
            Repr::parse(&[0x00]),
            Err(Error::Truncated { need: 2, have: 1 })
        );
        assert_eq!(Repr::parse(&[0x00, 0x00, b'H']), Err(Error::EmptyPacket));
        assert_eq!(
            Repr::parse(&[0x00, 0x05, b'S', 1]),
            Err(Error::Truncated { need: 7, have: 4 })
        );
        assert_eq!(
            Repr::parse(&[0x00, 0x02, b'H', 0]),
            Err(Error::PacketLength {
                kind: b'H',
                expected: 0,
                got: 1
            })
        );
        assert_eq!(
            Repr::parse(&[0x00, 0x01, b'Q']),
            Err(Error::UnknownType(b'Q'))
        );
        assert_eq!(Repr::parse(&[0x00, 0x02, b'J', b'X']), Err(Error::BadAlpha));
        let mut login = hand_made().remove(0).0;
        login[3] = 0x07;
        assert_eq!(Repr::parse(&login), Err(Error::BadAlpha));
        let mut login = hand_made().remove(0).0;
        let last = login.len() - 1;
        login[last] = b'x';
        assert_eq!(Repr::parse(&login), Err(Error::BadNumeric));
        assert_eq!(Session::new("ELEVENCHARS"), Err(Error::BadAlpha));
        assert_eq!(Session::new("LAB").map(|s| s.0), Ok(*b"LAB       "));
        assert_eq!(Session::new("LAB").unwrap().as_str(), "LAB");
    }

    #[test]
    fn framing_survives_every_split_of_the_stream() {
        let packets = hand_made();
        let stream: Vec<u8> = packets.iter().flat_map(|(b, _)| b.clone()).collect();
        let want: Vec<Repr<'_>> = packets.iter().map(|(_, r)| *r).collect();
        // Every pair of cut points: three segments of every length, which covers every
        // single split and every coalescing of neighbours.
        for a in 0..=stream.len() {
            for b in a..=stream.len() {
                let mut framer = Framer::new(64);
                let mut got = Vec::new();
                for mut part in [&stream[..a], &stream[a..b], &stream[b..]] {
                    // A segment larger than the buffer is taken as the reader would: what
                    // fits, then the packets it completes, then the rest.
                    loop {
                        let n = framer.push(part);
                        part = &part[n..];
                        while let Some(p) = framer.next_packet() {
                            got.push(format!("{:?}", p.expect("a good stream")));
                        }
                        if part.is_empty() {
                            break;
                        }
                        assert!(n > 0, "the framer took nothing with a packet pending");
                    }
                }
                let want: Vec<String> = want.iter().map(|r| format!("{r:?}")).collect();
                assert_eq!(got, want, "cut at {a} and {b}");
                assert_eq!(framer.pending(), 0);
            }
        }
    }

    #[test]
    fn byte_at_a_time_and_a_packet_too_long_for_the_buffer() {
        let (bytes, repr) = hand_made().remove(0);
        let mut framer = Framer::new(bytes.len());
        for (i, b) in bytes.iter().enumerate() {
            assert_eq!(framer.push(&[*b]), 1);
            if i + 1 < bytes.len() {
                assert!(framer.next_packet().is_none(), "complete after {i} bytes?");
            }
        }
        assert_eq!(framer.next_packet(), Some(Ok(repr)));
        let mut small = Framer::new(8);
        small.push(&[0x01, 0x00, b'S']);
        assert_eq!(
            small.next_packet(),
            Some(Err(Error::PacketTooLong { len: 258, max: 8 }))
        );
    }

    #[test]
    fn no_prefix_or_corruption_of_a_packet_panics() {
        for (bytes, _) in hand_made() {
            for n in 0..=bytes.len() {
                let _ = Repr::parse(&bytes[..n]);
            }
            for i in 0..bytes.len() {
                for v in [0x00, 0x01, 0xff, b' ', b'9'] {
                    let mut b = bytes.clone();
                    b[i] = v;
                    let _ = Repr::parse(&b);
                    let mut f = Framer::new(32);
                    f.push(&b);
                    while let Some(Ok(_)) = f.next_packet() {}
                }
            }
        }
    }
}
