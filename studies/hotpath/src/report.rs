//! What an experiment returns and how the suite's report is written: `report.md` (our figure,
//! the study's, both ratios, a verdict), `report.json`, one `.hgrm` per distribution, one SVG
//! per curve.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use results::plot::{self, Axis, Plot, Scale};
use serde::{Deserialize, Serialize};

use crate::harness::Dist;
use crate::verdict::{Spread, Standing};

/// The study's two halves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    System,
    Code,
}

/// One experiment's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub id: String,
    pub title: String,
    pub level: Level,
    /// Latency distributions, one per variant (and condition); each gets a `.hgrm`.
    pub dists: Vec<Dist>,
    /// The rows of the summary table.
    pub comparisons: Vec<Comparison>,
    /// Curves worth a plot (the pointer-chase latency over working-set size); each an SVG.
    pub curves: Vec<Curve>,
    /// Plain findings: what dominates a figure, what this machine can't show and why.
    pub notes: Vec<String>,
    /// Which choice the trader's hot path makes today, citing the code.
    pub trader: String,
    /// Instruction, cache-miss and branch counts per operation for the variants, from
    /// cachegrind's model (and llvm-mca's loop estimates): what the missing PMU would have
    /// counted, merged in by `cargo xtask hotpath` ([`crate::counts`]).
    #[serde(default)]
    pub counts: Vec<Count>,
}

impl Outcome {
    pub fn new(id: &str, title: &str, level: Level) -> Outcome {
        Outcome {
            id: id.to_string(),
            title: title.to_string(),
            level,
            dists: Vec::new(),
            comparisons: Vec::new(),
            curves: Vec::new(),
            notes: Vec::new(),
            trader: String::new(),
            counts: Vec::new(),
        }
    }

    /// The distribution named `name` (a panic names what is missing: a bug in the experiment).
    pub fn dist(&self, name: &str) -> &Dist {
        self.dists
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("experiment {} has no distribution {name}", self.id))
    }
}

/// One row of the summary: our figure and ratio beside the study's, and a verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    /// What is compared ("enum match vs &dyn Trait, p50").
    pub what: String,
    /// Our figures in words ("1.1 ns vs 2.3 ns").
    pub ours: String,
    /// Our ratio (slower / faster, as the study states its own), when one applies.
    pub our_ratio: Option<f64>,
    /// The study's figures in words.
    pub study: String,
    /// The study's ratio, when it states one.
    pub study_ratio: Option<f64>,
    /// One line: how our figure stands by the one rule ([`crate::verdict`]), then the reason
    /// from the data.
    pub verdict: String,
    /// The rule's standing, for a reader of `report.json` (absent for rows that state a fact
    /// with no ratio to judge).
    #[serde(default)]
    pub standing: Option<Standing>,
}

impl Comparison {
    /// A row judged by the one rule: `our_ratio` against `study_ratio`, the verdict the
    /// standing's words, both ratios and `reason` (computed from the data).
    pub fn judged(
        what: impl Into<String>,
        ours: impl Into<String>,
        our_ratio: f64,
        study: impl Into<String>,
        study_ratio: Option<f64>,
        reason: &str,
    ) -> Comparison {
        Comparison {
            what: what.into(),
            ours: ours.into(),
            our_ratio: Some(our_ratio),
            study: study.into(),
            study_ratio,
            verdict: crate::verdict::verdict(our_ratio, study_ratio, reason),
            standing: Some(crate::verdict::standing(our_ratio, study_ratio)),
        }
    }

    /// A row with no ratio to judge (a count, a fact of this machine): its verdict is `finding`,
    /// which the caller computes from the data.
    pub fn finding(
        what: impl Into<String>,
        ours: impl Into<String>,
        study: impl Into<String>,
        finding: String,
    ) -> Comparison {
        Comparison {
            what: what.into(),
            ours: ours.into(),
            our_ratio: None,
            study: study.into(),
            study_ratio: None,
            verdict: finding,
            standing: None,
        }
    }
}

/// A curve for an SVG: y over x, several series.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Curve {
    /// The file stem: `<id>.svg`.
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    pub log_y: bool,
    pub series: Vec<Series>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// One variant's counts, per element, as the report shows them: cachegrind's model and
/// llvm-mca's, merged in by `cargo xtask hotpath` ([`crate::counts`], which makes them from its
/// runs: `Count::new`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Count {
    /// The variant's id (`hotpath count --variant`).
    pub id: String,
    /// The variant in the report's words.
    pub variant: String,
    /// What one element is.
    pub unit: String,
    /// The smaller run's operations (the other ran twice as many).
    pub ops: u64,
    pub elements: u64,
    /// Instructions per element (cachegrind's Ir).
    pub ir: f64,
    /// Simulated L1 data misses per element (D1mr + D1mw).
    pub d1_misses: f64,
    /// Simulated last-level data misses per element (DLmr + DLmw).
    pub ll_misses: f64,
    /// Mispredicted branches per element in cachegrind's predictor model (Bcm + Bim).
    pub mispredicts: f64,
    pub lines_model: Option<f64>,
    /// llvm-mca's cycles per element for the kernel's loop (every load an L1 hit).
    pub mca_cycles: Option<f64>,
    /// What llvm-mca read (the function, the loop's size), or why there is no figure.
    pub mca: String,
    pub detail: String,
}

/// The whole run's report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub started_utc: String,
    pub machine: String,
    pub kernel: String,
    pub size: String,
    pub tsc: crate::harness::Tsc,
    /// The counter's smallest observed step, ns: a single-operation sample's resolution.
    #[serde(default)]
    pub tsc_step_ns: f64,
    pub cpus: (usize, usize),
    /// `doctor`'s findings, one line each, embedded so a figure travels with its conditions.
    pub doctor: Vec<String>,
    pub outcomes: Vec<Outcome>,
    /// Experiments that did not run, with why.
    pub skipped: Vec<(String, String)>,
}

/// A ratio as the tables print it.
pub fn ratio(r: Option<f64>) -> String {
    match r {
        Some(r) if r.is_finite() => format!("{r:.2}×"),
        _ => "–".to_string(),
    }
}

/// A spread of durations over rounds as the tables print it: `20.6 ms (19.8 ms–23.1 ms, 20
/// passes)`, `–` when there is none; `noun` names what a round is.
pub fn ranged_ns(s: Option<Spread>, noun: &str) -> String {
    match s {
        Some(s) => format!(
            "{} ({}–{}, {} {noun})",
            ns(s.median),
            ns(s.min),
            ns(s.max),
            s.n
        ),
        None => "–".to_string(),
    }
}

/// A duration in ns as the tables print it (3 significant digits, unit scaled).
pub fn ns(v: f64) -> String {
    if v.is_nan() {
        // A percentile without its samples, a figure not measured.
        "–".to_string()
    } else if v >= 1e9 {
        format!("{:.3} s", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.3} ms", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1} µs", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.2} µs", v / 1e3)
    } else if v >= 10.0 {
        format!("{v:.1} ns")
    } else {
        format!("{v:.2} ns")
    }
}

/// A count as the tables print it: three significant digits, 0 as 0.
pub fn figure(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

impl Report {
    /// `report.md`.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# The hot path beyond the network: {}\n",
            self.started_utc
        );
        let _ = writeln!(
            s,
            "Machine: {} · kernel {} · size {} · measured on CPU {} (other CPU {}) · TSC {:.4} ticks/ns, \
             timer overhead {:.1} ns (subtracted from every timed sample), resolution {:.1} ns (the \
             counter's smallest step here: a one-operation sample is known to that). A percentile \
             shows only with ten samples beyond it (p50 needs 20, p99 1,000, p99.9 10,000, \
             p99.99 100,000; else –). Variants run interleaved, their order rotated each round.\n",
            self.machine,
            self.kernel,
            self.size,
            self.cpus.0,
            self.cpus.1,
            self.tsc.ticks_per_ns,
            self.tsc.overhead_ns(),
            self.tsc_step_ns
        );
        let _ = writeln!(
            s,
            "Ours is Rust on this machine; the study's is C++ on an Intel i5-6500 (Mohammad 2026, \
             SSRN 6513601). Ratios within one run are the figure to compare; absolute times move \
             with the host.\n"
        );
        let _ = writeln!(
            s,
            "Every verdict follows one rule (`hotpath::verdict`): a ratio within {:.2}× of 1 is no \
             measurable difference here; ours within {:.1}× of the study's, either way, agrees; \
             beyond that it is larger or smaller here, or reversed when on the other side of 1; \
             undecided when a figure or its samples are missing. The reason after the words is \
             computed from this run's data.\n",
            crate::verdict::NOISE,
            crate::verdict::AGREE
        );
        for (level, heading) in [(Level::System, "System level"), (Level::Code, "Code level")] {
            let rows: Vec<(&Outcome, &Comparison)> = self
                .outcomes
                .iter()
                .filter(|o| o.level == level)
                .flat_map(|o| o.comparisons.iter().map(move |c| (o, c)))
                .collect();
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(s, "## {heading}\n");
            let _ = writeln!(
                s,
                "| experiment | compared | ours | our ratio | study | study ratio | verdict |\n|---|---|---|---|---|---|---|"
            );
            for (o, c) in rows {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    o.id,
                    cell(&c.what),
                    cell(&c.ours),
                    ratio(c.our_ratio),
                    cell(&c.study),
                    ratio(c.study_ratio),
                    cell(&c.verdict)
                );
            }
            let _ = writeln!(s);
        }
        if !self.skipped.is_empty() {
            let _ = writeln!(s, "## Not run\n");
            for (id, why) in &self.skipped {
                let _ = writeln!(s, "- {id}: {why}");
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "## Each experiment\n");
        for o in &self.outcomes {
            let _ = writeln!(s, "### {}: {}\n", o.id, o.title);
            if !o.dists.is_empty() {
                let _ = writeln!(
                    s,
                    "| variant | samples | ops/sample | p50 | p90 | p99 | p99.9 | p99.99 | max | mean | round p50s: median (range, rounds) |\n|---|---|---|---|---|---|---|---|---|---|---|"
                );
                for d in &o.dists {
                    // A percentile only with ten samples beyond it (verdict::samples_for).
                    let q = |q: f64| d.at(q).map_or_else(|| "–".to_string(), ns);
                    let _ = writeln!(
                        s,
                        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                        cell(&d.name),
                        d.count,
                        d.ops_per_sample,
                        q(0.5),
                        q(0.9),
                        q(0.99),
                        q(0.999),
                        q(0.9999),
                        ns(d.max_ns),
                        ns(d.mean_ns),
                        ranged_ns(d.rounds, "rounds")
                    );
                }
                let _ = writeln!(s);
            }
            counts_table(&mut s, &o.counts);
            for c in &o.curves {
                let _ = writeln!(s, "![{}]({}.svg)\n", c.title, c.id);
            }
            for n in &o.notes {
                let _ = writeln!(s, "- {n}");
            }
            if !o.trader.is_empty() {
                let _ = writeln!(s, "- **The trader today:** {}", o.trader);
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "## The machine (doctor)\n");
        for d in &self.doctor {
            let _ = writeln!(s, "- {d}");
        }
        s
    }

    /// Writes report.md, report.json, one `.hgrm` per distribution and one SVG per curve.
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let put = |name: String, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
        };
        put("report.md".into(), &self.markdown())?;
        put(
            "report.json".into(),
            &serde_json::to_string_pretty(self).context("serialising the report")?,
        )?;
        for o in &self.outcomes {
            // A report read back from JSON has no `.hgrm` text: its files are already there.
            for d in o.dists.iter().filter(|d| !d.hgrm.is_empty()) {
                put(format!("{}-{}.hgrm", o.id, file_stem(&d.name)), &d.hgrm)?;
            }
            for c in &o.curves {
                put(format!("{}.svg", c.id), &svg(c))?;
            }
        }
        Ok(())
    }
}

/// An outcome's counts beside its times: per element, from cachegrind's model and llvm-mca.
fn counts_table(s: &mut String, counts: &[Count]) {
    if counts.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "Counts per element (cachegrind: simulated counts of a model cache and branch \
         predictor, not this CPU's; each from a run of N and one of 2N operations, subtracted; \
         lines (model): the distinct cache lines the element's reads touch by the layout's \
         arithmetic; llvm-mca: its cycle estimate for the kernel's inner loop, every load an L1 \
         hit):\n"
    );
    let _ = writeln!(
        s,
        "| variant | per | instructions | L1 misses | lines (model) | LL misses | mispredicts | llvm-mca cycles |\n|---|---|---|---|---|---|---|---|"
    );
    let opt = |v: Option<f64>| v.map_or_else(|| "–".to_string(), figure);
    for c in counts {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&c.variant),
            cell(&c.unit),
            figure(c.ir),
            figure(c.d1_misses),
            opt(c.lines_model),
            figure(c.ll_misses),
            figure(c.mispredicts),
            opt(c.mca_cycles)
        );
    }
    let _ = writeln!(s);
}

/// A distribution name as a file-name part: letters, digits and `-` only.
pub fn file_stem(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    s.trim_matches('-').to_string()
}

/// A line plot, axes linear or log10 (a linear y from 0). Always a complete SVG, also with no
/// points.
pub fn svg(c: &Curve) -> String {
    let scale = |log: bool| if log { Scale::Log10 } else { Scale::Linear };
    let x = Axis::new(&c.x_label, scale(c.log_x));
    let mut y = Axis::new(&c.y_label, scale(c.log_y));
    if !c.log_y {
        y = y.include(0.0);
    }
    let mut p = Plot::new(&c.title, x, y);
    for s in &c.series {
        p = p.series(plot::Series::line(&s.name, s.points.clone()));
    }
    p.svg()
}

impl Report {
    /// Reads `report.json` back (to add an outcome measured outside the binary, PGO's).
    pub fn read(dir: &Path) -> anyhow::Result<Report> {
        let p = dir.join("report.json");
        let text =
            std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_in_a_unit_that_fits() {
        assert_eq!(ns(1.234), "1.23 ns");
        assert_eq!(ns(55.0), "55.0 ns");
        assert_eq!(ns(2_500.0), "2.50 µs");
        assert_eq!(ns(1_287_000.0), "1.287 ms");
        assert_eq!(ratio(Some(1.466)), "1.47×");
        assert_eq!(ratio(None), "–");
        assert_eq!(ns(f64::NAN), "–");
        let s = Spread::of(&[20_600_000.0, 19_800_000.0, 23_100_000.0]);
        assert_eq!(
            ranged_ns(s, "passes"),
            "20.600 ms (19.800 ms–23.100 ms, 3 passes)"
        );
        assert_eq!(ranged_ns(None, "passes"), "–");
    }

    #[test]
    fn names_become_safe_file_stems() {
        assert_eq!(file_stem("&dyn Trait (mega)"), "dyn-trait-mega");
        assert_eq!(file_stem("FIFO, idle"), "fifo-idle");
    }

    #[test]
    fn a_plot_is_complete_with_points_and_without() {
        let mut c = Curve {
            id: "x".into(),
            title: "a < b".into(),
            x_label: "bytes".into(),
            y_label: "ns".into(),
            log_x: true,
            log_y: true,
            series: vec![Series {
                name: "seq".into(),
                points: vec![(4096.0, 1.0), (1e9, 100.0)],
            }],
        };
        let s = svg(&c);
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("polyline") && s.contains("a &lt; b"));
        c.series[0].points.clear();
        let s = svg(&c);
        assert!(!s.contains("polyline") && s.contains("(no points)"));
    }
}
