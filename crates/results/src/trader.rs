//! What the `trader` binary reports (`--json-out`).
use serde::{Deserialize, Serialize};

use paths::{TraderPath, Wait, XdpMode};

use crate::{ContextSwitches, EndReason, Summary, ThreadTime};

/// One trader run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraderReport {
    /// The design-choice knobs this run used.
    pub knobs: Knobs,
    /// The I/O path.
    pub path: TraderPath,
    /// Spin or block.
    pub wait: Wait,
    /// Where the XDP program ran (`None` on the UDP path).
    pub xdp_mode: Option<XdpMode>,
    /// Strategy length.
    pub n: i64,
    /// What the tick-to-trade core counted.
    pub counters: TraderCounters,
    /// Which feed the trader followed, and the other sessions it dropped.
    #[serde(default)]
    pub feed: FeedSeen,
    /// Frames on the AF_XDP socket that were not the feed, by reason.
    pub frames_not_ours: FrameCounts,
    /// Feed frames taken per RX queue served (XDP path; queue 0 first): one AF_XDP socket each.
    #[serde(default)]
    pub rx_queue_frames: Vec<u64>,
    /// From the frame's arrival in userspace to its order's TX submission (kick done).
    pub rx_to_tx: Summary,
    /// `on_tick` alone: price in, decision out.
    pub engine: Summary,
    /// With `--symbols`: the book's work on one message (parse and apply), sampled on one
    /// watched message in the engine's rate, of the types that can't print (a print's is
    /// inside its tick-to-trade). Empty on the ticker feed.
    #[serde(default)]
    pub book_work: Summary,
    /// The XDP program's counters, summed over CPUs (XDP and reflect paths).
    pub xdp_counters: Option<XdpCounters>,
    /// The loaded XDP program: its size, whether it logs, and (with `--xdp-stats`) the
    /// kernel's count and total time of its runs. Absent from reports made before it.
    #[serde(default)]
    pub xdp_program: Option<XdpProgramStats>,
    /// The AF_XDP socket's own statistics (XDP path).
    pub xsk_stats: Option<XskStats>,
    /// The kernel UDP paths: datagrams the kernel dropped at the feed's sockets
    /// (`SO_MEMINFO`): those of a source the socket's filter does not keep (the pinned
    /// sources' and the re-request server's, kept from the start when named, from the pin
    /// when learned) and those a full receive buffer had no room for. Absent on the AF_XDP
    /// paths and from reports made before it.
    #[serde(default)]
    pub socket_drops: Option<u64>,
    /// The NAPI instance the kernel last delivered the feed from (`SO_INCOMING_NAPI_ID` on the
    /// feed's UDP or AF_XDP sockets, the highest of them, read after the run). 0: none, so
    /// per-socket busy polling (`--busy-poll`) has no NAPI to poll. None: not read (a
    /// socket's read failed, or a report made before it).
    #[serde(default)]
    pub napi_id: Option<u32>,
    /// Why the loop ended.
    pub end: EndReason,
    /// Resident memory when the loop started (KiB).
    pub rss_start_kib: u64,
    /// Resident memory when it ended (KiB): flat on a soak.
    pub rss_end_kib: u64,
    /// Context switches from the first packet to the loop's end (from start-up if none came).
    pub context_switches: ContextSwitches,
    /// Where the same span's wall time went: ran, waited for the CPU, stolen by the hypervisor.
    pub thread_time: ThreadTime,
    /// Of the same span, the time the loop worked on packets (from each turn's first packet
    /// to the end of its orders and arming), ms: what a spinning trader's CPU did besides
    /// waiting. Per message, the trader's cost; against `thread_time.wall_ms`, how near it
    /// ran to its limit.
    #[serde(default)]
    pub busy_ms: f64,
    /// The trader's own account of what it traded (its ledger, not the exchange's).
    pub account: Account,
    /// The trigger path's arms, fired orders and checks (`--path trigger` only).
    #[serde(default)]
    pub trigger: Option<TriggerReport>,
    /// The order session, where orders went over SoupBinTCP (`None`: UDP orders).
    #[serde(default)]
    pub order_session: Option<OrderSessionReport>,
}

/// What the trader's SoupBinTCP order session did (`--orders tcp-kernel`, `tcp-xdp`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OrderSessionReport {
    /// How the orders went.
    pub orders: paths::Orders,
    /// Enter Orders written to the connection.
    pub sent: u64,
    /// Orders not sent: no session logged in at the time (counted, never silently lost).
    pub not_sent: u64,
    /// Sends the socket took only in part (the rest went after, from the trader's buffer).
    pub partial_writes: u64,
    /// Orders made while a login was under way: held, and sent once it was accepted.
    pub held: u64,
    /// Userspace TCP (`tcp-xdp`): orders sent as a segment built from the stack's last one,
    /// the stack told after (the rest went through the stack's own send).
    #[serde(default)]
    pub fast_sends: u64,
    /// Userspace TCP: segments the stack built with no TX frame free, dropped (TCP sent them
    /// again).
    #[serde(default)]
    pub dropped_segments: u64,
    /// TCP trigger (`--path trigger --orders tcp-xdp`): orders whose segment the XDP program
    /// sent, the stack told after (counted in `sent` too).
    #[serde(default)]
    pub fired: u64,
    /// TCP trigger: armed segments withdrawn unsent (their tick didn't fire, or the stack
    /// was about to send data of its own: a heartbeat, a software order, the logout).
    #[serde(default)]
    pub withdrawn: u64,
    /// TCP trigger: withdrawals whose outcome stayed unknown (the program's claim unsettled
    /// after 10 ms; the connection is then given up). Must be 0.
    #[serde(default)]
    pub in_doubt: u64,
    /// Bytes the session gave its TCP (every connection's, in order).
    #[serde(default)]
    pub stream_bytes: u64,
    /// Their FNV-1a hash (`soup::Digest`): equal to the exchange's over what it read when no
    /// connection was lost.
    #[serde(default)]
    pub stream_hash: u64,
    /// Userspace TCP: bytes the stack still held unacknowledged when the session ended (0: the
    /// exchange acknowledged every byte the stack has as sent).
    #[serde(default)]
    pub unacked_at_end: u64,
    /// Answers: Order Accepted, Executed, Canceled, Rejected.
    pub accepted: u64,
    /// Order Executed.
    pub executed: u64,
    /// Order Canceled.
    pub canceled: u64,
    /// Order Rejected.
    pub rejected: u64,
    /// Sequenced messages that aren't OUCH answers the trader knows.
    pub unknown_answers: u64,
    /// TCP connections made.
    pub connects: u64,
    /// Connections tried (a SYN each), paced by the backoff (1 ms doubling to 1 s, jittered,
    /// reset by a login).
    #[serde(default)]
    pub connect_tries: u64,
    /// Userspace TCP: RSTs refused by RFC 5961 (not at exactly RCV.NXT; in the window they got
    /// a challenge ACK, outside it nothing).
    #[serde(default)]
    pub rst_refused: u64,
    /// Userspace TCP: SYNs on a synchronized connection, refused (RFC 5961 §4).
    #[serde(default)]
    pub syn_refused: u64,
    /// Userspace TCP: challenge ACKs sent for those (at most 100 a second).
    #[serde(default)]
    pub challenge_acks: u64,
    /// Sequenced messages that matched no order sent, or said something else than the order
    /// did (side, shares, symbol, price; executions past the open shares), or were no OUCH
    /// answer: never booked.
    #[serde(default)]
    pub mismatched_answers: u64,
    /// Connections ended for such a message, the next login asking for it again (a message
    /// the exchange repeats in that login's replay is its word: counted above, not booked).
    #[serde(default)]
    pub refused_streams: u64,
    /// End of Session packets the trader's own next order found still standing (the feed
    /// still trading, so the session can't be over): the connection ended and logged into
    /// again, where an exchange that has ended the session says so again. A forged end costs
    /// that login, never the rest of the run's orders.
    #[serde(default)]
    pub doubted_ends: u64,
    /// Orders whose Order Accepted or Rejected never came: passed by a later order's answer,
    /// awaited for 10 s (the answer deadline), or still awaited at the end. 0 on a healthy
    /// session.
    #[serde(default)]
    pub unanswered: u64,
    /// Userspace TCP: orders that found the gateway's receive window without room for them,
    /// sent through the stack (which waits for the window) instead of at once.
    #[serde(default)]
    pub window_closed: u64,
    /// Logins accepted.
    pub logins: u64,
    /// Logins refused, with the last reason.
    pub login_rejects: u64,
    /// Connections lost (closed, reset, silent server, protocol error).
    pub disconnects: u64,
    /// Of those, given up because the exchange sent nothing for the dead-peer timeout.
    pub server_silent: u64,
    /// Of those, ended by a packet that doesn't frame or doesn't belong.
    pub protocol_errors: u64,
    /// Connections this trader reset on purpose (`--order-reset-after`, a test).
    pub resets_injected: u64,
    /// The exchange ended the session (SoupBinTCP End of Session).
    pub end_of_session: bool,
    /// The next sequenced message the session expects (answers taken + 1).
    pub next_seq: u64,
    /// From the tick's arrival at the trader (its RX time) to its order's Order Accepted
    /// arriving back (the kernel's receive stamp): the round trip through the exchange.
    pub rx_to_ack: Summary,
}

/// What the trigger path (`--path trigger`) armed, what the XDP program fired, and whether
/// each fired order was the one the trader would have sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TriggerReport {
    /// Arms written (one per tick the engine could arm, after the tick before it).
    pub arms: u64,
    /// Orders the XDP program fired (records read from its ring).
    pub fired: u64,
    /// Orders the trader sent itself, for ticks that came through the AF_XDP socket: it
    /// decided not to arm them (`unarmed_orders`), or their arm was not in place when they
    /// reached the program (`arm_late`).
    pub software_orders: u64,
    /// Of those, ticks the trader had decided not to arm (see `unarmed`).
    pub unarmed_orders: u64,
    /// Of those, all the rest: ticks whose arm was written after they reached the program, or
    /// while they did, or never (they came right behind the tick before, in the same turn, or
    /// past a gap); and armed ticks the program did not fire for their packet's shape (more
    /// than one message, a frame the trader's socket path checks further).
    pub arm_late: u64,
    /// Fired orders that were not what the trader would have sent for their tick (or fired
    /// where it would have sent none): must be 0. A nonzero count is reported at exit.
    pub mismatch: u64,
    /// `(fired - mismatch) / (fired + software_orders)`: the share of the trader's orders that
    /// the program fired (the armed-hit rate); 0 when there was no order.
    pub hit_rate: f64,
    /// Decisions not to arm, by reason (one per turn of the loop that took packets, so a turn
    /// of heartbeats repeats the last): warm-up (indicators undefined), level (no cross
    /// possible), held (the only cross is to the side held), never (no price fires),
    /// unsettled (rounding the engine can't settle), other (feed not known, sequence end).
    pub unarmed: Unarmed,
    /// Computing and writing one arm, after the tick before it (µs): off the critical path.
    pub arm_cost: Summary,
    /// Whether the trader pushed each arm's cache line out of its core after writing it
    /// (`CLDEMOTE`; off without it, or with `--no-arm-demote`). `None`: a report from before
    /// the trader could.
    #[serde(default)]
    pub arm_demoted: Option<bool>,
    /// A spinning trader's turns per read of the fired record at a turn's start
    /// (`--fired-poll-every`); 1 for a blocking one, which reads it after every wake-up.
    /// `None`: a report from before the option (every turn).
    #[serde(default)]
    pub fired_poll_every: Option<u32>,
    /// Whether the program was loaded to wake the (blocking) trader when it fires: false for a
    /// spinning trader, which is never woken, and with `--no-fired-wakeup`, which waits for the
    /// next packet instead. `None`: a report from before the option (a blocking trader was
    /// always woken then).
    #[serde(default)]
    pub woken_on_fire: Option<bool>,
    /// Wake-up records the trader read from the program's `FIRED` ring: one per fire when it
    /// is woken on fire, none otherwise.
    #[serde(default)]
    pub wakeups: u64,
    /// The book trigger (`--symbols`): updates of the firing set (or of the stock's locate) the
    /// program's maps refused (full, or an error). After the first, nothing is armed again in
    /// the run (the set may hold an order the book doesn't): the trader sends every order
    /// itself.
    #[serde(default)]
    pub firing_set_failed: u64,
}

/// [`TriggerReport::unarmed`]: decisions not to arm, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unarmed {
    /// The indicators are not all defined yet.
    pub warming_up: u64,
    /// The last bar's lines were equal.
    pub level: u64,
    /// The only cross is to the side already held.
    pub held: u64,
    /// No Price(4) value fires.
    pub never: u64,
    /// Rounding near the crossing the engine can't settle (not one side, band too wide).
    pub unsettled: u64,
    /// Anything else (feed not known yet, sequence numbers exhausted).
    pub other: u64,
    /// TCP trigger: the order session could take no armed segment (not logged in, or bytes of
    /// its own to send first, or its next sequence number not certain).
    #[serde(default)]
    pub no_segment: u64,
}

/// Which MoldUDP64 feed the trader followed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedSeen {
    /// The session traded (`None`: none was confirmed).
    pub session: Option<String>,
    /// The session was given (`--session`), not learned.
    pub session_pinned: bool,
    /// The first sequence number taken (given with `--first-seq`, or where the trader joined).
    pub first_seq: Option<u64>,
    /// Forward jumps larger than this waited for confirmation (`--max-jump`).
    pub max_jump: u64,
    /// Other sessions that sent packets, in the order first seen (the first 8).
    pub foreign_sessions: Vec<ForeignSession>,
    /// Packets of further sessions past those 8.
    pub foreign_sessions_unnamed: u64,
    /// Per line of an A/B feed (A, then B): empty when the feed came on one line.
    #[serde(default)]
    pub lines: Vec<LineCounts>,
    /// Of an A/B feed, sequence numbers neither line delivered (within the feed the trader
    /// followed): `gap_messages - late_messages`, plus those that came back on re-request
    /// (`recovered_messages`, which no line delivered).
    #[serde(default)]
    pub lost_on_both: u64,
    /// A jump past `max_jump` (or a lost tail) was believed only after the feed had been silent
    /// this long (ns; trader-core's `FeedRules::quiet_ns`; 0 in reports made before it).
    #[serde(default)]
    pub quiet_ns: u64,
    /// A jump (or lost tail) was believed only if no larger than this many messages a second
    /// over that silence, plus `max_jump` (`FeedRules::max_rate`; 0 in reports made before it).
    #[serde(default)]
    pub max_rate: u64,
}

/// What one line of an A/B feed delivered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineCounts {
    /// Messages of the feed that came on this line (duplicates and late ones included).
    pub received_messages: u64,
    /// Messages this line delivered first: the copies that were traded (or taken in
    /// sequence).
    pub first_arrivals: u64,
    /// Sequence numbers this line never delivered and the other line did: its gaps that the
    /// other line filled.
    pub gaps_filled_by_other: u64,
}

/// A session other than the feed's, and how many packets it sent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForeignSession {
    /// Its name (space padding trimmed).
    pub session: String,
    /// Packets dropped.
    pub packets: u64,
}

/// The trader's own account: the orders it sent, booked with the engine's ledger at the tick
/// prices it saw, closed at the last tick price it saw. One of the three accounts parity compares
/// (with the exchange's booking of the orders it received, and the batch backtest).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Account {
    /// Orders booked (sent).
    pub orders: u64,
    /// Round trips closed.
    pub trades: u64,
    /// Realised PnL after closing any open position at the last tick price seen.
    pub pnl: f64,
    /// The position held when the loop ended, before that close.
    pub position: Option<Position>,
}

/// A position's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Position {
    /// Bought.
    Long,
    /// Sold short.
    Short,
}

/// The design-choice knobs of a trader run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Knobs {
    /// Pinned to this CPU.
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority.
    pub fifo: Option<i32>,
    /// mlockall().
    pub mlock: bool,
    /// SO_BUSY_POLL, µs.
    pub busy_poll_us: Option<i32>,
    /// SO_PREFER_BUSY_POLL.
    pub prefer_busy_poll: bool,
    /// SO_BUSY_POLL_BUDGET.
    pub busy_poll_budget: Option<i32>,
    /// UMEM on 2 MiB huge pages.
    pub huge_pages: bool,
    /// Frames taken from the RX ring per turn.
    pub rx_batch: usize,
    /// XDP_USE_NEED_WAKEUP.
    pub need_wakeup: bool,
    /// Datagrams per recvmmsg call (1: recvfrom).
    pub recvmmsg: usize,
    /// UDP receive buffer, bytes.
    pub rcvbuf: i32,
}

/// What the tick-to-trade core counted. Every packet and message lands in exactly one bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraderCounters {
    /// MoldUDP64 packets taken.
    pub packets: u64,
    /// Packets whose MoldUDP64 header was unreadable (shorter than 20 bytes).
    pub malformed_packets: u64,
    /// Datagrams to the feed's port from an address that is not the feed's source (the one
    /// `--feed-source` names, or the one learned when the feed was confirmed) nor the
    /// re-request server's: dropped before the trader reads them, never traded.
    #[serde(default)]
    pub foreign_source_addr: u64,
    /// Datagrams from the feed source's address but another UDP port than its own: dropped.
    #[serde(default)]
    pub foreign_source_port: u64,
    /// Packets of another session than the feed's (the one `--session` pins, or the one the
    /// trader learned): never traded. Before the feed is known, a held packet of another
    /// session counts here once the feed is confirmed. The report names the sessions.
    pub wrong_session: u64,
    /// Packets of the feed's session whose sequence number was never believed: a forward jump
    /// past `--max-jump` that no confirmation traded (held, then dropped: nothing continued it
    /// after the old stream stopped, or it was displaced from the few held packets; the
    /// packets a real restart sent before its jump was believed, all but the last four, land
    /// here), a held first packet the real feed didn't continue, or an end of session behind
    /// the feed, or past it and not repeated after the feed stopped. Never traded, and the
    /// expected sequence number stayed with the feed.
    #[serde(default)]
    pub suspect_sequence: u64,
    /// Feed packets that don't fit the feed's profile: a message that is not an ITCH 5.0
    /// message of a known type at its exact length, or a datagram larger than one 1,500-byte
    /// frame carries. Held as a jump is (in `suspect_sequence` too; before the feed is known,
    /// in `unconfirmed_packets`), never traded on their own word: a lie of hundreds of
    /// one-byte messages moves nothing.
    #[serde(default)]
    pub off_profile: u64,
    /// Forward jumps past `--max-jump` that were believed (an outage or a burst of loss): a
    /// later packet continued them after the old stream had been silent for the quiet window,
    /// the jump within the feed's maximum rate over that silence, or the other line of an A/B
    /// feed delivered a copy. Traded, their skipped numbers counted in `gap_messages`.
    #[serde(default)]
    pub jumps_confirmed: u64,
    /// Packets seen before the feed was known that nothing confirmed (no valid ITCH, no packet
    /// continuing them before the run ended, or more of them than the trader holds).
    #[serde(default)]
    pub unconfirmed_packets: u64,
    /// Messages numbered before the first one the trader took (it joined the feed after them):
    /// not traded, and not late.
    #[serde(default)]
    pub before_join_messages: u64,
    /// Heartbeats of the feed's session, whatever their sequence number (one ahead of the feed
    /// moves nothing: heartbeats never move the expected number or confirm a jump).
    pub heartbeats: u64,
    /// ITCH messages taken in sequence.
    pub messages: u64,
    /// Prints of the stock traded handed to the strategy: its Trade messages on the ticker
    /// feed; with `--symbols`, its book's prints (Order Executed at the resting order's price, a
    /// printable Order Executed With Price, a Trade).
    pub ticks: u64,
    /// Trade messages for another stock (the ticker feed).
    pub other_stock: u64,
    /// Numbers a driver filter's claim covered: packets the XDP program dropped because none
    /// of their messages was for the trader's symbols, taken as received and empty (see
    /// docs/driver-filter.md). Neither a gap nor a recovery.
    #[serde(default)]
    pub filtered_skipped: u64,
    /// With `--symbols`: messages of the symbols not watched, sequenced and dropped unread
    /// (their type and locate only).
    #[serde(default)]
    pub unwatched_messages: u64,
    /// With `--symbols`: messages the watched symbols' book applied (their Stock Directory
    /// messages included).
    #[serde(default)]
    pub book_messages: u64,
    /// With `--symbols`: messages of watched symbols the book refused (an order it never saw:
    /// a feed joined mid-session, or a lie; see the `book` crate).
    #[serde(default)]
    pub book_refused: u64,
    /// With `--symbols`: allocations the book made after start, its order table's growths
    /// and sides that outgrew their room (0: the day fit `--book-orders`).
    #[serde(default)]
    pub book_allocations: u64,
    /// Valid ITCH messages of other types.
    pub other_messages: u64,
    /// Message blocks that were not valid ITCH (unknown type, wrong length, a side other than
    /// 'B'/'S' in an add, a printable flag other than 'Y'/'N' in an execution); each still consumes
    /// its sequence number (the framing around it was sound, so it is a message that arrived,
    /// just not one we can read). An empty block is not one: it is `malformed_framing`.
    pub malformed_messages: u64,
    /// Packets whose block framing contradicts their header (a block length running past the
    /// end, fewer or more blocks than the message count, a cut length prefix) or that hold a
    /// zero-length block (no message is empty). Such a packet is
    /// not trusted at all: none of its messages is processed and none of its sequence numbers
    /// is consumed, so a lying header can't swallow the sequence numbers of real ticks; if the
    /// messages it claimed were real, the next sound packet shows them as a gap.
    pub malformed_framing: u64,
    /// Sequence numbers skipped over when a later one arrived first (a gap), or that the
    /// end-of-session packet's sequence number shows were never received. Those that arrive
    /// later still are also counted in `late_messages`, so `gap_messages - late_messages` is
    /// the number of messages that never arrived.
    pub gap_messages: u64,
    /// Messages that arrived after a later one had been processed: counted, not traded
    /// (the strategy has moved past them).
    pub late_messages: u64,
    /// Messages seen before: dropped, never traded twice.
    pub duplicate_messages: u64,
    /// MoldUDP64 re-requests sent (`trader --retransmit`).
    #[serde(default)]
    pub retransmit_requests: u64,
    /// Messages those requests asked for (a gap asked again counts again).
    #[serde(default)]
    pub retransmit_requested: u64,
    /// Messages that came from the re-request server (its address is `--retransmit-to`) in a
    /// range the trader asked for. Without a book they are of `late_messages`: recovered,
    /// accounted, not traded (the strategy had decided later ticks without them). With a book
    /// that holds the feed behind a gap (`repair_held_packets`), they are handed on in order.
    #[serde(default)]
    pub recovered_messages: u64,
    /// Messages of gaps given up unrecovered: asked three times without an answer, older than
    /// the trader's 65,536-message memory, or pushed out by 64 newer gaps.
    #[serde(default)]
    pub retransmit_gave_up: u64,
    /// Re-requests the socket refused to send.
    #[serde(default)]
    pub retransmit_send_failed: u64,
    /// With a book and a re-request server (book repair, `--repair-wait-ms`): packets held
    /// behind a gap until the server's answer filled it, the answers it had to hold included.
    /// What the answers brought is handed on in order (`messages`, and `recovered_messages`),
    /// not late.
    #[serde(default)]
    pub repair_held_packets: u64,
    /// Of those holds, packets that went on past a gap the answers had not filled (the wait
    /// ran out, the hold was full, or the session ended): the book went on knowingly short.
    #[serde(default)]
    pub repair_gave_up: u64,
    /// Orders sent.
    pub orders: u64,
    /// Orders that could not be sent (no TX frame, socket error, an order that doesn't encode).
    pub orders_failed: u64,
    /// TX flushes (AF_XDP `sendto` kicks) that failed: the orders of that turn may not have
    /// left.
    pub tx_flush_failed: u64,
    /// Of `suspect_sequence`, packets that continued a held forward jump but did not confirm
    /// it: the old stream had not stopped (a packet advanced the feed since the held one, or
    /// it had been silent for less than the quiet window) or the jump was larger than the
    /// feed could have produced in that silence. Held instead; those a later confirmation
    /// traded are not counted. Forged jumps told in sequence while the real feed flows land
    /// here.
    #[serde(default)]
    pub jumps_refused: u64,
    /// What came from the re-request server that the trader had not asked for: messages
    /// numbered outside every range it asked for and is still waiting on, or at or past the
    /// feed's next number, plus heartbeats and ends of session (one each). Dropped: never
    /// traded, never moving the expected sequence number.
    #[serde(default)]
    pub recovery_unasked: u64,
}

/// Frames that reached the trader's AF_XDP socket but are not the feed, by reason, none of
/// them traded. The first six the XDP program should have passed (a different program or a
/// race can still redirect them); the last four it redirects, and the trader drops them as the
/// kernel drops them before a UDP socket sees them, so both paths trade the same datagrams.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameCounts {
    /// Too short for the headers they claim, or impossible header fields.
    pub malformed: u64,
    /// Not IPv4.
    pub not_ipv4: u64,
    /// IPv4 fragments.
    pub fragment: u64,
    /// Not UDP.
    pub not_udp: u64,
    /// IPv4 headers with options.
    pub ip_options: u64,
    /// UDP to another port.
    pub other_port: u64,
    /// Addressed to another MAC.
    pub wrong_dst_mac: u64,
    /// A wrong IPv4 header checksum.
    pub bad_ip_checksum: u64,
    /// Addressed to another IPv4 address.
    pub wrong_dst_ip: u64,
    /// A wrong UDP checksum (0, "none", is not wrong).
    pub bad_udp_checksum: u64,
}

/// The XDP program's per-CPU counters, summed: one field per `xdp_common::Counter`, named as
/// its `name()` (the conversion in `afxdp::xdp` matches every counter, so a new one can't be
/// forgotten here).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct XdpCounters {
    pub redirected: u64,
    pub redirect_failed: u64,
    pub passed_market_data: u64,
    pub passed_not_ipv4: u64,
    pub passed_not_udp: u64,
    pub passed_other_port: u64,
    pub passed_fragment: u64,
    pub passed_ip_options: u64,
    pub malformed: u64,
    pub reflected: u64,
    pub reflect_failed: u64,
    /// Log records written (`trader --xdp-log`); absent from reports made before logging.
    #[serde(default)]
    pub logged: u64,
    /// Log records over the rate limit, not written.
    #[serde(default)]
    pub log_suppressed: u64,
    /// Trigger path: armed orders fired.
    #[serde(default)]
    pub trigger_fired: u64,
    /// Trigger path: the armed tick arrived at a price outside the armed set.
    #[serde(default)]
    pub trigger_not_in_set: u64,
    /// Trigger path: packets that met the arm while the trader was writing it (redirected to
    /// the trader, never fired from a half-written arm).
    #[serde(default)]
    pub trigger_arm_busy: u64,
    /// Market-data frames from an address other than the feed's pinned source (or the
    /// re-request server's): dropped in the driver.
    #[serde(default)]
    pub foreign_source_addr: u64,
    /// Market-data frames from the pinned source's address, another port: dropped.
    #[serde(default)]
    pub foreign_source_port: u64,
    /// TCP segments of the order session steered into the AF_XDP socket (`--orders tcp-xdp`).
    #[serde(default)]
    pub order_segments: u64,
    /// `--orders tcp-xdp`: TCP from the gateway's address and port that was not the live
    /// connection's (another local port or source MAC, no connection), or from its address
    /// with IP options or fragmented: dropped in the driver.
    #[serde(default)]
    pub order_segments_dropped: u64,
    /// TCP trigger: armed ticks that met no segment for their arm, or a withdrawn one
    /// (redirected to the trader).
    #[serde(default)]
    pub trigger_no_segment: u64,
    /// Driver filter (`--symbols` on the xdp path): feed packets dropped in the driver, none of
    /// their messages for a kept stock, their numbers claimed by the next packet passed.
    #[serde(default)]
    pub filtered_packets: u64,
    /// Driver filter: the messages in those packets.
    #[serde(default)]
    pub filtered_messages: u64,
    /// Driver filter: feed packets dropped because their claim could not be filed.
    #[serde(default)]
    pub filter_unclaimed: u64,
}

/// The loaded XDP program, as the kernel describes it (`bpf_prog_info`).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct XdpProgramStats {
    /// Bytes of eBPF after the verifier (which removes code a load-time global turns off).
    pub translated_bytes: u32,
    /// Bytes of JIT-compiled machine code.
    pub jited_bytes: u32,
    /// Loaded with its log on (`--xdp-log`).
    pub log: bool,
    /// Program runs counted while `--xdp-stats` held the kernel's run-time statistics on.
    pub runs: Option<u64>,
    /// Their total run time, ns (the kernel's clock read around each run).
    pub run_ns: Option<u64>,
    /// Where the runs spent their time, stage by stage, with `--xdp-stages` on.
    #[serde(default)]
    pub stages: Option<Vec<OutcomeStages>>,
}

/// The one stage of runs timed at their two ends only (`--xdp-stages=run`): the whole run.
pub const RUN_STAGE: &str = "run";

/// `--xdp-stages`: the program's timed runs of one outcome (`redirected`, `trigger_redirected`,
/// `reflected`, `fired`, `other`) and the mean time of each stage they passed, in program order.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeStages {
    /// The outcome (`xdp_common::Outcome`'s name).
    pub outcome: String,
    /// Timed runs.
    pub runs: u64,
    /// What one mark costs here, ns (a `bpf_ktime_get_ns()` and its store; two marks back to
    /// back at each run's start): every stage's raw figure includes it once.
    pub clock_read_ns: f64,
    /// Each stage the runs passed (`xdp_common::Mark::stage_name`), mean ns per run, net of one
    /// mark (so a stage cheaper than the clock's jitter can read slightly negative).
    pub stages: Vec<StageMean>,
}

/// One stage's mean time per run.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageMean {
    /// The stage's name.
    pub stage: String,
    /// Mean ns per run, net of one clock read.
    pub mean_ns: f64,
}

impl OutcomeStages {
    /// The run's time from its start mark to its end, net of the clock reads: the sum of its
    /// stages.
    pub fn total_ns(&self) -> f64 {
        self.stages.iter().map(|s| s.mean_ns).sum()
    }

    /// A stage's mean, if the runs passed it.
    pub fn stage(&self, name: &str) -> Option<f64> {
        self.stages
            .iter()
            .find(|s| s.stage == name)
            .map(|s| s.mean_ns)
    }
}

impl XdpProgramStats {
    /// Mean nanoseconds per run, when counted.
    pub fn mean_run_ns(&self) -> Option<f64> {
        match (self.runs, self.run_ns) {
            (Some(n), Some(t)) if n > 0 => Some(t as f64 / n as f64),
            _ => None,
        }
    }
}

/// The AF_XDP socket's statistics (`XDP_STATISTICS`, the kernel's `struct xdp_statistics`
/// field for field), and the frames the wrapper kept back.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct XskStats {
    pub rx_dropped: u64,
    pub rx_invalid_descs: u64,
    pub rx_ring_full: u64,
    pub rx_fill_ring_empty: u64,
    pub tx_invalid_descs: u64,
    pub tx_ring_empty: u64,
    /// Frames held back because the fill ring had no room (given back later).
    pub rx_fill_deferred: u64,
}
