//! SoupBinTCP 3.00 sessions, sans-IO (quiche's model): the exchange's [`Server`] end and the
//! trader's [`Client`] end of one TCP connection, each told what bytes came and what time it
//! is, each writing what it sends into a byte buffer the caller puts on the wire. Neither reads
//! a clock nor touches a socket, so every rule below is tested without a network.
//!
//! What they follow, from Nasdaq's "SoupBinTCP 3.00":
//! - A connection starts with the client's Login Request (username, password, requested
//!   session, requested sequence number). The server answers Login Accepted (the session and
//!   the number of the next sequenced message) or Login Rejected (`'A'` not authorized, `'S'`
//!   session not available).
//! - Sequenced messages are numbered by counting, from 1 in each session; a client that logs
//!   in again asking for number `n` is sent every message from `n` on ([`Stream`] keeps them),
//!   so a connection's loss loses none of them.
//! - Each end sends a heartbeat when it has sent nothing for a second; an end that hears
//!   nothing from its peer for the dead-peer timeout (the spec's "typically 15 seconds")
//!   gives the connection up.
//! - The server's End of Session says no more sequenced messages will come; the client's
//!   Logout Request ends its connection.
//! - A packet that can't be framed, or that isn't valid where it comes, ends the connection
//!   (the events say which, with the wire error).
//!
//! Field layouts and the framing are [`wire::soupbin`]'s.
#![forbid(unsafe_code)]

mod client;
mod server;
mod stream;

pub use client::{Client, ClientConfig, ClientEvent, ClientState};
pub use server::{Server, ServerConfig, ServerEvent, ServerState};
pub use stream::Stream;
pub use wire::soupbin::{RejectReason, Repr, Session};

/// One second: how long an end may send nothing before it sends a heartbeat.
pub const HEARTBEAT_NS: u64 = 1_000_000_000;
/// How long an end waits without hearing from its peer before giving the connection up (the
/// spec's "typically 15 seconds").
pub const PEER_TIMEOUT_NS: u64 = 15_000_000_000;
/// The longest packet either end takes, header included: far beyond any OUCH message.
pub const MAX_PACKET: usize = 4096;

/// A byte stream's length and FNV-1a hash, taken chunk by chunk as the bytes go: what one end
/// gave its TCP and what the other end read, compared at the end of a run (equal, byte for
/// byte, when no connection was lost with bytes in flight).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest {
    /// Bytes taken.
    pub bytes: u64,
    /// Their FNV-1a (64-bit) hash.
    pub hash: u64,
}

impl Default for Digest {
    fn default() -> Self {
        Digest {
            bytes: 0,
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }
}

impl Digest {
    /// Takes the stream's next bytes.
    #[inline]
    pub fn add(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.hash = (self.hash ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.bytes += bytes.len() as u64;
    }
}

/// Writes `repr` at the end of `out` (what the caller sends next).
fn emit(repr: &Repr<'_>, out: &mut Vec<u8>) {
    let at = out.len();
    out.resize(at + repr.buffer_len(), 0);
    // The buffer was sized to the packet, and the lab's payloads are far below the maximum.
    let written = repr.emit_into(&mut out[at..]);
    debug_assert!(written.is_ok(), "{written:?}");
    if written.is_err() {
        out.truncate(at);
    }
}

#[cfg(test)]
mod tests;
