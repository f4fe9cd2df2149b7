//! What the `replay` binary (the exchange side) reports (`--json-out`).
use serde::{Deserialize, Serialize};

use paths::{ExchangeIo, Expect};

use crate::{ContextSwitches, Machine, Summary, ThreadTime};

/// One replay run: what was sent, what came back, tick-to-trade, parity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// The run's label (the trader's path, in the bench).
    pub label: String,
    /// The exchange side's I/O.
    pub exchange_io: ExchangeIo,
    /// What the trader was expected to answer.
    pub expect: Expect,
    /// The market-data source, as given.
    pub source: String,
    /// Offered rate, messages/s (`None`: `--rate max`, closed loop).
    pub rate_per_s: Option<f64>,
    /// Sent as fast as the sender could (`--rate max`): each tick is due when the previous
    /// send returns, so the latency figures are closed-loop round trips under the harness's
    /// own pacing, not open-loop tick-to-trade; what it measures is throughput.
    pub closed_loop: bool,
    /// Messages sent per second of the send loop.
    pub achieved_rate_per_s: f64,
    /// How long the send loop ran.
    pub send_seconds: f64,
    /// ITCH messages per MoldUDP64 packet.
    pub batch: u16,
    /// Messages that went out.
    pub sent_messages: u64,
    /// Packets that went out.
    pub sent_packets: u64,
    /// Trade messages in the feed.
    pub ticks: u64,
    /// Orders taken (one per tick at most).
    pub orders_received: u64,
    /// Orders naming a tick that was never sent.
    pub orders_unknown_tick: u64,
    /// A second order for the same tick.
    pub orders_duplicate: u64,
    /// Orders whose share count disagrees with their own REVERSE flag (one lot to open, two
    /// to reverse).
    pub orders_shares_mismatch: u64,
    /// Orders for another stock than their tick's.
    pub orders_stock_mismatch: u64,
    /// Bytes that are not an order.
    pub orders_malformed: u64,
    /// Orders whose price is not their tick's.
    pub orders_price_mismatch: u64,
    /// Orders whose REVERSE flag disagrees with the book (a position was or wasn't open).
    pub orders_reverse_mismatch: u64,
    /// Orders stamped on arrival before their tick was due (the arrival stamp's clock and the
    /// schedule's disagreeing by more than the path takes): booked, but left out of every
    /// latency figure. Should be 0.
    #[serde(default)]
    pub orders_stamped_before_due: u64,
    /// Messages our own socket refused (buffer full): not sent, not counted as sent.
    pub send_dropped: u64,
    /// Packets the scheduler sent more than 10 µs late (the sender itself fell behind).
    pub late_sends: u64,
    /// Where an order's arrival time comes from.
    pub arrival: Arrival,
    /// From each tick's scheduled send time to its order's arrival.
    pub tick_to_trade: Summary,
    /// From each tick's scheduled send time to when the replay's loop read its order: the
    /// harness's delay included (equal to `tick_to_trade` where arrival is the read).
    pub tick_to_trade_seen: Summary,
    /// From when the send loop actually started each tick's send (never before its due time)
    /// to its order's arrival: tick-to-trade without the sender's lateness (`send_lateness`),
    /// to compare rows whose exchange does different work between sends.
    #[serde(default)]
    pub tick_to_trade_from_send: Summary,
    /// `tick_to_trade` in ten equal parts of the run, by the tick's place in the feed: level
    /// when the trader keeps up, growing when a queue before it fills.
    #[serde(default)]
    pub tick_to_trade_tenths: Vec<Summary>,
    /// With bursts (`--burst`, as `FACTORxLEN/EVERY`): the pattern, and `tick_to_trade` of the
    /// ticks due inside a burst.
    #[serde(default)]
    pub burst: Option<String>,
    /// See [`ReplayReport::burst`].
    #[serde(default)]
    pub tick_to_trade_in_bursts: Option<Summary>,
    /// Per order, from its arrival to the replay reading it: the harness's own delay (a send,
    /// or a preemption of the replay's thread, in between).
    pub harness_delay: Summary,
    /// Per packet sent on a schedule, from its due time to when the send loop started sending
    /// it: the sender's own lateness, which every tick-to-trade figure includes (taking
    /// orders, an order session's answers, a preemption of the replay). Empty for `--rate max`.
    #[serde(default)]
    pub send_lateness: Summary,
    /// Order datagrams that came without the arrival stamp `arrival` names (the kernel's or the
    /// XDP program's): those count from the replay's read. Should be 0.
    pub unstamped_datagrams: u64,
    /// The replay's own context switches during the send loop.
    pub context_switches: ContextSwitches,
    /// Hypervisor steal per CPU during the send loop, ms, 10 ms resolution (`/proc/stat`).
    pub steal_ms: Vec<u64>,
    /// Where the send loop's wall time went: ran, waited for the CPU, stolen.
    pub thread_time: ThreadTime,
    /// Live orders against the batch backtest.
    pub parity: Parity,
    /// What the re-request server did (`None`: not serving, no `--retransmit`).
    #[serde(default)]
    pub retransmit: Option<RetransmitReport>,
    /// Per line of an A/B feed (A, then B): datagrams sent and refused (end of session
    /// included); empty for one line.
    #[serde(default)]
    pub line_sends: Vec<LineSends>,
    /// How orders came: UDP datagrams, or OUCH 5.0 in a SoupBinTCP session.
    #[serde(default)]
    pub orders: paths::Orders,
    /// The order session, where orders came over SoupBinTCP (`None`: UDP orders).
    #[serde(default)]
    pub session: Option<SessionReport>,
    /// An ITCH file streamed (`None`: a prebuilt feed): how it was paced and packed, and what
    /// the pre-pass found in it.
    #[serde(default)]
    pub stream: Option<StreamReport>,
    /// Where it ran.
    pub machine: Machine,
}

/// An ITCH file the replay streamed: its timing and packing, and what its pre-pass found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamReport {
    /// The speed against the file's own clock (`--multiplier`; `None`: at `--rate` or
    /// `--topspeed`, its timestamps not the schedule).
    pub multiplier: Option<f64>,
    /// The packing window, ns (`--pack-window`; `None`: `--batch` messages a packet, at a
    /// `--rate`).
    pub pack_window_ns: Option<u64>,
    /// Packets the file packed into (as far as `--count` or `--duration` reach).
    pub packets: u64,
    /// ITCH bytes read in the pre-pass (records with their length prefixes, decompressed).
    pub file_bytes: u64,
    /// From the first message's timestamp to the last one's, ns of the file's time.
    pub file_span_ns: u64,
    /// Messages without a time of day (too short, or 24 h or later): each took the one
    /// before's.
    pub timestamps_invalid: u64,
    /// Messages stamped before the one before: each held at the earlier time (the replay's
    /// clock runs forward).
    pub timestamps_behind: u64,
    /// The re-request window, messages (`--retransmit-history`; `None`: not serving).
    pub retransmit_window: Option<u64>,
}

/// What went out on one line of an A/B feed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineSends {
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams our own side refused (a full buffer, or the trader's port unreachable).
    pub refused: u64,
}

/// What the exchange's SoupBinTCP order session did: its connections, and OUCH order entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionReport {
    /// TCP connections accepted.
    pub connections: u64,
    /// Connections that took the session over from one still up, once logged in (a trader
    /// reconnecting before this end saw its old connection go).
    pub replaced: u64,
    /// Logins accepted.
    pub logins: u64,
    /// Logins rejected (bad credentials, another session).
    pub login_rejects: u64,
    /// Sequenced messages sent again on a login that asked for them (the replay).
    pub replayed: u64,
    /// Connections the trader logged out of.
    pub logouts: u64,
    /// Connections the trader closed without a logout.
    pub closed_by_peer: u64,
    /// Connections that failed (reset).
    pub reset: u64,
    /// Connections given up for the trader's silence (the dead-peer timeout).
    pub peer_silent: u64,
    /// Connections ended by a packet that doesn't frame or doesn't belong.
    pub protocol_errors: u64,
    /// Reads that held more than one order: their earlier orders carry a later arrival stamp.
    pub coalesced_reads: u64,
    /// Reads without the kernel's arrival stamp (their orders count from the read).
    pub unstamped_reads: u64,
    /// Enter Orders taken (a new `UserRefNum`).
    pub enter_orders: u64,
    /// Of those, executed.
    pub executed: u64,
    /// Of those, canceled unfilled (immediate or cancel).
    pub canceled: u64,
    /// Enter Orders that didn't decode (answered Order Rejected).
    pub rejected: u64,
    /// Enter Orders whose `UserRefNum` was not above the last: retransmissions, ignored.
    pub retransmissions: u64,
    /// Cancel Orders (ignored: no order is live after its answer).
    pub cancels: u64,
    /// Messages of another type (ignored).
    pub unknown: u64,
    /// Sequenced messages in the session (the answers).
    pub sequenced: u64,
    /// Orders that came while the feed wasn't running (before it, or after its end): answered,
    /// but no exchange took them.
    #[serde(default)]
    pub outside_feed: u64,
    /// Connections this end reset on purpose (`--session-reset-after`, a test).
    #[serde(default)]
    pub resets_injected: u64,
    /// Connections this end closed on purpose (`--session-close-after`, a test: a FIN).
    #[serde(default)]
    pub closes_injected: u64,
    /// The session stalled on purpose (`--session-stall-after`, a test).
    #[serde(default)]
    pub stalled: bool,
    /// Bytes read from the order session's connections (every connection's, in order).
    #[serde(default)]
    pub stream_bytes: u64,
    /// Their FNV-1a hash (`soup::Digest`), to compare with the trader's.
    #[serde(default)]
    pub stream_hash: u64,
}

/// What the replay's MoldUDP64 re-request server did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetransmitReport {
    /// Requests received.
    pub requests: u64,
    /// Requests answered (one packet each).
    pub answers: u64,
    /// Messages in the answers.
    pub served_messages: u64,
    /// Requests for messages not sent yet, older than the history kept (of a prebuilt feed),
    /// or a count of 0.
    pub not_available: u64,
    /// Requests for messages a streamed file sent before the last `--retransmit-history` the
    /// re-request window keeps: they fell out of it (a prebuilt feed counts those as
    /// `not_available`).
    #[serde(default)]
    pub out_of_window: u64,
    /// Requests for another session.
    pub wrong_session: u64,
    /// Datagrams that are not a request.
    pub malformed: u64,
    /// Answers the socket refused to send.
    pub send_failed: u64,
}

/// Where the exchange side's order arrival times come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// The kernel's software receive timestamp on the exchange's UDP socket (`SO_TIMESTAMPNS`,
    /// CLOCK_REALTIME converted to the lab's CLOCK_MONOTONIC).
    KernelTimestamp,
    /// The exchange side's XDP program, on the frame's arrival (`bpf_ktime_get_ns`, the lab's
    /// clock), in a trailer it appends (the AF_XDP exchange). Orders it could not stamp count
    /// from when the replay read them.
    XdpTimestamp,
}

/// Live trading against the batch backtest on the same quantised ticks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parity {
    /// The verdict, with what it rests on.
    pub verdict: ParityVerdict,
    /// PnL of the fills the exchange booked.
    pub live_pnl: f64,
    /// Round trips the exchange booked.
    pub live_trades: u64,
    /// PnL of the batch backtest.
    pub batch_pnl: f64,
    /// Round trips of the batch backtest.
    pub batch_trades: u64,
    /// Orders the strategy should have sent for the ticks that went out.
    pub expected_orders: u64,
    /// Sequence number of the first tick where live orders and the strategy's signals differ,
    /// whatever the verdict (with order faults or an early stop too); `None` when they agree
    /// or nothing is expected (the reflector).
    pub first_divergence: Option<u64>,
    /// The verdict in words (written for people reading the JSON; readers use `verdict`).
    pub explanation: String,
}

impl Parity {
    /// Live trading equals the backtest.
    pub fn ok(&self) -> bool {
        self.verdict == ParityVerdict::Ok
    }
}

/// What the parity check concluded. Checked in this order: the first that applies is the
/// verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ParityVerdict {
    /// Live orders equal the batch backtest: same orders, same trades, same PnL, bit for bit.
    Ok,
    /// The trader answers every tick (the reflector): no strategy, nothing to compare.
    NotApplicable {
        /// Ticks answered.
        answered: u64,
        /// Ticks in the feed.
        ticks: u64,
    },
    /// Orders that disagree with their ticks, or that no correct trader sends.
    OrderFaults {
        /// Wrong price.
        price_mismatch: u64,
        /// Wrong REVERSE flag.
        reverse_mismatch: u64,
        /// Not an order.
        malformed: u64,
        /// For a tick that was never sent.
        unknown_tick: u64,
        /// A second order for a tick already answered.
        duplicate: u64,
        /// A share count that disagrees with the order's REVERSE flag.
        shares_mismatch: u64,
        /// Another stock than the tick's.
        stock_mismatch: u64,
    },
    /// Not every tick went out: the run stopped early, or our own socket refused some.
    NotAllSent {
        /// Messages sent.
        sent_messages: u64,
        /// Messages in the feed.
        feed_messages: u64,
        /// Refused by our own socket.
        send_dropped: u64,
    },
    /// Live orders and the backtest's signals differ from this tick on (lost ticks or lost
    /// orders change the strategy's path).
    Diverged {
        /// Sequence number of the first tick where they differ.
        first_divergence: u64,
        /// Expected orders that never came.
        missing_orders: u64,
    },
    /// Everything went out and came back as expected, but the strategy expects no order on
    /// these ticks (too few for a signal): the comparison would pass with nothing compared, so
    /// it is a failure, not ok.
    NothingToCheck {
        /// Ticks that went out.
        ticks: u64,
    },
    /// The same signals but a different PnL: a bug.
    PnlDiffers,
}

impl std::fmt::Display for ParityVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ParityVerdict::Ok => write!(
                f,
                "live orders equal the batch backtest: same trades, same PnL (bit for bit)"
            ),
            ParityVerdict::NotApplicable { answered, ticks } => write!(
                f,
                "reflector: {answered} of {ticks} ticks answered; no strategy, so no parity \
                 to check"
            ),
            ParityVerdict::OrderFaults {
                price_mismatch,
                reverse_mismatch,
                malformed,
                unknown_tick,
                duplicate,
                shares_mismatch,
                stock_mismatch,
            } => write!(
                f,
                "orders disagree with the ticks: {price_mismatch} wrong prices, \
                 {reverse_mismatch} wrong reverse flags, {shares_mismatch} wrong share counts, \
                 {stock_mismatch} wrong stocks, {duplicate} duplicates, {malformed} malformed, \
                 {unknown_tick} for unknown ticks"
            ),
            ParityVerdict::NotAllSent {
                sent_messages,
                feed_messages,
                send_dropped,
            } => write!(
                f,
                "not every tick went out: {sent_messages} of {feed_messages} messages sent \
                 (stopped early, or {send_dropped} refused by our own socket)"
            ),
            ParityVerdict::Diverged {
                first_divergence,
                missing_orders,
            } => write!(
                f,
                "live and batch diverge at tick seq {first_divergence}: {missing_orders} \
                 expected orders missing (lost ticks or lost orders change the strategy's path \
                 from there on)"
            ),
            ParityVerdict::NothingToCheck { ticks } => write!(
                f,
                "nothing to check: the strategy sends no order on these {ticks} ticks (too few \
                 for a signal? send more), so parity proves nothing"
            ),
            ParityVerdict::PnlDiffers => write!(
                f,
                "same signals but different PnL (should not happen: report a bug)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_serialize_tagged_and_round_trip() {
        let v = ParityVerdict::Diverged {
            first_divergence: 42,
            missing_orders: 3,
        };
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"diverged","first_divergence":42,"missing_orders":3}"#
        );
        assert_eq!(serde_json::from_str::<ParityVerdict>(&json).unwrap(), v);
        let ok = serde_json::to_string(&ParityVerdict::Ok).unwrap();
        assert_eq!(ok, r#"{"kind":"ok"}"#);
        assert!(v.to_string().contains("seq 42"));
        let none = ParityVerdict::NothingToCheck { ticks: 4 };
        let json = serde_json::to_string(&none).unwrap();
        assert_eq!(json, r#"{"kind":"nothing_to_check","ticks":4}"#);
        assert_eq!(serde_json::from_str::<ParityVerdict>(&json).unwrap(), none);
    }
}
