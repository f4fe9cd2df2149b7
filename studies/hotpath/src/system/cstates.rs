//! C-states in a guest: what halting costs a blocked thread's wake-up.
//!
//! The study disabled deep idle states on bare metal and found p99.99 shorter when idle. A KVM
//! guest has no C-states of its own to switch: its idle driver is `haltpoll`, whose one deep
//! state ("haltpoll idle") executes HLT, a VM exit; the host then runs something else, or
//! halts the physical CPU, until an interrupt for this vCPU arrives. Before halting, the
//! `haltpoll` governor polls for up to `guest_halt_poll_ns` (the window grows and shrinks with
//! how long past idles were), so a wake-up that comes inside the window costs no exit. This
//! project's guests boot with `haltpoll.guest_halt_poll_ns=0`: they halt at once.
//!
//! The experiment: a thread pinned to the measured CPU blocks reading an eventfd; a waker on the
//! other CPU spins through a random gap (20-400 µs: an idle feed's gaps between ticks), stamps
//! the TSC and writes the eventfd; the sleeper stamps on return. The measured CPU's idle setting
//! is switched between rounds, in rotated order, and put back exactly afterwards (also on a
//! panic; `cargo xtask hotpath` also restores it if the suite is killed):
//! - halt at once (`guest_halt_poll_ns` 0, this guest's boot setting);
//! - poll first, up to 200 µs (the kernel's default `guest_halt_poll_ns`);
//! - never halt: a PM QoS request for 0 µs wake-up latency (`/dev/cpu_dma_latency` held open
//!   with 0, as tuned's latency profiles do): every CPU idles in POLL, a spinning loop, as
//!   `idle=poll` would on bare metal. (Disabling the "haltpoll idle" state in sysfs does not
//!   do it: with its poll limit at 0 the haltpoll governor picks that state without reading
//!   the switch.) The halt state's entry counter is read around every round, and the report
//!   says how many halts each setting saw.

use std::fs::File;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::{Context, bail};

use super::SettingGuard;
use super::wakeup::eventfd;
use crate::code::{Rng, Start, join};
use crate::harness::{Recorder, Tsc, rotation, tsc};
use crate::report::{Comparison, Level, Outcome};
use crate::verdict::{self, Spread};
use crate::{Ctx, report};

const POLL_NS: &str = "/sys/module/haltpoll/parameters/guest_halt_poll_ns";
/// The kernel's default poll window (drivers/cpuidle/governors/haltpoll.c).
const KERNEL_DEFAULT_POLL_NS: u64 = 200_000;
/// The waker's gap between wakes, µs: long enough that the sleeper's CPU goes idle.
const GAP_US: (u64, u64) = (20, 400);

/// One idle setting of the measured CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idle {
    HaltAtOnce,
    PollFirst,
    NeverHalt,
}

impl Idle {
    pub const ALL: [Idle; 3] = [Idle::HaltAtOnce, Idle::PollFirst, Idle::NeverHalt];

    pub fn name(self) -> &'static str {
        match self {
            Idle::HaltAtOnce => "halt at once (poll 0 µs)",
            Idle::PollFirst => "poll up to 200 µs, then halt",
            Idle::NeverHalt => "never halt (PM QoS 0 µs: POLL only)",
        }
    }
}

/// The poll window, saved before the first change and restored when this drops; the PM QoS
/// request that keeps the CPUs out of the halt state while it is held; and the halt state's
/// entry counter, to check each setting did what it says.
struct Settings {
    poll: SettingGuard,
    qos: Option<File>,
    halt_usage: String,
}

impl Settings {
    /// The CPU's idle state named "haltpoll idle", or an error saying what is missing.
    fn save(cpu: usize) -> anyhow::Result<Settings> {
        let driver = std::fs::read_to_string("/sys/devices/system/cpu/cpuidle/current_driver")
            .unwrap_or_default();
        if driver.trim() != "haltpoll" {
            bail!(
                "the cpuidle driver is {:?}, not haltpoll: this experiment is a KVM guest's \
                 (on bare metal, disable C-states with the driver's own states)",
                driver.trim()
            );
        }
        let state = tuning::idle::halt_state(&tuning::idle::Paths::live(), cpu)?;
        let poll = SettingGuard::save(POLL_NS).with_context(|| format!("reading {POLL_NS}"))?;
        // Writable? (root, and a kernel that allows it): try the value it already has.
        poll.set(poll.old())
            .with_context(|| format!("writing {POLL_NS} (needs root)"))?;
        Ok(Settings {
            poll,
            qos: None,
            halt_usage: state.join("usage").display().to_string(),
        })
    }

    /// Never halting is a PM QoS request for 0 µs (held open), not the halt state's `disable`
    /// switch, which the haltpoll governor does not read when its poll limit is 0.
    fn apply(&mut self, idle: Idle) -> anyhow::Result<()> {
        self.qos = None;
        let poll = match idle {
            Idle::HaltAtOnce => "0".to_string(),
            Idle::PollFirst => KERNEL_DEFAULT_POLL_NS.to_string(),
            Idle::NeverHalt => {
                self.qos = Some(tuning::idle::hold_zero_latency(std::path::Path::new(
                    "/dev/cpu_dma_latency",
                ))?);
                "0".to_string()
            }
        };
        self.poll.set(&poll).context("setting the poll window")?;
        Ok(())
    }

    /// Entries into the halt state on the measured CPU since boot.
    fn halts(&self) -> u64 {
        std::fs::read_to_string(&self.halt_usage)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }
}

pub fn run(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let wakes = ctx.pick(40, 500);
    let rounds = ctx.pick(3, 24);
    run_with(ctx, wakes, rounds)
}

/// `rounds` rounds of `wakes` wake-ups per setting (plus one unrecorded round).
pub fn run_with(ctx: &Ctx, wakes: usize, rounds: usize) -> anyhow::Result<Outcome> {
    if !ctx.root {
        bail!("switching the guest's idle states needs root");
    }
    let mut settings = Settings::save(ctx.cpu)?;
    let mut out = Outcome::new(
        "cstates",
        "C-states in a guest: halting (a VM exit) vs polling vs never halting, for a blocked wake-up",
        Level::System,
    );
    let mut recs: Vec<Recorder> = Idle::ALL.iter().map(|_| Recorder::new(ctx.tsc)).collect();
    // Per round, per setting: the round's p50, for the medians over rounds.
    let mut medians: Vec<Vec<f64>> = vec![Vec::new(); Idle::ALL.len()];
    let mut rng = Rng::new(0x0c57_a7e5);
    let mut delivered = 0usize;
    // Halt-state entries on the measured CPU during each setting's recorded rounds.
    let mut halts = [0u64; Idle::ALL.len()];
    for round in 0..=rounds {
        for i in rotation(round, Idle::ALL.len()) {
            settings.apply(Idle::ALL[i])?;
            let gaps: Vec<u64> = (0..wakes)
                .map(|_| GAP_US.0 + rng.below((GAP_US.1 - GAP_US.0) as usize) as u64)
                .collect();
            let before = settings.halts();
            let lat = wake_round(ctx, &gaps)?;
            if round == 0 {
                continue; // warm-up
            }
            halts[i] += settings.halts().saturating_sub(before);
            delivered += lat.len();
            let mut r = Recorder::new(ctx.tsc);
            for &ns in &lat {
                recs[i].record_ns(ns);
                r.record_ns(ns);
            }
            medians[i].push(r.finish("round").p50_ns);
        }
    }
    drop(settings);
    let dists: Vec<_> = Idle::ALL
        .iter()
        .zip(&recs)
        .map(|(idle, r)| r.finish(idle.name()))
        .collect();
    out.dists = dists;
    let spreads: Vec<Option<Spread>> = medians.iter().map(|m| Spread::of(m)).collect();
    compare(&mut out, &spreads);
    out.notes.push(format!(
        "{delivered} wake-ups delivered of {} sent ({} rounds of {wakes} per setting after one \
         unrecorded round; gaps uniform {}-{} µs, the waker spinning through them on CPU {}). \
         Settings restored: {}.",
        rounds * wakes * Idle::ALL.len(),
        rounds,
        GAP_US.0,
        GAP_US.1,
        ctx.other_cpu,
        restored()
    ));
    out.notes.push(halts_note(&halts, rounds * wakes));
    out.notes.push(
        "A veth lab's blocking trader (`--wait block`, `trigger-block`) sleeps in poll() exactly \
         like this sleeper: each tick after a quiet gap pays the halting row's wake-up unless the \
         trader's CPU polls first. A spinning trader (the default) never idles, so none of this \
         touches it; on bare metal the same choice is the C-state limit (`intel_idle.max_cstate`, \
         `processor.max_cstate`, or a PM QoS request on /dev/cpu_dma_latency)."
            .into(),
    );
    out.trader = "The trader spins by default (crates/trader/src/trading/xdp.rs, udp.rs: the loop never \
                  sleeps), so its CPU never enters an idle state while it runs; `--wait block` \
                  and the trigger-block path sleep in poll() (crates/trader/src/trading/trigger.rs) \
                  and pay a wake-up per tick whose cost this experiment shows."
        .into();
    Ok(out)
}

/// How often the measured CPU entered the halt state per wake-up under each setting: the
/// check that "never halt" never did.
pub fn halts_note(halts: &[u64; 3], wakes: usize) -> String {
    let per = |h: u64| h as f64 / wakes.max(1) as f64;
    let mut s = format!(
        "Halt-state entries on the measured CPU per wake-up: {:.2} halting at once, {:.2} \
         polling first, {:.2} never halting",
        per(halts[0]),
        per(halts[1]),
        per(halts[2])
    );
    if halts[2] > 0 {
        s.push_str(&format!(
            " ({} halts while asked never to: the PM QoS request did not hold them all)",
            halts[2]
        ));
    } else {
        s.push_str(" (none: the PM QoS request held)");
    }
    s.push('.');
    s
}

/// What the restore left, read back (for the note: a reader can check it was put back).
fn restored() -> String {
    std::fs::read_to_string(POLL_NS)
        .map(|v| format!("guest_halt_poll_ns = {}", v.trim()))
        .unwrap_or_else(|e| format!("guest_halt_poll_ns unreadable ({e})"))
}

/// One round: the sleeper (this thread, pinned to `ctx.cpu`) blocks on an eventfd, the waker on
/// `ctx.other_cpu` wakes it after each gap. Returns each wake-up's latency, ns.
fn wake_round(ctx: &Ctx, gaps: &[u64]) -> anyhow::Result<Vec<f64>> {
    ctx.pin()?;
    let efd = eventfd().context("eventfd")?;
    let mut reader = efd.try_clone().context("dup eventfd")?;
    let sent = AtomicU64::new(0);
    // Wakes the sleeper has taken: the waker starts each gap only once the previous wake was
    // read, so two writes never add up in the eventfd's counter to one read.
    let taken = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let start = Start::default();
    let tsc_cal = ctx.tsc;
    let mut lat = Vec::with_capacity(gaps.len());
    std::thread::scope(|s| -> anyhow::Result<()> {
        let h = s.spawn(|| -> anyhow::Result<()> {
            start.worker(ctx)?;
            waker(&efd, &sent, &taken, &stop, gaps, tsc_cal)
        });
        if !start.ready() {
            return join(h);
        }
        start.go();
        let mut buf = [0u8; 8];
        for i in 1..=gaps.len() as u64 {
            reader.read_exact(&mut buf).context("reading the eventfd")?;
            let t = tsc();
            let at = sent.load(Ordering::Acquire);
            lat.push(tsc_cal.ns(t.saturating_sub(at)));
            taken.store(i, Ordering::Release);
        }
        stop.store(true, Ordering::Release);
        join(h)
    })?;
    Ok(lat)
}

fn waker(
    efd: &File,
    sent: &AtomicU64,
    taken: &AtomicU64,
    stop: &AtomicBool,
    gaps: &[u64],
    tsc_cal: Tsc,
) -> anyhow::Result<()> {
    let mut w = efd;
    for (i, &gap) in gaps.iter().enumerate() {
        while taken.load(Ordering::Acquire) < i as u64 {
            std::hint::spin_loop();
        }
        let until = tsc() + (gap as f64 * 1_000.0 * tsc_cal.ticks_per_ns) as u64;
        while tsc() < until {
            std::hint::spin_loop();
        }
        if stop.load(Ordering::Acquire) {
            break;
        }
        sent.store(tsc(), Ordering::Release);
        w.write_all(&1u64.to_ne_bytes())
            .context("writing the eventfd")?;
    }
    Ok(())
}

/// The rows: halting against never halting, and the poll window against halting, by the
/// medians over rounds; the tails where their samples reach.
fn compare(out: &mut Outcome, spreads: &[Option<Spread>]) {
    let [halt, poll, never] = [0, 1, 2].map(|i| spreads[i]);
    let d = |i: usize| &out.dists[i];
    let row = |what: &str, a: Option<Spread>, b: Option<Spread>| -> Comparison {
        let (Some(a), Some(b)) = (a, b) else {
            return Comparison::finding(what, "–", "–", "undecided: no rounds measured".into());
        };
        let ours = format!(
            "{} ({}–{}) vs {} ({}–{}), medians of {} rounds",
            report::ns(a.median),
            report::ns(a.min),
            report::ns(a.max),
            report::ns(b.median),
            report::ns(b.min),
            report::ns(b.max),
            a.n
        );
        Comparison::judged(
            what,
            ours,
            a.median / b.median,
            "–",
            None,
            &spread_reason(a, b),
        )
    };
    let rows = vec![
        row(
            "blocked wake-up p50: halt at once vs never halt",
            halt,
            never,
        ),
        row(
            "blocked wake-up p50: halt at once vs poll up to 200 µs",
            halt,
            poll,
        ),
        tail_row("p99", 0.99, d(0), d(2)),
        tail_row("p99.99", 0.9999, d(0), d(2)),
    ];
    out.comparisons.extend(rows);
}

/// Why a ratio of medians stands where it does: whether the rounds' ranges overlap.
pub fn spread_reason(a: Spread, b: Spread) -> String {
    if a.overlaps(&b) {
        format!(
            "the rounds' ranges overlap ({}–{} and {}–{}): some rounds of each beat some of \
             the other",
            report::ns(a.min),
            report::ns(a.max),
            report::ns(b.min),
            report::ns(b.max)
        )
    } else {
        format!(
            "the rounds' ranges don't overlap: every round of one beat every round of the \
             other ({}–{} vs {}–{})",
            report::ns(a.min),
            report::ns(a.max),
            report::ns(b.min),
            report::ns(b.max)
        )
    }
}

/// A tail row, halting vs never halting: the study's claim (p99.99 shorter with deep idle
/// states off), undecided where the samples don't reach the percentile.
fn tail_row(
    label: &str,
    q: f64,
    halt: &crate::harness::Dist,
    never: &crate::harness::Dist,
) -> Comparison {
    let what = format!("blocked wake-up {label}: halt at once vs never halt");
    match (halt.at(q), never.at(q)) {
        (Some(h), Some(n)) => Comparison::judged(
            what,
            format!("{} vs {}", report::ns(h), report::ns(n)),
            h / n,
            "deep idle states off: p99.99 shorter when idle",
            None,
            &format!("{} and {} samples", halt.count, never.count),
        ),
        _ => Comparison::finding(
            what,
            format!("{} and {} samples", halt.count, never.count),
            "deep idle states off: p99.99 shorter when idle",
            format!(
                "undecided: {label} needs {} samples per setting",
                verdict::samples_for(q)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(v: &[f64]) -> Spread {
        Spread::of(v).unwrap()
    }

    #[test]
    fn the_halts_note_checks_never_halting() {
        let n = halts_note(&[1_000, 300, 0], 1_000);
        assert!(
            n.contains("1.00 halting at once, 0.30 polling first, 0.00 never"),
            "{n}"
        );
        assert!(n.contains("none: the PM QoS request held"), "{n}");
        let n = halts_note(&[1_000, 300, 7], 1_000);
        assert!(n.contains("7 halts while asked never to"), "{n}");
    }

    #[test]
    fn the_spread_reason_follows_the_rounds() {
        let r = spread_reason(spread(&[10.0, 12.0]), spread(&[11.0, 13.0]));
        assert!(r.contains("overlap"), "{r}");
        let r = spread_reason(spread(&[20.0, 22.0]), spread(&[11.0, 13.0]));
        assert!(r.contains("every round"), "{r}");
    }

    #[test]
    fn a_tail_without_its_samples_is_undecided() {
        let t = Tsc {
            ticks_per_ns: 1.0,
            overhead_ticks: 0,
        };
        let dist = |n: u32, v: f64| {
            let mut r = Recorder::new(t);
            for _ in 0..n {
                r.record_ns(v);
            }
            r.finish("x")
        };
        let c = tail_row("p99", 0.99, &dist(500, 20_000.0), &dist(500, 5_000.0));
        assert!(c.verdict.starts_with("undecided"), "{}", c.verdict);
        let c = tail_row("p99", 0.99, &dist(2_000, 20_000.0), &dist(2_000, 5_000.0));
        assert!(
            c.verdict.starts_with("measurable here (4.00×)"),
            "{}",
            c.verdict
        );
        let c = tail_row("p99", 0.99, &dist(2_000, 5_000.0), &dist(2_000, 5_000.0));
        assert!(c.verdict.starts_with("no measurable"), "{}", c.verdict);
    }

    #[test]
    fn every_wake_is_delivered_and_the_settings_come_back() {
        let ctx = crate::code::test_ctx();
        let root = crate::is_root();
        if !root || Settings::save(ctx.cpu).is_err() {
            eprintln!("skipped: needs root and the haltpoll cpuidle driver");
            return;
        }
        let before = std::fs::read_to_string(POLL_NS).unwrap();
        let ctx = Ctx { root: true, ..ctx };
        let out = run_with(&ctx, 10, 1).unwrap();
        assert_eq!(out.dists.len(), 3);
        assert!(out.dists.iter().all(|d| d.count == 10), "{:?}", out.dists);
        assert_eq!(std::fs::read_to_string(POLL_NS).unwrap(), before);
    }
}
