//! Ethernet II / IPv4 / UDP framing for the AF_XDP path, where userspace owns whole frames.
//!
//! Parsing goes through `wire::udp`'s header walk (etherparse's checked slices: no accessor can
//! panic on short input), the one the pcap reader uses too. Building uses a prebuilt 42-byte
//! header template and fills in only what changes per frame: lengths, IP id, the IPv4 header
//! checksum and a *full* UDP checksum. A veth peer (or any NIC without TX offload on this path)
//! gets exactly these bytes, and a kernel receiver drops a datagram whose checksum is wrong, so
//! the checksum is never left to offload. Offsets come from `xdp_common::layout`, the checksum
//! from `xdp_common::checksum`: the XDP program uses both too.
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use netns::Mac;
use wire::udp::NotUdp;
use xdp_common::{
    checksum,
    layout::{UDP_PAYLOAD_OFFSET, ethernet, ipv4, udp},
};

/// Everything before the UDP payload: Ethernet II, IPv4 without options, UDP.
pub const HEADERS_LEN: usize = UDP_PAYLOAD_OFFSET;
/// Default TTL of what we send.
const TTL: u8 = 64;

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
    /// UDP to another port.
    OtherPort,
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

/// Parses an Ethernet frame and returns the UDP datagram in it if it is untagged IPv4/UDP to
/// `port` (the flow the XDP program redirects, classified as the program does).
#[inline]
pub fn parse_udp(frame: &[u8], port: u16) -> Result<Datagram<'_>, FrameError> {
    // The EtherType decides, as in the XDP program: a VLAN tag or IPv6 is "not IPv4" before
    // any deeper header is looked at.
    if let Some(&[hi, lo]) = frame.get(ethernet::ETHERTYPE)
        && u16::from_be_bytes([hi, lo]) != ethernet::ETHERTYPE_IPV4
    {
        return Err(FrameError::NotIpv4);
    }
    let d = wire::udp::parse(frame).map_err(|e| match e {
        NotUdp::Malformed(_) => FrameError::Malformed,
        NotUdp::NotIp => FrameError::NotIpv4,
        NotUdp::Fragment => FrameError::Fragment,
        NotUdp::OtherProtocol => FrameError::NotUdp,
    })?;
    let (SocketAddr::V4(src), SocketAddr::V4(dst)) = (d.src, d.dst) else {
        return Err(FrameError::NotIpv4);
    };
    if dst.port() != port {
        return Err(FrameError::OtherPort);
    }
    Ok(Datagram {
        src_mac: Mac(d.src_mac),
        src,
        dst,
        payload: d.payload,
    })
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
            let d = parse_udp(&buf[..n], dst.addr.port()).unwrap();
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

    #[test]
    fn parse_classifies_what_is_not_ours() {
        let (src, dst) = flow();
        let port = dst.addr.port();
        let mut b = FrameBuilder::new(src, dst);
        let mut buf = [0u8; 128];
        let n = b.build(&mut buf, |_| 4).unwrap();
        assert_eq!(parse_udp(&buf[..n], port + 1), Err(FrameError::OtherPort));
        for cut in [0, 5, 13, 20, 33, 40] {
            assert_eq!(
                parse_udp(&buf[..cut], port),
                Err(FrameError::Malformed),
                "{cut}"
            );
        }
        let ip = ethernet::HEADER_LEN;
        let mut arp = buf;
        arp[ethernet::ETHERTYPE].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(parse_udp(&arp[..n], port), Err(FrameError::NotIpv4));
        let mut vlan = buf[..12].to_vec();
        vlan.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        vlan.extend_from_slice(&buf[12..n]);
        assert_eq!(parse_udp(&vlan, port), Err(FrameError::NotIpv4));
        let mut frag = buf;
        frag[ip + ipv4::FLAGS_FRAG.start] = 0x20; // more fragments
        assert_eq!(parse_udp(&frag[..n], port), Err(FrameError::Fragment));
        let mut tcp = buf;
        tcp[ip + ipv4::PROTOCOL] = 6;
        assert!(matches!(
            parse_udp(&tcp[..n], port),
            Err(FrameError::NotUdp | FrameError::Malformed)
        ));
        let mut other = buf;
        other[ip + ipv4::PROTOCOL] = 253; // RFC 3692 experimentation
        assert_eq!(parse_udp(&other[..n], port), Err(FrameError::NotUdp));
    }
}
