//! The Rust client: one connection (Unix socket or TCP), one request in flight, buffers reused
//! between calls so a call allocates nothing but its result. And [`spawn_sweep`], the
//! spawn-per-call mode.
use std::io::{BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use engine::{ComboResult, Params};

use crate::Error;
use crate::proto::{self, ErrorCode, Opcode, ReadError, Reply};
use crate::spin::Spin;
use crate::stream::Stream;

/// A series held by the server for this connection, from [`Client::load`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle(pub u64);

/// A connection to an engine server.
#[derive(Debug)]
pub struct Client {
    io: BufReader<Spin>,
    request: Vec<u8>,
    reply: Vec<u8>,
    max_frame: u32,
}

fn remote(code: u16, message: &[u8]) -> Error {
    Error::Remote {
        code,
        name: match ErrorCode::from_u16(code) {
            Some(c) => error_name(c),
            None => "unknown",
        },
        message: String::from_utf8_lossy(message).into_owned(),
    }
}

/// The name of an error code, as the README spells it.
#[must_use]
pub const fn error_name(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::FrameTooLarge => "FRAME_TOO_LARGE",
        ErrorCode::Truncated => "TRUNCATED",
        ErrorCode::BadLength => "BAD_LENGTH",
        ErrorCode::UnknownOpcode => "UNKNOWN_OPCODE",
        ErrorCode::UnknownHandle => "UNKNOWN_HANDLE",
        ErrorCode::InvalidParams => "INVALID_PARAMS",
        ErrorCode::TooManyHandles => "TOO_MANY_HANDLES",
        ErrorCode::Busy => "BUSY",
        ErrorCode::Internal => "INTERNAL",
    }
}

fn reply_error(e: ReadError, op: &str) -> Error {
    match e {
        ReadError::Frame(f) => Error::Frame(f),
        ReadError::Io(source) => Error::Io {
            op: format!("read the reply to {op}"),
            source,
        },
    }
}

impl Client {
    fn new(stream: Stream) -> Result<Self, Error> {
        let stream =
            Spin::new(stream, Duration::ZERO).map_err(Error::io("set the socket blocking"))?;
        Ok(Self {
            // Holds a small reply whole; a large one bypasses it.
            io: BufReader::with_capacity(64 << 10, stream),
            request: Vec::new(),
            reply: Vec::new(),
            max_frame: proto::DEFAULT_MAX_FRAME,
        })
    }

    /// Spins up to `budget` on an empty socket before blocking, instead of blocking at once:
    /// saves the wake-up on a small reply at the price of a busy core meanwhile (zero: block).
    ///
    /// # Errors
    /// When the socket's mode cannot be changed.
    pub fn set_spin(&mut self, budget: Duration) -> Result<(), Error> {
        self.io
            .get_mut()
            .set_budget(budget)
            .map_err(Error::io("change the socket's blocking mode"))
    }

    /// Connects to a server's Unix socket.
    ///
    /// # Errors
    /// [`Error::Io`] when connecting fails.
    pub fn connect_uds(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let s = UnixStream::connect(path)
            .map_err(Error::io(format!("connect to {}", path.display())))?;
        Self::new(Stream::Unix(s))
    }

    /// Connects to a server over TCP (Nagle off: every request goes out in one write).
    ///
    /// # Errors
    /// [`Error::Io`] when connecting fails.
    pub fn connect_tcp(addr: SocketAddr) -> Result<Self, Error> {
        let s = TcpStream::connect(addr).map_err(Error::io(format!("connect to tcp {addr}")))?;
        s.set_nodelay(true)
            .map_err(Error::io(format!("set TCP_NODELAY on {addr}")))?;
        Self::new(Stream::Tcp(s))
    }

    /// Connects to either kind of endpoint.
    ///
    /// # Errors
    /// [`Error::Io`] when connecting fails.
    pub fn connect(endpoint: &crate::server::Endpoint) -> Result<Self, Error> {
        match endpoint {
            crate::server::Endpoint::Uds(p) => Self::connect_uds(p),
            crate::server::Endpoint::Tcp(a) => Self::connect_tcp(*a),
        }
    }

    /// Sends the request in `self.request` and reads the reply's success body into
    /// `self.reply`, returning its length.
    fn round_trip(&mut self, op: &'static str) -> Result<usize, Error> {
        self.io
            .get_mut()
            .write_all(&self.request)
            .map_err(Error::io(format!("send {op}")))?;
        match proto::read_reply(&mut self.io, self.max_frame, &mut self.reply) {
            Ok(Reply::Ok(body)) => Ok(body.len()),
            Ok(Reply::Err { code, message }) => Err(remote(code, message)),
            Err(e) => Err(reply_error(e, op)),
        }
    }

    /// Sends raw bytes (a frame, a fragment of one, garbage) and reads one reply: for tests
    /// of the server's error handling. `Ok(Ok(body))` or `Ok(Err((code, message)))`.
    ///
    /// # Errors
    /// When the connection fails or the reply is malformed.
    pub fn raw(&mut self, bytes: &[u8]) -> Result<Result<Vec<u8>, (u16, String)>, Error> {
        self.send_raw(bytes)?;
        self.recv_raw()
    }

    /// Sends raw bytes without waiting for a reply.
    ///
    /// # Errors
    /// When writing fails.
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.io
            .get_mut()
            .write_all(bytes)
            .map_err(Error::io("send raw bytes"))
    }

    /// Reads one reply: `Ok(Ok(body))` or `Ok(Err((code, message)))`.
    ///
    /// # Errors
    /// When the connection fails or the reply is malformed.
    pub fn recv_raw(&mut self) -> Result<Result<Vec<u8>, (u16, String)>, Error> {
        match proto::read_reply(&mut self.io, self.max_frame, &mut self.reply) {
            Ok(Reply::Ok(body)) => Ok(Ok(body.to_vec())),
            Ok(Reply::Err { code, message }) => {
                Ok(Err((code, String::from_utf8_lossy(message).into_owned())))
            }
            Err(e) => Err(reply_error(e, "a raw frame")),
        }
    }

    /// Closes the sending half: the server sees the end of the stream (after whatever was
    /// sent) and can still reply.
    ///
    /// # Errors
    /// When the socket refuses.
    pub fn shutdown_write(&self) -> Result<(), Error> {
        self.io
            .get_ref()
            .get_ref()
            .shutdown_write()
            .map_err(Error::io("shut down the sending half"))
    }

    /// True when the server has closed the connection (reads end of stream; blocks until the
    /// server either closes or sends something, which is then discarded).
    #[must_use]
    pub fn is_closed_by_server(&mut self) -> bool {
        let mut b = [0; 1];
        matches!(self.io.read(&mut b), Ok(0) | Err(_))
    }

    /// Sweeps `grid` over `close` (opcode 0, the study's batched call).
    ///
    /// # Errors
    /// [`Error::Remote`] for an error reply, [`Error::BadReply`], [`Error::Io`], [`Error::Frame`].
    pub fn sweep(&mut self, close: &[f64], grid: &[Params]) -> Result<Vec<ComboResult>, Error> {
        self.request.clear();
        proto::encode_series(&mut self.request, Opcode::Sweep, close, grid);
        let n = self.round_trip("SWEEP")?;
        proto::decode_sweep_reply(&self.reply[..n], grid.len()).map_err(Error::BadReply)
    }

    /// Sends `close` and returns what comes back (opcode 1).
    ///
    /// # Errors
    /// As [`Client::sweep`].
    pub fn echo(&mut self, close: &[f64]) -> Result<Vec<f64>, Error> {
        let mut out = Vec::with_capacity(close.len());
        self.echo_into(close, &mut out)?;
        Ok(out)
    }

    /// [`Client::echo`] into a reused vector: the measured echo round trip allocates nothing.
    ///
    /// # Errors
    /// As [`Client::sweep`].
    pub fn echo_into(&mut self, close: &[f64], out: &mut Vec<f64>) -> Result<(), Error> {
        self.request.clear();
        proto::encode_series(&mut self.request, Opcode::Echo, close, &[]);
        let n = self.round_trip("ECHO")?;
        if n != close.len() * 8 {
            return Err(Error::BadReply(format!(
                "echo of {} bars came back as {n} bytes",
                close.len()
            )));
        }
        out.clear();
        out.extend(self.reply[..n].chunks_exact(8).map(|c| {
            let mut w = [0; 8];
            w.copy_from_slice(c);
            f64::from_le_bytes(w)
        }));
        Ok(())
    }

    /// Keeps `close` on the server for this connection (opcode 2).
    ///
    /// # Errors
    /// As [`Client::sweep`]; `TOO_MANY_HANDLES` when the connection holds too much.
    pub fn load(&mut self, close: &[f64]) -> Result<Handle, Error> {
        self.request.clear();
        proto::encode_series(&mut self.request, Opcode::Load, close, &[]);
        let n = self.round_trip("LOAD")?;
        let b: [u8; 8] = self.reply[..n]
            .try_into()
            .map_err(|_| Error::BadReply(format!("LOAD reply of {n} bytes, expected 8")))?;
        Ok(Handle(u64::from_le_bytes(b)))
    }

    /// Sweeps `grid` over a loaded series (opcode 3: 17 bytes + 48 per combo on the wire).
    ///
    /// # Errors
    /// As [`Client::sweep`]; `UNKNOWN_HANDLE` for a handle this connection does not hold.
    pub fn sweep_handle(
        &mut self,
        handle: Handle,
        grid: &[Params],
    ) -> Result<Vec<ComboResult>, Error> {
        self.request.clear();
        proto::encode_sweep_handle(&mut self.request, handle.0, grid);
        let n = self.round_trip("SWEEP_HANDLE")?;
        proto::decode_sweep_reply(&self.reply[..n], grid.len()).map_err(Error::BadReply)
    }

    /// Forgets a loaded series (opcode 4).
    ///
    /// # Errors
    /// As [`Client::sweep`]; `UNKNOWN_HANDLE` for a handle this connection does not hold.
    pub fn free(&mut self, handle: Handle) -> Result<(), Error> {
        self.request.clear();
        proto::encode_free(&mut self.request, handle.0);
        match self.round_trip("FREE")? {
            0 => Ok(()),
            n => Err(Error::BadReply(format!(
                "FREE reply of {n} bytes, expected 0"
            ))),
        }
    }
}

/// The spawn-per-call mode: starts `program serve-stdio` (the `boundary` binary, or anything
/// that speaks the protocol on stdin/stdout), sends one sweep on its stdin and reads the reply
/// from its stdout. `threads` is passed as `--threads`.
///
/// # Errors
/// [`Error::Io`] when it cannot be started or talked to, [`Error::Spawn`] when it fails,
/// [`Error::Remote`] for an error reply, [`Error::BadReply`].
pub fn spawn_sweep(
    program: &Path,
    threads: usize,
    close: &[f64],
    grid: &[Params],
) -> Result<Vec<ComboResult>, Error> {
    let mut request = Vec::new();
    proto::encode_series(&mut request, Opcode::Sweep, close, grid);
    let mut child = Command::new(program)
        .args(["serve-stdio", "--threads", &threads.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(Error::io(format!("spawn {}", program.display())))?;
    // The child reads the whole request before it writes, so writing it all first cannot
    // deadlock. A write error means it died early; its status and stderr say why.
    let wrote = child
        .stdin
        .take()
        .map(|mut stdin| stdin.write_all(&request));
    let output = child
        .wait_with_output()
        .map_err(Error::io(format!("wait for {}", program.display())))?;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let mut buf = Vec::new();
    match proto::read_reply(&mut &output.stdout[..], proto::DEFAULT_MAX_FRAME, &mut buf) {
        Ok(Reply::Ok(body)) if output.status.success() => {
            proto::decode_sweep_reply(body, grid.len()).map_err(Error::BadReply)
        }
        Ok(Reply::Err { code, message }) => Err(remote(code, message)),
        _ => match wrote {
            Some(Err(source)) if output.status.success() => Err(Error::Io {
                op: format!("write the request to {}", program.display()),
                source,
            }),
            _ => Err(Error::Spawn {
                program: program.to_owned(),
                status: output.status,
                stderr,
            }),
        },
    }
}
