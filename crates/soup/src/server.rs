//! The server end of one SoupBinTCP connection.
use wire::soupbin::{Framer, HEADER_LEN, RejectReason, Repr, Session};

use crate::{HEARTBEAT_NS, MAX_PACKET, PEER_TIMEOUT_NS, Stream, emit};

/// Who may log in, to what, and the timers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The one username taken (alpha 6, space padded).
    pub username: [u8; 6],
    /// Its password (alpha 10, space padded).
    pub password: [u8; 10],
    /// This server's session.
    pub session: Session,
    /// Send a heartbeat after this long without sending anything, ns.
    pub heartbeat_ns: u64,
    /// Give the connection up after this long without hearing from the client (and a client
    /// that hasn't logged in within it), ns.
    pub peer_timeout_ns: u64,
}

impl ServerConfig {
    /// `username`/`password` may log in to `session`, with the spec's timers.
    pub fn new(username: [u8; 6], password: [u8; 10], session: Session) -> ServerConfig {
        ServerConfig {
            username,
            password,
            session,
            heartbeat_ns: HEARTBEAT_NS,
            peer_timeout_ns: PEER_TIMEOUT_NS,
        }
    }
}

/// Where a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    /// Connected; no Login Request yet.
    AwaitingLogin,
    /// Logged in: sequenced messages flow.
    LoggedIn,
    /// Over: the caller closes the socket once `out` is written.
    Closed,
}

/// What the client's bytes (or the time) meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerEvent<'a> {
    /// Logged in; the stream from message `from` on has been written to `out` (the replay).
    LoggedIn {
        /// The first sequenced message this connection gets.
        from: u64,
    },
    /// The login was refused (Login Rejected written); the connection is over.
    LoginRefused(RejectReason),
    /// One unsequenced message from the client.
    Data(&'a [u8]),
    /// The client logged out; the connection is over.
    LoggedOut,
    /// Nothing from the client for the dead-peer timeout (or no login within it); over.
    PeerSilent,
    /// Bytes that don't frame, or a packet that doesn't parse; over.
    Malformed(wire::Error),
    /// A packet of type `kind` where the protocol has no place for it (a server's packet
    /// from the client, data before login, a second login); over.
    Unexpected {
        /// Its type byte.
        kind: u8,
    },
}

/// The server end of one connection: feed it the client's bytes ([`Server::read_into`],
/// [`Server::filled`]), then call [`Server::poll`] until it has nothing more, and
/// [`Server::tick`] now and then; send what they write to `out`.
#[derive(Debug)]
pub struct Server {
    config: ServerConfig,
    framer: Framer,
    state: ServerState,
    /// The number of the next sequenced message this connection sends.
    next_seq: u64,
    /// When the client was last heard from, and when we last sent anything.
    last_rx: u64,
    last_tx: u64,
}

/// What a packet asks of the server, decided before the packet is borrowed again.
enum Step {
    Login {
        credentials_ok: bool,
        session_ok: bool,
        sequence: u64,
    },
    Data,
    Nothing,
    Logout,
    Unexpected(u8),
    Bad(wire::Error),
}

impl Server {
    /// A connection accepted at `now`.
    pub fn new(config: ServerConfig, now: u64) -> Server {
        Server {
            config,
            framer: Framer::new(MAX_PACKET),
            state: ServerState::AwaitingLogin,
            next_seq: 1,
            last_rx: now,
            last_tx: now,
        }
    }

    /// Where the connection is.
    pub fn state(&self) -> ServerState {
        self.state
    }

    /// The number of the next sequenced message this connection sends.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Space to read the client's bytes into.
    pub fn read_into(&mut self) -> &mut [u8] {
        self.framer.read_into()
    }

    /// `n` bytes were read into [`Server::read_into`] at `now`.
    pub fn filled(&mut self, n: usize, now: u64) {
        if n > 0 {
            self.last_rx = now;
        }
        self.framer.filled(n);
    }

    /// The next thing the client's bytes mean (writing any answer to `out`), or `None` when
    /// what's left is a partial packet. After an event that ends the connection, `None`.
    pub fn poll(
        &mut self,
        now: u64,
        stream: &Stream,
        out: &mut Vec<u8>,
    ) -> Option<ServerEvent<'_>> {
        while self.state != ServerState::Closed {
            let range = match self.framer.next_frame()? {
                Ok(r) => r,
                Err(e) => return Some(self.close(ServerEvent::Malformed(e))),
            };
            let step = match Repr::parse(self.framer.frame(range.clone())) {
                Err(e) => Step::Bad(e),
                Ok((repr, _)) => self.step(&repr),
            };
            match step {
                Step::Login {
                    credentials_ok,
                    session_ok,
                    sequence,
                } => {
                    let refused = if !credentials_ok {
                        Some(RejectReason::NotAuthorized)
                    } else if !session_ok {
                        Some(RejectReason::SessionNotAvailable)
                    } else {
                        None
                    };
                    if let Some(reason) = refused {
                        self.send(now, &Repr::LoginRejected(reason), out);
                        return Some(self.close(ServerEvent::LoginRefused(reason)));
                    }
                    // 0: from now on; beyond the end: from the end (nothing is invented).
                    let from = match sequence {
                        0 => stream.next_seq(),
                        n => n.min(stream.next_seq()),
                    };
                    self.send(
                        now,
                        &Repr::LoginAccepted {
                            session: self.config.session,
                            sequence: from,
                        },
                        out,
                    );
                    self.state = ServerState::LoggedIn;
                    self.next_seq = from;
                    self.catch_up(now, stream, out);
                    return Some(ServerEvent::LoggedIn { from });
                }
                Step::Data => {
                    let packet = self.framer.frame(range);
                    return Some(ServerEvent::Data(&packet[HEADER_LEN..]));
                }
                Step::Nothing => {}
                Step::Logout => return Some(self.close(ServerEvent::LoggedOut)),
                Step::Unexpected(kind) => {
                    return Some(self.close(ServerEvent::Unexpected { kind }));
                }
                Step::Bad(e) => return Some(self.close(ServerEvent::Malformed(e))),
            }
        }
        None
    }

    /// What `repr` asks for in the connection's state.
    fn step(&self, repr: &Repr<'_>) -> Step {
        match (self.state, repr) {
            (
                ServerState::AwaitingLogin,
                Repr::LoginRequest {
                    username,
                    password,
                    session,
                    sequence,
                },
            ) => Step::Login {
                credentials_ok: *username == self.config.username
                    && *password == self.config.password,
                session_ok: *session == Session::CURRENT || *session == self.config.session,
                sequence: *sequence,
            },
            (_, Repr::Debug(_)) => Step::Nothing,
            (ServerState::LoggedIn, Repr::UnsequencedData(_)) => Step::Data,
            (ServerState::LoggedIn, Repr::ClientHeartbeat) => Step::Nothing,
            (ServerState::LoggedIn, Repr::LogoutRequest) => Step::Logout,
            (_, other) => Step::Unexpected(other.kind()),
        }
    }

    /// Writes the sequenced messages this connection hasn't had yet (everything from its next
    /// number to the stream's end), if logged in.
    pub fn catch_up(&mut self, now: u64, stream: &Stream, out: &mut Vec<u8>) {
        if self.state != ServerState::LoggedIn {
            return;
        }
        while let Some(message) = stream.get(self.next_seq) {
            self.send(now, &Repr::SequencedData(message), out);
            self.next_seq += 1;
        }
    }

    /// The timers at `now`: a heartbeat written if nothing was sent for a second (logged
    /// in); [`ServerEvent::PeerSilent`] if the client has been silent for the timeout.
    pub fn tick(&mut self, now: u64, out: &mut Vec<u8>) -> Option<ServerEvent<'static>> {
        if self.state == ServerState::Closed {
            return None;
        }
        if now.saturating_sub(self.last_rx) > self.config.peer_timeout_ns {
            return Some(self.close(ServerEvent::PeerSilent));
        }
        if self.state == ServerState::LoggedIn
            && now.saturating_sub(self.last_tx) >= self.config.heartbeat_ns
        {
            self.send(now, &Repr::ServerHeartbeat, out);
        }
        None
    }

    /// End of Session: the stream is complete (written after whatever it still owed this
    /// connection). The client logs out or goes; the connection stays until then.
    pub fn end_session(&mut self, now: u64, stream: &Stream, out: &mut Vec<u8>) {
        if self.state == ServerState::LoggedIn {
            self.catch_up(now, stream, out);
            self.send(now, &Repr::EndOfSession, out);
        }
    }

    fn send(&mut self, now: u64, repr: &Repr<'_>, out: &mut Vec<u8>) {
        emit(repr, out);
        self.last_tx = now;
    }

    fn close<'a>(&mut self, why: ServerEvent<'a>) -> ServerEvent<'a> {
        self.state = ServerState::Closed;
        why
    }
}
