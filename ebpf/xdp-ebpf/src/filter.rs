//! The driver filter (docs/driver-filter.md): a feed packet of line A that carries nothing for
//! the trader's stocks, and continues the line exactly, is dropped here; every packet passed
//! has the run of dropped numbers it ends filed as a claim under its first number, for the
//! trader's sequencer.
//! The run itself is `xdp_common::filter::Run`, the one the sequencer's tests drive.

use crate::{
    maps::{CLAIMS, FILTER, FILTER_RUN, LOCATES},
    packet::{UDP, read},
};
use aya_ebpf::programs::XdpContext;
use xdp_common::{
    filter::{
        CAP, Claim, FILTER_ARMED, FILTER_SESSION_HEAD, FILTER_SESSION_TAIL, NO_KEY, Verdict,
        claim_slot, worth_a_slot,
    },
    layout::udp,
};

/// Where the MoldUDP64 header starts.
const MOLD: usize = UDP + udp::HEADER_LEN;
/// Its length: session (10), sequence (8), count (2).
const MOLD_HEADER: usize = 20;
/// The largest frame filtered or claimed: a bound the verifier needs for variable offsets.
const FRAME_MAX: usize = 2048;

/// What the filter makes of a feed packet of line A.
pub(crate) enum Filtered {
    /// Dropped in the driver: it carried this many messages.
    Drop(u64),
    /// Passed, with this claim (empty: none), the packet numbered from the second.
    Pass(Claim, u64),
}

/// The packet's verdict. Nothing is dropped before the trader has armed the filter; a
/// heartbeat or an end of session carries the run so far; a packet of another session or one
/// whose numbers overflow is passed with no claim. None of them ends the run.
#[inline(always)]
pub(crate) fn filter(ctx: &XdpContext) -> Filtered {
    let pass = Filtered::Pass(Claim { from: 0, to: 0 }, 0);
    let (Some(armed), Some(head), Some(tail)) = (
        FILTER.get(FILTER_ARMED),
        FILTER.get(FILTER_SESSION_HEAD),
        FILTER.get(FILTER_SESSION_TAIL),
    ) else {
        return pass;
    };
    if *armed == 0 {
        return pass;
    }
    let Ok(h) = read::<[u8; MOLD_HEADER]>(ctx, MOLD) else {
        return pass;
    };
    let count = u16::from_be_bytes([h[18], h[19]]);
    let head_ok = u64::from_ne_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]) == *head;
    let tail_ok = u64::from_ne_bytes([h[8], h[9], 0, 0, 0, 0, 0, 0]) == *tail;
    if !head_ok || !tail_ok {
        return pass;
    }
    let Some(run) = FILTER_RUN.get_ptr_mut(0) else {
        return pass;
    };
    if count == 0 || count == u16::MAX {
        // A heartbeat or an end of session: it carries the run so far, whose numbers come
        // before it, and leaves the run going.
        let first = u64::from_be_bytes([h[10], h[11], h[12], h[13], h[14], h[15], h[16], h[17]]);
        // SAFETY: the map's one entry, valid for this run.
        return Filtered::Pass(unsafe { &*run }.so_far(), first);
    }
    let first = u64::from_be_bytes([h[10], h[11], h[12], h[13], h[14], h[15], h[16], h[17]]);
    let Some(next) = first.checked_add(u64::from(count)) else {
        return pass;
    };
    let candidate = count <= CAP && nothing_kept(ctx, count);
    // SAFETY: the map's one entry, valid for this run; one CPU at a time serves the line.
    match unsafe { &mut *run }.step(first, next, candidate) {
        Verdict::Drop => Filtered::Drop(u64::from(count)),
        Verdict::Pass(claim) => Filtered::Pass(claim, first),
    }
}

/// Whether the `count` blocks (at most [`CAP`]) tile the datagram exactly, each a message of at
/// least three bytes whose stock locate's bit is clear: the trader's framing check, and no
/// message of its own. Any doubt is `false`: the packet is passed.
#[inline(always)]
fn nothing_kept(ctx: &XdpContext, count: u16) -> bool {
    let Ok(len) = read::<[u8; 2]>(ctx, UDP + 4) else {
        return false;
    };
    let end = UDP + usize::from(u16::from_be_bytes(len));
    let mut at = MOLD + MOLD_HEADER;
    let mut i: u16 = 0;
    while i < CAP {
        if i == count {
            break;
        }
        if at >= FRAME_MAX {
            return false;
        }
        // SAFETY: reads a live local; volatile and masked so the verifier sees the bound.
        let o = unsafe { core::ptr::read_volatile(&at) } & (FRAME_MAX - 1);
        let Ok(b) = read::<[u8; 5]>(ctx, o) else {
            return false;
        };
        let block = usize::from(u16::from_be_bytes([b[0], b[1]]));
        if block < 3 {
            return false;
        }
        let locate = u16::from_be_bytes([b[3], b[4]]);
        let Some(word) = LOCATES.get(u32::from(locate >> 6)) else {
            return false;
        };
        if *word & (1u64 << (locate & 63)) != 0 {
            return false;
        }
        at = o + 2 + block;
        i += 1;
    }
    i == count && at == end
}

/// Files `claim` for the packet numbered from `first` in the next slot of the ring: the key
/// made invalid, the claim written, the key, then the ring's head (volatile stores, in that
/// order), so a reader that sees the key before and after its read has the claim whole.
#[inline(always)]
pub(crate) fn file_claim(claim: Claim, first: u64) -> Result<(), ()> {
    if !worth_a_slot(claim, first) {
        return Ok(());
    }
    let slots = CLAIMS.get_ptr_mut(0).ok_or(())?;
    // SAFETY: the map's one value, valid for this run, written by this program alone (one
    // RX queue, run on one CPU at a time); the slot's index is below CLAIM_SLOTS by its mask.
    unsafe {
        let head = core::ptr::read_volatile(core::ptr::addr_of!((*slots).head));
        let slot = core::ptr::addr_of_mut!((*slots).slots[claim_slot(head)]);
        core::ptr::write_volatile(core::ptr::addr_of_mut!((*slot).key), NO_KEY);
        core::ptr::write_volatile(core::ptr::addr_of_mut!((*slot).claim), claim);
        core::ptr::write_volatile(core::ptr::addr_of_mut!((*slot).key), first);
        core::ptr::write_volatile(core::ptr::addr_of_mut!((*slots).head), head.wrapping_add(1));
    }
    Ok(())
}
