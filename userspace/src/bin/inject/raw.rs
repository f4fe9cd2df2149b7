//! The AF_PACKET socket: the one place this tool needs `unsafe` (libc calls with C structs).
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
        let path = format!("/sys/class/net/{iface}/ifindex");
        let ifindex: i32 = std::fs::read_to_string(&path)
            .with_context(|| format!("no interface {iface} here ({path})"))?
            .trim()
            .parse()
            .with_context(|| format!("bad ifindex in {path}"))?;
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
