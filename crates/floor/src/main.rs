//! The CPU floor: the inter-core round trip through one shared cache line, the lowest any
//! path's tick-to-trade can go on this machine's two cores.
//!
//! The program is the `floor` crate's; this parses the command line and runs it.
use clap::Parser as _;

fn main() -> std::process::ExitCode {
    paths::cli::run_main(|| floor::run(floor::Options::parse()))
}
