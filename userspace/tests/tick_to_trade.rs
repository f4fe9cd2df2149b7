//! Privileged end to end: the real trader and replay binaries in a lab of their own, 20,000
//! ticks through each path, asserting no loss, no gaps, one order per signal, and parity with
//! the batch backtest.
use std::{
    io::{BufRead as _, BufReader},
    path::PathBuf,
    process::{Command, Stdio},
    time::Duration,
};

use netns::{Lab, LabConfig};
use serde_json::Value;

const TICKS: u64 = 20_000;

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("t2t-{}-{name}", std::process::id()))
}

/// Kills the trader if a test fails before it exits by itself.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn run(path: &str, tag: &str, extra_trader: &[&str]) -> (Value, Value) {
    // A lab and files of this test's own (`tag`), so tests can't collide even in parallel.
    let lab = Lab::up(LabConfig::for_test(&format!("e2e{tag}"))).expect("lab up");
    let c = lab.config().clone();
    let (trader_json, replay_json) = (
        tmp(&format!("{tag}-trader.json")),
        tmp(&format!("{tag}.json")),
    );
    let mut trader = KillOnDrop(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &c.trader_ns(),
                env!("CARGO_BIN_EXE_trader"),
            ])
            .args([
                "--path",
                path,
                "--iface",
                &c.trader_if,
                "--ready",
                "--idle-exit",
                "20",
            ])
            .args(["--addr", &c.trader_ip.to_string()])
            .arg("--stats-out")
            .arg(&trader_json)
            .args(extra_trader)
            .stdout(Stdio::piped())
            .spawn()
            .expect("trader starts"),
    );
    let mut line = String::new();
    BufReader::new(trader.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready", "trader came up");
    let status = Command::new("ip")
        .args([
            "netns",
            "exec",
            &c.exchange_ns(),
            env!("CARGO_BIN_EXE_replay"),
        ])
        .args(["--source", "gbm:42:150000", "--count", &TICKS.to_string()])
        .args(["--rate", "10k", "--label", path, "--progress", "false"])
        .args(["--target", &format!("{}:26400", c.trader_ip)])
        .args(["--bind", &format!("{}:26401", c.exchange_ip)])
        .arg("--json-out")
        .arg(&replay_json)
        .status()
        .expect("replay runs");
    assert!(status.success(), "replay exit: {status}");
    // The end-of-session packet ends the trader.
    let mut waited = Duration::ZERO;
    while trader.0.try_wait().unwrap().is_none() {
        assert!(
            waited < Duration::from_secs(10),
            "trader exits on end of session"
        );
        std::thread::sleep(Duration::from_millis(20));
        waited += Duration::from_millis(20);
    }
    let read = |p: &PathBuf| -> Value {
        let v = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        let _ = std::fs::remove_file(p);
        v
    };
    (read(&replay_json), read(&trader_json))
}

fn check(path: &str, replay: &Value, trader: &Value) {
    let u = |v: &Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    let c = &trader["counters"];
    assert_eq!(u(replay, "sent_messages"), TICKS, "{path}");
    assert_eq!(
        u(c, "ticks"),
        TICKS,
        "{path}: every tick reached the strategy"
    );
    for none in [
        "gap_messages",
        "late_messages",
        "duplicate_messages",
        "malformed_messages",
        "malformed_packets",
        "malformed_framing",
        "wrong_session",
    ] {
        assert_eq!(u(c, none), 0, "{path}: {none}");
    }
    let p = &replay["parity"];
    assert!(
        u(p, "expected_orders") > 1000,
        "{path}: the strategy trades: {p}"
    );
    assert_eq!(
        u(replay, "orders_received"),
        u(p, "expected_orders"),
        "{path}: one order per signal"
    );
    assert_eq!(u(c, "orders"), u(p, "expected_orders"), "{path}");
    assert_eq!(
        u(replay, "orders_duplicate") + u(replay, "orders_unknown_tick"),
        0
    );
    assert_eq!(u(replay, "orders_price_mismatch"), 0, "{path}");
    assert_eq!(p["ok"], Value::Bool(true), "{path}: parity: {p}");
    assert_eq!(p["live_pnl"], p["batch_pnl"], "{path}");
    assert_eq!(u(p, "live_trades"), u(p, "batch_trades"), "{path}");
    assert_eq!(
        u(&replay["tick_to_trade"], "count"),
        u(p, "expected_orders"),
        "{path}: a latency per order"
    );
}

#[test]
fn xdp_path_trades_every_signal_with_parity() {
    let (replay, trader) = run("xdp", "xdp", &[]);
    check("xdp", &replay, &trader);
    let redirected = trader["xdp_counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|kv| kv[0] == "redirected")
        .unwrap()[1]
        .as_u64()
        .unwrap();
    // Every market-data packet, plus the end-of-session ones the trader may have seen.
    assert!(redirected >= TICKS, "{redirected}");
}

#[test]
fn xdp_path_in_skb_mode() {
    let (replay, trader) = run("xdp", "xdpskb", &["--xdp-mode", "skb"]);
    check("xdp-skb", &replay, &trader);
}

#[test]
fn udp_path_trades_every_signal_with_parity() {
    let (replay, trader) = run("udp", "udp", &[]);
    check("udp", &replay, &trader);
}

#[test]
fn udp_path_blocking() {
    let (replay, trader) = run("udp", "udpblock", &["--wait", "block"]);
    check("udp-block", &replay, &trader);
}
