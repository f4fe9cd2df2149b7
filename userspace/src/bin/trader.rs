//! The trader: market data in, orders out, over AF_XDP (`--path xdp`) or a kernel UDP socket
//! (`--path udp`). Same decode, same engine, same encode on both; only the I/O differs.
use std::{
    io::ErrorKind,
    net::{Ipv4Addr, SocketAddrV4, UdpSocket},
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use clap::{Parser, ValueEnum};
use serde::Serialize;
use userspace::{
    cli,
    clock::now_ns,
    frame::{self, FrameBuilder, FrameError, parse_udp},
    host, process, sockopt,
    stats::{Latency, Summary},
    t2t::{Counters, PacketOutcome, Trader},
    xdp::{Counters as XdpCounters, XdpMode, XdpProgram},
    xsk::{Xsk, XskConfig, XskStats},
};
use wire::{itch::Stock, order::OrderRepr};
use xdp_common::Action;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Path {
    /// AF_XDP: the XDP program redirects the feed into a UMEM the trader busy-polls.
    Xdp,
    /// The kernel's UDP stack.
    Udp,
    /// The lab's floor, no trader at all: the XDP program turns each tick into an
    /// order-shaped reply and sends it back with XDP_TX. (The exchange end needs an XDP
    /// program too for XDP_TX into a veth: `replay --xdp-pass-on ex0`.)
    Reflect,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Wait {
    /// Busy-poll the ring or socket on one core.
    Spin,
    /// Sleep in poll()/recv() until data arrives.
    Block,
}

/// Tick-to-trade trader: reads MoldUDP64/ITCH market data, runs the HMA/HMA3 strategy on
/// each trade, and sends an order back to the sender for each signal.
#[derive(Debug, Parser)]
#[command(version)]
struct Options {
    /// I/O path.
    #[arg(long, value_enum)]
    path: Path,
    /// Interface to read market data from, in this network namespace (default `tr0`, the
    /// lab's). The UDP path binds --addr; given there, the interface is checked to exist.
    #[arg(long)]
    iface: Option<String>,
    /// Our IPv4 address (the UDP path binds it; the XDP path writes it into orders).
    #[arg(long, default_value = "198.18.0.2")]
    addr: Ipv4Addr,
    /// Market-data UDP port.
    #[arg(long, default_value_t = 26400)]
    port: u16,
    /// UDP port orders are sent to, at the market data's source address.
    #[arg(long, default_value_t = 26401)]
    order_port: u16,
    /// Strategy length n (HMA(n) against HMA3(n)).
    #[arg(long, default_value_t = 6)]
    n: i64,
    /// Trade only this stock symbol.
    #[arg(long, default_value = "SYNTH")]
    stock: String,
    /// Spin or block while waiting for data.
    #[arg(long, value_enum, default_value_t = Wait::Spin)]
    wait: Wait,
    /// XDP attach mode (XDP path): `native` (the driver's) or `skb` (generic).
    #[arg(long, default_value = "native")]
    xdp_mode: XdpMode,
    /// Frames taken from the RX ring per turn (XDP path).
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Bind the AF_XDP socket without XDP_USE_NEED_WAKEUP.
    #[arg(long)]
    no_need_wakeup: bool,
    /// Pin to this CPU.
    #[arg(long)]
    cpu: Option<usize>,
    /// mlockall(): no page faults on the measured path. (The UMEM is always populated and
    /// pinned: xsk-rs maps it with MAP_POPULATE and XDP_UMEM_REG pins it.)
    #[arg(long)]
    mlock: bool,
    /// Run under SCHED_FIFO at this priority (1-99).
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=99))]
    fifo: Option<i32>,
    /// SO_BUSY_POLL on the socket for this many µs (the kernel polls the device in our
    /// syscalls instead of waiting for its interrupt; the XDP path then polls the socket when
    /// its ring is empty).
    #[arg(long)]
    busy_poll: Option<i32>,
    /// With --busy-poll: SO_PREFER_BUSY_POLL (defer the device's interrupts to our polling).
    #[arg(long, requires = "busy_poll")]
    prefer_busy_poll: bool,
    /// With --busy-poll: SO_BUSY_POLL_BUDGET, packets per busy poll (default: the kernel's, 8).
    #[arg(long, requires = "busy_poll")]
    busy_poll_budget: Option<i32>,
    /// Back the UMEM with 2 MiB huge pages (XDP path; needs reserved huge pages,
    /// /proc/sys/vm/nr_hugepages).
    #[arg(long)]
    huge_pages: bool,
    /// UDP path: socket receive buffer in bytes. The default holds a few thousand ticks, as
    /// the AF_XDP path's 2048-entry RX ring does, so both paths can absorb the same burst.
    #[arg(long, default_value_t = 4 << 20)]
    rcvbuf: i32,
    /// UDP path: take up to this many datagrams per recvmmsg call (1 = recvfrom).
    #[arg(long, default_value_t = 1)]
    recvmmsg: usize,
    /// Exit after this many seconds without market data (0: never).
    #[arg(long, default_value_t = 30)]
    idle_exit: u64,
    /// Write the trader's counters and internal latencies here as JSON (stdout if absent).
    #[arg(long)]
    stats_out: Option<PathBuf>,
    /// Write the RX→TX histogram here (.hgrm).
    #[arg(long)]
    hgrm_out: Option<PathBuf>,
    /// Print `ready` on stdout once the socket is receiving (for scripts).
    #[arg(long)]
    ready: bool,
    /// Check the options (CPU, scheduling, output paths), then exit without touching a
    /// socket or an interface: what `cargo xtask bench` runs before it builds the lab.
    #[arg(long)]
    check: bool,
}

impl Options {
    /// The market-data interface: --iface, or the lab's trader side.
    fn iface(&self) -> &str {
        self.iface.as_deref().unwrap_or("tr0")
    }

    /// The loop never sleeps on purpose (a spinning trader; the reflector always waits).
    fn spins(&self) -> bool {
        self.wait == Wait::Spin && self.path != Path::Reflect
    }
}

/// The design-choice knobs this run used, recorded with its results.
#[derive(Debug, Serialize)]
struct Knobs {
    cpu: Option<usize>,
    fifo: Option<i32>,
    mlock: bool,
    busy_poll_us: Option<i32>,
    prefer_busy_poll: bool,
    busy_poll_budget: Option<i32>,
    huge_pages: bool,
    rx_batch: usize,
    need_wakeup: bool,
    recvmmsg: usize,
    rcvbuf: i32,
}

#[derive(Debug, Serialize)]
struct Report {
    knobs: Knobs,
    path: Path,
    wait: Wait,
    xdp_mode: Option<String>,
    n: i64,
    counters: Counters,
    frames_not_ours: FrameCounts,
    /// From the frame's arrival in userspace to its order's TX submission (kick done).
    rx_to_tx: Summary,
    /// `on_tick` alone: price in, decision out.
    engine: Summary,
    xdp_counters: Option<Vec<(String, u64)>>,
    xsk_stats: Option<XskStatsJson>,
    end: &'static str,
    /// Resident memory when the loop started and when it ended (KiB): flat on a soak.
    rss_start_kib: u64,
    rss_end_kib: u64,
    /// Context switches from the first packet to the loop's end (from start-up if none came):
    /// (voluntary, involuntary = preemptions).
    context_switches: results::ContextSwitches,
    /// Where the same span's wall time went: ran, waited for the CPU, stolen by the hypervisor.
    thread_time: results::ThreadTime,
}

#[derive(Debug, Default, Clone, Copy, Serialize)]
struct FrameCounts {
    malformed: u64,
    not_ipv4: u64,
    fragment: u64,
    not_udp: u64,
    other_port: u64,
}

impl FrameCounts {
    fn count(&mut self, e: FrameError) {
        match e {
            FrameError::Malformed => self.malformed += 1,
            FrameError::NotIpv4 => self.not_ipv4 += 1,
            FrameError::Fragment => self.fragment += 1,
            FrameError::NotUdp => self.not_udp += 1,
            FrameError::OtherPort => self.other_port += 1,
        }
    }
}

#[derive(Debug, Serialize)]
struct XskStatsJson {
    rx_dropped: u64,
    rx_invalid_descs: u64,
    rx_ring_full: u64,
    rx_fill_ring_empty: u64,
    tx_invalid_descs: u64,
    tx_ring_empty: u64,
    rx_fill_deferred: u64,
}

impl From<XskStats> for XskStatsJson {
    fn from(s: XskStats) -> Self {
        XskStatsJson {
            rx_dropped: s.rx_dropped,
            rx_invalid_descs: s.rx_invalid_descs,
            rx_ring_full: s.rx_ring_full,
            rx_fill_ring_empty: s.rx_fill_ring_empty,
            tx_invalid_descs: s.tx_invalid_descs,
            tx_ring_empty: s.tx_ring_empty,
            rx_fill_deferred: s.rx_fill_deferred,
        }
    }
}

/// RX times of the orders built in this turn, waiting for the kick.
struct Pending {
    rx_ns: [u64; 64],
    len: usize,
}

impl Pending {
    fn push(&mut self, t: u64) {
        if let Some(slot) = self.rx_ns.get_mut(self.len) {
            *slot = t;
            self.len += 1;
        }
    }
    fn flush(&mut self, tx_ns: u64, hist: &mut Latency) {
        for &t in &self.rx_ns[..self.len] {
            hist.record(tx_ns.saturating_sub(t));
        }
        self.len = 0;
    }
}

fn main() -> std::process::ExitCode {
    cli::run_main(real_main)
}

fn real_main() -> anyhow::Result<()> {
    let o = Options::parse();
    let stop = process::stop_flag()?;
    for (what, path) in [("--stats-out", &o.stats_out), ("--hgrm-out", &o.hgrm_out)] {
        if let Some(p) = path {
            cli::check_writable(what, p)?;
        }
    }
    if let Some(cpu) = o.cpu {
        process::pin_to_cpu(cpu)?;
    }
    if let Some(prio) = o.fifo {
        process::set_fifo(prio)?;
    }
    let params = engine::Params::from_n(o.n)
        .map_err(|e| anyhow::anyhow!("bad strategy length --n {}: {e}", o.n))?;
    let stock = Stock::new(&o.stock).map_err(|e| anyhow::anyhow!("bad --stock: {e}"))?;
    if o.check {
        return Ok(());
    }
    if o.path == Path::Udp
        && let Some(iface) = &o.iface
        && nix::net::if_::if_nametoindex(iface.as_str()).is_err()
    {
        bail!("no interface {iface:?} in this network namespace (`ip link` lists them)");
    }
    let mut trader = Trader::new(params, Some(stock));
    let mut rx_to_tx = Latency::new();
    let mut frames = FrameCounts::default();
    let idle = (o.idle_exit > 0).then(|| Duration::from_secs(o.idle_exit));

    let (end, xdp_counters, xsk_stats) = match o.path {
        Path::Xdp => run_xdp(&o, &mut trader, &mut rx_to_tx, &mut frames, &stop, idle)?,
        Path::Udp => (
            run_udp(&o, &mut trader, &mut rx_to_tx, &stop, idle)?,
            None,
            None,
        ),
        Path::Reflect => run_reflect(&o, &stop, idle)?,
    };

    // Taken when the loop ended, before its sockets closed (an error return leaves none).
    let accounting = AT_END
        .lock()
        .ok()
        .and_then(|a| *a)
        .unwrap_or_else(|| measure_accounting(o.spins()));
    let report = Report {
        knobs: Knobs {
            cpu: o.cpu,
            fifo: o.fifo,
            mlock: o.mlock,
            busy_poll_us: o.busy_poll,
            prefer_busy_poll: o.prefer_busy_poll,
            busy_poll_budget: o.busy_poll_budget,
            huge_pages: o.huge_pages,
            rx_batch: o.batch,
            need_wakeup: !o.no_need_wakeup,
            recvmmsg: o.recvmmsg,
            rcvbuf: o.rcvbuf,
        },
        path: o.path,
        wait: o.wait,
        xdp_mode: (o.path != Path::Udp).then(|| o.xdp_mode.to_string()),
        n: o.n,
        counters: trader.counters,
        frames_not_ours: frames,
        rx_to_tx: rx_to_tx.summary(),
        engine: trader.engine.summary(),
        xdp_counters: xdp_counters.map(|c: XdpCounters| {
            xdp_common::Counter::ALL
                .iter()
                .map(|&k| (k.name().to_owned(), c.get(k)))
                .collect()
        }),
        xsk_stats: xsk_stats.map(XskStatsJson::from),
        end,
        rss_start_kib: RSS_AT_READY.load(std::sync::atomic::Ordering::Relaxed),
        rss_end_kib: host::rss_kib(),
        context_switches: accounting.0,
        thread_time: accounting.1,
    };
    let json = serde_json::to_string_pretty(&report)?;
    match &o.stats_out {
        Some(p) => std::fs::write(p, json).with_context(|| format!("writing {}", p.display()))?,
        None => println!("{json}"),
    }
    if let Some(p) = &o.hgrm_out {
        rx_to_tx.write_hgrm(p)?;
    }
    Ok(())
}

type XdpOutcome = (&'static str, Option<XdpCounters>, Option<XskStats>);

fn run_xdp(
    o: &Options,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    frames: &mut FrameCounts,
    stop: &std::sync::atomic::AtomicBool,
    idle: Option<Duration>,
) -> anyhow::Result<XdpOutcome> {
    let mut prog = XdpProgram::attach(o.iface(), o.port, o.xdp_mode, Action::Redirect)
        .with_context(|| format!("failed to set up XDP on {}", o.iface()))?;
    let config = XskConfig {
        need_wakeup: !o.no_need_wakeup,
        huge_pages: o.huge_pages,
        ..XskConfig::default()
    };
    let mut xsk = Xsk::new(o.iface(), 0, config)?;
    prog.register_socket(0, xsk.raw_fd())?;
    if let Some(us) = o.busy_poll {
        sockopt::set_busy_poll(xsk.raw_fd(), us, o.prefer_busy_poll, o.busy_poll_budget)?;
    }
    let our_mac = host::read_mac(o.iface())?.octets();
    if o.mlock {
        process::lock_memory()?;
    }
    ready(o);
    // Declared after the socket and the program, so it drops before them: their teardown
    // sleeps, and that is not the loop's time.
    let _end = EndOfLoop(o.spins());
    let mut builder: Option<FrameBuilder> = None;
    let mut pending = Pending {
        rx_ns: [0; 64],
        len: 0,
    };
    let batch = o.batch.clamp(1, 64);
    let mut last_data = Instant::now();
    let mut end = "stopped by signal";
    let mut eos = false;
    while !process::stopped(stop) {
        if o.wait == Wait::Block {
            xsk.rx.wait(100).context("poll on the AF_XDP socket")?;
        }
        let tx = &mut xsk.tx;
        let n = xsk.rx.recv(batch, |f| {
            let t_rx = now_ns();
            let d = match parse_udp(f, o.port) {
                Ok(d) => d,
                Err(e) => {
                    frames.count(e);
                    return;
                }
            };
            let b = builder.get_or_insert_with(|| {
                FrameBuilder::new(
                    frame::endpoint(our_mac, o.addr, o.port),
                    frame::endpoint(d.src_mac, *d.src.ip(), o.order_port),
                )
            });
            let mut sent_any = false;
            let outcome = trader.on_packet(d.payload, now_ns, |order: &OrderRepr| {
                let sent = tx
                    // An order that doesn't fit claims more than the frame holds, so the
                    // builder refuses the frame rather than sending an empty datagram.
                    .send(|buf| b.build(buf, |body| order.emit_into(body).unwrap_or(usize::MAX)))
                    .is_ok();
                sent_any |= sent;
                sent
            });
            // One RX→TX sample per packet that produced orders, as on the UDP path.
            if sent_any {
                pending.push(t_rx);
            }
            if outcome == PacketOutcome::EndOfSession {
                eos = true;
            }
        });
        if pending.len > 0 {
            // Copy mode sends nothing without a sendto, whatever need_wakeup says, and at most
            // 32 frames per sendto: flush kicks until the ring is taken.
            if xsk.tx.flush().is_err() {
                trader.counters.tx_flush_failed += 1;
            }
            pending.flush(now_ns(), rx_to_tx);
        }
        if n > 0 {
            trader.prepare();
            last_data = Instant::now();
            data_seen();
            if eos {
                end = "end of session";
                break;
            }
        } else {
            xsk.tx.reclaim();
            if o.busy_poll.is_some() {
                // Drives the kernel's busy poll of the device (napi_busy_loop) from our core.
                let _ = xsk.rx.wait(0);
            }
            if idle.is_some_and(|d| last_data.elapsed() > d) {
                end = "idle timeout";
                break;
            }
        }
    }
    let counters = prog.counters().ok();
    let stats = xsk.statistics().ok();
    Ok((end, counters, stats))
}

/// The reflector: attach in reflect mode and wait. The end-of-session packet is not a trade,
/// so the program passes it to the kernel, where a UDP socket on the feed port sees it.
fn run_reflect(
    o: &Options,
    stop: &std::sync::atomic::AtomicBool,
    idle: Option<Duration>,
) -> anyhow::Result<XdpOutcome> {
    let prog = XdpProgram::attach(o.iface(), o.port, o.xdp_mode, Action::Reflect)
        .with_context(|| format!("failed to set up the XDP reflector on {}", o.iface()))?;
    let sock = UdpSocket::bind(SocketAddrV4::new(o.addr, o.port))
        .with_context(|| format!("failed to bind {}:{}", o.addr, o.port))?;
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    ready(o);
    let _end = EndOfLoop(false);
    let mut buf = [0u8; 2048];
    let mut last = (Instant::now(), prog.counters().ok());
    let end = loop {
        if process::stopped(stop) {
            break "stopped by signal";
        }
        if let Ok(n) = sock.recv(&mut buf)
            && wire::moldudp64::Packet::new_checked(&buf[..n]).is_ok_and(|p| p.is_end_of_session())
        {
            break "end of session";
        }
        let now = prog.counters().ok();
        if now != last.1 {
            last = (Instant::now(), now);
        } else if idle.is_some_and(|d| last.0.elapsed() > d) {
            break "idle timeout";
        }
    };
    Ok((end, prog.counters().ok(), None))
}

fn run_udp(
    o: &Options,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    stop: &std::sync::atomic::AtomicBool,
    idle: Option<Duration>,
) -> anyhow::Result<&'static str> {
    let sock = UdpSocket::bind(SocketAddrV4::new(o.addr, o.port)).with_context(|| {
        format!(
            "failed to bind {}:{} (port in use, or address not on an interface here?)",
            o.addr, o.port
        )
    })?;
    match o.wait {
        Wait::Spin => sock.set_nonblocking(true)?,
        Wait::Block => sock.set_read_timeout(Some(Duration::from_millis(100)))?,
    }
    {
        use std::os::fd::AsRawFd as _;
        sockopt::set_rcvbuf(sock.as_raw_fd(), o.rcvbuf)?;
        if let Some(us) = o.busy_poll {
            sockopt::set_busy_poll(sock.as_raw_fd(), us, o.prefer_busy_poll, o.busy_poll_budget)?;
        }
    }
    if o.mlock {
        process::lock_memory()?;
    }
    if o.recvmmsg > 1 && o.wait == Wait::Block {
        bail!("--recvmmsg needs --wait spin");
    }
    ready(o);
    let _end = EndOfLoop(o.spins());
    if o.recvmmsg > 1 {
        return run_udp_mmsg(o, trader, rx_to_tx, stop, idle, &sock);
    }
    let mut buf = [0u8; 2048];
    let mut obuf = [0u8; wire::order::LEN];
    let mut last_data = Instant::now();
    loop {
        if process::stopped(stop) {
            return Ok("stopped by signal");
        }
        let (len, from) = match sock.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                if idle.is_some_and(|d| last_data.elapsed() > d) {
                    return Ok("idle timeout");
                }
                continue;
            }
            Err(e) => return Err(e).context("recv on the market-data socket"),
        };
        let t_rx = now_ns();
        let dest = std::net::SocketAddr::new(from.ip(), o.order_port);
        let mut sent_any = false;
        let outcome = trader.on_packet(&buf[..len], now_ns, |order: &OrderRepr| {
            let n = order.emit_into(&mut obuf).unwrap_or(0);
            let ok = sock.send_to(&obuf[..n], dest).is_ok();
            sent_any |= ok;
            ok
        });
        if sent_any {
            rx_to_tx.record(now_ns().saturating_sub(t_rx));
        }
        trader.prepare();
        last_data = Instant::now();
        data_seen();
        if outcome == PacketOutcome::EndOfSession {
            return Ok("end of session");
        }
    }
}

fn run_udp_mmsg(
    o: &Options,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    stop: &std::sync::atomic::AtomicBool,
    idle: Option<Duration>,
    sock: &UdpSocket,
) -> anyhow::Result<&'static str> {
    use std::os::fd::AsRawFd as _;
    let fd = sock.as_raw_fd();
    let mut multi = sockopt::MultiRecv::new(o.recvmmsg);
    let mut obuf = [0u8; wire::order::LEN];
    let mut last_data = Instant::now();
    loop {
        if process::stopped(stop) {
            return Ok("stopped by signal");
        }
        let mut eos = false;
        let got = multi.recv(fd, |payload, from| {
            let t_rx = now_ns();
            let dest = SocketAddrV4::new(*from.ip(), o.order_port);
            let mut sent_any = false;
            let outcome = trader.on_packet(payload, now_ns, |order: &OrderRepr| {
                let n = order.emit_into(&mut obuf).unwrap_or(0);
                let ok = sock.send_to(&obuf[..n], dest).is_ok();
                sent_any |= ok;
                ok
            });
            if sent_any {
                rx_to_tx.record(now_ns().saturating_sub(t_rx));
            }
            trader.prepare();
            eos |= outcome == PacketOutcome::EndOfSession;
        });
        match got {
            Ok(0) => {}
            Ok(_) => {
                last_data = Instant::now();
                data_seen();
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if idle.is_some_and(|d| last_data.elapsed() > d) {
                    return Ok("idle timeout");
                }
            }
            Err(e) => return Err(e).context("recvmmsg on the market-data socket"),
        }
        if eos {
            return Ok("end of session");
        }
    }
}

static RSS_AT_READY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static SPAN: std::sync::Mutex<Option<host::SpanAccounting>> = std::sync::Mutex::new(None);
static FIRST_PACKET_SEEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static AT_END: std::sync::Mutex<Option<Accounting>> = std::sync::Mutex::new(None);

type Accounting = (results::ContextSwitches, results::ThreadTime);

fn measure_accounting(spinning: bool) -> Accounting {
    SPAN.lock()
        .ok()
        .and_then(|s| *s)
        .map(|s| s.finish(spinning))
        .unwrap_or_default()
}

struct EndOfLoop(bool);

impl Drop for EndOfLoop {
    fn drop(&mut self) {
        let a = measure_accounting(self.0);
        if let Ok(mut end) = AT_END.lock() {
            *end = Some(a);
        }
    }
}

fn start_accounting() {
    if let Ok(mut s) = SPAN.lock() {
        *s = Some(host::SpanAccounting::start());
    }
}

#[inline]
fn data_seen() {
    if !FIRST_PACKET_SEEN.load(std::sync::atomic::Ordering::Relaxed) {
        FIRST_PACKET_SEEN.store(true, std::sync::atomic::Ordering::Relaxed);
        start_accounting();
    }
}

fn ready(o: &Options) {
    RSS_AT_READY.store(host::rss_kib(), std::sync::atomic::Ordering::Relaxed);
    start_accounting();
    if o.ready {
        println!("ready");
    }
    eprintln!(
        "trader: {:?} path on {} port {}, {:?} wait; orders to port {}",
        o.path,
        o.iface(),
        o.port,
        o.wait,
        o.order_port
    );
}
