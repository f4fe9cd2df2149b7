//! Privileged reliability checks with the real binaries in labs of their own: malformed and
//! non-matching traffic mixed into a valid feed, network faults (loss, duplication,
//! reordering, delay), the trader's life cycle (SIGINT, SIGTERM, SIGKILL) and misuse.
//!
//! Faults come from `inject relay`, a seeded userspace relay between the replay and the
//! trader, not from `tc netem`: the lab's kernel may lack `sch_netem` (this one has
//! `CONFIG_NET_SCH_NETEM` unset), and the relay says exactly which sequence numbers it dropped,
//! duplicated or held back, so the assertions can be exact rather than statistical.
//!
//! Run one at a time (`--test-threads=1`): two labs pushing packets over two cores starve each
//! other, and the exact counts below assume nothing else drops packets.
use std::{
    io::{BufRead as _, BufReader},
    net::UdpSocket,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use netns::{Lab, LabConfig, in_netns};
use serde_json::Value;
use wire::itch::{self, Price4, Stock};

const MD_PORT: u16 = 26400;
const ORDER_PORT: u16 = 26401;
const SINK_PORT: u16 = 26402;
const RELAY_PORT: u16 = 26410;

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("t2t-rel-{}-{name}", std::process::id()))
}

/// Kills a child if a test fails before it exits by itself.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

impl KillOnDrop {
    fn wait_exit(&mut self, within: Duration, what: &str) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(s) = self.0.try_wait().expect("try_wait") {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "{what} did not exit within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn pid(&self) -> String {
        self.0.id().to_string()
    }
}

fn in_ns(ns: &str, bin: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, bin]);
    c
}

/// Starts the trader in the lab's trader namespace and waits for its `ready`.
fn start_trader(c: &LabConfig, path: &str, stats: &Path, extra: &[&str]) -> KillOnDrop {
    let mut t = KillOnDrop(
        in_ns(&c.trader_ns(), env!("CARGO_BIN_EXE_trader"))
            .args(["--path", path, "--iface", &c.trader_if, "--ready"])
            .args(["--addr", &c.trader_ip.to_string(), "--idle-exit", "20"])
            .arg("--stats-out")
            .arg(stats)
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("trader starts"),
    );
    let mut line = String::new();
    BufReader::new(t.0.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("trader stdout");
    assert_eq!(line.trim(), "ready", "trader came up");
    t
}

/// The replay in the exchange namespace, sending to `target` (the trader, or the relay).
fn replay(c: &LabConfig, source: &str, target: &str, json: &Path, extra: &[&str]) -> Command {
    let mut r = in_ns(&c.exchange_ns(), env!("CARGO_BIN_EXE_replay"));
    r.args([
        "--source",
        source,
        "--progress",
        "false",
        "--drain-ms",
        "300",
    ])
    .args(["--target", target])
    .args(["--bind", &format!("{}:{ORDER_PORT}", c.exchange_ip)])
    .arg("--json-out")
    .arg(json)
    .args(extra);
    r
}

fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let _ = std::fs::remove_file(p);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

fn xdp_counter(trader: &Value, name: &str) -> u64 {
    trader["xdp_counters"]
        .as_array()
        .unwrap_or_else(|| panic!("xdp_counters in {trader}"))
        .iter()
        .find(|kv| kv[0] == name)
        .unwrap_or_else(|| panic!("{name} in {}", trader["xdp_counters"]))[1]
        .as_u64()
        .unwrap()
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
                    userspace::t2t::trade_message(
                        0,
                        stock,
                        Price4::from_f64_quantised(c).unwrap(),
                        0,
                    )
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
        userspace::t2t::trade_message(i as u64, stock, p, i as u64 * 1000)
            .emit_into(&mut m)
            .unwrap();
        w.write_message(&m).unwrap();
        mix.trades += 1;
        mix.messages += 1;
    }
    w.finish().unwrap();
    mix
}

/// `Ip` and `Udp` counters of `/proc/net/snmp` in a namespace.
fn snmp(ns: &str) -> std::collections::HashMap<String, u64> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat", "/proc/net/snmp"])
        .output()
        .expect("cat /proc/net/snmp");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let mut m = std::collections::HashMap::new();
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
    m
}

const ROUNDS: u64 = 10;

/// Malformed and non-matching traffic, mixed into a valid replayed feed.
///
/// The rule that keeps lies from eating valid ticks' sequence numbers: ITCH-level lies
/// (unknown type, wrong length) are messages of the replayed file, each with its own sequence
/// number; MoldUDP64 framing lies claim the sequence number of a tick still to come, and the
/// trader must reject such a packet whole without consuming any sequence number (if it did,
/// the real tick would be taken as a duplicate or the jump as a gap, and `ticks` would fall
/// short).
fn malformed_mix(path: &str) {
    let lab = Lab::up(LabConfig::for_test(&format!("bad{path}"))).expect("lab up");
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
    let mut trader = start_trader(&c, path, &trader_json, &["--wait", "block"]);
    let mut replay = KillOnDrop(
        replay(
            &c,
            &format!("itch:{}", itch_path.display()),
            &format!("{}:{MD_PORT}", c.trader_ip),
            &replay_json,
            &["--rate", "5k", "--label", path],
        )
        .spawn()
        .expect("replay starts"),
    );
    std::thread::sleep(Duration::from_millis(100));
    let inject = in_ns(&c.exchange_ns(), env!("CARGO_BIN_EXE_inject"))
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
    let st = replay.wait_exit(Duration::from_secs(20), "replay");
    assert!(st.success(), "replay: {st}");
    let st = trader.wait_exit(Duration::from_secs(10), "trader");
    assert!(st.success(), "trader: {st}");
    let sunk = sink.finish();
    let snmp_after = snmp(&c.trader_ns());
    let (r, t, inj) = (
        read_json(&replay_json),
        read_json(&trader_json),
        read_json(&inject_json),
    );
    let _ = std::fs::remove_file(&itch_path);
    eprintln!("inject: {inj}\ntrader: {t}");

    // The injector sent every kind, every round; the kernel refused only the frame above the MTU.
    for (kind, rep) in inj.as_object().unwrap() {
        let per_round = if kind == "fragment" { 2 } else { 1 };
        if kind == "oversized_frame" {
            assert_eq!(u(rep, "refused"), ROUNDS, "{kind}: {rep}");
            assert!(
                rep["error"].as_str().unwrap().contains("too long"),
                "{kind}: EMSGSIZE: {rep}"
            );
        } else {
            assert_eq!(u(rep, "sent"), per_round * ROUNDS, "{kind}: {rep}");
        }
    }

    // Every valid tick was processed, and nothing else traded.
    let k = &t["counters"];
    assert_eq!(u(&r, "sent_messages"), mix.messages, "{path}");
    assert_eq!(u(k, "ticks"), mix.trades, "{path}: every valid tick: {k}");
    assert_eq!(
        u(k, "malformed_messages"),
        mix.unknown_type + mix.wrong_length,
        "{path}: ITCH lies, one per message: {k}"
    );
    assert_eq!(u(k, "other_messages"), mix.other_valid, "{path}: {k}");
    // A header shorter than 20 bytes, and the zero-length datagram.
    assert_eq!(u(k, "malformed_packets"), 2 * ROUNDS, "{path}: {k}");
    // Count too high, too low, a block overrun, a cut length prefix, the large count lie.
    assert_eq!(u(k, "malformed_framing"), 5 * ROUNDS, "{path}: {k}");
    for zero in [
        "gap_messages",
        "late_messages",
        "duplicate_messages",
        "wrong_session",
    ] {
        assert_eq!(u(k, zero), 0, "{path}: {zero}: {k}");
    }
    let p = &r["parity"];
    assert_eq!(u(k, "orders"), u(p, "expected_orders"), "{path}: {p}");
    assert_eq!(u(&r, "orders_received"), u(p, "expected_orders"), "{path}");
    assert_eq!(p["ok"], Value::Bool(true), "{path}: parity: {p}");

    // What isn't market data reached the kernel: IP options, the reassembled fragments, the
    // other port and the largest frame all arrived on the sink socket.
    assert_eq!(sunk.len() as u64, 4 * ROUNDS, "{path}: sink got {sunk:?}");
    assert!(sunk.contains(&(1514 - 42)), "{path}: the max-size datagram");
    assert!(sunk.contains(&64), "{path}: the reassembled fragments");

    if path == "xdp" {
        let x = |n| xdp_counter(&t, n);
        // Truncated Ethernet, IPv4 and UDP headers, and IHL < 5.
        assert_eq!(x("malformed"), 4 * ROUNDS, "{}", t["xdp_counters"]);
        assert_eq!(x("passed_ip_options"), ROUNDS);
        assert_eq!(x("passed_fragment"), 2 * ROUNDS);
        assert_eq!(x("passed_other_port"), 2 * ROUNDS, "wrong port, max frame");
        assert_eq!(x("passed_not_udp"), ROUNDS);
        // VLAN and IPv6, plus ARP.
        assert!(x("passed_not_ipv4") > 2 * ROUNDS, "{}", t["xdp_counters"]);
        assert_eq!(x("redirect_failed"), 0);
        // Valid packets, the zero-length datagram, the two length lies, six MoldUDP64 lies,
        // and one to three end-of-session packets (the trader stops at the first).
        let md = u(&r, "sent_packets") + 9 * ROUNDS;
        assert!(
            (md + 1..=md + 3).contains(&x("redirected")),
            "{md}: {}",
            t["xdp_counters"]
        );
        // The two length lies reach the trader, whose parser rejects them.
        assert_eq!(
            u(&t["frames_not_ours"], "malformed"),
            2 * ROUNDS,
            "{}",
            t["frames_not_ours"]
        );
    } else {
        // The kernel dropped the broken IPv4 and UDP headers and counted them.
        let d = |k: &str| {
            snmp_after.get(k).copied().unwrap_or(0) - snmp_before.get(k).copied().unwrap_or(0)
        };
        let ip_bad = d("Ip.InHdrErrors") + d("Ip.InTruncatedPkts");
        eprintln!(
            "snmp: InHdrErrors {} InTruncatedPkts {} Udp.InErrors {} Udp.NoPorts {}",
            d("Ip.InHdrErrors"),
            d("Ip.InTruncatedPkts"),
            d("Udp.InErrors"),
            d("Udp.NoPorts")
        );
        // Truncated Ethernet and IPv4 headers and IHL < 5 at least (where the IPv4 length lie
        // lands differs between kernels); the truncated UDP header and the UDP length lie.
        assert!(ip_bad >= 3 * ROUNDS, "{path}: ip_bad {ip_bad}");
        assert!(d("Udp.InErrors") >= 2 * ROUNDS, "{path}");
    }

    // ARP works through the program: the exchange resolved the trader.
    assert!(
        netns::exchange_resolved_trader(&c),
        "ARP resolved the trader's MAC"
    );
}

#[test]
fn malformed_traffic_on_the_xdp_path_is_counted_and_valid_ticks_still_trade() {
    malformed_mix("xdp");
}

#[test]
fn malformed_traffic_on_the_udp_path_is_counted_and_valid_ticks_still_trade() {
    malformed_mix("udp");
}

/// What one run through the fault relay produced.
struct FaultRun {
    replay: Value,
    trader: Value,
    relay: Value,
}

const FAULT_TICKS: u64 = 3_000;

/// One replay of `FAULT_TICKS` ticks through `inject relay` with the given faults.
fn through_relay(path: &str, tag: &str, faults: &[&str]) -> FaultRun {
    let lab = Lab::up(LabConfig::for_test(tag)).expect("lab up");
    let c = lab.config().clone();
    let (trader_json, replay_json, relay_json) = (
        tmp(&format!("{tag}-trader.json")),
        tmp(&format!("{tag}-replay.json")),
        tmp(&format!("{tag}-relay.json")),
    );
    let relay_orders = RELAY_PORT + 1;
    let mut trader = start_trader(
        &c,
        path,
        &trader_json,
        &["--wait", "block", "--order-port", &relay_orders.to_string()],
    );
    let mut relay = KillOnDrop(
        in_ns(&c.exchange_ns(), env!("CARGO_BIN_EXE_inject"))
            .args(["relay", "--ready", "--seed", "7"])
            .args(["--listen", &format!("{}:{RELAY_PORT}", c.exchange_ip)])
            .args(["--target", &format!("{}:{MD_PORT}", c.trader_ip)])
            .args([
                "--orders-listen",
                &format!("{}:{relay_orders}", c.exchange_ip),
            ])
            .args(["--orders-to", &format!("{}:{ORDER_PORT}", c.exchange_ip)])
            .arg("--json-out")
            .arg(&relay_json)
            .args(faults)
            .stdout(Stdio::piped())
            .spawn()
            .expect("relay starts"),
    );
    let mut line = String::new();
    BufReader::new(relay.0.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("relay stdout");
    assert_eq!(line.trim(), "ready", "relay came up");
    let st = replay(
        &c,
        "gbm:42:150000",
        &format!("{}:{RELAY_PORT}", c.exchange_ip),
        &replay_json,
        &[
            "--count",
            &FAULT_TICKS.to_string(),
            "--rate",
            "5k",
            "--label",
            tag,
        ],
    )
    .status()
    .expect("replay runs");
    assert!(st.success(), "replay: {st}");
    let st = relay.wait_exit(Duration::from_secs(10), "relay");
    assert!(st.success(), "relay: {st}");
    let st = trader.wait_exit(Duration::from_secs(10), "trader");
    assert!(st.success(), "trader: {st}");
    let run = FaultRun {
        replay: read_json(&replay_json),
        trader: read_json(&trader_json),
        relay: read_json(&relay_json),
    };
    eprintln!(
        "{tag}: trader {}\nrelay lost {} duplicated {} reordered {}\nparity {}",
        run.trader["counters"],
        run.relay["lost"].as_array().unwrap().len(),
        run.relay["duplicated"].as_array().unwrap().len(),
        run.relay["reordered"].as_array().unwrap().len(),
        run.replay["parity"]
    );
    run
}

fn seqs(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect()
}

/// The sequence-tracking rules, checked against what the relay did.
///
/// The documented rule for late packets: a message whose sequence number is below the next
/// expected one and wasn't seen before is counted in `late_messages` and not traded (the
/// strategy has moved past it); one seen before is a duplicate and dropped.
fn check_faults(tag: &str, run: &FaultRun) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let FaultRun {
        replay: r,
        trader: t,
        relay: x,
    } = run;
    let k = &t["counters"];
    let (lost, duplicated, reordered) = (
        seqs(&x["lost"]),
        seqs(&x["duplicated"]),
        seqs(&x["reordered"]),
    );
    assert_eq!(u(r, "sent_messages"), FAULT_TICKS, "{tag}");
    assert_eq!(
        u(x, "received_messages"),
        FAULT_TICKS,
        "{tag}: the relay saw every tick"
    );
    // Exactly the ticks that never arrived.
    assert_eq!(
        u(k, "gap_messages") - u(k, "late_messages"),
        lost.len() as u64,
        "{tag}: gap - late = lost: {k}"
    );
    // Late arrivals are counted, not traded.
    assert_eq!(u(k, "late_messages"), reordered.len() as u64, "{tag}: {k}");
    assert_eq!(
        u(k, "ticks") + u(k, "gap_messages"),
        FAULT_TICKS,
        "{tag}: {k}"
    );
    // Duplicates are dropped: one order at most per tick.
    assert_eq!(
        u(k, "duplicate_messages"),
        duplicated.len() as u64,
        "{tag}: {k}"
    );
    assert_eq!(u(r, "orders_duplicate"), 0, "{tag}: no double order");
    assert_eq!(
        u(r, "orders_unknown_tick") + u(r, "orders_price_mismatch"),
        0,
        "{tag}"
    );
    assert_eq!(u(r, "orders_received"), u(k, "orders"), "{tag}");
    if t["path"] == "xdp" {
        // Every datagram the relay forwarded went through the program, and only those.
        let data = u(x, "forwarded_packets") - u(x, "end_of_session");
        let redirected = xdp_counter(t, "redirected");
        assert!(
            (data + 1..=data + u(x, "end_of_session")).contains(&redirected),
            "{tag}: redirected {redirected}, forwarded {data} + end of session"
        );
    }
    let p = &r["parity"];
    if lost.is_empty() && reordered.is_empty() {
        assert_eq!(
            p["ok"],
            Value::Bool(true),
            "{tag}: nothing missing, parity holds: {p}"
        );
    } else {
        let first_missing = lost.iter().chain(&reordered).copied().min().unwrap();
        assert_eq!(p["ok"], Value::Bool(false), "{tag}: {p}");
        let at = p["first_divergence"]
            .as_u64()
            .unwrap_or_else(|| panic!("{tag}: parity names the divergence: {p}"));
        assert!(
            at >= first_missing,
            "{tag}: diverges at {at}, first missing {first_missing}"
        );
        let why = p["explanation"].as_str().unwrap();
        assert!(why.contains(&at.to_string()), "{tag}: {why}");
    }
    (lost, duplicated, reordered)
}

#[test]
fn one_percent_loss_on_the_xdp_path_is_counted_exactly() {
    let run = through_relay("xdp", "loss1", &["--loss", "0.01"]);
    let (lost, _, _) = check_faults("loss 1% xdp", &run);
    assert!(!lost.is_empty(), "the relay dropped something");
}

#[test]
fn five_percent_loss_on_the_udp_path_is_counted_exactly() {
    let run = through_relay("udp", "loss5", &["--loss", "0.05"]);
    let (lost, _, _) = check_faults("loss 5% udp", &run);
    assert!(lost.len() > 50, "{}", lost.len());
}

#[test]
fn duplicates_are_dropped_and_parity_holds() {
    let run = through_relay("xdp", "dup", &["--dup", "0.05"]);
    let (_, duplicated, _) = check_faults("dup 5% xdp", &run);
    assert!(duplicated.len() > 50, "{}", duplicated.len());
    assert!(u(&run.trader["counters"], "duplicate_messages") > 0);
}

#[test]
fn reordered_ticks_are_counted_late_and_not_traded() {
    let run = through_relay(
        "udp",
        "reorder",
        &["--reorder", "0.02", "--reorder-depth", "3"],
    );
    let (_, _, reordered) = check_faults("reorder 2% udp", &run);
    assert!(!reordered.is_empty());
}

#[test]
fn delay_keeps_parity_and_shows_in_tick_to_trade() {
    let run = through_relay("xdp", "delay", &["--delay-us", "2000"]);
    check_faults("delay 2 ms xdp", &run);
    let ttt = &run.replay["tick_to_trade"];
    assert!(ttt["min_us"].as_f64().unwrap() >= 2000.0, "{ttt}");
}

#[test]
fn loss_duplication_and_reordering_together() {
    let run = through_relay(
        "xdp",
        "allfaults",
        &["--loss", "0.02", "--dup", "0.02", "--reorder", "0.02"],
    );
    let (lost, duplicated, reordered) = check_faults("all faults xdp", &run);
    assert!(!lost.is_empty() && !duplicated.is_empty() && !reordered.is_empty());
}

/// Sends `sig` to a process by pid with kill(1) (no unsafe in tests).
fn signal(pid: &str, sig: &str) {
    let st = Command::new("kill")
        .args([sig, pid])
        .status()
        .expect("kill");
    assert!(st.success(), "kill {sig} {pid}");
}

#[test]
fn sigint_and_sigterm_stop_trader_and_replay_cleanly() {
    let lab = Lab::up(LabConfig::for_test("sig")).expect("lab up");
    let c = lab.config().clone();
    for (trader_sig, replay_sig) in [("-INT", "-TERM"), ("-TERM", "-INT")] {
        let (tj, rj) = (
            tmp(&format!("sig{trader_sig}-trader.json")),
            tmp(&format!("sig{trader_sig}-replay.json")),
        );
        let mut trader = start_trader(&c, "xdp", &tj, &[]);
        assert!(
            xdp_attached(&c.trader_ns(), &c.trader_if),
            "attached while running"
        );
        let mut replay = KillOnDrop(
            replay(
                &c,
                "gbm:42:150000",
                &format!("{}:{MD_PORT}", c.trader_ip),
                &rj,
                &["--rate", "10k"],
            )
            .spawn()
            .expect("replay starts"),
        );
        std::thread::sleep(Duration::from_millis(600));
        signal(&trader.pid(), trader_sig);
        let st = trader.wait_exit(Duration::from_secs(5), "trader");
        assert!(st.success(), "trader {trader_sig}: {st}");
        assert!(
            !xdp_attached(&c.trader_ns(), &c.trader_if),
            "{trader_sig}: XDP detached"
        );
        let t = read_json(&tj);
        assert_eq!(t["end"], "stopped by signal", "{t}");
        assert!(
            u(&t["counters"], "ticks") > 1000,
            "{trader_sig}: ticks before the signal"
        );
        signal(&replay.pid(), replay_sig);
        let st = replay.wait_exit(Duration::from_secs(5), "replay");
        assert!(st.success(), "replay {replay_sig}: {st}");
        let r = read_json(&rj);
        let p = &r["parity"];
        assert_eq!(p["ok"], Value::Bool(false), "{p}");
        assert!(
            p["explanation"].as_str().unwrap().contains("stopped early"),
            "{p}"
        );
        assert!(u(&r, "sent_messages") < 150_000);
    }
}

/// At a slow rate the replay spends nearly all its time waiting for the next send: a signal
/// must end that wait, not the schedule.
#[test]
fn a_signal_stops_the_replay_between_slow_sends() {
    let lab = Lab::up(LabConfig::for_test("sigslow")).expect("lab up");
    let c = lab.config().clone();
    let (tj, rj) = (tmp("sigslow-trader.json"), tmp("sigslow-replay.json"));
    let mut trader = start_trader(&c, "udp", &tj, &[]);
    let mut replay = KillOnDrop(
        replay(
            &c,
            "gbm:42:1000",
            &format!("{}:{MD_PORT}", c.trader_ip),
            &rj,
            &["--rate", "1", "--count", "60"],
        )
        .spawn()
        .expect("replay starts"),
    );
    std::thread::sleep(Duration::from_millis(1500));
    let asked = Instant::now();
    signal(&replay.pid(), "-TERM");
    let st = replay.wait_exit(Duration::from_secs(5), "replay");
    assert!(st.success(), "replay: {st}");
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "stopped in the wait, not at the next send: {:?}",
        asked.elapsed()
    );
    let r = read_json(&rj);
    let sent = u(&r, "sent_messages");
    assert!(
        (1..60).contains(&sent),
        "sent {sent} of 60 before the signal"
    );
    // Only what went out can be expected back.
    assert!(u(&r["parity"], "expected_orders") <= sent, "{r}");
    // The session ended after the last tick sent: what was never sent is not a gap.
    let st = trader.wait_exit(Duration::from_secs(5), "trader");
    assert!(st.success(), "trader: {st}");
    let t = read_json(&tj);
    assert_eq!(t["end"], "end of session", "{t}");
    assert_eq!(u(&t["counters"], "ticks"), sent, "{t}");
    assert_eq!(u(&t["counters"], "gap_messages"), 0, "{t}");
}

/// Either path waiting for data (`--wait block`: `recv` with a timeout on the UDP path,
/// `poll` on the AF_XDP socket): a signal interrupts that call with EINTR whatever SA_RESTART
/// says (signal(7): SO_RCVTIMEO sockets and poll are never restarted), and the trader must take
/// it as "look at the stop flag", not as a failure.
#[test]
fn sigterm_stops_a_blocking_trader_cleanly() {
    let lab = Lab::up(LabConfig::for_test("sigblock")).expect("lab up");
    let c = lab.config().clone();
    for path in ["udp", "xdp"] {
        let tj = tmp(&format!("sigblock-{path}.json"));
        let mut trader = start_trader(&c, path, &tj, &["--wait", "block"]);
        std::thread::sleep(Duration::from_millis(200));
        signal(&trader.pid(), "-TERM");
        let st = trader.wait_exit(Duration::from_secs(5), "trader");
        assert!(st.success(), "{path}: trader: {st}");
        assert_eq!(read_json(&tj)["end"], "stopped by signal", "{path}");
        assert!(!xdp_attached(&c.trader_ns(), &c.trader_if), "{path}");
    }
}

#[test]
fn sigkill_of_the_trader_leaves_no_xdp_and_a_new_trader_starts_at_once() {
    let lab = Lab::up(LabConfig::for_test("kill")).expect("lab up");
    let c = lab.config().clone();
    let tj = tmp("kill-trader.json");
    let mut trader = start_trader(&c, "xdp", &tj, &[]);
    assert!(xdp_attached(&c.trader_ns(), &c.trader_if));
    signal(&trader.pid(), "-KILL");
    let st = trader.wait_exit(Duration::from_secs(5), "trader");
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
        &format!("{}:{MD_PORT}", c.trader_ip),
        &rj,
        &["--count", "2000", "--rate", "10k"],
    )
    .status()
    .expect("replay runs");
    assert!(st.success());
    assert!(
        trader
            .wait_exit(Duration::from_secs(10), "trader")
            .success()
    );
    let (t, r) = (read_json(&tj), read_json(&rj));
    assert_eq!(u(&t["counters"], "ticks"), 2000, "the new trader works");
    assert_eq!(r["parity"]["ok"], Value::Bool(true), "{}", r["parity"]);
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
    let lab = Lab::up(LabConfig::for_test("misuse")).expect("lab up");
    let c = lab.config().clone();
    let tj = tmp("misuse-trader.json");
    let trader = |args: &[&str]| {
        let mut cmd = in_ns(&c.trader_ns(), env!("CARGO_BIN_EXE_trader"));
        cmd.args(args).arg("--stats-out").arg(&tj);
        cmd
    };
    let e = must_fail(
        &mut trader(&["--path", "xdp", "--iface", "nope0"]),
        "missing interface",
    );
    assert!(e.contains("nope0"), "names the interface: {e}");
    let e = must_fail(
        &mut trader(&["--path", "udp", "--addr", "198.18.0.9"]),
        "address not here",
    );
    assert!(e.contains("198.18.0.9"), "{e}");
    // The UDP path binds --addr, but an --iface that isn't there is still a mistake.
    let e = must_fail(
        &mut trader(&["--path", "udp", "--iface", "nope0"]),
        "missing interface on the udp path",
    );
    assert!(e.contains("nope0"), "names the interface: {e}");
    let e = must_fail(&mut trader(&["--path", "carrier-pigeon"]), "bad path");
    assert!(e.contains("carrier-pigeon"), "{e}");
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
    assert!(e.contains("26400") && e.contains("in use"), "{e}");
    assert!(!tj.exists());
    signal(&first.pid(), "-INT");
    assert!(first.wait_exit(Duration::from_secs(5), "trader").success());
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
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_replay"));
        cmd.args(&args).arg("--json-out").arg(&rj);
        let e = must_fail(&mut cmd, &args.join(" "));
        assert!(e.contains(needle), "{args:?}: names {needle:?}: {e}");
        assert!(!rj.exists(), "{args:?}: no report");
    }
    let _ = std::fs::remove_file(&csv);
    let _ = std::fs::remove_file(&itch_cut);
}
