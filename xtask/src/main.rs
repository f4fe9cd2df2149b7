//! `cargo xtask <command>`: everything a user or CI does with this project, in one place.
#![forbid(unsafe_code)]

mod bench;
mod bench_boundary;
mod book;
mod doctor;
mod hotpath;
mod lab;
mod market;
mod matrix;
mod pgo;
mod setup;
mod sockperf;
mod test;
mod util;
mod zeroloss;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    version,
    about = "Tick-to-trade lab: setup, the netns lab, tests and benchmarks",
    long_about = "Tick-to-trade lab automation.\n\nMost commands need root (network namespaces, \
                  XDP, AF_XDP); each says what it is missing otherwise."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Install what the project needs (Debian packages, bpf-linker, the `debian` rustup
    /// toolchain for the eBPF build). Idempotent: a second run installs nothing and says so.
    Setup(setup::Options),
    /// Build the lab: two namespaces joined by a veth pair (safe to run twice).
    NetnsUp(lab::commands::Options),
    /// Remove the lab (safe to run twice).
    NetnsDown(lab::commands::Options),
    /// Show the lab: namespaces, links, addresses, attached XDP programs.
    NetnsStatus(lab::commands::Options),
    /// Run every test, privileged ones included, after setting up what is missing.
    Test(test::Options),
    /// Tick-to-trade benchmark in the lab: replay market data, trade on it over AF_XDP and/or
    /// kernel UDP, report latency percentiles, fills and parity. Results go to
    /// target/bench/<time>/ (report.md, report.json, .hgrm files, latency.svg).
    Bench(crate::lab::Options),
    /// The knob matrix: each design choice alone against a baseline, per path, and which
    /// moves p50 and which moves p99.9/p99.99. Results in target/matrix/<time>/.
    Matrix(matrix::Options),
    /// Zero-loss rate per path by bisection (RFC 2544 style), and latency at 10/50/90 % of
    /// it. Results in target/zero-loss/<time>/.
    ZeroLoss(zeroloss::Options),
    /// The engine-boundary study: in-process sweep vs the engine behind a Unix socket, TCP and
    /// a process per call (batched, chatty, stateful), each checked against in-process before
    /// it is timed; echo round trips; raw vs JSON. Results go to target/bench-boundary/<time>/
    /// (results.json, report.md, echo.svg).
    BenchBoundary(bench_boundary::Options),
    /// The hot path beyond the network: the design-choices study's system-level (wake-ups,
    /// page faults, huge pages) and code-level (dispatch, allocation, memory layout, false
    /// sharing, SIMD, queues, PGO) experiments, side by side with the study's figures. Results
    /// go to target/hotpath/<time>/ (report.md, report.json, .hgrm files, SVG plots).
    Hotpath(hotpath::Options),
    /// The order book on a raw ITCH 5.0 file (or .gz, or a market:SEED[:BARS] day generated
    /// first): msgs/s and ns per message (mean; each message timed alone, overall and per
    /// type), memory, what it refused, every symbol's final book; itch-book (PyPI, C++23 core)
    /// beside it on the same file, alternating, with the ratio and the two books' final best
    /// bids and offers checked against each other. Results in target/book/<time>/.
    Book(book::Options),
    /// Write the full-depth feed generator's day (market:SEED[:BARS]) as a raw ITCH 5.0 file,
    /// length-prefixed as NASDAQ's day files are; sends nothing.
    Market(market::Options),
    /// Is this machine set up for low latency? Each finding: what was found, why it matters
    /// on the hot path, what to set.
    Doctor(doctor::Options),
}

/// An error is a message for the user: printed with its causes, no backtrace.
fn main() -> std::process::ExitCode {
    paths::cli::run_main(run)
}

fn run() -> anyhow::Result<()> {
    let Cli { command } = Cli::parse();
    match command {
        Command::Setup(o) => setup::run(o),
        Command::NetnsUp(o) => lab::commands::up(o),
        Command::NetnsDown(o) => lab::commands::down(o),
        Command::NetnsStatus(o) => lab::commands::status(o),
        Command::Test(o) => test::run(o),
        Command::Bench(o) => bench::run(o),
        Command::BenchBoundary(o) => bench_boundary::run(o),
        Command::Hotpath(o) => hotpath::run(o),
        Command::Doctor(o) => doctor::run(o),
        Command::Book(o) => book::run(o),
        Command::Market(o) => market::run(o),
        Command::Matrix(o) => matrix::run(o),
        Command::ZeroLoss(o) => zeroloss::run(o),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_the_packages() {
        let e = Cli::try_parse_from(["cargo xtask", "--version"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::DisplayVersion);
        assert_eq!(
            e.to_string(),
            format!("cargo xtask {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}
