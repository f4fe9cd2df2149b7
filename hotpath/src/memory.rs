//! Memory access latency over working-set size: a dependent chase through a buffer in address
//! order (the prefetcher's best case) and in random order (its worst: every line a surprise),
//! on 4 KiB pages and on transparent huge pages, from 4 KiB (inside L1) to 1 GiB (far beyond
//! the L3 and the TLB's reach). The curve shows the steps: L1, L2, L3, DRAM, and the page
//! walks that huge pages remove.

use std::cell::Cell;
use std::time::Instant;

use crate::Ctx;
use crate::chase::{self, RANDOM_LANE, SEQUENTIAL_LANE, WORDS_PER_LINE};
use crate::harness::{Dist, Recorder, Variant, interleave, tsc};
use crate::report::{self, Comparison, Curve, Level, Outcome, Series};
use crate::system::{HUGE_PAGE, MapOptions, Mapping};

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
    chase::link_sequential(&mut small.words()[..words], SEQUENTIAL_LANE);
    chase::link(&mut thp.words()[..words], RANDOM_LANE, &perm);
    drop(perm);
    let thp_huge_bytes =
        crate::system::hugepages::anon_huge_kb(thp.addr()).unwrap_or(0) as usize * 1024;
    let a = &small.words_shared()[..words];
    let b = &thp.words_shared()[..words];
    let walks: [(&str, &[u64], usize); 3] = [
        ("sequential", a, chase::start(SEQUENTIAL_LANE)),
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

/// One measured size inside each cache level (the largest that is at most half the level
/// and bigger than the level below), labelled `L1`…, then the largest size as `beyond L<n>`
/// when it is over twice the last level. Without cache sizes: no points (label by size only).
pub fn level_points(levels: &[(u32, usize)], sizes: &[usize]) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut below = 0usize;
    for &(level, bytes) in levels {
        if let Some(&s) = sizes.iter().filter(|&&s| s > below && s <= bytes / 2).max() {
            out.push((format!("L{level} ({})", size_name(bytes)), s));
        }
        below = bytes;
    }
    if let (Some(&(level, bytes)), Some(&big)) = (levels.last(), sizes.iter().max())
        && big >= 2 * bytes
    {
        out.push((format!("beyond L{level}"), big));
    }
    out
}

/// How the sequential walk's cost changed from the smallest size to the largest.
pub fn sequential_note(small: usize, small_ns: f64, big: usize, big_ns: f64) -> String {
    let r = big_ns / small_ns.max(1e-3);
    let trend = if r <= 1.5 {
        "about flat: the prefetcher keeps the next line in flight at every size".to_string()
    } else {
        format!(
            "{r:.1}× dearer: the prefetcher hides part of the latency of the outer levels, \
             not all of it"
        )
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

/// The small-set row's verdict from random ÷ sequential: within 1.1 either way the order makes
/// no measurable difference.
pub fn small_set_verdict(ratio: f64) -> String {
    if ratio > 1.1 {
        format!("random costs {ratio:.1}× sequential even at this size")
    } else if ratio < 1.0 / 1.1 {
        format!(
            "random is {:.1}× cheaper than sequential at this size",
            1.0 / ratio
        )
    } else {
        "the order makes no measurable difference at this size (within 1.1×)".into()
    }
}

pub fn run(ctx: &Ctx) -> anyhow::Result<Outcome> {
    ctx.pin()?;
    let max = ctx.pick(16usize << 20, 1 << 30);
    let rounds = ctx.pick(10, 20);
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
    out.curves.push(latency_curve(&points));
    compare(ctx, &mut out, &points);
    for p in [l1_point(&points), last_point(&points)] {
        out.dists
            .extend([p.sequential.clone(), p.random.clone(), p.random_thp.clone()]);
    }
    push_notes(ctx, &mut out, &points, rounds, steps);
    out.trader = "The trader's hot data is small and mostly walked in order: each packet is \
                  read front to back from a UMEM frame (trader/src/trading/xdp.rs; the UMEM \
                  is 4096 frames × 2048 B = 8 MiB, XskConfig in afxdp/src/xsk.rs, of which \
                  only the frames in flight are hot), the tick-to-trade core keeps an 8 KiB \
                  `seen` bitmap and fixed pending arrays (trader-core/src/lib.rs), and the \
                  engine's rolling windows are ring buffers (engine/src/strategy.rs). Nothing \
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

/// The three walks' p50 per access over working-set size.
fn latency_curve(points: &[Point]) -> Curve {
    let series = |name: &str, f: fn(&Point) -> &Dist| Series {
        name: name.into(),
        points: points
            .iter()
            .map(|p| (p.bytes as f64, f(p).p50_ns))
            .collect(),
    };
    Curve {
        id: "memory-latency".into(),
        title: "Dependent loads: ns per access (p50 of per-sample means) over working-set size"
            .into(),
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

/// The comparisons: sequential vs random at the largest size and inside the L1, 4 KiB pages vs
/// THP at the largest size, and the random chase inside each cache level.
fn compare(ctx: &Ctx, out: &mut Outcome, points: &[Point]) {
    let t = ctx.tsc;
    let fmt = |d: &Dist| {
        format!(
            "{} ({:.1} ticks)",
            report::ns(d.p50_ns),
            d.p50_ns * t.ticks_per_ns
        )
    };
    let last = last_point(points);
    let l1 = l1_point(points);
    out.comparisons.push(Comparison {
        standing: None,
        what: format!(
            "sequential vs random chase at {}, per access (p50)",
            size_name(last.bytes)
        ),
        ours: format!("{} vs {}", fmt(&last.sequential), fmt(&last.random)),
        our_ratio: Some(last.random.p50_ns / last.sequential.p50_ns),
        study: "5.35 vs 378 cycles/access".into(),
        study_ratio: Some(378.0 / 5.35),
        verdict: {
            let r = last.random.p50_ns / last.sequential.p50_ns;
            if r > 20.0 {
                "agrees: beyond the caches, access order is worth well over an order of magnitude"
                    .into()
            } else {
                format!("same direction, smaller gap ({r:.0}×): see the notes")
            }
        },
    });
    let levels = cache_levels();
    let where_l1 = match levels.first() {
        Some(&(1, b)) if l1.bytes <= b / 2 => format!("inside the {} L1d", size_name(b)),
        Some(&(1, b)) => format!("the L1d is {}", size_name(b)),
        _ => "L1d size unknown".into(),
    };
    out.comparisons.push(Comparison {
        standing: None,
        what: format!(
            "sequential vs random chase at {} ({where_l1}), per access (p50)",
            size_name(l1.bytes)
        ),
        ours: format!("{} vs {}", fmt(&l1.sequential), fmt(&l1.random)),
        our_ratio: Some(l1.random.p50_ns / l1.sequential.p50_ns),
        study: "– (the study's figure is for a large array)".into(),
        study_ratio: None,
        verdict: small_set_verdict(l1.random.p50_ns / l1.sequential.p50_ns),
    });
    out.comparisons.push(Comparison {
        standing: None,
        what: format!(
            "random chase at {}, 4 KiB pages vs THP (p50)",
            size_name(last.bytes)
        ),
        ours: format!(
            "{} vs {} ({} of {} on huge pages)",
            fmt(&last.random),
            fmt(&last.random_thp),
            size_name(last.thp_huge_bytes.max(1)),
            size_name(last.bytes)
        ),
        our_ratio: Some(last.random.p50_ns / last.random_thp.p50_ns),
        study: "HugeTLB vs 4 KB: 290 vs 43.12 cycles/access".into(),
        study_ratio: Some(290.0 / 43.12),
        verdict: "the part of a random access that is page walks; see hugepages".into(),
    });
    out.comparisons.push(cache_levels_row(&levels, points));
}

/// The random chase's p50 at one size inside each of `levels` (from [`level_points`]), or at
/// fixed sizes labelled by size only when the cache sizes could not be read.
fn cache_levels_row(levels: &[(u32, usize)], points: &[Point]) -> Comparison {
    let steps_at = |b: usize| {
        points
            .iter()
            .find(|p| p.bytes == b)
            .map(|p| report::ns(p.random.p50_ns))
    };
    let measured: Vec<usize> = points.iter().map(|p| p.bytes).collect();
    let picks = level_points(levels, &measured);
    let (what, verdict) = if picks.is_empty() {
        (
            "random chase p50 at 16 KiB / 256 KiB / 8 MiB / largest".to_string(),
            "labelled by size only: the cache sizes could not be read from sysfs".to_string(),
        )
    } else {
        (
            format!(
                "random chase p50 at {} ({})",
                picks
                    .iter()
                    .map(|(_, b)| size_name(*b))
                    .collect::<Vec<_>>()
                    .join(" / "),
                picks
                    .iter()
                    .map(|(l, _)| l.as_str())
                    .collect::<Vec<_>>()
                    .join(" / ")
            ),
            "each size at most half its level and above the level below (cache sizes from \
             /sys/devices/system/cpu/cpu0/cache); the steps the curve shows"
                .to_string(),
        )
    };
    let at: Vec<usize> = if picks.is_empty() {
        vec![16 << 10, 256 << 10, 8 << 20, last_point(points).bytes]
    } else {
        picks.iter().map(|(_, b)| *b).collect()
    };
    Comparison {
        standing: None,
        what,
        ours: at
            .iter()
            .map(|&b| steps_at(b).unwrap_or_else(|| "–".into()))
            .collect::<Vec<_>>()
            .join(" / "),
        our_ratio: None,
        study: "–".into(),
        study_ratio: None,
        verdict,
    }
}

/// The notes on method (buffers, chains, rounds of `steps` loads) and on what the curve shows.
fn push_notes(ctx: &Ctx, out: &mut Outcome, points: &[Point], rounds: usize, steps: usize) {
    out.notes.push(format!(
        "Each size gets fresh buffers: one on 4 KiB pages (MADV_NOHUGEPAGE) holding two chains \
         in two words of every 64-byte line, one in address order and one random single cycle \
         (each step a random 4 KiB page and a random line of it), and one 2 MiB-aligned \
         MADV_HUGEPAGE buffer holding the same random chain. \
         A warm-up walk of up to 256 Ki lines (the whole set up to 16 MiB), then {rounds} \
         interleaved rounds of {steps} \
         dependent loads per walk; a sample is a round's mean, so the percentiles are of \
         {steps}-access means (one access is below the timer's resolution). Every walk ends \
         where counting says (checked). Ticks are the TSC's ({:.3} GHz), not core cycles.",
        ctx.tsc.ticks_per_ns
    ));
    let (first, last) = (&points[0], last_point(points));
    out.notes.push(format!(
        "{} The study's 5.35 cycles/access is a sequential array walk; the 70× gap is the same \
         kind of gap. The random chase's cost is the latency of whichever level holds the set, \
         plus a page walk once the set outgrows the TLB's reach on 4 KiB pages (e.g. about \
         6 MiB for a 1.5k-entry L2 TLB; this machine's TLB size is not read), which is what THP \
         removes. In a KVM guest a page walk is two-dimensional (guest and host tables), so the \
         TLB step is steeper than on bare metal.",
        sequential_note(
            first.bytes,
            first.sequential.p50_ns,
            last.bytes,
            last.sequential.p50_ns
        )
    ));
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

    #[test]
    fn cache_sizes_pick_a_size_inside_each_level() {
        assert_eq!(parse_cache_size("32K\n"), Some(32 << 10));
        assert_eq!(parse_cache_size("32768K"), Some(32 << 20));
        assert_eq!(parse_cache_size("1M"), Some(1 << 20));
        let levels = [(1, 32 << 10), (2, 512 << 10), (3, 32 << 20)];
        let p = level_points(&levels, &sizes(1 << 30));
        let got: Vec<(&str, usize)> = p.iter().map(|(l, b)| (l.as_str(), *b)).collect();
        assert_eq!(
            got,
            [
                ("L1 (32 KiB)", 16 << 10),
                ("L2 (512 KiB)", 256 << 10),
                ("L3 (32 MiB)", 16 << 20),
                ("beyond L3", 1 << 30)
            ]
        );
        // Too small a run to go beyond L3: no "beyond" point.
        let p = level_points(&levels, &sizes(16 << 20));
        assert!(p.iter().all(|(l, _)| !l.starts_with("beyond")), "{p:?}");
        assert!(level_points(&[], &sizes(1 << 30)).is_empty());
    }

    #[test]
    fn the_sequential_note_and_small_set_verdict_follow_the_data() {
        let n = sequential_note(16 << 10, 1.62, 1 << 30, 12.0);
        assert!(
            n.contains("from 1.62 ns per access at 16 KiB to 12.0 ns at 1 GiB"),
            "{n}"
        );
        assert!(n.contains("7.4× dearer"), "{n}");
        assert!(sequential_note(4 << 10, 1.6, 16 << 20, 2.0).contains("about flat"));
        assert!(small_set_verdict(1.05).contains("no measurable difference"));
        assert!(small_set_verdict(1.5).contains("1.5× sequential"));
        assert!(small_set_verdict(0.5).contains("2.0× cheaper"));
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
