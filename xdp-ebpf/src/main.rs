//! The lab's XDP program.
//!
//! Frames of the market-data flow (Ethernet II, IPv4 without options or fragmentation, UDP to
//! the configured destination port) go to the AF_XDP socket bound to the frame's RX queue;
//! everything else (ARP above all, or the kernel never resolves the trader's address) is passed
//! to the kernel untouched. Each decision is counted in a per-CPU array.
#![no_std]
#![no_main]

use aya_ebpf::{
    bindings::xdp_action::{XDP_PASS, XDP_TX},
    helpers::bpf_xdp_adjust_tail,
    macros::{map, xdp},
    maps::{PerCpuArray, XskMap},
    programs::XdpContext,
};
use xdp_common::{Action, Counter, MAX_QUEUES};

/// Ethernet II header length (no VLAN tag).
const ETH_HDR_LEN: usize = 14;
/// Offset of the EtherType in an Ethernet II header.
const ETH_TYPE_OFF: usize = 12;
/// EtherType IPv4 in network byte order, as it sits in the frame.
const ETHERTYPE_IPV4: u16 = 0x0800;
/// IPv4 header without options.
const IPV4_HDR_LEN: usize = 20;
/// IANA protocol number of UDP.
const IPPROTO_UDP: u8 = 17;
/// UDP header length.
const UDP_HDR_LEN: usize = 8;

/// The market-data destination port, host byte order; set by userspace at load time.
#[unsafe(no_mangle)]
static MD_PORT: u16 = 0;

/// What to do with market-data frames, an [`Action`] as a byte; set by userspace at load time.
#[unsafe(no_mangle)]
static MD_ACTION: u8 = 0;

#[map(name = "XSKS")]
static XSKS: XskMap = XskMap::with_max_entries(MAX_QUEUES, 0);

#[map(name = "COUNTERS")]
static COUNTERS: PerCpuArray<u64> = PerCpuArray::with_max_entries(Counter::COUNT, 0);

#[xdp]
pub fn md_redirect(ctx: XdpContext) -> u32 {
    let (counter, action) = match classify(&ctx) {
        Ok(Verdict::MarketData) => match Action::from_u8(read_global(&MD_ACTION)) {
            Action::Redirect => match XSKS.redirect(ctx.rx_queue_index(), 0) {
                Ok(action) => (Counter::Redirected, action),
                // No socket on this queue: let the kernel have it rather than lose it.
                Err(_) => (Counter::RedirectFailed, XDP_PASS),
            },
            Action::Pass => (Counter::PassedMarketData, XDP_PASS),
            Action::Reflect => match reflect(&ctx) {
                Ok(()) => (Counter::Reflected, XDP_TX),
                Err(()) => (Counter::ReflectFailed, XDP_PASS),
            },
        },
        Ok(Verdict::Pass(counter)) => (counter, XDP_PASS),
        Err(()) => (Counter::Malformed, XDP_PASS),
    };
    count(counter);
    action
}

enum Verdict {
    MarketData,
    Pass(Counter),
}

#[inline(always)]
fn classify(ctx: &XdpContext) -> Result<Verdict, ()> {
    let ethertype = u16::from_be(read::<u16>(ctx, ETH_TYPE_OFF)?);
    if ethertype != ETHERTYPE_IPV4 {
        return Ok(Verdict::Pass(Counter::PassedNotIpv4));
    }
    let ip = ETH_HDR_LEN;
    let ver_ihl = read::<u8>(ctx, ip)?;
    let ihl = usize::from(ver_ihl & 0x0f) * 4;
    if ver_ihl >> 4 != 4 || ihl < IPV4_HDR_LEN {
        return Err(());
    }
    let total_len = usize::from(u16::from_be(read::<u16>(ctx, ip + 2)?));
    if total_len < ihl {
        return Err(());
    }
    let protocol = read::<u8>(ctx, ip + 9)?;
    if protocol != IPPROTO_UDP {
        return Ok(Verdict::Pass(Counter::PassedNotUdp));
    }
    // Flags and fragment offset: anything but "don't fragment" means a fragment.
    let frag = u16::from_be(read::<u16>(ctx, ip + 6)?);
    if frag & 0x3fff != 0 {
        return Ok(Verdict::Pass(Counter::PassedFragment));
    }
    if ihl != IPV4_HDR_LEN {
        return Ok(Verdict::Pass(Counter::PassedIpOptions));
    }
    if total_len < IPV4_HDR_LEN + UDP_HDR_LEN {
        return Err(());
    }
    let udp = ip + IPV4_HDR_LEN;
    let dst_port = u16::from_be(read::<u16>(ctx, udp + 2)?);
    let udp_len = usize::from(u16::from_be(read::<u16>(ctx, udp + 4)?));
    if udp_len < UDP_HDR_LEN {
        return Err(());
    }
    if dst_port != read_global(&MD_PORT) {
        return Ok(Verdict::Pass(Counter::PassedOtherPort));
    }
    Ok(Verdict::MarketData)
}

/// Offsets of the reflector's fields (MoldUDP64 header, first block, ITCH 'P' message); see
/// the wire crate for the layouts.
const PAYLOAD: usize = ETH_HDR_LEN + IPV4_HDR_LEN + UDP_HDR_LEN;
const MOLD_SEQ: usize = PAYLOAD + 10;
const ITCH: usize = PAYLOAD + 20 + 2;
const ITCH_STOCK: usize = ITCH + 24;
const ITCH_PRICE: usize = ITCH + 32;
/// The order message's length (wire::order::LEN).
const ORDER_LEN: usize = 36;

/// Turns a MoldUDP64 packet whose first message is an ITCH trade into an order for that tick
/// (type 'O', buy 100, token = tick_seq = the packet's sequence number, the trade's price and
/// stock), addressed back to the sender, and trims the frame to it. UDP checksum 0 (none:
/// allowed for IPv4), IPv4 header checksum recomputed.
#[inline(always)]
fn reflect(ctx: &XdpContext) -> Result<(), ()> {
    // The frame's length from its IPv4 total length (the verifier forbids arithmetic on the
    // packet end pointer); checked against the real frame just below.
    let frame_len =
        ETH_HDR_LEN + usize::from(u16::from_be_bytes(read::<[u8; 2]>(ctx, ETH_HDR_LEN + 2)?));
    // The header's claim must not exceed the frame, or the trim below would cut into the
    // order; masked so the verifier sees a bounded offset.
    if ctx.data() + (frame_len & 0x3fff) > ctx.data_end() {
        return Err(());
    }
    let seq = read::<[u8; 8]>(ctx, MOLD_SEQ)?;
    if read::<u8>(ctx, ITCH)? != b'P' {
        return Err(());
    }
    let stock = read::<[u8; 8]>(ctx, ITCH_STOCK)?;
    let price = read::<[u8; 4]>(ctx, ITCH_PRICE)?;
    let dst_mac = read::<[u8; 6]>(ctx, 0)?;
    let src_mac = read::<[u8; 6]>(ctx, 6)?;
    write(ctx, 0, src_mac)?;
    write(ctx, 6, dst_mac)?;
    let ip = ETH_HDR_LEN;
    let src_ip = read::<[u8; 4]>(ctx, ip + 12)?;
    let dst_ip = read::<[u8; 4]>(ctx, ip + 16)?;
    write(ctx, ip + 12, dst_ip)?;
    write(ctx, ip + 16, src_ip)?;
    let udp = ip + IPV4_HDR_LEN;
    let sport = read::<[u8; 2]>(ctx, udp)?;
    let dport = read::<[u8; 2]>(ctx, udp + 2)?;
    write(ctx, udp, dport)?;
    write(ctx, udp + 2, sport)?;
    write(
        ctx,
        udp + 4,
        ((UDP_HDR_LEN + ORDER_LEN) as u16).to_be_bytes(),
    )?;
    write(ctx, udp + 6, [0u8; 2])?;
    // The order, written over the start of the MoldUDP64 payload (the frame is longer).
    write(ctx, PAYLOAD, [b'O', b'B', 0, 0, 0, 0, 0, 100])?;
    write(ctx, PAYLOAD + 8, seq)?;
    write(ctx, PAYLOAD + 16, seq)?;
    write(ctx, PAYLOAD + 24, price)?;
    write(ctx, PAYLOAD + 28, stock)?;
    write(
        ctx,
        ip + 2,
        ((IPV4_HDR_LEN + UDP_HDR_LEN + ORDER_LEN) as u16).to_be_bytes(),
    )?;
    write(ctx, ip + 10, [0u8; 2])?;
    // One read of the whole header (a constant-offset bounds check the verifier follows),
    // then the sum in registers.
    let hdr = read::<[u8; IPV4_HDR_LEN]>(ctx, ip)?;
    let mut sum: u32 = 0;
    for pair in hdr.chunks_exact(2) {
        sum += u32::from(pair[0]) << 8 | u32::from(pair[1]);
    }
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    write(ctx, ip + 10, (!(sum as u16)).to_be_bytes())?;
    let delta = (PAYLOAD + ORDER_LEN) as i32 - frame_len as i32;
    // SAFETY: ctx.ctx is the live xdp_md of this invocation; shrinking by `delta` keeps the
    // frame at PAYLOAD + ORDER_LEN bytes, all of which were written above.
    if delta < 0 && unsafe { bpf_xdp_adjust_tail(ctx.ctx, delta) } != 0 {
        return Err(());
    }
    Ok(())
}

/// Writes a `T` at `offset`, after the same bounds check as [`read`].
#[inline(always)]
fn write<T: Copy>(ctx: &XdpContext, offset: usize, value: T) -> Result<(), ()> {
    let start = ctx.data();
    let end = ctx.data_end();
    if start + offset + core::mem::size_of::<T>() > end {
        return Err(());
    }
    let ptr = (start + offset) as *mut T;
    // SAFETY: in bounds of the frame, checked just above; XDP frames are writable.
    unsafe { core::ptr::write_unaligned(ptr, value) };
    Ok(())
}

/// Reads a `T` at `offset` from the start of the frame, after the bounds check the verifier
/// requires. The only way this program touches packet memory.
#[inline(always)]
fn read<T: Copy>(ctx: &XdpContext, offset: usize) -> Result<T, ()> {
    let start = ctx.data();
    let end = ctx.data_end();
    if start + offset + core::mem::size_of::<T>() > end {
        return Err(());
    }
    let ptr = (start + offset) as *const T;
    // SAFETY: the range [ptr, ptr + size_of::<T>()) lies inside the frame, checked just above;
    // packet data has no alignment guarantee, hence read_unaligned.
    Ok(unsafe { core::ptr::read_unaligned(ptr) })
}

/// Reads a load-time global. Volatile, so the compiler can't fold the initial value in: the
/// loader rewrites `.rodata` before the program is verified.
#[inline(always)]
fn read_global<T: Copy>(global: &'static T) -> T {
    // SAFETY: `global` is a valid, aligned reference to a static.
    unsafe { core::ptr::read_volatile(global) }
}

#[inline(always)]
fn count(counter: Counter) {
    if let Some(slot) = COUNTERS.get_ptr_mut(counter.index()) {
        // SAFETY: the map returned a valid pointer to this CPU's slot; per-CPU, so no other
        // program instance writes it concurrently (XDP runs with preemption disabled).
        unsafe { *slot += 1 };
    }
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    // The verifier rejects any reachable panic path; this only satisfies the compiler.
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
