//! `cargo xtask zero-loss`: RFC 2544-style throughput per path (the highest offered tick rate
//! with no loss over a fixed count, by bisection), then latency at 10 %, 50 % and 90 % of it.
use std::fmt::Write as _;

use anyhow::bail;
use paths::{ExchangeIo, Rate, TraderPath};
use results::{ReplayReport, Summary, TraderReport};
use serde::{Deserialize, Serialize};

use crate::{
    report::{Delivery, LOSS_MARK},
    run::Ends,
    session::Session,
};

/// A trial whose sender achieved less than this share of the offered rate measured the sender,
/// not the trader.
const SENDER_BOUND: f64 = 0.97;
/// The loads, as shares of the zero-loss rate, at which latency is measured.
const LOADS: [f64; 3] = [0.1, 0.5, 0.9];

/// Options.
#[derive(Debug, clap::Args)]
pub(crate) struct Options {
    /// Paths (comma-separated): xdp, udp, trigger (the decision in the driver).
    #[arg(long, value_delimiter = ',', default_value = "xdp,udp", value_parser = crate::run::trader_paths())]
    pub(crate) paths: Vec<TraderPath>,
    /// Messages per trial.
    #[arg(long, default_value_t = 100_000)]
    pub(crate) count: u64,
    /// ITCH messages per MoldUDP64 packet (the sender's own per-packet cost caps the rate).
    #[arg(long, default_value_t = 1)]
    pub(crate) batch: u16,
    /// Lowest offered rate tried, messages/s: the search starts there.
    #[arg(long, default_value_t = 10_000.0)]
    pub(crate) min_rate: f64,
    /// Highest offered rate to try, messages/s: the search stops there if nothing failed.
    #[arg(long, default_value_t = 4_000_000.0)]
    pub(crate) max_rate: f64,
    /// Stop bisecting when the bounds are within this ratio.
    #[arg(long, default_value_t = 1.05)]
    pub(crate) resolution: f64,
    /// Exchange-side I/O; with xdp (the bypass harness) the AF_XDP sender's per-packet cost is
    /// lower, so the trader rather than the sender is the limit.
    #[arg(long, value_enum, default_value_t = ExchangeIo::Udp)]
    pub(crate) exchange_io: ExchangeIo,
    /// Lab name.
    #[arg(long, default_value = netns::PREFIX)]
    pub(crate) lab: String,
    /// Results folder (default target/zero-loss/<time>).
    #[arg(long)]
    pub(crate) out: Option<std::path::PathBuf>,
    /// Don't install missing dependencies first.
    #[arg(long)]
    pub(crate) no_setup: bool,
    #[command(flatten)]
    pub(crate) cpus: crate::run::Cpus,
}

/// One trial's verdict.
#[derive(Debug, Clone)]
struct Trial {
    rate: f64,
    verdict: TrialVerdict,
    tick_to_trade: Summary,
    /// Orders back against those expected, ticks lost: beside every latency figure, since
    /// lost orders never enter the histogram.
    delivered: Delivery,
}

/// What a trial found: no loss, or the first loss of these, in this order.
#[derive(Debug, Clone, Copy, PartialEq)]
enum TrialVerdict {
    /// Everything sent, taken and answered.
    NoLoss,
    /// The replay stopped short: `sent` of `count` messages.
    ShortSend { sent: u64, count: u64 },
    /// The sender couldn't reach the offered rate: the exchange side is the limit, not the
    /// trader.
    SenderBound { achieved: f64 },
    /// Ticks the trader never took.
    TicksLost(u64),
    /// Orders the exchange never got back.
    OrdersLost(u64),
}

impl TrialVerdict {
    fn ok(self) -> bool {
        self == TrialVerdict::NoLoss
    }
}

impl std::fmt::Display for TrialVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            TrialVerdict::NoLoss => f.write_str("no loss"),
            TrialVerdict::ShortSend { sent, count } => write!(f, "sent {sent} of {count}"),
            TrialVerdict::SenderBound { achieved } => {
                write!(f, "sender-bound: achieved {achieved:.0} msg/s")
            }
            TrialVerdict::TicksLost(n) => write!(f, "{n} ticks lost"),
            TrialVerdict::OrdersLost(n) => write!(f, "{n} orders lost"),
        }
    }
}

/// One path's search: the bounds it ended with, every trial, and latency under load.
#[derive(Debug, Clone)]
struct Search {
    path: TraderPath,
    /// The highest rate that passed.
    lo: Option<f64>,
    /// The lowest rate that failed.
    hi: Option<f64>,
    trials: Vec<Trial>,
    /// (share of `lo`, the trial at it).
    curve: Vec<(f64, Trial)>,
}

/// zero-loss.json: one entry per path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PathJson {
    path: TraderPath,
    zero_loss_rate: Option<f64>,
    first_failure: Option<f64>,
    trials: Vec<TrialJson>,
    latency_under_load: Vec<LoadJson>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct TrialJson {
    rate: f64,
    ok: bool,
    why: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct LoadJson {
    fraction: f64,
    rate: f64,
    tick_to_trade: Summary,
    delivered: Delivery,
    /// The trial lost nothing (its figures are not from a lossy run).
    ok: bool,
    why: String,
}

pub(crate) fn run(o: Options) -> anyhow::Result<()> {
    if !(o.min_rate > 0.0 && o.max_rate > o.min_rate && o.resolution > 1.0) {
        bail!("need 0 < --min-rate < --max-rate and --resolution > 1");
    }
    let Some(&first) = o.paths.first() else {
        bail!("no path to run");
    };
    crate::run::check_cpus(o.cpus.trader, o.cpus.replay)?;
    let base = crate::run::Options {
        batch: o.batch,
        trader_cpu: o.cpus.trader,
        replay_cpu: o.cpus.replay,
        ..crate::run::Options::trial(o.count, &o.lab, o.out.clone(), o.no_setup)
    };
    let session = Session::start(
        &base,
        "zero-loss",
        Ends {
            trader: first,
            exchange: o.exchange_io,
            wait: None,
        },
    )?;
    let mut searcher = Searcher {
        o: &o,
        session: &session,
        base,
        trials: 0,
    };
    let mut report = Vec::new();
    for &path in &o.paths {
        if session.stopped() {
            break;
        }
        eprintln!("zero-loss search on {path}");
        report.push(searcher.search(path)?);
    }
    let out = session.out.clone();
    session.finish();

    let s = render(&o, &report);
    print!("{s}");
    std::fs::write(out.join("zero-loss.md"), &s)?;
    std::fs::write(
        out.join("zero-loss.json"),
        serde_json::to_string_pretty(&to_json(&report))?,
    )?;
    eprintln!("results in {}", out.display());
    Ok(())
}

/// Runs the trials of a session, numbering them for their file names.
struct Searcher<'a> {
    o: &'a Options,
    session: &'a Session,
    base: crate::run::Options,
    trials: usize,
}

impl Searcher<'_> {
    /// Grows the rate from the bottom until a trial fails, bisects between the last pass and
    /// it, then measures latency at [`LOADS`] of the rate found.
    fn search(&mut self, path: TraderPath) -> anyhow::Result<Search> {
        let (o, session) = (self.o, self.session);
        let mut s = Search {
            path,
            lo: None,
            hi: None,
            trials: Vec::new(),
            curve: Vec::new(),
        };
        let mut rate = o.min_rate;
        while s.hi.is_none() && rate <= o.max_rate && !session.stopped() {
            let t = self.trial(path, rate)?;
            if t.verdict.ok() {
                s.lo = Some(rate);
                rate *= 2.0;
            } else {
                s.hi = Some(rate);
            }
            s.trials.push(t);
        }
        while let (Some(l), Some(h)) = (s.lo, s.hi) {
            if h / l <= o.resolution || session.stopped() {
                break;
            }
            let mid = (l * h).sqrt();
            let t = self.trial(path, mid)?;
            if t.verdict.ok() {
                s.lo = Some(mid);
            } else {
                s.hi = Some(mid);
            }
            s.trials.push(t);
        }
        if let Some(l) = s.lo {
            for frac in LOADS {
                if session.stopped() {
                    break;
                }
                s.curve.push((frac, self.trial(path, l * frac)?));
            }
        }
        Ok(s)
    }

    /// One trial at `rate` (rounded to whole messages/s for the replay).
    fn trial(&mut self, path: TraderPath, rate: f64) -> anyhow::Result<Trial> {
        self.trials += 1;
        self.base.rate = Rate::PerSec(rate.round_ties_even());
        let tag = format!("{path}-{:03}-{rate:.0}", self.trials);
        let ends = Ends {
            trader: path,
            exchange: self.o.exchange_io,
            wait: None,
        };
        let run = self.session.run(&self.base, ends, &tag)?;
        let (replay, trader) = (run.replay()?, run.trader()?);
        let verdict = verdict(self.o.count, rate, &replay, &trader);
        eprintln!("  {path} @ {rate:.0} msg/s: {verdict}");
        Ok(Trial {
            rate,
            verdict,
            tick_to_trade: replay.tick_to_trade,
            delivered: Delivery::of(&replay, &trader),
        })
    }
}

/// Whether a trial of `count` messages offered at `rate` lost nothing, and if not, why.
fn verdict(count: u64, rate: f64, replay: &ReplayReport, trader: &TraderReport) -> TrialVerdict {
    let sent = replay.sent_messages;
    let ticks = trader.counters.ticks;
    let orders = replay.orders_received;
    let expected = replay.parity.expected_orders;
    let achieved = replay.achieved_rate_per_s;
    if sent < count {
        TrialVerdict::ShortSend { sent, count }
    } else if achieved < SENDER_BOUND * rate {
        TrialVerdict::SenderBound { achieved }
    } else if ticks < sent {
        TrialVerdict::TicksLost(sent - ticks)
    } else if orders < expected {
        TrialVerdict::OrdersLost(expected - orders)
    } else {
        TrialVerdict::NoLoss
    }
}

fn render(o: &Options, report: &[Search]) -> String {
    let mut s = String::new();
    let sender = match o.exchange_io {
        ExchangeIo::Xdp => "AF_XDP",
        ExchangeIo::Udp => "kernel UDP",
    };
    let _ = writeln!(
        s,
        "zero-loss rate, {} messages per trial, {} per MoldUDP64 packet, trader cpu1 spinning, replay cpu0 ({sender} sender)",
        o.count, o.batch,
    );
    let _ = writeln!(s, "| path | zero-loss rate (msg/s) | first failure | why |");
    let _ = writeln!(s, "|---|---:|---:|---|");
    for Search {
        path,
        lo,
        hi,
        trials,
        ..
    } in report
    {
        let why = hi
            .and_then(|h| trials.iter().find(|t| t.rate == h))
            .map_or("no failure up to --max-rate".to_owned(), |t| {
                t.verdict.to_string()
            });
        let _ = writeln!(
            s,
            "| {path} | {} | {} | {why} |",
            lo.map_or("none".into(), |l| format!("{l:.0}")),
            hi.map_or("-".into(), |h| format!("{h:.0}"))
        );
    }
    let _ = writeln!(
        s,
        "\nlatency under load (tick-to-trade µs; delivered = orders back/expected, \
         {LOSS_MARK} marks a trial that lost anything)"
    );
    let _ = writeln!(
        s,
        "| path | load | rate | delivered | p50 | p99 | p99.9 | p99.99 | max | saturated |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for Search { path, curve, .. } in report {
        for (frac, t) in curve {
            let l = &t.tick_to_trade;
            // A trial can fail without losing an order (the sender fell short): say why.
            let delivered = if t.verdict.ok() || t.delivered.lost() {
                t.delivered.to_string()
            } else {
                format!("{LOSS_MARK} {} ({})", t.delivered, t.verdict)
            };
            let _ = writeln!(
                s,
                "| {path} | {:.0}% | {:.0} | {delivered} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} |",
                frac * 100.0,
                t.rate,
                l.p50_us,
                l.p99_us,
                l.p999_us,
                l.p9999_us,
                l.max_us,
                l.saturated
            );
        }
    }
    s
}

fn to_json(report: &[Search]) -> Vec<PathJson> {
    report
        .iter()
        .map(|s| PathJson {
            path: s.path,
            zero_loss_rate: s.lo,
            first_failure: s.hi,
            trials: s
                .trials
                .iter()
                .map(|t| TrialJson {
                    rate: t.rate,
                    ok: t.verdict.ok(),
                    why: t.verdict.to_string(),
                })
                .collect(),
            latency_under_load: s
                .curve
                .iter()
                .map(|(f, t)| LoadJson {
                    fraction: *f,
                    rate: t.rate,
                    tick_to_trade: t.tick_to_trade,
                    delivered: t.delivered,
                    ok: t.verdict.ok(),
                    why: t.verdict.to_string(),
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn a_trial_fails_on_the_first_loss_it_finds() {
        let (replay, trader) = (fixtures::replay(10.0), fixtures::trader(TraderPath::Xdp));
        // 1000 sent at 19,990/s, 1000 ticks taken, 40 of 40 orders.
        assert_eq!(
            verdict(1000, 20_000.0, &replay, &trader),
            TrialVerdict::NoLoss
        );
        assert_eq!(
            verdict(2000, 20_000.0, &replay, &trader).to_string(),
            "sent 1000 of 2000"
        );
        assert_eq!(
            verdict(1000, 40_000.0, &replay, &trader).to_string(),
            "sender-bound: achieved 19990 msg/s"
        );
        let mut lossy = trader.clone();
        lossy.counters.ticks = 990;
        assert_eq!(
            verdict(1000, 20_000.0, &replay, &lossy),
            TrialVerdict::TicksLost(10)
        );
        let mut short = replay.clone();
        short.orders_received = 37;
        assert_eq!(
            verdict(1000, 20_000.0, &short, &trader).to_string(),
            "3 orders lost"
        );
    }

    #[test]
    fn the_tables_show_the_bounds_and_the_load_curve() {
        let o = Options {
            paths: vec![TraderPath::Xdp],
            count: 1000,
            batch: 1,
            min_rate: 10_000.0,
            max_rate: 4e6,
            resolution: 1.05,
            exchange_io: ExchangeIo::Xdp,
            lab: netns::PREFIX.into(),
            out: None,
            no_setup: true,
            cpus: crate::run::Cpus {
                trader: 1,
                replay: 0,
            },
        };
        let trial = |rate: f64, verdict: TrialVerdict| Trial {
            rate,
            verdict,
            tick_to_trade: fixtures::summary(1000, 10.0),
            delivered: Delivery {
                orders: 40,
                expected: 40,
                ticks_lost: 0,
            },
        };
        let mut lossy = trial(18_000.0, TrialVerdict::OrdersLost(1));
        lossy.delivered.orders = 39;
        let sender_bound = trial(2_000.0, TrialVerdict::SenderBound { achieved: 1900.0 });
        let search = Search {
            path: TraderPath::Xdp,
            lo: Some(20_000.0),
            hi: Some(40_000.0),
            trials: vec![
                trial(20_000.0, TrialVerdict::NoLoss),
                trial(40_000.0, TrialVerdict::TicksLost(3)),
            ],
            curve: vec![
                (0.1, sender_bound),
                (0.5, trial(10_000.0, TrialVerdict::NoLoss)),
                (0.9, lossy),
            ],
        };
        let md = render(&o, std::slice::from_ref(&search));
        assert!(md.starts_with(
            "zero-loss rate, 1000 messages per trial, 1 per MoldUDP64 packet, trader cpu1 \
             spinning, replay cpu0 (AF_XDP sender)\n"
        ));
        assert!(
            md.contains("| xdp | 20000 | 40000 | 3 ticks lost |\n"),
            "{md}"
        );
        assert!(
            md.contains(
                "| xdp | 50% | 10000 | 40/40 | 20.00 | 40.00 | 50.00 | 60.00 | 70.00 | 0 |\n"
            ),
            "{md}"
        );
        assert!(
            md.contains("| xdp | 90% | 18000 | ⚠ 39/40 | 20.00 |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| xdp | 10% | 2000 | ⚠ 40/40 (sender-bound: achieved 1900 msg/s) | 20.00 |"
            ),
            "{md}"
        );
        let json = serde_json::to_value(to_json(&[search])).unwrap();
        assert_eq!(json[0]["path"], "xdp");
        assert_eq!(json[0]["zero_loss_rate"], 20_000.0);
        assert_eq!(json[0]["trials"][1]["why"], "3 ticks lost");
        assert_eq!(
            json[0]["latency_under_load"][1]["tick_to_trade"]["p50_us"],
            20.0
        );
        assert_eq!(json[0]["latency_under_load"][2]["ok"], false);
        assert_eq!(json[0]["latency_under_load"][2]["delivered"]["orders"], 39);
    }
}
