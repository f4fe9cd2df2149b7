//! The engine server: the protocol of [`crate::proto`] over a Unix socket, TCP, or one request
//! on stdin.
//!
//! A thread per connection: a sweep is hundreds of milliseconds of CPU, so a thread costs
//! nothing next to it, and a client that stalls or sends garbage only ever holds its own
//! thread. Loaded series belong to the connection that loaded them and go when it closes, so
//! one client can neither see nor exhaust another's.
use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::{
    DirBuilderExt as _, FileTypeExt as _, MetadataExt as _, PermissionsExt as _,
};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::Error;
pub use crate::session::{Config, Runtime, Session, serve_connection, serve_stdio};
use crate::session::{Counters, busy_reply};
use crate::stream::Stream;

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
