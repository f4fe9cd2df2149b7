//! The outside reference for the kernel-UDP path: sockperf ping-pong between the lab's two
//! namespaces (64-byte UDP, blocking client, full round trip), on the same CPUs as the bench.
use std::{
    process::{Command, Stdio},
    time::Duration,
};

use anyhow::{Context as _, bail};
use netns::LabConfig;
use serde_json::{Value, json};

use crate::util::{shown, which};

const PORT: u16 = 26410;

/// Runs sockperf for `seconds` and returns its percentiles (µs, full round trip).
pub fn ping_pong(
    lab: &LabConfig,
    seconds: u64,
    server_cpu: usize,
    client_cpu: usize,
) -> anyhow::Result<Value> {
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
    let mut server = server.spawn().context("starting the sockperf server")?;
    std::thread::sleep(Duration::from_millis(300));
    let mut client = Command::new("ip");
    client
        .args(["netns", "exec", &lab.exchange_ns(), "taskset", "-c"])
        .arg(client_cpu.to_string())
        .args(["sockperf", "ping-pong", "-i", &ip, "-p", &PORT.to_string()])
        .args(["-m", "64", "--full-rtt", "-t", &seconds.to_string()]);
    eprintln!("+ {}", shown(&client));
    let out = client.output();
    let _ = server.kill();
    let _ = server.wait();
    let out = out.context("running the sockperf client")?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("sockperf ping-pong failed: {}", text.trim());
    }
    parse(&text).with_context(|| format!("unexpected sockperf output:\n{text}"))
}

/// Picks the percentile lines out of sockperf's summary.
pub fn parse(text: &str) -> anyhow::Result<Value> {
    let mut v = serde_json::Map::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" = ") else {
            continue;
        };
        let Ok(x) = right.trim().parse::<f64>() else {
            continue;
        };
        let key = if left.contains("<MAX>") {
            "max_us".to_owned()
        } else if left.contains("<MIN>") {
            "min_us".to_owned()
        } else if let Some(p) = left.split("percentile ").nth(1) {
            match p.trim() {
                "50.000" => "p50_us".into(),
                "90.000" => "p90_us".into(),
                "99.000" => "p99_us".into(),
                "99.900" => "p999_us".into(),
                "99.990" => "p9999_us".into(),
                _ => continue,
            }
        } else {
            continue;
        };
        v.insert(key, json!(x));
    }
    if let Some(avg) = text
        .split("avg-rtt=")
        .nth(1)
        .and_then(|s| s.split(|c: char| !(c.is_ascii_digit() || c == '.')).next())
        .and_then(|s| s.parse::<f64>().ok())
    {
        v.insert("mean_us".into(), json!(avg));
    }
    if let Some(n) = text
        .lines()
        .find(|l| l.contains(" observations") && l.contains("Total "))
        .and_then(|l| l.split("Total ").nth(1))
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse::<u64>().ok())
    {
        v.insert("count".into(), json!(n));
    }
    if !v.contains_key("p50_us") {
        bail!("no percentiles in sockperf's output");
    }
    Ok(Value::Object(v))
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
        assert_eq!(v["p50_us"], json!(13.369));
        assert_eq!(v["p9999_us"], json!(8048.483));
        assert_eq!(v["max_us"], json!(12053.411));
        assert_eq!(v["min_us"], json!(12.578));
        assert_eq!(v["mean_us"], json!(24.576));
        assert_eq!(v["count"], json!(63015));
        assert!(parse("nothing here").is_err());
    }
}
