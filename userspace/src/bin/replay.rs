//! The exchange side: replays market data into the lab at a set rate, takes the trader's
//! orders back, measures tick-to-trade, books fills, and checks parity with the backtest.
use std::{
    io::{IsTerminal as _, Write as _},
    net::SocketAddrV4,
    path::PathBuf,
    time::Duration,
};

use anyhow::{Context as _, bail};
use clap::Parser;
use serde::Serialize;
use userspace::{
    cli,
    clock::now_ns,
    exchange_io::ExchangeIo,
    feed::{Feed, Source},
    frame::{self, FrameBuilder},
    host, process,
    stats::{Latency, Summary},
};
use wire::{
    itch::{Side, Stock},
    order,
};

/// Ticks per second: a number with an optional k/M suffix (`50k`, `1.5M`), or `max`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rate {
    PerSec(f64),
    Max,
}

/// The slowest paced rate: one message a second (slower is a debugger's job, not a replay's).
const MIN_RATE: f64 = 1.0;
/// The fastest paced rate; above it the pacing is meaningless on any one core (use `max`).
const MAX_RATE: f64 = 100e6;

impl std::str::FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "max" {
            return Ok(Rate::Max);
        }
        let (num, mult) = match s.as_bytes().last() {
            Some(b'k' | b'K') => (&s[..s.len() - 1], 1e3),
            Some(b'M' | b'm') => (&s[..s.len() - 1], 1e6),
            _ => (s, 1.0),
        };
        let v: f64 = num
            .parse()
            .map_err(|_| format!("bad rate {s:?}: use e.g. 50000, 50k, 1.5M or max"))?;
        let rate = v * mult;
        if !(MIN_RATE..=MAX_RATE).contains(&rate) {
            return Err(format!(
                "rate {s:?} is out of range: {MIN_RATE} to {MAX_RATE:e} messages/s, or `max` \
                 for as fast as the sender goes"
            ));
        }
        Ok(Rate::PerSec(rate))
    }
}

/// Replays MoldUDP64/ITCH market data to a trader, receives its orders, and reports
/// tick-to-trade latency (from each tick's *scheduled* send time, so queueing delay counts:
/// no coordinated omission), fills, and parity with the engine's batch backtest.
#[derive(Debug, Parser)]
#[command(version)]
struct Options {
    /// Market data: gbm[:SEED[:BARS]], closes:PATH (raw f64 or .csv), itch:PATH, pcap:PATH.
    #[arg(long, default_value = "gbm:42:150000")]
    source: Source,
    /// Send at most this many messages (default: the whole source).
    #[arg(long, value_parser = parse_count)]
    count: Option<u64>,
    /// Send for at most this many seconds of schedule (needs a --rate).
    #[arg(long, value_parser = parse_duration)]
    duration: Option<f64>,
    /// Messages per second, 1 to 1e8 (open loop, busy-waiting to the microsecond), or `max`.
    #[arg(long, default_value = "20k")]
    rate: Rate,
    /// ITCH messages per MoldUDP64 packet.
    #[arg(long, default_value_t = 1)]
    batch: u16,
    /// The trader's market-data address.
    #[arg(long, default_value = "198.18.0.2:26400")]
    target: SocketAddrV4,
    /// Our address; orders come back to it.
    #[arg(long, default_value = "198.18.0.1:26401")]
    bind: SocketAddrV4,
    /// Strategy length n, for the parity check.
    #[arg(long, default_value_t = 6)]
    n: i64,
    /// Stock symbol of the synthetic ticks, and the one traded.
    #[arg(long, default_value = "SYNTH")]
    stock: String,
    /// Pin to this CPU.
    #[arg(long)]
    cpu: Option<usize>,
    /// After the last tick, wait this long for outstanding orders.
    #[arg(long, default_value_t = 500)]
    drain_ms: u64,
    /// Label for this run in the results (e.g. the trader's path).
    #[arg(long, default_value = "run")]
    label: String,
    /// Write the result here as JSON (stdout if absent).
    #[arg(long)]
    json_out: Option<PathBuf>,
    /// Write the tick-to-trade histogram here (.hgrm, microseconds).
    #[arg(long)]
    hgrm_out: Option<PathBuf>,
    /// Write what was sent to this pcap file (after the run, not during it).
    #[arg(long)]
    pcap_out: Option<PathBuf>,
    /// What the trader answers: `signals` (the strategy's orders; parity is checked) or
    /// `every` (one order per tick: the XDP reflector floor).
    #[arg(long, default_value = "signals", value_parser = ["signals", "every"])]
    expect: String,
    /// Attach a pass-everything XDP program to this interface first (XDP_TX from the peer
    /// into a veth needs an XDP program on this end).
    #[arg(long)]
    xdp_pass_on: Option<String>,
    /// Exchange-side I/O: `udp` (kernel socket) or `xdp` (AF_XDP on --iface: the bypass
    /// harness, neither end on the kernel UDP stack).
    #[arg(long, default_value = "udp", value_parser = ["udp", "xdp"])]
    io: String,
    /// Our interface (for --io xdp).
    #[arg(long, default_value = "ex0")]
    iface: String,
    /// The trader's MAC (for --io xdp; the lab's fixed trader MAC by default).
    #[arg(long, default_value_t = netns::lab::TRADER_MAC)]
    target_mac: netns::Mac,
    /// XDP mode on our interface (for --io xdp): `native` or `skb`.
    #[arg(long, default_value = "native")]
    xdp_mode: userspace::xdp::XdpMode,
    /// Progress on stderr (default: when stderr is a terminal).
    #[arg(long)]
    progress: Option<bool>,
    /// Check the options and the source (build the feed and the backtest), then exit without
    /// opening a socket: what `cargo xtask bench` runs before it builds the lab.
    #[arg(long)]
    check: bool,
}

#[derive(Debug, Serialize)]
struct Parity {
    ok: bool,
    live_pnl: f64,
    live_trades: u64,
    batch_pnl: f64,
    batch_trades: u64,
    expected_orders: u64,
    /// Sequence number of the first tick where live orders and the backtest's signals differ.
    first_divergence: Option<u64>,
    explanation: String,
}

#[derive(Debug, Serialize)]
struct Report {
    label: String,
    exchange_io: String,
    source: String,
    rate_per_s: Option<f64>,
    achieved_rate_per_s: f64,
    /// How long the send loop ran.
    send_seconds: f64,
    batch: u16,
    sent_messages: u64,
    sent_packets: u64,
    ticks: u64,
    orders_received: u64,
    orders_unknown_tick: u64,
    orders_duplicate: u64,
    orders_malformed: u64,
    orders_price_mismatch: u64,
    /// Orders whose REVERSE flag disagrees with the book (a position was or wasn't open).
    orders_reverse_mismatch: u64,
    /// Messages our own socket refused (buffer full): not sent, not counted as sent.
    send_dropped: u64,
    /// Packets the scheduler sent more than 10 µs late (the sender itself fell behind).
    late_sends: u64,
    tick_to_trade: Summary,
    /// The replay's own context switches during the send loop: (voluntary, involuntary).
    context_switches: results::ContextSwitches,
    /// Hypervisor steal per CPU during the send loop, ms, 10 ms resolution (`host::steal_ms`).
    steal_ms: Vec<u64>,
    /// Where the send loop's wall time went: ran, waited for the CPU, stolen.
    thread_time: results::ThreadTime,
    parity: Parity,
    kernel: String,
    cpu: String,
}

fn main() -> std::process::ExitCode {
    cli::run_main(real_main)
}

fn real_main() -> anyhow::Result<()> {
    let o = Options::parse();
    let stop = process::stop_flag()?;
    for (what, path) in [
        ("--json-out", &o.json_out),
        ("--hgrm-out", &o.hgrm_out),
        ("--pcap-out", &o.pcap_out),
    ] {
        if let Some(p) = path {
            cli::check_writable(what, p)?;
        }
    }
    if let Some(cpu) = o.cpu {
        process::pin_to_cpu(cpu)?;
    }
    let stock = Stock::new(&o.stock).map_err(|e| anyhow::anyhow!("bad --stock: {e}"))?;
    let params = engine::Params::from_n(o.n)
        .map_err(|e| anyhow::anyhow!("bad strategy length --n {}: {e}", o.n))?;
    let limit = match (o.count, o.duration, o.rate) {
        (_, Some(d), Rate::PerSec(r)) if d * r < 1.0 => {
            bail!("--duration {d} s at {r} messages/s is less than one message")
        }
        (c, Some(d), Rate::PerSec(r)) => Some(c.unwrap_or(u64::MAX).min((d * r) as u64)),
        (_, Some(_), Rate::Max) => bail!("--duration needs a --rate (not max)"),
        (c, None, _) => c,
    };
    let feed = Feed::build(&o.source, limit, o.batch, stock)?;
    if feed.ticks.is_empty() {
        bail!("the feed has no trades of {stock}: nothing for the strategy to see");
    }
    if let Some(c) = o.count
        && o.duration.is_none()
        && c > feed.messages
    {
        eprintln!(
            "note: --count {c} is more than the source holds; sending all of its {} messages",
            feed.messages
        );
    }

    // What the trader should do: the engine fed the same ticks, offline.
    let prices = feed.tick_prices();
    let every = o.expect == "every";
    let mut expected = Vec::with_capacity(feed.ticks.len() / 2);
    if every {
        expected.extend(feed.ticks.iter().map(|t| (t.seq, engine::Side::Long)));
    } else {
        let mut s = engine::Strategy::new(params);
        for (t, &p) in feed.ticks.iter().zip(&prices) {
            if let Some(sig) = s.on_tick(p) {
                expected.push((t.seq, sig.side));
            }
        }
    }
    let batch = engine::reference::backtest(&prices, &params)
        .map_err(|e| anyhow::anyhow!("backtest failed: {e}"))?;
    if o.check {
        return Ok(());
    }

    // Port 0 never matches a feed port, so this program passes everything.
    let _peer_xdp = match &o.xdp_pass_on {
        Some(iface) if o.io != "xdp" => Some(
            userspace::xdp::XdpProgram::attach(iface, 0, o.xdp_mode, xdp_common::Action::Pass)
                .with_context(|| format!("attaching the pass program to {iface}"))?,
        ),
        _ => None,
    };
    let mut io = match o.io.as_str() {
        "xdp" => ExchangeIo::xsk(&o.iface, o.bind, o.target, o.target_mac, o.xdp_mode)?,
        _ => ExchangeIo::udp(o.bind, o.target)?,
    };

    // Sequence number -> scheduled send time (ns); 0 = not sent.
    let base_seq = feed.first_seq;
    // Indexed by sequence number from the first; sized by the span, not the count, so a
    // capture with gaps in its sequence numbers still fits.
    let span = feed.sequence_span() as usize + 1;
    let mut sched = vec![0u64; span];
    let mut price_of = vec![None; span];
    for t in &feed.ticks {
        if let Some(slot) = t
            .seq
            .checked_sub(base_seq)
            .and_then(|i| price_of.get_mut(i as usize))
        {
            *slot = Some(t.price);
        }
    }
    let mut got = vec![false; span];
    let mut fills: Vec<(u64, Side, bool)> = Vec::with_capacity(expected.len());
    let mut hist = Latency::new();
    let mut counts = OrderCounts::default();
    let progress = o
        .progress
        .unwrap_or_else(|| std::io::stderr().is_terminal());

    let period_ns = match o.rate {
        Rate::PerSec(r) => Some(1e9 / r),
        Rate::Max => None,
    };
    let mut rbuf = [0u8; 2048];
    let mut poll_orders = |io: &mut ExchangeIo,
                           hist: &mut Latency,
                           counts: &mut OrderCounts,
                           fills: &mut Vec<(u64, Side, bool)>,
                           sched: &[u64]| {
        io.recv_each(&mut rbuf, |payload| {
            let now = now_ns();
            for ord in order::orders(payload) {
                let Ok(ord) = ord else {
                    counts.malformed += 1;
                    continue;
                };
                let idx = ord.tick_seq.checked_sub(base_seq).map(|i| i as usize);
                let Some(i) = idx.filter(|&i| i < sched.len() && sched[i] != 0) else {
                    counts.unknown += 1;
                    continue;
                };
                if got[i] {
                    counts.duplicate += 1;
                    continue;
                }
                got[i] = true;
                if price_of[i] != Some(ord.price) {
                    counts.price_mismatch += 1;
                }
                hist.record(now.saturating_sub(sched[i]));
                fills.push((ord.tick_seq, ord.side, ord.reverse));
                counts.received += 1;
            }
        });
    };

    eprintln!(
        "replay {}: {} messages in {} packets ({} ticks) to {} at {}",
        o.label,
        feed.messages,
        feed.packets.len(),
        feed.ticks.len(),
        o.target,
        match o.rate {
            Rate::PerSec(r) => format!("{r:.0} msg/s"),
            Rate::Max => "max rate".into(),
        }
    );
    let span = host::SpanAccounting::start();
    let steal0 = host::steal_ms();
    let start = now_ns() + 2_000_000;
    let mut sent_packets = 0u64;
    let mut sent_messages = 0u64;
    let mut late_sends = 0u64;
    let mut send_dropped = 0u64;
    let mut sent_messages_scheduled_skip = 0u64;
    let mut next_progress = start + 1_000_000_000;
    let total = feed.packets.len();
    // The sequence number after the last message put on the wire (MoldUDP64's end of session
    // carries it): a run stopped early ends there, and what it never sent is not a gap.
    let mut session_end = feed.first_seq;
    for (i, meta) in feed.packets.iter().enumerate() {
        let due = match period_ns {
            Some(p) => start + ((sent_messages + sent_messages_scheduled_skip) as f64 * p) as u64,
            None => now_ns(),
        };
        // Busy-wait to the scheduled time, taking orders meanwhile, until then or a stop.
        let mut now = now_ns();
        while now < due && !process::stopped(&stop) {
            poll_orders(&mut io, &mut hist, &mut counts, &mut fills, &sched);
            now = now_ns();
        }
        if process::stopped(&stop) {
            break;
        }
        if now > due + 10_000 {
            late_sends += 1;
        }
        // Sent or refused, these numbers are used: the session now ends after them.
        session_end = meta.first_seq + u64::from(meta.messages);
        match io.send(feed.packet(i)) {
            Ok(()) => {
                for k in 0..u64::from(meta.messages) {
                    if let Some(s) = (meta.first_seq + k)
                        .checked_sub(base_seq)
                        .and_then(|j| sched.get_mut(j as usize))
                    {
                        *s = due;
                    }
                }
                sent_packets += 1;
                sent_messages += u64::from(meta.messages);
            }
            // Our own socket buffer was full: not sent, and said so, not blamed on the trader.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                send_dropped += u64::from(meta.messages);
                // Keep the schedule: the next packet is due where it would have been.
                sent_messages_scheduled_skip += u64::from(meta.messages);
            }
            Err(e) => return Err(e).context("send to the trader"),
        }
        poll_orders(&mut io, &mut hist, &mut counts, &mut fills, &sched);
        if progress && now > next_progress {
            next_progress = now + 1_000_000_000;
            eprint!(
                "\r  {}: {:>3.0}%  {}/{} packets  {} orders",
                o.label,
                100.0 * (i + 1) as f64 / total as f64,
                i + 1,
                total,
                counts.received
            );
            let _ = std::io::stderr().flush();
        }
    }
    let send_end = now_ns();
    let steal1 = host::steal_ms();
    // The send loop busy-waits between sends, so it should never sleep; if it did (a blocked
    // write to stderr), its sleep would pass for stolen time, and none is reported.
    let (context_switches, thread_time) = span.finish(true);
    // Stopped early (or our socket refused some): only ticks that went out can have orders.
    if sent_messages != feed.messages {
        expected.retain(|&(seq, _)| {
            seq.checked_sub(base_seq)
                .and_then(|i| sched.get(i as usize))
                .is_some_and(|&s| s != 0)
        });
    }
    // Drain: until every expected order is in, or nothing came for drain_ms.
    let mut last = now_ns();
    let mut seen = counts.received;
    while counts.received < expected.len() as u64 && !process::stopped(&stop) {
        poll_orders(&mut io, &mut hist, &mut counts, &mut fills, &sched);
        let now = now_ns();
        if counts.received != seen {
            seen = counts.received;
            last = now;
        } else if now - last > o.drain_ms * 1_000_000 {
            break;
        }
    }
    if progress {
        eprintln!("\r  {}: done, {} orders{:20}", o.label, counts.received, "");
    }
    // Tell the trader the session is over (a few times: UDP).
    for _ in 0..3 {
        let _ = io.send(&feed.end_of_session(session_end));
        std::thread::sleep(Duration::from_millis(2));
    }

    // Book the fills in tick order with the engine's own ledger: same arithmetic as the backtest.
    fills.sort_unstable_by_key(|&(seq, _, _)| seq);
    let mut ledger = engine::Ledger::default();
    let mut reverse_mismatch = 0u64;
    for &(seq, side, reverse) in &fills {
        let i = (seq - base_seq) as usize;
        // An order says whether it reverses an open position; the book knows.
        if reverse != ledger.position().is_some() {
            reverse_mismatch += 1;
        }
        if let Some(p) = price_of.get(i).copied().flatten() {
            ledger.fill(
                match side {
                    Side::Buy => engine::Side::Long,
                    Side::Sell => engine::Side::Short,
                },
                p.to_f64(),
            );
        }
    }
    let sent_all = sent_messages == feed.messages;
    let last_price = if sent_all {
        prices.last().copied()
    } else {
        // Stopped early: close at the last tick that was sent.
        feed.ticks
            .iter()
            .rev()
            .find(|t| {
                t.seq
                    .checked_sub(base_seq)
                    .and_then(|i| sched.get(i as usize))
                    .is_some_and(|&s| s != 0)
            })
            .map(|t| t.price.to_f64())
    };
    if let Some(p) = last_price {
        ledger.close(p);
    }
    let live = ledger.result();
    let first_divergence = expected
        .iter()
        .map(|&(seq, side)| {
            (
                seq,
                match side {
                    engine::Side::Long => Side::Buy,
                    engine::Side::Short => Side::Sell,
                },
            )
        })
        .zip(
            fills
                .iter()
                .map(|&(seq, side, _)| Some((seq, side)))
                .chain(std::iter::repeat(None)),
        )
        .find(|(want, got)| Some(*want) != *got)
        .map(|(want, got)| got.map_or(want.0, |g| g.0.min(want.0)))
        .or_else(|| fills.get(expected.len()).map(|f| f.0));
    let order_faults = counts.price_mismatch + counts.malformed + counts.unknown + reverse_mismatch;
    let ok = !every
        && sent_all
        && order_faults == 0
        && first_divergence.is_none()
        && live.trades == batch.trades
        && live.pnl == batch.pnl;
    let explanation = if every {
        format!(
            "reflector: {} of {} ticks answered; no strategy, so no parity to check",
            counts.received,
            feed.ticks.len()
        )
    } else if ok {
        "live orders equal the batch backtest: same trades, same PnL (bit for bit)".into()
    } else if order_faults > 0 {
        format!(
            "orders disagree with the ticks: {} wrong prices, {} wrong reverse flags, {} \
             malformed, {} for unknown ticks",
            counts.price_mismatch, reverse_mismatch, counts.malformed, counts.unknown
        )
    } else if !sent_all {
        format!(
            "not every tick went out: {sent_messages} of {} messages sent (stopped early, or \
             {send_dropped} refused by our own socket)",
            feed.messages
        )
    } else if let Some(seq) = first_divergence {
        let missing = expected.len() as u64 - counts.received.min(expected.len() as u64);
        format!(
            "live and batch diverge at tick seq {seq}: {missing} expected orders missing \
             (lost ticks or lost orders change the strategy's path from there on)"
        )
    } else {
        "same signals but different PnL (should not happen: report a bug)".into()
    };
    let elapsed = (send_end.saturating_sub(start)) as f64 / 1e9;
    let results::Machine { kernel, cpu, .. } = results::Machine::read();
    let report = Report {
        label: o.label.clone(),
        exchange_io: o.io.clone(),
        source: format!("{:?}", o.source),
        rate_per_s: match o.rate {
            Rate::PerSec(r) => Some(r),
            Rate::Max => None,
        },
        achieved_rate_per_s: if elapsed > 0.0 {
            sent_messages as f64 / elapsed
        } else {
            0.0
        },
        send_seconds: elapsed,
        batch: o.batch,
        sent_messages,
        sent_packets,
        ticks: feed.ticks.len() as u64,
        orders_received: counts.received,
        orders_unknown_tick: counts.unknown,
        orders_duplicate: counts.duplicate,
        orders_malformed: counts.malformed,
        orders_price_mismatch: counts.price_mismatch,
        orders_reverse_mismatch: reverse_mismatch,
        send_dropped,
        late_sends,
        tick_to_trade: hist.summary(),
        context_switches,
        steal_ms: steal1
            .iter()
            .zip(steal0.iter().chain(std::iter::repeat(&0)))
            .map(|(b, a)| b.saturating_sub(*a))
            .collect(),
        thread_time,
        parity: Parity {
            ok,
            live_pnl: live.pnl,
            live_trades: live.trades,
            batch_pnl: batch.pnl,
            batch_trades: batch.trades,
            expected_orders: expected.len() as u64,
            first_divergence,
            explanation,
        },
        kernel,
        cpu,
    };
    let json = serde_json::to_string_pretty(&report)?;
    match &o.json_out {
        Some(p) => std::fs::write(p, &json).with_context(|| format!("writing {}", p.display()))?,
        None => println!("{json}"),
    }
    if let Some(p) = &o.hgrm_out {
        hist.write_hgrm(p)?;
    }
    if let Some(p) = &o.pcap_out {
        write_pcap(p, &feed, &sched, base_seq, o.bind, o.target)?;
    }
    Ok(())
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

#[derive(Debug, Default)]
struct OrderCounts {
    received: u64,
    unknown: u64,
    duplicate: u64,
    malformed: u64,
    price_mismatch: u64,
}

fn write_pcap(
    path: &std::path::Path,
    feed: &Feed,
    sched: &[u64],
    base_seq: u64,
    from: SocketAddrV4,
    to: SocketAddrV4,
) -> anyhow::Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w =
        wire::pcap::Writer::new(std::io::BufWriter::new(file), wire::pcap::Resolution::Nanos)?;
    // MACs are the lab's; the capture is a reconstruction of what the kernel sent.
    let mut b = FrameBuilder::new(
        frame::endpoint(netns::lab::EXCHANGE_MAC.octets(), *from.ip(), from.port()),
        frame::endpoint(netns::lab::TRADER_MAC.octets(), *to.ip(), to.port()),
    );
    let mut buf = vec![0u8; 2048];
    for (i, m) in feed.packets.iter().enumerate() {
        let Some(&ts) = m
            .first_seq
            .checked_sub(base_seq)
            .and_then(|j| sched.get(j as usize))
        else {
            continue;
        };
        if ts == 0 {
            continue;
        }
        let payload = feed.packet(i);
        let n = b
            .build(&mut buf, |body| {
                body[..payload.len()].copy_from_slice(payload);
                payload.len()
            })
            .context("packet too large for a frame")?;
        w.write_frame(ts, &buf[..n])?;
    }
    w.finish()?;
    Ok(())
}
