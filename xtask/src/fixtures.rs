//! Reports as the binaries write them, built by hand for the tables' and readers' tests.
use paths::{ExchangeIo, Expect, TraderPath, Wait, XdpMode};
use results::{
    ContextSwitches, EndReason, FloorReport, FrameCounts, Knobs, Machine, Parity, ParityVerdict,
    ReplayReport, Summary, ThreadTime, TraderCounters, TraderReport,
};

/// A summary of `count` values whose percentiles are `base` times 1, 2, ... 8.
pub(crate) fn summary(count: u64, base: f64) -> Summary {
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
        saturated: 0,
    }
}

pub(crate) fn machine() -> Machine {
    Machine {
        kernel: "6.1.0-test".into(),
        cpu: "Test CPU @ 3.00GHz".into(),
        cores: 2,
    }
}

/// A strategy run that kept parity: 1000 ticks sent, 40 orders, tick-to-trade from `base` µs.
pub(crate) fn replay(base: f64) -> ReplayReport {
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
pub(crate) fn trader(path: TraderPath) -> TraderReport {
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
        xdp_counters: None,
        xdp_program: None,
        xsk_stats: None,
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

pub(crate) fn floor() -> FloorReport {
    FloorReport {
        cpus: [0, 1],
        iterations: 1_000_000,
        seconds: 1.0,
        round_trip: summary(1_000_000, 0.1),
        machine: machine(),
    }
}
