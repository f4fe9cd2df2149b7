//! The trader: market data in, orders out, over AF_XDP (`--path xdp`) or a kernel UDP socket
//! (`--path udp`). Same decode, same engine, same encode, same loop on both
//! ([`userspace::trading::run`]); only the I/O differs. `--path trigger` is the AF_XDP path with
//! the decision in the driver: the trader arms the XDP program with the next tick's order and
//! the program fires it. `--path reflect` runs no trader at all: the XDP program turns each
//! tick into an order to the gateway itself (the lab's floor).
use std::{
    net::{Ipv4Addr, SocketAddrV4, UdpSocket},
    os::fd::AsRawFd as _,
    path::PathBuf,
    sync::atomic::AtomicBool,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use clap::Parser;
use netns::lab;
use results::{
    EndReason, FeedSeen, ForeignSession, FrameCounts, Knobs, TraderPath, TraderReport,
    TriggerReport, Wait, XdpCounters, XdpMode, XdpProgramStats, XskStats,
};
use userspace::{
    cli,
    frame::{self, Endpoint},
    host, process, sockopt,
    stats::Latency,
    t2t::{FeedRules, Trader},
    trading::{self, FeedSource, LoopConfig, LoopEnd, MAX_BATCH, MmsgIo, TriggerIo, UdpIo, XdpIo},
    xdp::{Load, XdpProgram},
    xsk::{Xsk, XskConfig},
};
use wire::{itch::Stock, moldudp64::Session};
use xdp_common::{Action, OrderTo};

/// Tick-to-trade trader: reads MoldUDP64/ITCH market data, runs the HMA/HMA3 strategy on
/// each trade, and sends an order to the configured order gateway (--order-to) for each
/// signal. It reads market data only from the feed's source (--feed-source, or the one it
/// learns when it confirms the feed), never answers whoever sent a datagram.
#[derive(Debug, Parser)]
#[command(version)]
struct Options {
    /// I/O path.
    #[arg(long, value_enum)]
    path: TraderPath,
    /// Interface to read market data from, in this network namespace (default `tr0`, the
    /// lab's). The UDP path binds --addr; given there, the interface is checked to exist.
    #[arg(long)]
    iface: Option<String>,
    /// Our IPv4 address (the UDP path binds it; the XDP path writes it into orders).
    #[arg(long, default_value_t = lab::TRADER_IP)]
    addr: Ipv4Addr,
    /// Market-data UDP port.
    #[arg(long, default_value_t = lab::MD_PORT)]
    port: u16,
    /// Line B of an A/B feed: the same feed on this UDP port too. The trader takes the first
    /// copy of each sequence number from either line and reports per line.
    #[arg(long)]
    port_b: Option<u16>,
    /// With --port-b: a packet that arrives past a gap waits up to this long (µs) for the other
    /// line to fill the gap (less if both lines show they are past it), so a tick lost on one
    /// line only is traded in order. 0: act on every gap at once.
    #[arg(long, default_value_t = userspace::t2t::lines::DEFAULT_WAIT_NS / 1_000, requires = "port_b")]
    ab_wait_us: u64,
    /// Where every order goes, on every path (the XDP program's own orders too): the order
    /// gateway's IPv4 address and UDP port. Never the market data's sender. The XDP paths write
    /// its next hop's MAC, read once at start from the neighbour table (an error if there is
    /// no complete entry; the lab pins one).
    #[arg(long, default_value_t = lab::EXCHANGE_ORDERS)]
    order_to: SocketAddrV4,
    /// The feed's source on line A: IP or IP:PORT. Datagrams to the feed port from anywhere
    /// else are counted (`foreign_source_addr`, `foreign_source_port`) and dropped, in the XDP
    /// program on the XDP paths and in the loop on every path. Without it, the source is
    /// learned with the session when the feed is confirmed, and pinned from then on.
    #[arg(long)]
    feed_source: Option<FeedSource>,
    /// Line B's source, as --feed-source is line A's (default, when --feed-source is given:
    /// line A's address, any port).
    #[arg(long, requires = "port_b")]
    feed_source_b: Option<FeedSource>,
    /// Strategy length n (HMA(n) against HMA3(n)).
    #[arg(long, default_value_t = lab::STRATEGY_N)]
    n: i64,
    /// Trade only this stock symbol.
    #[arg(long, default_value = lab::STOCK)]
    stock: String,
    /// Take only this MoldUDP64 session (up to 10 characters). Without it the session is
    /// learned: the first packet is held until a packet of the same session continues its
    /// sequence, so one stray datagram can't capture the trader.
    #[arg(long, value_parser = parse_session)]
    session: Option<Session>,
    /// The feed's next sequence number is this (with --session: the first packet is traded at
    /// once, not held for confirmation). Without it the trader starts where it joins.
    #[arg(long, requires = "session")]
    first_seq: Option<u64>,
    /// A forward jump in sequence numbers larger than this is held until the next packet
    /// continues it (a forged or corrupted number is then never acted on); smaller jumps are
    /// gaps, acted on at once. A forged jump below it can cost up to this many real ticks.
    #[arg(long, default_value_t = userspace::t2t::DEFAULT_MAX_JUMP)]
    max_jump: u64,
    /// A jump past --max-jump, or an end of session past the next number, is believed only
    /// when the stream it leaves has stopped: no packet of the feed in sequence for this long
    /// (µs) before the packet that confirms it. While the feed flows, two forged packets in
    /// sequence are never believed.
    #[arg(long, default_value_t = userspace::t2t::DEFAULT_QUIET_NS / 1_000)]
    quiet_us: u64,
    /// The most messages a second the feed can carry: a jump (or a lost tail) is believed only
    /// if it is no larger than this × the feed's silence before it, + --max-jump.
    #[arg(long, default_value_t = userspace::t2t::DEFAULT_MAX_RATE)]
    max_rate: u64,
    /// Ask the exchange's MoldUDP64 re-request server at this address for every gap (e.g.
    /// 198.18.0.1:26402, `replay --retransmit`): paced, at most 3 tries a gap. What comes back
    /// is counted (`recovered_messages`), not traded: the strategy has moved past it.
    #[arg(long)]
    retransmit_to: Option<SocketAddrV4>,
    /// Spin or block while waiting for data.
    #[arg(long, value_enum, default_value_t = Wait::Spin)]
    wait: Wait,
    /// XDP attach mode (XDP and reflect paths).
    #[arg(long, value_enum, default_value_t = XdpMode::Native)]
    xdp_mode: XdpMode,
    /// Turn on the XDP program's log (XDP and reflect paths): failed redirects, frames counted
    /// as malformed with their reason and the header fields at fault, failed reflections;
    /// never healthy packets, at most 20 records a second per CPU (the rest counted as
    /// `log_suppressed`). Printed on stderr through `log` (filter with RUST_LOG, default
    /// `info`). Off, the program's logging code is removed by the verifier.
    #[arg(long)]
    xdp_log: bool,
    /// Count the XDP program's runs and their time (the kernel's BPF run-time statistics, on
    /// while the trader runs and off again when it exits, however it exits); the report's
    /// `xdp_program` gets the mean ns per run. Costs two clock reads per run, so compare runs
    /// that all have it (XDP and reflect paths).
    #[arg(long)]
    xdp_stats: bool,
    /// The CPUs this process may use, read before it pins itself: where housekeeping threads
    /// (the XDP log reader) go. Not an option.
    #[arg(skip)]
    housekeeping: Vec<usize>,
    /// RX queues to serve (XDP path): one AF_XDP socket per queue, 0 to N-1, all read by the
    /// one loop. `all` (the default) serves every RX queue the interface has, so no feed frame
    /// can land on a queue without a socket.
    #[arg(long, default_value = "all", value_parser = parse_queues)]
    queues: Queues,
    /// Frames taken from the RX ring per turn (XDP path), 1 to 64.
    #[arg(long, default_value_t = 64, value_parser = parse_batch)]
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
    /// UDP path: take up to this many datagrams per recvmmsg call (1 = recvfrom; more needs
    /// --wait spin).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    recvmmsg: u16,
    /// Time the engine (`on_tick`) on one tick in this many (0: never). A sampled tick reads
    /// the clock twice more before its order leaves; the others read it only for their RX time.
    #[arg(long, default_value_t = userspace::t2t::DEFAULT_ENGINE_SAMPLE_EVERY)]
    engine_sample_every: u32,
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
    /// Testing only: corrupt the first N arms the trigger path writes (their side flipped), to
    /// show that the check of every fired order catches it (`trigger.mismatch`, an error at
    /// exit). Never for trading: the corrupted orders reach the exchange.
    #[arg(long, hide = true, default_value_t = 0)]
    corrupt_arms: u64,
    /// Check the options (CPU, scheduling, output paths), then exit without touching a
    /// socket or an interface: what `cargo xtask bench` runs before it builds the lab.
    #[arg(long)]
    check: bool,
}

impl Options {
    /// The market-data interface: --iface, or the lab's trader side.
    fn iface(&self) -> &str {
        self.iface.as_deref().unwrap_or(lab::TRADER_IF)
    }

    /// Line B's source: --feed-source-b, or, with --port-b and only line A named, line A's
    /// address on any port (line B's copies are duplicates of line A's, so it might never be
    /// learned, and an unpinned line would take anyone's datagrams).
    fn line_b_source(&self) -> Option<FeedSource> {
        self.feed_source_b.or_else(|| {
            self.port_b?;
            self.feed_source.map(|a| FeedSource {
                ip: a.ip,
                port: None,
            })
        })
    }

    /// The loop never sleeps on purpose (a spinning trader; the reflector always waits).
    fn spins(&self) -> bool {
        self.wait == Wait::Spin && self.path != TraderPath::Reflect
    }

    fn knobs(&self) -> Knobs {
        Knobs {
            cpu: self.cpu,
            fifo: self.fifo,
            mlock: self.mlock,
            busy_poll_us: self.busy_poll,
            prefer_busy_poll: self.prefer_busy_poll,
            busy_poll_budget: self.busy_poll_budget,
            huge_pages: self.huge_pages,
            rx_batch: self.batch,
            need_wakeup: !self.no_need_wakeup,
            recvmmsg: usize::from(self.recvmmsg),
            rcvbuf: self.rcvbuf,
        }
    }

    fn loop_config(&self) -> LoopConfig {
        LoopConfig {
            batch: self.batch,
            idle_exit: (self.idle_exit > 0).then(|| Duration::from_secs(self.idle_exit)),
            spinning: self.spins(),
            retransmit_to: self.retransmit_to,
            sources: [self.feed_source, self.line_b_source()],
        }
    }
}

/// `--queues`: every RX queue, or the first N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Queues {
    All,
    First(u32),
}

fn parse_queues(s: &str) -> Result<Queues, String> {
    match s {
        "all" => Ok(Queues::All),
        n => match n.parse::<u32>() {
            Ok(n) if (1..=xdp_common::MAX_QUEUES).contains(&n) => Ok(Queues::First(n)),
            _ => Err(format!(
                "bad --queues {s:?}: `all` or a count of RX queues, 1 to {}",
                xdp_common::MAX_QUEUES
            )),
        },
    }
}

/// The RX queues `iface` has (its `queues/rx-*` in sysfs), at least 1.
fn rx_queues(iface: &str) -> u32 {
    std::fs::read_dir(format!("/sys/class/net/{iface}/queues"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count() as u32
        })
        .unwrap_or(1)
        .max(1)
}

fn parse_session(s: &str) -> Result<Session, String> {
    Session::new(s).map_err(|_| {
        format!("bad session {s:?}: up to 10 printable ASCII characters (MoldUDP64's session)")
    })
}

fn parse_batch(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_BATCH).contains(&n) => Ok(n),
        _ => Err(format!("bad batch {s:?}: 1 to {MAX_BATCH} frames per turn")),
    }
}

/// What a path's run leaves for the report, besides the trader's own counts.
struct PathEnd {
    end: LoopEnd,
    frames_not_ours: FrameCounts,
    /// Feed frames taken per RX queue (XDP path).
    rx_queue_frames: Vec<u64>,
    xdp_counters: Option<XdpCounters>,
    xdp_program: Option<XdpProgramStats>,
    xsk_stats: Option<XskStats>,
    rss_start_kib: u64,
    /// The trigger path's arms and checks.
    trigger: Option<TriggerReport>,
}

fn main() -> std::process::ExitCode {
    cli::run_main(real_main)
}

fn real_main() -> anyhow::Result<()> {
    let mut o = Options::parse();
    let stop = process::stop_flag()?;
    for (what, path) in [("--stats-out", &o.stats_out), ("--hgrm-out", &o.hgrm_out)] {
        if let Some(p) = path {
            cli::check_writable(what, p)?;
        }
    }
    // Before pinning: where housekeeping threads (the XDP log reader) may go.
    o.housekeeping = affinity::allowed_cpus().unwrap_or_default();
    let o = o;
    if let Some(cpu) = o.cpu {
        process::pin_to_cpu(cpu)?;
    }
    if let Some(prio) = o.fifo {
        process::set_fifo(prio)?;
    }
    let params = engine::Params::from_n(o.n)
        .map_err(|e| anyhow::anyhow!("bad strategy length --n {}: {e}", o.n))?;
    let stock = Stock::new(&o.stock).map_err(|e| anyhow::anyhow!("bad --stock: {e}"))?;
    if o.recvmmsg > 1 && (o.path != TraderPath::Udp || o.wait == Wait::Block) {
        bail!("--recvmmsg needs --path udp and --wait spin");
    }
    if o.retransmit_to.is_some() && o.path == TraderPath::Reflect {
        bail!(
            "--retransmit-to needs a trader (--path xdp or udp): the reflector keeps no sequence"
        );
    }
    if let Some(b) = o.port_b {
        if b == o.port {
            bail!("--port-b {b} is line A's port too: line B needs a port of its own");
        }
        if o.path == TraderPath::Reflect || o.recvmmsg > 1 {
            bail!("--port-b (an A/B feed) needs --path xdp or --path udp without --recvmmsg");
        }
    }
    if o.path == TraderPath::Trigger && (o.port_b.is_some() || o.recvmmsg > 1) {
        bail!(
            "--path trigger takes the feed on one line through AF_XDP: no --port-b (an A/B feed \
             is arbitrated in userspace, so no copy can be fired in the driver) or --recvmmsg"
        );
    }
    if o.path == TraderPath::Trigger && o.xdp_mode != XdpMode::Native {
        bail!(
            "--path trigger needs native XDP (--xdp-mode native): it relies on one RX queue \
             being processed by one CPU at a time, which generic XDP doesn't promise"
        );
    }
    if o.corrupt_arms > 0 && o.path != TraderPath::Trigger {
        bail!("--corrupt-arms is a test of --path trigger");
    }
    if (o.xdp_log || o.xdp_stats) && o.path == TraderPath::Udp {
        bail!("--xdp-log and --xdp-stats need an XDP program: --path xdp, trigger or reflect");
    }
    if o.check {
        return Ok(());
    }
    if o.xdp_log {
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    }
    let mut trader = Trader::new(params, Some(stock))
        .with_engine_sampling(o.engine_sample_every)
        .with_feed_rules(FeedRules {
            session: o.session,
            first_seq: o.first_seq,
            max_jump: o.max_jump,
            quiet_ns: o.quiet_us.saturating_mul(1_000),
            max_rate: o.max_rate,
        });
    if o.retransmit_to.is_some() {
        trader = trader.with_recovery();
    }
    if o.port_b.is_some() {
        trader = trader.with_lines(o.ab_wait_us.saturating_mul(1_000));
    }
    let mut rx_to_tx = Latency::new();
    let run = match o.path {
        TraderPath::Xdp | TraderPath::Trigger => run_xdp(&o, &mut trader, &mut rx_to_tx, &stop)?,
        TraderPath::Udp => run_udp(&o, &mut trader, &mut rx_to_tx, &stop)?,
        TraderPath::Reflect => run_reflect(&o, &stop)?,
    };
    trader.finish();
    let report = TraderReport {
        knobs: o.knobs(),
        path: o.path,
        wait: o.wait,
        xdp_mode: (o.path != TraderPath::Udp).then_some(o.xdp_mode),
        n: o.n,
        counters: trader.counters,
        feed: feed_report(&o, &trader),
        frames_not_ours: run.frames_not_ours,
        rx_queue_frames: run.rx_queue_frames,
        rx_to_tx: rx_to_tx.summary(),
        engine: trader.engine.summary(),
        xdp_counters: run.xdp_counters,
        xdp_program: run.xdp_program,
        xsk_stats: run.xsk_stats,
        end: run.end.reason,
        rss_start_kib: run.rss_start_kib,
        rss_end_kib: host::rss_kib(),
        context_switches: run.end.context_switches,
        thread_time: run.end.thread_time,
        account: trader.account(),
        trigger: run.trigger,
    };
    results::write(o.stats_out.as_deref(), &report)?;
    warn_at_exit(&o, &report);
    if let Some(p) = &o.hgrm_out {
        rx_to_tx.write_hgrm(p)?;
    }
    if let Some(t) = &report.trigger
        && t.mismatch > 0
    {
        bail!(
            "{} of the {} orders the XDP program fired were not the order this trader would \
             have sent for their tick (trigger.mismatch in the report), and the exchange got \
             them: an arm that was wrong (corrupted: --corrupt-arms), or one that fired on a \
             tick this trader then took as something else",
            t.mismatch,
            t.fired
        );
    }
    Ok(())
}

fn run_xdp(
    o: &Options,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    stop: &AtomicBool,
) -> anyhow::Result<PathEnd> {
    let action = if o.path == TraderPath::Trigger {
        Action::Trigger
    } else {
        Action::Redirect
    };
    let gateway = gateway(o)?;
    let mut prog = attach(o, o.port_b, action, &gateway)
        .with_context(|| format!("failed to set up XDP on {}", o.iface()))?;
    let config = XskConfig {
        need_wakeup: !o.no_need_wakeup,
        huge_pages: o.huge_pages,
        ..XskConfig::default()
    };
    let have = rx_queues(o.iface());
    let serve = match o.queues {
        Queues::All if have > xdp_common::MAX_QUEUES => bail!(
            "{} has {have} RX queues; one trader serves at most {} (the XSKMAP's size): steer \
             the feed to the first {} (`ethtool -N`/`-X`) and give --queues {}",
            o.iface(),
            xdp_common::MAX_QUEUES,
            xdp_common::MAX_QUEUES,
            xdp_common::MAX_QUEUES
        ),
        Queues::All => have,
        Queues::First(n) if n > have => bail!(
            "--queues {n}: {} has {have} RX queue(s) (`ethtool -l {}` shows them)",
            o.iface(),
            o.iface()
        ),
        Queues::First(n) => n,
    };
    if o.path == TraderPath::Trigger && serve != 1 {
        bail!(
            "--path trigger serves one RX queue ({} has {have}; give --queues 1 and steer the \
             feed to queue 0): the fired ticks and the socket's are merged in sequence order, \
             which only one queue guarantees",
            o.iface()
        );
    }
    if serve < have {
        eprintln!(
            "warning: serving {serve} of {}'s {have} RX queues: feed frames that arrive on the \
             others find no socket, go to the kernel untraded and count in \
             xdp_counters.redirect_failed (steer the feed, or leave --queues at all)",
            o.iface()
        );
    }
    let mut xsks = Vec::with_capacity(serve as usize);
    for q in 0..serve {
        // Each socket has a UMEM of its own (`Xsk::new` makes one). xsk-rs issue #20 reports
        // ENOMEM from libxdp's xsk_socket__create_shared for a socket on queue > 0 of a veth
        // sharing one UMEM; with a UMEM per socket that path is never taken, and sockets on
        // every queue of a multi-queue veth bind (userspace/tests/feed.rs).
        let xsk = Xsk::new(o.iface(), q, config)
            .with_context(|| format!("the AF_XDP socket for RX queue {q} of {}", o.iface()))?;
        prog.register_socket(q, xsk.raw_fd())?;
        if let Some(us) = o.busy_poll {
            sockopt::set_busy_poll(xsk.raw_fd(), us, o.prefer_busy_poll, o.busy_poll_budget)?;
        }
        xsks.push(xsk);
    }
    if o.mlock {
        process::lock_memory()?;
    }
    let rss_start_kib = ready(o);
    // How the loop waits is fixed for the run: a type, not a test per turn.
    let (p, g) = (&mut prog, &gateway);
    let x = match (o.wait, o.busy_poll.is_some()) {
        (Wait::Spin, false) => run_xsk::<false, false>(o, p, xsks, g, trader, rx_to_tx, stop),
        (Wait::Spin, true) => run_xsk::<false, true>(o, p, xsks, g, trader, rx_to_tx, stop),
        (Wait::Block, false) => run_xsk::<true, false>(o, p, xsks, g, trader, rx_to_tx, stop),
        (Wait::Block, true) => run_xsk::<true, true>(o, p, xsks, g, trader, rx_to_tx, stop),
    }?;
    Ok(PathEnd {
        end: x.end,
        frames_not_ours: x.frames_not_ours,
        rx_queue_frames: x.rx_queue_frames,
        xdp_counters: x.xdp_counters,
        xdp_program: prog.program_stats(),
        xsk_stats: x.xsk_stats,
        rss_start_kib,
        trigger: x.trigger,
    })
}

/// What an AF_XDP run leaves for the report: how the loop ended, the frames it refused, the
/// socket's statistics, the program's counters and the trigger's.
struct XskEnd {
    end: LoopEnd,
    frames_not_ours: FrameCounts,
    xsk_stats: Option<XskStats>,
    rx_queue_frames: Vec<u64>,
    xdp_counters: Option<XdpCounters>,
    trigger: Option<TriggerReport>,
}

/// Where the XDP paths' frames go, resolved once at start: our MAC, the order gateway (its next
/// hop's MAC, its address and port) and the re-request server's next hop, if there is one.
struct Gateway {
    our_mac: [u8; 6],
    orders: Endpoint,
    retransmit_mac: Option<netns::Mac>,
}

/// Resolves the order gateway's next hop (and the re-request server's) on the feed's
/// interface: an error, before anything is attached, if the neighbour table can't say.
fn gateway(o: &Options) -> anyhow::Result<Gateway> {
    let our_mac = host::read_mac(o.iface())?.octets();
    let (_, mac) = host::next_hop_mac(o.iface(), *o.order_to.ip())
        .with_context(|| format!("the order gateway {} (--order-to)", o.order_to))?;
    let retransmit_mac = o
        .retransmit_to
        .map(|server| {
            host::next_hop_mac(o.iface(), *server.ip())
                .with_context(|| format!("the re-request server {server} (--retransmit-to)"))
                .map(|(_, mac)| mac)
        })
        .transpose()?;
    Ok(Gateway {
        our_mac,
        orders: frame::endpoint(mac, *o.order_to.ip(), o.order_to.port()),
        retransmit_mac,
    })
}

/// The XDP program's form of the gateway: the headers it writes into its own orders.
fn order_to(o: &Options, g: &Gateway) -> OrderTo {
    OrderTo {
        dst_mac: g.orders.mac.octets(),
        src_mac: g.our_mac,
        src_ip: o.addr.octets(),
        dst_ip: o.order_to.ip().octets(),
        dst_port: o.order_to.port().to_be_bytes(),
    }
}

/// The AF_XDP I/O over `xsks` as the options say (line B, the re-request server), telling
/// the program's table of sources what the loop learns.
fn xdp_io<const BLOCK: bool, const BUSY_POLL: bool>(
    o: &Options,
    prog: &mut XdpProgram,
    xsks: Vec<Xsk>,
    g: &Gateway,
) -> anyhow::Result<XdpIo<BLOCK, BUSY_POLL>> {
    let mut io = XdpIo::<BLOCK, BUSY_POLL>::per_queue(xsks, g.our_mac, o.addr, o.port, g.orders)
        .with_sources(pin_sources(o, prog)?);
    if let Some(b) = o.port_b {
        io = io.with_line_b(b);
    }
    if let (Some(server), Some(mac)) = (o.retransmit_to, g.retransmit_mac) {
        io = io.with_retransmit_source(server, mac);
    }
    Ok(io)
}

/// Pins the sources the options name in the program's table (line A, line B, the re-request
/// server, exactly); hands the table back for what the loop learns.
fn pin_sources(o: &Options, prog: &mut XdpProgram) -> anyhow::Result<userspace::xdp::SourcesMap> {
    let mut map = prog.take_sources()?;
    let named = [
        (xdp_common::SOURCE_LINE_A, o.feed_source),
        (xdp_common::SOURCE_LINE_B, o.line_b_source()),
        (
            xdp_common::SOURCE_RECOVERY,
            o.retransmit_to.map(FeedSource::exactly),
        ),
    ];
    for (index, source) in named {
        if let Some(s) = source {
            map.pin(index, &s.to_program())?;
        }
    }
    Ok(map)
}

fn run_xsk<const BLOCK: bool, const BUSY_POLL: bool>(
    o: &Options,
    prog: &mut XdpProgram,
    xsks: Vec<Xsk>,
    g: &Gateway,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    stop: &AtomicBool,
) -> anyhow::Result<XskEnd> {
    if o.path == TraderPath::Trigger {
        let stock = Stock::new(&o.stock).map_err(|e| anyhow::anyhow!("bad --stock: {e}"))?;
        // The socket's I/O never blocks itself: the trigger's waits on the socket and the ring.
        let xdp = xdp_io::<false, BUSY_POLL>(o, prog, xsks, g)?;
        let mut io =
            TriggerIo::<BLOCK, BUSY_POLL>::new(xdp, prog.take_arm()?, prog.take_fired()?, stock)
                .corrupting_arms(o.corrupt_arms);
        let end = trading::run(&mut io, trader, rx_to_tx, o.loop_config(), stop)
            .context("the AF_XDP socket or the trigger's ring")?;
        let trigger = Some(io.summary());
        return Ok(xsk_end(end, io.xdp(), prog, trigger));
    }
    let mut io = xdp_io::<BLOCK, BUSY_POLL>(o, prog, xsks, g)?;
    let end = trading::run(&mut io, trader, rx_to_tx, o.loop_config(), stop)
        .context("the AF_XDP socket")?;
    Ok(xsk_end(end, &io, prog, None))
}

/// What the run left, read at once after its loop.
fn xsk_end<const BLOCK: bool, const BUSY_POLL: bool>(
    end: LoopEnd,
    io: &XdpIo<BLOCK, BUSY_POLL>,
    prog: &XdpProgram,
    trigger: Option<TriggerReport>,
) -> XskEnd {
    // The program's counters now, while the socket is still in its map: the exchange's
    // repeated end-of-session packets that arrive after the loop ended would otherwise count
    // as frames no socket took (redirect_failed), a queue problem there isn't.
    let xdp_counters = prog.counters().ok().map(|c| c.to_report());
    XskEnd {
        end,
        frames_not_ours: io.frames_not_ours,
        xsk_stats: io
            .xsks()
            .iter()
            .map(Xsk::statistics)
            .collect::<Result<Vec<_>, _>>()
            .ok()
            .map(userspace::xsk::sum_stats),
        rx_queue_frames: io.frames_per_queue.clone(),
        xdp_counters,
        trigger,
    }
}

fn run_udp(
    o: &Options,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    stop: &AtomicBool,
) -> anyhow::Result<PathEnd> {
    if let Some(iface) = &o.iface
        && nix::net::if_::if_nametoindex(iface.as_str()).is_err()
    {
        bail!("no interface {iface:?} in this network namespace (`ip link` lists them)");
    }
    let sock = UdpSocket::bind(SocketAddrV4::new(o.addr, o.port)).with_context(|| {
        format!(
            "failed to bind {}:{} (port in use, or address not on an interface here?)",
            o.addr, o.port
        )
    })?;
    match o.wait {
        Wait::Spin => sock.set_nonblocking(true)?,
        // A timeout, so the stop flag and the idle timeout are still seen.
        Wait::Block => sock.set_read_timeout(Some(Duration::from_millis(100)))?,
    }
    sockopt::set_rcvbuf(sock.as_raw_fd(), o.rcvbuf)?;
    if let Some(us) = o.busy_poll {
        sockopt::set_busy_poll(sock.as_raw_fd(), us, o.prefer_busy_poll, o.busy_poll_budget)?;
    }
    if o.mlock {
        process::lock_memory()?;
    }
    let rss_start_kib = ready(o);
    let end = if o.recvmmsg > 1 {
        let mut io = MmsgIo::new(sock, o.order_to, usize::from(o.recvmmsg))?;
        if let Some(server) = o.retransmit_to {
            io = io.with_retransmit_source(server);
        }
        trading::run(&mut io, trader, rx_to_tx, o.loop_config(), stop)
            .context("recvmmsg on the market-data socket")?
    } else {
        let mut io = UdpIo::new(sock, o.order_to)?;
        if let Some(b) = o.port_b {
            let sock_b = UdpSocket::bind(SocketAddrV4::new(o.addr, b))
                .with_context(|| format!("failed to bind line B's {}:{b} (--port-b)", o.addr))?;
            sockopt::set_rcvbuf(sock_b.as_raw_fd(), o.rcvbuf)?;
            if let Some(us) = o.busy_poll {
                sockopt::set_busy_poll(
                    sock_b.as_raw_fd(),
                    us,
                    o.prefer_busy_poll,
                    o.busy_poll_budget,
                )?;
            }
            let block_ms = (o.wait == Wait::Block).then_some(100);
            io = io.with_line_b(sock_b, block_ms)?;
        }
        if let Some(server) = o.retransmit_to {
            io = io.with_retransmit_source(server);
        }
        trading::run(&mut io, trader, rx_to_tx, o.loop_config(), stop)
            .context("recv on the market-data socket")?
    };
    Ok(PathEnd {
        end,
        frames_not_ours: FrameCounts::default(),
        rx_queue_frames: Vec::new(),
        xdp_counters: None,
        xdp_program: None,
        xsk_stats: None,
        rss_start_kib,
        trigger: None,
    })
}

/// The reflector: attach in reflect mode and wait. The end-of-session packet is not a trade,
/// so the program passes it to the kernel, where a UDP socket on the feed port sees it. The
/// reflector never learns a source (it reads no feed): name it (`--feed-source`, as the bench
/// does), or the program reflects, and the socket takes an end of session from, anyone.
fn run_reflect(o: &Options, stop: &AtomicBool) -> anyhow::Result<PathEnd> {
    let gateway = gateway(o)?;
    let mut prog = attach(o, None, Action::Reflect, &gateway)
        .with_context(|| format!("failed to set up the XDP reflector on {}", o.iface()))?;
    // The floor keeps the same rule as the paths it is the floor of.
    let _sources = pin_sources(o, &mut prog)?;
    let sock = UdpSocket::bind(SocketAddrV4::new(o.addr, o.port))
        .with_context(|| format!("failed to bind {}:{}", o.addr, o.port))?;
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    let rss_start_kib = ready(o);
    let span = host::SpanAccounting::start();
    let idle = (o.idle_exit > 0).then(|| Duration::from_secs(o.idle_exit));
    let mut buf = [0u8; 2048];
    let mut last = (Instant::now(), prog.counters().ok());
    let reason = loop {
        if process::stopped(stop) {
            break EndReason::Stopped;
        }
        // Only the named feed ends the run (the program passes nothing else to this port once
        // a source is pinned; without --feed-source, nothing is pinned and anyone can).
        if let Ok((n, std::net::SocketAddr::V4(from))) = sock.recv_from(&mut buf)
            && o.feed_source.is_none_or(|s| s.check(from).is_ok())
            && wire::moldudp64::Packet::new_checked(&buf[..n]).is_ok_and(|p| p.is_end_of_session())
        {
            break EndReason::EndOfSession;
        }
        // The program's counters moving is the reflector's sign of life.
        let now = prog.counters().ok();
        if now != last.1 {
            last = (Instant::now(), now);
        } else if idle.is_some_and(|d| last.0.elapsed() > d) {
            break EndReason::IdleTimeout;
        }
    };
    let (context_switches, thread_time) = span.finish(false);
    Ok(PathEnd {
        end: LoopEnd {
            reason,
            context_switches,
            thread_time,
        },
        frames_not_ours: FrameCounts::default(),
        rx_queue_frames: Vec::new(),
        xdp_counters: prog.counters().ok().map(|c| c.to_report()),
        xdp_program: prog.program_stats(),
        xsk_stats: None,
        rss_start_kib,
        trigger: None,
    })
}

/// Loads and attaches the XDP program for `action`, with its log (`--xdp-log`) and run-time
/// statistics (`--xdp-stats`) if asked, and says what was loaded.
fn attach(
    o: &Options,
    port_b: Option<u16>,
    action: Action,
    g: &Gateway,
) -> anyhow::Result<XdpProgram> {
    let mut prog = XdpProgram::attach_lines(
        o.iface(),
        o.port,
        port_b,
        o.xdp_mode,
        action,
        Load {
            log: o.xdp_log,
            // A blocking trigger trader sleeps on the ring too: firing must wake it.
            fired_wakeup: o.path == TraderPath::Trigger && o.wait == Wait::Block,
            // The trigger fires only what the socket path would take: frames to us.
            trigger_dst: if o.path == TraderPath::Trigger {
                Some((g.our_mac, o.addr))
            } else {
                None
            },
            // The reflector's and the trigger's orders go to the gateway, as the trader's do.
            order_to: Some(order_to(o, g)),
        },
    )?;
    if o.xdp_log {
        prog.start_log(o.housekeeping.clone())?;
    }
    if o.xdp_stats {
        prog.enable_run_stats()?;
    }
    say_loaded(o, &prog);
    Ok(prog)
}

/// Says how large the loaded XDP program is, and whether it logs.
fn say_loaded(o: &Options, prog: &XdpProgram) {
    if let Some(p) = prog.program_stats() {
        eprintln!(
            "xdp: program loaded, {} B of eBPF after the verifier, {} B JIT-compiled; log {}",
            p.translated_bytes,
            p.jited_bytes,
            if o.xdp_log { "on (--xdp-log)" } else { "off" }
        );
    }
}

/// Says the trader is ready (on stdout with --ready, for scripts); returns the RSS now (KiB).
fn ready(o: &Options) -> u64 {
    if o.ready {
        println!("ready");
    }
    let source = |s: Option<FeedSource>| s.map_or_else(|| "learned".into(), |s| s.to_string());
    eprintln!(
        "trader: {} path on {} port {}, {} wait; feed from {}; orders to {}",
        o.path,
        o.iface(),
        o.port,
        o.wait,
        source(o.feed_source),
        o.order_to
    );
    host::rss_kib()
}

/// Which feed the trader followed and what else it saw.
fn feed_report(o: &Options, t: &Trader) -> FeedSeen {
    // Escaped: a capture's session can hold any bytes (NUL-filled in some).
    let name = |s: Session| s.trimmed().escape_ascii().to_string();
    let foreign = t.foreign_sessions();
    FeedSeen {
        session: t.session().map(name),
        session_pinned: o.session.is_some(),
        first_seq: t.first_seq(),
        max_jump: o.max_jump,
        quiet_ns: o.quiet_us.saturating_mul(1_000),
        max_rate: o.max_rate,
        foreign_sessions: foreign
            .iter()
            .map(|(s, packets)| ForeignSession {
                session: name(s),
                packets,
            })
            .collect(),
        foreign_sessions_unnamed: foreign.others,
        lines: t
            .line_counts()
            .map(|(lines, _)| lines.to_vec())
            .unwrap_or_default(),
        lost_on_both: t.line_counts().map_or(0, |(_, lost)| lost),
    }
}

/// Says on stderr, after the report, what the report shows but a user may not look for: feed
/// frames the program could not hand to a socket, and feed datagrams dropped for a wrong UDP
/// checksum in numbers that point at the sender leaving a partial checksum to an offload.
fn warn_at_exit(o: &Options, report: &TraderReport) {
    let iface = o.iface();
    if let Some(x) = &report.xdp_counters
        && x.redirect_failed > 0
    {
        eprintln!(
            "warning: {} market-data frames could not be redirected (xdp_counters.redirect_failed) \
             and went to the kernel untraded: they arrived on an RX queue this trader does not \
             serve (it serves {} of them; --queues all serves every one). Steer the feed \
             (`ethtool -N {iface} flow-type udp4 dst-port {} action 0`) or serve more queues; \
             see the README, \"Serving every RX queue\"",
            x.redirect_failed,
            report.rx_queue_frames.len(),
            o.port
        );
    }
    let c = &report.counters;
    if report.path != TraderPath::Reflect && report.feed.session.is_none() && c.packets > 0 {
        eprintln!(
            "warning: {} packets came, but no two of one session continued each other's sequence \
             numbers, so nothing was traded (counters.unconfirmed_packets {}, wrong_session {}). \
             Give --session (and --first-seq) if the feed is known",
            c.packets, c.unconfirmed_packets, c.wrong_session
        );
    }
    if c.wrong_session > 0 {
        let names: Vec<String> = report
            .feed
            .foreign_sessions
            .iter()
            .map(|f| format!("{} ({} packets)", f.session, f.packets))
            .collect();
        eprintln!(
            "note: {} packets of other sessions than {} were dropped: {}",
            c.wrong_session,
            report.feed.session.as_deref().unwrap_or("the feed's"),
            names.join(", ")
        );
    }
    if c.suspect_sequence > 0 {
        eprintln!(
            "note: {} packets carried sequence numbers that nothing confirmed (more than --max-jump \
             {} ahead, or behind the feed) and were dropped untraded (counters.suspect_sequence)",
            c.suspect_sequence, o.max_jump
        );
    }
    // A few are someone's broken frames (counted in the report); as many as were taken, or
    // all of them, is the sender's offload.
    let bad = report.frames_not_ours.bad_udp_checksum;
    if bad > 0 && bad >= report.counters.packets {
        eprintln!(
            "warning: {bad} market-data datagrams had a wrong UDP checksum and were dropped \
             (frames_not_ours.bad_udp_checksum). If the feed comes over veth from this host, \
             turn off TX checksum offload on the sending end (`ethtool -K <iface> tx off`): \
             otherwise the kernel leaves a partial checksum that only a kernel receiver accepts"
        );
    }
}
