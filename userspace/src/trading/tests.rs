//! The loop against a fake ring: no sockets, no root.
use std::{collections::VecDeque, io, sync::atomic::AtomicBool, time::Duration};

use engine::Params;
use results::EndReason;
use wire::{
    itch::{Price4, Stock},
    moldudp64::{self, PacketBuilder, Session},
    order::OrderRepr,
};

use super::{LoopConfig, OrderSink, PacketHandler, TraderIo, run};
use crate::{
    stats::Latency,
    t2t::{Trader, trade_message},
};

/// Packets in, orders out, in memory. With `QUEUE`, orders wait for `flush` like AF_XDP's.
#[derive(Default)]
struct FakeIo<const QUEUE: bool> {
    incoming: VecDeque<Vec<u8>>,
    /// Orders that left (at send, or at flush when queued).
    sent: Vec<OrderRepr>,
    queued: Vec<OrderRepr>,
    /// Refuse this many sends first.
    refuse: usize,
    fail_flush: bool,
    flushes: usize,
    idles: usize,
    turns: Vec<usize>,
}

struct FakeSink<'a> {
    out: &'a mut Vec<OrderRepr>,
    refuse: &'a mut usize,
}

impl OrderSink for FakeSink<'_> {
    fn send(&mut self, order: &OrderRepr) -> bool {
        if *self.refuse > 0 {
            *self.refuse -= 1;
            return false;
        }
        self.out.push(*order);
        true
    }
}

impl<const QUEUE: bool> TraderIo for FakeIo<QUEUE> {
    const QUEUES_ORDERS: bool = QUEUE;

    fn recv<H: PacketHandler>(&mut self, max: usize, handler: &mut H) -> io::Result<usize> {
        let mut n = 0;
        while n < max {
            let Some(p) = self.incoming.pop_front() else {
                break;
            };
            let out = if QUEUE {
                &mut self.queued
            } else {
                &mut self.sent
            };
            handler.on_packet(
                &p,
                crate::clock::now_ns(),
                &mut FakeSink {
                    out,
                    refuse: &mut self.refuse,
                },
            );
            n += 1;
        }
        if n > 0 {
            self.turns.push(n);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flushes += 1;
        if self.fail_flush {
            return Err(io::Error::other("kick failed"));
        }
        self.sent.append(&mut self.queued);
        Ok(())
    }

    fn idle(&mut self) {
        self.idles += 1;
    }
}

fn stock() -> Stock {
    Stock::new(netns::lab::STOCK).unwrap()
}

fn session() -> Session {
    Session::new(netns::lab::SESSION).unwrap()
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

fn trader() -> Trader {
    Trader::new(Params::from_n(6).unwrap(), Some(stock()))
}

fn config(batch: usize) -> LoopConfig {
    LoopConfig {
        batch,
        idle_exit: Some(Duration::from_secs(5)),
        spinning: false,
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
    assert_eq!(t.engine.len(), 400);
    assert!(io.turns.iter().all(|&n| n <= batch.max(1)));
    if Q {
        assert!(io.queued.is_empty(), "everything queued was flushed");
    } else {
        assert_eq!(
            io.flushes, 0,
            "a socket's sends don't queue: nothing to flush"
        );
    }
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
    assert_eq!(t.counters.tx_flush_failed, io.flushes as u64);
    assert!(io.flushes > 0);
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
        const QUEUES_ORDERS: bool = false;
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
