//! The streamed file: the packer's rules, the two readers, the pre-pass against the in-memory
//! feed, the pacing at the file's timestamps, the bounded memory, the re-request window and the
//! capture rebuilt after the run. Files are written to the temporary directory by
//! `wire::itch::file::Writer`; no test needs a privilege.
use std::{
    io::Write as _,
    net::UdpSocket,
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64},
    },
};

use paths::Expect;
use results::ParityVerdict;
use wire::{
    itch::{Price4, Stock},
    moldudp64::Request,
};

use super::*;
use crate::{
    Exchange, Multiplier, Pace, Rate,
    feed::Source,
    retransmit::{self, Refusal, WINDOW_BYTES_PER_MESSAGE, Window},
    tests::{lab, stock},
};
use trader_core::trade_message;

/// 04:00, when NASDAQ's day starts, ns since midnight.
const FOUR_AM: u64 = 4 * 3600 * 1_000_000_000;

/// A file in the temporary directory, removed when dropped.
struct Tmp(PathBuf);

impl Tmp {
    fn new(name: &str) -> Tmp {
        Tmp(std::env::temp_dir().join(format!("t2t-stream-{}-{name}", std::process::id())))
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A header as every ITCH 5.0 message starts, of `len` bytes in all, type `kind`, at `ns`.
fn message(kind: u8, len: usize, ns: u64) -> Vec<u8> {
    let mut m = vec![0u8; len];
    m[0] = kind;
    if len >= TIMESTAMP.end {
        m[TIMESTAMP].copy_from_slice(&ns.to_be_bytes()[2..]);
    }
    m
}

fn trade(stock: Stock, i: u64, price: f64, ns: u64) -> Vec<u8> {
    let mut m = vec![0u8; itch::trade::LEN];
    trade_message(i, stock, Price4::from_f64_quantised(price).unwrap(), ns)
        .emit_into(&mut m)
        .unwrap();
    m
}

/// What a generated day holds: each message and its time in the file as the stream should see
/// it.
struct Day {
    messages: Vec<Vec<u8>>,
    file_ns: Vec<u64>,
}

/// A day-like mix of `n` messages from 04:00: Trades of the traded stock (one in `every`), of
/// another stock, Add Orders and System Events; gaps of nothing (one event's messages), of
/// nanoseconds, microseconds and now and then milliseconds; and now and then a message too short
/// to hold a timestamp, one stamped a little in the past, and one of an unknown type.
fn day(n: usize, every: u64, seed: u64) -> Day {
    let mut rng = Rng(seed | 1);
    let other = Stock::new("OTHER").unwrap();
    let closes = engine::data::gbm(seed, n);
    let (mut ts, mut clock) = (FOUR_AM, FOUR_AM);
    let mut day = Day {
        messages: Vec::with_capacity(n),
        file_ns: Vec::with_capacity(n),
    };
    for (i, &c) in closes.iter().enumerate() {
        if i > 0 {
            ts += match rng.below(100) {
                0..40 => 0,
                40..80 => 1 + rng.below(2_000),
                80..96 => 2_000 + rng.below(50_000),
                _ => 50_000 + rng.below(2_000_000),
            };
        }
        let i = i as u64;
        // The first message opens the file's clock: a System Event at 04:00.
        let pick = if i == 0 { 5 } else { rng.below(1000) };
        let (m, stamped) = match pick {
            0 => (vec![b'S'; 7], None),
            1 => (message(b'A', 36, ts - 500.min(ts)), Some(ts - 500.min(ts))),
            2 => (message(b'z', 44, ts), Some(ts)),
            _ if i > 0 && i.is_multiple_of(every) => (trade(stock(), i, c, ts), Some(ts)),
            k if k % 3 == 0 => (message(b'A', 36, ts), Some(ts)),
            k if k % 3 == 1 => (trade(other, i, c, ts), Some(ts)),
            _ => (message(b'S', 12, ts), Some(ts)),
        };
        if let Some(t) = stamped {
            clock = clock.max(t);
        }
        day.messages.push(m);
        day.file_ns.push(clock - FOUR_AM);
    }
    day
}

fn write_raw(path: &Path, messages: &[Vec<u8>]) {
    let mut w = itch::file::Writer::new(std::fs::File::create(path).unwrap());
    for m in messages {
        w.write_message(m).unwrap();
    }
    w.finish().unwrap();
}

/// The same bytes gzipped as NASDAQ publishes them, in two gzip members split mid-record (a
/// `MultiGzDecoder` reads on across them).
fn write_gz(path: &Path, raw: &Path) {
    let bytes = std::fs::read(raw).unwrap();
    let cut = bytes.len() / 3 + 1;
    let mut f = std::fs::File::create(path).unwrap();
    for part in [&bytes[..cut], &bytes[cut..]] {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(part).unwrap();
        f.write_all(&enc.finish().unwrap()).unwrap();
    }
}

fn session() -> Session {
    Session::new(paths::market::SESSION).unwrap()
}

fn config(path: &Path, rule: PackRule) -> StreamConfig {
    StreamConfig {
        path: path.to_path_buf(),
        rule,
        limit: Limit::default(),
        session: session(),
        first_seq: 1,
    }
}

/// Every packet of a stream: bytes, first sequence number, file times.
fn packets(config: &StreamConfig) -> Vec<(Vec<u8>, u64, Vec<u64>)> {
    let mut s = ItchStream::open(config).unwrap();
    let mut all = Vec::new();
    while let Some(meta) = s.advance().unwrap() {
        let p = s.current().unwrap();
        assert_eq!(p.meta(), meta);
        all.push((p.bytes().to_vec(), meta.first_seq, p.file_ns().to_vec()));
    }
    all
}

/// The messages of a MoldUDP64 packet.
fn blocks(bytes: &[u8]) -> Vec<Vec<u8>> {
    moldudp64::Packet::new_checked(bytes)
        .unwrap()
        .messages()
        .map(|m| m.unwrap().to_vec())
        .collect()
}

/// The packer's invariants over `messages` at `file_ns` under `rule`: every packet within the
/// MTU, every message exactly once and in order, sequence numbers contiguous, time never
/// backwards, and each packet cut only where the rule says.
fn check_packing(rule: PackRule, messages: &[Vec<u8>], file_ns: &[u64]) -> usize {
    let mut packer = Packer::new(rule, session(), 7);
    let mut out: Vec<(Vec<u8>, PacketMeta, Vec<u64>)> = Vec::new();
    let mut keep = |p: Packed, packer: &mut Packer| {
        out.push((p.bytes().to_vec(), p.meta(), p.file_ns().to_vec()));
        packer.recycle(p);
    };
    for (m, &ns) in messages.iter().zip(file_ns) {
        if let Some(p) = packer.push(m, ns).unwrap() {
            keep(p, &mut packer);
        }
    }
    if let Some(p) = packer.finish() {
        keep(p, &mut packer);
    }
    assert!(packer.finish().is_none(), "finished once");
    assert!(
        packer.buffers_made() <= 2,
        "{rule:?}: {}",
        packer.buffers_made()
    );
    let mut next_seq = 7;
    let mut all = Vec::new();
    let mut last_ns = 0;
    for (i, (bytes, meta, ns)) in out.iter().enumerate() {
        assert!(
            bytes.len() <= MAX_PAYLOAD,
            "{rule:?}: packet {i} is {}",
            bytes.len()
        );
        let p = moldudp64::Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.session(), session());
        assert_eq!(p.sequence(), next_seq, "{rule:?}: packet {i} contiguous");
        assert_eq!(meta.first_seq, next_seq);
        assert_eq!(usize::from(p.count()), ns.len());
        assert_eq!(meta.messages, p.count());
        next_seq += u64::from(p.count());
        assert!(
            ns.windows(2).all(|w| w[0] <= w[1]) && ns[0] >= last_ns,
            "time order"
        );
        last_ns = ns[ns.len() - 1];
        match rule {
            PackRule::Count(n) => assert!(ns.len() <= usize::from(n)),
            PackRule::Window { ns: w } => assert!(last_ns - ns[0] <= w, "{rule:?}: window"),
        }
        // Cut only where the rule says: the next packet's first message would not have joined.
        if let Some((_, next, next_ns)) = out.get(i + 1) {
            let first = &messages[(next.first_seq - 7) as usize];
            let fits = bytes.len() + 2 + first.len() <= MAX_PAYLOAD;
            let rule_allows = match rule {
                PackRule::Count(n) => ns.len() < usize::from(n),
                PackRule::Window { ns: w } => next_ns[0] - ns[0] <= w,
            };
            assert!(!(fits && rule_allows), "{rule:?}: packet {i} cut early");
        }
        all.extend(blocks(bytes));
    }
    assert_eq!(all, messages, "{rule:?}: every message once, in order");
    out.len()
}

#[test]
fn the_packer_keeps_packets_within_the_mtu_in_order_and_cuts_only_where_its_rule_says() {
    let d = day(20_000, 7, 42);
    let mut counts = Vec::new();
    for rule in [
        PackRule::Window { ns: 0 },
        PackRule::Window { ns: 1_000 },
        PackRule::Window { ns: 10_000 },
        PackRule::Window { ns: 1_000_000_000 },
        PackRule::Count(1),
        PackRule::Count(4),
        PackRule::Count(u16::MAX),
    ] {
        counts.push((rule, check_packing(rule, &d.messages, &d.file_ns)));
    }
    // Wider windows, fewer packets; a second's window and no count limit fill the MTU.
    assert!(counts[0].1 > counts[1].1 && counts[1].1 > counts[2].1 && counts[2].1 > counts[3].1);
    assert_eq!(counts[4].1, d.messages.len());
    assert_eq!(counts[3].1, counts[6].1, "{counts:?}");
    // Window 0: only messages of one timestamp share a packet.
    let bursts = d.file_ns.windows(2).filter(|w| w[0] != w[1]).count() + 1;
    assert!(counts[0].1 >= bursts, "{counts:?} vs {bursts} timestamps");
}

#[test]
fn a_message_no_packet_holds_and_numbers_past_the_top_are_errors() {
    let mut p = Packer::new(PackRule::Window { ns: 0 }, session(), 1);
    let e = p.push(&[], 0).unwrap_err().to_string();
    assert!(e.contains("message 1 (0 bytes)"), "{e}");
    let e = p.push(&[b'x'; 1451], 0).unwrap_err().to_string();
    assert!(e.contains("1451 bytes) doesn't fit"), "{e}");
    // 1450 bytes and their length fit a packet's 1452 after the header.
    assert!(p.push(&[b'x'; 1450], 0).unwrap().is_none());
    let mut top = Packer::new(PackRule::Count(10), session(), u64::MAX);
    top.push(b"S", 0).unwrap();
    let e = top.push(b"S", 0).unwrap_err().to_string();
    assert!(e.contains("would pass 2^64 - 1"), "{e}");
    assert_eq!(top.finish().unwrap().meta().first_seq, u64::MAX);
}

#[test]
fn the_files_clock_runs_forward_and_carries_a_missing_stamp() {
    let mut c = FileClock::default();
    // Before any timestamp: the start.
    assert_eq!(c.time(b"S"), 0);
    assert_eq!(c.time(&message(b'S', 12, FOUR_AM)), 0);
    assert_eq!(c.time(&message(b'S', 12, FOUR_AM + 5)), 5);
    // Too short, or not a time of day: the time before.
    assert_eq!(c.time(&[b'A'; 10]), 5);
    assert_eq!(c.time(&message(b'A', 36, DAY_NS)), 5);
    // Behind: held.
    assert_eq!(c.time(&message(b'A', 36, FOUR_AM + 2)), 5);
    assert_eq!(c.time(&message(b'A', 36, FOUR_AM + 9)), 9);
    assert_eq!((c.invalid, c.behind), (3, 1));
}

#[test]
fn the_gz_and_raw_files_stream_the_same_packets() {
    let (raw, gz) = (Tmp::new("same.itch"), Tmp::new("same.itch.gz"));
    let d = day(30_000, 5, 7);
    write_raw(&raw.0, &d.messages);
    write_gz(&gz.0, &raw.0);
    assert!(std::fs::metadata(&gz.0).unwrap().len() < std::fs::metadata(&raw.0).unwrap().len());
    for rule in [PackRule::Window { ns: 10_000 }, PackRule::Count(3)] {
        let a = packets(&config(&raw.0, rule));
        let b = packets(&config(&gz.0, rule));
        assert_eq!(a.len(), b.len(), "{rule:?}");
        assert!(a == b, "{rule:?}: the same packets");
        let all: Vec<Vec<u8>> = a.iter().flat_map(|(bytes, ..)| blocks(bytes)).collect();
        assert_eq!(all, d.messages);
        let times: Vec<u64> = a.iter().flat_map(|(.., ns)| ns.iter().copied()).collect();
        assert_eq!(times, d.file_ns, "{rule:?}: the file's clock");
    }
    let f = |p: &Path| {
        prepass(
            &config(p, PackRule::Window { ns: 0 }),
            stock(),
            || false,
            |_| {},
        )
    };
    let (fa, fb) = (f(&raw.0).unwrap(), f(&gz.0).unwrap());
    assert_eq!((fa.ticks, fa.messages), (fb.ticks, fb.messages));
    assert_eq!(
        fa.streamed.unwrap().file_bytes,
        fb.streamed.unwrap().file_bytes
    );
}

#[test]
fn the_prepass_finds_the_ticks_the_in_memory_feed_found_and_packs_as_it_does() {
    let raw = Tmp::new("prepass.itch");
    let d = day(20_000, 9, 11);
    write_raw(&raw.0, &d.messages);
    for (limit, batch) in [(None, 1), (Some(7_777), 3), (None, 40)] {
        let old = Feed::build(&Source::Itch(raw.0.clone()), limit, batch, stock()).unwrap();
        let mut c = config(&raw.0, PackRule::Count(batch));
        c.limit.messages = limit;
        let new = prepass(&c, stock(), || false, |_| {}).unwrap();
        assert!(old.ticks.len() > 100, "{}", old.ticks.len());
        assert_eq!(new.ticks, old.ticks, "limit {limit:?} batch {batch}");
        assert_eq!(new.messages, old.messages);
        assert_eq!((new.first_seq, new.session), (old.first_seq, old.session));
        let st = new.streamed.as_ref().unwrap();
        assert_eq!(st.packets, old.packets.len() as u64);
        // At a --rate the stream's packets are the in-memory feed's, byte for byte.
        let streamed = packets(&c);
        assert_eq!(streamed.len(), old.packets.len());
        for (i, (bytes, first, _)) in streamed.iter().enumerate() {
            assert_eq!(&bytes[..], old.packet(i), "packet {i}");
            assert_eq!(*first, old.packets[i].first_seq);
        }
    }
    let empty = Tmp::new("empty.itch");
    write_raw(&empty.0, &[]);
    let e = prepass(
        &config(&empty.0, PackRule::Count(1)),
        stock(),
        || false,
        |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("holds no ITCH messages"), "{e}");
    let cut = Tmp::new("cut.itch");
    std::fs::write(&cut.0, [0u8, 44, b'P', 0, 1]).unwrap();
    let e = format!(
        "{:#}",
        prepass(
            &config(&cut.0, PackRule::Count(1)),
            stock(),
            || false,
            |_| {}
        )
        .unwrap_err()
    );
    assert!(e.contains("bad ITCH file") && e.contains("cut.itch"), "{e}");
    let stopped = prepass(
        &config(&raw.0, PackRule::Count(1)),
        stock(),
        || true,
        |_| {},
    );
    assert!(stopped.unwrap_err().to_string().contains("stopped"));
}

#[test]
fn the_streamers_memory_does_not_grow_with_the_file() {
    let (small, large) = (Tmp::new("small.itch"), Tmp::new("large.itch"));
    write_raw(&small.0, &day(1_000, 1_000, 3).messages);
    let big = day(300_000, 1_000, 3);
    write_raw(&large.0, &big.messages);
    assert!(std::fs::metadata(&large.0).unwrap().len() > 9_000_000);
    // Streamed with the read-ahead queue kept full: the most packets ever in hand.
    let held = |path: &Path| {
        let mut s = ItchStream::open(&config(path, PackRule::Window { ns: 10_000 })).unwrap();
        let mut window = Window::new(session(), 1_000, 1).unwrap();
        let reserved = window.reserved_bytes();
        let (mut most, mut n) = (0, 0u64);
        while let Some(meta) = s.advance().unwrap() {
            for _ in 0..3 {
                s.ahead().unwrap();
            }
            window.push(meta, s.current().unwrap().bytes());
            most = most.max(s.held_bytes());
            n += u64::from(meta.messages);
        }
        assert_eq!(window.reserved_bytes(), reserved, "the window never grows");
        (s.buffers_made(), most, n)
    };
    let (made_small, held_small, _) = held(&small.0);
    let (made_large, held_large, n) = held(&large.0);
    assert_eq!(n, 300_000);
    assert!(made_large <= AHEAD + 2, "{made_large} packet buffers");
    assert!(made_small <= made_large);
    assert!(held_large <= (AHEAD + 2) * 6_000, "{held_large} bytes");
    assert!(held_small <= held_large);
    // The pre-pass keeps the ticks and nothing per message: no packets, no bytes.
    let f = prepass(
        &config(&large.0, PackRule::Window { ns: 10_000 }),
        stock(),
        || false,
        |_| {},
    )
    .unwrap();
    assert_eq!(f.messages, 300_000);
    assert_eq!(f.ticks.len(), 299);
    assert_eq!((f.bytes.capacity(), f.packets.capacity()), (0, 0));
    assert!(f.ticks.capacity() < 1_024, "{}", f.ticks.capacity());
    // And the exchange's schedule holds the ticks only, not the file's messages.
    let ex = Exchange::new(
        &f,
        engine::Params::from_n(6).unwrap(),
        Expect::Signals,
        stock(),
    )
    .unwrap();
    assert_eq!(ex.schedule.len(), 299);
}

/// A streamed run through the fake trader of the exchange's tests.
struct Run {
    feed: Feed,
    run: crate::SendLoop,
    settled: crate::Settlement,
    sent: Vec<Vec<u8>>,
    lateness_max_us: f64,
    /// Each tick's due time and when its packet's send started.
    ticks: Vec<(u64, Option<(u64, u64)>)>,
}

/// `(refuse, step)`: the send attempt the port refuses, and the fake clock's step per read, ns.
fn run_streamed(
    path: &Path,
    rule: PackRule,
    pace: Pace,
    expect: Expect,
    (refuse, step): (Option<usize>, u64),
) -> Run {
    let feed = prepass(&config(path, rule), stock(), || false, |_| {}).unwrap();
    let mut ex = Exchange::new(&feed, engine::Params::from_n(6).unwrap(), expect, stock()).unwrap();
    let (wire, mut d) = lab(&ex, step);
    wire.borrow_mut().refuse = refuse;
    let st = feed.streamed.clone().unwrap();
    let mut out = ItchStream::open(&st.config)
        .unwrap()
        .with_packets(st.packets);
    let run = d.send(&mut ex, &mut out, pace, || false, |_| {}).unwrap();
    d.drain(&mut ex, 1_000_000, || false);
    let ticks = feed
        .ticks
        .iter()
        .map(|t| {
            let slot = ex.schedule.sent_slot(t.seq);
            let started = slot.and_then(|(i, due)| Some((due, ex.schedule.started(i)?)));
            (t.seq, started)
        })
        .collect();
    let lateness_max_us = d.send_lateness().summary().max_us;
    let settled = ex.settle();
    let sent = wire.borrow().sent.clone();
    Run {
        feed,
        run,
        settled,
        sent,
        lateness_max_us,
        ticks,
    }
}

#[test]
fn a_file_is_paced_at_its_timestamps_over_the_multiplier_and_its_packet_at_its_last() {
    let raw = Tmp::new("paced.itch");
    // Every message a tick, so the schedule holds each one's due time.
    let d = day(400, 1, 5);
    let ticks_only: Vec<Vec<u8>> = (0..400)
        .map(|i| {
            trade(
                stock(),
                i as u64,
                100.0 + i as f64 * 0.01,
                FOUR_AM + d.file_ns[i],
            )
        })
        .collect();
    write_raw(&raw.0, &ticks_only);
    let file_ns = &d.file_ns;
    for m in ["1", "2", "0.5", "37.5"] {
        let m: Multiplier = m.parse().unwrap();
        // A fine clock (50 ns a read): the fake trader's answers cost the loop clock reads.
        let r = run_streamed(
            &raw.0,
            PackRule::Window { ns: 10_000 },
            Pace::FileTime(m),
            Expect::Every,
            (None, 50),
        );
        assert_eq!(r.run.late_sends, 0, "x{m}");
        assert_eq!(r.settled.sent.messages, 400);
        assert_eq!(
            r.sent.len() as u64,
            r.feed.streamed.as_ref().unwrap().packets
        );
        for (k, (seq, at)) in r.ticks.iter().enumerate() {
            let (due, started) = at.unwrap_or_else(|| panic!("x{m}: tick {seq} not sent"));
            assert_eq!(
                due,
                r.run.start_ns + m.scale(file_ns[k]),
                "x{m}: message {k}"
            );
            assert!(started >= due, "x{m}: message {k} left before it was due");
        }
        // A packet goes when its last message is due, within the fake clock's few steps.
        for bytes in &r.sent {
            let p = moldudp64::Packet::new_checked(&bytes[..]).unwrap();
            let last = p.sequence() + u64::from(p.count()) - 1;
            let (due, started) = r.ticks[(last - 1) as usize].1.unwrap();
            assert!(
                started - due < 10_000,
                "x{m}: packet of {last} late by {}",
                started - due
            );
        }
        assert!(r.lateness_max_us < 10.0, "x{m}: {}", r.lateness_max_us);
        // The run lasts the file's span over the multiplier.
        let span = m.scale(*file_ns.last().unwrap());
        assert!(r.run.end_ns - r.run.start_ns >= span, "x{m}");
        assert_eq!(
            r.settled.parity.verdict,
            ParityVerdict::NotApplicable {
                answered: 400,
                ticks: 400
            }
        );
    }
}

#[test]
fn at_top_speed_no_packet_waits_for_its_timestamp() {
    let raw = Tmp::new("top.itch");
    let d = day(2_000, 3, 9);
    write_raw(&raw.0, &d.messages);
    let span = *d.file_ns.last().unwrap();
    assert!(span > 50_000_000, "a span worth waiting for: {span}");
    let top = run_streamed(
        &raw.0,
        PackRule::Window { ns: 10_000 },
        Pace::Rate(Rate::Max),
        Expect::Every,
        (None, 1_000),
    );
    assert_eq!(top.run.late_sends, 0);
    assert_eq!(top.settled.sent.messages, 2_000);
    // Far faster than the file: each packet went when the loop got to it.
    assert!(
        top.run.end_ns.saturating_sub(top.run.start_ns) < span / 4,
        "{:?}",
        top.run
    );
    // The same packets as at the file's timestamps: the packing is the file's, not the speed's.
    let paced = run_streamed(
        &raw.0,
        PackRule::Window { ns: 10_000 },
        Pace::FileTime("1000".parse().unwrap()),
        Expect::Every,
        (None, 1_000),
    );
    assert!(top.sent == paced.sent);
}

#[test]
fn a_streamed_run_keeps_parity_with_the_backtest() {
    let raw = Tmp::new("parity.itch");
    let d = day(6_000, 4, 21);
    write_raw(&raw.0, &d.messages);
    let r = run_streamed(
        &raw.0,
        PackRule::Window { ns: 10_000 },
        Pace::FileTime("20".parse().unwrap()),
        Expect::Signals,
        (None, 1_000),
    );
    assert!(r.settled.parity.expected_orders > 50);
    assert_eq!(
        r.settled.parity.verdict,
        ParityVerdict::Ok,
        "{}",
        r.settled.parity.explanation
    );
}

#[test]
fn a_streamed_capture_is_the_in_memory_feeds_and_leaves_out_what_was_refused() {
    let raw = Tmp::new("pcap.itch");
    let d = day(600, 2, 13);
    write_raw(&raw.0, &d.messages);
    let rate = Rate::PerSec(2_000.0);
    for refuse in [None, Some(17)] {
        // The in-memory feed, sent as the replay always sent it, and its capture.
        let old = Feed::build(&Source::Itch(raw.0.clone()), None, 3, stock()).unwrap();
        let mut ex = Exchange::new(
            &old,
            engine::Params::from_n(6).unwrap(),
            Expect::Every,
            stock(),
        )
        .unwrap();
        let (wire, mut dr) = lab(&ex, 1_000);
        wire.borrow_mut().refuse = refuse;
        dr.send_feed(&mut ex, rate, || false, |_| {}).unwrap();
        let old_ticks: Vec<Option<u64>> = old
            .ticks
            .iter()
            .map(|t| ex.schedule.sent_at(t.seq))
            .collect();
        let s = ex.settle();
        let want: Vec<(u64, Vec<u8>)> = s
            .schedule
            .sent_packets(&old)
            .map(|(t, b)| (t, b.to_vec()))
            .collect();
        // The same file streamed at the same rate, and its capture rebuilt from the file.
        let new = run_streamed(
            &raw.0,
            PackRule::Count(3),
            Pace::Rate(rate),
            Expect::Every,
            (refuse, 1_000),
        );
        let new_ticks: Vec<Option<u64>> = new.ticks.iter().map(|t| t.1.map(|x| x.0)).collect();
        assert_eq!(new_ticks, old_ticks, "refuse {refuse:?}");
        let mut got = Vec::new();
        let n = sent_packets(
            new.feed.streamed.as_ref().unwrap(),
            &new.settled.schedule,
            Pace::Rate(rate),
            new.run.start_ns,
            |t, b| {
                got.push((t, b.to_vec()));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(n as usize, got.len());
        assert_eq!(got.len(), old.packets.len() - usize::from(refuse.is_some()));
        assert!(got == want, "refuse {refuse:?}: the same capture");
        assert_eq!(new.settled.sent, s.sent);
    }
}

/// The packets of a stream, as (meta, bytes).
fn stream_packets(path: &Path) -> Vec<(PacketMeta, Vec<u8>)> {
    let mut s = ItchStream::open(&config(path, PackRule::Window { ns: 10_000 })).unwrap();
    let mut all = Vec::new();
    while let Some(meta) = s.advance().unwrap() {
        all.push((meta, s.current().unwrap().bytes().to_vec()));
    }
    all
}

fn request(sequence: u64, count: u16) -> [u8; Request::LEN] {
    Request {
        session: session(),
        sequence,
        count,
    }
    .emit()
}

#[test]
fn the_window_serves_the_last_messages_and_refuses_older_ones_as_out_of_it() {
    let raw = Tmp::new("window.itch");
    let d = day(20_000, 5, 17);
    write_raw(&raw.0, &d.messages);
    let all = stream_packets(&raw.0);
    let mut w = Window::new(session(), 1_000, 1).unwrap();
    let reserved = w.reserved_bytes();
    assert!(reserved <= 1_000 * WINDOW_BYTES_PER_MESSAGE + MAX_PAYLOAD + 1_001 * 32);
    let mut buf = [0u8; MAX_PAYLOAD];
    assert_eq!(
        w.answer(&request(1, 1), 1, &mut buf),
        Err(Refusal::NotAvailable)
    );
    for (meta, bytes) in &all {
        w.push(*meta, bytes);
    }
    assert_eq!(w.reserved_bytes(), reserved);
    let end = 20_001;
    assert_eq!(w.end(), end);
    assert!(w.oldest() >= end - 1_000);
    // Inside the window: the file's own messages, as many as fit.
    for first in [w.oldest(), end - 500, end - 1] {
        let (len, count) = w.answer(&request(first, 30), end, &mut buf).unwrap();
        let p = moldudp64::Packet::new_checked(&buf[..len]).unwrap();
        assert_eq!(p.sequence(), first);
        assert_eq!(u64::from(count), 30.min(end - first));
        for (k, m) in p.messages().enumerate() {
            assert_eq!(m.unwrap(), &d.messages[(first - 1) as usize + k][..]);
        }
    }
    // Older: out of the window; not sent yet, or nothing asked: not available.
    for (seq, count, want) in [
        (end - 1_001, 1, Refusal::OutOfWindow),
        (1, 5, Refusal::OutOfWindow),
        (end, 1, Refusal::NotAvailable),
        (end - 5, 0, Refusal::NotAvailable),
    ] {
        assert_eq!(
            w.answer(&request(seq, count), end, &mut buf),
            Err(want),
            "{seq}+{count}"
        );
    }
    // Only up to the frontier the server is told, when that is before the window's end.
    let (_, count) = w.answer(&request(end - 10, 30), end - 5, &mut buf).unwrap();
    assert_eq!(count, 5);
}

#[test]
fn the_server_counts_re_requests_that_fell_out_of_the_window() {
    let raw = Tmp::new("serve.itch");
    write_raw(&raw.0, &day(5_000, 5, 19).messages);
    let mut w = Window::new(session(), 100, 1).unwrap();
    for (meta, bytes) in stream_packets(&raw.0) {
        w.push(meta, &bytes);
    }
    let w = Mutex::new(w);
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let at = server.local_addr().unwrap();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let frontier = AtomicU64::new(5_001);
    let done = AtomicBool::new(false);
    let report = std::thread::scope(|s| {
        let h = s.spawn(|| retransmit::serve(&w, &server, &frontier, &done));
        for (seq, count) in [(4_950, 10), (10, 3), (4_000, 1), (4_990, 5)] {
            client.send_to(&request(seq, count), at).unwrap();
        }
        let mut answer = [0u8; MAX_PAYLOAD];
        for _ in 0..2 {
            client.recv_from(&mut answer).unwrap();
        }
        // Wait until the two refusals were read too, then stop.
        std::thread::sleep(std::time::Duration::from_millis(100));
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        h.join().unwrap().unwrap()
    });
    assert_eq!(report.requests, 4);
    assert_eq!((report.answers, report.served_messages), (2, 15));
    assert_eq!(report.out_of_window, 2);
    assert_eq!(report.not_available, 0);
}

#[test]
fn the_driver_fills_the_window_as_it_sends() {
    let raw = Tmp::new("fill.itch");
    let d = day(3_000, 4, 23);
    write_raw(&raw.0, &d.messages);
    let feed = prepass(
        &config(&raw.0, PackRule::Window { ns: 10_000 }),
        stock(),
        || false,
        |_| {},
    )
    .unwrap();
    let mut ex = Exchange::new(
        &feed,
        engine::Params::from_n(6).unwrap(),
        Expect::Every,
        stock(),
    )
    .unwrap();
    let (_wire, d0) = lab(&ex, 1_000);
    let window = Arc::new(Mutex::new(Window::new(session(), 200, 1).unwrap()));
    let mut dr = d0.keep_window(Arc::clone(&window));
    let st = feed.streamed.clone().unwrap();
    let mut out = ItchStream::open(&st.config)
        .unwrap()
        .with_packets(st.packets);
    dr.send(&mut ex, &mut out, Pace::Rate(Rate::Max), || false, |_| {})
        .unwrap();
    let w = window.lock().unwrap();
    assert_eq!(w.end(), 3_001);
    let mut buf = [0u8; MAX_PAYLOAD];
    let (len, count) = w.answer(&request(2_900, 3), 3_001, &mut buf).unwrap();
    assert_eq!(count, 3);
    let p = moldudp64::Packet::new_checked(&buf[..len]).unwrap();
    assert_eq!(
        p.messages().next().unwrap().unwrap(),
        &d.messages[2_899][..]
    );
    assert_eq!(
        w.answer(&request(2_000, 3), 3_001, &mut buf),
        Err(Refusal::OutOfWindow)
    );
}

#[test]
fn pack_windows_read_back_as_written() {
    for (s, ns) in [
        ("0", 0),
        ("500ns", 500),
        ("10us", 10_000),
        ("1ms", 1_000_000),
        ("1s", 1_000_000_000),
    ] {
        let w: PackWindow = s.parse().unwrap();
        assert_eq!(w.ns(), ns);
        assert_eq!(w.to_string(), s);
    }
    assert_eq!("2000ns".parse::<PackWindow>().unwrap().to_string(), "2us");
    assert_eq!("7µs".parse::<PackWindow>().unwrap().ns(), 7_000);
    for bad in ["", "10", "us", "-1us", "1.5us", "2s", "10 us"] {
        assert!(bad.parse::<PackWindow>().is_err(), "{bad}");
    }
    assert_eq!(
        retransmit::LONGEST_ITCH_MESSAGE,
        itch::MESSAGE_LENGTHS.iter().map(|&(_, l)| l).max().unwrap(),
        "the window's bytes per message hold the longest ITCH message"
    );
}
