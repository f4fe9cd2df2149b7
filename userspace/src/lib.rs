//! Userspace of the lab: the XDP loader, the AF_XDP socket, frame building and parsing, the
//! tick-to-trade core both I/O paths share, the replay tool's feeds, and the measurement
//! plumbing. The binaries `trader` and `replay` are thin drivers over these modules.
//!
//! `unsafe` is denied everywhere but in the three modules that talk to the kernel through
//! what has no safe wrapper: the AF_XDP rings (`xsk`), socket options and `recvmmsg`
//! (`sockopt`), and `sched_setscheduler` (`process`).
pub mod cli;
pub mod clock;
pub mod exchange;
pub mod exchange_io;
pub mod feed;
pub mod frame;
pub mod host;
#[expect(unsafe_code, reason = "sched_setscheduler has no safe wrapper in nix")]
pub mod process;
#[expect(
    unsafe_code,
    reason = "busy-poll socket options, SO_RCVBUFFORCE and recvmmsg have no safe wrapper"
)]
pub mod sockopt;
/// The tick-to-trade core, a crate of its own so the PGO experiment can build it alone.
pub use trader_core as t2t;
pub use trader_core::stats;
pub mod trader;
pub mod trading;
pub mod xdp;
#[expect(
    unsafe_code,
    reason = "the AF_XDP rings and UMEM: xsk-rs's API is unsafe"
)]
pub mod xsk;
