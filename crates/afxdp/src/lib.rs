//! The AF_XDP plumbing both ends of the lab share: the XDP program's loader and its maps
//! (`xdp`: the eBPF object is built by `build.rs` and embedded), the AF_XDP socket and its UMEM
//! (`xsk`), frame building and parsing (`frame`), socket options and `recvmmsg` (`sockopt`),
//! the host's neighbour table, MACs and accounting (`host`), the clock (`clock`), and the
//! programs' process plumbing: pinning, scheduling, signals (`process`), and `cli`
//! (each binary's `main` wrapper: `paths::cli`, re-exported).
//!
//! `unsafe` is denied everywhere but in the four modules that talk to the kernel through what
//! has no safe wrapper: the AF_XDP rings (`xsk`), the trigger's memory-mapped arm
//! (`xdp::arm_mem`), socket options and `recvmmsg` (`sockopt`) and `sched_setscheduler`
//! (`process`).
pub mod clock;
pub mod frame;
pub mod host;
#[expect(unsafe_code, reason = "sched_setscheduler has no safe wrapper in nix")]
pub mod process;
#[expect(
    unsafe_code,
    reason = "busy-poll socket options, SO_RCVBUFFORCE, SO_ATTACH_FILTER, SO_MEMINFO and recvmmsg have no safe wrapper"
)]
pub mod sockopt;
pub mod xdp;
#[expect(
    unsafe_code,
    reason = "the AF_XDP rings and UMEM: xsk-rs's API is unsafe"
)]
pub mod xsk;
