//! The replay: the exchange side of the lab as a program. Builds the feed and the backtest of
//! it, sends it at a set rate over kernel UDP or AF_XDP (line B too, for an A/B feed), serves
//! re-requests, takes the trader's orders back, and settles tick-to-trade, fills and parity
//! into a [`ReplayReport`]. The `replay` binary parses [`Options`] and calls [`run`].
//!
//! [`Options`] (with `to_args`, the command line xtask runs the replay from) build without
//! the crate's `io` feature; [`run`] needs it.
mod options;
#[cfg(feature = "io")]
mod run;

pub use options::{Options, Timing};
#[cfg(feature = "io")]
pub use run::run;
