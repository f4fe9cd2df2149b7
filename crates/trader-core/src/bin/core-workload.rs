//! The PGO experiment's workload and measurement, one binary built three ways (plain,
//! instrumented, optimised with the profile): the trader core over the spec's feed, and the
//! engine's fast sweep. Prints one JSON object: per-packet ns of each pass, sweep ms of each
//! run, and checksums so the builds can be checked to compute the same thing.
//!
//! `core-workload [--passes N] [--packets N] [--sweeps N] [--cpu N]`
#![forbid(unsafe_code)]

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use book as _;
use {
    anyhow as _, hdrhistogram as _, results as _, serde as _, serde_json as _, wire as _,
    xdp_common as _,
};
#[cfg(test)]
use {criterion as _, market as _, paths as _, proptest as _};

use std::time::Instant;

use trader_core::workload::{WorkloadReport, feed, pass, trader};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} takes a number, not {v}"))
        })
        .unwrap_or(default)
}

fn main() {
    let passes = arg("--passes", 20);
    let packets = arg("--packets", engine::data::SPEC_BARS);
    let sweeps = arg("--sweeps", 3);
    if std::env::args().any(|a| a == "--cpu") {
        let cpu = arg("--cpu", 0);
        affinity::pin_current_thread(cpu).unwrap_or_else(|e| panic!("pinning to CPU {cpu}: {e}"));
    }
    let feed = feed(packets);
    let mut per_packet_ns = Vec::with_capacity(passes);
    let mut check = (0, 0);
    for _ in 0..passes {
        let mut t = trader(6);
        let t0 = Instant::now();
        check = pass(&mut t, &feed);
        per_packet_ns.push(t0.elapsed().as_nanos() as f64 / packets as f64);
    }
    let close = engine::data::gbm(engine::data::SPEC_SEED, engine::data::SPEC_BARS);
    let grid = engine::grid_default();
    let mut sweep_ms = Vec::with_capacity(sweeps);
    let mut pnl = 0.0;
    for _ in 0..sweeps {
        let t0 = Instant::now();
        let r = engine::sweep::sweep(std::hint::black_box(&close), &grid, 1)
            .expect("one thread is a valid sweep");
        sweep_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        pnl = r.iter().map(|c| c.pnl).sum();
    }
    println!(
        "{}",
        WorkloadReport::new(&per_packet_ns, &sweep_ms, check, pnl).to_json()
    );
}
