//! Measuring honestly: a calibrated time-stamp counter, per-operation samples with the timer's
//! own cost subtracted, percentiles from a histogram, variants interleaved round by round so
//! the host's noise hits every variant alike.
//!
//! How a sample is taken: two TSC reads (each fenced with `lfence`, so the work between them
//! can't drift across) around a batch of `ops` operations; the sample is
//! `(t1 - t0 - overhead) / ops`, where `overhead` is the median cost of two back-to-back reads,
//! measured once at calibration and stated in every report. With `ops = 1` a sample is one
//! operation, which is what tails need; cheap operations (a few ns, below the timer's own
//! resolution) are timed in batches, and their percentiles are then those of a batch's mean,
//! which the report says.

use std::hint::black_box;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Reads the time-stamp counter, fenced so earlier instructions finish before it and later ones
/// don't start before it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn tsc() -> u64 {
    use core::arch::x86_64::{_mm_lfence, _rdtsc};
    #[expect(
        unsafe_code,
        reason = "rdtsc and lfence read a register and order loads; nothing else"
    )]
    // SAFETY: every x86-64 CPU has SSE2 (lfence) and rdtsc; neither touches memory.
    unsafe {
        _mm_lfence();
        let t = _rdtsc();
        _mm_lfence();
        t
    }
}

/// Off x86-64 the "counter" is the monotonic clock in ns (calibration then finds 1 GHz).
#[cfg(not(target_arch = "x86_64"))]
pub fn tsc() -> u64 {
    monotonic_ns()
}

/// `CLOCK_MONOTONIC` in ns.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    #[expect(
        unsafe_code,
        reason = "clock_gettime writes only the timespec it is given"
    )]
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The counter's rate against `CLOCK_MONOTONIC`, and what two back-to-back reads cost.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Tsc {
    /// Counter ticks per nanosecond.
    pub ticks_per_ns: f64,
    /// Median ticks between two back-to-back [`tsc`] reads: subtracted from every sample.
    pub overhead_ticks: u64,
}

impl Tsc {
    /// Calibrates over `span`. Each end is the tightest of many (counter, clock, counter)
    /// triples, the clock read taken as the triple's midpoint, so a preemption or an interrupt
    /// between the two reads at either end can't skew the rate.
    pub fn calibrate(span: Duration) -> Tsc {
        let (c0, n0) = Self::bracket();
        let start = Instant::now();
        while start.elapsed() < span {
            std::hint::spin_loop();
        }
        let (c1, n1) = Self::bracket();
        let ticks_per_ns = (c1 - c0) as f64 / (n1 - n0).max(1) as f64;
        let mut pairs: Vec<u64> = (0..10_001)
            .map(|_| {
                let a = tsc();
                let b = tsc();
                b.wrapping_sub(a)
            })
            .collect();
        pairs.sort_unstable();
        Tsc {
            ticks_per_ns,
            overhead_ticks: pairs[pairs.len() / 2],
        }
    }

    /// One (counter, clock) pair: of 200 tries, the one whose two counter reads around the
    /// clock read are closest, the counter taken halfway between them.
    fn bracket() -> (u64, u64) {
        let mut best = (u64::MAX, 0, 0);
        for _ in 0..200 {
            let a = tsc();
            let n = monotonic_ns();
            let b = tsc();
            let width = b.wrapping_sub(a);
            if width < best.0 {
                best = (width, a + width / 2, n);
            }
        }
        (best.1, best.2)
    }

    /// Ticks to nanoseconds.
    pub fn ns(&self, ticks: u64) -> f64 {
        ticks as f64 / self.ticks_per_ns
    }

    /// The timer's own cost, ns.
    pub fn overhead_ns(&self) -> f64 {
        self.ns(self.overhead_ticks)
    }

    /// The smallest step the counter is seen to advance by, ns: the resolution of a
    /// single-operation sample (on bare metal about one read's cost; a virtualised TSC may
    /// advance in coarser steps: ~10 ns on this project's AMD guest).
    pub fn step_ns(&self) -> f64 {
        let mut step = u64::MAX;
        let mut prev = tsc();
        for _ in 0..10_000 {
            let t = tsc();
            if t > prev {
                step = step.min(t - prev);
            }
            prev = t;
        }
        self.ns(step)
    }
}

/// Picoseconds per histogram unit: samples of a fraction of a ns keep three digits.
const PS_PER_NS: f64 = 1000.0;
/// The largest sample a histogram holds, ps (one hour): beyond it a sample is clamped and
/// counted as saturated.
const MAX_PS: u64 = 3_600_000_000_000_000;

/// Per-operation samples of one variant, in a histogram.
#[derive(Debug)]
pub struct Recorder {
    tsc: Tsc,
    hist: Histogram<u64>,
    saturated: u64,
    /// Operations per sample, for the report (1 = each sample is one operation).
    ops_per_sample: u32,
    /// Round by round ([`interleave`]'s recorders): this round's samples, and each finished
    /// round's median.
    rounds: Option<(Vec<f64>, Vec<f64>)>,
}

impl Recorder {
    pub fn new(tsc: Tsc) -> Recorder {
        Recorder {
            tsc,
            hist: Histogram::new_with_bounds(1, MAX_PS, 3).expect("valid histogram bounds"),
            saturated: 0,
            ops_per_sample: 1,
            rounds: None,
        }
    }

    /// A recorder that also keeps each round's median ([`Recorder::end_round`]), for the
    /// spread of the figure over rounds.
    pub fn by_rounds(tsc: Tsc) -> Recorder {
        Recorder {
            rounds: Some((Vec::new(), Vec::new())),
            ..Recorder::new(tsc)
        }
    }

    /// Ends a round: its samples' median joins the rounds' (a recorder made by
    /// [`Recorder::by_rounds`]; otherwise nothing).
    pub fn end_round(&mut self) {
        if let Some((now, medians)) = &mut self.rounds
            && let Some(s) = crate::verdict::Spread::of(now)
        {
            medians.push(s.median);
            now.clear();
        }
    }

    /// The calibration this recorder converts with.
    pub fn tsc(&self) -> Tsc {
        self.tsc
    }

    /// Times `ops` calls of `f` between two counter reads and records the per-call mean as one
    /// sample. The result of every call goes through `black_box`, so no call is a no-op to the
    /// optimiser.
    #[inline]
    pub fn time<R>(&mut self, ops: u32, mut f: impl FnMut() -> R) {
        let t0 = tsc();
        for _ in 0..ops {
            black_box(f());
        }
        let t1 = tsc();
        self.record_ticks(t1.wrapping_sub(t0), ops);
    }

    /// Records a batch measured elsewhere: `ticks` for `ops` operations, overhead not yet
    /// subtracted.
    pub fn record_ticks(&mut self, ticks: u64, ops: u32) {
        let ops = ops.max(1);
        self.ops_per_sample = ops;
        let net = ticks.saturating_sub(self.tsc.overhead_ticks);
        self.record_ns(self.tsc.ns(net) / f64::from(ops));
    }

    /// Records one sample in nanoseconds (a wake-up's lateness, a page's first touch).
    pub fn record_ns(&mut self, ns: f64) {
        let ps = (ns.max(0.0) * PS_PER_NS).round() as u64;
        let ps = ps.max(1);
        if ps > MAX_PS {
            self.saturated += 1;
        }
        self.hist.saturating_record(ps.min(MAX_PS));
        if let Some((now, _)) = &mut self.rounds {
            now.push(ns);
        }
    }

    /// Samples so far.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// True before the first sample.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// The distribution, named.
    pub fn finish(&self, name: &str) -> Dist {
        let h = &self.hist;
        // A percentile without ten samples beyond it is not one (verdict::samples_for): NaN,
        // which no ratio survives and report.json writes as null.
        let q = |q: f64| {
            if h.len() < crate::verdict::samples_for(q) {
                f64::NAN
            } else {
                h.value_at_quantile(q) as f64 / PS_PER_NS
            }
        };
        Dist {
            name: name.to_string(),
            count: h.len(),
            ops_per_sample: self.ops_per_sample,
            mean_ns: if h.is_empty() {
                0.0
            } else {
                h.mean() / PS_PER_NS
            },
            p50_ns: q(0.5),
            p90_ns: q(0.9),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            p9999_ns: q(0.9999),
            max_ns: if h.is_empty() {
                0.0
            } else {
                h.max() as f64 / PS_PER_NS
            },
            saturated: self.saturated,
            // Two rounds at least, or there is no spread to speak of.
            rounds: self
                .rounds
                .as_ref()
                .filter(|(_, m)| m.len() >= 2)
                .and_then(|(_, m)| crate::verdict::Spread::of(m)),
            hgrm: hgrm(h),
        }
    }
}

/// One variant's latency distribution, ns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Dist {
    pub name: String,
    pub count: u64,
    /// Operations per sample: 1 means each sample is one operation; more means the
    /// percentiles are those of a batch's mean (the operation is below the timer's resolution).
    pub ops_per_sample: u32,
    pub mean_ns: f64,
    /// The percentiles, NaN (null in JSON) where the samples don't reach them: read them
    /// through [`Dist::at`].
    #[serde(deserialize_with = "null_as_nan")]
    pub p50_ns: f64,
    #[serde(deserialize_with = "null_as_nan")]
    pub p90_ns: f64,
    #[serde(deserialize_with = "null_as_nan")]
    pub p99_ns: f64,
    #[serde(deserialize_with = "null_as_nan")]
    pub p999_ns: f64,
    #[serde(deserialize_with = "null_as_nan")]
    pub p9999_ns: f64,
    pub max_ns: f64,
    /// Samples above the histogram's range, clamped to it.
    pub saturated: u64,
    /// The median of each recorded round's samples, over the rounds: the figure's median and
    /// range round to round (variants run by [`interleave`]; `None` for the others).
    #[serde(default)]
    pub rounds: Option<crate::verdict::Spread>,
    /// The `.hgrm` percentile distribution (values in ns).
    #[serde(skip)]
    pub hgrm: String,
}

/// A percentile written as `null` (no samples for it) reads back as NaN.
fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl Dist {
    /// Percentile `q` (one of 0.5, 0.9, 0.99, 0.999, 0.9999), only where the samples reach it
    /// ([`crate::verdict::samples_for`]: ten beyond it); `None` otherwise, and for any other
    /// `q`.
    pub fn at(&self, q: f64) -> Option<f64> {
        let v = match q {
            0.5 => self.p50_ns,
            0.9 => self.p90_ns,
            0.99 => self.p99_ns,
            0.999 => self.p999_ns,
            0.9999 => self.p9999_ns,
            _ => return None,
        };
        (self.count >= crate::verdict::samples_for(q) && !v.is_nan()).then_some(v)
    }
}

/// The `.hgrm` text of `h` (recorded in ps, written in ns): the workspace's one writer.
fn hgrm(h: &Histogram<u64>) -> String {
    trader_core::stats::percentile_distribution(h, PS_PER_NS)
}

/// A variant of one experiment: a name and a closure that takes one round's samples.
pub struct Variant<'a> {
    pub name: String,
    pub round: Box<dyn FnMut(&mut Recorder) + 'a>,
}

impl std::fmt::Debug for Variant<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Variant").field("name", &self.name).finish()
    }
}

impl<'a> Variant<'a> {
    pub fn new(name: impl Into<String>, round: impl FnMut(&mut Recorder) + 'a) -> Variant<'a> {
        Variant {
            name: name.into(),
            round: Box::new(round),
        }
    }
}

/// The order variants run in, round `round` of `n`: rotated one place a round (A B C, B C A,
/// C A B, ...), so no variant always runs first (after a warm-up, into a cold cache) or right
/// after the same neighbour.
pub fn rotation(round: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |i| (round + i) % n.max(1))
}

/// Runs `warmup` unrecorded rounds of every variant, then `rounds` recorded rounds, the
/// variants taking turns in an order rotated each round ([`rotation`]) so drift, the other
/// tenants' noise and what the previous variant left in the caches spread over all of them.
/// Returns one distribution per variant, in the order given.
pub fn interleave(
    tsc: Tsc,
    warmup: usize,
    rounds: usize,
    variants: &mut [Variant<'_>],
) -> Vec<Dist> {
    let mut scratch = Recorder::new(tsc);
    let n = variants.len();
    for round in 0..warmup {
        for i in rotation(round, n) {
            (variants[i].round)(&mut scratch);
        }
    }
    let mut recs: Vec<Recorder> = variants.iter().map(|_| Recorder::by_rounds(tsc)).collect();
    for round in 0..rounds {
        for i in rotation(warmup + round, n) {
            (variants[i].round)(&mut recs[i]);
            recs[i].end_round();
        }
    }
    variants
        .iter()
        .zip(recs.iter())
        .map(|(v, r)| r.finish(&v.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_finds_a_positive_rate_and_a_small_overhead() {
        let t = Tsc::calibrate(Duration::from_millis(20));
        assert!(t.ticks_per_ns > 0.1 && t.ticks_per_ns < 10.0, "{t:?}");
        // Two reads cost well under a microsecond on any machine this runs on.
        assert!(t.overhead_ns() < 1_000.0, "{t:?}");
        let step = t.step_ns();
        assert!(step > 0.0 && step < 1_000.0, "{step}");
    }

    #[test]
    fn recorded_samples_come_back_as_percentiles() {
        let t = Tsc {
            ticks_per_ns: 1.0,
            overhead_ticks: 0,
        };
        let mut r = Recorder::new(t);
        for i in 1..=1000u32 {
            r.record_ns(f64::from(i));
        }
        let d = r.finish("x");
        assert_eq!(d.count, 1000);
        assert!((d.p50_ns - 500.0).abs() < 1.0, "{d:?}");
        assert!((d.max_ns - 1000.0).abs() < 1.0, "{d:?}");
        assert!(
            d.hgrm.contains("Total count    =         1000"),
            "{}",
            d.hgrm
        );
    }

    #[test]
    fn batches_are_divided_by_their_operations_after_the_overhead() {
        let t = Tsc {
            ticks_per_ns: 2.0,
            overhead_ticks: 100,
        };
        let mut r = Recorder::new(t);
        // 2000 net ticks = 1000 ns over 10 ops = 100 ns; 20 samples, as a p50 needs.
        for _ in 0..20 {
            r.record_ticks(2_100, 10);
        }
        let d = r.finish("x");
        assert!((d.p50_ns - 100.0).abs() < 0.1, "{d:?}");
        assert_eq!(d.ops_per_sample, 10);
    }

    #[test]
    fn rotation_moves_the_first_variant_each_round() {
        let r: Vec<Vec<usize>> = (0..4).map(|k| rotation(k, 3).collect()).collect();
        assert_eq!(r, [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 1, 2]]);
        assert_eq!(rotation(5, 0).count(), 0);
    }

    #[test]
    fn percentiles_come_only_with_their_samples() {
        let t = Tsc {
            ticks_per_ns: 1.0,
            overhead_ticks: 0,
        };
        let mut r = Recorder::new(t);
        for i in 1..=1_000u32 {
            r.record_ns(f64::from(i));
        }
        let d = r.finish("x");
        assert!(d.at(0.5).is_some() && d.at(0.9).is_some());
        // p99 needs 1,000 samples: ten above it.
        assert!(d.at(0.99).is_some());
        assert_eq!(d.at(0.999), None);
        assert_eq!(d.at(0.9999), None);
        assert_eq!(d.at(0.42), None, "only the report's percentiles");
        assert!(
            d.p999_ns.is_nan(),
            "no figure where the samples don't reach"
        );
        let json = serde_json::to_string(&d).unwrap();
        assert!(json.contains("\"p999_ns\":null"), "{json}");
        let back: Dist = serde_json::from_str(&json).unwrap();
        assert!(back.p999_ns.is_nan() && back.at(0.99) == d.at(0.99));
    }

    #[test]
    fn interleaving_runs_every_variant_every_round_in_turn() {
        let t = Tsc::calibrate(Duration::from_millis(5));
        let order = std::cell::RefCell::new(Vec::new());
        let mut vs = [
            Variant::new("a", |r: &mut Recorder| {
                order.borrow_mut().push('a');
                r.record_ns(1.0);
            }),
            Variant::new("b", |r: &mut Recorder| {
                order.borrow_mut().push('b');
                r.record_ns(2.0);
            }),
        ];
        let d = interleave(t, 1, 3, &mut vs);
        assert_eq!(order.borrow().iter().collect::<String>(), "abbaabba");
        assert_eq!(d[0].count, 3);
        // One sample a round: each round's median is it.
        let rounds = d[1].rounds.expect("three rounds");
        assert_eq!((rounds.median, rounds.n), (2.0, 3));
        assert_eq!(d[1].name, "b");
    }
}
