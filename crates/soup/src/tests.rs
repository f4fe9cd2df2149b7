//! Both ends against each other, in memory: every rule of the module doc.
use super::*;

const S: u64 = 1_000_000_000;

fn server_config() -> ServerConfig {
    ServerConfig::new(
        *b"TRADER",
        *b"secret    ",
        Session::new("LAB0000001").unwrap(),
    )
}

fn client_config() -> ClientConfig {
    ClientConfig::new(*b"TRADER", *b"secret    ")
}

/// Hands `bytes` to the server in pieces of `chunk` and collects what each event was (as
/// text, to outlive the borrow), with what the server wrote.
fn to_server(
    server: &mut Server,
    stream: &Stream,
    bytes: &[u8],
    chunk: usize,
    now: u64,
) -> (Vec<String>, Vec<u8>) {
    let mut events = Vec::new();
    let mut out = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        let space = server.read_into();
        space[..piece.len()].copy_from_slice(piece);
        server.filled(piece.len(), now);
        while let Some(e) = server.poll(now, stream, &mut out) {
            events.push(format!("{e:?}"));
        }
    }
    (events, out)
}

fn to_client(client: &mut Client, bytes: &[u8], chunk: usize, now: u64) -> Vec<String> {
    let mut events = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        let space = client.read_into();
        space[..piece.len()].copy_from_slice(piece);
        client.filled(piece.len(), now);
        while let Some(e) = client.poll() {
            events.push(format!("{e:?}"));
        }
    }
    events
}

/// A stream of `n` messages, "m1", "m2", ...
fn stream_of(n: u64) -> Stream {
    let mut s = Stream::new();
    for i in 1..=n {
        assert_eq!(s.push(format!("m{i}").as_bytes()), i);
    }
    s
}

#[test]
fn login_then_sequenced_data_both_ways_at_every_chunk_size() {
    for chunk in [1, 2, 3, 7, 64, 4096] {
        let stream = stream_of(3);
        let mut server = Server::new(server_config(), 0);
        let mut client = Client::new(client_config());
        let mut login = Vec::new();
        client.connect(0, &mut login);
        assert_eq!(client.state(), ClientState::LoggingIn);
        let (events, out) = to_server(&mut server, &stream, &login, chunk, 1);
        assert_eq!(events, ["LoggedIn { from: 1 }"], "chunk {chunk}");
        let events = to_client(&mut client, &out, chunk, 2);
        assert_eq!(events.len(), 4, "{events:?}");
        assert!(events[0].starts_with("LoggedIn"), "{events:?}");
        assert_eq!(client.session().as_str(), "LAB0000001");
        assert_eq!(client.next_seq(), 4, "three replayed");
        // Client data reaches the server as one message each.
        let mut up = Vec::new();
        assert!(client.send(3, b"order-1", &mut up));
        assert!(client.send(3, b"order-2", &mut up));
        let (events, _) = to_server(&mut server, &stream, &up, chunk, 4);
        assert_eq!(
            events,
            [
                format!("Data({:?})", b"order-1"),
                format!("Data({:?})", b"order-2")
            ]
        );
    }
}

#[test]
fn a_login_again_is_replayed_from_the_number_it_asks_for() {
    let mut stream = stream_of(2);
    let mut server = Server::new(server_config(), 0);
    let mut client = Client::new(client_config());
    let mut out = Vec::new();
    client.connect(0, &mut out);
    let (_, down) = to_server(&mut server, &stream, &out, 4096, 0);
    to_client(&mut client, &down, 4096, 0);
    assert_eq!(client.next_seq(), 3);
    // Three more are sent while the connection is down.
    for m in [b"m3", b"m4", b"m5"] {
        stream.push(m);
    }
    client.disconnected();
    let mut server = Server::new(server_config(), 10);
    let mut out = Vec::new();
    client.connect(10, &mut out);
    let (events, down) = to_server(&mut server, &stream, &out, 4096, 10);
    assert_eq!(events, ["LoggedIn { from: 3 }"], "asked by number, by name");
    let events = to_client(&mut client, &down, 5, 10);
    let seqs: Vec<&String> = events
        .iter()
        .filter(|e| e.starts_with("Sequenced"))
        .collect();
    assert_eq!(seqs.len(), 3, "{events:?}");
    assert!(seqs[0].contains("seq: 3"), "{seqs:?}");
    assert_eq!(client.next_seq(), 6);
    assert_eq!(client.skipped(), 0);
    // Messages after login go out as they come.
    let n = stream.push(b"m6");
    let mut down = Vec::new();
    server.catch_up(11, &stream, &mut down);
    let events = to_client(&mut client, &down, 4096, 11);
    assert_eq!(
        events,
        [format!("Sequenced {{ seq: {n}, message: {:?} }}", b"m6")]
    );
}

/// A message the application refuses (a forgery in the stream) ends the connection, and the
/// next login asks for it again: the server's own message at that number comes in its place.
#[test]
fn a_refused_message_is_asked_for_again_on_the_next_login() {
    let stream = stream_of(5);
    let mut server = Server::new(server_config(), 0);
    let mut client = Client::new(client_config());
    let mut out = Vec::new();
    client.connect(0, &mut out);
    let (_, down) = to_server(&mut server, &stream, &out, 4096, 0);
    // The client reads 1 and 2, refuses 3 (as if its bytes were a forger's), and reads no more.
    let space = client.read_into();
    space[..down.len()].copy_from_slice(&down);
    client.filled(down.len(), 0);
    assert!(matches!(client.poll(), Some(ClientEvent::LoggedIn { .. })));
    for want in 1..=3 {
        let Some(ClientEvent::Sequenced { seq, .. }) = client.poll() else {
            panic!("message {want}")
        };
        assert_eq!(seq, want);
    }
    client.refuse(3);
    assert_eq!(client.state(), ClientState::Disconnected);
    assert!(
        client.poll().is_none(),
        "nothing more from the refused connection"
    );
    assert_eq!(client.next_seq(), 3);
    let mut server = Server::new(server_config(), 10);
    let mut out = Vec::new();
    client.connect(10, &mut out);
    let (events, down) = to_server(&mut server, &stream, &out, 4096, 10);
    assert_eq!(events, ["LoggedIn { from: 3 }"]);
    let events = to_client(&mut client, &down, 4096, 10);
    assert!(
        events[1].contains("seq: 3") && events[1].contains(&format!("{:?}", b"m3")),
        "{events:?}"
    );
    assert_eq!(client.next_seq(), 6);
}

#[test]
fn asking_for_0_or_beyond_the_end_starts_at_the_end() {
    let stream = stream_of(4);
    for (asked, from) in [(0, 5), (99, 5), (2, 2)] {
        let mut server = Server::new(server_config(), 0);
        let mut login = Vec::new();
        Repr::LoginRequest {
            username: *b"TRADER",
            password: *b"secret    ",
            session: Session::CURRENT,
            sequence: asked,
        }
        .emit_into({
            login.resize(49, 0);
            &mut login
        })
        .unwrap();
        let (events, _) = to_server(&mut server, &stream, &login, 4096, 0);
        assert_eq!(
            events,
            [format!("LoggedIn {{ from: {from} }}")],
            "asked {asked}"
        );
    }
}

#[test]
fn bad_credentials_and_a_foreign_session_are_rejected_with_the_spec_reasons() {
    let stream = Stream::new();
    let cases = [
        (
            *b"TRADER",
            *b"wrong     ",
            Session::CURRENT,
            "NotAuthorized",
            b'A',
        ),
        (
            *b"INTRDR",
            *b"secret    ",
            Session::CURRENT,
            "NotAuthorized",
            b'A',
        ),
        (
            *b"TRADER",
            *b"secret    ",
            Session::new("OTHER").unwrap(),
            "SessionNotAvailable",
            b'S',
        ),
    ];
    for (username, password, session, why, code) in cases {
        let mut server = Server::new(server_config(), 0);
        let mut client = Client::new(ClientConfig {
            session,
            ..ClientConfig::new(username, password)
        });
        let mut out = Vec::new();
        client.connect(0, &mut out);
        let (events, down) = to_server(&mut server, &stream, &out, 4096, 0);
        assert_eq!(events, [format!("LoginRefused({why})")]);
        assert_eq!(down, [0, 2, b'J', code]);
        assert_eq!(server.state(), ServerState::Closed);
        assert_eq!(
            to_client(&mut client, &down, 1, 0),
            [format!("Rejected({why})")]
        );
        assert_eq!(client.state(), ClientState::Disconnected);
    }
}

#[test]
fn heartbeats_after_a_silent_second_and_the_dead_peer_timeout() {
    let stream = Stream::new();
    let mut server = Server::new(server_config(), 0);
    let mut client = Client::new(client_config());
    let mut up = Vec::new();
    client.connect(0, &mut up);
    let (_, down) = to_server(&mut server, &stream, &up, 4096, 0);
    to_client(&mut client, &down, 4096, 0);
    // Just under a second: nothing; at a second: one heartbeat each way.
    let mut out = Vec::new();
    assert_eq!(server.tick(S - 1, &mut out), None);
    assert!(out.is_empty());
    assert_eq!(server.tick(S, &mut out), None);
    assert_eq!(out, [0, 1, b'H']);
    let mut up = Vec::new();
    assert_eq!(client.tick(S, &mut up), None);
    assert_eq!(up, [0, 1, b'R']);
    // The client's heartbeat keeps the server's timer fresh; the server's, the client's.
    let (events, _) = to_server(&mut server, &stream, &up, 4096, S);
    assert!(events.is_empty(), "a heartbeat is no event: {events:?}");
    to_client(&mut client, &out, 4096, S);
    let silent_from = S;
    let mut sink = Vec::new();
    assert_eq!(server.tick(silent_from + PEER_TIMEOUT_NS, &mut sink), None);
    assert_eq!(
        server.tick(silent_from + PEER_TIMEOUT_NS + 1, &mut sink),
        Some(ServerEvent::PeerSilent)
    );
    assert_eq!(server.state(), ServerState::Closed);
    assert_eq!(
        client.tick(silent_from + PEER_TIMEOUT_NS + 1, &mut sink),
        Some(ClientEvent::ServerSilent)
    );
    assert_eq!(client.state(), ClientState::Disconnected);
    // A connection that never logs in is given up after the same time.
    let mut idle = Server::new(server_config(), 0);
    assert_eq!(
        idle.tick(PEER_TIMEOUT_NS + 1, &mut sink),
        Some(ServerEvent::PeerSilent)
    );
}

#[test]
fn end_of_session_after_what_was_owed_and_logout() {
    let mut stream = stream_of(1);
    let mut server = Server::new(server_config(), 0);
    let mut client = Client::new(client_config());
    let mut up = Vec::new();
    client.connect(0, &mut up);
    let (_, down) = to_server(&mut server, &stream, &up, 4096, 0);
    to_client(&mut client, &down, 4096, 0);
    stream.push(b"last");
    let mut down = Vec::new();
    server.end_session(1, &stream, &mut down);
    let events = to_client(&mut client, &down, 3, 1);
    assert_eq!(
        events,
        [
            format!("Sequenced {{ seq: 2, message: {:?} }}", b"last"),
            "EndOfSession".to_string()
        ]
    );
    let mut up = Vec::new();
    client.logout(2, &mut up);
    assert_eq!(up, [0, 1, b'O']);
    assert_eq!(client.state(), ClientState::Disconnected);
    let (events, _) = to_server(&mut server, &stream, &up, 4096, 2);
    assert_eq!(events, ["LoggedOut"]);
    assert_eq!(server.state(), ServerState::Closed);
    assert!(
        !client.send(3, b"late", &mut up),
        "nothing is sent logged out"
    );
}

#[test]
fn bad_frames_and_misplaced_packets_end_the_connection_and_say_why() {
    let stream = Stream::new();
    let cases: [(&[u8], &str); 5] = [
        (&[0, 1, b'U'], "Unexpected { kind: 85 }"),
        (&[0, 1, b'H'], "Unexpected { kind: 72 }"),
        (&[0, 0], "Malformed(EmptyPacket)"),
        (
            &[0, 2, b'R', 0],
            "Malformed(PacketLength { kind: 82, expected: 0, got: 1 })",
        ),
        (
            &[0xff, 0xff, b'U'],
            "Malformed(PacketTooLong { len: 65537, max: 4096 })",
        ),
    ];
    for (bytes, want) in cases {
        let mut server = Server::new(server_config(), 0);
        let (events, _) = to_server(&mut server, &stream, bytes, 4096, 0);
        assert_eq!(events, [want], "{bytes:?}");
        assert_eq!(server.state(), ServerState::Closed);
        // Nothing more comes from a closed connection, whatever follows.
        let (events, _) = to_server(&mut server, &stream, &[0, 1, b'R'], 4096, 0);
        assert!(events.is_empty());
    }
    // A second login on a logged-in connection.
    let mut server = Server::new(server_config(), 0);
    let mut client = Client::new(client_config());
    let mut up = Vec::new();
    client.connect(0, &mut up);
    client.connect(0, &mut up);
    let (events, _) = to_server(&mut server, &stream, &up, 4096, 0);
    assert_eq!(events, ["LoggedIn { from: 1 }", "Unexpected { kind: 76 }"]);
    // The client refuses a client's packet from the server.
    let mut client = Client::new(client_config());
    let mut sink = Vec::new();
    client.connect(0, &mut sink);
    assert_eq!(
        to_client(&mut client, &[0, 1, b'R'], 1, 0),
        ["Unexpected { kind: 82 }"]
    );
}

#[test]
fn a_login_accepted_below_the_next_expected_number_ends_the_connection() {
    let mut client = Client::new(client_config());
    let mut up = Vec::new();
    client.connect(0, &mut up);
    let stream = stream_of(3);
    let mut server = Server::new(server_config(), 0);
    let (_, down) = to_server(&mut server, &stream, &up, 4096, 0);
    to_client(&mut client, &down, 4096, 0);
    assert_eq!(client.next_seq(), 4);
    // A server that restarted its stream and answers a login from 4 at 2.
    client.disconnected();
    client.connect(1, &mut up);
    let mut bytes = [0u8; 64];
    let n = Repr::LoginAccepted {
        session: Session::new("LAB0000001").unwrap(),
        sequence: 2,
    }
    .emit_into(&mut bytes)
    .unwrap();
    assert_eq!(
        to_client(&mut client, &bytes[..n], 4096, 1),
        ["Rewound { expected: 4, got: 2 }"]
    );
    assert_eq!(client.state(), ClientState::Disconnected);
    assert_eq!(client.next_seq(), 4, "nothing counted twice");
}

#[test]
fn a_digest_is_the_streams_whatever_its_chunks() {
    let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    let mut whole = crate::Digest::default();
    whole.add(&bytes);
    for cut in [1, 7, 333, 999] {
        let mut parts = crate::Digest::default();
        parts.add(&bytes[..cut]);
        parts.add(&bytes[cut..]);
        assert_eq!(parts, whole, "cut at {cut}");
    }
    let mut other = bytes.clone();
    other[500] ^= 1;
    let mut changed = crate::Digest::default();
    changed.add(&other);
    assert_eq!(changed.bytes, whole.bytes);
    assert_ne!(changed.hash, whole.hash, "one bit changed");
    // FNV-1a's published value for "a".
    let mut a = crate::Digest::default();
    a.add(b"a");
    assert_eq!(a.hash, 0xaf63_dc4c_8601_ec8c);
}
