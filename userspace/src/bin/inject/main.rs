//! Fault and garbage injection for the lab's reliability tests, run in the exchange namespace.
//!
//! * `inject frames`: sends crafted Ethernet frames through an AF_PACKET socket on the exchange
//!   veth (truncated headers, IHL < 5, IP options, fragments, VLAN, IPv6, other protocols,
//!   other ports, zero-length and lying UDP, lying IPv4 lengths, the largest and a too-large
//!   frame) and crafted MoldUDP64 payloads through a normal UDP socket (a short header, lying
//!   message counts and block lengths), in rounds, and writes what it sent as JSON.
//! * `inject relay`: a UDP relay between the replay and the trader that loses, duplicates,
//!   reorders and delays packets from a seeded generator, and writes exactly what it did. It
//!   stands in for `tc netem` where the kernel lacks `sch_netem`, and unlike netem it says
//!   which sequence numbers it dropped.
//!
//! Everything goes to the addresses given, which the tests take from the lab (198.18.0.0/15).
use std::{
    collections::VecDeque,
    net::{Ipv4Addr, SocketAddrV4, UdpSocket},
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use clap::{Parser, Subcommand};
use serde::Serialize;
use userspace::frame::{self, FrameBuilder};
use wire::{
    itch::{self, Price4, Stock},
    moldudp64::{self, PacketBuilder, Session},
};

/// Fault and garbage injection for the lab's reliability tests: crafted malformed frames
/// (`frames`), and a seeded lossy, duplicating, reordering, delaying relay (`relay`) where
/// the kernel has no `tc netem`. Run it in the exchange namespace.
#[derive(Debug, Parser)]
#[command(version)]
struct Options {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Send rounds of malformed and non-matching frames and lying MoldUDP64 packets.
    Frames(FramesOptions),
    /// Relay UDP with seeded loss, duplication, reordering and delay.
    Relay(RelayOptions),
}

#[derive(Debug, clap::Args)]
struct FramesOptions {
    /// Interface to send raw frames on.
    #[arg(long, default_value = "ex0")]
    iface: String,
    /// Destination MAC (the trader's).
    #[arg(long)]
    dst_mac: String,
    /// Our IPv4 address.
    #[arg(long)]
    src_ip: Ipv4Addr,
    /// The trader's IPv4 address.
    #[arg(long)]
    dst_ip: Ipv4Addr,
    /// The market-data port.
    #[arg(long, default_value_t = 26400)]
    port: u16,
    /// A port the test listens on in the trader namespace: what should reach the kernel goes there.
    #[arg(long)]
    sink_port: u16,
    /// MoldUDP64 session of the lying packets (the feed's, so the trader doesn't drop them as
    /// another session's before looking at them).
    #[arg(long, default_value = "T2TLAB0001")]
    session: String,
    /// Sequence number the lying MoldUDP64 packets claim.
    #[arg(long)]
    lie_seq: u64,
    /// Rounds of the whole set.
    #[arg(long, default_value_t = 10)]
    rounds: u32,
    /// Pause between rounds, in microseconds.
    #[arg(long, default_value_t = 10_000)]
    interval_us: u64,
    /// Write what was sent here as JSON.
    #[arg(long)]
    json_out: PathBuf,
}

#[derive(Debug, clap::Args)]
struct RelayOptions {
    /// Where the replay sends (an address of this namespace).
    #[arg(long)]
    listen: SocketAddrV4,
    /// The trader's market-data address.
    #[arg(long)]
    target: SocketAddrV4,
    /// Probability that a packet is dropped.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Probability that a packet is sent twice.
    #[arg(long, default_value_t = 0.0)]
    dup: f64,
    /// Probability that a packet is held back and sent after the next `reorder_depth` packets.
    #[arg(long, default_value_t = 0.0)]
    reorder: f64,
    /// How many later packets overtake a held-back one.
    #[arg(long, default_value_t = 3)]
    reorder_depth: usize,
    /// Constant delay added to every packet, in microseconds (keeps the order).
    #[arg(long, default_value_t = 0)]
    delay_us: u64,
    /// Generator seed: the same seed makes the same faults.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Exit after this many seconds without a packet.
    #[arg(long, default_value_t = 20)]
    idle_exit: u64,
    /// Where the trader's orders come in (point its `--order-port` here). They go on to
    /// `--orders-to` unharmed, from the `--listen` socket: the replay's socket is connected
    /// to the address it sends to, so it takes datagrams from that address only.
    #[arg(long)]
    orders_listen: Option<SocketAddrV4>,
    /// The replay's order address (its `--bind`).
    #[arg(long)]
    orders_to: Option<SocketAddrV4>,
    /// Print `ready` on stdout once listening.
    #[arg(long)]
    ready: bool,
    /// Write what was done here as JSON.
    #[arg(long)]
    json_out: PathBuf,
}

fn main() -> std::process::ExitCode {
    userspace::cli::run_main(real_main)
}

fn real_main() -> anyhow::Result<()> {
    match Options::parse().command {
        Cmd::Frames(o) => frames(o),
        Cmd::Relay(o) => relay(o),
    }
}

/// The IPv4 header checksum (RFC 791), over a header whose checksum field is zero.
fn ip_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn fix_ip_checksum(ip: &mut [u8]) {
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    ip[10..12].fill(0);
    let c = ip_checksum(&ip[..ihl.min(ip.len())]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
}

fn parse_mac(s: &str) -> anyhow::Result<[u8; 6]> {
    let mut mac = [0u8; 6];
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        bail!("bad MAC {s:?}: use aa:bb:cc:dd:ee:ff");
    }
    for (m, p) in mac.iter_mut().zip(parts) {
        *m = u8::from_str_radix(p, 16).with_context(|| format!("bad MAC {s:?}"))?;
    }
    Ok(mac)
}

fn read_mac(iface: &str) -> anyhow::Result<[u8; 6]> {
    let path = format!("/sys/class/net/{iface}/address");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("no interface {iface} here ({path})"))?;
    parse_mac(text.trim())
}

/// One kind of crafted traffic: its name and the frames or payloads of one round.
struct Kind {
    name: &'static str,
    /// Raw Ethernet frames (AF_PACKET) or MoldUDP64 payloads (UDP socket).
    items: Vec<Vec<u8>>,
    raw: bool,
}

#[derive(Debug, Default, Serialize)]
struct KindReport {
    sent: u64,
    /// Sends the local kernel refused, with the error (e.g. a frame above the MTU).
    refused: u64,
    error: Option<String>,
}

fn frames(o: FramesOptions) -> anyhow::Result<()> {
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
        json_out,
    } = o;
    let dst_mac = parse_mac(&dst_mac)?;
    let src_mac = read_mac(&iface)?;
    let session = Session::new(&session).map_err(|e| anyhow::anyhow!("bad --session: {e}"))?;
    let kinds = build_kinds(
        src_mac, dst_mac, src_ip, dst_ip, port, sink_port, session, lie_seq,
    )?;
    let raw = raw::PacketSocket::open(&iface)?;
    let udp = UdpSocket::bind((src_ip, 0)).context("binding the UDP socket")?;
    let md = SocketAddrV4::new(dst_ip, port);
    let mut report: std::collections::BTreeMap<&'static str, KindReport> = kinds
        .iter()
        .map(|k| (k.name, KindReport::default()))
        .collect();
    for round in 0..rounds {
        if round > 0 {
            std::thread::sleep(Duration::from_micros(interval_us));
        }
        for k in &kinds {
            let r = report.get_mut(k.name).expect("every kind has a report");
            for item in &k.items {
                let res = if k.raw {
                    raw.send(item, &dst_mac)
                } else {
                    udp.send_to(item, md).map(|_| ())
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

/// Largest Ethernet frame the veth's 1500-byte MTU carries (without FCS).
const MAX_FRAME: usize = 1514;

#[expect(
    clippy::too_many_arguments,
    reason = "one flat list of the lab's addresses"
)]
fn build_kinds(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src_ip: Ipv4Addr,
    dst_ip: Ipv4Addr,
    port: u16,
    sink_port: u16,
    session: Session,
    lie_seq: u64,
) -> anyhow::Result<Vec<Kind>> {
    use frame::{ETH_LEN, HEADERS_LEN, IPV4_LEN};
    let ep = |mac, ip, port| frame::endpoint(mac, ip, port);
    let build = |to_port: u16, payload: &[u8]| -> Vec<u8> {
        let mut b = FrameBuilder::new(ep(src_mac, src_ip, 40000), ep(dst_mac, dst_ip, to_port));
        let mut buf = vec![0u8; 2048];
        let n = b
            .build(&mut buf, |body| {
                body[..payload.len()].copy_from_slice(payload);
                payload.len()
            })
            .expect("fits");
        buf.truncate(n);
        buf
    };
    let to_md = build(port, &[0u8; 30]);
    let to_sink = build(sink_port, b"to the kernel, please");
    let mut kinds = Vec::new();
    let mut raw = |name, items: Vec<Vec<u8>>| {
        kinds.push(Kind {
            name,
            items,
            raw: true,
        })
    };

    // Ethernet header only, claiming IPv4.
    raw("truncated_ethernet", vec![to_md[..ETH_LEN].to_vec()]);
    // Eight bytes of an IPv4 header.
    raw("truncated_ipv4", vec![to_md[..ETH_LEN + 8].to_vec()]);
    // A full IPv4 header announcing UDP, then half a UDP header.
    let mut f = to_md[..ETH_LEN + IPV4_LEN + 4].to_vec();
    f[ETH_LEN + 2..ETH_LEN + 4].copy_from_slice(&((IPV4_LEN + 4) as u16).to_be_bytes());
    fix_ip_checksum(&mut f[ETH_LEN..]);
    raw("truncated_udp", vec![f]);
    // IHL 4: a header shorter than the minimum.
    let mut f = to_md.clone();
    f[ETH_LEN] = 0x44;
    raw("ihl_below_5", vec![f]);
    // IHL 6: four bytes of options (NOP NOP NOP EOL), to the sink port, checksums right.
    let mut f = to_sink[..ETH_LEN].to_vec();
    f.extend_from_slice(&to_sink[ETH_LEN..ETH_LEN + IPV4_LEN]);
    f.extend_from_slice(&[1, 1, 1, 0]);
    f.extend_from_slice(&to_sink[ETH_LEN + IPV4_LEN..]);
    f[ETH_LEN] = 0x46;
    let total = (f.len() - ETH_LEN) as u16;
    f[ETH_LEN + 2..ETH_LEN + 4].copy_from_slice(&total.to_be_bytes());
    fix_ip_checksum(&mut f[ETH_LEN..]);
    raw("ip_options", vec![f]);
    // Two fragments of one datagram to the sink port (the kernel reassembles them).
    let whole = build(sink_port, &[0x5a; 64]);
    let ip_payload = &whole[ETH_LEN + IPV4_LEN..];
    let split = 40; // a multiple of 8
    let mut frags = Vec::new();
    for (part, offset, more) in [
        (&ip_payload[..split], 0usize, true),
        (&ip_payload[split..], split, false),
    ] {
        let mut f = whole[..ETH_LEN + IPV4_LEN].to_vec();
        f.extend_from_slice(part);
        let ip = &mut f[ETH_LEN..];
        ip[2..4].copy_from_slice(&((IPV4_LEN + part.len()) as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&0x7777u16.to_be_bytes());
        let flags_off = (u16::from(more) << 13) | (offset / 8) as u16;
        ip[6..8].copy_from_slice(&flags_off.to_be_bytes());
        fix_ip_checksum(ip);
        frags.push(f);
    }
    raw("fragment", frags);
    // An 802.1Q tag in front of an otherwise perfect market-data frame.
    let mut f = to_md[..12].to_vec();
    f.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
    f.extend_from_slice(&to_md[12..]);
    raw("vlan", vec![f]);
    // IPv6 with UDP to the market-data port.
    let mut f = to_md[..12].to_vec();
    f.extend_from_slice(&0x86ddu16.to_be_bytes());
    let mut v6 = [0u8; 40];
    v6[0] = 0x60;
    v6[4..6].copy_from_slice(&8u16.to_be_bytes());
    v6[6] = 17;
    v6[7] = 64;
    v6[8] = 0xfe;
    v6[9] = 0x80;
    v6[24] = 0xfe;
    v6[25] = 0x80;
    f.extend_from_slice(&v6);
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&port.to_be_bytes());
    f.extend_from_slice(&8u16.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    raw("ipv6", vec![f]);
    // IPv4, protocol 253 (RFC 3692 experimentation).
    let mut f = to_md.clone();
    f[ETH_LEN + 9] = 253;
    fix_ip_checksum(&mut f[ETH_LEN..]);
    raw("not_udp", vec![f]);
    // UDP to another port.
    raw("wrong_port", vec![to_sink.clone()]);
    // UDP with no payload to the market-data port.
    raw("zero_length_udp", vec![build(port, &[])]);
    // A UDP length field larger than the datagram.
    let mut f = to_md.clone();
    f[ETH_LEN + IPV4_LEN + 4..ETH_LEN + IPV4_LEN + 6].copy_from_slice(&1000u16.to_be_bytes());
    raw("udp_length_lie", vec![f]);
    // An IPv4 total length larger than the frame.
    let mut f = to_md.clone();
    f[ETH_LEN + 2..ETH_LEN + 4].copy_from_slice(&1400u16.to_be_bytes());
    fix_ip_checksum(&mut f[ETH_LEN..]);
    raw("ip_length_lie", vec![f]);
    // The largest frame the MTU allows, to the sink port; and one byte more, which the
    // sending kernel must refuse.
    let max = build(sink_port, &vec![0xa5; MAX_FRAME - HEADERS_LEN]);
    raw("max_frame", vec![max]);
    let over = build(sink_port, &vec![0xa5; MAX_FRAME + 1 - HEADERS_LEN]);
    raw("oversized_frame", vec![over]);

    // MoldUDP64 lies, sent as ordinary datagrams to the market-data port.
    let stock = Stock::new("SYNTH").expect("valid");
    let mut trade = [0u8; itch::trade::LEN];
    userspace::t2t::trade_message(
        lie_seq,
        stock,
        Price4::from_f64_quantised(100.0).expect("valid"),
        0,
    )
    .emit_into(&mut trade)
    .expect("fits");
    let mold = |blocks: usize| -> anyhow::Result<Vec<u8>> {
        let mut buf = [0u8; 1472];
        let mut b = PacketBuilder::new(&mut buf, session, lie_seq)?;
        for _ in 0..blocks {
            b.push(&trade)?;
        }
        Ok(b.finish().to_vec())
    };
    let set_count = |mut p: Vec<u8>, count: u16| {
        p[18..20].copy_from_slice(&count.to_be_bytes());
        p
    };
    let mut lie = |name, p: Vec<u8>| {
        kinds.push(Kind {
            name,
            items: vec![p],
            raw: false,
        })
    };
    lie("mold_short_header", mold(0)?[..12].to_vec());
    lie("mold_count_too_high", set_count(mold(1)?, 5));
    lie("mold_count_too_low", set_count(mold(2)?, 1));
    let mut p = mold(1)?;
    p[moldudp64::HEADER_LEN..moldudp64::HEADER_LEN + 2].copy_from_slice(&300u16.to_be_bytes());
    lie("mold_block_overrun", p);
    let mut p = set_count(mold(1)?, 2);
    p.push(0);
    lie("mold_cut_length_prefix", p);
    // As large as a datagram in the MTU gets, claiming the most messages a header can.
    let mut p = set_count(mold(31)?, moldudp64::MAX_COUNT);
    p.resize(MAX_FRAME - HEADERS_LEN, 0);
    lie("mold_max_size_count_lie", p);
    Ok(kinds)
}

/// A small seeded generator (SplitMix64): the same seed gives the same faults.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[derive(Debug, Default, Serialize)]
struct RelayReport {
    received_packets: u64,
    /// Datagrams sent on, duplicates and end-of-session packets included.
    forwarded_packets: u64,
    /// End-of-session packets forwarded.
    end_of_session: u64,
    /// Messages in the packets received (end of session excluded).
    received_messages: u64,
    /// Sequence numbers of the messages dropped.
    lost: Vec<u64>,
    /// Sequence numbers of the first message of each packet sent twice.
    duplicated: Vec<u64>,
    /// Sequence numbers of the first message of each packet held back and sent late.
    reordered: Vec<u64>,
}

fn relay(o: RelayOptions) -> anyhow::Result<()> {
    let RelayOptions {
        listen,
        target,
        loss,
        dup,
        reorder,
        reorder_depth,
        delay_us,
        seed,
        idle_exit,
        orders_listen,
        orders_to,
        ready,
        json_out,
    } = o;
    for (name, p) in [("loss", loss), ("dup", dup), ("reorder", reorder)] {
        if !(0.0..=1.0).contains(&p) {
            bail!("--{name} must be a probability in [0, 1], got {p}");
        }
    }
    let sock = UdpSocket::bind(listen).with_context(|| format!("failed to bind {listen}"))?;
    match (orders_listen, orders_to) {
        (Some(from), Some(to)) => {
            let orders = UdpSocket::bind(from).with_context(|| format!("failed to bind {from}"))?;
            let back = sock.try_clone().context("cloning the relay socket")?;
            // Ends with the process.
            std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                while let Ok(n) = orders.recv(&mut buf) {
                    let _ = back.send_to(&buf[..n], to);
                }
            });
        }
        (None, None) => {}
        _ => bail!("--orders-listen and --orders-to go together"),
    }
    let mut rng = Rng(seed);
    let mut r = RelayReport::default();
    // Packets waiting for their due time, in arrival order (a constant delay keeps the order).
    let mut delayed: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    // Held-back packets and how many later packets must pass them first.
    let mut held: Vec<(usize, Vec<u8>)> = Vec::new();
    let delay = Duration::from_micros(delay_us);
    let mut buf = [0u8; 2048];
    let mut last_data = Instant::now();
    let mut eos_at: Option<Instant> = None;
    if ready {
        println!("ready");
    }
    let send = |p: &[u8], r: &mut RelayReport| -> anyhow::Result<()> {
        sock.send_to(p, target).context("forwarding")?;
        r.forwarded_packets += 1;
        Ok(())
    };
    loop {
        // Send what is due.
        let now = Instant::now();
        while delayed.front().is_some_and(|(due, _)| *due <= now) {
            let (_, p) = delayed.pop_front().expect("checked");
            send(&p, &mut r)?;
            // Each packet sent lets the held-back ones move one place further behind.
            let mut i = 0;
            while i < held.len() {
                held[i].0 = held[i].0.saturating_sub(1);
                if held[i].0 == 0 {
                    let (_, h) = held.swap_remove(i);
                    send(&h, &mut r)?;
                } else {
                    i += 1;
                }
            }
        }
        if eos_at.is_some_and(|t| t.elapsed() > Duration::from_millis(100)) && delayed.is_empty() {
            break;
        }
        if last_data.elapsed() > Duration::from_secs(idle_exit) {
            break;
        }
        let wait = delayed
            .front()
            .map(|(due, _)| due.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_millis(20))
            .max(Duration::from_micros(50));
        sock.set_read_timeout(Some(wait))?;
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(e) => return Err(e).context("receiving"),
        };
        last_data = Instant::now();
        r.received_packets += 1;
        let p = buf[..n].to_vec();
        let header = moldudp64::Packet::new_checked(&p[..]).ok();
        if header.as_ref().is_some_and(|h| h.is_end_of_session()) {
            // Everything still held goes first, then the end of session, unharmed.
            for (_, p) in delayed.drain(..) {
                send(&p, &mut r)?;
            }
            for (_, h) in held.drain(..) {
                send(&h, &mut r)?;
            }
            send(&p, &mut r)?;
            r.end_of_session += 1;
            eos_at.get_or_insert_with(Instant::now);
            continue;
        }
        let (first, count) = header.map_or((0, 0), |h| (h.sequence(), h.block_count()));
        r.received_messages += u64::from(count);
        if rng.next_f64() < loss {
            r.lost.extend((0..u64::from(count)).map(|k| first + k));
            continue;
        }
        let copies = if rng.next_f64() < dup {
            r.duplicated.push(first);
            2
        } else {
            1
        };
        if reorder_depth > 0 && rng.next_f64() < reorder {
            r.reordered.push(first);
            for _ in 0..copies {
                held.push((reorder_depth, p.clone()));
            }
            continue;
        }
        for _ in 0..copies {
            delayed.push_back((last_data + delay, p.clone()));
        }
    }
    for (_, p) in delayed.drain(..) {
        send(&p, &mut r)?;
    }
    for (_, h) in held.drain(..) {
        send(&h, &mut r)?;
    }
    let json = serde_json::to_string_pretty(&r)?;
    std::fs::write(&json_out, json).with_context(|| format!("writing {}", json_out.display()))?;
    Ok(())
}

/// The AF_PACKET socket: the one place this tool needs `unsafe` (libc calls with C structs).
mod raw {
    use std::{
        io,
        os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
    };

    use anyhow::Context as _;

    /// A raw packet socket that sends whole Ethernet frames out of one interface.
    #[derive(Debug)]
    pub struct PacketSocket {
        fd: OwnedFd,
        ifindex: i32,
    }

    impl PacketSocket {
        /// Opens the socket for `iface` (needs CAP_NET_RAW).
        pub fn open(iface: &str) -> anyhow::Result<Self> {
            let path = format!("/sys/class/net/{iface}/ifindex");
            let ifindex: i32 = std::fs::read_to_string(&path)
                .with_context(|| format!("no interface {iface} here ({path})"))?
                .trim()
                .parse()
                .with_context(|| format!("bad ifindex in {path}"))?;
            // SAFETY: socket() takes no pointers; the result is checked before use.
            let fd =
                unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
            if fd < 0 {
                return Err(io::Error::last_os_error())
                    .context("failed to open an AF_PACKET socket (needs CAP_NET_RAW)");
            }
            // SAFETY: `fd` is a fresh, valid descriptor that nothing else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            Ok(PacketSocket { fd, ifindex })
        }

        /// Sends one frame as it is (destination MAC included in `frame`; `dst` fills the
        /// link-layer address the kernel wants alongside).
        pub fn send(&self, frame: &[u8], dst: &[u8; 6]) -> io::Result<()> {
            // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
            let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_ifindex = self.ifindex;
            addr.sll_halen = 6;
            addr.sll_addr[..6].copy_from_slice(dst);
            // SAFETY: `frame` is valid for `frame.len()` bytes and `addr` for the length passed;
            // both outlive the call, which only reads them.
            let n = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    frame.as_ptr().cast(),
                    frame.len(),
                    0,
                    (&raw const addr).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
                )
            };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        }
    }
}
