//! The lab's programs and the tools beside them: the `trader`, `replay`, `inject` and `floor`
//! binaries (each parses its options and calls its library: the `trader` crate, the `exchange`
//! crate's `replay`, the `inject` crate), and the privileged lab tests (`tests/`). The libraries are re-exported under their old paths (`userspace::xsk`,
//! `userspace::trading`, `userspace::exchange`, ...), so the tests and the fuzz targets name
//! them one way.
//!
//! No `unsafe` here: it is in `afxdp` (the socket, the UMEM, the program) and `inject` (its
//! AF_PACKET socket).
#![forbid(unsafe_code)]
pub use afxdp::{cli, clock, frame, host, process, sockopt, xdp, xsk};
pub use exchange::{self, exchange_io, feed};
pub use inject;
pub use trader::{self, trading};
/// The tick-to-trade core, a crate of its own so the PGO experiment can build it alone.
pub use trader_core as t2t;
pub use trader_core::stats;
