//! `inject frames`: rounds of crafted frames (through an AF_PACKET socket) and lying MoldUDP64
//! payloads (through a UDP socket), each kind counted.
use std::{
    net::{Ipv4Addr, SocketAddrV4, UdpSocket},
    time::Duration,
};

use afxdp::frame::{self, FrameBuilder, HEADERS_LEN};
use anyhow::Context as _;
use netns::Mac;
use wire::{
    itch::{self, Price4, Stock},
    moldudp64::{self, PacketBuilder, Session},
};
use xdp_common::{
    checksum,
    layout::{at, ethernet, ipv4, udp},
};

use crate::{
    FramesOptions,
    raw::PacketSocket,
    report::{FramesReport, KindReport},
};

/// Largest Ethernet frame the veth's 1500-byte MTU carries (without FCS).
const MAX_FRAME: usize = 1514;
/// The source port of the crafted frames (nothing listens for replies).
const SRC_PORT: u16 = 40000;
/// Where the IPv4 header starts in a frame.
const IP: usize = ethernet::HEADER_LEN;
/// Where the UDP header starts, behind an IPv4 header without options.
const UDP: usize = IP + ipv4::HEADER_LEN;

/// One kind of crafted traffic: its name and the frames or payloads of one round.
struct Kind {
    name: &'static str,
    /// Raw Ethernet frames (AF_PACKET) or MoldUDP64 payloads (UDP socket).
    items: Vec<Vec<u8>>,
    raw: bool,
}

/// The flow the crafted frames imitate: from us to the trader.
#[derive(Debug, Clone, Copy)]
struct Flow {
    src_mac: Mac,
    dst_mac: Mac,
    src_ip: Ipv4Addr,
    dst_ip: Ipv4Addr,
    /// The market-data port.
    port: u16,
    /// Where what should reach the trader's kernel goes.
    sink_port: u16,
}

impl Flow {
    /// A well-formed frame to `to_port` carrying `payload`, checksums right.
    fn frame(&self, to_port: u16, payload: &[u8]) -> Vec<u8> {
        let mut b = FrameBuilder::new(
            frame::endpoint(self.src_mac, self.src_ip, SRC_PORT),
            frame::endpoint(self.dst_mac, self.dst_ip, to_port),
        );
        let mut buf = vec![0u8; HEADERS_LEN + payload.len()];
        let n = b
            .build(&mut buf, |body| {
                body[..payload.len()].copy_from_slice(payload);
                payload.len()
            })
            .expect("the buffer holds the headers and the payload");
        buf.truncate(n);
        buf
    }
}

pub(crate) fn run(o: FramesOptions) -> anyhow::Result<()> {
    let FramesOptions {
        iface,
        dst_mac,
        src_ip,
        dst_ip,
        port,
        sink_port,
        session,
        lie_seq,
        rounds,
        interval_us,
        kinds: only,
        json_out,
    } = o;
    let flow = Flow {
        src_mac: afxdp::host::read_mac(&iface)?,
        dst_mac,
        src_ip,
        dst_ip,
        port,
        sink_port,
    };
    let mut kinds = header_lies(&flow);
    kinds.extend(not_market_data(&flow));
    kinds.extend(length_lies(&flow));
    kinds.extend(wrong_checksum_or_destination(
        &flow,
        &mold_packet(session, lie_seq, 1)?,
    ));
    kinds.extend(mold_lies(session, lie_seq)?);
    if !only.is_empty() {
        if let Some(bad) = only.iter().find(|n| !kinds.iter().any(|k| k.name == *n)) {
            let names: Vec<&str> = kinds.iter().map(|k| k.name).collect();
            anyhow::bail!(
                "--kinds: no kind {bad:?}; the kinds are {}",
                names.join(",")
            );
        }
        kinds.retain(|k| only.iter().any(|n| n == k.name));
    }
    let frames = PacketSocket::open(&iface)?;
    let datagrams = UdpSocket::bind((src_ip, 0)).context("binding the UDP socket")?;
    let md = SocketAddrV4::new(dst_ip, port);
    let mut report: FramesReport = kinds
        .iter()
        .map(|k| (k.name.to_owned(), KindReport::default()))
        .collect();
    for round in 0..rounds {
        if round > 0 {
            std::thread::sleep(Duration::from_micros(interval_us));
        }
        for k in &kinds {
            let r = report.get_mut(k.name).expect("every kind has a report");
            for item in &k.items {
                let res = if k.raw {
                    frames.send(item, dst_mac)
                } else {
                    datagrams.send_to(item, md).map(|_| ())
                };
                match res {
                    Ok(()) => r.sent += 1,
                    Err(e) => {
                        r.refused += 1;
                        r.error = Some(e.to_string());
                    }
                }
            }
        }
    }
    let json = serde_json::to_string_pretty(&report)?;
    std::fs::write(&json_out, json).with_context(|| format!("writing {}", json_out.display()))?;
    Ok(())
}

fn raw(name: &'static str, items: Vec<Vec<u8>>) -> Kind {
    Kind {
        name,
        items,
        raw: true,
    }
}

/// Recomputes the checksum of the IPv4 header at the start of `ip` (options included).
fn fix_ip_checksum(ip: &mut [u8]) {
    let ihl = usize::from(ip[ipv4::VER_IHL] & 0x0f) * 4;
    ip[ipv4::CHECKSUM].fill(0);
    let c = checksum::ipv4_header(&ip[..ihl.min(ip.len())]);
    ip[ipv4::CHECKSUM].copy_from_slice(&c.to_be_bytes());
}

/// Sets the IPv4 total length of `frame` and fixes the header checksum.
fn set_ip_len(frame: &mut [u8], len: usize) {
    let len = u16::try_from(len).expect("crafted frames are small");
    frame[at(IP, ipv4::TOTAL_LEN)].copy_from_slice(&len.to_be_bytes());
    fix_ip_checksum(&mut frame[IP..]);
}

/// Headers cut short or impossible, IP options and fragments.
fn header_lies(flow: &Flow) -> Vec<Kind> {
    let to_md = flow.frame(flow.port, &[0u8; 30]);
    let to_sink = flow.frame(flow.sink_port, b"to the kernel, please");
    let mut kinds = vec![
        // Ethernet header only, claiming IPv4.
        raw("truncated_ethernet", vec![to_md[..IP].to_vec()]),
        // Eight bytes of an IPv4 header.
        raw("truncated_ipv4", vec![to_md[..IP + 8].to_vec()]),
    ];
    // A full IPv4 header announcing UDP, then half a UDP header.
    let mut f = to_md[..UDP + 4].to_vec();
    set_ip_len(&mut f, ipv4::HEADER_LEN + 4);
    kinds.push(raw("truncated_udp", vec![f]));
    // IHL 4: a header shorter than the minimum.
    let mut f = to_md.clone();
    f[IP + ipv4::VER_IHL] = 0x44;
    kinds.push(raw("ihl_below_5", vec![f]));
    // IHL 6: four bytes of options (NOP NOP NOP EOL), to the sink port, checksums right.
    let mut f = to_sink[..UDP].to_vec();
    f.extend_from_slice(&[1, 1, 1, 0]);
    f.extend_from_slice(&to_sink[UDP..]);
    f[IP + ipv4::VER_IHL] = 0x46;
    let total = f.len() - IP;
    set_ip_len(&mut f, total);
    kinds.push(raw("ip_options", vec![f]));
    // Two fragments of one datagram to the sink port (the kernel reassembles them).
    let whole = flow.frame(flow.sink_port, &[0x5a; 64]);
    let ip_payload = &whole[UDP..];
    let split = 40; // a multiple of 8
    let mut frags = Vec::new();
    for (part, offset, more) in [
        (&ip_payload[..split], 0usize, true),
        (&ip_payload[split..], split, false),
    ] {
        let mut f = whole[..UDP].to_vec();
        f.extend_from_slice(part);
        f[at(IP, ipv4::IDENT)].copy_from_slice(&0x7777u16.to_be_bytes());
        let more = if more { ipv4::FLAG_MORE_FRAGMENTS } else { 0 };
        let flags_off = more | (offset / 8) as u16;
        f[at(IP, ipv4::FLAGS_FRAG)].copy_from_slice(&flags_off.to_be_bytes());
        set_ip_len(&mut f, ipv4::HEADER_LEN + part.len());
        frags.push(f);
    }
    kinds.push(raw("fragment", frags));
    kinds
}

/// Well-formed frames that are not the market-data flow: VLAN, IPv6, another protocol,
/// another port.
fn not_market_data(flow: &Flow) -> Vec<Kind> {
    let to_md = flow.frame(flow.port, &[0u8; 30]);
    let ethertype = ethernet::ETHERTYPE.start;
    // An 802.1Q tag in front of an otherwise perfect market-data frame.
    let mut vlan = to_md[..ethertype].to_vec();
    vlan.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
    vlan.extend_from_slice(&to_md[ethertype..]);
    // IPv6 (link-local to link-local) with UDP to the market-data port.
    let mut v6 = to_md[..ethertype].to_vec();
    v6.extend_from_slice(&0x86ddu16.to_be_bytes());
    let mut header = [0u8; 40];
    header[0] = 0x60; // version 6
    header[4..6].copy_from_slice(&(udp::HEADER_LEN as u16).to_be_bytes()); // payload length
    header[6] = ipv4::PROTOCOL_UDP; // next header
    header[7] = 64; // hop limit
    header[8..10].copy_from_slice(&[0xfe, 0x80]);
    header[24..26].copy_from_slice(&[0xfe, 0x80]);
    v6.extend_from_slice(&header);
    v6.extend_from_slice(&SRC_PORT.to_be_bytes());
    v6.extend_from_slice(&flow.port.to_be_bytes());
    v6.extend_from_slice(&(udp::HEADER_LEN as u16).to_be_bytes());
    v6.extend_from_slice(&[0, 0]);
    // IPv4, protocol 253 (RFC 3692 experimentation).
    let mut not_udp = to_md.clone();
    not_udp[IP + ipv4::PROTOCOL] = 253;
    fix_ip_checksum(&mut not_udp[IP..]);
    vec![
        raw("vlan", vec![vlan]),
        raw("ipv6", vec![v6]),
        raw("not_udp", vec![not_udp]),
        // UDP to another port.
        raw(
            "wrong_port",
            vec![flow.frame(flow.sink_port, b"to the kernel, please")],
        ),
    ]
}

/// Lengths that lie or sit at the edges: an empty datagram, UDP and IPv4 lengths larger than
/// the frame, the largest frame the MTU allows and one byte more.
fn length_lies(flow: &Flow) -> Vec<Kind> {
    let to_md = flow.frame(flow.port, &[0u8; 30]);
    let mut udp_lie = to_md.clone();
    udp_lie[at(UDP, udp::LENGTH)].copy_from_slice(&1000u16.to_be_bytes());
    let mut ip_lie = to_md;
    set_ip_len(&mut ip_lie, 1400);
    vec![
        // UDP with no payload to the market-data port.
        raw("zero_length_udp", vec![flow.frame(flow.port, &[])]),
        raw("udp_length_lie", vec![udp_lie]),
        raw("ip_length_lie", vec![ip_lie]),
        // The largest frame the MTU allows, to the sink port; and one byte more, which the
        // sending kernel must refuse.
        raw(
            "max_frame",
            vec![flow.frame(flow.sink_port, &[0xa5; MAX_FRAME - HEADERS_LEN])],
        ),
        raw(
            "oversized_frame",
            vec![flow.frame(flow.sink_port, &[0xa5; MAX_FRAME + 1 - HEADERS_LEN])],
        ),
    ]
}

/// An IPv4 address no lab has (TEST-NET-3, RFC 5737).
const NOBODY_IP: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);
/// A checksum put in place of a right one: any value other than the right one is wrong
/// (0xffff and 0 are the same number in ones' complement, so neither is used).
const WRONG_CHECKSUM: u16 = 0x1234;

/// `c` made wrong: [`WRONG_CHECKSUM`], or another wrong value if that happens to be right.
fn wrong(c: [u8; 2]) -> [u8; 2] {
    let bad = match u16::from_be_bytes(c) {
        WRONG_CHECKSUM => WRONG_CHECKSUM + 1,
        _ => WRONG_CHECKSUM,
    };
    bad.to_be_bytes()
}

/// Market-data frames the kernel would never hand a UDP socket: a wrong IPv4 header checksum, a
/// wrong UDP checksum, another IPv4 address, another MAC. Each carries `tick`, a valid
/// MoldUDP64 packet of a tick still to come: taken, it would be traded, and the real tick would
/// then show up as a duplicate and the jump to it as a gap.
fn wrong_checksum_or_destination(flow: &Flow, tick: &[u8]) -> Vec<Kind> {
    let to_md = flow.frame(flow.port, tick);
    let mut bad_ip = to_md.clone();
    let ip_checksum = at(IP, ipv4::CHECKSUM);
    let c = wrong([bad_ip[ip_checksum.start], bad_ip[ip_checksum.start + 1]]);
    bad_ip[ip_checksum].copy_from_slice(&c);
    let mut bad_udp = to_md.clone();
    let udp_checksum = at(UDP, udp::CHECKSUM);
    let c = wrong([bad_udp[udp_checksum.start], bad_udp[udp_checksum.start + 1]]);
    bad_udp[udp_checksum].copy_from_slice(&c);
    // Both checksums right for the other address (the UDP one covers it in the pseudo header).
    let other_ip = Flow {
        dst_ip: NOBODY_IP,
        ..*flow
    }
    .frame(flow.port, tick);
    // Locally administered unicast, and not the trader's.
    let mut other_mac = flow.dst_mac.octets();
    other_mac[5] ^= 0xff;
    let other_mac = Flow {
        dst_mac: Mac(other_mac),
        ..*flow
    }
    .frame(flow.port, tick);
    vec![
        raw("bad_ip_checksum", vec![bad_ip]),
        raw("bad_udp_checksum", vec![bad_udp]),
        raw("wrong_dst_ip", vec![other_ip]),
        raw("wrong_dst_mac", vec![other_mac]),
    ]
}

/// A valid MoldUDP64 packet of `session` from `seq` with `blocks` copies of an ITCH trade of
/// the lab's stock (price 100.00).
fn mold_packet(session: Session, seq: u64, blocks: usize) -> anyhow::Result<Vec<u8>> {
    let stock = Stock::new(paths::market::STOCK).expect("the lab's stock symbol is valid");
    let mut trade = [0u8; itch::trade::LEN];
    trader_core::trade_message(
        seq,
        stock,
        Price4::from_f64_quantised(100.0).expect("valid"),
        0,
    )
    .emit_into(&mut trade)
    .expect("fits");
    let mut buf = [0u8; MAX_FRAME - HEADERS_LEN];
    let mut b = PacketBuilder::new(&mut buf, session, seq)?;
    for _ in 0..blocks {
        b.push(&trade)?;
    }
    Ok(b.finish().to_vec())
}

/// MoldUDP64 lies, sent as ordinary datagrams to the market-data port: a short header, message
/// counts and block lengths that contradict the blocks.
fn mold_lies(session: Session, lie_seq: u64) -> anyhow::Result<Vec<Kind>> {
    let mold = |blocks: usize| mold_packet(session, lie_seq, blocks);
    let set_count = |mut p: Vec<u8>, count: u16| {
        p[moldudp64::field::COUNT].copy_from_slice(&count.to_be_bytes());
        p
    };
    let lie = |name, p: Vec<u8>| Kind {
        name,
        items: vec![p],
        raw: false,
    };
    let mut overrun = mold(1)?;
    let block_len = at(moldudp64::HEADER_LEN, moldudp64::field::BLOCK_LEN);
    overrun[block_len].copy_from_slice(&300u16.to_be_bytes());
    let mut cut_prefix = set_count(mold(1)?, 2);
    cut_prefix.push(0);
    // As large as a datagram in the MTU gets, claiming the most messages a header can.
    let mut max_count = set_count(mold(31)?, moldudp64::MAX_COUNT);
    max_count.resize(MAX_FRAME - HEADERS_LEN, 0);
    Ok(vec![
        lie("mold_short_header", mold(0)?[..12].to_vec()),
        lie("mold_count_too_high", set_count(mold(1)?, 5)),
        lie("mold_count_too_low", set_count(mold(2)?, 1)),
        lie("mold_block_overrun", overrun),
        lie("mold_cut_length_prefix", cut_prefix),
        lie("mold_max_size_count_lie", max_count),
    ])
}
