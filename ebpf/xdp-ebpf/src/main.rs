//! The lab's XDP program.
//!
//! Frames of the market-data flow (Ethernet II, IPv4 without options or fragmentation, UDP to
//! the configured destination port) go to the AF_XDP socket bound to the frame's RX queue;
//! everything else (ARP above all, or the kernel never resolves the trader's address) is passed
//! to the kernel untouched. Each decision is counted in a per-CPU array.
//!
//! Logging (aya-log): off unless userspace sets the `XDP_LOG` global at load time, and then
//! only for rare events a user debugging a feed wants to see: a failed redirect, a frame
//! counted as malformed (its reason and the header fields at fault), a failed reflection.
//! Never per healthy packet. Each CPU writes at most `LOG_BURST` records a second; the rest
//! are counted, not written. With the global off the verifier prunes the logging code.
//!
//! The program's source is `program.rs`, built three times: this object; `xdp-ebpf-stages`
//! (`stages.rs`), which reads the clock at each mark of a run (`xdp_common::Mark`) and adds
//! the stages to the `STAGES` map by outcome (`trader --xdp-stages` loads it); and
//! `xdp-ebpf-run` (`run.rs`), which reads it at each run's two ends only (`trader
//! --xdp-stages=run`), so nothing inside the run waits for a clock read. A build-time
//! switch, not a load-time global: a global the verifier prunes still changes how the
//! compiler allocates registers around the calls it guards (the redirect program grew by 149
//! instructions with one); here the untimed object is the program as it was, instruction for
//! instruction.
#![no_std]
#![no_main]
// BPF's atomic add (the TCP trigger's claim): the BPF target has no `core::sync::atomic`.
#![feature(core_intrinsics)]
#![allow(
    internal_features,
    reason = "core::intrinsics::atomic_xadd, the one way to BPF's atomic add"
)]
#![expect(
    unsafe_code,
    reason = "an XDP program reads packet memory through raw pointers the verifier checks, and exports its entry point unmangled"
)]

/// No stage timing: the program as it runs in every measurement but `--xdp-stages`.
const TIMED: bool = false;
/// (No marks at all.)
const STAGE_MARKS: bool = false;

include!("program.rs");
