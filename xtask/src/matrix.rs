//! `cargo xtask matrix`: what each design choice on the trader costs. Runs a baseline per path,
//! then each knob alone on the paths it applies to, all in one lab and one invocation, and
//! prints which knob moves the median and which moves the tail.
use std::fmt::Write as _;

use anyhow::bail;
use clap::ValueEnum as _;
use paths::{Io, PathSpec};
use paths::{Rate, TraderPath, Wait, XdpMode};
use results::{ReplayReport, Summary, TraderReport};
use serde::{Deserialize, Serialize};

use crate::{
    report::{self, Delivery},
    run::Ends,
    session::Session,
};

/// Fewer reserved 2 MiB pages than this and the huge-pages knob is skipped (the UMEM needs
/// them).
const HUGE_PAGES_NEEDED: u64 = 8;
/// Below these changes against the baseline a knob "moves" nothing: thresholds for a shared,
/// noisy 2-core VM, in percent.
const P50_MOVES_PCT: f64 = 10.0;
const TAIL_MOVES_PCT: f64 = 30.0;

/// One design choice on the trader (or the replay's batching), tried alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Knob {
    /// Sleep in poll()/recv() instead of spinning.
    #[value(name = "block")]
    Block,
    /// SO_BUSY_POLL 50 µs + SO_PREFER_BUSY_POLL.
    #[value(name = "busy-poll")]
    BusyPoll,
    /// No CPU pinning of trader and replay.
    #[value(name = "unpinned")]
    Unpinned,
    /// The trader under SCHED_FIFO 50.
    #[value(name = "fifo")]
    Fifo,
    /// mlockall(MCL_CURRENT|MCL_FUTURE).
    #[value(name = "mlock")]
    Mlock,
    /// UMEM on 2 MiB pages (AF_XDP only).
    #[value(name = "huge-pages")]
    HugePages,
    /// One frame per RX ring visit, not 64 (AF_XDP only).
    #[value(name = "rx-batch-1")]
    RxBatch1,
    /// Bind without XDP_USE_NEED_WAKEUP (AF_XDP only).
    #[value(name = "no-need-wakeup")]
    NoNeedWakeup,
    /// Generic (SKB) XDP instead of native (AF_XDP only).
    #[value(name = "skb")]
    Skb,
    /// recvmmsg, up to 16 datagrams per call (UDP only).
    #[value(name = "recvmmsg")]
    Recvmmsg,
    /// The default 208 KiB UDP receive buffer, not 4 MiB (UDP only).
    #[value(name = "small-rcvbuf")]
    SmallRcvbuf,
    /// 4 ITCH messages per MoldUDP64 packet.
    #[value(name = "mold-batch-4")]
    MoldBatch4,
    /// The trader's CPU isolated at runtime for the run: every other movable task to a cpuset
    /// of the other CPUs, unbound workqueues and IRQs off it; restored exactly after the run.
    #[value(name = "isolate")]
    Isolate,
    /// Only the IRQs moved off the trader's CPU (tasks and workqueues stay); restored exactly
    /// after the run.
    #[value(name = "irq-steer")]
    IrqSteer,
    /// Sleep in poll() with the guest's haltpoll driver polling up to 200 µs before it halts
    /// (a KVM guest's C-state choice; restored after the run).
    #[value(name = "block-halt-poll")]
    BlockHaltPoll,
    /// Sleep in poll() with a PM QoS request for 0 µs wake-up latency held for the run: the
    /// CPUs idle in POLL, never halting.
    #[value(name = "block-no-halt")]
    BlockNoHalt,
    /// The XDP program's log on (`trader --xdp-log`), no events to log (AF_XDP only).
    #[value(name = "xdp-log")]
    XdpLog,
    /// 1,000 malformed frames a second at the trader, the log off (AF_XDP only).
    #[value(name = "malformed-stream")]
    MalformedStream,
    /// The log on, with the same stream of malformed frames (AF_XDP only).
    #[value(name = "xdp-log-malformed")]
    XdpLogMalformed,
    /// 1,000 lies a second from another port of the exchange's address (every class; the
    /// source check drops them all).
    #[value(name = "lie-stream")]
    LieStream,
    /// 1,000 lies a second with the feed's source spoofed (far jumps, empty blocks,
    /// heartbeats ahead: the feed gate refuses them all).
    #[value(name = "spoofed-stream")]
    SpoofedStream,
}

impl Knob {
    /// Its name, as `--knobs` takes it and the tables show it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Knob::Block => "block",
            Knob::BusyPoll => "busy-poll",
            Knob::Unpinned => "unpinned",
            Knob::Fifo => "fifo",
            Knob::Mlock => "mlock",
            Knob::HugePages => "huge-pages",
            Knob::RxBatch1 => "rx-batch-1",
            Knob::NoNeedWakeup => "no-need-wakeup",
            Knob::Skb => "skb",
            Knob::Recvmmsg => "recvmmsg",
            Knob::SmallRcvbuf => "small-rcvbuf",
            Knob::MoldBatch4 => "mold-batch-4",
            Knob::Isolate => "isolate",
            Knob::IrqSteer => "irq-steer",
            Knob::BlockHaltPoll => "block-halt-poll",
            Knob::BlockNoHalt => "block-no-halt",
            Knob::XdpLog => "xdp-log",
            Knob::MalformedStream => "malformed-stream",
            Knob::XdpLogMalformed => "xdp-log-malformed",
            Knob::LieStream => "lie-stream",
            Knob::SpoofedStream => "spoofed-stream",
        }
    }

    /// What it changes, for the table.
    fn what(self) -> &'static str {
        match self {
            Knob::Block => "sleep in poll()/recv() instead of spinning",
            Knob::BusyPoll => "SO_BUSY_POLL 50 µs + SO_PREFER_BUSY_POLL",
            Knob::Unpinned => "no CPU pinning of trader and replay",
            Knob::Fifo => "trader under SCHED_FIFO 50",
            Knob::Mlock => "mlockall(MCL_CURRENT|MCL_FUTURE)",
            Knob::HugePages => "UMEM on 2 MiB pages",
            Knob::RxBatch1 => "one frame per RX ring visit (default 64)",
            Knob::NoNeedWakeup => "bind without XDP_USE_NEED_WAKEUP",
            Knob::Skb => "generic (SKB) XDP instead of native",
            Knob::Recvmmsg => "recvmmsg, up to 16 datagrams per call",
            Knob::SmallRcvbuf => "default 208 KiB UDP receive buffer (not 4 MiB)",
            Knob::MoldBatch4 => "4 ITCH messages per MoldUDP64 packet",
            Knob::Isolate => "trader's CPU isolated at runtime: tasks, workqueues, IRQs moved off",
            Knob::IrqSteer => "IRQs only moved off the trader's CPU (tasks, workqueues stay)",
            Knob::BlockHaltPoll => "sleep in poll(), the guest polling up to 200 µs before halting",
            Knob::BlockNoHalt => "sleep in poll(), no CPU halting (PM QoS 0 µs: POLL idle only)",
            Knob::XdpLog => "XDP program's log on (--xdp-log), nothing to log",
            Knob::MalformedStream => "1,000 malformed frames/s at the trader, log off",
            Knob::XdpLogMalformed => {
                "log on, 1,000 malformed frames/s (≤ 20 logged/s per CPU, rest counted)"
            }
            Knob::LieStream => "1,000 lies/s from another port (dropped by the source check)",
            Knob::SpoofedStream => {
                "1,000 lies/s spoofing the feed's source (refused by the feed gate)"
            }
        }
    }

    /// Whether it applies to the path `spec` describes (from the path table: a new path is
    /// measured with every knob its entry says it can take).
    fn applies(self, spec: &PathSpec) -> bool {
        match self {
            // The AF_XDP socket's and the XDP program's knobs.
            Knob::HugePages
            | Knob::RxBatch1
            | Knob::NoNeedWakeup
            | Knob::XdpLog
            | Knob::MalformedStream
            | Knob::XdpLogMalformed => spec.io.afxdp(),
            // Generic XDP, where the path's program runs in it.
            Knob::Skb => spec.io.trades() && spec.modes.contains(&XdpMode::Skb),
            // Packets of several messages, where the path trades them on its fast path.
            Knob::MoldBatch4 => spec.io.trades() && spec.batched,
            Knob::Recvmmsg => spec.recvmmsg,
            Knob::SmallRcvbuf => spec.io == Io::Udp,
            Knob::Block
            | Knob::BlockHaltPoll
            | Knob::BlockNoHalt
            | Knob::BusyPoll
            | Knob::Unpinned
            | Knob::Fifo
            | Knob::Mlock
            | Knob::Isolate
            | Knob::IrqSteer
            | Knob::LieStream
            | Knob::SpoofedStream => spec.io.trades(),
        }
    }

    /// The baseline's options with this knob turned.
    fn apply(self, base: &crate::run::Options) -> crate::run::Options {
        let mut o = base.clone();
        let trader: &[&str] = match self {
            // The idle setting itself is made around the run (`measure`).
            Knob::Block | Knob::BlockHaltPoll | Knob::BlockNoHalt => {
                o.wait = Wait::Block;
                &[]
            }
            Knob::BusyPoll => &["--busy-poll", "50", "--prefer-busy-poll"],
            Knob::Unpinned => {
                o.no_pin = true;
                &[]
            }
            Knob::Fifo => &["--fifo", "50"],
            Knob::Mlock => &["--mlock"],
            Knob::HugePages => &["--huge-pages"],
            Knob::RxBatch1 => &["--batch", "1"],
            Knob::NoNeedWakeup => &["--no-need-wakeup"],
            Knob::Skb => {
                o.xdp_mode = XdpMode::Skb;
                &[]
            }
            Knob::Recvmmsg => &["--recvmmsg", "16"],
            Knob::SmallRcvbuf => &["--rcvbuf", "212992"],
            Knob::MoldBatch4 => {
                o.batch = 4;
                &[]
            }
            // Not options of the run: `measure` isolates the CPU (or steers IRQs) around it.
            Knob::Isolate | Knob::IrqSteer => &[],
            Knob::XdpLog => &["--xdp-log"],
            Knob::MalformedStream => {
                o.malformed_stream = true;
                &[]
            }
            Knob::XdpLogMalformed => {
                o.malformed_stream = true;
                &["--xdp-log"]
            }
            Knob::LieStream => {
                o.lie_stream = Some(crate::run::LieStream::Stranger);
                &[]
            }
            Knob::SpoofedStream => {
                o.lie_stream = Some(crate::run::LieStream::Spoofed);
                &[]
            }
        };
        o.trader_args.extend(trader.iter().map(|s| s.to_string()));
        o
    }
}

/// `--knobs`: every knob, or one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Selection {
    All,
    One(Knob),
}

fn parse_selection(s: &str) -> Result<Selection, String> {
    if s == "all" {
        return Ok(Selection::All);
    }
    Knob::from_str(s, false).map(Selection::One).map_err(|_| {
        let known: Vec<&str> = Knob::value_variants().iter().map(|k| k.as_str()).collect();
        format!("unknown knob {s:?}: use all, or {}", known.join(", "))
    })
}

/// Options.
#[derive(Debug, clap::Args)]
pub(crate) struct Options {
    /// Knobs to run (comma-separated), or `all`. Known: block, busy-poll, unpinned, fifo,
    /// mlock, huge-pages, rx-batch-1, no-need-wakeup, skb, recvmmsg, small-rcvbuf,
    /// mold-batch-4, isolate, xdp-log, malformed-stream, xdp-log-malformed, lie-stream,
    /// spoofed-stream.
    #[arg(long, value_delimiter = ',', default_value = "all", value_parser = parse_selection)]
    pub(crate) knobs: Vec<Selection>,
    /// Paths (comma-separated): xdp, udp, trigger.
    #[arg(long, value_delimiter = ',', default_value = "xdp,udp", value_parser = crate::run::trader_paths())]
    pub(crate) paths: Vec<TraderPath>,
    /// Messages per run.
    #[arg(long, default_value_t = 20_000)]
    pub(crate) count: u64,
    /// Rate per run (msg/s).
    #[arg(long, default_value_t = crate::run::RATE)]
    pub(crate) rate: Rate,
    /// Lab name.
    #[arg(long, default_value = netns::PREFIX)]
    pub(crate) lab: String,
    /// Results folder (default target/matrix/<time>).
    #[arg(long)]
    pub(crate) out: Option<std::path::PathBuf>,
    /// Fail if any run fails or breaks parity (CI).
    #[arg(long)]
    pub(crate) strict: bool,
    #[command(flatten)]
    pub(crate) cpus: crate::run::Cpus,
    /// Count the XDP program's runs and their time in every AF_XDP run alike (`trader
    /// --xdp-stats`: the kernel's BPF run-time statistics, two clock reads a run) and show
    /// the program's mean ns per run: what a knob costs inside the program, apart from the
    /// noise of the whole path.
    #[arg(long)]
    pub(crate) xdp_stats: bool,
    /// Don't install missing dependencies first.
    #[arg(long)]
    pub(crate) no_setup: bool,
    /// Repeat the whole matrix this many times, interleaved (baselines and knobs, then again):
    /// on a shared host one pair of runs can be noise. Each knob is compared with its own
    /// round's baseline; with more than one round a last table gives the median change over
    /// the rounds.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub(crate) rounds: u32,
}

impl Options {
    /// The knobs asked for, in the order given (`all`: the table's).
    fn knobs(&self) -> Vec<Knob> {
        if self.knobs.contains(&Selection::All) {
            return Knob::value_variants().to_vec();
        }
        self.knobs
            .iter()
            .filter_map(|s| match *s {
                Selection::One(k) => Some(k),
                Selection::All => None,
            })
            .collect()
    }
}

/// One measured row: a knob (`None`: the baseline) on a path.
#[derive(Debug, Clone)]
struct Row {
    knob: Option<Knob>,
    path: TraderPath,
    /// Which repetition (0-based, `--rounds`).
    round: u32,
    replay: ReplayReport,
    trader: TraderReport,
}

impl Row {
    fn name(&self) -> &'static str {
        self.knob.map_or("baseline", Knob::as_str)
    }
}

/// A variant that did not run, or failed.
#[derive(Debug, Clone)]
struct Skipped {
    text: String,
    /// Not the machine's lack (no huge pages) but a run that failed: `--strict` fails on it.
    failed: bool,
}

/// matrix.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct MatrixJson {
    count: u64,
    rate: Rate,
    rows: Vec<MatrixRow>,
    skipped: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct MatrixRow {
    /// The knob's name, or `baseline`.
    knob: String,
    path: TraderPath,
    /// Which repetition (0-based, `--rounds`).
    round: u32,
    /// `--rate max`: the latency is a closed-loop round trip, not tick-to-trade.
    closed_loop: bool,
    /// Messages per second the sender achieved.
    achieved_rate_per_s: f64,
    tick_to_trade: Summary,
    parity_ok: bool,
    /// Orders back, expected, ticks lost.
    delivered: Delivery,
    orders: u64,
    late_sends: u64,
    /// Frames the XDP program could not redirect (AF_XDP path).
    redirect_failed: u64,
    /// The XDP program's size and (with `--xdp-stats`) runs and their time.
    xdp_program: Option<results::XdpProgramStats>,
}

pub(crate) fn run(o: Options) -> anyhow::Result<()> {
    let knobs = o.knobs();
    let Some(&first) = o.paths.first() else {
        bail!("no path to run");
    };
    crate::run::check_cpus(o.cpus.trader, o.cpus.replay)?;
    let b = crate::run::Options {
        rate: o.rate,
        xdp_stats: o.xdp_stats,
        trader_cpu: o.cpus.trader,
        replay_cpu: o.cpus.replay,
        ..crate::run::Options::trial(o.count, &o.lab, o.out.clone(), o.no_setup)
    };
    let session = Session::start(&b, "matrix", Ends::kernel_exchange(first))?;
    let (rows, skipped) = measure(&session, &b, &variants(&o.paths, &knobs), o.rounds);
    let out = session.out.clone();
    let interrupted = session.stopped();
    session.finish();
    let table = render(&rows, &o);
    print!("{table}");
    for s in &skipped {
        println!("skipped: {}", s.text);
    }
    // The machine's latency readiness travels with the figures (after any isolation's restore).
    let doctor: String = crate::doctor::summary(b.trader_cpu)
        .iter()
        .map(|l| format!("- {l}\n"))
        .collect();
    std::fs::write(
        out.join("matrix.md"),
        format!("{table}\nmachine readiness (`cargo xtask doctor`):\n{doctor}"),
    )?;
    let json = MatrixJson {
        count: o.count,
        rate: o.rate,
        rows: rows
            .iter()
            .map(|r| MatrixRow {
                knob: r.name().to_owned(),
                path: r.path,
                round: r.round,
                closed_loop: r.replay.closed_loop,
                achieved_rate_per_s: r.replay.achieved_rate_per_s,
                tick_to_trade: r.replay.tick_to_trade,
                parity_ok: r.replay.parity.ok(),
                delivered: Delivery::of(&r.replay, &r.trader),
                orders: r.replay.orders_received,
                late_sends: r.replay.late_sends,
                redirect_failed: r.trader.xdp_counters.map_or(0, |x| x.redirect_failed),
                xdp_program: r.trader.xdp_program.clone(),
            })
            .collect(),
        skipped: skipped.iter().map(|s| s.text.clone()).collect(),
    };
    std::fs::write(
        out.join("matrix.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    eprintln!("results in {}", out.display());
    if interrupted {
        bail!(
            "interrupted; the runs done so far are above and in {}",
            out.display()
        );
    }
    if rows.is_empty() {
        bail!("no run of the matrix succeeded (each one's error is above)");
    }
    if o.strict {
        let failed: Vec<String> = rows
            .iter()
            .flat_map(|r| {
                report::problems(&format!("{} on {}", r.name(), r.path), &r.replay, &r.trader)
            })
            .chain(skipped.iter().filter(|s| s.failed).map(|s| s.text.clone()))
            .collect();
        if !failed.is_empty() {
            bail!(
                "matrix runs failed, lost orders or ticks, or broke parity: {}",
                failed.join("; ")
            );
        }
    }
    Ok(())
}

/// The runs in order: each path's baseline, then each knob on each path it applies to.
fn variants(paths: &[TraderPath], knobs: &[Knob]) -> Vec<(Option<Knob>, TraderPath)> {
    let baselines = paths.iter().map(|&p| (None, p));
    let turned = knobs.iter().flat_map(|&k| {
        paths
            .iter()
            .filter(move |p| k.applies(p.spec()))
            .map(move |&p| (Some(k), p))
    });
    baselines.chain(turned).collect()
}

/// Runs every variant until a signal comes; a failed run is skipped, not fatal, so one bad
/// knob doesn't cost the others' results.
fn measure(
    session: &Session,
    base: &crate::run::Options,
    variants: &[(Option<Knob>, TraderPath)],
    rounds: u32,
) -> (Vec<Row>, Vec<Skipped>) {
    let huge_ok = std::fs::read_to_string("/proc/sys/vm/nr_hugepages")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .is_some_and(|n| n >= HUGE_PAGES_NEEDED);
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    // Round by round: all variants of round 0, then of round 1, ...; every other round in
    // reverse order (knobs first), so running first or second favours no variant.
    let runs: Vec<(u32, (Option<Knob>, TraderPath))> = (0..rounds)
        .flat_map(|r| {
            let mut v: Vec<(u32, (Option<Knob>, TraderPath))> =
                variants.iter().map(|&v| (r, v)).collect();
            if r % 2 == 1 {
                v.reverse();
            }
            v
        })
        .collect();
    let total = runs.len();
    for (n, (round, (knob, path))) in runs.into_iter().enumerate() {
        if session.stopped() {
            break;
        }
        let name = knob.map_or("baseline", Knob::as_str);
        if knob == Some(Knob::HugePages) && !huge_ok {
            if round > 0 {
                continue;
            }
            skipped.push(Skipped {
                text: "huge-pages: no 2 MiB pages reserved (echo 64 > /proc/sys/vm/nr_hugepages)"
                    .into(),
                failed: false,
            });
            continue;
        }
        let of_rounds = if rounds > 1 {
            format!(" (round {}/{rounds})", round + 1)
        } else {
            String::new()
        };
        eprintln!("[{}/{total}] {name} on {path}{of_rounds}", n + 1);
        let opts = knob.map_or_else(|| base.clone(), |k| k.apply(base));
        let tag = if rounds > 1 {
            format!("{path}-{name}-r{}", round + 1)
        } else {
            format!("{path}-{name}")
        };
        // Restored when dropped, right after this run (and on an error or Ctrl-C).
        let scope = match knob {
            Some(Knob::Isolate) => Some(tuning::isolate::Scope::Everything),
            Some(Knob::IrqSteer) => Some(tuning::isolate::Scope::IrqsOnly),
            _ => None,
        };
        let isolation = if let Some(scope) = scope {
            match crate::session::isolate(opts.trader_cpu, scope) {
                Ok(iso) => Some(iso),
                Err(e) => {
                    skipped.push(Skipped {
                        text: format!("{name} on {path}: {e:#}"),
                        failed: true,
                    });
                    continue;
                }
            }
        } else {
            None
        };
        let idle = match knob {
            Some(Knob::BlockHaltPoll) => Some(tuning::idle::Idle::PollFirst(200_000)),
            Some(Knob::BlockNoHalt) => Some(tuning::idle::Idle::NeverHalt),
            _ => None,
        };
        let idle = match idle.map(|i| {
            tuning::idle::IdleGuard::apply(tuning::idle::Paths::live(), opts.trader_cpu, i)
        }) {
            Some(Err(e)) => {
                skipped.push(Skipped {
                    text: format!("{name} on {path}: {e:#}"),
                    failed: true,
                });
                continue;
            }
            Some(Ok(g)) => Some(g),
            None => None,
        };
        let result = session
            .run(&opts, Ends::kernel_exchange(path), &tag)
            .and_then(|run| Ok((run.replay()?, run.trader()?)));
        if let Some(g) = idle
            && let Err(e) = g.restore()
        {
            skipped.push(Skipped {
                text: format!("restoring the idle settings: {e:#}"),
                failed: true,
            });
        }
        if let Some(iso) = isolation
            && let Err(e) = iso.restore()
        {
            skipped.push(Skipped {
                text: format!("restoring the isolation: {e:#}"),
                failed: true,
            });
        }
        match result {
            Ok((replay, trader)) => rows.push(Row {
                knob,
                path,
                round,
                replay,
                trader,
            }),
            Err(e) => skipped.push(Skipped {
                text: format!("{name} on {path}: {e:#}"),
                failed: true,
            }),
        }
    }
    (rows, skipped)
}

fn render(rows: &[Row], o: &Options) -> String {
    let mut t = String::new();
    // --rate max: each tick is due when the previous send returns, so the figures are
    // closed-loop round trips, not tick-to-trade; throughput is in msg/s.
    let measure = if o.rate.per_sec().is_none() {
        "closed-loop round trip µs (--rate max: not tick-to-trade)"
    } else {
        "tick-to-trade µs"
    };
    let _ = writeln!(
        t,
        "knob matrix: {} messages at {} msg/s per run; {measure}; Δ vs the same path's baseline; \
         delivered = orders back/expected ({} marks a run that lost orders or ticks)",
        o.count,
        o.rate,
        report::LOSS_MARK
    );
    let _ = writeln!(
        t,
        "| knob | path | delivered | msg/s | p50 | Δp50 | p99 | p99.9 | Δp99.9 | p99.99 | Δp99.99 | saturated | parity | moves |"
    );
    let _ = writeln!(
        t,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
    );
    for r in rows {
        let base = rows
            .iter()
            .find(|b| b.knob.is_none() && b.path == r.path && b.round == r.round)
            .map(|b| &b.replay.tick_to_trade);
        let s = &r.replay.tick_to_trade;
        // Change against the same path's baseline, percent (none without a baseline, or where
        // the baseline measured nothing: no orders, no latency).
        let d = |v: fn(&Summary) -> f64| {
            base.filter(|b| v(b) > 0.0)
                .map(|b| (v(s) - v(b)) / v(b) * 100.0)
        };
        let (d50, d999, d9999) = (d(|s| s.p50_us), d(|s| s.p999_us), d(|s| s.p9999_us));
        let what = r.knob.map_or(String::new(), |k| format!(" ({})", k.what()));
        let what = if o.rounds > 1 {
            format!("{what} · round {}", r.round + 1)
        } else {
            what
        };
        let _ = writeln!(
            t,
            "| {}{what} | {} | {} | {:.0} | {:.2} | {} | {:.2} | {:.2} | {} | {:.2} | {} | {} | {} | {} |",
            r.name(),
            r.path,
            Delivery::of(&r.replay, &r.trader),
            r.replay.achieved_rate_per_s,
            s.p50_us,
            pct(d50),
            s.p99_us,
            s.p999_us,
            pct(d999),
            s.p9999_us,
            pct(d9999),
            s.saturated,
            parity_cell(&r.replay.parity.verdict),
            if r.knob.is_some() {
                moves(d50, d999, d9999)
            } else {
                String::new()
            },
        );
    }
    // What the machine did to each end: the tail's usual cause, and what isolation targets.
    let _ = writeln!(
        t,
        "\n| knob | path | replay preempted | replay waited ms | replay stolen ms | trader preempted | trader waited ms | trader stolen ms | trader minor faults |"
    );
    let _ = writeln!(t, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let stolen = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.1}"));
    for r in rows {
        let (rp, tr) = (&r.replay, &r.trader);
        let name = if o.rounds > 1 {
            format!("{} · round {}", r.name(), r.round + 1)
        } else {
            r.name().to_owned()
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {:.1} | {} | {} | {:.1} | {} | {} |",
            name,
            r.path,
            rp.context_switches.involuntary,
            rp.thread_time.waited_ms,
            stolen(rp.thread_time.stolen_ms),
            tr.context_switches.involuntary,
            tr.thread_time.waited_ms,
            stolen(tr.thread_time.stolen_ms),
            tr.thread_time.minor_faults,
        );
    }
    if rows.iter().any(|r| {
        r.trader
            .xdp_program
            .as_ref()
            .is_some_and(|p| p.mean_run_ns().is_some())
    }) {
        program_cost(&mut t, rows);
    }
    if o.rounds > 1 {
        medians(&mut t, rows);
    }
    t
}

/// With `--xdp-stats`: the XDP program's own cost per run, from the kernel's statistics: the
/// baseline's runs are the feed's frames; a knob that adds frames (a malformed stream) adds
/// runs of its own, cheap or not, to the mean.
fn program_cost(t: &mut String, rows: &[Row]) {
    let _ = writeln!(
        t,
        "
the XDP program itself (kernel BPF run-time statistics, `--xdp-stats`): runs, mean ns \
         per run, size after the verifier; the median over rounds of each variant's mean:\n\n\
         | knob | path | rounds | runs (last round) | mean ns per run (median) | min | max | translated bytes | JIT bytes | log |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    let mut seen: Vec<(Option<Knob>, TraderPath)> = Vec::new();
    for r in rows {
        if !seen.contains(&(r.knob, r.path)) {
            seen.push((r.knob, r.path));
        }
    }
    for (knob, path) in seen {
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|r| r.knob == knob && r.path == path)
            .collect();
        let Some(last) = mine.last().and_then(|r| r.trader.xdp_program.clone()) else {
            continue;
        };
        let mut means: Vec<f64> = mine
            .iter()
            .filter_map(|r| r.trader.xdp_program.as_ref()?.mean_run_ns())
            .collect();
        if means.is_empty() {
            continue;
        }
        means.sort_by(f64::total_cmp);
        let _ = writeln!(
            t,
            "| {} | {path} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {} |",
            knob.map_or("baseline", Knob::as_str),
            means.len(),
            last.runs.unwrap_or(0),
            means[means.len() / 2],
            means[0],
            means[means.len() - 1],
            last.translated_bytes,
            last.jited_bytes,
            if last.log { "on" } else { "off" },
        );
    }
}

/// With `--rounds`: each knob's median change over the rounds against its round's baseline.
fn medians(t: &mut String, rows: &[Row]) {
    let _ = writeln!(
        t,
        "\nmedian change over the rounds, each against its own round's baseline:\n\n\
         | knob | path | rounds | Δp50 | Δp99 | Δp99.9 | Δp99.99 | moves |\n|---|---|---:|---:|---:|---:|---:|---|"
    );
    let mut seen: Vec<(Knob, TraderPath)> = Vec::new();
    for r in rows {
        let Some(k) = r.knob else { continue };
        if seen.contains(&(k, r.path)) {
            continue;
        }
        seen.push((k, r.path));
        let mut deltas: [Vec<f64>; 4] = Default::default();
        for x in rows
            .iter()
            .filter(|x| x.knob == Some(k) && x.path == r.path)
        {
            let Some(b) = rows
                .iter()
                .find(|b| b.knob.is_none() && b.path == x.path && b.round == x.round)
            else {
                continue;
            };
            let (s, b) = (&x.replay.tick_to_trade, &b.replay.tick_to_trade);
            for (d, v) in deltas.iter_mut().zip([
                (s.p50_us, b.p50_us),
                (s.p99_us, b.p99_us),
                (s.p999_us, b.p999_us),
                (s.p9999_us, b.p9999_us),
            ]) {
                d.push((v.0 - v.1) / v.1 * 100.0);
            }
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            match v.len() {
                0 => None,
                n if n % 2 == 1 => Some(v[n / 2]),
                n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
            }
        };
        let n = deltas[0].len();
        let [d50, d99, d999, d9999] = deltas.map(|mut v| med(&mut v));
        let _ = writeln!(
            t,
            "| {} | {} | {n} | {} | {} | {} | {} | {} |",
            k.as_str(),
            r.path,
            pct(d50),
            pct(d99),
            pct(d999),
            pct(d9999),
            moves(d50, d999, d9999)
        );
    }
}

/// Which way a knob moves the median and the tail, beyond the noise thresholds.
fn moves(d50: Option<f64>, d999: Option<f64>, d9999: Option<f64>) -> String {
    let mut m = Vec::new();
    if let Some(d50) = d50.filter(|d| d.abs() >= P50_MOVES_PCT) {
        m.push(if d50 < 0.0 { "p50 ↓" } else { "p50 ↑" });
    }
    if let (Some(d999), Some(d9999)) = (d999, d9999)
        && (d999.abs() >= TAIL_MOVES_PCT || d9999.abs() >= TAIL_MOVES_PCT)
    {
        m.push(if d999 + d9999 < 0.0 {
            "tail ↓"
        } else {
            "tail ↑"
        });
    }
    if m.is_empty() {
        "—".into()
    } else {
        m.join(", ")
    }
}

/// The parity column: a run whose strategy sends no order has nothing to check, which is not
/// a failure (the replay's own report says why: too few ticks).
fn parity_cell(v: &results::ParityVerdict) -> &'static str {
    use results::ParityVerdict;
    match v {
        ParityVerdict::Ok => "ok",
        ParityVerdict::NothingToCheck { .. } => "nothing to check",
        _ => "FAIL",
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or(String::new(), |x| format!("{x:+.0}%"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_with_no_orders_has_nothing_to_check_not_a_failure() {
        use results::ParityVerdict;
        assert_eq!(parity_cell(&ParityVerdict::Ok), "ok");
        assert_eq!(
            parity_cell(&ParityVerdict::NothingToCheck { ticks: 4 }),
            "nothing to check"
        );
    }

    #[test]
    fn knob_names_are_clap_names() {
        for k in Knob::value_variants() {
            assert_eq!(k.to_possible_value().unwrap().get_name(), k.as_str());
            assert_eq!(parse_selection(k.as_str()), Ok(Selection::One(*k)));
        }
        assert_eq!(parse_selection("all"), Ok(Selection::All));
        assert!(
            parse_selection("turbo")
                .unwrap_err()
                .contains("mold-batch-4")
        );
    }

    #[test]
    fn variants_are_baselines_then_knobs_where_they_apply() {
        let v = variants(
            &[TraderPath::Xdp, TraderPath::Udp],
            &[Knob::Skb, Knob::Mlock, Knob::Recvmmsg],
        );
        assert_eq!(
            v,
            [
                (None, TraderPath::Xdp),
                (None, TraderPath::Udp),
                (Some(Knob::Skb), TraderPath::Xdp),
                (Some(Knob::Mlock), TraderPath::Xdp),
                (Some(Knob::Mlock), TraderPath::Udp),
                (Some(Knob::Recvmmsg), TraderPath::Udp),
            ]
        );
    }

    /// Every knob on exactly the paths it applied to before the path table (the constants
    /// ALL, XDP, XDP_ONLY, BATCHED and UDP it replaced), so the table changes none.
    #[test]
    fn every_knob_applies_where_it_did_before_the_path_table() {
        let real = [TraderPath::Xdp, TraderPath::Udp, TraderPath::Trigger];
        let on = |k: Knob| -> Vec<TraderPath> {
            real.into_iter().filter(|p| k.applies(p.spec())).collect()
        };
        use TraderPath::{Trigger, Udp, Xdp};
        for k in Knob::value_variants() {
            let want: &[TraderPath] = match k {
                Knob::HugePages
                | Knob::RxBatch1
                | Knob::NoNeedWakeup
                | Knob::XdpLog
                | Knob::MalformedStream
                | Knob::XdpLogMalformed => &[Xdp, Trigger],
                Knob::Skb => &[Xdp],
                Knob::MoldBatch4 => &[Xdp, Udp],
                Knob::Recvmmsg | Knob::SmallRcvbuf => &[Udp],
                _ => &[Xdp, Udp, Trigger],
            };
            assert_eq!(on(*k), want, "{}", k.as_str());
        }
    }

    /// The tests' `dummy` path (a kernel UDP socket without `recvmmsg`, no XDP program, in
    /// the table only) gets the knobs its entry allows and no other.
    #[test]
    fn a_path_added_to_the_table_gets_the_knobs_its_entry_allows() {
        let knobs = [
            Knob::Block,
            Knob::Recvmmsg,
            Knob::HugePages,
            Knob::MoldBatch4,
        ];
        let v = variants(&[TraderPath::Dummy], &knobs);
        assert_eq!(
            v,
            [
                (None, TraderPath::Dummy),
                (Some(Knob::Block), TraderPath::Dummy),
                (Some(Knob::MoldBatch4), TraderPath::Dummy),
            ]
        );
    }

    #[test]
    fn a_knob_turns_only_itself() {
        let base = crate::run::Options::trial(1000, "t2t", None, true);
        let skb = Knob::Skb.apply(&base);
        assert_eq!(skb.xdp_mode, XdpMode::Skb);
        assert!(skb.trader_args.is_empty() && skb.wait == base.wait);
        let fifo = Knob::Fifo.apply(&base);
        assert_eq!(fifo.trader_args, ["--fifo", "50"]);
        assert_eq!((fifo.xdp_mode, fifo.batch), (base.xdp_mode, base.batch));
    }

    #[test]
    fn the_table_compares_each_knob_with_its_paths_baseline() {
        let o = Options {
            knobs: vec![Selection::All],
            paths: vec![TraderPath::Xdp],
            count: 20_000,
            rate: crate::run::RATE,
            lab: netns::PREFIX.into(),
            out: None,
            strict: false,
            xdp_stats: false,
            cpus: crate::run::Cpus {
                trader: 1,
                replay: 0,
            },
            no_setup: true,
            rounds: 1,
        };
        let mut slow = crate::fixtures::replay(20.0);
        slow.parity.verdict = results::ParityVerdict::PnlDiffers;
        slow.orders_received = 39;
        slow.tick_to_trade.saturated = 2;
        let trader = crate::fixtures::trader(TraderPath::Xdp);
        let rows = [
            Row {
                knob: None,
                path: TraderPath::Xdp,
                round: 0,
                replay: crate::fixtures::replay(10.0),
                trader: trader.clone(),
            },
            Row {
                knob: Some(Knob::Skb),
                path: TraderPath::Xdp,
                round: 0,
                replay: slow,
                trader: trader.clone(),
            },
            Row {
                knob: Some(Knob::Recvmmsg),
                path: TraderPath::Udp,
                round: 0,
                replay: crate::fixtures::replay(10.0),
                trader,
            },
        ];
        let t = render(&rows, &o);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "knob matrix: 20000 messages at 20k msg/s per run; tick-to-trade µs; Δ vs the same \
             path's baseline; delivered = orders back/expected (⚠ marks a run that lost orders \
             or ticks)"
        );
        assert_eq!(
            lines[3],
            "| baseline | xdp | 40/40 | 19990 | 20.00 | +0% | 40.00 | 50.00 | +0% | 60.00 | +0% \
             | 0 | ok |  |"
        );
        assert_eq!(
            lines[4],
            "| skb (generic (SKB) XDP instead of native) | xdp | ⚠ 39/40 | 19990 | 40.00 | +100% \
             | 80.00 | 100.00 | +100% | 120.00 | +100% | 2 | FAIL | p50 ↑, tail ↑ |"
        );
        // No udp baseline: no change to show, nothing moved.
        assert_eq!(
            lines[5],
            "| recvmmsg (recvmmsg, up to 16 datagrams per call) | udp | 40/40 | 19990 | 20.00 |  \
             | 40.00 | 50.00 |  | 60.00 |  | 0 | ok | — |"
        );
        let closed = Options {
            rate: Rate::Max,
            ..o
        };
        let t = render(&rows, &closed);
        assert!(
            t.lines()
                .next()
                .unwrap()
                .contains("closed-loop round trip µs (--rate max: not tick-to-trade)"),
            "{t}"
        );
    }

    #[test]
    fn rounds_compare_with_their_own_baseline_and_take_the_median() {
        let o = Options {
            knobs: vec![Selection::One(Knob::Isolate)],
            paths: vec![TraderPath::Xdp],
            count: 20_000,
            rate: crate::run::RATE,
            lab: netns::PREFIX.into(),
            out: None,
            strict: false,
            xdp_stats: false,
            cpus: crate::run::Cpus {
                trader: 1,
                replay: 0,
            },
            no_setup: true,
            rounds: 3,
        };
        let trader = crate::fixtures::trader(TraderPath::Xdp);
        let row = |knob, round, p50| Row {
            knob,
            path: TraderPath::Xdp,
            round,
            replay: crate::fixtures::replay(p50),
            trader: trader.clone(),
        };
        // Round baselines 10, 20, 10; the knob 11 (+10 %), 10 (-50 %), 13 (+30 %).
        let rows = [
            row(None, 0, 10.0),
            row(Some(Knob::Isolate), 0, 11.0),
            row(None, 1, 20.0),
            row(Some(Knob::Isolate), 1, 10.0),
            row(None, 2, 10.0),
            row(Some(Knob::Isolate), 2, 13.0),
        ];
        let t = render(&rows, &o);
        assert!(t.contains("· round 2 | xdp"), "{t}");
        let median = t
            .lines()
            .find(|l| l.starts_with("| isolate | xdp | 3 |"))
            .unwrap_or_else(|| panic!("no median row: {t}"));
        // Every percentile of the fixture scales with its p50: the median change is +10 %.
        assert_eq!(
            median,
            "| isolate | xdp | 3 | +10% | +10% | +10% | +10% | p50 ↑ |"
        );
    }

    #[test]
    fn moves_follow_the_thresholds() {
        assert_eq!(moves(Some(-12.0), Some(5.0), Some(-40.0)), "p50 ↓, tail ↓");
        assert_eq!(moves(Some(9.0), Some(29.0), Some(-29.0)), "—");
        assert_eq!(moves(None, None, None), "—");
        assert_eq!(pct(Some(12.4)), "+12%");
        assert_eq!(pct(None), "");
    }
}
