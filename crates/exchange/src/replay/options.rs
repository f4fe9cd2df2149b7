//! The replay's options: what `replay --help` shows.
use std::{net::SocketAddrV4, path::PathBuf};

use clap::Parser;
use paths::{ExchangeIo, Expect, Orders, XdpMode, args::Args};
use wire::moldudp64::Session;

use paths::{Rate, Source};

/// The exchange side of the lab: replays market data at a set rate (an ITCH file, streamed, at
/// its own timestamps), takes the trader's orders back, measures tick-to-trade, books fills, and
/// checks parity with the backtest.
#[derive(Debug, Parser)]
#[command(name = "replay", version)]
pub struct Options {
    /// Market data: gbm[:SEED[:BARS]], closes:PATH (raw f64 or .csv), itch:PATH (raw ITCH 5.0,
    /// or its .gz: streamed, never read whole; paced at its own timestamps unless --rate),
    /// pcap:PATH (classic pcap or pcapng, of Ethernet frames),
    /// market[:SEED[:BARS]][:per-print=N][:symbols=N][:synth=E|P] (the full-depth generator:
    /// SYNTH prints the gbm:SEED:BARS series among 8,000 symbols' order flow; the trader reads
    /// Trade messages only, so trade it with synth=P).
    #[arg(long, default_value_t = Source::DEFAULT, help_heading = "Feed")]
    pub source: Source,
    /// Send at most this many messages (default: the whole source); for a market: source, the
    /// day generated for this many SYNTH ticks.
    #[arg(long, value_parser = parse_count, help_heading = "Feed")]
    pub count: Option<u64>,
    /// Send for at most this many seconds of schedule: at a --rate, or an itch: file at its
    /// timestamps (the messages of the file's first seconds x --multiplier); not at --rate max
    /// or --topspeed.
    #[arg(long, value_parser = parse_duration, help_heading = "Feed")]
    pub duration: Option<f64>,
    /// Messages per second, 1 to 1e8 (open loop, busy-waiting to the microsecond), or `max`
    /// (closed loop) [default: 20k]. An itch: file at a --rate ignores its timestamps
    /// (tcpreplay's --pps, counted in messages) and goes --batch messages a packet.
    #[arg(long, conflicts_with_all = ["multiplier", "topspeed"], help_heading = "Pacing")]
    pub rate: Option<Rate>,
    /// Bursts over the --rate, like the open: FACTORxLEN[/EVERY], e.g. 10x100ms (ten times the
    /// rate for 100 ms at the start of every second after the first; the first is steady).
    /// Open loop: each message is timed from its own due time in or out of a burst.
    #[arg(long, help_heading = "Pacing")]
    pub burst: Option<crate::Burst>,
    /// An itch: file at its own timestamps, this many times as fast as recorded (tcpreplay's
    /// --multiplier: 2.0 twice as fast, 0.5 half as fast) [default: 1]. A packet is due its
    /// last message's time after the file's first message, divided by this, after the start.
    #[arg(long, conflicts_with_all = ["rate", "topspeed"], help_heading = "Pacing")]
    pub multiplier: Option<crate::Multiplier>,
    /// An itch: file as fast as the sender goes (tcpreplay's --topspeed; closed loop, as
    /// --rate max), packed as at its timestamps (--pack-window).
    #[arg(long, conflicts_with_all = ["rate", "multiplier"], help_heading = "Pacing")]
    pub topspeed: bool,
    /// An itch: file at its timestamps or --topspeed: a packet holds consecutive messages whose
    /// timestamps are within this of its first message's (and what fits 1472 bytes), so no
    /// message waits longer than this for the next: e.g. 10us, 500ns, 0 [default: 10us].
    #[arg(long, help_heading = "Pacing")]
    pub pack_window: Option<crate::stream::PackWindow>,
    /// ITCH messages per MoldUDP64 packet (every source but an itch: file at its timestamps,
    /// which --pack-window packs).
    #[arg(long, default_value_t = 1, help_heading = "Feed")]
    pub batch: u16,
    /// The MoldUDP64 session the feed is sent in (a pcap source keeps its own).
    #[arg(long, default_value = paths::market::SESSION, value_parser = Session::parse_arg, help_heading = "Feed")]
    pub session: Session,
    /// The first message's sequence number (a pcap source keeps its own): 1 starts a session,
    /// a larger one is a feed the trader joins in the middle.
    #[arg(long, default_value_t = 1, help_heading = "Feed")]
    pub first_seq: u64,
    /// The trader's market-data address.
    #[arg(long, default_value_t = netns::lab::TRADER_MD, help_heading = "Addresses and I/O")]
    pub target: SocketAddrV4,
    /// Line B of an A/B feed: every packet is also sent here, right after line A (`--io udp`).
    #[arg(long, help_heading = "Addresses and I/O")]
    pub target_b: Option<SocketAddrV4>,
    /// Our address; orders come back to it.
    #[arg(long, default_value_t = netns::lab::EXCHANGE_ORDERS, help_heading = "Addresses and I/O")]
    pub bind: SocketAddrV4,
    /// The UDP port line A's feed leaves from, on --bind's address: the feed's source, as the
    /// trader's --feed-source names it. 0: an ephemeral port.
    #[arg(long, default_value_t = netns::lab::FEED_SOURCE_PORT, help_heading = "Addresses and I/O")]
    pub feed_port: u16,
    /// The UDP port line B's feed leaves from (with --target-b). 0: an ephemeral port.
    #[arg(long, default_value_t = netns::lab::FEED_SOURCE_PORT_B, help_heading = "Addresses and I/O")]
    pub feed_port_b: u16,
    /// Strategy length n, for the parity check.
    #[arg(long, default_value_t = paths::market::STRATEGY_N, help_heading = "Feed")]
    pub n: i64,
    /// Stock symbol of the synthetic ticks, and the one traded.
    #[arg(long, default_value = paths::market::STOCK, help_heading = "Feed")]
    pub stock: String,
    /// Pin to this CPU.
    #[arg(long, help_heading = "Pacing")]
    pub cpu: Option<usize>,
    /// After the last tick, wait this long for outstanding orders.
    #[arg(long, default_value_t = 500, help_heading = "Pacing")]
    pub drain_ms: u64,
    /// Harness self-test: after each send, stall this many µs before taking orders (a busy
    /// wait, as a preemption of the replay would). Tick-to-trade, counted to each order's
    /// arrival, must not move; the harness delay shows the stall.
    #[arg(long, default_value_t = 0, help_heading = "Pacing")]
    pub stall_after_send_us: u64,
    /// Label for this run in the results (e.g. the trader's path).
    #[arg(long, default_value = "run", help_heading = "Reports")]
    pub label: String,
    /// Write the result here as JSON (stdout if absent).
    #[arg(long, help_heading = "Reports")]
    pub json_out: Option<PathBuf>,
    /// Write the tick-to-trade histogram here (.hgrm, microseconds); beside it
    /// `<name>-seen.hgrm` (to when the replay read each order) and `<name>-harness.hgrm` (the
    /// difference: the harness's own delay).
    #[arg(long, help_heading = "Reports")]
    pub hgrm_out: Option<PathBuf>,
    /// Write what was sent to this pcap file (after the run, not during it; an itch: file is
    /// streamed again for it, never held).
    #[arg(long, help_heading = "Reports")]
    pub pcap_out: Option<PathBuf>,
    /// What the trader answers: `signals` (the strategy's orders; parity is checked) or
    /// `every` (one order per tick: the XDP reflector floor).
    #[arg(long, value_enum, default_value_t = Expect::Signals, help_heading = "Feed")]
    pub expect: Expect,
    /// How orders come back: `udp` (the lab's order in a datagram to --bind), or OUCH 5.0 in a
    /// SoupBinTCP 3.00 session the replay serves on --bind's TCP port (`tcp-kernel` and
    /// `tcp-xdp` are the trader's two ways to send them; this end is the kernel's TCP for
    /// both).
    #[arg(long, value_enum, default_value_t = Orders::Udp, help_heading = "Orders")]
    pub orders: Orders,
    /// Testing only: after taking N orders, the order session stalls (no reads, no answers,
    /// no heartbeats, no new connection), to show the trader detects a dead exchange.
    #[arg(long, hide = true, help_heading = "Orders")]
    pub session_stall_after: Option<u64>,
    /// Testing only: after taking N orders, the order session's connection is reset (an RST
    /// from this end), to show the trader logs in again with nothing traded twice.
    #[arg(long, hide = true, help_heading = "Orders")]
    pub session_reset_after: Option<u64>,
    /// Testing only: after taking N orders, the order session's connection is closed from this
    /// end (a FIN: no more answers on it, its orders still read), to show the trader logs in
    /// again with every answer had. Not within the run's last orders: an End of Session due on
    /// the closed connection is not sent.
    #[arg(long, hide = true, help_heading = "Orders")]
    pub session_close_after: Option<u64>,
    /// Attach a pass-everything XDP program to this interface first (XDP_TX from the peer
    /// into a veth needs an XDP program on this end).
    #[arg(long, help_heading = "Addresses and I/O")]
    pub xdp_pass_on: Option<String>,
    /// Exchange-side I/O: `udp` (kernel socket) or `xdp` (AF_XDP on --iface: the bypass
    /// harness, neither end on the kernel UDP stack).
    #[arg(long, value_enum, default_value_t = ExchangeIo::Udp, help_heading = "Addresses and I/O")]
    pub io: ExchangeIo,
    /// Our interface (for --io xdp).
    #[arg(long, default_value = netns::lab::EXCHANGE_IF, help_heading = "Addresses and I/O")]
    pub iface: String,
    /// The trader's MAC (for --io xdp; the lab's fixed trader MAC by default).
    #[arg(long, default_value_t = netns::lab::TRADER_MAC, help_heading = "Addresses and I/O")]
    pub target_mac: netns::Mac,
    /// XDP mode on our interface (for --io xdp): `native` or `skb`.
    #[arg(long, value_enum, default_value_t = XdpMode::Native, help_heading = "Addresses and I/O")]
    pub xdp_mode: XdpMode,
    /// Serve MoldUDP64 re-requests (the trader's `--retransmit-to`) on --bind's address at
    /// --retransmit-port, from a thread that sleeps until a request comes.
    #[arg(long, help_heading = "Re-requests")]
    pub retransmit: bool,
    /// The re-request server's UDP port.
    #[arg(long, default_value_t = netns::lab::RETRANSMIT_PORT, help_heading = "Re-requests")]
    pub retransmit_port: u16,
    /// Messages the re-request server keeps: requests for older ones are refused. For an itch:
    /// file, a window of the last this many messages' packets, copied as they go out (at most
    /// 72 bytes a message, reserved at the start: 7.2 MB by default); requests older than it
    /// are counted as out of the window.
    #[arg(long, default_value_t = 100_000, help_heading = "Re-requests")]
    pub retransmit_history: u64,
    /// Progress on stderr (default: when stderr is a terminal).
    #[arg(long, help_heading = "Reports")]
    pub progress: Option<bool>,
    /// Check the options and the source (build the feed and the backtest), then exit without
    /// opening a socket: what `cargo xtask bench` runs before it builds the lab.
    #[arg(long, help_heading = "Reports")]
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
            burst,
            multiplier,
            topspeed,
            pack_window,
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
        a.some("--rate", rate.as_ref());
        a.some("--burst", burst.as_ref());
        a.some("--multiplier", multiplier.as_ref());
        a.flag("--topspeed", *topspeed);
        a.some("--pack-window", pack_window.as_ref());
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

/// How the feed is timed and packed: what `--rate`, `--multiplier`, `--topspeed`, `--batch`
/// and `--pack-window` come to for the source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// How each packet is timed.
    pub pace: crate::Pace,
    /// How messages are packed.
    pub pack: crate::stream::PackRule,
}

impl Timing {
    /// Whether the feed is paced at an ITCH file's own timestamps.
    pub fn file_time(&self) -> bool {
        matches!(self.pace, crate::Pace::FileTime(_))
    }

    /// Whether it is packed by the file's timestamps (at them, or at top speed).
    pub fn file_time_packed(&self) -> bool {
        matches!(self.pack, crate::stream::PackRule::Window { .. })
    }
}

impl Options {
    /// The feed's timing and packing, or what in the options conflicts (clap refuses --rate,
    /// --multiplier and --topspeed together; this, what depends on the source).
    ///
    /// # Errors
    /// An option the source has no use for, said with what to use instead.
    pub fn timing(&self) -> Result<Timing, String> {
        use crate::{Multiplier, Pace, stream::PackRule};
        let Options {
            source,
            rate,
            burst,
            multiplier,
            topspeed,
            pack_window,
            batch,
            duration,
            ..
        } = self;
        if *batch == 0 {
            return Err("--batch must be at least 1 message per packet".into());
        }
        let itch = matches!(source, Source::Itch(_));
        if !itch {
            let given = [
                (multiplier.is_some(), "--multiplier"),
                (*topspeed, "--topspeed"),
                (pack_window.is_some(), "--pack-window"),
            ];
            if let Some((_, what)) = given.iter().find(|(set, _)| *set) {
                return Err(format!(
                    "{what} paces and packs an itch: file by its own timestamps; {source} has \
                     none: use --rate (and --batch)"
                ));
            }
        }
        let timing = match (itch, rate, topspeed) {
            (false, r, _) | (true, r @ Some(_), _) => {
                if pack_window.is_some() {
                    return Err("--pack-window packs an itch: file by its timestamps; at a \
                                --rate it goes --batch messages a packet"
                        .into());
                }
                let rate = r.unwrap_or(Rate::DEFAULT);
                Timing {
                    pace: match (rate, burst) {
                        (Rate::PerSec(rate), Some(burst)) => Pace::Bursts {
                            rate,
                            burst: *burst,
                        },
                        (Rate::Max, Some(_)) => {
                            return Err("--burst multiplies a paced --rate; --rate max has \
                                        none: give a rate (e.g. --rate 200k --burst 10x100ms)"
                                .into());
                        }
                        (rate, None) => Pace::Rate(rate),
                    },
                    pack: PackRule::Count(*batch),
                }
            }
            (true, None, topspeed) => {
                if burst.is_some() {
                    return Err(
                        "--burst multiplies a --rate; an itch: file at its timestamps \
                                has its own bursts (give a --rate to burst it)"
                            .into(),
                    );
                }
                if *batch != 1 {
                    return Err(format!(
                        "--batch {batch} packs a fixed number of messages a packet, at a \
                         --rate; an itch: file at its timestamps or --topspeed is packed by \
                         --pack-window (up to 1472 bytes)"
                    ));
                }
                Timing {
                    pace: if *topspeed {
                        Pace::Rate(Rate::Max)
                    } else {
                        Pace::FileTime(multiplier.unwrap_or(Multiplier::RECORDED))
                    },
                    pack: PackRule::Window {
                        ns: pack_window
                            .unwrap_or(crate::stream::PackWindow::DEFAULT)
                            .ns(),
                    },
                }
            }
        };
        if duration.is_some() && !timing.pace.scheduled() {
            return Err(if *topspeed {
                "--duration counts seconds of schedule, and --topspeed has none: use --count, \
                 or a --multiplier"
                    .into()
            } else {
                "--duration needs a --rate (not max)".into()
            });
        }
        Ok(timing)
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
        // --rate, --multiplier and --topspeed exclude each other: the last two on lines of
        // their own.
        let file_time: &[&str] = &[
            "--source",
            "itch:/tmp/day.itch.gz",
            "--multiplier",
            "2.5",
            "--pack-window",
            "20us",
        ];
        let top_speed: &[&str] = &["--source", "itch:x.itch", "--topspeed"];
        for line in [&[][..], every, file_time, top_speed] {
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

    fn options(line: &[&str]) -> Options {
        Options::try_parse_from(std::iter::once("replay").chain(line.iter().copied())).unwrap()
    }

    fn timing(line: &[&str]) -> Result<Timing, String> {
        options(line).timing()
    }

    /// What each combination of the timing options comes to, and what is refused, with a
    /// message naming the option and what to use.
    #[test]
    fn the_timing_options_say_what_they_mean_and_what_conflicts() {
        use crate::{Multiplier, Pace, stream::PackRule};
        let itch = ["--source", "itch:day.itch"];
        let with = |extra: &[&'static str]| {
            let mut l = itch.to_vec();
            l.extend_from_slice(extra);
            timing(&l)
        };
        // A ticker source: as it was, at --rate (20k by default), --batch a packet.
        assert_eq!(
            timing(&[]).unwrap(),
            Timing {
                pace: Pace::Rate(Rate::DEFAULT),
                pack: PackRule::Count(1)
            }
        );
        // An itch file: its own timestamps at x1 by default, packed in 10 µs windows.
        assert_eq!(
            with(&[]).unwrap(),
            Timing {
                pace: Pace::FileTime(Multiplier::RECORDED),
                pack: PackRule::Window { ns: 10_000 }
            }
        );
        let t = with(&["--multiplier", "2", "--pack-window", "0"]).unwrap();
        assert_eq!(
            t,
            Timing {
                pace: Pace::FileTime("2".parse().unwrap()),
                pack: PackRule::Window { ns: 0 }
            }
        );
        assert!(t.file_time());
        assert_eq!(
            with(&["--topspeed"]).unwrap(),
            Timing {
                pace: Pace::Rate(Rate::Max),
                pack: PackRule::Window { ns: 10_000 }
            }
        );
        // At a --rate, as before: the timestamps ignored, --batch a packet.
        assert_eq!(
            with(&["--rate", "5k", "--batch", "4"]).unwrap(),
            Timing {
                pace: Pace::Rate(Rate::PerSec(5000.0)),
                pack: PackRule::Count(4)
            }
        );
        // Bursts over a paced rate.
        assert_eq!(
            timing(&["--rate", "5k", "--burst", "10x100ms"]).unwrap(),
            Timing {
                pace: Pace::Bursts {
                    rate: 5000.0,
                    burst: "10x100ms/1s".parse().unwrap()
                },
                pack: PackRule::Count(1)
            }
        );
        let refused: &[(&[&str], &str)] = &[
            (
                &["--rate", "max", "--burst", "10x100ms"],
                "--rate max has none",
            ),
            (&["--multiplier", "2"], "has none: use --rate"),
            (&["--topspeed"], "--topspeed paces"),
            (&["--pack-window", "5us"], "--pack-window paces"),
        ];
        for (line, needle) in refused {
            let e = timing(line).unwrap_err();
            assert!(e.contains(needle), "{line:?}: {e}");
        }
        let refused_itch: &[(&[&str], &str)] = &[
            (&["--batch", "4"], "is packed by --pack-window"),
            (
                &["--rate", "5k", "--pack-window", "5us"],
                "at a --rate it goes --batch",
            ),
            (&["--topspeed", "--duration", "2"], "--topspeed has none"),
            (&["--burst", "10x100ms"], "has its own bursts"),
            (
                &["--rate", "max", "--duration", "2"],
                "needs a --rate (not max)",
            ),
        ];
        for (line, needle) in refused_itch {
            let e = with(line).unwrap_err();
            assert!(e.contains(needle), "{line:?}: {e}");
        }
        // clap's own: the three paces exclude each other.
        for pair in [
            ["--rate", "5k", "--multiplier", "2"],
            ["--rate", "5k", "--topspeed", ""],
            ["--multiplier", "2", "--topspeed", ""],
        ] {
            let line = itch.iter().chain(pair.iter()).filter(|a| !a.is_empty());
            let e = Options::try_parse_from(std::iter::once(&"replay").chain(line)).unwrap_err();
            assert!(
                e.to_string().contains("cannot be used with"),
                "{pair:?}: {e}"
            );
        }
        // And bad values say what a good one is.
        for (line, needle) in [
            (["--multiplier", "0"], "bad multiplier"),
            (["--multiplier=-1", "--count=5"], "bad multiplier"),
            (["--pack-window", "10"], "bad pack window"),
            (["--pack-window", "2s"], "bad pack window"),
        ] {
            let e = Options::try_parse_from(std::iter::once("replay").chain(line))
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{line:?}: {e}");
        }
    }
}
