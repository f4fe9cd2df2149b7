//! The replay's run: what `run` does with its options (the I/O half; the `io` feature).
use std::{
    io::{IsTerminal as _, Write as _},
    net::{SocketAddrV4, UdpSocket},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use anyhow::{Context as _, bail};
use paths::{ExchangeIo, Expect};
use results::{Arrival, ContextSwitches, ReplayReport, ThreadTime};
use wire::{itch::Stock, moldudp64::Session};

use crate::{
    Driver, Exchange, Monotonic, Port, Progress, Rate, SendLoop, Settlement, cli, exchange_io,
    feed::{Feed, Source},
    frame::{self, FrameBuilder},
    host, process,
    retransmit::{self, Retransmitter},
};

use super::Options;

/// Runs the replay as `o` says: builds the feed and its backtest, sends it, takes the orders
/// back, settles, and writes the report (and the histograms and capture, if asked).
pub fn run(o: Options) -> anyhow::Result<()> {
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
    } = o;
    if target_b.is_some() && io == ExchangeIo::Xdp {
        bail!("--target-b (an A/B feed) needs --io udp");
    }
    let stop = process::stop_flag()?;
    check_outputs(&json_out, &hgrm_out, &pcap_out)?;
    if let Some(cpu) = cpu {
        process::pin_to_cpu(cpu)?;
    }
    let stock = Stock::new(&stock).map_err(|e| anyhow::anyhow!("bad --stock: {e}"))?;
    let params = engine::Params::from_n(n)
        .map_err(|e| anyhow::anyhow!("bad strategy length --n {n}: {e}"))?;
    let feed = build_feed(
        &source, count, duration, rate, batch, stock, session, first_seq,
    )?;
    // What the trader should do: the engine fed the same ticks, offline.
    let mut ex = Exchange::new(&feed, params, expect, stock)
        .map_err(|e| anyhow::anyhow!("backtest failed: {e}"))?;
    if check {
        return Ok(());
    }

    // Port 0 never matches a feed port, so this program passes everything.
    let _peer_xdp = match &xdp_pass_on {
        Some(iface) if io != ExchangeIo::Xdp => Some(
            crate::xdp::XdpProgram::attach(iface, 0, xdp_mode, xdp_common::Action::Pass)
                .with_context(|| format!("attaching the pass program to {iface}"))?,
        ),
        _ => None,
    };
    let port = match io {
        ExchangeIo::Xdp => {
            exchange_io::ExchangeIo::xsk(&iface, bind, feed_port, target, target_mac, xdp_mode)?
        }
        ExchangeIo::Udp => {
            exchange_io::ExchangeIo::udp_lines(bind, [feed_port, feed_port_b], target, target_b)?
        }
    };
    // Orders over SoupBinTCP: the session is served on --bind's address and port, over TCP.
    let session = orders
        .is_tcp()
        // Room for an order on every tick: the most a trader can send that the exchange takes.
        .then(|| crate::gateway::tcp::TcpGateway::bind(bind, order_session()?, feed.ticks.len()))
        .transpose()?
        .map(|g| {
            g.stalling_after(session_stall_after)
                .resetting_after(session_reset_after)
                .closing_after(session_close_after)
        });
    let port = exchange_io::Ports {
        feed: port,
        session,
    };
    eprintln!(
        "replay {label}: {} messages in {} packets ({} ticks) to {target} at {rate} msg/s",
        feed.messages,
        feed.packets.len(),
        feed.ticks.len(),
    );
    let progress = progress.unwrap_or_else(|| std::io::stderr().is_terminal());
    let server = retransmit
        .then(|| {
            let at = SocketAddrV4::new(*bind.ip(), retransmit_port);
            UdpSocket::bind(at).with_context(|| {
                format!("failed to bind the re-request server to {at} (--retransmit-port)")
            })
        })
        .transpose()?;
    let frontier = Arc::new(AtomicU64::new(feed.first_seq));
    let serving_done = AtomicBool::new(false);
    let mut driver = Driver::new(port, Monotonic)
        .stall_after_send(stall_after_send_us * 1_000)
        .publish_frontier(Arc::clone(&frontier));
    let retransmitter = Retransmitter::new(&feed, retransmit_history);
    let (span, settled, served) = std::thread::scope(|s| {
        let server = server.as_ref().map(|sock| {
            s.spawn(|| retransmit::serve(&retransmitter, sock, &frontier, &serving_done))
        });
        // The server stops when this scope's work ends, however it ends (a panic included:
        // the scope joins the thread, which must not wait for a flag nobody sets).
        let _stop_serving = SetOnDrop(&serving_done);
        let run = (|| {
            if let Some(g) = &mut driver.port_mut().session {
                g.wait_for_login(LOGIN_WAIT, || process::stopped(&stop))?;
            }
            let span = send(&mut driver, &mut ex, rate, &label, progress, &stop)?;
            // Drain: until every expected order is in, or nothing came for drain_ms.
            driver.drain(&mut ex, drain_ms * 1_000_000, || process::stopped(&stop));
            if progress {
                eprintln!(
                    "\r  {label}: done, {} orders{:20}",
                    ex.orders().received,
                    ""
                );
            }
            driver.end_session(&ex);
            anyhow::Ok(span)
        })();
        serving_done.store(true, Ordering::Relaxed);
        let served = server.and_then(served_figures);
        anyhow::Ok((run?, ex.settle(), served))
    })?;
    let mut settled = settled;
    explain_recovered(&mut settled, served.as_ref());
    let asked = Asked {
        label,
        io,
        expect,
        source,
        rate,
        batch,
    };
    let mut rep = report(asked, &feed, &settled, span);
    rep.retransmit = served;
    rep.line_sends = driver.port().feed.line_sends();
    rep.send_lateness = driver.send_lateness().summary();
    rep.orders = orders;
    rep.session = driver.port().session.as_ref().map(|g| g.report());
    results::write(json_out.as_deref(), &rep)?;
    if let Some(p) = &hgrm_out {
        write_histograms(&settled, p)?;
    }
    if let Some(p) = &pcap_out {
        write_pcap(
            p,
            &feed,
            &settled,
            SocketAddrV4::new(*bind.ip(), feed_port),
            target,
        )?;
    }
    Ok(())
}

/// How long the replay waits for the trader to log in to the order session before the feed.
const LOGIN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Who may log in to the order session, and its name: the lab's ([`paths::market`]).
fn order_session() -> anyhow::Result<soup::ServerConfig> {
    use wire::soupbin::alpha;
    let m = |e: wire::Error| anyhow::anyhow!("the lab's order session: {e}");
    Ok(soup::ServerConfig::new(
        alpha(paths::market::ORDER_USER.as_bytes()).map_err(m)?,
        alpha(paths::market::ORDER_PASSWORD.as_bytes()).map_err(m)?,
        soup::Session::new(paths::market::ORDER_SESSION).map_err(m)?,
    ))
}

/// The re-request server's figures, once its thread is joined. A server that failed costs
/// them, not the run's report: said on stderr.
fn served_figures(
    h: std::thread::ScopedJoinHandle<'_, std::io::Result<results::RetransmitReport>>,
) -> Option<results::RetransmitReport> {
    match h.join() {
        Ok(Ok(r)) => Some(r),
        Ok(Err(e)) => {
            eprintln!("warning: the re-request server failed: {e}; its figures are missing");
            None
        }
        Err(_) => {
            eprintln!("warning: the re-request server panicked; its figures are missing");
            None
        }
    }
}

/// Each output file asked for can be written: an error naming the option before anything runs.
fn check_outputs(
    json: &Option<PathBuf>,
    hgrm: &Option<PathBuf>,
    pcap: &Option<PathBuf>,
) -> anyhow::Result<()> {
    for (what, path) in [
        ("--json-out", json),
        ("--hgrm-out", hgrm),
        ("--pcap-out", pcap),
    ] {
        if let Some(p) = path {
            cli::check_writable(what, p)?;
        }
    }
    Ok(())
}

/// A parity failure after retransmissions: says that a recovered tick is accounted, not
/// traded, so the live orders still diverge where a tick first went missing.
fn explain_recovered(settled: &mut Settlement, served: Option<&results::RetransmitReport>) {
    if let Some(r) = served
        && r.served_messages > 0
        && !settled.parity.ok()
    {
        settled.parity.explanation.push_str(&format!(
            "; {} messages were retransmitted on request: a recovered tick is accounted by the \
             trader, not traded (the strategy had decided later ticks without it), so the \
             live orders still diverge where a tick first went missing",
            r.served_messages
        ));
    }
}

/// The three histograms, tick-to-trade at `p` and its two siblings (`-seen`, `-harness`).
fn write_histograms(settled: &Settlement, p: &Path) -> anyhow::Result<()> {
    settled.tick_to_trade.write_hgrm(p)?;
    settled.tick_to_trade_seen.write_hgrm(&sibling(p, "seen"))?;
    settled.harness_delay.write_hgrm(&sibling(p, "harness"))?;
    Ok(())
}

/// The feed the options ask for: at most `--count` messages, or `--duration` seconds of them at
/// `--rate`.
#[expect(
    clippy::too_many_arguments,
    reason = "the options that shape the feed, each named"
)]
fn build_feed(
    source: &Source,
    count: Option<u64>,
    duration: Option<f64>,
    rate: Rate,
    batch: u16,
    stock: Stock,
    session: Session,
    first_seq: u64,
) -> anyhow::Result<Feed> {
    let limit = match (count, duration, rate) {
        (_, Some(d), Rate::PerSec(r)) if d * r < 1.0 => {
            bail!("--duration {d} s at {r} messages/s is less than one message")
        }
        (c, Some(d), Rate::PerSec(r)) => Some(c.unwrap_or(u64::MAX).min((d * r) as u64)),
        (_, Some(_), Rate::Max) => bail!("--duration needs a --rate (not max)"),
        (c, None, _) => c,
    };
    let feed = Feed::build_numbered(source, limit, batch, stock, session, first_seq)?;
    if feed.ticks.is_empty() {
        eprintln!(
            "warning: the feed has no trades of {stock}: the trader will see no tick and send \
             no order, and there is no parity to check (--stock names the one to trade)"
        );
    }
    if feed.other_sessions > 0 {
        eprintln!(
            "note: {} packets of other sessions than {} in the capture are not sent",
            feed.other_sessions,
            feed.session.trimmed().escape_ascii()
        );
    }
    if let Some(c) = count
        && duration.is_none()
        && c > feed.messages
    {
        eprintln!(
            "note: --count {c} is more than the source holds; sending all of its {} messages",
            feed.messages
        );
    }
    Ok(feed)
}

/// The send loop and what the host says about it.
#[derive(Debug)]
struct SendSpan {
    run: SendLoop,
    context_switches: ContextSwitches,
    thread_time: ThreadTime,
    steal_ms: Vec<u64>,
}

/// Sends the feed, with a progress line on stderr if asked.
fn send(
    driver: &mut Driver<impl Port, Monotonic>,
    ex: &mut Exchange<'_>,
    rate: Rate,
    label: &str,
    progress: bool,
    stop: &AtomicBool,
) -> anyhow::Result<SendSpan> {
    let span = host::SpanAccounting::start();
    let steal0 = host::steal_ms();
    let run = driver
        .send_feed(
            ex,
            rate,
            || process::stopped(stop),
            |p: Progress| {
                if progress {
                    eprint!(
                        "\r  {label}: {:>3.0}%  {}/{} packets  {} orders",
                        100.0 * p.packets_done as f64 / p.packets as f64,
                        p.packets_done,
                        p.packets,
                        p.orders
                    );
                    let _ = std::io::stderr().flush();
                }
            },
        )
        .context("send to the trader")?;
    let steal1 = host::steal_ms();
    // The send loop busy-waits between sends, so it should never sleep; if it did (a blocked
    // write to stderr), its sleep would pass for stolen time, and none is reported.
    let (context_switches, thread_time) = span.finish(true);
    Ok(SendSpan {
        run,
        context_switches,
        thread_time,
        steal_ms: steal1
            .iter()
            .zip(steal0.iter().chain(std::iter::repeat(&0)))
            .map(|(b, a)| b.saturating_sub(*a))
            .collect(),
    })
}

/// What the run was asked to do, as the report states it.
#[derive(Debug)]
struct Asked {
    label: String,
    io: ExchangeIo,
    expect: Expect,
    source: Source,
    rate: Rate,
    batch: u16,
}

fn report(asked: Asked, feed: &Feed, settled: &Settlement, span: SendSpan) -> ReplayReport {
    let Asked {
        label,
        io,
        expect,
        source,
        rate,
        batch,
    } = asked;
    let Settlement {
        sent,
        orders,
        tick_to_trade,
        tick_to_trade_seen,
        tick_to_trade_from_send,
        tick_to_trade_tenths,
        harness_delay,
        unstamped,
        parity,
        schedule: _,
    } = settled;
    let SendSpan {
        run,
        context_switches,
        thread_time,
        steal_ms,
    } = span;
    let elapsed = run.seconds();
    ReplayReport {
        orders: paths::Orders::Udp,
        session: None,
        send_lateness: results::Summary::default(),
        label,
        exchange_io: io,
        expect,
        source: source.to_string(),
        rate_per_s: rate.per_sec(),
        closed_loop: rate.per_sec().is_none(),
        achieved_rate_per_s: if elapsed > 0.0 {
            sent.messages as f64 / elapsed
        } else {
            0.0
        },
        send_seconds: elapsed,
        batch,
        sent_messages: sent.messages,
        sent_packets: sent.packets,
        ticks: feed.ticks.len() as u64,
        orders_received: orders.received,
        orders_unknown_tick: orders.unknown_tick,
        orders_duplicate: orders.duplicate,
        orders_shares_mismatch: orders.shares_mismatch,
        orders_stock_mismatch: orders.stock_mismatch,
        orders_malformed: orders.malformed,
        orders_price_mismatch: orders.price_mismatch,
        orders_reverse_mismatch: orders.reverse_mismatch,
        orders_stamped_before_due: orders.stamped_before_due,
        send_dropped: sent.dropped,
        late_sends: run.late_sends,
        arrival: match io {
            ExchangeIo::Udp => Arrival::KernelTimestamp,
            ExchangeIo::Xdp => Arrival::XdpTimestamp,
        },
        tick_to_trade: tick_to_trade.summary(),
        tick_to_trade_seen: tick_to_trade_seen.summary(),
        tick_to_trade_from_send: tick_to_trade_from_send.summary(),
        tick_to_trade_tenths: tick_to_trade_tenths.iter().map(|l| l.summary()).collect(),
        harness_delay: harness_delay.summary(),
        unstamped_datagrams: *unstamped,
        context_switches,
        steal_ms,
        thread_time,
        parity: parity.clone(),
        retransmit: None,
        line_sends: Vec::new(),
        machine: results::Machine::read(),
    }
}

/// Sets a flag when dropped.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// `dir/name.hgrm` → `dir/name-<what>.hgrm`.
fn sibling(p: &std::path::Path, what: &str) -> PathBuf {
    let stem = p
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    p.with_file_name(format!("{stem}-{what}.hgrm"))
}

/// Writes what went out, each packet stamped with its scheduled send time.
fn write_pcap(
    path: &Path,
    feed: &Feed,
    settled: &Settlement,
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
    for (ts, payload) in settled.schedule.sent_packets(feed) {
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
