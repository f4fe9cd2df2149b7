//! The trigger on a full-depth feed (`Action::Trigger` with `TRIGGER_BOOK`): the armed order
//! fired on the traded stock's print in the packet that starts at the arm's number, its price
//! from the firing set for an Order Executed (xdp_common::book_trigger has the rules).

use crate::{
    Timing,
    classify::source_pinned,
    maps::{ARM, FIRED_PACKET, FIRING, FIRING_STOCK, TRIGGER_NEXT, TRIGGER_TCP},
    packet::{UDP, read},
    read_global,
    reflect::{OrderFields, frame_len, write_order_for},
    timing::Stamps,
    trigger::{Shot, headers_intact, read_arm, record_fire},
};
use aya_ebpf::{
    helpers::{bpf_csum_diff, bpf_xdp_load_bytes},
    programs::XdpContext,
};
use xdp_common::{
    Fired, Mark,
    book_trigger::{BOOK_TRIGGER_CAP, FIRED_PACKET_MAX, at, executes, kind, print_shape},
    checksum,
    layout::{ipv4, moldudp64, udp},
};

/// Where the MoldUDP64 header starts.
const MOLD: usize = UDP + udp::HEADER_LEN;
/// Its length: session (10), sequence (8), count (2).
const MOLD_HEADER: usize = 20;
/// The largest frame walked: a bound the verifier needs for variable offsets.
const FRAME_MAX: usize = 2048;
/// The checksum helper sums at most 512 bytes a call.
const CHUNK: usize = 512;
const _: () = assert!(3 * CHUNK <= xdp_common::book_trigger::FIRED_PACKET_BUF);
const _: () = assert!(xdp_common::book_trigger::FIRED_PACKET_BUF == 2048);

/// What the walk found of the traded stock in a packet.
struct Found {
    /// The first message of the stock: its index, its offset in the frame, its type and length.
    first: Option<(u16, usize, u8, usize)>,
    /// A print of the stock after the first message (the walk stops there).
    later_print: bool,
    /// Every block was read and they tile the datagram: what the walk says is the whole packet.
    whole: bool,
}

/// Walks the `count` blocks for messages of `locate`: at most [`BOOK_TRIGGER_CAP`]. Its state
/// is small on purpose (the first message's place, one flag): the verifier walks every
/// iteration, and a count per iteration would multiply its states.
#[inline(always)]
fn walk(ctx: &XdpContext, count: u16, locate: u16) -> Found {
    let mut found = Found {
        first: None,
        later_print: false,
        whole: false,
    };
    let Ok(len) = read::<[u8; 2]>(ctx, UDP + 4) else {
        return found;
    };
    let end = UDP + usize::from(u16::from_be_bytes(len));
    let mut at = MOLD + MOLD_HEADER;
    let mut i: u16 = 0;
    while i < BOOK_TRIGGER_CAP {
        if i == count {
            break;
        }
        if at >= FRAME_MAX {
            return found;
        }
        // SAFETY: reads a live local; volatile and masked so the verifier sees the bound.
        let o = unsafe { core::ptr::read_volatile(&at) } & (FRAME_MAX - 1);
        let Ok(b) = read::<[u8; 5]>(ctx, o) else {
            return found;
        };
        let block = usize::from(u16::from_be_bytes([b[0], b[1]]));
        if block < 3 {
            return found;
        }
        if u16::from_be_bytes([b[3], b[4]]) == locate {
            if found.first.is_none() {
                found.first = Some((i, o + 2, b[2], block));
            } else if print_shape(b[2], block) {
                found.later_print = true;
                return found;
            }
        }
        at = o + 2 + block;
        i += 1;
    }
    found.whole = i == count && at == end;
    found
}

/// The print's price, if the trader's book would take it as a print: an Order Executed or a
/// printable Order Executed With Price of an order in the firing set, for no more than its
/// open shares (the set's price for the first, the message's own for the second); a Trade
/// with a side the parser takes. `None`: the packet goes to the trader.
#[inline(always)]
fn print_price(ctx: &XdpContext, msg: usize, kind: u8) -> Option<u32> {
    let msg = msg & (FRAME_MAX - 1);
    match kind {
        kind::EXECUTED | kind::EXECUTED_WITH_PRICE => {
            let r = read::<[u8; 12]>(ctx, msg + at::ORDER_REF).ok()?;
            let order_ref = u64::from_be_bytes([r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]]);
            let executed = u32::from_be_bytes([r[8], r[9], r[10], r[11]]);
            // SAFETY: a hash map lookup; the value is copied out at once.
            let v = unsafe { FIRING.get(order_ref) }.copied()?;
            let resting = executes(v, executed)?;
            if kind == kind::EXECUTED {
                return Some(resting);
            }
            let t = read::<[u8; 5]>(ctx, msg + at::C_PRINTABLE).ok()?;
            (t[0] == b'Y').then(|| u32::from_be_bytes([t[1], t[2], t[3], t[4]]))
        }
        kind::TRADE => {
            let side = read::<u8>(ctx, msg + at::P_SIDE).ok()?;
            if side != b'B' && side != b'S' {
                return None;
            }
            read::<[u8; 4]>(ctx, msg + at::P_PRICE)
                .ok()
                .map(u32::from_be_bytes)
        }
        _ => None,
    }
}

/// The book trigger: see the module's rules. The arm is consumed when it fires; the mark moves
/// past every packet that holds a message of the stock, or that the walk can't read whole.
#[inline(always)]
pub(crate) fn book_trigger<T: Timing>(ctx: &XdpContext, st: &mut Stamps<T>) -> Shot {
    if ctx.rx_queue_index() != 0 || read_global(&TRIGGER_TCP) != 0 {
        return Shot::Miss;
    }
    let Some(arm) = ARM.get_ptr_mut(0) else {
        return Shot::Miss;
    };
    let Some(next) = TRIGGER_NEXT.get_ptr_mut(0) else {
        return Shot::Miss;
    };
    let Some(&stock) = FIRING_STOCK.get(0) else {
        return Shot::Miss;
    };
    if stock == 0 || stock > 0x1_0000 {
        return Shot::Miss;
    }
    let locate = (stock - 1) as u16;
    // The sequence lock's read side, as the ticker trigger's.
    // SAFETY: the map returned a valid pointer to its one entry.
    let (g1, a, g2) = unsafe {
        let g1 = core::ptr::read_volatile(core::ptr::addr_of!((*arm).arm.generation));
        let a = read_arm(core::ptr::addr_of!((*arm).arm));
        let g2 = core::ptr::read_volatile(core::ptr::addr_of!((*arm).arm.generation));
        (g1, a, g2)
    };
    let Ok(h) = read::<[u8; MOLD_HEADER]>(ctx, MOLD) else {
        return Shot::Miss;
    };
    if h[..10] != a.session {
        return Shot::Miss;
    }
    let seq = u64::from_be_bytes([h[10], h[11], h[12], h[13], h[14], h[15], h[16], h[17]]);
    let count = u16::from_be_bytes([h[18], h[19]]);
    st.mark(Mark::ArmRead);
    if !source_pinned() || count == 0 || count == moldudp64::END_OF_SESSION || !headers_intact(ctx)
    {
        return Shot::Miss;
    }
    let Some(end) = seq.checked_add(u64::from(count)) else {
        return Shot::Miss;
    };
    st.mark(Mark::Intact);
    let found = walk(ctx, count, locate);
    // SAFETY: the map's one entry, written only by this program (one RX queue).
    let seen = unsafe { core::ptr::read_volatile(next) };
    // A packet with a message of the stock makes every arm below its end stale: the trader
    // decides again after it, with its firing set in step (one the walk couldn't read whole
    // may hold one).
    if (found.first.is_some() || !found.whole) && end > seen {
        // SAFETY: as above.
        unsafe { core::ptr::write_volatile(next, end) };
    }
    st.mark(Mark::Checked);
    let Some((index, msg, kind, msg_len)) = found.first else {
        return Shot::Miss;
    };
    let s = seq + u64::from(index);
    if a.armed == 0
        || !found.whole
        || found.later_print
        || !print_shape(kind, msg_len)
        || seq != a.seq
        || seen > a.seq
    {
        return Shot::Miss;
    }
    if g1 & 1 != 0 || g1 != g2 {
        return Shot::Busy;
    }
    let Some(price) = print_price(ctx, msg, kind) else {
        return Shot::Miss;
    };
    if !a.contains(price) {
        return Shot::NotInSet;
    }
    st.mark(Mark::Matched);
    // The trader's copy of the packet, checked as its socket path would: a datagram whose UDP
    // checksum is wrong goes to the trader, which drops it.
    if copy_datagram(ctx, g1).is_err() {
        return Shot::Miss;
    }
    st.mark(Mark::Checksummed);
    let Ok(frame) = frame_len(ctx) else {
        return Shot::Miss;
    };
    let fields = OrderFields {
        side: a.side,
        flags: a.flags,
        shares: a.shares,
        token: a.token.to_be_bytes(),
    };
    let written = write_order_for(
        ctx,
        &fields,
        (s.to_be_bytes(), a.stock, price.to_be_bytes()),
        frame,
    );
    st.mark(Mark::Ordered);
    if written.is_err() {
        return Shot::Failed;
    }
    // The record, as the ticker trigger's, with the print's number.
    // SAFETY: the map's one entry, valid for this run.
    unsafe { record_fire(arm, price, Some(s), g1) };
    Shot::Fired(Fired::at(&a, s, price))
}

/// Copies the UDP datagram into [`FIRED_PACKET`] for the fire of generation `generation`, and
/// checks its UDP checksum there (if it has one): `Err` if it doesn't fit, can't be read, or
/// its checksum is wrong.
#[inline(always)]
fn copy_datagram(ctx: &XdpContext, generation: u32) -> Result<(), ()> {
    let addrs = read::<[u8; 8]>(ctx, UDP - 8)?;
    let hdr = read::<[u8; udp::HEADER_LEN]>(ctx, UDP)?;
    let len = usize::from(u16::from_be_bytes([hdr[4], hdr[5]]));
    if !(udp::HEADER_LEN..=FIRED_PACKET_MAX).contains(&len) {
        return Err(());
    }
    let slot = FIRED_PACKET.get_ptr_mut(0).ok_or(())?;
    // SAFETY: the map's one value, valid for this run.
    let bytes = unsafe { core::ptr::addr_of_mut!((*slot).bytes) }.cast::<u8>();
    // In pieces of constant sizes, the binary digits of `len` from the highest: each piece's
    // offset is the higher digits, so every piece lies inside the 2 KiB buffer by its mask
    // (the verifier's bound) and the helper checks it against the frame.
    copy_piece::<1024>(ctx, bytes, len)?;
    copy_piece::<512>(ctx, bytes, len)?;
    copy_piece::<256>(ctx, bytes, len)?;
    copy_piece::<128>(ctx, bytes, len)?;
    copy_piece::<64>(ctx, bytes, len)?;
    copy_piece::<32>(ctx, bytes, len)?;
    copy_piece::<16>(ctx, bytes, len)?;
    copy_piece::<8>(ctx, bytes, len)?;
    copy_piece::<4>(ctx, bytes, len)?;
    copy_piece::<2>(ctx, bytes, len)?;
    copy_piece::<1>(ctx, bytes, len)?;
    if hdr[6..8] != [0, 0] {
        // The sum over whole words: the bytes after the datagram up to the next word zeroed.
        let padded = (len + 3) & !3;
        let mut z = len;
        while z < padded {
            // SAFETY: reads a live local (volatile, so the mask the verifier needs stays), then
            // writes a byte at an offset masked to the 2 KiB buffer.
            unsafe {
                let o = core::ptr::read_volatile(&z) & 0x7ff;
                core::ptr::write_volatile(bytes.add(o), 0);
            }
            z += 1;
        }
        let words = sum_chunk(bytes, 0, padded)?
            + sum_chunk(bytes, CHUNK, padded)?
            + sum_chunk(bytes, 2 * CHUNK, padded)?;
        let pseudo = checksum::sum(&addrs) + u64::from(ipv4::PROTOCOL_UDP) + len as u64;
        let datagram = checksum::fold_native(words);
        if checksum::fold(pseudo + u64::from(datagram)) != 0xffff {
            return Err(());
        }
    }
    // SAFETY: as above; the length, then the generation that names the copy.
    unsafe {
        core::ptr::write_volatile(core::ptr::addr_of_mut!((*slot).len), len as u32);
        core::ptr::write_volatile(core::ptr::addr_of_mut!((*slot).generation), generation);
    }
    Ok(())
}

/// The kernel's sum of the copy's words in `[off, min(off + CHUNK, padded))` (0 if empty).
#[inline(always)]
fn sum_chunk(bytes: *mut u8, off: usize, padded: usize) -> Result<u64, ()> {
    if padded <= off {
        return Ok(0);
    }
    let left = padded - off;
    // SAFETY: reads a live local (volatile: the compiler can't drop the bound the verifier
    // needs from what it knows of `padded`).
    let mut n = unsafe { core::ptr::read_volatile(&left) };
    if n > CHUNK {
        n = CHUNK;
    }
    // SAFETY: [off, off + n) lies inside the buffer (off + CHUNK <= FIRED_PACKET_BUF); the
    // helper only reads it.
    let part = unsafe {
        bpf_csum_diff(
            core::ptr::null_mut(),
            0,
            bytes.add(off).cast(),
            (n & 0x3fc) as u32,
            0,
        )
    };
    if part < 0 {
        return Err(());
    }
    Ok(part as u64 & 0xffff_ffff)
}

/// Copies the datagram's piece of `N` bytes (a power of two) if `len` has that binary digit:
/// from `off`, the digits above it.
#[inline(always)]
fn copy_piece<const N: usize>(ctx: &XdpContext, bytes: *mut u8, len: usize) -> Result<(), ()> {
    if len & N == 0 {
        return Ok(());
    }
    let off = len & !(2 * N - 1) & 0x7ff;
    // SAFETY: off + N <= 2048 - N: inside the buffer; the helper checks the frame's end.
    let r =
        unsafe { bpf_xdp_load_bytes(ctx.ctx, (UDP + off) as u32, bytes.add(off).cast(), N as u32) };
    if r == 0 { Ok(()) } else { Err(()) }
}
