//! The exchange without a lab: a small synthetic feed, orders written by hand or by a fake
//! trader behind a fake port, time from a clock that steps.
use std::{cell::RefCell, collections::HashMap, io, rc::Rc};

use paths::Expect;
use results::ParityVerdict;
use wire::{
    itch::{Price4, Stock},
    moldudp64,
    order::OrderRepr,
};

use super::*;
use crate::feed::{Feed, Source};

/// Strategy length of the tests (the lab's default).
const N: i64 = 6;

pub(crate) fn stock() -> Stock {
    Stock::new("SYNTH").unwrap()
}

/// A GBM feed of `bars` trades, `batch` messages a packet.
fn feed(bars: usize, batch: u16) -> Feed {
    Feed::build(&Source::Gbm { seed: 42, bars }, None, batch, stock()).unwrap()
}

fn exchange(feed: &Feed, expect: Expect) -> Exchange<'_> {
    Exchange::new(feed, engine::Params::from_n(N).unwrap(), expect, stock()).unwrap()
}

/// The order a correct trader sends for `e`: the tick's price, REVERSE once a position is open
/// (and then two lots, one to close and one to open).
pub(crate) fn order(ex: &Exchange<'_>, e: ExpectedOrder, reverse: bool) -> OrderRepr {
    OrderRepr {
        side: e.side,
        reverse,
        shares: if reverse { 200 } else { 100 },
        token: e.seq,
        tick_seq: e.seq,
        price: ex.schedule.price(e.seq).unwrap(),
        stock: stock(),
    }
}

pub(crate) fn bytes(o: &OrderRepr) -> Vec<u8> {
    let mut b = vec![0; wire::order::LEN];
    o.emit_into(&mut b).unwrap();
    b
}

/// Sends packets `0..n`, scheduled 1 µs apart.
fn send(ex: &mut Exchange<'_>, n: usize) {
    for i in 0..n {
        ex.sent(i, 1_000_000 + 1_000 * i as u64);
    }
}

/// Answers every expected order (of the ticks that went out) correctly, except `skip`; each
/// arrives 5 µs after the last send.
fn answer(ex: &mut Exchange<'_>, skip: Option<usize>) {
    let now = 1_000_000 + 1_000 * ex.feed().packets.len() as u64 + 5_000;
    for (k, e) in ex.expected.clone().into_iter().enumerate() {
        if Some(k) != skip {
            let o = bytes(&order(ex, e, k > 0));
            ex.receive(&o, now);
        }
    }
}

#[test]
fn a_correct_trader_has_exact_parity() {
    let f = feed(400, 1);
    let mut ex = exchange(&f, Expect::Signals);
    assert!(
        ex.expected_orders() > 10,
        "the strategy trades on this feed"
    );
    send(&mut ex, f.packets.len());
    answer(&mut ex, None);
    let expected = ex.expected_orders();
    let s = ex.settle();
    assert_eq!(
        s.parity.verdict,
        ParityVerdict::Ok,
        "{}",
        s.parity.explanation
    );
    assert!(s.parity.ok());
    assert_eq!(s.parity.live_pnl, s.parity.batch_pnl);
    assert_eq!(s.parity.live_trades, s.parity.batch_trades);
    assert_eq!(s.parity.expected_orders, expected);
    assert_eq!(s.orders.received, expected);
    assert_eq!(s.tick_to_trade.len(), expected);
    assert_eq!(s.parity.explanation, ParityVerdict::Ok.to_string());
    assert_eq!(s.sent.messages, f.messages);
}

#[test]
fn a_lost_order_diverges_at_its_tick() {
    let f = feed(400, 1);
    let mut ex = exchange(&f, Expect::Signals);
    send(&mut ex, f.packets.len());
    let lost = ex.expected[3].seq;
    answer(&mut ex, Some(3));
    let s = ex.settle();
    assert_eq!(
        s.parity.verdict,
        ParityVerdict::Diverged {
            first_divergence: lost,
            missing_orders: 1
        }
    );
    assert!(s.parity.explanation.contains(&format!("seq {lost}")));
}

#[test]
fn a_wrong_price_is_an_order_fault() {
    let f = feed(400, 1);
    let mut ex = exchange(&f, Expect::Signals);
    send(&mut ex, f.packets.len());
    let e = ex.expected[0];
    let mut o = order(&ex, e, false);
    o.price = Price4(o.price.0 + 1);
    ex.receive(&bytes(&o), 2_000_000);
    answer(&mut ex, Some(0));
    let s = ex.settle();
    assert_eq!(
        s.parity.verdict,
        ParityVerdict::OrderFaults {
            price_mismatch: 1,
            reverse_mismatch: 0,
            malformed: 0,
            unknown_tick: 0,
            duplicate: 0,
            shares_mismatch: 0,
            stock_mismatch: 0,
        }
    );
    // The order is taken and booked at its tick's price, not its own.
    assert_eq!(s.orders.received, s.parity.expected_orders);
    assert_eq!(s.parity.live_pnl, s.parity.batch_pnl);
}

#[test]
fn a_wrong_reverse_flag_malformed_bytes_and_unknown_ticks_are_faults() {
    let f = feed(400, 1);
    let mut ex = exchange(&f, Expect::Signals);
    send(&mut ex, f.packets.len());
    let e = ex.expected[0];
    // The first order claims a position was open.
    ex.receive(&bytes(&order(&ex, e, true)), 2_000_000);
    answer(&mut ex, Some(0));
    ex.receive(&[b'O'; 10], 2_000_000);
    let mut stray = order(&ex, e, false);
    stray.tick_seq = f.messages + 100;
    ex.receive(&bytes(&stray), 2_000_000);
    let s = ex.settle();
    assert_eq!(
        s.parity.verdict,
        ParityVerdict::OrderFaults {
            price_mismatch: 0,
            reverse_mismatch: 1,
            malformed: 1,
            unknown_tick: 1,
            duplicate: 0,
            shares_mismatch: 0,
            stock_mismatch: 0,
        }
    );
    assert_eq!(s.orders.reverse_mismatch, 1);
}

#[test]
fn a_duplicate_is_counted_not_booked_twice_and_fails_parity() {
    let f = feed(400, 1);
    let mut ex = exchange(&f, Expect::Signals);
    send(&mut ex, f.packets.len());
    answer(&mut ex, None);
    let e = ex.expected[2];
    ex.receive(&bytes(&order(&ex, e, true)), 9_000_000);
    let expected = ex.expected_orders();
    let s = ex.settle();
    assert_eq!(s.orders.duplicate, 1);
    assert_eq!(s.orders.received, expected);
    assert_eq!(s.tick_to_trade.len(), expected, "one latency per tick");
    // The same latencies, split by the tick's tenth of the feed.
    assert_eq!(s.tick_to_trade_tenths.len(), crate::TENTHS);
    assert_eq!(
        s.tick_to_trade_tenths.iter().map(|l| l.len()).sum::<u64>(),
        expected
    );
    assert!(
        s.tick_to_trade_tenths
            .iter()
            .filter(|l| !l.is_empty())
            .count()
            > 1,
        "orders from across the feed land in several tenths"
    );
    // Booked once: the PnL is the backtest's, but a correct trader never sends it.
    assert_eq!(s.parity.live_pnl, s.parity.batch_pnl);
    assert!(
        matches!(
            s.parity.verdict,
            ParityVerdict::OrderFaults {
                duplicate: 1,
                price_mismatch: 0,
                ..
            }
        ),
        "{}",
        s.parity.explanation
    );
    assert!(!s.parity.ok());
    assert!(s.parity.explanation.contains("1 duplicates"));
}

#[test]
fn a_wrong_share_count_or_stock_is_an_order_fault() {
    let f = feed(400, 1);
    let mut ex = exchange(&f, Expect::Signals);
    send(&mut ex, f.packets.len());
    let (first, second) = (ex.expected[0], ex.expected[1]);
    // One lot where a reversal needs two.
    let mut short = order(&ex, second, true);
    short.shares = 100;
    ex.receive(&bytes(&short), 2_000_000);
    // The right tick, another stock.
    let mut other = order(&ex, first, false);
    other.stock = Stock::new("OTHER").unwrap();
    ex.receive(&bytes(&other), 2_000_000);
    let before = ex.orders();
    assert_eq!((before.shares_mismatch, before.stock_mismatch), (1, 1));
    let skip: Vec<usize> = vec![0, 1];
    let now = 9_000_000;
    for (k, e) in ex.expected.clone().into_iter().enumerate() {
        if !skip.contains(&k) {
            ex.receive(&bytes(&order(&ex, e, true)), now);
        }
    }
    let s = ex.settle();
    assert_eq!(
        s.parity.verdict,
        ParityVerdict::OrderFaults {
            price_mismatch: 0,
            reverse_mismatch: 0,
            malformed: 0,
            unknown_tick: 0,
            duplicate: 0,
            shares_mismatch: 1,
            stock_mismatch: 1,
        },
        "{}",
        s.parity.explanation
    );
}

#[test]
fn no_expected_order_is_nothing_to_check_not_ok() {
    // Fewer ticks than the strategy needs for its first signal.
    let f = feed(4, 1);
    let mut ex = exchange(&f, Expect::Signals);
    assert_eq!(ex.expected_orders(), 0);
    send(&mut ex, f.packets.len());
    let s = ex.settle();
    assert_eq!(
        s.parity.verdict,
        ParityVerdict::NothingToCheck {
            ticks: f.ticks.len() as u64
        }
    );
    assert!(!s.parity.ok());
    assert!(s.parity.explanation.contains("nothing to check"));
    assert!(s.tick_to_trade.is_empty());

    // An order nobody expected is still a divergence, not "nothing to check".
    let mut ex = exchange(&f, Expect::Signals);
    send(&mut ex, f.packets.len());
    let stray = ExpectedOrder {
        seq: f.ticks[2].seq,
        side: Side::Buy,
    };
    ex.receive(&bytes(&order(&ex, stray, false)), 9_000_000);
    let s = ex.settle();
    assert!(
        matches!(s.parity.verdict, ParityVerdict::Diverged { .. }),
        "{}",
        s.parity.explanation
    );
}

#[test]
fn a_run_stopped_early_expects_only_what_went_out() {
    let f = feed(400, 4);
    let mut ex = exchange(&f, Expect::Signals);
    let all = ex.expected.clone();
    let half = f.packets.len() / 2;
    send(&mut ex, half);
    let last = f.packets[half - 1];
    let end = last.first_seq + u64::from(last.messages);
    assert_eq!(ex.session_end(), end);
    ex.finish_sending();
    let kept = all.iter().filter(|e| e.seq < end).count() as u64;
    assert!(kept > 0 && kept < all.len() as u64);
    assert_eq!(ex.expected_orders(), kept);
    answer(&mut ex, None);
    assert!(!ex.awaiting_orders());
    // An order for a tick never sent names an unknown tick.
    ex.receive(&bytes(&order(&ex, all[all.len() - 1], true)), 9_000_000);
    assert_eq!(ex.orders().unknown_tick, 1);
    let s = ex.settle();
    assert_eq!(s.parity.expected_orders, kept);
    assert!(matches!(
        s.parity.verdict,
        ParityVerdict::OrderFaults {
            unknown_tick: 1,
            ..
        }
    ));

    // Without the stray order: not all sent.
    let mut ex = exchange(&f, Expect::Signals);
    send(&mut ex, half);
    ex.refused(half);
    ex.finish_sending();
    answer(&mut ex, None);
    let s = ex.settle();
    assert_eq!(
        s.parity.verdict,
        ParityVerdict::NotAllSent {
            sent_messages: end - 1,
            feed_messages: f.messages,
            send_dropped: u64::from(f.packets[half].messages)
        }
    );
    // The ledger closes at the last tick that went out, as a backtest of those ticks would.
    let sent: Vec<f64> = f.ticks[..(end - 1) as usize]
        .iter()
        .map(|t| t.price.to_f64())
        .collect();
    let mut strategy = engine::Strategy::new(engine::Params::from_n(N).unwrap());
    for &p in &sent {
        strategy.on_tick(p);
    }
    strategy.finish();
    assert_eq!(s.parity.live_pnl, strategy.result().pnl);
    assert_eq!(s.parity.live_trades, strategy.result().trades);
}

#[test]
fn the_reflector_has_no_parity_to_check() {
    let f = feed(50, 1);
    let mut ex = exchange(&f, Expect::Every);
    assert_eq!(ex.expected_orders(), f.ticks.len() as u64);
    send(&mut ex, f.packets.len());
    answer(&mut ex, Some(0));
    let s = ex.settle();
    assert_eq!(
        s.parity.verdict,
        ParityVerdict::NotApplicable {
            answered: f.ticks.len() as u64 - 1,
            ticks: f.ticks.len() as u64
        }
    );
    assert!(!s.parity.ok());
}

/// What the fake port saw and what it has to deliver, shared with the test.
#[derive(Default)]
pub(crate) struct Wire {
    /// Order datagrams by the tick sequence number that triggers them.
    answers: HashMap<u64, Vec<u8>>,
    inbox: Vec<Vec<u8>>,
    /// Everything sent, in order.
    pub(crate) sent: Vec<Vec<u8>>,
    /// Send attempts so far.
    tries: usize,
    /// Send attempt to refuse with `WouldBlock`.
    pub(crate) refuse: Option<usize>,
}

/// A trader that answers each tick it sees with a prepared order, at once.
pub(crate) struct FakePort(Rc<RefCell<Wire>>);

impl Port for FakePort {
    fn send(&mut self, payload: &[u8]) -> io::Result<()> {
        let mut w = self.0.borrow_mut();
        w.tries += 1;
        if w.refuse == Some(w.tries - 1) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        w.sent.push(payload.to_vec());
        let p = moldudp64::Packet::new_checked(payload).unwrap();
        if !p.is_end_of_session() {
            for seq in p.sequence()..p.sequence() + u64::from(p.block_count()) {
                if let Some(a) = w.answers.remove(&seq) {
                    w.inbox.push(a);
                }
            }
        }
        Ok(())
    }

    fn recv_each(&mut self, buf: &mut [u8], mut f: impl FnMut(&[u8], Option<u64>) -> crate::Took) {
        let inbox = std::mem::take(&mut self.0.borrow_mut().inbox);
        for d in inbox {
            buf[..d.len()].copy_from_slice(&d);
            let _ = f(&buf[..d.len()], None);
        }
    }
}

/// A clock that moves `step` ns each time it is read.
pub(crate) struct Steps {
    now: u64,
    step: u64,
}

impl Clock for Steps {
    fn now_ns(&mut self) -> u64 {
        self.now += self.step;
        self.now
    }
}

/// A fake trader answering every expected order of `ex` correctly, and a driver over it.
pub(crate) fn lab(ex: &Exchange<'_>, step: u64) -> (Rc<RefCell<Wire>>, Driver<FakePort, Steps>) {
    let wire = Rc::new(RefCell::new(Wire::default()));
    for (k, &e) in ex.expected.iter().enumerate() {
        let o = bytes(&order(ex, e, k > 0));
        wire.borrow_mut().answers.insert(e.seq, o);
    }
    let driver = Driver::new(
        FakePort(Rc::clone(&wire)),
        Steps {
            now: 1_000_000_000,
            step,
        },
    );
    (wire, driver)
}

#[test]
fn paced_sends_keep_their_schedule_and_the_run_settles_with_parity() {
    let f = feed(300, 1);
    let mut ex = exchange(&f, Expect::Signals);
    let (wire, mut d) = lab(&ex, 1_000);
    let run = d
        .send_feed(&mut ex, Rate::PerSec(1000.0), || false, |_| {})
        .unwrap();
    assert_eq!(run.late_sends, 0);
    // Open loop: message k is due k ms after the start.
    for (k, t) in f.ticks.iter().enumerate() {
        assert_eq!(
            ex.schedule.sent_at(t.seq),
            Some(run.start_ns + k as u64 * 1_000_000)
        );
    }
    assert!(run.seconds() >= 0.299, "{run:?}");
    d.drain(&mut ex, 1_000_000, || false);
    assert!(!ex.awaiting_orders());
    d.end_session(&ex);
    let w = wire.borrow();
    assert_eq!(w.sent.len(), f.packets.len() + 3);
    for eos in &w.sent[f.packets.len()..] {
        let p = moldudp64::Packet::new_checked(&eos[..]).unwrap();
        assert!(p.is_end_of_session());
        assert_eq!(p.sequence(), f.messages + 1);
    }
    drop(w);
    let s = ex.settle();
    assert_eq!(
        s.parity.verdict,
        ParityVerdict::Ok,
        "{}",
        s.parity.explanation
    );
    // Each order came back the moment its tick went out: within a few clock steps.
    assert!(s.tick_to_trade.summary().max_us < 10.0);
}

#[test]
fn a_refused_send_keeps_the_schedule_and_is_not_sent() {
    let f = feed(40, 1);
    let mut ex = exchange(&f, Expect::Every);
    let (wire, mut d) = lab(&ex, 1_000);
    wire.borrow_mut().refuse = Some(2);
    let run = d
        .send_feed(&mut ex, Rate::PerSec(1000.0), || false, |_| {})
        .unwrap();
    assert_eq!(ex.schedule.sent_at(f.ticks[2].seq), None);
    assert_eq!(
        ex.schedule.sent_at(f.ticks[3].seq),
        Some(run.start_ns + 3_000_000)
    );
    d.drain(&mut ex, 1_000_000, || false);
    assert_eq!(ex.expected_orders(), f.ticks.len() as u64 - 1);
    let s = ex.settle();
    assert_eq!(s.sent.dropped, 1);
    assert_eq!(s.sent.messages, f.messages - 1);
    assert_eq!(s.orders.received, f.ticks.len() as u64 - 1);
}

#[test]
fn a_slow_sender_counts_late_sends() {
    let f = feed(20, 1);
    let mut ex = exchange(&f, Expect::Every);
    // Every clock read takes 50 µs: past each 1 µs period at once.
    let (_wire, mut d) = lab(&ex, 50_000);
    let run = d
        .send_feed(&mut ex, Rate::PerSec(1e6), || false, |_| {})
        .unwrap();
    assert!(run.late_sends >= f.packets.len() as u64 - 1, "{run:?}");
    // As fast as it goes: each packet is due when the sender gets to it, never late.
    let mut ex = exchange(&f, Expect::Every);
    let (_wire, mut d) = lab(&ex, 1_000);
    let run = d.send_feed(&mut ex, Rate::Max, || false, |_| {}).unwrap();
    assert_eq!(run.late_sends, 0);
}

#[test]
fn a_stop_ends_sending_and_the_session_after_the_last_message_sent() {
    let f = feed(300, 1);
    let mut ex = exchange(&f, Expect::Signals);
    let (wire, mut d) = lab(&ex, 1_000);
    let polls = std::cell::Cell::new(0u64);
    // Stop after the first 100 ms or so of busy-waiting.
    let stopped = || {
        polls.set(polls.get() + 1);
        polls.get() > 100_000
    };
    d.send_feed(&mut ex, Rate::PerSec(1000.0), stopped, |_| {})
        .unwrap();
    let sent = ex.sent.messages;
    assert!(sent > 10 && sent < f.messages, "{sent}");
    d.drain(&mut ex, 1_000_000, || false);
    d.end_session(&ex);
    let eos = wire.borrow().sent.last().unwrap().clone();
    let p = moldudp64::Packet::new_checked(&eos[..]).unwrap();
    assert_eq!(p.sequence(), sent + 1);
    let s = ex.settle();
    assert_eq!(
        s.parity.verdict,
        ParityVerdict::NotAllSent {
            sent_messages: sent,
            feed_messages: f.messages,
            send_dropped: 0
        }
    );
    assert_eq!(s.orders.received, s.parity.expected_orders);
}

#[test]
fn progress_comes_about_once_a_second_of_schedule() {
    let f = feed(3000, 1);
    let mut ex = exchange(&f, Expect::Every);
    let (_wire, mut d) = lab(&ex, 10_000);
    let mut seen = Vec::new();
    d.send_feed(&mut ex, Rate::PerSec(1000.0), || false, |p| seen.push(p))
        .unwrap();
    // 3 s of schedule: reports after the first and second second.
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.iter().all(|p| p.packets == f.packets.len()));
    assert!(
        seen[0].packets_done > 990 && seen[0].packets_done < 1010,
        "{seen:?}"
    );
}

#[test]
fn each_message_of_a_batched_packet_is_due_at_its_own_time_and_the_packet_at_its_last() {
    // 4 messages per packet at 1,000/s: message k is due k ms after the start, and a packet
    // leaves when its last message is due (not its first: later messages would leave early).
    let f = feed(40, 4);
    let mut ex = exchange(&f, Expect::Signals);
    let (wire, mut d) = lab(&ex, 1_000);
    let run = d
        .send_feed(&mut ex, Rate::PerSec(1000.0), || false, |_| {})
        .unwrap();
    assert_eq!(run.late_sends, 0);
    for (k, t) in f.ticks.iter().enumerate() {
        assert_eq!(
            ex.schedule.sent_at(t.seq),
            Some(run.start_ns + k as u64 * 1_000_000),
            "message {k}"
        );
    }
    let sent: Vec<u64> = ex.schedule.sent_packets(&f).map(|(t, _)| t).collect();
    assert_eq!(sent.len(), f.packets.len());
    for (i, t) in sent.iter().enumerate() {
        let last = (i as u64 + 1) * 4 - 1;
        assert_eq!(*t, run.start_ns + last * 1_000_000, "packet {i}");
    }
    drop(wire);
}

#[test]
fn a_kernel_stamped_order_counts_to_its_arrival_and_the_harness_delay_is_shown_apart() {
    let f = feed(300, 1);
    let mut ex = exchange(&f, Expect::Signals);
    for i in 0..f.packets.len() {
        ex.sent(i, 1_000);
    }
    let e = ex.expected[0];
    // Arrived 4 µs after it was due; the replay read it 6 µs later still (a send, a
    // preemption): tick-to-trade is 4 µs, the harness's own delay 6 µs, seen 10 µs.
    ex.receive_stamped(&bytes(&order(&ex, e, false)), 5_000, 11_000);
    let s = ex.settle();
    let us = |l: &Latency| l.summary().max_us;
    assert!((us(&s.tick_to_trade) - 4.0).abs() < 0.01);
    assert!((us(&s.harness_delay) - 6.0).abs() < 0.01);
    assert!((us(&s.tick_to_trade_seen) - 10.0).abs() < 0.01);
    assert_eq!(s.harness_delay.len(), 1);
}

/// A feed numbered from `first` (the lab's session).
fn numbered(bars: usize, first: u64) -> anyhow::Result<Feed> {
    Feed::build_numbered(
        &Source::Gbm { seed: 42, bars },
        None,
        1,
        stock(),
        moldudp64::Session::new(paths::market::SESSION).unwrap(),
        first,
    )
}

#[test]
fn feeds_numbered_from_zero_or_two_to_the_forty_keep_parity() {
    for first in [0, 1 << 40, u64::MAX - 299] {
        let f = numbered(300, first).unwrap();
        assert_eq!((f.first_seq, f.messages), (first, 300));
        assert_eq!(f.ticks.last().unwrap().seq, first + 299);
        let mut ex = exchange(&f, Expect::Signals);
        send(&mut ex, f.packets.len());
        assert_eq!(ex.session_end(), first.saturating_add(300));
        answer(&mut ex, None);
        let s = ex.settle();
        assert!(s.parity.ok(), "first {first}: {:?}", s.parity);
    }
}

#[test]
fn numbering_past_the_top_is_an_error_not_a_wrap() {
    let e = numbered(300, u64::MAX - 10).unwrap_err();
    assert!(e.to_string().contains("2^64"), "{e}");
}

#[test]
fn a_stray_huge_sequence_number_costs_one_entry_not_its_span() {
    let mut f = numbered(300, 1).unwrap();
    // One more packet, numbered near the top, as a capture could hold.
    let stray = f.packets[0];
    let mut bytes = f.packet(0).to_vec();
    moldudp64::Packet::new_unchecked(&mut bytes[..]).set_sequence(u64::MAX - 1);
    let start = f.bytes.len();
    f.bytes.extend_from_slice(&bytes);
    f.packets.push(crate::feed::PacketMeta {
        start,
        end: f.bytes.len(),
        first_seq: u64::MAX - 1,
        messages: stray.messages,
    });
    f.messages += 1;
    let ex = exchange(&f, Expect::Signals);
    // Dense would have been 2^64 entries; the index holds the 301 numbers there are.
    assert_eq!(ex.schedule.len(), 301);
    assert_eq!(
        ex.schedule.price(u64::MAX - 1),
        None,
        "not a tick of the feed"
    );
    assert!(ex.schedule.price(300).is_some());
}

#[test]
fn a_capture_spanning_every_sequence_number_is_indexed_without_overflow() {
    let mut f = numbered(300, 0).unwrap();
    let mut bytes = f.packet(0).to_vec();
    moldudp64::Packet::new_unchecked(&mut bytes[..]).set_sequence(u64::MAX);
    let start = f.bytes.len();
    f.bytes.extend_from_slice(&bytes);
    f.packets.push(crate::feed::PacketMeta {
        start,
        end: f.bytes.len(),
        first_seq: u64::MAX,
        messages: 1,
    });
    let ex = exchange(&f, Expect::Signals);
    assert_eq!(ex.schedule.len(), 301, "0..300 and 2^64 - 1");
}

#[test]
fn a_feed_without_trades_of_the_stock_has_nothing_to_check() {
    let mut f = feed(300, 1);
    f.ticks.clear();
    let mut ex = exchange(&f, Expect::Signals);
    send(&mut ex, f.packets.len());
    let s = ex.settle();
    assert!(
        matches!(s.parity.verdict, ParityVerdict::NothingToCheck { ticks: 0 }),
        "{:?}",
        s.parity
    );
}

#[test]
fn an_order_stamped_before_its_tick_was_due_is_booked_but_not_timed() {
    let f = feed(400, 1);
    let mut ex = exchange(&f, Expect::Signals);
    send(&mut ex, f.packets.len());
    let (early, on_time) = (ex.expected[0], ex.expected[1]);
    // Due at 1 ms + 1 µs × its packet; the first order's stamp lands before that.
    ex.receive(&bytes(&order(&ex, early, false)), 999_000);
    ex.receive(&bytes(&order(&ex, on_time, true)), 2_000_000);
    let s = ex.settle();
    assert_eq!(s.orders.received, 2);
    assert_eq!(s.orders.stamped_before_due, 1);
    assert_eq!(
        s.tick_to_trade.summary().count,
        1,
        "never a 0 in the figures"
    );
    assert!(s.tick_to_trade.summary().min_us > 900.0);
    assert_eq!(s.tick_to_trade_seen.summary().count, 1);
    assert!(
        s.tick_to_trade_tenths
            .iter()
            .map(|l| l.summary().count)
            .sum::<u64>()
            == 1
    );
}

#[test]
fn tick_to_trade_from_the_send_leaves_the_senders_lateness_out() {
    let f = feed(400, 1);
    let mut ex = exchange(&f, Expect::Signals);
    let e = ex.expected[0];
    let i = f
        .packets
        .iter()
        .position(|p| p.sequences().any(|s| s == e.seq))
        .unwrap();
    // Due at 1.000 ms, the loop started its send 3 µs late, the order came 2 µs after that.
    ex.sent_paced(i, |_| 1_000_000);
    ex.send_started(i, 1_003_000);
    ex.receive(&bytes(&order(&ex, e, false)), 1_005_000);
    let s = ex.settle();
    assert_eq!(s.tick_to_trade.summary().count, 1);
    assert!(
        (s.tick_to_trade.summary().max_us - 5.0).abs() < 0.01,
        "from the schedule"
    );
    let from_send = s.tick_to_trade_from_send.summary();
    assert_eq!(from_send.count, 1);
    assert!(
        (from_send.max_us - 2.0).abs() < 0.01,
        "from the send: {from_send:?}"
    );
}

/// The clock's reading, and the readings at each send and each poll.
#[derive(Default)]
struct Notes {
    now: u64,
    sends: Vec<u64>,
    polls: Vec<u64>,
}

/// [`Notes`], shared by a clock and a port.
#[derive(Clone, Default)]
struct Shared(Rc<RefCell<Notes>>);

/// A clock moving 100 ns a read, on [`Shared`].
struct SharedSteps(Shared);

impl Clock for SharedSteps {
    fn now_ns(&mut self) -> u64 {
        let mut n = self.0.0.borrow_mut();
        n.now += 100;
        n.now
    }
}

/// A port that takes nothing, noting the clock at each send and each poll.
struct Noting(Shared);

impl Port for Noting {
    fn send(&mut self, _: &[u8]) -> io::Result<()> {
        let mut n = self.0.0.borrow_mut();
        let now = n.now;
        n.sends.push(now);
        Ok(())
    }

    fn recv_each(&mut self, _: &mut [u8], _: impl FnMut(&[u8], Option<u64>) -> crate::Took) {
        let mut n = self.0.0.borrow_mut();
        let now = n.now;
        n.polls.push(now);
    }
}

#[test]
fn no_order_is_taken_in_the_last_stretch_before_a_send() {
    let f = feed(60, 1);
    let mut ex = exchange(&f, Expect::Signals);
    let shared = Shared::default();
    shared.0.borrow_mut().now = 1_000_000_000;
    let mut d = Driver::new(Noting(shared.clone()), SharedSteps(shared.clone()));
    // 50 µs apart: the wait before each send polls many times, then only spins.
    d.send_feed(&mut ex, Rate::PerSec(20_000.0), || false, |_| {})
        .unwrap();
    let n = shared.0.borrow();
    let (sends, polls) = (&n.sends, &n.polls);
    assert_eq!(sends.len(), f.packets.len());
    assert!(polls.len() > 10 * sends.len(), "it polls while it waits");
    for w in sends.windows(2) {
        let (prev, next) = (w[0], w[1]);
        let last_poll = polls
            .iter()
            .filter(|&&p| p > prev && p < next)
            .max()
            .expect("polled between sends");
        // A send happens within a clock step of its due time.
        assert!(
            next - last_poll >= crate::pacing::POLL_GUARD_NS - 200,
            "a poll {} ns before a send",
            next - last_poll
        );
    }
}

/// A full-depth day's SYNTH prints are its book's (Add Order + Order Executed, no price on the
/// print): the feed finds the same ticks, at the same prices, as on the day printed as Trade
/// messages, and the gbm series' own.
#[test]
fn a_full_depth_days_ticks_are_its_book_prints() {
    let day = |synth_trades| {
        let spec = paths::MarketSpec {
            seed: 42,
            bars: 500,
            per_print: Some(8),
            symbols: Some(50),
            synth_trades,
        };
        Feed::build(&Source::Market(spec), None, 16, stock()).unwrap()
    };
    let (book, ticker, gbm) = (day(false), day(true), feed(500, 1));
    let prices = |f: &Feed| f.ticks.iter().map(|t| t.price).collect::<Vec<_>>();
    assert_eq!(book.ticks.len(), 500);
    assert_eq!(prices(&book), prices(&ticker));
    assert_eq!(prices(&book), prices(&gbm));
    // Each tick is the Order Executed's number, one after its Add.
    assert!(book.messages > ticker.messages + 400);
}
