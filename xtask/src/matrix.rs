//! `cargo xtask matrix`: what each design choice on the trader costs. Runs a baseline per path,
//! then each knob alone on the paths it applies to, all in one lab and one invocation, and
//! prints which knob moves the median and which moves the tail.
use anyhow::bail;
use clap::ValueEnum as _;
use paths::{Io, PathSpec};
use paths::{Rate, TraderPath, Wait, XdpMode};
use report::matrix::{Matrix, Run};

use crate::lab::{Ends, session::Session};

/// Fewer reserved 2 MiB pages than this and the huge-pages knob is skipped (the UMEM needs
/// them).
const HUGE_PAGES_NEEDED: u64 = 8;

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
            Knob::BusyPoll => report::matrix::BUSY_POLL,
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

    /// As the tables show it.
    fn shown(self) -> report::matrix::Knob {
        report::matrix::Knob {
            name: self.as_str(),
            what: self.what(),
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
    fn apply(self, base: &crate::lab::Options) -> crate::lab::Options {
        let mut o = base.clone();
        let edit: Option<fn(&mut trader::Options)> = match self {
            // The idle setting itself is made around the run (`measure`).
            Knob::Block | Knob::BlockHaltPoll | Knob::BlockNoHalt => {
                o.wait = Wait::Block;
                None
            }
            Knob::BusyPoll => Some(|t| {
                t.busy_poll = Some(50);
                t.prefer_busy_poll = true;
            }),
            Knob::Unpinned => {
                o.no_pin = true;
                None
            }
            Knob::Fifo => Some(|t| t.fifo = Some(50)),
            Knob::Mlock => Some(|t| t.mlock = true),
            Knob::HugePages => Some(|t| t.huge_pages = true),
            Knob::RxBatch1 => Some(|t| t.batch = 1),
            Knob::NoNeedWakeup => Some(|t| t.no_need_wakeup = true),
            Knob::Skb => {
                o.xdp_mode = XdpMode::Skb;
                None
            }
            Knob::Recvmmsg => Some(|t| t.recvmmsg = 16),
            Knob::SmallRcvbuf => Some(|t| t.rcvbuf = 212_992),
            Knob::MoldBatch4 => {
                o.batch = 4;
                None
            }
            // Not options of the run: `measure` isolates the CPU (or steers IRQs) around it.
            Knob::Isolate | Knob::IrqSteer => None,
            Knob::XdpLog => Some(|t| t.xdp_log = true),
            Knob::MalformedStream => {
                o.malformed_stream = true;
                None
            }
            Knob::XdpLogMalformed => {
                o.malformed_stream = true;
                Some(|t| t.xdp_log = true)
            }
            Knob::LieStream => {
                o.lie_stream = Some(crate::lab::LieStream::Stranger);
                None
            }
            Knob::SpoofedStream => {
                o.lie_stream = Some(crate::lab::LieStream::Spoofed);
                None
            }
        };
        o.trader_edits.extend(edit);
        o
    }
}

/// `--knobs`: every knob, or one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Selection {
    All,
    One(Knob),
}

/// `--knobs`' values, from the knob table: `all`, then every knob with its help, so `--help`
/// lists each one (and an unknown name's error too).
fn selections() -> impl clap::builder::TypedValueParser<Value = Selection> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
    PossibleValuesParser::new(
        std::iter::once(PossibleValue::new("all").help("Every knob, in this order")).chain(
            Knob::value_variants()
                .iter()
                .filter_map(|k| k.to_possible_value()),
        ),
    )
    .try_map(|name: String| parse_selection(&name))
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
    /// Knobs to run (comma-separated), or `all`.
    #[arg(long, value_delimiter = ',', default_value = "all", value_parser = selections())]
    pub(crate) knobs: Vec<Selection>,
    /// Paths (comma-separated): each with a trader.
    // `--paths`, the old spelling, still parses (a hidden alias), for one release.
    #[arg(long = "path", alias = "paths", value_delimiter = ',', default_value = "xdp,udp", value_parser = crate::lab::trader_paths())]
    pub(crate) paths: Vec<TraderPath>,
    /// Messages per run.
    #[arg(long, default_value_t = 20_000)]
    pub(crate) count: u64,
    /// Rate per run (msg/s).
    #[arg(long, default_value_t = crate::lab::RATE)]
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
    pub(crate) cpus: crate::lab::Cpus,
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

/// A variant that did not run, or failed.
#[derive(Debug, Clone)]
struct Skipped {
    text: String,
    /// Not the machine's lack (no huge pages) but a run that failed: `--strict` fails on it.
    failed: bool,
}

pub(crate) fn run(o: Options) -> anyhow::Result<()> {
    let knobs = o.knobs();
    let Some(&first) = o.paths.first() else {
        bail!("no path to run");
    };
    crate::lab::check_cpus(o.cpus.trader, o.cpus.replay)?;
    let b = crate::lab::Options {
        rate: o.rate,
        xdp_stats: o.xdp_stats,
        trader_cpu: o.cpus.trader,
        replay_cpu: o.cpus.replay,
        ..crate::lab::Options::trial(o.count, &o.lab, o.out.clone(), o.no_setup)
    };
    let session = Session::start(&b, "matrix", Ends::kernel_exchange(first))?;
    let (rows, skipped) = measure(&session, &b, &variants(&o.paths, &knobs), o.rounds);
    let out = session.out.clone();
    let interrupted = session.stopped();
    session.finish();
    let skipped_text: Vec<String> = skipped.iter().map(|s| s.text.clone()).collect();
    let matrix = Matrix {
        count: o.count,
        rate: o.rate,
        rounds: o.rounds,
        runs: &rows,
        skipped: &skipped_text,
        // After any isolation's restore.
        readiness: &crate::doctor::summary(b.trader_cpu),
    };
    print!("{}", matrix.markdown());
    for s in &skipped_text {
        println!("skipped: {s}");
    }
    std::fs::write(out.join("matrix.md"), matrix.matrix_md())?;
    std::fs::write(
        out.join("matrix.json"),
        serde_json::to_string_pretty(&matrix.json())?,
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
    base: &crate::lab::Options,
    variants: &[(Option<Knob>, TraderPath)],
    rounds: u32,
) -> (Vec<Run>, Vec<Skipped>) {
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
            match crate::lab::session::isolate(opts.trader_cpu, scope) {
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
            Ok((replay, trader)) => rows.push(Run {
                knob: knob.map(Knob::shown),
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// `--help` lists every knob, from the knob table (the hand-written list it replaced
    /// missed irq-steer), with what it does, and every path a run can take.
    #[test]
    fn the_help_lists_every_knob_and_path() {
        use clap::CommandFactory as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            o: Options,
        }
        let long = Cli::command().render_long_help().to_string();
        let short = Cli::command().render_help().to_string();
        for k in Knob::value_variants() {
            for help in [&long, &short] {
                assert!(help.contains(k.as_str()), "{} not in\n{help}", k.as_str());
            }
        }
        // Each value on a line of its own, its help beside it (after the alignment's spaces).
        let words = long.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("- irq-steer: Only the IRQs moved off"),
            "{long}"
        );
        assert!(words.contains("- all: Every knob"), "{long}");
        let paths = words
            .split("--path ")
            .nth(1)
            .and_then(|h| h.split("--count").next())
            .unwrap_or_else(|| panic!("no --path in\n{long}"));
        for p in TraderPath::all() {
            let listed = paths.contains(&format!("- {p}: "));
            assert_eq!(listed, p.spec().io.trades(), "{p} in\n{long}");
        }
        let parse = |v: &str| <Cli as clap::Parser>::try_parse_from(["matrix", "--knobs", v]);
        let o = parse("irq-steer,all").unwrap().o;
        assert_eq!(o.knobs, [Selection::One(Knob::IrqSteer), Selection::All]);
        let e = parse("turbo").map(|_| ()).unwrap_err().to_string();
        assert!(
            e.contains("irq-steer") && e.contains("spoofed-stream"),
            "{e}"
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
        let base = crate::lab::Options::trial(1000, "t2t", None, true);
        let skb = Knob::Skb.apply(&base);
        assert_eq!(skb.xdp_mode, XdpMode::Skb);
        assert!(skb.trader_edits.is_empty() && skb.wait == base.wait);
        let fifo = Knob::Fifo.apply(&base);
        assert_eq!(fifo.trader_edits.len(), 1);
        let mut t = <trader::Options as clap::Parser>::parse_from(["trader", "--path", "xdp"]);
        let untouched = format!("{t:?}");
        (fifo.trader_edits[0])(&mut t);
        assert_eq!(t.fifo, Some(50));
        t.fifo = None;
        assert_eq!(
            format!("{t:?}"),
            untouched,
            "the fifo knob sets --fifo alone"
        );
        assert_eq!((fifo.xdp_mode, fifo.batch), (base.xdp_mode, base.batch));
    }
}
