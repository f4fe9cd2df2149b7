//! Data layout and SIMD for a risk loop over a book of positions: total delta-adjusted
//! exposure `Σ qty·price·delta` and how many positions breach their limit
//! (`|qty·price·delta| > limit`).
//!
//! A position is 64 bytes: the four fields the loop reads and four it doesn't (id, last fill
//! time, average cost, realised PnL), as a real position record carries. Array of structs
//! (AoS) walks all 64 bytes per position in one stream; struct of arrays (SoA) walks only the
//! four 8-byte columns the loop needs, four streams. Bytes moved predict 2×; a third layout,
//! packed records of the four fields ([`Packed`], 32 B: SoA's bytes in AoS's one stream), splits
//! the measured ratio into what the bytes cost and what the stream count does.
//!
//! The loops' code is not what differs: `objdump -d` of the release binary (checked by hand when
//! the packed layout was added) shows `risk_aos`, `risk_packed` and `risk_soa` compiled to the
//! same scalar body unrolled twice (`mulsd`, `addsd`, `ucomisd`; no packed instructions), 20
//! instructions per two positions, 21 for SoA's four indexed loads. The report says it from the
//! run's own evidence instead: the three layouts' ratios in L2, where memory is near.
//!
//! SIMD: three ways to run the SoA loop.
//! - scalar: the loop as written, one running sum. Rust (like C++ without `-ffast-math`)
//!   keeps IEEE semantics, so LLVM may not reorder the additions, which is what vectorising a
//!   sum needs: the loop vectoriser refuses it and the loop stays scalar (`mulsd`/`addsd`).
//! - SSE2: the loop written over 8 independent accumulators (plain Rust, fixed-size arrays), as
//!   the engine's WMA kernel is (`crates/engine/src/wma.rs`), compiled for the baseline x86-64 target,
//!   where LLVM vectorises it 2 lanes wide (SSE2).
//! - pulp: the same 8-accumulator code, run through `pulp::Arch::new().dispatch`, which calls
//!   it inside a function compiled for the best instruction set the CPU has (AVX2 + FMA, or
//!   AVX-512), where LLVM vectorises it 4 (or 8) lanes wide: exactly the engine's mechanism.
//!
//! SSE2 and pulp do the same IEEE operations in the same order per accumulator (LLVM does not
//! contract into FMAs without fast-math flags), so their results are bit-identical; AoS and
//! SoA scalar likewise. The scalar sum and the 8-accumulator sums add in different orders:
//! they agree within the rounding bound of the reassociation (checked every run).

use std::cell::{Cell, RefCell};
use std::hint::black_box;

use super::Rng;
use crate::Ctx;
use crate::harness::{Recorder, Tsc, Variant, interleave, tsc};
use crate::report::{Comparison, Level, Outcome, ns};
use crate::verdict::{Spread, Standing, standing};

/// One position: the loop's four fields first, then four it never reads.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C)]
pub struct Position {
    pub qty: f64,
    pub price: f64,
    pub delta: f64,
    pub limit: f64,
    pub id: u64,
    pub last_fill_ns: u64,
    pub avg_cost: f64,
    pub realised_pnl: f64,
}

/// The loop's four fields alone, 32 bytes, two to a line: an array of structs that uses every
/// byte it moves. One stream like [`Position`]'s AoS, the bytes of SoA's four columns, so the
/// AoS-vs-SoA ratio splits into bytes (AoS ÷ packed) and streams (packed ÷ SoA).
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C)]
pub struct Packed {
    pub qty: f64,
    pub price: f64,
    pub delta: f64,
    pub limit: f64,
}

impl Packed {
    pub fn of(p: &Position) -> Packed {
        Packed {
            qty: p.qty,
            price: p.price,
            delta: p.delta,
            limit: p.limit,
        }
    }
}

/// The same book as columns.
#[derive(Debug, Clone, Default)]
pub struct Book {
    pub qty: Vec<f64>,
    pub price: Vec<f64>,
    pub delta: Vec<f64>,
    pub limit: Vec<f64>,
    pub id: Vec<u64>,
    pub last_fill_ns: Vec<u64>,
    pub avg_cost: Vec<f64>,
    pub realised_pnl: Vec<f64>,
}

impl Book {
    pub fn from_positions(ps: &[Position]) -> Book {
        let mut b = Book::default();
        for p in ps {
            let Position {
                qty,
                price,
                delta,
                limit,
                id,
                last_fill_ns,
                avg_cost,
                realised_pnl,
            } = *p;
            b.qty.push(qty);
            b.price.push(price);
            b.delta.push(delta);
            b.limit.push(limit);
            b.id.push(id);
            b.last_fill_ns.push(last_fill_ns);
            b.avg_cost.push(avg_cost);
            b.realised_pnl.push(realised_pnl);
        }
        b
    }

    pub fn len(&self) -> usize {
        self.qty.len()
    }

    pub fn is_empty(&self) -> bool {
        self.qty.is_empty()
    }
}

/// `n` positions, the same for a seed: long and short quantities in lots, prices with cents,
/// deltas in [-1, 1], limits such that a few percent breach.
pub fn positions(n: usize, seed: u64) -> Vec<Position> {
    let mut r = Rng::new(seed);
    (0..n)
        .map(|i| {
            let qty = ((r.next_u64() % 2001) as f64 - 1000.0) * 10.0;
            let price = 10.0 + (r.next_u64() % 49_000) as f64 / 100.0;
            let delta = r.unit() * 2.0 - 1.0;
            // Typical |exposure| is ~ 5000 · 250 · 0.5 ≈ 6·10⁵; limits around 2·10⁶.
            let limit = 1.0e6 + r.unit() * 2.0e6;
            Position {
                qty,
                price,
                delta,
                limit,
                id: i as u64,
                last_fill_ns: r.next_u64() >> 8,
                avg_cost: price * (0.9 + 0.2 * r.unit()),
                realised_pnl: (r.unit() - 0.5) * 1.0e4,
            }
        })
        .collect()
}

/// What the risk loop computes.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Risk {
    /// Σ qty·price·delta.
    pub exposure: f64,
    /// Positions with |qty·price·delta| > limit.
    pub breaches: u64,
}

impl Risk {
    #[inline(always)]
    fn add(&mut self, qty: f64, price: f64, delta: f64, limit: f64) {
        let e = qty * price * delta;
        self.exposure += e;
        self.breaches += u64::from(e.abs() > limit);
    }

    /// Equal up to the order of the additions: identical breach counts, exposures within the
    /// worst-case bound of two recursive summations of `n` terms (`2 (n - 1) u Σ|x|`,
    /// u = 2⁻⁵³), taken generously as `1e-15 · n · gross` where `gross` is `Σ|x|`
    /// ([`gross`]). The products are computed identically in every variant, so only the sums'
    /// order differs.
    pub fn agrees(&self, other: &Risk, n: usize, gross: f64) -> bool {
        let tol = 1e-15 * n.max(1) as f64 * gross.abs();
        self.breaches == other.breaches && (self.exposure - other.exposure).abs() <= tol
    }
}

/// `Σ |qty·price·delta|`: the scale of the reassociation bound (not timed).
pub fn gross(b: &Book) -> f64 {
    (0..b.len())
        .map(|i| (b.qty[i] * b.price[i] * b.delta[i]).abs())
        .sum()
}

/// AoS, one running sum (scalar: see the module's docs).
#[inline(never)]
pub fn risk_aos(ps: &[Position]) -> Risk {
    let mut r = Risk::default();
    for p in ps {
        r.add(p.qty, p.price, p.delta, p.limit);
    }
    r
}

/// AoS of the loop's fields only, one running sum (scalar, as [`risk_aos`]).
#[inline(never)]
pub fn risk_packed(ps: &[Packed]) -> Risk {
    let mut r = Risk::default();
    for p in ps {
        r.add(p.qty, p.price, p.delta, p.limit);
    }
    r
}

/// SoA, one running sum (scalar: see the module's docs).
#[inline(never)]
pub fn risk_soa(b: &Book) -> Risk {
    let mut r = Risk::default();
    let n = b.len();
    let (q, p, d, l) = (&b.qty[..n], &b.price[..n], &b.delta[..n], &b.limit[..n]);
    for (((&q, &p), &d), &l) in q.iter().zip(p).zip(d).zip(l) {
        r.add(q, p, d, l);
    }
    r
}

/// Independent accumulators of the vectorisable form (8: two AVX2 registers, four SSE2, one
/// AVX-512 per sum).
const LANES: usize = 8;

/// SoA over [`LANES`] accumulators; the lanes combine in a fixed order, then the tail follows
/// in order. Inlined into its caller, so it is compiled for the caller's instruction set.
#[inline(always)]
fn risk_lanes(b: &Book) -> Risk {
    let n = b.len();
    let (q, p, d, l) = (&b.qty[..n], &b.price[..n], &b.delta[..n], &b.limit[..n]);
    let mut ex = [0.0_f64; LANES];
    let mut br = [0_u64; LANES];
    let chunks = q
        .chunks_exact(LANES)
        .zip(p.chunks_exact(LANES))
        .zip(d.chunks_exact(LANES))
        .zip(l.chunks_exact(LANES));
    for (((q, p), d), l) in chunks {
        // One statement per loop: each unrolls into one operation across the lanes, which
        // LLVM's SLP vectoriser packs into whole registers. (A third sum, Σ|e|, in the same
        // body got packed across the sums instead, with shuffles: half the width.)
        let mut e = [0.0_f64; LANES];
        for j in 0..LANES {
            e[j] = q[j] * p[j] * d[j];
        }
        for j in 0..LANES {
            ex[j] += e[j];
        }
        for j in 0..LANES {
            br[j] += u64::from(e[j].abs() > l[j]);
        }
    }
    let mut r = Risk::default();
    for j in 0..LANES {
        r.exposure += ex[j];
        r.breaches += br[j];
    }
    for i in n - n % LANES..n {
        r.add(q[i], p[i], d[i], l[i]);
    }
    r
}

/// [`risk_lanes`] for the baseline target (x86-64: SSE2, 2 lanes of f64).
#[inline(never)]
pub fn risk_soa_sse2(b: &Book) -> Risk {
    risk_lanes(b)
}

/// [`risk_lanes`] through pulp's runtime dispatch; also says which instruction set ran.
#[inline(never)]
pub fn risk_soa_pulp(b: &Book) -> (Risk, &'static str) {
    struct Job<'a>(&'a Book);
    impl pulp::WithSimd for Job<'_> {
        type Output = (Risk, &'static str);
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _simd: S) -> Self::Output {
            (risk_lanes(self.0), std::any::type_name::<S>())
        }
    }
    pulp::Arch::new().dispatch(Job(b))
}

/// The instruction-set level pulp's dispatch takes on this CPU, in words.
pub fn pulp_level() -> String {
    let (_, s) = risk_soa_pulp(&Book::default());
    let words = match pulp_lanes() {
        8 => "x86-64-v4: AVX-512 (8 lanes of f64)",
        4 => "x86-64-v3: AVX2 + FMA (4 lanes of f64)",
        _ => "scalar (no AVX2 here)",
    };
    format!("{words} [{s}]")
}

/// Lanes of f64 in the registers pulp's dispatch takes here: 8 (AVX-512), 4 (AVX2), 1 (none).
pub fn pulp_lanes() -> usize {
    let (_, s) = risk_soa_pulp(&Book::default());
    if s.ends_with("V4") {
        8
    } else if s.ends_with("V3") {
        4
    } else {
        1
    }
}

/// Bytes per position the AoS loop moves (its whole 64-byte line) and the SoA loop (4 of the 8
/// columns, 8 B each).
pub const AOS_BYTES: usize = std::mem::size_of::<Position>();
pub const SOA_BYTES: usize = 4 * 8;

/// Bytes per position the packed records move.
pub const PACKED_BYTES: usize = std::mem::size_of::<Packed>();

/// AoS ÷ SoA split in two by the packed records, out of cache and in L2: `bytes` is AoS ÷
/// packed (one stream each, 64 B against 32 B per position), `streams` packed ÷ SoA (the same
/// 32 B, one stream against four); `bytes * streams` is AoS ÷ SoA.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    pub bytes: f64,
    pub streams: f64,
    pub bytes_l2: f64,
    pub streams_l2: f64,
}

/// How a measured ratio stands against a model's, in words.
fn against(measured: f64, model: f64) -> &'static str {
    match standing(measured, Some(model)) {
        Standing::Agrees => "matches",
        Standing::LargerHere => "is more than",
        Standing::SmallerHere | Standing::NoDifference => "falls short of",
        Standing::Reversed => "is the other way from",
        Standing::Measurable | Standing::Undecided => "can't be set against",
    }
}

/// The large book's AoS-vs-SoA reason: what bytes moved predict (64 ÷ 32 B per position), then
/// what the measurement says, split into bytes and streams ([`Split`]), each beside its in-L2
/// ratio (the loops' own cost, little memory traffic: where that is as large, the loop's code,
/// not memory, makes the factor).
pub fn aos_soa_reason(standing: Standing, total: f64, s: Split) -> String {
    if standing == Standing::Undecided {
        return "a figure is missing".to_string();
    }
    let model = AOS_BYTES as f64 / SOA_BYTES as f64;
    let streams = match (
        crate::verdict::standing(s.streams, None),
        crate::verdict::standing(s.streams_l2, None),
    ) {
        (Standing::Measurable, Standing::Measurable) => format!(
            "one stream against four costs {:.2}× at the same bytes, {:.2}× of it already in L2 \
             (the loops' own code)",
            s.streams, s.streams_l2
        ),
        (Standing::Measurable, _) => format!(
            "one stream against four costs {:.2}× at the same bytes and nothing measurable in L2 \
             ({:.2}×): SoA's four sequential streams drew more bandwidth than one stream did",
            s.streams, s.streams_l2
        ),
        _ => format!(
            "one stream against four makes {:.2}× at the same bytes (in L2 {:.2}×)",
            s.streams, s.streams_l2
        ),
    };
    format!(
        "AoS moves {AOS_BYTES} B per position in one stream, half of each line used; SoA \
         {SOA_BYTES} B in four streams: bytes moved predict {model:.2}× and the measured \
         {total:.2}× {} it. Split by 32-B packed records: the unused half costs {:.2}× (one \
         stream each; in L2 {:.2}×), which {} the bytes' {model:.2}×; {streams}",
        against(total, model),
        s.bytes,
        s.bytes_l2,
        against(s.bytes, model),
    )
}

/// A split row's reason (bytes or streams): the bytes-moved model's ratio, the measured one
/// against it, and the same ratio in L2 (the loops' own cost).
pub fn split_row_reason(measured: f64, model: f64, in_l2: f64) -> String {
    format!(
        "bytes moved predict {model:.2}× and the measured {measured:.2}× {} it; in L2, where \
         memory is near, {in_l2:.2}×",
        against(measured, model)
    )
}

/// The in-L2 reason: per position, in TSC ticks, the three layouts' loops with little memory
/// traffic.
pub fn in_cache_reason(aos_ticks: f64, packed_ticks: f64, soa_ticks: f64) -> String {
    format!(
        "{aos_ticks:.2} (AoS) vs {packed_ticks:.2} (packed) vs {soa_ticks:.2} (SoA) ticks per \
         position with the data in L2: the scalar loops' own cost"
    )
}

/// The large book's scalar-vs-pulp reason: pulp's gain there against its gain in L2 (where
/// memory is near), and the columns' bandwidth: a gain much smaller out of cache is memory
/// bounding the loop, by the one rule on the two gains' ratio.
pub fn simd_reason(r_big: f64, r_small: f64, gbps: f64) -> String {
    let base = format!(
        "pulp gains {r_big:.2}× on the large book, streaming {gbps:.1} GB/s of columns, and \
         {r_small:.2}× in L2"
    );
    match crate::verdict::standing(r_small / r_big, None) {
        Standing::Measurable => {
            format!("{base}: less out of cache, so memory, not arithmetic, limits the large book")
        }
        Standing::Undecided => "a figure is missing".to_string(),
        _ => format!(
            "{base}: the large book gains as much as in L2, so memory doesn't bound it here"
        ),
    }
}

/// The register-width reason: pulp ran `lanes` lanes to SSE2's 2, so width alone could give
/// `lanes ÷ 2`; how much of that the measured ratio is.
pub fn width_reason(r: f64, lanes: usize) -> String {
    if lanes <= 2 {
        return format!(
            "pulp ran {lanes} lane(s) here, no wider than SSE2's 2: width can't explain the \
             measured {r:.2}×"
        );
    }
    let ideal = lanes as f64 / 2.0;
    format!(
        "pulp ran {lanes} lanes to SSE2's 2 (width alone: up to {ideal:.1}×); the measured \
         {r:.2}× is {:.0} % of that, same operations in the same order, bit-identical results",
        100.0 * (r - 1.0).max(0.0) / (ideal - 1.0)
    )
}

/// The in-L2 scalar-vs-pulp reason: per position, in TSC ticks.
pub fn simd_small_reason(scalar_ticks: f64, pulp_ticks: f64, lanes: usize) -> String {
    format!(
        "{scalar_ticks:.2} vs {pulp_ticks:.2} ticks per position in L2: one dependent sum \
         against {LANES} independent ones in {lanes}-lane registers"
    )
}

/// Working sets: one beyond the caches' comfort (the study's scale), one inside L2.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// Positions of the large book (1M: 64 MB AoS, 32 MB of SoA columns the loop reads).
    pub big: usize,
    /// Positions of the small book (8k: 512 KB AoS, 256 KB of columns: inside a 1 MB L2).
    pub small: usize,
    /// Passes over the small book per round (each one sample).
    pub small_passes: usize,
    pub warmup: usize,
    pub rounds: usize,
}

fn params(ctx: &Ctx) -> Params {
    ctx.pick(
        Params {
            big: 200_000,
            small: 8_192,
            small_passes: 20,
            warmup: 1,
            rounds: 5,
        },
        Params {
            big: 1_000_000,
            small: 8_192,
            small_passes: 100,
            warmup: 2,
            rounds: 40,
        },
    )
}

/// What one variant leaves behind: its last result (checked by the caller) and every
/// recorded pass's time, in order, for the median and range over passes.
#[derive(Debug, Default)]
struct Slot {
    last: Cell<Option<Risk>>,
    /// ns per recorded pass.
    passes: RefCell<Vec<f64>>,
}

/// One variant: `passes` timed passes of `f` per round, the first `warmup` rounds kept out of
/// `slot.ticks` as interleave keeps them out of the recorder.
fn passes<'a>(
    name: String,
    passes: usize,
    warmup: usize,
    clock: Tsc,
    slot: &'a Slot,
    mut f: impl FnMut() -> Risk + 'a,
) -> Variant<'a> {
    let mut calls = 0;
    Variant::new(name, move |rec: &mut Recorder| {
        for _ in 0..passes {
            let t0 = tsc();
            let r = black_box(f());
            let t1 = tsc();
            rec.record_ticks(t1.wrapping_sub(t0), 1);
            if calls >= warmup {
                slot.passes.borrow_mut().push(clock.ns(t1.wrapping_sub(t0)));
            }
            slot.last.set(Some(r));
        }
        calls += 1;
    })
}

impl Slot {
    /// The recorded passes' median and range.
    fn spread(&self) -> Option<Spread> {
        Spread::of(&self.passes.borrow())
    }
}

/// A spread's median, NaN when nothing was recorded (the row is then undecided).
fn median(s: &Option<Spread>) -> f64 {
    s.map_or(f64::NAN, |s| s.median)
}

/// `6.60 ms (6.21–7.03 ms, 40 passes)`.
fn ranged(s: &Option<Spread>) -> String {
    crate::report::ranged_ns(*s, "passes")
}

/// The AoS-vs-SoA experiment's variant names.
pub fn aos_name(n: usize) -> String {
    format!("AoS, {n} positions")
}
pub fn packed_name(n: usize) -> String {
    format!("packed AoS (4 fields, {PACKED_BYTES} B), {n} positions")
}
pub fn soa_name(n: usize) -> String {
    format!("SoA, {n} positions")
}

/// Bit-identical: the same operations in the same order.
fn check(what: &str, got: Option<Risk>, want: &Risk) -> anyhow::Result<()> {
    let got = got.ok_or_else(|| anyhow::anyhow!("{what}: never ran"))?;
    if got != *want {
        anyhow::bail!("{what} computed {got:?}, expected {want:?}");
    }
    Ok(())
}

const STUDY_AOS_MS: f64 = 258.0;
const STUDY_SOA_MS: f64 = 145.0;
const STUDY_SCALAR_MS: f64 = 406.0;
const STUDY_AVX_MS: f64 = 370.0;

pub fn run_aos_soa(ctx: &Ctx) -> anyhow::Result<Outcome> {
    run_aos_soa_with(ctx, params(ctx))
}

pub fn run_aos_soa_with(ctx: &Ctx, p: Params) -> anyhow::Result<Outcome> {
    ctx.pin()?;
    let mut out = Outcome::new(
        "aos-soa",
        "Array of structs vs struct of arrays: a risk loop over positions",
        Level::Code,
    );
    let sets = [("big", p.big, 1), ("small", p.small, p.small_passes)];
    let aos: Vec<Vec<Position>> = sets.iter().map(|s| positions(s.1, 42)).collect();
    let packed: Vec<Vec<Packed>> = aos
        .iter()
        .map(|a| a.iter().map(Packed::of).collect())
        .collect();
    let soa: Vec<Book> = aos.iter().map(|a| Book::from_positions(a)).collect();
    let results: Vec<[Slot; 3]> = sets.iter().map(|_| Default::default()).collect();
    let mut variants = Vec::new();
    for (i, &(_, n, k)) in sets.iter().enumerate() {
        let (a, pk, b) = (&aos[i], &packed[i], &soa[i]);
        let w = p.warmup;
        variants.push(passes(
            aos_name(n),
            k,
            w,
            ctx.tsc,
            &results[i][0],
            move || risk_aos(black_box(a)),
        ));
        variants.push(passes(
            packed_name(n),
            k,
            w,
            ctx.tsc,
            &results[i][1],
            move || risk_packed(black_box(pk)),
        ));
        variants.push(passes(
            soa_name(n),
            k,
            w,
            ctx.tsc,
            &results[i][2],
            move || risk_soa(black_box(b)),
        ));
    }
    out.dists = interleave(ctx.tsc, p.warmup, p.rounds, &mut variants);
    drop(variants);
    for (i, r) in results.iter().enumerate() {
        let want = risk_aos(&aos[i]);
        check("AoS", r[0].last.get(), &want)?;
        check("packed", r[1].last.get(), &want)?;
        check("SoA", r[2].last.get(), &want)?;
    }
    // [set][AoS, packed, SoA]: spreads and medians over passes.
    let sp: Vec<[Option<Spread>; 3]> = results
        .iter()
        .map(|r| [r[0].spread(), r[1].spread(), r[2].spread()])
        .collect();
    let md = AosSoaMedians::of(&sp);
    out.comparisons = aos_soa_rows(&p, &sp, &md, ctx.tsc.ticks_per_ns);
    out.notes = aos_soa_notes(&p, &md);
    out.trader = "The trader keeps no book of positions: one stock and at most one open \
                  position (`engine::Ledger` in `crates/engine/src/ledger.rs`: `open: Option<(Side, \
                  f64)>`), so there is no loop over positions to lay out. Where it does keep \
                  series, they are columns already: the strategy's `closes`, `diffs` and `ders` \
                  are three separate f64 rings (`crates/engine/src/strategy.rs`), i.e. SoA."
        .to_string();
    Ok(out)
}

/// Each AoS-vs-SoA variant's median pass, ns, on the large book and on the small one (in L2).
#[derive(Debug, Clone, Copy)]
struct AosSoaMedians {
    aos_big: f64,
    packed_big: f64,
    soa_big: f64,
    aos_small: f64,
    packed_small: f64,
    soa_small: f64,
}

impl AosSoaMedians {
    /// From the spreads, `[set][AoS, packed, SoA]` (the large book first).
    fn of(sp: &[[Option<Spread>; 3]]) -> Self {
        let m = |i: usize, v: usize| median(&sp[i][v]);
        let (aos_big, packed_big, soa_big) = (m(0, 0), m(0, 1), m(0, 2));
        let (aos_small, packed_small, soa_small) = (m(1, 0), m(1, 1), m(1, 2));
        Self {
            aos_big,
            packed_big,
            soa_big,
            aos_small,
            packed_small,
            soa_small,
        }
    }

    /// AoS ÷ SoA on the large book and on the small one.
    fn ratios(&self) -> (f64, f64) {
        (self.aos_big / self.soa_big, self.aos_small / self.soa_small)
    }

    /// The ratio split into its bytes and its streams, on each book.
    fn split(&self) -> Split {
        Split {
            bytes: self.aos_big / self.packed_big,
            streams: self.packed_big / self.soa_big,
            bytes_l2: self.aos_small / self.packed_small,
            streams_l2: self.packed_small / self.soa_small,
        }
    }
}

/// The AoS-vs-SoA rows: the large book's ratio against the study's, its split into bytes and
/// streams, and the small book's (`tpn`: the counter's ticks per ns).
fn aos_soa_rows(
    p: &Params,
    sp: &[[Option<Spread>; 3]],
    md: &AosSoaMedians,
    tpn: f64,
) -> Vec<Comparison> {
    let AosSoaMedians {
        aos_small,
        packed_small,
        soa_small,
        ..
    } = *md;
    let (r_big, r_small) = md.ratios();
    let split = md.split();
    let study = STUDY_AOS_MS / STUDY_SOA_MS;
    let model = AOS_BYTES as f64 / SOA_BYTES as f64;
    vec![
        Comparison::judged(
            format!(
                "AoS vs SoA, {} positions (AoS {} MB, SoA columns read {} MB), median pass",
                p.big,
                (p.big * AOS_BYTES) >> 20,
                (p.big * SOA_BYTES) >> 20
            ),
            format!("{} vs {}", ranged(&sp[0][0]), ranged(&sp[0][2])),
            r_big,
            format!("{STUDY_AOS_MS} ms vs {STUDY_SOA_MS} ms"),
            Some(study),
            &aos_soa_reason(standing(r_big, Some(study)), r_big, split),
        ),
        Comparison::judged(
            format!(
                "the bytes: AoS ({AOS_BYTES} B) vs packed records ({PACKED_BYTES} B, the loop's \
                 fields only), one stream each, {} positions, median pass",
                p.big
            ),
            format!("{} vs {}", ranged(&sp[0][0]), ranged(&sp[0][1])),
            split.bytes,
            "– (the study has no such split)",
            None,
            &split_row_reason(split.bytes, model, split.bytes_l2),
        ),
        Comparison::judged(
            format!(
                "the streams: packed records (one stream) vs SoA (four columns), the same \
                 {SOA_BYTES} B per position, {} positions, median pass",
                p.big
            ),
            format!("{} vs {}", ranged(&sp[0][1]), ranged(&sp[0][2])),
            split.streams,
            "– (the study has no such split)",
            None,
            &split_row_reason(split.streams, 1.0, split.streams_l2),
        ),
        Comparison::judged(
            format!("AoS vs SoA, {} positions (in L2), median pass", p.small),
            format!("{} vs {}", ranged(&sp[1][0]), ranged(&sp[1][2])),
            r_small,
            "not measured (the study's book is large)",
            None,
            &in_cache_reason(
                aos_small / p.small as f64 * tpn,
                packed_small / p.small as f64 * tpn,
                soa_small / p.small as f64 * tpn,
            ),
        ),
    ]
}

/// The AoS-vs-SoA notes: how the samples are taken, the bytes-moved model against the measured
/// ratios, the figures per position, and what this guest can't count.
fn aos_soa_notes(p: &Params, md: &AosSoaMedians) -> Vec<String> {
    let AosSoaMedians {
        aos_big,
        packed_big,
        soa_big,
        aos_small,
        packed_small,
        soa_small,
    } = *md;
    let (r_big, r_small) = md.ratios();
    let split = md.split();
    let model = AOS_BYTES as f64 / SOA_BYTES as f64;
    let per = |v: f64, n: usize| ns(v / n as f64);
    vec![
        format!(
            "Each sample is one pass over the whole book (the large book: one per round; the \
             small one: {} per round); the rows give each variant's median pass with the range \
             over its passes, and the ratio of the medians; the table keeps every percentile. \
             All three layouts run the same scalar loop (one running sum, in order), so their \
             results are bit-identical, checked every run.",
            p.small_passes
        ),
        format!(
            "The model: the loop reads 4 of a position's 8 fields. AoS moves whole {AOS_BYTES}-B \
             records, one sequential stream of which half of every line is used; SoA moves the \
             four {}-B columns it reads, four sequential streams of whole lines; the packed \
             records ({PACKED_BYTES} B, the four fields) move SoA's bytes in AoS's one stream. \
             Bytes moved predict AoS ÷ SoA = {model:.2}×, AoS ÷ packed = {model:.2}×, packed ÷ \
             SoA = 1.00×. Measured on the large book: {r_big:.2}×, {:.2}×, {:.2}×; in L2: \
             {r_small:.2}×, {:.2}×, {:.2}×. The in-L2 ratios are the loops' own cost (their \
             code: all three are the same scalar loop over different addressing), so a factor \
             out of cache that is not already there in L2 is the memory system's.",
            SOA_BYTES / 4,
            split.bytes,
            split.streams,
            split.bytes_l2,
            split.streams_l2
        ),
        format!(
            "Per position: AoS {} vs packed {} vs SoA {} on the large book; {} vs {} vs {} in L2. \
             The large book's SoA columns alone are {} MB ({SOA_BYTES} B × {}) a pass: where \
             that lies against this machine's caches, the memory curve's steps say (its last \
             step is the effective last-level cache); the bandwidth a KVM guest gets varies with \
             its neighbours.",
            per(aos_big, p.big),
            per(packed_big, p.big),
            per(soa_big, p.big),
            per(aos_small, p.small),
            per(packed_small, p.small),
            per(soa_small, p.small),
            (p.big * SOA_BYTES) >> 20,
            p.big
        ),
        "No hardware PMU in this guest: this CPU's misses and bandwidth can't be counted, only \
         timed; the counts table beside it is cachegrind's model cache (no prefetcher)."
            .to_string(),
    ]
}

pub fn run_simd(ctx: &Ctx) -> anyhow::Result<Outcome> {
    run_simd_with(ctx, params(ctx))
}

pub fn run_simd_with(ctx: &Ctx, p: Params) -> anyhow::Result<Outcome> {
    ctx.pin()?;
    let mut out = Outcome::new(
        "simd",
        "Scalar vs SIMD on the SoA risk loop, with the engine's runtime dispatch (pulp)",
        Level::Code,
    );
    let level = pulp_level();
    let sets = [("big", p.big, 1), ("small", p.small, p.small_passes)];
    let books: Vec<Book> = sets
        .iter()
        .map(|s| Book::from_positions(&positions(s.1, 43)))
        .collect();
    let results: Vec<[Slot; 3]> = sets.iter().map(|_| Default::default()).collect();
    let mut variants = Vec::new();
    let names = |n: usize| {
        [
            format!("scalar, {n} positions"),
            format!("SSE2 (baseline target), {n} positions"),
            format!("pulp dispatch, {n} positions"),
        ]
    };
    for (i, &(_, n, k)) in sets.iter().enumerate() {
        let b = &books[i];
        let [s, s2, pu] = names(n);
        let w = p.warmup;
        variants.push(passes(s, k, w, ctx.tsc, &results[i][0], move || {
            risk_soa(black_box(b))
        }));
        variants.push(passes(s2, k, w, ctx.tsc, &results[i][1], move || {
            risk_soa_sse2(black_box(b))
        }));
        variants.push(passes(pu, k, w, ctx.tsc, &results[i][2], move || {
            risk_soa_pulp(black_box(b)).0
        }));
    }
    out.dists = interleave(ctx.tsc, p.warmup, p.rounds, &mut variants);
    drop(variants);
    let mut worst_rel = 0.0_f64;
    for (i, &(_, n, _)) in sets.iter().enumerate() {
        let scalar = risk_soa(&books[i]);
        let sse2 = risk_soa_sse2(&books[i]);
        check("scalar", results[i][0].last.get(), &scalar)?;
        check("SSE2", results[i][1].last.get(), &sse2)?;
        // The two vector forms: bit-identical; against the scalar order: within the bound.
        check("pulp", results[i][2].last.get(), &sse2)?;
        let g = gross(&books[i]);
        if !sse2.agrees(&scalar, n, g) {
            anyhow::bail!("the 8-lane sum {sse2:?} is not the scalar sum {scalar:?} reordered");
        }
        worst_rel = worst_rel.max((sse2.exposure - scalar.exposure).abs() / g);
    }
    let lanes = pulp_lanes();
    let tpn = ctx.tsc.ticks_per_ns;
    let figs: Vec<[f64; 3]> = (0..sets.len())
        .map(|i| {
            let q = |v: usize| median(&results[i][v].spread());
            [q(0), q(1), q(2)]
        })
        .collect();
    let (r_big, r_small) = (figs[0][0] / figs[0][2], figs[1][0] / figs[1][2]);
    let gbps = (p.big * SOA_BYTES) as f64 / figs[0][2];
    let study = STUDY_SCALAR_MS / STUDY_AVX_MS;
    let mut rows = Vec::new();
    for (i, &(_, n, _)) in sets.iter().enumerate() {
        let [s, s2, pu] = figs[i];
        let (r_s, r_s2) = (s / pu, s2 / pu);
        let big = i == 0;
        let place = if big { "large book" } else { "in L2" };
        rows.push(Comparison::judged(
            format!("scalar vs pulp ({level}), {n} positions, {place}, median pass"),
            format!(
                "{} vs {}",
                ranged(&results[i][0].spread()),
                ranged(&results[i][2].spread())
            ),
            r_s,
            if big {
                format!("{STUDY_SCALAR_MS} ms vs {STUDY_AVX_MS} ms")
            } else {
                "not measured (the study's one size)".to_string()
            },
            big.then_some(study),
            &if big {
                simd_reason(r_big, r_small, gbps)
            } else {
                simd_small_reason(s / n as f64 * tpn, pu / n as f64 * tpn, lanes)
            },
        ));
        rows.push(Comparison::judged(
            format!(
                "SSE2 (2 lanes) vs pulp (same code, wider), {n} positions, {place}, median pass"
            ),
            format!(
                "{} vs {}",
                ranged(&results[i][1].spread()),
                ranged(&results[i][2].spread())
            ),
            r_s2,
            "not measured",
            None,
            &width_reason(r_s2, lanes),
        ));
    }
    out.comparisons = rows;
    out.notes =
        vec![
        format!(
            "Each sample is one pass over the whole book (the large book: one per round; the \
             small one: {} per round); the rows give each variant's median pass with the range \
             over its passes, and the ratio of the medians; the table keeps every percentile.",
            p.small_passes
        ),
        format!("pulp's dispatch took {level} on this CPU (checked at run time, as the engine's \
                 does)."),
        "scalar: the loop with one running sum. LLVM keeps IEEE order (no fast-math in Rust), so \
         it cannot split the sum into vector lanes; it compiles to scalar `mulsd`/`addsd` for \
         every target, which is what C++ at -O2/-O3 without -ffast-math does too. Its time in \
         L2 is its add chain's latency (one dependent add per position), not the multiplies."
            .to_string(),
        "SSE2 vs pulp is the honest SIMD question: the same 8-accumulator source, compiled once \
         for the baseline x86-64 target (SSE2, 2 lanes) and once inside pulp's AVX2/AVX-512 \
         function; the results are bit-identical. scalar vs SSE2 mixes two effects, \
         instruction-level parallelism (8 independent sums instead of one chain) and 2-lane \
         vectors."
            .to_string(),
        format!(
            "Results: breach counts equal in every variant; the 8-lane sums differ from the \
             scalar order by at most {worst_rel:.1e} of the gross exposure (bound allowed: \
             1e-15 × n × gross)."
        ),
    ];
    out.trader = "The trader's tick path runs no loop over arrays wide enough to vectorise: \
                  `Strategy::on_tick` (`crates/engine/src/strategy.rs`) completes a handful of WMAs \
                  from values prepared between ticks. pulp's dispatch is used by the engine's \
                  batch sweep (`crates/engine/src/sweep.rs` → `wma::wma_span` in \
                  `crates/engine/src/wma.rs`), not on the trader's per-tick path."
        .to_string();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Position>(), 64);
        assert_eq!(PACKED_BYTES, SOA_BYTES);
    }

    #[test]
    fn every_layout_and_variant_computes_the_same_risk() {
        // Sizes with a tail the lanes don't cover.
        for n in [0, 1, 7, 8, 1_003, 20_011] {
            let ps = positions(n, 9);
            let b = Book::from_positions(&ps);
            let scalar = risk_aos(&ps);
            assert_eq!(
                risk_soa(&b),
                scalar,
                "AoS and SoA in the same order: bit-identical"
            );
            let packed: Vec<Packed> = ps.iter().map(Packed::of).collect();
            assert_eq!(risk_packed(&packed), scalar, "packed: bit-identical");
            let sse2 = risk_soa_sse2(&b);
            let (pulp, _) = risk_soa_pulp(&b);
            assert_eq!(pulp, sse2, "the same lanes at another width: bit-identical");
            assert!(sse2.agrees(&scalar, n, gross(&b)), "{sse2:?} vs {scalar:?}");
            assert_eq!(sse2.breaches, scalar.breaches);
        }
    }

    #[test]
    fn the_data_has_breaches_and_both_signs() {
        let ps = positions(10_000, 1);
        let r = risk_aos(&ps);
        assert!(r.breaches > 50 && r.breaches < 5_000, "{r:?}");
        assert!(ps.iter().any(|p| p.qty < 0.0) && ps.iter().any(|p| p.qty > 0.0));
        assert!(r.exposure.abs() < gross(&Book::from_positions(&ps)));
    }

    #[test]
    fn agreement_rejects_a_different_count_or_a_far_sum() {
        let a = Risk {
            exposure: 1.0,
            breaches: 3,
        };
        let b = Risk { breaches: 4, ..a };
        assert!(!a.agrees(&b, 100, 10.0));
        let c = Risk { exposure: 1.1, ..a };
        assert!(!a.agrees(&c, 100, 10.0));
        let d = Risk {
            exposure: 1.0 + 1e-14,
            ..a
        };
        assert!(a.agrees(&d, 100, 10.0));
    }

    #[test]
    fn the_layout_reasons_follow_the_data() {
        let study = STUDY_AOS_MS / STUDY_SOA_MS;
        // As measured: 2.92× = 2.0× bytes × 1.46× streams, streams nothing in L2.
        let split = Split {
            bytes: 2.0,
            streams: 1.46,
            bytes_l2: 1.0,
            streams_l2: 1.02,
        };
        let r = aos_soa_reason(standing(2.92, Some(study)), 2.92, split);
        assert!(
            r.contains("bytes moved predict 2.00× and the measured 2.92× matches it")
                && r.contains("the unused half costs 2.00× (one stream each; in L2 1.00×), which matches the bytes' 2.00×")
                && r.contains("one stream against four costs 1.46× at the same bytes and nothing measurable in L2 (1.02×): SoA's four sequential streams drew more bandwidth"),
            "{r}"
        );
        // The same total made by the loops' code: the streams' factor already there in L2.
        let r = aos_soa_reason(
            standing(2.92, Some(study)),
            2.92,
            Split {
                streams_l2: 1.4,
                ..split
            },
        );
        assert!(
            r.contains("of it already in L2 (the loops' own code)"),
            "{r}"
        );
        // Bytes that cost more than their share, and no stream effect.
        let r = aos_soa_reason(
            standing(4.0, Some(study)),
            4.0,
            Split {
                bytes: 4.0,
                streams: 1.0,
                bytes_l2: 1.0,
                streams_l2: 1.0,
            },
        );
        assert!(
            r.contains("which is more than the bytes' 2.00×") && r.contains("makes 1.00×"),
            "{r}"
        );
        assert_eq!(
            aos_soa_reason(Standing::Undecided, f64::NAN, split),
            "a figure is missing"
        );
        assert_eq!(against(1.0, 1.0), "matches");
        assert!(split_row_reason(1.33, 2.0, 1.0).contains("measured 1.33× falls short of it"));
        assert!(split_row_reason(1.9, 2.0, 1.0).contains("measured 1.90× matches it"));
        assert!(split_row_reason(1.46, 1.0, 1.02).ends_with("near, 1.02×"));
        assert_eq!(against(0.5, 2.0), "is the other way from");

        assert!(
            simd_reason(1.19, 2.83, 14.2)
                .ends_with("memory, not arithmetic, limits the large book")
        );
        assert!(simd_reason(2.8, 2.83, 40.0).contains("doesn't bound it here"));
        let w = width_reason(1.29, 4);
        assert!(
            w.contains("up to 2.0×") && w.contains("is 29 % of that"),
            "{w}"
        );
        assert!(width_reason(1.0, 8).contains("is 0 % of that"));
        assert!(width_reason(1.1, 1).contains("can't explain"));
        assert!(in_cache_reason(3.1, 2.6, 2.5).starts_with("3.10 (AoS) vs 2.60 (packed) vs 2.50"));
        assert!(simd_small_reason(2.6, 0.9, 4).contains("in 4-lane registers"));
    }

    #[test]
    fn pulp_names_a_level() {
        let l = pulp_level();
        assert!(l.contains("pulp"), "{l}");
    }

    fn tiny() -> Params {
        Params {
            big: 4_099,
            small: 1_024,
            small_passes: 3,
            warmup: 0,
            rounds: 2,
        }
    }

    #[test]
    fn the_aos_soa_experiment_runs_small() {
        let out = run_aos_soa_with(&crate::code::test_ctx(), tiny()).unwrap();
        assert_eq!(out.dists.len(), 6);
        assert_eq!(out.dist(&aos_name(4099)).count, 2);
        assert_eq!(out.dist(&packed_name(4099)).count, 2);
        assert_eq!(out.dist(&soa_name(1024)).count, 6);
        assert_eq!(out.comparisons.len(), 4);
    }

    #[test]
    fn the_simd_experiment_runs_small() {
        let out = run_simd_with(&crate::code::test_ctx(), tiny()).unwrap();
        assert_eq!(out.dists.len(), 6);
        assert_eq!(out.dist("pulp dispatch, 1024 positions").count, 6);
        assert_eq!(out.comparisons.len(), 4);
        assert!(out.notes.iter().any(|n| n.contains("pulp's dispatch took")));
    }
}
