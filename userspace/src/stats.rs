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

    /// The summary reported everywhere: min, p50 ... p99.99, max, mean, in microseconds.
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
            saturated: self.saturated,
        }
    }

    /// The HdrHistogram percentile-distribution text (`.hgrm`), values in microseconds, as
    /// HdrHistogram's own `outputPercentileDistribution` writes it (plottable with its tools).
    pub fn hgrm(&self) -> String {
        let h = &self.hist;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:>12} {:>14} {:>10} {:>14}\n",
            "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
        );
        if h.is_empty() {
            return s;
        }
        let mut total = 0u64;
        for v in h.iter_quantiles(5) {
            total += v.count_since_last_iteration();
            let q = v.quantile_iterated_to();
            let inv = if q < 1.0 {
                format!("{:>14.2}", 1.0 / (1.0 - q))
            } else {
                format!("{:>14}", "")
            };
            let _ = writeln!(
                s,
                "{:>12.3} {:>2.12} {:>10} {}",
                v.value_iterated_to() as f64 / 1000.0,
                q,
                total,
                inv
            );
        }
        let _ = writeln!(
            s,
            "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
            h.mean() / 1000.0,
            h.stdev() / 1000.0
        );
        let _ = writeln!(
            s,
            "#[Max     = {:>12.3}, Total count    = {:>12}]",
            h.max() as f64 / 1000.0,
            h.len()
        );
        let _ = writeln!(
            s,
            "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
            h.buckets(),
            h.distinct_values()
        );
        s
    }

    /// Writes [`Latency::hgrm`] to `path`.
    pub fn write_hgrm(&self, path: &Path) -> anyhow::Result<()> {
        std::fs::write(path, self.hgrm())
            .with_context(|| format!("failed to write {}", path.display()))
    }
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
    }
}
