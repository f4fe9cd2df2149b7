use super::*;
use book::{Book, Event, PrintKind};
use wire::itch::Message;

fn small(seed: u64, synth: SynthPrints) -> Config {
    Config {
        seed,
        bars: 2_000,
        per_print: 50,
        symbols: 300,
        zipf: Config::ZIPF,
        synth,
    }
}

fn bytes(config: Config) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 64];
    for m in Generator::new(config).unwrap() {
        let n = m.emit_into(&mut buf).unwrap();
        out.extend_from_slice(&buf[..n]);
    }
    out
}

#[test]
fn a_market_of_no_other_symbol_is_refused_and_one_of_no_tick_is_a_quiet_day() {
    let none = Config {
        symbols: 0,
        ..small(1, SynthPrints::Executions)
    };
    assert!(
        Generator::new(none)
            .unwrap_err()
            .contains("at least one symbol")
    );
    // No tick: the day's admin and nothing else.
    let quiet = Config {
        bars: 0,
        ..small(1, SynthPrints::Executions)
    };
    let n = Generator::new(quiet).unwrap().count();
    assert_eq!(
        n,
        6 + 3 * 301 + 1 + 2 * 300,
        "system events, R/H/Y each, V, two crosses"
    );
}

#[test]
fn a_seed_is_one_feed() {
    let a = bytes(small(3, SynthPrints::Executions));
    assert_eq!(a, bytes(small(3, SynthPrints::Executions)));
    assert_ne!(a, bytes(small(4, SynthPrints::Executions)));
}

/// Every message is valid against a book, the lab symbol prints exactly the GBM series, and
/// no generated symbol's book is ever crossed or locked.
fn check_against_the_book(synth: SynthPrints) {
    let config = small(42, synth);
    let mut g = Generator::new(config).unwrap();
    let want: Vec<Price4> = g.ticks().to_vec();
    let synth_locate = g.synth_locate();
    let mut book = Book::new(book::Config::default());
    let mut prints = Vec::new();
    let mut last_t = 0;
    let mut n = 0u64;
    let mut ended = false;
    for m in &mut g {
        n += 1;
        let t = m.timestamp().nanos();
        assert!(
            t >= last_t,
            "message {n}: time went back from {last_t} to {t}"
        );
        last_t = t;
        // Nothing but the end of messages after the end of system hours.
        if let Message::SystemEvent(e) = m {
            ended |= e.event_code == b'E';
        } else {
            assert!(!ended, "message {n} ({m:?}) after the end of system hours");
        }
        // The bytes round-trip through the codec.
        let mut buf = [0u8; 64];
        let len = m.emit_into(&mut buf).unwrap();
        assert_eq!(wire::itch::parse(&buf[..len]), Ok(m));
        match book.apply(&m) {
            Event::Refused(r) => panic!("message {n} ({m:?}) refused: {r:?}"),
            Event::Print(p) if p.locate == synth_locate => {
                let kind = match synth {
                    SynthPrints::Executions => PrintKind::Executed,
                    SynthPrints::Trades => PrintKind::Trade,
                };
                assert_eq!((p.kind, p.shares), (kind, SYNTH_SHARES));
                prints.push(p.price);
            }
            _ => {}
        }
        let s = book.stock(m.stock_locate());
        if let (Some(b), Some(a)) = (s.bid(), s.ask()) {
            assert!(
                b.price < a.price,
                "message {n}: {} crossed: {b:?} {a:?}",
                m.stock_locate()
            );
        }
    }
    assert!(ended, "the day has its end of system hours");
    assert_eq!(prints, want, "SYNTH's prints are the GBM series");
    assert_eq!(book.stats().refused(), 0);
    assert_eq!(book.stats().messages(), n);
    assert_eq!(g.stats().messages(), n);
    // About bars × (per_print + 2) messages, plus the day's admin.
    let flow = config.bars as u64 * u64::from(config.per_print);
    assert!(n > flow && n < flow + 10 * u64::from(config.symbols) + 3 * config.bars as u64);
}

#[test]
fn the_flow_ends_before_the_end_of_system_hours_for_every_seed() {
    for seed in 0..12 {
        let end = 20 * 3600 * 1_000_000_000u64;
        let last_flow = Generator::new(small(seed, SynthPrints::Executions))
            .unwrap()
            .filter(|m| !matches!(m, Message::SystemEvent(_)))
            .map(|m| m.timestamp().nanos())
            .max()
            .unwrap();
        assert!(
            last_flow < end,
            "seed {seed}: flow at {last_flow} ns, the day ends at {end}"
        );
    }
}

#[test]
fn every_message_valid_against_the_book_executions() {
    check_against_the_book(SynthPrints::Executions);
}

#[test]
fn every_message_valid_against_the_book_trades() {
    check_against_the_book(SynthPrints::Trades);
}

#[test]
fn the_mix_follows_the_table_and_the_day_has_its_shape() {
    // Closer to a day's shape than `small`: ages depend on how many symbols share the flow.
    let config = Config {
        bars: 20_000,
        symbols: 2_000,
        ..small(9, SynthPrints::Executions)
    };
    let mut g = Generator::new(config).unwrap();
    let mut in_first_minute = 0u64;
    let mut in_session = 0u64;
    let mut symbols = std::collections::HashMap::<u16, u64>::new();
    for m in &mut g {
        let s = m.timestamp().nanos() / 1_000_000_000;
        if (OPEN_S..OPEN_S + 60).contains(&s) {
            in_first_minute += 1;
        }
        if (OPEN_S..CLOSE_S).contains(&s) {
            in_session += 1;
        }
        *symbols.entry(m.stock_locate()).or_default() += 1;
    }
    let st = g.stats();
    let total = st.messages() as f64;
    let share = |k: u8| st.by_kind[usize::from(k)] as f64 / total;
    // Adds and deletes dominate, each within a few points of the table.
    assert!((share(b'A') - 0.433).abs() < 0.04, "A {}", share(b'A'));
    assert!((share(b'D') - 0.419).abs() < 0.04, "D {}", share(b'D'));
    assert!((share(b'U') - 0.087).abs() < 0.02, "U {}", share(b'U'));
    assert!(share(b'E') > 0.01 && share(b'X') > 0.005 && share(b'P') > 0.001);
    for k in *b"SRHYVQIFCLB" {
        if k != b'B' {
            assert!(st.by_kind[usize::from(k)] > 0, "no {:?}", char::from(k));
        }
    }
    // The open's first minute runs several times a mean session minute.
    let mean_minute = in_session as f64 / 390.0;
    assert!(
        in_first_minute as f64 > 4.0 * mean_minute,
        "{in_first_minute} vs {mean_minute}"
    );
    // Skewed: the busiest tenth of the symbols carries several times its share of the flow,
    // and the busiest symbol many times the median one.
    let mut counts: Vec<u64> = symbols.into_values().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let top: u64 = counts[..counts.len() / 10].iter().sum();
    assert!(top as f64 > 0.25 * total, "top 10 %: {top} of {total}");
    assert!(
        counts[0] > 8 * counts[counts.len() / 2],
        "{} vs {}",
        counts[0],
        counts[counts.len() / 2]
    );
    // The ages of the orders named, in messages of the feed, within the bands that SEC MIDAS's
    // 2013 cancel ages give at a real session's 12.6 k msg/s (500 µs, 50 ms, 0.5 s: 6, 630,
    // 6,300 messages), with room for this small day's 2,000 symbols.
    let young = st.age_share_below_msgs(6);
    let under_630 = st.age_share_below_msgs(630);
    let over_6300 = 1.0 - st.age_share_below_msgs(6_300);
    assert!((0.01..0.12).contains(&young), "{young}");
    assert!((0.05..0.5).contains(&under_630), "{under_630}");
    assert!(over_6300 > 0.45, "{over_6300}");
}
