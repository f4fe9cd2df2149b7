//! Ethernet II / IPv4 / UDP framing for the AF_XDP path, where userspace owns whole frames.
//!
//! Parsing goes through etherparse's checked slices (no accessor can panic on short input).
//! Building uses a prebuilt 42-byte header template and fills in only what changes per frame:
//! lengths, IP id, the IPv4 header checksum and a *full* UDP checksum. A veth peer (or any NIC
//! without TX offload on this path) gets exactly these bytes, and a kernel receiver drops a
//! datagram whose checksum is wrong, so the checksum is never left to offload.
use std::net::{Ipv4Addr, SocketAddrV4};

use etherparse::{NetSlice, SlicedPacket, TransportSlice};

/// Ethernet II header.
pub const ETH_LEN: usize = 14;
/// IPv4 header without options.
pub const IPV4_LEN: usize = 20;
/// UDP header.
pub const UDP_LEN: usize = 8;
/// Everything before the UDP payload.
pub const HEADERS_LEN: usize = ETH_LEN + IPV4_LEN + UDP_LEN;
/// Default TTL of what we send.
const TTL: u8 = 64;

/// One end of a UDP flow at layer 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// MAC address.
    pub mac: [u8; 6],
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
    pub src_mac: [u8; 6],
    /// Sender's IPv4 address and port.
    pub src: SocketAddrV4,
    /// Destination IPv4 address and port.
    pub dst: SocketAddrV4,
    /// The UDP payload (bounded by the UDP length field).
    pub payload: &'a [u8],
}

/// Parses an Ethernet frame and returns the UDP datagram in it if it is IPv4/UDP to `port`.
#[inline]
pub fn parse_udp(frame: &[u8], port: u16) -> Result<Datagram<'_>, FrameError> {
    let p = SlicedPacket::from_ethernet(frame).map_err(|_| FrameError::Malformed)?;
    if !p.vlan_ids().is_empty() {
        return Err(FrameError::NotIpv4);
    }
    let src_mac = match &p.link {
        Some(etherparse::LinkSlice::Ethernet2(eth)) => eth.source(),
        _ => return Err(FrameError::Malformed),
    };
    let ip = match &p.net {
        Some(NetSlice::Ipv4(ip)) => ip,
        Some(_) => return Err(FrameError::NotIpv4),
        None => return Err(FrameError::NotIpv4),
    };
    if ip.payload().fragmented {
        return Err(FrameError::Fragment);
    }
    let header = ip.header();
    let udp = match &p.transport {
        Some(TransportSlice::Udp(udp)) => udp,
        Some(_) => return Err(FrameError::NotUdp),
        None if header.protocol() == etherparse::IpNumber::UDP => {
            return Err(FrameError::Malformed);
        }
        None => return Err(FrameError::NotUdp),
    };
    if udp.destination_port() != port {
        return Err(FrameError::OtherPort);
    }
    Ok(Datagram {
        src_mac,
        src: SocketAddrV4::new(header.source_addr(), udp.source_port()),
        dst: SocketAddrV4::new(header.destination_addr(), udp.destination_port()),
        payload: udp.payload(),
    })
}

/// Builds IPv4/UDP frames from `src` to `dst` into caller-provided buffers.
#[derive(Clone, Debug)]
pub struct FrameBuilder {
    template: [u8; HEADERS_LEN],
    /// Ones'-complement sum of the constant part of the UDP pseudo header and UDP header
    /// (addresses, protocol, ports), folded later with the per-frame parts.
    udp_partial: u32,
    ip_id: u16,
}

impl FrameBuilder {
    /// A builder for the flow `src` → `dst`.
    pub fn new(src: Endpoint, dst: Endpoint) -> Self {
        let mut t = [0u8; HEADERS_LEN];
        t[0..6].copy_from_slice(&dst.mac);
        t[6..12].copy_from_slice(&src.mac);
        t[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        let ip = &mut t[ETH_LEN..ETH_LEN + IPV4_LEN];
        ip[0] = 0x45;
        ip[6] = 0x40; // don't fragment
        ip[8] = TTL;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&src.addr.ip().octets());
        ip[16..20].copy_from_slice(&dst.addr.ip().octets());
        let udp = &mut t[ETH_LEN + IPV4_LEN..];
        udp[0..2].copy_from_slice(&src.addr.port().to_be_bytes());
        udp[2..4].copy_from_slice(&dst.addr.port().to_be_bytes());
        let mut partial = sum16(&src.addr.ip().octets()) + sum16(&dst.addr.ip().octets());
        partial += 17;
        partial += u32::from(src.addr.port()) + u32::from(dst.addr.port());
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
        if payload_len > body.len() || payload_len > usize::from(u16::MAX) - IPV4_LEN - UDP_LEN {
            return None;
        }
        head.copy_from_slice(&self.template);
        let udp_len = (UDP_LEN + payload_len) as u16;
        let ip_len = IPV4_LEN as u16 + udp_len;
        self.ip_id = self.ip_id.wrapping_add(1);
        {
            let ip = &mut head[ETH_LEN..ETH_LEN + IPV4_LEN];
            ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
            ip[4..6].copy_from_slice(&self.ip_id.to_be_bytes());
            let c = !fold(sum16(ip));
            ip[10..12].copy_from_slice(&c.to_be_bytes());
        }
        let udp = &mut head[ETH_LEN + IPV4_LEN..];
        udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
        // Pseudo header length + UDP length field (the same value twice) + payload.
        let sum = self.udp_partial + 2 * u32::from(udp_len) + sum16(&body[..payload_len]);
        let mut c = !fold(sum);
        if c == 0 {
            c = 0xffff; // RFC 768: zero means "no checksum"
        }
        udp[6..8].copy_from_slice(&c.to_be_bytes());
        Some(HEADERS_LEN + payload_len)
    }
}

/// Big-endian 16-bit word sum (odd trailing byte padded with zero), unfolded.
#[inline]
fn sum16(bytes: &[u8]) -> u32 {
    let mut chunks = bytes.chunks_exact(2);
    let mut s: u32 = 0;
    for c in &mut chunks {
        s += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        s += u32::from(*last) << 8;
    }
    s
}

#[inline]
fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// Convenience for tests and tools: the `(Ipv4Addr, port)` of an endpoint.
pub fn endpoint(mac: [u8; 6], ip: Ipv4Addr, port: u16) -> Endpoint {
    Endpoint {
        mac,
        addr: SocketAddrV4::new(ip, port),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> (Endpoint, Endpoint) {
        (
            endpoint(
                [2, 0, 0xc6, 0x12, 0, 2],
                Ipv4Addr::new(198, 18, 0, 2),
                40001,
            ),
            endpoint(
                [2, 0, 0xc6, 0x12, 0, 1],
                Ipv4Addr::new(198, 18, 0, 1),
                40002,
            ),
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
            assert_eq!(eth.destination, dst.mac);
            let (ip, rest) = etherparse::Ipv4Header::from_slice(rest).unwrap();
            assert_eq!(ip.header_checksum, ip.calc_header_checksum(), "len {len}");
            let (udp, payload) = etherparse::UdpHeader::from_slice(rest).unwrap();
            assert_eq!(payload.len(), len);
            let want = udp.calc_checksum_ipv4(&ip, payload).unwrap();
            assert_eq!(udp.checksum, want, "len {len}");
            let d = parse_udp(&buf[..n], 40002).unwrap();
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
        let mut b = FrameBuilder::new(src, dst);
        let mut buf = [0u8; 128];
        let n = b.build(&mut buf, |_| 4).unwrap();
        assert_eq!(parse_udp(&buf[..n], 1), Err(FrameError::OtherPort));
        for cut in [0, 5, 13, 20, 33, 40] {
            assert_eq!(
                parse_udp(&buf[..cut], 40002),
                Err(FrameError::Malformed),
                "{cut}"
            );
        }
        let mut arp = buf;
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(parse_udp(&arp[..n], 40002), Err(FrameError::NotIpv4));
        let mut frag = buf;
        frag[ETH_LEN + 6] = 0x20; // more fragments
        assert_eq!(parse_udp(&frag[..n], 40002), Err(FrameError::Fragment));
        let mut tcp = buf;
        tcp[ETH_LEN + 9] = 6;
        assert!(matches!(
            parse_udp(&tcp[..n], 40002),
            Err(FrameError::NotUdp | FrameError::Malformed)
        ));
    }
}
