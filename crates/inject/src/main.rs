//! Fault and garbage injection for the lab's reliability and trust tests, run in the exchange
//! namespace: crafted malformed frames (`inject frames`), a seeded lossy, duplicating,
//! reordering, delaying relay (`inject relay`), and a forger of the feed's sequence
//! (`inject lies`).
//!
//! The program is the `inject` crate's; this parses the command line and runs
//! it.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use clap::Parser as _;
#[cfg(test)]
use etherparse as _;
use {
    afxdp as _, anyhow as _, libc as _, netns as _, serde as _, serde_json as _, trader as _,
    trader_core as _, wire as _, xdp_common as _,
};

fn main() -> std::process::ExitCode {
    paths::cli::run_main(|| inject::run(inject::Options::parse()))
}
