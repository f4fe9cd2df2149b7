//! The counted workloads: each runs one experiment variant's operation `ops` times, untimed,
//! and returns what it computed.
//!
//! Each calls the experiment's own kernel where it is a function (`layout::risk_*`,
//! `hotcold::scan_*`, `chase::walk`, `typetest::on_*`, dispatch's handler types); where the
//! experiment's loop is a closure inside its `measure` (dispatch's call sites, typetest's walk
//! over the stream), the loop here is a faithful copy of it: the same data from the same seed,
//! the same per-operation work, every result through `black_box` as `Recorder::time` does. The
//! loops are `#[inline(never)]` functions, so llvm-mca can read each one from the binary.

use std::any::Any;
use std::hint::black_box;

use super::{Ran, lines_touched};
use crate::Size;
use crate::chase;
use crate::code::dispatch::{
    BestBid, Ema, FEED_LEN, FEED_SEED, Feed, Handler, Notional, OnTick, Volume,
};
use crate::code::typetest::{
    self, AddOrder, Flat, Msg, OrderCancel, OrderDelete, OrderExecuted, Tally, Trade, messages,
};
use crate::code::{hotcold, layout};

/// Runs `experiment`/`variant` `ops` times at `size`'s working sets.
pub fn run(experiment: &str, variant: &str, ops: u64, size: Size) -> anyhow::Result<Ran> {
    super::workload(experiment, variant)?;
    let small = size == Size::Small;
    let mut ran = Ran {
        experiment: experiment.to_string(),
        variant: variant.to_string(),
        label: String::new(),
        unit: String::new(),
        ops,
        elements: 1,
        result: String::new(),
        detail: String::new(),
        lines_model: None,
        kernels: Vec::new(),
        via: None,
    };
    match experiment {
        "dispatch" => dispatch(variant, ops, &mut ran),
        "typetest" => type_test(variant, ops, &mut ran),
        "memory" => memory(variant, ops, small, &mut ran)?,
        "hotcold" => hot_cold(variant, ops, small, &mut ran),
        "aos-soa" => aos_soa(variant, ops, small, &mut ran),
        "simd" => simd(variant, ops, small, &mut ran),
        _ => unreachable!("workload() knows only these experiments"),
    }
    Ok(ran)
}

/// This module's path, for the kernels' names.
const HERE: &str = "hotpath::counts::work";

fn kernel(name: &str) -> Vec<String> {
    vec![format!("{HERE}::{name}")]
}

// ---- dispatch ----

/// The dispatch experiment's own feed: the same ticks and call-site selectors.
fn feed() -> Feed {
    Feed::new(FEED_SEED)
}

/// dispatch.rs's per-call loop (its `variant`'s batch): the next tick, one call, the result
/// summed and through `black_box`.
#[inline(always)]
fn drive(f: &Feed, n: u64, mut call: impl FnMut(usize, u32, u32) -> u64) -> u64 {
    let mut sum = 0u64;
    for k in 0..n as usize {
        let i = k & (FEED_LEN - 1);
        let v = call(usize::from(f.sel[i]) & 3, f.px[i], f.qty[i]);
        sum = sum.wrapping_add(v);
        black_box(v);
    }
    sum
}

#[inline(never)]
fn dispatch_generic(f: &Feed, h: &mut Notional, n: u64) -> u64 {
    let h = black_box(h);
    drive(f, n, |_, p, q| h.on_tick(p, q))
}

#[inline(never)]
fn dispatch_enum(f: &Feed, h: &mut Handler, n: u64) -> u64 {
    let h = black_box(h);
    drive(f, n, |_, p, q| h.on_tick(p, q))
}

#[inline(never)]
fn dispatch_dyn(f: &Feed, h: &mut dyn OnTick, n: u64) -> u64 {
    let h = black_box(h);
    drive(f, n, |_, p, q| h.on_tick(p, q))
}

#[inline(never)]
fn dispatch_box_fn(f: &Feed, b: &mut Box<dyn FnMut(u32, u32) -> u64>, n: u64) -> u64 {
    let b = black_box(b);
    drive(f, n, |_, p, q| b(p, q))
}

#[inline(never)]
fn dispatch_enum_4(f: &Feed, hs: &mut [Handler; 4], n: u64) -> u64 {
    let hs = black_box(hs);
    drive(f, n, |k, p, q| hs[k].on_tick(p, q))
}

#[inline(never)]
fn dispatch_dyn_4(f: &Feed, hs: &mut [Box<dyn OnTick>], n: u64) -> u64 {
    let hs = black_box(hs);
    drive(f, n, |k, p, q| hs[k].on_tick(p, q))
}

fn dispatch(variant: &str, n: u64, ran: &mut Ran) {
    use crate::code::dispatch as d;
    let f = feed();
    let (label, sum, k) = match variant {
        "generic" => (
            d::GENERIC,
            dispatch_generic(&f, &mut Notional::default(), n),
            "dispatch_generic",
        ),
        "enum" => (
            d::ENUM,
            dispatch_enum(&f, &mut Handler::Notional(Notional::default()), n),
            "dispatch_enum",
        ),
        "dyn" => (
            d::DYN,
            dispatch_dyn(&f, &mut Notional::default(), n),
            "dispatch_dyn",
        ),
        "box-fn" => {
            let mut h = Notional::default();
            let mut b: Box<dyn FnMut(u32, u32) -> u64> = Box::new(move |p, q| h.on_tick(p, q));
            (d::BOX_FN, dispatch_box_fn(&f, &mut b, n), "dispatch_box_fn")
        }
        "enum-4" => {
            let mut hs = [
                Handler::Notional(Notional::default()),
                Handler::BestBid(BestBid::default()),
                Handler::Ema(Ema::default()),
                Handler::Volume(Volume::default()),
            ];
            (
                d::ENUM_MEGA,
                dispatch_enum_4(&f, &mut hs, n),
                "dispatch_enum_4",
            )
        }
        _ => {
            let mut hs: Vec<Box<dyn OnTick>> = vec![
                Box::new(Notional::default()),
                Box::new(BestBid::default()),
                Box::new(Ema::default()),
                Box::new(Volume::default()),
            ];
            (
                d::DYN_MEGA,
                dispatch_dyn_4(&f, &mut hs, n),
                "dispatch_dyn_4",
            )
        }
    };
    ran.label = label.to_string();
    ran.unit = "call".to_string();
    ran.result = format!("{sum:#x}");
    ran.kernels = kernel(k);
}

// ---- typetest ----

fn any(m: Msg) -> Box<dyn Any> {
    match m {
        Msg::Add(m) => Box::new(m),
        Msg::Delete(m) => Box::new(m),
        Msg::Executed(m) => Box::new(m),
        Msg::Cancel(m) => Box::new(m),
        Msg::Trade(m) => Box::new(m),
    }
}

/// The message as typetest's flat record, under ITCH's type byte.
fn flat(m: Msg) -> Flat {
    let (kind, order_ref, price, shares) = match m {
        Msg::Add(AddOrder {
            order_ref,
            price,
            shares,
        }) => (b'A', order_ref, price, shares),
        Msg::Delete(OrderDelete { order_ref }) => (b'D', order_ref, 0, 0),
        Msg::Executed(OrderExecuted { order_ref, shares }) => (b'E', order_ref, 0, shares),
        Msg::Cancel(OrderCancel { order_ref, shares }) => (b'X', order_ref, 0, shares),
        Msg::Trade(Trade { price, shares }) => (b'P', 0, price, shares),
    };
    Flat {
        kind,
        order_ref,
        price,
        shares,
    }
}

/// typetest.rs's per-message loop (its `variant`): the next message in order, wrapping.
#[inline(always)]
fn walk_stream<T>(items: &[T], n: u64, on: impl Fn(&mut Tally, &T)) -> Tally {
    let mut t = Tally::default();
    let mut k = 0usize;
    for _ in 0..n {
        on(&mut t, &items[k]);
        black_box(());
        k += 1;
        if k == items.len() {
            k = 0;
        }
    }
    t
}

#[inline(never)]
fn typetest_downcast(items: &[Box<dyn Any>], n: u64) -> Tally {
    walk_stream(items, n, |t, m| typetest::on_any(t, &**m))
}

#[inline(never)]
fn typetest_enum_boxed(items: &[Box<Msg>], n: u64) -> Tally {
    walk_stream(items, n, |t, m| typetest::on_enum(t, m))
}

#[inline(never)]
fn typetest_enum(items: &[Msg], n: u64) -> Tally {
    walk_stream(items, n, typetest::on_enum)
}

#[inline(never)]
fn typetest_tag(items: &[Flat], n: u64) -> Tally {
    walk_stream(items, n, typetest::on_flat)
}

fn type_test(variant: &str, n: u64, ran: &mut Ran) {
    // The experiment's stream: 4096 messages (it fits in L2), its seed.
    let msgs = messages(4096, 0x17C4);
    let (label, t, k) = match variant {
        "downcast" => {
            let items: Vec<Box<dyn Any>> = msgs.iter().map(|&m| any(m)).collect();
            (
                typetest::ANY,
                typetest_downcast(&items, n),
                "typetest_downcast",
            )
        }
        "enum-boxed" => {
            // Boxed on purpose: the same indirection as Box<dyn Any>.
            let items: Vec<Box<Msg>> = msgs.iter().map(|&m| Box::new(m)).collect();
            (
                typetest::ENUM_BOXED,
                typetest_enum_boxed(&items, n),
                "typetest_enum_boxed",
            )
        }
        "enum" => (typetest::ENUM, typetest_enum(&msgs, n), "typetest_enum"),
        _ => {
            let items: Vec<Flat> = msgs.iter().map(|&m| flat(m)).collect();
            (typetest::TAG, typetest_tag(&items, n), "typetest_tag")
        }
    };
    ran.label = label.to_string();
    ran.unit = "message".to_string();
    ran.result = format!("{:#x}", t.checksum());
    ran.kernels = kernel(k);
}

// ---- memory ----

/// memory.rs's chain seed (a copy of its private `SEED`).
const CHASE_SEED: u64 = 0xC0FF_EE00_0123;

/// The chase walks (memory.rs's, on a heap buffer aligned to a line: cachegrind models no
/// pages, so the experiment's mapping and its page size don't enter): a warm-up of up to 256 Ki
/// steps as the experiment's, then `n` steps.
fn memory(variant: &str, n: u64, small: bool, ran: &mut Ran) -> anyhow::Result<()> {
    let (kind, set) = variant.split_once('-').expect("memory ids are kind-set");
    let bytes = match set {
        "l1" => crate::memory::L1_SET,
        _ if small => 4 << 20,
        _ => 64 << 20,
    };
    let words = bytes / 8;
    let mut v = vec![0u64; words + chase::WORDS_PER_LINE];
    let off = v.as_ptr().align_offset(chase::LINE);
    let buf = &mut v[off..off + words];
    let lane = if kind == "random" {
        chase::link_random(buf, chase::RANDOM_LANE, CHASE_SEED);
        chase::RANDOM_LANE
    } else {
        chase::link_sequential(buf, chase::SEQUENTIAL_LANE);
        chase::SEQUENTIAL_LANE
    };
    let slots = chase::slots(words);
    let warm = slots.min(1 << 18);
    let end = chase::walk(buf, chase::start(lane), warm);
    let end = chase::walk(buf, end, n as usize);
    if kind != "random" {
        // Counting says where the sequential walk ends: a walk that skipped a load wouldn't.
        let want = ((warm + n as usize) % slots) * chase::WORDS_PER_LINE + lane;
        anyhow::ensure!(
            end == want,
            "the sequential walk ended at {end}, not {want}"
        );
    }
    let name = if kind == "random" {
        "random chase"
    } else {
        "sequential"
    };
    ran.label = format!("{name}, {}", crate::memory::size_name(bytes));
    ran.unit = "step".to_string();
    ran.result = end.to_string();
    // One slot per line: every step is a line of its own.
    ran.lines_model = Some(1.0);
    ran.kernels = vec!["hotpath::chase::walk".to_string()];
    Ok(())
}

// ---- hot/cold ----

#[inline(never)]
fn hotcold_full(full: &[hotcold::Full], passes: u64) -> (u64, u64) {
    let mut r = (0, 0);
    for _ in 0..passes {
        r = hotcold::scan_full(black_box(full));
    }
    r
}

#[inline(never)]
fn hotcold_split(hot: &[hotcold::Hot], passes: u64) -> (u64, u64) {
    let mut r = (0, 0);
    for _ in 0..passes {
        r = hotcold::scan_split(black_box(hot));
    }
    r
}

/// The bytes of a `Hot` the scan reads: `price` through `live`, not `id` (hotcold's own
/// `lines_per_order` counts all 24 bytes).
const SCANNED: (usize, usize) = (
    std::mem::offset_of!(hotcold::Hot, price),
    std::mem::offset_of!(hotcold::Hot, live) + 1 - std::mem::offset_of!(hotcold::Hot, price),
);

/// hotcold's book (its `Book::new`, its seed): 2¹⁹ orders at size default, whose full structs'
/// scanned lines (about 1.1 × 64 B per order: 36 MiB) outgrow a 32 MiB last level while the
/// hot array (12 MiB) doesn't; 16 Ki orders at size small.
fn hot_cold(variant: &str, passes: u64, small: bool, ran: &mut Ran) {
    let orders = if small { 1 << 14 } else { 1 << 19 };
    let book = hotcold::Book::new(orders, 0x407C01D);
    let (label, r, stride, k) = if variant == "full" {
        (
            hotcold::AOS,
            hotcold_full(&book.full, passes),
            hotcold::FULL_BYTES,
            ["hotpath::code::hotcold::scan_full", "hotcold_full"],
        )
    } else {
        (
            hotcold::SPLIT,
            hotcold_split(&book.hot, passes),
            hotcold::HOT_BYTES,
            ["hotpath::code::hotcold::scan_split", "hotcold_split"],
        )
    };
    let model = lines_touched(stride, SCANNED.0, SCANNED.1);
    ran.label = format!("{label}, {orders} orders");
    ran.unit = "order".to_string();
    ran.elements = orders as u64;
    ran.result = format!("{}/{}", r.0, r.1);
    ran.lines_model = Some(model);
    ran.kernels = vec![k[0].to_string(), format!("{HERE}::{}", k[1])];
}

// ---- AoS/SoA and SIMD ----

/// The books of layout.rs's large set (1,000,000 positions; its small one, 8192, at size
/// small), its seeds (42 for AoS/SoA, 43 for SIMD).
fn positions(small: bool, seed: u64) -> Vec<layout::Position> {
    layout::positions(if small { 8_192 } else { 1_000_000 }, seed)
}

fn risk(r: layout::Risk) -> String {
    format!("{:#x}/{}", r.exposure.to_bits(), r.breaches)
}

/// The four f64 fields the loop reads.
const READ: usize = 32;

fn aos_soa(variant: &str, passes: u64, small: bool, ran: &mut Ran) {
    let ps = positions(small, 42);
    let n = ps.len();
    let mut r = layout::Risk::default();
    let (label, model, k) = match variant {
        "aos" => {
            for _ in 0..passes {
                r = layout::risk_aos(black_box(&ps));
            }
            (
                layout::aos_name(n),
                lines_touched(layout::AOS_BYTES, 0, READ),
                "risk_aos",
            )
        }
        "packed" => {
            let packed: Vec<layout::Packed> = ps.iter().map(layout::Packed::of).collect();
            for _ in 0..passes {
                r = layout::risk_packed(black_box(&packed));
            }
            (
                layout::packed_name(n),
                lines_touched(layout::PACKED_BYTES, 0, READ),
                "risk_packed",
            )
        }
        _ => {
            let b = layout::Book::from_positions(&ps);
            for _ in 0..passes {
                r = layout::risk_soa(black_box(&b));
            }
            (
                layout::soa_name(n),
                4.0 * lines_touched(8, 0, 8),
                "risk_soa",
            )
        }
    };
    ran.label = label;
    ran.lines_model = Some(model);
    ran.kernels = vec![format!("hotpath::code::layout::{k}")];
    ran.unit = "position".to_string();
    ran.elements = n as u64;
    ran.result = risk(r);
}

fn simd(variant: &str, passes: u64, small: bool, ran: &mut Ran) {
    let b = layout::Book::from_positions(&positions(small, 43));
    let n = b.len();
    let mut r = layout::Risk::default();
    let (name, k) = match variant {
        "scalar" => {
            for _ in 0..passes {
                r = layout::risk_soa(black_box(&b));
            }
            ("scalar", "risk_soa")
        }
        "sse2" => {
            for _ in 0..passes {
                r = layout::risk_soa_sse2(black_box(&b));
            }
            ("SSE2 (baseline target)", "risk_soa_sse2")
        }
        _ => {
            let mut level = "";
            for _ in 0..passes {
                (r, level) = layout::risk_soa_pulp(black_box(&b));
            }
            // The loop is in the function pulp's dispatch calls for this level.
            let simd = level.rsplit("::").next().unwrap_or(level);
            ran.via = Some(format!(
                "pulp::x86::{}::{simd}::vectorize",
                simd.to_lowercase()
            ));
            ran.detail = format!("pulp's dispatch took {level}");
            ("pulp dispatch", "risk_soa_pulp")
        }
    };
    ran.label = format!("{name}, {n} positions");
    ran.unit = "position".to_string();
    ran.elements = n as u64;
    ran.result = risk(r);
    ran.lines_model = Some(4.0 * lines_touched(8, 0, 8));
    ran.kernels = vec![format!("hotpath::code::layout::{k}")];
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The variants of one group compute the same thing, as the experiments check theirs.
    #[test]
    fn the_groups_agree_and_the_checked_walks_end_where_counting_says() {
        let mut seen: Vec<(&str, String)> = Vec::new();
        for w in super::super::WORKLOADS {
            let ran = run(w.experiment, w.variant, 3_000, Size::Small).unwrap();
            assert!(!ran.label.is_empty() && !ran.unit.is_empty(), "{ran:?}");
            assert!(!ran.kernels.is_empty());
            if w.group.is_empty() {
                continue;
            }
            match seen.iter().find(|(g, _)| *g == w.group) {
                Some((_, r)) => assert_eq!(*r, ran.result, "{}/{}", w.experiment, w.variant),
                None => seen.push((w.group, ran.result)),
            }
        }
        assert_eq!(seen.len(), 6);
    }

    #[test]
    fn the_copied_streams_are_the_experiments() {
        // dispatch's sum over 400 calls of one type, recomputed the experiment's way.
        let f = feed();
        let mut h = Notional::default();
        let want = (0..400).fold(0u64, |s, k| {
            let i = k & (FEED_LEN - 1);
            s.wrapping_add(h.on_tick(f.px[i], f.qty[i]))
        });
        assert_eq!(dispatch_generic(&f, &mut Notional::default(), 400), want);
        // typetest: every representation tallies the same.
        let msgs = messages(500, 1);
        let anys: Vec<Box<dyn Any>> = msgs.iter().map(|&m| any(m)).collect();
        let flats: Vec<Flat> = msgs.iter().map(|&m| flat(m)).collect();
        let t = typetest_enum(&msgs, 700);
        assert_eq!(typetest_downcast(&anys, 700), t);
        assert_eq!(typetest_tag(&flats, 700), t);
        assert!(t.deletes > 0 && t.trade_notional > 0);
    }
}
