//! The kernel UDP path: one datagram per `recvfrom`, or a batch per `recvmmsg`.
use std::{
    io::{self, ErrorKind},
    net::{SocketAddrV4, UdpSocket},
    os::fd::AsRawFd as _,
};

use wire::order::OrderRepr;

use super::{OrderSink, PacketHandler, TraderIo};
use crate::{clock::now_ns, sockopt::MultiRecv};

/// Orders of one datagram, each sent at once to its sender's order port.
struct UdpSink<'a> {
    sock: &'a UdpSocket,
    dest: SocketAddrV4,
}

impl OrderSink for UdpSink<'_> {
    #[inline]
    fn send(&mut self, order: &OrderRepr) -> bool {
        let mut buf = [0u8; wire::order::LEN];
        // An order that doesn't encode is not sent (never an empty datagram).
        let Ok(n) = order.emit_into(&mut buf) else {
            return false;
        };
        self.sock.send_to(&buf[..n], self.dest).is_ok()
    }
}

/// A trader's I/O over a kernel UDP socket, one datagram per `recvfrom`. The socket decides
/// spin or block: non-blocking, or with a read timeout (so the stop flag is still seen).
#[derive(Debug)]
pub struct UdpIo {
    sock: UdpSocket,
    order_port: u16,
    buf: Box<[u8; 2048]>,
}

impl UdpIo {
    /// Serves the feed arriving at `sock`; orders go to each datagram's sender at `order_port`.
    pub fn new(sock: UdpSocket, order_port: u16) -> Self {
        UdpIo {
            sock,
            order_port,
            buf: Box::new([0; 2048]),
        }
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
        let (len, from) = match self.sock.recv_from(&mut self.buf[..]) {
            Ok(x) => x,
            Err(e) if nothing_yet(&e) => return Ok(0),
            Err(e) => return Err(e),
        };
        let t_rx = now_ns();
        let std::net::SocketAddr::V4(from) = from else {
            // An IPv4 socket only hears IPv4 senders.
            return Ok(1);
        };
        let mut sink = UdpSink {
            sock: &self.sock,
            dest: SocketAddrV4::new(*from.ip(), self.order_port),
        };
        handler.on_packet(&self.buf[..len], t_rx, &mut sink);
        Ok(1)
    }
}

/// A trader's I/O over a non-blocking kernel UDP socket, up to a batch of datagrams per
/// `recvmmsg`.
#[derive(Debug)]
pub struct MmsgIo {
    sock: UdpSocket,
    order_port: u16,
    multi: MultiRecv,
}

impl MmsgIo {
    /// Serves the feed arriving at `sock` (which must be non-blocking), `per_call` datagrams per
    /// `recvmmsg` at most; orders go to each datagram's sender at `order_port`.
    pub fn new(sock: UdpSocket, order_port: u16, per_call: usize) -> Self {
        MmsgIo {
            sock,
            order_port,
            multi: MultiRecv::new(per_call),
        }
    }
}

impl TraderIo for MmsgIo {
    #[inline]
    fn recv<H: PacketHandler>(&mut self, _max: usize, handler: &mut H) -> io::Result<usize> {
        let Self {
            sock,
            order_port,
            multi,
        } = self;
        match multi.recv(sock.as_raw_fd(), |payload, from| {
            let t_rx = now_ns();
            let mut sink = UdpSink {
                sock,
                dest: SocketAddrV4::new(*from.ip(), *order_port),
            };
            handler.on_packet(payload, t_rx, &mut sink);
        }) {
            Ok(n) => Ok(n),
            Err(e) if nothing_yet(&e) => Ok(0),
            Err(e) => Err(e),
        }
    }
}
