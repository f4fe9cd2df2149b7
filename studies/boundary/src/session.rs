//! One connection's session, whatever serves it (a thread of the server's, a task on a tokio
//! runtime, or one request on stdin): the configuration ([`Config`], [`Runtime`]), the
//! connection's state and answers ([`Session`]), serving a stream or stdin with them, and what
//! every way of serving shares: the `Busy` reply, what counts as the peer going away, and the
//! counters the server keeps.
use std::collections::HashMap;
use std::io::{self, BufReader, Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::AtomicU64;

use engine::{ComboResult, Params};

use crate::proto::{self, ErrorCode, ReadError, Request};

/// What a server allows and how it sweeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Threads of one sweep (the engine's `threads`). Default 1: the per-call comparison with
    /// an in-process sweep is only fair at equal threads, and 1 leaves the other core of a
    /// 2-core machine to the client.
    pub threads: usize,
    /// Cap on a request's length word ([`proto::DEFAULT_MAX_FRAME`]).
    pub max_frame: u32,
    /// Series one connection may hold at once.
    pub max_handles: usize,
    /// Bytes of series one connection may hold at once.
    pub max_loaded_bytes: u64,
    /// Connections served at once; one more gets a `Busy` error reply and is closed.
    pub max_connections: usize,
    /// How long a connection's thread spins on an empty socket before it blocks (zero: it
    /// blocks at once). Spinning saves the wake-up on a small request; see `spin.rs`.
    pub spin: std::time::Duration,
    /// Pin every connection's thread to this CPU (with `spin`: the latency setting); with a
    /// tokio runtime, every thread of the runtime.
    pub cpu: Option<usize>,
    /// How connections are served: a thread each, or tasks on a tokio runtime.
    pub runtime: Runtime,
}

/// How a server waits on its connections. The protocol, the answers and the limits are the
/// same in each; only the waiting differs (what the boundary study measures).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Runtime {
    /// A thread per connection, blocking in `read` (or spinning first, see [`Config::spin`]).
    #[default]
    Threads,
    /// One tokio task per connection on a current-thread runtime: one thread polls every
    /// connection; sweeps run on the runtime's blocking pool.
    TokioCurrentThread,
    /// One tokio task per connection on a multi-thread (work-stealing) runtime of `workers`
    /// threads; sweeps run on the runtime's blocking pool.
    TokioMultiThread {
        /// Worker threads (at least 1).
        workers: usize,
    },
}

impl Runtime {
    /// Its name on the command line and in results.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Threads => "threads",
            Self::TokioCurrentThread => "tokio-current",
            Self::TokioMultiThread { .. } => "tokio-multi",
        }
    }
}

impl std::fmt::Display for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TokioMultiThread { workers } => write!(f, "{} ({workers} workers)", self.name()),
            _ => f.write_str(self.name()),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            threads: 1,
            max_frame: proto::DEFAULT_MAX_FRAME,
            max_handles: 64,
            max_loaded_bytes: 1 << 30,
            max_connections: 256,
            spin: std::time::Duration::ZERO,
            cpu: None,
            runtime: Runtime::Threads,
        }
    }
}

/// One connection's state: its loaded series and its reusable buffers.
#[derive(Debug)]
pub struct Session {
    config: Config,
    series: HashMap<u64, Vec<f64>>,
    loaded_bytes: u64,
    next_handle: u64,
    close: Vec<f64>,
    grid: Vec<Params>,
}

impl Session {
    /// A connection's fresh state.
    #[must_use]
    pub fn new(config: Config) -> Self {
        Self {
            config,
            series: HashMap::new(),
            loaded_bytes: 0,
            next_handle: 1,
            close: Vec::new(),
            grid: Vec::new(),
        }
    }

    /// Answers one request body (without its length word): appends the reply frame to `out`.
    /// Never panics: a panic in the engine becomes an `Internal` error reply.
    pub fn handle(&mut self, body: &[u8], out: &mut Vec<u8>) {
        let req = match Request::parse(body) {
            Ok(r) => r,
            Err(e) => return proto::encode_error(out, e.code(), &e.to_string()),
        };
        match req {
            Request::Echo { close, .. } => proto::encode_bytes_reply(out, close.as_bytes()),
            Request::Sweep { close, params } => {
                close.decode_into(&mut self.close);
                if let Err(msg) = self.decode_params(params) {
                    return proto::encode_error(out, ErrorCode::InvalidParams, &msg);
                }
                let r = run_sweep(&self.close, &self.grid, self.config.threads);
                reply_sweep(out, r);
            }
            Request::Load { close, params } => {
                if !params.is_empty() {
                    let msg = format!("LOAD carries no combos, got {}", params.len());
                    return proto::encode_error(out, ErrorCode::InvalidParams, &msg);
                }
                let bytes = close.as_bytes().len() as u64;
                let Config {
                    max_handles,
                    max_loaded_bytes,
                    ..
                } = self.config;
                if self.series.len() >= max_handles || self.loaded_bytes + bytes > max_loaded_bytes
                {
                    let msg = format!(
                        "this connection holds {} series ({} bytes); limits {max_handles} series, \
                         {max_loaded_bytes} bytes: FREE some",
                        self.series.len(),
                        self.loaded_bytes
                    );
                    return proto::encode_error(out, ErrorCode::TooManyHandles, &msg);
                }
                let handle = self.next_handle;
                self.next_handle += 1;
                self.series.insert(handle, close.to_vec());
                self.loaded_bytes += bytes;
                proto::encode_handle_reply(out, handle);
            }
            Request::SweepHandle { handle, params } => {
                if !self.series.contains_key(&handle) {
                    return unknown_handle(out, handle);
                }
                if let Err(msg) = self.decode_params(params) {
                    return proto::encode_error(out, ErrorCode::InvalidParams, &msg);
                }
                let close = self.series.get(&handle).map_or(&[][..], Vec::as_slice);
                let r = run_sweep(close, &self.grid, self.config.threads);
                reply_sweep(out, r);
            }
            Request::Free { handle } => match self.series.remove(&handle) {
                Some(s) => {
                    self.loaded_bytes -= 8 * s.len() as u64;
                    proto::encode_bytes_reply(out, &[]);
                }
                None => unknown_handle(out, handle),
            },
        }
    }

    fn decode_params(&mut self, params: proto::ParamsBytes<'_>) -> Result<(), String> {
        params
            .decode_into(&mut self.grid)
            .map_err(|(i, why)| format!("combo {i}: {why}"))
    }
}

fn unknown_handle(out: &mut Vec<u8>, handle: u64) {
    let msg = format!("no series with handle {handle} on this connection");
    proto::encode_error(out, ErrorCode::UnknownHandle, &msg);
}

fn run_sweep(close: &[f64], grid: &[Params], threads: usize) -> Result<Vec<ComboResult>, String> {
    match catch_unwind(AssertUnwindSafe(|| {
        engine::sweep::sweep(close, grid, threads)
    })) {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the engine panicked on this request".to_owned()),
    }
}

fn reply_sweep(out: &mut Vec<u8>, r: Result<Vec<ComboResult>, String>) {
    match r {
        Ok(results) => proto::encode_sweep_reply(out, &results),
        Err(msg) => proto::encode_error(out, ErrorCode::Internal, &msg),
    }
}

/// Serves one connection until the peer closes it, a fatal frame error, or an I/O error.
/// Bad frames get an error reply; those after which the stream cannot be followed
/// ([`proto::FrameError::is_fatal`]) also close the connection.
///
/// # Errors
/// The I/O error that ended the connection (a peer that goes away is not one).
pub fn serve_connection<S: Read + Write>(stream: S, config: Config) -> io::Result<()> {
    // 64 KiB: a whole small request (and the next one's length word) in one read.
    let mut r = BufReader::with_capacity(64 << 10, stream);
    let mut session = Session::new(config);
    let mut body = Vec::new();
    let mut out = Vec::new();
    loop {
        out.clear();
        let fatal = match proto::read_request(&mut r, config.max_frame, &mut body) {
            Ok(None) => return Ok(()),
            Ok(Some(len)) => {
                session.handle(&body[..len], &mut out);
                false
            }
            Err(ReadError::Frame(e)) => {
                proto::encode_error(&mut out, e.code(), &e.to_string());
                e.is_fatal()
            }
            Err(ReadError::Io(e)) if is_disconnect(&e) => return Ok(()),
            Err(ReadError::Io(e)) => return Err(e),
        };
        match r.get_mut().write_all(&out) {
            Ok(()) => {}
            Err(e) if is_disconnect(&e) => return Ok(()),
            Err(e) => return Err(e),
        }
        if fatal {
            return Ok(());
        }
    }
}

/// The `Busy` error reply to a connection over the limit (it is closed after).
pub(crate) fn busy_reply(config: &Config) -> Vec<u8> {
    let mut out = Vec::new();
    let msg = format!("serving {} connections already", config.max_connections);
    proto::encode_error(&mut out, ErrorCode::Busy, &msg);
    out
}

pub(crate) fn is_disconnect(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::UnexpectedEof
    )
}

/// The spawn-per-call mode: reads one request from `input`, writes its reply to `output`.
/// Returns `true` when the reply is a success reply.
///
/// # Errors
/// When reading or writing fails.
pub fn serve_stdio(
    mut input: impl Read,
    mut output: impl Write,
    config: Config,
) -> io::Result<bool> {
    let mut r = BufReader::with_capacity(1 << 20, &mut input);
    let mut body = Vec::new();
    let mut out = Vec::new();
    match proto::read_request(&mut r, config.max_frame, &mut body) {
        Ok(Some(len)) => Session::new(config).handle(&body[..len], &mut out),
        Ok(None) => proto::encode_error(&mut out, ErrorCode::Truncated, "no request on stdin"),
        Err(ReadError::Frame(e)) => proto::encode_error(&mut out, e.code(), &e.to_string()),
        Err(ReadError::Io(e)) => return Err(e),
    }
    output.write_all(&out)?;
    output.flush()?;
    Ok(out.get(3).is_some_and(|b| b & 0x80 == 0))
}

/// The counters a server keeps of its connections, shared with whatever serves them (its
/// threads, or the tokio runtime); read as [`Stats`](crate::server::Stats).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) accepted: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) io_errors: AtomicU64,
    pub(crate) pin_errors: AtomicU64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Opcode, Reply};

    fn call(session: &mut Session, frame: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        session.handle(&frame[4..], &mut out);
        out
    }

    fn reply(out: &[u8]) -> Reply<'_> {
        assert_eq!(
            out.len(),
            4 + (u32::from_le_bytes([out[0], out[1], out[2], out[3] & 0x7F]) as usize)
        );
        if out[3] & 0x80 != 0 {
            Reply::Err {
                code: u16::from_le_bytes([out[4], out[5]]),
                message: &out[6..],
            }
        } else {
            Reply::Ok(&out[4..])
        }
    }

    #[test]
    fn session_answers_every_opcode() {
        let close = engine::data::gbm(7, 2_000);
        let grid = [
            Params::from_n(6).expect("valid"),
            Params::from_n(20).expect("valid"),
        ];
        let want = engine::sweep::sweep(&close, &grid, 1).expect("sweep");
        let mut s = Session::new(Config::default());
        let mut f = Vec::new();

        proto::encode_series(&mut f, Opcode::Sweep, &close, &grid);
        let out = call(&mut s, &f);
        let Reply::Ok(b) = reply(&out) else {
            panic!("sweep failed")
        };
        assert_eq!(proto::decode_sweep_reply(b, 2).expect("shape"), want);

        f.clear();
        proto::encode_series(&mut f, Opcode::Echo, &close[..3], &grid);
        let out = call(&mut s, &f);
        assert_eq!(
            reply(&out),
            Reply::Ok(&engine::data::to_le_bytes(&close[..3]))
        );

        f.clear();
        proto::encode_series(&mut f, Opcode::Load, &close, &[]);
        let out = call(&mut s, &f);
        assert_eq!(reply(&out), Reply::Ok(&1_u64.to_le_bytes()));

        f.clear();
        proto::encode_sweep_handle(&mut f, 1, &grid[1..]);
        let out = call(&mut s, &f);
        let Reply::Ok(b) = reply(&out) else {
            panic!("sweep_handle failed")
        };
        assert_eq!(proto::decode_sweep_reply(b, 1).expect("shape"), want[1..]);

        f.clear();
        proto::encode_free(&mut f, 1);
        assert_eq!(reply(&call(&mut s, &f)), Reply::Ok(&[]));
        let Reply::Err { code, .. } = reply(&call(&mut s, &f)) else {
            panic!("double free")
        };
        assert_eq!(code, ErrorCode::UnknownHandle as u16);
    }

    #[test]
    fn load_limits_and_bad_params() {
        let config = Config {
            max_handles: 1,
            ..Config::default()
        };
        let mut s = Session::new(config);
        let mut f = Vec::new();
        proto::encode_series(&mut f, Opcode::Load, &[1.0], &[]);
        assert!(matches!(reply(&call(&mut s, &f)), Reply::Ok(_)));
        let Reply::Err { code, .. } = reply(&call(&mut s, &f)) else {
            panic!("over limit")
        };
        assert_eq!(code, ErrorCode::TooManyHandles as u16);

        f.clear();
        proto::encode_series(
            &mut f,
            Opcode::Load,
            &[1.0],
            &[Params::from_n(6).expect("valid")],
        );
        let Reply::Err { code, .. } = reply(&call(&mut s, &f)) else {
            panic!("load with combos")
        };
        assert_eq!(code, ErrorCode::InvalidParams as u16);

        // A window of 0, written by hand (Params cannot hold it).
        f.clear();
        proto::encode_series(
            &mut f,
            Opcode::Sweep,
            &[1.0, 2.0],
            &[Params::from_n(6).expect("valid")],
        );
        let at = 4 + 9 + 16 + 16;
        f[at..at + 8].copy_from_slice(&0_i64.to_le_bytes());
        let out = call(&mut s, &f);
        let Reply::Err { code, message } = reply(&out) else {
            panic!("bad window")
        };
        assert_eq!(code, ErrorCode::InvalidParams as u16);
        assert!(String::from_utf8_lossy(message).contains("combo 0"));
    }

    #[test]
    fn stdio_mode_answers_one_request() {
        let close = engine::data::gbm(3, 500);
        let grid = [Params::from_n(8).expect("valid")];
        let mut f = Vec::new();
        proto::encode_series(&mut f, Opcode::Sweep, &close, &grid);
        let mut out = Vec::new();
        assert!(serve_stdio(&f[..], &mut out, Config::default()).expect("io"));
        let Reply::Ok(b) = reply(&out) else {
            panic!("stdio sweep failed")
        };
        assert_eq!(
            proto::decode_sweep_reply(b, 1).expect("shape"),
            engine::sweep::sweep(&close, &grid, 1).expect("sweep")
        );
        let mut out = Vec::new();
        assert!(!serve_stdio(&[7, 0][..], &mut out, Config::default()).expect("io"));
        assert!(matches!(reply(&out), Reply::Err { code: 2, .. }));
    }
}
