//! The measurement: the ping and pong threads, pinned, and the round trips' histogram.
use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use afxdp::{clock, process};
use anyhow::Context as _;
use results::FloorReport;
use trader_core::stats::Latency;

use crate::Options;

/// Tells the pong thread to stop (never a ping: pings are odd, answers even and smaller).
const DONE: u64 = u64::MAX - 1;

/// Keeps the flag on a cache line of its own.
#[repr(align(128))]
struct Line(AtomicU64);

/// Measures the floor as `options` say and writes its report.
pub fn run(options: Options) -> anyhow::Result<()> {
    let Options {
        cpus,
        iterations,
        seconds,
        json_out,
        hgrm_out,
    } = options;
    let [ping, pong] = cpus[..] else {
        anyhow::bail!("--cpus takes exactly two CPUs, e.g. 0,1");
    };
    if ping == pong {
        anyhow::bail!(
            "--cpus {ping},{pong}: two different CPUs (on one, each round trip waits for a \
             scheduler slice)"
        );
    }
    let line = Arc::new(Line(AtomicU64::new(0)));
    let other = start_pong(&line, pong)?;
    if let Err(e) = process::pin_to_cpu(ping) {
        line.0.store(DONE, Ordering::Release);
        let _ = other.join();
        return Err(e).context("the ping thread (first of --cpus)");
    }
    let start = clock::now_ns();
    let hist = ping_loop(&line, start, iterations, seconds);
    line.0.store(DONE, Ordering::Release);
    other.join().expect("pong thread")?;
    let report = FloorReport {
        cpus: [ping, pong],
        iterations: hist.len(),
        seconds: (clock::now_ns() - start) as f64 / 1e9,
        round_trip: hist.summary(),
        machine: results::Machine::read(),
    };
    results::write(json_out.as_deref(), &report)?;
    if let Some(p) = &hgrm_out {
        hist.write_hgrm(p)?;
    }
    Ok(())
}

/// Starts the pong thread on `pong`: it answers each odd value (a ping) on `line` with the
/// next even one until DONE. Returns once it is pinned (a ping nobody answers would spin
/// forever), or the error that kept it from its CPU.
fn start_pong(
    line: &Arc<Line>,
    pong: usize,
) -> anyhow::Result<std::thread::JoinHandle<anyhow::Result<()>>> {
    let (pinned_tx, pinned) = std::sync::mpsc::channel();
    let other = {
        let line = Arc::clone(line);
        std::thread::spawn(move || -> anyhow::Result<()> {
            let pin = process::pin_to_cpu(pong);
            let ok = pin.is_ok();
            let _ = pinned_tx.send(ok);
            pin?;
            // Odd values are pings; answer each with the next even value; DONE ends it.
            let mut want = 1u64;
            loop {
                let seen = loop {
                    let v = line.0.load(Ordering::Acquire);
                    if v == want || v == DONE {
                        break v;
                    }
                    std::hint::spin_loop();
                };
                if seen == DONE {
                    return Ok(());
                }
                line.0.store(want + 1, Ordering::Release);
                want += 2;
            }
        })
    };
    if pinned.recv() != Ok(true) {
        return Err(other
            .join()
            .expect("pong thread")
            .err()
            .unwrap_or_else(|| anyhow::anyhow!("the pong thread ended before it started")))
        .context("the pong thread (second of --cpus)");
    }
    Ok(other)
}

/// Pings `iterations` times, or for `seconds`, and records each round trip; the first tenth
/// (of the count, or of the time) warms caches and frequencies and is not recorded.
fn ping_loop(line: &Line, start: u64, iterations: u64, seconds: Option<f64>) -> Latency {
    let mut hist = Latency::new();
    let (limit, warmup_ns) = match seconds {
        Some(s) => (u64::MAX, (s * 1e8) as u64),
        None => (iterations, 0),
    };
    let warmup = if seconds.is_some() { 0 } else { limit / 10 };
    let end = seconds.map(|s| start + (s * 1e9) as u64);
    let mut i = 0;
    while i < limit {
        let t0 = clock::now_ns();
        line.0.store(2 * i + 1, Ordering::Release);
        while line.0.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
        let t1 = clock::now_ns();
        if i >= warmup && t0 >= start + warmup_ns {
            hist.record(t1 - t0);
        }
        i += 1;
        if end.is_some_and(|e| t1 >= e) {
            break;
        }
    }
    hist
}
