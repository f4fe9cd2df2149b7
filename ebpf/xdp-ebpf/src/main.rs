//! The lab's XDP program, untimed (`xdp-ebpf`): the object every measurement but
//! `--xdp-stages` loads. The program is the `xdp_ebpf` library's; this is its entry.
#![no_std]
#![no_main]

use aya_ebpf::{macros::xdp, programs::XdpContext};
// The library's dependencies, linked through it.
use {aya_log_ebpf as _, xdp_common as _};

#[xdp]
fn md_redirect(ctx: XdpContext) -> u32 {
    xdp_ebpf::md_redirect::<xdp_ebpf::Untimed>(ctx)
}
