//! The lab's XDP program with stage timing compiled in (`trader --xdp-stages`): the same
//! source (`program.rs`) as `main.rs`'s, with [`TIMED`] on. Each run reads the clock at its
//! marks (`xdp_common::Mark`) and adds the stages to the `STAGES` map by outcome; the clock
//! reads are inside every figure it gives, so compare timed runs with each other.
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

/// Stage timing on.
const TIMED: bool = true;
/// A mark at every stage.
const STAGE_MARKS: bool = true;

include!("program.rs");
