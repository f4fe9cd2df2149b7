//! The trader: market data in, orders out, over AF_XDP (`--path xdp`) or a kernel UDP socket
//! (`--path udp`). Same decode, same engine, same encode, same loop on both
//! ([`trader::trading::run`]); only the I/O differs. `--path trigger` is the AF_XDP path with
//! the decision in the driver: the trader arms the XDP program with the next tick's order and
//! the program fires it. `--path reflect` runs no trader at all: the XDP program turns each
//! tick into an order to the gateway itself (the lab's floor).
//!
//! The program is the `trader` crate's library; this parses the command line and runs it.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use clap::Parser as _;
use {
    affinity as _, afxdp as _, anyhow as _, engine as _, env_logger as _, libc as _, netns as _,
    nix as _, results as _, smoltcp as _, soup as _, trader_core as _, wire as _, xdp_common as _,
};

fn main() -> std::process::ExitCode {
    paths::cli::run_main(|| trader::run(trader::Options::parse()))
}
