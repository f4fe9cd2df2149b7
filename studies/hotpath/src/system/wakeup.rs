//! Wake-up latency: how late a thread runs after the moment it should have, sleeping under
//! CFS, sleeping under SCHED_FIFO, or spinning, with the machine idle and with a busy thread
//! on the other CPU or on the same CPU; and `cyclictest` on the same CPU as the outside
//! reference.
//!
//! Two kinds of wake-up, each sleeping or spinning:
//! - a timer: the thread sleeps to absolute deadlines 200 µs apart
//!   (`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`, as cyclictest does) or spins on the
//!   clock until the deadline; the sample is `now - deadline`;
//! - another thread: a waker on the other CPU stamps the TSC and wakes the sleeper, which is
//!   blocked in one of four ways: reading an eventfd, in `FUTEX_WAIT` on a word, in
//!   `epoll_wait` on the eventfd, or in `poll` on it (the way the trader blocks); or a spinner
//!   polls a sequence number the waker stores. The sample is the sleeper's TSC on return minus
//!   the waker's stamp (one way; the TSC is constant and synchronised across CPUs here:
//!   `constant_tsc`, `nonstop_tsc`).
//!
//! SCHED_FIFO is only ever given to threads that sleep: a FIFO thread that spins starves the
//! kernel's own work on its CPU (RCU, timers, workqueues) until RT throttling stops it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::Ctx;
use crate::harness::{Dist, Recorder, Variant, interleave, monotonic_ns, tsc};
use crate::report::{self, Comparison, Level, Outcome};
use crate::system::{Policy, PolicyGuard, read_trimmed, set_policy};
use crate::verdict::{self, Standing};

/// The timer's period, as the brief's cyclictest runs use (`-i 200`).
pub const INTERVAL_NS: u64 = 200_000;
/// The SCHED_FIFO priority (cyclictest's customary 80: above the kernel's threaded IRQs at 50).
pub const FIFO_PRIO: i32 = 80;
/// Where cyclictest lives on Debian (rt-tests).
pub const CYCLICTEST: &str = "/usr/bin/cyclictest";

/// Sleeps until `deadline_ns` on `CLOCK_MONOTONIC` (absolute, so lateness never accumulates).
pub fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        #[expect(unsafe_code, reason = "clock_nanosleep reads the timespec it is given")]
        // SAFETY: `ts` is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// An eventfd, as a file: 8-byte writes add to its counter, 8-byte reads block until it is
/// non-zero and take it.
pub fn eventfd() -> std::io::Result<File> {
    use std::os::fd::{FromRawFd, OwnedFd};
    #[expect(unsafe_code, reason = "eventfd has no safe wrapper in std")]
    // SAFETY: eventfd takes no pointers.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    #[expect(unsafe_code, reason = "owning the fd eventfd returned")]
    // SAFETY: `fd` is a fresh, open descriptor that nothing else owns.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok(File::from(owned))
}

/// The calling thread's timer slack (ns): how late the kernel may end its timed sleeps.
pub fn timer_slack() -> u64 {
    #[expect(unsafe_code, reason = "prctl has no safe wrapper in libc")]
    // SAFETY: PR_GET_TIMERSLACK takes no pointers and only reads this thread's setting.
    let v = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    v.max(0) as u64
}

fn set_timer_slack(ns: u64) {
    #[expect(unsafe_code, reason = "prctl has no safe wrapper in libc")]
    // SAFETY: PR_SET_TIMERSLACK takes a number and changes only this thread's setting.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0);
    }
}

/// The calling thread's timer slack set until this drops, then put back.
#[derive(Debug)]
pub struct SlackGuard(u64);

impl SlackGuard {
    pub fn set(ns: u64) -> SlackGuard {
        let old = timer_slack();
        set_timer_slack(ns);
        SlackGuard(old)
    }
}

impl Drop for SlackGuard {
    fn drop(&mut self) {
        set_timer_slack(self.0);
    }
}

/// How the measured thread waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `clock_nanosleep` to an absolute deadline.
    TimerSleep,
    /// The same with the thread's timer slack at 1 ns (`prctl(PR_SET_TIMERSLACK, 1)`): a
    /// SCHED_OTHER thread's sleeps may otherwise end up to 50 µs late by design, so the
    /// kernel can batch timer interrupts; real-time threads get no slack.
    TimerSleepNoSlack,
    /// Polls the clock until the deadline.
    TimerSpin,
    /// Blocks reading an eventfd the waker writes.
    EventfdSleep,
    /// Blocks in `FUTEX_WAIT` (private) on a word the waker stores, then `FUTEX_WAKE`s.
    FutexSleep,
    /// Blocks in `epoll_wait` on an epoll instance watching the eventfd the waker writes, then
    /// reads the eventfd (after the sample's stamp).
    EpollSleep,
    /// Blocks in `poll` on the eventfd, then reads it (after the stamp): how the trader's
    /// `--wait block` and the blocking trigger sleep on their sockets.
    PollSleep,
    /// Polls an atomic the waker stores.
    FlagSpin,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::TimerSleep,
        Kind::TimerSleepNoSlack,
        Kind::TimerSpin,
        Kind::EventfdSleep,
        Kind::FutexSleep,
        Kind::EpollSleep,
        Kind::PollSleep,
        Kind::FlagSpin,
    ];

    /// The ways a thread sleeps until another thread wakes it, eventfd (the reference) first.
    pub const BLOCKING_WAKES: [Kind; 4] = [
        Kind::EventfdSleep,
        Kind::FutexSleep,
        Kind::EpollSleep,
        Kind::PollSleep,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::TimerSleep => "timer sleep",
            Kind::TimerSleepNoSlack => "timer sleep, slack 1 ns",
            Kind::TimerSpin => "timer spin",
            Kind::EventfdSleep => "eventfd wake",
            Kind::FutexSleep => "futex wake",
            Kind::EpollSleep => "epoll wake",
            Kind::PollSleep => "poll wake",
            Kind::FlagSpin => "flag spin",
        }
    }

    /// The mechanism alone, for the rows ("futex").
    fn short(self) -> &'static str {
        self.name()
            .strip_suffix(" wake")
            .unwrap_or_else(|| self.name())
    }

    fn sleeps(self) -> bool {
        !matches!(self, Kind::TimerSpin | Kind::FlagSpin)
    }

    /// How the waker wakes this kind (`None`: a timer wakes it).
    fn woken_by(self) -> Option<WakeBy> {
        match self {
            Kind::TimerSleep | Kind::TimerSleepNoSlack | Kind::TimerSpin => None,
            Kind::EventfdSleep | Kind::EpollSleep | Kind::PollSleep => Some(WakeBy::Eventfd),
            Kind::FutexSleep => Some(WakeBy::Futex),
            Kind::FlagSpin => Some(WakeBy::Flag),
        }
    }
}

/// What the waker does to wake the measured thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WakeBy {
    /// Writes 1 to the eventfd.
    Eventfd,
    /// Stores the wake-up's number in the futex word, then `FUTEX_WAKE`s one waiter.
    Futex,
    /// Stores the wake-up's number in the flag the spinner polls.
    Flag,
}

/// `FUTEX_WAIT` (private): sleeps while `word` still holds `expected`. Returns at once when it
/// doesn't (EAGAIN), and also on a signal or a spurious wake-up: the caller re-reads the word.
pub fn futex_wait(word: &AtomicU32, expected: u32) -> std::io::Result<()> {
    #[expect(unsafe_code, reason = "the futex syscall has no safe wrapper in libc")]
    // SAFETY: the address is a live, aligned u32 for the duration of the call (borrowed); a
    // null timeout waits without one; the kernel only reads the word.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        )
    };
    if rc == -1 {
        let e = std::io::Error::last_os_error();
        if !matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) {
            return Err(e);
        }
    }
    Ok(())
}

/// `FUTEX_WAKE` (private): wakes up to `n` threads sleeping on `word`; returns how many woke.
pub fn futex_wake(word: &AtomicU32, n: i32) -> std::io::Result<u64> {
    #[expect(unsafe_code, reason = "the futex syscall has no safe wrapper in libc")]
    // SAFETY: the address is a live, aligned u32 for the duration of the call; FUTEX_WAKE
    // reads nothing from it and writes nothing.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(rc as u64)
}

/// An epoll instance watching `fd` for input (level-triggered: it stays ready while the
/// eventfd's counter is non-zero).
pub fn epoll_watching(fd: &impl AsFd) -> std::io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    #[expect(unsafe_code, reason = "epoll_create1 has no safe wrapper in std")]
    // SAFETY: epoll_create1 takes no pointers.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err(std::io::Error::last_os_error());
    }
    #[expect(unsafe_code, reason = "owning the fd epoll_create1 returned")]
    // SAFETY: `ep` is a fresh, open descriptor that nothing else owns.
    let ep = unsafe { OwnedFd::from_raw_fd(ep) };
    let raw = fd.as_fd().as_raw_fd();
    let mut ev = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: raw as u64,
    };
    #[expect(unsafe_code, reason = "epoll_ctl has no safe wrapper in std")]
    // SAFETY: both descriptors are open for the call; `ev` is a valid epoll_event it reads.
    let rc = unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, raw, &mut ev) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(ep)
}

/// Blocks in `epoll_wait` for one event; returns the event's data (the watched fd).
fn epoll_wait_one(ep: &OwnedFd) -> std::io::Result<u64> {
    let mut ev = libc::epoll_event { events: 0, u64: 0 };
    loop {
        #[expect(unsafe_code, reason = "epoll_wait has no safe wrapper in std")]
        // SAFETY: `ev` is room for exactly the one event asked for; `ep` is open.
        let n = unsafe { libc::epoll_wait(ep.as_raw_fd(), &mut ev, 1, -1) };
        if n == 1 {
            return Ok(ev.u64);
        }
        let e = std::io::Error::last_os_error();
        if n < 0 && e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Blocks in `poll` until `fd` is readable; returns whether it was (POLLIN set).
fn poll_in(fd: &impl AsFd) -> std::io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        #[expect(unsafe_code, reason = "poll has no safe wrapper in std")]
        // SAFETY: `p` is one valid pollfd for the call; its fd is open (borrowed).
        let n = unsafe { libc::poll(&mut p, 1, -1) };
        if n == 1 {
            return Ok(p.revents & libc::POLLIN != 0);
        }
        let e = std::io::Error::last_os_error();
        if n < 0 && e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// What else runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    Idle,
    /// A busy thread on the other CPU (where the waker also runs).
    Other,
    /// A busy thread on the measured CPU: the thread competes for its own CPU.
    Same,
}

impl Load {
    pub const ALL: [Load; 3] = [Load::Idle, Load::Other, Load::Same];

    fn name(self) -> &'static str {
        match self {
            Load::Idle => "idle",
            Load::Other => "load on other CPU",
            Load::Same => "load on same CPU",
        }
    }
}

fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::Other => "CFS",
        Policy::Fifo(_) => "FIFO",
    }
}

/// The distribution name of a case.
pub fn case_name(kind: Kind, policy: Policy, load: Load) -> String {
    format!("{}, {}, {}", kind.name(), policy_name(policy), load.name())
}

/// Sets the flag when dropped, then unparks the threads that may be parked waiting for it.
struct StopOnDrop<'a>(&'a AtomicBool, Vec<std::thread::Thread>);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        for t in &self.1 {
            t.unpark();
        }
    }
}

/// Busy threads, one per CPU, switched on and off between rounds.
struct Loads<'s> {
    other: (&'s AtomicBool, std::thread::Thread),
    same: (&'s AtomicBool, std::thread::Thread),
}

impl Loads<'_> {
    fn set(&self, load: Load) {
        self.other.0.store(load == Load::Other, Ordering::Relaxed);
        self.same.0.store(load == Load::Same, Ordering::Relaxed);
        self.other.1.unpark();
        self.same.1.unpark();
    }
}

fn busy(cpu: usize, on: &AtomicBool, stop: &AtomicBool) {
    if let Err(e) = affinity::pin_current_thread(cpu) {
        eprintln!("    load thread: pinning to CPU {cpu}: {e}");
        return;
    }
    let mut x = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if on.load(Ordering::Relaxed) {
            for _ in 0..1000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        } else {
            // Parked until `Loads::set` or the stop unparks it: an idle case's CPUs see no
            // wake-ups from this thread. (An unpark before the park leaves a token, so a
            // switch-on between the check and the park is not lost; a spurious return just
            // loops.)
            std::thread::park();
        }
    }
}

/// What the waker and the measured thread share.
#[derive(Debug)]
struct Shared {
    /// The waker's TSC just before it woke the sleeper.
    stamp: AtomicU64,
    /// The last wake-up's number (the flag the spinner polls).
    seq: AtomicU64,
    /// The last wake-up the measured thread has taken.
    ack: AtomicU64,
    /// The futex word: the last futex wake-up's number (its low 32 bits).
    word: AtomicU32,
    /// The eventfd the eventfd, epoll and poll sleepers wait on.
    efd: File,
    /// An epoll instance watching `efd`.
    epoll: OwnedFd,
    /// Wake-ups that did not arrive as one wake-up of the number sent (an eventfd count
    /// other than 1, an epoll event for another fd, a futex word that skipped): the run fails
    /// unless this stays 0.
    wrong: AtomicU64,
}

impl Shared {
    fn new() -> std::io::Result<Shared> {
        let efd = eventfd()?;
        let epoll = epoll_watching(&efd)?;
        Ok(Shared {
            stamp: AtomicU64::new(0),
            seq: AtomicU64::new(0),
            ack: AtomicU64::new(0),
            word: AtomicU32::new(0),
            efd,
            epoll,
            wrong: AtomicU64::new(0),
        })
    }

    /// The waker's side: wake-up number `k`, by `by`.
    fn wake(&self, by: WakeBy, k: u64) -> std::io::Result<()> {
        match by {
            WakeBy::Eventfd => (&self.efd).write_all(&1u64.to_ne_bytes()),
            WakeBy::Futex => {
                self.word.store(k as u32, Ordering::Release);
                futex_wake(&self.word, 1).map(|_| ())
            }
            WakeBy::Flag => {
                self.seq.store(k, Ordering::Release);
                Ok(())
            }
        }
    }

    /// Before a round of futex wake-ups numbered from `from + 1`: the word holds `from`, so
    /// each wait sees either the number before its own or its own.
    fn arm(&self, from: u64) {
        self.word.store(from as u32, Ordering::Release);
    }

    /// The sleeper's side: blocks (or spins) as `kind` does until wake-up `k` arrives; returns
    /// the TSC read the moment it returns, and whether it arrived as exactly one wake-up
    /// numbered `k`. Epoll and poll read the eventfd after that TSC read (draining it is not
    /// the wake-up).
    fn wait(&self, kind: Kind, k: u64) -> std::io::Result<(u64, bool)> {
        let read = || -> std::io::Result<u64> {
            let mut buf = [0u8; 8];
            (&self.efd).read_exact(&mut buf)?;
            Ok(u64::from_ne_bytes(buf))
        };
        match kind {
            Kind::EventfdSleep => {
                let v = read()?;
                Ok((tsc(), v == 1))
            }
            Kind::EpollSleep => {
                let data = epoll_wait_one(&self.epoll)?;
                let t = tsc();
                let v = read()?;
                Ok((t, data == self.efd.as_raw_fd() as u64 && v == 1))
            }
            Kind::PollSleep => {
                let readable = poll_in(&self.efd)?;
                let t = tsc();
                let v = read()?;
                Ok((t, readable && v == 1))
            }
            Kind::FutexSleep => {
                let before = (k - 1) as u32;
                loop {
                    let v = self.word.load(Ordering::Acquire);
                    if v != before {
                        return Ok((tsc(), v == k as u32));
                    }
                    futex_wait(&self.word, v)?;
                }
            }
            Kind::FlagSpin => {
                while self.seq.load(Ordering::Acquire) < k {
                    std::hint::spin_loop();
                }
                let t = tsc();
                Ok((t, self.seq.load(Ordering::Acquire) == k))
            }
            Kind::TimerSleep | Kind::TimerSleepNoSlack | Kind::TimerSpin => {
                unreachable!("{kind:?} is woken by a timer, not by another thread")
            }
        }
    }
}

#[derive(Debug)]
enum Cmd {
    /// Wake `n` times, numbers `from + 1 ..= from + n`, by `by`.
    Wake {
        from: u64,
        n: u64,
        by: WakeBy,
    },
    Stop,
}

fn waker(shared: &Shared, cmds: &mpsc::Receiver<Cmd>, done: &mpsc::Sender<()>, stop: &AtomicBool) {
    while let Ok(Cmd::Wake { from, n, by }) = cmds.recv() {
        let mut deadline = monotonic_ns() + INTERVAL_NS;
        for k in from + 1..=from + n {
            sleep_until(deadline);
            // The previous wake-up must have been taken: then the sleeper is (about to be)
            // asleep again, and one write is one wake-up.
            while shared.ack.load(Ordering::Acquire) < k - 1 {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                std::hint::spin_loop();
            }
            shared.stamp.store(tsc(), Ordering::Relaxed);
            if let Err(e) = shared.wake(by, k) {
                eprintln!("    waker: {by:?} wake-up {k}: {e}");
            }
            deadline += INTERVAL_NS;
            let now = monotonic_ns();
            if deadline < now {
                deadline = now + INTERVAL_NS;
            }
        }
        if done.send(()).is_err() {
            return;
        }
    }
}

/// Sizes: recorded rounds, wake-ups per round, cyclictest loops per run.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    pub rounds: usize,
    pub per_round: u64,
    pub cyclictest_loops: u64,
}

pub fn run(ctx: &Ctx) -> anyhow::Result<Outcome> {
    run_with(
        ctx,
        Params {
            rounds: ctx.pick(3, 20),
            per_round: ctx.pick(20, 60),
            cyclictest_loops: ctx.pick(500, 5_000),
        },
    )
}

pub fn run_with(ctx: &Ctx, p: Params) -> anyhow::Result<Outcome> {
    ctx.pin()?;
    let mut out = Outcome::new(
        "wakeup",
        "Wake-up latency: CFS vs SCHED_FIFO vs spinning, idle and loaded",
        Level::System,
    );
    let fifo = fifo_allowed(&mut out);
    let cases = cases(fifo);
    out.dists = measure_cases(ctx, p, &cases)?;
    let ct = run_cyclictests(ctx, fifo, p.cyclictest_loops, &mut out);
    compare(&mut out, fifo, &ct);
    out.dists.extend(ct);
    push_notes(&mut out, p);
    out.trader = "The trader spins by default (`--wait spin`, crates/trader/src/program; \
                  the AF_XDP loop polls its RX ring and the UDP loop a non-blocking socket, \
                  crates/trader/src/trading/xdp.rs and udp.rs), pinned with `--cpu`; `--wait block` \
                  sleeps in the kernel instead: in poll() on the AF_XDP sockets (and the \
                  trigger's FIRED ring), in a read with a 100 ms timeout on one UDP socket, in \
                  poll() on two (see the poll note above for what that wake costs). \
                  `--fifo PRIO` runs it under SCHED_FIFO (crates/afxdp/src/process.rs set_fifo, \
                  whose comment warns that a spinning FIFO loop must stay off the CPU that runs \
                  the kernel's own work: RT throttling allows 95 %); `cargo xtask matrix` tries \
                  it as the fifo knob at priority 50 (xtask/src/matrix.rs). By default it is a \
                  CFS spinner: this experiment's 'flag spin, CFS' case."
        .into();
    Ok(out)
}

/// Whether this thread may enter SCHED_FIFO (tried once and left at once); a note says why
/// not when it may not.
fn fifo_allowed(out: &mut Outcome) -> bool {
    match PolicyGuard::enter(Policy::Fifo(FIFO_PRIO)) {
        Ok(g) => {
            drop(g);
            true
        }
        Err(e) => {
            out.notes.push(format!(
                "SCHED_FIFO skipped: sched_setscheduler(SCHED_FIFO, {FIFO_PRIO}) failed ({e}); \
                 it needs root or CAP_SYS_NICE"
            ));
            false
        }
    }
}

/// Every (kind, policy, load) case, load by load: each kind under CFS, and the sleeping kinds
/// with timer slack under FIFO too when `fifo` is allowed.
fn cases(fifo: bool) -> Vec<(Kind, Policy, Load)> {
    let mut cases: Vec<(Kind, Policy, Load)> = Vec::new();
    for load in Load::ALL {
        for kind in Kind::ALL {
            cases.push((kind, Policy::Other, load));
            // FIFO only for sleepers: a spinning FIFO thread starves its CPU's kernel work.
            // (A FIFO thread has no timer slack: the no-slack case is CFS only.)
            if fifo && kind.sleeps() && kind != Kind::TimerSleepNoSlack {
                cases.push((kind, Policy::Fifo(FIFO_PRIO), load));
            }
        }
    }
    cases
}

/// Our own wake-up cases, interleaved round by round (one warm-up round), with the busy threads
/// and the waker running beside them and stopped however this ends; the distributions in the
/// order of `cases`.
fn measure_cases(
    ctx: &Ctx,
    p: Params,
    cases: &[(Kind, Policy, Load)],
) -> anyhow::Result<Vec<Dist>> {
    let shared = Shared::new()?;
    let (stop, on_other, on_same) = (
        AtomicBool::new(false),
        AtomicBool::new(false),
        AtomicBool::new(false),
    );
    let started = Instant::now();
    let dists = std::thread::scope(|s| -> anyhow::Result<Vec<Dist>> {
        let other = s.spawn(|| busy(ctx.other_cpu, &on_other, &stop));
        let same = s.spawn(|| busy(ctx.cpu, &on_same, &stop));
        let loads = Loads {
            other: (&on_other, other.thread().clone()),
            same: (&on_same, same.thread().clone()),
        };
        let (cmd_tx, cmd_rx) = mpsc::channel::<Cmd>();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let (shared, stop) = (&shared, &stop);
        // Whatever happens below (a panic included), the helper threads are told to stop, or
        // the scope would wait for them forever.
        let _stop = StopOnDrop(stop, vec![loads.other.1.clone(), loads.same.1.clone()]);
        let other_cpu = ctx.other_cpu;
        s.spawn(move || {
            if let Err(e) = affinity::pin_current_thread(other_cpu) {
                eprintln!("    waker: pinning to CPU {other_cpu}: {e}");
            }
            waker(shared, &cmd_rx, &done_tx, stop);
        });
        let mut variants: Vec<Variant<'_>> = cases
            .iter()
            .map(|&(kind, policy, load)| {
                let (loads, cmd_tx, done_rx) = (&loads, &cmd_tx, &done_rx);
                Variant::new(case_name(kind, policy, load), move |r: &mut Recorder| {
                    loads.set(load);
                    // Let the busy thread get going before the first sample.
                    std::thread::sleep(Duration::from_millis(1));
                    let _fifo = match policy {
                        Policy::Fifo(_) => PolicyGuard::enter(policy).ok(),
                        Policy::Other => None,
                    };
                    round(kind, p.per_round, r, shared, cmd_tx, done_rx);
                })
            })
            .collect();
        let d = interleave(ctx.tsc, 1, p.rounds, &mut variants);
        drop(variants);
        loads.set(Load::Idle);
        let _ = cmd_tx.send(Cmd::Stop);
        stop.store(true, Ordering::Relaxed);
        loads.other.1.unpark();
        loads.same.1.unpark();
        Ok(d)
    })?;
    let _ = set_policy(Policy::Other);
    let wrong = shared.wrong.load(Ordering::Relaxed);
    if wrong > 0 {
        anyhow::bail!(
            "{wrong} cross-thread wake-ups did not arrive as one wake-up each (merged or lost)"
        );
    }
    ctx.progress(&format!(
        "{} cases × {} rounds × {} wake-ups in {:.1} s",
        cases.len(),
        p.rounds,
        p.per_round,
        started.elapsed().as_secs_f64()
    ));
    Ok(dists)
}

/// cyclictest on the same CPU, idle and with the busy thread there, FIFO (when allowed) and
/// CFS, `loops` loops each; a run that fails, or no cyclictest at all, is noted instead.
fn run_cyclictests(ctx: &Ctx, fifo: bool, loops: u64, out: &mut Outcome) -> Vec<Dist> {
    let mut ct: Vec<Dist> = Vec::new();
    if std::path::Path::new(CYCLICTEST).exists() {
        let stop = AtomicBool::new(false);
        let on = AtomicBool::new(false);
        std::thread::scope(|s| {
            let h = s.spawn(|| busy(ctx.cpu, &on, &stop));
            // Stops and unparks the busy thread however this scope ends.
            let _stop = StopOnDrop(&stop, vec![h.thread().clone()]);
            for load in [Load::Idle, Load::Same] {
                on.store(load == Load::Same, Ordering::Relaxed);
                h.thread().unpark();
                for prio in [FIFO_PRIO, 0] {
                    if prio > 0 && !fifo {
                        continue;
                    }
                    match cyclictest(ctx, prio, loops) {
                        Ok(rec) => ct.push(rec.finish(&format!(
                            "cyclictest {}, {}",
                            if prio > 0 { "FIFO 80" } else { "CFS" },
                            load.name()
                        ))),
                        Err(e) => out.notes.push(format!("cyclictest -p {prio}: {e}")),
                    }
                }
            }
        });
    } else {
        out.notes.push(format!(
            "cyclictest not found at {CYCLICTEST} (Debian: apt-get install rt-tests): no outside reference"
        ));
    }
    ct
}

/// The notes on method: RT throttling and timer slack as this machine has them, how the
/// samples are taken, why their tails are understated, and what dominates a wake-up.
fn push_notes(out: &mut Outcome, p: Params) {
    let runtime = read_trimmed("/proc/sys/kernel/sched_rt_runtime_us");
    let period = read_trimmed("/proc/sys/kernel/sched_rt_period_us");
    out.notes.push(format!(
        "RT throttling: sched_rt_runtime_us = {runtime} of sched_rt_period_us = {period}: \
         real-time threads together may use at most that share of each period on a CPU, so a \
         SCHED_FIFO thread that spins is stopped for the rest ({}), and until then it starves \
         the kernel's own work on its CPU (RCU callbacks, timers, workqueues, ksoftirqd). \
         Here FIFO is given only to sleeping threads; the spinners run under CFS.",
        match (runtime.parse::<u64>(), period.parse::<u64>()) {
            (Ok(r), Ok(p)) if r < p => format!("{} ms of every {} ms", (p - r) / 1000, p / 1000),
            _ => "no throttling configured".into(),
        }
    ));
    out.notes.push(format!(
        "Timer slack: this process's is {} ns (/proc/self/timerslack_ns, the SCHED_OTHER \
         default of 50 µs unless a parent changed it). The kernel may end a SCHED_OTHER \
         thread's timed sleep up to that late so timer interrupts can be batched, and gives \
         real-time threads none; so a cyclictest-style CFS vs FIFO median compares slack as \
         much as scheduling. The 'slack 1 ns' case separates the two. cyclictest's CFS run \
         keeps the default slack, as the study's presumably did.",
        timer_slack()
    ));
    out.notes.push(format!(
        "Samples: {} recorded rounds × {} wake-ups per case (one warm-up round), every case \
         in turn each round in an order rotated each round; {} samples per case, so p99 shows \
         from 1,000 and p99.9 only from 10,000 (else –, and a tail verdict on it is \
         undecided). A timer wake-up's sample is its lateness past the deadline \
         (CLOCK_MONOTONIC, read through the vDSO from the TSC), a cross-thread one is the \
         sleeper's TSC minus the waker's stamp. Every blocking wake is the same exchange: the \
         waker stamps, then writes the eventfd (eventfd, epoll and poll sleepers) or stores the \
         futex word and calls FUTEX_WAKE; the sleeper reads the TSC as its call returns (epoll \
         and poll then read the eventfd to empty it, outside the sample), and the run checks \
         that each wake-up arrived once with its own number. The waker waits for each wake-up to be taken \
         before the next, 200 µs later; with the busy thread on the other CPU it shares that \
         CPU with the waker. cyclictest runs after ours, on the same CPU (-a), its main thread \
         on the other CPU, with -m (mlockall), -i 200, and /dev/cpu_dma_latency held at 0 while \
         it runs; its histogram has 1 µs buckets, from which its percentiles here are taken \
         (overflows counted at its max).",
        p.rounds,
        p.per_round,
        p.rounds as u64 * p.per_round
    ));
    out.notes.push(format!(
        "One sample per wake-up, so the tails are understated: a stall that spans several \
         {} µs periods yields one (large) sample, not one per period it missed. The timer \
         cases move a missed deadline to one period after the late wake-up, and the waker \
         waits for each wake-up to be taken before the next, so the deadlines a stall \
         swallows are never sampled; the percentiles are of wake-ups that happened, and a \
         percentile past p99 undercounts the time the thread was late. cyclictest counts the \
         same way.",
        INTERVAL_NS / 1000
    ));
    out.notes.push(
        "What dominates: a sleeping thread's wake-up is the timer interrupt (or the waker's \
         IPI), the scheduler picking it, and the context switch; in this KVM guest the timer \
         and IPIs go through the hypervisor, and the host can deschedule the whole vCPU (steal \
         time), which neither FIFO nor spinning can prevent: where a deep tail appears (see the \
         FIFO tail row), that is where it can come from, though this run can't attribute it. \
         With load \
         on the same CPU, a CFS sleeper waits for the busy thread's slice unless the scheduler \
         preempts it at the wake-up; FIFO preempts it at once. A spinner has no wake-up to pay, \
         but under CFS it shares its CPU with anything runnable there."
            .into(),
    );
}

/// One round of one case: `n` wake-ups recorded into `r`.
fn round(
    kind: Kind,
    n: u64,
    r: &mut Recorder,
    shared: &Shared,
    cmd_tx: &mpsc::Sender<Cmd>,
    done_rx: &mpsc::Receiver<()>,
) {
    let Some(by) = kind.woken_by() else {
        let _slack = (kind == Kind::TimerSleepNoSlack).then(|| SlackGuard::set(1));
        let mut deadline = monotonic_ns() + INTERVAL_NS;
        for _ in 0..n {
            if kind != Kind::TimerSpin {
                sleep_until(deadline);
            } else {
                while monotonic_ns() < deadline {
                    std::hint::spin_loop();
                }
            }
            let now = monotonic_ns();
            r.record_ns(now.saturating_sub(deadline) as f64);
            deadline += INTERVAL_NS;
            if deadline < now {
                deadline = now + INTERVAL_NS;
            }
        }
        return;
    };
    let from = shared.ack.load(Ordering::Acquire);
    shared.arm(from);
    if cmd_tx.send(Cmd::Wake { from, n, by }).is_err() {
        return;
    }
    for k in from + 1..=from + n {
        let Ok((t1, one)) = shared.wait(kind, k) else {
            return;
        };
        if !one {
            shared.wrong.fetch_add(1, Ordering::Relaxed);
        }
        let stamp = shared.stamp.load(Ordering::Relaxed);
        r.record_ticks(t1.saturating_sub(stamp), 1);
        shared.ack.store(k, Ordering::Release);
    }
    let _ = done_rx.recv();
}

/// Runs cyclictest on the measured CPU at `prio` (0: SCHED_OTHER) and returns its histogram
/// as a recorder.
fn cyclictest(ctx: &Ctx, prio: i32, loops: u64) -> anyhow::Result<Recorder> {
    let max_us = 20_000u64;
    let json = std::env::temp_dir().join(format!(
        "hotpath-cyclictest-{}-{prio}.json",
        std::process::id()
    ));
    let out = std::process::Command::new(CYCLICTEST)
        .args(["-q", "-m", "-i", "200"])
        // -p after --policy would set SCHED_FIFO again (at priority 2 for -p0): the order
        // matters.
        .arg(format!("-p{prio}"))
        .arg(format!(
            "--policy={}",
            if prio > 0 { "fifo" } else { "other" }
        ))
        .arg(format!("-l{loops}"))
        .arg(format!("-a{}", ctx.cpu))
        .arg(format!("--mainaffinity={}", ctx.other_cpu))
        .arg(format!("-h{max_us}"))
        .arg(format!("--json={}", json.display()))
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| anyhow::anyhow!("running {CYCLICTEST}: {e}"))?;
    if !out.status.success() {
        anyhow::bail!(
            "{CYCLICTEST} exited {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = std::fs::read_to_string(&json)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", json.display()))?;
    let _ = std::fs::remove_file(&json);
    parse_cyclictest_json(ctx, &text)
}

/// cyclictest's `--json` output (thread 0's µs histogram, cycles and max) as a recorder.
pub fn parse_cyclictest_json(ctx: &Ctx, text: &str) -> anyhow::Result<Recorder> {
    let v: serde_json::Value = serde_json::from_str(text)?;
    let t = &v["thread"]["0"];
    let cycles = t["cycles"]
        .as_u64()
        .ok_or_else(|| anyhow::anyhow!("cyclictest JSON has no thread 0 cycles"))?;
    let max = t["max"].as_u64().unwrap_or(0);
    let hist = t["histogram"]
        .as_object()
        .ok_or_else(|| anyhow::anyhow!("cyclictest JSON has no histogram"))?;
    let mut rec = Recorder::new(ctx.tsc);
    let mut counted = 0u64;
    for (us, count) in hist {
        let us: u64 = us.parse()?;
        let count = count.as_u64().unwrap_or(0);
        for _ in 0..count {
            rec.record_ns((us * 1000) as f64);
        }
        counted += count;
    }
    // Beyond the histogram's range: counted at the run's max.
    for _ in counted..cycles {
        rec.record_ns((max * 1000) as f64);
    }
    Ok(rec)
}

/// The study's cyclictest figures: CFS p50, FIFO p50, FIFO p99.9 (ns).
const STUDY_CFS_P50: f64 = 55_000.0;
const STUDY_FIFO_P50: f64 = 5_000.0;
const STUDY_FIFO_P999: f64 = 1_287_000.0;

/// A percentile as the rows print it: `–` where the samples don't reach it
/// ([`Dist::at`]).
fn shown(d: &Dist, q: f64) -> String {
    d.at(q).map_or_else(|| "–".to_string(), report::ns)
}

/// A percentile for a ratio: NaN (undecided by the rule) where the samples don't reach it.
fn at(d: &Dist, q: f64) -> f64 {
    d.at(q).unwrap_or(f64::NAN)
}

/// Why a figure is missing, for an undecided row.
fn too_few(q: f64, d: &Dist) -> String {
    format!(
        "p{} needs {} samples, {} has {}",
        100.0 * q,
        verdict::samples_for(q),
        d.name,
        d.count
    )
}

/// The timer rows' reason: how far each p50 is from the study's (which is what puts our
/// CFS ÷ FIFO ratio above or below its 11×), and how much of the gap timer slack is, when
/// the slack-1-ns case ran (`no_slack`, its p50).
pub fn cfs_fifo_reason(cfs: f64, fifo: f64, no_slack: Option<f64>) -> String {
    if !(cfs.is_finite() && fifo.is_finite()) {
        return "a p50 is missing (it needs 20 samples)".into();
    }
    let mut s = format!(
        "CFS's p50 is {:.2}× the study's 55 µs, FIFO's {:.2}× its 5 µs",
        cfs / STUDY_CFS_P50,
        fifo / STUDY_FIFO_P50
    );
    if let Some(n) = no_slack.filter(|n| n.is_finite()) {
        if cfs > fifo {
            s += &format!(
                "; with timer slack 1 ns CFS's p50 is {}: slack is {:.0} % of CFS's gap to FIFO",
                report::ns(n),
                100.0 * (cfs - n) / (cfs - fifo)
            );
        } else {
            s += &format!(
                "; FIFO is not ahead of CFS here (CFS with slack 1 ns: {})",
                report::ns(n)
            );
        }
    }
    s
}

/// The slack row's reason, by the rule's standing of default slack ÷ slack 1 ns (`c`, `n`:
/// CFS p50s), FIFO's p50 beside when it ran.
pub fn slack_reason(c: f64, n: f64, fifo: Option<f64>) -> String {
    let (cs, ns) = (report::ns(c), report::ns(n));
    let mut s = match verdict::standing(c / n, None) {
        Standing::Undecided => return "a p50 is missing (it needs 20 samples)".into(),
        Standing::Reversed => {
            format!("slack 1 ns made CFS's p50 later ({ns}), not earlier than {cs}: unexplained")
        }
        Standing::NoDifference => format!(
            "timer slack is not what sets CFS's p50 here: {cs} with the default slack, {ns} \
             with 1 ns"
        ),
        _ => format!(
            "timer slack 1 ns takes CFS's p50 from {cs} to {ns}, {} earlier",
            report::ns(c - n)
        ),
    };
    if let Some(f) = fifo.filter(|f| f.is_finite()) {
        if c > f {
            s += &format!(
                "; FIFO's is {}: slack is {:.0} % of CFS's gap to FIFO",
                report::ns(f),
                100.0 * (c - n) / (c - f)
            );
        } else {
            s += &format!("; FIFO's is {}, not below CFS's", report::ns(f));
        }
    }
    s
}

/// The FIFO tail row's reason: the sample count when p99.9 is out of reach, else FIFO's
/// p99.9 and p50 against the study's, and CFS's p99.9 in the same condition.
pub fn fifo_tail_reason(fifo: &Dist, cfs: Option<&Dist>) -> String {
    match (fifo.at(0.999), fifo.at(0.5)) {
        (Some(t), Some(m)) => {
            let mut s = format!(
                "FIFO's p99.9 is {} ({:.2}× the study's 1287 µs), its p50 {} ({:.2}× the study's \
                 5 µs); its largest sample {}",
                report::ns(t),
                t / STUDY_FIFO_P999,
                report::ns(m),
                m / STUDY_FIFO_P50,
                report::ns(fifo.max_ns)
            );
            if let Some(c) = cfs.and_then(|c| c.at(0.999)) {
                s += &format!(
                    "; CFS's p99.9 in the same condition is {} ({:.2}× FIFO's)",
                    report::ns(c),
                    c / t
                );
            }
            s
        }
        _ => format!(
            "{} (its p99 is {}, its largest sample {}: one sample, not a percentile)",
            too_few(0.999, fifo),
            shown(fifo, 0.99),
            report::ns(fifo.max_ns)
        ),
    }
}

/// The sleeping cross-thread wakes' reason, from their p50s (`cfs`, `fifo`: mechanism and
/// p50, eventfd first where it ran): which is cheapest and dearest and by how much, each
/// against eventfd, and FIFO's the same way.
pub fn wakes_reason(cfs: &[(&str, f64)], fifo: &[(&str, f64)]) -> String {
    let Some((lo, hi)) = cheapest_dearest(cfs) else {
        return "fewer than two blocking wakes have a p50".into();
    };
    let against = |v: &[(&str, f64)]| -> String {
        let Some(&(_, e)) = v.iter().find(|(k, _)| *k == "eventfd") else {
            return String::new();
        };
        let parts: Vec<String> = v
            .iter()
            .filter(|(k, _)| *k != "eventfd")
            .map(|(k, x)| format!("{k} {:.2}×", x / e))
            .collect();
        format!(
            " (against eventfd's {}: {})",
            report::ns(e),
            parts.join(", ")
        )
    };
    let diff = report::ns(hi.1 - lo.1);
    let mut s = match verdict::standing(hi.1 / lo.1, None) {
        Standing::NoDifference => format!(
            "all within noise of each other: {} cheapest at {}, {} dearest at {}",
            lo.0,
            report::ns(lo.1),
            hi.0,
            report::ns(hi.1)
        ),
        Standing::Undecided => return "a p50 is missing (it needs 20 samples)".into(),
        _ => format!(
            "{} is cheapest at {}, {} dearest at {}, {diff} more per wake: both sides make one \
             syscall inside each sample (the waker's write or FUTEX_WAKE, the sleeper's read, \
             FUTEX_WAIT, epoll_wait or poll), so the difference is those calls' kernel paths",
            lo.0,
            report::ns(lo.1),
            hi.0,
            report::ns(hi.1)
        ),
    };
    s += &against(cfs);
    if let Some((flo, fhi)) = cheapest_dearest(fifo) {
        s += &format!(
            "; under FIFO {} cheapest at {}, {} dearest at {}{}",
            flo.0,
            report::ns(flo.1),
            fhi.0,
            report::ns(fhi.1),
            against(fifo)
        );
    }
    s
}

/// A mechanism and its p50.
type Named<'a> = (&'a str, f64);

/// The cheapest and dearest of several (name, p50), ignoring missing p50s; `None` with fewer
/// than two.
fn cheapest_dearest<'a>(v: &[Named<'a>]) -> Option<(Named<'a>, Named<'a>)> {
    let ok: Vec<(&str, f64)> = v.iter().copied().filter(|(_, x)| x.is_finite()).collect();
    if ok.len() < 2 {
        return None;
    }
    let lo = *ok.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let hi = *ok.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some((lo, hi))
}

/// A reason for a "dearer ÷ cheaper" row whose premise is `dearer` costing more than
/// `cheaper` (p50s, ns), by the rule's standing: the difference and `why` when it is
/// measurable, "within noise" when not, "unexplained" when reversed.
pub fn premise_reason(dearer: (&str, f64), cheaper: (&str, f64), why: &str) -> String {
    let (d, c) = (report::ns(dearer.1), report::ns(cheaper.1));
    match verdict::standing(dearer.1 / cheaper.1, None) {
        Standing::Undecided => "a figure is missing (a p50 needs 20 samples)".into(),
        Standing::NoDifference => format!(
            "{} ({d}) and {} ({c}) within noise of each other",
            dearer.0, cheaper.0
        ),
        Standing::Reversed => format!(
            "{} ({d}) is cheaper than {} ({c}) here: unexplained",
            dearer.0, cheaper.0
        ),
        _ => format!(
            "{} ({d}) costs {} more than {} ({c}): {why}",
            dearer.0,
            report::ns(dearer.1 - cheaper.1),
            cheaper.0
        ),
    }
}

/// Our cases' distributions, looked up by case.
struct Cases<'a>(&'a [Dist]);

impl Cases<'_> {
    fn find(&self, kind: Kind, policy: Policy, load: Load) -> Option<Dist> {
        let name = case_name(kind, policy, load);
        self.0.iter().find(|d| d.name == name).cloned()
    }
}

const CFS: Policy = Policy::Other;
const FIFO: Policy = Policy::Fifo(FIFO_PRIO);

/// The comparisons with the study, from our cases (in `out.dists`) and cyclictest's (`ct`):
/// CFS vs FIFO, timer slack, FIFO's tail, cyclictest, sleeping vs spinning, cross-thread wakes.
fn compare(out: &mut Outcome, fifo: bool, ct: &[Dist]) {
    let cases = Cases(&out.dists);
    let mut rows = cfs_vs_fifo_rows(&cases);
    rows.extend(slack_rows(&cases));
    rows.extend(fifo_tail_row(&cases));
    rows.extend(cyclictest_rows(ct, &cases));
    rows.extend(spin_rows(&cases));
    rows.extend(wakes_row(&cases));
    if let Some(n) = trader_wake_note(&cases) {
        out.notes.push(n);
    }
    if !fifo {
        out.notes
            .push("No FIFO rows: SCHED_FIFO was refused (see above).".into());
    }
    out.comparisons.extend(rows);
}

/// Timer wake-up lateness p50, CFS vs FIFO, per load (FIFO undecided where refused).
fn cfs_vs_fifo_rows(cases: &Cases<'_>) -> Vec<Comparison> {
    let mut rows = Vec::new();
    for load in [Load::Same, Load::Idle, Load::Other] {
        let what = format!("timer wake-up lateness p50, CFS vs FIFO ({})", load.name());
        let c = cases.find(Kind::TimerSleep, CFS, load);
        let f = cases.find(Kind::TimerSleep, FIFO, load);
        let n = cases.find(Kind::TimerSleepNoSlack, CFS, load);
        match (c, f) {
            (Some(c), Some(f)) => rows.push(Comparison::judged(
                what,
                format!("{} vs {}", shown(&c, 0.5), shown(&f, 0.5)),
                at(&c, 0.5) / at(&f, 0.5),
                "55 µs vs 5 µs (cyclictest)",
                Some(STUDY_CFS_P50 / STUDY_FIFO_P50),
                &cfs_fifo_reason(at(&c, 0.5), at(&f, 0.5), n.map(|n| at(&n, 0.5))),
            )),
            (Some(c), None) => rows.push(Comparison::finding(
                what,
                format!("{} vs not measurable here", shown(&c, 0.5)),
                "55 µs vs 5 µs",
                "undecided: SCHED_FIFO was refused here (see notes)".into(),
            )),
            _ => {}
        }
    }
    rows
}

/// CFS timer wake-up p50 with the default timer slack vs slack 1 ns (FIFO beside), idle and
/// with load on the same CPU.
fn slack_rows(cases: &Cases<'_>) -> Vec<Comparison> {
    let mut rows = Vec::new();
    for load in [Load::Idle, Load::Same] {
        if let (Some(c), Some(n)) = (
            cases.find(Kind::TimerSleep, CFS, load),
            cases.find(Kind::TimerSleepNoSlack, CFS, load),
        ) {
            let f = cases.find(Kind::TimerSleep, FIFO, load);
            rows.push(Comparison::judged(
                format!(
                    "timer wake-up p50, CFS: default timer slack vs slack 1 ns (vs FIFO) ({})",
                    load.name()
                ),
                format!(
                    "{} vs {} (FIFO {})",
                    shown(&c, 0.5),
                    shown(&n, 0.5),
                    f.as_ref().map_or("–".into(), |f| shown(f, 0.5))
                ),
                at(&c, 0.5) / at(&n, 0.5),
                "not measured (its CFS vs FIFO: 55 µs vs 5 µs)",
                None,
                &slack_reason(at(&c, 0.5), at(&n, 0.5), f.map(|f| at(&f, 0.5))),
            ));
        }
    }
    rows
}

/// FIFO's timer wake-up tail with load on its CPU (p99.9 ÷ p50, as the study's 1287 µs over
/// 5 µs), CFS's beside, if FIFO ran.
fn fifo_tail_row(cases: &Cases<'_>) -> Option<Comparison> {
    let f = cases.find(Kind::TimerSleep, FIFO, Load::Same)?;
    let c = cases.find(Kind::TimerSleep, CFS, Load::Same);
    Some(Comparison::judged(
        "FIFO timer wake-up tail, p99.9 ÷ p50 (load on same CPU)",
        format!(
            "p99.9 {} over p50 {} (p99 {}; {} samples){}",
            shown(&f, 0.999),
            shown(&f, 0.5),
            shown(&f, 0.99),
            f.count,
            c.as_ref().map_or(String::new(), |c| format!(
                "; CFS p99.9 {}",
                shown(c, 0.999)
            ))
        ),
        at(&f, 0.999) / at(&f, 0.5),
        "p99.9 1287 µs over p50 5 µs",
        Some(STUDY_FIFO_P999 / STUDY_FIFO_P50),
        &fifo_tail_reason(&f, c.as_ref()),
    ))
}

/// cyclictest's CFS vs FIFO p50 and FIFO's tail, per load where both ran, beside our own
/// timer sleep's ratio in the same condition.
fn cyclictest_rows(ct: &[Dist], cases: &Cases<'_>) -> Vec<Comparison> {
    let ct_find = |name: &str| ct.iter().find(|d| d.name == name);
    let mut rows = Vec::new();
    for load in [Load::Same, Load::Idle] {
        let c = ct_find(&format!("cyclictest CFS, {}", load.name()));
        let f = ct_find(&format!("cyclictest FIFO 80, {}", load.name()));
        if let (Some(c), Some(f)) = (c, f) {
            let ours = match (
                cases.find(Kind::TimerSleep, CFS, load),
                cases.find(Kind::TimerSleep, FIFO, load),
            ) {
                (Some(oc), Some(of)) if (at(&oc, 0.5) / at(&of, 0.5)).is_finite() => format!(
                    "; our timer sleep's ratio in this condition is {:.2}×",
                    at(&oc, 0.5) / at(&of, 0.5)
                ),
                _ => String::new(),
            };
            rows.push(Comparison::judged(
                format!(
                    "cyclictest p50, CFS vs FIFO ({}); FIFO p99.9, max",
                    load.name()
                ),
                format!(
                    "{} vs {}; {}, {} ({} loops each)",
                    shown(c, 0.5),
                    shown(f, 0.5),
                    shown(f, 0.999),
                    report::ns(f.max_ns),
                    f.count
                ),
                at(c, 0.5) / at(f, 0.5),
                "55 µs vs 5 µs; p99.9 1287 µs",
                Some(STUDY_CFS_P50 / STUDY_FIFO_P50),
                &format!(
                    "{} (cyclictest's 1 µs buckets){ours}",
                    cfs_fifo_reason(at(c, 0.5), at(f, 0.5), None)
                ),
            ));
        }
    }
    rows
}

/// Spinning against sleeping: to a deadline (idle), across threads (idle: eventfd vs a flag),
/// and a spinner sharing its CPU with a busy thread against one alone.
fn spin_rows(cases: &Cases<'_>) -> Vec<Comparison> {
    let mut rows = Vec::new();
    if let (Some(sl), Some(sp)) = (
        cases.find(Kind::TimerSleep, CFS, Load::Idle),
        cases.find(Kind::TimerSpin, CFS, Load::Idle),
    ) {
        rows.push(Comparison::judged(
            "sleeping vs spinning to a deadline, CFS, idle: p50 (p99)",
            format!(
                "{} ({}) vs {} ({})",
                shown(&sl, 0.5),
                shown(&sl, 0.99),
                shown(&sp, 0.5),
                shown(&sp, 0.99)
            ),
            at(&sl, 0.5) / at(&sp, 0.5),
            "not measured (the study compares schedulers)",
            None,
            &premise_reason(
                ("the sleeper", at(&sl, 0.5)),
                ("the spinner", at(&sp, 0.5)),
                &format!(
                    "{}the timer interrupt, the schedule and the switch, which the spinner skips \
                     by keeping its CPU busy",
                    cases
                        .find(Kind::TimerSleepNoSlack, CFS, Load::Idle)
                        .filter(|n| n.at(0.5).is_some())
                        .map_or(String::new(), |n| format!(
                            "timer slack (slack 1 ns sleeps to {}), then ",
                            shown(&n, 0.5)
                        ))
                ),
            ),
        ));
    }
    let e_cfs = cases.find(Kind::EventfdSleep, CFS, Load::Idle);
    let e_fifo = cases.find(Kind::EventfdSleep, FIFO, Load::Idle);
    let flag = cases.find(Kind::FlagSpin, CFS, Load::Idle);
    if let (Some(e), Some(fl)) = (&e_cfs, &flag) {
        rows.push(Comparison::judged(
            "cross-thread wake, idle: eventfd CFS / eventfd FIFO / spinning flag, p50",
            format!(
                "{} / {} / {}",
                shown(e, 0.5),
                e_fifo
                    .as_ref()
                    .map_or("not measurable here".into(), |f| shown(f, 0.5)),
                shown(fl, 0.5)
            ),
            at(e, 0.5) / at(fl, 0.5),
            "not measured (the study: futexes on the hot path → tail spikes)",
            None,
            &premise_reason(
                ("the eventfd wake", at(e, 0.5)),
                ("the flag spin", at(fl, 0.5)),
                "the waker's IPI, the schedule and the switch; the spinner sees the store in one \
                 cache-line transfer",
            ),
        ));
    }
    if let (Some(sh), Some(al)) = (
        cases.find(Kind::FlagSpin, CFS, Load::Same),
        cases.find(Kind::FlagSpin, CFS, Load::Idle),
    ) {
        rows.push(Comparison::judged(
            "spinning flag under CFS, a busy thread on its CPU vs alone: mean (p50, max)",
            format!(
                "{} ({}, {}) vs {} ({}, {})",
                report::ns(sh.mean_ns),
                shown(&sh, 0.5),
                report::ns(sh.max_ns),
                report::ns(al.mean_ns),
                shown(&al, 0.5),
                report::ns(al.max_ns)
            ),
            sh.mean_ns / al.mean_ns,
            "–",
            None,
            &premise_reason(
                ("sharing its CPU", sh.mean_ns),
                ("alone", al.mean_ns),
                &format!(
                    "the busy thread runs on its CPU in turn (the largest wait {} against {} \
                     alone)",
                    report::ns(sh.max_ns),
                    report::ns(al.max_ns)
                ),
            ),
        ));
    }
    rows
}

/// The sleeping cross-thread wakes side by side, idle: eventfd, futex, epoll and poll under
/// CFS (the ratio: dearest ÷ cheapest p50), FIFO's in the reason.
fn wakes_row(cases: &Cases<'_>) -> Option<Comparison> {
    let p50s = |policy: Policy| -> Vec<(&'static str, f64)> {
        Kind::BLOCKING_WAKES
            .iter()
            .filter_map(|&k| {
                cases
                    .find(k, policy, Load::Idle)
                    .map(|d| (k.short(), at(&d, 0.5)))
            })
            .collect()
    };
    let (cfs, fifo) = (p50s(CFS), p50s(FIFO));
    if cfs.len() < 2 {
        return None;
    }
    let ratio = cheapest_dearest(&cfs).map_or(f64::NAN, |(lo, hi)| hi.1 / lo.1);
    let list = |v: &[(&str, f64)]| -> String {
        v.iter()
            .map(|(k, x)| {
                if x.is_finite() {
                    format!("{k} {}", report::ns(*x))
                } else {
                    format!("{k} –")
                }
            })
            .collect::<Vec<_>>()
            .join(" / ")
    };
    Some(Comparison::judged(
        "cross-thread wake, idle, p50: eventfd / futex / epoll / poll (dearest ÷ cheapest, CFS)",
        if fifo.is_empty() {
            format!("CFS {}", list(&cfs))
        } else {
            format!("CFS {}; FIFO {}", list(&cfs), list(&fifo))
        },
        ratio,
        "not measured (the study: futexes on the hot path → tail spikes)",
        None,
        &wakes_reason(&cfs, &fifo),
    ))
}

/// What this run's wakes mean for the trader, which blocks in `poll()` when run with
/// `--wait block` or as the blocking trigger: its poll wake against its spinning flag.
fn trader_wake_note(cases: &Cases<'_>) -> Option<String> {
    let poll = cases.find(Kind::PollSleep, CFS, Load::Idle)?;
    let flag = cases.find(Kind::FlagSpin, CFS, Load::Idle)?;
    let fifo = cases
        .find(Kind::PollSleep, FIFO, Load::Idle)
        .map_or(String::new(), |f| {
            format!(" ({} under FIFO)", shown(&f, 0.5))
        });
    Some(format!(
        "The trader's blocking waits are poll(2): `trader --wait block` on AF_XDP waits in \
         XdpIo::recv (crates/trader/src/trading/xdp.rs) through Xsk's XskRx::wait, which is xsk-rs's \
         RxQueue::poll (a poll() on the socket), or wait_any over several queues \
         (crates/afxdp/src/xsk.rs, libc::poll); the blocking trigger waits in TriggerIo::wait \
         (crates/trader/src/trading/trigger.rs) through wait_any_or, one poll() over the sockets and \
         the FIRED ring's fd; the UDP path with line B polls both sockets \
         (crates/trader/src/trading/udp.rs). A packet wakes such a trader as the waker here wakes the \
         poll case: through the file's wait queue. This run's poll wake costs {} at p50{fifo} \
         against the spinning flag's {}, on top of the packet's own path: that difference is \
         what `--wait block` pays per wake-up for giving its CPU back.",
        shown(&poll, 0.5),
        shown(&flag, 0.5)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx {
        Ctx {
            size: crate::Size::Small,
            tsc: crate::harness::Tsc::calibrate(Duration::from_millis(5)),
            cpu: 0,
            other_cpu: 1.min(std::thread::available_parallelism().map_or(1, |n| n.get()) - 1),
            root: false,
        }
    }

    /// A distribution with the given count and percentiles (p90 and p99.99 as p99 and max).
    fn dist(name: &str, count: u64, p50: f64, p99: f64, p999: f64, max: f64) -> Dist {
        Dist {
            name: name.into(),
            count,
            ops_per_sample: 1,
            mean_ns: p50,
            p50_ns: p50,
            p90_ns: p99,
            p99_ns: p99,
            p999_ns: p999,
            p9999_ns: max,
            max_ns: max,
            saturated: 0,
            rounds: None,
            hgrm: String::new(),
        }
    }

    fn case(kind: Kind, policy: Policy, load: Load, count: u64, p50: f64) -> Dist {
        dist(
            &case_name(kind, policy, load),
            count,
            p50,
            3.0 * p50,
            10.0 * p50,
            20.0 * p50,
        )
    }

    #[test]
    fn cyclictest_json_becomes_a_distribution_with_overflows_at_max() {
        // 22 in the histogram, one overflow (cycles 23): enough samples for a p50.
        let json = r#"{"thread": {"0": {"histogram": {"5": 18, "7": 4}, "cycles": 23,
                      "min": 5, "max": 900, "avg": 6.0}}}"#;
        let d = parse_cyclictest_json(&ctx(), json)
            .expect("parses")
            .finish("x");
        assert_eq!(d.count, 23);
        assert!((d.p50_ns - 5000.0).abs() < 10.0, "{d:?}");
        assert!((d.max_ns - 900_000.0).abs() < 1000.0, "{d:?}");
    }

    #[test]
    fn the_fifo_tail_is_undecided_without_its_samples_and_judged_with_them() {
        let name = case_name(Kind::TimerSleep, FIFO, Load::Same);
        // The default run: 20 rounds × 60 wake-ups = 1,200 samples, too few for p99.9.
        let few = [dist(&name, 1_200, 10_000.0, 20_000.0, 26_600.0, 26_700.0)];
        let row = fifo_tail_row(&Cases(&few)).expect("a row");
        assert!(row.verdict.starts_with("undecided"), "{}", row.verdict);
        assert!(
            row.verdict.contains("needs 10000 samples") && row.verdict.contains("has 1200"),
            "{}",
            row.verdict
        );
        assert!(row.ours.starts_with("p99.9 – over"), "{}", row.ours);
        // Enough samples and the study's shape: a p99.9 257× the p50.
        let deep = [
            dist(&name, 12_000, 5_000.0, 50_000.0, 1_287_000.0, 4e6),
            case(Kind::TimerSleep, CFS, Load::Same, 12_000, 130_000.0),
        ];
        let row = fifo_tail_row(&Cases(&deep)).expect("a row");
        assert!(row.verdict.starts_with("agrees"), "{}", row.verdict);
        assert!(
            row.verdict.contains("1.00× the study's 1287 µs"),
            "{}",
            row.verdict
        );
        assert!(row.verdict.contains("CFS's p99.9"), "{}", row.verdict);
        // Enough samples, a shallow tail: smaller here, and the reason's figures move.
        let shallow = [dist(&name, 12_000, 10_000.0, 20_000.0, 26_600.0, 26_700.0)];
        let row = fifo_tail_row(&Cases(&shallow)).expect("a row");
        assert!(row.verdict.starts_with("smaller here"), "{}", row.verdict);
        assert!(row.verdict.contains("0.02× the study's"), "{}", row.verdict);
        assert!(!row.verdict.contains("CFS"), "{}", row.verdict);
    }

    #[test]
    fn the_cfs_fifo_verdict_follows_the_medians() {
        let study_like = [
            case(Kind::TimerSleep, CFS, Load::Idle, 1_000, 55_000.0),
            case(Kind::TimerSleep, FIFO, Load::Idle, 1_000, 5_000.0),
            case(Kind::TimerSleepNoSlack, CFS, Load::Idle, 1_000, 6_000.0),
        ];
        let rows = cfs_vs_fifo_rows(&Cases(&study_like));
        assert_eq!(rows.len(), 1);
        let v = &rows[0].verdict;
        assert!(v.starts_with("agrees (11.00×"), "{v}");
        assert!(v.contains("slack is 98 % of CFS's gap"), "{v}");
        // A guest's FIFO p50 twice the study's: a smaller ratio, said by the figures.
        let guest = [
            case(Kind::TimerSleep, CFS, Load::Idle, 1_000, 58_000.0),
            case(Kind::TimerSleep, FIFO, Load::Idle, 1_000, 12_000.0),
        ];
        let v = &cfs_vs_fifo_rows(&Cases(&guest))[0].verdict;
        assert!(v.starts_with("smaller here"), "{v}");
        assert!(v.contains("FIFO's 2.40× its 5 µs"), "{v}");
        assert!(!v.contains("slack is"), "{v}");
        // No FIFO: undecided, and said why.
        let cfs_only = [case(Kind::TimerSleep, CFS, Load::Idle, 1_000, 58_000.0)];
        let v = &cfs_vs_fifo_rows(&Cases(&cfs_only))[0].verdict;
        assert!(v.starts_with("undecided: SCHED_FIFO was refused"), "{v}");
    }

    #[test]
    fn the_slack_verdict_follows_the_medians() {
        let r =
            |c: f64, n: f64, f: Option<f64>| verdict::verdict(c / n, None, &slack_reason(c, n, f));
        let v = r(58_000.0, 8_000.0, Some(7_000.0));
        assert!(v.starts_with("measurable here"), "{v}");
        assert!(
            v.contains("50.0 µs earlier") && v.contains("98 % of CFS's gap"),
            "{v}"
        );
        let v = r(8_100.0, 8_000.0, Some(7_000.0));
        assert!(v.starts_with("no measurable difference here"), "{v}");
        assert!(v.contains("not what sets"), "{v}");
        let v = r(6_000.0, 8_000.0, None);
        assert!(
            v.starts_with("reversed here") && v.contains("unexplained"),
            "{v}"
        );
    }

    #[test]
    fn the_wakes_verdict_names_the_cheapest_and_dearest() {
        let alike = [("eventfd", 8_000.0), ("futex", 7_800.0), ("epoll", 8_300.0)];
        let v = verdict::verdict(8_300.0 / 7_800.0, None, &wakes_reason(&alike, &[]));
        assert!(v.starts_with("no measurable difference here"), "{v}");
        assert!(
            v.contains("futex cheapest") && v.contains("epoll dearest"),
            "{v}"
        );
        assert!(v.contains("futex 0.97×, epoll 1.04×"), "{v}");
        let apart = [
            ("eventfd", 8_000.0),
            ("futex", 6_000.0),
            ("epoll", 12_000.0),
            ("poll", 9_000.0),
        ];
        let fifo = [("eventfd", 5_000.0), ("poll", 5_500.0)];
        let v = verdict::verdict(2.0, None, &wakes_reason(&apart, &fifo));
        assert!(v.starts_with("measurable here (2.00×)"), "{v}");
        assert!(
            v.contains("futex is cheapest at 6.00 µs, epoll dearest at 12.0 µs, 6.00 µs more"),
            "{v}"
        );
        assert!(v.contains("under FIFO eventfd cheapest"), "{v}");
        assert!(v.contains("poll 1.10×"), "{v}");
        assert_eq!(
            wakes_reason(&[("eventfd", 1.0)], &[]),
            "fewer than two blocking wakes have a p50"
        );
    }

    #[test]
    fn the_premise_reason_follows_the_standing() {
        let why = "the switch";
        let v = premise_reason(("a", 2_000.0), ("b", 100.0), why);
        assert!(v.contains("costs 1.90 µs more") && v.ends_with(why), "{v}");
        let v = premise_reason(("a", 105.0), ("b", 100.0), why);
        assert!(v.contains("within noise") && !v.contains(why), "{v}");
        let v = premise_reason(("a", 50.0), ("b", 100.0), why);
        assert!(v.contains("unexplained"), "{v}");
        let v = premise_reason(("a", f64::NAN), ("b", 100.0), why);
        assert!(v.contains("missing"), "{v}");
    }

    #[test]
    fn the_spin_rows_are_judged_from_the_data() {
        let idle = [
            case(Kind::TimerSleep, CFS, Load::Idle, 100, 60_000.0),
            case(Kind::TimerSpin, CFS, Load::Idle, 100, 100.0),
            case(Kind::EventfdSleep, CFS, Load::Idle, 100, 8_000.0),
            case(Kind::FlagSpin, CFS, Load::Idle, 100, 150.0),
            case(Kind::FlagSpin, CFS, Load::Same, 100, 155.0),
        ];
        let rows = spin_rows(&Cases(&idle));
        assert_eq!(rows.len(), 3);
        assert!(
            rows[0].verdict.starts_with("measurable here"),
            "{}",
            rows[0].verdict
        );
        assert!(
            rows[1].verdict.contains("costs 7.85 µs more"),
            "{}",
            rows[1].verdict
        );
        assert!(
            rows[2].verdict.starts_with("no measurable difference"),
            "{}",
            rows[2].verdict
        );
        let mut loaded = idle.clone();
        loaded[4] = case(Kind::FlagSpin, CFS, Load::Same, 100, 900_000.0);
        let rows = spin_rows(&Cases(&loaded));
        assert!(
            rows[2].verdict.starts_with("measurable here"),
            "{}",
            rows[2].verdict
        );
        assert!(rows[2].verdict.contains("in turn"), "{}", rows[2].verdict);
    }

    /// Wakes `n` times by `kind`'s mechanism from another thread, as the experiment does;
    /// returns how many arrived as exactly one wake-up of the number sent.
    fn delivered(kind: Kind, n: u64) -> u64 {
        let shared = Shared::new().expect("eventfd and epoll");
        let by = kind.woken_by().expect("woken by a thread");
        let from = 100;
        shared.ack.store(from, Ordering::Release);
        shared.arm(from);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let (shared, stop) = (&shared, &stop);
            s.spawn(move || {
                for k in from + 1..=from + n {
                    while shared.ack.load(Ordering::Acquire) < k - 1 {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        std::hint::spin_loop();
                    }
                    // Half the wakes find the sleeper already asleep, half find it awake.
                    if k % 2 == 0 {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    shared.wake(by, k).expect("wake");
                }
            });
            let mut ok = 0;
            for k in from + 1..=from + n {
                let (_, one) = shared.wait(kind, k).expect("wait");
                ok += u64::from(one);
                shared.ack.store(k, Ordering::Release);
            }
            stop.store(true, Ordering::Relaxed);
            ok
        })
    }

    #[test]
    fn every_blocking_wake_delivers_every_wake_up_once() {
        for kind in Kind::BLOCKING_WAKES.into_iter().chain([Kind::FlagSpin]) {
            assert_eq!(delivered(kind, 200), 200, "{}", kind.name());
        }
    }

    #[test]
    fn two_writes_before_a_read_are_caught_as_one_merged_wake() {
        let shared = Shared::new().expect("eventfd");
        shared.wake(WakeBy::Eventfd, 1).expect("wake");
        shared.wake(WakeBy::Eventfd, 2).expect("wake");
        let (_, one) = shared.wait(Kind::PollSleep, 1).expect("wait");
        assert!(!one, "a count of 2 is two wake-ups merged");
        // A futex word that skipped a number is caught too.
        shared.arm(0);
        shared.word.store(2, Ordering::Release);
        let (_, one) = shared.wait(Kind::FutexSleep, 1).expect("wait");
        assert!(!one);
    }

    #[test]
    fn the_slack_guard_puts_the_slack_back() {
        let before = timer_slack();
        {
            let _g = SlackGuard::set(1);
            assert_eq!(timer_slack(), 1);
        }
        assert_eq!(timer_slack(), before);
    }

    #[test]
    fn the_experiment_runs_tiny_with_every_case() {
        let c = ctx();
        if c.cpu == c.other_cpu {
            eprintln!("one CPU: skipped");
            return;
        }
        let out = run_with(
            &c,
            Params {
                rounds: 2,
                per_round: 5,
                cyclictest_loops: 50,
            },
        )
        .expect("runs");
        for load in Load::ALL {
            for kind in Kind::ALL {
                let d = out.dist(&case_name(kind, Policy::Other, load));
                assert_eq!(d.count, 10, "{}", d.name);
            }
        }
        // Every case took every wake-up: none was lost or doubled.
        assert!(
            out.dists
                .iter()
                .filter(|d| !d.name.starts_with("cyclictest"))
                .all(|d| d.count == 10)
        );
        assert!(!out.comparisons.is_empty());
        // Ten samples per case: no p50 (it needs 20), so every row on our cases' percentiles
        // is undecided.
        assert!(
            out.comparisons
                .iter()
                .filter(|c| !c.what.starts_with("cyclictest") && !c.what.contains("mean"))
                .all(|c| c.verdict.starts_with("undecided")),
            "{:?}",
            out.comparisons
        );
        assert!(out.comparisons.iter().any(|c| {
            c.what
                .starts_with("cross-thread wake, idle, p50: eventfd / futex")
        }));
        assert!(out.notes.iter().any(|n| n.starts_with("RT throttling")));
        assert!(out.notes.iter().any(|n| n.contains("poll(2)")));
    }
}
