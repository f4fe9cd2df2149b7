//! `inject segments`: an adversary beside the order session, forging TCP segments from the
//! gateway to the trader as a stranger on the segment could. It watches the session go by on
//! the exchange's interface (an AF_PACKET socket filtered to the gateway's TCP port) to learn
//! the live connection (the trader's address, port and MAC, and the next byte the trader
//! expects, RCV.NXT; up once the gateway has sent it data), then sends rounds of each kind of
//! lie in raw frames with the gateway's
//! address, port and MAC:
//!
//! * `rst_in_window`: an RST 1,000 past RCV.NXT (inside any receive window);
//! * `rst_other_mac`: an RST at exactly RCV.NXT, to another host's MAC;
//! * `ack_ip_options`: an ACK at RCV.NXT whose IPv4 header carries options (IHL 6);
//! * `syn`: a SYN at RCV.NXT on the established connection;
//! * `rst_sweep`: a blind sweep, one RST every 64 KiB of sequence space (65,536 of them,
//!   64 a millisecond), once, in the first round: the port known, the number not.
//!
//! A venue-grade TCP takes none of them (RFC 5961, an L2 check, and no kernel that answers a
//! segment it has no socket for); the test reading the report asserts the session stayed up.
//!
//! The in-stream kinds ([`IN_STREAM`], sent only where `--kinds` names them) are the on-path
//! adversary's, who knows RCV.NXT exactly: SoupBinTCP bytes at RCV.NXT, acknowledging the
//! trader's next byte (ACK, PSH), which the trader's TCP takes as the gateway's:
//!
//! * `forged_answer`: a Sequenced Data packet holding an OUCH 5.0 Order Accepted for a
//!   UserRefNum the trader never sent ([`FORGED_USER_REF`] and up);
//! * `forged_end`: an End of Session.
//!
//! One goes a round, the kinds asked in turn, once the round is due and the connection is
//! ready for it: up, carrying no data either way for [`QUIET`] (nothing of the gateway's in
//! flight to reach the number first), and not the stream the last one was written into (a new connection, or the stream moved on
//! past it). The gateway's own bytes at those numbers come after, as a retransmission the
//! trader's TCP trims: the test reading the report asserts the trader booked none of it and
//! logged in again. Whether a forgery went out ahead of the gateway's bytes is read off the
//! interface (an order's answer may still beat it); one that lost the race goes again. Every
//! address must lie in the lab's 198.18.0.0/15.
use std::{
    collections::VecDeque,
    net::{Ipv4Addr, SocketAddrV4},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use netns::Mac;
use wire::{
    order::OrderRepr,
    ouch::{EnterOrder, Price4, Side, Stock, order_state},
    soupbin::Repr,
};

use crate::{
    options::SegmentsOptions,
    raw::{PacketSocket, Sniffer},
    report::{InStreamLie, KindReport, SegmentsReport},
};

/// The kinds, in the order a round sends them.
pub const KINDS: [&str; 7] = [
    "rst_in_window",
    "rst_other_mac",
    "ack_ip_options",
    "syn",
    "rst_sweep",
    "forged_answer",
    "forged_end",
];

/// The kinds written into the stream itself: sent only where `--kinds` names them (a trader
/// takes them, and ends its connection for them), so a run without `--kinds` is as before.
pub const IN_STREAM: [&str; 2] = ["forged_answer", "forged_end"];

/// How long the session must have carried no data, either way, before an in-stream forgery
/// goes: an order's answer comes well inside it (10-20 µs in the lab), so no byte of the
/// gateway's is on its way to the same number, unless an order went in the last few µs.
const QUIET: Duration = Duration::from_micros(200);

/// Sends of one in-stream forgery at most: one that the gateway's own bytes beat to the
/// trader goes again (the race is the watcher's to see, not the trader's to be spared).
const TRIES: usize = 5;

/// The first forged answer's UserRefNum (each round's is one more): far beyond any token the
/// trader makes (they count from 1, one an order).
pub const FORGED_USER_REF: u32 = 0xF0F0_0000;

/// Another host's MAC on the segment (none of the lab's).
const OTHER_MAC: [u8; 6] = [0x02, 0x00, 0xc6, 0x12, 0x00, 0x99];

/// The sweep's frames sent back to back before a millisecond's pause.
const SWEEP_BURST: usize = 64;

/// TCP flags.
const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;

/// Ethernet, IPv4 and TCP header lengths (no options).
const ETH: usize = 14;
const IP: usize = 20;
const TCP: usize = 20;

/// What the watcher learned of the live connection.
#[derive(Debug, Clone, Copy)]
struct Conn {
    trader: SocketAddrV4,
    trader_mac: [u8; 6],
    gateway_mac: [u8; 6],
    /// The next byte the trader expects from the gateway.
    rcv_nxt: u32,
    /// `rcv_nxt` is from an ACK of the trader's (a SYN acknowledges nothing: until its
    /// handshake's ACK, no number is known).
    acked: bool,
    /// The next byte the trader sends (what a forged ACK acknowledges).
    snd_nxt: u32,
    /// The gateway has sent data on it (its login's answer): the connection is up, and the
    /// lies are for it, not for a SYN the gateway may yet refuse.
    up: bool,
    /// The trader closed or reset it (a FIN or an RST): no lie is for it any more.
    over: bool,
}

/// One TCP segment's fields, as the watcher reads a frame.
struct Seen {
    src: SocketAddrV4,
    dst: SocketAddrV4,
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    seq: u32,
    ack: u32,
    flags: u8,
    payload: u32,
    /// The IPv4 header's length.
    ihl: usize,
}

fn read(frame: &[u8]) -> Option<Seen> {
    let ip = frame.get(ETH..)?;
    let ihl = usize::from(ip.first()? & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
    let tcp = ip.get(ihl..total.min(ip.len()))?;
    let data_offset = usize::from(tcp.get(12)? >> 4) * 4;
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(tcp.get(at..at + 4)?.try_into().ok()?))
    };
    let addr = |at: usize, port: usize| -> Option<SocketAddrV4> {
        let a: [u8; 4] = ip.get(at..at + 4)?.try_into().ok()?;
        let p = u16::from_be_bytes(tcp.get(port..port + 2)?.try_into().ok()?);
        Some(SocketAddrV4::new(Ipv4Addr::from(a), p))
    };
    Some(Seen {
        src: addr(12, 0)?,
        dst: addr(16, 2)?,
        dst_mac: frame.get(..6)?.try_into().ok()?,
        src_mac: frame.get(6..12)?.try_into().ok()?,
        seq: word(4)?,
        ack: word(8)?,
        flags: *tcp.get(13)?,
        payload: u32::try_from(tcp.len().checked_sub(data_offset)?).ok()?,
        ihl,
    })
}

/// `b` at or after `a` in sequence space.
fn not_before(b: u32, a: u32) -> bool {
    (b.wrapping_sub(a) as i32) >= 0
}

/// Folds what one segment says into what is known of the connection to `gateway`.
fn learn(conn: &mut Option<Conn>, gateway: SocketAddrV4, s: &Seen) {
    if s.dst == gateway {
        learn_from_trader(conn, s);
    } else if s.src == gateway
        && let Some(c) = conn.as_mut().filter(|c| c.trader == s.dst && c.trader_mac == s.dst_mac)
        // Not our own lies, which the watcher sees go out too (RSTs, SYNs, IP options), nor
        // the gateway's SYN-ACK (the trader's ACK of it says the same). Our in-stream bytes
        // are learned as the gateway's: the trader's TCP takes them as such.
        && s.flags & (RST | SYN) == 0
        && s.ihl == IP
    {
        let end = s
            .seq
            .wrapping_add(s.payload + u32::from(s.flags & FIN != 0));
        if c.acked && not_before(end, c.rcv_nxt) {
            c.rcv_nxt = end;
        }
        c.up |= c.acked && s.payload > 0;
    }
}

/// The trader's segment `s`: a SYN starts a new connection (the only way one starts, with
/// the watcher there from the first); an old connection's last segments (its FIN sent again,
/// an RST) change nothing; a FIN or an RST on the live one ends it for the lies.
fn learn_from_trader(conn: &mut Option<Conn>, s: &Seen) {
    let known = conn.is_some_and(|c| c.trader == s.src);
    if conn.is_some() && !known && s.flags & SYN == 0 {
        return;
    }
    let end = s
        .seq
        .wrapping_add(s.payload + u32::from(s.flags & (SYN | FIN) != 0));
    let new = Conn {
        trader: s.src,
        trader_mac: s.src_mac,
        gateway_mac: s.dst_mac,
        rcv_nxt: s.ack,
        acked: s.flags & ACK != 0,
        snd_nxt: end,
        up: false,
        over: false,
    };
    let c = conn.get_or_insert(new);
    if !known || s.flags & SYN != 0 {
        *c = new;
    }
    if not_before(end, c.snd_nxt) {
        c.snd_nxt = end;
    }
    if s.flags & ACK != 0 && (!c.acked || not_before(s.ack, c.rcv_nxt)) {
        c.rcv_nxt = s.ack;
        c.acked = true;
    }
    c.over |= s.flags & (FIN | RST) != 0;
}

/// One forged segment: to `to`, `flags` at `seq`, with IPv4 options if `ip_options`, carrying
/// `payload`.
#[derive(Clone, Copy)]
struct Lie<'a> {
    to: [u8; 6],
    seq: u32,
    flags: u8,
    ip_options: bool,
    payload: &'a [u8],
}

/// `lie` as a frame from the gateway to the trader, acknowledging the trader's next byte if
/// it carries ACK; IPv4 options are 4 bytes of NOPs and an end; both checksums right.
fn forge(c: &Conn, gateway: SocketAddrV4, lie: &Lie<'_>) -> Vec<u8> {
    let opt = if lie.ip_options { 4 } else { 0 };
    let ihl = IP + opt;
    let segment = TCP + lie.payload.len();
    let mut f = vec![0u8; ETH + ihl + segment];
    f[..6].copy_from_slice(&lie.to);
    f[6..12].copy_from_slice(&c.gateway_mac);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[ETH..];
    ip[0] = 0x40 | (ihl / 4) as u8;
    ip[2..4].copy_from_slice(&((ihl + segment) as u16).to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&gateway.ip().octets());
    ip[16..20].copy_from_slice(&c.trader.ip().octets());
    if lie.ip_options {
        ip[20..24].copy_from_slice(&[1, 1, 1, 0]);
    }
    let sum = xdp_common::checksum::ipv4_header(&ip[..ihl]);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let tcp = &mut ip[ihl..];
    tcp[0..2].copy_from_slice(&gateway.port().to_be_bytes());
    tcp[2..4].copy_from_slice(&c.trader.port().to_be_bytes());
    tcp[4..8].copy_from_slice(&lie.seq.to_be_bytes());
    let ack = if lie.flags & ACK != 0 { c.snd_nxt } else { 0 };
    tcp[8..12].copy_from_slice(&ack.to_be_bytes());
    tcp[12] = ((TCP / 4) as u8) << 4;
    tcp[13] = lie.flags;
    tcp[14..16].copy_from_slice(&u16::MAX.to_be_bytes());
    tcp[TCP..].copy_from_slice(lie.payload);
    let sum = tcp_checksum(gateway.ip(), c.trader.ip(), &f[ETH + ihl..]);
    f[ETH + ihl + 16..ETH + ihl + 18].copy_from_slice(&sum.to_be_bytes());
    f
}

/// The TCP checksum of `segment` (its checksum field zero) between `src` and `dst`.
fn tcp_checksum(src: &Ipv4Addr, dst: &Ipv4Addr, segment: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut add = |b: &[u8]| {
        for pair in b.chunks(2) {
            let hi = u32::from(pair[0]) << 8;
            sum += hi | pair.get(1).map_or(0, |&lo| u32::from(lo));
        }
    };
    add(&src.octets());
    add(&dst.octets());
    add(&[0, 6]);
    add(&(segment.len() as u16).to_be_bytes());
    add(segment);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The UserRefNum of round `round`'s forged answer.
fn forged_user_ref(round: u32) -> u32 {
    FORGED_USER_REF.wrapping_add(round)
}

/// The SoupBinTCP packet an in-stream kind writes in round `round`: a Sequenced Data packet
/// holding an Order Accepted for an order never sent (100 of the lab's stock bought at
/// $100), or an End of Session. `None` for another kind.
fn record(kind: &str, round: u32) -> Option<Vec<u8>> {
    let mut message = [0u8; 128];
    let repr = match kind {
        "forged_answer" => {
            let order = OrderRepr {
                side: Side::Buy,
                reverse: false,
                shares: 100,
                token: u64::from(forged_user_ref(round)),
                tick_seq: u64::from(round) + 1,
                price: Price4(1_000_000),
                stock: Stock::new(paths::market::STOCK).ok()?,
            };
            let accepted = EnterOrder::from_order(&order).ok()?.accepted(
                0,
                u64::from(forged_user_ref(round)),
                order_state::LIVE,
            );
            let n = accepted.emit_into(&mut message).ok()?;
            Repr::SequencedData(&message[..n])
        }
        "forged_end" => Repr::EndOfSession,
        _ => return None,
    };
    let mut packet = vec![0u8; repr.buffer_len()];
    let n = repr.emit_into(&mut packet).ok()?;
    packet.truncate(n);
    Some(packet)
}

/// The frames one kind sends in round `round` (the sweep goes in the first only).
fn frames_of(kind: &str, c: &Conn, gateway: SocketAddrV4, round: u32) -> Vec<(Vec<u8>, [u8; 6])> {
    let to = c.trader_mac;
    let lie = |seq: u32, flags: u8| Lie {
        to,
        seq,
        flags,
        ip_options: false,
        payload: &[],
    };
    let one = |l: Lie<'_>| vec![(forge(c, gateway, &l), l.to)];
    match kind {
        "rst_in_window" => one(lie(c.rcv_nxt.wrapping_add(1_000), RST | ACK)),
        "rst_other_mac" => one(Lie {
            to: OTHER_MAC,
            ..lie(c.rcv_nxt, RST | ACK)
        }),
        "ack_ip_options" => one(Lie {
            ip_options: true,
            ..lie(c.rcv_nxt, ACK)
        }),
        "syn" => one(lie(c.rcv_nxt, SYN)),
        "rst_sweep" if round == 0 => {
            // From an offset that misses RCV.NXT itself: a blind forger's luck is 1 in 65,536.
            let from = c.rcv_nxt.wrapping_add(7_777);
            (0..65_536u32)
                .map(|k| (forge(c, gateway, &lie(from.wrapping_add(k << 16), RST)), to))
                .collect()
        }
        _ => match record(kind, round) {
            Some(payload) => one(Lie {
                payload: &payload,
                ..lie(c.rcv_nxt, ACK | PSH)
            }),
            None => Vec::new(),
        },
    }
}

fn in_lab(a: &Ipv4Addr) -> bool {
    let o = a.octets();
    o[0] == 198 && (o[1] & 0xfe) == 18
}

/// The kinds `--kinds` asks for, in [`KINDS`]' order (none named: every kind but the
/// in-stream ones).
fn chosen(asked: &[String]) -> anyhow::Result<Vec<&'static str>> {
    if let Some(k) = asked.iter().find(|k| !KINDS.contains(&k.as_str())) {
        bail!(
            "--kinds: unknown kind {k:?} (the kinds: {})",
            KINDS.join(", ")
        );
    }
    Ok(KINDS
        .iter()
        .copied()
        .filter(|k| {
            if asked.is_empty() {
                !IN_STREAM.contains(k)
            } else {
                asked.iter().any(|x| x == k)
            }
        })
        .collect())
}

/// An in-stream forgery sent, until the capture says whether it reached the trader before
/// the gateway's own bytes at its number did.
struct Pending {
    /// The frame as sent (the watcher sees it go out).
    frame: Vec<u8>,
    trader: SocketAddrV4,
    seq: u32,
    /// Its kind and round, to go again if it lost the race.
    lie: (&'static str, u32),
    /// Until when the verdict is awaited.
    until: Instant,
}

/// What the watcher knows: the connection, when the session last carried data, and the
/// in-stream forgeries.
struct Watch {
    gateway: SocketAddrV4,
    conn: Option<Conn>,
    last_data: Instant,
    /// The stream the last in-stream forgery went into: the trader's end, and RCV.NXT after it.
    forged: Option<(SocketAddrV4, u32)>,
    /// The in-stream forgery whose race is not yet known.
    pending: Option<Pending>,
}

impl Watch {
    fn new(gateway: SocketAddrV4) -> Watch {
        Watch {
            gateway,
            conn: None,
            last_data: Instant::now(),
            forged: None,
            pending: None,
        }
    }

    /// Takes every segment the sniffer holds. Returns the pending forgery's race once the
    /// capture settles it: its kind and round, and whether it went ahead of the gateway's
    /// bytes (`false`: a segment of the gateway's holding its first byte went out before it,
    /// so the trader's TCP took the gateway's and dropped the forgery as a repeat, or took
    /// only its tail).
    fn drain(
        &mut self,
        sniffer: &Sniffer,
        buf: &mut [u8],
    ) -> anyhow::Result<Option<((&'static str, u32), bool)>> {
        let mut verdict = None;
        while let Some(n) = sniffer.recv(buf).context("watching the session")? {
            let frame = &buf[..n];
            let Some(s) = read(frame) else { continue };
            if let Some(p) = &self.pending {
                let ours = frame == p.frame.as_slice();
                let before = s.src == self.gateway
                    && s.dst == p.trader
                    && s.payload > 0
                    && p.seq.wrapping_sub(s.seq) < s.payload;
                if ours || before {
                    verdict = Some((p.lie, ours));
                    self.pending = None;
                }
            }
            if s.payload > 0 {
                self.last_data = Instant::now();
            }
            learn(&mut self.conn, self.gateway, &s);
        }
        if self
            .pending
            .as_ref()
            .is_some_and(|p| Instant::now() > p.until)
        {
            // Never seen going out: not known to have gone (counted as not ahead).
            verdict = self.pending.take().map(|p| (p.lie, false));
        }
        Ok(verdict)
    }

    /// The live connection, if it is up, not over, and the lab's.
    fn live(&self) -> Option<Conn> {
        self.conn
            .filter(|c| c.up && !c.over && in_lab(c.trader.ip()))
    }

    /// Whether an in-stream forgery may go into `c` now: the last one's race settled, the
    /// session quiet, and not the stream the last one went into, as it left it.
    fn ready_for_in_stream(&self, c: &Conn) -> bool {
        self.pending.is_none()
            && self.last_data.elapsed() >= QUIET
            && self
                .forged
                .is_none_or(|(trader, end)| trader != c.trader || c.rcv_nxt != end)
    }
}

/// Sends `frames` (the sweep's paced), counting them into `r`.
fn send_frames(sock: &PacketSocket, frames: Vec<(Vec<u8>, [u8; 6])>, r: &mut KindReport) {
    for (i, (frame, mac)) in frames.into_iter().enumerate() {
        if i % SWEEP_BURST == SWEEP_BURST - 1 {
            // The sweep paced (64 a millisecond, about a second in all): a flood that
            // overran the trader's rings would cost the feed, the other lie.
            std::thread::sleep(Duration::from_millis(1));
        }
        match sock.send(&frame, Mac::from(mac)) {
            Ok(()) => r.sent += 1,
            Err(e) => {
                r.refused += 1;
                r.error = Some(e.to_string());
            }
        }
    }
}

/// Writes in-stream kind `lie.0` of round `lie.1` into `c` at RCV.NXT, and records it, its
/// race pending.
fn forge_in_stream(
    sock: &PacketSocket,
    w: &mut Watch,
    c: &Conn,
    lie: (&'static str, u32),
    report: &mut SegmentsReport,
) {
    let (kind, round) = lie;
    let Some((frame, mac)) = frames_of(kind, c, w.gateway, round).pop() else {
        return;
    };
    let len = (frame.len() - ETH - IP - TCP) as u32;
    let r = report.kinds.entry(kind.to_owned()).or_default();
    let before = r.sent;
    send_frames(sock, vec![(frame.clone(), mac)], r);
    w.forged = Some((c.trader, c.rcv_nxt.wrapping_add(len)));
    if r.sent == before {
        return;
    }
    report.in_stream.push(InStreamLie {
        kind: kind.to_owned(),
        round,
        trader: c.trader,
        seq: c.rcv_nxt,
        len,
        user_ref: (kind == "forged_answer").then(|| forged_user_ref(round)),
        ahead: None,
    });
    w.pending = Some(Pending {
        frame,
        trader: c.trader,
        seq: c.rcv_nxt,
        lie,
        until: Instant::now() + Duration::from_millis(100),
    });
}

/// What the loop holds between turns: the rounds sent, the in-stream forgeries due (kind,
/// round: one a round, the kinds in turn, each as the connection allows), and the report.
struct Rounds {
    lies: Vec<&'static str>,
    in_stream: Vec<&'static str>,
    queue: VecDeque<(&'static str, u32)>,
    next: Option<Instant>,
    report: SegmentsReport,
}

impl Rounds {
    /// One turn with the live connection `c`: the round if it is due, else the next
    /// in-stream forgery if the connection is ready for it. False if there was nothing to do.
    fn turn(&mut self, sock: &PacketSocket, w: &mut Watch, c: &Conn, o: &SegmentsOptions) -> bool {
        let due = *self
            .next
            .get_or_insert_with(|| Instant::now() + Duration::from_micros(o.start_after_us));
        let round = self.report.rounds;
        if round < o.rounds && Instant::now() >= due {
            for kind in &self.lies {
                let frames = frames_of(kind, c, o.gateway, round);
                let r = self.report.kinds.entry((*kind).to_owned()).or_default();
                send_frames(sock, frames, r);
            }
            if !self.in_stream.is_empty() {
                let kind = self.in_stream[round as usize % self.in_stream.len()];
                self.queue.push_back((kind, round));
            }
            self.report.trader = Some(c.trader);
            self.report.rounds += 1;
            self.next = Some(due + Duration::from_micros(o.interval_us));
            return true;
        }
        let Some(&lie) = self.queue.front() else {
            return false;
        };
        if !w.ready_for_in_stream(c) {
            return false;
        }
        self.queue.pop_front();
        forge_in_stream(sock, w, c, lie, &mut self.report);
        true
    }

    /// The race of the last in-stream forgery settled: recorded, and, lost, it goes again
    /// (at most [`TRIES`] times in all).
    fn settled(&mut self, lie: (&'static str, u32), ahead: bool) {
        if let Some(last) = self.report.in_stream.last_mut() {
            last.ahead = Some(ahead);
        }
        let tries = self
            .report
            .in_stream
            .iter()
            .filter(|l| (l.kind.as_str(), l.round) == lie)
            .count();
        if !ahead && tries < TRIES {
            self.queue.push_front(lie);
        }
    }

    /// Rounds still to send, or in-stream forgeries still due.
    fn busy(&self, o: &SegmentsOptions) -> bool {
        self.report.rounds < o.rounds || !self.queue.is_empty()
    }
}

/// Runs `inject segments`.
pub fn run(o: SegmentsOptions) -> anyhow::Result<()> {
    if !in_lab(o.gateway.ip()) {
        bail!("--gateway {}: not a lab address (198.18.0.0/15)", o.gateway);
    }
    let (in_stream, lies) = chosen(&o.kinds)?
        .into_iter()
        .partition(|k| IN_STREAM.contains(k));
    let sniffer = Sniffer::open_tcp(&o.iface, o.gateway.port())?;
    let sock = PacketSocket::open(&o.iface)?;
    let deadline = Instant::now() + Duration::from_secs(o.max_seconds);
    let mut w = Watch::new(o.gateway);
    let mut rounds = Rounds {
        lies,
        in_stream,
        queue: VecDeque::new(),
        next: None,
        report: SegmentsReport::default(),
    };
    let mut buf = vec![0u8; 2048];
    while (rounds.busy(&o) || w.pending.is_some()) && Instant::now() < deadline {
        if let Some((lie, ahead)) = w.drain(&sniffer, &mut buf)? {
            rounds.settled(lie, ahead);
        }
        let went = w.live().is_some_and(|c| rounds.turn(&sock, &mut w, &c, &o));
        if !went {
            // Closely while an in-stream forgery waits for a quiet moment or its race.
            let close = !rounds.queue.is_empty() || w.pending.is_some();
            std::thread::sleep(Duration::from_micros(if close { 50 } else { 200 }));
        }
    }
    let report = rounds.report;
    std::fs::write(&o.json_out, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("writing {}", o.json_out.display()))?;
    if report.rounds == 0 {
        bail!(
            "no connection to {} seen on {} in {} s: nothing sent",
            o.gateway,
            o.iface,
            o.max_seconds
        );
    }
    Ok(())
}

/// The forged frames as an independent parser reads them.
#[cfg(test)]
mod tests {
    use wire::{
        ouch::Outbound,
        soupbin::{Framer, Repr},
    };

    use super::*;

    fn conn() -> Conn {
        Conn {
            trader: SocketAddrV4::new(Ipv4Addr::new(198, 18, 0, 2), 61_234),
            trader_mac: [2, 0, 0xc6, 0x12, 0, 2],
            gateway_mac: [2, 0, 0xc6, 0x12, 0, 1],
            rcv_nxt: 4_000_000_000,
            acked: true,
            snd_nxt: 77,
            up: true,
            over: false,
        }
    }

    const GW: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(198, 18, 0, 1), 26_401);

    /// A segment of the trader's to the gateway.
    fn from_trader(c: &Conn, port: u16, flags: u8) -> Seen {
        Seen {
            src: SocketAddrV4::new(*c.trader.ip(), port),
            dst: GW,
            src_mac: c.trader_mac,
            dst_mac: c.gateway_mac,
            seq: 77,
            ack: c.rcv_nxt,
            flags,
            payload: 0,
            ihl: IP,
        }
    }

    #[test]
    fn each_lie_is_a_valid_segment_from_the_gateway_with_what_it_claims() {
        let c = conn();
        for kind in KINDS {
            let frames = frames_of(kind, &c, GW, 0);
            assert!(!frames.is_empty(), "{kind}");
            let (frame, mac) = &frames[0];
            assert_eq!(&frame[..6], mac, "{kind}");
            let p = etherparse::SlicedPacket::from_ethernet(frame).unwrap();
            let Some(etherparse::NetSlice::Ipv4(ip)) = p.net else {
                panic!("{kind}: IPv4")
            };
            let h = ip.header().to_header();
            assert_eq!(h.header_checksum, h.calc_header_checksum(), "{kind}");
            assert_eq!(h.options.is_empty(), kind != "ack_ip_options", "{kind}");
            let Some(etherparse::TransportSlice::Tcp(t)) = p.transport else {
                panic!("{kind}: TCP")
            };
            let th = t.to_header();
            assert_eq!(
                th.calc_checksum_ipv4(&h, t.payload()).unwrap(),
                th.checksum,
                "{kind}"
            );
            assert_eq!((th.source_port, th.destination_port), (26_401, 61_234));
            let want = match kind {
                "rst_in_window" => c.rcv_nxt.wrapping_add(1_000),
                "rst_sweep" => c.rcv_nxt.wrapping_add(7_777),
                _ => c.rcv_nxt,
            };
            assert_eq!(th.sequence_number, want, "{kind}");
            assert_eq!(th.rst, kind.starts_with("rst"), "{kind}");
            assert_eq!(th.syn, kind == "syn", "{kind}");
            let in_stream = IN_STREAM.contains(&kind);
            assert_eq!(t.payload().is_empty(), !in_stream, "{kind}");
            assert_eq!(th.psh, in_stream, "{kind}");
            if in_stream {
                assert!(th.ack && th.acknowledgment_number == c.snd_nxt, "{kind}");
            }
        }
        assert_eq!(frames_of("rst_sweep", &c, GW, 0).len(), 65_536);
        assert!(
            frames_of("rst_sweep", &c, GW, 1).is_empty(),
            "the sweep goes once"
        );
    }

    /// What the trader's session reads: one whole SoupBinTCP packet each, an Order Accepted
    /// for the round's UserRefNum (never a token the trader makes) or an End of Session.
    #[test]
    fn the_in_stream_lies_are_whole_soupbintcp_packets_the_session_reads() {
        let c = conn();
        for (kind, round) in [
            ("forged_answer", 0),
            ("forged_answer", 3),
            ("forged_end", 2),
        ] {
            let frames = frames_of(kind, &c, GW, round);
            let payload = &frames[0].0[ETH + IP + TCP..];
            let mut framer = Framer::new(4096);
            assert_eq!(framer.push(payload), payload.len());
            match framer.next_packet() {
                Some(Ok(Repr::SequencedData(m))) => {
                    assert_eq!(kind, "forged_answer");
                    let Ok(Outbound::Accepted(a)) = Outbound::parse(m) else {
                        panic!("{kind}: an Order Accepted")
                    };
                    assert_eq!(a.user_ref_num, FORGED_USER_REF + round);
                    assert_eq!(a.symbol, Stock::new(paths::market::STOCK).unwrap());
                }
                Some(Ok(Repr::EndOfSession)) => assert_eq!(kind, "forged_end"),
                other => panic!("{kind}: {other:?}"),
            }
            assert_eq!(framer.pending(), 0, "{kind}: one packet, nothing after it");
        }
        assert_eq!(record("syn", 0), None);
    }

    #[test]
    fn the_in_stream_kinds_go_only_where_named() {
        let all = chosen(&[]).unwrap();
        assert_eq!(all, KINDS[..5].to_vec(), "the default is as before");
        let named = ["forged_end", "forged_answer"].map(str::to_owned);
        assert_eq!(chosen(&named).unwrap(), IN_STREAM.to_vec(), "KINDS' order");
        assert!(chosen(&["forged".to_owned()]).is_err());
    }

    #[test]
    fn the_watcher_learns_the_next_byte_from_both_directions() {
        let c = conn();
        let mut known = None;
        // The trader's ACK of 4,000,000,000, then 100 bytes from the gateway.
        learn(&mut known, GW, &from_trader(&c, c.trader.port(), ACK));
        assert_eq!(known.map(|k| k.rcv_nxt), Some(c.rcv_nxt));
        let from_gw = Seen {
            src: GW,
            dst: c.trader,
            src_mac: c.gateway_mac,
            dst_mac: c.trader_mac,
            seq: c.rcv_nxt,
            ack: 77,
            flags: ACK,
            payload: 100,
            ihl: IP,
        };
        assert!(
            known.is_some_and(|k| !k.up),
            "not up before the gateway's data"
        );
        learn(&mut known, GW, &from_gw);
        assert_eq!(known.map(|k| k.rcv_nxt), Some(c.rcv_nxt.wrapping_add(100)));
        assert!(known.is_some_and(|k| k.up));
        // Our own RST seen going out moves nothing.
        let rst = Lie {
            to: c.trader_mac,
            seq: c.rcv_nxt.wrapping_add(5_000),
            flags: RST | ACK,
            ip_options: false,
            payload: &[],
        };
        learn(&mut known, GW, &read(&forge(&c, GW, &rst)).unwrap());
        assert_eq!(known.map(|k| k.rcv_nxt), Some(c.rcv_nxt.wrapping_add(100)));
        let syn = Lie {
            seq: 5,
            flags: SYN,
            ..rst
        };
        assert!(read(&forge(&c, GW, &syn)).is_some_and(|s| s.flags == SYN));
        // Our in-stream bytes are the trader's next ones.
        let live = known.unwrap();
        let end = frames_of("forged_end", &live, GW, 0);
        learn(&mut known, GW, &read(&end[0].0).unwrap());
        assert_eq!(known.map(|k| k.rcv_nxt), Some(live.rcv_nxt.wrapping_add(3)));
    }

    /// An old connection's last segments change nothing; the live one's FIN ends it for the
    /// lies; only a SYN starts another.
    #[test]
    fn the_watcher_follows_the_live_connection_only() {
        let c = conn();
        let mut known = Some(c);
        learn(&mut known, GW, &from_trader(&c, 50_000, FIN | ACK));
        assert_eq!(known.map(|k| k.trader), Some(c.trader), "an old one's FIN");
        assert!(known.is_some_and(|k| !k.over));
        learn(&mut known, GW, &from_trader(&c, c.trader.port(), FIN | ACK));
        assert!(known.is_some_and(|k| k.over), "the live one's FIN");
        let syn = Seen {
            ack: 0,
            ..from_trader(&c, 50_001, SYN)
        };
        learn(&mut known, GW, &syn);
        let k = known.unwrap();
        assert_eq!(k.trader.port(), 50_001, "a new connection");
        assert!(!k.up && !k.over, "up once the gateway has sent on it");
        // The SYN acknowledged nothing: the handshake's ACK says where the gateway's bytes
        // start, however far that is from 0 (here 4,000,000,000: more than 2^31 past it).
        assert!(!k.acked);
        learn(&mut known, GW, &from_trader(&c, 50_001, ACK));
        assert_eq!(known.map(|k| (k.rcv_nxt, k.acked)), Some((c.rcv_nxt, true)));
    }
}
