//! Wake-up latency: how late a thread runs after the moment it should have, sleeping under
//! CFS, sleeping under SCHED_FIFO, or spinning, with the machine idle and with a busy thread
//! on the other CPU or on the same CPU; and `cyclictest` on the same CPU as the outside
//! reference.
//!
//! Two kinds of wake-up, each sleeping or spinning:
//! - a timer: the thread sleeps to absolute deadlines 200 µs apart
//!   (`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`, as cyclictest does) or spins on the
//!   clock until the deadline; the sample is `now - deadline`;
//! - another thread: a waker on the other CPU stamps the TSC and writes an eventfd the sleeper
//!   is blocked on (or stores a sequence number a spinner polls); the sample is the sleeper's
//!   TSC on return minus the waker's stamp (one way; the TSC is constant and synchronised
//!   across CPUs here: `constant_tsc`, `nonstop_tsc`).
//!
//! SCHED_FIFO is only ever given to threads that sleep: a FIFO thread that spins starves the
//! kernel's own work on its CPU (RCU, timers, workqueues) until RT throttling stops it.

use std::fs::File;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::Ctx;
use crate::harness::{Dist, Recorder, Variant, interleave, monotonic_ns, tsc};
use crate::report::{self, Comparison, Level, Outcome};
use crate::system::{Policy, PolicyGuard, read_trimmed, set_policy};

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
    /// Polls an atomic the waker stores.
    FlagSpin,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::TimerSleep,
        Kind::TimerSleepNoSlack,
        Kind::TimerSpin,
        Kind::EventfdSleep,
        Kind::FlagSpin,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::TimerSleep => "timer sleep",
            Kind::TimerSleepNoSlack => "timer sleep, slack 1 ns",
            Kind::TimerSpin => "timer spin",
            Kind::EventfdSleep => "eventfd wake",
            Kind::FlagSpin => "flag spin",
        }
    }

    fn sleeps(self) -> bool {
        matches!(
            self,
            Kind::TimerSleep | Kind::TimerSleepNoSlack | Kind::EventfdSleep
        )
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
#[derive(Debug, Default)]
struct Shared {
    /// The waker's TSC just before it woke the sleeper.
    stamp: AtomicU64,
    /// The last wake-up's number (the flag the spinner polls).
    seq: AtomicU64,
    /// The last wake-up the measured thread has taken.
    ack: AtomicU64,
}

#[derive(Debug)]
enum Cmd {
    /// Wake `n` times, numbers `from + 1 ..= from + n`, by eventfd (`true`) or flag.
    Wake {
        from: u64,
        n: u64,
        eventfd: bool,
    },
    Stop,
}

fn waker(
    shared: &Shared,
    efd: &File,
    cmds: &mpsc::Receiver<Cmd>,
    done: &mpsc::Sender<()>,
    stop: &AtomicBool,
) {
    while let Ok(Cmd::Wake { from, n, eventfd }) = cmds.recv() {
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
            if eventfd {
                let _ = (&*efd).write_all(&1u64.to_ne_bytes());
            } else {
                shared.seq.store(k, Ordering::Release);
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
    out.trader = "The trader spins by default (`--wait spin`, trader/src/program; \
                  the AF_XDP loop polls its RX ring and the UDP loop a non-blocking socket, \
                  trader/src/trading/xdp.rs and udp.rs), pinned with `--cpu`; `--wait block` \
                  sleeps in the kernel instead (the UDP socket with a 100 ms read timeout). \
                  `--fifo PRIO` runs it under SCHED_FIFO (afxdp/src/process.rs set_fifo, \
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
    let efd = eventfd()?;
    let shared = Shared::default();
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
        let (shared, efd, stop) = (&shared, &efd, &stop);
        // Whatever happens below (a panic included), the helper threads are told to stop, or
        // the scope would wait for them forever.
        let _stop = StopOnDrop(stop, vec![loads.other.1.clone(), loads.same.1.clone()]);
        let other_cpu = ctx.other_cpu;
        s.spawn(move || {
            if let Err(e) = affinity::pin_current_thread(other_cpu) {
                eprintln!("    waker: pinning to CPU {other_cpu}: {e}");
            }
            waker(shared, efd, &cmd_rx, &done_tx, stop);
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
                    round(kind, p.per_round, r, shared, efd, cmd_tx, done_rx);
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
         in turn each round; a timer wake-up's sample is its lateness past the deadline \
         (CLOCK_MONOTONIC, read through the vDSO from the TSC), a cross-thread one is the \
         sleeper's TSC minus the waker's stamp. The waker waits for each wake-up to be taken \
         before the next, 200 µs later; with the busy thread on the other CPU it shares that \
         CPU with the waker. cyclictest runs after ours, on the same CPU (-a), its main thread \
         on the other CPU, with -m (mlockall), -i 200, and /dev/cpu_dma_latency held at 0 while \
         it runs; its histogram has 1 µs buckets, from which its percentiles here are taken \
         (overflows counted at its max).",
        p.rounds, p.per_round
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
    efd: &File,
    cmd_tx: &mpsc::Sender<Cmd>,
    done_rx: &mpsc::Receiver<()>,
) {
    match kind {
        Kind::TimerSleep | Kind::TimerSleepNoSlack | Kind::TimerSpin => {
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
        }
        Kind::EventfdSleep | Kind::FlagSpin => {
            let from = shared.ack.load(Ordering::Acquire);
            let eventfd = kind == Kind::EventfdSleep;
            if cmd_tx.send(Cmd::Wake { from, n, eventfd }).is_err() {
                return;
            }
            let mut buf = [0u8; 8];
            for k in from + 1..=from + n {
                if eventfd {
                    if (&*efd).read_exact(&mut buf).is_err() {
                        return;
                    }
                } else {
                    while shared.seq.load(Ordering::Acquire) < k {
                        std::hint::spin_loop();
                    }
                }
                let t1 = tsc();
                let stamp = shared.stamp.load(Ordering::Relaxed);
                r.record_ticks(t1.saturating_sub(stamp), 1);
                shared.ack.store(k, Ordering::Release);
            }
            let _ = done_rx.recv();
        }
    }
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

/// What FIFO's tail (with load on its CPU) shows: a deep tail only where p99.9 is over 10×
/// its p50, and how it stands against CFS's p99.9 in the same condition, if measured.
pub fn fifo_tail_verdict(p50: f64, p999: f64, max: f64, cfs_p999: Option<f64>) -> String {
    let us = report::ns;
    let depth = p999 / p50.max(1.0);
    let shape = if depth > 10.0 {
        format!(
            "FIFO keeps a deep tail here (p99.9 {depth:.0}× its p50, max {}): what FIFO can't \
             remove (interrupts, kernel work, in a guest the host); this run can't tell which",
            us(max)
        )
    } else {
        format!(
            "no deep tail in this run: FIFO's p99.9 is {depth:.1}× its p50 (max {})",
            us(max)
        )
    };
    let vs_cfs = match cfs_p999 {
        Some(c) if c > 1.1 * p999 => format!("; CFS's p99.9 is {:.1}× higher", c / p999.max(1.0)),
        Some(c) if p999 > 1.1 * c => format!("; CFS's p99.9 is {:.1}× lower", p999 / c.max(1.0)),
        Some(_) => "; CFS's p99.9 is about the same".to_string(),
        None => String::new(),
    };
    shape + &vs_cfs
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
    rows.extend(cyclictest_rows(ct));
    rows.extend(spin_rows(&cases));
    if !fifo {
        out.notes
            .push("No FIFO rows: SCHED_FIFO was refused (see above).".into());
    }
    out.comparisons.extend(rows);
}

/// Timer wake-up lateness p50, CFS vs FIFO, per load (FIFO as not measurable where refused).
fn cfs_vs_fifo_rows(cases: &Cases<'_>) -> Vec<Comparison> {
    let us = |v: f64| report::ns(v);
    let mut rows = Vec::new();
    for load in [Load::Same, Load::Idle, Load::Other] {
        let c = cases.find(Kind::TimerSleep, CFS, load);
        let f = cases.find(Kind::TimerSleep, FIFO, load);
        match (c, f) {
            (Some(c), Some(f)) => rows.push(Comparison {
                standing: None,
                what: format!("timer wake-up lateness p50, CFS vs FIFO ({})", load.name()),
                ours: format!("{} vs {}", us(c.p50_ns), us(f.p50_ns)),
                our_ratio: Some(c.p50_ns / f.p50_ns.max(1.0)),
                study: "55 µs vs 5 µs (cyclictest)".into(),
                study_ratio: Some(11.0),
                verdict: if c.p50_ns > 2.0 * f.p50_ns {
                    "agrees: FIFO moves the median (mostly by removing timer slack: see the \
                     slack row)"
                        .into()
                } else {
                    "FIFO barely moves the median here: nothing competes with the sleeper for \
                     its CPU at the wake-up"
                        .into()
                },
            }),
            (Some(c), None) => rows.push(Comparison {
                standing: None,
                what: format!("timer wake-up lateness p50, CFS vs FIFO ({})", load.name()),
                ours: format!(
                    "{} vs not measurable here: SCHED_FIFO refused",
                    us(c.p50_ns)
                ),
                our_ratio: None,
                study: "55 µs vs 5 µs".into(),
                study_ratio: Some(11.0),
                verdict: "–".into(),
            }),
            _ => {}
        }
    }
    rows
}

/// CFS timer wake-up p50 with the default timer slack vs slack 1 ns (FIFO beside), idle and
/// with load on the same CPU.
fn slack_rows(cases: &Cases<'_>) -> Vec<Comparison> {
    let us = |v: f64| report::ns(v);
    let mut rows = Vec::new();
    for load in [Load::Idle, Load::Same] {
        if let (Some(c), Some(n)) = (
            cases.find(Kind::TimerSleep, CFS, load),
            cases.find(Kind::TimerSleepNoSlack, CFS, load),
        ) {
            let f = cases.find(Kind::TimerSleep, FIFO, load);
            rows.push(Comparison {
                standing: None,
                what: format!(
                    "timer wake-up p50, CFS: default timer slack vs slack 1 ns (vs FIFO) ({})",
                    load.name()
                ),
                ours: format!(
                    "{} vs {} (FIFO {})",
                    us(c.p50_ns),
                    us(n.p50_ns),
                    f.map_or("–".into(), |f| us(f.p50_ns))
                ),
                our_ratio: Some(c.p50_ns / n.p50_ns.max(1.0)),
                study: "55 µs vs 5 µs (CFS vs FIFO)".into(),
                study_ratio: Some(11.0),
                verdict: if c.p50_ns - n.p50_ns > 30_000.0 {
                    "most of CFS's median lateness is timer slack (50 µs for SCHED_OTHER, 0 for \
                     real-time threads), not the run queue: prctl(PR_SET_TIMERSLACK, 1) gets \
                     most of FIFO's median without FIFO"
                        .into()
                } else {
                    "timer slack is not what separates CFS from FIFO here".into()
                },
            });
        }
    }
    rows
}

/// FIFO's timer wake-up tail with load on its CPU, against CFS's, if FIFO ran.
fn fifo_tail_row(cases: &Cases<'_>) -> Option<Comparison> {
    let us = |v: f64| report::ns(v);
    let f = cases.find(Kind::TimerSleep, FIFO, Load::Same)?;
    let c = cases.find(Kind::TimerSleep, CFS, Load::Same);
    Some(Comparison {
        standing: None,
        what: "FIFO timer wake-up, p99.9 and max (load on same CPU)".into(),
        ours: format!(
            "{} (max {}; p50 {}){}",
            us(f.p999_ns),
            us(f.max_ns),
            us(f.p50_ns),
            c.as_ref()
                .map_or(String::new(), |c| format!("; CFS p99.9 {}", us(c.p999_ns)))
        ),
        our_ratio: None,
        study: "p99.9 1287 µs".into(),
        study_ratio: None,
        verdict: fifo_tail_verdict(f.p50_ns, f.p999_ns, f.max_ns, c.as_ref().map(|c| c.p999_ns)),
    })
}

/// cyclictest's CFS vs FIFO p50 and FIFO's tail, per load where both ran.
fn cyclictest_rows(ct: &[Dist]) -> Vec<Comparison> {
    let us = |v: f64| report::ns(v);
    let ct_find = |name: &str| ct.iter().find(|d| d.name == name);
    let mut rows = Vec::new();
    for load in [Load::Same, Load::Idle] {
        let c = ct_find(&format!("cyclictest CFS, {}", load.name()));
        let f = ct_find(&format!("cyclictest FIFO 80, {}", load.name()));
        if let (Some(c), Some(f)) = (c, f) {
            rows.push(Comparison {
                standing: None,
                what: format!(
                    "cyclictest p50, CFS vs FIFO ({}); FIFO p99.9, max",
                    load.name()
                ),
                ours: format!(
                    "{} vs {}; {}, {}",
                    us(c.p50_ns),
                    us(f.p50_ns),
                    us(f.p999_ns),
                    us(f.max_ns)
                ),
                our_ratio: Some(c.p50_ns / f.p50_ns.max(1.0)),
                study: "55 µs vs 5 µs; p99.9 1287 µs".into(),
                study_ratio: Some(11.0),
                verdict: "the outside reference for our timer cases (1 µs buckets)".into(),
            });
        }
    }
    rows
}

/// Spinning against sleeping: to a deadline (idle), across threads (idle: eventfd under CFS
/// and FIFO vs a flag), and a spinner sharing its CPU with a busy thread.
fn spin_rows(cases: &Cases<'_>) -> Vec<Comparison> {
    let us = |v: f64| report::ns(v);
    let mut rows = Vec::new();
    if let (Some(sl), Some(sp)) = (
        cases.find(Kind::TimerSleep, CFS, Load::Idle),
        cases.find(Kind::TimerSpin, CFS, Load::Idle),
    ) {
        rows.push(Comparison {
            standing: None,
            what: "sleeping vs spinning to a deadline, CFS, idle: p50 (p99.9)".into(),
            ours: format!(
                "{} ({}) vs {} ({})",
                us(sl.p50_ns),
                us(sl.p999_ns),
                us(sp.p50_ns),
                us(sp.p999_ns)
            ),
            our_ratio: Some(sl.p50_ns / sp.p50_ns.max(1.0)),
            study: "not measured (the study compares schedulers)".into(),
            study_ratio: None,
            verdict: "a spinner pays no wake-up at all, but burns its CPU".into(),
        });
    }
    let e_cfs = cases.find(Kind::EventfdSleep, CFS, Load::Idle);
    let e_fifo = cases.find(Kind::EventfdSleep, FIFO, Load::Idle);
    let flag = cases.find(Kind::FlagSpin, CFS, Load::Idle);
    if let (Some(e), Some(fl)) = (&e_cfs, &flag) {
        rows.push(Comparison {
            standing: None,
            what: "cross-thread wake, idle: eventfd CFS / eventfd FIFO / spinning flag, p50".into(),
            ours: format!(
                "{} / {} / {}",
                us(e.p50_ns),
                e_fifo
                    .as_ref()
                    .map_or("not measurable here".into(), |f| us(f.p50_ns)),
                us(fl.p50_ns)
            ),
            our_ratio: Some(e.p50_ns / fl.p50_ns.max(1.0)),
            study: "not measured (the study: futexes on the hot path → tail spikes)".into(),
            study_ratio: None,
            verdict: "a blocked thread costs a wake-up (IPI, schedule, switch); a spinner sees \
                      the store in a cache-line transfer"
                .into(),
        });
    }
    if let Some(fl) = cases.find(Kind::FlagSpin, CFS, Load::Same) {
        rows.push(Comparison {
            standing: None,
            what: "spinning flag under CFS with a busy thread on its CPU: p50, p99.9".into(),
            ours: format!("{}, {}", us(fl.p50_ns), us(fl.p999_ns)),
            our_ratio: None,
            study: "–".into(),
            study_ratio: None,
            verdict: "a spinner must own its CPU: shared, it waits out the other thread's slice"
                .into(),
        });
    }
    rows
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

    #[test]
    fn cyclictest_json_becomes_a_distribution_with_overflows_at_max() {
        let json = r#"{"thread": {"0": {"histogram": {"5": 3, "7": 1}, "cycles": 5,
                      "min": 5, "max": 900, "avg": 6.0}}}"#;
        let d = parse_cyclictest_json(&ctx(), json)
            .expect("parses")
            .finish("x");
        assert_eq!(d.count, 5);
        assert!((d.p50_ns - 5000.0).abs() < 10.0, "{d:?}");
        assert!((d.max_ns - 900_000.0).abs() < 1000.0, "{d:?}");
    }

    #[test]
    fn the_fifo_tail_verdict_claims_a_deep_tail_only_when_there_is_one() {
        // The reviewer's run: p99.9 26.6 µs, max 26.7 µs over a ~10 µs p50.
        let v = fifo_tail_verdict(10_000.0, 26_600.0, 26_700.0, Some(60_000.0));
        assert!(v.starts_with("no deep tail"), "{v}");
        assert!(v.contains("CFS's p99.9 is 2.3× higher"), "{v}");
        let v = fifo_tail_verdict(5_000.0, 1_287_000.0, 4_000_000.0, Some(1_300_000.0));
        assert!(v.starts_with("FIFO keeps a deep tail"), "{v}");
        assert!(v.contains("about the same"), "{v}");
        let v = fifo_tail_verdict(5_000.0, 20_000.0, 30_000.0, Some(10_000.0));
        assert!(v.contains("CFS's p99.9 is 2.0× lower"), "{v}");
        let v = fifo_tail_verdict(5_000.0, 20_000.0, 30_000.0, None);
        assert!(!v.contains("CFS"), "{v}");
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
        assert!(out.notes.iter().any(|n| n.starts_with("RT throttling")));
    }
}
