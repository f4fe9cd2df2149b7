//! The AF_XDP path: frames from the UMEM, orders built as whole frames on the TX ring.
use std::io;

use results::FrameCounts;
use wire::order::OrderRepr;

use trader_core::Line;

use super::{FeedSource, OrderSink, PacketHandler, Sender, TraderIo};
use afxdp::{
    clock::now_ns,
    frame::{self, Endpoint, FrameBuilder, FrameError, parse_udp_to},
    xdp::{ClaimsMap, FilterMap, SourcesMap},
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
    /// Our MAC, IPv4 address and the feed's port: where feed datagrams must be addressed.
    our: Endpoint,
    /// The same with line B's port, for an A/B feed.
    our_b: Option<Endpoint>,
    /// The exchange's re-request server, and its next hop's MAC: what comes from it is an
    /// answer, not a line's copy.
    retransmit: Option<(std::net::SocketAddrV4, netns::Mac)>,
    /// The next blocking wait lasts at most this long (ms): an A/B wait runs out then.
    wait_cap: Option<i32>,
    /// The frame template of every order: from us to the configured order gateway, made once.
    builder: FrameBuilder,
    /// The XDP program's table of pinned sources, to pin a learned one.
    sources: Option<SourcesMap>,
    /// Frames on the socket that are not the feed, by reason.
    pub frames_not_ours: FrameCounts,
    /// The order session on a userspace TCP over this socket (`--orders tcp-xdp`): orders go
    /// to it instead of UDP frames, and the session's segments are taken off the RX ring.
    tcp: Option<Box<super::XdpTcp>>,
    /// The driver filter's maps, until the trader arms it (then `None`).
    filter: Option<FilterMap>,
    /// The XDP program filters line A: the claims it files for the packets it passes.
    claims: Option<ClaimsMap>,
}

impl<const BLOCK: bool, const BUSY_POLL: bool> XdpIo<BLOCK, BUSY_POLL> {
    /// Serves the feed on `md_port` arriving at `xsk`; orders go from `our` (MAC, IPv4; the
    /// port is the feed's) to the order gateway `gateway` (its next hop's MAC, its address and
    /// port), whoever sent the market data.
    pub fn new(
        xsk: Xsk,
        our_mac: [u8; 6],
        our_ip: std::net::Ipv4Addr,
        md_port: u16,
        gateway: Endpoint,
    ) -> Self {
        Self::per_queue(vec![xsk], our_mac, our_ip, md_port, gateway)
    }

    /// [`XdpIo::new`] over one socket per RX queue (socket `i` bound to queue `i`): the feed is
    /// taken from whichever queue it arrives on, and each packet's orders leave on the TX ring
    /// of the socket it came in on.
    pub fn per_queue(
        xsks: Vec<Xsk>,
        our_mac: [u8; 6],
        our_ip: std::net::Ipv4Addr,
        md_port: u16,
        gateway: Endpoint,
    ) -> Self {
        let our = frame::endpoint(our_mac, our_ip, md_port);
        XdpIo {
            frames_per_queue: vec![0; xsks.len()],
            xsks,
            next_queue: 0,
            our,
            our_b: None,
            retransmit: None,
            wait_cap: None,
            builder: FrameBuilder::new(our, gateway),
            sources: None,
            frames_not_ours: FrameCounts::default(),
            tcp: None,
            filter: None,
            claims: None,
        }
    }

    /// Sends orders over `session`, a userspace TCP on this socket (the XDP program must steer
    /// its segments here: `Load::order_tcp`).
    #[must_use]
    pub fn with_order_session(mut self, session: super::XdpTcp) -> Self {
        self.tcp = Some(Box::new(session));
        self
    }

    /// The userspace TCP's order session, if there is one (the TCP trigger arms its segments
    /// there).
    #[inline]
    pub(super) fn order_tcp(&mut self) -> Option<&mut super::XdpTcp> {
        self.tcp.as_deref_mut()
    }

    /// One pass of the order session outside the loop: its segments off every RX ring (a
    /// feed frame now is counted as not ours: the feed starts after the login, and ends before
    /// the last answers), then its timers and sends.
    fn drive_session(&mut self) {
        let Self {
            xsks,
            tcp,
            frames_not_ours,
            ..
        } = self;
        let Some(t) = tcp.as_deref_mut() else { return };
        for xsk in xsks.iter_mut() {
            xsk.rx.recv(64, |f| {
                if !t.take_frame(f, now_ns()) {
                    frames_not_ours.other_port += 1;
                }
            });
        }
        if let Some(x) = xsks.first_mut() {
            t.service_now(now_ns(), &mut x.tx);
            let _ = x.tx.flush();
            x.tx.reclaim();
        }
    }

    /// The program was loaded with the driver filter (`Load::filter`): each packet of line A
    /// is handed on with the claim the program filed for it in `claims`, and the filter is
    /// armed with `filter` once the trader has confirmed its feed and resolved its symbols
    /// (after a turn, off any packet's path).
    #[must_use]
    pub fn with_filter(mut self, (filter, claims): (FilterMap, ClaimsMap)) -> Self {
        self.filter = Some(filter);
        self.claims = Some(claims);
        self
    }

    /// Pins a learned source in the XDP program's table too (`sources`: taken from the
    /// program, [`afxdp::xdp::XdpProgram::take_sources`]).
    #[must_use]
    pub fn with_sources(mut self, sources: SourcesMap) -> Self {
        self.sources = Some(sources);
        self
    }

    /// Takes line B of an A/B feed on `port_b` too (the XDP program must redirect it:
    /// [`afxdp::xdp::XdpProgram::attach_lines`]).
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
            our,
            our_b,
            builder,
            frames_not_ours,
            frames_per_queue,
            retransmit,
            tcp,
            claims,
            ..
        } = self;
        let claims = claims.as_ref();
        let Some(xsk) = xsks.get_mut(q) else {
            return 0;
        };
        let tx = &mut xsk.tx;
        let n = xsk.rx.recv(max, |f| {
            let t_rx = now_ns();
            // Checked as the kernel checks a datagram for a UDP socket (addresses, checksums),
            // so this path trades nothing the kernel path would drop.
            let (d, line) = match (parse_udp_to(f, our), &*our_b) {
                (Ok(d), _) => (d, Line::A),
                (Err(FrameError::OtherPort), Some(b)) => match parse_udp_to(f, b) {
                    Ok(d) => (d, Line::B),
                    Err(e) => {
                        count(frames_not_ours, e);
                        return;
                    }
                },
                // The order session's segments, for the userspace TCP.
                (Err(FrameError::NotUdp), _)
                    if tcp.as_deref_mut().is_some_and(|t| t.take_frame(f, t_rx)) =>
                {
                    return;
                }
                (Err(e), _) => {
                    count(frames_not_ours, e);
                    return;
                }
            };
            let line = if retransmit.is_some_and(|(server, _)| server == d.src) {
                Line::Recovery
            } else {
                line
            };
            // The numbers the program dropped before this packet (line A only), filed under
            // the packet's first number.
            let claim = match claims {
                Some(c) if line == Line::A => d
                    .payload
                    .get(10..18)
                    .and_then(|b| c.claim(u64::from_be_bytes(b.try_into().ok()?))),
                _ => None,
            };
            // Orders go to the gateway, whoever sent this packet.
            let sender = Sender::Datagram(d.src);
            match tcp.as_deref_mut() {
                None => {
                    let sink = &mut XdpSink { tx, builder };
                    handler.on_packet(d.payload, line, claim, sender, t_rx, sink);
                }
                Some(tcp) => {
                    tcp.set_tick_rx(t_rx);
                    let sink = &mut TcpSink { tx, tcp };
                    handler.on_packet(d.payload, line, claim, sender, t_rx, sink);
                }
            }
        });
        frames_per_queue[q] += n as u64;
        n
    }

    /// Frames from `server` (the re-request server) are answers to re-requests: handed on as
    /// [`trader_core::Line::Recovery`], not as a line's. Re-requests go to it through
    /// `next_hop` (its MAC, or its router's).
    #[must_use]
    pub fn with_retransmit_source(
        mut self,
        server: std::net::SocketAddrV4,
        next_hop: netns::Mac,
    ) -> Self {
        self.retransmit = Some((server, next_hop));
        self
    }

    /// The order session's answers and timers, between packets (at most every 50 µs).
    #[inline]
    fn service_session(&mut self) {
        if let (Some(t), Some(x)) = (self.tcp.as_deref_mut(), self.xsks.first_mut())
            && t.service(&mut x.tx)
        {
            let _ = x.tx.flush();
        }
    }

    /// Arms the driver filter once the trader may be filtered for: its feed confirmed and its
    /// symbols resolved. Once; a failure says so and leaves the filter unarmed (nothing is
    /// dropped then, every packet reaches the trader).
    #[cold]
    fn arm_filter(&mut self, trader: &trader_core::Trader) {
        let Some((session, locates)) = trader.filter_locates() else {
            return;
        };
        let Some(mut map) = self.filter.take() else {
            return;
        };
        if let Err(e) = map.arm(session.0, locates) {
            eprintln!(
                "warning: the driver filter was not armed ({e}): every packet reaches the trader"
            );
        }
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

/// Orders of one packet, into the userspace TCP's session and out on the TX ring.
struct TcpSink<'a> {
    tx: &'a mut XskTx,
    tcp: &'a mut super::XdpTcp,
}

impl OrderSink for TcpSink<'_> {
    #[inline]
    fn send(&mut self, order: &OrderRepr) -> bool {
        self.tcp.send(order, self.tx)
    }

    #[inline]
    fn flush(&mut self) -> io::Result<()> {
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
                all => afxdp::xsk::wait_any(all, ms)?,
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

    /// Drives the kernel's busy poll (`BUSY_POLL`) and reclaims TX frames on every queue;
    /// the order session's timers and answers, if there is one.
    fn idle(&mut self) {
        for x in &mut self.xsks {
            x.tx.reclaim();
            if BUSY_POLL {
                // Drives the kernel's busy poll of the device (napi_busy_loop) from our core.
                let _ = x.rx.wait(0);
            }
        }
        self.service_session();
    }

    fn after_turn(&mut self, trader: &mut trader_core::Trader) {
        if self.filter.is_some() {
            self.arm_filter(trader);
        }
        // The userspace TCP learns of the orders it sent fast, off their path.
        if let (Some(t), Some(x)) = (self.tcp.as_deref_mut(), self.xsks.first_mut())
            && t.after_orders(&mut x.tx)
        {
            let _ = x.tx.flush();
        }
        self.service_session();
    }

    fn cap_wait(&mut self, ms: i32) {
        self.wait_cap = Some(ms);
    }

    fn with_sink(&mut self, f: &mut dyn FnMut(&mut dyn OrderSink)) {
        let Some(xsk) = self.xsks.first_mut() else {
            return;
        };
        match self.tcp.as_deref_mut() {
            None => f(&mut XdpSink {
                tx: &mut xsk.tx,
                builder: &mut self.builder,
            }),
            Some(tcp) => {
                // Orders released outside a packet: timed from now, not from a past tick.
                tcp.set_tick_rx(now_ns());
                f(&mut TcpSink {
                    tx: &mut xsk.tx,
                    tcp,
                });
            }
        }
    }

    fn pin_source(&mut self, line: Line, source: FeedSource) {
        let Some(map) = &mut self.sources else {
            return;
        };
        let Some(index) = line.index().and_then(|i| u32::try_from(i).ok()) else {
            return;
        };
        if let Err(e) = map.pin(index, &source.to_program()) {
            // The loop still checks every packet; the program only drops them earlier.
            eprintln!("warning: the XDP program was not told the feed's source {source}: {e}");
        }
    }

    /// Built as a frame to the re-request server (through the next hop resolved at start),
    /// from the market-data port; only to the server named at start.
    fn send_request(&mut self, to: std::net::SocketAddrV4, payload: &[u8]) -> io::Result<()> {
        let Some((server, mac)) = self.retransmit.filter(|(server, _)| *server == to) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{to} is not the re-request server named at start"),
            ));
        };
        let mut b = FrameBuilder::new(self.our, frame::endpoint(mac, *server.ip(), server.port()));
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

    /// Connects and logs in to the userspace TCP's order session, if this socket carries one.
    fn login_orders(
        &mut self,
        timeout: std::time::Duration,
        stopped: &dyn Fn() -> bool,
    ) -> anyhow::Result<()> {
        let until = std::time::Instant::now() + timeout;
        loop {
            if stopped() {
                anyhow::bail!("stopped before the order session's login");
            }
            self.drive_session();
            let Some(t) = self.tcp.as_deref() else {
                return Ok(());
            };
            if t.logged_in() {
                return Ok(());
            }
            if t.login_rejects() > 0 {
                anyhow::bail!(
                    "the order gateway {} refused the login (wrong --order-password, or another \
                     session)",
                    t.gateway()
                );
            }
            if std::time::Instant::now() > until {
                anyhow::bail!(
                    "no SoupBinTCP login at the order gateway {} within {timeout:?} over the \
                     userspace TCP ({} connection(s) made): is the replay serving --orders \
                     tcp-xdp there, and does the XDP program steer its segments \
                     (xdp_counters.order_segments)?",
                    t.gateway(),
                    t.connects()
                );
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    /// Waits for the userspace TCP session's answers, logs out, and reports it.
    fn finish_orders(
        &mut self,
        timeout: std::time::Duration,
    ) -> Option<results::OrderSessionReport> {
        let until = std::time::Instant::now() + timeout;
        while self.tcp.as_deref().is_some_and(|t| !t.answered())
            && std::time::Instant::now() < until
        {
            self.drive_session();
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        let Self { xsks, tcp, .. } = self;
        let (t, x) = (tcp.as_deref_mut()?, xsks.first_mut()?);
        let report = t.finish(&mut x.tx);
        let _ = x.tx.flush();
        Some(report)
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
}
