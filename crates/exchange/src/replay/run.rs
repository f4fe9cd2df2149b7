//! The replay's run: what `run` does with its options (the I/O half; the `io` feature).
use std::{
    io::{IsTerminal as _, Write as _},
    net::{SocketAddrV4, UdpSocket},
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use paths::{ExchangeIo, Expect};
use results::{Arrival, ContextSwitches, ReplayReport, StreamReport, ThreadTime};
use wire::{itch::Stock, moldudp64::Session};

use afxdp::{
    frame::{self, FrameBuilder},
    host, process,
};
use paths::cli;

use crate::{
    Driver, Exchange, Monotonic, Outgoing, Pace, Port, Prebuilt, Progress, Rate, SendLoop,
    Settlement, exchange_io,
    feed::{Feed, MAX_PAYLOAD, Source},
    retransmit::{self, Answers, Refusal, Retransmitter, Window},
    stream::{self, ItchStream, Limit, PackRule, StreamConfig},
};

use super::{Options, Timing};

/// Runs the replay as `o` says: builds the feed and its backtest, sends it, takes the orders
/// back, settles, and writes the report (and the histograms and capture, if asked).
pub fn run(o: Options) -> anyhow::Result<()> {
    let timing = o.timing().map_err(anyhow::Error::msg)?;
    let Options {
        source,
        count,
        duration,
        rate: _,
        multiplier: _,
        topspeed: _,
        pack_window: _,
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
    let progress = progress.unwrap_or_else(|| std::io::stderr().is_terminal());
    let feed = match &source {
        Source::Itch(path) => stream_feed(
            path,
            timing,
            (count, duration),
            stock,
            (session, first_seq),
            (&label, progress),
            &stop,
        )?,
        _ => build_feed(
            &source,
            count,
            duration,
            timing.pace,
            batch,
            stock,
            session,
            first_seq,
        )?,
    };
    warn_about(&feed, &source, stock, count, duration);
    // What the trader should do: the engine fed the same ticks, offline.
    let mut ex = Exchange::new(&feed, params, expect, stock)
        .map_err(|e| anyhow::anyhow!("backtest failed: {e}"))?;
    if check {
        return Ok(());
    }

    // Port 0 never matches a feed port, so this program passes everything.
    let _peer_xdp = match &xdp_pass_on {
        Some(iface) if io != ExchangeIo::Xdp => Some(
            afxdp::xdp::XdpProgram::attach(iface, 0, xdp_mode, xdp_common::Action::Pass)
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
    match &feed.streamed {
        None => eprintln!(
            "replay {label}: {} messages in {} packets ({} ticks) to {target} {}",
            feed.messages,
            feed.packets.len(),
            feed.ticks.len(),
            pace_text(timing, 0),
        ),
        Some(st) => eprintln!(
            "replay {label}: {} messages in {} packets ({} ticks), {} of the file's time, to \
             {target} {}",
            feed.messages,
            st.packets,
            feed.ticks.len(),
            clock_text(st.span_ns),
            pace_text(timing, st.span_ns),
        ),
    }
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
    // A prebuilt feed is served from itself; a streamed one from a window of its last
    // packets, which the send loop fills (only when serving: it costs a copy a packet).
    let serving = match (&feed.streamed, retransmit) {
        (Some(_), true) => {
            let window =
                Window::new(feed.session, retransmit_history, feed.first_seq).map_err(|e| {
                    anyhow::anyhow!(
                        "the re-request window of {retransmit_history} messages can't be \
                         reserved ({e}): use a smaller --retransmit-history"
                    )
                })?;
            let window = Arc::new(Mutex::new(window));
            driver = driver.keep_window(Arc::clone(&window));
            Serving::Window(window)
        }
        _ => Serving::Feed(Retransmitter::new(&feed, retransmit_history)),
    };
    let (span, settled, served) = std::thread::scope(|s| {
        let server = server
            .as_ref()
            .map(|sock| s.spawn(|| retransmit::serve(&serving, sock, &frontier, &serving_done)));
        // The server stops when this scope's work ends, however it ends (a panic included:
        // the scope joins the thread, which must not wait for a flag nobody sets).
        let _stop_serving = SetOnDrop(&serving_done);
        let run = (|| {
            if let Some(g) = &mut driver.port_mut().session {
                g.wait_for_login(LOGIN_WAIT, || process::stopped(&stop))?;
            }
            let span = match &feed.streamed {
                None => send(
                    &mut driver,
                    &mut ex,
                    &mut Prebuilt::new(&feed),
                    timing.pace,
                    &label,
                    progress,
                    &stop,
                )?,
                Some(st) => {
                    // Never more than the pre-pass saw: its ticks are the schedule.
                    let mut config = st.config.clone();
                    config.limit.messages = Some(feed.messages);
                    let mut out = ItchStream::open(&config)?.with_packets(st.packets);
                    let span = send(
                        &mut driver,
                        &mut ex,
                        &mut out,
                        timing.pace,
                        &label,
                        progress,
                        &stop,
                    )?;
                    if !process::stopped(&stop) && out.messages() != feed.messages {
                        eprintln!(
                            "warning: {} held {} messages in the pre-pass and {} now: the file \
                             changed during the run",
                            config.path.display(),
                            feed.messages,
                            out.messages()
                        );
                    }
                    span
                }
            };
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
        pace: timing.pace,
        batch,
    };
    let start_ns = span.run.start_ns;
    let mut rep = report(asked, &feed, &settled, span);
    rep.stream = feed.streamed.as_ref().map(|st| StreamReport {
        multiplier: match timing.pace {
            Pace::FileTime(m) => Some(m.get()),
            Pace::Rate(_) => None,
        },
        pack_window_ns: match timing.pack {
            PackRule::Window { ns } => Some(ns),
            PackRule::Count(_) => None,
        },
        packets: st.packets,
        file_bytes: st.file_bytes,
        file_span_ns: st.span_ns,
        timestamps_invalid: st.clock.invalid,
        timestamps_behind: st.clock.behind,
        retransmit_window: retransmit.then_some(retransmit_history),
    });
    // At a --rate the timestamps time nothing: no note then.
    if let Some(st) = &feed.streamed
        && timing.file_time_packed()
        && (st.clock.invalid > 0 || st.clock.behind > 0)
    {
        eprintln!(
            "note: {}: {} messages without a time of day took the one before's, {} stamped \
             before the one before were held at its time",
            st.config.path.display(),
            st.clock.invalid,
            st.clock.behind
        );
    }
    if let Some(r) = &served
        && r.out_of_window > 0
    {
        eprintln!(
            "note: {} re-requests named messages older than the last {retransmit_history} \
             the window keeps (--retransmit-history): not answered",
            r.out_of_window
        );
    }
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
        let ends = (SocketAddrV4::new(*bind.ip(), feed_port), target);
        write_pcap(p, ends, |put| match &feed.streamed {
            None => {
                for (ts, payload) in settled.schedule.sent_packets(&feed) {
                    put(ts, payload)?;
                }
                Ok(())
            }
            Some(st) => {
                stream::sent_packets(st, &settled.schedule, timing.pace, start_ns, put).map(drop)
            }
        })?;
    }
    Ok(())
}

/// What answers re-requests: the feed, or a streamed feed's window.
enum Serving<'f> {
    Feed(Retransmitter<'f>),
    Window(Arc<Mutex<Window>>),
}

impl Answers for Serving<'_> {
    fn answer(
        &self,
        request: &[u8],
        frontier: u64,
        buf: &mut [u8; MAX_PAYLOAD],
    ) -> Result<(usize, u16), Refusal> {
        match self {
            Serving::Feed(r) => r.answer(request, frontier, buf),
            Serving::Window(w) => Answers::answer(&**w, request, frontier, buf),
        }
    }
}

/// The streamed feed of an ITCH file: its pre-pass, with a progress line about once a second.
fn stream_feed(
    path: &Path,
    timing: Timing,
    (count, duration): (Option<u64>, Option<f64>),
    stock: Stock,
    (session, first_seq): (Session, u64),
    (label, progress): (&str, bool),
    stop: &AtomicBool,
) -> anyhow::Result<Feed> {
    let limit = match (timing.pace, duration) {
        (Pace::Rate(Rate::PerSec(r)), Some(d)) if d * r < 1.0 => {
            bail!("--duration {d} s at {r} messages/s is less than one message")
        }
        (Pace::Rate(Rate::PerSec(r)), Some(d)) => Limit {
            messages: Some(count.unwrap_or(u64::MAX).min((d * r) as u64)),
            file_ns: None,
        },
        // The file's first `d` seconds of sending: `d` x the multiplier of its own time.
        (Pace::FileTime(m), Some(d)) => Limit {
            messages: count,
            file_ns: Some(m.unscale(d * 1e9)),
        },
        _ => Limit {
            messages: count,
            file_ns: None,
        },
    };
    let config = StreamConfig {
        path: path.to_path_buf(),
        rule: timing.pack,
        limit,
        session,
        first_seq,
    };
    let begun = Instant::now();
    let mut shown = begun;
    let feed = stream::prepass(
        &config,
        stock,
        || process::stopped(stop),
        |p| {
            if progress && shown.elapsed() >= Duration::from_secs(1) {
                shown = Instant::now();
                eprint!(
                    "\r  {label}: pre-pass {:.2} GB, {} messages, {} ticks, {} of the file's time",
                    p.bytes as f64 / 1e9,
                    p.messages,
                    p.ticks,
                    clock_text(p.file_ns)
                );
                let _ = std::io::stderr().flush();
            }
        },
    )?;
    if progress && shown != begun {
        eprintln!(
            "\r  {label}: pre-pass done in {:.1} s{:40}",
            begun.elapsed().as_secs_f64(),
            ""
        );
    }
    Ok(feed)
}

/// `ns` of a clock as `1h02m03.5s`, `2m03.500s` or `3.500000s`.
fn clock_text(ns: u64) -> String {
    let s = ns as f64 / 1e9;
    match ns / 1_000_000_000 {
        h if h >= 3600 => format!("{}h{:02}m{:04.1}s", h / 3600, h % 3600 / 60, s % 60.0),
        m if m >= 60 => format!("{}m{:06.3}s", m / 60, s % 60.0),
        _ => format!("{s:.6}s"),
    }
}

/// How a streamed file goes, for the start line.
fn pace_text(timing: Timing, span_ns: u64) -> String {
    let window = match timing.pack {
        PackRule::Window { ns } => format!("packed in {} windows", stream::PackWindow::from_ns(ns)),
        PackRule::Count(n) => format!("{n} a packet"),
    };
    match timing.pace {
        Pace::FileTime(m) => format!(
            "at its timestamps x{m} ({} of sending), {window}",
            clock_text(m.scale(span_ns))
        ),
        Pace::Rate(Rate::Max) if timing.file_time_packed() => format!("at top speed, {window}"),
        Pace::Rate(r) => format!("at {r} msg/s"),
    }
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
    pace: Pace,
    batch: u16,
    stock: Stock,
    session: Session,
    first_seq: u64,
) -> anyhow::Result<Feed> {
    let Pace::Rate(rate) = pace else {
        bail!("{source} has no timestamps to pace by: only an itch: file has")
    };
    let limit = match (count, duration, rate) {
        (_, Some(d), Rate::PerSec(r)) if d * r < 1.0 => {
            bail!("--duration {d} s at {r} messages/s is less than one message")
        }
        (c, Some(d), Rate::PerSec(r)) => Some(c.unwrap_or(u64::MAX).min((d * r) as u64)),
        (_, Some(_), Rate::Max) => bail!("--duration needs a --rate (not max)"),
        (c, None, _) => c,
    };
    Feed::build_numbered(source, limit, batch, stock, session, first_seq)
}

/// What the feed holds that the run should know of: no ticks, other sessions, less than
/// `--count`.
fn warn_about(
    feed: &Feed,
    source: &Source,
    stock: Stock,
    count: Option<u64>,
    duration: Option<f64>,
) {
    if feed.ticks.is_empty()
        && let Source::Market(spec) = source
        && !spec.synth_trades
    {
        eprintln!(
            "warning: {source}: {stock} prints as Order Executed messages, priced only by the \
             book, and the trader reads Trade ('P') messages only: it will send no order. Add \
             :synth=P to the source for prints as Trade messages"
        );
    } else if feed.ticks.is_empty() {
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
    out: &mut impl Outgoing,
    pace: Pace,
    label: &str,
    progress: bool,
    stop: &AtomicBool,
) -> anyhow::Result<SendSpan> {
    let span = host::SpanAccounting::start();
    let steal0 = host::steal_ms();
    let run = driver
        .send(
            ex,
            out,
            pace,
            || process::stopped(stop),
            |p: Progress| {
                if progress {
                    eprint!(
                        "\r  {label}: {:>3.0}%  {}/{} packets  {} orders",
                        100.0 * p.packets_done as f64 / p.packets.max(1) as f64,
                        p.packets_done,
                        p.packets,
                        p.orders
                    );
                    let _ = std::io::stderr().flush();
                }
            },
        )
        .context("sending the feed to the trader")?;
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
    pace: Pace,
    batch: u16,
}

fn report(asked: Asked, feed: &Feed, settled: &Settlement, span: SendSpan) -> ReplayReport {
    let Asked {
        label,
        io,
        expect,
        source,
        pace,
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
        rate_per_s: match pace {
            Pace::Rate(r) => r.per_sec(),
            Pace::FileTime(_) => None,
        },
        closed_loop: !pace.scheduled(),
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
        stream: None,
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

/// Writes what went out, each packet stamped with its scheduled send time: `packets` calls its
/// argument with each (time, payload), in order, `ends` the feed's source and destination.
fn write_pcap(
    path: &Path,
    (from, to): (SocketAddrV4, SocketAddrV4),
    packets: impl FnOnce(&mut dyn FnMut(u64, &[u8]) -> anyhow::Result<()>) -> anyhow::Result<()>,
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
    packets(&mut |ts, payload| {
        let n = b
            .build(&mut buf, |body| {
                body[..payload.len()].copy_from_slice(payload);
                payload.len()
            })
            .context("packet too large for a frame")?;
        w.write_frame(ts, &buf[..n])?;
        Ok(())
    })?;
    w.finish()?;
    Ok(())
}
