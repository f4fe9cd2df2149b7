//! The options parsed once into what each part of the trader takes: [`Options::plan`] checks
//! the combination ([`Options::check_combination`]), parses the strategy's length and stock,
//! and hands the parts typed: the strategy, the feed's rules, the order session, busy polling,
//! the AF_XDP sockets' sizes, the receive side, the XDP program's and the trigger's knobs and
//! the loop's configuration. The I/O set-up and the loop read these, never the raw flags they
//! came from.
use std::{
    net::{Ipv4Addr, SocketAddrV4},
    time::Duration,
};

use afxdp::xsk::XskConfig;
use anyhow::{anyhow, bail};
use paths::{Orders, TraderPath, Wait, XdpMode, XdpStages};
use trader_core::FeedRules;
use wire::itch::Stock;

use crate::{Options, Queues, trading::LoopConfig};

/// What the trader runs, from its options.
#[derive(Debug)]
pub struct Plan {
    /// The I/O path.
    pub path: TraderPath,
    /// The strategy and the one stock it trades.
    pub strategy: Strategy,
    /// What the feed must do to be believed, and how it is followed.
    pub feed: Feed,
    /// How orders travel and where to.
    pub orders: OrderPlan,
    /// Per-socket busy polling (`--busy-poll`), on every socket that reads.
    pub busy_poll: Option<BusyPoll>,
    /// The AF_XDP sockets' UMEM and rings (`--no-need-wakeup`, `--huge-pages`; the sizes are
    /// the defaults, no flag sets them), built by the checked builder when planned.
    pub xsk: XskConfig,
    /// Where and how the feed is read.
    pub receive: Receive,
    /// The XDP program's load-time knobs (the AF_XDP paths and the reflector).
    pub xdp: XdpPlan,
    /// The trigger's own knobs (`--path trigger`).
    pub trigger: TriggerPlan,
    /// Print `ready` on stdout once set up (`--ready`).
    pub ready: bool,
    /// The loop's configuration: its batch, idle exit, and the feed's named sources.
    pub(crate) run: LoopConfig,
}

/// Where the feed is read and how the loop waits for it.
#[derive(Debug, Clone)]
pub struct Receive {
    /// The market-data interface (`--iface`, or the lab's `tr0`).
    pub iface: String,
    /// `--iface` was given (the UDP path then checks it exists).
    pub iface_named: bool,
    /// Our address and the feed's port (line A), and line B's port.
    pub addr: Ipv4Addr,
    pub port: u16,
    pub port_b: Option<u16>,
    pub wait: Wait,
    /// The AF_XDP paths' RX queues to serve.
    pub queues: Queues,
    /// The UDP path's socket buffer (`SO_RCVBUF`) and datagrams per `recvmmsg`.
    pub rcvbuf: i32,
    pub recvmmsg: u16,
    /// Lock the process's memory (`mlockall`) once set up.
    pub mlock: bool,
}

/// The XDP program's knobs: its attach mode, log, statistics and stage timing, and whether the
/// trigger wakes a blocking trader.
#[derive(Debug, Clone)]
pub struct XdpPlan {
    pub mode: XdpMode,
    pub log: bool,
    pub stats: bool,
    pub stages: Option<XdpStages>,
    /// With `--wait block`, the trigger wakes the trader when it fires (not `--no-fired-wakeup`).
    pub fired_wakeup: bool,
    /// The driver filter (not `--no-driver-filter`): used where it applies (`--symbols`, the
    /// xdp path, a one-line feed).
    pub driver_filter: bool,
    /// Where the log reader may run: the CPUs allowed before the trader was pinned.
    pub housekeeping: Vec<usize>,
}

/// The trigger's knobs.
#[derive(Debug, Clone, Copy)]
pub struct TriggerPlan {
    /// CLDEMOTE the arm's and the fired record's cache line after each write and read, toward
    /// the program's core (not `--no-arm-demote`).
    pub demote: bool,
    /// Turns per read of the fired record ([`Options::fired_poll_every`]).
    pub fired_poll_every: u32,
    /// Testing only: corrupt the first N arms (`--corrupt-arms`).
    pub corrupt_arms: u64,
}

/// The strategy (`--n`), its stock (`--stock`) and the symbols whose book it keeps
/// (`--symbols`).
#[derive(Debug, Clone)]
pub struct Strategy {
    pub params: engine::Params,
    pub stock: Stock,
    /// `Some`: a full-depth feed, the book of these symbols (and of `stock`) kept.
    pub symbols: Option<Vec<Stock>>,
    /// The resting orders that book holds before it grows (`--book-orders`).
    pub book_orders: usize,
}

/// The feed: its trust rules and how its lines and gaps are handled.
#[derive(Debug, Clone, Copy)]
pub struct Feed {
    /// Session, first number, jump, quiet and rate rules (`--session`, `--first-seq`,
    /// `--max-jump`, `--quiet-us`, `--max-rate`).
    pub rules: FeedRules,
    /// An A/B feed (`--port-b`): how long a packet past a gap waits for the other line, ns.
    pub line_wait_ns: Option<u64>,
    /// Gaps are asked of a re-request server (`--retransmit-to`).
    pub recovery: bool,
    /// With a book and recovery on one line: how long a packet past a gap waits for the
    /// server's answer, ns (`--repair-wait-ms`; `None`: gaps are traded through).
    pub repair_wait_ns: Option<u64>,
}

/// The order transport and session: `--orders`, `--order-to`, `--addr`, the session's password
/// and timeouts.
#[derive(Debug, Clone)]
pub struct OrderPlan {
    pub transport: Orders,
    /// The order gateway: every order goes here and nowhere else.
    pub to: SocketAddrV4,
    /// Our address, the session's local end.
    pub from: Ipv4Addr,
    pub password: String,
    /// The session's silence timeout: nothing heard for this long (not even a heartbeat), the
    /// connection is given up and made again (`--order-timeout-ms`).
    pub timeout: Duration,
    /// Testing only: reset the connection after this many orders.
    pub reset_after: Option<u64>,
}

/// `SO_BUSY_POLL` and its companions (`--busy-poll`, `--prefer-busy-poll`,
/// `--busy-poll-budget`).
#[derive(Debug, Clone, Copy)]
pub struct BusyPoll {
    pub us: i32,
    pub prefer: bool,
    pub budget: Option<i32>,
}

impl Plan {
    /// The market-data interface.
    #[must_use]
    pub fn iface(&self) -> &str {
        &self.receive.iface
    }
}

impl Options {
    /// The options checked together and parsed into a [`Plan`], each refusal saying what to
    /// give instead.
    pub fn plan(&self) -> anyhow::Result<Plan> {
        self.check_combination()?;
        let params = engine::Params::from_n(self.n)
            .map_err(|e| anyhow!("bad strategy length --n {}: {e}", self.n))?;
        let stock = Stock::new(&self.stock).map_err(|e| anyhow!("bad --stock: {e}"))?;
        let symbols = self
            .symbols
            .as_ref()
            .map(|list| {
                let s: Vec<Stock> = list
                    .iter()
                    .map(|s| {
                        if s.trim().is_empty() {
                            // All spaces: a symbol no Stock Directory names, so the trader
                            // would wait for it all day and trade nothing.
                            bail!("--symbols has an empty name ({list:?}): give the symbols, comma-separated, e.g. --symbols SYNTH,ACME");
                        }
                        Stock::new(s).map_err(|e| anyhow!("bad --symbols {s:?}: {e}"))
                    })
                    .collect::<anyhow::Result<_>>()?;
                let max = trader_core::desk::MAX_SYMBOLS;
                if s.iter().filter(|&&x| x != stock).count() >= max {
                    bail!(
                        "--symbols names {} symbols: at most {} besides --stock",
                        s.len(),
                        max - 1
                    );
                }
                Ok::<_, anyhow::Error>(s)
            })
            .transpose()?;
        let busy_poll = self.busy_poll.map(|us| BusyPoll {
            us,
            prefer: self.prefer_busy_poll,
            budget: self.busy_poll_budget,
        });
        let xsk = XskConfig::builder()
            .need_wakeup(!self.no_need_wakeup)
            .huge_pages(self.huge_pages)
            .build()?;
        Ok(Plan {
            path: self.path,
            strategy: Strategy {
                params,
                stock,
                symbols,
                book_orders: self.book_orders,
            },
            feed: Feed {
                rules: FeedRules {
                    session: self.session,
                    first_seq: self.first_seq,
                    max_jump: self.max_jump,
                    quiet_ns: self.quiet_us.saturating_mul(1_000),
                    max_rate: self.max_rate,
                },
                line_wait_ns: self.port_b.map(|_| self.ab_wait_us.saturating_mul(1_000)),
                recovery: self.retransmit_to.is_some(),
                repair_wait_ns: (self.retransmit_to.is_some()
                    && self.symbols.is_some()
                    && self.port_b.is_none()
                    && self.repair_wait_ms > 0)
                    .then(|| self.repair_wait_ms.saturating_mul(1_000_000)),
            },
            orders: OrderPlan {
                transport: self.orders,
                to: self.order_to,
                from: self.addr,
                password: self.order_password.clone(),
                timeout: Duration::from_millis(self.order_timeout_ms),
                reset_after: self.order_reset_after,
            },
            busy_poll,
            xsk,
            receive: Receive {
                iface: self.iface().to_owned(),
                iface_named: self.iface.is_some(),
                addr: self.addr,
                port: self.port,
                port_b: self.port_b,
                wait: self.wait,
                queues: self.queues,
                rcvbuf: self.rcvbuf,
                recvmmsg: self.recvmmsg,
                mlock: self.mlock,
            },
            xdp: XdpPlan {
                mode: self.xdp_mode,
                log: self.xdp_log,
                stats: self.xdp_stats,
                stages: self.xdp_stages,
                fired_wakeup: !self.no_fired_wakeup,
                driver_filter: !self.no_driver_filter,
                housekeeping: self.housekeeping.clone(),
            },
            trigger: TriggerPlan {
                demote: !self.no_arm_demote,
                fired_poll_every: self.fired_poll_every(),
                corrupt_arms: self.corrupt_arms,
            },
            ready: self.ready,
            run: LoopConfig {
                batch: self.batch,
                idle_exit: (self.idle_exit > 0).then(|| Duration::from_secs(self.idle_exit)),
                spinning: self.spins(),
                retransmit_to: self.retransmit_to,
                sources: [self.feed_source, self.line_b_source()],
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::Options;

    fn plan(args: &[&str]) -> anyhow::Result<super::Plan> {
        let mut argv = vec!["trader"];
        argv.extend_from_slice(args);
        Options::try_parse_from(argv)?.plan()
    }

    #[test]
    fn the_plan_carries_what_the_flags_say_typed() {
        let p = plan(&[
            "--path",
            "xdp",
            "--orders",
            "tcp-kernel",
            "--order-timeout-ms",
            "250",
            "--port-b",
            "26500",
            "--ab-wait-us",
            "7",
            "--busy-poll",
            "50",
            "--quiet-us",
            "3",
            "--stock",
            "ACME",
        ])
        .unwrap();
        assert_eq!(p.orders.transport, paths::Orders::TcpKernel);
        assert_eq!(p.orders.timeout, std::time::Duration::from_millis(250));
        assert_eq!(p.feed.line_wait_ns, Some(7_000));
        assert_eq!(p.feed.rules.quiet_ns, 3_000);
        assert!(!p.feed.recovery);
        assert_eq!(p.busy_poll.map(|b| b.us), Some(50));
        assert_eq!(p.strategy.stock.as_str(), Some("ACME"));
        assert!(p.run.spinning);
        assert!(p.xsk.need_wakeup());
        assert_eq!(p.receive.iface, netns::lab::TRADER_IF);
        assert!(!p.receive.iface_named);
        assert_eq!(p.receive.port_b, Some(26500));
    }

    #[test]
    fn the_trigger_and_program_knobs_are_planned_positively() {
        let p = plan(&[
            "--path",
            "trigger",
            "--wait",
            "block",
            "--no-fired-wakeup",
            "--no-arm-demote",
            "--iface",
            "veth7",
            "--xdp-stages=run",
        ])
        .unwrap();
        assert!(!p.xdp.fired_wakeup);
        assert!(!p.trigger.demote);
        assert_eq!(p.trigger.fired_poll_every, crate::FIRED_POLL_EVERY);
        assert_eq!(p.xdp.stages, Some(paths::XdpStages::Run));
        assert!(p.receive.iface_named);
        assert_eq!(p.receive.iface, "veth7");
        assert!(!p.run.spinning);
    }

    #[test]
    fn the_plan_refuses_what_does_not_go_together_or_parse() {
        let e = plan(&["--path", "udp", "--orders", "tcp-xdp"]).unwrap_err();
        assert!(e.to_string().contains("--orders tcp-xdp"), "{e}");
        let e = plan(&["--path", "udp", "--stock", "TOOLONGNAME"]).unwrap_err();
        assert!(e.to_string().contains("--stock"), "{e}");
        let e = plan(&["--path", "udp", "--n", "0"]).unwrap_err();
        assert!(e.to_string().contains("--n 0"), "{e}");
        for empty in ["", "SYNTH,", "SYNTH, ,ACME"] {
            let e = plan(&["--path", "xdp", "--symbols", empty]).unwrap_err();
            assert!(e.to_string().contains("empty name"), "{empty:?}: {e}");
        }
        let p = plan(&[
            "--path",
            "xdp",
            "--symbols",
            "SYNTH,ACME",
            "--no-driver-filter",
        ])
        .unwrap();
        assert_eq!(p.strategy.symbols.map(|s| s.len()), Some(2));
        assert!(!p.xdp.driver_filter);
        assert!(plan(&["--path", "xdp"]).unwrap().xdp.driver_filter);
    }
}
