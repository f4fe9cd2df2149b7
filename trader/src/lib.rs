//! The trader as a library: the program (`Options`, `run`: its option checks read the path
//! table, each path's setup in `program::io`) and the one trader loop with its I/O over AF_XDP,
//! the trigger and kernel UDP (`trading`). The `trader` binary (in `userspace`) parses
//! [`Options`] and calls [`run`].
pub(crate) use afxdp::{cli, clock, frame, host, process, sockopt, xdp, xsk};
/// The tick-to-trade core, a crate of its own so the PGO experiment can build it alone.
pub use trader_core as t2t;
pub use trader_core::stats;

mod program;
pub mod trading;

pub use program::{Options, Queues, run};
