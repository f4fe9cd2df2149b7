//! The gate against stray and forged datagrams: a healthy feed with lies mixed in must be
//! traded exactly as the healthy feed alone, order for order.
use proptest::{
    arbitrary::any, prop_assert, prop_assert_eq, prop_oneof, proptest, strategy::Strategy as _,
    test_runner::Config as ProptestConfig,
};
use wire::moldudp64::{END_OF_SESSION, PacketBuilder, Session};

use super::*;

fn stock() -> Stock {
    Stock::new("SYNTH").unwrap()
}

fn lab() -> Session {
    Session::new(netns::lab::SESSION).unwrap()
}

fn stray() -> Session {
    Session::new("STRAY").unwrap()
}

/// A trade of `stock()` at a price that wanders with `seq`, so the strategy trades often.
fn trade(seq: u64) -> [u8; itch::trade::LEN] {
    let price = 100.0 + 5.0 * ((seq as f64) / 7.0).sin();
    let mut m = [0u8; itch::trade::LEN];
    trade_message(
        seq,
        stock(),
        Price4::from_f64_quantised(price).unwrap(),
        seq,
    )
    .emit_into(&mut m)
    .unwrap();
    m
}

/// A one-trade packet of `session` numbered `seq`, the trade priced as tick `tick` (so a
/// forged copy can carry a real tick's content).
fn packet_of(session: Session, seq: u64, tick: u64) -> Vec<u8> {
    let mut buf = [0u8; 1500];
    let mut b = PacketBuilder::new(&mut buf, session, seq).unwrap();
    b.push(&trade(tick)).unwrap();
    b.finish().to_vec()
}

fn end_of_session(session: Session, next: u64) -> Vec<u8> {
    let mut buf = [0u8; moldudp64::HEADER_LEN];
    let b = PacketBuilder::new(&mut buf, session, next).unwrap();
    let mut p = b.finish().to_vec();
    p[18..20].copy_from_slice(&END_OF_SESSION.to_be_bytes());
    p
}

fn learner() -> Trader {
    Trader::new(Params::from_n(6).unwrap(), Some(stock()))
}

/// Feeds `packets`; returns the orders' (tick sequence number, buy?) and whether a packet
/// ended the session.
fn run(t: &mut Trader, packets: &[Vec<u8>]) -> (Vec<(u64, bool)>, bool) {
    let mut orders = Vec::new();
    let mut ended = false;
    for p in packets {
        let out = t.on_packet(
            p,
            || 0,
            |o| {
                orders.push((o.tick_seq, o.side == Side::Buy));
                true
            },
        );
        t.settle();
        ended |= out == PacketOutcome::EndOfSession;
    }
    t.finish();
    (orders, ended)
}

/// The healthy feed: ticks `first..first + n` in order, then the end of session.
fn healthy(first: u64, n: u64) -> Vec<Vec<u8>> {
    let mut v: Vec<_> = (0..n).map(|i| packet_of(lab(), first + i, i)).collect();
    v.push(end_of_session(lab(), first + n));
    v
}

/// What a trader that knows the feed trades on the healthy feed.
fn reference(first: u64, n: u64) -> Vec<(u64, bool)> {
    let mut t = learner().with_feed_rules(FeedRules {
        session: Some(lab()),
        first_seq: Some(first),
        ..FeedRules::default()
    });
    let (orders, ended) = run(&mut t, &healthy(first, n));
    assert!(ended);
    assert!(orders.len() > 5, "the feed should make the strategy trade");
    orders
}

#[test]
fn a_stray_session_before_the_feed_does_not_capture_the_trader() {
    let mut feed = healthy(1, 300);
    feed.insert(0, packet_of(stray(), 1, 1));
    let mut t = learner();
    let (orders, ended) = run(&mut t, &feed);
    assert!(ended);
    assert_eq!(orders, reference(1, 300));
    let c = t.counters;
    assert_eq!(
        (c.wrong_session, c.ticks, c.gap_messages),
        (1, 300, 0),
        "{c:?}"
    );
    assert_eq!(t.session(), Some(lab()));
    assert_eq!(
        t.foreign_sessions().iter().collect::<Vec<_>>(),
        [(stray(), 1)]
    );
}

#[test]
fn a_stray_session_in_the_middle_is_rejected_and_named() {
    let mut feed = healthy(1, 300);
    feed.insert(150, packet_of(stray(), 150, 150));
    feed.insert(200, packet_of(stray(), 1, 1));
    let mut t = learner();
    let (orders, _) = run(&mut t, &feed);
    assert_eq!(orders, reference(1, 300));
    assert_eq!(t.counters.wrong_session, 2);
    assert_eq!(
        t.foreign_sessions().iter().collect::<Vec<_>>(),
        [(stray(), 2)]
    );
}

#[test]
fn forged_far_ahead_sequence_numbers_are_not_acted_on() {
    for jump in [DEFAULT_MAX_JUMP + 1, 1 << 20, 1 << 40, u64::MAX - 10] {
        let mut feed = healthy(1, 300);
        // Before the feed starts, in the middle (twice) and just before its end.
        // (Two in a row with the same jump would continue each other: believed, as documented.)
        for (at, jump) in [
            (0, jump),
            (100, jump),
            (101, jump.saturating_mul(3)),
            (250, jump),
            (299, jump),
        ] {
            let seq = (at as u64 + 1).saturating_add(jump);
            feed.insert(at, packet_of(lab(), seq, at as u64 + 1));
        }
        let mut t = learner();
        let (orders, ended) = run(&mut t, &feed);
        assert!(
            ended,
            "jump {jump}: the real end of session is taken: {:?}",
            t.counters
        );
        assert_eq!(orders, reference(1, 300), "jump {jump}");
        let c = t.counters;
        assert_eq!(c.suspect_sequence, 5, "jump {jump}: {c:?}");
        assert_eq!(
            (c.ticks, c.gap_messages, c.late_messages, c.jumps_confirmed),
            (300, 0, 0, 0),
            "jump {jump}: {c:?}"
        );
    }
}

#[test]
fn a_jump_that_the_feed_continues_is_real_and_traded() {
    // An outage: 1..=50, then 5_000.. (4_949 numbers never sent).
    let mut feed: Vec<_> = (1..=50).map(|s| packet_of(lab(), s, s)).collect();
    feed.extend((5_000..5_100).map(|s| packet_of(lab(), s, s)));
    let mut t = learner();
    let (orders, _) = run(&mut t, &feed);
    let c = t.counters;
    assert_eq!(
        (
            c.jumps_confirmed,
            c.suspect_sequence,
            c.gap_messages,
            c.ticks
        ),
        (1, 0, 4_949, 150),
        "{c:?}"
    );
    assert!(orders.iter().any(|&(s, _)| s >= 5_000));
    // The trader trades exactly what a trader that sees only those ticks trades.
    let mut plain = learner().with_feed_rules(FeedRules {
        session: Some(lab()),
        first_seq: Some(1),
        max_jump: u64::MAX,
    });
    assert_eq!(run(&mut plain, &feed).0, orders);
}

#[test]
fn joining_mid_session_starts_at_the_first_number_taken() {
    for first in [0, 2, 1_000_000, 1 << 40, u64::MAX - 1_000] {
        let mut t = learner();
        let (orders, ended) = run(&mut t, &healthy(first, 300));
        assert!(ended, "first {first}");
        assert_eq!(orders, reference(first, 300), "first {first}");
        let c = t.counters;
        assert_eq!((c.gap_messages, c.ticks), (0, 300), "first {first}: {c:?}");
        assert_eq!(t.first_seq(), Some(first));
    }
}

#[test]
fn packets_numbered_before_the_join_are_neither_late_nor_traded() {
    let mut feed = healthy(10, 100);
    feed.insert(5, packet_of(lab(), 3, 3));
    let mut t = learner();
    run(&mut t, &feed);
    let c = t.counters;
    assert_eq!(
        (c.before_join_messages, c.late_messages, c.ticks),
        (1, 0, 100),
        "{c:?}"
    );
}

#[test]
fn lying_ends_of_session_do_not_end_the_run() {
    let mut feed = healthy(1, 200);
    feed.insert(100, end_of_session(lab(), 50)); // behind the feed
    feed.insert(120, end_of_session(lab(), 1 << 30)); // far ahead
    feed.insert(130, end_of_session(stray(), 130)); // another session
    let mut t = learner();
    let (orders, ended) = run(&mut t, &feed);
    assert!(ended);
    assert_eq!(orders, reference(1, 200));
    let c = t.counters;
    assert_eq!((c.suspect_sequence, c.wrong_session), (2, 1), "{c:?}");
}

#[test]
fn pinned_session_and_start_trade_the_first_packet_at_once() {
    let mut t = learner().with_feed_rules(FeedRules {
        session: Some(lab()),
        first_seq: Some(1),
        ..FeedRules::default()
    });
    let mut orders = 0;
    // A price move that makes the strategy trade on its first ticks is not needed: what
    // matters is that the first packet's messages are taken now, not held.
    t.on_packet(
        &packet_of(lab(), 1, 1),
        || 0,
        |_| {
            orders += 1;
            true
        },
    );
    assert_eq!(t.counters.messages, 1);
    // A learner holds it until the next packet confirms it.
    let mut l = learner();
    l.on_packet(&packet_of(lab(), 1, 1), || 0, |_| true);
    assert_eq!(l.counters.messages, 0);
    l.on_packet(&packet_of(lab(), 2, 2), || 0, |_| true);
    assert_eq!(l.counters.messages, 2);
}

#[test]
fn a_pinned_session_rejects_others_even_first() {
    let mut t = learner().with_feed_rules(FeedRules {
        session: Some(lab()),
        ..FeedRules::default()
    });
    let mut feed = healthy(1, 300);
    feed.insert(0, packet_of(stray(), 1, 1));
    feed.insert(0, packet_of(stray(), 2, 2));
    let (orders, _) = run(&mut t, &feed);
    assert_eq!(orders, reference(1, 300));
    assert_eq!(t.counters.wrong_session, 2);
}

#[test]
fn a_feed_that_never_continues_is_counted_unconfirmed() {
    let mut t = learner();
    run(&mut t, &[packet_of(lab(), 7, 7)]);
    let c = t.counters;
    assert_eq!(
        (c.unconfirmed_packets, c.messages, c.orders),
        (1, 0, 0),
        "{c:?}"
    );
    assert_eq!(t.session(), None);
}

/// A lie mixed into the feed.
#[derive(Debug, Clone)]
enum Lie {
    /// Another session's copy of a tick, at any sequence number.
    Session(u64),
    /// The feed's session, numbered this far past the tick it sits before.
    Jump(u64),
    /// An end of session far ahead of the feed.
    FarEnd(u64),
}

fn lie() -> impl proptest::strategy::Strategy<Value = Lie> {
    prop_oneof![
        any::<u64>().prop_map(Lie::Session),
        (DEFAULT_MAX_JUMP + 1..=u64::MAX).prop_map(Lie::Jump),
        (DEFAULT_MAX_JUMP + 1..=u64::MAX / 2).prop_map(Lie::FarEnd),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Lies anywhere in a healthy feed, any number of them as long as the feed gets two
    /// packets in a row between lies at its start: the orders are the healthy feed's, each
    /// lie is counted once, and nothing is lost or late.
    #[test]
    fn lies_anywhere_change_no_order(
        first in 0u64..1 << 50,
        lies in proptest::collection::vec((2usize..200, lie()), 0..12),
    ) {
        let n = 200;
        let mut feed = healthy(first, n);
        let mut expect_wrong = 0;
        let mut expect_suspect = 0;
        // Insert from the back so positions stay meaningful.
        let mut lies = lies;
        lies.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        for (at, l) in lies {
            let tick = first + at as u64;
            let p = match l {
                Lie::Session(seq) => { expect_wrong += 1; packet_of(stray(), seq, tick) }
                Lie::Jump(j) => {
                    expect_suspect += 1;
                    packet_of(lab(), tick.saturating_add(j), tick)
                }
                Lie::FarEnd(j) => { expect_suspect += 1; end_of_session(lab(), tick + j) }
            };
            feed.insert(at, p);
        }
        let mut t = learner();
        let (orders, ended) = run(&mut t, &feed);
        prop_assert!(ended);
        prop_assert_eq!(orders, reference(first, n));
        let c = t.counters;
        prop_assert_eq!(c.wrong_session, expect_wrong);
        prop_assert_eq!(c.suspect_sequence, expect_suspect);
        prop_assert_eq!((c.ticks, c.gap_messages, c.late_messages), (n, 0, 0));
    }
}

#[test]
fn a_duplicate_of_the_held_first_packet_is_a_duplicate() {
    let mut feed = healthy(1, 100);
    feed.insert(1, packet_of(lab(), 1, 0));
    let mut t = learner();
    run(&mut t, &feed);
    let c = t.counters;
    assert_eq!(
        (c.duplicate_messages, c.suspect_sequence, c.ticks),
        (1, 0, 100),
        "{c:?}"
    );
}

#[test]
fn recovered_ticks_are_counted_not_traded() {
    let lost = [50u64, 51, 120];
    let lossy: Vec<_> = healthy(1, 300)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !lost.contains(&(*i as u64 + 1)))
        .map(|(_, p)| p)
        .collect();
    let (plain_orders, _) = run(&mut learner(), &lossy);
    let mut t = learner().with_recovery();
    let mut orders = Vec::new();
    let mut now = 0;
    for p in &lossy {
        t.on_packet(
            p,
            || 0,
            |o| {
                orders.push((o.tick_seq, o.side == Side::Buy));
                true
            },
        );
        t.settle();
        now += 1_000_000;
        // The exchange answers each request with the messages asked for.
        while let Some(req) = t.next_request(now) {
            assert_eq!(req.session, lab());
            for seq in req.sequence..req.sequence + u64::from(req.count) {
                let answer = packet_of(lab(), seq, seq - 1);
                t.on_packet_from(lines::RECOVERY, &answer, || 0, |_| panic!("traded"));
            }
        }
    }
    assert_eq!(orders, plain_orders, "recovery changes no order");
    let c = t.counters;
    assert_eq!(
        (c.recovered_messages, c.late_messages, c.gap_messages),
        (3, 3, 3),
        "{c:?}"
    );
    assert_eq!(
        (c.retransmit_requests, c.retransmit_requested),
        (2, 3),
        "{c:?}"
    );
    assert_eq!(c.retransmit_gave_up, 0);
    // Nothing left to ask.
    assert_eq!(t.next_request(now + 1_000_000_000), None);
}

/// Packets of `per` trades each, numbered from 1, `n` messages in all.
fn batched(n: u64, per: u64) -> Vec<(u64, Vec<u8>)> {
    (0..n.div_ceil(per))
        .map(|k| {
            let first = 1 + k * per;
            let mut buf = [0u8; 1500];
            let mut b = PacketBuilder::new(&mut buf, lab(), first).unwrap();
            for s in first..(first + per).min(n + 1) {
                b.push(&trade(s - 1)).unwrap();
            }
            (first, b.finish().to_vec())
        })
        .collect()
}

#[test]
fn a_b_lines_fill_each_others_gaps_and_are_counted_per_line() {
    for (n, per) in [(3_000u64, 1u64), (70_000, 30)] {
        let packets = batched(n, per);
        // Independent loss: every 7th packet on A, every 11th on B (both: every 77th).
        let lost_a = |k: usize| k % 7 == 3;
        let lost_b = |k: usize| k % 11 == 5;
        let pinned = FeedRules {
            session: Some(lab()),
            first_seq: Some(1),
            ..FeedRules::default()
        };
        let mut t = learner()
            .with_feed_rules(pinned)
            .with_lines(lines::DEFAULT_WAIT_NS);
        let mut plain = learner().with_feed_rules(pinned);
        let (mut orders, mut plain_orders) = (Vec::new(), Vec::new());
        let (mut only_a, mut only_b, mut both) = (0u64, 0u64, 0u64);
        for (k, (first, p)) in packets.iter().enumerate() {
            let msgs = (n + 1 - first).min(per);
            match (lost_a(k), lost_b(k)) {
                (true, true) => both += msgs,
                (true, false) => only_a += msgs,
                (false, true) => only_b += msgs,
                (false, false) => {}
            }
            // B's copy first half the time: whichever comes first is traded.
            let copies: Vec<usize> = [0, 1]
                .into_iter()
                .filter(|&l| !(if l == 0 { lost_a(k) } else { lost_b(k) }))
                .collect();
            let order: Vec<usize> = if k % 2 == 0 {
                copies
            } else {
                copies.into_iter().rev().collect()
            };
            for l in order {
                t.on_packet_from(
                    l,
                    p,
                    || 0,
                    |o| {
                        orders.push((o.tick_seq, o.side == Side::Buy));
                        true
                    },
                );
                t.settle();
            }
            if !(lost_a(k) && lost_b(k)) {
                plain.on_packet(
                    p,
                    || 0,
                    |o| {
                        plain_orders.push((o.tick_seq, o.side == Side::Buy));
                        true
                    },
                );
                plain.settle();
            }
        }
        t.finish();
        assert_eq!(
            orders, plain_orders,
            "n {n}: A/B trades what one line with the union would"
        );
        let (lines, lost_on_both) = t.line_counts().unwrap();
        let c = t.counters;
        assert_eq!(lost_on_both, both, "n {n}");
        assert_eq!(c.gap_messages - c.late_messages, both, "n {n}: {c:?}");
        assert_eq!(
            c.ticks,
            n - both,
            "n {n}: every tick lost on one line only is traded"
        );
        assert_eq!(
            lines[0].received_messages,
            n - both - only_a,
            "n {n}: {lines:?}"
        );
        assert_eq!(
            lines[1].received_messages,
            n - both - only_b,
            "n {n}: {lines:?}"
        );
        assert_eq!(lines[0].gaps_filled_by_other, only_a, "n {n}: {lines:?}");
        assert_eq!(lines[1].gaps_filled_by_other, only_b, "n {n}: {lines:?}");
        assert_eq!(
            lines[0].first_arrivals + lines[1].first_arrivals,
            c.ticks,
            "n {n}: {lines:?}"
        );
        assert!(lines[0].first_arrivals > 0 && lines[1].first_arrivals > 0);
    }
}

#[test]
fn a_tick_lost_on_one_line_waits_for_the_other_lines_late_copy() {
    let n = 300u64;
    let packets = batched(n, 1);
    let lost_a = |k: usize| k % 7 == 3;
    let pinned = FeedRules {
        session: Some(lab()),
        first_seq: Some(1),
        ..FeedRules::default()
    };
    let run_ab = |wait_ns: u64, clock_ns: u64| {
        let mut t = learner().with_feed_rules(pinned).with_lines(wait_ns);
        let mut orders = Vec::new();
        // Line B lags one packet behind line A.
        for k in 0..=packets.len() {
            let mut arrive = |line: usize, p: &[u8]| {
                t.on_packet_from(
                    line,
                    p,
                    || clock_ns,
                    |o| {
                        orders.push((o.tick_seq, o.side == Side::Buy));
                        true
                    },
                );
                t.settle();
            };
            if k < packets.len() && !lost_a(k) {
                arrive(0, &packets[k].1);
            }
            if k > 0 {
                arrive(1, &packets[k - 1].1);
            }
        }
        t.finish();
        (orders, t.counters, t.line_counts().unwrap())
    };
    let (orders, c, (lines, both)) = run_ab(lines::DEFAULT_WAIT_NS, 0);
    assert_eq!(orders, reference(1, n), "in order, as if nothing was lost");
    assert_eq!(
        (c.ticks, c.gap_messages, c.late_messages),
        (n, 0, 0),
        "{c:?}"
    );
    let lost = (0..packets.len()).filter(|&k| lost_a(k)).count() as u64;
    assert_eq!((lines[0].gaps_filled_by_other, both), (lost, 0));
    // With no wait at all (the clock is always past the deadline), the gap is acted on when
    // it shows and B's copy comes late: the cost the wait avoids.
    let (_, c, _) = run_ab(0, 1);
    assert_eq!(c.late_messages, lost, "{c:?}");
}

#[test]
fn an_end_claim_the_feed_then_reaches_is_not_left_a_suspect() {
    let mut feed = healthy(1, 10);
    let eos = feed.pop().unwrap();
    let last = feed.pop().unwrap();
    // The end of session overtakes tick 10: a claim past the feed, then the feed reaches it.
    feed.extend([eos.clone(), last, eos]);
    let mut t = learner();
    let (_, ended) = run(&mut t, &feed);
    assert!(ended);
    let c = t.counters;
    assert_eq!(
        (c.suspect_sequence, c.ticks, c.gap_messages),
        (0, 10, 0),
        "{c:?}"
    );
}
