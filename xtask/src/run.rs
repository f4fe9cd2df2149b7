//! The lab layer: what one lab run is, below `bench`, `matrix`, `zero-loss`, the session and
//! the report. The bench's options ([`Options`], also the defaults of a matrix or zero-loss
//! trial), the `--path` values and the report's rows, both read from the path table
//! (`paths::PATHS`), and what a run puts at each end of the veth ([`Ends`]).
use std::path::PathBuf;

use paths::{ExchangeIo, Expect, Orders, Rate, Source, TraderPath, Wait, XdpMode, XdpStages};
use serde::{Deserialize, Serialize};

/// The replay's default source: the spec's 150k-bar GBM series.
const SOURCE: Source = Source::DEFAULT;
/// The default send rate, messages/s: well below every path's zero-loss rate.
pub(crate) const RATE: Rate = Rate::DEFAULT;

/// A `--path` value, from the path table (`paths::PATHS`): a path (all its bench rows), one of
/// its rows by name (`trigger-block`), or `both` (xdp and udp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathChoice {
    /// A path: every row it has in the bench.
    Path(TraderPath),
    /// One row of a path, the one that forces this wait.
    Row(TraderPath, Wait),
    /// xdp and udp, one after the other in the same lab and run, reported side by side.
    Both,
}

impl PathChoice {
    /// Its rows under `--wait wait`: a row that follows `--wait` is left out where the path
    /// has a row forcing that wait already (it would be that row again).
    fn rows(self, wait: Wait) -> Vec<Row> {
        match self {
            PathChoice::Path(p) => {
                let rows: Vec<_> = udp_rows(p).collect();
                rows.iter()
                    .filter(|r| r.wait.is_some() || !rows.iter().any(|f| f.wait == Some(wait)))
                    .map(|r| Row::Path(p, r.wait))
                    .collect()
            }
            PathChoice::Row(p, w) => vec![Row::Path(p, Some(w))],
            PathChoice::Both => vec![Row::XDP, Row::UDP],
        }
    }

    fn name(self) -> &'static str {
        match self {
            PathChoice::Path(p) => p.as_str(),
            PathChoice::Row(p, w) => Row::Path(p, Some(w)).as_str(),
            PathChoice::Both => "both",
        }
    }
}

/// A path's rows with the lab's UDP orders: those `--path` chooses between (`--orders` adds
/// the same path's rows over the other transports).
fn udp_rows(p: TraderPath) -> impl Iterator<Item = &'static paths::BenchRow> {
    p.spec()
        .bench_rows
        .iter()
        .filter(|r| r.orders == Orders::Udp)
}

/// Every `--path` value: each bench path of the table, each of its rows that forces a wait,
/// and `both`.
fn path_choices() -> &'static [PathChoice] {
    static CHOICES: std::sync::LazyLock<Vec<PathChoice>> = std::sync::LazyLock::new(|| {
        let mut v = Vec::new();
        for spec in paths::PATHS.iter().filter(|s| !s.bench_rows.is_empty()) {
            v.push(PathChoice::Path(spec.path));
            for r in udp_rows(spec.path) {
                if let Some(w) = r.wait {
                    v.push(PathChoice::Row(spec.path, w));
                }
            }
        }
        v.push(PathChoice::Both);
        v
    });
    &CHOICES
}

impl clap::ValueEnum for PathChoice {
    fn value_variants<'a>() -> &'a [Self] {
        path_choices()
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match *self {
            PathChoice::Path(p) => {
                let about = p
                    .to_possible_value()
                    .and_then(|v| v.get_help().map(ToString::to_string))
                    .unwrap_or_default();
                // Its other rows run too: say which.
                let more: Vec<&str> = udp_rows(p)
                    .filter(|r| r.wait.is_some())
                    .map(|r| r.label)
                    .collect();
                if more.is_empty() {
                    about
                } else {
                    format!("{about} (also measured as {})", more.join(", "))
                }
            }
            PathChoice::Row(p, w) => format!("The {p} path with the trader waiting: {w} only"),
            PathChoice::Both => {
                "xdp and udp, one after the other in the same lab and run, reported side by side"
                    .to_owned()
            }
        };
        Some(clap::builder::PossibleValue::new(self.name()).help(help))
    }
}

/// One row of the bench's report: a configuration measured, named as in the tables, the
/// result files and report.json. A path's rows come from the path table; the floors are the
/// bench's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Row {
    /// A path's row (`paths::PathSpec::bench_rows`): the trader on that path, the replay on
    /// kernel UDP, the trader waiting as the row forces (`None`: as `--wait` says).
    Path(TraderPath, Option<Wait>),
    /// The XDP_TX reflector: the lab and harness without any userspace trader.
    Reflect,
    /// The trader on AF_XDP and the replay too (the bypass harness): the trader's own figure.
    XdpBypass,
    /// The XDP_TX reflector against the AF_XDP exchange: the floor of the bypass harness, what
    /// `xdp-bypass` is compared with.
    ReflectBypass,
    /// A path's row with its orders over a SoupBinTCP session (`--orders tcp-*`): the trader
    /// waiting as `--wait` says, the replay serving the session on kernel TCP.
    Tcp(TraderPath, Orders),
    /// Two pinned threads ping-ponging a cache line: the machine's floor.
    CpuFloor,
    /// sockperf's UDP ping-pong: the outside reference for the kernel-UDP path.
    Sockperf,
}

impl Row {
    /// The AF_XDP path's row.
    pub(crate) const XDP: Row = Row::Path(TraderPath::Xdp, None);
    /// The kernel UDP path's row.
    pub(crate) const UDP: Row = Row::Path(TraderPath::Udp, None);
    /// The trigger path's row, the trader waiting as `--wait` says.
    pub(crate) const TRIGGER: Row = Row::Path(TraderPath::Trigger, None);
    /// The trigger path with the trader blocking in poll().
    pub(crate) const TRIGGER_BLOCK: Row = Row::Path(TraderPath::Trigger, Some(Wait::Block));
    /// The floors, in the report's order.
    const FLOORS: [Row; 5] = [
        Row::Reflect,
        Row::XdpBypass,
        Row::ReflectBypass,
        Row::CpuFloor,
        Row::Sockperf,
    ];

    /// Every row, in the report's order: the table's (each path's rows, the TCP orders'
    /// among them), then the floors.
    pub(crate) fn all() -> impl Iterator<Item = Row> {
        paths::PATHS
            .iter()
            .flat_map(|s| s.bench_rows.iter().map(|r| Row::of(s.path, r)))
            .chain(Row::FLOORS)
    }

    /// The bench's row for a row of the path table.
    fn of(path: TraderPath, r: &paths::BenchRow) -> Row {
        match r.orders {
            Orders::Udp => Row::Path(path, r.wait),
            orders => Row::Tcp(path, orders),
        }
    }

    /// The row's name in the tables, file names and report.json: its entry's in the path
    /// table.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Row::Path(p, wait) => p
                .spec()
                .row(wait, Orders::Udp)
                .map_or(p.as_str(), |r| r.label),
            // Not a row any option makes (lab_rows leaves a pair the table lacks out).
            Row::Tcp(p, orders) => p.spec().row(None, orders).map_or("tcp-orders", |r| r.label),
            Row::Reflect => "reflect",
            Row::XdpBypass => "xdp-bypass",
            Row::ReflectBypass => "reflect-bypass",
            Row::CpuFloor => "cpu floor",
            Row::Sockperf => "sockperf",
        }
    }

    /// The lab run behind the row (`None`: measured without the trader and the replay).
    pub(crate) const fn ends(self) -> Option<Ends> {
        match self {
            Row::Path(path, wait) => Some(Ends {
                wait,
                ..Ends::kernel_exchange(path)
            }),
            Row::Tcp(path, orders) => Some(Ends {
                orders,
                ..Ends::kernel_exchange(path)
            }),
            Row::Reflect => Some(Ends::kernel_exchange(TraderPath::Reflect)),
            Row::XdpBypass => Some(Ends {
                trader: TraderPath::Xdp,
                exchange: ExchangeIo::Xdp,
                wait: None,
                orders: Orders::Udp,
            }),
            Row::ReflectBypass => Some(Ends {
                trader: TraderPath::Reflect,
                exchange: ExchangeIo::Xdp,
                wait: None,
                orders: Orders::Udp,
            }),
            Row::CpuFloor | Row::Sockperf => None,
        }
    }

    /// What failed, in an error message.
    pub(crate) fn run_name(self) -> String {
        match self {
            Row::Path(p, None) => format!("the {p} run"),
            Row::Path(p, Some(w)) => format!("the {p} run with the trader waiting: {w}"),
            Row::Tcp(p, o) => format!("the {p} run with orders over {o}"),
            Row::Reflect => "the reflector run".into(),
            Row::XdpBypass => "the bypass-harness run".into(),
            Row::ReflectBypass => "the reflector run against the AF_XDP exchange".into(),
            Row::CpuFloor => "the CPU floor".into(),
            Row::Sockperf => "the sockperf reference".into(),
        }
    }
}

impl Serialize for Row {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Row::all()
            .find(|r| r.as_str() == name)
            .ok_or_else(|| serde::de::Error::custom(format!("no bench row {name:?}")))
    }
}

impl std::fmt::Display for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Options of a tick-to-trade benchmark.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Options {
    /// Trader I/O paths, comma-separated, measured one after the other in the same lab and
    /// reported side by side (e.g. `xdp,udp,trigger`).
    #[arg(
        long = "path",
        value_enum,
        value_delimiter = ',',
        default_value = "xdp,udp,trigger",
        help_heading = "What runs"
    )]
    pub(crate) paths: Vec<PathChoice>,
    /// How orders travel, comma-separated: each path runs once per value it takes, side by
    /// side. `udp`: the lab's order in a datagram; `tcp-kernel`: OUCH 5.0 over SoupBinTCP on
    /// the kernel's TCP (the xdp and udp paths); `tcp-xdp`: the same session on a userspace
    /// TCP (smoltcp) over the xdp path's AF_XDP socket (the xdp path), and on the trigger path
    /// the XDP program firing that stack's armed segment (the TCP trigger). The reflector
    /// sends UDP from the XDP program.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "udp",
        help_heading = "What runs"
    )]
    pub(crate) orders: Vec<Orders>,
    /// Market data: gbm[:SEED[:BARS]], closes:PATH, itch:PATH, pcap:PATH.
    #[arg(long, default_value_t = SOURCE, help_heading = "What runs")]
    pub(crate) source: Source,
    /// Messages to send (default: the whole source).
    #[arg(long, help_heading = "What runs")]
    pub(crate) count: Option<u64>,
    /// Send rate in messages/s (50k, 1M, ...) or `max`.
    #[arg(long, default_value_t = RATE, help_heading = "What runs")]
    pub(crate) rate: Rate,
    /// ITCH messages per MoldUDP64 packet.
    #[arg(long, default_value_t = 1, help_heading = "What runs")]
    pub(crate) batch: u16,
    /// Strategy length n.
    #[arg(long, default_value_t = paths::market::STRATEGY_N, help_heading = "What runs")]
    pub(crate) n: i64,
    /// XDP attach mode for the AF_XDP path.
    #[arg(long, value_enum, default_value_t = XdpMode::Native, help_heading = "What runs")]
    pub(crate) xdp_mode: XdpMode,
    /// How the trader waits for data.
    #[arg(long, value_enum, default_value_t = Wait::Spin, help_heading = "What runs")]
    pub(crate) wait: Wait,
    /// CPU for the trader.
    #[arg(long, default_value_t = 1, help_heading = "CPUs and the machine")]
    pub(crate) trader_cpu: usize,
    /// Don't pin the trader and the replay to CPUs (let the scheduler place them).
    #[arg(long, help_heading = "CPUs and the machine")]
    pub(crate) no_pin: bool,
    /// CPU for the replay (exchange side).
    #[arg(long, default_value_t = 0, help_heading = "CPUs and the machine")]
    pub(crate) replay_cpu: usize,
    /// Results folder (default: target/bench/<UTC time>).
    #[arg(long, help_heading = "The lab and its results")]
    pub(crate) out: Option<PathBuf>,
    /// Lab name.
    #[arg(long, default_value = netns::PREFIX, help_heading = "The lab and its results")]
    pub(crate) lab: String,
    /// Leave the lab up afterwards (a lab that was already up is always left up).
    #[arg(long, help_heading = "The lab and its results")]
    pub(crate) keep_lab: bool,
    /// Extra trader flags, e.g. `--trader-arg=--mlock`.
    #[arg(
        long = "trader-arg",
        allow_hyphen_values = true,
        help_heading = "Passed through and injected"
    )]
    pub(crate) trader_args: Vec<String>,
    /// Extra replay flags.
    #[arg(
        long = "replay-arg",
        allow_hyphen_values = true,
        help_heading = "Passed through and injected"
    )]
    pub(crate) replay_args: Vec<String>,
    /// Also measure the floors in the same run: the XDP_TX reflector (the lab and harness
    /// without any userspace trader) against each exchange side, the bypass harness (the
    /// replay on AF_XDP too, so the figure is the trader's own) and the CPU floor (two pinned
    /// threads ping-ponging a cache line).
    #[arg(long, help_heading = "What runs")]
    pub(crate) floors: bool,
    /// Seconds of sockperf ping-pong between the same namespaces, as the outside reference
    /// for the kernel-UDP path (0 to skip).
    #[arg(long, default_value_t = 5, help_heading = "What runs")]
    pub(crate) sockperf: u64,
    /// Fail unless every run delivered every expected order, lost no tick, had no frame the
    /// XDP program could not redirect, and (for strategy runs) parity held: for CI and soaks.
    #[arg(long, help_heading = "The lab and its results")]
    pub(crate) strict: bool,
    /// Don't install missing dependencies first.
    #[arg(long, help_heading = "The lab and its results")]
    pub(crate) no_setup: bool,
    /// Time the XDP program's runs on the rows that have one and add a table of them (`trader
    /// --xdp-stages`). `--xdp-stages` (`=each`): each stage (classify, the trigger's arm read,
    /// checks, match, order write and record, the redirect), a clock read at the end of each,
    /// which waits for the loads before it, so the stages add up to more than an untimed run
    /// wherever its loads would overlap. `--xdp-stages=run`: each run timed at its two ends
    /// only, as it runs untimed (one figure per outcome). Costs the clock reads, so compare
    /// such runs with each other, not with untimed ones.
    #[arg(long, value_name = "HOW", num_args = 0..=1, require_equals = true, default_missing_value = "each", help_heading = "What runs")]
    pub(crate) xdp_stages: Option<XdpStages>,
    /// Isolate the trader's CPU at runtime for the whole run: every other movable task to a
    /// cpuset of the other CPUs, unbound workqueues and IRQs off it. Everything is restored
    /// exactly afterwards (also after Ctrl-C; after SIGKILL the next run or `netns-down`
    /// restores it from /run/t2t-isolate.json). Compare with the matrix's `isolate` knob.
    #[arg(long, help_heading = "CPUs and the machine")]
    pub(crate) isolate: bool,
    /// A stream of malformed frames at the trader during each run (the matrix's
    /// `malformed-stream` knobs): not an option of its own.
    #[arg(skip)]
    pub(crate) malformed_stream: bool,
    /// A stream of lies at the trader during each run (the matrix's `lie-stream` and
    /// `spoofed-stream` knobs): not an option of its own.
    #[arg(skip)]
    pub(crate) lie_stream: Option<LieStream>,
    /// `trader --xdp-stats` on the XDP and reflect paths (the matrix's `--xdp-stats`).
    #[arg(skip)]
    pub(crate) xdp_stats: bool,
}

/// The two CPUs a lab run pins its ends to, as `matrix` and `zero-loss` take them (`bench` has
/// the same two options in its own).
#[derive(Debug, Clone, Copy, clap::Args)]
pub(crate) struct Cpus {
    /// CPU for the trader. On a machine with many cores pick one away from CPU 0 (where
    /// interrupts and housekeeping land) and, with SMT, whose sibling is idle.
    #[arg(long = "trader-cpu", default_value_t = 1)]
    pub(crate) trader: usize,
    /// CPU for the replay (the exchange side; with veth, the trader's XDP program runs here
    /// too, in the sender's transmit). Another core than the trader's, same NUMA node.
    #[arg(long = "replay-cpu", default_value_t = 0)]
    pub(crate) replay: usize,
}

#[cfg(test)]
mod cpu_tests {
    #[test]
    fn cpus_must_be_allowed_and_distinct() {
        let allowed = affinity::allowed_cpus().unwrap();
        let first = allowed[0];
        let e = super::check_cpus(first, first).unwrap_err().to_string();
        assert!(e.contains("both"), "{e}");
        let e = super::check_cpus(100_000, first).unwrap_err().to_string();
        assert!(
            e.contains("--trader-cpu 100000") && e.contains("allowed"),
            "{e}"
        );
        if let [a, b, ..] = allowed[..] {
            assert!(super::check_cpus(a, b).is_ok());
        }
    }
}

/// Refuses CPUs this process may not use, or one CPU for both ends (they would measure each
/// other), naming what is wrong and what there is.
pub(crate) fn check_cpus(trader: usize, replay: usize) -> anyhow::Result<()> {
    let allowed = affinity::allowed_cpus()
        .map_err(|e| anyhow::anyhow!("reading the CPUs this process may use: {e}"))?;
    for (what, cpu) in [("--trader-cpu", trader), ("--replay-cpu", replay)] {
        if !allowed.contains(&cpu) {
            anyhow::bail!(
                "{what} {cpu}: not a CPU this process may use (allowed: {})",
                allowed
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
    }
    if trader == replay {
        anyhow::bail!(
            "--trader-cpu and --replay-cpu are both {trader}: the two ends would take turns on one \
             CPU and measure each other; give each its own (or --no-pin, in bench)"
        );
    }
    Ok(())
}

/// The spec's GBM series (seed 42), long enough for `count` messages.
pub(crate) fn gbm_for(count: u64) -> Source {
    Source::Gbm {
        seed: Source::GBM_SEED,
        bars: usize::try_from(count)
            .unwrap_or(usize::MAX)
            .max(Source::GBM_BARS),
    }
}

/// Who tells the lies of a matrix's lie stream (`inject lies` at [`LIES_PER_SECOND`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LieStream {
    /// Another port of the exchange's address: every class of lie, all dropped by the source
    /// check (in the XDP program, or the loop on the UDP path).
    Stranger,
    /// The feed's exact source, spoofed: the classes the feed gate refuses at no cost to the
    /// trading (far jumps, empty blocks, heartbeats ahead).
    Spoofed,
}

/// Lies a second in a matrix's lie stream.
pub(crate) const LIES_PER_SECOND: u64 = 1_000;

impl Options {
    /// The defaults of a single benchmark trial (the matrix's and the zero-loss search's):
    /// `count` messages of a GBM series long enough for them, n = 6, native XDP, spinning,
    /// trader on cpu1 and replay on cpu0, no sockperf.
    pub(crate) fn trial(count: u64, lab: &str, out: Option<PathBuf>, no_setup: bool) -> Options {
        Options {
            paths: vec![PathChoice::Both],
            orders: vec![Orders::Udp],
            source: gbm_for(count),
            count: Some(count),
            rate: RATE,
            batch: 1,
            n: 6,
            xdp_mode: XdpMode::Native,
            wait: Wait::Spin,
            trader_cpu: 1,
            no_pin: false,
            replay_cpu: 0,
            out,
            lab: lab.into(),
            keep_lab: false,
            trader_args: Vec::new(),
            replay_args: Vec::new(),
            floors: false,
            sockperf: 0,
            strict: false,
            no_setup,
            isolate: false,
            xdp_stages: None,
            malformed_stream: false,
            lie_stream: None,
            xdp_stats: false,
        }
    }

    /// Whether `row` can't run under these options: its path's program doesn't run in this
    /// XDP mode (the trigger needs native XDP).
    pub(crate) fn skips(&self, row: Row) -> bool {
        match row {
            Row::Path(p, _) | Row::Tcp(p, _) => {
                let spec = p.spec();
                spec.action.is_some() && !spec.modes.contains(&self.xdp_mode)
            }
            _ => false,
        }
    }

    /// The lab runs, in order: the paths asked for, then the floors that need the lab.
    pub(crate) fn lab_rows(&self) -> Vec<(Row, Ends)> {
        let floors: &[Row] = if self.floors {
            &[Row::Reflect, Row::XdpBypass, Row::ReflectBypass]
        } else {
            &[]
        };
        let mut rows: Vec<Row> = Vec::new();
        for p in &self.paths {
            for row in p.rows(self.wait) {
                let Row::Path(path, wait) = row else { continue };
                for &orders in &self.orders {
                    // The path's row over these orders, as the table has it.
                    let Some(r) = path.spec().row(wait, orders) else {
                        continue;
                    };
                    let row = Row::of(path, r);
                    if !rows.contains(&row) && !self.skips(row) {
                        rows.push(row);
                    }
                }
            }
        }
        rows.iter()
            .chain(floors)
            .filter_map(|&row| Some((row, row.ends()?)))
            .collect()
    }
}

/// `--paths` of the matrix and the zero-loss search: the paths with a trader on them (the
/// reflector has none to measure), with their help.
pub(crate) fn trader_paths() -> impl clap::builder::TypedValueParser<Value = TraderPath> {
    use clap::{ValueEnum as _, builder::TypedValueParser as _};
    clap::builder::PossibleValuesParser::new(
        TraderPath::all()
            .filter(|p| p.spec().io.trades())
            .filter_map(|p| p.to_possible_value()),
    )
    .try_map(|name: String| TraderPath::from_str(&name, false))
}

/// What a lab run puts at each end of the veth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ends {
    /// The trader's I/O path.
    pub(crate) trader: TraderPath,
    /// The exchange side's (the replay's) I/O.
    pub(crate) exchange: ExchangeIo,
    /// How the trader waits, if not as the options say (the trigger path's blocking row).
    pub(crate) wait: Option<Wait>,
    /// How orders travel (the replay serves a SoupBinTCP session for the TCP ones).
    pub(crate) orders: Orders,
}

impl Ends {
    /// A trader on `trader` against the replay on a kernel UDP socket.
    pub(crate) const fn kernel_exchange(trader: TraderPath) -> Ends {
        Ends {
            trader,
            exchange: ExchangeIo::Udp,
            wait: None,
            orders: Orders::Udp,
        }
    }

    /// What the replay expects back (the path table says): the reflector answers every tick,
    /// a trader its signals.
    pub(crate) fn expect(self) -> Expect {
        self.trader.spec().expect
    }
}
