//! The lab's XDP program with a clock read at every mark of a run (`xdp-ebpf-stages`,
//! `trader --xdp-stages`): the clock reads are inside every figure it gives, so compare timed
//! runs with each other. The program is the `xdp_ebpf` library's; this is its entry.
#![no_std]
#![no_main]

use aya_ebpf::{macros::xdp, programs::XdpContext};
// The library's dependencies, linked through it.
use {aya_log_ebpf as _, xdp_common as _};

#[xdp]
fn md_redirect(ctx: XdpContext) -> u32 {
    xdp_ebpf::md_redirect::<xdp_ebpf::EachStage>(ctx)
}
