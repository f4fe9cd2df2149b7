//! Fault and garbage injection for the lab's reliability and trust tests, run in the exchange
//! namespace: crafted malformed frames (`inject frames`), a seeded lossy, duplicating,
//! reordering, delaying relay (`inject relay`), and a forger of the feed's sequence
//! (`inject lies`).
//!
//! The program is the `inject` crate's; this parses the command line and runs
//! it.
use clap::Parser as _;

fn main() -> std::process::ExitCode {
    paths::cli::run_main(|| inject::run(inject::Options::parse()))
}
