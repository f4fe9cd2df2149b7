//! The trader as a library: its options (`Options`, with the checks that read the path table
//! and `to_args`, the command line it renders for xtask), and, with the default feature `io`,
//! the typed [`Plan`] they parse into once (`Options::plan`), the program (`run`: each path's setup in `program::io`) and the one trader loop with its
//! I/O over AF_XDP, the trigger and kernel UDP (`trading`). The `trader` binary
//! (`src/main.rs`) parses [`Options`] and calls `run`. Without `io` (xtask's view) it is the
//! options alone: nothing that needs the AF_XDP plumbing or the eBPF toolchain to build.
mod options;
#[cfg(feature = "io")]
mod plan;
#[cfg(feature = "io")]
mod program;
mod sources;
#[cfg(feature = "io")]
pub mod trading;

pub use options::{Options, Queues};
#[cfg(feature = "io")]
pub use plan::{BusyPoll, Feed, OrderPlan, Plan, Receive, Strategy, TriggerPlan, XdpPlan};
#[cfg(feature = "io")]
pub use program::run;
pub use sources::{FeedSource, Sender, Sources};

/// The most packets one turn of the loop takes (the AF_XDP RX batch's upper bound).
pub const MAX_BATCH: usize = 64;

/// How many empty turns a spinning trigger trader takes per read of the record of what fired
/// (`--fired-poll-every`): a turn with nothing is tens of ns, so a fire is seen within a few µs
/// (the next tick's arm is written after it), and the record's line is in this core for a
/// small share of the time rather than always.
pub const FIRED_POLL_EVERY: u32 = 32;
