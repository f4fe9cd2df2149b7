//! Orders as venues take them: OUCH 5.0 Enter Orders in a SoupBinTCP 3.00 session on the
//! kernel's TCP (`--orders tcp-kernel`), under any market-data path.
//!
//! [`TcpOrders`] is the session: a [`soup::Client`] on a `TCP_NODELAY` socket to the order
//! gateway. Each order is one Unsequenced Data packet written with one `write` (one segment),
//! from a buffer on the stack: the session's framing is built around the OUCH message, nothing
//! allocates. The answers (Order Accepted, Executed, Canceled, Rejected), the heartbeats and a
//! lost connection are handled between packets ([`TcpOrders::service`], at most every
//! [`SERVICE_EVERY_NS`]), never inside one's critical path. A lost connection is made again
//! and logged into from the next answer not yet had, so the exchange sends again what was
//! missed; an order the trader could not send meanwhile is counted (`not_sent`), never lost
//! silently.
//!
//! [`WithOrders`] puts the session under any [`TraderIo`]: the feed still comes from the
//! wrapped I/O (AF_XDP or kernel UDP), the orders go here instead of the I/O's own sink.
use std::{
    io::{self, ErrorKind, Write as _},
    net::{Ipv4Addr, SocketAddrV4, TcpStream},
    os::fd::{AsFd as _, AsRawFd as _},
    time::Duration,
};
use xdp_common::filter::Claim;

use results::OrderSessionReport;
use wire::{
    order::OrderRepr,
    ouch::{EnterOrder, Outbound},
    soupbin::{HEADER_LEN, Repr},
};

use super::{
    FeedSource, OrderSink, PacketHandler, Sender, TraderIo,
    answers::{Answers, Terms, Verdict},
    backoff::Backoff,
};
use afxdp::clock::{RealToMono, now_ns};
use trader_core::{Line, Trader};

/// The answers and timers are looked at no more often than this (a `recvmsg` each time).
const SERVICE_EVERY_NS: u64 = 50_000;
/// How long one connection attempt may take (it runs without blocking the loop).
const CONNECT_TIMEOUT_NS: u64 = 100_000_000;
/// The largest Enter Order packet: header, the fixed message, no appendage.
pub(super) const ORDER_PACKET: usize = HEADER_LEN + wire::ouch::enter_order::LEN;

/// The trader's SoupBinTCP order session on the kernel's TCP.
#[derive(Debug)]
pub struct TcpOrders {
    gateway: SocketAddrV4,
    /// Our address: the connection's, bound before it is made.
    ours: Ipv4Addr,
    /// The session: its client end, held orders, answers awaited, report.
    s: Session,
    sock: Option<TcpStream>,
    /// A connection under way (a non-blocking `connect`), and when it started.
    connecting: Option<(TcpStream, u64)>,
    /// Bytes the socket hasn't taken yet (a partial write, the login, heartbeats).
    pending: Vec<u8>,
    /// Orders in `pending`, not yet wholly written: lost with the connection if it goes.
    pending_orders: u64,
    /// Reset the connection after this many orders (a test), once.
    reset_after: Option<u64>,
    /// Busy polling on the session's socket (`--busy-poll`, `--prefer-busy-poll`,
    /// `--busy-poll-budget`): microseconds, prefer, budget.
    busy_poll: Option<(i32, bool, Option<i32>)>,
    clock: RealToMono,
    last_service: u64,
    next_connect: u64,
    /// When to try connecting again ([`super::backoff`]).
    backoff: Backoff,
}

impl TcpOrders {
    /// A session from `ours` to `gateway` logging in with `password` (the lab's username and
    /// session), giving a connection up after `timeout` of the exchange's silence; not
    /// connected until the first [`TcpOrders::service`].
    pub fn new(
        ours: Ipv4Addr,
        gateway: SocketAddrV4,
        password: &str,
        timeout: Duration,
    ) -> anyhow::Result<TcpOrders> {
        Ok(TcpOrders {
            gateway,
            ours,
            s: Session::new(paths::Orders::TcpKernel, password, timeout)?,
            sock: None,
            connecting: None,
            // Touched now, not on the first orders: no page fault in the loop.
            pending: prefaulted(64 * 1024),
            pending_orders: 0,
            reset_after: None,
            busy_poll: None,
            clock: RealToMono::default(),
            last_service: 0,
            next_connect: 0,
            backoff: Backoff::new(now_ns() ^ u64::from(std::process::id())),
        })
    }

    /// Busy polls the session's socket (`SO_BUSY_POLL`, and `SO_PREFER_BUSY_POLL` and
    /// `SO_BUSY_POLL_BUDGET` if given), as the options the matrix knows ask: microseconds,
    /// prefer, budget.
    #[must_use]
    pub fn busy_polling(mut self, busy_poll: Option<(i32, bool, Option<i32>)>) -> Self {
        self.busy_poll = busy_poll;
        self
    }

    /// Resets the connection after the `n`th order (a test of the reconnect), once.
    #[must_use]
    pub fn resetting_after(mut self, n: Option<u64>) -> Self {
        self.reset_after = n;
        self
    }

    /// Logged in: orders go out.
    pub fn logged_in(&self) -> bool {
        self.s.client.state() == soup::ClientState::LoggedIn
    }

    /// Connects and logs in, waiting up to `timeout` (or until `stopped`): the trader's first
    /// login, before the feed. An error says why not (refused, no gateway listening, no
    /// answer, a signal).
    pub fn login(&mut self, timeout: Duration, stopped: impl Fn() -> bool) -> anyhow::Result<()> {
        let until = std::time::Instant::now() + timeout;
        while !self.logged_in() {
            if stopped() {
                anyhow::bail!("stopped before the order session's login");
            }
            if self.s.report.login_rejects > 0 {
                anyhow::bail!(
                    "the order gateway {} refused the login (wrong --order-password, or another \
                     session)",
                    self.gateway
                );
            }
            if std::time::Instant::now() > until {
                anyhow::bail!(
                    "no SoupBinTCP login at the order gateway {} within {timeout:?} ({} \
                     connection(s) made): is the replay serving --orders tcp-kernel there?",
                    self.gateway,
                    self.s.report.connects
                );
            }
            self.service_now(now_ns());
            // Before the exchange listens each try is a SYN answered by an RST: a few a
            // second are enough there; once connected, the login's answer is awaited closely.
            let pause = if self.sock.is_none() && self.connecting.is_none() {
                5_000
            } else {
                200
            };
            std::thread::sleep(Duration::from_micros(pause));
        }
        Ok(())
    }

    /// Reads the answers, keeps the timers and the connection, at most every
    /// [`SERVICE_EVERY_NS`].
    #[inline]
    pub fn service(&mut self) {
        let now = now_ns();
        if now.saturating_sub(self.last_service) >= SERVICE_EVERY_NS {
            self.service_now(now);
        }
    }

    fn service_now(&mut self, now: u64) {
        self.last_service = now;
        self.s.expire(now);
        if self.sock.is_none() {
            if self.connecting.is_none() && now >= self.next_connect {
                self.next_connect = now + self.backoff.next_wait();
                self.start_connect(now);
            }
            self.finish_connect(now);
            if self.sock.is_none() {
                return;
            }
        }
        self.read(now);
        if self.s.client.state() == soup::ClientState::LoggedIn {
            self.backoff.up(now);
        }
        if let Some(soup::ClientEvent::ServerSilent) = self.s.client.tick(now, &mut self.pending) {
            self.s.report.server_silent += 1;
            self.lost();
        }
        self.write_pending();
    }

    /// Starts a connection from our address to the gateway, without waiting for it.
    fn start_connect(&mut self, now: u64) {
        use nix::sys::socket::{
            AddressFamily, SockFlag, SockType, SockaddrIn, bind, connect, socket,
        };
        let Ok(fd) = socket(
            AddressFamily::Inet,
            SockType::Stream,
            SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
            None,
        ) else {
            return;
        };
        if bind(
            fd.as_raw_fd(),
            &SockaddrIn::from(SocketAddrV4::new(self.ours, 0)),
        )
        .is_err()
        {
            return;
        }
        self.s.report.connect_tries += 1;
        match connect(fd.as_raw_fd(), &SockaddrIn::from(self.gateway)) {
            Ok(()) | Err(nix::errno::Errno::EINPROGRESS) => {
                self.connecting = Some((TcpStream::from(fd), now));
            }
            Err(_) => {}
        }
    }

    /// Whether the connection under way is made: then it logs in from the next answer not
    /// yet had. Given up after [`CONNECT_TIMEOUT_NS`].
    fn finish_connect(&mut self, now: u64) {
        use std::os::fd::AsFd as _;

        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let Some((sock, started)) = &self.connecting else {
            return;
        };
        let mut fds = [PollFd::new(sock.as_fd(), PollFlags::POLLOUT)];
        let ready = poll(&mut fds, PollTimeout::ZERO).unwrap_or(0) > 0;
        if !ready {
            if now.saturating_sub(*started) > CONNECT_TIMEOUT_NS {
                self.connecting = None;
                // Orders held for it were never taken: not sent.
                self.s.unsent(0);
            }
            return;
        }
        let Some((sock, _)) = self.connecting.take() else {
            return;
        };
        let refused =
            nix::sys::socket::getsockopt(&sock, nix::sys::socket::sockopt::SocketError) != Ok(0);
        let stamped = nix::sys::socket::setsockopt(
            &sock,
            nix::sys::socket::sockopt::ReceiveTimestampns,
            &true,
        );
        if refused || sock.set_nodelay(true).is_err() || stamped.is_err() {
            self.s.unsent(0);
            return;
        }
        if let Some((us, prefer, budget)) = self.busy_poll
            && let Err(e) = afxdp::sockopt::set_busy_poll(sock.as_raw_fd(), us, prefer, budget)
        {
            // The answers then come by interrupt, as without it; said once per connection.
            eprintln!("warning: busy polling on the order session's socket: {e:#}");
        }
        self.s.report.connects += 1;
        self.pending.clear();
        self.pending_orders = 0;
        self.s.client.connect(now, &mut self.pending);
        self.sock = Some(sock);
    }

    /// Reads what the gateway sent and takes each answer.
    fn read(&mut self, now: u64) {
        loop {
            let Some(sock) = &self.sock else { return };
            let (n, stamp) =
                match afxdp::sockopt::recv_stamped(sock.as_fd(), self.s.client.read_into()) {
                    Ok((0, _)) => return self.lost(),
                    Ok(got) => got,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => return self.lost(),
                };
            self.s.client.filled(n, now);
            let arrived = stamp.map_or(now, |real| self.clock.to_mono(real));
            self.s
                .take_events(arrived, &mut self.pending, &mut self.pending_orders);
            if self.s.client.state() == soup::ClientState::Disconnected {
                return self.lost();
            }
        }
    }

    /// The connection is gone: dropped, made again at the next service. Orders it never
    /// wholly took (held for a login that never came, or queued behind a partial write) are
    /// counted as not sent: the exchange can't have taken them.
    fn lost(&mut self) {
        if self.sock.take().is_some() {
            self.s.report.disconnects += 1;
        }
        self.s.client.disconnected();
        self.backoff.down();
        self.s.unsent(self.pending_orders);
        self.pending.clear();
        self.pending_orders = 0;
        // Made again after the backoff's wait: the first try after a login 0.5-1 ms on.
        self.next_connect = now_ns() + self.backoff.next_wait();
    }

    /// The test's fault: the connection reset (SO_LINGER 0, then close: an RST), and made
    /// again at once.
    #[cold]
    fn reset_now(&mut self) {
        if let Some(sock) = &self.sock {
            let _ = nix::sys::socket::setsockopt(
                sock,
                nix::sys::socket::sockopt::Linger,
                &nix::libc::linger {
                    l_onoff: 1,
                    l_linger: 0,
                },
            );
        }
        self.s.report.resets_injected += 1;
        self.lost();
        let now = now_ns();
        self.next_connect = 0;
        self.service_now(now);
    }

    /// An End of Session an order finds standing is doubted ([`Session::doubts_end`]): the
    /// connection ended, to be logged into again.
    fn doubt_standing_end(&mut self) {
        if self.s.doubts_end() {
            self.lost();
        }
    }

    fn write_pending(&mut self) {
        let Some(sock) = &mut self.sock else { return };
        while !self.pending.is_empty() {
            match sock.write(&self.pending) {
                Ok(n) if n > 0 => {
                    self.s.digest.add(&self.pending[..n]);
                    self.pending.drain(..n);
                    if self.pending.is_empty() {
                        self.pending_orders = 0;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                _ => return self.lost(),
            }
        }
    }

    /// The loop has ended: waits (up to `timeout`) for the answers to every order sent and the
    /// exchange's End of Session, then logs out. Returns the session's report.
    pub fn finish(&mut self, timeout: Duration) -> OrderSessionReport {
        let until = std::time::Instant::now() + timeout;
        while (self.sock.is_some() || self.connecting.is_some())
            && !self.s.answered()
            && std::time::Instant::now() < until
        {
            self.service_now(now_ns());
            std::thread::sleep(Duration::from_micros(200));
        }
        if self.sock.is_some() {
            self.s.client.logout(now_ns(), &mut self.pending);
            self.write_pending();
        }
        self.s.final_report()
    }
}

/// What both order sessions share (the kernel TCP's here, the userspace TCP's in `tcp_xdp`):
/// the SoupBinTCP client end, the orders held for a login, each order's awaited answer, the
/// round trip to Order Accepted, and the report.
#[derive(Debug)]
pub(super) struct Session {
    pub(super) client: soup::Client,
    /// Orders made while a login is under way: sent once it is accepted (SoupBinTCP takes no
    /// data before).
    pub(super) held: Vec<u8>,
    /// The RX time of the packet whose orders are being sent.
    pub(super) tick_rx: u64,
    /// Each order sent until its answers come, matched to what it said ([`super::answers`]).
    answers: Answers,
    /// The sequenced message last refused as a mismatch: said again in a new login's replay,
    /// it is the exchange's own word (counted, not booked), not a forger's.
    refused: Option<u64>,
    /// The time the last service saw: when an order with no tick time went, near enough.
    now_hint: u64,
    /// The exchange ended the session on this login (an End of Session): nothing more is
    /// sent on it. A new login clears it (the report's `end_of_session` stays).
    pub(super) ended: bool,
    /// Every byte given to the TCP, in order (the report's `stream_*`).
    pub(super) digest: soup::Digest,
    pub(super) report: OrderSessionReport,
}

impl Session {
    /// The lab's session (username, session name), logging in with `password`, giving a
    /// connection up after `timeout` of the exchange's silence; its buffers touched now.
    pub(super) fn new(
        orders: paths::Orders,
        password: &str,
        timeout: Duration,
    ) -> anyhow::Result<Session> {
        use wire::soupbin::alpha;
        let bad = |what: &str, e: wire::Error| anyhow::anyhow!("the order session's {what}: {e}");
        let config = soup::ClientConfig {
            session: soup::Session::new(paths::market::ORDER_SESSION)
                .map_err(|e| bad("session", e))?,
            peer_timeout_ns: u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX),
            ..soup::ClientConfig::new(
                alpha(paths::market::ORDER_USER.as_bytes()).map_err(|e| bad("username", e))?,
                alpha(password.as_bytes()).map_err(|e| bad("password", e))?,
            )
        };
        Ok(Session {
            client: soup::Client::new(config),
            held: prefaulted(64 * 1024),
            tick_rx: 0,
            answers: Answers::new(),
            refused: None,
            now_hint: 0,
            ended: false,
            digest: soup::Digest::default(),
            report: OrderSessionReport {
                orders,
                next_seq: 1,
                ..OrderSessionReport::default()
            },
        })
    }

    /// `order` as its SoupBinTCP packet in `buf`: its UserRefNum and bytes; `None`, counted
    /// as not sent, if it doesn't encode.
    #[inline]
    pub(super) fn encode<'b>(
        &mut self,
        order: &OrderRepr,
        buf: &'b mut [u8; ORDER_PACKET],
    ) -> Option<(u32, &'b [u8])> {
        let Some((user_ref_num, n)) = order_packet(order, buf) else {
            self.report.not_sent += 1;
            return None;
        };
        Some((user_ref_num, &buf[..n]))
    }

    /// `packet` waits for the login under way (SoupBinTCP takes no data before).
    #[inline]
    pub(super) fn hold(&mut self, packet: &[u8]) {
        self.report.held += 1;
        self.held.extend_from_slice(packet);
    }

    /// An order went (or was held for the login), its SoupBinTCP `packet` as sent: counted,
    /// its answers awaited and matched to what it said.
    #[inline]
    pub(super) fn sent(&mut self, packet: &[u8]) {
        self.report.sent += 1;
        let at = if self.tick_rx != 0 {
            self.tick_rx
        } else {
            self.now_hint
        };
        if let Some(terms) = Terms::of(packet) {
            self.answers.sent(terms, self.tick_rx, at);
        }
    }

    /// The orders unanswered for [`super::answers::DEADLINE_NS`] at `now` given up
    /// (`unanswered`). Called by each service.
    pub(super) fn expire(&mut self, now: u64) {
        self.now_hint = now;
        self.answers.expire(now, &mut self.report);
    }

    /// An order the XDP program sent (the TCP trigger), its `packet` with the tick's price:
    /// counted, its answer awaited, untimed (no clock here saw its tick arrive).
    pub(super) fn fired(&mut self, packet: &[u8]) {
        let tick_rx = std::mem::replace(&mut self.tick_rx, 0);
        // Learned after the program sent it: its clock read is off every order's path.
        self.now_hint = now_ns();
        self.sent(packet);
        self.tick_rx = tick_rx;
        self.report.fired += 1;
    }

    /// What the client's bytes (one read's) meant, the answers timed from `arrived`; orders
    /// held for the login go to `out` behind it once it is accepted (`out_orders` counts
    /// them).
    pub(super) fn take_events(&mut self, arrived: u64, out: &mut Vec<u8>, out_orders: &mut u64) {
        // A Login Accepted among these bytes: the messages after it are its replay, written
        // with it (one write, one segment), where no forger's bytes can come between.
        let mut with_login = false;
        while let Some(event) = self.client.poll() {
            match event {
                soup::ClientEvent::Sequenced { seq, message } => {
                    let answer = Outbound::parse(message).ok();
                    if self.answers.take(answer, arrived, &mut self.report) == Verdict::Booked {
                        continue;
                    }
                    self.report.mismatched_answers += 1;
                    if self.refused == Some(seq) && with_login {
                        // The exchange says it again in a new login's replay: its word, not
                        // booked. The same number said after the replay, in bytes of their
                        // own, is a forger's again (the exchange had nothing there to replay).
                        continue;
                    }
                    // The stream stops making sense here: this connection is over, and the
                    // next login asks from this number again.
                    self.refused = Some(seq);
                    self.report.refused_streams += 1;
                    self.client.refuse(seq);
                    return;
                }
                other => {
                    with_login |= matches!(other, soup::ClientEvent::LoggedIn { .. });
                    take_event(
                        &mut self.report,
                        &mut self.ended,
                        &mut self.held,
                        other,
                        out,
                        out_orders,
                    );
                }
            }
        }
    }

    /// Whether orders may go: logged in, and the exchange hasn't ended the session on this
    /// login. The TCP trigger arms only while it holds.
    pub(super) fn up(&self) -> bool {
        self.client.state() == soup::ClientState::LoggedIn && !self.ended
    }

    /// An order is to go on a login the exchange has said End of Session on: the feed still
    /// trades, so the end may be a forgery (bytes at exactly the next number, which a TCP
    /// can't tell from the exchange's, and after which the exchange's own bytes at those
    /// numbers are taken as a retransmission: the stream goes on as if nothing happened, and
    /// no order would go again). True (counted) if so: the caller ends the connection, the
    /// order is not sent, and the next login asks the exchange, which says so again if the
    /// session is over.
    pub(super) fn doubts_end(&mut self) -> bool {
        if !self.ended || self.client.state() != soup::ClientState::LoggedIn {
            return false;
        }
        self.report.doubted_ends += 1;
        // The login it was said on is over with the connection.
        self.ended = false;
        true
    }

    /// The connection went with orders it never wholly took (`queued` behind other bytes, and
    /// those held for a login): counted as not sent, since the exchange can't have them.
    pub(super) fn unsent(&mut self, queued: u64) {
        let n = (self.held.len() / ORDER_PACKET) as u64 + queued;
        self.report.not_sent += n;
        self.report.sent -= n.min(self.report.sent);
        // The latest orders sent: no answer will come for them.
        self.answers.forget_last(n);
        self.held.clear();
    }

    /// Whether every order sent has its answer, and the session its end (on this login: an
    /// end said on an earlier one was doubted, and the exchange's own is still to come).
    pub(super) fn answered(&self) -> bool {
        self.report.accepted + self.report.rejected >= self.report.sent && self.ended
    }

    /// The report, with where the session stands and the round trip's percentiles.
    pub(super) fn final_report(&mut self) -> OrderSessionReport {
        // Still awaited at the end: never answered.
        self.answers.finish(&mut self.report);
        self.report.next_seq = self.client.next_seq();
        self.report.rx_to_ack = self.answers.rx_to_ack.summary();
        self.report.stream_bytes = self.digest.bytes;
        self.report.stream_hash = self.digest.hash;
        self.report.clone()
    }
}

/// A buffer of `capacity` bytes whose pages are touched now, empty.
pub(super) fn prefaulted(capacity: usize) -> Vec<u8> {
    let mut v = vec![0u8; capacity];
    v.clear();
    v
}

/// A session event other than a sequenced answer: a login sends what was held for it and
/// clears an earlier end of session; an End of Session stops sends on this login.
fn take_event(
    r: &mut OrderSessionReport,
    ended: &mut bool,
    held: &mut Vec<u8>,
    event: soup::ClientEvent<'_>,
    out: &mut Vec<u8>,
    out_orders: &mut u64,
) {
    match event {
        soup::ClientEvent::LoggedIn { .. } => {
            r.logins += 1;
            *ended = false;
            out.extend_from_slice(held);
            *out_orders += (held.len() / ORDER_PACKET) as u64;
            held.clear();
        }
        soup::ClientEvent::Rejected(_) => r.login_rejects += 1,
        soup::ClientEvent::EndOfSession => {
            r.end_of_session = true;
            *ended = true;
        }
        soup::ClientEvent::Malformed(_)
        | soup::ClientEvent::Unexpected { .. }
        | soup::ClientEvent::Rewound { .. } => r.protocol_errors += 1,
        soup::ClientEvent::ServerSilent | soup::ClientEvent::Sequenced { .. } => {}
    }
}

impl OrderSink for TcpOrders {
    /// One Enter Order, one packet, one `write`: false (counted) if no session is logged in
    /// or the order doesn't encode.
    #[inline]
    fn send(&mut self, order: &OrderRepr) -> bool {
        self.doubt_standing_end();
        let state = self.s.client.state();
        if self.sock.is_none() && self.connecting.is_some() && !self.s.ended {
            // A connection under way: held for its login, as the userspace TCP holds an order
            // made while its SYN is out (one rule for both transports: held while a connection
            // or a login is being made, not sent when none is).
            let mut packet = [0u8; ORDER_PACKET];
            let Some((_, packet)) = self.s.encode(order, &mut packet) else {
                return false;
            };
            self.s.hold(packet);
            self.s.sent(packet);
            return true;
        }
        // No session, or one the exchange has ended: nothing can be taken.
        let (Some(sock), false) = (
            &mut self.sock,
            state == soup::ClientState::Disconnected || self.s.ended,
        ) else {
            self.s.report.not_sent += 1;
            return false;
        };
        let mut packet = [0u8; ORDER_PACKET];
        let Some((_, packet)) = self.s.encode(order, &mut packet) else {
            return false;
        };
        if state == soup::ClientState::LoggingIn {
            // A login under way: the order goes once it is accepted.
            self.s.hold(packet);
        } else {
            // Behind bytes still queued, an order waits its turn in the same buffer.
            let written = if self.pending.is_empty() {
                match sock.write(packet) {
                    Ok(w) => {
                        self.s.digest.add(&packet[..w]);
                        w
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => 0,
                    Err(_) => {
                        self.s.report.not_sent += 1;
                        self.lost();
                        return false;
                    }
                }
            } else {
                0
            };
            if written < packet.len() {
                self.s.report.partial_writes += 1;
                self.pending.extend_from_slice(&packet[written..]);
                self.pending_orders += 1;
            }
        }
        self.s.sent(packet);
        if self.reset_after == Some(self.s.report.sent) {
            self.reset_after = None;
            self.reset_now();
        }
        true
    }

    /// What a partial write left, now.
    #[inline]
    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            self.write_pending();
        }
        Ok(())
    }
}

/// `order` as one SoupBinTCP Unsequenced Data packet holding its OUCH Enter Order, at the
/// front of `packet`: its `UserRefNum` and the packet's length; `None` if it doesn't encode.
#[inline]
pub(super) fn order_packet(
    order: &OrderRepr,
    packet: &mut [u8; ORDER_PACKET],
) -> Option<(u32, usize)> {
    let enter = EnterOrder::from_order(order).ok()?;
    let n = enter.emit_into(&mut packet[HEADER_LEN..]).ok()?;
    // The header around the message: SoupBinTCP's Unsequenced Data.
    let len = u16::try_from(n + 1).ok()?;
    packet[..2].copy_from_slice(&len.to_be_bytes());
    packet[2] = wire::soupbin::kind::UNSEQUENCED_DATA;
    debug_assert!(matches!(
        Repr::parse(&packet[..HEADER_LEN + n]),
        Ok((Repr::UnsequencedData(_), _))
    ));
    Some((enter.user_ref_num, HEADER_LEN + n))
}

/// A [`TraderIo`] whose orders go to a [`TcpOrders`] session instead of its own sink.
#[derive(Debug)]
pub struct WithOrders<'a, I> {
    io: &'a mut I,
    orders: &'a mut TcpOrders,
}

impl<'a, I: TraderIo> WithOrders<'a, I> {
    /// `io`'s feed, `orders`' session.
    pub fn new(io: &'a mut I, orders: &'a mut TcpOrders) -> Self {
        WithOrders { io, orders }
    }
}

/// The handler the wrapped I/O calls: the loop's, with the session as the sink.
struct Swap<'a, H> {
    handler: &'a mut H,
    orders: &'a mut TcpOrders,
}

impl<H: PacketHandler> PacketHandler for Swap<'_, H> {
    #[inline]
    fn on_packet<S: OrderSink>(
        &mut self,
        payload: &[u8],
        line: Line,
        claim: Option<Claim>,
        sender: Sender,
        t_rx: u64,
        _own: &mut S,
    ) {
        self.orders.s.tick_rx = t_rx;
        self.handler
            .on_packet(payload, line, claim, sender, t_rx, &mut *self.orders);
    }
}

impl<I: TraderIo> TraderIo for WithOrders<'_, I> {
    #[inline]
    fn recv<H: PacketHandler>(&mut self, max: usize, handler: &mut H) -> io::Result<usize> {
        let mut swap = Swap {
            handler,
            orders: self.orders,
        };
        self.io.recv(max, &mut swap)
    }

    fn idle(&mut self) {
        self.io.idle();
        self.orders.service();
    }

    fn send_request(&mut self, to: SocketAddrV4, payload: &[u8]) -> io::Result<()> {
        self.io.send_request(to, payload)
    }

    fn cap_wait(&mut self, ms: i32) {
        self.io.cap_wait(ms);
    }

    fn with_sink(&mut self, f: &mut dyn FnMut(&mut dyn OrderSink)) {
        f(self.orders);
    }

    fn pin_source(&mut self, line: Line, source: FeedSource) {
        self.io.pin_source(line, source);
    }

    fn after_turn(&mut self, trader: &mut Trader) {
        self.io.after_turn(trader);
        self.orders.service();
    }

    fn finish<H: PacketHandler>(&mut self, handler: &mut H) {
        let mut swap = Swap {
            handler,
            orders: self.orders,
        };
        self.io.finish(&mut swap);
    }

    /// The kernel TCP session's login, before the feed.
    fn login_orders(
        &mut self,
        timeout: Duration,
        stopped: &dyn Fn() -> bool,
    ) -> anyhow::Result<()> {
        self.orders.login(timeout, stopped)
    }

    fn finish_orders(&mut self, timeout: Duration) -> Option<OrderSessionReport> {
        Some(self.orders.finish(timeout))
    }
}

#[cfg(test)]
mod tests {
    use wire::ouch::{OrderAccepted, Price4, Side, Stock};

    use super::*;

    /// The server's bytes: a Login Accepted from `from`, then each message sequenced.
    fn down(from: u64, messages: &[Vec<u8>]) -> Vec<u8> {
        let mut out = vec![0u8; 4096];
        let session = soup::Session::new(paths::market::ORDER_SESSION).unwrap();
        let mut n = Repr::LoginAccepted {
            session,
            sequence: from,
        }
        .emit_into(&mut out)
        .unwrap();
        for m in messages {
            n += Repr::SequencedData(m).emit_into(&mut out[n..]).unwrap();
        }
        out.truncate(n);
        out
    }

    fn take(s: &mut Session, bytes: &[u8]) {
        let space = s.client.read_into();
        space[..bytes.len()].copy_from_slice(bytes);
        s.client.filled(bytes.len(), 0);
        let (mut out, mut n) = (Vec::new(), 0);
        s.take_events(0, &mut out, &mut n);
    }

    /// An Order Accepted for `order`'s `user_ref` at `price`, as OUCH bytes.
    fn accepted_bytes(order: &OrderRepr, user_ref: u32, price: u32) -> Vec<u8> {
        let mut m = vec![0u8; wire::ouch::order_accepted::LEN];
        OrderAccepted {
            timestamp: 0,
            user_ref_num: user_ref,
            side: order.side,
            quantity: order.shares,
            symbol: order.stock,
            price: Price4(price),
            time_in_force: wire::ouch::time_in_force::IOC,
            display: wire::ouch::display::VISIBLE,
            order_reference_number: 1,
            capacity: wire::ouch::capacity::PRINCIPAL,
            intermarket_sweep: wire::ouch::intermarket_sweep::NO,
            cross_type: wire::ouch::cross_type::CONTINUOUS,
            order_state: wire::ouch::order_state::LIVE,
            cl_ord_id: [b'0'; 14],
        }
        .emit(&mut wire::ouch::order_accepted::Packet::new_unchecked(
            &mut m[..],
        ));
        m
    }

    /// A forged answer in the stream (another price) is never booked: the connection ends
    /// and the next login asks for its number again, where the exchange's own answer comes
    /// and is booked. The same thing said again after a new login is the exchange's word:
    /// counted, not booked, and the session goes on.
    #[test]
    fn a_forged_answer_ends_the_connection_and_is_asked_for_again() {
        let mut s = TcpOrders::new(
            Ipv4Addr::LOCALHOST,
            SocketAddrV4::new([127, 0, 0, 1].into(), 9),
            "pw",
            Duration::from_secs(1),
        )
        .unwrap()
        .s;
        let order = OrderRepr {
            side: Side::Buy,
            reverse: false,
            shares: 100,
            token: 1,
            tick_seq: 1,
            price: Price4(10_000),
            stock: Stock::new("SYNTH").unwrap(),
        };
        let mut packet = [0u8; ORDER_PACKET];
        let (user_ref, n) = order_packet(&order, &mut packet).unwrap();
        let mut out = Vec::new();
        s.client.connect(0, &mut out);
        s.sent(&packet[..n]);
        take(&mut s, &down(1, &[accepted_bytes(&order, user_ref, 9_999)]));
        let r = &s.report;
        assert_eq!(
            (r.accepted, r.mismatched_answers, r.refused_streams),
            (0, 1, 1)
        );
        assert_eq!(s.client.state(), soup::ClientState::Disconnected);
        assert_eq!(s.client.next_seq(), 1, "asked for again");
        // The new login: the exchange's own answer at 1.
        s.client.connect(1, &mut out);
        take(
            &mut s,
            &down(1, &[accepted_bytes(&order, user_ref, 10_000)]),
        );
        assert_eq!((s.report.accepted, s.client.next_seq()), (1, 2));
        assert_eq!(s.client.state(), soup::ClientState::LoggedIn);
        // An exchange that says something that matches nothing twice, across a login.
        let stray = accepted_bytes(&order, user_ref + 5, 10_000);
        take(&mut s, &stray_at(&stray));
        assert_eq!(s.client.state(), soup::ClientState::Disconnected);
        s.client.connect(2, &mut out);
        take(&mut s, &down(2, std::slice::from_ref(&stray)));
        assert_eq!(
            s.client.state(),
            soup::ClientState::LoggedIn,
            "its word: goes on"
        );
        let r = &s.report;
        assert_eq!(
            (r.accepted, r.mismatched_answers, r.refused_streams),
            (1, 3, 2)
        );
    }

    /// The exchange's word is a refused number said again in the new login's replay (with its
    /// Login Accepted); the same number in bytes of their own after the login is a forger's
    /// again (the exchange had nothing there to replay): refused again, asked for again.
    #[test]
    fn a_refused_number_said_again_after_the_login_is_refused_again() {
        let mut s = TcpOrders::new(
            Ipv4Addr::LOCALHOST,
            SocketAddrV4::new([127, 0, 0, 1].into(), 9),
            "pw",
            Duration::from_secs(1),
        )
        .unwrap()
        .s;
        let order = OrderRepr {
            side: Side::Buy,
            reverse: false,
            shares: 100,
            token: 1,
            tick_seq: 1,
            price: Price4(10_000),
            stock: Stock::new("SYNTH").unwrap(),
        };
        let forged = accepted_bytes(&order, 0xF0F0_0000, 10_000);
        let mut out = Vec::new();
        s.client.connect(0, &mut out);
        take(&mut s, &down(1, &[]));
        for login in 1..=2 {
            take(&mut s, &stray_at(&forged));
            assert_eq!(s.client.state(), soup::ClientState::Disconnected, "{login}");
            assert_eq!(s.client.next_seq(), 1, "{login}: asked for again");
            s.client.connect(login, &mut out);
            take(&mut s, &down(1, &[]));
        }
        let r = &s.report;
        assert_eq!((r.mismatched_answers, r.refused_streams), (2, 2));
        // In the replay, with the Login Accepted: the exchange's word, and the session goes on.
        take(&mut s, &stray_at(&forged));
        s.client.connect(3, &mut out);
        take(&mut s, &down(1, std::slice::from_ref(&forged)));
        assert_eq!(s.client.state(), soup::ClientState::LoggedIn);
        let r = &s.report;
        assert_eq!(
            (r.mismatched_answers, r.refused_streams, r.accepted),
            (4, 3, 0)
        );
    }

    /// One sequenced message on a logged-in connection.
    fn stray_at(m: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; 256];
        let n = Repr::SequencedData(m).emit_into(&mut out).unwrap();
        out.truncate(n);
        out
    }

    /// An End of Session stops sends on its login, and only on it: a new login (a reconnect,
    /// or a forged end's connection ended and made again) sends again.
    #[test]
    fn an_end_of_session_is_not_sticky_across_a_new_login() {
        let mut r = OrderSessionReport::default();
        let (mut ended, mut held, mut out, mut n) = (false, Vec::new(), Vec::new(), 0);
        let login = soup::ClientEvent::LoggedIn {
            session: soup::Session::new(paths::market::ORDER_SESSION).unwrap(),
            sequence: 1,
        };
        take_event(&mut r, &mut ended, &mut held, login, &mut out, &mut n);
        assert!(!ended);
        let end = soup::ClientEvent::EndOfSession;
        take_event(&mut r, &mut ended, &mut held, end, &mut out, &mut n);
        assert!(ended && r.end_of_session);
        take_event(&mut r, &mut ended, &mut held, login, &mut out, &mut n);
        assert!(!ended, "a new login sends again");
        assert!(r.end_of_session, "the report keeps that an end came");
        assert_eq!(r.logins, 2);
    }

    /// An End of Session that an order of the trader's finds still standing is doubted once
    /// on its login (counted, the login over): the next login is the exchange's to say it
    /// again on; until then the session's end is not had.
    #[test]
    fn an_end_of_session_an_order_finds_standing_is_doubted_and_asked_again() {
        let mut s = TcpOrders::new(
            Ipv4Addr::LOCALHOST,
            SocketAddrV4::new([127, 0, 0, 1].into(), 9),
            "pw",
            Duration::from_secs(1),
        )
        .unwrap()
        .s;
        let mut out = Vec::new();
        s.client.connect(0, &mut out);
        take(&mut s, &down(1, &[]));
        assert!(!s.doubts_end(), "no end said: nothing to doubt");
        let mut end = vec![0u8; 3];
        Repr::EndOfSession.emit_into(&mut end).unwrap();
        take(&mut s, &end);
        assert!(
            s.ended && !s.up() && s.answered(),
            "the end stops orders on its login"
        );
        assert!(s.doubts_end());
        assert_eq!(s.report.doubted_ends, 1);
        assert!(!s.answered(), "the exchange's own end is still to come");
        assert!(!s.doubts_end(), "once a login");
        // The transport ends the connection; the new login's end is the exchange's to say.
        s.client.disconnected();
        s.client.connect(1, &mut out);
        take(&mut s, &down(1, &[]));
        take(&mut s, &end);
        assert!(s.answered() && s.report.end_of_session);
        assert_eq!(s.report.logins, 2);
    }

    #[test]
    fn an_order_without_a_session_is_counted_not_sent() {
        let mut o = TcpOrders::new(
            Ipv4Addr::LOCALHOST,
            SocketAddrV4::new([127, 0, 0, 1].into(), 9),
            "pw",
            Duration::from_secs(1),
        )
        .unwrap();
        let order = OrderRepr {
            side: Side::Sell,
            reverse: true,
            shares: 200,
            token: 1,
            tick_seq: 5,
            price: Price4(10),
            stock: Stock::new("LAB").unwrap(),
        };
        assert!(!o.send(&order));
        assert_eq!((o.s.report.not_sent, o.s.report.sent), (1, 0));
    }
}
