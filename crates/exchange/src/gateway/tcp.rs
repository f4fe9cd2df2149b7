//! The order gateway on the kernel's TCP: one SoupBinTCP connection at a time on the order
//! port, each segment stamped by the kernel on arrival (`SO_TIMESTAMPNS`, as the UDP orders
//! are), the answers written back without blocking the replay's send loop.
//!
//! A TCP read returns the stamp of the last segment it read, so a read that holds two orders
//! stamps the first one late by the gap between them: the trader sends one order per segment
//! (`TCP_NODELAY`), and reads that held more than one are counted
//! ([`SessionCounts::coalesced_reads`]) so a figure that includes them says so.
use std::{
    io::{self, ErrorKind, Write as _},
    net::{SocketAddrV4, TcpListener, TcpStream},
    os::fd::AsFd as _,
};

use afxdp::clock::RealToMono;
use anyhow::Context as _;
use results::SessionReport;

use super::Gateway;
use crate::Took;

/// A new connection is looked for at most this often while one is up (an `accept` per send
/// loop turn would cost the pacing a syscall each).
const ACCEPT_EVERY_NS: u64 = 1_000_000;
/// Nanoseconds in a day: OUCH timestamps count from midnight.
const DAY_NS: u64 = 86_400_000_000_000;
/// How long the end of session waits for the trader to log out.
const LOGOUT_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// How the connections went.
pub type SessionCounts = SessionReport;

/// The SoupBinTCP order gateway on a kernel TCP listener.
#[derive(Debug)]
pub struct TcpGateway {
    listener: TcpListener,
    /// The session's connection.
    conn: Option<Conn>,
    /// A newer connection, not yet logged in: it takes over once it is.
    candidate: Option<Conn>,
    config: soup::ServerConfig,
    gateway: Gateway,
    clock: RealToMono,
    counts: SessionCounts,
    /// Every byte read from the session's connections, in order.
    digest: soup::Digest,
    next_accept_ns: u64,
    /// Stall after this many orders (a test).
    stall_after: Option<u64>,
    /// Reset the connection after this many orders (a test), once.
    reset_after: Option<u64>,
    /// Close the connection (a FIN) after this many orders (a test), once.
    close_after: Option<u64>,
}

#[derive(Debug)]
struct Conn {
    sock: TcpStream,
    server: soup::Server,
    /// Answers not yet taken by the socket.
    pending: Vec<u8>,
    /// Over: dropped once `pending` is written (or can't be).
    over: bool,
    /// Our side shut (a test's FIN): nothing more is written; over when the trader closes.
    closing: bool,
}

impl TcpGateway {
    /// Listens on `at` for the trader's session (`config`: who may log in, to what), with
    /// room for the answers to `orders` orders allocated now, not in the send loop.
    pub fn bind(
        at: SocketAddrV4,
        config: soup::ServerConfig,
        orders: usize,
    ) -> anyhow::Result<TcpGateway> {
        let listener = TcpListener::bind(at).with_context(|| {
            format!("failed to listen on {at} for the order session (port in use, or not an address of this namespace?)")
        })?;
        listener
            .set_nonblocking(true)
            .context("making the order listener non-blocking")?;
        // Set on the listener too: the kernel turns stamping on from a workqueue, which then
        // happens now, not at the first order's connection.
        stamp(&listener).context("asking for receive timestamps (SO_TIMESTAMPNS)")?;
        Ok(TcpGateway {
            listener,
            conn: None,
            candidate: None,
            config,
            gateway: Gateway::for_orders(orders),
            clock: RealToMono::default(),
            counts: SessionCounts::default(),
            digest: soup::Digest::default(),
            next_accept_ns: 0,
            stall_after: None,
            reset_after: None,
            close_after: None,
        })
    }

    /// Resets the connection (an RST) once, after taking `n` orders (a test).
    #[must_use]
    pub fn resetting_after(mut self, n: Option<u64>) -> Self {
        self.reset_after = n;
        self
    }

    /// Closes the connection from this end (a FIN) once, after taking `n` orders (a test): no
    /// more is written on it, what the trader sends meanwhile is still read, and it is over
    /// once the trader has closed its side.
    #[must_use]
    pub fn closing_after(mut self, n: Option<u64>) -> Self {
        self.close_after = n;
        self
    }

    /// Stalls after taking `n` orders (a test: no reads, answers, heartbeats or accepts).
    #[must_use]
    pub fn stalling_after(mut self, n: Option<u64>) -> Self {
        self.stall_after = n;
        self
    }

    /// What the session came to: its connections and its order entry.
    pub fn report(&self) -> SessionReport {
        let g = self.gateway.counts();
        SessionReport {
            enter_orders: g.enter_orders,
            executed: g.executed,
            canceled: g.canceled,
            rejected: g.rejected,
            retransmissions: g.retransmissions,
            cancels: g.cancels,
            unknown: g.unknown,
            sequenced: self.gateway.stream().len(),
            stream_bytes: self.digest.bytes,
            stream_hash: self.digest.hash,
            ..self.counts
        }
    }

    /// Accepts, reads, answers and keeps the session's timers at `now` (the lab's clock):
    /// every Enter Order read goes to `f` as the lab's order with its arrival stamp.
    pub fn service(&mut self, now: u64, mut f: impl FnMut(&[u8], Option<u64>) -> Took) {
        if self
            .stall_after
            .is_some_and(|n| self.gateway.counts().enter_orders >= n)
        {
            self.counts.stalled = true;
            return;
        }
        if self.conn.is_none() || now >= self.next_accept_ns {
            self.next_accept_ns = now + ACCEPT_EVERY_NS;
            self.accept(now);
        }
        let Self {
            conn,
            candidate,
            gateway,
            counts,
            clock,
            digest,
            ..
        } = self;
        if let Some(c) = conn {
            serve(c, gateway, counts, digest, clock, now, &mut f);
            if self
                .reset_after
                .is_some_and(|n| gateway.counts().enter_orders >= n)
            {
                // The test's fault: SO_LINGER 0, then the close is an RST; unread orders go
                // with it.
                self.reset_after = None;
                let _ = nix::sys::socket::setsockopt(
                    &c.sock,
                    nix::sys::socket::sockopt::Linger,
                    &nix::libc::linger {
                        l_onoff: 1,
                        l_linger: 0,
                    },
                );
                c.over = true;
                counts.resets_injected += 1;
            }
            if !c.closing
                && self
                    .close_after
                    .is_some_and(|n| gateway.counts().enter_orders >= n)
            {
                // The test's other fault: our side shut (a FIN); answers stay in the stream,
                // for the trader's next login.
                self.close_after = None;
                let _ = c.sock.shutdown(std::net::Shutdown::Write);
                c.closing = true;
                counts.closes_injected += 1;
            }
        }
        if let Some(c) = candidate {
            serve(c, gateway, counts, digest, clock, now, &mut f);
        }
        // A new connection takes the session over only once it has logged in: a stray
        // connection can't end a trader's session.
        if candidate
            .as_ref()
            .is_some_and(|c| !c.over && c.server.state() == soup::ServerState::LoggedIn)
        {
            *conn = candidate.take();
            counts.replaced += 1;
        }
        if conn.as_ref().is_some_and(|c| c.over) {
            *conn = candidate.take();
        }
        if candidate.as_ref().is_some_and(|c| c.over) {
            *candidate = None;
        }
    }

    /// Serves the session until the trader has logged in (the feed starts after that, as a
    /// venue's session opens before the market): an error after `timeout` or when `stopped`.
    pub fn wait_for_login(
        &mut self,
        timeout: std::time::Duration,
        stopped: impl Fn() -> bool,
    ) -> anyhow::Result<()> {
        let until = std::time::Instant::now() + timeout;
        while self.counts.logins == 0 {
            if stopped() {
                anyhow::bail!("stopped before the trader logged in to the order session");
            }
            if std::time::Instant::now() > until {
                anyhow::bail!(
                    "no trader logged in to the order session on {} within {timeout:?} \
                     ({} connection(s), {} login(s) refused): is the trader running with \
                     --orders tcp-kernel --order-to at this address?",
                    self.listener
                        .local_addr()
                        .map_or_else(|_| "?".into(), |a| a.to_string()),
                    self.counts.connections,
                    self.counts.login_rejects
                );
            }
            // Before the feed no tick has gone out: an order now answers nothing (counted).
            let mut outside = 0;
            self.service(afxdp::clock::now_ns(), |_, _| {
                outside += 1;
                Took::default()
            });
            self.counts.outside_feed += outside;
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        Ok(())
    }

    /// End of Session on the connection (after what it is still owed), then a short wait for
    /// the trader's logout. Orders that come meanwhile are answered but reach no exchange:
    /// counted (`outside_feed`).
    pub fn end_session(&mut self, mut now: impl FnMut() -> u64) {
        let Some(c) = &mut self.conn else { return };
        c.server
            .end_session(now(), self.gateway.stream(), &mut c.pending);
        let until = std::time::Instant::now() + LOGOUT_WAIT;
        while self.conn.is_some() && std::time::Instant::now() < until {
            let mut outside = 0;
            self.service(now(), |_, _| {
                outside += 1;
                Took::default()
            });
            self.counts.outside_feed += outside;
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    fn accept(&mut self, now: u64) {
        let sock = match self.listener.accept() {
            Ok((sock, _)) => sock,
            Err(_) => return,
        };
        let ready = sock
            .set_nonblocking(true)
            .and_then(|()| sock.set_nodelay(true))
            .and_then(|()| stamp(&sock));
        if ready.is_err() {
            return;
        }
        self.counts.connections += 1;
        let c = Conn {
            sock,
            server: soup::Server::new(self.config.clone(), now),
            pending: Vec::with_capacity(1 << 20),
            over: false,
            closing: false,
        };
        // With a connection up, a new one waits as the candidate (a trader that saw its
        // connection fail before this end did logs in on it, and then takes the session over,
        // from where its login asks); a newer candidate replaces an older one.
        if self.conn.is_none() {
            self.conn = Some(c);
        } else {
            self.candidate = Some(c);
        }
    }
}

/// Writes what the socket takes now; a connection that can't take anything more is over.
fn flush(c: &mut Conn) {
    if c.closing {
        // Nothing goes on a connection our side shut.
        c.pending.clear();
        return;
    }
    while !c.pending.is_empty() {
        match c.sock.write(&c.pending) {
            Ok(0) => {
                c.over = true;
                break;
            }
            Ok(n) => {
                c.pending.drain(..n);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => {
                c.over = true;
                break;
            }
        }
    }
}

fn stamp(fd: &impl std::os::fd::AsFd) -> io::Result<()> {
    nix::sys::socket::setsockopt(fd, nix::sys::socket::sockopt::ReceiveTimestampns, &true)
        .map_err(io::Error::from)
}

/// Reads, answers and keeps the timers of one connection.
fn serve(
    c: &mut Conn,
    gateway: &mut Gateway,
    counts: &mut SessionCounts,
    digest: &mut soup::Digest,
    clock: &mut RealToMono,
    now: u64,
    f: &mut impl FnMut(&[u8], Option<u64>) -> Took,
) {
    while !c.over {
        let buf = c.server.read_into();
        let (n, stamp) = match afxdp::sockopt::recv_stamped(c.sock.as_fd(), buf) {
            Ok((0, _)) => {
                counts.closed_by_peer += 1;
                c.over = true;
                break;
            }
            Ok((n, stamp)) => {
                digest.add(&buf[..n]);
                (n, stamp)
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => {
                counts.reset += 1;
                c.over = true;
                break;
            }
        };
        c.server.filled(n, now);
        let arrived = stamp.map(|real| clock.to_mono(real));
        if arrived.is_none() {
            counts.unstamped_reads += 1;
        }
        let mut orders = 0;
        // OUCH timestamps: nanoseconds since midnight, UTC (the lab's venue keeps UTC).
        let since_midnight_utc = afxdp::clock::realtime_ns() % DAY_NS;
        loop {
            let event = c.server.poll(now, gateway.stream(), &mut c.pending);
            match event {
                None => break,
                Some(soup::ServerEvent::Data(message)) => {
                    orders += 1;
                    gateway.on_message(message, since_midnight_utc, |order| f(order, arrived));
                    c.server.catch_up(now, gateway.stream(), &mut c.pending);
                }
                Some(soup::ServerEvent::LoggedIn { from }) => {
                    counts.logins += 1;
                    counts.replayed += gateway.stream().len() + 1 - from;
                }
                Some(soup::ServerEvent::LoginRefused(_)) => counts.login_rejects += 1,
                Some(soup::ServerEvent::LoggedOut) => counts.logouts += 1,
                Some(soup::ServerEvent::PeerSilent) => counts.peer_silent += 1,
                Some(soup::ServerEvent::Malformed(_) | soup::ServerEvent::Unexpected { .. }) => {
                    counts.protocol_errors += 1;
                }
            }
        }
        c.over |= c.server.state() == soup::ServerState::Closed;
        if orders > 1 {
            counts.coalesced_reads += 1;
        }
    }
    if let Some(soup::ServerEvent::PeerSilent) = c.server.tick(now, &mut c.pending) {
        counts.peer_silent += 1;
        c.over = true;
    }
    flush(c);
}
