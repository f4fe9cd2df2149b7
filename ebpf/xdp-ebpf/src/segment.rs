//! The TCP trigger: the trader's armed SoupBinTCP segment sent in the tick's frame, under the
//! claim rule it shares with the userspace TCP (`xdp_common::segment`).

use crate::{
    maps::SEGMENT,
    packet::{IP, read_field, write},
};
use aya_ebpf::{
    helpers::{bpf_xdp_adjust_tail, bpf_xdp_store_bytes},
    programs::XdpContext,
};
use xdp_common::{
    layout::{at, ipv4},
    segment::{self, SegmentSlot},
};

/// Why the armed segment did not leave.
pub(crate) enum Unsent {
    /// Not this arm's, or withdrawn by the trader's stack: nothing written, the tick intact.
    Withdrawn,
    /// Claimed, but the frame could not be rewritten: it may be half written.
    Failed,
}

/// The TCP trigger: turns the frame into the armed segment of arm generation `generation`,
/// at the tick's `price`, if the trader's stack has not withdrawn it: claimed first, then
/// the withdrawal read (`xdp_common::segment`'s rule), then the frame copied in whole, the
/// price written and the TCP checksum finished from the trader's partial sum; what was sent
/// recorded before the claim is settled.
#[inline(always)]
pub(crate) fn write_segment(ctx: &XdpContext, price: u32, generation: u32) -> Result<(), Unsent> {
    let Some(slot) = SEGMENT.get_ptr_mut(0) else {
        return Err(Unsent::Withdrawn);
    };
    // SAFETY: the map's one entry, valid for the program's run; the trader writes the
    // frame only while no claim of it is unsettled, and the words below by the slot's rule.
    unsafe {
        if core::ptr::read_volatile(core::ptr::addr_of!((*slot).generation)) != generation {
            return Err(Unsent::Withdrawn);
        }
        add_one(core::ptr::addr_of_mut!((*slot).claims));
        // Withdrawn, or (read again after the claim) no longer this arm's: the trader may have
        // withdrawn it and armed the next segment at the same sequence number between the
        // first read and the claim, and `withdrawn` names only the last withdrawal.
        if core::ptr::read_volatile(core::ptr::addr_of!((*slot).withdrawn)) == generation
            || core::ptr::read_volatile(core::ptr::addr_of!((*slot).generation)) != generation
        {
            add_one(core::ptr::addr_of_mut!((*slot).resolved));
            return Err(Unsent::Withdrawn);
        }
    }
    let sent = copy_segment(ctx, slot, price);
    // SAFETY: as above.
    unsafe {
        if sent.is_ok() {
            core::ptr::write_volatile(core::ptr::addr_of_mut!((*slot).sent_price), price);
            core::ptr::write_volatile(core::ptr::addr_of_mut!((*slot).sent_generation), generation);
        }
        add_one(core::ptr::addr_of_mut!((*slot).resolved));
    }
    sent.map_err(|()| Unsent::Failed)
}

/// The frame cut to the segment's length, the segment copied over it, the price and the TCP
/// checksum written.
#[inline(always)]
pub(crate) fn copy_segment(ctx: &XdpContext, slot: *mut SegmentSlot, price: u32) -> Result<(), ()> {
    // The frame's length from its IPv4 total length (as `write_order`), checked against the
    // real frame.
    let frame_len = (IP
        + usize::from(u16::from_be_bytes(read_field(
            ctx,
            at(IP, ipv4::TOTAL_LEN),
        )?)))
        & 0x3fff;
    if ctx.data() + frame_len > ctx.data_end() {
        return Err(());
    }
    // (Ethernet padding past the IPv4 datagram, if a frame had any, stays past the segment.)
    let delta = segment::FRAME_LEN as i32 - frame_len as i32;
    // SAFETY: ctx.ctx is the live xdp_md of this run; the frame becomes FRAME_LEN bytes long,
    // every one of which is written just below.
    if delta != 0 && unsafe { bpf_xdp_adjust_tail(ctx.ctx, delta) } != 0 {
        return Err(());
    }
    // SAFETY: the helper copies FRAME_LEN bytes of the map value (inside it) into the frame,
    // which is that long now (it checks the range itself).
    let copied = unsafe {
        bpf_xdp_store_bytes(
            ctx.ctx,
            0,
            core::ptr::addr_of_mut!((*slot).frame).cast(),
            segment::FRAME_LEN as u32,
        )
    };
    if copied != 0 {
        return Err(());
    }
    // SAFETY: a plain read of the trader's word, stable while the claim is unsettled.
    let partial = unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*slot).partial)) };
    write(ctx, segment::PRICE_AT, price.to_be_bytes())?;
    write(
        ctx,
        segment::CHECKSUM_AT,
        segment::tcp_checksum(partial, price).to_be_bytes(),
    )
}

/// Adds one to the word at `p` atomically: BPF's atomic add (`lock add` on x86), the program's
/// full barrier in the segment slot's rule. Its result unused, so LLVM emits the BPF v1 atomic
/// add (`lock *(u64 *)(r + off) += r`), which the default CPU target has: no BPF v3 needed.
#[inline(always)]
pub(crate) unsafe fn add_one(p: *mut u64) {
    // SAFETY: the caller's `p` is an aligned word of a map value.
    unsafe {
        core::intrinsics::atomic_xadd::<u64, u64, { core::intrinsics::AtomicOrdering::SeqCst }>(
            p, 1,
        );
    }
}
