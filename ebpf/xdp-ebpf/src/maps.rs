//! The program's maps and load-time globals: what userspace sets before the program is
//! verified (`#[no_mangle]` statics in `.rodata`) and the maps both sides read and write.

use aya_ebpf::{
    macros::map,
    maps::{Array, HashMap, PerCpuArray, RingBuf, XskMap},
};
use xdp_common::{
    ArmSlot, BPF_F_MMAPABLE, Counter, MAX_QUEUES, Mark, Outcome, SOURCES, STAGE_WORDS, Source,
    book_trigger::{FIRING_ENTRIES, FiredPacket},
    filter::{ClaimSlots, FILTER_ENTRIES, LOCATE_WORDS, Run},
    segment::SegmentSlot,
};

/// The market-data destination port, host byte order; set by userspace at load time.
#[unsafe(no_mangle)]
pub(crate) static MD_PORT: u16 = 0;

/// The second market-data port (line B of an A/B feed), host byte order; 0: none. Set by
/// userspace at load time.
#[unsafe(no_mangle)]
pub(crate) static MD_PORT_B: u16 = 0;

/// What to do with market-data frames, an [`xdp_common::Action`] as a byte; set by userspace at load time.
#[unsafe(no_mangle)]
pub(crate) static MD_ACTION: u8 = 0;

/// Logging on (1) or off (0); set by userspace at load time (`trader --xdp-log`).
#[unsafe(no_mangle)]
pub(crate) static XDP_LOG: u8 = 0;

/// The trigger wakes a reader sleeping on `FIRED` (1) or not (0); set by userspace at load
/// time (`trader --path trigger --wait block` sets it).
#[unsafe(no_mangle)]
pub(crate) static FIRED_WAKEUP: u8 = 0;

/// Where the program's own orders go (reflector and trigger), field by field (an
/// [`xdp_common::OrderTo`]), set by userspace at load time from the configured order gateway.
/// A zero port: nowhere (nothing is fired or reflected); a frame is never sent back to
/// whoever sent it.
#[unsafe(no_mangle)]
pub(crate) static ORDER_DST_MAC: [u8; 6] = [0; 6];
#[unsafe(no_mangle)]
pub(crate) static ORDER_SRC_MAC: [u8; 6] = [0; 6];
#[unsafe(no_mangle)]
pub(crate) static ORDER_SRC_IP: [u8; 4] = [0; 4];
#[unsafe(no_mangle)]
pub(crate) static ORDER_DST_IP: [u8; 4] = [0; 4];
#[unsafe(no_mangle)]
pub(crate) static ORDER_DST_PORT: [u8; 2] = [0; 2];
/// 1: the order session's TCP segments (from `ORDER_DST_IP`:`ORDER_DST_PORT` to
/// `ORDER_SRC_IP`) go into the AF_XDP socket, for the trader's userspace TCP.
#[unsafe(no_mangle)]
pub(crate) static ORDER_TCP: u8 = 0;
/// 1: the trigger fires the order session's armed TCP segment (`SEGMENT`), not the lab's UDP
/// order; set by userspace at load time (`trader --path trigger --orders tcp-xdp`).
#[unsafe(no_mangle)]
pub(crate) static TRIGGER_TCP: u8 = 0;

/// The TCP trigger's armed segment, written in place by the trader's userspace TCP between
/// ticks (it maps the array), with the claim words that keep the program and the stack from
/// sending at the same sequence number (`xdp_common::segment`).
/// The userspace TCP's live local port (`xdp_common::MAP_ORDER_PORT`; 0: none).
#[map(name = "ORDER_PORT")]
pub(crate) static ORDER_PORT: Array<u32> = Array::with_max_entries(1, 0);

#[map(name = "SEGMENT")]
pub(crate) static SEGMENT: Array<SegmentSlot> = Array::with_max_entries(1, BPF_F_MMAPABLE);

/// The feed's pinned sources (line A, line B, the re-request server), written by userspace at
/// start (`--feed-source`) or when the trader has confirmed the feed it learned. A market-data
/// frame from any other source is dropped and counted; an entry not set yet passes everything.
#[map(name = "SOURCES")]
pub(crate) static SOURCES_MAP: Array<Source> = Array::with_max_entries(SOURCES, 0);

/// Each CPU's log rate limit: `[window start ns, records written in the window]`.
#[map(name = "LOG_LIMIT")]
pub(crate) static LOG_LIMIT: PerCpuArray<[u64; 2]> = PerCpuArray::with_max_entries(1, 0);

/// The armed order (`Action::Trigger`), written in place by userspace between ticks (it maps
/// the array) under a sequence lock (`Arm::generation`).
#[map(name = "ARM")]
pub(crate) static ARM: Array<ArmSlot> = Array::with_max_entries(1, BPF_F_MMAPABLE);

/// The trigger's own record of the armed session's sequence numbers: one past the highest it
/// has seen (capped at `TRIGGER_NEAR` past the arm). Written only by the program: an arm fires
/// only on the first arrival of its number, never on a copy (a duplicate, a late or reordered
/// packet) nor after its tick went to the trader unfired.
#[map(name = "TRIGGER_NEXT")]
pub(crate) static TRIGGER_NEXT: Array<u64> = Array::with_max_entries(1, 0);

/// The trader's MAC and IPv4 address (6 + 4 bytes): the trigger fires only on frames addressed
/// to them (all zero: not checked); set by userspace at load time.
#[unsafe(no_mangle)]
pub(crate) static TRIGGER_DST: [u8; 10] = [0; 10];

/// A `Fired` record per order sent, written only when a blocking trader must be woken
/// (`FIRED_WAKEUP`): its wakeup is what rouses the trader; what fired is read from `ARM`.
#[map(name = "FIRED")]
pub(crate) static FIRED: RingBuf = RingBuf::with_byte_size(1 << 16, 0);

#[map(name = "XSKS")]
pub(crate) static XSKS: XskMap = XskMap::with_max_entries(MAX_QUEUES, 0);

/// Stage timing's sums, per outcome ([`xdp_common::StageSums`] as words); written only by the
/// timed object.
#[map(name = "STAGES")]
pub(crate) static STAGES: PerCpuArray<[u64; STAGE_WORDS]> =
    PerCpuArray::with_max_entries(Outcome::COUNT, 0);

/// Stage timing's clock at each mark of the run in progress (and the calibrating read last).
#[map(name = "STAGE_CLOCKS")]
pub(crate) static STAGE_CLOCKS: PerCpuArray<[u64; Mark::COUNT + 1]> =
    PerCpuArray::with_max_entries(1, 0);

#[map(name = "COUNTERS")]
pub(crate) static COUNTERS: PerCpuArray<u64> = PerCpuArray::with_max_entries(Counter::COUNT, 0);

/// The driver filter compiled in (1) or out (0); set by userspace at load time (the xdp path
/// with `--symbols` on a one-line feed). Off, the verifier prunes every filter instruction.
#[unsafe(no_mangle)]
pub(crate) static FILTER_ON: u8 = 0;

/// The stock locates the trader keeps, one bit each (`xdp_common::filter::MAP_LOCATES`).
#[map(name = "LOCATES")]
pub(crate) static LOCATES: Array<u64> = Array::with_max_entries(LOCATE_WORDS, 0);

/// The filter's arming: the confirmed session, then the armed word (`xdp_common::filter`).
#[map(name = "FILTER")]
pub(crate) static FILTER: Array<u64> = Array::with_max_entries(FILTER_ENTRIES, 0);

/// Line A's run of dropped packets: written only by the program, from the one RX queue (one
/// NAPI, one CPU at a time) the line's flow lands on.
#[map(name = "FILTER_RUN")]
pub(crate) static FILTER_RUN: Array<Run> = Array::with_max_entries(1, 0);

/// The claims of the packets passed, by first number (`xdp_common::filter::MAP_CLAIMS`),
/// mapped by the trader.
#[map(name = "CLAIMS")]
pub(crate) static CLAIMS: Array<ClaimSlots> = Array::with_max_entries(1, BPF_F_MMAPABLE);

/// The trigger fires through the firing set on a full-depth feed (xdp_common::book_trigger).
#[unsafe(no_mangle)]
pub(crate) static TRIGGER_BOOK: u8 = 0;

/// Resting orders of the traded stock: reference → price and open shares
/// (xdp_common::book_trigger::firing_value).
#[map(name = "FIRING")]
pub(crate) static FIRING: HashMap<u64, u64> = HashMap::with_max_entries(FIRING_ENTRIES, 0);

/// The traded stock's locate plus one (0: not resolved).
#[map(name = "FIRING_STOCK")]
pub(crate) static FIRING_STOCK: Array<u64> = Array::with_max_entries(1, 0);

/// The last fired packet's datagram, for the trader.
#[map(name = "FIRED_PACKET")]
pub(crate) static FIRED_PACKET: Array<FiredPacket> = Array::with_max_entries(1, BPF_F_MMAPABLE);
