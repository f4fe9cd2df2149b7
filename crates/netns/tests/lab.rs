//! Privileged: builds real namespaces. CI runs as root; as an ordinary user each test says it
//! is skipped and passes.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use std::{net::UdpSocket, time::Duration};
use {nix as _, thiserror as _, xdp_common as _};

use netns::{Found, Lab, LabConfig, in_netns, lab, ns_exists, require_privileges_or_skip};

#[test]
fn up_is_idempotent_and_drop_removes_everything() {
    if !require_privileges_or_skip() {
        return;
    }
    let config = LabConfig::for_test("up");
    let (ex, tr) = (config.exchange_ns(), config.trader_ns());
    {
        let lab = Lab::up(config.clone()).expect("lab up");
        assert_eq!(lab.found(), Found::Nothing);
        assert!(ns_exists(&ex) && ns_exists(&tr));
        let again = Lab::up(config.clone()).expect("second up");
        assert_eq!(again.found(), Found::Intact);
        // The second guard must not remove the lab the first one owns.
        let _ = again.persist();
        assert!(ns_exists(&ex));
        let status = netns::status(&config).unwrap();
        for ip in [lab::EXCHANGE_IP, lab::TRADER_IP] {
            let addr = format!("{ip}/{}", lab::PREFIX_LEN);
            assert!(status.contains(&addr), "{addr} in {status}");
        }
        assert!(status.ends_with(": up\n"), "{status}");
    }
    assert!(!ns_exists(&ex) && !ns_exists(&tr), "drop removed the lab");
    let status = netns::status(&config).unwrap();
    assert!(status.ends_with(": down\n"), "{status}");
    assert!(!netns::down(&config).unwrap(), "second down finds nothing");
}

#[test]
fn a_partial_lab_is_repaired() {
    if !require_privileges_or_skip() {
        return;
    }
    let config = LabConfig::for_test("repair");
    let status = std::process::Command::new("ip")
        .args(["netns", "add", &config.trader_ns()])
        .status()
        .unwrap();
    assert!(status.success());
    let half = netns::status(&config).unwrap();
    assert!(
        half.contains("INCOMPLETE"),
        "status says a half-built lab is one: {half}"
    );
    let lab = Lab::up(config.clone()).expect("repairing up");
    assert_eq!(lab.found(), Found::Repaired);
    drop(lab);
    assert!(!ns_exists(&config.trader_ns()));
}

#[test]
fn udp_crosses_the_veth_and_arp_resolves() {
    if !require_privileges_or_skip() {
        return;
    }
    let config = LabConfig::for_test("udp");
    let lab = Lab::up(config).unwrap();
    let c = lab.config().clone();
    let rx = in_netns(&c.trader_ns(), move || {
        let s = UdpSocket::bind((c.trader_ip, lab::MD_PORT)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    })
    .unwrap();
    let c = lab.config().clone();
    in_netns(&c.exchange_ns(), move || {
        let s = UdpSocket::bind((c.exchange_ip, 0)).unwrap();
        s.send_to(b"hello lab", (c.trader_ip, lab::MD_PORT))
            .unwrap();
    })
    .unwrap();
    let mut buf = [0u8; 64];
    let (n, from) = rx.recv_from(&mut buf).expect("datagram arrives");
    assert_eq!(&buf[..n], b"hello lab");
    assert_eq!(from.ip(), lab.config().exchange_ip);
}

#[test]
fn a_panicking_test_still_removes_its_lab() {
    if !require_privileges_or_skip() {
        return;
    }
    let config = LabConfig::for_test("panic");
    let ns = config.exchange_ns();
    let result = std::panic::catch_unwind(move || {
        let _lab = Lab::up(config).unwrap();
        panic!("deliberate");
    });
    assert!(result.is_err());
    assert!(!ns_exists(&ns));
}
