//! `cargo xtask matrix`: what each design choice on the trader costs. Runs a baseline per path,
//! then each knob alone on the paths it applies to, all in one lab and one invocation, and
//! prints which knob moves the median and which moves the tail.
use std::fmt::Write as _;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::bench::{self, Session};

/// One design choice, as trader flags (and replay batching).
struct Knob {
    name: &'static str,
    what: &'static str,
    paths: &'static [&'static str],
    trader: &'static [&'static str],
    batch: Option<u16>,
    no_pin: bool,
    wait: Option<&'static str>,
    xdp_mode: Option<&'static str>,
}

const BOTH: &[&str] = &["xdp", "udp"];

const fn knob(
    name: &'static str,
    what: &'static str,
    paths: &'static [&'static str],
    trader: &'static [&'static str],
) -> Knob {
    Knob {
        name,
        what,
        paths,
        trader,
        batch: None,
        no_pin: false,
        wait: None,
        xdp_mode: None,
    }
}

const XDP: &[&str] = &["xdp"];
const UDP: &[&str] = &["udp"];

const KNOBS: &[Knob] = &[
    Knob {
        wait: Some("block"),
        ..knob(
            "block",
            "sleep in poll()/recv() instead of spinning",
            BOTH,
            &[],
        )
    },
    knob(
        "busy-poll",
        "SO_BUSY_POLL 50 µs + SO_PREFER_BUSY_POLL",
        BOTH,
        &["--busy-poll", "50", "--prefer-busy-poll"],
    ),
    Knob {
        no_pin: true,
        ..knob("unpinned", "no CPU pinning of trader and replay", BOTH, &[])
    },
    knob(
        "fifo",
        "trader under SCHED_FIFO 50",
        BOTH,
        &["--fifo", "50"],
    ),
    knob(
        "mlock",
        "mlockall(MCL_CURRENT|MCL_FUTURE)",
        BOTH,
        &["--mlock"],
    ),
    knob("huge-pages", "UMEM on 2 MiB pages", XDP, &["--huge-pages"]),
    knob(
        "rx-batch-1",
        "one frame per RX ring visit (default 64)",
        XDP,
        &["--batch", "1"],
    ),
    knob(
        "no-need-wakeup",
        "bind without XDP_USE_NEED_WAKEUP",
        XDP,
        &["--no-need-wakeup"],
    ),
    Knob {
        xdp_mode: Some("skb"),
        ..knob("skb", "generic (SKB) XDP instead of native", XDP, &[])
    },
    knob(
        "recvmmsg",
        "recvmmsg, up to 16 datagrams per call",
        UDP,
        &["--recvmmsg", "16"],
    ),
    knob(
        "small-rcvbuf",
        "default 208 KiB UDP receive buffer (not 4 MiB)",
        UDP,
        &["--rcvbuf", "212992"],
    ),
    Knob {
        batch: Some(4),
        ..knob(
            "mold-batch-4",
            "4 ITCH messages per MoldUDP64 packet",
            BOTH,
            &[],
        )
    },
];

/// Options.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// Knobs to run (comma-separated), or `all`. Known: block, busy-poll, unpinned, fifo,
    /// mlock, huge-pages, rx-batch-1, no-need-wakeup, skb, recvmmsg, small-rcvbuf,
    /// mold-batch-4.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub knobs: Vec<String>,
    /// Paths (comma-separated): xdp, udp.
    #[arg(long, value_delimiter = ',', default_value = "xdp,udp")]
    pub paths: Vec<String>,
    /// Messages per run.
    #[arg(long, default_value_t = 20_000)]
    pub count: u64,
    /// Rate per run (msg/s).
    #[arg(long, default_value = "20k")]
    pub rate: String,
    /// Lab name.
    #[arg(long, default_value = netns::PREFIX)]
    pub lab: String,
    /// Results folder (default target/matrix/<time>).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Fail if any run fails or breaks parity (CI).
    #[arg(long)]
    pub strict: bool,
    /// Don't install missing dependencies first.
    #[arg(long)]
    pub no_setup: bool,
}

fn base(o: &Options) -> bench::Options {
    bench::Options {
        rate: o.rate.clone(),
        ..bench::Options::trial(o.count, &o.lab, o.out.clone(), o.no_setup)
    }
}

pub fn run(o: Options) -> anyhow::Result<()> {
    let knobs: Vec<&Knob> = if o.knobs.iter().any(|k| k == "all") {
        KNOBS.iter().collect()
    } else {
        o.knobs
            .iter()
            .map(|k| {
                KNOBS
                    .iter()
                    .find(|x| x.name == k)
                    .with_context(|| format!("unknown knob {k:?}; see --help"))
            })
            .collect::<anyhow::Result<_>>()?
    };
    for p in &o.paths {
        if p != "xdp" && p != "udp" {
            bail!("unknown path {p:?}: use xdp, udp");
        }
    }
    let b = base(&o);
    let session = Session::start(&b, "matrix")?;
    let huge_ok = std::fs::read_to_string("/proc/sys/vm/nr_hugepages")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .is_some_and(|n| n >= 8);
    let mut rows: Vec<(String, String, Value)> = Vec::new();
    let mut skipped = Vec::new();
    let mut variants: Vec<(Option<&Knob>, &str)> = Vec::new();
    for p in &o.paths {
        variants.push((None, p.as_str()));
    }
    for k in &knobs {
        for p in &o.paths {
            if k.paths.contains(&p.as_str()) {
                variants.push((Some(*k), p.as_str()));
            }
        }
    }
    let total = variants.len();
    for (i, (k, p)) in variants.into_iter().enumerate() {
        if session.stopped() {
            break;
        }
        let name = k.map_or("baseline", |k| k.name);
        if k.is_some_and(|k| k.name == "huge-pages") && !huge_ok {
            skipped.push(
                "huge-pages: no 2 MiB pages reserved (echo 64 > /proc/sys/vm/nr_hugepages)".into(),
            );
            continue;
        }
        eprintln!("[{}/{total}] {name} on {p}", i + 1);
        let mut opts = b.clone();
        if let Some(k) = k {
            opts.trader_args = k.trader.iter().map(|s| s.to_string()).collect();
            opts.batch = k.batch.unwrap_or(1);
            opts.no_pin = k.no_pin;
            if let Some(w) = k.wait {
                opts.wait = w.into();
            }
            if let Some(m) = k.xdp_mode {
                opts.xdp_mode = m.into();
            }
        }
        let tag = format!("{p}-{name}");
        match bench::run_path(
            &opts,
            &session.bins,
            session.lab.config(),
            p,
            &tag,
            &session.out,
            &session.stop,
        ) {
            Ok(run) => {
                let replay: Value =
                    serde_json::from_str(&std::fs::read_to_string(&run.replay_json)?)?;
                rows.push((name.to_owned(), p.to_owned(), replay));
            }
            Err(e) => skipped.push(format!("{name} on {p}: {e:#}")),
        }
    }
    let out = session.out.clone();
    let interrupted = session.stopped();
    session.finish();
    let table = render(&rows, &knobs, &o);
    print!("{table}");
    for s in &skipped {
        println!("skipped: {s}");
    }
    std::fs::write(out.join("matrix.md"), &table)?;
    let json = json!({
        "count": o.count, "rate": o.rate,
        "rows": rows.iter().map(|(k, p, r)| json!({"knob": k, "path": p, "tick_to_trade": r["tick_to_trade"], "parity_ok": r["parity"]["ok"], "orders": r["orders_received"], "late_sends": r["late_sends"]})).collect::<Vec<_>>(),
        "skipped": skipped,
    });
    std::fs::write(
        out.join("matrix.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    eprintln!("results in {}", out.display());
    if interrupted {
        bail!(
            "interrupted; the runs done so far are above and in {}",
            out.display()
        );
    }
    if rows.is_empty() {
        bail!("no run of the matrix succeeded (each one's error is above)");
    }
    if o.strict {
        let failed: Vec<String> = rows
            .iter()
            .filter(|(_, _, r)| r["parity"]["ok"].as_bool() != Some(true))
            .map(|(k, p, _)| format!("{k} on {p}"))
            .chain(
                skipped
                    .iter()
                    .filter(|s| !s.starts_with("huge-pages"))
                    .cloned(),
            )
            .collect();
        if !failed.is_empty() {
            bail!("matrix runs failed or broke parity: {}", failed.join("; "));
        }
    }
    Ok(())
}

fn render(rows: &[(String, String, Value)], knobs: &[&Knob], o: &Options) -> String {
    let g = |v: &Value, k: &str| v["tick_to_trade"][k].as_f64().unwrap_or(f64::NAN);
    let mut t = String::new();
    let _ = writeln!(
        t,
        "knob matrix: {} messages at {} msg/s per run; tick-to-trade µs; Δ vs the same path's baseline",
        o.count, o.rate
    );
    let _ = writeln!(
        t,
        "| knob | path | p50 | Δp50 | p99 | p99.9 | Δp99.9 | p99.99 | Δp99.99 | parity | moves |"
    );
    let _ = writeln!(t, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|");
    for (k, p, r) in rows {
        let base = rows.iter().find(|(bk, bp, _)| bk == "baseline" && bp == p);
        let d = |key: &str| {
            base.map_or(f64::NAN, |(_, _, b)| {
                (g(r, key) - g(b, key)) / g(b, key) * 100.0
            })
        };
        let (d50, d999, d9999) = (d("p50_us"), d("p999_us"), d("p9999_us"));
        let moves = if k == "baseline" {
            String::new()
        } else {
            let mut m = Vec::new();
            // Thresholds for a shared, noisy 2-core VM: below them, call it noise.
            if d50.abs() >= 10.0 {
                m.push(if d50 < 0.0 { "p50 ↓" } else { "p50 ↑" });
            }
            if d999.abs() >= 30.0 || d9999.abs() >= 30.0 {
                m.push(if d999 + d9999 < 0.0 {
                    "tail ↓"
                } else {
                    "tail ↑"
                });
            }
            if m.is_empty() {
                "—".into()
            } else {
                m.join(", ")
            }
        };
        let what = knobs.iter().find(|x| x.name == k).map_or("", |x| x.what);
        let _ = writeln!(
            t,
            "| {k}{} | {p} | {:.2} | {} | {:.2} | {:.2} | {} | {:.2} | {} | {} | {moves} |",
            if what.is_empty() {
                String::new()
            } else {
                format!(" ({what})")
            },
            g(r, "p50_us"),
            pct(d50),
            g(r, "p99_us"),
            g(r, "p999_us"),
            pct(d999),
            g(r, "p9999_us"),
            pct(d9999),
            if r["parity"]["ok"].as_bool() == Some(true) {
                "ok"
            } else {
                "FAIL"
            },
        );
    }
    t
}

fn pct(x: f64) -> String {
    if x.is_nan() {
        "".into()
    } else {
        format!("{x:+.0}%")
    }
}
