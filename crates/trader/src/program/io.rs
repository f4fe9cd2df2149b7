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
use crate::{BusyPoll, Plan, Queues};
use afxdp::{
    frame::{self, Endpoint},
    host, process, sockopt,
    xdp::{Load, XdpProgram},
    xsk::Xsk,
};
use trader_core::{Trader, stats::Latency};

use crate::trading::{self, FeedSource, LoopEnd, MmsgIo, TriggerIo, UdpIo, XdpIo};

pub(crate) fn run_xdp(
    plan: &Plan,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    stop: &AtomicBool,
) -> anyhow::Result<PathEnd> {
    let spec = plan.path.spec();
    let action = spec
        .action
        .context("an AF_XDP path has an XDP program (the path table says which)")?;
    let gateway = gateway(plan)?;
    let mut prog = attach(plan, plan.receive.port_b, action, &gateway)
        .with_context(|| format!("failed to set up XDP on {}", plan.iface()))?;
    let config = plan.xsk;
    let have = rx_queues(plan.iface());
    let serve = match plan.receive.queues {
        Queues::All if have > xdp_common::MAX_QUEUES => bail!(
            "{} has {have} RX queues; one trader serves at most {} (the XSKMAP's size): steer \
             the feed to the first {} (`ethtool -N`/`-X`) and give --queues {}",
            plan.iface(),
            xdp_common::MAX_QUEUES,
            xdp_common::MAX_QUEUES,
            xdp_common::MAX_QUEUES
        ),
        Queues::All => have,
        Queues::First(n) if n > have => bail!(
            "--queues {n}: {} has {have} RX queue(s) (`ethtool -l {}` shows them)",
            plan.iface(),
            plan.iface()
        ),
        Queues::First(n) => n,
    };
    if spec.queues == QueueRule::One && serve != 1 {
        bail!(
            "--path {} serves one RX queue ({} has {have}; give --queues 1 and steer the \
             feed to queue 0): the fired ticks and the socket's are merged in sequence order, \
             which only one queue guarantees",
            plan.path,
            plan.iface()
        );
    }
    if serve < have {
        eprintln!(
            "warning: serving {serve} of {}'s {have} RX queues: feed frames that arrive on the \
             others find no socket, go to the kernel untraded and count in \
             xdp_counters.redirect_failed (steer the feed, or leave --queues at all)",
            plan.iface()
        );
    }
    let mut xsks = Vec::with_capacity(serve as usize);
    for q in 0..serve {
        // Each socket has a UMEM of its own (`Xsk::new` makes one). xsk-rs issue #20 reports
        // ENOMEM from libxdp's xsk_socket__create_shared for a socket on queue > 0 of a veth
        // sharing one UMEM; with a UMEM per socket that path is never taken, and sockets on
        // every queue of a multi-queue veth bind (test/lab-tests/tests/feed.rs).
        let xsk = Xsk::new(plan.iface(), q, config)
            .with_context(|| format!("the AF_XDP socket for RX queue {q} of {}", plan.iface()))?;
        prog.register_socket(q, xsk.raw_fd())?;
        busy_poll(xsk.raw_fd(), plan.busy_poll)?;
        xsks.push(xsk);
    }
    if plan.receive.mlock {
        process::lock_memory()?;
    }
    let rss_start_kib = ready(plan);
    // How the loop waits is fixed for the run: a type, not a test per turn.
    let (p, g) = (&mut prog, &gateway);
    let x = match (plan.receive.wait, plan.busy_poll.is_some()) {
        (Wait::Spin, false) => run_xsk::<false, false>(plan, p, xsks, g, trader, rx_to_tx, stop),
        (Wait::Spin, true) => run_xsk::<false, true>(plan, p, xsks, g, trader, rx_to_tx, stop),
        (Wait::Block, false) => run_xsk::<true, false>(plan, p, xsks, g, trader, rx_to_tx, stop),
        (Wait::Block, true) => run_xsk::<true, true>(plan, p, xsks, g, trader, rx_to_tx, stop),
    }?;
    Ok(PathEnd {
        end: x.end,
        frames_not_ours: x.frames_not_ours,
        rx_queue_frames: x.rx_queue_frames,
        xdp_counters: x.xdp_counters,
        xdp_program: prog.program_stats(x.xdp_stages),
        xsk_stats: x.xsk_stats,
        socket_drops: None,
        napi_id: x.napi_id,
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
    /// The highest NAPI id the kernel delivered to the AF_XDP sockets from.
    napi_id: Option<u32>,
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
fn gateway(plan: &Plan) -> anyhow::Result<Gateway> {
    let our_mac = host::read_mac(plan.iface())?.octets();
    let (_, mac) = host::next_hop_mac(plan.iface(), *plan.orders.to.ip())
        .with_context(|| format!("the order gateway {} (--order-to)", plan.orders.to))?;
    let retransmit_mac = plan
        .run
        .retransmit_to
        .map(|server| {
            host::next_hop_mac(plan.iface(), *server.ip())
                .with_context(|| format!("the re-request server {server} (--retransmit-to)"))
                .map(|(_, mac)| mac)
        })
        .transpose()?;
    Ok(Gateway {
        our_mac,
        orders: frame::endpoint(mac, *plan.orders.to.ip(), plan.orders.to.port()),
        retransmit_mac,
    })
}

/// The XDP program's form of the gateway: the headers it writes into its own orders.
fn order_to(plan: &Plan, g: &Gateway) -> OrderTo {
    OrderTo {
        dst_mac: g.orders.mac.octets(),
        src_mac: g.our_mac,
        src_ip: plan.receive.addr.octets(),
        dst_ip: plan.orders.to.ip().octets(),
        dst_port: plan.orders.to.port().to_be_bytes(),
    }
}

/// The AF_XDP I/O over `xsks` as the options say (line B, the re-request server), telling
/// the program's table of sources what the loop learns.
fn xdp_io<const BLOCK: bool, const BUSY_POLL: bool>(
    plan: &Plan,
    prog: &mut XdpProgram,
    xsks: Vec<Xsk>,
    g: &Gateway,
) -> anyhow::Result<XdpIo<BLOCK, BUSY_POLL>> {
    let mut io = XdpIo::<BLOCK, BUSY_POLL>::per_queue(
        xsks,
        g.our_mac,
        plan.receive.addr,
        plan.receive.port,
        g.orders,
    )
    .with_sources(pin_sources(plan, prog)?);
    if let Some(b) = plan.receive.port_b {
        io = io.with_line_b(b);
    }
    if let (Some(server), Some(mac)) = (plan.run.retransmit_to, g.retransmit_mac) {
        io = io.with_retransmit_source(server, mac);
    }
    Ok(io)
}

/// Pins the sources the options name in the program's table (line A, line B, the re-request
/// server, exactly); hands the table back for what the loop learns.
fn pin_sources(plan: &Plan, prog: &mut XdpProgram) -> anyhow::Result<afxdp::xdp::SourcesMap> {
    let mut map = prog.take_sources()?;
    let named = [
        (xdp_common::SOURCE_LINE_A, plan.run.sources[0]),
        (xdp_common::SOURCE_LINE_B, plan.run.sources[1]),
        (
            xdp_common::SOURCE_RECOVERY,
            plan.run.retransmit_to.map(FeedSource::exactly),
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
    plan: &Plan,
    prog: &mut XdpProgram,
    xsks: Vec<Xsk>,
    g: &Gateway,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    stop: &AtomicBool,
) -> anyhow::Result<XskEnd> {
    if plan.path.spec().io == Io::Trigger {
        let stock = plan.strategy.stock;
        // The socket's I/O never blocks itself: the trigger's waits on the socket and the ring.
        let mut xdp = xdp_io::<false, BUSY_POLL>(plan, prog, xsks, g)?;
        if plan.orders.transport == paths::Orders::TcpXdp {
            // The TCP trigger: the userspace TCP arms its next segment for the program.
            let session = order_session(plan, g)?
                .with_port_map(prog.take_order_port()?)
                .with_segment(prog.take_segment()?);
            xdp = xdp.with_order_session(session);
        }
        let mut arm = prog.take_arm()?;
        arm.set_demote(plan.trigger.demote);
        let mut io = TriggerIo::<BLOCK, BUSY_POLL>::new(xdp, arm, prog.take_fired()?, stock)
            .polling_fired_every(plan.trigger.fired_poll_every)
            .corrupting_arms(plan.trigger.corrupt_arms);
        if plan.strategy.symbols.is_some() {
            io = io.on_book(prog.take_book_trigger()?);
        }
        let what = "the AF_XDP socket or the trigger's ring";
        let (end, session) = trade_with_orders(plan, &mut io, trader, rx_to_tx, stop, what)?;
        let mut summary = io.summary();
        summary.woken_on_fire = Some(prog.wakes_on_fire());
        let mut x = xsk_end(end, io.xdp(), prog, Some(summary));
        x.order_session = session;
        return Ok(x);
    }
    let mut io = xdp_io::<BLOCK, BUSY_POLL>(plan, prog, xsks, g)?;
    if prog.filters() {
        io = io.with_filter(prog.take_filter()?);
    }
    if plan.orders.transport == paths::Orders::TcpXdp {
        // The userspace TCP on this socket: logged in before the feed, as the kernel's is.
        io = io.with_order_session(order_session(plan, g)?.with_port_map(prog.take_order_port()?));
    }
    let what = "the AF_XDP socket";
    let (end, session) = trade_with_orders(plan, &mut io, trader, rx_to_tx, stop, what)?;
    let mut x = xsk_end(end, &io, prog, None);
    x.order_session = session;
    Ok(x)
}

/// The userspace TCP's order session (`--orders tcp-xdp`), not connected yet.
fn order_session(plan: &Plan, g: &Gateway) -> anyhow::Result<trading::XdpTcp> {
    let orders = &plan.orders;
    trading::XdpTcp::new(
        orders.from,
        g.our_mac,
        orders.to,
        g.orders.mac.octets(),
        &orders.password,
        orders.timeout,
    )
    .map(|s| s.resetting_after(orders.reset_after))
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
    let orders = &plan.orders;
    if orders.transport != paths::Orders::TcpKernel {
        return trade(plan, io, trader, rx_to_tx, stop, what);
    }
    let mut session =
        trading::TcpOrders::new(orders.from, orders.to, &orders.password, orders.timeout)?
            .resetting_after(orders.reset_after)
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
        napi_id: io
            .xsks()
            .iter()
            .map(|x| sockopt::incoming_napi_id(x.raw_fd()))
            .collect::<Result<Vec<_>, _>>()
            .ok()
            .and_then(|ids| ids.into_iter().max()),
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
    plan: &Plan,
    trader: &mut Trader,
    rx_to_tx: &mut Latency,
    stop: &AtomicBool,
) -> anyhow::Result<PathEnd> {
    let iface = &plan.receive.iface;
    if plan.receive.iface_named && nix::net::if_::if_nametoindex(iface.as_str()).is_err() {
        bail!("no interface {iface:?} in this network namespace (`ip link` lists them)");
    }
    let sock = UdpSocket::bind(SocketAddrV4::new(plan.receive.addr, plan.receive.port))
        .with_context(|| {
            format!(
                "failed to bind {}:{} (port in use, or address not on an interface here?)",
                plan.receive.addr, plan.receive.port
            )
        })?;
    match plan.receive.wait {
        Wait::Spin => sock.set_nonblocking(true)?,
        // A timeout, so the stop flag and the idle timeout are still seen.
        Wait::Block => sock.set_read_timeout(Some(Duration::from_millis(100)))?,
    }
    sockopt::set_rcvbuf(sock.as_raw_fd(), plan.receive.rcvbuf)?;
    busy_poll(sock.as_raw_fd(), plan.busy_poll)?;
    if plan.receive.mlock {
        process::lock_memory()?;
    }
    let rss_start_kib = ready(plan);
    let (end, order_session, socket_drops, napi_id) = if plan.receive.recvmmsg > 1 {
        let mut io = MmsgIo::new(sock, plan.orders.to, usize::from(plan.receive.recvmmsg))?;
        if let Some(server) = plan.run.retransmit_to {
            io = io.with_retransmit_source(server);
        }
        if let Some(source) = plan.run.sources[0] {
            io.keep_only(trader_core::Line::A, source)?;
        }
        let what = "recvmmsg on the market-data socket";
        let (end, session) = trade_with_orders(plan, &mut io, trader, rx_to_tx, stop, what)?;
        (end, session, io.socket_drops(), io.napi_id())
    } else {
        let mut io = UdpIo::new(sock, plan.orders.to)?;
        if let Some(b) = plan.receive.port_b {
            let sock_b =
                UdpSocket::bind(SocketAddrV4::new(plan.receive.addr, b)).with_context(|| {
                    format!(
                        "failed to bind line B's {}:{b} (--port-b)",
                        plan.receive.addr
                    )
                })?;
            sockopt::set_rcvbuf(sock_b.as_raw_fd(), plan.receive.rcvbuf)?;
            busy_poll(sock_b.as_raw_fd(), plan.busy_poll)?;
            let block_ms = (plan.receive.wait == Wait::Block).then_some(100);
            io = io.with_line_b(sock_b, block_ms)?;
        }
        if let Some(server) = plan.run.retransmit_to {
            io = io.with_retransmit_source(server);
        }
        // The named sources kept in the kernel from the start; a learned one once pinned.
        for (line, source) in [trader_core::Line::A, trader_core::Line::B]
            .into_iter()
            .zip(plan.run.sources)
        {
            if let Some(source) = source {
                io.keep_only(line, source)?;
            }
        }
        let what = "recv on the market-data socket";
        let (end, session) = trade_with_orders(plan, &mut io, trader, rx_to_tx, stop, what)?;
        (end, session, io.socket_drops(), io.napi_id())
    };
    Ok(PathEnd {
        end,
        order_session,
        frames_not_ours: FrameCounts::default(),
        rx_queue_frames: Vec::new(),
        xdp_counters: None,
        xdp_program: None,
        xsk_stats: None,
        socket_drops,
        napi_id,
        rss_start_kib,
        trigger: None,
    })
}

/// The reflector: attach in reflect mode and wait. The end-of-session packet is not a trade,
/// so the program passes it to the kernel, where a UDP socket on the feed port sees it. The
/// reflector never learns a source (it reads no feed): name it (`--feed-source`, as the bench
/// does), or the program reflects, and the socket takes an end of session from, anyone.
pub(crate) fn run_reflect(plan: &Plan, stop: &AtomicBool) -> anyhow::Result<PathEnd> {
    let gateway = gateway(plan)?;
    let mut prog = attach(plan, None, Action::Reflect, &gateway)
        .with_context(|| format!("failed to set up the XDP reflector on {}", plan.iface()))?;
    // The floor keeps the same rule as the paths it is the floor of.
    let _sources = pin_sources(plan, &mut prog)?;
    let sock = UdpSocket::bind(SocketAddrV4::new(plan.receive.addr, plan.receive.port))
        .with_context(|| format!("failed to bind {}:{}", plan.receive.addr, plan.receive.port))?;
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    let rss_start_kib = ready(plan);
    let span = host::SpanAccounting::start();
    let idle = plan.run.idle_exit;
    let mut buf = [0u8; 2048];
    let mut last = (Instant::now(), prog.counters().ok());
    let reason = loop {
        if process::stopped(stop) {
            break EndReason::Stopped;
        }
        // Only the named feed ends the run (the program passes nothing else to this port once
        // a source is pinned; without --feed-source, nothing is pinned and anyone can).
        if let Ok((n, std::net::SocketAddr::V4(from))) = sock.recv_from(&mut buf)
            && plan.run.sources[0].is_none_or(|s| s.check(from).is_ok())
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
        socket_drops: None,
        napi_id: None,
        rss_start_kib,
        trigger: None,
        order_session: None,
    })
}

/// Whether the program filters in the driver: the trader keeps a book (`--symbols`), reads
/// the feed off the socket the program redirects into, on one line, and wasn't told not to.
fn filters(plan: &Plan, port_b: Option<u16>, action: Action) -> bool {
    plan.xdp.driver_filter
        && plan.strategy.symbols.is_some()
        && port_b.is_none()
        && action == Action::Redirect
}

/// Loads and attaches the XDP program for `action`, with its log (`--xdp-log`) and run-time
/// statistics (`--xdp-stats`) if asked, and says what was loaded.
fn attach(
    plan: &Plan,
    port_b: Option<u16>,
    action: Action,
    g: &Gateway,
) -> anyhow::Result<XdpProgram> {
    let mut prog = XdpProgram::attach_lines(
        plan.iface(),
        plan.receive.port,
        port_b,
        plan.xdp.mode,
        action,
        Load {
            log: plan.xdp.log,
            stages: plan.xdp.stages,
            // A blocking trigger trader sleeps on the ring too: firing must wake it (unless
            // told to wait for the next packet instead).
            fired_wakeup: action == Action::Trigger
                && plan.receive.wait == Wait::Block
                && plan.xdp.fired_wakeup,
            // The trigger fires only what the socket path would take: frames to us.
            trigger_dst: if action == Action::Trigger {
                Some((g.our_mac, plan.receive.addr))
            } else {
                None
            },
            // The reflector's and the trigger's orders go to the gateway, as the trader's do.
            order_to: Some(order_to(plan, g)),
            // The userspace TCP's order session: its segments into the socket, not the kernel.
            order_tcp: plan.orders.transport == paths::Orders::TcpXdp,
            // The TCP trigger: the program fires the userspace TCP's armed segment, where the
            // path table says the program sends this path's tcp-xdp orders.
            trigger_tcp: plan.orders.transport == paths::Orders::TcpXdp
                && plan
                    .path
                    .spec()
                    .route(plan.orders.transport)
                    .is_some_and(|r| r.sent_by == paths::SentBy::Program),
            filter: filters(plan, port_b, action),
            // On a full-depth feed the trigger fires on the book's prints.
            trigger_book: action == Action::Trigger && plan.strategy.symbols.is_some(),
        },
    )?;
    if plan.xdp.log {
        prog.start_log(plan.xdp.housekeeping.clone())?;
    }
    if plan.xdp.stats {
        prog.enable_run_stats()?;
    }
    say_loaded(plan, &prog);
    Ok(prog)
}

/// Says how large the loaded XDP program is, and whether it logs.
fn say_loaded(plan: &Plan, prog: &XdpProgram) {
    if let Some(p) = prog.program_stats(None) {
        eprintln!(
            "xdp: program loaded, {} B of eBPF after the verifier, {} B JIT-compiled; log {}",
            p.translated_bytes,
            p.jited_bytes,
            if plan.xdp.log {
                "on (--xdp-log)"
            } else {
                "off"
            }
        );
    }
}

/// Says the trader is ready (on stdout with --ready, for scripts); returns the RSS now (KiB).
fn ready(plan: &Plan) -> u64 {
    if plan.ready {
        println!("ready");
    }
    let source = |s: Option<FeedSource>| s.map_or_else(|| "learned".into(), |s| s.to_string());
    eprintln!(
        "trader: {} path on {} port {}, {} wait; feed from {}; orders to {}",
        plan.path,
        plan.iface(),
        plan.receive.port,
        plan.receive.wait,
        source(plan.run.sources[0]),
        plan.orders.to
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
