//! The reflector (`Action::Reflect`, the lab's floor): the tick turned into its order in place
//! and sent back out (XDP_TX); the order's rewrite is the trigger's too.

use crate::{
    Timing,
    maps::{ORDER_DST_IP, ORDER_DST_MAC, ORDER_DST_PORT, ORDER_SRC_IP, ORDER_SRC_MAC},
    packet::{IP, UDP, read, read_field, write, write_field},
    read_global,
    timing::Stamps,
};
use aya_ebpf::{helpers::bpf_xdp_adjust_tail, programs::XdpContext};
use xdp_common::{
    Mark, checksum,
    layout::itch::{self, trade},
    layout::{UDP_PAYLOAD_OFFSET, at, ethernet, ipv4, moldudp64, order, udp},
};

/// Where the reflector's input sits in the frame: the MoldUDP64 header right after UDP, and
/// the ITCH trade in its first block.
pub(crate) const MOLD: usize = UDP_PAYLOAD_OFFSET;
pub(crate) const ITCH: usize = MOLD + moldudp64::FIRST_MESSAGE;
/// Where it writes the order: over the start of the MoldUDP64 payload.
pub(crate) const ORDER: usize = UDP_PAYLOAD_OFFSET;
/// The reflector's order buys one lot, as the trader's opening orders do.
pub(crate) const REFLECT_SHARES: u32 = xdp_common::LOT;

/// The order fields the reflector and the trigger write; the rest come from the tick.
pub(crate) struct OrderFields {
    pub(crate) side: u8,
    pub(crate) flags: [u8; 2],
    pub(crate) shares: u32,
    pub(crate) token: [u8; 8],
}

/// Turns a MoldUDP64 packet whose first message is an ITCH trade into an order for that tick
/// (type 'O', buy 100, token = tick_seq = the packet's sequence number, the trade's price and
/// stock), addressed to the configured order gateway, and trims the frame to it. UDP checksum 0 (none:
/// allowed for IPv4), IPv4 header checksum recomputed.
#[inline(always)]
pub(crate) fn reflect<T: Timing>(ctx: &XdpContext, st: &mut Stamps<T>) -> Result<(), ()> {
    let seq: [u8; 8] = read_field(ctx, at(MOLD, moldudp64::field::SEQUENCE))?;
    if read::<u8>(ctx, ITCH + trade::field::KIND)? != trade::KIND {
        return Err(());
    }
    let written = write_order(
        ctx,
        &OrderFields {
            side: itch::SIDE_BUY,
            flags: [0; 2],
            shares: REFLECT_SHARES,
            token: seq,
        },
    );
    st.mark(Mark::Ordered);
    written
}

/// Rewrites the frame, whose first message is an ITCH trade, into the order for that tick
/// (`fields`, and the tick's sequence number, price and stock), addressed to the configured
/// order gateway (the `ORDER_DST_*` globals), never to the tick's sender, and trims it to the
/// order. UDP checksum 0 (none: allowed for IPv4), IPv4 header checksum recomputed.
#[inline(always)]
pub(crate) fn write_order(ctx: &XdpContext, fields: &OrderFields) -> Result<(), ()> {
    let dst_port = read_global(&ORDER_DST_PORT);
    if dst_port == [0, 0] {
        // No gateway configured: no order leaves.
        return Err(());
    }
    let frame_len = frame_len(ctx)?;
    let seq: [u8; 8] = read_field(ctx, at(MOLD, moldudp64::field::SEQUENCE))?;
    let stock: [u8; 8] = read_field(ctx, at(ITCH, trade::field::STOCK))?;
    let price: [u8; 4] = read_field(ctx, at(ITCH, trade::field::PRICE))?;
    write_order_for(ctx, fields, (seq, stock, price), frame_len)
}

/// The frame's length from its IPv4 total length (the verifier forbids arithmetic on the
/// packet end pointer), checked against the real frame: the header's claim must not exceed
/// it, or the trim after an order is written would cut into the order.
#[inline(always)]
pub(crate) fn frame_len(ctx: &XdpContext) -> Result<usize, ()> {
    let frame_len = IP
        + usize::from(u16::from_be_bytes(read_field(
            ctx,
            at(IP, ipv4::TOTAL_LEN),
        )?));
    // Masked so the verifier sees a bounded offset.
    if ctx.data() + (frame_len & 0x3fff) > ctx.data_end() {
        return Err(());
    }
    Ok(frame_len)
}

/// [`write_order`] for a tick given apart from the frame (`seq`, `stock`, `price`, as on the
/// wire), over a frame of `frame_len` bytes (checked against the frame by the caller).
#[inline(always)]
pub(crate) fn write_order_for(
    ctx: &XdpContext,
    fields: &OrderFields,
    (seq, stock, price): ([u8; 8], [u8; 8], [u8; 4]),
    frame_len: usize,
) -> Result<(), ()> {
    let dst_port = read_global(&ORDER_DST_PORT);
    if dst_port == [0, 0] {
        return Err(());
    }
    // The gateway's headers, as userspace resolved them at start; nothing taken from the
    // tick's sender.
    write_field(ctx, ethernet::DST, read_global(&ORDER_DST_MAC))?;
    write_field(ctx, ethernet::SRC, read_global(&ORDER_SRC_MAC))?;
    write_field(ctx, at(IP, ipv4::SRC), read_global(&ORDER_SRC_IP))?;
    write_field(ctx, at(IP, ipv4::DST), read_global(&ORDER_DST_IP))?;
    // From the feed port, as the trader's orders go.
    let feed_port: [u8; 2] = read_field(ctx, at(UDP, udp::DST_PORT))?;
    write_field(ctx, at(UDP, udp::SRC_PORT), feed_port)?;
    write_field(ctx, at(UDP, udp::DST_PORT), dst_port)?;
    let udp_len = (udp::HEADER_LEN + order::LEN) as u16;
    write_field(ctx, at(UDP, udp::LENGTH), udp_len.to_be_bytes())?;
    write_field(ctx, at(UDP, udp::CHECKSUM), [0u8; 2])?;
    // The order, over the start of the MoldUDP64 payload (the frame is longer; trimmed below).
    write(ctx, ORDER + order::field::KIND, order::KIND)?;
    write(ctx, ORDER + order::field::SIDE, fields.side)?;
    write_field(ctx, at(ORDER, order::field::FLAGS), fields.flags)?;
    write_field(
        ctx,
        at(ORDER, order::field::SHARES),
        fields.shares.to_be_bytes(),
    )?;
    write_field(ctx, at(ORDER, order::field::TOKEN), fields.token)?;
    write_field(ctx, at(ORDER, order::field::TICK_SEQ), seq)?;
    write_field(ctx, at(ORDER, order::field::PRICE), price)?;
    write_field(ctx, at(ORDER, order::field::STOCK), stock)?;
    let ip_len = (ipv4::HEADER_LEN as u16 + udp_len).to_be_bytes();
    write_field(ctx, at(IP, ipv4::TOTAL_LEN), ip_len)?;
    write_field(ctx, at(IP, ipv4::CHECKSUM), [0u8; 2])?;
    // One read of the whole header (a constant-offset bounds check the verifier follows),
    // then the sum in registers.
    let header = read::<[u8; ipv4::HEADER_LEN]>(ctx, IP)?;
    let sum = checksum::ipv4_header(&header);
    write_field(ctx, at(IP, ipv4::CHECKSUM), sum.to_be_bytes())?;
    let delta = (ORDER + order::LEN) as i32 - frame_len as i32;
    // SAFETY: ctx.ctx is the live xdp_md of this invocation; shrinking by `delta` keeps the
    // frame at ORDER + order::LEN bytes, all of which were written above.
    if delta < 0 && unsafe { bpf_xdp_adjust_tail(ctx.ctx, delta) } != 0 {
        return Err(());
    }
    Ok(())
}
