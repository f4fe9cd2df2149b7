//! The CPU floor: the inter-core round trip through one shared cache line, the lowest any
//! path's tick-to-trade can go on this machine's two cores.
//!
//! The program is the `floor` crate's; this parses the command line and runs it.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use clap::Parser as _;
use {afxdp as _, anyhow as _, results as _, trader_core as _};

fn main() -> std::process::ExitCode {
    paths::cli::run_main(|| floor::run(floor::Options::parse()))
}
