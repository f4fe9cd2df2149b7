//! latency.svg: each row's tick-to-trade by percentile, HdrHistogram style, from its `.hgrm`.
use results::plot::{self, Axis, Plot, Series};

/// A curve of latency.svg: its name in the legend, and its (percentile as 0..1, value µs)
/// rows ([`parse_hgrm`]).
pub type Curve = (String, Vec<(f64, f64)>);

/// (percentile as 0..1, value µs) rows of an `.hgrm` file: rows whose value and percentile
/// are numbers a plot can place (finite, the value positive, the percentile in 0..=1).
pub fn parse_hgrm(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let v: f64 = it.next()?.parse().ok()?;
            let q: f64 = it.next()?.parse().ok()?;
            (v.is_finite() && v > 0.0 && (0.0..=1.0).contains(&q)).then_some((q, v))
        })
        .collect()
}

/// Latency by percentile, x on HdrHistogram's log axis of 1/(1-p) up to 99.9999 %, y log10
/// µs (no lower than 0.1 µs).
///
/// Always a complete SVG, whatever the data (see [`results::plot`]): a curve with no rows
/// (nothing came back) is named in the legend as having no samples, one row is drawn as a
/// point, and with no data at all the axes span 1 to 10 µs.
pub fn svg(curves: &[Curve], title: &str) -> String {
    let x = Axis::percentile("percentile").range(0.0, 0.999_999);
    let y = Axis::log10("latency").format(plot::micros);
    let mut p = Plot::new(title, x, y);
    for (name, rows) in curves {
        // The 100 % row sits at the axis's end whatever its percentile; HdrHistogram's own
        // plots leave it out too. With only that row (one distinct value), it is the curve.
        let below_max: Vec<(f64, f64)> = rows.iter().copied().filter(|(q, _)| *q < 1.0).collect();
        let rows = if below_max.is_empty() {
            rows
        } else {
            &below_max
        };
        let points = rows.iter().map(|&(q, v)| (q, v.max(0.1))).collect();
        p = p.series(Series::line(name, points).when_empty("no samples"));
    }
    p.svg()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hgrm_rows_parse_and_plot() {
        let text = "       Value     Percentile TotalCount 1/(1-Percentile)\n\n       \
                    8.000 0.000000000000          1           1.00\n      12.500 \
                    0.500000000000        500           2.00\n     150.000 \
                    0.999000000000        999        1000.00\n#[Mean    =       10.000]\n";
        let rows = parse_hgrm(text);
        assert_eq!(rows, vec![(0.0, 8.0), (0.5, 12.5), (0.999, 150.0)]);
        let svg = svg(&[("xdp".into(), rows)], "t <1>");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("polyline") && svg.contains("t &lt;1&gt;"));
    }

    /// A plot is complete SVG, its numbers finite, and it is small (the empty-histogram case
    /// used to loop forever, growing a string without bound).
    fn assert_valid_svg(svg: &str) {
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{svg}"
        );
        assert!(svg.len() < 20_000, "{} bytes", svg.len());
        for bad in ["NaN", "inf"] {
            assert!(!svg.contains(bad), "{bad} in\n{svg}");
        }
    }

    #[test]
    fn empty_one_sample_and_equal_histograms_plot_and_end() {
        // No samples at all: the .hgrm of an empty histogram (header and footer only).
        let empty_text = "       Value     Percentile TotalCount 1/(1-Percentile)\n\n\
                          #[Mean    =        0.000, StdDeviation   =        0.000]\n\
                          #[Max     =        0.000, Total count    =            0]\n";
        let empty = parse_hgrm(empty_text);
        assert!(empty.is_empty());
        let svg_none = svg(&[("xdp".into(), empty.clone())], "t");
        assert_valid_svg(&svg_none);
        assert!(svg_none.contains("xdp (no samples)"));
        assert!(!svg_none.contains("polyline") && !svg_none.contains("circle"));
        assert_valid_svg(&svg(&[], "nothing"));
        // One sample: only the 100 % row, drawn as a point.
        let one = vec![(1.0, 12.5)];
        let svg_one = svg(&[("xdp".into(), one), ("udp".into(), empty)], "t");
        assert_valid_svg(&svg_one);
        assert!(svg_one.contains("<circle") && svg_one.contains("udp (no samples)"));
        // One sample as the replay's .hgrm has it: a 0 % and a 100 % row at one value.
        let one = parse_hgrm(
            "       7.003 0.000000000000          1           1.00\n       7.003 \
             1.000000000000          1\n",
        );
        assert_eq!(one, vec![(0.0, 7.003), (1.0, 7.003)]);
        let svg_one = svg(&[("xdp".into(), one)], "t");
        assert_valid_svg(&svg_one);
        assert!(svg_one.contains("<circle"));
        // All equal, on a power of ten: still a decade of axis.
        let equal = vec![(0.0, 10.0), (0.5, 10.0), (0.9, 10.0), (1.0, 10.0)];
        let svg_eq = svg(&[("xdp".into(), equal)], "t");
        assert_valid_svg(&svg_eq);
        assert!(svg_eq.contains("polyline"));
        // Rows a plot can't place are dropped when read.
        assert!(parse_hgrm("0.000 0.5 1\n-3 0.5 1\nNaN 0.5 1\n5 1.5 1\n").is_empty());
    }
}
