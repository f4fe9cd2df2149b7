//! The lab's paths, one table: for each way the trader can take market data in and send
//! orders out, its XDP program action, its I/O, the attach modes, queues and options it takes,
//! the order transports it sends over and who sends them ([`OrderRoute`]), what the exchange
//! expects back, and its rows in the bench, each named once ([`PATHS`], looked up with
//! [`TraderPath::spec`]). The trader's option checks, the bench's rows and the matrix's path
//! sets are all read from it. A path on an existing kind of I/O ([`Io`]) is a variant of
//! [`TraderPath`], its `as_str` arm and its entry here; a new kind of I/O needs more
//! (ARCHITECTURE.md lists what).
//!
//! Also the option values the binaries and xtask share, one spelling each: clap parses them,
//! serde writes them into reports, `as_str` (or `Display`, for the replay's [`Source`] and
//! [`Rate`]) builds command lines from them.
use serde::{Deserialize, Serialize};
use xdp_common::Action;

pub mod args;
pub mod cli;
mod feed;
pub use feed::{MarketSpec, Rate, Source};

/// The lab's market: what the replay's synthetic feed carries and the strategy trades, the
/// defaults of the trader, the replay, the injector and xtask alike. (Where it goes, the
/// addresses and ports, is `netns::lab`.)
pub mod market {
    /// The MoldUDP64 session the replay's synthetic feeds carry (10 alphanumerics).
    pub const SESSION: &str = "T2TLAB0001";
    /// The stock symbol of the synthetic ticks, and the one the trader trades.
    pub const STOCK: &str = "SYNTH";
    /// The strategy's default length: HMA(6) against HMA3(6), the engine spec's combo 0.
    pub const STRATEGY_N: i64 = 6;
    /// The SoupBinTCP order session's name (alpha 10).
    pub const ORDER_SESSION: &str = "T2TORD0001";
    /// The order session's username (alpha 6).
    pub const ORDER_USER: &str = "T2TLAB";
    /// The order session's password (alpha 10): a lab's, in the open.
    pub const ORDER_PASSWORD: &str = "t2t-lab";
}

/// Defines a fieldless enum that clap parses (`ValueEnum`, doc comments as help), serde writes
/// in kebab case, and `as_str`/`Display` spell exactly as both do.
macro_rules! arg_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, Serialize, Deserialize)]
        pub enum $name {
            $(
                $(#[$vmeta])*
                #[value(name = $text)]
                #[serde(rename = $text)]
                $variant,
            )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value as clap parses it and serde writes it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// How the trader takes market data in and sends orders out. What each one is and takes is
/// its [`PathSpec`] ([`TraderPath::spec`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, Serialize, Deserialize)]
pub enum TraderPath {
    /// AF_XDP: the XDP program redirects the feed into a UMEM the trader polls.
    #[value(name = "xdp")]
    #[serde(rename = "xdp")]
    Xdp,
    /// The kernel's UDP stack.
    #[value(name = "udp")]
    #[serde(rename = "udp")]
    Udp,
    /// The lab's floor, no trader at all: the XDP program turns each tick into an
    /// order-shaped reply and sends it back with XDP_TX. (The exchange end needs an XDP
    /// program too for XDP_TX into a veth: `replay --xdp-pass-on ex0`.)
    #[value(name = "reflect")]
    #[serde(rename = "reflect")]
    Reflect,
    /// AF_XDP with the decision in the driver: between ticks the trader arms the XDP
    /// program with the next tick's firing prices and order; the program sends that order
    /// itself (XDP_TX) when such a price arrives, and passes every other packet to the
    /// trader, which checks and re-arms.
    #[value(name = "trigger")]
    #[serde(rename = "trigger")]
    Trigger,
    /// Tests only (feature `dummy-path`): a path that is nothing but its table entry.
    #[cfg(feature = "dummy-path")]
    #[value(name = "dummy")]
    #[serde(rename = "dummy")]
    Dummy,
}

impl TraderPath {
    /// Every path, in the table's order.
    pub fn all() -> impl Iterator<Item = TraderPath> {
        PATHS.iter().map(|s| s.path)
    }

    /// The path as clap parses it and serde writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            TraderPath::Xdp => "xdp",
            TraderPath::Udp => "udp",
            TraderPath::Reflect => "reflect",
            TraderPath::Trigger => "trigger",
            #[cfg(feature = "dummy-path")]
            TraderPath::Dummy => "dummy",
        }
    }

    /// What the path is and takes: its entry in [`PATHS`].
    pub fn spec(self) -> &'static PathSpec {
        PATHS
            .iter()
            .find(|s| s.path == self)
            .expect("every path has an entry in PATHS (a test checks it)")
    }

    /// The XDP program sends from the trader's end with XDP_TX (the reflector's answers, the
    /// trigger's orders): on a veth the other end needs an XDP program for them to arrive.
    pub fn xdp_tx(self) -> bool {
        self.spec()
            .action
            .is_some_and(|a| matches!(a, Action::Reflect | Action::Trigger))
    }
}

impl std::fmt::Display for TraderPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What runs in userspace on a path, and so which of the trader's I/O implementations
/// (`TraderIo`) it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// AF_XDP sockets, one per RX queue, read by the trader loop.
    Xsk,
    /// AF_XDP with the XDP program firing the armed order; the loop arms it and reads the rest.
    Trigger,
    /// A kernel UDP socket (`recvmmsg` with `--recvmmsg`).
    Udp,
    /// No trader loop: the XDP program answers alone (the reflector).
    Reflector,
}

impl Io {
    /// A trader loop runs (a strategy, a sequence, re-requests, parity).
    pub const fn trades(self) -> bool {
        !matches!(self, Io::Reflector)
    }

    /// Through AF_XDP sockets.
    pub const fn afxdp(self) -> bool {
        matches!(self, Io::Xsk | Io::Trigger)
    }
}

/// How many RX queues a path serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueRule {
    /// Every RX queue the interface has (or the first N, `--queues`).
    Any,
    /// Queue 0 only.
    One,
}

/// One row a path adds to the bench's report: the path with the trader waiting as `--wait`
/// says (`wait: None`), or as this row forces, its orders over one of the path's
/// [`OrderRoute`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BenchRow {
    /// The row's name in the tables, file names and report.json.
    pub label: &'static str,
    /// The wait this row forces (`None`: `--wait`).
    pub wait: Option<Wait>,
    /// How its orders travel (`--orders`).
    pub orders: Orders,
}

/// Who puts an order on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SentBy {
    /// The trader, from its loop (a socket's send, a TX ring's descriptor).
    Trader,
    /// The XDP program, with XDP_TX: the reflector's answer, the trigger's armed order or the
    /// userspace TCP's armed segment.
    Program,
}

/// One way a path's orders may travel: an `--orders` value the trader takes with the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OrderRoute {
    /// The transport.
    pub orders: Orders,
    /// Who sends the orders on their fast path.
    pub sent_by: SentBy,
}

impl OrderRoute {
    const fn trader(orders: Orders) -> OrderRoute {
        OrderRoute {
            orders,
            sent_by: SentBy::Trader,
        }
    }

    const fn program(orders: Orders) -> OrderRoute {
        OrderRoute {
            orders,
            sent_by: SentBy::Program,
        }
    }
}

/// A path: everything the trader, the bench and the matrix need to know of it.
#[derive(Debug, Clone, Copy)]
pub struct PathSpec {
    /// Its name.
    pub path: TraderPath,
    /// What runs in userspace.
    pub io: Io,
    /// What the XDP program does with the feed (`None`: no program, the kernel's stack).
    pub action: Option<Action>,
    /// The XDP attach modes it works in (empty without a program).
    pub modes: &'static [XdpMode],
    /// The RX queues it serves.
    pub queues: QueueRule,
    /// It takes an A/B feed (`--port-b`).
    pub ab: bool,
    /// It takes several datagrams per call (`--recvmmsg`).
    pub recvmmsg: bool,
    /// It trades packets of several messages on its fast path (the trigger fires only
    /// one-message packets; more, and it is the AF_XDP path).
    pub batched: bool,
    /// What the exchange expects back.
    pub expect: Expect,
    /// How its orders may travel, the first the default (`--orders`).
    pub orders: &'static [OrderRoute],
    /// Its rows in the bench's report, in order (empty: not a bench path).
    pub bench_rows: &'static [BenchRow],
}

impl PathSpec {
    /// The route of `orders` on this path, if the path takes it.
    pub fn route(&self, orders: Orders) -> Option<&'static OrderRoute> {
        self.orders.iter().find(|r| r.orders == orders)
    }

    /// The bench row of this path with `orders` and the trader waiting as `wait` forces
    /// (`None`: as `--wait` says), if the table has one.
    pub fn row(&self, wait: Option<Wait>, orders: Orders) -> Option<&'static BenchRow> {
        self.bench_rows
            .iter()
            .find(|r| r.wait == wait && r.orders == orders)
    }

    /// The paths that take `orders`, in the table's order (for an error that says where an
    /// `--orders` value goes).
    pub fn taking(orders: Orders) -> Vec<TraderPath> {
        PathSpec::select(|s| s.route(orders).is_some())
    }

    /// The paths for which `keep` holds, in the table's order.
    pub fn select(keep: impl Fn(&PathSpec) -> bool) -> Vec<TraderPath> {
        PATHS.iter().filter(|s| keep(s)).map(|s| s.path).collect()
    }
}

const NATIVE_OR_SKB: &[XdpMode] = &[XdpMode::Native, XdpMode::Skb];

const XDP: PathSpec = PathSpec {
    path: TraderPath::Xdp,
    io: Io::Xsk,
    action: Some(Action::Redirect),
    modes: NATIVE_OR_SKB,
    queues: QueueRule::Any,
    ab: true,
    recvmmsg: false,
    batched: true,
    expect: Expect::Signals,
    orders: &[
        OrderRoute::trader(Orders::Udp),
        OrderRoute::trader(Orders::TcpKernel),
        // The userspace TCP on the path's own AF_XDP socket.
        OrderRoute::trader(Orders::TcpXdp),
    ],
    bench_rows: &[
        BenchRow {
            label: "xdp",
            wait: None,
            orders: Orders::Udp,
        },
        BenchRow {
            label: "xdp+tcp-kernel",
            wait: None,
            orders: Orders::TcpKernel,
        },
        BenchRow {
            label: "xdp+tcp-xdp",
            wait: None,
            orders: Orders::TcpXdp,
        },
    ],
};

const UDP: PathSpec = PathSpec {
    path: TraderPath::Udp,
    io: Io::Udp,
    action: None,
    modes: &[],
    queues: QueueRule::Any,
    ab: true,
    recvmmsg: true,
    batched: true,
    expect: Expect::Signals,
    // No AF_XDP socket for a userspace TCP to run on.
    orders: &[
        OrderRoute::trader(Orders::Udp),
        OrderRoute::trader(Orders::TcpKernel),
    ],
    bench_rows: &[
        BenchRow {
            label: "udp",
            wait: None,
            orders: Orders::Udp,
        },
        BenchRow {
            label: "udp+tcp-kernel",
            wait: None,
            orders: Orders::TcpKernel,
        },
    ],
};

const REFLECT: PathSpec = PathSpec {
    path: TraderPath::Reflect,
    io: Io::Reflector,
    action: Some(Action::Reflect),
    modes: NATIVE_OR_SKB,
    queues: QueueRule::Any,
    ab: false,
    recvmmsg: false,
    batched: false,
    expect: Expect::Every,
    // The program answers each tick with the lab's UDP order.
    orders: &[OrderRoute::program(Orders::Udp)],
    // A floor, measured with `bench --floors`, not a path to choose.
    bench_rows: &[],
};

const TRIGGER: PathSpec = PathSpec {
    path: TraderPath::Trigger,
    io: Io::Trigger,
    action: Some(Action::Trigger),
    // One RX queue processed by one CPU at a time, which generic XDP doesn't promise.
    modes: &[XdpMode::Native],
    queues: QueueRule::One,
    // An A/B feed is arbitrated in userspace, so no copy can be fired in the driver.
    ab: false,
    recvmmsg: false,
    batched: false,
    expect: Expect::Signals,
    // The program fires the armed order: the lab's UDP one, or the userspace TCP's armed
    // segment (the TCP trigger). Not the kernel's TCP: the program would send segments that
    // socket never wrote, and the connection would break.
    orders: &[
        OrderRoute::program(Orders::Udp),
        OrderRoute::program(Orders::TcpXdp),
    ],
    bench_rows: &[
        BenchRow {
            label: "trigger",
            wait: None,
            orders: Orders::Udp,
        },
        BenchRow {
            label: "trigger-block",
            wait: Some(Wait::Block),
            orders: Orders::Udp,
        },
        BenchRow {
            label: "trigger+tcp-xdp",
            wait: None,
            orders: Orders::TcpXdp,
        },
    ],
};

#[cfg(feature = "dummy-path")]
const DUMMY: PathSpec = PathSpec {
    path: TraderPath::Dummy,
    io: Io::Udp,
    action: None,
    modes: &[],
    queues: QueueRule::Any,
    ab: false,
    recvmmsg: false,
    batched: true,
    expect: Expect::Signals,
    orders: &[OrderRoute::trader(Orders::Udp)],
    bench_rows: &[BenchRow {
        label: "dummy",
        wait: None,
        orders: Orders::Udp,
    }],
};

/// The paths, written once: a new path's entry goes here.
const REAL: [PathSpec; 4] = [XDP, UDP, REFLECT, TRIGGER];

/// The real paths, then (test builds) the dummy.
#[cfg(not(feature = "dummy-path"))]
const ALL: [PathSpec; REAL.len()] = REAL;
#[cfg(feature = "dummy-path")]
const ALL: [PathSpec; REAL.len() + 1] = {
    let mut all = [DUMMY; REAL.len() + 1];
    let mut i = 0;
    while i < REAL.len() {
        all[i] = REAL[i];
        i += 1;
    }
    all
};

/// Every path, in order (the tests' `dummy` last, where the feature is on).
pub static PATHS: &[PathSpec] = &ALL;

arg_enum! {
    /// What a measured loop does while no data is there.
    pub enum Wait {
        /// Busy-poll the ring or socket on one core.
        Spin = "spin",
        /// Sleep in poll()/recv() until data arrives.
        Block = "block",
    }
}

arg_enum! {
    /// Where the XDP program runs.
    #[derive(Default)]
    pub enum XdpMode {
        /// In the driver (veth supports it): the fast path.
        #[default]
        #[value(alias = "driver", alias = "drv")]
        Native = "native",
        /// Generic XDP, after the kernel has built an skb: works on any interface, slower.
        #[value(alias = "generic")]
        Skb = "skb",
    }
}

arg_enum! {
    /// How the XDP program's runs are timed (`--xdp-stages`): each is another build of the
    /// program, with the clock reads compiled in.
    pub enum XdpStages {
        /// A clock read (`bpf_ktime_get_ns`, ordered: `LFENCE; RDTSC`) at the end of every
        /// stage: where the run's time goes, each stage waiting for what the one before left
        /// outstanding (a cache miss is counted in the stage that issued it).
        Each = "each",
        /// A clock read at the run's start and end only: the whole run as it runs untimed, its
        /// loads overlapping the work after them (no stage split).
        Run = "run",
    }
}

arg_enum! {
    /// The exchange side's (the replay's) I/O.
    pub enum ExchangeIo {
        /// A kernel UDP socket.
        Udp = "udp",
        /// AF_XDP on the exchange's interface: the bypass harness, neither end on the kernel
        /// UDP stack.
        Xdp = "xdp",
    }
}

arg_enum! {
    /// How orders travel from the trader to the exchange.
    #[derive(Default)]
    pub enum Orders {
        /// The lab's 36-byte order in a UDP datagram (no venue takes orders this way: the
        /// comparison's baseline).
        #[default]
        Udp = "udp",
        /// OUCH 5.0 over SoupBinTCP 3.00 on the kernel's TCP (`TCP_NODELAY`), as venues take
        /// them.
        TcpKernel = "tcp-kernel",
        /// OUCH 5.0 over SoupBinTCP 3.00 on a userspace TCP (smoltcp) over the xdp path's
        /// AF_XDP socket, the XDP program steering the session's segments to it.
        TcpXdp = "tcp-xdp",
    }
}

impl Orders {
    /// Over a SoupBinTCP session (the exchange serves one on its order port).
    pub const fn is_tcp(self) -> bool {
        !matches!(self, Orders::Udp)
    }
}

arg_enum! {
    /// What the replay expects the trader to answer.
    pub enum Expect {
        /// The strategy's orders; parity with the backtest is checked.
        Signals = "signals",
        /// One order per tick: the XDP reflector floor.
        Every = "every",
    }
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum as _;

    use super::*;

    #[test]
    fn clap_serde_and_as_str_spell_alike() {
        for p in TraderPath::value_variants() {
            let clap_name = p.to_possible_value().unwrap().get_name().to_owned();
            assert_eq!(clap_name, p.as_str());
            assert_eq!(
                serde_json::to_string(p).unwrap(),
                format!("\"{clap_name}\"")
            );
        }
        assert_eq!(XdpMode::from_str("drv", false).unwrap(), XdpMode::Native);
        assert_eq!(XdpMode::from_str("generic", false).unwrap(), XdpMode::Skb);
        assert_eq!(
            serde_json::from_str::<ExchangeIo>("\"xdp\"").unwrap(),
            ExchangeIo::Xdp
        );
        assert!(serde_json::from_str::<Wait>("\"sleep\"").is_err());
    }

    #[test]
    fn every_path_has_one_entry_and_its_rows_are_named_once() {
        for p in TraderPath::value_variants() {
            assert_eq!(
                PATHS.iter().filter(|s| s.path == *p).count(),
                1,
                "{p}: one entry"
            );
            let s = p.spec();
            assert_eq!(
                s.io.afxdp() || s.io == Io::Reflector,
                s.action.is_some(),
                "{p}"
            );
            assert_eq!(s.action.is_none(), s.modes.is_empty(), "{p}");
            // What the trader's setup assumes of each kind of I/O (the table can't say a
            // reflector runs a trigger program, say).
            let want_action = match s.io {
                Io::Xsk => Some(Action::Redirect),
                Io::Trigger => Some(Action::Trigger),
                Io::Reflector => Some(Action::Reflect),
                Io::Udp => None,
            };
            assert_eq!(s.action, want_action, "{p}: its I/O and its program agree");
            assert!(
                !s.recvmmsg || s.io == Io::Udp,
                "{p}: recvmmsg is a UDP socket's"
            );
            assert!(
                s.queues == QueueRule::Any || s.io.afxdp(),
                "{p}: one queue is an AF_XDP rule"
            );
            assert!(!s.ab || s.io.trades(), "{p}: an A/B feed needs a trader");
            assert_eq!(s.expect == Expect::Every, !s.io.trades(), "{p}");
            // Orders: the default first, each transport once, sent as the I/O can.
            assert_eq!(s.orders.first().map(|r| r.orders), Some(Orders::Udp), "{p}");
            for (i, r) in s.orders.iter().enumerate() {
                assert!(!s.orders[..i].iter().any(|q| q.orders == r.orders), "{p}");
                let program_sends = matches!(s.io, Io::Trigger | Io::Reflector);
                assert_eq!(
                    r.sent_by == SentBy::Program,
                    program_sends,
                    "{p} {}",
                    r.orders
                );
                assert!(
                    r.orders != Orders::TcpXdp || s.io.afxdp(),
                    "{p}: a userspace TCP runs on an AF_XDP socket"
                );
            }
            for row in s.bench_rows {
                assert!(
                    s.route(row.orders).is_some(),
                    "{p}: {} takes its orders",
                    row.label
                );
                // xtask's TCP rows follow --wait: a row forcing one would run under another's
                // label.
                assert!(
                    row.orders == Orders::Udp || row.wait.is_none(),
                    "{p}: {} forces a wait over {}",
                    row.label,
                    row.orders
                );
                assert_eq!(
                    s.row(row.wait, row.orders),
                    Some(row),
                    "{p}: one row per pair"
                );
            }
        }
        let labels: Vec<&str> = PATHS
            .iter()
            .flat_map(|s| s.bench_rows.iter().map(|r| r.label))
            .collect();
        let mut unique = labels.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), labels.len(), "{labels:?}");
        assert_eq!(
            TraderPath::all().count(),
            TraderPath::value_variants().len()
        );
    }

    #[test]
    fn the_trigger_block_row_forces_blocking_and_the_others_follow_wait() {
        let label = |p: TraderPath, w: Option<Wait>| {
            p.spec()
                .bench_rows
                .iter()
                .find(|r| r.wait == w)
                .map(|r| r.label)
        };
        assert_eq!(
            label(TraderPath::Trigger, Some(Wait::Block)),
            Some("trigger-block")
        );
        assert_eq!(label(TraderPath::Trigger, None), Some("trigger"));
        assert_eq!(label(TraderPath::Xdp, None), Some("xdp"));
        assert!(TraderPath::Reflect.spec().bench_rows.is_empty());
        assert_eq!(
            TraderPath::Trigger
                .spec()
                .row(None, Orders::TcpXdp)
                .map(|r| r.label),
            Some("trigger+tcp-xdp")
        );
        assert_eq!(
            PathSpec::taking(Orders::TcpXdp),
            [TraderPath::Xdp, TraderPath::Trigger]
        );
        assert!(TraderPath::Udp.spec().route(Orders::TcpXdp).is_none());
        assert!(
            TraderPath::Trigger
                .spec()
                .route(Orders::TcpKernel)
                .is_none()
        );
        assert!(TraderPath::Trigger.xdp_tx() && TraderPath::Reflect.xdp_tx());
        assert!(!TraderPath::Xdp.xdp_tx() && !TraderPath::Udp.xdp_tx());
    }
}
