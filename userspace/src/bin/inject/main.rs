//! Fault and garbage injection for the lab's reliability tests, run in the exchange namespace.
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
//!
//! Everything goes to the addresses given, which the tests take from the lab (198.18.0.0/15);
//! the defaults are the lab's (`netns::lab`).
use std::{
    net::{Ipv4Addr, SocketAddrV4},
    path::PathBuf,
};

use clap::{Parser, Subcommand};
use netns::{Mac, lab};
use wire::moldudp64::Session;

mod frames;
#[expect(
    unsafe_code,
    reason = "an AF_PACKET socket: libc calls with no safe wrapper"
)]
mod raw;
mod relay;
mod report;

/// Fault and garbage injection for the lab's reliability tests: crafted malformed frames
/// (`frames`), and a seeded lossy, duplicating, reordering, delaying relay (`relay`) where
/// the kernel has no `tc netem`. Run it in the exchange namespace.
#[derive(Debug, Parser)]
#[command(version)]
struct Options {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Send rounds of malformed and non-matching frames and lying MoldUDP64 packets.
    Frames(FramesOptions),
    /// Relay UDP with seeded loss, duplication, reordering and delay.
    Relay(RelayOptions),
}

#[derive(Debug, clap::Args)]
struct FramesOptions {
    /// Interface to send raw frames on.
    #[arg(long, default_value = lab::EXCHANGE_IF)]
    iface: String,
    /// Destination MAC (the trader's), e.g. 02:00:c6:12:00:02.
    #[arg(long)]
    dst_mac: Mac,
    /// Our IPv4 address.
    #[arg(long)]
    src_ip: Ipv4Addr,
    /// The trader's IPv4 address.
    #[arg(long)]
    dst_ip: Ipv4Addr,
    /// The market-data port.
    #[arg(long, default_value_t = lab::MD_PORT)]
    port: u16,
    /// A port the test listens on in the trader namespace: what should reach the kernel goes there.
    #[arg(long)]
    sink_port: u16,
    /// MoldUDP64 session of the lying packets (the feed's, so the trader doesn't drop them as
    /// another session's before looking at them).
    #[arg(long, default_value = lab::SESSION, value_parser = parse_session)]
    session: Session,
    /// Sequence number the lying MoldUDP64 packets claim.
    #[arg(long)]
    lie_seq: u64,
    /// Rounds of the whole set.
    #[arg(long, default_value_t = 10)]
    rounds: u32,
    /// Pause between rounds, in microseconds.
    #[arg(long, default_value_t = 10_000)]
    interval_us: u64,
    /// Send only these kinds (comma-separated names, as the JSON report names them; default:
    /// every kind). `truncated_ethernet,truncated_ipv4,truncated_udp,ihl_below_5` are the
    /// frames the XDP program counts as malformed.
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<String>,
    /// Write what was sent here as JSON.
    #[arg(long)]
    json_out: PathBuf,
}

#[derive(Debug, clap::Args)]
struct RelayOptions {
    /// Where the replay sends (an address of this namespace).
    #[arg(long)]
    listen: SocketAddrV4,
    /// The trader's market-data address.
    #[arg(long)]
    target: SocketAddrV4,
    /// Probability that a packet is dropped.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Probability that a packet is sent twice.
    #[arg(long, default_value_t = 0.0)]
    dup: f64,
    /// Probability that a packet is held back and sent after the next `reorder_depth` packets.
    #[arg(long, default_value_t = 0.0)]
    reorder: f64,
    /// How many later packets overtake a held-back one.
    #[arg(long, default_value_t = 3)]
    reorder_depth: usize,
    /// Constant delay added to every packet, in microseconds (keeps the order).
    #[arg(long, default_value_t = 0)]
    delay_us: u64,
    /// Generator seed: the same seed makes the same faults.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Lies: before the packet whose first sequence number is one of these, send a copy of it
    /// in another session (`--stray-session`), as a stray datagram of another feed would
    /// arrive. Comma-separated.
    #[arg(long, value_delimiter = ',')]
    stray_at: Vec<u64>,
    /// The session of the stray copies.
    #[arg(long, default_value = "STRAY", value_parser = parse_session)]
    stray_session: Session,
    /// Lies: before the packet whose first sequence number is one of these, send a copy of it
    /// in the feed's session numbered `--forge-jump` further on, as a corrupted or forged
    /// header would. Comma-separated.
    #[arg(long, value_delimiter = ',')]
    forge_at: Vec<u64>,
    /// How far ahead the forged copies are numbered.
    #[arg(long, default_value_t = 1 << 40)]
    forge_jump: u64,
    /// Exit after this many seconds without a packet.
    #[arg(long, default_value_t = 20)]
    idle_exit: u64,
    /// Where the trader's orders come in (point its `--order-port` here). They go on to
    /// `--orders-to` unharmed, from the `--listen` socket: the replay's socket is connected
    /// to the address it sends to, so it takes datagrams from that address only.
    #[arg(long)]
    orders_listen: Option<SocketAddrV4>,
    /// The replay's order address (its `--bind`).
    #[arg(long)]
    orders_to: Option<SocketAddrV4>,
    /// Print `ready` on stdout once listening.
    #[arg(long)]
    ready: bool,
    /// Write what was done here as JSON.
    #[arg(long)]
    json_out: PathBuf,
}

fn parse_session(s: &str) -> Result<Session, String> {
    Session::new(s)
        .map_err(|_| format!("{s:?} is not a session: use up to 10 printable ASCII characters"))
}

fn main() -> std::process::ExitCode {
    userspace::cli::run_main(real_main)
}

fn real_main() -> anyhow::Result<()> {
    match Options::parse().command {
        Cmd::Frames(o) => frames::run(o),
        Cmd::Relay(o) => relay::run(o),
    }
}
