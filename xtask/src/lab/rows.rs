//! The bench's `--path` values and its report's rows, both read from the path table
//! (`paths::PATHS`): a path's rows and labels are its table entry's.
use paths::{ExchangeIo, Orders, TraderPath, Wait};
use serde::{Deserialize, Serialize};

use super::Ends;

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
    pub(super) fn rows(self, wait: Wait) -> Vec<Row> {
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
    pub(super) fn of(path: TraderPath, r: &paths::BenchRow) -> Row {
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
