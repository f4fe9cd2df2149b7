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
    xdp::XdpMode,
};
use paths::cli;

use crate::{
    Driver, Exchange, Monotonic, Outgoing, Pace, Port, Prebuilt, Progress, Rate, SendLoop,
    Settlement, exchange_io,
    feed::{Feed, MAX_PAYLOAD, Source},
    gateway::tcp::TcpGateway,
    retransmit::{self, Answers, Refusal, Retransmitter, Window},
    stream::{self, ItchStream, Limit, PackRule, StreamConfig, Streamed},
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
        burst: _,
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
        json_out: json,
        hgrm_out: hgrm,
        pcap_out: pcap,
        expect,
        orders,
        session_stall_after: stall,
        session_reset_after: reset,
        session_close_after: close,
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
    let outputs = Outputs { json, hgrm, pcap };
    let (stop, stock, params) = prepare(io, target_b, &outputs, cpu, &stock, n)?;
    let progress = progress.unwrap_or_else(|| std::io::stderr().is_terminal());
    let shape = FeedShape {
        count,
        duration,
        batch,
        stock,
        session,
        first_seq,
    };
    let feed = open_feed(&source, timing, &shape, (&label, progress), &stop)?;
    warn_about(&feed, &source, stock, count, duration);
    // What the trader should do: the engine fed the same ticks, offline.
    let ex = Exchange::new(&feed, params, expect, stock)
        .map_err(|e| anyhow::anyhow!("backtest failed: {e}"))?;
    if check {
        return Ok(());
    }

    // Held to the end of the run: dropping it detaches the program.
    let _peer_xdp = attach_pass_program(xdp_pass_on.as_deref(), io, xdp_mode)?;
    let faults = (stall, reset, close);
    let lines = ([feed_port, feed_port_b], (target, target_b));
    let feed_io = (io, iface.as_str(), target_mac, xdp_mode);
    let port = open_ports(feed_io, bind, lines, (orders, faults), feed.ticks.len())?;
    announce(&label, target, timing, &feed);
    let server = rerequest_server(retransmit, bind, retransmit_port)?;
    let rerequests = (retransmit, retransmit_history);
    let (mut driver, frontier, serving) =
        driver(port, &feed, stall_after_send_us * 1_000, rerequests)?;
    let how = Sending {
        feed: &feed,
        pace: timing.pace,
        label: &label,
        progress,
        stop: &stop,
        drain_ms,
    };
    let (span, mut settled, served) =
        serve_while_sending(&mut driver, ex, &how, server.as_ref(), &serving, &frontier)?;
    explain_recovered(&mut settled, served.as_ref());
    let asked = Asked {
        label,
        io,
        expect,
        source,
        timing,
        batch,
        orders,
        retransmit_window: retransmit.then_some(retransmit_history),
    };
    let start_ns = span.run.start_ns;
    let mut rep = report(asked, &feed, &settled, span);
    note_about(&feed, timing, served.as_ref(), retransmit_history);
    port_figures(&mut rep, &driver, served);
    let ends = (SocketAddrV4::new(*bind.ip(), feed_port), target);
    outputs.write(&rep, &settled, &feed, (timing.pace, start_ns), ends)
}

/// What comes before anything runs: the checks of the options (an A/B feed needs kernel UDP;
/// each output file can be written), the stop flag (Ctrl-C ends the run cleanly), the pin to
/// `--cpu`; then the stock traded and the strategy's parameters (`--n`), read.
fn prepare(
    io: ExchangeIo,
    target_b: Option<SocketAddrV4>,
    outputs: &Outputs,
    cpu: Option<usize>,
    stock: &str,
    n: i64,
) -> anyhow::Result<(Arc<AtomicBool>, Stock, engine::Params)> {
    if target_b.is_some() && io == ExchangeIo::Xdp {
        bail!("--target-b (an A/B feed) needs --io udp");
    }
    let stop = process::stop_flag()?;
    outputs.check()?;
    if let Some(cpu) = cpu {
        process::pin_to_cpu(cpu)?;
    }
    let stock = Stock::new(stock).map_err(|e| anyhow::anyhow!("bad --stock: {e}"))?;
    let params = engine::Params::from_n(n)
        .map_err(|e| anyhow::anyhow!("bad strategy length --n {n}: {e}"))?;
    Ok((stop, stock, params))
}

/// What the options ask of a feed: how much of the source (`--count`, `--duration`), packed
/// how (`--batch`), the stock traded, and the MoldUDP64 session and first sequence number.
#[derive(Debug, Clone, Copy)]
struct FeedShape {
    count: Option<u64>,
    duration: Option<f64>,
    batch: u16,
    stock: Stock,
    session: Session,
    first_seq: u64,
}

/// The feed of `source`: an ITCH file streamed ([`stream_feed`]), any other source built
/// whole ([`build_feed`]).
fn open_feed(
    source: &Source,
    timing: Timing,
    shape: &FeedShape,
    shown: (&str, bool),
    stop: &AtomicBool,
) -> anyhow::Result<Feed> {
    match source {
        Source::Itch(path) => stream_feed(path, timing, shape, shown, stop),
        _ => build_feed(source, timing.pace, shape),
    }
}

/// With `--xdp-pass-on IFACE` (and the feed not on AF_XDP): a program on the peer's interface
/// that passes everything (port 0 never matches a feed port), held as long as the result is.
fn attach_pass_program(
    iface: Option<&str>,
    io: ExchangeIo,
    mode: XdpMode,
) -> anyhow::Result<Option<afxdp::xdp::XdpProgram>> {
    match iface {
        Some(iface) if io != ExchangeIo::Xdp => Ok(Some(
            afxdp::xdp::XdpProgram::attach(iface, 0, mode, xdp_common::Action::Pass)
                .with_context(|| format!("attaching the pass program to {iface}"))?,
        )),
        _ => Ok(None),
    }
}

/// The exchange's ports: the feed's ([`open_feed_port`]) and the order gateway
/// ([`order_gateway`]), in that order.
fn open_ports(
    feed_io: (ExchangeIo, &str, netns::Mac, XdpMode),
    bind: SocketAddrV4,
    (feed_ports, targets): ([u16; 2], (SocketAddrV4, Option<SocketAddrV4>)),
    (orders, faults): (paths::Orders, SessionFaults),
    ticks: usize,
) -> anyhow::Result<exchange_io::Ports> {
    Ok(exchange_io::Ports {
        feed: open_feed_port(feed_io, bind, feed_ports, targets)?,
        session: order_gateway(orders, bind, ticks, faults)?,
    })
}

/// The feed's port: an AF_XDP socket on `iface` (`io`, the interface, the trader's MAC and the
/// XDP mode in `feed_io`), or kernel UDP, from `bind` (and the feed ports) to the targets
/// (line B too, for an A/B feed).
fn open_feed_port(
    (io, iface, target_mac, xdp_mode): (ExchangeIo, &str, netns::Mac, XdpMode),
    bind: SocketAddrV4,
    feed_ports: [u16; 2],
    (target, target_b): (SocketAddrV4, Option<SocketAddrV4>),
) -> anyhow::Result<exchange_io::ExchangeIo> {
    match io {
        ExchangeIo::Xdp => {
            exchange_io::ExchangeIo::xsk(iface, bind, feed_ports[0], target, target_mac, xdp_mode)
        }
        ExchangeIo::Udp => exchange_io::ExchangeIo::udp_lines(bind, feed_ports, target, target_b),
    }
}

/// After how many orders the order session stalls, is reset, is closed
/// (`--session-stall-after`, `--session-reset-after`, `--session-close-after`): the faults
/// asked of it.
type SessionFaults = (Option<u64>, Option<u64>, Option<u64>);

/// Orders over SoupBinTCP (`--orders tcp-*`): the session is served on `bind`'s address and
/// port, over TCP, with room for an order on each of the feed's `ticks` (the most a trader can
/// send that the exchange takes), and the faults asked for ([`SessionFaults`]).
fn order_gateway(
    orders: paths::Orders,
    bind: SocketAddrV4,
    ticks: usize,
    (stall, reset, close): SessionFaults,
) -> anyhow::Result<Option<TcpGateway>> {
    Ok(orders
        .is_tcp()
        .then(|| TcpGateway::bind(bind, order_session()?, ticks))
        .transpose()?
        .map(|g| {
            g.stalling_after(stall)
                .resetting_after(reset)
                .closing_after(close)
        }))
}

/// The start line on stderr: what goes out, to where, and how fast.
fn announce(label: &str, target: SocketAddrV4, timing: Timing, feed: &Feed) {
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
}

/// With `--retransmit`: the re-request server's socket, on `bind`'s address at `port`.
fn rerequest_server(
    retransmit: bool,
    bind: SocketAddrV4,
    port: u16,
) -> anyhow::Result<Option<UdpSocket>> {
    retransmit
        .then(|| {
            let at = SocketAddrV4::new(*bind.ip(), port);
            UdpSocket::bind(at).with_context(|| {
                format!("failed to bind the re-request server to {at} (--retransmit-port)")
            })
        })
        .transpose()
}

/// The send loop's driver over `port`, stalling `stall_ns` after each send, publishing how far
/// the feed went (the frontier, from the feed's first sequence number) for the re-request
/// server; and what answers re-requests (served with `--retransmit`). A prebuilt feed is served
/// from itself; a streamed one from a window of its last `history` messages' packets, which the
/// send loop fills (only when serving: it costs a copy a packet).
fn driver(
    port: exchange_io::Ports,
    feed: &Feed,
    stall_ns: u64,
    (retransmit, history): (bool, u64),
) -> anyhow::Result<(
    Driver<exchange_io::Ports, Monotonic>,
    Arc<AtomicU64>,
    Serving<'_>,
)> {
    let frontier = Arc::new(AtomicU64::new(feed.first_seq));
    let driver = Driver::new(port, Monotonic)
        .stall_after_send(stall_ns)
        .publish_frontier(Arc::clone(&frontier));
    match (&feed.streamed, retransmit) {
        (Some(_), true) => {
            let window = Window::new(feed.session, history, feed.first_seq).map_err(|e| {
                anyhow::anyhow!(
                    "the re-request window of {history} messages can't be reserved ({e}): use \
                     a smaller --retransmit-history"
                )
            })?;
            let window = Arc::new(Mutex::new(window));
            let driver = driver.keep_window(Arc::clone(&window));
            Ok((driver, frontier, Serving::Window(window)))
        }
        _ => Ok((
            driver,
            frontier,
            Serving::Feed(Retransmitter::new(feed, history)),
        )),
    }
}

/// What the send and the drain go by.
#[derive(Debug, Clone, Copy)]
struct Sending<'a> {
    feed: &'a Feed,
    pace: Pace,
    label: &'a str,
    /// A progress line on stderr.
    progress: bool,
    stop: &'a AtomicBool,
    /// The drain ends when nothing came for this long, ms.
    drain_ms: u64,
}

/// Serves re-requests on `server` (if any) from `serving` while the feed goes out and the
/// orders drain ([`send_and_drain`]), then settles: the send's span, the settlement and the
/// server's figures.
fn serve_while_sending(
    driver: &mut Driver<exchange_io::Ports, Monotonic>,
    mut ex: Exchange<'_>,
    how: &Sending<'_>,
    server: Option<&UdpSocket>,
    serving: &Serving<'_>,
    frontier: &AtomicU64,
) -> anyhow::Result<(SendSpan, Settlement, Option<results::RetransmitReport>)> {
    let serving_done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let server = server
            .map(|sock| s.spawn(|| retransmit::serve(serving, sock, frontier, &serving_done)));
        // The server stops when this scope's work ends, however it ends (a panic included:
        // the scope joins the thread, which must not wait for a flag nobody sets).
        let _stop_serving = SetOnDrop(&serving_done);
        let run = send_and_drain(driver, &mut ex, how);
        serving_done.store(true, Ordering::Relaxed);
        let served = server.and_then(served_figures);
        anyhow::Ok((run?, ex.settle(), served))
    })
}

/// The run itself: the trader's login to the order session (if there is one), the feed sent,
/// the orders drained, the end of session.
fn send_and_drain(
    driver: &mut Driver<exchange_io::Ports, Monotonic>,
    ex: &mut Exchange<'_>,
    how: &Sending<'_>,
) -> anyhow::Result<SendSpan> {
    if let Some(g) = &mut driver.port_mut().session {
        g.wait_for_login(LOGIN_WAIT, || process::stopped(how.stop))?;
    }
    let span = match &how.feed.streamed {
        None => send(driver, ex, &mut Prebuilt::new(how.feed), how)?,
        Some(st) => send_streamed(driver, ex, st, how)?,
    };
    // Drain: until every expected order is in, or nothing came for drain_ms.
    driver.drain(ex, how.drain_ms * 1_000_000, || process::stopped(how.stop));
    if how.progress {
        eprintln!(
            "\r  {}: done, {} orders{:20}",
            how.label,
            ex.orders().received,
            ""
        );
    }
    driver.end_session(ex);
    Ok(span)
}

/// Sends a streamed feed, the file read again: never more of it than the pre-pass saw (its
/// ticks are the schedule), and a warning if the file holds other messages now.
fn send_streamed(
    driver: &mut Driver<exchange_io::Ports, Monotonic>,
    ex: &mut Exchange<'_>,
    st: &Streamed,
    how: &Sending<'_>,
) -> anyhow::Result<SendSpan> {
    let mut config = st.config.clone();
    config.limit.messages = Some(how.feed.messages);
    let mut out = ItchStream::open(&config)?.with_packets(st.packets);
    let span = send(driver, ex, &mut out, how)?;
    if !process::stopped(how.stop) && out.messages() != how.feed.messages {
        eprintln!(
            "warning: {} held {} messages in the pre-pass and {} now: the file changed during \
             the run",
            config.path.display(),
            how.feed.messages,
            out.messages()
        );
    }
    Ok(span)
}

/// What the report says of a streamed file: how it was paced and packed, what the pre-pass
/// found, and the re-request `window` (in messages) if one was kept.
fn stream_report(st: &Streamed, timing: Timing, window: Option<u64>) -> StreamReport {
    StreamReport {
        multiplier: match timing.pace {
            Pace::FileTime(m) => Some(m.get()),
            Pace::Rate(_) | Pace::Bursts { .. } => None,
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
        retransmit_window: window,
    }
}

/// The notes on stderr after a run: a streamed file's timestamps that were missing or behind
/// (paced at its timestamps), and re-requests older than the `history` the window keeps.
fn note_about(
    feed: &Feed,
    timing: Timing,
    served: Option<&results::RetransmitReport>,
    history: u64,
) {
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
    if let Some(r) = served
        && r.out_of_window > 0
    {
        eprintln!(
            "note: {} re-requests named messages older than the last {history} the window \
             keeps (--retransmit-history): not answered",
            r.out_of_window
        );
    }
}

/// The report's figures from the ports and the re-request server: what each line sent, how
/// late the sends were, and the order session's and the server's own.
fn port_figures(
    rep: &mut ReplayReport,
    driver: &Driver<exchange_io::Ports, Monotonic>,
    served: Option<results::RetransmitReport>,
) {
    rep.retransmit = served;
    rep.line_sends = driver.port().feed.line_sends();
    rep.send_lateness = driver.send_lateness().summary();
    rep.session = driver.port().session.as_ref().map(|g| g.report());
}

/// The output files asked for: the report's JSON (`--json-out`, stdout without it), the
/// histograms (`--hgrm-out`) and the capture of what went out (`--pcap-out`).
#[derive(Debug)]
struct Outputs {
    json: Option<PathBuf>,
    hgrm: Option<PathBuf>,
    pcap: Option<PathBuf>,
}

impl Outputs {
    /// Each file asked for can be written: an error naming the option before anything runs.
    fn check(&self) -> anyhow::Result<()> {
        for (what, path) in [
            ("--json-out", &self.json),
            ("--hgrm-out", &self.hgrm),
            ("--pcap-out", &self.pcap),
        ] {
            if let Some(p) = path {
                cli::check_writable(what, p)?;
            }
        }
        Ok(())
    }

    /// Writes the report, then the histograms and the capture if asked: the feed's packets as
    /// they went out (`pace` and the send loop's `start_ns` time a streamed file's), from and
    /// to `ends`.
    fn write(
        &self,
        rep: &ReplayReport,
        settled: &Settlement,
        feed: &Feed,
        (pace, start_ns): (Pace, u64),
        ends: (SocketAddrV4, SocketAddrV4),
    ) -> anyhow::Result<()> {
        results::write(self.json.as_deref(), rep)?;
        if let Some(p) = &self.hgrm {
            write_histograms(settled, p)?;
        }
        if let Some(p) = &self.pcap {
            write_pcap(p, ends, |put| match &feed.streamed {
                None => {
                    for (ts, payload) in settled.schedule.sent_packets(feed) {
                        put(ts, payload)?;
                    }
                    Ok(())
                }
                Some(st) => {
                    stream::sent_packets(st, &settled.schedule, pace, start_ns, put).map(drop)
                }
            })?;
        }
        Ok(())
    }
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
    shape: &FeedShape,
    (label, progress): (&str, bool),
    stop: &AtomicBool,
) -> anyhow::Result<Feed> {
    let FeedShape {
        count,
        duration,
        batch: _,
        stock,
        session,
        first_seq,
    } = *shape;
    let limit = match (timing.pace, duration) {
        (Pace::Rate(Rate::PerSec(r)), Some(d)) if d * r < 1.0 => {
            bail!("--duration {d} s at {r} messages/s is less than one message")
        }
        (Pace::Rate(Rate::PerSec(r)), Some(d)) => Limit {
            messages: Some(count.unwrap_or(u64::MAX).min((d * r) as u64)),
            file_ns: None,
        },
        (Pace::Bursts { rate, burst }, Some(d)) => Limit {
            messages: Some(count.unwrap_or(u64::MAX).min(burst.messages_in(rate, d))),
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
        Pace::Bursts { rate, burst } => format!("at {} msg/s, bursts {burst}", Rate::PerSec(rate)),
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
fn build_feed(source: &Source, pace: Pace, shape: &FeedShape) -> anyhow::Result<Feed> {
    let FeedShape {
        count,
        duration,
        batch,
        stock,
        session,
        first_seq,
    } = *shape;
    let limit = match (pace, count, duration) {
        (Pace::FileTime(_), ..) => {
            bail!("{source} has no timestamps to pace by: only an itch: file has")
        }
        (Pace::Rate(Rate::PerSec(r)), _, Some(d)) if d * r < 1.0 => {
            bail!("--duration {d} s at {r} messages/s is less than one message")
        }
        (Pace::Rate(Rate::PerSec(r)), c, Some(d)) => {
            Some(c.unwrap_or(u64::MAX).min((d * r) as u64))
        }
        (Pace::Bursts { rate, burst }, c, Some(d)) => {
            Some(c.unwrap_or(u64::MAX).min(burst.messages_in(rate, d)))
        }
        (Pace::Rate(Rate::Max), _, Some(_)) => bail!("--duration needs a --rate (not max)"),
        (_, c, None) => c,
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
    how: &Sending<'_>,
) -> anyhow::Result<SendSpan> {
    let Sending {
        pace,
        label,
        progress,
        stop,
        ..
    } = *how;
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
    timing: Timing,
    batch: u16,
    orders: paths::Orders,
    /// The re-request server's window, in messages, if one is kept (`--retransmit`).
    retransmit_window: Option<u64>,
}

fn report(asked: Asked, feed: &Feed, settled: &Settlement, span: SendSpan) -> ReplayReport {
    let Asked {
        label,
        io,
        expect,
        source,
        timing,
        batch,
        orders: transport,
        retransmit_window,
    } = asked;
    let pace = timing.pace;
    let Settlement {
        sent,
        orders,
        tick_to_trade,
        tick_to_trade_seen,
        tick_to_trade_from_send,
        tick_to_trade_tenths,
        tick_to_trade_in_bursts,
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
        orders: transport,
        session: None,
        send_lateness: results::Summary::default(),
        label,
        exchange_io: io,
        expect,
        source: source.to_string(),
        rate_per_s: match pace {
            Pace::Rate(r) => r.per_sec(),
            Pace::Bursts { rate, .. } => Some(rate),
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
        burst: match pace {
            Pace::Bursts { burst, .. } => Some(burst.to_string()),
            _ => None,
        },
        tick_to_trade_in_bursts: tick_to_trade_in_bursts
            .as_ref()
            .map(trader_core::stats::Latency::summary),
        harness_delay: harness_delay.summary(),
        unstamped_datagrams: *unstamped,
        context_switches,
        steal_ms,
        thread_time,
        parity: parity.clone(),
        retransmit: None,
        line_sends: Vec::new(),
        stream: (feed.streamed.as_ref()).map(|st| stream_report(st, timing, retransmit_window)),
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
