//! The trader's per-packet codec work: decode a MoldUDP64 packet carrying one ITCH 'P' trade,
//! and encode one order. Run with `cargo bench -p wire --bench codec`.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use wire::itch::{self, Message, Price4, Side, Stock, Timestamp, TradeRepr};
use wire::moldudp64::{self, PacketBuilder, Session};
use wire::order::{self, OrderRepr};

fn packet_with_one_trade(buf: &mut [u8]) -> usize {
    let trade = TradeRepr {
        stock_locate: 1,
        tracking_number: 0,
        timestamp: Timestamp::from_nanos(34_200_000_000_000).unwrap(),
        order_ref: 42,
        side: Side::Buy,
        shares: 100,
        stock: Stock::new("SYNTH").unwrap(),
        price: Price4(1_000_000),
        match_number: 1,
    };
    let mut builder = PacketBuilder::new(buf, Session::new("BENCH").unwrap(), 1).unwrap();
    trade
        .emit_into(builder.reserve(trade.buffer_len()).unwrap())
        .unwrap();
    builder.len()
}

fn decode(c: &mut Criterion) {
    let mut buf = [0u8; 128];
    let len = packet_with_one_trade(&mut buf);
    let bytes = &buf[..len];
    c.bench_function("moldudp64+itch: decode 1 trade", |b| {
        b.iter(|| {
            let packet = moldudp64::Packet::new_checked(black_box(bytes)).unwrap();
            let seq = packet.sequence();
            let mut last = None;
            for (i, msg) in packet.messages().enumerate() {
                if let Ok(Message::Trade(t)) = itch::parse(msg.unwrap()) {
                    last = Some((seq + i as u64, t.price));
                }
            }
            black_box(last)
        })
    });
}

fn encode(c: &mut Criterion) {
    let order = OrderRepr {
        side: Side::Sell,
        reverse: true,
        shares: 100,
        token: 1,
        tick_seq: 12345,
        price: Price4(1_000_000),
        stock: Stock::new("SYNTH").unwrap(),
    };
    let mut out = [0u8; order::LEN];
    c.bench_function("order: emit", |b| {
        b.iter(|| {
            let mut packet = order::Packet::new_checked(&mut out[..]).unwrap();
            black_box(&order).emit(&mut packet);
            black_box(&out);
        })
    });
}

criterion_group!(benches, decode, encode);
criterion_main!(benches);
