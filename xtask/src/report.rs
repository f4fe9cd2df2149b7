//! The benchmark report: a table on stdout, and in the results folder `report.json`,
//! `report.md` and `latency.svg` (percentile plot, HdrHistogram style) beside the `.hgrm` files.
use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use results::{
    ContextSwitches, FloorReport, Machine, Rate, ReplayReport, Source, Summary, ThreadTime,
    TraderPath, TraderReport, Wait, XdpMode,
};
use serde::{Deserialize, Serialize};

use crate::{
    bench::{Options, Row},
    session::Ends,
    sockperf::RoundTrip,
};

/// `YYYY-MM-DDTHH-MM-SSZ`, from the system clock (UTC).
pub(crate) fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}-{:02}-{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The lab's link, for the conditions a result was measured under.
const LINK: &str = "veth pair between two network namespaces (copy-mode AF_XDP)";

/// A latency table's column: its heading, and its value in a summary.
type Column = (&'static str, fn(&Summary) -> f64);

const COLUMNS: [Column; 8] = [
    ("min", |s| s.min_us),
    ("p50", |s| s.p50_us),
    ("p90", |s| s.p90_us),
    ("p99", |s| s.p99_us),
    ("p99.9", |s| s.p999_us),
    ("p99.99", |s| s.p9999_us),
    ("max", |s| s.max_us),
    ("mean", |s| s.mean_us),
];

/// The tick-to-trade ratios shown under the tables, where both rows were measured.
const RATIOS: [(Row, Row); 3] = [
    (Row::Xdp, Row::Udp),
    (Row::Xdp, Row::Reflect),
    (Row::XdpBypass, Row::Reflect),
];

/// A lab row's results, read back from its files.
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    pub(crate) row: Row,
    pub(crate) ends: Ends,
    pub(crate) replay: ReplayReport,
    pub(crate) trader: TraderReport,
    /// The replay's tick-to-trade histogram.
    pub(crate) hgrm: PathBuf,
}

/// `report.json`: everything a bench measured, per row, and under which conditions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Report {
    pub(crate) machine: Host,
    pub(crate) options: Conditions,
    /// sockperf's UDP ping-pong, if it ran.
    pub(crate) sockperf: Option<RoundTrip>,
    /// The CPU floor, if it ran (`--floors`).
    pub(crate) cpu_floor: Option<FloorReport>,
    pub(crate) runs: Vec<RunRecord>,
}

/// The machine and the link between the lab's ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Host {
    #[serde(flatten)]
    pub(crate) machine: Machine,
    pub(crate) link: String,
}

/// The bench options every row shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Conditions {
    pub(crate) source: Source,
    pub(crate) count: Option<u64>,
    pub(crate) rate: Rate,
    pub(crate) batch: u16,
    pub(crate) n: i64,
    pub(crate) xdp_mode: XdpMode,
    pub(crate) wait: Wait,
    pub(crate) trader_cpu: usize,
    pub(crate) replay_cpu: usize,
    pub(crate) trader_args: Vec<String>,
}

/// One lab row in report.json: both ends' reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    /// The trader's path.
    pub(crate) path: TraderPath,
    /// The row (and the stem of its files).
    pub(crate) tag: Row,
    pub(crate) replay: ReplayReport,
    pub(crate) trader: TraderReport,
    /// The tick-to-trade histogram's file name, beside report.json.
    pub(crate) hgrm: String,
}

impl Report {
    fn new(
        o: &Options,
        machine: Machine,
        measured: &[Measured],
        sockperf: Option<&RoundTrip>,
        cpu_floor: Option<&FloorReport>,
    ) -> Report {
        Report {
            machine: Host {
                machine,
                link: LINK.to_owned(),
            },
            options: Conditions {
                source: o.source.clone(),
                count: o.count,
                rate: o.rate,
                batch: o.batch,
                n: o.n,
                xdp_mode: o.xdp_mode,
                wait: o.wait,
                trader_cpu: o.trader_cpu,
                replay_cpu: o.replay_cpu,
                trader_args: o.trader_args.clone(),
            },
            sockperf: sockperf.copied(),
            cpu_floor: cpu_floor.cloned(),
            runs: measured
                .iter()
                .map(|m| RunRecord {
                    path: m.ends.trader,
                    tag: m.row,
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
}

/// Writes the report files and prints the table.
pub(crate) fn write(
    out: &Path,
    o: &Options,
    measured: &[Measured],
    sockperf: Option<&RoundTrip>,
    cpu_floor: Option<&FloorReport>,
) -> anyhow::Result<()> {
    let machine = Machine::read();
    let t = markdown(o, &machine, measured, sockperf, cpu_floor);
    let curves = measured
        .iter()
        .map(|m| {
            let text = std::fs::read_to_string(&m.hgrm)
                .with_context(|| format!("reading {}", m.hgrm.display()))?;
            Ok((m.row.as_str().to_owned(), parse_hgrm(&text)))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    print!("{t}");
    let report = Report::new(o, machine, measured, sockperf, cpu_floor);
    write_file(
        &out.join("report.json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    write_file(&out.join("report.md"), t.clone())?;
    write_file(
        &out.join("latency.svg"),
        svg(&curves, t.lines().next().unwrap_or("")),
    )?;
    eprintln!("results in {}", out.display());
    Ok(())
}

fn write_file(path: &Path, text: String) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// report.md: the conditions, then latency, counts, what the machine did, and the ratios.
fn markdown(
    o: &Options,
    machine: &Machine,
    measured: &[Measured],
    sockperf: Option<&RoundTrip>,
    cpu_floor: Option<&FloorReport>,
) -> String {
    let mut t = String::new();
    conditions(&mut t, o, machine);
    latency_table(&mut t, measured, sockperf, cpu_floor);
    counts_table(&mut t, measured);
    machine_table(&mut t, measured);
    ratios(&mut t, measured);
    t
}

fn conditions(t: &mut String, o: &Options, m: &Machine) {
    let _ = writeln!(
        t,
        "tick-to-trade, {} · rate {} msg/s · batch {} · n={} · xdp-mode {} · wait {} · trader cpu{} / replay cpu{}",
        o.source, o.rate, o.batch, o.n, o.xdp_mode, o.wait, o.trader_cpu, o.replay_cpu
    );
    let _ = writeln!(
        t,
        "machine: {} · {} cores · kernel {} · {LINK}",
        m.cpu, m.cores, m.kernel
    );
    let _ = writeln!(t);
}

/// One latency row: `| label | measure | count | min | ... | mean |`.
fn summary_row(t: &mut String, label: &str, measure: &str, s: &Summary) {
    let _ = write!(t, "| {label} | {measure} | {} |", s.count);
    for (_, value) in COLUMNS {
        let _ = write!(t, " {:.2} |", value(s));
    }
    let _ = writeln!(t);
}

fn latency_table(
    t: &mut String,
    measured: &[Measured],
    sockperf: Option<&RoundTrip>,
    cpu_floor: Option<&FloorReport>,
) {
    let _ = write!(t, "| path | measure | count |");
    for (name, _) in COLUMNS {
        let _ = write!(t, " {name} µs |");
    }
    let _ = writeln!(t);
    let _ = write!(t, "|---|---|---:|");
    for _ in COLUMNS {
        let _ = write!(t, "---:|");
    }
    let _ = writeln!(t);
    for m in measured {
        for (what, s) in [
            ("tick-to-trade", &m.replay.tick_to_trade),
            ("trader RX→TX", &m.trader.rx_to_tx),
            ("engine on_tick", &m.trader.engine),
        ] {
            // The reflector has no trader loop: nothing went through RX→TX or the engine.
            if s.count > 0 {
                summary_row(t, m.row.as_str(), what, s);
            }
        }
    }
    if let Some(f) = cpu_floor {
        let [ping, pong] = f.cpus;
        let measure = format!(
            "shared-memory ping-pong RTT, cpu{ping}↔cpu{pong}, {:.1} s",
            f.seconds
        );
        summary_row(t, Row::CpuFloor.as_str(), &measure, &f.round_trip);
    }
    if let Some(s) = sockperf {
        summary_row(
            t,
            Row::Sockperf.as_str(),
            "kernel UDP ping-pong RTT, 64 B, blocking",
            &s.summary(),
        );
    }
    let _ = writeln!(t);
}

fn counts_table(t: &mut String, measured: &[Measured]) {
    let _ = writeln!(
        t,
        "| path | sent | orders | expected | gaps | late | dup | malformed | late sends | parity |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for Measured {
        row,
        replay,
        trader,
        ..
    } in measured
    {
        let c = &trader.counters;
        let p = &replay.parity;
        let parity = if p.ok() {
            format!("ok ({} trades, PnL {:.4})", p.live_trades, p.live_pnl)
        } else {
            p.verdict.to_string()
        };
        let _ = writeln!(
            t,
            "| {row} | {} | {} | {} | {} | {} | {} | {} | {} | {parity} |",
            replay.sent_messages,
            replay.orders_received,
            p.expected_orders,
            c.gap_messages,
            c.late_messages,
            c.duplicate_messages,
            // Everything the trader refused: short or lying packets, bad messages, other sessions.
            c.malformed_messages + c.malformed_packets + c.malformed_framing + c.wrong_session,
            replay.late_sends,
        );
    }
}

/// What the machine did to each end during the run: the tail's usual cause on a shared VM.
/// Preemptions and run-queue waits are other tasks taking the CPU; stolen time is the
/// hypervisor running something else while the thread was on its virtual CPU.
fn machine_table(t: &mut String, measured: &[Measured]) {
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "| path | seconds | replay preempted | replay waited ms | replay stolen ms | trader preempted | trader waited ms | trader stolen ms |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---:|---:|---:|");
    let cells = |cs: &ContextSwitches, time: &ThreadTime| {
        format!(
            "{} | {:.1} | {}",
            cs.involuntary,
            time.waited_ms,
            // A thread that slept: its sleep and steal look the same, so no figure.
            time.stolen_ms.map_or("-".to_owned(), |x| format!("{x:.1}")),
        )
    };
    for m in measured {
        let _ = writeln!(
            t,
            "| {} | {:.1} | {} | {} |",
            m.row,
            m.replay.send_seconds,
            cells(&m.replay.context_switches, &m.replay.thread_time),
            cells(&m.trader.context_switches, &m.trader.thread_time),
        );
    }
}

fn ratios(t: &mut String, measured: &[Measured]) {
    let find = |row: Row| measured.iter().find(|m| m.row == row);
    for (a, b) in RATIOS {
        if let (Some(x), Some(y)) = (find(a), find(b)) {
            let _ = write!(t, "\nratio {a}/{b} tick-to-trade:");
            for (name, value) in COLUMNS {
                let (x, y) = (
                    value(&x.replay.tick_to_trade),
                    value(&y.replay.tick_to_trade),
                );
                let _ = write!(t, " {name} {:.2}×", x / y);
            }
            let _ = writeln!(t);
        }
    }
}

/// (percentile as 0..1, value µs) rows of an `.hgrm` file.
pub(crate) fn parse_hgrm(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let v: f64 = it.next()?.parse().ok()?;
            let q: f64 = it.next()?.parse().ok()?;
            Some((q, v))
        })
        .collect()
}

/// Latency by percentile, x on HdrHistogram's log axis of 1/(1-p), y log-scaled in µs.
pub(crate) fn svg(curves: &[(String, Vec<(f64, f64)>)], title: &str) -> String {
    let (w, h, ml, mr, mt, mb) = (900.0, 520.0, 70.0, 20.0, 40.0, 60.0);
    let x_max_decades = 6.0; // up to 99.9999 %
    let xs = |q: f64| {
        let inv = 1.0 / (1.0 - q.min(0.999_999_9));
        ml + (inv.log10() / x_max_decades).min(1.0) * (w - ml - mr)
    };
    let all: Vec<f64> = curves
        .iter()
        .flat_map(|(_, c)| c.iter().map(|&(_, v)| v))
        .filter(|v| *v > 0.0)
        .collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min).max(0.1);
    let hi = all.iter().copied().fold(0.0, f64::max).max(lo * 10.0);
    let (ylo, yhi) = (lo.log10().floor(), hi.log10().ceil());
    let floor = 10f64.powf(ylo);
    let ys = |v: f64| {
        let t = (v.max(floor).log10() - ylo) / (yhi - ylo);
        h - mb - t * (h - mt - mb)
    };
    let colors = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"];
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{ml}" y="20" font-size="13">{}</text>"#,
        escape(title)
    );
    for (i, label) in ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"]
        .iter()
        .enumerate()
    {
        let x = ml + i as f64 / x_max_decades * (w - ml - mr);
        let anchor = if i == 6 { "end" } else { "middle" };
        let _ = writeln!(
            s,
            r##"<line x1="{x}" y1="{mt}" x2="{x}" y2="{}" stroke="#ddd"/><text x="{x}" y="{}" text-anchor="{anchor}">{label}</text>"##,
            h - mb,
            h - mb + 18.0
        );
    }
    let mut d = ylo;
    while d <= yhi {
        let v = 10f64.powf(d);
        let y = ys(v);
        let _ = writeln!(
            s,
            r##"<line x1="{ml}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{} µs</text>"##,
            w - mr,
            ml - 6.0,
            y + 4.0,
            if v < 1.0 {
                format!("{v}")
            } else {
                format!("{v:.0}")
            }
        );
        d += 1.0;
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">percentile</text>"#,
        (w + ml) / 2.0,
        h - 15.0
    );
    for (i, (name, c)) in curves.iter().enumerate() {
        let color = colors[i % colors.len()];
        let pts: Vec<String> = c
            .iter()
            .filter(|(q, _)| *q < 1.0)
            .map(|&(q, v)| format!("{:.1},{:.1}", xs(q), ys(v)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            pts.join(" ")
        );
        let ly = mt + 18.0 * (i as f64 + 1.0);
        let _ = writeln!(
            s,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}">{}</text>"#,
            ml + 10.0,
            ml + 40.0,
            ml + 46.0,
            ly + 4.0,
            escape(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use results::ParityVerdict;

    use super::*;
    use crate::fixtures;

    /// Four lab rows as a bench with `--floors` and sockperf measures them: a strategy run
    /// that kept parity, one that diverged (and slept: no stolen figure), the reflector (no
    /// trader loop, so no RX→TX or engine rows) and the bypass harness.
    fn measured(hgrm_dir: &Path) -> Vec<Measured> {
        let mut udp = fixtures::replay(20.0);
        udp.parity.verdict = ParityVerdict::Diverged {
            first_divergence: 77,
            missing_orders: 3,
        };
        udp.thread_time.stolen_ms = None;
        let mut reflect = fixtures::replay(5.0);
        reflect.parity.verdict = ParityVerdict::NotApplicable {
            answered: 1000,
            ticks: 1000,
        };
        reflect.parity.expected_orders = 1000;
        reflect.orders_received = 1000;
        let mut reflector = fixtures::trader(TraderPath::Reflect);
        reflector.rx_to_tx.count = 0;
        reflector.engine.count = 0;
        [
            (
                Row::Xdp,
                fixtures::replay(10.0),
                fixtures::trader(TraderPath::Xdp),
            ),
            (Row::Udp, udp, fixtures::trader(TraderPath::Udp)),
            (Row::Reflect, reflect, reflector),
            (
                Row::XdpBypass,
                fixtures::replay(8.0),
                fixtures::trader(TraderPath::Xdp),
            ),
        ]
        .into_iter()
        .map(|(row, replay, trader)| Measured {
            row,
            ends: row.ends().unwrap(),
            replay,
            trader,
            hgrm: hgrm_dir.join(format!("{row}.hgrm")),
        })
        .collect()
    }

    fn sockperf() -> RoundTrip {
        RoundTrip {
            count: 63015,
            min_us: 12.578,
            p50_us: 13.369,
            p90_us: 15.743,
            p99_us: 30.665,
            p999_us: 3342.389,
            p9999_us: 8048.483,
            max_us: 12053.411,
            mean_us: 24.576,
        }
    }

    fn options() -> Options {
        Options {
            count: None,
            source: "gbm:42:150000".parse().unwrap(),
            ..Options::trial(1, netns::PREFIX, None, true)
        }
    }

    /// The same text, character for character, as the report built from the binaries' JSON by
    /// string key before the reports were typed (checked against that code on these values).
    const REPORT_MD: &str = "\
tick-to-trade, gbm:42:150000 · rate 20k msg/s · batch 1 · n=6 · xdp-mode native · wait spin · trader cpu1 / replay cpu0
machine: Test CPU @ 3.00GHz · 2 cores · kernel 6.1.0-test · veth pair between two network namespaces (copy-mode AF_XDP)

| path | measure | count | min µs | p50 µs | p90 µs | p99 µs | p99.9 µs | p99.99 µs | max µs | mean µs |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| xdp | tick-to-trade | 40 | 10.00 | 20.00 | 30.00 | 40.00 | 50.00 | 60.00 | 70.00 | 80.00 |
| xdp | trader RX→TX | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 |
| xdp | engine on_tick | 1000 | 0.01 | 0.02 | 0.03 | 0.04 | 0.05 | 0.06 | 0.07 | 0.08 |
| udp | tick-to-trade | 40 | 20.00 | 40.00 | 60.00 | 80.00 | 100.00 | 120.00 | 140.00 | 160.00 |
| udp | trader RX→TX | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 |
| udp | engine on_tick | 1000 | 0.01 | 0.02 | 0.03 | 0.04 | 0.05 | 0.06 | 0.07 | 0.08 |
| reflect | tick-to-trade | 40 | 5.00 | 10.00 | 15.00 | 20.00 | 25.00 | 30.00 | 35.00 | 40.00 |
| xdp-bypass | tick-to-trade | 40 | 8.00 | 16.00 | 24.00 | 32.00 | 40.00 | 48.00 | 56.00 | 64.00 |
| xdp-bypass | trader RX→TX | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 |
| xdp-bypass | engine on_tick | 1000 | 0.01 | 0.02 | 0.03 | 0.04 | 0.05 | 0.06 | 0.07 | 0.08 |
| cpu floor | shared-memory ping-pong RTT, cpu0↔cpu1, 1.0 s | 1000000 | 0.10 | 0.20 | 0.30 | 0.40 | 0.50 | 0.60 | 0.70 | 0.80 |
| sockperf | kernel UDP ping-pong RTT, 64 B, blocking | 63015 | 12.58 | 13.37 | 15.74 | 30.66 | 3342.39 | 8048.48 | 12053.41 | 24.58 |

| path | sent | orders | expected | gaps | late | dup | malformed | late sends | parity |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---|
| xdp | 1000 | 40 | 40 | 2 | 1 | 0 | 1 | 3 | ok (20 trades, PnL 1.2346) |
| udp | 1000 | 40 | 40 | 2 | 1 | 0 | 1 | 3 | live and batch diverge at tick seq 77: 3 expected orders missing (lost ticks or lost orders change the strategy's path from there on) |
| reflect | 1000 | 1000 | 1000 | 2 | 1 | 0 | 1 | 3 | reflector: 1000 of 1000 ticks answered; no strategy, so no parity to check |
| xdp-bypass | 1000 | 40 | 40 | 2 | 1 | 0 | 1 | 3 | ok (20 trades, PnL 1.2346) |

| path | seconds | replay preempted | replay waited ms | replay stolen ms | trader preempted | trader waited ms | trader stolen ms |
|---|---:|---:|---:|---:|---:|---:|---:|
| xdp | 0.1 | 7 | 0.8 | 0.2 | 2 | 0.0 | - |
| udp | 0.1 | 7 | 0.8 | - | 2 | 0.0 | - |
| reflect | 0.1 | 7 | 0.8 | 0.2 | 2 | 0.0 | - |
| xdp-bypass | 0.1 | 7 | 0.8 | 0.2 | 2 | 0.0 | - |

ratio xdp/udp tick-to-trade: min 0.50× p50 0.50× p90 0.50× p99 0.50× p99.9 0.50× p99.99 0.50× max 0.50× mean 0.50×

ratio xdp/reflect tick-to-trade: min 2.00× p50 2.00× p90 2.00× p99 2.00× p99.9 2.00× p99.99 2.00× max 2.00× mean 2.00×

ratio xdp-bypass/reflect tick-to-trade: min 1.60× p50 1.60× p90 1.60× p99 1.60× p99.9 1.60× p99.99 1.60× max 1.60× mean 1.60×
";

    #[test]
    fn report_md_is_built_from_typed_results() {
        let md = markdown(
            &options(),
            &fixtures::machine(),
            &measured(Path::new("unused")),
            Some(&sockperf()),
            Some(&fixtures::floor()),
        );
        for (got, want) in md.lines().zip(REPORT_MD.lines()) {
            assert_eq!(got, want);
        }
        assert_eq!(md, REPORT_MD);
    }

    #[test]
    fn report_json_reads_back_as_written() {
        let report = Report::new(
            &options(),
            fixtures::machine(),
            &measured(Path::new("/r")),
            Some(&sockperf()),
            Some(&fixtures::floor()),
        );
        let json = serde_json::to_string_pretty(&report).unwrap();
        assert_eq!(serde_json::from_str::<Report>(&json).unwrap(), report);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["machine"]["cpu"], "Test CPU @ 3.00GHz");
        assert_eq!(v["options"]["rate"], "20k");
        assert_eq!(v["runs"][3]["path"], "xdp");
        assert_eq!(v["runs"][3]["tag"], "xdp-bypass");
        assert_eq!(v["runs"][3]["hgrm"], "xdp-bypass.hgrm");
    }

    #[test]
    fn a_missing_histogram_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("xtask-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = write(&dir, &options(), &measured(&dir), None, None).unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.contains(&format!("{}", dir.join("xdp.hgrm").display())),
            "{msg}"
        );
        assert!(!dir.join("report.md").exists(), "nothing written");
        std::fs::remove_dir_all(&dir).unwrap();
    }

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

    #[test]
    fn stamp_looks_like_a_utc_time() {
        let s = utc_stamp();
        assert_eq!(s.len(), 20, "{s}");
        assert!(s.starts_with("20") && s.ends_with('Z'), "{s}");
    }
}
