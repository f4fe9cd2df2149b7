//! The exchange side's I/O: a kernel UDP socket (the default), or AF_XDP on the exchange's own
//! veth end (the bypass harness), so that neither end pays the kernel UDP stack and the
//! measured figure is the trader's own.
use std::{
    io::{self, ErrorKind},
    net::{SocketAddrV4, UdpSocket},
};

use anyhow::Context as _;
use xdp_common::Action;

use afxdp::{
    clock::RealToMono,
    frame::{self, FrameBuilder, parse_udp},
    xdp::{XdpMode, XdpProgram},
    xsk::{Xsk, XskConfig},
};

use crate::{Port, Took};

/// How long the kernel may take to start stamping received datagrams after `SO_TIMESTAMPNS`.
const TIMESTAMPS_ON: std::time::Duration = std::time::Duration::from_millis(20);

/// How the exchange side sends ticks and takes orders.
#[derive(Debug)]
pub enum ExchangeIo {
    /// Kernel UDP: the feed leaves from a connected socket of its own, orders arrive at an
    /// unconnected one that asks the kernel to stamp each datagram (`SO_TIMESTAMPNS`).
    Udp {
        /// Sends the feed.
        feed: UdpSocket,
        /// Sends the same feed on line B (an A/B feed), after line A.
        feed_b: Option<UdpSocket>,
        /// Per line (A, B): datagrams sent, and refused by our own side.
        line_sends: [LineSends; 2],
        /// Takes the orders.
        orders: UdpSocket,
        /// Converts the stamps to the lab's clock.
        clock: RealToMono,
    },
    /// An AF_XDP socket on the exchange's interface; the XDP program there redirects the
    /// order flow (UDP to our port) into it.
    Xsk(Box<XskIo>),
}

/// The AF_XDP side of [`ExchangeIo`].
#[derive(Debug)]
pub struct XskIo {
    xsk: Xsk,
    _prog: XdpProgram,
    builder: FrameBuilder,
    port: u16,
}

impl ExchangeIo {
    /// A kernel UDP socket bound to `bind`, connected to `target`, with a receive buffer large
    /// enough that orders are not lost while the sender busy-waits or is preempted.
    pub fn udp(bind: SocketAddrV4, target: SocketAddrV4) -> anyhow::Result<ExchangeIo> {
        Self::udp_lines(bind, [0, 0], target, None)
    }

    /// [`ExchangeIo::udp`] sending every packet on line A (`target`) and then on line B
    /// (`target_b`, if any), each from a connected socket of its own, bound to `feed_ports`'
    /// port on `bind`'s address (0: an ephemeral one): the feed's source, which the trader
    /// may be told.
    pub fn udp_lines(
        bind: SocketAddrV4,
        feed_ports: [u16; 2],
        target: SocketAddrV4,
        target_b: Option<SocketAddrV4>,
    ) -> anyhow::Result<ExchangeIo> {
        let orders = UdpSocket::bind(bind).with_context(|| {
            format!("failed to bind {bind} (port in use, or not an address of this namespace?)")
        })?;
        orders
            .set_nonblocking(true)
            .context("making the exchange socket non-blocking")?;
        {
            use std::os::fd::AsRawFd as _;
            afxdp::sockopt::set_rcvbuf(orders.as_raw_fd(), 16 << 20)?;
        }
        // The kernel's software receive timestamp: when the order reached our socket, however
        // late our loop reads it.
        nix::sys::socket::setsockopt(
            &orders,
            nix::sys::socket::sockopt::ReceiveTimestampns,
            &true,
        )
        .context("asking for receive timestamps (SO_TIMESTAMPNS)")?;
        // The feed leaves from a socket of its own (connected: no route lookup per tick);
        // orders come to `bind` from whatever port the trader sends from.
        let from = SocketAddrV4::new(*bind.ip(), feed_ports[0]);
        let feed = UdpSocket::bind(from)
            .with_context(|| format!("failed to bind the feed's socket to {from} (--feed-port)"))?;
        feed.set_nonblocking(true)
            .context("making the feed socket non-blocking")?;
        feed.connect(target)
            .with_context(|| format!("no route to {target}"))?;
        let feed_b = target_b
            .map(|to| -> anyhow::Result<UdpSocket> {
                let from = SocketAddrV4::new(*bind.ip(), feed_ports[1]);
                let s = UdpSocket::bind(from).with_context(|| {
                    format!("failed to bind line B's socket to {from} (--feed-port-b)")
                })?;
                s.set_nonblocking(true)
                    .context("making line B's socket non-blocking")?;
                s.connect(to).with_context(|| format!("no route to {to}"))?;
                Ok(s)
            })
            .transpose()?;
        // The kernel turns stamping on for the stack through a static key it flips from a
        // workqueue; until then a datagram is stamped when it is read. Let that happen before
        // the first order can come.
        std::thread::sleep(TIMESTAMPS_ON);
        Ok(ExchangeIo::Udp {
            feed,
            feed_b,
            line_sends: [LineSends::default(); 2],
            orders,
            clock: RealToMono::default(),
        })
    }

    /// AF_XDP on `iface`: frames from `bind`'s address and `feed_port` (our MAC read from
    /// sysfs) to `target` at `target_mac`; orders to `bind`'s port are redirected to us by the
    /// XDP program.
    pub fn xsk(
        iface: &str,
        bind: SocketAddrV4,
        feed_port: u16,
        target: SocketAddrV4,
        target_mac: netns::Mac,
        mode: XdpMode,
    ) -> anyhow::Result<ExchangeIo> {
        // Each order is stamped on arrival by the program, before our loop gets to it.
        let mut prog = XdpProgram::attach(iface, bind.port(), mode, Action::RedirectStamped)
            .with_context(|| format!("failed to set up XDP on {iface}"))?;
        // Deeper rings than the trader's: the exchange is the measuring end, and a preemption
        // of its busy loop (milliseconds on a shared machine) must not drop orders at its door.
        let config = XskConfig::builder().frames(16384).ring_size(8192).build()?;
        let xsk = Xsk::new(iface, 0, config)?;
        prog.register_socket(0, xsk.raw_fd())?;
        let our_mac = afxdp::host::read_mac(iface)?.octets();
        let builder = FrameBuilder::new(
            frame::endpoint(our_mac, *bind.ip(), feed_port),
            frame::endpoint(target_mac.octets(), *target.ip(), target.port()),
        );
        Ok(ExchangeIo::Xsk(Box::new(XskIo {
            xsk,
            _prog: prog,
            builder,
            port: bind.port(),
        })))
    }
}

pub use results::LineSends;

impl ExchangeIo {
    /// Per line of an A/B feed (A, then B), what was sent and refused; empty for one line.
    pub fn line_sends(&self) -> Vec<LineSends> {
        match self {
            ExchangeIo::Udp {
                feed_b: Some(_),
                line_sends,
                ..
            } => line_sends.to_vec(),
            _ => Vec::new(),
        }
    }
}

impl Port for ExchangeIo {
    /// Sends one datagram now (AF_XDP: onto the TX ring and kicked). `WouldBlock` means it
    /// was not sent.
    #[inline]
    fn send(&mut self, payload: &[u8]) -> io::Result<()> {
        match self {
            // WouldBlock (a full socket buffer) is returned: the caller counts the datagram
            // as not sent rather than blaming the trader for it.
            ExchangeIo::Udp {
                feed,
                feed_b,
                line_sends,
                ..
            } => {
                let a = send_connected(feed, payload);
                let Some(b) = feed_b else { return a };
                let b = send_connected(b, payload);
                for (line, r) in line_sends.iter_mut().zip([&a, &b]) {
                    match r {
                        Ok(()) => line.sent += 1,
                        Err(_) => line.refused += 1,
                    }
                }
                match (a, b) {
                    // A hard error on either line is the run's error, not hidden by the other.
                    (Err(e), _) | (_, Err(e)) if e.kind() != ErrorKind::WouldBlock => Err(e),
                    // Sent if it went on either line.
                    (Ok(()), _) | (_, Ok(())) => Ok(()),
                    (Err(e), Err(_)) => Err(e),
                }
            }
            ExchangeIo::Xsk(x) => {
                let XskIo { xsk, builder, .. } = &mut **x;
                let mut tries = 0;
                loop {
                    let sent = xsk.tx.send(|buf| {
                        builder.build(buf, |body| {
                            let n = payload.len().min(body.len());
                            body[..n].copy_from_slice(&payload[..n]);
                            n
                        })
                    });
                    match sent {
                        Ok(()) => break,
                        Err(afxdp::xsk::TxError::Build) => {
                            return Err(io::Error::new(
                                ErrorKind::InvalidInput,
                                "datagram too large for an AF_XDP frame",
                            ));
                        }
                        Err(afxdp::xsk::TxError::Full(_)) => {}
                    }
                    // Every TX frame in flight: kick and reclaim, then retry.
                    xsk.tx.kick()?;
                    xsk.tx.reclaim();
                    tries += 1;
                    if tries > 1000 {
                        return Err(io::Error::new(ErrorKind::WouldBlock, "AF_XDP TX ring full"));
                    }
                }
                xsk.tx.kick()
            }
        }
    }

    /// Hands each received datagram's payload to `f`, with the kernel's receive timestamp on
    /// the lab's clock where there is one; never blocks.
    #[inline]
    fn recv_each(&mut self, buf: &mut [u8], mut f: impl FnMut(&[u8], Option<u64>) -> Took) {
        match self {
            ExchangeIo::Udp { orders, clock, .. } => {
                while let Some((n, stamp)) = recv_stamped(orders, buf) {
                    // A datagram gets no answer: what it came to is the exchange's alone.
                    let _ = f(&buf[..n], stamp.map(|real| clock.to_mono(real)));
                }
            }
            ExchangeIo::Xsk(x) => {
                let port = x.port;
                let XskIo { xsk, .. } = &mut **x;
                // The XDP program's arrival stamp, where it could write one.
                while xsk.rx.recv(64, |frame| {
                    if let Ok(d) = parse_udp(frame, port) {
                        let _ = f(d.payload, xdp_common::arrival_stamp(frame));
                    }
                }) > 0
                {}
                xsk.tx.reclaim();
            }
        }
    }
}

/// One datagram on a connected socket. `WouldBlock` (a full socket buffer) is returned: the
/// caller counts the datagram as not sent rather than blaming the trader for it.
fn send_connected(sock: &UdpSocket, payload: &[u8]) -> io::Result<()> {
    match sock.send(payload) {
        // A connected socket reports an earlier ICMP "port unreachable" (the trader gone, or
        // not up yet) on its next send, and that send didn't go: the error is cleared by
        // reporting it, so send again.
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => match sock.send(payload) {
            // Still refused: not sent, and counted so (our side's refusal).
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                Err(io::Error::new(ErrorKind::WouldBlock, e))
            }
            r => r.map(|_| ()),
        },
        r => r.map(|_| ()),
    }
}

/// The exchange's end of the lab: the feed's I/O, and where orders come over a SoupBinTCP
/// session, its gateway (UDP orders come through the feed's I/O, as before).
#[derive(Debug)]
pub struct Ports {
    /// Sends the feed (and takes UDP orders).
    pub feed: ExchangeIo,
    /// Takes OUCH orders over SoupBinTCP on the kernel's TCP (`--orders tcp-*`).
    pub session: Option<crate::gateway::tcp::TcpGateway>,
}

impl Port for Ports {
    #[inline]
    fn send(&mut self, payload: &[u8]) -> io::Result<()> {
        self.feed.send(payload)
    }

    #[inline]
    fn recv_each(&mut self, buf: &mut [u8], mut f: impl FnMut(&[u8], Option<u64>) -> Took) {
        self.feed.recv_each(buf, &mut f);
        if let Some(g) = &mut self.session {
            g.service(afxdp::clock::now_ns(), &mut f);
        }
    }

    fn end_orders(&mut self) {
        if let Some(g) = &mut self.session {
            g.end_session(afxdp::clock::now_ns);
        }
    }
}

/// One non-blocking receive with its `SO_TIMESTAMPNS` stamp (CLOCK_REALTIME ns): `None` when
/// nothing is there (or the socket failed: the caller's next send says so).
fn recv_stamped(sock: &UdpSocket, buf: &mut [u8]) -> Option<(usize, Option<u64>)> {
    use std::os::fd::AsFd as _;
    // The datagram is taken either way: without a readable stamp it is still an order (it
    // then counts from when it was read, and as unstamped).
    afxdp::sockopt::recv_stamped(sock.as_fd(), buf).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_realtime_stamp_converts_to_the_monotonic_clock() {
        let mut c = RealToMono::default();
        let mono = afxdp::clock::now_ns();
        let got = c.to_mono(afxdp::clock::realtime_ns());
        // The stamp was taken a moment after `mono`: within a few µs of it, never before.
        assert!(
            got + 1_000 >= mono && got < mono + 5_000_000,
            "{got} vs {mono}"
        );
    }

    #[test]
    fn the_kernel_stamps_datagrams_on_a_udp_socket() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        nix::sys::socket::setsockopt(&rx, nix::sys::socket::sockopt::ReceiveTimestampns, &true)
            .unwrap();
        std::thread::sleep(TIMESTAMPS_ON);
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let before = afxdp::clock::now_ns();
        tx.send_to(b"order", rx.local_addr().unwrap()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut buf = [0u8; 64];
        let (n, stamp) = recv_stamped(&rx, &mut buf).expect("the datagram is there");
        assert_eq!(&buf[..n], b"order");
        let at = RealToMono::default().to_mono(stamp.expect("a kernel timestamp"));
        let read = afxdp::clock::now_ns();
        // Stamped when it arrived, not when it was read 20 ms later.
        assert!(at + 1_000 >= before, "{at} before the send at {before}");
        assert!(
            read - at >= 15_000_000,
            "stamp {at} is not ~20 ms before the read {read}"
        );
        assert!(recv_stamped(&rx, &mut buf).is_none());
    }
}
