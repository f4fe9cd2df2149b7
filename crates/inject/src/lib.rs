//! Fault and garbage injection for the lab's reliability and trust tests, run in the exchange
//! namespace (the `inject` binary parses [`Options`] and calls [`run`]; xtask builds the
//! matrix's lie and malformed streams from the same [`Options`], without the `io` feature).
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
//! * `inject segments`: an adversary beside the order session: watches it on the interface
//!   and forges TCP segments from the gateway (an RST in the window, an exact RST to another
//!   MAC, an ACK with IP options, a SYN, a blind RST sweep), and writes what it sent.
//!
//! Everything goes to the addresses given, which the tests take from the lab (198.18.0.0/15);
//! the defaults are the lab's (`netns::lab`).

#[cfg(feature = "io")]
pub mod frames;
#[cfg(feature = "io")]
pub mod lies;
mod options;
#[cfg(feature = "io")]
#[expect(
    unsafe_code,
    reason = "an AF_PACKET socket: libc calls with no safe wrapper"
)]
mod raw;
#[cfg(feature = "io")]
pub mod relay;
pub mod report;
#[cfg(feature = "io")]
pub mod segments;

pub use options::{
    Cmd, FeedSource, FramesOptions, LieKind, LiesOptions, MAX_RATE, Options, RelayOptions,
    SegmentsOptions, Via, parse_price, parse_rate,
};

/// Runs the subcommand `o` names.
#[cfg(feature = "io")]
pub fn run(o: Options) -> anyhow::Result<()> {
    match o.command {
        Cmd::Frames(o) => frames::run(o),
        Cmd::Relay(o) => relay::run(o),
        Cmd::Lies(o) => lies::run(o),
        Cmd::Segments(o) => segments::run(o),
    }
}
