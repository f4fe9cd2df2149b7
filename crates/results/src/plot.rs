//! The lab's one plotter: a declarative line plot rendered as hand-written SVG (std only).
//!
//! A [`Plot`] is a title, two [`Axis`] (linear, log10, or HdrHistogram's percentile axis), some
//! [`Series`] and notes under it; [`Plot::svg`] renders it. The result is always a complete,
//! valid SVG whatever the data: points that an axis can't place (NaN, ±inf, a non-positive
//! value on a log axis, a percentile outside 0..=1) are left out, a series with none left is
//! named in the legend as empty, one point is drawn as a dot, an axis with nothing on it gets a
//! default range, and every axis has a bounded number of grid lines (a log axis spans at most
//! [`MAX_DECADES`]).
//!
//! ```
//! use results::plot::{Axis, Plot, Series};
//! let svg = Plot::new("p99 <1 µs", Axis::log10("bytes"), Axis::linear("ns"))
//!     .series(Series::line("seq", vec![(4096.0, 1.0), (1e9, 100.0)]).dashed())
//!     .svg();
//! assert!(svg.starts_with("<svg") && svg.contains("p99 &lt;1 µs"));
//! ```
use std::fmt::Write as _;

/// The most decades a log or percentile axis spans: a bound on its grid lines whatever the
/// data (the top of the data is kept; anything below sits on the axis's bottom edge).
pub const MAX_DECADES: f64 = 12.0;
/// The most grid lines on one axis.
const MAX_TICKS: usize = 13;
/// The most lines of notes under a plot.
const MAX_NOTE_LINES: usize = 20;
/// Notes wrap at this many characters.
const NOTE_WIDTH: usize = 120;

/// Colours of series that name none, in order.
const PALETTE: [&str; 8] = [
    "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f",
];

/// A plot: rendered by [`Plot::svg`].
#[derive(Debug, Clone)]
pub struct Plot {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    /// Small grey text under the plot (the conditions a figure was measured under), wrapped.
    pub notes: Vec<String>,
}

/// How an axis places a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Decades: grid lines at the powers of ten.
    Log10,
    /// A fraction `q` in 0..=1 placed at log10(1/(1-q)), HdrHistogram's percentile plot: grid
    /// lines at 0 %, 90 %, 99 %, 99.9 %, …; 1 itself sits at the axis's end.
    Percentile,
}

/// One axis: its label, scale, range and tick labels.
#[derive(Debug, Clone)]
pub struct Axis {
    pub label: String,
    pub scale: Scale,
    /// A fixed range in data units; `None` fits the data (and `include`). A log or
    /// percentile range is widened to whole decades.
    pub range: Option<(f64, f64)>,
    /// Values a fitted range reaches whatever the data (0 on a linear latency axis).
    pub include: Vec<f64>,
    /// A tick's label, from its value in data units.
    pub format: fn(f64) -> String,
}

/// How a series' points are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    Solid,
    Dashed,
    /// Points only (reference points).
    None,
}

/// What is drawn at each point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    None,
    Dot,
    Square,
}

/// One named series of (x, y) points in data units.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// An SVG colour; `None` takes the palette's by the series' place.
    pub color: Option<String>,
    pub line: Line,
    pub marker: Marker,
    /// What the legend adds, in parentheses, when no point can be drawn ("no points").
    pub empty: &'static str,
}

impl Plot {
    #[must_use]
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> Plot {
        Plot {
            title: title.into(),
            x,
            y,
            series: Vec::new(),
            notes: Vec::new(),
        }
    }

    #[must_use]
    pub fn series(mut self, s: Series) -> Plot {
        self.series.push(s);
        self
    }

    #[must_use]
    pub fn note(mut self, n: impl Into<String>) -> Plot {
        self.notes.push(n.into());
        self
    }
}

impl Axis {
    #[must_use]
    pub fn new(label: impl Into<String>, scale: Scale) -> Axis {
        Axis {
            label: label.into(),
            scale,
            range: None,
            include: Vec::new(),
            format: match scale {
                Scale::Linear | Scale::Log10 => num,
                Scale::Percentile => percent,
            },
        }
    }

    #[must_use]
    pub fn linear(label: impl Into<String>) -> Axis {
        Axis::new(label, Scale::Linear)
    }

    #[must_use]
    pub fn log10(label: impl Into<String>) -> Axis {
        Axis::new(label, Scale::Log10)
    }

    #[must_use]
    pub fn percentile(label: impl Into<String>) -> Axis {
        Axis::new(label, Scale::Percentile)
    }

    /// A fixed range, data units (ignored if the scale can't place it).
    #[must_use]
    pub fn range(mut self, lo: f64, hi: f64) -> Axis {
        self.range = Some((lo, hi));
        self
    }

    #[must_use]
    pub fn include(mut self, v: f64) -> Axis {
        self.include.push(v);
        self
    }

    #[must_use]
    pub fn format(mut self, f: fn(f64) -> String) -> Axis {
        self.format = f;
        self
    }

    /// A value's place on this axis, or `None` if the scale can't place it.
    fn place(&self, v: f64) -> Option<f64> {
        match self.scale {
            Scale::Linear => (v.is_finite() && v.abs() <= 1e300).then_some(v),
            Scale::Log10 => (v.is_finite() && v > 0.0).then(|| v.log10()),
            Scale::Percentile => (0.0..=1.0)
                .contains(&v)
                .then(|| -(1.0 - v).max(1e-15).log10()),
        }
    }

    /// The value at a place (the inverse of `place`).
    fn value(&self, p: f64) -> f64 {
        match self.scale {
            Scale::Linear => p,
            Scale::Log10 => 10f64.powf(p),
            Scale::Percentile => 1.0 - 10f64.powf(-p),
        }
    }

    /// The axis's extent (places) and its grid lines, from the places of the data drawn on it.
    fn frame(&self, data: impl Iterator<Item = f64>) -> Frame {
        let fixed = self
            .range
            .and_then(|(lo, hi)| Some((self.place(lo)?, self.place(hi)?)))
            .filter(|(lo, hi)| lo < hi);
        let (lo, hi) = fixed.unwrap_or_else(|| {
            let all = data.chain(self.include.iter().filter_map(|&v| self.place(v)));
            all.fold(None, |r: Option<(f64, f64)>, p| {
                Some(r.map_or((p, p), |(lo, hi)| (lo.min(p), hi.max(p))))
            })
            .unwrap_or((0.0, 1.0))
        });
        match self.scale {
            Scale::Linear => self.linear_frame(lo, hi),
            Scale::Log10 | Scale::Percentile => self.decade_frame(lo, hi),
        }
    }

    /// Whole decades, at least one and at most [`MAX_DECADES`] (the top kept).
    fn decade_frame(&self, lo: f64, hi: f64) -> Frame {
        // A range given as 0.999999 is 6 decades, give or take rounding.
        let mut lo = (lo + 1e-9).floor();
        let mut hi = (hi - 1e-9).ceil().max(lo + 1.0);
        lo = lo.max(hi - MAX_DECADES);
        if !(lo.is_finite() && hi.is_finite()) {
            (lo, hi) = (0.0, 1.0);
        }
        hi = hi.max(lo + 1.0);
        let step = ((hi - lo) / (MAX_TICKS - 1) as f64).ceil().max(1.0);
        let ticks = (0..MAX_TICKS)
            .map(|k| lo + step * k as f64)
            .take_while(|&p| p <= hi)
            .map(|p| (p, (self.format)(self.value(p))))
            .collect();
        Frame { lo, hi, ticks }
    }

    /// Rounded out to a 1-2-5 step, about 8 of them.
    fn linear_frame(&self, lo: f64, hi: f64) -> Frame {
        let (lo, hi) = if hi - lo > 1e-12 * hi.abs().max(lo.abs()) {
            (lo, hi)
        } else {
            let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.5 };
            (lo - d, hi + d)
        };
        let step = nice_step((hi - lo) / 8.0);
        let (a, b) = ((lo / step).floor(), (hi / step).ceil());
        let n = b - a;
        if step.is_finite() && step > 0.0 && (1.0..=(MAX_TICKS - 1) as f64).contains(&n) {
            let ticks = (0..=n as usize)
                .map(|k| {
                    let p = (a + k as f64) * step;
                    (p, (self.format)(p))
                })
                .collect();
            return Frame {
                lo: a * step,
                hi: b * step,
                ticks,
            };
        }
        // No round step fits (a range near the ends of f64): eight equal parts.
        let (lo, hi) = if lo.is_finite() && hi.is_finite() && lo < hi {
            (lo, hi)
        } else {
            (0.0, 1.0)
        };
        let ticks = (0..=8)
            .map(|k| {
                let p = lo + (hi - lo) * f64::from(k) / 8.0;
                (p, (self.format)(p))
            })
            .collect();
        Frame { lo, hi, ticks }
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * p)
}

/// An axis as laid out: its extent in places, and (place, label) of each grid line.
struct Frame {
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
}

impl Frame {
    /// A place as a fraction of the axis, clamped to it.
    fn at(&self, p: f64) -> f64 {
        ((p - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0)
    }
}

impl Series {
    /// A solid line, no markers.
    #[must_use]
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            color: None,
            line: Line::Solid,
            marker: Marker::None,
            empty: "no points",
        }
    }

    /// Points only, as squares (reference points).
    #[must_use]
    pub fn points(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            line: Line::None,
            marker: Marker::Square,
            ..Series::line(name, points)
        }
    }

    #[must_use]
    pub fn color(mut self, c: impl Into<String>) -> Series {
        self.color = Some(c.into());
        self
    }

    #[must_use]
    pub fn dashed(mut self) -> Series {
        self.line = Line::Dashed;
        self
    }

    #[must_use]
    pub fn marker(mut self, m: Marker) -> Series {
        self.marker = m;
        self
    }

    /// What the legend says of the series when nothing of it can be drawn.
    #[must_use]
    pub fn when_empty(mut self, e: &'static str) -> Series {
        self.empty = e;
        self
    }
}

/// The page: size and margins, px.
const W: f64 = 900.0;
const H: f64 = 520.0;
const ML: f64 = 80.0;
const MR: f64 = 30.0;
const MT: f64 = 40.0;
const MB: f64 = 60.0;

impl Plot {
    /// The plot as a complete SVG document.
    #[must_use]
    pub fn svg(&self) -> String {
        // Each series' points the two axes can place, as places.
        let placed: Vec<Vec<(f64, f64)>> = self
            .series
            .iter()
            .map(|s| {
                s.points
                    .iter()
                    .filter_map(|&(x, y)| Some((self.x.place(x)?, self.y.place(y)?)))
                    .collect()
            })
            .collect();
        let all = || placed.iter().flatten();
        let fx = self.x.frame(all().map(|p| p.0));
        let fy = self.y.frame(all().map(|p| p.1));
        let notes: Vec<String> = self
            .notes
            .iter()
            .flat_map(|n| wrap(n, NOTE_WIDTH))
            .take(MAX_NOTE_LINES)
            .collect();
        let h = if notes.is_empty() {
            H
        } else {
            H + 20.0 + 13.0 * notes.len() as f64
        };
        let (bottom, right) = (H - MB, W - MR);
        let px = |p: f64| ML + fx.at(p) * (right - ML);
        let py = |p: f64| bottom - fy.at(p) * (bottom - MT);

        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{ML}" y="24" font-size="14">{}</text>"#,
            escape(&self.title)
        );
        for (i, (p, label)) in fx.ticks.iter().enumerate() {
            let x = px(*p);
            let anchor = if i + 1 == fx.ticks.len() && fx.ticks.len() > 1 {
                "end"
            } else {
                "middle"
            };
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{MT}" x2="{x:.1}" y2="{bottom}" stroke="#ddd"/><text x="{x:.1}" y="{}" text-anchor="{anchor}">{}</text>"##,
                bottom + 16.0,
                escape(label)
            );
        }
        for (p, label) in &fy.ticks {
            let y = py(*p);
            let _ = writeln!(
                s,
                r##"<line x1="{ML}" y1="{y:.1}" x2="{right}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                ML - 6.0,
                y + 4.0,
                escape(label)
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            (ML + right) / 2.0,
            bottom + 36.0,
            escape(&self.x.label)
        );
        let mid = (MT + bottom) / 2.0;
        let _ = writeln!(
            s,
            r#"<text x="16" y="{mid:.1}" transform="rotate(-90 16 {mid:.1})" text-anchor="middle">{}</text>"#,
            escape(&self.y.label)
        );

        for (i, (se, pts)) in self.series.iter().zip(&placed).enumerate() {
            let color = escape(se.color.as_deref().unwrap_or(PALETTE[i % PALETTE.len()]));
            // Pixels, to a tenth; a point on the previous one's pixel adds nothing.
            let mut px_pts: Vec<String> = pts
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            px_pts.dedup();
            series_svg(&mut s, se, &color, &px_pts);
        }
        legend(&mut s, &self.series, &placed);
        for (i, line) in notes.iter().enumerate() {
            let _ = writeln!(
                s,
                r##"<text x="{ML}" y="{:.1}" font-size="10" fill="#555">{}</text>"##,
                H + 6.0 + 13.0 * i as f64,
                escape(line)
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

fn dash(line: Line) -> &'static str {
    if line == Line::Dashed {
        r#" stroke-dasharray="5,4""#
    } else {
        ""
    }
}

/// A series' line and markers, from its points as "x,y" pixels.
fn series_svg(s: &mut String, se: &Series, color: &str, pts: &[String]) {
    if se.line != Line::None && pts.len() > 1 {
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2"{} points="{}"/>"#,
            dash(se.line),
            pts.join(" ")
        );
    }
    // A lone point of a line is drawn as a dot: it has nothing to join.
    let marker = match (se.marker, pts.len()) {
        (Marker::None, 1) => Marker::Dot,
        (m, _) => m,
    };
    for pt in pts {
        let (x, y) = pt.split_once(',').unwrap_or(("0", "0"));
        marker_svg(s, marker, color, x, y);
    }
}

fn marker_svg(
    s: &mut String,
    m: Marker,
    color: &str,
    x: impl std::fmt::Display,
    y: impl std::fmt::Display,
) {
    match m {
        Marker::None => {}
        Marker::Dot => {
            let _ = writeln!(s, r#"<circle cx="{x}" cy="{y}" r="3.5" fill="{color}"/>"#);
        }
        Marker::Square => {
            let _ = writeln!(
                s,
                r#"<rect x="{x}" y="{y}" width="8" height="8" transform="translate(-4 -4)" fill="{color}"/>"#
            );
        }
    }
}

/// The legend, top left inside the plot on a pale background: each series' line and marker,
/// its name, and "(no points)" (or its own word) where nothing of it could be drawn.
fn legend(s: &mut String, series: &[Series], placed: &[Vec<(f64, f64)>]) {
    if series.is_empty() {
        return;
    }
    let names: Vec<String> = series
        .iter()
        .zip(placed)
        .map(|(se, pts)| {
            if pts.is_empty() {
                format!("{} ({})", se.name, se.empty)
            } else {
                se.name.clone()
            }
        })
        .collect();
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let _ = writeln!(
        s,
        r#"<rect x="{}" y="{}" width="{:.1}" height="{}" fill="white" fill-opacity="0.85"/>"#,
        ML + 4.0,
        MT + 4.0,
        48.0 + 7.0 * longest as f64,
        16.0 * series.len() as f64 + 6.0
    );
    for (k, (se, name)) in series.iter().zip(&names).enumerate() {
        let color = escape(se.color.as_deref().unwrap_or(PALETTE[k % PALETTE.len()]));
        let ly = MT + 14.0 + 16.0 * k as f64;
        if se.line != Line::None {
            let _ = writeln!(
                s,
                r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"{}/>"#,
                ML + 10.0,
                ML + 40.0,
                dash(se.line)
            );
        }
        marker_svg(s, se.marker, &color, ML + 25.0, ly);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{}</text>"#,
            ML + 46.0,
            ly + 4.0,
            escape(name)
        );
    }
}

/// Text for SVG's text and attributes: markup escaped, and the control characters XML 1.0
/// forbids as spaces.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(' '),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Words into lines of at most `width` characters (a longer word is a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let cur = lines.last().map_or(0, |l| l.chars().count());
        if cur > 0 && cur + 1 + word.chars().count() > width {
            lines.push(String::new());
        }
        if let Some(l) = lines.last_mut() {
            if !l.is_empty() {
                l.push(' ');
            }
            l.push_str(word);
        }
    }
    lines.retain(|l| !l.is_empty());
    lines
}

/// A number as a tick label: three significant digits, trailing zeros dropped, thousands as
/// k, M, G, T (4096 → "4.1k"), and very small or large numbers in e notation.
#[must_use]
pub fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        return "?".into();
    }
    if a == 0.0 {
        return "0".into();
    }
    if !(1e-3..1e15).contains(&a) {
        let t = format!("{v:.2e}");
        let (m, e) = t.split_once('e').unwrap_or((&t, "0"));
        return format!("{}e{e}", trim(m));
    }
    let (x, unit) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|&(d, _)| a >= d)
        .map_or((v, ""), |(d, u)| (v / d, u));
    let digits = (x.abs().log10().floor() as i32 + 1).clamp(-3, 3);
    let decimals = (3 - digits).clamp(0, 6) as usize;
    format!("{}{unit}", trim(&format!("{x:.decimals$}")))
}

fn trim(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// A time in µs as a tick label, in µs, ms or s (0.1 µs, 250 µs, 1 ms, 1.5 s).
#[must_use]
pub fn micros(us: f64) -> String {
    match us.abs() {
        a if a >= 1e6 => format!("{} s", num(us / 1e6)),
        a if a >= 1e3 => format!("{} ms", num(us / 1e3)),
        _ => format!("{} µs", num(us)),
    }
}

/// A fraction as a percentile label: whole decades as 0 %, 90 %, 99 %, 99.9 %, …
#[must_use]
pub fn percent(q: f64) -> String {
    let k = -(1.0 - q).log10();
    let r = k.round();
    if (k - r).abs() < 1e-6 && (1.0..=15.0).contains(&r) {
        let nines = r as usize;
        return match nines {
            1 => "90%".into(),
            2 => "99%".into(),
            n => format!("99.{}%", "9".repeat(n - 2)),
        };
    }
    format!("{}%", num(q * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Complete SVG, its numbers finite, small, with every tag it opens closed.
    fn assert_valid(svg: &str) {
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{svg}"
        );
        assert!(svg.len() < 20_000, "{} bytes", svg.len());
        for bad in ["NaN", "inf", "<svg <"] {
            assert!(!svg.contains(bad), "{bad} in\n{svg}");
        }
        assert_eq!(svg.matches("<svg").count(), 1);
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
        // No bare markup in text: every '<' starts a tag we write.
        for piece in svg.split('<').skip(1) {
            assert!(
                [
                    "svg", "/svg", "rect", "text", "/text", "line", "polyline", "circle"
                ]
                .iter()
                .any(|t| piece.starts_with(t)),
                "stray '<' before {piece:.20}"
            );
        }
    }

    fn grid_lines(svg: &str) -> usize {
        svg.matches(r##"stroke="#ddd""##).count()
    }

    fn every_scale() -> [Axis; 3] {
        [Axis::linear("x"), Axis::log10("x"), Axis::percentile("x")]
    }

    #[test]
    fn no_points_and_no_series_still_plot() {
        for x in every_scale() {
            for y in every_scale() {
                let empty = Plot::new("t", x.clone(), y.clone()).series(Series::line("a", vec![]));
                let svg = empty.svg();
                assert_valid(&svg);
                assert!(svg.contains("a (no points)") && !svg.contains("polyline"));
                assert!(!svg.contains("<circle"));
                assert_valid(&Plot::new("t", x.clone(), y).svg());
            }
        }
        let svg = Plot::new("t", Axis::linear("x"), Axis::linear("y"))
            .series(Series::line("xdp", vec![]).when_empty("no samples"))
            .svg();
        assert!(svg.contains("xdp (no samples)"), "{svg}");
    }

    #[test]
    fn one_point_is_a_dot() {
        for x in every_scale() {
            for y in every_scale() {
                let svg = Plot::new("t", x.clone(), y)
                    .series(Series::line("a", vec![(0.5, 0.5)]))
                    .svg();
                assert_valid(&svg);
                assert_eq!(svg.matches("<circle").count(), 1, "{svg}");
                assert!(!svg.contains("polyline") && !svg.contains("no points"));
            }
        }
        // Equal values, also zero on a linear axis: still a range around them.
        let svg = Plot::new("t", Axis::linear("x"), Axis::linear("y"))
            .series(Series::line("a", vec![(0.0, 0.0), (0.0, 0.0)]))
            .svg();
        assert_valid(&svg);
    }

    #[test]
    fn what_an_axis_cannot_place_is_left_out() {
        let pts = vec![
            (f64::NAN, 1.0),
            (1.0, f64::INFINITY),
            (f64::NEG_INFINITY, 2.0),
            (-1.0, 3.0),
            (0.0, 4.0),
            (1e308, f64::MAX),
            (2.0, 5.0),
            (3.0, 6.0),
        ];
        for x in every_scale() {
            for y in every_scale() {
                let svg = Plot::new("t", x.clone(), y)
                    .series(Series::line("a", pts.clone()).marker(Marker::Dot))
                    .series(Series::line("nan", vec![(f64::NAN, f64::NAN)]))
                    .svg();
                assert_valid(&svg);
                assert!(svg.contains("nan (no points)"));
            }
        }
        // Of the first six, log10 axes place none: only (2, 5) and (3, 6) are drawn.
        let svg = Plot::new("t", Axis::log10("x"), Axis::log10("y"))
            .series(
                Series::line("a", pts[..5].iter().chain(&pts[6..]).copied().collect())
                    .marker(Marker::Dot),
            )
            .svg();
        assert_eq!(
            svg.matches("<circle").count(),
            3,
            "two points and the legend's"
        );
    }

    #[test]
    fn many_decades_keep_a_bounded_grid() {
        let pts: Vec<(f64, f64)> = (-300..300)
            .map(|e| (10f64.powi(e), 10f64.powi(-e)))
            .collect();
        for scale in [Scale::Log10, Scale::Linear] {
            let svg = Plot::new("t", Axis::new("x", scale), Axis::new("y", scale))
                .series(Series::line("a", pts.clone()))
                .svg();
            assert_valid(&svg);
            assert!(grid_lines(&svg) <= 2 * MAX_TICKS, "{}", grid_lines(&svg));
        }
        let svg = Plot::new("t", Axis::log10("x"), Axis::log10("y"))
            .series(Series::line("a", vec![(1e-10, 1.0), (1e20, 2.0)]))
            .svg();
        // x: the top 12 decades, 1e8..1e20; y: one decade, 1..10.
        assert_eq!(grid_lines(&svg), 13 + 2, "{svg}");
        assert!(svg.contains(">1e20<") && svg.contains(">100M<") && !svg.contains(">10M<"));
        // A percentile axis fixed at 99.9999 %.
        let svg = Plot::new(
            "t",
            Axis::percentile("p").range(0.0, 0.999_999),
            Axis::linear("y"),
        )
        .series(Series::line("a", vec![(0.0, 1.0), (0.999_999_9, 3.0)]))
        .svg();
        for l in ["0%", "90%", "99%", "99.9%", "99.9999%"] {
            assert!(svg.contains(&format!(">{l}<")), "{l}");
        }
        assert!(!svg.contains("99.99999%"));
    }

    #[test]
    fn titles_names_labels_and_notes_are_escaped() {
        let svg = Plot::new(
            "a < b & \"c\" \u{1}",
            Axis::linear("x <x>"),
            Axis::linear("y's"),
        )
        .series(Series::line("<script>", vec![(1.0, 2.0), (2.0, 3.0)]).color("red\"/><x"))
        .note("A & B <i>")
        .svg();
        assert_valid(&svg);
        assert!(svg.contains("a &lt; b &amp; &quot;c&quot;"), "{svg}");
        assert!(svg.contains("x &lt;x&gt;") && svg.contains("y&apos;s"));
        assert!(svg.contains("&lt;script&gt;") && svg.contains("A &amp; B &lt;i&gt;"));
        assert!(svg.contains(r#"stroke="red&quot;/&gt;&lt;x""#));
    }

    #[test]
    fn series_styles_and_notes() {
        let long = "word ".repeat(100);
        let svg = Plot::new("t", Axis::log10("x"), Axis::log10("y"))
            .series(
                Series::line("p99", vec![(1.0, 2.0), (10.0, 20.0)])
                    .dashed()
                    .color("#123456"),
            )
            .series(Series::points("study", vec![(8.0, 14.0), (1.2e6, 2043.0)]))
            .note(long)
            .svg();
        assert_valid(&svg);
        assert_eq!(
            svg.matches("stroke-dasharray").count(),
            2,
            "line and legend"
        );
        assert!(svg.contains(r##"stroke="#123456""##));
        // The study's two squares and the legend's; no line through them.
        assert_eq!(svg.matches("width=\"8\"").count(), 3);
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert_eq!(
            svg.matches(r##"fill="#555""##).count(),
            5,
            "500 chars in 120"
        );
    }

    #[test]
    fn tick_labels() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(4096.0), "4.1k");
        assert_eq!(num(1e9), "1G");
        assert_eq!(num(0.1), "0.1");
        assert_eq!(num(0.30000000000000004), "0.3");
        assert_eq!(num(1000.0000000000001), "1k");
        assert_eq!(num(-2.5), "-2.5");
        assert_eq!(num(1e-5), "1e-5");
        assert_eq!(num(1.5e20), "1.5e20");
        assert_eq!(micros(0.1), "0.1 µs");
        assert_eq!(micros(1e4), "10 ms");
        assert_eq!(micros(2.5e6), "2.5 s");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(percent(0.9), "90%");
        assert_eq!(percent(1.0 - 1e-4), "99.99%");
        assert_eq!(percent(0.5), "50%");
        assert_eq!(wrap("a bb ccc", 4), vec!["a bb", "ccc"]);
        assert!(wrap("", 4).is_empty());
    }
}
