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
    Session::new(paths::market::SESSION).unwrap()
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

/// A trader told where the feed starts.
fn pinned(first: u64) -> Trader {
    learner().with_feed_rules(FeedRules {
        session: Some(lab()),
        first_seq: Some(first),
        ..FeedRules::default()
    })
}

fn heartbeat(session: Session, seq: u64) -> Vec<u8> {
    let mut buf = [0u8; moldudp64::HEADER_LEN];
    PacketBuilder::new(&mut buf, session, seq)
        .unwrap()
        .finish()
        .to_vec()
}

/// Packets as they arrive: receive time (ns), line, bytes.
type Arrivals = Vec<(u64, Line, Vec<u8>)>;

/// Builds an arrival timeline on line A: a clock that packets move on.
struct Timeline {
    now: u64,
    arrivals: Arrivals,
}

impl Timeline {
    /// The feed's packets come this far apart (ns).
    const GAP: u64 = 10_000;

    fn new() -> Timeline {
        Timeline {
            now: 1_000_000_000,
            arrivals: Vec::new(),
        }
    }

    /// `p` arrives `after` ns after the last packet.
    fn at(&mut self, after: u64, p: Vec<u8>) -> &mut Self {
        self.now += after;
        self.arrivals.push((self.now, Line::A, p));
        self
    }

    /// The healthy feed's ticks `seqs` (numbered as [`healthy`] from 1), [`Timeline::GAP`] apart.
    fn feed(&mut self, seqs: std::ops::RangeInclusive<u64>) -> &mut Self {
        for s in seqs {
            self.at(Self::GAP, packet_of(lab(), s, s - 1));
        }
        self
    }
}

/// Feeds `arrivals`, telling the trader each one's receive time first; returns the orders and
/// whether a packet ended the session.
fn run_at(t: &mut Trader, arrivals: &[(u64, Line, Vec<u8>)]) -> (Vec<(u64, bool)>, bool) {
    let mut orders = Vec::new();
    let mut ended = false;
    for (rx, line, p) in arrivals {
        t.arrived(Nanos(*rx));
        let out = t.on_packet_from(
            *line,
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
    ended |= !ended && after_the_feed(t);
    t.finish();
    (orders, ended)
}

/// The feed's silence after its last packet: an end of session at the feed's next number
/// (not repeated) is taken once the feed stays silent after it. Whether it ended the run.
fn after_the_feed(t: &mut Trader) -> bool {
    let Some(due) = t.waiting_due() else {
        return false;
    };
    let out = t.release_due(Some(due), || 0, |_| true);
    t.settle();
    out == PacketOutcome::EndOfSession
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
    ended |= !ended && after_the_feed(t);
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
        // Before the feed starts, in the middle (twice) and just before its end. (Two in a row
        // continuing each other: `forged_jumps_told_in_sequence_are_not_believed_while_the_feed_flows`.)
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
fn a_jump_after_a_long_outage_is_believed_at_its_second_packet() {
    // An outage: 1..=50, 10 ms of silence, then 5_000.. (4_949 numbers never sent).
    let mut tl = Timeline::new();
    tl.feed(1..=50);
    tl.at(10_000_000, packet_of(lab(), 5_000, 5_000));
    for s in 5_001..5_100 {
        tl.at(Timeline::GAP, packet_of(lab(), s, s));
    }
    let mut t = learner();
    let (orders, _) = run_at(&mut t, &tl.arrivals);
    let c = t.counters;
    assert_eq!(
        (
            c.jumps_confirmed,
            c.suspect_sequence,
            c.jumps_refused,
            c.gap_messages,
            c.ticks
        ),
        (1, 0, 0, 4_949, 150),
        "{c:?}"
    );
    assert!(orders.iter().any(|&(s, _)| s >= 5_000));
    // The trader trades exactly what a trader that sees only those ticks trades.
    let mut plain = learner().with_feed_rules(FeedRules {
        session: Some(lab()),
        first_seq: Some(1),
        max_jump: u64::MAX,
        ..FeedRules::default()
    });
    let packets: Vec<_> = tl.arrivals.iter().map(|(_, _, p)| p.clone()).collect();
    assert_eq!(run(&mut plain, &packets).0, orders);
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
    /// That many packets in sequence (2..), the first numbered this far past the tick.
    Chain(u64, u64),
    /// An end of session far ahead of the feed.
    FarEnd(u64),
    /// An end of session this far (1..) past the feed, twice in a row.
    EndTwice(u64),
    /// A heartbeat of the feed's session, at any sequence number.
    Heartbeat(u64),
}

fn lie() -> impl proptest::strategy::Strategy<Value = Lie> {
    prop_oneof![
        any::<u64>().prop_map(Lie::Session),
        (DEFAULT_MAX_JUMP + 1..=u64::MAX).prop_map(Lie::Jump),
        (DEFAULT_MAX_JUMP + 1..=1 << 60, 2u64..6).prop_map(|(j, n)| Lie::Chain(j, n)),
        (DEFAULT_MAX_JUMP + 1..=u64::MAX / 2).prop_map(Lie::FarEnd),
        (1..=u64::MAX / 2).prop_map(Lie::EndTwice),
        any::<u64>().prop_map(Lie::Heartbeat),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Lies anywhere in a healthy feed that flows (a packet every 10 µs, lies among them), any
    /// number of them as long as the feed gets two packets in a row between lies at its start:
    /// the orders are the healthy feed's, each lie is counted once, and nothing is lost or late.
    #[test]
    fn lies_anywhere_change_no_order(
        first in 0u64..1 << 50,
        lies in proptest::collection::vec((2usize..200, lie()), 0..12),
    ) {
        let n = 200;
        let mut feed = healthy(first, n);
        let (mut expect_wrong, mut expect_suspect, mut expect_refused) = (0, 0, 0);
        let mut expect_heartbeats = 0;
        // Insert from the back so positions stay meaningful.
        let mut lies = lies;
        lies.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        for (at, l) in lies {
            let tick = first + at as u64;
            let packets = match l {
                Lie::Session(seq) => { expect_wrong += 1; vec![packet_of(stray(), seq, tick)] }
                Lie::Jump(j) => {
                    expect_suspect += 1;
                    vec![packet_of(lab(), tick.saturating_add(j), tick)]
                }
                Lie::Chain(j, k) => {
                    expect_suspect += k;
                    expect_refused += k - 1;
                    (0..k).map(|i| packet_of(lab(), tick + j + i, tick)).collect()
                }
                Lie::FarEnd(j) => { expect_suspect += 1; vec![end_of_session(lab(), tick + j)] }
                Lie::EndTwice(j) => {
                    expect_suspect += 2;
                    vec![end_of_session(lab(), tick + j); 2]
                }
                Lie::Heartbeat(seq) => {
                    expect_heartbeats += 1;
                    vec![heartbeat(lab(), seq)]
                }
            };
            feed.splice(at..at, packets);
        }
        let arrivals: Vec<_> = feed
            .into_iter()
            .enumerate()
            .map(|(i, p)| (1_000_000_000 + i as u64 * Timeline::GAP, Line::A, p))
            .collect();
        let mut t = learner();
        let (orders, ended) = run_at(&mut t, &arrivals);
        prop_assert!(ended);
        prop_assert_eq!(orders, reference(first, n));
        let c = t.counters;
        prop_assert_eq!(c.wrong_session, expect_wrong);
        prop_assert_eq!(c.suspect_sequence, expect_suspect);
        prop_assert_eq!(c.jumps_refused, expect_refused);
        prop_assert_eq!(c.heartbeats, expect_heartbeats);
        prop_assert_eq!(c.jumps_confirmed, 0);
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
        while let Some(req) = t.next_request(Nanos(now)) {
            assert_eq!(req.session, lab());
            for seq in req.sequence..req.sequence + u64::from(req.count) {
                let answer = packet_of(lab(), seq, seq - 1);
                t.on_packet_from(Line::Recovery, &answer, || 0, |_| panic!("traded"));
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
    assert_eq!(t.next_request(Nanos(now + 1_000_000_000)), None);
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
            let copies: Vec<Line> = Line::FEED
                .into_iter()
                .filter(|&l| !(if l == Line::A { lost_a(k) } else { lost_b(k) }))
                .collect();
            let order: Vec<Line> = if k % 2 == 0 {
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
            let mut arrive = |line: Line, p: &[u8]| {
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
                arrive(Line::A, &packets[k].1);
            }
            if k > 0 {
                arrive(Line::B, &packets[k - 1].1);
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

/// A forger sends packets of the feed's session numbered past `max_jump`, two or more in
/// sequence, while the real feed flows (each sub-rule of belief refuses one of them alone).
#[test]
fn forged_jumps_told_in_sequence_are_not_believed_while_the_feed_flows() {
    let mut tl = Timeline::new();
    tl.feed(1..=100);
    // 10 µs after the last tick, back to back, 257 past the feed: within max_rate × 10 µs +
    // max_jump (266), no feed packet between them, but the feed has been silent 10 µs, not
    // quiet_ns.
    tl.at(Timeline::GAP, packet_of(lab(), 101 + 257, 100))
        .at(1, packet_of(lab(), 101 + 258, 100));
    tl.feed(101..=150);
    // The feed pauses (a quiet market): the forger's first packet, one feed packet, then 2 ms
    // of silence and the second one. Silent long enough, within the rate, but the feed moved
    // since the first was held.
    tl.at(Timeline::GAP, packet_of(lab(), 151 + 300, 150))
        .at(1, packet_of(lab(), 151, 150))
        .at(2_000_000, packet_of(lab(), 151 + 301, 150));
    tl.feed(152..=200);
    // The feed pauses 5 ms: a jump of 10_000 in sequence, silent long enough, nothing moved,
    // but more than the feed could produce in 5 ms (max_rate × 5 ms + max_jump = 5_256).
    tl.at(5_000_000, packet_of(lab(), 201 + 10_000, 200))
        .at(1, packet_of(lab(), 201 + 10_001, 200));
    tl.feed(201..=250);
    // A chain of five, back to back.
    for k in 0..5 {
        tl.at(1, packet_of(lab(), 251 + 1_000 + k, 250));
    }
    tl.feed(251..=300);
    tl.at(Timeline::GAP, end_of_session(lab(), 301));
    let mut t = pinned(1);
    let (orders, ended) = run_at(&mut t, &tl.arrivals);
    assert!(ended);
    assert_eq!(orders, reference(1, 300));
    let c = t.counters;
    assert_eq!(
        (
            c.suspect_sequence,
            c.jumps_refused,
            c.jumps_confirmed,
            c.ticks,
            c.gap_messages,
            c.late_messages
        ),
        (11, 1 + 1 + 1 + 4, 0, 300, 0, 0),
        "{c:?}"
    );
}

/// The old stream stops and the new one, numbered far ahead, follows 100 µs later: its
/// packets are held until the old stream has been quiet long enough and the jump fits the
/// silence, then the newest held ones are traded, in order.
#[test]
fn a_restart_after_a_short_outage_is_believed_once_the_jump_fits_the_silence() {
    let mut tl = Timeline::new();
    tl.feed(1..=50);
    tl.at(100_000, packet_of(lab(), 5_000, 5_000));
    for s in 5_001..=5_600 {
        tl.at(Timeline::GAP, packet_of(lab(), s, s));
    }
    let mut t = pinned(1);
    let (orders, _) = run_at(&mut t, &tl.arrivals);
    // 5_000 + k arrives 100 µs + k × 10 µs after tick 50: believed when 4_949 + k (its
    // distance from 51) ≤ (100 + 10 k) + 256 (max_rate × silence + max_jump): k = 511. The four
    // held before it (5_507..=5_510) are traded, then it; 5_000..=5_506 were dropped.
    let c = t.counters;
    assert_eq!(
        (
            c.jumps_confirmed,
            c.suspect_sequence,
            c.jumps_refused,
            c.gap_messages,
            c.ticks
        ),
        (1, 507, 510 - 4, 5_507 - 51, 50 + (5_600 - 5_507 + 1)),
        "{c:?}"
    );
    let kept: Vec<_> = tl
        .arrivals
        .iter()
        .map(|(_, _, p)| p.clone())
        .filter(|p| {
            let s = moldudp64::Packet::new_checked(&p[..]).unwrap().sequence();
            s <= 50 || s >= 5_507
        })
        .collect();
    let mut plain = learner().with_feed_rules(FeedRules {
        session: Some(lab()),
        first_seq: Some(1),
        max_jump: u64::MAX,
        ..FeedRules::default()
    });
    assert_eq!(
        run(&mut plain, &kept).0,
        orders,
        "in order, as if only those came"
    );
}

/// A restart whose first packet overtakes the old stream's last one: the chain starts again
/// after the old stream's packet and is believed once it is quiet, with what it held before.
#[test]
fn a_restart_overtaking_the_old_streams_last_packet_is_believed_whole() {
    let mut tl = Timeline::new();
    tl.feed(1..=50);
    tl.at(Timeline::GAP, packet_of(lab(), 1_000, 1_000))
        .at(5_000, packet_of(lab(), 51, 50))
        .at(5_000, packet_of(lab(), 1_001, 1_001))
        .at(2_000_000, packet_of(lab(), 1_002, 1_002))
        .at(Timeline::GAP, packet_of(lab(), 1_003, 1_003));
    let mut t = pinned(1);
    run_at(&mut t, &tl.arrivals);
    let c = t.counters;
    assert_eq!(
        (
            c.jumps_confirmed,
            c.suspect_sequence,
            c.jumps_refused,
            c.gap_messages,
            c.ticks
        ),
        (1, 0, 0, 1_000 - 52, 55),
        "{c:?}"
    );
    assert_eq!(t.next_seq(), 1_004);
}

#[test]
fn the_other_lines_copy_confirms_a_held_jump_at_once() {
    let mut t = pinned(1).with_lines(lines::DEFAULT_WAIT_NS);
    let mut arrivals = Arrivals::new();
    let mut now = 1_000_000_000;
    let mut both = |arrivals: &mut Arrivals, p: Vec<u8>| {
        now += Timeline::GAP;
        arrivals.push((now, Line::A, p.clone()));
        arrivals.push((now + 1_000, Line::B, p));
    };
    for s in 1..=50 {
        both(&mut arrivals, packet_of(lab(), s, s));
    }
    // A restart numbered 5_000, on both lines at once: no silence at all before it.
    for s in 5_000..=5_050 {
        both(&mut arrivals, packet_of(lab(), s, s));
    }
    // A forged jump repeated on the same line is a duplicate, not a confirmation.
    let forged = packet_of(lab(), 100_000, 0);
    arrivals.push((now + 5_000, Line::A, forged.clone()));
    arrivals.push((now + 6_000, Line::A, forged));
    run_at(&mut t, &arrivals);
    let c = t.counters;
    assert_eq!(
        (
            c.jumps_confirmed,
            c.suspect_sequence,
            c.gap_messages,
            c.ticks,
            c.duplicate_messages
        ),
        (1, 1, 4_949, 101, 101 + 1),
        "{c:?}"
    );
    let (lines, _) = t.line_counts().unwrap();
    assert_eq!(
        (lines[0].received_messages, lines[1].received_messages),
        (101, 101),
        "{lines:?}"
    );
}

/// An end of session a little past the feed, sent twice (each sub-rule of belief refuses one
/// pair alone), never ends the run while the feed flows.
#[test]
fn forged_ends_a_few_past_the_feed_sent_twice_never_end_the_run() {
    let mut tl = Timeline::new();
    tl.feed(1..=100);
    // Back to back, 3 past the feed: nothing moved, within the rate, but not quiet.
    tl.at(1, end_of_session(lab(), 104))
        .at(1, end_of_session(lab(), 104));
    tl.feed(101..=150);
    // A claim, one feed packet, a 2 ms pause, the repeat: quiet and within the rate, but the
    // feed moved between the claim and its repeat.
    tl.at(Timeline::GAP, end_of_session(lab(), 154))
        .at(1, packet_of(lab(), 151, 150))
        .at(2_000_000, end_of_session(lab(), 154));
    tl.feed(152..=200);
    // A 5 ms pause, then 10_000 past the feed twice: quiet, nothing moved, but a longer tail
    // than the feed could produce in 5 ms.
    tl.at(5_000_000, end_of_session(lab(), 201 + 10_000))
        .at(1, end_of_session(lab(), 201 + 10_000));
    tl.feed(201..=300);
    tl.at(Timeline::GAP, end_of_session(lab(), 301));
    let mut t = pinned(1);
    let mut ends = Vec::new();
    for (i, a) in tl.arrivals.iter().enumerate() {
        if run_at(&mut t, std::slice::from_ref(a)).1 {
            ends.push(i);
        }
    }
    assert_eq!(
        ends,
        [tl.arrivals.len() - 1],
        "only the real end ends the run"
    );
    let c = t.counters;
    assert_eq!(
        (c.suspect_sequence, c.ticks, c.gap_messages),
        (6, 300, 0),
        "{c:?}"
    );
}

#[test]
fn a_lost_tail_is_believed_when_the_end_is_repeated_after_the_feed_stopped() {
    // The claim comes 10 µs after the last tick; the silence at the repeat is 10 µs more than
    // `repeat_after`.
    for (repeat_after, tail, believed) in [
        // The lab's exchange repeats its end 2 ms apart.
        (2_000_000, 3, true),
        // The most the feed could have sent in 2.01 ms: 2_010 + 256.
        (2_000_000, 2_266, true),
        (2_000_000, 2_267, false),
        // Silent for just under quiet_ns, and just that.
        (989_999, 3, false),
        (990_000, 3, true),
    ] {
        let mut tl = Timeline::new();
        tl.feed(1..=100);
        tl.at(Timeline::GAP, end_of_session(lab(), 101 + tail))
            .at(repeat_after, end_of_session(lab(), 101 + tail));
        let mut t = pinned(1);
        let (_, ended) = run_at(&mut t, &tl.arrivals);
        let c = t.counters;
        assert_eq!(ended, believed, "{repeat_after} {tail}: {c:?}");
        let expect = if believed { (0, tail) } else { (2, 0) };
        assert_eq!(
            (c.suspect_sequence, c.gap_messages),
            expect,
            "{repeat_after} {tail}: {c:?}"
        );
    }
}

/// Heartbeats move nothing, whatever their number: one numbered far ahead, a little ahead or
/// behind counts as a heartbeat, no gap, no suspect, and confirms no held jump.
#[test]
fn a_heartbeat_numbered_ahead_moves_nothing() {
    let mut tl = Timeline::new();
    tl.feed(1..=10);
    tl.at(Timeline::GAP, heartbeat(lab(), 1 << 40))
        .at(Timeline::GAP, heartbeat(lab(), 20))
        .at(Timeline::GAP, heartbeat(lab(), 5));
    tl.feed(11..=20);
    // A held jump, then 2 ms later a heartbeat numbered where it would continue.
    tl.at(Timeline::GAP, packet_of(lab(), 21 + 1_000, 0))
        .at(2_000_000, heartbeat(lab(), 21 + 1_001));
    tl.feed(21..=30);
    let mut t = pinned(1);
    let (orders, _) = run_at(&mut t, &tl.arrivals);
    let c = t.counters;
    assert_eq!(
        (
            c.heartbeats,
            c.gap_messages,
            c.suspect_sequence,
            c.jumps_confirmed,
            c.ticks
        ),
        (4, 0, 1, 0, 30),
        "{c:?}"
    );
    assert_eq!(t.next_seq(), 31);
    let mut plain = pinned(1);
    let real: Vec<_> = (1..=30).map(|s| packet_of(lab(), s, s - 1)).collect();
    assert_eq!(run(&mut plain, &real).0, orders);
}

#[test]
fn last_feed_is_when_the_feed_last_advanced() {
    let mut t = pinned(1);
    let at = |t: &mut Trader, rx: u64, line: Line, p: Vec<u8>| {
        run_at(t, &[(rx, line, p)]);
        t.last_feed().map(Nanos::ns)
    };
    assert_eq!(t.last_feed(), None);
    assert_eq!(at(&mut t, 100, Line::A, packet_of(lab(), 1, 1)), Some(100));
    // A duplicate, a held jump, a heartbeat, an answer: none advances the feed.
    assert_eq!(at(&mut t, 200, Line::A, packet_of(lab(), 1, 1)), Some(100));
    assert_eq!(
        at(&mut t, 300, Line::A, packet_of(lab(), 10_000, 1)),
        Some(100)
    );
    assert_eq!(at(&mut t, 400, Line::A, heartbeat(lab(), 2)), Some(100));
    let answer = packet_of(lab(), 2, 2);
    assert_eq!(at(&mut t, 500, Line::Recovery, answer), Some(100));
    // Past a gap it does; the late tick then doesn't.
    assert_eq!(at(&mut t, 600, Line::A, packet_of(lab(), 3, 3)), Some(600));
    assert_eq!(at(&mut t, 700, Line::A, packet_of(lab(), 2, 2)), Some(600));
    let c = t.counters;
    assert_eq!(
        (c.duplicate_messages, c.late_messages, c.suspect_sequence),
        (1, 1, 1),
        "{c:?}"
    );
}

/// What comes from the re-request server is taken only for numbers the trader asked for, and
/// never traded: a forger posing as the server can't move the feed or get a tick traded.
#[test]
fn only_asked_for_answers_are_taken_and_none_is_traded() {
    let mut t = pinned(1).with_recovery();
    let lossy: Vec<_> = (1..=10)
        .filter(|&s| s != 5)
        .map(|s| (s * 1_000, Line::A, packet_of(lab(), s, s)))
        .collect();
    run_at(&mut t, &lossy);
    let answer = |t: &mut Trader, p: Vec<u8>| {
        t.arrived(Nanos(20_000));
        let out = t.on_packet_from(Line::Recovery, &p, || 0, |_| panic!("an answer traded"));
        assert_eq!(out, PacketOutcome::Data);
        assert_eq!(t.next_seq(), 11, "an answer never moves the feed");
    };
    // Not asked yet.
    answer(&mut t, packet_of(lab(), 5, 5));
    let req = t.next_request(Nanos(1_000_000)).unwrap();
    assert_eq!((req.sequence, req.count), (5, 1));
    // The answer, then again (a duplicate).
    answer(&mut t, packet_of(lab(), 5, 5));
    answer(&mut t, packet_of(lab(), 5, 5));
    // At the feed's next number, far ahead, behind but never asked for.
    answer(&mut t, packet_of(lab(), 11, 11));
    answer(&mut t, packet_of(lab(), 1_000, 11));
    answer(&mut t, packet_of(lab(), 3, 3));
    // 4..=6 in one packet: only 5 was asked for (a duplicate by now).
    let mut buf = [0u8; 1500];
    let mut b = PacketBuilder::new(&mut buf, lab(), 4).unwrap();
    for s in 4..=6 {
        b.push(&trade(s)).unwrap();
    }
    answer(&mut t, b.finish().to_vec());
    // A heartbeat and an end of session from the server.
    answer(&mut t, heartbeat(lab(), 11));
    answer(&mut t, end_of_session(lab(), 11));
    let c = t.counters;
    assert_eq!(
        (
            c.recovery_unasked,
            c.recovered_messages,
            c.late_messages,
            c.duplicate_messages
        ),
        (1 + 3 + 2 + 2, 1, 1, 2),
        "{c:?}"
    );
    assert_eq!((c.messages, c.ticks, c.gap_messages), (9, 9, 1), "{c:?}");
    // The feed goes on: 11 is traded.
    run_at(&mut t, &[(30_000, Line::A, packet_of(lab(), 11, 11))]);
    assert_eq!(t.counters.ticks, 10);
}

/// A System Event message (the smallest ITCH 5.0 message, 12 bytes).
fn system_event() -> [u8; 12] {
    let mut m = [0u8; 12];
    m[0] = b'S';
    m[11] = b'Q';
    m
}

/// What a lie from the feed's exact source inside `max_jump` costs, bounded by the profile:
/// one of 480 one-byte messages at the next number (before: 480 real ticks gone) costs
/// nothing; the most a datagram that fits can carry (103 System Events in one 1,472-byte
/// frame, at `max_jump` past the next number) costs exactly `max_jump` + 103 real ticks, and
/// one more message no longer fits.
#[test]
fn an_exact_source_lie_in_range_costs_at_most_max_jump_and_what_a_frame_carries() {
    let n = 1_000;
    let reference_ticks = {
        let mut t = pinned(1);
        run(&mut t, &healthy(1, n));
        t.counters.ticks
    };
    // Hundreds of one-byte messages: off the profile, held, passed by the real feed.
    let mut buf = [0u8; 1500];
    let mut b = PacketBuilder::new(&mut buf, lab(), 101).unwrap();
    for _ in 0..480 {
        b.push(b"P").unwrap();
    }
    let tiny = b.finish().to_vec();
    let mut feed = healthy(1, n);
    feed.insert(100, tiny);
    let mut t = pinned(1);
    run(&mut t, &feed);
    let c = t.counters;
    assert_eq!((c.ticks, c.off_profile), (reference_ticks, 1), "{c:?}");
    // The most the profile lets through.
    let mut buf = [0u8; PROFILE_MAX_BYTES];
    let mut b = PacketBuilder::new(&mut buf, lab(), 101 + DEFAULT_MAX_JUMP).unwrap();
    let mut carried = 0;
    while b.push(&system_event()).is_ok() {
        carried += 1;
    }
    assert_eq!(carried, PROFILE_MAX_MESSAGES, "one frame's worth");
    let widest = b.finish().to_vec();
    let mut feed = healthy(1, n);
    feed.insert(100, widest);
    let mut t = pinned(1);
    run(&mut t, &feed);
    let c = t.counters;
    assert_eq!(c.off_profile, 0, "{c:?}");
    assert_eq!(
        reference_ticks - c.ticks,
        DEFAULT_MAX_JUMP + PROFILE_MAX_MESSAGES,
        "{c:?}"
    );
    assert_eq!(DEFAULT_MAX_JUMP + PROFILE_MAX_MESSAGES, 359);
}
