//! The zero-loss search's report: zero-loss.md ([`markdown`]: each path's zero-loss rate, what
//! bounded it, latency under load) and zero-loss.json ([`json`]), and what a trial's reports
//! say ([`Trial::of`], [`TrialVerdict::of`]). xtask runs the search (the bisection and its
//! trials); each trial comes here as the replay's and the trader's reports.
use std::fmt::Write as _;

use paths::{ExchangeIo, TraderPath};
use results::{ReplayReport, Summary, TraderReport};
use serde::{Deserialize, Serialize};

use crate::{Delivery, LOSS_MARK};

/// A trial whose sender achieved less than this share of the offered rate measured the sender,
/// not the trader.
const SENDER_BOUND: f64 = 0.97;
/// A trial is saturated, though it lost nothing, when its last tenth's median tick-to-trade is
/// more than this many times its second tenth's (the first is warm-up)...
const GROWTH: f64 = 2.0;
/// ...and more than this many µs above it (two medians of a few µs can double by noise).
const GROWTH_FLOOR_US: f64 = 10.0;
/// What the search ran under, as zero-loss.md says it.
#[derive(Debug, Clone, PartialEq)]
pub struct Conditions {
    /// The feed each trial sends: `gbm` (the ticker, one trade a message) or a `market:` day,
    /// sized to the trial.
    pub source: String,
    /// What the trader was told besides (`--trader-arg`), e.g. `--symbols=SYNTH`.
    pub trader_args: Vec<String>,
    /// Messages per trial, at least.
    pub count: u64,
    /// Seconds per trial, at least.
    pub seconds: f64,
    /// ITCH messages per MoldUDP64 packet.
    pub batch: u16,
    pub trader_cpu: usize,
    pub replay_cpu: usize,
    /// The exchange side's I/O (the sender's).
    pub exchange_io: ExchangeIo,
    /// Trials that passed again at the rate found (`--confirm`).
    pub confirm: u32,
}

/// One trial's verdict.
#[derive(Debug, Clone)]
pub struct Trial {
    pub rate: f64,
    pub verdict: TrialVerdict,
    pub tick_to_trade: Summary,
    /// Orders back against those expected, ticks lost: beside every latency figure, since
    /// lost orders never enter the histogram.
    pub delivered: Delivery,
    /// Messages sent in the trial.
    pub messages: u64,
    /// Orders the exchange took per second of sending.
    pub orders_per_s: f64,
    /// Inside the trader, from taking a packet to its order sent (its RX→TX median, µs).
    pub rx_tx_p50_us: f64,
    /// Where the CPU time went, per message.
    pub cpu: CpuPerMessage,
}

impl Trial {
    /// A trial of `count` messages offered at `rate`, from its reports.
    pub fn of(rate: f64, count: u64, replay: &ReplayReport, trader: &TraderReport) -> Trial {
        Trial {
            rate,
            verdict: TrialVerdict::of(count, rate, replay, trader),
            tick_to_trade: replay.tick_to_trade,
            delivered: Delivery::of(replay, trader),
            messages: count,
            orders_per_s: if replay.send_seconds > 0.0 {
                replay.orders_received as f64 / replay.send_seconds
            } else {
                0.0
            },
            rx_tx_p50_us: trader.rx_to_tx.p50_us,
            cpu: CpuPerMessage::of(replay, trader),
        }
    }
}

/// A trial's CPU time per message sent, by part: what each part of the path cost, and how
/// near the trader ran to its limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPerMessage {
    /// The trader's loop working on packets (its `busy_ms`: from each turn's first packet to
    /// the end of its orders and arming), ns per message.
    pub trader_busy_ns: f64,
    /// That time against the send's duration (the replay's send loop): 1 is a trader that
    /// never waited for a packet while they were offered (above 1: it worked through a
    /// backlog after the sender stopped).
    pub trader_busy_share: f64,
    /// The replay's send loop on its CPU, ns per message: its pacing spin, its sends, and on
    /// veth the kernel's receive for the trader (the veth's NAPI poll and the XDP program run
    /// inside the sender's system call), which no thread of the trader's pays.
    pub replay_ran_ns: f64,
}

impl CpuPerMessage {
    /// From a trial's reports.
    pub fn of(replay: &ReplayReport, trader: &TraderReport) -> CpuPerMessage {
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
pub enum TrialVerdict {
    /// Everything sent, taken and answered.
    NoLoss,
    /// The replay stopped short: `sent` of `count` messages.
    ShortSend { sent: u64, count: u64 },
    /// The sender couldn't reach the offered rate: the exchange side is the limit, not the
    /// trader.
    SenderBound { achieved: f64 },
    /// Messages the trader never took: neither sequenced nor counted as dropped by its driver
    /// filter (on the ticker feed every message is a tick).
    TicksLost(u64),
    /// Orders the exchange never got back.
    OrdersLost(u64),
    /// Nothing lost, but the median tick-to-trade grew over the trial (second tenth → last
    /// tenth, µs): a queue before the trader was filling, and a longer trial would lose.
    Saturated { first_us: f64, last_us: f64 },
}

impl TrialVerdict {
    /// Nothing lost.
    pub fn ok(self) -> bool {
        self == TrialVerdict::NoLoss
    }

    /// What a trial of `count` messages offered at `rate` found, from its reports.
    pub fn of(count: u64, rate: f64, replay: &ReplayReport, trader: &TraderReport) -> TrialVerdict {
        let sent = replay.sent_messages;
        // Every message the trader took in sequence, or its XDP program dropped and handed the
        // sequencer as a claim (a full-depth feed's other symbols, with --symbols).
        let taken = trader.counters.messages + trader.counters.filtered_skipped;
        let orders = replay.orders_received;
        let expected = replay.parity.expected_orders;
        let achieved = replay.achieved_rate_per_s;
        if sent < count {
            TrialVerdict::ShortSend { sent, count }
        } else if achieved < SENDER_BOUND * rate {
            TrialVerdict::SenderBound { achieved }
        } else if taken < sent {
            TrialVerdict::TicksLost(sent - taken)
        } else if orders < expected {
            TrialVerdict::OrdersLost(expected - orders)
        } else if let Some((first_us, last_us)) = growth(&replay.tick_to_trade_tenths) {
            TrialVerdict::Saturated { first_us, last_us }
        } else {
            TrialVerdict::NoLoss
        }
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
            TrialVerdict::TicksLost(n) => write!(f, "{n} messages lost"),
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
pub struct Search {
    pub path: TraderPath,
    /// The highest rate that passed.
    pub lo: Option<f64>,
    /// The lowest rate that failed.
    pub hi: Option<f64>,
    pub trials: Vec<Trial>,
    /// (share of `lo`, the trial at it).
    pub curve: Vec<(f64, Trial)>,
}

/// zero-loss.json: one entry per path ([`json`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathJson {
    pub path: TraderPath,
    pub zero_loss_rate: Option<f64>,
    pub first_failure: Option<f64>,
    pub trials: Vec<TrialJson>,
    pub latency_under_load: Vec<LoadJson>,
}

/// A trial in zero-loss.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialJson {
    pub rate: f64,
    /// Messages sent.
    pub messages: u64,
    pub ok: bool,
    pub why: String,
    /// What the failure says was the limit (`-` when it passed).
    pub bound: String,
    pub orders_per_s: f64,
    /// The trader's RX→TX median, µs.
    pub trader_rx_tx_p50_us: f64,
    /// CPU time per message, by part.
    pub cpu: CpuPerMessage,
}

/// A trial of the load curve in zero-loss.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadJson {
    pub fraction: f64,
    pub rate: f64,
    pub tick_to_trade: Summary,
    pub delivered: Delivery,
    /// The trial lost nothing (its figures are not from a lossy run).
    pub ok: bool,
    pub why: String,
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

/// zero-loss.md: each path's zero-loss rate and what bounded it, then latency under load.
pub fn markdown(o: &Conditions, report: &[Search]) -> String {
    let mut s = String::new();
    let sender = match o.exchange_io {
        ExchangeIo::Xdp => "AF_XDP",
        ExchangeIo::Udp => "kernel UDP",
    };
    let _ = writeln!(
        s,
        "zero-loss rate on {}{}, each trial at least {} messages and {} s, {} per MoldUDP64 \
         packet, trader cpu{} spinning, replay cpu{} ({sender} sender, one core); a trial fails \
         on any loss, or as saturated when its median tick-to-trade grows over it (last tenth > \
         {GROWTH}× the second and {GROWTH_FLOOR_US} µs above it); the rate found passed {} more \
         trial(s) at it (--confirm)",
        o.source,
        if o.trader_args.is_empty() {
            String::new()
        } else {
            format!(" (trader {})", o.trader_args.join(" "))
        },
        o.count,
        o.seconds,
        o.batch,
        o.trader_cpu,
        o.replay_cpu,
        o.confirm,
    );
    let _ = writeln!(
        s,
        "| path | zero-loss rate msg/s (packets/s) | orders/s at it | trader RX→TX p50 µs at it | trader busy ns/msg at it | trader busy at it | replay CPU ns/msg at it | first failure | why | bound |"
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
        let why = failed.map_or("no failure up to --highest-rate".to_owned(), |t| {
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
            lo.map_or("none".into(), |l| format!(
                "{l:.0} ({:.0})",
                l / f64::from(o.batch.max(1))
            )),
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
        TrialVerdict::TicksLost(_) => "the trader's RX (messages dropped before it took them)",
        TrialVerdict::OrdersLost(_) => "the order path (the trader's TX or the exchange's receive)",
        TrialVerdict::Saturated { .. } => "the trader's RX (a queue before it grew)",
    }
}

/// zero-loss.json: its layout's version ([`crate::SCHEMA_VERSION`], bumped as report.json's
/// is), then one entry per path. (Before `schema_version`, the file was the bare list.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZeroLossJson {
    pub schema_version: u32,
    pub paths: Vec<PathJson>,
}

/// zero-loss.json's contents.
pub fn json(report: &[Search]) -> ZeroLossJson {
    ZeroLossJson {
        schema_version: crate::SCHEMA_VERSION,
        paths: paths_json(report),
    }
}

fn paths_json(report: &[Search]) -> Vec<PathJson> {
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

    /// A trial's figures from its reports: orders a second of sending, the trader's RX→TX
    /// median, delivery.
    #[test]
    fn a_trial_is_read_from_its_reports() {
        let (mut replay, trader) = (fixtures::replay(10.0), fixtures::trader(TraderPath::Xdp));
        replay.send_seconds = 0.5;
        let t = Trial::of(20_000.0, 1000, &replay, &trader);
        assert_eq!(t.verdict, TrialVerdict::NoLoss);
        assert_eq!(
            (t.messages, t.orders_per_s, t.rx_tx_p50_us),
            (1000, 80.0, 1.0)
        );
        assert_eq!(t.delivered, Delivery::of(&replay, &trader));
        assert_eq!(t.tick_to_trade, replay.tick_to_trade);
        replay.send_seconds = 0.0;
        assert_eq!(
            Trial::of(20_000.0, 1000, &replay, &trader).orders_per_s,
            0.0
        );
    }

    #[test]
    fn a_trial_fails_on_the_first_loss_it_finds() {
        let (replay, trader) = (fixtures::replay(10.0), fixtures::trader(TraderPath::Xdp));
        // 1000 sent at 19,990/s, 1000 ticks taken, 40 of 40 orders.
        assert_eq!(
            TrialVerdict::of(1000, 20_000.0, &replay, &trader),
            TrialVerdict::NoLoss
        );
        assert_eq!(
            TrialVerdict::of(2000, 20_000.0, &replay, &trader).to_string(),
            "sent 1000 of 2000"
        );
        assert_eq!(
            TrialVerdict::of(1000, 40_000.0, &replay, &trader).to_string(),
            "sender-bound: achieved 19990 msg/s"
        );
        let mut lossy = trader.clone();
        lossy.counters.messages = 990;
        assert_eq!(
            TrialVerdict::of(1000, 20_000.0, &replay, &lossy),
            TrialVerdict::TicksLost(10)
        );
        // What the driver filter dropped and claimed was taken: counted, not lost.
        let mut filtered = lossy.clone();
        filtered.counters.filtered_skipped = 10;
        assert_eq!(
            TrialVerdict::of(1000, 20_000.0, &replay, &filtered),
            TrialVerdict::NoLoss
        );
        let mut short = replay.clone();
        short.orders_received = 37;
        assert_eq!(
            TrialVerdict::of(1000, 20_000.0, &short, &trader).to_string(),
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
            TrialVerdict::of(1000, 20_000.0, &replay, &trader),
            TrialVerdict::NoLoss
        );
        // Doubled but only by a few µs: still level.
        replay.tick_to_trade_tenths[9] = tenth(10.5);
        assert_eq!(
            TrialVerdict::of(1000, 20_000.0, &replay, &trader),
            TrialVerdict::NoLoss
        );
        // A queue filling: the median climbs through the trial.
        replay.tick_to_trade_tenths[9] = tenth(800.0);
        assert_eq!(
            TrialVerdict::of(1000, 20_000.0, &replay, &trader),
            TrialVerdict::Saturated {
                first_us: 5.0,
                last_us: 800.0
            }
        );
        // Loss is named before growth.
        let mut lossy = trader.clone();
        lossy.counters.messages = 990;
        assert_eq!(
            TrialVerdict::of(1000, 20_000.0, &replay, &lossy),
            TrialVerdict::TicksLost(10)
        );
        // Without the tenths (an older replay) nothing can be said: no verdict from them.
        replay.tick_to_trade_tenths.clear();
        assert_eq!(
            TrialVerdict::of(1000, 20_000.0, &replay, &trader),
            TrialVerdict::NoLoss
        );
    }

    use fixtures::trial;

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
        let o = Conditions {
            source: "gbm".into(),
            trader_args: Vec::new(),
            count: 1000,
            seconds: 2.0,
            batch: 1,
            trader_cpu: 1,
            replay_cpu: 0,
            exchange_io: ExchangeIo::Xdp,
            confirm: 1,
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
        let md = markdown(&o, std::slice::from_ref(&search));
        assert!(
            md.starts_with(
                "zero-loss rate on gbm, each trial at least 1000 messages and 2 s, 1 per \
                 MoldUDP64 packet, trader cpu1 spinning, replay cpu0 (AF_XDP sender, one core);"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| xdp | 20000 (20000) | 7600 | 2.50 | 310 | 96 % | 540 | 40000 | 3 messages lost | the \
                 trader's RX (messages dropped before it took them); the trader busy 96 % of it: its \
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
        let json = serde_json::to_value(json(&[search])).unwrap();
        assert_eq!(json["schema_version"], crate::SCHEMA_VERSION);
        assert_eq!(json["paths"][0]["path"], "xdp");
        assert_eq!(json["paths"][0]["zero_loss_rate"], 20_000.0);
        assert_eq!(json["paths"][0]["trials"][2]["why"], "3 messages lost");
        assert_eq!(json["paths"][0]["trials"][0]["messages"], 40_000);
        assert_eq!(json["paths"][0]["trials"][0]["bound"], "-");
        assert_eq!(
            json["paths"][0]["latency_under_load"][1]["tick_to_trade"]["p50_us"],
            20.0
        );
        assert_eq!(json["paths"][0]["latency_under_load"][2]["ok"], false);
        assert_eq!(
            json["paths"][0]["latency_under_load"][2]["delivered"]["orders"],
            39
        );
    }
}
