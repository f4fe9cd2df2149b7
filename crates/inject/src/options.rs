//! `inject`'s options, one struct per subcommand, in a module that needs no I/O: the binary
//! parses them, and xtask builds its runs from them and renders their command line
//! ([`Options::to_args`]).
use std::{
    net::{Ipv4Addr, SocketAddrV4},
    path::PathBuf,
};

use clap::{Parser, Subcommand};
use netns::{Mac, lab};
use paths::args::Args;
pub use trader::FeedSource;
use wire::{itch::Price4, moldudp64::Session};

/// The largest rate `--rate` takes, kinds per second.
pub const MAX_RATE: u64 = 1_000_000;

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
    /// Forge TCP segments against the order session, from the gateway's address, port and MAC:
    /// an RST in the window, an exact RST to another MAC, an ACK with IP options, a SYN on the
    /// established connection (each once a round) and, in the first round, a blind RST sweep
    /// (65,536 RSTs, 64 KiB apart). Named in --kinds, the in-stream forgeries too: SoupBinTCP
    /// written at exactly the next byte the trader expects, a forged Order Accepted
    /// (forged_answer) or End of Session (forged_end), one a round, in turn, each once the
    /// session is quiet and on a stream the last one didn't go into. It watches the session
    /// on --iface to learn the live connection and the next byte the trader expects, waits for
    /// it (and --start-after-us more), then sends --rounds rounds --interval-us apart. Needs
    /// CAP_NET_RAW.
    Segments(SegmentsOptions),
}

/// `inject segments`: see [`Cmd::Segments`].
#[derive(Debug, clap::Args)]
pub struct SegmentsOptions {
    /// Interface to watch the session and send the frames on (the exchange's).
    #[arg(long, default_value = lab::EXCHANGE_IF)]
    pub iface: String,
    /// The order gateway: the session's far end, whose address, port and MAC the lies carry.
    #[arg(long)]
    pub gateway: SocketAddrV4,
    /// Send only these kinds (comma-separated: rst_in_window, rst_other_mac, ack_ip_options,
    /// syn, rst_sweep, and the in-stream forged_answer, forged_end; default: every kind but
    /// the in-stream ones, which go only when named).
    #[arg(long, value_delimiter = ',')]
    pub kinds: Vec<String>,
    /// Rounds of the kinds.
    #[arg(long, default_value_t = 10)]
    pub rounds: u32,
    /// Wait this long after the connection is first up before the first round, in
    /// microseconds.
    #[arg(long, default_value_t = 0)]
    pub start_after_us: u64,
    /// Pause between rounds, in microseconds.
    #[arg(long, default_value_t = 20_000)]
    pub interval_us: u64,
    /// Give up after this many seconds in all (waiting for the connection included).
    #[arg(long, default_value_t = 20)]
    pub max_seconds: u64,
    /// Write what was sent here as JSON.
    #[arg(long)]
    pub json_out: PathBuf,
}

impl SegmentsOptions {
    fn write(&self, a: &mut Args) {
        let SegmentsOptions {
            iface,
            gateway,
            kinds,
            rounds,
            start_after_us,
            interval_us,
            max_seconds,
            json_out,
        } = self;
        a.value("--iface", iface);
        a.value("--gateway", gateway);
        a.list("--kinds", kinds);
        a.value("--rounds", rounds);
        a.value("--start-after-us", start_after_us);
        a.value("--interval-us", interval_us);
        a.value("--max-seconds", max_seconds);
        a.value("--json-out", json_out.display());
    }
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
    #[arg(long, default_value = paths::market::SESSION, value_parser = Session::parse_arg)]
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
    #[arg(long, help_heading = "Where it listens and sends")]
    pub listen: SocketAddrV4,
    /// The trader's market-data address.
    #[arg(long, help_heading = "Where it listens and sends")]
    pub target: SocketAddrV4,
    /// Probability that a packet is dropped.
    #[arg(long, default_value_t = 0.0, help_heading = "What it does to the feed")]
    pub loss: f64,
    /// Probability that a packet is sent twice.
    #[arg(long, default_value_t = 0.0, help_heading = "What it does to the feed")]
    pub dup: f64,
    /// Probability that a packet is held back and sent after the next `reorder_depth` packets.
    #[arg(long, default_value_t = 0.0, help_heading = "What it does to the feed")]
    pub reorder: f64,
    /// How many later packets overtake a held-back one.
    #[arg(long, default_value_t = 3, help_heading = "What it does to the feed")]
    pub reorder_depth: usize,
    /// Constant delay added to every packet, in microseconds (keeps the order).
    #[arg(long, default_value_t = 0, help_heading = "What it does to the feed")]
    pub delay_us: u64,
    /// Generator seed: the same seed makes the same faults.
    #[arg(long, default_value_t = 1, help_heading = "What it does to the feed")]
    pub seed: u64,
    /// Lies: before the packet whose first sequence number is one of these, send a copy of it
    /// in another session (`--stray-session`), as a stray datagram of another feed would
    /// arrive. Comma-separated.
    #[arg(long, value_delimiter = ',', help_heading = "Lies")]
    pub stray_at: Vec<u64>,
    /// The session of the stray copies.
    #[arg(long, default_value = "STRAY", value_parser = Session::parse_arg, help_heading = "Lies")]
    pub stray_session: Session,
    /// Lies: before the packet whose first sequence number is one of these, send a copy of it
    /// in the feed's session numbered `--forge-jump` further on, as a corrupted or forged
    /// header would. Comma-separated.
    #[arg(long, value_delimiter = ',', help_heading = "Lies")]
    pub forge_at: Vec<u64>,
    /// How far ahead the forged copies are numbered.
    #[arg(long, default_value_t = 1 << 40, help_heading = "Lies")]
    pub forge_jump: u64,
    /// Exit after this many seconds without a packet.
    #[arg(long, default_value_t = 20, help_heading = "The run and its results")]
    pub idle_exit: u64,
    /// Where the trader's orders come in (point its `--order-to` here). They go on to
    /// `--order-to` unharmed, from the `--listen` socket: the replay's socket is connected
    /// to the address it sends to, so it takes datagrams from that address only.
    // `--orders-listen`, the old spelling, still parses (a hidden alias), for one release.
    #[arg(long, alias = "orders-listen", help_heading = "Orders")]
    pub order_listen: Option<SocketAddrV4>,
    /// The replay's order address (its `--bind`): where orders go on, as the trader's
    /// `--order-to` says it.
    // `--orders-to`, the old spelling, still parses (a hidden alias), for one release.
    #[arg(long, alias = "orders-to", help_heading = "Orders")]
    pub order_to: Option<SocketAddrV4>,
    /// Print `ready` on stdout once listening.
    #[arg(long, help_heading = "The run and its results")]
    pub ready: bool,
    /// Write what was done here as JSON.
    #[arg(long, help_heading = "The run and its results")]
    pub json_out: PathBuf,
}

/// `inject lies`: see [`Cmd::Lies`].
#[derive(Debug, clap::Args)]
pub struct LiesOptions {
    /// How the lies go out: `udp`, a plain UDP socket bound to --bind; `raw`, whole Ethernet
    /// frames through AF_PACKET with the feed's source spoofed (--spoof), the interface's MAC
    /// as Ethernet source and --dst-mac as destination, both checksums right.
    #[arg(long, value_enum, help_heading = "How the lies go out")]
    pub via: Via,
    /// The interface the feed goes out on (watched, and with --via raw sent on).
    #[arg(long, default_value = lab::EXCHANGE_IF, help_heading = "How the lies go out")]
    pub iface: String,
    /// Where the lies go: the trader's market-data address (the feed's destination).
    #[arg(long, default_value_t = lab::TRADER_MD, help_heading = "How the lies go out")]
    pub target: SocketAddrV4,
    /// `--via udp`: the address the socket binds, port 0 for an ephemeral one (another port of
    /// the exchange's address, or another address of this namespace) [default: 198.18.0.1:0].
    #[arg(long, help_heading = "How the lies go out")]
    pub bind: Option<SocketAddrV4>,
    /// `--via raw`: the IPv4/UDP source the frames carry [default: the feed's, as seen].
    #[arg(long, help_heading = "How the lies go out")]
    pub spoof: Option<SocketAddrV4>,
    /// `--via raw`: the Ethernet destination, the trader's MAC [default: 02:00:c6:12:00:02].
    #[arg(long, help_heading = "How the lies go out")]
    pub dst_mac: Option<Mac>,
    /// The feed to follow: UDP to --target from this address, and port if given (IP[:PORT]).
    #[arg(long, default_value_t = FeedSource { ip: lab::EXCHANGE_IP, port: None }, help_heading = "How the lies go out")]
    pub feed_source: FeedSource,
    /// The kinds to send, comma-separated [default: all; `answer_ahead` only with
    /// --answer-from].
    #[arg(long, value_enum, value_delimiter = ',', help_heading = "What is sent")]
    pub kinds: Vec<LieKind>,
    /// Rounds: each kind is sent once per round.
    #[arg(long, default_value_t = 10, help_heading = "What is sent")]
    pub rounds: u32,
    /// Pause between rounds, in microseconds (the kinds of a round go back to back).
    #[arg(long, default_value_t = 20_000, help_heading = "What is sent")]
    pub interval_us: u64,
    /// Stream mode: send the kinds round-robin at this many per second (`5k` = 5000) for
    /// --rounds rounds, instead of a round every --interval-us.
    #[arg(long, value_parser = parse_rate, conflicts_with = "interval_us", help_heading = "What is sent")]
    pub rate: Option<u64>,
    /// How far past the feed's next number `ahead` and `heartbeat_ahead` are numbered.
    #[arg(long, default_value_t = 100_000, help_heading = "What is sent")]
    pub jump: u64,
    /// The forged trades' price in dollars (Price(4): at most 429496.7295), one the feed never
    /// has, so that an order at it can only come from a lie.
    #[arg(long, default_value = "99999.0000", value_parser = parse_price, help_heading = "What is sent")]
    pub price: Price4,
    /// The MoldUDP64 session every lie claims.
    #[arg(long, default_value = paths::market::SESSION, value_parser = Session::parse_arg, help_heading = "What is sent")]
    pub session: Session,
    /// `--via raw`: the source of the `answer_ahead` lies, the re-request server's address
    /// (e.g. 198.18.0.1:26402).
    #[arg(long, help_heading = "How the lies go out")]
    pub answer_from: Option<SocketAddrV4>,
    /// The most seconds it runs, the wait for the feed's first packet included.
    #[arg(long, default_value_t = 20, help_heading = "The run and its results")]
    pub max_seconds: u64,
    /// Write exactly what was sent here as JSON.
    #[arg(long, help_heading = "The run and its results")]
    pub json_out: PathBuf,
    /// Print `ready` on stdout once the feed's first packet was seen.
    #[arg(long, help_heading = "The run and its results")]
    pub ready: bool,
}

/// Each class of lie, as `--kinds` and the JSON report name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum LieKind {
    /// Two packets of one trade each, numbered next+jump and the one after (a confirmed jump).
    Ahead,
    /// Two end-of-session packets (count 0xFFFF) numbered next+3.
    EndAhead,
    /// One trade at the absurd --price, numbered exactly next (racing the feed's own).
    AtNext,
    /// One trade at the absurd --price, numbered next+1 (a one-message gap).
    JustPast,
    /// A packet numbered next whose one message block is empty (length 0).
    EmptyBlock,
    /// A heartbeat (count 0) numbered next+jump.
    HeartbeatAhead,
    /// A trade at --price numbered next, from --answer-from (the re-request server, spoofed;
    /// --via raw only; skipped without it).
    AnswerAhead,
}

impl LieKind {
    /// Every kind, in the order a round sends them.
    pub const ALL: [LieKind; 7] = [
        LieKind::Ahead,
        LieKind::EndAhead,
        LieKind::AtNext,
        LieKind::JustPast,
        LieKind::EmptyBlock,
        LieKind::HeartbeatAhead,
        LieKind::AnswerAhead,
    ];

    /// The name `--kinds` and the report use.
    pub fn name(self) -> &'static str {
        match self {
            LieKind::Ahead => "ahead",
            LieKind::EndAhead => "end_ahead",
            LieKind::AtNext => "at_next",
            LieKind::JustPast => "just_past",
            LieKind::EmptyBlock => "empty_block",
            LieKind::HeartbeatAhead => "heartbeat_ahead",
            LieKind::AnswerAhead => "answer_ahead",
        }
    }
}

/// How the lies go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Via {
    /// A plain UDP socket bound to --bind (another port or address of this namespace).
    Udp,
    /// Whole Ethernet frames through AF_PACKET, the feed's source spoofed (--spoof).
    Raw,
}

impl Via {
    pub fn name(self) -> &'static str {
        match self {
            Via::Udp => "udp",
            Via::Raw => "raw",
        }
    }
}

/// `--price`: dollars with up to four decimals, as a Price(4).
pub fn parse_price(s: &str) -> Result<Price4, String> {
    let x: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a price in dollars, e.g. 99999.0000"))?;
    Price4::from_f64_quantised(x).map_err(|_| {
        format!(
            "price {s} is not an ITCH Price(4): 0 to {} dollars",
            Price4::MAX
        )
    })
}

/// `--rate`: kinds per second, a whole number, `k` for thousands (`5k`).
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let (num, mult) = match s.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1_000),
        None => (s, 1),
    };
    let rate = num
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("bad rate {s:?}: kinds per second, e.g. 500 or 5k"))?;
    if !(1..=MAX_RATE).contains(&rate) {
        return Err(format!(
            "rate {s} is out of range: 1 to {MAX_RATE} per second"
        ));
    }
    Ok(rate)
}

impl Options {
    /// The command line (after the program's name) that parses back into these options: what
    /// xtask runs. Every value is written out, defaults included, so the line a run prints is
    /// the whole of what it was told.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Args::default();
        match &self.command {
            Cmd::Frames(o) => {
                a.word("frames");
                o.write(&mut a);
            }
            Cmd::Relay(o) => {
                a.word("relay");
                o.write(&mut a);
            }
            Cmd::Lies(o) => {
                a.word("lies");
                o.write(&mut a);
            }
            Cmd::Segments(o) => {
                a.word("segments");
                o.write(&mut a);
            }
        }
        a.into_vec()
    }
}

/// A session as `--session` takes it.
fn session_arg(s: &Session) -> String {
    String::from_utf8_lossy(s.trimmed()).into_owned()
}

impl FramesOptions {
    fn write(&self, a: &mut Args) {
        let FramesOptions {
            iface,
            dst_mac,
            src_ip,
            dst_ip,
            port,
            sink_port,
            session,
            lie_seq,
            rounds,
            interval_us,
            kinds,
            json_out,
        } = self;
        a.value("--iface", iface);
        a.value("--dst-mac", dst_mac);
        a.value("--src-ip", src_ip);
        a.value("--dst-ip", dst_ip);
        a.value("--port", port);
        a.value("--sink-port", sink_port);
        a.value("--session", session_arg(session));
        a.value("--lie-seq", lie_seq);
        a.value("--rounds", rounds);
        a.value("--interval-us", interval_us);
        a.list("--kinds", kinds);
        a.value("--json-out", json_out.display());
    }
}

impl RelayOptions {
    fn write(&self, a: &mut Args) {
        let RelayOptions {
            listen,
            target,
            loss,
            dup,
            reorder,
            reorder_depth,
            delay_us,
            seed,
            stray_at,
            stray_session,
            forge_at,
            forge_jump,
            idle_exit,
            order_listen,
            order_to,
            ready,
            json_out,
        } = self;
        a.value("--listen", listen);
        a.value("--target", target);
        a.value("--loss", loss);
        a.value("--dup", dup);
        a.value("--reorder", reorder);
        a.value("--reorder-depth", reorder_depth);
        a.value("--delay-us", delay_us);
        a.value("--seed", seed);
        a.list("--stray-at", stray_at);
        a.value("--stray-session", session_arg(stray_session));
        a.list("--forge-at", forge_at);
        a.value("--forge-jump", forge_jump);
        a.value("--idle-exit", idle_exit);
        a.some("--order-listen", order_listen.as_ref());
        a.some("--order-to", order_to.as_ref());
        a.flag("--ready", *ready);
        a.value("--json-out", json_out.display());
    }
}

impl LiesOptions {
    fn write(&self, a: &mut Args) {
        let LiesOptions {
            via,
            iface,
            target,
            bind,
            spoof,
            dst_mac,
            feed_source,
            kinds,
            rounds,
            interval_us,
            rate,
            jump,
            price,
            session,
            answer_from,
            max_seconds,
            json_out,
            ready,
        } = self;
        a.value("--via", via.name());
        a.value("--iface", iface);
        a.value("--target", target);
        a.some("--bind", bind.as_ref());
        a.some("--spoof", spoof.as_ref());
        a.some("--dst-mac", dst_mac.as_ref());
        a.value("--feed-source", feed_source);
        let kinds: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        a.list("--kinds", &kinds);
        a.value("--rounds", rounds);
        // The two pacings exclude each other: a rate replaces the interval.
        match rate {
            Some(r) => a.value("--rate", r),
            None => a.value("--interval-us", interval_us),
        }
        a.value("--jump", jump);
        a.value("--price", price);
        a.value("--session", session_arg(session));
        a.some("--answer-from", answer_from.as_ref());
        a.value("--max-seconds", max_seconds);
        a.value("--json-out", json_out.display());
        a.flag("--ready", *ready);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `line`, renders it, parses that again: the two must be the same options.
    fn round_trip(line: &[&str]) {
        let o = Options::try_parse_from(std::iter::once("inject").chain(line.iter().copied()))
            .unwrap_or_else(|e| panic!("{line:?}: {e}"));
        let args = o.to_args();
        let again =
            Options::try_parse_from(std::iter::once("inject".to_owned()).chain(args.clone()))
                .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(format!("{again:?}"), format!("{o:?}"), "{args:?}");
    }

    /// The relay's order leg was spelled `--orders-listen`/`--orders-to`: those still parse,
    /// to the same options, and what is rendered is the new spelling.
    #[test]
    fn the_old_spellings_of_the_order_leg_still_parse() {
        let parse = |leg: &[&str]| {
            let base = [
                "relay",
                "--listen",
                "198.18.0.1:7",
                "--target",
                "198.18.0.2:8",
                "--json-out",
                "/tmp/r.json",
            ];
            let line = base.iter().chain(leg);
            Options::try_parse_from(std::iter::once(&"inject").chain(line))
                .unwrap_or_else(|e| panic!("{leg:?}: {e}"))
        };
        let new = parse(&[
            "--order-listen",
            "198.18.0.1:5",
            "--order-to",
            "198.18.0.1:6",
        ]);
        let old = parse(&[
            "--orders-listen",
            "198.18.0.1:5",
            "--orders-to",
            "198.18.0.1:6",
        ]);
        assert_eq!(format!("{new:?}"), format!("{old:?}"));
        let args = old.to_args();
        assert!(args.iter().any(|a| a == "--order-to"), "{args:?}");
        assert!(!args.iter().any(|a| a == "--orders-to"), "{args:?}");
    }

    #[test]
    fn to_args_parses_back_into_the_same_options() {
        let frames = [
            "frames",
            "--dst-mac",
            "02:00:c6:12:00:02",
            "--src-ip",
            "198.18.0.1",
            "--dst-ip",
            "198.18.0.2",
            "--sink-port",
            "9",
            "--lie-seq",
            "0",
            "--json-out",
            "/tmp/f.json",
        ];
        round_trip(&frames);
        let mut every = frames.to_vec();
        every.extend([
            "--iface",
            "ex9",
            "--port",
            "7",
            "--session",
            "ABC",
            "--rounds",
            "3",
            "--interval-us",
            "5",
            "--kinds",
            "truncated_udp,ihl_below_5",
        ]);
        round_trip(&every);
        let relay = [
            "relay",
            "--listen",
            "198.18.0.1:1",
            "--target",
            "198.18.0.2:2",
            "--json-out",
            "/tmp/r.json",
        ];
        round_trip(&relay);
        let mut every = relay.to_vec();
        every.extend([
            "--loss",
            "0.25",
            "--dup",
            "0.5",
            "--reorder",
            "0.125",
            "--reorder-depth",
            "4",
            "--delay-us",
            "10",
            "--seed",
            "7",
            "--stray-at",
            "3,9",
            "--stray-session",
            "OTHER",
            "--forge-at",
            "5",
            "--forge-jump",
            "99",
            "--idle-exit",
            "4",
            "--order-listen",
            "198.18.0.1:5",
            "--order-to",
            "198.18.0.1:6",
            "--ready",
        ]);
        round_trip(&every);
        round_trip(&["lies", "--via", "udp", "--json-out", "/tmp/l.json"]);
        round_trip(&[
            "lies",
            "--via",
            "raw",
            "--iface",
            "ex9",
            "--target",
            "198.18.0.2:26400",
            "--bind",
            "198.18.0.1:0",
            "--spoof",
            "198.18.0.1:26404",
            "--dst-mac",
            "02:00:c6:12:00:02",
            "--feed-source",
            "198.18.0.1:26404",
            "--kinds",
            "ahead,answer_ahead",
            "--rounds",
            "2",
            "--rate",
            "5k",
            "--jump",
            "8",
            "--price",
            "12.5",
            "--session",
            "XYZ",
            "--answer-from",
            "198.18.0.1:26402",
            "--max-seconds",
            "3",
            "--json-out",
            "/tmp/l.json",
            "--ready",
        ]);
        round_trip(&[
            "segments",
            "--gateway",
            "198.18.0.1:26401",
            "--json-out",
            "/tmp/s.json",
        ]);
        round_trip(&[
            "segments",
            "--iface",
            "ex9",
            "--gateway",
            "198.18.0.1:26401",
            "--kinds",
            "forged_answer,forged_end",
            "--rounds",
            "4",
            "--start-after-us",
            "1100000",
            "--interval-us",
            "1100000",
            "--max-seconds",
            "9",
            "--json-out",
            "/tmp/s.json",
        ]);
    }
}
