//! `boundary`: the engine behind a process boundary.
//!
//! - `boundary serve --uds PATH [--tcp 127.0.0.1:PORT]`: serve until Ctrl-C / SIGTERM (or,
//!   with `--exit-on-stdin-eof`, until stdin closes: how the bench stops its server).
//! - `boundary serve-stdio`: read one request on stdin, write its reply on stdout, exit.
//! - `boundary call --uds PATH | --tcp ADDR`: sweep the spec's workload through a server and
//!   print the results.
#![forbid(unsafe_code)]

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
#[cfg(test)]
use proptest as _;
use {
    affinity as _, hdrhistogram as _, results as _, serde as _, serde_json as _, thiserror as _,
    tokio as _,
};

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use boundary::client::Client;
use boundary::proto::DEFAULT_MAX_FRAME;
use boundary::server::{self, Config, Server};
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "boundary",
    version,
    about = "The backtest engine behind a socket, a pipe or a process"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

/// What every server mode takes: how a sweep runs and how large a request may be.
#[derive(Debug, clap::Args)]
struct ComputeOptions {
    /// Threads of one sweep (1 for a fair per-call comparison with an in-process sweep).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Cap on a request frame's length word, in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_FRAME)]
    max_frame: u32,
}

impl ComputeOptions {
    fn config(&self) -> anyhow::Result<Config> {
        if self.threads == 0 {
            bail!("--threads must be at least 1");
        }
        // Bit 31 of a reply's length word flags an error reply.
        if self.max_frame > i32::MAX as u32 {
            bail!("--max-frame must be under 2 GiB (2147483648): bit 31 marks error replies");
        }
        Ok(Config {
            threads: self.threads,
            max_frame: self.max_frame,
            ..Config::default()
        })
    }
}

/// The socket server's options: also how its connections wait.
#[derive(Debug, clap::Args)]
struct ServeOptions {
    #[command(flatten)]
    compute: ComputeOptions,
    /// Microseconds a connection spins on an empty socket before it blocks (0: block at once).
    /// Cuts a small round trip's wake-up, at the price of a busy core meanwhile.
    #[arg(long, default_value_t = 0)]
    spin_us: u64,
    /// Pin every connection's thread to this CPU (with a tokio runtime: its every thread).
    #[arg(long)]
    cpu: Option<usize>,
    /// How connections are served: `threads` (a thread each, blocking reads),
    /// `tokio-current` (a task each, one thread polls them all) or `tokio-multi` (a task each
    /// on a work-stealing runtime of --workers threads). Sweeps run on tokio's blocking pool.
    #[arg(long, value_enum, default_value_t = RuntimeArg::Threads)]
    runtime: RuntimeArg,
    /// Worker threads of `--runtime tokio-multi` (default: one per CPU this process may use).
    #[arg(long)]
    workers: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RuntimeArg {
    Threads,
    TokioCurrent,
    TokioMulti,
}

impl ServeOptions {
    fn config(&self) -> anyhow::Result<Config> {
        let runtime = match (self.runtime, self.workers) {
            (RuntimeArg::TokioMulti, Some(0)) => bail!("--workers must be at least 1"),
            (RuntimeArg::TokioMulti, w) => server::Runtime::TokioMultiThread {
                workers: w.unwrap_or_else(|| {
                    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
                }),
            },
            (_, Some(_)) => bail!("--workers is for --runtime tokio-multi"),
            (RuntimeArg::Threads, None) => server::Runtime::Threads,
            (RuntimeArg::TokioCurrent, None) => server::Runtime::TokioCurrentThread,
        };
        Ok(Config {
            spin: Duration::from_micros(self.spin_us),
            cpu: self.cpu,
            runtime,
            ..self.compute.config()?
        })
    }
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Serve over a Unix socket (mode 0600) and/or TCP until Ctrl-C or SIGTERM.
    Serve {
        /// Unix socket path (a stale socket there is replaced).
        #[arg(long)]
        uds: Option<PathBuf>,
        /// TCP address; loopback unless you mean it (the protocol has no authentication).
        #[arg(long)]
        tcp: Option<SocketAddr>,
        /// Also stop when stdin reaches end of file.
        #[arg(long)]
        exit_on_stdin_eof: bool,
        #[command(flatten)]
        opts: ServeOptions,
    },
    /// Read one request on stdin, write the reply on stdout (the spawn-per-call mode).
    ServeStdio {
        #[command(flatten)]
        opts: ComputeOptions,
    },
    /// Sweep the spec's workload through a running server and print the results.
    Call {
        /// The server's Unix socket.
        #[arg(long, conflicts_with = "tcp")]
        uds: Option<PathBuf>,
        /// The server's TCP address.
        #[arg(long)]
        tcp: Option<SocketAddr>,
        /// Bars of the seed-42 GBM series.
        #[arg(long, default_value_t = 150_000)]
        bars: usize,
    },
}

/// An error is a message for the user: printed with its causes, no backtrace.
fn main() -> std::process::ExitCode {
    paths::cli::run_main(run)
}

fn run() -> anyhow::Result<()> {
    match Cli::parse().command {
        Cmd::Serve {
            uds,
            tcp,
            exit_on_stdin_eof,
            opts,
        } => serve(uds, tcp, exit_on_stdin_eof, &opts),
        Cmd::ServeStdio { opts } => {
            let config = opts.config()?;
            let ok = server::serve_stdio(std::io::stdin().lock(), std::io::stdout().lock(), config)
                .context("failed to serve the request on stdin")?;
            if !ok {
                bail!("the request on stdin got an error reply");
            }
            Ok(())
        }
        Cmd::Call { uds, tcp, bars } => call(uds, tcp, bars),
    }
}

fn serve(
    uds: Option<PathBuf>,
    tcp: Option<SocketAddr>,
    exit_on_stdin_eof: bool,
    opts: &ServeOptions,
) -> anyhow::Result<()> {
    let config = opts.config()?;
    if uds.is_none() && tcp.is_none() {
        bail!("nothing to serve on: give --uds PATH and/or --tcp 127.0.0.1:PORT");
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal while shutting down (waiting for a sweep in flight) exits at once;
        // the first one's shutdown has removed the socket by then.
        signal_hook::flag::register_conditional_shutdown(sig, 1, stop.clone())
            .with_context(|| format!("failed to handle signal {sig}"))?;
        signal_hook::flag::register(sig, stop.clone())
            .with_context(|| format!("failed to handle signal {sig}"))?;
    }
    let mut servers = Vec::new();
    if let Some(path) = uds {
        let s = Server::bind_uds(&path, config)
            .with_context(|| format!("failed to serve on {}", path.display()))?;
        servers.push(s);
    }
    if let Some(addr) = tcp {
        if !addr.ip().is_loopback() {
            eprintln!(
                "warning: serving on {addr}, beyond loopback; the protocol has no authentication"
            );
        }
        let s =
            Server::bind_tcp(addr, config).with_context(|| format!("failed to serve on {addr}"))?;
        servers.push(s);
    }
    // One line per endpoint on stdout: the bench reads the TCP port from here.
    let mut out = std::io::stdout().lock();
    for s in &servers {
        writeln!(out, "{}", s.endpoint())?;
    }
    writeln!(
        out,
        "ready runtime={} threads={} spin_us={}",
        config.runtime.name(),
        config.threads,
        config.spin.as_micros()
    )?;
    out.flush()?;
    drop(out);
    if exit_on_stdin_eof {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = std::io::stdin().lock().read_to_end(&mut sink);
            stop.store(true, Ordering::SeqCst);
        });
    }
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
    }
    for s in servers {
        let stats = s.stats();
        eprintln!("{}: stopping ({stats:?})", s.endpoint());
        s.shutdown();
    }
    Ok(())
}

fn call(uds: Option<PathBuf>, tcp: Option<SocketAddr>, bars: usize) -> anyhow::Result<()> {
    let mut client = match (uds, tcp) {
        (Some(p), _) => Client::connect_uds(&p)?,
        (None, Some(a)) => Client::connect_tcp(a)?,
        (None, None) => bail!("give --uds PATH or --tcp ADDR"),
    };
    let close = engine::data::gbm(42, bars);
    let grid = engine::grid_default();
    let t = Instant::now();
    let results = client.sweep(&close, &grid).context("the sweep failed")?;
    let took = t.elapsed();
    let mut out = std::io::stdout().lock();
    writeln!(out, "combo n pnl trades")?;
    for (i, (p, r)) in grid.iter().zip(&results).enumerate() {
        writeln!(out, "{i} {} {:.6} {}", p.n(), r.pnl, r.trades)?;
    }
    writeln!(out, "# {} combos x {bars} bars in {took:?}", grid.len())?;
    Ok(())
}
