//! `cargo xtask bench`: tick-to-trade through the lab, one path or both side by side.
use std::{
    path::PathBuf,
    process::Command,
    sync::{Arc, atomic::Ordering},
};

use anyhow::{Context as _, bail};
use results::{ExchangeIo, FloorReport, Rate, Source, TraderPath, Wait, XdpMode};
use serde::{Deserialize, Serialize};

use crate::{
    report::{self, Measured},
    session::{Ends, Session},
    sockperf,
    util::{exec_until, succeeded},
};

/// The CPU floor's duration when the first run's is unknown, and the bounds on it: long enough
/// for a tail, short enough not to double a long soak's time.
const FLOOR_SECONDS_DEFAULT: f64 = 1.0;
const FLOOR_SECONDS_MIN: f64 = 0.5;
const FLOOR_SECONDS_MAX: f64 = 60.0;

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
                let rows = p.spec().bench_rows;
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

/// Every `--path` value: each bench path of the table, each of its rows that forces a wait,
/// and `both`.
fn path_choices() -> &'static [PathChoice] {
    static CHOICES: std::sync::LazyLock<Vec<PathChoice>> = std::sync::LazyLock::new(|| {
        let mut v = Vec::new();
        for spec in paths::PATHS.iter().filter(|s| !s.bench_rows.is_empty()) {
            v.push(PathChoice::Path(spec.path));
            for r in spec.bench_rows {
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
            PathChoice::Path(p) => p
                .to_possible_value()
                .and_then(|v| v.get_help().map(ToString::to_string))
                .unwrap_or_default(),
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

    /// Every row, in the report's order: the table's, then the floors.
    pub(crate) fn all() -> impl Iterator<Item = Row> {
        paths::PATHS
            .iter()
            .flat_map(|s| s.bench_rows.iter().map(|r| Row::Path(s.path, r.wait)))
            .chain(Row::FLOORS)
    }

    /// The row's name in the tables, file names and report.json.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Row::Path(p, wait) => p
                .spec()
                .bench_rows
                .iter()
                .find(|r| r.wait == wait)
                .map_or(p.as_str(), |r| r.label),
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
            Row::Reflect => Some(Ends::kernel_exchange(TraderPath::Reflect)),
            Row::XdpBypass => Some(Ends {
                trader: TraderPath::Xdp,
                exchange: ExchangeIo::Xdp,
                wait: None,
            }),
            Row::ReflectBypass => Some(Ends {
                trader: TraderPath::Reflect,
                exchange: ExchangeIo::Xdp,
                wait: None,
            }),
            Row::CpuFloor | Row::Sockperf => None,
        }
    }

    /// What failed, in an error message.
    fn run_name(self) -> String {
        match self {
            Row::Path(p, None) => format!("the {p} run"),
            Row::Path(p, Some(w)) => format!("the {p} run with the trader waiting: {w}"),
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
        default_value = "xdp,udp,trigger"
    )]
    pub(crate) paths: Vec<PathChoice>,
    /// Market data: gbm[:SEED[:BARS]], closes:PATH, itch:PATH, pcap:PATH.
    #[arg(long, default_value_t = SOURCE)]
    pub(crate) source: Source,
    /// Messages to send (default: the whole source).
    #[arg(long)]
    pub(crate) count: Option<u64>,
    /// Send rate in messages/s (50k, 1M, ...) or `max`.
    #[arg(long, default_value_t = RATE)]
    pub(crate) rate: Rate,
    /// ITCH messages per MoldUDP64 packet.
    #[arg(long, default_value_t = 1)]
    pub(crate) batch: u16,
    /// Strategy length n.
    #[arg(long, default_value_t = netns::lab::STRATEGY_N)]
    pub(crate) n: i64,
    /// XDP attach mode for the AF_XDP path.
    #[arg(long, value_enum, default_value_t = XdpMode::Native)]
    pub(crate) xdp_mode: XdpMode,
    /// How the trader waits for data.
    #[arg(long, value_enum, default_value_t = Wait::Spin)]
    pub(crate) wait: Wait,
    /// CPU for the trader.
    #[arg(long, default_value_t = 1)]
    pub(crate) trader_cpu: usize,
    /// Don't pin the trader and the replay to CPUs (let the scheduler place them).
    #[arg(long)]
    pub(crate) no_pin: bool,
    /// CPU for the replay (exchange side).
    #[arg(long, default_value_t = 0)]
    pub(crate) replay_cpu: usize,
    /// Results folder (default: target/bench/<UTC time>).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Lab name.
    #[arg(long, default_value = netns::PREFIX)]
    pub(crate) lab: String,
    /// Leave the lab up afterwards (a lab that was already up is always left up).
    #[arg(long)]
    pub(crate) keep_lab: bool,
    /// Extra trader flags, e.g. `--trader-arg=--mlock`.
    #[arg(long = "trader-arg", allow_hyphen_values = true)]
    pub(crate) trader_args: Vec<String>,
    /// Extra replay flags.
    #[arg(long = "replay-arg", allow_hyphen_values = true)]
    pub(crate) replay_args: Vec<String>,
    /// Also measure the floors in the same run: the XDP_TX reflector (the lab and harness
    /// without any userspace trader) against each exchange side, the bypass harness (the
    /// replay on AF_XDP too, so the figure is the trader's own) and the CPU floor (two pinned
    /// threads ping-ponging a cache line).
    #[arg(long)]
    pub(crate) floors: bool,
    /// Seconds of sockperf ping-pong between the same namespaces, as the outside reference
    /// for the kernel-UDP path (0 to skip).
    #[arg(long, default_value_t = 5)]
    pub(crate) sockperf: u64,
    /// Fail unless every run delivered every expected order, lost no tick, had no frame the
    /// XDP program could not redirect, and (for strategy runs) parity held: for CI and soaks.
    #[arg(long)]
    pub(crate) strict: bool,
    /// Don't install missing dependencies first.
    #[arg(long)]
    pub(crate) no_setup: bool,
    /// Isolate the trader's CPU at runtime for the whole run: every other movable task to a
    /// cpuset of the other CPUs, unbound workqueues and IRQs off it. Everything is restored
    /// exactly afterwards (also after Ctrl-C; after SIGKILL the next run or `netns-down`
    /// restores it from /run/t2t-isolate.json). Compare with the matrix's `isolate` knob.
    #[arg(long)]
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
            source: Source::Gbm {
                seed: Source::GBM_SEED,
                bars: usize::try_from(count)
                    .unwrap_or(usize::MAX)
                    .max(Source::GBM_BARS),
            },
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
            malformed_stream: false,
            lie_stream: None,
            xdp_stats: false,
        }
    }

    /// Whether `row` can't run under these options: its path's program doesn't run in this
    /// XDP mode (the trigger needs native XDP).
    fn skips(&self, row: Row) -> bool {
        match row {
            Row::Path(p, _) => {
                let spec = p.spec();
                spec.action.is_some() && !spec.modes.contains(&self.xdp_mode)
            }
            _ => false,
        }
    }

    /// The lab runs, in order: the paths asked for, then the floors that need the lab.
    fn lab_rows(&self) -> Vec<(Row, Ends)> {
        let floors: &[Row] = if self.floors {
            &[Row::Reflect, Row::XdpBypass, Row::ReflectBypass]
        } else {
            &[]
        };
        let mut rows: Vec<Row> = Vec::new();
        for p in &self.paths {
            for row in p.rows(self.wait) {
                if !rows.contains(&row) && !self.skips(row) {
                    rows.push(row);
                }
            }
        }
        rows.iter()
            .chain(floors)
            .filter_map(|&row| Some((row, row.ends()?)))
            .collect()
    }
}

pub(crate) fn run(o: Options) -> anyhow::Result<()> {
    if o.isolate && o.no_pin {
        bail!(
            "--isolate with --no-pin: an unpinned trader would be started from xtask's CPUs and \
             stay off the isolated one; pin it (drop --no-pin) or don't isolate"
        );
    }
    let rows = o.lab_rows();
    for choice in &o.paths {
        if let PathChoice::Path(p) | PathChoice::Row(p, _) = *choice
            && o.skips(Row::Path(p, None))
        {
            let modes: Vec<&str> = p.spec().modes.iter().map(|m| m.as_str()).collect();
            eprintln!(
                "note: no {p} rows with --xdp-mode {}: --path {p} runs in XDP mode {} only",
                o.xdp_mode,
                modes.join(" or ")
            );
        }
    }
    let (_, first) = *rows.first().context(
        "no path to run in this XDP mode (the trigger path alone needs --xdp-mode native)",
    )?;
    let session = Session::start(&o, "bench", first)?;
    let stop = Arc::clone(&session.stop);
    // Restored when dropped: after the runs, on an error and after Ctrl-C alike.
    let isolation = if o.isolate {
        Some(crate::session::isolate(o.trader_cpu)?)
    } else {
        None
    };
    let mut measured = Vec::new();
    // Whatever fails, what was measured before it is reported; the failure is returned after.
    let mut failure = measure_lab_rows(&o, &session, &rows, &mut measured).err();
    let mut cpu_floor = None;
    if failure.is_none() && o.floors && !session.stopped() {
        match measure_cpu_floor(&o, &session, &measured) {
            Ok(f) => cpu_floor = Some(f),
            Err(e) => failure = Some(e.context(format!("{} failed", Row::CpuFloor.run_name()))),
        }
    }
    let mut reference = None;
    if failure.is_none() && o.sockperf > 0 && !session.stopped() {
        match sockperf::ping_pong(session.lab.config(), o.sockperf, o.trader_cpu, o.replay_cpu) {
            Ok(v) => reference = Some(v),
            Err(e) => eprintln!("warning: no sockperf reference: {e:#}"),
        }
    }
    let out = session.out.clone();
    // A failed restore is reported after the results are written, never instead of them.
    let mut restore_failure = None;
    if let Some(iso) = isolation {
        match iso.restore() {
            Ok(()) => eprintln!("isolation restored"),
            Err(e) => restore_failure = Some(e.context("restoring the isolated CPU")),
        }
    }
    session.finish();
    if !measured.is_empty() {
        report::write(&out, &o, &measured, reference.as_ref(), cpu_floor.as_ref())?;
    }
    if let Some(e) = failure.or(restore_failure) {
        return Err(e);
    }
    if measured.is_empty() {
        bail!("nothing was measured");
    }
    if o.strict {
        strict(&measured)?;
    }
    if stop.load(Ordering::Relaxed) {
        bail!(
            "interrupted; partial results (if any) are in {}",
            out.display()
        );
    }
    Ok(())
}

/// Runs each lab row in turn and reads its reports back, until one fails or a signal comes.
fn measure_lab_rows(
    o: &Options,
    session: &Session,
    rows: &[(Row, Ends)],
    measured: &mut Vec<Measured>,
) -> anyhow::Result<()> {
    for &(row, ends) in rows {
        if session.stopped() {
            break;
        }
        let one = || -> anyhow::Result<Measured> {
            let run = session.run(o, ends, row.as_str())?;
            Ok(Measured {
                row,
                ends,
                replay: run.replay()?,
                trader: run.trader()?,
                hgrm: run.hgrm,
            })
        };
        measured.push(one().with_context(|| format!("{} failed", row.run_name()))?);
    }
    Ok(())
}

/// The CPU floor, as long as the first lab run (within bounds), so its tail is the machine's
/// jitter on the same time scale as the paths' tails.
fn measure_cpu_floor(
    o: &Options,
    session: &Session,
    measured: &[Measured],
) -> anyhow::Result<FloorReport> {
    let json = session.out.join("cpu-floor.json");
    let seconds = measured
        .first()
        .map_or(FLOOR_SECONDS_DEFAULT, |m| m.replay.send_seconds)
        .clamp(FLOOR_SECONDS_MIN, FLOOR_SECONDS_MAX);
    let mut floor = Command::new(&session.bins.floor);
    floor
        .args(["--cpus", &format!("{},{}", o.replay_cpu, o.trader_cpu)])
        .args(["--seconds", &format!("{seconds:.1}")])
        .arg("--json-out")
        .arg(&json)
        .arg("--hgrm-out")
        .arg(session.out.join("cpu-floor.hgrm"));
    let status = exec_until(&mut floor, &session.stop)?;
    succeeded(&floor, status)?;
    Ok(results::read(&json)?)
}

/// `--strict`: the report's verdict has no problem (every run got every expected order and
/// lost no tick, every strategy run kept parity, no frame failed its XDP redirect).
fn strict(measured: &[Measured]) -> anyhow::Result<()> {
    let bad: Vec<String> = measured
        .iter()
        .flat_map(|m| report::problems(m.row.as_str(), &m.replay, &m.trader))
        .collect();
    if !bad.is_empty() {
        bail!("strict: {}", bad.join("; "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    trait HelpText {
        fn command_for_help() -> String;
    }

    impl<T: clap::CommandFactory> HelpText for T {
        fn command_for_help() -> String {
            T::command().render_long_help().to_string()
        }
    }

    #[test]
    fn rows_spell_alike_in_tables_and_json() {
        for row in Row::all() {
            assert_eq!(
                serde_json::to_string(&row).unwrap(),
                format!("\"{}\"", row.as_str())
            );
            assert_eq!(row.to_string(), row.as_str());
        }
    }

    #[test]
    fn floors_add_the_reflector_against_both_exchanges_and_the_bypass_harness() {
        let mut o = Options::trial(1000, netns::PREFIX, None, true);
        o.floors = true;
        let rows: Vec<Row> = o.lab_rows().into_iter().map(|(r, _)| r).collect();
        assert_eq!(
            rows,
            [
                Row::XDP,
                Row::UDP,
                Row::Reflect,
                Row::XdpBypass,
                Row::ReflectBypass
            ]
        );
        let (_, ends) = o.lab_rows()[4];
        assert_eq!(
            (ends.trader, ends.exchange, ends.expect()),
            (TraderPath::Reflect, ExchangeIo::Xdp, results::Expect::Every)
        );
        o.paths = vec![PathChoice::Path(TraderPath::Udp)];
        o.floors = false;
        let rows: Vec<Row> = o.lab_rows().into_iter().map(|(r, _)| r).collect();
        assert_eq!(rows, [Row::UDP]);
    }

    #[test]
    fn paths_come_in_the_order_given_once_each_and_trigger_adds_its_blocking_row() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            o: Options,
        }
        let rows = |line: &[&str]| -> Vec<Row> {
            let cli =
                Cli::try_parse_from(std::iter::once("bench").chain(line.iter().copied())).unwrap();
            cli.o.lab_rows().into_iter().map(|(r, _)| r).collect()
        };
        assert_eq!(
            rows(&[]),
            [Row::XDP, Row::UDP, Row::TRIGGER, Row::TRIGGER_BLOCK]
        );
        assert_eq!(
            rows(&["--path", "xdp,udp,trigger"]),
            [Row::XDP, Row::UDP, Row::TRIGGER, Row::TRIGGER_BLOCK]
        );
        assert_eq!(
            rows(&["--path", "trigger,both,xdp"]),
            [Row::TRIGGER, Row::TRIGGER_BLOCK, Row::XDP, Row::UDP]
        );
        assert_eq!(
            rows(&["--path", "trigger", "--wait", "block"]),
            [Row::TRIGGER_BLOCK]
        );
        assert_eq!(
            Row::TRIGGER_BLOCK.ends().and_then(|e| e.wait),
            Some(Wait::Block)
        );
        assert!(Cli::try_parse_from(["bench", "--path", "xdp,bogus"]).is_err());
        // Generic XDP: the trigger (native only) is left out.
        assert_eq!(rows(&["--xdp-mode", "skb"]), [Row::XDP, Row::UDP]);
    }

    /// A path is one entry in the path table: the tests' `dummy` (feature `dummy-path`, on in
    /// every test build) is a `--path` value with its own row, named as its entry says, with
    /// the right ends, and a row of report.json, without a line of the bench about it.
    #[test]
    fn a_path_added_to_the_table_is_a_bench_path_with_its_rows() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            o: Options,
        }
        let cli = Cli::try_parse_from(["bench", "--path", "dummy,xdp"]).unwrap();
        let rows: Vec<(Row, Ends)> = cli.o.lab_rows();
        let dummy = Row::Path(TraderPath::Dummy, None);
        assert_eq!(rows[0].0, dummy);
        assert_eq!(rows[1].0, Row::XDP);
        assert_eq!(dummy.as_str(), "dummy");
        assert_eq!(rows[0].1, Ends::kernel_exchange(TraderPath::Dummy));
        assert!(Row::all().any(|r| r == dummy));
        assert_eq!(
            serde_json::from_str::<Row>(&serde_json::to_string(&dummy).unwrap()).unwrap(),
            dummy
        );
        // Its entry takes no XDP program, so generic XDP doesn't leave it out.
        let skb = Cli::try_parse_from(["bench", "--path", "dummy", "--xdp-mode", "skb"]).unwrap();
        assert_eq!(skb.o.lab_rows().len(), 1);
        let help = Cli::command_for_help();
        assert!(help.contains("dummy"), "{help}");
    }

    #[test]
    fn the_help_shows_the_defaults_as_typed() {
        use clap::CommandFactory as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            o: Options,
        }
        let help = Cli::command().render_long_help().to_string();
        for default in [
            "[default: gbm:42:150000]",
            "[default: 20k]",
            "[default: spin]",
        ] {
            assert!(help.contains(default), "{default} not in\n{help}");
        }
        let o = <Cli as clap::Parser>::try_parse_from(["x", "--rate", "1.5M", "--wait", "block"])
            .unwrap()
            .o;
        assert_eq!((o.rate, o.wait), (Rate::PerSec(1.5e6), Wait::Block));
        assert!(<Cli as clap::Parser>::try_parse_from(["x", "--rate", "fast"]).is_err());
    }
}
