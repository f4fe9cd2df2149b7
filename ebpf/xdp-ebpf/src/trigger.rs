//! The trigger (`Action::Trigger`): the armed order fired in the driver on the first arrival of
//! the armed tick, once every check the trader's own socket path makes has passed.

use crate::{
    Timing,
    classify::source_pinned,
    maps::{ARM, TRIGGER_DST, TRIGGER_NEXT, TRIGGER_TCP},
    packet::{IP, UDP, read, read_field},
    read_global,
    reflect::{ITCH, MOLD, OrderFields, write_order},
    segment::{Unsent, write_segment},
    timing::Stamps,
};
use aya_ebpf::{helpers::bpf_csum_diff, programs::XdpContext};
use xdp_common::{
    Arm, ArmSlot, Fired, Mark, checksum,
    layout::itch::trade,
    layout::{UDP_PAYLOAD_OFFSET, at, ethernet, ipv4, moldudp64, udp},
};

/// How far past the arm's number a packet can move `TRIGGER_NEXT`: enough to mark the arm's
/// number seen (so no copy fires it) while the trader catches up, and no further, so a
/// packet numbered far ahead (a forged jump with the feed's source spoofed, which the trader
/// refuses) costs the trigger at most the ticks up to here, never the rest of the run. Arms
/// are keyed by sequence number, so a real jump still fires on its first arrival.
pub(crate) const TRIGGER_NEAR: u64 = 64;

/// The UDP length of the one packet shape that fires: a MoldUDP64 packet of one ITCH trade.
pub(crate) const ONE_TRADE_UDP_LEN: usize = udp::HEADER_LEN + moldudp64::FIRST_MESSAGE + trade::LEN;

/// What the trigger did with a market-data frame.
pub(crate) enum Shot {
    /// The armed tick at a price in the set: the frame is the armed order now.
    Fired(Fired),
    /// Not the armed tick, or nothing armed.
    Miss,
    /// The armed tick, its price outside the set.
    NotInSet,
    /// The arm was being written when the packet came (its generation odd or changing): the
    /// packet goes to the trader.
    Busy,
    /// TCP trigger: no segment for this arm, or the trader's stack withdrew it: the packet
    /// goes to the trader.
    NoSegment,
    /// Armed and matched, but the frame could not be rewritten (the arm stays; the mark is past
    /// its number, so no copy fires it): dropped and counted.
    Failed,
}

/// The trigger: fires when the packet is the first arrival of the armed tick, on RX queue 0
/// (the one the trigger trader serves), sound (addressed to the trader, checksums right, one
/// ITCH trade of the armed stock in the armed session) and at a price in the armed set; the arm
/// is consumed first.
#[inline(always)]
pub(crate) fn trigger<T: Timing>(ctx: &XdpContext, st: &mut Stamps<T>) -> Shot {
    if ctx.rx_queue_index() != 0 {
        return Shot::Miss;
    }
    // One at a time: the verifier refuses the compiler's combined null check of two pointers.
    let Some(arm) = ARM.get_ptr_mut(0) else {
        return Shot::Miss;
    };
    let Some(next) = TRIGGER_NEXT.get_ptr_mut(0) else {
        return Shot::Miss;
    };
    // The sequence lock's read side: the generation, the arm, the generation again, in this
    // order (volatile reads are not reordered, and x86 does not reorder loads); the arm is
    // whole only if both are the same even number.
    // SAFETY: the map returned a valid pointer to its one entry; userspace rewrites it in
    // place between ticks (the sequence key keeps a late arm from firing a later tick).
    let (g1, a, g2) = unsafe {
        let g1 = core::ptr::read_volatile(core::ptr::addr_of!((*arm).arm.generation));
        let a = read_arm(core::ptr::addr_of!((*arm).arm));
        let g2 = core::ptr::read_volatile(core::ptr::addr_of!((*arm).arm.generation));
        (g1, a, g2)
    };
    let Ok(session) = read_field::<10>(ctx, at(MOLD, moldudp64::field::SESSION)) else {
        return Shot::Miss;
    };
    let Ok(seq) = read_field::<8>(ctx, at(MOLD, moldudp64::field::SEQUENCE)) else {
        return Shot::Miss;
    };
    let Ok(count) = read_field::<2>(ctx, at(MOLD, moldudp64::field::COUNT)) else {
        return Shot::Miss;
    };
    // The session is the same in every arm of a run (the trader's disarms carry it too, so
    // the numbers are marked while nothing is armed), and a half-written arm still has it.
    if session != a.session {
        return Shot::Miss;
    }
    let seq = u64::from_be_bytes(seq);
    let count = u16::from_be_bytes(count);
    st.mark(Mark::ArmRead);
    // Only a packet the trader would take moves the mark or fires: from the feed's pinned
    // source (classify dropped every other; until one is pinned, nothing moves), carrying
    // messages (a heartbeat or an end of session never moves the feed's numbers), its headers
    // addressed to the trader with a right IPv4 checksum, and one message framed to the
    // datagram's length.
    if !source_pinned()
        || count == 0
        || count == moldudp64::END_OF_SESSION
        || !headers_intact(ctx)
        || !one_block_fits(ctx, count)
    {
        return Shot::Miss;
    }
    st.mark(Mark::Intact);
    // SAFETY: the map's one entry, written only by this program (one RX queue, one CPU at a
    // time in native XDP).
    let seen = unsafe { core::ptr::read_volatile(next) };
    let whole = g1 & 1 == 0 && g1 == g2;
    if a.armed != 0 && whole && seq == a.seq && seq >= seen && !udp_checksum_ok(ctx) {
        // A corrupt UDP checksum: the trader drops it too, so it neither fires nor counts as
        // the tick's arrival (the real tick may still fire).
        return Shot::Miss;
    }
    st.mark(Mark::Checksummed);
    // The numbers this packet covers, whether it fires or not (even while the arm is written).
    // Never more than TRIGGER_NEAR past the arm, and that far only if its UDP checksum is
    // right too. (Nearer, a corrupted packet costs at most that arm's fire, never a wrong
    // one: its tick goes to the trader.)
    let end = seq.saturating_add(u64::from(count));
    if end > seen && (end <= a.seq.saturating_add(TRIGGER_NEAR) || udp_checksum_ok(ctx)) {
        let cap = a.seq.saturating_add(TRIGGER_NEAR).max(seen);
        // SAFETY: as above.
        unsafe { core::ptr::write_volatile(next, end.min(cap)) };
    }
    st.mark(Mark::Checked);
    if a.armed == 0 || seq != a.seq {
        return Shot::Miss;
    }
    if !whole {
        return Shot::Busy;
    }
    if seq < seen || !one_trade_of(ctx, &a) {
        // A copy of a number already seen, or not the one shape that fires.
        return Shot::Miss;
    }
    let Ok(price) = read_field::<4>(ctx, at(ITCH, trade::field::PRICE)) else {
        return Shot::Miss;
    };
    let price = u32::from_be_bytes(price);
    if !a.contains(price) {
        return Shot::NotInSet;
    }
    st.mark(Mark::Matched);
    let fields = OrderFields {
        side: a.side,
        flags: a.flags,
        shares: a.shares,
        token: a.token.to_be_bytes(),
    };
    let written = if read_global(&TRIGGER_TCP) != 0 {
        match write_segment(ctx, price, g1) {
            Ok(()) => Ok(()),
            Err(Unsent::Withdrawn) => return Shot::NoSegment,
            Err(Unsent::Failed) => Err(()),
        }
    } else {
        write_order(ctx, &fields)
    };
    st.mark(Mark::Ordered);
    if written.is_err() {
        // Not consumed: nothing was sent. (A copy can't fire it: the mark is past its number.)
        return Shot::Failed;
    }
    // Consumed once its order is written; a second copy of the tick can't fire again anyway
    // (the mark moved past its number above). Only the arm this run read: if the trader wrote
    // another since (the generation moved), that one stays. (Between this read and the store
    // the window is a few instructions; losing it clears a newer arm, so that tick goes to the
    // trader: a fire missed, never a wrong one.)
    // The record of what fired goes into the slot's second line first (the price, then the
    // generation that names the arm: the order the reader reads them back in reverse), so a
    // reader that sees the arm consumed also sees its record: across the two lines, by x86's
    // ordering of stores (the trigger is built for it; the trader reads the record alone).
    // SAFETY: the map's one entry, valid for this run.
    unsafe { record_fire(arm, price, None, g1) };
    Shot::Fired(Fired::of(&a, price))
}

/// Records a fire of the arm read under generation `g1` at `price` (on a full-depth feed, on
/// the message numbered `seq`), then consumes that arm if it is still the one written: the
/// record's fields first, the generation that names the arm last (the reader reads them back
/// in reverse).
///
/// # Safety
/// `arm` is the [`ARM`] map's entry, valid for this run.
#[inline(always)]
pub(crate) unsafe fn record_fire(arm: *mut ArmSlot, price: u32, seq: Option<u64>, g1: u32) {
    use core::ptr::{addr_of, addr_of_mut, read_volatile, write_volatile};
    // SAFETY: the caller's `arm`; aligned stores of the fields only the program writes, then
    // one byte after one aligned read.
    unsafe {
        write_volatile(addr_of_mut!((*arm).fired_price), price);
        if let Some(seq) = seq {
            write_volatile(addr_of_mut!((*arm).fired_seq), seq);
        }
        write_volatile(addr_of_mut!((*arm).fired_generation), g1);
        if read_volatile(addr_of!((*arm).arm.generation)) == g1 {
            write_volatile(addr_of_mut!((*arm).arm.armed), 0);
        }
    }
}

/// The arm's fields, each read once (volatile: between the sequence lock's two reads of the
/// generation), the byte arrays as whole words. A volatile read of the whole struct became a
/// load and a stack spill per byte of its arrays (about 50 instructions).
///
/// # Safety
/// `p` points to the [`ARM`] map's arm, which is 8-byte aligned (`ArmSlot`'s alignment, the
/// map value's start), its `stock` and `session` at 8-byte boundaries (`Arm::STOCK_AT`).
#[inline(always)]
pub(crate) unsafe fn read_arm(p: *const Arm) -> Arm {
    use core::ptr::{addr_of, read_volatile};
    // SAFETY: the caller's `p`; every read is of an aligned field of the arm.
    unsafe {
        let at = p.cast::<u8>();
        let stock = read_volatile(at.add(Arm::STOCK_AT).cast::<u64>()).to_ne_bytes();
        let head = read_volatile(at.add(Arm::SESSION_AT).cast::<u64>()).to_ne_bytes();
        let tail = read_volatile(at.add(Arm::SESSION_AT + 8).cast::<u16>()).to_ne_bytes();
        let session = [
            head[0], head[1], head[2], head[3], head[4], head[5], head[6], head[7], tail[0],
            tail[1],
        ];
        Arm {
            seq: read_volatile(addr_of!((*p).seq)),
            token: read_volatile(addr_of!((*p).token)),
            threshold: read_volatile(addr_of!((*p).threshold)),
            shares: read_volatile(addr_of!((*p).shares)),
            stock,
            session,
            armed: read_volatile(addr_of!((*p).armed)),
            direction: read_volatile(addr_of!((*p).direction)),
            side: read_volatile(addr_of!((*p).side)),
            flags: read_volatile(addr_of!((*p).flags)),
            pad: [0; 5],
            // Read on its own, before and after (the caller's sequence lock).
            generation: 0,
        }
    }
}

/// Whether the packet is the one shape that fires: a MoldUDP64 packet of exactly one message,
/// an ITCH trade of the armed stock, nothing after it.
#[inline(always)]
pub(crate) fn one_trade_of(ctx: &XdpContext, a: &Arm) -> bool {
    // Each read on its own, returning at once: the verifier refuses what the compiler makes of
    // a tuple of bounds checks (their results combined with bitwise operations).
    let Ok(count) = read_field::<2>(ctx, at(MOLD, moldudp64::field::COUNT)) else {
        return false;
    };
    if u16::from_be_bytes(count) != 1 {
        return false;
    }
    let Ok(block) = read_field::<2>(
        ctx,
        at(MOLD + moldudp64::HEADER_LEN, moldudp64::field::BLOCK_LEN),
    ) else {
        return false;
    };
    if usize::from(u16::from_be_bytes(block)) != trade::LEN {
        return false;
    }
    let Ok(kind) = read::<u8>(ctx, ITCH + trade::field::KIND) else {
        return false;
    };
    if kind != trade::KIND {
        return false;
    }
    let Ok(stock) = read_field::<8>(ctx, at(ITCH, trade::field::STOCK)) else {
        return false;
    };
    if stock != a.stock {
        return false;
    }
    let Ok(udp_len) = read_field::<2>(ctx, at(UDP, udp::LENGTH)) else {
        return false;
    };
    usize::from(u16::from_be_bytes(udp_len)) == ONE_TRADE_UDP_LEN
}

/// The rest of what the trader's socket path checks, once [`headers_intact`] has passed (the
/// trigger checks that first, for every packet that may move its mark): the UDP checksum, if
/// the datagram has one. What fails goes to the trader, which counts and drops it.
#[inline(always)]
pub(crate) fn udp_checksum_ok(ctx: &XdpContext) -> bool {
    // The pseudo header's addresses only (`headers_intact` checked the rest of the header).
    let Ok(addrs) = read::<[u8; 8]>(ctx, IP + ipv4::SRC.start) else {
        return false;
    };
    let Ok(udp_hdr) = read::<[u8; udp::HEADER_LEN]>(ctx, UDP) else {
        return false;
    };
    let udp_len = u16::from_be_bytes([udp_hdr[4], udp_hdr[5]]);
    if udp_hdr[6..8] == [0, 0] || usize::from(udp_len) != ONE_TRADE_UDP_LEN {
        // No UDP checksum (IPv4 allows it), or not the shape that fires (which one_trade_of
        // refuses): nothing more to check.
        return true;
    }
    // The kernel's own checksum over the datagram in place (`bpf_csum_diff` of nothing against
    // its first 72 bytes, a multiple of 4 as the helper needs), then the last two bytes.
    const WORDS_LEN: usize = ONE_TRADE_UDP_LEN / 4 * 4;
    const _: () = assert!(ONE_TRADE_UDP_LEN - WORDS_LEN == 2, "72 bytes and two");
    // SAFETY: `ctx.ctx` is this run's xdp_md.
    let (start, end) = unsafe {
        (
            core::ptr::read_volatile(core::ptr::addr_of!((*ctx.ctx).data)) as usize,
            core::ptr::read_volatile(core::ptr::addr_of!((*ctx.ctx).data_end)) as usize,
        )
    };
    if start + UDP + ONE_TRADE_UDP_LEN > end {
        return false;
    }
    // SAFETY: [start + UDP, + WORDS_LEN) lies inside the frame, checked just above; the helper
    // only reads it.
    let partial = unsafe {
        bpf_csum_diff(
            core::ptr::null_mut(),
            0,
            (start + UDP) as *mut u32,
            WORDS_LEN as u32,
            0,
        )
    };
    if partial < 0 {
        return false;
    }
    let Ok(tail) = read::<[u8; 2]>(ctx, UDP + WORDS_LEN) else {
        return false;
    };
    let words = (partial as u64 & 0xffff_ffff) + u64::from(u16::from_le_bytes(tail));
    // The pseudo header (addresses, protocol, length), then the datagram with its checksum:
    // a right one sums to 0xffff.
    let pseudo = checksum::sum(&addrs) + u64::from(ipv4::PROTOCOL_UDP) + u64::from(udp_len);
    let datagram = checksum::fold_native(words);
    checksum::fold(pseudo + u64::from(datagram)) == 0xffff
}

/// What every packet that moves the trigger's mark must pass: addressed to
/// the trader (if the address was given), a right IPv4 header checksum, the UDP datagram within
/// the IPv4 payload. No UDP checksum: that is summed only for a packet that may fire, or that
/// would move the mark far.
#[inline(always)]
pub(crate) fn headers_intact(ctx: &XdpContext) -> bool {
    let Ok(dst_mac) = read_field::<6>(ctx, ethernet::DST) else {
        return false;
    };
    let Ok(ip) = read::<[u8; ipv4::HEADER_LEN]>(ctx, IP) else {
        return false;
    };
    let Ok(udp_len) = read_field::<2>(ctx, at(UDP, udp::LENGTH)) else {
        return false;
    };
    let dst = read_global(&TRIGGER_DST);
    if dst != [0; 10] && (dst_mac != dst[..6] || ip[16..20] != dst[6..]) {
        return false;
    }
    if checksum::ipv4_header(&ip) != 0 {
        return false;
    }
    // classify() checked the version, IHL (no options), protocol, fragments and port.
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    // As the trader's socket path (and the kernel): the datagram within the IPv4 payload.
    total >= ipv4::HEADER_LEN + usize::from(u16::from_be_bytes(udp_len))
}

/// A packet of one message must carry exactly that message: its block length is the rest of
/// the datagram (as the trader's framing check demands). Packets of more messages are framed
/// by the trader; a lie there costs at most the mark's slack, never a fire.
#[inline(always)]
pub(crate) fn one_block_fits(ctx: &XdpContext, count: u16) -> bool {
    if count != 1 {
        return true;
    }
    let Ok(udp_len) = read_field::<2>(ctx, at(UDP, udp::LENGTH)) else {
        return false;
    };
    let Ok(block) = read_field::<2>(
        ctx,
        at(MOLD + moldudp64::HEADER_LEN, moldudp64::field::BLOCK_LEN),
    ) else {
        return false;
    };
    let block = usize::from(u16::from_be_bytes(block));
    block != 0
        && usize::from(u16::from_be_bytes(udp_len))
            == UDP_PAYLOAD_OFFSET - UDP + moldudp64::FIRST_MESSAGE + block
}
