//! The trader's per-packet codec work: decode a MoldUDP64 packet carrying one ITCH 'P' trade,
//! and encode one order. Run with `cargo bench -p wire --bench codec`.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
#[cfg(feature = "pcapng")]
use pcap_file as _;
use {etherparse as _, proptest as _, thiserror as _};

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

/// What the TCP order paths add to the order's encoding: the OUCH 5.0 Enter Order (its ClOrdID
/// formatted from the tick's sequence number) in a SoupBinTCP packet, against the lab's
/// 36-byte order above; and the checksums a segment built without the stack needs (IPv4
/// header, TCP over a pseudo header, header and payload).
fn encode_tcp_order(c: &mut Criterion) {
    use wire::{ouch::EnterOrder, soupbin};
    let order = OrderRepr {
        side: Side::Sell,
        reverse: true,
        shares: 100,
        token: 1,
        tick_seq: 12345,
        price: Price4(1_000_000),
        stock: Stock::new("SYNTH").unwrap(),
    };
    let mut out = [0u8; 64];
    c.bench_function(
        "ouch: enter order from the lab's order, in a soupbin packet",
        |b| {
            b.iter(|| {
                let enter = EnterOrder::from_order(black_box(&order)).unwrap();
                let n = enter.emit_into(&mut out[soupbin::HEADER_LEN..]).unwrap();
                out[..2].copy_from_slice(&((n + 1) as u16).to_be_bytes());
                out[2] = soupbin::kind::UNSEQUENCED_DATA;
                black_box(&out);
            })
        },
    );
    // An IPv4 + TCP header (20 + 20) and the 50-byte packet above.
    let segment = [0x5au8; 90];
    c.bench_function("checksums: ipv4 header + tcp over a 90-byte segment", |b| {
        b.iter(|| {
            let s = black_box(&segment);
            let ip = xdp_common::checksum::ipv4_header(&s[..20]);
            let pseudo = [0u8; 12];
            let tcp = !xdp_common::checksum::fold(
                xdp_common::checksum::sum(&pseudo) + xdp_common::checksum::sum(&s[20..]),
            );
            black_box((ip, tcp))
        })
    });
}

criterion_group!(benches, decode, encode, encode_tcp_order);
criterion_main!(benches);
