//! Latency histograms (hdrhistogram, nanoseconds) and their summaries and files.
use std::{fmt::Write as _, path::Path};

use anyhow::Context as _;
use hdrhistogram::Histogram;
pub use results::Summary;

/// A histogram of nanoseconds from 1 ns to 100 s at 3 significant digits. Recording never
/// allocates; values beyond the range are clamped to it and counted in `saturated`.
#[derive(Debug, Clone)]
pub struct Latency {
    hist: Histogram<u64>,
    saturated: u64,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

/// Upper bound of what a [`Latency`] records.
pub const MAX_NS: u64 = 100_000_000_000;

impl Latency {
    /// An empty histogram.
    pub fn new() -> Self {
        Self {
            hist: Histogram::new_with_bounds(1, MAX_NS, 3).expect("static bounds are valid"),
            saturated: 0,
        }
    }

    /// Records one value.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let v = ns.clamp(1, MAX_NS);
        if v != ns && ns > MAX_NS {
            self.saturated += 1;
        }
        // In range by the clamp above, so this can't fail.
        let _ = self.hist.record(v);
    }

    /// Number of values.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// The summary reported everywhere: min, p50 ... p99.99, max, mean and standard deviation,
    /// in microseconds.
    pub fn summary(&self) -> Summary {
        let h = &self.hist;
        let us = |ns: u64| ns as f64 / 1000.0;
        if h.is_empty() {
            return Summary::default();
        }
        Summary {
            count: h.len(),
            min_us: us(h.min()),
            p50_us: us(h.value_at_quantile(0.50)),
            p90_us: us(h.value_at_quantile(0.90)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            p9999_us: us(h.value_at_quantile(0.9999)),
            max_us: us(h.max()),
            mean_us: h.mean() / 1000.0,
            stdev_us: h.stdev() / 1000.0,
            saturated: self.saturated,
        }
    }

    /// The HdrHistogram percentile-distribution text (`.hgrm`), values in microseconds, as
    /// HdrHistogram's own `outputPercentileDistribution` writes it (plottable with its tools):
    /// the last row (100 %) has no 1/(1-Percentile) column, and the footer's `Buckets` and
    /// `SubBuckets` are the histogram's bucket count and sub-bucket count. An empty histogram
    /// has the header and the footer (all zero) and no rows. Saturated values (clamped to the
    /// histogram's maximum) are said in a last comment line, which HdrHistogram's tools skip.
    pub fn hgrm(&self) -> String {
        let h = &self.hist;
        let mut s = percentile_distribution(h, 1000.0);
        let _ = writeln!(
            s,
            "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
            h.buckets(),
            self.sub_buckets()
        );
        if self.saturated > 0 {
            let _ = writeln!(
                s,
                "#[Saturated = {:>10}, above {:.3} (clamped to it)]",
                self.saturated,
                MAX_NS as f64 / 1000.0
            );
        }
        s
    }

    /// The histogram's sub-bucket count (HdrHistogram's `subBucketCount`, which the crate
    /// doesn't expose): its counts array holds `(buckets + 1) * subBucketCount / 2` slots.
    fn sub_buckets(&self) -> usize {
        2 * self.hist.distinct_values() / (usize::from(self.hist.buckets()) + 1)
    }

    /// Writes [`Latency::hgrm`] to `path`.
    pub fn write_hgrm(&self, path: &Path) -> anyhow::Result<()> {
        std::fs::write(path, self.hgrm())
            .with_context(|| format!("failed to write {}", path.display()))
    }
}

/// HdrHistogram's percentile-distribution text (`outputPercentileDistribution`): the header,
/// five rows per halving of the tail (the last, 100 %, without its 1/(1-Percentile) column),
/// and the `Mean` and `Max` footer lines, every value divided by `per_unit` (1000 for ns
/// recorded and µs written). The one writer of `.hgrm` text in the workspace.
pub fn percentile_distribution(h: &Histogram<u64>, per_unit: f64) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    if !h.is_empty() {
        let mut total = 0u64;
        for v in h.iter_quantiles(5) {
            total += v.count_since_last_iteration();
            let q = v.quantile_iterated_to();
            let value = v.value_iterated_to() as f64 / per_unit;
            if q < 1.0 {
                let inv = 1.0 / (1.0 - q);
                let _ = writeln!(s, "{value:>12.3} {q:>2.12} {total:>10} {inv:>14.2}");
            } else {
                let _ = writeln!(s, "{value:>12.3} {q:>2.12} {total:>10}");
            }
        }
    }
    let (mean, stdev, max) = if h.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (h.mean(), h.stdev(), h.max() as f64)
    };
    let _ = writeln!(
        s,
        "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
        mean / per_unit,
        stdev / per_unit
    );
    let _ = writeln!(
        s,
        "#[Max     = {:>12.3}, Total count    = {:>12}]",
        max / per_unit,
        h.len()
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let mut l = Latency::new();
        for v in 1..=10_000u64 {
            l.record(v * 1000);
        }
        let s = l.summary();
        assert_eq!(s.count, 10_000);
        assert!((s.p50_us - 5000.0).abs() / 5000.0 < 0.002, "{s:?}");
        assert!((s.p99_us - 9900.0).abs() / 9900.0 < 0.002, "{s:?}");
        assert!((s.min_us - 1.0).abs() < 1e-9);
        assert!((s.max_us - 10_000.0).abs() / 10_000.0 < 0.002);
        // 1..=10,000 µs evenly: σ = 10,000/√12 ≈ 2,886.75 µs.
        assert!((s.stdev_us - 2886.75).abs() / 2886.75 < 0.002, "{s:?}");
    }

    #[test]
    fn out_of_range_values_are_clamped_and_counted() {
        let mut l = Latency::new();
        l.record(0);
        l.record(MAX_NS * 2);
        assert_eq!(l.len(), 2);
        assert_eq!(l.summary().saturated, 1);
    }

    #[test]
    fn hgrm_has_header_rows_and_footer() {
        let mut l = Latency::new();
        for v in [1000u64, 2000, 3000, 50_000] {
            l.record(v);
        }
        let text = l.hgrm();
        assert!(text.starts_with("       Value     Percentile"));
        assert!(text.contains("#[Max     ="));
        assert!(text.contains("Total count    =            4"));
        let rows = text
            .lines()
            .filter(|l| l.trim_start().starts_with(char::is_numeric))
            .count();
        assert!(rows >= 4, "{text}");
        // The footer as HdrHistogram writes it: 1 ns to 100 s at 3 digits is 2048 sub-buckets
        // (2 * 10^3 rounded up to a power of two) in 27 buckets.
        assert!(
            text.contains("#[Buckets =           27, SubBuckets     =         2048]"),
            "{text}"
        );
        // The 100 % row has no 1/(1-Percentile) column.
        let last = text
            .lines()
            .rfind(|l| l.trim_start().starts_with(char::is_numeric))
            .unwrap();
        assert_eq!(last.split_whitespace().count(), 3, "{last:?}");
        assert!(last.contains("1.000000000000"), "{last:?}");
        assert!(!text.contains("Saturated"));
    }

    #[test]
    fn one_sample_and_equal_samples_give_finite_rows() {
        for n in [1u64, 3] {
            let mut l = Latency::new();
            for _ in 0..n {
                l.record(7_000);
            }
            let text = l.hgrm();
            if std::env::var_os("PRINT_HGRM").is_some() {
                println!("{text}");
            }
            let rows: Vec<&str> = text
                .lines()
                .filter(|l| l.trim_start().starts_with(char::is_numeric))
                .collect();
            assert!(!rows.is_empty(), "{text}");
            for r in rows {
                assert!(r.trim_start().starts_with("7.00"), "{r:?}");
                assert!(!r.contains("inf") && !r.contains("NaN"), "{r:?}");
            }
        }
    }

    #[test]
    fn an_empty_hgrm_has_header_and_zero_footer_and_saturation_is_said() {
        let text = Latency::new().hgrm();
        assert!(text.starts_with("       Value     Percentile"));
        assert!(text.contains("#[Mean    =        0.000, StdDeviation   =        0.000]"));
        assert!(text.contains("Total count    =            0]"));
        let rows = text
            .lines()
            .filter(|l| l.trim_start().starts_with(char::is_numeric))
            .count();
        assert_eq!(rows, 0, "{text}");
        let mut l = Latency::new();
        l.record(MAX_NS + 1);
        assert!(
            l.hgrm().contains("#[Saturated =          1"),
            "{}",
            l.hgrm()
        );
    }
}
