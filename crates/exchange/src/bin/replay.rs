//! The exchange side: replays market data into the lab at a set rate, takes the trader's
//! orders back, measures tick-to-trade, books fills, and checks parity with the backtest.
//!
//! The program is the library's `exchange::replay`; this parses the command line
//! and runs it.
use clap::Parser as _;
use exchange::replay;

fn main() -> std::process::ExitCode {
    paths::cli::run_main(|| replay::run(replay::Options::parse()))
}
