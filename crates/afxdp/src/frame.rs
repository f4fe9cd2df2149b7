//! Ethernet II / IPv4 / UDP framing for the AF_XDP path, where userspace owns whole frames.
//!
//! Parsing reads the headers at fixed offsets behind one length check: the XDP program
//! redirects only untagged IPv4/UDP without options or fragments to the feed port, so on the
//! hot path every frame has that layout, and the walk a general parser does (VLAN tags, IPv6,
//! options) would be paid for nothing. Anything else that reaches a socket (another program, a
//! race with its attachment) is still classified, by the reasons and in the order of the XDP
//! program's `classify`, and nothing can panic on any input. [`parse_udp_to`] then checks what
//! the kernel checks before it hands a datagram to a socket (destination MAC and IPv4 address,
//! both checksums), so the AF_XDP trader takes no datagram the kernel UDP path would drop.
//!
//! Building uses a prebuilt 42-byte header template and fills in only what changes per frame:
//! lengths, IP id, the IPv4 header checksum and a *full* UDP checksum. A veth peer (or any NIC
//! without TX offload on this path) gets exactly these bytes, and a kernel receiver drops a
//! datagram whose checksum is wrong, so the checksum is never left to offload. Offsets come
//! from `xdp_common::layout`, the checksum from `xdp_common::checksum`: the XDP program uses
//! both too.
use std::net::{Ipv4Addr, SocketAddrV4};

use netns::Mac;
use xdp_common::{
    checksum,
    layout::{Field, UDP_PAYLOAD_OFFSET, at, ethernet, ipv4, udp},
};

/// Everything before the UDP payload: Ethernet II, IPv4 without options, UDP.
pub const HEADERS_LEN: usize = UDP_PAYLOAD_OFFSET;
/// Default TTL of what we send.
const TTL: u8 = 64;
/// Where the IPv4 header starts: right after Ethernet II (no VLAN tag).
const IP: usize = ethernet::HEADER_LEN;
/// Where the UDP header starts, behind an IPv4 header without options.
const UDP: usize = IP + ipv4::HEADER_LEN;

/// One end of a UDP flow at layer 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// MAC address.
    pub mac: Mac,
    /// IPv4 address and UDP port.
    pub addr: SocketAddrV4,
}

/// Why a frame is not a datagram of the flow we serve. Each kind is counted by the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Headers cut short or impossible lengths.
    Malformed,
    /// Not IPv4 (ARP, IPv6, ...), or VLAN-tagged.
    NotIpv4,
    /// IPv4 fragment.
    Fragment,
    /// Not UDP.
    NotUdp,
    /// IPv4 header with options (the XDP program passes these to the kernel).
    IpOptions,
    /// UDP to another port.
    OtherPort,
    /// Addressed to another MAC (the kernel drops it as `PACKET_OTHERHOST`).
    WrongDstMac,
    /// The IPv4 header checksum is wrong (the kernel counts `InCsumErrors`, `InHdrErrors`).
    BadIpChecksum,
    /// Addressed to another IPv4 address (the kernel, not forwarding, counts `InAddrErrors`).
    WrongDstIp,
    /// The UDP checksum is wrong (the kernel counts UDP `InCsumErrors`, `InErrors`).
    BadUdpChecksum,
}

/// What the receive path needs of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram<'a> {
    /// Sender's MAC.
    pub src_mac: Mac,
    /// Sender's IPv4 address and port.
    pub src: SocketAddrV4,
    /// Destination IPv4 address and port.
    pub dst: SocketAddrV4,
    /// The UDP payload (bounded by the UDP length field).
    pub payload: &'a [u8],
}

/// Parses an Ethernet frame and returns the UDP datagram in it if it is untagged IPv4/UDP
/// without options to `port` (the flow the XDP program redirects, classified as the program
/// does), with IPv4 and UDP lengths that fit the frame. Neither the addresses nor the checksums
/// are checked: [`parse_udp_to`] does.
#[inline]
pub fn parse_udp(frame: &[u8], port: u16) -> Result<Datagram<'_>, FrameError> {
    let (h, udp_len) = headers(frame, port)?;
    datagram(frame, h, udp_len)
}

/// [`parse_udp`] for datagrams to `to` (its MAC, IPv4 address and port), checked as the kernel
/// checks them before a UDP socket sees them: the destination MAC and IPv4 address are `to`'s,
/// the IPv4 header checksum is right, and so is the UDP checksum (0: none, allowed for IPv4).
/// The AF_XDP trader takes what this returns and nothing else.
#[inline]
pub fn parse_udp_to<'a>(frame: &'a [u8], to: &Endpoint) -> Result<Datagram<'a>, FrameError> {
    let (h, udp_len) = headers(frame, to.addr.port())?;
    if h[ethernet::DST] != to.mac.octets() {
        return Err(FrameError::WrongDstMac);
    }
    // A header that carries its checksum sums to 0xffff: its complement is 0.
    if checksum::ipv4_header(&h[IP..UDP]) != 0 {
        return Err(FrameError::BadIpChecksum);
    }
    if h[at(IP, ipv4::DST)] != to.addr.ip().octets() {
        return Err(FrameError::WrongDstIp);
    }
    if be16(h, at(UDP, udp::CHECKSUM)) != 0 {
        let segment = frame.get(UDP..UDP + udp_len).ok_or(FrameError::Malformed)?;
        // The pseudo header (addresses, protocol, UDP length), then header and payload with
        // the checksum in place: right when the sum folds to 0xffff (never 0: the protocol
        // alone is nonzero).
        let pseudo = checksum::sum(&h[IP + ipv4::SRC.start..IP + ipv4::DST.end])
            + u64::from(ipv4::PROTOCOL_UDP)
            + udp_len as u64;
        if checksum::fold(pseudo + checksum::sum(segment)) != 0xffff {
            return Err(FrameError::BadUdpChecksum);
        }
    }
    datagram(frame, h, udp_len)
}

/// The frame's headers, with the UDP length, if they are those of a datagram to `port`. The
/// one length check: a frame holding the 42 bytes of headers is read at fixed offsets in place;
/// a shorter one (never the feed) is classified from a zero-padded copy, off the hot path.
#[inline(always)]
fn headers(frame: &[u8], port: u16) -> Result<(&[u8; HEADERS_LEN], usize), FrameError> {
    match frame.first_chunk::<HEADERS_LEN>() {
        Some(h) => Ok((h, classify(h, frame.len(), port)?)),
        None => Err(classify_short(frame, port)),
    }
}

/// Why a frame shorter than the headers is not ours. The padding reads as zeros, and
/// [`classify`] looks past the frame's real end only after its length checks have failed, so
/// the reason is the one the frame itself gives.
#[cold]
#[inline(never)]
fn classify_short(frame: &[u8], port: u16) -> FrameError {
    if frame.len() < ethernet::HEADER_LEN {
        return FrameError::Malformed;
    }
    let mut h = [0u8; HEADERS_LEN];
    for (to, from) in h.iter_mut().zip(frame) {
        *to = *from;
    }
    match classify(&h, frame.len(), port) {
        Err(e) => e,
        // Unreachable (a datagram needs all 42 bytes), but a reason rather than a panic.
        Ok(_) => FrameError::Malformed,
    }
}

/// Classifies the headers `h` of a frame of `len` bytes as the XDP program's `classify` does,
/// same reasons, same order, each header rule the same function (`xdp_common::layout`'s
/// `ipv4::header_len`, `ipv4::is_fragment`, `udp::length_holds_header`), and adds the lengths the kernel checks (the IPv4 total length
/// within the frame, the UDP length within the IPv4 payload). Returns the UDP length.
///
/// Every read below the IPv4 total-length check is of the EtherType, version/IHL and total
/// length; everything after it lies inside `IP + total_len <= len`.
#[inline(always)]
fn classify(h: &[u8; HEADERS_LEN], len: usize, port: u16) -> Result<usize, FrameError> {
    if be16(h, ethernet::ETHERTYPE) != ethernet::ETHERTYPE_IPV4 {
        return Err(FrameError::NotIpv4);
    }
    let Some(ihl) = ipv4::header_len(h[IP + ipv4::VER_IHL]) else {
        return Err(FrameError::Malformed);
    };
    let total_len = usize::from(be16(h, at(IP, ipv4::TOTAL_LEN)));
    if total_len < ihl || IP + total_len > len {
        return Err(FrameError::Malformed);
    }
    if h[IP + ipv4::PROTOCOL] != ipv4::PROTOCOL_UDP {
        return Err(FrameError::NotUdp);
    }
    if ipv4::is_fragment(be16(h, at(IP, ipv4::FLAGS_FRAG))) {
        return Err(FrameError::Fragment);
    }
    if ihl != ipv4::HEADER_LEN {
        return Err(FrameError::IpOptions);
    }
    if total_len < ipv4::HEADER_LEN + udp::HEADER_LEN {
        return Err(FrameError::Malformed);
    }
    let udp_len = be16(h, at(UDP, udp::LENGTH));
    if !udp::length_holds_header(udp_len) || usize::from(udp_len) > total_len - ipv4::HEADER_LEN {
        return Err(FrameError::Malformed);
    }
    if be16(h, at(UDP, udp::DST_PORT)) != port {
        return Err(FrameError::OtherPort);
    }
    Ok(usize::from(udp_len))
}

/// The datagram of headers that [`classify`] accepted.
#[inline(always)]
fn datagram<'a>(
    frame: &'a [u8],
    h: &[u8; HEADERS_LEN],
    udp_len: usize,
) -> Result<Datagram<'a>, FrameError> {
    // Within the frame by `classify`'s checks; `get` keeps that a reason, not a panic.
    let payload = frame
        .get(UDP_PAYLOAD_OFFSET..UDP + udp_len)
        .ok_or(FrameError::Malformed)?;
    let addr = |ip: Field, port: Field| {
        SocketAddrV4::new(
            Ipv4Addr::from(std::array::from_fn::<u8, 4, _>(|i| h[ip.start + i])),
            be16(h, port),
        )
    };
    Ok(Datagram {
        src_mac: Mac(std::array::from_fn(|i| h[ethernet::SRC.start + i])),
        src: addr(at(IP, ipv4::SRC), at(UDP, udp::SRC_PORT)),
        dst: addr(at(IP, ipv4::DST), at(UDP, udp::DST_PORT)),
        payload,
    })
}

/// The big-endian `u16` at `field` of the headers (a constant range inside them).
#[inline(always)]
fn be16(h: &[u8; HEADERS_LEN], field: Field) -> u16 {
    u16::from_be_bytes([h[field.start], h[field.start + 1]])
}

/// Builds IPv4/UDP frames from `src` to `dst` into caller-provided buffers.
#[derive(Clone, Debug)]
pub struct FrameBuilder {
    template: [u8; HEADERS_LEN],
    /// Ones'-complement sum of the constant part of the UDP pseudo header and UDP header
    /// (addresses, protocol, ports), folded later with the per-frame parts.
    udp_partial: u64,
    ip_id: u16,
}

impl FrameBuilder {
    /// A builder for the flow `src` → `dst`.
    pub fn new(src: Endpoint, dst: Endpoint) -> Self {
        let mut t = [0u8; HEADERS_LEN];
        let (eth, rest) = t.split_at_mut(ethernet::HEADER_LEN);
        let (ip, udp_header) = rest.split_at_mut(ipv4::HEADER_LEN);
        eth[ethernet::DST].copy_from_slice(&dst.mac.octets());
        eth[ethernet::SRC].copy_from_slice(&src.mac.octets());
        eth[ethernet::ETHERTYPE].copy_from_slice(&ethernet::ETHERTYPE_IPV4.to_be_bytes());
        ip[ipv4::VER_IHL] = ipv4::VER_IHL_NO_OPTIONS;
        ip[ipv4::FLAGS_FRAG].copy_from_slice(&ipv4::FLAG_DONT_FRAGMENT.to_be_bytes());
        ip[ipv4::TTL] = TTL;
        ip[ipv4::PROTOCOL] = ipv4::PROTOCOL_UDP;
        ip[ipv4::SRC].copy_from_slice(&src.addr.ip().octets());
        ip[ipv4::DST].copy_from_slice(&dst.addr.ip().octets());
        udp_header[udp::SRC_PORT].copy_from_slice(&src.addr.port().to_be_bytes());
        udp_header[udp::DST_PORT].copy_from_slice(&dst.addr.port().to_be_bytes());
        // The pseudo header's addresses and protocol, and the ports: the same in every frame.
        let partial = checksum::sum(&ip[ipv4::SRC.start..ipv4::DST.end])
            + u64::from(ipv4::PROTOCOL_UDP)
            + checksum::sum(&udp_header[udp::SRC_PORT.start..udp::DST_PORT.end]);
        FrameBuilder {
            template: t,
            udp_partial: partial,
            ip_id: 0,
        }
    }

    /// Writes a frame into `buf` whose UDP payload `fill` writes (it gets the payload area and
    /// returns the payload length). Returns the frame length, or `None` if `buf` is too small.
    #[inline]
    pub fn build(
        &mut self,
        buf: &mut [u8],
        fill: impl FnOnce(&mut [u8]) -> usize,
    ) -> Option<usize> {
        if buf.len() < HEADERS_LEN {
            return None;
        }
        let (head, body) = buf.split_at_mut(HEADERS_LEN);
        let payload_len = fill(body);
        if payload_len > body.len()
            || payload_len > usize::from(u16::MAX) - ipv4::HEADER_LEN - udp::HEADER_LEN
        {
            return None;
        }
        head.copy_from_slice(&self.template);
        let udp_len = (udp::HEADER_LEN + payload_len) as u16;
        let ip_len = ipv4::HEADER_LEN as u16 + udp_len;
        self.ip_id = self.ip_id.wrapping_add(1);
        let (ip, udp_header) = head[ethernet::HEADER_LEN..].split_at_mut(ipv4::HEADER_LEN);
        ip[ipv4::TOTAL_LEN].copy_from_slice(&ip_len.to_be_bytes());
        ip[ipv4::IDENT].copy_from_slice(&self.ip_id.to_be_bytes());
        let header_checksum = checksum::ipv4_header(ip);
        ip[ipv4::CHECKSUM].copy_from_slice(&header_checksum.to_be_bytes());
        udp_header[udp::LENGTH].copy_from_slice(&udp_len.to_be_bytes());
        // Pseudo header length + UDP length field (the same value twice) + payload.
        let sum = self.udp_partial + 2 * u64::from(udp_len) + checksum::sum(&body[..payload_len]);
        let mut c = !checksum::fold(sum);
        if c == 0 {
            c = 0xffff; // RFC 768: zero means "no checksum"
        }
        udp_header[udp::CHECKSUM].copy_from_slice(&c.to_be_bytes());
        Some(HEADERS_LEN + payload_len)
    }
}

/// An endpoint from its parts; the MAC as a [`Mac`] or its six bytes.
pub fn endpoint(mac: impl Into<Mac>, ip: Ipv4Addr, port: u16) -> Endpoint {
    Endpoint {
        mac: mac.into(),
        addr: SocketAddrV4::new(ip, port),
    }
}

#[cfg(test)]
mod tests {
    use netns::lab;

    use super::*;

    /// The lab's flow: the trader's orders to the exchange.
    fn flow() -> (Endpoint, Endpoint) {
        (
            endpoint(lab::TRADER_MAC, lab::TRADER_IP, lab::MD_PORT),
            endpoint(lab::EXCHANGE_MAC, lab::EXCHANGE_IP, lab::ORDER_PORT),
        )
    }

    #[test]
    fn built_frames_carry_valid_checksums() {
        let (src, dst) = flow();
        let mut b = FrameBuilder::new(src, dst);
        for len in [0usize, 1, 2, 3, 36, 37, 1000] {
            let mut buf = [0u8; 2048];
            let n = b
                .build(&mut buf, |p| {
                    for (i, x) in p[..len].iter_mut().enumerate() {
                        *x = (i * 7 + len) as u8;
                    }
                    len
                })
                .unwrap();
            assert_eq!(n, HEADERS_LEN + len);
            let (eth, rest) = etherparse::Ethernet2Header::from_slice(&buf[..n]).unwrap();
            assert_eq!(eth.destination, dst.mac.octets());
            let (ip, rest) = etherparse::Ipv4Header::from_slice(rest).unwrap();
            assert_eq!(ip.header_checksum, ip.calc_header_checksum(), "len {len}");
            let (udp, payload) = etherparse::UdpHeader::from_slice(rest).unwrap();
            assert_eq!(payload.len(), len);
            let want = udp.calc_checksum_ipv4(&ip, payload).unwrap();
            assert_eq!(udp.checksum, want, "len {len}");
            let d = parse_udp_to(&buf[..n], &dst).unwrap();
            assert_eq!(d.src, src.addr);
            assert_eq!(d.src_mac, src.mac);
            assert_eq!(d.payload, payload);
        }
    }

    #[test]
    fn too_small_buffers_are_refused() {
        let (src, dst) = flow();
        let mut b = FrameBuilder::new(src, dst);
        assert_eq!(b.build(&mut [0u8; 41], |_| 0), None);
        assert_eq!(b.build(&mut [0u8; 50], |_| 9), None);
        assert_eq!(b.build(&mut [0u8; 50], |_| 8), Some(50));
    }

    /// Ethernet II / IPv4 (no options, DF) / UDP 10.0.0.1:5000 -> 10.0.0.2:6000, payload "hi",
    /// both checksums right (the IPv4 header is `xdp_common::checksum`'s and `wire::udp`'s
    /// fixture; the UDP checksum as Wireshark computes it).
    const FRAME: [u8; 44] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // dst MAC
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src MAC
        0x08, 0x00, // EtherType IPv4
        0x45, 0x00, 0x00, 0x1e, // version 4, IHL 5, total length 30
        0x00, 0x00, 0x40, 0x00, // id 0, DF
        0x40, 0x11, 0x26, 0xcd, // TTL 64, UDP, header checksum
        0x0a, 0x00, 0x00, 0x01, // src 10.0.0.1
        0x0a, 0x00, 0x00, 0x02, // dst 10.0.0.2
        0x13, 0x88, 0x17, 0x70, // ports 5000 -> 6000
        0x00, 0x0a, 0x58, 0x76, // UDP length 10, checksum
        b'h', b'i',
    ];
    /// Where `FRAME` is going.
    fn to() -> Endpoint {
        endpoint([2, 0, 0, 0, 0, 2], Ipv4Addr::new(10, 0, 0, 2), 6000)
    }
    /// `FRAME` with `bytes` written at `offset`.
    fn with(offset: usize, bytes: &[u8]) -> Vec<u8> {
        let mut f = FRAME.to_vec();
        f[offset..offset + bytes.len()].copy_from_slice(bytes);
        f
    }

    #[test]
    fn parse_a_fixture() {
        for d in [
            parse_udp(&FRAME, 6000).unwrap(),
            parse_udp_to(&FRAME, &to()).unwrap(),
        ] {
            assert_eq!(d.src_mac, Mac([2, 0, 0, 0, 0, 1]));
            assert_eq!(d.src, "10.0.0.1:5000".parse().unwrap());
            assert_eq!(d.dst, "10.0.0.2:6000".parse().unwrap());
            assert_eq!(d.payload, b"hi");
        }
        // Ethernet padding behind the datagram is not payload.
        let mut padded = FRAME.to_vec();
        padded.resize(60, 0xee);
        assert_eq!(parse_udp_to(&padded, &to()).unwrap().payload, b"hi");
        // A UDP checksum of 0 means none (IPv4).
        let none = with(40, &[0, 0]);
        assert_eq!(parse_udp_to(&none, &to()).unwrap().payload, b"hi");
    }

    #[test]
    fn each_reason_from_a_fixture() {
        use FrameError::*;
        let cases: [(&str, Vec<u8>, FrameError); 17] = [
            ("ARP", with(12, &[0x08, 0x06]), NotIpv4),
            ("IPv6 EtherType", with(12, &[0x86, 0xdd]), NotIpv4),
            ("version 6", with(14, &[0x65]), Malformed),
            ("IHL 4", with(14, &[0x44]), Malformed),
            ("total length below IHL", with(16, &[0, 19]), Malformed),
            ("total length past the frame", with(16, &[0, 31]), Malformed),
            ("protocol 253", with(23, &[253]), NotUdp),
            ("more fragments", with(20, &[0x20, 0]), Fragment),
            ("fragment offset", with(20, &[0, 1]), Fragment),
            ("IHL 6", with(14, &[0x46]), IpOptions),
            ("UDP length below 8", with(38, &[0, 7]), Malformed),
            ("UDP length past IPv4", with(38, &[0, 11]), Malformed),
            ("other port", with(36, &[0x17, 0x71]), OtherPort),
            ("other MAC", with(5, &[3]), WrongDstMac),
            ("bad IPv4 checksum", with(24, &[0x26, 0xce]), BadIpChecksum),
            (
                "other IPv4 address",
                ip_to(Ipv4Addr::new(10, 0, 0, 3)),
                WrongDstIp,
            ),
            ("bad UDP checksum", with(40, &[0x58, 0x77]), BadUdpChecksum),
        ];
        for (what, frame, want) in cases {
            assert_eq!(parse_udp_to(&frame, &to()), Err(want), "{what}");
            // Neither addresses nor checksums are parse_udp's business.
            let plain = parse_udp(&frame, 6000).map(|d| d.payload);
            match want {
                WrongDstMac | BadIpChecksum | WrongDstIp | BadUdpChecksum => {
                    assert_eq!(plain, Ok(&b"hi"[..]), "{what}");
                }
                _ => assert_eq!(plain, Err(want), "{what}"),
            }
        }
        // An 802.1Q tag in front of the fixture: the EtherType says VLAN, so "not IPv4".
        let mut vlan = FRAME[..12].to_vec();
        vlan.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        vlan.extend_from_slice(&FRAME[12..]);
        assert_eq!(parse_udp_to(&vlan, &to()), Err(NotIpv4));
        // A payload byte changed under a right-looking checksum.
        assert_eq!(parse_udp_to(&with(42, b"ho"), &to()), Err(BadUdpChecksum));
    }

    /// `FRAME` to another IPv4 address, with the IPv4 header checksum fixed (else that is
    /// what is wrong) and the UDP checksum fixed too (the pseudo header holds the address).
    fn ip_to(dst: Ipv4Addr) -> Vec<u8> {
        let mut f = FRAME.to_vec();
        f[30..34].copy_from_slice(&dst.octets());
        f[24..26].fill(0);
        let c = checksum::ipv4_header(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f[40..42].fill(0);
        let c = !checksum::fold(checksum::sum(&f[26..34]) + 17 + 10 + checksum::sum(&f[34..44]));
        f[40..42].copy_from_slice(&c.to_be_bytes());
        f
    }

    #[test]
    fn short_frames_say_what_they_are() {
        use FrameError::*;
        // Every cut of the fixture: the EtherType decides first, then it is too short.
        for cut in 0..FRAME.len() {
            assert_eq!(parse_udp_to(&FRAME[..cut], &to()), Err(Malformed), "{cut}");
        }
        let arp = with(12, &[0x08, 0x06]);
        assert_eq!(parse_udp(&arp[..14], 6000), Err(NotIpv4));
        assert_eq!(parse_udp(&arp[..13], 6000), Err(Malformed));
        // A complete IPv4 header of another protocol, in 38 bytes (no padding on veth).
        let mut icmp = with(23, &[1]);
        icmp.truncate(38);
        icmp[16..18].copy_from_slice(&24u16.to_be_bytes());
        assert_eq!(parse_udp(&icmp, 6000), Err(NotUdp));
        // A fragment whose payload is shorter than a UDP header.
        let mut frag = with(20, &[0, 4]);
        frag.truncate(36);
        frag[16..18].copy_from_slice(&22u16.to_be_bytes());
        assert_eq!(parse_udp(&frag, 6000), Err(Fragment));
        // IPv4 claiming UDP with a total length of 24: no room for the UDP header.
        let mut cut = FRAME[..38].to_vec();
        cut[16..18].copy_from_slice(&24u16.to_be_bytes());
        assert_eq!(parse_udp(&cut, 6000), Err(Malformed));
    }

    /// Every byte of the fixture, every value: a reason or a datagram, never a panic, and a
    /// datagram only if the byte is the source MAC's (the one part nobody checks). A single
    /// byte changed anywhere else is caught: by a field check or, failing that, by a checksum
    /// (a one-byte change can't leave a ones'-complement sum as it was).
    #[test]
    fn no_single_byte_change_slips_through() {
        for i in 0..FRAME.len() {
            for v in 0..=255u8 {
                let mut f = FRAME;
                f[i] = v;
                let r = parse_udp_to(&f, &to());
                let unchecked = ethernet::SRC.contains(&i) || v == FRAME[i];
                assert_eq!(r.is_ok(), unchecked, "byte {i} = {v:#04x}: {r:?}");
                let _ = parse_udp(&f[..i], 6000);
                let _ = parse_udp_to(&f[..i], &to());
            }
        }
    }
}
