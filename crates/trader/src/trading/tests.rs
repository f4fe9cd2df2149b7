//! The loop against a fake ring: no sockets, no root.
use std::{
    cell::{Cell, RefCell},
    collections::VecDeque,
    io,
    net::{Ipv4Addr, SocketAddrV4},
    sync::atomic::AtomicBool,
    time::Duration,
};

use engine::Params;
use results::EndReason;
use wire::{
    itch::{Price4, Stock},
    moldudp64::{self, PacketBuilder, Session},
    order::OrderRepr,
};

use super::{
    FeedSource, LoopConfig, OrderSink, PacketHandler, Sender, TraderIo, run, run_with_clock,
};
use trader_core::{DEFAULT_ENGINE_SAMPLE_EVERY, Line, Trader, stats::Latency, trade_message};

/// Packets in, orders out, in memory. With `QUEUE`, orders wait for the sink's `flush` (the
/// kick) like AF_XDP's; without, they leave at `send` like a socket's.
#[derive(Default)]
struct FakeIo<const QUEUE: bool> {
    incoming: VecDeque<Vec<u8>>,
    /// Orders that left (at send, or at the kick when queued).
    sent: Vec<OrderRepr>,
    queued: Vec<OrderRepr>,
    /// Refuse this many sends first.
    refuse: usize,
    fail_flush: bool,
    /// Orders each kick sent (queued) or found already sent (not queued), one entry per kick.
    kicks: Vec<usize>,
    idles: usize,
    turns: Vec<usize>,
    /// Read the RX time from the logging fake clock instead of the real one.
    fake_clock: bool,
    /// The exchange's re-request server: every packet of the feed, by sequence number; a
    /// request puts the packets it names next in line (`None`: requests fail).
    tape: Option<std::collections::BTreeMap<u64, Vec<u8>>>,
    /// Re-requests sent: (sequence, count).
    requests: Vec<(u64, u16)>,
    /// The server's answers, taken before the rest of the feed, from the server (not a line).
    answers: VecDeque<Vec<u8>>,
    /// Once `incoming` is empty, this packet again and again, forever.
    endless: Option<Vec<u8>>,
    /// Who sent each incoming packet, in turn; [`FEED`] once it runs out.
    senders: VecDeque<SocketAddrV4>,
    /// Sources the loop pinned, as it told the I/O.
    pins: Vec<(Line, FeedSource)>,
    /// The line each incoming packet arrives on, in turn; line A once it runs out.
    lines: VecDeque<Line>,
    /// On the fake clock, an end of session was repeated (as the lab's exchange does, 2 ms
    /// on): the fake clock runs ahead of the real one, which the loop's wait for the feed's
    /// silence after an end reads, so the repeat is what ends these runs.
    end_repeated: bool,
}

/// Whether `p` is an end of session.
fn is_end(p: &[u8]) -> bool {
    moldudp64::Packet::new_checked(p).is_ok_and(|p| p.is_end_of_session())
}

/// The feed's source in these tests.
const FEED: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(198, 18, 0, 1), 26404);

struct FakeSink<'a, const QUEUE: bool> {
    sent: &'a mut Vec<OrderRepr>,
    queued: &'a mut Vec<OrderRepr>,
    refuse: &'a mut usize,
    fail_flush: bool,
    kicks: &'a mut Vec<usize>,
    /// Orders this packet sent.
    this_packet: usize,
}

impl<const QUEUE: bool> OrderSink for FakeSink<'_, QUEUE> {
    fn send(&mut self, order: &OrderRepr) -> bool {
        if *self.refuse > 0 {
            *self.refuse -= 1;
            return false;
        }
        log(Event::Send);
        self.this_packet += 1;
        if QUEUE {
            self.queued.push(*order);
        } else {
            self.sent.push(*order);
        }
        true
    }

    fn flush(&mut self) -> io::Result<()> {
        log(Event::Kick);
        // A kick takes a while: a TX time read before it would not show it.
        FAKE_NOW.with(|t| t.set(t.get() + KICK_NS));
        self.kicks.push(self.this_packet);
        if self.fail_flush {
            return Err(io::Error::other("kick failed"));
        }
        if QUEUE {
            self.sent.append(self.queued);
        }
        Ok(())
    }
}

impl<const QUEUE: bool> TraderIo for FakeIo<QUEUE> {
    fn recv<H: PacketHandler>(&mut self, max: usize, handler: &mut H) -> io::Result<usize> {
        let mut n = 0;
        while n < max {
            let (p, line, from) = match self.answers.pop_front() {
                Some(a) => (a, Line::Recovery, retransmit_server()),
                None => match (self.incoming.pop_front(), &self.endless) {
                    (Some(p), _) => (
                        p,
                        self.lines.pop_front().unwrap_or(Line::A),
                        self.senders.pop_front().unwrap_or(FEED),
                    ),
                    (None, Some(e)) => (e.clone(), Line::A, FEED),
                    (None, None) => break,
                },
            };
            if self.fake_clock && line != Line::Recovery && is_end(&p) {
                if self.end_repeated {
                    FAKE_NOW.with(|t| t.set(t.get() + 2_000_000));
                } else {
                    self.end_repeated = true;
                    self.incoming.push_front(p.clone());
                }
            }
            let t_rx = if self.fake_clock {
                log(Event::Rx);
                FAKE_NOW.with(Cell::get)
            } else {
                afxdp::clock::now_ns()
            };
            handler.on_packet(
                &p,
                line,
                None,
                Sender::Datagram(from),
                t_rx,
                &mut FakeSink::<QUEUE> {
                    sent: &mut self.sent,
                    queued: &mut self.queued,
                    refuse: &mut self.refuse,
                    fail_flush: self.fail_flush,
                    kicks: &mut self.kicks,
                    this_packet: 0,
                },
            );
            n += 1;
        }
        if n > 0 {
            self.turns.push(n);
        }
        Ok(n)
    }

    fn idle(&mut self) {
        self.idles += 1;
    }

    fn pin_source(&mut self, line: Line, source: FeedSource) {
        self.pins.push((line, source));
    }

    fn with_sink(&mut self, f: &mut dyn FnMut(&mut dyn OrderSink)) {
        f(&mut FakeSink::<QUEUE> {
            sent: &mut self.sent,
            queued: &mut self.queued,
            refuse: &mut self.refuse,
            fail_flush: self.fail_flush,
            kicks: &mut self.kicks,
            this_packet: 0,
        });
    }

    fn send_request(&mut self, to: std::net::SocketAddrV4, payload: &[u8]) -> io::Result<()> {
        assert_eq!(to, retransmit_server());
        let tape = self
            .tape
            .as_ref()
            .ok_or_else(|| io::Error::other("no server"))?;
        let r = moldudp64::Request::parse(payload).expect("a well-formed request");
        assert_eq!(r.session, session());
        self.requests.push((r.sequence, r.count));
        // One packet of the messages asked for, as a server answers, next in line.
        let end = r.sequence + u64::from(r.count);
        let mut buf = [0u8; 1472];
        let mut b = moldudp64::PacketBuilder::new(&mut buf, r.session, r.sequence).unwrap();
        for (_, p) in tape.range(r.sequence..end) {
            let p = moldudp64::Packet::new_checked(&p[..]).unwrap();
            for m in p.messages() {
                b.push(m.unwrap()).unwrap();
            }
        }
        self.answers.push_back(b.finish().to_vec());
        Ok(())
    }
}

fn retransmit_server() -> std::net::SocketAddrV4 {
    std::net::SocketAddrV4::new(
        std::net::Ipv4Addr::new(198, 18, 0, 1),
        netns::lab::RETRANSMIT_PORT,
    )
}

#[test]
fn gaps_are_asked_for_between_turns_and_what_comes_back_is_counted_not_traded() {
    let (packets, _) = feed(400);
    let lost = [40u64, 41, 42, 200, 333];
    let tape: std::collections::BTreeMap<u64, Vec<u8>> = packets
        .iter()
        .enumerate()
        .take(400)
        .map(|(i, p)| (i as u64 + 1, p.clone()))
        .collect();
    let lossy: Vec<_> = packets
        .iter()
        .enumerate()
        .filter(|(i, _)| !lost.contains(&(*i as u64 + 1)))
        .map(|(_, p)| p.clone())
        .collect();
    let cfg = LoopConfig {
        retransmit_to: Some(retransmit_server()),
        ..config(1)
    };
    let run_with = |recover: bool| {
        // RX times from the fake clock, which a kick moves by a second: the trader's pacing
        // of requests never holds one back here, whatever this machine's speed.
        FAKE_NOW.with(|c| c.set(afxdp::clock::now_ns()));
        let mut io = FakeIo::<false> {
            incoming: lossy.clone().into(),
            tape: Some(tape.clone()),
            fake_clock: true,
            ..FakeIo::default()
        };
        let mut t = if recover {
            trader().with_recovery()
        } else {
            trader()
        };
        let mut h = Latency::new();
        let stop = AtomicBool::new(false);
        let end = run_with_clock(&mut io, &mut t, &mut h, cfg, &stop, &fake_clock).unwrap();
        assert_eq!(end.reason, EndReason::EndOfSession);
        (t.counters, io.sent, io.requests)
    };
    let (plain, plain_orders, none) = run_with(false);
    assert!(none.is_empty(), "no recovery, no request");
    let (c, orders, requests) = run_with(true);
    assert_eq!(orders, plain_orders, "what comes back changes no order");
    assert_eq!((plain.recovered_messages, plain.gap_messages), (0, 5));
    assert_eq!(
        (
            c.recovered_messages,
            c.late_messages,
            c.gap_messages,
            c.retransmit_gave_up
        ),
        (5, 5, 5, 0),
        "{c:?}"
    );
    assert_eq!(requests, [(40, 3), (200, 1), (333, 1)]);
    assert_eq!(c.retransmit_requests, 3);
}

/// What happened on a packet's path, in order (the logging tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    /// The I/O took a packet (and its RX time).
    Rx,
    /// The loop or the trader read the clock.
    Clock,
    /// An order was sent (or queued).
    Send,
    /// The sink's flush: the kick.
    Kick,
}

/// How long a fake kick takes.
const KICK_NS: u64 = 1_000_000_000;

thread_local! {
    static LOG: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
    /// The fake clock: moves by 1 ns per read, and by `KICK_NS` per kick.
    static FAKE_NOW: Cell<u64> = const { Cell::new(0) };
}

fn log(e: Event) {
    LOG.with(|l| l.borrow_mut().push(e));
}

fn fake_clock() -> u64 {
    log(Event::Clock);
    FAKE_NOW.with(|t| {
        t.set(t.get() + 1);
        t.get()
    })
}

fn stock() -> Stock {
    Stock::new(paths::market::STOCK).unwrap()
}

fn session() -> Session {
    Session::new(paths::market::SESSION).unwrap()
}

/// A random-walk feed of `n` single-trade packets, sequence numbers 1..=n, and the end of
/// session.
fn feed(n: u64) -> (Vec<Vec<u8>>, Vec<f64>) {
    let mut packets = Vec::new();
    let mut prices = Vec::new();
    let mut x = 100.0f64;
    for seq in 1..=n {
        // A deterministic wiggle with trends, so HMA/HMA3 cross both ways.
        x += ((seq as f64) * 0.7).sin() * 0.9 + ((seq as f64) * 0.05).cos() * 0.4;
        let price = Price4::from_f64_quantised(x).unwrap();
        prices.push(price.to_f64());
        let mut m = [0u8; wire::itch::trade::LEN];
        trade_message(seq, stock(), price, seq)
            .emit_into(&mut m)
            .unwrap();
        let mut buf = [0u8; 128];
        let mut b = PacketBuilder::new(&mut buf, session(), seq).unwrap();
        b.push(&m).unwrap();
        packets.push(b.finish().to_vec());
    }
    let mut eos = [0u8; moldudp64::HEADER_LEN];
    let b = PacketBuilder::new(&mut eos, session(), n + 1).unwrap();
    let mut p = b.finish().to_vec();
    p[18..20].copy_from_slice(&moldudp64::END_OF_SESSION.to_be_bytes());
    packets.push(p);
    (packets, prices)
}

/// A trader told where the feed starts, as the bench runs it: the loop's tests count what
/// each packet does at once (learning the feed is trader-core's `gate_tests`).
fn trader() -> Trader {
    Trader::new(Params::from_n(6).unwrap(), Some(stock())).with_feed_rules(trader_core::FeedRules {
        session: Some(session()),
        first_seq: Some(1),
        ..trader_core::FeedRules::default()
    })
}

fn config(batch: usize) -> LoopConfig {
    LoopConfig {
        batch,
        idle_exit: Some(Duration::from_secs(5)),
        spinning: false,
        retransmit_to: None,
        sources: [None; trader_core::lines::LINES],
    }
}

/// The strategy's signals on the same prices, offline: (tick sequence number, buy?).
fn expected(prices: &[f64]) -> Vec<(u64, bool)> {
    let mut s = engine::Strategy::new(Params::from_n(6).unwrap());
    prices
        .iter()
        .enumerate()
        .filter_map(|(i, &p)| {
            s.on_tick(p)
                .map(|sig| (i as u64 + 1, sig.side == engine::Side::Long))
        })
        .collect()
}

fn check_run<const Q: bool>(batch: usize) {
    let (packets, prices) = feed(400);
    let want = expected(&prices);
    assert!(want.len() > 20, "the feed should make the strategy trade");
    let mut io = FakeIo::<Q> {
        incoming: packets.into(),
        ..FakeIo::default()
    };
    let mut t = trader();
    let mut rx_to_tx = Latency::new();
    let end = run(
        &mut io,
        &mut t,
        &mut rx_to_tx,
        config(batch),
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(end.reason, EndReason::EndOfSession);
    let got: Vec<(u64, bool)> = io
        .sent
        .iter()
        .map(|o| (o.tick_seq, o.side == wire::itch::Side::Buy))
        .collect();
    assert_eq!(
        got, want,
        "the loop sends exactly the strategy's orders, in order"
    );
    assert_eq!(t.counters.ticks, 400);
    assert_eq!(t.counters.orders, want.len() as u64);
    // One RX→TX sample per packet that sent an order (one trade per packet here).
    assert_eq!(rx_to_tx.len(), want.len() as u64);
    assert_eq!(
        t.engine().len(),
        400u64.div_ceil(u64::from(DEFAULT_ENGINE_SAMPLE_EVERY)),
        "the engine is timed on the first tick and every Nth after it"
    );
    assert!(io.turns.iter().all(|&n| n <= batch.max(1)));
    // One kick per packet that sent an order, right after it, whatever the batch: each kick
    // carries exactly that packet's order.
    assert_eq!(io.kicks.len(), want.len(), "a kick per packet with orders");
    assert!(io.kicks.iter().all(|&n| n == 1), "{:?}", io.kicks);
    assert!(io.queued.is_empty(), "everything queued was kicked");
    // The loop worked on 400 packets: some time, never more than the span it is part of (the
    // first turn's packets are taken just before the span starts: a little slack).
    let busy_ms = end.busy_ns as f64 / 1e6;
    assert!(end.busy_ns > 0, "{end:?}");
    assert!(busy_ms <= end.thread_time.wall_ms + 1.0, "{end:?}");
}

#[test]
fn immediate_sends_trade_the_whole_feed() {
    check_run::<false>(1);
}

#[test]
fn queued_sends_trade_the_whole_feed_in_batches() {
    check_run::<true>(1);
    check_run::<true>(7);
    check_run::<true>(64);
}

#[test]
fn a_batch_above_the_maximum_is_taken_in_turns_of_the_maximum() {
    check_run::<true>(1000);
}

#[test]
fn refused_orders_and_failed_flushes_are_counted() {
    let (packets, prices) = feed(200);
    let want = expected(&prices).len() as u64;
    let mut io = FakeIo::<true> {
        incoming: packets.into(),
        refuse: 3,
        fail_flush: true,
        ..FakeIo::default()
    };
    let mut t = trader();
    let mut h = Latency::new();
    run(&mut io, &mut t, &mut h, config(4), &AtomicBool::new(false)).unwrap();
    assert_eq!(t.counters.orders_failed, 3);
    assert_eq!(t.counters.orders, want - 3);
    assert_eq!(t.counters.tx_flush_failed, io.kicks.len() as u64);
    assert_eq!(
        io.kicks.len() as u64,
        want - 3,
        "no kick for a packet that sent nothing"
    );
}

#[test]
fn no_data_ends_in_an_idle_timeout() {
    let mut io = FakeIo::<false>::default();
    let mut t = trader();
    let mut h = Latency::new();
    let cfg = LoopConfig {
        idle_exit: Some(Duration::from_millis(20)),
        ..config(1)
    };
    let end = run(&mut io, &mut t, &mut h, cfg, &AtomicBool::new(false)).unwrap();
    assert_eq!(end.reason, EndReason::IdleTimeout);
    assert!(io.idles > 0, "empty turns do the I/O's housekeeping");
    assert_eq!(t.counters.packets, 0);
}

#[test]
fn the_stop_flag_ends_the_loop() {
    let (packets, _) = feed(10);
    let mut io = FakeIo::<false> {
        incoming: packets.into(),
        ..FakeIo::default()
    };
    let mut t = trader();
    let mut h = Latency::new();
    let end = run(&mut io, &mut t, &mut h, config(1), &AtomicBool::new(true)).unwrap();
    assert_eq!(end.reason, EndReason::Stopped);
    assert_eq!(t.counters.packets, 0, "stopped before the first turn");
}

#[test]
fn an_io_error_ends_the_loop_with_it() {
    struct Broken;
    impl TraderIo for Broken {
        fn recv<H: PacketHandler>(&mut self, _: usize, _: &mut H) -> io::Result<usize> {
            Err(io::Error::other("device gone"))
        }
    }
    let mut h = Latency::new();
    let e = run(
        &mut Broken,
        &mut trader(),
        &mut h,
        config(1),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "device gone");
}

/// However the loop ends (stop, idle timeout, end of session, an I/O error), the I/O's `finish`
/// runs once, and what it hands on is traded (as the trigger's fired ticks are) without an
/// RX→TX sample of this process's.
#[test]
fn finish_runs_once_on_every_exit_and_its_packets_are_traded() {
    /// How `recv` behaves.
    #[derive(Clone, Copy, PartialEq)]
    enum Recv {
        Nothing,
        Error,
        EndOfSession,
    }
    struct Finishing {
        recv: Recv,
        eos: Vec<u8>,
        /// Handed on in `finish`.
        held: Vec<u8>,
        finished: u32,
    }
    /// Takes the order as sent elsewhere (by the program), untimed.
    struct Elsewhere;
    impl OrderSink for Elsewhere {
        fn send(&mut self, _: &OrderRepr) -> bool {
            true
        }
        fn timed(&self) -> bool {
            false
        }
    }
    impl TraderIo for Finishing {
        fn recv<H: PacketHandler>(&mut self, _: usize, handler: &mut H) -> io::Result<usize> {
            match self.recv {
                Recv::Nothing => Ok(0),
                Recv::Error => Err(io::Error::other("device gone")),
                Recv::EndOfSession => {
                    // Real receive times: an end past the next number is believed when
                    // repeated after the feed has been silent for the gate's quiet time.
                    let now = afxdp::clock::now_ns();
                    handler.on_packet(
                        &self.eos,
                        Line::A,
                        None,
                        Sender::Program,
                        now,
                        &mut Elsewhere,
                    );
                    Ok(1)
                }
            }
        }
        fn finish<H: PacketHandler>(&mut self, handler: &mut H) {
            self.finished += 1;
            handler.on_packet(
                &self.held,
                Line::A,
                None,
                Sender::Program,
                0,
                &mut Elsewhere,
            );
        }
    }
    let (packets, _) = feed(1);
    for (recv, stop, want) in [
        (Recv::Nothing, true, Some(EndReason::Stopped)),
        (Recv::Nothing, false, Some(EndReason::IdleTimeout)),
        (Recv::EndOfSession, false, Some(EndReason::EndOfSession)),
        (Recv::Error, false, None),
    ] {
        let mut io = Finishing {
            recv,
            eos: packets[1].clone(),
            held: packets[0].clone(),
            finished: 0,
        };
        let mut t = trader();
        let mut h = Latency::new();
        let cfg = LoopConfig {
            idle_exit: Some(Duration::from_millis(10)),
            ..config(1)
        };
        let end = run(&mut io, &mut t, &mut h, cfg, &AtomicBool::new(stop));
        assert_eq!(end.as_ref().ok().map(|e| e.reason), want);
        assert_eq!(io.finished, 1);
        if recv == Recv::EndOfSession {
            // Handed on after the session's end: a late tick, counted, not traded.
            assert_eq!((t.counters.ticks, t.counters.late_messages), (0, 1));
        } else {
            assert_eq!(t.counters.ticks, 1, "the held tick was traded");
        }
        assert_eq!(h.summary().count, 0, "nothing this process sent was timed");
    }
}

/// Runs the whole feed through the queued fake with the logging clock; returns the trader, the
/// RX→TX histogram and the log.
fn logged_run(packets: Vec<Vec<u8>>, t: Trader, batch: usize) -> (Trader, Latency, Vec<Event>) {
    LOG.with(|l| l.borrow_mut().clear());
    // Near the real clock's now, so the loop's idle check (real time) stays sane.
    FAKE_NOW.with(|c| c.set(afxdp::clock::now_ns()));
    let mut io = FakeIo::<true> {
        incoming: packets.into(),
        fake_clock: true,
        ..FakeIo::default()
    };
    let mut t = t;
    let mut rx_to_tx = Latency::new();
    let end = run_with_clock(
        &mut io,
        &mut t,
        &mut rx_to_tx,
        config(batch),
        &AtomicBool::new(false),
        &fake_clock,
    )
    .unwrap();
    assert_eq!(end.reason, EndReason::EndOfSession);
    (t, rx_to_tx, LOG.with(|l| l.take()))
}

#[test]
fn one_clock_read_before_the_kick_and_the_tx_time_after_it() {
    let (packets, prices) = feed(300);
    let want = expected(&prices).len();
    for batch in [1, 16] {
        let (t, rx_to_tx, events) =
            logged_run(packets.clone(), trader().with_engine_sampling(0), batch);
        // Per packet: its RX time, then (for one with an order) its send and its kick, and
        // only then a clock read (the TX time); a packet without an order reads no clock.
        let packets_seen: Vec<&[Event]> = events.split(|e| *e == Event::Rx).skip(1).collect();
        // 300 ticks, the end of session and its repeat.
        assert_eq!(packets_seen.len(), 302);
        for p in &packets_seen {
            if let Some(k) = p.iter().position(|e| *e == Event::Kick) {
                assert_eq!(p[..k], [Event::Send], "no clock read before the kick");
                assert_eq!(p[k + 1..], [Event::Clock], "the TX time, after the kick");
            } else {
                assert!(p.is_empty(), "{p:?}");
            }
        }
        let kicks = events.iter().filter(|e| **e == Event::Kick).count();
        assert_eq!(
            kicks, want,
            "a kick per packet with an order (batch {batch})"
        );
        // Every TX time came after its kick, which takes KICK_NS on the fake clock.
        assert_eq!(rx_to_tx.len(), want as u64);
        assert!(
            rx_to_tx.summary().min_us * 1000.0 >= KICK_NS as f64 * 0.999,
            "{:?}",
            rx_to_tx.summary()
        );
        assert_eq!(t.engine().len(), 0, "sampling 0 never times the engine");
    }
}

#[test]
fn a_sampled_tick_reads_the_clock_twice_around_the_engine_and_nowhere_else() {
    let (packets, _) = feed(300);
    let (t, _, events) = logged_run(packets, trader().with_engine_sampling(10), 4);
    // Clock reads before a kick or the next packet's RX: only the engine's pairs.
    let clock_reads_not_after_a_kick = events
        .iter()
        .zip(std::iter::once(&Event::Rx).chain(&events))
        .filter(|(e, prev)| **e == Event::Clock && **prev != Event::Kick)
        .count();
    assert_eq!(t.engine().len(), 30, "ticks 1, 11, ..., 291");
    assert_eq!(clock_reads_not_after_a_kick, 2 * 30);
    // The engine samples were taken before the kick, not around it.
    assert!(t.engine().summary().max_us * 1000.0 < KICK_NS as f64);
}

#[test]
fn the_engine_samples_wait_for_settle() {
    let (packets, _) = feed(3);
    let mut t = trader().with_engine_sampling(1);
    t.on_packet(&packets[0], || 7, |_| true);
    assert_eq!(
        t.engine().len(),
        0,
        "nothing recorded before the orders are out"
    );
    t.settle();
    assert_eq!(t.engine().len(), 1);
    t.settle();
    assert_eq!(t.engine().len(), 1, "a sample is recorded once");
}

/// The trader's own account after the fake ring replayed `packets`.
fn account_after(packets: Vec<Vec<u8>>) -> (results::Account, Trader) {
    let mut io = FakeIo::<true> {
        incoming: packets.into(),
        ..FakeIo::default()
    };
    let mut t = trader();
    let mut h = Latency::new();
    run(&mut io, &mut t, &mut h, config(8), &AtomicBool::new(false)).unwrap();
    (t.account(), t)
}

#[test]
fn the_traders_account_is_the_batch_backtest_of_the_ticks_it_saw() {
    let (packets, prices) = feed(400);
    let (account, t) = account_after(packets);
    let params = Params::from_n(6).unwrap();
    let batch = engine::reference::backtest(&prices, &params).unwrap();
    assert_eq!(account.orders, t.counters.orders);
    assert_eq!(account.orders, expected(&prices).len() as u64);
    assert_eq!((account.trades, account.pnl), (batch.trades, batch.pnl));
    assert!(account.trades > 10, "{account:?}");
    // The position the loop ended with: the last signal's side.
    let last = expected(&prices).last().copied().unwrap();
    let side = if last.1 {
        results::Position::Long
    } else {
        results::Position::Short
    };
    assert_eq!(account.position, Some(side));
}

#[test]
fn a_lost_tick_makes_the_account_differ_from_the_backtest() {
    let (mut packets, prices) = feed(400);
    // Lose the tick of the fifth signal: the trader never sees its price.
    let (lost_seq, _) = expected(&prices)[4];
    packets.remove(lost_seq as usize - 1);
    let (account, t) = account_after(packets);
    assert_eq!(t.counters.gap_messages, 1);
    let params = Params::from_n(6).unwrap();
    let batch = engine::reference::backtest(&prices, &params).unwrap();
    assert_ne!((account.trades, account.pnl), (batch.trades, batch.pnl));
    // It is still the backtest of what the trader saw.
    let mut seen = prices.clone();
    seen.remove(lost_seq as usize - 1);
    let own = engine::reference::backtest(&seen, &params).unwrap();
    assert_eq!((account.trades, account.pnl), (own.trades, own.pnl));
}

#[test]
fn refused_orders_are_not_booked() {
    let (packets, prices) = feed(200);
    let mut io = FakeIo::<false> {
        incoming: packets.into(),
        refuse: 2,
        ..FakeIo::default()
    };
    let mut t = trader();
    let mut h = Latency::new();
    run(&mut io, &mut t, &mut h, config(1), &AtomicBool::new(false)).unwrap();
    let account = t.account();
    assert_eq!(account.orders, expected(&prices).len() as u64 - 2);
    assert_eq!(account.orders, t.counters.orders);
    let all = engine::reference::backtest(&prices, &Params::from_n(6).unwrap()).unwrap();
    assert_ne!(
        (account.trades, account.pnl),
        (all.trades, all.pnl),
        "the book holds what was sent, not what was decided"
    );
}

#[test]
fn an_a_b_wait_runs_out_on_time_with_no_packet_to_end_it() {
    let (packets, _) = feed(6);
    // 1, 2, 4 and no more (3 lost on both lines, no end of session): 4 waits for the other line.
    let incoming: VecDeque<Vec<u8>> = [0usize, 1, 3].iter().map(|&i| packets[i].clone()).collect();
    let mut io = FakeIo::<false> {
        incoming,
        ..FakeIo::default()
    };
    let mut t = trader().with_lines(2_000_000);
    let mut h = Latency::new();
    let cfg = LoopConfig {
        idle_exit: Some(Duration::from_millis(300)),
        ..config(1)
    };
    let end = run(&mut io, &mut t, &mut h, cfg, &AtomicBool::new(false)).unwrap();
    assert_eq!(end.reason, EndReason::IdleTimeout);
    t.finish();
    let c = t.counters;
    assert_eq!(
        (c.ticks, c.gap_messages, c.unconfirmed_packets),
        (3, 1, 0),
        "4 was traded when its 2 ms wait ran out, long before the idle exit: {c:?}"
    );
}

#[test]
fn a_stream_of_another_session_does_not_keep_the_trader_alive() {
    let (packets, _) = feed(5);
    let mut foreign = packets[0].clone();
    foreign[..10].copy_from_slice(b"ELSEWHERE ");
    let mut io = FakeIo::<false> {
        incoming: packets[..4].to_vec().into(),
        endless: Some(foreign),
        ..FakeIo::default()
    };
    let mut t = trader();
    let mut h = Latency::new();
    let cfg = LoopConfig {
        idle_exit: Some(Duration::from_millis(30)),
        ..config(1)
    };
    let end = run(&mut io, &mut t, &mut h, cfg, &AtomicBool::new(false)).unwrap();
    assert_eq!(end.reason, EndReason::IdleTimeout, "30 ms without the feed");
    assert_eq!(t.counters.ticks, 4);
    assert!(t.counters.wrong_session > 0);
}

/// A copy of `p` (a one-trade packet) at an absurd price: what a forger's tick looks like, so
/// an order for it is easy to find.
fn forged(p: &[u8]) -> Vec<u8> {
    let mut f = p.to_vec();
    let price = moldudp64::HEADER_LEN + 2 + wire::itch::trade::field::PRICE.start;
    f[price..price + 4].copy_from_slice(&999_990_000u32.to_be_bytes());
    f
}

/// Forgeries of the feed's next tick from another port and from another address: with the
/// source named, from the first packet on; learning it, from the moment the feed is confirmed
/// (the source is pinned then). None is read, each is counted by reason, and the real ticks
/// trade as if they never came.
#[test]
fn datagrams_from_a_source_nobody_named_are_counted_and_never_read() {
    let (packets, prices) = feed(40);
    let other_port = SocketAddrV4::new(*FEED.ip(), 40000);
    let other_addr = SocketAddrV4::new(Ipv4Addr::new(198, 18, 0, 5), 26404);
    for named in [true, false] {
        let mut incoming = VecDeque::new();
        let mut senders = VecDeque::new();
        // Learning, the feed is confirmed by its second packet.
        let first_forgery = if named { 0 } else { 2 };
        for (i, p) in packets.iter().enumerate() {
            // A forgery of this very tick ahead of it, from each stranger.
            if (first_forgery..30).contains(&i) {
                for from in [other_port, other_addr] {
                    incoming.push_back(forged(p));
                    senders.push_back(from);
                }
            }
            incoming.push_back(p.clone());
            senders.push_back(FEED);
        }
        let mut io = FakeIo::<false> {
            incoming,
            senders,
            ..FakeIo::default()
        };
        // Nothing pinned in the trader: it learns the session and the start too.
        let mut t = Trader::new(Params::from_n(6).unwrap(), Some(stock()));
        let mut h = Latency::new();
        let cfg = LoopConfig {
            sources: [named.then(|| FeedSource::exactly(FEED)), None],
            ..config(1)
        };
        let end = run(&mut io, &mut t, &mut h, cfg, &AtomicBool::new(false)).unwrap();
        assert_eq!(end.reason, EndReason::EndOfSession, "named: {named}");
        let c = t.counters;
        let unread = 2 * (30 - first_forgery as u64);
        assert_eq!(
            (
                c.foreign_source_port + c.foreign_source_addr,
                c.foreign_source_port
            ),
            (unread, unread / 2),
            "named: {named}: {c:?}"
        );
        assert!(
            io.sent.iter().all(|o| o.price.0 != 999_990_000),
            "an order for a forged tick (named: {named})"
        );
        // Every real tick traded, and exactly the offline strategy's orders went out.
        let want = expected(&prices);
        let got: Vec<(u64, bool)> = io
            .sent
            .iter()
            .map(|o| (o.tick_seq, o.side == wire::order::Side::Buy))
            .collect();
        // The session and start are learned either way: the first tick is held until the
        // second confirms it, then both trade.
        assert_eq!(c.ticks, 40, "{c:?}");
        assert_eq!(got, want, "named: {named}");
        let pins = if named {
            vec![]
        } else {
            vec![(Line::A, FeedSource::exactly(FEED))]
        };
        assert_eq!(io.pins, pins, "learned once, told to the I/O once");
    }
}

/// With the session and start pinned (`--session`, `--first-seq`) and the source learned, a
/// stranger who sends the feed's next packet first is traded once (the gate can't tell it
/// from the feed's), but does not take the line: the feed's own second packet in sequence
/// does, and the stranger's next datagram is counted and never read.
#[test]
fn one_strangers_packet_before_the_feed_never_takes_a_learning_line() {
    let (packets, _) = feed(10);
    let stranger = SocketAddrV4::new(Ipv4Addr::new(198, 18, 0, 5), 26404);
    let mut incoming: VecDeque<_> = packets.iter().cloned().collect();
    let mut senders: VecDeque<_> = std::iter::repeat_n(FEED, packets.len()).collect();
    incoming.push_front(forged(&packets[0]));
    senders.push_front(stranger);
    // The stranger again, continuing its own first packet, once the feed flows.
    incoming.insert(4, forged(&packets[1]));
    senders.insert(4, stranger);
    let mut io = FakeIo::<false> {
        incoming,
        senders,
        ..FakeIo::default()
    };
    let mut t = trader();
    let cfg = LoopConfig {
        sources: [None, None],
        ..config(1)
    };
    let end = run(
        &mut io,
        &mut t,
        &mut Latency::new(),
        cfg,
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(end.reason, EndReason::EndOfSession);
    assert_eq!(io.pins, vec![(Line::A, FeedSource::exactly(FEED))]);
    let c = t.counters;
    assert_eq!((c.foreign_source_addr, c.ticks), (1, 10), "{c:?}");
}

/// Line B of an A/B feed, learning its source: its copies come after line A's (every message
/// a duplicate by then), and still name line B's source: pinned, told to the I/O, and from
/// then on a stranger on line B is counted and never read.
#[test]
fn line_b_learns_its_source_from_copies_of_what_line_a_brought() {
    let (packets, prices) = feed(40);
    let line_b = SocketAddrV4::new(*FEED.ip(), 26405);
    let stranger = SocketAddrV4::new(Ipv4Addr::new(198, 18, 0, 5), 26405);
    let mut incoming = VecDeque::new();
    let mut senders = VecDeque::new();
    let mut lines = VecDeque::new();
    for (i, p) in packets.iter().enumerate() {
        incoming.push_back(p.clone());
        senders.push_back(FEED);
        lines.push_back(Line::A);
        if i < 5 {
            // Line B's copy, after line A's.
            incoming.push_back(p.clone());
            senders.push_back(line_b);
            lines.push_back(Line::B);
        } else if i < 25 {
            // Once both are pinned, a stranger on line B, ahead of the real copy.
            incoming.push_back(forged(&packets[i + 1]));
            senders.push_back(stranger);
            lines.push_back(Line::B);
        }
    }
    let mut io = FakeIo::<false> {
        incoming,
        senders,
        lines,
        ..FakeIo::default()
    };
    let mut t = trader().with_lines(2_000_000);
    let mut h = Latency::new();
    let cfg = LoopConfig {
        sources: [Some(FeedSource::exactly(FEED)), None],
        ..config(1)
    };
    let end = run(&mut io, &mut t, &mut h, cfg, &AtomicBool::new(false)).unwrap();
    assert_eq!(end.reason, EndReason::EndOfSession);
    assert_eq!(io.pins, vec![(Line::B, FeedSource::exactly(line_b))]);
    let c = t.counters;
    assert_eq!(
        (c.foreign_source_addr, c.foreign_source_port),
        (20, 0),
        "{c:?}"
    );
    assert!(io.sent.iter().all(|o| o.price.0 != 999_990_000));
    let got: Vec<(u64, bool)> = io
        .sent
        .iter()
        .map(|o| (o.tick_seq, o.side == wire::order::Side::Buy))
        .collect();
    assert_eq!(got, expected(&prices));
}
