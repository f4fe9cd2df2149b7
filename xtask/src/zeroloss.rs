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
/// A trial is saturated, though it lost nothing, when its last tenth's median tick-to-trade is
/// more than this many times its second tenth's (the first is warm-up)...
const GROWTH: f64 = 2.0;
/// ...and more than this many µs above it (two medians of a few µs can double by noise).
const GROWTH_FLOOR_US: f64 = 10.0;
/// The loads, as shares of the zero-loss rate, at which latency is measured.
const LOADS: [f64; 3] = [0.1, 0.5, 0.9];

/// Options.
#[derive(Debug, clap::Args)]
pub(crate) struct Options {
    /// Paths (comma-separated): xdp, udp, trigger (the decision in the driver).
    #[arg(long, value_delimiter = ',', default_value = "xdp,udp", value_parser = crate::run::trader_paths())]
    pub(crate) paths: Vec<TraderPath>,
    /// Messages per trial, at least (a trial also lasts --seconds at its rate).
    #[arg(long, default_value_t = 100_000)]
    pub(crate) count: u64,
    /// Seconds per trial, at least: long enough to fill every queue between the sender and the
    /// trader (socket buffers, rings, the veth's) many times over, so a rate that passes is one
    /// the trader sustains, not one the buffers absorbed. A trial whose latency grows over its
    /// length fails as saturated even with nothing lost.
    #[arg(long, default_value_t = 2.0)]
    pub(crate) seconds: f64,
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
    /// Trials that must pass again at the rate found before it is reported: a shared machine
    /// passes a rate once and fails it the next time. A confirmation that fails makes that
    /// rate the new failure and the search goes on below it (at most four rounds). 0: report
    /// the bisection's rate as it ends.
    #[arg(long, default_value_t = 1)]
    pub(crate) confirm: u32,
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
    /// Messages sent in the trial.
    messages: u64,
    /// Orders the exchange took per second of sending.
    orders_per_s: f64,
    /// Inside the trader, from taking a packet to its order sent (its RX→TX median, µs).
    rx_tx_p50_us: f64,
    /// Where the CPU time went, per message.
    cpu: CpuPerMessage,
}

/// A trial's CPU time per message sent, by part: what each part of the path cost, and how
/// near the trader ran to its limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
struct CpuPerMessage {
    /// The trader's loop working on packets (its `busy_ms`: from each turn's first packet to
    /// the end of its orders and arming), ns per message.
    trader_busy_ns: f64,
    /// That time against the send's duration (the replay's send loop): 1 is a trader that
    /// never waited for a packet while they were offered (above 1: it worked through a
    /// backlog after the sender stopped).
    trader_busy_share: f64,
    /// The replay's send loop on its CPU, ns per message: its pacing spin, its sends, and on
    /// veth the kernel's receive for the trader (the veth's NAPI poll and the XDP program run
    /// inside the sender's system call), which no thread of the trader's pays.
    replay_ran_ns: f64,
}

impl CpuPerMessage {
    fn of(replay: &ReplayReport, trader: &TraderReport) -> CpuPerMessage {
        let per = |ms: f64, n: u64| if n == 0 { 0.0 } else { ms * 1e6 / n as f64 };
        // The trader's own span runs on after the last packet (to the end of session, or
        // its idle timeout when that was lost): the send's duration is the window.
        let window_ms = replay.send_seconds * 1e3;
        CpuPerMessage {
            trader_busy_ns: per(trader.busy_ms, replay.sent_messages),
            trader_busy_share: if window_ms > 0.0 {
                trader.busy_ms / window_ms
            } else {
                0.0
            },
            replay_ran_ns: per(replay.thread_time.ran_ms, replay.sent_messages),
        }
    }
}

/// A trader busy for at least this share of a failed trial was the limit itself; below it,
/// what filled was a queue before it.
const TRADER_BOUND_SHARE: f64 = 0.9;

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
    /// Nothing lost, but the median tick-to-trade grew over the trial (second tenth → last
    /// tenth, µs): a queue before the trader was filling, and a longer trial would lose.
    Saturated { first_us: f64, last_us: f64 },
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
            TrialVerdict::Saturated { first_us, last_us } => write!(
                f,
                "saturated: median {first_us:.1} → {last_us:.1} µs over the trial"
            ),
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
    /// Messages sent.
    messages: u64,
    ok: bool,
    why: String,
    /// What the failure says was the limit (`-` when it passed).
    bound: String,
    orders_per_s: f64,
    /// The trader's RX→TX median, µs.
    trader_rx_tx_p50_us: f64,
    /// CPU time per message, by part.
    cpu: CpuPerMessage,
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
    if !(o.seconds > 0.0 && o.seconds <= 600.0) {
        bail!(
            "--seconds {}: a trial must last more than 0 and at most 600 seconds",
            o.seconds
        );
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
            orders: paths::Orders::Udp,
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
        let params = SearchParams {
            min_rate: o.min_rate,
            max_rate: o.max_rate,
            resolution: o.resolution,
            confirm: o.confirm,
        };
        find_rate(&params, &mut s, |rate| {
            if session.stopped() {
                return Ok(None);
            }
            self.trial(path, rate).map(Some)
        })?;
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

    /// One trial at `rate` (rounded to whole messages/s for the replay), of --count messages
    /// or --seconds at that rate, whichever is more.
    fn trial(&mut self, path: TraderPath, rate: f64) -> anyhow::Result<Trial> {
        self.trials += 1;
        self.base.rate = Rate::PerSec(rate.round_ties_even());
        let count = trial_count(self.o.count, self.o.seconds, rate);
        self.base.count = Some(count);
        self.base.source = crate::run::gbm_for(count);
        let tag = format!("{path}-{:03}-{rate:.0}", self.trials);
        let ends = Ends {
            trader: path,
            exchange: self.o.exchange_io,
            wait: None,
            orders: paths::Orders::Udp,
        };
        let run = self.session.run(&self.base, ends, &tag)?;
        let (replay, trader) = (run.replay()?, run.trader()?);
        let verdict = verdict(count, rate, &replay, &trader);
        eprintln!("  {path} @ {rate:.0} msg/s, {count} messages: {verdict}");
        Ok(Trial {
            rate,
            verdict,
            tick_to_trade: replay.tick_to_trade,
            delivered: Delivery::of(&replay, &trader),
            messages: count,
            orders_per_s: if replay.send_seconds > 0.0 {
                replay.orders_received as f64 / replay.send_seconds
            } else {
                0.0
            },
            rx_tx_p50_us: trader.rx_to_tx.p50_us,
            cpu: CpuPerMessage::of(&replay, &trader),
        })
    }
}

/// What [`find_rate`] searches with.
struct SearchParams {
    min_rate: f64,
    max_rate: f64,
    resolution: f64,
    confirm: u32,
}

/// Rounds of confirmation at most: each failed one lowers the failure bound.
const CONFIRM_ROUNDS: usize = 4;

/// The search for the zero-loss rate, its trials from `trial` (`None`: stopped): grows the
/// rate from the bottom by doubling until a trial fails, bisects between the last pass and
/// it, then tries the rate found `confirm` times more; a failed confirmation makes that rate
/// the failure bound, the highest rate that passed below it the pass bound, and the bisection
/// goes on. Fills `s.lo`, `s.hi` and `s.trials`.
fn find_rate(
    p: &SearchParams,
    s: &mut Search,
    mut trial: impl FnMut(f64) -> anyhow::Result<Option<Trial>>,
) -> anyhow::Result<()> {
    let mut rate = p.min_rate;
    while s.hi.is_none() && rate <= p.max_rate {
        let Some(t) = trial(rate)? else {
            return Ok(());
        };
        if t.verdict.ok() {
            s.lo = Some(rate);
            rate *= 2.0;
        } else {
            s.hi = Some(rate);
        }
        s.trials.push(t);
    }
    for _ in 0..CONFIRM_ROUNDS {
        while let (Some(l), Some(h)) = (s.lo, s.hi) {
            if h / l <= p.resolution {
                break;
            }
            let mid = (l * h).sqrt();
            let Some(t) = trial(mid)? else {
                return Ok(());
            };
            if t.verdict.ok() {
                s.lo = Some(mid);
            } else {
                s.hi = Some(mid);
            }
            s.trials.push(t);
        }
        let Some(found) = s.lo else {
            return Ok(());
        };
        let mut confirmed = true;
        for _ in 0..p.confirm {
            let Some(t) = trial(found)? else {
                return Ok(());
            };
            let ok = t.verdict.ok();
            s.trials.push(t);
            if !ok {
                confirmed = false;
                break;
            }
        }
        if confirmed {
            return Ok(());
        }
        // Failed again where it passed: that rate is the failure now, and the pass bound the
        // highest rate below it that passed (none: nothing passed for sure).
        s.hi = Some(found);
        s.lo = s
            .trials
            .iter()
            .filter(|t| t.rate < found && t.verdict.ok())
            .map(|t| t.rate)
            .reduce(f64::max);
    }
    Ok(())
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
    } else if let Some((first_us, last_us)) = growth(&replay.tick_to_trade_tenths) {
        TrialVerdict::Saturated { first_us, last_us }
    } else {
        TrialVerdict::NoLoss
    }
}

/// Messages in a trial: `count`, or `seconds` at `rate`, whichever is more.
fn trial_count(count: u64, seconds: f64, rate: f64) -> u64 {
    count.max((seconds * rate).ceil() as u64)
}

/// The medians of the second and the last tenth of a trial, if the last grew past [`GROWTH`]
/// times the second and [`GROWTH_FLOOR_US`] above it (both tenths need orders).
fn growth(tenths: &[Summary]) -> Option<(f64, f64)> {
    let (second, last) = (tenths.get(1)?, tenths.last()?);
    if tenths.len() < 3 || second.count == 0 || last.count == 0 {
        return None;
    }
    let (a, b) = (second.p50_us, last.p50_us);
    (b > GROWTH * a && b - a > GROWTH_FLOOR_US).then_some((a, b))
}

fn render(o: &Options, report: &[Search]) -> String {
    let mut s = String::new();
    let sender = match o.exchange_io {
        ExchangeIo::Xdp => "AF_XDP",
        ExchangeIo::Udp => "kernel UDP",
    };
    let _ = writeln!(
        s,
        "zero-loss rate, each trial at least {} messages and {} s, {} per MoldUDP64 packet, \
         trader cpu{} spinning, replay cpu{} ({sender} sender, one core); a trial fails on any \
         loss, or as saturated when its median tick-to-trade grows over it (last tenth > \
         {GROWTH}× the second and {GROWTH_FLOOR_US} µs above it); the rate found passed {} more \
         trial(s) at it (--confirm)",
        o.count, o.seconds, o.batch, o.cpus.trader, o.cpus.replay, o.confirm,
    );
    let _ = writeln!(
        s,
        "| path | zero-loss rate (msg/s) | orders/s at it | trader RX→TX p50 µs at it | trader busy ns/msg at it | trader busy at it | replay CPU ns/msg at it | first failure | why | bound |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---|---|");
    for Search {
        path,
        lo,
        hi,
        trials,
        ..
    } in report
    {
        // A rate may have been tried more than once (a confirmation): the pass bound's last
        // pass, the failure bound's failure.
        let passed = lo.and_then(|l| trials.iter().rev().find(|t| t.rate == l && t.verdict.ok()));
        let failed = hi.and_then(|h| trials.iter().find(|t| t.rate == h && !t.verdict.ok()));
        let why = failed.map_or("no failure up to --max-rate".to_owned(), |t| {
            t.verdict.to_string()
        });
        let bound = failed.map_or("-".to_owned(), bound);
        let (orders, rx_tx, busy, share, replay) = passed.map_or(
            ("-".into(), "-".into(), "-".into(), "-".into(), "-".into()),
            |t| {
                (
                    format!("{:.0}", t.orders_per_s),
                    format!("{:.2}", t.rx_tx_p50_us),
                    format!("{:.0}", t.cpu.trader_busy_ns),
                    format!("{:.0} %", t.cpu.trader_busy_share * 100.0),
                    format!("{:.0}", t.cpu.replay_ran_ns),
                )
            },
        );
        let _ = writeln!(
            s,
            "| {path} | {} | {orders} | {rx_tx} | {busy} | {share} | {replay} | {} | {why} | {bound} |",
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

/// Which part a failed trial says was the limit: from its verdict, and for a queue before the
/// trader, from how busy the trader was.
fn bound(t: &Trial) -> String {
    let part = bound_part(t.verdict);
    match t.verdict {
        TrialVerdict::TicksLost(_) | TrialVerdict::Saturated { .. } => {
            let share = t.cpu.trader_busy_share * 100.0;
            // Judged on the share as shown, so that "90 %" never reads as below the line.
            if share.round() >= TRADER_BOUND_SHARE * 100.0 {
                format!("{part}; the trader busy {share:.0} % of it: its own work")
            } else {
                format!(
                    "{part}; the trader busy {share:.0} % of it: not its work, what feeds it \
                     (the kernel's receive, the sender's bursts)"
                )
            }
        }
        _ => part.to_owned(),
    }
}

/// The part a verdict names.
fn bound_part(v: TrialVerdict) -> &'static str {
    match v {
        TrialVerdict::NoLoss => "-",
        TrialVerdict::ShortSend { .. } | TrialVerdict::SenderBound { .. } => {
            "the sender (the exchange side could not offer the rate)"
        }
        TrialVerdict::TicksLost(_) => "the trader's RX (ticks dropped before it took them)",
        TrialVerdict::OrdersLost(_) => "the order path (the trader's TX or the exchange's receive)",
        TrialVerdict::Saturated { .. } => "the trader's RX (a queue before it grew)",
    }
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
                    messages: t.messages,
                    ok: t.verdict.ok(),
                    why: t.verdict.to_string(),
                    bound: bound(t),
                    orders_per_s: t.orders_per_s,
                    trader_rx_tx_p50_us: t.rx_tx_p50_us,
                    cpu: t.cpu,
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
    fn a_trial_whose_latency_grows_is_saturated_though_it_lost_nothing() {
        let (mut replay, trader) = (fixtures::replay(10.0), fixtures::trader(TraderPath::Xdp));
        let tenth = |p50: f64| Summary {
            count: 4,
            p50_us: p50,
            ..Summary::default()
        };
        // Level (noise within 2x): no loss.
        replay.tick_to_trade_tenths = [9.0, 5.0, 6.0, 5.5, 7.0, 6.0, 5.0, 8.0, 9.0, 9.5]
            .map(tenth)
            .to_vec();
        assert_eq!(
            verdict(1000, 20_000.0, &replay, &trader),
            TrialVerdict::NoLoss
        );
        // Doubled but only by a few µs: still level.
        replay.tick_to_trade_tenths[9] = tenth(10.5);
        assert_eq!(
            verdict(1000, 20_000.0, &replay, &trader),
            TrialVerdict::NoLoss
        );
        // A queue filling: the median climbs through the trial.
        replay.tick_to_trade_tenths[9] = tenth(800.0);
        assert_eq!(
            verdict(1000, 20_000.0, &replay, &trader),
            TrialVerdict::Saturated {
                first_us: 5.0,
                last_us: 800.0
            }
        );
        // Loss is named before growth.
        let mut lossy = trader.clone();
        lossy.counters.ticks = 990;
        assert_eq!(
            verdict(1000, 20_000.0, &replay, &lossy),
            TrialVerdict::TicksLost(10)
        );
        // Without the tenths (an older replay) nothing can be said: no verdict from them.
        replay.tick_to_trade_tenths.clear();
        assert_eq!(
            verdict(1000, 20_000.0, &replay, &trader),
            TrialVerdict::NoLoss
        );
        assert_eq!(trial_count(100_000, 2.0, 1_800_000.0), 3_600_000);
        assert_eq!(trial_count(100_000, 2.0, 10_000.0), 100_000);
    }

    /// A trial at `rate` with `verdict` and otherwise fixed figures.
    fn trial(rate: f64, verdict: TrialVerdict) -> Trial {
        Trial {
            rate,
            verdict,
            tick_to_trade: fixtures::summary(1000, 10.0),
            delivered: Delivery {
                orders: 40,
                expected: 40,
                ticks_lost: 0,
            },
            messages: 40_000,
            orders_per_s: 7_600.0,
            rx_tx_p50_us: 2.5,
            cpu: CpuPerMessage::default(),
        }
    }

    /// A trial at `rate` that passed or lost a tick.
    fn fake_trial(rate: f64, ok: bool) -> Trial {
        let verdict = if ok {
            TrialVerdict::NoLoss
        } else {
            TrialVerdict::TicksLost(1)
        };
        trial(rate, verdict)
    }

    /// The tests' search: 10k to 4M msg/s to 5 %, nothing tried yet.
    fn fresh_search(confirm: u32) -> (SearchParams, Search) {
        let p = SearchParams {
            min_rate: 10_000.0,
            max_rate: 4e6,
            resolution: 1.05,
            confirm,
        };
        let s = Search {
            path: TraderPath::Xdp,
            lo: None,
            hi: None,
            trials: Vec::new(),
            curve: Vec::new(),
        };
        (p, s)
    }

    fn search_with(confirm: u32, mut passes: impl FnMut(f64) -> bool) -> Search {
        let (p, mut s) = fresh_search(confirm);
        find_rate(&p, &mut s, |rate| Ok(Some(fake_trial(rate, passes(rate))))).unwrap();
        s
    }

    /// On a steady machine the search brackets the limit within the resolution, and the rate
    /// it reports passed again (`confirm`); without confirmation it passed once.
    #[test]
    fn the_rate_found_is_bracketed_and_confirmed() {
        let s = search_with(1, |r| r <= 1_000_000.0);
        let (lo, hi) = (s.lo.unwrap(), s.hi.unwrap());
        assert!(
            lo <= 1_000_000.0 && hi > 1_000_000.0 && hi / lo <= 1.05,
            "{lo} {hi}"
        );
        let at_lo = s.trials.iter().filter(|t| t.rate == lo).count();
        assert_eq!(at_lo, 2, "the bisection's pass and one confirmation");
        let s = search_with(0, |r| r <= 1_000_000.0);
        assert_eq!(
            s.trials.iter().filter(|t| t.rate == s.lo.unwrap()).count(),
            1
        );
    }

    /// A rate that passed once and fails when tried again is not reported: the search goes on
    /// below it, and the rate it ends with passed its confirmation.
    #[test]
    fn a_rate_that_fails_its_confirmation_is_not_the_answer() {
        // The machine's limit drops from 1.2 M to 0.9 M after the first trial that passes
        // above 0.9 M: later ones at that rate fail.
        let mut limit = 1_200_000.0;
        let s = search_with(1, |r| {
            let ok = r <= limit;
            if r > 900_000.0 && ok {
                limit = 900_000.0;
            }
            ok
        });
        let lo = s.lo.unwrap();
        assert!(lo <= 900_000.0, "{lo}");
        let last_at_lo = s.trials.iter().rev().find(|t| t.rate == lo).unwrap();
        assert!(last_at_lo.verdict.ok());
        assert!(
            s.trials.iter().filter(|t| t.rate == lo).count() >= 2,
            "confirmed"
        );
        assert!(
            s.trials
                .iter()
                .any(|t| t.rate > 900_000.0 && t.verdict.ok()),
            "the first pass above the new limit happened, and was overruled"
        );
    }

    /// Stopped (Ctrl-C) mid-search: what was found so far stands, nothing more is tried.
    #[test]
    fn a_stopped_search_keeps_what_it_had() {
        let (p, mut s) = fresh_search(1);
        let mut n = 0;
        find_rate(&p, &mut s, |rate| {
            n += 1;
            Ok((n <= 3).then(|| fake_trial(rate, true)))
        })
        .unwrap();
        assert_eq!(s.trials.len(), 3);
        assert_eq!(s.lo, Some(40_000.0));
        assert_eq!(s.hi, None);
    }

    /// CPU per message from both reports, and the bound that follows from it: a trader busy
    /// nearly all of a saturated trial was the limit; one mostly waiting was fed too slowly.
    #[test]
    fn the_bound_says_whether_the_trader_or_what_feeds_it_was_the_limit() {
        let (mut replay, mut trader) = (fixtures::replay(10.0), fixtures::trader(TraderPath::Xdp));
        replay.sent_messages = 1_000_000;
        replay.thread_time.ran_ms = 2_000.0;
        replay.send_seconds = 2.0;
        // The trader's span ran on after the sends: not the window.
        trader.thread_time.wall_ms = 60_000.0;
        trader.busy_ms = 1_900.0;
        let cpu = CpuPerMessage::of(&replay, &trader);
        assert_eq!(cpu.trader_busy_ns, 1_900.0);
        assert_eq!(cpu.replay_ran_ns, 2_000.0);
        assert!((cpu.trader_busy_share - 0.95).abs() < 1e-12);
        let mut t = Trial {
            messages: 1_000_000,
            cpu,
            ..trial(
                500_000.0,
                TrialVerdict::Saturated {
                    first_us: 5.0,
                    last_us: 900.0,
                },
            )
        };
        assert!(
            bound(&t).ends_with("busy 95 % of it: its own work"),
            "{}",
            bound(&t)
        );
        trader.busy_ms = 400.0;
        t.cpu = CpuPerMessage::of(&replay, &trader);
        assert!(
            bound(&t).contains("busy 20 % of it: not its work"),
            "{}",
            bound(&t)
        );
        // The sender's verdict says nothing of the trader's share.
        t.verdict = TrialVerdict::SenderBound { achieved: 1.0 };
        assert_eq!(
            bound(&t),
            "the sender (the exchange side could not offer the rate)"
        );
        // No messages, no wall time: zeros, not NaN.
        replay.sent_messages = 0;
        replay.send_seconds = 0.0;
        assert_eq!(
            CpuPerMessage::of(&replay, &trader),
            CpuPerMessage::default()
        );
    }

    #[test]
    fn the_tables_show_the_bounds_and_the_load_curve() {
        let o = Options {
            paths: vec![TraderPath::Xdp],
            count: 1000,
            seconds: 2.0,
            batch: 1,
            min_rate: 10_000.0,
            max_rate: 4e6,
            resolution: 1.05,
            confirm: 1,
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
            cpu: CpuPerMessage {
                trader_busy_ns: 310.0,
                trader_busy_share: 0.96,
                replay_ran_ns: 540.0,
            },
            ..trial(rate, verdict)
        };
        let mut lossy = trial(18_000.0, TrialVerdict::OrdersLost(1));
        lossy.delivered.orders = 39;
        let sender_bound = trial(2_000.0, TrialVerdict::SenderBound { achieved: 1900.0 });
        let search = Search {
            path: TraderPath::Xdp,
            lo: Some(20_000.0),
            hi: Some(40_000.0),
            // 40,000 passed once and failed its confirmation: the row shows the failure.
            trials: vec![
                trial(20_000.0, TrialVerdict::NoLoss),
                trial(40_000.0, TrialVerdict::NoLoss),
                trial(40_000.0, TrialVerdict::TicksLost(3)),
            ],
            curve: vec![
                (0.1, sender_bound),
                (0.5, trial(10_000.0, TrialVerdict::NoLoss)),
                (0.9, lossy),
            ],
        };
        let md = render(&o, std::slice::from_ref(&search));
        assert!(
            md.starts_with(
                "zero-loss rate, each trial at least 1000 messages and 2 s, 1 per MoldUDP64 \
                 packet, trader cpu1 spinning, replay cpu0 (AF_XDP sender, one core);"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| xdp | 20000 | 7600 | 2.50 | 310 | 96 % | 540 | 40000 | 3 ticks lost | the \
                 trader's RX (ticks dropped before it took them); the trader busy 96 % of it: its \
                 own work |\n"
            ),
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
        assert_eq!(json[0]["trials"][2]["why"], "3 ticks lost");
        assert_eq!(json[0]["trials"][0]["messages"], 40_000);
        assert_eq!(json[0]["trials"][0]["bound"], "-");
        assert_eq!(
            json[0]["latency_under_load"][1]["tick_to_trade"]["p50_us"],
            20.0
        );
        assert_eq!(json[0]["latency_under_load"][2]["ok"], false);
        assert_eq!(json[0]["latency_under_load"][2]["delivered"]["orders"], 39);
    }
}
