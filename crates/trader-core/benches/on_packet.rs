//! The whole per-packet core: MoldUDP64 payload in, ITCH decode, sequence check, the strategy,
//! the order encoded, `settle`. `cargo bench -p trader-core`.
//! - `on_packet/pass_5000/n=6`: a pass over 5,000 packets of the spec's series (per packet:
//!   divide by 5,000); n = 6 trades often, n = 200 rarely.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use {
    affinity as _, anyhow as _, book as _, engine as _, hdrhistogram as _, market as _, paths as _,
    proptest as _, results as _, serde as _, serde_json as _, wire as _, xdp_common as _,
};

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use trader_core::workload::{feed, pass, trader};

fn on_packet(c: &mut Criterion) {
    let packets = feed(5_000);
    let mut g = c.benchmark_group("on_packet");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(packets.len() as u64));
    for n in [6, 200] {
        g.bench_function(format!("pass_5000/n={n}"), |b| {
            b.iter_batched_ref(
                || trader(n),
                |t| pass(t, black_box(&packets)),
                BatchSize::LargeInput,
            );
        });
    }
    g.finish();
}

criterion_group!(benches, on_packet);
criterion_main!(benches);
