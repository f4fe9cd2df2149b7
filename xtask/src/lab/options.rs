//! The bench's options ([`Options`]), also the defaults of a matrix or zero-loss trial, and
//! the CPUs a run pins its two ends to.
use std::path::PathBuf;

use paths::{Orders, Rate, Source, TraderPath, Wait, XdpMode, XdpStages};

use super::{Ends, PathChoice, Row};

/// The replay's default source: the spec's 150k-bar GBM series.
const SOURCE: Source = Source::DEFAULT;
/// The default send rate, messages/s: well below every path's zero-loss rate.
pub(crate) const RATE: Rate = Rate::DEFAULT;

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
    /// Market data: gbm[:SEED[:BARS]], closes:PATH, itch:PATH[.gz], pcap:PATH (pcap or pcapng),
    /// market[:SEED[:BARS]][:KEY=VALUE] (the replay's --help says what each takes).
    #[arg(long, default_value_t = SOURCE, help_heading = "What runs")]
    pub(crate) source: Source,
    /// Messages to send (default: the whole source).
    #[arg(long, help_heading = "What runs")]
    pub(crate) count: Option<u64>,
    /// Send rate in messages/s (50k, 1M, ...) or `max`.
    #[arg(long, default_value_t = RATE, help_heading = "What runs")]
    pub(crate) rate: Rate,
    /// Bursts over the --rate, like the open: FACTORxLEN[/EVERY], e.g. 10x100ms (ten times the
    /// rate for 100 ms at the start of every second after the first). The report times the
    /// ticks due inside a burst apart.
    #[arg(long, help_heading = "What runs")]
    pub(crate) burst: Option<exchange::Burst>,
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
    /// Changes to the trader's own options (a matrix knob's), made on its typed
    /// `trader::Options` before its command line is rendered.
    #[arg(skip)]
    pub(crate) trader_edits: Vec<fn(&mut trader::Options)>,
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
mod row_tests {
    use paths::{Orders, TraderPath};

    use super::{Options, PathChoice, Row};

    /// On a book (`--symbols`) the TCP trigger has no row, and every other row stays.
    #[test]
    fn a_book_drops_the_tcp_trigger_row_only() {
        let mut o = Options::trial(1000, "t", None, true);
        o.paths = vec![
            PathChoice::Path(TraderPath::Trigger),
            PathChoice::Path(TraderPath::Xdp),
        ];
        o.orders = vec![Orders::Udp, Orders::TcpXdp];
        let rows = |o: &Options| o.lab_rows().into_iter().map(|(r, _)| r).collect::<Vec<_>>();
        let ticker = rows(&o);
        assert!(
            ticker.contains(&Row::Tcp(TraderPath::Trigger, Orders::TcpXdp)),
            "{ticker:?}"
        );
        o.trader_args = vec!["--symbols=SYNTH".into()];
        let book = rows(&o);
        let kept: Vec<Row> = ticker
            .iter()
            .copied()
            .filter(|&r| r != Row::Tcp(TraderPath::Trigger, Orders::TcpXdp))
            .collect();
        assert_eq!(book, kept);
        assert!(
            book.contains(&Row::Tcp(TraderPath::Xdp, Orders::TcpXdp)),
            "{book:?}"
        );
        // With --floors, the reflectors are for the ticker only.
        o.floors = true;
        let floors = rows(&o);
        assert!(floors.contains(&Row::XdpBypass), "{floors:?}");
        assert!(!floors.contains(&Row::Reflect) && !floors.contains(&Row::ReflectBypass));
    }
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
            trader_edits: Vec::new(),
            replay_args: Vec::new(),
            burst: None,
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
    /// XDP mode (the trigger needs native XDP), or on a book ([`Options::reads_a_book`]) it is
    /// the TCP trigger, whose armed segment is for the ticker's packets only, or a reflector.
    pub(crate) fn skips(&self, row: Row) -> bool {
        match row {
            Row::Tcp(p, Orders::TcpXdp)
                if p.spec().io == paths::Io::Trigger && self.reads_a_book() =>
            {
                true
            }
            // The reflector answers a packet whose first message is a Trade; a book's prints
            // are Order Executed messages it doesn't read: on a full-depth feed, no floor.
            Row::Reflect | Row::ReflectBypass if self.reads_a_book() => true,
            Row::Path(p, _) | Row::Tcp(p, _) => {
                let spec = p.spec();
                spec.action.is_some() && !spec.modes.contains(&self.xdp_mode)
            }
            _ => false,
        }
    }

    /// Whether the trader reads a full-depth feed through a book: `--trader-arg=--symbols=...`.
    pub(crate) fn reads_a_book(&self) -> bool {
        self.trader_args
            .iter()
            .any(|a| a == "--symbols" || a.starts_with("--symbols="))
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
            .chain(floors.iter().filter(|&&r| !self.skips(r)))
            .filter_map(|&row| Some((row, row.ends()?)))
            .collect()
    }
}

/// `--path` of the matrix and the zero-loss search: the paths with a trader on them (the
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
