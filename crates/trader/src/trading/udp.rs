//! The kernel UDP path: one datagram per `recvfrom`, or a batch per `recvmmsg`.
use std::{
    io::{self, ErrorKind},
    net::{Ipv4Addr, SocketAddrV4, UdpSocket},
    os::fd::AsRawFd as _,
};

use wire::order::OrderRepr;

use trader_core::Line;

use super::{FeedSource, OrderSink, PacketHandler, Sender, TraderIo, sock_filter};
use afxdp::{clock::now_ns, sockopt::MultiRecv};

/// Orders of one datagram, each sent at once on the socket connected to the order gateway.
struct UdpSink<'a> {
    sock: &'a UdpSocket,
}

impl OrderSink for UdpSink<'_> {
    #[inline]
    fn send(&mut self, order: &OrderRepr) -> bool {
        let mut buf = [0u8; wire::order::LEN];
        // An order that doesn't encode is not sent (never an empty datagram).
        let Ok(n) = order.emit_into(&mut buf) else {
            return false;
        };
        let s = self.sock;
        match s.send(&buf[..n]) {
            // A connected socket reports an earlier ICMP "port unreachable" on its next send,
            // which didn't go: the report clears it, so send again.
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => s.send(&buf[..n]).is_ok(),
            r => r.is_ok(),
        }
    }
}

/// The socket orders leave on: bound to our address (an ephemeral port, so it never hears the
/// feed) and connected to the configured order gateway at start, so a send does no route
/// lookup, as the AF_XDP path's prebuilt frame doesn't, and goes nowhere else.
fn order_socket(ours: Ipv4Addr, gateway: SocketAddrV4) -> io::Result<UdpSocket> {
    let sock = UdpSocket::bind(SocketAddrV4::new(ours, 0))?;
    sock.connect(gateway).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("connecting the order socket to the gateway {gateway}: {e}"),
        )
    })?;
    Ok(sock)
}

/// A trader's I/O over a kernel UDP socket, one datagram per `recvfrom`. The socket decides
/// spin or block: non-blocking, or with a read timeout (so the stop flag is still seen).
#[derive(Debug)]
pub struct UdpIo {
    sock: UdpSocket,
    /// Line B of an A/B feed, with how long a turn waits for either line (`None`: spin).
    line_b: Option<(UdpSocket, Option<i32>)>,
    /// The line a two-line turn tries first: they take turns, so neither starves the other.
    first_line: usize,
    /// The exchange's re-request server: what comes from it is an answer, not a line's copy.
    retransmit_source: Option<SocketAddrV4>,
    /// The next blocking wait lasts at most this long (ms): an A/B wait runs out then.
    wait_cap: Option<i32>,
    /// Connected to the order gateway.
    orders: UdpSocket,
    buf: Box<[u8; 2048]>,
}

impl UdpIo {
    /// Serves the feed arriving at `sock`; orders go to the order gateway `gateway`, whoever
    /// sent the market data, from a socket of their own on `sock`'s address.
    pub fn new(sock: UdpSocket, gateway: SocketAddrV4) -> io::Result<Self> {
        Ok(UdpIo {
            orders: order_socket(local_v4(&sock)?, gateway)?,
            sock,
            line_b: None,
            first_line: 0,
            retransmit_source: None,
            wait_cap: None,
            buf: Box::new([0; 2048]),
        })
    }

    /// Datagrams from `server` (the re-request server) are answers to re-requests: handed on
    /// as [`trader_core::Line::Recovery`], not as a line's.
    #[must_use]
    pub fn with_retransmit_source(mut self, server: SocketAddrV4) -> Self {
        self.retransmit_source = Some(server);
        self
    }

    /// Keeps only `source`'s datagrams (and the re-request server's, set before this) on
    /// line `line`'s socket, in the kernel ([`sock_filter`]): a stranger's flood no longer
    /// fills the buffer the feed needs.
    pub fn keep_only(&mut self, line: Line, source: FeedSource) -> io::Result<()> {
        let keep = sock_filter::keep(source, self.retransmit_source);
        match (line, &self.line_b) {
            (Line::A, _) => sock_filter::attach(&self.sock, &keep),
            (Line::B, Some((b, _))) => sock_filter::attach(b, &keep),
            _ => Ok(()),
        }
    }

    /// Datagrams the kernel dropped at the feed's sockets: the source filter's, and a full
    /// buffer's (`None` if the kernel wouldn't say).
    pub fn socket_drops(&self) -> Option<u64> {
        let b = self.line_b.as_ref().map(|(b, _)| b);
        std::iter::once(&self.sock)
            .chain(b)
            .map(|s| sock_filter::drops(s).ok().map(u64::from))
            .sum()
    }

    /// The NAPI id the kernel last delivered the feed from (`SO_INCOMING_NAPI_ID`, the higher
    /// of the two lines' on an A/B feed; 0: none, so `--busy-poll` has nothing to poll; None:
    /// a read failed).
    pub fn napi_id(&self) -> Option<u32> {
        let a = afxdp::sockopt::incoming_napi_id(self.sock.as_raw_fd()).ok()?;
        match &self.line_b {
            Some((b, _)) => Some(a.max(afxdp::sockopt::incoming_napi_id(b.as_raw_fd()).ok()?)),
            None => Some(a),
        }
    }

    /// Takes line B of an A/B feed from `sock_b` too. Both sockets are made non-blocking; with
    /// `block_ms`, a turn waits in `poll()` up to that long for either line.
    pub fn with_line_b(mut self, sock_b: UdpSocket, block_ms: Option<i32>) -> io::Result<Self> {
        self.sock.set_nonblocking(true)?;
        sock_b.set_nonblocking(true)?;
        self.line_b = Some((sock_b, block_ms));
        Ok(self)
    }

    /// One datagram from either line, if one is there (after waiting, when blocking).
    fn recv_either(&mut self) -> io::Result<Option<(usize, std::net::SocketAddr, usize)>> {
        use std::os::fd::AsFd as _;

        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let cap = self.wait_cap.take();
        let Some((sock_b, block_ms)) = &self.line_b else {
            return Ok(None);
        };
        if let Some(ms) = block_ms.map(|b| cap.map_or(b, |c| c.min(b))) {
            let mut fds = [
                PollFd::new(self.sock.as_fd(), PollFlags::POLLIN),
                PollFd::new(sock_b.as_fd(), PollFlags::POLLIN),
            ];
            let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, timeout) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let first = self.first_line;
        self.first_line ^= 1;
        for line in [first, first ^ 1] {
            let sock = if line == 0 { &self.sock } else { sock_b };
            match sock.recv_from(&mut self.buf[..]) {
                Ok((len, from)) => return Ok(Some((len, from, line))),
                Err(e) if nothing_yet(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }
}

/// The IPv4 address a socket is bound to.
fn local_v4(sock: &UdpSocket) -> io::Result<Ipv4Addr> {
    match sock.local_addr()? {
        std::net::SocketAddr::V4(a) => Ok(*a.ip()),
        std::net::SocketAddr::V6(_) => Err(io::Error::new(
            ErrorKind::InvalidInput,
            "the market-data socket must be IPv4",
        )),
    }
}

/// What a receive that found nothing (yet) returns: not an error for the loop.
fn nothing_yet(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

impl TraderIo for UdpIo {
    #[inline]
    fn recv<H: PacketHandler>(&mut self, _max: usize, handler: &mut H) -> io::Result<usize> {
        let (len, from, line) = if self.line_b.is_some() {
            match self.recv_either()? {
                Some(x) => x,
                None => return Ok(0),
            }
        } else {
            match self.sock.recv_from(&mut self.buf[..]) {
                Ok((len, from)) => (len, from, 0),
                Err(e) if nothing_yet(&e) => return Ok(0),
                Err(e) => return Err(e),
            }
        };
        let std::net::SocketAddr::V4(from) = from else {
            // An IPv4 socket only hears IPv4 senders.
            return Ok(1);
        };
        let line = if self.retransmit_source == Some(from) {
            Line::Recovery
        } else if line == 0 {
            Line::A
        } else {
            Line::B
        };
        let t_rx = now_ns();
        let mut sink = UdpSink { sock: &self.orders };
        handler.on_packet(
            &self.buf[..len],
            line,
            None,
            Sender::Datagram(from),
            t_rx,
            &mut sink,
        );
        Ok(1)
    }

    fn send_request(&mut self, to: SocketAddrV4, payload: &[u8]) -> io::Result<()> {
        self.sock.send_to(payload, to).map(drop)
    }

    fn with_sink(&mut self, f: &mut dyn FnMut(&mut dyn OrderSink)) {
        f(&mut UdpSink { sock: &self.orders });
    }

    fn cap_wait(&mut self, ms: i32) {
        self.wait_cap = Some(ms);
    }

    fn pin_source(&mut self, line: Line, source: FeedSource) {
        if let Err(e) = self.keep_only(line, source) {
            // The loop still checks every datagram: the filter only keeps the buffer clear.
            eprintln!("warning: line {line:?}'s learned source {source}: {e}");
        }
    }
}

/// A trader's I/O over a non-blocking kernel UDP socket, up to a batch of datagrams per
/// `recvmmsg`.
#[derive(Debug)]
pub struct MmsgIo {
    sock: UdpSocket,
    /// Connected to the order gateway.
    orders: UdpSocket,
    multi: MultiRecv,
    /// As [`UdpIo::with_retransmit_source`].
    retransmit_source: Option<SocketAddrV4>,
}

impl MmsgIo {
    /// Serves the feed arriving at `sock` (which must be non-blocking), `per_call` datagrams per
    /// `recvmmsg` at most; orders go to the order gateway `gateway`.
    pub fn new(sock: UdpSocket, gateway: SocketAddrV4, per_call: usize) -> io::Result<Self> {
        Ok(MmsgIo {
            orders: order_socket(local_v4(&sock)?, gateway)?,
            sock,
            multi: MultiRecv::new(per_call),
            retransmit_source: None,
        })
    }

    /// As [`UdpIo::with_retransmit_source`].
    #[must_use]
    pub fn with_retransmit_source(mut self, server: SocketAddrV4) -> Self {
        self.retransmit_source = Some(server);
        self
    }

    /// As [`UdpIo::keep_only`] (one line).
    pub fn keep_only(&mut self, line: Line, source: FeedSource) -> io::Result<()> {
        if line != Line::A {
            return Ok(());
        }
        sock_filter::attach(
            &self.sock,
            &sock_filter::keep(source, self.retransmit_source),
        )
    }

    /// As [`UdpIo::napi_id`].
    pub fn napi_id(&self) -> Option<u32> {
        afxdp::sockopt::incoming_napi_id(self.sock.as_raw_fd()).ok()
    }

    /// As [`UdpIo::socket_drops`].
    pub fn socket_drops(&self) -> Option<u64> {
        sock_filter::drops(&self.sock).ok().map(u64::from)
    }
}

impl TraderIo for MmsgIo {
    #[inline]
    fn recv<H: PacketHandler>(&mut self, _max: usize, handler: &mut H) -> io::Result<usize> {
        let Self {
            sock,
            orders,
            multi,
            retransmit_source,
        } = self;
        match multi.recv(sock.as_raw_fd(), |payload, from| {
            let line = if *retransmit_source == Some(from) {
                Line::Recovery
            } else {
                Line::A
            };
            let t_rx = now_ns();
            let mut sink = UdpSink { sock: orders };
            handler.on_packet(payload, line, None, Sender::Datagram(from), t_rx, &mut sink);
        }) {
            Ok(n) => Ok(n),
            Err(e) if nothing_yet(&e) => Ok(0),
            Err(e) => Err(e),
        }
    }

    fn send_request(&mut self, to: SocketAddrV4, payload: &[u8]) -> io::Result<()> {
        self.sock.send_to(payload, to).map(drop)
    }

    fn with_sink(&mut self, f: &mut dyn FnMut(&mut dyn OrderSink)) {
        f(&mut UdpSink { sock: &self.orders });
    }

    fn pin_source(&mut self, line: Line, source: FeedSource) {
        if let Err(e) = self.keep_only(line, source) {
            eprintln!("warning: line {line:?}'s learned source {source}: {e}");
        }
    }
}
