//! Threads versus tokio: the same server on three runtimes (`boundary serve --runtime`),
//! measured in the same run as everything else, and many clients at once.
use std::fmt::Write as _;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::client::Client;
use anyhow::Context as _;
use hdrhistogram::Histogram;
use serde_json::json;

use super::{EchoPoint, ModeResult, ServerProcess, median_of};

/// The runtimes compared, by their `--runtime` name.
pub(crate) const RUNTIMES: [&str; 3] = ["threads", "tokio-current", "tokio-multi"];

/// The sweep modes' names on a runtime: (batched, chatty, stateful). The threads server keeps
/// the study's names.
pub(crate) fn mode_names(runtime: &str) -> [&'static str; 3] {
    match runtime {
        "tokio-current" => [
            "tokio-current-batched",
            "tokio-current-chatty",
            "tokio-current-stateful",
        ],
        "tokio-multi" => [
            "tokio-multi-batched",
            "tokio-multi-chatty",
            "tokio-multi-stateful",
        ],
        _ => ["uds-batched", "uds-chatty", "uds-stateful"],
    }
}

/// One runtime's echo curves over UDS: both ends blocking, and both spinning.
pub(crate) struct RuntimeEcho {
    pub(crate) runtime: &'static str,
    pub(crate) block: Vec<EchoPoint>,
    pub(crate) spin: Vec<EchoPoint>,
}

/// Many clients at once against one runtime: each sends an 8-byte echo, waits for the reply,
/// sends the next (closed loop).
pub(crate) struct Concurrency {
    pub(crate) runtime: &'static str,
    pub(crate) clients: usize,
    pub(crate) secs: f64,
    /// Round-trip times in nanoseconds, every call of every client.
    pub(crate) hist: Histogram<u64>,
}

impl Concurrency {
    fn calls(&self) -> u64 {
        self.hist.len()
    }
    fn rate(&self) -> f64 {
        self.calls() as f64 / self.secs
    }
}

/// For each client count, `rounds` rounds of `secs` seconds on each server in turn (so
/// machine noise falls on every runtime alike); histograms and times add up over rounds.
pub(crate) fn concurrency(
    servers: &[(&'static str, &ServerProcess)],
    client_counts: &[usize],
    rounds: usize,
    secs: f64,
) -> anyhow::Result<Vec<Concurrency>> {
    let mut out: Vec<Concurrency> = Vec::new();
    for &clients in client_counts {
        for round in 0..rounds {
            for &(runtime, srv) in servers {
                let (hist, took) = closed_loop(srv, clients, Duration::from_secs_f64(secs))
                    .with_context(|| format!("{clients} clients on {runtime}"))?;
                match out
                    .iter_mut()
                    .find(|c| c.runtime == runtime && c.clients == clients)
                {
                    Some(c) => {
                        c.hist.add(&hist)?;
                        c.secs += took;
                    }
                    None => out.push(Concurrency {
                        runtime,
                        clients,
                        secs: took,
                        hist,
                    }),
                }
            }
            eprintln!("{clients} clients: round {}/{rounds} done", round + 1);
        }
    }
    Ok(out)
}

/// What a runtime's server holds for idle connections: its resident memory and threads with
/// none, and with `conns` open (each has answered one echo, so it is accepted and served).
pub(crate) struct Idle {
    pub(crate) runtime: &'static str,
    pub(crate) conns: usize,
    pub(crate) before: (u64, u64),
    pub(crate) open: (u64, u64),
}

/// (VmRSS in KiB, threads) of process `pid`, from /proc.
fn rss_threads(pid: u32) -> anyhow::Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("failed to read /proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .with_context(|| format!("no {name} in /proc/{pid}/status"))
    };
    Ok((field("VmRSS:")?, field("Threads:")?))
}

/// Opens `conns` connections to each server, one echo on each, and reads what the server
/// holds with them open; then closes them.
pub(crate) fn idle(
    servers: &[(&'static str, &ServerProcess)],
    conns: usize,
) -> anyhow::Result<Vec<Idle>> {
    let mut out = Vec::new();
    for &(runtime, srv) in servers {
        let pid = srv.pid();
        let before = rss_threads(pid)?;
        let mut open = Vec::with_capacity(conns);
        for i in 0..conns {
            let mut c = Client::connect_uds(&srv.uds)?;
            let x = [i as f64];
            anyhow::ensure!(c.echo(&x)? == x, "{runtime}: echo {i} came back different");
            open.push(c);
        }
        // The connection threads (or tasks) are all up: each answered its echo.
        let with = rss_threads(pid)?;
        drop(open);
        out.push(Idle {
            runtime,
            conns,
            before,
            open: with,
        });
    }
    Ok(out)
}

/// `clients` threads, each with its own connection, echoing one float back to back for
/// `dur`; every reply checked. Returns the round trips and the seconds from the common start
/// to the last client's end.
fn closed_loop(
    srv: &ServerProcess,
    clients: usize,
    dur: Duration,
) -> anyhow::Result<(Histogram<u64>, f64)> {
    let start = Barrier::new(clients + 1);
    let (hists, secs) = std::thread::scope(|s| -> anyhow::Result<_> {
        let handles: Vec<_> = (0..clients)
            .map(|i| {
                let start = &start;
                s.spawn(move || -> anyhow::Result<Histogram<u64>> {
                    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
                    // Connect before the start, so every connection is open while any sends.
                    let c = Client::connect_uds(&srv.uds);
                    start.wait();
                    let mut c = c?;
                    let payload = [i as f64 + 0.5];
                    let mut back = Vec::with_capacity(1);
                    let end = Instant::now() + dur;
                    loop {
                        let t = Instant::now();
                        if t >= end {
                            break;
                        }
                        c.echo_into(&payload, &mut back)?;
                        let ns = t.elapsed().as_nanos() as u64;
                        anyhow::ensure!(back == payload, "client {i}: echo came back different");
                        hist.record(ns.max(1))?;
                    }
                    Ok(hist)
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        let mut hists = Vec::with_capacity(clients);
        for h in handles {
            hists.push(
                h.join()
                    .map_err(|_| anyhow::anyhow!("a client thread panicked"))??,
            );
        }
        Ok((hists, t0.elapsed().as_secs_f64()))
    })?;
    let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    for h in &hists {
        all.add(h)?;
    }
    Ok((all, secs))
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// The runtimes section of the report; returns its JSON.
pub(crate) fn section(
    md: &mut String,
    sweeps: &[ModeResult],
    combos: usize,
    echo: &[RuntimeEcho],
    conc: &[Concurrency],
    idle: &[Idle],
    spin_us: u128,
) -> anyhow::Result<serde_json::Value> {
    writeln!(md, "## Runtimes: a thread per connection vs tokio\n")?;
    writeln!(
        md,
        "The same server (`boundary serve --runtime`), protocol, checks and engine, three ways of \
         waiting on connections: `threads` (a thread per connection, blocking reads), \
         `tokio-current` (a task per connection, one thread polls all of them), `tokio-multi` \
         (a task per connection on a work-stealing runtime, one worker per core, given with \
         `--workers`). On both tokio \
         runtimes a SWEEP or SWEEP_HANDLE runs on tokio's blocking pool (a thread hop each way); \
         ECHO, LOAD and FREE are answered on the task. Spin: both ends spin up to {spin_us} us \
         before blocking, every server thread pinned to CPU 0, the client to the last CPU (a \
         tokio task spins by yielding to its runtime). The sweep modes run blocking only.\n"
    )?;
    writeln!(
        md,
        "| runtime | echo 8 B median | p99 | echo 8 B spin median | spin p99 | echo 1.2 MB median | batched sweep | chatty per call | stateful per call |"
    )?;
    writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    let mut rows = Vec::new();
    for e in echo {
        let [b, c, s] = mode_names(e.runtime);
        let first = |v: &[EchoPoint]| {
            v.first()
                .map_or((f64::NAN, f64::NAN), |p| (p.median_us, p.p99_us))
        };
        let (m, p99) = first(&e.block);
        let (sm, sp99) = first(&e.spin);
        let big = e.block.last().map_or(f64::NAN, |p| p.median_us);
        let batched = median_of(sweeps, b);
        let chatty = 1e6 * median_of(sweeps, c) / combos as f64;
        let stateful = 1e6 * median_of(sweeps, s) / combos as f64;
        writeln!(
            md,
            "| {} | {m:.1} us | {p99:.1} us | {sm:.1} us | {sp99:.1} us | {big:.1} us | {batched:.4} s | {chatty:.1} us | {stateful:.1} us |",
            e.runtime
        )?;
        rows.push(json!({
            "runtime": e.runtime, "echo_8b_median_us": m, "echo_8b_p99_us": p99,
            "echo_8b_spin_median_us": sm, "echo_8b_spin_p99_us": sp99, "echo_1_2mb_median_us": big,
            "batched_s": batched, "chatty_per_call_us": chatty, "stateful_per_call_us": stateful,
            "echo_uds": super::echo_json(&e.block), "echo_uds_spin": super::echo_json(&e.spin),
        }));
    }
    writeln!(
        md,
        "\nEcho curve over UDS, median (and p99) per runtime, blocking and spinning:\n"
    )?;
    write!(md, "| floats | bytes |")?;
    for e in echo {
        write!(md, " {} |", e.runtime)?;
    }
    for e in echo {
        write!(md, " {} spin |", e.runtime)?;
    }
    writeln!(md)?;
    writeln!(md, "|---:|---:|{}", "---:|".repeat(2 * echo.len()))?;
    if let Some(first) = echo.first() {
        for (k, p) in first.block.iter().enumerate() {
            write!(md, "| {} | {} |", p.floats, p.floats * 8)?;
            for e in echo {
                let q = &e.block[k];
                write!(md, " {:.1} ({:.1}) us |", q.median_us, q.p99_us)?;
            }
            for e in echo {
                let q = &e.spin[k];
                write!(md, " {:.1} ({:.1}) us |", q.median_us, q.p99_us)?;
            }
            writeln!(md)?;
        }
    }
    writeln!(
        md,
        "\n### Many clients at once\n\nEach client a thread of the bench with its own UDS \
         connection, all connected before any sends, echoing 8 bytes back to back and checking \
         every reply (closed loop: a client's next call waits for its last reply). Round-trip \
         percentiles from one HDR histogram of every call (client-side `Instant` pairs; with \
         more clients than cores the client threads' own scheduling is in the figure, alike for \
         every runtime). Rounds alternate between the runtimes.\n"
    )?;
    writeln!(
        md,
        "| runtime | clients | calls | seconds | calls/s | p50 | p99 | p99.9 | p99.99 | max |"
    )?;
    writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    let mut crow = Vec::new();
    for c in conc {
        let h = &c.hist;
        let q = |x: f64| us(h.value_at_quantile(x));
        writeln!(
            md,
            "| {} | {} | {} | {:.1} | {:.0} | {:.1} us | {:.1} us | {:.1} us | {:.1} us | {:.1} us |",
            c.runtime,
            c.clients,
            c.calls(),
            c.secs,
            c.rate(),
            q(0.5),
            q(0.99),
            q(0.999),
            q(0.9999),
            us(h.max())
        )?;
        crow.push(json!({
            "runtime": c.runtime, "clients": c.clients, "calls": c.calls(), "secs": c.secs,
            "calls_per_s": c.rate(), "p50_us": q(0.5), "p99_us": q(0.99), "p999_us": q(0.999),
            "p9999_us": q(0.9999), "max_us": us(h.max()),
        }));
    }
    writeln!(
        md,
        "\n### Idle connections\n\nEach server with no connection, then with {} open (each has \
         answered one 8-byte echo, then sits idle): resident memory (VmRSS) and threads of the \
         server process, from /proc.\n",
        idle.first().map_or(0, |i| i.conns)
    )?;
    writeln!(
        md,
        "| runtime | connections | RSS before | RSS with them | per connection | threads before | threads with them |"
    )?;
    writeln!(md, "|---|---:|---:|---:|---:|---:|---:|")?;
    let mut irow = Vec::new();
    for i in idle {
        let per = (i.open.0 as f64 - i.before.0 as f64) / i.conns.max(1) as f64;
        writeln!(
            md,
            "| {} | {} | {} KiB | {} KiB | {per:.1} KiB | {} | {} |",
            i.runtime, i.conns, i.before.0, i.open.0, i.before.1, i.open.1
        )?;
        irow.push(json!({
            "runtime": i.runtime, "connections": i.conns, "rss_before_kib": i.before.0,
            "rss_open_kib": i.open.0, "rss_per_connection_kib": per,
            "threads_before": i.before.1, "threads_open": i.open.1,
        }));
    }
    writeln!(md)?;
    Ok(json!({ "runtimes": rows, "concurrency": crow, "idle": irow }))
}
