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
use wire::order::OrderRepr;

use afxdp::{
    clock::now_ns,
    xdp::{OrderPortMap, SegmentMap, Withdrawn},
    xsk::XskTx,
};

use super::{
    backoff::Backoff,
    rfc5961::{self, Guard},
    tcp::{ORDER_PACKET, Session, order_packet},
};

/// Ethernet header length.
const ETH: usize = xdp_common::layout::ethernet::HEADER_LEN;
/// The frames smoltcp may build: the lab's MTU.
const MTU: usize = 1500;
/// A SYN unanswered this long is given up (the kernel session's connect timeout).
const CONNECT_TIMEOUT_NS: u64 = 100_000_000;
/// The answers and timers are looked at no more often than this.
const SERVICE_EVERY_NS: u64 = 50_000;
/// Segments waiting for smoltcp at most (more are dropped: TCP sends them again).
const RX_QUEUE: usize = 1024;
/// Receive buffers made at start (more are made only if this many are in use at once).
const POOL: usize = 256;

/// The order session of a userspace TCP on the AF_XDP socket.
pub struct XdpTcp {
    iface: Interface,
    sockets: SocketSet<'static>,
    handle: SocketHandle,
    /// IP packets of the session taken from the RX ring, for smoltcp.
    rx: VecDeque<Vec<u8>>,
    /// Buffers for `rx`, given back once smoltcp has read them: no allocation per segment.
    pool: Vec<Vec<u8>>,
    /// What the device learned of the connection (the fast send's template and numbers).
    seen: Seen,
    /// The Ethernet header of every frame smoltcp sends: to the gateway's next hop, from us.
    eth: [u8; ETH],
    gateway: SocketAddrV4,
    ours: Ipv4Addr,
    local_port: u16,
    /// The session: its client end, held orders, answers awaited, report.
    s: Session,
    /// What the session has to send that the socket hasn't taken yet (login, heartbeats,
    /// orders behind them).
    out: Vec<u8>,
    /// Orders in `out`: not sent if the connection goes before the socket takes them.
    out_orders: u64,
    /// Bytes sent fast this turn, given to smoltcp after it (off the orders' path) and before
    /// anything else the stack sends.
    shadow: Vec<u8>,
    /// When the connection under way was started (a SYN unanswered for long is given up).
    connect_started: u64,
    /// When the last segment of the session came off the RX ring (the answers' arrival).
    last_frame_rx: u64,
    last_service: u64,
    next_connect: u64,
    /// When to try connecting again ([`super::backoff`]), and the local ports' draws.
    backoff: Backoff,
    /// Where the XDP program reads the live connection's local port: only its segments are
    /// steered to us (`None`: a test's stack, no program).
    port_map: Option<OrderPortMap>,
    /// The TCP trigger's segment (`--path trigger`): `None` on the xdp path.
    trigger: Option<Trigger>,
    /// Bytes given to the socket on this connection (the stream's length in the stack).
    given: u32,
    /// Reset the connection (an RST) once this many orders have gone (a test).
    reset_after: Option<u64>,
}

/// The TCP trigger's side of the stack: the map the XDP program sends the armed segment
/// from, and what is armed in it.
struct Trigger {
    map: SegmentMap,
    armed: Option<Armed>,
}

/// A segment armed for the XDP program: the connection's next bytes, should the tick fire.
#[derive(Clone, Copy)]
struct Armed {
    /// The arm generation it goes with.
    generation: u32,
    /// Its sequence number.
    seq: u32,
    /// The SoupBinTCP packet it carries, the price zero.
    packet: [u8; ORDER_PACKET],
}

/// Why no segment could be armed: the tick is then the trader's to send, if it trades it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoSegment {
    /// Not logged in, or the connection not established.
    NoSession,
    /// The stack has bytes of its own to send first, or its next sequence number is not
    /// certain (bytes of its own unacknowledged), or its last segment carried options.
    Busy,
    /// The gateway's receive window has no room for the segment.
    Window,
    /// The order doesn't encode as an Enter Order.
    Order,
}

impl std::fmt::Debug for XdpTcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpTcp")
            .field("gateway", &self.gateway)
            .field("local_port", &self.local_port)
            .field("report", &self.s.report)
            .finish_non_exhaustive()
    }
}

/// What the device learned of the connection from the segments it carried: enough to send an
/// order's segment without smoltcp, on the critical path, and tell smoltcp after.
#[derive(Debug, Default)]
struct Seen {
    /// The last plain segment smoltcp sent (ACK, maybe PSH; no SYN, FIN or RST): its IPv4
    /// and TCP headers, options included, and their length. The template of a fast send.
    template: Option<([u8; TEMPLATE], usize)>,
    /// The sequence number of the stream's first byte (our SYN's, plus one): known once
    /// smoltcp has sent the SYN.
    stream_start: Option<u32>,
    /// One past the highest byte put on the wire, by smoltcp (its dropped repeats included),
    /// a fast send or the XDP program: the next byte is certain when it is the stream's
    /// end, everything given to the stack or sent fast ([`XdpTcp::next_seq`]).
    wire_end: u32,
    /// Bytes sent fast that smoltcp has yet to put out itself for the first time: its first
    /// transmission of them is dropped (they are on the wire already), a retransmission is
    /// not. `[from, to)` in sequence space.
    fast: Option<(u32, u32)>,
    /// The IPv4 identification of the next fast segment.
    ip_id: u16,
    /// Frames smoltcp put on the TX ring (what a kick must follow).
    queued: u64,
    /// Segments smoltcp built with no TX frame free: dropped (TCP sends them again).
    ring_full: u64,
    /// The gateway's next byte as far as smoltcp has taken it (RCV.NXT): the highest it
    /// acknowledged ([`rfc5961`]); behind smoltcp's own between a segment and its ACK, never
    /// ahead.
    rcv_nxt: Option<u32>,
    /// When the last challenge ACK went (ns; [`rfc5961::CHALLENGE_EVERY_NS`] apart at least).
    last_challenge: u64,
    /// What [`rfc5961`] refused, kept across connections for the report.
    guarded: Guarded,
    /// The gateway's receive window as its segments advertise it ([`PeerWindow`]).
    peer: PeerWindow,
}

/// The gateway's receive window, learned from its segments as they go to smoltcp: what a
/// segment sent without smoltcp (a fast send, the TCP trigger's armed one) must fit, as
/// smoltcp's own sends do. smoltcp keeps the window to itself, so the device reads it.
#[derive(Debug, Default, Clone, Copy)]
struct PeerWindow {
    /// The highest acknowledgement the gateway sent (SND.UNA), once it has.
    una: Option<u32>,
    /// Its last window, scaled (bytes past `una` it takes).
    wnd: u32,
    /// Window scale shifts offered in our SYN and in the gateway's SYN-ACK (RFC 7323: used
    /// only if both offered one).
    ours: Option<u8>,
    theirs: Option<u8>,
}

impl PeerWindow {
    /// A segment from the gateway, as smoltcp gets it, the stream's end on the wire being
    /// `wire_end`: an acknowledgement behind the last, or of bytes never sent, is no news.
    fn saw(&mut self, seg: &Segment, wire_end: u32) {
        if seg.flags & SYN != 0 {
            self.theirs = seg.window_scale;
        }
        if seg.flags & ACK == 0
            || self.una.is_some_and(|u| after(u, seg.ack))
            || (self.una.is_some() && after(seg.ack, wire_end))
        {
            return;
        }
        // A SYN's window is never scaled.
        let shift = match (self.ours, self.theirs, seg.flags & SYN != 0) {
            (Some(_), Some(s), false) => u32::from(s.min(14)),
            _ => 0,
        };
        self.una = Some(seg.ack);
        self.wnd = u32::from(seg.window) << shift;
    }

    /// Bytes the gateway takes past `wire_end` (the stream's end on the wire); `None` before
    /// it has acknowledged anything.
    fn room(&self, wire_end: u32) -> Option<u32> {
        let edge = self.una?.wrapping_add(self.wnd);
        Some(u32::try_from(edge.wrapping_sub(wire_end) as i32).unwrap_or(0))
    }
}

/// What the RFC 5961 guard refused and sent.
#[derive(Debug, Default, Clone, Copy)]
struct Guarded {
    /// RSTs not at RCV.NXT: challenged or dropped, never taken.
    rst: u64,
    /// SYNs on a synchronized connection.
    syn: u64,
    /// Challenge ACKs sent.
    challenges: u64,
}

impl Seen {
    /// A connection gone: what was learned of it forgotten, the counts of frames kept (a
    /// service compares `queued` before and after to know it must kick the ring, across a
    /// reconnect too).
    fn forget(&mut self) {
        *self = Seen {
            queued: self.queued,
            ring_full: self.ring_full,
            guarded: self.guarded,
            last_challenge: self.last_challenge,
            ..Seen::default()
        };
    }

    /// Bytes `[seq, end)` went on the wire without smoltcp: its first transmission of them is
    /// to be dropped. One run of such bytes at a time: a run not contiguous with the last one
    /// replaces it (smoltcp then sends the last one's bytes it hadn't put out again, harmless
    /// repeats), so the range never holds bytes smoltcp sent itself.
    fn merge_fast(&mut self, seq: u32, end: u32) {
        self.fast = Some(match self.fast {
            Some((from, to)) if to == seq => (from, end),
            _ => (seq, end),
        });
        self.wire_end = end;
    }
}

/// The longest IPv4 + TCP header a template keeps (20 + 60).
const TEMPLATE: usize = 80;
/// TCP flags.
const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;

/// `a` after `b` in sequence space (RFC 9293's modulo-2^32 comparison).
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// What a data segment smoltcp sends, `[seq, end)`, does to the range of bytes sent fast
/// (`fast`: one run of them, `Seen::merge_fast`): the range after it, and whether the segment
/// is smoltcp's first transmission of bytes already on the wire (to drop).
fn repeat_of_fast(fast: Option<(u32, u32)>, seq: u32, end: u32) -> (Option<(u32, u32)>, bool) {
    let Some((from, to)) = fast else {
        return (None, false);
    };
    if !after(to, seq) {
        // smoltcp at or past the range's end: it put the bytes out, or skipped them (below).
        return (None, false);
    }
    // smoltcp starting inside the range, past `from`: the gateway acknowledged those bytes
    // before smoltcp put them out (it takes an acknowledgement of bytes it holds unsent), so it
    // never will (a retransmission of them would start at or before `from`).
    let from = if after(seq, from) { seq } else { from };
    if seq == from && !after(end, to) {
        // Its first transmission of them (or of their first part): on the wire already.
        return ((end != to).then_some((end, to)), true);
    }
    if after(end, from) && !after(seq, from) {
        // One that carries them and more (bytes given after them joined on): out now, up to
        // its end.
        return (after(to, end).then_some((end, to)), false);
    }
    // Before the range (a retransmission of earlier bytes): nothing changes.
    (Some((from, to)), false)
}

/// A TCP segment's fields the device reads (`packet`: an IPv4 datagram without options).
struct Segment {
    header_end: usize,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: usize,
    /// The advertised window, unscaled.
    window: u16,
    /// A SYN's window scale option (RFC 7323), if it has one.
    window_scale: Option<u8>,
}

/// The window scale option's shift among a SYN's TCP `options` (kind 3, length 3).
fn window_scale(mut options: &[u8]) -> Option<u8> {
    while let [kind, rest @ ..] = options {
        match kind {
            0 => return None,
            1 => options = rest,
            _ => {
                let len = usize::from(*rest.first()?);
                if len < 2 || len > options.len() {
                    return None;
                }
                if *kind == 3 && len == 3 {
                    return options.get(2).copied();
                }
                options = &options[len..];
            }
        }
    }
    None
}

fn segment(packet: &[u8]) -> Option<Segment> {
    use xdp_common::layout::{ipv4, tcp as l4};
    let ihl = ipv4::header_len(*packet.first()?)?;
    let total = usize::from(u16::from_be_bytes(
        packet.get(ipv4::TOTAL_LEN)?.try_into().ok()?,
    ));
    let tcp = packet.get(ihl..total.min(packet.len()))?;
    let word = |f: xdp_common::layout::Field| -> Option<u32> {
        Some(u32::from_be_bytes(tcp.get(f)?.try_into().ok()?))
    };
    let data_offset = usize::from(*tcp.get(l4::DATA_OFFSET)? >> 4) * 4;
    if data_offset < l4::HEADER_LEN || data_offset > tcp.len() {
        return None;
    }
    let flags = *tcp.get(l4::FLAGS)?;
    Some(Segment {
        header_end: ihl + data_offset,
        seq: word(l4::SEQ)?,
        ack: word(l4::ACK)?,
        flags,
        payload: tcp.len() - data_offset,
        window: u16::from_be_bytes(tcp.get(l4::WINDOW)?.try_into().ok()?),
        window_scale: if flags & SYN != 0 {
            window_scale(tcp.get(l4::HEADER_LEN..data_offset)?)
        } else {
            None
        },
    })
}

/// `bytes` went to the socket: the session's stream digest and the stack's length.
#[inline]
fn gave(s: &mut Session, given: &mut u32, bytes: &[u8]) {
    s.digest.add(bytes);
    *given = given.wrapping_add(bytes.len() as u32);
}

/// Writes a segment's headers from a template (`ip`: the IPv4 datagram, its total length
/// set): the IPv4 identification and header checksum, the sequence number, ACK and PSH; the
/// TCP checksum zero.
fn headers(ip: &mut [u8], seq: u32, ip_id: u16) {
    use xdp_common::layout::{ipv4, tcp as l4};
    ip[ipv4::IDENT].copy_from_slice(&ip_id.to_be_bytes());
    ip[ipv4::CHECKSUM].copy_from_slice(&[0, 0]);
    let ip_sum = xdp_common::checksum::ipv4_header(&ip[..ipv4::HEADER_LEN]);
    ip[ipv4::CHECKSUM].copy_from_slice(&ip_sum.to_be_bytes());
    let t = ipv4::HEADER_LEN;
    ip[t..][l4::SEQ].copy_from_slice(&seq.to_be_bytes());
    ip[t + l4::FLAGS] = ACK | PSH;
    ip[t..][l4::CHECKSUM].copy_from_slice(&[0, 0]);
}

/// Finishes a segment built from a template: [`headers`], then the TCP checksum.
fn seal(ip: &mut [u8], seq: u32, ip_id: u16) {
    use xdp_common::layout::{ipv4, tcp as l4};
    headers(ip, seq, ip_id);
    let tcp_sum = !xdp_common::checksum::fold(xdp_common::checksum::tcp_sum(ip));
    ip[ipv4::HEADER_LEN..][l4::CHECKSUM].copy_from_slice(&tcp_sum.to_be_bytes());
}

/// smoltcp's device for one poll: the session's queued packets in, the TX ring out.
struct Dev<'a> {
    rx: &'a mut VecDeque<Vec<u8>>,
    pool: &'a mut Vec<Vec<u8>>,
    tx: &'a mut XskTx,
    eth: [u8; ETH],
    seen: &'a mut Seen,
    /// The connection past its handshake when the poll began ([`rfc5961::guard`]).
    synchronized: bool,
    /// smoltcp's receive window when the poll began.
    window: u32,
}

/// A received packet; its buffer goes back to the pool once read.
struct Rx<'a> {
    packet: Vec<u8>,
    pool: &'a mut Vec<Vec<u8>>,
}

struct Tx<'a> {
    tx: &'a mut XskTx,
    eth: [u8; ETH],
    seen: &'a mut Seen,
}

impl phy::RxToken for Rx<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let r = f(&self.packet);
        self.pool.push(self.packet);
        r
    }
}

impl phy::TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut f = Some(f);
        let mut r = None;
        let eth = self.eth;
        let seen = self.seen;
        let sent = self.tx.send(|frame| {
            let whole = ETH + len;
            let buf = frame.get_mut(..whole)?;
            buf[..ETH].copy_from_slice(&eth);
            r = f.take().map(|f| f(&mut buf[ETH..]));
            // What smoltcp sent, read back: a template for fast sends, and whether this is
            // the first transmission of bytes a fast send put on the wire already (dropped).
            let packet = &buf[ETH..];
            let Some(seg) = segment(packet) else {
                return Some(whole);
            };
            if seg.flags & ACK != 0 && seen.rcv_nxt.is_none_or(|n| after(seg.ack, n)) {
                // smoltcp took the gateway's bytes up to here.
                seen.rcv_nxt = Some(seg.ack);
            }
            if seg.flags & (SYN | FIN | RST) != 0 {
                seen.fast = None;
                seen.template = None;
                if seg.flags & (SYN | ACK) == SYN {
                    // Our SYN: the stream starts one past it.
                    seen.peer.ours = seg.window_scale;
                    let start = seg.seq.wrapping_add(1);
                    seen.stream_start = Some(start);
                    seen.wire_end = start;
                }
                // On the ring like any other: the caller must kick it out.
                seen.queued += 1;
                return Some(whole);
            }
            let end = seg.seq.wrapping_add(seg.payload as u32);
            if after(end, seen.wire_end) {
                seen.wire_end = end;
            }
            if seg.header_end <= TEMPLATE {
                let mut t = [0u8; TEMPLATE];
                t[..seg.header_end].copy_from_slice(&packet[..seg.header_end]);
                seen.template = Some((t, seg.header_end));
            }
            if seg.payload > 0 {
                let (fast, drop) = repeat_of_fast(seen.fast, seg.seq, end);
                seen.fast = fast;
                if drop {
                    return None;
                }
            }
            seen.queued += 1;
            Some(whole)
        });
        match (r, f) {
            (Some(r), _) => r,
            // No TX frame free: the segment is built and dropped (TCP sends it again).
            (None, Some(f)) => {
                debug_assert!(sent.is_err());
                seen.ring_full += 1;
                let mut scratch = vec![0u8; len];
                f(&mut scratch)
            }
            (None, None) => unreachable!("the builder either ran or is still here"),
        }
    }
}

impl Device for Dev<'_> {
    type RxToken<'b>
        = Rx<'b>
    where
        Self: 'b;
    type TxToken<'b>
        = Tx<'b>
    where
        Self: 'b;

    fn receive(&mut self, now: Instant) -> Option<(Rx<'_>, Tx<'_>)> {
        let packet = loop {
            let packet = self.rx.pop_front()?;
            if self.admit(&packet, now) {
                break packet;
            }
            self.pool.push(packet);
        };
        Some((
            Rx {
                packet,
                pool: self.pool,
            },
            Tx {
                tx: self.tx,
                eth: self.eth,
                seen: self.seen,
            },
        ))
    }

    fn transmit(&mut self, _: Instant) -> Option<Tx<'_>> {
        Some(Tx {
            tx: self.tx,
            eth: self.eth,
            seen: self.seen,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ip;
        caps.max_transmission_unit = MTU;
        caps
    }
}

impl Dev<'_> {
    /// Whether smoltcp gets `packet` ([`rfc5961`]); an in-order segment it gets moves RCV.NXT
    /// on, a refused one may be answered with a challenge ACK.
    fn admit(&mut self, packet: &[u8], now: Instant) -> bool {
        let Some(seg) = segment(packet) else {
            // Not a segment the device can read: smoltcp's to drop.
            return true;
        };
        let seen = &mut *self.seen;
        match rfc5961::guard(
            self.synchronized,
            seen.rcv_nxt,
            self.window,
            seg.seq,
            seg.flags,
        ) {
            Guard::Pass => {
                let wire_end = seen.wire_end;
                seen.peer.saw(&seg, wire_end);
                // RCV.NXT moves only with smoltcp's own acknowledgements: behind it at worst,
                // which makes the exchange's exact RST a challenge its answer settles; never
                // ahead, which would drop it.
                true
            }
            Guard::Drop => {
                seen.guarded.rst += 1;
                false
            }
            Guard::Challenge => {
                if seg.flags & RST != 0 {
                    seen.guarded.rst += 1;
                } else {
                    seen.guarded.syn += 1;
                }
                let now_ns = u64::try_from(now.total_micros()).unwrap_or(0) * 1_000;
                if now_ns.saturating_sub(seen.last_challenge) >= rfc5961::CHALLENGE_EVERY_NS
                    && self.challenge_ack()
                {
                    self.seen.last_challenge = now_ns;
                    self.seen.guarded.challenges += 1;
                }
                false
            }
        }
    }

    /// A challenge ACK: smoltcp's last plain segment again, at the stream's end, no payload
    /// (its acknowledgement is smoltcp's own). False if there is no template or no TX frame.
    fn challenge_ack(&mut self) -> bool {
        bare_segment(self.tx, self.eth, self.seen, ACK)
    }
}

/// A segment without payload from smoltcp's last plain one (its acknowledgement and window
/// smoltcp's own), at the stream's end on the wire, with `flags`, onto `tx`: a challenge ACK,
/// or the RST that ends a connection at exactly the number the gateway expects next. False
/// if there is no template or no TX frame.
fn bare_segment(tx: &mut XskTx, eth: [u8; ETH], seen: &mut Seen, flags: u8) -> bool {
    use xdp_common::layout::{ipv4, tcp as l4};
    let Some((template, hlen)) = seen.template else {
        return false;
    };
    let (seq, ip_id) = (seen.wire_end, seen.ip_id);
    let Ok(total16) = u16::try_from(hlen) else {
        return false;
    };
    let sent = tx.send(|frame| {
        let buf = frame.get_mut(..ETH + hlen)?;
        buf[..ETH].copy_from_slice(&eth);
        let ip = &mut buf[ETH..];
        ip.copy_from_slice(&template[..hlen]);
        ip[ipv4::TOTAL_LEN].copy_from_slice(&total16.to_be_bytes());
        headers(ip, seq, ip_id);
        ip[ipv4::HEADER_LEN + l4::FLAGS] = flags;
        let tcp_sum = !xdp_common::checksum::fold(xdp_common::checksum::tcp_sum(ip));
        ip[ipv4::HEADER_LEN..][l4::CHECKSUM].copy_from_slice(&tcp_sum.to_be_bytes());
        Some(ETH + hlen)
    });
    if sent.is_err() {
        return false;
    }
    seen.ip_id = ip_id.wrapping_add(1);
    seen.queued += 1;
    true
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
            let _ = a.push(IpCidr::new(IpAddress::Ipv4(ours), 32));
        });
        // Everything goes to the gateway (an IP medium has no next hop to resolve: the frames'
        // Ethernet header is the gateway's next hop, read at start).
        let _ = iface.routes_mut().add_default_ipv4_route(*gateway.ip());
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
            // Touched now: the segments' buffers never fault or allocate in the loop.
            pool: (0..POOL)
                .map(|_| {
                    let mut b = vec![0u8; MTU];
                    b.clear();
                    b
                })
                .collect(),
            seen: Seen::default(),
            eth,
            gateway,
            ours,
            // Drawn again at each connect ([`XdpTcp::connect`]).
            local_port: 0,
            s: Session::new(paths::Orders::TcpXdp, password, timeout)?,
            out: super::tcp::prefaulted(64 * 1024),
            out_orders: 0,
            shadow: super::tcp::prefaulted(64 * 1024),
            connect_started: 0,
            last_frame_rx: 0,
            last_service: 0,
            next_connect: 0,
            backoff: Backoff::new(now_ns() ^ u64::from(std::process::id()).rotate_left(32)),
            port_map: None,
            trigger: None,
            given: 0,
            reset_after: None,
        })
    }

    /// Resets the connection (an RST) once, after `n` orders have gone (a test of the
    /// reconnect: `trader --order-reset-after`).
    #[must_use]
    pub fn resetting_after(mut self, n: Option<u64>) -> XdpTcp {
        self.reset_after = n;
        self
    }

    /// The test's fault, when its count of orders is reached: the armed segment withdrawn,
    /// the connection aborted with an RST on the wire, made again at the next service.
    fn maybe_reset(&mut self, tx: &mut XskTx) {
        if self.reset_after.is_none_or(|n| self.s.report.sent < n) {
            return;
        }
        self.reset_after = None;
        self.withdraw_segment();
        self.s.report.resets_injected += 1;
        // The RST at exactly the stream's end on the wire, fast-sent bytes included: the number
        // the exchange expects next (one below would be refused, RFC 5961; smoltcp's own RST
        // carries the last number it put out, behind bytes its window held back).
        self.shadow_out(tx);
        bare_segment(tx, self.eth, &mut self.seen, RST | ACK);
        self.sockets.get_mut::<tcp::Socket>(self.handle).abort();
        let now = now_ns();
        // smoltcp's RST goes too (behind ours, refused as a repeat or challenged).
        self.egress(now, tx);
        self.lost();
        // And the next connection is under way at once (its SYN behind the RST): orders made
        // meanwhile are held for its login, as the kernel session's reset makes its own.
        self.next_connect = now + self.backoff.next_wait();
        self.connect_started = now;
        self.connect();
        self.egress(now, tx);
    }

    /// Writes each connection's local port into `map` before its SYN leaves: the XDP program
    /// steers to the stack only the live connection's segments, and drops every other from
    /// the gateway's address and port.
    #[must_use]
    pub fn with_port_map(mut self, map: OrderPortMap) -> XdpTcp {
        self.port_map = Some(map);
        self
    }

    /// Tells the XDP program which local port is live (0: none).
    fn steer(&mut self, port: u16) {
        if let Some(m) = &mut self.port_map
            && let Err(e) = m.set(port)
        {
            // Rare (a connect or a loss), off the orders' path: the session can't come up.
            eprintln!("warning: {e}: the program steers no segment of this connection");
        }
    }

    /// The TCP trigger: arms its segments in `map`, which the XDP program sends from.
    #[must_use]
    pub fn with_segment(mut self, map: SegmentMap) -> XdpTcp {
        self.trigger = Some(Trigger { map, armed: None });
        self
    }

    /// Arms `order` (its price 0: the program writes the tick's) as the connection's next
    /// segment, for the arm that will have `generation`; the segment armed before is withdrawn
    /// first. Only where the sequence number is certain, as for a fast send, and nothing of the
    /// stack's own waits to go.
    pub fn arm_segment(&mut self, order: &OrderRepr, generation: u32) -> Result<(), NoSegment> {
        use xdp_common::{layout::ipv4, segment};
        self.withdraw_segment();
        if self.trigger.is_none() || !self.logged_in() {
            return Err(NoSegment::NoSession);
        }
        let socket = self.sockets.get::<tcp::Socket>(self.handle);
        if socket.state() != tcp::State::Established {
            return Err(NoSegment::NoSession);
        }
        let Some(seq) = self.next_seq() else {
            return Err(NoSegment::Busy);
        };
        let room = socket.send_capacity() - socket.send_queue();
        let Some((template, hlen)) = &self.seen.template else {
            return Err(NoSegment::Busy);
        };
        let hlen_plain = ipv4::HEADER_LEN + xdp_common::layout::tcp::HEADER_LEN;
        if *hlen != hlen_plain || !self.out.is_empty() || room < self.shadow.len() + ORDER_PACKET {
            return Err(NoSegment::Busy);
        }
        if self
            .seen
            .peer
            .room(seq)
            .is_none_or(|r| (r as usize) < ORDER_PACKET)
        {
            // No fire into a closed window: the tick's order goes by the stack instead.
            return Err(NoSegment::Window);
        }
        let mut packet = [0u8; ORDER_PACKET];
        let Some((_, ORDER_PACKET)) = order_packet(order, &mut packet) else {
            return Err(NoSegment::Order);
        };
        let mut frame = [0u8; segment::FRAME_LEN];
        frame[..ETH].copy_from_slice(&self.eth);
        frame[ETH..segment::TCP_AT + xdp_common::layout::tcp::HEADER_LEN]
            .copy_from_slice(&template[..hlen_plain]);
        frame[segment::ORDER_AT - wire::soupbin::HEADER_LEN..].copy_from_slice(&packet);
        let ip_len = (segment::FRAME_LEN - ETH) as u16;
        frame[ETH..][ipv4::TOTAL_LEN].copy_from_slice(&ip_len.to_be_bytes());
        // The price's bytes and the checksum zero: the program writes them.
        headers(&mut frame[ETH..], seq, self.seen.ip_id);
        debug_assert_eq!(frame[segment::PRICE_AT..segment::PRICE_AT + 4], [0; 4]);
        let partial = segment::partial_sum(&frame);
        let Some(t) = &mut self.trigger else {
            return Err(NoSegment::NoSession);
        };
        if !t.map.write(generation, &frame, partial) {
            return Err(NoSegment::Busy);
        }
        t.armed = Some(Armed {
            generation,
            seq,
            packet,
        });
        self.seen.ip_id = self.seen.ip_id.wrapping_add(1);
        Ok(())
    }

    /// The generation of the segment armed now, if one is.
    #[inline]
    pub fn armed_segment(&self) -> Option<u32> {
        self.trigger.as_ref()?.armed.map(|a| a.generation)
    }

    /// Withdraws the armed segment, if there is one: from here the program won't send it;
    /// if it did, the stack learns of it now.
    pub fn withdraw_segment(&mut self) {
        let Some(t) = &mut self.trigger else { return };
        let Some(a) = t.armed.take() else { return };
        match t.map.withdraw(a.generation) {
            Withdrawn::Sent(price) => self.learn(&a, price),
            Withdrawn::Unsent => self.s.report.withdrawn += 1,
            Withdrawn::InDoubt => {
                // Never seen; if it were, the session can't know its own next byte.
                self.s.report.in_doubt += 1;
                self.lost();
            }
        }
    }

    /// Whether the program sent the armed segment: if it did, the stack learns of it.
    #[inline]
    fn check_fired(&mut self) -> bool {
        let Some(t) = &mut self.trigger else {
            return false;
        };
        let Some(a) = t.armed else { return false };
        let (generation, price) = t.map.sent();
        if generation != a.generation {
            return false;
        }
        t.armed = None;
        self.learn(&a, price);
        true
    }

    /// The armed segment went out at `price`: the stack is given its bytes as if sent fast
    /// (its own first transmission of them dropped by the device), the order awaits its answer.
    fn learn(&mut self, a: &Armed, price: u32) {
        use xdp_common::layout::ouch::enter_order::field::PRICE;
        let mut packet = a.packet;
        let at = wire::soupbin::HEADER_LEN + PRICE.end - 4;
        packet[at..at + 4].copy_from_slice(&price.to_be_bytes());
        self.shadow.extend_from_slice(&packet);
        let end = a.seq.wrapping_add(ORDER_PACKET as u32);
        self.seen.merge_fast(a.seq, end);
        self.s.fired(&packet);
    }

    /// Logged in, the session not ended by the exchange: orders go out, the trigger arms.
    pub fn logged_in(&self) -> bool {
        self.s.up()
    }

    /// Logins refused so far.
    pub fn login_rejects(&self) -> u64 {
        self.s.report.login_rejects
    }

    /// TCP connections tried so far.
    pub fn connects(&self) -> u64 {
        self.s.report.connects
    }

    /// The gateway.
    pub fn gateway(&self) -> SocketAddrV4 {
        self.gateway
    }

    /// Takes `frame` (from the RX ring at `t_rx`, the time the path already read for it) if it
    /// is a segment of the session: IPv4, TCP, from the gateway's address and port to ours.
    /// False: not the session's (the caller counts it).
    #[inline]
    pub fn take_frame(&mut self, frame: &[u8], t_rx: u64) -> bool {
        use xdp_common::layout::{at, ipv4, tcp as l4};
        let ip = &frame.get(ETH..).unwrap_or(&[]);
        let field = |f: xdp_common::layout::Field| ip.get(f);
        let session = field(ipv4::PROTOCOL..ipv4::PROTOCOL + 1) == Some(&[ipv4::PROTOCOL_TCP])
            && field(ipv4::SRC) == Some(&self.gateway.ip().octets())
            && field(ipv4::DST) == Some(&self.ours.octets())
            && field(at(ipv4::HEADER_LEN, l4::SRC_PORT))
                == Some(&self.gateway.port().to_be_bytes())
            && field(at(ipv4::HEADER_LEN, l4::DST_PORT)) == Some(&self.local_port.to_be_bytes());
        if !session {
            return false;
        }
        // The IP datagram only (a frame may carry padding past it).
        let total = field(ipv4::TOTAL_LEN).map_or(ip.len(), |t| {
            usize::from(u16::from_be_bytes([t[0], t[1]])).min(ip.len())
        });
        let packet = &ip[..total];
        if self.rx.len() < RX_QUEUE {
            let mut buf = self.pool.pop().unwrap_or_default();
            buf.clear();
            buf.extend_from_slice(packet);
            self.rx.push_back(buf);
        }
        self.last_frame_rx = t_rx;
        true
    }

    /// Sets the RX time of the packet whose orders follow.
    #[inline]
    pub fn set_tick_rx(&mut self, t_rx: u64) {
        self.s.tick_rx = t_rx;
    }

    /// One order: one SoupBinTCP packet into the socket, sent at once on `tx` (the caller
    /// kicks). False, and counted, if no session is logged in or the socket can't take it.
    #[inline]
    pub fn send(&mut self, order: &OrderRepr, tx: &mut XskTx) -> bool {
        // The TCP trigger's segment holds the next sequence number: settled first.
        self.withdraw_segment();
        if self.s.doubts_end() {
            self.lost();
        }
        let state = self.s.client.state();
        // A connection under way (its SYN out, no login yet): the order waits for the login,
        // as during one.
        let connecting = state == soup::ClientState::Disconnected
            && matches!(
                self.sockets.get::<tcp::Socket>(self.handle).state(),
                tcp::State::SynSent | tcp::State::SynReceived | tcp::State::Established
            );
        if (state == soup::ClientState::Disconnected && !connecting) || self.s.ended {
            self.s.report.not_sent += 1;
            return false;
        }
        let mut packet = [0u8; ORDER_PACKET];
        let Some((_, packet)) = self.s.encode(order, &mut packet) else {
            return false;
        };
        let n = packet.len();
        // Whatever the session queued before (a login's held orders, a heartbeat) goes first.
        self.write_out();
        if state == soup::ClientState::LoggingIn || connecting {
            self.s.hold(packet);
        } else if !self.out.is_empty() {
            // Behind bytes the socket hasn't taken yet: in turn, never inside them.
            self.out.extend_from_slice(packet);
            self.out_orders += 1;
        } else if self.send_fast(packet, tx) {
            self.s.report.fast_sends += 1;
        } else {
            // Bytes sent fast go out of smoltcp (dropped as repeats) before anything after them.
            self.shadow_out(tx);
            let socket = self.sockets.get_mut::<tcp::Socket>(self.handle);
            // Whole or not at all: part of an order in the stream would break its framing.
            if socket.send_capacity() - socket.send_queue() < n {
                // The socket's buffer full (the exchange not reading): not sent.
                self.s.report.not_sent += 1;
                return false;
            }
            match socket.send_slice(packet) {
                Ok(k) => self.gave(&packet[..k]),
                Err(_) => {
                    self.s.report.not_sent += 1;
                    return false;
                }
            }
            self.egress(self.s.tick_rx, tx);
        }
        self.s.sent(packet);
        self.maybe_reset(tx);
        true
    }

    /// Sends `packet` (one SoupBinTCP packet) as a TCP segment built from the last one smoltcp
    /// sent, without smoltcp, then gives smoltcp the same bytes: its own first transmission of
    /// them is dropped by the device, so its state is as if it had sent them (and it sends
    /// them again if they are lost). Only where the next byte is certain and nothing before
    /// it waits in the stack ([`XdpTcp::next_seq`]): the stream's every byte is on the wire
    /// already. False: nothing was sent, take smoltcp's way.
    #[inline]
    fn send_fast(&mut self, packet: &[u8], tx: &mut XskTx) -> bool {
        use xdp_common::layout::ipv4;
        let socket = self.sockets.get::<tcp::Socket>(self.handle);
        if socket.state() != tcp::State::Established {
            return false;
        }
        // The acknowledgement smoltcp itself last sent (the template's): never for bytes
        // smoltcp hasn't taken in order.
        let Some((template, hlen)) = &self.seen.template else {
            return false;
        };
        let Some(seq) = self.next_seq() else {
            return false;
        };
        if socket.send_capacity() - socket.send_queue() < self.shadow.len() + packet.len() {
            return false;
        }
        // The gateway's window: a closed one sends the order through smoltcp, which waits.
        if self
            .seen
            .peer
            .room(seq)
            .is_none_or(|r| (r as usize) < packet.len())
        {
            self.s.report.window_closed += 1;
            return false;
        }
        let (hlen, eth, ip_id) = (*hlen, self.eth, self.seen.ip_id);
        let total = hlen + packet.len();
        let Ok(total16) = u16::try_from(total) else {
            return false;
        };
        let sent = tx.send(|frame| {
            let buf = frame.get_mut(..ETH + total)?;
            buf[..ETH].copy_from_slice(&eth);
            let ip = &mut buf[ETH..];
            ip[..hlen].copy_from_slice(&template[..hlen]);
            ip[hlen..].copy_from_slice(packet);
            ip[ipv4::TOTAL_LEN].copy_from_slice(&total16.to_be_bytes());
            seal(ip, seq, ip_id);
            Some(ETH + total)
        });
        if sent.is_err() {
            return false;
        }
        // smoltcp takes the bytes after the turn (room checked above) and puts them out then,
        // as a repeat the device drops: off the order's path.
        self.shadow.extend_from_slice(packet);
        let end = seq.wrapping_add(packet.len() as u32);
        self.seen.merge_fast(seq, end);
        self.seen.ip_id = ip_id.wrapping_add(1);
        true
    }

    /// The next byte's sequence number, where it is certain that a segment sent now at it
    /// leaves no hole: everything the stack was given, and everything sent fast, is on the
    /// wire (the stream's end is [`Seen::wire_end`]).
    #[inline]
    fn next_seq(&self) -> Option<u32> {
        let next = self
            .seen
            .stream_start?
            .wrapping_add(self.given)
            .wrapping_add(self.shadow.len() as u32);
        (self.seen.wire_end == next).then_some(next)
    }

    /// The bytes `packet` went to the socket.
    #[inline]
    fn gave(&mut self, packet: &[u8]) {
        gave(&mut self.s, &mut self.given, packet);
    }

    /// smoltcp sends what it has to send, at `now`, on `tx` (the caller kicks).
    fn egress(&mut self, now: u64, tx: &mut XskTx) {
        self.with_dev(tx, |iface, dev, sockets| {
            let _ = iface.poll_egress(instant(now), dev, sockets);
        });
    }

    /// Runs `f` on smoltcp's interface and sockets with the device over `tx`.
    fn with_dev<R>(
        &mut self,
        tx: &mut XskTx,
        f: impl FnOnce(&mut Interface, &mut Dev<'_>, &mut SocketSet<'static>) -> R,
    ) -> R {
        let socket = self.sockets.get::<tcp::Socket>(self.handle);
        let synchronized = !matches!(
            socket.state(),
            tcp::State::Closed | tcp::State::Listen | tcp::State::SynSent | tcp::State::SynReceived
        );
        let window = u32::try_from(socket.recv_capacity() - socket.recv_queue()).unwrap_or(0);
        let mut dev = Dev {
            rx: &mut self.rx,
            pool: &mut self.pool,
            tx,
            eth: self.eth,
            seen: &mut self.seen,
            synchronized,
            window,
        };
        f(&mut self.iface, &mut dev, &mut self.sockets)
    }

    /// smoltcp puts out what was sent fast (the device drops those repeats), if anything was.
    fn shadow_out(&mut self, tx: &mut XskTx) {
        self.hand_shadow();
        if self.seen.fast.is_some() {
            self.egress(now_ns(), tx);
        }
    }

    /// Gives smoltcp the bytes sent fast (room was checked when they were sent).
    fn hand_shadow(&mut self) {
        if self.shadow.is_empty() {
            return;
        }
        let socket = self.sockets.get_mut::<tcp::Socket>(self.handle);
        let taken = socket.send_slice(&self.shadow).unwrap_or(0);
        debug_assert_eq!(taken, self.shadow.len());
        let Self {
            shadow, s, given, ..
        } = self;
        gave(s, given, &shadow[..taken]);
        self.shadow.clear();
    }

    /// After a turn's orders are out: smoltcp catches up with what was sent fast. Whether
    /// it put a frame on the ring (to kick).
    #[inline]
    pub fn after_orders(&mut self, tx: &mut XskTx) -> bool {
        let before = self.seen.queued;
        self.shadow_out(tx);
        self.seen.queued != before
    }

    /// Answers, timers and the connection, at most every [`SERVICE_EVERY_NS`]; `tx` for what
    /// the stack sends (the caller kicks). Whether it ran (and so may have queued frames).
    #[inline]
    pub fn service(&mut self, tx: &mut XskTx) -> bool {
        let now = now_ns();
        if now.saturating_sub(self.last_service) < SERVICE_EVERY_NS {
            return false;
        }
        let before = self.seen.queued;
        self.service_now(now, tx);
        self.seen.queued != before
    }

    /// [`XdpTcp::service`] now.
    pub fn service_now(&mut self, now: u64, tx: &mut XskTx) {
        self.last_service = now;
        self.s.expire(now);
        self.hand_shadow();
        self.poll(now, tx);
        let state = self.sockets.get::<tcp::Socket>(self.handle).state();
        let gone = match state {
            // The exchange closed its side (a FIN): nothing more will be answered.
            tcp::State::CloseWait | tcp::State::LastAck => true,
            _ => false,
        };
        if gone {
            self.lost();
        }
        if state == tcp::State::SynSent
            && now.saturating_sub(self.connect_started) > CONNECT_TIMEOUT_NS
        {
            // A SYN unanswered for long: given up, as the kernel session's connect is; the
            // next try is the backoff's (below), no connection having been lost.
            self.sockets.get_mut::<tcp::Socket>(self.handle).abort();
            self.steer(0);
        }
        let state = self.sockets.get::<tcp::Socket>(self.handle).state();
        match (state, self.s.client.state()) {
            (tcp::State::Closed | tcp::State::TimeWait, _) => {
                if self.s.client.state() != soup::ClientState::Disconnected {
                    self.lost();
                } else if !self.s.held.is_empty() {
                    // The connection they were held for never came (a refused or unanswered
                    // SYN): never sent late into a later one.
                    self.s.unsent(0);
                }
                if now >= self.next_connect {
                    self.next_connect = now + self.backoff.next_wait();
                    self.connect_started = now;
                    self.connect();
                    self.poll(now, tx);
                }
                return;
            }
            (tcp::State::Established, soup::ClientState::Disconnected) => {
                // Connected: log in from the next answer not yet had.
                self.s.report.connects += 1;
                self.out.clear();
                self.s.client.connect(now, &mut self.out);
            }
            _ => {}
        }
        self.read(now);
        if self.s.client.state() == soup::ClientState::LoggedIn {
            self.backoff.up(now);
        }
        if let Some(soup::ClientEvent::ServerSilent) = self.s.client.tick(now, &mut self.out) {
            self.s.report.server_silent += 1;
            self.lost();
            return;
        }
        self.write_out();
        self.poll(now, tx);
    }

    fn poll(&mut self, now: u64, tx: &mut XskTx) {
        // A segment the program sent: the stack has it as sent before any acknowledgement of it
        // comes in.
        if self.check_fired() {
            self.shadow_out(tx);
            self.maybe_reset(tx);
        }
        self.with_dev(tx, |iface, dev, sockets| {
            let _ = iface.poll(instant(now), dev, sockets);
        });
    }

    fn connect(&mut self) {
        // A port drawn at random, as a kernel draws its ephemeral ports (RFC 6056), from those
        // the kernel never picks for its own connections (above its ephemeral range), never
        // the last connection's: a stranger can't guess the next connection's 4-tuple.
        let ports = u64::from(u16::MAX - xdp_common::ORDER_TCP_LOCAL_PORTS) + 1;
        let last = self.local_port;
        while self.local_port == last {
            self.local_port =
                xdp_common::ORDER_TCP_LOCAL_PORTS + (self.backoff.random() % ports) as u16;
        }
        self.s.report.connect_tries += 1;
        // Before the SYN: the gateway's answer must find the port live.
        self.steer(self.local_port);
        let remote = (IpAddress::Ipv4(*self.gateway.ip()), self.gateway.port());
        // What the old connection left queued is not the new one's.
        while let Some(b) = self.rx.pop_front() {
            self.pool.push(b);
        }
        let socket = self.sockets.get_mut::<tcp::Socket>(self.handle);
        socket.abort();
        if let Err(e) = socket.connect(self.iface.context(), remote, self.local_port) {
            eprintln!("warning: the userspace TCP could not start a connection to {remote:?}: {e}");
        }
        // Nothing learned of the old connection holds for the new one.
        self.seen.forget();
        self.given = 0;
    }

    /// Reads what the socket holds and takes each answer.
    fn read(&mut self, now: u64) {
        loop {
            let socket = self.sockets.get_mut::<tcp::Socket>(self.handle);
            if !socket.can_recv() {
                break;
            }
            let Ok(n) = socket.recv_slice(self.s.client.read_into()) else {
                break;
            };
            if n == 0 {
                break;
            }
            self.s.client.filled(n, now);
            let arrived = self.last_frame_rx;
            self.s
                .take_events(arrived, &mut self.out, &mut self.out_orders);
            if self.s.client.state() == soup::ClientState::Disconnected {
                self.lost();
                return;
            }
            if self.s.ended {
                // The exchange ended the session: the trigger fires nothing more on it.
                self.withdraw_segment();
            }
        }
    }

    /// Gives the socket what the session has queued.
    fn write_out(&mut self) {
        if self.out.is_empty() {
            return;
        }
        // Not at the sequence number an armed segment holds.
        self.withdraw_segment();
        // Behind the bytes already on the wire, in their order.
        self.hand_shadow();
        let socket = self.sockets.get_mut::<tcp::Socket>(self.handle);
        if !socket.may_send() {
            return;
        }
        if let Ok(n) = socket.send_slice(&self.out) {
            let Self { out, s, given, .. } = self;
            gave(s, given, &out[..n]);
            self.out.drain(..n);
            if self.out.is_empty() {
                self.out_orders = 0;
            }
        }
    }

    /// The connection is gone: aborted (an RST), made again at the next service.
    fn lost(&mut self) {
        self.withdraw_segment();
        // Nothing of the old connection reaches the stack (nor the kernel) any more.
        self.steer(0);
        self.backoff.down();
        self.s.report.disconnects += 1;
        self.s.client.disconnected();
        self.sockets.get_mut::<tcp::Socket>(self.handle).abort();
        self.seen.forget();
        self.s.unsent(self.out_orders);
        self.out.clear();
        self.out_orders = 0;
        // Bytes sent fast are on the wire, in the stream the exchange may have read, though
        // smoltcp never had them.
        self.s.digest.add(&self.shadow);
        self.shadow.clear();
        // Made again after the backoff's wait: the first try after a login 0.5-1 ms on.
        self.next_connect = now_ns() + self.backoff.next_wait();
    }

    /// Whether the answers to every order sent and the session's end have come.
    pub fn answered(&self) -> bool {
        self.s.answered()
    }

    /// Logs out (if logged in) and returns the session's report.
    pub fn finish(&mut self, tx: &mut XskTx) -> OrderSessionReport {
        let now = now_ns();
        self.withdraw_segment();
        self.shadow_out(tx);
        // Before the logout's own bytes: what the exchange never acknowledged of the orders.
        self.s.report.unacked_at_end =
            self.sockets.get::<tcp::Socket>(self.handle).send_queue() as u64;
        // Logged in, even after the exchange's End of Session: the logout is owed either way.
        if self.s.client.state() == soup::ClientState::LoggedIn {
            self.s.client.logout(now, &mut self.out);
            self.write_out();
            self.poll(now, tx);
            self.sockets.get_mut::<tcp::Socket>(self.handle).close();
            self.poll(now, tx);
        }
        self.s.report.dropped_segments = self.seen.ring_full;
        let g = self.seen.guarded;
        self.s.report.rst_refused = g.rst;
        self.s.report.syn_refused = g.syn;
        self.s.report.challenge_acks = g.challenges;

        self.s.final_report()
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
        = Rx<'b>
    where
        Self: 'b;
    type TxToken<'b>
        = ProbeTx<'b>
    where
        Self: 'b;

    fn receive(&mut self, _: Instant) -> Option<(Rx<'_>, ProbeTx<'_>)> {
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

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use smoltcp::{
        iface::{Config, Interface, SocketSet},
        phy::{self, Device, DeviceCapabilities, Medium},
        socket::tcp,
        time::Instant,
        wire::{HardwareAddress, IpAddress, IpCidr, Ipv4Packet, TcpPacket},
    };

    use super::{ACK, PeerWindow, SYN, Segment, repeat_of_fast, window_scale};

    /// The client's port in [`Loop`].
    const CLIENT_PORT: u16 = 49_152;

    /// A wire from an interface to itself (a client and a server socket on one address), which
    /// records when each of the client's data segments went and can lose one.
    #[derive(Default)]
    struct Loop {
        queue: VecDeque<Vec<u8>>,
        /// (ms, sequence number) of each data segment the client sent, in order.
        sent: Vec<(i64, u32)>,
        /// The index (among `sent`) of the segment lost.
        lose: Option<usize>,
    }

    struct LoopRx(Vec<u8>);

    struct LoopTx<'a>(&'a mut Loop, Instant);

    impl phy::RxToken for LoopRx {
        fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
            f(&self.0)
        }
    }

    impl phy::TxToken for LoopTx<'_> {
        fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
            let mut packet = vec![0; len];
            let r = f(&mut packet);
            let ip = Ipv4Packet::new_checked(&packet[..]).expect("smoltcp sends IPv4");
            let tcp = TcpPacket::new_checked(ip.payload()).expect("and TCP");
            let data = tcp.src_port() == CLIENT_PORT && !tcp.payload().is_empty();
            let lost = data && self.0.lose == Some(self.0.sent.len());
            if data {
                self.0
                    .sent
                    .push((self.1.total_millis(), tcp.seq_number().0 as u32));
            }
            if !lost {
                self.0.queue.push_back(packet);
            }
            r
        }
    }

    impl Device for Loop {
        type RxToken<'a> = LoopRx;
        type TxToken<'a> = LoopTx<'a>;

        fn receive(&mut self, now: Instant) -> Option<(LoopRx, LoopTx<'_>)> {
            let packet = self.queue.pop_front()?;
            Some((LoopRx(packet), LoopTx(self, now)))
        }

        fn transmit(&mut self, now: Instant) -> Option<LoopTx<'_>> {
            Some(LoopTx(self, now))
        }

        fn capabilities(&self) -> DeviceCapabilities {
            let mut caps = DeviceCapabilities::default();
            caps.medium = Medium::Ip;
            caps.max_transmission_unit = super::MTU;
            caps
        }
    }

    fn seg(ack: u32, window: u16, flags: u8, window_scale: Option<u8>) -> Segment {
        Segment {
            header_end: 40,
            seq: 0,
            ack,
            flags,
            payload: 0,
            window,
            window_scale,
        }
    }

    /// A fast send or an armed segment must fit the gateway's window as smoltcp's own sends
    /// do: the room is the window past its last acknowledgement, less what is on the wire.
    #[test]
    fn the_gateways_window_bounds_what_goes_without_the_stack() {
        let mut p = PeerWindow::default();
        assert_eq!(
            p.room(1_000),
            None,
            "nothing acknowledged yet: no room known"
        );
        // Both SYNs offered a scale of 7: the SYN-ACK's own window unscaled, later ones << 7.
        p.ours = Some(7);
        p.saw(&seg(1_000, 512, SYN | ACK, Some(7)), 1_000);
        assert_eq!(p.room(1_000), Some(512));
        p.saw(&seg(1_000, 512, ACK, None), 1_000);
        assert_eq!(p.room(1_000), Some(512 << 7));
        assert_eq!(p.room(1_000 + (512 << 7) - 10), Some(10));
        // A zero window: no room at all, and bytes past the edge are no room either.
        p.saw(&seg(2_000, 0, ACK, None), 2_000);
        assert_eq!((p.room(2_000), p.room(2_050)), (Some(0), Some(0)));
        // An older acknowledgement than the last changes nothing.
        p.saw(&seg(1_500, 65_535, ACK, None), 1_500);
        assert_eq!(p.room(2_000), Some(0));
        // Across the wrap of sequence space: forward past it is newer, back behind it older.
        let mut w = PeerWindow {
            ours: Some(0),
            theirs: Some(0),
            ..PeerWindow::default()
        };
        w.saw(&seg(u32::MAX - 5, 100, ACK, None), u32::MAX - 5);
        w.saw(&seg(10, 300, ACK, None), 10);
        assert_eq!(w.room(10), Some(300));
        assert_eq!(
            w.room(u32::MAX - 5),
            Some(316),
            "the edge is 310, past the wrap"
        );
        w.saw(&seg(u32::MAX - 5, 65_535, ACK, None), u32::MAX - 5);
        assert_eq!(w.room(10), Some(300), "behind the last: ignored");
        // Only one side offered a scale: none is used.
        let mut q = PeerWindow::default();
        q.saw(&seg(10, 600, SYN | ACK, Some(7)), 10);
        q.saw(&seg(10, 600, ACK, None), 10);
        assert_eq!(q.room(10), Some(600));
    }

    #[test]
    fn a_syns_window_scale_is_read_among_its_options() {
        // MSS 1460, NOP, window scale 7, SACK permitted, timestamps.
        let opts = [
            2, 4, 5, 180, 1, 3, 3, 7, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0,
        ];
        assert_eq!(window_scale(&opts), Some(7));
        assert_eq!(window_scale(&[2, 4, 5, 180]), None);
        assert_eq!(window_scale(&[3, 3]), None, "cut short");
        assert_eq!(
            window_scale(&[0, 3, 3, 7]),
            None,
            "after the end of the list"
        );
        assert_eq!(
            window_scale(&[5, 0, 3, 3, 7]),
            None,
            "a length under 2 stops the walk"
        );
    }

    /// How long after its first transmission smoltcp sends a lost order segment again, on a
    /// session whose every earlier segment was acknowledged at once (the lab's veth: RTT samples
    /// of 0 ms). The userspace TCP relies on this timer for a fast send lost anywhere
    /// (docs/orders.md): smoltcp 0.13 follows RFC 6298, whose 1 s floor makes this 1,000 ms.
    /// 0.12's estimator (Jacobson/Karels, RTO floor 10 ms) settled at rtt 7 ms, deviation 10 ms,
    /// so 7 + 4 x 10 = 47 ms: a lost order now waits 1 s, not 47 ms, to go again.
    #[test]
    fn smoltcp_resends_a_lost_segment_after_its_retransmission_timeout() {
        let mut dev = Loop::default();
        let addr = IpAddress::v4(10, 0, 0, 1);
        let mut iface = Interface::new(
            Config::new(HardwareAddress::Ip),
            &mut dev,
            Instant::from_millis(0),
        );
        iface.update_ip_addrs(|a| a.push(IpCidr::new(addr, 24)).expect("room for one"));
        let socket = || {
            let mut s = tcp::Socket::new(
                tcp::SocketBuffer::new(vec![0; 4096]),
                tcp::SocketBuffer::new(vec![0; 4096]),
            );
            s.set_nagle_enabled(false);
            s.set_ack_delay(None);
            s
        };
        let mut sockets = SocketSet::new(Vec::new());
        let mut server = socket();
        server.listen(4000).expect("a port");
        let server = sockets.add(server);
        let client = sockets.add(socket());
        sockets
            .get_mut::<tcp::Socket>(client)
            .connect(iface.context(), (addr, 4000), CLIENT_PORT)
            .expect("a connect");
        // Polls at `ms` until the wire is quiet, the server reading what came.
        let mut run = |ms: i64, dev: &mut Loop, sockets: &mut SocketSet<'_>| {
            loop {
                iface.poll(Instant::from_millis(ms), dev, sockets);
                let s = sockets.get_mut::<tcp::Socket>(server);
                while s.can_recv() {
                    let _ = s.recv(|b| (b.len(), ()));
                }
                if dev.queue.is_empty() {
                    break;
                }
            }
        };
        run(0, &mut dev, &mut sockets);
        assert!(sockets.get::<tcp::Socket>(client).may_send(), "connected");
        // 200 orders, each acknowledged in the same millisecond.
        const ROUNDS: usize = 200;
        for _ in 0..ROUNDS {
            let c = sockets.get_mut::<tcp::Socket>(client);
            c.send_slice(b"an order").expect("room");
            run(0, &mut dev, &mut sockets);
            assert_eq!(sockets.get::<tcp::Socket>(client).send_queue(), 0);
        }
        // The next is lost; the clock runs a millisecond at a time until it goes again.
        dev.lose = Some(ROUNDS);
        let c = sockets.get_mut::<tcp::Socket>(client);
        c.send_slice(b"an order").expect("room");
        run(0, &mut dev, &mut sockets);
        let mut ms = 0;
        while dev.sent.len() == ROUNDS + 1 && ms < 5_000 {
            ms += 1;
            run(ms, &mut dev, &mut sockets);
        }
        let (first, seq) = dev.sent[ROUNDS];
        let (again, seq_again) = dev.sent[ROUNDS + 1];
        assert_eq!(seq_again, seq, "the same bytes");
        // smoltcp 0.13 (RFC 6298): a 1 s floor; 0.12 resent after 47 ms on the same RTT.
        assert_eq!(again - first, 1_000, "smoltcp 0.13's RTO on the lab's RTT");
        assert_eq!(
            sockets.get::<tcp::Socket>(client).send_queue(),
            0,
            "and taken"
        );
    }

    #[test]
    fn smoltcps_first_transmission_of_fast_bytes_is_dropped_and_nothing_else() {
        let fast = Some((100, 200));
        // Its first transmission, whole or in part.
        assert_eq!(repeat_of_fast(fast, 100, 200), (None, true));
        assert_eq!(repeat_of_fast(fast, 100, 150), (Some((150, 200)), true));
        // Acknowledged before smoltcp put them out: it starts inside, the rest dropped.
        assert_eq!(repeat_of_fast(fast, 150, 200), (None, true));
        assert_eq!(repeat_of_fast(fast, 150, 180), (Some((180, 200)), true));
        // Past the range: done with it, sent.
        assert_eq!(repeat_of_fast(fast, 200, 250), (None, false));
        // The bytes and more in one segment: sent, the range done.
        assert_eq!(repeat_of_fast(fast, 100, 260), (None, false));
        // A retransmission of earlier bytes: sent, the range kept; one reaching into it moves it.
        assert_eq!(repeat_of_fast(fast, 50, 100), (fast, false));
        assert_eq!(repeat_of_fast(fast, 50, 150), (Some((150, 200)), false));
        assert_eq!(repeat_of_fast(None, 100, 200), (None, false));
        // Across the sequence space's wrap.
        let wrap = Some((u32::MAX - 9, 40));
        assert_eq!(
            repeat_of_fast(wrap, u32::MAX - 9, 20),
            (Some((20, 40)), true)
        );
        assert_eq!(repeat_of_fast(wrap, 40, 90), (None, false));
    }
}
