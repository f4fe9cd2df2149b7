//! The XDP program's pre-armed trigger (`Action::Trigger`), through real frames in the lab: an
//! armed order fires only on its tick (session, sequence number, one trade of its stock) at a
//! price in its set, comes back to the exchange as exactly the armed order, is recorded in the
//! ring, and is consumed; everything else goes on to the trader (here: passed to the kernel,
//! as no AF_XDP socket is bound, and read from a UDP socket). Privileged: skipped (with a note)
//! where the lab can't be built.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use std::{net::UdpSocket, sync::mpsc, time::Duration};
use {engine as _, nix as _, serde_json as _, soup as _, trader as _};

use afxdp::xdp::{Load, XdpMode, XdpProgram};
use netns::{in_netns, lab};
use wire::{
    itch::{self, Price4, Side, Stock},
    moldudp64::{PacketBuilder, Session},
    order::{FLAG_REVERSE, OrderRepr},
};
use xdp_common::{ARM_AT_OR_ABOVE, ARM_AT_OR_BELOW, Action, Arm, Counter, Fired};

mod common;

use common::lab_or_skip;

/// How the arm is written before a step.
#[derive(Clone, Copy)]
enum Write {
    /// Not at all.
    None,
    /// Whole ([`afxdp::xdp::ArmMap::set`]).
    Whole(Arm),
    /// Its first half only: the arm with its generation odd, as a run mid-write sees it.
    Half(Arm),
    /// The second half of the last `Half`.
    Finish,
}

/// What the exchange side does, one step at a time.
enum Step {
    /// Send the tick (session, seq, stock, price) and say whether an order must come back.
    Send(&'static str, u64, &'static str, u32, bool),
    /// Send a packet of two trades with this sequence number (never fires).
    SendTwo(u64, u32),
    /// `inject frames` of the trader's tick at this sequence number (one trade, 100.00) with a
    /// wrong IPv4 or UDP checksum, to another IPv4 address, to another MAC: none is the
    /// trader's, none fires, none reaches the trader's socket.
    Inject(u64),
}

fn trade(seq: u64, stock: &str, price: u32) -> [u8; itch::trade::LEN] {
    let mut t = [0u8; itch::trade::LEN];
    trader_core::trade_message(
        seq,
        Stock::new(stock).expect("stock"),
        Price4(price),
        seq * 1_000,
    )
    .emit_into(&mut t)
    .expect("trade");
    t
}

#[test]
fn an_armed_order_fires_once_on_its_tick_at_a_price_in_its_set() {
    let Some(lab) = lab_or_skip("trig") else {
        return;
    };
    let c = lab.config().clone();
    // AtOrAbove 1,000,000: sell 200, reversing.
    let arm_a = |seq| Arm {
        seq,
        token: 77,
        threshold: 1_000_000,
        shares: 200,
        session: *b"T2TLAB0001",
        stock: *b"SYNTH   ",
        armed: 1,
        direction: ARM_AT_OR_ABOVE,
        side: xdp_common::layout::itch::SIDE_SELL,
        flags: FLAG_REVERSE.to_be_bytes(),
        pad: [0; 5],
        generation: 0,
    };
    // AtOrBelow 500,000: buy 100.
    let arm_b = |seq| Arm {
        token: 78,
        threshold: 500_000,
        shares: 100,
        direction: ARM_AT_OR_BELOW,
        side: xdp_common::layout::itch::SIDE_BUY,
        flags: [0; 2],
        ..arm_a(seq)
    };
    // Every price: buy 100.
    let arm_c = |seq| Arm {
        token: 79,
        threshold: 0,
        direction: ARM_AT_OR_ABOVE,
        ..arm_b(seq)
    };
    let s = paths::market::SESSION;
    // (arm to write before the step, step)
    let steps: Vec<(Write, Step)> = vec![
        // Not its tick.
        (
            Write::Whole(arm_a(3)),
            Step::Send(s, 2, "SYNTH", 2_000_000, false),
        ),
        // Another session.
        (
            Write::None,
            Step::Send("OTHERSESS1", 3, "SYNTH", 1_500_000, false),
        ),
        // Its tick, the price outside the set: to the trader.
        (Write::None, Step::Send(s, 3, "SYNTH", 999_999, false)),
        // A later copy of that tick, in the set: the tick went to the trader, so never.
        (Write::None, Step::Send(s, 3, "SYNTH", 1_500_000, false)),
        // Another stock.
        (
            Write::Whole(arm_a(4)),
            Step::Send(s, 4, "OTHER", 1_500_000, false),
        ),
        // Two messages.
        (Write::Whole(arm_a(5)), Step::SendTwo(5, 1_500_000)),
        // Its tick at 1,000,000, but misaddressed or corrupt (`inject frames`): never, and the
        // real tick still fires after them.
        (Write::Whole(arm_a(7)), Step::Inject(7)),
        (Write::None, Step::Send(s, 7, "SYNTH", 1_000_000, true)), // the bound included
        (Write::None, Step::Send(s, 7, "SYNTH", 1_000_000, false)), // consumed
        // AtOrBelow: outside, then in.
        (
            Write::Whole(arm_b(9)),
            Step::Send(s, 9, "SYNTH", 500_001, false),
        ),
        (
            Write::Whole(arm_b(10)),
            Step::Send(s, 10, "SYNTH", 12_345, true),
        ),
        // An arm caught half-written (its generation odd) never fires, and once whole it
        // doesn't fire on a copy of the tick that met it half-written; a whole arm does.
        (
            Write::Half(arm_c(11)),
            Step::Send(s, 11, "SYNTH", 700_000, false),
        ),
        (Write::Finish, Step::Send(s, 11, "SYNTH", 700_000, false)),
        (
            Write::Whole(arm_c(12)),
            Step::Send(s, 12, "SYNTH", 700_000, true),
        ),
        // Disarmed (naming the session, as the trader's disarms do), the tick comes; armed
        // after it came, a copy never fires; the next tick, armed in time, does.
        (
            Write::Whole(Arm {
                armed: 0,
                ..arm_c(13)
            }),
            Step::Send(s, 13, "SYNTH", 700_000, false),
        ),
        (
            Write::Whole(arm_c(13)),
            Step::Send(s, 13, "SYNTH", 700_000, false),
        ),
        (
            Write::Whole(arm_c(14)),
            Step::Send(s, 14, "SYNTH", 700_000, true),
        ),
    ];
    // Market-data packets the program passes on (no AF_XDP socket here, so each counts as a
    // failed redirect): the steps that don't fire, and the 4 injected frames.
    let unfired = steps
        .iter()
        .filter(|(_, st)| matches!(st, Step::Send(.., false) | Step::SendTwo(..)))
        .count() as u64
        + 4;
    let n_steps = steps.len();

    let (ready_tx, ready_rx) = mpsc::channel();
    let (step_tx, step_rx) = mpsc::channel::<Write>();
    let (ack_tx, ack_rx) = mpsc::channel::<()>();
    let trader = {
        let c = c.clone();
        std::thread::spawn(move || {
            in_netns(&c.trader_ns(), move || {
                // Fires only frames addressed to the trader, as its socket path takes them.
                let mut prog = XdpProgram::attach_lines(
                    &c.trader_if,
                    lab::MD_PORT,
                    None,
                    XdpMode::Native,
                    Action::Trigger,
                    Load {
                        trigger_dst: Some((c.trader_mac.octets(), c.trader_ip)),
                        order_to: Some(common::lab_order_to(&c)),
                        // Every fire's record in the ring too (as for a blocking trader), so
                        // the test reads them all; the arm's line holds the last one.
                        fired_wakeup: true,
                        ..Load::default()
                    },
                )
                .expect("attach the trigger");
                // The feed's source pinned (the exchange's address, any port: `inject frames`
                // sends from a port of its own): until it is, the trigger fires nothing.
                prog.take_sources()
                    .expect("the sources map")
                    .pin(
                        xdp_common::SOURCE_LINE_A,
                        &xdp_common::Source::pinned(c.exchange_ip.octets(), [0, 0]),
                    )
                    .expect("pin the feed's source");
                let mut fired = prog.take_fired().expect("the fired ring");
                let mut arm_map = prog.take_arm().expect("the arm map");
                // No AF_XDP socket: what the trigger does not fire is passed to the kernel.
                let md = UdpSocket::bind((c.trader_ip, lab::MD_PORT)).expect("bind md");
                md.set_read_timeout(Some(Duration::from_millis(300)))
                    .unwrap();
                ready_tx.send(()).unwrap();
                let mut passed = Vec::new();
                // One message per step: the arm to write first, then an ack.
                while let Ok(write) = step_rx.recv_timeout(Duration::from_secs(20)) {
                    match write {
                        Write::None => {}
                        Write::Whole(a) => arm_map.set(&a),
                        Write::Half(a) => arm_map.begin(&a),
                        Write::Finish => arm_map.end(),
                    }
                    ack_tx.send(()).unwrap();
                }
                let mut buf = [0u8; 2048];
                while let Ok(n) = md.recv(&mut buf) {
                    passed.push(n);
                }
                let mut records = Vec::new();
                while let Some(f) = fired.next_fired() {
                    records.push(f);
                }
                // The arm's line names the last arm fired and the price it fired at.
                let (generation, price) = arm_map.last_fired();
                assert!(generation != 0 && generation % 2 == 0, "{generation}");
                assert_eq!(Some(price), records.last().map(|f| f.price));
                (prog.counters().unwrap(), records, passed)
            })
            .unwrap()
        })
    };
    ready_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let orders = {
        let c = c.clone();
        in_netns(&c.exchange_ns(), move || {
            // XDP_TX into a veth needs an XDP program on the receiving end: one that passes.
            let _pass =
                XdpProgram::attach(&c.exchange_if, lab::MD_PORT, XdpMode::Native, Action::Pass)
                    .expect("attach the pass program");
            let s = UdpSocket::bind((c.exchange_ip, lab::ORDER_PORT)).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            let mut orders = Vec::new();
            for (write, step) in &steps {
                let want_order = matches!(step, Step::Send(.., true));
                step_tx.send(*write).unwrap();
                ack_rx.recv_timeout(Duration::from_secs(10)).unwrap();
                let mut buf = [0u8; 256];
                let packet = match step {
                    Step::Inject(seq) => {
                        let json = common::tmp("trigger-inject.json");
                        let st = common::in_ns(&c.exchange_ns(), &lab_tests::bin("inject"))
                            .args(["frames", "--iface", &c.exchange_if])
                            .args(["--dst-mac", &c.trader_mac.to_string()])
                            .args(["--src-ip", &c.exchange_ip.to_string()])
                            .args(["--dst-ip", &c.trader_ip.to_string()])
                            .args(["--sink-port", "26499", "--rounds", "1"])
                            .args(["--lie-seq", &seq.to_string()])
                            .args(["--kinds", "bad_ip_checksum,bad_udp_checksum"])
                            .args(["--kinds", "wrong_dst_ip,wrong_dst_mac"])
                            .arg("--json-out")
                            .arg(&json)
                            .status()
                            .expect("inject runs");
                        assert!(st.success(), "inject: {st}");
                        let _ = std::fs::remove_file(&json);
                        let mut reply = [0u8; 256];
                        if let Ok((n, _)) = s.recv_from(&mut reply) {
                            panic!("a misaddressed or corrupt frame fired ({n} bytes back)");
                        }
                        continue;
                    }
                    Step::Send(session, seq, stock, price, _) => {
                        let mut b =
                            PacketBuilder::new(&mut buf, Session::new(session).unwrap(), *seq)
                                .unwrap();
                        b.push(&trade(*seq, stock, *price)).unwrap();
                        b.finish().to_vec()
                    }
                    Step::SendTwo(seq, price) => {
                        let session = Session::new(paths::market::SESSION).unwrap();
                        let mut b = PacketBuilder::new(&mut buf, session, *seq).unwrap();
                        b.push(&trade(*seq, "SYNTH", *price)).unwrap();
                        b.push(&trade(*seq + 1, "SYNTH", *price)).unwrap();
                        b.finish().to_vec()
                    }
                };
                s.send_to(&packet, (c.trader_ip, lab::MD_PORT)).unwrap();
                let mut reply = [0u8; 256];
                match s.recv_from(&mut reply) {
                    Ok((n, _)) => {
                        assert!(
                            want_order,
                            "an order came back for a step that must not fire"
                        );
                        let p = wire::order::Packet::new_checked(&reply[..n]).unwrap();
                        orders.push((n, OrderRepr::parse(&p).unwrap()));
                    }
                    Err(e) => assert!(!want_order, "no order came back: {e}"),
                }
            }
            drop(step_tx);
            orders
        })
        .unwrap()
    };
    let (k, records, passed) = trader.join().expect("trader thread");
    let want = [
        OrderRepr {
            side: Side::Sell,
            reverse: true,
            shares: 200,
            token: 77,
            tick_seq: 7,
            price: Price4(1_000_000),
            stock: Stock::new("SYNTH").unwrap(),
        },
        OrderRepr {
            side: Side::Buy,
            reverse: false,
            shares: 100,
            token: 78,
            tick_seq: 10,
            price: Price4(12_345),
            stock: Stock::new("SYNTH").unwrap(),
        },
        OrderRepr {
            side: Side::Buy,
            reverse: false,
            shares: 100,
            token: 79,
            tick_seq: 12,
            price: Price4(700_000),
            stock: Stock::new("SYNTH").unwrap(),
        },
        OrderRepr {
            side: Side::Buy,
            reverse: false,
            shares: 100,
            token: 79,
            tick_seq: 14,
            price: Price4(700_000),
            stock: Stock::new("SYNTH").unwrap(),
        },
    ];
    assert_eq!(orders.len(), 4);
    for ((len, got), want) in orders.iter().zip(&want) {
        assert_eq!(*len, wire::order::LEN, "the frame was trimmed to the order");
        assert_eq!(got, want);
    }
    assert_eq!(
        records,
        [
            Fired {
                seq: 7,
                token: 77,
                price: 1_000_000,
                shares: 200,
                side: b'S',
                flags: FLAG_REVERSE.to_be_bytes(),
                pad: [0; 5],
            },
            Fired {
                seq: 10,
                token: 78,
                price: 12_345,
                shares: 100,
                side: b'B',
                flags: [0; 2],
                pad: [0; 5],
            },
            Fired {
                seq: 12,
                token: 79,
                price: 700_000,
                shares: 100,
                side: b'B',
                flags: [0; 2],
                pad: [0; 5],
            },
            Fired {
                seq: 14,
                token: 79,
                price: 700_000,
                shares: 100,
                side: b'B',
                flags: [0; 2],
                pad: [0; 5],
            },
        ]
    );
    assert_eq!(k.get(Counter::TriggerFired), 4, "{k}");
    // Every frame reached the program: the injected ones too.
    assert_eq!(k.get(Counter::RedirectFailed), unfired, "{k}");
    assert_eq!(k.get(Counter::TriggerNotInSet), 2, "{k}");
    assert_eq!(k.get(Counter::TriggerArmBusy), 1, "{k}");
    // Every step that did not fire reached the trader's side (the kernel, here) whole; the
    // injected frames, none of them the trader's, did not.
    assert_eq!(passed.len(), n_steps - 4 - 1, "{passed:?} {k}");
}
