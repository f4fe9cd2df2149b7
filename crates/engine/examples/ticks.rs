//! `cargo run --release -p engine --example ticks -- N [trigger]`: feeds the spec series to one
//! strategy (`prepare` + `on_tick` per tick, as the live loop does), and with `trigger` also
//! computes each tick's trigger first. A fixed workload for `valgrind --tool=callgrind`, whose
//! instruction counts (unlike times on a shared VM) repeat: the difference between the two
//! modes is the arm computation's cost per tick.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use engine::{Params, Strategy};
use {
    anyhow as _, clap as _, criterion as _, proptest as _, pulp as _, serde_json as _, sha2 as _,
    thiserror as _,
};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: i64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("usage: ticks N [trigger]"));
    let trigger = args.next().is_some_and(|a| a == "trigger");
    let close = engine::data::gbm(engine::data::SPEC_SEED, engine::data::SPEC_BARS);
    let mut s = Strategy::new(Params::from_n(n).unwrap_or_else(|e| panic!("n = {n}: {e}")));
    let (mut armed, mut orders) = (0_u64, 0_u64);
    for &x in &close {
        let p = engine::trigger::price_f64((x * 10_000.0).round() as u32);
        if trigger {
            armed += u64::from(s.trigger().is_ok());
        }
        orders += u64::from(s.on_tick(std::hint::black_box(p)).is_some());
        s.prepare();
    }
    println!("n={n} ticks={} orders={orders} armed={armed}", close.len());
}
