//! Privileged checks of where a feed starts and what it is numbered: a trader that joins a
//! session in the middle, captures replayed with their own session and sequence numbers (from
//! 0, and from 2^40), and a replay whose trader isn't there. Each in a lab of its own; as an
//! ordinary user each says it is skipped and passes.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use std::{path::Path, process::Stdio, time::Duration};
use {
    afxdp as _, engine as _, nix as _, serde_json as _, soup as _, trader as _, trader_core as _,
    wire as _,
};

use netns::{ChildGuard, LabConfig, lab};
use results::{ReplayReport, TraderReport};

mod common;

use common::{
    inject_report::RelayReport, lab_or_skip, lab_with_or_skip, read_report, replay, start_relay,
    start_trader, tmp, trader_md, wait_exit,
};

const TICKS: u64 = 2_000;

/// One run straight from the replay to a trader on `path` that learns the feed; the replay's
/// extra options `extra`.
fn run(
    c: &LabConfig,
    path: &str,
    source: &str,
    tag: &str,
    extra: &[&str],
) -> (ReplayReport, TraderReport) {
    run_with(c, path, source, tag, extra, &[])
}

/// [`run`], the trader given `trader_extra` too.
fn run_with(
    c: &LabConfig,
    path: &str,
    source: &str,
    tag: &str,
    extra: &[&str],
    trader_extra: &[&str],
) -> (ReplayReport, TraderReport) {
    let (tj, rj) = (
        tmp(&format!("{tag}-trader.json")),
        tmp(&format!("{tag}-replay.json")),
    );
    let args = [&["--wait", "block"][..], trader_extra].concat();
    let mut trader = start_trader(c, path, &tj, &args);
    let st = replay(c, source, &trader_md(c), &rj)
        .args(["--rate", "10k", "--drain-ms", "300", "--label", tag])
        .args(extra)
        .stderr(Stdio::inherit())
        .status()
        .expect("replay runs");
    assert!(st.success(), "{tag}: replay {st}");
    let st = wait_exit(&mut trader, Duration::from_secs(10), "trader");
    assert!(st.success(), "{tag}: trader {st}");
    (read_report(&rj), read_report(&tj))
}

/// Every tick traded, from `first`, in `session`, no gap, parity.
fn check(tag: &str, (r, t): &(ReplayReport, TraderReport), session: &str, first: u64) {
    let k = &t.counters;
    assert_eq!(r.sent_messages, TICKS, "{tag}");
    assert_eq!(
        t.feed.session.as_deref(),
        Some(session),
        "{tag}: {:?}",
        t.feed
    );
    assert_eq!(t.feed.first_seq, Some(first), "{tag}: {:?}", t.feed);
    assert_eq!(
        (
            k.ticks,
            k.gap_messages,
            k.late_messages,
            k.before_join_messages
        ),
        (TICKS, 0, 0, 0),
        "{tag}: joined at {first}, no gap of {first} - 1: {k:?}"
    );
    assert_eq!(
        (k.wrong_session, k.suspect_sequence, k.unconfirmed_packets),
        (0, 0, 0),
        "{tag}: {k:?}"
    );
    assert!(r.parity.ok(), "{tag}: {:?}", r.parity);
    assert_eq!(r.orders_received, k.orders, "{tag}");
}

#[test]
fn a_trader_joining_mid_session_starts_where_it_joins() {
    let Some(lab) = lab_or_skip("join") else {
        return;
    };
    let c = lab.config().clone();
    let count = TICKS.to_string();
    let source = format!("gbm:42:{TICKS}");
    for path in ["xdp", "udp"] {
        let tag = format!("join-{path}");
        let out = run(
            &c,
            path,
            &source,
            &tag,
            &["--count", &count, "--first-seq", "1000000"],
        );
        check(&tag, &out, paths::market::SESSION, 1_000_000);
    }
}

#[test]
fn captures_numbered_from_zero_and_from_two_to_the_forty_replay_as_they_are() {
    let Some(lab) = lab_or_skip("capture") else {
        return;
    };
    let c = lab.config().clone();
    let count = TICKS.to_string();
    let source = format!("gbm:42:{TICKS}");
    for (first, session) in [(0u64, "CAPZERO"), (1 << 40, "CAP2TO40")] {
        // A capture made by the replay itself, in a session and numbering of its own...
        let pcap = tmp(&format!("{session}.pcap"));
        let tag = format!("make-{session}");
        let made = run(
            &c,
            "udp",
            &source,
            &tag,
            &[
                "--count",
                &count,
                "--first-seq",
                &first.to_string(),
                "--session",
                session,
                "--pcap-out",
                pcap.to_str().expect("a UTF-8 temporary path"),
            ],
        );
        check(&tag, &made, session, first);
        // ...replayed as it is: its session and numbers, not the lab's.
        let tag = format!("replay-{session}");
        let source = format!("pcap:{}", pcap.display());
        let out = run(&c, "xdp", &source, &tag, &[]);
        check(&tag, &out, session, first);
        let _ = std::fs::remove_file(Path::new(&pcap));
    }
}

/// The full-depth generated market, its lab symbol printing as Trade messages, through the lab
/// with the trader as it is (it reads only `SYNTH`'s Trade messages), and, with `--symbols
/// SYNTH`, through its book: on the xdp path with the driver filter dropping the packets that
/// carry nothing for SYNTH, on the trigger path with the program firing on SYNTH's Order
/// Executed through the firing set the trader keeps in step with its book. The orders are those the
/// ticker feed of the same seed gives, to the bit, and every other symbol's adds, cancels,
/// replaces, deletes, executions, crosses and imbalances, sequenced among them and packed 16
/// to a packet, cost the trader no tick, no gap and no malformed count.
#[test]
fn the_generated_market_trades_as_the_ticker_of_its_seed() {
    let Some(lab) = lab_or_skip("market") else {
        return;
    };
    let c = lab.config().clone();
    let count = TICKS.to_string();
    for path in ["xdp", "udp", "trigger"] {
        // The trigger's orders leave by XDP_TX into the veth: the exchange's end needs a
        // program too.
        let mut replay = vec!["--count", count.as_str()];
        if path == "trigger" {
            replay.extend_from_slice(&["--xdp-pass-on", c.exchange_if.as_str()]);
        }
        let ticker = run(
            &c,
            path,
            &format!("gbm:42:{TICKS}"),
            &format!("ticker-{path}"),
            &replay,
        );
        // The day printed as Trade messages to the ticker trader, and as Add Order + Order
        // Executed (no price on the print) to a trader that keeps SYNTH's book.
        for (tag, source, trader_extra) in [
            (
                format!("market-{path}"),
                "market:42:150000:per-print=8:symbols=300:synth=P",
                &[][..],
            ),
            (
                format!("market-book-{path}"),
                "market:42:150000:per-print=8:symbols=300",
                &["--symbols", "SYNTH"][..],
            ),
        ]
        .into_iter()
        // The trigger is here for its book: on the ticker's Trade messages packed 16 a packet
        // it never fires (that case is the xdp path's, which the trigger's socket path is).
        .filter(|(_, _, extra)| path != "trigger" || !extra.is_empty())
        {
            let (r, t) = run_with(
                &c,
                path,
                source,
                &tag,
                &[&replay[..], &["--batch", "16"]].concat(),
                trader_extra,
            );
            let k = &t.counters;
            // Every message of the day went out, many more than the ticks.
            assert!(r.sent_messages > 9 * TICKS, "{tag}: {}", r.sent_messages);
            assert_eq!(
                k.ticks, TICKS,
                "{tag}: every SYNTH print reached the strategy"
            );
            for (name, none) in [
                ("gap_messages", k.gap_messages),
                ("late_messages", k.late_messages),
                ("duplicate_messages", k.duplicate_messages),
                ("malformed_messages", k.malformed_messages),
                ("malformed_packets", k.malformed_packets),
                ("malformed_framing", k.malformed_framing),
                ("book_refused", k.book_refused),
            ] {
                assert_eq!(none, 0, "{tag}: {name}: {k:?}");
            }
            if !trader_extra.is_empty() {
                // The book trader read only SYNTH's messages; the rest were sequenced, unread
                // (or, on xdp, dropped in the driver and claimed).
                assert!(
                    k.unwatched_messages + k.filtered_skipped > 8 * TICKS,
                    "{tag}: {k:?}"
                );
                assert!(k.book_messages >= 2 * TICKS, "{tag}: {k:?}");
            }
            if !trader_extra.is_empty() && path == "xdp" {
                // The driver filter dropped packets with nothing for SYNTH, and every number
                // it dropped reached the sequencer as a claim: none a gap, none lost.
                let x = t.xdp_counters.as_ref().expect("the program's counters");
                assert!(x.filtered_packets > 0, "{tag}: {x:?}");
                assert_eq!(x.filter_unclaimed, 0, "{tag}: {x:?}");
                assert_eq!(
                    k.filtered_skipped, x.filtered_messages,
                    "{tag}: {k:?} {x:?}"
                );
            }
            if !trader_extra.is_empty() && path == "trigger" {
                // The book trigger fired on SYNTH's executions, each the order the trader would
                // have sent (checked against its own decision on the packet's copy), and the
                // fired packets came back to the sequencer in order (no gap, no late above).
                let g = t.trigger.as_ref().expect("the trigger's report");
                assert!(g.fired > TICKS / 20, "{tag}: {g:?}");
                assert_eq!((g.mismatch, g.firing_set_failed), (0, 0), "{tag}: {g:?}");
            }
            assert!(r.parity.ok(), "{tag}: {:?}", r.parity);
            let (a, b) = (&ticker.0.parity, &r.parity);
            assert!(a.expected_orders > 100, "{tag}: the strategy trades");
            assert_eq!(
                (a.expected_orders, a.live_trades, a.live_pnl.to_bits()),
                (b.expected_orders, b.live_trades, b.live_pnl.to_bits()),
                "{tag}: the market's orders are the ticker's"
            );
            assert_eq!(r.orders_received, ticker.0.orders_received, "{tag}");
            assert_eq!(
                (t.account.orders, t.account.pnl.to_bits()),
                (ticker.1.account.orders, ticker.1.account.pnl.to_bits()),
                "{tag}: the trader's own account"
            );
        }
    }
}

#[test]
fn the_replay_keeps_sending_and_reports_when_no_trader_listens() {
    let Some(lab) = lab_or_skip("notrader") else {
        return;
    };
    let c = lab.config().clone();
    let rj = tmp("notrader-replay.json");
    // Nothing listens on the feed port: the trader's kernel answers "port unreachable", which
    // the replay's connected socket reports as ECONNREFUSED on a later send.
    let mut r = ChildGuard::new(
        replay(&c, &format!("gbm:42:{TICKS}"), &trader_md(&c), &rj)
            .args([
                "--count",
                &TICKS.to_string(),
                "--rate",
                "10k",
                "--drain-ms",
                "100",
            ])
            .spawn()
            .expect("replay starts"),
    );
    let st = wait_exit(&mut r, Duration::from_secs(20), "replay");
    assert!(st.success(), "replay: {st}");
    let report: ReplayReport = read_report(&rj);
    assert_eq!(
        report.sent_messages + report.send_dropped,
        TICKS,
        "every message sent or counted as refused: {report:?}"
    );
    assert_eq!(report.orders_received, 0);
}

/// Writes `value` to `path` (a sysfs file) inside the namespace `ns`.
fn write_in_ns(ns: &str, path: &str, value: &str) {
    let st = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            ns,
            "sh",
            "-c",
            &format!("echo {value} > {path}"),
        ])
        .status()
        .expect("ip netns exec");
    assert!(st.success(), "writing {value} to {path} in {ns}");
}

#[test]
fn a_feed_arriving_on_rx_queue_1_of_a_two_queue_veth_is_traded() {
    let Some(lab) = lab_with_or_skip(LabConfig::for_test("queues").with_queues(2)) else {
        return;
    };
    let c = lab.config().clone();
    // Steer by sending CPU (XPS on the exchange's veth: CPU 0 to TX queue 0, CPU 1 to TX queue
    // 1); veth delivers a frame to the peer's RX queue of the same number. A relay pinned to
    // CPU 1 then puts the whole feed on the trader's RX queue 1.
    for (q, mask) in [(0, "1"), (1, "2")] {
        let path = format!("/sys/class/net/{}/queues/tx-{q}/xps_cpus", c.exchange_if);
        write_in_ns(&c.exchange_ns(), &path, mask);
    }
    let (tj, rj, xj) = (
        tmp("queues-trader.json"),
        tmp("queues-replay.json"),
        tmp("queues-relay.json"),
    );
    let relay_port = lab::MD_PORT + 10;
    let mut trader = start_trader(&c, "xdp", &tj, &["--wait", "block"]);
    let mut relay = start_relay(&c, relay_port, &trader_md(&c), "1", &xj, &[], Some(1));
    let st = replay(
        &c,
        &format!("gbm:42:{TICKS}"),
        &format!("{}:{relay_port}", c.exchange_ip),
        &rj,
    )
    .args([
        "--count",
        &TICKS.to_string(),
        "--rate",
        "10k",
        "--drain-ms",
        "300",
    ])
    .status()
    .expect("replay runs");
    assert!(st.success(), "replay: {st}");
    assert!(wait_exit(&mut relay, Duration::from_secs(10), "relay").success());
    assert!(wait_exit(&mut trader, Duration::from_secs(10), "trader").success());
    let (r, t, x): (ReplayReport, TraderReport, RelayReport) =
        (read_report(&rj), read_report(&tj), read_report(&xj));
    assert_eq!(
        t.rx_queue_frames.len(),
        2,
        "a socket on each queue: {:?}",
        t.rx_queue_frames
    );
    let data = x.forwarded_packets - x.end_of_session;
    assert_eq!(
        t.rx_queue_frames[0], 0,
        "nothing on queue 0: {:?}",
        t.rx_queue_frames
    );
    assert!(
        (data + 1..=data + x.end_of_session).contains(&t.rx_queue_frames[1]),
        "the feed (and an end of session) on queue 1: {:?}, {data} data packets",
        t.rx_queue_frames
    );
    let xc = t.xdp_counters.expect("the program's counters");
    assert_eq!(xc.redirect_failed, 0, "every frame found a socket: {xc:?}");
    assert_eq!(t.counters.ticks, TICKS);
    assert!(r.parity.ok(), "{:?}", r.parity);
}
