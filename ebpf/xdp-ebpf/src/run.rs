//! The lab's XDP program with each run timed at its two ends only (`xdp-ebpf-run`,
//! `trader --xdp-stages=run`): nothing between them waits for a clock read, so the run's loads
//! overlap as they do untimed. The program is the `xdp_ebpf` library's; this is its entry.
#![no_std]
#![no_main]

use aya_ebpf::{macros::xdp, programs::XdpContext};
// The library's dependencies, linked through it.
use {aya_log_ebpf as _, xdp_common as _};

#[xdp]
fn md_redirect(ctx: XdpContext) -> u32 {
    xdp_ebpf::md_redirect::<xdp_ebpf::WholeRun>(ctx)
}
