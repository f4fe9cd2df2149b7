//! The engine server: the protocol of [`crate::proto`] over a Unix socket, TCP, or one request
//! on stdin.
//!
//! A thread per connection: a sweep is hundreds of milliseconds of CPU, so a thread costs
//! nothing next to it, and a client that stalls or sends garbage only ever holds its own
//! thread. Loaded series belong to the connection that loaded them and go when it closes, so
//! one client can neither see nor exhaust another's.
use std::collections::HashMap;
use std::fs;
use std::io::{self, BufReader, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::{
    DirBuilderExt as _, FileTypeExt as _, MetadataExt as _, PermissionsExt as _,
};
use std::os::unix::net::{UnixListener, UnixStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use engine::{ComboResult, Params};

use crate::Error;
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

// ---- Listening ----

/// Where a server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A Unix domain socket at this path.
    Uds(PathBuf),
    /// A TCP address (the bound one: port 0 resolved).
    Tcp(SocketAddr),
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Uds(p) => write!(f, "uds {}", p.display()),
            Self::Tcp(a) => write!(f, "tcp {a}"),
        }
    }
}

/// A stream of either kind.
#[derive(Debug)]
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub(crate) fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Self::Unix(s) => s.set_nonblocking(on),
            Self::Tcp(s) => s.set_nonblocking(on),
        }
    }
    fn try_clone(&self) -> io::Result<Self> {
        Ok(match self {
            Self::Unix(s) => Self::Unix(s.try_clone()?),
            Self::Tcp(s) => Self::Tcp(s.try_clone()?),
        })
    }
    pub(crate) fn shutdown_write(&self) -> io::Result<()> {
        match self {
            Self::Unix(s) => s.shutdown(Shutdown::Write),
            Self::Tcp(s) => s.shutdown(Shutdown::Write),
        }
    }
    fn shutdown(&self) {
        // Shutting down a connection the peer already closed fails harmlessly.
        let _ = match self {
            Self::Unix(s) => s.shutdown(Shutdown::Both),
            Self::Tcp(s) => s.shutdown(Shutdown::Both),
        };
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.read(buf),
            Self::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.write(buf),
            Self::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[derive(Debug)]
enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

impl Listener {
    fn accept(&self) -> io::Result<Stream> {
        Ok(match self {
            Self::Unix(l) => Stream::Unix(l.accept()?.0),
            Self::Tcp(l) => {
                let s = l.accept()?.0;
                // Replies go out in one write; Nagle would hold a small one back.
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
        })
    }
}

/// Open connections, so shutdown can close them and wait for their threads.
#[derive(Debug, Default)]
struct Connections {
    next: AtomicU64,
    active: AtomicUsize,
    streams: Mutex<HashMap<u64, Stream>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// Counters a server keeps (read with [`Server::stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Connections accepted.
    pub accepted: u64,
    /// Connections refused with `Busy`.
    pub refused: u64,
    /// Connections that ended with an I/O error.
    pub io_errors: u64,
    /// Connection threads that could not be pinned to [`Config::cpu`].
    pub pin_errors: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) accepted: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) io_errors: AtomicU64,
    pub(crate) pin_errors: AtomicU64,
}

/// A listening server: accepts on a background thread, a thread per connection (or a tokio
/// runtime on a thread of its own, [`Config::runtime`]). Dropping it (or
/// [`Server::shutdown`]) stops accepting, removes its socket file, closes every connection
/// and waits for them: a connection in the middle of a sweep finishes that sweep first (a
/// sweep can't be interrupted), so shutdown takes as long as the longest sweep in flight.
#[derive(Debug)]
pub struct Server {
    endpoint: Endpoint,
    /// The socket file's (device, inode), so shutdown removes only our own.
    uds_id: Option<(u64, u64)>,
    counters: Arc<Counters>,
    backend: Backend,
}

#[derive(Debug)]
enum Backend {
    Threads {
        stop: Arc<AtomicBool>,
        conns: Arc<Connections>,
        accept: Option<JoinHandle<()>>,
    },
    Tokio(crate::tokio_server::Handle),
}

/// Temp directories made by [`bind_uds`] in this process.
static BIND_SEQ: AtomicU64 = AtomicU64::new(0);

/// Binds a Unix socket at `path` that only its owner can connect to.
///
/// Race-free without touching the umask: the socket is bound inside a fresh directory of mode
/// 0700 beside `path`, set to 0600 there, and renamed into place, so it is never reachable
/// with wider permissions. A stale socket at `path` (nobody listening) is replaced; anything
/// else there is an error.
fn bind_uds(path: &Path) -> Result<(UnixListener, (u64, u64)), Error> {
    match fs::symlink_metadata(path) {
        Ok(md) if md.file_type().is_socket() && UnixStream::connect(path).is_err() => {
            fs::remove_file(path)
                .map_err(Error::io(format!("remove stale socket {}", path.display())))?;
        }
        Ok(_) => {
            return Err(Error::PathInUse {
                path: path.to_owned(),
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(format!("stat {}", path.display()))(e)),
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // Short names: a socket path has to fit in sun_path (108 bytes).
    let seq = BIND_SEQ.fetch_add(1, Ordering::Relaxed);
    let dir = parent.join(format!(".bnd{}-{seq}", std::process::id()));
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(Error::io(format!("create {}", dir.display())))?;
    let tmp = dir.join("s");
    let bound = (|| {
        let l = UnixListener::bind(&tmp).map_err(Error::io(format!("bind {}", tmp.display())))?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o600))
            .map_err(Error::io(format!("chmod 0600 {}", tmp.display())))?;
        fs::rename(&tmp, path)
            .map_err(Error::io(format!("move the socket to {}", path.display())))?;
        let md = fs::metadata(path).map_err(Error::io(format!("stat {}", path.display())))?;
        Ok((l, (md.dev(), md.ino())))
    })();
    // Empty once the rename succeeded; on failure also remove what is left.
    let _ = fs::remove_file(&tmp);
    let _ = fs::remove_dir(&dir);
    bound
}

impl Server {
    /// Listens on a Unix socket at `path` (mode 0600).
    ///
    /// # Errors
    /// [`Error::PathInUse`], or [`Error::Io`] when binding fails.
    pub fn bind_uds(path: impl AsRef<Path>, config: Config) -> Result<Self, Error> {
        let path = path.as_ref();
        let (l, id) = bind_uds(path)?;
        let started = Self::start(
            Listener::Unix(l),
            Endpoint::Uds(path.to_owned()),
            Some(id),
            config,
        );
        if started.is_err() && fs::symlink_metadata(path).is_ok_and(|md| (md.dev(), md.ino()) == id)
        {
            // Bound and renamed into place, then no server: leave nothing behind.
            let _ = fs::remove_file(path);
        }
        started
    }

    /// Listens on TCP at `addr`. Pass a loopback address unless the server should be
    /// reachable from elsewhere: the protocol has no authentication.
    ///
    /// # Errors
    /// [`Error::Io`] when binding fails.
    pub fn bind_tcp(addr: SocketAddr, config: Config) -> Result<Self, Error> {
        let l = TcpListener::bind(addr).map_err(Error::io(format!("bind tcp {addr}")))?;
        let local = l
            .local_addr()
            .map_err(Error::io(format!("read the address bound for {addr}")))?;
        Self::start(Listener::Tcp(l), Endpoint::Tcp(local), None, config)
    }

    fn start(
        listener: Listener,
        endpoint: Endpoint,
        uds_id: Option<(u64, u64)>,
        config: Config,
    ) -> Result<Self, Error> {
        let counters = Arc::new(Counters::default());
        let backend = match config.runtime {
            Runtime::Threads => {
                let stop = Arc::new(AtomicBool::new(false));
                let conns = Arc::new(Connections::default());
                let (st, c, k) = (stop.clone(), conns.clone(), counters.clone());
                let accept = std::thread::Builder::new()
                    .name("boundary-accept".into())
                    .spawn(move || accept_loop(&listener, &st, &c, &k, config))
                    .map_err(Error::io("start the accept thread"))?;
                Backend::Threads {
                    stop,
                    conns,
                    accept: Some(accept),
                }
            }
            flavor => {
                let l = match listener {
                    Listener::Unix(l) => crate::tokio_server::StdListener::Unix(l),
                    Listener::Tcp(l) => crate::tokio_server::StdListener::Tcp(l),
                };
                let h = crate::tokio_server::start(l, flavor, config, counters.clone())
                    .map_err(Error::io(format!("start the {flavor} runtime")))?;
                Backend::Tokio(h)
            }
        };
        let server = Self {
            endpoint,
            uds_id,
            counters,
            backend,
        };
        Ok(server)
    }

    /// Where it listens.
    #[must_use]
    pub const fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Counters so far.
    #[must_use]
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        Stats {
            accepted: c.accepted.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
            io_errors: c.io_errors.load(Ordering::Relaxed),
            pin_errors: c.pin_errors.load(Ordering::Relaxed),
        }
    }

    /// Stops accepting, closes every connection, waits for their threads, removes the socket.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        // Gone before any wait below (a connection mid-sweep finishes its sweep first); the
        // threads backend still needs its path for the wake-up connection.
        match &mut self.backend {
            Backend::Threads {
                stop,
                conns,
                accept,
            } => {
                let Some(accept) = accept.take() else {
                    return;
                };
                stop.store(true, Ordering::SeqCst);
                // Wake the blocking accept with a connection of our own.
                let _ = match &self.endpoint {
                    Endpoint::Uds(p) => UnixStream::connect(p).map(drop),
                    Endpoint::Tcp(a) => TcpStream::connect(wake_addr(*a)).map(drop),
                };
                let _ = accept.join();
                remove_socket(&self.endpoint, &mut self.uds_id);
                for s in lock(&conns.streams).values() {
                    s.shutdown();
                }
                for t in std::mem::take(&mut *lock(&conns.threads)) {
                    let _ = t.join();
                }
            }
            Backend::Tokio(h) => {
                h.signal_stop();
                remove_socket(&self.endpoint, &mut self.uds_id);
                h.stop();
            }
        }
        remove_socket(&self.endpoint, &mut self.uds_id);
    }
}

/// Removes a server's socket file if it is still its own (same device and inode); once.
fn remove_socket(endpoint: &Endpoint, uds_id: &mut Option<(u64, u64)>) {
    if let (Endpoint::Uds(p), Some(id)) = (endpoint, uds_id.take())
        && fs::symlink_metadata(p).is_ok_and(|md| (md.dev(), md.ino()) == id)
    {
        let _ = fs::remove_file(p);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// An address that reaches a listener bound to `a` (an unspecified IP means loopback).
fn wake_addr(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V4(v) if v.ip().is_unspecified() => (Ipv4Addr::LOCALHOST, v.port()).into(),
        SocketAddr::V6(v) if v.ip().is_unspecified() => (Ipv6Addr::LOCALHOST, v.port()).into(),
        a => a,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn accept_loop(
    listener: &Listener,
    stop: &AtomicBool,
    conns: &Arc<Connections>,
    counters: &Arc<Counters>,
    config: Config,
) {
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let mut stream = match accepted {
            Ok(s) => s,
            Err(_) => {
                // Out of descriptors or the like: don't spin on it.
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            }
        };
        lock(&conns.threads).retain(|t| !t.is_finished());
        if conns.active.load(Ordering::SeqCst) >= config.max_connections {
            counters.refused.fetch_add(1, Ordering::Relaxed);
            let _ = stream.write_all(&busy_reply(&config));
            continue;
        }
        counters.accepted.fetch_add(1, Ordering::Relaxed);
        let id = conns.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(closer) = stream.try_clone() {
            lock(&conns.streams).insert(id, closer);
        }
        conns.active.fetch_add(1, Ordering::SeqCst);
        let (c, k) = (conns.clone(), counters.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("boundary-conn-{id}"))
            .spawn(move || {
                if let Some(cpu) = config.cpu
                    && affinity::pin_current_thread(cpu).is_err()
                {
                    k.pin_errors.fetch_add(1, Ordering::Relaxed);
                }
                let served = crate::spin::Spin::new(stream, config.spin)
                    .and_then(|s| serve_connection(s, config));
                if served.is_err() {
                    k.io_errors.fetch_add(1, Ordering::Relaxed);
                }
                lock(&c.streams).remove(&id);
                c.active.fetch_sub(1, Ordering::SeqCst);
            });
        match spawned {
            Ok(t) => lock(&conns.threads).push(t),
            Err(_) => {
                if let Some(s) = lock(&conns.streams).remove(&id) {
                    s.shutdown();
                }
                conns.active.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
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
