//! The exchange side's I/O: a kernel UDP socket (the default), or AF_XDP on the exchange's own
//! veth end (the bypass harness), so that neither end pays the kernel UDP stack and the
//! measured figure is the trader's own.
use std::{
    io::{self, ErrorKind},
    net::{SocketAddrV4, UdpSocket},
};

use anyhow::Context as _;
use xdp_common::Action;

use crate::{
    exchange::Port,
    frame::{self, FrameBuilder, parse_udp},
    xdp::{XdpMode, XdpProgram},
    xsk::{Xsk, XskConfig},
};

/// How the exchange side sends ticks and takes orders.
#[derive(Debug)]
pub enum ExchangeIo {
    /// A connected, non-blocking kernel UDP socket.
    Udp(UdpSocket),
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
        let sock = UdpSocket::bind(bind).with_context(|| {
            format!("failed to bind {bind} (port in use, or not an address of this namespace?)")
        })?;
        sock.set_nonblocking(true)
            .context("making the exchange socket non-blocking")?;
        {
            use std::os::fd::AsRawFd as _;
            crate::sockopt::set_rcvbuf(sock.as_raw_fd(), 16 << 20)?;
        }
        sock.connect(target)
            .with_context(|| format!("no route to {target}"))?;
        Ok(ExchangeIo::Udp(sock))
    }

    /// AF_XDP on `iface`: frames from `bind` (our MAC read from sysfs) to `target` at
    /// `target_mac`; orders to `bind`'s port are redirected to us by the XDP program.
    pub fn xsk(
        iface: &str,
        bind: SocketAddrV4,
        target: SocketAddrV4,
        target_mac: netns::Mac,
        mode: XdpMode,
    ) -> anyhow::Result<ExchangeIo> {
        let mut prog = XdpProgram::attach(iface, bind.port(), mode, Action::Redirect)
            .with_context(|| format!("failed to set up XDP on {iface}"))?;
        // Deeper rings than the trader's: the exchange is the measuring end, and a preemption
        // of its busy loop (milliseconds on a shared machine) must not drop orders at its door.
        let config = XskConfig {
            frames: 16384,
            ring_size: 8192,
            ..XskConfig::default()
        };
        let xsk = Xsk::new(iface, 0, config)?;
        prog.register_socket(0, xsk.raw_fd())?;
        let our_mac = crate::host::read_mac(iface)?.octets();
        let builder = FrameBuilder::new(
            frame::endpoint(our_mac, *bind.ip(), bind.port()),
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

impl Port for ExchangeIo {
    /// Sends one datagram now (AF_XDP: onto the TX ring and kicked). `WouldBlock` means it
    /// was not sent.
    #[inline]
    fn send(&mut self, payload: &[u8]) -> io::Result<()> {
        match self {
            // WouldBlock (a full socket buffer) is returned: the caller counts the datagram
            // as not sent rather than blaming the trader for it.
            ExchangeIo::Udp(s) => s.send(payload).map(|_| ()),
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
                        Err(crate::xsk::TxError::Build) => {
                            return Err(io::Error::new(
                                ErrorKind::InvalidInput,
                                "datagram too large for an AF_XDP frame",
                            ));
                        }
                        Err(crate::xsk::TxError::Full(_)) => {}
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

    /// Hands each received datagram's payload to `f`; never blocks.
    #[inline]
    fn recv_each(&mut self, buf: &mut [u8], mut f: impl FnMut(&[u8])) {
        match self {
            ExchangeIo::Udp(s) => {
                while let Ok(n) = s.recv(buf) {
                    f(&buf[..n]);
                }
            }
            ExchangeIo::Xsk(x) => {
                let port = x.port;
                let XskIo { xsk, .. } = &mut **x;
                while xsk.rx.recv(64, |frame| {
                    if let Ok(d) = parse_udp(frame, port) {
                        f(d.payload);
                    }
                }) > 0
                {}
                xsk.tx.reclaim();
            }
        }
    }
}
