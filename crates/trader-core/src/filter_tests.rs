//! The sequencer behind the driver filter: a generated full-depth day through the filter's
//! own run logic ([`xdp_common::filter::Run`], the program's), the dropped packets never
//! reaching the trader and the passed ones carrying their claims. Every lie class the filter
//! can meet is here: a loss inside a run, a duplicate, a forged packet at the line's next
//! number (the one lie it can be told, bounded by its cap), a forged jump ahead, and a
//! trader that joins mid-session.
use engine::Params;
use wire::{
    itch::{Side, Stock},
    moldudp64::Packet,
};
use xdp_common::filter::{CAP, Run, Verdict};

use crate::{
    Claim, Line, Trader,
    tests::{market_packets, orders_of, orders_with_claims, trader},
};

fn synth() -> Stock {
    Stock::new("SYNTH").unwrap()
}

/// A generated day of `bars` SYNTH prints in about 1 % of its messages (200 others a print,
/// over 2,000 symbols), 16 messages a packet, and SYNTH's locate.
fn day(seed: u64, bars: usize) -> (Vec<Vec<u8>>, u16) {
    let config = market::Config {
        per_print: 200,
        symbols: 2_000,
        ..market::Config::new(seed, bars)
    };
    let locate = market::Generator::new(config).unwrap().synth_locate();
    (market_packets(config, 16), locate)
}

/// What the program checks of a packet: its numbers and whether it may drop it (at least one
/// message and at most the cap, none of the watched locate, no system event, no directory).
fn classify(p: &[u8], watched: u16) -> (u64, u64, bool) {
    let packet = Packet::new_checked(p).unwrap();
    let (first, count) = (packet.sequence(), packet.block_count());
    let candidate = (1..=CAP).contains(&count)
        && packet.messages().all(|m| {
            let m = m.unwrap();
            let locate = u16::from_be_bytes([m[1], m[2]]);
            locate != watched && locate != 0 && m[0] != b'R'
        });
    (first, first + u64::from(count), candidate)
}

/// The packets the filter passes, each with its claim, and the messages it dropped.
pub(crate) fn filter(packets: &[Vec<u8>], watched: u16) -> (Vec<(Vec<u8>, Claim)>, u64) {
    let mut run = Run::default();
    let (mut passed, mut dropped) = (Vec::new(), 0);
    for p in packets {
        let (first, next, candidate) = classify(p, watched);
        match run.step(first, next, candidate) {
            Verdict::Drop => dropped += next - first,
            Verdict::Pass(claim) => passed.push((p.clone(), claim)),
        }
    }
    (passed, dropped)
}

/// Every order a trader sends on the filtered packets, with the trader.
fn orders_claimed(t: Trader, passed: &[(Vec<u8>, Claim)]) -> (Vec<(u64, Side, u32)>, Trader) {
    orders_with_claims(t, passed.iter().map(|(p, c)| (p.as_slice(), Some(*c))))
}

fn book_trader() -> Trader {
    trader().with_symbols(&[]).unwrap()
}

#[test]
fn a_filtered_day_trades_as_the_whole_day_and_no_dropped_packet_is_a_gap() {
    let (packets, locate) = day(42, 1_000);
    let (want, whole) = orders_of(book_trader(), &packets);
    let (passed, dropped) = filter(&packets, locate);
    assert!(
        passed.len() * 3 < packets.len(),
        "most packets are dropped: {} of {}",
        packets.len() - passed.len(),
        packets.len()
    );
    let (got, t) = orders_claimed(book_trader(), &passed);
    assert!(want.len() > 50, "the strategy trades: {}", want.len());
    assert_eq!(got, want);
    let c = t.counters;
    assert_eq!(
        (c.gap_messages, c.late_messages, c.duplicate_messages),
        (0, 0, 0),
        "{c:?}"
    );
    assert_eq!(c.filtered_skipped, dropped, "{c:?}");
    assert_eq!(c.messages + c.filtered_skipped, whole.counters.messages);
    assert_eq!(c.ticks, 1_000);
}

/// A packet lost before the driver breaks the run: the trader sees exactly its numbers as a
/// gap and asks for exactly those again, whatever was dropped around it.
#[test]
fn a_loss_inside_a_run_is_a_gap_of_exactly_the_lost_numbers() {
    let (packets, locate) = day(7, 1_000);
    // The first candidate after the start that sits inside a run: lost on the wire.
    let lost = (40..packets.len())
        .find(|&i| classify(&packets[i - 1], locate).2 && classify(&packets[i], locate).2)
        .unwrap();
    let (first, next, _) = classify(&packets[lost], locate);
    let mut lossy = packets.clone();
    lossy.remove(lost);
    // Asked about soon after, while the gap is in the sequencer's window.
    lossy.truncate(lost + 100);
    let (passed, _) = filter(&lossy, locate);
    let (_, mut t) = orders_claimed(book_trader().with_recovery(), &passed);
    let c = t.counters;
    assert_eq!(c.gap_messages, next - first, "{c:?}");
    let ask = t.next_request(crate::Nanos(1_000_000_000)).unwrap();
    assert_eq!((ask.sequence, u64::from(ask.count)), (first, next - first));
    assert_eq!(
        t.next_request(crate::Nanos(1_000_000_001)),
        None,
        "nothing else is asked"
    );
}

/// A duplicate of a dropped packet, replayed later from the feed's own source, after its run
/// was claimed: passed (it doesn't continue the line), counted as a duplicate, and the run it
/// interrupts goes on as it was.
#[test]
fn a_replayed_packet_is_a_duplicate_and_leaves_the_run_whole() {
    let (packets, locate) = day(9, 1_000);
    let (want, _) = orders_of(book_trader(), &packets);
    let replayed = (40..packets.len())
        .find(|&i| classify(&packets[i], locate).2)
        .unwrap();
    // After the packet that ended its run, and one more.
    let ended = (replayed..packets.len())
        .find(|&i| !classify(&packets[i], locate).2)
        .unwrap();
    let mut feed = packets.clone();
    feed.insert(ended + 2, packets[replayed].clone());
    let (passed, _) = filter(&feed, locate);
    let (got, t) = orders_claimed(book_trader(), &passed);
    assert_eq!(got, want);
    let c = t.counters;
    let (first, next, _) = classify(&packets[replayed], locate);
    assert_eq!(c.gap_messages, 0, "{c:?}");
    // Its numbers were claimed as dropped-and-empty: the copy is a duplicate of them.
    assert_eq!(c.duplicate_messages, next - first, "{c:?}");
}

/// The one lie the filter can be told: the real packet at the line's next number is lost and
/// a forger on the feed's own address and port sends a candidate in its place, of the same
/// count, so that the next real packet lands exactly where the forgery ends. The program drops
/// the forgery and the claim covers the lost real messages: the trader skips them without a
/// gap. What it can hide is the forgery's count, at most the cap ([`CAP`]); here the real
/// packet held a SYNTH print, so one tick is hidden, and the orders differ by that alone.
#[test]
fn a_forged_packet_in_place_of_a_lost_one_hides_at_most_the_cap() {
    let (packets, locate) = day(11, 1_000);
    // A packet with a SYNTH print in it (so not a candidate), past the day's directory.
    let real = (400..packets.len())
        .find(|&i| {
            Packet::new_checked(&packets[i][..])
                .unwrap()
                .messages()
                .any(|m| m.unwrap()[..3] == [b'E', (locate >> 8) as u8, locate as u8])
        })
        .unwrap();
    let (first, next, _) = classify(&packets[real], locate);
    assert!(next - first <= u64::from(CAP));
    // The forgery: the packet of the same numbers before it (a candidate), renumbered.
    let donor = (1..real).rev().find(|&i| {
        let (f, n, c) = classify(&packets[i], locate);
        c && n - f == next - first
    });
    let donor = donor.expect("a candidate of the same count before it");
    let mut forged = packets[donor].clone();
    forged[10..18].copy_from_slice(&first.to_be_bytes());
    let mut feed = packets.clone();
    feed[real] = forged;
    let (passed, _) = filter(&feed, locate);
    let (_, t) = orders_claimed(book_trader(), &passed);
    let c = t.counters;
    assert_eq!(
        c.gap_messages, 0,
        "no gap is seen: that is the lie's cost, {c:?}"
    );
    let whole = orders_of(book_trader(), &packets).1.counters;
    let hidden = whole.book_messages - c.book_messages;
    assert!(hidden >= 1 && hidden <= u64::from(CAP), "{hidden} hidden");
    assert!(c.ticks < whole.ticks);
}

/// A forged packet far ahead of the line is not dropped (it doesn't continue the line): it
/// reaches the trader's gate, which holds it as a jump, and the real packets behind it are
/// passed unfiltered until the line reaches it. It costs the filter, not a tick.
#[test]
fn a_forged_jump_ahead_reaches_the_gate_and_costs_no_tick() {
    let (packets, locate) = day(13, 1_000);
    let (want, _) = orders_of(book_trader(), &packets);
    let at = 60;
    let mut forged = packets[at].clone();
    forged[10..18].copy_from_slice(&1_000_000u64.to_be_bytes());
    let mut feed = packets.clone();
    feed.insert(at, forged);
    let (passed, _) = filter(&feed, locate);
    assert!(
        passed.len() > feed.len() - at - 10,
        "everything after it is passed"
    );
    let (got, t) = orders_claimed(book_trader(), &passed);
    assert_eq!(got, want);
    let c = t.counters;
    assert_eq!((c.suspect_sequence, c.gap_messages), (1, 0), "{c:?}");
}

/// A trader that joins mid-session learns the feed from what reaches it: the program
/// filters nothing before the trader has confirmed the feed and pinned its source, and its
/// first claims after that are taken like any other.
#[test]
fn a_mid_session_join_learns_the_feed_then_takes_the_filters_claims() {
    let (packets, locate) = day(17, 1_000);
    let join = 30;
    let learner = || {
        Trader::new(Params::from_n(6).unwrap(), Some(synth()))
            .with_symbols(&[])
            .unwrap()
    };
    let (want, whole) = orders_of(learner(), &packets[join..]);
    let mut t = learner();
    let mut run = Run::default();
    let mut orders = Vec::new();
    for p in &packets[join..] {
        // Before the feed is known the program passes everything, unclaimed.
        let claim = if t.first_seq().is_none() {
            None
        } else {
            let (first, next, candidate) = classify(p, locate);
            match run.step(first, next, candidate) {
                Verdict::Drop => continue,
                Verdict::Pass(claim) => Some(claim),
            }
        };
        t.on_packet_claimed(
            Line::A,
            p,
            claim,
            || 0,
            |o| {
                orders.push((o.token, o.side, o.price.0));
                true
            },
        );
        t.settle();
    }
    assert_eq!(orders, want);
    let c = t.counters;
    assert!(c.filtered_skipped > 0, "{c:?}");
    assert_eq!(c.gap_messages, 0, "{c:?}");
    assert_eq!(c.messages + c.filtered_skipped, whole.counters.messages);
}
