//! False sharing: two threads on two CPUs, each incrementing only its own counter. Whether the
//! two counters share a cache line decides whether every increment has to pull the line back
//! from the other core (its write invalidated our copy), or stays in the core's own L1.
//!
//! Three layouts, each the two counters of one 128-byte aligned block:
//! - one line: side by side (8 bytes apart);
//! - padded to 64 B: one 64-byte line each, the two lines being the halves of one aligned
//!   128-byte pair (what Intel's adjacent-line prefetcher fetches together: the worst case for
//!   64-byte padding);
//! - padded to 128 B: `crossbeam_utils::CachePadded` (128-byte alignment on x86-64 for exactly
//!   that prefetcher).
//!
//! Two kinds of increment: `fetch_add` (a locked read-modify-write) and a relaxed load + store
//! (a plain `mov` pair: what a single-writer statistics counter needs).

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

use super::{Start, join, topology};
use crate::Ctx;
use crate::harness::{Dist, Variant, interleave, tsc};
use crate::report::{Comparison, Level, Outcome, ns};
use crate::verdict::{Spread, Standing, standing};

/// Two counters in some layout.
pub trait Pair: Default + Sync {
    fn a(&self) -> &AtomicU64;
    fn b(&self) -> &AtomicU64;
}

/// Both counters in one cache line.
#[derive(Debug, Default)]
#[repr(C, align(128))]
pub struct OneLine {
    a: AtomicU64,
    b: AtomicU64,
}

/// One 64-byte line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Line64(AtomicU64);

/// One 64-byte line each: the two halves of one 128-byte aligned pair.
#[derive(Debug, Default)]
#[repr(C, align(128))]
pub struct Padded64 {
    a: Line64,
    b: Line64,
}

/// 128 bytes each (`CachePadded`).
#[derive(Debug, Default)]
#[repr(C)]
pub struct Padded128 {
    a: CachePadded<AtomicU64>,
    b: CachePadded<AtomicU64>,
}

impl Pair for OneLine {
    fn a(&self) -> &AtomicU64 {
        &self.a
    }
    fn b(&self) -> &AtomicU64 {
        &self.b
    }
}

impl Pair for Padded64 {
    fn a(&self) -> &AtomicU64 {
        &self.a.0
    }
    fn b(&self) -> &AtomicU64 {
        &self.b.0
    }
}

impl Pair for Padded128 {
    fn a(&self) -> &AtomicU64 {
        &self.a
    }
    fn b(&self) -> &AtomicU64 {
        &self.b
    }
}

/// How a thread increments its counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `fetch_add(1, Relaxed)`: `lock xadd`/`lock inc`.
    FetchAdd,
    /// `store(load(Relaxed) + 1, Relaxed)`: two plain moves (one writer per counter).
    LoadStore,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::FetchAdd => "fetch_add",
            Op::LoadStore => "load+store",
        }
    }
}

/// `n` increments of `c`. Atomic operations are never merged by the compiler, so each is a
/// real access to the counter's line.
#[inline(never)]
fn bump(c: &AtomicU64, n: u64, op: Op) {
    match op {
        Op::FetchAdd => {
            for _ in 0..n {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
        Op::LoadStore => {
            for _ in 0..n {
                let v = c.load(Ordering::Relaxed);
                c.store(v + 1, Ordering::Relaxed);
            }
        }
    }
}

/// One run: both counters reset, then each thread (this one on `ctx.cpu`, one on
/// `ctx.other_cpu`) increments its own `n` times. Returns the ticks from the start until both
/// finished, and the two final counts.
pub fn run_pair<P: Pair>(ctx: &Ctx, pair: &P, op: Op, n: u64) -> anyhow::Result<(u64, u64, u64)> {
    pair.a().store(0, Ordering::Relaxed);
    pair.b().store(0, Ordering::Relaxed);
    let start = Start::default();
    let done = CachePadded::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            start.worker(ctx)?;
            bump(pair.b(), n, op);
            done.store(true, Ordering::Release);
            Ok(())
        });
        if !start.ready() {
            return join(h).map(|()| (0, 0, 0));
        }
        start.go();
        let t0 = tsc();
        bump(pair.a(), n, op);
        while !done.load(Ordering::Acquire) {
            std::hint::spin_loop();
        }
        let t1 = tsc();
        join(h)?;
        Ok((
            t1.wrapping_sub(t0),
            pair.a().load(Ordering::Relaxed),
            pair.b().load(Ordering::Relaxed),
        ))
    })
}

/// Sizes of one run of the experiment.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// Increments per thread per run.
    pub n: u64,
    pub warmup: usize,
    pub rounds: usize,
}

const LAYOUTS: [&str; 3] = ["one line", "padded 64 B", "padded 128 B"];
const OPS: [Op; 2] = [Op::FetchAdd, Op::LoadStore];

fn name(op: Op, layout: &str) -> String {
    format!("{}, {layout}", op.name())
}

/// Study: 4.16 s with the two counters in one line, 0.55 s padded.
const STUDY_SHARED_S: f64 = 4.16;
const STUDY_PADDED_S: f64 = 0.55;

pub fn run(ctx: &Ctx) -> anyhow::Result<Outcome> {
    run_with(
        ctx,
        ctx.pick(
            Params {
                n: 200_000,
                warmup: 1,
                rounds: 4,
            },
            Params {
                n: 2_000_000,
                warmup: 1,
                rounds: 16,
            },
        ),
    )
}

pub fn run_with(ctx: &Ctx, p: Params) -> anyhow::Result<Outcome> {
    ctx.pin()?;
    let (dists, runs) = measure(ctx, p)?;
    let mut out = Outcome::new(
        "false-sharing",
        "False sharing: two threads, two counters, one cache line or padded",
        Level::Code,
    );
    out.dists = dists;
    let siblings = smt_siblings(ctx.cpu, ctx.other_cpu);
    out.comparisons = compare(&runs, p.n, siblings);
    out.notes = notes(ctx, p, &runs, siblings);
    // What sharing a line added per fetch_add here (the first op's one line vs padded 64 B).
    let added = (median(&runs[0][0]) - median(&runs[0][1])) / p.n as f64;
    out.trader = trader_note(added);
    Ok(out)
}

/// Where the trader shares lines between CPUs, citing the code; `added_ns`: what a shared line
/// added per `fetch_add` in this run (NaN: no figure).
pub fn trader_note(added_ns: f64) -> String {
    let here = if added_ns.is_nan() {
        "this run has no figure for it".to_string()
    } else {
        format!(
            "this run's one-line rows put a line held by two writers at {} more per locked \
             increment",
            ns(added_ns)
        )
    };
    format!(
        "The trader's per-packet work is one thread that writes no memory another thread \
         writes: its counters are plain `u64` fields of `Trader::counters` \
         (`results::TraderCounters`, bumped in crates/trader-core/src/sequencer.rs and desk.rs), read after \
         the run; the loop's only shared atomic is the stop flag (crates/trader/src/trading/mod.rs \
         `run_with_clock`: one relaxed load per turn, written only by the signal handler, so \
         its line stays shared-clean); the XDP program's counters are a per-CPU map \
         (ebpf/xdp-ebpf/src/maps.rs `COUNTERS: PerCpuArray`). One line is shared on purpose, on \
         the trigger path: the `ARM` map's one value, `ArmSlot` (ebpf/xdp-common/src/lib.rs: 128 \
         bytes, two cache lines; the map is `ARM: Array<ArmSlot>` in ebpf/xdp-ebpf/src/maps.rs, \
         memory-mapped by `ArmMap` in crates/afxdp/src/xdp/arm_mem.rs). The trader writes its `Arm` \
         in the first line between ticks under a sequence lock (`ArmMap::set`, then \
         `CLDEMOTE` on that line where the CPU has it) and reads `fired_generation` and \
         `fired_price` in the second (`ArmMap::last_fired`); the XDP program, on the CPU that \
         polls the NIC's RX queue, reads the arm, clears `armed` when it fires and writes that \
         record in the second line. Split on purpose: with the record in the arm's line, the \
         spinning trader pulled that line back to its core, and the program's read of the arm \
         was a snoop of the trader's core (91-109 ns of a ~210-ns fired run on an Intel guest, \
         43-49 with the line split and demoted: docs/trigger.md). The lines move a few times \
         per armed tick, not per increment; {here}. Nothing else to pad today; the `floor` binary keeps \
         its ping-pong word on a 128-byte line of its own (crates/floor/src/lib.rs \
         `#[repr(align(128))] struct Line`)."
    )
}

/// Every (op, layout) variant, interleaved round by round; fails unless every run counted
/// exactly. Returns the distributions (ns per increment) and the spread of each variant's
/// recorded runs in ns (median, range, rounds), indexed `[op][layout]` as [`OPS`] and
/// [`LAYOUTS`].
fn measure(ctx: &Ctx, p: Params) -> anyhow::Result<(Vec<Dist>, Runs)> {
    let Params { n, warmup, rounds } = p;
    let ops = u32::try_from(n).map_err(|_| anyhow::anyhow!("{n} increments: at most 2^32"))?;
    let one = OneLine::default();
    let p64 = Padded64::default();
    let p128 = Padded128::default();
    let errors = RefCell::new(Vec::<String>::new());
    // Each variant's recorded runs, in round order.
    let runs: [[RefCell<Vec<f64>>; 3]; 2] = Default::default();
    let mut variants = Vec::new();
    for (o, op) in OPS.into_iter().enumerate() {
        for (i, layout) in LAYOUTS.iter().enumerate() {
            let label = name(op, layout);
            let (one, p64, p128, errors) = (&one, &p64, &p128, &errors);
            let runs = &runs[o][i];
            let check = label.clone();
            let mut calls = 0;
            variants.push(Variant::new(label, move |rec| {
                calls += 1;
                let r = match i {
                    0 => run_pair(ctx, one, op, n),
                    1 => run_pair(ctx, p64, op, n),
                    _ => run_pair(ctx, p128, op, n),
                };
                match r {
                    Ok((ticks, a, b)) if a == n && b == n => {
                        rec.record_ticks(ticks, ops);
                        if calls > warmup {
                            runs.borrow_mut().push(ctx.tsc.ns(ticks));
                        }
                    }
                    Ok((_, a, b)) => errors
                        .borrow_mut()
                        .push(format!("{check}: counts {a} and {b}, expected {n} each")),
                    Err(e) => errors.borrow_mut().push(format!("{check}: {e:#}")),
                }
            }));
        }
    }
    let dists = interleave(ctx.tsc, warmup, rounds, &mut variants);
    drop(variants);
    if let Some(e) = errors.into_inner().first() {
        anyhow::bail!("{e}");
    }
    Ok((dists, runs.map(|op| op.map(|r| Spread::of(&r.borrow())))))
}

/// Each variant's runs over rounds, ns per run of `n` increments, `[op][layout]`.
type Runs = [[Option<Spread>; 3]; 2];

/// A spread's median, NaN when there were no runs (the row is then undecided).
fn median(s: &Option<Spread>) -> f64 {
    s.map_or(f64::NAN, |s| s.median)
}

/// `33.5 ms (32.1–40.2 ms, 16 rounds)`, each figure divided by `per`.
fn ranged(s: &Option<Spread>, per: f64) -> String {
    match s {
        Some(s) => format!(
            "{} ({}–{}, {} rounds)",
            ns(s.median / per),
            ns(s.min / per),
            ns(s.max / per),
            s.n
        ),
        None => "–".to_string(),
    }
}

/// Per op, one line against padded to 64 B (with the study's figures) and padded to 64 B
/// against 128 B, from the medians of each variant's runs over rounds (ns per run of `n`
/// increments, as [`measure`] returns them); `siblings`: whether the guest lists the two CPUs
/// as SMT siblings.
fn compare(runs: &Runs, n: u64, siblings: Option<bool>) -> Vec<Comparison> {
    let mut rows = Vec::new();
    let study = STUDY_SHARED_S / STUDY_PADDED_S;
    let per = |v: f64| v / n as f64;
    for (o, op) in OPS.into_iter().enumerate() {
        let [rs, r64s, r128s] = &runs[o];
        let (shared, p64, p128) = (median(rs), median(r64s), median(r128s));
        let r64 = shared / p64;
        rows.push(Comparison::judged(
            format!(
                "{}: one line vs padded to 64 B, per increment, median run of {n} (range over \
                 rounds)",
                op.name()
            ),
            format!("{} vs {}", ranged(rs, n as f64), ranged(r64s, n as f64)),
            r64,
            format!("{STUDY_SHARED_S} s vs {STUDY_PADDED_S} s"),
            Some(study),
            &sharing_reason(standing(r64, Some(study)), per(shared), per(p64), siblings),
        ));
        rows.push(Comparison::judged(
            format!(
                "{}: padded to 64 B vs 128 B (CachePadded), per increment, median run",
                op.name()
            ),
            format!("{} vs {}", ranged(r64s, n as f64), ranged(r128s, n as f64)),
            p64 / p128,
            "not measured (the study pads to a line)",
            None,
            &adjacent_reason(
                standing(p64 / p128, None),
                per(p64),
                per(p128),
                matches!((r64s, r128s), (Some(a), Some(b)) if a.overlaps(b)),
            ),
        ));
    }
    rows
}

/// The one-line row's reason: what sharing the line adds per increment, and where ours stands
/// apart from the study's 7.6×, what this run measured that bears on it: the padded increment's
/// own cost (the ratio's base), and whether the guest lists the two CPUs as SMT siblings
/// (`siblings`: sharing one L1, the line would not move).
pub fn sharing_reason(
    standing: Standing,
    shared_ns: f64,
    padded_ns: f64,
    siblings: Option<bool>,
) -> String {
    let base = format!(
        "a shared line adds {} per increment to the padded {}",
        ns(shared_ns - padded_ns),
        ns(padded_ns)
    );
    let placement = match siblings {
        Some(true) => {
            "the guest lists the two CPUs as SMT siblings (one L1: the line need not \
                       leave the core)"
        }
        Some(false) => {
            "the guest lists the two CPUs on different cores (the host's placement \
                        is not visible)"
        }
        None => "the guest's topology could not be read",
    };
    match standing {
        Standing::LargerHere => format!(
            "{base}; the padded increment is the ratio's base, and the study gives no \
             per-increment time (4.16 s over an unstated count), so the rest is unexplained"
        ),
        Standing::SmallerHere | Standing::NoDifference | Standing::Reversed => {
            format!("{base}; {placement}; the rest is unexplained")
        }
        _ => base,
    }
}

/// The 64-vs-128 row's reason: what the adjacent line (the other half of the aligned 128-byte
/// pair, which Intel's spatial prefetcher fetches together) costs per increment.
/// `overlap`: whether the two variants' ranges over rounds overlap.
pub fn adjacent_reason(standing: Standing, p64_ns: f64, p128_ns: f64, overlap: bool) -> String {
    let d = p64_ns - p128_ns;
    let ranges = if overlap {
        "; their ranges over rounds overlap"
    } else {
        "; their ranges over rounds don't overlap"
    };
    let words = match standing {
        Standing::Undecided => return "a figure is missing".to_string(),
        Standing::NoDifference => format!(
            "{} vs {} per increment: the adjacent line costs nothing measurable here",
            ns(p64_ns),
            ns(p128_ns)
        ),
        Standing::Reversed => format!(
            "128-B padding is {} per increment slower: unexplained here",
            ns(-d)
        ),
        _ => format!(
            "the adjacent line costs {} per increment here: pad to 128 B",
            ns(d)
        ),
    };
    words + ranges
}

/// Whether the guest lists `a` and `b` as SMT siblings (`None`: sysfs unreadable).
pub fn smt_siblings(a: usize, b: usize) -> Option<bool> {
    let list = std::fs::read_to_string(format!(
        "/sys/devices/system/cpu/cpu{a}/topology/thread_siblings_list"
    ))
    .ok()?;
    Some(parse_cpu_list(&list)?.contains(&b))
}

/// A sysfs CPU list (`0-1`, `0,2`, `3`) as CPU numbers.
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((lo, hi)) => v.extend(lo.parse::<usize>().ok()?..=hi.parse::<usize>().ok()?),
            None => v.push(part.parse().ok()?),
        }
    }
    Some(v)
}

/// The notes on method, on what a shared line costs per increment, on the vCPUs' placement
/// (which the shared ÷ padded ratios hint at), and on the missing PMU.
fn notes(ctx: &Ctx, p: Params, runs: &Runs, siblings: Option<bool>) -> Vec<String> {
    let Params { n, rounds, .. } = p;
    let q = |o: usize, i: usize| median(&runs[o][i]) / n as f64;
    let (fa_one, fa_pad) = (q(0, 0), q(0, 1));
    let (ls_one, ls_pad) = (q(1, 0), q(1, 1));
    let (r_fa, r_ls) = (fa_one / fa_pad, ls_one / ls_pad);
    let placement = match (standing(r_fa, None), standing(r_ls, None), siblings) {
        (Standing::Measurable, Standing::Measurable, Some(false)) => format!(
            "Here sharing the line costs {r_fa:.1}× (fetch_add) and {r_ls:.1}× (load+store), and \
             the guest lists the two CPUs on different cores: the line moves between two \
             caches."
        ),
        (Standing::Measurable, Standing::Measurable, _) => format!(
            "Here sharing the line costs {r_fa:.1}× (fetch_add) and {r_ls:.1}× (load+store): the \
             line moves between the two threads' caches."
        ),
        _ => format!(
            "Here sharing the line costs {r_fa:.2}× (fetch_add) and {r_ls:.2}× (load+store), at \
             least one within {:.2}× of none: the two vCPUs may share an L1 on the host, or the \
             host rarely ran both threads at once.",
            crate::verdict::NOISE
        ),
    };
    vec![
        format!(
            "Each sample is one run: both threads start together and each increments its own \
             counter {n} times; the sample is the time until both finished divided by {n} (ns \
             per increment of one thread, the two running at once). Rounds: {rounds} per \
             variant, the six variants interleaved, their order rotated each round; the rows \
             take each variant's median run with the range over rounds, and the ratio of the \
             medians; the table keeps every percentile."
        ),
        format!(
            "fetch_add on a shared line: {} per increment, padded to 64 B: {}. A padded locked \
             increment stays in the core's own L1 (an uncontended `lock xadd`); on a shared \
             line an increment may have to wait for the line to come back from the other core \
             (a cache-to-cache transfer: compare the ping-pong one-way latency in `queues`); \
             the per-increment figure is lower than a transfer because a core gets several \
             increments in while it holds the line. A relaxed load+store needs no lock: the \
             store buffer hides part of the wait for the line.",
            ns(fa_one),
            ns(fa_pad)
        ),
        format!(
            "Topology as the guest sees it: {}. A KVM guest's topology is what the hypervisor \
             declares; the host may place the two vCPUs on SMT siblings of one core (sharing L1 \
             and L2: false sharing would then cost little), two cores sharing an L3, or further \
             apart. {placement}",
            topology(ctx)
        ),
        "No hardware PMU in this guest: the cache-line transfers (HITM events) themselves \
         can't be counted here; the time is the only evidence."
            .to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(c: &AtomicU64) -> usize {
        std::ptr::from_ref(c) as usize
    }

    #[test]
    fn the_sharing_reasons_follow_the_data() {
        let study = STUDY_SHARED_S / STUDY_PADDED_S;
        let r = sharing_reason(standing(5.43, Some(study)), 16.8, 3.09, Some(false));
        assert_eq!(
            r,
            "a shared line adds 13.7 ns per increment to the padded 3.09 ns"
        );
        let r = sharing_reason(standing(15.1, Some(study)), 6.03, 0.40, Some(false));
        assert!(r.contains("padded increment is the ratio's base"), "{r}");
        let r = sharing_reason(standing(2.0, Some(study)), 2.0, 1.0, Some(true));
        assert!(
            r.contains("SMT siblings") && r.contains("unexplained"),
            "{r}"
        );
        let r = sharing_reason(standing(1.02, Some(study)), 1.02, 1.0, Some(false));
        assert!(r.contains("different cores"), "{r}");

        let r = adjacent_reason(standing(1.0, None), 3.09, 3.07, true);
        assert!(
            r.ends_with("nothing measurable here; their ranges over rounds overlap"),
            "{r}"
        );
        let r = adjacent_reason(standing(1.5, None), 3.0, 2.0, false);
        assert_eq!(
            r,
            "the adjacent line costs 1.00 ns per increment here: pad to 128 B; their ranges \
             over rounds don't overlap"
        );
        assert!(adjacent_reason(standing(0.5, None), 1.0, 2.0, false).contains("unexplained"));
    }

    #[test]
    fn the_trader_note_prices_the_shared_line_from_the_run() {
        assert!(trader_note(5.77).contains("at 5.77 ns more per locked increment"));
        assert!(trader_note(f64::NAN).contains("no figure"));
    }

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0,2"), Some(vec![0, 2]));
        assert_eq!(parse_cpu_list("3"), Some(vec![3]));
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn the_layouts_are_8_64_and_128_bytes_apart() {
        let (o, p, q) = (
            OneLine::default(),
            Padded64::default(),
            Padded128::default(),
        );
        assert_eq!(addr(o.b()) - addr(o.a()), 8);
        assert_eq!(addr(o.a()) % 128, 0);
        assert_eq!(addr(p.b()) - addr(p.a()), 64);
        assert_eq!(addr(p.a()) % 128, 0);
        assert_eq!(addr(q.b()) - addr(q.a()), 128);
    }

    #[test]
    fn every_variant_counts_exactly() {
        let ctx = crate::code::test_ctx();
        for op in OPS {
            let (_, a, b) = run_pair(&ctx, &OneLine::default(), op, 5_000).unwrap();
            assert_eq!((a, b), (5_000, 5_000));
            let (_, a, b) = run_pair(&ctx, &Padded64::default(), op, 5_000).unwrap();
            assert_eq!((a, b), (5_000, 5_000));
            let (_, a, b) = run_pair(&ctx, &Padded128::default(), op, 5_000).unwrap();
            assert_eq!((a, b), (5_000, 5_000));
        }
    }

    #[test]
    fn the_experiment_runs_small_and_reports_every_variant() {
        let ctx = crate::code::test_ctx();
        let out = run_with(
            &ctx,
            Params {
                n: 2_000,
                warmup: 0,
                rounds: 2,
            },
        )
        .unwrap();
        assert_eq!(out.dists.len(), 6);
        for d in &out.dists {
            assert_eq!(d.count, 2, "{d:?}");
            assert_eq!(d.ops_per_sample, 2_000);
        }
        assert_eq!(out.comparisons.len(), 4);
        assert!(out.comparisons[0].study_ratio.unwrap() > 7.0);
        assert!(out.trader.contains("ArmSlot") && out.trader.contains("ebpf/xdp-ebpf/src/maps.rs"));
    }
}
