//! The order session on a userspace TCP over AF_XDP (`--orders tcp-xdp`): smoltcp on the
//! feed's own socket and UMEM.
//!
//! The XDP program steers the session's segments (from the order gateway's address and port
//! to ours, `ORDER_TCP` on) into the same AF_XDP socket as the feed; the AF_XDP path hands
//! each frame that isn't the feed to [`XdpTcp::take_frame`], which keeps the IP packet for
//! smoltcp. smoltcp's segments leave as frames on the same TX ring as the path's UDP orders
//! would, the Ethernet header written from the gateway's next hop read at start (smoltcp runs
//! on an IP medium: no ARP of its own; the lab pins the gateway's MAC). The kernel never sees
//! the session: no socket of its own, no skb, no system call but the TX ring's kick.
//!
//! An order is one SoupBinTCP packet given to the socket and sent at once (`poll_egress`,
//! Nagle off, acks not delayed); answers, heartbeats and reconnects run between packets
//! ([`XdpTcp::service`]), as in the kernel TCP session ([`super::tcp`]), whose session rules,
//! answer bookkeeping and report this shares.
use std::{
    collections::VecDeque,
    net::{Ipv4Addr, SocketAddrV4},
    time::Duration,
};

use results::OrderSessionReport;
use smoltcp::{
    iface::{Config, Interface, SocketHandle, SocketSet},
    phy::{self, Device, DeviceCapabilities, Medium},
    socket::tcp,
    time::Instant,
    wire::{HardwareAddress, IpAddress, IpCidr},
};
use wire::{order::OrderRepr, ouch::Outbound};

use super::tcp::{ORDER_PACKET, order_packet, take_answer};
use crate::{clock::now_ns, stats::Latency, xsk::XskTx};

/// Ethernet header length.
const ETH: usize = xdp_common::layout::ethernet::HEADER_LEN;
/// The frames smoltcp may build: the lab's MTU.
const MTU: usize = 1500;
/// A lost connection is tried again this often.
const RECONNECT_EVERY_NS: u64 = 1_000_000;
/// The answers and timers are looked at no more often than this.
const SERVICE_EVERY_NS: u64 = 50_000;
/// Orders whose answer is awaited, kept for the ack latency.
const AWAITED: usize = 1 << 16;
/// Segments waiting for smoltcp at most (more are dropped: TCP sends them again).
const RX_QUEUE: usize = 1024;

/// The order session of a userspace TCP on the AF_XDP socket.
pub struct XdpTcp {
    iface: Interface,
    sockets: SocketSet<'static>,
    handle: SocketHandle,
    /// IP packets of the session taken from the RX ring, for smoltcp.
    rx: VecDeque<Vec<u8>>,
    /// The Ethernet header of every frame smoltcp sends: to the gateway's next hop, from us.
    eth: [u8; ETH],
    gateway: SocketAddrV4,
    ours: Ipv4Addr,
    local_port: u16,
    client: soup::Client,
    /// What the session has to send that the socket hasn't taken yet (login, heartbeats).
    out: Vec<u8>,
    /// Orders made while a login is under way, sent once it is accepted.
    held: Vec<u8>,
    tick_rx: u64,
    awaited: VecDeque<(u32, u64)>,
    rx_to_ack: Latency,
    /// When the last segment of the session came off the RX ring (the answers' arrival).
    last_frame_rx: u64,
    last_service: u64,
    next_connect: u64,
    report: OrderSessionReport,
}

impl std::fmt::Debug for XdpTcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpTcp")
            .field("gateway", &self.gateway)
            .field("local_port", &self.local_port)
            .field("report", &self.report)
            .finish_non_exhaustive()
    }
}

/// smoltcp's device for one poll: the session's queued packets in, the TX ring out.
struct Dev<'a> {
    rx: &'a mut VecDeque<Vec<u8>>,
    tx: &'a mut XskTx,
    eth: [u8; ETH],
}

struct Rx(Vec<u8>);

struct Tx<'a> {
    tx: &'a mut XskTx,
    eth: [u8; ETH],
}

impl phy::RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl phy::TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut f = Some(f);
        let mut r = None;
        let eth = self.eth;
        let sent = self.tx.send(|frame| {
            let whole = ETH + len;
            let buf = frame.get_mut(..whole)?;
            buf[..ETH].copy_from_slice(&eth);
            r = f.take().map(|f| f(&mut buf[ETH..]));
            Some(whole)
        });
        match (r, f) {
            (Some(r), _) => r,
            // No TX frame free: the segment is built and dropped (TCP sends it again).
            (None, Some(f)) => {
                debug_assert!(sent.is_err());
                let mut scratch = vec![0u8; len];
                f(&mut scratch)
            }
            (None, None) => unreachable!("the builder either ran or is still here"),
        }
    }
}

impl Device for Dev<'_> {
    type RxToken<'b>
        = Rx
    where
        Self: 'b;
    type TxToken<'b>
        = Tx<'b>
    where
        Self: 'b;

    fn receive(&mut self, _: Instant) -> Option<(Rx, Tx<'_>)> {
        let packet = self.rx.pop_front()?;
        Some((
            Rx(packet),
            Tx {
                tx: self.tx,
                eth: self.eth,
            },
        ))
    }

    fn transmit(&mut self, _: Instant) -> Option<Tx<'_>> {
        Some(Tx {
            tx: self.tx,
            eth: self.eth,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ip;
        caps.max_transmission_unit = MTU;
        caps.max_burst_size = Some(1);
        caps
    }
}

fn instant(ns: u64) -> Instant {
    Instant::from_micros(i64::try_from(ns / 1_000).unwrap_or(i64::MAX))
}

impl XdpTcp {
    /// A session from `ours` to `gateway`, whose next hop is `gateway_mac` and ours `our_mac`,
    /// logging in with `password`, giving a connection up after `timeout` of silence; not
    /// connected until the first service.
    pub fn new(
        ours: Ipv4Addr,
        our_mac: [u8; 6],
        gateway: SocketAddrV4,
        gateway_mac: [u8; 6],
        password: &str,
        timeout: Duration,
    ) -> anyhow::Result<XdpTcp> {
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
        let mut eth = [0u8; ETH];
        eth[..6].copy_from_slice(&gateway_mac);
        eth[6..12].copy_from_slice(&our_mac);
        eth[12..].copy_from_slice(&xdp_common::layout::ethernet::ETHERTYPE_IPV4.to_be_bytes());
        let mut rx = VecDeque::with_capacity(RX_QUEUE);
        let mut scratch_tx = Vec::new();
        let mut iface = {
            // A device for the interface's creation only (it sends nothing).
            let mut probe = Probe(&mut scratch_tx);
            let mut config = Config::new(HardwareAddress::Ip);
            config.random_seed = now_ns();
            Interface::new(config, &mut probe, instant(now_ns()))
        };
        iface.update_ip_addrs(|a| {
            let _ = a.push(IpCidr::new(IpAddress::Ipv4(ours), 30));
        });
        let mut socket = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; 64 * 1024]),
            tcp::SocketBuffer::new(vec![0; 256 * 1024]),
        );
        socket.set_nagle_enabled(false);
        socket.set_ack_delay(None);
        let mut sockets = SocketSet::new(Vec::new());
        let handle = sockets.add(socket);
        rx.clear();
        Ok(XdpTcp {
            iface,
            sockets,
            handle,
            rx,
            eth,
            gateway,
            ours,
            // An ephemeral-range port of this process's own, moved on at each reconnect.
            local_port: 49_152 + (std::process::id() % 8_192) as u16,
            client: soup::Client::new(config),
            out: Vec::with_capacity(64 * 1024),
            held: Vec::with_capacity(64 * 1024),
            tick_rx: 0,
            awaited: VecDeque::with_capacity(AWAITED),
            rx_to_ack: Latency::new(),
            last_frame_rx: 0,
            last_service: 0,
            next_connect: 0,
            report: OrderSessionReport {
                orders: paths::Orders::TcpXdp,
                next_seq: 1,
                ..OrderSessionReport::default()
            },
        })
    }

    /// Logged in: orders go out.
    pub fn logged_in(&self) -> bool {
        self.client.state() == soup::ClientState::LoggedIn
    }

    /// Logins refused so far.
    pub fn login_rejects(&self) -> u64 {
        self.report.login_rejects
    }

    /// TCP connections tried so far.
    pub fn connects(&self) -> u64 {
        self.report.connects
    }

    /// The gateway.
    pub fn gateway(&self) -> SocketAddrV4 {
        self.gateway
    }

    /// Takes `frame` (from the RX ring) if it is a segment of the session: IPv4, TCP, from the
    /// gateway's address and port to ours. False: not the session's (the caller counts it).
    #[inline]
    pub fn take_frame(&mut self, frame: &[u8]) -> bool {
        use xdp_common::layout::{at, ipv4, tcp as l4};
        let ip = &frame.get(ETH..).unwrap_or(&[]);
        let field = |f: xdp_common::layout::Field| ip.get(f);
        let session = field(ipv4::PROTOCOL..ipv4::PROTOCOL + 1) == Some(&[ipv4::PROTOCOL_TCP])
            && field(ipv4::SRC) == Some(&self.gateway.ip().octets())
            && field(ipv4::DST) == Some(&self.ours.octets())
            && field(at(ipv4::HEADER_LEN, l4::SRC_PORT))
                == Some(&self.gateway.port().to_be_bytes());
        if !session {
            return false;
        }
        // The IP datagram only (a frame may carry padding past it).
        let total = field(ipv4::TOTAL_LEN).map_or(ip.len(), |t| {
            usize::from(u16::from_be_bytes([t[0], t[1]])).min(ip.len())
        });
        if self.rx.len() < RX_QUEUE {
            self.rx.push_back(ip[..total].to_vec());
        }
        self.last_frame_rx = now_ns();
        true
    }

    /// Sets the RX time of the packet whose orders follow.
    #[inline]
    pub fn set_tick_rx(&mut self, t_rx: u64) {
        self.tick_rx = t_rx;
    }

    /// One order: one SoupBinTCP packet into the socket, sent at once on `tx` (the caller
    /// kicks). False, and counted, if no session is logged in or the socket can't take it.
    #[inline]
    pub fn send(&mut self, order: &OrderRepr, tx: &mut XskTx) -> bool {
        let state = self.client.state();
        if state == soup::ClientState::Disconnected {
            self.report.not_sent += 1;
            return false;
        }
        let mut packet = [0u8; ORDER_PACKET];
        let Some((user_ref_num, n)) = order_packet(order, &mut packet) else {
            self.report.not_sent += 1;
            return false;
        };
        let packet = &packet[..n];
        if state == soup::ClientState::LoggingIn {
            self.report.held += 1;
            self.held.extend_from_slice(packet);
        } else {
            let socket = self.sockets.get_mut::<tcp::Socket>(self.handle);
            match socket.send_slice(packet) {
                Ok(k) if k == n => {}
                _ => {
                    // The socket's buffer full (the exchange not reading): not sent.
                    self.report.not_sent += 1;
                    return false;
                }
            }
            let mut dev = Dev {
                rx: &mut self.rx,
                tx,
                eth: self.eth,
            };
            let _ = self
                .iface
                .poll_egress(instant(self.tick_rx), &mut dev, &mut self.sockets);
        }
        self.report.sent += 1;
        if self.awaited.len() == AWAITED {
            self.awaited.pop_front();
        }
        self.awaited.push_back((user_ref_num, self.tick_rx));
        true
    }

    /// Answers, timers and the connection, at most every [`SERVICE_EVERY_NS`]; `tx` for what
    /// the stack sends (the caller kicks). Whether it ran (and so may have queued frames).
    #[inline]
    pub fn service(&mut self, tx: &mut XskTx) -> bool {
        let now = now_ns();
        if now.saturating_sub(self.last_service) < SERVICE_EVERY_NS {
            return false;
        }
        self.service_now(now, tx);
        true
    }

    /// [`XdpTcp::service`] now.
    pub fn service_now(&mut self, now: u64, tx: &mut XskTx) {
        self.last_service = now;
        self.poll(now, tx);
        let state = self.sockets.get::<tcp::Socket>(self.handle).state();
        match (state, self.client.state()) {
            (tcp::State::Closed | tcp::State::TimeWait, _) => {
                if self.client.state() != soup::ClientState::Disconnected {
                    self.lost();
                }
                if now >= self.next_connect {
                    self.next_connect = now + RECONNECT_EVERY_NS;
                    self.connect();
                    self.poll(now, tx);
                }
                return;
            }
            (tcp::State::Established, soup::ClientState::Disconnected) => {
                // Connected: log in from the next answer not yet had.
                self.report.connects += 1;
                self.out.clear();
                self.client.connect(now, &mut self.out);
            }
            _ => {}
        }
        self.read(now);
        if let Some(soup::ClientEvent::ServerSilent) = self.client.tick(now, &mut self.out) {
            self.report.server_silent += 1;
            self.lost();
            return;
        }
        self.write_out();
        self.poll(now, tx);
    }

    fn poll(&mut self, now: u64, tx: &mut XskTx) {
        let mut dev = Dev {
            rx: &mut self.rx,
            tx,
            eth: self.eth,
        };
        let _ = self.iface.poll(instant(now), &mut dev, &mut self.sockets);
    }

    fn connect(&mut self) {
        self.local_port = if self.local_port >= 65_000 {
            49_152
        } else {
            self.local_port + 1
        };
        let remote = (IpAddress::Ipv4(*self.gateway.ip()), self.gateway.port());
        let socket = self.sockets.get_mut::<tcp::Socket>(self.handle);
        socket.abort();
        let _ = socket.connect(self.iface.context(), remote, self.local_port);
    }

    /// Reads what the socket holds and takes each answer.
    fn read(&mut self, now: u64) {
        loop {
            let socket = self.sockets.get_mut::<tcp::Socket>(self.handle);
            if !socket.can_recv() {
                break;
            }
            let Ok(n) = socket.recv_slice(self.client.read_into()) else {
                break;
            };
            if n == 0 {
                break;
            }
            self.client.filled(n, now);
            let arrived = self.last_frame_rx;
            while let Some(event) = self.client.poll() {
                match event {
                    soup::ClientEvent::Sequenced { message, .. } => take_answer(
                        &mut self.report,
                        &mut self.awaited,
                        &mut self.rx_to_ack,
                        Outbound::parse(message).ok(),
                        arrived,
                    ),
                    soup::ClientEvent::LoggedIn { .. } => {
                        self.report.logins += 1;
                        self.out.extend_from_slice(&self.held);
                        self.held.clear();
                    }
                    soup::ClientEvent::Rejected(_) => self.report.login_rejects += 1,
                    soup::ClientEvent::EndOfSession => self.report.end_of_session = true,
                    soup::ClientEvent::Malformed(_)
                    | soup::ClientEvent::Unexpected { .. }
                    | soup::ClientEvent::Rewound { .. } => {
                        self.report.protocol_errors += 1;
                    }
                    soup::ClientEvent::ServerSilent => {}
                }
            }
            if self.client.state() == soup::ClientState::Disconnected {
                self.lost();
                return;
            }
        }
    }

    /// Gives the socket what the session has queued.
    fn write_out(&mut self) {
        if self.out.is_empty() {
            return;
        }
        let socket = self.sockets.get_mut::<tcp::Socket>(self.handle);
        if let Ok(n) = socket.send_slice(&self.out) {
            self.out.drain(..n);
        }
    }

    /// The connection is gone: aborted (an RST), made again at the next service.
    fn lost(&mut self) {
        self.report.disconnects += 1;
        self.client.disconnected();
        self.sockets.get_mut::<tcp::Socket>(self.handle).abort();
        self.out.clear();
        if !self.held.is_empty() {
            let held = (self.held.len() / ORDER_PACKET) as u64;
            self.report.not_sent += held;
            self.report.sent -= held.min(self.report.sent);
            self.held.clear();
        }
    }

    /// Whether the answers to every order sent and the session's end have come.
    pub fn answered(&self) -> bool {
        self.report.accepted + self.report.rejected >= self.report.sent
            && self.report.end_of_session
    }

    /// Logs out (if logged in) and returns the session's report.
    pub fn finish(&mut self, tx: &mut XskTx) -> OrderSessionReport {
        let now = now_ns();
        if self.logged_in() {
            self.client.logout(now, &mut self.out);
            self.write_out();
            self.poll(now, tx);
            self.sockets.get_mut::<tcp::Socket>(self.handle).close();
            self.poll(now, tx);
        }
        self.report.next_seq = self.client.next_seq();
        self.report.rx_to_ack = self.rx_to_ack.summary();
        self.report.clone()
    }
}

/// A device that takes nothing and sends into a scratch buffer: the interface's constructor
/// asks for one.
struct Probe<'a>(&'a mut Vec<u8>);

struct ProbeTx<'a>(&'a mut Vec<u8>);

impl phy::TxToken for ProbeTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        self.0.resize(len, 0);
        f(self.0)
    }
}

impl Device for Probe<'_> {
    type RxToken<'b>
        = Rx
    where
        Self: 'b;
    type TxToken<'b>
        = ProbeTx<'b>
    where
        Self: 'b;

    fn receive(&mut self, _: Instant) -> Option<(Rx, ProbeTx<'_>)> {
        None
    }

    fn transmit(&mut self, _: Instant) -> Option<ProbeTx<'_>> {
        Some(ProbeTx(self.0))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ip;
        caps.max_transmission_unit = MTU;
        caps
    }
}
