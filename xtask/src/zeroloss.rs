//! `cargo xtask zero-loss`: RFC 2544-style throughput per path (the highest offered tick rate
//! with no loss over a fixed count, by bisection), then latency at 10 %, 50 % and 90 % of it.
use std::fmt::Write as _;

use anyhow::bail;
use serde_json::{Value, json};

use crate::bench::{self, Session};

/// Options.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// Paths (comma-separated): xdp, udp.
    #[arg(long, value_delimiter = ',', default_value = "xdp,udp")]
    pub paths: Vec<String>,
    /// Messages per trial.
    #[arg(long, default_value_t = 100_000)]
    pub count: u64,
    /// ITCH messages per MoldUDP64 packet (the sender's own per-packet cost caps the rate).
    #[arg(long, default_value_t = 1)]
    pub batch: u16,
    /// Lowest offered rate tried, messages/s: the search starts there.
    #[arg(long, default_value_t = 10_000.0)]
    pub min_rate: f64,
    /// Highest offered rate to try, messages/s: the search stops there if nothing failed.
    #[arg(long, default_value_t = 4_000_000.0)]
    pub max_rate: f64,
    /// Stop bisecting when the bounds are within this ratio.
    #[arg(long, default_value_t = 1.05)]
    pub resolution: f64,
    /// Exchange-side I/O: udp (kernel socket) or xdp (the bypass harness: AF_XDP sender,
    /// whose per-packet cost is lower, so the trader rather than the sender is the limit).
    #[arg(long, default_value = "udp", value_parser = ["udp", "xdp"])]
    pub exchange_io: String,
    /// Lab name.
    #[arg(long, default_value = netns::PREFIX)]
    pub lab: String,
    /// Results folder (default target/zero-loss/<time>).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Don't install missing dependencies first.
    #[arg(long)]
    pub no_setup: bool,
}

/// One trial's verdict.
#[derive(Debug, Clone)]
struct Trial {
    rate: f64,
    ok: bool,
    why: String,
    result: Value,
}

pub fn run(o: Options) -> anyhow::Result<()> {
    for p in &o.paths {
        if p != "xdp" && p != "udp" {
            bail!("unknown path {p:?}: use xdp, udp");
        }
    }
    if !(o.min_rate > 0.0 && o.max_rate > o.min_rate && o.resolution > 1.0) {
        bail!("need 0 < --min-rate < --max-rate and --resolution > 1");
    }
    let mut b = bench::Options {
        batch: o.batch,
        replay_args: if o.exchange_io == "xdp" {
            ["--io", "xdp"].map(String::from).to_vec()
        } else {
            Vec::new()
        },
        ..bench::Options::trial(o.count, &o.lab, o.out.clone(), o.no_setup)
    };
    let session = Session::start(&b, "zero-loss")?;
    let mut report = Vec::new();
    let mut n = 0;
    let mut trial = |b: &mut bench::Options,
                     path: &str,
                     rate: f64,
                     session: &Session|
     -> anyhow::Result<Trial> {
        n += 1;
        b.rate = format!("{rate:.0}");
        let tag = format!("{path}-{n:03}-{rate:.0}");
        let run = bench::run_path(
            b,
            &session.bins,
            session.lab.config(),
            path,
            &tag,
            &session.out,
            &session.stop,
        )?;
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&run.replay_json)?)?;
        let t: Value = serde_json::from_str(&std::fs::read_to_string(&run.trader_json)?)
            .unwrap_or(Value::Null);
        let sent = r["sent_messages"].as_u64().unwrap_or(0);
        let ticks = t["counters"]["ticks"].as_u64().unwrap_or(0);
        let orders = r["orders_received"].as_u64().unwrap_or(0);
        let expected = r["parity"]["expected_orders"].as_u64().unwrap_or(u64::MAX);
        let achieved = r["achieved_rate_per_s"].as_f64().unwrap_or(0.0);
        let (ok, why) = if sent < o.count {
            (false, format!("sent {sent} of {}", o.count))
        } else if achieved < 0.97 * rate {
            (false, format!("sender-bound: achieved {achieved:.0} msg/s"))
        } else if ticks < sent {
            (false, format!("{} ticks lost", sent - ticks))
        } else if orders < expected {
            (false, format!("{} orders lost", expected - orders))
        } else {
            (true, "no loss".into())
        };
        eprintln!("  {path} @ {rate:.0} msg/s: {why}");
        Ok(Trial {
            rate,
            ok,
            why,
            result: r,
        })
    };
    for path in o.paths.clone() {
        if session.stopped() {
            break;
        }
        eprintln!("zero-loss search on {path}");
        let mut trials = Vec::new();
        // Grow from the bottom until a trial fails, then bisect between the last pass and it.
        let mut lo: Option<f64> = None;
        let mut hi: Option<f64> = None;
        let mut rate = o.min_rate;
        while hi.is_none() && rate <= o.max_rate && !session.stopped() {
            let t = trial(&mut b, &path, rate, &session)?;
            if t.ok {
                lo = Some(rate);
                rate *= 2.0;
            } else {
                hi = Some(rate);
            }
            trials.push(t);
        }
        while let (Some(l), Some(h)) = (lo, hi) {
            if h / l <= o.resolution || session.stopped() {
                break;
            }
            let mid = (l * h).sqrt();
            let t = trial(&mut b, &path, mid, &session)?;
            if t.ok {
                lo = Some(mid);
            } else {
                hi = Some(mid);
            }
            trials.push(t);
        }
        let mut curve = Vec::new();
        if let Some(l) = lo {
            for frac in [0.1, 0.5, 0.9] {
                if session.stopped() {
                    break;
                }
                let t = trial(&mut b, &path, l * frac, &session)?;
                curve.push((frac, t));
            }
        }
        report.push((path, lo, hi, trials, curve));
    }
    let out = session.out.clone();
    session.finish();

    let mut s = String::new();
    let _ = writeln!(
        s,
        "zero-loss rate, {} messages per trial, {} per MoldUDP64 packet, trader cpu1 spinning, replay cpu0 ({} sender)",
        o.count,
        o.batch,
        if o.exchange_io == "xdp" {
            "AF_XDP"
        } else {
            "kernel UDP"
        }
    );
    let _ = writeln!(s, "| path | zero-loss rate (msg/s) | first failure | why |");
    let _ = writeln!(s, "|---|---:|---:|---|");
    for (path, lo, hi, trials, _) in &report {
        let why = hi
            .and_then(|h| trials.iter().find(|t| t.rate == h))
            .map_or("no failure up to --max-rate".to_owned(), |t| t.why.clone());
        let _ = writeln!(
            s,
            "| {path} | {} | {} | {why} |",
            lo.map_or("none".into(), |l| format!("{l:.0}")),
            hi.map_or("-".into(), |h| format!("{h:.0}"))
        );
    }
    let _ = writeln!(s, "\nlatency under load (tick-to-trade µs)");
    let _ = writeln!(
        s,
        "| path | load | rate | p50 | p99 | p99.9 | p99.99 | max |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for (path, _, _, _, curve) in &report {
        for (frac, t) in curve {
            let l = &t.result["tick_to_trade"];
            let g = |k: &str| l[k].as_f64().unwrap_or(f64::NAN);
            let _ = writeln!(
                s,
                "| {path} | {:.0}% | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
                frac * 100.0,
                t.rate,
                g("p50_us"),
                g("p99_us"),
                g("p999_us"),
                g("p9999_us"),
                g("max_us")
            );
        }
    }
    print!("{s}");
    std::fs::write(out.join("zero-loss.md"), &s)?;
    let json = json!(report.iter().map(|(path, lo, hi, trials, curve)| json!({
        "path": path, "zero_loss_rate": lo, "first_failure": hi,
        "trials": trials.iter().map(|t| json!({"rate": t.rate, "ok": t.ok, "why": t.why})).collect::<Vec<_>>(),
        "latency_under_load": curve.iter().map(|(f, t)| json!({"fraction": f, "rate": t.rate, "tick_to_trade": t.result["tick_to_trade"]})).collect::<Vec<_>>(),
    })).collect::<Vec<_>>());
    std::fs::write(
        out.join("zero-loss.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    eprintln!("results in {}", out.display());
    Ok(())
}
