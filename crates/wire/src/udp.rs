//! UDP datagrams in Ethernet II frames: the general header walk (through etherparse's checked
//! slices: VLAN tags, IPv4 options, IPv6) that the pcap reader ([`crate::pcap::udp_payload`])
//! uses. It borrows from the frame and allocates nothing. The trader's AF_XDP receive path
//! does not walk: the XDP program hands it one layout only, so `afxdp::frame::parse_udp_to`
//! reads that layout at fixed offsets.
use std::net::{IpAddr, SocketAddr};

use etherparse::{LinkSlice, NetSlice, SlicedPacket, TransportSlice, err::packet::SliceError};

/// A UDP datagram found in an Ethernet frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram<'a> {
    /// The sender's MAC.
    pub src_mac: [u8; 6],
    /// Whether the frame carries an 802.1Q/802.1ad VLAN tag.
    pub vlan_tagged: bool,
    /// Source address and port.
    pub src: SocketAddr,
    /// Destination address and port.
    pub dst: SocketAddr,
    /// The UDP payload (bounded by the UDP length field).
    pub payload: &'a [u8],
}

/// Why a frame holds no UDP datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotUdp {
    /// Headers cut short, or with impossible lengths (etherparse says which).
    Malformed(SliceError),
    /// Not IP (ARP, or an EtherType etherparse doesn't walk).
    NotIp,
    /// An IP fragment: only the first carries the UDP header, and no single one the datagram.
    Fragment,
    /// IP, but not UDP.
    OtherProtocol,
}

/// Finds the UDP datagram in an Ethernet II frame (VLAN tags allowed, IPv4 or IPv6).
#[inline]
pub fn parse(frame: &[u8]) -> Result<Datagram<'_>, NotUdp> {
    let sliced = SlicedPacket::from_ethernet(frame).map_err(NotUdp::Malformed)?;
    let src_mac = match &sliced.link {
        Some(LinkSlice::Ethernet2(eth)) => eth.source(),
        // `from_ethernet` always yields an Ethernet II link; anything else is not our frame.
        _ => return Err(NotUdp::NotIp),
    };
    let (src_ip, dst_ip): (IpAddr, IpAddr) = match &sliced.net {
        Some(NetSlice::Ipv4(ip)) => (
            ip.header().source_addr().into(),
            ip.header().destination_addr().into(),
        ),
        Some(NetSlice::Ipv6(ip)) => (
            ip.header().source_addr().into(),
            ip.header().destination_addr().into(),
        ),
        Some(NetSlice::Arp(_)) | None => return Err(NotUdp::NotIp),
    };
    if sliced.is_ip_payload_fragmented() {
        return Err(NotUdp::Fragment);
    }
    let Some(TransportSlice::Udp(udp)) = &sliced.transport else {
        return Err(NotUdp::OtherProtocol);
    };
    Ok(Datagram {
        src_mac,
        vlan_tagged: sliced.vlan().is_some(),
        src: SocketAddr::new(src_ip, udp.source_port()),
        dst: SocketAddr::new(dst_ip, udp.destination_port()),
        payload: udp.payload(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Ethernet II / IPv4 (no options, DF) / UDP 10.0.0.1:5000 -> 10.0.0.2:6000, payload "hi".
    pub(crate) const FRAME: [u8; 44] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // dst MAC
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src MAC
        0x08, 0x00, // EtherType IPv4
        0x45, 0x00, 0x00, 0x1e, // version 4, IHL 5, total length 30
        0x00, 0x00, 0x40, 0x00, // id 0, DF
        0x40, 0x11, 0x26, 0xcd, // TTL 64, UDP, header checksum
        0x0a, 0x00, 0x00, 0x01, // src 10.0.0.1
        0x0a, 0x00, 0x00, 0x02, // dst 10.0.0.2
        0x13, 0x88, 0x17, 0x70, // ports 5000 -> 6000
        0x00, 0x0a, 0x00, 0x00, // UDP length 10, checksum 0 (none)
        b'h', b'i',
    ];

    #[test]
    fn parse() {
        let d = super::parse(&FRAME).unwrap();
        assert_eq!(d.src_mac, [2, 0, 0, 0, 0, 1]);
        assert!(!d.vlan_tagged);
        assert_eq!(d.src, "10.0.0.1:5000".parse().unwrap());
        assert_eq!(d.dst, "10.0.0.2:6000".parse().unwrap());
        assert_eq!(d.payload, b"hi");
    }

    #[test]
    fn truncated_frames_are_malformed() {
        for len in 0..FRAME.len() {
            assert!(
                matches!(super::parse(&FRAME[..len]), Err(NotUdp::Malformed(_))),
                "len {len}"
            );
        }
    }

    #[test]
    fn a_vlan_tag_is_seen_and_walked_past() {
        let mut tagged = FRAME[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        tagged.extend_from_slice(&FRAME[12..]);
        let d = super::parse(&tagged).unwrap();
        assert!(d.vlan_tagged);
        assert_eq!(d.payload, b"hi");
    }

    #[test]
    fn what_is_not_udp_says_why() {
        let mut frag = FRAME;
        frag[20] = 0x20; // more fragments
        assert_eq!(super::parse(&frag), Err(NotUdp::Fragment));
        let mut arp = [0u8; 42];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        arp[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        assert_eq!(super::parse(&arp), Err(NotUdp::NotIp));
        let mut other = FRAME;
        other[23] = 253; // RFC 3692 experimentation
        assert_eq!(super::parse(&other), Err(NotUdp::OtherProtocol));
    }
}
