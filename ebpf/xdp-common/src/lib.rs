//! What the XDP program (`xdp-ebpf`) and userspace share.
//!
//! Everything here is `#![no_std]` and dependency-free, so the eBPF build never pulls in std.
//! The maps hold plain `u64`s (already `aya::Pod`); names and indices live here so the two sides
//! can't disagree. So do the wire formats' byte layout ([`layout`], which the `wire` codecs
//! re-export) and the Internet checksum ([`checksum`]).
#![no_std]
#![forbid(unsafe_code)]

pub mod book_trigger;
pub mod checksum;
pub mod filter;
pub mod layout;
pub mod segment;

/// Name of the global (in `.rodata`) that holds the market-data UDP destination port, in host
/// byte order. Userspace sets it at load time with `EbpfLoader::override_global`.
pub const GLOBAL_MD_PORT: &str = "MD_PORT";

/// Name of the global that holds the second market-data port (line B of an A/B feed), host
/// byte order; 0: one line only.
pub const GLOBAL_MD_PORT_B: &str = "MD_PORT_B";

/// Name of the global that selects what the program does with a market-data frame
/// (see [`Action`]).
pub const GLOBAL_ACTION: &str = "MD_ACTION";

/// The load-time global that turns the program's logging on (1) or off (0, the default): with
/// it off the verifier sees the logging code as dead and removes it.
pub const GLOBAL_XDP_LOG: &str = "XDP_LOG";

/// The load-time global that makes the trigger wake a reader sleeping on its ring of fired
/// orders (1), or not (0, the default: a spinning reader needs no wakeup, and the wakeup is an
/// interrupt raised inside the program's run, before the order leaves).
pub const GLOBAL_FIRED_WAKEUP: &str = "FIRED_WAKEUP";

/// The load-time global holding the trader's MAC and IPv4 address (6 + 4 bytes): the trigger
/// fires only on frames addressed to them (all zero, the default: not checked).
pub const GLOBAL_TRIGGER_DST: &str = "TRIGGER_DST";

/// The load-time globals holding where the program's own orders go (the reflector's and the
/// trigger's `XDP_TX`), one per header field of an [`OrderTo`]: the next hop's MAC, ours, our
/// IPv4 address, the gateway's, and its UDP port (big-endian). A zero port (the default):
/// nowhere, and the program fires and reflects nothing (a frame is never sent back to
/// whoever sent it).
pub const GLOBAL_ORDER_DST_MAC: &str = "ORDER_DST_MAC";
/// See [`GLOBAL_ORDER_DST_MAC`].
pub const GLOBAL_ORDER_SRC_MAC: &str = "ORDER_SRC_MAC";
/// See [`GLOBAL_ORDER_DST_MAC`].
pub const GLOBAL_ORDER_SRC_IP: &str = "ORDER_SRC_IP";
/// See [`GLOBAL_ORDER_DST_MAC`].
pub const GLOBAL_ORDER_DST_IP: &str = "ORDER_DST_IP";
/// See [`GLOBAL_ORDER_DST_MAC`].
pub const GLOBAL_ORDER_DST_PORT: &str = "ORDER_DST_PORT";
/// The first local port of the userspace TCP's order session (`trader --orders tcp-xdp`):
/// above Linux's default ephemeral range (32768-60999), so the XDP program steers to the
/// userspace TCP no segment of a connection the kernel made to the same gateway.
pub const ORDER_TCP_LOCAL_PORTS: u16 = 61_000;
/// Global (u8): 1 steers TCP from the order gateway (`ORDER_DST_IP`, `ORDER_DST_PORT`, from
/// its MAC `ORDER_DST_MAC`) to us (`ORDER_SRC_IP`) at the live connection's local port
/// ([`MAP_ORDER_PORT`]) into the AF_XDP socket: the order session of a userspace TCP stack.
/// Every other segment from the gateway's address and port, and any from its address with IP
/// options or fragmented, is dropped and counted ([`Counter::OrderSegmentsDropped`]): the
/// trader's kernel has no socket for it and would answer it with an RST of its own.
pub const GLOBAL_ORDER_TCP: &str = "ORDER_TCP";
/// Array map (1 entry, u32): the userspace TCP's live local port, written by the trader at each
/// connect before its SYN leaves (0: no connection, nothing steered).
pub const MAP_ORDER_PORT: &str = "ORDER_PORT";

/// The configured order gateway, as the program writes it into the headers of every order it
/// sends: never taken from the tick it answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OrderTo {
    /// The next hop's MAC (the gateway's, or its router's), resolved by userspace at start.
    pub dst_mac: [u8; 6],
    /// Our MAC.
    pub src_mac: [u8; 6],
    /// Our IPv4 address.
    pub src_ip: [u8; 4],
    /// The gateway's IPv4 address.
    pub dst_ip: [u8; 4],
    /// The gateway's UDP port, big-endian.
    pub dst_port: [u8; 2],
}

/// The array map of the feed's pinned sources ([`Source`]), indexed by [`SOURCE_LINE_A`],
/// [`SOURCE_LINE_B`] and [`SOURCE_RECOVERY`]. A market-data frame to line A's port must come
/// from line A's source or the re-request server; line B's likewise. An entry not set yet
/// (`set == 0`) accepts any source: the trader is learning it, and checks it itself.
pub const MAP_SOURCES: &str = "SOURCES";
/// [`MAP_SOURCES`]'s entry for line A (the only line of a one-line feed).
pub const SOURCE_LINE_A: u32 = 0;
/// [`MAP_SOURCES`]'s entry for line B of an A/B feed.
pub const SOURCE_LINE_B: u32 = 1;
/// [`MAP_SOURCES`]'s entry for the exchange's re-request server (its answers come to the
/// feed's port).
pub const SOURCE_RECOVERY: u32 = 2;
/// Entries in [`MAP_SOURCES`].
pub const SOURCES: u32 = 3;

/// One pinned source: an IPv4 address and a UDP port (0: any port of that address). 8 bytes,
/// no padding.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Source {
    /// The IPv4 address, as on the wire.
    pub addr: [u8; 4],
    /// The UDP port, as on the wire (big-endian); `[0, 0]`: any.
    pub port: [u8; 2],
    /// 1: pinned; 0: not yet (any source passes).
    pub set: u8,
    /// Zero.
    pub pad: u8,
}

/// Why a frame's source is not the one pinned for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Foreign {
    /// Another IPv4 address.
    Addr,
    /// The pinned address, another port.
    Port,
}

impl Source {
    /// Pinned to `addr` and `port` (as on the wire; `[0, 0]`: any port).
    #[must_use]
    pub const fn pinned(addr: [u8; 4], port: [u8; 2]) -> Self {
        Self {
            addr,
            port,
            set: 1,
            pad: 0,
        }
    }

    /// The map value's bytes.
    #[must_use]
    pub const fn to_bytes(&self) -> [u8; 8] {
        [
            self.addr[0],
            self.addr[1],
            self.addr[2],
            self.addr[3],
            self.port[0],
            self.port[1],
            self.set,
            self.pad,
        ]
    }

    /// Whether a datagram from `addr`:`port` (as on the wire) is from this source: always when
    /// nothing is pinned.
    #[inline(always)]
    pub fn check(&self, addr: [u8; 4], port: [u8; 2]) -> Result<(), Foreign> {
        if self.set == 0 {
            return Ok(());
        }
        if addr != self.addr {
            return Err(Foreign::Addr);
        }
        if self.port != [0, 0] && port != self.port {
            return Err(Foreign::Port);
        }
        Ok(())
    }
}

/// Stage timing (`trader --xdp-stages`): the program built again with it compiled in
/// (`xdp-ebpf-stages`), which reads the clock at each [`Mark`] of a run and adds the time
/// between marks to [`MAP_STAGES`], or (`xdp-ebpf-run`, `--xdp-stages=run`) at the run's start
/// and end only, the whole run under its last mark; the object loaded otherwise has none of
/// it.
///
/// The per-CPU array of [`StageSums`], one per [`Outcome`].
pub const MAP_STAGES: &str = "STAGES";

/// The points of a run where the timed program reads the clock, in program order. A stage is
/// the time from the previous mark the run passed to this one (`Start`'s is what one mark
/// costs, a clock read and its store: two marks back to back at the run's start, the figure
/// every other stage includes once).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// The run's start (after the calibrating mark).
    Start = 0,
    /// `classify` done: headers checked, the port and the feed's source looked up.
    Classified,
    /// Trigger: the arm read under its sequence lock, the MoldUDP64 header read.
    ArmRead,
    /// Trigger: the checks every mark-moving packet passes: the source pinned, the headers
    /// addressed to the trader with a right IPv4 checksum, the block framed.
    Intact,
    /// Trigger: the UDP checksum, when the packet is the armed tick.
    Checksummed,
    /// Trigger: the mark moved (with the UDP checksum first, if it would move far).
    Checked,
    /// Trigger: the tick matched to the arm (one trade of the armed stock, price in the set).
    Matched,
    /// The order written into the frame, the frame trimmed (trigger and reflector).
    Ordered,
    /// Trigger: what fired recorded in the [`ArmSlot`] and the arm consumed (and, when the
    /// trader blocks, a [`Fired`] written to [`MAP_FIRED`] to wake it).
    Recorded,
    /// The frame redirected to the AF_XDP socket (`bpf_redirect_map`).
    Redirected,
    /// The run's end: its outcome counted, about to return.
    End,
}

impl Mark {
    /// Number of marks: the length of [`StageSums::ns`].
    pub const COUNT: usize = 11;

    /// Every mark, in program order.
    pub const ALL: [Mark; Self::COUNT] = [
        Mark::Start,
        Mark::Classified,
        Mark::ArmRead,
        Mark::Intact,
        Mark::Checksummed,
        Mark::Checked,
        Mark::Matched,
        Mark::Ordered,
        Mark::Recorded,
        Mark::Redirected,
        Mark::End,
    ];

    /// A stable snake-case name for the stage that ends at this mark, for reports.
    pub const fn stage_name(self) -> &'static str {
        match self {
            Mark::Start => "clock_read",
            Mark::Classified => "classify",
            Mark::ArmRead => "arm_read",
            Mark::Intact => "header_checks",
            Mark::Checksummed => "udp_checksum",
            Mark::Checked => "mark_move",
            Mark::Matched => "match",
            Mark::Ordered => "order_write",
            Mark::Recorded => "record",
            Mark::Redirected => "redirect",
            Mark::End => "count_and_return",
        }
    }
}

/// What a timed run did, the index into [`MAP_STAGES`].
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Market data redirected to the AF_XDP socket by the xdp path's program.
    Redirected = 0,
    /// The trigger's program: a tick not fired, redirected to the trader.
    TriggerRedirected,
    /// The reflector's order sent (`XDP_TX`).
    Reflected,
    /// The trigger's order fired (`XDP_TX`).
    Fired,
    /// Anything else: passed, dropped, failed.
    Other,
}

impl Outcome {
    /// Number of outcomes: the map's `max_entries`.
    pub const COUNT: u32 = 5;

    /// Every outcome, in index order.
    pub const ALL: [Outcome; Self::COUNT as usize] = [
        Outcome::Redirected,
        Outcome::TriggerRedirected,
        Outcome::Reflected,
        Outcome::Fired,
        Outcome::Other,
    ];

    /// A stable snake-case name, for reports.
    pub const fn name(self) -> &'static str {
        match self {
            Outcome::Redirected => "redirected",
            Outcome::TriggerRedirected => "trigger_redirected",
            Outcome::Reflected => "reflected",
            Outcome::Fired => "fired",
            Outcome::Other => "other",
        }
    }
}

/// The words of one [`MAP_STAGES`] entry: the runs, then a sum per [`Mark`] (plain `u64`s, as
/// every map of the program holds).
pub const STAGE_WORDS: usize = 1 + Mark::COUNT;

/// One CPU's timed runs of one [`Outcome`]: how many, and the nanoseconds each stage took in
/// all (indexed by the [`Mark`] that ends it; 0 for a stage those runs never pass).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageSums {
    /// Timed runs.
    pub runs: u64,
    /// Nanoseconds per stage, summed over the runs.
    pub ns: [u64; Mark::COUNT],
}

impl StageSums {
    /// Reads a [`MAP_STAGES`] entry.
    pub fn from_words(w: &[u64; STAGE_WORDS]) -> Self {
        let mut ns = [0; Mark::COUNT];
        ns.copy_from_slice(&w[1..]);
        StageSums { runs: w[0], ns }
    }

    /// Adds another CPU's sums.
    pub fn add(&mut self, other: &StageSums) {
        self.runs += other.runs;
        for (a, b) in self.ns.iter_mut().zip(other.ns) {
            *a += b;
        }
    }
}

/// The per-CPU array holding each CPU's log rate-limit state: `[window start ns, records in
/// the window]`.
pub const MAP_LOG_LIMIT: &str = "LOG_LIMIT";

/// Log records one CPU may write per [`LOG_WINDOW_NS`]; the rest are counted
/// ([`Counter::LogSuppressed`]), so a flood of bad frames can't flood the log.
pub const LOG_BURST: u64 = 20;

/// The rate limit's window: one second.
pub const LOG_WINDOW_NS: u64 = 1_000_000_000;

/// Name of the per-CPU counter array.
pub const MAP_COUNTERS: &str = "COUNTERS";

/// Name of the XSKMAP, indexed by RX queue.
pub const MAP_XSKS: &str = "XSKS";

/// Name of the XDP program in the object.
pub const PROG_NAME: &str = "md_redirect";

/// Shares per order that opens a position (a reversal sends twice this): the trader's lot, and
/// what the reflector's order-shaped reply carries.
pub const LOT: u32 = 100;

/// The exchange's order port in the lab (`netns::lab::ORDER_PORT` is this): the trader's
/// default order gateway's port (the program's own orders go to whatever gateway userspace
/// configures, [`OrderTo`]).
pub const ORDER_PORT: u16 = 26401;

/// Entries in the XSKMAP: one per RX queue the program may see.
pub const MAX_QUEUES: u32 = 64;

/// What the program does with a frame of the market-data flow.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Redirect into the AF_XDP socket of the frame's RX queue (the trader's path).
    Redirect = 0,
    /// Pass to the kernel stack (the kernel-UDP path still sees the program's counters).
    Pass = 1,
    /// The lab's floor: turn the tick into an order in the driver, addressed to the
    /// configured gateway ([`OrderTo`]), and send it with `XDP_TX` (no userspace at all).
    Reflect = 2,
    /// As [`Action::Redirect`], with the frame's arrival time appended first: a
    /// [`STAMP_LEN`]-byte trailer ([`STAMP_MAGIC`], then `bpf_ktime_get_ns()` as a
    /// little-endian u64, CLOCK_MONOTONIC) after the frame's last byte. For the exchange side,
    /// whose measurement must not wait for its own loop to read the frame.
    RedirectStamped = 3,
    /// The pre-armed trigger: a single-trade MoldUDP64 packet of the armed session and
    /// sequence number whose price is in the armed set is rewritten into the armed order to
    /// the configured gateway and sent with `XDP_TX`, the arm consumed and what fired recorded in
    /// its [`ArmSlot`] (and a [`Fired`] written to [`MAP_FIRED`] to wake a blocking trader);
    /// every other market-data frame is redirected as [`Action::Redirect`].
    Trigger = 4,
}

/// The array map (one entry) holding the [`ArmSlot`]: the [`Arm`] and the record of what last
/// fired; memory-mapped by userspace ([`BPF_F_MMAPABLE`]), so arming is a few stores, not a
/// system call, and reading what fired is a load.
pub const MAP_ARM: &str = "ARM";

/// A map flag: userspace may `mmap` the array's values.
pub const BPF_F_MMAPABLE: u32 = 1 << 10;
/// The ring buffer of [`Fired`] records, written only for a reader that sleeps (`FIRED_WAKEUP`):
/// the record wakes it. A spinning reader reads what fired from the [`ArmSlot`] instead: the
/// ring's producer and consumer lines, bouncing between the program's CPU and the reader's,
/// cost the fired run about 300 ns (measured with `--xdp-stages`).
pub const MAP_FIRED: &str = "FIRED";

/// The order armed for one tick (the [`Action::Trigger`] path), written by userspace between
/// ticks, read by the program. Keyed by sequence number, so an arm can only fire on the tick
/// it was computed for; consumed (`armed = 0`) when it fires. Byte arrays and integers only,
/// no padding the compiler could leave undefined: 56 bytes.
///
/// Userspace writes it in place (the map is memory-mapped) under a sequence lock: `generation` odd
/// while it writes, even when done. The program reads `generation`, the arm, and `generation` again, and
/// fires only when both reads are the same even number: an arm is never used half-written
/// (the tick then goes to the trader, counted as `trigger_arm_busy`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Arm {
    /// The MoldUDP64 sequence number of the tick it may fire on.
    pub seq: u64,
    /// The order's token.
    pub token: u64,
    /// The price threshold, Price(4), included in the set.
    pub threshold: u32,
    /// The order's shares.
    pub shares: u32,
    /// The stock the trade must be of (the order's stock). At an 8-byte boundary, as
    /// `session` is: the program reads both as whole words ([`Arm::STOCK_AT`]).
    pub stock: [u8; 8],
    /// The MoldUDP64 session the packet must carry.
    pub session: [u8; 10],
    /// 1: armed; 0: nothing armed (or consumed).
    pub armed: u8,
    /// [`ARM_AT_OR_ABOVE`] or [`ARM_AT_OR_BELOW`].
    pub direction: u8,
    /// The order's side, `b'B'` or `b'S'`.
    pub side: u8,
    /// The order's flags, big-endian as on the wire.
    pub flags: [u8; 2],
    /// Zero.
    pub pad: [u8; 5],
    /// The write generation: odd while userspace writes the arm, even once it is whole.
    pub generation: u32,
}

/// The value of the [`MAP_ARM`] array: the [`Arm`] userspace writes, in the first cache line of
/// the mapped page, and the record of the last order the program fired, which the program
/// writes and userspace reads, in the second. 128 bytes.
///
/// Two lines, so that the trader's spinning on the record never pulls the arm's line back to
/// its core: once it has written an arm, the trader can push that line out of its own caches
/// (x86's `CLDEMOTE`, where the CPU has it) and the program's read of it, the first access of
/// every trigger run, is then served by the shared cache rather than by snooping the trader's
/// core. The program's stores (the record, the consumed `armed`) wait in its store buffer,
/// off the run itself but not off the order's path: `XDP_TX` takes a lock after the run, which
/// waits for them. So a spinning trader reads the record's line only now and then and demotes
/// it after each read, and the program's store finds that line in the shared cache too (72-85
/// ns waited with the line in the trader's core, 37-39 with it demoted, measured with a
/// locked add after the stores in a timed build). Moving the record into the arm's line (its
/// 8 spare bytes), so that a fire takes one line for writing rather than two, was measured
/// on 2026-12-07 and made the fired run slower, 278-317 ns against 233-238 ns
/// (docs/results/2026-12-07-fired-record-line-intel-2vcpu): the trader's reads of the record
/// then bring the arm's line back to its core, where the program's next read snoops it.
///
/// The record is the fired arm's generation and the tick's price: the rest of the order is the
/// arm userspace wrote with that generation, which it keeps. The program writes the price,
/// then the generation; userspace reads the generation (acquire), then the price. A reader
/// that sleeps is woken by a [`Fired`] in [`MAP_FIRED`] as well (`FIRED_WAKEUP`); one that
/// spins reads the record's line and nothing else.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArmSlot {
    /// Written by userspace only (under its sequence lock), read by the program; the program
    /// clears `armed` when it fires.
    pub arm: Arm,
    /// Zero: the rest of the arm's line.
    pub arm_pad: [u8; 8],
    /// Written by the program only: the generation of the last arm it fired (0: none yet).
    pub fired_generation: u32,
    /// Written by the program only: the price of the tick it fired that arm on, Price(4).
    pub fired_price: u32,
    /// Written by the program only, before `fired_generation`: the number of the message it
    /// fired on (the arm's own on the ticker; on a full-depth feed the print's, in the packet
    /// that starts at the arm's number: [`book_trigger`]).
    pub fired_seq: u64,
    /// Zero: the rest of the record's line.
    pub fired_pad: [u64; 6],
}

/// [`Arm::direction`]: fire when the price is at or above the threshold.
pub const ARM_AT_OR_ABOVE: u8 = 0;
/// [`Arm::direction`]: fire when the price is at or below the threshold.
pub const ARM_AT_OR_BELOW: u8 = 1;

// The program reads `stock` and `session` as aligned words (`read_arm` in xdp-ebpf): checked
// where both builds see it, not only by a host test.
const _: () = {
    assert!(Arm::STOCK_AT.is_multiple_of(8));
    assert!(Arm::SESSION_AT.is_multiple_of(8));
    assert!(core::mem::align_of::<ArmSlot>() == 8);
    assert!(core::mem::offset_of!(ArmSlot, arm) == 0);
};

impl Arm {
    /// Where `stock` lies in the arm: an 8-byte boundary, so the program reads it as one word.
    pub const STOCK_AT: usize = core::mem::offset_of!(Arm, stock);
    /// Where `session` lies: an 8-byte boundary, so the program reads it as a word and a half
    /// word (10 bytes).
    pub const SESSION_AT: usize = core::mem::offset_of!(Arm, session);

    /// Whether `price` (Price(4)) is in the armed set.
    #[must_use]
    pub const fn contains(&self, price: u32) -> bool {
        if self.direction == ARM_AT_OR_BELOW {
            price <= self.threshold
        } else {
            price >= self.threshold
        }
    }
}

/// What the program did on [`Action::Trigger`]'s path: one record per fired order, the
/// order's fields as it wrote them and the tick's sequence number and price. 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fired {
    /// The tick's (and the arm's) sequence number.
    pub seq: u64,
    /// The order's token.
    pub token: u64,
    /// The tick's price, Price(4).
    pub price: u32,
    /// The order's shares.
    pub shares: u32,
    /// The order's side.
    pub side: u8,
    /// The order's flags, big-endian.
    pub flags: [u8; 2],
    /// Zero.
    pub pad: [u8; 5],
}

impl Fired {
    /// Its size, as the ring buffer carries it.
    pub const LEN: usize = 32;

    /// What firing `arm` on a tick at `price` (Price(4)) sent: the program's record, and what
    /// the trader rebuilds from the arm's generation and price in the [`ArmSlot`].
    #[must_use]
    pub const fn of(arm: &Arm, price: u32) -> Self {
        Self::at(arm, arm.seq, price)
    }

    /// What firing `arm` on the message numbered `seq` at `price` sent (a full-depth feed's
    /// print, in the packet that starts at the arm's number).
    #[must_use]
    pub const fn at(arm: &Arm, seq: u64, price: u32) -> Self {
        Self {
            seq,
            token: arm.token,
            price,
            shares: arm.shares,
            side: arm.side,
            flags: arm.flags,
            pad: [0; 5],
        }
    }

    /// Reads a record from the ring buffer's bytes (native endian, as the program wrote it).
    #[must_use]
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        let b: &[u8; Self::LEN] = b.get(..Self::LEN)?.try_into().ok()?;
        let u64_at = |i: usize| {
            let mut w = [0; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_ne_bytes(w)
        };
        let u32_at = |i: usize| {
            let mut w = [0; 4];
            w.copy_from_slice(&b[i..i + 4]);
            u32::from_ne_bytes(w)
        };
        Some(Self {
            seq: u64_at(0),
            token: u64_at(8),
            price: u32_at(16),
            shares: u32_at(20),
            side: b[24],
            flags: [b[25], b[26]],
            pad: [0; 5],
        })
    }
}

/// The arrival stamp's length: magic, then nanoseconds.
pub const STAMP_LEN: usize = 12;
/// What starts an arrival stamp, so a frame the program could not grow is told from a stamped
/// one.
pub const STAMP_MAGIC: [u8; 4] = *b"T2TS";

/// The arrival time stamped at the end of `frame` (Ethernet, IPv4) by
/// [`Action::RedirectStamped`], if there is one (CLOCK_MONOTONIC ns): the trailer must start
/// exactly where the IPv4 datagram ends, so the last bytes of an unstamped frame are never
/// read as a stamp.
pub fn arrival_stamp(frame: &[u8]) -> Option<u64> {
    let len_at = layout::at(layout::ethernet::HEADER_LEN, layout::ipv4::TOTAL_LEN);
    let total = frame.get(len_at)?;
    let ip_end =
        layout::ethernet::HEADER_LEN + usize::from(u16::from_be_bytes([total[0], total[1]]));
    if frame.len() != ip_end + STAMP_LEN {
        return None;
    }
    let at = ip_end;
    let (magic, ns) = frame.get(at..)?.split_at(4);
    if magic != STAMP_MAGIC {
        return None;
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(ns);
    Some(u64::from_le_bytes(b))
}

impl Action {
    /// Decodes the byte stored in [`GLOBAL_ACTION`]; unknown values mean [`Action::Pass`], the
    /// safe choice.
    pub const fn from_u8(v: u8) -> Self {
        match v {
            0 => Action::Redirect,
            2 => Action::Reflect,
            3 => Action::RedirectStamped,
            4 => Action::Trigger,
            _ => Action::Pass,
        }
    }
}

/// Per-CPU counters, each a `u64` slot in [`MAP_COUNTERS`].
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// Market-data frames redirected into an AF_XDP socket.
    Redirected = 0,
    /// Market-data frames whose redirect failed (no socket bound on that queue).
    RedirectFailed,
    /// Market-data frames passed to the kernel because the action is [`Action::Pass`].
    PassedMarketData,
    /// Frames that are not IPv4 (ARP, IPv6, VLAN-tagged, ...), passed.
    PassedNotIpv4,
    /// IPv4 frames that are not UDP, passed.
    PassedNotUdp,
    /// UDP to another port, passed.
    PassedOtherPort,
    /// IPv4 fragments (any offset or more-fragments set), passed: only the first fragment carries
    /// the UDP header, so the flow can't be told from the rest.
    PassedFragment,
    /// IPv4 with options (IHL > 5), passed: the trader's fast parser does not handle them.
    PassedIpOptions,
    /// Frames too short for the headers they claim, or with impossible header fields (IHL < 5,
    /// total length shorter than the headers, UDP length < 8); passed for the kernel to drop.
    Malformed,
    /// Market-data frames turned into an order to the gateway and sent (`Action::Reflect`).
    Reflected,
    /// Market-data frames the reflector could not turn into an order (not a single ITCH
    /// trade, or the tail adjustment failed): passed. Also the trigger's armed tick whose
    /// order could not be written: dropped (the frame may be half rewritten).
    ReflectFailed,
    /// Log records written (only with the `XDP_LOG` global on).
    Logged,
    /// Log records not written: over the rate limit.
    LogSuppressed,
    /// Trigger path: armed orders fired (`XDP_TX`).
    TriggerFired,
    /// Trigger path: packets of the armed tick whose price was not in the armed set
    /// (redirected to the trader, which decides them).
    TriggerNotInSet,
    /// Trigger path: packets that met the arm while userspace was writing it (its `generation` odd or
    /// changing): redirected to the trader, never fired from a half-written arm.
    TriggerArmBusy,
    /// Market-data frames from an IPv4 address that is neither the feed's pinned source for
    /// that line nor the re-request server's: dropped (`XDP_DROP`), never redirected as feed,
    /// never fired on.
    ForeignSourceAddr,
    /// Market-data frames from the pinned source's address but another UDP port: dropped.
    ForeignSourcePort,
    /// TCP segments of the order session (from the order gateway's address and port, with
    /// [`GLOBAL_ORDER_TCP`] on) redirected into the AF_XDP socket, for the userspace TCP.
    OrderSegments,
    /// TCP trigger: the armed tick met no segment for its arm, or one the trader had
    /// withdrawn (its stack was about to send): redirected to the trader, which decides it.
    TriggerNoSegment,
    /// Driver filter ([`filter`]): feed packets dropped in the driver, every message for a
    /// stock the trader doesn't keep, their numbers claimed by the next packet passed.
    FilteredPackets,
    /// Driver filter: the messages in those packets.
    FilteredMessages,
    /// Driver filter: feed packets whose claim could not be filed (the claims map missing):
    /// dropped, for the trader to see as a gap and ask again.
    FilterUnclaimed,
    /// With [`GLOBAL_ORDER_TCP`] on: TCP from the order gateway's address and port that is not
    /// the live connection (another local port, another source MAC, no connection), or from its
    /// address with IP options or fragmented: dropped, never passed to a kernel without a
    /// socket for it.
    OrderSegmentsDropped,
}

impl Counter {
    /// Number of counters; the map's `max_entries`.
    pub const COUNT: u32 = 24;

    /// Every counter, in index order.
    pub const ALL: [Counter; Self::COUNT as usize] = [
        Counter::Redirected,
        Counter::RedirectFailed,
        Counter::PassedMarketData,
        Counter::PassedNotIpv4,
        Counter::PassedNotUdp,
        Counter::PassedOtherPort,
        Counter::PassedFragment,
        Counter::PassedIpOptions,
        Counter::Malformed,
        Counter::Reflected,
        Counter::ReflectFailed,
        Counter::Logged,
        Counter::LogSuppressed,
        Counter::TriggerFired,
        Counter::TriggerNotInSet,
        Counter::TriggerArmBusy,
        Counter::ForeignSourceAddr,
        Counter::ForeignSourcePort,
        Counter::OrderSegments,
        Counter::TriggerNoSegment,
        Counter::FilteredPackets,
        Counter::FilteredMessages,
        Counter::FilterUnclaimed,
        Counter::OrderSegmentsDropped,
    ];

    /// The counter's slot in the map.
    pub const fn index(self) -> u32 {
        self as u32
    }

    /// A stable snake-case name, for reports.
    pub const fn name(self) -> &'static str {
        match self {
            Counter::Redirected => "redirected",
            Counter::RedirectFailed => "redirect_failed",
            Counter::PassedMarketData => "passed_market_data",
            Counter::PassedNotIpv4 => "passed_not_ipv4",
            Counter::PassedNotUdp => "passed_not_udp",
            Counter::PassedOtherPort => "passed_other_port",
            Counter::PassedFragment => "passed_fragment",
            Counter::PassedIpOptions => "passed_ip_options",
            Counter::Malformed => "malformed",
            Counter::Reflected => "reflected",
            Counter::ReflectFailed => "reflect_failed",
            Counter::Logged => "logged",
            Counter::LogSuppressed => "log_suppressed",
            Counter::TriggerFired => "trigger_fired",
            Counter::TriggerNotInSet => "trigger_not_in_set",
            Counter::TriggerArmBusy => "trigger_arm_busy",
            Counter::ForeignSourceAddr => "foreign_source_addr",
            Counter::ForeignSourcePort => "foreign_source_port",
            Counter::OrderSegments => "order_segments",
            Counter::TriggerNoSegment => "trigger_no_segment",
            Counter::FilteredPackets => "filtered_packets",
            Counter::FilteredMessages => "filtered_messages",
            Counter::FilterUnclaimed => "filter_unclaimed",
            Counter::OrderSegmentsDropped => "order_segments_dropped",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arrival_stamp_is_read_only_right_past_the_ip_datagram_and_with_its_magic() {
        // A 40-byte frame whose IPv4 total length says 26 (14 + 26 = 40).
        let mut frame = [0u8; 40].to_vec();
        frame[16..18].copy_from_slice(&26u16.to_be_bytes());
        assert_eq!(arrival_stamp(&frame), None);
        frame.extend_from_slice(&STAMP_MAGIC);
        frame.extend_from_slice(&123_456_789u64.to_le_bytes());
        assert_eq!(arrival_stamp(&frame), Some(123_456_789));
        // The same 12 bytes inside the datagram (its own last bytes) are not a stamp.
        frame[16..18].copy_from_slice(&38u16.to_be_bytes());
        assert_eq!(arrival_stamp(&frame), None);
        assert_eq!(arrival_stamp(&frame[..10]), None);
        assert_eq!(arrival_stamp(&[]), None);
    }

    #[test]
    fn the_shared_records_have_no_hidden_padding() {
        assert_eq!(core::mem::size_of::<Arm>(), 56);
        assert_eq!(Arm::STOCK_AT % 8, 0, "the stock read as one word");
        assert_eq!(
            Arm::SESSION_AT % 8,
            0,
            "the session read as a word and a half"
        );
        assert_eq!(core::mem::align_of::<ArmSlot>(), 8);
        assert_eq!(core::mem::size_of::<ArmSlot>(), 128, "two cache lines");
        assert_eq!(
            core::mem::offset_of!(ArmSlot, fired_generation),
            64,
            "the record starts the second line"
        );
        assert_eq!(core::mem::size_of::<Fired>(), Fired::LEN);
        // A record as the program writes it (native endian, repr(C)), read back.
        let mut b = [0u8; Fired::LEN];
        b[..8].copy_from_slice(&7u64.to_ne_bytes());
        b[8..16].copy_from_slice(&9u64.to_ne_bytes());
        b[16..20].copy_from_slice(&1_000_000u32.to_ne_bytes());
        b[20..24].copy_from_slice(&200u32.to_ne_bytes());
        b[24] = b'S';
        b[25..27].copy_from_slice(&1u16.to_be_bytes());
        let f = Fired::from_bytes(&b).unwrap();
        assert_eq!(
            f,
            Fired {
                seq: 7,
                token: 9,
                price: 1_000_000,
                shares: 200,
                side: b'S',
                flags: [0, 1],
                pad: [0; 5]
            }
        );
        assert_eq!(Fired::from_bytes(&b[..31]), None);
    }

    #[test]
    fn an_arm_contains_one_side_of_its_threshold() {
        let mut a = Arm {
            threshold: 100,
            ..Arm::default()
        };
        assert!(a.contains(100) && a.contains(101) && !a.contains(99));
        a.direction = ARM_AT_OR_BELOW;
        assert!(a.contains(100) && !a.contains(101) && a.contains(99));
    }

    #[test]
    fn counter_indices_are_dense_and_in_order() {
        for (i, c) in Counter::ALL.iter().enumerate() {
            assert_eq!(c.index() as usize, i, "{c:?}");
        }
    }

    #[test]
    fn unknown_action_byte_is_pass() {
        assert_eq!(Action::from_u8(0), Action::Redirect);
        assert_eq!(Action::from_u8(1), Action::Pass);
        assert_eq!(Action::from_u8(2), Action::Reflect);
        assert_eq!(Action::from_u8(4), Action::Trigger);
        assert_eq!(Action::from_u8(200), Action::Pass);
    }
}
