//! The knob matrix's report: matrix.md's tables ([`Matrix::markdown`]: each knob against its
//! path's baseline, which moves the median and which the tail) and matrix.json
//! ([`Matrix::json`]). xtask runs the knobs; each run comes here as a [`Run`].
use std::fmt::Write as _;

use paths::{Rate, TraderPath};
use results::{ReplayReport, Summary, TraderReport, XdpProgramStats};
use serde::{Deserialize, Serialize};

use crate::{Delivery, LOSS_MARK};

/// Below these changes against the baseline a knob "moves" nothing: thresholds for a shared,
/// noisy 2-core VM, in percent.
const P50_MOVES_PCT: f64 = 10.0;
const TAIL_MOVES_PCT: f64 = 30.0;

/// The baseline's name in the tables and matrix.json, where a knob's would be.
pub const BASELINE: &str = "baseline";

/// A knob as the tables show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knob {
    /// Its name, as `--knobs` takes it.
    pub name: &'static str,
    /// What it changes.
    pub what: &'static str,
}

/// One measured run: a knob (`None`: the baseline) on a path.
#[derive(Debug, Clone)]
pub struct Run {
    pub knob: Option<Knob>,
    pub path: TraderPath,
    /// Which repetition (0-based, `--rounds`).
    pub round: u32,
    pub replay: ReplayReport,
    pub trader: TraderReport,
}

impl Run {
    /// The knob's name, or [`BASELINE`].
    pub fn name(&self) -> &'static str {
        self.knob.map_or(BASELINE, |k| k.name)
    }
}

/// A matrix's results, and what it ran under.
#[derive(Debug, Clone, Copy)]
pub struct Matrix<'a> {
    /// Messages per run.
    pub count: u64,
    /// Rate per run.
    pub rate: Rate,
    /// `--rounds`.
    pub rounds: u32,
    /// The runs, in the order they ran.
    pub runs: &'a [Run],
    /// The variants that did not run, or failed, and why (matrix.json's alone).
    pub skipped: &'a [String],
    /// The machine's latency readiness (`cargo xtask doctor`'s summary), a finding a line.
    pub readiness: &'a [String],
}

/// matrix.json: every run, and what did not run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixJson {
    /// Its layout's version ([`crate::SCHEMA_VERSION`], bumped as report.json's is; 0: a file
    /// from before the field).
    #[serde(default)]
    pub schema_version: u32,
    pub count: u64,
    pub rate: Rate,
    pub rows: Vec<MatrixRow>,
    /// The variants that did not run, or failed, and why.
    pub skipped: Vec<String>,
}

/// One run in matrix.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixRow {
    /// The knob's name, or `baseline`.
    pub knob: String,
    pub path: TraderPath,
    /// Which repetition (0-based, `--rounds`).
    pub round: u32,
    /// `--rate max`: the latency is a closed-loop round trip, not tick-to-trade.
    pub closed_loop: bool,
    /// Messages per second the sender achieved.
    pub achieved_rate_per_s: f64,
    pub tick_to_trade: Summary,
    pub parity_ok: bool,
    /// Orders back, expected, ticks lost.
    pub delivered: Delivery,
    pub orders: u64,
    pub late_sends: u64,
    /// Frames the XDP program could not redirect (AF_XDP path).
    pub redirect_failed: u64,
    /// The XDP program's size and (with `--xdp-stats`) runs and their time.
    pub xdp_program: Option<XdpProgramStats>,
}

impl Matrix<'_> {
    /// matrix.md's tables (without the machine's readiness: [`Matrix::matrix_md`]): each run
    /// against its path's baseline, what the machine did to each end, the XDP program's own
    /// cost (`--xdp-stats`) and, with `--rounds`, the median change over the rounds.
    pub fn markdown(&self) -> String {
        let (rows, o) = (self.runs, self);
        let mut t = String::new();
        // --rate max: each tick is due when the previous send returns, so the figures are
        // closed-loop round trips, not tick-to-trade; throughput is in msg/s.
        let measure = if o.rate.per_sec().is_none() {
            "closed-loop round trip µs (--rate max: not tick-to-trade)"
        } else {
            "tick-to-trade µs"
        };
        let _ = writeln!(
            t,
            "knob matrix: {} messages at {} msg/s per run; {measure}; Δ vs the same path's baseline; \
         delivered = orders back/expected ({} marks a run that lost orders or ticks)",
            o.count, o.rate, LOSS_MARK
        );
        let _ = writeln!(
            t,
            "| knob | path | delivered | msg/s | p50 | Δp50 | p99 | p99.9 | Δp99.9 | p99.99 | Δp99.99 | saturated | parity | moves |"
        );
        let _ = writeln!(
            t,
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
        );
        for r in rows {
            let base = rows
                .iter()
                .find(|b| b.knob.is_none() && b.path == r.path && b.round == r.round)
                .map(|b| &b.replay.tick_to_trade);
            let s = &r.replay.tick_to_trade;
            // Change against the same path's baseline, percent (none without a baseline, or where
            // the baseline measured nothing: no orders, no latency).
            let d = |v: fn(&Summary) -> f64| {
                base.filter(|b| v(b) > 0.0)
                    .map(|b| (v(s) - v(b)) / v(b) * 100.0)
            };
            let (d50, d999, d9999) = (d(|s| s.p50_us), d(|s| s.p999_us), d(|s| s.p9999_us));
            let what = r.knob.map_or(String::new(), |k| format!(" ({})", k.what));
            let what = if o.rounds > 1 {
                format!("{what} · round {}", r.round + 1)
            } else {
                what
            };
            let _ = writeln!(
                t,
                "| {}{what} | {} | {} | {:.0} | {:.2} | {} | {:.2} | {:.2} | {} | {:.2} | {} | {} | {} | {} |",
                r.name(),
                r.path,
                Delivery::of(&r.replay, &r.trader),
                r.replay.achieved_rate_per_s,
                s.p50_us,
                pct(d50),
                s.p99_us,
                s.p999_us,
                pct(d999),
                s.p9999_us,
                pct(d9999),
                s.saturated,
                parity_cell(&r.replay.parity.verdict),
                match r.knob {
                    Some(k) if polls_nothing(k, std::iter::once(r)) => NO_NAPI.to_string(),
                    Some(_) => moves(d50, d999, d9999),
                    None => String::new(),
                },
            );
        }
        // What the machine did to each end: the tail's usual cause, and what isolation targets.
        let _ = writeln!(
            t,
            "\n| knob | path | replay preempted | replay waited ms | replay stolen ms | trader preempted | trader waited ms | trader stolen ms | trader minor faults |"
        );
        let _ = writeln!(t, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
        let stolen = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.1}"));
        for r in rows {
            let (rp, tr) = (&r.replay, &r.trader);
            let name = if o.rounds > 1 {
                format!("{} · round {}", r.name(), r.round + 1)
            } else {
                r.name().to_owned()
            };
            let _ = writeln!(
                t,
                "| {} | {} | {} | {:.1} | {} | {} | {:.1} | {} | {} |",
                name,
                r.path,
                rp.context_switches.involuntary,
                rp.thread_time.waited_ms,
                stolen(rp.thread_time.stolen_ms),
                tr.context_switches.involuntary,
                tr.thread_time.waited_ms,
                stolen(tr.thread_time.stolen_ms),
                tr.thread_time.minor_faults,
            );
        }
        if rows.iter().any(|r| {
            r.trader
                .xdp_program
                .as_ref()
                .is_some_and(|p| p.mean_run_ns().is_some())
        }) {
            program_cost(&mut t, rows);
        }
        if o.rounds > 1 {
            medians(&mut t, rows);
        }
        t
    }

    /// matrix.md in full: the tables, then the machine's readiness.
    pub fn matrix_md(&self) -> String {
        let mut t = self.markdown();
        crate::readiness(&mut t, self.readiness);
        t
    }

    /// matrix.json's contents.
    pub fn json(&self) -> MatrixJson {
        MatrixJson {
            schema_version: crate::SCHEMA_VERSION,
            count: self.count,
            rate: self.rate,
            rows: self
                .runs
                .iter()
                .map(|r| MatrixRow {
                    knob: r.name().to_owned(),
                    path: r.path,
                    round: r.round,
                    closed_loop: r.replay.closed_loop,
                    achieved_rate_per_s: r.replay.achieved_rate_per_s,
                    tick_to_trade: r.replay.tick_to_trade,
                    parity_ok: r.replay.parity.ok(),
                    delivered: Delivery::of(&r.replay, &r.trader),
                    orders: r.replay.orders_received,
                    late_sends: r.replay.late_sends,
                    redirect_failed: r.trader.xdp_counters.map_or(0, |x| x.redirect_failed),
                    xdp_program: r.trader.xdp_program.clone(),
                })
                .collect(),
            skipped: self.skipped.to_vec(),
        }
    }
}

/// With `--xdp-stats`: the XDP program's own cost per run, from the kernel's statistics: the
/// baseline's runs are the feed's frames; a knob that adds frames (a malformed stream) adds
/// runs of its own, cheap or not, to the mean.
fn program_cost(t: &mut String, rows: &[Run]) {
    let _ = writeln!(
        t,
        "
the XDP program itself (kernel BPF run-time statistics, `--xdp-stats`): runs, mean ns \
         per run, size after the verifier; the median over rounds of each variant's mean:\n\n\
         | knob | path | rounds | runs (last round) | mean ns per run (median) | min | max | translated bytes | JIT bytes | log |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    let mut seen: Vec<(Option<Knob>, TraderPath)> = Vec::new();
    for r in rows {
        if !seen.contains(&(r.knob, r.path)) {
            seen.push((r.knob, r.path));
        }
    }
    for (knob, path) in seen {
        let mine: Vec<&Run> = rows
            .iter()
            .filter(|r| r.knob == knob && r.path == path)
            .collect();
        let Some(last) = mine.last().and_then(|r| r.trader.xdp_program.clone()) else {
            continue;
        };
        let mut means: Vec<f64> = mine
            .iter()
            .filter_map(|r| r.trader.xdp_program.as_ref()?.mean_run_ns())
            .collect();
        if means.is_empty() {
            continue;
        }
        means.sort_by(f64::total_cmp);
        let _ = writeln!(
            t,
            "| {} | {path} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {} |",
            knob.map_or(BASELINE, |k| k.name),
            means.len(),
            last.runs.unwrap_or(0),
            means[means.len() / 2],
            means[0],
            means[means.len() - 1],
            last.translated_bytes,
            last.jited_bytes,
            if last.log { "on" } else { "off" },
        );
    }
}

/// With `--rounds`: each knob's median change over the rounds against its round's baseline.
fn medians(t: &mut String, rows: &[Run]) {
    let _ = writeln!(
        t,
        "\nmedian change over the rounds, each against its own round's baseline:\n\n\
         | knob | path | rounds | Δp50 | Δp99 | Δp99.9 | Δp99.99 | moves |\n|---|---|---:|---:|---:|---:|---:|---|"
    );
    let mut seen: Vec<(Knob, TraderPath)> = Vec::new();
    for r in rows {
        let Some(k) = r.knob else { continue };
        if seen.contains(&(k, r.path)) {
            continue;
        }
        seen.push((k, r.path));
        let mut deltas: [Vec<f64>; 4] = Default::default();
        for x in rows
            .iter()
            .filter(|x| x.knob == Some(k) && x.path == r.path)
        {
            let Some(b) = rows
                .iter()
                .find(|b| b.knob.is_none() && b.path == x.path && b.round == x.round)
            else {
                continue;
            };
            let (s, b) = (&x.replay.tick_to_trade, &b.replay.tick_to_trade);
            for (d, v) in deltas.iter_mut().zip([
                (s.p50_us, b.p50_us),
                (s.p99_us, b.p99_us),
                (s.p999_us, b.p999_us),
                (s.p9999_us, b.p9999_us),
            ]) {
                d.push((v.0 - v.1) / v.1 * 100.0);
            }
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            match v.len() {
                0 => None,
                n if n % 2 == 1 => Some(v[n / 2]),
                n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
            }
        };
        let n = deltas[0].len();
        let [d50, d99, d999, d9999] = deltas.map(|mut v| med(&mut v));
        let verdict = if polls_nothing(
            k,
            rows.iter()
                .filter(|x| x.knob == Some(k) && x.path == r.path),
        ) {
            NO_NAPI.to_string()
        } else {
            moves(d50, d999, d9999)
        };
        let _ = writeln!(
            t,
            "| {} | {} | {n} | {} | {} | {} | {} | {} |",
            k.name,
            r.path,
            pct(d50),
            pct(d99),
            pct(d999),
            pct(d9999),
            verdict
        );
    }
}

/// The busy-poll knob's name, as `--knobs` takes it.
pub const BUSY_POLL: &str = "busy-poll";

/// A busy-poll row's verdict where the socket had no NAPI to poll: whatever moved did not
/// move for busy polling.
pub const NO_NAPI: &str = "none: no NAPI to poll (napi_id 0), the Δ is the host's drift";

/// Whether `knob` is busy polling on udp sockets that had no NAPI to poll (every run given
/// read `SO_INCOMING_NAPI_ID` 0): then the kernel polled nothing and the loop is the same, so
/// nothing it moved moved for it. Not on the AF_XDP paths: there the knob also changes the
/// loop (a `poll()` of the socket on empty turns; the trigger's record read every turn).
fn polls_nothing<'a>(knob: Knob, mut runs: impl Iterator<Item = &'a Run>) -> bool {
    knob.name == BUSY_POLL && runs.all(|r| r.path == TraderPath::Udp && r.trader.napi_id == Some(0))
}

/// Which way a knob moves the median and the tail, beyond the noise thresholds.
fn moves(d50: Option<f64>, d999: Option<f64>, d9999: Option<f64>) -> String {
    let mut m = Vec::new();
    if let Some(d50) = d50.filter(|d| d.abs() >= P50_MOVES_PCT) {
        m.push(if d50 < 0.0 { "p50 ↓" } else { "p50 ↑" });
    }
    if let (Some(d999), Some(d9999)) = (d999, d9999)
        && (d999.abs() >= TAIL_MOVES_PCT || d9999.abs() >= TAIL_MOVES_PCT)
    {
        m.push(if d999 + d9999 < 0.0 {
            "tail ↓"
        } else {
            "tail ↑"
        });
    }
    if m.is_empty() {
        "—".into()
    } else {
        m.join(", ")
    }
}

/// The parity column: a run whose strategy sends no order has nothing to check, which is not
/// a failure (the replay's own report says why: too few ticks).
fn parity_cell(v: &results::ParityVerdict) -> &'static str {
    use results::ParityVerdict;
    match v {
        ParityVerdict::Ok => "ok",
        ParityVerdict::NothingToCheck { .. } => "nothing to check",
        _ => "FAIL",
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or(String::new(), |x| format!("{x:+.0}%"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    const SKB: Knob = Knob {
        name: "skb",
        what: "generic (SKB) XDP instead of native",
    };
    const RECVMMSG: Knob = Knob {
        name: "recvmmsg",
        what: "recvmmsg, up to 16 datagrams per call",
    };
    const ISOLATE: Knob = Knob {
        name: "isolate",
        what: "trader's CPU isolated at runtime: tasks, workqueues, IRQs moved off",
    };

    /// A matrix of 20,000 messages a run.
    fn matrix(runs: &[Run], rate: Rate, rounds: u32) -> Matrix<'_> {
        Matrix {
            count: 20_000,
            rate,
            rounds,
            runs,
            skipped: &[],
            readiness: &[],
        }
    }

    #[test]
    fn a_run_with_no_orders_has_nothing_to_check_not_a_failure() {
        use results::ParityVerdict;
        assert_eq!(parity_cell(&ParityVerdict::Ok), "ok");
        assert_eq!(
            parity_cell(&ParityVerdict::NothingToCheck { ticks: 4 }),
            "nothing to check"
        );
    }

    #[test]
    fn the_table_compares_each_knob_with_its_paths_baseline() {
        let mut slow = fixtures::replay(20.0);
        slow.parity.verdict = results::ParityVerdict::PnlDiffers;
        slow.orders_received = 39;
        slow.tick_to_trade.saturated = 2;
        let trader = fixtures::trader(TraderPath::Xdp);
        let rows = [
            Run {
                knob: None,
                path: TraderPath::Xdp,
                round: 0,
                replay: fixtures::replay(10.0),
                trader: trader.clone(),
            },
            Run {
                knob: Some(SKB),
                path: TraderPath::Xdp,
                round: 0,
                replay: slow,
                trader: trader.clone(),
            },
            Run {
                knob: Some(RECVMMSG),
                path: TraderPath::Udp,
                round: 0,
                replay: fixtures::replay(10.0),
                trader,
            },
        ];
        let t = matrix(&rows, Rate::DEFAULT, 1).markdown();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "knob matrix: 20000 messages at 20k msg/s per run; tick-to-trade µs; Δ vs the same \
             path's baseline; delivered = orders back/expected (⚠ marks a run that lost orders \
             or ticks)"
        );
        assert_eq!(
            lines[3],
            "| baseline | xdp | 40/40 | 19990 | 20.00 | +0% | 40.00 | 50.00 | +0% | 60.00 | +0% \
             | 0 | ok |  |"
        );
        assert_eq!(
            lines[4],
            "| skb (generic (SKB) XDP instead of native) | xdp | ⚠ 39/40 | 19990 | 40.00 | +100% \
             | 80.00 | 100.00 | +100% | 120.00 | +100% | 2 | FAIL | p50 ↑, tail ↑ |"
        );
        // No udp baseline: no change to show, nothing moved.
        assert_eq!(
            lines[5],
            "| recvmmsg (recvmmsg, up to 16 datagrams per call) | udp | 40/40 | 19990 | 20.00 |  \
             | 40.00 | 50.00 |  | 60.00 |  | 0 | ok | — |"
        );
        let t = matrix(&rows, Rate::Max, 1).markdown();
        assert!(
            t.lines()
                .next()
                .unwrap()
                .contains("closed-loop round trip µs (--rate max: not tick-to-trade)"),
            "{t}"
        );
    }

    #[test]
    fn rounds_compare_with_their_own_baseline_and_take_the_median() {
        let trader = fixtures::trader(TraderPath::Xdp);
        let row = |knob, round, p50| Run {
            knob,
            path: TraderPath::Xdp,
            round,
            replay: fixtures::replay(p50),
            trader: trader.clone(),
        };
        // Round baselines 10, 20, 10; the knob 11 (+10 %), 10 (-50 %), 13 (+30 %).
        let rows = [
            row(None, 0, 10.0),
            row(Some(ISOLATE), 0, 11.0),
            row(None, 1, 20.0),
            row(Some(ISOLATE), 1, 10.0),
            row(None, 2, 10.0),
            row(Some(ISOLATE), 2, 13.0),
        ];
        let t = matrix(&rows, Rate::DEFAULT, 3).markdown();
        assert!(t.contains("· round 2 | xdp"), "{t}");
        let median = t
            .lines()
            .find(|l| l.starts_with("| isolate | xdp | 3 |"))
            .unwrap_or_else(|| panic!("no median row: {t}"));
        // Every percentile of the fixture scales with its p50: the median change is +10 %.
        assert_eq!(
            median,
            "| isolate | xdp | 3 | +10% | +10% | +10% | +10% | p50 ↑ |"
        );
    }

    /// A busy-poll row reads "nothing to poll" exactly where the socket had no NAPI id, and
    /// the usual moves where it had one.
    #[test]
    fn a_busy_poll_row_without_a_napi_says_nothing_moved_for_it() {
        const BUSY: Knob = Knob {
            name: BUSY_POLL,
            what: "SO_BUSY_POLL 50 µs, prefer busy poll",
        };
        for (napi_id, want_no_napi) in [(Some(0), true), (Some(9), false), (None, false)] {
            let mut trader = fixtures::trader(TraderPath::Udp);
            trader.napi_id = napi_id;
            let rows = [
                Run {
                    knob: None,
                    path: TraderPath::Udp,
                    round: 0,
                    replay: fixtures::replay(10.0),
                    trader: trader.clone(),
                },
                Run {
                    knob: Some(BUSY),
                    path: TraderPath::Udp,
                    round: 0,
                    replay: fixtures::replay(5.0),
                    trader,
                },
            ];
            let md = matrix(&rows, Rate::DEFAULT, 1).markdown();
            let row = md.lines().find(|l| l.starts_with("| busy-poll")).unwrap();
            assert_eq!(row.contains(NO_NAPI), want_no_napi, "{napi_id:?}: {row}");
            assert_eq!(row.contains("p50 ↓"), !want_no_napi, "{napi_id:?}: {row}");
            // The median over the rounds says the same.
            let md = matrix(&rows, Rate::DEFAULT, 2).markdown();
            let median = md
                .lines()
                .find(|l| l.starts_with("| busy-poll | udp | 1 |"))
                .unwrap();
            assert_eq!(
                median.contains(NO_NAPI),
                want_no_napi,
                "{napi_id:?}: {median}"
            );
            assert_eq!(
                median.contains("p50 ↓"),
                !want_no_napi,
                "{napi_id:?}: {median}"
            );
            // On the xdp path the knob changes the loop too: its moves stand.
            let xdp = rows.map(|r| Run {
                path: TraderPath::Xdp,
                ..r
            });
            let md = matrix(&xdp, Rate::DEFAULT, 1).markdown();
            let row = md.lines().find(|l| l.starts_with("| busy-poll")).unwrap();
            assert!(!row.contains(NO_NAPI) && row.contains("p50 ↓"), "{row}");
        }
    }

    #[test]
    fn moves_follow_the_thresholds() {
        assert_eq!(moves(Some(-12.0), Some(5.0), Some(-40.0)), "p50 ↓, tail ↓");
        assert_eq!(moves(Some(9.0), Some(29.0), Some(-29.0)), "—");
        assert_eq!(moves(None, None, None), "—");
        assert_eq!(pct(Some(12.4)), "+12%");
        assert_eq!(pct(None), "");
    }

    /// matrix.json: a row per run, its knob by name, what was skipped; matrix.md: the tables
    /// and the machine's readiness after them.
    #[test]
    fn matrix_json_and_md_carry_every_run() {
        let trader = fixtures::trader(TraderPath::Xdp);
        let runs = [
            Run {
                knob: None,
                path: TraderPath::Xdp,
                round: 0,
                replay: fixtures::replay(10.0),
                trader: trader.clone(),
            },
            Run {
                knob: Some(SKB),
                path: TraderPath::Xdp,
                round: 0,
                replay: fixtures::replay(12.0),
                trader,
            },
        ];
        let skipped = ["huge-pages: no 2 MiB pages reserved".to_owned()];
        let readiness = ["THP: madvise".to_owned()];
        let m = Matrix {
            skipped: &skipped,
            readiness: &readiness,
            ..matrix(&runs, Rate::DEFAULT, 1)
        };
        let json = m.json();
        assert_eq!(json.schema_version, crate::SCHEMA_VERSION);
        let knobs: Vec<&str> = json.rows.iter().map(|r| r.knob.as_str()).collect();
        assert_eq!(knobs, [BASELINE, "skb"]);
        assert_eq!(json.skipped, skipped);
        assert_eq!(json.rows[1].tick_to_trade.p50_us, 24.0);
        assert!(json.rows[0].parity_ok && !json.rows[0].delivered.lost());
        let text = serde_json::to_string_pretty(&json).unwrap();
        assert_eq!(serde_json::from_str::<MatrixJson>(&text).unwrap(), json);
        let md = m.matrix_md();
        assert!(md.starts_with(&m.markdown()));
        assert!(md.ends_with("\nmachine readiness (`cargo xtask doctor`):\n- THP: madvise\n"));
    }
}
