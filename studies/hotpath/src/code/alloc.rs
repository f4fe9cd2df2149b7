//! Allocation per operation: an order-sized (64-byte) object made and freed per operation, with
//! a window of live orders (each operation frees a random old one and makes a new one), through
//! glibc's `malloc` (`Box::new`, the global allocator here, and `System` called directly),
//! `mimalloc` and jemalloc (called directly through `GlobalAlloc`, never installed as the
//! process's allocator, so all of them run interleaved in one process), a slab pool (`slab`)
//! and an arena (`bumpalo`, reset per round).
//!
//! Samples are single operations (`ops = 1`): the study's point is the tail.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::ptr::NonNull;

use bumpalo::Bump;
use mimalloc::MiMalloc;
use slab::Slab;
use tikv_jemallocator::Jemalloc;

use super::Rng;
use crate::Ctx;
use crate::harness::{Dist, Recorder, Tsc, Variant, interleave, tsc};
use crate::report::{Comparison, Level, Outcome, ns};
use crate::verdict::Standing;

/// An order as a trading system keeps one: 64 bytes, one cache line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    pub id: u64,
    pub price: u64,
    pub ts: u64,
    pub account: u64,
    pub qty: u32,
    pub venue: u32,
    pub seq: u32,
    pub side: u8,
    pub flags: u8,
    pub client: [u8; 16],
}

const _: () = assert!(std::mem::size_of::<Order>() == 64);

impl Order {
    #[inline(always)]
    fn new(id: u64) -> Order {
        Order {
            id,
            price: 1_000_000 + (id.wrapping_mul(7919) % 20_000),
            ts: id.wrapping_mul(1_000),
            account: id >> 3,
            qty: 1 + (id % 997) as u32,
            venue: (id % 5) as u32,
            seq: id as u32,
            side: (id & 1) as u8,
            flags: 0,
            client: [(id & 0xff) as u8; 16],
        }
    }

    /// What a freed order contributes to a variant's checksum.
    #[inline(always)]
    fn fold(&self) -> u64 {
        self.id
            .wrapping_mul(31)
            .wrapping_add(u64::from(self.qty))
            .wrapping_add(u64::from(self.client[15]))
    }
}

/// An [`Order`] on the heap of a given [`GlobalAlloc`], freed there when dropped: `Box` for an
/// allocator that isn't the global one.
#[derive(Debug)]
pub struct RawBox<'a, A: GlobalAlloc> {
    ptr: NonNull<Order>,
    alloc: &'a A,
}

const LAYOUT: Layout = Layout::new::<Order>();

impl<'a, A: GlobalAlloc> RawBox<'a, A> {
    #[expect(
        unsafe_code,
        reason = "GlobalAlloc::alloc is unsafe; the pointer is checked and written once"
    )]
    #[inline(always)]
    pub fn new(alloc: &'a A, order: Order) -> Self {
        // SAFETY: LAYOUT has a non-zero size (64 bytes).
        let p = unsafe { alloc.alloc(LAYOUT) }.cast::<Order>();
        let Some(ptr) = NonNull::new(p) else {
            std::alloc::handle_alloc_error(LAYOUT)
        };
        // SAFETY: `ptr` was just allocated with Order's layout: valid for a write, aligned.
        unsafe { ptr.as_ptr().write(order) };
        RawBox { ptr, alloc }
    }

    #[expect(
        unsafe_code,
        reason = "reads the Order this box allocated and initialised"
    )]
    #[inline(always)]
    pub fn get(&self) -> &Order {
        // SAFETY: `ptr` points to the Order written in `new`, alive until `drop`; the shared
        // borrow of `self` keeps it from being freed meanwhile.
        unsafe { self.ptr.as_ref() }
    }
}

impl<A: GlobalAlloc> std::ops::Deref for RawBox<'_, A> {
    type Target = Order;
    #[inline(always)]
    fn deref(&self) -> &Order {
        self.get()
    }
}

impl<A: GlobalAlloc> Drop for RawBox<'_, A> {
    #[expect(
        unsafe_code,
        reason = "frees the block this box allocated, with the same allocator and layout"
    )]
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `self.alloc.alloc(LAYOUT)` and is freed once, here (Order is
        // Copy: nothing to drop in place).
        unsafe { self.alloc.dealloc(self.ptr.as_ptr().cast(), LAYOUT) }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Live orders.
    pub window: usize,
    pub warmup: usize,
    pub rounds: usize,
    /// Operations per variant per round (also the arena's batch between resets).
    pub ops_per_round: usize,
}

pub const BOX: &str = "Box::new (global allocator: glibc malloc)";
pub const SYSTEM: &str = "glibc malloc (System via GlobalAlloc)";
pub const MIMALLOC: &str = "mimalloc (via GlobalAlloc)";
pub const JEMALLOC: &str = "jemalloc (via GlobalAlloc)";
pub const SLAB: &str = "slab pool (insert + remove)";
pub const ARENA: &str = "bumpalo arena (alloc; reset per round)";
pub const ARENA_RESET: &str = "bumpalo reset + carrying the live window over, per round";

/// Which window slot each operation frees, pre-generated.
const SLOTS: usize = 1 << 16;

#[derive(Debug)]
pub struct Measured {
    pub dists: Vec<Dist>,
    /// Each variant's checksum of the orders it freed (so also of what its window held), in the
    /// order of the dists (the arena's resets, last, have none).
    pub sums: Vec<(String, u64)>,
}

/// What every variant keeps: the next order id, the position in the slot sequence, the checksum.
#[derive(Debug)]
struct Cursor<'a> {
    slots: &'a [u32],
    k: usize,
    next_id: u64,
    out: &'a Cell<u64>,
}

impl<'a> Cursor<'a> {
    fn new(slots: &'a [u32], window: usize, out: &'a Cell<u64>) -> Self {
        Cursor {
            slots,
            k: 0,
            next_id: window as u64,
            out,
        }
    }

    /// The slot to free and the id of the order to make.
    #[inline(always)]
    fn next(&mut self) -> (usize, u64) {
        let j = self.slots[self.k & (SLOTS - 1)] as usize;
        self.k += 1;
        let id = self.next_id;
        self.next_id += 1;
        (j, id)
    }

    fn add(&self, v: u64) {
        self.out.set(self.out.get().wrapping_add(v));
    }
}

/// Operations per sample in the batched variants: their p50 is the steady per-operation cost,
/// free of the counter's step (`Tsc::step_ns`, measured each run: see the notes); the
/// single-operation samples give the tail.
pub const BATCH: u32 = 100;

/// A distribution's name in its batched form.
pub fn batched(name: &str) -> String {
    format!("{name}, {BATCH}-op batch mean")
}

/// Runs `op` `plan.ops_per_round` times, in samples of `batch` operations, and adds what it
/// returned (the freed orders' folds) to the cursor's checksum.
#[inline(always)]
fn round(
    r: &mut Recorder,
    plan: Plan,
    batch: u32,
    cur: &mut Cursor<'_>,
    mut op: impl FnMut(usize, u64) -> u64,
) {
    let mut sum = 0u64;
    for _ in 0..plan.ops_per_round / batch as usize {
        r.time(batch, || {
            let (j, id) = cur.next();
            let v = op(j, id);
            sum = sum.wrapping_add(v);
            v
        });
    }
    cur.add(sum);
}

/// A window of `W` (boxed orders of one allocator): make the new order, then free the old one.
fn boxed_variant<'a, W: std::ops::Deref<Target = Order> + 'a>(
    name: String,
    plan: Plan,
    batch: u32,
    mut cur: Cursor<'a>,
    make: impl Fn(Order) -> W + 'a,
) -> Variant<'a> {
    let mut win: Vec<W> = (0..plan.window as u64)
        .map(|i| make(Order::new(i)))
        .collect();
    Variant::new(name, move |r: &mut Recorder| {
        round(r, plan, batch, &mut cur, |j, id| {
            let old = std::mem::replace(&mut win[j], make(Order::new(id)));
            old.fold()
        });
    })
}

/// A window of keys into a slab: insert the new order, then remove the old one.
fn slab_variant<'a>(name: String, plan: Plan, batch: u32, mut cur: Cursor<'a>) -> Variant<'a> {
    // One spare entry: the new order goes in before the old one leaves.
    let mut slab: Slab<Order> = Slab::with_capacity(plan.window + 1);
    let mut win: Vec<usize> = (0..plan.window as u64)
        .map(|i| slab.insert(Order::new(i)))
        .collect();
    Variant::new(name, move |r: &mut Recorder| {
        round(r, plan, batch, &mut cur, |j, id| {
            let key = slab.insert(Order::new(id));
            slab.remove(std::mem::replace(&mut win[j], key)).fold()
        });
    })
}

/// A window of references into an arena, reset at each round's start after the live orders are
/// carried over (timed into `resets`, when given).
fn arena_variant<'a>(
    name: String,
    plan: Plan,
    batch: u32,
    mut cur: Cursor<'a>,
    resets: Option<&'a RefCell<Recorder>>,
) -> Variant<'a> {
    // One chunk holds a whole round (the live window carried in, and every new order), so no
    // round asks the system for memory.
    let mut bump = Bump::with_capacity(2 * (plan.window + plan.ops_per_round) * 64);
    let mut carry: Vec<Order> = (0..plan.window as u64).map(Order::new).collect();
    Variant::new(name, move |r: &mut Recorder| {
        let t0 = tsc();
        bump.reset();
        let mut win: Vec<&Order> = carry.iter().map(|o| &*bump.alloc(*o)).collect();
        let t1 = tsc();
        if let Some(rec) = resets {
            rec.borrow_mut().record_ticks(t1.wrapping_sub(t0), 1);
        }
        round(r, plan, batch, &mut cur, |j, id| {
            // Freeing is forgetting: the arena takes memory back only at the reset.
            std::mem::replace(&mut win[j], &*bump.alloc(Order::new(id))).fold()
        });
        for (c, o) in carry.iter_mut().zip(&win) {
            *c = **o;
        }
    })
}

/// The six variants' names, single-operation form.
pub const NAMES: [&str; 6] = [BOX, SYSTEM, MIMALLOC, JEMALLOC, SLAB, ARENA];

pub fn measure(tsc_cal: Tsc, plan: Plan) -> Measured {
    assert!(
        plan.ops_per_round.is_multiple_of(BATCH as usize),
        "a round is whole batches"
    );
    let mut rng = Rng::new(0xA110C);
    let slots: Vec<u32> = (0..SLOTS).map(|_| rng.below(plan.window) as u32).collect();
    let names: Vec<String> = NAMES
        .iter()
        .map(|n| n.to_string())
        .chain(NAMES.iter().map(|n| batched(n)))
        .collect();
    let sums: Vec<Cell<u64>> = names.iter().map(|_| Cell::new(0)).collect();
    let (mi, je, sys) = (MiMalloc, Jemalloc, System);
    let resets = RefCell::new(Recorder::new(tsc_cal));

    let mut vs = Vec::new();
    for (half, batch) in [(0, 1), (1, BATCH)] {
        let at = |i: usize| {
            let k = half * NAMES.len() + i;
            (
                names[k].clone(),
                plan,
                batch,
                Cursor::new(&slots, plan.window, &sums[k]),
            )
        };
        let (n, p, b, c) = at(0);
        vs.push(boxed_variant(n, p, b, c, Box::new));
        let (n, p, b, c) = at(1);
        vs.push(boxed_variant(n, p, b, c, |o| RawBox::new(&sys, o)));
        let (n, p, b, c) = at(2);
        vs.push(boxed_variant(n, p, b, c, |o| RawBox::new(&mi, o)));
        let (n, p, b, c) = at(3);
        vs.push(boxed_variant(n, p, b, c, |o| RawBox::new(&je, o)));
        let (n, p, b, c) = at(4);
        vs.push(slab_variant(n, p, b, c));
        let (n, p, b, c) = at(5);
        vs.push(arena_variant(n, p, b, c, (half == 0).then_some(&resets)));
    }
    let mut dists = interleave(tsc_cal, plan.warmup, plan.rounds, &mut vs);
    drop(vs);
    dists.push(resets.borrow().finish(ARENA_RESET));
    Measured {
        dists,
        sums: names
            .into_iter()
            .zip(&sums)
            .map(|(n, c)| (n, c.get()))
            .collect(),
    }
}

/// Which figure a comparison row takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pct {
    /// The steady cost: p50 of the batched variants.
    BatchP50,
    /// The tail of single operations.
    P999,
    P9999,
}

impl Pct {
    /// The quantile.
    pub fn q(self) -> f64 {
        match self {
            Pct::BatchP50 => 0.5,
            Pct::P999 => 0.999,
            Pct::P9999 => 0.9999,
        }
    }

    /// How the row names the figure.
    pub fn label(self) -> String {
        match self {
            Pct::BatchP50 => format!("per operation (p50 of {BATCH}-op batch means)"),
            Pct::P999 => "p99.9 of single operations".to_string(),
            Pct::P9999 => "p99.99 of single operations".to_string(),
        }
    }
}

/// An allocation row's reason: the two figures' difference, and for a tail the samples it
/// rests on. Undecided: the percentile lacks its samples (`samples`, the fewer of the two
/// variants'). Apart from the study's ratio: nothing here measures why (the study gives its
/// pool and heap no further detail), and the reason says so.
pub fn alloc_reason(
    standing: Standing,
    pct: Pct,
    slow_ns: f64,
    fast_ns: f64,
    samples: u64,
) -> String {
    let need = crate::verdict::samples_for(pct.q());
    if standing == Standing::Undecided {
        return format!("{} needs {need} samples; {samples} taken", pct.label());
    }
    let d = slow_ns - fast_ns;
    let more = if d >= 0.0 { "more" } else { "less" };
    let base = match pct {
        Pct::BatchP50 => format!(
            "{} {more} per operation than the other's {}",
            ns(d.abs()),
            ns(fast_ns)
        ),
        Pct::P999 | Pct::P9999 => format!(
            "{} {more} at the tail than the other's {}, over {samples} single operations each",
            ns(d.abs()),
            ns(fast_ns)
        ),
    };
    match standing {
        Standing::LargerHere | Standing::SmallerHere | Standing::Reversed => {
            format!("{base}; unexplained here: the study describes its pool and heap no further")
        }
        _ => base,
    }
}

fn check(m: &Measured) -> anyhow::Result<u64> {
    let (n0, s0) = &m.sums[0];
    if let Some((n, s)) = m.sums.iter().find(|(_, s)| s != s0) {
        anyhow::bail!("allocation variants disagree: {n} summed {s:#x}, {n0} summed {s0:#x}");
    }
    Ok(*s0)
}

/// One comparison row: two variants (`slow` against `fast`) at one figure.
#[derive(Debug, Clone, Copy)]
struct Row<'a> {
    /// What is compared, before the figure's label.
    what: &'a str,
    slow: &'a str,
    fast: &'a str,
    pct: Pct,
    study: &'a str,
    study_ratio: Option<f64>,
}

impl Row<'_> {
    /// The row from the distributions in `o`: the batched forms for [`Pct::BatchP50`], the
    /// single-operation forms for the tails, each figure only where its samples reach it.
    fn compare(&self, o: &Outcome) -> Comparison {
        let (slow, fast) = match self.pct {
            Pct::BatchP50 => (batched(self.slow), batched(self.fast)),
            Pct::P999 | Pct::P9999 => (self.slow.to_string(), self.fast.to_string()),
        };
        let (ds, df) = (o.dist(&slow), o.dist(&fast));
        let q = self.pct.q();
        let (s, f) = (ds.at(q).unwrap_or(f64::NAN), df.at(q).unwrap_or(f64::NAN));
        let r = s / f;
        Comparison::judged(
            format!("{}, {}", self.what, self.pct.label()),
            format!("{} vs {}", fig(s), fig(f)),
            r,
            self.study,
            self.study_ratio,
            &alloc_reason(
                crate::verdict::standing(r, self.study_ratio),
                self.pct,
                s,
                f,
                ds.count.min(df.count),
            ),
        )
    }
}

pub fn run(ctx: &Ctx) -> anyhow::Result<Outcome> {
    ctx.pin()?;
    let plan = Plan {
        window: 1000,
        warmup: 2,
        rounds: ctx.pick(20, 200),
        ops_per_round: ctx.pick(2_000, 10_000),
    };
    ctx.progress(&format!(
        "6 variants × {} operations, one and {BATCH} per sample, window of {} live orders, \
         interleaved",
        plan.rounds * plan.ops_per_round,
        plan.window
    ));
    let m = measure(ctx.tsc, plan);
    let sum = check(&m)?;
    let mut o = Outcome::new(
        "alloc",
        "Allocating an order per operation: heap, pool, arena, allocators",
        Level::Code,
    );
    o.dists = m.dists;
    o.comparisons = comparisons(&o);
    o.notes = notes(ctx, plan, sum);
    o.trader = "Nothing is allocated per packet: crates/trader-core/src/lib.rs says it and its sequencer and desk do it. \
        `Trader::on_packet` builds each `OrderRepr` (crates/wire/src/order.rs, a Copy value) on the \
        stack, keeps engine samples and fills in the fixed arrays of `Pending` (64 entries) \
        until `settle`, and tracks sequence numbers in `seen`, a `Box<[u64]>` made once in \
        `Trader::new`; `UdpSink::send` (crates/trader/src/trading/udp.rs) encodes into a stack \
        buffer, `UdpIo` receives into a `Box<[u8; 2048]>` made once, and the engine's \
        `Strategy` allocates its rings only in `Strategy::new` (crates/engine/src/strategy.rs). The \
        buffers it does keep are pools, made once, lent and given back, never freed on the path: \
        the AF_XDP path's frames (`XskTx::send` pops a TX frame from its preallocated `free` \
        Vec and completions push it back; RX frames waiting for the fill ring sit in \
        `Refill.pending`, sized for the whole RX pool so it never grows: crates/afxdp/src/xsk.rs), \
        and two in trader-core for packets kept aside: the A/B arbitration's `Lines.pool` \
        (crates/trader-core/src/lines.rs: `WAIT_MAX` = 64 buffers of `HOLD_MAX` = 2048 B made in \
        `Lines::new`; `hold` pops one for a packet waiting for the other line, `recycle` pushes \
        it back) and the feed gate's `Holding` (crates/trader-core/src/gate.rs: `HELD` = 4 slots, each \
        a 2048-B `Vec` made in `Holding::new`, lent by `take` and returned by `give_back` \
        while a sequence jump waits to be confirmed). A packet over 2048 B is refused, not \
        held, so no pooled buffer grows. \
        Orders themselves are never heap objects, so the trader needs no order pool or arena, \
        and its global allocator (glibc: no #[global_allocator] anywhere) serves setup and exit."
        .to_string();
    Ok(o)
}

/// The rows against the study: the heap vs the pool (steady cost and tails), vs the arena,
/// and glibc vs the other two allocators.
fn comparisons(o: &Outcome) -> Vec<Comparison> {
    [
        Row {
            what: "glibc new/free vs slab pool",
            slow: BOX,
            fast: SLAB,
            pct: Pct::BatchP50,
            study: "object pool 3.7× faster than new/delete",
            study_ratio: Some(3.7),
        },
        Row {
            what: "glibc new/free vs slab pool",
            slow: BOX,
            fast: SLAB,
            pct: Pct::P999,
            study: "the heap's tail stays higher; the pool's advantage shows most at p99.9",
            study_ratio: None,
        },
        Row {
            what: "glibc new/free vs slab pool",
            slow: BOX,
            fast: SLAB,
            pct: Pct::P9999,
            study: "not stated",
            study_ratio: None,
        },
        Row {
            what: "glibc new/free vs bumpalo arena",
            slow: BOX,
            fast: ARENA,
            pct: Pct::BatchP50,
            study: "not measured",
            study_ratio: None,
        },
        Row {
            what: "glibc vs mimalloc (same calls)",
            slow: SYSTEM,
            fast: MIMALLOC,
            pct: Pct::BatchP50,
            study: "not measured",
            study_ratio: None,
        },
        Row {
            what: "glibc vs jemalloc (same calls)",
            slow: SYSTEM,
            fast: JEMALLOC,
            pct: Pct::BatchP50,
            study: "not measured",
            study_ratio: None,
        },
        Row {
            what: "glibc vs mimalloc (same calls)",
            slow: SYSTEM,
            fast: MIMALLOC,
            pct: Pct::P999,
            study: "not measured",
            study_ratio: None,
        },
        Row {
            what: "glibc vs jemalloc (same calls)",
            slow: SYSTEM,
            fast: JEMALLOC,
            pct: Pct::P999,
            study: "not measured",
            study_ratio: None,
        },
    ]
    .iter()
    .map(|r| r.compare(o))
    .collect()
}

/// The notes on method: what an operation is, the timer's resolution, the allocators' free
/// lists and how they are called, the arena's reset, the study's pool, and the checksum `sum`.
fn notes(ctx: &Ctx, plan: Plan, sum: u64) -> Vec<String> {
    vec![
        format!(
            "An operation: make a new 64-byte order, put it in a random slot of a window of {} \
             live orders, free the order it replaces (and read it, for the checksum). The slot \
             sequence is pre-generated and the same for every variant. Each variant runs twice, \
             interleaved with the rest: one operation per sample (the tails: p99.9, p99.99, \
             max) and {BATCH} per sample (the steady cost: a batch mean's p50).",
            plan.window
        ),
        format!(
            "The timer's own cost ({}) is subtracted from every sample, and the smallest step \
             the counter was seen to advance by in this run is {}, so a single operation's time \
             is known only to within that step: a single-operation p50 near it is coarse, tails \
             far above it are not.",
            ns(ctx.tsc.overhead_ns()),
            ns(ctx.tsc.step_ns())
        ),
        "Every allocator here keeps per-size free lists that are LIFO (glibc's tcache, \
         mimalloc's page free lists, jemalloc's tcache bins), so each new order reuses the block \
         freed one operation before; the random choice of which order dies keeps the live set \
         scattered over the heap, as a real book's is, instead of a stack."
            .to_string(),
        "mimalloc and jemalloc are called directly through GlobalAlloc (`MiMalloc.alloc`, \
         `Jemalloc.alloc`), not installed as the global allocator, so all of them run \
         interleaved in one process on the same sequence; `Box::new` goes to glibc because this \
         binary installs no #[global_allocator], and `System` via GlobalAlloc checks that the RawBox \
         wrapper adds nothing. jemalloc's symbols are prefixed (tikv-jemalloc-sys's default), \
         so it doesn't replace malloc."
            .to_string(),
        format!(
            "The arena's `free` is forgetting the reference; memory comes back only at the \
             reset, once per round of {} operations, which also copies the {} live orders into \
             the fresh arena: that work is timed apart ({ARENA_RESET}), not in the per-op \
             figures. An arena suits scratch that dies together (a packet's), not orders that \
             live arbitrarily long.",
            plan.ops_per_round, plan.window
        ),
        "The study's 3.7× compares a pool to new/delete; in Rust, `slab` is that pool (a Vec \
         of entries with a free list, no system call or lock). No cache-miss or instruction \
         counts: this guest exposes no hardware PMU."
            .to_string(),
        format!("All twelve variants freed the same orders (checksum {sum:#x})."),
    ]
}

/// A figure as the rows print it: `–` where it is missing (a percentile without its samples).
fn fig(v: f64) -> String {
    if v.is_nan() { "–".to_string() } else { ns(v) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_raw_box_holds_its_order_in_every_allocator() {
        let o = Order::new(42);
        assert_eq!(*RawBox::new(&System, o).get(), o);
        assert_eq!(*RawBox::new(&MiMalloc, o).get(), o);
        assert_eq!(*RawBox::new(&Jemalloc, o).get(), o);
    }

    #[test]
    fn every_variant_frees_the_same_orders() {
        let plan = Plan {
            window: 50,
            warmup: 1,
            rounds: 3,
            ops_per_round: 200,
        };
        let m = measure(Tsc::calibrate(Duration::from_millis(5)), plan);
        assert_eq!(m.dists.len(), 13);
        for d in &m.dists[..6] {
            assert_eq!((d.count, d.ops_per_sample), (600, 1), "{}", d.name);
        }
        for d in &m.dists[6..12] {
            assert_eq!((d.count, d.ops_per_sample), (6, BATCH), "{}", d.name);
        }
        // The single-operation arena's resets, in every round, the warm-up's too.
        assert_eq!(m.dists[12].count, 4);
        assert_eq!(m.sums.len(), 12);
        let sum = check(&m).unwrap();

        // The same operations on a plain Vec of orders.
        let mut rng = Rng::new(0xA110C);
        let slots: Vec<usize> = (0..SLOTS).map(|_| rng.below(50)).collect();
        let mut win: Vec<Order> = (0..50).map(Order::new).collect();
        let mut want = 0u64;
        for (k, &j) in slots.iter().enumerate().take(800) {
            let id = 50 + k as u64;
            let old = std::mem::replace(&mut win[j], Order::new(id));
            want = want.wrapping_add(old.fold());
        }
        assert_eq!(sum, want);
    }

    #[test]
    fn the_alloc_reason_follows_the_data() {
        use crate::verdict::standing;
        let r = alloc_reason(standing(3.5, Some(3.7)), Pct::BatchP50, 35.0, 10.0, 400);
        assert_eq!(r, "25.0 ns more per operation than the other's 10.0 ns");
        let r = alloc_reason(standing(1.5, Some(3.7)), Pct::BatchP50, 15.0, 10.0, 400);
        assert!(
            r.starts_with("5.00 ns more") && r.contains("unexplained here"),
            "{r}"
        );
        let r = alloc_reason(standing(2.0, None), Pct::P999, 200.0, 100.0, 40_000);
        assert_eq!(
            r,
            "100.0 ns more at the tail than the other's 100.0 ns, over 40000 single operations \
             each"
        );
        let r = alloc_reason(standing(f64::NAN, None), Pct::P9999, f64::NAN, 1.0, 40_000);
        assert_eq!(
            r,
            "p99.99 of single operations needs 100000 samples; 40000 taken"
        );
    }

    #[test]
    fn the_experiment_reports_its_rows() {
        // The shared small-size context (single-threaded: its other CPU is unused).
        let ctx = crate::code::test_ctx();
        let o = run(&ctx).unwrap();
        assert_eq!(o.dists.len(), 13);
        assert_eq!(o.comparisons.len(), 8);
        assert!(o.trader.contains("crates/trader-core/src/lib.rs"));
        assert!(
            o.trader.contains("crates/trader-core/src/lines.rs") && o.trader.contains("gate.rs")
        );
    }
}
