//! A small, safe wrapper over xsk-rs: one UMEM, one AF_XDP socket, its four rings.
//!
//! The UMEM's frames are split once, at creation, into an RX pool (always owned by the fill
//! ring, the RX ring, a [`XskRx::recv`] call in progress, or the list of frames waiting for
//! room on the fill ring) and a TX pool (owned by
//! [`XskTx`]'s free list, the TX ring, or the completion ring). A frame never moves between
//! pools and every descriptor comes from this UMEM: those are the two invariants xsk-rs's
//! `unsafe` functions ask of the caller, and this module is the only place that calls them.
//!
//! Nothing here allocates after [`Xsk::new`]: the scratch descriptor arrays are sized up front.
use std::{io, num::NonZeroU32, os::fd::RawFd};

use xsk_rs::{
    CompQueue, FillQueue, FrameDesc, RxQueue, Socket, TxQueue, Umem,
    config::{
        BindFlags, FrameSize, Interface, LibxdpFlags, QueueSize, SocketConfig, UmemConfig, XdpFlags,
    },
};

/// Errors creating the socket.
#[derive(Debug, thiserror::Error)]
pub enum XskError {
    /// A ring or frame size the kernel won't take (sizes must be powers of two).
    #[error("invalid AF_XDP configuration: {0}")]
    Config(String),
    /// The UMEM could not be created (mmap, or `XDP_UMEM_REG`).
    #[error("failed to create the UMEM ({frames} frames of {frame_size} B{huge}): {source}", huge = if *.huge_pages { ", huge pages" } else { "" })]
    Umem {
        /// Frames asked for.
        frames: u32,
        /// Bytes per frame.
        frame_size: u32,
        /// Whether 2 MiB pages were asked for.
        huge_pages: bool,
        /// What xsk-rs reported.
        source: xsk_rs::umem::UmemCreateError,
    },
    /// The socket could not be created or bound.
    #[error("failed to create an AF_XDP socket on {iface} queue {queue}: {source}{hint}")]
    Socket {
        /// The interface.
        iface: String,
        /// The queue.
        queue: u32,
        /// What xsk-rs reported.
        source: xsk_rs::socket::SocketCreateError,
        /// What to try.
        hint: &'static str,
    },
}

/// How to build the socket, checked when built ([`XskConfig::builder`], xsk-rs's style): a
/// config that exists is one the kernel takes, so [`Xsk::new`] fails only on what the machine
/// says (memory, the interface, privileges).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XskConfig {
    frames: u32,
    frame_size: u32,
    ring_size: u32,
    need_wakeup: bool,
    huge_pages: bool,
    force_copy: bool,
}

impl Default for XskConfig {
    /// 4096 frames of 2048 B, rings of 2048, need-wakeup on, no huge pages, the mode the
    /// driver picks.
    fn default() -> Self {
        Self {
            frames: 4096,
            frame_size: 2048,
            ring_size: 2048,
            need_wakeup: true,
            huge_pages: false,
            force_copy: false,
        }
    }
}

impl XskConfig {
    /// A builder from the defaults.
    pub fn builder() -> XskConfigBuilder {
        XskConfigBuilder(XskConfig::default())
    }

    /// Frames in the UMEM; half receive, half transmit.
    pub fn frames(&self) -> u32 {
        self.frames
    }

    /// Bytes per frame.
    pub fn frame_size(&self) -> u32 {
        self.frame_size
    }

    /// Entries in each of the RX, TX, fill and completion rings.
    pub fn ring_size(&self) -> u32 {
        self.ring_size
    }

    /// Bound with `XDP_USE_NEED_WAKEUP`.
    pub fn need_wakeup(&self) -> bool {
        self.need_wakeup
    }

    /// The UMEM on 2 MiB huge pages.
    pub fn huge_pages(&self) -> bool {
        self.huge_pages
    }
}

/// Builds an [`XskConfig`]; [`XskConfigBuilder::build`] checks it.
#[derive(Clone, Copy, Debug)]
pub struct XskConfigBuilder(XskConfig);

impl XskConfigBuilder {
    /// Frames in the UMEM, at least 2; half receive (which must fit the fill ring), half
    /// transmit.
    pub fn frames(mut self, n: u32) -> Self {
        self.0.frames = n;
        self
    }

    /// Bytes per frame: a power of two from 2048 to the page size (4096), as the kernel takes.
    pub fn frame_size(mut self, n: u32) -> Self {
        self.0.frame_size = n;
        self
    }

    /// Entries in each of the RX, TX, fill and completion rings: a power of two.
    pub fn ring_size(mut self, n: u32) -> Self {
        self.0.ring_size = n;
        self
    }

    /// Bind with `XDP_USE_NEED_WAKEUP`: the kernel tells us when it needs a syscall to go on,
    /// instead of us making one every time.
    pub fn need_wakeup(mut self, on: bool) -> Self {
        self.0.need_wakeup = on;
        self
    }

    /// Back the UMEM with 2 MiB huge pages (fewer TLB misses; needs reserved huge pages).
    pub fn huge_pages(mut self, on: bool) -> Self {
        self.0.huge_pages = on;
        self
    }

    /// Force copy mode (veth has no zero-copy; a real NIC may).
    pub fn force_copy(mut self, on: bool) -> Self {
        self.0.force_copy = on;
        self
    }

    /// The config, or what is wrong with it.
    pub fn build(self) -> Result<XskConfig, XskError> {
        let c = self.0;
        let bad = |why: String| Err(XskError::Config(why));
        if !c.frame_size.is_power_of_two() || !(2048..=4096).contains(&c.frame_size) {
            return bad(format!(
                "a frame of {} B: frames are a power of two from 2048 to 4096 B",
                c.frame_size
            ));
        }
        if !c.ring_size.is_power_of_two() {
            return bad(format!(
                "a ring of {}: ring sizes are powers of two",
                c.ring_size
            ));
        }
        if c.frames < 2 {
            return bad(format!(
                "{} frames: need at least 2 (one to receive, one to send)",
                c.frames
            ));
        }
        if c.frames / 2 > c.ring_size {
            return bad(format!(
                "{} RX frames don't fit a fill ring of {}: at most {} frames",
                c.frames / 2,
                c.ring_size,
                2 * u64::from(c.ring_size)
            ));
        }
        Ok(c)
    }
}

/// An AF_XDP socket bound to one queue of one interface, with its UMEM, split into a receive
/// half and a transmit half so a loop can hold both at once.
#[derive(Debug)]
pub struct Xsk {
    /// The receive half: RX and fill rings.
    pub rx: XskRx,
    /// The transmit half: TX and completion rings.
    pub tx: XskTx,
    fd: RawFd,
}

/// Receive half of an [`Xsk`].
#[derive(Debug)]
pub struct XskRx {
    umem: Umem,
    rx: RxQueue,
    fq: FillQueue,
    scratch: Vec<FrameDesc>,
    refill: Refill,
    need_wakeup: bool,
}

/// Transmit half of an [`Xsk`].
#[derive(Debug)]
pub struct XskTx {
    umem: Umem,
    tx: TxQueue,
    cq: CompQueue,
    free: Vec<FrameDesc>,
    scratch: Vec<FrameDesc>,
    tx_frames: usize,
    ring_size: u32,
    /// Every flush needs a `sendto`: copy mode (the kernel transmits only inside it), or a
    /// socket bound without XDP_USE_NEED_WAKEUP (the ring never says when one is needed).
    kick_always: bool,
    /// Copy mode: a `sendto` transmits at most [`COPY_MODE_TX_BATCH`] frames, synchronously.
    copy_mode: bool,
}

/// Frames one `sendto` transmits in copy mode (the kernel's `TX_BATCH_SIZE`, net/xdp/xsk.c).
const COPY_MODE_TX_BATCH: u32 = 32;

/// Why a frame was not put on the TX ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxError {
    /// Every TX frame is in flight: kick, reclaim (the next send does) and retry.
    #[error("no free TX frame (all {0} in flight)")]
    Full(usize),
    /// The builder wrote nothing (the message didn't fit a frame); nothing was queued.
    #[error("the frame builder produced no frame")]
    Build,
}

impl Xsk {
    /// Creates the UMEM and binds a socket to `iface`/`queue`, in the calling thread's network
    /// namespace. The fill ring is filled before this returns, so frames can arrive at once;
    /// the socket still has to be put into the XDP program's XSKMAP to get any.
    pub fn new(iface: &str, queue: u32, config: XskConfig) -> Result<Xsk, XskError> {
        let XskConfig {
            frames,
            frame_size,
            ring_size,
            need_wakeup,
            huge_pages,
            force_copy,
        } = config;
        let bad = |e: &dyn std::fmt::Display| XskError::Config(e.to_string());
        let ring = QueueSize::new(ring_size).map_err(|e| bad(&e))?;
        let umem_config = UmemConfig::builder()
            .frame_size(FrameSize::new(frame_size).map_err(|e| bad(&e))?)
            .fill_queue_size(ring)
            .comp_queue_size(ring)
            .build()
            .map_err(|e| bad(&e))?;
        // Checked when the config was built: at least 2 frames, half of them fit the fill ring.
        let frame_count = NonZeroU32::new(frames)
            .ok_or_else(|| XskError::Config(format!("need at least 2 frames, got {frames}")))?;
        let half = (frames / 2) as usize;
        let (umem, mut descs) =
            Umem::new(umem_config, frame_count, huge_pages).map_err(|source| XskError::Umem {
                frames,
                frame_size,
                huge_pages,
                source,
            })?;
        let mut bind = if force_copy {
            BindFlags::XDP_COPY
        } else {
            BindFlags::empty()
        };
        if need_wakeup {
            bind |= BindFlags::XDP_USE_NEED_WAKEUP;
        }
        let socket_config = SocketConfig::builder()
            .rx_queue_size(ring)
            .tx_queue_size(ring)
            // Our own XDP program is attached separately; without this libxdp loads its own.
            .libxdp_flags(LibxdpFlags::XSK_LIBXDP_FLAGS_INHIBIT_PROG_LOAD)
            .xdp_flags(XdpFlags::empty())
            .bind_flags(bind)
            .build();
        let if_name: Interface = iface
            .parse()
            .map_err(|_| XskError::Config(format!("interface name {iface:?} contains NUL")))?;
        // SAFETY: no other socket of ours is bound to this interface and queue: the UMEM was
        // made just above and is used by this socket alone.
        let (tx, rx, fq_cq) = unsafe { Socket::new(socket_config, &umem, &if_name, queue) }
            .map_err(|source| {
                let hint = socket_hint(&source);
                XskError::Socket {
                    iface: iface.to_owned(),
                    queue,
                    source,
                    hint,
                }
            })?;
        let (mut fq, cq) = fq_cq.ok_or_else(|| {
            XskError::Config("socket came without fill/completion rings".to_owned())
        })?;
        let tx_frames = descs.split_off(half);
        let rx_frames = descs;
        // SAFETY: these descriptors are this UMEM's RX pool, owned by nobody else yet.
        let filled = unsafe { fq.produce(&rx_frames) };
        if filled != rx_frames.len() {
            return Err(XskError::Config(format!(
                "fill ring took {filled} of {} frames",
                rx_frames.len()
            )));
        }
        let raw = {
            use std::os::fd::AsRawFd;
            rx.fd().as_raw_fd()
        };
        let copy_mode = !zero_copy(raw)?;
        let batch_scratch = vec![FrameDesc::default(); ring_size as usize];
        Ok(Xsk {
            rx: XskRx {
                umem: umem.clone(),
                rx,
                fq,
                scratch: batch_scratch.clone(),
                refill: Refill::with_capacity(half),
                need_wakeup,
            },
            tx: XskTx {
                umem,
                tx,
                cq,
                free: tx_frames,
                scratch: batch_scratch,
                tx_frames: frames as usize - half,
                ring_size,
                kick_always: copy_mode || !need_wakeup,
                copy_mode,
            },
            fd: raw,
        })
    }

    /// The socket's file descriptor, for `XskMap::set`.
    pub fn raw_fd(&self) -> RawFd {
        self.fd
    }

    /// The kernel's counters for this socket (drops for a full RX ring or an empty fill ring,
    /// invalid descriptors), and how often the fill ring made us wait.
    pub fn statistics(&self) -> io::Result<XskStats> {
        let s = self.rx.rx.fd().xdp_statistics()?;
        Ok(XskStats {
            rx_dropped: s.rx_dropped(),
            rx_invalid_descs: s.rx_invalid_descs(),
            rx_ring_full: s.rx_ring_full(),
            rx_fill_ring_empty: s.rx_fill_ring_empty_descs(),
            tx_invalid_descs: s.tx_invalid_descs(),
            tx_ring_empty: s.tx_ring_empty_descs(),
            rx_fill_deferred: self.rx.refill_deferred(),
        })
    }
}

pub use results::XskStats;

/// Blocks in `poll()` until one of `xsks` has a frame on its RX ring or `timeout_ms` passes
/// (the sockets of every queue a trader serves).
pub fn wait_any(xsks: &[Xsk], timeout_ms: i32) -> io::Result<()> {
    wait_any_or(xsks, None, timeout_ms)
}

/// [`wait_any`], also woken when `other` is readable (the trigger's ring of fired orders).
pub fn wait_any_or(
    xsks: &[Xsk],
    other: Option<std::os::fd::BorrowedFd<'_>>,
    timeout_ms: i32,
) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    // On the stack: a blocking turn allocates nothing. One trader serves at most MAX_QUEUES.
    const MAX: usize = xdp_common::MAX_QUEUES as usize;
    let mut fds = [libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    }; MAX + 1];
    let mut n = xsks.len().min(MAX);
    for (slot, x) in fds.iter_mut().zip(xsks) {
        *slot = libc::pollfd {
            fd: x.fd,
            events: libc::POLLIN,
            revents: 0,
        };
    }
    if let Some(fd) = other {
        fds[n] = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        n += 1;
    }
    // SAFETY: `fds` holds at least `n` valid pollfd entries for the duration of the call; the
    // descriptors are the sockets' own, open while `xsks` is borrowed, and `other`, borrowed
    // for the call.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), n as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// Field by field, the sum of the statistics of several sockets.
pub fn sum_stats(all: impl IntoIterator<Item = XskStats>) -> XskStats {
    all.into_iter().fold(XskStats::default(), |a, s| XskStats {
        rx_dropped: a.rx_dropped + s.rx_dropped,
        rx_invalid_descs: a.rx_invalid_descs + s.rx_invalid_descs,
        rx_ring_full: a.rx_ring_full + s.rx_ring_full,
        rx_fill_ring_empty: a.rx_fill_ring_empty + s.rx_fill_ring_empty,
        tx_invalid_descs: a.tx_invalid_descs + s.tx_invalid_descs,
        tx_ring_empty: a.tx_ring_empty + s.tx_ring_empty,
        rx_fill_deferred: a.rx_fill_deferred + s.rx_fill_deferred,
    })
}

/// Whether the socket `fd` was bound in zero-copy mode (`XDP_OPTIONS`); a bind without
/// `XDP_COPY` on a driver without zero-copy falls back to copy mode silently.
fn zero_copy(fd: RawFd) -> Result<bool, XskError> {
    let mut opts = libc::xdp_options { flags: 0 };
    let mut len = std::mem::size_of::<libc::xdp_options>() as libc::socklen_t;
    // SAFETY: `opts` and `len` are valid for writes of the size given; the kernel writes at
    // most `len` bytes and updates `len`.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_XDP,
            libc::XDP_OPTIONS,
            (&raw mut opts).cast(),
            &raw mut len,
        )
    };
    if r != 0 {
        return Err(XskError::Config(format!(
            "getsockopt(XDP_OPTIONS): {}",
            io::Error::last_os_error()
        )));
    }
    Ok(opts.flags & libc::XDP_OPTIONS_ZEROCOPY != 0)
}

fn socket_hint(e: &xsk_rs::socket::SocketCreateError) -> &'static str {
    use std::error::Error as _;
    let errno = e
        .source()
        .and_then(|s| s.downcast_ref::<io::Error>())
        .and_then(io::Error::raw_os_error);
    match errno {
        Some(libc::EAFNOSUPPORT) => {
            " (this kernel has no AF_XDP sockets: it needs CONFIG_XDP_SOCKETS=y)"
        }
        Some(libc::EPERM) => " (needs CAP_NET_RAW and CAP_BPF or CAP_SYS_ADMIN: run as root)",
        Some(libc::ENODEV) => " (no such interface in this network namespace; is the lab up?)",
        Some(libc::EBUSY) => " (another AF_XDP socket is bound to this queue)",
        Some(libc::EOPNOTSUPP) => " (the driver can't do this bind mode: try copy mode)",
        Some(libc::EINVAL) => " (queue id out of range for this interface?)",
        _ => "",
    }
}

impl XskRx {
    /// Takes up to `max` frames from the RX ring, hands each frame's bytes to `f`, and gives the
    /// frames back to the fill ring (or, if it has no room yet, keeps them and gives them back
    /// on a later call). Never blocks; returns how many frames it handled.
    #[inline]
    pub fn recv(&mut self, max: usize, mut f: impl FnMut(&[u8])) -> usize {
        let max = max.min(self.scratch.len());
        // SAFETY: the scratch descriptors are overwritten with ones the kernel filled from this
        // UMEM's RX pool; none of them is in the fill ring while we hold it.
        let n = unsafe { self.rx.consume(&mut self.scratch[..max]) };
        if n == 0 {
            // Frames kept from an earlier call go back now, not only when traffic comes: the
            // kernel may be waiting for exactly them.
            self.refill.retry_pending(&mut self.fq);
            if self.need_wakeup && self.fq.needs_wakeup() {
                // The kernel ran out of fill entries at some point and wants a poke.
                let _ = self.fq.wakeup(self.rx.fd_mut(), 0);
            }
            return 0;
        }
        for desc in &self.scratch[..n] {
            // SAFETY: `desc` came from this UMEM's RX ring and is not in any ring now.
            let data = unsafe { self.umem.data(desc) };
            f(data.contents());
        }
        // The kernel publishes the fill ring's consumer index just after the RX producer index
        // (xsk_flush), so a reader on another core can see a frame before the fill ring shows
        // the room that frame left: whatever the ring refuses now is kept and given back later.
        // SAFETY: the first `n` scratch descriptors were consumed from this UMEM's RX ring
        // above and put in no ring since; `f` saw only their bytes.
        unsafe { self.refill.give_back(&mut self.fq, &self.scratch[..n]) };
        if self.need_wakeup && self.fq.needs_wakeup() {
            let _ = self.fq.wakeup(self.rx.fd_mut(), 0);
        }
        n
    }

    /// Times the fill ring had no room for frames just received, so they were kept and given
    /// back on a later call. Nothing is lost either way; a count that grows fast means the
    /// kernel is slow to publish what it took.
    pub fn refill_deferred(&self) -> u64 {
        self.refill.deferred
    }

    /// Blocks in `poll()` until the RX ring has something or `timeout_ms` passes.
    pub fn wait(&mut self, timeout_ms: i32) -> io::Result<bool> {
        self.rx.poll(timeout_ms)
    }
}

/// Where RX frames go back to the kernel: the fill ring, or a test double.
trait FillRing {
    /// Puts all of `descs` on the ring, or none of them; returns how many went on.
    ///
    /// # Safety
    /// Every descriptor is from this socket's UMEM RX pool and in no ring.
    unsafe fn produce_all(&mut self, descs: &[FrameDesc]) -> usize;
}

impl FillRing for FillQueue {
    unsafe fn produce_all(&mut self, descs: &[FrameDesc]) -> usize {
        // SAFETY: passed on from the caller. xsk-rs reserves all of `descs` or nothing.
        unsafe { self.produce(descs) }
    }
}

/// RX frames on their way back to the fill ring. A frame the ring can't take yet waits in
/// `pending` (sized for the whole RX pool, so it never allocates) and goes first next time.
#[derive(Debug)]
struct Refill {
    pending: Vec<FrameDesc>,
    deferred: u64,
}

impl Refill {
    fn with_capacity(rx_frames: usize) -> Refill {
        Refill {
            pending: Vec::with_capacity(rx_frames),
            deferred: 0,
        }
    }

    /// Gives `descs` (after any frames still pending) back to `ring`, keeping what it refuses.
    ///
    /// # Safety
    /// Every descriptor in `descs` was consumed from the RX ring of the UMEM that `ring` fills,
    /// and is in no ring now: from here on this list or the ring owns it.
    unsafe fn give_back(&mut self, ring: &mut impl FillRing, descs: &[FrameDesc]) {
        self.retry_pending(ring);
        // SAFETY: passed on from the caller.
        if self.pending.is_empty() && unsafe { ring.produce_all(descs) } == descs.len() {
            return;
        }
        // Order doesn't matter to the kernel; capacity is the RX pool, so no allocation.
        debug_assert!(self.pending.len() + descs.len() <= self.pending.capacity());
        self.pending.extend_from_slice(descs);
        self.deferred += 1;
    }

    /// Gives the pending frames back, if the ring has room for all of them now.
    fn retry_pending(&mut self, ring: &mut impl FillRing) {
        if self.pending.is_empty() {
            return;
        }
        // SAFETY: pending frames came to `give_back` from the RX ring (its contract) and have
        // been in no ring since.
        if unsafe { ring.produce_all(&self.pending) } == self.pending.len() {
            self.pending.clear();
        }
    }
}

impl XskTx {
    /// Builds one frame with `build` (which writes into the frame and returns its length, or
    /// `None` to send nothing) and puts it on the TX ring. Nothing is sent until
    /// [`XskTx::kick`].
    #[inline]
    pub fn send(&mut self, build: impl FnOnce(&mut [u8]) -> Option<usize>) -> Result<(), TxError> {
        if self.free.is_empty() {
            self.reclaim();
        }
        let Some(mut desc) = self.free.pop() else {
            return Err(TxError::Full(self.tx_frames));
        };
        {
            // SAFETY: `desc` is from this UMEM's TX pool and in no ring (it was on our free list).
            let mut data = unsafe { self.umem.data_mut(&mut desc) };
            let mut cursor = data.cursor();
            let cap = cursor.buf_len();
            cursor.set_pos(cap);
            let len = build(data.contents_mut())
                .filter(|&n| n > 0)
                .map(|n| n.min(cap));
            let Some(len) = len else {
                data.cursor().set_pos(0);
                self.free.push(desc);
                return Err(TxError::Build);
            };
            data.cursor().set_pos(len);
        }
        // SAFETY: `desc` is ours, written above, and goes on the TX ring once; it comes back
        // through the completion ring.
        if unsafe { self.tx.produce_one(&desc) } == 1 {
            Ok(())
        } else {
            self.free.push(desc);
            Err(TxError::Full(self.tx_frames))
        }
    }

    /// Tells the kernel to send what is on the TX ring. Copy mode (veth, or any driver without
    /// zero-copy) sends nothing without this `sendto`, whatever `needs_wakeup` says.
    #[inline]
    pub fn kick(&mut self) -> io::Result<()> {
        self.tx.wakeup()
    }

    /// Gets what is on the TX ring sent, with as few `sendto`s as that takes. Zero-copy with
    /// need_wakeup: one, and only when the ring says the kernel needs it. Copy mode (or no
    /// need_wakeup): one, then more only while frames remain on the ring, since one `sendto`
    /// sends at most 32 (the kernel's TX_BATCH_SIZE); bounded so a stuck device can't hang
    /// the loop.
    #[inline]
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.kick_always && !self.tx.needs_wakeup() {
            return Ok(());
        }
        self.kick()?;
        if !self.copy_mode {
            // The driver sends asynchronously: frames still on the ring are on their way.
            return Ok(());
        }
        let max_kicks = self.ring_size / COPY_MODE_TX_BATCH + 2;
        let mut kicks = 1;
        while self.tx.nb_free_exact() < self.ring_size && kicks < max_kicks {
            self.kick()?;
            kicks += 1;
        }
        Ok(())
    }

    /// Moves completed TX frames back to the free list.
    #[inline]
    pub fn reclaim(&mut self) -> usize {
        // SAFETY: the completion ring only returns descriptors we put on the TX ring.
        let n = unsafe { self.cq.consume(&mut self.scratch) };
        self.free.extend_from_slice(&self.scratch[..n]);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config the kernel would refuse can't be built, each refusal says why, and a good one
    /// keeps what was asked.
    #[test]
    fn a_config_is_checked_when_built() {
        let err = |b: XskConfigBuilder| b.build().unwrap_err().to_string();
        assert!(err(XskConfig::builder().frame_size(3000)).contains("power of two"));
        assert!(err(XskConfig::builder().frame_size(1024)).contains("2048 to 4096"));
        assert!(err(XskConfig::builder().frame_size(8192)).contains("2048 to 4096"));
        assert!(err(XskConfig::builder().ring_size(1000)).contains("ring of 1000"));
        assert!(err(XskConfig::builder().frames(1)).contains("at least 2"));
        let e = err(XskConfig::builder().frames(8192).ring_size(2048));
        assert!(
            e.contains("4096 RX frames") && e.contains("at most 4096"),
            "{e}"
        );
        let c = XskConfig::builder()
            .frames(16384)
            .ring_size(8192)
            .frame_size(4096)
            .need_wakeup(false)
            .huge_pages(true)
            .build()
            .unwrap();
        assert_eq!(
            (
                c.frames(),
                c.ring_size(),
                c.frame_size(),
                c.need_wakeup(),
                c.huge_pages()
            ),
            (16384, 8192, 4096, false, true)
        );
        assert_eq!(XskConfig::builder().build().unwrap(), XskConfig::default());
    }

    /// A fill ring with a settable amount of room, all-or-nothing like the real one.
    struct FakeRing {
        room: usize,
        taken: usize,
    }

    impl FillRing for FakeRing {
        unsafe fn produce_all(&mut self, descs: &[FrameDesc]) -> usize {
            if descs.len() > self.room {
                return 0;
            }
            self.room -= descs.len();
            self.taken += descs.len();
            descs.len()
        }
    }

    #[test]
    fn frames_the_fill_ring_refuses_are_given_back_later() {
        let frames = vec![FrameDesc::default(); 8];
        let mut refill = Refill::with_capacity(16);
        let mut ring = FakeRing { room: 0, taken: 0 };
        let capacity = refill.pending.capacity();
        let give_back = |refill: &mut Refill, ring: &mut FakeRing, n: usize| {
            // SAFETY: a fake ring; the descriptors point nowhere and are never read.
            unsafe { refill.give_back(ring, &frames[..n]) }
        };

        // The kernel hasn't published the room yet: nothing goes on, nothing is lost.
        give_back(&mut refill, &mut ring, 3);
        assert_eq!(
            (ring.taken, refill.pending.len(), refill.deferred),
            (0, 3, 1)
        );
        give_back(&mut refill, &mut ring, 2);
        assert_eq!(
            (ring.taken, refill.pending.len(), refill.deferred),
            (0, 5, 2)
        );

        // Room for the pending frames but not the new ones: the pending go first.
        ring.room = 5;
        give_back(&mut refill, &mut ring, 4);
        assert_eq!(
            (ring.taken, refill.pending.len(), refill.deferred),
            (5, 4, 3)
        );

        // No traffic: a retry alone hands the pending frames over once there is room.
        refill.retry_pending(&mut ring);
        assert_eq!((ring.taken, refill.pending.len()), (5, 4), "still no room");
        ring.room = 100;
        refill.retry_pending(&mut ring);
        assert_eq!(
            (ring.taken, refill.pending.len(), refill.deferred),
            (9, 0, 3)
        );

        // Room for everything: the ring ends up with every frame it was handed.
        give_back(&mut refill, &mut ring, 1);
        assert_eq!(
            (ring.taken, refill.pending.len(), refill.deferred),
            (10, 0, 3)
        );
        assert_eq!(refill.pending.capacity(), capacity, "no allocation");
    }
}
