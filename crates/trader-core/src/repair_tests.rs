//! Book repair ([`crate::repair`]) on a generated full-depth day: packets lost on the wire,
//! the trader asking the re-request server for them, the server answering some packets
//! later. With a book held at each gap the day trades exactly as the whole day; without the
//! hold, the same losses leave the book short; unanswered, a gap is given up within the wait
//! and the book goes on; and an answer nobody asked for never reaches the book.
use std::collections::VecDeque;

use wire::{
    itch::Side,
    moldudp64::{Packet, PacketBuilder, Session},
};

use crate::{
    Claim, Line, Nanos, Trader,
    filter_tests::filter,
    tests::{market_packets, orders_of, trader},
};

/// A packet's arrival every 10 µs.
const STEP_NS: u64 = 10_000;

/// A generated day (SYNTH in about 1 % of its messages, 16 a packet) and SYNTH's locate.
fn day(seed: u64, bars: usize) -> (Vec<Vec<u8>>, u16) {
    let config = market::Config {
        per_print: 100,
        symbols: 500,
        ..market::Config::new(seed, bars)
    };
    let locate = market::Generator::new(config).unwrap().synth_locate();
    (market_packets(config, 16), locate)
}

fn book_trader() -> Trader {
    trader().with_symbols(&[]).unwrap()
}

/// Every message of the day, in order (message `seq` at `seq - 1`).
fn messages(packets: &[Vec<u8>]) -> Vec<Vec<u8>> {
    packets
        .iter()
        .flat_map(|p| {
            let p = Packet::new_checked(p.as_slice()).unwrap();
            p.messages()
                .map(|m| m.unwrap().to_vec())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The server's answer to a request: as many of the messages asked for as fit one packet.
fn answer(day: &[Vec<u8>], sequence: u64, count: u16) -> Vec<u8> {
    let mut buf = [0u8; 1400];
    let session = Session::new(paths::market::SESSION).unwrap();
    let mut b = PacketBuilder::new(&mut buf, session, sequence).unwrap();
    for seq in sequence..sequence + u64::from(count) {
        let Some(m) = day.get(seq as usize - 1) else {
            break;
        };
        if b.remaining() < m.len() + 2 {
            break;
        }
        b.push(m).unwrap();
    }
    b.finish().to_vec()
}

/// Packets whose messages include SYNTH's (the ones whose loss a book can't skip), from the
/// 20th on.
fn synth_packets(packets: &[Vec<u8>], locate: u16) -> Vec<usize> {
    (20..packets.len())
        .filter(|&i| {
            let p = Packet::new_checked(packets[i].as_slice()).unwrap();
            p.messages()
                .any(|m| m.unwrap()[1..3] == locate.to_be_bytes())
        })
        .collect()
}

/// Runs the day on `t` with the packets at `lost` lost on the wire; the server answers each
/// request `answer_after` packets later (`None`: never).
fn run(
    t: Trader,
    packets: &[Vec<u8>],
    lost: &[usize],
    answer_after: Option<usize>,
) -> (Vec<(u64, Side, u32)>, Trader) {
    let fed = (0..packets.len())
        .filter(|i| !lost.contains(i))
        .map(|i| (packets[i].as_slice(), None));
    run_fed(t, &messages(packets), fed, answer_after)
}

/// Runs `t` on the packets that reach it (`fed`, each with the driver filter's claim if it
/// has one), one every [`STEP_NS`], the server answering from the whole `day` each request
/// `answer_after` packets later (`None`: never). Between packets the loop does what the I/O
/// loop does: the answers that came, the holds whose wait ran out, a request if one is due.
fn run_fed<'a>(
    mut t: Trader,
    day: &[Vec<u8>],
    fed: impl IntoIterator<Item = (&'a [u8], Option<Claim>)>,
    answer_after: Option<usize>,
) -> (Vec<(u64, Side, u32)>, Trader) {
    let mut orders = Vec::new();
    let mut answers: VecDeque<(usize, Vec<u8>)> = VecDeque::new();
    for (i, (p, claim)) in fed.into_iter().enumerate() {
        let now = i as u64 * STEP_NS;
        let mut emit = |o: &wire::order::OrderRepr| {
            orders.push((o.token, o.side, o.price.0));
            true
        };
        while answers.front().is_some_and(|(at, _)| *at <= i) {
            let (_, a) = answers.pop_front().unwrap();
            t.arrived(Nanos(now));
            t.on_packet_from(Line::Recovery, &a, || now, &mut emit);
        }
        t.arrived(Nanos(now));
        t.on_packet_claimed(Line::A, p, claim, || now, &mut emit);
        if t.waiting_due().is_some_and(|d| d.ns() <= now) {
            t.release_due(Some(Nanos(now)), || now, &mut emit);
        }
        t.settle();
        if let Some(req) = t.next_request(Nanos(now))
            && let Some(k) = answer_after
        {
            answers.push_back((i + k, answer(day, req.sequence, req.count)));
        }
    }
    t.finish();
    (orders, t)
}

#[test]
fn a_book_held_at_its_gaps_trades_the_day_as_if_nothing_was_lost() {
    let (packets, locate) = day(42, 600);
    let synth = synth_packets(&packets, locate);
    // Four packets with SYNTH's messages, far apart, and one without.
    let plain = (100..packets.len()).find(|i| !synth.contains(i)).unwrap();
    let lost = [synth[3], synth[40], synth[41], synth[200], plain];
    let lost_messages: u64 = lost
        .iter()
        .map(|&i| {
            u64::from(
                Packet::new_checked(packets[i].as_slice())
                    .unwrap()
                    .block_count(),
            )
        })
        .sum();
    let (want, whole) = orders_of(book_trader(), &packets);
    assert!(want.len() > 50, "the strategy trades: {}", want.len());

    let repaired = book_trader().with_recovery().with_repair(50_000_000);
    let (got, t) = run(repaired, &packets, &lost, Some(12));
    assert_eq!(got, want, "the orders of the whole day, in order");
    let (c, w) = (t.counters, whole.counters);
    assert_eq!(
        (c.messages, c.ticks, c.book_messages, c.book_refused),
        (w.messages, w.ticks, w.book_messages, w.book_refused),
        "{c:?}"
    );
    assert_eq!(c.recovered_messages, lost_messages, "{c:?}");
    assert_eq!(
        (c.gap_messages, c.late_messages, c.repair_gave_up),
        (0, 0, 0),
        "{c:?}"
    );
    assert!(c.repair_held_packets >= 12, "{c:?}");
    assert_eq!(t.account(), whole.account());

    // The same losses and answers without the hold: the answers come late, the book is short.
    let (got, t) = run(book_trader().with_recovery(), &packets, &lost, Some(12));
    let c = t.counters;
    assert_eq!(
        (c.late_messages, c.recovered_messages),
        (lost_messages, lost_messages)
    );
    assert!(
        got != want || c.book_refused > w.book_refused || c.ticks < w.ticks,
        "a lost SYNTH packet costs a book that trades through: {c:?}"
    );
}

/// A gap the server never answers is given up when the wait runs out: the held packets go on
/// past it, the book knowingly short, and the trader keeps trading the day.
#[test]
fn an_unanswered_gap_is_given_up_within_the_wait_and_trading_goes_on() {
    let (packets, locate) = day(7, 600);
    let synth = synth_packets(&packets, locate);
    let lost = [synth[10]];
    let lost_messages = u64::from(
        Packet::new_checked(packets[lost[0]].as_slice())
            .unwrap()
            .block_count(),
    );
    let wait_ns = 1_000_000;
    let repaired = book_trader().with_recovery().with_repair(wait_ns);
    let (got, t) = run(repaired, &packets, &lost, None);
    let c = t.counters;
    assert_eq!(c.gap_messages, lost_messages, "{c:?}");
    let held = wait_ns / STEP_NS;
    assert!(
        (held - 2..=held + 2).contains(&c.repair_held_packets),
        "held for the wait, no longer: {c:?}"
    );
    assert!(c.repair_gave_up >= 1 && c.recovered_messages == 0, "{c:?}");
    let (want, _) = orders_of(book_trader(), &packets);
    assert!(
        got.len() * 10 > want.len() * 9,
        "it trades on: {} of {} orders",
        got.len(),
        want.len()
    );
}

/// What the server sends that was never asked for (numbers past the gap, a packet at the
/// feed's next number before any gap) is counted and never reaches the book.
#[test]
fn an_answer_nobody_asked_for_never_reaches_the_book() {
    let (packets, _) = day(11, 200);
    let day = messages(&packets);
    let mut t = book_trader().with_recovery().with_repair(50_000_000);
    for p in &packets[..40] {
        t.on_packet_from(Line::A, p, || 0, |_| true);
    }
    let before = t.counters;
    let next = t.sequencer().next_seq();
    // The feed's next sixteen messages, posing as an answer: nothing was asked.
    t.on_packet_from(Line::Recovery, &answer(&day, next, 16), || 0, |_| true);
    let c = t.counters;
    assert_eq!(c.messages, before.messages, "{c:?}");
    assert_eq!(c.book_messages, before.book_messages, "{c:?}");
    assert_eq!(c.recovery_unasked, 16, "{c:?}");
    assert_eq!(t.sequencer().next_seq(), next);
}

/// Behind the driver filter: a packet of SYNTH lost inside a run of dropped packets is a gap
/// of exactly its numbers (the claims vouch for the rest), held for, recovered, and the day
/// trades as the whole day.
#[test]
fn behind_the_driver_filter_a_lost_packet_is_recovered_in_order() {
    let (packets, locate) = day(5, 600);
    let synth = synth_packets(&packets, locate);
    let lost = [synth[5], synth[60], synth[61]];
    let lossy: Vec<Vec<u8>> = (0..packets.len())
        .filter(|i| !lost.contains(i))
        .map(|i| packets[i].clone())
        .collect();
    let (passed, dropped) = filter(&lossy, locate);
    let (want, whole) = orders_of(book_trader(), &packets);
    let repaired = book_trader().with_recovery().with_repair(50_000_000);
    let fed = passed.iter().map(|(p, c)| (p.as_slice(), Some(*c)));
    let (got, t) = run_fed(repaired, &messages(&packets), fed, Some(3));
    assert_eq!(got.len(), want.len(), "{:?}", t.counters);
    assert_eq!(got, want);
    let (c, w) = (t.counters, whole.counters);
    assert_eq!(c.filtered_skipped, dropped, "{c:?}");
    assert_eq!(
        (c.gap_messages, c.late_messages, c.repair_gave_up),
        (0, 0, 0),
        "{c:?}"
    );
    assert_eq!(c.messages + c.filtered_skipped, w.messages, "{c:?}");
    assert_eq!(
        (c.ticks, c.book_refused),
        (w.ticks, w.book_refused),
        "{c:?}"
    );
    assert!(
        c.recovered_messages >= 3 && c.repair_held_packets >= 3,
        "{c:?}"
    );
}

/// The feed's end of session right behind a held gap gives the gap up at once: the held
/// packets go on past the gap (its numbers a gap) rather than leave the end unbelieved; the end
/// itself is then believed on the feed's silence after it, as any end at the next number.
#[test]
fn an_end_of_session_behind_a_held_gap_ends_the_run_and_gives_the_gap_up() {
    let (packets, _) = day(3, 100);
    let mut t = book_trader().with_recovery().with_repair(50_000_000);
    let lost = packets.len() - 3;
    for (i, p) in packets.iter().enumerate() {
        if i != lost {
            t.on_packet_from(Line::A, p, || 0, |_| true);
        }
    }
    assert!(t.counters.repair_held_packets == 2, "{:?}", t.counters);
    let end = messages(&packets).len() as u64 + 1;
    let mut eos = answer(&[], end, 0);
    eos[18..20].copy_from_slice(&wire::moldudp64::END_OF_SESSION.to_be_bytes());
    let outcome = t.on_packet_from(Line::A, &eos, || 0, |_| true);
    assert_eq!(
        outcome,
        crate::PacketOutcome::Data,
        "not on one datagram's word"
    );
    let due = t.waiting_due().expect("believed on the feed's silence");
    assert_eq!(
        t.release_due(Some(due), || 0, |_| true),
        crate::PacketOutcome::EndOfSession
    );
    let c = t.counters;
    let lost_messages = u64::from(
        Packet::new_checked(packets[lost].as_slice())
            .unwrap()
            .block_count(),
    );
    assert_eq!(
        (c.gap_messages, c.repair_gave_up),
        (lost_messages, 1),
        "{c:?}"
    );
    assert_eq!(c.suspect_sequence, 0, "{c:?}");
    assert_eq!(t.sequencer().next_seq(), end);
}

/// A hand-made feed for the hold's edge cases: one trade a packet (SYNTH's, so nothing is
/// filtered), numbered as given; and an end of session.
mod edges {
    use super::*;
    use crate::Nanos;

    fn trade(seq: u64) -> Vec<u8> {
        let mut buf = [0u8; 1500];
        let session = Session::new(paths::market::SESSION).unwrap();
        let mut b = PacketBuilder::new(&mut buf, session, seq).unwrap();
        let mut m = [0u8; wire::itch::trade::LEN];
        crate::trade_message(
            seq,
            wire::itch::Stock::new("SYNTH").unwrap(),
            wire::itch::Price4::from_f64_quantised(100.0).unwrap(),
            seq,
        )
        .emit_into(&mut m)
        .unwrap();
        b.push(&m).unwrap();
        b.finish().to_vec()
    }

    fn ticker_repairing() -> Trader {
        trader().with_recovery().with_repair(50_000_000)
    }

    fn feed(t: &mut Trader, at: u64, p: &[u8], claim: Option<Claim>) {
        t.arrived(Nanos(at));
        t.on_packet_claimed(Line::A, p, claim, || at, |_| true);
    }

    /// A forged packet far ahead carrying the run it broke (as the program passes one) is the
    /// gate's, never the hold's: refused while the feed flows, and never moves the feed.
    #[test]
    fn a_forged_packet_far_ahead_with_a_claim_is_the_gates_not_the_holds() {
        let mut t = ticker_repairing();
        for s in 1..=10 {
            feed(&mut t, s, &trade(s), None);
        }
        // 11 lost: 12 is held behind it.
        feed(&mut t, 12, &trade(12), None);
        assert_eq!(t.counters.repair_held_packets, 1);
        // The program passes it with the run it broke, empty here (12 was passed).
        let forged = trade(12 + 10_000_000);
        feed(&mut t, 13, &forged, Some(Claim { from: 13, to: 13 }));
        assert_eq!(t.counters.suspect_sequence, 1, "{:?}", t.counters);
        // The real 11 comes: 11 and 12 trade, nothing jumped.
        feed(&mut t, 14, &trade(11), None);
        assert_eq!(t.sequencer().next_seq(), 13);
        assert_eq!((t.counters.gap_messages, t.counters.late_messages), (0, 0));
        assert_eq!(t.counters.ticks, 12);
    }

    /// While a gap is held the feed is flowing: a forged jump in sequence is never believed
    /// on the feed's seeming silence.
    #[test]
    fn a_held_gap_is_no_silence_for_the_gate() {
        let mut t = ticker_repairing();
        for s in 1..=10 {
            feed(&mut t, s, &trade(s), None);
        }
        feed(&mut t, 20, &trade(12), None);
        // 10 ms later (past the 1 ms quiet window), two forged packets far ahead in sequence.
        let far = 12 + 5_000;
        feed(&mut t, 10_000_020, &trade(far), None);
        feed(&mut t, 10_000_030, &trade(far + 1), None);
        assert_eq!(t.counters.jumps_confirmed, 0, "{:?}", t.counters);
        assert!(t.sequencer().next_seq() < far);
    }

    /// A longer packet at a held one's first number is held beside it: nothing it carries
    /// that the shorter lacked is lost as a duplicate.
    #[test]
    fn a_longer_packet_at_a_held_first_number_is_not_a_duplicate() {
        let mut t = ticker_repairing();
        for s in 1..=10 {
            feed(&mut t, s, &trade(s), None);
        }
        let two = |first: u64| {
            let mut buf = [0u8; 1500];
            let session = Session::new(paths::market::SESSION).unwrap();
            let mut b = PacketBuilder::new(&mut buf, session, first).unwrap();
            for s in first..first + 2 {
                let p = trade(s);
                b.push(&p[22..]).unwrap();
            }
            b.finish().to_vec()
        };
        feed(&mut t, 12, &trade(12), None);
        feed(&mut t, 13, &two(12), None);
        assert_eq!(t.counters.duplicate_messages, 0, "held beside it");
        feed(&mut t, 14, &trade(11), None);
        assert_eq!(t.sequencer().next_seq(), 14, "12 and 13 both in");
        assert_eq!((t.counters.duplicate_messages, t.counters.ticks), (1, 13));
    }

    /// The hold's wait is the earliest held packet's: a packet that comes to its head later
    /// (a lower number) doesn't extend it.
    #[test]
    fn the_holds_wait_is_bounded_by_its_first_packet() {
        let mut t = ticker_repairing();
        for s in 1..=10 {
            feed(&mut t, s, &trade(s), None);
        }
        feed(&mut t, 0, &trade(20), None);
        feed(&mut t, 40_000_000, &trade(15), None);
        assert_eq!(t.waiting_due(), Some(Nanos(50_000_000)));
    }

    /// A heartbeat's claim while a gap is held waits in the hold: the held packets are not
    /// passed as a gap, and come in order once the gap is filled.
    #[test]
    fn a_heartbeats_claim_waits_in_the_hold() {
        let mut t = ticker_repairing();
        for s in 1..=10 {
            feed(&mut t, s, &trade(s), None);
        }
        feed(&mut t, 12, &trade(12), None);
        // The program dropped 13..20 and says so on a heartbeat numbered 20.
        let mut hb = trade(20);
        hb.truncate(20);
        hb[18..20].copy_from_slice(&0u16.to_be_bytes());
        feed(&mut t, 13, &hb, Some(Claim { from: 13, to: 20 }));
        assert_eq!(t.sequencer().next_seq(), 11, "still at the gap");
        feed(&mut t, 14, &trade(11), None);
        let c = t.counters;
        assert_eq!(t.sequencer().next_seq(), 20, "{c:?}");
        assert_eq!(
            (c.gap_messages, c.late_messages, c.filtered_skipped),
            (0, 0, 7),
            "{c:?}"
        );
        assert_eq!(c.ticks, 12);
    }
}
