//! Privileged end-to-end checks of the datapath: real namespaces, the real XDP program, real
//! AF_XDP sockets. CI runs as root; `.ci/run` runs these with `--test-threads=1` because two
//! of them at once would fight over two cores and make the no-loss assertions flaky. As an
//! ordinary user each test says it is skipped and passes.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use std::{
    net::{SocketAddrV4, UdpSocket},
    sync::mpsc,
    time::{Duration, Instant},
};
use {engine as _, nix as _, serde_json as _, soup as _, trader as _};

use afxdp::{
    frame::{self, FrameBuilder, parse_udp},
    xdp::{XdpMode, XdpProgram},
    xsk::{Xsk, XskConfig},
};
use netns::{
    in_netns,
    lab::{self, MD_PORT},
};
use wire::{
    itch::{self, Price4, Side, Stock},
    moldudp64::{PacketBuilder, Session},
    order::OrderRepr,
};
use xdp_common::{Action, Counter};

mod common;

use common::lab_or_skip;

/// A port the program must pass to the kernel: the order port is as good as any.
const OTHER_PORT: u16 = lab::ORDER_PORT;
const COUNT: u64 = 10_000;
const OTHER_COUNT: u64 = 100;

fn payload(seq: u64) -> Vec<u8> {
    let mut p = seq.to_be_bytes().to_vec();
    p.extend((0..(seq % 50) as u8).map(|i| i ^ seq as u8));
    p
}

struct Received {
    seqs: Vec<u64>,
    bad_payloads: u64,
    counters: afxdp::xdp::Counters,
    other: u64,
}

fn redirect_roundtrip(mode: XdpMode) {
    let Some(lab) = lab_or_skip(&format!("dp{}", mode.as_str())) else {
        return;
    };
    let c = lab.config().clone();
    let (ready_tx, ready_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let trader = {
        let c = c.clone();
        std::thread::spawn(move || {
            in_netns(&c.trader_ns(), move || {
                let mut prog = XdpProgram::attach(&c.trader_if, MD_PORT, mode, Action::Redirect)
                    .expect("attach XDP");
                let mut xsk = Xsk::new(&c.trader_if, 0, XskConfig::default()).expect("xsk");
                prog.register_socket(0, xsk.raw_fd()).expect("xskmap");
                let other = UdpSocket::bind((c.trader_ip, OTHER_PORT)).unwrap();
                other.set_nonblocking(true).unwrap();
                ready_tx.send(()).unwrap();
                let mut seqs = Vec::with_capacity(COUNT as usize);
                let mut bad_payloads = 0;
                let mut other_n = 0;
                let mut buf = [0u8; 2048];
                let deadline = Instant::now() + Duration::from_secs(30);
                let mut sender_done = None;
                loop {
                    xsk.rx.recv(64, |f| match parse_udp(f, MD_PORT) {
                        Ok(d) if d.payload.len() >= 8 => {
                            let seq = u64::from_be_bytes(d.payload[..8].try_into().unwrap());
                            if d.payload != payload(seq).as_slice() {
                                bad_payloads += 1;
                            }
                            seqs.push(seq);
                        }
                        _ => bad_payloads += 1,
                    });
                    while other.recv(&mut buf).is_ok() {
                        other_n += 1;
                    }
                    if sender_done.is_none() && done_rx.try_recv().is_ok() {
                        sender_done = Some(Instant::now());
                    }
                    let settled =
                        sender_done.is_some_and(|t| t.elapsed() > Duration::from_millis(300));
                    if (seqs.len() as u64 == COUNT && other_n == OTHER_COUNT)
                        || settled
                        || Instant::now() > deadline
                    {
                        break;
                    }
                }
                Received {
                    seqs,
                    bad_payloads,
                    counters: prog.counters().unwrap(),
                    other: other_n,
                }
            })
            .unwrap()
        })
    };
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("trader ready");
    {
        let c = c.clone();
        in_netns(&c.exchange_ns(), move || {
            let s = UdpSocket::bind((c.exchange_ip, 0)).unwrap();
            let md = SocketAddrV4::new(c.trader_ip, MD_PORT);
            let other = SocketAddrV4::new(c.trader_ip, OTHER_PORT);
            for seq in 0..COUNT {
                s.send_to(&payload(seq), md).unwrap();
                if seq % (COUNT / OTHER_COUNT) == 0 {
                    s.send_to(b"not market data", other).unwrap();
                }
                // Bursts of 256, then a breath: the assertion is "no loss", not a rate.
                if seq % 256 == 255 {
                    std::thread::sleep(Duration::from_micros(500));
                }
            }
        })
        .unwrap();
    }
    done_tx.send(()).unwrap();
    let got = trader.join().expect("trader thread");

    let mut seqs = got.seqs.clone();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(
        got.seqs.len() as u64,
        COUNT,
        "{mode}: frames through AF_XDP"
    );
    assert_eq!(
        seqs,
        (0..COUNT).collect::<Vec<_>>(),
        "{mode}: each seq once"
    );
    assert_eq!(got.bad_payloads, 0, "{mode}: payloads intact");
    assert_eq!(
        got.other, OTHER_COUNT,
        "{mode}: other port reaches the kernel socket"
    );
    let k = got.counters;
    assert_eq!(k.get(Counter::Redirected), COUNT, "{mode}: {k}");
    assert_eq!(k.get(Counter::RedirectFailed), 0, "{mode}: {k}");
    assert_eq!(k.get(Counter::PassedOtherPort), OTHER_COUNT, "{mode}: {k}");
    assert!(
        k.get(Counter::PassedNotIpv4) >= 1,
        "{mode}: ARP passed: {k}"
    );
    assert_eq!(k.get(Counter::Malformed), 0, "{mode}: {k}");

    // ARP resolved: the exchange knows the trader's MAC.
    assert!(
        netns::exchange_resolved_trader(&c),
        "ARP resolved the trader's MAC"
    );
    let (ex, tr) = (c.exchange_ns(), c.trader_ns());
    drop(lab);
    assert!(!netns::ns_exists(&ex) && !netns::ns_exists(&tr));
}

#[test]
fn native_mode_redirects_exactly_the_market_data_flow() {
    redirect_roundtrip(XdpMode::Native);
}

#[test]
fn skb_mode_redirects_exactly_the_market_data_flow() {
    redirect_roundtrip(XdpMode::Skb);
}

#[test]
fn frames_sent_through_the_tx_ring_arrive_intact() {
    const N: u64 = 2_000;
    let Some(lab) = lab_or_skip("tx") else {
        return;
    };
    let c = lab.config().clone();
    let (ready_tx, ready_rx) = mpsc::channel();
    let receiver = {
        let c = c.clone();
        std::thread::spawn(move || {
            in_netns(&c.exchange_ns(), move || {
                let s = UdpSocket::bind((c.exchange_ip, lab::ORDER_PORT)).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                ready_tx.send(()).unwrap();
                let mut buf = [0u8; 2048];
                let mut seen = Vec::new();
                let mut bad = 0u64;
                while (seen.len() as u64) < N {
                    let Ok((n, from)) = s.recv_from(&mut buf) else {
                        break;
                    };
                    let seq = u64::from_be_bytes(buf[..8].try_into().unwrap());
                    if from != std::net::SocketAddr::from((c.trader_ip, MD_PORT))
                        || buf[..n] != *payload(seq).as_slice()
                    {
                        bad += 1;
                    }
                    seen.push(seq);
                }
                (seen, bad)
            })
            .unwrap()
        })
    };
    ready_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    {
        let c = c.clone();
        in_netns(&c.trader_ns(), move || {
            // No XDP program is needed to transmit; AF_XDP TX works on its own.
            let mut xsk = Xsk::new(&c.trader_if, 0, XskConfig::default()).expect("xsk");
            let mut b = FrameBuilder::new(
                frame::endpoint(c.trader_mac, c.trader_ip, MD_PORT),
                frame::endpoint(c.exchange_mac, c.exchange_ip, lab::ORDER_PORT),
            );
            for seq in 0..N {
                let p = payload(seq);
                loop {
                    let sent = xsk.tx.send(|buf| {
                        b.build(buf, |body| {
                            body[..p.len()].copy_from_slice(&p);
                            p.len()
                        })
                    });
                    if sent.is_ok() {
                        break;
                    }
                    xsk.tx.kick().unwrap();
                    std::thread::yield_now();
                }
                // flush, not one kick: a copy-mode sendto sends at most 32 frames and may send
                // fewer (a send buffer or completion ring momentarily full), leaving the rest
                // on the ring; one kick at the end once left a batch of 32 unsent.
                if seq % 32 == 31 {
                    xsk.tx.flush().unwrap();
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            xsk.tx.flush().unwrap();
            std::thread::sleep(Duration::from_millis(50));
        })
        .unwrap();
    }
    let (mut seen, bad) = receiver.join().unwrap();
    assert_eq!(seen.len() as u64, N, "datagrams from AF_XDP TX");
    assert_eq!(bad, 0, "intact, from the trader's address");
    seen.sort_unstable();
    assert_eq!(seen, (0..N).collect::<Vec<_>>());
}

/// The floor's reflector: the XDP program turns each MoldUDP64 trade into an order and sends
/// it back with XDP_TX. The exchange's kernel takes the reflected datagrams only if the
/// rewritten IPv4 header's checksum is right, and each order must carry its tick.
#[test]
fn the_reflector_answers_each_trade_with_its_order() {
    const N: u64 = 500;
    let Some(lab) = lab_or_skip("reflect") else {
        return;
    };
    let c = lab.config().clone();
    let (ready_tx, ready_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let reflector = {
        let c = c.clone();
        std::thread::spawn(move || {
            in_netns(&c.trader_ns(), move || {
                let prog = XdpProgram::attach_lines(
                    &c.trader_if,
                    MD_PORT,
                    None,
                    XdpMode::Native,
                    Action::Reflect,
                    afxdp::xdp::Load {
                        order_to: Some(common::lab_order_to(&c)),
                        ..afxdp::xdp::Load::default()
                    },
                )
                .expect("attach the reflector");
                ready_tx.send(()).unwrap();
                done_rx.recv_timeout(Duration::from_secs(30)).unwrap();
                prog.counters().unwrap()
            })
            .unwrap()
        })
    };
    ready_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let stock = Stock::new("SYNTH").unwrap();
    let price = |seq: u64| Price4(1_000_000 + seq as u32 * 100);
    let orders = {
        let c = c.clone();
        in_netns(&c.exchange_ns(), move || {
            // XDP_TX into a veth needs an XDP program on the receiving end (see the replay's
            // --xdp-pass-on): one that passes everything.
            let _pass = XdpProgram::attach(&c.exchange_if, MD_PORT, XdpMode::Native, Action::Pass)
                .expect("attach the pass program");
            let s = UdpSocket::bind((c.exchange_ip, lab::ORDER_PORT)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let session = Session::new(paths::market::SESSION).unwrap();
            let mut orders = Vec::new();
            for seq in 1..=N {
                let mut trade = [0u8; itch::trade::LEN];
                trader_core::trade_message(seq, stock, price(seq), seq * 1_000)
                    .emit_into(&mut trade)
                    .unwrap();
                let mut buf = [0u8; 256];
                let mut b = PacketBuilder::new(&mut buf, session, seq).unwrap();
                b.push(&trade).unwrap();
                s.send_to(b.finish(), (c.trader_ip, MD_PORT)).unwrap();
                let mut reply = [0u8; 256];
                let (n, from) = s
                    .recv_from(&mut reply)
                    .expect("the reflected order arrives");
                assert_eq!(from, std::net::SocketAddr::from((c.trader_ip, MD_PORT)));
                let packet = wire::order::Packet::new_checked(&reply[..n]).unwrap();
                orders.push((n, OrderRepr::parse(&packet).unwrap()));
            }
            orders
        })
        .unwrap()
    };
    done_tx.send(()).unwrap();
    let k = reflector.join().expect("reflector thread");
    for (seq, (len, order)) in (1..=N).zip(orders) {
        assert_eq!(len, wire::order::LEN, "the frame was trimmed to the order");
        let want = OrderRepr {
            side: Side::Buy,
            reverse: false,
            shares: 100,
            token: seq,
            tick_seq: seq,
            price: price(seq),
            stock,
        };
        assert_eq!(order, want, "seq {seq}");
    }
    assert_eq!(k.get(Counter::Reflected), N, "{k}");
    assert_eq!(k.get(Counter::ReflectFailed), 0, "{k}");
}
