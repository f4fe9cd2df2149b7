//! The hot path beyond the network: the design-choices study's other half, measured here.
//!
//! Every experiment is a function from a [`Ctx`] to a [`report::Outcome`]: its latency
//! distributions (percentiles from a histogram, never only means), its comparisons with the
//! study's figures, curves worth a plot, findings, and which choice the trader makes today.
//! [`suite::SUITE`] lists them; the `hotpath` binary runs a selection and writes the report;
//! `cargo xtask hotpath` builds and orchestrates it. The machine's readiness (`doctor`) and
//! the runtime isolation of the measured CPU (`isolate`) are the `tuning` crate's.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
#[cfg(test)]
use {netns as _, nix as _, tempfile as _};
use {paths as _, signal_hook as _};

#[cfg(feature = "experiments")]
pub mod chase;
#[cfg(feature = "experiments")]
pub mod code;
pub mod counts;
pub mod harness;
#[cfg(feature = "experiments")]
pub mod memory;
pub mod report;
#[cfg(feature = "experiments")]
pub mod suite;
#[cfg(feature = "experiments")]
pub mod system;
pub mod verdict;

use harness::Tsc;
use serde::Serialize;

/// How long the suite runs: `small` keeps the experiments working (CI, seconds each);
/// `default` is the measured run (the whole suite in a few minutes on 2 cores).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Size {
    Small,
    Default,
}

/// What every experiment is given.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub size: Size,
    pub tsc: Tsc,
    /// The CPU measured threads are pinned to.
    pub cpu: usize,
    /// The other CPU: the second thread of two-thread experiments, and the load generator.
    pub other_cpu: usize,
    /// Running as root (SCHED_FIFO, HugeTLB reservations, mlock beyond the limit).
    pub root: bool,
}

impl Ctx {
    /// `small` at size small, `default` otherwise.
    pub fn pick<T>(&self, small: T, default: T) -> T {
        match self.size {
            Size::Small => small,
            Size::Default => default,
        }
    }

    /// Pins the calling thread to the measured CPU.
    pub fn pin(&self) -> anyhow::Result<()> {
        affinity::pin_current_thread(self.cpu)
            .map_err(|e| anyhow::anyhow!("pinning to CPU {}: {e}", self.cpu))
    }

    /// Pins the calling thread to the other CPU.
    pub fn pin_other(&self) -> anyhow::Result<()> {
        affinity::pin_current_thread(self.other_cpu)
            .map_err(|e| anyhow::anyhow!("pinning to CPU {}: {e}", self.other_cpu))
    }

    /// A progress line on stderr (the report goes to files).
    pub fn progress(&self, msg: &str) {
        eprintln!("    {msg}");
    }
}

/// Whether this process runs as root (effective uid 0), from `/proc/self/status`: SCHED_FIFO,
/// HugeTLB reservations, idle settings and isolation need it.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}
