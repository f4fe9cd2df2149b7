use std::path::Path;

use paths::TraderPath;
use results::{ParityVerdict, Summary};

use super::*;
use crate::fixtures;

/// report.md's tables for the fixtures' conditions and machine.
fn markdown(
    measured: &[Measured],
    sockperf: Option<&RoundTrip>,
    cpu_floor: Option<&FloorReport>,
) -> String {
    Bench {
        conditions: &fixtures::conditions(),
        machine: &fixtures::machine(),
        measured,
        sockperf,
        cpu_floor,
        ratios: &fixtures::RATIOS,
        readiness: &[],
    }
    .markdown()
}

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
/// The report, character for character: delivered/expected, the standard deviation and
/// saturation beside every percentile row, loss marked, throughput and redirect failures in
/// the counts, ratios only against the same exchange side, and the verdict last.
const REPORT_MD: &str = "\
tick-to-trade, gbm:42:150000 · rate 20k msg/s · batch 1 · n=6 · xdp-mode native · wait spin · trader cpu1 / replay cpu0
machine: Test CPU @ 3.00GHz · 2 cores · kernel 6.1.0-test · veth pair between two network namespaces (copy-mode AF_XDP)

| path | measure | delivered | count | min µs | p50 µs | p90 µs | p99 µs | p99.9 µs | p99.99 µs | max µs | mean µs | stdev µs | saturated |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| xdp | tick-to-trade | 40/40 | 40 | 10.00 | 20.00 | 30.00 | 40.00 | 50.00 | 60.00 | 70.00 | 80.00 | 90.00 | 0 |
| xdp | tick-to-trade, seen by the replay | 40/40 | 40 | 10.50 | 21.00 | 31.50 | 42.00 | 52.50 | 63.00 | 73.50 | 84.00 | 94.50 | 0 |
| xdp | harness delay (arrival: kernel SO_TIMESTAMPNS) | 40/40 | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 4.50 | 0 |
| xdp | trader RX→TX | 40/40 | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 4.50 | 0 |
| xdp | engine on_tick | 40/40 | 1000 | 0.01 | 0.02 | 0.03 | 0.04 | 0.05 | 0.06 | 0.07 | 0.08 | 0.09 | 0 |
| udp | tick-to-trade | ⚠ 37/40, 2 ticks lost | 37 | 20.00 | 40.00 | 60.00 | 80.00 | 100.00 | 120.00 | 140.00 | 160.00 | 180.00 | 0 |
| udp | tick-to-trade, seen by the replay | ⚠ 37/40, 2 ticks lost | 40 | 20.50 | 41.00 | 61.50 | 82.00 | 102.50 | 123.00 | 143.50 | 164.00 | 184.50 | 0 |
| udp | harness delay (arrival: kernel SO_TIMESTAMPNS) | ⚠ 37/40, 2 ticks lost | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 4.50 | 0 |
| udp | trader RX→TX | ⚠ 37/40, 2 ticks lost | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 4.50 | 0 |
| udp | engine on_tick | ⚠ 37/40, 2 ticks lost | 1000 | 0.01 | 0.02 | 0.03 | 0.04 | 0.05 | 0.06 | 0.07 | 0.08 | 0.09 | 0 |
| reflect | tick-to-trade | 1000/1000 | 1000 | 5.00 | 10.00 | 15.00 | 20.00 | 25.00 | 30.00 | 35.00 | 40.00 | 45.00 | 0 |
| reflect | tick-to-trade, seen by the replay | 1000/1000 | 40 | 5.50 | 11.00 | 16.50 | 22.00 | 27.50 | 33.00 | 38.50 | 44.00 | 49.50 | 0 |
| reflect | harness delay (arrival: kernel SO_TIMESTAMPNS) | 1000/1000 | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 4.50 | 0 |
| xdp-bypass | tick-to-trade | 40/40 | 40 | 8.00 | 16.00 | 24.00 | 32.00 | 40.00 | 48.00 | 56.00 | 64.00 | 72.00 | 0 |
| xdp-bypass | tick-to-trade, seen by the replay | 40/40 | 40 | 8.50 | 17.00 | 25.50 | 34.00 | 42.50 | 51.00 | 59.50 | 68.00 | 76.50 | 0 |
| xdp-bypass | harness delay (arrival: kernel SO_TIMESTAMPNS) | 40/40 | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 4.50 | 0 |
| xdp-bypass | trader RX→TX | 40/40 | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 4.50 | 0 |
| xdp-bypass | engine on_tick | 40/40 | 1000 | 0.01 | 0.02 | 0.03 | 0.04 | 0.05 | 0.06 | 0.07 | 0.08 | 0.09 | 0 |
| reflect-bypass | tick-to-trade | 1000/1000 | 1000 | 4.00 | 8.00 | 12.00 | 16.00 | 20.00 | 24.00 | 28.00 | 32.00 | 36.00 | 0 |
| reflect-bypass | tick-to-trade, seen by the replay | 1000/1000 | 40 | 4.50 | 9.00 | 13.50 | 18.00 | 22.50 | 27.00 | 31.50 | 36.00 | 40.50 | 0 |
| reflect-bypass | harness delay (arrival: kernel SO_TIMESTAMPNS) | 1000/1000 | 40 | 0.50 | 1.00 | 1.50 | 2.00 | 2.50 | 3.00 | 3.50 | 4.00 | 4.50 | 0 |
| cpu floor | shared-memory ping-pong RTT, cpu0↔cpu1, 1.0 s | - | 1000000 | 0.10 | 0.20 | 0.30 | 0.40 | 0.50 | 0.60 | 0.70 | 0.80 | 0.90 | 0 |
| sockperf | kernel UDP ping-pong RTT, 64 B, blocking | - | 63015 | 12.58 | 13.37 | 15.74 | 30.66 | 3342.39 | 8048.48 | 12053.41 | 24.58 | 206.93 | - |

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
    let mut ms = fixtures::measured(Path::new("unused"));
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
    let mut ms = fixtures::measured(Path::new("unused"));
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
        .position(|m| m.row == row::REFLECT)
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
fn tcp_order_rows_show_both_ends_counts_and_their_cost_over_the_same_paths_udp_orders() {
    let dir = std::env::temp_dir();
    let mut rows = fixtures::measured(&dir);
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
        row: "xdp+tcp-kernel",
        path: TraderPath::Xdp,
        udp_orders: Some("xdp"),
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
    session_table(&mut t, &fixtures::measured(&dir));
    assert!(t.is_empty());
}

#[test]
fn report_md_is_built_from_typed_results() {
    let md = markdown(
        &fixtures::measured(Path::new("unused")),
        Some(&fixtures::sockperf()),
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
fn closed_loop_rows_are_not_called_tick_to_trade() {
    let mut m = fixtures::measured(Path::new("unused"));
    for x in &mut m {
        x.replay.closed_loop = true;
        x.replay.rate_per_s = None;
    }
    let md = markdown(&m, None, None);
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
    let mut m = fixtures::measured(Path::new("unused"));
    m.truncate(1);
    let r = &mut m[0].replay;
    r.tick_to_trade = Summary::default();
    r.orders_received = 0;
    r.parity.expected_orders = 0;
    r.parity.verdict = ParityVerdict::NothingToCheck { ticks: 4 };
    let md = markdown(&m, None, None);
    assert!(
        md.contains("| xdp | tick-to-trade | 0/0 | 0 | - | - | - | - | - | - | - | - | - | 0 |"),
        "{md}"
    );
    assert!(
        md.contains("verdict: 1 problem(s):\n- xdp: nothing to check"),
        "{md}"
    );
}
