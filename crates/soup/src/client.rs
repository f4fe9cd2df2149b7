//! The client end of a SoupBinTCP session, across its connections.
use wire::soupbin::{Framer, HEADER_LEN, RejectReason, Repr, Session};

use crate::{HEARTBEAT_NS, MAX_PACKET, PEER_TIMEOUT_NS, emit};

/// Who logs in, to what, and the timers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// Username (alpha 6, space padded).
    pub username: [u8; 6],
    /// Password (alpha 10, space padded).
    pub password: [u8; 10],
    /// The session asked for at the first login ([`Session::CURRENT`]: the server's).
    pub session: Session,
    /// Send a heartbeat after this long without sending anything, ns.
    pub heartbeat_ns: u64,
    /// Give the connection up after this long without hearing from the server, ns.
    pub peer_timeout_ns: u64,
}

impl ClientConfig {
    /// `username`/`password`, to the server's current session, with the spec's timers.
    pub fn new(username: [u8; 6], password: [u8; 10]) -> ClientConfig {
        ClientConfig {
            username,
            password,
            session: Session::CURRENT,
            heartbeat_ns: HEARTBEAT_NS,
            peer_timeout_ns: PEER_TIMEOUT_NS,
        }
    }
}

/// Where the client is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientState {
    /// No connection (before the first, or after one ended).
    Disconnected,
    /// Login Request sent; no answer yet.
    LoggingIn,
    /// Logged in.
    LoggedIn,
}

/// What the server's bytes (or the time) meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientEvent<'a> {
    /// Logged in to `session`; the next sequenced message is number `sequence`.
    LoggedIn {
        /// The session.
        session: Session,
        /// The next sequenced message's number, as the server said.
        sequence: u64,
    },
    /// The login was refused; the connection is over.
    Rejected(RejectReason),
    /// Sequenced message number `seq`.
    Sequenced {
        /// Its number in the session.
        seq: u64,
        /// The message.
        message: &'a [u8],
    },
    /// The server ended the session: no more sequenced messages will come.
    EndOfSession,
    /// Nothing from the server for the dead-peer timeout; the connection is over.
    ServerSilent,
    /// Bytes that don't frame, or a packet that doesn't parse; the connection is over.
    Malformed(wire::Error),
    /// A packet of type `kind` where the protocol has no place for it; the connection is over.
    Unexpected {
        /// Its type byte.
        kind: u8,
    },
    /// Login Accepted at a number below the next message this client expects: taking it
    /// would count messages it has had twice. The connection is over.
    Rewound {
        /// The next message the client expects.
        expected: u64,
        /// The number the server would start from.
        got: u64,
    },
}

/// The client end: [`Client::connect`] on each new connection (it logs in from the next
/// sequenced message it hasn't had, so a reconnect loses none), the server's bytes through
/// [`Client::read_into`]/[`Client::filled`], then [`Client::poll`] until it has nothing more,
/// and [`Client::tick`] now and then; send what they write to `out`.
#[derive(Debug)]
pub struct Client {
    config: ClientConfig,
    framer: Framer,
    state: ClientState,
    /// The session, once a login named it (asked for by name on every later login).
    session: Session,
    /// The number of the next sequenced message expected.
    next_seq: u64,
    /// Sequenced messages the server's Login Accepted skipped over (it started later than
    /// asked).
    skipped: u64,
    last_rx: u64,
    last_tx: u64,
}

enum Step {
    Accepted(Session, u64),
    Rejected(RejectReason),
    Sequenced,
    EndOfSession,
    Nothing,
    Unexpected(u8),
    Bad(wire::Error),
}

impl Client {
    /// A client that hasn't connected yet; its first login asks for message 1.
    pub fn new(config: ClientConfig) -> Client {
        Client {
            session: config.session,
            config,
            framer: Framer::new(MAX_PACKET),
            state: ClientState::Disconnected,
            next_seq: 1,
            skipped: 0,
            last_rx: 0,
            last_tx: 0,
        }
    }

    /// Where the client is.
    pub fn state(&self) -> ClientState {
        self.state
    }

    /// The number of the next sequenced message expected.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Sequenced messages a login skipped over (the server started later than asked).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The session logged into (or asked for, before the first login).
    pub fn session(&self) -> Session {
        self.session
    }

    /// A new connection at `now`: drops what the last one left half-read, and writes the
    /// Login Request for the session from the next message not yet had.
    pub fn connect(&mut self, now: u64, out: &mut Vec<u8>) {
        self.framer.clear();
        self.last_rx = now;
        self.state = ClientState::LoggingIn;
        let c = &self.config;
        let login = Repr::LoginRequest {
            username: c.username,
            password: c.password,
            session: self.session,
            sequence: self.next_seq,
        };
        self.send_repr(now, &login, out);
    }

    /// The connection is gone (closed, reset): nothing is sent until [`Client::connect`].
    pub fn disconnected(&mut self) {
        self.state = ClientState::Disconnected;
    }

    /// The sequenced message `seq` (the last one [`Client::poll`] gave) made no sense to the
    /// application (an answer that matches no order it sent): the stream can't be trusted past
    /// it, so the connection is over, and the next login asks for `seq` again, from the last
    /// good number. What the connection still held unread is dropped with it.
    pub fn refuse(&mut self, seq: u64) {
        self.next_seq = self.next_seq.min(seq);
        self.framer.clear();
        self.state = ClientState::Disconnected;
    }

    /// Space to read the server's bytes into.
    pub fn read_into(&mut self) -> &mut [u8] {
        self.framer.read_into()
    }

    /// `n` bytes were read into [`Client::read_into`] at `now`.
    pub fn filled(&mut self, n: usize, now: u64) {
        if n > 0 {
            self.last_rx = now;
        }
        self.framer.filled(n);
    }

    /// The next thing the server's bytes mean, or `None` when what's left is a partial packet
    /// (or there is no connection).
    pub fn poll(&mut self) -> Option<ClientEvent<'_>> {
        while self.state != ClientState::Disconnected {
            let range = match self.framer.next_frame()? {
                Ok(r) => r,
                Err(e) => return Some(self.drop_with(ClientEvent::Malformed(e))),
            };
            let step = match Repr::parse(self.framer.frame(range.clone())) {
                Err(e) => Step::Bad(e),
                Ok((repr, _)) => match (self.state, repr) {
                    (ClientState::LoggingIn, Repr::LoginAccepted { session, sequence }) => {
                        Step::Accepted(session, sequence)
                    }
                    (ClientState::LoggingIn, Repr::LoginRejected(reason)) => Step::Rejected(reason),
                    (ClientState::LoggedIn, Repr::SequencedData(_)) => Step::Sequenced,
                    (ClientState::LoggedIn, Repr::EndOfSession) => Step::EndOfSession,
                    (ClientState::LoggedIn, Repr::ServerHeartbeat) | (_, Repr::Debug(_)) => {
                        Step::Nothing
                    }
                    (_, other) => Step::Unexpected(other.kind()),
                },
            };
            match step {
                Step::Accepted(_, sequence) if sequence < self.next_seq => {
                    let expected = self.next_seq;
                    return Some(self.drop_with(ClientEvent::Rewound {
                        expected,
                        got: sequence,
                    }));
                }
                Step::Accepted(session, sequence) => {
                    self.state = ClientState::LoggedIn;
                    self.session = session;
                    self.skipped += sequence.saturating_sub(self.next_seq);
                    self.next_seq = sequence;
                    return Some(ClientEvent::LoggedIn { session, sequence });
                }
                Step::Rejected(reason) => {
                    return Some(self.drop_with(ClientEvent::Rejected(reason)));
                }
                Step::Sequenced => {
                    let seq = self.next_seq;
                    self.next_seq += 1;
                    let packet = self.framer.frame(range);
                    return Some(ClientEvent::Sequenced {
                        seq,
                        message: &packet[HEADER_LEN..],
                    });
                }
                Step::EndOfSession => return Some(ClientEvent::EndOfSession),
                Step::Nothing => {}
                Step::Unexpected(kind) => {
                    return Some(self.drop_with(ClientEvent::Unexpected { kind }));
                }
                Step::Bad(e) => return Some(self.drop_with(ClientEvent::Malformed(e))),
            }
        }
        None
    }

    /// Writes one unsequenced message to `out` at `now`; false (nothing written) if not
    /// logged in.
    pub fn send(&mut self, now: u64, message: &[u8], out: &mut Vec<u8>) -> bool {
        if self.state != ClientState::LoggedIn {
            return false;
        }
        self.send_repr(now, &Repr::UnsequencedData(message), out);
        true
    }

    /// The timers at `now`: a heartbeat written if nothing was sent for a second (logged
    /// in); [`ClientEvent::ServerSilent`] if the server has been silent for the timeout.
    pub fn tick(&mut self, now: u64, out: &mut Vec<u8>) -> Option<ClientEvent<'static>> {
        if self.state == ClientState::Disconnected {
            return None;
        }
        if now.saturating_sub(self.last_rx) > self.config.peer_timeout_ns {
            return Some(self.drop_with(ClientEvent::ServerSilent));
        }
        if self.state == ClientState::LoggedIn
            && now.saturating_sub(self.last_tx) >= self.config.heartbeat_ns
        {
            self.send_repr(now, &Repr::ClientHeartbeat, out);
        }
        None
    }

    /// Writes a Logout Request (if logged in); the connection is over.
    pub fn logout(&mut self, now: u64, out: &mut Vec<u8>) {
        if self.state == ClientState::LoggedIn {
            self.send_repr(now, &Repr::LogoutRequest, out);
        }
        self.state = ClientState::Disconnected;
    }

    fn send_repr(&mut self, now: u64, repr: &Repr<'_>, out: &mut Vec<u8>) {
        emit(repr, out);
        self.last_tx = now;
    }

    fn drop_with<'a>(&mut self, why: ClientEvent<'a>) -> ClientEvent<'a> {
        self.state = ClientState::Disconnected;
        why
    }
}
