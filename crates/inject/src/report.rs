//! What `inject` writes as JSON (`--json-out`). The reliability tests read the same types
//! (they include this file), so the writer and the reader can't disagree on a field.
use std::{collections::BTreeMap, net::SocketAddrV4};

use serde::{Deserialize, Serialize};

/// `inject frames`: per kind of crafted traffic, what was sent.
pub type FramesReport = BTreeMap<String, KindReport>;

/// One kind of crafted traffic, over all rounds.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindReport {
    /// Frames or datagrams the local kernel took.
    pub sent: u64,
    /// Sends the local kernel refused (e.g. a frame above the MTU).
    pub refused: u64,
    /// The last refusal's error.
    pub error: Option<String>,
}

/// `inject segments`: per kind of forged segment, what was sent, and to whom.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentsReport {
    /// Per kind, over all rounds.
    pub kinds: BTreeMap<String, KindReport>,
    /// Rounds sent.
    pub rounds: u32,
    /// The trader's end of the connection the lies went to (the last one learned).
    pub trader: Option<SocketAddrV4>,
    /// The in-stream forgeries (`forged_answer`, `forged_end`), each send, in the order sent.
    #[serde(default)]
    pub in_stream: Vec<InStreamLie>,
}

/// One SoupBinTCP packet written into the trader's stream at its RCV.NXT.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InStreamLie {
    /// `forged_answer` or `forged_end`.
    pub kind: String,
    /// The round it was due in (from 0).
    pub round: u32,
    /// The trader's end of the connection it went into.
    pub trader: SocketAddrV4,
    /// Its first byte's sequence number: the trader's RCV.NXT as watched.
    pub seq: u32,
    /// Its length in the stream: the whole SoupBinTCP packet.
    pub len: u32,
    /// The forged Order Accepted's UserRefNum (an order the trader never sent).
    pub user_ref: Option<u32>,
    /// Whether it went out ahead of the gateway's own bytes at its number, as the watcher saw
    /// the interface (`false`: the gateway's went first, so the trader's TCP took those and
    /// dropped the forgery as a repeat, or took only its tail; it was sent again). `None`:
    /// not known (the run ended first).
    pub ahead: Option<bool>,
}

/// `inject relay`: exactly what the relay did.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayReport {
    /// Datagrams received from the replay.
    pub received_packets: u64,
    /// Datagrams sent on, duplicates and end-of-session packets included.
    pub forwarded_packets: u64,
    /// End-of-session packets forwarded.
    pub end_of_session: u64,
    /// Messages in the packets received (end of session excluded).
    pub received_messages: u64,
    /// Sequence numbers of the messages dropped.
    pub lost: Vec<u64>,
    /// Sequence numbers of the first message of each packet sent twice.
    pub duplicated: Vec<u64>,
    /// Sequence numbers of the first message of each packet held back and sent late.
    pub reordered: Vec<u64>,
    /// Sequence numbers of the packets a copy in another session was sent before.
    #[serde(default)]
    pub stray_session: Vec<u64>,
    /// The sequence numbers the forged copies carried.
    #[serde(default)]
    pub forged_seq: Vec<u64>,
}

/// `inject lies`: exactly what was sent, per kind of lie, and the feed it lied about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiesReport {
    /// How the lies went out: `udp` (a socket of this namespace) or `raw` (whole Ethernet
    /// frames through AF_PACKET, the feed's source spoofed).
    pub via: String,
    /// The IPv4/UDP source the lies carried (`answer_ahead`'s: `answer_from`).
    pub source: SocketAddrV4,
    /// The source of the `answer_ahead` lies (the re-request server spoofed), if given.
    pub answer_from: Option<SocketAddrV4>,
    /// Ethernet source and destination of the frames (`raw` only).
    pub src_mac: Option<String>,
    /// The trader's MAC (`raw` only).
    pub dst_mac: Option<String>,
    /// Where the lies went: the trader's market-data address.
    pub target: SocketAddrV4,
    /// The feed followed: its IPv4 source, and port if one was given (`IP` or `IP:PORT`).
    pub feed_source: String,
    /// The MoldUDP64 session every lie claimed.
    pub session: String,
    /// The stock of the forged trades.
    pub stock: String,
    /// The price of the forged trades, Price(4) raw.
    pub price: u32,
    /// How far ahead `ahead` and `heartbeat_ahead` were numbered.
    pub jump: u64,
    /// Rounds asked for (each kind once per round).
    pub rounds: u32,
    /// `interval` (a round every `interval_us`) or `rate` (kinds round-robin at `rate`/s).
    pub mode: String,
    /// The pause between rounds in `interval` mode.
    pub interval_us: Option<u64>,
    /// Kinds sent per second in `rate` mode.
    pub rate: Option<u64>,
    /// The feed's next sequence number (max of sequence + count over its data packets)
    /// when the first lie went out.
    pub feed_next_at_start: u64,
    /// The same after the last lie went out.
    pub feed_next_at_end: u64,
    /// Data packets of the feed seen (heartbeats and end of session not counted).
    pub feed_packets_seen: u64,
    /// Whether `--max-seconds` ran out before every round was sent.
    pub cut_short: bool,
    /// Kinds asked for (the default: all) that could not be sent, e.g. `answer_ahead`
    /// without `--answer-from`.
    pub skipped: Vec<String>,
    /// Per kind (as `--kinds` names it), what was sent.
    pub kinds: BTreeMap<String, LieKindReport>,
    /// All kinds together.
    pub totals: LieTotals,
}

/// One kind of lie, over all rounds.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LieKindReport {
    /// Each packet the local kernel took, in the order sent.
    pub packets: Vec<SentLie>,
    /// Sends the local kernel refused (not in `packets`).
    pub refused: u64,
    /// The last refusal's error.
    pub error: Option<String>,
}

/// One lying packet as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentLie {
    /// The round it belongs to (from 0).
    pub round: u32,
    /// The feed's next sequence number it was numbered from.
    pub feed_next: u64,
    /// The sequence number of its first message, as claimed.
    pub seq: u64,
    /// Its MoldUDP64 message count as on the wire (0 heartbeat, 65535 end of session).
    pub count: u16,
    /// The forged trade's price, Price(4) raw (packets that carry a trade).
    pub price: Option<u32>,
    /// The forged trade's stock (packets that carry a trade).
    pub stock: Option<String>,
    /// The IPv4/UDP source it carried.
    pub source: SocketAddrV4,
}

/// `inject lies`, all kinds together.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LieTotals {
    /// Packets sent.
    pub packets: u64,
    /// Messages they claimed (data packets' counts; heartbeats and end of session claim none).
    pub messages: u64,
    /// Packets that carried a forged trade.
    pub ticks: u64,
    /// Sends refused.
    pub refused: u64,
}
