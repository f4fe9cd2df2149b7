//! The market side's offline tools, as library functions the binaries call (and the tests):
//!
//! - [`replay`]: a raw ITCH 5.0 file (or `.gz`) through the [`book`], streamed in chunks, never
//!   whole, and timed ([`Summary`]);
//! - [`generate`]: the [`market`] generator's day written as a raw ITCH 5.0 file.
//!
//! # How the replay is timed
//! Two passes over the file, each with a fresh book. The first times each chunk's messages
//! (framing, decode, book) between two clock reads and nothing else: no file read, no
//! decompression, no per-message clock: its total is the msgs/s and the mean ns/message. The
//! second times every message alone, between two fenced TSC reads whose own cost (calibrated at
//! start) is subtracted: the per-message distribution, overall and per type. A fenced read stops
//! the CPU overlapping one message's cache misses with the next's, so the distribution's
//! percentiles are each message's latency, above what the mean (a throughput) implies; both are
//! reported, with the timer's overhead.

#![forbid(unsafe_code)]

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use {clap as _, paths as _, serde_json as _};

use std::{
    collections::{BTreeMap, HashMap},
    fs::File,
    io::{self, BufWriter, Read, Write},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use book::{Book, Event};
use hdrhistogram::Histogram;
use hotpath::harness::{Tsc, tsc};
use serde::Serialize;
use wire::itch::{self, Stock};

/// Bytes read from the file at a time, by default.
pub const CHUNK: usize = 4 << 20;
/// Bad-input records kept with their offsets (all are counted).
const BAD_KEPT: usize = 32;

/// What [`replay`] does.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The raw ITCH 5.0 file, or its `.gz`.
    pub file: PathBuf,
    /// Symbols to report (all if empty) and, with `prints_out`, to write the prints of.
    pub symbols: Vec<String>,
    /// One CSV of prints per symbol in `symbols`, in this folder.
    pub prints_out: Option<PathBuf>,
    /// At most this many messages.
    pub limit: Option<u64>,
    /// The book's size.
    pub book: book::Config,
    /// Also time every message alone (the second pass).
    pub per_message: bool,
    /// Print progress to stderr.
    pub progress: bool,
    /// Bytes read at a time ([`CHUNK`]); records cut by a read's end are carried over.
    pub chunk_bytes: usize,
}

/// Percentiles of a distribution, ns.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Percentiles {
    /// Messages timed.
    pub samples: u64,
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile (needs ≥ 1,000 samples).
    pub p99: Option<f64>,
    /// 99.9th percentile (needs ≥ 10,000 samples).
    #[serde(rename = "p99.9")]
    pub p99_9: Option<f64>,
    /// Largest.
    pub max: Option<f64>,
}

/// ns per message.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NsPerMessage {
    /// The first pass's whole time over its messages.
    pub mean: f64,
    /// Each message timed alone (second pass); `None` without it.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p99_9: Option<f64>,
    /// Largest.
    pub max: Option<f64>,
    /// Messages timed alone.
    pub samples: u64,
    /// The cost of the two fenced TSC reads around each, subtracted from every sample.
    pub timer_overhead_ns: f64,
}

/// One symbol at the end of the file.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SymbolSummary {
    /// Its stock locate.
    pub locate: u16,
    /// Messages that carried its locate.
    pub messages: u64,
    /// Its prints.
    pub prints: u64,
    /// The last print's price, `Price(4)` units.
    pub last_price: Option<u32>,
    /// The best bid, `Price(4)` units.
    pub bid: Option<u32>,
    /// The best offer, `Price(4)` units.
    pub ask: Option<u32>,
}

/// A record that could not be decoded or applied.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BadInput {
    /// Offset in the (decompressed) file of the record's length prefix.
    pub offset: u64,
    /// Why.
    pub error: String,
}

/// The book's counts at the end.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BookSummary {
    /// Orders resting at the end.
    pub live_orders: usize,
    /// Orders the table holds without growing.
    pub table_capacity: usize,
    /// Prints (`'E'`, printable `'C'`, `'P'`).
    pub prints: u64,
    /// Non-printable `'C'`s.
    pub non_printable: u64,
    /// Cross Trades (`'Q'`).
    pub crosses: u64,
    /// Broken Trades (`'B'`).
    pub breaks: u64,
    /// References to orders it never saw (a file joined mid-session, or a lie).
    pub unknown_order: u64,
    /// Adds of a live reference.
    pub duplicate_order: u64,
    /// Zero-share adds, executions or cancels.
    pub zero_shares: u64,
    /// Executions or cancels of more shares than the order had.
    pub overfill: u64,
    /// Messages whose locate was not their order's.
    pub locate_mismatch: u64,
    /// Allocations after start (the order table's growths, sides that outgrew their room).
    pub allocations_after_start: u64,
}

/// The memory the replay took.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Memory {
    /// The book's own bytes (its order table, its stocks and their levels' room).
    pub book_bytes: usize,
    /// The process's peak resident set (VmHWM), if the kernel says.
    pub peak_rss_bytes: Option<u64>,
}

/// What [`replay`] measured.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// The file.
    pub file: String,
    /// Messages replayed (decoded or not).
    pub messages: u64,
    /// Bytes of records (decompressed).
    pub bytes: u64,
    /// The first pass's time over its messages, s.
    pub seconds: f64,
    /// Messages per second in the first pass.
    pub msgs_per_sec: f64,
    /// ns per message.
    pub ns_per_message: NsPerMessage,
    /// Per message type (its letter): count and each message timed alone.
    pub by_type: BTreeMap<String, Percentiles>,
    /// The memory it took.
    pub memory: Memory,
    /// The book's counts.
    pub book: BookSummary,
    /// Records that could not be decoded or applied: how many.
    pub bad_input: u64,
    /// The first of them, with their offsets.
    pub bad_input_first: Vec<BadInput>,
    /// The file ended inside a record at this offset (a cut-off download).
    pub truncated_at: Option<u64>,
    /// Per symbol.
    pub symbols: BTreeMap<String, SymbolSummary>,
}

/// Opens a raw ITCH file, or a gzip one (by its `.gz` name), as a stream.
pub fn open(path: &Path) -> anyhow::Result<Box<dyn Read>> {
    let f = File::open(path).with_context(|| format!("failed to open {}", path.display()))?;
    Ok(if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(
            io::BufReader::with_capacity(1 << 20, f),
        ))
    } else {
        Box::new(f)
    })
}

/// Reads a stream of length-prefixed records in chunks and hands each chunk's whole records to
/// `each` as one slice (with the offset of its first byte); a record cut by a chunk's end is
/// carried into the next. Returns the offset of a record the stream ends inside, if any.
fn chunks(
    mut r: impl Read,
    size: usize,
    mut each: impl FnMut(u64, &[u8]) -> bool,
) -> anyhow::Result<Option<u64>> {
    let mut buf = vec![0u8; size.max(1) + usize::from(u16::MAX) + 2];
    let mut have = 0usize;
    let mut offset = 0u64;
    loop {
        let end = (have + size.max(1)).min(buf.len());
        let n = match r.read(&mut buf[have..end]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(e).context(format!("failed to read at byte {}", offset + have as u64));
            }
        };
        have += n;
        // Whole records in buf[..end].
        let mut end = 0usize;
        while end + 2 <= have {
            let len = usize::from(u16::from_be_bytes([buf[end], buf[end + 1]]));
            if end + 2 + len > have {
                break;
            }
            end += 2 + len;
        }
        if end > 0 && !each(offset, &buf[..end]) {
            return Ok(None);
        }
        buf.copy_within(end..have, 0);
        have -= end;
        offset += end as u64;
        if n == 0 {
            return Ok((have > 0).then_some(offset));
        }
    }
}

/// The records of a chunk of whole records: (offset in the chunk, message).
fn records(chunk: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        if at + 2 > chunk.len() {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([chunk[at], chunk[at + 1]]));
        let rec = (at, &chunk[at + 2..at + 2 + len]);
        at += 2 + len;
        Some(rec)
    })
}

/// A record decoded (or why not), with its offset in its chunk and its type byte.
type Decoded = (usize, u8, Result<itch::Message, wire::Error>);

/// Decodes the next record and starts loading what applying it will touch: the replay decodes
/// one message ahead of the one it applies, so consecutive messages' cache misses overlap.
#[inline]
fn ahead<'a>(book: &Book, recs: &mut impl Iterator<Item = (usize, &'a [u8])>) -> Option<Decoded> {
    let (at, msg) = recs.next()?;
    let decoded = itch::parse(msg);
    if let Ok(m) = &decoded {
        book.prefetch(m);
    }
    Some((at, msg.first().copied().unwrap_or(0), decoded))
}

struct Progress {
    on: bool,
    pass: &'static str,
    last: Instant,
}

impl Progress {
    fn tick(&mut self, messages: u64, bytes: u64) {
        if self.on && self.last.elapsed() >= Duration::from_secs(1) {
            self.last = Instant::now();
            eprintln!(
                "  {}: {:.1} M messages, {:.0} MiB",
                self.pass,
                messages as f64 / 1e6,
                bytes as f64 / f64::from(1 << 20)
            );
        }
    }
}

fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Ticks from 1 to 10^10 (seconds), 3 significant digits.
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 10_000_000_000, 3).expect("valid bounds")
}

/// The percentile rule of the whole lab: a percentile q is shown only from at least
/// 10 / (1 - q) samples (10 beyond it).
fn earned(h: &Histogram<u64>, q: f64, tsc: &Tsc) -> Option<f64> {
    // The lab's one rule (hotpath's), whose rounding keeps p99 at 1,000 samples, not 1,001.
    let need = hotpath::verdict::samples_for(q);
    (h.len() >= need).then(|| tsc.ns(h.value_at_quantile(q)))
}

fn percentiles(h: &Histogram<u64>, tsc: &Tsc) -> Percentiles {
    Percentiles {
        samples: h.len(),
        p50: earned(h, 0.5, tsc),
        p99: earned(h, 0.99, tsc),
        p99_9: earned(h, 0.999, tsc),
        max: (!h.is_empty()).then(|| tsc.ns(h.max())),
    }
}

/// Replays a file through the book.
pub fn replay(opts: &ReplayOptions) -> anyhow::Result<Summary> {
    let limit = opts.limit.unwrap_or(u64::MAX);
    let wanted = wanted_symbols(&opts.symbols, opts.prints_out.as_deref())?;
    let clock = Tsc::calibrate(Duration::from_millis(200));

    let WholeRun {
        book,
        prints,
        messages,
        bytes,
        ticks,
        bad,
        bad_first,
        truncated_at,
        mut prog,
    } = whole_run(opts, &wanted, limit)?;
    if messages == 0 {
        bail!(
            "{} holds no ITCH records (is it a raw length-prefixed ITCH 5.0 file, or its .gz?)",
            opts.file.display()
        );
    }
    let seconds = clock.ns(ticks) / 1e9;

    let symbols_out = symbol_summaries(&book, &wanted);
    let book_summary = book_summary(&book);
    let book_bytes = book.bytes();
    // One book at a time: the second pass's memory is its own.
    drop(book);

    let EachMessage { all, by_kind } = each_message(opts, limit, &clock, &mut prog)?;

    if let Some(dir) = &opts.prints_out {
        write_prints(dir, &wanted, &prints)?;
    }

    let dist = percentiles(&all, &clock);
    Ok(Summary {
        file: opts.file.display().to_string(),
        messages,
        bytes,
        seconds,
        msgs_per_sec: messages as f64 / seconds,
        ns_per_message: NsPerMessage {
            mean: seconds * 1e9 / messages as f64,
            p50: dist.p50,
            p99: dist.p99,
            p99_9: dist.p99_9,
            max: dist.max,
            samples: dist.samples,
            timer_overhead_ns: clock.overhead_ns(),
        },
        by_type: by_kind
            .iter()
            .map(|(k, h)| (char::from(*k).to_string(), percentiles(h, &clock)))
            .collect(),
        memory: Memory {
            book_bytes,
            peak_rss_bytes: peak_rss(),
        },
        book: book_summary,
        bad_input: bad,
        bad_input_first: bad_first,
        truncated_at,
        symbols: symbols_out,
    })
}

/// The symbols to report, read; with `prints_out`, there must be some, and the folder must be
/// there.
fn wanted_symbols(symbols: &[String], prints_out: Option<&Path>) -> anyhow::Result<Vec<Stock>> {
    let wanted: Vec<Stock> = symbols
        .iter()
        .map(|s| Stock::new(s).map_err(|e| anyhow::anyhow!("bad symbol {s:?}: {e}")))
        .collect::<anyhow::Result<_>>()?;
    if let Some(dir) = prints_out {
        if wanted.is_empty() {
            bail!("--prints-out needs --symbols: which symbols' prints to write");
        }
        if !dir.is_dir() {
            bail!("--prints-out {}: no such folder", dir.display());
        }
    }
    Ok(wanted)
}

/// What the first pass found.
struct WholeRun {
    /// The book at the end of the file.
    book: Book,
    /// The prints of each wanted symbol: (price, shares).
    prints: Vec<Vec<(u32, u32)>>,
    messages: u64,
    bytes: u64,
    /// TSC ticks over the messages (each chunk's, between two reads).
    ticks: u64,
    bad: u64,
    bad_first: Vec<BadInput>,
    truncated_at: Option<u64>,
    /// The progress line, for the second pass.
    prog: Progress,
}

/// Pass 1: the whole-run figure, the book's state, the prints of the chosen symbols.
fn whole_run(opts: &ReplayOptions, wanted: &[Stock], limit: u64) -> anyhow::Result<WholeRun> {
    let mut book = Book::new(opts.book);
    let mut chosen: HashMap<u16, usize> = HashMap::new();
    let mut prints: Vec<Vec<(u32, u32)>> =
        wanted.iter().map(|_| Vec::with_capacity(1 << 16)).collect();
    let mut messages = 0u64;
    let mut bytes = 0u64;
    let mut ticks = 0u64;
    let mut bad = 0u64;
    let mut bad_first = Vec::new();
    let mut prog = Progress {
        on: opts.progress,
        pass: "pass 1 (whole-run time)",
        last: Instant::now(),
    };
    let truncated_at = chunks(open(&opts.file)?, opts.chunk_bytes, |base, chunk| {
        let t0 = tsc();
        let mut recs = records(chunk);
        let mut next = ahead(&book, &mut recs);
        while let Some((at, _, decoded)) = next.take() {
            if messages >= limit {
                break;
            }
            next = ahead(&book, &mut recs);
            messages += 1;
            let offset = base + at as u64;
            let event = match decoded {
                Ok(m) => book.apply(&m),
                Err(e) => {
                    bad += 1;
                    if bad_first.len() < BAD_KEPT {
                        bad_first.push(BadInput {
                            offset,
                            error: e.to_string(),
                        });
                    }
                    continue;
                }
            };
            match event {
                Event::Refused(r) => {
                    bad += 1;
                    if bad_first.len() < BAD_KEPT {
                        bad_first.push(BadInput {
                            offset,
                            error: format!("{r:?}"),
                        });
                    }
                }
                Event::Directory { locate } => {
                    let stock = book.stock(locate).stock;
                    if let Some(i) = wanted.iter().position(|w| Some(*w) == stock) {
                        chosen.insert(locate, i);
                    }
                }
                Event::Print(p) => {
                    if let Some(&i) = chosen.get(&p.locate) {
                        prints[i].push((p.price.0, p.shares));
                    }
                }
                _ => {}
            }
        }
        ticks += tsc() - t0;
        bytes += chunk.len() as u64;
        prog.tick(messages, bytes);
        messages < limit
    })?;
    Ok(WholeRun {
        book,
        prints,
        messages,
        bytes,
        ticks,
        bad,
        bad_first,
        truncated_at,
        prog,
    })
}

/// Each symbol of the book's (each wanted one, if any are), at the end; a warning for each
/// wanted symbol the file's Stock Directory never named.
fn symbol_summaries(book: &Book, wanted: &[Stock]) -> BTreeMap<String, SymbolSummary> {
    let mut symbols_out = BTreeMap::new();
    for (locate, s) in book.stocks() {
        let Some(stock) = s.stock else { continue };
        if !wanted.is_empty() && !wanted.contains(&stock) {
            continue;
        }
        symbols_out.insert(
            stock.to_string(),
            SymbolSummary {
                locate,
                messages: s.messages,
                prints: s.prints,
                last_price: s.last_price.map(|p| p.0),
                bid: s.bid().map(|l| l.price),
                ask: s.ask().map(|l| l.price),
            },
        );
    }
    for w in wanted {
        if !symbols_out.contains_key(&w.to_string()) {
            eprintln!("warning: {w} is not in the file's Stock Directory");
        }
    }
    symbols_out
}

/// The book's counts at the end.
fn book_summary(book: &Book) -> BookSummary {
    let st = book.stats();
    BookSummary {
        live_orders: book.live_orders(),
        table_capacity: book.order_capacity(),
        prints: st.prints,
        non_printable: st.non_printable,
        crosses: st.crosses,
        breaks: st.breaks,
        unknown_order: st.unknown_order,
        duplicate_order: st.duplicate_order,
        zero_shares: st.zero_shares,
        overfill: st.overfill,
        locate_mismatch: st.locate_mismatch,
        allocations_after_start: book.allocations_after_start(),
    }
}

/// What the second pass timed: every message, and each message type's (by its letter).
struct EachMessage {
    all: Histogram<u64>,
    by_kind: BTreeMap<u8, Histogram<u64>>,
}

/// Pass 2 (with `per_message`; empty histograms without): every message timed alone, into one
/// distribution and one per message type.
fn each_message(
    opts: &ReplayOptions,
    limit: u64,
    clock: &Tsc,
    prog: &mut Progress,
) -> anyhow::Result<EachMessage> {
    let mut all = new_histogram();
    let mut by_kind: BTreeMap<u8, Histogram<u64>> = BTreeMap::new();
    if opts.per_message {
        let overhead = clock.overhead_ticks;
        let mut timed = Book::new(opts.book);
        let mut n = 0u64;
        let mut seen = 0u64;
        prog.pass = "pass 2 (each message timed)";
        chunks(open(&opts.file)?, opts.chunk_bytes, |_, chunk| {
            let mut recs = records(chunk);
            let mut next = ahead(&timed, &mut recs);
            while let Some((_, kind, decoded)) = next.take() {
                if n >= limit {
                    break;
                }
                // One message's share of the pipelined loop: the next one's decode and
                // prefetch, and this one's apply.
                let t0 = tsc();
                next = ahead(&timed, &mut recs);
                if let Ok(m) = &decoded {
                    std::hint::black_box(timed.apply(m));
                }
                let t1 = tsc();
                let dt = (t1 - t0).saturating_sub(overhead);
                all.saturating_record(dt);
                by_kind
                    .entry(kind)
                    .or_insert_with(new_histogram)
                    .saturating_record(dt);
                n += 1;
            }
            seen += chunk.len() as u64;
            prog.tick(n, seen);
            n < limit
        })?;
    }
    Ok(EachMessage { all, by_kind })
}

/// One CSV of prints per wanted symbol, `price,shares`, in `dir`.
fn write_prints(dir: &Path, wanted: &[Stock], prints: &[Vec<(u32, u32)>]) -> anyhow::Result<()> {
    for (w, p) in wanted.iter().zip(prints) {
        let path = dir.join(format!("{w}.csv"));
        let mut out = BufWriter::new(
            File::create(&path).with_context(|| format!("failed to create {}", path.display()))?,
        );
        writeln!(out, "price,shares")?;
        for (price, shares) in p {
            writeln!(out, "{price},{shares}")?;
        }
        out.flush()
            .with_context(|| format!("failed to write {}", path.display()))?;
    }
    Ok(())
}

/// The summary as a table for people.
pub fn render(s: &Summary) -> String {
    use std::fmt::Write as _;
    let f = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{v:.1}"));
    let mut o = String::new();
    let n = &s.ns_per_message;
    let _ = writeln!(
        o,
        "{}: {} messages ({:.1} MiB) in {:.3} s of book time: {:.2} M msg/s, {:.1} ns/message mean",
        s.file,
        s.messages,
        s.bytes as f64 / f64::from(1 << 20),
        s.seconds,
        s.msgs_per_sec / 1e6,
        n.mean
    );
    let _ = writeln!(
        o,
        "each message timed alone ({} samples, timer overhead {:.1} ns subtracted): p50 {} p99 {} p99.9 {} max {} ns",
        n.samples,
        n.timer_overhead_ns,
        f(n.p50),
        f(n.p99),
        f(n.p99_9),
        f(n.max)
    );
    if !s.by_type.is_empty() {
        let _ = writeln!(
            o,
            "\n| type | messages | p50 ns | p99 ns | p99.9 ns | max ns |"
        );
        let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|");
        for (k, p) in &s.by_type {
            let _ = writeln!(
                o,
                "| {k} | {} | {} | {} | {} | {} |",
                p.samples,
                f(p.p50),
                f(p.p99),
                f(p.p99_9),
                f(p.max)
            );
        }
    }
    let b = &s.book;
    let _ = writeln!(
        o,
        "\nbook: {} live orders at the end, {} prints, {} non-printable, {} crosses, {} breaks; \
         refused: {} unknown order, {} duplicate, {} zero shares, {} overfill, {} wrong locate; \
         {} allocations after start",
        b.live_orders,
        b.prints,
        b.non_printable,
        b.crosses,
        b.breaks,
        b.unknown_order,
        b.duplicate_order,
        b.zero_shares,
        b.overfill,
        b.locate_mismatch,
        b.allocations_after_start
    );
    let _ = writeln!(
        o,
        "memory: book {:.0} MiB, peak RSS {}",
        s.memory.book_bytes as f64 / f64::from(1 << 20),
        s.memory.peak_rss_bytes.map_or("?".into(), |b| format!(
            "{:.0} MiB",
            b as f64 / f64::from(1 << 20)
        ))
    );
    if s.bad_input > 0 {
        let _ = writeln!(o, "bad input: {} records, first:", s.bad_input);
        for b in s.bad_input_first.iter().take(5) {
            let _ = writeln!(o, "  at byte {}: {}", b.offset, b.error);
        }
    }
    if let Some(t) = s.truncated_at {
        let _ = writeln!(o, "the file ends inside the record at byte {t} (cut off?)");
    }
    o
}

/// What [`generate`] wrote.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Generated {
    /// Messages written.
    pub messages: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Seconds it took.
    pub seconds: f64,
    /// Messages by type letter.
    pub by_type: BTreeMap<String, u64>,
    /// The lab symbol's locate.
    pub synth_locate: u16,
    /// Quantiles of the ages of the orders that cancels, deletes, replaces and executions named
    /// (ns, 3 significant digits): 0.25, 0.5, 0.75, 0.9, 0.99.
    pub order_age_ns: BTreeMap<String, u64>,
    /// The share of those orders younger than 1 ms, 1 s and 10 s.
    pub order_age_share_below: BTreeMap<String, f64>,
    /// The same ages in messages of the feed between the add and the message that named it
    /// (what a book's caches see): quantiles, 3 significant digits.
    pub order_age_msgs: BTreeMap<String, u64>,
    /// The share of those orders younger than 6, 630, 6,300, 25,200 and 63,000 messages: 500 µs,
    /// 50 ms, 0.5 s, 2 s and 5 s at the 12.6 k msg/s of a real session (2019-10-30's mean).
    pub order_age_share_below_msgs: BTreeMap<String, f64>,
}

/// Writes the generator's day for `config` to `out` as a raw ITCH 5.0 file.
pub fn generate(config: market::Config, out: &Path, progress: bool) -> anyhow::Result<Generated> {
    let started = Instant::now();
    let file = File::create(out).with_context(|| format!("failed to create {}", out.display()))?;
    let mut w = itch::file::Writer::new(file);
    let mut g = market::Generator::new(config).map_err(anyhow::Error::msg)?;
    let mut buf = [0u8; 64];
    let mut n = 0u64;
    let mut last = Instant::now();
    for m in &mut g {
        let len = m
            .emit_into(&mut buf)
            .expect("every ITCH message fits 64 bytes");
        w.write_message(&buf[..len])
            .with_context(|| format!("failed to write {}", out.display()))?;
        n += 1;
        if progress && n.is_multiple_of(1 << 20) && last.elapsed() >= Duration::from_secs(1) {
            last = Instant::now();
            eprintln!("  {:.1} M messages", n as f64 / 1e6);
        }
    }
    let bytes = w.offset();
    w.finish()
        .with_context(|| format!("failed to write {}", out.display()))?;
    let st = g.stats();
    Ok(Generated {
        messages: n,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
        by_type: st
            .by_kind
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(k, c)| (char::from(k as u8).to_string(), *c))
            .collect(),
        synth_locate: g.synth_locate(),
        order_age_ns: [0.25, 0.5, 0.75, 0.9, 0.99]
            .iter()
            .filter_map(|&q| st.age_quantile_ns(q).map(|v| (format!("{q}"), v)))
            .collect(),
        order_age_share_below: [
            ("1ms", 1_000_000u64),
            ("1s", 1_000_000_000),
            ("10s", 10_000_000_000),
        ]
        .iter()
        .map(|&(k, ns)| (k.to_string(), st.age_share_below(ns)))
        .collect(),
        order_age_msgs: [0.08, 0.25, 0.5, 0.75, 0.9, 0.99]
            .iter()
            .filter_map(|&q| st.age_quantile_msgs(q).map(|v| (format!("{q}"), v)))
            .collect(),
        order_age_share_below_msgs: [6u64, 630, 6_300, 25_200, 63_000]
            .iter()
            .map(|&m| (m.to_string(), st.age_share_below_msgs(m)))
            .collect(),
    })
}

#[cfg(test)]
mod tests;
