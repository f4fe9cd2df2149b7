//! The book's cost per message on a steady flow near the touch: each round adds an order, takes
//! part of one, cancels part of another and deletes a third, over 1,000 symbols, with a
//! standing depth of 20 orders a symbol. The full-day figure is `cargo xtask book` on a
//! generated file (docs/market.md); this one is for comparing changes to the book itself.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use book::{Book, Config};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use wire::itch::{
    AddOrderRepr, Message, OrderCancelRepr, OrderDeleteRepr, OrderExecutedRepr, Price4, Side,
    Stock, Timestamp,
};
use {libc as _, proptest as _};

fn flow(n: usize) -> Vec<Message> {
    let ts = Timestamp::from_nanos(34_200_000_000_000).unwrap();
    let stock = Stock::new("BENCH").unwrap();
    let symbols = 1_000u64;
    let depth = 20u64;
    let mut out = Vec::with_capacity(n);
    let mut next = 0u64;
    let add = |r: u64| {
        let locate = (r % symbols) as u16 + 1;
        let side = if r.is_multiple_of(2) {
            Side::Buy
        } else {
            Side::Sell
        };
        let off = (r / symbols % 5) as u32 * 100;
        let price = match side {
            Side::Buy => 1_000_000 - off,
            Side::Sell => 1_000_100 + off,
        };
        Message::AddOrder(AddOrderRepr {
            stock_locate: locate,
            tracking_number: 0,
            timestamp: ts,
            order_ref: r,
            side,
            shares: 300,
            stock,
            price: Price4(price),
        })
    };
    let loc = |r: u64| (r % symbols) as u16 + 1;
    // The standing book.
    while next < symbols * depth {
        out.push(add(next));
        next += 1;
    }
    while out.len() < n {
        let old = next - symbols * depth;
        out.push(add(next));
        out.push(Message::OrderExecuted(OrderExecutedRepr {
            stock_locate: loc(old + 1),
            tracking_number: 0,
            timestamp: ts,
            order_ref: old + 1,
            executed_shares: 100,
            match_number: next,
        }));
        out.push(Message::OrderCancel(OrderCancelRepr {
            stock_locate: loc(old + 2),
            tracking_number: 0,
            timestamp: ts,
            order_ref: old + 2,
            cancelled_shares: 100,
        }));
        out.push(Message::OrderDelete(OrderDeleteRepr {
            stock_locate: loc(old),
            tracking_number: 0,
            timestamp: ts,
            order_ref: old,
        }));
        next += 1;
    }
    out
}

fn bench(c: &mut Criterion) {
    let msgs = flow(400_000);
    let mut g = c.benchmark_group("book");
    g.throughput(Throughput::Elements(msgs.len() as u64));
    g.bench_function("apply_steady_flow", |b| {
        b.iter_batched_ref(
            || {
                Book::new(Config {
                    live_orders: 1 << 16,
                    locates: 1_000,
                    levels: 16,
                })
            },
            |book| {
                for m in &msgs {
                    black_box(book.apply(m));
                }
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
