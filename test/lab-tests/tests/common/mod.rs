//! What the privileged end-to-end tests share: a lab of their own (or a skip), the binaries
//! started in it under a [`ChildGuard`], and their reports read as the typed `results`.
#![allow(
    dead_code,
    reason = "each test binary compiles this module and uses a different part of it, so \
              `expect` would be unfulfilled in some of them"
)]

use std::{
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Command, ExitStatus, Stdio},
    time::Duration,
};

use netns::{ChildGuard, Lab, LabConfig, lab};
use serde::de::DeserializeOwned;

/// What `inject` writes: the binary's own report types, so the two can't disagree.
#[allow(unused_imports, reason = "not every test reads what inject wrote")]
pub(crate) use inject::report as inject_report;

/// A lab of this test's own (`tag` keeps parallel tests apart), or `None` after a one-line
/// "skipped" when this process may not build one (not root).
pub(crate) fn lab_or_skip(tag: &str) -> Option<Lab> {
    if !netns::require_privileges_or_skip() {
        return None;
    }
    Some(Lab::up(LabConfig::for_test(tag)).expect("lab up"))
}

/// [`lab_or_skip`] for a lab built from `config` (e.g. with more queues).
pub(crate) fn lab_with_or_skip(config: LabConfig) -> Option<Lab> {
    if !netns::require_privileges_or_skip() {
        return None;
    }
    Some(Lab::up(config).expect("lab up"))
}

/// A file of this test process's own in the temporary directory.
pub(crate) fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("t2t-test-{}-{name}", std::process::id()))
}

/// `bin` run inside the namespace `ns` (`ip netns exec` execs it: the pid is the binary's).
pub(crate) fn in_ns(ns: &str, bin: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, bin]);
    c
}

/// Waits for a guarded child's first stdout line, which must be `ready`.
pub(crate) fn wait_ready(child: &mut ChildGuard, what: &str) {
    let stdout = child.child_mut().stdout.take().expect("stdout is piped");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap_or_else(|e| panic!("{what} stdout: {e}"));
    assert_eq!(line.trim(), "ready", "{what} came up");
}

/// Starts the trader on `path` in the lab's trader namespace and waits for its `ready`.
pub(crate) fn start_trader(c: &LabConfig, path: &str, stats: &Path, extra: &[&str]) -> ChildGuard {
    let mut t = ChildGuard::new(
        in_ns(&c.trader_ns(), &lab_tests::bin("trader"))
            .args(["--path", path, "--iface", &c.trader_if, "--ready"])
            .args(["--addr", &c.trader_ip.to_string(), "--idle-exit", "20"])
            .arg("--json-out")
            .arg(stats)
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("trader starts"),
    );
    wait_ready(&mut t, "trader");
    t
}

/// The replay in the exchange namespace, from `source` to `target` (the trader, or a relay
/// in front of it), taking orders on the lab's order port, its report to `json`.
pub(crate) fn replay(c: &LabConfig, source: &str, target: &str, json: &Path) -> Command {
    let mut r = in_ns(&c.exchange_ns(), &lab_tests::bin("replay"));
    r.args(["--source", source, "--progress", "false"])
        .args(["--target", target])
        .args(["--bind", &format!("{}:{}", c.exchange_ip, lab::ORDER_PORT)])
        .arg("--json-out")
        .arg(json);
    r
}

/// `inject relay` in the exchange namespace of `c`, listening on `listen` (a port of the
/// exchange's address) and relaying to `target`, seeded with `seed`, its log to `json`, with
/// `extra` options (faults, lies, order forwarding); pinned to `cpu` if given (with `taskset`).
/// Returns once it is ready.
pub(crate) fn start_relay(
    c: &LabConfig,
    listen: u16,
    target: &str,
    seed: &str,
    json: &Path,
    extra: &[&str],
    cpu: Option<usize>,
) -> ChildGuard {
    let inject = &lab_tests::bin("inject");
    let mut cmd = match cpu {
        Some(cpu) => {
            let mut t = in_ns(&c.exchange_ns(), "taskset");
            t.args(["-c", &cpu.to_string(), inject]);
            t
        }
        None => in_ns(&c.exchange_ns(), inject),
    };
    cmd.args(["relay", "--ready", "--seed", seed])
        .args(["--listen", &format!("{}:{listen}", c.exchange_ip)])
        .args(["--target", target])
        .arg("--json-out")
        .arg(json)
        .args(extra)
        .stdout(Stdio::piped());
    let mut relay = ChildGuard::new(cmd.spawn().expect("relay starts"));
    wait_ready(&mut relay, "relay");
    relay
}

/// The headers the XDP program writes into its own orders in the lab `c`: from the trader to
/// the exchange's order port (the trader's default gateway).
pub(crate) fn lab_order_to(c: &LabConfig) -> xdp_common::OrderTo {
    xdp_common::OrderTo {
        dst_mac: c.exchange_mac.octets(),
        src_mac: c.trader_mac.octets(),
        src_ip: c.trader_ip.octets(),
        dst_ip: c.exchange_ip.octets(),
        dst_port: lab::ORDER_PORT.to_be_bytes(),
    }
}

/// The trader's market-data address in the lab `c`, as the replay's `--target`.
pub(crate) fn trader_md(c: &LabConfig) -> String {
    format!("{}:{}", c.trader_ip, lab::MD_PORT)
}

/// Waits up to `within` for a guarded child to exit; panics naming `what` if it doesn't.
pub(crate) fn wait_exit(child: &mut ChildGuard, within: Duration, what: &str) -> ExitStatus {
    child
        .wait_timeout(within)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .unwrap_or_else(|| panic!("{what} did not exit within {within:?}"))
}

/// Reads a report the binaries wrote (a `results` type, or `inject`'s), and removes the file.
pub(crate) fn read_report<T: DeserializeOwned>(path: &Path) -> T {
    let report = results::read(path).unwrap_or_else(|e| match std::error::Error::source(&e) {
        Some(why) => panic!("{e}: {why}"),
        None => panic!("{e}"),
    });
    let _ = std::fs::remove_file(path);
    report
}
