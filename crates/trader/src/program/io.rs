//! Each path's setup: the XDP program, the AF_XDP sockets or the UDP socket, the order
//! gateway's next hop; then the trader loop over the path's [`crate::trading::TraderIo`].
use std::{
    net::{SocketAddrV4, UdpSocket},
    os::fd::AsRawFd as _,
    sync::atomic::AtomicBool,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use paths::Wait;
use paths::{Io, QueueRule};
use results::{EndReason, FrameCounts, TriggerReport, XdpCounters, XskStats};
use xdp_common::{Action, OrderTo};

use super::PathEnd;
use crate::{BusyPoll, Options, Plan, Queues};
use afxdp::{
    frame::{self, Endpoint},
    host, process, sockopt,
    xdp::{Load, XdpProgram},
    xsk::Xsk,
};
use trader_core::{Trader, stats::Latency};

use crate::trading::{self, FeedSource, LoopEnd, MmsgIo, TriggerIo, UdpIo, XdpIo};

pub(crate) fn run_xdp(
    o: &Options,
    plan: &Plan,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    stop: &AtomicBool,
) -> anyhow::Result<PathEnd> {
    let spec = o.path.spec();
    let action = spec
        .action
        .context("an AF_XDP path has an XDP program (the path table says which)")?;
    let gateway = gateway(o)?;
    let mut prog = attach(o, o.port_b, action, &gateway)
        .with_context(|| format!("failed to set up XDP on {}", o.iface()))?;
    let config = plan.xsk;
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
    if spec.queues == QueueRule::One && serve != 1 {
        bail!(
            "--path {} serves one RX queue ({} has {have}; give --queues 1 and steer the \
             feed to queue 0): the fired ticks and the socket's are merged in sequence order, \
             which only one queue guarantees",
            o.path,
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
        // every queue of a multi-queue veth bind (test/lab-tests/tests/feed.rs).
        let xsk = Xsk::new(o.iface(), q, config)
            .with_context(|| format!("the AF_XDP socket for RX queue {q} of {}", o.iface()))?;
        prog.register_socket(q, xsk.raw_fd())?;
        busy_poll(xsk.raw_fd(), plan.busy_poll)?;
        xsks.push(xsk);
    }
    if o.mlock {
        process::lock_memory()?;
    }
    let rss_start_kib = ready(o);
    // How the loop waits is fixed for the run: a type, not a test per turn.
    let (p, g) = (&mut prog, &gateway);
    let x = match (o.wait, plan.busy_poll.is_some()) {
        (Wait::Spin, false) => run_xsk::<false, false>(o, plan, p, xsks, g, trader, rx_to_tx, stop),
        (Wait::Spin, true) => run_xsk::<false, true>(o, plan, p, xsks, g, trader, rx_to_tx, stop),
        (Wait::Block, false) => run_xsk::<true, false>(o, plan, p, xsks, g, trader, rx_to_tx, stop),
        (Wait::Block, true) => run_xsk::<true, true>(o, plan, p, xsks, g, trader, rx_to_tx, stop),
    }?;
    Ok(PathEnd {
        end: x.end,
        frames_not_ours: x.frames_not_ours,
        rx_queue_frames: x.rx_queue_frames,
        xdp_counters: x.xdp_counters,
        xdp_program: prog.program_stats(x.xdp_stages),
        xsk_stats: x.xsk_stats,
        rss_start_kib,
        trigger: x.trigger,
        order_session: x.order_session,
    })
}

/// What an AF_XDP run leaves for the report: how the loop ended, the frames it refused, the
/// socket's statistics, the program's counters and the trigger's.
struct XskEnd {
    end: LoopEnd,
    order_session: Option<results::OrderSessionReport>,
    frames_not_ours: FrameCounts,
    xsk_stats: Option<XskStats>,
    rx_queue_frames: Vec<u64>,
    xdp_counters: Option<XdpCounters>,
    /// The stages (`--xdp-stages`), read with the counters as one snapshot.
    xdp_stages: Option<Vec<results::OutcomeStages>>,
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
fn pin_sources(o: &Options, prog: &mut XdpProgram) -> anyhow::Result<afxdp::xdp::SourcesMap> {
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

#[expect(
    clippy::too_many_arguments,
    reason = "what run_xdp set up, handed to the loop once: a struct for it would be built once"
)]
fn run_xsk<const BLOCK: bool, const BUSY_POLL: bool>(
    o: &Options,
    plan: &Plan,
    prog: &mut XdpProgram,
    xsks: Vec<Xsk>,
    g: &Gateway,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    stop: &AtomicBool,
) -> anyhow::Result<XskEnd> {
    if o.path.spec().io == Io::Trigger {
        let stock = plan.strategy.stock;
        // The socket's I/O never blocks itself: the trigger's waits on the socket and the ring.
        let mut xdp = xdp_io::<false, BUSY_POLL>(o, prog, xsks, g)?;
        if plan.orders.transport == paths::Orders::TcpXdp {
            // The TCP trigger: the userspace TCP arms its next segment for the program.
            let session = order_session(plan, g)?.with_segment(prog.take_segment()?);
            xdp = xdp.with_order_session(session);
        }
        let mut arm = prog.take_arm()?;
        arm.set_demote(!o.no_arm_demote);
        let mut io = TriggerIo::<BLOCK, BUSY_POLL>::new(xdp, arm, prog.take_fired()?, stock)
            .polling_fired_every(o.fired_poll_every())
            .corrupting_arms(o.corrupt_arms);
        let what = "the AF_XDP socket or the trigger's ring";
        let (end, session) = trade_with_orders(plan, &mut io, trader, rx_to_tx, stop, what)?;
        let mut summary = io.summary();
        summary.woken_on_fire = Some(prog.wakes_on_fire());
        let mut x = xsk_end(end, io.xdp(), prog, Some(summary));
        x.order_session = session;
        return Ok(x);
    }
    let mut io = xdp_io::<BLOCK, BUSY_POLL>(o, prog, xsks, g)?;
    if plan.orders.transport == paths::Orders::TcpXdp {
        // The userspace TCP on this socket: logged in before the feed, as the kernel's is.
        io = io.with_order_session(order_session(plan, g)?);
    }
    let what = "the AF_XDP socket";
    let (end, session) = trade_with_orders(plan, &mut io, trader, rx_to_tx, stop, what)?;
    let mut x = xsk_end(end, &io, prog, None);
    x.order_session = session;
    Ok(x)
}

/// The userspace TCP's order session (`--orders tcp-xdp`), not connected yet.
fn order_session(plan: &Plan, g: &Gateway) -> anyhow::Result<trading::XdpTcp> {
    let o = &plan.orders;
    trading::XdpTcp::new(
        o.from,
        g.our_mac,
        o.to,
        g.orders.mac.octets(),
        &o.password,
        o.timeout,
    )
    .map(|s| s.resetting_after(o.reset_after))
}

/// [`trade`] with the orders layered as `--orders` says: over a SoupBinTCP session on the
/// kernel's TCP (`tcp-kernel`, [`trading::WithOrders`]), or on `io`'s own sink: the lab's UDP
/// order, or the userspace TCP an AF_XDP I/O carries (`tcp-xdp`).
fn trade_with_orders<I: trading::TraderIo>(
    plan: &Plan,
    io: &mut I,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    stop: &AtomicBool,
    what: &'static str,
) -> anyhow::Result<(LoopEnd, Option<results::OrderSessionReport>)> {
    let o = &plan.orders;
    if o.transport != paths::Orders::TcpKernel {
        return trade(plan, io, trader, rx_to_tx, stop, what);
    }
    let mut session = trading::TcpOrders::new(o.from, o.to, &o.password, o.timeout)?
        .resetting_after(o.reset_after)
        .busy_polling(plan.busy_poll.map(|b| (b.us, b.prefer, b.budget)));
    let mut io = trading::WithOrders::new(io, &mut session);
    trade(plan, &mut io, trader, rx_to_tx, stop, what)
}

/// The one trader loop, over every path's I/O: the order session the I/O carries logged in
/// before the first packet, the loop, then the session's report once it has had every answer
/// (or waited a while for them).
fn trade<I: trading::TraderIo>(
    plan: &Plan,
    io: &mut I,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    stop: &AtomicBool,
    what: &'static str,
) -> anyhow::Result<(LoopEnd, Option<results::OrderSessionReport>)> {
    io.login_orders(LOGIN_WAIT, &|| process::stopped(stop))?;
    say_logged_in(plan);
    let end = trading::run(io, trader, rx_to_tx, plan.run, stop).context(what)?;
    Ok((end, io.finish_orders(ANSWERS_WAIT)))
}

/// Says where the order session logged in (nothing for the lab's UDP orders).
fn say_logged_in(plan: &Plan) {
    let how = match plan.orders.transport {
        paths::Orders::Udp => return,
        paths::Orders::TcpKernel => "kernel TCP",
        paths::Orders::TcpXdp if plan.path.spec().io == Io::Trigger => {
            "smoltcp on AF_XDP; the XDP program fires its armed segments"
        }
        paths::Orders::TcpXdp => "smoltcp on AF_XDP",
    };
    eprintln!(
        "trader: logged in to the order session at {} (OUCH 5.0 over SoupBinTCP, {how})",
        plan.orders.to
    );
}

/// `SO_BUSY_POLL` and its companions on `fd`, if `--busy-poll` asks for them.
fn busy_poll(fd: std::os::fd::RawFd, busy: Option<BusyPoll>) -> anyhow::Result<()> {
    match busy {
        Some(b) => sockopt::set_busy_poll(fd, b.us, b.prefer, b.budget),
        None => Ok(()),
    }
}

/// How long the trader waits for its first login (the replay serves the session once it has
/// built its feed).
const LOGIN_WAIT: Duration = Duration::from_secs(30);
/// How long, after the loop, the trader waits for the answers to its orders.
const ANSWERS_WAIT: Duration = Duration::from_secs(2);

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
    // Read with the stages as one snapshot, so that each run is in both or in neither.
    let (xdp_counters, xdp_stages) = snapshot(prog);
    XskEnd {
        end,
        order_session: None,
        frames_not_ours: io.frames_not_ours,
        xsk_stats: io
            .xsks()
            .iter()
            .map(Xsk::statistics)
            .collect::<Result<Vec<_>, _>>()
            .ok()
            .map(afxdp::xsk::sum_stats),
        rx_queue_frames: io.frames_per_queue.clone(),
        xdp_counters,
        xdp_stages,
        trigger,
    }
}

/// The program's counters and stages (with `--xdp-stages`) as one snapshot
/// ([`XdpProgram::snapshot`]); said and left out if no snapshot could be taken.
fn snapshot(prog: &XdpProgram) -> (Option<XdpCounters>, Option<Vec<results::OutcomeStages>>) {
    match prog.snapshot() {
        Ok((counters, stages)) => (Some(counters.to_report()), stages),
        Err(e) => {
            // Each map as it stands, said: better than no counters at all.
            eprintln!(
                "trader: warning: {e}; the counters and the stages in the report were read \
                 apart and may differ by the runs in between"
            );
            (
                prog.counters().ok().map(|c| c.to_report()),
                prog.stages().ok(),
            )
        }
    }
}

pub(crate) fn run_udp(
    o: &Options,
    plan: &Plan,
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
    busy_poll(sock.as_raw_fd(), plan.busy_poll)?;
    if o.mlock {
        process::lock_memory()?;
    }
    let rss_start_kib = ready(o);
    let (end, order_session) = if o.recvmmsg > 1 {
        let mut io = MmsgIo::new(sock, o.order_to, usize::from(o.recvmmsg))?;
        if let Some(server) = o.retransmit_to {
            io = io.with_retransmit_source(server);
        }
        let what = "recvmmsg on the market-data socket";
        trade_with_orders(plan, &mut io, trader, rx_to_tx, stop, what)?
    } else {
        let mut io = UdpIo::new(sock, o.order_to)?;
        if let Some(b) = o.port_b {
            let sock_b = UdpSocket::bind(SocketAddrV4::new(o.addr, b))
                .with_context(|| format!("failed to bind line B's {}:{b} (--port-b)", o.addr))?;
            sockopt::set_rcvbuf(sock_b.as_raw_fd(), o.rcvbuf)?;
            busy_poll(sock_b.as_raw_fd(), plan.busy_poll)?;
            let block_ms = (o.wait == Wait::Block).then_some(100);
            io = io.with_line_b(sock_b, block_ms)?;
        }
        if let Some(server) = o.retransmit_to {
            io = io.with_retransmit_source(server);
        }
        trade_with_orders(
            plan,
            &mut io,
            trader,
            rx_to_tx,
            stop,
            "recv on the market-data socket",
        )?
    };
    Ok(PathEnd {
        end,
        order_session,
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
pub(crate) fn run_reflect(o: &Options, stop: &AtomicBool) -> anyhow::Result<PathEnd> {
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
    let (xdp_counters, xdp_stages) = snapshot(&prog);
    Ok(PathEnd {
        end: LoopEnd {
            reason,
            context_switches,
            thread_time,
            // The reflector's trader takes no packet: the program does the work.
            busy_ns: 0,
        },
        frames_not_ours: FrameCounts::default(),
        rx_queue_frames: Vec::new(),
        xdp_counters,
        xdp_program: prog.program_stats(xdp_stages),
        xsk_stats: None,
        rss_start_kib,
        trigger: None,
        order_session: None,
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
            stages: o.xdp_stages,
            // A blocking trigger trader sleeps on the ring too: firing must wake it (unless
            // told to wait for the next packet instead).
            fired_wakeup: action == Action::Trigger && o.wait == Wait::Block && !o.no_fired_wakeup,
            // The trigger fires only what the socket path would take: frames to us.
            trigger_dst: if action == Action::Trigger {
                Some((g.our_mac, o.addr))
            } else {
                None
            },
            // The reflector's and the trigger's orders go to the gateway, as the trader's do.
            order_to: Some(order_to(o, g)),
            // The userspace TCP's order session: its segments into the socket, not the kernel.
            order_tcp: o.orders == paths::Orders::TcpXdp,
            // The TCP trigger: the program fires the userspace TCP's armed segment, where the
            // path table says the program sends this path's tcp-xdp orders.
            trigger_tcp: o.orders == paths::Orders::TcpXdp
                && o.path
                    .spec()
                    .route(o.orders)
                    .is_some_and(|r| r.sent_by == paths::SentBy::Program),
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
    if let Some(p) = prog.program_stats(None) {
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
