//! Process setup for measured loops: CPU pinning, memory locking, stop signals, the clock.
use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use anyhow::Context as _;

/// Nanoseconds on CLOCK_MONOTONIC (vDSO, ~20 ns). Every process of the lab reads the same
/// clock, so the replay's send schedule and the orders' arrival are on one time base.
#[inline]
pub fn now_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always available");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> anyhow::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu)
        .with_context(|| format!("CPU {cpu} is out of range"))?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
        .with_context(|| format!("failed to pin to CPU {cpu} (does it exist? see nproc)"))?;
    Ok(())
}

/// Locks current and future pages in memory: no page faults on the measured path.
pub fn lock_memory() -> anyhow::Result<()> {
    use nix::sys::mman::{MlockAllFlags, mlockall};
    mlockall(MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE)
        .context("mlockall failed (needs CAP_IPC_LOCK or a large enough RLIMIT_MEMLOCK)")
}

/// A flag that SIGINT and SIGTERM set; measured loops poll it (one relaxed load per turn)
/// and then finish cleanly: detach XDP, write results.
pub fn stop_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&flag))
            .context("failed to install the signal handler")?;
    }
    Ok(flag)
}

/// Fails now, before a run, if a result can't be written where asked (rather than after it).
pub fn check_writable(what: &str, path: &std::path::Path) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        anyhow::bail!(
            "{what} {}: the folder {} does not exist",
            path.display(),
            dir.display()
        );
    }
    if path.is_dir() {
        anyhow::bail!("{what} {} is a folder, not a file", path.display());
    }
    Ok(())
}

/// Runs a binary's `main` body and turns an error into `Error: ...` with its causes, one per
/// line, and exit status 1. Without a backtrace, even under RUST_BACKTRACE=1 (which still
/// gives panics theirs): an error here is a message for the user, not a bug.
pub fn run_main(main: impl FnOnce() -> anyhow::Result<()>) -> std::process::ExitCode {
    match main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            std::process::ExitCode::FAILURE
        }
    }
}

/// True once a stop signal arrived.
#[inline]
pub fn stopped(flag: &AtomicBool) -> bool {
    flag.load(Ordering::Relaxed)
}

/// `uname -r`, and the CPU model, for reports.
pub fn machine() -> (String, String) {
    let kernel = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_default();
    (kernel, cpu)
}

/// Runs the calling thread under SCHED_FIFO at `priority` (1-99): the scheduler never
/// preempts it for normal tasks. Needs CAP_SYS_NICE; with a spinning loop, keep it off the CPU
/// that runs the kernel's own work or the machine stalls (RT throttling allows 95 %).
pub fn set_fifo(priority: i32) -> anyhow::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid, initialised sched_param that outlives the call; pid 0 is the
    // calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("SCHED_FIFO priority {priority} (needs CAP_SYS_NICE)"));
    }
    Ok(())
}

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

/// The MAC address of `iface` in this network namespace (sysfs).
pub fn read_mac(iface: &str) -> anyhow::Result<[u8; 6]> {
    let path = format!("/sys/class/net/{iface}/address");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("no interface {iface} here ({path}); is the lab up?"))?;
    let mut mac = [0u8; 6];
    let parts: Vec<&str> = text.trim().split(':').collect();
    if parts.len() != 6 {
        anyhow::bail!("unexpected MAC {text:?} in {path}");
    }
    for (m, p) in mac.iter_mut().zip(parts) {
        *m = u8::from_str_radix(p, 16).with_context(|| format!("bad MAC {text:?}"))?;
    }
    Ok(mac)
}

/// Resident set size of this process in KiB (/proc/self/statm), for "flat memory" checks.
pub fn rss_kib() -> u64 {
    let page_kib = 4;
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page_kib)
}

/// (voluntary, involuntary) context switches of this process so far (/proc/self/status). A
/// spinning loop should see no voluntary ones; each involuntary one is a preemption, a stall
/// of at least a scheduler slice for whatever was in flight.
pub fn context_switches() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split(':').nth(1))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (
        field("voluntary_ctxt_switches"),
        field("nonvoluntary_ctxt_switches"),
    )
}

/// Time the hypervisor gave each CPU's turn to someone else ("steal" in `/proc/stat`), in
/// milliseconds, one entry per CPU; empty where the kernel doesn't say. A spinning process on
/// a virtual CPU cannot see these pauses any other way: they are gaps in its own time line,
/// and they land in the tail of every latency it measures. Resolution: the kernel's USER_HZ
/// (10 ms on x86).
pub fn steal_ms() -> Vec<u64> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|&hz| hz > 0)
        .unwrap_or(100) as u64;
    parse_steal(&stat)
        .into_iter()
        .map(|ticks| ticks * 1000 / hz)
        .collect()
}

/// The steal column (the 8th number) of each `cpuN` line.
fn parse_steal(stat: &str) -> Vec<u64> {
    stat.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .map(|l| {
            l.split_whitespace()
                .nth(8)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        })
        .collect()
}

/// Where the calling thread's wall-clock time went: on a CPU (the thread's CPU-time clock,
/// `CLOCK_THREAD_CPUTIME_ID`), waiting for one (the run-queue delay in
/// `/proc/thread-self/schedstat`), and the rest. Start with [`ThreadTime::start`], read with
/// [`ThreadTime::since`].
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ThreadTime {
    /// Wall-clock time, ms.
    pub wall_ms: f64,
    /// Time on a CPU, ms. The kernel's task clock leaves out steal; it leaves out interrupt
    /// time only with CONFIG_IRQ_TIME_ACCOUNTING, so without it a softirq (a veth's NAPI poll)
    /// run on this thread's CPU while it ran counts here.
    pub ran_ms: f64,
    /// Time runnable but waiting for the CPU (another task had it), ms.
    pub waited_ms: f64,
    /// For a thread that never sleeps, the rest: time the hypervisor ran something else
    /// while this thread was on its CPU, ms. Seen where the kernel accounts paravirtual steal
    /// time (CONFIG_PARAVIRT_TIME_ACCOUNTING, as on KVM guests); elsewhere it reads about 0.
    /// `None` for a thread that slept: its sleep and the steal look the same.
    pub stolen_ms: Option<f64>,
}

/// A [`ThreadTime`] starting point.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadTimeStart {
    wall_ns: u64,
    ran_ns: u64,
    waited_ns: u64,
}

impl ThreadTime {
    /// Marks the start (of the calling thread's accounting).
    pub fn start() -> ThreadTimeStart {
        ThreadTimeStart {
            wall_ns: now_ns(),
            ran_ns: thread_cpu_ns(),
            waited_ns: thread_waited_ns(),
        }
    }

    /// What the calling thread did since `s` (taken on the same thread); `spinning`: it never
    /// slept meanwhile (no voluntary context switch), so the unaccounted rest is stolen time.
    pub fn since(s: ThreadTimeStart, spinning: bool) -> ThreadTime {
        let waited = thread_waited_ns().saturating_sub(s.waited_ns);
        let ran = thread_cpu_ns().saturating_sub(s.ran_ns);
        let wall = now_ns().saturating_sub(s.wall_ns);
        let mut t = split_wall(wall, ran, waited);
        if !spinning {
            t.stolen_ms = None;
        }
        t
    }
}

fn split_wall(wall: u64, ran: u64, waited: u64) -> ThreadTime {
    let ms = |ns: u64| ns as f64 / 1e6;
    ThreadTime {
        wall_ms: ms(wall),
        ran_ms: ms(ran),
        waited_ms: ms(waited),
        stolen_ms: Some(ms(wall.saturating_sub(ran).saturating_sub(waited))),
    }
}

/// The calling thread's CPU time, ns. Exact when read: unlike schedstat's first field, which
/// the scheduler brings up to date only at its tick (up to 4 ms behind at HZ=250), the clock
/// adds the running slice in.
fn thread_cpu_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|ts| ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64)
        .unwrap_or(0)
}

/// The calling thread's time runnable on a run queue but not running, ns; 0 if unreadable.
/// Up to date while the thread runs: the scheduler adds each wait when the thread gets a CPU.
fn thread_waited_ns() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    parse_schedstat(&text).1
}

fn parse_schedstat(text: &str) -> (u64, u64) {
    let mut f = text.split_whitespace().map(|v| v.parse().unwrap_or(0));
    (f.next().unwrap_or(0), f.next().unwrap_or(0))
}

#[cfg(test)]
mod steal_tests {
    #[test]
    fn steal_is_the_eighth_number_of_each_cpu_line() {
        let stat = "cpu  172862 0 27530 111848 1178 0 551 862 0 0\n\
                    cpu0 81940 0 13464 60834 356 0 374 419 0 0\n\
                    cpu1 90921 0 14065 51014 822 0 177 443 0 0\n\
                    intr 1 2 3\n";
        assert_eq!(super::parse_steal(stat), vec![419, 443]);
        assert_eq!(
            super::parse_steal("cpu0 1 2 3\n"),
            vec![0],
            "old kernels: no column"
        );
    }

    #[test]
    fn wall_time_splits_into_ran_waited_and_stolen() {
        assert_eq!(
            super::parse_schedstat("4992563005 1066147 311\n"),
            (4992563005, 1066147)
        );
        assert_eq!(super::parse_schedstat(""), (0, 0));
        let t = super::split_wall(5_001_000_000, 4_992_000_000, 1_000_000);
        assert_eq!((t.wall_ms, t.ran_ms, t.waited_ms), (5001.0, 4992.0, 1.0));
        assert_eq!(t.stolen_ms, Some(8.0));
        // Clocks read a moment apart can disagree by a little: never negative.
        assert_eq!(super::split_wall(10, 11, 0).stolen_ms, Some(0.0));
    }

    #[test]
    fn a_spinning_thread_is_seen_running() {
        let start = super::ThreadTime::start();
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_millis(50) {
            std::hint::spin_loop();
        }
        let t = super::ThreadTime::since(start, true);
        assert!(t.wall_ms >= 50.0, "{t:?}");
        assert!(t.stolen_ms.is_some());
        assert_eq!(super::ThreadTime::since(start, false).stolen_ms, None);
        // The kernel saw us run, and for no longer than the wall clock allows (give or take
        // the wall clock's NTP slew, at most 500 ppm).
        assert!(t.ran_ms > 0.0 && t.ran_ms <= t.wall_ms * 1.001, "{t:?}");
    }
}
