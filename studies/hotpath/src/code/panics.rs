//! Panic vs `Result` vs `Option` on the hot path: one validation of an ITCH order message (a
//! known type, Add Order or Trade; its type's fixed length; a side of `B` or `S`; some shares)
//! written three ways:
//!
//! * **`Result<Order, Bad>`**: a bad message is an error the caller counts (the trader's way).
//! * **`assert!`/`panic!`**: a bad message panics; the caller must never pass one. Only a stream
//!   with no bad message can be timed this way (a panic that fires unwinds, and that is not a
//!   hot path), so this form measures what the panic path's presence costs when it never runs:
//!   its cold branches and the formatting code beside the hot one.
//! * **`Option<Order>`**: a bad message is `None`, counted, its reason dropped.
//!
//! Each check is a function called out of line (`#[inline(never)]`), as the trader's
//! `wire::itch::parse` is a call into another crate: what it returns (an `Order`, or the enum
//! around it) crosses the call. Two streams of the same messages: one with none bad, one with a
//! configurable fraction bad ([`Plan::bad`], 1 % by default). With none bad all three forms
//! compare; with some bad only `Result` and `Option` can run.

use std::cell::{Cell, RefCell};
use std::ops::Range;

use super::Rng;
use super::bounds::{Fig, pair_reason, pair_row};
use crate::Ctx;
use crate::harness::{Dist, Recorder, Tsc, Variant, interleave, tsc};
use crate::report::{Comparison, Level, Outcome};
use crate::verdict::Spread;

/// ITCH 5.0 Add Order (no MPID) and Trade (non-cross): type bytes, fixed lengths, and the
/// offsets of the fields both share (NASDAQ TotalView-ITCH 5.0, sections 4.3.1 and 4.6.1).
const ADD: u8 = b'A';
const TRADE: u8 = b'P';
const ADD_LEN: usize = 36;
const TRADE_LEN: usize = 44;
const ORDER_REF: usize = 11;
const SIDE: usize = 19;
const SHARES: usize = 20;
const STOCK: usize = 24;
const PRICE: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Buy,
    Sell,
}

/// What a valid message gives the book or the strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    pub order_ref: u64,
    /// The 8 stock bytes as one big-endian integer.
    pub stock: u64,
    pub price: u32,
    pub shares: u32,
    pub side: Side,
    /// A Trade (else an Add Order).
    pub trade: bool,
}

/// Why a message is not a valid order: small and `Copy`, as `wire::Error` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    Empty,
    Kind(u8),
    Length { kind: u8, got: u16 },
    Side(u8),
    NoShares,
}

#[inline(always)]
fn be32(m: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(m[at..at + 4].try_into().unwrap())
}

#[inline(always)]
fn be64(m: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(m[at..at + 8].try_into().unwrap())
}

/// The fixed length of an order message's type, or `None` for any other type.
#[inline(always)]
fn order_len(kind: u8) -> Option<usize> {
    match kind {
        ADD => Some(ADD_LEN),
        TRADE => Some(TRADE_LEN),
        _ => None,
    }
}

/// A side byte already checked to be `B` or `S`. Checked first, then chosen, so the check is
/// one branch that is always taken the same way and the choice needs none: a `match` with a
/// bad arm is a branch on the side itself, mispredicted half the time on a random stream, which
/// would cost more than anything compared here.
#[inline(always)]
fn side_of(s: u8) -> Side {
    if s == b'B' { Side::Buy } else { Side::Sell }
}

/// The fields of a message already validated (its length is its type's).
#[inline(always)]
fn fields(m: &[u8], side: Side, shares: u32) -> Order {
    Order {
        order_ref: be64(m, ORDER_REF),
        stock: be64(m, STOCK),
        price: be32(m, PRICE),
        shares,
        side,
        trade: m[0] == TRADE,
    }
}

/// The validation returning `Result`.
#[inline(never)]
pub fn check_result(m: &[u8]) -> Result<Order, Bad> {
    let Some(&kind) = m.first() else {
        return Err(Bad::Empty);
    };
    let Some(want) = order_len(kind) else {
        return Err(Bad::Kind(kind));
    };
    if m.len() != want {
        return Err(Bad::Length {
            kind,
            got: m.len() as u16,
        });
    }
    let s = m[SIDE];
    if s != b'B' && s != b'S' {
        return Err(Bad::Side(s));
    }
    let side = side_of(s);
    let shares = be32(m, SHARES);
    if shares == 0 {
        return Err(Bad::NoShares);
    }
    Ok(fields(m, side, shares))
}

/// The validation returning `Option`.
#[inline(never)]
pub fn check_option(m: &[u8]) -> Option<Order> {
    let &kind = m.first()?;
    let want = order_len(kind)?;
    if m.len() != want {
        return None;
    }
    let s = m[SIDE];
    if s != b'B' && s != b'S' {
        return None;
    }
    let side = side_of(s);
    let shares = be32(m, SHARES);
    if shares == 0 {
        return None;
    }
    Some(fields(m, side, shares))
}

/// The validation that panics: the caller promises a valid message.
#[inline(never)]
pub fn check_or_panic(m: &[u8]) -> Order {
    assert!(!m.is_empty(), "an empty ITCH message");
    let kind = m[0];
    let Some(want) = order_len(kind) else {
        panic!("ITCH type {kind:#04x} is not an order message");
    };
    assert!(
        m.len() == want,
        "ITCH type {:?} must be {want} bytes, got {}",
        char::from(kind),
        m.len()
    );
    let s = m[SIDE];
    assert!(s == b'B' || s == b'S', "side {s:#04x} is neither B nor S");
    let side = side_of(s);
    let shares = be32(m, SHARES);
    assert!(shares != 0, "an order of no shares");
    fields(m, side, shares)
}

/// What the caller keeps: every field folded in, and the bad messages counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub orders: u64,
    pub trades: u64,
    pub refs: u64,
    pub stocks: u64,
    pub bought: u64,
    pub sold: u64,
    pub notional: u64,
    pub bad: u64,
}

impl Tally {
    #[inline(always)]
    fn take(&mut self, o: &Order) {
        let buy = u64::from(o.side == Side::Buy);
        let shares = u64::from(o.shares);
        self.orders += 1;
        self.trades += u64::from(o.trade);
        self.refs ^= o.order_ref;
        self.stocks = self.stocks.wrapping_add(o.stock);
        self.bought = self.bought.wrapping_add(buy * shares);
        self.sold = self.sold.wrapping_add((1 - buy) * shares);
        self.notional = self
            .notional
            .wrapping_add(u64::from(o.price).wrapping_mul(shares));
    }

    /// One number for the report.
    pub fn checksum(&self) -> u64 {
        [
            self.orders,
            self.trades,
            self.refs,
            self.stocks,
            self.bought,
            self.sold,
            self.notional,
            self.bad,
        ]
        .iter()
        .fold(0u64, |h, &x| h.rotate_left(13) ^ x)
    }
}

/// A batch through each form: out of line, the check inside it a call.
#[inline(never)]
fn batch_result(bytes: &[u8], msgs: &[Range<usize>], t: &mut Tally) {
    for r in msgs {
        match check_result(&bytes[r.clone()]) {
            Ok(o) => t.take(&o),
            Err(_) => t.bad += 1,
        }
    }
}

#[inline(never)]
fn batch_option(bytes: &[u8], msgs: &[Range<usize>], t: &mut Tally) {
    for r in msgs {
        match check_option(&bytes[r.clone()]) {
            Some(o) => t.take(&o),
            None => t.bad += 1,
        }
    }
}

#[inline(never)]
fn batch_panic(bytes: &[u8], msgs: &[Range<usize>], t: &mut Tally) {
    for r in msgs {
        t.take(&check_or_panic(&bytes[r.clone()]));
    }
}

/// The ways a generated message is made bad, in turn.
const SPOILS: usize = 3;

/// A stream of order messages back to back, each one's range, and what each should give
/// (`None`: made bad on purpose).
#[derive(Debug)]
pub struct Stream {
    pub bytes: Vec<u8>,
    pub msgs: Vec<Range<usize>>,
    pub want: Vec<Option<Order>>,
}

impl Stream {
    /// The messages made bad.
    pub fn bad(&self) -> usize {
        self.want.iter().filter(|w| w.is_none()).count()
    }

    /// The tally of the first `batches` batches of `per_batch` messages (cycling), from the
    /// generated orders: what every form must compute.
    pub fn reference(&self, batches: usize, per_batch: usize) -> Tally {
        let mut t = Tally::default();
        let n = self.want.len();
        let mut k = 0;
        for _ in 0..batches * per_batch {
            match &self.want[k] {
                Some(o) => t.take(o),
                None => t.bad += 1,
            }
            k = (k + 1) % n;
        }
        t
    }
}

/// The same `n` messages twice: `clean` with none bad, `dirty` with `bad` × `n` (rounded) of
/// them, at random places, made bad (a wrong length, a bad side byte or no shares, in turn).
pub fn streams(n: usize, bad: f64, seed: u64) -> (Stream, Stream) {
    let mut r = Rng::new(seed);
    let mut spoil = vec![false; n];
    let mut left = ((bad * n as f64).round() as usize).min(n);
    while left > 0 {
        let i = r.below(n);
        if !spoil[i] {
            spoil[i] = true;
            left -= 1;
        }
    }
    let mut clean = Stream {
        bytes: Vec::new(),
        msgs: Vec::with_capacity(n),
        want: Vec::with_capacity(n),
    };
    let mut dirty = Stream {
        bytes: Vec::new(),
        msgs: Vec::with_capacity(n),
        want: Vec::with_capacity(n),
    };
    const STOCKS: [&[u8; 8]; 4] = [b"AAPL    ", b"MSFT    ", b"SYNTH   ", b"NVDA    "];
    let mut spoiled = 0usize;
    for &spoil in &spoil {
        let trade = r.below(5) == 0;
        let (kind, len) = if trade {
            (TRADE, TRADE_LEN)
        } else {
            (ADD, ADD_LEN)
        };
        let o = Order {
            order_ref: r.next_u64() >> 20,
            stock: u64::from_be_bytes(*STOCKS[r.below(STOCKS.len())]),
            price: 1_000_000 + r.below(20_000) as u32,
            shares: 1 + r.below(1_000) as u32,
            side: if r.below(2) == 0 {
                Side::Buy
            } else {
                Side::Sell
            },
            trade,
        };
        let mut m = vec![0u8; len];
        m[0] = kind;
        m[1..3].copy_from_slice(&1u16.to_be_bytes());
        m[ORDER_REF..ORDER_REF + 8].copy_from_slice(&o.order_ref.to_be_bytes());
        m[SIDE] = if o.side == Side::Buy { b'B' } else { b'S' };
        m[SHARES..SHARES + 4].copy_from_slice(&o.shares.to_be_bytes());
        m[STOCK..STOCK + 8].copy_from_slice(&o.stock.to_be_bytes());
        m[PRICE..PRICE + 4].copy_from_slice(&o.price.to_be_bytes());
        let at = clean.bytes.len();
        clean.bytes.extend_from_slice(&m);
        clean.msgs.push(at..at + len);
        clean.want.push(Some(o));
        let mut d = m;
        if spoil {
            match spoiled % SPOILS {
                0 => {
                    d.pop();
                }
                1 => d[SIDE] = b'X',
                _ => d[SHARES..SHARES + 4].fill(0),
            }
            spoiled += 1;
        }
        let at = dirty.bytes.len();
        dirty.bytes.extend_from_slice(&d);
        dirty.msgs.push(at..at + d.len());
        dirty.want.push(if spoil { None } else { Some(o) });
    }
    (clean, dirty)
}

/// How much to measure.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Messages in each stream (~150 KB: in L2).
    pub len: usize,
    /// The fraction of the second stream's messages made bad.
    pub bad: f64,
    /// Messages per sample.
    pub per_batch: u32,
    pub warmup: usize,
    pub rounds: usize,
    pub samples_per_round: usize,
}

/// The variants, in the order of the distributions: the three forms on the clean stream, then
/// `Result` and `Option` on the one with bad messages.
pub const RESULT_CLEAN: usize = 0;
pub const OPTION_CLEAN: usize = 1;
pub const PANIC_CLEAN: usize = 2;
pub const RESULT_DIRTY: usize = 3;
pub const OPTION_DIRTY: usize = 4;

/// The variants' names, with the dirty stream's share of bad messages.
pub fn names(bad: f64) -> [String; 5] {
    let pct = 100.0 * bad;
    [
        "Result<Order, Bad>, none bad".to_string(),
        "Option<Order>, none bad".to_string(),
        "assert!/panic!, none bad".to_string(),
        format!("Result<Order, Bad>, {pct} % bad"),
        format!("Option<Order>, {pct} % bad"),
    ]
}

/// What a measurement returns: the distributions, each variant's tally and per-round medians,
/// in the order of [`names`].
#[derive(Debug)]
pub struct Measured {
    pub dists: Vec<Dist>,
    pub tallies: Vec<Tally>,
    pub rounds: Vec<Vec<f64>>,
}

/// A batch through one form: the bytes, the batch's message ranges, the tally to fold into.
type Check = fn(&[u8], &[Range<usize>], &mut Tally);

/// One form on one stream: every sample is the next batch, its time divided by its messages;
/// the round's median is kept (the warm-up rounds' are not).
fn variant<'a>(
    name: &str,
    s: &'a Stream,
    plan: Plan,
    out: &'a Cell<Tally>,
    medians: &'a RefCell<Vec<f64>>,
    check: Check,
) -> Variant<'a> {
    let per = plan.per_batch as usize;
    let batches = s.msgs.len() / per;
    let (mut k, mut calls) = (0usize, 0usize);
    let mut round = Vec::with_capacity(plan.samples_per_round);
    Variant::new(name, move |r: &mut Recorder| {
        let cal = r.tsc();
        let mut t = out.get();
        round.clear();
        for _ in 0..plan.samples_per_round {
            let msgs = &s.msgs[k * per..(k + 1) * per];
            k = (k + 1) % batches;
            let t0 = tsc();
            check(&s.bytes, msgs, &mut t);
            let t1 = tsc();
            let ticks = t1.wrapping_sub(t0);
            r.record_ticks(ticks, plan.per_batch);
            round.push(cal.ns(ticks.saturating_sub(cal.overhead_ticks)) / per as f64);
        }
        out.set(t);
        calls += 1;
        if calls > plan.warmup
            && let Some(sp) = Spread::of(&round)
        {
            medians.borrow_mut().push(sp.median);
        }
    })
}

/// Runs the five variants, interleaved. `clean` must hold no bad message (the panicking form
/// runs over it), and both streams a whole number of batches.
pub fn measure(tsc: Tsc, plan: Plan, clean: &Stream, dirty: &Stream) -> Measured {
    let names = names(plan.bad);
    let tallies: Vec<Cell<Tally>> = (0..5).map(|_| Cell::new(Tally::default())).collect();
    let medians: Vec<RefCell<Vec<f64>>> = (0..5).map(|_| RefCell::new(Vec::new())).collect();
    let set: [(&Stream, Check); 5] = [
        (clean, batch_result),
        (clean, batch_option),
        (clean, batch_panic),
        (dirty, batch_result),
        (dirty, batch_option),
    ];
    let mut vs: Vec<Variant<'_>> = set
        .iter()
        .enumerate()
        .map(|(i, &(s, c))| variant(&names[i], s, plan, &tallies[i], &medians[i], c))
        .collect();
    let dists = interleave(tsc, plan.warmup, plan.rounds, &mut vs);
    drop(vs);
    Measured {
        dists,
        tallies: tallies.iter().map(Cell::get).collect(),
        rounds: medians.into_iter().map(RefCell::into_inner).collect(),
    }
}

/// Checks each variant's tally against its stream's generated orders; the error names the one
/// that differs.
fn check(m: &Measured, plan: Plan, clean: &Tally, dirty: &Tally) -> anyhow::Result<()> {
    let names = names(plan.bad);
    for (i, t) in m.tallies.iter().enumerate() {
        let want = if i < RESULT_DIRTY { clean } else { dirty };
        if t != want {
            anyhow::bail!(
                "panic/Result/Option variants disagree: {} tallied {t:?}, its stream's \
                 generated orders give {want:?}",
                names[i]
            );
        }
    }
    Ok(())
}

/// Before any timing: the clean stream has no bad message (else the panicking form would
/// panic mid-run) and the dirty one exactly those made bad, by the `Result` form's own count.
fn precheck(clean: &Stream, dirty: &Stream) -> anyhow::Result<()> {
    let errors = |s: &Stream| {
        s.msgs
            .iter()
            .filter(|r| check_result(&s.bytes[(*r).clone()]).is_err())
            .count()
    };
    let (c, d) = (errors(clean), errors(dirty));
    if c != 0 || d != dirty.bad() {
        anyhow::bail!(
            "the streams are not what they should be: {c} bad in the clean one (want 0), {d} in \
             the other (want {})",
            dirty.bad()
        );
    }
    Ok(())
}

/// The study's column: it measured `noexcept` through vector growth only, not exceptions.
const STUDY: &str = "not measured (C++ exceptions; its noexcept row is the moves experiment)";

/// The reason for the dirty-vs-clean row: the pair's, then what each bad message costs.
pub fn errors_reason(dirty: Fig, clean: Fig, bad: usize, len: usize) -> String {
    let mut s = pair_reason(dirty, clean, None);
    if bad > 0 {
        let per_bad = (dirty.p50 - clean.p50) * len as f64 / bad as f64;
        s.push_str(&format!(
            "; {per_bad:+.1} ns a bad message if the difference is all theirs ({bad} bad in \
             {len})"
        ));
    } else {
        s.push_str("; no message was bad, so the streams differ in nothing");
    }
    s
}

pub fn run(ctx: &Ctx) -> anyhow::Result<Outcome> {
    ctx.pin()?;
    let plan = Plan {
        len: 4096,
        bad: 0.01,
        per_batch: 256,
        warmup: 2,
        rounds: ctx.pick(40, 400),
        samples_per_round: ctx.pick(25, 100),
    };
    ctx.progress(&format!(
        "5 variants × {} samples of {} messages, interleaved",
        plan.rounds * plan.samples_per_round,
        plan.per_batch
    ));
    let (clean, dirty) = streams(plan.len, plan.bad, 0xBAD_0001);
    precheck(&clean, &dirty)?;
    let m = measure(ctx.tsc, plan, &clean, &dirty);
    let batches = (plan.warmup + plan.rounds) * plan.samples_per_round;
    let per = plan.per_batch as usize;
    let (want_clean, want_dirty) = (clean.reference(batches, per), dirty.reference(batches, per));
    check(&m, plan, &want_clean, &want_dirty)?;
    let mut o = Outcome::new(
        "panics",
        "Validating a message: Result vs assert!/panic! vs Option",
        Level::Code,
    );
    o.dists = m.dists;
    let fig = |i: usize| Fig {
        p50: o.dists[i].p50_ns,
        rounds: Spread::of(&m.rounds[i]),
    };
    let pct = 100.0 * plan.bad;
    let bad = dirty.bad();
    o.comparisons = vec![
        pair_row(
            "Result vs assert!/panic!, none bad",
            plan.per_batch,
            STUDY,
            fig(RESULT_CLEAN),
            fig(PANIC_CLEAN),
            None,
        ),
        pair_row(
            "Option vs assert!/panic!, none bad",
            plan.per_batch,
            STUDY,
            fig(OPTION_CLEAN),
            fig(PANIC_CLEAN),
            None,
        ),
        pair_row(
            &format!("Result vs Option, {pct} % bad"),
            plan.per_batch,
            STUDY,
            fig(RESULT_DIRTY),
            fig(OPTION_DIRTY),
            None,
        ),
        Comparison::judged(
            format!(
                "Result, {pct} % bad vs none bad, per message (p50 of {}-message batch means)",
                plan.per_batch
            ),
            format!(
                "{} vs {}",
                crate::report::ns(fig(RESULT_DIRTY).p50),
                crate::report::ns(fig(RESULT_CLEAN).p50)
            ),
            fig(RESULT_DIRTY).p50 / fig(RESULT_CLEAN).p50,
            STUDY,
            None,
            &errors_reason(fig(RESULT_DIRTY), fig(RESULT_CLEAN), bad, plan.len),
        ),
    ];
    let sizes = format!(
        "`Order` is {} bytes, `Result<Order, Bad>` {}, `Option<Order>` {} (`Bad` {})",
        size_of::<Order>(),
        size_of::<Result<Order, Bad>>(),
        size_of::<Option<Order>>(),
        size_of::<Bad>()
    );
    let strategy = if cfg!(panic = "unwind") {
        "unwind (the workspace sets no `panic = \"abort\"`): a panic runs the landing pads on its way up"
    } else {
        "abort: a panic ends the process"
    };
    o.notes = vec![
        format!(
            "Two streams of the same {} order messages (Add Order 80 %, Trade 20 %, ~150 KB): \
             one with none bad, one with {bad} made bad ({:.2} %, at random places: a byte short, side 'X' or no \
             shares, in turn). Each sample is one batch of {} messages, and the percentiles are \
             those of a batch's per-message mean.",
            plan.len,
            100.0 * bad as f64 / plan.len as f64,
            plan.per_batch
        ),
        format!(
            "Each check is a call (`#[inline(never)]`, like a call into the wire crate without \
             LTO), so what it returns crosses the call: {sizes}. The panic strategy of this \
             build: {strategy}. The panicking form runs only on the clean stream, checked before \
             any timing to hold no bad message."
        ),
        format!(
            "Every variant's tally matched its stream's generated orders: checksum {:#x} with \
             none bad ({} orders), {:#x} with {bad} bad ({} orders, {} bad counted), checked \
             every run.",
            want_clean.checksum(),
            want_clean.orders,
            want_dirty.checksum(),
            want_dirty.orders,
            want_dirty.bad
        ),
        "Read from the code, not measured (rustc 1.95, `objdump -d`): none of the three \
         checks calls anything on its way to a valid order; the panicking one keeps five \
         calls to the panic machinery off that path, but its valid path also stores the type \
         byte, the expected length and the side byte to the stack, where the panic messages' \
         `format_args!` would read them: the cold path's price on the hot one."
            .to_string(),
        "C++'s counterpart would be exceptions, which the study did not time; its noexcept \
         figure is about vector growth (the moves experiment here). Rust has no exceptions to \
         compare: a panic is for bugs, and an error is a value."
            .to_string(),
    ];
    o.trader = "Result, counted: `Desk::on_message` (crates/trader-core/src/desk.rs) matches \
        `itch::parse(block)`, which returns `Result<Message>` (crates/wire/src/itch/mod.rs), and counts \
        `Err(_)` in `counters.malformed_messages`; a packet whose header is short is \
        `moldudp64::Packet::new_checked`'s `Err`, counted in `malformed_packets`, and bad \
        framing (the `Messages` iterator's `Err` items, crates/wire/src/moldudp64.rs) in \
        `malformed_framing` (`Sequencer::on_packet`, crates/trader-core/src/sequencer.rs). The error is `wire::Error`, small and \
        `Copy` so the loop counts it without allocating (crates/wire/src/error.rs). The wire crate \
        never panics on input (its doc, crates/wire/src/lib.rs; the proptests in crates/wire/tests/prop.rs), \
        and no `Option` stands in for an error on that path."
        .to_string();
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn add(side: u8, shares: u32) -> Vec<u8> {
        let mut m = vec![0u8; ADD_LEN];
        m[0] = ADD;
        m[ORDER_REF + 7] = 5;
        m[SIDE] = side;
        m[SHARES..SHARES + 4].copy_from_slice(&shares.to_be_bytes());
        m[STOCK..STOCK + 8].copy_from_slice(b"AAPL    ");
        m[PRICE..PRICE + 4].copy_from_slice(&1_234_567u32.to_be_bytes());
        m
    }

    #[test]
    fn the_three_forms_agree_on_good_and_bad_messages() {
        let good = add(b'S', 100);
        let want = Order {
            order_ref: 5,
            stock: u64::from_be_bytes(*b"AAPL    "),
            price: 1_234_567,
            shares: 100,
            side: Side::Sell,
            trade: false,
        };
        assert_eq!(check_result(&good), Ok(want));
        assert_eq!(check_option(&good), Some(want));
        assert_eq!(check_or_panic(&good), want);
        let cases: [(Vec<u8>, Bad); 5] = [
            (vec![], Bad::Empty),
            (vec![b'Z'; ADD_LEN], Bad::Kind(b'Z')),
            (
                good[..ADD_LEN - 1].to_vec(),
                Bad::Length { kind: ADD, got: 35 },
            ),
            (add(b'X', 100), Bad::Side(b'X')),
            (add(b'B', 0), Bad::NoShares),
        ];
        for (m, why) in cases {
            assert_eq!(check_result(&m), Err(why));
            assert_eq!(check_option(&m), None);
            assert!(
                std::panic::catch_unwind(|| check_or_panic(&m)).is_err(),
                "{why:?}"
            );
        }
    }

    #[test]
    fn the_streams_differ_only_in_the_messages_made_bad() {
        let (clean, dirty) = streams(2000, 0.05, 1);
        assert!(clean.want.iter().all(Option::is_some));
        assert_eq!(dirty.bad(), 100);
        precheck(&clean, &dirty).unwrap();
        for i in 0..2000 {
            let (c, d) = (
                &clean.bytes[clean.msgs[i].clone()],
                &dirty.bytes[dirty.msgs[i].clone()],
            );
            assert_eq!(check_result(c).ok(), clean.want[i]);
            assert_eq!(check_result(d).ok(), dirty.want[i]);
            if dirty.want[i].is_some() {
                assert_eq!(c, d);
            }
        }
        let (none, _) = streams(100, 0.0, 1);
        assert_eq!(none.bad(), 0);
    }

    #[test]
    fn a_run_tallies_what_the_streams_hold() {
        let plan = Plan {
            len: 200,
            bad: 0.05,
            per_batch: 50,
            warmup: 1,
            rounds: 3,
            samples_per_round: 2,
        };
        let (clean, dirty) = streams(plan.len, plan.bad, 7);
        let m = measure(
            Tsc::calibrate(Duration::from_millis(5)),
            plan,
            &clean,
            &dirty,
        );
        assert_eq!(m.dists.len(), 5);
        assert!(
            m.dists
                .iter()
                .all(|d| d.count == 6 && d.ops_per_sample == 50)
        );
        assert!(m.rounds.iter().all(|r| r.len() == 3));
        let (c, d) = (clean.reference(8, 50), dirty.reference(8, 50));
        check(&m, plan, &c, &d).unwrap();
        // 8 batches of 50 = the 200-message stream twice.
        assert_eq!(d.bad, 2 * dirty.bad() as u64);
        assert_eq!(c.orders, 400);
        assert!(check(&m, plan, &d, &d).is_err());
    }

    #[test]
    fn the_errors_reason_follows_the_figures() {
        let fig = |p50, r: &[f64]| Fig {
            p50,
            rounds: Spread::of(r),
        };
        // 3.0 vs 2.0 ns over 4096 messages, 41 bad: 1 ns a message, ~100 ns each bad one.
        let a = errors_reason(fig(3.0, &[2.9, 3.1]), fig(2.0, &[1.9, 2.1]), 41, 4096);
        assert!(a.contains("+99.9 ns a bad message if"), "{a}");
        assert!(a.contains("(41 bad in 4096)"), "{a}");
        assert!(a.contains("keep apart"), "{a}");
        let b = errors_reason(fig(2.0, &[1.9, 2.1]), fig(2.0, &[1.9, 2.1]), 0, 4096);
        assert!(b.contains("no message was bad"), "{b}");
        assert!(b.contains("overlap"), "{b}");
    }

    #[test]
    fn the_experiment_reports_its_rows() {
        let ctx = crate::code::test_ctx();
        let o = run(&ctx).unwrap();
        assert_eq!(o.dists.len(), 5);
        assert_eq!(o.comparisons.len(), 4);
        assert!(o.comparisons.iter().all(|c| c.our_ratio.is_some()));
        assert!(o.notes.iter().any(|n| n.contains("tally matched")));
        assert!(o.trader.contains("crates/trader-core/src/desk.rs"));
    }
}
