//! The generator's rate, messages/s, with each message encoded (the `market-gen` tool's work
//! less the file write). The floor: 5 M messages/s.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use market::{Config, Generator};
use std::hint::black_box;
use {book as _, engine as _, hdrhistogram as _, paths as _, wire as _};

fn bench(c: &mut Criterion) {
    let config = Config::new(42, 20_000);
    let n = Generator::new(config).unwrap().count() as u64;
    let mut g = c.benchmark_group("market");
    g.throughput(Throughput::Elements(n));
    g.sample_size(10);
    g.bench_function("generate_and_encode", |b| {
        b.iter(|| {
            let mut buf = [0u8; 64];
            let mut bytes = 0usize;
            for m in Generator::new(config).unwrap() {
                bytes += m.emit_into(&mut buf).unwrap();
            }
            black_box(bytes)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
