//! The lab's reports, rendered: the bench's `report.json` ([`Report`]) and every table of its
//! `report.md` ([`Bench::markdown`]) and `latency.svg` ([`svg`]), the knob matrix's tables and
//! `matrix.json` ([`matrix`]) and the zero-loss search's ([`zeroloss`]). Each table is rendered
//! here, next to the types it renders; `xtask` runs the lab, reads the binaries' reports
//! ([`results`]) back, fills these types and calls them.
//!
//! No I/O but the files a report is made of ([`write`] reads the `.hgrm` files and writes the
//! report's three), so every table is tested from reports built by hand (`report::fixtures`,
//! with the `fixtures` feature, for the tests of the crates that fill these types).
//!
//! # `schema_version`
//!
//! `report.json` starts with [`Report::schema_version`], an integer, [`SCHEMA_VERSION`] in
//! every report written now. It goes up by one whenever a reader of an older file could
//! misread a newer one: a field removed or renamed, a field whose meaning or unit changes, a
//! row's name that changes. A field *added* doesn't bump it: readers (these types) take an
//! older file's missing field as its `serde` default, and a newer file's extra field is
//! ignored. A file written before the field existed reads as version 0.
//!
//! - 1: the first versioned report; its latency summaries carry `stdev_us`. Added since,
//!   without a bump: `options.isolate` and `options.xdp_stages`.
#![forbid(unsafe_code)]

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use paths::{Rate, Source, TraderPath, Wait, XdpMode, XdpStages};
use results::{FloorReport, Machine, ReplayReport, Summary, TraderReport};
use serde::{Deserialize, Serialize};

mod check;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
mod markdown;
pub mod matrix;
mod plot;
pub mod zeroloss;

pub use check::{Delivery, LOSS_MARK, accounts_differ, latency_name, notes, problems};
pub use plot::{Curve, parse_hgrm, svg};

/// `report.json`'s [`Report::schema_version`] as this crate writes it (see the crate's docs
/// for what bumps it).
pub const SCHEMA_VERSION: u32 = 1;

/// The lab's link, for the conditions a result was measured under.
pub const LINK: &str = "veth pair between two network namespaces (copy-mode AF_XDP)";

/// The names of the rows the report treats apart: the reflector's (each XDP program's run is
/// set against its), and the floors measured without the lab. xtask's rows are named alike
/// (its tests check).
pub mod row {
    /// The XDP_TX reflector against the kernel-UDP exchange.
    pub const REFLECT: &str = "reflect";
    /// Two pinned threads ping-ponging a cache line.
    pub const CPU_FLOOR: &str = "cpu floor";
    /// sockperf's UDP ping-pong.
    pub const SOCKPERF: &str = "sockperf";
}

/// A lab row's results, read back from its files.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The row's name in the tables, its files and report.json (its `tag`).
    pub row: &'static str,
    /// The trader's path.
    pub path: TraderPath,
    /// A row whose orders went over a session: the name of the same path's row with UDP
    /// orders, whose figures its own are compared with (`None`: a row of UDP orders).
    pub udp_orders: Option<&'static str>,
    pub replay: ReplayReport,
    pub trader: TraderReport,
    /// The replay's tick-to-trade histogram.
    pub hgrm: PathBuf,
}

/// sockperf's full round trips, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoundTrip {
    /// Observations.
    pub count: u64,
    pub min_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
    /// sockperf's `std-dev` (0 in a report written before it was read).
    #[serde(default)]
    pub stdev_us: f64,
}

impl RoundTrip {
    /// As the lab's own summaries (sockperf clamps nothing: none saturated).
    pub fn summary(&self) -> Summary {
        let RoundTrip {
            count,
            min_us,
            p50_us,
            p90_us,
            p99_us,
            p999_us,
            p9999_us,
            max_us,
            mean_us,
            stdev_us,
        } = *self;
        Summary {
            count,
            min_us,
            p50_us,
            p90_us,
            p99_us,
            p999_us,
            p9999_us,
            max_us,
            mean_us,
            stdev_us,
            saturated: 0,
        }
    }
}

/// `report.json`: everything a bench measured, per row, and under which conditions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Which layout of this file ([`SCHEMA_VERSION`] when written now; 0: a file from before
    /// the field). First, so a reader sees it before anything it might misread.
    #[serde(default)]
    pub schema_version: u32,
    pub machine: Host,
    pub options: Conditions,
    /// sockperf's UDP ping-pong, if it ran.
    pub sockperf: Option<RoundTrip>,
    /// The CPU floor, if it ran (`--floors`).
    pub cpu_floor: Option<FloorReport>,
    pub runs: Vec<RunRecord>,
}

/// The machine and the link between the lab's ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    #[serde(flatten)]
    pub machine: Machine,
    pub link: String,
}

/// The bench options every row shares: report.json's `options`, and the conditions line of
/// report.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conditions {
    pub source: Source,
    pub count: Option<u64>,
    pub rate: Rate,
    /// `--burst` (absent from a report.json written before it: none).
    #[serde(default)]
    pub burst: Option<String>,
    pub batch: u16,
    pub n: i64,
    pub xdp_mode: XdpMode,
    pub wait: Wait,
    pub trader_cpu: usize,
    pub replay_cpu: usize,
    pub trader_args: Vec<String>,
    /// `--isolate`: the trader's CPU isolated at runtime (absent from a report.json written
    /// before schema 1 had it: read as off).
    #[serde(default)]
    pub isolate: bool,
    /// `--xdp-stages`: the XDP programs timed, and how (absent before, as `isolate`).
    #[serde(default)]
    pub xdp_stages: Option<XdpStages>,
}

/// One lab row in report.json: both ends' reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The trader's path.
    pub path: TraderPath,
    /// The row (and the stem of its files).
    pub tag: String,
    pub replay: ReplayReport,
    pub trader: TraderReport,
    /// The tick-to-trade histogram's file name, beside report.json.
    pub hgrm: String,
}

/// A bench's results: what report.md, report.json and latency.svg are made of.
#[derive(Debug, Clone, Copy)]
pub struct Bench<'a> {
    pub conditions: &'a Conditions,
    pub machine: &'a Machine,
    /// The lab rows, in the order they ran.
    pub measured: &'a [Measured],
    /// sockperf's UDP ping-pong, if it ran.
    pub sockperf: Option<&'a RoundTrip>,
    /// The CPU floor, if it ran.
    pub cpu_floor: Option<&'a FloorReport>,
    /// The tick-to-trade ratios shown under the tables, by row name (`a/b`), where both rows
    /// were measured.
    pub ratios: &'a [(&'a str, &'a str)],
    /// The machine's latency readiness (`cargo xtask doctor`'s summary), a finding a line: so
    /// every figure travels with its conditions.
    pub readiness: &'a [String],
}

impl Bench<'_> {
    /// report.json's contents.
    pub fn report(&self) -> Report {
        Report {
            schema_version: SCHEMA_VERSION,
            machine: Host {
                machine: self.machine.clone(),
                link: LINK.to_owned(),
            },
            options: self.conditions.clone(),
            sockperf: self.sockperf.copied(),
            cpu_floor: self.cpu_floor.cloned(),
            runs: self
                .measured
                .iter()
                .map(|m| RunRecord {
                    path: m.path,
                    tag: m.row.to_owned(),
                    replay: m.replay.clone(),
                    trader: m.trader.clone(),
                    hgrm: m
                        .hgrm
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                })
                .collect(),
        }
    }

    /// report.md in full: the tables ([`Bench::markdown`]), then the machine's readiness.
    pub fn report_md(&self) -> String {
        let mut t = self.markdown();
        readiness(&mut t, self.readiness);
        t
    }

    /// Each row's tick-to-trade curve, named as latency.svg's legend names it, from its
    /// `.hgrm` file.
    pub fn curves(&self) -> anyhow::Result<Vec<Curve>> {
        self.measured
            .iter()
            .map(|m| {
                let text = std::fs::read_to_string(&m.hgrm)
                    .with_context(|| format!("reading {}", m.hgrm.display()))?;
                let name = if m.replay.closed_loop {
                    format!("{} (closed-loop)", m.row)
                } else {
                    m.row.to_owned()
                };
                Ok((name, parse_hgrm(&text)))
            })
            .collect()
    }
}

/// Appends the machine's latency readiness (`cargo xtask doctor`'s summary, a finding a line)
/// to a report's text, so its figures travel with their conditions.
pub fn readiness(t: &mut String, lines: &[String]) {
    let _ = writeln!(t, "\nmachine readiness (`cargo xtask doctor`):");
    for line in lines {
        let _ = writeln!(t, "- {line}");
    }
}

/// Writes `report.json`, `report.md` and `latency.svg` into `out` and returns report.md's
/// text. A row's `.hgrm` file that can't be read is an error naming it, and then nothing is
/// written.
pub fn write(out: &Path, bench: &Bench<'_>) -> anyhow::Result<String> {
    let md = bench.report_md();
    let curves = bench.curves()?;
    write_file(
        &out.join("report.json"),
        serde_json::to_string_pretty(&bench.report())?,
    )?;
    write_file(&out.join("report.md"), md.clone())?;
    write_file(
        &out.join("latency.svg"),
        svg(&curves, md.lines().next().unwrap_or("")),
    )?;
    Ok(md)
}

fn write_file(path: &Path, text: String) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench_of<'a>(
        conditions: &'a Conditions,
        machine: &'a Machine,
        measured: &'a [Measured],
        sockperf: Option<&'a RoundTrip>,
        floor: Option<&'a FloorReport>,
    ) -> Bench<'a> {
        Bench {
            conditions,
            machine,
            measured,
            sockperf,
            cpu_floor: floor,
            ratios: &fixtures::RATIOS,
            readiness: &[],
        }
    }

    #[test]
    fn report_json_reads_back_as_written_its_schema_version_first() {
        let (c, m) = (fixtures::conditions(), fixtures::machine());
        let measured = fixtures::measured(Path::new("/r"));
        let (sockperf, floor) = (fixtures::sockperf(), fixtures::floor());
        let report = bench_of(&c, &m, &measured, Some(&sockperf), Some(&floor)).report();
        let json = serde_json::to_string_pretty(&report).unwrap();
        assert!(
            json.starts_with(&format!("{{\n  \"schema_version\": {SCHEMA_VERSION},\n")),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Report>(&json).unwrap(), report);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["machine"]["cpu"], "Test CPU @ 3.00GHz");
        assert_eq!(v["options"]["rate"], "20k");
        assert_eq!(v["runs"][3]["path"], "xdp");
        assert_eq!(v["runs"][3]["tag"], "xdp-bypass");
        assert_eq!(v["runs"][3]["hgrm"], "xdp-bypass.hgrm");
        assert_eq!(v["runs"][0]["replay"]["tick_to_trade"]["stdev_us"], 90.0);
        assert_eq!(v["sockperf"]["stdev_us"], 206.93);
        assert_eq!(v["options"]["isolate"], false);
        assert!(v["options"]["xdp_stages"].is_null());
    }

    /// A report.json from before `schema_version` and `stdev_us` reads as version 0, its
    /// standard deviations 0.
    #[test]
    fn an_older_report_json_still_reads() {
        let (c, m) = (fixtures::conditions(), fixtures::machine());
        let measured = fixtures::measured(Path::new("/r"));
        let sockperf = fixtures::sockperf();
        let report = bench_of(&c, &m, &measured, Some(&sockperf), None).report();
        let mut v = serde_json::to_value(&report).unwrap();
        fn strip(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::Object(o) => {
                    o.remove("stdev_us");
                    o.remove("schema_version");
                    o.remove("isolate");
                    o.remove("xdp_stages");
                    o.values_mut().for_each(strip);
                }
                serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
                _ => {}
            }
        }
        strip(&mut v);
        assert!(!v.to_string().contains("stdev_us") && !v.to_string().contains("isolate"));
        let old: Report = serde_json::from_value(v).unwrap();
        assert_eq!(old.schema_version, 0);
        assert_eq!(old.runs[0].replay.tick_to_trade.stdev_us, 0.0);
        assert_eq!(old.sockperf.map(|s| s.stdev_us), Some(0.0));
        assert_eq!(old.runs[0].tag, "xdp");
        assert_eq!(old.runs[0].replay.tick_to_trade.p50_us, 20.0);
    }

    #[test]
    fn a_missing_histogram_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("report-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (c, m) = (fixtures::conditions(), fixtures::machine());
        let measured = fixtures::measured(&dir);
        let e = write(&dir, &bench_of(&c, &m, &measured, None, None)).unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.contains(&format!("{}", dir.join("xdp.hgrm").display())),
            "{msg}"
        );
        assert!(!dir.join("report.md").exists(), "nothing written");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The three files, from the rows' histograms: report.md is the tables and the machine's
    /// readiness, the plot is titled with its first line.
    #[test]
    fn write_leaves_the_three_files() {
        let dir = std::env::temp_dir().join(format!("report-test-w-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (c, m) = (fixtures::conditions(), fixtures::machine());
        let measured = fixtures::measured(&dir);
        for x in &measured {
            std::fs::write(
                &x.hgrm,
                "       8.000 0.000000000000          1           1.00\n",
            )
            .unwrap();
        }
        let readiness = ["THP: madvise".to_owned()];
        let bench = Bench {
            readiness: &readiness,
            ..bench_of(&c, &m, &measured, None, None)
        };
        let md = write(&dir, &bench).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("report.md")).unwrap(), md);
        assert!(md.starts_with(&bench.markdown()));
        assert!(md.ends_with("\nmachine readiness (`cargo xtask doctor`):\n- THP: madvise\n"));
        let svg = std::fs::read_to_string(dir.join("latency.svg")).unwrap();
        assert!(svg.contains("tick-to-trade, gbm:42:150000 · rate 20k msg/s"));
        let back: Report =
            serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap())
                .unwrap();
        assert_eq!(back, bench.report());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// On a full-depth feed the report says per path where the packets went and what the
    /// book did, the driver's drops on the path that has them; on the ticker feed, nothing.
    #[test]
    fn a_book_run_gets_a_table_of_where_its_packets_went() {
        let (c, m) = (fixtures::conditions(), fixtures::machine());
        let plain = fixtures::measured(Path::new("/r"));
        let md = bench_of(&c, &m, &plain, None, None).markdown();
        assert!(!md.contains("dropped in the driver"), "{md}");
        let mut measured = fixtures::measured(Path::new("/r"));
        let x = measured
            .iter_mut()
            .find(|m| m.trader.path == TraderPath::Xdp)
            .unwrap();
        let k = &mut x.trader.counters;
        (k.book_messages, k.unwatched_messages, k.gap_messages) = (250, 9_000, 0);
        (k.repair_held_packets, k.repair_gave_up) = (7, 1);
        x.trader.xdp_counters = Some(results::XdpCounters {
            filtered_packets: 321,
            filtered_messages: 5_136,
            ..results::XdpCounters::default()
        });
        x.trader.book_work = Summary {
            count: 40,
            p50_us: 0.031,
            p99_us: 0.090,
            max_us: 0.250,
            ..Summary::default()
        };
        let md = bench_of(&c, &m, &measured, None, None).markdown();
        let row = md
            .lines()
            .find(|l| l.contains("| 321 / 5136 |"))
            .unwrap_or_else(|| panic!("the driver's drops in a row: {md}"));
        assert!(
            row.contains("| 7, 1 |") && row.contains("| 250 (0) | 9000 |"),
            "{row}"
        );
        assert!(row.ends_with("| 31 / 90 / 250 (40) |"), "{row}");
        assert_eq!(
            md.matches("dropped in the driver").count(),
            1,
            "one table, one row"
        );
    }
}
