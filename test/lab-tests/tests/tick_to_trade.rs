//! Privileged end to end: the real trader and replay binaries in a lab of their own, 20,000
//! ticks through each path, asserting no loss, no gaps, one order per signal, and parity with
//! the batch backtest. As an ordinary user each test says it is skipped and passes.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use std::time::Duration;
use {
    afxdp as _, engine as _, nix as _, paths as _, serde_json as _, soup as _, trader_core as _,
    wire as _,
};

use results::{ReplayReport, TraderReport};

mod common;

use common::{lab_or_skip, read_report, replay, start_trader, tmp, trader_md, wait_exit};

const TICKS: u64 = 20_000;

/// Both reports of one run on `path`, or `None` when skipped.
fn run(path: &str, tag: &str, extra_trader: &[&str]) -> Option<(ReplayReport, TraderReport)> {
    run_expecting(path, tag, extra_trader, true)
}

/// [`run`], the trader's exit asserted to be a success (`ok`) or a failure.
fn run_expecting(
    path: &str,
    tag: &str,
    extra_trader: &[&str],
    ok: bool,
) -> Option<(ReplayReport, TraderReport)> {
    // A lab and files of this test's own (`tag`), so tests can't collide even in parallel.
    let lab = lab_or_skip(&format!("e2e{tag}"))?;
    let c = lab.config().clone();
    let (trader_json, replay_json) = (
        tmp(&format!("{tag}-trader.json")),
        tmp(&format!("{tag}.json")),
    );
    let mut trader = start_trader(&c, path, &trader_json, extra_trader);
    let mut r = replay(&c, "gbm:42:150000", &trader_md(&c), &replay_json);
    r.args(["--count", &TICKS.to_string()])
        .args(["--rate", "10k", "--label", path]);
    if path == "trigger" {
        // The program's XDP_TX into a veth needs an XDP program on the exchange's end.
        r.args(["--xdp-pass-on", &c.exchange_if]);
    }
    let status = r.status().expect("replay runs");
    assert!(status.success(), "replay exit: {status}");
    // The end-of-session packet ends the trader.
    let status = wait_exit(&mut trader, Duration::from_secs(10), "trader");
    assert_eq!(status.success(), ok, "trader exit: {status}");
    Some((read_report(&replay_json), read_report(&trader_json)))
}

fn check(path: &str, replay: &ReplayReport, trader: &TraderReport) {
    let c = &trader.counters;
    let p = &replay.parity;
    assert_eq!(replay.sent_messages, TICKS, "{path}");
    assert_eq!(c.ticks, TICKS, "{path}: every tick reached the strategy");
    for (name, none) in [
        ("gap_messages", c.gap_messages),
        ("late_messages", c.late_messages),
        ("duplicate_messages", c.duplicate_messages),
        ("malformed_messages", c.malformed_messages),
        ("malformed_packets", c.malformed_packets),
        ("malformed_framing", c.malformed_framing),
        ("wrong_session", c.wrong_session),
        ("suspect_sequence", c.suspect_sequence),
        ("unconfirmed_packets", c.unconfirmed_packets),
        ("before_join_messages", c.before_join_messages),
    ] {
        assert_eq!(none, 0, "{path}: {name}");
    }
    assert!(
        p.expected_orders > 1000,
        "{path}: the strategy trades: {p:?}"
    );
    assert_eq!(
        replay.orders_received, p.expected_orders,
        "{path}: one order per signal"
    );
    assert_eq!(c.orders, p.expected_orders, "{path}");
    assert_eq!(replay.orders_duplicate + replay.orders_unknown_tick, 0);
    assert_eq!(replay.orders_price_mismatch, 0, "{path}");
    assert!(p.ok(), "{path}: parity: {p:?}");
    assert_eq!(p.live_pnl, p.batch_pnl, "{path}");
    assert_eq!(p.live_trades, p.batch_trades, "{path}");
    assert_eq!(
        replay.tick_to_trade.count, p.expected_orders,
        "{path}: a latency per order"
    );
    // The third account: the trader's own ledger, to the bit.
    let a = &trader.account;
    assert_eq!(
        (a.orders, a.trades, a.pnl.to_bits()),
        (replay.orders_received, p.live_trades, p.live_pnl.to_bits()),
        "{path}: the trader's account is the exchange's"
    );
}

/// The trigger's report and the program's counters, once every fire is accounted for: none was
/// a wrong order, the trader read back every one the program counted, and each order at the
/// exchange was sent once, fired by the program or sent by the trader.
fn every_fire_booked(
    replay: &ReplayReport,
    trader: &TraderReport,
) -> (results::TriggerReport, results::XdpCounters) {
    let t = trader.trigger.expect("the trigger path reports its arms");
    let x = trader.xdp_counters.expect("the program's counters");
    assert_eq!(t.mismatch, 0, "{t:?}");
    assert_eq!(t.fired, x.trigger_fired, "every fired order was read back");
    assert_eq!(t.fired + t.software_orders, replay.orders_received, "{t:?}");
    (t, x)
}

/// The decision in the driver: every signal's order is the engine's, most of them fired by the
/// XDP program (the rest sent by the trader, for ticks it couldn't arm in time), each fired
/// one checked against the trader's own decision, all three accounts equal.
#[test]
fn trigger_path_fires_the_engines_orders_with_parity() {
    let Some((replay, trader)) = run("trigger", "trig", &[]) else {
        return;
    };
    check("trigger", &replay, &trader);
    let (t, _) = every_fire_booked(&replay, &trader);
    // How many are fired depends on the trader keeping up (a test running beside this one
    // starves it): the rate is the benchmark's to report; here, that the driver fired some.
    assert!(t.fired > 0 && t.arms > 0, "{t:?}");
    // Each arm's line is pushed to the shared cache after its write wherever the CPU can.
    assert_eq!(t.arm_demoted, Some(cpu_has_cldemote()), "{t:?}");
    assert_eq!(t.fired_poll_every, Some(trader::FIRED_POLL_EVERY), "{t:?}");
    assert_eq!(
        t.woken_on_fire,
        Some(false),
        "a spinning trader is never woken: {t:?}"
    );
    assert_eq!(t.wakeups, 0, "{t:?}");
}

/// Whether this machine's CPU lists `cldemote` among its flags.
fn cpu_has_cldemote() -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .expect("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| l.split_whitespace().any(|f| f == "cldemote"))
}

/// The same run with the trader asleep in poll() between ticks: woken by the ring and the
/// socket alike, it trades the same orders. Run with the timed program (`--xdp-stages`), which
/// must trade exactly as the untimed one and account for every run it timed, and with the
/// arm's line left where the trader wrote it (`--no-arm-demote`), which must too.
#[test]
fn trigger_path_blocking() {
    let Some((replay, trader)) = run(
        "trigger",
        "trigblk",
        &["--wait", "block", "--xdp-stages", "--no-arm-demote"],
    ) else {
        return;
    };
    check("trigger-block", &replay, &trader);
    let (t, x) = every_fire_booked(&replay, &trader);
    assert!(t.fired > 0, "{t:?}");
    assert_eq!(t.arm_demoted, Some(false), "--no-arm-demote: {t:?}");
    assert_eq!(t.woken_on_fire, Some(true), "{t:?}");
    // Every fire woke it (the ring holds far more than a tick's records).
    assert_eq!(t.wakeups, t.fired, "{t:?}");
    let stages = trader
        .xdp_program
        .and_then(|p| p.stages)
        .expect("--xdp-stages reports the stages");
    let runs = |outcome: &str| {
        stages
            .iter()
            .find(|o| o.outcome == outcome)
            .map_or(0, |o| o.runs)
    };
    assert_eq!(runs("fired"), x.trigger_fired, "{stages:?}");
    assert_eq!(runs("trigger_redirected"), x.redirected, "{stages:?}");
    assert_eq!(runs("redirected"), 0, "the trigger's program: {stages:?}");
    let fired = stages.iter().find(|o| o.outcome == "fired").unwrap();
    for stage in ["classify", "arm_read", "order_write", "record"] {
        assert!(fired.stage(stage).is_some(), "{stage}: {fired:?}");
    }
    assert_eq!(fired.stage("redirect"), None, "a fired run never redirects");
}

/// Blocking without the fire's wakeup (`--no-fired-wakeup`): the trader learns of each fire
/// when the next packet wakes it, so the tick after a fire is always its own to send; every
/// order still goes out once, fired or sent, with parity exact.
#[test]
fn trigger_path_blocking_woken_by_the_next_packet() {
    let Some((replay, trader)) = run(
        "trigger",
        "trignw",
        &["--wait", "block", "--no-fired-wakeup"],
    ) else {
        return;
    };
    check("trigger-block-next-packet", &replay, &trader);
    let (t, _) = every_fire_booked(&replay, &trader);
    assert_eq!(t.woken_on_fire, Some(false), "{t:?}");
    assert_eq!(t.wakeups, 0, "no fire woke it: {t:?}");
    assert_eq!(t.arm_demoted, Some(cpu_has_cldemote()), "{t:?}");
    assert!(t.fired > 0 && t.software_orders > 0, "{t:?}");
    assert!(
        trader.xdp_program.and_then(|p| p.stages).is_none(),
        "untimed unless asked"
    );
}

/// A spinning trader that reads the record of what fired almost never at a turn's start
/// (`--fired-poll-every` far above the run's turns): it still learns of every fire, from its
/// reads before each packet, after each turn that took frames and at the end, and trades every
/// signal once with parity exact. Run with the program timed at each run's two ends
/// (`--xdp-stages=run`, a third build of it), which must trade as the untimed one and account
/// for every run it timed, as one figure.
#[test]
fn trigger_path_learns_every_fire_without_polling_the_record() {
    let Some((replay, trader)) = run(
        "trigger",
        "trigrare",
        &["--fired-poll-every", "4000000000", "--xdp-stages=run"],
    ) else {
        return;
    };
    check("trigger-rare-record-reads", &replay, &trader);
    let (t, x) = every_fire_booked(&replay, &trader);
    assert_eq!(t.fired_poll_every, Some(4_000_000_000), "{t:?}");
    assert!(t.fired > 0, "{t:?}");
    let stages = trader
        .xdp_program
        .and_then(|p| p.stages)
        .expect("--xdp-stages=run reports the runs");
    let fired = stages
        .iter()
        .find(|o| o.outcome == "fired")
        .expect("fired runs");
    assert_eq!(fired.runs, x.trigger_fired, "{stages:?}");
    for o in &stages {
        let names: Vec<&str> = o.stages.iter().map(|s| s.stage.as_str()).collect();
        assert_eq!(names, [results::RUN_STAGE], "one figure per run: {o:?}");
        assert!(o.total_ns() > 0.0, "{o:?}");
    }
}

/// A corrupted arm (its side flipped, `--corrupt-arms`, a test-only option) fires an order that
/// is not the trader's: every such order is caught by the check, counted as a mismatch and
/// reported, and the trader exits with an error (after writing its report). The exchange got
/// the wrong orders, so its account and the batch's differ, as they must.
#[test]
fn a_corrupted_arm_is_detected_and_reported() {
    let Some((replay, trader)) =
        run_expecting("trigger", "trigbad", &["--corrupt-arms", "50"], false)
    else {
        return;
    };
    let t = trader.trigger.expect("the trigger path reports its arms");
    let x = trader.xdp_counters.expect("the program's counters");
    // Each of the first 50 arms fires (and is caught) only if its tick's price is in its set
    // (about one tick in three trades): some of them did, none of the rest.
    assert!((1..=50).contains(&t.mismatch), "{t:?}");
    assert_eq!(t.fired, x.trigger_fired, "{t:?}");
    // What the wrong arms fired was a wrong-side order for a tick the engine trades: the
    // exchange's account is not the batch's, and the trader didn't book those orders.
    assert!(!replay.parity.ok(), "{:?}", replay.parity);
    assert_eq!(
        trader.counters.orders + t.mismatch,
        replay.orders_received,
        "{t:?}"
    );
}

#[test]
fn xdp_path_trades_every_signal_with_parity() {
    let Some((replay, trader)) = run("xdp", "xdp", &[]) else {
        return;
    };
    check("xdp", &replay, &trader);
    assert_eq!(
        trader.xdp_program.as_ref().map(|p| p.stages.is_some()),
        Some(false),
        "untimed unless asked"
    );
    let x = trader
        .xdp_counters
        .expect("the XDP path reports the program's counters");
    // Every market-data packet, plus the end-of-session ones the trader may have seen.
    assert!(x.redirected >= TICKS, "{x:?}");
}

#[test]
fn xdp_path_in_skb_mode() {
    let Some((replay, trader)) = run("xdp", "xdpskb", &["--xdp-mode", "skb"]) else {
        return;
    };
    check("xdp-skb", &replay, &trader);
}

#[test]
fn udp_path_trades_every_signal_with_parity() {
    let Some((replay, trader)) = run("udp", "udp", &[]) else {
        return;
    };
    check("udp", &replay, &trader);
}

#[test]
fn udp_path_blocking() {
    let Some((replay, trader)) = run("udp", "udpblock", &["--wait", "block"]) else {
        return;
    };
    check("udp-block", &replay, &trader);
}

/// The harness out of the figure: a replay that stalls 300 µs after every send (as a
/// preemption would) reads every order late, yet tick-to-trade, counted to the arrival the
/// kernel (UDP exchange) or the exchange's XDP program (AF_XDP exchange) stamped, stays far
/// below the stall, and the harness delay shows it.
#[test]
fn a_stalled_replay_still_reports_true_arrival_times() {
    for (io, tag) in [("udp", "stallu"), ("xdp", "stallx")] {
        let Some(lab) = lab_or_skip(&format!("e2e{tag}")) else {
            return;
        };
        let c = lab.config().clone();
        let (trader_json, replay_json) = (
            tmp(&format!("{tag}-trader.json")),
            tmp(&format!("{tag}.json")),
        );
        let mut trader = start_trader(&c, "udp", &trader_json, &[]);
        let mut r = replay(&c, "gbm:42:150000", &trader_md(&c), &replay_json);
        r.args(["--count", "2000", "--rate", "1k", "--label", tag])
            .args(["--stall-after-send-us", "300", "--io", io])
            .args(["--iface", &c.exchange_if]);
        let status = r.status().expect("replay runs");
        assert!(status.success(), "{io}: replay exit: {status}");
        wait_exit(&mut trader, Duration::from_secs(10), "trader");
        let rep: ReplayReport = read_report(&replay_json);
        assert!(rep.orders_received > 500, "{io}: {rep:?}");
        let (t2t, seen, harness) = (rep.tick_to_trade, rep.tick_to_trade_seen, rep.harness_delay);
        // Orders come back within tens of µs of their tick; the replay reads them only after
        // its 300 µs stall.
        assert!(seen.p50_us >= 250.0, "{io}: seen {seen:?}");
        assert!(harness.p50_us >= 150.0, "{io}: harness {harness:?}");
        assert!(
            t2t.p50_us < seen.p50_us - 100.0,
            "{io}: arrival {t2t:?} should not include the stall (seen {seen:?})"
        );
    }
}
