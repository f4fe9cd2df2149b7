//! Userspace of the lab: the XDP loader and the AF_XDP socket (`xdp`, `xsk`), frame building
//! and parsing (`frame`), the trader's loop and its I/O paths (`trading`), the programs
//! themselves as libraries: the trader (`trader`), the exchange side and its replay
//! (`exchange`), the fault and lie injector (`inject`); and the measurement plumbing. The
//! binaries `trader`, `replay` and `inject` only parse their options and call these.
//!
//! `unsafe` is denied everywhere but in the five modules that talk to the kernel through
//! what has no safe wrapper: the AF_XDP rings (`xsk`), the trigger's memory-mapped arm
//! (`xdp::arm_mem`), socket options and `recvmmsg` (`sockopt`), `sched_setscheduler`
//! (`process`) and the injector's AF_PACKET socket (`inject::raw`).
pub mod cli;
pub mod clock;
pub mod exchange;
pub mod exchange_io;
pub mod feed;
pub mod frame;
pub mod host;
pub mod inject;
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
