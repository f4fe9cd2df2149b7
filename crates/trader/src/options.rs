//! The trader's options: what `trader --help` shows, and the checks of what goes together.
use std::{net::Ipv4Addr, net::SocketAddrV4, path::PathBuf};

use anyhow::bail;
use clap::Parser;
use netns::lab;
use paths::{Io, PathSpec, QueueRule};
use paths::{TraderPath, Wait, XdpMode, XdpStages, args::Args};
use results::Knobs;
use wire::moldudp64::Session;

use crate::{FIRED_POLL_EVERY, FeedSource, MAX_BATCH};

/// Tick-to-trade trader: reads MoldUDP64/ITCH market data, runs the HMA/HMA3 strategy on
/// each trade, and sends an order to the configured order gateway (--order-to) for each
/// signal. It reads market data only from the feed's source (--feed-source, or the one it
/// learns once it has confirmed the feed: a sender whose packet continues its own previous
/// one), never answers whoever sent a datagram.
#[derive(Debug, Parser)]
#[command(name = "trader", version)]
pub struct Options {
    /// I/O path.
    #[arg(long, value_enum, help_heading = "Path and interface")]
    pub path: TraderPath,
    /// Interface to read market data from, in this network namespace (default `tr0`, the
    /// lab's). The UDP path binds --addr; given there, the interface is checked to exist.
    #[arg(long, help_heading = "Path and interface")]
    pub iface: Option<String>,
    /// Our IPv4 address (the UDP path binds it; the XDP path writes it into orders).
    #[arg(long, default_value_t = lab::TRADER_IP, help_heading = "Path and interface")]
    pub addr: Ipv4Addr,
    /// Market-data UDP port.
    #[arg(long, default_value_t = lab::MD_PORT, help_heading = "Path and interface")]
    pub port: u16,
    /// Line B of an A/B feed: the same feed on this UDP port too. The trader takes the first
    /// copy of each sequence number from either line and reports per line.
    #[arg(long, help_heading = "Path and interface")]
    pub port_b: Option<u16>,
    /// With --port-b: a packet that arrives past a gap waits up to this long (µs) for the other
    /// line to fill the gap (less if both lines show they are past it), so a tick lost on one
    /// line only is traded in order. 0: act on every gap at once.
    #[arg(long, default_value_t = trader_core::lines::DEFAULT_WAIT_NS / 1_000, requires = "port_b", help_heading = "Path and interface")]
    pub ab_wait_us: u64,
    /// Where every order goes, on every path (the XDP program's own orders too): the order
    /// gateway's IPv4 address and UDP port. Never the market data's sender. The XDP paths write
    /// its next hop's MAC, read once at start from the neighbour table (an error if there is
    /// no complete entry; the lab pins one).
    #[arg(long, default_value_t = lab::EXCHANGE_ORDERS, help_heading = "Orders")]
    pub order_to: SocketAddrV4,
    /// How orders travel to --order-to: `udp` (the lab's 36-byte order in a datagram), or
    /// `tcp-kernel` (OUCH 5.0 Enter Orders in a SoupBinTCP 3.00 session on the kernel's TCP,
    /// `TCP_NODELAY`, one order per segment, logged in before the feed starts and again after
    /// a lost connection, from the next answer not yet had), or `tcp-xdp` (the same session on
    /// a userspace TCP, smoltcp, over the xdp path's own AF_XDP socket: the XDP program steers
    /// the session's segments to it; on the trigger path the program fires the stack's armed
    /// segment, the TCP trigger).
    #[arg(long, value_enum, default_value_t = paths::Orders::Udp, help_heading = "Orders")]
    pub orders: paths::Orders,
    /// The order session's password (its username and session are the lab's).
    #[arg(long, default_value = paths::market::ORDER_PASSWORD, help_heading = "Orders")]
    pub order_password: String,
    /// The order session's dead-peer timeout, ms: a connection the exchange has sent nothing
    /// on (not even a heartbeat) for this long is given up and made again (SoupBinTCP's
    /// "typically 15 seconds"). A lost connection is tried again as a venue expects, on both
    /// transports: after 1 ms, the wait doubling with each try that doesn't log in up to 1 s,
    /// its second half drawn at random; a login starts it over (`connect_tries` counts the
    /// SYNs). The userspace TCP draws its local port at random each time (61000-65535).
    #[arg(long, default_value_t = 15_000, value_parser = clap::value_parser!(u64).range(1..), help_heading = "Orders")]
    pub order_timeout_ms: u64,
    /// The feed's source on line A: IP or IP:PORT. Datagrams to the feed port from anywhere
    /// else are dropped: in the XDP program on the XDP paths (counted `foreign_source_addr`,
    /// `foreign_source_port`), at the socket by its source filter on the udp path (counted in
    /// `socket_drops`), and in the loop on every path for what gets past those. Without it,
    /// the source is learned once the feed is confirmed (the first sender whose packet
    /// continues its own previous one), and pinned from then on.
    #[arg(long, help_heading = "Feed and its trust")]
    pub feed_source: Option<FeedSource>,
    /// Line B's source, as --feed-source is line A's (default, when --feed-source is given:
    /// line A's address, any port).
    #[arg(long, requires = "port_b", help_heading = "Feed and its trust")]
    pub feed_source_b: Option<FeedSource>,
    /// Strategy length n (HMA(n) against HMA3(n)).
    #[arg(long, default_value_t = paths::market::STRATEGY_N, help_heading = "Strategy")]
    pub n: i64,
    /// Trade only this stock symbol.
    #[arg(long, default_value = paths::market::STOCK, help_heading = "Strategy")]
    pub stock: String,
    /// Read a full-depth feed: keep the order book of these symbols (comma-separated, up to
    /// 64; `--stock` is always among them), each resolved through the feed's Stock Directory
    /// messages, and trade `--stock`'s book prints (Order Executed at the resting order's
    /// price, a printable Executed With Price, a Trade). Every message is still sequenced;
    /// the other symbols' are dropped unread. Without it the trader reads the ticker: Trade
    /// messages of `--stock`.
    #[arg(long, value_name = "SYM,...", value_delimiter = ',', num_args = 1.., help_heading = "Strategy")]
    pub symbols: Option<Vec<String>>,
    /// With --symbols: the resting orders of the kept symbols the book holds before it grows
    /// (a growth is an allocation mid-run, counted in `book_allocations`); its order table is
    /// 64 bytes an order. On the 2-vCPU lab machine 4,096 and the default measured the same
    /// book work per message (0.23 µs p50; docs/results/2026-12-07-book-repair-amd-2vcpu).
    #[arg(long, default_value_t = trader_core::desk::WATCH_LIVE_ORDERS, requires = "symbols", value_parser = parse_book_orders, help_heading = "Strategy")]
    pub book_orders: usize,
    /// Take only this MoldUDP64 session (up to 10 characters). Without it the session is
    /// learned: the first packet is held until a packet of the same session continues its
    /// sequence, so one stray datagram can't capture the trader.
    #[arg(long, value_parser = Session::parse_arg, help_heading = "Feed and its trust")]
    pub session: Option<Session>,
    /// The feed's next sequence number is this (with --session: the first packet is traded at
    /// once, not held for confirmation). Without it the trader starts where it joins.
    #[arg(long, requires = "session", help_heading = "Feed and its trust")]
    pub first_seq: Option<u64>,
    /// A forward jump in sequence numbers larger than this is held until the next packet
    /// continues it (a forged or corrupted number is then never acted on); smaller jumps are
    /// gaps, acted on at once. A forged packet below it can cost up to this many real ticks,
    /// + the 103 messages one frame of the feed's profile carries.
    #[arg(long, default_value_t = trader_core::DEFAULT_MAX_JUMP, help_heading = "Feed and its trust")]
    pub max_jump: u64,
    /// A jump past --max-jump, or an end of session, is believed only when the stream it
    /// leaves has stopped: no packet of the feed in sequence for this long (µs) before the
    /// packet that confirms it (an end's repeat); an end at the feed's next number also once
    /// the feed stays silent this long after it (so a real session's end costs this wait).
    /// While the feed flows, two forged packets in sequence are never believed.
    #[arg(long, default_value_t = trader_core::DEFAULT_QUIET_NS / 1_000, help_heading = "Feed and its trust")]
    pub quiet_us: u64,
    /// The most messages a second the feed can carry: a jump (or a lost tail) is believed only
    /// if it is no larger than this × the feed's silence before it, + --max-jump.
    #[arg(long, default_value_t = trader_core::DEFAULT_MAX_RATE, help_heading = "Feed and its trust")]
    pub max_rate: u64,
    /// Ask the exchange's MoldUDP64 re-request server at this address for every gap (e.g.
    /// 198.18.0.1:26402, `replay --retransmit`): paced, at most 3 tries a gap. What comes back
    /// is counted (`recovered_messages`), not traded: the strategy has moved past it. With
    /// --symbols the feed waits at a gap for the answer instead (--repair-wait-ms).
    #[arg(long, help_heading = "Feed and its trust")]
    pub retransmit_to: Option<SocketAddrV4>,
    /// With --symbols and --retransmit-to (one line): a packet past a gap waits up to this long
    /// (ms) for the re-request server's answer, so the book sees every message in order; the
    /// ticks behind the gap wait with it. A gap not filled by then is given up
    /// (`repair_gave_up`), the book going on short of it. 0: trade through gaps as the ticker
    /// does.
    #[arg(long, default_value_t = trader_core::repair::DEFAULT_WAIT_NS / 1_000_000, requires = "retransmit_to", help_heading = "Feed and its trust")]
    pub repair_wait_ms: u64,
    /// Spin or block while waiting for data.
    #[arg(long, value_enum, default_value_t = Wait::Spin, help_heading = "CPU and memory")]
    pub wait: Wait,
    /// XDP attach mode (the paths with an XDP program).
    #[arg(long, value_enum, default_value_t = XdpMode::Native, help_heading = "Path and interface")]
    pub xdp_mode: XdpMode,
    /// Turn on the XDP program's log (the paths with an XDP program): failed redirects, frames counted
    /// as malformed with their reason and the header fields at fault, failed reflections;
    /// never healthy packets, at most 20 records a second per CPU (the rest counted as
    /// `log_suppressed`). Printed on stderr through `log` (filter with RUST_LOG, default
    /// `info`). Off, the program's logging code is removed by the verifier.
    #[arg(long, help_heading = "XDP program diagnostics")]
    pub xdp_log: bool,
    /// Count the XDP program's runs and their time (the kernel's BPF run-time statistics, on
    /// while the trader runs and off again when it exits, however it exits); the report's
    /// `xdp_program` gets the mean ns per run. Costs two clock reads per run, so compare runs
    /// that all have it (the paths with an XDP program).
    #[arg(long, help_heading = "XDP program diagnostics")]
    pub xdp_stats: bool,
    /// Trigger path: don't push the arm's cache line out of the trader's core after writing
    /// it, nor the fired record's line after reading it. By default, where CPUID reports
    /// `CLDEMOTE`, the trader demotes the arm's line to the shared cache after each arm, so
    /// that the program's read of the arm, the first access of its every run, isn't a snoop
    /// of the trader's core (43-49 ns against 91-109 on an Intel guest: docs/trigger.md), and
    /// the record's line after each read of it, so that the program's write of it when it
    /// fires isn't either; without the instruction nothing changes. For measuring what the
    /// demote buys; no effect on other paths (so `cargo xtask bench --trader-arg` can give it
    /// to every row).
    #[arg(long, help_heading = "Trigger")]
    pub no_arm_demote: bool,
    /// Trigger path, spinning: read the record of what the program fired at the start of one
    /// turn of the loop in this many (and before every packet and after a turn that took
    /// frames, always). Each read pulls the record's line into the trader's core, where the
    /// program's write of it when it fires must then snoop it, and the order's transmit waits
    /// for that (a lock in the driver drains the program's stores). A fire is noticed up to
    /// this many turns late, so the next tick's arm is written that much later. Default: 32
    /// (a turn with nothing is tens of ns), or 1, every turn, with `--busy-poll`, whose every
    /// turn is a system call.
    #[arg(long, value_name = "TURNS", value_parser = clap::value_parser!(u32).range(1..), help_heading = "Trigger")]
    pub fired_poll_every: Option<u32>,
    /// Trigger path with `--wait block` (ignored otherwise): the program doesn't wake the
    /// trader when it fires; the trader learns of the fire when the next packet wakes it (or
    /// its poll's 100 ms timeout, if none comes). The fired order then no longer waits inside
    /// the program's run for the wakeup's interrupts (the blocking trigger's p50 fell from
    /// 20-25 µs to 2.6-2.7 in the lab), but the tick after each fire is always the trader's to
    /// send, after its own wake-up: in the same runs the p90 and p99 grew (46-50 against 25-30
    /// µs; 257-948 against 159-438) and the armed-hit rate fell by about 20 points.
    #[arg(long, help_heading = "Trigger")]
    pub no_fired_wakeup: bool,
    /// With `--symbols` on the xdp path of a one-line feed, the XDP program drops in the driver
    /// each packet that continues the line and carries no message for the kept symbols (at most
    /// 32 messages), and the next packet passed tells the sequencer which numbers it dropped
    /// (docs/driver-filter.md). This turns that off: every packet reaches the trader, as on the
    /// udp path.
    #[arg(long, help_heading = "Strategy")]
    pub no_driver_filter: bool,
    /// Time the XDP program's runs with `bpf_ktime_get_ns()`; the report's
    /// `xdp_program.stages` gets the mean ns by outcome (fired, reflected, redirected), net of
    /// one clock read. `--xdp-stages` (or `=each`): a clock read at the end of each stage
    /// (classify, the trigger's arm read, checks, match, order write and record, the
    /// redirect); each read is ordered, so it waits for the loads before it, and the stages
    /// add up to more than the run takes untimed wherever its loads would overlap.
    /// `--xdp-stages=run`: at each run's two ends only, the run as it runs untimed (one
    /// figure, `run`). Compare runs timed the same way. Off, the program loaded has no timing
    /// code at all (each is another build of the program, with the timing compiled in).
    #[arg(long, value_name = "HOW", num_args = 0..=1, require_equals = true, default_missing_value = "each", help_heading = "XDP program diagnostics")]
    pub xdp_stages: Option<XdpStages>,
    /// The CPUs this process may use, read before it pins itself: where housekeeping threads
    /// (the XDP log reader) go. Not an option.
    #[arg(skip)]
    pub housekeeping: Vec<usize>,
    /// RX queues to serve (XDP path): one AF_XDP socket per queue, 0 to N-1, all read by the
    /// one loop. `all` (the default) serves every RX queue the interface has, so no feed frame
    /// can land on a queue without a socket.
    #[arg(long, default_value = "all", value_parser = parse_queues, help_heading = "Path and interface")]
    pub queues: Queues,
    /// Frames taken from the RX ring per turn (XDP path), 1 to 64.
    #[arg(long, default_value_t = 64, value_parser = parse_batch, help_heading = "Path and interface")]
    pub batch: usize,
    /// Bind the AF_XDP socket without XDP_USE_NEED_WAKEUP.
    #[arg(long, help_heading = "Path and interface")]
    pub no_need_wakeup: bool,
    /// Pin to this CPU.
    #[arg(long, help_heading = "CPU and memory")]
    pub cpu: Option<usize>,
    /// mlockall(): no page faults on the measured path. (The UMEM is always populated and
    /// pinned: xsk-rs maps it with MAP_POPULATE and XDP_UMEM_REG pins it.)
    #[arg(long, help_heading = "CPU and memory")]
    pub mlock: bool,
    /// Run under SCHED_FIFO at this priority (1-99).
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=99), help_heading = "CPU and memory")]
    pub fifo: Option<i32>,
    /// SO_BUSY_POLL on the socket for this many µs (the kernel polls the device in our
    /// syscalls instead of waiting for its interrupt; the XDP path then polls the socket when
    /// its ring is empty). It polls the NAPI instance the feed arrives through: the report's
    /// napi_id, read after the run. On the lab's veth that is 0 on every path, so the kernel
    /// polls nothing: on the udp path the option changes nothing; on the xdp path the loop
    /// still polls the socket on empty turns, and the trigger reads its record every turn.
    #[arg(long, help_heading = "Path and interface")]
    pub busy_poll: Option<i32>,
    /// With --busy-poll: SO_PREFER_BUSY_POLL (defer the device's interrupts to our polling).
    #[arg(long, requires = "busy_poll", help_heading = "Path and interface")]
    pub prefer_busy_poll: bool,
    /// With --busy-poll: SO_BUSY_POLL_BUDGET, packets per busy poll (default: the kernel's, 8).
    #[arg(long, requires = "busy_poll", help_heading = "Path and interface")]
    pub busy_poll_budget: Option<i32>,
    /// Back the UMEM with 2 MiB huge pages (XDP path; needs reserved huge pages,
    /// /proc/sys/vm/nr_hugepages).
    #[arg(long, help_heading = "CPU and memory")]
    pub huge_pages: bool,
    /// UDP path: socket receive buffer in bytes. The default holds a few thousand ticks, as
    /// the AF_XDP path's 2048-entry RX ring does, so both paths can absorb the same burst.
    #[arg(long, default_value_t = 4 << 20, help_heading = "Path and interface")]
    pub rcvbuf: i32,
    /// UDP path: take up to this many datagrams per recvmmsg call (1 = recvfrom; more needs
    /// --wait spin).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024), help_heading = "Path and interface")]
    pub recvmmsg: u16,
    /// Time the engine (`on_tick`) on one tick in this many (0: never). A sampled tick reads
    /// the clock twice more before its order leaves; the others read it only for their RX time.
    #[arg(long, default_value_t = trader_core::DEFAULT_ENGINE_SAMPLE_EVERY, help_heading = "Strategy")]
    pub engine_sample_every: u32,
    /// Exit after this many seconds without market data (0: never).
    #[arg(long, default_value_t = 30, help_heading = "Run and report")]
    pub idle_exit: u64,
    /// Write the trader's counters and internal latencies here as JSON (stdout if absent).
    // `--stats-out`, the old spelling, still parses (a hidden alias), for one release.
    #[arg(long, alias = "stats-out", help_heading = "Run and report")]
    pub json_out: Option<PathBuf>,
    /// Write the RX→TX histogram here (.hgrm).
    #[arg(long, help_heading = "Run and report")]
    pub hgrm_out: Option<PathBuf>,
    /// Print `ready` on stdout once the socket is receiving (for scripts).
    #[arg(long, help_heading = "Run and report")]
    pub ready: bool,
    /// Testing only: corrupt the first N arms the trigger path writes (their side flipped), to
    /// show that the check of every fired order catches it (`trigger.mismatch`, an error at
    /// exit). Never for trading: the corrupted orders reach the exchange.
    #[arg(long, hide = true, default_value_t = 0)]
    pub corrupt_arms: u64,
    /// Testing only: after the Nth order, reset the order session's connection (an RST) and
    /// make it again at once, to show that the session resumes with nothing lost or doubled.
    #[arg(long, hide = true)]
    pub order_reset_after: Option<u64>,
    /// Check the options (CPU, scheduling, output paths), then exit without touching a
    /// socket or an interface: what `cargo xtask bench` runs before it builds the lab.
    #[arg(long, help_heading = "Run and report")]
    pub check: bool,
}

impl Options {
    /// The turns per read of the trigger's fired record (`--fired-poll-every`, or its default
    /// for this loop: [`FIRED_POLL_EVERY`] spinning, 1 with `--busy-poll`).
    #[must_use]
    pub fn fired_poll_every(&self) -> u32 {
        self.fired_poll_every
            .unwrap_or(if self.busy_poll.is_some() {
                1
            } else {
                FIRED_POLL_EVERY
            })
    }

    /// The market-data interface: --iface, or the lab's trader side.
    pub fn iface(&self) -> &str {
        self.iface.as_deref().unwrap_or(lab::TRADER_IF)
    }

    /// Line B's source: --feed-source-b, or, with --port-b and only line A named, line A's
    /// address on any port (line B's copies are duplicates of line A's, so it might never be
    /// learned, and an unpinned line would take anyone's datagrams).
    pub fn line_b_source(&self) -> Option<FeedSource> {
        self.feed_source_b.or_else(|| {
            self.port_b?;
            self.feed_source.map(|a| FeedSource {
                ip: a.ip,
                port: None,
            })
        })
    }

    /// The loop never sleeps on purpose (a spinning trader; the reflector always waits).
    pub fn spins(&self) -> bool {
        self.wait == Wait::Spin && self.path.spec().io.trades()
    }

    /// The run's knobs, as the report states them.
    pub fn knobs(&self) -> Knobs {
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
}

/// `--queues`: every RX queue, or the first N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queues {
    /// Every RX queue the interface has.
    All,
    /// Queues 0 to N-1.
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

/// The most resting orders `--book-orders` may size the book for (a 1 GiB table).
const BOOK_ORDERS_MAX: usize = 1 << 24;

fn parse_book_orders(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=BOOK_ORDERS_MAX).contains(&n) => Ok(n),
        _ => Err(format!(
            "bad --book-orders {s:?}: 1 to {BOOK_ORDERS_MAX} resting orders"
        )),
    }
}

fn parse_batch(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_BATCH).contains(&n) => Ok(n),
        _ => Err(format!("bad batch {s:?}: 1 to {MAX_BATCH} frames per turn")),
    }
}

impl Options {
    /// The command line that parses back into these options (the program's name not
    /// included): how xtask starts the trader from a value of this type rather than from
    /// strings it spells itself. Every field is named here (a new one fails to compile until
    /// it is); a value is written only where it differs from the default (so options added
    /// after it, `--trader-arg`, can still set the rest), options that need another
    /// (`--ab-wait-us` needs `--port-b`) only with it, flags only when set, and
    /// `housekeeping`, not an option, never.
    pub fn to_args(&self) -> Vec<String> {
        let Options {
            path,
            iface,
            addr,
            port,
            port_b,
            ab_wait_us,
            order_to,
            orders,
            order_password,
            feed_source,
            feed_source_b,
            n,
            stock,
            symbols,
            book_orders,
            session,
            first_seq,
            max_jump,
            quiet_us,
            max_rate,
            retransmit_to,
            repair_wait_ms,
            wait,
            xdp_mode,
            xdp_log,
            xdp_stats,
            no_arm_demote,
            fired_poll_every,
            no_fired_wakeup,
            no_driver_filter,
            xdp_stages,
            housekeeping: _,
            queues,
            batch,
            no_need_wakeup,
            cpu,
            mlock,
            fifo,
            busy_poll,
            prefer_busy_poll,
            busy_poll_budget,
            huge_pages,
            rcvbuf,
            recvmmsg,
            engine_sample_every,
            idle_exit,
            json_out,
            hgrm_out,
            ready,
            corrupt_arms,
            order_reset_after,
            order_timeout_ms,
            check,
        } = self;
        let d = Options::try_parse_from(["trader", "--path", path.as_str()])
            .expect("a path alone is a whole command line");
        let mut a = Args::default();
        a.value("--path", path);
        a.some("--iface", iface.as_ref());
        a.changed("--addr", addr, &d.addr);
        a.changed("--port", port, &d.port);
        a.some("--port-b", port_b.as_ref());
        if port_b.is_some() {
            a.changed("--ab-wait-us", ab_wait_us, &d.ab_wait_us);
            a.some("--feed-source-b", feed_source_b.as_ref());
        }
        a.changed("--order-to", order_to, &d.order_to);
        a.changed("--orders", orders, &d.orders);
        a.changed("--order-password", order_password, &d.order_password);
        a.some("--feed-source", feed_source.as_ref());
        a.changed("--n", n, &d.n);
        a.changed("--stock", stock, &d.stock);
        if let Some(s) = symbols {
            a.value("--symbols", s.join(","));
            a.changed("--book-orders", book_orders, &d.book_orders);
        }
        if let Some(s) = session {
            a.value("--session", String::from_utf8_lossy(s.trimmed()));
            a.some("--first-seq", first_seq.as_ref());
        }
        a.changed("--max-jump", max_jump, &d.max_jump);
        a.changed("--quiet-us", quiet_us, &d.quiet_us);
        a.changed("--max-rate", max_rate, &d.max_rate);
        a.some("--retransmit-to", retransmit_to.as_ref());
        if retransmit_to.is_some() {
            a.changed("--repair-wait-ms", repair_wait_ms, &d.repair_wait_ms);
        }
        a.changed("--wait", wait, &d.wait);
        a.changed("--xdp-mode", xdp_mode, &d.xdp_mode);
        a.flag("--xdp-log", *xdp_log);
        a.flag("--xdp-stats", *xdp_stats);
        a.flag("--no-arm-demote", *no_arm_demote);
        a.some("--fired-poll-every", fired_poll_every.as_ref());
        a.flag("--no-fired-wakeup", *no_fired_wakeup);
        a.flag("--no-driver-filter", *no_driver_filter);
        a.bare_or_equals("--xdp-stages", xdp_stages.as_ref(), &XdpStages::Each);
        if let Queues::First(n) = queues {
            a.value("--queues", n);
        }
        a.changed("--batch", batch, &d.batch);
        a.flag("--no-need-wakeup", *no_need_wakeup);
        a.some("--cpu", cpu.as_ref());
        a.flag("--mlock", *mlock);
        a.some("--fifo", fifo.as_ref());
        a.some("--busy-poll", busy_poll.as_ref());
        if busy_poll.is_some() {
            a.flag("--prefer-busy-poll", *prefer_busy_poll);
            a.some("--busy-poll-budget", busy_poll_budget.as_ref());
        }
        a.flag("--huge-pages", *huge_pages);
        a.changed("--rcvbuf", rcvbuf, &d.rcvbuf);
        a.changed("--recvmmsg", recvmmsg, &d.recvmmsg);
        a.changed(
            "--engine-sample-every",
            engine_sample_every,
            &d.engine_sample_every,
        );
        a.changed("--idle-exit", idle_exit, &d.idle_exit);
        a.some("--json-out", json_out.as_ref().map(|p| p.display()));
        a.some("--hgrm-out", hgrm_out.as_ref().map(|p| p.display()));
        a.flag("--ready", *ready);
        a.changed("--order-timeout-ms", order_timeout_ms, &d.order_timeout_ms);
        a.some("--order-reset-after", order_reset_after.as_ref());
        if *corrupt_arms > 0 {
            a.value("--corrupt-arms", corrupt_arms);
        }
        a.flag("--check", *check);
        a.into_vec()
    }
}

impl Options {
    /// Refuses options that don't go together, each with what to give instead. Run before
    /// anything is touched (`--check` stops right after).
    pub fn check_combination(&self) -> anyhow::Result<()> {
        let (o, spec) = (self, self.path.spec());
        if o.recvmmsg > 1 && (!spec.recvmmsg || o.wait == Wait::Block) {
            bail!(
                "--recvmmsg needs --wait spin and a path that takes it: {}",
                paths_where(|s| s.recvmmsg)
            );
        }
        if o.retransmit_to.is_some() && !spec.io.trades() {
            bail!(
                "--retransmit-to needs a trader ({}): --path {} keeps no sequence",
                paths_where(|s| s.io.trades()),
                o.path
            );
        }
        if spec.io == Io::Trigger && o.symbols.is_some() && o.orders == paths::Orders::TcpXdp {
            bail!(
                "--path trigger with --symbols fires on a book's prints with UDP orders: the TCP \
                 trigger's segment is armed for the ticker's one-trade packets only (use \
                 --orders udp, or --path xdp --orders tcp-xdp)"
            );
        }
        if let Some(b) = o.port_b {
            if b == o.port {
                bail!("--port-b {b} is line A's port too: line B needs a port of its own");
            }
            if !spec.ab || o.recvmmsg > 1 {
                bail!(
                    "--port-b (an A/B feed) needs a path that arbitrates two lines ({}), without \
                     --recvmmsg{}",
                    paths_where(|s| s.ab),
                    if spec.io == Io::Trigger {
                        ": the trigger fires in the driver, where no copy can be arbitrated"
                    } else {
                        ""
                    }
                );
            }
        }
        match spec.action {
            Some(_) if !spec.modes.contains(&o.xdp_mode) => bail!(
                "--path {} runs in XDP mode {} only (not --xdp-mode {}){}",
                o.path,
                spec.modes
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(" or "),
                o.xdp_mode,
                if spec.queues == QueueRule::One {
                    ": it relies on one RX queue being processed by one CPU at a time, which \
                     generic XDP doesn't promise"
                } else {
                    ""
                }
            ),
            None if o.xdp_log || o.xdp_stats || o.xdp_stages.is_some() => bail!(
                "--xdp-log, --xdp-stats and --xdp-stages need an XDP program: --path {}",
                paths_where(|s| s.action.is_some())
            ),
            _ => {}
        }
        // The transports the path takes are its table entry's routes.
        if spec.route(o.orders).is_none() {
            let takes: Vec<&str> = spec.orders.iter().map(|r| r.orders.as_str()).collect();
            bail!(
                "--orders {} can't go with --path {}{}: it takes --orders {}; --orders {} goes \
                 with --path {}",
                o.orders,
                o.path,
                refusal_reason(o.orders, spec.io),
                takes.join(" or "),
                o.orders,
                paths_where(|s| s.route(o.orders).is_some()),
            );
        }
        if o.orders == paths::Orders::TcpXdp
            && spec.io == Io::Trigger
            && !cfg!(target_arch = "x86_64")
        {
            bail!(
                "--path trigger --orders tcp-xdp runs on x86-64 only: the rule that keeps the \
                 XDP program and the userspace TCP from sending at one sequence number rests on \
                 x86's ordering of BPF's atomic add"
            );
        }
        if o.orders.is_tcp() && wire::soupbin::alpha::<10>(o.order_password.as_bytes()).is_err() {
            bail!("--order-password: at most 10 printable ASCII characters (SoupBinTCP's field)");
        }
        if o.order_reset_after.is_some() && !o.orders.is_tcp() {
            bail!(
                "--order-reset-after is a test of the order session: give --orders tcp-kernel or \
                 tcp-xdp"
            );
        }
        if o.corrupt_arms > 0 && spec.io != Io::Trigger {
            bail!(
                "--corrupt-arms is a test of {}",
                paths_where(|s| s.io == Io::Trigger)
            );
        }
        Ok(())
    }
}

/// Why a path's table entry leaves a transport out, for the error that refuses it.
fn refusal_reason(orders: paths::Orders, io: Io) -> &'static str {
    match (orders, io) {
        (paths::Orders::TcpXdp, io) if !io.afxdp() => {
            " (a userspace TCP on the trader's AF_XDP socket, and this path has none)"
        }
        (paths::Orders::TcpKernel, Io::Trigger) => {
            " (the XDP program would send segments into a connection whose sequence numbers \
             only the kernel knows; the TCP trigger is --orders tcp-xdp, the program firing the \
             userspace TCP's armed segment)"
        }
        _ => "",
    }
}

/// The paths for which `keep` holds, as `a, b or c`.
fn paths_where(keep: impl Fn(&PathSpec) -> bool) -> String {
    let names: Vec<&str> = PathSpec::select(keep)
        .into_iter()
        .map(TraderPath::as_str)
        .collect();
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => "none".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    fn check(args: &[&str]) -> Result<(), String> {
        let o = Options::try_parse_from(std::iter::once("trader").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        o.check_combination().map_err(|e| e.to_string())
    }

    /// What xtask renders parses back into the same options: with every option at its
    /// default, and with every option set to something else.
    #[test]
    fn to_args_parses_back_into_the_same_options() {
        let every: &[&str] = &[
            "--path",
            "udp",
            "--iface",
            "tr9",
            "--addr",
            "198.18.0.6",
            "--port",
            "1000",
            "--port-b",
            "1001",
            "--ab-wait-us",
            "7",
            "--order-to",
            "198.18.0.9:99",
            "--orders",
            "tcp-kernel",
            "--order-password",
            "pw",
            "--order-timeout-ms",
            "300",
            "--order-reset-after",
            "7",
            "--feed-source",
            "198.18.0.1:26404",
            "--feed-source-b",
            "198.18.0.1",
            "--n",
            "9",
            "--stock",
            "AAPL",
            "--session",
            "ABC",
            "--first-seq",
            "5",
            "--max-jump",
            "3",
            "--quiet-us",
            "2",
            "--max-rate",
            "7",
            "--retransmit-to",
            "198.18.0.1:26402",
            "--wait",
            "block",
            "--xdp-mode",
            "skb",
            "--xdp-log",
            "--xdp-stats",
            "--xdp-stages",
            "--queues",
            "2",
            "--batch",
            "8",
            "--no-need-wakeup",
            "--cpu",
            "1",
            "--mlock",
            "--fifo",
            "5",
            "--busy-poll",
            "50",
            "--prefer-busy-poll",
            "--busy-poll-budget",
            "16",
            "--huge-pages",
            "--rcvbuf",
            "1000",
            "--recvmmsg",
            "4",
            "--engine-sample-every",
            "3",
            "--idle-exit",
            "9",
            "--json-out",
            "/tmp/t.json",
            "--hgrm-out",
            "/tmp/t.hgrm",
            "--ready",
            "--corrupt-arms",
            "2",
            "--no-arm-demote",
            "--fired-poll-every",
            "4",
            "--no-fired-wakeup",
            "--check",
        ];
        // The option whose value may be left out, both ways, before another option.
        let run = &["--path", "trigger", "--xdp-stages=run", "--xdp-stats"][..];
        let each = &["--path", "trigger", "--xdp-stages=each", "--xdp-stats"][..];
        for line in [&["--path", "xdp"][..], every, run, each] {
            let o = Options::try_parse_from(std::iter::once("trader").chain(line.iter().copied()))
                .unwrap();
            let args = o.to_args();
            let again = Options::try_parse_from(
                std::iter::once("trader".to_owned()).chain(args.iter().cloned()),
            )
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!(format!("{again:?}"), format!("{o:?}"), "{args:?}");
        }
    }

    /// The report's file was `--stats-out`, where every other binary says `--json-out`: the
    /// old spelling still parses to the same option, and the rendered line says `--json-out`.
    #[test]
    fn the_old_spelling_of_json_out_still_parses() {
        let parse = |flag: &str| {
            Options::try_parse_from(["trader", "--path", "xdp", flag, "/tmp/t.json"]).unwrap()
        };
        let (new, old) = (parse("--json-out"), parse("--stats-out"));
        assert_eq!(format!("{new:?}"), format!("{old:?}"));
        assert_eq!(
            old.json_out.as_deref(),
            Some(std::path::Path::new("/tmp/t.json"))
        );
        let args = old.to_args();
        assert!(args.iter().any(|a| a == "--json-out"), "{args:?}");
        assert!(!args.iter().any(|a| a == "--stats-out"), "{args:?}");
    }

    #[test]
    fn xdp_stages_bare_is_each_and_takes_run_only_after_an_equals_sign() {
        let parse = |extra: &[&str]| {
            Options::try_parse_from(["trader", "--path", "trigger"].iter().chain(extra))
                .map(|o| o.xdp_stages)
        };
        assert_eq!(parse(&[]).unwrap(), None);
        assert_eq!(parse(&["--xdp-stages"]).unwrap(), Some(XdpStages::Each));
        assert_eq!(parse(&["--xdp-stages=run"]).unwrap(), Some(XdpStages::Run));
        assert!(
            parse(&["--xdp-stages", "run"]).is_err(),
            "no positional `run`"
        );
        assert!(parse(&["--xdp-stages=all"]).is_err());
    }

    #[test]
    fn the_fired_record_is_read_every_32_turns_spinning_and_every_turn_busy_polling() {
        let parse = |extra: &[&str]| {
            Options::try_parse_from(["trader", "--path", "trigger"].iter().chain(extra)).unwrap()
        };
        assert_eq!(parse(&[]).fired_poll_every(), FIRED_POLL_EVERY);
        assert_eq!(parse(&["--busy-poll", "50"]).fired_poll_every(), 1);
        assert_eq!(
            parse(&["--busy-poll", "50", "--fired-poll-every", "8"]).fired_poll_every(),
            8
        );
        assert!(
            Options::try_parse_from(["trader", "--fired-poll-every", "0"]).is_err(),
            "at least one turn"
        );
    }

    #[test]
    fn the_checks_come_from_the_path_table() {
        assert!(check(&["--path", "xdp", "--port-b", "26403"]).is_ok());
        let e = check(&["--path", "trigger", "--port-b", "26403"]).unwrap_err();
        assert!(
            e.contains("xdp or udp") && e.contains("in the driver"),
            "{e}"
        );
        let e = check(&["--path", "trigger", "--xdp-mode", "skb"]).unwrap_err();
        assert!(
            e.contains("native only") && e.contains("one RX queue"),
            "{e}"
        );
        assert!(check(&["--path", "xdp", "--xdp-mode", "skb"]).is_ok());
        let e = check(&["--path", "udp", "--xdp-stats"]).unwrap_err();
        assert!(e.contains("xdp, reflect or trigger"), "{e}");
        let e = check(&["--path", "xdp", "--recvmmsg", "8"]).unwrap_err();
        assert!(e.contains("udp"), "{e}");
        assert!(check(&["--path", "udp", "--recvmmsg", "8"]).is_ok());
        let e = check(&["--path", "reflect", "--retransmit-to", "198.18.0.1:26402"]).unwrap_err();
        assert!(e.contains("keeps no sequence"), "{e}");
        let e = check(&["--path", "udp", "--corrupt-arms", "3"]).unwrap_err();
        assert!(e.contains("trigger"), "{e}");
    }

    #[test]
    fn the_tcp_trigger_is_the_userspace_tcps_only() {
        assert!(check(&["--path", "trigger", "--orders", "tcp-xdp"]).is_ok());
        assert!(check(&["--path", "xdp", "--orders", "tcp-xdp"]).is_ok());
        let e = check(&["--path", "udp", "--orders", "tcp-xdp"]).unwrap_err();
        assert!(e.contains("xdp or trigger"), "{e}");
        let e = check(&["--path", "trigger", "--orders", "tcp-kernel"]).unwrap_err();
        assert!(
            e.contains("only the kernel knows") && e.contains("tcp-xdp"),
            "{e}"
        );
    }

    /// A path is one entry in the path table: the tests' `dummy` (feature `dummy-path`, on in
    /// every test build: a kernel UDP socket, no XDP program, one line, no `recvmmsg`) is a
    /// `--path` value, and every check reads what its entry says, naming it where a path is
    /// listed, without a line of the trader about it.
    #[test]
    fn a_path_added_to_the_table_is_checked_as_its_entry_says() {
        assert!(check(&["--path", "dummy"]).is_ok());
        let e = check(&["--path", "dummy", "--port-b", "26403"]).unwrap_err();
        assert!(e.contains("--port-b") && e.contains("xdp or udp"), "{e}");
        let e = check(&["--path", "dummy", "--xdp-log"]).unwrap_err();
        assert!(e.contains("need an XDP program"), "{e}");
        let e = check(&["--path", "dummy", "--recvmmsg", "4"]).unwrap_err();
        assert!(e.contains("--recvmmsg"), "{e}");
        // It trades, so it keeps a sequence and may ask for gaps.
        assert!(check(&["--path", "dummy", "--retransmit-to", "198.18.0.1:26402"]).is_ok());
        let e = check(&["--path", "reflect", "--retransmit-to", "198.18.0.1:26402"]).unwrap_err();
        assert!(
            e.contains("dummy"),
            "the list of paths that trade is the table's: {e}"
        );
    }
}
