//! Criterion benches of the engine's kernels on the spec's workload.
//!
//! `cargo bench -p engine` (a few minutes: the reference sweep alone is ~3 s per sample).
//! - `sweep/reference`, `sweep/fast_1t`, `sweep/fast_2t`: the 80-combo sweep, 150,000 bars.
//! - `on_tick_decision/n`: price in to decision out, with `prepare` done before the timed call
//!   (what the live loop sees when it prepares after sending its order).
//! - `per_tick_total/n`: `on_tick` + `prepare`, the whole per-tick work.
//! - `trigger/n`: the next tick's exact trigger (`Strategy::trigger`), on a prepared strategy:
//!   the arm computation of a pre-armed trigger path, done between ticks. Before it, the share
//!   of the spec series' ticks that can be armed, and why the others can't, is printed.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use {
    anyhow as _, clap as _, proptest as _, pulp as _, serde_json as _, sha2 as _, thiserror as _,
};

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use engine::{Params, Strategy, grid_default, reference, sweep};

fn spec_series() -> Vec<f64> {
    engine::data::gbm(engine::data::SPEC_SEED, engine::data::SPEC_BARS)
}

fn sweeps(c: &mut Criterion) {
    let close = spec_series();
    let grid = grid_default();
    let mut g = c.benchmark_group("sweep");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    g.bench_function("fast_2t", |b| {
        b.iter(|| sweep::sweep(black_box(&close), &grid, 2))
    });
    g.bench_function("fast_1t", |b| {
        b.iter(|| sweep::sweep(black_box(&close), &grid, 1))
    });
    g.measurement_time(Duration::from_secs(30));
    g.bench_function("reference", |b| {
        b.iter(|| reference::sweep(black_box(&close), &grid))
    });
    g.finish();
}

/// A strategy that has seen `warm` bars of the series, so every window is full.
fn warmed(close: &[f64], n: i64, warm: usize) -> Strategy {
    let mut s = Strategy::new(Params::from_n(n).unwrap_or_else(|e| panic!("n = {n}: {e}")));
    for &x in &close[..warm] {
        s.on_tick(x);
    }
    s
}

fn ticks(c: &mut Criterion) {
    let close = spec_series();
    let warm = 10_000;
    let mut g = c.benchmark_group("on_tick_decision");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for n in [6, 200] {
        let base = warmed(&close, n, warm);
        let price = close[warm];
        g.bench_function(format!("n={n}"), |b| {
            b.iter_batched_ref(
                || {
                    let mut s = base.clone();
                    s.prepare();
                    s
                },
                |s| s.on_tick(black_box(price)),
                BatchSize::SmallInput,
            );
        });
    }
    g.finish();

    let mut g = c.benchmark_group("per_tick_total");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for n in [6, 200] {
        let mut s = warmed(&close, n, warm);
        let mut i = warm;
        g.bench_function(format!("n={n}"), |b| {
            b.iter(|| {
                let sig = s.on_tick(black_box(close[i]));
                s.prepare();
                i = if i + 1 == close.len() { warm } else { i + 1 };
                sig
            });
        });
    }
    g.finish();
}

fn triggers(c: &mut Criterion) {
    let close = spec_series();
    let warm = 10_000;
    for n in [6, 200] {
        // How often a tick can be armed, over the whole series, fed as Price(4) prices.
        let mut s = Strategy::new(Params::from_n(n).unwrap_or_else(|e| panic!("n = {n}: {e}")));
        let mut why = std::collections::BTreeMap::<String, u64>::new();
        for &x in &close {
            let key = match s.trigger() {
                Ok(_) => "armed".to_owned(),
                Err(e) => format!("{e:?}"),
            };
            *why.entry(key).or_default() += 1;
            s.on_tick(engine::trigger::price_f64((x * 10_000.0).round() as u32));
        }
        eprintln!("trigger/n={n}: ticks of the spec series by arm outcome: {why:?}");
    }
    let mut g = c.benchmark_group("trigger");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for n in [6, 200] {
        let base = warmed(&close, n, warm);
        g.bench_function(format!("n={n}"), |b| {
            b.iter_batched_ref(
                || {
                    let mut s = base.clone();
                    s.prepare();
                    s
                },
                |s| s.trigger(),
                BatchSize::SmallInput,
            );
        });
    }
    g.finish();
}

criterion_group!(benches, ticks, triggers, sweeps);
criterion_main!(benches);
