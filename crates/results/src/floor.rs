//! What the `floor` binary (the CPU floor) reports.
use serde::{Deserialize, Serialize};

use crate::{Machine, Summary};

/// Two threads on two CPUs ping-ponging one cache line: the machine's own floor and jitter,
/// with no network, kernel or trader in the way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FloorReport {
    /// The ping thread's CPU and the pong thread's.
    pub cpus: [usize; 2],
    /// Round trips measured (after the warm-up).
    pub iterations: u64,
    /// How long it ran.
    pub seconds: f64,
    /// One round trip, including two CLOCK_MONOTONIC reads (~20 ns each).
    pub round_trip: Summary,
    /// Where it ran.
    pub machine: Machine,
}
