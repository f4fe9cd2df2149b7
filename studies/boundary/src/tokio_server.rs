//! The same server on a tokio runtime: one task per connection instead of one thread.
//!
//! What changes from the blocking server is only how a connection waits: the protocol, its
//! checks ([`proto::frame_request`]), the answers ([`Session::handle`]), the limits and the
//! socket's binding are the blocking server's own. A request that runs the engine (SWEEP,
//! SWEEP_HANDLE: milliseconds to seconds of CPU), or carries more than 64 KiB (a LOAD or an
//! ECHO of a long series), is handed to the runtime's blocking pool, so it never stalls the
//! other connections of a runtime's thread; the rest (small ECHO, LOAD, FREE: microseconds)
//! are answered on the task.
//!
//! Spinning (`Config::spin`): a read that finds an empty socket yields to the runtime and
//! tries again for up to the budget, then waits for readiness, so one runtime thread busy-polls
//! all its connections; with no budget it waits for readiness at once.
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Instant;

use tokio::io::AsyncWriteExt as _;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::proto::{self, Framing, LEN_BYTES};
use crate::session::{Config, Counters, Runtime, Session, busy_reply, is_disconnect};

/// A listener of either kind, still std's: it is handed to the runtime on its own thread.
#[derive(Debug)]
pub(crate) enum StdListener {
    Unix(std::os::unix::net::UnixListener),
    Tcp(std::net::TcpListener),
}

/// The running runtime: its thread, and the sender that tells it to stop.
#[derive(Debug)]
pub(crate) struct Handle {
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl Handle {
    /// Tells the runtime to stop accepting and to close every connection; returns at once.
    pub(crate) fn signal_stop(&self) {
        let _ = self.stop.send(true);
    }

    /// Stops accepting, closes every connection and waits for them and for the runtime to
    /// end (a sweep in flight on the blocking pool finishes first).
    pub(crate) fn stop(&mut self) {
        self.signal_stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the runtime on a thread of its own and serves `listener` on it.
pub(crate) fn start(
    listener: StdListener,
    flavor: Runtime,
    config: Config,
    counters: Arc<Counters>,
) -> io::Result<Handle> {
    let mut b = match flavor {
        Runtime::TokioMultiThread { workers } => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(workers.max(1));
            b
        }
        Runtime::Threads | Runtime::TokioCurrentThread => {
            tokio::runtime::Builder::new_current_thread()
        }
    };
    b.enable_all().thread_name("boundary-tokio");
    if let Some(cpu) = config.cpu {
        let k = counters.clone();
        b.on_thread_start(move || {
            if affinity::pin_current_thread(cpu).is_err() {
                k.pin_errors.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    let rt = b.build()?;
    match &listener {
        StdListener::Unix(l) => l.set_nonblocking(true)?,
        StdListener::Tcp(l) => l.set_nonblocking(true)?,
    }
    let (stop, stopped) = watch::channel(false);
    let thread = std::thread::Builder::new()
        .name("boundary-tokio".into())
        .spawn(move || {
            if let Some(cpu) = config.cpu
                && affinity::pin_current_thread(cpu).is_err()
            {
                counters.pin_errors.fetch_add(1, Ordering::Relaxed);
            }
            rt.block_on(accept_loop(listener, stopped, config, counters));
        })?;
    Ok(Handle {
        stop,
        thread: Some(thread),
    })
}

/// A connection of either kind.
#[derive(Debug)]
enum Conn {
    Unix(tokio::net::UnixStream),
    Tcp(tokio::net::TcpStream),
}

impl Conn {
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.try_read(buf),
            Self::Tcp(s) => s.try_read(buf),
        }
    }
    async fn readable(&self) -> io::Result<()> {
        match self {
            Self::Unix(s) => s.readable().await,
            Self::Tcp(s) => s.readable().await,
        }
    }
    async fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            Self::Unix(s) => s.write_all(b).await,
            Self::Tcp(s) => s.write_all(b).await,
        }
    }
}

enum AnyListener {
    Unix(tokio::net::UnixListener),
    Tcp(tokio::net::TcpListener),
}

impl AnyListener {
    async fn accept(&self) -> io::Result<Conn> {
        Ok(match self {
            Self::Unix(l) => Conn::Unix(l.accept().await?.0),
            Self::Tcp(l) => {
                let s = l.accept().await?.0;
                // Replies go out in one write; Nagle would hold a small one back.
                s.set_nodelay(true)?;
                Conn::Tcp(s)
            }
        })
    }
}

async fn accept_loop(
    listener: StdListener,
    mut stopped: watch::Receiver<bool>,
    config: Config,
    counters: Arc<Counters>,
) {
    let listener = match listener {
        StdListener::Unix(l) => tokio::net::UnixListener::from_std(l).map(AnyListener::Unix),
        StdListener::Tcp(l) => tokio::net::TcpListener::from_std(l).map(AnyListener::Tcp),
    };
    let Ok(listener) = listener else {
        counters.io_errors.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let mut tasks = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            _ = stopped.wait_for(|s| *s) => break,
            a = listener.accept() => a,
        };
        // Reap finished connections so the set doesn't grow with every one served.
        while tasks.try_join_next().is_some() {}
        let mut conn = match accepted {
            Ok(c) => c,
            Err(_) => {
                // Out of descriptors or the like: don't spin on it.
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        // Every finished connection was reaped just above: the set holds the open ones.
        if tasks.len() >= config.max_connections {
            counters.refused.fetch_add(1, Ordering::Relaxed);
            let _ = conn.write_all(&busy_reply(&config)).await;
            continue;
        }
        counters.accepted.fetch_add(1, Ordering::Relaxed);
        let (counters, mut stopped) = (counters.clone(), stopped.clone());
        tasks.spawn(async move {
            let served = tokio::select! {
                r = serve_connection(conn, config) => r,
                // Shutdown: the connection is dropped (closed) between or during requests;
                // a sweep already in the blocking pool finishes there.
                _ = stopped.wait_for(|s| *s) => Ok(()),
            };
            if served.is_err() {
                counters.io_errors.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

/// A connection's input: bytes that arrived and are not yet consumed, `buf[start..filled]`,
/// the frame being read at the front.
struct Input {
    buf: Vec<u8>,
    start: usize,
    filled: usize,
}

/// First size of a connection's buffer (a whole small request and the next one's length
/// word in one read), and the least step it grows by. Requests with a longer body go to the
/// blocking pool: decoding or copying them is more than a runtime thread should hold up its
/// other connections for.
const GROW_STEP: usize = 64 << 10;

enum Fill {
    More,
    Eof,
}

impl Input {
    fn new() -> Self {
        Self {
            buf: vec![0; GROW_STEP],
            start: 0,
            filled: 0,
        }
    }

    /// The bytes that arrived and are not consumed: the current frame's start first.
    fn pending(&self) -> &[u8] {
        &self.buf[self.start..self.filled]
    }

    /// Reads what is there (at least one byte, or the end of the stream), making room first:
    /// the consumed bytes in front go, and the buffer grows only toward `want` bytes of the
    /// current frame and by at most what has arrived of it (plus [`GROW_STEP`]), so a peer that
    /// claims a large frame and sends little costs little.
    async fn fill(&mut self, conn: &Conn, want: usize, config: &Config) -> io::Result<Fill> {
        if self.filled == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.filled, 0);
                self.filled -= self.start;
                self.start = 0;
            }
            if self.filled == self.buf.len() {
                let step = want
                    .saturating_sub(self.filled)
                    .clamp(1, self.filled.max(GROW_STEP));
                self.buf.resize(self.filled + step, 0);
            }
        }
        let spin_until = (!config.spin.is_zero()).then(|| Instant::now() + config.spin);
        loop {
            match conn.try_read(&mut self.buf[self.filled..]) {
                Ok(0) => return Ok(Fill::Eof),
                Ok(n) => {
                    self.filled += n;
                    return Ok(Fill::More);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if spin_until.is_some_and(|t| Instant::now() < t) {
                        tokio::task::yield_now().await;
                    } else {
                        conn.readable().await?;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Drops the first `n` pending bytes (no copy: the buffer is compacted only when full).
    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.filled {
            self.start = 0;
            self.filled = 0;
        }
    }
}

/// Serves one connection as [`crate::session::serve_connection`] does: the same replies to
/// the same frames, the same frames closing the connection.
async fn serve_connection(mut conn: Conn, config: Config) -> io::Result<()> {
    let mut input = Input::new();
    let mut session = Some(Session::new(config));
    let mut out = Vec::new();
    loop {
        out.clear();
        let framing = proto::frame_request(input.pending(), config.max_frame);
        let fatal = match framing {
            Framing::Need(n) => {
                match input.fill(&conn, n, &config).await {
                    Ok(Fill::More) => continue,
                    Ok(Fill::Eof) if input.pending().is_empty() => return Ok(()),
                    Ok(Fill::Eof) => {
                        let got = input.pending().len() as u64;
                        let e = proto::frame_truncated(input.pending(), got);
                        proto::encode_error(&mut out, e.code(), &e.to_string());
                    }
                    Err(e) if is_disconnect(&e) => return Ok(()),
                    Err(e) => return Err(e),
                }
                true
            }
            Framing::Request { len } => {
                let at = input.start + LEN_BYTES;
                let body = &input.buf[at..at + len];
                if len > GROW_STEP
                    || matches!(
                        proto::Opcode::from_u8(body[0]),
                        Some(proto::Opcode::Sweep | proto::Opcode::SweepHandle)
                    )
                {
                    // The engine's work, and any long body (a LOAD or ECHO of a large series),
                    // goes to the blocking pool with the session and the input buffer (moved,
                    // not copied: a chatty SWEEP carries 1.2 MB); both come back with the
                    // reply.
                    let s = session.take().expect("the session is here");
                    let buf = std::mem::take(&mut input.buf);
                    let r = tokio::task::spawn_blocking(move || {
                        let (mut s, buf) = (s, buf);
                        let mut out = Vec::new();
                        s.handle(&buf[at..at + len], &mut out);
                        (s, buf, out)
                    })
                    .await;
                    match r {
                        Ok((s, buf, o)) => {
                            session = Some(s);
                            input.buf = buf;
                            out = o;
                        }
                        // `handle` catches the engine's panics; anything else is a bug.
                        Err(e) => return Err(io::Error::other(e)),
                    }
                } else {
                    session
                        .as_mut()
                        .expect("the session is back after every request")
                        .handle(body, &mut out);
                }
                input.consume(LEN_BYTES + len);
                false
            }
            Framing::Bad { error, skip } => {
                proto::encode_error(&mut out, error.code(), &error.to_string());
                if error.is_fatal() {
                    true
                } else {
                    match drain(&mut input, &conn, skip, &config).await? {
                        None => false,
                        Some(truncated) => {
                            out.clear();
                            proto::encode_error(&mut out, truncated.code(), &truncated.to_string());
                            true
                        }
                    }
                }
            }
        };
        match conn.write_all(&out).await {
            Ok(()) => {}
            Err(e) if is_disconnect(&e) => return Ok(()),
            Err(e) => return Err(e),
        }
        if fatal {
            return Ok(());
        }
    }
}

/// Throws away the first `skip` bytes of the stream (a bad frame), reading what has not
/// arrived yet into a buffer that does not grow. `Some(error)`: the stream ended first.
async fn drain(
    input: &mut Input,
    conn: &Conn,
    skip: u64,
    config: &Config,
) -> io::Result<Option<proto::FrameError>> {
    let pending = input.pending();
    let head: Vec<u8> = pending[..pending.len().min(LEN_BYTES)].to_vec();
    let mut gone = 0_u64;
    loop {
        let here = (skip - gone).min(input.pending().len() as u64) as usize;
        input.consume(here);
        gone += here as u64;
        if gone == skip {
            return Ok(None);
        }
        match input.fill(conn, GROW_STEP, config).await {
            Ok(Fill::More) => {}
            Ok(Fill::Eof) => return Ok(Some(proto::frame_truncated(&head, gone))),
            Err(e) if is_disconnect(&e) => return Ok(Some(proto::frame_truncated(&head, gone))),
            Err(e) => return Err(e),
        }
    }
}
