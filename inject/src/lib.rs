//! Fault and garbage injection for the lab's reliability and trust tests, run in the exchange
//! namespace (the `inject` binary parses [`Options`] and calls [`run`]).
//!
//! * `inject frames`: sends crafted Ethernet frames through an AF_PACKET socket on the exchange
//!   veth (truncated headers, IHL < 5, IP options, fragments, VLAN, IPv6, other protocols,
//!   other ports, zero-length and lying UDP, lying IPv4 lengths, the largest and a too-large
//!   frame, wrong IPv4 and UDP checksums, another destination IPv4 address or MAC) and crafted
//!   MoldUDP64 payloads through a normal UDP socket (a short header, lying
//!   message counts and block lengths), in rounds, and writes what it sent as JSON.
//! * `inject relay`: a UDP relay between the replay and the trader that loses, duplicates,
//!   reorders and delays packets from a seeded generator, tells lies where asked (a stray
//!   copy in another session, a copy numbered far ahead), and writes exactly what it did. It
//!   stands in for `tc netem` where the kernel lacks `sch_netem`, and unlike netem it says
//!   which sequence numbers it dropped.
//! * `inject lies`: an adversary on the segment beside a running replay: watches the real feed
//!   go by on the interface, and tells every class of lie a forger would, numbered from the
//!   feed's next sequence number (far ahead, end of session ahead, at and just past the next
//!   number with an absurd price, an empty block, a heartbeat ahead, a spoofed re-request
//!   answer), from another port or address (`--via udp`) or with the feed's exact source
//!   spoofed (`--via raw`), and writes exactly what it sent.
//!
//! Everything goes to the addresses given, which the tests take from the lab (198.18.0.0/15);
//! the defaults are the lab's (`netns::lab`).
use std::{
    net::{Ipv4Addr, SocketAddrV4},
    path::PathBuf,
};

use clap::{Parser, Subcommand};

use crate::cli::parse_session;
use netns::{Mac, lab};
use wire::{itch::Price4, moldudp64::Session};

pub mod frames;
pub mod lies;
#[expect(
    unsafe_code,
    reason = "an AF_PACKET socket: libc calls with no safe wrapper"
)]
mod raw;
pub mod relay;
pub mod report;

/// Fault and garbage injection for the lab's reliability tests: crafted malformed frames
/// (`frames`), a seeded lossy, duplicating, reordering, delaying relay (`relay`) where the
/// kernel has no `tc netem`, and a forger of the feed's sequence (`lies`). Run it in the
/// exchange namespace.
#[derive(Debug, Parser)]
#[command(name = "inject", version)]
pub struct Options {
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Send rounds of malformed and non-matching frames and lying MoldUDP64 packets.
    Frames(FramesOptions),
    /// Relay UDP with seeded loss, duplication, reordering and delay.
    Relay(RelayOptions),
    /// Forge the feed beside a running replay: every class of sequence lie, numbered from the
    /// feed's next sequence number as seen on the interface.
    ///
    /// Each round sends every kind once (`ahead` and `end_ahead` are two packets each, back to
    /// back), numbered from the feed's next sequence number: the largest sequence + count of
    /// its data packets seen so far on --iface (heartbeats and end of session not counted). It
    /// waits for the feed's first packet, then sends, and stops after --rounds rounds or
    /// --max-seconds in all. Every address must lie in 198.18.0.0/15. Needs CAP_NET_RAW (it
    /// watches the feed on an AF_PACKET socket).
    Lies(LiesOptions),
}

#[derive(Debug, clap::Args)]
pub struct FramesOptions {
    /// Interface to send raw frames on.
    #[arg(long, default_value = lab::EXCHANGE_IF)]
    pub iface: String,
    /// Destination MAC (the trader's), e.g. 02:00:c6:12:00:02.
    #[arg(long)]
    pub dst_mac: Mac,
    /// Our IPv4 address.
    #[arg(long)]
    pub src_ip: Ipv4Addr,
    /// The trader's IPv4 address.
    #[arg(long)]
    pub dst_ip: Ipv4Addr,
    /// The market-data port.
    #[arg(long, default_value_t = lab::MD_PORT)]
    pub port: u16,
    /// A port the test listens on in the trader namespace: what should reach the kernel goes there.
    #[arg(long)]
    pub sink_port: u16,
    /// MoldUDP64 session of the lying packets (the feed's, so the trader doesn't drop them as
    /// another session's before looking at them).
    #[arg(long, default_value = paths::market::SESSION, value_parser = parse_session)]
    pub session: Session,
    /// Sequence number the lying MoldUDP64 packets claim.
    #[arg(long)]
    pub lie_seq: u64,
    /// Rounds of the whole set.
    #[arg(long, default_value_t = 10)]
    pub rounds: u32,
    /// Pause between rounds, in microseconds.
    #[arg(long, default_value_t = 10_000)]
    pub interval_us: u64,
    /// Send only these kinds (comma-separated names, as the JSON report names them; default:
    /// every kind). `truncated_ethernet,truncated_ipv4,truncated_udp,ihl_below_5` are the
    /// frames the XDP program counts as malformed.
    #[arg(long, value_delimiter = ',')]
    pub kinds: Vec<String>,
    /// Write what was sent here as JSON.
    #[arg(long)]
    pub json_out: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct RelayOptions {
    /// Where the replay sends (an address of this namespace).
    #[arg(long)]
    pub listen: SocketAddrV4,
    /// The trader's market-data address.
    #[arg(long)]
    pub target: SocketAddrV4,
    /// Probability that a packet is dropped.
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Probability that a packet is sent twice.
    #[arg(long, default_value_t = 0.0)]
    pub dup: f64,
    /// Probability that a packet is held back and sent after the next `reorder_depth` packets.
    #[arg(long, default_value_t = 0.0)]
    pub reorder: f64,
    /// How many later packets overtake a held-back one.
    #[arg(long, default_value_t = 3)]
    pub reorder_depth: usize,
    /// Constant delay added to every packet, in microseconds (keeps the order).
    #[arg(long, default_value_t = 0)]
    pub delay_us: u64,
    /// Generator seed: the same seed makes the same faults.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Lies: before the packet whose first sequence number is one of these, send a copy of it
    /// in another session (`--stray-session`), as a stray datagram of another feed would
    /// arrive. Comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub stray_at: Vec<u64>,
    /// The session of the stray copies.
    #[arg(long, default_value = "STRAY", value_parser = parse_session)]
    pub stray_session: Session,
    /// Lies: before the packet whose first sequence number is one of these, send a copy of it
    /// in the feed's session numbered `--forge-jump` further on, as a corrupted or forged
    /// header would. Comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub forge_at: Vec<u64>,
    /// How far ahead the forged copies are numbered.
    #[arg(long, default_value_t = 1 << 40)]
    pub forge_jump: u64,
    /// Exit after this many seconds without a packet.
    #[arg(long, default_value_t = 20)]
    pub idle_exit: u64,
    /// Where the trader's orders come in (point its `--order-to` here). They go on to
    /// `--orders-to` unharmed, from the `--listen` socket: the replay's socket is connected
    /// to the address it sends to, so it takes datagrams from that address only.
    #[arg(long)]
    pub orders_listen: Option<SocketAddrV4>,
    /// The replay's order address (its `--bind`).
    #[arg(long)]
    pub orders_to: Option<SocketAddrV4>,
    /// Print `ready` on stdout once listening.
    #[arg(long)]
    pub ready: bool,
    /// Write what was done here as JSON.
    #[arg(long)]
    pub json_out: PathBuf,
}

/// `inject lies`: see [`Cmd::Lies`].
#[derive(Debug, clap::Args)]
pub struct LiesOptions {
    /// How the lies go out: `udp`, a plain UDP socket bound to --bind; `raw`, whole Ethernet
    /// frames through AF_PACKET with the feed's source spoofed (--spoof), the interface's MAC
    /// as Ethernet source and --dst-mac as destination, both checksums right.
    #[arg(long, value_enum)]
    pub via: lies::Via,
    /// The interface the feed goes out on (watched, and with --via raw sent on).
    #[arg(long, default_value = lab::EXCHANGE_IF)]
    pub iface: String,
    /// Where the lies go: the trader's market-data address (the feed's destination).
    #[arg(long, default_value_t = lab::TRADER_MD)]
    pub target: SocketAddrV4,
    /// `--via udp`: the address the socket binds, port 0 for an ephemeral one (another port of
    /// the exchange's address, or another address of this namespace) [default: 198.18.0.1:0].
    #[arg(long)]
    pub bind: Option<SocketAddrV4>,
    /// `--via raw`: the IPv4/UDP source the frames carry [default: the feed's, as seen].
    #[arg(long)]
    pub spoof: Option<SocketAddrV4>,
    /// `--via raw`: the Ethernet destination, the trader's MAC [default: 02:00:c6:12:00:02].
    #[arg(long)]
    pub dst_mac: Option<Mac>,
    /// The feed to follow: UDP to --target from this address, and port if given (IP[:PORT]).
    #[arg(long, default_value_t = lies::FeedSource { ip: lab::EXCHANGE_IP, port: None })]
    pub feed_source: lies::FeedSource,
    /// The kinds to send, comma-separated [default: all; `answer_ahead` only with
    /// --answer-from].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub kinds: Vec<lies::LieKind>,
    /// Rounds: each kind is sent once per round.
    #[arg(long, default_value_t = 10)]
    pub rounds: u32,
    /// Pause between rounds, in microseconds (the kinds of a round go back to back).
    #[arg(long, default_value_t = 20_000)]
    pub interval_us: u64,
    /// Stream mode: send the kinds round-robin at this many per second (`5k` = 5000) for
    /// --rounds rounds, instead of a round every --interval-us.
    #[arg(long, value_parser = lies::parse_rate, conflicts_with = "interval_us")]
    pub rate: Option<u64>,
    /// How far past the feed's next number `ahead` and `heartbeat_ahead` are numbered.
    #[arg(long, default_value_t = 100_000)]
    pub jump: u64,
    /// The forged trades' price in dollars (Price(4): at most 429496.7295), one the feed never
    /// has, so that an order at it can only come from a lie.
    #[arg(long, default_value = "99999.0000", value_parser = lies::parse_price)]
    pub price: Price4,
    /// The MoldUDP64 session every lie claims.
    #[arg(long, default_value = paths::market::SESSION, value_parser = parse_session)]
    pub session: Session,
    /// `--via raw`: the source of the `answer_ahead` lies, the re-request server's address
    /// (e.g. 198.18.0.1:26402).
    #[arg(long)]
    pub answer_from: Option<SocketAddrV4>,
    /// The most seconds it runs, the wait for the feed's first packet included.
    #[arg(long, default_value_t = 20)]
    pub max_seconds: u64,
    /// Write exactly what was sent here as JSON.
    #[arg(long)]
    pub json_out: PathBuf,
    /// Print `ready` on stdout once the feed's first packet was seen.
    #[arg(long)]
    pub ready: bool,
}

/// Runs the subcommand `o` names.
pub fn run(o: Options) -> anyhow::Result<()> {
    match o.command {
        Cmd::Frames(o) => frames::run(o),
        Cmd::Relay(o) => relay::run(o),
        Cmd::Lies(o) => lies::run(o),
    }
}
