// The XDP program's items, included by `main.rs` (untimed), `stages.rs` (timed at every
// stage) and `run.rs` (timed at each run's ends), each of which defines `TIMED`,
// `STAGE_MARKS` and the crate's attributes.

use aya_ebpf::{
    bindings::xdp_action::{XDP_DROP, XDP_PASS, XDP_TX},
    helpers::{bpf_csum_diff, bpf_ktime_get_ns, bpf_xdp_adjust_tail, bpf_xdp_store_bytes},
    macros::{map, xdp},
    maps::{Array, PerCpuArray, RingBuf, XskMap},
    programs::XdpContext,
};
use aya_log_ebpf::{error, warn};
use xdp_common::{
    Action, Arm, ArmSlot, BPF_F_MMAPABLE, Counter, Fired, Foreign, LOG_BURST,
    LOG_WINDOW_NS, MAX_QUEUES, Mark, ORDER_TCP_LOCAL_PORTS, Outcome, SOURCE_LINE_A, SOURCE_LINE_B, SOURCE_RECOVERY,
    SOURCES, STAGE_WORDS, Source, checksum,
    segment::{self, SegmentSlot},
    layout::{
        Field, UDP_PAYLOAD_OFFSET, at, ethernet, ipv4,
        itch::{self, trade},
        moldudp64, order, tcp, udp,
    },
};

/// Where the IPv4 header starts: right after Ethernet II (no VLAN tag).
const IP: usize = ethernet::HEADER_LEN;
/// Where the UDP header starts, for an IPv4 header without options (the only kind served).
const UDP: usize = IP + ipv4::HEADER_LEN;

/// The market-data destination port, host byte order; set by userspace at load time.
#[unsafe(no_mangle)]
static MD_PORT: u16 = 0;

/// The second market-data port (line B of an A/B feed), host byte order; 0: none. Set by
/// userspace at load time.
#[unsafe(no_mangle)]
static MD_PORT_B: u16 = 0;

/// What to do with market-data frames, an [`Action`] as a byte; set by userspace at load time.
#[unsafe(no_mangle)]
static MD_ACTION: u8 = 0;

/// Logging on (1) or off (0); set by userspace at load time (`trader --xdp-log`).
#[unsafe(no_mangle)]
static XDP_LOG: u8 = 0;

/// The trigger wakes a reader sleeping on `FIRED` (1) or not (0); set by userspace at load
/// time (`trader --path trigger --wait block` sets it).
#[unsafe(no_mangle)]
static FIRED_WAKEUP: u8 = 0;

/// Where the program's own orders go (reflector and trigger), field by field (an
/// [`xdp_common::OrderTo`]), set by userspace at load time from the configured order gateway.
/// A zero port: nowhere (nothing is fired or reflected); a frame is never sent back to
/// whoever sent it.
#[unsafe(no_mangle)]
static ORDER_DST_MAC: [u8; 6] = [0; 6];
#[unsafe(no_mangle)]
static ORDER_SRC_MAC: [u8; 6] = [0; 6];
#[unsafe(no_mangle)]
static ORDER_SRC_IP: [u8; 4] = [0; 4];
#[unsafe(no_mangle)]
static ORDER_DST_IP: [u8; 4] = [0; 4];
#[unsafe(no_mangle)]
static ORDER_DST_PORT: [u8; 2] = [0; 2];
/// 1: the order session's TCP segments (from `ORDER_DST_IP`:`ORDER_DST_PORT` to
/// `ORDER_SRC_IP`) go into the AF_XDP socket, for the trader's userspace TCP.
#[unsafe(no_mangle)]
static ORDER_TCP: u8 = 0;
/// 1: the trigger fires the order session's armed TCP segment (`SEGMENT`), not the lab's UDP
/// order; set by userspace at load time (`trader --path trigger --orders tcp-xdp`).
#[unsafe(no_mangle)]
static TRIGGER_TCP: u8 = 0;

/// The TCP trigger's armed segment, written in place by the trader's userspace TCP between
/// ticks (it maps the array), with the claim words that keep the program and the stack from
/// sending at the same sequence number (`xdp_common::segment`).
#[map(name = "SEGMENT")]
static SEGMENT: Array<SegmentSlot> = Array::with_max_entries(1, BPF_F_MMAPABLE);

/// The feed's pinned sources (line A, line B, the re-request server), written by userspace at
/// start (`--feed-source`) or when the trader has confirmed the feed it learned. A market-data
/// frame from any other source is dropped and counted; an entry not set yet passes everything.
#[map(name = "SOURCES")]
static SOURCES_MAP: Array<Source> = Array::with_max_entries(SOURCES, 0);

/// Each CPU's log rate limit: `[window start ns, records written in the window]`.
#[map(name = "LOG_LIMIT")]
static LOG_LIMIT: PerCpuArray<[u64; 2]> = PerCpuArray::with_max_entries(1, 0);

/// The armed order (`Action::Trigger`), written in place by userspace between ticks (it maps
/// the array) under a sequence lock (`Arm::generation`).
#[map(name = "ARM")]
static ARM: Array<ArmSlot> = Array::with_max_entries(1, BPF_F_MMAPABLE);

/// The trigger's own record of the armed session's sequence numbers: one past the highest it
/// has seen (capped at `TRIGGER_NEAR` past the arm). Written only by the program: an arm fires
/// only on the first arrival of its number, never on a copy (a duplicate, a late or reordered
/// packet) nor after its tick went to the trader unfired.
#[map(name = "TRIGGER_NEXT")]
static TRIGGER_NEXT: Array<u64> = Array::with_max_entries(1, 0);

/// How far past the arm's number a packet can move `TRIGGER_NEXT`: enough to mark the arm's
/// number seen (so no copy fires it) while the trader catches up, and no further, so a
/// packet numbered far ahead (a forged jump with the feed's source spoofed, which the trader
/// refuses) costs the trigger at most the ticks up to here, never the rest of the run. Arms
/// are keyed by sequence number, so a real jump still fires on its first arrival.
const TRIGGER_NEAR: u64 = 64;

/// The trader's MAC and IPv4 address (6 + 4 bytes): the trigger fires only on frames addressed
/// to them (all zero: not checked); set by userspace at load time.
#[unsafe(no_mangle)]
static TRIGGER_DST: [u8; 10] = [0; 10];

/// The UDP length of the one packet shape that fires: a MoldUDP64 packet of one ITCH trade.
const ONE_TRADE_UDP_LEN: usize = udp::HEADER_LEN + moldudp64::FIRST_MESSAGE + trade::LEN;

/// A `Fired` record per order sent, written only when a blocking trader must be woken
/// (`FIRED_WAKEUP`): its wakeup is what rouses the trader; what fired is read from `ARM`.
#[map(name = "FIRED")]
static FIRED: RingBuf = RingBuf::with_byte_size(1 << 16, 0);

#[map(name = "XSKS")]
static XSKS: XskMap = XskMap::with_max_entries(MAX_QUEUES, 0);

/// Stage timing's sums, per outcome ([`xdp_common::StageSums`] as words); written only by the
/// timed object.
#[map(name = "STAGES")]
static STAGES: PerCpuArray<[u64; STAGE_WORDS]> = PerCpuArray::with_max_entries(Outcome::COUNT, 0);

/// Stage timing's clock at each mark of the run in progress (and the calibrating read last).
#[map(name = "STAGE_CLOCKS")]
static STAGE_CLOCKS: PerCpuArray<[u64; Mark::COUNT + 1]> = PerCpuArray::with_max_entries(1, 0);

#[map(name = "COUNTERS")]
static COUNTERS: PerCpuArray<u64> = PerCpuArray::with_max_entries(Counter::COUNT, 0);

#[xdp]
fn md_redirect(ctx: XdpContext) -> u32 {
    let mut st = Stamps::start();
    let verdict = classify(&ctx);
    st.mark(Mark::Classified);
    let (counter, action) = match verdict {
        Ok(Verdict::MarketData) => match Action::from_u8(read_global(&MD_ACTION)) {
            Action::Redirect => redirect(&ctx, &mut st),
            Action::RedirectStamped => {
                // Unstamped if the frame can't grow: the reader then falls back to its own
                // clock, which the stamp's missing magic tells it.
                let _ = stamp(&ctx);
                redirect(&ctx, &mut st)
            }
            Action::Pass => (Counter::PassedMarketData, XDP_PASS),
            Action::Trigger => match trigger(&ctx, &mut st) {
                Shot::Fired(fired) => {
                    // The record's line holds what fired (`trigger` wrote it). A reader asleep
                    // must be woken as well: through the ring, whose wakeup raises an
                    // interrupt (irq_work) inside this run, before the order leaves (measured
                    // as this stage with `--wait block`). A spinning reader needs neither.
                    // A full ring loses the wakeup, never the order or its record.
                    if read_global(&FIRED_WAKEUP) != 0 {
                        let _ = FIRED.output::<Fired>(&fired, 0);
                    }
                    st.mark(Mark::Recorded);
                    (Counter::TriggerFired, XDP_TX)
                }
                Shot::Miss => redirect(&ctx, &mut st),
                Shot::NotInSet => {
                    count(Counter::TriggerNotInSet);
                    redirect(&ctx, &mut st)
                }
                Shot::Busy => {
                    count(Counter::TriggerArmBusy);
                    redirect(&ctx, &mut st)
                }
                Shot::NoSegment => {
                    count(Counter::TriggerNoSegment);
                    redirect(&ctx, &mut st)
                }
                // The frame may be half rewritten (addressed to the gateway, say): neither an
                // order nor the tick any more, so it goes nowhere. The trader sees the tick
                // missing and asks for it again.
                Shot::Failed => (Counter::ReflectFailed, XDP_DROP),
            },
            Action::Reflect => match reflect(&ctx, &mut st) {
                Ok(()) => (Counter::Reflected, XDP_TX),
                Err(()) => {
                    if log_allowed() {
                        let len = ctx.data_end() - ctx.data();
                        warn!(
                            &ctx,
                            "reflect failed: frame of {} bytes not turned into an order (no ITCH trade first, an IPv4 length past the frame, or the tail adjustment failed); passed to the kernel",
                            len
                        );
                    }
                    (Counter::ReflectFailed, XDP_PASS)
                }
            },
        },
        Ok(Verdict::Pass(counter)) => (counter, XDP_PASS),
        // Never the feed, never fired on; not passed either: nothing in the kernel listens on
        // the feed's port, so the forger would only get an ICMP error back.
        Ok(Verdict::Foreign(counter)) => (counter, XDP_DROP),
        Ok(Verdict::OrderSession) => match redirect(&ctx, &mut st) {
            (Counter::Redirected, action) => (Counter::OrderSegments, action),
            // Not to the kernel, which has no socket for it and would reset the connection:
            // dropped (counted), and TCP sends it again.
            (counter, _) => (counter, XDP_DROP),
        },
        Ok(Verdict::Recovery) => match Action::from_u8(read_global(&MD_ACTION)) {
            Action::Pass | Action::Reflect => (Counter::PassedMarketData, XDP_PASS),
            _ => redirect(&ctx, &mut st),
        },
        Err(why) => {
            if log_allowed() {
                log_malformed(&ctx, why);
            }
            (Counter::Malformed, XDP_PASS)
        }
    };
    count(counter);
    st.record(counter);
    action
}

#[inline(always)]
fn redirect(ctx: &XdpContext, st: &mut Stamps) -> (Counter, u32) {
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

/// Why a frame was counted as malformed, with the header fields at fault. A plain struct with
/// every field always written, not an enum with payloads: LLVM leaves a payload register the
/// variant lacks undefined, and the verifier refuses to read an uninitialised register.
#[derive(Clone, Copy)]
struct Malformed {
    reason: Reason,
    /// The field at fault (see [`Reason`]).
    field: u16,
    /// A second field, where the reason compares two.
    other: u16,
}

#[derive(Clone, Copy)]
enum Reason {
    /// The frame ends inside a header the checks had to read.
    Truncated,
    /// `field`: the IPv4 version/IHL byte (not version 4, or a header under 20 bytes).
    VersionIhl,
    /// `field`: IPv4 total length, shorter than `other`, the header's own length.
    TotalUnderHeader,
    /// `field`: IPv4 total length, too short to hold a UDP header.
    TotalUnderUdp,
    /// `field`: the UDP length field, under the UDP header's 8 bytes.
    UdpLength,
}

impl Malformed {
    const TRUNCATED: Self = Self::new(Reason::Truncated, 0, 0);

    const fn new(reason: Reason, field: u16, other: u16) -> Self {
        Self {
            reason,
            field,
            other,
        }
    }
}

/// Writes the record for a malformed frame (the caller checked [`log_allowed`]). Inlined: a
/// BPF subprogram can't take the context apart (the verifier forbids arithmetic on packet
/// pointers it receives as arguments).
#[inline(always)]
fn log_malformed(ctx: &XdpContext, why: Malformed) {
    let len = ctx.data_end() - ctx.data();
    let Malformed {
        reason,
        field,
        other,
    } = why;
    match reason {
        Reason::Truncated => {
            error!(
                ctx,
                "malformed frame: {} bytes end inside the Ethernet/IPv4/UDP headers", len
            );
        }
        Reason::VersionIhl => {
            error!(
                ctx,
                "malformed frame: IPv4 version/IHL byte {:x} (want version 4, IHL >= 5), frame {} bytes",
                field,
                len
            );
        }
        Reason::TotalUnderHeader => {
            error!(
                ctx,
                "malformed frame: IPv4 total length {} under its header length {}, frame {} bytes",
                field,
                other,
                len
            );
        }
        Reason::TotalUnderUdp => {
            error!(
                ctx,
                "malformed frame: IPv4 total length {} too short for a UDP header, frame {} bytes",
                field,
                len
            );
        }
        Reason::UdpLength => {
            error!(
                ctx,
                "malformed frame: UDP length {} under 8, frame {} bytes", field, len
            );
        }
    }
}

/// True when logging is on and this CPU is under its rate limit; counts the record as written
/// or suppressed. Reads the clock only here, on the rare paths that log.
#[inline(always)]
fn log_allowed() -> bool {
    if read_global(&XDP_LOG) == 0 {
        return false;
    }
    let Some(state) = LOG_LIMIT.get_ptr_mut(0) else {
        return false;
    };
    // SAFETY: a helper with no arguments; it only reads the clock.
    let now = unsafe { bpf_ktime_get_ns() };
    // SAFETY: the map returned a valid pointer to this CPU's slot; per-CPU, and XDP runs with
    // preemption disabled, so nothing else writes it meanwhile.
    let state = unsafe { &mut *state };
    if now.wrapping_sub(state[0]) >= LOG_WINDOW_NS {
        *state = [now, 0];
    }
    if state[1] >= LOG_BURST {
        count(Counter::LogSuppressed);
        return false;
    }
    state[1] += 1;
    count(Counter::Logged);
    true
}

/// The largest frame the stamp is written into: the lab's MTU and then some. A bound the
/// verifier needs for the variable offset of the trailer.
const STAMP_MAX_FRAME: usize = 2048;

/// Appends the arrival stamp (`xdp_common::STAMP_MAGIC`, then `bpf_ktime_get_ns()`).
#[inline(always)]
fn stamp(ctx: &XdpContext) -> Result<(), ()> {
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

enum Verdict {
    MarketData,
    Pass(Counter),
    /// To the feed's port from a source nobody named: dropped.
    Foreign(Counter),
    /// From the re-request server: to the trader (never fired on, never reflected).
    Recovery,
    /// A segment of the order session: to the trader's userspace TCP.
    OrderSession,
}

/// Reads a header field for [`classify`]: a frame too short for it is [`Reason::Truncated`].
#[inline(always)]
fn header<const N: usize>(ctx: &XdpContext, field: Field) -> Result<[u8; N], Malformed> {
    read_field(ctx, field).map_err(|()| Malformed::TRUNCATED)
}

#[inline(always)]
fn classify(ctx: &XdpContext) -> Result<Verdict, Malformed> {
    let ethertype = u16::from_be_bytes(header(ctx, ethernet::ETHERTYPE)?);
    if ethertype != ethernet::ETHERTYPE_IPV4 {
        return Ok(Verdict::Pass(Counter::PassedNotIpv4));
    }
    let ver_ihl = read::<u8>(ctx, IP + ipv4::VER_IHL).map_err(|()| Malformed::TRUNCATED)?;
    let Some(ihl) = ipv4::header_len(ver_ihl) else {
        return Err(Malformed::new(Reason::VersionIhl, u16::from(ver_ihl), 0));
    };
    let total = u16::from_be_bytes(header(ctx, at(IP, ipv4::TOTAL_LEN))?);
    let total_len = usize::from(total);
    if total_len < ihl {
        return Err(Malformed::new(Reason::TotalUnderHeader, total, ihl as u16));
    }
    let protocol = read::<u8>(ctx, IP + ipv4::PROTOCOL).map_err(|()| Malformed::TRUNCATED)?;
    if protocol != ipv4::PROTOCOL_UDP {
        if protocol == ipv4::PROTOCOL_TCP && order_session(ctx, ihl)? {
            return Ok(Verdict::OrderSession);
        }
        return Ok(Verdict::Pass(Counter::PassedNotUdp));
    }
    if ipv4::is_fragment(u16::from_be_bytes(header(ctx, at(IP, ipv4::FLAGS_FRAG))?)) {
        return Ok(Verdict::Pass(Counter::PassedFragment));
    }
    if ihl != ipv4::HEADER_LEN {
        return Ok(Verdict::Pass(Counter::PassedIpOptions));
    }
    if total_len < ipv4::HEADER_LEN + udp::HEADER_LEN {
        return Err(Malformed::new(Reason::TotalUnderUdp, total, 0));
    }
    let dst_port = u16::from_be_bytes(header(ctx, at(UDP, udp::DST_PORT))?);
    let udp_len = u16::from_be_bytes(header(ctx, at(UDP, udp::LENGTH))?);
    if !udp::length_holds_header(udp_len) {
        return Err(Malformed::new(Reason::UdpLength, udp_len, 0));
    }
    let port_b = read_global(&MD_PORT_B);
    let line = if dst_port == read_global(&MD_PORT) {
        SOURCE_LINE_A
    } else if port_b != 0 && dst_port == port_b {
        SOURCE_LINE_B
    } else {
        return Ok(Verdict::Pass(Counter::PassedOtherPort));
    };
    // The feed's source before anything else about the datagram is believed.
    let src_ip = header::<4>(ctx, at(IP, ipv4::SRC))?;
    let src_port = header::<2>(ctx, at(UDP, udp::SRC_PORT))?;
    match source_check(line, src_ip, src_port) {
        Ok(false) => Ok(Verdict::MarketData),
        Ok(true) => Ok(Verdict::Recovery),
        Err(Foreign::Addr) => Ok(Verdict::Foreign(Counter::ForeignSourceAddr)),
        Err(Foreign::Port) => Ok(Verdict::Foreign(Counter::ForeignSourcePort)),
    }
}

/// Whether a TCP segment is the order session's, to steer to the userspace TCP: the steering
/// on, no IP options or fragment, from the order gateway's address and port, to our address at
/// one of the userspace TCP's ports (above the kernel's ephemeral range). Anything else TCP
/// goes to the kernel as before.
#[inline(always)]
fn order_session(ctx: &XdpContext, ihl: usize) -> Result<bool, Malformed> {
    if read_global(&ORDER_TCP) == 0 || ihl != ipv4::HEADER_LEN {
        return Ok(false);
    }
    if ipv4::is_fragment(u16::from_be_bytes(header(ctx, at(IP, ipv4::FLAGS_FRAG))?)) {
        return Ok(false);
    }
    let src = header::<4>(ctx, at(IP, ipv4::SRC))?;
    let dst = header::<4>(ctx, at(IP, ipv4::DST))?;
    let port = header::<2>(ctx, at(UDP, tcp::SRC_PORT))?;
    let local = u16::from_be_bytes(header::<2>(ctx, at(UDP, tcp::DST_PORT))?);
    Ok(src == read_global(&ORDER_DST_IP)
        && dst == read_global(&ORDER_SRC_IP)
        && port == read_global(&ORDER_DST_PORT)
        && local >= ORDER_TCP_LOCAL_PORTS)
}

/// Whether a datagram to `line`'s port from `addr`:`port` comes from that line's pinned source
/// (or any, while none is pinned) or from the re-request server.
#[inline(always)]
/// `Ok(true)`: the re-request server's (an answer: never the trigger's to fire on).
fn source_check(line: u32, addr: [u8; 4], port: [u8; 2]) -> Result<bool, Foreign> {
    let Some(pinned) = SOURCES_MAP.get(line) else {
        return Ok(false);
    };
    let why = match pinned.check(addr, port) {
        Ok(()) => return Ok(false),
        Err(why) => why,
    };
    match SOURCES_MAP.get(SOURCE_RECOVERY) {
        Some(server) if server.set != 0 && server.check(addr, port).is_ok() => Ok(true),
        _ => Err(why),
    }
}

/// Whether the feed's line A source is pinned: until it is, the trigger's first-arrival mark
/// doesn't move (nothing is armed before the trader has confirmed its feed either).
#[inline(always)]
fn source_pinned() -> bool {
    SOURCES_MAP.get(SOURCE_LINE_A).is_some_and(|s| s.set != 0)
}

/// Where the reflector's input sits in the frame: the MoldUDP64 header right after UDP, and
/// the ITCH trade in its first block.
const MOLD: usize = UDP_PAYLOAD_OFFSET;
const ITCH: usize = MOLD + moldudp64::FIRST_MESSAGE;
/// Where it writes the order: over the start of the MoldUDP64 payload.
const ORDER: usize = UDP_PAYLOAD_OFFSET;
/// The reflector's order buys one lot, as the trader's opening orders do.
const REFLECT_SHARES: u32 = xdp_common::LOT;

/// The order fields the reflector and the trigger write; the rest come from the tick.
struct OrderFields {
    side: u8,
    flags: [u8; 2],
    shares: u32,
    token: [u8; 8],
}

/// Turns a MoldUDP64 packet whose first message is an ITCH trade into an order for that tick
/// (type 'O', buy 100, token = tick_seq = the packet's sequence number, the trade's price and
/// stock), addressed to the configured order gateway, and trims the frame to it. UDP checksum 0 (none:
/// allowed for IPv4), IPv4 header checksum recomputed.
#[inline(always)]
fn reflect(ctx: &XdpContext, st: &mut Stamps) -> Result<(), ()> {
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

/// What the trigger did with a market-data frame.
enum Shot {
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
fn trigger(ctx: &XdpContext, st: &mut Stamps) -> Shot {
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
    // SAFETY: as above; aligned stores of the fields only the program writes, then one byte
    // after one aligned read.
    unsafe {
        core::ptr::write_volatile(core::ptr::addr_of_mut!((*arm).fired_price), price);
        core::ptr::write_volatile(core::ptr::addr_of_mut!((*arm).fired_generation), g1);
        if core::ptr::read_volatile(core::ptr::addr_of!((*arm).arm.generation)) == g1 {
            core::ptr::write_volatile(core::ptr::addr_of_mut!((*arm).arm.armed), 0);
        }
    }
    Shot::Fired(Fired::of(&a, price))
}

/// The arm's fields, each read once (volatile: between the sequence lock's two reads of the
/// generation), the byte arrays as whole words. A volatile read of the whole struct became a
/// load and a stack spill per byte of its arrays (about 50 instructions).
///
/// # Safety
/// `p` points to the [`ARM`] map's arm, which is 8-byte aligned (`ArmSlot`'s alignment, the
/// map value's start), its `stock` and `session` at 8-byte boundaries (`Arm::STOCK_AT`).
#[inline(always)]
unsafe fn read_arm(p: *const Arm) -> Arm {
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
fn one_trade_of(ctx: &XdpContext, a: &Arm) -> bool {
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
fn udp_checksum_ok(ctx: &XdpContext) -> bool {
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
fn headers_intact(ctx: &XdpContext) -> bool {
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
fn one_block_fits(ctx: &XdpContext, count: u16) -> bool {
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

/// Rewrites the frame, whose first message is an ITCH trade, into the order for that tick
/// (`fields`, and the tick's sequence number, price and stock), addressed to the configured
/// order gateway ([`ORDER_TO`]), never to the tick's sender, and trims it to the order. UDP checksum 0 (none: allowed for IPv4), IPv4 header
/// checksum recomputed.
#[inline(always)]
fn write_order(ctx: &XdpContext, fields: &OrderFields) -> Result<(), ()> {
    let dst_port = read_global(&ORDER_DST_PORT);
    if dst_port == [0, 0] {
        // No gateway configured: no order leaves.
        return Err(());
    }
    // The frame's length from its IPv4 total length (the verifier forbids arithmetic on the
    // packet end pointer); checked against the real frame just below.
    let frame_len = IP
        + usize::from(u16::from_be_bytes(read_field(
            ctx,
            at(IP, ipv4::TOTAL_LEN),
        )?));
    // The header's claim must not exceed the frame, or the trim below would cut into the
    // order; masked so the verifier sees a bounded offset.
    if ctx.data() + (frame_len & 0x3fff) > ctx.data_end() {
        return Err(());
    }
    let seq: [u8; 8] = read_field(ctx, at(MOLD, moldudp64::field::SEQUENCE))?;
    let stock: [u8; 8] = read_field(ctx, at(ITCH, trade::field::STOCK))?;
    let price: [u8; 4] = read_field(ctx, at(ITCH, trade::field::PRICE))?;
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

/// Why the armed segment did not leave.
enum Unsent {
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
fn write_segment(ctx: &XdpContext, price: u32, generation: u32) -> Result<(), Unsent> {
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
fn copy_segment(ctx: &XdpContext, slot: *mut SegmentSlot, price: u32) -> Result<(), ()> {
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
unsafe fn add_one(p: *mut u64) {
    // SAFETY: the caller's `p` is an aligned word of a map value.
    unsafe {
        core::intrinsics::atomic_xadd::<u64, u64, { core::intrinsics::AtomicOrdering::SeqCst }>(
            p, 1,
        );
    }
}

/// Reads the `N`-byte field at `field`. A field of another width is an error, not a short
/// read; the widths are constants, so the check compiles away.
#[inline(always)]
fn read_field<const N: usize>(ctx: &XdpContext, field: Field) -> Result<[u8; N], ()> {
    if field.end - field.start != N {
        return Err(());
    }
    read(ctx, field.start)
}

/// Writes the `N`-byte field at `field`, with the same width check as [`read_field`].
#[inline(always)]
fn write_field<const N: usize>(ctx: &XdpContext, field: Field, value: [u8; N]) -> Result<(), ()> {
    if field.end - field.start != N {
        return Err(());
    }
    write(ctx, field.start, value)
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
/// requires. The only way this program reads packet memory itself (the UDP checksum hands a
/// bounds-checked range to `bpf_csum_diff`).
#[inline(always)]
fn read<T: Copy>(ctx: &XdpContext, offset: usize) -> Result<T, ()> {
    // Loaded afresh for every read: the compiler can't carry `end` into arithmetic of its own
    // (adding a value read from the packet to it, say), which the verifier refuses.
    // SAFETY: `ctx.ctx` is the kernel's xdp_md for this run.
    let (start, end) = unsafe {
        (
            core::ptr::read_volatile(core::ptr::addr_of!((*ctx.ctx).data)) as usize,
            core::ptr::read_volatile(core::ptr::addr_of!((*ctx.ctx).data_end)) as usize,
        )
    };
    if start + offset + core::mem::size_of::<T>() > end {
        return Err(());
    }
    let ptr = (start + offset) as *const T;
    // SAFETY: the range [ptr, ptr + size_of::<T>()) lies inside the frame, checked just above;
    // packet data has no alignment guarantee, hence read_unaligned.
    Ok(unsafe { core::ptr::read_unaligned(ptr) })
}

/// Stage timing (`--xdp-stages`, the `xdp-ebpf-stages` object): the clock at each [`Mark`] of
/// the run in progress, kept in this CPU's slot of `STAGE_CLOCKS`. In the untimed object
/// [`TIMED`] is false and none of it is compiled. In `xdp-ebpf-run` (`--xdp-stages=run`)
/// [`STAGE_MARKS`] is false: only the run's start and end are read, so nothing between them
/// waits for a clock read (each is ordered: `LFENCE; RDTSC`), and the whole run lands in the
/// `End` mark's sum.
struct Stamps;

/// Where the calibrating clock read sits in a `STAGE_CLOCKS` entry (after the marks).
const CLOCK_CAL: usize = Mark::COUNT;

impl Stamps {
    /// Starts a run's timing: two marks back to back (the calibration, then `Start`), so the
    /// time between them is what one mark costs: a clock read and its store.
    #[inline(always)]
    fn start() -> Stamps {
        if timing()
            && let Some(at) = STAGE_CLOCKS.get_ptr_mut(0)
        {
            // SAFETY: this CPU's slot of a per-CPU map, which no other program instance
            // writes concurrently; helper calls without arguments.
            unsafe {
                *at = [0; Mark::COUNT + 1];
                (*at)[CLOCK_CAL] = bpf_ktime_get_ns();
                (*at)[Mark::Start as usize] = bpf_ktime_get_ns();
            }
        }
        Stamps
    }

    #[inline(always)]
    fn mark(&mut self, m: Mark) {
        if timing()
            && (STAGE_MARKS || matches!(m, Mark::End))
            && let Some(at) = STAGE_CLOCKS.get_ptr_mut(0)
        {
            // SAFETY: as in `start`.
            unsafe { (*at)[m as usize] = bpf_ktime_get_ns() };
        }
    }

    /// Ends the run's timing and adds its stages to `STAGES` under the outcome `counter` says.
    #[inline(always)]
    fn record(&mut self, counter: Counter) {
        if !timing() {
            return;
        }
        self.mark(Mark::End);
        let outcome = match counter {
            Counter::Redirected if Action::from_u8(read_global(&MD_ACTION)) == Action::Trigger => {
                Outcome::TriggerRedirected
            }
            Counter::Redirected => Outcome::Redirected,
            Counter::Reflected => Outcome::Reflected,
            Counter::TriggerFired => Outcome::Fired,
            _ => Outcome::Other,
        };
        let Some(at) = STAGE_CLOCKS.get_ptr(0) else {
            return;
        };
        let Some(sums) = STAGES.get_ptr_mut(outcome as u32) else {
            return;
        };
        // SAFETY: this CPU's slots of per-CPU maps, which no other program instance writes
        // concurrently.
        let (at, sums) = unsafe { (&*at, &mut *sums) };
        sums[0] += 1;
        sums[1 + Mark::Start as usize] += at[Mark::Start as usize].wrapping_sub(at[CLOCK_CAL]);
        let mut prev = at[Mark::Start as usize];
        let mut i = 1;
        while i < Mark::COUNT {
            let t = at[i];
            if t != 0 {
                sums[1 + i] += t.wrapping_sub(prev);
                prev = t;
            }
            i += 1;
        }
    }
}

/// Whether stage timing is compiled in: the `xdp-ebpf-stages` object's [`TIMED`].
#[inline(always)]
fn timing() -> bool {
    TIMED
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
