//! Socket calls that std and nix have no safe form for: busy-poll options, a forced receive
//! buffer, `recvmmsg`, a classic BPF socket filter and the socket's drop count.
use anyhow::Context as _;

/// Busy polling on a socket (UDP or AF_XDP): `SO_BUSY_POLL` for `usecs`, optionally
/// `SO_PREFER_BUSY_POLL` (the kernel defers the device's interrupts to our polling) and
/// `SO_BUSY_POLL_BUDGET` packets per poll.
pub fn set_busy_poll(
    fd: std::os::fd::RawFd,
    usecs: i32,
    prefer: bool,
    budget: Option<i32>,
) -> anyhow::Result<()> {
    /// linux/asm-generic/socket.h; not in every libc crate version.
    const SO_PREFER_BUSY_POLL: libc::c_int = 69;
    const SO_BUSY_POLL_BUDGET: libc::c_int = 70;
    let set = |opt: libc::c_int, val: libc::c_int, name: &str| -> anyhow::Result<()> {
        // SAFETY: `val` is a live c_int and its exact size is passed; the kernel only reads it.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&val as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("setsockopt({name}, {val})"));
        }
        Ok(())
    };
    set(libc::SO_BUSY_POLL, usecs, "SO_BUSY_POLL")?;
    if prefer {
        set(SO_PREFER_BUSY_POLL, 1, "SO_PREFER_BUSY_POLL")?;
    }
    if let Some(b) = budget {
        set(SO_BUSY_POLL_BUDGET, b, "SO_BUSY_POLL_BUDGET")?;
    }
    Ok(())
}

/// Batched receive: up to `bufs.len()` datagrams in one `recvmmsg` call, non-blocking. Each
/// received datagram's length and source go to `out`; returns how many arrived.
pub struct MultiRecv {
    bufs: Vec<[u8; 2048]>,
    iovs: Vec<libc::iovec>,
    addrs: Vec<libc::sockaddr_in>,
    hdrs: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers inside point into the struct's own heap buffers, which move with it.
unsafe impl Send for MultiRecv {}

impl std::fmt::Debug for MultiRecv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MultiRecv({})", self.bufs.len())
    }
}

impl MultiRecv {
    /// Room for `n` datagrams per call.
    pub fn new(n: usize) -> Self {
        let n = n.max(1);
        let mut m = MultiRecv {
            bufs: vec![[0u8; 2048]; n],
            iovs: Vec::with_capacity(n),
            addrs: vec![
                // SAFETY: sockaddr_in is plain old data; all-zero is a valid value.
                unsafe { std::mem::zeroed() };
                n
            ],
            hdrs: Vec::with_capacity(n),
        };
        for i in 0..n {
            m.iovs.push(libc::iovec {
                iov_base: m.bufs[i].as_mut_ptr().cast(),
                iov_len: 2048,
            });
        }
        for i in 0..n {
            // SAFETY: mmsghdr is plain old data; all-zero is a valid value, filled in below.
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_iov = &mut m.iovs[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_name = (&mut m.addrs[i] as *mut libc::sockaddr_in).cast();
            h.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
            m.hdrs.push(h);
        }
        m
    }

    /// One non-blocking `recvmmsg`; calls `f(payload, source)` for each datagram.
    #[inline]
    pub fn recv(
        &mut self,
        fd: std::os::fd::RawFd,
        mut f: impl FnMut(&[u8], std::net::SocketAddrV4),
    ) -> std::io::Result<usize> {
        for h in &mut self.hdrs {
            h.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
        }
        // SAFETY: every header points at this struct's own live iovecs, buffers and address
        // slots, sized as declared; the kernel writes at most that much.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                self.hdrs.as_mut_ptr(),
                self.hdrs.len() as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = n as usize;
        for i in 0..n {
            let len = (self.hdrs[i].msg_len as usize).min(2048);
            let a = &self.addrs[i];
            let src = std::net::SocketAddrV4::new(
                std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            );
            f(&self.bufs[i][..len], src);
        }
        Ok(n)
    }
}

/// Sets a socket's receive buffer to `bytes`, past `net.core.rmem_max` (SO_RCVBUFFORCE needs
/// CAP_NET_ADMIN; falls back to SO_RCVBUF, which the kernel caps at rmem_max).
pub fn set_rcvbuf(fd: std::os::fd::RawFd, bytes: i32) -> anyhow::Result<()> {
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: `bytes` is a live c_int and its exact size is passed; the kernel only reads it.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&bytes as *const i32).cast(),
                std::mem::size_of::<i32>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            return Ok(());
        }
    }
    Err(std::io::Error::last_os_error()).context("setsockopt(SO_RCVBUF)")
}

/// One non-blocking read from `fd` (a UDP or TCP socket) with the kernel's `SO_TIMESTAMPNS`
/// stamp (CLOCK_REALTIME ns; for TCP, the last segment the read took), where the socket gives
/// one. `WouldBlock`: nothing there.
pub fn recv_stamped(
    fd: std::os::fd::BorrowedFd<'_>,
    buf: &mut [u8],
) -> std::io::Result<(usize, Option<u64>)> {
    use std::os::fd::AsRawFd as _;

    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
    let mut iov = [std::io::IoSliceMut::new(buf)];
    let msg = recvmsg::<()>(
        fd.as_raw_fd(),
        &mut iov,
        Some(&mut cmsg),
        MsgFlags::MSG_DONTWAIT,
    )?;
    let stamp = msg.cmsgs().ok().and_then(|mut c| {
        c.find_map(|c| match c {
            ControlMessageOwned::ScmTimestampns(ts) => Some(crate::clock::ns(&ts)),
            _ => None,
        })
    });
    Ok((msg.bytes, stamp))
}

/// Attaches the classic BPF program `code` to socket `fd` as its filter (`SO_ATTACH_FILTER`),
/// replacing any it had. The kernel checks the program and copies it.
pub fn attach_filter(fd: std::os::fd::RawFd, code: &[libc::sock_filter]) -> std::io::Result<()> {
    let len = u16::try_from(code.len()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a filter of over 65,535 instructions",
        )
    })?;
    let prog = libc::sock_fprog {
        len,
        // The kernel only reads through it.
        filter: code.as_ptr().cast_mut(),
    };
    // SAFETY: `prog` and the `code` it points at are alive for the call and their sizes exact;
    // the kernel copies the program.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&raw const prog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The datagrams the kernel dropped at socket `fd` so far (`SO_MEMINFO`'s `SK_MEMINFO_DROPS`:
/// its filter's drops, and a full receive buffer's).
pub fn socket_drops(fd: std::os::fd::RawFd) -> std::io::Result<u32> {
    /// linux/sock_diag.h: the `SO_MEMINFO` array, and where its drops are.
    const SK_MEMINFO_VARS: usize = 9;
    const SK_MEMINFO_DROPS: usize = 8;
    let info: [u32; SK_MEMINFO_VARS] = socket_option(fd, libc::SO_MEMINFO)?;
    Ok(info[SK_MEMINFO_DROPS])
}

/// The NAPI instance the kernel last delivered a packet to socket `fd` from
/// (`SO_INCOMING_NAPI_ID`; UDP and AF_XDP sockets): 0 when none has, or the device has no
/// NAPI the socket can busy-poll. What per-socket busy polling (`SO_BUSY_POLL`) polls.
pub fn incoming_napi_id(fd: std::os::fd::RawFd) -> std::io::Result<u32> {
    socket_option::<libc::c_uint>(fd, libc::SO_INCOMING_NAPI_ID)
}

/// A `SOL_SOCKET` option of socket `fd` that the kernel writes as plain integers (`T` is a
/// `u32` or an array of them: every bit pattern is a value).
fn socket_option<T: Copy + Default>(
    fd: std::os::fd::RawFd,
    name: libc::c_int,
) -> std::io::Result<T> {
    let mut value = T::default();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is writable for `len` bytes, and the kernel writes at most that.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            name,
            (&raw mut value).cast(),
            &raw mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd as _;

    /// Loopback delivers through the per-CPU backlog, not a NAPI a socket can busy-poll: the id
    /// reads 0 before a datagram and after one, and an fd that is no socket is an error.
    #[test]
    fn a_loopback_socket_has_no_napi_to_poll() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(incoming_napi_id(rx.as_raw_fd()).unwrap(), 0);
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(b"tick", rx.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(rx.recv(&mut buf).unwrap(), 4);
        assert_eq!(incoming_napi_id(rx.as_raw_fd()).unwrap(), 0);
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        assert!(incoming_napi_id(file.as_raw_fd()).is_err());
    }
}
