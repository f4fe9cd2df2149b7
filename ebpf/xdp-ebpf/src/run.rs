//! The lab's XDP program with its runs timed at their two ends only (`trader
//! --xdp-stages=run`): the same source (`program.rs`) as `main.rs`'s, with [`TIMED`] on and
//! [`STAGE_MARKS`] off. Each run reads the clock at its start and its end and adds the time to
//! the `STAGES` map by outcome (as its `End` stage): nothing between waits for a clock read,
//! so the run's loads overlap as they do untimed.
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

/// Timing on.
const TIMED: bool = true;
/// The run's two ends only.
const STAGE_MARKS: bool = false;

include!("program.rs");
