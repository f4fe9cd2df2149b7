//! The benchmark report: a table on stdout, and in the results folder `report.json`,
//! `report.md` and `latency.svg` (percentile plot, HdrHistogram style) beside the `.hgrm` files.
use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use paths::{Rate, Source, TraderPath, Wait, XdpMode, XdpStages};
use results::{
    ContextSwitches, FloorReport, Machine, ReplayReport, Summary, ThreadTime, TraderReport,
    plot::{self, Axis, Plot, Series},
};
use serde::{Deserialize, Serialize};

use crate::{
    run::{Ends, Options, Row},
    sockperf::RoundTrip,
};

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

/// The tick-to-trade ratios shown under the tables, where both rows were measured: each
/// compares rows against the same exchange side (the kernel-UDP exchange for xdp, udp,
/// trigger, trigger-block and reflect; the AF_XDP exchange for xdp-bypass and reflect-bypass),
/// so the harness's own cost is the same on both sides of the ratio.
const RATIOS: [(Row, Row); 7] = [
    (Row::XDP, Row::UDP),
    (Row::XDP, Row::Reflect),
    (Row::UDP, Row::Reflect),
    (Row::XDP, Row::TRIGGER),
    (Row::TRIGGER, Row::Reflect),
    (Row::TRIGGER_BLOCK, Row::Reflect),
    (Row::XdpBypass, Row::ReflectBypass),
];

/// The mark on a figure from a trial that lost ticks or orders.
pub(crate) const LOSS_MARK: &str = "⚠";

/// What a trial delivered: the orders that came back against those expected, and the ticks
/// the trader never got. Lost orders never enter the latency histogram, so a percentile row
/// without this beside it hides them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Delivery {
    /// Orders taken by the exchange.
    pub(crate) orders: u64,
    /// Orders the strategy (or the reflector: one per tick) should have sent.
    pub(crate) expected: u64,
    /// Messages the trader never got (its gaps less those that came late). The reflector has
    /// no trader loop to count them: its lost ticks show as lost orders.
    pub(crate) ticks_lost: u64,
}

impl Delivery {
    pub(crate) fn of(replay: &ReplayReport, trader: &TraderReport) -> Delivery {
        let c = &trader.counters;
        Delivery {
            orders: replay.orders_received,
            expected: replay.parity.expected_orders,
            ticks_lost: c.gap_messages.saturating_sub(c.late_messages),
        }
    }

    /// Anything lost: an expected order that never came, or a tick that never arrived.
    pub(crate) fn lost(self) -> bool {
        self.orders < self.expected || self.ticks_lost > 0
    }
}

/// `40/40`; from a trial that lost anything `⚠ 37/40`, `⚠ 40/40, 3 ticks lost`.
impl std::fmt::Display for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Delivery {
            orders,
            expected,
            ticks_lost,
        } = *self;
        if self.lost() {
            write!(f, "{LOSS_MARK} ")?;
        }
        write!(f, "{orders}/{expected}")?;
        if ticks_lost > 0 {
            write!(f, ", {ticks_lost} {} lost", ticks(ticks_lost))?;
        }
        Ok(())
    }
}

/// "tick" or "ticks".
fn ticks(n: u64) -> &'static str {
    if n == 1 { "tick" } else { "ticks" }
}

/// What a tick-to-trade histogram measured: open loop (each tick timed from its schedule), or
/// closed loop (`--rate max`: each tick is due when the previous send returns, so the figure
/// is a round trip under the harness's pacing, not tick-to-trade).
pub(crate) fn latency_name(replay: &ReplayReport) -> &'static str {
    if replay.closed_loop {
        "closed-loop round trip (--rate max)"
    } else {
        "tick-to-trade"
    }
}

/// Where the exchange's arrival times came from, for the harness-delay row.
fn arrival_name(a: results::Arrival) -> &'static str {
    match a {
        results::Arrival::KernelTimestamp => "arrival: kernel SO_TIMESTAMPNS",
        results::Arrival::XdpTimestamp => "arrival: exchange XDP bpf_ktime",
    }
}

/// The three accounts of a strategy run, compared: the trader's own ledger of the orders it
/// sent (its report), the exchange's booking of the orders it received, and the batch
/// backtest of the same quantised ticks. `None` when they agree to the bit (or there is no
/// strategy: the reflector); otherwise which disagree.
pub(crate) fn accounts_differ(replay: &ReplayReport, trader: &TraderReport) -> Option<String> {
    if replay.expect != paths::Expect::Signals {
        return None;
    }
    let p = &replay.parity;
    let a = &trader.account;
    let trader_v = (a.trades, a.pnl.to_bits());
    let exchange_v = (p.live_trades, p.live_pnl.to_bits());
    let batch_v = (p.batch_trades, p.batch_pnl.to_bits());
    if trader_v == exchange_v && exchange_v == batch_v {
        return None;
    }
    Some(format!(
        "accounts differ: trader {} trades, PnL {:.4}; exchange {} trades, PnL {:.4}; batch {} \
         trades, PnL {:.4}",
        a.trades, a.pnl, p.live_trades, p.live_pnl, p.batch_trades, p.batch_pnl
    ))
}

/// What is wrong with a lab row, if anything: lost orders or ticks, broken parity (a strategy
/// run), frames the XDP program could not hand to the socket. `--strict` fails on any.
pub(crate) fn problems(row: &str, replay: &ReplayReport, trader: &TraderReport) -> Vec<String> {
    let mut p = Vec::new();
    let d = Delivery::of(replay, trader);
    if d.orders != d.expected {
        p.push(format!("{row}: {} of {} orders", d.orders, d.expected));
    }
    if d.ticks_lost > 0 {
        p.push(format!(
            "{row}: {} {} lost",
            d.ticks_lost,
            ticks(d.ticks_lost)
        ));
    }
    if replay.expect == paths::Expect::Signals && !replay.parity.ok() {
        p.push(format!("{row}: {}", replay.parity.verdict));
    }
    if let Some(differ) = accounts_differ(replay, trader) {
        p.push(format!("{row}: {differ}"));
    }
    if replay.unstamped_datagrams > 0 {
        p.push(format!(
            "{row}: {} order datagrams came without an arrival stamp (counted from the \
             replay's read)",
            replay.unstamped_datagrams
        ));
    }

    if let (Some(t), Some(x)) = (trader.trigger, trader.xdp_counters)
        && t.fired != x.trigger_fired
    {
        p.push(format!(
            "{row}: the program fired {} orders, the trader read {} back (a fire it never saw)",
            x.trigger_fired, t.fired
        ));
    }
    if let Some(t) = trader.trigger.filter(|t| t.mismatch > 0) {
        p.push(format!(
            "{row}: {} of {} fired orders were not the trader's (trigger.mismatch)",
            t.mismatch, t.fired
        ));
    }
    if let Some(s) = &replay.session {
        for (n, what) in [
            (s.protocol_errors, "connections ended by a protocol error"),
            (s.retransmissions, "Enter Orders ignored as retransmissions"),
            (s.rejected, "Enter Orders rejected"),
            (s.unstamped_reads, "order reads without an arrival stamp"),
            (
                s.outside_feed,
                "orders that came while the feed wasn't running",
            ),
        ] {
            if n > 0 {
                p.push(format!("{row}: {n} {what} (the session's report)"));
            }
        }
    }
    if let Some(o) = &trader.order_session {
        for (n, what) in [
            (o.disconnects, "order-session connections lost"),
            (
                o.protocol_errors,
                "order-session protocol errors at the trader",
            ),
        ] {
            if n > 0 {
                p.push(format!("{row}: {n} {what}"));
            }
        }
        if o.not_sent > 0 {
            p.push(format!(
                "{row}: {} orders not sent (no order session logged in at the time)",
                o.not_sent
            ));
        }
        if o.accepted + o.rejected < o.sent || !o.end_of_session {
            p.push(format!(
                "{row}: {} of {} orders answered{}",
                o.accepted + o.rejected,
                o.sent,
                if o.end_of_session {
                    ""
                } else {
                    ", and the session's end never came"
                }
            ));
        }
    }
    if let Some(x) = trader.xdp_counters.filter(|x| x.redirect_failed > 0) {
        p.push(format!(
            "{row}: {} frames the XDP program could not redirect to the AF_XDP socket \
             (redirect_failed: they arrived on an RX queue with no AF_XDP socket)",
            x.redirect_failed
        ));
    }
    p
}

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
    let mut t = markdown(o, &machine, measured, sockperf, cpu_floor);
    // The machine's latency readiness, so every figure travels with its conditions.
    let _ = writeln!(t, "\nmachine readiness (`cargo xtask doctor`):");
    for line in crate::doctor::summary(o.trader_cpu) {
        let _ = writeln!(t, "- {line}");
    }
    let curves = measured
        .iter()
        .map(|m| {
            let text = std::fs::read_to_string(&m.hgrm)
                .with_context(|| format!("reading {}", m.hgrm.display()))?;
            let name = if m.replay.closed_loop {
                format!("{} (closed-loop)", m.row)
            } else {
                m.row.as_str().to_owned()
            };
            Ok((name, parse_hgrm(&text)))
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
    trigger_table(&mut t, measured);
    session_table(&mut t, measured);
    lateness_table(&mut t, measured);
    stages_table(&mut t, measured);
    machine_table(&mut t, measured);
    ratios(&mut t, measured);
    verdict(&mut t, measured);
    t
}

/// What a reader should know about a row's figures that is not a fault of the run (so not a
/// problem for `--strict`): orders whose arrival stamp came before their tick was due, which
/// the clocks' conversion allows now and then (`afxdp::clock::RealToMono`).
pub(crate) fn notes(row: &str, replay: &ReplayReport) -> Vec<String> {
    let mut n = Vec::new();
    if replay.orders_stamped_before_due > 0 {
        n.push(format!(
            "{row}: {} orders were stamped on arrival before their tick was due (the arrival \
             stamp's clock and the schedule's disagreed): booked, but left out of the latency \
             figures",
            replay.orders_stamped_before_due
        ));
    }
    n
}

/// The run's verdict, last: what a reader (or `--strict`) needs to know before any figure.
fn verdict(t: &mut String, measured: &[Measured]) {
    let problems: Vec<String> = measured
        .iter()
        .flat_map(|m| problems(m.row.as_str(), &m.replay, &m.trader))
        .collect();
    let _ = writeln!(t);
    if problems.is_empty() {
        let _ = writeln!(
            t,
            "verdict: ok: every run delivered every expected order, no tick was lost, every \
             strategy run kept parity"
        );
    } else {
        let _ = writeln!(t, "verdict: {} problem(s):", problems.len());
        for p in problems {
            let _ = writeln!(t, "- {p}");
        }
    }
    for n in measured
        .iter()
        .flat_map(|m| notes(m.row.as_str(), &m.replay))
    {
        let _ = writeln!(t, "note: {n}");
    }
}

fn conditions(t: &mut String, o: &Options, m: &Machine) {
    let _ = writeln!(
        t,
        "tick-to-trade, {} · rate {} msg/s · batch {} · n={} · xdp-mode {} · wait {} · trader cpu{} / replay cpu{}{}",
        o.source,
        o.rate,
        o.batch,
        o.n,
        o.xdp_mode,
        o.wait,
        o.trader_cpu,
        o.replay_cpu,
        if o.isolate {
            format!(" · cpu{} isolated at runtime (--isolate)", o.trader_cpu)
        } else {
            String::new()
        }
    );
    match o.xdp_stages {
        Some(XdpStages::Each) => {
            let _ = writeln!(
                t,
                "XDP programs timed stage by stage (--xdp-stages): a mark (a clock read) per \
                 stage is in every figure of the rows with a program; compare with other timed \
                 runs only"
            );
        }
        Some(XdpStages::Run) => {
            let _ = writeln!(
                t,
                "XDP programs timed at each run's two ends (--xdp-stages=run): the clock reads at \
                 each run's start and end are in every figure of the rows with a program; compare \
                 with other timed runs only"
            );
        }
        None => {}
    }
    let _ = writeln!(
        t,
        "machine: {} · {} cores · kernel {} · {LINK}",
        m.cpu, m.cores, m.kernel
    );
    let _ = writeln!(t);
}

/// One latency row: `| label | measure | delivered | count | min | ... | mean | saturated |`;
/// `delivered` and `saturated` are `-` where they don't apply (the floors, sockperf).
fn summary_row(
    t: &mut String,
    label: &str,
    measure: &str,
    delivered: Option<Delivery>,
    s: &Summary,
    saturated: Option<u64>,
) {
    let show = |x: Option<String>| x.unwrap_or_else(|| "-".to_owned());
    let _ = write!(
        t,
        "| {label} | {measure} | {} | {} |",
        show(delivered.map(|d| d.to_string())),
        s.count
    );
    for (_, value) in COLUMNS {
        // An empty histogram has no percentiles: a 0.00 would read as a measurement.
        if s.count == 0 {
            let _ = write!(t, " - |");
        } else {
            let _ = write!(t, " {:.2} |", value(s));
        }
    }
    let _ = writeln!(t, " {} |", show(saturated.map(|n| n.to_string())));
}

fn latency_table(
    t: &mut String,
    measured: &[Measured],
    sockperf: Option<&RoundTrip>,
    cpu_floor: Option<&FloorReport>,
) {
    let _ = write!(t, "| path | measure | delivered | count |");
    for (name, _) in COLUMNS {
        let _ = write!(t, " {name} µs |");
    }
    let _ = writeln!(t, " saturated |");
    let _ = write!(t, "|---|---|---:|---:|");
    for _ in COLUMNS {
        let _ = write!(t, "---:|");
    }
    let _ = writeln!(t, "---:|");
    for m in measured {
        let delivered = Delivery::of(&m.replay, &m.trader);
        let (seen, harness) = (
            format!("{}, seen by the replay", latency_name(&m.replay)),
            format!("harness delay ({})", arrival_name(m.replay.arrival)),
        );
        for (i, (what, s)) in [
            (latency_name(&m.replay), &m.replay.tick_to_trade),
            (seen.as_str(), &m.replay.tick_to_trade_seen),
            (harness.as_str(), &m.replay.harness_delay),
            ("trader RX→TX", &m.trader.rx_to_tx),
            ("engine on_tick", &m.trader.engine),
        ]
        .into_iter()
        .enumerate()
        {
            // The reflector has no trader loop: nothing went through RX→TX or the engine.
            // The replay's rows are always shown: an empty one says nothing came back.
            if i < 3 || s.count > 0 {
                summary_row(
                    t,
                    m.row.as_str(),
                    what,
                    Some(delivered),
                    s,
                    Some(s.saturated),
                );
            }
        }
    }
    if let Some(f) = cpu_floor {
        let [ping, pong] = f.cpus;
        let measure = format!(
            "shared-memory ping-pong RTT, cpu{ping}↔cpu{pong}, {:.1} s",
            f.seconds
        );
        summary_row(
            t,
            Row::CpuFloor.as_str(),
            &measure,
            None,
            &f.round_trip,
            Some(f.round_trip.saturated),
        );
    }
    if let Some(s) = sockperf {
        summary_row(
            t,
            Row::Sockperf.as_str(),
            "kernel UDP ping-pong RTT, 64 B, blocking",
            None,
            &s.summary(),
            None,
        );
    }
    let _ = writeln!(t);
}

fn counts_table(t: &mut String, measured: &[Measured]) {
    let _ = writeln!(
        t,
        "| path | sent | msg/s | orders | expected | gaps | late | dup | malformed | late sends | redirect failed | parity |"
    );
    let _ = writeln!(
        t,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for Measured {
        row,
        replay,
        trader,
        ..
    } in measured
    {
        let c = &trader.counters;
        let p = &replay.parity;
        let parity = match (p.ok(), accounts_differ(replay, trader)) {
            (true, None) => format!(
                "ok ({} trades, PnL {:.4}; trader = exchange = batch)",
                p.live_trades, p.live_pnl
            ),
            (true, Some(differ)) => format!("{LOSS_MARK} {differ}"),
            (false, _) => p.verdict.to_string(),
        };
        // Throughput: what the send loop achieved (with --rate max, the only figure that is
        // not closed-loop).
        let msgs = format!("{:.0}", replay.achieved_rate_per_s);
        // Frames for the sockets that the XDP program could not redirect (a queue without
        // one); none on a path without AF_XDP sockets.
        let redirect_failed = trader
            .xdp_counters
            .filter(|_| trader.path.spec().io.afxdp())
            .map_or("-".to_owned(), |x| {
                if x.redirect_failed > 0 {
                    format!("{LOSS_MARK} {}", x.redirect_failed)
                } else {
                    "0".to_owned()
                }
            });
        let _ = writeln!(
            t,
            "| {row} | {} | {msgs} | {} | {} | {} | {} | {} | {} | {} | {redirect_failed} | {parity} |",
            replay.sent_messages,
            replay.orders_received,
            p.expected_orders,
            c.gap_messages,
            c.late_messages,
            c.duplicate_messages,
            // Everything the trader refused: short or lying packets, bad messages, other
            // sessions, sequence numbers nothing confirmed.
            c.malformed_messages
                + c.malformed_packets
                + c.malformed_framing
                + c.wrong_session
                + c.suspect_sequence
                + c.unconfirmed_packets,
            replay.late_sends,
        );
    }
}

/// The rows whose orders went over a SoupBinTCP session: both ends' counts, the trader's
/// round trip to each order's Order Accepted, and what the TCP orders cost against the same
/// path's UDP orders (its p50 and p99 tick-to-trade, same run).
fn session_table(t: &mut String, measured: &[Measured]) {
    let rows: Vec<(
        &Measured,
        &results::SessionReport,
        &results::OrderSessionReport,
    )> = measured
        .iter()
        .filter_map(|m| {
            Some((
                m,
                m.replay.session.as_ref()?,
                m.trader.order_session.as_ref()?,
            ))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        t,
        "\norder session (OUCH 5.0 over SoupBinTCP 3.00): what each end counted, the trader's \
         tick RX to Order Accepted (µs), and the cost against the same path's UDP orders\n"
    );
    let _ = writeln!(
        t,
        "| path | sent | not sent | taken | executed | answers (trader) | connections | logins | \
         coalesced reads | RX→ack p50 | RX→ack p99 | RX→ack p99.9 | Δp50 vs udp orders | \
         Δp99 vs udp orders |"
    );
    let _ = writeln!(
        t,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (m, s, o) in rows {
        // No order, no round trip: a dash, not a zero.
        let ack = |v: f64| {
            if o.rx_to_ack.count == 0 {
                "-".to_owned()
            } else {
                format!("{v:.2}")
            }
        };
        let udp = measured
            .iter()
            .find(|u| u.row == Row::Path(m.ends.trader, None) && u.replay.session.is_none());
        let delta = |f: fn(&Summary) -> f64| {
            udp.map_or_else(
                || "-".to_owned(),
                |u| {
                    format!(
                        "{:+.2}",
                        f(&m.replay.tick_to_trade) - f(&u.replay.tick_to_trade)
                    )
                },
            )
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            m.row,
            o.sent,
            o.not_sent,
            s.enter_orders,
            s.executed,
            o.accepted + o.executed + o.canceled + o.rejected,
            s.connections,
            s.logins,
            s.coalesced_reads,
            ack(o.rx_to_ack.p50_us),
            ack(o.rx_to_ack.p99_us),
            ack(o.rx_to_ack.p999_us),
            delta(|x| x.p50_us),
            delta(|x| x.p99_us),
        );
    }
}

/// Each row's send lateness: how late the replay's loop started each scheduled send, which
/// every tick-to-trade figure includes. Shown when the replay measured it.
fn lateness_table(t: &mut String, measured: &[Measured]) {
    if measured.iter().all(|m| m.replay.send_lateness.count == 0) {
        return;
    }
    let _ = writeln!(
        t,
        "\nthe replay's send lateness (µs): from each tick's due time to when the replay started \
         sending it, inside every tick-to-trade figure above; and tick-to-trade counted from that \
         start instead, with the TCP rows' p50 over the same path's UDP orders\n"
    );
    let _ = writeln!(
        t,
        "| path | lateness p50 | p99 | p99.9 | tick-to-trade from the send p50 | p99 | p99.9 | \
         Δp50 vs udp orders |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for m in measured.iter().filter(|m| m.replay.send_lateness.count > 0) {
        let (l, f) = (&m.replay.send_lateness, &m.replay.tick_to_trade_from_send);
        let udp = measured
            .iter()
            .find(|u| u.row == Row::Path(m.ends.trader, None) && u.replay.session.is_none());
        let delta = match udp {
            Some(u) if m.replay.session.is_some() => {
                format!("{:+.2}", f.p50_us - u.replay.tick_to_trade_from_send.p50_us)
            }
            _ => "-".to_owned(),
        };
        let _ = writeln!(
            t,
            "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {delta} |",
            m.row, l.p50_us, l.p99_us, l.p999_us, f.p50_us, f.p99_us, f.p999_us
        );
    }
}

/// The trigger path's rows: which orders the XDP program fired and which the trader sent
/// itself (and why), whether every fired order was the trader's, and what arming cost.
fn trigger_table(t: &mut String, measured: &[Measured]) {
    let rows: Vec<(&Measured, &results::TriggerReport)> = measured
        .iter()
        .filter_map(|m| Some((m, m.trader.trigger.as_ref()?)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "| path | wait | armed-hit rate | fired | sent by the trader | of which unarmed | of which arm late | mismatch | arms | not armed | arm cost p50 µs | arm cost p99 µs |"
    );
    let _ = writeln!(
        t,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (m, r) in rows {
        let u = &r.unarmed;
        let not_armed = u.warming_up + u.level + u.held + u.never + u.unsettled + u.other;
        let mismatch = if r.mismatch > 0 {
            format!("{LOSS_MARK} {}", r.mismatch)
        } else {
            "0".to_owned()
        };
        // No order at all: no rate to give.
        let hit_rate = if r.fired + r.software_orders == 0 {
            "-".to_owned()
        } else {
            format!("{:.2} %", r.hit_rate * 100.0)
        };
        let _ = writeln!(
            t,
            "| {} | {} | {hit_rate} | {} | {} | {} | {} | {mismatch} | {} | {not_armed} | {:.2} | {:.2} |",
            m.row,
            trigger_wait(m.trader.wait, r),
            r.fired,
            r.software_orders,
            r.unarmed_orders,
            r.arm_late,
            r.arms,
            r.arm_cost.p50_us,
            r.arm_cost.p99_us,
        );
    }
}

/// The trigger table's wait column: how the trader waited, and the trigger's switches where
/// the report says how they were (`--no-fired-wakeup`, `--no-arm-demote`,
/// `--fired-poll-every`).
fn trigger_wait(wait: impl std::fmt::Display, r: &results::TriggerReport) -> String {
    let mut s = wait.to_string();
    if s == "block" && r.woken_on_fire == Some(false) {
        s.push_str(", woken by the next packet");
    }
    match r.arm_demoted {
        Some(true) => s.push_str(", arm demoted"),
        Some(false) => s.push_str(", arm not demoted"),
        None => {}
    }
    if s.starts_with("spin")
        && let Some(n) = r.fired_poll_every
    {
        let _ = write!(s, ", record read every {n} turns");
    }
    s
}

/// The stages a table of `--xdp-stages` shows, in program order (the first, the clock read,
/// is its own column).
const STAGE_COLUMNS: [&str; 10] = [
    "classify",
    "arm_read",
    "header_checks",
    "udp_checksum",
    "mark_move",
    "match",
    "order_write",
    "record",
    "redirect",
    "count_and_return",
];

/// `--xdp-stages`: where each row's XDP program runs spend their time, by outcome, mean ns per
/// run net of the one clock read each stage includes, and each run against the reflector's
/// (the `reflect` row's, when the bench has one). Runs timed at their ends only
/// (`--xdp-stages=run`) have one stage, the run: their table has that column alone.
fn stages_table(t: &mut String, measured: &[Measured]) {
    let rows: Vec<(&Measured, &results::OutcomeStages)> = measured
        .iter()
        .filter_map(|m| Some((m, m.trader.xdp_program.as_ref()?.stages.as_ref()?)))
        .flat_map(|(m, stages)| stages.iter().map(move |o| (m, o)))
        .filter(|(_, o)| o.outcome != "other")
        .collect();
    if rows.is_empty() {
        return;
    }
    let reflector = rows
        .iter()
        .find(|(m, o)| m.row == Row::Reflect && o.outcome == "reflected")
        .map(|(_, o)| o.total_ns());
    let versus = |ns: f64| match reflector {
        Some(r) if r > 0.0 => format!("{:.2}×", ns / r),
        _ => "-".to_owned(),
    };
    let run_only = rows
        .iter()
        .all(|(_, o)| o.stages.iter().all(|s| s.stage == results::RUN_STAGE));
    let columns: &[&str] = if run_only {
        &[results::RUN_STAGE]
    } else {
        &STAGE_COLUMNS
    };
    let _ = writeln!(t);
    if run_only {
        let _ = writeln!(
            t,
            "XDP program runs (`--xdp-stages=run`): mean ns per run, timed at its start and its \
             end only (nothing inside waits for a clock read), net of one clock read (the clock \
             column). The program's run only: the XDP_TX or redirect itself completes after it \
             returns (and waits for the run's stores)."
        );
    } else {
        let _ = writeln!(
            t,
            "XDP program stages (`--xdp-stages`): mean ns per run, each net of one mark (a \
             `bpf_ktime_get_ns` and its store: the clock column); `-`: a stage those runs don't \
             pass. The program's run only: the XDP_TX or redirect itself completes after it \
             returns (and waits for the run's stores). Each mark waits for the loads before it, \
             and a run with more marks waits more: against the reflector's run (three marks), \
             `--xdp-stages=run` is the fairer ratio."
        );
    }
    let _ = writeln!(t);
    // Timed at its ends, the run is the total: one column.
    let stage_header = if run_only {
        String::new()
    } else {
        format!(" {} |", columns.join(" | "))
    };
    let _ = writeln!(
        t,
        "| path | outcome | runs | clock read |{stage_header} {} | vs the reflector's run |",
        if run_only { "run" } else { "total" }
    );
    let _ = writeln!(
        t,
        "|---|---|---:|---:|{}---:|---:|",
        if run_only {
            String::new()
        } else {
            "---:|".repeat(columns.len())
        }
    );
    for (m, o) in rows {
        let cells: String = if run_only {
            String::new()
        } else {
            columns
                .iter()
                .map(|name| {
                    o.stage(name)
                        .map_or(" - |".to_owned(), |ns| format!(" {ns:.0} |"))
                })
                .collect()
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {:.0} |{cells} {:.0} | {} |",
            m.row,
            o.outcome,
            o.runs,
            o.clock_read_ns,
            o.total_ns(),
            versus(o.total_ns())
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
        "| path | seconds | replay preempted | replay waited ms | replay stolen ms | replay minor faults | trader preempted | trader waited ms | trader stolen ms | trader minor faults |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let cells = |cs: &ContextSwitches, time: &ThreadTime| {
        format!(
            "{} | {:.1} | {} | {}",
            cs.involuntary,
            time.waited_ms,
            // A thread that slept: its sleep and steal look the same, so no figure.
            time.stolen_ms.map_or("-".to_owned(), |x| format!("{x:.1}")),
            time.minor_faults,
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
            let closed = x.replay.closed_loop || y.replay.closed_loop;
            let what = if closed {
                "closed-loop round trip"
            } else {
                "tick-to-trade"
            };
            let _ = write!(t, "\nratio {a}/{b} {what}:");
            for (name, value) in COLUMNS {
                let (x, y) = (
                    value(&x.replay.tick_to_trade),
                    value(&y.replay.tick_to_trade),
                );
                let _ = write!(t, " {name} {:.2}×", x / y);
            }
            let lossy: Vec<&str> = [x, y]
                .iter()
                .filter(|m| Delivery::of(&m.replay, &m.trader).lost())
                .map(|m| m.row.as_str())
                .collect();
            if !lossy.is_empty() {
                let _ = write!(
                    t,
                    " ({LOSS_MARK} {} lost orders or ticks)",
                    lossy.join(", ")
                );
            }
            let _ = writeln!(t);
        }
    }
}

/// (percentile as 0..1, value µs) rows of an `.hgrm` file: rows whose value and percentile
/// are numbers a plot can place (finite, the value positive, the percentile in 0..=1).
pub(crate) fn parse_hgrm(text: &str) -> Vec<(f64, f64)> {
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
pub(crate) fn svg(curves: &[(String, Vec<(f64, f64)>)], title: &str) -> String {
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
    use results::ParityVerdict;

    use super::*;

    /// The wait column names the trigger's switches as the report gives them, and nothing
    /// for an older report that doesn't.
    #[test]
    fn the_trigger_wait_column_says_how_it_was_woken_and_whether_the_arm_was_demoted() {
        let mut r = results::TriggerReport {
            woken_on_fire: Some(false),
            arm_demoted: Some(true),
            ..results::TriggerReport::default()
        };
        assert_eq!(
            trigger_wait("block", &r),
            "block, woken by the next packet, arm demoted"
        );
        assert_eq!(trigger_wait("spin", &r), "spin, arm demoted");
        r.fired_poll_every = Some(32);
        assert_eq!(
            trigger_wait("spin", &r),
            "spin, arm demoted, record read every 32 turns"
        );
        assert_eq!(
            trigger_wait("block", &r),
            "block, woken by the next packet, arm demoted",
            "a blocking trader reads it after every wake-up"
        );
        r.woken_on_fire = Some(true);
        r.arm_demoted = Some(false);
        assert_eq!(trigger_wait("block", &r), "block, arm not demoted");
        r.woken_on_fire = None;
        r.arm_demoted = None;
        assert_eq!(trigger_wait("block", &r), "block");
    }
    use crate::fixtures;

    /// Five lab rows as a bench with `--floors` and sockperf measures them: a strategy run
    /// that kept parity, one that lost orders and diverged (and slept: no stolen figure), the
    /// reflector against each exchange (no trader loop, so no RX→TX or engine rows) and the
    /// bypass harness, whose XDP program failed to redirect two frames.
    fn measured(hgrm_dir: &Path) -> Vec<Measured> {
        let mut udp = fixtures::replay(20.0);
        udp.parity.verdict = ParityVerdict::Diverged {
            first_divergence: 77,
            missing_orders: 3,
        };
        udp.orders_received = 37;
        udp.tick_to_trade.count = 37;
        udp.thread_time.stolen_ms = None;
        let mut udp_trader = fixtures::trader(TraderPath::Udp);
        udp_trader.counters.gap_messages = 4;
        let reflect = |base: f64, io: paths::ExchangeIo| {
            let mut r = fixtures::replay(base);
            r.exchange_io = io;
            r.expect = paths::Expect::Every;
            r.parity.verdict = ParityVerdict::NotApplicable {
                answered: 1000,
                ticks: 1000,
            };
            r.parity.expected_orders = 1000;
            r.orders_received = 1000;
            r.tick_to_trade.count = 1000;
            r
        };
        let mut reflector = fixtures::trader(TraderPath::Reflect);
        reflector.rx_to_tx.count = 0;
        reflector.engine.count = 0;
        reflector.counters = results::TraderCounters::default();
        reflector.xdp_counters = Some(results::XdpCounters {
            reflected: 1000,
            ..Default::default()
        });
        let mut xdp = fixtures::trader(TraderPath::Xdp);
        xdp.xdp_counters = Some(results::XdpCounters {
            redirected: 1000,
            ..Default::default()
        });
        let mut bypass = xdp.clone();
        bypass.xdp_counters = Some(results::XdpCounters {
            redirected: 1000,
            redirect_failed: 2,
            ..Default::default()
        });
        let mut bypass_replay = fixtures::replay(8.0);
        bypass_replay.exchange_io = paths::ExchangeIo::Xdp;
        [
            (Row::XDP, fixtures::replay(10.0), xdp),
            (Row::UDP, udp, udp_trader),
            (
                Row::Reflect,
                reflect(5.0, paths::ExchangeIo::Udp),
                reflector.clone(),
            ),
            (Row::XdpBypass, bypass_replay, bypass),
            (
                Row::ReflectBypass,
                reflect(4.0, paths::ExchangeIo::Xdp),
                reflector,
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

    /// The report, character for character: delivered/expected and saturation beside every
    /// percentile row, loss marked, throughput and redirect failures in the counts, ratios
    /// only against the same exchange side, and the verdict last.
    const REPORT_MD: &str = "\
tick-to-trade, gbm:42:150000 · rate 20k msg/s · batch 1 · n=6 · xdp-mode native · wait spin · trader cpu1 / replay cpu0
machine: Test CPU @ 3.00GHz · 2 cores · kernel 6.1.0-test · veth pair between two network namespaces (copy-mode AF_XDP)

| path | measure | delivered | count | min µs | p50 µs | p90 µs | p99 µs | p99.9 µs | p99.99 µs | max µs | mean µs | saturated |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| xdp | tick-to-trade | 40/40 | 40 | 10.00 | 20.00 | 30.00 | 40.00 | 50.00 | 60.00 | 70.00 | 80.00 | 0 |
| xdp | tick-to-trade, seen by the replay | 40/40 | 40 | 10.50 | 21.00 | 31.50 | 42.00 | 52.50 | 63.00 | 73.50 | 84.00 | 0 |
| xdp | harness delay (arrival: kernel SO_TIMESTAMPNS) | 40/40 | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 0 |
| xdp | trader RX→TX | 40/40 | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 0 |
| xdp | engine on_tick | 40/40 | 1000 | 0.01 | 0.02 | 0.03 | 0.04 | 0.05 | 0.06 | 0.07 | 0.08 | 0 |
| udp | tick-to-trade | ⚠ 37/40, 2 ticks lost | 37 | 20.00 | 40.00 | 60.00 | 80.00 | 100.00 | 120.00 | 140.00 | 160.00 | 0 |
| udp | tick-to-trade, seen by the replay | ⚠ 37/40, 2 ticks lost | 40 | 20.50 | 41.00 | 61.50 | 82.00 | 102.50 | 123.00 | 143.50 | 164.00 | 0 |
| udp | harness delay (arrival: kernel SO_TIMESTAMPNS) | ⚠ 37/40, 2 ticks lost | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 0 |
| udp | trader RX→TX | ⚠ 37/40, 2 ticks lost | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 0 |
| udp | engine on_tick | ⚠ 37/40, 2 ticks lost | 1000 | 0.01 | 0.02 | 0.03 | 0.04 | 0.05 | 0.06 | 0.07 | 0.08 | 0 |
| reflect | tick-to-trade | 1000/1000 | 1000 | 5.00 | 10.00 | 15.00 | 20.00 | 25.00 | 30.00 | 35.00 | 40.00 | 0 |
| reflect | tick-to-trade, seen by the replay | 1000/1000 | 40 | 5.50 | 11.00 | 16.50 | 22.00 | 27.50 | 33.00 | 38.50 | 44.00 | 0 |
| reflect | harness delay (arrival: kernel SO_TIMESTAMPNS) | 1000/1000 | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 0 |
| xdp-bypass | tick-to-trade | 40/40 | 40 | 8.00 | 16.00 | 24.00 | 32.00 | 40.00 | 48.00 | 56.00 | 64.00 | 0 |
| xdp-bypass | tick-to-trade, seen by the replay | 40/40 | 40 | 8.50 | 17.00 | 25.50 | 34.00 | 42.50 | 51.00 | 59.50 | 68.00 | 0 |
| xdp-bypass | harness delay (arrival: kernel SO_TIMESTAMPNS) | 40/40 | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 0 |
| xdp-bypass | trader RX→TX | 40/40 | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 0 |
| xdp-bypass | engine on_tick | 40/40 | 1000 | 0.01 | 0.02 | 0.03 | 0.04 | 0.05 | 0.06 | 0.07 | 0.08 | 0 |
| reflect-bypass | tick-to-trade | 1000/1000 | 1000 | 4.00 | 8.00 | 12.00 | 16.00 | 20.00 | 24.00 | 28.00 | 32.00 | 0 |
| reflect-bypass | tick-to-trade, seen by the replay | 1000/1000 | 40 | 4.50 | 9.00 | 13.50 | 18.00 | 22.50 | 27.00 | 31.50 | 36.00 | 0 |
| reflect-bypass | harness delay (arrival: kernel SO_TIMESTAMPNS) | 1000/1000 | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 0 |
| cpu floor | shared-memory ping-pong RTT, cpu0↔cpu1, 1.0 s | - | 1000000 | 0.10 | 0.20 | 0.30 | 0.40 | 0.50 | 0.60 | 0.70 | 0.80 | 0 |
| sockperf | kernel UDP ping-pong RTT, 64 B, blocking | - | 63015 | 12.58 | 13.37 | 15.74 | 30.66 | 3342.39 | 8048.48 | 12053.41 | 24.58 | - |

| path | sent | msg/s | orders | expected | gaps | late | dup | malformed | late sends | redirect failed | parity |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
| xdp | 1000 | 19990 | 40 | 40 | 2 | 2 | 0 | 1 | 3 | 0 | ok (20 trades, PnL 1.2346; trader = exchange = batch) |
| udp | 1000 | 19990 | 37 | 40 | 4 | 2 | 0 | 1 | 3 | - | live and batch diverge at tick seq 77: 3 expected orders missing (lost ticks or lost orders change the strategy's path from there on) |
| reflect | 1000 | 19990 | 1000 | 1000 | 0 | 0 | 0 | 0 | 3 | - | reflector: 1000 of 1000 ticks answered; no strategy, so no parity to check |
| xdp-bypass | 1000 | 19990 | 40 | 40 | 2 | 2 | 0 | 1 | 3 | ⚠ 2 | ok (20 trades, PnL 1.2346; trader = exchange = batch) |
| reflect-bypass | 1000 | 19990 | 1000 | 1000 | 0 | 0 | 0 | 0 | 3 | - | reflector: 1000 of 1000 ticks answered; no strategy, so no parity to check |

| path | seconds | replay preempted | replay waited ms | replay stolen ms | replay minor faults | trader preempted | trader waited ms | trader stolen ms | trader minor faults |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| xdp | 0.1 | 7 | 0.8 | 0.2 | 0 | 2 | 0.0 | - | 3 |
| udp | 0.1 | 7 | 0.8 | - | 0 | 2 | 0.0 | - | 3 |
| reflect | 0.1 | 7 | 0.8 | 0.2 | 0 | 2 | 0.0 | - | 3 |
| xdp-bypass | 0.1 | 7 | 0.8 | 0.2 | 0 | 2 | 0.0 | - | 3 |
| reflect-bypass | 0.1 | 7 | 0.8 | 0.2 | 0 | 2 | 0.0 | - | 3 |

ratio xdp/udp tick-to-trade: min 0.50× p50 0.50× p90 0.50× p99 0.50× p99.9 0.50× p99.99 0.50× max 0.50× mean 0.50× (⚠ udp lost orders or ticks)

ratio xdp/reflect tick-to-trade: min 2.00× p50 2.00× p90 2.00× p99 2.00× p99.9 2.00× p99.99 2.00× max 2.00× mean 2.00×

ratio udp/reflect tick-to-trade: min 4.00× p50 4.00× p90 4.00× p99 4.00× p99.9 4.00× p99.99 4.00× max 4.00× mean 4.00× (⚠ udp lost orders or ticks)

ratio xdp-bypass/reflect-bypass tick-to-trade: min 2.00× p50 2.00× p90 2.00× p99 2.00× p99.9 2.00× p99.99 2.00× max 2.00× mean 2.00×

verdict: 4 problem(s):
- udp: 37 of 40 orders
- udp: 2 ticks lost
- udp: live and batch diverge at tick seq 77: 3 expected orders missing (lost ticks or lost orders change the strategy's path from there on)
- xdp-bypass: 2 frames the XDP program could not redirect to the AF_XDP socket (redirect_failed: they arrived on an RX queue with no AF_XDP socket)
";

    #[test]
    fn the_stage_table_shows_each_outcome_net_of_the_clock_and_nothing_untimed() {
        let mut ms = measured(Path::new("unused"));
        let mut none = String::new();
        stages_table(&mut none, &ms);
        assert!(none.is_empty(), "no row timed, no table: {none}");
        let stage = |stage: &str, mean_ns: f64| results::StageMean {
            stage: stage.to_owned(),
            mean_ns,
        };
        ms[0].trader.xdp_program = Some(results::XdpProgramStats {
            stages: Some(vec![
                results::OutcomeStages {
                    outcome: "fired".into(),
                    runs: 7,
                    clock_read_ns: 21.0,
                    stages: vec![
                        stage("classify", 30.0),
                        stage("arm_read", 110.0),
                        stage("order_write", 40.0),
                        stage("record", 60.0),
                    ],
                },
                results::OutcomeStages {
                    outcome: "other".into(),
                    runs: 2,
                    clock_read_ns: 21.0,
                    stages: vec![stage("classify", 9.0)],
                },
            ]),
            ..results::XdpProgramStats::default()
        });
        let mut t = String::new();
        stages_table(&mut t, &ms);
        let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("| xdp")).collect();
        assert_eq!(
            rows,
            ["| xdp | fired | 7 | 21 | 30 | 110 | - | - | - | - | 40 | 60 | - | - | 240 | - |"],
            "{t}"
        );
    }

    #[test]
    fn runs_timed_at_their_ends_get_one_column_and_the_reflectors_ratio() {
        let mut ms = measured(Path::new("unused"));
        let run = |outcome: &str, runs: u64, mean_ns: f64| results::OutcomeStages {
            outcome: outcome.into(),
            runs,
            clock_read_ns: 25.0,
            stages: vec![results::StageMean {
                stage: results::RUN_STAGE.to_owned(),
                mean_ns,
            }],
        };
        ms[0].trader.xdp_program = Some(results::XdpProgramStats {
            stages: Some(vec![
                run("fired", 7, 150.0),
                run("trigger_redirected", 9, 110.0),
            ]),
            ..results::XdpProgramStats::default()
        });
        let reflect = ms
            .iter()
            .position(|m| m.row == Row::Reflect)
            .expect("a reflect row");
        ms[reflect].trader.xdp_program = Some(results::XdpProgramStats {
            stages: Some(vec![run("reflected", 40, 50.0)]),
            ..results::XdpProgramStats::default()
        });
        let mut t = String::new();
        stages_table(&mut t, &ms);
        assert!(
            t.contains("| path | outcome | runs | clock read | run | vs the reflector's run |"),
            "{t}"
        );
        let rows: Vec<&str> = t
            .lines()
            .filter(|l| l.starts_with("| xdp") || l.starts_with("| reflect"))
            .collect();
        assert_eq!(
            rows,
            [
                "| xdp | fired | 7 | 25 | 150 | 3.00× |",
                "| xdp | trigger_redirected | 9 | 25 | 110 | 2.20× |",
                "| reflect | reflected | 40 | 25 | 50 | 1.00× |",
            ],
            "{t}"
        );
    }

    #[test]
    fn an_order_stamped_before_its_tick_was_due_is_a_note_not_a_problem() {
        let mut replay = fixtures::replay(10.0);
        let trader = fixtures::trader(TraderPath::Xdp);
        assert!(notes("xdp", &replay).is_empty());
        replay.orders_stamped_before_due = 2;
        assert!(
            problems("xdp", &replay, &trader).is_empty(),
            "not for --strict"
        );
        let n = notes("xdp", &replay);
        assert!(
            n.iter()
                .any(|n| n.starts_with("xdp: 2 orders were stamped on arrival before")),
            "{n:?}"
        );
    }

    #[test]
    fn a_fire_the_trader_never_read_back_is_a_problem() {
        let replay = fixtures::replay(10.0);
        let mut trader = fixtures::trader(TraderPath::Trigger);
        trader.trigger = Some(results::TriggerReport {
            fired: 5,
            ..Default::default()
        });
        trader.xdp_counters = Some(results::XdpCounters {
            trigger_fired: 5,
            ..Default::default()
        });
        let none = problems("trigger", &replay, &trader);
        assert!(!none.iter().any(|p| p.contains("read")), "{none:?}");
        trader.xdp_counters = Some(results::XdpCounters {
            trigger_fired: 6,
            ..Default::default()
        });
        let p = problems("trigger", &replay, &trader);
        assert!(
            p.iter()
                .any(|p| p == "trigger: the program fired 6 orders, the trader read 5 back (a fire it never saw)"),
            "{p:?}"
        );
    }

    #[test]
    fn tcp_order_rows_show_both_ends_counts_and_their_cost_over_the_same_paths_udp_orders() {
        let dir = std::env::temp_dir();
        let mut rows = measured(&dir);
        let row = Row::Tcp(TraderPath::Xdp, paths::Orders::TcpKernel);
        let mut replay = fixtures::replay(12.5);
        replay.session = Some(results::SessionReport {
            connections: 1,
            logins: 1,
            enter_orders: 1000,
            executed: 1000,
            sequenced: 2000,
            coalesced_reads: 3,
            ..Default::default()
        });
        let mut trader = fixtures::trader(TraderPath::Xdp);
        trader.order_session = Some(results::OrderSessionReport {
            orders: paths::Orders::TcpKernel,
            sent: 1000,
            not_sent: 0,
            partial_writes: 0,
            held: 0,
            fast_sends: 0,
            dropped_segments: 0,
            accepted: 1000,
            executed: 1000,
            canceled: 0,
            rejected: 0,
            unknown_answers: 0,
            connects: 1,
            logins: 1,
            login_rejects: 0,
            disconnects: 0,
            server_silent: 0,
            protocol_errors: 0,
            resets_injected: 0,
            end_of_session: true,
            next_seq: 2001,
            rx_to_ack: fixtures::summary(1000, 20.0),
            ..Default::default()
        });
        rows.push(Measured {
            row,
            ends: row.ends().unwrap(),
            replay,
            trader,
            hgrm: dir.join("x.hgrm"),
        });
        let mut t = String::new();
        session_table(&mut t, &rows);
        let line = t
            .lines()
            .find(|l| l.starts_with("| xdp+tcp-kernel |"))
            .unwrap_or_else(|| panic!("{t}"));
        let xdp_p50 = rows[0].replay.tick_to_trade.p50_us;
        let want = format!(
            "{:+.2}",
            rows.last().unwrap().replay.tick_to_trade.p50_us - xdp_p50
        );
        assert!(
            line.contains("| 1000 | 0 | 1000 | 1000 | 2000 | 1 | 1 | 3 |"),
            "{line}"
        );
        assert!(line.contains(&want), "{line} lacks {want}");
        // No TCP row, no table.
        let mut t = String::new();
        session_table(&mut t, &measured(&dir));
        assert!(t.is_empty());
    }

    #[test]
    fn the_three_accounts_must_agree_to_the_bit() {
        let replay = fixtures::replay(10.0);
        let mut trader = fixtures::trader(TraderPath::Xdp);
        assert_eq!(accounts_differ(&replay, &trader), None);
        trader.account.pnl = f64::from_bits(trader.account.pnl.to_bits() + 1);
        let differ = accounts_differ(&replay, &trader).expect("one ulp is a difference");
        assert!(
            differ.starts_with("accounts differ: trader 20 trades"),
            "{differ}"
        );
        assert!(
            problems("xdp", &replay, &trader)
                .iter()
                .any(|p| p.contains("accounts differ")),
        );
    }

    #[test]
    fn report_md_is_built_from_typed_results() {
        let md = markdown(
            &options(),
            &fixtures::machine(),
            &measured(Path::new("unused")),
            Some(&sockperf()),
            Some(&fixtures::floor()),
        );
        if std::env::var_os("PRINT_REPORT_MD").is_some() {
            println!("{md}");
        }
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

    #[test]
    fn closed_loop_rows_are_not_called_tick_to_trade() {
        let mut m = measured(Path::new("unused"));
        for x in &mut m {
            x.replay.closed_loop = true;
            x.replay.rate_per_s = None;
        }
        let md = markdown(&options(), &fixtures::machine(), &m, None, None);
        assert!(
            md.contains("| xdp | closed-loop round trip (--rate max) | 40/40 |"),
            "{md}"
        );
        assert!(!md.contains("| tick-to-trade |"), "{md}");
        assert!(md.contains("ratio xdp/udp closed-loop round trip:"), "{md}");
        assert!(!md.contains("ratio xdp/udp tick-to-trade"), "{md}");
    }

    #[test]
    fn a_run_with_nothing_back_shows_no_percentiles_and_fails_its_verdict() {
        let mut m = measured(Path::new("unused"));
        m.truncate(1);
        let r = &mut m[0].replay;
        r.tick_to_trade = Summary::default();
        r.orders_received = 0;
        r.parity.expected_orders = 0;
        r.parity.verdict = ParityVerdict::NothingToCheck { ticks: 4 };
        let md = markdown(&options(), &fixtures::machine(), &m, None, None);
        assert!(
            md.contains("| xdp | tick-to-trade | 0/0 | 0 | - | - | - | - | - | - | - | - | 0 |"),
            "{md}"
        );
        assert!(
            md.contains("verdict: 1 problem(s):\n- xdp: nothing to check"),
            "{md}"
        );
    }
}
