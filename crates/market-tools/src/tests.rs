use super::*;

fn small() -> market::Config {
    market::Config {
        per_print: 20,
        symbols: 100,
        ..market::Config::new(42, 1_000)
    }
}

fn options(file: PathBuf) -> ReplayOptions {
    ReplayOptions {
        file,
        symbols: vec![],
        prints_out: None,
        limit: None,
        book: book::Config {
            live_orders: 1 << 12,
            locates: 128,
            levels: 8,
        },
        per_message: true,
        progress: false,
        chunk_bytes: CHUNK,
    }
}

#[test]
fn a_generated_day_replays_clean_and_synth_prints_the_series() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("day.itch");
    let g = generate(small(), &file, false).unwrap();
    assert_eq!(g.bytes, std::fs::metadata(&file).unwrap().len());
    let mut o = options(file);
    o.symbols = vec![market::SYNTH.into()];
    o.prints_out = Some(dir.path().to_path_buf());
    let s = replay(&o).unwrap();
    assert_eq!(s.messages, g.messages);
    assert_eq!(s.bytes, g.bytes);
    assert_eq!(s.bad_input, 0, "{:?}", s.bad_input_first);
    assert_eq!(s.truncated_at, None);
    assert_eq!(s.ns_per_message.samples, g.messages);
    let by_type: u64 = s.by_type.values().map(|p| p.samples).sum();
    assert_eq!(by_type, g.messages);
    let synth = &s.symbols[market::SYNTH];
    assert_eq!(synth.locate, g.synth_locate);
    assert_eq!(synth.prints, 1_000);
    assert_eq!(s.symbols.len(), 1);
    // The prints file is the GBM series, quantised, one line a tick.
    let csv = std::fs::read_to_string(dir.path().join("SYNTH.csv")).unwrap();
    let want: Vec<String> = engine::data::gbm(42, 1_000)
        .iter()
        .map(|&c| {
            format!(
                "{},100",
                wire::itch::Price4::from_f64_quantised(c).unwrap().0
            )
        })
        .collect();
    let got: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(csv.lines().next(), Some("price,shares"));
    assert_eq!(got, want);
    assert_eq!(
        synth.last_price.map(|p| p.to_string()),
        want.last()
            .map(|l| l.split(',').next().unwrap().to_string())
    );
}

#[test]
fn gzip_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("day.itch");
    generate(small(), &raw, false).unwrap();
    let gz = dir.path().join("day.itch.gz");
    let mut enc =
        flate2::write::GzEncoder::new(File::create(&gz).unwrap(), flate2::Compression::fast());
    io::copy(&mut File::open(&raw).unwrap(), &mut enc).unwrap();
    enc.finish().unwrap();
    let a = replay(&options(raw)).unwrap();
    let b = replay(&options(gz)).unwrap();
    assert_eq!(
        (a.messages, a.bytes, &a.symbols),
        (b.messages, b.bytes, &b.symbols)
    );
    assert!(a.symbols.len() > 50);
}

#[test]
fn bad_records_are_counted_with_their_offsets_and_the_replay_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.itch");
    generate(small(), &good, false).unwrap();
    let clean = replay(&options(good.clone())).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    // Splice three bad records in after the first record: an unknown type, a known type of
    // the wrong length, and an execution of an order nobody added; and cut the file's last
    // record short.
    let first = 2 + usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
    let mut bad = bytes[..first].to_vec();
    let off1 = bad.len() as u64;
    bad.extend_from_slice(&[0, 3, b'Z', 1, 2]);
    let off2 = bad.len() as u64;
    bad.extend_from_slice(&[0, 5, b'A', 0, 0, 0, 0]);
    let off3 = bad.len() as u64;
    let mut e = [0u8; 31];
    wire::itch::Message::OrderExecuted(wire::itch::OrderExecutedRepr {
        stock_locate: 1,
        tracking_number: 0,
        timestamp: wire::itch::Timestamp::from_nanos(1).unwrap(),
        order_ref: u64::MAX,
        executed_shares: 100,
        match_number: 1,
    })
    .emit_into(&mut e)
    .unwrap();
    bad.extend_from_slice(&[0, 31]);
    bad.extend_from_slice(&e);
    bad.extend_from_slice(&bytes[first..bytes.len() - 3]);
    let path = dir.path().join("bad.itch");
    std::fs::write(&path, &bad).unwrap();
    let s = replay(&options(path.clone())).unwrap();
    // Reads of 1,000 bytes cut records everywhere: the same records, offsets and cut.
    let small_reads = replay(&ReplayOptions {
        chunk_bytes: 1_000,
        ..options(path)
    })
    .unwrap();
    assert_eq!(
        (
            &small_reads.bad_input_first,
            small_reads.truncated_at,
            small_reads.messages,
            &small_reads.symbols
        ),
        (&s.bad_input_first, s.truncated_at, s.messages, &s.symbols)
    );
    assert_eq!(s.bad_input, 3, "{:?}", s.bad_input_first);
    let offsets: Vec<u64> = s.bad_input_first.iter().map(|b| b.offset).collect();
    assert_eq!(offsets, [off1, off2, off3]);
    assert!(
        s.bad_input_first[0].error.contains("unknown message type"),
        "{}",
        s.bad_input_first[0].error
    );
    assert!(s.bad_input_first[2].error.contains("UnknownOrder"));
    assert_eq!(s.book.unknown_order, 1);
    // Everything before the cut record was replayed; the cut is reported where it starts.
    assert_eq!(s.messages, clean.messages - 1 + 3);
    let mut last_start = 0;
    let mut at = 0;
    while at < bytes.len() {
        last_start = at;
        at += 2 + usize::from(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
    }
    let shift = (off3 as usize + 2 + 31) - first;
    assert_eq!(s.truncated_at, Some((last_start + shift) as u64));
}

#[test]
fn a_file_of_no_records_is_an_error_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.itch");
    std::fs::write(&path, b"").unwrap();
    let e = replay(&options(path)).unwrap_err().to_string();
    assert!(e.contains("holds no ITCH records"), "{e}");
    let e = replay(&options(dir.path().join("missing.itch")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("failed to open"), "{e}");
}
