//! Property tests: no parser (MoldUDP64, ITCH, ITCH files, orders, pcap, frames) panics on any input, and `Repr` → emit → parse round-trips.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
#[cfg(feature = "pcapng")]
use pcap_file as _;
use {criterion as _, thiserror as _, xdp_common as _};

use proptest::prelude::*;
use wire::itch::{self, Message, Price4, Side, Stock, Timestamp, TradePacket, TradeRepr};
use wire::moldudp64::{self, PacketBuilder, Session};
use wire::order::{self, OrderRepr};

fn side() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::Buy), Just(Side::Sell)]
}

fn stock() -> impl Strategy<Value = Stock> {
    any::<[u8; 8]>().prop_map(Stock)
}

fn trade() -> impl Strategy<Value = TradeRepr> {
    (
        (
            any::<u16>(),
            any::<u16>(),
            0..=Timestamp::MAX.nanos(),
            any::<u64>(),
        ),
        (side(), any::<u32>(), stock(), any::<u32>(), any::<u64>()),
    )
        .prop_map(|((stock_locate, tracking_number, ts, order_ref), rest)| {
            let (side, shares, stock, price, match_number) = rest;
            TradeRepr {
                stock_locate,
                tracking_number,
                timestamp: Timestamp::from_nanos(ts).unwrap(),
                order_ref,
                side,
                shares,
                stock,
                price: Price4(price),
                match_number,
            }
        })
}

fn order_repr() -> impl Strategy<Value = OrderRepr> {
    (
        side(),
        any::<bool>(),
        any::<u32>(),
        any::<u64>(),
        any::<u64>(),
        any::<u32>(),
        stock(),
    )
        .prop_map(
            |(side, reverse, shares, token, tick_seq, price, stock)| OrderRepr {
                side,
                reverse,
                shares,
                token,
                tick_seq,
                price: Price4(price),
                stock,
            },
        )
}

/// Everything a receiver would do with a datagram, on arbitrary bytes.
fn decode_everything(bytes: &[u8]) {
    if let Ok(packet) = moldudp64::Packet::new_checked(bytes) {
        let _ = (
            packet.session(),
            packet.sequence(),
            packet.count(),
            packet.next_sequence(),
        );
        let items: Vec<_> = packet.messages().collect();
        assert!(items.len() <= usize::from(packet.block_count()) + 1);
        let all_ok = items.iter().all(Result::is_ok);
        assert_eq!(moldudp64::Repr::parse(&packet).is_ok(), all_ok);
        for msg in items.into_iter().flatten() {
            let _ = itch::parse(msg);
        }
    }
    let _ = itch::parse(bytes);
    if let Ok(packet) = TradePacket::new_checked(bytes) {
        let _ = TradeRepr::parse(&packet);
    }
    for o in order::orders(bytes) {
        let _ = o;
    }
    if let Ok(packet) = order::Packet::new_checked(bytes) {
        let _ = OrderRepr::parse(&packet);
    }
    let mut reader = itch::file::Reader::new(bytes);
    while let Ok(Some(record)) = reader.read_message() {
        let _ = itch::parse(record.message);
    }
    if let Ok(Some(datagram)) = wire::pcap::udp_payload(bytes) {
        let _ = moldudp64::Packet::new_checked(datagram.payload);
    }
    if let Ok(mut reader) = wire::pcap::Reader::new(bytes) {
        while let Ok(Some(record)) = reader.read_record() {
            let _ = wire::pcap::udp_payload(record.data);
        }
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        decode_everything(&bytes);
    }

    /// Arbitrary bytes behind a plausible header (small count, every ITCH type and one unknown),
    /// so that the block walker and each type's decoder get past the header far more often than
    /// with uniform bytes.
    #[test]
    fn plausible_packets_never_panic(
        count in 0u16..8,
        kind in prop::sample::select(
            itch::MESSAGE_LENGTHS.iter().map(|&(kind, _)| kind).chain([b'Z']).collect::<Vec<_>>()
        ),
        body in proptest::collection::vec(any::<u8>(), 0..300),
        lens in proptest::collection::vec(0u16..60, 0..8),
    ) {
        let mut bytes = vec![b' '; 10];
        bytes.extend_from_slice(&1u64.to_be_bytes());
        bytes.extend_from_slice(&count.to_be_bytes());
        let mut body = body.into_iter();
        for len in lens {
            bytes.extend_from_slice(&len.to_be_bytes());
            bytes.push(kind);
            bytes.extend(body.by_ref().take(usize::from(len).saturating_sub(1)));
        }
        decode_everything(&bytes);
    }

    /// A valid packet with one byte flipped.
    #[test]
    fn corrupted_valid_packets_never_panic(
        trades in proptest::collection::vec(trade(), 1..5),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut buf = [0u8; 512];
        let mut builder = PacketBuilder::new(&mut buf, Session([b'X'; 10]), 7).unwrap();
        for t in &trades {
            t.emit_into(builder.reserve(t.buffer_len()).unwrap()).unwrap();
        }
        let packet = builder.finish();
        let i = at.index(packet.len());
        packet[i] = byte;
        decode_everything(packet);
    }

    #[test]
    fn trade_round_trip(repr in trade()) {
        let mut bytes = [0u8; 44];
        repr.emit(&mut TradePacket::new_checked(&mut bytes[..]).unwrap());
        prop_assert_eq!(TradeRepr::parse(&TradePacket::new_checked(&bytes[..]).unwrap()), Ok(repr));
        prop_assert_eq!(itch::parse(&bytes), Ok(Message::Trade(repr)));
    }

    #[test]
    fn order_round_trip(reprs in proptest::collection::vec(order_repr(), 0..8)) {
        let mut payload = vec![0u8; reprs.len() * order::LEN];
        for (r, chunk) in reprs.iter().zip(payload.chunks_mut(order::LEN)) {
            r.emit(&mut order::Packet::new_checked(chunk).unwrap());
        }
        let back: Vec<_> = order::orders(&payload).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(back, reprs);
    }

    #[test]
    fn moldudp64_round_trip(
        sequence in any::<u64>(),
        session in any::<[u8; 10]>(),
        blocks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..80), 0..12),
    ) {
        let mut buf = vec![0u8; 2048];
        let mut builder = PacketBuilder::new(&mut buf, Session(session), sequence).unwrap();
        for b in &blocks {
            builder.push(b).unwrap();
        }
        let bytes = &*builder.finish();
        let packet = moldudp64::Packet::new_checked(bytes).unwrap();
        let repr = moldudp64::Repr::parse(&packet).unwrap();
        prop_assert_eq!(repr, moldudp64::Repr {
            session: Session(session),
            sequence,
            count: blocks.len() as u16,
        });
        let back: Vec<&[u8]> = packet.messages().collect::<Result<_, _>>().unwrap();
        let want: Vec<&[u8]> = blocks.iter().map(Vec::as_slice).collect();
        prop_assert_eq!(back, want);
        prop_assert_eq!(packet.next_sequence(), sequence.wrapping_add(blocks.len() as u64));
    }

    #[test]
    fn itch_file_round_trip(
        messages in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 0..20),
    ) {
        let mut writer = itch::file::Writer::new(Vec::new());
        for m in &messages {
            writer.write_message(m).unwrap();
        }
        let bytes = writer.finish().unwrap();
        let mut reader = itch::file::Reader::with_capacity(7, &bytes[..]);
        let mut offset = 0u64;
        for m in &messages {
            let record = reader.read_message().unwrap().unwrap();
            prop_assert_eq!(record.offset, offset);
            prop_assert_eq!(record.message, &m[..]);
            offset += 2 + m.len() as u64;
        }
        prop_assert!(reader.read_message().unwrap().is_none());
    }

    #[test]
    fn price_round_trips_through_the_one_conversion(n in any::<u32>()) {
        prop_assert_eq!(Price4::from_f64_quantised(Price4(n).to_f64()), Ok(Price4(n)));
    }

    #[test]
    fn price_quantisation_is_nearest(x in 0.0f64..429_496.729_5) {
        let p = Price4::from_f64_quantised(x).unwrap();
        // Within half a unit (plus f64 slack) of the input.
        prop_assert!((p.to_f64() - x).abs() <= 0.000_05 + 1e-9, "{x} -> {p}");
    }

    #[test]
    fn udp_frames_round_trip_and_survive_corruption(
        payload in proptest::collection::vec(any::<u8>(), 0..200),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let builder = etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(5000, 6000);
        let mut frame = Vec::with_capacity(builder.size(payload.len()));
        builder.write(&mut frame, &payload).unwrap();
        let datagram = wire::pcap::udp_payload(&frame).unwrap().unwrap();
        prop_assert_eq!(datagram.payload, &payload[..]);
        prop_assert_eq!(datagram.dst.port(), 6000);
        let mut pcap = wire::pcap::Writer::new(Vec::new(), wire::pcap::Resolution::Nanos).unwrap();
        pcap.write_frame(42, &frame).unwrap();
        let mut file = pcap.finish().unwrap();
        let i = at.index(frame.len());
        frame[i] = byte;
        let _ = wire::pcap::udp_payload(&frame);
        let i = at.index(file.len());
        file[i] = byte;
        decode_everything(&file);
    }

    #[test]
    fn price_never_panics(x in any::<f64>()) {
        let _ = Price4::from_f64_quantised(x);
    }
}
