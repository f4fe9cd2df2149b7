//! The trader program: market data in, orders out, over AF_XDP (`--path xdp`) or a kernel UDP
//! socket (`--path udp`). Same decode, same engine, same encode, same loop on both
//! ([`crate::trading::run`]); only the I/O differs. `--path trigger` is the AF_XDP path with
//! the decision in the driver: the trader arms the XDP program with the next tick's order and
//! the program fires it. `--path reflect` runs no trader at all: the XDP program turns each
//! tick into an order to the gateway itself (the lab's floor).
//!
//! [`Options`] are the command line (the `trader` binary parses them and calls [`run`]);
//! `io` sets up each path's sockets and XDP program.
use anyhow::bail;
use paths::Io;
use results::{
    FeedSeen, ForeignSession, FrameCounts, TraderReport, TriggerReport, XdpCounters,
    XdpProgramStats, XskStats,
};
use wire::moldudp64::Session;

use afxdp::{host, process};
use paths::cli;
use trader_core::{Trader, stats::Latency};

use crate::trading::LoopEnd;

mod io;

use crate::{Options, Plan};

/// What a path's run leaves for the report, besides the trader's own counts.
pub(crate) struct PathEnd {
    pub(crate) end: LoopEnd,
    pub(crate) frames_not_ours: FrameCounts,
    /// Feed frames taken per RX queue (XDP path).
    pub(crate) rx_queue_frames: Vec<u64>,
    pub(crate) xdp_counters: Option<XdpCounters>,
    pub(crate) xdp_program: Option<XdpProgramStats>,
    pub(crate) xsk_stats: Option<XskStats>,
    /// The kernel UDP paths: the kernel's drops at the feed's sockets.
    pub(crate) socket_drops: Option<u64>,
    /// The feed socket's `SO_INCOMING_NAPI_ID` after the run.
    pub(crate) napi_id: Option<u32>,
    pub(crate) rss_start_kib: u64,
    /// The trigger path's arms and checks.
    pub(crate) trigger: Option<TriggerReport>,
    /// The SoupBinTCP order session (`--orders tcp-kernel`).
    pub(crate) order_session: Option<results::OrderSessionReport>,
}

/// Runs the trader as `o` says: checks, sets up the path, trades until the session ends, the
/// feed goes idle or a signal comes, then writes the report.
pub fn run(mut o: Options) -> anyhow::Result<()> {
    let stop = process::stop_flag()?;
    for (what, path) in [("--json-out", &o.json_out), ("--hgrm-out", &o.hgrm_out)] {
        if let Some(p) = path {
            cli::check_writable(what, p)?;
        }
    }
    // Before pinning: where housekeeping threads (the XDP log reader) may go.
    o.housekeeping = affinity::allowed_cpus().unwrap_or_default();
    let o = o;
    if let Some(cpu) = o.cpu {
        process::pin_to_cpu(cpu)?;
    }
    if let Some(prio) = o.fifo {
        process::set_fifo(prio)?;
    }
    let plan = o.plan()?;
    if o.check {
        return Ok(());
    }
    if o.xdp_log {
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    }
    let mut trader = Trader::new(plan.strategy.params, Some(plan.strategy.stock))
        .with_engine_sampling(o.engine_sample_every)
        .with_feed_rules(plan.feed.rules);
    if let Some(symbols) = &plan.strategy.symbols {
        trader = trader.with_symbols_sized(symbols, plan.strategy.book_orders)?;
        if plan.path.spec().io == Io::Trigger {
            // The book trigger: the firing set follows the traded stock's book.
            trader = trader.tracking_firing_set();
        }
    }
    if plan.feed.recovery {
        trader = trader.with_recovery();
    }
    if let Some(wait_ns) = plan.feed.repair_wait_ns {
        trader = trader.with_repair(wait_ns);
    }
    if let Some(wait_ns) = plan.feed.line_wait_ns {
        trader = trader.with_lines(wait_ns);
    }
    let mut rx_to_tx = Latency::new();
    // The path's I/O, as the path table says: a new path is one entry there and one arm here.
    let run = match plan.path.spec().io {
        Io::Xsk | Io::Trigger => io::run_xdp(&plan, &mut trader, &mut rx_to_tx, &stop)?,
        Io::Udp => io::run_udp(&plan, &mut trader, &mut rx_to_tx, &stop)?,
        Io::Reflector => io::run_reflect(&plan, &stop)?,
    };
    trader.finish();
    let report = TraderReport {
        knobs: o.knobs(),
        path: o.path,
        wait: o.wait,
        xdp_mode: o.path.spec().action.map(|_| o.xdp_mode),
        n: o.n,
        counters: trader.counters,
        feed: feed_report(&plan, &trader),
        frames_not_ours: run.frames_not_ours,
        rx_queue_frames: run.rx_queue_frames,
        rx_to_tx: rx_to_tx.summary(),
        engine: trader.engine().summary(),
        book_work: trader.book_work().summary(),
        xdp_counters: run.xdp_counters,
        xdp_program: run.xdp_program,
        xsk_stats: run.xsk_stats,
        socket_drops: run.socket_drops,
        napi_id: run.napi_id,
        end: run.end.reason,
        rss_start_kib: run.rss_start_kib,
        rss_end_kib: host::rss_kib(),
        context_switches: run.end.context_switches,
        thread_time: run.end.thread_time,
        busy_ms: run.end.busy_ns as f64 / 1e6,
        account: trader.account(),
        trigger: run.trigger,
        order_session: run.order_session,
    };
    results::write(o.json_out.as_deref(), &report)?;
    warn_at_exit(&o, &report);
    if let Some(p) = &o.hgrm_out {
        rx_to_tx.write_hgrm(p)?;
    }
    if let Some(t) = &report.trigger
        && t.mismatch > 0
    {
        bail!(
            "{} of the {} orders the XDP program fired were not the order this trader would \
             have sent for their tick (trigger.mismatch in the report), and the exchange got \
             them: an arm that was wrong (corrupted: --corrupt-arms), or one that fired on a \
             tick this trader then took as something else",
            t.mismatch,
            t.fired
        );
    }
    Ok(())
}

/// Which feed the trader followed and what else it saw.
fn feed_report(plan: &Plan, t: &Trader) -> FeedSeen {
    // Escaped: a capture's session can hold any bytes (NUL-filled in some).
    let name = |s: Session| s.trimmed().escape_ascii().to_string();
    let foreign = t.foreign_sessions();
    FeedSeen {
        session: t.session().map(name),
        session_pinned: plan.feed.rules.session.is_some(),
        first_seq: t.first_seq(),
        max_jump: plan.feed.rules.max_jump,
        quiet_ns: plan.feed.rules.quiet_ns,
        max_rate: plan.feed.rules.max_rate,
        foreign_sessions: foreign
            .iter()
            .map(|(s, packets)| ForeignSession {
                session: name(s),
                packets,
            })
            .collect(),
        foreign_sessions_unnamed: foreign.others,
        lines: t
            .line_counts()
            .map(|(lines, _)| lines.to_vec())
            .unwrap_or_default(),
        lost_on_both: t.line_counts().map_or(0, |(_, lost)| lost),
    }
}

/// Says on stderr, after the report, what the report shows but a user may not look for: feed
/// frames the program could not hand to a socket, and feed datagrams dropped for a wrong UDP
/// checksum in numbers that point at the sender leaving a partial checksum to an offload.
fn warn_at_exit(o: &Options, report: &TraderReport) {
    let iface = o.iface();
    if let Some(x) = &report.xdp_counters
        && x.redirect_failed > 0
    {
        eprintln!(
            "warning: {} market-data frames could not be redirected (xdp_counters.redirect_failed) \
             and went to the kernel untraded: they arrived on an RX queue this trader does not \
             serve (it serves {} of them; --queues all serves every one). Steer the feed \
             (`ethtool -N {iface} flow-type udp4 dst-port {} action 0`) or serve more queues; \
             see docs/rx-queues.md",
            x.redirect_failed,
            report.rx_queue_frames.len(),
            o.port
        );
    }
    let c = &report.counters;
    if report.path.spec().io.trades() && report.feed.session.is_none() && c.packets > 0 {
        eprintln!(
            "warning: {} packets came, but no two of one session continued each other's sequence \
             numbers, so nothing was traded (counters.unconfirmed_packets {}, wrong_session {}). \
             Give --session (and --first-seq) if the feed is known",
            c.packets, c.unconfirmed_packets, c.wrong_session
        );
    }
    if c.wrong_session > 0 {
        let names: Vec<String> = report
            .feed
            .foreign_sessions
            .iter()
            .map(|f| format!("{} ({} packets)", f.session, f.packets))
            .collect();
        eprintln!(
            "note: {} packets of other sessions than {} were dropped: {}",
            c.wrong_session,
            report.feed.session.as_deref().unwrap_or("the feed's"),
            names.join(", ")
        );
    }
    if c.suspect_sequence > 0 {
        eprintln!(
            "note: {} packets carried sequence numbers that nothing confirmed (more than --max-jump \
             {} ahead, or behind the feed) and were dropped untraded (counters.suspect_sequence)",
            c.suspect_sequence, o.max_jump
        );
    }
    // A few are someone's broken frames (counted in the report); as many as were taken, or
    // all of them, is the sender's offload.
    let bad = report.frames_not_ours.bad_udp_checksum;
    if bad > 0 && bad >= report.counters.packets {
        eprintln!(
            "warning: {bad} market-data datagrams had a wrong UDP checksum and were dropped \
             (frames_not_ours.bad_udp_checksum). If the feed comes over veth from this host, \
             turn off TX checksum offload on the sending end (`ethtool -K <iface> tx off`): \
             otherwise the kernel leaves a partial checksum that only a kernel receiver accepts"
        );
    }
}
