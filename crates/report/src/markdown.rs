//! report.md's tables: the conditions, latency (with delivery and saturation beside every
//! percentile row), counts, the trigger's, the order session's, send lateness, the XDP
//! program's stages, what the machine did, the ratios, and the verdict last.
use std::fmt::Write as _;

use paths::XdpStages;
use results::{ContextSwitches, FloorReport, Machine, Summary, ThreadTime};

use crate::{
    Bench, Conditions, LINK, LOSS_MARK, Measured, RoundTrip, accounts_differ,
    check::{Delivery, latency_name, notes, problems},
    row,
};

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

/// The latency table's columns: the ratios', then the standard deviation (a spread, so no
/// ratio of it is shown).
const LATENCY_COLUMNS: [Column; 9] = [
    COLUMNS[0],
    COLUMNS[1],
    COLUMNS[2],
    COLUMNS[3],
    COLUMNS[4],
    COLUMNS[5],
    COLUMNS[6],
    COLUMNS[7],
    ("stdev", |s| s.stdev_us),
];

/// Where the exchange's arrival times came from, for the harness-delay row.
fn arrival_name(a: results::Arrival) -> &'static str {
    match a {
        results::Arrival::KernelTimestamp => "arrival: kernel SO_TIMESTAMPNS",
        results::Arrival::XdpTimestamp => "arrival: exchange XDP bpf_ktime",
    }
}

impl Bench<'_> {
    /// report.md's tables: the conditions, then latency, counts, the trigger's, the order
    /// session's, send lateness, the XDP program's stages, what the machine did, the ratios,
    /// and the verdict (without the machine's readiness: [`Bench::report_md`]).
    pub fn markdown(&self) -> String {
        let measured = self.measured;
        let mut t = String::new();
        conditions(&mut t, self.conditions, self.machine);
        latency_table(&mut t, measured, self.sockperf, self.cpu_floor);
        counts_table(&mut t, measured);
        book_table(&mut t, measured);
        trigger_table(&mut t, measured);
        session_table(&mut t, measured);
        lateness_table(&mut t, measured);
        stages_table(&mut t, measured);
        machine_table(&mut t, measured);
        ratios(&mut t, measured, self.ratios);
        verdict(&mut t, measured);
        t
    }
}

/// The run's verdict, last: what a reader (or `--strict`) needs to know before any figure.
fn verdict(t: &mut String, measured: &[Measured]) {
    let problems: Vec<String> = measured
        .iter()
        .flat_map(|m| problems(m.row, &m.replay, &m.trader))
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
    for n in measured.iter().flat_map(|m| notes(m.row, &m.replay)) {
        let _ = writeln!(t, "note: {n}");
    }
}

fn conditions(t: &mut String, o: &Conditions, m: &Machine) {
    let _ = writeln!(
        t,
        "tick-to-trade, {} · rate {} msg/s{} · batch {} · n={} · xdp-mode {} · wait {} · trader cpu{} / replay cpu{}{}",
        o.source,
        o.rate,
        o.burst
            .as_ref()
            .map_or(String::new(), |b| format!(" with bursts {b}")),
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

/// One latency row: `| label | measure | delivered | count | min | ... | mean | stdev |
/// saturated |`;
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
    for (_, value) in LATENCY_COLUMNS {
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
    for (name, _) in LATENCY_COLUMNS {
        let _ = write!(t, " {name} µs |");
    }
    let _ = writeln!(t, " saturated |");
    let _ = write!(t, "|---|---|---:|---:|");
    for _ in LATENCY_COLUMNS {
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
                summary_row(t, m.row, what, Some(delivered), s, Some(s.saturated));
            }
        }
        if let (Some(burst), Some(s)) = (&m.replay.burst, &m.replay.tick_to_trade_in_bursts) {
            let what = format!("{}, ticks due in bursts {burst}", latency_name(&m.replay));
            summary_row(t, m.row, &what, Some(delivered), s, Some(s.saturated));
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
            row::CPU_FLOOR,
            &measure,
            None,
            &f.round_trip,
            Some(f.round_trip.saturated),
        );
    }
    if let Some(s) = sockperf {
        summary_row(
            t,
            row::SOCKPERF,
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

/// On a full-depth feed read through a book (`--symbols`): per path, where the feed's packets
/// went (dropped in the driver by the filter, delivered to the trader, lost) and what the book
/// did with the messages that reached it, with its sampled work per message. Absent on the
/// ticker feed.
fn book_table(t: &mut String, measured: &[Measured]) {
    let books: Vec<&Measured> = measured
        .iter()
        .filter(|m| m.trader.counters.book_messages > 0)
        .collect();
    if books.is_empty() {
        return;
    }
    let _ = writeln!(
        t,
        "| path | packets sent | dropped in the driver (packets / messages) | delivered to the trader (packets) | lost (gap messages) | held at a gap (packets, given up) | book messages (refused) | unwatched, read no further | book work per message p50 / p99 / max ns (samples) |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for m in books {
        let c = &m.trader.counters;
        let driver = m
            .trader
            .xdp_counters
            .filter(|x| x.filtered_packets > 0)
            .map_or("-".to_owned(), |x| {
                format!("{} / {}", x.filtered_packets, x.filtered_messages)
            });
        let lost = if c.gap_messages > 0 {
            format!("{LOSS_MARK} {}", c.gap_messages)
        } else {
            "0".to_owned()
        };
        let w = &m.trader.book_work;
        let ns = |us: f64| us * 1e3;
        let _ = writeln!(
            t,
            "| {} | {} | {driver} | {} | {lost} | {}, {} | {} ({}) | {} | {:.0} / {:.0} / {:.0} ({}) |",
            m.row,
            m.replay.sent_packets,
            c.packets,
            c.repair_held_packets,
            c.repair_gave_up,
            c.book_messages,
            c.book_refused,
            c.unwatched_messages,
            ns(w.p50_us),
            ns(w.p99_us),
            ns(w.max_us),
            w.count,
        );
    }
    let _ = writeln!(
        t,
        "\nThe book's work is sampled on one watched message in --engine-sample-every (64) of the types that can't print \
         (adds, cancels, deletes, replaces, the rest), two clock reads around its parse and apply; \
         a print's own is inside its tick-to-trade. Unwatched messages cost a locate check.\n"
    );
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
        let udp = udp_orders(measured, m);
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

/// The row `m`'s figures are compared with for the cost of its orders' session: the same
/// path's row with UDP orders, if the bench measured it.
fn udp_orders<'a>(measured: &'a [Measured], m: &Measured) -> Option<&'a Measured> {
    let name = m.udp_orders?;
    measured
        .iter()
        .find(|u| u.row == name && u.replay.session.is_none())
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
        let udp = udp_orders(measured, m);
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
        .find(|(m, o)| m.row == row::REFLECT && o.outcome == "reflected")
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

fn ratios(t: &mut String, measured: &[Measured], ratios: &[(&str, &str)]) {
    let find = |name: &str| measured.iter().find(|m| m.row == name);
    for &(a, b) in ratios {
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
                .map(|m| m.row)
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

#[cfg(test)]
mod tests;
