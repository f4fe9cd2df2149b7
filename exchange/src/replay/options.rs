//! The replay's options: what `replay --help` shows.
use std::{net::SocketAddrV4, path::PathBuf};

use clap::Parser;
use paths::{ExchangeIo, Expect, Orders, XdpMode, args::Args};
use wire::moldudp64::Session;

use paths::{Rate, Source};

/// The exchange side of the lab: replays market data at a set rate, takes the trader's orders
/// back, measures tick-to-trade, books fills, and checks parity with the backtest.
#[derive(Debug, Parser)]
#[command(name = "replay", version)]
pub struct Options {
    /// Market data: gbm[:SEED[:BARS]], closes:PATH (raw f64 or .csv), itch:PATH, pcap:PATH.
    #[arg(long, default_value_t = Source::DEFAULT)]
    pub source: Source,
    /// Send at most this many messages (default: the whole source).
    #[arg(long, value_parser = parse_count)]
    pub count: Option<u64>,
    /// Send for at most this many seconds of schedule (needs a --rate).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<f64>,
    /// Messages per second, 1 to 1e8 (open loop, busy-waiting to the microsecond), or `max`.
    #[arg(long, default_value_t = Rate::DEFAULT)]
    pub rate: Rate,
    /// ITCH messages per MoldUDP64 packet.
    #[arg(long, default_value_t = 1)]
    pub batch: u16,
    /// The MoldUDP64 session the feed is sent in (a pcap source keeps its own).
    #[arg(long, default_value = paths::market::SESSION, value_parser = Session::parse_arg)]
    pub session: Session,
    /// The first message's sequence number (a pcap source keeps its own): 1 starts a session,
    /// a larger one is a feed the trader joins in the middle.
    #[arg(long, default_value_t = 1)]
    pub first_seq: u64,
    /// The trader's market-data address.
    #[arg(long, default_value_t = netns::lab::TRADER_MD)]
    pub target: SocketAddrV4,
    /// Line B of an A/B feed: every packet is also sent here, right after line A (`--io udp`).
    #[arg(long)]
    pub target_b: Option<SocketAddrV4>,
    /// Our address; orders come back to it.
    #[arg(long, default_value_t = netns::lab::EXCHANGE_ORDERS)]
    pub bind: SocketAddrV4,
    /// The UDP port line A's feed leaves from, on --bind's address: the feed's source, as the
    /// trader's --feed-source names it. 0: an ephemeral port.
    #[arg(long, default_value_t = netns::lab::FEED_SOURCE_PORT)]
    pub feed_port: u16,
    /// The UDP port line B's feed leaves from (with --target-b). 0: an ephemeral port.
    #[arg(long, default_value_t = netns::lab::FEED_SOURCE_PORT_B)]
    pub feed_port_b: u16,
    /// Strategy length n, for the parity check.
    #[arg(long, default_value_t = paths::market::STRATEGY_N)]
    pub n: i64,
    /// Stock symbol of the synthetic ticks, and the one traded.
    #[arg(long, default_value = paths::market::STOCK)]
    pub stock: String,
    /// Pin to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// After the last tick, wait this long for outstanding orders.
    #[arg(long, default_value_t = 500)]
    pub drain_ms: u64,
    /// Harness self-test: after each send, stall this many µs before taking orders (a busy
    /// wait, as a preemption of the replay would). Tick-to-trade, counted to each order's
    /// arrival, must not move; the harness delay shows the stall.
    #[arg(long, default_value_t = 0)]
    pub stall_after_send_us: u64,
    /// Label for this run in the results (e.g. the trader's path).
    #[arg(long, default_value = "run")]
    pub label: String,
    /// Write the result here as JSON (stdout if absent).
    #[arg(long)]
    pub json_out: Option<PathBuf>,
    /// Write the tick-to-trade histogram here (.hgrm, microseconds); beside it
    /// `<name>-seen.hgrm` (to when the replay read each order) and `<name>-harness.hgrm` (the
    /// difference: the harness's own delay).
    #[arg(long)]
    pub hgrm_out: Option<PathBuf>,
    /// Write what was sent to this pcap file (after the run, not during it).
    #[arg(long)]
    pub pcap_out: Option<PathBuf>,
    /// What the trader answers: `signals` (the strategy's orders; parity is checked) or
    /// `every` (one order per tick: the XDP reflector floor).
    #[arg(long, value_enum, default_value_t = Expect::Signals)]
    pub expect: Expect,
    /// How orders come back: `udp` (the lab's order in a datagram to --bind), or OUCH 5.0 in a
    /// SoupBinTCP 3.00 session the replay serves on --bind's TCP port (`tcp-kernel` and
    /// `tcp-xdp` are the trader's two ways to send them; this end is the kernel's TCP for
    /// both).
    #[arg(long, value_enum, default_value_t = Orders::Udp)]
    pub orders: Orders,
    /// Testing only: after taking N orders, the order session stalls (no reads, no answers,
    /// no heartbeats, no new connection), to show the trader detects a dead exchange.
    #[arg(long, hide = true)]
    pub session_stall_after: Option<u64>,
    /// Testing only: after taking N orders, the order session's connection is reset (an RST
    /// from this end), to show the trader logs in again with nothing traded twice.
    #[arg(long, hide = true)]
    pub session_reset_after: Option<u64>,
    /// Testing only: after taking N orders, the order session's connection is closed from this
    /// end (a FIN: no more answers on it, its orders still read), to show the trader logs in
    /// again with every answer had. Not within the run's last orders: an End of Session due on
    /// the closed connection is not sent.
    #[arg(long, hide = true)]
    pub session_close_after: Option<u64>,
    /// Attach a pass-everything XDP program to this interface first (XDP_TX from the peer
    /// into a veth needs an XDP program on this end).
    #[arg(long)]
    pub xdp_pass_on: Option<String>,
    /// Exchange-side I/O: `udp` (kernel socket) or `xdp` (AF_XDP on --iface: the bypass
    /// harness, neither end on the kernel UDP stack).
    #[arg(long, value_enum, default_value_t = ExchangeIo::Udp)]
    pub io: ExchangeIo,
    /// Our interface (for --io xdp).
    #[arg(long, default_value = netns::lab::EXCHANGE_IF)]
    pub iface: String,
    /// The trader's MAC (for --io xdp; the lab's fixed trader MAC by default).
    #[arg(long, default_value_t = netns::lab::TRADER_MAC)]
    pub target_mac: netns::Mac,
    /// XDP mode on our interface (for --io xdp): `native` or `skb`.
    #[arg(long, value_enum, default_value_t = XdpMode::Native)]
    pub xdp_mode: XdpMode,
    /// Serve MoldUDP64 re-requests (the trader's `--retransmit-to`) on --bind's address at
    /// --retransmit-port, from a thread that sleeps until a request comes.
    #[arg(long)]
    pub retransmit: bool,
    /// The re-request server's UDP port.
    #[arg(long, default_value_t = netns::lab::RETRANSMIT_PORT)]
    pub retransmit_port: u16,
    /// Messages the re-request server keeps: requests for older ones are refused.
    #[arg(long, default_value_t = 100_000)]
    pub retransmit_history: u64,
    /// Progress on stderr (default: when stderr is a terminal).
    #[arg(long)]
    pub progress: Option<bool>,
    /// Check the options and the source (build the feed and the backtest), then exit without
    /// opening a socket: what `cargo xtask bench` runs before it builds the lab.
    #[arg(long)]
    pub check: bool,
}

fn parse_count(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("bad count {s:?}: a number of messages, at least 1")),
    }
}

fn parse_duration(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(d) if d > 0.0 && d.is_finite() => Ok(d),
        _ => Err(format!("bad duration {s:?}: a positive number of seconds")),
    }
}

impl Options {
    /// The command line that parses back into these options (the program's name not
    /// included): how xtask starts the replay from a value of this type. Every field is named
    /// here (a new one fails to compile until it is); a value only where it differs from the
    /// default (so options after it, `--replay-arg`, can still set the rest), flags only when
    /// set.
    pub fn to_args(&self) -> Vec<String> {
        let Options {
            source,
            count,
            duration,
            rate,
            batch,
            session,
            first_seq,
            target,
            target_b,
            bind,
            feed_port,
            feed_port_b,
            n,
            stock,
            cpu,
            drain_ms,
            stall_after_send_us,
            label,
            json_out,
            hgrm_out,
            pcap_out,
            expect,
            orders,
            session_stall_after,
            session_reset_after,
            session_close_after,
            xdp_pass_on,
            io,
            iface,
            target_mac,
            xdp_mode,
            retransmit,
            retransmit_port,
            retransmit_history,
            progress,
            check,
        } = self;
        let d = Options::try_parse_from(["replay"]).expect("no option is required");
        let mut a = Args::default();
        a.changed("--source", source, &d.source);
        a.changed("--rate", rate, &d.rate);
        a.changed("--batch", batch, &d.batch);
        a.changed("--session", &trimmed(session), &trimmed(&d.session));
        a.changed("--first-seq", first_seq, &d.first_seq);
        a.changed("--target", target, &d.target);
        a.changed("--bind", bind, &d.bind);
        a.changed("--feed-port", feed_port, &d.feed_port);
        a.changed("--feed-port-b", feed_port_b, &d.feed_port_b);
        a.changed("--n", n, &d.n);
        a.changed("--stock", stock, &d.stock);
        a.changed("--drain-ms", drain_ms, &d.drain_ms);
        a.changed(
            "--stall-after-send-us",
            stall_after_send_us,
            &d.stall_after_send_us,
        );
        a.changed("--label", label, &d.label);
        a.changed("--expect", expect, &d.expect);
        a.changed("--orders", orders, &d.orders);
        a.some("--session-stall-after", session_stall_after.as_ref());
        a.some("--session-reset-after", session_reset_after.as_ref());
        a.some("--session-close-after", session_close_after.as_ref());
        a.changed("--io", io, &d.io);
        a.changed("--iface", iface, &d.iface);
        a.changed("--target-mac", target_mac, &d.target_mac);
        a.changed("--xdp-mode", xdp_mode, &d.xdp_mode);
        a.changed("--retransmit-port", retransmit_port, &d.retransmit_port);
        a.changed(
            "--retransmit-history",
            retransmit_history,
            &d.retransmit_history,
        );
        a.some("--count", count.as_ref());
        a.some("--duration", duration.as_ref());
        a.some("--target-b", target_b.as_ref());
        a.some("--cpu", cpu.as_ref());
        a.some("--json-out", json_out.as_ref().map(|p| p.display()));
        a.some("--hgrm-out", hgrm_out.as_ref().map(|p| p.display()));
        a.some("--pcap-out", pcap_out.as_ref().map(|p| p.display()));
        a.some("--xdp-pass-on", xdp_pass_on.as_ref());
        a.some("--progress", progress.as_ref());
        a.flag("--retransmit", *retransmit);
        a.flag("--check", *check);
        a.into_vec()
    }
}

/// A session as `--session` takes it.
fn trimmed(s: &Session) -> String {
    String::from_utf8_lossy(s.trimmed()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What xtask renders parses back into the same options: with every option at its
    /// default, and with every option set to something else.
    #[test]
    fn to_args_parses_back_into_the_same_options() {
        let every: &[&str] = &[
            "--source",
            "gbm:7:1000",
            "--count",
            "500",
            "--duration",
            "2.5",
            "--rate",
            "50k",
            "--batch",
            "4",
            "--session",
            "ABC",
            "--first-seq",
            "9",
            "--target",
            "198.18.0.2:1000",
            "--target-b",
            "198.18.0.2:1001",
            "--bind",
            "198.18.0.1:2000",
            "--feed-port",
            "3000",
            "--feed-port-b",
            "3001",
            "--n",
            "7",
            "--stock",
            "AAPL",
            "--cpu",
            "0",
            "--drain-ms",
            "10",
            "--stall-after-send-us",
            "5",
            "--label",
            "x",
            "--json-out",
            "/tmp/r.json",
            "--hgrm-out",
            "/tmp/r.hgrm",
            "--pcap-out",
            "/tmp/r.pcap",
            "--expect",
            "every",
            "--orders",
            "tcp-kernel",
            "--session-stall-after",
            "3",
            "--session-reset-after",
            "2",
            "--session-close-after",
            "4",
            "--xdp-pass-on",
            "ex9",
            "--io",
            "xdp",
            "--iface",
            "ex9",
            "--target-mac",
            "02:00:00:00:00:09",
            "--xdp-mode",
            "skb",
            "--retransmit",
            "--retransmit-port",
            "4000",
            "--retransmit-history",
            "10",
            "--progress",
            "false",
            "--check",
        ];
        for line in [&[][..], every] {
            let o = Options::try_parse_from(std::iter::once("replay").chain(line.iter().copied()))
                .unwrap();
            let args = o.to_args();
            let again = Options::try_parse_from(
                std::iter::once("replay".to_owned()).chain(args.iter().cloned()),
            )
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!(format!("{again:?}"), format!("{o:?}"), "{args:?}");
        }
    }
}
