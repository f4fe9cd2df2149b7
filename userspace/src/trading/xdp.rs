//! The AF_XDP path: frames from the UMEM, orders built as whole frames on the TX ring.
use std::io;

use results::FrameCounts;
use wire::order::OrderRepr;

use super::{OrderSink, PacketHandler, TraderIo};
use crate::{
    clock::now_ns,
    frame::{self, Endpoint, FrameBuilder, FrameError, parse_udp_to},
    xsk::{Xsk, XskTx},
};

/// How long a blocking turn sleeps in `poll()` at most, so the stop flag and the idle timeout
/// are still seen.
const BLOCK_POLL_MS: i32 = 100;

/// A trader's I/O over an AF_XDP socket (with the XDP program redirecting the feed into it).
///
/// How it waits is fixed for the run, so it is part of the type, not tested per turn: `BLOCK`
/// waits in `poll()` for the RX ring before each turn (`--wait block`); `BUSY_POLL` (the socket
/// has SO_BUSY_POLL) makes an empty turn drive the kernel's busy poll with a zero-timeout
/// `poll()`.
#[derive(Debug)]
pub struct XdpIo<const BLOCK: bool, const BUSY_POLL: bool> {
    /// One socket per RX queue served, socket `i` bound to queue `i`.
    xsks: Vec<Xsk>,
    /// The queue a turn reads first: they take turns, so none starves the others.
    next_queue: usize,
    /// Feed frames taken per queue.
    pub frames_per_queue: Vec<u64>,
    order_port: u16,
    /// Our MAC, IPv4 address and the feed's port: where feed datagrams must be addressed.
    our: Endpoint,
    /// The same with line B's port, for an A/B feed.
    our_b: Option<Endpoint>,
    /// The exchange's re-request server: what comes from it is an answer, not a line's copy.
    retransmit_source: Option<std::net::SocketAddrV4>,
    /// The next blocking wait lasts at most this long (ms): an A/B wait runs out then.
    wait_cap: Option<i32>,
    /// The frame template for the last sender seen; rebuilt when a packet comes from another.
    builder: Option<(Endpoint, FrameBuilder)>,
    /// Frames on the socket that are not the feed, by reason.
    pub frames_not_ours: FrameCounts,
}

impl<const BLOCK: bool, const BUSY_POLL: bool> XdpIo<BLOCK, BUSY_POLL> {
    /// Serves the feed on `md_port` arriving at `xsk`; orders go from `our` (MAC, IPv4; the
    /// port is the feed's) to each packet's sender at `order_port`.
    pub fn new(
        xsk: Xsk,
        our_mac: [u8; 6],
        our_ip: std::net::Ipv4Addr,
        md_port: u16,
        order_port: u16,
    ) -> Self {
        Self::per_queue(vec![xsk], our_mac, our_ip, md_port, order_port)
    }

    /// [`XdpIo::new`] over one socket per RX queue (socket `i` bound to queue `i`): the feed is
    /// taken from whichever queue it arrives on, and each packet's orders leave on the TX ring
    /// of the socket it came in on.
    pub fn per_queue(
        xsks: Vec<Xsk>,
        our_mac: [u8; 6],
        our_ip: std::net::Ipv4Addr,
        md_port: u16,
        order_port: u16,
    ) -> Self {
        XdpIo {
            frames_per_queue: vec![0; xsks.len()],
            xsks,
            next_queue: 0,
            order_port,
            our: frame::endpoint(our_mac, our_ip, md_port),
            our_b: None,
            retransmit_source: None,
            wait_cap: None,
            builder: None,
            frames_not_ours: FrameCounts::default(),
        }
    }

    /// Takes line B of an A/B feed on `port_b` too (the XDP program must redirect it:
    /// [`crate::xdp::XdpProgram::attach_lines`]).
    #[must_use]
    pub fn with_line_b(mut self, port_b: u16) -> Self {
        self.our_b = Some(frame::endpoint(self.our.mac, *self.our.addr.ip(), port_b));
        self
    }

    /// Takes up to `max` frames from queue `q`'s socket, handing each feed datagram to
    /// `handler` with the sink for that socket's TX ring.
    #[inline]
    fn recv_queue<H: PacketHandler>(&mut self, q: usize, max: usize, handler: &mut H) -> usize {
        let Self {
            xsks,
            order_port,
            our,
            our_b,
            builder,
            frames_not_ours,
            frames_per_queue,
            retransmit_source,
            ..
        } = self;
        let Some(xsk) = xsks.get_mut(q) else {
            return 0;
        };
        let tx = &mut xsk.tx;
        let n = xsk.rx.recv(max, |f| {
            let t_rx = now_ns();
            // Checked as the kernel checks a datagram for a UDP socket (addresses, checksums),
            // so this path trades nothing the kernel path would drop.
            let (d, line) = match (parse_udp_to(f, our), &*our_b) {
                (Ok(d), _) => (d, 0),
                (Err(FrameError::OtherPort), Some(b)) => match parse_udp_to(f, b) {
                    Ok(d) => (d, 1),
                    Err(e) => {
                        count(frames_not_ours, e);
                        return;
                    }
                },
                (Err(e), _) => {
                    count(frames_not_ours, e);
                    return;
                }
            };
            let line = if *retransmit_source == Some(d.src) {
                crate::t2t::lines::RECOVERY
            } else {
                line
            };
            // Reply to this packet's sender, whoever sent the last one; an answer from the
            // re-request server doesn't re-point the orders (they go to the feed's sender).
            let peer = frame::endpoint(d.src_mac, *d.src.ip(), *order_port);
            let b = match builder {
                Some((_, b)) if line == crate::t2t::lines::RECOVERY => b,
                _ => builder_for(builder, *our, peer),
            };
            handler.on_packet(d.payload, line, t_rx, &mut XdpSink { tx, builder: b });
        });
        frames_per_queue[q] += n as u64;
        n
    }

    /// Frames from `server` (the re-request server) are answers to re-requests: handed on as
    /// [`crate::t2t::lines::RECOVERY`], not as a line's.
    #[must_use]
    pub fn with_retransmit_source(mut self, server: std::net::SocketAddrV4) -> Self {
        self.retransmit_source = Some(server);
        self
    }

    /// The sockets, one per queue, for their statistics at the end.
    pub fn xsks(&self) -> &[Xsk] {
        &self.xsks
    }
}

/// Orders of one packet, as frames on the TX ring.
struct XdpSink<'a> {
    tx: &'a mut XskTx,
    builder: &'a mut FrameBuilder,
}

impl OrderSink for XdpSink<'_> {
    #[inline]
    fn send(&mut self, order: &OrderRepr) -> bool {
        let b = &mut *self.builder;
        self.tx
            // An order that doesn't encode claims more than the frame holds, so the builder
            // refuses the frame rather than sending an empty datagram.
            .send(|buf| b.build(buf, |body| order.emit_into(body).unwrap_or(usize::MAX)))
            .is_ok()
    }

    #[inline]
    fn flush(&mut self) -> io::Result<()> {
        // Copy mode sends nothing without a sendto, whatever need_wakeup says, and at most 32
        // frames per sendto; zero-copy needs one only when the ring asks (XskTx::flush).
        self.tx.flush()
    }
}

impl<const BLOCK: bool, const BUSY_POLL: bool> TraderIo for XdpIo<BLOCK, BUSY_POLL> {
    #[inline]
    fn recv<H: PacketHandler>(&mut self, max: usize, handler: &mut H) -> io::Result<usize> {
        if BLOCK {
            let ms = self
                .wait_cap
                .take()
                .map_or(BLOCK_POLL_MS, |c| c.min(BLOCK_POLL_MS));
            match self.xsks.as_mut_slice() {
                [one] => {
                    one.rx.wait(ms)?;
                }
                all => crate::xsk::wait_any(all, ms)?,
            }
        }
        let queues = self.xsks.len();
        let mut taken = 0;
        for k in 0..queues {
            let q = (self.next_queue + k) % queues;
            taken += self.recv_queue(q, max - taken, handler);
            if taken == max {
                break;
            }
        }
        self.next_queue = (self.next_queue + 1) % queues.max(1);
        Ok(taken)
    }

    /// Drives the kernel's busy poll (`BUSY_POLL`) and reclaims TX frames on every queue.
    fn idle(&mut self) {
        for x in &mut self.xsks {
            x.tx.reclaim();
            if BUSY_POLL {
                // Drives the kernel's busy poll of the device (napi_busy_loop) from our core.
                let _ = x.rx.wait(0);
            }
        }
    }

    fn cap_wait(&mut self, ms: i32) {
        self.wait_cap = Some(ms);
    }

    fn with_sink(&mut self, f: &mut dyn FnMut(&mut dyn OrderSink)) {
        let (Some((_, builder)), Some(xsk)) = (&mut self.builder, self.xsks.first_mut()) else {
            return;
        };
        f(&mut XdpSink {
            tx: &mut xsk.tx,
            builder,
        });
    }

    /// Built as a frame to the feed's sender's MAC (the last one seen: the re-request server is
    /// on the exchange's host), from the market-data port.
    fn send_request(&mut self, to: std::net::SocketAddrV4, payload: &[u8]) -> io::Result<()> {
        let Some((peer, _)) = &self.builder else {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "no feed packet yet: the exchange's MAC is not known",
            ));
        };
        let mut b = FrameBuilder::new(self.our, frame::endpoint(peer.mac, *to.ip(), to.port()));
        let xsk = self
            .xsks
            .first_mut()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "no socket"))?;
        xsk.tx
            .send(|buf| {
                b.build(buf, |body| match body.get_mut(..payload.len()) {
                    Some(dst) => {
                        dst.copy_from_slice(payload);
                        payload.len()
                    }
                    None => usize::MAX,
                })
            })
            .map_err(|_| io::Error::new(io::ErrorKind::WouldBlock, "no TX frame"))?;
        xsk.tx.flush()
    }
}

/// The frame builder for orders to `peer`: the cached one if the last packet came from the
/// same sender, else a new one (a template rebuild, rare: one exchange, one sender).
#[inline]
fn builder_for(
    cache: &mut Option<(Endpoint, FrameBuilder)>,
    our: Endpoint,
    peer: Endpoint,
) -> &mut FrameBuilder {
    match cache {
        Some((p, _)) if *p == peer => {}
        _ => *cache = Some((peer, FrameBuilder::new(our, peer))),
    }
    match cache {
        Some((_, b)) => b,
        None => unreachable!("filled just above"),
    }
}

fn count(c: &mut FrameCounts, e: FrameError) {
    match e {
        FrameError::Malformed => c.malformed += 1,
        FrameError::NotIpv4 => c.not_ipv4 += 1,
        FrameError::Fragment => c.fragment += 1,
        FrameError::NotUdp => c.not_udp += 1,
        FrameError::IpOptions => c.ip_options += 1,
        FrameError::OtherPort => c.other_port += 1,
        FrameError::WrongDstMac => c.wrong_dst_mac += 1,
        FrameError::BadIpChecksum => c.bad_ip_checksum += 1,
        FrameError::WrongDstIp => c.wrong_dst_ip += 1,
        FrameError::BadUdpChecksum => c.bad_udp_checksum += 1,
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    /// Each reason lands in its own counter (destructured, so a new field can't be missed).
    #[test]
    fn each_reason_has_its_own_counter() {
        use FrameError::*;
        let reasons = [
            Malformed,
            NotIpv4,
            Fragment,
            NotUdp,
            IpOptions,
            OtherPort,
            WrongDstMac,
            BadIpChecksum,
            WrongDstIp,
            BadUdpChecksum,
        ];
        let mut c = FrameCounts::default();
        for (i, e) in reasons.into_iter().enumerate() {
            for _ in 0..=i {
                count(&mut c, e);
            }
        }
        let FrameCounts {
            malformed,
            not_ipv4,
            fragment,
            not_udp,
            ip_options,
            other_port,
            wrong_dst_mac,
            bad_ip_checksum,
            wrong_dst_ip,
            bad_udp_checksum,
        } = c;
        assert_eq!(
            [
                malformed,
                not_ipv4,
                fragment,
                not_udp,
                ip_options,
                other_port,
                wrong_dst_mac,
                bad_ip_checksum,
                wrong_dst_ip,
                bad_udp_checksum,
            ],
            [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
        );
    }

    #[test]
    fn orders_go_to_the_sender_of_each_packet() {
        let our = frame::endpoint([2, 0, 0, 0, 0, 2], Ipv4Addr::new(198, 18, 0, 2), 26400);
        let a = frame::endpoint([2, 0, 0, 0, 0, 1], Ipv4Addr::new(198, 18, 0, 1), 26401);
        let b = frame::endpoint([2, 0, 0, 0, 0, 9], Ipv4Addr::new(198, 18, 0, 9), 26401);
        let mut cache = None;
        let mut buf = [0u8; 128];
        for (peer, want) in [(a, a), (a, a), (b, b), (a, a)] {
            let n = builder_for(&mut cache, our, peer)
                .build(&mut buf, |body| {
                    body[..4].copy_from_slice(b"test");
                    4
                })
                .unwrap();
            let d = frame::parse_udp_to(&buf[..n], &want).unwrap();
            assert_eq!(d.dst, want.addr, "IP and port of this packet's sender");
            assert_eq!(&buf[..6], &want.mac.octets(), "its MAC");
            assert_eq!(d.src, our.addr);
        }
    }
}
