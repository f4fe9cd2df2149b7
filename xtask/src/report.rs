//! The benchmark report: a table on stdout, and in the results folder `report.json`,
//! `report.md` and `latency.svg` (percentile plot, HdrHistogram style) beside the `.hgrm` files.
use std::{fmt::Write as _, path::Path};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::bench::{Options, Run};

/// `YYYY-MM-DDTHH-MM-SSZ`, from the system clock (UTC).
pub fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}-{:02}-{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

const COLUMNS: [(&str, &str); 8] = [
    ("min", "min_us"),
    ("p50", "p50_us"),
    ("p90", "p90_us"),
    ("p99", "p99_us"),
    ("p99.9", "p999_us"),
    ("p99.99", "p9999_us"),
    ("max", "max_us"),
    ("mean", "mean_us"),
];

fn read_json(p: &Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))
}

fn f(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

fn u(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn machine() -> Value {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_owned();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    json!({ "kernel": kernel, "cpu": cpu, "cores": cores, "link": "veth pair between two network namespaces (copy-mode AF_XDP)" })
}

/// Writes the report files and prints the table.
pub fn write(
    out: &Path,
    o: &Options,
    runs: &[Run],
    sockperf: Option<&Value>,
    cpu_floor: Option<&Path>,
) -> anyhow::Result<()> {
    let cpu_floor = cpu_floor.map(read_json).transpose()?;
    let mut rows = Vec::new();
    for r in runs {
        let replay = read_json(&r.replay_json)?;
        let trader = read_json(&r.trader_json).unwrap_or(Value::Null);
        rows.push((r, replay, trader));
    }
    let m = machine();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "tick-to-trade, {} · rate {} msg/s · batch {} · n={} · xdp-mode {} · wait {} · trader cpu{} / replay cpu{}",
        o.source, o.rate, o.batch, o.n, o.xdp_mode, o.wait, o.trader_cpu, o.replay_cpu
    );
    let _ = writeln!(
        t,
        "machine: {} · {} cores · kernel {} · {}",
        m["cpu"].as_str().unwrap_or(""),
        m["cores"],
        m["kernel"].as_str().unwrap_or(""),
        m["link"].as_str().unwrap_or("")
    );
    let _ = writeln!(t);
    let _ = write!(t, "| path | measure | count |");
    for (name, _) in COLUMNS {
        let _ = write!(t, " {name} µs |");
    }
    let _ = writeln!(t);
    let _ = write!(t, "|---|---|---:|");
    for _ in COLUMNS {
        let _ = write!(t, "---:|");
    }
    let _ = writeln!(t);
    for (r, replay, trader) in &rows {
        for (what, s) in [
            ("tick-to-trade", &replay["tick_to_trade"]),
            ("trader RX→TX", &trader["rx_to_tx"]),
            ("engine on_tick", &trader["engine"]),
        ] {
            if s.is_null() || u(s, "count") == 0 {
                continue;
            }
            let _ = write!(t, "| {} | {what} | {} |", r.tag, u(s, "count"));
            for (_, k) in COLUMNS {
                let _ = write!(t, " {:.2} |", f(s, k));
            }
            let _ = writeln!(t);
        }
    }
    if let Some(c) = &cpu_floor {
        let s = &c["round_trip"];
        // A floor run by count (or by an older floor) has no duration to show.
        let seconds = c["seconds"]
            .as_f64()
            .map_or(String::new(), |s| format!(", {s:.1} s"));
        let _ = write!(
            t,
            "| cpu floor | shared-memory ping-pong RTT, cpu{}↔cpu{}{seconds} | {} |",
            o.replay_cpu,
            o.trader_cpu,
            u(s, "count")
        );
        for (_, k) in COLUMNS {
            let _ = write!(t, " {:.2} |", f(s, k));
        }
        let _ = writeln!(t);
    }
    if let Some(s) = sockperf {
        let _ = write!(
            t,
            "| sockperf | kernel UDP ping-pong RTT, 64 B, blocking | {} |",
            u(s, "count")
        );
        for (_, k) in COLUMNS {
            let _ = write!(t, " {:.2} |", f(s, k));
        }
        let _ = writeln!(t);
    }
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "| path | sent | orders | expected | gaps | late | dup | malformed | late sends | parity |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for (r, replay, trader) in &rows {
        let c = &trader["counters"];
        let p = &replay["parity"];
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.tag,
            u(replay, "sent_messages"),
            u(replay, "orders_received"),
            u(p, "expected_orders"),
            u(c, "gap_messages"),
            u(c, "late_messages"),
            u(c, "duplicate_messages"),
            // Everything the trader refused: short or lying packets, bad messages, other sessions.
            u(c, "malformed_messages")
                + u(c, "malformed_packets")
                + u(c, "malformed_framing")
                + u(c, "wrong_session"),
            u(replay, "late_sends"),
            if p["ok"].as_bool() == Some(true) {
                format!(
                    "ok ({} trades, PnL {:.4})",
                    u(p, "live_trades"),
                    f(p, "live_pnl")
                )
            } else {
                p["explanation"].as_str().unwrap_or("?").to_owned()
            }
        );
    }
    // What the machine did to each end during the run: the tail's usual cause on a shared
    // VM. Preemptions and run-queue waits are other tasks taking the CPU; stolen time is the
    // hypervisor running something else while the thread was on its virtual CPU.
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "| path | seconds | replay preempted | replay waited ms | replay stolen ms | trader preempted | trader waited ms | trader stolen ms |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for (r, replay, trader) in &rows {
        let cells = |v: &Value| {
            let n = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.1}"));
            format!(
                "{} | {} | {}",
                v["context_switches"][1]
                    .as_u64()
                    .map_or("-".to_owned(), |n| n.to_string()),
                n(v["thread_time"]["waited_ms"].as_f64()),
                n(v["thread_time"]["stolen_ms"].as_f64()),
            )
        };
        let _ = writeln!(
            t,
            "| {} | {:.1} | {} | {} |",
            r.tag,
            f(replay, "send_seconds"),
            cells(replay),
            cells(trader),
        );
    }
    let find = |p: &str| rows.iter().find(|(r, _, _)| r.tag == p).map(|(_, v, _)| v);
    for (a, b) in [
        ("xdp", "udp"),
        ("xdp", "reflect"),
        ("xdp-bypass", "reflect"),
    ] {
        if let (Some(x), Some(y)) = (find(a), find(b)) {
            let _ = write!(t, "\nratio {a}/{b} tick-to-trade:");
            for (name, k) in COLUMNS {
                let (x, y) = (f(&x["tick_to_trade"], k), f(&y["tick_to_trade"], k));
                let _ = write!(t, " {name} {:.2}×", x / y);
            }
            let _ = writeln!(t);
        }
    }
    print!("{t}");

    let combined = json!({
        "machine": m,
        "options": {
            "source": o.source, "count": o.count, "rate": o.rate, "batch": o.batch, "n": o.n,
            "xdp_mode": o.xdp_mode, "wait": o.wait, "trader_cpu": o.trader_cpu,
            "replay_cpu": o.replay_cpu, "trader_args": o.trader_args,
        },
        "sockperf": sockperf,
        "cpu_floor": cpu_floor,
        "runs": rows.iter().map(|(r, replay, trader)| json!({
            "path": r.path, "tag": r.tag, "replay": replay, "trader": trader,
            "hgrm": r.hgrm.file_name().map(|n| n.to_string_lossy().into_owned()),
        })).collect::<Vec<_>>(),
    });
    std::fs::write(
        out.join("report.json"),
        serde_json::to_string_pretty(&combined)?,
    )?;
    std::fs::write(out.join("report.md"), &t)?;
    let curves: Vec<(String, Vec<(f64, f64)>)> = runs
        .iter()
        .filter_map(|r| {
            let text = std::fs::read_to_string(&r.hgrm).ok()?;
            Some((r.tag.clone(), parse_hgrm(&text)))
        })
        .collect();
    std::fs::write(
        out.join("latency.svg"),
        svg(&curves, t.lines().next().unwrap_or("")),
    )?;
    eprintln!("results in {}", out.display());
    Ok(())
}

/// (percentile as 0..1, value µs) rows of an `.hgrm` file.
pub fn parse_hgrm(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let v: f64 = it.next()?.parse().ok()?;
            let q: f64 = it.next()?.parse().ok()?;
            Some((q, v))
        })
        .collect()
}

/// Latency by percentile, x on HdrHistogram's log axis of 1/(1-p), y log-scaled in µs.
pub fn svg(curves: &[(String, Vec<(f64, f64)>)], title: &str) -> String {
    let (w, h, ml, mr, mt, mb) = (900.0, 520.0, 70.0, 20.0, 40.0, 60.0);
    let x_max_decades = 6.0; // up to 99.9999 %
    let xs = |q: f64| {
        let inv = 1.0 / (1.0 - q.min(0.999_999_9));
        ml + (inv.log10() / x_max_decades).min(1.0) * (w - ml - mr)
    };
    let all: Vec<f64> = curves
        .iter()
        .flat_map(|(_, c)| c.iter().map(|&(_, v)| v))
        .filter(|v| *v > 0.0)
        .collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min).max(0.1);
    let hi = all.iter().copied().fold(0.0, f64::max).max(lo * 10.0);
    let (ylo, yhi) = (lo.log10().floor(), hi.log10().ceil());
    let floor = 10f64.powf(ylo);
    let ys = |v: f64| {
        let t = (v.max(floor).log10() - ylo) / (yhi - ylo);
        h - mb - t * (h - mt - mb)
    };
    let colors = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"];
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{ml}" y="20" font-size="13">{}</text>"#,
        escape(title)
    );
    for (i, label) in ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"]
        .iter()
        .enumerate()
    {
        let x = ml + i as f64 / x_max_decades * (w - ml - mr);
        let anchor = if i == 6 { "end" } else { "middle" };
        let _ = writeln!(
            s,
            r##"<line x1="{x}" y1="{mt}" x2="{x}" y2="{}" stroke="#ddd"/><text x="{x}" y="{}" text-anchor="{anchor}">{label}</text>"##,
            h - mb,
            h - mb + 18.0
        );
    }
    let mut d = ylo;
    while d <= yhi {
        let v = 10f64.powf(d);
        let y = ys(v);
        let _ = writeln!(
            s,
            r##"<line x1="{ml}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{} µs</text>"##,
            w - mr,
            ml - 6.0,
            y + 4.0,
            if v < 1.0 {
                format!("{v}")
            } else {
                format!("{v:.0}")
            }
        );
        d += 1.0;
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">percentile</text>"#,
        (w + ml) / 2.0,
        h - 15.0
    );
    for (i, (name, c)) in curves.iter().enumerate() {
        let color = colors[i % colors.len()];
        let pts: Vec<String> = c
            .iter()
            .filter(|(q, _)| *q < 1.0)
            .map(|&(q, v)| format!("{:.1},{:.1}", xs(q), ys(v)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            pts.join(" ")
        );
        let ly = mt + 18.0 * (i as f64 + 1.0);
        let _ = writeln!(
            s,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}">{}</text>"#,
            ml + 10.0,
            ml + 40.0,
            ml + 46.0,
            ly + 4.0,
            escape(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hgrm_rows_parse_and_plot() {
        let text = "       Value     Percentile TotalCount 1/(1-Percentile)\n\n       \
                    8.000 0.000000000000          1           1.00\n      12.500 \
                    0.500000000000        500           2.00\n     150.000 \
                    0.999000000000        999        1000.00\n#[Mean    =       10.000]\n";
        let rows = parse_hgrm(text);
        assert_eq!(rows, vec![(0.0, 8.0), (0.5, 12.5), (0.999, 150.0)]);
        let svg = svg(&[("xdp".into(), rows)], "t <1>");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("polyline") && svg.contains("t &lt;1&gt;"));
    }

    #[test]
    fn stamp_looks_like_a_utc_time() {
        let s = utc_stamp();
        assert_eq!(s.len(), 20, "{s}");
        assert!(s.starts_with("20") && s.ends_with('Z'), "{s}");
    }
}
