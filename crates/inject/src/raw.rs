//! The AF_PACKET sockets (one that sends frames, one that watches the feed): the one place
//! this tool needs `unsafe` (libc calls with C structs).
use std::{
    io,
    os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
};

use anyhow::Context as _;
use netns::Mac;

/// A raw packet socket that sends whole Ethernet frames out of one interface.
#[derive(Debug)]
pub(crate) struct PacketSocket {
    fd: OwnedFd,
    ifindex: i32,
}

impl PacketSocket {
    /// Opens the socket for `iface` (needs CAP_NET_RAW).
    pub(crate) fn open(iface: &str) -> anyhow::Result<Self> {
        let ifindex = ifindex(iface)?;
        // SAFETY: socket() takes no pointers; the result is checked before use.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
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
    pub(crate) fn send(&self, frame: &[u8], dst: Mac) -> io::Result<()> {
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_ifindex = self.ifindex;
        addr.sll_halen = 6;
        addr.sll_addr[..6].copy_from_slice(&dst.octets());
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

/// The index of `iface` in this network namespace (sysfs).
fn ifindex(iface: &str) -> anyhow::Result<i32> {
    let path = format!("/sys/class/net/{iface}/ifindex");
    std::fs::read_to_string(&path)
        .with_context(|| format!("no interface {iface} here ({path}); is the lab up?"))?
        .trim()
        .parse()
        .with_context(|| format!("bad ifindex in {path}"))
}

// Classic BPF's instructions the two filters use.
const LD_H_ABS: u16 = (libc::BPF_LD | libc::BPF_H | libc::BPF_ABS) as u16;
const LD_B_ABS: u16 = (libc::BPF_LD | libc::BPF_B | libc::BPF_ABS) as u16;
const LD_H_IND: u16 = (libc::BPF_LD | libc::BPF_H | libc::BPF_IND) as u16;
const LDX_B_MSH: u16 = (libc::BPF_LDX | libc::BPF_B | libc::BPF_MSH) as u16;
const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JSET: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// One classic BPF instruction.
const fn op(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// A classic BPF program that keeps untagged IPv4/UDP frames to `port` (not fragments) and
/// drops the rest in the kernel: what `tcpdump -dd 'ip and udp dst port PORT'` gives.
fn udp_port_filter(port: u16) -> [libc::sock_filter; 11] {
    [
        op(LD_H_ABS, 0, 0, 12),         // EtherType
        op(JEQ, 0, 8, 0x0800),          // IPv4, else drop
        op(LD_B_ABS, 0, 0, 23),         // IPv4 protocol
        op(JEQ, 0, 6, 17),              // UDP, else drop
        op(LD_H_ABS, 0, 0, 20),         // flags and fragment offset
        op(JSET, 4, 0, 0x1fff),         // a later fragment: drop
        op(LDX_B_MSH, 0, 0, 14),        // X = IPv4 header length
        op(LD_H_IND, 0, 0, 16),         // UDP destination port
        op(JEQ, 0, 1, u32::from(port)), // ours, else drop
        op(RET, 0, 0, 0x0004_0000),     // keep the whole frame
        op(RET, 0, 0, 0),               // drop
    ]
}

/// A classic BPF program that keeps untagged IPv4/TCP frames from or to `port` (not later
/// fragments) and drops the rest in the kernel: `tcpdump -dd 'ip and tcp port PORT'`.
fn tcp_port_filter(port: u16) -> [libc::sock_filter; 13] {
    let port = u32::from(port);
    [
        op(LD_H_ABS, 0, 0, 12),     // EtherType
        op(JEQ, 0, 10, 0x0800),     // IPv4, else drop
        op(LD_B_ABS, 0, 0, 23),     // IPv4 protocol
        op(JEQ, 0, 8, 6),           // TCP, else drop
        op(LD_H_ABS, 0, 0, 20),     // flags and fragment offset
        op(JSET, 6, 0, 0x1fff),     // a later fragment: drop
        op(LDX_B_MSH, 0, 0, 14),    // X = IPv4 header length
        op(LD_H_IND, 0, 0, 14),     // TCP source port
        op(JEQ, 2, 0, port),        // ours: keep
        op(LD_H_IND, 0, 0, 16),     // TCP destination port
        op(JEQ, 0, 1, port),        // ours, else drop
        op(RET, 0, 0, 0x0004_0000), // keep the whole frame
        op(RET, 0, 0, 0),           // drop
    ]
}

/// A raw packet socket that receives the frames seen on one interface, both directions (a
/// sender's own outgoing frames included), UDP to one port only, without ever blocking.
#[derive(Debug)]
pub(crate) struct Sniffer {
    fd: OwnedFd,
}

impl Sniffer {
    /// Opens the socket on `iface` for UDP to `port` (needs CAP_NET_RAW). The filter is in
    /// place before the socket is bound, so nothing else is ever queued.
    pub(crate) fn open(iface: &str, port: u16) -> anyhow::Result<Self> {
        Self::open_with(iface, &mut udp_port_filter(port))
    }

    /// [`Sniffer::open`] for TCP from or to `port` (the order session's).
    pub(crate) fn open_tcp(iface: &str, port: u16) -> anyhow::Result<Self> {
        Self::open_with(iface, &mut tcp_port_filter(port))
    }

    fn open_with(iface: &str, filter: &mut [libc::sock_filter]) -> anyhow::Result<Self> {
        let ifindex = ifindex(iface)?;
        // Protocol 0: the socket receives nothing until `bind` names the protocol below.
        // SAFETY: socket() takes no pointers; the result is checked before use.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                0,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error()).context(
                "failed to open an AF_PACKET socket to watch the feed (needs CAP_NET_RAW)",
            );
        }
        // SAFETY: `fd` is a fresh, valid descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let prog = libc::sock_fprog {
            len: filter.len() as u16,
            filter: filter.as_mut_ptr(),
        };
        // SAFETY: `prog` points at `filter`, both alive for the call, which copies the program
        // into the kernel; the length passed is `prog`'s.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ATTACH_FILTER,
                (&raw const prog).cast(),
                std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error()).context("attaching the feed filter");
        }
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        addr.sll_ifindex = ifindex;
        // SAFETY: `addr` is valid for the length passed and outlives the call, which reads it.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&raw const addr).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error())
                .with_context(|| format!("binding the feed watcher to {iface}"));
        }
        Ok(Sniffer { fd })
    }

    /// The next frame waiting, copied into `buf` (cut to its length), or `None` if none is.
    pub(crate) fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the call; no address is
        // asked for.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(n as usize))
    }
}
