//! The CPU floor: two threads pinned to two cores ping-pong a counter through one shared
//! cache line. The round trip is what moving one cache line between the two cores costs:
//! nothing that crosses between the replay's core and the trader's can be faster.
use std::{
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use anyhow::Context as _;
use clap::Parser;
use userspace::{stats::Latency, sys};

/// Measures the inter-core round trip through shared memory.
#[derive(Debug, Parser)]
#[command(version)]
struct Options {
    /// The two CPUs (ping, pong).
    #[arg(long, value_delimiter = ',', default_value = "0,1")]
    cpus: Vec<usize>,
    /// Round trips to measure.
    #[arg(long, default_value_t = 200_000)]
    iterations: u64,
    /// Write the summary here as JSON (stdout if absent).
    #[arg(long)]
    json_out: Option<PathBuf>,
    /// Write the histogram here (.hgrm, µs).
    #[arg(long)]
    hgrm_out: Option<PathBuf>,
}

/// Keeps the flag on a cache line of its own.
#[repr(align(128))]
struct Line(AtomicU64);

fn main() -> anyhow::Result<()> {
    let o = Options::parse();
    let [ping, pong] = o.cpus[..] else {
        anyhow::bail!("--cpus takes exactly two CPUs, e.g. 0,1");
    };
    let line = Arc::new(Line(AtomicU64::new(0)));
    let n = o.iterations;
    let other = {
        let line = Arc::clone(&line);
        std::thread::spawn(move || -> anyhow::Result<()> {
            sys::pin_to_cpu(pong)?;
            // Odd values are pings; answer each with the next even value.
            let mut want = 1u64;
            while want < 2 * n {
                while line.0.load(Ordering::Acquire) != want {
                    std::hint::spin_loop();
                }
                line.0.store(want + 1, Ordering::Release);
                want += 2;
            }
            Ok(())
        })
    };
    sys::pin_to_cpu(ping)?;
    let mut hist = Latency::new();
    let warmup = n / 10;
    for i in 0..n {
        let t0 = sys::now_ns();
        line.0.store(2 * i + 1, Ordering::Release);
        while line.0.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
        if i >= warmup {
            hist.record(sys::now_ns() - t0);
        }
    }
    other.join().expect("pong thread")?;
    let (kernel, cpu) = sys::machine();
    let json = serde_json::json!({
        "floor": "cpu", "cpus": [ping, pong], "iterations": n - warmup,
        "round_trip": hist.summary(), "kernel": kernel, "cpu": cpu,
        "note": "includes two CLOCK_MONOTONIC reads (~20 ns each)",
    });
    let text = serde_json::to_string_pretty(&json)?;
    match &o.json_out {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
        None => println!("{text}"),
    }
    if let Some(p) = &o.hgrm_out {
        hist.write_hgrm(p)?;
    }
    Ok(())
}
