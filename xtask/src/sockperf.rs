//! The outside reference for the kernel-UDP path: sockperf ping-pong between the lab's two
//! namespaces (64-byte UDP, blocking client, full round trip), on the same CPUs as the bench.
use std::{
    process::{Command, Stdio},
    time::Duration,
};

use anyhow::{Context as _, bail};
use netns::LabConfig;
use report::RoundTrip;

use crate::util::{shown, which};

const PORT: u16 = 26410;

/// Runs sockperf for `seconds` and returns its percentiles (µs, full round trip).
pub(crate) fn ping_pong(
    lab: &LabConfig,
    seconds: u64,
    server_cpu: usize,
    client_cpu: usize,
) -> anyhow::Result<RoundTrip> {
    if !which("sockperf") {
        bail!("sockperf is not installed (Debian package sockperf; `cargo xtask setup`)");
    }
    let ip = lab.trader_ip.to_string();
    let mut server = Command::new("ip");
    server
        .args(["netns", "exec", &lab.trader_ns(), "taskset", "-c"])
        .arg(server_cpu.to_string())
        .args(["sockperf", "server", "-i", &ip, "-p", &PORT.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    eprintln!("+ {}", shown(&server));
    // Stopped (SIGTERM, then SIGKILL) when this function returns, whichever way it does.
    let _server = netns::ChildGuard::new(server.spawn().context("starting the sockperf server")?)
        .with_grace(Duration::from_millis(500));
    std::thread::sleep(Duration::from_millis(300));
    let mut client = Command::new("ip");
    client
        .args(["netns", "exec", &lab.exchange_ns(), "taskset", "-c"])
        .arg(client_cpu.to_string())
        .args(["sockperf", "ping-pong", "-i", &ip, "-p", &PORT.to_string()])
        .args(["-m", "64", "--full-rtt", "-t", &seconds.to_string()]);
    eprintln!("+ {}", shown(&client));
    let out = client.output().context("running the sockperf client")?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("sockperf ping-pong failed: {}", text.trim());
    }
    parse(&text).with_context(|| format!("unexpected sockperf output:\n{text}"))
}

/// Picks the percentile lines out of sockperf's summary; every figure the report shows must
/// be there.
pub(crate) fn parse(text: &str) -> anyhow::Result<RoundTrip> {
    let (mut min, mut max) = (None, None);
    let (mut p50, mut p90, mut p99, mut p999, mut p9999) = (None, None, None, None, None);
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" = ") else {
            continue;
        };
        let Ok(x) = right.trim().parse::<f64>() else {
            continue;
        };
        let slot = if left.contains("<MAX>") {
            &mut max
        } else if left.contains("<MIN>") {
            &mut min
        } else if let Some(p) = left.split("percentile ").nth(1) {
            match p.trim() {
                "50.000" => &mut p50,
                "90.000" => &mut p90,
                "99.000" => &mut p99,
                "99.900" => &mut p999,
                "99.990" => &mut p9999,
                _ => continue,
            }
        } else {
            continue;
        };
        *slot = Some(x);
    }
    // `avg-rtt=24.576 (std-dev=206.930)`: the number after each key.
    let after = |key: &str| {
        text.split(key)
            .nth(1)
            .and_then(|s| s.split(|c: char| !(c.is_ascii_digit() || c == '.')).next())
            .and_then(|s| s.parse::<f64>().ok())
    };
    let (mean, stdev) = (after("avg-rtt="), after("std-dev="));
    let count = text
        .lines()
        .find(|l| l.contains(" observations") && l.contains("Total "))
        .and_then(|l| l.split("Total ").nth(1))
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse::<u64>().ok());
    let need =
        |v: Option<f64>, what: &str| v.with_context(|| format!("no {what} in sockperf's output"));
    Ok(RoundTrip {
        count: count.context("no observation count in sockperf's output")?,
        min_us: need(min, "<MIN> observation")?,
        p50_us: need(p50, "50th percentile")?,
        p90_us: need(p90, "90th percentile")?,
        p99_us: need(p99, "99th percentile")?,
        p999_us: need(p999, "99.9th percentile")?,
        p9999_us: need(p9999, "99.99th percentile")?,
        max_us: need(max, "<MAX> observation")?,
        mean_us: need(mean, "avg-rtt")?,
        stdev_us: need(stdev, "std-dev")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sockperf_3_7_summary() {
        let text = "sockperf: [Total Run] RunTime=2.000 sec; Warm up time=400 msec\n\
            sockperf: [2;35m====> avg-rtt=24.576 (std-dev=206.930)[0m\n\
            sockperf: [2;35mTotal 63015 observations[0m; each percentile contains 630.15 observations\n\
            sockperf: ---> <MAX> observation = 12053.411\n\
            sockperf: ---> percentile 99.999 = 9050.483\n\
            sockperf: ---> percentile 99.990 = 8048.483\n\
            sockperf: ---> percentile 99.900 = 3342.389\n\
            sockperf: ---> percentile 99.000 =   30.665\n\
            sockperf: ---> percentile 90.000 =   15.743\n\
            sockperf: ---> percentile 50.000 =   13.369\n\
            sockperf: ---> <MIN> observation =   12.578\n";
        let v = parse(text).unwrap();
        assert_eq!(v.p50_us, 13.369);
        assert_eq!(v.p9999_us, 8048.483);
        assert_eq!(v.max_us, 12053.411);
        assert_eq!(v.min_us, 12.578);
        assert_eq!(v.mean_us, 24.576);
        assert_eq!(v.stdev_us, 206.930);
        assert_eq!(v.count, 63015);
        let e = parse(&text.replace("percentile 99.990", "percentile 99.991")).unwrap_err();
        assert_eq!(e.to_string(), "no 99.99th percentile in sockperf's output");
        assert!(parse("nothing here").is_err());
    }
}
