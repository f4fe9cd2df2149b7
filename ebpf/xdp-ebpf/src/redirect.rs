//! The redirect into the AF_XDP socket of the frame's RX queue, and the arrival stamp a
//! stamped redirect appends first.

use crate::{Timing, log::log_allowed, maps::XSKS, packet::write, timing::Stamps};
use aya_ebpf::{
    bindings::xdp_action::XDP_PASS,
    helpers::{bpf_ktime_get_ns, bpf_xdp_adjust_tail},
    programs::XdpContext,
};
use aya_log_ebpf::warn;
use xdp_common::{Counter, Mark};

#[inline(always)]
pub(crate) fn redirect<T: Timing>(ctx: &XdpContext, st: &mut Stamps<T>) -> (Counter, u32) {
    let queue = ctx.rx_queue_index();
    let done = XSKS.redirect(queue, 0);
    st.mark(Mark::Redirected);
    match done {
        Ok(action) => (Counter::Redirected, action),
        // No socket on this queue: let the kernel have it rather than lose it.
        Err(_) => {
            if log_allowed() {
                warn!(
                    ctx,
                    "redirect failed: no AF_XDP socket on RX queue {}; market-data frame passed to the kernel",
                    queue
                );
            }
            (Counter::RedirectFailed, XDP_PASS)
        }
    }
}

/// The largest frame the stamp is written into: the lab's MTU and then some. A bound the
/// verifier needs for the variable offset of the trailer.
pub(crate) const STAMP_MAX_FRAME: usize = 2048;

/// Appends the arrival stamp (`xdp_common::STAMP_MAGIC`, then `bpf_ktime_get_ns()`).
#[inline(always)]
pub(crate) fn stamp(ctx: &XdpContext) -> Result<(), ()> {
    // SAFETY: a helper with no arguments; it only reads the clock.
    let now = unsafe { bpf_ktime_get_ns() };
    // SAFETY: ctx.ctx is the live xdp_md of this invocation; growing the tail by the stamp's
    // length leaves every earlier byte in place, and all pointers are re-read after it.
    if unsafe { bpf_xdp_adjust_tail(ctx.ctx, xdp_common::STAMP_LEN as i32) } != 0 {
        return Err(());
    }
    let len = ctx.data_end() - ctx.data();
    if !(xdp_common::STAMP_LEN..=STAMP_MAX_FRAME).contains(&len) {
        return Err(());
    }
    let at = len - xdp_common::STAMP_LEN;
    // Through the stack, and masked: left alone, the compiler turns `data + (data_end - data -
    // 12)` into `data_end - 12`, arithmetic on the end pointer the verifier refuses; the mask
    // gives the verifier the offset's bound (the frame is shorter, checked above).
    // SAFETY: reads a live local.
    let at = unsafe { core::ptr::read_volatile(&at) } & (STAMP_MAX_FRAME - 1);
    write(ctx, at, xdp_common::STAMP_MAGIC)?;
    write(ctx, at + 4, now.to_le_bytes())
}
