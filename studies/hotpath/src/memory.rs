//! Memory access latency over working-set size: a dependent chase through a buffer in address
//! order (the prefetcher's best case) and in random order (its worst: every line a surprise),
//! on 4 KiB pages and on transparent huge pages, from 4 KiB (inside L1) to 1 GiB (far beyond
//! any cache and the TLB's reach). The curve is labelled by where it steps ([`steps`]: the
//! sizes between which the random chase's latency rises most), not by the cache sizes sysfs
//! reports: in a guest those are what the hypervisor declares, and the effective last-level
//! cache can be a fraction of the declared one.

use std::cell::Cell;
use std::time::Instant;

use crate::Ctx;
use crate::chase::{self, RANDOM_LANE, SEQUENTIAL_LANE, WORDS_PER_LINE};
use crate::harness::{Dist, Recorder, Variant, interleave, tsc};
use crate::report::{self, Comparison, Curve, Level, Outcome, Series};
use crate::system::{HUGE_PAGE, MapOptions, Mapping};
use crate::verdict::{Standing, standing};

/// The chain's seed (the same chain at every size's slot count).
const SEED: u64 = 0xC0FF_EE00_0123;
/// The size the L1 comparison reads (inside every x86-64 L1d of 32 KiB or more).
pub const L1_SET: usize = 16 << 10;

/// The working-set sizes: powers of two from 4 KiB to `max`, with the points halfway (×1.5)
/// up to 64 MiB where the cache steps are.
pub fn sizes(max: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut s = 4usize << 10;
    while s <= max {
        v.push(s);
        let mid = s + s / 2;
        if mid <= max && mid <= 64 << 20 {
            v.push(mid);
        }
        s *= 2;
    }
    v
}

/// The three walks at one size: sequential and random on 4 KiB pages (two lanes of one
/// buffer), random on THP.
#[derive(Debug, Clone)]
pub struct Point {
    pub bytes: usize,
    pub sequential: Dist,
    pub random: Dist,
    pub random_thp: Dist,
    /// Bytes of the THP buffer the kernel backed with huge pages.
    pub thp_huge_bytes: usize,
}

/// Measures one size: `rounds` samples of `steps` dependent loads per walk, after a warm-up
/// pass over (up to 256 Ki lines of) the set.
pub fn measure(ctx: &Ctx, bytes: usize, rounds: usize, steps: usize) -> anyhow::Result<Point> {
    let map_len = bytes.next_multiple_of(crate::system::PAGE);
    let mut small = Mapping::anon(map_len, MapOptions::default())?;
    small.advise(libc::MADV_NOHUGEPAGE)?;
    // The sequential walk has a mapping of its own: sharing the 4 KiB random walk's lines, it
    // left them in the caches for that walk (and not for THP's), an order effect that made
    // THP read slower than 4 KiB pages between the L2 and the last-level cache.
    let mut seq = Mapping::anon(map_len, MapOptions::default())?;
    seq.advise(libc::MADV_NOHUGEPAGE)?;
    let thp_len = bytes.next_multiple_of(HUGE_PAGE);
    let mut thp = Mapping::anon(
        thp_len,
        MapOptions {
            align: HUGE_PAGE,
            ..MapOptions::default()
        },
    )?;
    thp.advise(libc::MADV_HUGEPAGE)?;
    let words = bytes / 8;
    let n = chase::slots(words);
    let perm = chase::random_cycle(n, SEED);
    chase::link(&mut small.words()[..words], RANDOM_LANE, &perm);
    chase::link_sequential(&mut seq.words()[..words], SEQUENTIAL_LANE);
    chase::link(&mut thp.words()[..words], RANDOM_LANE, &perm);
    drop(perm);
    let thp_huge_bytes =
        crate::system::hugepages::anon_huge_kb(thp.addr()).unwrap_or(0) as usize * 1024;
    let a = &small.words_shared()[..words];
    let b = &thp.words_shared()[..words];
    let s = &seq.words_shared()[..words];
    let walks: [(&str, &[u64], usize); 3] = [
        ("sequential", s, chase::start(SEQUENTIAL_LANE)),
        ("random chase, 4 KiB pages", a, chase::start(RANDOM_LANE)),
        ("random chase, THP", b, chase::start(RANDOM_LANE)),
    ];
    // Enough to bring a cache-sized set in; beyond the caches a warm-up buys nothing.
    let warm = n.min(1 << 18);
    let ends: Vec<Cell<usize>> = walks
        .iter()
        .map(|&(_, buf, from)| Cell::new(chase::walk(buf, from, warm)))
        .collect();
    let mut variants: Vec<Variant<'_>> = walks
        .iter()
        .zip(&ends)
        .map(|(&(name, buf, _), end)| {
            Variant::new(name, move |r: &mut Recorder| {
                let t0 = tsc();
                let e = chase::walk(buf, end.get(), steps);
                let t1 = tsc();
                end.set(e);
                r.record_ticks(t1 - t0, steps as u32);
            })
        })
        .collect();
    let mut d = interleave(ctx.tsc, 0, rounds, &mut variants).into_iter();
    drop(variants);
    // The checksums: both random walks took the same steps along the same chain; the
    // sequential walk is where counting says it is.
    let total = warm + rounds * steps;
    let seq_end = (total % n) * WORDS_PER_LINE + SEQUENTIAL_LANE;
    if ends[1].get() != ends[2].get() || ends[0].get() != seq_end {
        anyhow::bail!(
            "{bytes} B: walks ended at {:?}; expected random walks equal and sequential at {seq_end}",
            ends.iter().map(Cell::get).collect::<Vec<_>>()
        );
    }
    let label = |d: Dist| Dist {
        name: format!("{}, {}", d.name, size_name(bytes)),
        ..d
    };
    Ok(Point {
        bytes,
        sequential: label(d.next().expect("three walks")),
        random: label(d.next().expect("three walks")),
        random_thp: label(d.next().expect("three walks")),
        thp_huge_bytes,
    })
}

/// `16 KiB`, `1.5 MiB`, `1 GiB`.
pub fn size_name(bytes: usize) -> String {
    let (v, unit) = if bytes >= 1 << 30 {
        (bytes as f64 / f64::from(1u32 << 30), "GiB")
    } else if bytes >= 1 << 20 {
        (bytes as f64 / f64::from(1u32 << 20), "MiB")
    } else {
        (bytes as f64 / 1024.0, "KiB")
    };
    if v.fract() == 0.0 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.1} {unit}")
    }
}

/// The data and unified caches CPU 0 reports, as (level, bytes), by level (from
/// `/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}`); empty if unreadable.
pub fn cache_levels() -> Vec<(u32, usize)> {
    let mut v = Vec::new();
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok();
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            continue;
        };
        if kind.trim() == "Instruction" {
            continue;
        }
        if let (Ok(level), Some(bytes)) = (level.trim().parse::<u32>(), parse_cache_size(&size)) {
            v.push((level, bytes));
        }
    }
    v.sort_unstable();
    v.dedup_by_key(|(l, _)| *l);
    v
}

/// A sysfs cache size ("32K", "32768K", "1M") in bytes.
pub fn parse_cache_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1usize << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().ok().map(|n| n * mult)
}

/// Where a latency curve steps: between two neighbouring measured sizes the latency rose from
/// `from_ns` to `to_ns`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// The last size before the rise.
    pub below: usize,
    /// The first size after it.
    pub above: usize,
    pub from_ns: f64,
    pub to_ns: f64,
}

impl Step {
    /// After ÷ before.
    pub fn rise(&self) -> f64 {
        self.to_ns / self.from_ns
    }

    /// `1 MiB → 1.5 MiB: 20.0 ns → 178.0 ns (8.9×)`.
    pub fn describe(&self) -> String {
        format!(
            "{} → {}: {} → {} ({:.1}×)",
            size_name(self.below),
            size_name(self.above),
            report::ns(self.from_ns),
            report::ns(self.to_ns),
            self.rise()
        )
    }
}

/// The `k` steps of `curve` (size in bytes, ns per access, by size): the largest rises between
/// neighbouring sizes, each a difference by the one rule (beyond [`crate::verdict::NOISE`]),
/// no two on neighbouring intervals (a rise spread over two intervals is one step, at the
/// larger); returned by size.
pub fn steps(curve: &[(usize, f64)], k: usize) -> Vec<Step> {
    let mut all: Vec<(usize, Step)> = curve
        .windows(2)
        .enumerate()
        .map(|(i, w)| {
            (
                i,
                Step {
                    below: w[0].0,
                    above: w[1].0,
                    from_ns: w[0].1,
                    to_ns: w[1].1,
                },
            )
        })
        .filter(|(_, s)| standing(s.rise(), None) == Standing::Measurable)
        .collect();
    all.sort_by(|a, b| b.1.rise().total_cmp(&a.1.rise()));
    let mut picked: Vec<(usize, Step)> = Vec::new();
    for (i, s) in all {
        if picked.len() == k {
            break;
        }
        if picked.iter().all(|&(j, _)| i.abs_diff(j) > 1) {
            picked.push((i, s));
        }
    }
    picked.sort_by_key(|&(i, _)| i);
    picked.into_iter().map(|(_, s)| s).collect()
}

/// The steps row's finding: where the set leaves the last cache for memory, the step that adds
/// the most time per access (memory's latency is the largest jump; the L1 edge may be the
/// largest ratio but adds a few ns), against the last level sysfs reports (`sysfs_last`: level
/// and bytes).
pub fn steps_finding(steps: &[Step], sysfs_last: Option<(u32, usize)>) -> String {
    let added = |s: &Step| s.to_ns - s.from_ns;
    let Some(big) = steps.iter().max_by(|a, b| added(a).total_cmp(&added(b))) else {
        return format!(
            "no rise beyond {:.2}× between neighbouring sizes: every size measured sits in one \
             level here",
            crate::verdict::NOISE
        );
    };
    let edge = format!(
        "the step that adds the most per access, {} ({:.1}×) between {} and {}, is where the set \
         leaves the last cache for memory: the effective last-level cache here is {}-{}",
        report::ns(added(big)),
        big.rise(),
        size_name(big.below),
        size_name(big.above),
        size_name(big.below),
        size_name(big.above)
    );
    match sysfs_last {
        Some((level, bytes)) if bytes > big.above => format!(
            "{edge}, {:.0}× below the {} L{level} sysfs reports (a guest's sysfs says what the \
             hypervisor declares, not what this vCPU gets)",
            bytes as f64 / big.above as f64,
            size_name(bytes)
        ),
        Some((level, bytes)) if bytes < big.below => format!(
            "{edge}, above the {} L{level} sysfs reports: the step is not that cache's edge",
            size_name(bytes)
        ),
        Some((level, bytes)) => format!(
            "{edge}, where the {} L{level} sysfs reports lies",
            size_name(bytes)
        ),
        None => format!("{edge} (sysfs gives no cache sizes to compare)"),
    }
}

/// How the sequential walk's cost changed from the smallest size to the largest.
pub fn sequential_note(small: usize, small_ns: f64, big: usize, big_ns: f64) -> String {
    let r = big_ns / small_ns.max(1e-3);
    let trend = match standing(r, None) {
        Standing::NoDifference => format!(
            "no measurable difference ({r:.2}×): the prefetcher keeps the next line in flight at \
             every size"
        ),
        Standing::Reversed => format!("{:.2}× cheaper, which nothing here explains", 1.0 / r),
        _ => format!(
            "{r:.1}× dearer: the prefetcher hides part of the latency of the outer levels, \
             not all of it"
        ),
    };
    format!(
        "'Sequential' is a dependent chase in address order, one load per line. Here it went \
         from {} per access at {} to {} at {}: {trend}.",
        report::ns(small_ns),
        size_name(small),
        report::ns(big_ns),
        size_name(big)
    )
}

/// The small-set row's reason: the two walks' cost per access in TSC ticks, and where the size
/// lies against the first step the curve shows (`first_step`).
pub fn small_set_reason(
    bytes: usize,
    seq_ticks: f64,
    rand_ticks: f64,
    first: Option<&Step>,
) -> String {
    let place = match first {
        Some(s) if bytes <= s.below => format!(
            "{} is below the curve's first step ({} → {}), so both walks hit the nearest cache",
            size_name(bytes),
            size_name(s.below),
            size_name(s.above)
        ),
        Some(s) => format!(
            "{} is past the curve's first step ({} → {}): the random walk leaves the nearest \
             cache",
            size_name(bytes),
            size_name(s.below),
            size_name(s.above)
        ),
        None => format!("{} and no step found in the curve", size_name(bytes)),
    };
    format!("{seq_ticks:.1} vs {rand_ticks:.1} ticks per access; {place}")
}

/// The order row's reason: which side of the study's gap ours differs on, sequential (ticks
/// against its 5.35 cycles) or random (against its 378). TSC ticks are not core cycles; they
/// are the nearest this guest has.
pub fn order_gap_reason(seq_ticks: f64, rand_ticks: f64) -> String {
    let (fs, fr) = (
        seq_ticks / STUDY_SEQ_CYCLES,
        rand_ticks / STUDY_RANDOM_CYCLES,
    );
    let side = |f: f64| {
        if f >= 1.0 {
            format!("{f:.1}× the study's")
        } else {
            format!("{:.1}× below the study's", 1.0 / f)
        }
    };
    let most = if (fs.ln()).abs() >= (fr.ln()).abs() {
        "the sequential walk (here a dependent chase, one load per line, not an array sum)"
    } else {
        "the random chase (this machine's memory latency in ticks)"
    };
    format!(
        "per access, sequential {seq_ticks:.1} ticks ({}), random {rand_ticks:.0} ticks ({}); \
         {most} differs most",
        side(fs),
        side(fr)
    )
}

/// The huge-pages row's reason: what THP saved per access, and the study's 43.12 cycles per
/// huge-page access against our THP chase (ticks): far below it, the study's loop was not a
/// dependent chase of this size, so the two ratios compare different loops.
pub fn thp_reason(small_ns: f64, thp_ns: f64, thp_ticks: f64) -> String {
    let saved = format!(
        "THP saves {} per access ({:.0} % of the 4 KiB-page chase)",
        report::ns(small_ns - thp_ns),
        100.0 * (small_ns - thp_ns) / small_ns
    );
    let f = thp_ticks / STUDY_THP_CYCLES;
    match standing(f, None) {
        Standing::Measurable => format!(
            "{saved}; the study's {STUDY_THP_CYCLES} cycles per huge-page access is {f:.0}× \
             below our THP chase ({thp_ticks:.0} ticks), below any DRAM latency, so its loop was \
             not a dependent chase of this size: the two ratios compare different loops (see \
             hugepages)"
        ),
        Standing::Reversed => format!(
            "{saved}; our THP chase ({thp_ticks:.0} ticks) is {:.1}× below the study's \
             {STUDY_THP_CYCLES} cycles: the set fits a cache here",
            1.0 / f
        ),
        _ => format!(
            "{saved}; our THP chase ({thp_ticks:.0} ticks) is within {:.2}× of the study's \
             {STUDY_THP_CYCLES} cycles, so the loops are comparable",
            f.max(1.0 / f)
        ),
    }
}

/// The study's cycles per access: a sequential walk, a random chase, a chase on HugeTLB.
const STUDY_SEQ_CYCLES: f64 = 5.35;
const STUDY_RANDOM_CYCLES: f64 = 378.0;
const STUDY_4K_CYCLES: f64 = 290.0;
const STUDY_THP_CYCLES: f64 = 43.12;

pub fn run(ctx: &Ctx) -> anyhow::Result<Outcome> {
    ctx.pin()?;
    let max = ctx.pick(16usize << 20, 1 << 30);
    // Twenty rounds at least: a p50 needs 20 samples ([`Dist::at`]).
    let rounds = 20;
    let steps = ctx.pick(4096, 16_384);
    run_with(ctx, max, rounds, steps)
}

pub fn run_with(ctx: &Ctx, max: usize, rounds: usize, steps: usize) -> anyhow::Result<Outcome> {
    let mut out = Outcome::new(
        "memory",
        "Memory access latency: sequential vs random pointer chasing over working-set size",
        Level::Code,
    );
    let points = measure_sizes(ctx, max, rounds, steps)?;
    let levels = cache_levels();
    let found = random_steps(&points, &levels);
    out.curves.push(latency_curve(&points, &found));
    compare(ctx, &mut out, &points, &levels, &found);
    for p in [l1_point(&points), last_point(&points)] {
        out.dists
            .extend([p.sequential.clone(), p.random.clone(), p.random_thp.clone()]);
    }
    push_notes(ctx, &mut out, &points, rounds, steps, &found);
    out.trader = "The trader's hot data is small and mostly walked in order: each packet is \
                  read front to back from a UMEM frame (crates/trader/src/trading/xdp.rs; the UMEM \
                  is 4096 frames × 2048 B = 8 MiB, XskConfig in crates/afxdp/src/xsk.rs, of which \
                  only the frames in flight are hot), the tick-to-trade core keeps an 8 KiB \
                  `seen` bitmap and fixed pending arrays (crates/trader-core/src/sequencer.rs, desk.rs), and the \
                  engine's rolling windows are ring buffers (crates/engine/src/strategy.rs). Nothing \
                  on the path chases pointers through a large structure, so it lives at the \
                  left of this curve."
        .into();
    Ok(out)
}

/// Every size from [`sizes`]`(max)` measured in turn, smallest first.
fn measure_sizes(ctx: &Ctx, max: usize, rounds: usize, steps: usize) -> anyhow::Result<Vec<Point>> {
    let started = Instant::now();
    let mut points = Vec::new();
    for bytes in sizes(max) {
        points.push(measure(ctx, bytes, rounds, steps)?);
    }
    ctx.progress(&format!(
        "{} sizes up to {} in {:.1} s",
        points.len(),
        size_name(max),
        started.elapsed().as_secs_f64()
    ));
    Ok(points)
}

/// The largest size measured.
fn last_point(points: &[Point]) -> &Point {
    points.last().expect("at least one size")
}

/// The L1 comparison's size ([`L1_SET`]), else the smallest measured.
fn l1_point(points: &[Point]) -> &Point {
    points
        .iter()
        .find(|p| p.bytes == L1_SET)
        .unwrap_or(&points[0])
}

/// The steps of the random chase on 4 KiB pages: as many as the cache levels sysfs reports
/// (each level has an edge; 3 when sysfs says nothing), found in the data ([`steps`]).
fn random_steps(points: &[Point], levels: &[(u32, usize)]) -> Vec<Step> {
    let curve: Vec<(usize, f64)> = points.iter().map(|p| (p.bytes, p.random.p50_ns)).collect();
    let k = if levels.is_empty() { 3 } else { levels.len() };
    steps(&curve, k)
}

/// The three walks' p50 per access over working-set size, titled with the steps `found`.
fn latency_curve(points: &[Point], found: &[Step]) -> Curve {
    let series = |name: &str, f: fn(&Point) -> &Dist| Series {
        name: name.into(),
        points: points
            .iter()
            .map(|p| (p.bytes as f64, f(p).p50_ns))
            .collect(),
    };
    let at = if found.is_empty() {
        "no step found".to_string()
    } else {
        format!(
            "steps at {}",
            found
                .iter()
                .map(|s| format!("{}-{}", size_name(s.below), size_name(s.above)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Curve {
        id: "memory-latency".into(),
        title: format!(
            "Dependent loads: ns per access (p50 of per-sample means) over working-set size; \
             random chase {at}"
        ),
        x_label: "working set, bytes".into(),
        y_label: "ns per access".into(),
        log_x: true,
        log_y: true,
        series: vec![
            series("sequential (4 KiB pages)", |p| &p.sequential),
            series("random chase, 4 KiB pages", |p| &p.random),
            series("random chase, THP", |p| &p.random_thp),
        ],
    }
}

/// A p50 the report may print ([`Dist::at`]: 20 samples), else NaN: the row is then undecided.
fn p50(d: &Dist) -> f64 {
    d.at(0.5).unwrap_or(f64::NAN)
}

/// The comparisons: sequential vs random at the largest size and below the first step, 4 KiB
/// pages vs THP at the largest size, and the steps the random chase shows (`found`), against
/// the cache sizes sysfs reports (`levels`).
fn compare(
    ctx: &Ctx,
    out: &mut Outcome,
    points: &[Point],
    levels: &[(u32, usize)],
    found: &[Step],
) {
    let tpn = ctx.tsc.ticks_per_ns;
    let fmt = |v: f64| {
        if v.is_nan() {
            "–".to_string()
        } else {
            format!("{} ({:.1} ticks)", report::ns(v), v * tpn)
        }
    };
    let last = last_point(points);
    let l1 = l1_point(points);
    let (seq, rnd) = (p50(&last.sequential), p50(&last.random));
    let few = |d: &Dist| format!("p50 needs 20 samples, {} taken", d.count);
    out.comparisons.push(Comparison::judged(
        format!(
            "sequential vs random chase at {}, per access (p50)",
            size_name(last.bytes)
        ),
        format!("{} vs {}", fmt(seq), fmt(rnd)),
        rnd / seq,
        format!("{STUDY_SEQ_CYCLES} vs {STUDY_RANDOM_CYCLES} cycles/access"),
        Some(STUDY_RANDOM_CYCLES / STUDY_SEQ_CYCLES),
        &if (rnd / seq).is_nan() {
            few(&last.random)
        } else {
            order_gap_reason(seq * tpn, rnd * tpn)
        },
    ));
    let (s1, r1) = (p50(&l1.sequential), p50(&l1.random));
    out.comparisons.push(Comparison::judged(
        format!(
            "sequential vs random chase at {}, per access (p50)",
            size_name(l1.bytes)
        ),
        format!("{} vs {}", fmt(s1), fmt(r1)),
        r1 / s1,
        "– (the study's figure is for a large array)",
        None,
        &if (r1 / s1).is_nan() {
            few(&l1.random)
        } else {
            small_set_reason(l1.bytes, s1 * tpn, r1 * tpn, found.first())
        },
    ));
    let thp = p50(&last.random_thp);
    out.comparisons.push(Comparison::judged(
        format!(
            "random chase at {}, 4 KiB pages vs THP (p50)",
            size_name(last.bytes)
        ),
        format!(
            "{} vs {} ({} of {} on huge pages)",
            fmt(rnd),
            fmt(thp),
            size_name(last.thp_huge_bytes.max(1)),
            size_name(last.bytes)
        ),
        rnd / thp,
        format!("HugeTLB vs 4 KB: {STUDY_4K_CYCLES} vs {STUDY_THP_CYCLES} cycles/access"),
        Some(STUDY_4K_CYCLES / STUDY_THP_CYCLES),
        &if (rnd / thp).is_nan() {
            few(&last.random_thp)
        } else {
            thp_reason(rnd, thp, thp * tpn)
        },
    ));
    out.comparisons.push(Comparison::finding(
        "random chase (4 KiB pages): where the latency steps, the largest rises between \
         neighbouring sizes (p50)",
        if found.is_empty() {
            "no step".to_string()
        } else {
            found
                .iter()
                .map(Step::describe)
                .collect::<Vec<_>>()
                .join("; ")
        },
        "– (the study gives no curve)",
        steps_finding(found, levels.last().copied()),
    ));
}

/// The notes on method (buffers, chains, rounds of `steps` loads) and on what the curve shows.
fn push_notes(
    ctx: &Ctx,
    out: &mut Outcome,
    points: &[Point],
    rounds: usize,
    steps: usize,
    found: &[Step],
) {
    out.notes.push(format!(
        "Each size gets three fresh buffers, one per walk, so no walk finds lines another left \
         in the caches: on 4 KiB pages (MADV_NOHUGEPAGE) a chain in address order, and a random \
         single cycle (each step a random 4 KiB page and a random line of it); on a 2 MiB-aligned \
         MADV_HUGEPAGE buffer the same random cycle. The three run in an order rotated each \
         round. A warm-up walk of up to 256 Ki lines (the whole set up to 16 MiB), then {rounds} \
         interleaved rounds of {steps} \
         dependent loads per walk; a sample is a round's mean, so the percentiles are of \
         {steps}-access means (one access is below the timer's resolution). Every walk ends \
         where counting says (checked). Ticks are the TSC's ({:.3} GHz), not core cycles.",
        ctx.tsc.ticks_per_ns
    ));
    out.notes.push(plateaus_note(points, found));
    let (first, last) = (&points[0], last_point(points));
    out.notes.push(format!(
        "{} The study's 5.35 cycles/access is a sequential array walk. The random chase's cost \
         is the latency of whichever level holds the set, plus a page walk once the set \
         outgrows the TLB's reach on 4 KiB pages, which is what THP removes (the hugepages \
         experiment probes that reach, from the TLB sizes cpuid gives).",
        sequential_note(
            first.bytes,
            first.sequential.p50_ns,
            last.bytes,
            last.sequential.p50_ns
        )
    ));
}

/// The levels the random chase shows, between the steps `found`: each plateau's sizes and its
/// latency range, so the curve is read from what it measured.
fn plateaus_note(points: &[Point], found: &[Step]) -> String {
    let mut parts = Vec::new();
    let mut from = 0usize;
    for (i, edge) in found
        .iter()
        .map(|s| s.below)
        .chain(std::iter::once(usize::MAX))
        .enumerate()
    {
        let inside: Vec<&Point> = points
            .iter()
            .filter(|p| p.bytes > from && p.bytes <= edge)
            .collect();
        if let (Some(a), Some(b)) = (inside.first(), inside.last()) {
            let (lo, hi) = inside
                .iter()
                .map(|p| p.random.p50_ns)
                .fold((f64::INFINITY, 0.0_f64), |(l, h), v| (l.min(v), h.max(v)));
            let name = if i == found.len() {
                "past the last step".to_string()
            } else {
                format!("level {}", i + 1)
            };
            parts.push(format!(
                "{name}: {}-{}, {}-{}",
                size_name(a.bytes),
                size_name(b.bytes),
                report::ns(lo),
                report::ns(hi)
            ));
        }
        from = edge;
    }
    format!(
        "The random chase on 4 KiB pages, read by its steps (the largest rises between \
         neighbouring sizes, as many as the cache levels sysfs lists): {}. A level here is what \
         the data shows, not a cache named by sysfs.",
        parts.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sizes_run_from_4k_to_the_maximum_with_midpoints_below_64m() {
        let s = sizes(16 << 20);
        assert_eq!(s.first(), Some(&(4 << 10)));
        assert_eq!(s.last(), Some(&(16 << 20)));
        assert!(s.contains(&(6 << 10)) && s.contains(&(12 << 20)));
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        let big = sizes(1 << 30);
        assert!(!big.contains(&(96 << 20)) && big.contains(&(128 << 20)));
        assert_eq!(size_name(1536 << 10), "1.5 MiB");
        assert_eq!(size_name(1 << 30), "1 GiB");
    }

    /// A curve with steps at 32→48 KiB (×2), 384→512 KiB (×1.5) and 1→1.5 MiB (×9), the
    /// last spread over two intervals (1.5→2 MiB: ×1.3), and noise below 1.10× elsewhere.
    fn stepped() -> Vec<(usize, f64)> {
        let kib = |k: usize| k << 10;
        vec![
            (kib(16), 1.6),
            (kib(32), 1.65),
            (kib(48), 3.3),
            (kib(256), 3.5),
            (kib(384), 3.6),
            (kib(512), 5.4),
            (kib(1024), 20.0),
            (kib(1536), 178.0),
            (kib(2048), 230.0),
            (kib(4096), 240.0),
        ]
    }

    #[test]
    fn steps_are_found_in_the_data_not_taken_from_sysfs() {
        assert_eq!(parse_cache_size("32K\n"), Some(32 << 10));
        assert_eq!(parse_cache_size("32768K"), Some(32 << 20));
        assert_eq!(parse_cache_size("1M"), Some(1 << 20));
        let found = steps(&stepped(), 3);
        let at: Vec<(usize, usize)> = found
            .iter()
            .map(|s| (s.below >> 10, s.above >> 10))
            .collect();
        // 512 KiB → 1 MiB (×3.7) is next to the largest and so part of it; 384 → 512 KiB next.
        assert_eq!(at, [(32, 48), (384, 512), (1024, 1536)]);
        // Fewer asked, the largest first.
        let one = steps(&stepped(), 1);
        assert_eq!((one[0].below, one[0].above), (1 << 20, 1536 << 10));
        // A flat curve (within 1.10× between neighbours) has none.
        let flat: Vec<(usize, f64)> = (1..8).map(|i| (i << 12, 1.0 + 0.01 * i as f64)).collect();
        assert!(steps(&flat, 3).is_empty());
    }

    #[test]
    fn the_steps_finding_follows_the_data_and_sysfs() {
        let found = steps(&stepped(), 3);
        let f = steps_finding(&found, Some((3, 32 << 20)));
        assert!(
            f.contains("adds the most per access, 158.0 ns (8.9×) between 1 MiB and 1.5 MiB")
                && f.contains("1 MiB-1.5 MiB, 21× below the 32 MiB L3"),
            "{f}"
        );
        // Where sysfs is right, it says so.
        let f = steps_finding(&found, Some((3, 1 << 20)));
        assert!(f.contains("where the 1 MiB L3 sysfs reports lies"), "{f}");
        let f = steps_finding(&found, Some((2, 512 << 10)));
        assert!(f.contains("above the 512 KiB L2"), "{f}");
        assert!(steps_finding(&[], None).starts_with("no rise beyond 1.10×"));
        // The largest ratio (the L1 edge, 2.6×) adds little; the memory edge adds the most.
        let mib = |m: usize| m << 20;
        let small_run = steps(
            &[
                (32 << 10, 1.48),
                (48 << 10, 3.91),
                (mib(4), 17.6),
                (mib(6), 26.2),
                (mib(8), 38.4),
                (mib(12), 70.9),
                (mib(16), 102.9),
            ],
            3,
        );
        let f = steps_finding(&small_run, Some((3, mib(32))));
        assert!(
            f.contains("between 8 MiB and 12 MiB") && f.contains("3× below the 32 MiB L3"),
            "{f}"
        );
    }

    #[test]
    fn the_memory_reasons_follow_the_data() {
        let n = sequential_note(16 << 10, 1.62, 1 << 30, 12.0);
        assert!(
            n.contains("from 1.62 ns per access at 16 KiB to 12.0 ns at 1 GiB"),
            "{n}"
        );
        assert!(n.contains("7.4× dearer"), "{n}");
        assert!(sequential_note(4 << 10, 1.6, 16 << 20, 1.7).contains("no measurable difference"));
        assert!(sequential_note(4 << 10, 2.0, 16 << 20, 1.0).contains("2.00× cheaper"));

        // Which side of the study's gap differs: ours random 1245 ticks vs 378 (3.3×) against
        // sequential 48.8 vs 5.35 (9.1×); then a machine whose sequential walk is the study's.
        let r = order_gap_reason(48.8, 1245.0);
        assert!(r.contains("9.1× the study's") && r.ends_with("the sequential walk (here a dependent chase, one load per line, not an array sum) differs most"), "{r}");
        let r = order_gap_reason(5.0, 1245.0);
        assert!(
            r.contains("the random chase (this machine's memory latency in ticks) differs most"),
            "{r}"
        );

        let first = steps(&stepped(), 3)[0];
        let r = small_set_reason(16 << 10, 4.1, 4.1, Some(&first));
        assert!(
            r.contains("16 KiB is below the curve's first step (32 KiB → 48 KiB)"),
            "{r}"
        );
        let r = small_set_reason(64 << 10, 4.1, 8.0, Some(&first));
        assert!(r.contains("past the curve's first step"), "{r}");

        let r = thp_reason(509.2, 326.4, 798.2);
        assert!(
            r.contains("THP saves 182.8 ns per access (36 % of")
                && r.contains("compare different loops"),
            "{r}"
        );
        let r = thp_reason(120.0, 20.0, 45.0);
        assert!(r.contains("the loops are comparable"), "{r}");
        let r = thp_reason(120.0, 10.0, 20.0);
        assert!(r.contains("below the study's"), "{r}");
    }

    #[test]
    fn the_curve_runs_tiny_and_every_walk_checks_out() {
        let ctx = Ctx {
            size: crate::Size::Small,
            tsc: crate::harness::Tsc::calibrate(Duration::from_millis(5)),
            cpu: 0,
            other_cpu: 1,
            root: false,
        };
        let out = run_with(&ctx, 256 << 10, 3, 500).expect("runs");
        let c = &out.curves[0];
        assert_eq!(c.series.len(), 3);
        assert!(
            c.series
                .iter()
                .all(|s| s.points.len() == sizes(256 << 10).len())
        );
        assert_eq!(out.dist("sequential, 16 KiB").count, 3);
        assert_eq!(out.dist("random chase, THP, 256 KiB").ops_per_sample, 500);
        assert_eq!(out.comparisons.len(), 4);
    }
}
