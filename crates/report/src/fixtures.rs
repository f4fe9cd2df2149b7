//! Reports as the binaries write them, built by hand for the tables' and readers' tests (here
//! and, with the `fixtures` feature, in xtask's).
use std::path::Path;

use paths::{ExchangeIo, Expect, TraderPath, Wait, XdpMode};
use results::{
    ContextSwitches, EndReason, FloorReport, FrameCounts, Knobs, Machine, Parity, ParityVerdict,
    ReplayReport, Summary, ThreadTime, TraderCounters, TraderReport,
};

use crate::{
    Conditions, Delivery, Measured, RoundTrip, row,
    zeroloss::{CpuPerMessage, Trial, TrialVerdict},
};

/// A summary of `count` values whose min, percentiles, max and mean are `base` times 1, 2, ...
/// 8, and its standard deviation 9 times.
pub fn summary(count: u64, base: f64) -> Summary {
    Summary {
        count,
        min_us: base,
        p50_us: 2.0 * base,
        p90_us: 3.0 * base,
        p99_us: 4.0 * base,
        p999_us: 5.0 * base,
        p9999_us: 6.0 * base,
        max_us: 7.0 * base,
        mean_us: 8.0 * base,
        stdev_us: 9.0 * base,
        saturated: 0,
    }
}

pub fn machine() -> Machine {
    Machine {
        kernel: "6.1.0-test".into(),
        cpu: "Test CPU @ 3.00GHz".into(),
        cores: 2,
    }
}

/// A strategy run that kept parity: 1000 ticks sent, 40 orders, tick-to-trade from `base` µs.
pub fn replay(base: f64) -> ReplayReport {
    ReplayReport {
        label: "xdp".into(),
        exchange_io: ExchangeIo::Udp,
        expect: Expect::Signals,
        source: "gbm:42:150000".into(),
        rate_per_s: Some(20_000.0),
        closed_loop: false,
        achieved_rate_per_s: 19_990.0,
        send_seconds: 0.05,
        batch: 1,
        sent_messages: 1000,
        sent_packets: 1000,
        ticks: 1000,
        orders_received: 40,
        orders_unknown_tick: 0,
        orders_duplicate: 0,
        orders_shares_mismatch: 0,
        orders_stock_mismatch: 0,
        orders_malformed: 0,
        orders_price_mismatch: 0,
        orders_reverse_mismatch: 0,
        orders_stamped_before_due: 0,
        send_dropped: 0,
        late_sends: 3,
        arrival: results::Arrival::KernelTimestamp,
        tick_to_trade: summary(40, base),
        tick_to_trade_seen: summary(40, base + 0.5),
        tick_to_trade_tenths: Vec::new(),
        burst: None,
        tick_to_trade_in_bursts: None,
        harness_delay: summary(40, 0.5),
        unstamped_datagrams: 0,
        context_switches: ContextSwitches {
            voluntary: 5,
            involuntary: 7,
        },
        steal_ms: vec![0, 0],
        thread_time: ThreadTime {
            wall_ms: 50.0,
            ran_ms: 49.0,
            waited_ms: 0.75,
            stolen_ms: Some(0.25),
            minor_faults: 0,
        },
        parity: Parity {
            verdict: ParityVerdict::Ok,
            live_pnl: 1.23456,
            live_trades: 20,
            batch_pnl: 1.23456,
            batch_trades: 20,
            expected_orders: 40,
            first_divergence: None,
            explanation: "ok".into(),
        },
        retransmit: None,
        stream: None,
        line_sends: Vec::new(),
        orders: paths::Orders::Udp,
        session: None,
        send_lateness: results::Summary::default(),
        tick_to_trade_from_send: results::Summary::default(),
        machine: machine(),
    }
}

/// The trader's side of [`replay`]: 1000 ticks, two out of order (a gap each, both filled
/// late: nothing lost), one malformed packet.
pub fn trader(path: TraderPath) -> TraderReport {
    TraderReport {
        knobs: Knobs {
            cpu: Some(1),
            fifo: None,
            mlock: false,
            busy_poll_us: None,
            prefer_busy_poll: false,
            busy_poll_budget: None,
            huge_pages: false,
            rx_batch: 64,
            need_wakeup: true,
            recvmmsg: 1,
            rcvbuf: 4 << 20,
        },
        path,
        wait: Wait::Spin,
        xdp_mode: (path != TraderPath::Udp).then_some(XdpMode::Native),
        n: 6,
        counters: TraderCounters {
            packets: 1000,
            messages: 1000,
            ticks: 1000,
            gap_messages: 2,
            late_messages: 2,
            malformed_packets: 1,
            orders: 40,
            ..TraderCounters::default()
        },
        feed: results::FeedSeen {
            session: Some(paths::market::SESSION.to_owned()),
            session_pinned: true,
            first_seq: Some(1),
            max_jump: 256,
            ..results::FeedSeen::default()
        },
        frames_not_ours: FrameCounts::default(),
        rx_queue_frames: Vec::new(),
        rx_to_tx: summary(40, 0.5),
        engine: summary(1000, 0.01),
        book_work: Summary::default(),
        xdp_counters: None,
        xdp_program: None,
        xsk_stats: None,
        socket_drops: None,
        napi_id: None,
        end: EndReason::EndOfSession,
        rss_start_kib: 4000,
        rss_end_kib: 4000,
        context_switches: ContextSwitches {
            voluntary: 0,
            involuntary: 2,
        },
        thread_time: ThreadTime {
            wall_ms: 50.0,
            ran_ms: 50.0,
            waited_ms: 0.0,
            stolen_ms: None,
            minor_faults: 3,
        },
        busy_ms: 0.0,
        account: results::Account {
            orders: 40,
            trades: 20,
            pnl: 1.23456,
            position: None,
        },
        trigger: None,
        order_session: None,
    }
}

pub fn floor() -> FloorReport {
    FloorReport {
        cpus: [0, 1],
        iterations: 1_000_000,
        seconds: 1.0,
        round_trip: summary(1_000_000, 0.1),
        machine: machine(),
    }
}

/// Five lab rows as a bench with `--floors` and sockperf measures them: a strategy run
/// that kept parity, one that lost orders and diverged (and slept: no stolen figure), the
/// reflector against each exchange (no trader loop, so no RX→TX or engine rows) and the
/// bypass harness, whose XDP program failed to redirect two frames.
pub fn measured(hgrm_dir: &Path) -> Vec<Measured> {
    let mut udp = replay(20.0);
    udp.parity.verdict = ParityVerdict::Diverged {
        first_divergence: 77,
        missing_orders: 3,
    };
    udp.orders_received = 37;
    udp.tick_to_trade.count = 37;
    udp.thread_time.stolen_ms = None;
    let mut udp_trader = trader(TraderPath::Udp);
    udp_trader.counters.gap_messages = 4;
    let reflect = |base: f64, io: ExchangeIo| {
        let mut r = replay(base);
        r.exchange_io = io;
        r.expect = Expect::Every;
        r.parity.verdict = ParityVerdict::NotApplicable {
            answered: 1000,
            ticks: 1000,
        };
        r.parity.expected_orders = 1000;
        r.orders_received = 1000;
        r.tick_to_trade.count = 1000;
        r
    };
    let mut reflector = trader(TraderPath::Reflect);
    reflector.rx_to_tx.count = 0;
    reflector.engine.count = 0;
    reflector.counters = TraderCounters::default();
    reflector.xdp_counters = Some(results::XdpCounters {
        reflected: 1000,
        ..Default::default()
    });
    let mut xdp = trader(TraderPath::Xdp);
    xdp.xdp_counters = Some(results::XdpCounters {
        redirected: 1000,
        ..Default::default()
    });
    let mut bypass = xdp.clone();
    bypass.xdp_counters = Some(results::XdpCounters {
        redirected: 1000,
        redirect_failed: 2,
        ..Default::default()
    });
    let mut bypass_replay = replay(8.0);
    bypass_replay.exchange_io = ExchangeIo::Xdp;
    [
        ("xdp", replay(10.0), xdp),
        ("udp", udp, udp_trader),
        (
            row::REFLECT,
            reflect(5.0, ExchangeIo::Udp),
            reflector.clone(),
        ),
        ("xdp-bypass", bypass_replay, bypass),
        ("reflect-bypass", reflect(4.0, ExchangeIo::Xdp), reflector),
    ]
    .into_iter()
    .map(|(row, replay, trader)| Measured {
        row,
        path: trader.path,
        udp_orders: None,
        replay,
        trader,
        hgrm: hgrm_dir.join(format!("{row}.hgrm")),
    })
    .collect()
}

/// sockperf 3.7's summary of a 2 s ping-pong on a shared VM.
pub fn sockperf() -> RoundTrip {
    RoundTrip {
        count: 63015,
        min_us: 12.578,
        p50_us: 13.369,
        p90_us: 15.743,
        p99_us: 30.665,
        p999_us: 3342.389,
        p9999_us: 8048.483,
        max_us: 12053.411,
        mean_us: 24.576,
        stdev_us: 206.930,
    }
}

/// The bench's ratios (xtask's), by name.
pub const RATIOS: [(&str, &str); 7] = [
    ("xdp", "udp"),
    ("xdp", row::REFLECT),
    ("udp", row::REFLECT),
    ("xdp", "trigger"),
    ("trigger", row::REFLECT),
    ("trigger-block", row::REFLECT),
    ("xdp-bypass", "reflect-bypass"),
];

/// A bench's defaults (xtask's `Options::trial`) over the whole default source.
pub fn conditions() -> Conditions {
    Conditions {
        source: "gbm:42:150000".parse().expect("a source"),
        count: None,
        rate: paths::Rate::DEFAULT,
        burst: None,
        batch: 1,
        n: 6,
        xdp_mode: XdpMode::Native,
        wait: Wait::Spin,
        trader_cpu: 1,
        replay_cpu: 0,
        trader_args: Vec::new(),
        isolate: false,
        xdp_stages: None,
    }
}

/// A zero-loss trial at `rate` with `verdict` and otherwise fixed figures.
pub fn trial(rate: f64, verdict: TrialVerdict) -> Trial {
    Trial {
        rate,
        verdict,
        tick_to_trade: summary(1000, 10.0),
        delivered: Delivery {
            orders: 40,
            expected: 40,
            ticks_lost: 0,
        },
        messages: 40_000,
        orders_per_s: 7_600.0,
        rx_tx_p50_us: 2.5,
        cpu: CpuPerMessage::default(),
    }
}
