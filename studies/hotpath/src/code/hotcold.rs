//! Hot/cold split: one pass over every order's hot fields (id, price, qty, side, live), summing
//! the notional of the live buy orders, with the orders stored as full structs (the hot fields
//! beside ~220 bytes of cold ones: client and account ids, timestamps, free text) or split into a
//! hot array and a cold array. A sample is one whole pass; the distribution is over passes.
//!
//! What the split saves is lines, not bytes: the scan reads 24 B per order, and at a 248-B
//! stride those touch 1.25 lines (80 B), not 248 B. A line-count model ([`lines_per_order`])
//! predicts the ratio from the strides, and a cold-size sweep (records of 24, 64 and 128 B
//! beside the 248-B struct) measures it where the model's line count changes.

use std::cell::{Cell, RefCell};
use std::hint::black_box;

use super::Rng;
use crate::Ctx;
use crate::harness::{Dist, Recorder, Tsc, Variant, interleave, tsc};
use crate::report::{Comparison, Curve, Level, Outcome, Series};
use crate::verdict::{Spread, Standing, standing};

/// What the risk scan reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Hot {
    pub id: u64,
    pub price: u64,
    pub qty: u32,
    pub side: u8,
    pub live: bool,
}

/// What it never reads: kept for the order's life, read at amendments, fills and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Cold {
    pub client_id: [u8; 32],
    pub account: [u8; 16],
    pub strategy: [u8; 16],
    pub created_ns: u64,
    pub updated_ns: u64,
    pub exchange_ns: u64,
    pub acked_ns: u64,
    pub text: [u8; 128],
}

/// The whole order in one struct, hot fields first (the kindest layout for the scan short of a
/// split: the hot fields share one cache line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Full {
    pub hot: Hot,
    pub cold: Cold,
}

pub const HOT_BYTES: usize = std::mem::size_of::<Hot>();
pub const FULL_BYTES: usize = std::mem::size_of::<Full>();
const _: () = assert!(HOT_BYTES == 24 && FULL_BYTES == 248);

pub const BUY: u8 = b'B';

/// The orders, both ways, the same content.
#[derive(Debug)]
pub struct Book {
    pub full: Vec<Full>,
    pub hot: Vec<Hot>,
    pub cold: Vec<Cold>,
}

impl Book {
    pub fn new(n: usize, seed: u64) -> Book {
        let mut r = Rng::new(seed);
        let mut b = Book {
            full: Vec::with_capacity(n),
            hot: Vec::with_capacity(n),
            cold: Vec::with_capacity(n),
        };
        for i in 0..n as u64 {
            let hot = Hot {
                id: i,
                price: 1_000_000 + r.below(20_000) as u64,
                qty: 1 + r.below(1_000) as u32,
                side: if r.below(2) == 0 { BUY } else { b'S' },
                live: r.below(10) != 0,
            };
            let tag = (i & 0xff) as u8;
            let cold = Cold {
                client_id: [tag; 32],
                account: [tag ^ 1; 16],
                strategy: [tag ^ 2; 16],
                created_ns: i * 1_000,
                updated_ns: i * 1_000 + 1,
                exchange_ns: i * 1_000 + 2,
                acked_ns: i * 1_000 + 3,
                text: [b' '; 128],
            };
            b.full.push(Full { hot, cold });
            b.hot.push(hot);
            b.cold.push(cold);
        }
        b
    }
}

/// Notional of the live buy orders, and how many: the scan, over any layout's hot fields.
///
/// Branch-free, as a tuned risk scan is written: sides and liveness are random here, and a
/// branch on them would be mispredicted every other order, which would cost both layouts the
/// same and hide the memory traffic that differs.
#[inline]
fn scan<'a>(hots: impl Iterator<Item = &'a Hot>) -> (u64, u64) {
    let (mut notional, mut n) = (0u64, 0u64);
    for h in hots {
        let take = u64::from(h.live & (h.side == BUY));
        notional = notional.wrapping_add(take * h.price * u64::from(h.qty));
        n += take;
    }
    (notional, n)
}

pub fn scan_full(full: &[Full]) -> (u64, u64) {
    scan(full.iter().map(|f| &f.hot))
}

pub fn scan_split(hot: &[Hot]) -> (u64, u64) {
    scan(hot.iter())
}

/// An order record with `C` cold bytes after the hot fields: the cold-size sweep's layouts
/// (`C` = 224 is [`Full`]'s shape).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Padded<const C: usize> {
    pub hot: Hot,
    pub cold: [u8; C],
}

/// `hot` as records of `C` cold bytes each (the cold bytes a tag of the order, never read).
pub fn padded<const C: usize>(hot: &[Hot]) -> Vec<Padded<C>> {
    hot.iter()
        .map(|&h| Padded {
            hot: h,
            cold: [(h.id & 0xff) as u8; C],
        })
        .collect()
}

pub fn scan_padded<const C: usize>(p: &[Padded<C>]) -> (u64, u64) {
    scan(p.iter().map(|r| &r.hot))
}

/// A cache line, as the model counts them.
pub const LINE: usize = 64;

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The line-count model: cache lines the scan touches per order when the `hot` bytes it reads
/// start every `stride` bytes (`stride >= hot`, the array line-aligned). Counted exactly over
/// one period of the pattern (`LINE / gcd(stride, LINE)` records, after which the offsets
/// repeat), a line two neighbouring records share counted once. At a 24-B stride the hot
/// array is read whole: 0.375 lines (24 B) an order; at 248 B the 24 hot bytes start at 8
/// offsets in turn, 2 of which cross a line: 1.25 lines (80 B).
pub fn lines_per_order(stride: usize, hot: usize) -> f64 {
    assert!(
        hot > 0 && stride >= hot,
        "records of {stride} B can't hold {hot} B"
    );
    let period = LINE / gcd(stride, LINE);
    let (mut lines, mut last) = (0usize, None);
    for i in 0..period {
        let (first, end) = (i * stride / LINE, (i * stride + hot - 1) / LINE);
        for l in first..=end {
            if last.is_none_or(|x| l > x) {
                lines += 1;
                last = Some(l);
            }
        }
    }
    lines as f64 / period as f64
}

/// The model's prediction for a record of `stride` bytes against the split hot array: lines
/// per order at `stride` over lines per order at [`HOT_BYTES`].
pub fn predicted_ratio(stride: usize) -> f64 {
    lines_per_order(stride, HOT_BYTES) / lines_per_order(HOT_BYTES, HOT_BYTES)
}

/// `1.25 lines (80 B)` per order at `stride`.
pub fn moved(stride: usize) -> String {
    let l = lines_per_order(stride, HOT_BYTES);
    format!("{l:.3} lines ({:.0} B)", l * LINE as f64)
}

/// How a measured ratio stands against the line-count model's, by the one rule
/// ([`crate::verdict::standing`], the model in the study's place).
pub fn model_reason(measured: f64, stride: usize) -> String {
    let p = predicted_ratio(stride);
    let lines = format!(
        "a {stride}-B stride moves {} per order, the split {}: the line-count model predicts \
         {p:.2}×",
        moved(stride),
        moved(HOT_BYTES)
    );
    match standing(measured, Some(p)) {
        Standing::Agrees => format!("{lines}, and the measured {measured:.2}× matches it"),
        Standing::LargerHere => format!(
            "{lines}; the measured {measured:.2}× is more: lines touched don't explain all of it"
        ),
        Standing::SmallerHere => format!(
            "{lines}; the measured {measured:.2}× is less: the strided lines came cheaper than \
             the model counts them"
        ),
        Standing::NoDifference => {
            format!("{lines}; no measurable difference was measured ({measured:.2}×)")
        }
        Standing::Reversed => format!("{lines}; the measured {measured:.2}× is the other way"),
        Standing::Measurable | Standing::Undecided => {
            format!("{lines}; nothing to compare it with")
        }
    }
}

/// The cold sizes of the sweep: strides of 24, 64 and 128 B (0.375, 1 and 1 line per order),
/// beside [`Full`]'s 248 (1.25).
pub const SWEEP_COLD: [usize; 3] = [0, 40, 104];

#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub orders: usize,
    pub warmup: usize,
    /// Passes per variant.
    pub passes: usize,
}

pub const AOS: &str = "full structs (hot + cold, 248 B each)";
pub const SPLIT: &str = "split (hot array, 24 B each)";

/// The sweep's variant for `cold` bytes.
pub fn sweep_name(cold: usize) -> String {
    format!("sweep: {cold} B cold ({} B records)", HOT_BYTES + cold)
}

#[derive(Debug)]
pub struct Measured {
    pub dists: Vec<Dist>,
    /// Each variant's (notional, count) from its last pass: full, split, then the sweep's.
    pub results: Vec<(u64, u64)>,
    /// Each variant's recorded passes, ns, in the same order.
    pub passes: Vec<Vec<f64>>,
}

/// One variant: a timed pass of `f` per round, its result kept in `out` and, after the warm-up,
/// its time in `passes`.
fn pass<'a>(
    name: String,
    clock: Tsc,
    warmup: usize,
    out: &'a Cell<(u64, u64)>,
    passes: &'a RefCell<Vec<f64>>,
    f: impl Fn() -> (u64, u64) + 'a,
) -> Variant<'a> {
    let mut calls = 0;
    Variant::new(name, move |r: &mut Recorder| {
        let t0 = tsc();
        let v = f();
        let t1 = tsc();
        r.record_ticks(t1.wrapping_sub(t0), 1);
        out.set(v);
        if calls >= warmup {
            passes.borrow_mut().push(clock.ns(t1.wrapping_sub(t0)));
        }
        calls += 1;
    })
}

pub fn measure(clock: Tsc, plan: Plan) -> Measured {
    let book = Book::new(plan.orders, 0x407C01D);
    let (p0, p40, p104) = (
        padded::<0>(&book.hot),
        padded::<40>(&book.hot),
        padded::<104>(&book.hot),
    );
    let out: Vec<Cell<(u64, u64)>> = (0..5).map(|_| Cell::new((0, 0))).collect();
    let times: Vec<RefCell<Vec<f64>>> = (0..5).map(|_| RefCell::new(Vec::new())).collect();
    let (full, hot) = (&book.full[..], &book.hot[..]);
    let (p0, p40, p104) = (&p0[..], &p40[..], &p104[..]);
    let w = plan.warmup;
    let mut vs = vec![
        pass(AOS.into(), clock, w, &out[0], &times[0], move || {
            scan_full(black_box(full))
        }),
        pass(SPLIT.into(), clock, w, &out[1], &times[1], move || {
            scan_split(black_box(hot))
        }),
        pass(sweep_name(0), clock, w, &out[2], &times[2], move || {
            scan_padded(black_box(p0))
        }),
        pass(sweep_name(40), clock, w, &out[3], &times[3], move || {
            scan_padded(black_box(p40))
        }),
        pass(sweep_name(104), clock, w, &out[4], &times[4], move || {
            scan_padded(black_box(p104))
        }),
    ];
    let dists = interleave(clock, plan.warmup, plan.passes, &mut vs);
    drop(vs);
    Measured {
        dists,
        results: out.iter().map(Cell::get).collect(),
        passes: times.into_iter().map(RefCell::into_inner).collect(),
    }
}

/// `20.6 ms (19.8–23.1 ms, 20 passes)`.
fn ranged(s: &Option<Spread>) -> String {
    crate::report::ranged_ns(*s, "passes")
}

/// The study's pass times (s) and cache misses per run, before and after its split.
const STUDY_BEFORE_S: f64 = 1.08746;
const STUDY_AFTER_S: f64 = 0.91845;
const STUDY_MISSES: (f64, f64) = (7.8e7, 3.5e7);

/// The line-count row's reason: the model's ratio is a count, not a measurement; beside it the
/// time ratio measured, and how the two stand by the one rule.
pub fn lines_row_reason(predicted: f64, measured: f64) -> String {
    format!(
        "a count of the lines the scan must touch at each layout's stride, not a measured miss \
         count (the study's come from its PMU); the time ratio measured, {measured:.2}×, {} \
         the count's {predicted:.2}×",
        match standing(measured, Some(predicted)) {
            Standing::Agrees => "agrees with",
            Standing::LargerHere => "is more than",
            Standing::SmallerHere | Standing::NoDifference => "falls short of",
            Standing::Reversed => "goes the other way from",
            Standing::Measurable | Standing::Undecided => "can't be set against",
        }
    )
}

/// The main row's reason: the line-count model against the measurement, and against the study:
/// its struct sizes aren't given, so the sweep, not a guess, shows how the ratio follows them.
pub fn split_reason(standing_vs_study: Standing, measured: f64) -> String {
    let m = model_reason(measured, FULL_BYTES);
    match standing_vs_study {
        Standing::LargerHere | Standing::SmallerHere | Standing::Reversed => format!(
            "{m}; the study gives no struct sizes, and the ratio follows the lines per order \
             (the cold-size sweep's rows)"
        ),
        _ => m,
    }
}

pub fn run(ctx: &Ctx) -> anyhow::Result<Outcome> {
    ctx.pin()?;
    let plan = Plan {
        orders: ctx.pick(100_000, 1_000_000),
        warmup: 2,
        passes: ctx.pick(20, 60),
    };
    ctx.progress(&plan_line(plan));
    let m = measure(ctx.tsc, plan);
    if let Some(i) = m.results.iter().position(|r| *r != m.results[0]) {
        anyhow::bail!(
            "hot/cold layouts disagree: {} computed {:?}, full structs {:?}",
            m.dists[i].name,
            m.results[i],
            m.results[0]
        );
    }
    let mut o = Outcome::new(
        "hotcold",
        "Hot/cold split of an order struct: one scan over every order",
        Level::Code,
    );
    o.dists = m.dists;
    let spreads: Vec<Option<Spread>> = m.passes.iter().map(|p| Spread::of(p)).collect();
    o.comparisons = rows(plan, &spreads);
    o.curves.push(sweep_curve(&spreads));
    o.notes = notes(plan, &spreads, m.results[0]);
    o.trader = "No order collection to scan: the trader trades one stock and holds at most one \
        position (`engine::Ledger`'s `open: Option<(Side, f64)>`); its per-tick state is the \
        `Trader` struct (crates/trader-core/src/lib.rs: its `Sequencer` and `Desk`), whose hot fields (sequence tracking \
        `next_seq`/`seen`, `counters`, the engine `Strategy`) sit beside colder ones (the desk's \
        `engine` latency histogram, the `Pending` arrays of 64 samples and 64 fills, about 1.5 \
        KB, touched only when something is kept). The strategy's price history is in \
        separate heap rings (`Ring { buf: Vec<f64> }`, crates/engine/src/strategy.rs), already apart \
        from its small `Window` constants. No split has been made or measured there; at this \
        size (a few KB, in L1/L2 between ticks) the study's effect is not expected to be \
        large."
        .to_string();
    Ok(o)
}

/// The progress line before the measurement: the orders, the megabytes of each layout, the
/// passes.
fn plan_line(plan: Plan) -> String {
    let mb = |b: usize| (plan.orders * b) as f64 / 1e6;
    format!(
        "{} orders: {:.0} MB as full structs, {:.0} MB hot + {:.0} MB cold split, and the sweep's \
         {:.0}/{:.0}/{:.0} MB; {} passes each",
        plan.orders,
        mb(FULL_BYTES),
        mb(HOT_BYTES),
        mb(FULL_BYTES - HOT_BYTES),
        mb(HOT_BYTES + SWEEP_COLD[0]),
        mb(HOT_BYTES + SWEEP_COLD[1]),
        mb(HOT_BYTES + SWEEP_COLD[2]),
        plan.passes
    )
}

/// The rows: full structs against the split (time, and the line-count model's lines), then
/// each record size of the cold-size sweep against the split.
fn rows(plan: Plan, spreads: &[Option<Spread>]) -> Vec<Comparison> {
    let mb = |b: usize| (plan.orders * b) as f64 / 1e6;
    let med = |i: usize| spreads[i].map_or(f64::NAN, |s| s.median);
    let (a, s) = (med(0), med(1));
    let study = STUDY_BEFORE_S / STUDY_AFTER_S;
    let r = a / s;
    let lines = |stride: usize| lines_per_order(stride, HOT_BYTES) * plan.orders as f64;
    let mut rows = vec![
        Comparison::judged(
            format!(
                "full structs vs split, one pass over {} orders (median over passes)",
                plan.orders
            ),
            format!("{} vs {}", ranged(&spreads[0]), ranged(&spreads[1])),
            r,
            format!("{STUDY_BEFORE_S} s → {STUDY_AFTER_S} s"),
            Some(study),
            &split_reason(standing(r, Some(study)), r),
        ),
        Comparison::judged(
            "cache lines per pass: the line-count model's, not measured (no PMU in this guest)",
            format!(
                "{:.2e} vs {:.2e} lines ({} vs {} per order)",
                lines(FULL_BYTES),
                lines(HOT_BYTES),
                moved(FULL_BYTES),
                moved(HOT_BYTES)
            ),
            predicted_ratio(FULL_BYTES),
            format!(
                "cache misses {:.1e} → {:.1e}",
                STUDY_MISSES.0, STUDY_MISSES.1
            ),
            Some(STUDY_MISSES.0 / STUDY_MISSES.1),
            &lines_row_reason(predicted_ratio(FULL_BYTES), r),
        ),
    ];
    // The sweep: each record size against the split, the model beside it; the 248-B point is
    // the full struct above.
    for (k, cold) in SWEEP_COLD.into_iter().enumerate() {
        let stride = HOT_BYTES + cold;
        let rr = med(2 + k) / s;
        rows.push(Comparison::finding(
            format!(
                "cold-size sweep: {stride}-B records ({cold} B cold, {:.0} MB) vs split ({:.0} \
                 MB), one pass (median)",
                mb(stride),
                mb(HOT_BYTES)
            ),
            format!(
                "{} vs {}: {rr:.2}×; model {:.2}×",
                ranged(&spreads[2 + k]),
                ranged(&spreads[1]),
                predicted_ratio(stride)
            ),
            "– (the study has one struct)",
            model_reason(rr, stride),
        ));
    }
    rows
}

/// The sweep's curve: scan time over the split's against record size, measured (the full
/// struct's point included) and the line-count model's.
fn sweep_curve(spreads: &[Option<Spread>]) -> Curve {
    let med = |i: usize| spreads[i].map_or(f64::NAN, |s| s.median);
    let (a, s) = (med(0), med(1));
    let r = a / s;
    Curve {
        id: "hotcold-sweep".into(),
        title: "Scan time ÷ the split's over record size: measured (median over passes) and \
                the line-count model"
            .into(),
        x_label: "record size, bytes (24 hot + cold)".into(),
        y_label: "ratio to the split hot array".into(),
        log_x: false,
        log_y: false,
        series: vec![
            Series {
                name: "measured".into(),
                points: SWEEP_COLD
                    .iter()
                    .enumerate()
                    .map(|(k, c)| ((HOT_BYTES + c) as f64, med(2 + k) / s))
                    .chain(std::iter::once((FULL_BYTES as f64, r)))
                    .collect(),
            },
            Series {
                name: "line-count model".into(),
                points: SWEEP_COLD
                    .iter()
                    .map(|c| HOT_BYTES + c)
                    .chain(std::iter::once(FULL_BYTES))
                    .map(|st| (st as f64, predicted_ratio(st)))
                    .collect(),
            },
        ],
    }
}

/// The notes: how a sample is taken, the line-count model and the bandwidth at the medians,
/// the missing PMU, and what every layout computed (`result`).
fn notes(plan: Plan, spreads: &[Option<Spread>], result: (u64, u64)) -> Vec<String> {
    let med = |i: usize| spreads[i].map_or(f64::NAN, |s| s.median);
    let (a, s) = (med(0), med(1));
    let gbps = |ns: f64, bytes: f64| plan.orders as f64 * bytes / ns;
    vec![
        format!(
            "A sample is one whole pass over {} orders (ops = 1: the figures are ms per pass); \
             the rows give the median over passes with the range. Every layout holds the same \
             orders and the scan is the same generic function over each layout's hot fields, \
             written branch-free (sides and liveness are random, and a mispredicted branch every \
             other order would cost both layouts alike and hide the memory traffic that \
             differs).",
            plan.orders
        ),
        format!(
            "The line-count model: the hot fields are {HOT_BYTES} B at the start of each record; \
             the scan must bring in every line they touch. At the full struct's {FULL_BYTES}-B \
             stride that is {} per order, not {FULL_BYTES} B (a line not touched need not be \
             read; the hardware prefetchers may read more, which the model leaves out); the split \
             array is read whole, {} per order. At the medians the scan moved {:.1} GB/s of \
             touched lines as full structs and {:.1} GB/s as the split array.",
            moved(FULL_BYTES),
            moved(HOT_BYTES),
            gbps(a, lines_per_order(FULL_BYTES, HOT_BYTES) * LINE as f64),
            gbps(s, HOT_BYTES as f64)
        ),
        "This guest exposes no hardware PMU (perf sees only software events), so the study's \
         7.8×10⁷ → 3.5×10⁷ misses have the line-count model and cachegrind's simulated misses \
         beside them (the counts table), not this CPU's own."
            .to_string(),
        format!(
            "All layouts computed the same: {} live buy orders, notional {}.",
            result.1, result.0
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn both_layouts_hold_the_same_orders_and_scan_the_same() {
        let b = Book::new(10_000, 3);
        assert!(b.full.iter().zip(&b.hot).all(|(f, h)| f.hot == *h));
        assert!(b.full.iter().zip(&b.cold).all(|(f, c)| f.cold == *c));
        let (notional, n) = scan_full(&b.full);
        assert_eq!((notional, n), scan_split(&b.hot));
        // About half are buys, nine in ten live.
        assert!((4_000..5_000).contains(&n), "{n}");
        let want: u64 = b
            .hot
            .iter()
            .filter(|h| h.live && h.side == BUY)
            .map(|h| h.price * u64::from(h.qty))
            .sum();
        assert_eq!(notional, want);
    }

    #[test]
    fn the_sweep_holds_the_same_orders_at_every_record_size() {
        let b = Book::new(3_000, 5);
        let want = scan_split(&b.hot);
        assert_eq!(std::mem::size_of::<Padded<0>>(), 24);
        assert_eq!(std::mem::size_of::<Padded<40>>(), 64);
        assert_eq!(std::mem::size_of::<Padded<104>>(), 128);
        assert_eq!(std::mem::size_of::<Padded<224>>(), FULL_BYTES);
        assert_eq!(scan_padded(&padded::<0>(&b.hot)), want);
        assert_eq!(scan_padded(&padded::<40>(&b.hot)), want);
        assert_eq!(scan_padded(&padded::<104>(&b.hot)), want);
    }

    #[test]
    fn the_line_model_counts_lines_touched_per_order() {
        assert_eq!(lines_per_order(24, 24), 0.375);
        assert_eq!(lines_per_order(64, 24), 1.0);
        assert_eq!(lines_per_order(128, 24), 1.0);
        // 248 = 3 × 64 + 56: the 24 hot bytes start at offsets 0, 56, 48, … 8; at 48 and 56
        // they cross a line.
        assert_eq!(lines_per_order(248, 24), 1.25);
        // Records that share lines: 32-B records, 24 hot, two per line.
        assert_eq!(lines_per_order(32, 24), 0.5);
        // Brute force over a long array agrees at every stride.
        for stride in [24, 32, 40, 56, 64, 72, 96, 128, 200, 248, 256] {
            let n = 64 * 64;
            let mut touched = std::collections::BTreeSet::new();
            for i in 0..n {
                for byte in [i * stride, i * stride + 23] {
                    touched.insert(byte / LINE);
                }
            }
            let brute = touched.len() as f64 / n as f64;
            assert_eq!(lines_per_order(stride, 24), brute, "stride {stride}");
        }
        assert!((predicted_ratio(FULL_BYTES) - 80.0 / 24.0).abs() < 1e-12);
        assert_eq!(moved(FULL_BYTES), "1.250 lines (80 B)");
    }

    #[test]
    fn the_model_reason_follows_the_measurement() {
        let r = model_reason(3.47, FULL_BYTES);
        assert!(
            r.starts_with(
                "a 248-B stride moves 1.250 lines (80 B) per order, the split 0.375 \
                           lines (24 B): the line-count model predicts 3.33×"
            ) && r.ends_with("and the measured 3.47× matches it"),
            "{r}"
        );
        assert!(
            model_reason(6.0, 128).contains("is more"),
            "{}",
            model_reason(6.0, 128)
        );
        assert!(model_reason(1.5, 128).contains("is less"));
        assert!(model_reason(1.02, 64).contains("no measurable difference"));
        assert!(model_reason(1.02, 24).ends_with("matches it"));
        assert!(model_reason(0.5, 64).contains("the other way"));
        // Against the study: larger here names the sweep; agreeing doesn't.
        let study = STUDY_BEFORE_S / STUDY_AFTER_S;
        assert!(split_reason(standing(3.47, Some(study)), 3.47).contains("sweep"));
        assert!(!split_reason(standing(1.2, Some(study)), 1.2).contains("sweep"));
    }

    #[test]
    fn the_lines_row_reason_follows_the_measurement() {
        assert!(lines_row_reason(3.33, 3.47).ends_with("3.47×, agrees with the count's 3.33×"));
        assert!(lines_row_reason(3.33, 1.02).contains("falls short of"));
        assert!(lines_row_reason(3.33, 6.0).contains("is more than"));
    }

    #[test]
    fn a_run_samples_every_pass_and_agrees() {
        let plan = Plan {
            orders: 5_000,
            warmup: 1,
            passes: 4,
        };
        let m = measure(Tsc::calibrate(Duration::from_millis(5)), plan);
        assert_eq!(m.dists.len(), 5);
        assert!(
            m.dists
                .iter()
                .all(|d| d.count == 4 && d.ops_per_sample == 1)
        );
        assert!(m.results.iter().all(|r| *r == m.results[0]));
        assert_ne!(m.results[0].1, 0);
        assert!(m.passes.iter().all(|p| p.len() == 4));
    }

    #[test]
    fn the_experiment_reports_its_rows() {
        // The shared small-size context (single-threaded: its other CPU is unused).
        let ctx = crate::code::test_ctx();
        let o = run(&ctx).unwrap();
        assert_eq!(o.dists.len(), 5);
        assert_eq!(o.comparisons.len(), 2 + SWEEP_COLD.len());
        assert_eq!(o.curves[0].series[0].points.len(), 4);
        assert!(o.trader.contains("crates/trader-core/src/lib.rs"));
    }
}
