//! Privileged reliability checks with the real binaries in labs of their own: malformed and
//! non-matching traffic mixed into a valid feed, network faults (loss, duplication,
//! reordering, delay), the trader's life cycle (SIGINT, SIGTERM, SIGKILL) and misuse. As an
//! ordinary user each test that needs a lab says it is skipped and passes.
//!
//! Faults come from `inject relay`, a seeded userspace relay between the replay and the
//! trader, not from `tc netem`: the lab's kernel may lack `sch_netem` (this one has
//! `CONFIG_NET_SCH_NETEM` unset), and the relay says exactly which sequence numbers it dropped,
//! duplicated or held back, so the assertions can be exact rather than statistical.
//!
//! Run one at a time (`--test-threads=1`): two labs pushing packets over two cores starve each
//! other, and the exact counts below assume nothing else drops packets.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use std::{
    net::UdpSocket,
    path::Path,
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};
use {afxdp as _, nix as _, serde_json as _, soup as _, trader as _};

use netns::{ChildGuard, LabConfig, Signal, in_netns, lab};
use paths::TraderPath;
use results::{EndReason, FrameCounts, ParityVerdict, ReplayReport, TraderReport};
use wire::itch::{self, Price4, Stock};

mod common;

use common::{
    in_ns,
    inject_report::{FramesReport, RelayReport},
    lab_or_skip, read_report, start_relay, start_trader, tmp, trader_md, wait_exit,
};

/// A port the tests listen on in the trader namespace: what should reach the kernel, not the
/// trader, goes there.
const SINK_PORT: u16 = lab::ORDER_PORT + 1;
/// Where the fault relay listens in the exchange namespace (and, one above, for orders).
const RELAY_PORT: u16 = lab::MD_PORT + 10;

/// The replay, as every test here runs it: a short drain, so a run with lost orders ends soon.
fn replay(c: &LabConfig, source: &str, target: &str, json: &Path, extra: &[&str]) -> Command {
    let mut r = common::replay(c, source, target, json);
    r.args(["--drain-ms", "300"]).args(extra);
    r
}

/// The XDP program attached to `dev` in `ns`, as `ip link` shows it (`prog/xdp`, `xdpgeneric`).
fn xdp_attached(ns: &str, dev: &str) -> bool {
    let out = Command::new("ip")
        .args(["-n", ns, "link", "show", "dev", dev])
        .output()
        .expect("ip link");
    assert!(out.status.success(), "ip link show {dev} in {ns}");
    String::from_utf8_lossy(&out.stdout).contains("xdp")
}

/// A kernel UDP socket in the trader namespace, counting what reaches it until stopped.
struct Sink {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<usize>>,
}

impl Sink {
    fn start(c: &LabConfig) -> Sink {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = {
            let (c, stop) = (c.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                in_netns(&c.trader_ns(), move || {
                    let s = UdpSocket::bind((c.trader_ip, SINK_PORT)).expect("sink bind");
                    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
                    ready_tx.send(()).unwrap();
                    let mut buf = [0u8; 2048];
                    let mut lens = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        if let Ok(n) = s.recv(&mut buf) {
                            lens.push(n);
                        }
                    }
                    lens
                })
                .expect("enter the trader namespace")
            })
        };
        ready_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("sink ready");
        Sink { stop, thread }
    }

    fn finish(self) -> Vec<usize> {
        std::thread::sleep(Duration::from_millis(100));
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("sink thread")
    }
}

/// What the ITCH file written by [`itch_file_with_lies`] holds.
struct ItchMix {
    messages: u64,
    trades: u64,
    unknown_type: u64,
    wrong_length: u64,
    other_valid: u64,
}

/// A raw ITCH file of `trades` Trade messages of GBM closes with, every 100th message, one of
/// three others: an unknown type, a Trade one byte short, a valid System Event. Replayed as it
/// is, each takes its own sequence number in the one session, so the lies never share one with
/// a valid tick.
fn itch_file_with_lies(path: &Path, trades: usize) -> ItchMix {
    let stock = Stock::new("SYNTH").unwrap();
    let closes = engine::data::gbm(7, trades);
    let mut w = itch::file::Writer::new(std::fs::File::create(path).expect("create itch file"));
    let mut mix = ItchMix {
        messages: 0,
        trades: 0,
        unknown_type: 0,
        wrong_length: 0,
        other_valid: 0,
    };
    for (i, &c) in closes.iter().enumerate() {
        if i % 100 == 50 {
            let (m, slot): (Vec<u8>, &mut u64) = match (i / 100) % 3 {
                0 => (vec![b'z'; 44], &mut mix.unknown_type),
                1 => {
                    let mut m = [0u8; itch::trade::LEN];
                    trader_core::trade_message(0, stock, Price4::from_f64_quantised(c).unwrap(), 0)
                        .emit_into(&mut m)
                        .unwrap();
                    (m[..itch::trade::LEN - 1].to_vec(), &mut mix.wrong_length)
                }
                _ => {
                    let mut m = vec![0u8; 12];
                    m[0] = b'S';
                    m[11] = b'O';
                    (m, &mut mix.other_valid)
                }
            };
            w.write_message(&m).unwrap();
            *slot += 1;
            mix.messages += 1;
        }
        let mut m = [0u8; itch::trade::LEN];
        let p = Price4::from_f64_quantised(c).unwrap();
        trader_core::trade_message(i as u64, stock, p, i as u64 * 1000)
            .emit_into(&mut m)
            .unwrap();
        w.write_message(&m).unwrap();
        mix.trades += 1;
        mix.messages += 1;
    }
    w.finish().unwrap();
    mix
}

/// The kernel's IP and UDP counters in a namespace, as `Proto.Name`: `/proc/net/snmp` (`Ip`,
/// `Udp`, ...) and `/proc/net/netstat` (`IpExt`: `InCsumErrors`, `InTruncatedPkts`, ...), both
/// lines of names followed by a line of values.
fn snmp(ns: &str) -> std::collections::HashMap<String, u64> {
    let mut m = std::collections::HashMap::new();
    for file in ["/proc/net/snmp", "/proc/net/netstat"] {
        let out = Command::new("ip")
            .args(["netns", "exec", ns, "cat", file])
            .output()
            .unwrap_or_else(|e| panic!("cat {file}: {e}"));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.chunks(2) {
            let [names, values] = pair else { continue };
            let (proto, names) = names.split_once(':').unwrap();
            let (_, values) = values.split_once(':').unwrap();
            for (n, v) in names.split_whitespace().zip(values.split_whitespace()) {
                if let Ok(v) = v.parse() {
                    m.insert(format!("{proto}.{n}"), v);
                }
            }
        }
    }
    m
}

/// Whether the namespace forwards IPv4 (a new namespace inherits the host's setting).
fn forwarding(ns: &str) -> bool {
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            ns,
            "cat",
            "/proc/sys/net/ipv4/conf/all/forwarding",
        ])
        .output()
        .expect("cat forwarding");
    String::from_utf8_lossy(&out.stdout).trim() != "0"
}

const ROUNDS: u64 = 10;

/// What a run of [`malformed_mix`] produced.
struct MalformedRun {
    path: TraderPath,
    mix: ItchMix,
    replay: ReplayReport,
    trader: TraderReport,
    inject: FramesReport,
    /// Datagram lengths the sink socket received.
    sunk: Vec<usize>,
    /// Changes in the kernel's counters ([`snmp`]) of the trader namespace over the run.
    snmp: std::collections::HashMap<String, u64>,
    /// Whether the trader namespace forwards IPv4.
    forwarding: bool,
}

/// Malformed and non-matching traffic, mixed into a valid replayed feed.
///
/// The rule that keeps lies from eating valid ticks' sequence numbers: ITCH-level lies
/// (unknown type, wrong length) are messages of the replayed file, each with its own sequence
/// number; MoldUDP64 framing lies claim the sequence number of a tick still to come, and the
/// trader must reject such a packet whole without consuming any sequence number (if it did,
/// the real tick would be taken as a duplicate or the jump as a gap, and `ticks` would fall
/// short).
fn malformed_mix(path: TraderPath) {
    let Some(lab) = lab_or_skip(&format!("bad{path}")) else {
        return;
    };
    let c = lab.config().clone();
    let itch_path = tmp(&format!("{path}-mix.itch"));
    let mix = itch_file_with_lies(&itch_path, 3_000);
    let (trader_json, replay_json, inject_json) = (
        tmp(&format!("{path}-bad-trader.json")),
        tmp(&format!("{path}-bad-replay.json")),
        tmp(&format!("{path}-bad-inject.json")),
    );
    let sink = Sink::start(&c);
    let snmp_before = snmp(&c.trader_ns());
    // The feed's source named by address only: `inject frames` sends its lying MoldUDP64
    // from another port of the exchange's address, and these lies are about framing, not the
    // source (tests/trust.rs drops them by port).
    let exchange = c.exchange_ip.to_string();
    let mut trader = start_trader(
        &c,
        path.as_str(),
        &trader_json,
        &["--wait", "block", "--feed-source", &exchange],
    );
    let source = format!("itch:{}", itch_path.display());
    let mut replay = ChildGuard::new(
        replay(&c, &source, &trader_md(&c), &replay_json, &["--rate", "5k"])
            .args(["--label", path.as_str()])
            .spawn()
            .expect("replay starts"),
    );
    std::thread::sleep(Duration::from_millis(100));
    let inject = in_ns(&c.exchange_ns(), &lab_tests::bin("inject"))
        .args(["frames", "--iface", &c.exchange_if])
        .args(["--dst-mac", &c.trader_mac.to_string()])
        .args(["--src-ip", &c.exchange_ip.to_string()])
        .args(["--dst-ip", &c.trader_ip.to_string()])
        .args(["--sink-port", &SINK_PORT.to_string()])
        .args(["--lie-seq", &(mix.messages - 5).to_string()])
        .args(["--rounds", &ROUNDS.to_string(), "--interval-us", "20000"])
        .arg("--json-out")
        .arg(&inject_json)
        .status()
        .expect("inject runs");
    assert!(inject.success(), "inject: {inject}");
    let st = wait_exit(&mut replay, Duration::from_secs(20), "replay");
    assert!(st.success(), "replay: {st}");
    let st = wait_exit(&mut trader, Duration::from_secs(10), "trader");
    assert!(st.success(), "trader: {st}");
    let sunk = sink.finish();
    let snmp_after = snmp(&c.trader_ns());
    let _ = std::fs::remove_file(&itch_path);
    let run = MalformedRun {
        path,
        mix,
        replay: read_report(&replay_json),
        trader: read_report(&trader_json),
        inject: read_report(&inject_json),
        sunk,
        forwarding: forwarding(&c.trader_ns()),
        snmp: snmp_after
            .iter()
            .map(|(k, after)| {
                let before = snmp_before.get(k).copied().unwrap_or(0);
                (k.clone(), after.saturating_sub(before))
            })
            .collect(),
    };
    eprintln!("inject: {:?}\ntrader: {:?}", run.inject, run.trader);
    check_malformed_run(&run);
    match path {
        TraderPath::Xdp => check_malformed_xdp(&run),
        _ => check_malformed_kernel(&run),
    }
    // ARP works through the program: the exchange resolved the trader.
    assert!(
        netns::exchange_resolved_trader(&c),
        "ARP resolved the trader's MAC"
    );
}

/// What holds on either path: every kind sent, every valid tick traded, every lie counted.
fn check_malformed_run(run: &MalformedRun) {
    let MalformedRun {
        path,
        mix,
        replay: r,
        trader: t,
        inject,
        sunk,
        ..
    } = run;
    // The injector sent every kind, every round; the kernel refused only the frame above the MTU.
    for (kind, rep) in inject {
        let per_round = if kind == "fragment" { 2 } else { 1 };
        if kind == "oversized_frame" {
            assert_eq!(rep.refused, ROUNDS, "{kind}: {rep:?}");
            let error = rep.error.as_deref().unwrap_or_default();
            assert!(error.contains("too long"), "{kind}: EMSGSIZE: {rep:?}");
        } else {
            assert_eq!(rep.sent, per_round * ROUNDS, "{kind}: {rep:?}");
        }
    }

    // Every valid tick was processed, and nothing else traded.
    let k = &t.counters;
    assert_eq!(r.sent_messages, mix.messages, "{path}");
    assert_eq!(k.ticks, mix.trades, "{path}: every valid tick: {k:?}");
    // An ITCH lie (an unknown type, a Trade one byte short) is off the feed's profile: its
    // packet is held, never traded, and passed by the feed, its number a gap.
    let lies = mix.unknown_type + mix.wrong_length;
    assert_eq!(
        (k.off_profile, k.malformed_messages, k.gap_messages),
        (lies, 0, lies),
        "{path}: ITCH lies, one a packet: {k:?}"
    );
    assert_eq!(k.other_messages, mix.other_valid, "{path}: {k:?}");
    // A header shorter than 20 bytes, and the zero-length datagram.
    assert_eq!(k.malformed_packets, 2 * ROUNDS, "{path}: {k:?}");
    // Count too high, too low, a block overrun, a cut length prefix, the large count lie.
    assert_eq!(k.malformed_framing, 5 * ROUNDS, "{path}: {k:?}");
    for (name, zero) in [
        ("late_messages", k.late_messages),
        ("duplicate_messages", k.duplicate_messages),
        ("wrong_session", k.wrong_session),
    ] {
        assert_eq!(zero, 0, "{path}: {name}: {k:?}");
    }
    let p = &r.parity;
    assert_eq!(k.orders, p.expected_orders, "{path}: {p:?}");
    assert_eq!(r.orders_received, p.expected_orders, "{path}");
    assert!(p.ok(), "{path}: parity: {p:?}");

    // What isn't market data reached the kernel: IP options, the reassembled fragments, the
    // other port and the largest frame all arrived on the sink socket.
    assert_eq!(sunk.len() as u64, 4 * ROUNDS, "{path}: sink got {sunk:?}");
    assert!(sunk.contains(&(1514 - 42)), "{path}: the max-size datagram");
    assert!(sunk.contains(&64), "{path}: the reassembled fragments");
}

/// The XDP program counted each kind where it belongs, and redirected only what it should.
fn check_malformed_xdp(run: &MalformedRun) {
    let t = &run.trader;
    let x = t
        .xdp_counters
        .expect("the XDP path reports the program's counters");
    // Truncated Ethernet, IPv4 and UDP headers, and IHL < 5.
    assert_eq!(x.malformed, 4 * ROUNDS, "{x:?}");
    assert_eq!(x.passed_ip_options, ROUNDS, "{x:?}");
    assert_eq!(x.passed_fragment, 2 * ROUNDS, "{x:?}");
    assert_eq!(
        x.passed_other_port,
        2 * ROUNDS,
        "wrong port, max frame: {x:?}"
    );
    assert_eq!(x.passed_not_udp, ROUNDS, "{x:?}");
    // VLAN and IPv6, plus ARP.
    assert!(x.passed_not_ipv4 > 2 * ROUNDS, "{x:?}");
    assert_eq!(x.redirect_failed, 0, "{x:?}");
    // Valid packets, the zero-length datagram, the two length lies, the two bad checksums,
    // the two wrong destinations, six MoldUDP64 lies, and one to three end-of-session packets
    // (the trader stops at the first).
    let md = run.replay.sent_packets + 13 * ROUNDS;
    assert!((md + 1..=md + 3).contains(&x.redirected), "{md}: {x:?}");
    // The two length lies, the bad checksums and the wrong destinations reach the trader,
    // whose parser rejects each as the kernel would, and nothing else.
    assert_eq!(
        t.frames_not_ours,
        FrameCounts {
            malformed: 2 * ROUNDS,
            bad_ip_checksum: ROUNDS,
            bad_udp_checksum: ROUNDS,
            wrong_dst_ip: ROUNDS,
            wrong_dst_mac: ROUNDS,
            ..FrameCounts::default()
        }
    );
}

/// The kernel dropped the broken IPv4 and UDP headers, the bad checksums and the datagram to
/// another address, and counted them. (The frame to another MAC it drops uncounted, as
/// `PACKET_OTHERHOST`: that it wasn't traded shows in [`check_malformed_run`].)
fn check_malformed_kernel(run: &MalformedRun) {
    let d = |k: &str| run.snmp.get(k).copied().unwrap_or(0);
    eprintln!(
        "snmp: InHdrErrors {} InTruncatedPkts {} InCsumErrors {} InAddrErrors {} \
         Udp.InErrors {} Udp.InCsumErrors {} Udp.NoPorts {}",
        d("Ip.InHdrErrors"),
        d("IpExt.InTruncatedPkts"),
        d("IpExt.InCsumErrors"),
        d("Ip.InAddrErrors"),
        d("Udp.InErrors"),
        d("Udp.InCsumErrors"),
        d("Udp.NoPorts")
    );
    let path = run.path;
    // Exactly the crafted bad checksums: nothing else the lab sends has one.
    assert_eq!(
        d("IpExt.InCsumErrors"),
        ROUNDS,
        "{path}: IPv4 header checksum"
    );
    assert_eq!(d("Udp.InCsumErrors"), ROUNDS, "{path}: UDP checksum");
    // Truncated Ethernet and IPv4 headers, IHL < 5, the bad IPv4 checksum, and the IPv4 length
    // lie (a truncated packet here; kernels have differed on where it lands); the truncated
    // UDP header, the UDP length lie and the bad UDP checksum.
    let ip_bad = d("Ip.InHdrErrors") + d("IpExt.InTruncatedPkts");
    assert_eq!(ip_bad, 5 * ROUNDS, "{path}: InHdrErrors + InTruncatedPkts");
    assert_eq!(d("Udp.InErrors"), 3 * ROUNDS, "{path}: Udp.InErrors");
    if run.forwarding {
        // Forwarded (or refused for want of a route): host-dependent, so not counted here.
        eprintln!("{path}: the trader namespace forwards IPv4; InAddrErrors not checked");
    } else {
        assert_eq!(d("Ip.InAddrErrors"), ROUNDS, "{path}: another IPv4 address");
    }
}

#[test]
fn malformed_traffic_on_the_xdp_path_is_counted_and_valid_ticks_still_trade() {
    malformed_mix(TraderPath::Xdp);
}

#[test]
fn malformed_traffic_on_the_udp_path_is_counted_and_valid_ticks_still_trade() {
    malformed_mix(TraderPath::Udp);
}

/// What one run through the fault relay produced.
struct FaultRun {
    replay: ReplayReport,
    trader: TraderReport,
    relay: RelayReport,
}

const FAULT_TICKS: u64 = 3_000;

/// The relay options that pass the trader's orders (sent to `RELAY_PORT + 1`) on to the
/// replay, from the relay's own socket.
fn orders_through(c: &LabConfig) -> [String; 4] {
    [
        "--order-listen".into(),
        format!("{}:{}", c.exchange_ip, RELAY_PORT + 1),
        "--order-to".into(),
        format!("{}:{}", c.exchange_ip, lab::ORDER_PORT),
    ]
}

/// One replay of `FAULT_TICKS` ticks through `inject relay` with the given faults, or `None`
/// when skipped.
fn through_relay(path: TraderPath, tag: &str, faults: &[&str]) -> Option<FaultRun> {
    through_relay_with(path, tag, TICKER, faults, &[], &[])
}

/// The ticker series every fault run but the driver filter's replays.
const TICKER: &str = "gbm:42:150000";

/// [`through_relay`], with more options for the trader and the replay.
fn through_relay_with(
    path: TraderPath,
    tag: &str,
    source: &str,
    faults: &[&str],
    trader_extra: &[&str],
    replay_extra: &[&str],
) -> Option<FaultRun> {
    let lab = lab_or_skip(tag)?;
    let c = lab.config().clone();
    let (trader_json, replay_json, relay_json) = (
        tmp(&format!("{tag}-trader.json")),
        tmp(&format!("{tag}-replay.json")),
        tmp(&format!("{tag}-relay.json")),
    );
    let relay_orders = RELAY_PORT + 1;
    let trigger = path == TraderPath::Trigger;
    let mut trader_args = vec!["--wait", "block"];
    let relay_orders_arg = format!("{}:{relay_orders}", c.exchange_ip);
    if !trigger {
        // Through the relay, which forwards them; the trigger's go to the lab's order port:
        // straight to the replay.
        trader_args.extend(["--order-to", relay_orders_arg.as_str()]);
    }
    trader_args.extend(trader_extra);
    let mut trader = start_trader(&c, path.as_str(), &trader_json, &trader_args);
    let orders = orders_through(&c);
    let mut extra: Vec<&str> = faults.to_vec();
    extra.extend(orders.iter().map(String::as_str));
    let mut relay = start_relay(
        &c,
        RELAY_PORT,
        &trader_md(&c),
        "7",
        &relay_json,
        &extra,
        None,
    );
    let st = replay(
        &c,
        source,
        &format!("{}:{RELAY_PORT}", c.exchange_ip),
        &replay_json,
        &["--count", &FAULT_TICKS.to_string(), "--rate", "5k"],
    )
    .args(["--label", tag])
    .args(replay_extra)
    // The program's XDP_TX into a veth needs an XDP program on the exchange's end.
    .args(if trigger {
        vec!["--xdp-pass-on", c.exchange_if.as_str()]
    } else {
        Vec::new()
    })
    .status()
    .expect("replay runs");
    assert!(st.success(), "replay: {st}");
    let st = wait_exit(&mut relay, Duration::from_secs(10), "relay");
    assert!(st.success(), "relay: {st}");
    let st = wait_exit(&mut trader, Duration::from_secs(10), "trader");
    assert!(st.success(), "trader: {st}");
    let run = FaultRun {
        replay: read_report(&replay_json),
        trader: read_report(&trader_json),
        relay: read_report(&relay_json),
    };
    eprintln!(
        "{tag}: trader {:?}\nrelay lost {} duplicated {} reordered {}\nparity {:?}",
        run.trader.counters,
        run.relay.lost.len(),
        run.relay.duplicated.len(),
        run.relay.reordered.len(),
        run.replay.parity
    );
    Some(run)
}

/// The sequence-tracking rules, checked against what the relay did.
///
/// The documented rule for late packets: a message whose sequence number is below the next
/// expected one and wasn't seen before is counted in `late_messages` and not traded (the
/// strategy has moved past it); one seen before is a duplicate and dropped.
fn check_faults(tag: &str, run: &FaultRun) {
    let FaultRun {
        replay: r,
        trader: t,
        relay: x,
    } = run;
    let k = &t.counters;
    let (lost, duplicated, reordered) = (&x.lost, &x.duplicated, &x.reordered);
    assert_eq!(r.sent_messages, FAULT_TICKS, "{tag}");
    assert_eq!(
        x.received_messages, FAULT_TICKS,
        "{tag}: the relay saw every tick"
    );
    // Exactly the ticks that never arrived.
    assert_eq!(
        k.gap_messages - k.late_messages,
        lost.len() as u64,
        "{tag}: gap - late = lost: {k:?}"
    );
    // Late arrivals are counted, not traded.
    assert_eq!(k.late_messages, reordered.len() as u64, "{tag}: {k:?}");
    assert_eq!(k.ticks + k.gap_messages, FAULT_TICKS, "{tag}: {k:?}");
    // Duplicates are dropped: one order at most per tick.
    assert_eq!(
        k.duplicate_messages,
        duplicated.len() as u64,
        "{tag}: {k:?}"
    );
    assert_eq!(r.orders_duplicate, 0, "{tag}: no double order");
    assert_eq!(r.orders_unknown_tick + r.orders_price_mismatch, 0, "{tag}");
    assert_eq!(r.orders_received, k.orders, "{tag}");
    if t.path == TraderPath::Xdp {
        // Every datagram the relay forwarded went through the program, and only those.
        let data = x.forwarded_packets - x.end_of_session;
        let redirected = t
            .xdp_counters
            .expect("the XDP path reports the program's counters")
            .redirected;
        assert!(
            (data + 1..=data + x.end_of_session).contains(&redirected),
            "{tag}: redirected {redirected}, forwarded {data} + end of session"
        );
    }
    let p = &r.parity;
    if lost.is_empty() && reordered.is_empty() {
        assert!(p.ok(), "{tag}: nothing missing, parity holds: {p:?}");
    } else {
        let first_missing = lost.iter().chain(reordered).copied().min().unwrap();
        let ParityVerdict::Diverged {
            first_divergence: at,
            ..
        } = p.verdict
        else {
            panic!("{tag}: parity names the divergence: {p:?}");
        };
        assert!(
            at >= first_missing,
            "{tag}: diverges at {at}, first missing {first_missing}"
        );
        assert!(p.explanation.contains(&at.to_string()), "{tag}: {p:?}");
    }
}

#[test]
fn one_percent_loss_on_the_xdp_path_is_counted_exactly() {
    let Some(run) = through_relay(TraderPath::Xdp, "loss1", &["--loss", "0.01"]) else {
        return;
    };
    check_faults("loss 1% xdp", &run);
    assert!(!run.relay.lost.is_empty(), "the relay dropped something");
}

#[test]
fn five_percent_loss_on_the_udp_path_is_counted_exactly() {
    let Some(run) = through_relay(TraderPath::Udp, "loss5", &["--loss", "0.05"]) else {
        return;
    };
    check_faults("loss 5% udp", &run);
    assert!(run.relay.lost.len() > 50, "{}", run.relay.lost.len());
}

#[test]
fn duplicates_are_dropped_and_parity_holds() {
    let Some(run) = through_relay(TraderPath::Xdp, "dup", &["--dup", "0.05"]) else {
        return;
    };
    check_faults("dup 5% xdp", &run);
    assert!(
        run.relay.duplicated.len() > 50,
        "{:?}",
        run.relay.duplicated
    );
    assert!(run.trader.counters.duplicate_messages > 0);
}

#[test]
fn reordered_ticks_are_counted_late_and_not_traded() {
    let faults = ["--reorder", "0.02", "--reorder-depth", "3"];
    let Some(run) = through_relay(TraderPath::Udp, "reorder", &faults) else {
        return;
    };
    check_faults("reorder 2% udp", &run);
    assert!(!run.relay.reordered.is_empty());
}

#[test]
fn delay_keeps_parity_and_shows_in_tick_to_trade() {
    let Some(run) = through_relay(TraderPath::Xdp, "delay", &["--delay-us", "2000"]) else {
        return;
    };
    check_faults("delay 2 ms xdp", &run);
    let ttt = &run.replay.tick_to_trade;
    assert!(ttt.min_us >= 2000.0, "{ttt:?}");
}

#[test]
fn loss_duplication_and_reordering_together() {
    let faults = ["--loss", "0.02", "--dup", "0.02", "--reorder", "0.02"];
    let Some(run) = through_relay(TraderPath::Xdp, "allfaults", &faults) else {
        return;
    };
    check_faults("all faults xdp", &run);
    let x = &run.relay;
    assert!(!x.lost.is_empty() && !x.duplicated.is_empty() && !x.reordered.is_empty());
}

/// The trigger path through duplicates and reordering: every order at the exchange is one the
/// trader booked, no fired order is a mismatch (the trader would exit with an error), and the
/// counts are as `check_faults` has them for every path. A smoke test at scale: the narrow
/// case (a copy arriving after its tick went to the trader and its arm was written) is
/// `tests/trigger.rs`'s, step by step.
#[test]
fn the_trigger_fires_no_copy_of_a_tick() {
    let faults = ["--dup", "0.05", "--reorder", "0.02", "--reorder-depth", "3"];
    let Some(run) = through_relay(TraderPath::Trigger, "trigdup", &faults) else {
        return;
    };
    check_faults("dup 5% reorder 2% trigger", &run);
    let x = &run.relay;
    assert!(x.duplicated.len() > 50 && !x.reordered.is_empty(), "{x:?}");
    let t = run.trader.trigger.expect("the trigger's report");
    let k = run.trader.xdp_counters.expect("the program's counters");
    assert_eq!(t.mismatch, 0, "{t:?}");
    assert!(t.fired > 0, "{t:?}");
    assert_eq!(t.fired, k.trigger_fired, "every fired order was read back");
    assert_eq!(
        t.fired + t.software_orders,
        run.replay.orders_received,
        "{t:?}"
    );
}

/// The relay's lies: stray copies in another session before packets 1 and 1500, copies
/// numbered 2^40 ahead before packets 1, 700 and 2200. The trader learns the feed (no
/// `--session`), so the lies before packet 1 meet it before it knows anything.
const LIES: [&str; 4] = ["--stray-at", "1,1500", "--forge-at", "1,700,2200"];

/// Every lie was counted once, in its own bucket, and none moved the trader off the feed.
fn check_lies(tag: &str, run: &FaultRun) {
    let (k, x, feed) = (&run.trader.counters, &run.relay, &run.trader.feed);
    assert_eq!(x.stray_session, [1, 1500], "{tag}: the relay told its lies");
    assert_eq!(x.forged_seq.len(), 3, "{tag}");
    assert_eq!(k.wrong_session, 2, "{tag}: {k:?}");
    assert_eq!(k.suspect_sequence, 3, "{tag}: {k:?}");
    assert_eq!(
        (
            k.jumps_confirmed,
            k.unconfirmed_packets,
            k.before_join_messages
        ),
        (0, 0, 0),
        "{tag}: {k:?}"
    );
    assert_eq!(
        feed.session.as_deref(),
        Some(paths::market::SESSION),
        "{tag}"
    );
    assert!(!feed.session_pinned, "{tag}: learned");
    assert_eq!(feed.first_seq, Some(1), "{tag}");
    assert_eq!(feed.foreign_sessions.len(), 1, "{tag}: {feed:?}");
    assert_eq!(
        (
            feed.foreign_sessions[0].session.as_str(),
            feed.foreign_sessions[0].packets
        ),
        ("STRAY", 2),
        "{tag}"
    );
}

#[test]
fn stray_sessions_and_forged_sequence_numbers_on_the_xdp_path_cost_nothing() {
    let Some(run) = through_relay(TraderPath::Xdp, "lies", &LIES) else {
        return;
    };
    check_faults("lies xdp", &run);
    check_lies("lies xdp", &run);
    assert!(run.replay.parity.ok(), "{:?}", run.replay.parity);
}

#[test]
fn lies_and_loss_together_on_the_udp_path() {
    let mut faults = vec!["--loss", "0.02"];
    faults.extend(LIES);
    let Some(run) = through_relay(TraderPath::Udp, "liesloss", &faults) else {
        return;
    };
    check_faults("lies and loss udp", &run);
    check_lies("lies and loss udp", &run);
    assert!(!run.relay.lost.is_empty());
}

/// Loss through the relay, with the trader asking the replay's re-request server (straight,
/// not through the relay) for every gap.
fn with_retransmission(path: TraderPath, tag: &str) -> Option<FaultRun> {
    let lab_ip = LabConfig::for_test(tag).exchange_ip;
    let server = format!("{lab_ip}:{}", lab::RETRANSMIT_PORT);
    through_relay_with(
        path,
        tag,
        TICKER,
        &["--loss", "0.03"],
        &["--retransmit-to", &server],
        &["--retransmit"],
    )
}

/// Every gap before the last packet that arrived came back, was counted recovered and not
/// traded; only what was lost after it stays lost; the replay served what was asked.
fn check_retransmission(tag: &str, run: &FaultRun) {
    let FaultRun {
        replay: r,
        trader: t,
        relay: x,
    } = run;
    let k = &t.counters;
    let last_arrived = (1..=FAULT_TICKS)
        .rev()
        .find(|s| !x.lost.contains(s))
        .expect("something arrived");
    let recoverable = x.lost.iter().filter(|&&s| s < last_arrived).count() as u64;
    assert!(
        recoverable > 20,
        "{tag}: the relay lost enough: {:?}",
        x.lost
    );
    assert_eq!(k.recovered_messages, recoverable, "{tag}: {k:?}");
    assert_eq!(
        k.late_messages, recoverable,
        "{tag}: recovered ones arrive late: {k:?}"
    );
    assert_eq!(
        k.gap_messages - k.late_messages,
        x.lost.len() as u64 - recoverable,
        "{tag}: what never arrived: {k:?}"
    );
    assert_eq!(
        k.ticks + k.gap_messages,
        FAULT_TICKS,
        "{tag}: recovered ticks aren't traded"
    );
    assert_eq!(
        (k.retransmit_gave_up, k.retransmit_send_failed),
        (0, 0),
        "{tag}: {k:?}"
    );
    let served = r.retransmit.expect("the replay served re-requests");
    assert_eq!(served.requests, k.retransmit_requests, "{tag}: {served:?}");
    assert_eq!(
        served.answers, served.requests,
        "{tag}: every request answered: {served:?}"
    );
    // A reply later than the trader's 20 ms retry is asked for (and served) again.
    assert!(served.served_messages >= recoverable, "{tag}: {served:?}");
    assert_eq!(r.orders_received, k.orders, "{tag}");
    assert_eq!(r.orders_duplicate + r.orders_unknown_tick, 0, "{tag}");
    let p = &r.parity;
    assert!(
        matches!(p.verdict, ParityVerdict::Diverged { .. }),
        "{tag}: a lost tick still changes the strategy's path: {p:?}"
    );
    assert!(
        p.explanation.contains("not traded"),
        "{tag}: says why: {p:?}"
    );
}

#[test]
fn retransmission_fills_relay_dropped_gaps_on_the_xdp_path() {
    let Some(run) = with_retransmission(TraderPath::Xdp, "rexmit-xdp") else {
        return;
    };
    check_retransmission("retransmission xdp", &run);
}

#[test]
fn retransmission_fills_relay_dropped_gaps_on_the_udp_path() {
    let Some(run) = with_retransmission(TraderPath::Udp, "rexmit-udp") else {
        return;
    };
    check_retransmission("retransmission udp", &run);
}

/// Line B's market-data port on the trader, for the A/B tests.
const LINE_B_PORT: u16 = lab::MD_PORT + 3;

/// What one A/B run produced: each line through a relay of its own.
struct AbRun {
    replay: ReplayReport,
    trader: TraderReport,
    a: RelayReport,
    b: RelayReport,
}

/// One replay of `FAULT_TICKS` ticks on two lines, line A through a relay with `faults_a`
/// (seed 7) and line B through one with `faults_b` (seed 8), to a trader taking both.
fn ab_through_relays(
    path: TraderPath,
    tag: &str,
    faults_a: &[&str],
    faults_b: &[&str],
) -> Option<AbRun> {
    let lab = lab_or_skip(tag)?;
    let c = lab.config().clone();
    let (trader_json, replay_json, a_json, b_json) = (
        tmp(&format!("{tag}-trader.json")),
        tmp(&format!("{tag}-replay.json")),
        tmp(&format!("{tag}-relay-a.json")),
        tmp(&format!("{tag}-relay-b.json")),
    );
    let relay_orders = (RELAY_PORT + 1).to_string();
    let line_b = LINE_B_PORT.to_string();
    let mut trader = start_trader(
        &c,
        path.as_str(),
        &trader_json,
        // Two userspace relays on two shared vCPUs: one can lag the other by milliseconds
        // when preempted, so a gap waits up to 50 ms for the other line (it waits less when
        // both lines show they are past it).
        &[
            "--wait",
            "block",
            "--order-to",
            &format!("{}:{relay_orders}", c.exchange_ip),
            "--port-b",
            &line_b,
            "--ab-wait-us",
            "50000",
        ],
    );
    let orders = orders_through(&c);
    let mut extra_a: Vec<&str> = faults_a.to_vec();
    extra_a.extend(orders.iter().map(String::as_str));
    let mut relay_a = start_relay(&c, RELAY_PORT, &trader_md(&c), "7", &a_json, &extra_a, None);
    let line_b_target = format!("{}:{LINE_B_PORT}", c.trader_ip);
    let mut relay_b = start_relay(
        &c,
        RELAY_PORT + 2,
        &line_b_target,
        "8",
        &b_json,
        faults_b,
        None,
    );
    let st = replay(
        &c,
        TICKER,
        &format!("{}:{RELAY_PORT}", c.exchange_ip),
        &replay_json,
        &["--count", &FAULT_TICKS.to_string(), "--rate", "5k"],
    )
    .args(["--label", tag])
    .args([
        "--target-b",
        &format!("{}:{}", c.exchange_ip, RELAY_PORT + 2),
    ])
    .status()
    .expect("replay runs");
    assert!(st.success(), "replay: {st}");
    for (r, what) in [(&mut relay_a, "relay A"), (&mut relay_b, "relay B")] {
        let st = wait_exit(r, Duration::from_secs(10), what);
        assert!(st.success(), "{what}: {st}");
    }
    let st = wait_exit(&mut trader, Duration::from_secs(10), "trader");
    assert!(st.success(), "trader: {st}");
    let run = AbRun {
        replay: read_report(&replay_json),
        trader: read_report(&trader_json),
        a: read_report(&a_json),
        b: read_report(&b_json),
    };
    eprintln!(
        "{tag}: trader {:?}\nlines {:?}, lost on both {}\nA lost {} B lost {}\nparity {:?}",
        run.trader.counters,
        run.trader.feed.lines,
        run.trader.feed.lost_on_both,
        run.a.lost.len(),
        run.b.lost.len(),
        run.replay.parity
    );
    Some(run)
}

/// The per-line counts against both relays' logs, exactly.
fn check_ab(tag: &str, run: &AbRun) {
    let AbRun {
        replay: r,
        trader: t,
        a,
        b,
    } = run;
    let k = &t.counters;
    let n = FAULT_TICKS;
    assert_eq!((a.received_messages, b.received_messages), (n, n), "{tag}");
    let both: Vec<u64> = a
        .lost
        .iter()
        .copied()
        .filter(|s| b.lost.contains(s))
        .collect();
    let both = both.len() as u64;
    let (lost_a, lost_b) = (a.lost.len() as u64, b.lost.len() as u64);
    let dup = |x: &RelayReport| x.duplicated.len() as u64;
    let lines = &t.feed.lines;
    assert_eq!(lines.len(), 2, "{tag}: {:?}", t.feed);
    assert_eq!(
        lines[0].received_messages,
        n - lost_a + dup(a),
        "{tag}: {lines:?}"
    );
    assert_eq!(
        lines[1].received_messages,
        n - lost_b + dup(b),
        "{tag}: {lines:?}"
    );
    assert_eq!(
        lines[0].gaps_filled_by_other,
        lost_a - both,
        "{tag}: {lines:?}"
    );
    assert_eq!(
        lines[1].gaps_filled_by_other,
        lost_b - both,
        "{tag}: {lines:?}"
    );
    assert_eq!(t.feed.lost_on_both, both, "{tag}");
    // Every tick lost on one line only was traded; only those lost on both are missing.
    assert_eq!(k.ticks, n - both, "{tag}: {k:?}");
    assert_eq!(k.gap_messages - k.late_messages, both, "{tag}: {k:?}");
    assert_eq!(
        lines[0].first_arrivals + lines[1].first_arrivals,
        k.ticks,
        "{tag}: {lines:?}"
    );
    assert_eq!(r.orders_received, k.orders, "{tag}");
    assert_eq!(
        r.orders_duplicate + r.orders_unknown_tick,
        0,
        "{tag}: no double order"
    );
    // Both lines carried every packet, and the three ends of session.
    assert_eq!(r.line_sends.len(), 2, "{tag}: {:?}", r.line_sends);
    for (line, relay) in r.line_sends.iter().zip([a, b]) {
        assert_eq!(line.refused, 0, "{tag}: {:?}", r.line_sends);
        assert_eq!(line.sent, n + 3, "{tag}: {:?}", r.line_sends);
        assert_eq!(relay.received_packets, n + relay.end_of_session, "{tag}");
    }
    if both == 0 {
        assert!(
            r.parity.ok(),
            "{tag}: every tick reached the trader: {:?}",
            r.parity
        );
    } else {
        assert!(
            matches!(r.parity.verdict, ParityVerdict::Diverged { .. }),
            "{tag}: {:?}",
            r.parity
        );
    }
}

#[test]
fn a_b_lines_with_loss_on_both_on_the_xdp_path() {
    let Some(run) = ab_through_relays(
        TraderPath::Xdp,
        "ab-xdp",
        &["--loss", "0.05"],
        &["--loss", "0.05"],
    ) else {
        return;
    };
    check_ab("a/b xdp", &run);
    assert!(!run.a.lost.is_empty() && !run.b.lost.is_empty());
}

#[test]
fn a_b_lines_with_loss_on_one_and_duplicates_on_the_other_keep_parity_on_the_udp_path() {
    let Some(run) = ab_through_relays(
        TraderPath::Udp,
        "ab-udp",
        &["--loss", "0.1"],
        &["--dup", "0.05"],
    ) else {
        return;
    };
    check_ab("a/b udp", &run);
    assert!(run.a.lost.len() > 100, "{}", run.a.lost.len());
    assert!(run.replay.parity.ok());
}

/// Sends `sig` to a guarded child, or fails the test.
fn signal(child: &ChildGuard, sig: Signal) {
    child
        .signal(sig)
        .unwrap_or_else(|e| panic!("{sig} to pid {}: {e}", child.id()));
}

#[test]
fn sigint_and_sigterm_stop_trader_and_replay_cleanly() {
    let Some(lab) = lab_or_skip("sig") else {
        return;
    };
    let c = lab.config().clone();
    for (trader_sig, replay_sig) in [
        (Signal::SIGINT, Signal::SIGTERM),
        (Signal::SIGTERM, Signal::SIGINT),
    ] {
        let (tj, rj) = (
            tmp(&format!("sig{trader_sig}-trader.json")),
            tmp(&format!("sig{trader_sig}-replay.json")),
        );
        let mut trader = start_trader(&c, "xdp", &tj, &[]);
        assert!(
            xdp_attached(&c.trader_ns(), &c.trader_if),
            "attached while running"
        );
        let mut replay = ChildGuard::new(
            replay(&c, "gbm:42:150000", &trader_md(&c), &rj, &["--rate", "10k"])
                .spawn()
                .expect("replay starts"),
        );
        std::thread::sleep(Duration::from_millis(600));
        signal(&trader, trader_sig);
        let st = wait_exit(&mut trader, Duration::from_secs(5), "trader");
        assert!(st.success(), "trader {trader_sig}: {st}");
        assert!(
            !xdp_attached(&c.trader_ns(), &c.trader_if),
            "{trader_sig}: XDP detached"
        );
        let t: TraderReport = read_report(&tj);
        assert_eq!(t.end, EndReason::Stopped, "{t:?}");
        assert!(
            t.counters.ticks > 1000,
            "{trader_sig}: ticks before the signal"
        );
        signal(&replay, replay_sig);
        let st = wait_exit(&mut replay, Duration::from_secs(5), "replay");
        assert!(st.success(), "replay {replay_sig}: {st}");
        let r: ReplayReport = read_report(&rj);
        let p = &r.parity;
        assert!(
            matches!(p.verdict, ParityVerdict::NotAllSent { .. }),
            "stopped early: {p:?}"
        );
        assert!(r.sent_messages < 150_000);
    }
}

/// At a slow rate the replay spends nearly all its time waiting for the next send: a signal
/// must end that wait, not the schedule.
#[test]
fn a_signal_stops_the_replay_between_slow_sends() {
    let Some(lab) = lab_or_skip("sigslow") else {
        return;
    };
    let c = lab.config().clone();
    let (tj, rj) = (tmp("sigslow-trader.json"), tmp("sigslow-replay.json"));
    let mut trader = start_trader(&c, "udp", &tj, &[]);
    let mut replay = ChildGuard::new(
        replay(
            &c,
            "gbm:42:1000",
            &trader_md(&c),
            &rj,
            &["--rate", "1", "--count", "60"],
        )
        .spawn()
        .expect("replay starts"),
    );
    std::thread::sleep(Duration::from_millis(1500));
    let asked = Instant::now();
    signal(&replay, Signal::SIGTERM);
    let st = wait_exit(&mut replay, Duration::from_secs(5), "replay");
    assert!(st.success(), "replay: {st}");
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "stopped in the wait, not at the next send: {:?}",
        asked.elapsed()
    );
    let r: ReplayReport = read_report(&rj);
    let sent = r.sent_messages;
    assert!(
        (1..60).contains(&sent),
        "sent {sent} of 60 before the signal"
    );
    // Only what went out can be expected back.
    assert!(r.parity.expected_orders <= sent, "{r:?}");
    // The session ended after the last tick sent: what was never sent is not a gap.
    let st = wait_exit(&mut trader, Duration::from_secs(5), "trader");
    assert!(st.success(), "trader: {st}");
    let t: TraderReport = read_report(&tj);
    assert_eq!(t.end, EndReason::EndOfSession, "{t:?}");
    assert_eq!(t.counters.ticks, sent, "{t:?}");
    assert_eq!(t.counters.gap_messages, 0, "{t:?}");
}

/// Either path waiting for data (`--wait block`: `recv` with a timeout on the UDP path,
/// `poll` on the AF_XDP socket): a signal interrupts that call with EINTR whatever SA_RESTART
/// says (signal(7): SO_RCVTIMEO sockets and poll are never restarted), and the trader must take
/// it as "look at the stop flag", not as a failure.
#[test]
fn sigterm_stops_a_blocking_trader_cleanly() {
    let Some(lab) = lab_or_skip("sigblock") else {
        return;
    };
    let c = lab.config().clone();
    for path in ["udp", "xdp"] {
        let tj = tmp(&format!("sigblock-{path}.json"));
        let mut trader = start_trader(&c, path, &tj, &["--wait", "block"]);
        std::thread::sleep(Duration::from_millis(200));
        signal(&trader, Signal::SIGTERM);
        let st = wait_exit(&mut trader, Duration::from_secs(5), "trader");
        assert!(st.success(), "{path}: trader: {st}");
        let t: TraderReport = read_report(&tj);
        assert_eq!(t.end, EndReason::Stopped, "{path}");
        assert!(!xdp_attached(&c.trader_ns(), &c.trader_if), "{path}");
    }
}

#[test]
fn sigkill_of_the_trader_leaves_no_xdp_and_a_new_trader_starts_at_once() {
    let Some(lab) = lab_or_skip("kill") else {
        return;
    };
    let c = lab.config().clone();
    let tj = tmp("kill-trader.json");
    let mut trader = start_trader(&c, "xdp", &tj, &[]);
    assert!(xdp_attached(&c.trader_ns(), &c.trader_if));
    signal(&trader, Signal::SIGKILL);
    let st = wait_exit(&mut trader, Duration::from_secs(5), "trader");
    assert!(!st.success(), "killed: {st}");
    assert!(!tj.exists(), "no report from a killed trader");
    // The program hangs off a bpf_link owned by the process: its exit releases it.
    assert!(
        !xdp_attached(&c.trader_ns(), &c.trader_if),
        "XDP gone with the killed trader"
    );
    let mut trader = start_trader(&c, "xdp", &tj, &[]);
    let rj = tmp("kill-replay.json");
    let st = replay(
        &c,
        "gbm:42:150000",
        &trader_md(&c),
        &rj,
        &["--count", "2000", "--rate", "10k"],
    )
    .status()
    .expect("replay runs");
    assert!(st.success());
    let st = wait_exit(&mut trader, Duration::from_secs(10), "trader");
    assert!(st.success(), "trader: {st}");
    let (t, r): (TraderReport, ReplayReport) = (read_report(&tj), read_report(&rj));
    assert_eq!(t.counters.ticks, 2000, "the new trader works");
    assert!(r.parity.ok(), "{:?}", r.parity);
    assert!(!xdp_attached(&c.trader_ns(), &c.trader_if));
}
/// Runs a command that must fail; returns its stderr.
fn must_fail(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{what}: must fail, stderr: {stderr}");
    let first = stderr
        .lines()
        .find(|l| !l.starts_with("+ ") && !l.trim().is_empty())
        .unwrap_or("");
    assert!(
        first.to_ascii_lowercase().starts_with("error"),
        "{what}: one clear error line first, got {stderr:?}"
    );
    stderr
}

#[test]
fn trader_misuse_fails_clearly_and_leaves_nothing() {
    let Some(lab) = lab_or_skip("misuse") else {
        return;
    };
    let c = lab.config().clone();
    let tj = tmp("misuse-trader.json");
    let trader = |args: &[&str]| {
        let mut cmd = in_ns(&c.trader_ns(), &lab_tests::bin("trader"));
        cmd.args(args).arg("--json-out").arg(&tj);
        cmd
    };
    let e = must_fail(
        &mut trader(&["--path", "xdp", "--iface", "nope0"]),
        "missing interface",
    );
    assert!(e.contains("nope0"), "names the interface: {e}");
    // In the lab's range, but neither end's.
    let stranger = "198.18.0.9";
    let e = must_fail(
        &mut trader(&["--path", "udp", "--addr", stranger]),
        "address not here",
    );
    assert!(e.contains(stranger), "{e}");
    // The UDP path binds --addr, but an --iface that isn't there is still a mistake.
    let e = must_fail(
        &mut trader(&["--path", "udp", "--iface", "nope0"]),
        "missing interface on the udp path",
    );
    assert!(e.contains("nope0"), "names the interface: {e}");
    let e = must_fail(&mut trader(&["--path", "carrier-pigeon"]), "bad path");
    assert!(e.contains("carrier-pigeon"), "{e}");
    // An order gateway the AF_XDP paths can't address: no route to it, or no neighbour entry
    // for it (198.18.0.3 is on the lab's /30, and nobody answers for it).
    for path in ["xdp", "trigger", "reflect"] {
        let e = must_fail(
            &mut trader(&["--path", path, "--order-to", &format!("{stranger}:26401")]),
            "gateway without a route",
        );
        assert!(
            e.contains("no route to 198.18.0.9") && e.contains("--order-to"),
            "{e}"
        );
        let e = must_fail(
            &mut trader(&["--path", path, "--order-to", "198.18.0.3:26401"]),
            "gateway without a neighbour entry",
        );
        assert!(
            e.contains("no complete neighbour entry for 198.18.0.3") && e.contains("nud permanent"),
            "says how to pin it: {e}"
        );
    }
    let e = must_fail(
        &mut trader(&["--path", "udp", "--feed-source", "198.18.0.1:0"]),
        "bad feed source",
    );
    assert!(e.contains("198.18.0.1:0") && e.contains("IP:PORT"), "{e}");
    assert!(!tj.exists(), "no report from a failed start");
    assert!(
        !xdp_attached(&c.trader_ns(), &c.trader_if),
        "nothing attached"
    );

    // The UDP path on a port already taken.
    let first_json = tmp("misuse-first.json");
    let mut first = start_trader(&c, "udp", &first_json, &[]);
    let e = must_fail(
        &mut trader(&["--path", "udp", "--addr", &c.trader_ip.to_string()]),
        "port in use",
    );
    let port = lab::MD_PORT.to_string();
    assert!(e.contains(&port) && e.contains("in use"), "{e}");
    assert!(!tj.exists());
    signal(&first, Signal::SIGINT);
    let st = wait_exit(&mut first, Duration::from_secs(5), "trader");
    assert!(st.success(), "trader: {st}");
    let _ = std::fs::remove_file(&first_json);
}

#[test]
fn replay_misuse_fails_clearly_and_leaves_nothing() {
    // Each fails before a socket is opened, so none needs a lab.
    let rj = tmp("misuse-replay.json");
    let csv = tmp("bad.csv");
    std::fs::write(&csv, "close\n100.0\n101.5\nabc\n102.0\n").unwrap();
    let itch_cut = tmp("cut.itch");
    std::fs::write(&itch_cut, [0u8, 44, b'P', 0, 1]).unwrap();
    let cases: [(Vec<String>, &str); 12] = [
        (
            vec!["--source".into(), "closes:/nonexistent/closes.f64".into()],
            "/nonexistent/closes.f64",
        ),
        (
            vec!["--source".into(), format!("closes:{}", csv.display())],
            "bad.csv",
        ),
        (
            vec!["--source".into(), format!("itch:{}", itch_cut.display())],
            "cut.itch",
        ),
        (vec!["--source".into(), "foo:bar".into()], "unknown source"),
        (vec!["--rate".into(), "-5".into()], "'-5'"),
        (vec!["--rate=-5".into()], "out of range"),
        (vec!["--rate".into(), "fast".into()], "fast"),
        // A rate so slow the run would never end, or one no pacing can mean.
        (vec!["--rate".into(), "0.001".into()], "out of range"),
        (vec!["--rate".into(), "1e12".into()], "out of range"),
        (vec!["--count".into(), "0".into()], "--count"),
        (vec!["--duration".into(), "0".into()], "--duration"),
        // Found before the feed is sent, not after.
        (
            vec!["--hgrm-out".into(), "/nonexistent/dir/x.hgrm".into()],
            "/nonexistent/dir",
        ),
    ];
    for (args, needle) in cases {
        let mut cmd = Command::new(lab_tests::bin("replay"));
        cmd.args(&args).arg("--json-out").arg(&rj);
        let e = must_fail(&mut cmd, &args.join(" "));
        assert!(e.contains(needle), "{args:?}: names {needle:?}: {e}");
        assert!(!rj.exists(), "{args:?}: no report");
    }
    let _ = std::fs::remove_file(&csv);
    let _ = std::fs::remove_file(&itch_cut);
}

/// The driver filter under loss (`--symbols` on xdp, a full-depth day packed 16 messages a
/// packet, 3 % of the packets lost by the relay before the program sees them): a lost packet
/// breaks the run, so it is a gap, never claimed; the book's trader holds the feed at it,
/// asks for it, and hands the answer on in order (book repair). Every number is accounted for
/// exactly once, taken (recovered ones too), claimed as dropped in the driver, or a gap; and
/// with no gap left the orders are the whole day's.
#[test]
fn with_the_driver_filter_a_lost_packet_is_recovered_in_order_for_the_book() {
    let tag = "filterloss";
    let lab_ip = LabConfig::for_test(tag).exchange_ip;
    let server = format!("{lab_ip}:{}", lab::RETRANSMIT_PORT);
    let Some(run) = through_relay_with(
        TraderPath::Xdp,
        tag,
        "market:42:150000:per-print=8:symbols=300",
        &["--loss", "0.03"],
        &["--retransmit-to", &server, "--symbols", "SYNTH"],
        &["--retransmit", "--batch", "16"],
    ) else {
        return;
    };
    let k = &run.trader.counters;
    let x = run
        .trader
        .xdp_counters
        .as_ref()
        .expect("the program's counters");
    assert!(run.relay.lost.len() > 10, "{tag}: the relay lost enough");
    assert!(x.filtered_packets > 0, "{tag}: {x:?}");
    assert_eq!(
        k.filtered_skipped, x.filtered_messages,
        "{tag}: {k:?} {x:?}"
    );
    assert!(
        k.recovered_messages > 0 && k.repair_held_packets > 0,
        "{tag}: {k:?}"
    );
    // Only a loss in the last packets before the end of session (the run ends there) or one
    // whose answer took longer than the 50 ms wait (a loaded machine) can be given up; its
    // answer then comes late, as without a book.
    assert!(k.repair_gave_up <= 1, "{tag}: {k:?}");
    assert!(k.late_messages <= k.gap_messages, "{tag}: {k:?}");
    if k.repair_gave_up == 0 {
        assert_eq!((k.gap_messages, k.late_messages), (0, 0), "{tag}: {k:?}");
    }
    assert_eq!(
        (k.retransmit_gave_up, k.retransmit_send_failed),
        (0, 0),
        "{tag}: {k:?}"
    );
    assert_eq!(
        k.messages + k.filtered_skipped + k.gap_messages,
        run.replay.sent_messages,
        "{tag}: every number once: {k:?}"
    );
    if k.gap_messages == 0 {
        assert!(run.replay.parity.ok(), "{tag}: {:?}", run.replay.parity);
    }
}
