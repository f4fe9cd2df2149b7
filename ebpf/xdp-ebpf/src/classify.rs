//! Each frame's verdict: market data from a pinned source, the re-request server's answer, the
//! order session's TCP, a stranger's datagram, or anything else for the kernel.

use crate::{
    log::{Malformed, Reason},
    maps::{
        MD_PORT, MD_PORT_B, ORDER_DST_IP, ORDER_DST_MAC, ORDER_DST_PORT, ORDER_PORT, ORDER_SRC_IP,
        ORDER_SRC_MAC, ORDER_TCP, SOURCES_MAP,
    },
    packet::{IP, UDP, read, read_field},
    read_global,
};
use aya_ebpf::programs::XdpContext;
use xdp_common::{
    Counter, Foreign, SOURCE_LINE_A, SOURCE_LINE_B, SOURCE_RECOVERY,
    layout::{Field, at, ethernet, ipv4, tcp, udp},
};

pub(crate) enum Verdict {
    /// A line's market data (`SOURCE_LINE_A` or `SOURCE_LINE_B`).
    MarketData(u32),
    Pass(Counter),
    /// To the feed's port from a source nobody named: dropped.
    Foreign(Counter),
    /// From the re-request server: to the trader (never fired on, never reflected).
    Recovery,
    /// A segment of the order session: to the trader's userspace TCP.
    OrderSession,
}

/// Reads a header field for [`classify`]: a frame too short for it is [`Reason::Truncated`].
#[inline(always)]
pub(crate) fn header<const N: usize>(ctx: &XdpContext, field: Field) -> Result<[u8; N], Malformed> {
    read_field(ctx, field).map_err(|()| Malformed::TRUNCATED)
}

#[inline(always)]
pub(crate) fn classify(ctx: &XdpContext) -> Result<Verdict, Malformed> {
    let ethertype = u16::from_be_bytes(header(ctx, ethernet::ETHERTYPE)?);
    if ethertype != ethernet::ETHERTYPE_IPV4 {
        return Ok(Verdict::Pass(Counter::PassedNotIpv4));
    }
    let ver_ihl = read::<u8>(ctx, IP + ipv4::VER_IHL).map_err(|()| Malformed::TRUNCATED)?;
    let Some(ihl) = ipv4::header_len(ver_ihl) else {
        return Err(Malformed::new(Reason::VersionIhl, u16::from(ver_ihl), 0));
    };
    let total = u16::from_be_bytes(header(ctx, at(IP, ipv4::TOTAL_LEN))?);
    let total_len = usize::from(total);
    if total_len < ihl {
        return Err(Malformed::new(Reason::TotalUnderHeader, total, ihl as u16));
    }
    let protocol = read::<u8>(ctx, IP + ipv4::PROTOCOL).map_err(|()| Malformed::TRUNCATED)?;
    if protocol != ipv4::PROTOCOL_UDP {
        if protocol == ipv4::PROTOCOL_TCP {
            match order_session(ctx, ihl)? {
                OrderPort::Session => return Ok(Verdict::OrderSession),
                OrderPort::Stray => return Ok(Verdict::Foreign(Counter::OrderSegmentsDropped)),
                OrderPort::Other => {}
            }
        }
        return Ok(Verdict::Pass(Counter::PassedNotUdp));
    }
    if ipv4::is_fragment(u16::from_be_bytes(header(ctx, at(IP, ipv4::FLAGS_FRAG))?)) {
        return Ok(Verdict::Pass(Counter::PassedFragment));
    }
    if ihl != ipv4::HEADER_LEN {
        return Ok(Verdict::Pass(Counter::PassedIpOptions));
    }
    if total_len < ipv4::HEADER_LEN + udp::HEADER_LEN {
        return Err(Malformed::new(Reason::TotalUnderUdp, total, 0));
    }
    let dst_port = u16::from_be_bytes(header(ctx, at(UDP, udp::DST_PORT))?);
    let udp_len = u16::from_be_bytes(header(ctx, at(UDP, udp::LENGTH))?);
    if !udp::length_holds_header(udp_len) {
        return Err(Malformed::new(Reason::UdpLength, udp_len, 0));
    }
    let port_b = read_global(&MD_PORT_B);
    let line = if dst_port == read_global(&MD_PORT) {
        SOURCE_LINE_A
    } else if port_b != 0 && dst_port == port_b {
        SOURCE_LINE_B
    } else {
        return Ok(Verdict::Pass(Counter::PassedOtherPort));
    };
    // The feed's source before anything else about the datagram is believed.
    let src_ip = header::<4>(ctx, at(IP, ipv4::SRC))?;
    let src_port = header::<2>(ctx, at(UDP, udp::SRC_PORT))?;
    match source_check(line, src_ip, src_port) {
        Ok(false) => Ok(Verdict::MarketData(line)),
        Ok(true) => Ok(Verdict::Recovery),
        Err(Foreign::Addr) => Ok(Verdict::Foreign(Counter::ForeignSourceAddr)),
        Err(Foreign::Port) => Ok(Verdict::Foreign(Counter::ForeignSourcePort)),
    }
}

/// What a TCP segment is to the order session ([`order_session`]).
pub(crate) enum OrderPort {
    /// The live connection's: to the userspace TCP.
    Session,
    /// From the gateway's address and port (or its address, with IP options or fragmented) but
    /// not the live connection's: dropped.
    Stray,
    /// Not the gateway's (or the steering off): the kernel's.
    Other,
}

/// What a TCP segment is to the order session: with the steering on, one from the order
/// gateway's address and port to ours is the session's only if it is the live connection's
/// exactly (our local port as the trader wrote it at its connect, from the gateway's next hop's
/// MAC to ours, no IP options, not a fragment); any other from there is a stray, dropped, never the trader's
/// kernel's to answer (it has no socket for it). A segment from the gateway's address with IP
/// options or fragmented is a stray whatever its port: the gateway's TCP sends neither, and
/// its port can't be read at a fixed place. Anything else TCP goes to the kernel as before.
#[inline(always)]
pub(crate) fn order_session(ctx: &XdpContext, ihl: usize) -> Result<OrderPort, Malformed> {
    if read_global(&ORDER_TCP) == 0 {
        return Ok(OrderPort::Other);
    }
    let src = header::<4>(ctx, at(IP, ipv4::SRC))?;
    let dst = header::<4>(ctx, at(IP, ipv4::DST))?;
    if src != read_global(&ORDER_DST_IP) || dst != read_global(&ORDER_SRC_IP) {
        return Ok(OrderPort::Other);
    }
    let fragment = ipv4::is_fragment(u16::from_be_bytes(header(ctx, at(IP, ipv4::FLAGS_FRAG))?));
    if ihl != ipv4::HEADER_LEN || fragment {
        return Ok(OrderPort::Stray);
    }
    if header::<2>(ctx, at(UDP, tcp::SRC_PORT))? != read_global(&ORDER_DST_PORT) {
        return Ok(OrderPort::Other);
    }
    let local = u16::from_be_bytes(header::<2>(ctx, at(UDP, tcp::DST_PORT))?);
    let live = ORDER_PORT.get(0).copied().unwrap_or(0);
    let from = header::<6>(ctx, ethernet::SRC)?;
    let to = header::<6>(ctx, ethernet::DST)?;
    if live == 0
        || u32::from(local) != live
        || from != read_global(&ORDER_DST_MAC)
        || to != read_global(&ORDER_SRC_MAC)
    {
        return Ok(OrderPort::Stray);
    }
    Ok(OrderPort::Session)
}

/// Whether a datagram to `line`'s port from `addr`:`port` comes from that line's pinned source
/// (or any, while none is pinned) or from the re-request server.
#[inline(always)]
/// `Ok(true)`: the re-request server's (an answer: never the trigger's to fire on).
pub(crate) fn source_check(line: u32, addr: [u8; 4], port: [u8; 2]) -> Result<bool, Foreign> {
    let Some(pinned) = SOURCES_MAP.get(line) else {
        return Ok(false);
    };
    let why = match pinned.check(addr, port) {
        Ok(()) => return Ok(false),
        Err(why) => why,
    };
    match SOURCES_MAP.get(SOURCE_RECOVERY) {
        Some(server) if server.set != 0 && server.check(addr, port).is_ok() => Ok(true),
        _ => Err(why),
    }
}

/// Whether the feed's line A source is pinned: until it is, the trigger's first-arrival mark
/// doesn't move (nothing is armed before the trader has confirmed its feed either).
#[inline(always)]
pub(crate) fn source_pinned() -> bool {
    SOURCES_MAP.get(SOURCE_LINE_A).is_some_and(|s| s.set != 0)
}
