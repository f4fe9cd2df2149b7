//! The HMA/HMA3 stop-and-reverse backtest engine of `shared/ENGINE-SPEC.md`.
//!
//! Sans-IO in quiche's sense: nothing here opens a socket, reads a clock, logs or allocates per
//! tick. Data comes in as slices, results go out as values. The same code serves every caller:
//!
//! - [`reference`](mod@reference): the kernel written for clarity, exactly as the spec defines it; the truth.
//! - [`sweep`]: the fast parameter sweep, bit-identical to the reference on every combo.
//! - [`Strategy`]: the streaming strategy for the live loop, one tick at a time, bit-identical
//!   to the batch kernel fed the same series.
//! - [`trigger`]: for the next tick, the exact set of prices at which [`Strategy::on_tick`]
//!   would send an order, and the order: what a pre-armed trigger in the driver fires on.
//! - [`Ledger`]: the one place where fills become trades and PnL. The reference, the fast sweep,
//!   the streaming strategy and the exchange side of the lab all book through it, so their PnL
//!   agrees by construction (the same floating-point operations in the same order).
//! - [`data`]: the spec's GBM series, reproduced bit for bit from NumPy's generator, and
//!   loaders for a user's own series.
//!
//! No multiply-add is ever fused: Rust does not contract `a * b + c` into an FMA unless
//! `mul_add` is called, and nothing in this crate calls it.
#![forbid(unsafe_code)]

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
#[cfg(test)]
use criterion as _;
use {anyhow as _, clap as _, serde_json as _, sha2 as _};

pub mod data;
mod error;
mod ledger;
mod params;
pub mod reference;
mod signal;
mod strategy;
pub mod sweep;
pub mod trigger;
mod wma;

pub use error::Error;
pub use ledger::{ComboResult, FEE, Ledger, Side};
pub use params::{GRID_DEFAULT_LEN, Params, grid_default, linspace, round_half_even};
pub use signal::Signal;
pub use strategy::Strategy;
