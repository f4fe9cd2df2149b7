//! `inject lies`: an adversary on the lab's segment telling a trader every class of lie a
//! forger of its MoldUDP64/ITCH feed would tell, numbered from the feed's own next sequence
//! number, which it learns by watching the real feed go by on the interface.
//!
//! It sends through a plain UDP socket of this namespace (`--via udp`: another port or
//! another address than the feed's) or as whole Ethernet frames with the feed's exact source
//! spoofed (`--via raw`: the interface's MAC, the feed's IPv4 address and port, both checksums
//! right, the feed's own TOS, TTL and IP id copied: nothing at L2-L4 tells it from the feed).
//! Everything it sends is bounded (rounds, `--max-seconds`) and stays inside 198.18.0.0/15,
//! and `--json-out` says exactly what went out, so a test can compute what a trader that
//! believed none of it would have done.
use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    io::Write as _,
    net::{Ipv4Addr, SocketAddrV4, UdpSocket},
    path::PathBuf,
    time::{Duration, Instant},
};

use afxdp::frame::{self, FrameBuilder, HEADERS_LEN};
use anyhow::{Context as _, bail};
use netns::{Capability, Mac, lab};
use wire::{
    itch::{self, Price4, Stock},
    moldudp64::{self, END_OF_SESSION, Packet, PacketBuilder, Session},
};
use xdp_common::{
    checksum,
    layout::{at, ethernet, ipv4},
};

use crate::{
    FeedSource, LieKind, LiesOptions, Via,
    raw::{PacketSocket, Sniffer},
    report::{LieKindReport, LieTotals, LiesReport, SentLie},
};

/// Where the IPv4 header starts in a frame.
const IP: usize = ethernet::HEADER_LEN;
/// The type-of-service byte of the IPv4 header (DSCP and ECN).
const IP_TOS: usize = 1;
/// Frames copied off the watching socket per look, so the send loop never waits on it.
const DRAIN_MAX: usize = 1024;
/// The longest the loop sleeps between looks at the feed: the socket's buffer holds a few
/// milliseconds of a fast feed, so the feed's next number is never older than this.
const LOOK_EVERY: Duration = Duration::from_millis(1);
/// How many of our own payloads are remembered, to tell them from the feed's when the watching
/// socket sees them go out (it does within microseconds).
const OURS_REMEMBERED: usize = 4096;

/// Whether `ip` lies in 198.18.0.0/15 (RFC 2544's benchmarking range), the only addresses
/// this lab sends from or to.
pub(crate) fn in_bench_range(ip: Ipv4Addr) -> bool {
    u32::from(ip) & 0xfffe_0000 == u32::from(Ipv4Addr::new(198, 18, 0, 0))
}

/// Refuses an address outside 198.18.0.0/15, naming the option it came from.
pub(crate) fn guard(what: &str, ip: Ipv4Addr) -> anyhow::Result<()> {
    if !in_bench_range(ip) {
        bail!(
            "{what} {ip} is outside 198.18.0.0/15: this lab sends only inside RFC 2544's \
             benchmarking range, nothing was sent"
        );
    }
    Ok(())
}

/// What every lie says besides its numbers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Claims {
    session: Session,
    stock: Stock,
    price: Price4,
    /// How far ahead `ahead` and `heartbeat_ahead` are numbered.
    jump: u64,
}

/// One lying MoldUDP64 packet and what it claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lie {
    payload: Vec<u8>,
    seq: u64,
    count: u16,
    /// It carries a forged trade (at `Claims::price`, of `Claims::stock`).
    trade: bool,
}

/// The packets of one `kind` numbered from the feed's next sequence number `next`.
pub(crate) fn lies(kind: LieKind, next: u64, c: &Claims) -> Vec<Lie> {
    let ahead = next.wrapping_add(c.jump);
    match kind {
        LieKind::Ahead => vec![trade(c, ahead), trade(c, ahead.wrapping_add(1))],
        LieKind::EndAhead => {
            let seq = next.wrapping_add(3);
            vec![header_only(c, seq, END_OF_SESSION); 2]
        }
        LieKind::AtNext | LieKind::AnswerAhead => vec![trade(c, next)],
        LieKind::JustPast => vec![trade(c, next.wrapping_add(1))],
        LieKind::EmptyBlock => vec![empty_block(c, next)],
        LieKind::HeartbeatAhead => vec![header_only(c, ahead, moldudp64::HEARTBEAT)],
    }
}

/// A packet of one forged trade numbered `seq`.
fn trade(c: &Claims, seq: u64) -> Lie {
    let mut message = [0u8; itch::trade::LEN];
    trader_core::trade_message(seq, c.stock, c.price, 0)
        .emit_into(&mut message)
        .expect("a trade fits its own length");
    let mut buf = [0u8; moldudp64::HEADER_LEN + moldudp64::BLOCK_HEADER_LEN + itch::trade::LEN];
    let mut b = PacketBuilder::new(&mut buf, c.session, seq).expect("the header fits");
    b.push(&message).expect("one trade fits");
    Lie {
        payload: b.finish().to_vec(),
        seq,
        count: 1,
        trade: true,
    }
}

/// A header and nothing else: a heartbeat (count 0) or an end of session (0xFFFF).
fn header_only(c: &Claims, seq: u64, count: u16) -> Lie {
    let mut payload = vec![0u8; moldudp64::HEADER_LEN];
    let mut p = Packet::new_unchecked(&mut payload[..]);
    p.set_session(c.session);
    p.set_sequence(seq);
    p.set_count(count);
    Lie {
        payload,
        seq,
        count,
        trade: false,
    }
}

/// A packet claiming one message whose block is empty (length prefix 0).
fn empty_block(c: &Claims, seq: u64) -> Lie {
    let mut lie = header_only(c, seq, 1);
    lie.payload.extend_from_slice(&0u16.to_be_bytes());
    lie
}

/// The IPv4 header fields a kernel fills per socket or per packet, copied from the feed's last
/// frame so that a spoofed frame carries the feed's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IpLook {
    tos: u8,
    ident: u16,
    flags_frag: u16,
    ttl: u8,
}

impl IpLook {
    /// The look of the IPv4 header at the start of `ip` (at least 20 bytes).
    fn of(ip: &[u8]) -> Option<IpLook> {
        let be16 =
            |f: std::ops::Range<usize>| Some(u16::from_be_bytes(ip.get(f)?.try_into().ok()?));
        Some(IpLook {
            tos: *ip.get(IP_TOS)?,
            ident: be16(ipv4::IDENT)?,
            flags_frag: be16(ipv4::FLAGS_FRAG)?,
            ttl: *ip.get(ipv4::TTL)?,
        })
    }
}

/// A spoofed flow: whole frames from `src` to `dst`, both checksums right.
#[derive(Debug, Clone)]
pub(crate) struct RawFlow {
    builder: FrameBuilder,
}

impl RawFlow {
    pub(crate) fn new(src: frame::Endpoint, dst: frame::Endpoint) -> Self {
        RawFlow {
            builder: FrameBuilder::new(src, dst),
        }
    }

    /// The frame carrying `payload`, with the feed's IPv4 `look` if one is known.
    pub(crate) fn frame(&mut self, payload: &[u8], look: Option<IpLook>) -> Vec<u8> {
        let mut buf = vec![0u8; HEADERS_LEN + payload.len()];
        let n = self
            .builder
            .build(&mut buf, |body| {
                body[..payload.len()].copy_from_slice(payload);
                payload.len()
            })
            .expect("the buffer holds the headers and the payload");
        buf.truncate(n);
        if let Some(l) = look {
            // Only "don't fragment" is kept: a lie is never a fragment.
            let flags = l.flags_frag & ipv4::FLAG_DONT_FRAGMENT;
            buf[IP + IP_TOS] = l.tos;
            buf[at(IP, ipv4::IDENT)].copy_from_slice(&l.ident.to_be_bytes());
            buf[at(IP, ipv4::FLAGS_FRAG)].copy_from_slice(&flags.to_be_bytes());
            buf[IP + ipv4::TTL] = l.ttl;
            // The UDP checksum covers none of these; the IPv4 header's is made again.
            buf[at(IP, ipv4::CHECKSUM)].fill(0);
            let c = checksum::ipv4_header(&buf[IP..IP + ipv4::HEADER_LEN]);
            buf[at(IP, ipv4::CHECKSUM)].copy_from_slice(&c.to_be_bytes());
        }
        buf
    }
}

/// Payloads we sent, remembered for a while: the watching socket sees our own frames go out,
/// and those are not the feed's.
#[derive(Debug, Default)]
struct Ours {
    counts: HashMap<Vec<u8>, u32>,
    order: VecDeque<Vec<u8>>,
}

impl Ours {
    fn insert(&mut self, payload: &[u8]) {
        if self.order.len() == OURS_REMEMBERED
            && let Some(old) = self.order.pop_front()
            && let Some(n) = self.counts.get_mut(&old)
        {
            *n -= 1;
            if *n == 0 {
                self.counts.remove(&old);
            }
        }
        self.order.push_back(payload.to_vec());
        *self.counts.entry(payload.to_vec()).or_default() += 1;
    }

    fn contains(&self, payload: &[u8]) -> bool {
        self.counts.contains_key(payload)
    }
}

/// What the watcher knows of the feed: its next sequence number (the largest sequence +
/// count over its data packets), from frames to `target` from `source`.
#[derive(Debug)]
pub(crate) struct FeedState {
    target: SocketAddrV4,
    source: FeedSource,
    next: Option<u64>,
    data_packets: u64,
    first_source: Option<SocketAddrV4>,
    look: Option<IpLook>,
    ours: Ours,
}

impl FeedState {
    pub(crate) fn new(target: SocketAddrV4, source: FeedSource) -> Self {
        FeedState {
            target,
            source,
            next: None,
            data_packets: 0,
            first_source: None,
            look: None,
            ours: Ours::default(),
        }
    }

    /// Takes one frame seen on the interface; returns whether it was a data packet of the feed.
    pub(crate) fn observe(&mut self, f: &[u8]) -> bool {
        let Ok(d) = frame::parse_udp(f, self.target.port()) else {
            return false;
        };
        if d.dst != self.target
            || self.source.check(d.src).is_err()
            || self.ours.contains(d.payload)
        {
            return false;
        }
        let Ok(p) = Packet::new_checked(d.payload) else {
            return false;
        };
        self.look = IpLook::of(&f[IP..]).or(self.look);
        let count = p.count();
        // Heartbeats and the end of session say where the feed is, but a forger can send
        // those too from anywhere; data packets are what a trader trades.
        if count == moldudp64::HEARTBEAT || count == END_OF_SESSION {
            return false;
        }
        let Some(after) = p.sequence().checked_add(u64::from(count)) else {
            return false;
        };
        self.next = Some(self.next.map_or(after, |n| n.max(after)));
        self.data_packets += 1;
        self.first_source.get_or_insert(d.src);
        true
    }
}

/// The watching socket and what it learned.
struct Watcher {
    sniffer: Sniffer,
    state: FeedState,
    buf: Vec<u8>,
}

impl Watcher {
    /// Takes the frames waiting, at most [`DRAIN_MAX`], without waiting for any.
    fn drain(&mut self) -> anyhow::Result<()> {
        for _ in 0..DRAIN_MAX {
            match self.sniffer.recv(&mut self.buf) {
                Ok(Some(n)) => {
                    let n = n.min(self.buf.len());
                    self.state.observe(&self.buf[..n]);
                }
                Ok(None) => break,
                Err(e) => return Err(e).context("watching the feed"),
            }
        }
        Ok(())
    }

    /// Looks at the feed until `t`, every [`LOOK_EVERY`] at most.
    fn until(&mut self, t: Instant) -> anyhow::Result<()> {
        loop {
            self.drain()?;
            let now = Instant::now();
            if now >= t {
                return Ok(());
            }
            std::thread::sleep((t - now).min(LOOK_EVERY));
        }
    }
}

/// How the lies are paced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pace {
    /// A round (every kind, back to back) every this long.
    Interval(Duration),
    /// One kind after another, round-robin, this many per second.
    Rate(u64),
}

/// Everything `inject lies` was asked, checked: no socket opened yet, nothing sent.
#[derive(Debug)]
pub(crate) struct Plan {
    via: Via,
    iface: String,
    target: SocketAddrV4,
    bind: SocketAddrV4,
    spoof: Option<SocketAddrV4>,
    dst_mac: Mac,
    feed: FeedSource,
    kinds: Vec<LieKind>,
    skipped: Vec<LieKind>,
    claims: Claims,
    rounds: u32,
    pace: Pace,
    answer_from: Option<SocketAddrV4>,
    max: Duration,
    json_out: PathBuf,
    ready: bool,
}

impl Plan {
    /// Checks the options: the sending mode's own flags only, every address inside
    /// 198.18.0.0/15, numbers in range.
    pub(crate) fn new(o: LiesOptions) -> anyhow::Result<Plan> {
        let LiesOptions {
            via,
            iface,
            target,
            bind,
            spoof,
            dst_mac,
            feed_source,
            kinds: asked,
            rounds,
            interval_us,
            rate,
            jump,
            price,
            session,
            answer_from,
            max_seconds,
            json_out,
            ready,
        } = o;
        match via {
            Via::Udp => {
                for (flag, given) in [
                    ("--spoof", spoof.is_some()),
                    ("--dst-mac", dst_mac.is_some()),
                    ("--answer-from", answer_from.is_some()),
                ] {
                    if given {
                        bail!("{flag} is for --via raw (a UDP socket can't spoof a source)");
                    }
                }
            }
            Via::Raw => {
                if bind.is_some() {
                    bail!("--bind is for --via udp (--via raw takes its source from --spoof)");
                }
            }
        }
        let bind = bind.unwrap_or(SocketAddrV4::new(lab::EXCHANGE_IP, 0));
        let dst_mac = dst_mac.unwrap_or(lab::TRADER_MAC);
        if dst_mac.octets()[0] & 1 != 0 {
            bail!("--dst-mac {dst_mac} is a group address: give the trader's (unicast) MAC");
        }
        guard("--target", *target.ip())?;
        guard("--feed-source", feed_source.ip)?;
        match via {
            Via::Udp => guard("--bind", *bind.ip())?,
            Via::Raw => {
                if let Some(s) = spoof {
                    guard("--spoof", *s.ip())?;
                }
            }
        }
        if let Some(a) = answer_from {
            guard("--answer-from", *a.ip())?;
        }
        if rounds == 0 {
            bail!("--rounds must be at least 1");
        }
        if max_seconds == 0 {
            bail!("--max-seconds must be at least 1");
        }
        if jump == 0 {
            bail!("--jump must be at least 1 (0 would make `ahead` an `at_next`)");
        }
        let mut kinds: Vec<LieKind> = Vec::new();
        for k in if asked.is_empty() {
            LieKind::ALL.to_vec()
        } else {
            asked.clone()
        } {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        let mut skipped = Vec::new();
        if answer_from.is_none() && kinds.contains(&LieKind::AnswerAhead) {
            if asked.contains(&LieKind::AnswerAhead) {
                bail!("--kinds answer_ahead needs --answer-from IP:PORT (and --via raw)");
            }
            kinds.retain(|k| *k != LieKind::AnswerAhead);
            skipped.push(LieKind::AnswerAhead);
        }
        paths::cli::check_writable("--json-out", &json_out)?;
        Ok(Plan {
            via,
            iface,
            target,
            bind,
            spoof,
            dst_mac,
            feed: feed_source,
            kinds,
            skipped,
            claims: Claims {
                session,
                stock: Stock::new(paths::market::STOCK).expect("the lab's stock symbol is valid"),
                price,
                jump,
            },
            rounds,
            pace: match rate {
                Some(r) => Pace::Rate(r),
                None => Pace::Interval(Duration::from_micros(interval_us)),
            },
            answer_from,
            max: Duration::from_secs(max_seconds),
            json_out,
            ready,
        })
    }

    /// When the `i`-th kind (from 0, over all rounds) is due, after the first.
    fn due(&self, i: usize) -> Duration {
        match self.pace {
            Pace::Interval(d) => d * (i / self.kinds.len()) as u32,
            Pace::Rate(r) => Duration::from_nanos((i as u64).saturating_mul(1_000_000_000) / r),
        }
    }
}

/// Where the lies go out.
enum Sender {
    Udp(UdpSocket),
    Raw {
        socket: PacketSocket,
        dst_mac: Mac,
        /// The feed's flow, spoofed.
        feed: RawFlow,
        /// The re-request server's flow, spoofed (`answer_ahead`).
        answer: Option<RawFlow>,
    },
}

pub(crate) fn run(o: LiesOptions) -> anyhow::Result<()> {
    let plan = Plan::new(o)?;
    netns::check_capabilities(&[Capability::NetRaw]).context(
        "`inject lies` watches the feed (and with --via raw sends) on an AF_PACKET socket",
    )?;
    let mut watch = Watcher {
        sniffer: Sniffer::open(&plan.iface, plan.target.port())?,
        state: FeedState::new(plan.target, plan.feed),
        buf: vec![0u8; 65_536],
    };
    let started = Instant::now();
    let deadline = started + plan.max;
    // Opened before the wait, so a bad --bind or interface fails at once.
    let udp = match plan.via {
        Via::Udp => Some(
            UdpSocket::bind(plan.bind).with_context(|| format!("failed to bind {}", plan.bind))?,
        ),
        Via::Raw => None,
    };
    let raw = match plan.via {
        Via::Raw => Some((
            PacketSocket::open(&plan.iface)?,
            afxdp::host::read_mac(&plan.iface)?,
        )),
        Via::Udp => None,
    };
    while watch.state.next.is_none() {
        if Instant::now() >= deadline {
            bail!(
                "no packet of the feed (UDP from {} to {}) on {} within --max-seconds {}: is the \
                 replay running, and are --feed-source and --target its?",
                plan.feed,
                plan.target,
                plan.iface,
                plan.max.as_secs()
            );
        }
        watch.until((Instant::now() + LOOK_EVERY).min(deadline))?;
    }
    if plan.ready {
        println!("ready");
        std::io::stdout().flush()?;
    }
    let (mut sender, source) = match (udp, raw) {
        (Some(sock), _) => {
            let local = match sock.local_addr()? {
                std::net::SocketAddr::V4(a) => a,
                a => bail!("the UDP socket is bound to {a}, not an IPv4 address"),
            };
            (Sender::Udp(sock), local)
        }
        (None, Some((socket, src_mac))) => {
            let spoof = match plan.spoof {
                Some(s) => s,
                None => watch
                    .state
                    .first_source
                    .expect("the feed was seen, so its source is known"),
            };
            guard("the spoofed source", *spoof.ip())?;
            let to = frame::endpoint(plan.dst_mac, *plan.target.ip(), plan.target.port());
            let flow = |from: SocketAddrV4| {
                RawFlow::new(frame::endpoint(src_mac, *from.ip(), from.port()), to)
            };
            let sender = Sender::Raw {
                socket,
                dst_mac: plan.dst_mac,
                feed: flow(spoof),
                answer: plan.answer_from.map(flow),
            };
            (sender, spoof)
        }
        (None, None) => unreachable!("one sender per --via"),
    };
    let report = send_all(&plan, &mut watch, &mut sender, source, deadline)?;
    let json = serde_json::to_string_pretty(&report)?;
    std::fs::write(&plan.json_out, json)
        .with_context(|| format!("writing {}", plan.json_out.display()))?;
    if report.cut_short {
        eprintln!(
            "inject lies: --max-seconds {} ran out after {} packets; the report says which",
            plan.max.as_secs(),
            report.totals.packets
        );
    }
    Ok(())
}

/// Sends every round (or until `deadline`), looking at the feed before each kind, and
/// returns what went out.
fn send_all(
    plan: &Plan,
    watch: &mut Watcher,
    sender: &mut Sender,
    source: SocketAddrV4,
    deadline: Instant,
) -> anyhow::Result<LiesReport> {
    let mut kinds: BTreeMap<String, LieKindReport> = plan
        .kinds
        .iter()
        .map(|k| (k.name().to_owned(), LieKindReport::default()))
        .collect();
    let mut totals = LieTotals::default();
    let target = plan.target;
    let feed_next_at_start = watch.state.next.expect("the feed was seen");
    let total = plan.kinds.len() * plan.rounds as usize;
    let t0 = Instant::now();
    let mut cut_short = false;
    for i in 0..total {
        let due = t0 + plan.due(i);
        if due >= deadline {
            cut_short = true;
            break;
        }
        watch.until(due)?;
        let kind = plan.kinds[i % plan.kinds.len()];
        let round = (i / plan.kinds.len()) as u32;
        let next = watch.state.next.expect("the feed was seen");
        let r = kinds.get_mut(kind.name()).expect("every kind has a report");
        for lie in lies(kind, next, &plan.claims) {
            watch.state.ours.insert(&lie.payload);
            let (res, from) = match sender {
                Sender::Udp(sock) => (sock.send_to(&lie.payload, target).map(|_| ()), source),
                Sender::Raw {
                    socket,
                    dst_mac,
                    feed,
                    answer,
                } => {
                    let look = watch.state.look;
                    match (kind, answer.as_mut()) {
                        (LieKind::AnswerAhead, Some(flow)) => (
                            socket.send(&flow.frame(&lie.payload, look), *dst_mac),
                            plan.answer_from.expect("an answer flow has its source"),
                        ),
                        _ => (
                            socket.send(&feed.frame(&lie.payload, look), *dst_mac),
                            source,
                        ),
                    }
                }
            };
            match res {
                Ok(()) => {
                    totals.packets += 1;
                    if lie.count != END_OF_SESSION {
                        totals.messages += u64::from(lie.count);
                    }
                    totals.ticks += u64::from(lie.trade);
                    r.packets.push(SentLie {
                        round,
                        feed_next: next,
                        seq: lie.seq,
                        count: lie.count,
                        price: lie.trade.then_some(plan.claims.price.0),
                        stock: lie.trade.then(|| paths::market::STOCK.to_owned()),
                        source: from,
                    });
                }
                Err(e) => {
                    totals.refused += 1;
                    r.refused += 1;
                    r.error = Some(e.to_string());
                }
            }
        }
    }
    watch.drain()?;
    let (mode, interval_us, rate) = match plan.pace {
        Pace::Interval(d) => ("interval", Some(d.as_micros() as u64), None),
        Pace::Rate(r) => ("rate", None, Some(r)),
    };
    let (src_mac, dst_mac) = match sender {
        Sender::Raw { dst_mac, .. } => (
            Some(afxdp::host::read_mac(&plan.iface)?.to_string()),
            Some(dst_mac.to_string()),
        ),
        Sender::Udp(_) => (None, None),
    };
    Ok(LiesReport {
        via: plan.via.name().to_owned(),
        source,
        answer_from: plan.answer_from,
        src_mac,
        dst_mac,
        target,
        feed_source: plan.feed.to_string(),
        session: String::from_utf8_lossy(plan.claims.session.trimmed()).into_owned(),
        stock: paths::market::STOCK.to_owned(),
        price: plan.claims.price.0,
        jump: plan.claims.jump,
        rounds: plan.rounds,
        mode: mode.to_owned(),
        interval_us,
        rate,
        feed_next_at_start,
        feed_next_at_end: watch.state.next.expect("the feed was seen"),
        feed_packets_seen: watch.state.data_packets,
        cut_short,
        skipped: plan.skipped.iter().map(|k| k.name().to_owned()).collect(),
        kinds,
        totals,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;
    use wire::moldudp64::Repr;

    use super::*;
    use crate::parse_price;

    fn claims() -> Claims {
        Claims {
            session: Session::new(paths::market::SESSION).unwrap(),
            stock: Stock::new(paths::market::STOCK).unwrap(),
            price: parse_price("99999").unwrap(),
            jump: 100_000,
        }
    }

    /// The one trade in `payload`, through wire's MoldUDP64 and ITCH parsers.
    fn the_trade(payload: &[u8]) -> itch::TradeRepr {
        let p = Packet::new_checked(payload).unwrap();
        let blocks: Vec<_> = p.messages().collect();
        assert_eq!(blocks.len(), 1);
        match itch::parse(blocks[0].unwrap()).unwrap() {
            itch::Message::Trade(t) => t,
            other => panic!("not a trade: {other:?}"),
        }
    }

    #[test]
    fn each_kind_parses_back_to_its_claim() {
        let c = claims();
        let next = 1_234;
        let session = Session::new(paths::market::SESSION).unwrap();
        for kind in LieKind::ALL {
            let ls = lies(kind, next, &c);
            // (first sequence number, count as on the wire, carries a trade) of each packet.
            let want: Vec<(u64, u16, bool)> = match kind {
                LieKind::Ahead => vec![(101_234, 1, true), (101_235, 1, true)],
                LieKind::EndAhead => vec![(1_237, END_OF_SESSION, false); 2],
                LieKind::AtNext | LieKind::AnswerAhead => vec![(1_234, 1, true)],
                LieKind::JustPast => vec![(1_235, 1, true)],
                LieKind::EmptyBlock => vec![(1_234, 1, false)],
                LieKind::HeartbeatAhead => vec![(101_234, 0, false)],
            };
            let got: Vec<_> = ls.iter().map(|l| (l.seq, l.count, l.trade)).collect();
            assert_eq!(got, want, "{kind:?}");
            for l in &ls {
                let p = Packet::new_checked(&l.payload[..]).unwrap();
                assert_eq!(p.session(), session, "{kind:?}");
                assert_eq!((p.sequence(), p.count()), (l.seq, l.count), "{kind:?}");
                if kind == LieKind::EmptyBlock {
                    assert_eq!(l.payload.len(), moldudp64::HEADER_LEN + 2);
                    assert_eq!(
                        p.messages().collect::<Vec<_>>(),
                        [Err(wire::Error::EmptyBlock { index: 0 })]
                    );
                    continue;
                }
                // Everything else is well framed: wire's parser takes it whole.
                let repr = Repr::parse(&p).unwrap();
                assert_eq!((repr.sequence, repr.count), (l.seq, l.count));
                match l.count {
                    END_OF_SESSION => {
                        assert!(p.is_end_of_session());
                        assert_eq!(l.payload.len(), moldudp64::HEADER_LEN);
                    }
                    0 => {
                        assert!(p.is_heartbeat());
                        assert_eq!(l.payload.len(), moldudp64::HEADER_LEN);
                    }
                    _ => {
                        let t = the_trade(&l.payload);
                        assert_eq!(t.price, Price4(999_990_000));
                        assert_eq!(t.stock, c.stock);
                        assert_eq!(p.next_sequence(), l.seq + 1);
                    }
                }
            }
        }
        // `ahead`'s second packet continues its first.
        let a = lies(LieKind::Ahead, next, &c);
        let first = Packet::new_checked(&a[0].payload[..]).unwrap();
        assert_eq!(first.next_sequence(), a[1].seq);
    }

    /// Checks a frame as a receiving kernel does, and returns its UDP payload.
    fn verify(f: &[u8], src: frame::Endpoint, dst: &frame::Endpoint) -> Vec<u8> {
        let d = frame::parse_udp_to(f, dst).expect("the kernel takes it");
        assert_eq!((d.src_mac, d.src), (src.mac, src.addr));
        // And an independent parser agrees on both checksums.
        let (_, rest) = etherparse::Ethernet2Header::from_slice(f).unwrap();
        let (ip, rest) = etherparse::Ipv4Header::from_slice(rest).unwrap();
        assert_eq!(ip.header_checksum, ip.calc_header_checksum());
        let (udp, payload) = etherparse::UdpHeader::from_slice(rest).unwrap();
        assert_eq!(udp.checksum, udp.calc_checksum_ipv4(&ip, payload).unwrap());
        payload.to_vec()
    }

    #[test]
    fn raw_frames_carry_valid_checksums_and_the_feeds_look() {
        let src = frame::endpoint(lab::EXCHANGE_MAC, lab::EXCHANGE_IP, 26_401);
        let dst = frame::endpoint(lab::TRADER_MAC, lab::TRADER_IP, lab::MD_PORT);
        let mut flow = RawFlow::new(src, dst);
        let look = IpLook {
            tos: 0x10,
            ident: 0xbeef,
            flags_frag: ipv4::FLAG_DONT_FRAGMENT,
            ttl: 63,
        };
        for kind in LieKind::ALL {
            for l in lies(kind, 77, &claims()) {
                for look in [None, Some(look)] {
                    let f = flow.frame(&l.payload, look);
                    assert_eq!(verify(&f, src, &dst), l.payload, "{kind:?}");
                    if let Some(look) = look {
                        assert_eq!(IpLook::of(&f[IP..]), Some(look));
                    }
                }
            }
        }
    }

    /// A feed frame: UDP from `src` to the trader's market-data port.
    fn feed_frame(src: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
        let dst = frame::endpoint(lab::TRADER_MAC, lab::TRADER_IP, lab::MD_PORT);
        RawFlow::new(
            frame::endpoint(lab::EXCHANGE_MAC, *src.ip(), src.port()),
            dst,
        )
        .frame(payload, None)
    }

    /// A data packet of `count` trades from `seq`.
    fn data(seq: u64, count: u16) -> Vec<u8> {
        let c = claims();
        let mut buf = [0u8; 1400];
        let mut b = PacketBuilder::new(&mut buf, c.session, seq).unwrap();
        for _ in 0..count {
            b.push(&[b'x'; 10]).unwrap();
        }
        b.finish().to_vec()
    }

    #[test]
    fn the_feeds_next_number_is_the_largest_seen() {
        let feed = SocketAddrV4::new(lab::EXCHANGE_IP, 26_401);
        let mut s = FeedState::new(
            lab::TRADER_MD,
            FeedSource {
                ip: lab::EXCHANGE_IP,
                port: None,
            },
        );
        assert!(s.observe(&feed_frame(feed, &data(10, 3))));
        assert_eq!(s.next, Some(13));
        assert_eq!(s.first_source, Some(feed));
        // Reordered: an older packet doesn't move it back.
        assert!(s.observe(&feed_frame(feed, &data(5, 2))));
        assert_eq!(s.next, Some(13));
        // Heartbeats and the end of session are not counted, wherever they point.
        let c = claims();
        let hb = header_only(&c, 1_000, 0).payload;
        let eos = header_only(&c, 1_000, END_OF_SESSION).payload;
        assert!(!s.observe(&feed_frame(feed, &hb)));
        assert!(!s.observe(&feed_frame(feed, &eos)));
        // Another address, or a packet to another port, is not the feed.
        let other = SocketAddrV4::new(Ipv4Addr::new(198, 18, 0, 5), 26_401);
        assert!(!s.observe(&feed_frame(other, &data(50, 1))));
        let mut to_other_port = feed_frame(feed, &data(60, 1));
        to_other_port[IP + ipv4::HEADER_LEN + 2] ^= 1;
        assert!(!s.observe(&to_other_port));
        assert_eq!(s.next, Some(13));
        // Our own lies, seen going out with the feed's source, are not the feed's.
        let lie = lies(LieKind::AtNext, 13, &c).remove(0);
        s.ours.insert(&lie.payload);
        assert!(!s.observe(&feed_frame(feed, &lie.payload)));
        assert_eq!(s.next, Some(13));
        assert!(s.observe(&feed_frame(feed, &data(13, 1))));
        assert_eq!((s.next, s.data_packets), (Some(14), 3));
        // A port given: only that port is the feed.
        let mut s = FeedState::new(lab::TRADER_MD, "198.18.0.1:26401".parse().unwrap());
        let same_ip = SocketAddrV4::new(lab::EXCHANGE_IP, 40_000);
        assert!(!s.observe(&feed_frame(same_ip, &data(10, 3))));
        assert!(s.observe(&feed_frame(feed, &data(10, 3))));
    }

    #[test]
    fn ours_forgets_the_oldest() {
        let mut o = Ours::default();
        for i in 0..OURS_REMEMBERED as u32 + 1 {
            o.insert(&i.to_be_bytes());
        }
        assert!(!o.contains(&0u32.to_be_bytes()));
        assert!(o.contains(&1u32.to_be_bytes()));
        assert_eq!(o.counts.len(), OURS_REMEMBERED);
    }

    fn plan(args: &[&str]) -> anyhow::Result<Plan> {
        let mut argv = vec!["inject", "lies", "--json-out", "/tmp/lies.json"];
        argv.extend_from_slice(args);
        match crate::Options::try_parse_from(argv)?.command {
            crate::Cmd::Lies(o) => Plan::new(o),
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_guard_keeps_to_the_benchmarking_range() {
        assert!(in_bench_range(Ipv4Addr::new(198, 18, 0, 1)));
        assert!(in_bench_range(Ipv4Addr::new(198, 19, 255, 255)));
        assert!(!in_bench_range(Ipv4Addr::new(198, 17, 255, 255)));
        assert!(!in_bench_range(Ipv4Addr::new(198, 20, 0, 0)));
        assert!(!in_bench_range(Ipv4Addr::new(10, 0, 0, 1)));
        assert!(guard("--target", Ipv4Addr::new(8, 8, 8, 8)).is_err());
        assert!(plan(&["--via", "raw"]).is_ok());
        for args in [
            &["--via", "udp", "--target", "10.0.0.2:26400"][..],
            &["--via", "udp", "--bind", "192.168.1.1:0"],
            &["--via", "raw", "--spoof", "203.0.113.1:26401"],
            &["--via", "raw", "--answer-from", "198.20.0.1:26402"],
            &["--via", "raw", "--feed-source", "127.0.0.1"],
        ] {
            let e = plan(args).unwrap_err().to_string();
            assert!(e.contains("outside 198.18.0.0/15"), "{args:?}: {e}");
        }
    }

    #[test]
    fn options_are_checked_before_anything_is_sent() {
        let p = plan(&["--via", "raw"]).unwrap();
        assert_eq!(p.kinds, LieKind::ALL[..6]);
        assert_eq!(p.skipped, [LieKind::AnswerAhead]);
        assert_eq!(p.claims.price, Price4(999_990_000));
        assert_eq!(p.dst_mac, lab::TRADER_MAC);
        let p = plan(&[
            "--via",
            "raw",
            "--answer-from",
            "198.18.0.1:26402",
            "--kinds",
            "answer_ahead,at_next,at_next",
            "--rate",
            "5k",
            "--rounds",
            "3",
        ])
        .unwrap();
        assert_eq!(p.kinds, [LieKind::AnswerAhead, LieKind::AtNext]);
        assert_eq!(p.pace, Pace::Rate(5_000));
        assert_eq!(p.due(3), Duration::from_micros(600));
        let p = plan(&["--via", "udp", "--interval-us", "1000"]).unwrap();
        assert_eq!(p.bind, SocketAddrV4::new(lab::EXCHANGE_IP, 0));
        assert_eq!(
            (p.due(5), p.due(6)),
            (Duration::ZERO, Duration::from_millis(1))
        );
        for (args, says) in [
            (
                &["--via", "udp", "--spoof", "198.18.0.1:26401"][..],
                "--via raw",
            ),
            (&["--via", "raw", "--bind", "198.18.0.1:0"], "--via udp"),
            (
                &["--via", "raw", "--kinds", "answer_ahead"],
                "--answer-from",
            ),
            (&["--via", "raw", "--rounds", "0"], "--rounds"),
            (&["--via", "raw", "--price", "500000"], "Price(4)"),
            (&["--via", "raw", "--rate", "0"], "out of range"),
            (&["--via", "raw", "--kinds", "behind"], "behind"),
            (&["--via", "raw", "--dst-mac", "ff:ff:ff:ff:ff:ff"], "group"),
        ] {
            let e = format!("{:#}", plan(args).unwrap_err());
            assert!(e.contains(says), "{args:?}: {e}");
        }
    }
}
