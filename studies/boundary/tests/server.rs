//! The server over real sockets: every opcode, bad frames, many clients, the socket's mode.
//! Nothing here depends on timing: every wait is for a reply or a closed connection.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use {
    affinity as _, anyhow as _, clap as _, hdrhistogram as _, paths as _, proptest as _,
    results as _, serde as _, serde_json as _, signal_hook as _, thiserror as _, tokio as _,
};

use boundary::client::{Client, Handle, spawn_sweep};
use boundary::proto::{self, ErrorCode, Opcode};
use boundary::server::{Config, Endpoint, Runtime, Server};
use engine::{ComboResult, Params};

/// A fresh directory under the system temp dir, removed on drop (also after a panic).
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("bnd-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("create {}: {e}", p.display()));
        Self(p)
    }
    fn sock(&self) -> PathBuf {
        self.0.join("engine.sock")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A small workload: fast in a debug build, still thousands of trades.
fn workload() -> (Vec<f64>, Vec<Params>) {
    let close = engine::data::gbm(42, 2_000);
    let grid = [6, 11, 30, 57]
        .into_iter()
        .map(|n| Params::from_n(n).expect("valid n"))
        .collect();
    (close, grid)
}

fn expected(close: &[f64], grid: &[Params]) -> Vec<ComboResult> {
    engine::sweep::sweep(close, grid, 1).expect("in-process sweep")
}

/// The default server configuration on runtime `rt`.
fn cfg(rt: Runtime) -> Config {
    Config {
        runtime: rt,
        ..Config::default()
    }
}

fn uds_server(dir: &TempDir, rt: Runtime) -> Server {
    Server::bind_uds(dir.sock(), cfg(rt)).expect("bind the socket")
}

fn tcp_server(rt: Runtime) -> Server {
    Server::bind_tcp(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), cfg(rt)).expect("bind tcp")
}

/// Every test of a server, once on each way of serving it: the same protocol, the same
/// answers, the same error replies, whatever waits on the connections.
macro_rules! on_every_runtime {
    ($($name:ident),* $(,)?) => {
        mod threads {
            $(#[test] fn $name() { super::$name(boundary::server::Runtime::Threads) })*
        }
        mod tokio_current_thread {
            $(#[test] fn $name() { super::$name(boundary::server::Runtime::TokioCurrentThread) })*
        }
        mod tokio_multi_thread {
            $(#[test] fn $name() {
                super::$name(boundary::server::Runtime::TokioMultiThread { workers: 2 })
            })*
        }
    };
}

on_every_runtime!(
    every_opcode_over_uds,
    every_opcode_over_tcp_on_loopback,
    socket_is_owner_only_and_removed_on_shutdown,
    stale_socket_is_replaced_and_a_live_one_is_not,
    bad_frames_get_error_replies_and_others_stay_served,
    thirty_two_concurrent_clients_get_correct_answers,
    busy_server_refuses_with_an_error_reply,
    spinning_ends_give_the_same_answers,
    serve_removes_its_socket_on_sigterm_and_sigint,
);

fn code_of(e: &boundary::Error) -> Option<ErrorCode> {
    e.remote_code()
}

fn every_opcode(client: &mut Client) {
    let (close, grid) = workload();
    let want = expected(&close, &grid);
    assert!(want[0].trades > 100, "the workload trades: {want:?}");
    assert_eq!(client.sweep(&close, &grid).expect("sweep"), want);
    assert_eq!(client.echo(&close).expect("echo"), close);
    assert_eq!(client.echo(&[]).expect("empty echo"), Vec::<f64>::new());
    let h = client.load(&close).expect("load");
    for (p, w) in grid.iter().zip(&want) {
        assert_eq!(client.sweep_handle(h, &[*p]).expect("sweep_handle"), [*w]);
    }
    assert_eq!(client.sweep_handle(h, &grid).expect("sweep_handle"), want);
    client.free(h).expect("free");
    let e = client.sweep_handle(h, &grid).expect_err("freed");
    assert_eq!(code_of(&e), Some(ErrorCode::UnknownHandle), "{e}");
    assert_eq!(client.sweep(&close, &[]).expect("no combos"), []);
}

fn every_opcode_over_uds(rt: Runtime) {
    let dir = TempDir::new("ops");
    let server = uds_server(&dir, rt);
    every_opcode(&mut Client::connect_uds(dir.sock()).expect("connect"));
    server.shutdown();
}

fn every_opcode_over_tcp_on_loopback(rt: Runtime) {
    let server = tcp_server(rt);
    let Endpoint::Tcp(addr) = *server.endpoint() else {
        panic!("not tcp")
    };
    assert!(addr.ip().is_loopback());
    every_opcode(&mut Client::connect_tcp(addr).expect("connect"));
}

fn socket_is_owner_only_and_removed_on_shutdown(rt: Runtime) {
    let dir = TempDir::new("mode");
    let server = uds_server(&dir, rt);
    let md = std::fs::symlink_metadata(dir.sock()).expect("socket exists");
    assert!(md.file_type().is_socket());
    assert_eq!(md.permissions().mode() & 0o777, 0o600);
    // Nothing but the socket is left beside it (the private bind directory is gone).
    let names: Vec<_> = std::fs::read_dir(&dir.0)
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["engine.sock"]);
    server.shutdown();
    assert!(!dir.sock().exists(), "socket removed on shutdown");
}

fn stale_socket_is_replaced_and_a_live_one_is_not(rt: Runtime) {
    let dir = TempDir::new("stale");
    let live = uds_server(&dir, rt);
    assert!(matches!(
        Server::bind_uds(dir.sock(), cfg(rt)),
        Err(boundary::Error::PathInUse { .. })
    ));
    drop(live);
    // A stale socket: bound, then its listener dropped without removing the file.
    drop(std::os::unix::net::UnixListener::bind(dir.sock()).expect("bind"));
    assert!(dir.sock().exists());
    let server = uds_server(&dir, rt);
    let mut c = Client::connect_uds(dir.sock()).expect("connect");
    assert_eq!(c.echo(&[1.0]).expect("echo"), [1.0]);
    server.shutdown();
    // A regular file is never removed.
    std::fs::write(dir.sock(), b"not a socket").expect("write");
    assert!(matches!(
        Server::bind_uds(dir.sock(), cfg(rt)),
        Err(boundary::Error::PathInUse { .. })
    ));
}

fn assert_served(c: &mut Client) {
    let (close, grid) = workload();
    assert_eq!(
        c.sweep(&close, &grid).expect("sweep"),
        expected(&close, &grid)
    );
}

fn series_header(op: u8, len: u32, n_bars: u32, n_combos: u32) -> Vec<u8> {
    let mut b = len.to_le_bytes().to_vec();
    b.push(op);
    b.extend_from_slice(&n_bars.to_le_bytes());
    b.extend_from_slice(&n_combos.to_le_bytes());
    b
}

fn bad_frames_get_error_replies_and_others_stay_served(rt: Runtime) {
    let dir = TempDir::new("bad");
    let server = uds_server(&dir, rt);
    let connect = || Client::connect_uds(dir.sock()).expect("connect");
    // A bystander connected before any garbage, and one that stalls mid-frame throughout.
    let mut bystander = connect();
    let mut staller = connect();
    staller
        .send_raw(&series_header(0, 9 + 8 * 1000, 1000, 0))
        .expect("half a frame");

    // Over the cap: error reply, then the server closes (it cannot find the next frame).
    let mut c = connect();
    let (code, msg) = c
        .raw(&u32::MAX.to_le_bytes())
        .expect("a reply")
        .expect_err("an error reply");
    assert_eq!(code, ErrorCode::FrameTooLarge as u16, "{msg}");
    assert!(c.is_closed_by_server());
    assert_served(&mut bystander);

    // Counts that disagree with the length (claims 1,000 bars, carries 10): skipped, and the
    // same connection goes on.
    let mut c = connect();
    let mut f = series_header(0, 9 + 80, 1000, 0);
    f.extend_from_slice(&[0; 80]);
    let (code, _) = c.raw(&f).expect("a reply").expect_err("an error reply");
    assert_eq!(code, ErrorCode::BadLength as u16);
    // n_combos that disagree: 2 bars and "3 combos", but no combo bytes.
    let mut f = series_header(0, 9 + 16, 2, 3);
    f.extend_from_slice(&[0; 16]);
    let (code, _) = c.raw(&f).expect("a reply").expect_err("an error reply");
    assert_eq!(code, ErrorCode::BadLength as u16);
    assert_served(&mut c);

    // Unknown opcode: skipped, the connection goes on.
    let (code, _) = c
        .raw(&[3, 0, 0, 0, 0xEE, 1, 2])
        .expect("a reply")
        .expect_err("an error reply");
    assert_eq!(code, ErrorCode::UnknownOpcode as u16);
    assert_served(&mut c);

    // Unknown handle, on a connection that never loaded anything, and another's handle.
    let h = bystander.load(&[1.0, 2.0]).expect("load");
    let e = c
        .sweep_handle(h, &workload().1)
        .expect_err("not this connection's");
    assert_eq!(code_of(&e), Some(ErrorCode::UnknownHandle));
    let e = c
        .sweep_handle(Handle(u64::MAX), &workload().1)
        .expect_err("unknown");
    assert_eq!(code_of(&e), Some(ErrorCode::UnknownHandle));
    assert_served(&mut c);

    // Truncated: claims 200 MiB, sends a few bytes, ends the stream. The server replies
    // TRUNCATED (the unit tests show it holds only what arrived) and closes.
    let mut c = connect();
    let n_bars = 25 << 20;
    let mut f = series_header(0, 9 + 8 * n_bars, n_bars, 0);
    f.extend_from_slice(&[0x40; 64]);
    c.send_raw(&f).expect("send");
    c.shutdown_write().expect("shutdown");
    let (code, msg) = c.recv_raw().expect("a reply").expect_err("an error reply");
    assert_eq!(code, ErrorCode::Truncated as u16, "{msg}");
    assert!(c.is_closed_by_server());

    // Invalid windows (0), written by hand.
    let mut c = connect();
    let mut f = Vec::new();
    proto::encode_series(&mut f, Opcode::Sweep, &[1.0, 2.0], &workload().1[..1]);
    f[4 + 9 + 16..4 + 9 + 24].copy_from_slice(&0_i64.to_le_bytes());
    let (code, _) = c.raw(&f).expect("a reply").expect_err("an error reply");
    assert_eq!(code, ErrorCode::InvalidParams as u16);

    // Through all of it, the bystander and new clients are served, the staller still waits.
    assert_served(&mut bystander);
    assert_served(&mut connect());
    assert_eq!(server.stats().io_errors, 0);
    // Shutdown closes the staller's connection too, instead of waiting for it forever.
    server.shutdown();
    assert!(staller.is_closed_by_server());
}

fn thirty_two_concurrent_clients_get_correct_answers(rt: Runtime) {
    let dir = TempDir::new("many");
    let server = uds_server(&dir, rt);
    let tcp = tcp_server(rt);
    let Endpoint::Tcp(addr) = *tcp.endpoint() else {
        panic!("not tcp")
    };
    let (close, grid) = workload();
    let want = expected(&close, &grid);
    let barrier = std::sync::Barrier::new(32);
    std::thread::scope(|s| {
        for i in 0..32_usize {
            let (close, grid, want, barrier, sock) = (&close, &grid, &want, &barrier, dir.sock());
            s.spawn(move || {
                let mut c = if i % 4 == 3 {
                    Client::connect_tcp(addr).expect("connect tcp")
                } else {
                    Client::connect_uds(&sock).expect("connect uds")
                };
                // Every client connected before any sends: 32 connections open at once.
                barrier.wait();
                // Each client its own slice of the series, so a mixed-up reply would show.
                let mine = &close[i * 10..];
                let mine_want = expected(mine, grid);
                assert_eq!(c.sweep(mine, grid).expect("sweep"), mine_want, "client {i}");
                let h = c.load(close).expect("load");
                for (k, p) in grid.iter().enumerate() {
                    let got = c.sweep_handle(h, &[*p]).expect("sweep_handle");
                    assert_eq!(got, [want[k]], "client {i} combo {k}");
                }
                assert_eq!(c.echo(mine).expect("echo"), mine, "client {i}");
            });
        }
    });
    assert_eq!(server.stats().accepted + tcp.stats().accepted, 32);
    server.shutdown();
}

fn busy_server_refuses_with_an_error_reply(rt: Runtime) {
    let dir = TempDir::new("busy");
    let server = Server::bind_uds(
        dir.sock(),
        Config {
            max_connections: 1,
            ..cfg(rt)
        },
    )
    .expect("bind");
    let mut first = Client::connect_uds(dir.sock()).expect("connect");
    assert_eq!(first.echo(&[1.0]).expect("echo"), [1.0]);
    let mut second = Client::connect_uds(dir.sock()).expect("connect");
    let (code, _) = second.recv_raw().expect("a reply").expect_err("busy");
    assert_eq!(code, ErrorCode::Busy as u16);
    assert_eq!(first.echo(&[2.0]).expect("still served"), [2.0]);
    server.shutdown();
}

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_boundary"))
}

#[test]
fn spawn_per_call_mode() {
    let (close, grid) = workload();
    let got = spawn_sweep(exe(), 1, &close, &grid).expect("spawned sweep");
    assert_eq!(got, expected(&close, &grid));
}

#[test]
fn spawn_mode_reports_a_bad_request() {
    let out = std::process::Command::new(exe())
        .arg("serve-stdio")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run");
    assert!(!out.status.success());
    // The error reply still comes out on stdout.
    assert_eq!(out.stdout.get(3).map(|b| b & 0x80), Some(0x80), "{out:?}");
}

/// Bit 31 of a reply's length word marks an error reply, so no cap may let a success reply
/// reach it.
#[test]
fn a_frame_cap_of_two_gib_or_more_is_refused() {
    for mode in ["serve-stdio", "serve"] {
        let out = std::process::Command::new(exe())
            .args([mode, "--max-frame", "2147483648"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{mode}");
        assert!(stderr.contains("--max-frame"), "{mode}: {stderr}");
    }
}

fn spinning_ends_give_the_same_answers(rt: Runtime) {
    let dir = TempDir::new("spin");
    let spin = std::time::Duration::from_micros(100);
    let server = Server::bind_uds(dir.sock(), Config { spin, ..cfg(rt) }).expect("bind");
    let mut c = Client::connect_uds(dir.sock()).expect("connect");
    c.set_spin(spin).expect("spin");
    // Big enough that both ends' non-blocking writes fill the socket buffer and wait.
    let close = engine::data::gbm(1, 150_000);
    for _ in 0..3 {
        assert_eq!(c.echo(&close).expect("echo"), close);
    }
    assert_served(&mut c);
    c.set_spin(std::time::Duration::ZERO).expect("block");
    assert_served(&mut c);
    server.shutdown();
}

/// `boundary serve` on each runtime: ready, serving, and on SIGTERM or SIGINT gone with its
/// socket removed and a zero exit.
fn serve_removes_its_socket_on_sigterm_and_sigint(rt: Runtime) {
    use std::io::BufRead as _;
    for signal in ["TERM", "INT"] {
        let dir = TempDir::new("sig");
        let mut child = std::process::Command::new(exe())
            .args(["serve", "--runtime", rt.name(), "--uds"])
            .arg(dir.sock())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start boundary serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = std::io::BufReader::new(stdout).lines();
        let ready = lines
            .by_ref()
            .map(|l| l.expect("a line"))
            .find(|l| l.starts_with("ready"));
        assert!(
            ready.is_some_and(|l| l.contains(rt.name())),
            "{rt}: no ready line"
        );
        let mut c = Client::connect_uds(dir.sock()).expect("connect");
        assert_eq!(c.echo(&[1.5]).expect("echo"), [1.5]);
        // An open connection must not hold the shutdown up.
        let killed = std::process::Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(killed.success());
        let status = child.wait().expect("wait");
        assert!(status.success(), "{rt} SIG{signal}: {status}");
        assert!(c.is_closed_by_server(), "{rt} SIG{signal}");
        assert!(!dir.sock().exists(), "{rt} SIG{signal}: socket left behind");
    }
}

/// A small deterministic generator (xorshift64*), so a failing stream can be rebuilt from its
/// seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A stream of frames, good and bad, as a client might send them: echoes, sweeps, loads,
/// handle sweeps and frees, and every kind of lie the protocol names, ending (sometimes) in a
/// frame cut short.
fn mixed_stream(seed: u64) -> Vec<u8> {
    let mut r = Rng(seed | 1);
    let close = engine::data::gbm(seed, 40);
    let p = [Params::from_n(6).expect("valid")];
    let mut s = Vec::new();
    for _ in 0..(4 + r.below(12)) {
        let n = r.below(12) as usize;
        match r.below(12) {
            0 => proto::encode_series(&mut s, Opcode::Echo, &close[..n], &[]),
            1 => proto::encode_series(&mut s, Opcode::Sweep, &close[..10 + n], &p),
            2 => proto::encode_series(&mut s, Opcode::Load, &close[..n], &[]),
            3 => proto::encode_sweep_handle(&mut s, r.below(3), &p),
            4 => proto::encode_free(&mut s, r.below(3)),
            // Counts that disagree with the length.
            5 => {
                let mut f = series_header(0, 9 + 8 * n as u32, n as u32 + 1, 0);
                f.extend(std::iter::repeat_n(0x3f, 8 * n));
                s.extend(f);
            }
            // An unknown opcode with a body of its own.
            6 => {
                s.extend((1 + n as u32).to_le_bytes());
                s.push(5 + r.below(250) as u8);
                s.extend(std::iter::repeat_n(0xAB, n));
            }
            // A zero length word.
            7 => s.extend(0_u32.to_le_bytes()),
            // A window of 0.
            8 => {
                let at = s.len() + 4 + 9 + 16;
                proto::encode_series(&mut s, Opcode::Sweep, &close[..2], &p);
                s[at..at + 8].copy_from_slice(&0_i64.to_le_bytes());
            }
            // LOAD with combos.
            9 => proto::encode_series(&mut s, Opcode::Load, &close[..n], &p),
            // Long bad frames, skipped across many reads: an unknown opcode with a 100 KB
            // body, and counts that disagree with a 150 KB length.
            10 if r.below(2) == 0 => {
                let body = 100_000 + r.below(1_000) as u32;
                s.extend(body.to_le_bytes());
                s.push(200);
                s.extend(std::iter::repeat_n(0x5A, body as usize - 1));
            }
            10 => {
                let bars = 150_000 / 8;
                let mut f = series_header(1, 9 + 8 * bars, bars + 7, 0);
                f.extend(std::iter::repeat_n(0x3f, 8 * bars as usize));
                s.extend(f);
            }
            // A header too short for its opcode.
            _ => {
                s.extend(5_u32.to_le_bytes());
                s.extend([3, 0, 0, 0, 0]);
            }
        }
    }
    match r.below(4) {
        // Cut inside a frame: the server must say TRUNCATED.
        0 => {
            let mut f = Vec::new();
            proto::encode_series(&mut f, Opcode::Echo, &close[..8], &[]);
            s.extend(&f[..1 + r.below(f.len() as u64 - 1) as usize]);
        }
        // Cut while a long bad frame is being skipped: TRUNCATED too.
        1 => {
            s.extend(200_000_u32.to_le_bytes());
            s.push(77);
            s.extend(std::iter::repeat_n(0, 70_000 + r.below(10_000) as usize));
        }
        // Over the cap: FRAME_TOO_LARGE, then the server closes and answers nothing after it
        // (a long frame follows, more than one read can take with the fatal word).
        2 => {
            s.extend(u32::MAX.to_le_bytes());
            let long = engine::data::gbm(seed, 20_000);
            proto::encode_series(&mut s, Opcode::Echo, &long, &[]);
        }
        _ => {}
    }
    s
}

/// Sends `stream` on a fresh connection to `sock` in chunks of `seed`-chosen sizes (1 byte to
/// 8 KiB, so frames arrive split at every place), ends the writing side, and returns every
/// byte the server answered until it closed.
fn replies(sock: &Path, stream: &[u8], seed: u64) -> Vec<u8> {
    use std::io::{Read as _, Write as _};
    let mut c = std::os::unix::net::UnixStream::connect(sock).expect("connect");
    let mut w = c.try_clone().expect("clone");
    let stream = stream.to_vec();
    let writer = std::thread::spawn(move || {
        let mut r = Rng(seed.wrapping_mul(31) | 1);
        let mut at = 0;
        while at < stream.len() {
            let n = (1 + r.below(8_192) as usize).min(stream.len() - at);
            // The server may close first (a fatal frame): what it did not read is not an error.
            if w.write_all(&stream[at..at + n]).is_err() {
                break;
            }
            at += n;
            std::thread::yield_now();
        }
        let _ = w.shutdown(std::net::Shutdown::Write);
    });
    let mut out = Vec::new();
    match c.read_to_end(&mut out) {
        Ok(_) => {}
        // The server closed with bytes of ours unread (after a fatal frame): a Unix socket
        // delivers what it sent before that, then the reset instead of the end of the stream.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("read the replies: {e}"),
    }
    writer.join().expect("writer");
    out
}

/// The three runtimes answer the same byte streams, good and bad frames mixed, with the same
/// bytes, error replies included, and close at the same point.
#[test]
fn every_runtime_answers_the_same_streams_byte_for_byte() {
    let runtimes = [
        Runtime::Threads,
        Runtime::TokioCurrentThread,
        Runtime::TokioMultiThread { workers: 2 },
    ];
    let dirs: Vec<TempDir> = runtimes.iter().map(|_| TempDir::new("same")).collect();
    let servers: Vec<Server> = runtimes
        .iter()
        .zip(&dirs)
        .map(|(&rt, d)| uds_server(d, rt))
        .collect();
    let mut codes = std::collections::BTreeSet::new();
    for seed in 1..=64_u64 {
        let stream = mixed_stream(seed);
        let want = replies(&dirs[0].sock(), &stream, seed);
        assert!(!want.is_empty(), "seed {seed}: no reply at all");
        let got = error_codes(&want);
        // Nothing is answered after a reply that closes the connection.
        if let Some(k) = got
            .iter()
            .position(|&c| c == ErrorCode::FrameTooLarge as u16 || c == ErrorCode::Truncated as u16)
        {
            assert_eq!(k, got.len() - 1, "seed {seed}: replies after a fatal frame");
            assert!(
                want_closes_last(&want),
                "seed {seed}: the fatal reply is not the last"
            );
        }
        codes.extend(got);
        for (rt, d) in runtimes.iter().zip(&dirs).skip(1) {
            // Chunked differently for each server: the answers must not depend on it.
            let other = replies(&d.sock(), &stream, seed ^ 0xA5A5);
            assert_eq!(other, want, "seed {seed}: {rt}");
        }
    }
    // The streams exercised every error reply a request can earn on its own connection.
    let want_codes = [
        ErrorCode::FrameTooLarge,
        ErrorCode::Truncated,
        ErrorCode::BadLength,
        ErrorCode::UnknownOpcode,
        ErrorCode::UnknownHandle,
        ErrorCode::InvalidParams,
    ];
    for c in want_codes {
        assert!(
            codes.contains(&(c as u16)),
            "{c:?} never came up: {codes:?}"
        );
    }
    drop(servers);
}

/// Whether the last reply in a stream of replies is an error reply.
fn want_closes_last(mut replies: &[u8]) -> bool {
    let mut last_is_error = false;
    while let Some(word) = replies.first_chunk::<4>() {
        let raw = u32::from_le_bytes(*word);
        let len = (raw & 0x7FFF_FFFF) as usize;
        last_is_error = raw & 0x8000_0000 != 0;
        replies = &replies[4 + len..];
    }
    last_is_error
}

/// The codes of the error replies (every reply's code, successes as 0) in a stream of
/// replies.
fn error_codes(mut replies: &[u8]) -> Vec<u16> {
    let mut codes = Vec::new();
    while let Some(word) = replies.first_chunk::<4>() {
        let raw = u32::from_le_bytes(*word);
        let len = (raw & 0x7FFF_FFFF) as usize;
        let body = &replies[4..4 + len];
        codes.push(if raw & 0x8000_0000 != 0 {
            u16::from_le_bytes([body[0], body[1]])
        } else {
            0
        });
        replies = &replies[4 + len..];
    }
    codes
}
