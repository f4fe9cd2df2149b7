//! The feed's sources checked in the kernel, before a datagram fills the UDP socket's receive
//! buffer: a classic BPF socket filter (`SO_ATTACH_FILTER`) that keeps only datagrams from
//! the pinned sources (each line's, and the re-request server's), on the kernel UDP paths.
//!
//! The loop's check ([`crate::sources`]) still runs on everything the socket hands it; the
//! filter is what keeps a stranger's flood from costing real ticks: without it, every forged
//! datagram takes room in the buffer, and once it is full the kernel drops the feed's with the
//! lies. With it, the kernel drops a stranger's datagram at the socket (counted in the
//! socket's drops, `SO_MEMINFO`, and the host's `Udp: InErrors`) and the buffer stays the
//! feed's. A UDP socket filter runs with the packet at its UDP header: the source port is at
//! offset 0, the IPv4 source address at the network header's offset 12 (`SKF_NET_OFF`).
//!
//! Not needed on the AF_XDP paths: their XDP program drops strangers in the driver.
use std::{io, net::SocketAddrV4, os::fd::AsRawFd};

use crate::sources::FeedSource;

/// Classic BPF: load a word / a half-word from an absolute offset, compare, return.
const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const LD_H_ABS: u16 = (libc::BPF_LD | libc::BPF_H | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// The network header's offset in a socket filter's loads (`SKF_NET_OFF`, linux/filter.h).
const SKF_NET_OFF: i32 = -0x10_0000;

/// The most sources one filter takes (each line's, the re-request server's).
pub const MAX_SOURCES: usize = 4;

/// One classic BPF instruction.
fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The filter keeping only datagrams from `sources` (an address, and its port if named):
/// for each, the source address compared, then the port; anything that matches none is cut
/// to nothing (dropped).
pub fn program(sources: &[FeedSource]) -> Vec<libc::sock_filter> {
    let mut p = Vec::with_capacity(sources.len() * 5 + 1);
    for s in sources {
        // This source's block: [ld addr, jeq addr, (ld port, jeq port), accept].
        let len: u8 = if s.port.is_some() { 5 } else { 3 };
        p.push(insn(LD_W_ABS, 0, 0, (SKF_NET_OFF + 12) as u32));
        p.push(insn(JEQ_K, 0, len - 2, u32::from(s.ip)));
        if let Some(port) = s.port {
            p.push(insn(LD_H_ABS, 0, 0, 0));
            p.push(insn(JEQ_K, 0, 1, u32::from(port)));
        }
        p.push(insn(RET_K, 0, 0, u32::MAX));
    }
    p.push(insn(RET_K, 0, 0, 0));
    p
}

/// Attaches the filter keeping only `sources` (at most [`MAX_SOURCES`]) to `sock`, replacing
/// any it had.
pub fn attach(sock: &impl AsRawFd, sources: &[FeedSource]) -> io::Result<()> {
    if sources.is_empty() || sources.len() > MAX_SOURCES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a socket filter takes 1-{MAX_SOURCES} sources, not {}",
                sources.len()
            ),
        ));
    }
    afxdp::sockopt::attach_filter(sock.as_raw_fd(), &program(sources)).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("attaching the feed's source filter (SO_ATTACH_FILTER): {e}"),
        )
    })
}

/// The datagrams the kernel dropped at `sock` so far (`SO_MEMINFO`: the filter's, and a full
/// receive buffer's).
pub fn drops(sock: &impl AsRawFd) -> io::Result<u32> {
    afxdp::sockopt::socket_drops(sock.as_raw_fd())
}

/// The sources a line's socket keeps: its own, and the re-request server's (its answers come
/// to the same socket).
pub fn keep(line: FeedSource, server: Option<SocketAddrV4>) -> Vec<FeedSource> {
    let mut v = vec![line];
    v.extend(server.map(FeedSource::exactly));
    v
}

#[cfg(test)]
mod tests {
    use std::{
        net::{Ipv4Addr, UdpSocket},
        time::Duration,
    };

    use super::*;

    fn socket(ip: [u8; 4]) -> UdpSocket {
        UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::from(ip), 0)).unwrap()
    }

    fn v4(s: &UdpSocket) -> SocketAddrV4 {
        match s.local_addr().unwrap() {
            std::net::SocketAddr::V4(a) => a,
            other => panic!("{other}"),
        }
    }

    /// Every datagram `rx` receives within a short wait, by sender.
    fn received(rx: &UdpSocket) -> Vec<SocketAddrV4> {
        rx.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut buf = [0u8; 64];
        let mut got = Vec::new();
        while let Ok((_, std::net::SocketAddr::V4(from))) = rx.recv_from(&mut buf) {
            got.push(from);
        }
        got
    }

    /// On loopback, through the real kernel: the feed's exact source and the re-request
    /// server pass; the feed's address from another port, another address, and another
    /// address at the feed's port are dropped at the socket and counted in its drops. An
    /// address-only source takes any port of it.
    #[test]
    fn the_socket_keeps_only_the_pinned_sources() {
        let rx = socket([127, 0, 0, 1]);
        let feed = socket([127, 0, 0, 1]);
        let server = socket([127, 0, 0, 1]);
        let other_port = socket([127, 0, 0, 1]);
        let other_addr = socket([127, 0, 0, 2]);
        attach(
            &rx,
            &keep(FeedSource::exactly(v4(&feed)), Some(v4(&server))),
        )
        .unwrap();
        let to = v4(&rx);
        for s in [&feed, &other_port, &other_addr, &server, &feed] {
            s.send_to(b"x", to).unwrap();
        }
        assert_eq!(received(&rx), vec![v4(&feed), v4(&server), v4(&feed)]);
        assert_eq!(drops(&rx).unwrap(), 2, "the two strangers, counted");
        // The feed's address, any port: the other port passes, the other address doesn't.
        let any_port = FeedSource {
            ip: *v4(&feed).ip(),
            port: None,
        };
        attach(&rx, &[any_port]).unwrap();
        for s in [&other_port, &other_addr] {
            s.send_to(b"x", to).unwrap();
        }
        assert_eq!(received(&rx), vec![v4(&other_port)]);
        assert_eq!(drops(&rx).unwrap(), 3);
        assert!(
            attach(&rx, &[]).is_err(),
            "a filter that keeps nothing is refused"
        );
    }

    /// A stranger's flood into a small buffer that nobody reads: without the filter it fills
    /// the buffer and the feed's next datagram is dropped with the rest; with it, the flood
    /// is dropped at the socket and the feed's datagram is there.
    #[test]
    fn a_strangers_flood_no_longer_fills_the_feeds_buffer() {
        for filtered in [false, true] {
            let rx = socket([127, 0, 0, 1]);
            afxdp::sockopt::set_rcvbuf(rx.as_raw_fd(), 16 * 1024).unwrap();
            let (feed, stranger) = (socket([127, 0, 0, 1]), socket([127, 0, 0, 2]));
            if filtered {
                attach(&rx, &[FeedSource::exactly(v4(&feed))]).unwrap();
            }
            for _ in 0..2_000 {
                stranger.send_to(&[0u8; 256], v4(&rx)).unwrap();
            }
            feed.send_to(b"tick", v4(&rx)).unwrap();
            let got = received(&rx);
            assert_eq!(
                got.contains(&v4(&feed)),
                filtered,
                "filtered: {filtered}: {} datagrams",
                got.len()
            );
            assert!(drops(&rx).unwrap() >= 1_000, "filtered: {filtered}");
        }
    }
}
