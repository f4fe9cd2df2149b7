//! The exchange side: replays market data into the lab at a set rate, takes the trader's
//! orders back, measures tick-to-trade, books fills, and checks parity with the backtest.
//!
//! The program is the library's `exchange::replay`; this parses the command line
//! and runs it.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use book as _;
use clap::Parser as _;
use exchange::replay;
use {
    afxdp as _, anyhow as _, engine as _, flate2 as _, market as _, netns as _, nix as _,
    results as _, soup as _, trader_core as _, wire as _, xdp_common as _,
};

fn main() -> std::process::ExitCode {
    paths::cli::run_main(|| replay::run(replay::Options::parse()))
}
